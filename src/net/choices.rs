//! Each client's choices, which the next requests follow: a profile among `control.profiles`,
//! per-site switches, and one-shot choices made from the bar (`/once`). Kept in the state file
//! ([`crate::state`]) and read into memory at start-up; the request path looks them up in
//! memory only, and not at all while nobody has made one ([`Control::profile_for`]). The pages
//! that show and change them are [`super::own::control`]'s; this module knows nothing of
//! them, so the profile decision ([`super::decide`]) reads choices without importing a page.
//!
//! A client is its proxy-auth user where its listener has `auth`, else its IP address, an IPv6
//! one by its /64 as the connection caps count it ([`client_id`]). One-shot choices belong to
//! the device. Bounds: [`MAX_CLIENTS`] identities with at most [`MAX_SITES`] switches each;
//! [`MAX_ONCE`] one-shots per device and [`MAX_ONCE_DEVICES`] devices ([`Onces`]).

use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::{Duration, Instant};

use http::StatusCode;

use crate::config::{ControlConfig, ListenerConfig};
use crate::profile::Profile;
use crate::state::{Snapshot, StateError, Store};

/// Most clients with choices held at once; a new client past it is told so.
pub const MAX_CLIENTS: usize = 10_000;
/// Most per-site switches of one client.
pub const MAX_SITES: usize = 200;
/// Most one-shot choices of one device waiting to be used.
pub const MAX_ONCE: usize = 8;
/// Most devices with one-shot choices waiting at once.
pub const MAX_ONCE_DEVICES: usize = 4096;
/// How often expired one-shot choices are swept, at most.
pub(crate) const SWEEP_EVERY: Duration = Duration::from_secs(30);
/// How long a one-shot choice waits for its request.
pub(crate) const ONCE_FOR: Duration = Duration::from_secs(120);

/// What one client chose.
#[derive(Debug, Default, Clone)]
pub(crate) struct Prefs {
    /// Its profile; `None`: the listener's.
    pub(crate) profile: Option<String>,
    /// Host → profile name.
    pub(crate) sites: BTreeMap<String, String>,
}

impl Prefs {
    /// The profile name chosen for `host`: the switch of the most specific name that has one
    /// (a switch for `example.com` covers `www.example.com`), else the client's own.
    pub(crate) fn chosen(&self, host: &str) -> Option<&String> {
        if self.sites.is_empty() {
            return self.profile.as_ref();
        }
        crate::host::find_by_suffix(host, |h| self.sites.get(h)).or(self.profile.as_ref())
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.profile.is_none() && self.sites.is_empty()
    }
}

/// One one-shot choice: a digest of its URL, the profile, and until when it waits.
#[derive(Debug, Clone)]
pub(crate) struct Once {
    pub(crate) url: [u8; 16],
    pub(crate) profile: String,
    pub(crate) until: Instant,
}

/// The one-shot choices of every device, bounded ([`MAX_ONCE`], [`MAX_ONCE_DEVICES`]) and
/// swept by time.
#[derive(Debug)]
pub struct Onces {
    pub(crate) devices: HashMap<IpAddr, Vec<Once>>,
    pub(crate) swept: Instant,
    /// Devices evicted to make room, since start.
    pub(crate) evicted: u64,
}

impl Onces {
    pub(crate) fn new() -> Onces {
        Onces { devices: HashMap::new(), swept: Instant::now(), evicted: 0 }
    }

    /// Drops every expired one-shot, at most once per [`SWEEP_EVERY`] unless `force`.
    pub(crate) fn sweep(&mut self, now: Instant, force: bool) {
        if !force && now.duration_since(self.swept) < SWEEP_EVERY {
            return;
        }
        self.swept = now;
        self.devices.retain(|_, list| {
            list.retain(|o| o.until > now);
            !list.is_empty()
        });
    }

    /// Notes that `device`'s next request for the URL of digest `url` is served in `profile`.
    /// Past [`MAX_ONCE_DEVICES`], expired one-shots are swept, then the device whose newest
    /// one-shot is oldest makes room.
    pub(crate) fn insert(&mut self, device: IpAddr, url: [u8; 16], profile: &str, now: Instant) {
        self.sweep(now, false);
        if !self.devices.contains_key(&device) && self.devices.len() >= MAX_ONCE_DEVICES {
            self.sweep(now, true);
            if self.devices.len() >= MAX_ONCE_DEVICES {
                let oldest = self.devices.iter().min_by_key(|(_, l)| l.iter().map(|o| o.until).max()).map(|(d, _)| *d);
                if let Some(d) = oldest {
                    self.devices.remove(&d);
                    self.evicted += 1;
                }
            }
        }
        let list = self.devices.entry(device).or_default();
        list.retain(|o| o.until > now && o.url != url);
        if list.len() >= MAX_ONCE {
            list.remove(0);
        }
        list.push(Once { url, profile: profile.to_string(), until: now + ONCE_FOR });
    }

