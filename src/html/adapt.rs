//! The last pass over a page pith serves, for the listener that serves it: where its links
//! go (through the URL gateway, or from `https://` down to `http://` on a listener that
//! fetches HTTPS for plain-HTTP clients), which charset it is written in, and whether it keeps
//! to the elements and attributes of HTML 3.2 for old browsers.
//!
//! It runs on the page the pipeline wrote, whatever the profile (stage 1 alone, the removers,
//! reading mode), as one more streaming lol_html pass: the page is small by then, and the one
//! place every form passes through is its output. What it changes is decided per element by
//! pure functions ([`Links::route`], [`legacy_of`]), tested on their own.
//!
//! - **Gateway links** are root-relative (`/read?url=ABSOLUTE`): the browser resolves them
//!   against the gateway's own address, whatever name or address the device reached it by, so a
//!   page kept in the cache serves every client, and a `Host` header cannot steer its links.
//!   Each target is resolved against the page's base (its URL, or its `<base href>`, which is
//!   then dropped). A GET form gets `action="/read"` and its target as a hidden `url` field,
//!   because a browser replaces the query of a GET form's action with the form's fields.
//! - **Character references**: an attribute's value is read as a browser reads it, its
//!   character references decoded (`/more?x=1&amp;y=2` names `/more?x=1&y=2`), and the rewritten
//!   URL is written back with `&` encoded; [`attribute_url`] and [`set_url`].
//! - **Safe URLs on pith's own origin**: a gateway page and a legacy listener's page keep
//!   only `http`, `https`, `mailto`, `tel` and relative URLs in every attribute that can carry
//!   one ([`keep_safe_urls`]): such a page is served from the same origin as the control page
//!   and its token, and the browsers these pages are for predate the CSP that would otherwise
//!   stop a `javascript:` or `data:` URL.
//! - **Downgraded links**: an absolute `https://` link, form action or image becomes
//!   `http://`, so a device that speaks no current TLS stays on plain HTTP through pith, except
//!   to the hosts of `intercept.never`, which are never fetched in its place.
//! - **Legacy HTML**: HTML 3.2's elements are kept, newer sectioning elements become `div`,
//!   phrase elements it lacks are unwrapped, and what an old browser would show as text
//!   (`style`, `script`, `svg`, media) goes; attributes it lacks are dropped, and an `id`
//!   becomes a `<a name>` anchor so in-page links still land.

use std::cell::RefCell;

use lol_html::html_content::{ContentType, Element};
use lol_html::{doctype, element, RewriteStrSettings};
use url::Url;

use super::translit::OutCharset;
use crate::tls::HostList;

/// Where a page's links go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Links {
    /// As the page has them.
    Kept,
    /// Through the URL gateway at `/read`, naming `profile` when it is not the listener's own.
    Gateway {
        /// The profile asked of the gateway, repeated in every link so the reader stays in it.
        profile: Option<String>,
    },
    /// `https://` becomes `http://`, except to the hosts in `keep`.
    Downgrade {
        /// Hosts whose links stay `https://` (`intercept.never`).
        keep: HostList,
    },
}

/// What the last pass does to a page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Adapt {
    /// Where links go.
    pub links: Links,
    /// The charset the page is written in.
    pub charset: OutCharset,
    /// Keep to HTML 3.2's elements and attributes.
    pub legacy: bool,
}

/// The path of the URL gateway on a listener's own address.
pub const GATEWAY_PATH: &str = "/read";

/// HTML 3.2's doctype, written first on a legacy page.
const LEGACY_DOCTYPE: &str = "<!DOCTYPE HTML PUBLIC \"-//W3C//DTD HTML 3.2 Final//EN\">\n";

impl Adapt {
    /// True when the pass changes nothing: the page is served as the pipeline wrote it.
    pub fn is_identity(&self) -> bool {
        self.links == Links::Kept && self.charset == OutCharset::Utf8 && !self.legacy
    }

