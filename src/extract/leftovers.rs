//! The leftover remover: what a page shows over or around its content that a reader did not
//! come for and that the other removers leave, because it is neither a landmark, nor a list of
//! links, nor a line of one known phrase: cookie and consent notices, session-timeout dialogs,
//! newsletter prompts, tooltips.
//!
//! By structure, whatever their words:
//!
//! - a modal: `aria-modal="true"` or a `<dialog>` element;
//! - `role=dialog`, `role=alertdialog` and `role=tooltip` (the landmark remover takes dialogs
//!   too, but not when the preset leaves landmarks on);
//! - a fixed overlay: an element the page pins to the screen (`position: fixed` in its `style`)
//!   with little text ([`SHORT_CHARS`]).
//!
//! By words: a short block (the outermost element of at most [`SHORT_CHARS`] visible
//! characters) whose text holds a phrase of `filters/leftovers.txt` ("we use cookies", "Sitzung
//! läuft ab", "subscribe to our newsletter", in many languages); never the bare word "cookie",
//! which recipes use.
//!
//! Never removed: the page's main content or anything holding it, the title heading, what a
//! site rule keeps, and a block of the main content that holds prose unless the phrase is in
//! its opening words ([`OPENING_CHARS`]; an article about cookie law quotes its banners). One walk over the body, skipping each removed subtree; phrases are
//! compared once per short block.

use std::sync::LazyLock;

use super::Keep;
use crate::dom::{NodeId, Tree};

/// The longest text (visible characters) a notice or prompt has; a longer block is content.
pub const SHORT_CHARS: u32 = 600;

/// How far into a paragraph of the main content's prose (folded characters) a phrase must
/// begin for the paragraph to be a notice: "In order to give you the best experience, we use
/// cookies …" is one; an article quoting a banner further on is not.
const OPENING_CHARS: usize = 80;

/// The phrases of `filters/leftovers.txt`, folded, with one automaton over them all: a short
/// block is read once, however many phrases the list holds.
#[derive(Debug, Default)]
pub struct Phrases {
    phrases: Vec<String>,
    /// Over `phrases`, in their order; `None` for an empty list.
    searcher: Option<aho_corasick::AhoCorasick>,
}

static PHRASES: LazyLock<Phrases> = LazyLock::new(|| Phrases::parse(BUILTIN).unwrap_or_default());

const BUILTIN: &str = include_str!("../../filters/leftovers.txt");

impl Phrases {
    /// The built-in list, parsed once.
    pub fn builtin() -> &'static Phrases {
        &PHRASES
    }

    /// Parses the format `filters/leftovers.txt` describes: `kind lang: phrase | phrase`.
    /// A phrase must be written folded.
    pub fn parse(text: &str) -> Result<Phrases, String> {
        let mut phrases = Vec::new();
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let Some((head, list)) = line.split_once(':') else {
                return Err(format!("line {}: no `:` after the kind and language", n + 1));
            };
            if !matches!(head.split_whitespace().next(), Some("consent" | "session" | "newsletter")) {
                return Err(format!("line {}: unknown kind {head:?}", n + 1));
            }
            for p in list.split('|').map(str::trim).filter(|p| !p.is_empty()) {
                if fold(p) != p {
                    return Err(format!("line {}: {p:?} is not written folded", n + 1));
                }
                if p == "cookie" || p == "cookies" {
                    return Err(format!("line {}: the bare word {p:?} is no leftover", n + 1));
                }
                phrases.push(p.to_string());
            }
        }
        let searcher = match phrases.is_empty() {
            true => None,
            false => Some(aho_corasick::AhoCorasick::new(&phrases).map_err(|e| format!("the phrases do not build a searcher: {e}"))?),
        };
        Ok(Phrases { phrases, searcher })
    }

    /// The first phrase `folded` (text folded by [`fold`]) holds, whole words at its ends
    /// (for scripts written without spaces, anywhere).
    pub fn found_in(&self, folded: &str) -> Option<&str> {
        let bytes = folded.as_bytes();
        let whole = |start: usize, end: usize| (start == 0 || bytes[start - 1] == b' ') && (end == bytes.len() || bytes[end] == b' ');
        // Overlapping, so that a phrase matched inside a longer word does not hide one that
        // starts a letter later; the first phrase of the list wins, as the file orders them.
        self.searcher
            .as_ref()?
            .find_overlapping_iter(folded)
            .filter(|m| {
                let phrase = &self.phrases[m.pattern().as_usize()];
                phrase.chars().any(unspaced) || whole(m.start(), m.end())
            })
            .map(|m| m.pattern().as_usize())
            .min()
            .map(|i| self.phrases[i].as_str())
    }
}

