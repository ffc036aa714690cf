//! The state file (`state.path`): what people chose on the control page, kept across restarts.
//!
//! Each client's profile choice and per-site switches live in a redb file: an embedded,
//! pure-Rust store whose commits are atomic (copy-on-write pages, a checksummed commit slot
//! swapped last), so a crash mid-write leaves the previous commit whole. redb was chosen over
//! SQLite (rusqlite, bundled) by measurement; the numbers are in docs/benchmarks.md ("State file").
//!
//! The file carries a schema version in its `meta` table. A file of an older version is
//! migrated in one write transaction at start-up ([`MIGRATIONS`]); one of a newer version, or
//! a file that is not a readable redb file, is refused with an error that names it: the proxy
//! does not start, rather than start empty and overwrite what people chose. Without
//! `state.path` the same choices are kept in memory and end with the process.
//!
//! The file holds the secret every client's form token is keyed with, so it is created
//! readable by its owner alone (0600), never through a symbolic link (`O_NOFOLLOW`: a
//! `state.path` that is a link is refused rather than followed and its target overwritten),
//! and an existing file readable by others is narrowed to 0600 with a warning. Before the file
//! is opened for writing, a copy of it in memory is opened and read whole; a corrupt file,
//! even one whose damage makes redb panic, is refused by name, and nothing is written to it.
//!
//! This module knows nothing of HTTP: it stores strings under strings. What they mean (a
//! profile name, a switch) is checked by the control page that reads them back.

// redb's own error is large; here it travels between a few cold functions (one write per
// choice a person makes) and is boxed where it leaves this module ([`StateError`]).
#![allow(clippy::result_large_err)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use redb::{Database, ReadableTable, TableDefinition};

/// The version this build writes. Raise it with a new entry in [`MIGRATIONS`].
pub const SCHEMA_VERSION: u64 = 1;

/// One function per version step: `MIGRATIONS[i]` takes a file from version `i + 1` to `i + 2`,
/// inside the write transaction that also records the new version. Version 1 is the first, so
/// there is no step yet.
const MIGRATIONS: &[Migration] = &[];

/// One step of [`MIGRATIONS`].
type Migration = fn(&redb::WriteTransaction) -> Result<(), redb::Error>;

const META: TableDefinition<&str, u64> = TableDefinition::new("meta");
const SECRETS: TableDefinition<&str, &[u8]> = TableDefinition::new("secrets");
const PROFILES: TableDefinition<&str, &str> = TableDefinition::new("profiles");
/// Keyed `client \n host`: neither a client id nor a host name holds a line break.
const SITES: TableDefinition<&str, &str> = TableDefinition::new("sites");

/// A state file that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum StateError {
    /// The file could not be opened, read or written: unreadable, corrupt, locked by another
    /// process, or not a state file at all.
    #[error("{}: the state file cannot be used: {source}. pith keeps people's choices there and will not start over it; move it aside (its choices are then lost) or fix its permissions", .path.display())]
    Unusable {
        /// The file.
        path: PathBuf,
        /// redb's own error (boxed: it is large, and errors travel by value).
        #[source]
        source: Box<redb::Error>,
    },
    /// The file is not safe to keep the secret in: a symbolic link, not a regular file, or
    /// its permissions cannot be narrowed.
    #[error("{}: the state file is not used: {reason}", .path.display())]
    Unsafe {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// The file is damaged in a way the database cannot open: nothing was written to it.
    #[error("{}: the state file cannot be used: it is corrupt ({what}); it was left as it is. Move it aside (its choices are then lost) or restore a copy", .path.display())]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What the database said.
        what: String,
    },
    /// The file was written by a newer pith whose schema this build does not know.
    #[error("{}: the state file has schema version {found}; this pith knows up to {SCHEMA_VERSION}. Run the newer pith, or move the file aside", .path.display())]
    TooNew {
        /// The file.
        path: PathBuf,
        /// Its version.
        found: u64,
    },
}

