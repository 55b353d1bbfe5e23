//! The worker threads: each claims an operation, draws its kind from the
//! seed and runs it ([`writes`], [`reads`], [`admin`], [`scratch`]) until
//! the run's bound or the first failure.

use std::time::{Duration, Instant};

use super::failure::Checked;
use super::ops::Op;
use super::worker::{Shared, Worker};
use super::{admin, reads, scratch, writes};

/// Runs `threads` workers on `sh` until the run's bound or the first
/// failure, giving `report` the counts every `every` meanwhile. An error
/// of `report` stops the workers and is returned.
pub fn run_workers(
    sh: &Shared,
    threads: u32,
    every: Duration,
    mut report: impl FnMut(&[u64]) -> std::io::Result<()>,
) -> std::io::Result<()> {
    std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|t| s.spawn(move || run(Worker::new(sh, t))))
            .collect();
        let mut last = Instant::now();
        while !workers.iter().all(|h| h.is_finished()) {
            std::thread::sleep(Duration::from_millis(5));
            if last.elapsed() >= every {
                last = Instant::now();
                if let Err(e) = report(&sh.counts.snapshot()) {
                    sh.stop();
                    return Err(e);
                }
            }
        }
        Ok(())
    })
}

/// One worker's operations, until the run's bound or a failure.
fn run(mut w: Worker) {
    while w.sh.claim() {
        // A child of --kill never reopens: its parent does, after each kill.
        let op = Op::draw(&mut w.rng, !w.sh.args.child);
        match one(&mut w, op) {
            Ok(()) => w.sh.counts.add(op),
            Err(f) => {
                w.sh.fail(f);
                return;
            }
        }
    }
}

/// Runs one operation of kind `op`.
fn one(w: &mut Worker, op: Op) -> Checked {
    if op == Op::Reopen {
        return admin::reopen(w.sh);
    }
    let sh = w.sh;
    sh.with_store(|store| match op {
        Op::Put | Op::Delete => writes::put_or_delete(w, store, op == Op::Put),
        Op::DeleteRange => writes::delete_range(w, store),
        Op::Batch => writes::batch(w, store),
        Op::Ingest => writes::ingest(w, store),
        Op::Get => reads::get(w, store),
        Op::MultiGet => reads::multi_get(w, store),
        Op::Scan => reads::scan(w, store, false),
        Op::ScanBackward => reads::scan(w, store, true),
        Op::ScanBothEnds => reads::scan_both_ends(w, store),
        Op::PrefixScan => reads::prefix_scan(w, store),
        Op::Seek => reads::seek(w, store),
        Op::Snapshot => reads::snapshot(w, store),
        Op::Flush | Op::Compact | Op::Maintain | Op::RebuildFilters => {
            admin::background_work(w, store, op)
        }
        Op::Checkpoint => admin::checkpoint(w, store),
        Op::Keyspace => scratch::create_or_drop(w, store),
        Op::Reopen => Ok(()),
    })
}
