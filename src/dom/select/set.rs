//! [`SelectorSet`]: many selectors matched in one walk over a tree, each element testing only
//! the selectors filed under its own id, classes, attribute names and type. The selectors
//! themselves, and matching one of them against one element, are the parent module's.

use markup5ever::local_name;
use rustc_hash::FxHashMap;

use super::prefix::PrefixTree;
use super::{AttrOp, AttrTest, Combinator, Complex, Selector};
use crate::dom::{LocalName, NodeId, Ns, Tree};

/// Many selectors matched in one walk over the tree, each element testing only the selectors
/// that could match it.
///
/// Every complex selector is filed under one key of its subject compound: an id, else a class,
/// else an attribute name, else the attribute of the compound above it, else a type, else
/// nothing (tested everywhere). An element then gathers the selectors filed under its own id,
/// classes, attribute names and type, and those its ancestors' attributes armed. Element
/// hiding lists are almost all `.class`, `#id` and `tag[attr^=...]` forms, so a page with
/// hundreds of applicable rules tests a handful per element, and a bare `.class` or `#id`
/// rule is decided by the lookup itself.
#[derive(Clone, Debug, Default)]
pub struct SelectorSet {
    complexes: Vec<Complex>,
    pub(super) by_id: FxHashMap<String, Filed>,
    pub(super) by_class: FxHashMap<String, Filed>,
    /// Selectors filed by an attribute test, of their subject or of the compound above it,
    /// per attribute name: one lookup per attribute of an element finds both.
    pub(super) by_name: ByAtom<ByName>,
    pub(super) by_tag: ByAtom<Vec<u32>>,
    pub(super) everywhere: Vec<u32>,
    /// What the id and class maps may hold ([`KeyFilter`]): most of a page's ids and classes
    /// are in neither, or the set has few keys of a kind (a host's rules file a couple of
    /// classes), and a filter rules them out for less than hashing them does.
    ids: KeyFilter,
    classes: KeyFilter,
    /// Some id or class is noted ([`SelectorSet::note`]).
    notes: bool,
}

/// Entries keyed by interned names, found by the bit of [`KeyFilter::atom_bit`]: where no
/// other name of the set shares its bit, a name is found by comparing two atoms, not hashing
/// (the walk looks up every attribute name and type of a page); where one does, by a map.
#[derive(Clone, Debug)]
pub(super) struct ByAtom<T> {
    entries: Vec<(LocalName, T)>,
    /// Per bit: [`ByAtom::NONE`], [`ByAtom::SHARED`], or the position of the one entry.
    slots: Box<[u16; 256]>,
    /// The positions of the entries whose bit is shared.
    shared: FxHashMap<LocalName, u32>,
}

impl<T> Default for ByAtom<T> {
    fn default() -> Self {
        ByAtom { entries: Vec::new(), slots: Box::new([Self::NONE; 256]), shared: FxHashMap::default() }
    }
}

impl<T> ByAtom<T> {
    const NONE: u16 = u16::MAX;
    const SHARED: u16 = u16::MAX - 1;

    pub(super) fn new(map: FxHashMap<LocalName, T>) -> ByAtom<T> {
        let mut index = ByAtom { entries: map.into_iter().collect(), ..ByAtom::default() };
        for (at, (name, _)) in index.entries.iter().enumerate() {
            let slot = &mut index.slots[usize::from(KeyFilter::atom_bit(name))];
            *slot = if *slot == Self::NONE && at < usize::from(Self::SHARED) { at as u16 } else { Self::SHARED };
        }
        for (at, (name, _)) in index.entries.iter().enumerate() {
            if index.slots[usize::from(KeyFilter::atom_bit(name))] == Self::SHARED {
                index.shared.insert(name.clone(), at as u32);
            }
        }
        index
    }

    pub(super) fn get(&self, name: &LocalName) -> Option<&T> {
        let at = match self.slots[usize::from(KeyFilter::atom_bit(name))] {
            Self::NONE => return None,
            Self::SHARED => *self.shared.get(name)? as usize,
            at => usize::from(at),
        };
        self.entries.get(at).filter(|(own, _)| own == name).map(|(_, value)| value)
    }

    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.entries.len()
    }

    pub(super) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// A 256-bit summary of a set of keys: a key whose bit is clear is not in the set. One bit per
