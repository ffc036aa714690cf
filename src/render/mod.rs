//! Output forms of stage 2: a [`dom::Tree`](crate::dom::Tree), after the removers have marked
//! what goes, written out as plain text ([`text`]), as HTML ([`html`]), or as reading mode's
//! own accessible page ([`reader`]: the title as the one `<h1>`, metadata, a table of contents,
//! the content without presentational markup); the declutter page's "Removed links" section
//! ([`retained`]); and what either adds for a screen reader or a keyboard ([`access`]). Every text they write
//! is first made what a reader hears ([`heard`]: no soft hyphens, NFC).
//!
//! Renderers are pure functions from a tree to a `String`. They skip removed subtrees and walk
//! with [`Tree::traverse`](crate::dom::Tree::traverse), whose stack is on the heap, so a
//! pathologically deep page costs memory, never the thread's stack. Choosing what to remove
//! belongs to [`crate::extract`] and its callers.

/// The rules for pith's bar (`nav` named "pith", put atop a page by the proxy), in the
/// declutter and reading stylesheets: each link a target of at least 24×24 CSS px (WCAG 2.2),
/// a line drawn between two rather than a separator read aloud, the skip link first.
macro_rules! bar_style {
    () => {
        "nav[aria-label=pith] a{display:inline-block;min-width:24px;min-height:24px;padding:4px 8px}nav[aria-label=pith] a+a{border-inline-start:1px solid}"
    };
}
pub(crate) use bar_style;

pub(crate) mod access;
pub mod heard;
pub mod html;
pub mod reader;
pub mod retained;
pub mod text;
