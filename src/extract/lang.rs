//! The language of a page, for the `lang` of the pages pith writes: a screen reader chooses
//! its voice by it, and a page without one is read in the listener's default voice, German
//! words spoken with English sounds.
//!
//! What the page states comes first, in the order a browser would trust it: `<html lang>`,
//! then `<meta http-equiv="Content-Language">` (its first language), then `og:locale`
//! (`de_DE`, written `de-DE`). A page that states nothing gets the language of its text, from a
//! sample of its shown, non-link text, and only when the answer is sure: a wrong `lang` is worse
//! than none (the reader then mispronounces every word instead of guessing).
//!
//! Two detectors, the cheap one first. The commonest short words of each language
//! (`filters/lang-words.txt`) are counted over the sample; when one language clearly leads it
//! is the answer, in a few microseconds. Otherwise (a language not listed, another script, close
//! relatives, little text) character trigrams decide (whatlang), which costs about 100
//! microseconds a page whatever the sample's length: on a declutter page that was a twentieth of
//! the proxy's work. Both are measured against the pages that do state their language
//! (`detection_agrees_with_what_pages_state`).

use std::collections::HashMap;
use std::sync::LazyLock;

use crate::dom::{NodeId, Tree};

/// Bytes of text the detectors read: enough for a reliable answer on prose; the trigram
/// detector's time grows with it (4000 bytes cost three times as much as 1200 and found 7 more of
/// 220 pages).
const SAMPLE_CHARS: usize = 1200;

/// Text nodes shorter than this (in bytes) are not sampled.
const MIN_TEXT_BYTES: usize = 40;

/// The language the page states, as a BCP 47 tag, or `None`.
pub fn declared(tree: &Tree) -> Option<String> {
    if let Some(lang) = tree.document_element().and_then(|html| tree.attr(html, "lang")).map(str::trim) {
        if !lang.is_empty() {
            return Some(lang.to_string());
        }
    }
    let head = tree.head()?;
    let mut locale = None;
    for id in tree.descendants(head).filter(|&id| tree.tag(id) == Some("meta")) {
        let content = tree.attr(id, "content").map(str::trim).filter(|c| !c.is_empty());
        let Some(content) = content else { continue };
        if tree.attr(id, "http-equiv").is_some_and(|h| h.trim().eq_ignore_ascii_case("content-language")) {
            let first = content.split(',').next().unwrap_or_default().trim();
            if is_tag(first) {
                return Some(first.to_string());
            }
        }
        let property = tree.attr(id, "property").or_else(|| tree.attr(id, "name"));
        if locale.is_none() && property.is_some_and(|p| p.trim().eq_ignore_ascii_case("og:locale")) {
            let tag = content.replace('_', "-");
            locale = is_tag(&tag).then_some(tag);
        }
    }
    locale
}

/// The language of the shown, non-link text under `root`, as a BCP 47 tag, when the detectors
/// are sure of it: common words first, character trigrams when the words do not decide.
pub fn detected(tree: &Tree, root: NodeId) -> Option<&'static str> {
    let sample = sample(tree, root);
    match by_words(&sample) {
        Words::Lang(tag) => Some(tag),
        Words::Undecided => {
            let info = whatlang::detect(&sample)?;
            info.is_reliable().then(|| tag_of(info.lang()))
        }
    }
}

