//! The words of `filters/page-kinds.txt` (its header gives the format): class and id words,
//! short lines of text, address path words and currency signs, each in a group. Read once, on
//! first use; a line this version cannot read makes the whole file none rather than a panic
//! (a unit test holds the shipped file to the format).

use std::sync::LazyLock;

use rustc_hash::FxHashMap;

/// One group of words, as bits, so one lookup answers for every group.
pub(super) mod group {
    pub const AUTHOR: u16 = 1;
    pub const DATE: u16 = 1 << 1;
    pub const PRICE: u16 = 1 << 2;
    pub const CODE: u16 = 1 << 3;
    pub const CART: u16 = 1 << 4;
    pub const POST: u16 = 1 << 5;
    pub const AGO: u16 = 1 << 6;
    pub const FORUM: u16 = 1 << 7;
    pub const DOCS: u16 = 1 << 8;
    pub const PRODUCT: u16 = 1 << 9;
    pub const COLLECTION: u16 = 1 << 10;
    pub const LISTING: u16 = 1 << 11;
}

/// The parsed file.
#[derive(Default, Debug)]
pub(super) struct Words {
    /// Per first letter, a bit per length a class word or stem could match: most words are
    /// turned away by one lookup, without hashing (this runs on every class and id).
    name_filter: [u32; 26],
    names: FxHashMap<Box<[u8]>, u16>,
    name_stems: Vec<(Box<[u8]>, u16)>,
    lines: FxHashMap<String, u16>,
    starts: Vec<(String, u16)>,
    ends: Vec<(String, u16)>,
    paths: FxHashMap<String, u16>,
    currency: Vec<String>,
}

/// The shipped file.
const BUILTIN: &str = include_str!("../../../filters/page-kinds.txt");

static WORDS: LazyLock<Words> = LazyLock::new(|| Words::parse(BUILTIN).unwrap_or_default());

/// The built-in words.
pub(super) fn builtin() -> &'static Words {
    &WORDS
}

/// The longest line of text compared: a longer line is prose, not a label or a button.
pub(super) const MAX_LINE_CHARS: usize = 48;

impl Words {
    /// Parses the file; the first bad line is the error.
    pub(super) fn parse(text: &str) -> Result<Words, String> {
        let mut words = Words::default();
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let bad = |what: &str| format!("page-kinds line {}: {what}: {line}", n + 1);
            let (head, rest) = line.split_once(':').ok_or_else(|| bad("no colon"))?;
            let mut head = head.split_ascii_whitespace();
            let (what, name) = (head.next().unwrap_or(""), head.next().unwrap_or(""));
            if what == "currency" {
                words
                    .currency
                    .extend(rest.split_whitespace().map(str::to_lowercase));
                continue;
            }
            let bits = group_bits(name).ok_or_else(|| bad("unknown group"))?;
            match what {
                "name" => words.add_names(rest, bits).map_err(|w| bad(&w))?,
                "text" => words.add_lines(rest, bits),
                "path" => {
                    for w in rest.split_whitespace() {
                        *words.paths.entry(w.to_lowercase()).or_default() |= bits;
                    }
                }
                _ => return Err(bad("a line is name, text, path or currency")),
            }
        }
        Ok(words)
    }

    fn add_names(&mut self, rest: &str, bits: u16) -> Result<(), String> {
        for word in rest.split_ascii_whitespace() {
            let (stem, w) = match word.strip_suffix('*') {
                Some(w) => (true, w),
                None => (false, word),
            };
            if w.is_empty()
                || !w
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
            {
                return Err(format!("{word:?} is not lower-case ASCII"));
            }
            let slot =
                &mut self.name_filter[usize::from(w.as_bytes()[0].saturating_sub(b'a')).min(25)];
            if stem {
                *slot |= u32::MAX << w.len().min(31);
                self.name_stems.push((w.as_bytes().into(), bits));
            } else {
                *slot |= 1 << w.len().min(31);
                *self.names.entry(w.as_bytes().into()).or_default() |= bits;
            }
        }
        Ok(())
    }

    fn add_lines(&mut self, rest: &str, bits: u16) {
        for phrase in rest.split('|').map(str::trim).filter(|p| !p.is_empty()) {
            if let Some(start) = phrase.strip_suffix(" *") {
                self.starts.push((fold(start), bits));
            } else if let Some(end) = phrase.strip_prefix("* ") {
                self.ends.push((fold(end), bits));
            } else {
                *self.lines.entry(fold(phrase)).or_default() |= bits;
            }
        }
    }

    /// The groups of one lower-case class or id word.
    pub(super) fn name(&self, word: &[u8]) -> u16 {
        let Some(&first) = word.first().filter(|b| b.is_ascii_lowercase()) else {
            return 0;
        };
        if self.name_filter[usize::from(first - b'a')] & (1 << word.len().min(31)) == 0 {
            return 0;
        }
        let mut bits = self.names.get(word).copied().unwrap_or(0);
        for (stem, b) in &self.name_stems {
            if word.len() > stem.len() && word.starts_with(stem) {
                bits |= b;
            }
        }
        bits
    }

    /// The groups of a class or id attribute's words.
    pub(super) fn names_in(&self, value: &str) -> u16 {
        let mut bits = 0;
        for_each_word(value, |w| bits |= self.name(w));
        bits
    }

    /// The groups of a short line of text, already folded ([`fold_into`]).
    pub(super) fn line(&self, folded: &str) -> u16 {
        let mut bits = self.lines.get(folded).copied().unwrap_or(0);
        for (start, b) in &self.starts {
            if folded.len() > start.len()
                && folded.starts_with(start.as_str())
                && folded.as_bytes()[start.len()] == b' '
            {
                bits |= b;
            }
        }
        for (end, b) in &self.ends {
            let cut = folded.len().wrapping_sub(end.len()).wrapping_sub(1);
            if folded.len() > end.len()
                && folded.ends_with(end.as_str())
                && folded.as_bytes()[cut] == b' '
            {
                bits |= b;
            }
        }
        bits
    }

    /// The groups of the segments of an address path.
    pub(super) fn path(&self, path: &str) -> u16 {
        path.split(['/', '.', '-', '_'])
            .filter(|s| !s.is_empty() && s.len() <= 24)
            .map(|s| {
                self.paths
                    .get(&s.to_ascii_lowercase())
                    .copied()
                    .unwrap_or(0)
            })
            .fold(0, |a, b| a | b)
    }

    /// Whether a short line of text, lower-cased, shows a price: a currency sign or code and a
    /// digit.
    pub(super) fn is_price(&self, folded_raw: &str) -> bool {
        if !folded_raw.bytes().any(|b| b.is_ascii_digit()) {
            return false;
        }
        self.currency
            .iter()
            .any(|c| match folded_raw.find(c.as_str()) {
                None => false,
                // A sign stands anywhere beside the number; a code must be a word of its own.
                Some(at) if c.chars().all(|ch| ch.is_ascii_alphabetic()) => {
                    let before = folded_raw[..at].chars().next_back();
                    let after = folded_raw[at + c.len()..].chars().next();
                    !before.is_some_and(char::is_alphabetic)
                        && !after.is_some_and(char::is_alphabetic)
                }
                Some(_) => true,
            })
    }
}

