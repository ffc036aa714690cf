//! The HTML of the control page and the operators' section: plain forms (no scripts), one
//! `h1`, every control labelled and grouped in a fieldset, usable in a text browser. The
//! look is [`own::page`]'s, dark mode included.

use std::fmt::Write;

use http::{Response, StatusCode};

use crate::net::exchange::bodies::ProxyBody;
use crate::net::own;
use crate::net::State;
use crate::net::choices::Prefs;
use crate::config::ListenerConfig;
use crate::profile::Profile;

/// What a profile does, in a few words, for the radio buttons.
fn describe(p: &Profile) -> String {
    match p.name.as_str() {
        "pass" => "original: pages as the site sends them".into(),
        "declutter" => "de-cluttered: without ads, scripts and clutter".into(),
        "reader" => "reading mode: the main text alone".into(),
        "text" => "plain text: the words of each page".into(),
        _ if p.is_pass() => "original".into(),
        _ if p.reader.is_some() => format!("{}: reading mode", p.name),
        _ => p.name.clone(),
    }
}

/// A short name of a profile, for sentences and the switch list.
fn short(p: &str) -> &str {
    match p {
        "pass" => "the original",
        "reader" => "reading mode",
        "declutter" => "de-cluttered",
        "text" => "plain text",
        other => other,
    }
}

/// A byte count for people.
fn amount(n: u64) -> String {
    match n {
        n if n >= 10 << 20 => format!("{} MB", n >> 20),
        n if n >= 10 << 10 => format!("{} kB", n >> 10),
        n => format!("{n} bytes"),
    }
}

