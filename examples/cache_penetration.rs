//! Cache-penetration guard: requests for ids that do not exist miss the
//! application cache and fall through to the store. Without filters each one
//! costs a data-block read per candidate file; with bloomlsm's per-file filters
//! almost none does, and the store's own counters show it.
//!
//! Run with `cargo run --release --example cache_penetration`.

use std::collections::HashMap;
use std::path::Path;

use bloomlsm::workload::SplitMix64;
use bloomlsm::{Db, FilterOptions, FilterPolicy, Options, Result};

/// What one store saw while serving the request mix.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GuardReport {
    /// Requests for ids that exist (served by the cache or the store).
    pub hits: u64,
    /// Requests for ids that do not exist (all reach the store).
    pub penetrating: u64,
    /// Data blocks the store read for the penetrating requests.
    pub block_reads: u64,
    /// Candidate files whose filter ruled the id out (reads saved).
    pub filter_negatives: u64,
    /// Files the store would have read for them without filters.
    pub candidate_files: u64,
}

impl GuardReport {
    /// Data-block reads per request for a missing id.
    pub fn reads_per_missing(&self) -> f64 {
        self.block_reads as f64 / self.penetrating.max(1) as f64
    }
}

/// Ids are issued with gaps (here: only even ids exist), so requests for
/// missing ids fall inside the files' key ranges and only a filter can tell
/// that a file does not hold them.
fn user_key(id: u64) -> String {
    format!("user:{id:010}")
}

/// Stores `users` records in a store at `dir` (with `filters`), puts the
/// first 1% in an in-memory cache, then serves `requests` requests of which
/// every other one asks for an id that does not exist (an attacker's, or a
/// buggy client's), and reports what reached the disk.
pub fn run(dir: &Path, filters: FilterOptions, users: u64, requests: u64) -> Result<GuardReport> {
    let opts = Options::default()
        .write_buffer_size(256 << 10)
        .target_file_size(256 << 10)
        .level1_max_bytes(1 << 20)
        // Levels from L1 down: the tree this example's numbers describe.
        .dynamic_level_bytes(false)
        .block_cache_capacity(0) // every data-block read is a real read
        .filters(filters);
    let db = Db::open(dir, opts)?;
    let mut batch = bloomlsm::WriteBatch::new();
    for i in 0..users {
        let id = 2 * i;
        let record = format!("{{\"id\":{id},\"name\":\"user {id}\",\"plan\":\"free\"}}");
        batch.put(user_key(id).as_bytes(), record.as_bytes());
        if batch.len() == 1000 {
            db.write(std::mem::take(&mut batch))?;
        }
    }
    db.write(batch)?;
    db.flush()?;

    let mut cache: HashMap<String, bytes::Bytes> = HashMap::new();
    for i in 0..users / 100 {
        if let Some(v) = db.get(user_key(2 * i))? {
            cache.insert(user_key(2 * i), v);
        }
    }

    db.reset_stats();
    let mut rng = SplitMix64::new(7);
    let mut report = GuardReport {
        hits: 0,
        penetrating: 0,
        block_reads: 0,
        filter_negatives: 0,
        candidate_files: 0,
    };
    for r in 0..requests {
        // Every other request asks for an odd id, which does not exist.
        let id = 2 * rng.below(users) + (r % 2);
        let key = user_key(id);
        if cache.contains_key(&key) {
            report.hits += 1;
            continue;
        }
        match db.get(&key)? {
            Some(_) => report.hits += 1,
            None => report.penetrating += 1,
        }
    }
    let s = db.stats();
    report.block_reads = s.missing_get_block_reads;
    report.filter_negatives = s.total.filter_negatives;
    report.candidate_files = s.total.filter_checks + s.total.unfiltered_reads;
    db.close()?;
    Ok(report)
}

fn print(name: &str, r: &GuardReport) {
    println!(
        "{name:<22} {:>7} hits  {:>7} missing-id requests  {:>7} data-block reads ({:.4} per missing id)  {:>7} reads saved by filters",
        r.hits,
        r.penetrating,
        r.block_reads,
        r.reads_per_missing(),
        r.filter_negatives
    );
}

fn main() -> Result<()> {
    let (users, requests) = (100_000, 100_000);
    let with = tempfile::tempdir().expect("temp dir");
    let without = tempfile::tempdir().expect("temp dir");
    let guarded = run(
        with.path(),
        FilterOptions::uniform(Some(FilterPolicy::blocked512(16.0))),
        users,
        requests,
    )?;
    let open = run(without.path(), FilterOptions::none(), users, requests)?;
    println!("{users} users, {requests} requests, half of them for ids that do not exist\n");
    print("no filters", &open);
    print("blocked512, 16 b/key", &guarded);
    println!(
        "\nThe filters turned {:.2} data-block reads per missing id into {:.4}.",
        open.reads_per_missing(),
        guarded.reads_per_missing()
    );
    Ok(())
}
