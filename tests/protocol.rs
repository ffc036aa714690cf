//! HTTP protocol details a proxy must get right between a client and an origin.
