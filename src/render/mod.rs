//! Output forms of stage 2: a [`dom::Tree`](crate::dom::Tree), after the removers have marked
//! what goes, written out as plain text ([`text`]) or as HTML ([`html`]).
//!
//! Renderers are pure functions from a tree to a `String`. They skip removed subtrees and walk
//! with [`Tree::traverse`](crate::dom::Tree::traverse), whose stack is on the heap, so a
//! pathologically deep page costs memory, never the thread's stack. Choosing what to remove,
//! and the reading page's template, belong to [`crate::extract`] and its callers.

pub mod html;
pub mod reader;
pub mod text;
