//! A crawler's URL de-duplicator: every discovered link is checked against the
//! store of URLs already seen; only new ones are queued. Most checks are for
//! URLs the store has never seen, which is exactly the lookup a Bloom filter
//! answers without touching the disk.
//!
//! Run with `cargo run --release --example url_dedup`.

use std::path::Path;

use bloomlsm::workload::SplitMix64;
use bloomlsm::{Db, Options, Result};

/// What the de-duplicator did.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DedupReport {
    /// Links discovered (with repeats).
    pub discovered: u64,
    /// Distinct URLs queued for crawling.
    pub queued: u64,
    /// Links skipped because the URL was already seen.
    pub duplicates: u64,
    /// Lookups for unseen URLs that a filter answered without a data-block read.
    pub filter_negatives: u64,
    /// Data-block reads made by lookups for unseen URLs.
    pub wasted_reads: u64,
}

/// The next discovered link, after `discovered_so_far` others: a third of
/// links point at a page linked before (a repeat, or a page not linked yet
/// if the draw lands past what has been seen), the rest at fresh pages.
pub fn link(rng: &mut SplitMix64, discovered_so_far: u64) -> String {
    let page = if rng.below(3) == 0 {
        rng.below(discovered_so_far / 2 + 1)
    } else {
        discovered_so_far
    };
    let host = page % 300;
    format!("https://site{host}.example/articles/{page}?ref=feed")
}

/// Crawls `links` synthetic links through a store at `dir` and reports.
pub fn run(dir: &Path, links: u64, seed: u64) -> Result<DedupReport> {
    let opts = Options::default()
        .write_buffer_size(512 << 10)
        .target_file_size(512 << 10)
        .level1_max_bytes(2 << 20)
        // Levels from L1 down: the tree this example's numbers describe.
        .dynamic_level_bytes(false)
        .block_cache_capacity(0);
    let db = Db::open(dir, opts)?;
    let mut rng = SplitMix64::new(seed);
    let mut r = DedupReport {
        discovered: 0,
        queued: 0,
        duplicates: 0,
        filter_negatives: 0,
        wasted_reads: 0,
    };
    for n in 0..links {
        let url = link(&mut rng, n);
        r.discovered += 1;
        if db.get(&url)?.is_some() {
            r.duplicates += 1;
        } else {
            // Remember when we first saw it; a real crawler would enqueue it.
            db.put(&url, n.to_le_bytes())?;
            r.queued += 1;
        }
    }
    let s = db.stats();
    r.filter_negatives = s.total.filter_negatives;
    r.wasted_reads = s.missing_get_block_reads;
    db.close()?;
    Ok(r)
}

fn main() -> Result<()> {
    let dir = tempfile::tempdir().expect("temp dir");
    let r = run(dir.path(), 200_000, 1)?;
    println!(
        "discovered {} links: {} new URLs queued, {} duplicates skipped",
        r.discovered, r.queued, r.duplicates
    );
    println!(
        "lookups of unseen URLs: {} answered by a filter with no disk read, {} data-block reads wasted on false positives",
        r.filter_negatives, r.wasted_reads
    );
    Ok(())
}
