//! A store kept wholly in a bucket (`BucketConfig::whole_store`) against
//! the S3 server `BLOOMLSM_S3_ENDPOINT` names (`.ci/moto.sh start`), bucket
//! `BLOOMLSM_S3_BUCKET` (default `bloomlsm-test`):
//!
//! 1. synced puts per second from 1 and from 8 writer threads, alternated
//!    over 3 rounds (`BLOOMLSM_BENCH_PUTS` per thread per round, default
//!    200): the group commit shares one journal entry among the writers
//!    waiting together;
//! 2. how long after a synced put is acknowledged a reader elsewhere
//!    (another `BucketFs`, `Options::refresh_interval` 100 ms) sees it,
//!    over 40 puts;
//! 3. a store of `BLOOMLSM_BENCH_KEYS` keys (default 1,000,000; 16-byte
//!    keys, 100-byte values) loaded, closed, then opened for reading from
//!    another place, cold: with no disk cache
//!    (`BucketFs::whole_store_reader`) and with an empty one; the open's
//!    time and requests.
//!
//! `cargo bench --features object-store --bench bucket_whole`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bloomlsm::fs::bucket::{BucketConfig, BucketFs};
use bloomlsm::{Db, Options, WriteBatch};

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn config(endpoint: &str, dir: &std::path::Path, prefix: &str) -> BucketConfig {
    let bucket = std::env::var("BLOOMLSM_S3_BUCKET").unwrap_or_else(|_| "bloomlsm-test".into());
    BucketConfig::new(dir.join("db"), bucket, dir.join("cache"))
        .endpoint(endpoint)
        .region("us-east-1")
        .credentials("test", "test")
        .prefix(prefix)
        .whole_store(true)
}

#[path = "support/writers.rs"]
mod writers;
use writers::{median, puts_per_sec};

fn main() {
    if std::env::args()
        .skip(1)
        .any(|a| !a.starts_with('-') && !"bucket_whole".contains(&a))
    {
        return;
    }
    let endpoint = std::env::var("BLOOMLSM_S3_ENDPOINT")
        .expect("BLOOMLSM_S3_ENDPOINT names no S3 server: run `.ci/moto.sh start`");
    let run_id = std::process::id();
    let tmp = tempfile::tempdir().unwrap();

    // 1. Group commit to the bucket.
    let puts = env("BLOOMLSM_BENCH_PUTS", 200);
    let prefix = format!("bench-whole-sync-{run_id}/");
    let fs = Arc::new(BucketFs::open(config(&endpoint, &tmp.path().join("w"), &prefix)).unwrap());
    let db = Db::open(
        tmp.path().join("w/db"),
        Options::default().sync_writes(true).fs(fs.clone()),
    )
    .unwrap();
    let (mut one, mut eight) = (Vec::new(), Vec::new());
    for round in 0..3 {
        one.push(puts_per_sec(&db, 1, puts, round));
        eight.push(puts_per_sec(&db, 8, puts, round));
    }
    let (m1, m8) = (median(&mut one), median(&mut eight));
    println!(
        "synced puts/s: 1 thread {m1:.0}, 8 threads {m8:.0} ({:.2}x); rounds {one:.0?} / {eight:.0?}",
        m8 / m1
    );

    // 2. A synced write seen by a reader elsewhere.
    let (rfs, rdir) = BucketFs::whole_store_reader(config(&endpoint, tmp.path(), &prefix)).unwrap();
    let reader = Db::open_read_only(
        &rdir,
        Options::default()
            .fs(rfs)
            .refresh_interval(Some(Duration::from_millis(100))),
    )
    .unwrap();
    let mut seen = Vec::new();
    for i in 0..40 {
        let key = format!("visible-{i:04}");
        db.put(&key, "v").unwrap();
        let t = Instant::now();
        while reader.get(&key).unwrap().is_none() {
            assert!(
                t.elapsed() < Duration::from_secs(30),
                "the reader never saw {key}"
            );
            std::thread::sleep(Duration::from_millis(2));
        }
        seen.push(t.elapsed().as_secs_f64() * 1e3);
    }
    seen.sort_by(f64::total_cmp);
    println!(
        "a synced put seen by a reader refreshing every 100 ms: p50 {:.0} ms, p90 {:.0} ms, \
         max {:.0} ms (40 puts)",
        seen[20], seen[36], seen[39]
    );
    drop(reader);
    db.close().unwrap();

    // 3. A cold open for reading.
    let keys = env("BLOOMLSM_BENCH_KEYS", 1_000_000);
    let prefix = format!("bench-whole-open-{run_id}/");
    let fs = Arc::new(BucketFs::open(config(&endpoint, &tmp.path().join("o"), &prefix)).unwrap());
    let db = Db::open(tmp.path().join("o/db"), Options::default().fs(fs.clone())).unwrap();
    let t = Instant::now();
    let value = [9u8; 100];
    for chunk in 0..keys.div_ceil(1000) {
        let mut b = WriteBatch::new();
        for i in chunk * 1000..((chunk + 1) * 1000).min(keys) {
            b.put(bloomlsm::workload::present_key(7, i), value);
        }
        db.write(b).unwrap();
    }
    db.flush().unwrap();
    let load = t.elapsed();
    let files = db.file_stats().len();
    db.close().unwrap();
    // Cold: with no disk cache (each read one GET), and with an empty one
    // of 1 GiB in 1 MiB chunks (a read fetches its chunks).
    for (what, cached) in [
        ("no disk cache", false),
        ("an empty 1 GiB disk cache", true),
    ] {
        let (rfs, rdir) = if cached {
            let d = tmp.path().join("cold");
            let c = config(&endpoint, &d, &prefix);
            (Arc::new(BucketFs::open(c).unwrap()), d.join("db"))
        } else {
            BucketFs::whole_store_reader(config(&endpoint, tmp.path(), &prefix)).unwrap()
        };
        let t = Instant::now();
        let reader = Db::open_read_only(&rdir, Options::default().fs(rfs.clone())).unwrap();
        let open = t.elapsed();
        let c = rfs.counters();
        assert!(
            reader
                .get(bloomlsm::workload::present_key(7, keys / 2))
                .unwrap()
                .is_some()
        );
        println!(
            "{keys} keys ({files} tables) loaded in {:.1} s; opened for reading with {what} \
             in {:.2} s: {} LISTs, {} GETs ({} bytes), {} HEADs",
            load.as_secs_f64(),
            open.as_secs_f64(),
            c.lists,
            c.gets,
            c.get_bytes,
            c.heads
        );
    }
}
