//! Property tests: no filter ever forgets a key, and serialization round-trips.

use bloomlsm::filter::{Filter, FilterKind, FilterPolicy, FilterTrailer, key_hash};
use proptest::prelude::*;

fn policies() -> impl Strategy<Value = FilterPolicy> {
    (
        prop_oneof![
            Just(FilterKind::Blocked512),
            Just(FilterKind::Bloom),
            Just(FilterKind::Ribbon)
        ],
        0.5f64..40.0,
    )
        .prop_map(|(kind, bits)| FilterPolicy::new(kind, bits))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, rng_seed: proptest::test_runner::RngSeed::Fixed(42), ..ProptestConfig::default() })]

    #[test]
    fn no_false_negatives(policy in policies(), keys in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..40), 0..3000)) {
        let hashes: Vec<u64> = keys.iter().map(|k| key_hash(k)).collect();
        let bytes = policy.build(&hashes).unwrap();
        let f = Filter::open(&bytes).unwrap();
        prop_assert!(f.is_usable());
        prop_assert_eq!(f.key_count(), hashes.len() as u64);
        prop_assert_eq!(f.num_probes(), policy.num_probes());
        for h in &hashes {
            prop_assert!(f.may_contain(*h));
        }
        // The batch probes answer as the single probe does, for the keys and
        // for as many others (groups of 64 with a partial last one).
        let probes: Vec<Vec<u8>> = keys.iter().cloned().chain(keys.iter().map(|k| [k.as_slice(), b"~"].concat())).collect();
        let probe_hashes: Vec<u64> = probes.iter().map(|k| key_hash(k)).collect();
        let mut batch = vec![false; probes.len()];
        f.may_contain_batch(&probe_hashes, &mut batch);
        let mut by_key = vec![false; probes.len()];
        f.may_contain_keys(&probes, &mut by_key);
        for (i, h) in probe_hashes.iter().enumerate() {
            prop_assert_eq!(batch[i], f.may_contain(*h));
            prop_assert_eq!(by_key[i], batch[i]);
        }
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..300), k in 0u8..40, kind in 0u8..5, lines in 0u64..10) {
        let _ = Filter::open(&bytes).map(|f| f.may_contain(1));
        // A well-formed trailer over a wrong-size payload: error or unusable, never a panic.
        let mut v = bytes.clone();
        FilterTrailer { units: lines, key_count: 3, num_probes: k, hash: 1, version: 1, kind }.encode_to(&mut v);
        if let Ok(f) = Filter::open(&v) {
            let _ = f.may_contain(12345);
        }
    }
}

#[test]
fn unknown_kind_version_or_hash_is_unusable_and_says_maybe() {
    let hashes: Vec<u64> = (0..100u32).map(|i| key_hash(&i.to_le_bytes())).collect();
    let good = FilterPolicy::blocked512(10.0).build(&hashes).unwrap();
    let n = good.len();
    for (at, value) in [(n - 1, 9u8), (n - 2, 2), (n - 3, 7)] {
        let mut bad = good.clone();
        bad[at] = value;
        let f = Filter::open(&bad).unwrap();
        assert!(!f.is_usable(), "byte {at} = {value}");
        assert!(f.may_contain(key_hash(b"anything")));
        let mut out = [false; 3];
        f.may_contain_batch(&[1, 2, 3], &mut out);
        assert_eq!(out, [true; 3]);
        let mut out = [false; 2];
        f.may_contain_keys(&[b"a", b"b"], &mut out);
        assert_eq!(out, [true; 2]);
        assert_eq!(f.predicted_fpr(), 1.0);
    }
}

/// A bloom filter of 4 keys at 10 bits/key is one 8-byte word and the
/// 20-byte trailer: `units` 64 (bytes 8..16), `key_count` 4 (16..24), then
/// k = 7, hash 1, version 1, kind 2 (bytes 24..28). A prefix shorter than the
/// trailer is an error. A longer one is opened with its last 20 bytes read as
/// the trailer, so its kind byte is byte `len - 1` of the filter and the
/// hash and version bytes the two before: zeros up to 24 bytes (unknown kind
/// 0), then k = 7 as the kind, then kind 1 (blocked512) with version 7, then
/// kind 1 with version 1 and hash 7. Each is unusable (answers "may contain"),
/// never a usable filter of the wrong size. (Nothing in 20 bytes says a
/// filter was cut short; in a table the block checksum does.)
#[test]
fn truncated_filter_is_an_error_or_unusable() {
    let good = FilterPolicy::bloom(10.0).build(&[1, 2, 3, 4]).unwrap();
    assert_eq!(good.len(), 28);
    assert_eq!(good[24..], [7, 1, 1, 2]);
    for len in 0..good.len() {
        let opened = Filter::open(&good[..len]);
        let reason = match len {
            0..20 => {
                let err = opened.err().unwrap_or_else(|| panic!("{len} bytes opened"));
                assert_eq!(
                    err.0,
                    format!("filter of {len} bytes is shorter than its 20-byte trailer")
                );
                continue;
            }
            20..=24 => "unknown filter kind 0",
            25 => "unknown filter kind 7",
            26 => "blocked512 filter version 7 is not supported",
            27 => "blocked512 filter uses unknown hash function 7",
            _ => unreachable!(),
        };
        match opened {
            Ok(Filter::Unusable { reason: got }) => assert_eq!(got, reason, "{len} bytes"),
            other => panic!("{len} bytes: expected unusable ({reason}), got {other:?}"),
        }
    }
    let f = Filter::open(&good).unwrap();
    assert_eq!(f.kind(), Some(FilterKind::Bloom));
    assert!([1u64, 2, 3, 4].iter().all(|&h| f.may_contain(h)));
}

/// Every single-byte flip and every cut of a Ribbon filter opens as an
/// error, an unusable filter or a filter that answers (same answers batched
/// and one at a time) — never a panic. Flips in the header or trailer other
/// than the seed and key count never give a usable Ribbon filter.
#[test]
fn ribbon_byte_flips_and_cuts_are_safe() {
    let hashes: Vec<u64> = (0..500u32).map(|i| key_hash(&i.to_le_bytes())).collect();
    let probes: Vec<u64> = (0..200u32)
        .map(|i| key_hash(&(i + 1_000_000).to_le_bytes()))
        .collect();
    for good in [
        FilterPolicy::ribbon(7.5).build(&hashes).unwrap(),
        FilterPolicy::ribbon(0.5).build(&hashes[..1]).unwrap(),
        FilterPolicy::ribbon(20.0).build(&[]).unwrap(),
    ] {
        let n = good.len();
        let header = n - 36;
        for at in 0..n {
            for x in [0x01u8, 0x10, 0x80, 0xff] {
                let mut bad = good.clone();
                bad[at] ^= x;
                let opened = Filter::open(&bad);
                let free = (header + 8..header + 12).contains(&at) || (n - 12..n - 4).contains(&at);
                if at >= header && !free {
                    assert!(
                        !matches!(opened, Ok(Filter::Ribbon(_))),
                        "flip {x:#x} at {at} of {n} opened as ribbon"
                    );
                }
                if let Ok(f) = opened {
                    let mut out = vec![false; probes.len()];
                    f.may_contain_batch(&probes, &mut out);
                    for (h, o) in probes.iter().zip(&out) {
                        assert_eq!(f.may_contain(*h), *o);
                    }
                    let _ = f.predicted_fpr();
                }
            }
        }
        for len in 0..n {
            if let Ok(f) = Filter::open(&good[..len]) {
                assert!(!f.is_usable(), "cut at {len} of {n} is usable");
            }
        }
    }
}
