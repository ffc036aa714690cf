//! Host lists of the interception policy (`intercept.never`, `intercept.always`): which
//! CONNECT targets a rule names.
//!
//! A pattern is a domain name, which covers the domain and every name below it
//! (`bank.example` matches `bank.example` and `www.bank.example`, not `mybank.example`), or
//! an IP address, which matches that address only. A leading `*.` or `.` is accepted and
//! means the same as the bare domain, since that is how people write such lists. Names are
//! normalised and matched as every host list in pith is ([`crate::host`]).

use std::net::IpAddr;

use crate::host;

/// A compiled list of host patterns.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HostList {
    /// Domain names in [`host::normalise`]'s form.
    domains: Vec<String>,
    /// Exact addresses.
    addresses: Vec<IpAddr>,
}

/// A pattern that cannot name a host.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{pattern:?} is not a host name or IP address: {why}")]
pub struct HostPatternError {
    /// The pattern as written.
    pub pattern: String,
    /// What is wrong with it.
    pub why: &'static str,
}

impl HostList {
    /// Compiles `patterns`; the first bad one is the error.
    pub fn new<S: AsRef<str>>(patterns: &[S]) -> Result<HostList, HostPatternError> {
        let mut list = HostList::default();
        for pattern in patterns {
            list.add(pattern.as_ref())?;
        }
        Ok(list)
    }

    fn add(&mut self, pattern: &str) -> Result<(), HostPatternError> {
        let bad = |why| HostPatternError { pattern: pattern.to_string(), why };
        let trimmed = pattern.trim().trim_matches(|c| c == '[' || c == ']');
        if let Ok(ip) = trimmed.parse::<IpAddr>() {
            self.addresses.push(ip);
            return Ok(());
        }
        let domain = trimmed.strip_prefix("*.").or_else(|| trimmed.strip_prefix('.')).unwrap_or(trimmed);
        let domain = host::normalise(domain).into_owned();
        if domain.is_empty() {
            return Err(bad("it is empty"));
        }
        if domain.contains(['*', '/', ':', ' ']) {
            return Err(bad("write a domain (\"bank.example\" also covers its subdomains) without scheme, port, path or inner wildcards"));
        }
        if domain.split('.').any(str::is_empty) {
            return Err(bad("it has an empty label"));
        }
        self.domains.push(domain);
        Ok(())
    }

    /// True when `host` (a name or an address, as in a CONNECT target) is on the list.
    pub fn matches(&self, host: &str) -> bool {
        let host = host.trim_matches(|c| c == '[' || c == ']');
        if let Ok(ip) = host.parse::<IpAddr>() {
            return self.addresses.contains(&ip);
        }
        host::find_by_suffix(host, |suffix| self.domains.iter().find(|d| *d == suffix)).is_some()
    }

    /// True when the list names nothing.
    pub fn is_empty(&self) -> bool {
        self.domains.is_empty() && self.addresses.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    macro_rules! matches {
        ($name:ident, $patterns:expr, yes = [$($yes:expr),*], no = [$($no:expr),*]) => {
            #[test]
            fn $name() {
                let list = HostList::new(&$patterns).expect("valid patterns");
                $(assert!(list.matches($yes), "{} should match {:?}", $yes, $patterns);)*
                $(assert!(!list.matches($no), "{} should not match {:?}", $no, $patterns);)*
            }
        };
    }

    matches!(domain_and_subdomains, ["bank.example"], yes = ["bank.example", "www.bank.example", "BANK.example.", "a.b.bank.example"], no = ["mybank.example", "bank.example.org", "example"]);
    matches!(wildcard_written_forms, ["*.health.test", ".pinned.test"], yes = ["health.test", "x.health.test", "pinned.test"], no = ["unhealth.test"]);
    matches!(addresses_exactly, ["10.0.0.1", "[::1]"], yes = ["10.0.0.1", "::1", "[::1]"], no = ["10.0.0.2", "10.0.0.1.example"]);
    matches!(empty_list, [] as [&str; 0], yes = [], no = ["anything.test"]);

    macro_rules! rejected {
        ($name:ident, $pattern:expr) => {
            #[test]
            fn $name() {
                assert!(HostList::new(&[$pattern]).is_err(), "{:?} should be rejected", $pattern);
            }
        };
    }

    rejected!(empty_pattern, "");
    rejected!(url_not_host, "https://bank.example/");
    rejected!(host_with_port, "bank.example:443");
    rejected!(inner_wildcard, "www.*.example");
    rejected!(empty_label, "bank..example");
}
