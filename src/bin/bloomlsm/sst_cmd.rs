//! `bloomlsm sst`: look inside single SSTable files, like RocksDB's `sst_dump`.
//!
//! - `dump FILE`: footer, properties, filter parameters and predicted FPR,
//!   data-block sizes, key range; `--blocks` and `--entries` list more.
//! - `verify FILE...`: reads every block and checks every checksum; a failure
//!   names the first bad block's offset and makes the exit status non-zero.
//! - `filter-test FILE`: measures the file's filter FPR with random keys that
//!   are not in the table, next to the model's prediction.
//!
//! Each has `--json` (fields in [`help`]). Tables are opened
//! read-only: no command here writes anything.

use std::collections::HashSet;
use std::io::Write;
use std::path::{Path, PathBuf};

use bloomlsm::db::MAX_KEY_LEN;
use bloomlsm::filter::{Filter, key_hash};
use bloomlsm::sst::compression::block_type_name;
use bloomlsm::sst::format::BLOCK_TRAILER_LEN;
use bloomlsm::sst::{InternalKey, KeyFormat, Table, TableOpenOptions};
use bloomlsm::workload::SplitMix64;
use clap::{Args, Subcommand};
use serde_json::{Value, json};

use crate::escape::{Codec, internal_key, kind_name};
use crate::report::{bytes, count, percent, utc_date};
use crate::{CliError, CliResult, help, write_json};

/// The `sst` subcommands.
#[derive(Debug, Subcommand)]
pub enum SstCommand {
    /// Print a table's footer, properties, filter, blocks and key range.
    #[command(after_help = help::SST_DUMP)]
    Dump(DumpArgs),
    /// Read every block of each file and check every checksum; exit status 1
    /// if any file fails.
    #[command(after_help = help::SST_VERIFY)]
    Verify(VerifyArgs),
    /// Measure a table's filter false-positive rate with keys not in the table.
    #[command(after_help = help::SST_FILTER_TEST)]
    FilterTest(FilterTestArgs),
}

/// Arguments of `sst dump`.
#[derive(Debug, Args)]
pub struct DumpArgs {
    /// The SSTable file.
    pub file: PathBuf,
    /// Also print every entry (internal keys as `user_key @seq kind`).
    #[arg(long)]
    pub entries: bool,
    /// Also list every data block (offset, size, last key).
    #[arg(long)]
    pub blocks: bool,
    /// Print at most this many entries / blocks.
    #[arg(long, value_name = "N")]
    pub limit: Option<u64>,
    /// Print keys and values as hex.
    #[arg(long)]
    pub hex: bool,
    /// Print one JSON object (fields below).
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `sst verify`.
#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// The SSTable files.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Print one JSON object (fields below).
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `sst filter-test`.
#[derive(Debug, Args)]
pub struct FilterTestArgs {
    /// The SSTable file.
    pub file: PathBuf,
    /// Number of absent keys to probe the filter with (at most 2^28,
    /// 268,435,456).
    #[arg(long, default_value_t = 1_000_000, value_name = "N",
          value_parser = clap::value_parser!(u64).range(0..=crate::db::stats::MAX_PROBES))]
    pub probes: u64,
    /// Length of the random probe keys in bytes (1 to 65,536).
    #[arg(long, default_value_t = 16, value_name = "BYTES",
          value_parser = clap::value_parser!(u32).range(1..=MAX_KEY_LEN as i64))]
    pub key_len: u32,
    /// Seed of the random probe keys.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Print one JSON object (fields below).
    #[arg(long)]
    pub json: bool,
}

impl SstCommand {
    /// Runs the command, writing its report to `out`.
    pub fn run(&self, out: &mut dyn Write) -> CliResult {
        match self {
            SstCommand::Dump(a) => dump(a, out),
            SstCommand::Verify(a) => verify(a, out),
            SstCommand::FilterTest(a) => filter_test(a, out),
        }
    }
}

