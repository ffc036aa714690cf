//! `ProxyError`: everything that can go wrong with one proxied request, and the one function
//! that turns it into a status and an error page.
//!
//! Each variant says which side failed ([`Side`]): the client (downstream), the origin
//! (upstream) or pith itself, because that decides the status and what the operator should
//! look at. Causes stay as `#[source]` values; [`ProxyError::reason`] classifies them by
//! walking the chain (a refused connection, a timeout, a TLS verification failure) rather
//! than matching strings.

use std::error::Error as StdError;
use std::time::Duration;

use http::StatusCode;

use crate::body::DecodeError;

/// Which side of the proxy a failure came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// The client sent something pith will not serve.
    Downstream,
    /// The origin could not be reached or misbehaved.
    Upstream,
    /// pith itself failed.
    Internal,
}

/// A failed request.
#[derive(Debug, thiserror::Error)]
pub enum ProxyError {
    /// The request cannot be proxied as sent.
    #[error("bad request: {reason}")]
    BadRequest {
        /// What is wrong with it.
        reason: String,
    },
    /// The client's address is not in the listener's allow list.
    #[error("client {client} is not allowed to use this proxy")]
    Forbidden {
        /// The client's IP address.
        client: std::net::IpAddr,
    },
    /// Proxy authentication is required and was missing or wrong.
    #[error("proxy authentication required")]
    AuthRequired,
    /// The request came back to pith: forwarding it would loop.
    #[error("request loop: {target} leads back to this proxy")]
    Loop {
        /// The target authority.
        target: String,
    },
    /// CONNECT to a port the config does not allow.
    #[error("CONNECT to port {port} is not allowed by this proxy (upstream.connect_ports)")]
    PortNotAllowed {
        /// The refused port.
        port: u16,
    },
    /// The target's name did not resolve, or resolved to an address a deny rule refuses.
    #[error("{source}")]
    Destination {
        /// What the checked lookup found.
        #[source]
        source: crate::net::upstream::resolve::ResolveError,
    },
    /// The client sent more requests than `limits.client_rate` allows.
    #[error("too many requests from {client}: try again in {} s (limits.client_rate)", crate::net::accept::rate::retry_after_secs(*.retry_after))]
    RateLimited {
        /// The client's address.
        client: std::net::IpAddr,
        /// When its next request would be served.
        retry_after: Duration,
    },
    /// The request has more header fields than `limits.max_headers` (HTTP/1 requests are
    /// refused by the parser before they get this far; this is for HTTP/2).
    #[error("the request has {count} header fields, more than the {max} this proxy accepts (limits.max_headers)")]
    TooManyHeaders {
        /// Header fields sent.
        count: usize,
        /// The limit.
        max: usize,
    },
    /// The client asked for a stored response only (`Cache-Control: only-if-cached`) and none
    /// fresh is kept (RFC 9111 §5.2.1.7).
    #[error("{url} is not in the cache, and the request says only-if-cached")]
    NotCached {
        /// The URL asked for.
        url: String,
    },
    /// The client's request body could not be read: malformed chunking, or cut short.
    #[error("the request body is malformed or incomplete: {}", describe(.source.as_ref()))]
    ClientBody {
        /// The error sending it on.
        #[source]
        source: Box<dyn StdError + Send + Sync>,
    },
    /// The origin could not be reached (DNS, TCP, TLS).
    #[error("cannot connect to {host}: {}", describe(.source.as_ref()))]
    Connect {
        /// The origin's host.
        host: String,
        /// The connector's error.
        #[source]
        source: Box<dyn StdError + Send + Sync>,
    },
    /// The origin failed after the connection was made.
    #[error("{host} failed: {}", describe(.source.as_ref()))]
    Upstream {
        /// The origin's host.
        host: String,
        /// The client's error.
        #[source]
        source: Box<dyn StdError + Send + Sync>,
    },
    /// The origin did not answer in time.
    #[error("{host} did not {what} within {} ms", .after.as_millis())]
    Timeout {
        /// The origin's host.
        host: String,
        /// What it did not do: "accept a connection", "send response headers", ...
        what: &'static str,
        /// The budget.
        after: Duration,
    },
    /// The origin's body could not be decoded.
    #[error("the page from {host} cannot be decoded: {source}")]
    Decode {
        /// The origin's host.
        host: String,
        /// Why.
        #[source]
        source: DecodeError,
    },
    /// The page could not be rewritten whole.
    #[error("the page from {host} cannot be rewritten: {source}")]
    Rewrite {
        /// The origin's host.
        host: String,
        /// Why.
        #[source]
        source: crate::pipeline::PipelineError,
    },
    /// The rewritten page could not be compressed for the client.
    #[error("cannot compress the page: {source}")]
    Encode {
        /// Why.
        #[source]
        source: crate::body::EncodeError,
    },
    /// The URL gateway fetched a page it could not rewrite (too large, or no room in the
    /// rewrite budget): it serves only pages it rewrote, whose links stay in it.
    #[error("{url} could not be rewritten (larger than limits.max_rewrite_bytes, or no memory free to rewrite it), and the gateway serves only pages it rewrites")]
    NotRewritten {
        /// The page's URL.
        url: String,
    },
    /// pith itself failed; a bug, reported as such.
    #[error("internal error: {what}")]
    Internal {
        /// What failed.
        what: String,
    },
}

