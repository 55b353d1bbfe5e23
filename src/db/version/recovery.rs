//! Opening a store: reading the MANIFEST, checking the directory against it,
//! replaying the write-ahead logs, and starting a new MANIFEST.
//!
//! It is one file because it is one procedure, in the order it runs: `recover`
//! (and `recover_read_only`) and the steps they call; it has no `tests` module.
//!
//! Recovery refuses, with [`Error::Corruption`] naming the file and before it
//! writes or deletes anything, every state a crash cannot produce but lost or
//! damaged files can (docs/design.md, "Recovery"):
//!
//! - a table, log or manifest numbered at or past the next-file number the
//!   MANIFEST records: the store reserves numbers in the MANIFEST before it
//!   uses them, so such a file means the MANIFEST lost the edits that made it;
//! - a table the MANIFEST names that is missing or has another size;
//! - a write-ahead log the MANIFEST tracks (or names as its log number) that
//!   is missing;
//! - logs whose sequence numbers leave a gap: a log cut short before a later
//!   one (only the last log may lose its tail, as a crash leaves it), or a
//!   first log that starts past the MANIFEST's last sequence;
//! - under [`WalRecovery::AbsoluteConsistency`], a log that ends in bytes
//!   holding no complete record (the tail the default mode drops).
//!
//! Only then does it write: a new MANIFEST holding the recovered state (so
//! every number used below is reserved), each keyspace's replayed writes as
//! an L0 table in its directory (recorded in its MANIFEST as flushed), the
//! default keyspace's as an L0 table, a new log, one edit naming both, and
//! finally the deletion of files the new MANIFEST does not need and of the
//! directories of keyspaces it does not name.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::db::caches::Caches;
use crate::db::filename::{self, FileKind};
use crate::db::manifest::{FileMeta, Manifest, RecoveredState, VersionEdit};
use crate::db::memtable::MemTable;
use crate::db::version::version_set::{RESERVE, VersionSet};
use crate::db::version::{FileHandle, Version};
use crate::db::wal::{self, Wal};
use crate::error::{Error, Result};
use crate::fs::FileSystem;
use crate::key;
use crate::options::{Options, WalRecovery};
use crate::sst::{KeyFormat, Table};

/// A recovered store.
pub(crate) struct Recovered {
    pub vs: VersionSet,
    /// The new, empty log of the active memtable (`None` when read-only).
    pub wal: Option<Wal>,
    /// The writes of the logs, when read-only (they went to a table
    /// otherwise, and this is empty).
    pub mem: MemTable,
    pub last_sequence: u64,
    /// Bytes of torn log tails dropped.
    pub wal_tail_dropped: u64,
    /// Damaged log records skipped ([`WalRecovery::SkipDamagedRecords`]).
    pub wal_salvaged: u64,
    /// Whether the store takes writes (a keyspace's engine does, without a
    /// WAL of its own).
    pub writable: bool,
    /// The store's other keyspaces, recovered with it.
    pub keyspaces: Vec<KeyspaceRecovery>,
}

/// One keyspace of a store, recovered: its engine's own recovery (from its
/// directory, which holds no log) and what the store's logs held for it.
pub(crate) struct KeyspaceRecovery {
    pub id: u32,
    pub name: String,
    pub dir: PathBuf,
    pub opts: Options,
    pub caches: Caches,
    pub rec: Recovered,
}

/// Recovers keyspace `id`, named `name`, of the store being recovered
/// (`open.rs` knows its options and caches).
pub(crate) type OpenKeyspace<'a> = &'a dyn Fn(u32, &str) -> Result<KeyspaceRecovery>;

/// Each keyspace's flushed sequence (replay skips its writes at or below it)
/// and memtable size, by id.
fn replay_routes(keyspaces: &[KeyspaceRecovery]) -> BTreeMap<u32, (u64, usize)> {
    keyspaces
        .iter()
        .map(|k| {
            let flushed = k.rec.vs.flushed_sequence();
            (k.id, (flushed, k.opts.write_buffer_size))
        })
        .collect()
}

