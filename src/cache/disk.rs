//! The cache's disk tier: one file per entry under `cache.disk_dir`, bounded by
//! `cache.disk_max_bytes`, so a gateway's cache outlives a restart and outgrows its memory.
//!
//! Memory stays the first tier. Every entry stored in memory is also written here
//! (write-through), in the background: written on eviction instead, a `kill -9`, a crash or a
//! power cut would lose every entry memory held, which is the hottest part of the cache, and a
//! restart would start cold. A memory miss looks here ([`Disk::read`]); what is found is
//! promoted to memory by the caller.
//!
//! A file is named by a stable hash of its key ([`record::name`]) and a shorter one of its URL
//! ([`record::url_tag`]), and holds the key whole, checked on read, so a hash collision never
//! serves another key's entry. The URL's part of the name lets an unsafe request to a URL
//! (RFC 9111 §4.4) remove every entry of it, whatever its profile, coding or variant, without
//! reading a file: the memory tier's mark of it ([`super::Cache::invalidate_uri`]) is gone
//! after a restart, and the files must not outlive it. It is written to a
//! temporary file beside it and renamed into place, so a crash mid-write leaves a stray
//! temporary file (removed at the next start) and never a torn file under an entry's name.
//! Files are not synced one by one: the checksum of every record ([`record::decode`]) catches
//! what a power cut could leave (a renamed file whose blocks never reached the disk), and such
//! an entry is logged, deleted and fetched again. Syncing each file cost 24 times the write
//! rate (1,000 against 24,000 entries of 20 KB a second on this machine's disk).
//!
//! What is on the disk is known without reading it: at start-up the folder is listed
//! ([`Disk::open`]; 28 ms for 10,000 files), and an index in memory keeps each file's size and
//! when it was last used, about 100 bytes per entry. Past `cache.disk_max_bytes` the least
//! recently used files go first; after a restart "used" starts from the files' modification
//! times. Files are read and written on tokio's blocking threads, never on the workers that
//! serve connections, and at most [`WRITERS`] at once.
//!
//! A URL whose response varies has one file more: under the key made without the `Vary`
//! names, the names themselves ([`Record::Varies`]), which a restarted cache reads to make the
//! key of a variant (`Cache::find_key`). A variant read counts as a use of that file too, so
//! the least recently used eviction does not take the names before the variants they lead to.
//!
//! Chosen by measurement over foyer's hybrid cache and cacache (10,000 entries of 20 KB, this
//! machine, page cache warm): this store wrote 24,000 entries/s, opened in 28 ms and read
//! 80,000/s. cacache wrote 1,000/s (it syncs each entry), listed its index in 177 ms (needed to
//! bound it) and read 31,000/s. foyer wrote 54,000–63,000/s into its buffers, but after
//! `close()` and a reopen only 17% (16 MiB buffers) to 53% (256 MiB) of the entries could be
//! read back: under a burst it drops what it cannot flush, which is what a restart must keep.

use std::collections::{BTreeSet, HashMap};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Instant, SystemTime};

use bytes::Bytes;

use super::record::{self, Record, RecordError};
use super::Key;

/// Files written at once. Two cores; more writers would only queue in the kernel.
pub const WRITERS: usize = 2;

/// The folder under `cache.disk_dir` that holds this format's files: a later format gets a
/// folder of its own rather than misreading these.
const FORMAT_DIR: &str = "entries-v3";

/// Folders of earlier formats, removed at start-up: a cache can always be fetched again.
const OLD_FORMAT_DIRS: &[&str] = &["entries-v1", "entries-v2"];

/// Why the disk tier could not be used, or one file of it.
#[derive(Debug, thiserror::Error)]
pub enum DiskError {
    /// The folder could not be created or listed.
    #[error("{path}: cannot open the cache folder: {source}")]
    Open {
        /// The folder.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A file could not be read, written or removed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A file's record is torn or corrupt.
    #[error("{path}: {source}")]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        #[source]
        source: RecordError,
    },
}

/// What the disk tier has done and holds, for `/metrics`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DiskSnapshot {
    /// Memory misses answered from disk.
    pub hits: u64,
    /// Entries written.
    pub writes: u64,
    /// Entries not written because writes were too far behind.
    pub skipped: u64,
    /// Files dropped because they were torn, corrupt or unreadable.
    pub errors: u64,
    /// Files removed to stay within the bound.
    pub evictions: u64,
    /// Files now.
    pub entries: u64,
    /// Their bytes.
    pub bytes: u64,
    /// `cache.disk_max_bytes`.
    pub max_bytes: u64,
}

