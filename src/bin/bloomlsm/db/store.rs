//! The store a `db` command works on: the `--keyspace` flag, the checks a
//! directory passes before a command opens it (a store, or where a new one
//! may be made), and the opens for writing and for reading, which say on
//! stderr what an open lost of the write-ahead logs.

use std::path::{Path, PathBuf};

use bloomlsm::db::Manifest;
use bloomlsm::fs::RealFs;
use bloomlsm::{Db, Keyspace, Options, Stats, WalRecovery};
use clap::Args;

use crate::design::DesignArgs;
use crate::open_files::OpenFilesArg;
use crate::report::count;
use crate::{CliError, CliResult};

/// The `--keyspace` flag of the `db` commands.
#[derive(Debug, Args)]
pub struct KeyspaceArg {
    /// The keyspace to read or write, which must exist (`db keyspaces` lists
    /// them, `db keyspaces DIR --create NAME` makes one); the default
    /// keyspace without the flag.
    #[arg(long, value_name = "NAME")]
    pub keyspace: Option<String>,
}

impl KeyspaceArg {
    /// The keyspace's name: the flag's, or the default keyspace's.
    fn name(&self) -> &str {
        self.keyspace.as_deref().unwrap_or("default")
    }

    /// The usage error of a name that is no keyspace of the store in `dir`.
    fn unknown(&self, dir: &Path) -> CliError {
        let d = dir.display();
        CliError::usage(format!(
            "{d} has no keyspace {:?} (db keyspaces {d} lists them; --create NAME makes one)",
            self.name()
        ))
    }

    /// The keyspace in `db`: the named one, or the default keyspace.
    pub fn of(&self, db: &Db) -> CliResult<Keyspace> {
        if !db.keyspace_names().iter().any(|n| n == self.name()) {
            return Err(self.unknown(db.path()));
        }
        Ok(db.keyspace(self.name())?)
    }

    /// Fails (a usage error) unless `dir` holds a store with the keyspace
    /// the flag names, as its MANIFEST records. A writing command checks
    /// this before it opens the store, which writes files (a new MANIFEST
    /// and log): a mistyped name changes nothing.
    pub fn check_exists(&self, dir: &Path) -> CliResult {
        let Some(name) = self.keyspace.as_deref() else {
            return Ok(());
        };
        check_store(dir)?;
        if name == "default" {
            return Ok(());
        }
        let (state, _) = Manifest::recover(&RealFs, dir)?;
        if state.keyspaces.values().any(|n| n == name) {
            Ok(())
        } else {
            Err(self.unknown(dir))
        }
    }

    /// Where `put` and `load` may make a new store: with `--keyspace`,
    /// nowhere (the keyspace must exist).
    pub fn new_store(&self, create: bool) -> NewStore {
        if self.keyspace.is_some() {
            NewStore::Refuse
        } else {
            NewStore::with_flag(create)
        }
    }

    /// Refuses design flags with `--keyspace`: a keyspace's design is set
    /// when it is created (`db keyspaces --create`).
    pub fn check_design(&self, design: &DesignArgs) -> CliResult {
        if self.keyspace.is_some() && design.any() {
            return Err(CliError::usage(
                "the design flags change the default keyspace's design; a keyspace's design is \
                 set when it is created (db keyspaces DIR --create NAME with the flags)",
            ));
        }
        Ok(())
    }
}

/// The words of a store directory argument that is a file.
pub(super) fn not_a_directory(dir: &Path) -> CliError {
    CliError::usage(format!("{} is not a directory", dir.display()))
}

/// The words of a directory argument that holds no store.
pub(super) const NOT_A_STORE: &str = "is not a bloomlsm store (no CURRENT file)";

/// Fails (a usage error) unless `dir` holds a store: reading commands never
/// create one. A directory the user may not look in is an I/O error
/// naming the directory and the error, not a usage error.
pub fn check_store(dir: &Path) -> CliResult {
    if super::bucket_url::bucket_of(dir).is_some() {
        // Its open says whether the prefix holds a store.
        return Ok(());
    }
    // `CURRENT` names the live manifest of every store (docs/format.md).
    store_verdict(
        dir,
        dir.join("CURRENT").try_exists(),
        std::fs::metadata(dir).map(|m| m.is_dir()),
    )
}

