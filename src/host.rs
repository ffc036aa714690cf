//! Host names as pith compares them: one normal form, and one suffix match, for every list
//! of hosts a rule names (the interception policy's `never` and `always` lists in
//! [`crate::tls`], the site rules of reading mode in [`crate::extract::sites`]).
//!
//! The two lists once matched each with its own normalisation (one dropped a single trailing
//! dot and compared case-blind, the other dropped every trailing dot and lower-cased), so one
//! name could be on a list for one of them and not the other. Both now call [`find_by_suffix`].
//!
//! Names are compared as they travel in requests: ASCII, international names in their `xn--`
//! form. Neither list maps Unicode names to that form (IDNA), so neither does this module: a
//! rule written in Unicode matches nothing, as before.

use std::borrow::Cow;

/// `host` in the form lists hold names in: surrounding whitespace and trailing dots dropped
/// (`example.com.` is the fully qualified spelling of `example.com`), ASCII lower-cased.
/// Borrowed when it already is.
pub fn normalise(host: &str) -> Cow<'_, str> {
    let host = host.trim().trim_end_matches('.');
    if host.bytes().any(|b| b.is_ascii_uppercase()) {
        Cow::Owned(host.to_ascii_lowercase())
    } else {
        Cow::Borrowed(host)
    }
}

/// Looks `host` up by its suffixes on label boundaries, longest first (`a.b.example`,
/// `b.example`, `example`), after [`normalise`]: the first thing `find` finds, or `None`. A
/// list that names `b.example` thus covers it and every name below it, and the most specific
/// name on a list wins.
pub fn find_by_suffix<T>(host: &str, mut find: impl FnMut(&str) -> Option<T>) -> Option<T> {
    let host = normalise(host);
    let mut suffix: &str = &host;
    loop {
        if let Some(found) = find(suffix) {
            return Some(found);
        }
        suffix = suffix.split_once('.')?.1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The names `find_by_suffix` finds `host` under, in a list of `names`.
    fn found<'a>(names: &[&'a str], host: &str) -> Option<&'a str> {
        find_by_suffix(host, |suffix| names.iter().find(|n| **n == suffix).copied())
    }

    macro_rules! suffix {
        ($name:ident, $names:expr, $host:expr, $expect:expr) => {
            #[test]
            fn $name() {
                assert_eq!(found(&$names, $host), $expect, "{:?} in {:?}", $host, $names);
            }
        };
    }

    suffix!(the_name_itself, ["bank.example"], "bank.example", Some("bank.example"));
    suffix!(a_name_below, ["bank.example"], "www.bank.example", Some("bank.example"));
    suffix!(deeper_still, ["bank.example"], "a.b.bank.example", Some("bank.example"));
    suffix!(only_on_a_label_boundary, ["bank.example"], "mybank.example", None);
    suffix!(not_a_name_above, ["www.bank.example"], "bank.example", None);
    suffix!(not_a_longer_name, ["bank.example"], "bank.example.org", None);
    suffix!(the_longest_wins, ["example", "bank.example"], "www.bank.example", Some("bank.example"));
    suffix!(case_blind, ["bank.example"], "WWW.Bank.Example", Some("bank.example"));
    suffix!(trailing_dots_dropped, ["bank.example"], "www.bank.example..", Some("bank.example"));
    suffix!(whitespace_dropped, ["bank.example"], " bank.example ", Some("bank.example"));
    suffix!(empty_host, ["bank.example"], "", None);

    #[test]
    fn normal_form_borrows_when_it_can() {
        assert!(matches!(normalise("example.com"), Cow::Borrowed("example.com")));
        assert!(matches!(normalise("example.com."), Cow::Borrowed("example.com")));
        assert_eq!(normalise("Example.COM."), "example.com");
    }
}
