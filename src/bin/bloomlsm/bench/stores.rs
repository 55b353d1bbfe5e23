//! Where the study's stores live and how each is built: the checks on
//! `--dir` and `--io direct` made before anything runs, the temporary home
//! removed at the end or on interruption, the load of one store
//! ([`load_store`]) whose shape depends on the writes alone, and the single
//! load without filters ([`load_base`]) that each configuration's store is
//! made from ([`refilter_store`]).
//!
//! It is one file because it is one concept, the study's stores, from the
//! directory checks to the writer that loads them; its unit tests (the `tests`
//! module at the end) are 3% of it.

use std::path::{Path, PathBuf};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use bloomlsm::fs::{FileSystem, RealFs, direct};
use bloomlsm::{Db, Options, WriteBatch};

use crate::workload::{ValueSource, prefixed_key, present_key};
use crate::{CliError, CliResult, interrupt, progress};

use super::args::{BenchArgs, IoMode};
use super::configs::{BenchConfig, bench_options};

/// The directory that holds one store per configuration: `--dir`, kept, or
/// a temporary directory, removed when this is dropped.
pub struct StoresHome {
    /// The directory.
    pub path: PathBuf,
    /// The stores stay after the run (`--dir`).
    pub keep: bool,
    /// Removes the temporary directory on drop.
    _temp: Option<TempDir>,
}

impl StoresHome {
    /// Checks `--dir` (see [`check_dir`]) and, with `--io direct`, that the
    /// directory takes direct reads ([`check_direct`]), then creates it: a
    /// usage error, before anything runs, if it cannot hold the stores.
    pub fn prepare(args: &BenchArgs) -> CliResult<StoresHome> {
        if let Some(d) = &args.dir {
            if !args.use_existing_db {
                check_dir(d, &args.configs, args.reuse_dir)?;
            }
            if args.io == IoMode::Direct {
                check_direct(d)?;
            }
        }
        match &args.dir {
            Some(d) => {
                std::fs::create_dir_all(d)
                    .map_err(|e| CliError::usage(format!("--dir {}: {e}", d.display())))?;
                Ok(StoresHome {
                    path: d.clone(),
                    keep: true,
                    _temp: None,
                })
            }
            None => {
                let temp = make_temp_dir()?;
                if args.io == IoMode::Direct {
                    check_direct(&temp.0)?;
                }
                Ok(StoresHome {
                    path: temp.0.clone(),
                    keep: false,
                    _temp: Some(temp),
                })
            }
        }
    }
}

/// A measured store being removed on a thread of its own: unlinking the
/// thousands of tables of a 10^8-key store takes seconds, which the next
/// configuration's checkpoint and filter rebuild overlap. [`Self::wait`]
/// (and drop) waits for the removal to end. An interruption's removal of
/// the whole home may run beside it: each ignores what the other removed.
#[derive(Default)]
pub struct Removal(Option<std::thread::JoinHandle<()>>);

impl Removal {
    /// Starts removing `dir`; on this thread if no other can be started.
    pub fn start(dir: PathBuf) -> Removal {
        let d = dir.clone();
        let spawned = std::thread::Builder::new()
            .name("bench-remove".into())
            .spawn(move || {
                let _ = std::fs::remove_dir_all(&d);
            });
        match spawned {
            Ok(handle) => Removal(Some(handle)),
            Err(_) => {
                let _ = std::fs::remove_dir_all(&dir);
                Removal(None)
            }
        }
    }

    /// Waits until the removal has ended.
    pub fn wait(&mut self) {
        if let Some(h) = self.0.take() {
            let _ = h.join();
        }
    }
}

impl Drop for Removal {
    fn drop(&mut self) {
        self.wait();
    }
}

/// Removes a directory tree on drop (the temporary home of the stores).
struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Creates the temporary home of the stores (under `$TMPDIR`, else `/tmp`),
/// removed on drop and if the process is interrupted.
fn make_temp_dir() -> CliResult<TempDir> {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let p = std::env::temp_dir().join(format!("bloomlsm-bench-{}-{nanos:08x}", std::process::id()));
    interrupt::guard(|| {
        std::fs::create_dir_all(&p)
            .map_err(|e| CliError::new(format!("create {}: {e}", p.display())))?;
        interrupt::remove_on_interrupt(p.clone());
        Ok(TempDir(p))
    })
}

