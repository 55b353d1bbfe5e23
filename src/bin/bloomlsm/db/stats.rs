//! `db stats`: the store's shape, design, memory, filters and lookup
//! counters, per level and with `--files` per file, after `--probe`
//! lookups of absent keys inside the files' key ranges; and whether each
//! level's filters pay for their memory in reads saved ([`FilterPay`]).

use std::io::Write;
use std::path::PathBuf;

use bloomlsm::workload::SplitMix64;
use bloomlsm::{FileStats, Keyspace, LevelStats, Options, Stats};
use clap::Args;
use serde_json::{Value, json};

use super::store::{KeyspaceArg, check_store, warn_wal_damage};
use crate::design::{describe, describe_compression};
use crate::open_files::OpenFilesArg;
use crate::report::{
    TextTable, bytes, count, level_total, percent, ratio, shape_line, sig3, tickers_json,
};
use crate::{CliResult, parse_size, write_json};

/// Arguments of `db stats`.
#[derive(Debug, Args)]
pub struct StatsArgs {
    /// The store's directory, or s3://BUCKET/PREFIX for a store kept wholly in
    /// a bucket (endpoint and credentials from the AWS_* environment).
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

pub(super) fn stats(a: &StatsArgs, files: &OpenFilesArg, out: &mut dyn Write) -> CliResult {
    check_store(&a.dir)?;
    let mut opts = Options::default().metadata_memory_budget(a.filter_budget);
    files.apply(&mut opts);
    let db = super::store::open_read_only(&a.dir, opts)?;
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
            "tickers": tickers_json(&s),
            "filters_paying": filters_paying_json(&s),
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
    writeln!(out)?;
    write_filters_paying(out, &s)?;
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

/// The per-level table of `db stats`: shape, filters and lookup counters of
/// every non-empty level, plus a total row.
///
/// `checked`: per level, the predicted FPR weighted by checks
/// ([`checked_fpr`]) to show instead of the key-weighted model.
fn level_table(s: &Stats, checked: Option<&[Option<f64>]>) -> TextTable {
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

/// Lookups that checked a level's filters with no "absent" answer, after
/// which `db stats` flags the level: its filters hold memory and have
/// saved no read. At an FPR of 1% the chance that working filters answer
/// 1,000 absent keys without one "absent" is 10^-2000; only lookups that
/// all find their key there (or useless filters) get a level flagged.
pub const UNPAID_AFTER_CHECKS: u64 = 1_000;

const MIB: f64 = (1u64 << 20) as f64;

/// What one level's filters cost and saved over the lookups counted.
#[derive(Clone, Copy, Debug, PartialEq)]
struct FilterPay {
    level: usize,
    /// Bytes of the level's filters (held in memory, but for those a
    /// `--filter-budget` leaves on disk).
    memory: u64,
    /// Lookups that checked one of the level's filters.
    checks: u64,
    /// Of those, the ones a filter answered "absent": each a data-block
    /// read saved.
    saved: u64,
}

impl FilterPay {
    /// Reads saved per MiB of filter memory; `None` for a level without
    /// filter bytes.
    fn per_mib(&self) -> Option<f64> {
        (self.memory > 0).then(|| self.saved as f64 / (self.memory as f64 / MIB))
    }

    /// Whether the level's filters saved no read in at least
    /// [`UNPAID_AFTER_CHECKS`] lookups.
    fn unpaid(&self) -> bool {
        self.memory > 0 && self.checks >= UNPAID_AFTER_CHECKS && self.saved == 0
    }
}

/// The levels holding filters, with what their filters cost and saved.
fn filter_pay(s: &Stats) -> Vec<FilterPay> {
    s.levels
        .iter()
        .filter(|l| l.files > 0 && l.filter_bytes > 0)
        .map(|l| FilterPay {
            level: l.level,
            memory: l.filter_bytes,
            checks: l.io.filter_checks,
            saved: l.io.filter_negatives,
        })
        .collect()
}

/// The "filters paying for themselves" section of `db stats`.
fn write_filters_paying(out: &mut dyn Write, s: &Stats) -> CliResult {
    let pay = filter_pay(s);
    if pay.is_empty() {
        writeln!(
            out,
            "filters paying for themselves: the store holds no filters (no memory spent, no read saved)"
        )?;
        return Ok(());
    }
    if pay.iter().all(|p| p.checks == 0) {
        writeln!(
            out,
            "filters paying for themselves: no lookup has checked a filter in this process yet \
             (use --probe N to look up N absent keys first)"
        )?;
        return Ok(());
    }
    writeln!(
        out,
        "filters paying for themselves: the reads each level's filters saved (lookups they \
         answered \"absent\") per MiB of their memory"
    )?;
    let mut t = TextTable::new(&[
        "level",
        "filter mem",
        "checks",
        "reads saved",
        "saved per MiB",
    ]);
    for p in &pay {
        t.row(vec![
            format!("L{}", p.level),
            bytes(p.memory),
            count(p.checks),
            count(p.saved),
            p.per_mib()
                .map_or("-".to_string(), |r| count(r.round() as u64)),
        ]);
    }
    out.write_all(t.render().as_bytes())?;
    for p in pay.iter().filter(|p| p.unpaid()) {
        writeln!(
            out,
            "L{} flagged: its filters answered none of {} lookups \"absent\" (at least {}): \
             {} of filters for no read saved",
            p.level,
            count(p.checks),
            count(UNPAID_AFTER_CHECKS),
            bytes(p.memory)
        )?;
    }
    Ok(())
}

/// The `filters_paying` field of `db stats --json`.
fn filters_paying_json(s: &Stats) -> Value {
    json!({
        "unpaid_after_checks": UNPAID_AFTER_CHECKS,
        "levels": filter_pay(s).iter().map(|p| json!({
            "level": p.level,
            "filter_bytes": p.memory,
            "filter_checks": p.checks,
            "reads_saved": p.saved,
            "reads_saved_per_mib": p.per_mib(),
            "unpaid": p.unpaid(),
        })).collect::<Vec<_>>(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pay(checks: u64, saved: u64) -> FilterPay {
        FilterPay {
            level: 2,
            memory: 1 << 19,
            checks,
            saved,
        }
    }

    #[test]
    fn a_level_is_flagged_after_enough_checks_without_a_negative() {
        assert!(pay(UNPAID_AFTER_CHECKS, 0).unpaid());
        assert!(!pay(UNPAID_AFTER_CHECKS - 1, 0).unpaid());
        assert!(!pay(UNPAID_AFTER_CHECKS, 1).unpaid());
        // Half a MiB saving 3 reads: 6 per MiB.
        assert_eq!(pay(10, 3).per_mib(), Some(6.0));
        let none = FilterPay {
            memory: 0,
            ..pay(UNPAID_AFTER_CHECKS, 0)
        };
        assert!(!none.unpaid());
        assert_eq!(none.per_mib(), None);
    }

    #[test]
    fn the_section_flags_a_level_in_one_line() {
        let mut s = Stats::default();
        let mut l = LevelStats::default();
        l.level = 3;
        l.files = 2;
        l.filter_bytes = 3 << 20;
        l.io.filter_checks = 1500;
        s.levels = vec![LevelStats::default(), l];
        let mut out = Vec::new();
        write_filters_paying(&mut out, &s).unwrap();
        let text = String::from_utf8(out).unwrap();
        let flagged: Vec<&str> = text.lines().filter(|l| l.contains("flagged")).collect();
        assert_eq!(flagged.len(), 1, "{text}");
        assert!(flagged[0].starts_with("L3 flagged"), "{text}");
        assert_eq!(filters_paying_json(&s)["levels"][0]["unpaid"], true);
    }
}
