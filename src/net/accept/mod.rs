//! Accepting and admitting: the listeners' accept loops with their per-client caps and
//! connection slots, the per-connection handler, admission (allow list, credentials, rate) and
//! the request target.

pub mod admit;
pub mod conn;
pub mod downstream;
pub mod drain;
pub mod per_client;
pub mod rate;
pub mod target;
