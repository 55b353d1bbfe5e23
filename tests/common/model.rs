//! A store's expected contents as a `BTreeMap`, and the checks of a store
//! against it: what a scan over any bounds must return, whole-store scans,
//! and random writes applied to both.

use std::collections::BTreeMap;
use std::ops::Bound;

use bloomlsm::Db;
use bloomlsm::workload::SplitMix64;

use super::keys::show;

/// The live keys and values a store must hold.
pub type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// Entries in key order.
pub type Entries = Vec<(Vec<u8>, Vec<u8>)>;

/// Whether `k` lies within `lo..hi`.
pub fn in_bounds(k: &[u8], lo: &Bound<Vec<u8>>, hi: &Bound<Vec<u8>>) -> bool {
    let above = match lo {
        Bound::Included(s) => k >= &s[..],
        Bound::Excluded(s) => k > &s[..],
        Bound::Unbounded => true,
    };
    let below = match hi {
        Bound::Included(e) => k <= &e[..],
        Bound::Excluded(e) => k < &e[..],
        Bound::Unbounded => true,
    };
    above && below
}

/// The entries of `model` within `lo..hi`: none for crossed bounds, as a
/// scan gives (where `BTreeMap::range` would panic).
pub fn range_of(model: &Model, lo: &Bound<Vec<u8>>, hi: &Bound<Vec<u8>>) -> Entries {
    model
        .iter()
        .filter(|(k, _)| in_bounds(k, lo, hi))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// Every entry of `model`.
pub fn entries(model: &Model) -> Entries {
    model.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
}

/// A bound as `Db::scan` takes it.
pub fn as_slice(b: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    b.as_ref().map(Vec::as_slice)
}

/// Unbounded, or included or excluded at a key `key` draws.
pub fn random_bound(
    rng: &mut SplitMix64,
    key: impl FnOnce(&mut SplitMix64) -> Vec<u8>,
) -> Bound<Vec<u8>> {
    match rng.below(3) {
        0 => Bound::Unbounded,
        1 => Bound::Included(key(rng)),
        _ => Bound::Excluded(key(rng)),
    }
}

/// The whole store by a forward scan; an error fails the test.
pub fn scan_all(db: &Db) -> Entries {
    db.scan(..)
        .map(|r| r.map(|(k, v)| (k.to_vec(), v.to_vec())).unwrap())
        .collect()
}

/// A scan of `lo..hi` returns exactly the model's entries in that range;
/// a difference fails with the first keys of both sides.
pub fn check_scan(db: &Db, model: &Model, lo: &Bound<Vec<u8>>, hi: &Bound<Vec<u8>>, ctx: &str) {
    let got: Entries = db
        .scan((as_slice(lo), as_slice(hi)))
        .map(|r| {
            let (k, v) = r.unwrap_or_else(|e| panic!("{ctx}: scan error {e}"));
            (k.to_vec(), v.to_vec())
        })
        .collect();
    let want = range_of(model, lo, hi);
    if got != want {
        let keys =
            |es: &Entries| -> Vec<String> { es.iter().take(40).map(|(k, _)| show(k)).collect() };
        let first_diff = got.iter().zip(&want).position(|(a, b)| a != b);
        panic!(
            "{ctx}: scan {lo:?}..{hi:?} differs: got {} entries, want {}; first difference at {first_diff:?}\n got keys {:?}\nwant keys {:?}",
            got.len(),
            want.len(),
            keys(&got),
            keys(&want),
        );
    }
}

/// Applies one write to the model: `Some(value)` puts, `None` deletes.
pub fn apply(model: &mut Model, k: &[u8], v: Option<&[u8]>) {
    match v {
        Some(v) => model.insert(k.to_vec(), v.to_vec()),
        None => model.remove(k),
    };
}

/// `n` writes that `next` draws (a key, and its value or `None` for a
/// delete), each made to the store and to the model.
pub fn churn(
    db: &Db,
    model: &mut Model,
    n: usize,
    mut next: impl FnMut() -> (Vec<u8>, Option<Vec<u8>>),
) {
    for _ in 0..n {
        let (k, v) = next();
        match &v {
            Some(v) => db.put(&k, v).unwrap(),
            None => db.delete(&k).unwrap(),
        }
        apply(model, &k, v.as_deref());
    }
}

/// Applies a range deletion to the model: every key in `[start, end)` goes.
pub fn apply_range(model: &mut Model, start: &[u8], end: &[u8]) {
    let doomed: Vec<Vec<u8>> = model
        .range::<[u8], _>((Bound::Included(start), Bound::Excluded(end)))
        .map(|(k, _)| k.clone())
        .collect();
    for k in doomed {
        model.remove(&k);
    }
}

/// A backward scan of `lo..hi` returns the model's entries of that range,
/// last first.
pub fn check_scan_rev(db: &Db, model: &Model, lo: &Bound<Vec<u8>>, hi: &Bound<Vec<u8>>, ctx: &str) {
    let got: Entries = db
        .scan((as_slice(lo), as_slice(hi)))
        .rev()
        .map(|r| {
            let (k, v) = r.unwrap_or_else(|e| panic!("{ctx}: scan error {e}"));
            (k.to_vec(), v.to_vec())
        })
        .collect();
    let mut want = range_of(model, lo, hi);
    want.reverse();
    assert!(
        got == want,
        "{ctx}: backward scan {lo:?}..{hi:?}: got {} entries, want {}",
        got.len(),
        want.len()
    );
}
