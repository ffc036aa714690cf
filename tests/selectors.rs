//! The selector engine's spec suite: every form the syntax of `dom::select` claims (its module
//! doc), matched on small documents, and every form it refuses, with the kind of refusal.
//!
//! Each case names the elements it expects by their `id` (an element without one by its tag
//! name), in document order. A case is checked three ways, which must agree: the selector
//! alone over the whole tree ([`select_all`]), the selector's own test on every element
//! ([`Selector::matches`]), and the bulk index ([`SelectorSet::matching`]), which files each
//! selector under a key and walks the tree once.

use pith::dom::select::{select_all, Selector, SelectorErrorKind, SelectorSet};
use pith::dom::Tree;

/// Parents, children and siblings, with ids, classes and attributes of every shape.
const DOC: &str = r#"<!DOCTYPE html><html><head><title>t</title></head><body>
<div id="outer" class="box wide" lang="en-GB" data-x="alpha-beta">
  <p id="p1" class="lead">one <a id="a1" href="https://example.com/one.pdf" rel="nofollow noopener">link</a></p>
  <p id="p2" title="Hello World">two <span id="s1" class="note">note</span></p>
  <ul id="list">
    <li id="li1" class="item first">1</li>
    <li id="li2" class="item">2</li>
    <li id="li3" class="item last" data-n="">3</li>
  </ul>
  <section id="sec" lang="en"><div id="inner" class="box"><em id="em1">deep</em></div></section>
</div>
<div id="other" class="Box" data-x="ALPHA"><span id="s2" class="note   extra">x</span></div>
</body></html>"#;

/// The labels of `ids`: each element's `id`, else its tag name.
fn labels(tree: &Tree, ids: &[pith::dom::NodeId]) -> Vec<String> {
    ids.iter()
        .map(|&id| tree.attr(id, "id").map_or_else(|| tree.element(id).expect("an element").name.to_string(), str::to_string))
        .collect()
}

/// Parses `selector` and checks that its three ways of matching in `doc` agree on `expected`.
fn check(doc: &str, selector: &str, expected: &[&str]) {
    let tree = Tree::parse(doc);
    let sel = Selector::parse(selector).unwrap_or_else(|e| panic!("{selector:?} should parse: {e}"));
    let alone = labels(&tree, &select_all(&tree, tree.root(), &sel));
    assert_eq!(alone, expected, "{selector:?}: select_all");
    let each: Vec<_> = tree.walk(tree.root()).filter(|&id| sel.matches(&tree, id)).collect();
    assert_eq!(labels(&tree, &each), expected, "{selector:?}: Selector::matches");
    let set = SelectorSet::new([sel]);
    assert_eq!(labels(&tree, &set.matching(&tree, tree.root())), expected, "{selector:?}: SelectorSet::matching");
}

/// `selects!(name, "selector", ["id", ...])` over [`DOC`]; `selects!(name, doc, ...)` over
/// another document.
macro_rules! selects {
    ($name:ident, $selector:expr, [$($id:expr),* $(,)?]) => {
        #[test]
        fn $name() {
            check(DOC, $selector, &[$($id),*]);
        }
    };
    ($name:ident, $doc:expr, $selector:expr, [$($id:expr),* $(,)?]) => {
        #[test]
        fn $name() {
            check($doc, $selector, &[$($id),*]);
        }
    };
}

/// `refuses!(name, "selector", Unsupported | Syntax)`: the selector is an error of that kind.
macro_rules! refuses {
    ($name:ident, $selector:expr, $kind:ident) => {
        #[test]
        fn $name() {
            match Selector::parse($selector) {
                Ok(sel) => panic!("{:?} should be refused, parsed as {sel:?}", $selector),
                Err(e) => assert!(matches!(e.kind, SelectorErrorKind::$kind { .. }), "{:?}: {e}", $selector),
            }
        }
    };
}

// Type selectors and the universal selector.
selects!(type_selector, "li", ["li1", "li2", "li3"]);
selects!(type_selector_is_case_insensitive, "LI", ["li1", "li2", "li3"]);
selects!(universal_inside_a_parent, "ul > *", ["li1", "li2", "li3"]);
selects!(universal_with_a_class, "*.note", ["s1", "s2"]);

// Ids and classes.
selects!(id, "#p2", ["p2"]);
selects!(id_with_type, "p#p2", ["p2"]);
selects!(id_of_another_type, "div#p2", []);
selects!(class, ".item", ["li1", "li2", "li3"]);
selects!(classes_together, ".item.first", ["li1"]);
selects!(class_is_case_sensitive, ".box", ["outer", "inner"]);
selects!(class_split_on_any_ascii_whitespace, ".extra", ["s2"]);
selects!(class_is_a_whole_word, ".ite", []);
selects!(id_and_class, "#outer.wide", ["outer"]);

