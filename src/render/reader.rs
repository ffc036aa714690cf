//! The reading page: the main content an extractor left in a tree, in pith's own small,
//! accessible HTML5 page, and its plain-text twin.
//!
//! The page is built for screen readers and small screens first:
//!
//! - one `<h1>`, the title, in a `<header>` landmark with the byline, the date and a link to
//!   the original page; the content in `<main>`; a table of contents in a
//!   `<nav aria-label="Contents">` when the content has three headings or more;
//! - `lang` and `dir` of the source's `<html>`, a charset, a viewport and a `<title>`;
//! - the content's structure kept: headings (a content `<h1>` becomes `<h2>`, and a leading
//!   heading that repeats the title is dropped), paragraphs, lists, data tables, figures with
//!   captions, images (with `alt`, empty when the page gave none), `pre`/`code`, quotes and the
//!   phrasing elements that carry meaning (`em`, `strong`, `code`, `a`, …);
//! - everything presentational dropped: layout `div`s and layout tables are unwrapped (their
//!   loose text becomes paragraphs), and only the attributes with a meaning survive (`href`,
//!   `src`, `alt`, `colspan`, `datetime`, `lang`, …), no `class`, `style`, `id` or handler;
//! - links and image sources made absolute against the page URL or its `<base>`, so the page
//!   works wherever it is served from;
//! - a short inline stylesheet (a readable measure, the user's dark or light preference), and
//!   no script.
//!
//! What is content is the extractor's decision ([`crate::extract::algorithm`]); the metadata
//! comes from [`crate::extract::meta`]. This module only renders.

mod about;
mod content;

use url::Url;

use crate::dom::{Edge, NodeId, Tree};
use crate::extract::meta::Meta;

pub use about::{insert_about, kind_line, About};
use content::Content;
use crate::images::Images;

/// A reading page's header fields and where it came from.
#[derive(Debug, Clone, Copy)]
pub struct Page<'a> {
    /// The page's metadata.
    pub meta: &'a Meta,
    /// The absolute URL links resolve against (the page URL or its `<base>`).
    pub base: Option<&'a str>,
    /// The original page's address, linked from the header.
    pub original: Option<&'a str>,
    /// What images become ([`crate::images`]).
    pub images: Images,
}

/// The title used when the page states none.
const UNTITLED: &str = "Untitled page";

/// Characters of other text after which a heading is no longer "leading".
const LEADING_TEXT_CHARS: u32 = 200;

/// Tables of contents start at this many headings: fewer are seen at a glance.
const TOC_MIN_HEADINGS: usize = 3;

/// The stylesheet: a measure of about 70 characters, system colours with a dark variant.
const STYLE: &str = concat!(
    ":root{color-scheme:light dark;--fg:#1d1d1f;--bg:#fdfdfb;--muted:#4f4f55;--link:#0b57d0;--rule:#d0d0d4}",
    "@media (prefers-color-scheme:dark){:root{--fg:#e8e8ea;--bg:#17171a;--muted:#b4b4bb;--link:#8ab4f8;--rule:#3a3a40}}",
    "body{margin:0 auto;max-width:38rem;padding:1rem 1.25rem 3rem;font:1.125rem/1.6 Georgia,'Times New Roman',serif;",
    "color:var(--fg);background:var(--bg);overflow-wrap:break-word}",
    "h1,h2,h3,h4,h5,h6{font-family:system-ui,sans-serif;line-height:1.25}",
    "a{color:var(--link)}header p,nav{color:var(--muted);font-size:.95rem}",
    "img,video{max-width:100%;height:auto}figure{margin:1.5rem 0}figcaption{color:var(--muted);font-size:.9rem}",
    "pre{overflow-x:auto;padding:.75rem;border:1px solid var(--rule)}code,pre{font-size:.9em}math[display=block]{overflow-x:auto}",
    "blockquote{margin:1rem 0;padding-left:1rem;border-left:3px solid var(--rule)}",
    "table{border-collapse:collapse;display:block;overflow-x:auto;max-width:100%}th,td{border:1px solid var(--rule);padding:.25rem .5rem}",
    "[role=note]{border:1px solid var(--rule);padding:.5rem .75rem}",
    super::bar_style!()
);