impl ProxyError {
    /// The side at fault.
    pub fn side(&self) -> Side {
        match self {
            ProxyError::BadRequest { .. }
            | ProxyError::Forbidden { .. }
            | ProxyError::AuthRequired
            | ProxyError::Loop { .. }
            | ProxyError::PortNotAllowed { .. }
            | ProxyError::RateLimited { .. }
            | ProxyError::ClientBody { .. }
            | ProxyError::NotCached { .. }
            | ProxyError::TooManyHeaders { .. } => Side::Downstream,
            ProxyError::Destination { source: crate::net::upstream::resolve::ResolveError::Denied { .. } } => Side::Downstream,
            ProxyError::Destination { .. } => Side::Upstream,
            ProxyError::Connect { .. }
            | ProxyError::Upstream { .. }
            | ProxyError::Timeout { .. }
            | ProxyError::Decode { .. }
            | ProxyError::NotRewritten { .. } => Side::Upstream,
            ProxyError::Rewrite { .. } | ProxyError::Encode { .. } | ProxyError::Internal { .. } => Side::Internal,
        }
    }

    /// The status the client gets.
    pub fn status(&self) -> StatusCode {
        match self {
            ProxyError::BadRequest { .. } | ProxyError::ClientBody { .. } => StatusCode::BAD_REQUEST,
            ProxyError::Forbidden { .. } | ProxyError::PortNotAllowed { .. } => StatusCode::FORBIDDEN,
            ProxyError::Destination { source: crate::net::upstream::resolve::ResolveError::Denied { .. } } => StatusCode::FORBIDDEN,
            ProxyError::Destination { .. } => StatusCode::BAD_GATEWAY,
            ProxyError::AuthRequired => StatusCode::PROXY_AUTHENTICATION_REQUIRED,
            ProxyError::RateLimited { .. } => StatusCode::TOO_MANY_REQUESTS,
            ProxyError::TooManyHeaders { .. } => StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            ProxyError::Loop { .. } => StatusCode::LOOP_DETECTED,
            ProxyError::Timeout { .. } | ProxyError::NotCached { .. } => StatusCode::GATEWAY_TIMEOUT,
            ProxyError::Connect { source, .. } if is_timeout(source.as_ref()) => StatusCode::GATEWAY_TIMEOUT,
            ProxyError::Connect { .. } | ProxyError::Upstream { .. } | ProxyError::Decode { .. } | ProxyError::NotRewritten { .. } => StatusCode::BAD_GATEWAY,
            ProxyError::Rewrite { .. } | ProxyError::Encode { .. } | ProxyError::Internal { .. } => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// One line for the error page and the log: what happened, in the user's terms.
    pub fn reason(&self) -> String {
        match self {
            ProxyError::Connect { host, source } => match classify(source.as_ref()) {
                Some(cause) => format!("{cause} to {host}"),
                None => self.to_string(),
            },
            _ => self.to_string(),
        }
    }
}

/// The well-known connect failures, named the way a user would search for them.
fn classify(err: &(dyn StdError + 'static)) -> Option<&'static str> {
    if let Some(io) = find::<std::io::Error>(err) {
        use std::io::ErrorKind::*;
        return match io.kind() {
            ConnectionRefused => Some("connection refused"),
            ConnectionReset => Some("connection reset"),
            TimedOut => Some("connection timed out"),
            HostUnreachable | NetworkUnreachable => Some("no route"),
            _ if find::<rustls::Error>(err).is_some() => Some("TLS handshake failed"),
            _ => None,
        };
    }
    None
}

/// True when the chain holds a timeout.
fn is_timeout(err: &(dyn StdError + 'static)) -> bool {
    find::<std::io::Error>(err).is_some_and(|e| e.kind() == std::io::ErrorKind::TimedOut)
        || chain(err).any(|e| e.to_string().contains("timed out"))
}

/// The first error of type `E` in the chain, walking `source()`.
pub fn find<'a, E: StdError + 'static>(err: &'a (dyn StdError + 'static)) -> Option<&'a E> {
    chain(err).find_map(|e| e.downcast_ref::<E>())
}

fn chain<'a>(err: &'a (dyn StdError + 'static)) -> impl Iterator<Item = &'a (dyn StdError + 'static)> {
    std::iter::successors(Some(err), |e: &&'a (dyn StdError + 'static)| (*e).source())
}

/// The whole chain in one line, innermost cause last, without repeating identical messages.
pub fn describe(err: &(dyn StdError + 'static)) -> String {
    let mut parts: Vec<String> = Vec::new();
    for e in chain(err) {
        let s = e.to_string();
        if !parts.iter().any(|p| p.contains(&s)) {
            parts.push(s);
        }
    }
    parts.join(": ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refused_connection_is_named() {
        let io = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "refused");
        let e = ProxyError::Connect { host: "example.test".into(), source: Box::new(io) };
        assert_eq!(e.status(), StatusCode::BAD_GATEWAY);
        assert_eq!(e.reason(), "connection refused to example.test");
        assert_eq!(e.side(), Side::Upstream);
    }

    #[test]
    fn connect_timeout_is_504() {
        let io = std::io::Error::new(std::io::ErrorKind::TimedOut, "connect timed out");
        let e = ProxyError::Connect { host: "slow.test".into(), source: Box::new(io) };
        assert_eq!(e.status(), StatusCode::GATEWAY_TIMEOUT);
    }

    #[test]
    fn statuses_by_kind() {
        let t = ProxyError::Timeout { host: "h".into(), what: "send response headers", after: Duration::from_millis(5) };
        assert_eq!(t.status(), StatusCode::GATEWAY_TIMEOUT);
        assert_eq!(t.to_string(), "h did not send response headers within 5 ms");
        assert_eq!(ProxyError::BadRequest { reason: "x".into() }.status(), StatusCode::BAD_REQUEST);
        assert_eq!(ProxyError::Loop { target: "x".into() }.status(), StatusCode::LOOP_DETECTED);
        assert_eq!(ProxyError::AuthRequired.status(), StatusCode::PROXY_AUTHENTICATION_REQUIRED);
        let limited = ProxyError::RateLimited { client: "10.0.0.1".parse().unwrap(), retry_after: Duration::from_millis(1500) };
        assert_eq!((limited.status(), limited.side()), (StatusCode::TOO_MANY_REQUESTS, Side::Downstream));
        assert!(limited.to_string().contains("try again in 2 s"), "{limited}");
        let crowded = ProxyError::TooManyHeaders { count: 101, max: 100 };
        assert_eq!((crowded.status(), crowded.side()), (StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE, Side::Downstream));
    }
}
