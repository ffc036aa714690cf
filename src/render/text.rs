//! Plain text: the visible text of a page, one block per line.
//!
//! This is the `text` profile's output and the form the extractors are scored in. The rules,
//! close to what a browser shows with its default style sheet:
//!
//! - Block-level elements (paragraphs, headings, list items, table rows, `div`, `section`, …)
//!   and `<br>` end the current line. No line is empty, so runs of blank lines never appear.
//! - Table cells on the same row are separated by a tab; images, buttons and other replaced
//!   elements separate words, as the box a browser draws for them does.
//! - Elsewhere whitespace runs, source line breaks included, collapse to one space, and lines
//!   carry no leading or trailing whitespace.
//! - `<pre>` keeps its text as written, line breaks and indentation included.
//! - Nothing shows from elements that hide their content (script, style, head, template,
//!   `hidden`, …; see [`Tree::is_content_hidden`]), from comments, nor from removed nodes.
//!   Images contribute nothing (their alt text is not body text).
//!
//! The output ends with a line break unless it is empty.

use markup5ever::local_name;

use crate::dom::{Edge, Element, NodeId, NodeKind, Ns, Tree};

/// The visible text of the whole document.
pub fn render(tree: &Tree) -> String {
    render_node(tree, tree.root())
}

/// The visible text of one node's subtree. The node itself is rendered even if it, or an
/// ancestor, hides its content (so `render_node(tree, title)` gives the title); hidden
/// descendants are skipped. A removed node renders as the empty string.
pub fn render_node(tree: &Tree, id: NodeId) -> String {
    let mut out = Writer::default();
    let mut walk = tree.traverse(id);
    while let Some(edge) = walk.next() {
        match edge {
            Edge::Open(node) => match tree.kind(node) {
                NodeKind::Text(span) => out.text(tree.str(*span)),
                NodeKind::Element(e) => {
                    if node != id && tree.is_content_hidden(node) {
                        walk.skip_children();
                    } else {
                        out.open(e);
                    }
                }
                _ => {}
            },
            Edge::Close(node) => {
                if let Some(e) = tree.element(node) {
                    if node == id || !tree.is_content_hidden(node) {
                        out.close(e);
                    }
                }
            }
        }
    }
    out.finish()
}

/// What separates the text written so far from the next text, strongest last.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug, Default)]
enum Gap {
    #[default]
    None,
    Space,
    Tab,
    Line,
}

/// How an element affects the lines around it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Layout {
    Inline,
    /// A replaced or inline-block element (image, button, control): a word boundary.
    Spaced,
    Block,
    Cell,
    Break,
    Pre,
}

/// The output under construction. Separators are held back in `gap` and written only before
/// the next text, which is what keeps lines trimmed and free of blank runs.
#[derive(Default)]
struct Writer {
    out: String,
    gap: Gap,
    /// Depth of open `<pre>` elements: inside one, text is written as is.
    pre: u32,
}

impl Writer {
    fn separate(&mut self, gap: Gap) {
        self.gap = self.gap.max(gap);
    }

    fn flush_gap(&mut self) {
        if !self.out.is_empty() {
            match self.gap {
                Gap::None => {}
                Gap::Space => self.out.push(' '),
                Gap::Tab => self.out.push('\t'),
                Gap::Line => self.out.push('\n'),
            }
        }
        self.gap = Gap::None;
    }

    fn text(&mut self, text: &str) {
        let text = &*super::heard::heard(text);
        if self.pre > 0 {
            if !text.is_empty() {
                self.flush_gap();
                self.out.push_str(text);
            }
            return;
        }
        let mut words = crate::dom::words(text);
        let Some(first) = words.next() else {
            if !text.is_empty() {
                self.separate(Gap::Space);
            }
            return;
        };
        if text.starts_with(char::is_whitespace) {
            self.separate(Gap::Space);
        }
        self.flush_gap();
        self.out.push_str(first);
        for word in words {
            self.out.push(' ');
            self.out.push_str(word);
        }
        if text.ends_with(char::is_whitespace) {
            self.separate(Gap::Space);
        }
    }

    fn open(&mut self, e: &Element) {
        match layout(e) {
            Layout::Inline => {}
            Layout::Spaced => self.separate(Gap::Space),
            Layout::Block => self.separate(Gap::Line),
            Layout::Cell => self.separate(Gap::Tab),
            Layout::Break if self.pre > 0 => {
                self.flush_gap();
                self.out.push('\n');
            }
            Layout::Break => self.separate(Gap::Line),
            Layout::Pre => {
                self.separate(Gap::Line);
                self.pre += 1;
            }
        }
    }

    fn close(&mut self, e: &Element) {
        match layout(e) {
            Layout::Inline | Layout::Break => {}
            Layout::Spaced => self.separate(Gap::Space),
            Layout::Block => self.separate(Gap::Line),
            Layout::Cell => self.separate(Gap::Tab),
            Layout::Pre => {
                self.pre = self.pre.saturating_sub(1);
                let kept = self.out.trim_end().len();
                self.out.truncate(kept);
                self.separate(Gap::Line);
            }
        }
    }

    fn finish(mut self) -> String {
        if !self.out.is_empty() {
            self.out.push('\n');
        }
        self.out
    }
}

