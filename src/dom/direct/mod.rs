//! A tree builder of pith's own for the common path: the WHATWG tree-construction rules for the
//! markup most pages are made of, writing each node straight into a [`Tree`] in document order.
//!
//! Why: html5ever's tree builder hands every node to a sink that must support moving nodes
//! after the fact (the adoption agency, foster parenting), so [`super::build`] keeps a linked
//! arena and lays it out in pre-order afterwards, applying the stage-1 [`BuildFilter`] as it
//! goes. On most pages nothing is ever moved: each node is appended to the element on top of
//! the stack of open elements, which is always the last subtree of the tree. This builder
//! relies on that: it applies the filter when an element is created, merges text as it comes,
//! and has no arena and no layout pass.
//!
//! What it does not cover it does not guess: on anything outside its subset (foster parenting,
//! the adoption agency beyond popping, templates, framesets, MathML, a second
//! `<body>` with attributes, the depth guard, …) it *bails*: it sets a flag, the tokenizer
//! stops, and the dispatcher (`super::parse`) parses the page again with html5ever. The tests
//! hold it to the same tree as that path for every input it accepts, so a bail costs time on a
//! rare page and never changes a result.
//!
//! Every rule follows html5ever's `tree_builder/rules.rs` (the reference the other path runs),
//! including where that departs from the specification: scripting is enabled (`<noscript>` is
//! raw text), and `<select>` is parsed by the newer rules (an element of the body, with no
//! insertion mode of its own).

mod body;
mod document;
mod foreign;
mod names;
mod table;
#[cfg(test)]
mod tests;

use std::cell::{Cell, RefCell};

use html5ever::tokenizer::states::RawKind;
use html5ever::tokenizer::{Token, TokenSinkResult};
use markup5ever::tendril::StrTendril;
use markup5ever::{local_name, LocalName};

use super::build::{compute_ends, push_attrs, push_str};
use super::lex::{Sink, Tag};
use super::{BuildFilter, Element, Filtered, Node, NodeKind, Ns, TagAttr, Tree, Verdict, NONE};

/// Parses `html` into a tree (flags and statistics still empty) if every token stays within
/// this builder's subset; `None` when it bailed and html5ever must build the tree instead.
pub(super) fn parse(
    html: &str,
    max_depth: u32,
    filter: Option<&dyn BuildFilter>,
) -> Option<(Tree, Filtered)> {
    run(html, max_depth, filter).ok()
}

/// [`parse`], or where it bailed: the insertion mode and the token it could not take.
fn run(html: &str, max_depth: u32, filter: Option<&dyn BuildFilter>) -> Result<(Tree, Filtered), String> {
    let html = super::lex::normalise(html);
    let builder = Builder {
        state: RefCell::new(State::new(html.len(), max_depth, filter)),
        bailed: Cell::new(false),
        bailed_at: RefCell::new(String::new()),
    };
    super::lex::run(&html, &builder, || builder.bailed.get());
    if builder.bailed.get() {
        return Err(builder.bailed_at.into_inner());
    }
    Ok(builder.state.into_inner().finish())
}

/// Why the builder gave up: the page needs a rule it does not implement exactly.
struct Bail;

/// What a step tells the tokenizer: go on, or switch to a raw-text state.
enum Out {
    Continue,
    Raw(RawKind),
    Plaintext,
}

type Step = Result<Out, Bail>;

/// The insertion modes this builder implements (html5ever's names).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Mode {
    Initial,
    BeforeHtml,
    BeforeHead,
    InHead,
    AfterHead,
    InBody,
    Text,
    InTable,
    InCaption,
    InColumnGroup,
    InTableBody,
    InRow,
    InCell,
    AfterBody,
    AfterAfterBody,
}

/// The document's quirks mode as far as it matters here (`<table>` closing an open `<p>`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Quirks {
    /// No quirks or limited quirks: `<table>` closes an open `<p>`.
    No,
    /// Full quirks: it does not.
    Full,
    /// A doctype not classified here: bail where the answer would matter.
    Unknown,
}

