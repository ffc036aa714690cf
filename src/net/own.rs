//! The proxy's own pages: what a request addressed to pith itself gets (`http://pith/` or the
//! listener's own address), and the error page every failure is shown with.
//!
//! Pages are small, self-contained HTML with no scripts, so they work on the devices pith is
//! for. Every dynamic string is escaped.

use std::fmt::Write;

use http::header::{self, HeaderValue};
use http::{Response, StatusCode};

use super::bodies::{self, ProxyBody};
use super::error::ProxyError;
use super::State;

/// Escapes text for HTML element content and attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

fn page(status: StatusCode, title: &str, body_html: &str) -> Response<ProxyBody> {
    let html = format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width\">\
         <title>{t}</title><style>body{{font:1rem/1.5 system-ui,sans-serif;max-width:40rem;margin:2rem auto;padding:0 1rem}}\
         @media (prefers-color-scheme:dark){{body{{background:#111;color:#ddd}}a{{color:#8cf}}}}</style></head>\
         <body><main><h1>{t}</h1>{body_html}</main></body></html>\n",
        t = escape(title)
    );
    let mut resp = Response::new(bodies::full(html));
    *resp.status_mut() = status;
    let headers = resp.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/html; charset=utf-8"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    resp
}

/// The error page for a failed request, with the status its kind calls for.
pub fn error_page(err: &ProxyError) -> Response<ProxyBody> {
    let status = err.status();
    let title = format!("{} {}", status.as_u16(), status.canonical_reason().unwrap_or("Error"));
    let side = match err.side() {
        super::error::Side::Downstream => "The request could not be served as sent.",
        super::error::Side::Upstream => "The site could not be reached or answered badly; this is not a problem with your device.",
        super::error::Side::Internal => "pith failed on this page; please report it.",
    };
    let body = format!("<p><strong>{}</strong></p><p>{}</p><p><small>pith {}</small></p>", escape(&err.reason()), side, env!("CARGO_PKG_VERSION"));
    let mut resp = page(status, &title, &body);
    if matches!(err, ProxyError::AuthRequired) {
        resp.headers_mut().insert(header::PROXY_AUTHENTICATE, HeaderValue::from_static("Basic realm=\"pith\", charset=\"UTF-8\""));
    }
    resp
}

/// pith's home page: what it is, how to use it, and the profiles of this proxy.
pub fn home(state: &State, path: &str) -> Response<ProxyBody> {
    if path != "/" {
        return page(StatusCode::NOT_FOUND, "404 Not Found", &format!("<p>pith has no page {}.</p><p><a href=\"/\">pith home</a></p>", escape(path)));
    }
    let mut body = String::from(
        "<p>pith is a forward proxy that serves the pith of every page: no scripts, ads or clutter.</p>\
         <h2>Use it</h2><p>Set this address as the HTTP proxy of your browser or device, or try \
         <code>curl -x http://ADDRESS http://example.com/</code>.</p><h2>Listeners</h2><ul>",
    );
    for l in &state.config.listeners {
        let _ = write!(body, "<li><code>{}</code>: profile <strong>{}</strong></li>", escape(&l.address.to_string()), escape(&l.profile.name));
    }
    body.push_str("</ul><h2>Profiles</h2><ul>");
    for name in state.config.profiles.keys() {
        let _ = write!(body, "<li>{}</li>", escape(name));
    }
    let _ = write!(body, "</ul><p><small>pith {}</small></p>", env!("CARGO_PKG_VERSION"));
    page(StatusCode::OK, "pith", &body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup() {
        assert_eq!(escape("<a href=\"x\">&'"), "&lt;a href=&quot;x&quot;&gt;&amp;&#39;");
    }

    #[test]
    fn error_page_shows_reason_escaped() {
        let err = ProxyError::BadRequest { reason: "<script>".into() };
        let resp = error_page(&err);
        assert_eq!(resp.status(), StatusCode::BAD_REQUEST);
    }

    #[test]
    fn auth_required_asks_for_credentials() {
        let resp = error_page(&ProxyError::AuthRequired);
        assert_eq!(resp.status(), StatusCode::PROXY_AUTHENTICATION_REQUIRED);
        assert!(resp.headers().contains_key(header::PROXY_AUTHENTICATE));
    }
}
