//! The header fields the freshness policy reads, made exact before it reads them.
//!
//! `http-cache-semantics` decides freshness, but it parses some fields more leniently than
//! RFC 9111 allows, and in each case the lenient reading keeps a response fresh that is not:
//! it matches directive names case-sensitively (`No-CaChE` is missed), reads `Age: 7200, 0`
//! as no Age at all, and takes dates with RFC 2822's folding whitespace
//! (`Thu, 18  Aug  2050 …`), which HTTP does not allow. So the policy is shown a copy of the
//! fields with each of them reduced to the one value RFC 9111 says a cache uses ([`for_policy`]).
//! The headers sent to clients are never changed here.

use std::time::{Duration, SystemTime};

use http::header::{self, HeaderMap, HeaderValue};

/// The largest delta-seconds a cache must represent; larger values count as this
/// (RFC 9111 §1.2.2).
const DELTA_SECONDS_MAX: u64 = 2_147_483_648;

/// A copy of `headers` as the freshness policy should read them (RFC 9111):
/// - Cache-Control and Pragma directive names in lowercase: directives are case-insensitive
///   (§5.2);
/// - `Age` reduced to its first member, and dropped when that is not a non-negative integer
///   (§5.1: a cache uses the first member of a list and ignores an invalid value);
/// - `Expires` that is not a valid HTTP-date replaced by a date in the past: "already
///   expired" (§5.3);
/// - `Date` and `Last-Modified` that are not valid HTTP-dates dropped, so that neither an
///   apparent age nor a heuristic lifetime is made of them (§4.2.2, §4.2.3);
/// - valid dates in the two obsolete formats (RFC 850, asctime) rewritten as IMF-fixdate,
///   since a recipient must accept all three (RFC 9110 §5.6.7);
/// - `max-age` and `s-maxage` with whitespace before their `=` dropped: the directive's syntax
///   has none there (§5.2), so `max-age =3600` grants no freshness (§4.2.1: a cache is
///   encouraged to treat an invalid value as stale).
pub fn for_policy(headers: &HeaderMap) -> HeaderMap {
    let mut out = detached(headers);
    lowercase_directives(&mut out);
    drop_spaced_lifetimes(&mut out);
    if out.contains_key(header::AGE) {
        match first_age(headers) {
            Some(age) => {
                out.insert(header::AGE, HeaderValue::from(age));
            }
            None => {
                out.remove(header::AGE);
            }
        }
    }
    if let Some(expires) = headers.get(header::EXPIRES) {
        let date = http_date(expires).unwrap_or(SystemTime::UNIX_EPOCH);
        out.insert(header::EXPIRES, imf_fixdate(date));
    }
    for name in [header::DATE, header::LAST_MODIFIED] {
        match headers.get(&name).map(http_date) {
            Some(Some(date)) => {
                out.insert(name, imf_fixdate(date));
            }
            Some(None) => {
                out.remove(name);
            }
            None => {}
        }
    }
    out
}

/// Puts the response's apparent age (RFC 9111 §4.2.3: the time from its `Date` to `now`, when
/// it was received) in its `Age` where that is larger than the `Age` sent: the policy reads
/// `Age` alone, and the RFC's initial age is the larger of the two. A response dated two hours
/// ago with `max-age=3600` is stale on arrival. `Date` counts whole seconds, so its first
/// second is not counted: a response dated 12:00:00 and received at 12:00:01.002 may be 3 ms
/// old. A `Date` ahead of `now` gives no apparent age. Called on the fields [`for_policy`]
/// made (a valid `Date` and `Age`).
pub fn with_apparent_age(headers: &mut HeaderMap, now: SystemTime) {
    let Some(date) = headers.get(header::DATE).and_then(http_date) else { return };
    let Ok(apparent) = now.duration_since(date) else { return };
    let apparent = apparent.as_secs().saturating_sub(1).min(DELTA_SECONDS_MAX);
    if apparent > first_age(headers).unwrap_or(0) {
        headers.insert(header::AGE, HeaderValue::from(apparent));
    }
}

