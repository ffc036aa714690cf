//! pith's integration tests: one binary (it links once), one module per concern. The proxy's
//! tests start real loopback servers on port 0: an origin, pith itself, and a real client; the
//! others run the library or the binary offline (`extract`, `fixtures`, `html5lib`, `selectors`).

mod common;

mod access;
mod budget;
mod cache;
mod cache_all;
mod cache_disk;
mod cache_rfc;
mod charset;
mod codings;
mod config;
mod connect;
mod control;
mod deny;
mod errors;
mod extract;
mod faults;
mod gateway;
mod fixtures;
mod icap;
mod html5lib;
mod images;
mod intercept;
mod layout;
mod lifetimes;
mod limits;
mod profiles;
mod protocol;
mod proxy;
mod reader;
mod reload;
mod selectors;
mod shutdown;
mod userinfo;
