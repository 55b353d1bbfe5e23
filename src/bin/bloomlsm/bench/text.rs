//! `bench`'s text report: a header saying what runs, the main table of
//! filter memory, FPR, reads and latency per configuration
//! ([`results_table`]), the per-phase latency and bytes table
//! ([`phase_table`]) with its device check ([`device_check`]), the
//! `--filter-budget` table, and a legend under each.

use std::io::Write;
use std::path::Path;

use bloomlsm::Options;

use crate::CliResult;
use crate::design::describe_compression;
use crate::phase::PERCENTILES;
use crate::report::{self, TextTable, bytes, count, percent, sig3};

use super::args::{BenchArgs, IoMode, StoreUrl};
use super::bucket;
use super::measure::MULTI_GET_BATCH;
use super::row::{
    BUCKET_PHASES, BenchRow, BudgetPoint, PHASES, bucket_saved, device_saved, io_saved,
};

/// The lines before the first configuration runs: the workload, the store
/// options `o` every configuration shares, how tables are read and where
/// the stores are.
pub fn write_header(
    out: &mut dyn Write,
    args: &BenchArgs,
    o: &Options,
    parent: &Path,
) -> CliResult {
    let dist = match args.zipf {
        Some(s) => format!("Zipf {s}"),
        None => "uniform".to_string(),
    };
    writeln!(
        out,
        "bloomlsm bench: {} keys (16 B) with {} B values (made to compress to {}); {} missing + {} existing ({dist}) gets per configuration; seed {}",
        count(args.keys),
        args.value_size,
        args.value_ratio,
        count(args.lookups),
        count(args.lookups),
        args.seed
    )?;
    writeln!(
        out,
        "store: write buffer {}, target file {}, L1 {} x{} per level, {} blocks, {}, block cache off, {}",
        bytes(o.write_buffer_size as u64),
        bytes(o.target_file_size),
        bytes(o.level1_max_bytes),
        o.level_size_multiplier,
        bytes(o.block_size as u64),
        describe_compression(&o.compression),
        match super::stores::bulk_end(args, o) {
            0 => "compaction on the caller thread".to_string(),
            n => format!(
                "compaction in the background for the first {} keys, then on the caller thread",
                count(n)
            ),
        }
    )?;
    writeln!(
        out,
        "reads: {}; stores in {}",
        io_line(args.io),
        parent.display()
    )?;
    out.flush()?;
    Ok(())
}

/// Everything after the last configuration: the main table and its notes,
/// the per-phase table, and the `--filter-budget` table if asked for.
pub fn write_report(
    out: &mut dyn Write,
    args: &BenchArgs,
    rows: &[BenchRow],
    none: Option<&BenchRow>,
) -> CliResult {
    write_results(out, rows, none)?;
    write_phases(out, args, rows, none)?;
    if args.filter_budget.is_some() {
        write_budget(out, args, rows)?;
    }
    Ok(())
}

