//! The benches' writer threads: puts per second of `threads` threads
//! writing `puts` 100-byte values each (fresh keys per round), and the
//! median of a bench's rounds. Included by `#[path]` in the benches that
//! time concurrent writers (group commit, to a disk and to a bucket).

use std::time::Instant;

use bloomlsm::Db;

/// Puts per second of `threads` writers, `puts` each, into `db` (synced if
/// the store syncs its writes).
pub fn puts_per_sec(db: &Db, threads: usize, puts: u64, round: usize) -> f64 {
    let value = [7u8; 100];
    let t = Instant::now();
    std::thread::scope(|s| {
        for w in 0..threads {
            s.spawn(move || {
                for i in 0..puts {
                    let key = format!("r{round}-t{threads}-w{w}-{i:08}");
                    db.put(key, value).unwrap();
                }
            });
        }
    });
    (threads as u64 * puts) as f64 / t.elapsed().as_secs_f64()
}

/// The median of `v` (sorted in place).
pub fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}
