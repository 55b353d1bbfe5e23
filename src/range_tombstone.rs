//! Range tombstones: "every version of a key in `[start, end)` with a
//! sequence number below `seq` is deleted", as [`Fragments`] — the
//! tombstones of one memtable, table or merge cut at every start and end into
//! non-overlapping pieces, each with the sequence numbers of the tombstones
//! covering it (RocksDB's fragmented range tombstones). A lookup is then one
//! binary search, and the newest tombstone a reader at sequence `s` sees over
//! a key is the first of its piece's sequence numbers at or below `s`.
//!
//! The same list is what a table's `range_tombstones` meta block holds
//! ([`Fragments::encode`], `docs/format.md` §4.5).

use crate::coding::{Decoder, put_length_prefixed, put_varint64};
use crate::key::MAX_SEQUENCE;

/// One piece of the key space `[start, end)` and the sequence numbers of
/// the tombstones over it, newest first, without repeats.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Fragment {
    pub start: Vec<u8>,
    pub end: Vec<u8>,
    pub seqs: Vec<u64>,
}

/// Non-overlapping fragments in key order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Fragments {
    frags: Vec<Fragment>,
}

impl Fragments {
    /// Cuts `tombstones` — `(start, end, seq)`, any order, overlapping or
    /// not — into fragments. Empty ranges (`start >= end`) are ignored.
    pub fn new<'a>(tombstones: impl IntoIterator<Item = (&'a [u8], &'a [u8], u64)>) -> Self {
        let mut ts: Vec<(&[u8], &[u8], u64)> =
            tombstones.into_iter().filter(|t| t.0 < t.1).collect();
        if ts.is_empty() {
            return Fragments::default();
        }
        ts.sort_unstable_by(|a, b| a.0.cmp(b.0));
        let mut points: Vec<&[u8]> = ts.iter().flat_map(|t| [t.0, t.1]).collect();
        points.sort_unstable();
        points.dedup();
        let mut frags: Vec<Fragment> = Vec::new();
        // The tombstones over the current point: (end, seq).
        let mut active: Vec<(&[u8], u64)> = Vec::new();
        let mut next = 0;
        for (i, &p) in points.iter().enumerate() {
            active.retain(|&(end, _)| end > p);
            while next < ts.len() && ts[next].0 <= p {
                active.push((ts[next].1, ts[next].2));
                next += 1;
            }
            let Some(&q) = points.get(i + 1) else { break };
            if active.is_empty() {
                continue;
            }
            let mut seqs: Vec<u64> = active.iter().map(|&(_, s)| s).collect();
            seqs.sort_unstable_by(|a, b| b.cmp(a));
            seqs.dedup();
            // Neighbours with the same tombstones are one fragment.
            if let Some(last) = frags.last_mut()
                && last.end == p
                && last.seqs == seqs
            {
                last.end = q.to_vec();
                continue;
            }
            frags.push(Fragment {
                start: p.to_vec(),
                end: q.to_vec(),
                seqs,
            });
        }
        Fragments { frags }
    }

    /// The fragments of several lists together.
    pub fn merged<'a>(lists: impl IntoIterator<Item = &'a Fragments>) -> Self {
        let lists: Vec<&Fragments> = lists.into_iter().filter(|f| !f.is_empty()).collect();
        match lists.as_slice() {
            [] => Fragments::default(),
            [one] => (*one).clone(),
            _ => Fragments::new(lists.iter().flat_map(|f| f.tombstones())),
        }
    }

    /// No tombstone at all.
    pub fn is_empty(&self) -> bool {
        self.frags.is_empty()
    }

    /// The fragments, in key order.
    pub fn fragments(&self) -> &[Fragment] {
        &self.frags
    }

    /// Every `(start, end, seq)` of every fragment.
    pub fn tombstones(&self) -> impl Iterator<Item = (&[u8], &[u8], u64)> + '_ {
        self.frags.iter().flat_map(|f| {
            f.seqs
                .iter()
                .map(move |&s| (f.start.as_slice(), f.end.as_slice(), s))
        })
    }

    /// Number of `(fragment, seq)` pairs.
    pub fn count(&self) -> usize {
        self.frags.iter().map(|f| f.seqs.len()).sum()
    }

    /// The fragment holding `key`, if any.
    pub fn covering(&self, key: &[u8]) -> Option<&Fragment> {
        let i = self.frags.partition_point(|f| f.end.as_slice() <= key);
        self.frags.get(i).filter(|f| f.start.as_slice() <= key)
    }

    /// The sequence number of the newest tombstone over `key` that a reader
    /// at `snapshot` sees; 0 if none (sequence 0 is never written).
    pub fn max_cover(&self, key: &[u8], snapshot: u64) -> u64 {
        self.covering(key)
            .and_then(|f| f.seqs.iter().copied().find(|&s| s <= snapshot))
            .unwrap_or(0)
    }

    /// The first start and the last end.
    pub fn bounds(&self) -> Option<(&[u8], &[u8])> {
        Some((&self.frags.first()?.start, &self.frags.last()?.end))
    }

    /// The tombstones restricted to `[lo, hi)` (`None`: unbounded).
    pub fn clipped(&self, lo: Option<&[u8]>, hi: Option<&[u8]>) -> Fragments {
        let mut frags = Vec::new();
        for f in &self.frags {
            let start = match lo {
                Some(lo) if lo > f.start.as_slice() => lo,
                _ => f.start.as_slice(),
            };
            let end = match hi {
                Some(hi) if hi < f.end.as_slice() => hi,
                _ => f.end.as_slice(),
            };
            if start < end {
                frags.push(Fragment {
                    start: start.to_vec(),
                    end: end.to_vec(),
                    seqs: f.seqs.clone(),
                });
            }
        }
        Fragments { frags }
    }

    /// Keeps of each fragment only the sequence numbers `keep` accepts,
    /// asked with the fragment's index (fragments left with none go).
    pub fn retain_seqs(&mut self, mut keep: impl FnMut(usize, &Fragment, u64) -> bool) {
        for i in 0..self.frags.len() {
            let f = &self.frags[i];
            let seqs: Vec<u64> = f.seqs.iter().copied().filter(|&s| keep(i, f, s)).collect();
            self.frags[i].seqs = seqs;
        }
        self.frags.retain(|f| !f.seqs.is_empty());
    }

    /// The meta-block encoding: `count: varint64`, then per `(fragment, seq)`
    /// pair in key order, newest first within a fragment, `start` and `end`
    /// length-prefixed and `seq: u64 LE`.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        put_varint64(&mut out, self.count() as u64);
        for (start, end, seq) in self.tombstones() {
            put_length_prefixed(&mut out, start);
            put_length_prefixed(&mut out, end);
            out.extend_from_slice(&seq.to_le_bytes());
        }
        out
    }

    /// Decodes [`encode`](Self::encode)'s bytes, which must be exactly that:
    /// non-empty ranges, sequence numbers of at most 56 bits, in order,
    /// nothing after. A failure names its offset in `data`.
    pub fn decode(data: &[u8]) -> Result<Fragments, (usize, &'static str)> {
        let mut d = Decoder::new(data);
        let count = d.varint64().map_err(|w| (0, w))?;
        // Each entry takes at least 10 bytes: a bound on what to allocate.
        if count > (data.len() / 10) as u64 {
            return Err((0, "more range tombstones than the block can hold"));
        }
        let mut ts: Vec<(&[u8], &[u8], u64)> = Vec::with_capacity(count as usize);
        for _ in 0..count {
            let at = d.pos();
            let start = d.length_prefixed().map_err(|w| (d.pos(), w))?;
            let end = d.length_prefixed().map_err(|w| (d.pos(), w))?;
            let seq = d.fixed64().map_err(|w| (d.pos(), w))?;
            if start >= end {
                return Err((at, "range tombstone whose start is not below its end"));
            }
            if seq > MAX_SEQUENCE || seq == 0 {
                return Err((at, "range tombstone sequence number out of range"));
            }
            if let Some(&(ps, pe, pseq)) = ts.last() {
                let ordered = match ps.cmp(start) {
                    std::cmp::Ordering::Less => pe <= start,
                    std::cmp::Ordering::Equal => pe == end && pseq > seq,
                    std::cmp::Ordering::Greater => false,
                };
                if !ordered {
                    return Err((at, "range tombstones out of order or overlapping"));
                }
            }
            ts.push((start, end, seq));
        }
        if !d.is_empty() {
            return Err((d.pos(), "bytes after the last range tombstone"));
        }
        Ok(Fragments::new(ts))
    }
}

