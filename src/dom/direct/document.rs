//! The insertion modes around the body: initial (the doctype and the quirks mode), before
//! html, before head, in head, after head, text (raw text and RCDATA elements), after body and
//! after after body.

use html5ever::tokenizer::states::RawKind;
use html5ever::tokenizer::Doctype;
use markup5ever::tendril::StrTendril;
use markup5ever::{local_name, LocalName};

use super::super::build::{doctype_text, push_str};
use super::super::lex::Tag;
use super::{split_space, Bail, Mode, NodeKind, Ns, Out, Quirks, State, Step, Tok, NONE, SKIP};

impl<'s> State<'_, 's> {
    pub(super) fn doctype(&mut self, doctype: Doctype) -> Result<(), Bail> {
        self.quirks = quirks(&doctype);
        let text = doctype_text(
            doctype.name.as_deref().unwrap_or(""),
            doctype.public_id.as_deref().unwrap_or(""),
            doctype.system_id.as_deref().unwrap_or(""),
        );
        self.check_depth(1)?;
        let kind = NodeKind::Doctype(push_str(&mut self.tree.chars, &text));
        self.push_node(0, kind);
        Ok(())
    }

    pub(super) fn initial(&mut self, tok: Tok<'_, 's>) -> Step {
        match tok {
            Tok::Chars(text) => match split_space(text).1 {
                "" => Ok(Out::Continue),
                rest => self.initial_else(Tok::Chars(rest)),
            },
            Tok::Comment(text) => {
                self.check_depth(1)?;
                self.lay_comment(0, text);
                Ok(Out::Continue)
            }
            tok => self.initial_else(tok),
        }
    }

    /// No doctype: quirks mode.
    pub(super) fn initial_else(&mut self, tok: Tok<'_, 's>) -> Step {
        self.quirks = Quirks::Full;
        self.reprocess(Mode::BeforeHtml, tok)
    }

    pub(super) fn before_html(&mut self, tok: Tok<'_, 's>) -> Step {
        match tok {
            Tok::Chars(text) => match split_space(text).1 {
                "" => Ok(Out::Continue),
                rest => self.before_html_else(Tok::Chars(rest)),
            },
            Tok::Comment(text) => {
                self.check_depth(1)?;
                self.lay_comment(0, text);
                Ok(Out::Continue)
            }
            Tok::Start(tag) if tag.name == local_name!("html") => {
                self.insert(tag.name, Ns::Html, tag.attrs)?;
                self.mode = Mode::BeforeHead;
                Ok(Out::Continue)
            }
            Tok::End(ref name) if !is_head_body_html_br(name) => Ok(Out::Continue),
            tok => self.before_html_else(tok),
        }
    }

    pub(super) fn before_html_else(&mut self, tok: Tok<'_, 's>) -> Step {
        self.insert(local_name!("html"), Ns::Html, Vec::new())?;
        self.reprocess(Mode::BeforeHead, tok)
    }

    pub(super) fn before_head(&mut self, tok: Tok<'_, 's>) -> Step {
        match tok {
            Tok::Chars(text) => match split_space(text).1 {
                "" => Ok(Out::Continue),
                rest => self.before_head_else(Tok::Chars(rest)),
            },
            Tok::Comment(text) => self.comment(text),
            Tok::Start(ref tag) if tag.name == local_name!("html") => self.in_body(tok),
            Tok::Start(tag) if tag.name == local_name!("head") => {
                self.insert(tag.name, Ns::Html, tag.attrs)?;
                self.head = self.open.last().cloned();
                self.mode = Mode::InHead;
                Ok(Out::Continue)
            }
            Tok::End(ref name) if !is_head_body_html_br(name) => Ok(Out::Continue),
            tok => self.before_head_else(tok),
        }
    }

    pub(super) fn before_head_else(&mut self, tok: Tok<'_, 's>) -> Step {
        self.insert(local_name!("head"), Ns::Html, Vec::new())?;
        self.head = self.open.last().cloned();
        self.reprocess(Mode::InHead, tok)
    }

    pub(super) fn in_head(&mut self, tok: Tok<'_, 's>) -> Step {
        match tok {
            Tok::Chars(text) => {
                let (space, rest) = split_space(text);
                if !space.is_empty() {
                    self.append_text(space)?;
                }
                if rest.is_empty() {
                    return Ok(Out::Continue);
                }
                self.in_head_else(Tok::Chars(rest))
            }
            Tok::Comment(text) => self.comment(text),
            Tok::Start(tag) => match tag.name {
                local_name!("html") => self.in_body(Tok::Start(tag)),
                local_name!("head") => Ok(Out::Continue),
                _ => match self.head_start(tag)? {
                    Ok(out) => Ok(out),
                    Err(tag) => self.in_head_else(Tok::Start(tag)),
                },
            },
            Tok::End(name) => match name {
                local_name!("head") => {
                    self.pop();
                    self.mode = Mode::AfterHead;
                    Ok(Out::Continue)
                }
                local_name!("body") | local_name!("html") | local_name!("br") => {
                    self.in_head_else(Tok::End(name))
                }
                _ => Ok(Out::Continue),
            },
            tok => self.in_head_else(tok),
        }
    }

    pub(super) fn in_head_else(&mut self, tok: Tok<'_, 's>) -> Step {
        self.pop();
        self.reprocess(Mode::AfterHead, tok)
    }

    /// The start tags the "in head" rules own, wherever they are used from; gives the tag back
    /// when it is not one of them.
    pub(super) fn head_start(&mut self, tag: Tag<'s>) -> Result<Result<Out, Tag<'s>>, Bail> {
        match tag.name {
            local_name!("base")
            | local_name!("basefont")
            | local_name!("bgsound")
            | local_name!("link")
            | local_name!("meta") => {
                self.insert_void(tag.name, Ns::Html, tag.attrs)?;
                Ok(Ok(Out::Continue))
            }
            local_name!("title") => self.raw(tag, RawKind::Rcdata).map(Ok),
            local_name!("noframes") | local_name!("style") | local_name!("noscript") => {
                self.raw(tag, RawKind::Rawtext).map(Ok)
            }
            local_name!("script") => self.raw(tag, RawKind::ScriptData).map(Ok),
            local_name!("template") => Err(Bail),
            _ => Ok(Err(tag)),
        }
    }

    /// The generic raw text and RCDATA parsing algorithm: the element, then `Text` mode.
    pub(super) fn raw(&mut self, tag: Tag<'s>, kind: RawKind) -> Step {
        self.insert(tag.name, Ns::Html, tag.attrs)?;
        self.orig_mode = self.mode;
        self.mode = Mode::Text;
        Ok(Out::Raw(kind))
    }

    pub(super) fn after_head(&mut self, tok: Tok<'_, 's>) -> Step {
        match tok {
            Tok::Chars(text) => {
                let (space, rest) = split_space(text);
                if !space.is_empty() {
                    self.append_text(space)?;
                }
                if rest.is_empty() {
                    return Ok(Out::Continue);
                }
                self.after_head_else(Tok::Chars(rest))
            }
            Tok::Comment(text) => self.comment(text),
            Tok::Start(tag) => match tag.name {
                local_name!("html") => self.in_body(Tok::Start(tag)),
                local_name!("body") => {
                    self.insert(tag.name, Ns::Html, tag.attrs)?;
                    self.mode = Mode::InBody;
                    Ok(Out::Continue)
                }
                local_name!("frameset") | local_name!("template") => Err(Bail),
                local_name!("base")
                | local_name!("basefont")
                | local_name!("bgsound")
                | local_name!("link")
                | local_name!("meta")
                | local_name!("noframes")
                | local_name!("script")
                | local_name!("style")
                | local_name!("title") => self.reenter_head(tag),
                local_name!("head") => Ok(Out::Continue),
                _ => self.after_head_else(Tok::Start(tag)),
            },
            Tok::End(name) => match name {
                local_name!("body") | local_name!("html") | local_name!("br") => {
                    self.after_head_else(Tok::End(name))
                }
                _ => Ok(Out::Continue),
            },
            tok => self.after_head_else(tok),
        }
    }

    pub(super) fn after_head_else(&mut self, tok: Tok<'_, 's>) -> Step {
        self.insert(local_name!("body"), Ns::Html, Vec::new())?;
        self.reprocess(Mode::InBody, tok)
    }

    /// A head element after `</head>`: html5ever pushes the head back, inserts, and takes the
    /// head off the stack again. That is an append at the end of the tree only while nothing
    /// kept has been laid out after the head's subtree; else bail.
    pub(super) fn reenter_head(&mut self, tag: Tag<'s>) -> Step {
        let Some(head) = self.head.clone() else {
            return Err(Bail);
        };
        if head.out != SKIP && !(head.kept && self.last_is_inside(head.out)) {
            return Err(Bail);
        }
        let id = head.id;
        self.open.push(head);
        let out = match self.head_start(tag)? {
            Ok(out) => out,
            Err(_) => return Err(Bail),
        };
        if let Some(at) = self.open.iter().rposition(|o| o.id == id) {
            self.open.remove(at);
        }
        Ok(out)
    }

    /// Whether the last node of the tree is `at` or one of its descendants.
    pub(super) fn last_is_inside(&self, at: u32) -> bool {
        let mut i = self.tree.nodes.len() as u32 - 1;
        while i > at && i != NONE {
            i = self.tree.nodes[i as usize].parent;
        }
        i == at
    }

    pub(super) fn text(&mut self, tok: Tok<'_, 's>) -> Step {
        match tok {
            Tok::Chars(text) => {
                self.append_text(text)?;
                Ok(Out::Continue)
            }
            Tok::End(_) => {
                self.pop();
                self.mode = self.orig_mode;
                Ok(Out::Continue)
            }
            Tok::Eof => {
                self.pop();
                let mode = self.orig_mode;
                self.reprocess(mode, Tok::Eof)
            }
            // The tokenizer gives nothing else in a raw-text state.
            _ => Err(Bail),
        }
    }

    /// Text after `</body>` or `</html>`: whitespace goes into the body by its rules, anything
    /// else sends the parser back to "in body".
    fn chars_after_body(&mut self, text: &str) -> Step {
        let (space, rest) = split_space(text);
        if !space.is_empty() {
            self.in_body(Tok::Chars(space))?;
        }
        if rest.is_empty() {
            return Ok(Out::Continue);
        }
        self.reprocess(Mode::InBody, Tok::Chars(rest))
    }

    pub(super) fn after_body(&mut self, tok: Tok<'_, 's>) -> Step {
        match tok {
            Tok::Chars(text) => self.chars_after_body(text),
            Tok::Comment(text) => {
                self.check_depth(2)?;
                self.after_body.push(StrTendril::from_slice(text));
                Ok(Out::Continue)
            }
            Tok::Start(ref tag) if tag.name == local_name!("html") => self.in_body(tok),
            Tok::End(local_name!("html")) => {
                self.mode = Mode::AfterAfterBody;
                Ok(Out::Continue)
            }
            Tok::Eof => Ok(Out::Continue),
            tok => self.reprocess(Mode::InBody, tok),
        }
    }

    pub(super) fn after_after_body(&mut self, tok: Tok<'_, 's>) -> Step {
        match tok {
            Tok::Chars(text) => self.chars_after_body(text),
            Tok::Comment(text) => {
                self.check_depth(1)?;
                self.after_html.push(StrTendril::from_slice(text));
                Ok(Out::Continue)
            }
            Tok::Start(ref tag) if tag.name == local_name!("html") => self.in_body(tok),
            Tok::Eof => Ok(Out::Continue),
            tok => self.reprocess(Mode::InBody, tok),
        }
    }
}

