//! `bloomlsm db`: operate on a store directory from the shell.
//!
//! It is one file because it is one subcommand, `bloomlsm db`: its arguments,
//! the store checks its commands share, the commands, and the store-shape
//! printers (`shape_line`, `level_table`) the bench reuses; its unit tests (the
//! `tests` module at the end) are 4% of it.
//!
//! `get`, `scan`, `stats` and `verify` open the store read-only
//! ([`Db::open_read_only`]): they take no lock and change no file.
//!
//! Every command that opens a store says so when the open dropped the end of
//! a write-ahead log or skipped damaged records in one
//! ([`Stats::wal_tail_bytes_dropped`], [`Stats::wal_records_salvaged`]):
//! `verify` fails (exit status 1), the others print one warning line on
//! stderr, so that a read never answers from a store that lost writes
//! without saying so.
//!
//! Keys and values are given and printed in the text form of
//! [`escape`](crate::escape) (UTF-8 as itself, `\xNN` for control characters
//! and other bytes, `\\` for a backslash), or as hex with `--hex`, so `db scan`
//! output (`key<TAB>value` lines) can be fed back to `db load`. `--json`
//! prints the same keys and values inside JSON objects (fields in
//! [`help`]).

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use bloomlsm::db::{MAX_KEY_LEN, MAX_VALUE_LEN, Manifest};
use bloomlsm::fs::RealFs;
use bloomlsm::workload::SplitMix64;
use bloomlsm::{Db, FileStats, Keyspace, LevelStats, Options, Stats, WalRecovery};
use clap::{Args, Subcommand};
use serde_json::{Value, json};

use crate::design::{DesignArgs, describe, describe_compression};
use crate::escape::Codec;
use crate::open_files::OpenFilesArg;
use crate::report::{TextTable, bytes, count, percent, sig3};
use crate::{CliError, CliResult, help, parse_bytes, progress, write_json};

/// The `db` subcommands.
#[derive(Debug, Subcommand)]
pub enum DbCommand {
    /// Store a value under a key (creates the store if missing).
    #[command(after_help = help::DB_PUT)]
    Put(PutArgs),
    /// Print a key's value; exit status 1 if the key is absent.
    #[command(after_help = help::DB_GET)]
    Get(GetArgs),
    /// Remove a key (a no-op if absent; the store must exist).
    #[command(after_help = help::DB_DELETE)]
    Delete {
        /// The store's directory.
        dir: PathBuf,
        /// The key.
        key: String,
        /// The key is hex.
        #[arg(long)]
        hex: bool,
        #[command(flatten)]
        keyspace: KeyspaceArg,
        #[command(flatten)]
        design: DesignArgs,
    },
    /// Remove every key in [START, END) with one range tombstone (the store
    /// must exist).
    #[command(after_help = help::DB_DELETE_RANGE)]
    DeleteRange {
        /// The store's directory.
        dir: PathBuf,
        /// The first key removed.
        start: String,
        /// The end of the range: the first key after it, not removed.
        end: String,
        /// START and END are hex.
        #[arg(long)]
        hex: bool,
        #[command(flatten)]
        keyspace: KeyspaceArg,
        #[command(flatten)]
        design: DesignArgs,
    },
    /// Print entries in key order as `key<TAB>value` lines.
    #[command(after_help = help::DB_SCAN)]
    Scan(ScanArgs),
    /// Bulk-load `key` or `key<TAB>value` lines from a file or `-` (stdin),
    /// all or nothing, even if the process is killed.
    #[command(after_help = help::DB_LOAD)]
    Load(LoadArgs),
    /// Print the per-level shape, filters and lookup counters.
    #[command(after_help = help::DB_STATS)]
    Stats(StatsArgs),
    /// Check every block of every file of the store.
    #[command(after_help = help::DB_VERIFY)]
    Verify {
        /// The store's directory.
        dir: PathBuf,
        /// Print one JSON object (fields below).
        #[arg(long)]
        json: bool,
    },
    /// Flush and merge everything down to the deepest level.
    #[command(after_help = help::DB_COMPACT)]
    Compact {
        /// The store's directory.
        dir: PathBuf,
        #[command(flatten)]
        keyspace: KeyspaceArg,
        #[command(flatten)]
        design: DesignArgs,
    },
    /// List the store's keyspaces, after creating (with the design flags)
    /// or dropping one.
    #[command(after_help = help::DB_KEYSPACES)]
    Keyspaces {
        /// The store's directory.
        dir: PathBuf,
        /// Create this keyspace, with the design the flags give (the
        /// defaults without flags).
        #[arg(long, value_name = "NAME", conflicts_with = "drop")]
        create: Option<String>,
        /// Drop this keyspace and delete its files.
        #[arg(long, value_name = "NAME")]
        drop: Option<String>,
        /// Print one JSON object (fields below).
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        design: DesignArgs,
    },
    /// Copy the store as of now into a new directory (hard links where
    /// possible): a store of its own, for backups.
    #[command(after_help = help::DB_CHECKPOINT)]
    Checkpoint {
        /// The store's directory.
        dir: PathBuf,
        /// The new directory (must not exist; its parent must).
        target: PathBuf,
        /// Print one JSON object (fields below).
        #[arg(long)]
        json: bool,
    },
}

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

/// Arguments of `db put`.
#[derive(Debug, Args)]
pub struct PutArgs {
    /// The store's directory.
    pub dir: PathBuf,
    /// The key.
    pub key: String,
    /// The value, or `-` to read it from stdin (raw bytes).
    #[arg(required_unless_present = "value_file", conflicts_with = "value_file")]
    pub value: Option<String>,
    /// Read the value from this file (raw bytes) instead.
    #[arg(long, value_name = "FILE")]
    pub value_file: Option<PathBuf>,
    /// The key and value are hex (a value from stdin or a file is always raw).
    #[arg(long)]
    pub hex: bool,
    /// Make a new store even in a directory that is not empty (a missing or
    /// empty one needs no flag).
    #[arg(long)]
    pub create: bool,
    #[command(flatten)]
    pub keyspace: KeyspaceArg,
    #[command(flatten)]
    pub design: DesignArgs,
}

/// Arguments of `db get`.
#[derive(Debug, Args)]
pub struct GetArgs {
    /// The store's directory.
    pub dir: PathBuf,
    /// The key.
    pub key: String,
    /// Write the value's raw bytes, without escaping or a newline.
    #[arg(long, conflicts_with = "json")]
    pub raw: bool,
    /// The key is hex, and the value printed as hex.
    #[arg(long)]
    pub hex: bool,
    /// Print one JSON object (fields below).
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub keyspace: KeyspaceArg,
}

