//! The table insertion modes: in table, in caption, in column group, in table body, in row and
//! in cell. Whatever html5ever would foster-parent (text other than whitespace, or elements
//! other than table parts, directly in a table) goes before the table, out of document order:
//! the builder bails there.

use markup5ever::{local_name, LocalName};

use super::names::is_type_hidden;
use super::{split_space, Bail, Formatting, Mode, Ns, Out, Scope, State, Step, Tok};

impl<'s> State<'_, 's> {
    pub(super) fn in_table(&mut self, tok: Tok<'_, 's>) -> Step {
        match tok {
            Tok::Chars(_) | Tok::Null => self.table_text(tok),
            Tok::Comment(text) => self.comment(text),
            Tok::Start(tag) => match tag.name {
                local_name!("caption") => {
                    self.clear_to_table_context();
                    self.active.push(Formatting::Marker);
                    self.insert(tag.name, Ns::Html, tag.attrs)?;
                    self.mode = Mode::InCaption;
                    Ok(Out::Continue)
                }
                local_name!("colgroup") => {
                    self.clear_to_table_context();
                    self.insert(tag.name, Ns::Html, tag.attrs)?;
                    self.mode = Mode::InColumnGroup;
                    Ok(Out::Continue)
                }
                local_name!("col") => {
                    self.clear_to_table_context();
                    self.insert(local_name!("colgroup"), Ns::Html, Vec::new())?;
                    self.reprocess(Mode::InColumnGroup, Tok::Start(tag))
                }
                local_name!("tbody") | local_name!("tfoot") | local_name!("thead") => {
                    self.clear_to_table_context();
                    self.insert(tag.name, Ns::Html, tag.attrs)?;
                    self.mode = Mode::InTableBody;
                    Ok(Out::Continue)
                }
                local_name!("td") | local_name!("th") | local_name!("tr") => {
                    self.clear_to_table_context();
                    self.insert(local_name!("tbody"), Ns::Html, Vec::new())?;
                    self.reprocess(Mode::InTableBody, Tok::Start(tag))
                }
                local_name!("table") => {
                    if !self.in_scope_named(Scope::Table, &local_name!("table")) {
                        return Ok(Out::Continue);
                    }
                    self.pop_until_named(&local_name!("table"));
                    let mode = self.reset_mode()?;
                    self.reprocess(mode, Tok::Start(tag))
                }
                local_name!("style") | local_name!("script") => {
                    self.head_start(tag)?.map_err(|_| Bail)
                }
                local_name!("input") if is_type_hidden(&tag) => {
                    self.insert_void(tag.name, Ns::Html, tag.attrs)?;
                    Ok(Out::Continue)
                }
                local_name!("form") => {
                    if self.form.is_none() {
                        let id = self.insert_void(tag.name, Ns::Html, tag.attrs)?;
                        self.form = Some(id);
                    }
                    Ok(Out::Continue)
                }
                // `<template>`, and everything html5ever would foster-parent.
                _ => Err(Bail),
            },
            Tok::End(name) => match name {
                local_name!("table") => {
                    if self.in_scope_named(Scope::Table, &local_name!("table")) {
                        self.pop_until_named(&local_name!("table"));
                        self.mode = self.reset_mode()?;
                    }
                    Ok(Out::Continue)
                }
                local_name!("body")
                | local_name!("caption")
                | local_name!("col")
                | local_name!("colgroup")
                | local_name!("html")
                | local_name!("tbody")
                | local_name!("td")
                | local_name!("tfoot")
                | local_name!("th")
                | local_name!("thead")
                | local_name!("tr")
                | local_name!("template") => Ok(Out::Continue),
                // html5ever runs the "in body" rules with foster parenting on; only these two
                // insert a node (a `<p>`, a `<br>`), which would go before the table.
                local_name!("p") | local_name!("br") => Err(Bail),
                _ => self.in_body(Tok::End(name)),
            },
            Tok::Eof => self.in_body(Tok::Eof),
        }
    }

    /// Character data in a table: whitespace stays where it is when the current node is a
    /// table part; anything else is foster-parented (bail).
    fn table_text(&mut self, tok: Tok<'_, 's>) -> Step {
        let table_part = self.current().is_some_and(|o| {
            o.ns == Ns::Html
                && matches!(
                    o.name,
                    local_name!("table")
                        | local_name!("tbody")
                        | local_name!("tfoot")
                        | local_name!("thead")
                        | local_name!("tr")
                )
        });
        match tok {
            Tok::Null if table_part => Ok(Out::Continue),
            Tok::Chars(text) if table_part && text.chars().all(super::is_space) => {
                self.append_text(text)?;
                Ok(Out::Continue)
            }
            _ => Err(Bail),
        }
    }

    pub(super) fn in_caption(&mut self, tok: Tok<'_, 's>) -> Step {
        let ends = match &tok {
            Tok::Start(tag) => matches!(
                tag.name,
                local_name!("caption")
                    | local_name!("col")
                    | local_name!("colgroup")
                    | local_name!("tbody")
                    | local_name!("td")
                    | local_name!("tfoot")
                    | local_name!("th")
                    | local_name!("thead")
                    | local_name!("tr")
            ),
            Tok::End(name) => matches!(*name, local_name!("table") | local_name!("caption")),
            _ => false,
        };
        if ends {
            if !self.in_scope_named(Scope::Table, &local_name!("caption")) {
                return Ok(Out::Continue);
            }
            self.generate_implied_end(None);
            self.pop_until_named(&local_name!("caption"));
            self.clear_to_marker();
            if matches!(tok, Tok::End(local_name!("caption"))) {
                self.mode = Mode::InTable;
                return Ok(Out::Continue);
            }
            return self.reprocess(Mode::InTable, tok);
        }
        match tok {
            Tok::End(
                local_name!("body")
                | local_name!("col")
                | local_name!("colgroup")
                | local_name!("html")
                | local_name!("tbody")
                | local_name!("td")
                | local_name!("tfoot")
                | local_name!("th")
                | local_name!("thead")
                | local_name!("tr"),
            ) => Ok(Out::Continue),
            tok => self.in_body(tok),
        }
    }

    pub(super) fn in_column_group(&mut self, tok: Tok<'_, 's>) -> Step {
        match tok {
            Tok::Chars(text) => {
                let (space, rest) = split_space(text);
                if !space.is_empty() {
                    self.append_text(space)?;
                }
                if rest.is_empty() {
                    return Ok(Out::Continue);
                }
                self.column_group_else(Tok::Chars(rest))
            }
            Tok::Comment(text) => self.comment(text),
            Tok::Start(tag) => match tag.name {
                local_name!("html") => self.in_body(Tok::Start(tag)),
                local_name!("col") => {
                    self.insert_void(tag.name, Ns::Html, tag.attrs)?;
                    Ok(Out::Continue)
                }
                local_name!("template") => Err(Bail),
                _ => self.column_group_else(Tok::Start(tag)),
            },
            Tok::End(name) => match name {
                local_name!("colgroup") => {
                    if self.current_is(&local_name!("colgroup")) {
                        self.pop();
                        self.mode = Mode::InTable;
                    }
                    Ok(Out::Continue)
                }
                local_name!("col") | local_name!("template") => Ok(Out::Continue),
                _ => self.column_group_else(Tok::End(name)),
            },
            Tok::Eof => self.in_body(Tok::Eof),
            Tok::Null => self.column_group_else(Tok::Null),
        }
    }

    fn column_group_else(&mut self, tok: Tok<'_, 's>) -> Step {
        if self.current_is(&local_name!("colgroup")) {
            self.pop();
            return self.reprocess(Mode::InTable, tok);
        }
        // Only inside a template is the current node not the colgroup; never here.
        Err(Bail)
    }

    pub(super) fn in_table_body(&mut self, tok: Tok<'_, 's>) -> Step {
        match tok {
            Tok::Start(tag) => match tag.name {
                local_name!("tr") => {
                    self.clear_to(is_table_body_context);
                    self.insert(tag.name, Ns::Html, tag.attrs)?;
                    self.mode = Mode::InRow;
                    Ok(Out::Continue)
                }
                local_name!("th") | local_name!("td") => {
                    self.clear_to(is_table_body_context);
                    self.insert(local_name!("tr"), Ns::Html, Vec::new())?;
                    self.reprocess(Mode::InRow, Tok::Start(tag))
                }
                local_name!("caption")
                | local_name!("col")
                | local_name!("colgroup")
                | local_name!("tbody")
                | local_name!("tfoot")
                | local_name!("thead") => self.leave_table_body(Tok::Start(tag)),
                _ => self.in_table(Tok::Start(tag)),
            },
            Tok::End(name) => match name {
                local_name!("tbody") | local_name!("tfoot") | local_name!("thead") => {
                    if self.in_scope_named(Scope::Table, &name) {
                        self.clear_to(is_table_body_context);
                        self.pop();
                        self.mode = Mode::InTable;
                    }
                    Ok(Out::Continue)
                }
                local_name!("table") => self.leave_table_body(Tok::End(name)),
                local_name!("body")
                | local_name!("caption")
                | local_name!("col")
                | local_name!("colgroup")
                | local_name!("html")
                | local_name!("td")
                | local_name!("th")
                | local_name!("tr") => Ok(Out::Continue),
                _ => self.in_table(Tok::End(name)),
            },
            tok => self.in_table(tok),
        }
    }

    /// A token that ends the table body, reprocessed in the table. html5ever looks for a
    /// table, tbody or tfoot in table scope (not thead), and so does this.
    fn leave_table_body(&mut self, tok: Tok<'_, 's>) -> Step {
        let outer = self.in_scope(Scope::Table, |o| {
            o.ns == Ns::Html
                && matches!(o.name, local_name!("table") | local_name!("tbody") | local_name!("tfoot"))
        });
        if !outer {
            return Ok(Out::Continue);
        }
        self.clear_to(is_table_body_context);
        self.pop();
        self.reprocess(Mode::InTable, tok)
    }

    pub(super) fn in_row(&mut self, tok: Tok<'_, 's>) -> Step {
        match tok {
            Tok::Start(tag) => match tag.name {
                local_name!("th") | local_name!("td") => {
                    self.clear_to(is_table_row_context);
                    self.insert(tag.name, Ns::Html, tag.attrs)?;
                    self.mode = Mode::InCell;
                    self.active.push(Formatting::Marker);
                    Ok(Out::Continue)
                }
                local_name!("caption")
                | local_name!("col")
                | local_name!("colgroup")
                | local_name!("tbody")
                | local_name!("tfoot")
                | local_name!("thead")
                | local_name!("tr") => self.leave_row(Tok::Start(tag)),
                _ => self.in_table(Tok::Start(tag)),
            },
            Tok::End(name) => match name {
                local_name!("tr") => {
                    if self.in_scope_named(Scope::Table, &local_name!("tr")) {
                        self.clear_to(is_table_row_context);
                        self.pop();
                        self.mode = Mode::InTableBody;
                    }
                    Ok(Out::Continue)
                }
                local_name!("table") => self.leave_row(Tok::End(name)),
                local_name!("tbody") | local_name!("tfoot") | local_name!("thead") => {
                    if !self.in_scope_named(Scope::Table, &name) {
                        return Ok(Out::Continue);
                    }
                    self.leave_row(Tok::End(name))
                }
                local_name!("body")
                | local_name!("caption")
                | local_name!("col")
                | local_name!("colgroup")
                | local_name!("html")
                | local_name!("td")
                | local_name!("th") => Ok(Out::Continue),
                _ => self.in_table(Tok::End(name)),
            },
            tok => self.in_table(tok),
        }
    }

    /// A token that ends the row, reprocessed in the table body.
    fn leave_row(&mut self, tok: Tok<'_, 's>) -> Step {
        if !self.in_scope_named(Scope::Table, &local_name!("tr")) {
            return Ok(Out::Continue);
        }
        self.clear_to(is_table_row_context);
        self.pop();
        self.reprocess(Mode::InTableBody, tok)
    }

    pub(super) fn in_cell(&mut self, tok: Tok<'_, 's>) -> Step {
        match tok {
            Tok::End(name) => match name {
                local_name!("td") | local_name!("th") => {
                    if self.in_scope_named(Scope::Table, &name) {
                        self.generate_implied_end(None);
                        self.pop_until_named(&name);
                        self.clear_to_marker();
                        self.mode = Mode::InRow;
                    }
                    Ok(Out::Continue)
                }
                local_name!("body")
                | local_name!("caption")
                | local_name!("col")
                | local_name!("colgroup")
                | local_name!("html") => Ok(Out::Continue),
                local_name!("table")
                | local_name!("tbody")
                | local_name!("tfoot")
                | local_name!("thead")
                | local_name!("tr") => {
                    if !self.in_scope_named(Scope::Table, &name) {
                        return Ok(Out::Continue);
                    }
                    self.close_cell();
                    self.reprocess(Mode::InRow, Tok::End(name))
                }
                _ => self.in_body(Tok::End(name)),
            },
            Tok::Start(tag)
                if matches!(
                    tag.name,
                    local_name!("caption")
                        | local_name!("col")
                        | local_name!("colgroup")
                        | local_name!("tbody")
                        | local_name!("td")
                        | local_name!("tfoot")
                        | local_name!("th")
                        | local_name!("thead")
                        | local_name!("tr")
                ) =>
            {
                let cell = self.in_scope(Scope::Table, |o| {
                    o.ns == Ns::Html && matches!(o.name, local_name!("td") | local_name!("th"))
                });
                if !cell {
                    return Ok(Out::Continue);
                }
                self.close_cell();
                self.reprocess(Mode::InRow, Tok::Start(tag))
            }
            tok => self.in_body(tok),
        }
    }

    fn close_cell(&mut self) {
        self.generate_implied_end(None);
        self.pop_until(|name| matches!(*name, local_name!("td") | local_name!("th")));
        self.clear_to_marker();
    }

    /// Pops until the current node is an HTML element in `set`.
    fn clear_to(&mut self, set: fn(&LocalName) -> bool) {
        while let Some(open) = self.open.last() {
            if open.ns == Ns::Html && set(&open.name) {
                return;
            }
            self.open.pop();
        }
    }

    fn clear_to_table_context(&mut self) {
        self.clear_to(|name| {
            matches!(
                *name,
                local_name!("html") | local_name!("table") | local_name!("template")
            )
        });
    }

    /// Resets the insertion mode appropriately (no fragment case).
    pub(super) fn reset_mode(&self) -> Result<Mode, Bail> {
        for (i, open) in self.open.iter().enumerate().rev() {
            let last = i == 0;
            if open.ns != Ns::Html {
                continue;
            }
            let mode = match open.name {
                local_name!("td") | local_name!("th") if !last => Mode::InCell,
                local_name!("tr") => Mode::InRow,
                local_name!("tbody") | local_name!("thead") | local_name!("tfoot") => {
                    Mode::InTableBody
                }
                local_name!("caption") => Mode::InCaption,
                local_name!("colgroup") => Mode::InColumnGroup,
                local_name!("table") => Mode::InTable,
                local_name!("template") | local_name!("frameset") => return Err(Bail),
                local_name!("head") if !last => Mode::InHead,
                local_name!("body") => Mode::InBody,
                local_name!("html") => match self.head {
                    None => Mode::BeforeHead,
                    Some(_) => Mode::AfterHead,
                },
                _ => continue,
            };
            return Ok(mode);
        }
        Ok(Mode::InBody)
    }
}

fn is_table_body_context(name: &LocalName) -> bool {
    matches!(
        *name,
        local_name!("tbody")
            | local_name!("tfoot")
            | local_name!("thead")
            | local_name!("template")
            | local_name!("html")
    )
}

fn is_table_row_context(name: &LocalName) -> bool {
    matches!(
        *name,
        local_name!("tr") | local_name!("template") | local_name!("html")
    )
}
