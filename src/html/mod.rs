//! Stage 1 of the pipeline: from a decoded HTML body to a filtered UTF-8 page.
//!
//! This module owns, one file each:
//!
//! - [`charset`]: which encoding a page is in (BOM, header, `<meta>` prescan, sniffing) and its
//!   transcoding to UTF-8;
//! - [`rules`]: the rule-file language of `filters/` and its compiled form, [`RuleSet`];
//! - [`stage1`]: the lol_html rewrite that applies a rule set, whole ([`rewrite`]) or streaming
//!   ([`Rewriter`]), and never truncates a page;
//! - [`adapt`]: the last pass over a served page for its listener: links through the URL
//!   gateway or down to `http://`, the charset ([`translit`]), HTML 3.2 for old browsers.
//!
//! It leaves content-codings to [`crate::body`], everything that needs a tree (removers,
//! extractors) to [`crate::dom`] and [`crate::extract`], and knows nothing of HTTP or tokio.

pub mod adapt;
pub mod charset;
pub mod rules;
pub mod stage1;
pub mod translit;

pub use charset::{CharsetSource, Detected};
pub use rules::{LineError, RuleError, RuleSet};
pub use stage1::{rewrite, RewriteError, Rewriter, Stage1Stats};