/// Arguments of `db scan`.
#[derive(Debug, Args)]
pub struct ScanArgs {
    /// The store's directory.
    pub dir: PathBuf,
    /// First key (inclusive).
    #[arg(long)]
    pub from: Option<String>,
    /// End key (exclusive).
    #[arg(long)]
    pub to: Option<String>,
    /// Only the keys that start with this prefix.
    #[arg(long, conflicts_with_all = ["from", "to"])]
    pub prefix: Option<String>,
    /// Last key first (with --limit: the last N keys).
    #[arg(long)]
    pub reverse: bool,
    /// Print at most this many entries.
    #[arg(long, value_name = "N")]
    pub limit: Option<u64>,
    /// Print keys only.
    #[arg(long)]
    pub keys_only: bool,
    /// Keys and values (and --from, --to) are hex.
    #[arg(long)]
    pub hex: bool,
    /// Print one JSON object per entry per line (fields below).
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub keyspace: KeyspaceArg,
}

/// Arguments of `db load`.
#[derive(Debug, Args)]
pub struct LoadArgs {
    /// The store's directory (created if missing).
    pub dir: PathBuf,
    /// Input file, or `-` for stdin.
    pub file: PathBuf,
    /// Keys and values in the input are hex.
    #[arg(long)]
    pub hex: bool,
    /// No progress display.
    #[arg(long, short)]
    pub quiet: bool,
    /// Make a new store even in a directory that is not empty (a missing or
    /// empty one needs no flag).
    #[arg(long)]
    pub create: bool,
    #[command(flatten)]
    pub keyspace: KeyspaceArg,
    #[command(flatten)]
    pub design: DesignArgs,
}

/// Arguments of `db stats`.
#[derive(Debug, Args)]
pub struct StatsArgs {
    /// The store's directory.
    pub dir: PathBuf,
    /// First look up this many keys that are (almost surely) absent but lie
    /// inside the store's key ranges, so the lookups reach the filters: each
    /// probe picks a file with probability proportional to its keys and looks
    /// up its smallest key followed by 8 random bytes. Counters live in memory
    /// only: without probes a fresh process shows zeros. At most 2^28
    /// (268,435,456).
    #[arg(long, value_name = "N",
          value_parser = clap::value_parser!(u64).range(0..=MAX_PROBES))]
    pub probe: Option<u64>,
    /// Seed of the probe keys.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Also print one line per file.
    #[arg(long)]
    pub files: bool,
    /// Open the store with this metadata memory budget in bytes, filters
    /// and index partitions (suffixes K, M, G: KiB, MiB, GiB): the filters
    /// the store would keep in memory are shown (`--files`), and --probe
    /// reads the others on demand.
    #[arg(long, value_name = "BYTES", value_parser = parse_size)]
    pub filter_budget: Option<u64>,
    /// Print one JSON object (fields below).
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub keyspace: KeyspaceArg,
}

/// The most lookups `db stats --probe` and `sst filter-test --probes` make,
/// 2^28: about 268 false positives at an FPR of 10^-6, and a couple of
/// minutes at half a microsecond a lookup (a data block read from the page
/// cache), where an unbounded count can run for years.
pub const MAX_PROBES: u64 = 1 << 28;

/// A byte count: digits, optionally followed by K, M or G (binary units).
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let (num, mult) = match t.char_indices().last() {
        Some((i, 'K' | 'k')) => (&t[..i], 1u64 << 10),
        Some((i, 'M' | 'm')) => (&t[..i], 1 << 20),
        Some((i, 'G' | 'g')) => (&t[..i], 1 << 30),
        _ => (t, 1),
    };
    num.parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(mult))
        .ok_or_else(|| format!("{s:?} is not a byte count (e.g. 65536, 64K, 2M)"))
}

impl DbCommand {
    /// Runs the command, writing its report to `out`.
    /// `files`: the `--max-open-files` flag of every subcommand.
    pub fn run(&self, files: &OpenFilesArg, out: &mut dyn Write) -> CliResult {
        match self {
            DbCommand::Put(a) => put(a, files),
            DbCommand::Get(a) => get(a, files, out),
            DbCommand::Delete {
                dir,
                key,
                hex,
                keyspace,
                design,
            } => {
                let k = parse_bytes(Codec::new(*hex), "key", key)?;
                check_key(&k)?;
                keyspace.check_design(design)?;
                keyspace.check_exists(dir)?;
                let db = open(dir, NewStore::Refuse, design, files)?;
                keyspace.of(&db)?.delete(k)?;
                Ok(db.close()?)
            }
            DbCommand::DeleteRange {
                dir,
                start,
                end,
                hex,
                keyspace,
                design,
            } => {
                let s = parse_bytes(Codec::new(*hex), "start", start)?;
                let e = parse_bytes(Codec::new(*hex), "end", end)?;
                check_key(&s)?;
                check_key(&e)?;
                if s >= e {
                    return Err(CliError::usage(format!(
                        "empty range: START {start:?} is not below END {end:?}"
                    )));
                }
                keyspace.check_design(design)?;
                keyspace.check_exists(dir)?;
                let db = open(dir, NewStore::Refuse, design, files)?;
                keyspace.of(&db)?.delete_range(s, e)?;
                Ok(db.close()?)
            }
            DbCommand::Scan(a) => scan(a, files, out),
            DbCommand::Load(a) => load(a, files, out),
            DbCommand::Stats(a) => stats(a, files, out),
            DbCommand::Verify { dir, json } => verify(dir, *json, files, out),
            DbCommand::Compact {
                dir,
                keyspace,
                design,
            } => {
                keyspace.check_design(design)?;
                keyspace.check_exists(dir)?;
                let db = open(dir, NewStore::Refuse, design, files)?;
                let ks = keyspace.of(&db)?;
                writeln!(out, "before: {}", shape_line(&ks.stats()))?;
                let t = Instant::now();
                ks.compact()?;
                writeln!(out, "after:  {}", shape_line(&ks.stats()))?;
                writeln!(out, "compacted in {:.2} s", t.elapsed().as_secs_f64())?;
                Ok(db.close()?)
            }
            DbCommand::Keyspaces {
                dir,
                create,
                drop,
                json,
                design,
            } => keyspaces(
                dir,
                create.as_deref(),
                drop.as_deref(),
                *json,
                design,
                files,
                out,
            ),
            DbCommand::Checkpoint { dir, target, json } => checkpoint(dir, target, *json, out),
        }
    }
}