/// Opens a table for inspection (no block cache: every read is from disk).
pub fn open_table(path: &Path) -> CliResult<Table> {
    // A look that fails for another reason (a directory the user may not
    // search) is reported as it is, not as a missing file.
    match path.try_exists() {
        Ok(true) => Ok(Table::open(path, TableOpenOptions::default())?),
        Ok(false) => Err(CliError::new(format!("{}: no such file", path.display()))),
        Err(e) => Err(CliError::new(format!("{}: {e}", path.display()))),
    }
}

/// One line describing a table's filter: policy, k, keys, memory, bits per
/// key and predicted FPR.
pub fn describe_filter(t: &Table) -> String {
    let p = t.properties();
    let name = t
        .filter_policy_name()
        .or(p.filter_policy.as_deref())
        .unwrap_or("?");
    match t.filter() {
        None => "none (every lookup inside the key range reads a data block)".to_string(),
        Some(Filter::Unusable { reason }) => {
            format!("{name}: unusable by this build ({reason}); read as if absent")
        }
        Some(f) => format!(
            "{name}: {} bits/key requested, k={}, {} keys, {} in memory ({:.2} bits/key), predicted FPR {}{}",
            p.filter_bits_per_key,
            f.num_probes(),
            count(f.key_count()),
            bytes(f.memory_bytes() as u64),
            f.bits_per_key(),
            percent(Some(f.predicted_fpr())),
            match t.filter_partitions().len() {
                0 => String::new(),
                n => format!(", in {n} partitions (picked by key hash)"),
            }
        ),
    }
}

/// The filter of `sst dump --json` and `sst filter-test --json` (null if none).
pub fn filter_json(t: &Table) -> Value {
    let p = t.properties();
    let policy = t.filter_policy_name().or(p.filter_policy.as_deref());
    let handle = t.filter_handle();
    let (offset, size) = (handle.map(|h| h.offset), handle.map(|h| h.size));
    match t.filter() {
        None => Value::Null,
        Some(Filter::Unusable { reason }) => json!({
            "policy": policy,
            "usable": false,
            "reason": reason.to_string(),
            "bits_per_key_requested": p.filter_bits_per_key,
            "probes": null,
            "keys": null,
            "memory_bytes": null,
            "bits_per_key": null,
            "predicted_fpr": null,
            "offset": offset,
            "size": size,
        }),
        Some(f) => json!({
            "policy": policy,
            "usable": true,
            "reason": null,
            "bits_per_key_requested": p.filter_bits_per_key,
            "probes": f.num_probes(),
            "keys": f.key_count(),
            "memory_bytes": f.memory_bytes(),
            "bits_per_key": f.bits_per_key(),
            "predicted_fpr": f.predicted_fpr(),
            "offset": offset,
            "size": size,
            "partitions": t.filter_partitions().len(),
        }),
    }
}

fn show_key(codec: Codec, fmt: KeyFormat, k: &[u8]) -> String {
    match fmt {
        KeyFormat::Plain => codec.encode(k),
        KeyFormat::Internal => internal_key(codec, k),
    }
}

/// A table key as JSON: `{key}`, or `{key, seq, kind}` for an internal key
/// (a malformed internal key shows its bytes with seq and kind null).
fn key_json(codec: Codec, fmt: KeyFormat, k: &[u8]) -> Value {
    match (fmt, InternalKey::parse(k)) {
        (KeyFormat::Plain, _) => json!({ "key": codec.encode(k) }),
        (KeyFormat::Internal, Some(p)) => json!({
            "key": codec.encode(p.user_key),
            "seq": p.seq,
            "kind": kind_name(p.kind),
        }),
        (KeyFormat::Internal, None) => json!({ "key": codec.encode(k), "seq": null, "kind": null }),
    }
}