    /// True when the page is served from pith's own origin (the gateway's `/read` pages) or
    /// to the old browsers of a legacy listener: only safe URL schemes are kept on it.
    pub fn is_own_origin(&self) -> bool {
        matches!(self.links, Links::Gateway { .. }) || self.legacy
    }

    /// What this pass is, for the cache key: two pages differ exactly when this does.
    pub fn tag(&self) -> String {
        let links = match &self.links {
            Links::Kept => "kept".to_string(),
            Links::Gateway { profile } => format!("gateway({})", profile.as_deref().unwrap_or("")),
            Links::Downgrade { keep } => format!("downgrade({keep:?})"),
        };
        format!("links={links};charset={};legacy={}", self.charset.name(), self.legacy)
    }

    /// `page` (HTML, UTF-8) adapted, in the charset's bytes. `page_url` is the page's address,
    /// the base its links are resolved against for the gateway.
    pub fn html(&self, page: &str, page_url: Option<&str>) -> Vec<u8> {
        if self.is_identity() {
            return page.as_bytes().to_vec();
        }
        let adapted = match self.rewrite(page, page_url) {
            Ok(html) => html,
            Err(e) => {
                // Non-strict lol_html fails only on its memory limit, which a page pith wrote
                // (already within limits.max_rewrite_bytes) does not reach; served unadapted
                // rather than not at all.
                tracing::warn!(error = %e, "the served page could not be adapted; serving it as written");
                page.to_string()
            }
        };
        let adapted = if self.legacy { format!("{LEGACY_DOCTYPE}{adapted}") } else { adapted };
        self.charset.encode(&adapted, true)
    }

    /// Markup pith adds to a page it already adapted (the control bar), adapted the same way:
    /// links, charset and HTML 3.2, without a doctype of its own.
    pub fn fragment(&self, html: &str) -> Vec<u8> {
        if self.is_identity() {
            return html.as_bytes().to_vec();
        }
        let adapted = self.rewrite(html, None).unwrap_or_else(|_| html.to_string());
        self.charset.encode(&adapted, true)
    }

    /// `text` (plain text, UTF-8) in the charset's bytes.
    pub fn text(&self, text: &str) -> Vec<u8> {
        self.charset.encode(text, false)
    }

    fn rewrite(&self, page: &str, page_url: Option<&str>) -> Result<String, lol_html::errors::RewritingError> {
        let base = RefCell::new(page_url.and_then(|u| Url::parse(u).ok()));
        let links = &self.links;
        let routing = *links != Links::Kept;
        let mut settings = RewriteStrSettings::new().with_strict(false).with_enable_esi_tags(false);
        if self.is_own_origin() {
            // First, so that routing never sees a URL that is about to go.
            settings = settings.append_element_content_handler(element!("*", |el| {
                keep_safe_urls(el);
                Ok(())
            }));
        }
        if routing {
            settings = settings
                .append_element_content_handler(element!("base[href]", |el| {
                    let href = attribute_url(el, "href").unwrap_or_default();
                    let resolved = base.borrow().as_ref().map_or_else(|| Url::parse(&href), |b| b.join(&href));
                    if let Ok(url) = resolved {
                        *base.borrow_mut() = Some(url);
                    }
                    match links {
                        Links::Gateway { .. } => el.remove(),
                        _ => set_routed(el, "href", links, base.borrow().as_ref()),
                    }
                    Ok(())
                }))
                .append_element_content_handler(element!("a[href], area[href]", |el| {
                    set_routed(el, "href", links, base.borrow().as_ref());
                    Ok(())
                }))
                .append_element_content_handler(element!("img[src]", |el| {
                    set_routed(el, "src", links, base.borrow().as_ref());
                    Ok(())
                }))
                .append_element_content_handler(element!("img[srcset], source[srcset]", |el| {
                    // Candidates would each need routing; the `src` is the one old devices read.
                    el.remove_attribute("srcset");
                    Ok(())
                }))
                .append_element_content_handler(element!("form", |el| {
                    route_form(el, links, base.borrow().as_ref());
                    Ok(())
                }));
        }
        if self.charset != OutCharset::Utf8 || self.legacy {
            let (charset, legacy) = (self.charset, self.legacy);
            settings = settings.append_element_content_handler(element!("meta", move |el| {
                declare_charset(el, charset, legacy);
                Ok(())
            }));
        }
        if self.legacy {
            settings = settings
                .append_element_content_handler(element!("*", |el| {
                    legacy_element(el);
                    Ok(())
                }))
                .append_document_content_handler(doctype!(|d| {
                    d.remove();
                    Ok(())
                }));
        }
        lol_html::rewrite_str(page, settings)
    }
}