/// `db keyspaces`: lists the store's keyspaces (read-only) or, with
/// `--create` or `--drop`, opens it for writing to change them first.
fn keyspaces(
    dir: &Path,
    create: Option<&str>,
    drop: Option<&str>,
    json: bool,
    design: &DesignArgs,
    files: &OpenFilesArg,
    out: &mut dyn Write,
) -> CliResult {
    if create.is_none() && design.any() {
        return Err(CliError::usage(
            "the design flags of db keyspaces are the design of the keyspace --create makes",
        ));
    }
    // A name or design the change cannot take is a usage error, found
    // before the store is opened for writing (which writes files).
    let mut opts = Options::default();
    if let Some(name) = create {
        if let Some(why) = bloomlsm::db::keyspace_name_error(name) {
            return Err(CliError::usage(format!("--create {name:?}: {why}")));
        }
        design.apply_flags(&mut opts)?;
        opts.validate()
            .map_err(|e| CliError::usage(format!("--create {name:?}: {e}")))?;
    }
    if create.is_some() || drop.is_some() {
        check_store(dir)?;
        let (state, _) = Manifest::recover(&RealFs, dir)?;
        let exists = |name: &str| name == "default" || state.keyspaces.values().any(|n| n == name);
        let d = dir.display();
        if let Some(name) = create.filter(|n| exists(n)) {
            return Err(CliError::usage(format!(
                "{d} already has a keyspace {name:?}"
            )));
        }
        if drop == Some("default") {
            return Err(CliError::usage(
                "the default keyspace cannot be dropped (it holds the keys written without --keyspace)",
            ));
        }
        if let Some(name) = drop.filter(|n| !exists(n)) {
            return Err(CliError::usage(format!(
                "{d} has no keyspace {name:?} (db keyspaces {d} lists them)"
            )));
        }
    }
    let db = if create.is_some() || drop.is_some() {
        open(dir, NewStore::Refuse, &DesignArgs::default(), files)?
    } else {
        open_for_reading(dir, files)?
    };
    if let Some(name) = create {
        db.create_keyspace(name, opts)?;
    }
    if let Some(name) = drop {
        db.drop_keyspace(name)?;
    }
    let names = db.keyspace_names();
    db.close()?;
    if json {
        return write_json(out, &json!({ "keyspaces": names }));
    }
    for n in names {
        writeln!(out, "{n}")?;
    }
    Ok(())
}

/// `db checkpoint`: refuses a target that exists, whose parent does not, or
/// that lies inside the store's directory (usage errors, before the store
/// is opened), then opens the store for writing and takes the checkpoint.
fn checkpoint(dir: &Path, target: &Path, json: bool, out: &mut dyn Write) -> CliResult {
    check_store(dir)?;
    if target.exists() {
        return Err(CliError::usage(format!(
            "{} exists; a checkpoint makes a new directory",
            target.display()
        )));
    }
    let parent = target
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    if !parent.is_dir() {
        return Err(CliError::usage(format!(
            "{}: the directory {} does not exist",
            target.display(),
            parent.display()
        )));
    }
    // A checkpoint is a store of its own: nested in the live store's
    // directory it would be removed with that directory, and the store's
    // directory would hold files that are not the store's. Compared as
    // real paths, so that `..` and symbolic links cannot hide the nesting.
    let real = |p: &Path| {
        std::fs::canonicalize(p).map_err(|e| CliError::new(format!("{}: {e}", p.display())))
    };
    if real(parent)?.starts_with(real(dir)?) {
        return Err(CliError::usage(format!(
            "{} is inside the store {}; a checkpoint goes outside the store's directory",
            target.display(),
            dir.display()
        )));
    }
    let opts = Options::default().create_if_missing(false);
    // Beside a writer in another process the store is locked: the
    // checkpoint is then made from its files, through a read-only handle.
    let (db, writable) = match Db::open(dir, opts.clone()) {
        Ok(db) => (db, true),
        Err(bloomlsm::Error::Locked(_)) => (Db::open_read_only(dir, opts)?, false),
        Err(e) => return Err(e.into()),
    };
    warn_wal_damage(dir, &db.stats(), writable);
    let r = db.checkpoint(target)?;
    db.close()?;
    if json {
        return write_json(
            out,
            &json!({
                "store": dir.display().to_string(),
                "checkpoint": target.display().to_string(),
                "tables": r.tables,
                "linked": r.linked,
                "copied": r.copied,
                "bytes": r.bytes,
                "bytes_copied": r.bytes_copied,
                "logs": r.logs,
                "sequence": r.sequence,
            }),
        );
    }
    let copied = if r.copied > 0 {
        format!(
            ", {} copied ({}; hard links refused)",
            count(r.copied as u64),
            bytes(r.bytes_copied)
        )
    } else {
        String::new()
    };
    writeln!(
        out,
        "checkpoint of {} in {}: {} tables, {}: {} linked{copied}; up to sequence {}",
        dir.display(),
        target.display(),
        count(r.tables as u64),
        bytes(r.bytes),
        count(r.linked as u64),
        r.sequence
    )?;
    Ok(())
}

/// The words of a store directory argument that is a file.
fn not_a_directory(dir: &Path) -> CliError {
    CliError::usage(format!("{} is not a directory", dir.display()))
}

/// The words of a directory argument that holds no store.
const NOT_A_STORE: &str = "is not a bloomlsm store (no CURRENT file)";