/// Checks, before anything runs, that `--dir` can take one store per
/// configuration: it is not itself a store, and a configuration's
/// sub-directory is missing, empty, or (with `--reuse-dir`) an earlier
/// run's store. Usage errors; nothing is written.
fn check_dir(dir: &Path, configs: &[BenchConfig], reuse: bool) -> CliResult {
    if dir.exists() && !dir.is_dir() {
        return Err(CliError::usage(format!(
            "--dir {} is not a directory",
            dir.display()
        )));
    }
    if dir.join("CURRENT").exists() {
        return Err(CliError::usage(format!(
            "--dir {} is a bloomlsm store; give a directory to hold one store per configuration",
            dir.display()
        )));
    }
    for c in configs {
        let d = dir.join(&c.name);
        if !d.exists() {
            continue;
        }
        let empty = std::fs::read_dir(&d).is_ok_and(|mut r| r.next().is_none());
        if empty {
            continue;
        }
        if !d.join("CURRENT").exists() {
            return Err(CliError::usage(format!(
                "{} exists and is not a bloomlsm store; choose another --dir",
                d.display()
            )));
        }
        if !reuse {
            return Err(CliError::usage(format!(
                "--dir {} already holds a store ({}); pass --reuse-dir to replace it, or choose another directory",
                dir.display(),
                d.display()
            )));
        }
    }
    Ok(())
}

/// The store an earlier run left for `name` under `parent`
/// (`--use-existing-db`): a usage error if there is none.
pub fn existing_store_dir(parent: &Path, name: &str) -> CliResult<PathBuf> {
    let d = parent.join(name);
    if !d.join("CURRENT").exists() {
        return Err(CliError::usage(format!(
            "--use-existing-db: {} holds no store (run the fill with --dir {} first)",
            d.display(),
            parent.display()
        )));
    }
    Ok(d)
}

/// The directory for one configuration's store under `parent` (checked by
/// [`check_dir`]); an earlier run's store there is removed.
pub fn store_dir(parent: &Path, name: &str) -> CliResult<PathBuf> {
    let d = parent.join(name);
    if d.join("CURRENT").exists() {
        std::fs::remove_dir_all(&d)
            .map_err(|e| CliError::new(format!("remove old store {}: {e}", d.display())))?;
    }
    Ok(d)
}

/// The options of `config`'s store: [`bench_options`] with the run's
/// compression and filter and index partition sizes.
pub fn store_options(args: &BenchArgs, config: &BenchConfig) -> CliResult<Options> {
    let mut opts = bench_options(config.filters.clone(), args.io.read_mode());
    args.compression
        .apply(&mut opts.compression, opts.max_levels)?;
    opts.filter_partition_bytes = args.partition_bytes();
    opts.index_partition_bytes = args.index_partition_bytes();
    args.files.apply(&mut opts);
    Ok(opts)
}

/// What a load leaves besides the store: its time and write amplification.
#[derive(Clone, Copy, Debug)]
pub struct Load {
    /// Seconds to write the keys and run every flush and compaction.
    pub secs: f64,
    /// The store's write counters when the load ended: bytes written by the
    /// user, flushed and compacted.
    pub writes: [u64; 3],
}

impl Load {
    fn new(secs: f64, s: &bloomlsm::Stats) -> Load {
        Load {
            secs,
            writes: [s.user_bytes_written, s.bytes_flushed, s.bytes_compacted],
        }
    }

    /// Adds the write counters of an earlier part of the load.
    fn add_writes(&mut self, part: [u64; 3]) {
        for (w, p) in self.writes.iter_mut().zip(part) {
            *w += p;
        }
    }

    /// Sets the write counters of `s` to the load's.
    pub fn set_writes(&self, s: &mut bloomlsm::Stats) {
        [s.user_bytes_written, s.bytes_flushed, s.bytes_compacted] = self.writes;
    }
}

