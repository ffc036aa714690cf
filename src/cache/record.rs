//! One entry as the disk tier writes it: the key's whole identity, the response head, the
//! freshness policy and the body, in one checksummed record; or, under the key a lookup makes
//! before it knows the `Vary` names of a URL, those names ([`Record::Varies`]).
//!
//! ```text
//! magic  b"PITHCE02"            8 bytes, the format's version in its last two
//! crc32  of everything after it  4 bytes, little-endian
//! length of everything after it  8 bytes
//! key    method, URL, profile, settings hash, encoding class, Vary names with the request's values
//! kind   0: an entry, 1: the Vary names of the URL
//! entry:
//!   head   status, served headers, form, validators, Vary names, weight, clock
//!   policy the http-cache-semantics policy as JSON (its serde form needs a self-describing format)
//!   body   the bytes as served
//! Vary names:
//!   names  the lowercase field names the response varies on
//! ```
//!
//! The Vary record is what lets a restarted cache find a varying response: the key of the
//! entry holds the request's values of the names, so it can only be made once the names are
//! known, and before the restart they were known from memory alone. Version 01 had no kind
//! byte and no Vary record.
//!
//! The key is kept whole, not only its hash (which names the file): a lookup compares it with
//! the key asked for, so two keys whose hashes collide never answer for each other. The checksum
//! covers the key, head, policy and body: a file cut short by a crash, or whose bytes changed
//! on the disk, fails [`decode`] and is never made an entry. Lengths are read against what is
//! left of the record, so a corrupt length is an error, never a huge allocation.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use bytes::Bytes;
use http::header::{HeaderMap, HeaderName, HeaderValue};
use http::{Method, StatusCode};

use super::{BaseKey, Clock, Entry, Form, Key, Validators};
use crate::body::Coding;

const MAGIC: &[u8; 8] = b"PITHCE02";
/// Magic, checksum and length.
const PREAMBLE: usize = 8 + 4 + 8;
/// The byte after the key: what the record holds ([`Record`]).
const KIND_ENTRY: u8 = 0;
const KIND_VARIES: u8 = 1;

/// Why a record could not be read back.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// Not a record of this format (another version, or not pith's file).
    #[error("not an entry record of this version")]
    Magic,
    /// Fewer bytes than the record says it has: a write cut short.
    #[error("the record is cut short: {have} bytes of {want}")]
    Short {
        /// Bytes present.
        have: u64,
        /// Bytes the record says it has.
        want: u64,
    },
    /// The checksum does not match: the bytes changed after they were written.
    #[error("checksum mismatch (stored {stored:08x}, computed {computed:08x})")]
    Checksum {
        /// The checksum in the record.
        stored: u32,
        /// The checksum of the bytes read.
        computed: u32,
    },
    /// A field does not parse, though the checksum matched (a writer's bug).
    #[error("field {field} is malformed")]
    Field {
        /// The field.
        field: &'static str,
    },
    /// The freshness policy does not parse.
    #[error("the freshness policy does not parse")]
    Policy(#[source] serde_json::Error),
}

/// The bytes that identify `key`: what the disk tier hashes to name its file, and what a
/// record starts with.
pub fn key_bytes(key: &Key) -> Vec<u8> {
    let mut w = Writer(Vec::with_capacity(128 + key.base.url.len()));
    w.key(key);
    w.0
}

/// A stable 64-bit name for a key (FNV-1a over [`key_bytes`]): the same in every run and
/// build, unlike the std hashers, so a restarted pith finds the files of the one before.
pub fn name(key_bytes: &[u8]) -> u64 {
    key_bytes.iter().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3))
}

/// A stable 32-bit tag for a URL as a cache key spells it (the high half of its FNV-1a
/// [`name`]): the part of a file's name that finds every entry of one URL.
pub fn url_tag(url: &str) -> u32 {
    (name(url.as_bytes()) >> 32) as u32
}

