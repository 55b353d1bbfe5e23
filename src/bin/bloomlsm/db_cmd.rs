//! `bloomlsm db`: operate on a store directory from the shell.
//!
//! Keys and values are given and printed in the escaped form of
//! [`escape`](crate::escape) (`\xNN` for non-printable bytes, `\\` for a backslash), so
//! `db scan` output (`key<TAB>value` lines) can be fed back to `db load`.

use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use bloomlsm::{Db, Options, Stats, WriteBatch};
use clap::{Args, Subcommand};

use crate::escape::{escape, unescape};
use crate::report::{TextTable, bytes, count, percent, sig3};
use crate::workload::SplitMix64;
use crate::{CliError, CliResult, parse_bytes, progress};

/// The `db` subcommands.
#[derive(Debug, Subcommand)]
pub enum DbCommand {
    /// Store a value under a key (creates the store if missing).
    Put {
        /// The store's directory.
        dir: PathBuf,
        /// The key (escaped form: `\xNN`, `\\`).
        key: String,
        /// The value (escaped form).
        value: String,
    },
    /// Print a key's value; exit status 1 (and nothing on stdout) if absent.
    Get {
        /// The store's directory.
        dir: PathBuf,
        /// The key (escaped form).
        key: String,
        /// Write the value's raw bytes, without escaping or a newline.
        #[arg(long)]
        raw: bool,
    },
    /// Remove a key (a no-op if absent).
    Delete {
        /// The store's directory.
        dir: PathBuf,
        /// The key (escaped form).
        key: String,
    },
    /// Print entries in key order as `key<TAB>value` lines (escaped).
    Scan(ScanArgs),
    /// Bulk-load `key` or `key<TAB>value` lines (escaped form) from a file or
    /// `-` (stdin), in write batches.
    Load(LoadArgs),
    /// Print the per-level shape, filters and lookup counters.
    Stats(StatsArgs),
    /// Check every block of every file of the store.
    Verify {
        /// The store's directory.
        dir: PathBuf,
    },
    /// Flush and merge everything down to the deepest level.
    Compact {
        /// The store's directory.
        dir: PathBuf,
    },
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
    /// Print at most this many entries.
    #[arg(long, value_name = "N")]
    pub limit: Option<u64>,
    /// Print keys only.
    #[arg(long)]
    pub keys_only: bool,
}

/// Arguments of `db load`.
#[derive(Debug, Args)]
pub struct LoadArgs {
    /// The store's directory (created if missing).
    pub dir: PathBuf,
    /// Input file, or `-` for stdin.
    pub file: PathBuf,
    /// Records per write batch.
    #[arg(long, default_value_t = 1000, value_name = "N")]
    pub batch: usize,
    /// No progress display.
    #[arg(long, short)]
    pub quiet: bool,
}

/// Arguments of `db stats`.
#[derive(Debug, Args)]
pub struct StatsArgs {
    /// The store's directory.
    pub dir: PathBuf,
    /// First look up this many random 16-byte keys (almost surely absent), so
    /// that the filter counters have something to show. Counters live in
    /// memory only: without probes a fresh process shows zeros.
    #[arg(long, value_name = "N")]
    pub probe: Option<u64>,
    /// Seed of the probe keys.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Also print one line per file.
    #[arg(long)]
    pub files: bool,
}

impl DbCommand {
    /// Runs the command, writing its report to `out`.
    pub fn run(&self, out: &mut dyn Write) -> CliResult {
        match self {
            DbCommand::Put { dir, key, value } => {
                let db = open(dir, true)?;
                db.put(parse_bytes("key", key)?, parse_bytes("value", value)?)?;
                Ok(db.close()?)
            }
            DbCommand::Get { dir, key, raw } => {
                let k = parse_bytes("key", key)?;
                let db = open(dir, false)?;
                match db.get(&k)? {
                    Some(v) if *raw => Ok(out.write_all(&v)?),
                    Some(v) => Ok(writeln!(out, "{}", escape(&v))?),
                    None => Err(CliError::new(format!("key not found: {}", escape(&k)))),
                }
            }
            DbCommand::Delete { dir, key } => {
                let db = open(dir, false)?;
                db.delete(parse_bytes("key", key)?)?;
                Ok(db.close()?)
            }
            DbCommand::Scan(a) => scan(a, out),
            DbCommand::Load(a) => load(a, out),
            DbCommand::Stats(a) => stats(a, out),
            DbCommand::Verify { dir } => {
                let db = open(dir, false)?;
                db.verify()?;
                let files = db.file_stats();
                writeln!(
                    out,
                    "OK  {}: {} files, {} entries, {}",
                    dir.display(),
                    files.len(),
                    count(files.iter().map(|f| f.entries).sum()),
                    bytes(files.iter().map(|f| f.file_bytes).sum())
                )?;
                Ok(db.close()?)
            }
            DbCommand::Compact { dir } => {
                let db = open(dir, false)?;
                writeln!(out, "before: {}", shape_line(&db.stats()))?;
                let t = Instant::now();
                db.compact()?;
                writeln!(out, "after:  {}", shape_line(&db.stats()))?;
                writeln!(out, "compacted in {:.2} s", t.elapsed().as_secs_f64())?;
                Ok(db.close()?)
            }
        }
    }
}

