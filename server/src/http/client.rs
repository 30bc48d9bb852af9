//! Who the client is, for rate limits: the connection's address, or, when that is a load
//! balancer the operator trusts (`trusted_proxies`), the address the balancer says it
//! forwarded for. Behind nginx every request comes from nginx, so without this one busy client
//! would use up everyone's allowance, or the limit would have to be lifted.
//!
//! `X-Forwarded-For` is read from the right: each proxy appends the address it received the
//! request from, so the rightmost address that is not a trusted proxy is the first one no
//! trusted hop vouches for; addresses left of it are whatever the client wrote and are never
//! believed. From a connection that is not trusted the header is ignored entirely.

use http::HeaderMap;
use ipnet::IpNet;
use std::net::IpAddr;

/// The load balancers whose `X-Forwarded-For` is believed.
#[derive(Debug, Clone, Default)]
pub struct TrustedProxies(Vec<IpNet>);

impl TrustedProxies {
    /// From the `trusted_proxies` setting: addresses (`10.0.0.7`, `::1`) and ranges
    /// (`10.0.0.0/8`).
    pub fn parse(entries: &[String]) -> Result<Self, String> {
        entries
            .iter()
            .map(|e| {
                e.parse::<IpNet>()
                    .or_else(|_| e.parse::<IpAddr>().map(IpNet::from))
                    .map_err(|_| {
                        format!(
                            "trusted_proxies: '{e}' is not an IP address or a range like 10.0.0.0/8"
                        )
                    })
            })
            .collect::<Result<_, _>>()
            .map(Self)
    }

    fn trusts(&self, address: &IpAddr) -> bool {
        let address = address.to_canonical();
        self.0.iter().any(|net| net.contains(&address))
    }

    /// The client of a request that came over a connection from `peer`.
    pub fn client(&self, peer: IpAddr, headers: &HeaderMap) -> IpAddr {
        if !self.trusts(&peer) {
            return peer;
        }
        let hops = headers
            .get_all("x-forwarded-for")
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .map(str::trim);
        let mut client = peer;
        for hop in hops.rev() {
            let Ok(address) = hop.parse::<IpAddr>() else {
                // Not an address: nothing to its left can be vouched for.
                break;
            };
            client = address;
            if !self.trusts(&address) {
                break;
            }
        }
        client
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(values: &[&str]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for v in values {
            h.append("x-forwarded-for", v.parse().unwrap());
        }
        h
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn only_trusted_hops_are_believed() {
        let trusted = TrustedProxies::parse(&["127.0.0.1".into(), "10.0.0.0/8".into()]).unwrap();
        let nobody = TrustedProxies::default();
        // Straight from a client: the header is whatever it wrote.
        assert_eq!(
            trusted.client(ip("198.51.100.9"), &headers(&["203.0.113.5"])),
            ip("198.51.100.9")
        );
        assert_eq!(
            nobody.client(ip("127.0.0.1"), &headers(&["203.0.113.5"])),
            ip("127.0.0.1")
        );
        // Through the balancer: the address it forwarded for.
        assert_eq!(
            trusted.client(ip("127.0.0.1"), &headers(&["203.0.113.5"])),
            ip("203.0.113.5")
        );
        // A client that writes its own header first is not believed beyond the hop that
        // reached the balancer; trusted hops in between are passed over.
        assert_eq!(
            trusted.client(
                ip("127.0.0.1"),
                &headers(&["1.2.3.4, 203.0.113.5", "10.1.2.3"])
            ),
            ip("203.0.113.5")
        );
        // No header, or a garbled one: the balancer itself.
        assert_eq!(
            trusted.client(ip("127.0.0.1"), &headers(&[])),
            ip("127.0.0.1")
        );
        assert_eq!(
            trusted.client(ip("127.0.0.1"), &headers(&["unknown"])),
            ip("127.0.0.1")
        );
        // IPv4 peers as IPv6-mapped addresses count as themselves.
        assert_eq!(
            trusted.client(ip("::ffff:127.0.0.1"), &headers(&["2001:db8::1"])),
            ip("2001:db8::1")
        );
    }

    #[test]
    fn bad_entries_are_named() {
        let e = TrustedProxies::parse(&["10.0.0.0/33".into()]).unwrap_err();
        assert!(e.contains("'10.0.0.0/33'"), "{e}");
        assert!(TrustedProxies::parse(&["nginx".into()]).is_err());
        assert!(TrustedProxies::parse(&["::1".into(), "fd00::/8".into()]).is_ok());
    }
}