/// What a record holds under its key.
#[derive(Debug, Clone)]
pub enum Record {
    /// A kept response.
    Entry(Arc<Entry>),
    /// The request headers the URL's response varies on, under the key made without them (the
    /// key a lookup makes while it does not know them): the response is under the key made
    /// with them. A response that stops varying is written under this same key, in its place.
    Varies(Arc<[HeaderName]>),
}

impl Record {
    /// Bytes it takes while it waits to be written.
    pub fn weight(&self) -> u64 {
        match self {
            Record::Entry(entry) => u64::from(entry.weight()),
            Record::Varies(names) => 64 + names.iter().map(|n| n.as_str().len() as u64 + 16).sum::<u64>(),
        }
    }
}

/// The record of `what` under `key` (whose [`key_bytes`] are `key`).
pub fn encode(key: &[u8], what: &Record) -> Vec<u8> {
    let mut w = Writer(Vec::with_capacity(PREAMBLE + key.len() + 1024 + if let Record::Entry(e) = what { e.body.len() } else { 0 }));
    w.0.extend_from_slice(MAGIC);
    w.0.extend_from_slice(&[0; 12]);
    w.0.extend_from_slice(key);
    match what {
        Record::Entry(entry) => {
            w.0.push(KIND_ENTRY);
            w.head(entry);
            w.bytes(&serde_json::to_vec(&entry.policy).unwrap_or_default());
            w.bytes(&entry.body);
        }
        Record::Varies(names) => {
            w.0.push(KIND_VARIES);
            w.names(names);
        }
    }
    let crc = crc32fast::hash(&w.0[PREAMBLE..]);
    let len = (w.0.len() - PREAMBLE) as u64;
    w.0[8..12].copy_from_slice(&crc.to_le_bytes());
    w.0[12..20].copy_from_slice(&len.to_le_bytes());
    w.0
}

/// The key and what a record holds under it, after its magic, length and checksum are checked.
pub fn decode(record: Bytes) -> Result<(Key, Record), RecordError> {
    if record.len() < PREAMBLE || &record[..8] != MAGIC {
        return Err(RecordError::Magic);
    }
    let stored = u32::from_le_bytes([record[8], record[9], record[10], record[11]]);
    let want = u64::from_le_bytes(record[12..20].try_into().map_err(|_| RecordError::Magic)?);
    let have = (record.len() - PREAMBLE) as u64;
    if have != want {
        return Err(RecordError::Short { have, want });
    }
    let computed = crc32fast::hash(&record[PREAMBLE..]);
    if computed != stored {
        return Err(RecordError::Checksum { stored, computed });
    }
    let mut r = Reader { record, at: PREAMBLE };
    let key = r.key()?;
    let what = match r.u8("kind")? {
        KIND_ENTRY => Record::Entry(Arc::new(r.entry()?)),
        KIND_VARIES => Record::Varies(r.names("varies")?),
        _ => return Err(RecordError::Field { field: "kind" }),
    };
    if r.at != r.record.len() {
        return Err(RecordError::Field { field: "end" });
    }
    Ok((key, what))
}

struct Writer(Vec<u8>);

impl Writer {
    fn u32(&mut self, n: u32) {
        self.0.extend_from_slice(&n.to_le_bytes());
    }
    fn u64(&mut self, n: u64) {
        self.0.extend_from_slice(&n.to_le_bytes());
    }
    fn bytes(&mut self, b: &[u8]) {
        self.u64(b.len() as u64);
        self.0.extend_from_slice(b);
    }
    fn time(&mut self, t: SystemTime) {
        self.duration(t.duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default());
    }
    fn duration(&mut self, d: Duration) {
        self.u64(d.as_secs());
        self.u32(d.subsec_nanos());
    }
    fn headers(&mut self, headers: &HeaderMap) {
        self.u32(headers.len() as u32);
        for (name, value) in headers {
            self.bytes(name.as_str().as_bytes());
            self.bytes(value.as_bytes());
        }
    }
    fn optional(&mut self, value: Option<&HeaderValue>) {
        match value {
            Some(v) => {
                self.0.push(1);
                self.bytes(v.as_bytes());
            }
            None => self.0.push(0),
        }
    }