/// Drops the `max-age` and `s-maxage` directives written with whitespace before their `=`
/// ([`for_policy`]); every other directive is kept as it is. Names are lowercase by now.
fn drop_spaced_lifetimes(headers: &mut HeaderMap) {
    let spaced = |member: &str| {
        member.split_once('=').is_some_and(|(name, _)| {
            let trimmed = name.trim_start();
            trimmed.len() != trimmed.trim_end().len() && matches!(trimmed.trim_end(), "max-age" | "s-maxage")
        })
    };
    let values: Vec<HeaderValue> = headers.get_all(header::CACHE_CONTROL).iter().cloned().collect();
    if !values.iter().filter_map(|v| v.to_str().ok()).any(|v| v.split(',').any(spaced)) {
        return;
    }
    headers.remove(header::CACHE_CONTROL);
    for value in values {
        let kept = match value.to_str() {
            Ok(text) => HeaderValue::from_str(&text.split(',').filter(|m| !spaced(m)).collect::<Vec<_>>().join(",")).unwrap_or(value),
            Err(_) => value,
        };
        headers.append(header::CACHE_CONTROL, kept);
    }
}

/// A copy of `headers` whose values share no allocation with anything else, for what the
/// cache keeps. The values hyper parses are slices of the connection's read buffer (up to a few
/// hundred KiB), and a cloned value shares it: a kept entry holding one would keep the whole
/// buffer alive, which made a full cache of 8 MiB cost 60 MiB more than an empty one.
///
/// The values are copied into one buffer that they all slice, not into one allocation each:
/// dozens of small allocations per entry, long-lived among a rewrite's short-lived ones,
/// would pin the allocator's pages.
pub fn detached(headers: &HeaderMap) -> HeaderMap {
    let mut all = bytes::BytesMut::with_capacity(headers.values().map(HeaderValue::len).sum());
    for value in headers.values() {
        all.extend_from_slice(value.as_bytes());
    }
    let all = all.freeze();
    let mut out = HeaderMap::with_capacity(headers.len());
    let mut at = 0;
    for (name, value) in headers {
        let slice = all.slice(at..at + value.len());
        at += value.len();
        let mut copy = HeaderValue::from_maybe_shared(slice).unwrap_or_else(|_| value.clone());
        copy.set_sensitive(value.is_sensitive());
        out.append(name.clone(), copy);
    }
    out
}

/// One value in an allocation of its own ([`detached`]).
pub fn detached_value(value: &HeaderValue) -> HeaderValue {
    let mut copy = HeaderValue::from_maybe_shared(bytes::Bytes::copy_from_slice(value.as_bytes())).unwrap_or_else(|_| value.clone());
    copy.set_sensitive(value.is_sensitive());
    copy
}

/// A `Cache-Control` directive of `headers`: `None` when absent, `Some(None)` when present without a
/// number, `Some(Some(n))` with `=n` (quoted or not). Names in any case; the first occurrence.
pub fn directive(headers: &HeaderMap, name: &str) -> Option<Option<u64>> {
    headers
        .get_all(header::CACHE_CONTROL)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .find_map(|d| {
            let (n, value) = d.split_once('=').map_or((d, None), |(n, v)| (n, Some(v)));
            n.trim().eq_ignore_ascii_case(name).then(|| value.and_then(|v| v.trim().trim_matches('"').parse().ok()))
        })
}

/// Cache-Control and Pragma with every directive name in lowercase, values untouched
/// (a quoted value keeps its case; a field name inside one is case-insensitive anyway).
pub fn lowercase_directives(headers: &mut HeaderMap) {
    for name in [header::CACHE_CONTROL, header::PRAGMA] {
        let values: Vec<HeaderValue> = headers.get_all(&name).iter().map(lowercase_names).collect();
        if values.is_empty() {
            continue;
        }
        headers.remove(&name);
        for value in values {
            headers.append(&name, value);
        }
    }
}

fn lowercase_names(value: &HeaderValue) -> HeaderValue {
    let Ok(text) = value.to_str() else { return value.clone() };
    if !text.bytes().any(|b| b.is_ascii_uppercase()) {
        return value.clone();
    }
    let members: Vec<String> = text
        .split(',')
        .map(|member| match member.split_once('=') {
            Some((name, rest)) => format!("{}={rest}", name.to_ascii_lowercase()),
            None => member.to_ascii_lowercase(),
        })
        .collect();
    HeaderValue::from_str(&members.join(",")).unwrap_or_else(|_| value.clone())
}

/// The `Age` a cache uses: the first member of the first field line, when it is a
/// non-negative integer (capped at 2^31), else none.
pub fn first_age(headers: &HeaderMap) -> Option<u64> {
    let first = headers.get(header::AGE)?.to_str().ok()?.split(',').next()?.trim();
    delta_seconds(first)
}

