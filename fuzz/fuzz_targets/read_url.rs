//! The URL gateway: the target a `/read?QUERY` request names (`gateway::Ask::parse`,
//! `gateway::target`) and the links the gateway writes into a page for it
//! (`html::adapt`, the `Links::Gateway` pass: `<a href>`, `<img src>`, GET `<form action>`).
//!
//! Input: text used three ways, then 2 control bytes off the end (the profile the links
//! name, how the page writes `&` and `"`):
//! 1. as the query of a `/read` request;
//! 2. as the `href` of a link and the `src` of an image on a page at a fixed base, written with
//!    character references for `&` (`&amp;`, `&#38;` or `&#x26;`) and `"`;
//! 3. as the `action` of a GET form on that page, which also has its own field named `url`.
//!
//! Properties:
//! - arbitrary input never panics;
//! - a target the gateway accepts is `http` or `https`, has a host, no userinfo and no
//!   fragment; its host and port as the loop check sees them are the URL's own (re-parsed
//!   independently with the `url` crate), and the loop check calls it pith whenever it names
//!   `pith` or `localhost` (any case, with a trailing dot) or a loopback or unspecified
//!   address on the port pith listens on;
//! - a link whose URL, resolved against the page's base, is `http(s)` is rewritten to
//!   `/read?url=…`, and that link, its character references decoded as a browser does, names
//!   exactly the resolved URL (fragment kept outside the query), the links' profile and no
//!   other field: nothing in the page's URL can add or replace a gateway parameter; the target
//!   the gateway then accepts is that URL;
//! - a link to anything else is not routed through `/read`;
//! - a GET form's action (or, when its action is not a safe URL and was dropped, its page)
//!   becomes `/read` with its target (query and fragment dropped) in a
//!   hidden `url` field that comes before the form's own fields, so a field of the form named
//!   `url` never replaces it: the submitted form reads back to that target, with the form's
//!   fields in its query.

#![no_main]

use std::net::SocketAddr;

use libfuzzer_sys::fuzz_target;
use pith::html::adapt::{is_safe_url, Adapt, Links};
use pith::html::translit::OutCharset;
use pith::net::own::read::{host_port, target, Ask};
use pith::net::is_own;
use url::Url;

const BASE: &str = "https://news.example/a/page.html?x=1";
const PROFILES: [Option<&str>; 3] = [None, Some("reader"), Some("a&url=http://evil.example/#x")];
/// pith's listening addresses for the loop check: loopback only, no wildcard (a wildcard asks
/// the kernel about every address, which is the machine's and not the input's business).
const OWN: [&str; 2] = ["127.0.0.1:8080", "[::1]:8080"];

/// What the loop check must catch, judged from the URL alone.
fn names_pith(url: &Url) -> bool {
    let port = url.port_or_known_default().unwrap_or(0);
    match url.host() {
        Some(url::Host::Domain(d)) => {
            let d = d.strip_suffix('.').unwrap_or(d);
            d.eq_ignore_ascii_case("pith") || (port == 8080 && d.eq_ignore_ascii_case("localhost"))
        }
        Some(url::Host::Ipv4(ip)) => port == 8080 && ip == std::net::Ipv4Addr::LOCALHOST,
        Some(url::Host::Ipv6(ip)) => port == 8080 && (ip == std::net::Ipv6Addr::LOCALHOST || ip.to_ipv4_mapped() == Some(std::net::Ipv4Addr::LOCALHOST)),
        None => false,
    }
}

/// A gateway request's query, checked; returns the target it accepts.
fn check_query(query: &str) -> Option<(Ask, http::Uri)> {
    let ask = Ask::parse(query);
    let url = ask.url.as_deref()?;
    let uri = target(url, &ask.fields).ok()?;
    let text = uri.to_string();
    let parsed = Url::parse(&text).unwrap_or_else(|e| panic!("accepted target {text:?} is not a URL: {e}"));
    assert_eq!(parsed.as_str(), text, "the target is not in normal form");
    assert!(matches!(parsed.scheme(), "http" | "https"), "accepted a {} target: {text}", parsed.scheme());
    assert!(parsed.host_str().is_some_and(|h| !h.is_empty()), "accepted a target without a host: {text}");
    assert!(parsed.username().is_empty() && parsed.password().is_none(), "accepted a target with userinfo: {text}");
    assert!(parsed.fragment().is_none(), "a fragment goes to the origin: {text}");
    let (host, port) = host_port(&uri);
    let url_host = parsed.host_str().unwrap_or_default().trim_matches(|c| c == '[' || c == ']');
    assert_eq!(host, url_host, "the loop check sees another host than is fetched: {text}");
    assert_eq!(Some(port), parsed.port_or_known_default(), "the loop check sees another port than is fetched: {text}");
    let own: Vec<SocketAddr> = OWN.iter().map(|a| a.parse().expect("address")).collect();
    if names_pith(&parsed) {
        assert!(is_own(&host, port, &own), "the gateway would fetch pith itself: {text}");
    }
    Some((ask, uri))
}

/// An attribute value as a browser reads it, for the references pith writes.
fn unescape(value: &str) -> String {
    let mut out = String::new();
    let mut rest = value;
    while let Some(at) = rest.find('&') {
        out.push_str(&rest[..at]);
        rest = &rest[at..];
        let (text, len) = [("&amp;", "&"), ("&quot;", "\""), ("&lt;", "<"), ("&gt;", ">"), ("&#39;", "'"), ("&#x27;", "'")]
            .iter()
            .find(|(r, _)| rest.starts_with(r))
            .map(|(r, t)| (*t, r.len()))
            .unwrap_or_else(|| panic!("pith wrote an unexpected reference in {value:?}"));
        out.push_str(text);
        rest = &rest[len..];
    }
    out.push_str(rest);
    out
}