#[derive(Default)]
struct Counters {
    hits: AtomicU64,
    writes: AtomicU64,
    skipped: AtomicU64,
    errors: AtomicU64,
    evictions: AtomicU64,
}

/// Every file's size and last use, and the files in order of use.
#[derive(Default)]
struct Index {
    files: HashMap<u64, Slot>,
    by_use: BTreeSet<(u64, u64)>,
    bytes: u64,
    tick: u64,
}

#[derive(Clone, Copy)]
struct Slot {
    bytes: u64,
    used: u64,
    /// The key's [`record::url_tag`], the second part of its file's name.
    url: u32,
}

impl Index {
    fn insert(&mut self, name: u64, url: u32, bytes: u64) {
        self.remove(name);
        self.tick += 1;
        self.files.insert(name, Slot { bytes, used: self.tick, url });
        self.by_use.insert((self.tick, name));
        self.bytes += bytes;
    }

    /// Takes `name` out, giving its URL tag (to name its file) when it was there.
    fn remove(&mut self, name: u64) -> Option<u32> {
        let slot = self.files.remove(&name)?;
        self.by_use.remove(&(slot.used, name));
        self.bytes -= slot.bytes;
        Some(slot.url)
    }

    fn touch(&mut self, name: u64) {
        let Some(slot) = self.files.get_mut(&name) else { return };
        self.by_use.remove(&(slot.used, name));
        self.tick += 1;
        slot.used = self.tick;
        self.by_use.insert((self.tick, name));
    }

    /// The least recently used file but `keep`.
    fn oldest_but(&self, keep: u64) -> Option<u64> {
        self.by_use.iter().map(|(_, name)| *name).find(|name| *name != keep)
    }
}

/// The disk tier of one cache folder.
pub struct Disk {
    root: PathBuf,
    max_bytes: u64,
    index: Mutex<Index>,
    counters: Counters,
    /// Bounds the files being written at once.
    writers: tokio::sync::Semaphore,
    /// Bytes of entries waiting to be written, and their bound: past it a write is skipped
    /// rather than queued, so a disk slower than the origin never piles entries up in memory.
    queued: AtomicU64,
    max_queued: u64,
    temp: AtomicU64,
}

impl Disk {
    /// Opens (creating it if needed) the folder `dir`, removes the temporary files a crash
    /// left and lists the entry files into the index. Blocking: called at start-up.
    pub fn open(dir: &Path, max_bytes: u64, max_queued: u64) -> Result<Disk, DiskError> {
        let root = dir.join(FORMAT_DIR);
        let open = |source| DiskError::Open { path: root.clone(), source };
        for old in OLD_FORMAT_DIRS {
            let old = dir.join(old);
            if old.is_dir() {
                if let Err(error) = std::fs::remove_dir_all(&old) {
                    tracing::warn!(dir = %old.display(), %error, "an earlier format's cache folder could not be removed");
                }
            }
        }
        std::fs::create_dir_all(&root).map_err(open)?;
        let mut found = Vec::new();
        for shard in std::fs::read_dir(&root).map_err(open)? {
            let shard = shard.map_err(open)?.path();
            if !shard.is_dir() {
                continue;
            }
            for file in std::fs::read_dir(&shard).map_err(open)? {
                let file = file.map_err(open)?;
                let path = file.path();
                let name = file.file_name();
                let name = name.to_string_lossy();
                if name.contains(".tmp") {
                    // A write a crash cut short: never renamed, never an entry.
                    let _ = std::fs::remove_file(&path);
                    continue;
                }
                let Some((name, url)) = parse_name(&name) else { continue };
                let Ok(meta) = file.metadata() else { continue };
                found.push((meta.modified().unwrap_or(SystemTime::UNIX_EPOCH), name, url, meta.len()));
            }
        }
        found.sort_unstable();
        let mut index = Index::default();
        for (_, name, url, bytes) in found {
            index.insert(name, url, bytes);
        }
        let disk = Disk {
            root,
            max_bytes,
            index: Mutex::new(index),
            counters: Counters::default(),
            writers: tokio::sync::Semaphore::new(WRITERS),
            queued: AtomicU64::new(0),
            max_queued,
            temp: AtomicU64::new(0),
        };
        // A smaller bound than the last run's: shrink now.
        disk.evict(&mut disk.lock(), u64::MAX);
        Ok(disk)
    }