/// A token as the rules see it: html5ever's, with character data as a slice so that splitting
/// off leading whitespace costs nothing, and start tags whose attributes borrow from the page.
enum Tok<'a, 's> {
    Chars(&'a str),
    Null,
    Comment(&'a str),
    Start(Tag<'s>),
    End(LocalName),
    Eof,
}

/// Where an element's children go in the tree: a node index, or nowhere ([`SKIP`]) when the
/// filter dropped the element or one of its ancestors.
const SKIP: u32 = NONE - 1;

/// An element on the stack of open elements.
#[derive(Clone)]
struct Open {
    /// Identity: elements are compared by it (the form pointer, the formatting list).
    id: u32,
    name: LocalName,
    ns: Ns,
    /// Where its children go: its own index, its parent's when unwrapped, or [`SKIP`].
    out: u32,
    /// Whether it is a node of the tree (neither unwrapped nor left out).
    kept: bool,
    /// Its depth in the document html5ever would build (the document is 0), for the guard.
    depth: u32,
}

/// The stack of open elements, counting the HTML `<p>` elements on it: most start tags in body
/// ask whether a `<p>` is open in button scope, and while none is open (most of the time) the
/// answer needs no walk down the stack. Read as a slice; changed only by these methods, which
/// keep the count.
struct Stack {
    items: Vec<Open>,
    paragraphs: usize,
}

impl Stack {
    fn is_paragraph(open: &Open) -> bool {
        open.ns == Ns::Html && open.name == local_name!("p")
    }

    fn push(&mut self, open: Open) {
        self.paragraphs += usize::from(Stack::is_paragraph(&open));
        self.items.push(open);
    }

    fn pop(&mut self) -> Option<Open> {
        let open = self.items.pop()?;
        self.paragraphs -= usize::from(Stack::is_paragraph(&open));
        Some(open)
    }

    fn truncate(&mut self, len: usize) {
        while self.items.len() > len {
            self.pop();
        }
    }

    fn remove(&mut self, at: usize) -> Open {
        let open = self.items.remove(at);
        self.paragraphs -= usize::from(Stack::is_paragraph(&open));
        open
    }
}

impl std::ops::Deref for Stack {
    type Target = [Open];

    fn deref(&self) -> &[Open] {
        &self.items
    }
}

/// An entry of the list of active formatting elements: the element and the token it was made
/// for (name and attributes before the filter saw them), from which it is reconstructed. The
/// attributes are a range of [`State::formatting_attrs`].
enum Formatting {
    Marker,
    Element {
        id: u32,
        name: LocalName,
        attrs: std::ops::Range<usize>,
    },
}

/// The tokenizer's [`Sink`]: the state behind a `RefCell`, because the tokenizer calls with `&self`.
struct Builder<'f, 's> {
    state: RefCell<State<'f, 's>>,
    bailed: Cell<bool>,
    /// Where it bailed, for the tests' statistics; written once per bail.
    bailed_at: RefCell<String>,
}

struct State<'f, 's> {
    tree: Tree,
    filter: Option<&'f dyn BuildFilter>,
    filtered: Filtered,
    max_depth: u32,
    mode: Mode,
    /// The mode to return to after `Text`.
    orig_mode: Mode,
    quirks: Quirks,
    open: Stack,
    active: Vec<Formatting>,
    /// The attributes of the entries of `active`, one run per entry, appended as entries are
    /// made and emptied when the list is: a vector per entry cost an allocation for each
    /// `<a href>`.
    formatting_attrs: Vec<TagAttr<'s>>,
    next_id: u32,
    /// The `<head>` element once created.
    head: Option<Open>,
    /// The form element pointer.
    form: Option<u32>,
    /// A line feed right after `<pre>`, `<listing>` or `<textarea>` is dropped.
    ignore_lf: bool,
    /// Comments that go to the `<html>` element after `</body>`, and to the document after
    /// `</html>`: html5ever appends them after the body while later text still goes into the
    /// body, so they are laid out at the end, where document order puts them.
    after_body: Vec<StrTendril>,
    after_html: Vec<StrTendril>,
    /// The emptied attribute vector of the last element laid out, for the tokenizer's next tag.
    spare: Vec<TagAttr<'s>>,
}

impl Builder<'_, '_> {
    /// Records a bail, with the mode and what the token was.
    fn bail(&self, state: &State<'_, '_>, what: impl FnOnce() -> String) {
        self.bailed.set(true);
        *self.bailed_at.borrow_mut() = format!("{:?}: {}", state.mode, what());
    }
}

impl<'s> Builder<'_, 's> {
    /// Runs a step on the state, recording a bail with `what` the token was.
    fn run_step(&self, what: impl FnOnce() -> String, step: impl FnOnce(&mut State<'_, 's>) -> Step) -> TokenSinkResult<()> {
        if self.bailed.get() {
            return TokenSinkResult::Continue;
        }
        let mut state = self.state.borrow_mut();
        match step(&mut state) {
            Ok(Out::Continue) => TokenSinkResult::Continue,
            Ok(Out::Raw(kind)) => TokenSinkResult::RawData(kind),
            Ok(Out::Plaintext) => TokenSinkResult::Plaintext,
            Err(Bail) => {
                self.bail(&state, what);
                TokenSinkResult::Continue
            }
        }
    }
}

impl<'s> Sink<'s> for Builder<'_, 's> {
    fn tag(&self, tag: Tag<'s>) -> TokenSinkResult<()> {
        // What the tag was, for the tests' account of bails; free in the proxy.
        #[cfg(test)]
        let what = describe_tag(&tag);
        #[cfg(not(test))]
        let what = String::new();
        self.run_step(|| what, |state| state.tag(tag))
    }

    fn end_tag(&self, name: LocalName, _self_closing: bool) -> TokenSinkResult<()> {
        #[cfg(test)]
        let what = format!("</{name}>");
        #[cfg(not(test))]
        let what = String::new();
        self.run_step(|| what, |state| state.end_tag(name))
    }

    fn spare(&self) -> Vec<TagAttr<'s>> {
        std::mem::take(&mut self.state.borrow_mut().spare)
    }

    fn token(&self, token: Token) -> TokenSinkResult<()> {
        #[cfg(test)]
        let what = describe(&token);
        #[cfg(not(test))]
        let what = String::new();
        self.run_step(|| what, |state| state.token(token))
    }

    fn comment(&self, text: &str, _shared: impl FnOnce() -> StrTendril) {
        // A comment never switches the tokenizer's state.
        let _ = self.run_step(|| "comment".to_string(), |state| state.comment_token(text));
    }

    fn text(&self, text: &str, _shared: impl FnOnce() -> StrTendril) {
        if self.bailed.get() {
            return;
        }
        let mut state = self.state.borrow_mut();
        // Character data never switches the tokenizer's state.
        if state.chars(text).is_err() {
            self.bail(&state, || "text".to_string());
        }
    }

    /// Whether `<![CDATA[` opens a CDATA section (in SVG) rather than a bogus comment.
    fn in_foreign_content(&self) -> bool {
        self.state.borrow().current().is_some_and(|o| o.ns != Ns::Html)
    }

    fn end(&self) {}
}

/// A start tag in a few words.
#[cfg(test)]
fn describe_tag(tag: &Tag<'_>) -> String {
    format!("<{}>", tag.name)
}

/// A token in a few words.
#[cfg(test)]
fn describe(token: &Token) -> String {
    match token {
        Token::TagToken(_) => "tag".to_string(),
        Token::CharacterTokens(_) => "text".to_string(),
        Token::NullCharacterToken => "NUL".to_string(),
        Token::CommentToken(_) => "comment".to_string(),
        Token::DoctypeToken(_) => "doctype".to_string(),
        Token::EOFToken => "end of input".to_string(),
        Token::ParseError(_) => "parse error".to_string(),
    }
}

pub(super) fn is_space(c: char) -> bool {
    c.is_ascii_whitespace()
}

/// `text` split into its leading run of ASCII whitespace and the rest.
fn split_space(text: &str) -> (&str, &str) {
    let rest = text.trim_start_matches(is_space);
    text.split_at(text.len() - rest.len())
}

impl<'f, 's> State<'f, 's> {
    fn new(len: usize, max_depth: u32, filter: Option<&'f dyn BuildFilter>) -> Self {
        let mut nodes = Vec::with_capacity(len / 64 + 1);
        nodes.push(Node {
            parent: NONE,
            end: 0,
            kind: NodeKind::Document,
        });
        State {
            tree: Tree {
                nodes,
                chars: String::with_capacity(len / 2),
                attrs: Vec::with_capacity(len / 128),
                flags: Vec::new(),
                stats: Vec::new(),
                truncated: false,
            },
            filter,
            filtered: Filtered::default(),
            max_depth,
            mode: Mode::Initial,
            orig_mode: Mode::InBody,
            quirks: Quirks::Full,
            open: Stack {
                items: Vec::with_capacity(64),
                paragraphs: 0,
            },
            active: Vec::new(),
            formatting_attrs: Vec::new(),
            next_id: 0,
            head: None,
            form: None,
            ignore_lf: false,
            after_body: Vec::new(),
            after_html: Vec::new(),
            spare: Vec::new(),
        }
    }