fn group_bits(name: &str) -> Option<u16> {
    Some(match name {
        "author" => group::AUTHOR,
        "date" => group::DATE,
        "price" => group::PRICE,
        "code" => group::CODE,
        "cart" => group::CART,
        "post" => group::POST,
        "ago" => group::AGO,
        "forum" => group::FORUM,
        "docs" => group::DOCS,
        "product" => group::PRODUCT,
        "collection" => group::COLLECTION,
        "listing" => group::LISTING,
        _ => return None,
    })
}

/// `text` folded as the file's phrases are: lower case, each run of characters that are
/// neither letters nor digits one space, ends trimmed.
pub(super) fn fold(text: &str) -> String {
    let mut out = String::new();
    fold_into(text, &mut out);
    out
}

/// [`fold`] into a buffer reused line after line.
pub(super) fn fold_into(text: &str, out: &mut String) {
    out.clear();
    let mut space = false;
    for c in text.chars() {
        if c.is_alphanumeric() {
            if space && !out.is_empty() {
                out.push(' ');
            }
            space = false;
            out.extend(c.to_lowercase());
        } else {
            space = true;
        }
    }
}

/// The longest class or id word looked up; a longer one is cut, which only makes it match
/// nothing.
const MAX_WORD: usize = 24;

/// Calls `f` with each lower-cased word of a class or id list.
fn for_each_word(value: &str, mut f: impl FnMut(&[u8])) {
    let mut buf = [0u8; MAX_WORD];
    let mut len = 0usize;
    let mut prev_lower = false;
    for &b in value.as_bytes() {
        let upper = b.is_ascii_uppercase();
        let lower = b.is_ascii_lowercase() || b.is_ascii_digit();
        if !(upper || lower) || (upper && prev_lower) {
            if len > 0 {
                f(&buf[..len]);
                len = 0;
            }
            if !(upper || lower) {
                prev_lower = false;
                continue;
            }
        }
        if len < MAX_WORD {
            buf[len] = b.to_ascii_lowercase();
            len += 1;
        }
        prev_lower = lower;
    }
    if len > 0 {
        f(&buf[..len]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_file_parses() {
        let words = Words::parse(BUILTIN).expect("filters/page-kinds.txt parses");
        assert_eq!(words.names_in("post-author userName"), group::AUTHOR);
        assert_eq!(words.names_in("productPrice"), group::PRICE);
        assert_eq!(words.line(&fold("Add to Cart")), group::CART);
        assert_eq!(words.line(&fold("Joined: Mar 2019")), group::POST);
        assert_eq!(words.line(&fold("3 days ago")), group::AGO);
        assert_eq!(words.line(&fold("Il y a 2 jours")), group::AGO);
        assert_eq!(words.line(&fold("dayago")), 0);
        assert_eq!(words.path("/community/t/some-topic/123"), group::FORUM);
        assert!(words.is_price("$ 19.99"));
        assert!(words.is_price("19,99 €"));
        assert!(words.is_price("eur 5"));
        assert!(!words.is_price("europe 5"));
        assert!(!words.is_price("price"));
    }

    #[test]
    fn bad_lines_are_errors() {
        assert!(Words::parse("name nothing: a").is_err());
        assert!(Words::parse("name author: Upper").is_err());
        assert!(Words::parse("no colon here").is_err());
        assert!(Words::parse("frob author: a").is_err());
    }
}