/// Everything the file holds, read once at start-up.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Snapshot {
    /// Client id → chosen profile name.
    pub profiles: BTreeMap<String, String>,
    /// (client id, host) → switch name.
    pub sites: BTreeMap<(String, String), String>,
    /// The secret the control page's tokens are keyed with; empty when none was kept yet.
    pub secret: Vec<u8>,
}

/// The store: a redb file, or nothing (choices in memory only).
pub struct Store {
    db: Option<(Database, PathBuf)>,
}

impl Store {
    /// A store that keeps nothing: every write succeeds and is forgotten.
    pub fn in_memory() -> Store {
        Store { db: None }
    }

    /// Opens (creating when missing) the file at `path`, migrates it to [`SCHEMA_VERSION`] and
    /// reads it whole. A file that is unreadable, corrupt or too new is an error.
    pub fn open(path: &Path) -> Result<(Store, Snapshot), StateError> {
        let unusable = |source: redb::Error| StateError::Unusable { path: path.to_owned(), source: Box::new(source) };
        let file = open_private(path)?;
        check_copy(path, &file)?;
        let mut db = redb::Builder::new().create_file(file).map_err(|e| unusable(e.into()))?;
        // Reads every page's checksum; a file redb had to repair is named in the log, since the
        // repair may have dropped the last commit.
        if !db.check_integrity().map_err(|e| unusable(e.into()))? {
            tracing::warn!(path = %path.display(), "the state file was not closed cleanly and was repaired; the last choice made may be lost");
        }
        let found = migrate(&db).map_err(unusable)?;
        if found > SCHEMA_VERSION {
            return Err(StateError::TooNew { path: path.to_owned(), found });
        }
        let snapshot = read_all(&db).map_err(unusable)?;
        Ok((Store { db: Some((db, path.to_owned())) }, snapshot))
    }

    /// The file, when there is one.
    pub fn path(&self) -> Option<&Path> {
        self.db.as_ref().map(|(_, p)| p.as_path())
    }

    /// Sets (or with `None` clears) `client`'s profile choice, durably.
    pub fn set_profile(&self, client: &str, profile: Option<&str>) -> Result<(), StateError> {
        self.write(|tx| {
            let mut t = tx.open_table(PROFILES)?;
            match profile {
                Some(p) => drop(t.insert(client, p)?),
                None => drop(t.remove(client)?),
            }
            Ok(())
        })
    }

    /// Sets (or with `None` clears) `client`'s switch for `host`, durably.
    pub fn set_site(&self, client: &str, host: &str, switch: Option<&str>) -> Result<(), StateError> {
        let key = format!("{client}\n{host}");
        self.write(|tx| {
            let mut t = tx.open_table(SITES)?;
            match switch {
                Some(s) => drop(t.insert(key.as_str(), s)?),
                None => drop(t.remove(key.as_str())?),
            }
            Ok(())
        })
    }

    /// Keeps the token secret.
    pub fn set_secret(&self, secret: &[u8]) -> Result<(), StateError> {
        self.write(|tx| {
            tx.open_table(SECRETS)?.insert("token", secret)?;
            Ok(())
        })
    }

    /// One write transaction, committed durably (redb's default: fsync before the commit slot
    /// is flipped), or nothing when there is no file.
    fn write(&self, change: impl FnOnce(&redb::WriteTransaction) -> Result<(), redb::Error>) -> Result<(), StateError> {
        let Some((db, path)) = &self.db else { return Ok(()) };
        let run = || -> Result<(), redb::Error> {
            let tx = db.begin_write()?;
            change(&tx)?;
            tx.commit()?;
            Ok(())
        };
        run().map_err(|source| StateError::Unusable { path: path.clone(), source: Box::new(source) })
    }
}

