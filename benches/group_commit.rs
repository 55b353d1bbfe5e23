//! Group commit: puts per second in sync mode (every write fsynced before it
//! is acknowledged) from 1, 2, 4 and 8 writer threads, alternated over
//! several rounds in one process; prints each count's median and its ratio
//! to one thread's. Concurrent writers queue, and the writer at the front
//! logs the queued batches in one WAL record with one fsync
//! (docs/design.md, "Write path").
//!
//! `cargo bench --bench group_commit`; `BLOOMLSM_BENCH_PUTS=N` sets the puts
//! per thread per round (default 1,000), `BLOOMLSM_BENCH_DIR` the directory
//! (default: a temporary directory, on the disk `tempfile` picks).

use bloomlsm::{Db, Options};

const THREADS: [usize; 4] = [1, 2, 4, 8];
const ROUNDS: usize = 5;

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[path = "support/writers.rs"]
mod writers;
use writers::{median, puts_per_sec};

fn main() {
    // `cargo bench` passes `--bench`; a name filter that matches nothing skips.
    if std::env::args()
        .skip(1)
        .any(|a| !a.starts_with('-') && !"group_commit".contains(&a))
    {
        return;
    }
    let puts = env("BLOOMLSM_BENCH_PUTS", 1000);
    let _tmp;
    let dir = match std::env::var_os("BLOOMLSM_BENCH_DIR") {
        Some(d) => std::path::PathBuf::from(d),
        None => {
            _tmp = tempfile::tempdir().unwrap();
            _tmp.path().to_path_buf()
        }
    };
    let db = Db::open(&dir, Options::default().sync_writes(true)).unwrap();
    let mut rates: Vec<Vec<f64>> = vec![Vec::new(); THREADS.len()];
    for round in 0..ROUNDS {
        for (j, &t) in THREADS.iter().enumerate() {
            rates[j].push(puts_per_sec(&db, t, puts, round));
        }
    }
    let one = median(&mut rates[0].clone());
    println!(
        "group commit, sync writes, {puts} puts per thread, median of {ROUNDS} alternated rounds:"
    );
    for (j, &t) in THREADS.iter().enumerate() {
        let m = median(&mut rates[j]);
        println!(
            "  {t} writer thread{}: {m:>9.0} puts/s  ({:.2}x one thread)",
            if t == 1 { " " } else { "s" },
            m / one
        );
    }
    db.close().unwrap();
}