    fn names(&mut self, names: &[HeaderName]) {
        self.u32(names.len() as u32);
        for name in names {
            self.bytes(name.as_str().as_bytes());
        }
    }

    fn key(&mut self, key: &Key) {
        let b = &key.base;
        self.bytes(b.method.as_str().as_bytes());
        self.bytes(b.url.as_bytes());
        self.bytes(b.profile.as_bytes());
        self.u64(b.settings);
        self.bytes(b.coding.as_bytes());
        self.u32(key.vary.len() as u32);
        for (name, values) in &key.vary {
            self.bytes(name.as_str().as_bytes());
            self.u32(values.len() as u32);
            for v in values {
                self.bytes(v.as_bytes());
            }
        }
    }

    fn head(&mut self, e: &Entry) {
        self.u32(u32::from(e.status.as_u16()));
        self.headers(&e.headers);
        self.0.push(match e.form {
            Form::Rewritten => 0,
            Form::Origin => 1,
        });
        self.optional(e.validators.etag.as_ref());
        self.optional(e.validators.last_modified.as_ref());
        self.names(&e.vary);
        self.u32(e.weight);
        self.time(e.clock.stored_at);
        self.duration(e.clock.age_at_store);
        self.time(e.clock.fresh_until);
    }
}

struct Reader {
    record: Bytes,
    at: usize,
}