/// Fails (a usage error) unless `dir` holds a store: reading commands never
/// create one. A directory the user may not look in is an I/O error
/// naming the directory and the error, not a usage error.
pub fn check_store(dir: &Path) -> CliResult {
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

/// What the open of `dir` lost of its write-ahead logs, in words, if
/// anything: the bytes dropped from a log's end and the damaged records
/// skipped. `writable`: the open was for writing, which keeps a copy of a
/// cut log in `lost/`. `cut`: where the first dropped end starts, if known
/// ([`first_cut`]).
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
fn warn_wal_damage(dir: &Path, s: &Stats, writable: bool) {
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
fn read_only_db(dir: &Path, files: &OpenFilesArg) -> bloomlsm::Result<Db> {
    let mut opts = Options::default().wal_recovery(WalRecovery::TolerateTornTail);
    files.apply(&mut opts);
    Db::open_read_only(dir, opts)
}

/// Opens an existing store for the reading commands, warning on stderr if
/// the open dropped or skipped write-ahead log records.
pub fn open_for_reading(dir: &Path, files: &OpenFilesArg) -> CliResult<Db> {
    check_store(dir)?;
    let db = read_only_db(dir, files)?;
    warn_wal_damage(dir, &db.stats(), false);
    Ok(db)
}

/// Refuses a key the store cannot hold, before the store is opened, in the
/// library's words (`invalid argument: empty key`) and with its exit status
/// ([`crate::EXIT_DATA`]).
fn check_key(key: &[u8]) -> CliResult {
    check_record(key, b"").map_err(|what| bloomlsm::Error::invalid(what).into())
}

/// Checks a record against the store's limits before anything is written:
/// a non-empty key of at most [`MAX_KEY_LEN`] bytes, a value of at most
/// [`MAX_VALUE_LEN`]. An empty key is `empty key`, the library's words.
pub fn check_record(key: &[u8], value: &[u8]) -> Result<(), String> {
    if key.is_empty() {
        return Err(EMPTY_KEY.into());
    }
    let over = |what: &str, n: usize, max: usize| {
        format!(
            "{what} of {} bytes is over the {}-byte limit",
            count(n as u64),
            count(max as u64)
        )
    };
    if key.len() > MAX_KEY_LEN {
        return Err(over("key", key.len(), MAX_KEY_LEN));
    }
    if value.len() > MAX_VALUE_LEN {
        return Err(over("value", value.len(), MAX_VALUE_LEN));
    }
    Ok(())
}

/// What the library says of an empty key ([`bloomlsm::Error::InvalidArgument`]).
const EMPTY_KEY: &str = "empty key";

/// Reads a value byte for byte from `r` (named `name` in errors), refusing
/// one over [`MAX_VALUE_LEN`] without reading all of it.
fn read_value(r: impl Read, name: &str) -> CliResult<Vec<u8>> {
    let mut v = Vec::new();
    r.take(MAX_VALUE_LEN as u64 + 1)
        .read_to_end(&mut v)
        .map_err(|e| CliError::new(format!("read {name}: {e}")))?;
    if v.len() > MAX_VALUE_LEN {
        return Err(CliError::data(format!(
            "value from {name} is over the {}-byte limit",
            count(MAX_VALUE_LEN as u64)
        )));
    }
    Ok(v)
}

fn put(a: &PutArgs, files: &OpenFilesArg) -> CliResult {
    let codec = Codec::new(a.hex);
    let key = parse_bytes(codec, "key", &a.key)?;
    let value = match (&a.value_file, a.value.as_deref()) {
        (Some(f), _) => {
            let name = f.display().to_string();
            let file = File::open(f).map_err(|e| CliError::new(format!("{name}: {e}")))?;
            read_value(file, &name)?
        }
        (None, Some("-")) => read_value(std::io::stdin().lock(), "stdin")?,
        (None, Some(v)) => parse_bytes(codec, "value", v)?,
        (None, None) => return Err(CliError::usage("a value, - or --value-file is needed")),
    };
    check_record(&key, &value).map_err(|what| CliError::from(bloomlsm::Error::invalid(what)))?;
    a.keyspace.check_design(&a.design)?;
    a.keyspace.check_exists(&a.dir)?;
    let db = open(&a.dir, a.keyspace.new_store(a.create), &a.design, files)?;
    a.keyspace.of(&db)?.put(key, value)?;
    Ok(db.close()?)
}

fn get(a: &GetArgs, files: &OpenFilesArg, out: &mut dyn Write) -> CliResult {
    let codec = Codec::new(a.hex);
    let k = parse_bytes(codec, "key", &a.key)?;
    check_key(&k)?;
    let db = open_for_reading(&a.dir, files)?;
    let v = a.keyspace.of(&db)?.get(&k)?;
    if a.json {
        write_json(
            out,
            &json!({
                "key": codec.encode(&k),
                "found": v.is_some(),
                "value": v.as_deref().map(|v| codec.encode(v)),
            }),
        )?;
    }
    match v {
        Some(v) if a.raw => out.write_all(&v)?,
        Some(v) if !a.json => writeln!(out, "{}", codec.encode(&v))?,
        Some(_) => {}
        None => {
            return Err(CliError::negative(format!(
                "key not found: {}",
                codec.encode(&k)
            )));
        }
    }
    Ok(db.close()?)
}

/// The store's shape on one line: `L0 2 files 20,000 keys 2.3 MiB | L1 ...`.
pub fn shape_line(s: &Stats) -> String {
    let parts: Vec<String> = s
        .levels
        .iter()
        .filter(|l| l.files > 0)
        .map(|l| {
            format!(
                "L{} {} files {} keys {}",
                l.level,
                l.files,
                count(l.entries),
                bytes(l.file_bytes)
            )
        })
        .collect();
    if parts.is_empty() {
        "(no files)".to_string()
    } else {
        parts.join(" | ")
    }
}

/// The store's shape as JSON: one `{level, files, keys, bytes,
/// filter_bits_per_key}` per non-empty level (`filter_bits_per_key` null for
/// a level without filtered keys).
pub fn shape_json(s: &Stats) -> Value {
    s.levels
        .iter()
        .filter(|l| l.files > 0)
        .map(|l| {
            json!({
                "level": l.level,
                "files": l.files,
                "keys": l.entries,
                "bytes": l.file_bytes,
                "filter_bits_per_key": (l.filtered_keys > 0).then(|| l.filter_bits_per_key()),
            })
        })
        .collect()
}

/// A compression ratio, uncompressed over stored bytes: `2.41x` (`-` for
/// nothing stored).
pub fn ratio(raw: u64, stored: u64) -> String {
    if stored == 0 {
        "-".to_string()
    } else {
        format!("{:.2}x", raw as f64 / stored as f64)
    }
}

/// The sums over every non-empty level (policy and predicted FPR left empty).
pub fn level_total(s: &Stats) -> LevelStats {
    let mut total = LevelStats::default();
    for l in s.levels.iter().filter(|l| l.files > 0) {
        total.files += l.files;
        total.entries += l.entries;
        total.file_bytes += l.file_bytes;
        total.data_bytes += l.data_bytes;
        total.data_raw_bytes += l.data_raw_bytes;
        total.filter_bytes += l.filter_bytes;
        total.filtered_keys += l.filtered_keys;
        total.io.add(&l.io);
    }
    total
}

/// The per-level table of `db stats`: shape, filters and lookup counters of
/// every non-empty level, plus a total row.
///
/// `checked`: per level, the predicted FPR weighted by checks
/// ([`checked_fpr`]) to show instead of the key-weighted model.
pub fn level_table(s: &Stats, checked: Option<&[Option<f64>]>) -> TextTable {
    let mut t = TextTable::new(&[
        "level",
        "files",
        "keys",
        "size",
        "filter policy",
        "bits/key",
        "filter mem",
        "checks",
        "negatives",
        "false pos",
        "observed FPR",
        "predicted FPR",
        "disk reads",
        "cache hits",
    ])
    .align(4, crate::report::Align::Left);
    let row = |name: String, l: &LevelStats, predicted: Option<f64>| {
        vec![
            name,
            count(l.files as u64),
            count(l.entries),
            bytes(l.file_bytes),
            l.policies.clone(),
            format!("{:.2}", l.filter_bits_per_key()),
            bytes(l.filter_bytes),
            count(l.io.filter_checks),
            count(l.io.filter_negatives),
            count(l.io.false_positives),
            percent(l.io.observed_fpr()),
            predicted.map(|p| percent(Some(p))).unwrap_or_default(),
            count(l.io.block_reads),
            count(l.io.cache_hits),
        ]
    };
    for l in s.levels.iter().filter(|l| l.files > 0) {
        let predicted = match checked {
            Some(c) => c.get(l.level).copied().flatten(),
            None => Some(l.predicted_fpr),
        };
        t.row(row(format!("L{}", l.level), l, predicted));
    }
    t.row(row("total".into(), &level_total(s), None));
    t
}

/// Looks up `n` keys inside the store's key ranges (see `StatsArgs::probe`).
fn probe_in_ranges(db: &Keyspace, n: u64, seed: u64) -> CliResult {
    let files = db.file_stats();
    let total: u64 = files.iter().map(|f| f.entries).sum();
    if total == 0 {
        return Ok(());
    }
    let mut rng = SplitMix64::new(seed);
    let mut key = Vec::new();
    for _ in 0..n {
        let mut at = rng.below(total);
        let f = files
            .iter()
            .find(|f| {
                let here = at < f.entries;
                at = at.saturating_sub(f.entries);
                here
            })
            .expect("at < total");
        key.clear();
        key.extend_from_slice(&f.smallest);
        key.extend_from_slice(&rng.next_u64().to_be_bytes());
        if key.as_slice() > f.largest.as_slice() {
            // The range is too narrow for a suffix: probe just past its start.
            key.truncate(f.smallest.len());
            key.push(0);
        }
        db.get(&key)?;
    }
    Ok(())
}

/// Per level, the modelled FPR of the filters that were checked, weighted by
/// each file's checks — the weighting the observed FPR has; `None` where no
/// filter was checked.
fn checked_fpr(files: &[FileStats], levels: usize) -> Vec<Option<f64>> {
    let mut sums = vec![(0.0f64, 0u64); levels];
    for f in files.iter().filter(|f| f.filter_usable) {
        let s = &mut sums[f.level];
        s.0 += f.predicted_fpr * f.io.filter_checks as f64;
        s.1 += f.io.filter_checks;
    }
    sums.into_iter()
        .map(|(p, c)| (c > 0).then(|| p / c as f64))
        .collect()
}

/// One level (or the total) of `db stats --json`.
fn level_json(l: &LevelStats, total: bool) -> Value {
    json!({
        "level": (!total).then_some(l.level),
        "files": l.files,
        "keys": l.entries,
        "bytes": l.file_bytes,
        "data_bytes": l.data_bytes,
        "data_raw_bytes": l.data_raw_bytes,
        "filter_policy": (!total).then_some(l.policies.as_str()),
        "filter_bytes": l.filter_bytes,
        "filter_bits_per_key": l.filter_bits_per_key(),
        "predicted_fpr": (!total).then_some(l.predicted_fpr),
        "filter_checks": l.io.filter_checks,
        "filter_negatives": l.io.filter_negatives,
        "false_positives": l.io.false_positives,
        "observed_fpr": l.io.observed_fpr(),
        "block_reads": l.io.block_reads,
        "cache_hits": l.io.cache_hits,
    })
}

fn scan(a: &ScanArgs, files: &OpenFilesArg, out: &mut dyn Write) -> CliResult {
    use std::ops::Bound;
    let codec = Codec::new(a.hex);
    let bound = |flag: &str, k: &Option<String>| {
        k.as_deref()
            .map(|k| parse_bytes(codec, flag, k))
            .transpose()
    };
    let (from, to) = (bound("--from", &a.from)?, bound("--to", &a.to)?);
    // A bound is a key: an empty one is refused as `db get` refuses it. (An
    // empty --prefix is every key.)
    for (flag, k) in [("--from", &from), ("--to", &to)] {
        if let Some(k) = k {
            check_key(k).map_err(|e| CliError {
                message: format!("{} in {flag}", e.message),
                ..e
            })?;
        }
    }
    let prefix = bound("--prefix", &a.prefix)?;
    let db = open_for_reading(&a.dir, files)?;
    let ks = a.keyspace.of(&db)?;
    let lo = from.as_deref().map_or(Bound::Unbounded, Bound::Included);
    let hi = to.as_deref().map_or(Bound::Unbounded, Bound::Excluded);
    let it = match &prefix {
        Some(p) => ks.scan_prefix(p),
        None => ks.scan((lo, hi)),
    };
    let it: Box<dyn Iterator<Item = bloomlsm::Result<_>>> = if a.reverse {
        Box::new(it.rev())
    } else {
        Box::new(it)
    };
    let limit = a.limit.unwrap_or(u64::MAX);
    let mut out = std::io::BufWriter::new(out);
    for (n, e) in it.enumerate() {
        if n as u64 >= limit {
            break;
        }
        let (k, v) = e?;
        match (a.json, a.keys_only) {
            (true, true) => write_json(&mut out, &json!({ "key": codec.encode(&k) }))?,
            (true, false) => write_json(
                &mut out,
                &json!({ "key": codec.encode(&k), "value": codec.encode(&v) }),
            )?,
            (false, true) => writeln!(out, "{}", codec.encode(&k))?,
            (false, false) => writeln!(out, "{}\t{}", codec.encode(&k), codec.encode(&v))?,
        }
    }
    out.flush()?;
    Ok(())
}

/// Splits an input line of `db load` into key and value (`key<TAB>value`,
/// or a bare key with an empty value) and checks them against the store's
/// limits.
pub fn parse_load_line(codec: Codec, line: &str) -> Result<(Vec<u8>, Vec<u8>), String> {
    let (k, v) = line.split_once('\t').unwrap_or((line, ""));
    let key = codec.decode(k).map_err(|e| format!("key: {e}"))?;
    let value = codec.decode(v).map_err(|e| format!("value: {e}"))?;
    check_record(&key, &value)?;
    Ok((key, value))
}

/// What one pass over `db load` input found.
#[derive(Debug, Default)]
struct LoadPass {
    /// Good records.
    records: u64,
    /// Bytes of their keys and values.
    payload: u64,
    /// Lines that failed to parse.
    bad_lines: u64,
    /// The first of them, as `name:line: what`.
    first_bad: Option<String>,
}

/// Reads `db load` input, calling `f` on every good record; bad lines are
/// counted and the first one kept (reading goes on to count them all).
fn load_pass(
    input: impl BufRead,
    name: &str,
    codec: Codec,
    mut f: impl FnMut(&[u8], &[u8]) -> CliResult,
) -> CliResult<LoadPass> {
    let mut pass = LoadPass::default();
    for (i, line) in input.split(b'\n').enumerate() {
        let line = line.map_err(|e| CliError::new(format!("read {name}: {e}")))?;
        let line = line.strip_suffix(b"\r").unwrap_or(&line);
        if line.is_empty() {
            continue;
        }
        let parsed = std::str::from_utf8(line)
            .map_err(|_| "not UTF-8 (write other bytes as \\xNN)".to_string())
            .and_then(|text| parse_load_line(codec, text));
        match parsed {
            Ok((k, v)) => {
                pass.records += 1;
                pass.payload += (k.len() + v.len()) as u64;
                f(&k, &v)?;
            }
            Err(e) => {
                pass.bad_lines += 1;
                pass.first_bad
                    .get_or_insert_with(|| format!("{name}:{}: {e}", i + 1));
            }
        }
    }
    Ok(pass)
}

fn load(a: &LoadArgs, files: &OpenFilesArg, out: &mut dyn Write) -> CliResult {
    a.keyspace.check_design(&a.design)?;
    // A mistyped keyspace fails before the input is read.
    a.keyspace.check_exists(&a.dir)?;
    let codec = Codec::new(a.hex);
    let stdin = a.file.as_os_str() == "-";
    let name = if stdin {
        "<stdin>".to_string()
    } else {
        a.file.display().to_string()
    };
    // All or nothing: the whole input is checked before the store is opened.
    // Stdin can be read once only, so it is kept in memory for the second pass.
    let stdin_bytes = if stdin {
        let mut v = Vec::new();
        std::io::stdin()
            .lock()
            .read_to_end(&mut v)
            .map_err(|e| CliError::new(format!("read {name}: {e}")))?;
        v
    } else {
        Vec::new()
    };
    let input = || -> CliResult<Box<dyn BufRead + '_>> {
        if stdin {
            return Ok(Box::new(&stdin_bytes[..]));
        }
        let f = File::open(&a.file).map_err(|e| CliError::new(format!("{name}: {e}")))?;
        Ok(Box::new(BufReader::with_capacity(1 << 16, f)))
    };
    let check = load_pass(input()?, &name, codec, |_, _| Ok(()))?;
    if let Some(first) = check.first_bad {
        let more = match check.bad_lines {
            1 => String::new(),
            n => format!("{} bad lines in all, ", count(n)),
        };
        return Err(CliError::data(format!(
            "{first}; {more}nothing was written"
        )));
    }

    let db = open(&a.dir, a.keyspace.new_store(a.create), &a.design, files)?;
    let ks = a.keyspace.of(&db)?;
    let pb = progress(Some(check.records), a.quiet, format!("loading {name}"));
    let start = Instant::now();
    // The second pass feeds `Keyspace::ingest`, which installs the whole load with
    // one MANIFEST edit, or nothing: a line that no longer parses (the file
    // changed since the check) or a read error fails the load before that.
    let mut done = LoadPass::default();
    let mut changed: Option<String> = None;
    let records = input()?.split(b'\n').enumerate().filter_map(|(i, line)| {
        let line = match line {
            Ok(line) => line,
            Err(e) => return Some(Err(bloomlsm::Error::io(format!("read {name}"), e))),
        };
        let line = line.strip_suffix(b"\r").unwrap_or(&line);
        if line.is_empty() {
            return None;
        }
        let parsed = std::str::from_utf8(line)
            .map_err(|_| "not UTF-8 (write other bytes as \\xNN)".to_string())
            .and_then(|text| parse_load_line(codec, text));
        Some(match parsed {
            Ok((k, v)) => {
                done.records += 1;
                done.payload += (k.len() + v.len()) as u64;
                pb.set_position(done.records);
                Ok((k, v))
            }
            Err(e) => {
                let what = format!("{name}:{}: {e}", i + 1);
                changed = Some(what.clone());
                Err(bloomlsm::Error::invalid(what))
            }
        })
    });
    let loaded = ks.ingest(records);
    pb.finish_and_clear();
    if let Some(first) = changed {
        return Err(CliError::data(format!(
            "{name} changed while it was loaded: {first}; nothing was written"
        )));
    }
    let report = loaded.map_err(|e| {
        let e = CliError::from(e);
        CliError {
            message: format!("{}; nothing was written", e.message),
            ..e
        }
    })?;
    db.close()?;
    debug_assert_eq!(report.records, done.records);
    let secs = start.elapsed().as_secs_f64();
    writeln!(
        out,
        "loaded {} records ({}) into {} in {:.2} s ({} records/s)",
        count(done.records),
        bytes(done.payload),
        a.dir.display(),
        secs,
        sig3(done.records as f64 / secs.max(1e-9))
    )?;
    Ok(())
}

fn stats(a: &StatsArgs, files: &OpenFilesArg, out: &mut dyn Write) -> CliResult {
    check_store(&a.dir)?;
    let mut opts = Options::default().metadata_memory_budget(a.filter_budget);
    files.apply(&mut opts);
    let db = Db::open_read_only(&a.dir, opts)?;
    warn_wal_damage(&a.dir, &db.stats(), false);
    let ks = a.keyspace.of(&db)?;
    ks.reset_stats();
    if let Some(n) = a.probe {
        probe_in_ranges(&ks, n, a.seed)?;
    }
    let s = ks.stats();
    let all_files = ks.file_stats();
    let checked = checked_fpr(&all_files, s.levels.len());
    let files = if a.files { all_files } else { Vec::new() };
    let design = ks.options().filters.clone();
    let compression = ks.options().compression.clone();
    drop(ks);
    db.close()?;
    if a.json {
        let levels: Vec<Value> = s
            .levels
            .iter()
            .filter(|l| l.files > 0)
            .map(|l| {
                let mut v = level_json(l, false);
                v["predicted_fpr_of_checks"] = json!(checked[l.level]);
                v
            })
            .collect();
        let mut v = json!({
            "store": a.dir.display().to_string(),
            "levels": levels,
            "total": level_json(&level_total(&s), true),
            "memory": {
                "filter_bytes": s.filter_bytes,
                "filter_pinned_bytes": s.filter_pinned_bytes,
                "filter_budget": a.filter_budget,
                "index_bytes": s.index_bytes,
                "memtable_bytes": s.memtable_bytes,
            },
            "wal": {
                "tail_bytes_dropped": s.wal_tail_bytes_dropped,
                "records_salvaged": s.wal_records_salvaged,
            },
            "probe": a.probe.map(|n| json!({
                "lookups": n,
                "seed": a.seed,
                "found": s.gets_found,
                "block_reads_per_missing_get": s.block_reads_per_missing_get(),
                "predicted_block_reads_per_missing_get": s.predicted_block_reads_per_missing_get(),
            })),
        });
        if a.files {
            v["files"] = files
                .iter()
                .map(|f| {
                    json!({
                        "file": format!("{:06}.sst", f.number),
                        "level": f.level,
                        "bytes": f.file_bytes,
                        "keys": f.entries,
                        "compression": f.compression,
                        "data_bytes": f.data_bytes,
                        "data_raw_bytes": f.data_raw_bytes,
                        "filter": f.filter,
                        "filter_usable": f.filter_usable,
                        "filter_in_memory": f.filter_pinned,
                        "filter_partitions": f.filter_partitions,
                        "probe_chance": f.probe_chance,
                        "bits_per_key": f.bits_per_key,
                        "predicted_fpr": f.predicted_fpr,
                        "filter_checks": f.io.filter_checks,
                        "false_positives": f.io.false_positives,
                    })
                })
                .collect();
        }
        return write_json(out, &v);
    }
    writeln!(out, "store {}: {}", a.dir.display(), shape_line(&s))?;
    writeln!(
        out,
        "design: {}; {}",
        describe(&design),
        describe_compression(&compression)
    )?;
    let total = level_total(&s);
    writeln!(
        out,
        "disk: {} in files; data blocks {} stored, {} uncompressed (ratio {})",
        bytes(total.file_bytes),
        bytes(total.data_bytes),
        bytes(total.data_raw_bytes),
        ratio(total.data_raw_bytes, total.data_bytes)
    )?;
    let filters = match a.filter_budget {
        None => bytes(s.filter_bytes),
        Some(b) => format!(
            "{} of {} (budget {}; the rest read on demand)",
            bytes(s.filter_pinned_bytes),
            bytes(s.filter_bytes),
            bytes(b)
        ),
    };
    let indexes = if s.index_pinned_bytes == s.index_bytes {
        bytes(s.index_bytes)
    } else {
        format!(
            "{} of {} (the rest read on demand)",
            bytes(s.index_pinned_bytes),
            bytes(s.index_bytes)
        )
    };
    writeln!(
        out,
        "memory: filters {filters}, indexes {indexes}, memtables {}",
        bytes(s.memtable_bytes)
    )?;
    if s.wal_tail_bytes_dropped > 0 {
        writeln!(
            out,
            "wal: the open dropped {} from the end of the newest log, a tail torn by a crash or damaged; \
             the writes in it are not in the store (an open for writing first copies the log to {}/lost/)",
            bytes(s.wal_tail_bytes_dropped),
            a.dir.display()
        )?;
    }
    if s.wal_records_salvaged > 0 {
        writeln!(
            out,
            "wal: the open skipped {} damaged records",
            count(s.wal_records_salvaged)
        )?;
    }
    if s.total.filter_block_reads + s.total.filter_cache_hits > 0 {
        writeln!(
            out,
            "filters read on demand, per missing lookup: {} filter blocks from disk ({}), {} from the block cache",
            sig3(s.total.filter_block_reads as f64 / s.gets_missing().max(1) as f64),
            bytes(s.total.filter_bytes_read / s.gets_missing().max(1)),
            sig3(s.total.filter_cache_hits as f64 / s.gets_missing().max(1) as f64),
        )?;
    }
    match a.probe {
        Some(n) => writeln!(
            out,
            "counters: {} lookups of absent keys inside the files' key ranges (seed {}), {} found; data-block reads per missing lookup: {} measured, {} predicted",
            count(n),
            a.seed,
            count(s.gets_found),
            sig3(s.block_reads_per_missing_get()),
            sig3(s.predicted_block_reads_per_missing_get())
        )?,
        None => writeln!(
            out,
            "counters: none yet in this process (use --probe N to look up N random keys first)"
        )?,
    }
    writeln!(out)?;
    out.write_all(
        level_table(&s, a.probe.map(|_| checked.as_slice()))
            .render()
            .as_bytes(),
    )?;
    if a.probe.is_some() {
        writeln!(
            out,
            "predicted FPR: each level's model, weighted by the filter checks the probes made \
             of each file (the weighting of the observed FPR)"
        )?;
    }
    if a.files {
        writeln!(out)?;
        let mut t = TextTable::new(&[
            "file",
            "level",
            "size",
            "keys",
            "compression",
            "filter",
            "bits/key",
            "pred FPR",
            "in memory",
            "checks",
            "false pos",
        ])
        .align(4, crate::report::Align::Left)
        .align(5, crate::report::Align::Left);
        for f in &files {
            t.row(vec![
                format!("{:06}.sst", f.number),
                format!("L{}", f.level),
                bytes(f.file_bytes),
                count(f.entries),
                format!(
                    "{} {}",
                    f.compression,
                    ratio(f.data_raw_bytes, f.data_bytes)
                ),
                if f.filter_usable || f.filter == "none" {
                    f.filter.clone()
                } else {
                    format!("{} (unusable)", f.filter)
                },
                format!("{:.2}", f.bits_per_key),
                percent(Some(f.predicted_fpr)),
                match (f.filter_usable, f.filter_pinned) {
                    (false, _) => "-".to_string(),
                    (true, true) => "yes".to_string(),
                    (true, false) => format!(
                        "no: {} reads, {} cached",
                        count(f.io.filter_block_reads),
                        count(f.io.filter_cache_hits)
                    ),
                },
                count(f.io.filter_checks),
                count(f.io.false_positives),
            ]);
        }
        out.write_all(t.render().as_bytes())?;
    }
    Ok(())
}

fn verify(dir: &Path, json: bool, files: &OpenFilesArg, out: &mut dyn Write) -> CliResult {
    check_store(dir)?;
    // A corrupt store is a failed check (exit status 1), whether the damage
    // stops the open or turns up in a block; other errors stay failures.
    let as_check = |e: bloomlsm::Error| {
        let corrupt = e.is_corruption();
        let e = CliError::from(e);
        if corrupt {
            e.with_code(crate::EXIT_NEGATIVE)
        } else {
            e
        }
    };
    // Opened as the other commands open it (a log's torn or damaged end
    // dropped), so that the check can say what the open lost.
    let checked = read_only_db(dir, files).and_then(|db| {
        db.verify()?;
        let files = db.file_stats();
        let stats = db.stats();
        db.close()?;
        Ok((files, stats))
    });
    let report =
        |files: Option<(usize, u64, u64)>, wal: Option<(u64, u64)>, error: Option<&str>| {
            json!({
                "store": dir.display().to_string(),
                "ok": error.is_none(),
                "files": files.map(|f| f.0),
                "entries": files.map(|f| f.1),
                "bytes": files.map(|f| f.2),
                "wal_tail_bytes_dropped": wal.map(|w| w.0),
                "wal_records_salvaged": wal.map(|w| w.1),
                "error": error,
            })
        };
    let (files, stats) = match checked.map_err(as_check) {
        Ok(checked) => checked,
        Err(e) => {
            if json && e.code == crate::EXIT_NEGATIVE {
                write_json(out, &report(None, None, Some(&e.message)))?;
            }
            return Err(e);
        }
    };
    let totals = (
        files.len(),
        files.iter().map(|f| f.entries).sum(),
        files.iter().map(|f| f.file_bytes).sum(),
    );
    let wal = (stats.wal_tail_bytes_dropped, stats.wal_records_salvaged);
    // Every block is sound, but the store is not all that was written to it:
    // not OK.
    let cut = (wal.0 > 0).then(|| first_cut(dir)).flatten();
    if let Some(what) = wal_damage(dir, &stats, false, cut) {
        let e = CliError::negative(what);
        if json {
            write_json(out, &report(Some(totals), Some(wal), Some(&e.message)))?;
        }
        return Err(e);
    }
    if json {
        return write_json(out, &report(Some(totals), Some(wal), None));
    }
    writeln!(
        out,
        "OK  {}: {} files, {} entries, {}",
        dir.display(),
        count(totals.0 as u64),
        count(totals.1),
        bytes(totals.2)
    )?;
    Ok(())
}

/// The log and offset where the first end an open of `dir` drops starts,
/// as an open that refuses to drop it ([`WalRecovery::AbsoluteConsistency`])
/// names them; `None` if that open names no log (the store changed since).
fn first_cut(dir: &Path) -> Option<(PathBuf, u64)> {
    let strict = Options::default().wal_recovery(WalRecovery::AbsoluteConsistency);
    match Db::open_read_only(dir, strict) {
        Err(bloomlsm::Error::Corruption { file, offset, .. })
            if file.extension().is_some_and(|x| x == "log") =>
        {
            Some((file, offset))
        }
        _ => None,
    }
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

    #[test]
    fn sizes_parse_or_explain() {
        assert_eq!(parse_size("65536"), Ok(65536));
        assert_eq!(parse_size("64K"), Ok(64 << 10));
        assert_eq!(parse_size("2m"), Ok(2 << 20));
        assert_eq!(parse_size("1G"), Ok(1 << 30));
        for bad in ["", "K", "-1", "1.5M", "x", "99999999999999999999G"] {
            assert!(parse_size(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn load_lines() {
        let t = Codec::Text;
        assert_eq!(
            parse_load_line(t, "k\\x00\tv v").unwrap(),
            (b"k\0".to_vec(), b"v v".to_vec())
        );
        assert_eq!(parse_load_line(t, "k").unwrap(), (b"k".to_vec(), vec![]));
        assert_eq!(
            parse_load_line(Codec::Hex, "6b00\t0x76").unwrap(),
            (b"k\0".to_vec(), b"v".to_vec())
        );
        assert!(parse_load_line(t, "\tv").is_err());
        assert!(parse_load_line(t, "k\\q\tv").is_err());
        assert!(parse_load_line(Codec::Hex, "k\tv").is_err());
        let long = "k".repeat(MAX_KEY_LEN + 1);
        let e = parse_load_line(t, &long).unwrap_err();
        assert_eq!(e, "key of 65,537 bytes is over the 65,536-byte limit");
    }

    #[test]
    fn key_refusals_are_the_librarys_words() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path(), Options::default()).unwrap();
        let lib = db.get(b"").unwrap_err().to_string();
        assert_eq!(db.put(b"", b"v").unwrap_err().to_string(), lib);
        db.close().unwrap();
        let e = check_key(b"").unwrap_err();
        assert_eq!((e.message, e.code), (lib, crate::EXIT_DATA));
        assert!(check_key(b"k").is_ok());
    }

    #[test]
    fn load_pass_counts_bad_lines() {
        let input = b"a\t1\nbad\\q\n\nb\t2\r\n\tempty\n" as &[u8];
        let mut seen = Vec::new();
        let p = load_pass(input, "in.tsv", Codec::Text, |k, v| {
            seen.push((k.to_vec(), v.to_vec()));
            Ok(())
        })
        .unwrap();
        assert_eq!((p.records, p.payload, p.bad_lines), (2, 4, 2));
        assert_eq!(
            p.first_bad.as_deref(),
            Some("in.tsv:2: key: bad escape \"\\q\" at byte 3 (use \\\\ for a backslash)")
        );
        assert_eq!(seen[1], (b"b".to_vec(), b"2".to_vec()));
    }
}
