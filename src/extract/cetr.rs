//! PLACEHOLDER: to be written (see algorithm.rs for the contract).

use crate::dom::Tree;

/// Parameters, defaulting to the published values.
#[derive(Debug, Clone, Default)]
pub struct Params {}

impl Params {
    /// The threshold (TM) variant.
    pub fn threshold() -> Params {
        Params {}
    }
    /// The k-means (KM) variant.
    pub fn kmeans() -> Params {
        Params {}
    }
}

/// Removes what is not main content (contract in [`super::algorithm`]).
pub fn extract(_tree: &mut Tree, _params: &Params) {}