/// key, so a set of a few dozen keys rules out most others; a large set rules out little but
/// costs a shift and a mask.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct KeyFilter([u64; 4]);

impl KeyFilter {
    pub(super) fn insert(&mut self, bit: u8) {
        self.0[usize::from(bit >> 6)] |= 1 << (bit & 63);
    }

    pub(super) fn may_hold(&self, bit: u8) -> bool {
        self.0[usize::from(bit >> 6)] >> (bit & 63) & 1 != 0
    }

    /// The bit of an id or class: its length and outer bytes, mixed.
    pub(super) fn str_bit(key: &str) -> u8 {
        let bytes = key.as_bytes();
        let (first, last) = (bytes.first().copied().unwrap_or(0), bytes.last().copied().unwrap_or(0));
        let mixed = (bytes.len() as u64 | u64::from(first) << 32 | u64::from(last) << 40)
            .wrapping_mul(0x9E37_79B9_7F4A_7C15);
        (mixed >> 56) as u8
    }

    /// The bit of an interned name, from the atom's identity: equal atoms have equal data
    /// (that is how they compare), so a name in the set always finds its bit.
    pub(super) fn atom_bit(name: &LocalName) -> u8 {
        (name.unsafe_data().wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 56) as u8
    }
}

/// The selectors filed under one attribute name.
#[derive(Clone, Debug, Default)]
pub(super) struct ByName {
    /// Selectors whose subject's first test is on the attribute (`a[href^="https://ad-host/"]`,
    /// lists hold hundreds): gathered when an element's value passes.
    pub(super) subject: ByValue,
    /// Selectors whose subject is a bare type or nothing, below a compound whose first test
    /// is on the attribute (`a[href^="https://ad-host/"] img`, `[data-x] > p`): an element
    /// whose value passes arms them for its descendants, so the images of a page are not
    /// each tested against every such rule up their ancestors.
    ancestor: ByValue,
}

/// Selectors filed by one test on an attribute's value.
#[derive(Clone, Debug, Default)]
pub(super) struct ByValue {
    /// Those whose test is a case-sensitive, non-empty `^=` or `=`, by the test's value, which
    /// must start the attribute's for the test to pass: a radix tree finds the few to test.
    keyed: PrefixTree,
    /// Those whose test is a case-sensitive, non-empty `*=`, when there are several (the lists
    /// test each link against a dozen `a[href*="..."]`): one scan of the value finds them all.
    pub(super) substrings: Option<Substrings>,
    /// The others, each tested.
    others: Vec<u32>,
}

/// From how many `*=` tests on one attribute one scan costs less than a search for each: on
/// the development pages a scan of a link cost about as much as six or seven searches. The
/// tests lower it so that their few selectors take both paths.
const SUBSTRINGS_TOGETHER: usize = if cfg!(test) { 2 } else { 8 };

/// Case-sensitive `*=` tests of one attribute, searched for together.
#[derive(Clone, Debug)]
pub(super) struct Substrings {
    /// Finds the tests' values; pattern `i` is the test of selector `selectors[i]`.
    searcher: aho_corasick::AhoCorasick,
    /// Whether any of the values occurs at all, for a vector unit: the values (`.ad-host.com/`)
    /// start with bytes that fill every URL, so the searcher above stops at each of them, while
    /// almost no value of a page holds any of them. `None` where the processor has no such unit.
    any: Option<aho_corasick::packed::Searcher>,
    selectors: Vec<u32>,
}

impl Substrings {
    /// Files `tests` (value, selector) together when there are enough of them to pay for an
    /// automaton; otherwise they go back to be tested one by one.
    fn new(tests: Vec<(String, u32)>, others: &mut Vec<u32>) -> Option<Substrings> {
        if tests.len() >= SUBSTRINGS_TOGETHER {
            let searcher = aho_corasick::AhoCorasick::new(tests.iter().map(|(value, _)| value));
            if let Ok(searcher) = searcher {
                let any = aho_corasick::packed::Searcher::new(tests.iter().map(|(value, _)| value));
                return Some(Substrings { searcher, any, selectors: tests.into_iter().map(|(_, c)| c).collect() });
            }
        }
        others.extend(tests.into_iter().map(|(_, c)| c));
        None
    }