impl Links {
    /// Where a link written `value` goes from a page whose base is `base`; `None` leaves it
    /// as it is (an in-page `#anchor`, a scheme other than HTTP(S), nothing to resolve against).
    pub fn route(&self, base: Option<&Url>, value: &str) -> Option<String> {
        let value = trim_url(value);
        if value.is_empty() || value.starts_with('#') {
            return None;
        }
        match self {
            Links::Kept => None,
            Links::Gateway { profile } => {
                let mut url = match base {
                    Some(b) => b.join(value).ok()?,
                    None => Url::parse(value).ok()?,
                };
                if !matches!(url.scheme(), "http" | "https") {
                    return None;
                }
                let fragment = url.fragment().map(str::to_owned);
                url.set_fragment(None);
                Some(gateway_link(url.as_str(), profile.as_deref(), fragment.as_deref()))
            }
            Links::Downgrade { keep } => {
                if !value.get(..8).is_some_and(|s| s.eq_ignore_ascii_case("https://")) {
                    return None;
                }
                let mut url = Url::parse(value).ok()?;
                if url.host_str().is_none_or(|h| keep.matches(h)) {
                    return None;
                }
                url.set_scheme("http").ok()?;
                Some(url.into())
            }
        }
    }
}

/// `value` without what a browser's URL parser strips at either end: C0 controls and spaces
/// (and not other white space, such as U+00A0, which a browser keeps and percent-encodes).
fn trim_url(value: &str) -> &str {
    value.trim_matches(|c: char| c <= ' ')
}

/// `/read?url=TARGET[&profile=P][#fragment]`.
pub fn gateway_link(target: &str, profile: Option<&str>, fragment: Option<&str>) -> String {
    let mut link = format!("{GATEWAY_PATH}?url={}", encode_component(target));
    if let Some(p) = profile {
        link.push_str("&profile=");
        link.push_str(&encode_component(p));
    }
    if let Some(f) = fragment {
        link.push('#');
        link.push_str(f);
    }
    link
}