fn dump(a: &DumpArgs, out: &mut dyn Write) -> CliResult {
    let t = open_table(&a.file)?;
    let p = t.properties();
    let f = t.footer();
    let fmt = t.key_format();
    let codec = Codec::new(a.hex);
    let entries = t.index_entries()?;
    let sizes: Vec<u64> = entries.iter().map(|(_, h)| h.size).collect();
    let data_total: u64 = sizes.iter().map(|s| s + BLOCK_TRAILER_LEN as u64).sum();
    let limit = a.limit.unwrap_or(u64::MAX);
    // Each block's type byte and uncompressed size (a 1- to 6-byte read each).
    let codecs = (0..sizes.len())
        .map(|i| t.data_block_codec(i))
        .collect::<bloomlsm::Result<Vec<_>>>()?;
    let compressed = codecs.iter().filter(|(ty, _)| *ty != 0).count();
    let type_name = |ty: u8| block_type_name(ty).unwrap_or("unknown");
    if a.json {
        let mut v = json!({
            "file": a.file.display().to_string(),
            "file_bytes": t.file_size(),
            "footer_format_version": f.format_version,
            "properties_format_version": p.format_version,
            "checksum": t.checksum_type().name(),
            "key_format": fmt.name(),
            "entries": p.entries,
            "deletions": p.deletions,
            "raw_key_bytes": p.raw_key_bytes,
            "raw_value_bytes": p.raw_value_bytes,
            "data_blocks": sizes.len(),
            "data_bytes": data_total,
            "data_raw_bytes": p.data_raw_size,
            "compression": p.compression.to_string(),
            "compression_ratio": (data_total > 0).then(|| p.data_raw_size as f64 / data_total as f64),
            "compressed_blocks": compressed,
            "index_bytes": p.index_size,
            "index_memory_bytes": t.index_memory_bytes(),
            "index_partitions": t.index_partitions(),
            "filter": filter_json(&t),
            "smallest_key": (p.entries > 0).then(|| key_json(codec, fmt, t.smallest_key())),
            "largest_key": (p.entries > 0).then(|| key_json(codec, fmt, t.largest_key())),
            "created": p.creation_time,
            "created_utc": utc_date(p.creation_time, true),
        });
        if a.blocks {
            v["blocks"] = entries
                .iter()
                .zip(&codecs)
                .take(limit as usize)
                .map(|((k, h), (ty, raw))| {
                    json!({
                        "offset": h.offset,
                        "size": h.size,
                        "type": type_name(*ty),
                        "raw_size": raw,
                        "last_key": key_json(codec, fmt, k),
                    })
                })
                .collect();
        }
        if a.entries {
            let mut records = Vec::new();
            for e in t.iter().take(limit as usize) {
                let (k, val) = e?;
                let mut r = key_json(codec, fmt, &k);
                r["value"] = codec.encode(&val).into();
                records.push(r);
            }
            v["records"] = records.into();
        }
        return write_json(out, &v);
    }
    let kv = |out: &mut dyn Write, k: &str, v: String| writeln!(out, "{k:<16} {v}");

    kv(
        out,
        "file",
        format!("{} ({} bytes)", a.file.display(), count(t.file_size())),
    )?;
    kv(
        out,
        "format version",
        format!(
            "{} (footer), {} (properties)",
            f.format_version, p.format_version
        ),
    )?;
    kv(out, "checksum", t.checksum_type().name().to_string())?;
    kv(
        out,
        "footer",
        format!(
            "metaindex @{} +{}, index @{} +{}",
            f.metaindex.offset, f.metaindex.size, f.index.offset, f.index.size
        ),
    )?;
    kv(out, "key format", fmt.name().to_string())?;
    let deletions = p
        .deletions
        .map_or(String::new(), |d| format!(" ({} deletions)", count(d)));
    kv(out, "entries", format!("{}{deletions}", count(p.entries)))?;
    kv(
        out,
        "raw sizes",
        format!(
            "keys {}, values {}",
            bytes(p.raw_key_bytes),
            bytes(p.raw_value_bytes)
        ),
    )?;
    let blocks = if sizes.is_empty() {
        "0".to_string()
    } else {
        let min = sizes.iter().min().copied().unwrap_or(0);
        let max = sizes.iter().max().copied().unwrap_or(0);
        format!(
            "{}, {} with trailers (payload min {}, avg {}, max {})",
            count(sizes.len() as u64),
            bytes(data_total),
            bytes(min),
            bytes(sizes.iter().sum::<u64>() / sizes.len() as u64),
            bytes(max)
        )
    };
    kv(out, "data blocks", blocks)?;
    kv(
        out,
        "compression",
        format!(
            "{}: {} of {} data blocks stored compressed; {} uncompressed, ratio {}",
            p.compression,
            count(compressed as u64),
            count(sizes.len() as u64),
            bytes(p.data_raw_size),
            crate::report::ratio(p.data_raw_size, data_total)
        ),
    )?;
    kv(
        out,
        "index block",
        format!(
            "{} on disk, {} in memory",
            bytes(p.index_size),
            bytes(t.index_memory_bytes() as u64)
        ),
    )?;
    let filter_disk = match t.filter_handle() {
        Some(h) => format!(
            " [block @{} +{}, {} on disk]",
            h.offset,
            h.size,
            bytes(p.filter_size)
        ),
        None => String::new(),
    };
    kv(
        out,
        "filter",
        format!("{}{filter_disk}", describe_filter(&t)),
    )?;
    if p.entries > 0 {
        kv(
            out,
            "key range",
            format!(
                "{} .. {}",
                show_key(codec, fmt, t.smallest_key()),
                show_key(codec, fmt, t.largest_key())
            ),
        )?;
    } else {
        kv(out, "key range", "(empty table)".to_string())?;
    }
    kv(
        out,
        "created",
        format!(
            "{} (unix time {})",
            utc_date(p.creation_time, false),
            p.creation_time
        ),
    )?;

    if a.blocks {
        writeln!(out)?;
        writeln!(
            out,
            "{:>6}  {:>10}  {:>6}  {:<4}  {:>6}  last key",
            "block", "offset", "size", "type", "raw"
        )?;
        for (i, ((k, h), (ty, raw))) in entries.iter().zip(&codecs).enumerate().take(limit as usize)
        {
            writeln!(
                out,
                "{i:>6}  {:>10}  {:>6}  {:<4}  {raw:>6}  {}",
                h.offset,
                h.size,
                type_name(*ty),
                show_key(codec, fmt, k)
            )?;
        }
    }
    if a.entries {
        writeln!(out)?;
        for (n, e) in t.iter().enumerate() {
            if n as u64 >= limit {
                break;
            }
            let (k, v) = e?;
            writeln!(out, "{} => {}", show_key(codec, fmt, &k), codec.encode(&v))?;
        }
    }
    Ok(())
}