/// What [`check_store`] says of `dir`, given what looking at it found:
/// `current`, whether `dir/CURRENT` exists, and `is_dir`, whether `dir` is a
/// directory. Only a look that found nothing (`NotFound`, or a `CURRENT`
/// missing from a directory) makes the answer "does not exist" or "not a
/// store"; any other error, such as a permission denied, is reported as it
/// is (exit status 4).
fn store_verdict(
    dir: &Path,
    current: std::io::Result<bool>,
    is_dir: std::io::Result<bool>,
) -> CliResult {
    let d = dir.display();
    match (current, is_dir) {
        (Ok(true), _) => Ok(()),
        (_, Err(e)) if e.kind() == std::io::ErrorKind::NotFound => {
            Err(CliError::usage(format!("{d} does not exist")))
        }
        (_, Err(e)) | (Err(e), Ok(true)) => Err(CliError::new(format!("{d}: {e}"))),
        (_, Ok(false)) => Err(not_a_directory(dir)),
        (Ok(false), Ok(true)) => Err(CliError::usage(format!("{d} {NOT_A_STORE}"))),
    }
}

/// Where a writing command may make a new store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NewStore {
    /// Nowhere: the directory must hold a store (`delete`, `compact`).
    Refuse,
    /// In a missing or empty directory (`put`, `load`).
    IfEmpty,
    /// Also in a directory holding other files (`put --create`,
    /// `load --create`).
    Anywhere,
}

impl NewStore {
    /// `IfEmpty`, or `Anywhere` with `--create`.
    pub fn with_flag(create: bool) -> Self {
        if create {
            NewStore::Anywhere
        } else {
            NewStore::IfEmpty
        }
    }
}

/// Fails (a usage error, before anything is written) unless a writing
/// command may open `dir`: a store, or where `new` allows one to be made.
/// A directory of someone else's files is not turned into a store by
/// accident.
pub fn check_store_dir(dir: &Path, new: NewStore) -> CliResult {
    // Anything but a clear "no CURRENT" (a store, or a look that failed)
    // is for `check_store` to judge.
    if new == NewStore::Refuse || !matches!(dir.join("CURRENT").try_exists(), Ok(false)) {
        return check_store(dir);
    }
    if !dir.exists() {
        return Ok(());
    }
    if !dir.is_dir() {
        return Err(not_a_directory(dir));
    }
    let empty = std::fs::read_dir(dir)
        .map_err(|e| CliError::new(format!("read {}: {e}", dir.display())))?
        .next()
        .is_none();
    if empty || new == NewStore::Anywhere {
        return Ok(());
    }
    Err(CliError::usage(format!(
        "{} {NOT_A_STORE} and is not empty; pass --create to make a new store in it",
        dir.display()
    )))
}

/// Opens the store at `dir` for writing: with the design it records, as
/// `design`'s flags change it (the defaults for a new store). `new` says
/// where a new store may be made ([`check_store_dir`]).
pub fn open(dir: &Path, new: NewStore, design: &DesignArgs, files: &OpenFilesArg) -> CliResult<Db> {
    super::bucket_url::refuse_for_writing(dir)?;
    check_store_dir(dir, new)?;
    let mut opts = Options::default()
        .create_if_missing(new != NewStore::Refuse)
        .create_among_other_files(new == NewStore::Anywhere);
    files.apply(&mut opts);
    design.apply(dir, &mut opts)?;
    let db = Db::open(dir, opts)?;
    warn_wal_damage(dir, &db.stats(), true);
    Ok(db)
}

/// Opens the store at `dir` for writing to the keyspace the `--keyspace`
/// flag names: design flags beside `--keyspace`, and a keyspace the store
/// lacks, are refused before anything is written ([`open`] writes files).
/// `new`: where a new store may be made ([`check_store_dir`]).
pub fn open_keyspace(
    dir: &Path,
    keyspace: &KeyspaceArg,
    design: &DesignArgs,
    new: NewStore,
    files: &OpenFilesArg,
) -> CliResult<(Db, Keyspace)> {
    super::bucket_url::refuse_for_writing(dir)?;
    keyspace.check_design(design)?;
    keyspace.check_exists(dir)?;
    let db = open(dir, new, design, files)?;
    let ks = keyspace.of(&db)?;
    Ok((db, ks))
}

