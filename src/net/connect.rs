//! CONNECT: tunnels to TLS origins.
//!
//! The tunnel is opened before the client is told `200`, so a refused or unreachable origin
//! gets a clear 502/504 instead of a tunnel that dies at once. Bytes are then copied both
//! ways until either side closes.
//!
//! This is also the seam for HTTPS interception: [`should_intercept`] decides per host, and
//! an intercepted tunnel will terminate TLS with a leaf certificate from the local CA and feed
//! the decrypted requests to the same request path as plain HTTP. Until that exists every
//! tunnel is a blind copy.

use std::time::Instant;

use http::{Request, Response, StatusCode};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

use super::bodies::{self, ProxyBody};
use super::error::ProxyError;
use super::State;

/// Whether a CONNECT to `host` should be intercepted. Always false until the local CA exists.
pub fn should_intercept(_state: &State, _host: &str) -> bool {
    false
}

/// Answers a CONNECT request by opening a tunnel to its authority.
pub async fn tunnel(state: &State, req: Request<Incoming>, client: std::net::SocketAddr) -> Result<Response<ProxyBody>, ProxyError> {
    let authority = req.uri().authority().cloned().ok_or_else(|| ProxyError::BadRequest { reason: "CONNECT needs a host:port target".into() })?;
    let port = authority.port_u16().ok_or_else(|| ProxyError::BadRequest { reason: format!("CONNECT target {authority} has no port") })?;
    let ports = &state.config.upstream.connect_ports;
    if !ports.is_empty() && !ports.contains(&port) {
        return Err(ProxyError::PortNotAllowed { port });
    }
    let host = authority.host().trim_matches(|c| c == '[' || c == ']').to_string();
    if state.is_self(&host, port) {
        return Err(ProxyError::Loop { target: authority.to_string() });
    }
    debug_assert!(!should_intercept(state, &host));
    let budget = state.config.upstream.connect_timeout;
    let upstream = match tokio::time::timeout(budget, TcpStream::connect((host.as_str(), port))).await {
        Err(_) => return Err(ProxyError::Timeout { host, what: "accept a connection", after: budget }),
        Ok(Err(e)) => return Err(ProxyError::Connect { host, source: Box::new(e) }),
        Ok(Ok(stream)) => stream,
    };
    let _ = upstream.set_nodelay(true);
    tokio::spawn(copy(req, upstream, authority.to_string(), client));
    let mut resp = Response::new(bodies::full(bytes::Bytes::new()));
    *resp.status_mut() = StatusCode::OK;
    Ok(resp)
}

/// Waits for hyper to hand over the client's connection, then copies both ways.
async fn copy(req: Request<Incoming>, mut upstream: TcpStream, target: String, client: std::net::SocketAddr) {
    let start = Instant::now();
    let upgraded = match hyper::upgrade::on(req).await {
        Ok(u) => u,
        Err(e) => {
            tracing::warn!(%client, %target, error = %e, "CONNECT upgrade failed");
            return;
        }
    };
    let mut downstream = TokioIo::new(upgraded);
    match tokio::io::copy_bidirectional(&mut downstream, &mut upstream).await {
        Ok((up, down)) => tracing::info!(target: "pith::access", %client, method = "CONNECT", url = %target, client_to_origin = up, origin_to_client = down, ms = start.elapsed().as_millis() as u64, "tunnel closed"),
        Err(e) => tracing::debug!(%client, %target, error = %e, "tunnel ended with an error"),
    }
}
