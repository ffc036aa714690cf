//! Upstream: the pooled clients (verified TLS), destination rules on names and addresses, a
//! request sent again on a closed pooled connection, and HTTPS fetched for plain-HTTP clients.

pub mod forward;
pub mod pooled;
pub mod resolve;
pub mod upgrade;
