//! The Ribbon filter against its exact model at 10^5 keys, with fixed seeds
//! and enough absent probes for at least 4,000 expected false positives (a
//! 5% tolerance is then more than three standard deviations); its sizes; and
//! how it is recorded.

use bloomlsm::filter::ribbon::{RIBBON_NOMINAL_OVERHEAD, blocks_for, result_bits_for};
use bloomlsm::filter::{Filter, FilterKind, FilterPolicy, FilterTrailer, key_hash, math};

const KEYS: u64 = 100_000;

fn keys(seed: u64, n: u64) -> Vec<u64> {
    (0..n)
        .map(|i| key_hash(format!("ribbon-{seed}-{i:012}").as_bytes()))
        .collect()
}

#[test]
fn fpr_within_five_percent_of_the_model() {
    let present = keys(1, KEYS);
    for fpr in [0.05, 0.01, 0.001] {
        let policy = FilterPolicy::for_fpr(FilterKind::Ribbon, fpr).unwrap();
        let model = policy.predicted_fpr();
        assert!(model <= fpr && model > fpr * 0.99, "{fpr}: {model}");
        let f = Filter::open(&policy.build(&present).unwrap()).unwrap();
        assert!(present.iter().all(|&h| f.may_contain(h)));
        // The filter's own exact model (its column mix) agrees with the policy's.
        assert!((f.predicted_fpr() - model).abs() / model < 0.01);
        let probes = ((4_000.0 / model) as u64).max(1_000_000);
        let absent = keys(2, probes);
        let mut out = vec![false; absent.len()];
        f.may_contain_batch(&absent, &mut out);
        let fp = out.iter().filter(|&&b| b).count() as f64 / probes as f64;
        let rel = fp / model - 1.0;
        let bpk = f.bits_per_key();
        println!(
            "ribbon for {fpr}: {:.3} b/k, measured {:.4}% model {:.4}% ({:+.2}%), {:.3} × log2(1/FPR)",
            bpk,
            fp * 100.0,
            model * 100.0,
            rel * 100.0,
            bpk / (1.0 / fp).log2()
        );
        assert!(rel.abs() <= 0.05, "{fpr}: measured {fp} vs model {model}");
        assert!(bpk / (1.0 / fp).log2() < 1.10, "{fpr}: {bpk} b/k");
    }
}

#[test]
fn any_fractional_bits_per_key() {
    let present = keys(3, 20_000);
    let mut last = (0.0, 1.0);
    for tenth in 5..=160 {
        let bits = tenth as f64 / 10.0;
        let f = Filter::open(&FilterPolicy::ribbon(bits).build(&present).unwrap()).unwrap();
        let (bpk, fpr) = (f.bits_per_key(), f.predicted_fpr());
        // Spends what it is given (block rounding and the extra slots of a
        // small filter aside) and buys a lower FPR with every tenth of a bit.
        assert!((bpk - bits).abs() / bits < 0.03, "{bits}: {bpk}");
        assert!(
            bpk > last.0 && fpr < last.1,
            "{bits}: {bpk} {fpr} after {last:?}"
        );
        // The columns its memory buys over its slots (at most the nominal
        // columns: the block rounding lowers them, not raises the memory).
        let slots = (blocks_for(present.len()) * 128) as f64;
        let columns = (bpk * present.len() as f64 / slots).min(result_bits_for(bits));
        let want = math::ribbon_fpr_of_columns(columns);
        assert!((fpr - want).abs() / want < 0.01, "{bits}: {fpr} vs {want}");
        last = (bpk, fpr);
    }
    assert_eq!(
        math::ribbon_fpr(7.0 * (1.0 + RIBBON_NOMINAL_OVERHEAD)),
        1.0 / 128.0
    );
}

#[test]
fn recorded_in_the_trailer_and_policy_round_trips() {
    let bytes = FilterPolicy::ribbon(8.0).build(&keys(4, 1000)).unwrap();
    let t = FilterTrailer::decode(&bytes).unwrap();
    assert_eq!((t.kind, t.version, t.hash, t.num_probes), (3, 1, 1, 1));
    assert_eq!(t.key_count, 1000);
    assert_eq!(FilterKind::from_byte(3), Some(FilterKind::Ribbon));
    assert_eq!(FilterKind::from_name("ribbon"), Some(FilterKind::Ribbon));
    let p = FilterPolicy::ribbon(8.0);
    assert_eq!(p.num_probes(), 1);
    assert_eq!(p.with_probes(7), p, "k stays 1");
    assert_eq!(p.to_string(), "ribbon(8 bits/key, k=1)");
    // A reader that does not know kind 3 opens it as unusable.
    let mut unknown = bytes.clone();
    *unknown.last_mut().unwrap() = 9;
    let f = Filter::open(&unknown).unwrap();
    assert!(!f.is_usable() && f.may_contain(1));
}