/// Letters of scripts written without spaces between words.
fn unspaced(c: char) -> bool {
    matches!(c, '\u{3040}'..='\u{30ff}' | '\u{3400}'..='\u{4dbf}' | '\u{4e00}'..='\u{9fff}' | '\u{ac00}'..='\u{d7af}')
}

/// Lower case, every run of what is not a letter or digit one space, trimmed.
pub fn fold(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut space = false;
    for c in text.chars() {
        if c.is_alphanumeric() {
            if space && !out.is_empty() {
                out.push(' ');
            }
            space = false;
            out.extend(c.to_lowercase());
        } else {
            space = true;
        }
    }
    out
}

/// What [`remove`] protects: the main content, the title heading and the page's prose.
pub struct Protect<'a> {
    /// The main content ([`super::prose::main_content`]).
    pub main: NodeId,
    /// The title heading, when the page has one.
    pub title: Option<NodeId>,
    /// Prose characters per node ([`super::prose::Paragraphs::prose`]).
    pub prose: &'a [u32],
}

/// Removes the leftovers under `body`; returns those removed, outermost only, in document order.
pub fn remove(tree: &mut Tree, body: NodeId, protect: &Protect<'_>, keep: &Keep, phrases: &Phrases) -> Vec<NodeId> {
    let found = find(tree, body, protect, keep, phrases);
    for &id in &found {
        tree.remove(id);
    }
    found
}

fn find(tree: &Tree, body: NodeId, protect: &Protect<'_>, keep: &Keep, phrases: &Phrases) -> Vec<NodeId> {
    let holds = |outer: NodeId, inner: NodeId| tree.holds(outer, inner);
    let in_main = |id: NodeId| holds(protect.main, id);
    let mut found = Vec::new();
    // The short block whose words were last compared: its parts are not compared again.
    let mut checked: Option<NodeId> = None;
    let mut walk = tree.walk(body);
    while let Some(id) = walk.next() {
        if id == body || tree.element(id).is_none() {
            continue;
        }
        let protected = keep.contains(id) || holds(id, protect.main) || protect.title.is_some_and(|t| holds(id, t));
        if protected {
            continue;
        }
        if by_structure(tree, id) {
            found.push(id);
            walk.skip_children();
            continue;
        }
        if tree.stats(id).text_chars > SHORT_CHARS || checked.is_some_and(|c| holds(c, id)) {
            continue;
        }
        checked = Some(id);
        // The outermost short block: judged by its words, then its parts are not looked at
        // (but for the structure: a dialog inside it still goes).
        let prose = in_main(id) && protect.prose.get(id.index()).copied().unwrap_or(0) > 0;
        let folded = fold(&kept_text(tree, id));
        // Prose of the main content goes only when it opens on the phrase (a notice's first
        // words), not when it quotes one further on.
        let found_in = if prose { folded.char_indices().nth(OPENING_CHARS).map_or(folded.as_str(), |(i, _)| &folded[..i]) } else { &folded };
        if !found_in.is_empty() && phrases.found_in(found_in).is_some() {
            found.push(id);
            walk.skip_children();
        }
    }
    found
}

/// A modal, a dialog, a tooltip, or a short fixed overlay.
fn by_structure(tree: &Tree, id: NodeId) -> bool {
    let attr_is = |name: &str, values: &[&str]| tree.attr(id, name).is_some_and(|v| values.iter().any(|x| v.trim().eq_ignore_ascii_case(x)));
    if tree.tag(id) == Some("dialog") || attr_is("aria-modal", &["true"]) || attr_is("role", &["dialog", "alertdialog", "tooltip"]) {
        return true;
    }
    tree.attr(id, "style").is_some_and(|s| {
        let s: String = s.chars().filter(|c| !c.is_whitespace()).collect::<String>().to_ascii_lowercase();
        s.contains("position:fixed")
    }) && super::kept_stats_of(tree, id).text_chars <= SHORT_CHARS
}