    /// Pushes the selectors whose value occurs in `value`, each once.
    fn passing(&self, value: &str, out: &mut Vec<u32>) {
        // Leftmost-first finds a match wherever any value occurs: none, no test passes.
        if self.any.as_ref().is_some_and(|any| any.find(value).is_none()) {
            return;
        }
        let start = out.len();
        for found in self.searcher.find_overlapping_iter(value) {
            out.push(self.selectors[found.pattern().as_usize()]);
        }
        // A value may hold one needle twice, or two tests share a needle.
        if out.len() > start + 1 {
            out[start..].sort_unstable();
            let mut kept = start + 1;
            for at in start + 1..out.len() {
                if out[at] != out[kept - 1] {
                    out[kept] = out[at];
                    kept += 1;
                }
            }
            out.truncate(kept);
        }
    }
}

impl ByValue {
    /// Pushes the selectors whose test passes on `value`; the test is the first attribute test
    /// of compound `compound` of each.
    #[inline]
    fn passing(&self, complexes: &[Complex], compound: usize, value: &str, out: &mut Vec<u32>) {
        // Most names file selectors of one kind only (subject or ancestor): the other is empty,
        // and is told apart where the walk asks, without a call.
        if !self.is_empty() {
            self.tests_passing(complexes, compound, value, out);
        }
    }

    fn is_empty(&self) -> bool {
        self.keyed.is_empty() && self.substrings.is_none() && self.others.is_empty()
    }

    /// [`ByValue::passing`] for a non-empty filing.
    fn tests_passing(&self, complexes: &[Complex], compound: usize, value: &str, out: &mut Vec<u32>) {
        let passes = |c: u32| complexes[c as usize].compounds[compound].attrs[0].matches_value(value);
        let start = out.len();
        self.keyed.prefixes_of(value.as_bytes(), out);
        let mut kept = start;
        for at in start..out.len() {
            let c = out[at];
            if passes(c) {
                out[kept] = c;
                kept += 1;
            }
        }
        out.truncate(kept);
        if let Some(substrings) = &self.substrings {
            substrings.passing(value, out);
        }
        // Plain loops here and in `arm`: what the compiler made of the iterator adapters
        // changed with unrelated code elsewhere in the crate, by tens of thousands of
        // instructions a page.
        for &c in &self.others {
            if passes(c) {
                out.push(c);
            }
        }
    }
}

/// The selectors filed under one id or class.
#[derive(Clone, Debug, Default)]
pub(super) struct Filed {
    /// Some selector is that id or class and nothing else (`#ad`, `.ad-banner`: most of the
    /// lists' rules), so an element holding the key matches without any test.
    pub(super) alone: bool,
    /// The key is noted ([`SelectorSet::note`]): the walk reports it where it occurs.
    noted: bool,
    /// The other selectors filed there, to be tested on the element.
    pub(super) others: Vec<u32>,
}

impl SelectorSet {
    /// Indexes the complex selectors of all the lists given.
    pub fn new(selectors: impl IntoIterator<Item = Selector>) -> Self {
        // Per attribute name, subject then ancestor: the (value, selector) entries of keyed
        // tests, made into radix trees at the end, those of substring tests, and the other
        // selectors.
        type Lists = [(Vec<(String, u32)>, Vec<(String, u32)>, Vec<u32>); 2];
        let mut set = SelectorSet::default();
        let mut by_name: FxHashMap<LocalName, Lists> = FxHashMap::default();
        let mut by_tag: FxHashMap<LocalName, Vec<u32>> = FxHashMap::default();
        for complex in selectors.into_iter().flat_map(|s| s.complexes) {
            let index = set.complexes.len() as u32;
            let subject = &complex.compounds[0];
            let keyed = if let Some(id) = subject.ids.first() {
                Some(set.by_id.entry(id.clone()).or_default())
            } else if let Some(class) = subject.classes.first() {
                Some(set.by_class.entry(class.clone()).or_default())
            } else {
                None
            };
            let bucket = if let Some(filed) = keyed {
                if complex.is_key_alone() {
                    filed.alone = true;
                    set.complexes.push(complex);
                    continue;
                }
                &mut filed.others
            } else if let Some((which, attr)) = subject.attrs.first().map(|a| (0, a)).or_else(|| {
                ancestor_key(&complex).map(|a| (1, a))
            }) {
                let (keyed, substrings, others) = &mut by_name.entry(attr.name.clone()).or_default()[which];
                if is_value_key(attr) {
                    keyed.push((attr.value.clone(), index));
                } else if is_substring_key(attr) {
                    substrings.push((attr.value.clone(), index));
                } else {
                    others.push(index);
                }
                set.complexes.push(complex);
                continue;
            } else if let Some(tag) = &subject.tag {
                by_tag.entry(LocalName::from(tag.as_str())).or_default()
            } else {
                &mut set.everywhere
            };
            bucket.push(index);
            set.complexes.push(complex);
        }
        let by_value = |(keyed, substrings, mut others)| ByValue {
            keyed: PrefixTree::new(keyed),
            substrings: Substrings::new(substrings, &mut others),
            others,
        };
        set.by_name = ByAtom::new(
            by_name
                .into_iter()
                .map(|(name, [subject, ancestor])| {
                    (name, ByName { subject: by_value(subject), ancestor: by_value(ancestor) })
                })
                .collect(),
        );
        set.by_tag = ByAtom::new(by_tag);
        set.ids = set.by_id.keys().fold(KeyFilter::default(), |mut f, k| (f.insert(KeyFilter::str_bit(k)), f).1);
        set.classes =
            set.by_class.keys().fold(KeyFilter::default(), |mut f, k| (f.insert(KeyFilter::str_bit(k)), f).1);
        set
    }