/// The reading page of `tree`'s kept body. Never fails: a page without content gets an empty
/// `<main>`.
pub fn render(tree: &mut Tree, page: &Page<'_>) -> String {
    let body = tree.body();
    let title = take_title(tree, page.meta).unwrap_or_else(|| UNTITLED.to_string());
    let base = page.base.and_then(|b| Url::parse(b).ok());
    let mut content = Content::new(tree, base, page.images);
    if let Some(body) = body {
        content.render(body);
    }
    let (html, headings) = content.finish();
    let mut out = String::with_capacity(html.len() + STYLE.len() + 512);
    document_start(&mut out, page.meta, &title);
    header(&mut out, page, &title);
    toc(&mut out, &headings);
    out.push_str("<main>");
    out.push_str(&html);
    out.push_str("</main></body></html>\n");
    out
}

/// Reading mode as plain text, for a listener as much as a reader: the title on the first line,
/// then `By <byline> · <date>` when either is known, then the content one block per line (as
/// [`super::text`] writes it). As on the reading page, a leading content heading that repeats
/// the title is not read twice. A page with no title known starts with its content.
pub fn render_text(tree: &mut Tree, meta: &Meta) -> String {
    let mut out = String::new();
    if let Some(title) = take_title(tree, meta) {
        out.push_str(&title);
        out.push('\n');
    }
    if meta.byline.is_some() || meta.published.is_some() {
        if let Some(by) = &meta.byline {
            out.push_str("By ");
            out.push_str(&one_line(by));
        }
        if let Some(date) = &meta.published {
            if meta.byline.is_some() {
                out.push_str(" · ");
            }
            out.push_str(iso_day(date).unwrap_or(date));
        }
        out.push('\n');
    }
    out.push_str(&super::text::render(tree));
    out
}

/// The main content alone as plain text, one block per line, exactly as the extractor left it:
/// what extraction benchmarks compare with their reference texts (`pith extract --format
/// content`).
pub fn render_content(tree: &Tree) -> String {
    super::text::render(tree)
}

/// The page's title: the metadata's, else a leading `h1` of the content. The leading `h1`/`h2`
/// that repeats it is removed from `tree`, since the title is shown (or read) first anyway.
/// `None` when the page states no title.
fn take_title(tree: &mut Tree, meta: &Meta) -> Option<String> {
    let heading = tree.body().and_then(|b| leading_title_heading(tree, b, meta.title.as_deref()));
    let title = meta.title.as_deref().map(one_line).or_else(|| heading.map(|h| heading_text(tree, h))).filter(|t| !t.is_empty());
    if let Some(h) = heading {
        tree.remove(h);
    }
    title
}

/// `text` with its whitespace runs, line breaks included, collapsed to one space.
fn one_line(text: &str) -> String {
    crate::dom::words(text).collect::<Vec<_>>().join(" ")
}

/// A visible note for the top of a served page (e.g. "no clear main content"), inserted right
/// after the `<body>` start tag of `page` as [`super::html::render`] writes it; appended when
/// no body start tag is found.
pub fn insert_note(page: String, note: &str) -> String {
    let mut html = String::with_capacity(note.len() + 64);
    html.push_str("<p role=\"note\">");
    escape(note, &mut html);
    html.push_str("</p>");
    let at = page.find("</head>").map_or(0, |i| i + 7);
    let start = page[at..].find("<body").map(|i| at + i);
    match start.and_then(|s| tag_end(&page, s)) {
        Some(end) => {
            let mut out = page;
            out.insert_str(end, &html);
            out
        }
        None => page + &html,
    }
}

/// The index just past the `>` ending the tag that starts at `start`, quotes respected (the
/// serialiser double-quotes every attribute value and escapes `"` inside).
fn tag_end(page: &str, start: usize) -> Option<usize> {
    let mut quoted = false;
    for (i, b) in page.bytes().enumerate().skip(start) {
        match b {
            b'"' => quoted = !quoted,
            b'>' if !quoted => return Some(i + 1),
            _ => {}
        }
    }
    None
}

/// The first `h1`/`h2` of the content, before much other text, whose text is the title.
fn leading_title_heading(tree: &Tree, body: NodeId, title: Option<&str>) -> Option<NodeId> {
    let mut seen = 0u32;
    let mut walk = tree.traverse(body);
    while let Some(edge) = walk.next() {
        let Edge::Open(node) = edge else { continue };
        if node != body && tree.is_content_hidden(node) {
            walk.skip_children();
            continue;
        }
        match tree.tag(node) {
            Some("h1" | "h2") => {
                let text = heading_text(tree, node);
                let same = match title {
                    Some(t) => same_words(&text, t),
                    None => tree.tag(node) == Some("h1") && !text.is_empty(),
                };
                if same {
                    return Some(node);
                }
                seen += text.chars().count() as u32;
                walk.skip_children();
            }
            _ => seen += tree.text(node).map_or(0, |t| t.trim().chars().count() as u32),
        }
        if seen > LEADING_TEXT_CHARS {
            return None;
        }
    }
    None
}

