//! The `bloomlsm` command on tables in a real S3 server
//! (`BLOOMLSM_S3_ENDPOINT`, as in tests/bucket.rs): `bench --store s3://…`,
//! the study's stores read from the bucket, cold and warm, their requests
//! measured at the client and checked against the store's own count of
//! block reads; the `db` commands on a store whose `OPTIONS` file
//! records its bucket, given nothing but the directory; and the reading
//! `db` commands on a store kept wholly in the bucket, named
//! `s3://BUCKET/PREFIX`, beside its running writer.

use std::process::Command;

use bloomlsm::fs::bucket::BucketFs;
use bloomlsm::{Db, Options};
use serde_json::Value;

mod common;
use common::bucket::{Bucket, bucket, config, endpoint, prefix};

/// `bloomlsm ARGS` with the server's credentials in the environment (and
/// no endpoint: a store's is in its OPTIONS file).
fn bloomlsm(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_bloomlsm"))
        .args(args)
        .env_remove("AWS_ENDPOINT")
        .env("AWS_ACCESS_KEY_ID", "test")
        .env("AWS_SECRET_ACCESS_KEY", "test")
        .output()
        .unwrap()
}

/// `bloomlsm ARGS` with the server's endpoint, region and credentials in
/// the environment.
fn on_server(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_bloomlsm"))
        .args(args)
        .env("AWS_ENDPOINT", endpoint())
        .env("AWS_ACCESS_KEY_ID", "test")
        .env("AWS_SECRET_ACCESS_KEY", "test")
        .env("AWS_REGION", "us-east-1")
        .output()
        .unwrap()
}

fn text(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stdout).to_string()
}

#[test]
fn the_db_commands_find_a_stores_bucket_from_its_directory() {
    let dir = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let prefix = prefix("recorded-cli");
    let opts = || {
        let fs = BucketFs::shared(config(dir.path(), cache.path(), &prefix)).unwrap();
        Options::default()
            .write_buffer_size(64 << 10)
            .target_file_size(32 << 10)
            .fs(fs)
    };
    let db = Db::open(dir.path(), opts()).unwrap();
    for i in 0..3_000u32 {
        db.put(format!("key{i:05}"), format!("value-{i}")).unwrap();
    }
    db.flush().unwrap();
    db.close().unwrap();
    assert!(
        std::fs::read_dir(dir.path()).unwrap().all(|e| !e
            .unwrap()
            .file_name()
            .to_string_lossy()
            .ends_with(".sst")),
        "no table is on the local disk"
    );
    let d = dir.path().to_str().unwrap();

    let get = |key: &str| {
        let out = bloomlsm(&["db", "get", d, key]);
        assert!(out.status.success(), "{out:?}");
        String::from_utf8(out.stdout).unwrap()
    };
    assert_eq!(get("key01234").trim_end(), "value-1234");
    let out = bloomlsm(&["db", "verify", d]);
    assert!(out.status.success(), "{out:?}");

    // Beside a writer that holds the recorded cache (this process, whose
    // environment has no credentials, gives its file system in code), the
    // reader reads through a cache of its own, and sees the writer's
    // flushed writes.
    let db = Db::open(dir.path(), opts()).unwrap();
    db.put("key99999", "late").unwrap();
    db.flush().unwrap();
    assert_eq!(get("key99999").trim_end(), "late");
    assert_eq!(get("key00007").trim_end(), "value-7");
    db.close().unwrap();

    let b = Bucket::new();
    for k in b.all_under(&prefix) {
        b.delete(&k);
    }
}