pub(super) fn is_head_body_html_br(name: &LocalName) -> bool {
    matches!(
        *name,
        local_name!("head") | local_name!("body") | local_name!("html") | local_name!("br")
    )
}

/// The quirks mode a doctype sets, as html5ever's `data::doctype_error_and_quirks` decides it,
/// for the doctypes real pages use; [`Quirks::Unknown`] for public identifiers not classified
/// here (none of html5ever's quirky prefixes or matches starts like the four recognised).
pub(super) fn quirks(doctype: &Doctype) -> Quirks {
    const IBM: &str = "http://www.ibm.com/data/dtd/v11/ibmxhtml1-transitional.dtd";
    if doctype.force_quirks || doctype.name.as_deref() != Some("html") {
        return Quirks::Full;
    }
    let system = doctype.system_id.as_deref();
    if system.is_some_and(|s| s.eq_ignore_ascii_case(IBM)) {
        return Quirks::Full;
    }
    let Some(public) = doctype.public_id.as_deref() else {
        return Quirks::No;
    };
    let public = public.to_ascii_lowercase();
    let starts = |prefixes: &[&str]| prefixes.iter().any(|p| public.starts_with(p));
    if starts(&["-//w3c//dtd xhtml 1.0 frameset//", "-//w3c//dtd xhtml 1.0 transitional//"]) {
        Quirks::No
    } else if starts(&["-//w3c//dtd html 4.01 frameset//", "-//w3c//dtd html 4.01 transitional//"]) {
        if system.is_some() {
            Quirks::No
        } else {
            Quirks::Full
        }
    } else {
        Quirks::Unknown
    }
}