/// The main table, notes on rows that differ in shape or miss their
/// nominal memory, the bits per level of Monkey rows, and the legend.
fn write_results(out: &mut dyn Write, rows: &[BenchRow], none: Option<&BenchRow>) -> CliResult {
    out.write_all(results_table(rows, none).render().as_bytes())?;
    let first = &rows[0];
    for r in &rows[1..] {
        if r.shape_key != first.shape_key {
            writeln!(
                out,
                "note: {} got a different shape than {}: {}",
                r.config.name, first.config.name, r.shape
            )?;
        }
    }
    for r in rows.iter().filter(|r| r.config.monkey.is_some()) {
        writeln!(
            out,
            "{}: bits/key per level {}",
            r.config.name,
            r.level_bits()
        )?;
    }
    for r in rows
        .iter()
        .filter(|r| !r.config.spends_nominal(r.bits_per_key))
    {
        writeln!(
            out,
            "(!) {} spends {:.2} bits/key, more than 2% away from its nominal {:.2}: it is not at the memory its name says",
            r.config.name,
            r.bits_per_key,
            r.config.nominal_bits_per_key().unwrap_or_default()
        )?;
    }
    writeln!(out)?;
    writeln!(
        out,
        "FPR: false positives / absent-key filter probes (store counters); predicted: the filter model at each file's real bits/key, weighted by probes per level."
    )?;
    writeln!(
        out,
        "build/key, probe: CPU of the store's filters, each level's policy timed on a 65,536-key filter; build weighted by keys, probe (absent key) by filter checks."
    )?;
    writeln!(
        out,
        "w-amp: the load's write amplification, bytes flushed and compacted over the keys and values written."
    )?;
    if rows.iter().any(|r| r.refilter_secs.is_some()) {
        writeln!(
            out,
            "load, w-amp: of the single load, without filters, that every configuration's store was made from; refilter: making this configuration's store from it (checkpoint, every file's filter rebuilt, the keys after the checkpoint written again). --reload loads each configuration's store itself."
        )?;
    }
    writeln!(
        out,
        "reads/missing get: data blocks read per missing-key get; predicted = sum of the modelled FPRs of the files each get probed. Saved: vs {}.",
        if none.is_some() {
            "the none configuration"
        } else {
            "the files each get would have read without filters"
        }
    )?;
    Ok(())
}

/// The per-phase latency and bytes table, its legend and the device check.
fn write_phases(
    out: &mut dyn Write,
    args: &BenchArgs,
    rows: &[BenchRow],
    none: Option<&BenchRow>,
) -> CliResult {
    writeln!(out)?;
    writeln!(
        out,
        "Latency and bytes read per key, by phase ({}):",
        args.io_name()
    )?;
    // Device bytes saved only where the page cache does not hold the
    // stores: with their files read into it, a buffered phase reaches the
    // device about a byte per get, whatever the filter, and the difference
    // is noise of either sign.
    let none = none.filter(|_| args.io == IoMode::Direct || args.memory_ceiling.is_some());
    out.write_all(phase_table(rows, none).render().as_bytes())?;
    writeln!(
        out,
        "latency: per get from an HDR histogram (3 significant digits); multi_get: each call's time over its {MULTI_GET_BATCH} keys. store B: the store's count of data-block bytes read{}; device B: read_bytes of /proc/self/io over the phase (n/a off Linux){}.",
        if args.io == IoMode::Direct {
            " (whole sectors: 512 B or 4 KiB, as the file system aligns direct reads)"
        } else {
            " (block + trailer)"
        },
        if none.is_some() {
            "; saved: device bytes per get below the none configuration's"
        } else {
            ""
        }
    )?;
    for line in device_check(rows, args.io) {
        writeln!(out, "{line}")?;
    }
    for r in rows.iter().filter(|r| r.table_reopens() > 0) {
        let mut opts = Options::default();
        args.files.apply(&mut opts);
        writeln!(
            out,
            "table files: {} reopened {} table files (load and gets), holding at most {} open (--max-open-files {})",
            r.config.name,
            count(r.table_reopens()),
            count(opts.table_cache_capacity() as u64),
            opts.max_open_files
        )?;
    }
    Ok(())
}

/// The `--filter-budget` table of every filtered configuration, and its
/// legend.
fn write_budget(out: &mut dyn Write, args: &BenchArgs, rows: &[BenchRow]) -> CliResult {
    writeln!(out)?;
    writeln!(
        out,
        "Under a metadata memory budget ({}, block cache off, filter partitions of {}, index partitions of {}): missing gets, then present gets",
        args.io_name(),
        bytes(args.partition_bytes() as u64),
        bytes(args.index_partition_bytes() as u64)
    )?;
    let sweeps = rows
        .iter()
        .filter(|r| !r.budget.is_empty())
        .map(|r| (r.config.name.as_str(), &r.budget[..]));
    out.write_all(budget_table(sweeps).render().as_bytes())?;
    writeln!(
        out,
        "budget: fraction of the store's metadata bytes (every filter and index held whole) allowed in memory; in memory: filter and index bytes the store kept there (by reads saved per byte: L0 and the small levels' filters first; index top levels always), split in filters and indexes. filter reads: filter blocks read per missing get (one partition per probe of a filter not in memory); pred: the store's probe chance of each such file (the share of all its keys that lie in the file's range), summed. index reads: index partitions read per missing get (a filter positive of a file whose index is not in memory). data reads: as in the first table. I/O per miss: filter + index + data reads per missing get; per hit: the same per present get; per get: their mean. mean and percentiles: missing gets. device B: bytes that reached the device per missing get."
    )?;
    Ok(())
}