/// `http://pith/`: what pith does for the client `who`, and its choices; `address` is the
/// `host:port` a device sets to use this listener.
pub fn home(state: &State, listener: &ListenerConfig, address: &str, who: &str, prefs: &Prefs, token: &str) -> Response<ProxyBody> {
    let cfg = &state.config.control;
    let token = own::escape(token);
    let mut b = String::new();
    let (kind, name) = who.split_once(':').unwrap_or(("ip", who));
    let known = if kind == "user" { format!("as the user <strong>{}</strong>", own::escape(name)) } else { format!("by its address, <strong>{}</strong>", own::escape(name)) };
    let _ = write!(b, "<p>pith is a proxy that serves the pith of every page: no scripts, ads or clutter. It knows this device {known}.</p>");
    let default = &listener.profile.name;
    let current = prefs.profile.as_deref().filter(|p| cfg.offered(p).is_some());
    b.push_str("<h2>What pith does for you</h2>");
    match current {
        Some(p) => {
            let _ = write!(b, "<p>Pages are served <strong>{}</strong> (your choice; this proxy's default is {}).</p>", own::escape(short(p)), own::escape(short(default)));
        }
        None => {
            let _ = write!(b, "<p>Pages are served <strong>{}</strong> (this proxy's default).</p>", own::escape(short(default)));
        }
    }
    if !cfg.choices {
        b.push_str("<p>Choices are off on this proxy: every page is served as its operator set.</p>");
    } else {
        b.push_str("<form method=\"post\" action=\"/choose\"><fieldset><legend>How pages are served to you</legend>");
        let _ = write!(b, "<input type=\"hidden\" name=\"token\" value=\"{token}\">");
        // The default is one choice, not two: when it is among the offered profiles, that
        // profile's entry is the default's (an empty value: follow the default), so the list
        // never reads "this proxy's default (de-cluttered)" above "de-cluttered".
        let default_offered = cfg.offered.iter().any(|p| p.name == *default);
        if !default_offered {
            let _ = write!(
                b,
                "<div><input type=\"radio\" id=\"p-default\" name=\"profile\" value=\"\"{}> <label for=\"p-default\">this proxy's default ({})</label></div>",
                if current.is_none() { " checked" } else { "" },
                own::escape(short(default))
            );
        }
        for (i, p) in cfg.offered.iter().enumerate() {
            let is_default = p.name == *default;
            let chosen = if is_default { current.is_none() || current == Some(p.name.as_str()) } else { current == Some(p.name.as_str()) };
            let checked = if chosen { " checked" } else { "" };
            let (value, label) = if is_default { (String::new(), format!("{} (this proxy's default)", describe(p))) } else { (p.name.clone(), describe(p)) };
            let _ = write!(
                b,
                "<div><input type=\"radio\" id=\"p-{i}\" name=\"profile\" value=\"{}\"{checked}> <label for=\"p-{i}\">{}</label></div>",
                own::escape(&value),
                own::escape(&label)
            );
        }
        b.push_str("<p><button type=\"submit\">Save my choice</button></p></fieldset></form>");
        b.push_str("<h2>Per-site switches</h2>");
        if prefs.sites.is_empty() {
            b.push_str("<p>No site has a switch: every site is served as above.</p>");
        } else {
            b.push_str("<ul>");
            for (host, mode) in &prefs.sites {
                let _ = write!(
                    b,
                    "<li><strong>{h}</strong> (and its subdomains): {m} <form method=\"post\" action=\"/site\" style=\"display:inline\">\
                     <input type=\"hidden\" name=\"token\" value=\"{token}\"><input type=\"hidden\" name=\"host\" value=\"{h}\">\
                     <input type=\"hidden\" name=\"mode\" value=\"\"><button type=\"submit\">Remove the switch for {h}</button></form></li>",
                    h = own::escape(host),
                    m = own::escape(short(mode)),
                );
            }
            b.push_str("</ul>");
        }
        b.push_str("<form method=\"post\" action=\"/site\"><fieldset><legend>Add a switch for one site</legend>");
        let _ = write!(b, "<input type=\"hidden\" name=\"token\" value=\"{token}\">");
        b.push_str("<p><label for=\"site-host\">Site (host name, such as example.com)</label><br><input type=\"text\" id=\"site-host\" name=\"host\" required autocomplete=\"off\" spellcheck=\"false\"></p>");
        b.push_str("<p><label for=\"site-mode\">Serve it</label><br><select id=\"site-mode\" name=\"mode\">");
        for p in &cfg.offered {
            let _ = write!(b, "<option value=\"{}\">{}</option>", own::escape(&p.name), own::escape(&describe(p)));
        }
        b.push_str("</select></p><p><button type=\"submit\">Add the switch</button></p></fieldset></form>");
        if state.config.profiles.values().any(|p| p.bar && !p.is_pass()) {
            b.push_str("<p>Each rewritten page starts with a line of links that show that one page as the original or in reading mode.</p>");
        }
        match &cfg.state_path {
            Some(_) => b.push_str("<p>pith keeps these choices across restarts.</p>"),
            None => b.push_str("<p>This proxy keeps choices in memory only: they end when it restarts.</p>"),
        }
    }
    let mine = state.observer.client(who);
    b.push_str("<h2>Traffic in the last hour</h2>");
    if mine.origin == 0 && mine.client == 0 {
        b.push_str("<p>Nothing served to this device yet.</p>");
    } else {
        let saved = mine.origin.saturating_sub(mine.client);
        let _ = write!(
            b,
            "<p>Sites sent {} for you; pith sent you {}{}.</p>",
            amount(mine.origin),
            amount(mine.client),
            if saved > 0 { format!(", saving {}", amount(saved)) } else { String::new() }
        );
    }
    let _ = write!(b, "<h2>Read a page</h2><p>Without setting a proxy: any address, through pith.</p>{}", super::box_html(Some(listener)));
    b.push_str("<h2>Set up a device</h2><p>Set this proxy in the device's network settings, or give it the automatic configuration address <a href=\"/proxy.pac\"><code>http://pith/proxy.pac</code></a> (also at <code>/wpad.dat</code>).</p>");
    let address = own::escape(address);
    let _ = write!(
        b,
        "<p>This listener's address is <code>{address}</code>: set it as the HTTP proxy (host and port), or, on a device not yet using pith, give the automatic configuration address <code>http://{address}/proxy.pac</code>.</p>"
    );
    if state.certs.is_some() {
        b.push_str("<h2>HTTPS</h2><p><a href=\"/ca\">Install pith's certificate</a> so that pith can serve HTTPS pages too.</p>");
    }
    let _ = write!(b, "<p><small>pith {} · <a href=\"/metrics\">metrics</a></small></p>", env!("CARGO_PKG_VERSION"));
    own::page(StatusCode::OK, "pith", &b)
}