    /// Notes a class (`is_class`) or id: [`SelectorSet::matching_any`] reports where the page
    /// holds it. For a caller that also wants to know which of some keys a page uses (the ad
    /// remover counts the rules it could not parse, by the class or id that keys them): the
    /// walk looks every class and id up anyway, and one lookup then serves both.
    pub fn note(&mut self, is_class: bool, key: &str) {
        let (map, filter) = if is_class { (&mut self.by_class, &mut self.classes) } else { (&mut self.by_id, &mut self.ids) };
        map.entry(key.to_string()).or_default().noted = true;
        filter.insert(KeyFilter::str_bit(key));
        self.notes = true;
    }

    /// The number of complex selectors in the set (a list counts once per member).
    pub fn len(&self) -> usize {
        self.complexes.len()
    }

    /// True when the set holds no selector and so matches nothing.
    pub fn is_empty(&self) -> bool {
        self.complexes.is_empty()
    }

    /// The elements of the subtree of `root` matched by any selector of the set, in document
    /// order, each once. Removed subtrees are skipped.
    pub fn matching(&self, tree: &Tree, root: NodeId) -> Vec<NodeId> {
        if self.complexes.is_empty() {
            return Vec::new();
        }
        walk(&[self], tree, root, None)
    }

    /// The elements of the subtree of `root` matched by any selector of any of `sets`, in
    /// document order, each once: the union of their [`SelectorSet::matching`], found in one
    /// walk that reads each element's attributes once instead of once per set.
    ///
    /// `on_key` is shown every class name (`true`) and every non-empty id (`false`) of the
    /// elements walked that a set notes ([`SelectorSet::note`]), in document order, repeats
    /// included, once per set that notes it.
    pub fn matching_any(
        sets: &[&SelectorSet],
        tree: &Tree,
        root: NodeId,
        mut on_key: impl FnMut(bool, &str),
    ) -> Vec<NodeId> {
        walk(sets, tree, root, Some(&mut on_key))
    }
}

/// What [`SelectorSet::matching_any`] shows each noted class (`true`) and id (`false`).
type OnKey<'a> = &'a mut dyn FnMut(bool, &str);