fn same_words(a: &str, b: &str) -> bool {
    crate::dom::words(a).map(str::to_lowercase).eq(crate::dom::words(b).map(str::to_lowercase))
}

fn heading_text(tree: &Tree, id: NodeId) -> String {
    let text = super::text::render_node(tree, id);
    crate::dom::words(&text).collect::<Vec<_>>().join(" ")
}

fn document_start(out: &mut String, meta: &Meta, title: &str) {
    out.push_str("<!DOCTYPE html>\n<html");
    for (name, value) in [("lang", &meta.lang), ("dir", &meta.dir)] {
        if let Some(v) = value {
            attr(out, name, v);
        }
    }
    out.push_str("><head><meta charset=\"utf-8\">");
    out.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">");
    out.push_str("<meta name=\"color-scheme\" content=\"light dark\"><title>");
    escape(title, out);
    out.push_str("</title><style>");
    out.push_str(STYLE);
    out.push_str("</style></head><body>");
}

fn header(out: &mut String, page: &Page<'_>, title: &str) {
    let meta = page.meta;
    out.push_str("<header><h1>");
    escape(title, out);
    out.push_str("</h1>");
    if meta.byline.is_some() || meta.published.is_some() {
        out.push_str("<p>");
        if let Some(by) = &meta.byline {
            out.push_str("By ");
            escape(by, out);
        }
        if let Some(date) = &meta.published {
            if meta.byline.is_some() {
                out.push_str(" · ");
            }
            time(out, date);
        }
        out.push_str("</p>");
    }
    if let Some(url) = page.original {
        out.push_str("<p><a");
        attr(out, "href", url);
        out.push_str(">Original page");
        if let Some(site) = &meta.site_name {
            out.push_str(" on ");
            escape(site, out);
        }
        out.push_str("</a></p>");
    }
    out.push_str("</header>");
}

/// The `YYYY-MM-DD` day of an ISO 8601 date; `None` for a date written otherwise.
fn iso_day(date: &str) -> Option<&str> {
    date.get(..10).filter(|d| {
        let b = d.as_bytes();
        b.iter().enumerate().all(|(i, c)| if i == 4 || i == 7 { *c == b'-' } else { c.is_ascii_digit() })
    })
}

/// A date: ISO dates shown as `YYYY-MM-DD` in a `<time datetime>`, anything else as written.
fn time(out: &mut String, date: &str) {
    match iso_day(date) {
        Some(day) => {
            out.push_str("<time");
            attr(out, "datetime", day);
            out.push('>');
            out.push_str(day);
            out.push_str("</time>");
        }
        None => escape(date, out),
    }
}

/// One heading of the content: its level after demotion, anchor and text.
#[derive(Debug, Clone, PartialEq)]
struct Heading {
    level: u8,
    anchor: String,
    text: String,
}

/// The table of contents, nested by heading level.
fn toc(out: &mut String, headings: &[Heading]) {
    if headings.len() < TOC_MIN_HEADINGS {
        return;
    }
    out.push_str("<nav aria-label=\"Contents\">");
    let mut levels: Vec<u8> = Vec::new();
    for h in headings {
        match levels.last() {
            None => out.push_str("<ol><li>"),
            Some(&top) if h.level > top => out.push_str("<ol><li>"),
            Some(_) => {
                while levels.len() > 1 && levels.last().is_some_and(|&top| h.level < top) {
                    levels.pop();
                    out.push_str("</li></ol>");
                }
                levels.pop();
                out.push_str("</li><li>");
            }
        }
        levels.push(h.level);
        out.push_str("<a href=\"#");
        out.push_str(&h.anchor);
        out.push_str("\">");
        escape(&h.text, out);
        out.push_str("</a>");
    }
    for _ in &levels {
        out.push_str("</li></ol>");
    }
    out.push_str("</nav>");
}

fn attr(out: &mut String, name: &str, value: &str) {
    out.push(' ');
    out.push_str(name);
    out.push_str("=\"");
    super::html::escape(value, true, out);
    out.push('"');
}

