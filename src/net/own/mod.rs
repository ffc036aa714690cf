//! The proxy's own pages: what a request addressed to pith itself gets (`http://pith/` or the
//! listener's own address; `/metrics` for the cache's counters), and the error page every
//! failure is shown with.
//!
//! Pages are small, self-contained HTML with no scripts, so they work on the devices pith is
//! for. Every dynamic string is escaped.


pub mod control;
pub mod metrics;
mod page;
pub mod pac;
pub mod read;

use std::fmt::Write;

use http::header::{self, HeaderValue};
use http::{Response, StatusCode};

use crate::html::adapt::GATEWAY_PATH;
use crate::net::exchange::bodies::{self, ProxyBody};
use crate::net::error::ProxyError;
use crate::net::State;

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

/// One of pith's own pages: `body_html` under the heading `title`.
pub(in crate::net) fn page(status: StatusCode, title: &str, body_html: &str) -> Response<ProxyBody> {
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
        crate::net::error::Side::Downstream => "The request could not be served as sent.",
        crate::net::error::Side::Upstream => "The site could not be reached or answered badly; this is not a problem with your device.",
        crate::net::error::Side::Internal => "pith failed on this page; please report it.",
    };
    let body = format!("<p><strong>{}</strong></p><p>{}</p><p><small>pith {}</small></p>", escape(&err.reason()), side, env!("CARGO_PKG_VERSION"));
    let mut resp = page(status, &title, &body);
    match err {
        ProxyError::AuthRequired => {
            resp.headers_mut().insert(header::PROXY_AUTHENTICATE, HeaderValue::from_static("Basic realm=\"pith\", charset=\"UTF-8\""));
        }
        ProxyError::RateLimited { retry_after, .. } => {
            resp.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(crate::net::accept::rate::retry_after_secs(*retry_after)));
        }
        _ => {}
    }
    resp
}

/// A page of pith's own: `/metrics`, or what [`home`] serves.
pub async fn serve_own(state: &State, path: &str) -> Response<ProxyBody> {
    if path == "/metrics" {
        return metrics(state).await;
    }
    home(state, path)
}

/// `/metrics`: the cache's counters in the Prometheus text format, for a scraper or a look.
pub async fn metrics(state: &State) -> Response<ProxyBody> {
    let snapshot = match &state.cache {
        Some(cache) => Some(cache.snapshot().await),
        None => None,
    };
    let mut resp = Response::new(bodies::full(crate::net::own::metrics::cache_text(snapshot.as_ref())));
    let headers = resp.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    resp
}

/// pith's home page: what it is, how to use it, and its listeners with the profile each serves.
pub fn home(state: &State, path: &str) -> Response<ProxyBody> {
    if let Some(resp) = ca_pages(state, path) {
        return resp;
    }
    if path != "/" {
        return page(StatusCode::NOT_FOUND, "404 Not Found", &format!("<p>pith has no page {}.</p><p><a href=\"/\">pith home</a></p>", escape(path)));
    }
    let mut body = String::from(
        "<p>pith is a forward proxy that serves the pith of every page: no scripts, ads or clutter.</p>\
         <h2>Use it</h2><p>Set this address as the HTTP proxy of your browser or device, or try \
         <code>curl -x http://ADDRESS http://example.com/</code>.</p><h2>Listeners</h2><ul>",
    );
    // The listeners as they run: bound addresses (a port 0 resolved, a moved address not yet
    // in force), with the settings now in force.
    for l in &state.listeners {
        let _ = write!(body, "<li><code>{}</code>: profile <strong>{}</strong></li>", escape(&l.address.to_string()), escape(&l.profile.name));
    }
    // Only the profiles a listener serves: one defined in the config and served nowhere is
    // nothing a person here can choose.
    let _ = write!(body, "</ul><h2>Read a page</h2><p>Without setting a proxy: any address, through pith.</p>{}", box_html(None));
    body.push_str("<h2>HTTPS</h2><p><a href=\"/ca\">The certificate to install</a> so that pith can de-clutter HTTPS pages too.</p>");
    let _ = write!(body, "<p><small>pith {}</small></p>", env!("CARGO_PKG_VERSION"));
    page(StatusCode::OK, "pith", &body)
}

/// The form of the URL box, for `/read` and (without a listener: no choice of profile) pith's
/// home page.
pub fn box_html(listener: Option<&crate::config::ListenerConfig>) -> String {
    let mut html = format!(
        "<form action=\"{GATEWAY_PATH}\" method=\"get\"><p><label for=\"url\">Address</label> \
         <input id=\"url\" name=\"url\" type=\"url\" size=\"40\" placeholder=\"https://example.com/\" required>"
    );
    if let Some(listener) = listener.filter(|l| !l.serving.gateway.is_empty()) {
        html.push_str(" <select name=\"profile\" aria-label=\"Profile\">");
        for p in std::iter::once(&listener.profile).chain(&listener.serving.gateway) {
            html.push_str(&format!("<option>{}</option>", escape(&p.name)));
        }
        html.push_str("</select>");
    }
    html.push_str(" <button type=\"submit\">Read</button></p></form>");
    html
}