/// Loads `args.keys` keys into a store at `dir` with `config`'s filters:
/// all but the last keys with the store's own threads ([`bulk_load`]), then
/// the rest running every due flush and compaction on this thread, so the
/// store ends as a step-by-step load ends (and a load of fewer keys than
/// [`bulk_end`] leaves has a shape that depends on the writes alone).
/// Returns the open store and the load.
pub fn load_store(args: &BenchArgs, config: &BenchConfig, dir: &Path) -> CliResult<(Db, Load)> {
    let opts = store_options(args, config)?;
    let start = Instant::now();
    let mut writer = KeyWriter::from_options(args, &opts);
    let bulk_end = bulk_end(args, &opts);
    // Creates the store's directory: not after an interruption removed it.
    let bulk = bulk_load(args, dir, &opts, &mut writer, 0..bulk_end, &config.name)?;
    let db = interrupt::guard(|| Db::open(dir, opts))?;
    writer.write(args, &db, bulk_end..args.keys, &config.name, |_, _| Ok(()))?;
    // The tree the load leaves, with the filters its allocation gives it
    // (configurations whose filters depend on the tree's shape).
    db.rebuild_filters()?;
    let secs = start.elapsed().as_secs_f64();
    let mut load = Load::new(secs, &db.stats());
    load.add_writes(bulk);
    Ok((db, load))
}

/// Where a load's keys stop going in with the store's own threads
/// ([`bulk_load`]) and start going in step by step: `--stepwise-keys`
/// before the end, and at least two copy windows ([`copy_window`]); 0 for a
/// shorter load, which is then the same tree from run to run.
pub(super) fn bulk_end(args: &BenchArgs, opts: &Options) -> u64 {
    let stepwise = args.stepwise_keys.max(2 * copy_window(args, opts));
    args.keys.saturating_sub(stepwise)
}

/// Writes keys `range` into the store at `dir` opened with its background
/// compaction thread, so that the load's writes, flushes and compactions
/// (and their waits on the device) overlap, then closes it. Returns its
/// write counters, as [`Load::writes`].
fn bulk_load(
    args: &BenchArgs,
    dir: &Path,
    opts: &Options,
    writer: &mut KeyWriter,
    range: std::ops::Range<u64>,
    label: &str,
) -> CliResult<[u64; 3]> {
    if range.is_empty() {
        return Ok([0; 3]);
    }
    let db = interrupt::guard(|| Db::open(dir, opts.clone().background_compaction(true)))?;
    writer.write_unmaintained(args, &db, range, label)?;
    let s = db.stats();
    db.close()?;
    Ok([s.user_bytes_written, s.bytes_flushed, s.bytes_compacted])
}

/// The keys loaded once, without filters, for every configuration
/// ([`load_base`]): a copy of the store at the last moment of the load when
/// L0 and the memtable were empty, and the keys written after it.
pub struct Base {
    /// The copy (hard links), removed on drop.
    pub dir: PathBuf,
    /// The options (without filters) the copy is opened with to take each
    /// configuration's checkpoint. It stays closed in between: open beside
    /// a configuration's store, its table files would count against the
    /// same open-file limit (at 10^8 keys two stores of 1,000 open files
    /// each exceed `ulimit -n 1024`).
    opts: Options,
    /// The first key written after the copy was taken.
    pub tail_from: u64,
    /// The memtable cost of one batch, carried to the tail's writes.
    per_batch: Option<u64>,
    /// The whole load's time and write amplification.
    pub load: Load,
}