/// `1*DIGIT`, capped at 2^31 (RFC 9111 §1.2.2); anything else is invalid.
fn delta_seconds(text: &str) -> Option<u64> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(text.parse::<u64>().map_or(DELTA_SECONDS_MAX, |n| n.min(DELTA_SECONDS_MAX)))
}

/// An HTTP-date in any of its three formats, exactly as RFC 9110 §5.6.7 spells them (one
/// space between parts, two-digit day in IMF-fixdate); `None` for anything else. A day-name
/// that is not the date's own day is no reason to refuse it: the day-name is redundant, and
/// RFC 9110 asks recipients to be robust in parsing timestamps, within the grammar (a
/// wrong-case or missing name, or a missing comma, is still invalid).
pub fn http_date(value: &HeaderValue) -> Option<SystemTime> {
    let text = value.to_str().ok()?.trim();
    if let Ok(date) = httpdate::parse_http_date(text) {
        return Some(date);
    }
    const SHORT: [&str; 7] = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"];
    const LONG: [&str; 7] = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"];
    let (day, rest) = text.split_at(text.find([',', ' '])?);
    let names = if SHORT.contains(&day) { SHORT } else if LONG.contains(&day) { LONG } else { return None };
    names.iter().filter(|name| **name != day).find_map(|name| httpdate::parse_http_date(&format!("{name}{rest}")).ok())
}

fn imf_fixdate(date: SystemTime) -> HeaderValue {
    // The formatted date is always ASCII; the fallback is never taken.
    HeaderValue::from_str(&httpdate::fmt_http_date(date)).unwrap_or(HeaderValue::from_static("Thu, 01 Jan 1970 00:00:00 GMT"))
}

