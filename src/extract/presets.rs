//! Crunch's named presets as data: which removers run and with which thresholds.
//!
//! Crunch shipped nine presets (news, news home page, shopping, government, education,
//! text-heavy, link-heavy, automatic, custom) because one set of thresholds cannot suit an
//! article, a portal and a shop alike; a known site mapped to one of them. pith keeps the names
//! so that site rules ([`super::sites`]) and profiles can pick one, and adds `gentle`, the
//! fallback of the safety net, and `none` (no removers: the stage-1 page).
//!
//! Each preset is one [`Settings`] value built by [`PresetName::settings`]; the table in that
//! function is the whole definition, with each preset's intent beside it. Thresholds are
//! Crunch's where Crunch had one (links ÷ (non-link characters ÷ 5) > 0.25; 12 characters make
//! a table non-empty) and reasoned elsewhere; none is fitted to particular pages.

use std::fmt;

use super::Settings;

/// Which elements the link-list remover judges.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Containers {
    /// Table cells only (`td`, `th`): Crunch's rule, written when layouts were tables.
    Cells,
    /// Cells and the block containers pages lay out with today: `div`, lists, `nav`, `aside`,
    /// `section`, `header`, `footer`, `menu`, `dl`, `table`.
    Blocks,
}

/// A named preset.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PresetName {
    /// The default: generic settings for the pages people read most, articles with navigation
    /// around them.
    Automatic,
    /// A news article: prose in the middle, menus, teasers and share bars around it.
    News,
    /// A news front page: the headlines are links and they are the content.
    NewsHome,
    /// A shop: product grids and facets are link-dense but are what the visitor came for.
    Shopping,
    /// A government site: long documents under deep navigation that must stay reachable.
    Government,
    /// A school or university site: like government, documents under deep navigation.
    Education,
    /// Prose first (documentation, encyclopedias, essays): anything link-dense is clutter.
    TextHeavy,
    /// Directories, link portals, aggregators: the links are the content.
    LinkHeavy,
    /// A profile's own settings: automatic's values, changed by the profile's keys.
    Custom,
    /// The safety net's fallback: only Crunch's table-cell rule, four times as lenient.
    Gentle,
    /// No removers at all: the page as stage 1 left it.
    None,
}

impl PresetName {
    /// Every preset, in the order documentation lists them.
    pub const ALL: [PresetName; 11] = [
        PresetName::Automatic,
        PresetName::News,
        PresetName::NewsHome,
        PresetName::Shopping,
        PresetName::Government,
        PresetName::Education,
        PresetName::TextHeavy,
        PresetName::LinkHeavy,
        PresetName::Custom,
        PresetName::Gentle,
        PresetName::None,
    ];

