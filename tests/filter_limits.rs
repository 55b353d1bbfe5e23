//! The limits of every public filter constructor, decoder and model: what is
//! rejected, what is clamped, and that nothing out of range panics, hangs or
//! reaches the probes.

use bloomlsm::Error;
use bloomlsm::filter::math::{
    blocked512_fpr, blocked512_putze_fpr, classic_fpr, full_line_bits_per_key,
};
use bloomlsm::filter::{
    Blocked512Filter, BloomFilter, FILTER_TRAILER_LEN, Filter, FilterKind, FilterPolicy,
    FilterTrailer, MAX_BITS_PER_KEY, MAX_PROBES, MIN_BITS_PER_KEY, blocked, bloom, key_hash,
};

const KINDS: [FilterKind; 2] = [FilterKind::Blocked512, FilterKind::Bloom];

/// A false-positive model: bits per key and k to a rate.
type Model = fn(f64, u32) -> f64;

/// Probe counts outside 1..=MAX_PROBES. Among them 33, 40 and 64: an AVX2
/// probe that took them would read past its 32-entry table and lose keys.
const BAD_K: [u32; 10] = [0, 31, 32, 33, 40, 64, 255, 256, 257, u32::MAX];

fn hashes(n: u32) -> Vec<u64> {
    (0..n).map(|i| key_hash(&i.to_le_bytes())).collect()
}

/// The raw constructors of `kind`: `from_hashes`, encoded, and `build`.
fn raw_build(kind: FilterKind, hs: &[u64], bits: f64, k: u32) -> Result<Vec<u8>, Error> {
    let (a, b) = match kind {
        FilterKind::Blocked512 => (
            Blocked512Filter::from_hashes(hs, bits, k).map(|f| {
                let mut v = Vec::new();
                f.encode_to(&mut v);
                v
            }),
            blocked::build(hs, bits, k),
        ),
        FilterKind::Bloom => (
            BloomFilter::from_hashes(hs, bits, k).map(|f| {
                let mut v = Vec::new();
                f.encode_to(&mut v);
                v
            }),
            bloom::build(hs, bits, k),
        ),
        FilterKind::Ribbon => unreachable!("ribbon takes no k (always 1)"),
        _ => unreachable!("raw constructors with a k: blocked512 and bloom"),
    };
    match (a, b) {
        (Ok(a), Ok(b)) => {
            assert_eq!(
                a, b,
                "{kind} bits={bits} k={k}: from_hashes and build differ"
            );
            Ok(a)
        }
        (Err(a), Err(b)) => {
            assert_eq!(a.to_string(), b.to_string(), "{kind} bits={bits} k={k}");
            Err(a)
        }
        (a, b) => panic!("{kind} bits={bits} k={k}: from_hashes {a:?}, build {b:?}"),
    }
}

fn assert_invalid(r: Result<Vec<u8>, Error>, what: &str) {
    match r {
        Err(Error::InvalidArgument(msg)) => assert!(msg.contains(what), "{msg}"),
        other => panic!("expected InvalidArgument mentioning {what:?}, got {other:?}"),
    }
}

#[test]
fn raw_constructors_reject_k_out_of_range() {
    let hs = hashes(1000);
    for kind in KINDS {
        for k in BAD_K {
            assert_invalid(raw_build(kind, &hs, 10.0, k), "probes per key");
            assert_invalid(raw_build(kind, &[], 10.0, k), "probes per key");
        }
    }
}

#[test]
fn raw_constructors_reject_bits_per_key_out_of_range() {
    let hs = hashes(100);
    let bad = [
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
        -1.0,
        0.0,
        f64::MIN_POSITIVE,
        MIN_BITS_PER_KEY - 1e-9,
        MAX_BITS_PER_KEY + 1e-9,
        1e300,
    ];
    for kind in KINDS {
        for bits in bad {
            assert_invalid(raw_build(kind, &hs, bits, 6), "bits per key");
        }
    }
}

#[test]
fn every_accepted_k_finds_every_key_on_every_path() {
    let hs = hashes(1000);
    let others: Vec<u64> = (1000..3000u32)
        .map(|i| key_hash(&i.to_le_bytes()))
        .collect();
    for kind in KINDS {
        for bits in [MIN_BITS_PER_KEY, 10.0, MAX_BITS_PER_KEY] {
            for k in 1..=MAX_PROBES {
                let bytes = raw_build(kind, &hs, bits, k).unwrap();
                assert_eq!(bytes[bytes.len() - 4], k as u8, "stored k");
                let f = Filter::open(&bytes).unwrap();
                assert_eq!(f.num_probes(), k);
                let found = hs.iter().filter(|&&h| f.may_contain(h)).count();
                assert_eq!(found, hs.len(), "{kind} bits={bits} k={k}");
                let mut out = vec![false; hs.len()];
                f.may_contain_batch(&hs, &mut out);
                assert!(out.iter().all(|&x| x), "{kind} bits={bits} k={k} batch");
                if let Filter::Blocked512(b) = &f {
                    for &h in hs.iter().chain(&others) {
                        assert_eq!(b.may_contain(h), b.may_contain_portable(h), "k={k}");
                    }
                }
            }
        }
    }
}

