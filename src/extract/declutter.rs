//! The `declutter` run: Crunch's removers in order on one tree, with the safety net.
//!
//! Order: the site rule's selectors (its `keep` protects, its `remove` removes) → ads
//! ([`super::ads`], when the context has an ad filter) → landmarks → link lists → boilerplate
//! lines → leftovers ([`super::leftovers`], with the boilerplate switch) → the site's blocks
//! before the title heading ([`super::headline`], with the link-list switch) → empty tables →
//! the removed-link retainer (which lists what the landmark, link-list, boilerplate, leftover,
//! headline and empty-table removers took, never ad links). The boilerplate remover comes
//! after the link lists: a block that is a list of links with its "Share" label is one still. Each later remover counts only what the earlier ones left,
//! and the empty-table remover comes last because the others are what empty the tables.
//!
//! # The safety net
//!
//! The removers are built to leave prose alone: a block holding a two-sentence paragraph is
//! never removed whole, and the page's main content (the deepest block holding more than half
//! of its prose) is judged leniently. A run that nevertheless takes out more than
//! [`Settings::min_kept_fraction`] (half) of the main content's prose has misfired: a site
//! rule's selector, an element-hiding rule or a landmark wrapped around the article. The page
//! is then redone from the tree as parsed with the next gentler preset
//! ([`PresetName::fallback`]: `gentle`, then `none`), and the [`Removal`] says so (the proxy
//! turns that into an `x-pith-fallback` response header). On a page without prose (a gallery,
//! a page of short lines) the same share of its visible non-link text is required instead.
//!
//! # The title heading
//!
//! The heading that names the page ([`title_heading`]: the one repeating `og:title` or
//! `<title>`, else the first `<h1>`) is served whatever a remover makes of the region around
//! it: a headline inside a header strip full of links, or under a class an ad list hides, went
//! with it, and the page then opened on a cookie notice or an "Advertisement" label. After the
//! removers, a removed title heading is rescued ([`Tree::rescue`]): it shows, whole, where it
//! stood, and the rest of the region stays removed. Protecting the region instead (as a site
//! rule's `keep` does) would keep its clutter too. The story's lead picture (`lead_image`)
//! is rescued the same way: it goes with the headline.
//!
//! Why the main content's prose and not the page's text: on the development pages a correct
//! run often removes more than half of a page's non-link text (sidebars of teasers, long
//! footers), while it keeps all of the main content's prose on every page but one whose prose
//! is spread over the whole page. A share of the page's text low enough never to fire on good
//! runs would also miss a run that took the article and left the sidebars.

use super::retainer::{self, RetainedLink};
use super::{
    ads, boilerplate, document_base, empty, headline, kept_stats_of, landmarks, leftovers, linklist, non_link_chars, prose, Context,
    Fallback, Keep, PresetName, Removal, Settings,
};
use super::pith::anchor;
use crate::dom::select::SelectorSet;
use crate::dom::{NodeId, Tree};

/// What a run did, and the links to list at the end of the page.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Outcome {
    /// Counts per remover, the preset used, the fallback if it fired.
    pub removal: Removal,
    /// The "Removed links" section's links (empty unless the retainer is on).
    pub retained: Vec<RetainedLink>,
    /// The page's title heading ([`title_heading`]), when it has one; one without gets its
    /// title from its metadata on the declutter page.
    pub title: Option<NodeId>,
}

/// Runs the removers `settings` switch on over `tree`, falling back to gentler presets when a
/// run leaves too little of the page's text. The tree ends up marked as the served run left it.
pub fn run(tree: &mut Tree, settings: &Settings, ctx: &Context<'_>) -> Outcome {
    let Some(base) = Baseline::of(tree) else {
        return finish(tree, Outcome::default(), settings.preset, 0);
    };
    let title = title_heading(tree);
    let titled = Outcome { title, ..Outcome::default() };
    if settings.preset == PresetName::None {
        return finish(tree, titled, settings.preset, base.chars);
    }
    let pristine = tree.removals();
    let mut settings = settings.clone();
    let mut fallback: Option<Fallback> = None;
    loop {
        let outcome = apply(tree, &settings, ctx, &base, title);
        let kept = base.kept_share(tree);
        let next = match settings.preset.fallback() {
            Some(next) if kept < settings.min_kept_fraction => next,
            _ => {
                let mut outcome = finish(tree, outcome, settings.preset, base.chars);
                outcome.removal.fallback = fallback;
                return outcome;
            }
        };
        // The first rejected run is the one the report names.
        fallback = Some(match fallback {
            Some(first) => Fallback { to: next, ..first },
            None => Fallback {
                from: settings.preset,
                to: next,
                kept_fraction: kept,
            },
        });
        tree.restore_removals(&pristine);
        if next == PresetName::None {
            // Not even the site rule's removals: the page as stage 1 left it.
            let mut outcome = finish(tree, titled, next, base.chars);
            outcome.removal.fallback = fallback;
            return outcome;
        }
        settings = gentler(&settings, next);
    }
}