/// The seconds an IMF-fixdate counts from the epoch, for comparing `If-Modified-Since` with
/// `Last-Modified` as dates (RFC 9110 §13.1.3); `None` for an invalid date.
pub fn seconds_since_epoch(value: &HeaderValue) -> Option<Duration> {
    http_date(value)?.duration_since(SystemTime::UNIX_EPOCH).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(http::header::HeaderName::from_bytes(k.as_bytes()).unwrap(), v.parse().unwrap());
        }
        h
    }

    macro_rules! age {
        ($name:ident, [$($line:expr),*], $expect:expr) => {
            #[test]
            fn $name() {
                let h = map(&[$(("age", $line)),*]);
                assert_eq!(first_age(&h), $expect);
                assert_eq!(for_policy(&h).get(header::AGE).map(|v| v.to_str().unwrap().to_string()), $expect.map(|n: u64| n.to_string()));
            }
        };
    }

    // RFC 9111 §5.1: the first member of a list, and an invalid value ignored.
    age!(age_5_1_plain, ["3600"], Some(3600));
    age!(age_5_1_list_uses_first_member, ["7200, 0"], Some(7200));
    age!(age_5_1_list_without_space, ["0,7200"], Some(0));
    age!(age_5_1_two_lines_use_the_first, ["7200", "0"], Some(7200));
    age!(age_5_1_negative_is_ignored, ["-7200"], None);
    age!(age_5_1_float_is_ignored, ["7200.0"], None);
    age!(age_5_1_letters_are_ignored, ["old"], None);
    age!(age_5_1_parameter_is_ignored, ["7200;foo=bar"], None);
    // RFC 9111 §1.2.2: past 2^31, 2^31.
    age!(age_1_2_2_overflow_is_capped, ["99999999999999999999999"], Some(DELTA_SECONDS_MAX));

    #[test]
    fn expires_5_3_invalid_date_is_already_expired() {
        for bad in ["Thu, 18  Aug  2050 02:01:18 GMT", "0", "-1", "tomorrow", "Thu, 18 Aug 2050 02:01:18 PST", ""] {
            let h = map(&[("expires", bad)]);
            assert_eq!(for_policy(&h)[header::EXPIRES], "Thu, 01 Jan 1970 00:00:00 GMT", "{bad:?} must read as the past");
        }
    }

    #[test]
    fn dates_in_all_three_formats_are_read() {
        for good in ["Thu, 18 Aug 2050 02:01:18 GMT", "Thursday, 18-Aug-50 02:01:18 GMT", "Thu Aug 18 02:01:18 2050"] {
            let h = map(&[("expires", good), ("date", good), ("last-modified", good)]);
            let p = for_policy(&h);
            for name in [header::EXPIRES, header::DATE, header::LAST_MODIFIED] {
                assert_eq!(p[&name], "Thu, 18 Aug 2050 02:01:18 GMT", "{good:?} in {name}");
            }
        }
        let p = for_policy(&map(&[("date", "yesterday"), ("last-modified", "Thu, 18  Aug 2050 02:01:18 GMT")]));
        assert!(!p.contains_key(header::DATE) && !p.contains_key(header::LAST_MODIFIED), "invalid dates are dropped: {p:?}");
    }

    /// RFC 9110 §5.6.7: a day-name that is not the date's own is read past; the grammar is not.
    #[test]
    fn a_wrong_day_name_is_read_past() {
        for (text, want) in [
            ("Thu Aug  8 02:01:18 2050", Some("Mon, 08 Aug 2050 02:01:18 GMT")),
            ("Mon, 18 Aug 2050 02:01:18 GMT", Some("Thu, 18 Aug 2050 02:01:18 GMT")),
            ("Friday, 18-Aug-50 02:01:18 GMT", Some("Thu, 18 Aug 2050 02:01:18 GMT")),
            ("THU, 18 Aug 2050 02:01:18 GMT", None),
            ("Tue 19 Jan 2038 14:14:08 GMT", None),
            ("Xyz, 18 Aug 2050 02:01:18 GMT", None),
            ("Mon, 18  Aug 2050 02:01:18 GMT", None),
        ] {
            let got = http_date(&HeaderValue::from_static(text)).map(httpdate::fmt_http_date);
            assert_eq!(got.as_deref(), want, "{text:?}");
        }
    }

    /// RFC 9111 §4.2.3: the apparent age counts when it is larger than `Age`.
    #[test]
    fn apparent_age_4_2_3() {
        let now = SystemTime::now();
        let at = |secs_ago: u64| httpdate::fmt_http_date(now - Duration::from_secs(secs_ago));
        let age_of = |pairs: &[(&str, &str)]| {
            let mut h = for_policy(&map(pairs));
            with_apparent_age(&mut h, now);
            h.get(header::AGE).map(|v| v.to_str().unwrap().to_string())
        };
        assert_eq!(age_of(&[("date", &at(7200))]).as_deref(), Some("7199"), "two hours, less Date's rounding");
        assert_eq!(age_of(&[("date", &at(7200)), ("age", "9000")]).as_deref(), Some("9000"), "a larger Age stands");
        assert_eq!(age_of(&[("date", &at(1))]), None, "within Date's rounding");
        assert_eq!(age_of(&[("date", &httpdate::fmt_http_date(now + Duration::from_secs(600)))]), None, "a Date ahead");
        assert_eq!(age_of(&[("date", "yesterday")]), None, "an invalid Date");
    }

    /// RFC 9111 §5.2: no whitespace before a directive's `=`; such a lifetime grants nothing.
    #[test]
    fn a_lifetime_with_space_before_equals_is_dropped() {
        let cc = |v: &str| for_policy(&map(&[("cache-control", v)])).get_all(header::CACHE_CONTROL).iter().map(|v| v.to_str().unwrap().to_string()).collect::<Vec<_>>();
        assert_eq!(cc("max-age =3600"), [""]);
        assert_eq!(cc("public, S-MaxAge\t=60, max-age=10"), ["public, max-age=10"]);
        assert_eq!(cc("max-age= 3600"), ["max-age= 3600"], "after the = is the policy's to read");
        assert_eq!(cc("no-store, max-age=60"), ["no-store, max-age=60"]);
    }

    #[test]
    fn cache_control_5_2_directive_names_are_case_insensitive() {
        let h = map(&[("cache-control", "No-CaChE, Max-Age=60"), ("cache-control", "PRIVATE=\"Set-Cookie\""), ("pragma", "No-Cache")]);
        let p = for_policy(&h);
        let cc: Vec<_> = p.get_all(header::CACHE_CONTROL).iter().map(|v| v.to_str().unwrap()).collect();
        assert_eq!(cc, ["no-cache, max-age=60", "private=\"Set-Cookie\""]);
        assert_eq!(p[header::PRAGMA], "no-cache");
        assert_eq!(h[header::CACHE_CONTROL], "No-CaChE, Max-Age=60", "the original is untouched");
    }
}