fn verify(a: &VerifyArgs, out: &mut dyn Write) -> CliResult {
    let mut failed = 0;
    let mut reports = Vec::new();
    for path in &a.files {
        let r = open_table(path).and_then(|t| {
            t.verify_all()?;
            Ok(t)
        });
        let file = path.display().to_string();
        match r {
            Ok(t) if a.json => reports.push(json!({
                "file": file,
                "ok": true,
                "entries": t.entries(),
                "data_blocks": t.data_blocks(),
                "error": null,
            })),
            Ok(t) => writeln!(
                out,
                "OK      {file} ({} entries, {} data blocks)",
                count(t.entries()),
                count(t.data_blocks() as u64)
            )?,
            Err(e) => {
                failed += 1;
                if a.json {
                    reports.push(json!({
                        "file": file,
                        "ok": false,
                        "entries": null,
                        "data_blocks": null,
                        "error": e.message,
                    }));
                } else {
                    writeln!(out, "FAILED  {file}: {}", e.message)?;
                }
            }
        }
    }
    if a.json {
        write_json(out, &json!({ "ok": failed == 0, "files": reports }))?;
    }
    if failed > 0 {
        return Err(CliError::negative(format!(
            "{failed} of {} files failed verification",
            a.files.len()
        )));
    }
    Ok(())
}

/// The outcome of probing a filter with keys known to be absent.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FprMeasurement {
    /// Absent keys probed.
    pub probes: u64,
    /// Probes that answered "may contain".
    pub false_positives: u64,
}