/// What the safety net compares a run with: the page as parsed.
struct Baseline {
    body: NodeId,
    /// Visible characters of the body.
    chars: u32,
    /// Its non-link characters.
    non_link: u32,
    /// The main content ([`prose::main_content`]) and its prose.
    main: NodeId,
    main_prose: u32,
    /// The paragraph figures of the page as parsed, which each run updates as it removes.
    paragraphs: prose::Current,
}

impl Baseline {
    /// `None` for a document without a body (a frameset): nothing to declutter.
    fn of(tree: &Tree) -> Option<Baseline> {
        let body = tree.body()?;
        let stats = tree.stats(body);
        let current = prose::Current::of(tree);
        let paragraphs = current.paragraphs();
        let main = prose::main_content(tree, body, paragraphs);
        Some(Baseline {
            body,
            chars: stats.text_chars,
            non_link: non_link_chars(stats),
            main,
            main_prose: paragraphs.prose[main.index()],
            paragraphs: current,
        })
    }

    /// The share of the main content's prose a run kept; on a page without prose, the share of
    /// its non-link text; 1 for a page with neither.
    fn kept_share(&self, tree: &Tree) -> f64 {
        if self.main_prose > 0 {
            let kept = prose::prose_within(tree, self.main);
            return f64::from(kept) / f64::from(self.main_prose);
        }
        if self.non_link == 0 {
            return 1.0;
        }
        let kept = kept_stats_of(tree, self.body);
        f64::from(non_link_chars(&kept)) / f64::from(self.non_link)
    }
}

/// The settings of the next gentler preset; the user's choices (retainer, ads, the safety
/// margin) carry over, the thresholds do not.
fn gentler(settings: &Settings, next: PresetName) -> Settings {
    Settings {
        ads: settings.ads,
        retain_links: settings.retain_links,
        min_kept_fraction: settings.min_kept_fraction,
        ..next.settings()
    }
}

fn finish(tree: &Tree, mut outcome: Outcome, preset: PresetName, page_chars: u32) -> Outcome {
    let body = tree.body().unwrap_or(tree.root());
    outcome.removal.preset = Some(preset);
    outcome.removal.page_chars = page_chars;
    outcome.removal.kept_chars = kept_stats_of(tree, body).text_chars;
    outcome
}

/// The heading that names the page: the `<h1>` or `<h2>` repeating its title (`og:title` or
/// `<title>`, [`anchor::heading`]), unless a shown `<h1>` before it shares words with it (a
/// story's own headline above the title of its recipe card or product box, which repeats the
/// metadata's shorter title); else the first shown `<h1>` with text.
pub fn title_heading(tree: &Tree) -> Option<NodeId> {
    let first_h1 = || {
        let body = tree.body()?;
        tree.descendants(body)
            .find(|&id| tree.tag(id) == Some("h1") && tree.is_shown(id) && tree.stats(id).text_chars > 0)
    };
    match anchor::heading(tree, &anchor::Title::of(tree)) {
        Some(repeating) if tree.tag(repeating) != Some("h1") => match first_h1() {
            Some(h1) if h1.index() < repeating.index() && shares_words(tree, h1, repeating) => Some(h1),
            _ => Some(repeating),
        },
        Some(repeating) => Some(repeating),
        None => first_h1(),
    }
}

/// Whether two headings share at least two words of three letters or more.
fn shares_words(tree: &Tree, a: NodeId, b: NodeId) -> bool {
    let words = |id: NodeId| -> Vec<String> {
        crate::render::text::render_node(tree, id)
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| w.chars().count() >= 3)
            .map(str::to_lowercase)
            .collect()
    };
    let theirs = words(b);
    let mut mine = words(a);
    mine.sort();
    mine.dedup();
    mine.iter().filter(|w| theirs.contains(w)).count() >= 2
}

