//! `bench --json`: one object per configuration ([`json_row`]) and, with
//! `--plot`, the sweep ([`sweep_json`]). The fields are documented in
//! [`help`](crate::help).

use serde_json::{Value, json};

use crate::phase::PERCENTILES;
use crate::report::{level_total, shape_json, tickers_json};
use crate::sweep::SweepPoint;

use super::row::{
    BUCKET_PHASES, BenchRow, BudgetPoint, PHASES, bucket_saved, device_saved, io_saved,
};

/// The JSON object of one configuration (fields in [`help`](crate::help)).
pub fn json_row(r: &BenchRow, none: Option<&BenchRow>) -> Value {
    let m = &r.missing;
    let mut v = json!({
        "config": r.config.name,
        "policy": r.config.policy(),
        "keys": r.keys,
        "nominal_bits_per_key": r.config.nominal_bits_per_key(),
        "bits_per_key": r.bits_per_key,
        "spends_nominal": r.config.spends_nominal(r.bits_per_key),
        "filter_bytes": r.filter_bytes,
        "predicted_fpr": r.predicted_fpr(),
        "measured_fpr": r.measured_fpr(),
        "block_reads_per_missing_get": r.reads_per_missing_get(),
        "predicted_block_reads_per_missing_get": r.predicted_reads_per_missing_get(),
        "unfiltered_block_reads_per_missing_get": r.unfiltered_reads_per_missing_get(),
        "io_saved": io_saved(r, none),
        "missing_gets": m.gets_missing(),
        "filter_checks": m.total.filter_checks,
        "filter_negatives": m.total.filter_negatives,
        "false_positives": m.total.false_positives,
        "missing_get_ns": r.missing_get_ns,
        "multi_get_missing_ns": r.multi_get_missing_ns,
        "filter_build_ns_per_key": r.filter_cost.map(|c| c.0),
        "filter_probe_ns": r.filter_cost.and_then(|c| c.1),
        "existing_gets": r.existing.gets,
        "block_reads_per_existing_get": r.reads_per_existing_get(),
        "existing_get_ns": r.existing_get_ns,
        "load_seconds": r.load_secs,
        "write_amplification": r.write_amplification(),
        "user_bytes_written": m.user_bytes_written,
        "bytes_flushed": m.bytes_flushed,
        "bytes_compacted": m.bytes_compacted,
        "table_reopens": r.table_reopens(),
        "disk_bytes": r.disk_bytes(),
        "data_bytes": level_total(m).data_bytes,
        "data_raw_bytes": level_total(m).data_raw_bytes,
        "compression_ratio": r.compression_ratio(),
        "shape": shape_json(m),
        "io": r.io.read_mode().name(),
        "phases": r.phases.iter().zip(PHASES).enumerate().map(|(i, (p, (_, name)))| {
            let mut o = json!({
                "phase": name,
                "keys": p.ops,
                "mean_ns": p.mean_ns,
            });
            for ((_, _, key), v) in PERCENTILES.iter().zip(p.percentiles_ns) {
                o[format!("{key}_ns")] = json!(v);
            }
            o["max_ns"] = json!(p.max_ns);
            o["store_bytes"] = json!(p.store_bytes);
            o["device_bytes"] = json!(p.device_bytes);
            o["store_bytes_per_key"] = json!(p.store_bytes_per_op());
            o["device_bytes_per_key"] = json!(p.device_bytes_per_op());
            o["device_bytes_saved_per_key"] = json!(device_saved(r, none, i));
            o
        }).collect::<Vec<_>>(),
        "filter_budget": budget_json(&r.budget),
        "tickers": {
            "missing_get": tickers_json(&r.missing),
            "existing_get": tickers_json(&r.existing),
        },
    });
    v["refilter_seconds"] = json!(r.refilter_secs);
    v
}

/// One point of the `--plot` sweep as JSON.
pub fn sweep_json(p: &SweepPoint) -> Value {
    json!({
        "filter": p.kind.name(),
        "requested_bits_per_key": p.requested_bits_per_key,
        "bits_per_key": p.bits_per_key,
        "probes_per_key": p.probes_per_key,
        "predicted_fpr": p.predicted_fpr,
        "measured_fpr": p.measured_fpr(),
        "probes": p.probes,
        "false_positives": p.false_positives,
    })
}

/// The `bucket` field of a row's JSON.
pub fn bucket_json(r: &BenchRow, none: Option<&BenchRow>, price: f64) -> Value {
    let Some(b) = &r.bucket else {
        return Value::Null;
    };
    let mut phases = serde_json::Map::new();
    for (i, (_, name)) in BUCKET_PHASES.iter().enumerate() {
        let p = &b.phases[i];
        phases.insert(
            name.to_string(),
            json!({
                "gets": p.gets,
                "get_requests": p.requests,
                "get_requests_per_get": p.per_get(),
                "model_requests_per_get": p.model_per_get(),
                "fpr_model_requests_per_get": p.fpr_model_per_get(),
                "request_bytes_per_get": p.bytes_per_get(),
                "model_bytes_per_get": p.model_bytes as f64 / p.gets.max(1) as f64,
                "p50_ns": p.phase.percentiles_ns[0],
                "p99_ns": p.phase.percentiles_ns[2],
                "mean_ns": p.phase.mean_ns,
                "requests_saved_per_get": bucket_saved(r, none, i),
                "usd_per_million_gets": p.per_get() * price,
            }),
        );
    }
    json!({
        "url": b.url,
        "tables": b.tables,
        "table_bytes": b.table_bytes,
        "upload_seconds": b.upload_secs,
        "open_get_requests": b.open_requests,
        "open_request_bytes": b.open_request_bytes,
        "prefetch_get_requests": b.prefetch_requests,
        "prefetch_bytes": b.prefetch_bytes,
        "prefetch_seconds": b.prefetch_secs,
        "phases": phases,
    })
}

/// The JSON of one configuration's sweep.
fn budget_json(points: &[BudgetPoint]) -> Value {
    Value::Array(
        points
            .iter()
            .map(|p| {
                json!({
                    "fraction": p.fraction,
                    "budget_bytes": p.budget_bytes,
                    "pinned_filter_bytes": p.pinned_bytes,
                    "filter_bytes": p.filter_bytes,
                    "pinned_index_bytes": p.pinned_index_bytes,
                    "index_bytes": p.index_bytes,
                    "metadata_memory_bytes": p.metadata_bytes(),
                    "index_block_reads_per_missing_get": p.index_reads,
                    "io_per_missing_get": p.io(),
                    "filter_block_reads_per_present_get": p.present.filter,
                    "index_block_reads_per_present_get": p.present.index,
                    "data_block_reads_per_present_get": p.present.data,
                    "io_per_present_get": p.present.io(),
                    "io_per_lookup": p.io_per_lookup(),
                    "present_get_ns": p.present_phase.mean_ns,
                    "filter_block_reads_per_missing_get": p.filter_reads,
                    "predicted_filter_block_reads_per_missing_get": p.predicted_filter_reads,
                    "data_block_reads_per_missing_get": p.data_reads,
                    "predicted_data_block_reads_per_missing_get": p.predicted_data_reads,
                    "filter_bytes_read_per_missing_get": p.filter_bytes_read,
                    "missing_get_ns": p.phase.mean_ns,
                    "missing_get_p50_ns": p.phase.percentiles_ns[0],
                    "missing_get_p99_ns": p.phase.percentiles_ns[2],
                    "device_bytes_per_missing_get": p.phase.device_bytes_per_op(),
                })
            })
            .collect(),
    )
}