    fn finish(mut self) -> (Tree, Filtered) {
        let html_out = self.html_out();
        for text in std::mem::take(&mut self.after_body) {
            self.lay_comment(html_out, &text);
        }
        for text in std::mem::take(&mut self.after_html) {
            self.lay_comment(0, &text);
        }
        compute_ends(&mut self.tree.nodes);
        (self.tree, self.filtered)
    }

    /// One token from the tokenizer.
    fn token(&mut self, token: Token) -> Step {
        let ignore_lf = std::mem::take(&mut self.ignore_lf);
        match token {
            Token::DoctypeToken(doctype) => {
                if self.mode == Mode::Initial {
                    self.doctype(doctype)?;
                    self.mode = Mode::BeforeHtml;
                }
                Ok(Out::Continue)
            }
            // The tokenizer hands these over apart ([`Sink::tag`], [`Sink::comment`]).
            Token::TagToken(_) | Token::CommentToken(_) => Ok(Out::Continue),
            Token::CharacterTokens(text) => self.chars_after(&text, ignore_lf),
            Token::NullCharacterToken => self.step(Tok::Null),
            Token::EOFToken => self.step(Tok::Eof),
            Token::ParseError(_) => Ok(Out::Continue),
        }
    }

    /// A start tag from the tokenizer.
    fn tag(&mut self, tag: Tag<'s>) -> Step {
        self.ignore_lf = false;
        // Most tags come in body under an HTML element: straight to its rules, as `step`
        // would send them.
        if self.in_html_body() {
            self.body_start(tag)
        } else {
            self.step(Tok::Start(tag))
        }
    }