/// The user key just above `key` in byte order: `key ++ [0]`. The keys
/// below it are exactly the keys at or below `key`.
pub(crate) fn successor(key: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(key.len() + 1);
    k.extend_from_slice(key);
    k.push(0);
    k
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn frags(ts: &[(&str, &str, u64)]) -> Fragments {
        Fragments::new(ts.iter().map(|&(a, b, s)| (a.as_bytes(), b.as_bytes(), s)))
    }

    #[test]
    fn overlapping_tombstones_are_cut_and_looked_up() {
        let f = frags(&[("b", "f", 5), ("d", "h", 9), ("x", "z", 2), ("c", "c", 7)]);
        let shape: Vec<_> = f
            .fragments()
            .iter()
            .map(|x| (x.start.clone(), x.end.clone(), x.seqs.clone()))
            .collect();
        assert_eq!(
            shape,
            vec![
                (b"b".to_vec(), b"d".to_vec(), vec![5]),
                (b"d".to_vec(), b"f".to_vec(), vec![9, 5]),
                (b"f".to_vec(), b"h".to_vec(), vec![9]),
                (b"x".to_vec(), b"z".to_vec(), vec![2]),
            ]
        );
        assert_eq!(f.max_cover(b"a", 100), 0);
        assert_eq!(f.max_cover(b"b", 100), 5);
        assert_eq!(f.max_cover(b"e", 100), 9);
        assert_eq!(f.max_cover(b"e", 8), 5);
        assert_eq!(f.max_cover(b"e", 4), 0);
        assert_eq!(f.max_cover(b"h", 100), 0);
        assert_eq!(f.max_cover(b"y", 2), 2);
        assert_eq!(f.bounds(), Some((&b"b"[..], &b"z"[..])));
        let c = f.clipped(Some(b"e"), Some(b"g"));
        assert_eq!(c.count(), 3);
        assert_eq!(c.bounds(), Some((&b"e"[..], &b"g"[..])));
        assert!(f.clipped(Some(b"h"), Some(b"x")).is_empty());
    }

    #[test]
    fn every_truncation_and_flip_is_an_error_or_a_valid_list() {
        let enc = frags(&[("b", "f", 5), ("d", "h", 9), ("x", "z", 2)]).encode();
        assert_eq!(Fragments::decode(&enc).unwrap().encode(), enc);
        for cut in 0..enc.len() {
            assert!(Fragments::decode(&enc[..cut]).is_err(), "cut {cut}");
        }
        for at in 0..enc.len() {
            for bit in 0..8 {
                let mut bad = enc.clone();
                bad[at] ^= 1 << bit;
                if let Ok(f) = Fragments::decode(&bad) {
                    assert_eq!(Fragments::decode(&f.encode()), Ok(f));
                }
            }
        }
        assert_eq!(Fragments::decode(&[0]), Ok(Fragments::default()));
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

        /// The fragments answer exactly what a scan of the tombstones would.
        #[test]
        fn max_cover_matches_brute_force(
            ts in prop::collection::vec((0u8..20, 0u8..20, 1u64..50), 0..12),
            key in 0u8..21,
            snapshot in 0u64..55,
        ) {
            let owned: Vec<(Vec<u8>, Vec<u8>, u64)> =
                ts.iter().map(|&(a, b, s)| (vec![a], vec![b], s)).collect();
            let f = Fragments::new(owned.iter().map(|(a, b, s)| (&a[..], &b[..], *s)));
            let want = owned
                .iter()
                .filter(|(a, b, s)| a[..] <= [key][..] && [key][..] < b[..] && *s <= snapshot)
                .map(|t| t.2)
                .max()
                .unwrap_or(0);
            prop_assert_eq!(f.max_cover(&[key], snapshot), want);
            prop_assert_eq!(Fragments::decode(&f.encode()), Ok(f.clone()));
            prop_assert_eq!(Fragments::new(f.tombstones()), f);
        }
    }
}