/// How far past the title heading (in nodes) the lead image is looked for.
const LEAD_IMAGE_REACH: usize = 400;

/// The article's lead picture: the first image after the title heading and before the body
/// text (a second paragraph of 80 characters), else the last one above it in the same compact
/// header block, that shows, names an address, is no tracking pixel and is not in a link (a
/// byline's portrait or a teaser's thumbnail, passed over); with its `<figure>` (and caption)
/// when it has one.
///
/// Like the title heading it is served whatever a remover makes of its region: a headline and
/// its photograph often share a header strip full of share buttons, which the landmark remover
/// takes whole, and the page then lost the picture that goes with the story.
fn lead_image(tree: &Tree, title: NodeId) -> Option<NodeId> {
    below_title(tree, title).or_else(|| above_title(tree, title))
}

/// The first picture after the title heading, before the body text.
fn below_title(tree: &Tree, title: NodeId) -> Option<NodeId> {
    let after = title.index() + tree.descendants(title).len();
    // A summary paragraph often sits between headline and picture; the second is body text.
    let mut paragraphs = 0;
    for id in tree.descendants(tree.root()).skip(after).take(LEAD_IMAGE_REACH) {
        match tree.tag(id) {
            Some("p") if non_link_chars(tree.stats(id)) >= 80 => {
                paragraphs += 1;
                if paragraphs == 2 {
                    return None;
                }
            }
            Some("img") if super::is_picture(tree, id) && !is_linked(tree, id) => return Some(with_figure(tree, id)),
            _ => {}
        }
    }
    None
}

/// How many nodes before the title heading a header block may begin for a picture in it to
/// be the title's: a compact header, not the page's top.
const HEADER_REACH: usize = 100;

/// A picture set above the headline in the same compact header block (its parent or
/// grandparent): the last one before the title heading.
fn above_title(tree: &Tree, title: NodeId) -> Option<NodeId> {
    let block = tree.ancestors(title).take(2).filter(|&a| title.index() - a.index() <= HEADER_REACH).last()?;
    let before = title.index() - block.index();
    let picture = tree
        .descendants(block)
        .take(before)
        .filter(|&id| tree.tag(id) == Some("img") && super::is_picture(tree, id) && !is_linked(tree, id))
        .last()?;
    Some(with_figure(tree, picture))
}

/// Whether an element is inside a link.
fn is_linked(tree: &Tree, id: NodeId) -> bool {
    tree.ancestors(id).any(|a| tree.tag(a) == Some("a"))
}

/// A picture's `<figure>` (with its caption) when it has one close above it, else itself.
fn with_figure(tree: &Tree, img: NodeId) -> NodeId {
    tree.ancestors(img).take(4).find(|&a| tree.tag(a) == Some("figure")).unwrap_or(img)
}


