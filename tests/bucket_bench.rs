//! `bloomlsm bench --store s3://…` against a real S3 server
//! (`BLOOMLSM_S3_ENDPOINT`, as in tests/bucket.rs): the study's stores read
//! from the bucket, cold and warm, their requests measured at the client
//! and checked against the store's own count of block reads.

use std::process::Command;

use serde_json::Value;

mod common;
use common::bucket::{Bucket, bucket, endpoint};

/// `bloomlsm bench ARGS --store s3://BUCKET/PREFIX --json -q` with the
/// server's endpoint and credentials; its JSON lines.
fn bench(args: &[&str], prefix: &str) -> Vec<Value> {
    let out = Command::new(env!("CARGO_BIN_EXE_bloomlsm"))
        .arg("bench")
        .args(args)
        .args([
            "--store",
            &format!("s3://{}/{prefix}", bucket()),
            "--json",
            "-q",
        ])
        .env("AWS_ENDPOINT", endpoint())
        .env("AWS_ACCESS_KEY_ID", "test")
        .env("AWS_SECRET_ACCESS_KEY", "test")
        .env("AWS_REGION", "us-east-1")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn the_study_reads_each_store_from_the_bucket_cold_and_warm() {
    let prefix = format!("bench-{}/", std::process::id());
    let rows = bench(
        &[
            "--keys",
            "30000",
            "--configs",
            "none,blocked10",
            "--lookups",
            "3000",
            "--bucket-lookups",
            "600",
        ],
        &prefix,
    );
    assert_eq!(rows.len(), 2, "{rows:?}");
    let phase = |row: usize, name: &str, field: &str| -> f64 {
        rows[row]["bucket"]["phases"][name][field]
            .as_f64()
            .unwrap_or_else(|| panic!("{name}.{field} in {}", rows[row]))
    };
    for (r, row) in rows.iter().enumerate() {
        let b = &row["bucket"];
        assert!(b["tables"].as_u64() > Some(0), "{b}");
        assert!(b["open_get_requests"].as_u64() > Some(0), "{b}");
        for name in ["missing_cold", "existing_cold"] {
            // No disk cache: each block the store read was one GET of it.
            assert_eq!(
                phase(r, name, "get_requests_per_get"),
                phase(r, name, "model_requests_per_get"),
                "{name}: {b}"
            );
            assert_eq!(
                phase(r, name, "request_bytes_per_get"),
                phase(r, name, "model_bytes_per_get"),
                "{name}: {b}"
            );
        }
        for name in ["missing_warm", "existing_warm"] {
            // Every table in the disk cache: no request.
            assert_eq!(phase(r, name, "get_requests"), 0.0, "{name}: {b}");
            assert!(phase(r, name, "model_requests_per_get") > 0.0, "{b}");
        }
        // An existing get reads its key's block, and more without filters.
        assert!(phase(r, "existing_cold", "get_requests_per_get") >= 1.0);
    }
    // Without filters every missing get reads a block of each table whose
    // range holds the key; blocked10's filters leave about 1% of those.
    let none = phase(0, "missing_cold", "get_requests_per_get");
    let filtered = phase(1, "missing_cold", "get_requests_per_get");
    assert!(none >= 1.0, "{}", rows[0]);
    assert!(filtered < none * 0.1, "{filtered} vs {none}");
    let saved = phase(1, "missing_cold", "requests_saved_per_get");
    assert!((saved - (none - filtered)).abs() < 1e-9, "{}", rows[1]);
    assert!(phase(1, "existing_cold", "get_requests_per_get") < 1.1);
    // Every object is gone: tables, markers and probes.
    let left = Bucket::new().all_under(&prefix);
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn the_benchmarks_make_their_store_in_the_bucket_and_leave_nothing() {
    let prefix = format!("benchmarks-{}/", std::process::id());
    // Twice on one prefix: the first run leaves it to no store.
    for _ in 0..2 {
        let rows = bench(
            &[
                "--benchmarks",
                "fillrandom,readrandom,readmissing",
                "--keys",
                "60000",
                "--lookups",
                "500",
                "--bucket-cache-bytes",
                "0",
            ],
            &prefix,
        );
        assert_eq!(rows.len(), 3, "{rows:?}");
        assert!(
            rows[0]["bucket_put_requests"].as_u64() > Some(0),
            "{}",
            rows[0]
        );
        for r in &rows[1..] {
            // No disk cache: each read request the model counts is a GET.
            let got = r["bucket_get_requests_per_op"].as_f64().unwrap();
            let model = r["read_requests_per_op"].as_f64().unwrap();
            assert_eq!(got, model, "{r}");
        }
        // Most keys are in tables (2 MiB memtables): a GET each.
        assert!(rows[1]["bucket_get_requests_per_op"].as_f64() > Some(0.5));
        let left = Bucket::new().all_under(&prefix);
        assert!(left.is_empty(), "{left:?}");
    }
}