/// Recovers the store in `dir` (see the module docs). The caller holds the
/// directory lock.
///
/// `wal`: the store has logs (a keyspace's engine has none: the store's logs
/// hold its writes). `open_keyspace` recovers each keyspace the MANIFEST
/// names; the logs' writes to it are flushed into its directory before the
/// store's log number passes them.
pub(crate) fn recover(
    dir: &Path,
    opts: &Options,
    caches: Caches,
    wal: bool,
    open_keyspace: OpenKeyspace<'_>,
) -> Result<Recovered> {
    let fs = opts.fs.as_ref();
    let state = match read_manifest(dir, opts)? {
        Some((state, manifest_number)) => {
            check_files(fs, dir, &state, manifest_number, true)?;
            state
        }
        None => RecoveredState::empty(),
    };
    let version = open_tables(dir, opts, &state, &caches, None)?;
    let mut keyspaces = state
        .keyspaces
        .iter()
        .map(|(&id, name)| open_keyspace(id, name))
        .collect::<Result<Vec<_>>>()?;
    let mut replay = replay_logs(dir, opts, &state, &replay_routes(&keyspaces))?;
    let last_sequence = replay.last_sequence.max(state.last_sequence);
    keep_cut_logs(fs, dir, &replay.cut_logs)?;

    // Nothing written so far but copies in `lost/`. The new manifest
    // reserves the numbers used below.
    let manifest_number = state.next_file_number;
    let mut snapshot = state.clone();
    snapshot.next_file_number = manifest_number + 1 + RESERVE;
    snapshot.last_sequence = last_sequence;
    let manifest = Manifest::create(fs, dir, manifest_number, &snapshot.snapshot_edit())?;
    let mut vs = VersionSet::new(manifest, snapshot, version);
    vs.metadata_budget = opts.metadata_memory_budget;
    vs.roll_over_every(opts.fs.clone(), dir.to_path_buf(), opts.max_manifest_edits);

    // Each keyspace's writes reach its tables (and its MANIFEST records
    // them flushed) before this store's log number passes their logs.
    for k in &mut keyspaces {
        if let Some(mem) = replay.others.remove(&k.id) {
            flush_replayed(k, &mem, last_sequence)?;
        }
    }

    let mut edit = VersionEdit::new();
    if !keyspaces.is_empty() {
        edit.flushed_sequence = Some(last_sequence);
    }
    let mut opened: Vec<Arc<FileHandle>> = Vec::new();
    if !replay.mem.is_empty() {
        let number = vs.new_file_number(last_sequence)?;
        if let Some(fh) =
            // No snapshot survives a reopen: the newest version of each key.
            crate::db::flush::flush_memtable(
                dir,
                opts,
                &replay.mem,
                number,
                vs.current(),
                &crate::db::compaction::Retention::default(),
                caches,
                0,
            )?
        {
            edit.new_files.push((0, fh.meta.clone()));
            opened.push(fh);
        }
    }
    let wal = if wal {
        let wal_number = vs.new_file_number(last_sequence)?;
        let wal = Wal::create_in(fs, dir, wal_number)?;
        // The table and the log exist before an edit names them (the new
        // table's entry is synced with the log's).
        edit.log_number = Some(wal_number);
        edit.new_logs.push(wal_number);
        Some(wal)
    } else {
        None
    };
    if wal.is_some() || !opened.is_empty() {
        vs.log_and_apply(edit, &opened, last_sequence)?;
    }

    delete_obsolete(fs, dir, &vs, manifest_number)?;
    if wal.is_some() {
        delete_dropped_keyspaces(fs, dir, &vs)?;
    }
    Ok(Recovered {
        vs,
        wal,
        mem: MemTable::for_write_buffer(opts.write_buffer_size),
        last_sequence,
        wal_tail_dropped: replay.tail_dropped,
        wal_salvaged: replay.salvaged,
        writable: true,
        keyspaces,
    })
}

/// Writes what the logs held for keyspace `k` as an L0 table of its own and
/// records it, with every write up to `last_sequence` flushed, in the
/// keyspace's MANIFEST.
fn flush_replayed(k: &mut KeyspaceRecovery, mem: &MemTable, last_sequence: u64) -> Result<()> {
    let vs = &mut k.rec.vs;
    let mut edit = VersionEdit::new();
    let mut opened: Vec<Arc<FileHandle>> = Vec::new();
    if !mem.is_empty() {
        let number = vs.new_file_number(last_sequence)?;
        if let Some(fh) = crate::db::flush::flush_memtable(
            &k.dir,
            &k.opts,
            mem,
            number,
            vs.current(),
            &crate::db::compaction::Retention::default(),
            k.caches.clone(),
            0,
        )? {
            edit.new_files.push((0, fh.meta.clone()));
            opened.push(fh);
        }
        filename::sync_dir_in(k.opts.fs.as_ref(), &k.dir)?;
    }
    edit.flushed_sequence = Some(last_sequence);
    vs.log_and_apply(edit, &opened, last_sequence)?;
    k.rec.last_sequence = k.rec.last_sequence.max(last_sequence);
    Ok(())
}

