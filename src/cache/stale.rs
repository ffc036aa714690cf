//! When a kept response may be served after it went stale (RFC 5861, RFC 9111 §4.2.4).
//!
//! Two grace periods an origin (or, for errors, a client) grants in `Cache-Control`:
//! - `stale-while-revalidate=N`: for N seconds past freshness the kept response is served at
//!   once while pith asks the origin in the background, so no client waits on a slow link
//!   for a page that has almost certainly not changed;
//! - `stale-if-error=N`: for N seconds past freshness the kept response is served when the
//!   origin cannot be reached or answers 500, 502, 503 or 504, instead of an error page.
//!
//! Never for a response that forbids serving it stale (`must-revalidate`, `proxy-revalidate`,
//! `s-maxage`, which implies the latter for a shared cache, or `no-cache`), and never in the
//! background for a client that asked for a validated response (`no-cache`, `max-age=0`).

use std::time::Duration;

use http::header::{self, HeaderMap};
use http::StatusCode;

use super::fields;

/// Which grace period.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Grace {
    /// Serve now, revalidate in the background.
    WhileRevalidate,
    /// Serve when the origin fails.
    IfError,
}

/// True when a response kept with `kept` headers, stale for `stale_for`, may be served
/// stale to a client that sent `request`, under `grace`.
pub fn allows(kept: &HeaderMap, request: &HeaderMap, grace: Grace, stale_for: Duration) -> bool {
    if ["must-revalidate", "proxy-revalidate", "s-maxage", "no-cache"].iter().any(|d| fields::directive(kept, d).is_some()) {
        return false;
    }
    let window = match grace {
        Grace::WhileRevalidate => {
            let validated = fields::directive(request, "no-cache").is_some()
                || fields::directive(request, "max-age") == Some(Some(0))
                || request.get_all(header::PRAGMA).iter().any(|v| v.to_str().is_ok_and(|v| v.to_ascii_lowercase().contains("no-cache")));
            if validated {
                return false;
            }
            fields::directive(kept, "stale-while-revalidate").flatten()
        }
        // The origin's grant or the client's own acceptance (RFC 5861 §4), whichever is longer.
        Grace::IfError => fields::directive(kept, "stale-if-error").flatten().max(fields::directive(request, "stale-if-error").flatten()),
    };
    window.is_some_and(|w| stale_for <= Duration::from_secs(w))
}

/// True for an origin's answer that stale-if-error may stand in for (RFC 5861 §4).
pub fn is_server_error(status: StatusCode) -> bool {
    matches!(status.as_u16(), 500 | 502 | 503 | 504)
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn h(cc: &[&str]) -> HeaderMap {
        cc.iter().map(|v| (header::CACHE_CONTROL, HeaderValue::from_str(v).unwrap())).collect()
    }

    const SECS: fn(u64) -> Duration = Duration::from_secs;

    #[test]
    fn while_revalidate_within_its_window() {
        let kept = h(&["max-age=1, stale-while-revalidate=60"]);
        assert!(allows(&kept, &h(&[]), Grace::WhileRevalidate, SECS(60)));
        assert!(!allows(&kept, &h(&[]), Grace::WhileRevalidate, SECS(61)));
        assert!(!allows(&kept, &h(&[]), Grace::IfError, SECS(1)), "one grace does not grant the other");
    }

    #[test]
    fn directive_names_in_any_case_and_quoted_values() {
        assert!(allows(&h(&["max-age=1", "Stale-While-Revalidate=\"30\""]), &h(&[]), Grace::WhileRevalidate, SECS(10)));
    }

    #[test]
    fn a_client_asking_for_validation_waits() {
        let kept = h(&["max-age=1, stale-while-revalidate=60"]);
        assert!(!allows(&kept, &h(&["no-cache"]), Grace::WhileRevalidate, SECS(1)));
        assert!(!allows(&kept, &h(&["max-age=0"]), Grace::WhileRevalidate, SECS(1)));
        let pragma: HeaderMap = [(header::PRAGMA, HeaderValue::from_static("no-cache"))].into_iter().collect();
        assert!(!allows(&kept, &pragma, Grace::WhileRevalidate, SECS(1)));
    }

    #[test]
    fn if_error_from_the_response_or_the_request() {
        assert!(allows(&h(&["max-age=1, stale-if-error=60"]), &h(&[]), Grace::IfError, SECS(30)));
        assert!(allows(&h(&["max-age=1"]), &h(&["stale-if-error=60"]), Grace::IfError, SECS(30)));
        assert!(!allows(&h(&["max-age=1"]), &h(&[]), Grace::IfError, SECS(0)));
    }

    #[test]
    fn responses_that_forbid_stale_use() {
        for forbidding in ["must-revalidate", "proxy-revalidate", "s-maxage=5", "no-cache"] {
            let kept = h(&[&format!("max-age=1, stale-while-revalidate=60, stale-if-error=60, {forbidding}")]);
            assert!(!allows(&kept, &h(&[]), Grace::WhileRevalidate, SECS(1)), "{forbidding}");
            assert!(!allows(&kept, &h(&["stale-if-error=60"]), Grace::IfError, SECS(1)), "{forbidding}");
        }
    }

    #[test]
    fn errors_that_stale_may_stand_in_for() {
        assert!(is_server_error(StatusCode::BAD_GATEWAY));
        assert!(is_server_error(StatusCode::SERVICE_UNAVAILABLE));
        assert!(!is_server_error(StatusCode::NOT_FOUND));
        assert!(!is_server_error(StatusCode::NOT_IMPLEMENTED));
    }
}
