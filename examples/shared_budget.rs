//! One filter memory budget across keyspaces: a store of three keyspaces
//! of the same size, each with uniform filters at 10 bits/key, serves
//! three workloads (`hot`: many gets of missing keys; `warm`: gets of keys
//! it holds; `cold`: a few gets of missing keys). `Db::advise_keyspaces`
//! shares the filters' memory out again by the lookups each keyspace
//! served; the store is reopened with the shares and rebuilt, and the same
//! gets run again: the same total memory, fewer data-block reads.
//!
//! Run with `cargo run --release --example shared_budget [KEYS_PER_KEYSPACE]`
//! (default 1,000,000; the store goes in a temporary directory).

use std::path::Path;

use bloomlsm::workload::{SplitMix64, absent_key, present_key};
use bloomlsm::{Db, FilterOptions, FilterPolicy, Options, Result, WriteBatch};

/// The three keyspaces: name, whether their gets find their keys, and the
/// gets per key they hold (as a divisor: `keys / n` gets).
pub const WORKLOADS: [(&str, bool, u64); 3] =
    [("hot", false, 4), ("warm", true, 20), ("cold", false, 400)];

/// What one round of gets cost, per keyspace in `WORKLOADS` order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Round {
    /// Gets served.
    pub gets: Vec<u64>,
    /// Data blocks read for keys a file did not hold (filter false
    /// positives).
    pub wasted_reads: Vec<u64>,
    /// Data blocks read in all.
    pub block_reads: Vec<u64>,
    /// Filter memory, bytes.
    pub filter_bytes: Vec<u64>,
}

impl Round {
    /// The sum over keyspaces of `v`.
    pub fn total(v: &[u64]) -> u64 {
        v.iter().sum()
    }
}

/// What the example measured.
#[derive(Clone, Debug, PartialEq)]
pub struct Report {
    /// With each keyspace's own uniform filters.
    pub uniform: Round,
    /// With the shared budget, after the rebuild.
    pub shared: Round,
    /// Predicted wasted reads per get over all gets: present designs, each
    /// keyspace's best alone, shared.
    pub predicted: [f64; 3],
    /// Each keyspace's average bits per key under the shared budget.
    pub shared_bits: Vec<f64>,
    /// Each keyspace's levels and their bits per key under the shared
    /// budget, `L1 9.9 L2 8.0`.
    pub shared_levels: Vec<String>,
}

fn options() -> Options {
    Options::default()
        // Levels of 4, 40 and 400 MiB: a keyspace of 10^6 keys spans three.
        .dynamic_level_bytes(false)
        .level1_max_bytes(4 << 20)
        .block_cache_capacity(0) // every data-block read is a read
        .filters(FilterOptions::uniform(Some(FilterPolicy::blocked512(10.0))))
}

/// Builds the store in `dir` with `keys` keys in each keyspace, runs the
/// gets, shares the budget, rebuilds, and runs them again.
pub fn run(dir: &Path, keys: u64) -> Result<Report> {
    {
        let db = Db::open(dir, options())?;
        for (seed, (name, _, _)) in WORKLOADS.iter().enumerate() {
            let ks = db.create_keyspace(name, options())?;
            let mut batch = WriteBatch::new();
            let mut rng = SplitMix64::new(seed as u64);
            let mut value = [0u8; 100];
            for i in 0..keys {
                // Values that do not compress: the levels hold what they say.
                for chunk in value.chunks_mut(8) {
                    chunk.copy_from_slice(&rng.next_u64().to_le_bytes()[..chunk.len()]);
                }
                batch.put_in(&ks, present_key(seed as u64, i), value);
                if batch.len() == 1000 {
                    db.write(std::mem::take(&mut batch))?;
                }
            }
            db.write(batch)?;
            ks.wait_for_compaction()?;
        }
        db.close()?;
    }
    let db = Db::open(dir, options())?;
    let uniform = gets(&db, keys)?;
    let advice = db.advise_keyspaces()?;
    db.close()?;
    let mut opts = options();
    for (name, _, _) in WORKLOADS {
        if let Some(f) = advice.filter_options(name) {
            opts.keyspace_filters.push((name.to_string(), f));
        }
    }
    let db = Db::open(dir, opts)?;
    for (name, _, _) in WORKLOADS {
        db.keyspace(name)?.rebuild_filters()?;
    }
    let shared = gets(&db, keys)?;
    db.close()?;
    let share = |name: &str| advice.keyspaces.iter().find(|k| k.name == name);
    let shared_bits = WORKLOADS
        .iter()
        .map(|(name, _, _)| {
            share(name).map_or(0.0, |k| {
                let n: u64 = k.advice.level_keys.iter().sum();
                k.shared_memory_bytes as f64 * 8.0 / n.max(1) as f64
            })
        })
        .collect();
    let shared_levels = WORKLOADS
        .iter()
        .map(|(name, _, _)| {
            share(name).map_or_else(String::new, |k| {
                k.advice
                    .levels
                    .iter()
                    .zip(&k.shared_bits_per_key)
                    .map(|(l, b)| format!("L{l} {b:.1}"))
                    .collect::<Vec<_>>()
                    .join(" ")
            })
        })
        .collect();
    Ok(Report {
        uniform,
        shared,
        predicted: advice.wasted_reads_per_get,
        shared_bits,
        shared_levels,
    })
}

