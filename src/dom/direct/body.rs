//! The "in body" insertion mode and what it uses: the list of active formatting elements, its
//! reconstruction, and the adoption agency in the one form that keeps document order (popping
//! the formatting element and what was opened inside it).

use html5ever::tokenizer::states::RawKind;
use html5ever::tokenizer::TagKind;
use markup5ever::{local_name, LocalName};

use super::super::lex::Tag;
use super::super::TagAttr;
use super::names::{is_heading, is_special};
use super::{Bail, Formatting, Mode, Ns, Out, Quirks, Scope, State, Step, Tok};

impl<'s> State<'_, 's> {
    pub(super) fn in_body(&mut self, tok: Tok<'_, 's>) -> Step {
        match tok {
            Tok::Null => Ok(Out::Continue),
            Tok::Chars(text) => {
                self.reconstruct()?;
                self.append_text(text)?;
                Ok(Out::Continue)
            }
            Tok::Comment(text) => self.comment(text),
            Tok::Start(tag) => self.body_start(tag),
            Tok::End(name) => self.body_end(name),
            Tok::Eof => Ok(Out::Continue),
        }
    }

    pub(super) fn body_start(&mut self, mut tag: Tag<'s>) -> Step {
        match tag.name {
            // Attributes would be added to an element already laid out.
            local_name!("html") | local_name!("body") => {
                if tag.attrs.is_empty() {
                    Ok(Out::Continue)
                } else {
                    Err(Bail)
                }
            }
            local_name!("base")
            | local_name!("basefont")
            | local_name!("bgsound")
            | local_name!("link")
            | local_name!("meta")
            | local_name!("noframes")
            | local_name!("script")
            | local_name!("style")
            | local_name!("title") => self.head_start(tag)?.map_err(|_| Bail),
            local_name!("template") | local_name!("frameset") | local_name!("math") => Err(Bail),
            // The newer rules for `<select>`: an element of the body, not a mode of its own.
            local_name!("select") => {
                if self.in_scope_named(Scope::Default, &local_name!("select")) {
                    self.pop_until_named(&local_name!("select"));
                } else {
                    self.reconstruct()?;
                    self.insert(tag.name, Ns::Html, tag.attrs)?;
                }
                Ok(Out::Continue)
            }
            local_name!("address")
            | local_name!("article")
            | local_name!("aside")
            | local_name!("blockquote")
            | local_name!("center")
            | local_name!("details")
            | local_name!("dialog")
            | local_name!("dir")
            | local_name!("div")
            | local_name!("dl")
            | local_name!("fieldset")
            | local_name!("figcaption")
            | local_name!("figure")
            | local_name!("footer")
            | local_name!("header")
            | local_name!("hgroup")
            | local_name!("main")
            | local_name!("nav")
            | local_name!("ol")
            | local_name!("p")
            | local_name!("search")
            | local_name!("section")
            | local_name!("summary")
            | local_name!("ul")
            | local_name!("menu") => {
                self.close_p_in_button_scope();
                self.insert(tag.name, Ns::Html, tag.attrs)?;
                Ok(Out::Continue)
            }
            local_name!("h1")
            | local_name!("h2")
            | local_name!("h3")
            | local_name!("h4")
            | local_name!("h5")
            | local_name!("h6") => {
                self.close_p_in_button_scope();
                if self.current().is_some_and(|o| o.ns == Ns::Html && is_heading(&o.name)) {
                    self.pop();
                }
                self.insert(tag.name, Ns::Html, tag.attrs)?;
                Ok(Out::Continue)
            }
            local_name!("pre") | local_name!("listing") => {
                self.close_p_in_button_scope();
                self.insert(tag.name, Ns::Html, tag.attrs)?;
                self.ignore_lf = true;
                Ok(Out::Continue)
            }
            local_name!("form") => {
                if self.form.is_none() {
                    self.close_p_in_button_scope();
                    let id = self.insert(tag.name, Ns::Html, tag.attrs)?;
                    self.form = Some(id);
                }
                Ok(Out::Continue)
            }
            local_name!("li") | local_name!("dd") | local_name!("dt") => self.list_item(tag),
            local_name!("plaintext") => {
                self.close_p_in_button_scope();
                self.insert(tag.name, Ns::Html, tag.attrs)?;
                Ok(Out::Plaintext)
            }
            local_name!("button") => {
                if self.in_scope_named(Scope::Default, &local_name!("button")) {
                    self.generate_implied_end(None);
                    self.pop_until_named(&local_name!("button"));
                }
                self.reconstruct()?;
                self.insert(tag.name, Ns::Html, tag.attrs)?;
                Ok(Out::Continue)
            }
            local_name!("a") => {
                self.close_misnested_a()?;
                self.reconstruct()?;
                self.insert_formatting(tag)
            }
            local_name!("b")
            | local_name!("big")
            | local_name!("code")
            | local_name!("em")
            | local_name!("font")
            | local_name!("i")
            | local_name!("s")
            | local_name!("small")
            | local_name!("strike")
            | local_name!("strong")
            | local_name!("tt")
            | local_name!("u") => {
                self.reconstruct()?;
                self.insert_formatting(tag)
            }
            local_name!("nobr") => {
                self.reconstruct()?;
                if self.in_scope_named(Scope::Default, &local_name!("nobr")) {
                    self.adoption_agency(&local_name!("nobr"))?;
                    self.reconstruct()?;
                }
                self.insert_formatting(tag)
            }
            local_name!("applet") | local_name!("marquee") | local_name!("object") => {
                self.reconstruct()?;
                self.insert(tag.name, Ns::Html, tag.attrs)?;
                self.active.push(Formatting::Marker);
                Ok(Out::Continue)
            }
            local_name!("table") => {
                let p_open = self.p_in_button_scope();
                match self.quirks {
                    Quirks::No => self.close_p_in_button_scope(),
                    Quirks::Full => {}
                    Quirks::Unknown if p_open => return Err(Bail),
                    Quirks::Unknown => {}
                }
                self.insert(tag.name, Ns::Html, tag.attrs)?;
                self.mode = Mode::InTable;
                Ok(Out::Continue)
            }
            local_name!("area")
            | local_name!("br")
            | local_name!("embed")
            | local_name!("img")
            | local_name!("keygen")
            | local_name!("wbr")
            | local_name!("input") => {
                if tag.name == local_name!("input") && self.in_scope_named(Scope::Default, &local_name!("select")) {
                    self.pop_until_named(&local_name!("select"));
                }
                self.reconstruct()?;
                self.insert_void(tag.name, Ns::Html, tag.attrs)?;
                Ok(Out::Continue)
            }
            local_name!("param") | local_name!("source") | local_name!("track") => {
                self.insert_void(tag.name, Ns::Html, tag.attrs)?;
                Ok(Out::Continue)
            }
            local_name!("hr") => {
                self.close_p_in_button_scope();
                if self.in_scope_named(Scope::Default, &local_name!("select")) {
                    self.generate_implied_end(None);
                }
                self.insert_void(tag.name, Ns::Html, tag.attrs)?;
                Ok(Out::Continue)
            }
            local_name!("image") => {
                tag.name = local_name!("img");
                self.body_start(tag)
            }
            local_name!("textarea") => {
                let out = self.raw(tag, RawKind::Rcdata)?;
                self.ignore_lf = true;
                Ok(out)
            }
            local_name!("xmp") => {
                self.close_p_in_button_scope();
                self.reconstruct()?;
                self.raw(tag, RawKind::Rawtext)
            }
            local_name!("iframe") | local_name!("noembed") | local_name!("noscript") => {
                self.raw(tag, RawKind::Rawtext)
            }
            local_name!("option") | local_name!("optgroup") => {
                if self.in_scope_named(Scope::Default, &local_name!("select")) {
                    let except = (tag.name == local_name!("option")).then_some(local_name!("optgroup"));
                    self.generate_implied_end(except.as_ref());
                } else if self.current_is(&local_name!("option")) {
                    self.pop();
                }
                self.reconstruct()?;
                self.insert(tag.name, Ns::Html, tag.attrs)?;
                Ok(Out::Continue)
            }
            local_name!("rb") | local_name!("rtc") => {
                if self.in_scope_named(Scope::Default, &local_name!("ruby")) {
                    self.generate_implied_end(None);
                }
                self.insert(tag.name, Ns::Html, tag.attrs)?;
                Ok(Out::Continue)
            }
            local_name!("rp") | local_name!("rt") => {
                if self.in_scope_named(Scope::Default, &local_name!("ruby")) {
                    self.generate_implied_end(Some(&local_name!("rtc")));
                }
                self.insert(tag.name, Ns::Html, tag.attrs)?;
                Ok(Out::Continue)
            }
            local_name!("svg") => {
                self.reconstruct()?;
                self.enter_svg(tag)
            }
            local_name!("caption")
            | local_name!("col")
            | local_name!("colgroup")
            | local_name!("frame")
            | local_name!("head")
            | local_name!("tbody")
            | local_name!("td")
            | local_name!("tfoot")
            | local_name!("th")
            | local_name!("thead")
            | local_name!("tr") => Ok(Out::Continue),
            _ => {
                self.reconstruct()?;
                self.insert(tag.name, Ns::Html, tag.attrs)?;
                Ok(Out::Continue)
            }
        }
    }

    /// `<li>`, `<dd>`, `<dt>`: close the open item of the same kind unless a special element
    /// (other than address, div and p) stands in between.
    fn list_item(&mut self, tag: Tag<'s>) -> Step {
        let is_li = tag.name == local_name!("li");
        let mut to_close = None;
        for open in self.open.iter().rev() {
            let html = open.ns == Ns::Html;
            let closes = html
                && if is_li {
                    open.name == local_name!("li")
                } else {
                    matches!(open.name, local_name!("dd") | local_name!("dt"))
                };
            if closes {
                to_close = Some(open.name.clone());
                break;
            }
            if html
                && is_special(&open.name)
                && !matches!(open.name, local_name!("address") | local_name!("div") | local_name!("p"))
            {
                break;
            }
        }
        if let Some(name) = to_close {
            self.generate_implied_end(Some(&name));
            self.pop_until_named(&name);
        }
        self.close_p_in_button_scope();
        self.insert(tag.name, Ns::Html, tag.attrs)?;
        Ok(Out::Continue)
    }

    pub(super) fn body_end(&mut self, name: LocalName) -> Step {
        match name {
            local_name!("body") => {
                if self.in_scope_named(Scope::Default, &local_name!("body")) {
                    self.mode = Mode::AfterBody;
                }
            }
            local_name!("html") => {
                if self.in_scope_named(Scope::Default, &local_name!("body")) {
                    return self.reprocess(Mode::AfterBody, Tok::End(name));
                }
            }
            local_name!("address")
            | local_name!("article")
            | local_name!("aside")
            | local_name!("blockquote")
            | local_name!("button")
            | local_name!("center")
            | local_name!("details")
            | local_name!("dialog")
            | local_name!("dir")
            | local_name!("div")
            | local_name!("dl")
            | local_name!("fieldset")
            | local_name!("figcaption")
            | local_name!("figure")
            | local_name!("footer")
            | local_name!("header")
            | local_name!("hgroup")
            | local_name!("listing")
            | local_name!("main")
            | local_name!("menu")
            | local_name!("nav")
            | local_name!("ol")
            | local_name!("pre")
            | local_name!("search")
            | local_name!("section")
            | local_name!("select")
            | local_name!("summary")
            | local_name!("ul") => {
                if self.in_scope_named(Scope::Default, &name) {
                    self.generate_implied_end(None);
                    self.pop_until_named(&name);
                }
            }
            local_name!("form") => {
                let Some(form) = self.form.take() else {
                    return Ok(Out::Continue);
                };
                if self.in_scope(Scope::Default, |o| o.id == form) {
                    self.generate_implied_end(None);
                    if let Some(at) = self.open.iter().rposition(|o| o.id == form) {
                        self.open.remove(at);
                    }
                }
            }
            local_name!("p") => {
                if !self.p_in_button_scope() {
                    self.insert(local_name!("p"), Ns::Html, Vec::new())?;
                }
                self.close_p();
            }
            local_name!("li") | local_name!("dd") | local_name!("dt") => {
                let scope = if name == local_name!("li") {
                    Scope::ListItem
                } else {
                    Scope::Default
                };
                if self.in_scope_named(scope, &name) {
                    self.generate_implied_end(Some(&name));
                    self.pop_until_named(&name);
                }
            }
            local_name!("h1")
            | local_name!("h2")
            | local_name!("h3")
            | local_name!("h4")
            | local_name!("h5")
            | local_name!("h6") => {
                if self.in_scope(Scope::Default, |o| o.ns == Ns::Html && is_heading(&o.name)) {
                    self.generate_implied_end(None);
                    self.pop_until(is_heading);
                }
            }
            local_name!("a")
            | local_name!("b")
            | local_name!("big")
            | local_name!("code")
            | local_name!("em")
            | local_name!("font")
            | local_name!("i")
            | local_name!("nobr")
            | local_name!("s")
            | local_name!("small")
            | local_name!("strike")
            | local_name!("strong")
            | local_name!("tt")
            | local_name!("u") => self.adoption_agency(&name)?,
            local_name!("applet") | local_name!("marquee") | local_name!("object") => {
                if self.in_scope_named(Scope::Default, &name) {
                    self.generate_implied_end(None);
                    self.pop_until_named(&name);
                    self.clear_to_marker();
                }
            }
            local_name!("br") => {
                let br = Tag {
                    kind: TagKind::StartTag,
                    name,
                    self_closing: false,
                    attrs: Vec::new(),
                };
                return self.body_start(br);
            }
            // No `<template>` is ever open here.
            local_name!("template") => {}
            _ => self.end_tag_in_body(&name),
        }
        Ok(Out::Continue)
    }

    /// "Any other end tag": closes the nearest open element of that name unless a special
    /// element stands in between.
    pub(super) fn end_tag_in_body(&mut self, name: &LocalName) {
        let mut at = None;
        for (i, open) in self.open.iter().enumerate().rev() {
            if open.ns == Ns::Html && open.name == *name {
                at = Some(i);
                break;
            }
            if open.ns == Ns::Html && is_special(&open.name) {
                return;
            }
        }
        let Some(at) = at else { return };
        self.generate_implied_end(Some(name));
        self.open.truncate(at);
    }

    /// The adoption agency algorithm, as far as it only pops: when a special element was
    /// opened inside the formatting element it would move nodes, and the builder bails.
    fn adoption_agency(&mut self, subject: &LocalName) -> Result<(), Bail> {
        if let Some(current) = self.current() {
            let id = current.id;
            if current.ns == Ns::Html && current.name == *subject && !self.is_active(id) {
                self.pop();
                return Ok(());
            }
        }
        let mut found = None;
        for (i, entry) in self.active.iter().enumerate().rev() {
            match entry {
                Formatting::Marker => break,
                Formatting::Element { id, name, .. } if name == subject => {
                    found = Some((i, *id));
                    break;
                }
                Formatting::Element { .. } => {}
            }
        }
        let Some((entry, id)) = found else {
            self.end_tag_in_body(subject);
            return Ok(());
        };
        let Some(at) = self.open.iter().rposition(|o| o.id == id) else {
            self.active.remove(entry);
            return Ok(());
        };
        if !self.in_scope(Scope::Default, |o| o.id == id) {
            return Ok(());
        }
        if self.open[at..].iter().any(|o| o.ns == Ns::Html && is_special(&o.name)) {
            return Err(Bail);
        }
        self.open.truncate(at);
        self.active.remove(entry);
        Ok(())
    }

    /// An `<a>` while another is active: the adoption agency for it, then it leaves the list
    /// and the stack.
    fn close_misnested_a(&mut self) -> Result<(), Bail> {
        let mut found = None;
        for entry in self.active.iter().rev() {
            match entry {
                Formatting::Marker => break,
                Formatting::Element { id, name, .. } if *name == local_name!("a") => {
                    found = Some(*id);
                    break;
                }
                Formatting::Element { .. } => {}
            }
        }
        let Some(node) = found else { return Ok(()) };
        self.adoption_agency(&local_name!("a"))?;
        if let Some(at) = self.active.iter().position(|e| matches!(e, Formatting::Element { id, .. } if *id == node)) {
            self.active.remove(at);
        }
        if let Some(at) = self.open.iter().rposition(|o| o.id == node) {
            self.open.remove(at);
        }
        Ok(())
    }

    fn is_active(&self, node: u32) -> bool {
        self.active
            .iter()
            .any(|e| matches!(e, Formatting::Element { id, .. } if *id == node))
    }

    fn is_open(&self, node: u32) -> bool {
        self.open.iter().rev().any(|o| o.id == node)
    }

    fn is_marker_or_open(&self, entry: &Formatting) -> bool {
        match entry {
            Formatting::Marker => true,
            Formatting::Element { id, .. } => self.is_open(*id),
        }
    }

    /// Inserts a formatting element and records it, keeping at most three equal entries after
    /// the last marker (the Noah's Ark clause).
    fn insert_formatting(&mut self, tag: Tag<'s>) -> Step {
        let mut first = None;
        let mut matches = 0;
        for (i, entry) in self.active.iter().enumerate().rev() {
            match entry {
                Formatting::Marker => break,
                Formatting::Element { name, attrs, .. } => {
                    let attrs = self.formatting_attrs.get(attrs.clone()).unwrap_or_default();
                    if *name == tag.name && same_attributes(attrs, &tag.attrs) {
                        first = Some(i);
                        matches += 1;
                    }
                }
            }
        }
        if let (Some(first), true) = (first, matches >= 3) {
            self.active.remove(first);
        }
        // The entry keeps a copy of the attributes as parsed; the tokenizer's vector goes on
        // to the tree, and back to the tokenizer with its capacity.
        if self.active.is_empty() {
            self.formatting_attrs.clear();
        }
        let start = self.formatting_attrs.len();
        self.formatting_attrs.extend_from_slice(&tag.attrs);
        let attrs = start..self.formatting_attrs.len();
        let id = self.insert(tag.name.clone(), Ns::Html, tag.attrs)?;
        self.active.push(Formatting::Element {
            id,
            name: tag.name,
            attrs,
        });
        Ok(Out::Continue)
    }

    /// Reconstructs the active formatting elements that were closed implicitly.
    pub(super) fn reconstruct(&mut self) -> Result<(), Bail> {
        let Some(last) = self.active.last() else {
            return Ok(());
        };
        if self.is_marker_or_open(last) {
            return Ok(());
        }
        let mut at = self.active.len() - 1;
        while at > 0 {
            at -= 1;
            if self.is_marker_or_open(&self.active[at]) {
                at += 1;
                break;
            }
        }
        loop {
            let Formatting::Element { name, attrs, .. } = &self.active[at] else {
                // A marker is never reached: the search above stops after one.
                return Err(Bail);
            };
            let mut list = std::mem::take(&mut self.spare);
            list.extend_from_slice(self.formatting_attrs.get(attrs.clone()).unwrap_or_default());
            let id = self.insert(name.clone(), Ns::Html, list)?;
            if let Formatting::Element { id: entry, .. } = &mut self.active[at] {
                *entry = id;
            }
            if at == self.active.len() - 1 {
                return Ok(());
            }
            at += 1;
        }
    }

    pub(super) fn clear_to_marker(&mut self) {
        while let Some(entry) = self.active.pop() {
            if matches!(entry, Formatting::Marker) {
                break;
            }
        }
    }
}

/// Whether two tags' attributes are equal regardless of order. A tag's attribute names are
/// unique (the tokenizer keeps the first of a name), so equal lengths and containment suffice.
fn same_attributes(a: &[TagAttr<'_>], b: &[TagAttr<'_>]) -> bool {
    a.len() == b.len() && a.iter().all(|x| b.contains(x))
}
