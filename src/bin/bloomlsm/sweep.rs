//! The filter-only FPR sweep of `bench --plot`: for each filter kind and
//! bits per key, one filter over present keys probed with absent keys, next
//! to the model's prediction.

use bloomlsm::filter::{Filter, FilterKind, FilterPolicy, key_hash, math};
use bloomlsm::workload::{absent_key, present_key};
use rayon::prelude::*;

use crate::report::{TextTable, count, percent};

/// One point of the filter-only sweep.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SweepPoint {
    /// Filter kind.
    pub kind: FilterKind,
    /// Bits per key asked for.
    pub requested_bits_per_key: f64,
    /// Bits per key the filter really has (rounded to whole lines / words).
    pub bits_per_key: f64,
    /// Probes per key.
    pub probes_per_key: u32,
    /// The model's FPR for the filter's real size.
    pub predicted_fpr: f64,
    /// Absent keys probed.
    pub probes: u64,
    /// Of which the filter let through.
    pub false_positives: u64,
}

impl SweepPoint {
    /// The measured FPR.
    pub fn measured_fpr(&self) -> f64 {
        self.false_positives as f64 / self.probes.max(1) as f64
    }
}

/// The filter-only sweep: for each kind and each bits/key, builds a filter
/// over `keys` present keys and probes it with `probes` absent keys.
pub fn fpr_sweep(
    kinds: &[FilterKind],
    bits: &[f64],
    keys: u64,
    probes: u64,
    seed: u64,
) -> Vec<SweepPoint> {
    let present: Vec<u64> = (0..keys).map(|i| key_hash(&present_key(seed, i))).collect();
    let absent: Vec<u64> = (0..probes)
        .map(|i| key_hash(&absent_key(seed, i)))
        .collect();
    let jobs: Vec<(FilterKind, f64)> = kinds
        .iter()
        .flat_map(|&k| bits.iter().map(move |&b| (k, b)))
        .collect();
    jobs.par_iter()
        .map(|&(kind, b)| {
            let policy = FilterPolicy::new(kind, b);
            let bytes = policy.build(&present).expect("a built-in family builds");
            let f = Filter::open(&bytes).expect("a freshly built filter opens");
            let fp = absent.iter().filter(|&&h| f.may_contain(h)).count() as u64;
            SweepPoint {
                kind,
                requested_bits_per_key: b,
                bits_per_key: f.bits_per_key(),
                probes_per_key: f.num_probes(),
                predicted_fpr: f.predicted_fpr(),
                probes,
                false_positives: fp,
            }
        })
        .collect()
}

/// The `--plot` sweep as a table.
pub fn sweep_table(sweep: &[SweepPoint]) -> TextTable {
    let mut t = TextTable::new(&[
        "filter",
        "bits/key",
        "k",
        "pred FPR",
        "meas FPR",
        "probes",
        "false pos",
    ]);
    for p in sweep {
        t.row(vec![
            p.kind.name().to_string(),
            format!("{:.2}", p.bits_per_key),
            p.probes_per_key.to_string(),
            percent(Some(p.predicted_fpr)),
            percent(Some(p.measured_fpr())),
            count(p.probes),
            count(p.false_positives),
        ]);
    }
    t
}

/// The model's FPR at `bits_per_key` with the best probe count (curves of the
/// chart).
pub fn model_curve(kind: FilterKind, bits_per_key: f64) -> f64 {
    math::best_fpr(kind, bits_per_key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sweep_measures_near_the_model() {
        let s = fpr_sweep(&[FilterKind::Blocked512], &[8.0], 20_000, 100_000, 1);
        let p = s[0];
        assert!(p.false_positives > 0);
        let ratio = p.measured_fpr() / p.predicted_fpr;
        assert!((0.8..1.25).contains(&ratio), "{p:?}");
    }
}