impl FprMeasurement {
    /// The measured false-positive rate.
    pub fn fpr(&self) -> f64 {
        if self.probes == 0 {
            0.0
        } else {
            self.false_positives as f64 / self.probes as f64
        }
    }

    /// The Wilson score 95% confidence interval of the rate.
    pub fn interval95(&self) -> (f64, f64) {
        let n = self.probes as f64;
        if n == 0.0 {
            return (0.0, 1.0);
        }
        let z = 1.96f64;
        let p = self.fpr();
        let d = 1.0 + z * z / n;
        let c = (p + z * z / (2.0 * n)) / d;
        let h = z * (p * (1.0 - p) / n + z * z / (4.0 * n * n)).sqrt() / d;
        ((c - h).max(0.0), (c + h).min(1.0))
    }
}

fn filter_test(a: &FilterTestArgs, out: &mut dyn Write) -> CliResult {
    let t = open_table(&a.file)?;
    let filter = match t.filter() {
        None => {
            return Err(CliError::new(format!(
                "{} has no filter block",
                a.file.display()
            )));
        }
        Some(Filter::Unusable { reason }) => {
            return Err(CliError::new(format!(
                "{}: filter unusable by this build: {reason}",
                a.file.display()
            )));
        }
        Some(f) => f,
    };
    // The filter covers user keys; collect them so that a random key that
    // happens to be in the table is skipped rather than counted.
    let fmt = t.key_format();
    // The count is a property of the file: no more than the file's bytes
    // are reserved for it.
    let reserve = t.entries().min(t.file_size() / 8);
    let mut present: HashSet<Vec<u8>> = HashSet::with_capacity(reserve as usize);
    for e in t.iter() {
        let (k, _) = e?;
        present.insert(fmt.user_key(&k).to_vec());
    }
    let mut rng = SplitMix64::new(a.seed);
    let mut key = vec![0u8; a.key_len as usize];
    let (mut m, mut skipped) = (
        FprMeasurement {
            probes: 0,
            false_positives: 0,
        },
        0u64,
    );
    while m.probes < a.probes {
        rng.fill(&mut key);
        if present.contains(&key) {
            skipped += 1;
            if skipped > a.probes.max(1000) {
                return Err(CliError::new(
                    "random keys keep hitting the table; use a different --key-len",
                ));
            }
            continue;
        }
        m.probes += 1;
        m.false_positives += u64::from(filter.may_contain(key_hash(&key)));
    }
    let (lo, hi) = m.interval95();
    if a.json {
        return write_json(
            out,
            &json!({
                "file": a.file.display().to_string(),
                "filter": filter_json(&t),
                "probes": m.probes,
                "key_len": a.key_len,
                "seed": a.seed,
                "skipped": skipped,
                "false_positives": m.false_positives,
                "measured_fpr": m.fpr(),
                "measured_fpr_low95": lo,
                "measured_fpr_high95": hi,
                "predicted_fpr": filter.predicted_fpr(),
            }),
        );
    }
    let kv = |out: &mut dyn Write, k: &str, v: String| writeln!(out, "{k:<16} {v}");
    kv(out, "file", a.file.display().to_string())?;
    kv(out, "filter", describe_filter(&t))?;
    kv(
        out,
        "probes",
        format!(
            "{} random {}-byte keys not in the table ({} in-table keys skipped), seed {}",
            count(m.probes),
            a.key_len,
            count(skipped),
            a.seed
        ),
    )?;
    kv(out, "false positives", count(m.false_positives))?;
    kv(
        out,
        "measured FPR",
        format!(
            "{} (95% interval {} .. {})",
            percent(Some(m.fpr())),
            percent(Some(lo)),
            percent(Some(hi))
        ),
    )?;
    kv(out, "predicted FPR", percent(Some(filter.predicted_fpr())))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wilson_interval_brackets_the_rate() {
        let m = FprMeasurement {
            probes: 100_000,
            false_positives: 1_000,
        };
        let (lo, hi) = m.interval95();
        assert!(lo < 0.01 && 0.01 < hi && hi - lo < 0.002, "{lo} {hi}");
    }
}