/// The header's description of the read mode.
fn io_line(io: IoMode) -> &'static str {
    match io {
        IoMode::Buffered => "buffered (page cache)",
        IoMode::Direct => {
            "direct I/O (O_DIRECT, whole sectors: every data-block read reaches the device)"
        }
    }
}

/// Per-phase latency percentiles and bytes read per key.
pub fn phase_table(rows: &[BenchRow], none: Option<&BenchRow>) -> TextTable {
    let mut head = vec!["config", "phase", "mean"];
    head.extend(PERCENTILES.iter().map(|p| p.1));
    head.extend(["max", "store B", "device B", "dev/store", "saved"]);
    let mut t = TextTable::new(&head);
    let b = |v: f64| {
        if v.abs() < 10.0 {
            format!("{v:.2} B")
        } else if v < 0.0 {
            format!("-{}", bytes(-v.round() as u64))
        } else {
            bytes(v.round() as u64)
        }
    };
    for r in rows {
        for (i, (label, _)) in PHASES.iter().enumerate() {
            let p = &r.phases[i];
            let mut cells = vec![
                if i == 0 {
                    r.config.name.clone()
                } else {
                    String::new()
                },
                label.to_string(),
                report::duration_ns(p.mean_ns),
            ];
            cells.extend(
                p.percentiles_ns
                    .iter()
                    .map(|&v| report::duration_ns(v as f64)),
            );
            cells.push(report::duration_ns(p.max_ns as f64));
            cells.push(b(p.store_bytes_per_op()));
            cells.push(p.device_bytes_per_op().map_or("n/a".into(), b));
            cells.push(p.device_ratio().map_or("-".into(), |x| format!("{x:.3}")));
            cells.push(device_saved(r, none, i).map_or("-".into(), b));
            t.row(cells);
        }
    }
    t
}

/// In direct mode every data-block read is a device read: the kernel's
/// count must agree with the store's within 5% (phases that read at least
/// 1 MiB). In buffered mode, how much of what the store read reached the
/// device.
pub fn device_check(rows: &[BenchRow], io: IoMode) -> Vec<String> {
    let phases = || {
        rows.iter().flat_map(|r| {
            r.phases
                .iter()
                .zip(PHASES)
                .map(move |(p, (label, _))| (r, label, p))
        })
    };
    if phases().all(|(_, _, p)| p.device_bytes.is_none()) {
        return vec!["device bytes: n/a (no /proc/self/io on this system)".into()];
    }
    let (store, device) = phases().fold((0u64, 0u64), |(s, d), (_, _, p)| {
        (s + p.store_bytes, d + p.device_bytes.unwrap_or(0))
    });
    match io {
        IoMode::Buffered => vec![format!(
            "device check (buffered): {} of the {} the store read reached the device ({}); the page cache served the rest",
            bytes(device),
            bytes(store),
            percent((store > 0).then(|| device as f64 / store as f64))
        )],
        IoMode::Direct => {
            let checked: Vec<_> = phases()
                .filter(|(_, _, p)| p.store_bytes >= 1 << 20)
                .collect();
            let off: Vec<String> = checked
                .iter()
                .filter(|(_, _, p)| p.device_ratio().is_none_or(|x| (x - 1.0).abs() > 0.05))
                .map(|(r, label, p)| {
                    format!(
                        "{} {label}: device {} vs store {}",
                        r.config.name,
                        bytes(p.device_bytes.unwrap_or(0)),
                        bytes(p.store_bytes)
                    )
                })
                .collect();
            let mut lines = vec![format!(
                "device check (direct): {} of {} phases (those reading at least 1 MiB) agree with the store's count within 5%; overall device/store {:.3}",
                checked.len() - off.len(),
                checked.len(),
                device as f64 / store.max(1) as f64
            )];
            lines.extend(
                off.into_iter()
                    .map(|l| format!("  OFF BY MORE THAN 5%: {l}")),
            );
            if store > 0 && device == 0 {
                lines.push(
                    "  no byte reached a device: the stores' file system serves direct reads from memory (tmpfs does); choose --dir on a disk".into(),
                );
            }
            lines
        }
    }
}