/// What counting common words says of a text.
#[derive(Debug, PartialEq, Eq)]
enum Words {
    /// One language leads by the margins below.
    Lang(&'static str),
    /// No clear answer: the trigram detector decides.
    Undecided,
}

/// Common words of the leading language, at least: a few lines of prose have this many.
const MIN_HITS: u32 = 8;
/// ... and at least this share of all words, in percent (prose in a listed language has 20-40;
/// at 8, a French page full of English names was called English).
const MIN_SHARE: u32 = 12;
/// ... and at least this many times the runner-up's count.
const MIN_LEAD: u32 = 2;

/// The language whose common words (`filters/lang-words.txt`) `text` is made of, when one
/// clearly leads.
fn by_words(text: &str) -> Words {
    let table = &*COMMON_WORDS;
    let mut hits = [0u32; 32];
    let mut total = 0u32;
    let mut lower = String::new();
    for word in text.split(|c: char| !c.is_alphabetic()).filter(|w| !w.is_empty()) {
        total += 1;
        let word = if word.chars().any(char::is_uppercase) {
            lower.clear();
            lower.extend(word.chars().flat_map(char::to_lowercase));
            lower.as_str()
        } else {
            word
        };
        let Some(&(mut langs)) = table.words.get(word) else { continue };
        while langs != 0 {
            hits[langs.trailing_zeros() as usize] += 1;
            langs &= langs - 1;
        }
    }
    let langs = 0..table.tags.len();
    let Some(first) = langs.clone().max_by_key(|&i| hits[i]) else { return Words::Undecided };
    let best = hits[first];
    let second = langs.filter(|&i| i != first).map(|i| hits[i]).max().unwrap_or(0);
    if best >= MIN_HITS && best * 100 >= total * MIN_SHARE && best >= second * MIN_LEAD {
        Words::Lang(table.tags[first])
    } else {
        Words::Undecided
    }
}

/// `filters/lang-words.txt`: each word with the languages it is common in, as bits indexing
/// `tags`.
struct CommonWords {
    tags: Vec<&'static str>,
    words: HashMap<&'static str, u32, foldhash::fast::FixedState>,
}

const BUILTIN_WORDS: &str = include_str!("../../filters/lang-words.txt");

/// The built-in word lists, read when a page first needs them. The file is part of the build;
/// `the_word_lists_parse` holds it to its format.
static COMMON_WORDS: LazyLock<CommonWords> = LazyLock::new(|| parse_words(BUILTIN_WORDS).unwrap_or_else(|e| panic!("filters/lang-words.txt: {e}")));

fn parse_words(text: &'static str) -> Result<CommonWords, String> {
    let mut table = CommonWords { tags: Vec::new(), words: HashMap::with_hasher(foldhash::fast::FixedState::default()) };
    for (n, line) in text.lines().enumerate().map(|(n, l)| (n + 1, l.trim())) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (tag, words) = line.split_once(':').ok_or_else(|| format!("line {n}: no `tag:` before the words"))?;
        let tag = tag.trim();
        if !is_tag(tag) || table.tags.contains(&tag) {
            return Err(format!("line {n}: `{tag}` is not a new language tag"));
        }
        if table.tags.len() == 32 {
            return Err(format!("line {n}: more than 32 languages"));
        }
        let bit = 1u32 << table.tags.len();
        table.tags.push(tag);
        for word in words.split_whitespace() {
            if word.chars().count() < 2 || word.chars().any(|c| !c.is_alphabetic() || c.is_uppercase()) {
                return Err(format!("line {n}: `{word}` is not a lower-case word of two letters or more"));
            }
            *table.words.entry(word).or_default() |= bit;
        }
    }
    Ok(table)
}

/// What the page states, else what its text under `root` is written in.
pub fn of(tree: &Tree, root: NodeId) -> Option<String> {
    declared(tree).or_else(|| detected(tree, root).map(String::from))
}

/// Languages written right to left (primary subtags), and the scripts that are: a page in one
/// that states no direction is served with `dir="rtl"`, since browsers do not infer the
/// direction from `lang`.
const RTL_LANGUAGES: &[&str] = &["ar", "arc", "ckb", "dv", "fa", "he", "iw", "ji", "ks", "ku-arab", "pa-arab", "ps", "sd", "syr", "ug", "ur", "yi"];
const RTL_SCRIPTS: &[&str] = &["arab", "hebr", "syrc", "thaa", "nkoo", "adlm", "rohg"];

/// Whether `lang` (a BCP 47 tag) is written right to left: an RTL language without a
/// left-to-right script subtag, or any language in an RTL script (`az-Arab`).
pub fn is_rtl(lang: &str) -> bool {
    let lower = lang.trim().to_ascii_lowercase().replace('_', "-");
    let mut parts = lower.split('-');
    let primary = parts.next().unwrap_or_default();
    let script = parts.next().filter(|s| s.len() == 4);
    match script {
        Some(script) => RTL_SCRIPTS.contains(&script) || RTL_LANGUAGES.contains(&format!("{primary}-{script}").as_str()),
        None => RTL_LANGUAGES.contains(&primary),
    }
}