/// What the open of `dir` lost of its write-ahead logs, in words, if
/// anything: the bytes dropped from a log's end and the damaged records
/// skipped. `writable`: the open was for writing, which keeps a copy of a
/// cut log in `lost/`. `cut`: where the first dropped end starts, if known
/// (`first_cut` in `verify.rs`).
pub fn wal_damage(
    dir: &Path,
    s: &Stats,
    writable: bool,
    cut: Option<(PathBuf, u64)>,
) -> Option<String> {
    let mut parts = Vec::new();
    if s.wal_tail_bytes_dropped > 0 {
        let at = cut
            .map(|(file, offset)| format!("{} from offset {offset}; ", file.display()))
            .unwrap_or_default();
        parts.push(format!(
            "dropped {} bytes from the end of a write-ahead log ({at}a write torn by a \
             crash, or a damaged record)",
            count(s.wal_tail_bytes_dropped)
        ));
    }
    if s.wal_records_salvaged > 0 {
        parts.push(format!(
            "skipped {} damaged write-ahead log records",
            count(s.wal_records_salvaged)
        ));
    }
    if parts.is_empty() {
        return None;
    }
    // Where a writable open keeps a log whose cut end held data
    // (docs/format.md §14).
    let lost = dir.join("lost");
    let kept = if writable && lost.is_dir() {
        format!(
            " (a log whose dropped end held data is kept in {}/)",
            lost.display()
        )
    } else {
        String::new()
    };
    Some(format!(
        "the open of {} {}: the writes in them are not in the store{kept}",
        dir.display(),
        parts.join(" and ")
    ))
}

/// Prints [`wal_damage`] as one warning line on stderr.
pub(super) fn warn_wal_damage(dir: &Path, s: &Stats, writable: bool) {
    if let Some(what) = wal_damage(dir, s, writable, None) {
        eprintln!("bloomlsm: warning: {what}");
    }
}

/// Opens an existing store for the reading commands (`get`, `scan`, `stats`,
/// `verify`) with [`Db::open_read_only`]: no lock taken, no file created,
/// written, renamed or deleted, so they work beside a running writer and on
/// a directory the user cannot write. The caller has run [`check_store`].
///
/// A log's torn or damaged end is dropped, not refused
/// ([`WalRecovery::TolerateTornTail`]): the commands say what was dropped
/// ([`wal_damage`]), which a refused open could not.
pub(super) fn read_only_db(dir: &Path, files: &OpenFilesArg) -> bloomlsm::Result<Db> {
    let mut opts = Options::default().wal_recovery(WalRecovery::TolerateTornTail);
    files.apply(&mut opts);
    open_read_only(dir, opts)
}

/// [`Db::open_read_only`] of a local directory, or of the store an
/// `s3://BUCKET/PREFIX` argument names (`bucket_url`).
pub(super) fn open_read_only(dir: &Path, opts: Options) -> bloomlsm::Result<Db> {
    match super::bucket_url::open_read_only(dir, opts.clone())? {
        Some(db) => Ok(db),
        None => Db::open_read_only(dir, opts),
    }
}

/// Opens an existing store for the reading commands, warning on stderr if
/// the open dropped or skipped write-ahead log records.
pub fn open_for_reading(dir: &Path, files: &OpenFilesArg) -> CliResult<Db> {
    check_store(dir)?;
    let db = read_only_db(dir, files)?;
    warn_wal_damage(dir, &db.stats(), false);
    Ok(db)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_that_cannot_be_read_is_not_called_storeless() {
        use std::io::{Error, ErrorKind};
        let dir = Path::new("/srv/s");
        let denied = || Err(Error::from(ErrorKind::PermissionDenied));
        let verdict = |current, is_dir| store_verdict(dir, current, is_dir).err();
        assert!(verdict(Ok(true), Ok(true)).is_none());
        // Search permission on the directory refused: CURRENT's stat fails.
        let e = verdict(denied(), Ok(true)).unwrap();
        assert_eq!(e.code, crate::EXIT_FAILURE);
        assert!(
            e.message.starts_with("/srv/s: permission denied"),
            "{}",
            e.message
        );
        assert!(!e.message.contains("CURRENT"), "{}", e.message);
        // ... on a directory above it: the directory's stat fails too.
        let e = verdict(denied(), denied()).unwrap();
        assert_eq!(e.code, crate::EXIT_FAILURE);
        assert!(e.message.contains("permission denied"), "{}", e.message);
        // What was looked at and not found.
        let missing = || Err(Error::from(ErrorKind::NotFound));
        let e = verdict(Ok(false), missing()).unwrap();
        assert_eq!(
            (e.code, e.message.as_str()),
            (crate::EXIT_USAGE, "/srv/s does not exist")
        );
        let e = verdict(Ok(false), Ok(true)).unwrap();
        assert_eq!(e.code, crate::EXIT_USAGE);
        assert!(e.message.ends_with(NOT_A_STORE), "{}", e.message);
        let e = verdict(Err(Error::from(ErrorKind::NotADirectory)), Ok(false)).unwrap();
        assert_eq!(
            (e.code, e.message.as_str()),
            (crate::EXIT_USAGE, "/srv/s is not a directory")
        );
    }
}