/// Removes the directories of keyspaces the MANIFEST does not name: dropped
/// ones (the MANIFEST's edit is durable before the directory goes) and ones
/// whose creation a crash cut short before their edit.
fn delete_dropped_keyspaces(fs: &dyn FileSystem, dir: &Path, vs: &VersionSet) -> Result<()> {
    let names = fs
        .list_dir(dir)
        .map_err(|e| Error::io(format!("list {}", dir.display()), e))?;
    for name in names {
        let Some(id) = name.to_str().and_then(filename::parse_keyspace_dir) else {
            continue;
        };
        if !vs.keyspaces().contains_key(&id) {
            remove_keyspace_dir(fs, &dir.join(&name));
        }
    }
    Ok(())
}

/// Deletes a keyspace's directory and the files in it (best effort: what
/// stays is deleted at the next open).
pub(crate) fn remove_keyspace_dir(fs: &dyn FileSystem, kdir: &Path) {
    if let Ok(names) = fs.list_dir(kdir) {
        for n in names {
            let _ = fs.remove_file(&kdir.join(n));
        }
    }
    let _ = fs.remove_dir(kdir);
}

/// Recovers the store in `dir` without creating, writing, renaming or
/// deleting anything, and without the lock: the logs are replayed into
/// memory only.
///
/// A writer may be running: a check that fails while `CURRENT` or its
/// manifest changed under it is the writer moving on (a log flushed and
/// deleted, tables compacted away since the manifest was read), so the read
/// starts over. The tables opened by one read are kept for the next, so that
/// each read after the first opens only the tables the writer has made
/// since: however many tables the store holds, a read soon fits between two
/// of the writer's edits. A failure is reported as corruption only when the
/// store did not change during the read that met it; if it changed during
/// each of 1,000 reads, the open fails with an I/O error of kind
/// `Interrupted`, never a false corruption.
pub(crate) fn recover_read_only(
    dir: &Path,
    opts: &Options,
    caches: Caches,
    open_keyspace: OpenKeyspace<'_>,
) -> Result<Recovered> {
    let fs = opts.fs.as_ref();
    let mark = || -> Option<(u64, u64)> {
        let n = crate::db::manifest::read_current(fs, dir).ok()?;
        Some((n, fs.file_len(&filename::manifest_file(dir, n)).ok()?))
    };
    let mut opened: HashMap<u64, Arc<Table>> = HashMap::new();
    let mut attempt = 0;
    loop {
        let before = mark();
        let mut r = (|| {
            let (state, report) = match Manifest::recover(fs, dir) {
                Err(Error::Io { source, .. })
                    if source.kind() == std::io::ErrorKind::NotFound
                        && fs.file_len(&filename::current_file(dir)).is_err() =>
                {
                    refuse_unfinished_checkpoint(fs, dir)?;
                    return Err(Error::invalid(format!(
                        "{} holds no store (no CURRENT)",
                        dir.display()
                    )));
                }
                r => r?,
            };
            check_files(fs, dir, &state, report.manifest_number, false)?;
            let version = open_tables(dir, opts, &state, &caches, Some(&mut opened))?;
            let mut keyspaces = state
                .keyspaces
                .iter()
                .map(|(&id, name)| open_keyspace(id, name))
                .collect::<Result<Vec<_>>>()?;
            let mut replay = replay_logs(dir, opts, &state, &replay_routes(&keyspaces))?;
            let last_sequence = replay.last_sequence.max(state.last_sequence);
            // The logs' writes to each keyspace stay in its memtable.
            for k in &mut keyspaces {
                if let Some(mem) = replay.others.remove(&k.id) {
                    k.rec.mem = mem;
                }
                k.rec.last_sequence = k.rec.last_sequence.max(last_sequence);
            }
            Ok(Recovered {
                last_sequence,
                wal: None,
                mem: replay.mem,
                wal_tail_dropped: replay.tail_dropped,
                wal_salvaged: replay.salvaged,
                vs: VersionSet::read_only(state, version),
                writable: false,
                keyspaces,
            })
        })();
        attempt += 1;
        let Err(e) = &mut r else { return r };
        if before == mark() {
            return r;
        }
        // The writer moved on: read again, backing off a little.
        if attempt == 1000 {
            return Err(Error::io(
                format!(
                    "read {} beside its writer: the store changed during each of {attempt} reads (the last met: {e})",
                    dir.display()
                ),
                std::io::ErrorKind::Interrupted.into(),
            ));
        }
        // Tables the writer has since deleted are not needed again.
        if let Some(state) = crate::db::manifest::read_current(fs, dir)
            .ok()
            .and_then(|_| Manifest::recover(fs, dir).ok())
            .map(|(state, _)| state)
        {
            let live: HashSet<u64> = state.levels.iter().flatten().map(|m| m.number).collect();
            opened.retain(|n, _| live.contains(n));
        }
        std::thread::sleep(std::time::Duration::from_micros(100 * attempt.min(50)));
    }
}

