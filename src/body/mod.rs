//! HTTP content-codings (RFC 9110 §8.4.1) as bytes in, bytes out.
//!
//! This module owns three things: reading the coding headers (`Content-Encoding` of an upstream
//! response, `Accept-Encoding` of a client), undoing codings with a hard cap on the decoded size
//! ([`Decoder`]), and applying one coding for the client ([`Encoder`]). Both codecs use the push
//! shape `(input, end)`: the caller feeds each body chunk as it arrives and learns at `end`
//! whether the stream was complete, so a cut-short body can never pass as a clean one.
//!
//! It knows nothing of HTTP types or HTML: the proxy hands it header values as `&str` and body
//! chunks as `&[u8]`, and decides itself what to do with errors (serve the page unfiltered when the
//! cap is hit, answer 502 on corrupt data).

use std::fmt;
use std::io;

mod decode;
mod encode;

pub use decode::{decode_all, Decoder};
pub use encode::{compressions_on_this_thread, encode_all, Encoder};

/// A content-coding (RFC 9110 §8.4.1).
///
/// Only the codings that browsers send and servers use are listed; anything else is rejected
/// by [`parse_content_encoding`] rather than passed along as if it were understood.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Coding {
    /// No transformation: the body is its own representation.
    Identity,
    /// gzip (RFC 1952), possibly as several concatenated members.
    Gzip,
    /// zlib-wrapped deflate (RFC 1950), or raw deflate (RFC 1951) as many servers send it.
    Deflate,
    /// Brotli (RFC 7932), token `br`.
    Brotli,
    /// Zstandard (RFC 8878), token `zstd`.
    Zstd,
}

impl Coding {
    /// Reads one header token, case-insensitively, because RFC 9110 makes content-coding tokens
    /// case-insensitive and real servers send `GZIP` and `x-gzip`.
    pub fn from_token(token: &str) -> Option<Coding> {
        const TOKENS: [(&str, Coding); 6] = [
            ("identity", Coding::Identity),
            ("gzip", Coding::Gzip),
            ("x-gzip", Coding::Gzip),
            ("deflate", Coding::Deflate),
            ("br", Coding::Brotli),
            ("zstd", Coding::Zstd),
        ];
        TOKENS
            .iter()
            .find(|(name, _)| name.eq_ignore_ascii_case(token))
            .map(|&(_, coding)| coding)
    }

    /// The token to put in a `Content-Encoding` header; always the registered lower-case name,
    /// so what pith sends is canonical whatever spelling it received.
    pub fn as_str(self) -> &'static str {
        match self {
            Coding::Identity => "identity",
            Coding::Gzip => "gzip",
            Coding::Deflate => "deflate",
            Coding::Brotli => "br",
            Coding::Zstd => "zstd",
        }
    }
}

impl fmt::Display for Coding {
    /// Shows the header token, so error messages name the coding the way the header did.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a body could not be decoded; each message is a sentence fit for an error page.
///
/// The variants let the proxy tell the cases apart: `LimitExceeded` means "serve it unfiltered",
/// the others mean the upstream sent something broken.
#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    /// The response names a content-coding pith does not implement (e.g. `compress`).
    #[error("the body uses the content-coding \"{coding}\", which pith cannot decode")]
    Unsupported {
        /// The token as it appeared in the header.
        coding: String,
    },
    /// The data is not valid for its coding (bad header, bad checksum, data after the end).
    #[error("invalid {coding} data: {source}")]
    Corrupt {
        /// The coding whose stream was invalid (the outermost one for stacked codings).
        coding: Coding,
        /// What the decoder found wrong.
        #[source]
        source: io::Error,
    },
    /// The body ended before the compressed stream did: the upstream cut it short.
    #[error("the {coding} body ended before its compressed stream was complete")]
    Truncated {
        /// The coding whose stream was left unfinished.
        coding: Coding,
    },
    /// Decoding would produce more than the configured cap.
    #[error("decoded body exceeds the {limit}-byte limit")]
    LimitExceeded {
        /// The cap, in bytes of decoded output.
        limit: u64,
    },
}

/// Why a body could not be encoded for the client.
///
/// Encoding into memory fails only on a codec's internal error, but the cause is kept so that a
/// failure is reported rather than turned into a silently short body.
#[derive(Debug, thiserror::Error)]
pub enum EncodeError {
    /// The encoder reported an error.
    #[error("{coding} encoding of the body failed: {source}")]
    Io {
        /// The coding being applied.
        coding: Coding,
        /// The encoder's error.
        #[source]
        source: io::Error,
    },
}