/// One pass of every remover the settings switch on, from the tree whose paragraph figures
/// are `pristine`; `title` ([`title_heading`]) is rescued if a remover took it.
fn apply(tree: &mut Tree, settings: &Settings, ctx: &Context<'_>, base: &Baseline, title: Option<NodeId>) -> Outcome {
    let mut removal = Removal::default();
    // Kept current through the removals, for the landmark and link-list removers.
    let mut paragraphs = base.paragraphs.clone();
    let kept_nodes = match ctx.site {
        Some(site) => selected(tree, &site.keep),
        None => Vec::new(),
    };
    let keep = Keep::from_nodes(tree, kept_nodes.iter().copied());
    if let Some(site) = ctx.site {
        let removed = remove_selected(tree, &site.remove, &keep);
        paragraphs.removed(tree, &removed);
        removal.site = removed.len();
    }
    if let (true, Some(filter)) = (settings.ads, ctx.ads) {
        // Ad links are not retained: they lead to ad servers.
        let report = ads::remove_ads_keeping(tree, filter, ctx.page_url, &kept_nodes);
        paragraphs.removed(tree, &report.removed);
        removal.ads = report.removed.len();
    }
    let mut retainable: Vec<NodeId> = Vec::new();
    if settings.landmarks {
        let removed = landmarks::remove_with(tree, &keep, paragraphs.paragraphs());
        paragraphs.removed(tree, &removed);
        removal.landmarks = removed.len();
        retainable.extend(removed);
    }
    if settings.link_lists {
        let removed = linklist::remove_with(tree, settings, &keep, paragraphs.paragraphs());
        // Current for the leftover and headline removers, which protect prose.
        paragraphs.removed(tree, &removed);
        removal.link_lists = removed.len();
        retainable.extend(removed);
    }
    if settings.boilerplate {
        let removed = boilerplate::remove(tree, base.body, Some(base.main), &keep, boilerplate::Phrases::builtin());
        paragraphs.removed(tree, &removed);
        removal.boilerplate = removed.len();
        retainable.extend(removed);
    }
    if settings.boilerplate {
        let prose = &paragraphs.paragraphs().prose;
        let protect = leftovers::Protect { main: base.main, title, prose };
        let removed = leftovers::remove(tree, base.body, &protect, &keep, leftovers::Phrases::builtin());
        paragraphs.removed(tree, &removed);
        removal.boilerplate += removed.len();
        retainable.extend(removed);
    }
    if let (true, Some(heading)) = (settings.link_lists, title) {
        if tree.is_removed(heading) {
            tree.rescue(heading);
        }
        let removed = headline::remove(tree, heading, base.main, &paragraphs.paragraphs().prose, &keep);
        paragraphs.removed(tree, &removed);
        removal.link_lists += removed.len();
        retainable.extend(removed);
    }
    if settings.empty_tables {
        let removed = empty::remove(tree, settings.empty_min_chars, &keep);
        removal.empty = removed.len();
        retainable.extend(removed);
    }
    if let Some(heading) = title.filter(|&h| tree.is_removed(h)) {
        tree.rescue(heading);
    }
    if let Some(picture) = title.and_then(|h| lead_image(tree, h)).filter(|&p| tree.is_removed(p)) {
        tree.rescue(picture);
    }
    let mut retained = Vec::new();
    if settings.retain_links && !retainable.is_empty() {
        let base = document_base(tree, ctx.page_url);
        retained = retainer::collect(tree, &retainable, base.as_deref());
        removal.links_retained = retained.len();
    }
    Outcome { removal, retained, title }
}

/// The elements a site rule's selectors match, in document order.
fn selected(tree: &Tree, selectors: &[crate::dom::select::Selector]) -> Vec<NodeId> {
    if selectors.is_empty() {
        return Vec::new();
    }
    SelectorSet::new(selectors.iter().cloned()).matching(tree, tree.root())
}

