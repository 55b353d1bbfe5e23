//! The examples' logic, run through the same code the examples' `main` calls
//! (each example file is included as a module), on smaller inputs.

#[allow(dead_code)]
#[path = "../examples/cache_penetration.rs"]
mod cache_penetration;

#[allow(dead_code)]
#[path = "../examples/url_dedup.rs"]
mod url_dedup;

#[allow(dead_code)]
#[path = "../examples/shared_budget.rs"]
mod shared_budget;

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

/// The README's Rust examples name no crate but bloomlsm and the standard
/// library, so each compiles as pasted into a crate whose one dependency is
/// bloomlsm. (The README is also a doctest, compiled with this crate's
/// dev-dependencies, which cannot catch a path into one of them.)
#[test]
fn readme_rust_examples_need_only_bloomlsm() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md"))
        .expect("read README.md");
    let blocks = rust_blocks(&readme);
    assert!(!blocks.is_empty(), "no ```rust block in README.md");
    for block in blocks {
        let roots = path_roots(&block);
        let foreign: Vec<&String> = roots
            .iter()
            .filter(|r| {
                !["std", "core", "alloc", "bloomlsm", "crate", "self", "super"]
                    .contains(&r.as_str())
            })
            .collect();
        assert!(
            foreign.is_empty(),
            "a README example names {foreign:?}, which a crate depending on bloomlsm alone lacks"
        );
    }
}

/// The text of every ```` ```rust ```` block.
fn rust_blocks(markdown: &str) -> Vec<String> {
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for line in markdown.lines() {
        match &mut current {
            None if line.trim_start().starts_with("```rust") => current = Some(String::new()),
            None => {}
            Some(_) if line.trim_start().starts_with("```") => blocks.extend(current.take()),
            Some(b) => {
                b.push_str(line);
                b.push('\n');
            }
        }
    }
    blocks
}

/// The lower-case first segments of the paths in `code` (`tempfile` of
/// `tempfile::tempdir()`, `std` of `use std::fs`): the crates and modules
/// it names, comments left out.
fn path_roots(code: &str) -> Vec<String> {
    let mut roots = Vec::new();
    for line in code.lines() {
        let line = line.split("//").next().unwrap_or_default();
        let b = line.as_bytes();
        let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
        let mut i = 0;
        while i < b.len() {
            if !(b[i].is_ascii_lowercase() || b[i] == b'_')
                || (i > 0 && (ident(b[i - 1]) || b[i - 1] == b':' || b[i - 1] == b'.'))
            {
                i += 1;
                continue;
            }
            let start = i;
            while i < b.len() && ident(b[i]) {
                i += 1;
            }
            // `x::<T>` is a turbofish, not a path.
            if line[i..].starts_with("::") && !line[i..].starts_with("::<") {
                roots.push(line[start..i].to_string());
            }
        }
    }
    roots
}

#[test]
fn path_roots_finds_the_crates_a_snippet_names() {
    let code = "let d = tempfile::tempdir()?; // std::x\nuse bloomlsm::{Db};\nlet o = Options::default();\na.b::<u8>();\nf::<u8>();\n";
    assert_eq!(path_roots(code), ["tempfile", "bloomlsm"]);
}

#[test]
fn shared_budget_reads_less_at_the_same_memory() {
    let dir = tempfile::tempdir().unwrap();
    let r = shared_budget::run(dir.path(), 40_000).unwrap();
    let total = shared_budget::Round::total;
    assert_eq!(r.uniform.gets, r.shared.gets);
    assert!(
        total(&r.shared.wasted_reads) < total(&r.uniform.wasted_reads),
        "{r:?}"
    );
    let memory = total(&r.shared.filter_bytes) as f64 / total(&r.uniform.filter_bytes) as f64;
    assert!((0.98..=1.02).contains(&memory), "{r:?}");
    // The keyspace with the most gets of missing keys gets the most bits.
    assert!(r.shared_bits[0] > r.shared_bits[2], "{r:?}");
}