/// The MANIFEST's state and number, or `None` for a directory that holds no
/// store yet (and may be given one).
fn read_manifest(dir: &Path, opts: &Options) -> Result<Option<(RecoveredState, u64)>> {
    let fs = opts.fs.as_ref();
    match Manifest::recover(fs, dir) {
        Ok((state, report)) => Ok(Some((state, report.manifest_number))),
        // Only a missing CURRENT means "no store here yet". A CURRENT that
        // names a missing manifest is damage: starting empty would lose every
        // table below.
        Err(Error::Io { source, context })
            if source.kind() == std::io::ErrorKind::NotFound
                && fs.file_len(&filename::current_file(dir)).is_ok() =>
        {
            Err(Error::corruption(
                filename::current_file(dir),
                0,
                format!("CURRENT names a manifest that does not exist ({context}: {source})"),
            ))
        }
        Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
            // No CURRENT. A checkpoint that has not finished marks its
            // directory: it is no store, and must not become an empty one.
            refuse_unfinished_checkpoint(fs, dir)?;
            // A first open that crashed leaves at most a manifest
            // and empty logs; tables or logs with writes mean CURRENT was
            // lost.
            let leftovers = filename::list_store_files_in(fs, dir)?;
            if let Some((_, _, path)) = leftovers.iter().find(|(kind, _, path)| {
                *kind == FileKind::Table
                    || (*kind == FileKind::Log && fs.file_len(path).is_ok_and(|n| n > 0))
            }) {
                return Err(Error::corruption(
                    filename::current_file(dir),
                    0,
                    format!(
                        "CURRENT is missing but the store holds data ({})",
                        path.display()
                    ),
                ));
            }
            if !opts.create_if_missing {
                return Err(Error::invalid(format!(
                    "{} holds no store (no CURRENT) and create_if_missing is false",
                    dir.display()
                )));
            }
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

/// Refuses to make a store in `dir` when it holds a file or directory no
/// store makes: the store would settle among them, and a later open might
/// take one for its own. What an interrupted first open leaves (the lock, a
/// manifest, empty logs, the OPTIONS file, keyspace directories) is allowed.
pub(crate) fn refuse_foreign_files(fs: &dyn FileSystem, dir: &Path) -> Result<()> {
    let names = fs
        .list_dir(dir)
        .map_err(|e| Error::io(format!("list {}", dir.display()), e))?;
    let mut foreign: Vec<String> = names
        .iter()
        .filter_map(|n| {
            n.to_str()
                .map_or(Some(n.to_string_lossy().into_owned()), |s| {
                    let ours = filename::parse_file_name(s).is_some()
                        || filename::parse_keyspace_dir(s).is_some()
                        || s == LOST_DIR
                        || s == crate::db::checkpoint::INCOMPLETE;
                    (!ours).then(|| s.to_string())
                })
        })
        .collect();
    if foreign.is_empty() {
        return Ok(());
    }
    foreign.sort();
    let more = foreign.len() - 1;
    Err(Error::invalid(format!(
        "{} holds no store (no CURRENT) but holds other files ({}{}): a new store is made only \
         in a missing or empty directory",
        dir.display(),
        foreign[0],
        if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        }
    )))
}

/// Refuses `dir` if it is the temporary directory of an unfinished
/// checkpoint: named so ([`crate::db::checkpoint::TEMP_SUFFIX`]; it is
/// empty for a moment after it is made) or holding its marker
/// ([`crate::db::checkpoint::INCOMPLETE`]). The caller found no `CURRENT`:
/// such a directory is no store and must not become an empty one.
fn refuse_unfinished_checkpoint(fs: &dyn FileSystem, dir: &Path) -> Result<()> {
    use crate::db::checkpoint::{INCOMPLETE, TEMP_SUFFIX};
    let named = dir
        .file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.ends_with(TEMP_SUFFIX));
    if named || fs.file_len(&dir.join(INCOMPLETE)).is_ok() {
        return Err(Error::invalid(format!(
            "{} is an unfinished checkpoint (no CURRENT): no store; remove the directory, \
             or take the checkpoint again",
            dir.display()
        )));
    }
    Ok(())
}