/// Opens the store at `dir` with default options. Unless `create`, the
/// directory must already hold a store: reading commands never create one.
pub fn open(dir: &Path, create: bool) -> CliResult<Db> {
    // `CURRENT` names the live manifest of every store (docs/format.md).
    if !create && !dir.join("CURRENT").exists() {
        let why = if dir.exists() {
            "is not a bloomlsm store (no CURRENT file)"
        } else {
            "does not exist"
        };
        return Err(CliError::new(format!("{} {why}", dir.display())));
    }
    let opts = Options {
        create_if_missing: create,
        ..Options::default()
    };
    Ok(Db::open(dir, opts)?)
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

/// The per-level table of `db stats`: shape, filters and lookup counters of
/// every non-empty level, plus a total row.
pub fn level_table(s: &Stats) -> TextTable {
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
    let mut total = bloomlsm::LevelStats::default();
    for l in s.levels.iter().filter(|l| l.files > 0) {
        t.row(vec![
            format!("L{}", l.level),
            l.files.to_string(),
            count(l.entries),
            bytes(l.file_bytes),
            l.policies.clone(),
            format!("{:.2}", l.filter_bits_per_key()),
            bytes(l.filter_bytes),
            count(l.io.filter_checks),
            count(l.io.filter_negatives),
            count(l.io.false_positives),
            percent(l.io.observed_fpr()),
            percent(Some(l.predicted_fpr)),
            count(l.io.block_reads),
            count(l.io.cache_hits),
        ]);
        total.files += l.files;
        total.entries += l.entries;
        total.file_bytes += l.file_bytes;
        total.filter_bytes += l.filter_bytes;
        total.filtered_keys += l.filtered_keys;
        total.io.add(&l.io);
    }
    t.row(vec![
        "total".into(),
        total.files.to_string(),
        count(total.entries),
        bytes(total.file_bytes),
        String::new(),
        format!("{:.2}", total.filter_bits_per_key()),
        bytes(total.filter_bytes),
        count(total.io.filter_checks),
        count(total.io.filter_negatives),
        count(total.io.false_positives),
        percent(total.io.observed_fpr()),
        String::new(),
        count(total.io.block_reads),
        count(total.io.cache_hits),
    ]);
    t
}

fn scan(a: &ScanArgs, out: &mut dyn Write) -> CliResult {
    use std::ops::Bound;
    let from = a
        .from
        .as_deref()
        .map(|k| parse_bytes("--from", k))
        .transpose()?;
    let to =
        a.to.as_deref()
            .map(|k| parse_bytes("--to", k))
            .transpose()?;
    let db = open(&a.dir, false)?;
    let lo = from.as_deref().map_or(Bound::Unbounded, Bound::Included);
    let hi = to.as_deref().map_or(Bound::Unbounded, Bound::Excluded);
    let limit = a.limit.unwrap_or(u64::MAX);
    let mut out = std::io::BufWriter::new(out);
    for (n, e) in db.scan((lo, hi)).enumerate() {
        if n as u64 >= limit {
            break;
        }
        let (k, v) = e?;
        if a.keys_only {
            writeln!(out, "{}", escape(&k))?;
        } else {
            writeln!(out, "{}\t{}", escape(&k), escape(&v))?;
        }
    }
    out.flush()?;
    Ok(())
}

/// Splits an input line of `db load` into key and value (escaped form;
/// `key<TAB>value`, or a bare key with an empty value).
pub fn parse_load_line(line: &str) -> Result<(Vec<u8>, Vec<u8>), String> {
    let (k, v) = line.split_once('\t').unwrap_or((line, ""));
    let key = unescape(k).map_err(|e| format!("key: {e}"))?;
    if key.is_empty() {
        return Err("empty key".to_string());
    }
    let value = unescape(v).map_err(|e| format!("value: {e}"))?;
    Ok((key, value))
}

fn load(a: &LoadArgs, out: &mut dyn Write) -> CliResult {
    let stdin = a.file.as_os_str() == "-";
    let name = if stdin {
        "<stdin>".to_string()
    } else {
        a.file.display().to_string()
    };
    let input: Box<dyn BufRead> = if stdin {
        Box::new(std::io::stdin().lock())
    } else {
        let f = File::open(&a.file).map_err(|e| CliError::new(format!("{name}: {e}")))?;
        Box::new(BufReader::with_capacity(1 << 16, f))
    };
    let db = open(&a.dir, true)?;
    let pb = progress(None, a.quiet, format!("loading {name}"));
    let start = Instant::now();
    let batch_size = a.batch.max(1);
    let (mut records, mut payload) = (0u64, 0u64);
    let mut batch = WriteBatch::new();
    for (i, line) in input.split(b'\n').enumerate() {
        let line = line.map_err(|e| CliError::new(format!("{name}: {e}")))?;
        let line = line.strip_suffix(b"\r").unwrap_or(&line);
        if line.is_empty() {
            continue;
        }
        let text = std::str::from_utf8(line).map_err(|_| {
            CliError::new(format!(
                "{name}:{}: not UTF-8 (escape binary bytes as \\xNN)",
                i + 1
            ))
        })?;
        let (k, v) =
            parse_load_line(text).map_err(|e| CliError::new(format!("{name}:{}: {e}", i + 1)))?;
        payload += (k.len() + v.len()) as u64;
        batch.put(&k, &v);
        records += 1;
        if batch.len() >= batch_size {
            db.write(std::mem::take(&mut batch))?;
            pb.set_position(records);
        }
    }
    db.write(batch)?;
    pb.finish_and_clear();
    db.close()?;
    let secs = start.elapsed().as_secs_f64();
    writeln!(
        out,
        "loaded {} records ({}) into {} in {:.2} s ({} records/s)",
        count(records),
        bytes(payload),
        a.dir.display(),
        secs,
        sig3(records as f64 / secs.max(1e-9))
    )?;
    Ok(())
}

fn stats(a: &StatsArgs, out: &mut dyn Write) -> CliResult {
    let db = open(&a.dir, false)?;
    db.reset_stats();
    if let Some(n) = a.probe {
        let mut rng = SplitMix64::new(a.seed);
        let mut key = [0u8; 16];
        for _ in 0..n {
            rng.fill(&mut key);
            db.get(key)?;
        }
    }
    let s = db.stats();
    writeln!(out, "store {}: {}", a.dir.display(), shape_line(&s))?;
    writeln!(
        out,
        "memory: filters {}, indexes {}, memtables {}",
        bytes(s.filter_bytes),
        bytes(s.index_bytes),
        bytes(s.memtable_bytes)
    )?;
    match a.probe {
        Some(n) => writeln!(
            out,
            "counters: {} lookups of random 16-byte keys (seed {}), {} found; data-block reads per missing lookup: {} measured, {} predicted",
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
    out.write_all(level_table(&s).render().as_bytes())?;
    if a.files {
        writeln!(out)?;
        let mut t = TextTable::new(&[
            "file",
            "level",
            "size",
            "keys",
            "filter",
            "bits/key",
            "pred FPR",
            "checks",
            "false pos",
        ])
        .align(4, crate::report::Align::Left);
        for f in db.file_stats() {
            t.row(vec![
                format!("{:06}.sst", f.number),
                format!("L{}", f.level),
                bytes(f.file_bytes),
                count(f.entries),
                if f.filter_usable || f.filter == "none" {
                    f.filter.clone()
                } else {
                    format!("{} (unusable)", f.filter)
                },
                format!("{:.2}", f.bits_per_key),
                percent(Some(f.predicted_fpr)),
                count(f.io.filter_checks),
                count(f.io.false_positives),
            ]);
        }
        out.write_all(t.render().as_bytes())?;
    }
    Ok(db.close()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn load_lines() {
        assert_eq!(
            parse_load_line("k\\x00\tv v").unwrap(),
            (b"k\0".to_vec(), b"v v".to_vec())
        );
        assert_eq!(parse_load_line("k").unwrap(), (b"k".to_vec(), vec![]));
        assert!(parse_load_line("\tv").is_err());
        assert!(parse_load_line("k\\q\tv").is_err());
    }
}
