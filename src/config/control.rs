//! `[state]` and `[control]`: where people's choices are kept, and what the control page at
//! `http://pith/` offers them (their own profile, per-site switches, the PAC file's bypass
//! list, the operators' section).
//!
//! Raw and validated forms live together here rather than in `raw.rs` and `config.rs`: they
//! are read by the control page alone ([`crate::net::own::control`]).

use std::path::PathBuf;
use std::sync::Arc;

use serde::Deserialize;
use toml::Spanned;

use super::{ConfigError, Credentials, RawAuth, Validator};
use crate::profile::Profile;

/// `[state]`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RawState {
    /// The state file; unset: choices are kept in memory only.
    pub path: Option<Spanned<String>>,
}

/// `[control]`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RawControl {
    /// Each client may choose its own profile and per-site switches; default true.
    pub choices: Option<bool>,
    /// The profiles offered; default: those of declutter, reader, text, pass that are defined.
    pub profiles: Option<Spanned<Vec<String>>>,
    /// Hosts (and networks) the PAC file sends direct, besides local networks.
    pub bypass: Option<Spanned<Vec<String>>>,
    /// Credentials of the operators' section (`/admin`); unset: no operators' section.
    pub admin: Option<Spanned<RawAuth>>,
}

/// Validated `[state]` and `[control]`.
#[derive(Debug, Clone, Default)]
pub struct ControlConfig {
    /// Per-client choices are on.
    pub choices: bool,
    /// The profiles a client may choose among, in the order shown; `pass` is the original.
    pub offered: Vec<Arc<Profile>>,
    /// PAC bypass entries: host names (a name covers its subdomains) or CIDR networks.
    pub bypass: Vec<String>,
    /// The state file, resolved against the config file's folder; `None`: in memory only.
    pub state_path: Option<PathBuf>,
    /// Operators' credentials for `/admin`.
    pub admin: Option<Credentials>,
}

impl ControlConfig {
    /// The offered profile named `name` (`original` is `pass`).
    pub fn offered(&self, name: &str) -> Option<&Arc<Profile>> {
        let name = if name == "original" { "pass" } else { name };
        self.offered.iter().find(|p| p.name == name)
    }
}

/// The profiles offered when `control.profiles` is unset, in this order, where defined.
const DEFAULT_OFFERED: [&str; 4] = ["declutter", "reader", "text", "pass"];

impl Validator<'_> {
    pub(super) fn control(&self, state: &RawState, c: &RawControl, profiles: &std::collections::BTreeMap<String, Arc<Profile>>) -> Result<ControlConfig, ConfigError> {
        let offered = match &c.profiles {
            None => DEFAULT_OFFERED.iter().filter_map(|n| profiles.get(*n).cloned()).collect(),
            Some(list) => {
                let mut out: Vec<Arc<Profile>> = Vec::new();
                for name in list.get_ref() {
                    let key = if name == "original" { "pass" } else { name.as_str() };
                    let Some(p) = profiles.get(key) else {
                        let known: Vec<&str> = profiles.keys().map(String::as_str).collect();
                        return Err(self.err(list.span(), "control.profiles", format!("unknown profile {name:?}; defined: {}", known.join(", "))));
                    };
                    if !out.iter().any(|o| o.name == p.name) {
                        out.push(p.clone());
                    }
                }
                out
            }
        };
        let bypass = match &c.bypass {
            None => Vec::new(),
            Some(list) => {
                for entry in list.get_ref() {
                    let plain = !entry.is_empty() && entry.len() <= 253 && entry.bytes().all(|b| b.is_ascii_alphanumeric() || b".-*:/_".contains(&b));
                    if !plain {
                        return Err(self.err(list.span(), "control.bypass", format!("{entry:?} is neither a host name (\"intranet.example\", \"*.lan\") nor a network (\"10.1.0.0/16\")")));
                    }
                    if entry.contains('/') && entry.parse::<ipnet::IpNet>().is_err() {
                        return Err(self.err(list.span(), "control.bypass", format!("{entry:?} is not a network in CIDR form (\"10.1.0.0/16\")")));
                    }
                }
                list.get_ref().clone()
            }
        };
        let state_path = match &state.path {
            None => None,
            Some(p) if p.get_ref().is_empty() => return Err(self.err(p.span(), "state.path", "must name a file (leave the key out to keep choices in memory only)")),
            Some(p) => Some(self.base.join(p.get_ref())),
        };
        let admin = match &c.admin {
            None => None,
            Some(a) => Some(self.credentials(a).map_err(|_| self.err(a.span(), "control.admin", "needs a non-empty user (without ':') and a non-empty password"))?),
        };
        Ok(ControlConfig { choices: c.choices.unwrap_or(true), offered, bypass, state_path, admin })
    }
}

#[cfg(test)]
mod tests {
    use crate::config::Config;

    fn config(text: &str) -> Result<Config, String> {
        Config::from_toml_str(text, "test.toml", None).map_err(|e| e.to_string())
    }

    #[test]
    fn defaults_offer_the_documented_profiles_in_order() {
        let c = config("").unwrap().control;
        let names: Vec<&str> = c.offered.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["declutter", "reader", "text", "pass"]);
        assert!(c.choices && c.state_path.is_none() && c.admin.is_none() && c.bypass.is_empty());
        assert_eq!(c.offered("original").map(|p| p.name.as_str()), Some("pass"));
    }

    #[test]
    fn offered_profiles_must_be_defined() {
        let c = config("[control]\nprofiles = [\"reader\", \"original\"]\n").unwrap().control;
        assert_eq!(c.offered.iter().map(|p| p.name.as_str()).collect::<Vec<_>>(), ["reader", "pass"]);
        let err = config("[control]\nprofiles = [\"reader\", \"nope\"]\n").unwrap_err();
        assert!(err.contains("test.toml:2:") && err.contains("control.profiles") && err.contains("\"nope\""), "{err}");
    }

    #[test]
    fn bypass_entries_are_names_or_networks() {
        assert!(config("[control]\nbypass = [\"intranet.example\", \"*.lan\", \"10.0.0.0/8\", \"fd00::/8\"]\n").is_ok());
        for bad in ["\"a\\\"b\"", "\"x y\"", "\"10.0.0.0/99\"", "\"\""] {
            let err = config(&format!("[control]\nbypass = [{bad}]\n")).unwrap_err();
            assert!(err.contains("control.bypass"), "{bad}: {err}");
        }
    }

    #[test]
    fn state_path_resolves_against_the_config_folder() {
        let c = Config::from_toml_str("[state]\npath = \"state.redb\"\n", "t", Some(std::path::Path::new("/etc/pith"))).unwrap();
        assert_eq!(c.control.state_path.as_deref(), Some(std::path::Path::new("/etc/pith/state.redb")));
        assert!(config("[state]\npath = \"\"\n").unwrap_err().contains("state.path"));
        assert!(config("[control]\nadmin = { user = \"op\", password = \"\" }\n").unwrap_err().contains("control.admin"));
    }
}
