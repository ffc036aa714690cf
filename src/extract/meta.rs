//! The page's metadata for the reading page: title, byline, publication date, language and
//! direction, site name and canonical address.
//!
//! Pages state these in several overlapping ways, none universal, so each field is read from
//! the most deliberate statement first: Open Graph and `article:` meta tags (written for
//! sharing, so usually clean), then schema.org JSON-LD, then microdata (`itemprop`), then
//! markup conventions (`<time datetime>`, `rel=author`, a "byline" class). The `<title>`
//! element comes last for the title because sites append their name to it ("Story | Site").
//!
//! One pass over the tree collects the candidates; nothing here changes the tree, so it runs
//! before an extractor removes anything. JSON-LD is read with a small scanner for the few
//! keys needed (`headline`, `datePublished`, `author`, `name`), not a full JSON parser: a
//! malformed block yields nothing rather than an error. What this module leaves to others:
//! stage 1 must keep the meta tags and the JSON-LD scripts (the reader rule file does), and the
//! renderer decides how to show the fields.

use crate::dom::{NodeId, Tree};

use super::{document_base, resolve_url};

/// What the page says about itself. Every field is optional: many pages state none of it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Meta {
    /// The article's title, without the site name the `<title>` often carries.
    pub title: Option<String>,
    /// The author(s), as written.
    pub byline: Option<String>,
    /// The publication date as the page states it (usually ISO 8601).
    pub published: Option<String>,
    /// `<html lang>`, so the reading page is read aloud in the right language.
    pub lang: Option<String>,
    /// `<html dir>` (`rtl`, `ltr`, `auto`), so right-to-left pages stay right-to-left.
    pub dir: Option<String>,
    /// The site's name (`og:site_name`, `application-name`).
    pub site_name: Option<String>,
    /// The page's canonical absolute URL (`link rel=canonical`, else `og:url`).
    pub canonical: Option<String>,
}

/// The longest byline kept: a longer "byline" block is a bio or a teaser, not a name.
const MAX_BYLINE_CHARS: usize = 100;

/// Candidates collected in one pass, in the order of preference within each kind.
#[derive(Default)]
struct Found {
    og_title: Option<String>,
    title_element: Option<String>,
    h1s: Vec<String>,
    meta_author: Option<String>,
    itemprop_author: Option<String>,
    rel_author: Option<String>,
    class_byline: Option<String>,
    meta_published: Option<String>,
    itemprop_published: Option<String>,
    time_datetime: Option<String>,
    site_name: Option<String>,
    canonical: Option<String>,
    og_url: Option<String>,
    json_ld: Vec<String>,
}

/// Reads the page's metadata. `page_url` resolves a relative canonical link.
pub fn extract(tree: &Tree, page_url: Option<&str>) -> Meta {
    let found = collect(tree);
    let (lang, dir) = match tree.document_element() {
        Some(html) => (non_empty(tree.attr(html, "lang")), non_empty(tree.attr(html, "dir"))),
        None => (None, None),
    };
    let ld = JsonLd::read(&found.json_ld);
    let site_name = found.site_name.clone().or(ld.publisher.clone());
    let title = choose_title(&found, ld.headline.as_deref(), site_name.as_deref());
    let byline = found
        .meta_author
        .clone()
        .or(ld.author.clone())
        .or(found.itemprop_author.clone())
        .or(found.rel_author.clone())
        .or(found.class_byline.clone());
    let published = found
        .meta_published
        .clone()
        .or(ld.published.clone())
        .or(found.itemprop_published.clone())
        .or(found.time_datetime.clone());
    let base = document_base(tree, page_url);
    let canonical = found.canonical.clone().or(found.og_url.clone()).and_then(|href| {
        match &base {
            Some(base) => resolve_url(base, &href),
            None => url::Url::parse(href.trim()).ok().map(String::from),
        }
    });
    Meta { title, byline, published, lang, dir, site_name, canonical }
}

