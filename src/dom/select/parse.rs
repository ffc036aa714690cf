//! The selector parser: text to right-to-left [`Complex`] selectors.
//!
//! A hand-written recursive-descent parser over the CSS Selectors grammar, cut down to the subset
//! the engine matches. Recursion is bounded: one level for `:not()`, whose argument may not hold
//! another `:not()`. Names and values follow CSS's token rules (identifiers, quoted strings,
//! escapes); an unquoted attribute value may also start with a digit, as old pages and lists
//! write `[width=300]`.

use super::{
    is_ascii_whitespace, AttrOp, AttrTest, Combinator, Complex, Compound, Finder, LocalName,
    SelectorErrorKind, MAX_COMPOUNDS,
};

type Result<T> = std::result::Result<T, SelectorErrorKind>;

/// A cursor over one selector text.
pub(super) struct Parser<'a> {
    text: &'a str,
    pos: usize,
}

impl<'a> Parser<'a> {
    pub(super) fn new(text: &'a str) -> Parser<'a> {
        Parser { text, pos: 0 }
    }

    /// The whole text as a selector list.
    pub(super) fn list(mut self) -> Result<Vec<Complex>> {
        let mut complexes = Vec::new();
        loop {
            self.skip_whitespace();
            complexes.push(self.complex()?);
            self.skip_whitespace();
            match self.peek() {
                None => return Ok(complexes),
                Some(',') => self.pos += 1,
                Some(c) => return Err(self.unexpected(c)),
            }
        }
    }

    fn complex(&mut self) -> Result<Complex> {
        let mut compounds = vec![self.compound(true)?];
        let mut combinators = Vec::new();
        loop {
            let spaced = self.skip_whitespace();
            let combinator = match self.peek() {
                None | Some(',') => break,
                Some('>') => Combinator::Child,
                Some('+') => Combinator::NextSibling,
                Some('~') => Combinator::LaterSibling,
                Some(_) if spaced => Combinator::Descendant,
                Some(c) => return Err(self.unexpected(c)),
            };
            if combinator != Combinator::Descendant {
                self.pos += 1;
                self.skip_whitespace();
            }
            if compounds.len() == MAX_COMPOUNDS {
                return Err(SelectorErrorKind::Unsupported(format!(
                    "a chain of more than {MAX_COMPOUNDS} compound selectors"
                )));
            }
            combinators.push(combinator);
            compounds.push(self.compound(true)?);
        }
        compounds.reverse();
        combinators.reverse();
        Ok(Complex {
            compounds,
            combinators,
        })
    }

    /// A compound selector; `:not()` is allowed in it only at the top level.
    fn compound(&mut self, allow_not: bool) -> Result<Compound> {
        let start = self.pos;
        let mut compound = Compound::default();
        if self.eat('*') {
            // The universal selector adds no condition.
        } else if self.at_ident() {
            compound.tag = Some(self.ident()?.to_ascii_lowercase());
        }
        if self.peek() == Some('|') {
            return Err(SelectorErrorKind::Unsupported("a namespace prefix".into()));
        }
        loop {
            match self.peek() {
                Some('#') => {
                    self.pos += 1;
                    compound.ids.push(self.required_ident("an id after `#`")?);
                }
                Some('.') => {
                    self.pos += 1;
                    compound
                        .classes
                        .push(self.required_ident("a class after `.`")?);
                }
                Some('[') => compound.attrs.push(self.attribute()?),
                Some(':') => self.pseudo_class(&mut compound, allow_not)?,
                _ => break,
            }
        }
        if self.pos == start {
            return Err(match self.peek() {
                Some(c) => self.unexpected(c),
                None => self.syntax("expected a selector"),
            });
        }
        Ok(compound)
    }

    fn pseudo_class(&mut self, compound: &mut Compound, allow_not: bool) -> Result<()> {
        self.pos += 1; // ':'
        if self.eat(':') {
            let name = self.ident().unwrap_or_default();
            return Err(SelectorErrorKind::Unsupported(format!(
                "the pseudo-element `::{name}`"
            )));
        }
        let name = self
            .required_ident("a pseudo-class after `:`")?
            .to_ascii_lowercase();
        let function = self.eat('(');
        match (name.as_str(), function) {
            ("first-child", false) => compound.first_child = true,
            ("last-child", false) => compound.last_child = true,
            ("not", true) if allow_not => compound.negate(self.negated()?),
            ("not", true) => {
                return Err(SelectorErrorKind::Unsupported(
                    "`:not()` inside `:not()`".into(),
                ))
            }
            (_, true) => {
                return Err(SelectorErrorKind::Unsupported(format!("`:{name}()`")));
            }
            (_, false) => return Err(SelectorErrorKind::Unsupported(format!("`:{name}`"))),
        }
        Ok(())
    }

    /// The compound selectors of `:not(a, b)`, after the opening parenthesis.
    fn negated(&mut self) -> Result<Vec<Compound>> {
        let mut negated = Vec::new();
        loop {
            self.skip_whitespace();
            negated.push(self.compound(false)?);
            self.skip_whitespace();
            match self.peek() {
                Some(',') => self.pos += 1,
                Some(')') => {
                    self.pos += 1;
                    return Ok(negated);
                }
                None => return Err(self.syntax("unclosed `:not(`")),
                Some(_) => {
                    return Err(SelectorErrorKind::Unsupported(
                        "a complex selector inside `:not()`".into(),
                    ))
                }
            }
        }
    }

    /// `[name]` or `[name OP value FLAG]`, at the `[`.
    fn attribute(&mut self) -> Result<AttrTest> {
        self.pos += 1; // '['
        self.skip_whitespace();
        if self.peek() == Some('|') || self.peek() == Some('*') {
            return Err(SelectorErrorKind::Unsupported(
                "a namespace prefix in an attribute selector".into(),
            ));
        }
        let name = LocalName::from(
            self.required_ident("an attribute name after `[`")?
                .to_ascii_lowercase(),
        );
        self.skip_whitespace();
        let op = match self.bump() {
            Some(']') => {
                return Ok(AttrTest {
                    name,
                    op: AttrOp::Exists,
                    value: String::new(),
                    ignore_case: false,
                    finder: None,
                })
            }
            Some('=') => AttrOp::Equals,
            Some(c @ ('~' | '|' | '^' | '$' | '*')) => self.operator(c)?,
            Some(c) => return Err(self.unexpected(c)),
            None => return Err(self.syntax("unclosed `[`")),
        };
        self.skip_whitespace();
        let value = match self.peek() {
            Some(quote @ ('"' | '\'')) => {
                self.pos += 1;
                self.string(quote)?
            }
            _ => self.required_value()?,
        };
        self.skip_whitespace();
        let ignore_case = self.case_flag()?;
        self.skip_whitespace();
        if !self.eat(']') {
            return Err(match self.peek() {
                Some(c) => self.unexpected(c),
                None => self.syntax("unclosed `[`"),
            });
        }
        let value = if ignore_case {
            value.to_ascii_lowercase()
        } else {
            value
        };
        let finder = (op == AttrOp::Substring && !value.is_empty()).then(|| Finder::new(&value));
        Ok(AttrTest {
            name,
            op,
            value,
            ignore_case,
            finder,
        })
    }

    /// The rest of a two-character operator whose first character was `first`.
    fn operator(&mut self, first: char) -> Result<AttrOp> {
        if !self.eat('=') {
            return Err(if first == '|' {
                SelectorErrorKind::Unsupported("a namespace prefix in an attribute selector".into())
            } else {
                self.syntax("expected `=` in an attribute operator")
            });
        }
        Ok(match first {
            '~' => AttrOp::Includes,
            '|' => AttrOp::DashMatch,
            '^' => AttrOp::Prefix,
            '$' => AttrOp::Suffix,
            _ => AttrOp::Substring,
        })
    }

    /// The optional `i` (ASCII case-insensitive) or `s` (sensitive) flag of an attribute test.
    fn case_flag(&mut self) -> Result<bool> {
        if !self.at_ident() {
            return Ok(false);
        }
        let flag = self.ident()?;
        match flag.to_ascii_lowercase().as_str() {
            "i" => Ok(true),
            "s" => Ok(false),
            _ => Err(self.syntax(&format!("unknown attribute flag `{flag}`"))),
        }
    }

    /// An unquoted attribute value: a run of name characters.
    fn required_value(&mut self) -> Result<String> {
        let mut value = String::new();
        while let Some(c) = self.peek() {
            if is_name_char(c) {
                value.push(c);
                self.pos += c.len_utf8();
            } else if c == '\\' && self.is_escape_at(self.pos) {
                self.pos += 1;
                value.push(self.escape());
            } else {
                break;
            }
        }
        if value.is_empty() {
            return Err(self.syntax("expected an attribute value"));
        }
        Ok(value)
    }

    /// A quoted string, after its opening quote, up to and including the closing one.
    fn string(&mut self, quote: char) -> Result<String> {
        let mut value = String::new();
        loop {
            match self.bump() {
                None => return Err(self.syntax("unclosed string")),
                Some(c) if c == quote => return Ok(value),
                Some('\n' | '\r' | '\x0c') => return Err(self.syntax("newline in a string")),
                Some('\\') => match self.peek() {
                    None => {}
                    Some('\n' | '\x0c') => self.pos += 1,
                    Some('\r') => {
                        self.pos += 1;
                        self.eat('\n');
                    }
                    Some(_) => value.push(self.escape()),
                },
                Some(c) => value.push(c),
            }
        }
    }

    fn required_ident(&mut self, what: &str) -> Result<String> {
        if !self.at_ident() {
            return Err(self.syntax(&format!("expected {what}")));
        }
        self.ident()
    }

    /// A CSS identifier at the cursor (the caller checked [`Parser::at_ident`]).
    fn ident(&mut self) -> Result<String> {
        let mut name = String::new();
        while let Some(c) = self.peek() {
            if is_name_char(c) {
                name.push(c);
                self.pos += c.len_utf8();
            } else if c == '\\' && self.is_escape_at(self.pos) {
                self.pos += 1;
                name.push(self.escape());
            } else {
                break;
            }
        }
        if name.is_empty() {
            return Err(self.syntax("expected a name"));
        }
        Ok(name)
    }

    /// Whether an identifier starts at the cursor (CSS Syntax "would start an ident sequence").
    fn at_ident(&self) -> bool {
        let rest = &self.text[self.pos..];
        let mut chars = rest.chars();
        match chars.next() {
            Some('-') => match chars.next() {
                Some('-') => true,
                Some('\\') => self.is_escape_at(self.pos + 1),
                Some(c) => is_name_start(c),
                None => false,
            },
            Some('\\') => self.is_escape_at(self.pos),
            Some(c) => is_name_start(c),
            None => false,
        }
    }

    /// Whether the `\` at byte `at` starts a valid escape (it is not followed by a newline).
    fn is_escape_at(&self, at: usize) -> bool {
        let mut rest = self.text[at..].chars();
        rest.next() == Some('\\') && !matches!(rest.next(), Some('\n' | '\r' | '\x0c'))
    }

    /// Decodes an escape after its `\`: up to six hex digits and one optional whitespace, or
    /// the next character as itself.
    fn escape(&mut self) -> char {
        let rest = &self.text[self.pos..];
        let digits = rest
            .bytes()
            .take(6)
            .take_while(u8::is_ascii_hexdigit)
            .count();
        if digits == 0 {
            return self.bump().unwrap_or('\u{fffd}');
        }
        let code = u32::from_str_radix(&rest[..digits], 16).unwrap_or(0);
        self.pos += digits;
        if self.eat('\r') {
            self.eat('\n');
        } else if self.peek().is_some_and(is_ascii_whitespace) {
            self.pos += 1;
        }
        match char::from_u32(code) {
            Some(c) if code != 0 => c,
            _ => '\u{fffd}',
        }
    }

    fn peek(&self) -> Option<char> {
        self.text[self.pos..].chars().next()
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.pos += c.len_utf8();
        Some(c)
    }

    fn eat(&mut self, want: char) -> bool {
        let found = self.peek() == Some(want);
        if found {
            self.pos += want.len_utf8();
        }
        found
    }

    /// Skips whitespace; true if there was any (it may be a descendant combinator).
    fn skip_whitespace(&mut self) -> bool {
        let start = self.pos;
        while self.peek().is_some_and(is_ascii_whitespace) {
            self.pos += 1;
        }
        self.pos > start
    }

    fn syntax(&self, reason: &str) -> SelectorErrorKind {
        SelectorErrorKind::Syntax {
            at: self.pos,
            reason: reason.to_string(),
        }
    }

    /// The error for a character that cannot come next; a namespace bar or a bracket of an
    /// unsupported form is named as such.
    fn unexpected(&self, c: char) -> SelectorErrorKind {
        match c {
            '|' => SelectorErrorKind::Unsupported("a namespace prefix".into()),
            _ => self.syntax(&format!("unexpected `{c}`")),
        }
    }
}

/// Letters, `_` and every non-ASCII character may start a CSS name.
fn is_name_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_' || !c.is_ascii()
}

