//! The parse dispatcher: which tree builder builds a page. pith's own (`direct/`) first; for a
//! page it bails on, html5ever's (`build.rs`).
//!
//! A module of its own so that the dependencies run one way: the dispatcher uses both
//! builders, the direct builder uses the html5ever adapter's layout helpers, and neither
//! builder uses the dispatcher. (The dispatcher once lived in the html5ever adapter, which
//! made it and the direct builder use each other.)

use super::{build, direct, BuildFilter, Filtered, Tree};

/// Parses `html` into a tree whose flags and statistics are still empty, stopping once an
/// element lands deeper than `max_depth`: [`parse_filtered`] without a filter.
#[cfg(test)]
pub(super) fn parse(html: &str, max_depth: u32) -> Tree {
    parse_filtered(html, max_depth, None).0
}

/// Parses `html` into a tree whose flags and statistics are still empty, stopping once an
/// element lands deeper than `max_depth` and leaving out what `filter` says while the tree is
/// laid out: pith's own tree builder where it covers the page, else html5ever's
/// (`build::parse_with_html5ever`). Both build the same tree for a page the first accepts, so which
/// one ran never changes a result.
pub(super) fn parse_filtered(
    html: &str,
    max_depth: u32,
    filter: Option<&dyn BuildFilter>,
) -> (Tree, Filtered) {
    if let Some(built) = direct::parse(html, max_depth, filter) {
        return built;
    }
    build::parse_with_html5ever(html, max_depth, filter)
}
