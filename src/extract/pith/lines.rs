//! Short lines that state facts about the article rather than tell it: datelines ("Published
//! November 20th, 2019 - 07:29 GMT", "05/10/2018 - Publicado por: …") and gallery counters
//! ("Image 1 of 5", beside a picture).
//!
//! Read from the digits alone, so the rules hold in any language: a clock time (`7:29`,
//! `20:13`), a numeric date (`2019-11-20`, `05/10/2018`, `20.11.2019`), a year beside another
//! number (`24 сентября 2018`). Cleaning applies them only to short blocks outside the run of
//! the article's prose (before its first paragraph or after its last), where metadata sits:
//! inside the text, the same digits are the story's own ("the vote closes at 18:00").

use crate::dom::{NodeId, Tree};

/// How many nodes of a block the scan reads: a short line is a handful of nodes, and the bound
/// keeps the cleaning pass linear on odd markup (long runs of empty wrappers).
const SCAN_NODES: usize = 32;

/// What the digits of a line say.
#[derive(Default, Debug, PartialEq, Eq)]
struct Digits {
    /// Runs of digits.
    numbers: u32,
    /// A four-digit year, 1900 to 2099.
    year: bool,
    /// A clock time: one or two digits, a colon, two digits.
    clock: bool,
    /// Three numbers joined by one separator (`/`, `-`, `.`), one of them a year or all short.
    date: bool,
}

/// Whether the block's text reads as a dateline. `at_start`: the line comes before the
/// article's first paragraph, where a year beside a day is enough (a day and a month name).
pub fn is_dateline(tree: &Tree, id: NodeId, at_start: bool) -> bool {
    let mut d = Digits::default();
    for n in tree.descendants(id).take(SCAN_NODES) {
        if let Some(text) = tree.text(n) {
            if tree.is_shown(n) {
                scan(text, &mut d);
            }
        }
    }
    d.clock || d.date || (at_start && d.year && d.numbers >= 2)
}

/// Reads the digit runs of one text.
fn scan(text: &str, d: &mut Digits) {
    let b = text.as_bytes();
    // The last two runs: (start, len) and the separator byte that followed each.
    let mut runs: [(usize, usize, u8); 3] = [(0, 0, 0); 3];
    let mut i = 0;
    while i < b.len() {
        if !b[i].is_ascii_digit() {
            i += 1;
            continue;
        }
        let start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        let len = i - start;
        let before = if start > 0 { b[start - 1] } else { b' ' };
        d.numbers += 1;
        if len == 4
            && matches!(&b[start..start + 2], b"19" | b"20")
            && !before.is_ascii_alphabetic()
        {
            d.year = true;
        }
        let prev = runs[2];
        let joined = prev.1 > 0 && prev.0 + prev.1 + 1 == start;
        if joined && prev.2 == b':' && prev.1 <= 2 && len == 2 {
            d.clock = true;
        }
        let after = b.get(i).copied().unwrap_or(b' ');
        runs = [runs[1], runs[2], (start, len, after)];
        let [first, second, third] = runs;
        let chained = first.1 > 0
            && first.0 + first.1 + 1 == second.0
            && second.0 + second.1 + 1 == third.0
            && first.2 == second.2
            && matches!(first.2, b'/' | b'-' | b'.');
        if chained && [first.1, second.1, third.1].iter().all(|&l| l <= 4) {
            let year = first.1 == 4 || third.1 == 4;
            let short = first.1 <= 2 && second.1 <= 2 && third.1 <= 2;
            d.date |= (year || short) && second.1 <= 2;
        }
    }
}

/// Whether the block's text holds an e-mail address or a social handle (`name@host.org`,
/// `@handle`): at the end of an article, that is the "write to the author", "follow us" or
/// "send us a tip" line, which is about the article, not of it.
pub fn has_address(tree: &Tree, id: NodeId) -> bool {
    tree.descendants(id).take(SCAN_NODES).any(|n| {
        tree.text(n).is_some_and(|t| {
            tree.is_shown(n)
                && t.as_bytes()
                    .windows(2)
                    .any(|w| w[0] == b'@' && w[1].is_ascii_alphanumeric())
        })
    })
}

