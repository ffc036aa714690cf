//! What a tree builder asks while it builds: [`BuildFilter`], the stage-1 rules applied as a
//! tree is laid out, and the types it speaks in.
//!
//! A module of its own, below both tree builders (`direct/` and `build.rs`) and the parse
//! dispatcher (`parse.rs`), so that each of them uses these types without using another.

use markup5ever::LocalName;

/// What [`Tree::parse_filtered`](super::Tree::parse_filtered) leaves out: stage-1 rules applied while the tree is built.
pub trait BuildFilter {
    /// Called once per element, with its local name and attributes as parsed (values decoded),
    /// before anything inside it: what becomes of the element. It may change `attrs` (strip
    /// some, rewrite a value) when it keeps the element.
    fn element(&self, name: &LocalName, attrs: &mut Vec<TagAttr<'_>>) -> Verdict;

    /// Whether comments stay in the tree.
    fn keeps_comments(&self) -> bool {
        true
    }
}

/// An attribute of an element being built, as a [`BuildFilter`] sees it: the name as the tree
/// keeps it (lower-cased and interned, a foreign attribute with its prefix: `xlink:href`), and
/// the value with its character references decoded.
///
/// Why not html5ever's `Attribute`: the tokenizer hands it a qualified name and a tendril per
/// attribute, and most values are plain slices of the page; this borrows them from the page
/// and compares names as atoms, so an attribute on its way to the tree costs no allocation.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct TagAttr<'a> {
    /// The name as the tree keeps it.
    pub name: LocalName,
    /// The decoded value.
    pub value: std::borrow::Cow<'a, str>,
}

/// What a [`BuildFilter`] makes of an element.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Verdict {
    /// The element stays, with `stripped` of its attributes removed.
    Keep {
        /// How many attributes the filter removed.
        stripped: usize,
    },
    /// The element goes with everything inside it.
    Drop,
    /// The element goes and its content takes its place.
    Unwrap,
}

/// What a [`BuildFilter`] left out of one tree.
#[derive(Clone, Copy, Default, PartialEq, Eq, Debug)]
pub struct Filtered {
    /// Elements left out or unwrapped (an element inside one left out is not counted).
    pub elements: u64,
    /// Attributes stripped from elements that were kept.
    pub attributes: u64,
}