/// Whether the page states a direction: a `dir` on `<html>` or `<body>`.
pub fn states_dir(tree: &Tree) -> bool {
    let has = |id: Option<NodeId>| id.and_then(|id| tree.attr(id, "dir")).is_some_and(|d| !d.trim().is_empty());
    has(tree.document_element()) || has(tree.body())
}

/// Up to [`SAMPLE_CHARS`] of the shown text under `root` outside links (menus and teasers are
/// links, and often in another language than the story), in texts of [`MIN_TEXT_BYTES`] or
/// more, joined by spaces.
fn sample(tree: &Tree, root: NodeId) -> String {
    let mut out = String::with_capacity(SAMPLE_CHARS + 64);
    let mut walk = tree.traverse(root);
    while let Some(edge) = walk.next() {
        let crate::dom::Edge::Open(id) = edge else { continue };
        if tree.tag(id) == Some("a") || (tree.element(id).is_some() && !tree.is_shown(id)) {
            walk.skip_children();
            continue;
        }
        // Short texts are labels and menu items, often in the site's language, not the story's.
        if let Some(text) = tree.text(id).map(str::trim).filter(|t| t.len() >= MIN_TEXT_BYTES) {
            out.push_str(text);
            out.push(' ');
            if out.len() >= SAMPLE_CHARS {
                // One long text must not make the sample long: the trigram detector's time
                // grows with it.
                let mut end = SAMPLE_CHARS;
                while !out.is_char_boundary(end) {
                    end -= 1;
                }
                out.truncate(end);
                break;
            }
        }
    }
    out
}

/// Whether `s` looks like a language tag: a 2–3 letter primary subtag, then subtags of
/// letters and digits (`en`, `de-CH`, `zh-Hant-TW`). Also what `profiles.NAME.fallback_lang`
/// must be.
pub fn is_tag(s: &str) -> bool {
    let mut parts = s.split('-');
    let primary = parts.next().unwrap_or_default();
    (2..=3).contains(&primary.len())
        && primary.bytes().all(|b| b.is_ascii_alphabetic())
        && parts.all(|p| (1..=8).contains(&p.len()) && p.bytes().all(|b| b.is_ascii_alphanumeric()))
}

/// The BCP 47 tag of a detected language: the two-letter ISO 639-1 code where there is one
/// (BCP 47 asks for the shortest), else the detector's three-letter code.
fn tag_of(lang: whatlang::Lang) -> &'static str {
    let code = lang.code();
    TWO_LETTER.iter().find(|(three, _)| *three == code).map_or(code, |(_, two)| two)
}

