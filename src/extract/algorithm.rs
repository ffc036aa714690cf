//! Reading mode's extractors behind one name each, as `--algorithm NAME` and the per-site
//! `algorithm` setting choose them.
//!
//! The contract every extractor follows: it receives the stage-1 page parsed into a [`Tree`]
//! and *removes* (with [`Tree::remove`]) everything it judges not to be the main content; what
//! is left unremoved is the content, in document order. Removal only marks nodes, so the
//! parsed statistics, the title and the metadata stay readable afterwards, and the same
//! renderers serve the declutter and the reading page. Extractors that pick a subtree rather
//! than remove blocks use [`keep_only`](super::keep_only).
//!
//! Each extractor lives in its own file under `src/extract/` and documents its source; none
//! does I/O. [`Algorithm::run`] dispatches with each one's published default parameters.

use std::fmt;
use std::str::FromStr;

use crate::dom::Tree;

use super::site_redundancy::SiteMemory;
use super::{
    block_analysis, ccb, cetr, density, distribution, info_optics, link_ratio, pith,
    site_redundancy,
};

/// A main-content extractor. `Pith` is the default.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Algorithm {
    /// Crunch's removers (the declutter run) taken as an extractor.
    Crunch,
    /// Text-distribution descent: into the child holding most text while the text is spread.
    Distribution,
    /// Link/text ratio removal with thresholds from the page's own averages.
    LinkRatio,
    /// DOM block analysis: anchor and linked-text ratios per block.
    BlockAnalysis,
    /// Statistical text and hypertext density.
    Density,
    /// Content extraction via tag ratios, threshold variant.
    Cetr,
    /// Content extraction via tag ratios, k-means variant.
    CetrKm,
    /// Content code blurring.
    Ccb,
    /// The hybrid of statistical usefulness and formatting likeness.
    InfoOptics,
    /// Template detection by redundancy across pages of one site.
    SiteRedundancy,
    /// pith's own combination, the default.
    #[default]
    Pith,
}

impl Algorithm {
    /// Every algorithm, in the order docs/benchmarks.md's reading-mode table lists them.
    pub const ALL: [Algorithm; 11] = [
        Algorithm::Crunch,
        Algorithm::Distribution,
        Algorithm::LinkRatio,
        Algorithm::BlockAnalysis,
        Algorithm::Density,
        Algorithm::Cetr,
        Algorithm::CetrKm,
        Algorithm::Ccb,
        Algorithm::InfoOptics,
        Algorithm::SiteRedundancy,
        Algorithm::Pith,
    ];

    /// The name used in the config, on the command line and in headers.
    pub fn name(self) -> &'static str {
        match self {
            Algorithm::Crunch => "crunch",
            Algorithm::Distribution => "distribution",
            Algorithm::LinkRatio => "link-ratio",
            Algorithm::BlockAnalysis => "block-analysis",
            Algorithm::Density => "density",
            Algorithm::Cetr => "cetr",
            Algorithm::CetrKm => "cetr-km",
            Algorithm::Ccb => "ccb",
            Algorithm::InfoOptics => "info-optics",
            Algorithm::SiteRedundancy => "site-redundancy",
            Algorithm::Pith => "pith",
        }
    }

    /// Runs the extractor over `tree` with its default parameters (see the module's contract).
    /// `Crunch` is run by the caller through [`super::declutter`], which needs the profile's
    /// settings; here it removes nothing. `pith` says how it chose ([`pith::Choice`]); the
    /// others, `None`.
    pub fn run(
        self,
        tree: &mut Tree,
        memory: Option<&SiteMemory>,
        host: Option<&str>,
    ) -> Option<pith::Choice> {
        self.run_as(tree, memory, host, None)
    }

    /// [`Algorithm::run`] on a page whose kind is known (`pith` reads each kind its way).
    pub fn run_as(
        self,
        tree: &mut Tree,
        memory: Option<&SiteMemory>,
        host: Option<&str>,
        kind: Option<crate::extract::kind::Kind>,
    ) -> Option<pith::Choice> {
        match self {
            Algorithm::Crunch => {}
            Algorithm::Distribution => distribution::extract(tree, &Default::default()),
            Algorithm::LinkRatio => link_ratio::extract(tree, &Default::default()),
            Algorithm::BlockAnalysis => block_analysis::extract(tree, &Default::default()),
            Algorithm::Density => density::extract(tree, &Default::default()),
            Algorithm::Cetr => cetr::extract(tree, &cetr::Params::threshold()),
            Algorithm::CetrKm => cetr::extract(tree, &cetr::Params::kmeans()),
            Algorithm::Ccb => ccb::extract(tree, &Default::default()),
            Algorithm::InfoOptics => info_optics::extract(tree, &Default::default()),
            Algorithm::SiteRedundancy => {
                site_redundancy::extract(tree, memory, host, &Default::default())
            }
            Algorithm::Pith => {
                let params = pith::Params {
                    kind,
                    ..Default::default()
                };
                return Some(pith::extract(tree, &params));
            }
        }
        None
    }
}

impl fmt::Display for Algorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A name that is not an algorithm; the message lists the valid ones.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown algorithm {name:?}; known: {known}")]
pub struct UnknownAlgorithm {
    /// The name given.
    pub name: String,
    /// The valid names, comma-separated.
    pub known: String,
}

impl FromStr for Algorithm {
    type Err = UnknownAlgorithm;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        Algorithm::ALL
            .into_iter()
            .find(|a| a.name() == name)
            .ok_or_else(|| UnknownAlgorithm {
                name: name.to_string(),
                known: Algorithm::ALL.map(Algorithm::name).join(", "),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for a in Algorithm::ALL {
            assert_eq!(a.name().parse::<Algorithm>(), Ok(a));
        }
        let err = "readability".parse::<Algorithm>().unwrap_err();
        assert!(err.to_string().contains("pith"), "{err}");
    }
}