/// Refuses a directory whose files contradict the MANIFEST (module docs).
/// `newer_files`: also refuse files numbered past the manifest's bound (not
/// for a read-only open, which a live writer's new files may race).
fn check_files(
    fs: &dyn FileSystem,
    dir: &Path,
    state: &RecoveredState,
    manifest_number: u64,
    newer_files: bool,
) -> Result<()> {
    let manifest = filename::manifest_file(dir, manifest_number);
    let next = state.next_file_number;
    let files = if newer_files {
        filename::list_store_files_in(fs, dir)?
    } else {
        Vec::new()
    };
    for (kind, n, path) in files {
        let newer = match kind {
            FileKind::Table | FileKind::Log => n >= next,
            // A manifest numbered exactly `next` is what an open that crashed
            // before switching CURRENT leaves; this open replaces it.
            FileKind::Manifest => n > next,
            _ => false,
        };
        if newer {
            return Err(Error::corruption(
                &path,
                0,
                format!(
                    "file number {n} is at or past the next file number {next} that {} \
                     records: the manifest has lost the edits that made this file \
                     (nothing was deleted)",
                    manifest.display()
                ),
            ));
        }
    }
    for meta in state.levels.iter().flatten() {
        let path = filename::table_file(dir, meta.number);
        match fs.file_len(&path) {
            Ok(len) if len == meta.file_size => {}
            Ok(len) => {
                return Err(Error::corruption(
                    &path,
                    0,
                    format!(
                        "{} records this table as {} bytes; it has {}",
                        manifest.display(),
                        meta.file_size,
                        len
                    ),
                ));
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(Error::corruption(
                    &path,
                    0,
                    format!("{} names this table; it is missing", manifest.display()),
                ));
            }
            Err(e) => return Err(Error::io(format!("stat {}", path.display()), e)),
        }
    }
    Ok(())
}

/// Checks that the manifest's entry for a table says what the table says of
/// itself: the entry was made from the table ([`file_meta`]), and reads trust
/// its key range (a file outside a lookup's range is never opened) and sums
/// its entry count. A manifest entry that disagrees, with its checksum
/// resealed, could otherwise hide a file's newer versions behind a narrower
/// range, or drop a tombstone in compaction.
///
/// Every edit records a last sequence at or above every sequence in the
/// tables it names, so a table holding a larger one means the manifest's is
/// wrong: new writes would be numbered below older ones and hidden by them.
/// The table's largest sequence is its `seq.max` property (tables written
/// before it lack it) or at least those of its smallest and largest keys.
///
/// [`file_meta`]: crate::db::compaction::file_meta
fn check_entry(path: &Path, meta: &FileMeta, table: &Table, last_sequence: u64) -> Result<()> {
    let p = table.properties();
    if p.key_format != KeyFormat::Internal {
        return Err(Error::corruption(
            path,
            0,
            "the table holds plain keys, not a store's internal keys",
        ));
    }
    let seq = |k: &[u8]| key::trailer(k) >> 8;
    let max_seq = p
        .max_sequence
        .unwrap_or(0)
        .max(seq(&p.smallest_key))
        .max(seq(&p.largest_key));
    if max_seq > last_sequence {
        return Err(Error::corruption(
            path,
            0,
            format!(
                "the table holds sequence {max_seq}, above the manifest's last sequence {last_sequence}"
            ),
        ));
    }
    let own = crate::db::compaction::file_meta(meta.number, table);
    let field = if own.smallest != meta.smallest {
        "smallest key"
    } else if own.largest != meta.largest {
        "largest key"
    } else if own.entries != meta.entries {
        "entry count"
    } else {
        return Ok(());
    };
    Err(Error::corruption(
        path,
        0,
        format!("the manifest's {field} for this table differs from the table's own"),
    ))
}