/// Brings the file to [`SCHEMA_VERSION`], creating its tables; returns the version found (0 for
/// a new file). A newer file is left untouched.
/// Opens (creating when missing) the state file for reading and writing: created 0600, never
/// through a symbolic link, only a regular file; an existing one readable by others is
/// narrowed to 0600.
fn open_private(path: &Path) -> Result<std::fs::File, StateError> {
    let refuse = |reason: String| StateError::Unsafe { path: path.to_owned(), reason };
    let mut options = std::fs::OpenOptions::new();
    options.read(true).write(true).create(true).truncate(false);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        // Never through a final symbolic link; never waiting on a FIFO (refused below as not
        // a regular file).
        options.mode(0o600).custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK);
    }
    let file = options.open(path).map_err(|e| match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => refuse("it is a symbolic link; name the file itself".into()),
        _ => refuse(format!("cannot open it: {e}")),
    })?;
    let meta = file.metadata().map_err(|e| refuse(format!("cannot read its metadata: {e}")))?;
    if !meta.is_file() {
        return Err(refuse("it is not a regular file".into()));
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = meta.permissions().mode();
        if mode & 0o077 != 0 {
            file.set_permissions(std::fs::Permissions::from_mode(0o600)).map_err(|e| refuse(format!("it is readable by others ({:o}) and cannot be narrowed: {e}", mode & 0o777)))?;
            tracing::warn!(path = %path.display(), "the state file was readable by others ({:o}); narrowed to 0600, since it holds the key of the control page's tokens", mode & 0o777);
        }
    }
    Ok(file)
}

/// Opens a copy of the file in memory and reads it whole, checksums included, before the file
/// itself is opened for writing: damage the database cannot open, even damage that makes it
/// panic, is refused with the file named and no byte written to it.
fn check_copy(path: &Path, file: &std::fs::File) -> Result<(), StateError> {
    use redb::StorageBackend;
    use std::io::Read;
    let corrupt = |what: String| StateError::Corrupt { path: path.to_owned(), what };
    let mut bytes = Vec::new();
    (&*file).read_to_end(&mut bytes).map_err(|e| StateError::Unsafe { path: path.to_owned(), reason: format!("cannot read it: {e}") })?;
    if bytes.is_empty() {
        return Ok(());
    }
    let opened = std::panic::catch_unwind(move || -> Result<(), String> {
        let backend = redb::backends::InMemoryBackend::new();
        backend.set_len(bytes.len() as u64).map_err(|e| e.to_string())?;
        backend.write(0, &bytes).map_err(|e| e.to_string())?;
        let mut db = redb::Builder::new().create_with_backend(backend).map_err(|e| e.to_string())?;
        db.check_integrity().map_err(|e| e.to_string())?;
        // A newer schema is for the file itself to report ([`StateError::TooNew`]).
        if migrate(&db).map_err(|e| e.to_string())? <= SCHEMA_VERSION {
            read_all(&db).map_err(|e| e.to_string())?;
        }
        Ok(())
    });
    match opened {
        Ok(Ok(())) => Ok(()),
        Ok(Err(what)) => Err(corrupt(what)),
        Err(panic) => Err(corrupt(panic.downcast_ref::<String>().cloned().or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string())).unwrap_or_else(|| "the database failed reading it".into()))),
    }
}

fn migrate(db: &Database) -> Result<u64, redb::Error> {
    let tx = db.begin_write()?;
    let found = {
        let mut meta = tx.open_table(META)?;
        let found = meta.get("schema")?.map(|v| v.value()).unwrap_or(0);
        if found > SCHEMA_VERSION {
            drop(meta);
            tx.abort()?;
            return Ok(found);
        }
        if found < SCHEMA_VERSION {
            meta.insert("schema", SCHEMA_VERSION)?;
        }
        found
    };
    tx.open_table(SECRETS)?;
    tx.open_table(PROFILES)?;
    tx.open_table(SITES)?;
    for step in MIGRATIONS.iter().skip(found.saturating_sub(1) as usize) {
        step(&tx)?;
    }
    tx.commit()?;
    Ok(found)
}

