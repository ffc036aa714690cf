//! pith's integration tests: one binary (it links once), one module per concern. Every test
//! starts real loopback servers on port 0: an origin, pith itself, and a real client.

mod common;

mod access;
mod charset;
mod codings;
mod connect;
mod errors;
mod extract;
mod fixtures;
mod profiles;
mod proxy;
mod shutdown;