// Attribute presence and the six operators.
selects!(attr_exists, "[data-x]", ["outer", "other"]);
selects!(attr_exists_with_an_empty_value, "[data-n]", ["li3"]);
selects!(attr_name_is_case_insensitive, "[DATA-X]", ["outer", "other"]);
selects!(attr_equals, "[data-x=\"alpha-beta\"]", ["outer"]);
selects!(attr_equals_unquoted, "[data-x=alpha-beta]", ["outer"]);
selects!(attr_equals_single_quoted, "[title='Hello World']", ["p2"]);
selects!(attr_equals_empty, "[data-n=\"\"]", ["li3"]);
selects!(attr_value_is_case_sensitive, "[data-x=alpha]", []);
selects!(attr_i_flag, "[data-x=alpha i]", ["other"]);
selects!(attr_s_flag, "[data-x=ALPHA s]", ["other"]);
selects!(attr_includes, "[rel~=noopener]", ["a1"]);
selects!(attr_includes_is_a_whole_word, "[rel~=noop]", []);
selects!(attr_includes_never_matches_white_space, "[title~=\"Hello World\"]", []);
selects!(attr_dash_match_exact, "[lang|=en]", ["outer", "sec"]);
selects!(attr_dash_match_is_the_first_part, "[lang|=GB]", []);
selects!(attr_prefix, "[href^=\"https://\"]", ["a1"]);
selects!(attr_prefix_empty_never_matches, "[href^=\"\"]", []);
selects!(attr_suffix, "[href$=\".pdf\"]", ["a1"]);
selects!(attr_suffix_i_flag, "[href$=\".PDF\" i]", ["a1"]);
selects!(attr_substring, "[href*=example]", ["a1"]);
selects!(attr_substring_empty_never_matches, "[href*=\"\"]", []);
selects!(attr_with_type, "div[data-x]", ["outer", "other"]);
selects!(attrs_together, "[lang][data-x]", ["outer"]);

// Combinators.
selects!(descendant, "#outer em", ["em1"]);
selects!(descendant_any_depth, "div .box", ["inner"]);
selects!(child, "#outer > p", ["p1", "p2"]);
selects!(child_is_only_the_parent, "#outer > em", []);
selects!(next_sibling, "#li1 + li", ["li2"]);
selects!(next_sibling_skips_text, "#p1 + p", ["p2"]);
selects!(later_sibling, "#li1 ~ li", ["li2", "li3"]);
selects!(later_sibling_not_earlier, "#li3 ~ li", []);
selects!(combinators_without_spaces, "ul>li+li~li", ["li3"]);
selects!(chain_of_combinators, "div > section div > em", ["em1"]);
selects!(descendant_after_a_child, "#outer > section em", ["em1"]);
selects!(child_pair_must_hold_somewhere_above, "div > div em", []);
selects!(sibling_then_descendant, "#p2 ~ ul .last", ["li3"]);

// Selector lists, in document order and each element once.
selects!(list, "#s2, #p1, .lead", ["p1", "s2"]);
selects!(list_with_spaces, " li.first ,li.last ", ["li1", "li3"]);

// :not(), :first-child, :last-child.
selects!(not_class, "li:not(.first)", ["li2", "li3"]);
selects!(not_list, "li:not(.first, .last)", ["li2"]);
selects!(not_compound, "li:not(.item.last)", ["li1", "li2"]);
selects!(not_attribute, "div:not([data-x])", ["inner"]);
selects!(not_type, "#outer > :not(p)", ["list", "sec"]);
selects!(not_twice, "li:not(.first):not(.last)", ["li2"]);
selects!(first_child, "li:first-child", ["li1"]);
selects!(last_child, "li:last-child", ["li3"]);
selects!(first_and_last_child, "em:first-child:last-child", ["em1"]);
selects!(first_child_ignores_text, "#p1 > a:first-child", ["a1"]);
selects!(pseudo_class_name_is_case_insensitive, "li:FIRST-CHILD", ["li1"]);

// CSS escapes in names and values.
selects!(escaped_id, "<p id=\"a:b\">x</p><p id=\"1st\">y</p>", "#a\\:b", ["a:b"]);
selects!(escaped_leading_digit, "<p id=\"a:b\">x</p><p id=\"1st\">y</p>", "#\\31 st", ["1st"]);
selects!(escaped_class, "<p id=\"c\" class=\"w-1/2\">x</p>", ".w-1\\/2", ["c"]);
selects!(escaped_quote_in_value, "<p id=\"q\" title='say \"hi\"'>x</p>", "[title=\"say \\\"hi\\\"\"]", ["q"]);

// Valid CSS beyond the subset: refused as unsupported, never matched as something else.
refuses!(has, "div:has(p)", Unsupported);
refuses!(nth_child, "li:nth-child(2)", Unsupported);
refuses!(hover, "a:hover", Unsupported);
refuses!(pseudo_element, "p::before", Unsupported);
refuses!(namespace_type, "svg|rect", Unsupported);
refuses!(namespace_attribute, "[xlink|href]", Unsupported);
refuses!(any_namespace_attribute, "[*|href]", Unsupported);
refuses!(nested_not, "p:not(:not(.a))", Unsupported);
refuses!(complex_in_not, "p:not(div p)", Unsupported);
refuses!(procedural_list_form, "div:-abp-contains(Sponsored)", Unsupported);

// Not selectors at all.
refuses!(empty, "", Syntax);
refuses!(only_space, "   ", Syntax);
refuses!(trailing_comma, "p,", Syntax);
refuses!(leading_combinator, "> p", Syntax);
refuses!(trailing_combinator, "p >", Syntax);
refuses!(double_combinator, "p > > a", Syntax);
refuses!(unclosed_attribute, "[href", Syntax);
refuses!(unknown_attribute_operator, "[href!=x]", Syntax);
refuses!(unclosed_string, "[title=\"x]", Syntax);
refuses!(unclosed_not, "p:not(.a", Syntax);
refuses!(bare_hash, "#", Syntax);
refuses!(bare_dot, "p.", Syntax);
refuses!(digit_class, ".1a", Syntax);