#[test]
fn the_reading_commands_read_a_whole_store_in_the_bucket_beside_its_writer() {
    let dir = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let prefix = prefix("whole-cli");
    let fs = BucketFs::shared(config(dir.path(), cache.path(), &prefix).whole_store(true)).unwrap();
    let db = Db::open(
        dir.path(),
        Options::default().write_buffer_size(64 << 10).fs(fs),
    )
    .unwrap();
    for i in 0..2_000u32 {
        db.put(format!("key{i:05}"), format!("value-{i}")).unwrap();
    }
    db.flush().unwrap();
    // An unflushed write, synced: in the journal only.
    let mut b = bloomlsm::WriteBatch::new();
    b.put("key77777", "synced");
    db.write_with(b, bloomlsm::WriteOptions::default().sync(true))
        .unwrap();

    let url = format!("s3://{}/{prefix}", bucket());
    let cmd = on_server;
    let out = cmd(&["db", "get", &url, "key01234"]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(text(&out).trim_end(), "value-1234");
    let out = cmd(&["db", "get", &url, "key77777"]);
    assert_eq!(text(&out).trim_end(), "synced", "{out:?}");
    let out = cmd(&["db", "scan", &url, "--from", "key00010", "--limit", "3"]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(text(&out).lines().count(), 3, "{out:?}");
    let out = cmd(&["db", "verify", &url]);
    assert!(out.status.success(), "{out:?}");
    let out = cmd(&["db", "stats", &url, "--json"]);
    assert!(out.status.success(), "{out:?}");
    let v: Value = serde_json::from_str(text(&out).lines().next().unwrap()).unwrap();
    assert!(v.get("levels").is_some(), "{v}");

    // Writing commands refuse a bucket, naming it; a prefix without a
    // store is said to be one.
    let out = cmd(&["db", "put", &url, "k", "v"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("writing commands take a local directory")
    );
    let empty = format!(
        "s3://{}/{}",
        bucket(),
        common::bucket::prefix("whole-cli-none")
    );
    let out = cmd(&["db", "get", &empty, "k"]);
    assert!(!out.status.success(), "{out:?}");
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).lines().count(),
        1,
        "{out:?}"
    );

    // The writer was never disturbed.
    db.put("key88888", "after").unwrap();
    db.close().unwrap();
}

#[test]
fn checkpoints_of_a_whole_store_are_kept_opened_copied_both_ways_and_deleted_from_the_cli() {
    let dir = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let prefix = prefix("whole-cli-checkpoints");
    let fs = BucketFs::shared(config(dir.path(), cache.path(), &prefix).whole_store(true)).unwrap();
    let db = Db::open(
        dir.path(),
        Options::default().write_buffer_size(64 << 10).fs(fs),
    )
    .unwrap();
    let synced = bloomlsm::WriteOptions::default().sync(true);
    for i in 0..2_000u32 {
        db.put(format!("key{i:05}"), format!("value-{i}")).unwrap();
    }
    db.flush().unwrap();
    let mut b = bloomlsm::WriteBatch::new();
    b.put("key77777", "synced");
    db.write_with(b, synced).unwrap();

    let url = format!("s3://{}/{prefix}", bucket());
    let err = |o: &std::process::Output| String::from_utf8_lossy(&o.stderr).to_string();
    let out = on_server(&["db", "checkpoint", &url, "--name", "cli-1"]);
    assert!(out.status.success(), "{out:?}");
    assert!(
        text(&out).starts_with("kept checkpoint cli-1 beside "),
        "{out:?}"
    );
    assert!(text(&out).contains("none copied"), "{out:?}");

    // The writer goes on; the checkpoint stays as it was.
    let mut b = bloomlsm::WriteBatch::new();
    b.put("key01234", "changed");
    db.write_with(b, synced).unwrap();
    db.flush().unwrap();
    db.compact().unwrap();
    let at = format!("{url}?checkpoint=cli-1");
    let out = on_server(&["db", "get", &at, "key01234"]);
    assert_eq!(text(&out).trim_end(), "value-1234", "{out:?}");
    let out = on_server(&["db", "get", &at, "key77777"]);
    assert_eq!(text(&out).trim_end(), "synced", "{out:?}");
    let out = on_server(&["db", "get", &url, "key01234"]);
    assert_eq!(text(&out).trim_end(), "changed", "{out:?}");
    let out = on_server(&["db", "verify", &at]);
    assert!(out.status.success(), "{out:?}");

    let out = on_server(&["db", "checkpoints", &url, "--json"]);
    assert!(out.status.success(), "{out:?}");
    let rows: Vec<Value> = text(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 1, "{out:?}");
    assert_eq!(rows[0]["name"], "cli-1");
    assert!(rows[0]["tables"].as_u64() > Some(0), "{out:?}");

    // Copied into a local directory: a local store of its own.
    let local = tempfile::tempdir().unwrap();
    let copy = local.path().join("restored");
    let copy_s = copy.to_str().unwrap();
    let out = on_server(&["db", "checkpoint", &at, copy_s]);
    assert!(out.status.success(), "{out:?}");
    let out = bloomlsm(&["db", "verify", copy_s]);
    assert!(out.status.success(), "{out:?}");
    let out = bloomlsm(&["db", "get", copy_s, "key01234"]);
    assert_eq!(text(&out).trim_end(), "value-1234", "{out:?}");
    let out = bloomlsm(&["db", "scan", copy_s]);
    assert_eq!(text(&out).lines().count(), 2_001, "{}", err(&out));
    // And up again, into a new prefix: a whole store of its own.
    let up = format!(
        "s3://{}/{}",
        bucket(),
        common::bucket::prefix("whole-cli-upload")
    );
    let out = on_server(&["db", "checkpoint", copy_s, &up]);
    assert!(out.status.success(), "{out:?}");
    assert!(text(&out).contains("uploaded"), "{out:?}");
    let out = on_server(&["db", "get", &up, "key77777"]);
    assert_eq!(text(&out).trim_end(), "synced", "{out:?}");
    let out = on_server(&["db", "verify", &up]);
    assert!(out.status.success(), "{out:?}");
    let out = on_server(&["db", "checkpoint", copy_s, &up]);
    assert!(err(&out).contains("holds a store already"), "{out:?}");

    // Bad input: one line each.
    let out = on_server(&["db", "checkpoint", &url, "--name", "a/b"]);
    assert!(!out.status.success(), "{out:?}");
    assert!(err(&out).contains("checkpoint name"), "{out:?}");
    assert_eq!(err(&out).lines().count(), 1, "{out:?}");
    let out = on_server(&["db", "checkpoint", &url, "--name", "cli-1"]);
    assert!(!out.status.success(), "{out:?}");
    assert!(err(&out).contains("exists"), "{out:?}");
    let out = on_server(&["db", "checkpoints", copy_s]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let out = on_server(&["db", "get", &format!("{url}?checkpoint=none"), "k"]);
    assert!(!out.status.success(), "{out:?}");
    assert!(
        err(&out).contains("no checkpoint named \"none\""),
        "{out:?}"
    );

    // A clone under another prefix: its own store, the tables linked.
    let clone = format!(
        "s3://{}/{}",
        bucket(),
        common::bucket::prefix("whole-cli-clone")
    );
    let out = on_server(&["db", "checkpoint", &at, &clone]);
    assert!(out.status.success(), "{out:?}");
    assert!(text(&out).contains("linked, none copied"), "{out:?}");
    let out = on_server(&["db", "get", &clone, "key01234"]);
    assert_eq!(text(&out).trim_end(), "value-1234", "{out:?}");
    let out = on_server(&["db", "checkpoint", &url, &clone]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(err(&out).contains("--name NAME"), "{out:?}");

    let out = on_server(&["db", "checkpoints", &url, "--delete", "cli-1"]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(text(&out), "", "{out:?}");
    let out = on_server(&["db", "checkpoints", &url, "--delete", "cli-1"]);
    assert!(!out.status.success(), "{out:?}");
    db.close().unwrap();
}

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
