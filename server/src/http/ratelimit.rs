//! Optional per-client token buckets (by IP address): `rate_limit_per_second` tokens a second,
//! up to `rate_burst` saved. Over the limit: 429 with `Retry-After` and the `RateLimit-*`
//! headers of draft-ietf-httpapi-ratelimit-headers.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::Instant;

/// Clients remembered at most; idle full buckets are dropped first.
const MAX_CLIENTS: usize = 100_000;

pub struct RateLimiter {
    per_second: f64,
    burst: f64,
    buckets: Mutex<HashMap<IpAddr, (f64, Instant)>>,
}

/// What the limiter said about one request.
#[derive(Debug, Clone, Copy)]
pub struct Decision {
    pub allowed: bool,
    pub limit: u32,
    pub remaining: u32,
    /// Seconds until a token is available (when refused) or the bucket is full.
    pub reset_secs: u64,
}

impl RateLimiter {
    pub fn new(per_second: f64, burst: u32) -> Option<Self> {
        (per_second > 0.0).then(|| Self {
            per_second,
            burst: f64::from(burst.max(1)),
            buckets: Mutex::new(HashMap::new()),
        })
    }

    pub fn check(&self, client: IpAddr) -> Decision {
        let now = Instant::now();
        let Ok(mut buckets) = self.buckets.lock() else {
            return Decision {
                allowed: true,
                limit: self.burst as u32,
                remaining: 0,
                reset_secs: 0,
            };
        };
        if buckets.len() >= MAX_CLIENTS {
            let (per_second, burst) = (self.per_second, self.burst);
            buckets.retain(|_, (tokens, at)| {
                *tokens + now.duration_since(*at).as_secs_f64() * per_second < burst
            });
        }
        let (tokens, at) = buckets.entry(client).or_insert((self.burst, now));
        *tokens =
            (*tokens + now.duration_since(*at).as_secs_f64() * self.per_second).min(self.burst);
        *at = now;
        let allowed = *tokens >= 1.0;
        if allowed {
            *tokens -= 1.0;
        }
        let reset = if allowed {
            (self.burst - *tokens) / self.per_second
        } else {
            (1.0 - *tokens) / self.per_second
        };
        Decision {
            allowed,
            limit: self.burst as u32,
            remaining: tokens.floor().max(0.0) as u32,
            reset_secs: reset.ceil().max(1.0) as u64,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn burst_then_refuse() {
        let rl = RateLimiter::new(1.0, 3).unwrap();
        let ip: IpAddr = "127.0.0.1".parse().unwrap();
        let d: Vec<bool> = (0..5).map(|_| rl.check(ip).allowed).collect();
        assert_eq!(d, [true, true, true, false, false]);
        let other: IpAddr = "127.0.0.2".parse().unwrap();
        assert!(rl.check(other).allowed, "buckets are per client");
        assert!(RateLimiter::new(0.0, 3).is_none());
    }
}
