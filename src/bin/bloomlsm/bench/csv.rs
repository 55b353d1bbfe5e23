//! `bench --csv`: a header line ([`csv_header`]), then one line per
//! configuration ([`csv_row`]).

use std::io::Write;

use crate::CliResult;
use crate::report::csv_line;

use super::row::{BenchRow, PHASES, io_saved};

/// Writes the header and one line per row of `rows`.
pub fn write(out: &mut dyn Write, rows: &[BenchRow], none: Option<&BenchRow>) -> CliResult {
    writeln!(out, "{}", csv_line(&csv_header()))?;
    for r in rows {
        writeln!(out, "{}", csv_line(&csv_row(r, none)))?;
    }
    Ok(())
}

/// Column names of `--csv`: [`CSV_HEADER`], then [`CSV_PHASE_FIELDS`] for
/// each phase, prefixed by its name (e.g. `missing_get_p99_ns`).
pub fn csv_header() -> Vec<String> {
    let mut h: Vec<String> = CSV_HEADER.iter().map(|s| s.to_string()).collect();
    h.push("io".into());
    for (_, phase) in PHASES {
        h.extend(CSV_PHASE_FIELDS.iter().map(|f| format!("{phase}_{f}")));
    }
    h
}

/// Per-phase `--csv` fields.
pub const CSV_PHASE_FIELDS: &[&str] = &[
    "p50_ns",
    "p90_ns",
    "p99_ns",
    "p999_ns",
    "max_ns",
    "store_bytes",
    "device_bytes",
];

/// The fixed (phase-independent) `--csv` columns.
pub const CSV_HEADER: &[&str] = &[
    "config",
    "policy",
    "keys",
    "bits_per_key",
    "filter_bytes",
    "predicted_fpr",
    "measured_fpr",
    "block_reads_per_missing_get",
    "predicted_block_reads_per_missing_get",
    "io_saved",
    "missing_get_ns",
    "multi_get_missing_ns",
    "existing_get_ns",
    "filter_build_ns_per_key",
    "filter_probe_ns",
    "block_reads_per_existing_get",
    "load_seconds",
    "disk_bytes",
    "compression_ratio",
    "write_amplification",
    "user_bytes_written",
    "bytes_flushed",
    "bytes_compacted",
];

/// One `--csv` line's fields.
pub fn csv_row(r: &BenchRow, none: Option<&BenchRow>) -> Vec<String> {
    let opt = |v: Option<f64>| v.map_or(String::new(), |x| x.to_string());
    vec![
        r.config.name.clone(),
        r.config.policy(),
        r.keys.to_string(),
        r.bits_per_key.to_string(),
        r.filter_bytes.to_string(),
        opt(r.predicted_fpr()),
        opt(r.measured_fpr()),
        r.reads_per_missing_get().to_string(),
        r.predicted_reads_per_missing_get().to_string(),
        io_saved(r, none).to_string(),
        format!("{:.1}", r.missing_get_ns),
        format!("{:.1}", r.multi_get_missing_ns),
        format!("{:.1}", r.existing_get_ns),
        opt(r.filter_cost.map(|c| c.0)),
        opt(r.filter_cost.and_then(|c| c.1)),
        r.reads_per_existing_get().to_string(),
        format!("{:.3}", r.load_secs),
        r.disk_bytes().to_string(),
        opt(r.compression_ratio()),
        opt(r.write_amplification()),
        r.missing.user_bytes_written.to_string(),
        r.missing.bytes_flushed.to_string(),
        r.missing.bytes_compacted.to_string(),
    ]
    .into_iter()
    .chain(std::iter::once(r.io.read_mode().name().to_string()))
    .chain(r.phases.iter().flat_map(|p| {
        p.percentiles_ns
            .iter()
            .chain([&p.max_ns, &p.store_bytes])
            .map(u64::to_string)
            .chain(std::iter::once(
                p.device_bytes.map_or(String::new(), |b| b.to_string()),
            ))
            .collect::<Vec<_>>()
    }))
    .collect()
}
