//! The `[attr^=value]` index of a [`super::SelectorSet`]: which of many prefixes start a value.
//!
//! The lists file hundreds of `a[href^="https://ad-host/"]` under `href`, and every link of a
//! page asks which of them start its URL. A sorted list answered in a handful of binary
//! searches, each comparing whole strings; a radix tree answers in one pass over the part of
//! the value the prefixes share, which for a page's ordinary links ends a few bytes into the
//! host. Its nodes are at most twice the prefixes, so a host's copy stays as small as the list.

/// A radix tree of byte strings, each standing for a selector.
#[derive(Clone, Debug, Default)]
pub(super) struct PrefixTree {
    /// `nodes[0]` is the root; empty when the tree holds nothing.
    nodes: Vec<Node>,
}

#[derive(Clone, Debug, Default)]
struct Node {
    /// The bytes this node adds to its parent's path, after the byte of the edge to it.
    label: Box<[u8]>,
    /// The selectors whose prefix ends here.
    ends: Vec<u32>,
    /// The byte that follows the label, and the node it leads to; no two share a byte.
    children: Vec<(u8, u32)>,
}

impl PrefixTree {
    /// The tree of `(prefix, selector)` entries; equal prefixes keep every selector.
    pub(super) fn new(mut entries: Vec<(String, u32)>) -> PrefixTree {
        entries.sort_unstable();
        let mut tree = PrefixTree::default();
        if !entries.is_empty() {
            let entries: Vec<(&[u8], u32)> =
                entries.iter().map(|(p, i)| (p.as_bytes(), *i)).collect();
            tree.build(&entries, 0);
        }
        tree
    }

    /// Adds the node for `entries` (sorted, all agreeing on their first `depth` bytes and at
    /// least that long) and returns its index.
    fn build(&mut self, entries: &[(&[u8], u32)], depth: usize) -> u32 {
        // Sorted, so what the first and last share, all share.
        let (first, last) = (entries[0].0, entries[entries.len() - 1].0);
        let shared = first[depth..]
            .iter()
            .zip(&last[depth..])
            .take_while(|(a, b)| a == b)
            .count();
        let end = depth + shared;
        // A prefix sorts before what it starts, so those ending here come first.
        let ending = entries.iter().take_while(|(p, _)| p.len() == end).count();
        let index = self.nodes.len();
        self.nodes.push(Node {
            label: first[depth..end].into(),
            ends: entries[..ending].iter().map(|&(_, i)| i).collect(),
            children: Vec::new(),
        });
        let mut rest = &entries[ending..];
        while let Some(&(head, _)) = rest.first() {
            let byte = head[end];
            let count = rest.iter().take_while(|(p, _)| p[end] == byte).count();
            let child = self.build(&rest[..count], end + 1);
            self.nodes[index].children.push((byte, child));
            rest = &rest[count..];
        }
        index as u32
    }

    /// Pushes every selector whose prefix starts `value`.
    pub(super) fn prefixes_of(&self, value: &[u8], out: &mut Vec<u32>) {
        let Some(mut node) = self.nodes.first() else {
            return;
        };
        let mut rest = value;
        loop {
            // Labels are a few bytes: compared in place, not by a call to the library's memcmp.
            let label = &*node.label;
            if rest.len() < label.len() || !label.iter().zip(rest).all(|(a, b)| a == b) {
                return;
            }
            let tail = &rest[label.len()..];
            if !node.ends.is_empty() {
                out.extend_from_slice(&node.ends);
            }
            let Some((&byte, tail)) = tail.split_first() else {
                return;
            };
            let Some(&(_, child)) = node.children.iter().find(|&&(b, _)| b == byte) else {
                return;
            };
            node = &self.nodes[child as usize];
            rest = tail;
        }
    }

    /// True when the tree holds no prefix.
    pub(super) fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::PrefixTree;
    use proptest::prelude::*;

    fn found(tree: &PrefixTree, value: &str) -> Vec<u32> {
        let mut out = Vec::new();
        tree.prefixes_of(value.as_bytes(), &mut out);
        out.sort_unstable();
        out
    }

    fn expected(prefixes: &[&str], value: &str) -> Vec<u32> {
        (0..prefixes.len() as u32)
            .filter(|&i| value.starts_with(prefixes[i as usize]))
            .collect()
    }

    #[test]
    fn finds_every_prefix_of_a_value() {
        let prefixes = [
            "http",
            "http://a",
            "http://aa",
            "http://ab/x",
            "http://ab",
            "http://ab",
            "http://ac",
            "https://",
            "//",
            "/",
            "http://ab/x/y/z",
            "zzz",
            "",
        ];
        let tree = PrefixTree::new(
            prefixes
                .iter()
                .enumerate()
                .map(|(i, p)| (p.to_string(), i as u32))
                .collect(),
        );
        for value in [
            "http://ab/x/y",
            "http://ab",
            "http://a",
            "http://b",
            "https://x",
            "//cdn",
            "/p",
            "h",
            "",
            "zzzz",
            "http://aa/",
            "http://ab/x/y/z/w",
        ] {
            assert_eq!(found(&tree, value), expected(&prefixes, value), "{value:?}");
        }
    }

    #[test]
    fn an_empty_tree_finds_nothing() {
        let tree = PrefixTree::new(Vec::new());
        assert!(tree.is_empty());
        assert_eq!(found(&tree, "http://x/"), Vec::<u32>::new());
    }

    proptest! {
        #[test]
        fn agrees_with_testing_every_prefix(
            prefixes in proptest::collection::vec("[ab/]{0,6}", 0..24),
            values in proptest::collection::vec("[ab/c]{0,8}", 1..8),
        ) {
            let tree = PrefixTree::new(
                prefixes.iter().enumerate().map(|(i, p)| (p.clone(), i as u32)).collect(),
            );
            let refs: Vec<&str> = prefixes.iter().map(String::as_str).collect();
            for value in &values {
                prop_assert_eq!(found(&tree, value), expected(&refs, value));
            }
        }
    }
}