    /// The profile of `device`'s one-shot choice for the URL of digest `url`, used up.
    pub(crate) fn take(&mut self, device: IpAddr, url: [u8; 16], now: Instant) -> Option<String> {
        self.sweep(now, false);
        let list = self.devices.get_mut(&device)?;
        list.retain(|o| o.until > now);
        let taken = list.iter().position(|o| o.url == url).map(|i| list.remove(i).profile);
        if list.is_empty() {
            self.devices.remove(&device);
        }
        taken
    }

    /// One-shot choices waiting now (expired ones not yet swept included).
    pub(crate) fn waiting(&self) -> usize {
        self.devices.values().map(Vec::len).sum()
    }
}

/// The digest a one-shot choice keeps of its URL: 16 bytes whatever the URL's length.
pub(crate) fn url_digest(url: &str) -> [u8; 16] {
    let d = ring::digest::digest(&ring::digest::SHA256, url.as_bytes());
    let mut out = [0u8; 16];
    out.copy_from_slice(&d.as_ref()[..16]);
    out
}

/// The device a request came from, as one-shot choices are kept: its address, an IPv6 one
/// by its /64.
pub fn device(ip: IpAddr) -> IpAddr {
    crate::net::accept::rate::client_key(ip)
}

/// Every client's choices, the state file they are kept in, and the counts of what was served.
/// Made once at start-up and kept across reloads.
pub struct Control {
    pub(crate) store: Store,
    pub(crate) prefs: RwLock<HashMap<String, Prefs>>,
    /// False while no client has any choice: the request path then skips the lookup.
    pub(crate) any: AtomicBool,
    /// One-shot choices, per device.
    pub(crate) onces: Mutex<Onces>,
    /// True once a one-shot choice was made: until then the request path skips that lookup.
    pub(crate) any_once: AtomicBool,
    /// Serialises changes, so the file and the memory agree on the order they were made in.
    pub(crate) writing: tokio::sync::Mutex<()>,
    pub(crate) key: ring::hmac::Key,
}

impl std::fmt::Debug for Control {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Control").field("state_file", &self.store.path()).field("any", &self.any).finish_non_exhaustive()
    }
}

/// A reason a change was refused, shown to the client.
pub(crate) struct Refused(pub(crate) StatusCode, pub(crate) String);

impl Control {
    /// Opens the state file of `cfg` (or none) and reads the choices in it.
    pub fn open(cfg: &ControlConfig) -> Result<Control, StateError> {
        let (store, snapshot) = match &cfg.state_path {
            Some(path) => Store::open(path)?,
            None => (Store::in_memory(), Snapshot::default()),
        };
        let secret = if snapshot.secret.len() >= 32 {
            snapshot.secret.clone()
        } else {
            let fresh = new_secret();
            store.set_secret(&fresh)?;
            fresh
        };
        let mut prefs: HashMap<String, Prefs> = HashMap::new();
        for (client, profile) in snapshot.profiles {
            prefs.entry(client).or_default().profile = Some(profile);
        }
        for ((client, host), switch) in snapshot.sites {
            prefs.entry(client).or_default().sites.insert(host, switch);
        }
        if let Some(path) = store.path() {
            tracing::info!(path = %path.display(), clients = prefs.len(), "state file opened");
        }
        Ok(Control {
            store,
            any: AtomicBool::new(!prefs.is_empty()),
            prefs: RwLock::new(prefs),
            onces: Mutex::new(Onces::new()),
            any_once: AtomicBool::new(false),
            writing: tokio::sync::Mutex::new(()),
            key: ring::hmac::Key::new(ring::hmac::HMAC_SHA256, &secret),
        })
    }