/// The walk behind [`SelectorSet::matching`] and [`SelectorSet::matching_any`].
///
/// An element that holds the key of a bare `.class` or `#id` selector is matched at once; its
/// remaining attributes are then only read for `on_key`.
fn walk(sets: &[&SelectorSet], tree: &Tree, root: NodeId, mut on_key: Option<OnKey<'_>>) -> Vec<NodeId> {
    let mut found = Vec::new();
    let sets: Vec<&SelectorSet> = sets.iter().copied().filter(|s| !s.is_empty() || s.notes).collect();
    if sets.is_empty() {
        return found;
    }
    let by_name = sets.iter().any(|s| !s.by_name.is_empty());
    let by_tag = sets.iter().any(|s| !s.by_tag.is_empty());
    // The selectors armed by an open ancestor (see `ByName::ancestor`): the end of that
    // ancestor's subtree, the set and the selector. Ancestors open in document order and
    // their subtrees nest, so the innermost is on top and leaves first.
    let mut armed: Vec<(u32, u32, u32)> = Vec::new();
    let mut scratch = Vec::new();
    if by_name {
        let mut above: Vec<NodeId> = tree.ancestors(root).collect();
        above.reverse();
        for ancestor in above {
            let ns = tree.element(ancestor).map_or(Ns::Html, |e| e.ns);
            for (name, value) in tree.attrs(ancestor) {
                let name = lowercase(name, ns);
                for (number, set) in sets.iter().enumerate() {
                    if let Some(filed) = set.by_name.get(&name) {
                        let at = (tree.nodes[ancestor.index()].end, number as u32);
                        arm(&filed.ancestor, &set.complexes, value, at, &mut armed, &mut scratch);
                    }
                }
            }
        }
    }
    let split_classes = sets.iter().any(|s| !s.by_class.is_empty());
    let mut candidates: Vec<Vec<u32>> = vec![Vec::new(); sets.len()];
    for id in tree.walk(root) {
        let Some(element) = tree.element(id) else {
            continue;
        };
        let mut matched = false;
        let tag = by_tag.then(|| lowercase(&element.name, element.ns));
        for (set, out) in sets.iter().zip(&mut candidates) {
            out.clear();
            if !set.everywhere.is_empty() {
                out.extend_from_slice(&set.everywhere);
            }
            if let Some(hits) = tag.as_ref().and_then(|tag| set.by_tag.get(tag)) {
                out.extend_from_slice(hits);
            }
        }
        if by_name {
            while armed.last().is_some_and(|&(end, _, _)| end <= id.0) {
                armed.pop();
            }
            for &(_, set, index) in &armed {
                candidates[set as usize].push(index);
            }
        }
        for (name, value) in tree.attrs(id) {
            if by_name {
                // Keys are interned names, so a lookup hashes a number, not a string: the
                // element's own names are already atoms, lower case for every HTML name; a
                // foreign camel-cased one is lowered (and interned) first.
                let name = lowercase(name, element.ns);
                for (number, (set, out)) in sets.iter().zip(&mut candidates).enumerate() {
                    let Some(filed) = set.by_name.get(&name) else {
                        continue;
                    };
                    if !matched {
                        filed.subject.passing(&set.complexes, 0, value, out);
                    }
                    let at = (tree.nodes[id.index()].end, number as u32);
                    arm(&filed.ancestor, &set.complexes, value, at, &mut armed, &mut scratch);
                }
            }
            if *name == local_name!("id") {
                if !value.is_empty() {
                    gather_key(&sets, false, value, &mut candidates, &mut matched, &mut on_key);
                }
            } else if *name == local_name!("class") && split_classes {
                // ASCII whitespace as std splits it is CSS whitespace: space, tab, line feed,
                // form feed, carriage return; split on bytes, with no empty pieces.
                for class in ClassTokens::of(value) {
                    gather_key(&sets, true, class, &mut candidates, &mut matched, &mut on_key);
                }
            }
        }
        let tested = || {
            sets.iter()
                .zip(&candidates)
                .any(|(set, found)| found.iter().any(|&c| set.complexes[c as usize].matches(tree, id)))
        };
        if matched || tested() {
            found.push(id);
        }
    }
    found
}

/// Arms the selectors of `filed` (`ByName::ancestor`) that an attribute of value `value`
/// passes, for the descendants of its element: `at` is the end of the element's subtree and
/// the set's number in the walk. `found` is scratch space.
#[inline]
fn arm(
    filed: &ByValue,
    complexes: &[Complex],
    value: &str,
    at: (u32, u32),
    armed: &mut Vec<(u32, u32, u32)>,
    found: &mut Vec<u32>,
) {
    if filed.is_empty() {
        return;
    }
    found.clear();
    filed.passing(complexes, 1, value, found);
    for &index in found.iter() {
        armed.push((at.0, at.1, index));
    }
}