    /// An end tag from the tokenizer.
    fn end_tag(&mut self, name: LocalName) -> Step {
        self.ignore_lf = false;
        if self.in_html_body() {
            self.body_end(name)
        } else {
            self.step(Tok::End(name))
        }
    }

    /// A comment from the tokenizer.
    fn comment_token(&mut self, text: &str) -> Step {
        self.ignore_lf = false;
        self.step(Tok::Comment(text))
    }

    /// A run of character data from the tokenizer.
    fn chars(&mut self, text: &str) -> Step {
        let ignore_lf = std::mem::take(&mut self.ignore_lf);
        self.chars_after(text, ignore_lf)
    }

    /// Character data, dropping a leading line feed when `ignore_lf` (right after `<pre>`,
    /// `<listing>` or `<textarea>`).
    fn chars_after(&mut self, text: &str, ignore_lf: bool) -> Step {
        let text = match text.strip_prefix('\n') {
            Some(rest) if ignore_lf => rest,
            _ => text,
        };
        if text.is_empty() {
            return Ok(Out::Continue);
        }
        if self.in_html_body() {
            // `in_body`'s rule for character data, written out: a call through `in_body` cost
            // about 0.03 M instructions more per page, as did sending the tags through it.
            self.reconstruct()?;
            self.append_text(text)?;
            return Ok(Out::Continue);
        }
        self.step(Tok::Chars(text))
    }

    /// Whether the mode is "in body" and the current node an HTML element: then `step` sends
    /// every token but the end of input to [`State::in_body`], which the common tokens skip.
    fn in_html_body(&self) -> bool {
        self.mode == Mode::InBody && self.current().is_some_and(|o| o.ns == Ns::Html)
    }

    /// Processes a token in the current mode, or by the rules for foreign content.
    fn step(&mut self, tok: Tok<'_, 's>) -> Step {
        if self.is_foreign(&tok) {
            return self.foreign(tok);
        }
        self.by_mode(tok)
    }

    /// Processes a token by the rules of the current insertion mode.
    fn by_mode(&mut self, tok: Tok<'_, 's>) -> Step {
        match self.mode {
            Mode::Initial => self.initial(tok),
            Mode::BeforeHtml => self.before_html(tok),
            Mode::BeforeHead => self.before_head(tok),
            Mode::InHead => self.in_head(tok),
            Mode::AfterHead => self.after_head(tok),
            Mode::InBody => self.in_body(tok),
            Mode::Text => self.text(tok),
            Mode::InTable => self.in_table(tok),
            Mode::InCaption => self.in_caption(tok),
            Mode::InColumnGroup => self.in_column_group(tok),
            Mode::InTableBody => self.in_table_body(tok),
            Mode::InRow => self.in_row(tok),
            Mode::InCell => self.in_cell(tok),
            Mode::AfterBody => self.after_body(tok),
            Mode::AfterAfterBody => self.after_after_body(tok),
        }
    }