/// The visible text of `id`'s kept subtree, its text nodes joined by spaces.
fn kept_text(tree: &Tree, id: NodeId) -> String {
    let mut out = String::new();
    for d in tree.walk(id) {
        if let Some(text) = tree.text(d).filter(|_| tree.is_shown(d)) {
            out.push_str(text);
            out.push(' ');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const PROSE: &str = "This is a paragraph of article text that runs long enough to be prose, with two full \
        sentences. It says something a reader came to read, and the cookie jar is empty.";

    fn run(html: &str) -> String {
        let mut tree = Tree::parse(html);
        let body = tree.body().expect("a body");
        let paragraphs = super::super::prose::paragraphs(&tree);
        let main = super::super::prose::main_content(&tree, body, &paragraphs);
        let title = tree.descendants(body).find(|&n| tree.tag(n) == Some("h1"));
        let protect = Protect { main, title, prose: &paragraphs.prose };
        remove(&mut tree, body, &protect, &Keep::none(), Phrases::builtin());
        crate::render::text::render(&tree)
    }

    #[test]
    fn the_built_in_list_parses_and_never_holds_the_bare_word() {
        let phrases = Phrases::parse(BUILTIN).expect("the built-in file parses");
        assert!(phrases.phrases.len() > 100);
        assert!(Phrases::parse("consent en: cookie").is_err());
        assert!(Phrases::parse("consent en: We use cookies").is_err(), "written folded");
        assert!(Phrases::parse("other en: x").is_err());
        assert_eq!(phrases.found_in(&fold("Cookies: we use cookies, to measure.")), Some("we use cookies"));
        assert_eq!(phrases.found_in(&fold("Bake the cookies for ten minutes.")), None);
        assert_eq!(phrases.found_in(&fold("当サイトはクッキーを使用しています")), Some("クッキーを使用"));
    }

    #[test]
    fn notices_and_prompts_go_by_their_words_in_many_languages() {
        let html = format!(
            "<body><div><p>Wir verwenden Cookies, um Ihnen das beste Erlebnis zu bieten.</p><button>OK</button></div>\
             <article><h1>Title</h1><p>{PROSE}</p><p>{PROSE}</p>\
             <div><h3>Newsletter</h3><p>Subscribe to our newsletter for more.</p></div></article>\
             <div>Sitzung läuft ab … Jetzt verlängern 30 Sekunden</div></body>"
        );
        assert_eq!(run(&html), format!("Title\n{PROSE}\n{PROSE}\n"));
    }

    #[test]
    fn dialogs_modals_tooltips_and_fixed_overlays_go_by_structure() {
        let html = format!(
            "<body><div aria-modal=true><p>Anything</p></div><dialog open>Hi</dialog><span role=tooltip>Checked</span>\
             <div style='position: FIXED; bottom:0'>Pinned box</div>\
             <article><h1>Title</h1><p>{PROSE}</p><p>{PROSE}</p></article></body>"
        );
        assert_eq!(run(&html), format!("Title\n{PROSE}\n{PROSE}\n"));
    }

    #[test]
    fn the_main_content_its_prose_and_the_title_stay() {
        // An article quoting a banner keeps its paragraph; a dialog wrapping the whole page stays.
        let quoted = format!("{PROSE} The banner said: we use cookies to improve your experience.");
        let notice = format!("In order to give you the best experience, we use cookies and similar technologies. {PROSE}");
        let html = format!("<body><article><h1>Title</h1><p>{PROSE}</p><p>{PROSE}</p></article><div><h2>Privacy</h2><p>{notice}</p><p>{PROSE}</p></div></body>");
        assert_eq!(run(&html), format!("Title\n{PROSE}\n{PROSE}\nPrivacy\n{PROSE}\n"), "a notice in prose goes by its opening words");
        let html = format!("<body><article><h1>Title</h1><p>{quoted}</p><p>{PROSE}</p></article></body>");
        assert_eq!(run(&html), format!("Title\n{quoted}\n{PROSE}\n"));
        let html = format!("<body><div role=dialog><article><h1>Title</h1><p>{PROSE}</p><p>{PROSE}</p></article></div></body>");
        assert_eq!(run(&html), format!("Title\n{PROSE}\n{PROSE}\n"));
    }
}