/// Removes what the site's `remove` selectors match, unless kept; returns what it removed.
fn remove_selected(
    tree: &mut Tree,
    selectors: &[crate::dom::select::Selector],
    keep: &Keep,
) -> Vec<NodeId> {
    let mut removed = Vec::new();
    for id in selected(tree, selectors) {
        if !keep.contains(id) && !tree.is_removed(id) {
            tree.remove(id);
            removed.push(id);
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::extract::sites::SiteRules;

    const PROSE: &str = "This is a paragraph of article text that runs long enough to be \
        prose, with two full sentences. It says something a reader came to read, not a menu.";

    fn page() -> String {
        format!(
            concat!(
                "<body><div id=top><ul><li><a href=/home>Home</a><li><a href=/news>News</a></ul></div>",
                "<table id=layout><tr><td><h3>Box</h3></td></tr></table>",
                "<article><p>{p}</p><p>{p}</p></article>",
                "<footer><a href=/about>About</a> <a href=/contact>Contact</a></footer></body>"
            ),
            p = PROSE
        )
    }

    fn text_of(tree: &Tree) -> String {
        crate::render::text::render(tree)
    }

    #[test]
    fn the_title_heading_is_rescued_from_a_removed_header_alone() {
        // The headline sits in a header strip of links, which the landmark remover takes whole.
        let html = format!(
            concat!(
                "<head><title>Storm closes the harbour for a week | The Daily Site</title></head>",
                "<body><header><ul><li><a href=/>Home</a><li><a href=/news>News</a><li><a href=/sport>Sport</a></ul>",
                "<h1>Storm closes the harbour for a week</h1>",
                "<ul><li><a href=/a>Login</a><li><a href=/b>Subscribe</a><li><a href=/c>Search</a></ul></header>",
                "<article><p>{p}</p><p>{p}</p></article>",
                "<footer><a href=/about>About</a> <a href=/contact>Contact</a></footer></body>"
            ),
            p = PROSE
        );
        let mut tree = Tree::parse(&html);
        let outcome = run(&mut tree, &PresetName::Automatic.settings(), &Context::default());
        assert!(outcome.removal.landmarks + outcome.removal.link_lists > 0, "{:?}", outcome.removal);
        assert_eq!(text_of(&tree), format!("Storm closes the harbour for a week\n{PROSE}\n{PROSE}\n"));
    }

    #[test]
    fn the_lead_picture_is_rescued_with_its_headline() {
        // Headline and photograph share a header strip of share links, which goes whole.
        let html = format!(
            concat!(
                "<head><title>Storm closes the harbour for a week | The Daily Site</title></head>",
                "<body><header><ul><li><a href=/>Home</a><li><a href=/news>News</a><li><a href=/sport>Sport</a></ul>",
                "<h1>Storm closes the harbour for a week</h1>",
                "<ul><li><a href=/share/a>Share</a><li><a href=/share/b>Tweet</a><li><a href=/share/c>Mail</a></ul>",
                "<img src=pixel.gif width=1 height=1>",
                "<figure><img id=lead src=harbour.jpg alt='The harbour'><figcaption>The harbour at dawn</figcaption></figure>",
                "<ul><li><a href=/x>More</a><li><a href=/y>Most read</a><li><a href=/z>Video</a></ul></header>",
                "<article><p>{p}</p><p>{p}</p><a href=/other><img src=teaser.jpg></a></article></body>"
            ),
            p = PROSE
        );
        let mut tree = Tree::parse(&html);
        run(&mut tree, &PresetName::Automatic.settings(), &Context::default());
        let lead = tree.descendants(tree.root()).find(|&n| tree.attr(n, "id") == Some("lead")).unwrap();
        assert!(!tree.is_removed(lead), "the lead picture shows");
        assert_eq!(text_of(&tree), format!("Storm closes the harbour for a week\nThe harbour at dawn\n{PROSE}\n{PROSE}\n"));
        // A picture after the body text began is no lead picture; a linked one is passed over.
        let tree = Tree::parse(&format!("<h1>T</h1><p>{PROSE}</p><p>{PROSE}</p><img src=late.jpg>"));
        assert_eq!(lead_image(&tree, tree.descendants(tree.root()).find(|&n| tree.tag(n) == Some("h1")).unwrap()), None);
        let tree = Tree::parse("<h1>T</h1><a href=/s><img src=teaser.jpg></a><img src=next.jpg>");
        let next = tree.descendants(tree.root()).find(|&n| tree.attr(n, "src") == Some("next.jpg"));
        assert_eq!(lead_image(&tree, tree.descendants(tree.root()).find(|&n| tree.tag(n) == Some("h1")).unwrap()), next);
        // A hero picture above the headline in its header; not a logo far up the page.
        let h1_of = |t: &Tree| t.descendants(t.root()).find(|&n| t.tag(n) == Some("h1")).unwrap();
        let tree = Tree::parse(&format!("<header><img id=hero src=hero.jpg><h1>T</h1></header><p>{PROSE}</p><p>{PROSE}</p>"));
        let hero = tree.descendants(tree.root()).find(|&n| tree.attr(n, "id") == Some("hero"));
        assert_eq!(lead_image(&tree, h1_of(&tree)), hero);
        let far = format!("<div><img src=logo.png>{}<h1>T</h1></div><p>{PROSE}</p><p>{PROSE}</p>", "<span>x</span>".repeat(120));
        let tree = Tree::parse(&far);
        assert_eq!(lead_image(&tree, h1_of(&tree)), None);
    }

    #[test]
    fn without_a_heading_repeating_the_title_the_first_h1_is_the_title_heading() {
        let tree = Tree::parse("<title>Other words entirely</title><body><h2>Section</h2><h1>Main story</h1><h1>Second</h1>");
        let h = title_heading(&tree).expect("an h1");
        assert_eq!(crate::render::text::render_node(&tree, h).trim(), "Main story");
        let tree = Tree::parse("<title>Storm closes the harbour for a week</title><body><h1>Daily Site</h1><h2>Storm closes the harbour for a week</h2>");
        let h = title_heading(&tree).expect("the repeating h2");
        assert_eq!(tree.tag(h), Some("h2"));
    }

    #[test]
    fn automatic_removes_menus_and_leftovers() {
        let mut tree = Tree::parse(&page());
        let outcome = run(
            &mut tree,
            &PresetName::Automatic.settings(),
            &Context::default(),
        );
        assert_eq!(text_of(&tree), format!("{PROSE}\n{PROSE}\n"));
        let r = &outcome.removal;
        assert_eq!(
            (r.landmarks, r.link_lists, r.empty, r.fallback),
            (1, 1, 1, None)
        );
        assert_eq!(r.preset, Some(PresetName::Automatic));
        assert_eq!(r.kept_chars as usize, 2 * PROSE.len());
        assert!(outcome.retained.is_empty(), "retainer off by default");
    }

    #[test]
    fn retainer_lists_removed_links_once() {
        let mut tree = Tree::parse(&page());
        let settings = Settings {
            retain_links: true,
            ..PresetName::Automatic.settings()
        };
        let ctx = Context {
            page_url: Some("https://e.example/story"),
            ..Context::default()
        };
        let outcome = run(&mut tree, &settings, &ctx);
        let urls: Vec<&str> = outcome.retained.iter().map(|l| l.url.as_str()).collect();
        assert_eq!(
            urls,
            [
                "https://e.example/home",
                "https://e.example/news",
                "https://e.example/about",
                "https://e.example/contact"
            ]
        );
        assert_eq!(outcome.removal.links_retained, 4);
    }

    #[test]
    fn safety_net_falls_back_when_prose_would_go() {
        // Short prose inside two link-dense blocks, each holding half of the page's prose:
        // automatic removes both, gentle (table cells only) neither.
        let short = "A sentence of prose that is shorter than a paragraph needs to be protected.";
        let block = format!(
            "<div><p>{short}</p>{}</div>",
            "<a href=/x>x</a> ".repeat(30)
        );
        let mut tree = Tree::parse(&format!("{block}{block}"));
        let outcome = run(
            &mut tree,
            &PresetName::Automatic.settings(),
            &Context::default(),
        );
        let fallback = outcome.removal.fallback.expect("fallback fired");
        assert_eq!(
            (fallback.from, fallback.to),
            (PresetName::Automatic, PresetName::Gentle)
        );
        assert_eq!(fallback.kept_fraction, 0.0);
        assert_eq!(outcome.removal.preset, Some(PresetName::Gentle));
        assert_eq!(text_of(&tree).matches(short).count(), 2);
    }

    #[test]
    fn safety_net_ends_at_the_stage_one_page() {
        let rule = SiteRules::parse_str("site e.example\nremove p\n", "t.rules").expect("rule");
        let ctx = Context {
            site: Some(&rule),
            ..Context::default()
        };
        let mut tree = Tree::parse(&page());
        let before = text_of(&tree);
        let outcome = run(&mut tree, &PresetName::Automatic.settings(), &ctx);
        let fallback = outcome.removal.fallback.expect("fallback fired");
        assert_eq!(
            (fallback.from, fallback.to),
            (PresetName::Automatic, PresetName::None)
        );
        assert_eq!(text_of(&tree), before);
        assert!(fallback.kept_fraction < 0.05);
        assert!(
            fallback.to_string().starts_with("none; automatic kept "),
            "{fallback}"
        );
    }

    #[test]
    fn site_rules_keep_and_remove() {
        let rule = SiteRules::parse_str(
            "site e.example\nkeep #top ul\nremove article p:first-child\noff empty-tables\n",
            "test.rules",
        )
        .expect("valid rule");
        let mut settings = PresetName::Automatic.settings();
        settings.apply_site(&rule);
        let ctx = Context {
            site: Some(&rule),
            ..Context::default()
        };
        let mut tree = Tree::parse(&page());
        let outcome = run(&mut tree, &settings, &ctx);
        let text = text_of(&tree);
        assert!(text.contains("Home\nNews"), "{text}");
        assert!(text.contains("Box"), "empty tables off: {text}");
        assert_eq!(text.matches(PROSE).count(), 1, "{text}");
        assert_eq!(outcome.removal.site, 1);
    }

    #[test]
    fn preset_none_changes_nothing() {
        let mut tree = Tree::parse(&page());
        let before = text_of(&tree);
        let outcome = run(&mut tree, &PresetName::None.settings(), &Context::default());
        assert_eq!(text_of(&tree), before);
        assert_eq!(outcome.removal.preset, Some(PresetName::None));
    }

    #[test]
    fn empty_and_odd_documents_do_not_panic() {
        for html in [
            "",
            "<frameset><frame src=x></frameset>",
            "<a href=x>",
            "<table><td>",
        ] {
            let mut tree = Tree::parse(html);
            run(
                &mut tree,
                &PresetName::Automatic.settings(),
                &Context::default(),
            );
        }
    }
}