#[test]
fn policies_clamp_instead() {
    for kind in KINDS {
        let p = FilterPolicy::new(kind, 10.0);
        assert_eq!(p.with_probes(0).num_probes(), 1);
        assert_eq!(p.with_probes(1).num_probes(), 1);
        assert_eq!(p.with_probes(MAX_PROBES).num_probes(), MAX_PROBES);
        for k in BAD_K.into_iter().filter(|&k| k > 0) {
            assert_eq!(p.with_probes(k).num_probes(), MAX_PROBES, "k={k}");
        }
        for (bits, want) in [
            (f64::NAN, MIN_BITS_PER_KEY),
            (f64::NEG_INFINITY, MIN_BITS_PER_KEY),
            (-1.0, MIN_BITS_PER_KEY),
            (0.0, MIN_BITS_PER_KEY),
            (f64::MIN_POSITIVE, MIN_BITS_PER_KEY),
            (MAX_BITS_PER_KEY + 1.0, MAX_BITS_PER_KEY),
            (f64::INFINITY, MAX_BITS_PER_KEY),
        ] {
            assert_eq!(FilterPolicy::new(kind, bits).bits_per_key(), want, "{bits}");
            assert_eq!(p.with_bits_per_key(bits).bits_per_key(), want, "{bits}");
        }
        // Targets no filter of the kind reaches are refused, naming the range.
        let min = kind.min_fpr();
        assert!(min > 0.0 && min < 1e-6, "{kind}: {min}");
        for fpr in [
            f64::NAN,
            0.0,
            -0.5,
            f64::NEG_INFINITY,
            min / 2.0,
            1e-300,
            1.0,
            2.0,
            f64::INFINITY,
        ] {
            match FilterPolicy::for_fpr(kind, fpr) {
                Err(Error::InvalidArgument(what)) => {
                    assert!(what.contains("is out of range"), "{what}");
                    assert!(
                        what.contains(&format!("at least {min:.3e}")) && what.contains("below 1"),
                        "{what}"
                    );
                }
                other => panic!("{kind} fpr {fpr}: {other:?}"),
            }
        }
        // The ends of the range: the largest and the smallest filter.
        for (fpr, want) in [(min, MAX_BITS_PER_KEY), (0.999, MIN_BITS_PER_KEY)] {
            assert_eq!(
                FilterPolicy::for_fpr(kind, fpr).unwrap().bits_per_key(),
                want,
                "{fpr}"
            );
        }
        // Every clamped policy builds a filter that finds its keys.
        let hs = hashes(500);
        for policy in [
            FilterPolicy::new(kind, f64::NAN).with_probes(u32::MAX),
            FilterPolicy::new(kind, f64::INFINITY).with_probes(0),
            FilterPolicy::for_fpr(kind, min).unwrap(),
        ] {
            let f = Filter::open(&policy.build(&hs).unwrap()).unwrap();
            assert_eq!(f.num_probes(), policy.num_probes());
            assert!(hs.iter().all(|&h| f.may_contain(h)), "{policy}");
        }
    }
}

#[test]
fn sizing_helpers_clamp_bits_per_key() {
    // 1000 keys at 0.5 bits/key is 500 bits: one line, 500 bits.
    for bits in [f64::NAN, f64::NEG_INFINITY, -3.0, 0.0, 0.25] {
        assert_eq!(blocked::lines_for(1000, bits), 1, "{bits}");
        assert_eq!(bloom::bits_for(1000, bits), 500, "{bits}");
    }
    // 1000 keys at 100 bits/key is 100,000 bits: 196 lines.
    for bits in [f64::INFINITY, 1e300, 100.5] {
        assert_eq!(blocked::lines_for(1000, bits), 196, "{bits}");
        assert_eq!(bloom::bits_for(1000, bits), 100_000, "{bits}");
    }
    assert_eq!(blocked::lines_for(0, f64::NAN), 0);
    assert_eq!(bloom::bits_for(0, f64::NAN), 0);
}

/// Replaces the k byte of a serialized filter's trailer.
fn with_stored_k(bytes: &[u8], k: u8) -> Vec<u8> {
    let mut v = bytes.to_vec();
    let at = v.len() - FILTER_TRAILER_LEN + 16;
    v[at] = k;
    assert_eq!(FilterTrailer::decode(&v).unwrap().num_probes, k);
    v
}