/// One pass over every element, noting each candidate the first time it is seen.
fn collect(tree: &Tree) -> Found {
    let mut f = Found::default();
    for id in tree.descendants(tree.root()) {
        let Some(tag) = tree.tag(id) else { continue };
        match tag {
            "meta" => meta_tag(tree, id, &mut f),
            "link" if has_word(tree.attr(id, "rel"), "canonical") => set_once(&mut f.canonical, tree.attr(id, "href")),
            "title" if f.title_element.is_none() => f.title_element = non_empty(Some(&text_of(tree, id))),
            "h1" if f.h1s.len() < 8 => f.h1s.extend(non_empty(Some(&text_of(tree, id)))),
            "script" if is_json_ld(tree, id) => f.json_ld.extend(tree.children(id).filter_map(|c| tree.text(c)).map(str::to_string)),
            "time" => set_once(&mut f.time_datetime, tree.attr(id, "datetime")),
            "a" if has_word(tree.attr(id, "rel"), "author") => set_once(&mut f.rel_author, Some(&text_of(tree, id))),
            _ => {}
        }
        microdata(tree, id, tag, &mut f);
        if f.class_byline.is_none() && has_byline_class(tree.attr(id, "class")) {
            let text = text_of(tree, id);
            if text.chars().count() <= MAX_BYLINE_CHARS {
                f.class_byline = non_empty(Some(strip_by(&text)));
            }
        }
    }
    f
}

fn meta_tag(tree: &Tree, id: NodeId, f: &mut Found) {
    let key = tree.attr(id, "property").or_else(|| tree.attr(id, "name")).unwrap_or("");
    let content = tree.attr(id, "content");
    match key.to_ascii_lowercase().as_str() {
        "og:title" => set_once(&mut f.og_title, content),
        "og:site_name" | "application-name" => set_once(&mut f.site_name, content),
        "og:url" => set_once(&mut f.og_url, content),
        // article:author is often a profile URL, which is not a name.
        "author" | "article:author" | "dc.creator" | "parsely-author" | "sailthru.author"
            if !content.is_some_and(|c| c.trim_start().starts_with("http")) =>
        {
            set_once(&mut f.meta_author, content)
        }
        "article:published_time" | "og:article:published_time" | "date" | "dc.date"
        | "dc.date.issued" | "dcterms.created" | "pubdate" | "publish-date" => {
            set_once(&mut f.meta_published, content)
        }
        _ => {}
    }
}

/// `itemprop=author` (its `name` inside, or its text) and `itemprop=datePublished`.
fn microdata(tree: &Tree, id: NodeId, tag: &str, f: &mut Found) {
    let Some(prop) = tree.attr(id, "itemprop") else { return };
    if has_word(Some(prop), "datePublished") && f.itemprop_published.is_none() {
        let value = tree.attr(id, "content").or_else(|| tree.attr(id, "datetime"));
        let text = text_of(tree, id);
        f.itemprop_published = non_empty(value.or(Some(&text)));
    }
    if has_word(Some(prop), "author") && f.itemprop_author.is_none() {
        let named = tree
            .descendants(id)
            .find(|&d| has_word(tree.attr(d, "itemprop"), "name"))
            .map(|d| tree.attr(d, "content").map(str::to_string).unwrap_or_else(|| text_of(tree, d)));
        let value = named.or_else(|| (tag == "meta").then(|| tree.attr(id, "content").unwrap_or("").to_string()));
        let value = value.unwrap_or_else(|| text_of(tree, id));
        if value.chars().count() <= MAX_BYLINE_CHARS {
            f.itemprop_author = non_empty(Some(strip_by(&value)));
        }
    }
}

/// og:title, else an `<h1>` the `<title>` contains that is at least half of the part of it
/// between separators that holds it (the article's own heading; not a section's "Reviews" the
/// title's last part ends on), else the JSON-LD headline, else the `<title>` without its
/// site-name part.
fn choose_title(f: &Found, headline: Option<&str>, site: Option<&str>) -> Option<String> {
    if let Some(t) = &f.og_title {
        return Some(t.clone());
    }
    if let Some(title) = &f.title_element {
        let lower = title.to_lowercase();
        let h1 = f.h1s.iter().find(|h| h.chars().count() >= 3 && is_title_part(&lower, &h.to_lowercase()));
        if let Some(h1) = h1 {
            return Some(h1.clone());
        }
    }
    if let Some(h) = headline.and_then(|h| non_empty(Some(h))) {
        return Some(h);
    }
    f.title_element.as_deref().map(|t| strip_site_name(t, site))
}