    fn reprocess(&mut self, mode: Mode, tok: Tok<'_, 's>) -> Step {
        self.mode = mode;
        self.step(tok)
    }

    // ---- The stack of open elements ----

    fn current(&self) -> Option<&Open> {
        self.open.last()
    }

    fn current_is(&self, name: &LocalName) -> bool {
        self.current().is_some_and(|o| o.ns == Ns::Html && o.name == *name)
    }

    fn pop(&mut self) {
        self.open.pop();
    }

    /// Pops until an HTML element named `name` has been popped.
    fn pop_until_named(&mut self, name: &LocalName) {
        while let Some(open) = self.open.pop() {
            if open.ns == Ns::Html && open.name == *name {
                break;
            }
        }
    }

    /// Pops until an HTML element whose name is in `set` has been popped.
    fn pop_until(&mut self, set: fn(&LocalName) -> bool) {
        while let Some(open) = self.open.pop() {
            if open.ns == Ns::Html && set(&open.name) {
                break;
            }
        }
    }

    fn in_scope(&self, scope: Scope, pred: impl Fn(&Open) -> bool) -> bool {
        for open in self.open.iter().rev() {
            if pred(open) {
                return true;
            }
            if scope.bounds(open) {
                return false;
            }
        }
        false
    }

    fn in_scope_named(&self, scope: Scope, name: &LocalName) -> bool {
        self.in_scope(scope, |o| o.ns == Ns::Html && o.name == *name)
    }

    /// Generates implied end tags (the cursory set), sparing elements named `except`.
    fn generate_implied_end(&mut self, except: Option<&LocalName>) {
        while let Some(open) = self.open.last() {
            if open.ns != Ns::Html || !is_implied_end(&open.name) || Some(&open.name) == except {
                return;
            }
            self.open.pop();
        }
    }

    fn close_p(&mut self) {
        self.generate_implied_end(Some(&local_name!("p")));
        self.pop_until_named(&local_name!("p"));
    }

    fn close_p_in_button_scope(&mut self) {
        if self.p_in_button_scope() {
            self.close_p();
        }
    }

    /// Whether a `<p>` is open in button scope; with none open at all, without a walk.
    fn p_in_button_scope(&self) -> bool {
        self.open.paragraphs > 0 && self.in_scope_named(Scope::Button, &local_name!("p"))
    }

    // ---- Writing the tree ----

    fn check_depth(&self, depth: u32) -> Result<(), Bail> {
        if depth > self.max_depth {
            Err(Bail)
        } else {
            Ok(())
        }
    }

    /// Where the current node's children go, and their depth.
    fn target(&self) -> (u32, u32) {
        match self.open.last() {
            Some(open) => (open.out, open.depth + 1),
            None => (0, 1),
        }
    }

    fn html_out(&self) -> u32 {
        self.open.first().map_or(0, |o| o.out)
    }

    /// Inserts an element for a token into the current node and pushes it.
    fn insert(&mut self, name: LocalName, ns: Ns, attrs: Vec<TagAttr<'s>>) -> Result<u32, Bail> {
        let (parent, depth) = self.target();
        self.check_depth(depth)?;
        let (out, kept) = self.lay_element(parent, &name, ns, attrs);
        let id = self.next_id;
        self.next_id += 1;
        self.open.push(Open {
            id,
            name,
            ns,
            out,
            kept,
            depth,
        });
        Ok(id)
    }

    /// Inserts an element into the current node without pushing it.
    fn insert_void(&mut self, name: LocalName, ns: Ns, attrs: Vec<TagAttr<'s>>) -> Result<u32, Bail> {
        let (parent, depth) = self.target();
        self.check_depth(depth)?;
        self.lay_element(parent, &name, ns, attrs);
        let id = self.next_id;
        self.next_id += 1;
        Ok(id)
    }

    fn comment(&mut self, text: &str) -> Step {
        let (parent, depth) = self.target();
        self.check_depth(depth)?;
        self.lay_comment(parent, text);
        Ok(Out::Continue)
    }