/// Each keyspace's gets, counted from a reset.
fn gets(db: &Db, keys: u64) -> Result<Round> {
    let mut r = Round::default();
    for (seed, (name, found, per)) in WORKLOADS.iter().enumerate() {
        let ks = db.keyspace(name)?;
        ks.reset_stats();
        let n = keys / per;
        for i in 0..n {
            // Spread over the keys it holds, or over keys it never held.
            let got = if *found {
                ks.get(present_key(seed as u64, i * per % keys))?
            } else {
                ks.get(absent_key(seed as u64, i))?
            };
            assert_eq!(got.is_some(), *found, "{name} {i}");
        }
        let s = ks.stats();
        r.gets.push(n);
        r.wasted_reads.push(s.total.false_positives);
        r.block_reads.push(s.total.block_reads);
        r.filter_bytes.push(s.filter_bytes);
    }
    Ok(r)
}

fn main() -> Result<()> {
    let keys: u64 = match std::env::args().nth(1) {
        Some(a) => a.parse().map_err(|_| {
            bloomlsm::Error::invalid(format!("KEYS_PER_KEYSPACE must be a number, not {a:?}"))
        })?,
        None => 1_000_000,
    };
    let dir = tempfile::tempdir().map_err(|e| bloomlsm::Error::io("a temporary directory", e))?;
    let r = run(dir.path(), keys)?;
    println!("{keys} keys in each keyspace, blocked512 filters at 10 bits/key to start");
    println!(
        "{:<8} {:>8} {:>14} {:>14} {:>12} {:>12} {:>10}",
        "keyspace", "gets", "wasted/get", "wasted/get", "reads/get", "reads/get", "bits/key"
    );
    println!(
        "{:<8} {:>8} {:>14} {:>14} {:>12} {:>12} {:>10}",
        "", "", "uniform", "shared", "uniform", "shared", "shared"
    );
    for (i, (name, _, _)) in WORKLOADS.iter().enumerate() {
        let g = r.uniform.gets[i] as f64;
        println!(
            "{:<8} {:>8} {:>14.4} {:>14.4} {:>12.4} {:>12.4} {:>10.2}",
            name,
            r.uniform.gets[i],
            r.uniform.wasted_reads[i] as f64 / g,
            r.shared.wasted_reads[i] as f64 / g,
            r.uniform.block_reads[i] as f64 / g,
            r.shared.block_reads[i] as f64 / g,
            r.shared_bits[i],
        );
    }
    let g = Round::total(&r.uniform.gets) as f64;
    println!(
        "{:<8} {:>8} {:>14.4} {:>14.4} {:>12.4} {:>12.4}",
        "all",
        g,
        Round::total(&r.uniform.wasted_reads) as f64 / g,
        Round::total(&r.shared.wasted_reads) as f64 / g,
        Round::total(&r.uniform.block_reads) as f64 / g,
        Round::total(&r.shared.block_reads) as f64 / g,
    );
    println!(
        "predicted wasted reads/get: uniform {:.4}, each keyspace's best alone {:.4}, shared {:.4}",
        r.predicted[0], r.predicted[1], r.predicted[2]
    );
    for (i, (name, _, _)) in WORKLOADS.iter().enumerate() {
        println!("{name} shared, bits/key by level: {}", r.shared_levels[i]);
    }
    println!(
        "filter memory: uniform {} bytes, shared {} bytes",
        Round::total(&r.uniform.filter_bytes),
        Round::total(&r.shared.filter_bytes)
    );
    Ok(())
}