fn read_all(db: &Database) -> Result<Snapshot, redb::Error> {
    let rx = db.begin_read()?;
    let mut snapshot = Snapshot::default();
    for row in rx.open_table(PROFILES)?.iter()? {
        let (k, v) = row?;
        snapshot.profiles.insert(k.value().to_string(), v.value().to_string());
    }
    for row in rx.open_table(SITES)?.iter()? {
        let (k, v) = row?;
        if let Some((client, host)) = k.value().split_once('\n') {
            snapshot.sites.insert((client.to_string(), host.to_string()), v.value().to_string());
        }
    }
    if let Some(secret) = rx.open_table(SECRETS)?.get("token")? {
        snapshot.secret = secret.value().to_vec();
    }
    Ok(snapshot)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn choices_survive_reopening() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.redb");
        {
            let (store, snap) = Store::open(&path).unwrap();
            assert_eq!(snap, Snapshot::default());
            store.set_profile("ip:127.0.0.1", Some("reader")).unwrap();
            store.set_profile("ip:127.0.0.2", Some("text")).unwrap();
            store.set_profile("ip:127.0.0.2", None).unwrap();
            store.set_site("ip:127.0.0.1", "example.com", Some("original")).unwrap();
            store.set_secret(b"0123").unwrap();
        }
        let (_, snap) = Store::open(&path).unwrap();
        assert_eq!(snap.profiles.len(), 1);
        assert_eq!(snap.profiles["ip:127.0.0.1"], "reader");
        assert_eq!(snap.sites[&("ip:127.0.0.1".to_string(), "example.com".to_string())], "original");
        assert_eq!(snap.secret, b"0123");
    }

    #[test]
    fn a_file_that_is_not_a_state_file_is_refused_and_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.redb");
        let junk = vec![0x5au8; 8192];
        std::fs::write(&path, &junk).unwrap();
        let err = Store::open(&path).err().expect("refused");
        assert!(matches!(err, StateError::Unusable { .. } | StateError::Corrupt { .. }), "{err}");
        assert!(err.to_string().contains("state.redb"), "{err}");
        assert_eq!(std::fs::read(&path).unwrap(), junk, "never overwritten");
    }

    /// A file with damaged pages ends start-up with an error naming it, never a panic, and is
    /// left exactly as it was.
    #[test]
    fn a_corrupt_file_is_refused_by_name_and_left_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.redb");
        {
            let (store, _) = Store::open(&path).unwrap();
            store.set_secret(b"0123").unwrap();
            for i in 0..200 {
                store.set_profile(&format!("10.0.{}.{}", i / 250, i % 250), Some("reader")).unwrap();
            }
        }
        let good = std::fs::read(&path).unwrap();
        let mut seen_panic_or_error = 0;
        // Damage in several places: past the header, in the middle, near the end.
        for at in [4096usize, good.len() / 2, good.len() - 4096, 512] {
            let mut bad = good.clone();
            for b in bad.iter_mut().skip(at).take(2048) {
                *b ^= 0xA5;
            }
            std::fs::write(&path, &bad).unwrap();
            // Damage to pages no live table uses may be harmless: the file opens, and is
            // then written to as any state file is.
            if let Err(err) = Store::open(&path) {
                assert!(err.to_string().contains("state.redb"), "{err}");
                assert!(std::fs::read(&path).unwrap() == bad, "damaged at {at}: refused, and never written to");
                seen_panic_or_error += 1;
            }
        }
        assert!(seen_panic_or_error > 0, "some damage is found");
    }

    #[cfg(unix)]
    #[test]
    fn the_file_is_private_and_never_reached_through_a_link() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.redb");
        drop(Store::open(&path).unwrap());
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        // A link to an empty file is refused, and its target left empty.
        let target = dir.path().join("target");
        std::fs::write(&target, b"").unwrap();
        let link = dir.path().join("link.redb");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let err = Store::open(&link).err().expect("refused");
        assert!(err.to_string().contains("link.redb") && err.to_string().contains("symbolic link"), "{err}");
        assert_eq!(std::fs::read(&target).unwrap(), b"");
        // A file others may read is narrowed.
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        drop(Store::open(&path).unwrap());
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
    }

    #[test]
    fn a_newer_schema_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.redb");
        {
            let db = Database::create(&path).unwrap();
            let tx = db.begin_write().unwrap();
            tx.open_table(META).unwrap().insert("schema", SCHEMA_VERSION + 1).unwrap();
            tx.commit().unwrap();
        }
        let err = Store::open(&path).err().expect("refused");
        assert!(matches!(err, StateError::TooNew { found, .. } if found == SCHEMA_VERSION + 1), "{err}");
    }
}