/// Opens the tables `state` names. `opened`: tables already open from an
/// earlier read of the same store, by number (a table file never changes
/// under its number), reused instead of opened again, and added to.
///
/// The others are opened on the I/O threads ([`crate::fs::io_pool`]): each
/// open reads a footer, an index and a filter, and one after another they
/// kept a store of thousands of tables opening for seconds on a device
/// that serves many reads at once. Of several failures, the first in the
/// manifest's order is returned, as a serial open would.
fn open_tables(
    dir: &Path,
    opts: &Options,
    state: &RecoveredState,
    caches: &Caches,
    mut opened: Option<&mut HashMap<u64, Arc<Table>>>,
) -> Result<Version> {
    for (level, files) in state.levels.iter().enumerate() {
        if !files.is_empty() && level >= opts.max_levels {
            return Err(Error::invalid(format!(
                "the store has files on level {level}; open it with max_levels > {level}"
            )));
        }
    }
    let metas: Vec<(usize, &FileMeta)> = state
        .levels
        .iter()
        .enumerate()
        .flat_map(|(level, files)| files.iter().map(move |m| (level, m)))
        .collect();
    let open_one = |meta: &FileMeta| -> Result<Arc<Table>> {
        if let Some(t) = opened.as_ref().and_then(|o| o.get(&meta.number)) {
            return Ok(t.clone());
        }
        let path = filename::table_file(dir, meta.number);
        Ok(Arc::new(Table::open(
            &path,
            caches.table_options(meta.number, opts),
        )?))
    };
    let tables: Vec<Result<Arc<Table>>> = match crate::fs::io_pool() {
        Some(pool) if metas.len() > 1 => {
            use rayon::prelude::*;
            pool.install(|| {
                metas
                    .par_iter()
                    .with_max_len(1)
                    .map(|(_, m)| open_one(m))
                    .collect()
            })
        }
        _ => metas.iter().map(|(_, m)| open_one(m)).collect(),
    };
    let mut version = Version::empty(opts.max_levels);
    for ((level, meta), table) in metas.into_iter().zip(tables) {
        let table = table?;
        if let Some(o) = opened.as_mut() {
            o.insert(meta.number, table.clone());
        }
        let path = filename::table_file(dir, meta.number);
        check_entry(&path, meta, &table, state.last_sequence)?;
        version.levels[level].push(Arc::new(FileHandle::new(meta.clone(), table)));
    }
    version.pin_metadata(opts.metadata_memory_budget);
    version.sort();
    Ok(version)
}

struct Replay {
    mem: MemTable,
    /// The writes to the other keyspaces, by id.
    others: BTreeMap<u32, MemTable>,
    last_sequence: u64,
    tail_dropped: u64,
    salvaged: u64,
    /// Logs whose dropped tail held a non-zero byte.
    cut_logs: Vec<u64>,
}

/// The subdirectory where recovery keeps copies of logs whose tails it
/// dropped ([`keep_cut_logs`]).
pub(crate) const LOST_DIR: &str = "lost";

