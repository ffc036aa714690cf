//! The control page's form check (`Control::tokened_fields`): the body of a `POST /choose`,
//! `/switch`, `/once` or `/admin` form, read as `application/x-www-form-urlencoded`, and taken
//! only with the client's token.
//!
//! Input: the form body, then 2 control bytes off the end: which client sends it (of three
//! ids), and how a form built from the body's lines carries its token (none, the client's,
//! another client's, a wrong one, the client's in capitals, or two tokens in either order).
//!
//! Properties:
//! - arbitrary bytes never panic;
//! - a body taken for a client carries, as its last `token` field (read by an independent
//!   split on `&` and `=` with percent-decoding), exactly that client's token; the same body
//!   is refused for every other client (their tokens differ);
//! - the fields handed on are the body's fields, each name with its last value;
//! - a form built from the body's lines (each line a `name=value` pair, percent-encoded as a
//!   browser does) with the client's token as the last `token` is taken, and every field's
//!   value round-trips exactly; with no token, another client's, a changed one or the right one
//!   in capitals it is refused.

#![no_main]

use std::collections::HashMap;
use std::sync::LazyLock;

use libfuzzer_sys::fuzz_target;
use pith::config::ControlConfig;
use pith::net::choices::Control;

const WHO: [&str; 3] = ["ip:127.0.0.1", "user:alice", "ip:::1"];

static CONTROL: LazyLock<Control> = LazyLock::new(|| Control::open(&ControlConfig::default()).expect("an in-memory control opens"));

/// Percent-decoding of one form component, `+` as a space, independent of pith's parser.
fn decode(part: &[u8]) -> String {
    let mut out = Vec::with_capacity(part.len());
    let mut i = 0;
    while i < part.len() {
        match part[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < part.len() => {
                let hex = std::str::from_utf8(&part[i + 1..i + 3]).ok().and_then(|h| u8::from_str_radix(h, 16).ok());
                match hex {
                    Some(b) if part[i + 1..i + 3].iter().all(u8::is_ascii_hexdigit) => {
                        out.push(b);
                        i += 3;
                        continue;
                    }
                    _ => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The body's fields, the last value of each name.
fn fields(body: &[u8]) -> HashMap<String, String> {
    body.split(|&b| b == b'&')
        .filter(|p| !p.is_empty())
        .map(|p| match p.iter().position(|&b| b == b'=') {
            Some(at) => (decode(&p[..at]), decode(&p[at + 1..])),
            None => (decode(p), String::new()),
        })
        .collect()
}

fn encode(s: &str) -> String {
    url::form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

fuzz_target!(|data: &[u8]| {
    let (body, control) = pith_fuzz::split_control::<2>(data);
    let who = WHO[usize::from(control[0]) % WHO.len()];
    let token = CONTROL.token(who);
    for other in WHO {
        assert_eq!(other == who, CONTROL.token(other) == token, "two clients share a token");
    }

    // The body as sent.
    if let Some(taken) = CONTROL.tokened_fields(who, body) {
        let expected = fields(body);
        assert_eq!(expected.get("token"), Some(&token), "a form was taken without {who}'s token as its last");
        assert_eq!(taken, expected, "the fields handed on are not the body's");
        for other in WHO.iter().filter(|&&o| o != who) {
            assert!(CONTROL.tokened_fields(other, body).is_none(), "{who}'s form was taken for {other}");
        }
    }

    // A form built from the body's lines, as a browser encodes it.
    let text = String::from_utf8_lossy(body);
    let mut pairs: Vec<(String, String)> = text
        .lines()
        .filter(|l| !l.is_empty())
        .map(|l| l.split_once('=').map_or((l.to_string(), String::new()), |(k, v)| (k.to_string(), v.to_string())))
        .filter(|(k, _)| k != "token")
        .collect();
    let wrong = {
        let mut t = token.clone().into_bytes();
        let at = usize::from(control[1] >> 3) % t.len();
        t[at] = if t[at] == b'0' { b'1' } else { b'0' };
        String::from_utf8(t).expect("hex")
    };
    let other = CONTROL.token(WHO[(usize::from(control[0]) + 1) % WHO.len()]);
    let upper = token.to_ascii_uppercase();
    let (tokens, ok): (Vec<&str>, bool) = match control[1] % 7 {
        0 => (vec![], false),
        1 => (vec![&token], true),
        2 => (vec![&other], false),
        3 => (vec![&wrong], false),
        4 => (vec![&upper], upper == token),
        5 => (vec![&wrong, &token], true),
        _ => (vec![&token, &wrong], false),
    };
    let at = usize::from(control[1]) % (pairs.len() + 1);
    let mut form: Vec<String> = pairs.iter().map(|(k, v)| format!("{}={}", encode(k), encode(v))).collect();
    for t in tokens.iter().rev() {
        form.insert(at, format!("token={}", encode(t)));
    }
    let form = form.join("&");
    let taken = CONTROL.tokened_fields(who, form.as_bytes());
    if ok {
        let taken = taken.unwrap_or_else(|| panic!("a form with {who}'s token was refused: {form:?}"));
        assert_eq!(taken.get("token"), Some(&token));
        pairs.reverse();
        let mut seen = std::collections::HashSet::new();
        for (k, v) in &pairs {
            if seen.insert(k) {
                assert_eq!(taken.get(k), Some(v), "field {k:?} did not round-trip in {form:?}");
            }
        }
        assert_eq!(taken.len(), seen.len() + 1, "fields appeared from nowhere in {form:?}");
    } else {
        assert!(taken.is_none(), "a form without {who}'s token was taken: {form:?}");
    }
});
