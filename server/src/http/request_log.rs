//! The request log: one line per request, at `info` with the target `hydro::request`, written
//! when its answer has gone out (or was cut): method, path with its query, status, the body's
//! bytes as sent (after content coding), the time from the request to the body's last byte,
//! the client as `trusted_proxies` resolves it, and whether the body was cut short (the client
//! left, or the answer failed while streaming). As nginx's access log, but for the whole of a
//! streamed download rather than its head.
//!
//! `HYDRO_LOG=info,hydro::request=off` turns it off alone; off, nothing is wrapped.

use super::body::{Body, BoxError};
use bytes::Bytes;
use http::{Method, Response, Uri};
use http_body_util::BodyExt;
use hyper::body::{Body as HttpBody, Frame, SizeHint};
use std::net::IpAddr;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Instant;

/// A request as it came in, to be logged when its answer has gone out.
pub struct Arrived {
    method: Method,
    target: String,
    client: IpAddr,
    at: Instant,
}

impl Arrived {
    /// The request, if the log is on.
    pub fn note(method: &Method, uri: &Uri, client: IpAddr) -> Option<Self> {
        tracing::enabled!(target: "hydro::request", tracing::Level::INFO).then(|| Self {
            method: method.clone(),
            target: uri
                .path_and_query()
                .map_or_else(|| uri.path().to_owned(), |p| p.as_str().to_owned()),
            client,
            at: Instant::now(),
        })
    }

    /// `response`, whose body logs the request when it ends or is dropped.
    pub fn answered(self, response: Response<Body>) -> Response<Body> {
        let status = response.status().as_u16();
        response.map(|inner| {
            Logged {
                inner,
                arrived: Some(self),
                status,
                bytes: 0,
            }
            .boxed_unsync()
        })
    }

    fn log(self, status: u16, bytes: u64, cut: bool) {
        let ms = self.at.elapsed().as_secs_f64() * 1000.0;
        tracing::info!(
            target: "hydro::request",
            method = %self.method,
            path = self.target.as_str(),
            status,
            bytes,
            ms = (ms * 1000.0).round() / 1000.0,
            client = %self.client,
            cut,
        );
    }
}

/// A response body that counts what it sends and logs its request once, at its end.
struct Logged {
    inner: Body,
    /// Taken when logged.
    arrived: Option<Arrived>,
    status: u16,
    bytes: u64,
}

impl Logged {
    fn log(&mut self, cut: bool) {
        if let Some(arrived) = self.arrived.take() {
            arrived.log(self.status, self.bytes, cut);
        }
    }
}

impl HttpBody for Logged {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        match &polled {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(data) = frame.data_ref() {
                    self.bytes += data.len() as u64;
                }
            }
            Poll::Ready(Some(Err(_))) => self.log(true),
            Poll::Ready(None) => self.log(false),
            Poll::Pending => {}
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

impl Drop for Logged {
    /// A body dropped before its end was cut, unless nothing was left of it (hyper need not
    /// poll a body that says it has ended: a 304, a body sent whole) or nothing of it was to
    /// be sent (an answer to HEAD, whose body hyper drops unread).
    fn drop(&mut self) {
        let unsent = self
            .arrived
            .as_ref()
            .is_some_and(|a| a.method == Method::HEAD);
        let cut = !self.inner.is_end_stream() && !unsent;
        self.log(cut);
    }
}
