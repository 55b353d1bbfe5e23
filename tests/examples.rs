//! The examples' logic, run through the same code the examples' `main` calls
//! (each example file is included as a module), on smaller inputs.

#[allow(dead_code)]
#[path = "../examples/cache_penetration.rs"]
mod cache_penetration;

#[allow(dead_code)]
#[path = "../examples/url_dedup.rs"]
mod url_dedup;

use std::collections::HashSet;

use bloomlsm::workload::SplitMix64;
use bloomlsm::{FilterOptions, FilterPolicy};

#[test]
fn cache_penetration_guard_stops_missing_ids_before_the_disk() {
    let (users, requests) = (20_000, 20_000);
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    let guarded = cache_penetration::run(
        a.path(),
        FilterOptions::uniform(Some(FilterPolicy::blocked512(16.0))),
        users,
        requests,
    )
    .unwrap();
    let open = cache_penetration::run(b.path(), FilterOptions::none(), users, requests).unwrap();
    assert_eq!(guarded.penetrating, requests / 2);
    assert_eq!(open.penetrating, requests / 2);
    // Without filters every missing id costs at least one read per file whose
    // range holds it; with 16 bits/key (FPR ≈ 0.08%) almost none do.
    assert!(open.reads_per_missing() >= 0.99, "{open:?}");
    assert!(guarded.reads_per_missing() < 0.01, "{guarded:?}");
    assert!(guarded.filter_negatives >= guarded.penetrating * 99 / 100);
}

#[test]
fn url_dedup_queues_each_url_once() {
    let dir = tempfile::tempdir().unwrap();
    let links = 30_000;
    let r = url_dedup::run(dir.path(), links, 5).unwrap();
    // The same link stream, de-duplicated in memory.
    let mut rng = SplitMix64::new(5);
    let distinct: HashSet<String> = (0..links).map(|n| url_dedup::link(&mut rng, n)).collect();
    assert_eq!(r.discovered, links);
    assert_eq!(r.queued, distinct.len() as u64);
    assert_eq!(r.queued + r.duplicates, links);
    assert!(r.duplicates > links / 10, "{r:?}");
    // Lookups of unseen URLs were mostly answered by filters.
    assert!(r.filter_negatives > 0, "{r:?}");
    assert!(r.wasted_reads < r.filter_negatives / 20, "{r:?}");
}

#[allow(dead_code)]
#[path = "../examples/xor_filter.rs"]
mod xor_filter;

#[test]
fn a_filter_family_from_outside_the_crate_serves_a_store() {
    let kind = xor_filter::xor8();
    assert_eq!(bloomlsm::FilterKind::from_name("xor8"), Some(kind));
    assert!(bloomlsm::filter_families().contains(&kind));
    let dir = tempfile::tempdir().unwrap();
    let r = xor_filter::run(dir.path(), FilterPolicy::new(kind, 10.0), 20_000, 20_000).unwrap();
    // 1.23 one-byte slots per key and 32 more, spread over about ten files.
    assert!((9.8..10.6).contains(&r.bits_per_key), "{r:?}");
    // Nearly every missing key meets a filter (a few fall between files);
    // the FPR is 2^-8 = 0.39%.
    assert!(r.checks >= 19_000, "{r:?}");
    let fpr = r.false_positives as f64 / r.checks as f64;
    assert!((0.001..0.008).contains(&fpr), "{r:?}");
}