/// ISO 639-3 codes the detector gives, with their ISO 639-1 codes.
const TWO_LETTER: &[(&str, &str)] = &[
    ("afr", "af"), ("aka", "ak"), ("amh", "am"), ("ara", "ar"), ("aze", "az"), ("bel", "be"),
    ("ben", "bn"), ("bul", "bg"), ("cat", "ca"), ("ces", "cs"), ("cmn", "zh"), ("cym", "cy"),
    ("dan", "da"), ("deu", "de"), ("ell", "el"), ("eng", "en"), ("epo", "eo"), ("est", "et"),
    ("fin", "fi"), ("fra", "fr"), ("guj", "gu"), ("heb", "he"), ("hin", "hi"), ("hrv", "hr"),
    ("hun", "hu"), ("hye", "hy"), ("ind", "id"), ("ita", "it"), ("jav", "jv"), ("jpn", "ja"),
    ("kan", "kn"), ("kat", "ka"), ("khm", "km"), ("kor", "ko"), ("lat", "la"), ("lav", "lv"),
    ("lit", "lt"), ("mal", "ml"), ("mar", "mr"), ("mkd", "mk"), ("mya", "my"), ("nep", "ne"),
    ("nld", "nl"), ("nob", "nb"), ("ori", "or"), ("pan", "pa"), ("pes", "fa"), ("pol", "pl"),
    ("por", "pt"), ("ron", "ro"), ("rus", "ru"), ("sin", "si"), ("slk", "sk"), ("slv", "sl"),
    ("sna", "sn"), ("spa", "es"), ("srp", "sr"), ("swe", "sv"), ("tam", "ta"), ("tel", "te"),
    ("tgl", "tl"), ("tha", "th"), ("tuk", "tk"), ("tur", "tr"), ("ukr", "uk"), ("urd", "ur"),
    ("uzb", "uz"), ("vie", "vi"), ("yid", "yi"), ("zul", "zu"),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_the_page_states_comes_first() {
        let t = Tree::parse("<html lang=' de-AT '><head><meta http-equiv=content-language content=fr></head><body>Hello</body></html>");
        assert_eq!(declared(&t).as_deref(), Some("de-AT"));
        let t = Tree::parse("<head><meta property=og:locale content=pt_BR><meta http-equiv=Content-Language content='nl, en'></head>");
        assert_eq!(declared(&t).as_deref(), Some("nl"), "Content-Language before og:locale");
        let t = Tree::parse("<html lang=''><head><meta property=og:locale content=pt_BR></head>");
        assert_eq!(declared(&t).as_deref(), Some("pt-BR"));
        let t = Tree::parse("<head><meta property=og:locale content='not a tag'></head>");
        assert_eq!(declared(&t), None);
    }

    #[test]
    fn text_is_detected_only_when_the_detector_is_sure() {
        let german = Tree::parse(
            "<body><nav><a href=/>Home News Sport Weather</a></nav><p>Der Hafen bleibt wegen des Sturms \
             eine Woche lang geschlossen. Die Fischer warten auf besseres Wetter, und die Fähren fahren \
             nicht. Der Bürgermeister sagte am Montag, dass die Schäden größer seien als befürchtet.</p></body>",
        );
        let body = german.body().expect("body");
        assert_eq!(detected(&german, body), Some("de"));
        assert_eq!(of(&german, body).as_deref(), Some("de"));
        let short = Tree::parse("<body><p>OK</p></body>");
        assert_eq!(detected(&short, short.body().expect("body")), None);
    }

    #[test]
    fn the_word_lists_parse() {
        let table = parse_words(BUILTIN_WORDS).expect("filters/lang-words.txt");
        assert!(table.tags.len() >= 15, "{:?}", table.tags);
        assert!(parse_words("en the of\nen and").is_err(), "a language twice");
        assert!(parse_words("english: the").is_err(), "not a tag");
        assert!(parse_words("en: The").is_err(), "upper case");
        assert!(parse_words("en: a").is_err(), "one letter");
        assert!(parse_words("en the").is_err(), "no colon");
    }

    #[test]
    fn common_words_decide_only_with_a_clear_lead() {
        let english = "The harbour will stay closed for a week after the storm, and the ferries are not running. \
                       The mayor said on Monday that the damage was worse than they had feared.";
        assert_eq!(by_words(english), Words::Lang("en"));
        let german = "Der Hafen bleibt wegen des Sturms eine Woche lang geschlossen, und die Fähren fahren nicht. \
                      Der Bürgermeister sagte am Montag, dass die Schäden größer seien als befürchtet.";
        assert_eq!(by_words(german), Words::Lang("de"));
        assert_eq!(by_words("The end."), Words::Undecided, "too few words");
        // Danish and Norwegian share most of their common words: the trigrams decide.
        let norwegian = "Det er ikke så lett å si hva som skjer, men vi har sett at det blir flere som reiser med tog \
                         etter at prisene gikk ned. Han sa at det var for tidlig å si om det vil vare.";
        assert_eq!(by_words(norwegian), Words::Undecided);
        // A list of names and numbers is not prose.
        assert_eq!(by_words("Oslo Bergen Trondheim Stavanger 2024 2025 Drammen Kristiansand Tromsø Bodø"), Words::Undecided);
    }

    #[test]
    fn every_detected_language_has_a_tag() {
        assert_eq!(TWO_LETTER.len(), whatlang::Lang::all().len());
        for lang in whatlang::Lang::all() {
            assert_eq!(tag_of(*lang).len(), 2, "{lang:?}");
        }
    }

    /// Detection measured on the development pages that state their language: the share of
    /// those (in a language the detector knows) where it agrees with the stated primary subtag.
    #[test]
    fn detection_agrees_with_what_pages_state() {
        let (mut agree, mut unsure, mut total) = (0, 0, 0);
        let mut wrong = Vec::new();
        let (mut by_words_said, mut by_words_wrong) = (0, Vec::new());
        // Its bounds are measured over 220 pages that state a language; a dozen vendored pages
        // could not hold them.
        let (Some(scrapinghub), Some(readability)) = (crate::testdata::dev_set("scrapinghub"), crate::testdata::dev_set("readability")) else {
            return crate::testdata::skipped("the development sets ../shared/bench/{scrapinghub,readability}", "skipped: nothing checked");
        };
        for dir in [scrapinghub, readability] {
            let entries = std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
            for path in entries.map(|e| e.expect("a readable folder").path()).filter(|p| p.extension().is_some_and(|x| x == "html")) {
                let bytes = std::fs::read(&path).expect("page");
                let tree = Tree::parse(&String::from_utf8_lossy(&bytes));
                let Some(stated) = tree.document_element().and_then(|h| tree.attr(h, "lang")) else { continue };
                let primary = stated.trim().split(['-', '_']).next().unwrap_or_default().to_ascii_lowercase();
                if !TWO_LETTER.iter().any(|(_, two)| *two == primary) {
                    continue;
                }
                total += 1;
                let body = tree.body().expect("a parsed page has a body");
                if let Words::Lang(tag) = by_words(&sample(&tree, body)) {
                    by_words_said += 1;
                    if tag != primary {
                        by_words_wrong.push(format!("{}: stated {stated}, common words say {tag}", path.display()));
                    }
                }
                match detected(&tree, body) {
                    Some(tag) if tag == primary => agree += 1,
                    Some(tag) => wrong.push(format!("{}: stated {stated}, detected {tag}", path.display())),
                    None => unsure += 1,
                }
            }
        }
        eprintln!("language detection: {agree} of {total} agree, {unsure} unsure, {} differ: {wrong:#?}", wrong.len());
        eprintln!("common words decided {by_words_said}, {} of them differ: {by_words_wrong:#?}", by_words_wrong.len());
        // Measured over the whole body: 158 of 220 agree, 53 unsure, 9 differ (trigrams alone:
        // 153, 58 and 9; trigrams over 4000 characters: 160, 52 and 8, at three times the cost).
        // Common words decide 120 of the 220, and differ on 5, each a page the trigrams call the
        // same. Of the 9, four pages state the wrong language (an English story on a German site
        // says `de`) and three are Latin filler text: the detector was right. Reading mode
        // detects over the content it kept, which holds less chrome.
        assert!(total >= 200, "{total} pages state a language");
        assert!(agree * 3 >= total * 2, "two in three at least: {agree} of {total}");
        assert!(wrong.len() * 100 <= total * 5, "a wrong guess is worse than none: {wrong:#?}");
        assert!(by_words_said * 2 >= total, "common words decide half the pages at least: {by_words_said} of {total}");
        assert!(by_words_wrong.len() * 100 <= by_words_said * 5, "common words guess wrong: {by_words_wrong:#?}");
    }

    #[test]
    fn right_to_left_languages_and_scripts() {
        for rtl in ["he", "ar", "fa-IR", "ur", "yi", "az-Arab", "ku-Arab", "AR_eg"] {
            assert!(is_rtl(rtl), "{rtl}");
        }
        for ltr in ["en", "de-DE", "hi", "", "ar-Latn", "heb", "tr"] {
            assert!(!is_rtl(ltr), "{ltr}");
        }
        assert!(states_dir(&Tree::parse("<html dir=ltr><body>x")));
        assert!(states_dir(&Tree::parse("<html><body dir=rtl>x")));
        assert!(!states_dir(&Tree::parse("<html lang=he><body>x")));
    }

}