/// The longest gallery counter, in characters ("Photo 12 of 140" and its translations).
pub const MAX_COUNTER: u32 = 24;

/// Whether the element's text is a gallery counter: two numbers, the first not above the
/// second, with at most two words around them ("Image 1 of 5", "3 / 12", "Foto 2 de 10"), in
/// an element whose parent shows an image.
pub fn is_counter(tree: &Tree, id: NodeId) -> bool {
    let chars = tree.stats(id).text_chars;
    if chars == 0 || chars > MAX_COUNTER {
        return false;
    }
    let pictured = tree.parent(id).is_some_and(|p| tree.stats(p).images > 0);
    if !pictured {
        return false;
    }
    let (mut numbers, mut words) = ([0u32; 2], 0usize);
    let mut count = 0usize;
    for n in tree.descendants(id).take(SCAN_NODES) {
        let Some(text) = tree.text(n).filter(|_| tree.is_shown(n)) else {
            continue;
        };
        for w in crate::dom::words(text) {
            if let Ok(v) = w.parse::<u32>() {
                if count < 2 {
                    numbers[count] = v;
                }
                count += 1;
            } else if w.chars().any(char::is_alphanumeric) {
                words += 1;
            }
        }
    }
    count == 2 && words <= 2 && numbers[0] >= 1 && numbers[0] <= numbers[1] && numbers[1] >= 2
}

#[cfg(test)]
mod tests {
    use super::*;

    fn digits(text: &str) -> Digits {
        let mut d = Digits::default();
        scan(text, &mut d);
        d
    }

    macro_rules! lines {
        ($($name:ident: $text:expr => $clock:expr, $date:expr, $year:expr;)*) => {$(
            #[test]
            fn $name() {
                let d = digits($text);
                assert_eq!((d.clock, d.date, d.year), ($clock, $date, $year), "{}", $text);
            }
        )*};
    }

    lines! {
        published_with_time: "Published November 20th, 2019 - 07:29 GMT" => true, false, true;
        iso_date_and_time: "Marcus De Guzman 2019-11-20 17:27:46" => true, true, true;
        day_month_year: "05/10/2018 - Publicado por: Clarissa Borba" => false, true, true;
        dotted: "20.11.2019" => false, true, true;
        words_and_year: "·24 сентября 2018" => false, false, true;
        scale_is_a_clock_only_with_two_digits: "scala 1:240" => false, false, false;
        money_is_not_a_date: "Prices from 1.299.00 dollars" => false, false, false;
        version_is_not_a_year: "Model X2019 costs 40 dollars" => false, false, false;
        plain_prose: "The vote closes on Tuesday." => false, false, false;
    }

    #[test]
    fn gallery_counters_beside_pictures() {
        let tree = Tree::parse(
            "<div><span>Image 2 of 5</span><img src=a.jpg></div>\
             <div><span>Foto 3 / 12</span><img src=b.jpg></div>\
             <div><span>Image 2 of 5</span></div>\
             <div><span>Page 7 of 5</span><img src=c.jpg></div>\
             <div><span>Top 10 tips for 2019</span><img src=d.jpg></div>",
        );
        let spans: Vec<bool> = tree
            .descendants(tree.root())
            .filter(|&n| tree.tag(n) == Some("span"))
            .map(|n| is_counter(&tree, n))
            .collect();
        assert_eq!(spans, [true, true, false, false, false]);
    }

    #[test]
    fn a_year_beside_a_day_counts_at_the_start_only() {
        let tree = Tree::parse("<p>·24 сентября 2018</p>");
        let p = tree
            .descendants(tree.root())
            .find(|&n| tree.tag(n) == Some("p"));
        let p = p.expect("p");
        assert!(is_dateline(&tree, p, true));
        assert!(!is_dateline(&tree, p, false));
    }
}