impl Drop for Base {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Loads `args.keys` keys once, without filters, into a scratch store under
/// `parent`, keeping a copy ([`Db::checkpoint`]) of a point where a
/// compaction has just emptied L0 (and the memtable): every such point of
/// the load's last keys ([`copy_window`]), and one per eighth of the load
/// before them, so the tail is short even if the window had none. The last
/// copy
/// is the [`Base`] each configuration starts from ([`refilter_store`]):
/// every file of its levels ≥ 1 is then rebuilt with the configuration's
/// filter, and the keys after it are written again with that filter, so the
/// L0 files the load ends with (which filter rebuilds leave as written) get
/// it too.
pub fn load_base(args: &BenchArgs, parent: &Path) -> CliResult<Base> {
    let scratch = store_dir(parent, ".load")?;
    let copy = store_dir(parent, ".base")?;
    let none = BenchConfig {
        name: "none".to_string(),
        filters: bloomlsm::FilterOptions::none(),
        monkey: None,
    };
    let opts = store_options(args, &none)?;
    let db = interrupt::guard(|| Db::open(&scratch, opts.clone()))?;
    let mut base = Base {
        dir: copy,
        opts: opts.clone(),
        tail_from: 0,
        per_batch: None,
        load: Load {
            secs: 0.0,
            writes: [0; 3],
        },
    };
    let mut db = Some(db);
    let result = (|| -> CliResult {
        let open = db
            .as_ref()
            .ok_or_else(|| CliError::new("the load's store is closed"))?;
        take_copy(open, &base.dir)?;
        let start = Instant::now();
        let mut writer = KeyWriter::from_options(args, &opts);
        let window = copy_window(args, &opts);
        let bulk_end = bulk_end(args, &opts);
        let mut bulk = [0; 3];
        if bulk_end > 0 {
            if let Some(d) = db.take() {
                d.close()?;
            }
            bulk = bulk_load(
                args,
                &scratch,
                &opts,
                &mut writer,
                0..bulk_end,
                "single load",
            )?;
            db = Some(interrupt::guard(|| Db::open(&scratch, opts.clone()))?);
        }
        let open = db
            .as_ref()
            .ok_or_else(|| CliError::new("the load's store is closed"))?;
        writer.write(
            args,
            open,
            bulk_end..args.keys,
            "single load",
            |db, next| {
                let s = db.stats();
                let wanted = next + window >= args.keys || next - base.tail_from >= args.keys / 8;
                if wanted && s.memtable_bytes == 0 && s.levels.first().is_none_or(|l| l.files == 0)
                {
                    take_copy(db, &base.dir)?;
                    base.tail_from = next;
                }
                Ok(())
            },
        )?;
        base.load = Load::new(start.elapsed().as_secs_f64(), &open.stats());
        base.load.add_writes(bulk);
        base.per_batch = writer.per_batch;
        Ok(())
    })();
    let closed = db.map_or(Ok(()), Db::close);
    let _ = std::fs::remove_dir_all(&scratch);
    result?;
    closed?;
    Ok(base)
}

/// Checks, once the base is loaded and before any configuration's store is
/// made from it, that `home` has room for them: each configuration's store
/// rewrites every table of the base with its own filters, so it takes about
/// the base's size; `--dir` keeps all of them, a temporary home one at a
/// time. Fails with the sizes in the message, so that a long run stops
/// here instead of on a full disk at a later configuration.
pub fn check_room(home: &StoresHome, base: &Base, configs: usize) -> CliResult {
    let Some(free) = free_bytes(&home.path) else {
        return Ok(());
    };
    let one = tree_bytes(&base.dir);
    // A temporary home holds a store being made while the one before it
    // is removed ([`Removal`]).
    let stores = if home.keep {
        configs.max(1)
    } else {
        configs.clamp(1, 2)
    } as u64;
    let Some(need) = lacks_room(free, one, stores) else {
        return Ok(());
    };
    let b = crate::report::bytes;
    let why = if home.keep {
        format!(
            "--dir keeps the {stores} configurations' stores, each about the loaded store's {}; run without --dir to remove each store once measured, or free space",
            b(one)
        )
    } else {
        format!(
            "each configuration's store is about the loaded store's {}; set TMPDIR to a larger file system",
            b(one)
        )
    };
    Err(CliError::new(format!(
        "{} has {} free and needs about {}: {why}",
        home.path.display(),
        b(free),
        b(need)
    )))
}

/// The bytes `stores` stores made from a base of `one` bytes need
/// ([`store_room`] each), if `free` is less.
fn lacks_room(free: u64, one: u64, stores: u64) -> Option<u64> {
    let need = stores.saturating_mul(store_room(one));
    (free < need).then_some(need)
}

/// The bytes one store made from a base of `one` bytes needs: 5% over the
/// base, for the keys written after the base's copy and the store's WAL
/// and MANIFEST.
fn store_room(one: u64) -> u64 {
    one.saturating_add(one / 20)
}

/// How many stores made from `base` fit in `home` now (at least one, and
/// all of them when the free space cannot be read).
pub fn stores_that_fit(home: &StoresHome, base: &Base) -> usize {
    let Some(free) = free_bytes(&home.path) else {
        return usize::MAX;
    };
    let each = store_room(tree_bytes(&base.dir)).max(1);
    usize::try_from(free / each).unwrap_or(usize::MAX).max(1)
}

/// How many stores of `configs` one [`refilter_stores`] pass may hold open
/// at once: the pass splits the descriptors one store may hold
/// (`--max-open-files` or the default, [`Options::max_open_files`]) among
/// them, and each needs at least [`Options::min_max_open_files`]. At least
/// one.
pub fn stores_within_open_files(args: &BenchArgs, configs: &[BenchConfig]) -> CliResult<usize> {
    let mut most = usize::MAX;
    for c in configs {
        let opts = store_options(args, c)?;
        most = most.min(opts.max_open_files / opts.min_max_open_files().max(1));
    }
    Ok(most.max(1))
}

/// Bytes the file system holding `path` has free for this user (`None`
/// where it cannot be read).
fn free_bytes(path: &Path) -> Option<u64> {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::ffi::OsStrExt;
        let c = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
        // SAFETY: statvfs is plain data, for which all-zero bytes are valid.
        let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
        // SAFETY: `c` is a NUL-terminated path and `st` a writable statvfs.
        let rc = unsafe { libc::statvfs(c.as_ptr(), &mut st) };
        (rc == 0).then(|| (st.f_bavail as u64).saturating_mul(st.f_frsize as u64))
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = path;
        None
    }
}