    /// The profile chosen for `url` on `host` when it differs from the listener's: `device`'s
    /// one-shot choice for this URL (used up), else `who`'s (made only when someone has a
    /// saved choice) switch for the host, else its own profile. `None` costs two atomic loads
    /// while nobody has chosen anything, and a map lookup otherwise.
    pub fn profile_for(&self, cfg: &ControlConfig, who: impl FnOnce() -> String, device: IpAddr, host: &str, url: &str) -> Option<Arc<Profile>> {
        if !cfg.choices {
            return None;
        }
        if self.any_once.load(Ordering::Relaxed) {
            let once = self.onces.lock().unwrap_or_else(PoisonError::into_inner).take(self::device(device), url_digest(url), Instant::now());
            if let Some(profile) = once.and_then(|n| cfg.offered(&n).cloned()) {
                return Some(profile);
            }
        }
        if !self.any.load(Ordering::Relaxed) {
            return None;
        }
        let prefs = self.prefs.read().unwrap_or_else(PoisonError::into_inner);
        prefs.get(&who())?.chosen(host).and_then(|n| cfg.offered(n)).cloned()
    }

    /// The signature the bar's `/once` links carry for (`url`, `profile`): the same for every
    /// client, made with pith's secret.
    pub(crate) fn once_signature(&self, url: &str, profile: &str) -> String {
        let tag = ring::hmac::sign(&self.key, format!("once\n{profile}\n{url}").as_bytes());
        tag.as_ref()[..16].iter().map(|b| format!("{b:02x}")).collect()
    }

    pub(crate) fn once_signature_matches(&self, url: &str, profile: &str, sent: &str) -> bool {
        let want = self.once_signature(url, profile);
        want.len() == sent.len() && want.bytes().zip(sent.bytes()).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0
    }

    /// Clients with saved choices, devices with one-shots, one-shots waiting, devices evicted.
    pub fn counts(&self) -> (usize, usize, usize, u64) {
        let saved = self.prefs.read().unwrap_or_else(PoisonError::into_inner).len();
        let onces = self.onces.lock().unwrap_or_else(PoisonError::into_inner);
        (saved, onces.devices.len(), onces.waiting(), onces.evicted)
    }

    /// `who`'s choices, for its page.
    pub(crate) fn prefs_of(&self, who: &str) -> Prefs {
        self.prefs.read().unwrap_or_else(PoisonError::into_inner).get(who).cloned().unwrap_or_default()
    }

    /// Applies `change` to `who`'s choices after `persist` has written it to the file.
    pub(crate) async fn change(
        self: &Arc<Self>,
        who: &str,
        persist: impl FnOnce(&Store) -> Result<(), StateError> + Send + 'static,
        change: impl FnOnce(&mut Prefs) -> Result<(), Refused>,
    ) -> Result<(), Refused> {
        let _turn = self.writing.lock().await;
        let mut next = self.prefs_of(who);
        change(&mut next)?;
        {
            let prefs = self.prefs.read().unwrap_or_else(PoisonError::into_inner);
            if !prefs.contains_key(who) && prefs.len() >= MAX_CLIENTS && !next.is_empty() {
                return Err(Refused(
                    StatusCode::SERVICE_UNAVAILABLE,
                    format!("pith holds the saved choices of {MAX_CLIENTS} clients already, and never drops one client's to make room for another's: this device browses in its listener's profile. The bar's links still work; ask the operator to make room."),
                ));
            }
        }
        let this = self.clone();
        let written = tokio::task::spawn_blocking(move || persist(&this.store)).await;
        match written {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                tracing::error!(error = %e, "a choice could not be written to the state file");
                return Err(Refused(StatusCode::INTERNAL_SERVER_ERROR, "pith could not save this choice; the operator will find why in its log".into()));
            }
            Err(join) => return Err(Refused(StatusCode::INTERNAL_SERVER_ERROR, format!("saving failed: {join}"))),
        }
        let mut prefs = self.prefs.write().unwrap_or_else(PoisonError::into_inner);
        if next.is_empty() {
            prefs.remove(who);
        } else {
            prefs.insert(who.to_string(), next);
            self.any.store(true, Ordering::Relaxed);
        }
        Ok(())
    }

    /// The token `who`'s forms carry. Public for the fuzz targets.
    #[doc(hidden)]
    pub fn token(&self, who: &str) -> String {
        let tag = ring::hmac::sign(&self.key, who.as_bytes());
        tag.as_ref()[..16].iter().map(|b| format!("{b:02x}")).collect()
    }

    pub(crate) fn token_matches(&self, who: &str, sent: &str) -> bool {
        let want = self.token(who);
        want.len() == sent.len() && want.bytes().zip(sent.bytes()).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0
    }
}