/// `/admin`: the configuration in force and the purge form; `done` reports the last action.
pub fn admin(state: &State, token: &str, done: Option<&str>) -> Response<ProxyBody> {
    let c = &state.config;
    let mut b = String::new();
    if let Some(done) = done {
        let _ = write!(b, "<p role=\"status\"><strong>{}</strong></p>", own::escape(done));
    }
    b.push_str("<h2>Configuration in force</h2><ul>");
    for l in &state.listeners {
        let _ = write!(
            b,
            "<li>listener <code>{}</code>: profile {}, {} allowed network(s), {}</li>",
            own::escape(&l.address.to_string()),
            own::escape(&l.profile.name),
            l.allow.len(),
            if l.auth.is_some() { "with auth" } else { "without auth" }
        );
    }
    let profiles: Vec<String> = c.profiles.keys().map(|k| own::escape(k)).collect();
    let _ = write!(b, "<li>profiles: {}</li>", profiles.join(", "));
    let offered: Vec<String> = c.control.offered.iter().map(|p| own::escape(&p.name)).collect();
    let _ = write!(b, "<li>choices: {}; offered: {}</li>", if c.control.choices { "on" } else { "off" }, offered.join(", "));
    let state_file = c.control.state_path.as_ref().map_or("none (memory only)".to_string(), |p| p.display().to_string());
    let _ = write!(b, "<li>state file: <code>{}</code></li>", own::escape(&state_file));
    let _ = write!(
        b,
        "<li>cache: {}</li><li>HTTPS interception: {}</li></ul>",
        if c.cache.enabled { format!("on, up to {} bytes{}", c.cache.max_bytes, if c.cache.disk.is_some() { ", with a disk tier" } else { "" }) } else { "off".into() },
        if c.intercept.is_active() { "on" } else { "off" }
    );
    let top = state.observer.top_sites(20);
    if !top.is_empty() {
        b.push_str("<h2>Sites in the last hour</h2><table><thead><tr><th scope=\"col\">site</th><th scope=\"col\">from the site</th><th scope=\"col\">to clients</th></tr></thead><tbody>");
        for (host, bytes) in top {
            let _ = write!(b, "<tr><td>{}</td><td>{}</td><td>{}</td></tr>", own::escape(&host), amount(bytes.origin), amount(bytes.client));
        }
        b.push_str("</tbody></table>");
    }
    let token = own::escape(token);
    let _ = write!(
        b,
        "<form method=\"post\" action=\"/admin/purge\"><fieldset><legend>Purge the cache for one URL</legend>\
         <input type=\"hidden\" name=\"token\" value=\"{token}\">\
         <p><label for=\"purge-url\">URL</label><br><input type=\"url\" id=\"purge-url\" name=\"url\" required></p>\
         <p><button type=\"submit\">Purge the URL</button></p></fieldset></form>\
         <form method=\"post\" action=\"/admin/purge\"><fieldset><legend>Purge the cache for one site</legend>\
         <input type=\"hidden\" name=\"token\" value=\"{token}\">\
         <p><label for=\"purge-host\">Host name</label><br><input type=\"text\" id=\"purge-host\" name=\"host\" required></p>\
         <p><button type=\"submit\">Purge the site</button></p></fieldset></form>"
    );
    b.push_str("<p><a href=\"/\">pith's page</a></p>");
    own::page(StatusCode::OK, "pith: operators", &b)
}
