//! The tokenizer's table of tag and attribute names ([`Names`]): names as written, interned
//! once per thread rather than once per tag.

use markup5ever::LocalName;

/// The tag and attribute names met lately, as written and as interned: a page names `div`,
/// `a`, `class` and `href` hundreds of times, and interning hashes the name and looks it up
/// in the static set (or, for names outside it, a set shared by every thread, under a lock).
/// A small table keyed by the name's bytes turns most of those into one comparison.
///
/// The table outlives the page: one per thread ([`NAMES`]), handed to each parse and taken
/// back, so that a page's names are mostly found from the pages before it.
pub(super) struct Names {
    /// A name of 1 to 15 bytes packed with its length in the last byte (so never 0), and the
    /// atom for it, lower-cased; `(0, "")` is an empty slot.
    slots: Box<[(u128, LocalName); NAME_SLOTS]>,
    /// Names of 16 bytes or more, too long for a key (`data-…` attributes, custom elements):
    /// by a hash of their bytes, with the bytes to compare, as [`Names::miss`] finds them.
    long: Box<[(u64, Box<str>, LocalName); LONG_SLOTS]>,
}

/// Slots of [`Names`] for long names: they are few on a page.
const LONG_SLOTS: usize = 64;

/// Slots of [`Names`]: several times the distinct names of most pages, so that few collide.
const NAME_SLOTS: usize = 256;

thread_local! {
    /// The thread's [`Names`] between parses (`None` while a parse holds it).
    pub(super) static NAMES: std::cell::Cell<Option<Names>> = const { std::cell::Cell::new(None) };
}

impl Names {
pub(super)     fn new() -> Names {
        Names {
            slots: Box::new(std::array::from_fn(|_| (0, LocalName::default()))),
            long: Box::new(std::array::from_fn(|_| (0, Box::default(), LocalName::default()))),
        }
    }

    /// `src[start..end]`, a name as written, lower-cased (U+0000 replaced) and interned.
    ///
    /// The key is read from the input in one 16-byte load and masked to the name: copying the
    /// name's few bytes into a buffer and loading that as one word would stall the load until
    /// the byte stores drain, on every tag and attribute of the page. Only a hit is inline;
    /// everything else is [`Names::miss`], out of the way of the callers' registers.
    #[inline]
pub(super)     fn get(&mut self, src: &str, start: usize, end: usize) -> LocalName {
        let len = end.wrapping_sub(start);
        let chunk = src.as_bytes().get(start..).and_then(|rest| rest.first_chunk::<16>());
        if let (1..16, Some(&word)) = (len, chunk) {
            // The name's bytes, zero above them, and its length in the last byte.
            let key = (u128::from_le_bytes(word) & KEY_MASKS[len]) | ((len as u128) << 120);
            let slot = &self.slots[Names::slot(key)];
            if slot.0 == key {
                return slot.1.clone();
            }
        }
        self.miss(src, start, end)
    }

    /// [`Names::get`] for a name not in the table: a long name looked up by its bytes, else
    /// interned and remembered (unless empty).
    #[cold]
    #[inline(never)]
    fn miss(&mut self, src: &str, start: usize, end: usize) -> LocalName {
        let raw = &src[start..end];
        let len = raw.len();
        if len >= 16 {
            let mix = |hash: u64, b: u8| {
                (hash.rotate_left(5) ^ u64::from(b)).wrapping_mul(0x517c_c1b7_2722_0a95)
            };
            let hash = raw.bytes().fold(0, mix);
            let slot = &mut self.long[(hash >> 58) as usize % LONG_SLOTS];
            if slot.0 != hash || *slot.1 != *raw {
                *slot = (hash, raw.into(), LocalName::from(&*lower_name(raw)));
            }
            return slot.2.clone();
        }
        let name = LocalName::from(&*lower_name(raw));
        if (1..16).contains(&len) {
            // The key `get` reads, made from the name's bytes alone (near the end of input
            // there may be no 16 bytes to load).
            let mut packed = [0u8; 16];
            packed[..len].copy_from_slice(raw.as_bytes());
            let key = u128::from_le_bytes(packed) | ((len as u128) << 120);
            self.slots[Names::slot(key)] = (key, name.clone());
        }
        name
    }

    /// The slot for a key.
    #[inline]
    fn slot(key: u128) -> usize {
        let mixed = (key as u64 ^ (key >> 64) as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        (mixed >> 56) as usize % NAME_SLOTS
    }
}

/// `KEY_MASKS[len]` keeps the low `len` bytes of a 16-byte word: a table, because a shift of a
/// `u128` by a variable amount takes a dozen instructions.
static KEY_MASKS: [u128; 16] = {
    let mut masks = [0u128; 16];
    let mut len = 1;
    while len < 16 {
        masks[len] = (1u128 << (8 * len)) - 1;
        len += 1;
    }
    masks
};

/// Lower-cases ASCII letters and replaces U+0000, borrowing when nothing changes.
pub(super) fn lower_name(name: &str) -> std::borrow::Cow<'_, str> {
    if name.bytes().any(|b| b.is_ascii_uppercase() || b == 0) {
        std::borrow::Cow::Owned(name.to_ascii_lowercase().replace('\0', "\u{fffd}"))
    } else {
        std::borrow::Cow::Borrowed(name)
    }
}