/// A filter's CPU cost: one decimal below 100 ns.
fn small_ns(ns: f64) -> String {
    if ns < 100.0 {
        format!("{ns:.1} ns")
    } else {
        report::duration_ns(ns)
    }
}

/// The study's main table.
pub fn results_table(rows: &[BenchRow], none: Option<&BenchRow>) -> TextTable {
    let mut t = TextTable::new(&[
        "config",
        "filter mem",
        "bits/key",
        "nominal",
        "pred FPR",
        "meas FPR",
        "reads/miss",
        "pred reads",
        "I/O saved",
        "miss get",
        "multi miss",
        "hit get",
        "build/key",
        "probe",
        "load",
        "refilter",
        "w-amp",
        "disk",
        "ratio",
    ]);
    for r in rows {
        let (build, probe) = r.filter_cost.unzip();
        t.row(vec![
            r.config.name.clone(),
            format!("{:.2} MiB", r.filter_bytes as f64 / (1024.0 * 1024.0)),
            format!(
                "{:.2}{}",
                r.bits_per_key,
                if r.config.spends_nominal(r.bits_per_key) {
                    ""
                } else {
                    " (!)"
                }
            ),
            r.config
                .nominal_bits_per_key()
                .map_or("-".to_string(), |b| format!("{b:.2}")),
            percent(r.predicted_fpr()),
            percent(r.measured_fpr()),
            sig3(r.reads_per_missing_get()),
            sig3(r.predicted_reads_per_missing_get()),
            format!("{:.1}%", io_saved(r, none) * 100.0),
            report::duration_ns(r.missing_get_ns),
            report::duration_ns(r.multi_get_missing_ns),
            report::duration_ns(r.existing_get_ns),
            build.map_or("-".into(), small_ns),
            probe.flatten().map_or("-".into(), small_ns),
            format!("{:.1} s", r.load_secs),
            r.refilter_secs.map_or("-".into(), |x| format!("{x:.1} s")),
            r.write_amplification()
                .map_or("-".into(), |x| format!("{x:.2}")),
            report::bytes(r.disk_bytes()),
            r.compression_ratio()
                .map_or("-".into(), |x| format!("{x:.2}x")),
        ]);
    }
    t
}

/// The text table of every configuration's sweep.
fn budget_table<'a>(rows: impl Iterator<Item = (&'a str, &'a [BudgetPoint])>) -> TextTable {
    let mut head = vec![
        "config",
        "budget",
        "in memory",
        "filters",
        "indexes",
        "filter reads",
        "pred",
        "index reads",
        "data reads",
        "pred",
        "I/O per miss",
        "I/O per hit",
        "I/O per get",
        "mean",
    ];
    head.extend(PERCENTILES.iter().filter(|p| p.1 != "p90").map(|p| p.1));
    head.push("device B");
    let mut t = TextTable::new(&head);
    for (name, points) in rows {
        for (i, p) in points.iter().enumerate() {
            let mut cells = vec![
                if i == 0 {
                    name.to_string()
                } else {
                    String::new()
                },
                format!("{}%", report::sig3(p.fraction * 100.0)),
                format!(
                    "{} of {}",
                    bytes(p.metadata_bytes()),
                    bytes(p.filter_bytes + p.index_bytes)
                ),
                bytes(p.pinned_bytes),
                bytes(p.pinned_index_bytes),
                format!("{:.4}", p.filter_reads),
                format!("{:.4}", p.predicted_filter_reads),
                format!("{:.4}", p.index_reads),
                format!("{:.4}", p.data_reads),
                format!("{:.4}", p.predicted_data_reads),
                format!("{:.4}", p.io()),
                format!("{:.4}", p.present.io()),
                format!("{:.4}", p.io_per_lookup()),
                report::duration_ns(p.phase.mean_ns),
            ];
            cells.extend(
                PERCENTILES
                    .iter()
                    .zip(p.phase.percentiles_ns)
                    .filter(|(q, _)| q.1 != "p90")
                    .map(|(_, v)| report::duration_ns(v as f64)),
            );
            cells.push(
                p.phase
                    .device_bytes_per_op()
                    .map_or("n/a".into(), |b| format!("{b:.1} B")),
            );
            t.row(cells);
        }
    }
    t
}

