//! PLACEHOLDER: to be written (see algorithm.rs for the contract).

use crate::dom::Tree;

/// Parameters, defaulting to the published values.
#[derive(Debug, Clone, Default)]
pub struct Params {}

/// What has been learnt of each site's template, bounded in memory; shared between requests.
#[derive(Debug, Default)]
pub struct SiteMemory {}

impl SiteMemory {
    /// Records the blocks of one page of `host`.
    pub fn learn(&self, _host: &str, _tree: &Tree) {}
}

/// Removes what is not main content (contract in [`super::algorithm`]).
pub fn extract(_tree: &mut Tree, _memory: Option<&SiteMemory>, _host: Option<&str>, _params: &Params) {}