/// The value of the first `attr="…"` after `from` in `page`.
fn attribute<'a>(page: &'a str, from: &str, attr: &str) -> Option<&'a str> {
    let start = page.find(from)?;
    let pat = format!("{attr}=\"");
    let at = start + page[start..].find(&pat)? + pat.len();
    let end = at + page[at..].find('"')?;
    Some(&page[at..end])
}

fuzz_target!(|data: &[u8]| {
    let (body, control) = pith_fuzz::split_control::<2>(data);
    let Ok(text) = std::str::from_utf8(body) else { return };

    // 1. The request's query as given.
    check_query(text);

    // 2. A link, as the page writes it. NUL and CR are changed by a browser's input stream
    // before the attribute is read; the page here has neither. Nor a U+FEFF at the start of
    // the value: lol_html drops it when it reads the attribute (a browser keeps it), a known
    // limit (fuzz/README.md).
    let href: String = text.chars().filter(|&c| c != '\0' && c != '\r').collect();
    let href = href.trim_start_matches('\u{feff}').to_string();
    let amp = ["&amp;", "&#38;", "&#x26;"][usize::from(control[1]) % 3];
    let written = href.replace('&', amp).replace('"', "&quot;").replace('<', "&lt;");
    let profile = PROFILES[usize::from(control[0]) % PROFILES.len()];
    let adapt = Adapt { links: Links::Gateway { profile: profile.map(str::to_string) }, charset: OutCharset::Utf8, legacy: false };
    let page = format!("<a href=\"{written}\">x</a><img src=\"{written}\"><form action=\"{written}\"><input name=url value=\"http://evil.example/\"><input name=q></form>");
    let out = String::from_utf8(adapt.html(&page, Some(BASE))).expect("UTF-8 output");
    let base = Url::parse(BASE).expect("base");
    // As a browser resolves it: the URL parser strips C0 controls and spaces at either end.
    let resolved = base.join(&href).ok();
    let web = resolved.as_ref().filter(|u| matches!(u.scheme(), "http" | "https"));
    let stripped = href.trim_matches(|c: char| c <= ' ');
    let routable = !stripped.is_empty() && !stripped.starts_with('#');
    for (tag, attr) in [("<a ", "href"), ("<img ", "src")] {
        let raw = attribute(&out, tag, attr);
        match web {
            Some(url) if routable => {
                let got = raw.map(unescape).unwrap_or_else(|| panic!("{tag}{attr} to {url} lost in {out:?}"));
                let (link, fragment) = got.split_once('#').map_or((got.as_str(), None), |(l, f)| (l, Some(f)));
                let query = link.strip_prefix("/read?").unwrap_or_else(|| panic!("{tag}{attr} to {url} not routed: {got:?}"));
                let mut bare = url.clone();
                bare.set_fragment(None);
                assert_eq!(fragment, url.fragment(), "the fragment changed in {got:?}");
                let ask = Ask::parse(query);
                assert_eq!(ask.url.as_deref(), Some(bare.as_str()), "{got:?} does not name {url}");
                assert_eq!(ask.profile.as_deref(), profile.filter(|p| !p.is_empty()), "{got:?} names another profile");
                assert!(ask.fields.is_empty(), "{got:?} smuggles fields {:?}", ask.fields);
                if let Some((_, uri)) = check_query(query) {
                    assert_eq!(uri.to_string(), bare.as_str(), "the gateway would fetch another URL for {got:?}");
                }
            }
            _ => {
                if let Some(got) = raw {
                    assert!(!got.starts_with("/read"), "{tag}{attr} {href:?} routed through the gateway: {got:?}");
                }
            }
        }
    }

    // 3. The GET form: action /read, its target in the first `url` field.
    let action = attribute(&out, "<form", "action");
    let hidden = out.find("name=\"url\" value=\"").map(|at| unescape(attribute(&out[at..], "name", "value").unwrap_or_default()));
    // An action that is not a safe URL is dropped first (a page on pith's origin keeps none);
    // a form without one submits to its page, as a browser's does.
    let form_target = if is_safe_url(&href) { web.cloned() } else { Some(base.clone()) };
    match (form_target.as_ref(), hidden) {
        (Some(url), Some(hidden)) => {
            assert_eq!(action, Some("/read"), "a routed form posts elsewhere: {out:?}");
            let mut bare = url.clone();
            bare.set_query(None);
            bare.set_fragment(None);
            assert_eq!(hidden, bare.as_str(), "the form's hidden target is not its action");
            let mut fields = vec![("url", hidden.as_str())];
            if let Some(p) = profile {
                fields.push(("profile", p));
            }
            fields.extend([("url", "http://evil.example/"), ("q", "a&b=c")]);
            let submitted: String = url::form_urlencoded::Serializer::new(String::new()).extend_pairs(&fields).finish();
            let ask = Ask::parse(&submitted);
            assert_eq!(ask.url.as_deref(), Some(bare.as_str()), "the form's own url field replaced its target");
            if let Some((_, uri)) = check_query(&submitted) {
                let fetched = Url::parse(&uri.to_string()).expect("URL");
                assert_eq!((fetched.scheme(), fetched.host_str(), fetched.port(), fetched.path()), (bare.scheme(), bare.host_str(), bare.port(), bare.path()));
                let pairs: Vec<(String, String)> = fetched.query_pairs().into_owned().collect();
                assert_eq!(pairs, [("url".to_string(), "http://evil.example/".to_string()), ("q".to_string(), "a&b=c".to_string())]);
            }
        }
        (Some(url), None) => panic!("a GET form to {url} was not routed: {out:?}"),
        (None, Some(hidden)) => panic!("a form to {href:?} got a gateway target {hidden:?}"),
        _ => {}
    }
});
