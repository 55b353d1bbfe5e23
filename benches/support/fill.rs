//! The benches' shared load: `n` keys of `seed`'s present family with 100-byte
//! random values, in batches of 1,000, running due flushes and compactions
//! (`Db::maintain`) every `maintain_every` keys and at the end. Included by
//! `#[path]` in the benches that load a store this way.

use bloomlsm::{Db, WriteBatch};

use bloomlsm::workload::{SplitMix64, present_key};

/// Loads the keys into `db` (see the module docs); returns the value
/// generator, for a bench that goes on drawing from it.
pub fn fill(db: &Db, seed: u64, n: u64, maintain_every: u64) -> SplitMix64 {
    let mut value = vec![0u8; 100];
    let mut rng = SplitMix64::new(seed);
    let mut batch = WriteBatch::new();
    for i in 0..n {
        rng.fill(&mut value);
        batch.put(present_key(seed, i), &value);
        if batch.len() == 1000 {
            db.write(std::mem::take(&mut batch)).unwrap();
        }
        if i % maintain_every == maintain_every - 1 {
            db.maintain().unwrap();
        }
    }
    db.write(batch).unwrap();
    db.maintain().unwrap();
    rng
}