    /// The folder of this format's files.
    pub fn root(&self) -> &Path {
        &self.root
    }

    fn lock(&self) -> MutexGuard<'_, Index> {
        // The index is plain data, consistent between statements; a panic elsewhere leaves it usable.
        self.index.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Where the file of the key named `name`, of a URL tagged `url`, lives: 256 folders, so
    /// none grows huge.
    pub fn path_of(&self, name: u64, url: u32) -> PathBuf {
        self.root.join(format!("{:02x}", name >> 56)).join(format!("{name:016x}-{url:08x}"))
    }

    /// True when a file is kept under `key`: known from the index, without reading it.
    pub fn holds(&self, key: &Key) -> bool {
        self.lock().files.contains_key(&record::name(&record::key_bytes(key)))
    }

    /// What is kept under `key` (an entry, or the Vary names of its URL), read on a blocking
    /// thread; `None` when there is nothing, or when its file is torn or corrupt (then it is
    /// logged and removed, and the caller fetches the response again). An entry found under a
    /// key with Vary values counts as a use of its URL's Vary record too, so that the record
    /// is not evicted before the entries it leads to.
    pub async fn read(self: &Arc<Self>, key: &Key) -> Option<Record> {
        let key_bytes = record::key_bytes(key);
        let name = record::name(&key_bytes);
        let url = self.lock().files.get(&name)?.url;
        let disk = self.clone();
        let read = tokio::task::spawn_blocking(move || disk.read_file(name, url)).await;
        let (found, entry) = match read {
            Ok(Ok(Some(pair))) => pair,
            Ok(Ok(None)) => return None,
            Ok(Err(error)) => {
                tracing::warn!(%error, "a disk cache entry is unusable; dropped, the response will be fetched again");
                self.counters.errors.fetch_add(1, Ordering::Relaxed);
                self.forget(name);
                return None;
            }
            Err(_) => return None,
        };
        // Another key with the same name: its file is not this key's entry.
        if &found != key {
            return None;
        }
        let mut index = self.lock();
        index.touch(name);
        if let Record::Entry(_) = entry {
            self.counters.hits.fetch_add(1, Ordering::Relaxed);
            if !key.vary.is_empty() {
                index.touch(record::name(&record::key_bytes(&key.without_vary())));
            }
        }
        Some(entry)
    }