/// Copies each log numbered in `cut` whole to
/// `lost/NNNNNN.log`, fsynced, before recovery writes anything.
///
/// Replay cannot tell a tail torn by a crash from a last record damaged
/// after it was acknowledged: both fail their checksum at the end of the
/// newest log, and both are dropped. Once the new manifest is durable the
/// log is deleted, so without the copy an acknowledged record with a flipped
/// bit would be gone for good. The copy is an ordinary record log
/// (`wal::replay` with `salvage` reads it); the store never reads `lost/`.
/// Tails of zeros only (a file extended without its data) carry nothing and
/// are not copied. A failed copy fails the open before anything changed.
fn keep_cut_logs(fs: &dyn FileSystem, dir: &Path, cut: &[u64]) -> Result<()> {
    if cut.is_empty() {
        return Ok(());
    }
    let lost = dir.join(LOST_DIR);
    let io = |what: String| move |e| Error::io(what, e);
    fs.create_dir_all(&lost)
        .map_err(io(format!("create {}", lost.display())))?;
    for &n in cut {
        let from = filename::log_file(dir, n);
        let name = from.file_name().expect("a log file name").to_owned();
        let to = lost.join(&name);
        let tmp = lost.join(format!("{}.tmp", name.to_string_lossy()));
        let mut out = fs
            .create_truncate(&tmp)
            .map_err(io(format!("create {}", tmp.display())))?;
        read_chunks(fs, &from, 0, None, |chunk| {
            out.write_all(chunk)
                .map_err(io(format!("write {}", tmp.display())))?;
            Ok(true)
        })?;
        out.sync_data()
            .map_err(io(format!("sync {}", tmp.display())))?;
        fs.rename(&tmp, &to).map_err(io(format!(
            "rename {} to {}",
            tmp.display(),
            to.display()
        )))?;
    }
    fs.sync_dir(&lost)
        .map_err(io(format!("sync {}", lost.display())))?;
    fs.sync_dir(dir)
        .map_err(io(format!("sync {}", dir.display())))
}

/// Whether `len` bytes of `path` from `offset` hold a byte that is not zero.
fn any_nonzero(fs: &dyn FileSystem, path: &Path, offset: u64, len: u64) -> Result<bool> {
    let mut found = false;
    read_chunks(fs, path, offset, Some(len), |chunk| {
        found = chunk.iter().any(|&b| b != 0);
        Ok(!found)
    })?;
    Ok(found)
}

/// Hands `len` bytes of `path` from `offset` (`None`: to its end) to `f`
/// a MiB at a time, until they run out or `f` returns `false`.
fn read_chunks(
    fs: &dyn FileSystem,
    path: &Path,
    offset: u64,
    len: Option<u64>,
    mut f: impl FnMut(&[u8]) -> Result<bool>,
) -> Result<()> {
    let file = fs
        .open_read(path)
        .map_err(|e| Error::io(format!("open {}", path.display()), e))?;
    let end = match len {
        Some(len) => offset + len,
        None => file
            .len()
            .map_err(|e| Error::io(format!("size {}", path.display()), e))?,
    };
    let mut buf = vec![0u8; (end - offset).min(1 << 20) as usize];
    let mut at = offset;
    while at < end {
        let chunk = &mut buf[..(end - at).min(1 << 20) as usize];
        file.read_exact_at(chunk, at)
            .map_err(|e| Error::io(format!("read {} at {at}", path.display()), e))?;
        if !f(chunk)? {
            break;
        }
        at += chunk.len() as u64;
    }
    Ok(())
}