/// The bytes of the files under `dir`, sub-directories included.
fn tree_bytes(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => tree_bytes(&e.path()),
            Ok(_) => e.metadata().map_or(0, |m| m.len()),
            Err(_) => 0,
        })
        .sum()
}

/// Reads every file under `dir` once, so that a buffered run's timed reads
/// find the store in the page cache whatever wrote it: the filter rebuild
/// that makes a configuration's store writes its tables past the page cache
/// (direct writes), and without this the first reads of each table would
/// go to the device, so that the device bytes of a phase would depend on
/// which blocks earlier phases happened to read. Best effort: an unreadable
/// file is left to the store's own reads to report.
pub fn read_into_page_cache(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut buf = vec![0u8; 1 << 20];
    for e in entries.flatten() {
        match e.file_type() {
            Ok(t) if t.is_dir() => read_into_page_cache(&e.path()),
            Ok(t) if t.is_file() => {
                if let Ok(mut f) = std::fs::File::open(e.path()) {
                    while matches!(std::io::Read::read(&mut f, &mut buf), Ok(n) if n > 0) {}
                }
            }
            _ => {}
        }
    }
}

/// The last keys of a load within which [`load_base`] copies the store at
/// every moment L0 and the memtable are empty: sixteen memtables of keys,
/// four times the writes after which an L0 compaction empties L0. A copy
/// links every table of the store, so copying at every such moment of the
/// load would cost the number of tables times the number of L0 compactions
/// (at 10^8 keys about 4,700 tables and 1,400 L0 compactions).
fn copy_window(args: &BenchArgs, opts: &Options) -> u64 {
    let per_key = u64::from(args.value_size) + 16 + 16;
    let memtable_keys = opts.write_buffer_size as u64 / per_key.max(1);
    (4 * opts.l0_compaction_trigger as u64).max(1) * memtable_keys.max(1)
}

/// Replaces the copy at `dir` with a checkpoint of `db`.
fn take_copy(db: &Db, dir: &Path) -> CliResult {
    if dir.exists() {
        std::fs::remove_dir_all(dir)
            .map_err(|e| CliError::new(format!("remove {}: {e}", dir.display())))?;
    }
    interrupt::guard(|| db.checkpoint(dir).map(|_| ()).map_err(CliError::from))
}

/// Most stores one [`refilter_stores`] pass makes: each is open during
/// the pass, pinning its indexes and new filters (at 10^8 keys about
/// 0.3 GiB a store) and holding its share of the open files.
pub const PASS_STORES: usize = 5;

/// Makes the stores of `configs`, at `dirs`, from `base` in one pass: a
/// checkpoint of the base per store (hard links; a filter rebuild writes
/// a new file and never changes one in place), each reopened with its
/// configuration's design, and their filters rebuilt together
/// ([`Db::rebuild_filters_together`]), so that the device reads the base's
/// tables once for all of them. The stores are left closed; returns the
/// seconds the pass took.
pub fn refilter_stores(
    args: &BenchArgs,
    configs: &[&BenchConfig],
    base: &Base,
    dirs: &[PathBuf],
) -> CliResult<f64> {
    let start = Instant::now();
    interrupt::guard(|| -> CliResult {
        let from = Db::open(&base.dir, base.opts.clone())?;
        for dir in dirs {
            from.checkpoint(dir)?;
        }
        from.close()?;
        let mut dbs = Vec::with_capacity(configs.len());
        for (config, dir) in configs.iter().zip(dirs) {
            let mut opts = store_options(args, config)?;
            opts.use_stored_design = false;
            // Open at once, the stores share the descriptors one store
            // may hold.
            opts.max_open_files =
                (opts.max_open_files / configs.len().max(1)).max(opts.min_max_open_files());
            dbs.push(Db::open(dir, opts)?);
        }
        Db::rebuild_filters_together(&dbs.iter().collect::<Vec<_>>())?;
        for db in dbs {
            db.close()?;
        }
        Ok(())
    })?;
    Ok(start.elapsed().as_secs_f64())
}