/// Looks `key` up in the class (`is_class`) or id index of every set: `matched` turns true
/// when some set has a bare selector of that key (the element matches), else the selectors to
/// test join `out`. Once the element is matched only the sets that note keys look it up, for
/// `on_key`.
fn gather_key(
    sets: &[&SelectorSet],
    is_class: bool,
    key: &str,
    out: &mut [Vec<u32>],
    matched: &mut bool,
    on_key: &mut Option<OnKey<'_>>,
) {
    let bit = KeyFilter::str_bit(key);
    for (set, out) in sets.iter().zip(out) {
        let (index, filter) = if is_class { (&set.by_class, &set.classes) } else { (&set.by_id, &set.ids) };
        if (*matched && !set.notes) || !filter.may_hold(bit) {
            continue;
        }
        let Some(filed) = index.get(key) else {
            continue;
        };
        if filed.noted {
            if let Some(on_key) = on_key.as_mut() {
                on_key(is_class, key);
            }
        }
        if *matched {
            continue;
        }
        if filed.alone {
            *matched = true;
        } else {
            out.extend_from_slice(&filed.others);
        }
    }
}

/// The first attribute test of the compound right above the subject, reached by a child or
/// descendant combinator: what arms the selector (see `ByName::ancestor`).
fn ancestor_key(complex: &Complex) -> Option<&AttrTest> {
    if !matches!(complex.combinators.first(), Some(Combinator::Child | Combinator::Descendant)) {
        return None;
    }
    complex.compounds.get(1)?.attrs.first()
}

/// Whether an attribute test can be filed in a radix tree by its value: it passes only where
/// its value starts the attribute's.
fn is_value_key(test: &AttrTest) -> bool {
    matches!(test.op, AttrOp::Prefix | AttrOp::Equals) && !test.ignore_case && !test.value.is_empty()
}

/// Whether an attribute test can be searched for with others of its attribute: it passes
/// where its value occurs in the attribute's, letter case as written.
fn is_substring_key(test: &AttrTest) -> bool {
    test.op == AttrOp::Substring && !test.ignore_case && !test.value.is_empty()
}

/// `name`, the name of an element in namespace `ns` or of one of its attributes, in ASCII
/// lower case: itself when it already is (every name of an HTML element, as parsed), else
/// interned.
fn lowercase(name: &LocalName, ns: Ns) -> std::borrow::Cow<'_, LocalName> {
    if ns == Ns::Html || !name.bytes().any(|b| b.is_ascii_uppercase()) {
        return std::borrow::Cow::Borrowed(name);
    }
    std::borrow::Cow::Owned(LocalName::from(name.to_ascii_lowercase()))
}

/// The names of a `class` value: what [`str::split_ascii_whitespace`] yields, found eight
/// bytes at a time (the walk splits every `class` of a page, and most bytes are not spaces).
pub(super) struct ClassTokens<'a> {
    text: &'a str,
    at: usize,
}

impl<'a> ClassTokens<'a> {
    pub(super) fn of(text: &'a str) -> ClassTokens<'a> {
        ClassTokens { text, at: 0 }
    }
}

impl<'a> Iterator for ClassTokens<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        let bytes = self.text.as_bytes();
        let start = self.at + bytes.get(self.at..)?.iter().position(|&b| !b.is_ascii_whitespace())?;
        let end = next_ascii_whitespace(bytes, start + 1);
        self.at = end;
        // Cut at ASCII bytes: character boundaries.
        self.text.get(start..end)
    }
}

/// The position of the first ASCII whitespace byte of `bytes` at or after `from`, else the
/// length.
fn next_ascii_whitespace(bytes: &[u8], mut from: usize) -> usize {
    const LOW: u64 = 0x2121_2121_2121_2121;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    while let Some(chunk) = bytes.get(from..from + 8) {
        let word = u64::from_le_bytes(chunk.try_into().expect("eight bytes"));
        // The lowest byte flagged is the first below 0x21, as every ASCII whitespace byte is
        // (the borrow may flag bytes above it; bytes from 0x80 up are never flagged).
        let below = word.wrapping_sub(LOW) & !word & HIGH;
        if below == 0 {
            from += 8;
            continue;
        }
        let first = from + (below.trailing_zeros() / 8) as usize;
        if bytes[first].is_ascii_whitespace() {
            return first;
        }
        from = first + 1; // a control character that is not whitespace
    }
    bytes[from.min(bytes.len())..]
        .iter()
        .position(u8::is_ascii_whitespace)
        .map_or(bytes.len(), |k| from + k)
}

