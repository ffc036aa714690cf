//! The exchange: the cache step, the response classified and passed through or rewritten
//! within the rewrite memory budget, image responses, and the body types served.

pub mod bodies;
pub mod budget;
pub mod cached;
pub mod images;
pub mod respond;
pub mod tee;