/// Whether `h1` (lower case) is in `title` (lower case) and at least half of the part between
/// separators that holds it; one that spans parts is.
fn is_title_part(title: &str, h1: &str) -> bool {
    if !title.contains(h1) {
        return false;
    }
    let mut parts = vec![title];
    for sep in SEPARATORS {
        parts = parts.into_iter().flat_map(|p| p.split(sep)).collect();
    }
    parts.into_iter().find(|p| p.contains(h1)).is_none_or(|part| h1.chars().count() * 2 >= part.trim().chars().count())
}

/// Separators sites put between the article's title and their name.
const SEPARATORS: [&str; 8] = [" | ", " - ", " – ", " — ", " :: ", " · ", " » ", " / "];

/// Removes the site-name part of a `<title>`: the part equal to the known site name, at either
/// end; else the last part, when what remains is still a title (three words or more: "Home -
/// Site" stays whole, since "Home" alone says less than the whole).
pub fn strip_site_name(title: &str, site: Option<&str>) -> String {
    let title = title.trim();
    let cuts: Vec<(usize, &str)> = SEPARATORS
        .iter()
        .flat_map(|sep| title.match_indices(sep).map(move |(i, _)| (i, *sep)))
        .collect();
    if let Some(site) = site.map(str::trim).filter(|s| !s.is_empty()) {
        for &(i, sep) in &cuts {
            let (head, tail) = (&title[..i], &title[i + sep.len()..]);
            if tail.trim().eq_ignore_ascii_case(site) {
                return head.trim().to_string();
            }
            if head.trim().eq_ignore_ascii_case(site) {
                return tail.trim().to_string();
            }
        }
    }
    let last = cuts.iter().max_by_key(|(i, _)| *i);
    match last {
        Some(&(i, _)) if crate::dom::words(&title[..i]).count() >= 3 => title[..i].trim().to_string(),
        _ => title.to_string(),
    }
}

/// The fields read from JSON-LD blocks.
#[derive(Default)]
struct JsonLd {
    headline: Option<String>,
    published: Option<String>,
    author: Option<String>,
    publisher: Option<String>,
}

impl JsonLd {
    fn read(blocks: &[String]) -> JsonLd {
        let mut ld = JsonLd::default();
        for block in blocks {
            ld.headline = ld.headline.or_else(|| json_value(block, "headline"));
            ld.published = ld.published.or_else(|| json_value(block, "datePublished"));
            ld.author = ld.author.or_else(|| json_value(block, "author"));
            ld.publisher = ld.publisher.or_else(|| json_value(block, "publisher"));
        }
        ld.author = ld.author.filter(|a| a.chars().count() <= MAX_BYLINE_CHARS && !a.starts_with("http"));
        ld
    }
}

/// The value of the first `"key":` in a JSON text: a string as is; for an object or array, the
/// first `"name"` string inside it (schema.org's Person and Organization). Names of several
/// authors in an array are joined with ", ".
fn json_value(json: &str, key: &str) -> Option<String> {
    let needle = format!("\"{key}\"");
    let mut from = 0;
    while let Some(at) = json[from..].find(&needle) {
        let after = from + at + needle.len();
        from = after;
        let rest = json[after..].trim_start();
        let Some(rest) = rest.strip_prefix(':') else { continue };
        let rest = rest.trim_start();
        return match rest.as_bytes().first()? {
            b'"' => json_string(rest).map(|(s, _)| s).and_then(|s| non_empty(Some(&s))),
            b'{' | b'[' => names_in(balanced(rest)?),
            _ => None,
        };
    }
    None
}

/// Every `"name": "…"` directly in a value, joined: an array of authors gives all of them.
fn names_in(value: &str) -> Option<String> {
    if value.starts_with('[') && value[1..].trim_start().starts_with('"') {
        // An array of plain strings.
        let (first, _) = json_string(value[1..].trim_start())?;
        return non_empty(Some(&first));
    }
    let mut names = Vec::new();
    let mut from = 0;
    while let Some(at) = value[from..].find("\"name\"") {
        from += at + 6;
        let rest = value[from..].trim_start();
        if let Some(rest) = rest.strip_prefix(':') {
            if let Some((name, _)) = json_string(rest.trim_start()) {
                if !name.trim().is_empty() && !names.contains(&name) {
                    names.push(name);
                }
            }
        }
        if !value.starts_with('[') {
            break;
        }
    }
    non_empty(Some(&names.join(", ")))
}