/// Replays every log at or above the log number into one memtable, oldest
/// first, checking that their sequence numbers run on without a gap (unless
/// [`WalRecovery::SkipDamagedRecords`], which skips damaged records on
/// purpose). Under [`WalRecovery::AbsoluteConsistency`] a log whose end
/// would be dropped is [`Error::Corruption`]; this runs before recovery
/// writes or deletes anything, so the refused store is left as it was.
///
/// Each operation goes to its keyspace's memtable: the default keyspace's,
/// or one of `routes` (id to flushed sequence and memtable size), unless the
/// keyspace's tables hold it (at or below its flushed sequence). The
/// operations of a keyspace not in `routes` (dropped) are skipped.
fn replay_logs(
    dir: &Path,
    opts: &Options,
    state: &RecoveredState,
    routes: &BTreeMap<u32, (u64, usize)>,
) -> Result<Replay> {
    let salvage = opts.wal_recovery == WalRecovery::SkipDamagedRecords;
    let fs = opts.fs.as_ref();
    let mut logs: Vec<u64> = filename::list_store_files_in(fs, dir)?
        .into_iter()
        .filter(|(k, n, _)| *k == FileKind::Log && *n >= state.log_number)
        .map(|(_, n, _)| n)
        .collect();
    logs.sort_unstable();
    // Checked here, where the logs are listed (not earlier): a read-only
    // open may race a writer that flushed and deleted a log since its
    // manifest read.
    let required = state
        .logs
        .iter()
        .copied()
        .chain((state.log_number > 0).then_some(state.log_number));
    for n in required {
        if logs.binary_search(&n).is_err() {
            return Err(Error::corruption(
                filename::log_file(dir, n),
                0,
                "the manifest requires this write-ahead log (its writes are in no table); \
                 it is missing",
            ));
        }
    }
    let mut out = Replay {
        mem: MemTable::for_write_buffer(opts.write_buffer_size),
        others: routes
            .iter()
            .map(|(&id, &(_, size))| (id, MemTable::for_write_buffer(size)))
            .collect(),
        last_sequence: 0,
        tail_dropped: 0,
        salvaged: 0,
        cut_logs: Vec::new(),
    };
    // The sequence the next batch must start at (at most, for the first).
    let mut expect: Option<u64> = None;
    let mut first_log_tail: Option<(u64, u64)> = None;
    for &n in &logs {
        let path = filename::log_file(dir, n);
        let report = wal::replay_in(fs, &path, salvage, |batch| {
            if !salvage && !batch.is_empty() {
                let first = batch.sequence();
                let gap = match expect {
                    None => first > state.last_sequence + 1,
                    Some(e) => first != e,
                };
                if gap {
                    let after = expect.map_or(state.last_sequence, |e| e - 1);
                    let cut = match first_log_tail {
                        Some((log, _)) if log != n => {
                            format!("; log {log} lost its tail, which only the newest log may")
                        }
                        _ => String::new(),
                    };
                    return Err(Error::corruption(
                        &path,
                        0,
                        format!(
                            "a batch at sequence {first} follows sequence {after}: the writes \
                             between are in no log or table{cut}"
                        ),
                    ));
                }
            }
            if let Some(last) = batch.last_sequence() {
                expect = Some(last + 1);
            }
            out.mem.insert_batch_in(&batch, 0, state.flushed_sequence);
            for id in batch.keyspace_ids() {
                if let (Some(mem), Some(&(flushed, _))) = (out.others.get(&id), routes.get(&id)) {
                    mem.insert_batch_in(&batch, id, flushed);
                }
            }
            Ok(())
        })?;
        if let Some(t) = report.tail_dropped {
            if opts.wal_recovery == WalRecovery::AbsoluteConsistency {
                return Err(Error::corruption(
                    &path,
                    t.offset,
                    format!(
                        "the log's last {} bytes hold no complete record (a write torn by a \
                         crash, or a damaged record); WalRecovery::AbsoluteConsistency refuses \
                         to drop them (WalRecovery::TolerateTornTail drops them and keeps a \
                         copy of the log in lost/)",
                        t.bytes
                    ),
                ));
            }
            out.tail_dropped += t.bytes;
            first_log_tail.get_or_insert((n, t.offset));
            if any_nonzero(fs, &path, t.offset, t.bytes)? {
                out.cut_logs.push(n);
            }
        }
        out.last_sequence = out.last_sequence.max(report.last_seq);
        out.salvaged += report.salvaged.len() as u64;
    }
    Ok(out)
}

/// Deletes what the new MANIFEST does not need: tables no version holds
/// (outputs of a flush or compaction a crash cut short, all numbered below
/// the recovered next-file number), logs below the log number (now in
/// tables), older manifests and a leftover `CURRENT.tmp`.
fn delete_obsolete(
    fs: &dyn FileSystem,
    dir: &Path,
    vs: &VersionSet,
    manifest_number: u64,
) -> Result<()> {
    let live: HashSet<u64> = vs.current().file_numbers().collect();
    for (kind, n, path) in filename::list_store_files_in(fs, dir)? {
        let stale = match kind {
            FileKind::Table => !live.contains(&n),
            FileKind::Log => n < vs.log_number(),
            FileKind::Manifest => n != manifest_number,
            FileKind::CurrentTmp
            | FileKind::OptionsTmp
            | FileKind::LookupsTmp
            | FileKind::DirectProbe => true,
            FileKind::Current | FileKind::Lock | FileKind::Options | FileKind::Lookups => false,
        };
        if stale {
            let _ = fs.remove_file(&path);
        }
    }
    filename::sync_dir_in(fs, dir)
}