/// Parses a `Content-Encoding` value ("gzip", "deflate, br", empty) into the codings in the order
/// they were applied; `identity` entries are dropped, as are empty list elements (RFC 9110 §5.6.1
/// tells recipients to ignore them).
///
/// An unknown token is an error rather than skipped: decoding "gzip" out of "gzip, compress"
/// would hand the next stage bytes that are still compressed.
pub fn parse_content_encoding(value: &str) -> Result<Vec<Coding>, DecodeError> {
    value
        .split(',')
        .map(str::trim)
        .filter(|token| !token.is_empty())
        .filter_map(|token| match Coding::from_token(token) {
            Some(Coding::Identity) => None,
            Some(coding) => Some(Ok(coding)),
            None => Some(Err(DecodeError::Unsupported {
                coding: token.to_owned(),
            })),
        })
        .collect()
}

/// Picks the coding to send a client from its `Accept-Encoding`: br preferred, then gzip, else
/// [`Coding::Identity`]. No header means identity (RFC 9110 §12.5.3 allows any coding then, but
/// a client that says nothing may not decode anything).
///
/// q-values are honoured: the acceptable coding with the highest q wins, ties go to br (smaller
/// output), `q=0` excludes a coding, and `*` stands for every coding not named. Elements with
/// a malformed q-value are ignored rather than guessed at. Identity is returned even when the
/// client excluded it, because an uncompressed body is always better than a 406.
pub fn choose_encoding(accept_encoding: Option<&str>) -> Coding {
    let Some(header) = accept_encoding else {
        return Coding::Identity;
    };
    let (mut brotli, mut gzip, mut star) = (None, None, None);
    for element in header.split(',') {
        let mut parts = element.split(';');
        let token = parts.next().unwrap_or_default().trim();
        let Some(q) = parse_qvalue(parts) else {
            continue;
        };
        let slot = match (token, Coding::from_token(token)) {
            ("*", _) => &mut star,
            (_, Some(Coding::Brotli)) => &mut brotli,
            (_, Some(Coding::Gzip)) => &mut gzip,
            _ => continue,
        };
        *slot = Some(q);
    }
    let brotli = brotli.or(star).unwrap_or(0);
    let gzip = gzip.or(star).unwrap_or(0);
    if brotli > 0 && brotli >= gzip {
        Coding::Brotli
    } else if gzip > 0 {
        Coding::Gzip
    } else {
        Coding::Identity
    }
}

/// Reads the `q` parameter among an element's parameters, in thousandths (RFC 9110 §12.4.2
/// allows at most three decimals, so integers compare exactly). No `q` means 1; a malformed one
/// gives `None`.
fn parse_qvalue<'a>(params: impl Iterator<Item = &'a str>) -> Option<u16> {
    let mut q = 1000;
    for param in params {
        let (name, value) = param.split_once('=')?;
        if !name.trim().eq_ignore_ascii_case("q") {
            continue;
        }
        let value = value.trim();
        let (whole, fraction) = value.split_once('.').unwrap_or((value, ""));
        let valid = matches!(whole, "0" | "1")
            && fraction.len() <= 3
            && fraction.bytes().all(|b| b.is_ascii_digit())
            && (whole == "0" || fraction.bytes().all(|b| b == b'0'));
        if !valid {
            return None;
        }
        let digits = format!("{fraction:0<3}");
        let thousandths: u16 = digits.parse().ok()?;
        q = if whole == "1" { 1000 } else { thousandths };
    }
    Some(q)
}

#[cfg(test)]
mod tests {
    use super::*;

    macro_rules! chooses {
        ($($name:ident: $header:expr => $want:expr;)*) => {$(
            #[test]
            fn $name() {
                assert_eq!(choose_encoding($header), $want, "Accept-Encoding: {:?}", $header);
            }
        )*};
    }