/// The object or array at the start of `text`, brackets balanced outside strings.
fn balanced(text: &str) -> Option<&str> {
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for (i, c) in text.char_indices() {
        match (in_string, c) {
            (true, _) if escaped => escaped = false,
            (true, '\\') => escaped = true,
            (true, '"') => in_string = false,
            (true, _) => {}
            (false, '"') => in_string = true,
            (false, '{' | '[') => depth += 1,
            (false, '}' | ']') => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return Some(&text[..=i]);
                }
            }
            _ => {}
        }
    }
    None
}

/// Decodes the JSON string at the start of `text`; returns it and the rest after it.
fn json_string(text: &str) -> Option<(String, &str)> {
    let body = text.strip_prefix('"')?;
    let mut out = String::new();
    let mut chars = body.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => return Some((out, &body[i + 1..])),
            '\\' => match chars.next()?.1 {
                'n' | 'r' | 't' => out.push(' '),
                'u' => {
                    let hex: String = (0..4).filter_map(|_| chars.next().map(|(_, c)| c)).collect();
                    let code = u32::from_str_radix(&hex, 16).ok()?;
                    out.push(char::from_u32(code).unwrap_or('\u{fffd}'));
                }
                other => out.push(other),
            },
            c => out.push(c),
        }
    }
    None
}

fn is_json_ld(tree: &Tree, id: NodeId) -> bool {
    tree.attr(id, "type").is_some_and(|t| t.trim().eq_ignore_ascii_case("application/ld+json"))
}

/// The element's text, whitespace collapsed, with content hidden from view included (the
/// `<title>` is in the hidden head).
/// The words of the text under `id`, joined by single spaces.
pub(crate) fn text_of(tree: &Tree, id: NodeId) -> String {
    let mut words: Vec<&str> = Vec::new();
    for d in tree.descendants(id) {
        if let Some(text) = tree.text(d) {
            words.extend(crate::dom::words(text));
        }
    }
    words.join(" ")
}

fn has_word(value: Option<&str>, word: &str) -> bool {
    value.is_some_and(|v| v.split_ascii_whitespace().any(|w| w.eq_ignore_ascii_case(word)))
}

fn has_byline_class(class: Option<&str>) -> bool {
    class.is_some_and(|c| {
        c.split_ascii_whitespace().any(|w| {
            let w = w.to_ascii_lowercase();
            w == "byline" || w == "author" || w.ends_with("-byline") || w.ends_with("__byline") || w == "author-name"
        })
    })
}

/// "By Jane Doe" → "Jane Doe".
fn strip_by(text: &str) -> &str {
    let t = text.trim();
    match t.get(..3) {
        Some(p) if p.eq_ignore_ascii_case("by ") => t[3..].trim(),
        _ => t,
    }
}

fn set_once(slot: &mut Option<String>, value: Option<&str>) {
    if slot.is_none() {
        *slot = non_empty(value);
    }
}