impl Reader {
    fn take(&mut self, n: usize, field: &'static str) -> Result<Bytes, RecordError> {
        let end = self.at.checked_add(n).filter(|&end| end <= self.record.len()).ok_or(RecordError::Field { field })?;
        let out = self.record.slice(self.at..end);
        self.at = end;
        Ok(out)
    }
    fn u8(&mut self, field: &'static str) -> Result<u8, RecordError> {
        Ok(self.take(1, field)?[0])
    }
    fn u32(&mut self, field: &'static str) -> Result<u32, RecordError> {
        let b = self.take(4, field)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn u64(&mut self, field: &'static str) -> Result<u64, RecordError> {
        let b = self.take(8, field)?;
        Ok(u64::from_le_bytes(b[..].try_into().map_err(|_| RecordError::Field { field })?))
    }
    fn bytes(&mut self, field: &'static str) -> Result<Bytes, RecordError> {
        let n = usize::try_from(self.u64(field)?).map_err(|_| RecordError::Field { field })?;
        self.take(n, field)
    }
    fn text(&mut self, field: &'static str) -> Result<String, RecordError> {
        String::from_utf8(self.bytes(field)?.to_vec()).map_err(|_| RecordError::Field { field })
    }
    fn name(&mut self, field: &'static str) -> Result<HeaderName, RecordError> {
        HeaderName::from_bytes(&self.bytes(field)?).map_err(|_| RecordError::Field { field })
    }
    fn value(&mut self, field: &'static str) -> Result<HeaderValue, RecordError> {
        HeaderValue::from_maybe_shared(self.bytes(field)?).map_err(|_| RecordError::Field { field })
    }
    fn duration(&mut self, field: &'static str) -> Result<Duration, RecordError> {
        let secs = self.u64(field)?;
        let nanos = self.u32(field)?;
        Ok(Duration::new(secs, nanos.min(999_999_999)))
    }
    fn time(&mut self, field: &'static str) -> Result<SystemTime, RecordError> {
        SystemTime::UNIX_EPOCH.checked_add(self.duration(field)?).ok_or(RecordError::Field { field })
    }
    /// A count of items each at least `min` bytes long, checked against what is left, so a
    /// count is never trusted beyond the record's own length.
    fn count(&mut self, min: usize, field: &'static str) -> Result<usize, RecordError> {
        let n = self.u32(field)? as usize;
        let left = self.record.len() - self.at;
        if n.saturating_mul(min) > left {
            return Err(RecordError::Field { field });
        }
        Ok(n)
    }

    fn key(&mut self) -> Result<Key, RecordError> {
        let method = Method::from_bytes(&self.bytes("method")?).map_err(|_| RecordError::Field { field: "method" })?;
        let url = self.text("url")?;
        let profile = self.text("profile")?;
        let settings = self.u64("settings")?;
        let coding = self.text("coding")?;
        let coding = [Coding::Identity, Coding::Gzip, Coding::Deflate, Coding::Brotli, Coding::Zstd]
            .into_iter()
            .map(Coding::as_str)
            .find(|c| *c == coding)
            .ok_or(RecordError::Field { field: "coding" })?;
        let mut vary = Vec::with_capacity(self.count(12, "vary")?);
        for _ in 0..vary.capacity() {
            let name = self.name("vary name")?;
            let mut values = Vec::with_capacity(self.count(8, "vary values")?);
            for _ in 0..values.capacity() {
                values.push(self.value("vary value")?);
            }
            vary.push((name, values));
        }
        Ok(Key { base: BaseKey { method, url, profile, settings, coding }, vary })
    }

    fn entry(&mut self) -> Result<Entry, RecordError> {
        let status = u16::try_from(self.u32("status")?).ok().and_then(|s| StatusCode::from_u16(s).ok()).ok_or(RecordError::Field { field: "status" })?;
        let n = self.count(16, "headers")?;
        let mut headers = HeaderMap::with_capacity(n);
        for _ in 0..n {
            let name = self.name("header name")?;
            headers.append(name, self.value("header value")?);
        }
        let form = match self.u8("form")? {
            0 => Form::Rewritten,
            1 => Form::Origin,
            _ => return Err(RecordError::Field { field: "form" }),
        };
        let etag = if self.u8("etag")? == 1 { Some(self.value("etag")?) } else { None };
        let last_modified = if self.u8("last-modified")? == 1 { Some(self.value("last-modified")?) } else { None };
        let vary = self.names("entry vary")?;
        let weight = self.u32("weight")?;
        let clock = Clock { stored_at: self.time("stored at")?, age_at_store: self.duration("age")?, fresh_until: self.time("fresh until")? };
        let policy = serde_json::from_slice(&self.bytes("policy")?).map_err(RecordError::Policy)?;
        let body = self.bytes("body")?;
        // An unsafe request to the URL invalidates what was made before it (`Cache::is_invalid`):
        // the entry was made when it was stored, however long ago that was.
        let since = SystemTime::now().duration_since(clock.stored_at).unwrap_or_default();
        let made = Instant::now().checked_sub(since).unwrap_or_else(Instant::now);
        Ok(Entry { status, headers, body, form, policy, validators: Validators { etag, last_modified }, vary, weight, made, clock })
    }

    fn names(&mut self, field: &'static str) -> Result<Arc<[HeaderName]>, RecordError> {
        let mut names = Vec::with_capacity(self.count(8, field)?);
        for _ in 0..names.capacity() {
            names.push(self.name(field)?);
        }
        Ok(Arc::from(names))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::{admit, Ask};

    fn sample() -> (Key, Entry) {
        let mut request = HeaderMap::new();
        request.insert("host", HeaderValue::from_static("example.com"));
        request.insert("accept-language", HeaderValue::from_static("fr"));
        let ask = Ask::new(Method::GET, "http://example.com/a?b=1".parse().unwrap(), request.clone());
        let mut origin = HeaderMap::new();
        origin.insert("cache-control", HeaderValue::from_static("max-age=60"));
        origin.insert("etag", HeaderValue::from_static("\"v1\""));
        origin.insert("vary", HeaderValue::from_static("Accept-Language"));
        let mut served = origin.clone();
        served.append("link", HeaderValue::from_static("<a>"));
        served.append("link", HeaderValue::from_static("<b>"));
        let entry = admit(&ask, (StatusCode::NOT_FOUND, &origin), served, Bytes::from_static(b"\x00body\xff"), 1 << 20, SystemTime::now()).unwrap();
        let base = BaseKey { method: Method::GET, url: "http://example.com/a?b=1".into(), profile: "declutter".into(), settings: 42, coding: "gzip" };
        let key = Key { base, vary: vec![(HeaderName::from_static("accept-language"), vec![HeaderValue::from_static("fr")])] };
        (key, entry)
    }

    #[test]
    fn a_record_round_trips() {
        let (key, entry) = sample();
        let entry = Arc::new(entry);
        let record = encode(&key_bytes(&key), &Record::Entry(entry.clone()));
        let (k, e) = decode(Bytes::from(record)).expect("a whole record");
        let Record::Entry(e) = e else { panic!("an entry record") };
        assert_eq!(k, key);
        assert_eq!((e.status, &e.headers, &e.body, e.form, e.weight), (entry.status, &entry.headers, &entry.body, entry.form, entry.weight));
        assert_eq!(&*e.vary, &*entry.vary);
        assert_eq!((e.validators.etag.clone(), e.validators.last_modified.clone()), (entry.validators.etag.clone(), None));
        assert_eq!((e.clock.stored_at, e.clock.fresh_until, e.clock.age_at_store), (entry.clock.stored_at, entry.clock.fresh_until, entry.clock.age_at_store));
        let now = SystemTime::now();
        assert_eq!(e.policy.time_to_live(now), entry.policy.time_to_live(now), "the policy is the same policy");
    }

    /// The Vary names of a URL round-trip under the key made without them.
    #[test]
    fn a_vary_record_round_trips() {
        let (key, _) = sample();
        let base = Key { vary: Vec::new(), ..key };
        let names: Arc<[HeaderName]> = Arc::from(vec![HeaderName::from_static("accept-language"), HeaderName::from_static("x-device")]);
        let (k, what) = decode(Bytes::from(encode(&key_bytes(&base), &Record::Varies(names.clone())))).expect("a whole record");
        assert_eq!(k, base);
        assert!(matches!(what, Record::Varies(n) if n == names));
    }

    /// Every truncation and every flipped byte is refused, never decoded into an entry or a
    /// list of Vary names.
    #[test]
    fn a_torn_or_flipped_record_is_refused() {
        let (key, entry) = sample();
        let names: Arc<[HeaderName]> = Arc::from(vec![HeaderName::from_static("accept-language")]);
        for what in [Record::Entry(Arc::new(entry)), Record::Varies(names)] {
            let record = encode(&key_bytes(&key), &what);
            for cut in (0..record.len()).step_by(3) {
                assert!(decode(Bytes::copy_from_slice(&record[..cut])).is_err(), "cut at {cut}");
            }
            for at in (0..record.len()).step_by(5) {
                let mut flipped = record.clone();
                flipped[at] ^= 0x20;
                assert!(decode(Bytes::from(flipped)).is_err(), "flip at {at}");
            }
        }
    }

    /// A record of the earlier format (no kind byte) is refused by its magic.
    #[test]
    fn a_version_01_record_is_refused() {
        let (key, entry) = sample();
        let mut record = encode(&key_bytes(&key), &Record::Entry(Arc::new(entry)));
        record[..8].copy_from_slice(b"PITHCE01");
        assert!(matches!(decode(Bytes::from(record)), Err(RecordError::Magic)));
    }

    #[test]
    fn names_are_stable_and_differ_by_key() {
        let (key, _) = sample();
        assert_eq!(name(&key_bytes(&key)), name(&key_bytes(&key.clone())));
        assert_eq!(name(b""), 0xcbf2_9ce4_8422_2325, "FNV-1a of nothing");
        let other = Key { vary: Vec::new(), ..key.clone() };
        assert_ne!(name(&key_bytes(&key)), name(&key_bytes(&other)));
    }
}
