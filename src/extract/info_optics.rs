//! PLACEHOLDER: to be written (see algorithm.rs for the contract).

use crate::dom::Tree;

/// Parameters, defaulting to the published values.
#[derive(Debug, Clone, Default)]
pub struct Params {}

/// Removes what is not main content (contract in [`super::algorithm`]).
pub fn extract(_tree: &mut Tree, _params: &Params) {}