/// The text report of the bucket phases, after the main table.
pub fn write_bucket(
    out: &mut dyn std::io::Write,
    args: &BenchArgs,
    url: &StoreUrl,
    rows: &[BenchRow],
    none: Option<&BenchRow>,
) -> crate::CliResult {
    let mut t = TextTable::new(&[
        "config",
        "phase",
        "GETs/get",
        "model",
        "FPR model",
        "bytes/get",
        "p50",
        "p99",
        "GETs saved",
        "USD/M gets",
    ]);
    for r in rows {
        let Some(b) = &r.bucket else { continue };
        for (i, (label, _)) in BUCKET_PHASES.iter().enumerate() {
            let p = &b.phases[i];
            t.row(vec![
                if i == 0 {
                    r.config.name.clone()
                } else {
                    String::new()
                },
                label.to_string(),
                sig3(p.per_get()),
                sig3(p.model_per_get()),
                p.fpr_model_per_get().map_or("-".into(), sig3),
                bytes(p.bytes_per_get().round() as u64),
                latency(p.phase.percentiles_ns[0]),
                latency(p.phase.percentiles_ns[2]),
                bucket_saved(r, none, i).map_or("-".into(), sig3),
                format!("{:.4}", p.per_get() * args.price_per_million_gets),
            ]);
        }
    }
    writeln!(out)?;
    writeln!(
        out,
        "tables in {url} ({}): {} gets per phase",
        bucket::endpoint(),
        count(args.bucket_lookups.min(args.lookups))
    )?;
    out.write_all(t.render().as_bytes())?;
    for r in rows {
        let Some(b) = &r.bucket else { continue };
        writeln!(
            out,
            "{}: {} tables ({}) uploaded in {:.1} s; opened with {} GETs ({}); warmed with {} GETs ({}) in {:.1} s",
            r.config.name,
            count(b.tables),
            bytes(b.table_bytes),
            b.upload_secs,
            count(b.open_requests),
            bytes(b.open_request_bytes),
            count(b.prefetch_requests),
            bytes(b.prefetch_bytes),
            b.prefetch_secs
        )?;
    }
    writeln!(
        out,
        "cold: no disk cache, each block read one ranged GET; multi_get: 1,024 keys a call, each level's reads in parallel (16 at a time), latency per key; warm: every table in the disk cache ({} chunks) first. GETs/get: measured at the bucket client; model: the store's block reads, one request each (what the latency model counts); FPR model: the sum of the modelled FPRs of the files each missing get probed. GETs saved: none's GETs/get less the row's. USD at {:.2} per million GETs.",
        bytes(args.bucket_chunk_bytes),
        args.price_per_million_gets
    )?;
    Ok(())
}

/// A latency: µs below a millisecond, else ms.
fn latency(ns: u64) -> String {
    if ns < 1_000_000 {
        format!("{} µs", sig3(ns as f64 / 1e3))
    } else {
        format!("{} ms", sig3(ns as f64 / 1e6))
    }
}