/// The layout class of an element; only HTML elements start lines.
fn layout(e: &Element) -> Layout {
    if e.ns != Ns::Html {
        return Layout::Inline;
    }
    match e.name {
        local_name!("br") => Layout::Break,
        local_name!("td") | local_name!("th") => Layout::Cell,
        local_name!("img")
        | local_name!("button")
        | local_name!("input")
        | local_name!("select")
        | local_name!("iframe")
        | local_name!("embed")
        | local_name!("object")
        | local_name!("video")
        | local_name!("audio")
        | local_name!("canvas")
        | local_name!("meter")
        | local_name!("progress") => Layout::Spaced,
        local_name!("pre")
        | local_name!("listing")
        | local_name!("xmp")
        | local_name!("plaintext") => Layout::Pre,
        local_name!("textarea") => Layout::Block,
        _ if crate::dom::is_block(e) => Layout::Block,
        _ => Layout::Inline,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    macro_rules! renders {
        ($($name:ident: $html:expr => $expected:expr;)*) => {$(
            #[test]
            fn $name() {
                assert_eq!(render(&Tree::parse($html)), $expected);
            }
        )*};
    }

    renders! {
        ruby_reads_its_base_text: "<p><ruby>漢<rp>(</rp><rt>kan</rt><rp>)</rp>字<rt>ji</rt></ruby>です</p>"
            => "漢字です\n";
        soft_hyphens_go_and_text_is_composed: "<p>Donau\u{ad}dampf\u{ad}schiff im Cafe\u{301}</p>"
            => "Donaudampfschiff im Café\n";
        blocks_one_per_line:
            "<h1>Title</h1><p>First  para\n   with   spaces.</p><div>Div <b>bold</b> text</div>"
            => "Title\nFirst para with spaces.\nDiv bold text\n";
        inline_markup_does_not_split_words: "<p><b>foo</b>bar <i>baz</i></p>" => "foobar baz\n";
        images_and_buttons_separate_words: "<p>one<img src=x>two<button>Go</button><button>Back</button></p>"
            => "one two Go Back\n";
        whitespace_trimmed_at_line_ends: "<p>  lead <span> in </span>trail  </p>  <p>\n next\n</p>"
            => "lead in trail\nnext\n";
        line_breaks_never_leave_blank_lines: "<p>a<br>b<br><br>c<br></p><p>d</p>" => "a\nb\nc\nd\n";
        pre_keeps_its_lines: "<p>x</p><pre>\n  code\n\n    indented\n</pre><p>y</p>"
            => "x\n  code\n\n    indented\ny\n";
        pre_keeps_breaks_and_inline_markup: "<pre>a<br><b>b</b>  c</pre>" => "a\nb  c\n";
        table_rows_per_line_cells_by_tab:
            "<table><caption>Cap</caption><tr><th>H1<th>H2<tr><td> a <td>b <i>c</i></td></table>"
            => "Cap\nH1\tH2\na\tb c\n";
        lists_and_definitions: "<ul><li>one<li>two</ul><dl><dt>term<dd>meaning</dl>"
            => "one\ntwo\nterm\nmeaning\n";
        invisible_content_is_skipped: concat!(
            "<head><title>T</title><style>s{}</style></head><body><script>x()</script>",
            "<noscript>n</noscript><p>v<!-- c --></p><template>t</template>",
            "<p hidden>h</p><div style='display:none'>d</div><select><option>o</select>",
            "<img alt=pic src=x><span>w</span></body>")
            => "v\nw\n";
        blocks_inside_inline_still_break: "<a href=x>one<div>two</div>three</a>" => "one\ntwo\nthree\n";
        entities_are_decoded: "<p>a &amp; b &lt;c&gt; d&nbsp;e</p>" => "a & b <c> d e\n";
        empty_document: "" => "";
        only_hidden_content: "<script>x</script>" => "";
    }

    #[test]
    fn removed_nodes_are_skipped() {
        let mut tree = Tree::parse("<p>keep</p><div>drop <b>this</b></div><p>also</p>");
        let div = tree
            .descendants(tree.root())
            .find(|&id| tree.tag(id) == Some("div"));
        tree.remove(div.expect("div"));
        assert_eq!(render(&tree), "keep\nalso\n");
    }

    #[test]
    fn a_node_renders_even_inside_hidden_ancestors() {
        let tree = Tree::parse("<title> The  title </title><p>body <b>text</b></p>");
        let title = tree
            .descendants(tree.root())
            .find(|&id| tree.tag(id) == Some("title"));
        assert_eq!(render_node(&tree, title.expect("title")), "The title\n");
        let p = tree
            .descendants(tree.root())
            .find(|&id| tree.tag(id) == Some("p"));
        assert_eq!(render_node(&tree, p.expect("p")), "body text\n");
    }

    #[test]
    fn deep_nesting_renders_without_recursion() {
        const DEPTH: usize = 100_000;
        let html = format!(
            "<p>a</p>{}deep{}",
            "<span>".repeat(DEPTH),
            "</span>".repeat(DEPTH)
        );
        assert_eq!(
            render(&Tree::parse_with_max_depth(&html, u32::MAX)),
            "a\ndeep\n"
        );
    }
}