fn is_name_char(c: char) -> bool {
    is_name_start(c) || c.is_ascii_digit() || c == '-'
}

#[cfg(test)]
mod tests {
    use super::super::{Selector, SelectorErrorKind};

    fn unsupported(text: &str) -> String {
        match Selector::parse(text) {
            Err(e) => match e.kind {
                SelectorErrorKind::Unsupported(what) => what,
                other => panic!("{text:?}: expected unsupported, got {other:?}"),
            },
            Ok(s) => panic!("{text:?} was accepted: {s:?}"),
        }
    }

    fn syntax(text: &str) -> String {
        match Selector::parse(text) {
            Err(e) => match e.kind {
                SelectorErrorKind::Syntax { reason, .. } => reason,
                other => panic!("{text:?}: expected a syntax error, got {other:?}"),
            },
            Ok(s) => panic!("{text:?} was accepted: {s:?}"),
        }
    }

    /// `rejects!(name: "selector" => unsupported "part of what" | syntax "part of reason")`
    macro_rules! rejects {
        ($($name:ident: $text:expr => $how:ident $part:expr;)*) => {$(
            #[test]
            fn $name() {
                let what = $how($text);
                assert!(what.contains($part), "{:?}: {what:?}", $text);
            }
        )*};
    }

    rejects! {
        has: "div:has(> a)" => unsupported "`:has()`";
        abp_has: "div:-abp-has(.ad)" => unsupported "`:-abp-has()`";
        nth_child: "li:nth-child(2)" => unsupported "`:nth-child()`";
        hover: "a:hover" => unsupported "`:hover`";
        pseudo_element: "p::before" => unsupported "`::before`";
        namespace: "svg|rect" => unsupported "namespace";
        attr_namespace: "[xlink|href]" => unsupported "namespace";
        nested_not: "p:not(:not(.a))" => unsupported "`:not()` inside";
        complex_not: "p:not(div a)" => unsupported "complex selector";
        too_long: &vec!["a"; 40].join(" ") => unsupported "more than 32";
        empty: "" => syntax "expected a selector";
        blank: "   " => syntax "expected a selector";
        trailing_comma: "a," => syntax "expected a selector";
        leading_combinator: "> a" => syntax "unexpected `>`";
        trailing_combinator: "a >" => syntax "expected a selector";
        double_combinator: "a > > b" => syntax "unexpected `>`";
        dot_alone: "." => syntax "a class";
        hash_digit: "#1a" => syntax "an id";
        unclosed_attr: "[href" => syntax "unclosed `[`";
        unclosed_string: "[title='x]" => syntax "unclosed string";
        bad_flag: "[a=b x]" => syntax "unknown attribute flag";
        bad_operator: "[a!=b]" => syntax "unexpected `!`";
        missing_value: "[a=]" => syntax "expected an attribute value";
        unclosed_not: "p:not(.a" => syntax "unclosed `:not(`";
        stray: "a)" => syntax "unexpected `)`";
    }