/// `config`'s store at `dir`, made from `base` by [`refilter_stores`]:
/// reopened with the configuration's design, then the keys after the base
/// written with the configuration's filters as the load wrote them.
/// Returns the open store and the seconds this took.
pub fn refilter_store(
    args: &BenchArgs,
    config: &BenchConfig,
    base: &Base,
    dir: &Path,
) -> CliResult<(Db, f64)> {
    let start = Instant::now();
    let mut opts = store_options(args, config)?;
    opts.use_stored_design = false;
    // The store the pass made is there: never a new empty one in its place.
    opts.create_if_missing = false;
    let db = interrupt::guard(|| Db::open(dir, opts))?;
    db.rebuild_filters()?;
    if base.tail_from < args.keys {
        let mut writer = KeyWriter::new(args, &db);
        writer.per_batch = base.per_batch;
        writer.write(
            args,
            &db,
            base.tail_from..args.keys,
            &config.name,
            |_, _| Ok(()),
        )?;
        db.rebuild_filters()?;
    }
    Ok((db, start.elapsed().as_secs_f64()))
}

/// Writes keys in batches, flushing before the memtable would fill up on
/// its own and running every due compaction on this thread.
pub(super) struct KeyWriter {
    values: ValueSource,
    /// Per-batch memtable cost, estimated from the first batch; used to
    /// flush before the memtable would fill up on its own (a freeze would
    /// hand the flush to the flush thread, and we want every step on this
    /// one).
    per_batch: Option<u64>,
    wbs: u64,
    /// Keys with a prefix structure ([`prefixed_key`]), this many per
    /// prefix; `None`: [`present_key`].
    prefix_group: Option<u64>,
}

/// Keys per write batch of a load.
const BATCH_KEYS: u64 = 1000;

impl KeyWriter {
    pub(super) fn new(args: &BenchArgs, db: &Db) -> Self {
        KeyWriter::from_options(args, db.options())
    }

    /// A writer for a store opened with `opts`.
    fn from_options(args: &BenchArgs, opts: &Options) -> Self {
        KeyWriter {
            values: ValueSource::new(
                args.seed ^ 0x7661_6c75,
                args.value_ratio,
                args.value_size as usize,
            ),
            per_batch: None,
            wbs: opts.write_buffer_size as u64,
            prefix_group: None,
        }
    }

    /// A writer of [`prefixed_key`]s, `group` per prefix.
    pub(super) fn prefixed(args: &BenchArgs, db: &Db, group: u64) -> Self {
        KeyWriter {
            prefix_group: Some(group),
            ..KeyWriter::new(args, db)
        }
    }

    /// Writes keys `range` and leaves flushes and compactions to the store's
    /// own threads (a store opened with background compaction).
    pub(super) fn write_unmaintained(
        &mut self,
        args: &BenchArgs,
        db: &Db,
        range: std::ops::Range<u64>,
        label: &str,
    ) -> CliResult {
        self.batches(args, range, label, |w, keys| {
            // `stats` walks every table: once, for the first batch only.
            let before = w.per_batch.is_none().then(|| db.stats().memtable_bytes);
            db.write(w.batch(args, keys))?;
            if let Some(b) = before {
                w.per_batch = Some(db.stats().memtable_bytes.saturating_sub(b).max(1));
            }
            Ok(())
        })
    }