/// 32 random bytes from the system, for the token key.
pub(crate) fn new_secret() -> Vec<u8> {
    let mut secret = vec![0u8; 32];
    if ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut secret).is_err() {
        // No system randomness: a digest of what differs between runs, so tokens still differ
        // per installation; logged, since a guessable key weakens the tokens.
        tracing::warn!("no system randomness for the control page's token key; using a weaker one");
        let seed = format!("{:?}{}{:p}", std::time::SystemTime::now(), std::process::id(), &secret);
        secret = ring::digest::digest(&ring::digest::SHA256, seed.as_bytes()).as_ref().to_vec();
    }
    secret
}

/// A client's id: `user:NAME` when its listener has `auth` (the request was admitted with
/// those credentials), else `ip:ADDRESS` (an IPv4 client on an IPv6 socket as IPv4; an IPv6
/// client by its /64, `ip:NETWORK/64`, as the connection caps count it).
pub fn client_id(listener: &ListenerConfig, ip: IpAddr) -> String {
    match &listener.auth {
        Some(creds) => format!("user:{}", creds.user),
        None => match device(ip) {
            v4 @ IpAddr::V4(_) => format!("ip:{v4}"),
            v6 => format!("ip:{v6}/64"),
        },
    }
}

impl Control {
    /// The fields of the form `body` (`application/x-www-form-urlencoded`; a name given twice
    /// keeps its last value), when its `token` is `who`'s. Public for the fuzz targets.
    #[doc(hidden)]
    pub fn tokened_fields(&self, who: &str, body: &[u8]) -> Option<HashMap<String, String>> {
        let form: HashMap<String, String> = url::form_urlencoded::parse(body).into_owned().collect();
        form.get("token").is_some_and(|t| self.token_matches(who, t)).then_some(form)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clients_are_told_apart_by_address_without_auth() {
        let l = crate::config::Config::from_toml_str("", "t", None).unwrap().listeners[0].clone();
        assert_eq!(client_id(&l, "127.0.0.2".parse().unwrap()), "ip:127.0.0.2");
        assert_eq!(client_id(&l, "::ffff:127.0.0.2".parse().unwrap()), "ip:127.0.0.2");
        assert_eq!(client_id(&l, "2001:db8:1:2:aaaa::1".parse().unwrap()), "ip:2001:db8:1:2::/64", "grouped as the connection caps are");
        assert_eq!(client_id(&l, "2001:db8:1:2:bbbb::9".parse().unwrap()), "ip:2001:db8:1:2::/64");
    }

    /// Expired one-shots are reclaimed by time, whoever comes back; past the cap of devices
    /// the oldest go; a device's own cap holds.
    #[test]
    fn one_shots_are_bounded_and_swept_by_time() {
        let mut onces = Onces::new();
        let t0 = Instant::now();
        let dev = |i: u32| IpAddr::V4(std::net::Ipv4Addr::from(0x0a00_0000 + i));
        for i in 0..100 {
            onces.insert(dev(i), url_digest("http://a.example/"), "pass", t0);
        }
        assert_eq!(onces.devices.len(), 100);
        // Past their window, a sweep on the next use reclaims them.
        onces.insert(dev(1000), url_digest("http://b.example/"), "pass", t0 + ONCE_FOR + SWEEP_EVERY);
        assert_eq!(onces.devices.len(), 1, "expired one-shots swept by time");
        // The cap of devices: the oldest make room, counted.
        let t1 = t0 + ONCE_FOR * 3;
        for i in 0..(MAX_ONCE_DEVICES as u32 + 10) {
            onces.insert(dev(i), url_digest("http://c.example/"), "pass", t1 + Duration::from_millis(u64::from(i)));
        }
        assert_eq!(onces.devices.len(), MAX_ONCE_DEVICES);
        assert!(onces.evicted >= 10);
        assert!(!onces.devices.contains_key(&dev(0)), "the oldest went");
        // One device's cap.
        for i in 0..20 {
            onces.insert(dev(7), url_digest(&format!("http://d.example/{i}")), "pass", t1);
        }
        assert_eq!(onces.devices[&dev(7)].len(), MAX_ONCE);
        assert_eq!(onces.take(dev(7), url_digest("http://d.example/19"), t1).as_deref(), Some("pass"));
        assert_eq!(onces.take(dev(7), url_digest("http://d.example/19"), t1), None, "used up");
    }
}