    #[test]
    fn accepted_forms() {
        for text in [
            "*",
            "div",
            "DIV.Ad",
            "#top-ad",
            ".a.b#c[d]",
            "a[href^='http://ads.'] > img",
            r#"div[class^="sponsor-"]"#,
            "[data-x=1]",
            "[lang|=en]",
            "[rel~=nofollow i]",
            "[title='a b' s]",
            "ul > li + li ~ li",
            "a  ,  b",
            "p:not(.x, #y, [z]):first-child:last-child",
            "-moz-thing",
            "--custom",
            r"\31 23",
            r"#\5f ad",
            "é.ü",
        ] {
            if let Err(e) = Selector::parse(text) {
                panic!("{text:?}: {e}");
            }
        }
    }

    #[test]
    fn escapes_and_strings_decode() {
        let sel = Selector::parse(r#"[title="a\"b\41 c"]"#).expect("valid");
        assert_eq!(sel.complexes[0].compounds[0].attrs[0].value, "a\"bAc");
        let sel = Selector::parse(r"#\5f ad.x\:y").expect("valid");
        let subject = &sel.complexes[0].compounds[0];
        assert_eq!(subject.ids, ["_ad"]);
        assert_eq!(subject.classes, ["x:y"]);
    }

    #[test]
    fn combinators_are_stored_right_to_left() {
        use super::super::Combinator::*;
        let sel = Selector::parse("a > b c + d ~ e").expect("valid");
        let complex = &sel.complexes[0];
        let tags: Vec<_> = complex
            .compounds
            .iter()
            .map(|c| c.tag.as_deref().unwrap_or("*"))
            .collect();
        assert_eq!(tags, ["e", "d", "c", "b", "a"]);
        assert_eq!(
            complex.combinators,
            [LaterSibling, NextSibling, Descendant, Child]
        );
    }

    #[test]
    fn errors_carry_the_text() {
        let error = Selector::parse("div:has(a)").expect_err("unsupported");
        assert_eq!(error.text, "div:has(a)");
        assert_eq!(
            error.to_string(),
            "CSS selector `div:has(a)`: `:has()` is not supported"
        );
    }
}