    chooses! {
        choose_br_over_gzip: Some("gzip, br") => Coding::Brotli;
        choose_none_when_both_excluded: Some("gzip;q=0, br;q=0") => Coding::Identity;
        choose_star_means_br: Some("*") => Coding::Brotli;
        choose_star_after_excluded_br: Some("br;q=0, *") => Coding::Gzip;
        choose_no_header: None::<&str> => Coding::Identity;
        choose_identity_only: Some("identity") => Coding::Identity;
        choose_upper_case_gzip: Some("GZIP") => Coding::Gzip;
        choose_empty_header: Some("") => Coding::Identity;
        choose_higher_q_wins: Some("br;q=0.5, gzip;q=0.8") => Coding::Gzip;
        choose_tie_goes_to_br: Some("gzip;q=0.5, br;q=0.5") => Coding::Brotli;
        choose_x_gzip: Some("x-gzip") => Coding::Gzip;
        choose_spaces_around_q: Some("br ; q = 0 , gzip") => Coding::Gzip;
        choose_named_beats_star: Some("*;q=0, gzip") => Coding::Gzip;
        choose_star_excluded: Some("*;q=0") => Coding::Identity;
        choose_unknown_codings_only: Some("compress, zstd") => Coding::Identity;
        choose_malformed_q_ignored: Some("br;q=2, gzip") => Coding::Gzip;
        choose_q_one_point_zero: Some("br;q=1.000") => Coding::Brotli;
        choose_q_above_one_ignored: Some("br;q=1.5, gzip;q=0.1") => Coding::Gzip;
        choose_tiny_q_still_accepted: Some("br;q=0.001") => Coding::Brotli;
        choose_browser_header: Some("gzip, deflate, br, zstd") => Coding::Brotli;
    }

    macro_rules! parses {
        ($($name:ident: $value:expr => $want:expr;)*) => {$(
            #[test]
            fn $name() {
                let got = parse_content_encoding($value).ok();
                assert_eq!(got, $want, "Content-Encoding: {:?}", $value);
            }
        )*};
    }

    parses! {
        parse_gzip: "gzip" => Some(vec![Coding::Gzip]);
        parse_x_gzip: "x-gzip" => Some(vec![Coding::Gzip]);
        parse_padded_list: " gzip , br " => Some(vec![Coding::Gzip, Coding::Brotli]);
        parse_empty: "" => Some(vec![]);
        parse_identity_dropped: "identity" => Some(vec![]);
        parse_mixed_case: "Deflate, ZSTD" => Some(vec![Coding::Deflate, Coding::Zstd]);
        parse_empty_elements: "gzip,,br," => Some(vec![Coding::Gzip, Coding::Brotli]);
        parse_compress_unsupported: "compress" => None;
        parse_unknown_in_list: "gzip, compress" => None;
    }

    #[test]
    fn unsupported_error_names_the_token() {
        let Err(err) = parse_content_encoding("gzip, Compress") else {
            panic!("compress must be rejected");
        };
        assert!(matches!(&err, DecodeError::Unsupported { coding } if coding == "Compress"));
        assert_eq!(
            err.to_string(),
            "the body uses the content-coding \"Compress\", which pith cannot decode"
        );
    }

    #[test]
    fn tokens_round_trip() {
        for coding in [
            Coding::Identity,
            Coding::Gzip,
            Coding::Deflate,
            Coding::Brotli,
            Coding::Zstd,
        ] {
            assert_eq!(Coding::from_token(coding.as_str()), Some(coding));
            assert_eq!(
                Coding::from_token(&coding.as_str().to_uppercase()),
                Some(coding)
            );
            assert_eq!(coding.to_string(), coding.as_str());
        }
        assert_eq!(Coding::from_token("brotli"), None);
        assert_eq!(Coding::from_token(""), None);
    }

    #[test]
    fn error_messages_read_as_sentences() {
        let limit = DecodeError::LimitExceeded { limit: 16_777_216 };
        assert_eq!(
            limit.to_string(),
            "decoded body exceeds the 16777216-byte limit"
        );
        let cut = DecodeError::Truncated {
            coding: Coding::Brotli,
        };
        assert_eq!(
            cut.to_string(),
            "the br body ended before its compressed stream was complete"
        );
        let corrupt = DecodeError::Corrupt {
            coding: Coding::Gzip,
            source: io::Error::new(io::ErrorKind::InvalidData, "bad magic bytes"),
        };
        assert_eq!(corrupt.to_string(), "invalid gzip data: bad magic bytes");
        assert!(std::error::Error::source(&corrupt).is_some());
    }
}