    /// The name used in config and site files (`news-home`, `text-heavy`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            PresetName::Automatic => "automatic",
            PresetName::News => "news",
            PresetName::NewsHome => "news-home",
            PresetName::Shopping => "shopping",
            PresetName::Government => "government",
            PresetName::Education => "education",
            PresetName::TextHeavy => "text-heavy",
            PresetName::LinkHeavy => "link-heavy",
            PresetName::Custom => "custom",
            PresetName::Gentle => "gentle",
            PresetName::None => "none",
        }
    }

    /// The preset of a config or site-file name; `None` for an unknown name.
    pub fn parse(name: &str) -> Option<PresetName> {
        PresetName::ALL.into_iter().find(|p| p.as_str() == name)
    }

    /// The next gentler preset, which the safety net uses when this one leaves too little of
    /// a page: every preset falls back to `gentle`, `gentle` to `none`.
    pub fn fallback(self) -> Option<PresetName> {
        match self {
            PresetName::None => None,
            PresetName::Gentle => Some(PresetName::None),
            _ => Some(PresetName::Gentle),
        }
    }

    /// The preset's settings. The values, and why:
    ///
    /// - link ratio 0.25 is Crunch's: fewer than 20 characters of other text per link marks a
    ///   block as navigation. It applies inside the main content; presets whose content is made
    ///   of links raise it (news-home, shopping: 1.0 and 0.5) or switch the remover off
    ///   (link-heavy); text-heavy lowers it.
    /// - strict link ratio 0.05 outside the main content: a link per sentence (about 20 words)
    ///   or more, with no two-sentence paragraph, is a list of headlines or teasers there.
    ///   Presets whose links are content use the same value as inside.
    /// - a paragraph of 150 characters (two sentences) of non-link text protects a link-dense
    ///   block from being removed whole: menus and link lists have no such paragraph, a block
    ///   that wraps the article and its menus has.
    /// - 12 characters is the minimum text of a non-empty table in Crunch's shipped settings.
    /// - the retainer is on where navigation must stay reachable (government, education) or is
    ///   part of what the page offers (news-home, shopping), off elsewhere as in Crunch.
    /// - `min_kept_fraction` 0.5: a run must keep at least half of the main content's prose
    ///   (the removers are built to keep all of it; see [`super::declutter`] for why this
    ///   measure and not the page's text).
    pub fn settings(self) -> Settings {
        let base = Settings {
            preset: self,
            link_ratio: 0.25,
            strict_link_ratio: 0.05,
            containers: Containers::Blocks,
            nav_hints: true,
            protect_paragraph_chars: 150,
            empty_min_chars: 12,
            ads: true,
            landmarks: true,
            boilerplate: true,
            link_lists: true,
            empty_tables: true,
            retain_links: false,
            min_kept_fraction: 0.5,
        };
        match self {
            PresetName::Automatic | PresetName::News | PresetName::Custom => base,
            PresetName::NewsHome => Settings {
                link_ratio: 1.0,
                strict_link_ratio: 1.0,
                retain_links: true,
                ..base
            },
            PresetName::Shopping => Settings {
                link_ratio: 0.5,
                strict_link_ratio: 0.25,
                retain_links: true,
                ..base
            },
            PresetName::Government | PresetName::Education => Settings {
                retain_links: true,
                ..base
            },
            PresetName::TextHeavy => Settings {
                link_ratio: 0.2,
                protect_paragraph_chars: 100,
                empty_min_chars: 24,
                ..base
            },
            PresetName::LinkHeavy => Settings {
                link_lists: false,
                ..base
            },
            // Crunch's table-cell rule only, four times as lenient: what is left when a preset
            // removed too much.
            PresetName::Gentle => Settings {
                landmarks: false,
                boilerplate: false,
                link_ratio: 1.0,
                strict_link_ratio: 1.0,
                containers: Containers::Cells,
                nav_hints: false,
                empty_min_chars: 1,
                ..base
            },
            PresetName::None => Settings {
                ads: false,
                landmarks: false,
                boilerplate: false,
                link_lists: false,
                empty_tables: false,
                ..base
            },
        }
    }
}

impl fmt::Display for PresetName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for preset in PresetName::ALL {
            assert_eq!(PresetName::parse(preset.as_str()), Some(preset));
            assert_eq!(preset.settings().preset, preset);
        }
        assert_eq!(PresetName::parse("newspaper"), None);
    }

    #[test]
    fn every_name_a_site_file_accepts_is_a_preset() {
        for name in super::super::sites::PRESET_NAMES {
            assert!(PresetName::parse(name).is_some(), "{name}");
        }
    }

    #[test]
    fn fallback_chain_ends_at_none() {
        let mut preset = PresetName::NewsHome;
        let mut steps = vec![preset];
        while let Some(next) = preset.fallback() {
            preset = next;
            steps.push(preset);
        }
        assert_eq!(
            steps,
            [PresetName::NewsHome, PresetName::Gentle, PresetName::None]
        );
    }

    #[test]
    fn presets_differ_where_their_intent_says() {
        let auto = PresetName::Automatic.settings();
        assert_eq!(
            (auto.link_ratio, auto.empty_min_chars, auto.retain_links),
            (0.25, 12, false)
        );
        assert!(PresetName::NewsHome.settings().link_ratio > auto.link_ratio);
        assert!(PresetName::TextHeavy.settings().link_ratio < auto.link_ratio);
        assert!(!PresetName::LinkHeavy.settings().link_lists);
        assert!(PresetName::Government.settings().retain_links);
        let gentle = PresetName::Gentle.settings();
        assert_eq!(gentle.containers, Containers::Cells);
        assert!(gentle.link_ratio > auto.link_ratio && !gentle.nav_hints && !gentle.landmarks);
        for preset in PresetName::ALL {
            let s = preset.settings();
            assert!(
                s.strict_link_ratio <= s.link_ratio,
                "{preset}: strict is never looser"
            );
        }
        let none = PresetName::None.settings();
        assert!(!none.ads && !none.landmarks && !none.link_lists && !none.empty_tables);
    }
}