/// Appends `text` escaped for a text node.
fn escape(text: &str, out: &mut String) {
    super::html::escape(text, false, out);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(title: &str) -> Meta {
        Meta { title: Some(title.to_string()), lang: Some("en".into()), ..Meta::default() }
    }

    /// The `<main>` of the reading page of `body`, the page at `https://e.example/a/b`.
    fn main_of(body: &str, title: &str) -> String {
        let page = page_of(body, &meta(title));
        let start = page.find("<main>").expect("main") + 6;
        let end = page.find("</main>").expect("main end");
        page[start..end].to_string()
    }

    fn page_of(body: &str, meta: &Meta) -> String {
        let mut tree = Tree::parse(body);
        let page = Page { meta, base: Some("https://e.example/a/b"), original: Some("https://e.example/a/b"), images: Images::default() };
        render(&mut tree, &page)
    }

    macro_rules! renders {
        ($($name:ident: $html:expr => $expected:expr;)*) => {$(
            #[test]
            fn $name() {
                assert_eq!(main_of($html, "T"), $expected);
            }
        )*};
    }

    renders! {
        presentational_attributes_go:
            r#"<p class=x style="color:red" id=p1 onclick="f()" width=3 lang=de>Hallo <b class=y>Welt</b></p>"#
            => r#"<p lang="de">Hallo <b>Welt</b></p>"#;
        layout_divs_are_unwrapped_and_loose_text_becomes_paragraphs:
            "<div class=wrap><div>one</div><div>two <a href='/x?a=1&b=2'>link</a></div><p>three</p></div>"
            => r#"<p>one</p><p>two <a href="https://e.example/x?a=1&amp;b=2">link</a></p><p>three</p>"#;
        an_image_alone_in_a_link_is_named:
            "<p><a href='https://e.example/news/storm-week'><img src='/a.jpg' alt=''></a> <a href='/x' title='Next story'><img src='/b.jpg'></a> <a href='/y'><img src='/c.jpg' alt=''> Caption</a></p>"
            => r#"<p><a href="https://e.example/news/storm-week"><img src="https://e.example/a.jpg" alt="e.example: storm-week"></a> <a href="https://e.example/x"><img src="https://e.example/b.jpg" alt="Next story"></a> <a href="https://e.example/y"><img src="https://e.example/c.jpg" alt=""> Caption</a></p>"#;
        headings_never_skip_a_level:
            "<h3>A</h3><p>a</p><h5>A.1</h5><p>b</p><h4>A.2</h4><p>c</p><h3>B</h3><p>d</p><h2>C</h2><p>e</p>"
            => r#"<h2 id="s1">A</h2><p>a</p><h3 id="s2">A.1</h3><p>b</p><h3 id="s3">A.2</h3><p>c</p><h2 id="s4">B</h2><p>d</p><h2 id="s5">C</h2><p>e</p>"#;
        content_h1_becomes_h2:
            "<p>intro</p><h1>Part</h1><p>text</p>"
            => r#"<p>intro</p><h2 id="s1">Part</h2><p>text</p>"#;
        images_get_absolute_src_and_alt:
            "<figure><img src='i.png' width=300 class=big><figcaption>Cap</figcaption></figure><p><img data-src='/lazy.jpg' src='data:image/gif;base64,R0' alt='A cat'></p>"
            => r#"<figure><img src="https://e.example/a/i.png" alt=""><figcaption>Cap</figcaption></figure><p><img src="https://e.example/lazy.jpg" alt="A cat"></p>"#;
        lists_tables_code_quotes_kept:
            "<ul><li>a</li><li>b</li></ul><table><tr><th scope=col>h</th></tr><tr><td colspan=2 bgcolor=red>c</td></tr></table><pre><code>x  &lt; y\n  z</code></pre><blockquote cite='/q'>q</blockquote>"
            => r#"<ul><li>a</li><li>b</li></ul><table tabindex="0"><tbody><tr><th scope="col">h</th></tr><tr><td colspan="2">c</td></tr></tbody></table><pre tabindex="0"><code>x  &lt; y
  z</code></pre><blockquote cite="https://e.example/q">q</blockquote>"#;
        links_to_nowhere_are_unwrapped:
            "<p>See <a href='#'>the gallery</a> or <a href=''>this</a> <a href=/x>there</a>.</p>"
            => r#"<p>See the gallery or this <a href="https://e.example/x">there</a>.</p>"#;
        layout_tables_are_unwrapped:
            "<table><tr><td><p>story</p></td><td>side</td></tr></table>"
            => "<p>story</p><p>side</p>";
        scripts_forms_and_hidden_content_go:
            "<p>a</p><script>x()</script><div hidden>secret</div><form><input name=q><button>Go</button></form><svg><text>icon</text></svg>"
            => "<p>a</p>";
        heading_inside_link_is_not_a_block:
            "<a href='/s'><h2>Story</h2><span>teaser</span></a>"
            => r#"<p><a href="https://e.example/s">Story<br>teaser</a></p>"#;
        content_outside_a_lists_items_gets_items:
            "<ul><div>one</div><div>two</div><li>three</li>four <i>and</i> <b>more</b><ol><li>x</li></ol></ul>"
            => "<ul><li>one</li><li>two</li><li>three</li><li>four <i>and</i> <b>more</b></li><li><ol><li>x</li></ol></li></ul>";
        a_dl_of_no_terms_is_no_list:
            "<dl><dd>indented</dd></dl><dl><dt>Term</dt><dd>said</dd></dl><dl><dt>headline</dt></dl>"
            => "<p>indented</p><dl><dt>Term</dt><dd>said</dd></dl><p>headline</p>";
        links_without_href_and_spans_unwrap:
            "<p><a name=top>anchor</a> and <span class=k>span</span></p>"
            => "<p>anchor and span</p>";
    }

    /// An equation is content: its presentation markup stays, with the attributes that shape
    /// it; annotations, styling and links go, HTML inside is unwrapped; a displayed one takes
    /// keyboard focus (it scrolls on a phone).
    #[test]
    fn equations_are_kept_as_mathml() {
        let html = concat!(
            r#"<p>Let <math alttext="x^2"><msup><mi mathvariant="normal" style="color:red" onclick="x()">x</mi><mn>2</mn></msup></math> be.</p>"#,
            r#"<math display="block"><semantics><mfrac><mn>1</mn><mi href="https://t.example">n</mi></mfrac><annotation encoding="TeX">\frac1n</annotation></semantics></math>"#,
            r#"<math><mtext><b>bold</b> t</mtext></math>"#,
        );
        assert_eq!(
            main_of(html, "T"),
            concat!(
                r#"<p>Let <math alttext="x^2"><msup><mi mathvariant="normal">x</mi><mn>2</mn></msup></math> be.</p>"#,
                r#"<p><math display="block" tabindex="0"><semantics><mfrac><mn>1</mn><mi>n</mi></mfrac></semantics></math>"#,
                r#"<math><mtext>bold t</mtext></math></p>"#,
            )
        );
    }

    #[test]
    fn leading_heading_repeating_the_title_is_dropped() {
        let main = main_of("<article><span>News</span><h1>The  Title</h1><p>Body text.</p><h2>The Title</h2></article>", "the title");
        assert_eq!(main, r#"<p>News</p><p>Body text.</p><h2 id="s1">The Title</h2>"#);
    }

    #[test]
    fn the_page_has_one_h1_landmarks_and_metadata() {
        let m = Meta {
            title: Some("A <story>".into()),
            byline: Some("Jane Doe".into()),
            published: Some("2024-03-05T10:00:00Z".into()),
            lang: Some("ar".into()),
            dir: Some("rtl".into()),
            site_name: Some("Daily".into()),
            canonical: None,
        };
        let page = page_of("<h1>Other</h1><p>x</p>", &m);
        assert!(page.starts_with("<!DOCTYPE html>\n<html lang=\"ar\" dir=\"rtl\"><head><meta charset=\"utf-8\"><meta name=\"viewport\""), "{page}");
        assert!(page.contains("<title>A &lt;story&gt;</title>"));
        assert!(page.contains("<header><h1>A &lt;story&gt;</h1><p>By Jane Doe · <time datetime=\"2024-03-05\">2024-03-05</time></p><p><a href=\"https://e.example/a/b\">Original page on Daily</a></p></header>"), "{page}");
        assert_eq!(page.matches("<h1").count(), 1);
        assert!(page.contains("prefers-color-scheme:dark") && page.contains("max-width:38rem"));
        assert!(!page.contains("<script"));
        assert!(page.ends_with("</main></body></html>\n"));
    }

    #[test]
    fn three_headings_make_a_nested_table_of_contents() {
        let page = page_of("<h2>One</h2><p>a</p><h3>One.1</h3><p>b</p><h2>Two &amp; more</h2><p>c</p>", &meta("T"));
        let toc = concat!(
            r##"<nav aria-label="Contents"><ol><li><a href="#s1">One</a><ol><li><a href="#s2">One.1</a>"##,
            r##"</li></ol></li><li><a href="#s3">Two &amp; more</a></li></ol></nav><main>"##
        );
        assert!(page.contains(toc), "{page}");
        assert!(page.contains(r#"<h3 id="s2">One.1</h3>"#));
        let two = page_of("<h2>One</h2><h2>Two</h2><p>x</p>", &meta("T"));
        assert!(!two.contains("<nav"), "two headings need no contents");
    }

    #[test]
    fn untitled_pages_take_their_first_heading_or_a_placeholder() {
        let page = page_of("<h1>Found</h1><p>x</p>", &Meta::default());
        assert!(page.contains("<h1>Found</h1>") && !page.contains("<h2"), "{page}");
        assert!(!page.contains("<html lang"), "no language guessed");
        let page = page_of("", &Meta::default());
        assert!(page.contains("<h1>Untitled page</h1>") && page.contains("<main></main>"), "{page}");
    }

    #[test]
    fn content_form_is_the_content_alone() {
        let tree = Tree::parse("<h1>Title</h1><p>One.</p><ul><li>Two</li></ul>");
        assert_eq!(render_content(&tree), "Title\nOne.\nTwo\n");
    }

    #[test]
    fn text_form_starts_with_the_title_then_byline_and_date() {
        let m = Meta { byline: Some("Jane\n Doe".into()), published: Some("2024-03-05T10:00:00Z".into()), ..meta("The  Story") };
        let mut tree = Tree::parse("<h1>The Story</h1><p>One.</p><ul><li>Two</li></ul>");
        assert_eq!(render_text(&mut tree, &m), "The Story\nBy Jane Doe · 2024-03-05\nOne.\nTwo\n", "the heading is not read twice");
        let m = Meta { published: Some("5 March 2024".into()), ..meta("Other") };
        let mut tree = Tree::parse("<h1>The Story</h1><p>One.</p>");
        assert_eq!(render_text(&mut tree, &m), "Other\n5 March 2024\nThe Story\nOne.\n", "a heading that is not the title stays");
    }

    #[test]
    fn text_form_without_a_title_takes_the_leading_h1_or_none() {
        let mut tree = Tree::parse("<h1>Found</h1><p>One.</p>");
        assert_eq!(render_text(&mut tree, &Meta::default()), "Found\nOne.\n");
        let mut tree = Tree::parse("<p>One.</p>");
        assert_eq!(render_text(&mut tree, &Meta::default()), "One.\n", "no placeholder title is read out");
    }

    #[test]
    fn notes_go_right_after_the_body_tag() {
        let page = "<html><head><title>a>b</title></head><body class=\"x>y\"><p>z</p></body></html>".to_string();
        let noted = insert_note(page, "No <main> content");
        assert_eq!(noted, "<html><head><title>a>b</title></head><body class=\"x>y\"><p role=\"note\">No &lt;main&gt; content</p><p>z</p></body></html>");
        assert_eq!(insert_note(String::new(), "n"), "<p role=\"note\">n</p>");
    }

    #[test]
    fn output_parses_back_to_the_same_structure() {
        let body = "<div><p>a<div>b</div>c</p><ul><div><li>x</li></div></ul><table><tr><td><table><tr><td>n</td></tr></table></td></tr></table></div>";
        let page = page_of(body, &meta("T"));
        let again = crate::render::html::render(&Tree::parse(&page));
        let tree = Tree::parse(&page);
        let main = tree.descendants(tree.root()).find(|&id| tree.tag(id) == Some("main")).expect("main");
        let reparsed = crate::render::html::render_node(&tree, main);
        assert!(page.contains(&reparsed), "{page}\n{again}");
    }

    #[test]
    fn deep_and_odd_pages_do_not_panic() {
        let deep = format!("{}text{}", "<div><span>".repeat(5000), "</span></div>".repeat(5000));
        let mut tree = Tree::parse_with_max_depth(&deep, u32::MAX);
        let m = Meta::default();
        let out = render(&mut tree, &Page { meta: &m, base: None, original: None, images: Images::default() });
        assert!(out.contains("<p>text</p>"), "{}", &out[out.len().saturating_sub(200)..]);
        for html in ["<frameset><frame src=x></frameset>", "<table><td>", "<pre>", "<a href=x><p>y</a>"] {
            let mut tree = Tree::parse(html);
            render(&mut tree, &Page { meta: &m, base: Some("not a url"), original: None, images: Images::default() });
        }
    }
}
