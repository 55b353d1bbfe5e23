//! Where the study's stores live and how each is built: the checks on
//! `--dir` and `--io direct` made before anything runs, the temporary home
//! removed at the end or on interruption, and the load of one store
//! ([`load_store`]) whose shape depends on the writes alone.

use std::path::{Path, PathBuf};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use bloomlsm::fs::{FileSystem, RealFs, direct};
use bloomlsm::{Db, Options, WriteBatch};

use crate::workload::{ValueSource, present_key};
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
            check_dir(d, &args.configs, args.reuse_dir)?;
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
/// compression and filter partition size.
pub fn store_options(args: &BenchArgs, config: &BenchConfig) -> CliResult<Options> {
    let mut opts = bench_options(config.filters.clone(), args.io);
    args.compression
        .apply(&mut opts.compression, opts.max_levels)?;
    opts.filter_partition_bytes = args.partition_bytes();
    args.files.apply(&mut opts);
    Ok(opts)
}

/// Loads `args.keys` keys into a store at `dir` with `config`'s filters,
/// running every due flush and compaction on this thread so that the shape
/// depends on the writes alone. Returns the open store and the load time.
pub fn load_store(args: &BenchArgs, config: &BenchConfig, dir: &Path) -> CliResult<(Db, f64)> {
    let opts = store_options(args, config)?;
    let wbs = opts.write_buffer_size as u64;
    // Creates the store's directory: not after an interruption removed it.
    let db = interrupt::guard(|| Db::open(dir, opts))?;
    let pb = progress(
        Some(args.keys),
        args.quiet,
        format!("{}: load", config.name),
    );
    let values = ValueSource::new(
        args.seed ^ 0x7661_6c75,
        args.value_ratio,
        args.value_size as usize,
    );
    let mut value = Vec::with_capacity(args.value_size as usize);
    // Per-entry memtable cost, estimated from the first batch; used to flush
    // before the memtable would fill up on its own (a freeze would hand the
    // flush to the flush thread, and we want every step on this one).
    let batch_keys = 1000u64;
    let mut per_batch: Option<u64> = None;
    let start = Instant::now();
    let mut i = 0u64;
    while i < args.keys {
        let end = (i + batch_keys).min(args.keys);
        let mut batch = WriteBatch::new();
        for j in i..end {
            values.value(j, &mut value);
            batch.put(present_key(args.seed, j), &value);
        }
        let before = db.stats().memtable_bytes;
        if let Some(b) = per_batch
            && before + b >= wbs
        {
            db.maintain()?;
        }
        let base = db.stats().memtable_bytes;
        db.write(batch)?;
        if per_batch.is_none() {
            per_batch = Some((db.stats().memtable_bytes - base).max(1));
        }
        pb.inc(end - i);
        i = end;
    }
    db.maintain()?;
    // The tree the load leaves, with the filters its allocation gives it
    // (configurations whose filters depend on the tree's shape).
    db.rebuild_filters()?;
    let secs = start.elapsed().as_secs_f64();
    pb.finish_and_clear();
    Ok((db, secs))
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