fn encode_component(s: &str) -> String {
    url::form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

/// The value of `el`'s attribute `attr` as the browser reads it: its character references
/// decoded (lol_html hands over the value as written).
pub(crate) fn attribute_url(el: &Element<'_, '_>, attr: &str) -> Option<String> {
    el.get_attribute(attr).map(|raw| if raw.contains('&') { crate::html::stage1::decoded_chars(&raw).collect() } else { raw })
}

/// Sets `el`'s attribute `attr` to the URL `value`, written so that a browser reads `value`
/// back: `&` encoded (lol_html encodes `"` itself, and leaves `&` as given).
pub(crate) fn set_url(el: &mut Element<'_, '_>, attr: &str, value: &str) {
    // The name is one of ours and valid; setting it cannot fail.
    let _ = el.set_attribute(attr, &value.replace('&', "&amp;"));
}

fn set_routed(el: &mut Element<'_, '_>, attr: &str, links: &Links, base: Option<&Url>) {
    let Some(value) = attribute_url(el, attr) else { return };
    if let Some(routed) = links.route(base, &value) {
        set_url(el, attr, &routed);
    }
}

/// A form's action through the links' route. A GET form on the gateway posts to `/read` with
/// its target in a hidden field: its own fields then join the target's query there.
fn route_form(el: &mut Element<'_, '_>, links: &Links, base: Option<&Url>) {
    let action = attribute_url(el, "action").unwrap_or_default();
    let get = el.get_attribute("method").is_none_or(|m| m.trim().eq_ignore_ascii_case("get"));
    match links {
        Links::Gateway { profile } if get => {
            let target = match base {
                Some(b) => b.join(trim_url(&action)).ok(),
                None => Url::parse(trim_url(&action)).ok(),
            };
            let Some(mut target) = target.filter(|u| matches!(u.scheme(), "http" | "https")) else { return };
            target.set_query(None);
            target.set_fragment(None);
            let _ = el.set_attribute("action", GATEWAY_PATH);
            let mut hidden = format!("<input type=\"hidden\" name=\"url\" value=\"{}\">", escape_attr(target.as_str()));
            if let Some(p) = profile {
                hidden.push_str(&format!("<input type=\"hidden\" name=\"profile\" value=\"{}\">", escape_attr(p)));
            }
            el.prepend(&hidden, ContentType::Html);
        }
        _ if el.get_attribute("action").is_some() => set_routed(el, "action", links, base),
        _ => {}
    }
}

fn escape_attr(s: &str) -> String {
    s.replace('&', "&amp;").replace('"', "&quot;").replace('<', "&lt;")
}

/// Attributes whose value is a URL a browser may follow, load or run. `srcset` (several URLs)
/// and `<meta http-equiv=refresh>` are handled on their own.
const URL_ATTRIBUTES: &[&str] = &[
    "href", "src", "action", "formaction", "poster", "data", "xlink:href", "background", "cite", "longdesc", "lowsrc", "dynsrc",
    "codebase", "usemap", "ping", "manifest", "icon", "profile", "archive", "classid",
];

/// True when a URL (character references decoded) is relative or uses `http`, `https`,
/// `mailto` or `tel`: the only URLs kept on a page served from pith's own origin.
pub fn is_safe_url(url: &str) -> bool {
    crate::html::stage1::scheme_of(url.chars()).is_none_or(|scheme| matches!(&*scheme, "http" | "https" | "mailto" | "tel"))
}

/// Drops every URL attribute of `el` whose URL is not [`is_safe_url`], and `srcset` (its
/// candidates would each need checking and routing; `src` is what old devices read). A
/// `<meta http-equiv=refresh>` to an unsafe URL goes whole.
fn keep_safe_urls(el: &mut Element<'_, '_>) {
    let unsafe_attrs: Vec<String> = el
        .attributes()
        .iter()
        .map(|a| a.name())
        .filter(|name| name == "srcset" || URL_ATTRIBUTES.contains(&name.as_str()) || name.ends_with(":href"))
        .filter(|name| name == "srcset" || attribute_url(el, name).is_some_and(|v| !is_safe_url(&v)))
        .collect();
    for name in unsafe_attrs {
        el.remove_attribute(&name);
    }
    if el.tag_name() == "meta" && el.get_attribute("http-equiv").is_some_and(|v| v.trim().eq_ignore_ascii_case("refresh")) {
        let content = attribute_url(el, "content").unwrap_or_default();
        if !is_safe_url(refresh_url(&content)) {
            el.remove();
        }
    }
}

/// The URL of a refresh's `content` (`5; url=...`), as browsers read it: after the delay, an
/// optional `url=`, optional quotes.
fn refresh_url(content: &str) -> &str {
    let after_delay = content.trim_start().trim_start_matches(|c: char| c.is_ascii_digit() || c == '.');
    let rest = after_delay.trim_start_matches(|c: char| c == ';' || c == ',' || c.is_ascii_whitespace());
    let rest = match rest.get(..4) {
        Some(key) if key.eq_ignore_ascii_case("url=") => &rest[4..],
        _ => match rest.get(..3) {
            Some(key) if key.eq_ignore_ascii_case("url") => rest[3..].trim_start().trim_start_matches('=').trim_start(),
            _ => rest,
        },
    };
    rest.trim_matches(|c| c == '\'' || c == '"')
}

/// `<meta charset>` and `<meta http-equiv=content-type>` say `charset`; a legacy page says it
/// the HTML 3.2 way and drops the viewport, which old browsers do not know.
fn declare_charset(el: &mut Element<'_, '_>, charset: OutCharset, legacy: bool) {
    let content_type = format!("text/html; charset={}", charset.name());
    if el.has_attribute("charset") {
        if legacy {
            el.replace(&format!("<meta http-equiv=\"Content-Type\" content=\"{content_type}\">"), ContentType::Html);
        } else {
            let _ = el.set_attribute("charset", charset.name());
        }
    } else if el.get_attribute("http-equiv").is_some_and(|v| v.trim().eq_ignore_ascii_case("content-type")) {
        let _ = el.set_attribute("content", &content_type);
    } else if legacy && el.get_attribute("name").is_some_and(|v| v.trim().eq_ignore_ascii_case("viewport")) {
        el.remove();
    }
}

/// What HTML 3.2 does with an element of a later HTML, by its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Legacy {
    /// An HTML 3.2 element: kept.
    Keep,
    /// Renamed to an HTML 3.2 element of the same role.
    Rename(&'static str),
    /// Its tags dropped, its content kept.
    Unwrap,
    /// Dropped with its content: an old browser would show it as text, or show nothing useful.
    Remove,
}

/// HTML 3.2's elements (W3C Recommendation, 14 January 1997), less `applet`, `script`,
/// `style`, `link` and `isindex`, which a de-cluttered page has no use for.
const HTML32: &[&str] = &[
    "html", "head", "title", "base", "meta", "body", "h1", "h2", "h3", "h4", "h5", "h6", "p", "ul", "ol", "li", "dl", "dt", "dd",
    "dir", "menu", "pre", "xmp", "listing", "blockquote", "div", "center", "address", "form", "input", "select", "option",
    "textarea", "table", "caption", "tr", "th", "td", "a", "img", "map", "area", "font", "basefont", "br", "hr", "em", "strong",
    "dfn", "code", "samp", "kbd", "var", "cite", "tt", "i", "b", "u", "strike", "big", "small", "sub", "sup",
];

/// What becomes of `name` (lower case) on a legacy page.
pub fn legacy_of(name: &str) -> Legacy {
    if HTML32.contains(&name) {
        return Legacy::Keep;
    }
    match name {
        "section" | "article" | "main" | "header" | "footer" | "nav" | "aside" | "figure" | "hgroup" | "search" | "details"
        | "fieldset" | "figcaption" | "summary" | "legend" | "dialog" => Legacy::Rename("div"),
        "mark" => Legacy::Rename("strong"),
        "s" | "del" => Legacy::Rename("strike"),
        "ins" => Legacy::Rename("u"),
        "style" | "script" | "noscript" | "template" | "link" | "svg" | "math" | "video" | "audio" | "canvas" | "iframe"
        | "object" | "embed" | "source" | "track" | "col" | "colgroup" | "wbr" | "button" | "frame" | "frameset" | "applet" => {
            Legacy::Remove
        }
        _ => Legacy::Unwrap,
    }
}

/// Attributes HTML 3.2 defines, on any of its elements.
const HTML32_ATTRS: &[&str] = &[
    "href", "src", "alt", "name", "value", "type", "action", "method", "enctype", "width", "height", "align", "valign", "border",
    "cellpadding", "cellspacing", "colspan", "rowspan", "size", "color", "face", "start", "compact", "noshade", "checked",
    "selected", "multiple", "maxlength", "rows", "cols", "nowrap", "bgcolor", "text", "link", "vlink", "alink", "clear", "usemap",
    "shape", "coords", "hspace", "vspace", "ismap", "http-equiv", "content", "rel", "rev", "title", "prompt", "version",
];

/// One element of a legacy page, as [`legacy_of`] says; an `id` becomes a named anchor.
fn legacy_element(el: &mut Element<'_, '_>) {
    let name = el.tag_name();
    match legacy_of(&name) {
        Legacy::Remove => {
            el.remove();
            return;
        }
        Legacy::Unwrap => el.remove_and_keep_content(),
        Legacy::Rename(to) => {
            let _ = el.set_tag_name(to);
        }
        Legacy::Keep => {}
    }
    if let Some(id) = el.get_attribute("id").filter(|id| !id.is_empty()) {
        if name == "a" && !el.has_attribute("name") {
            let _ = el.set_attribute("name", &id);
        } else if name != "a" {
            el.before(&format!("<a name=\"{}\"></a>", escape_attr(&id)), ContentType::Html);
        }
    }
    let dropped: Vec<String> = el.attributes().iter().map(|a| a.name()).filter(|n| !HTML32_ATTRS.contains(&n.as_str())).collect();
    for attr in dropped {
        el.remove_attribute(&attr);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base() -> Url {
        Url::parse("https://news.example/a/page.html?x=1").unwrap()
    }

    macro_rules! routes {
        ($name:ident, $links:expr, $value:expr, $expect:expr) => {
            #[test]
            fn $name() {
                assert_eq!($links.route(Some(&base()), $value).as_deref(), $expect);
            }
        };
    }

    fn gateway() -> Links {
        Links::Gateway { profile: None }
    }

    fn downgrade() -> Links {
        Links::Downgrade { keep: HostList::new(&["bank.example"]).unwrap() }
    }

    routes!(gateway_relative, gateway(), "next.html", Some("/read?url=https%3A%2F%2Fnews.example%2Fa%2Fnext.html"));
    routes!(gateway_absolute_http, gateway(), "http://other.example/?q=a b", Some("/read?url=http%3A%2F%2Fother.example%2F%3Fq%3Da%2520b"));
    routes!(gateway_keeps_fragment_outside, gateway(), "/b#sec", Some("/read?url=https%3A%2F%2Fnews.example%2Fb#sec"));
    routes!(gateway_keeps_non_ascii_space, gateway(), "\u{a0}/next", Some("/read?url=https%3A%2F%2Fnews.example%2Fa%2F%25C2%25A0%2Fnext"));
    routes!(gateway_strips_c0_and_space, gateway(), "\t\u{1}/next \n", Some("/read?url=https%3A%2F%2Fnews.example%2Fnext"));
    routes!(gateway_in_page_anchor, gateway(), "#top", None);
    routes!(gateway_mailto, gateway(), "mailto:a@b.example", None);
    routes!(gateway_javascript, gateway(), "javascript:alert(1)", None);
    routes!(gateway_with_profile, Links::Gateway { profile: Some("reader".into()) }, "/c", Some("/read?url=https%3A%2F%2Fnews.example%2Fc&profile=reader"));
    routes!(downgrade_https, downgrade(), "https://shop.example/x?y#z", Some("http://shop.example/x?y#z"));
    routes!(downgrade_keeps_port, downgrade(), "HTTPS://shop.example:8443/", Some("http://shop.example:8443/"));
    routes!(downgrade_never_host, downgrade(), "https://www.bank.example/login", None);
    routes!(downgrade_relative_untouched, downgrade(), "/relative", None);
    routes!(downgrade_http_untouched, downgrade(), "http://x.example/", None);

    fn adapt(links: Links, charset: OutCharset, legacy: bool) -> Adapt {
        Adapt { links, charset, legacy }
    }

    fn html(a: &Adapt, page: &str) -> String {
        String::from_utf8_lossy(&a.html(page, Some("https://news.example/a/page.html"))).into_owned()
    }

    #[test]
    fn gateway_routes_links_images_and_forms_and_drops_base() {
        let page = "<html><head><base href=\"https://cdn.example/b/\"></head><body><a href=\"x\">x</a><img src=\"i.png\" srcset=\"i2.png 2x\">\
                    <form action=\"/search?old=1\"><input name=q></form><form method=post action=\"/p\"></form></body></html>";
        let out = html(&adapt(gateway(), OutCharset::Utf8, false), page);
        assert!(!out.contains("<base"), "{out}");
        assert!(out.contains("href=\"/read?url=https%3A%2F%2Fcdn.example%2Fb%2Fx\""), "{out}");
        assert!(out.contains("src=\"/read?url=https%3A%2F%2Fcdn.example%2Fb%2Fi.png\"") && !out.contains("srcset"), "{out}");
        assert!(out.contains("<form action=\"/read\"><input type=\"hidden\" name=\"url\" value=\"https://cdn.example/search\">"), "{out}");
        assert!(out.contains("<form method=post action=\"/read?url=https%3A%2F%2Fcdn.example%2Fp\">"), "{out}");
    }

    /// A link's character references are decoded before it is rewritten, and its `&`s encoded
    /// after: the origin gets the parameters the page named, not one called `amp;y`.
    #[test]
    fn links_are_read_and_written_with_their_character_references() {
        let page = "<a href=\"/more?x=1&amp;y=2\">a</a><a href=\"/more?x=1&#38;y=2\">b</a><a href=\"/q?s=&quot;hi&quot;\">c</a>\
                    <a href=\"/caf&eacute;?p=&#233;\">d</a><img src=\"/i?w=1&amp;h=2\"><form action=\"/s?a=1&amp;b=2\" method=post></form>\
                    <form action=\"/f&amp;g\"></form>";
        let out = html(&adapt(gateway(), OutCharset::Utf8, false), page);
        let two = "/read?url=https%3A%2F%2Fnews.example%2Fmore%3Fx%3D1%26y%3D2";
        assert_eq!(out.matches(&format!("href=\"{two}\"")).count(), 2, "{out}");
        assert!(out.contains("href=\"/read?url=https%3A%2F%2Fnews.example%2Fq%3Fs%3D%2522hi%2522\""), "{out}");
        assert!(out.contains("href=\"/read?url=https%3A%2F%2Fnews.example%2Fcaf%25C3%25A9%3Fp%3D%25C3%25A9\""), "{out}");
        assert!(out.contains("src=\"/read?url=https%3A%2F%2Fnews.example%2Fi%3Fw%3D1%26h%3D2\""), "{out}");
        assert!(out.contains("action=\"/read?url=https%3A%2F%2Fnews.example%2Fs%3Fa%3D1%26b%3D2\""), "{out}");
        assert!(out.contains("name=\"url\" value=\"https://news.example/f&amp;g\""), "{out}");
        let profiled = html(&adapt(Links::Gateway { profile: Some("reader".into()) }, OutCharset::Utf8, false), "<a href=\"/a?b=1&amp;c=2\">x</a>");
        assert!(profiled.contains("href=\"/read?url=https%3A%2F%2Fnews.example%2Fa%3Fb%3D1%26c%3D2&amp;profile=reader\""), "{profiled}");
        let down = html(&adapt(downgrade(), OutCharset::Utf8, false), "<a href=\"https://a.example/x?y=1&amp;z=&quot;2&quot;\">a</a><a href=\"https://a.example/caf&eacute;\">b</a>");
        assert!(down.contains("href=\"http://a.example/x?y=1&amp;z=%222%22\""), "{down}");
        assert!(down.contains("href=\"http://a.example/caf%C3%A9\""), "{down}");
    }

    /// On pages served from pith's own origin, every URL attribute keeps only http, https,
    /// mailto, tel and relative URLs, however its scheme is spelt.
    #[test]
    fn own_origin_pages_keep_only_safe_urls() {
        let page = "<html><head><meta http-equiv=refresh content=\"0; url=javascript:alert(1)\"><meta http-equiv=refresh content=\"5;URL='/next'\">\
                    <base href=\"javascript:alert(2)\"></head><body>\
                    <a href=\"data:text/html,<script>alert(3)</script>\">d</a><img src=\"javascript:alert(4)\"><img src=\"  JaVa&#x09;script&colon;x\">\
                    <a href=\"mailto:a@b.example\">m</a><a href=\"tel:+1555\">t</a><a href=\"http://ok.example/\">h</a><a href=\"rel\">r</a>\
                    <form action=\"vbscript:x\"><button formaction=\"javascript:y\">b</button></form><video poster=\"javascript:p\"></video>\
                    <object data=\"data:text/html,x\"></object><iframe src=\"javascript:i\"></iframe><img srcset=\"javascript:s 1x\">\
                    <svg><a xlink:href=\"javascript:x\"><text>s</text></a><a href=\"javascript:z\">z</a></svg></body></html>";
        for a in [adapt(gateway(), OutCharset::Utf8, false), adapt(Links::Kept, OutCharset::Utf8, true)] {
            let out = html(&a, page);
            for bad in ["javascript", "data:", "vbscript", "JaVa", "srcset", "alert"] {
                assert!(!out.contains(bad), "{bad} left on {a:?}:\n{out}");
            }
            assert!(out.contains("mailto:a@b.example") && out.contains("tel:+1555"), "{out}");
            if !a.legacy {
                assert!(out.contains("http-equiv=refresh content=\"5;URL='/next'\""), "a safe refresh stays: {out}");
                assert!(out.contains("/read?url=http%3A%2F%2Fok.example%2F") && out.contains("/read?url=https%3A%2F%2Fnews.example%2Fa%2Frel"), "{out}");
            }
        }
        // A proxied page served from the site's own origin keeps what it has here.
        assert!(!adapt(downgrade(), OutCharset::Utf8, false).is_own_origin());
    }

    #[test]
    fn downgrade_rewrites_absolute_https_only() {
        let page = "<a href=\"https://a.example/x\">a</a><a href=\"https://bank.example/\">b</a><form action=\"https://a.example/s\"></form><img src=\"https://a.example/i\">";
        let out = html(&adapt(downgrade(), OutCharset::Utf8, false), page);
        assert_eq!(out, "<a href=\"http://a.example/x\">a</a><a href=\"https://bank.example/\">b</a><form action=\"http://a.example/s\"></form><img src=\"http://a.example/i\">");
    }

    #[test]
    fn legacy_maps_elements_and_attributes() {
        let page = "<!DOCTYPE html><html lang=en><head><meta charset=\"utf-8\"><meta name=viewport content=\"width=device-width\"><style>p{}</style></head>\
                    <body><main class=m><article id=top><h1 style=\"x\">T</h1><p>a <span>b</span> <mark>c</mark> <time>d</time></p><svg><text>no</text></svg>\
                    <a href=\"#top\" id=l>up</a></article></main></body></html>";
        let out = html(&adapt(Links::Kept, OutCharset::Latin1, true), page);
        assert!(out.starts_with(LEGACY_DOCTYPE) && !out.contains("<!DOCTYPE html>"), "{out}");
        assert!(out.contains("<meta http-equiv=\"Content-Type\" content=\"text/html; charset=iso-8859-1\">"), "{out}");
        for gone in ["viewport", "<style", "p{}", "<main", "<article", "<span", "<mark", "<time", "<svg", "no</", "class=", "style=", "lang="] {
            assert!(!out.contains(gone), "{gone} left in {out}");
        }
        assert!(out.contains("<div><a name=\"top\"></a><div><h1>T</h1><p>a b <strong>c</strong> d</p>"), "{out}");
        assert!(out.contains("<a href=\"#top\" name=\"l\">up</a>"), "{out}");
    }

    #[test]
    fn charset_is_declared_and_written() {
        let out = adapt(Links::Kept, OutCharset::Latin1, false).html("<meta charset=utf-8><p>café “x” Łódź</p>", None);
        assert_eq!(out, b"<meta charset=\"iso-8859-1\"><p>caf\xe9 \"x\" L\xf3dz</p>".to_vec());
    }

    #[test]
    fn identity_is_untouched() {
        let a = adapt(Links::Kept, OutCharset::Utf8, false);
        assert!(a.is_identity());
        assert_eq!(a.html("<p>é</p>", None), "<p>é</p>".as_bytes());
    }
}
