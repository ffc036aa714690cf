//! pith: a forward HTTP(S) proxy that serves the pith of every page.
//!
//! # The pipeline
//!
//! A client points its browser (or `curl -x`) at a listener. Each connection gets its own task
//! ([`net`]). A request is admitted (allow list, proxy authentication), answered by the proxy
//! itself when it addresses pith, or forwarded upstream through a pooled client that always
//! verifies TLS. The response is classified: anything that is not HTML streams through untouched;
//! HTML is decoded ([`body`]), transcoded to UTF-8 and filtered by the rules of the client's
//! profile ([`html`], stage 1), optionally rebuilt as a tree ([`dom`]) for the higher-level
//! removers and extractors ([`extract`], stage 2), rendered ([`render`]) and re-encoded for the
//! client. Stage 1 streams through lol_html for a profile that serves its output; a profile that
//! builds a tree anyway has the same rules applied as the tree is built
//! ([`html::rules::TreeRules`]), which saves a whole pass over the page.
//!
//! # Layout
//!
//! | module | owns |
//! |---|---|
//! | [`ads`] | the ad and tracker matcher over EasyList-format lists (URLs and hiding rules; no HTML) |
//! | [`addr`] | IP address classes: public or special-purpose (IANA registries), for the deny rules and the open-proxy check |
//! | [`host`] | host names: one normal form and one suffix match for every host list (interception policy, site rules) |
//! | [`cache`] | every storable response kept in memory (rewritten pages as rewritten, others as the origin sent them; moka, bounded in bytes), fresh by RFC 9111 |
//! | [`config`] | `proxy.toml`: raw serde mirror → validated [`config::Config`]; errors name file:line and key |
//! | [`tls`] | HTTPS interception: the local CA, per-host leaf certificates (moka), host policy lists |
//! | [`state`] | the state file: each client's profile choice and per-site switches (redb), versioned and checked at start-up |
//! | [`net`] | listeners, connections, admission, forwarding, CONNECT tunnels, the proxy's own pages, the control page, the URL gateway, HTTPS for plain-HTTP clients, the ICAP service |
//! | [`body`] | content-codings: decode with a cap, encode for the client; bytes only, no HTTP types |
//! | [`html`] | charset detection and transcoding, rule files, stage 1: the streaming rewriter, and the same rules as a filter of tree building; the last pass over a served page for its listener (links, charset, HTML 3.2) |
//! | [`dom`] | the compact arena tree with per-node statistics, parsed by pith's own tokenizer and tree builder (html5ever's tree builder for the constructs the latter leaves out) |
//! | [`extract`] | removers and extractors over [`dom`] trees; no I/O but reading the site rule files |
//! | [`render`] | output forms: filtered HTML, plain text, the reading page |
//! | [`images`] | what a page's images become (lazy addresses made real, one small candidate, placeholders) and image responses transcoded smaller within bounds |
//! | [`pipeline`] | one whole-document transform shared by the proxy and `pith extract` |
//! | [`profile`] | what a client gets from a page (rules, output form, stage 2, reading mode, the listener's last pass): the vocabulary `config`, `cache`, `pipeline` and `net` share, below all of them |
//!
//! Dependencies point downstream only: `net` uses everything, `body` knows nothing of HTTP or
//! HTML, `html` knows nothing of tokio, `extract` knows nothing of lol_html or I/O.

#![forbid(unsafe_code)]
#![warn(missing_docs)]
#![deny(rustdoc::broken_intra_doc_links)]

pub mod addr;
pub mod ads;
pub mod body;
pub mod cache;
pub mod config;
pub mod dom;
pub mod extract;
pub mod host;
pub mod html;
pub mod icap;
pub mod images;
pub mod net;
pub mod pipeline;
pub mod profile;
pub mod render;
pub mod state;
pub mod tls;
#[cfg(test)]
pub(crate) mod testdata;