/// Install steps per client, for `/ca`. Firefox keeps its own store on every system; Chrome
/// and Edge use the system's (except on Linux).
const CA_STEPS: &str = "<h2>Firefox (any system)</h2><p>Settings → Privacy &amp; Security → Certificates → \
View Certificates → Authorities → Import: choose <code>pith-ca.pem</code> and tick “Trust this CA to identify websites”.</p>\
<h2>Chrome, Edge</h2><p>They use the system's store: follow the steps for your system below. On Linux: Settings → \
Privacy and security → Security → Manage certificates → Authorities → Import.</p>\
<h2>macOS</h2><p>Open <code>pith-ca.pem</code>: Keychain Access adds it to a keychain. Double-click the certificate, \
open Trust and set “When using this certificate” to “Always Trust”. In a terminal: \
<code>sudo security add-trusted-cert -d -r trustRoot -k /Library/Keychains/System.keychain pith-ca.pem</code></p>\
<h2>Windows</h2><p>Open <a href=\"/ca.crt\"><code>pith-ca.crt</code></a> → Install Certificate → Local Machine → \
“Place all certificates in the following store” → Trusted Root Certification Authorities. As administrator: \
<code>certutil -addstore root pith-ca.crt</code></p>\
<h2>Android</h2><p>Download <a href=\"/ca.crt\"><code>pith-ca.crt</code></a>, then Settings → Security (or Security &amp; \
privacy) → Encryption &amp; credentials → Install a certificate → CA certificate. Browsers trust it; many apps trust \
only the system's authorities and will refuse the connection: add their hosts to <code>intercept.never</code>.</p>\
<h2>iOS, iPadOS</h2><p>Open <a href=\"/ca.pem\">the certificate</a> in Safari and allow the download, then Settings → \
General → VPN &amp; Device Management → install the profile, and Settings → General → About → Certificate Trust \
Settings → turn on full trust for the pith CA.</p>\
<h2>Linux tools (curl, wget)</h2><p>Debian, Ubuntu: copy it to <code>/usr/local/share/ca-certificates/pith-ca.crt</code> \
and run <code>sudo update-ca-certificates</code>. For one command: <code>curl --cacert pith-ca.pem …</code></p>";

/// `/ca` (what the certificate is for and how to install it), `/ca.pem` and `/ca.crt` (the
/// certificate, PEM and DER); `None` for other paths. The CA's key is never served.
fn ca_pages(state: &State, path: &str) -> Option<Response<ProxyBody>> {
    let ca = state.certs.as_ref().map(|c| c.authority());
    let download = |body: bytes::Bytes, mime: &'static str, file: &'static str| {
        let mut resp = Response::new(bodies::full(body));
        let headers = resp.headers_mut();
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(mime));
        headers.insert(header::CONTENT_DISPOSITION, HeaderValue::from_static(file));
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        resp
    };
    match (path, ca) {
        ("/ca.pem", Some(ca)) => Some(download(ca.cert_pem().to_string().into(), "application/x-pem-file", "attachment; filename=\"pith-ca.pem\"")),
        ("/ca.crt", Some(ca)) => Some(download(ca.cert_der().to_vec().into(), "application/x-x509-ca-cert", "attachment; filename=\"pith-ca.crt\"")),
        ("/ca", Some(_)) => {
            let body = format!(
                "<p>pith de-clutters HTTPS pages by decrypting them with certificates from its own certificate authority. \
                 A device must trust that authority once: download <a href=\"/ca.pem\"><code>pith-ca.pem</code></a> \
                 (or <a href=\"/ca.crt\"><code>pith-ca.crt</code></a>) and follow the steps for your browser or system.</p>\
                 <p><strong>Install it only on devices whose traffic goes through this proxy</strong>: whoever holds the \
                 authority's key can read what those devices send over HTTPS. Remove it when you stop using pith.</p>{CA_STEPS}"
            );
            Some(page(StatusCode::OK, "Trust pith for HTTPS", &body))
        }
        ("/ca" | "/ca.pem" | "/ca.crt", None) => Some(page(
            StatusCode::NOT_FOUND,
            "HTTPS interception is off",
            "<p>This proxy tunnels HTTPS untouched (<code>[intercept]</code> in its config), so there is no certificate to install.</p>",
        )),
        _ => None,
    }
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