    fn append_text(&mut self, text: &str) -> Result<(), Bail> {
        let (parent, depth) = self.target();
        self.check_depth(depth)?;
        if parent == SKIP {
            return Ok(());
        }
        // Text right after a text sibling joins it: the parser's merging, and the filter's
        // (what stood between them was left out), as `build::lay_out` does.
        let chars_len = self.tree.chars.len() as u32;
        if let Some(last) = self.tree.nodes.last_mut() {
            if let NodeKind::Text(span) = &mut last.kind {
                if last.parent == parent && span.end == chars_len {
                    self.tree.chars.push_str(text);
                    span.end = self.tree.chars.len() as u32;
                    return Ok(());
                }
            }
        }
        let kind = NodeKind::Text(push_str(&mut self.tree.chars, text));
        self.push_node(parent, kind);
        Ok(())
    }

    fn lay_comment(&mut self, parent: u32, text: &str) {
        if parent == SKIP || self.filter.is_some_and(|f| !f.keeps_comments()) {
            return;
        }
        let kind = NodeKind::Comment(push_str(&mut self.tree.chars, text));
        self.push_node(parent, kind);
    }

    /// Lays out an element under `parent` as the filter decides; returns where its children go
    /// and whether it is a node of the tree. The emptied `attrs` are kept for the next tag.
    fn lay_element(&mut self, parent: u32, name: &LocalName, ns: Ns, mut attrs: Vec<TagAttr<'s>>) -> (u32, bool) {
        let verdict = match self.filter {
            _ if parent == SKIP => Verdict::Drop,
            Some(filter) => filter.element(name, &mut attrs),
            None => Verdict::Keep { stripped: 0 },
        };
        let laid = match verdict {
            Verdict::Keep { stripped } => {
                self.filtered.attributes += stripped as u64;
                let attrs = push_attrs(&mut self.tree, attrs.drain(..));
                let kind = NodeKind::Element(Element {
                    ns,
                    name: name.clone(),
                    attrs,
                });
                (self.push_node(parent, kind), true)
            }
            Verdict::Drop => {
                self.filtered.elements += u64::from(parent != SKIP);
                (SKIP, false)
            }
            Verdict::Unwrap => {
                self.filtered.elements += 1;
                (parent, false)
            }
        };
        attrs.clear();
        // The larger of the two goes back to the tokenizer: an element with few attributes
        // laid out after one with many (a reconstructed formatting element after the tag that
        // triggered it) would otherwise leave it a small vector to grow again.
        if attrs.capacity() > self.spare.capacity() {
            self.spare = attrs;
        }
        laid
    }

    fn push_node(&mut self, parent: u32, kind: NodeKind) -> u32 {
        self.tree.nodes.push(Node { parent, end: 0, kind });
        self.tree.nodes.len() as u32 - 1
    }
}

/// The scopes of "has an element in scope".
#[derive(Clone, Copy, PartialEq, Eq)]
enum Scope {
    Default,
    ListItem,
    Button,
    Table,
}

impl Scope {
    /// Whether `open` ends the search (html5ever's `tag_sets.rs`).
    fn bounds(self, open: &Open) -> bool {
        match open.ns {
            Ns::Html => match self {
                Scope::Table => matches!(
                    open.name,
                    local_name!("html") | local_name!("table") | local_name!("template")
                ),
                _ => {
                    matches!(
                        open.name,
                        local_name!("applet")
                            | local_name!("caption")
                            | local_name!("html")
                            | local_name!("table")
                            | local_name!("td")
                            | local_name!("th")
                            | local_name!("marquee")
                            | local_name!("object")
                            | local_name!("select")
                            | local_name!("template")
                    ) || (self == Scope::ListItem
                        && matches!(open.name, local_name!("ol") | local_name!("ul")))
                        || (self == Scope::Button && open.name == local_name!("button"))
                }
            },
            Ns::Svg => self != Scope::Table && foreign::is_integration_point(&open.name),
            // MathML never gets this far (the builder bails on `<math>`).
            Ns::MathMl | Ns::Other => false,
        }
    }
}

/// html5ever's `cursory_implied_end`.
fn is_implied_end(name: &LocalName) -> bool {
    matches!(
        *name,
        local_name!("dd")
            | local_name!("dt")
            | local_name!("li")
            | local_name!("option")
            | local_name!("optgroup")
            | local_name!("p")
            | local_name!("rb")
            | local_name!("rp")
            | local_name!("rt")
            | local_name!("rtc")
    )
}
