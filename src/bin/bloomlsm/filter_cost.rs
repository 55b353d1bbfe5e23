//! The CPU cost of a store's filters: what building them cost per key and
//! what an absent-key probe costs, each weighted as the store uses its
//! filters (build by the keys each level holds, probe by the filter checks
//! each level got). Each policy is timed on one filter of [`KEYS`] keys, the
//! size of the filter of a 2 MiB table of small records.

use std::collections::BTreeMap;
use std::hint::black_box;
use std::time::Instant;

use bloomlsm::filter::{Filter, FilterKind, FilterPolicy};
use bloomlsm::workload::mix64;
use bloomlsm::{FileStats, Stats};

/// Keys of the timed filters.
pub const KEYS: usize = 1 << 16;
/// Absent-key probes timed per policy.
const PROBES: usize = 1 << 20;

/// Build and probe cost of one policy.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PolicyCost {
    /// ns per key to build a filter (best of 3).
    pub build_ns_per_key: f64,
    /// ns per absent-key probe, one at a time (best of 3).
    pub probe_ns: f64,
}

/// Times `policy` (see the module docs).
pub fn time_policy(policy: FilterPolicy) -> PolicyCost {
    let hashes: Vec<u64> = (0..KEYS as u64).map(|i| mix64(i ^ 0x5eed)).collect();
    let absent: Vec<u64> = (0..PROBES as u64).map(|i| mix64(!i)).collect();
    let mut build = f64::INFINITY;
    let mut bytes = Vec::new();
    for _ in 0..3 {
        let t = Instant::now();
        bytes = black_box(
            policy
                .build(black_box(&hashes))
                .expect("a built-in family builds"),
        );
        build = build.min(t.elapsed().as_nanos() as f64 / KEYS as f64);
    }
    let filter = Filter::open(&bytes).expect("a filter this build made opens");
    let mut probe = f64::INFINITY;
    for _ in 0..3 {
        let t = Instant::now();
        let mut hits = 0u64;
        for &h in &absent {
            hits += u64::from(filter.may_contain(black_box(h)));
        }
        black_box(hits);
        probe = probe.min(t.elapsed().as_nanos() as f64 / PROBES as f64);
    }
    PolicyCost {
        build_ns_per_key: build,
        probe_ns: probe,
    }
}

/// The store's filter cost: build ns per key and probe ns (`None` if no
/// filter was checked), weighted as the module docs say; `None` without
/// filters. `files` gives each level's policy (the one holding most of its
/// keys), `missing` the checks per level.
pub fn store_cost(files: &[FileStats], missing: &Stats) -> Option<(f64, Option<f64>)> {
    // Per level: keys per (kind, bits) policy.
    let mut by_level: BTreeMap<usize, BTreeMap<(String, u64), u64>> = BTreeMap::new();
    for f in files.iter().filter(|f| f.filter_usable) {
        let bits = (f.bits_per_key * 100.0).round() as u64;
        *by_level
            .entry(f.level)
            .or_default()
            .entry((f.filter.clone(), bits))
            .or_default() += f.entries;
    }
    let mut cache: BTreeMap<(String, u64), PolicyCost> = BTreeMap::new();
    let (mut build, mut keys, mut probe, mut checks) = (0.0, 0u64, 0.0, 0u64);
    for (level, policies) in &by_level {
        let ((name, bits), _) = policies.iter().max_by_key(|(_, n)| **n)?;
        let kind = FilterKind::from_name(name)?;
        let cost = *cache
            .entry((name.clone(), *bits))
            .or_insert_with(|| time_policy(FilterPolicy::new(kind, *bits as f64 / 100.0)));
        let level_keys: u64 = policies.values().sum();
        build += cost.build_ns_per_key * level_keys as f64;
        keys += level_keys;
        let c = missing.levels.get(*level).map_or(0, |l| l.io.filter_checks);
        probe += cost.probe_ns * c as f64;
        checks += c;
    }
    (keys > 0).then(|| {
        (
            build / keys as f64,
            (checks > 0).then(|| probe / checks as f64),
        )
    })
}
