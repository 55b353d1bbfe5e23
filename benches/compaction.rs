//! Does splitting a compaction into parallel key-range shards (rayon) pay?
//! Builds the same store twice — eight overlapping L0 files over 400k random
//! keys — and times one full `compact()` with `max_subcompactions` 1 and 2,
//! alternating, medians of five rounds each.
//!
//! `cargo bench --bench compaction`

use std::time::{Duration, Instant};

use bloomlsm::workload::{SplitMix64, present_key};
use bloomlsm::{Db, Options, WriteBatch};

const KEYS: u64 = 400_000;

fn build(dir: &std::path::Path, subcompactions: usize) -> Db {
    let opts = Options::default()
        .write_buffer_size(8 << 20)
        .target_file_size(2 << 20)
        .l0_compaction_trigger(100)
        .l0_slowdown_trigger(100)
        .l0_stop_trigger(100)
        .background_compaction(false)
        .max_subcompactions(subcompactions)
        .block_cache_capacity(0)
        // Raw tables, as the README's recorded numbers were measured.
        .compression(bloomlsm::CompressionOptions::none());
    let db = Db::open(dir, opts).unwrap();
    let mut rng = SplitMix64::new(3);
    let mut value = [0u8; 100];
    let mut batch = WriteBatch::new();
    for i in 0..KEYS {
        rng.fill(&mut value);
        batch.put(present_key(1, rng.below(KEYS)), value);
        if batch.len() == 1000 {
            db.write(std::mem::take(&mut batch)).unwrap();
        }
        if i % (KEYS / 8) == KEYS / 8 - 1 {
            db.flush().unwrap();
        }
    }
    db.write(batch).unwrap();
    db.flush().unwrap();
    db
}

fn main() {
    if std::env::args().any(|a| a == "--list" || a == "--exact") {
        return; // nothing for the libtest protocol
    }
    let mut times: [Vec<Duration>; 2] = [Vec::new(), Vec::new()];
    for round in 0..5 {
        for (slot, sub) in [1usize, 2].into_iter().enumerate() {
            let dir = tempfile::tempdir().unwrap();
            let db = build(dir.path(), sub);
            let l0 = db.stats().levels[0].files;
            let t = Instant::now();
            db.compact().unwrap();
            let took = t.elapsed();
            let s = db.stats();
            println!(
                "round {round} subcompactions={sub}: {l0} L0 files -> {} L1 files in {:.0} ms",
                s.levels[1].files,
                took.as_secs_f64() * 1e3
            );
            times[slot].push(took);
        }
    }
    for t in &mut times {
        t.sort();
    }
    let (one, two) = (times[0][2], times[1][2]);
    println!(
        "\nmedian full compaction: 1 shard {:.0} ms, 2 shards {:.0} ms: {:.2}x",
        one.as_secs_f64() * 1e3,
        two.as_secs_f64() * 1e3,
        one.as_secs_f64() / two.as_secs_f64()
    );
}