/// The value with whitespace collapsed, `None` when blank.
fn non_empty(value: Option<&str>) -> Option<String> {
    let joined = crate::dom::words(value?).collect::<Vec<_>>().join(" ");
    (!joined.is_empty()).then_some(joined)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(html: &str) -> Meta {
        extract(&Tree::parse(html), Some("https://news.example/a/b"))
    }

    #[test]
    fn open_graph_wins_for_title_and_site() {
        let m = meta(concat!(
            "<html lang=fr dir=rtl><head><title>Story here | Daily</title>",
            "<meta property='og:title' content='  Story   here '>",
            "<meta property='og:site_name' content='The Daily'>",
            "<meta name=author content='Jane Doe'>",
            "<meta property='article:published_time' content='2024-03-05T10:00:00Z'>",
            "<link rel=canonical href='/a/story'></head><body><h1>Other</h1></body></html>"
        ));
        assert_eq!(m.title.as_deref(), Some("Story here"));
        assert_eq!(m.site_name.as_deref(), Some("The Daily"));
        assert_eq!(m.byline.as_deref(), Some("Jane Doe"));
        assert_eq!(m.published.as_deref(), Some("2024-03-05T10:00:00Z"));
        assert_eq!((m.lang.as_deref(), m.dir.as_deref()), (Some("fr"), Some("rtl")));
        assert_eq!(m.canonical.as_deref(), Some("https://news.example/a/story"));
    }

    #[test]
    fn a_section_heading_the_title_ends_on_is_not_the_title() {
        let m = meta("<title>Diet plan (14 days) - lose 10 kg in two weeks. Reviews</title><h1>Reviews</h1>");
        assert_eq!(m.title.as_deref(), Some("Diet plan (14 days)"));
        let m = meta("<title>About bugs – Vortex Cannon Entertainment</title><h1>About bugs</h1>");
        assert_eq!(m.title.as_deref(), Some("About bugs"));
    }

    #[test]
    fn the_h1_the_title_contains_is_the_title() {
        let m = meta("<title>Bridge reopens after repairs - City News</title><h1>Menu</h1><h1>Bridge reopens after repairs</h1>");
        assert_eq!(m.title.as_deref(), Some("Bridge reopens after repairs"));
    }

    macro_rules! strips {
        ($($name:ident: $title:expr, $site:expr => $expected:expr;)*) => {$(
            #[test]
            fn $name() {
                assert_eq!(strip_site_name($title, $site), $expected);
            }
        )*};
    }

    strips! {
        suffix_named: "A long story title | The Daily", Some("The Daily") => "A long story title";
        prefix_named: "The Daily - Short", Some("the daily") => "Short";
        suffix_guessed: "Markets fall on rate fears – Example Times", None => "Markets fall on rate fears";
        short_head_kept_whole: "Home - Example", None => "Home - Example";
        no_separator: "Just a title", None => "Just a title";
        hyphenated_words_kept: "Well-known facts", None => "Well-known facts";
    }

    #[test]
    fn json_ld_gives_date_author_and_headline() {
        let m = meta(concat!(
            "<title>x</title><script type='application/ld+json'>{\"@type\":\"NewsArticle\",",
            "\"headline\":\"Caf\\u00e9 opens\",\"datePublished\": \"2023-01-02\",",
            "\"author\":[{\"@type\":\"Person\",\"name\":\"Ann\"},{\"@type\":\"Person\",\"name\":\"Bob\"}],",
            "\"publisher\":{\"@type\":\"Organization\",\"name\":\"Gazette\"}}</script>"
        ));
        assert_eq!(m.title.as_deref(), Some("Café opens"));
        assert_eq!(m.published.as_deref(), Some("2023-01-02"));
        assert_eq!(m.byline.as_deref(), Some("Ann, Bob"));
        assert_eq!(m.site_name.as_deref(), Some("Gazette"));
    }

    #[test]
    fn microdata_time_and_byline_markup() {
        let m = meta("<article><span itemprop=author itemscope><span itemprop=name>Kim Lee</span></span><time datetime='2020-05-06'>May 6</time></article>");
        assert_eq!(m.byline.as_deref(), Some("Kim Lee"));
        assert_eq!(m.published.as_deref(), Some("2020-05-06"));
        let m = meta("<p class='story-byline'>By Sam Roe</p><p itemprop=datePublished content='2021-01-01'>x</p>");
        assert_eq!(m.byline.as_deref(), Some("Sam Roe"));
        assert_eq!(m.published.as_deref(), Some("2021-01-01"));
    }

    #[test]
    fn author_urls_and_long_bylines_are_not_names() {
        let m = meta(&format!(
            "<meta property='article:author' content='https://social.example/jane'><div class=byline>{}</div>",
            "word ".repeat(40)
        ));
        assert_eq!(m.byline, None);
    }

    #[test]
    fn og_url_when_no_canonical_and_nothing_on_empty_pages() {
        let m = meta("<meta property='og:url' content='https://news.example/s/1'>");
        assert_eq!(m.canonical.as_deref(), Some("https://news.example/s/1"));
        assert_eq!(extract(&Tree::parse(""), None), Meta::default());
        let broken = meta("<script type=application/ld+json>{\"headline\": \"unterminated</script><script type=application/ld+json>{\"author\":{</script>");
        assert_eq!((broken.title, broken.byline), (None, None));
    }
}