#[test]
fn stored_k_out_of_range_is_an_error() {
    let hs = hashes(300);
    for kind in KINDS {
        let good = FilterPolicy::new(kind, 10.0).build(&hs).unwrap();
        for k in [0u8, 31, 32, 33, 40, 64, 128, 255] {
            let err = Filter::open(&with_stored_k(&good, k)).unwrap_err();
            assert_eq!(
                err.0,
                format!("{kind} filter has {k} probes (1..={MAX_PROBES})")
            );
        }
        // The limits themselves open (as a different filter: no false-negative
        // promise for keys built with another k), and probe without panicking.
        for k in [1u8, MAX_PROBES as u8] {
            let f = Filter::open(&with_stored_k(&good, k)).unwrap();
            assert_eq!(f.num_probes(), u32::from(k));
            let n = hs.iter().filter(|&&h| f.may_contain(h)).count();
            assert!(n <= hs.len());
            if let Filter::Blocked512(b) = &f {
                assert!(
                    hs.iter()
                        .all(|&h| b.may_contain(h) == b.may_contain_portable(h))
                );
            }
        }
    }
}

#[test]
fn models_take_any_input() {
    let bits = [
        f64::NEG_INFINITY,
        -1.0,
        0.0,
        1e-300,
        0.01,
        0.3,
        2.0,
        10.0,
        1e300,
        f64::INFINITY,
    ];
    let ks = [0, 1, 6, 20, 21, 30, 31, 64, 255, u32::MAX];
    let models: [(&str, Model); 3] = [
        ("classic", classic_fpr),
        ("blocked512", blocked512_fpr),
        ("putze", blocked512_putze_fpr),
    ];
    for (name, model) in models {
        for b in bits {
            let at_max = model(b, MAX_PROBES);
            for k in ks {
                let r = model(b, k);
                assert!((0.0..=1.0).contains(&r), "{name}({b}, {k}) = {r}");
                if b <= 0.0 || k == 0 {
                    assert_eq!(r, 1.0, "{name}({b}, {k}): no filter");
                }
                if k > MAX_PROBES {
                    assert_eq!(r, at_max, "{name}({b}, {k})");
                }
            }
            assert!(model(f64::NAN, 6).is_nan(), "{name}");
            assert_eq!(model(f64::NAN, 0), 1.0, "{name}");
        }
        assert!(model(f64::INFINITY, 6) < 1e-12, "{name}: infinite memory");
    }
    // At or below the cutoff the blocked models answer 1.0 without summing;
    // just above it their sums give 1.0 too, to within rounding: the exact
    // model's closed form (k <= 20) exactly, its Markov chain (k > 20) to
    // 1e-12, and Putze's to 1e-9 (its Poisson weights, summed in log space
    // over up to ~35k terms, add up to 1 - 8.6e-11 at k = 1).
    assert_eq!(full_line_bits_per_key(1), 1.0 / 64.0);
    assert!((full_line_bits_per_key(30) - 0.455).abs() < 1e-3);
    assert_eq!(full_line_bits_per_key(u32::MAX), full_line_bits_per_key(30));
    for k in [1, 2, 6, 20, 21, 30] {
        let cut = full_line_bits_per_key(k);
        assert!(cut < MIN_BITS_PER_KEY);
        let tol = if k <= 20 { 0.0 } else { 1e-12 };
        for (model, tol) in [(blocked512_fpr as Model, tol), (blocked512_putze_fpr, 1e-9)] {
            assert_eq!(model(cut, k), 1.0, "k={k}");
            let above = model(cut * 1.0001, k);
            assert!((1.0 - above).abs() <= tol, "k={k}: {above}");
        }
    }
    for kind in KINDS {
        for b in [f64::NAN, -1.0, 1e-300, 1e300, f64::INFINITY] {
            let k = kind.best_probes(b);
            assert!((1..=MAX_PROBES).contains(&k), "{kind} {b}: {k}");
        }
    }
}

#[test]
fn predicted_fpr_of_a_crafted_trailer_is_bounded() {
    // One zero line claiming far more keys than a line could hold: the model
    // is asked about as little as 2^-55 bits per key with k = 25 (its Markov
    // chain), whose Poisson sum once had as many terms as keys per line.
    for key_count in [40_000, 1 << 40, u64::MAX] {
        let mut bytes = vec![0u8; 64];
        FilterTrailer {
            units: 1,
            key_count,
            num_probes: 25,
            hash: 1,
            version: 1,
            kind: FilterKind::Blocked512.byte(),
        }
        .encode_to(&mut bytes);
        let f = Filter::open(&bytes).unwrap();
        assert_eq!(f.predicted_fpr(), 1.0, "{key_count}");
        assert!(!f.may_contain(key_hash(b"x")));
    }
}