    fn read_file(&self, name: u64, url: u32) -> Result<Option<(Key, Record)>, DiskError> {
        let path = self.path_of(name, url);
        let bytes = match std::fs::read(&path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                self.lock().remove(name);
                return Ok(None);
            }
            Err(source) => return Err(DiskError::Io { path, source }),
        };
        record::decode(Bytes::from(bytes)).map(Some).map_err(|source| DiskError::Corrupt { path, source })
    }

    /// Removes the file of `name` and its index slot, on a blocking thread.
    fn forget(self: &Arc<Self>, name: u64) {
        let Some(url) = self.lock().remove(name) else { return };
        let disk = self.clone();
        tokio::task::spawn_blocking(move || {
            // Unless a write has put a new file in its place meanwhile (under the same lock).
            let index = disk.lock();
            if !index.files.contains_key(&name) {
                let _ = std::fs::remove_file(disk.path_of(name, url));
            }
        });
    }

    /// Drops the entry under `key`, if any (a stale entry about to be revalidated).
    pub fn remove(self: &Arc<Self>, key: &Key) {
        self.forget(record::name(&record::key_bytes(key)));
    }

    /// Drops every entry of `url` (as a cache key spells it), in every profile, coding and
    /// variant: an unsafe request to it succeeded. Entries of another URL with the same tag
    /// (one in four billion) go too, which costs a fetch.
    pub fn remove_url(self: &Arc<Self>, url: &str) {
        let tag = record::url_tag(url);
        let names: Vec<u64> = self.lock().files.iter().filter(|(_, slot)| slot.url == tag).map(|(name, _)| *name).collect();
        for name in names {
            self.forget(name);
        }
    }

    /// Writes `what` under `key` in the background; skipped (and counted) when the writes
    /// waiting already hold their bound, or the record alone is past `cache.disk_max_bytes`.
    pub fn write(self: &Arc<Self>, key: &Key, what: Record) {
        let bytes = what.weight();
        let queued = self.queued.fetch_update(Ordering::AcqRel, Ordering::Acquire, |q| q.checked_add(bytes).filter(|&t| t <= self.max_queued));
        if queued.is_err() || bytes > self.max_bytes {
            self.counters.skipped.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
        let key_bytes = record::key_bytes(key);
        let url = record::url_tag(&key.base.url);
        let disk = self.clone();
        runtime.spawn(async move {
            // The semaphore is never closed, so acquiring only waits.
            let permit = disk.writers.acquire().await;
            let writer = disk.clone();
            let written = tokio::task::spawn_blocking(move || writer.write_file(&key_bytes, url, &what)).await;
            drop(permit);
            disk.queued.fetch_sub(bytes, Ordering::AcqRel);
            match written {
                Ok(Ok(())) => {
                    disk.counters.writes.fetch_add(1, Ordering::Relaxed);
                }
                Ok(Err(error)) => {
                    tracing::warn!(%error, "a disk cache entry could not be written");
                    disk.counters.errors.fetch_add(1, Ordering::Relaxed);
                }
                Err(_) => {}
            }
        });
    }

    /// Writes the record to a temporary file, renames it into place and indexes it, then
    /// evicts past the bound. The rename and the index change happen under one lock, so the
    /// index never names a file another write or an eviction has just replaced.
    fn write_file(&self, key_bytes: &[u8], url: u32, what: &Record) -> Result<(), DiskError> {
        let name = record::name(key_bytes);
        let record = record::encode(key_bytes, what);
        let path = self.path_of(name, url);
        let io = |path: &Path| {
            let path = path.to_owned();
            move |source| DiskError::Io { path, source }
        };
        if let Some(shard) = path.parent() {
            std::fs::create_dir_all(shard).map_err(io(shard))?;
        }
        let temp = path.with_extension(format!("tmp{}-{}", std::process::id(), self.temp.fetch_add(1, Ordering::Relaxed)));
        let written = std::fs::File::create(&temp).and_then(|mut f| f.write_all(&record));
        if let Err(source) = written {
            let _ = std::fs::remove_file(&temp);
            return Err(DiskError::Io { path: temp, source });
        }
        let mut index = self.lock();
        if let Err(source) = std::fs::rename(&temp, &path) {
            drop(index);
            let _ = std::fs::remove_file(&temp);
            return Err(DiskError::Io { path, source });
        }
        index.insert(name, url, record.len() as u64);
        self.evict(&mut index, name);
        Ok(())
    }

    /// Removes the least recently used files, but `keep`, until the bound holds.
    fn evict(&self, index: &mut Index, keep: u64) {
        while index.bytes > self.max_bytes {
            let Some(victim) = index.oldest_but(keep) else { return };
            let Some(url) = index.remove(victim) else { return };
            let _ = std::fs::remove_file(self.path_of(victim, url));
            self.counters.evictions.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The counters and what the folder holds.
    pub fn snapshot(&self) -> DiskSnapshot {
        let (entries, bytes) = {
            let index = self.lock();
            (index.files.len() as u64, index.bytes)
        };
        let c = &self.counters;
        DiskSnapshot {
            hits: c.hits.load(Ordering::Relaxed),
            writes: c.writes.load(Ordering::Relaxed),
            skipped: c.skipped.load(Ordering::Relaxed),
            errors: c.errors.load(Ordering::Relaxed),
            evictions: c.evictions.load(Ordering::Relaxed),
            entries,
            bytes,
            max_bytes: self.max_bytes,
        }
    }
}

/// A file's name, `{key name:016x}-{url tag:08x}`, read back; `None` for any other file.
fn parse_name(file: &str) -> Option<(u64, u32)> {
    let (name, url) = file.split_once('-')?;
    if name.len() != 16 || url.len() != 8 {
        return None;
    }
    Some((u64::from_str_radix(name, 16).ok()?, u32::from_str_radix(url, 16).ok()?))
}

/// Opens the disk tier, or says why not and runs without it: a cache folder that cannot be
/// used is no reason to refuse to proxy.
pub fn open_or_warn(dir: &Path, max_bytes: u64, max_queued: u64) -> Option<Arc<Disk>> {
    let started = Instant::now();
    match Disk::open(dir, max_bytes, max_queued) {
        Ok(disk) => {
            let s = disk.snapshot();
            tracing::info!(dir = %disk.root().display(), entries = s.entries, bytes = s.bytes, ms = started.elapsed().as_millis() as u64, "disk cache opened");
            Some(Arc::new(disk))
        }
        Err(error) => {
            tracing::warn!(%error, "the disk cache cannot be used; the cache runs in memory only");
            None
        }
    }
}