    /// Writes keys `range` and runs what is then due; `after_maintain` is
    /// called with the next key after each flush and compaction run (the
    /// last one with `range.end`).
    pub(super) fn write(
        &mut self,
        args: &BenchArgs,
        db: &Db,
        range: std::ops::Range<u64>,
        label: &str,
        mut after_maintain: impl FnMut(&Db, u64) -> CliResult,
    ) -> CliResult {
        self.batches(args, range.clone(), label, |w, keys| {
            let next = keys.start;
            let batch = w.batch(args, keys);
            let before = db.stats().memtable_bytes;
            if let Some(b) = w.per_batch
                && before + b >= w.wbs
            {
                db.maintain()?;
                after_maintain(db, next)?;
            }
            let base = db.stats().memtable_bytes;
            db.write(batch)?;
            if w.per_batch.is_none() {
                w.per_batch = Some(db.stats().memtable_bytes.saturating_sub(base).max(1));
            }
            Ok(())
        })?;
        db.maintain()?;
        after_maintain(db, range.end)
    }

    /// Calls `write` with each batch's keys, `BATCH_KEYS` at a time, under a
    /// progress bar.
    fn batches(
        &mut self,
        args: &BenchArgs,
        range: std::ops::Range<u64>,
        label: &str,
        mut write: impl FnMut(&mut Self, std::ops::Range<u64>) -> CliResult,
    ) -> CliResult {
        let pb = progress(
            Some(range.end - range.start),
            args.quiet,
            format!("{label}: load"),
        );
        let mut i = range.start;
        while i < range.end {
            let end = (i + BATCH_KEYS).min(range.end);
            write(self, i..end)?;
            pb.inc(end - i);
            i = end;
        }
        pb.finish_and_clear();
        Ok(())
    }

    /// The batch of keys `keys` with their values.
    fn batch(&mut self, args: &BenchArgs, keys: std::ops::Range<u64>) -> WriteBatch {
        let mut value = Vec::with_capacity(args.value_size as usize);
        let mut batch = WriteBatch::new();
        for j in keys {
            self.values.value(j, &mut value);
            match self.prefix_group {
                Some(g) => batch.put(prefixed_key(args.seed, j, g), &value),
                None => batch.put(present_key(args.seed, j), &value),
            }
        }
        batch
    }
}

/// Checks, before anything runs, that `dir` (or, if it does not exist yet,
/// its nearest existing ancestor) takes direct reads: a probe file is
/// written, read back with O_DIRECT and removed. A refusal, or a directory
/// where no file can be written, is a usage error in one line.
fn check_direct(dir: &Path) -> CliResult {
    let at = dir.ancestors().find(|a| a.is_dir()).unwrap_or(dir);
    let probe = at.join(format!(".bloomlsm-direct-probe-{}", std::process::id()));
    std::fs::write(&probe, [0u8; 4096]).map_err(|e| {
        CliError::usage(format!(
            "--io direct: cannot write a probe file in {} ({e})",
            at.display()
        ))
    })?;
    let read = RealFs.open_read_direct(&probe).and_then(|f| {
        let mut buf = [0u8; 4096];
        f.read_exact_at(&mut buf, 0)
    });
    let _ = std::fs::remove_file(&probe);
    match read {
        Ok(()) => Ok(()),
        Err(e) if direct::refused(&e) => Err(CliError::usage(format!(
            "--io direct: {}: {}; choose --dir on a disk that takes it, or --io buffered",
            at.display(),
            direct::REFUSED
        ))),
        Err(e) => Err(CliError::new(format!(
            "--io direct: read {}: {e}",
            probe.display()
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kept_stores_need_room_for_every_configuration() {
        let gb = 1_000_000_000u64;
        let one = 8_200_000_000u64;
        // Ten kept stores of 8.2 GB do not fit in 63 GB; one at a time does.
        assert_eq!(lacks_room(63 * gb, one, 10), Some(10 * (one + one / 20)));
        assert_eq!(lacks_room(63 * gb, one, 1), None);
        // The margin counts: exactly the base's size is not enough.
        assert!(lacks_room(one, one, 1).is_some());
        assert_eq!(lacks_room(one + one / 20, one, 1), None);
        assert_eq!(lacks_room(0, 0, 10), None);
    }

    #[test]
    fn tree_bytes_counts_nested_files() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("a"), [0u8; 100]).unwrap();
        std::fs::create_dir(d.path().join("sub")).unwrap();
        std::fs::write(d.path().join("sub").join("b"), [0u8; 23]).unwrap();
        assert_eq!(tree_bytes(d.path()), 123);
        assert_eq!(tree_bytes(&d.path().join("missing")), 0);
        assert!(free_bytes(d.path()).is_some_and(|b| b > 0));
    }
}
