//! The reading operations: get, multi_get, scans (forward, backward, from
//! both ends, by prefix), seeks and snapshot reads. Each locks the keys it
//! reads, so that the expected state holds still, and compares every
//! answer with it exactly.

use std::ops::Bound;

use bloomlsm::{Bytes, DbIter};

use super::codec::{KEY_LEN, State, key};
use super::failure::{Checked, Failure, engine};
use super::store::{Store, keyspace_name};
use super::verify::{check, check_entries, present};
use super::worker::Worker;
use super::writes::apply;

/// A get of one key through the keyspace's handle or `Db`; one in sixteen
/// asks for a key the run never writes, which must be absent.
pub fn get(w: &mut Worker, store: &Store) -> Checked {
    let sh = w.sh;
    let (ks, k) = (w.keyspace(), w.key());
    let _held = sh.locks.lock([(ks, k)]);
    let handle = &store.ks[ks as usize];
    if w.one_in(16) {
        // Between key k and the next (or a shorter key before it).
        let mut kb = key(k);
        if w.one_in(2) {
            kb.push(b'~');
        } else {
            kb.truncate(1 + w.below(KEY_LEN as u64 - 1) as usize);
        }
        let got = engine("get", handle.get(&kb))?;
        if let Some(v) = got {
            return Err(Failure::mismatch(
                "get",
                &keyspace_name(ks),
                &kb,
                "absent (the run never writes this key)",
                super::codec::describe(Some(&v)),
            ));
        }
        return Ok(());
    }
    let got = if ks == 0 && w.one_in(2) {
        store.db.get(key(k))
    } else {
        handle.get(key(k))
    };
    let got = engine("get", got)?;
    check("get", ks, k, got.as_deref(), sh.expected.state((ks, k)))
}

/// A multi_get of 1 to 16 keys of one keyspace, in random order (a key may
/// come twice).
pub fn multi_get(w: &mut Worker, store: &Store) -> Checked {
    let sh = w.sh;
    let ks = w.keyspace();
    let ids: Vec<u32> = (0..1 + w.below(16)).map(|_| w.key()).collect();
    let _held = sh.locks.lock(ids.iter().map(|&k| (ks, k)));
    let kb: Vec<Vec<u8>> = ids.iter().map(|&k| key(k)).collect();
    let got = if ks == 0 && w.one_in(2) {
        store.db.multi_get(&kb)
    } else {
        store.ks[ks as usize].multi_get(&kb)
    };
    let got = engine("multi_get", got)?;
    if got.len() != ids.len() {
        return Err(Failure::mismatch(
            "multi_get",
            &keyspace_name(ks),
            b"",
            format!("{} answers", ids.len()),
            format!("{} answers", got.len()),
        ));
    }
    for (&k, v) in ids.iter().zip(&got) {
        check("multi_get", ks, k, v.as_deref(), sh.expected.state((ks, k)))?;
    }
    Ok(())
}

/// A scan's range: its bounds and the keys `lo..hi` inside them.
struct Range {
    start: Bound<Vec<u8>>,
    end: Bound<Vec<u8>>,
    lo: u32,
    hi: u32,
}

impl Range {
    fn bounds(&self) -> (Bound<Vec<u8>>, Bound<Vec<u8>>) {
        (self.start.clone(), self.end.clone())
    }
}

/// A range of up to 48 keys (one in eight up to 300), each end included or
/// excluded; one in ten starts at the first key unbounded, one in ten ends
/// unbounded at the last.
fn draw_range(w: &mut Worker) -> Range {
    let keys = w.sh.expected.keys();
    let span = 1 + if w.one_in(8) {
        w.below(300)
    } else {
        w.below(48)
    } as u32;
    let span = span.min(keys);
    let edge = w.below(10);
    let (a, b) = match edge {
        0 => (0, span - 1),
        1 => (keys - span, keys - 1),
        _ => {
            let a = w.key();
            (a, (a + span - 1).min(keys - 1))
        }
    };
    let (start, lo) = match (edge, w.one_in(2)) {
        (0, _) => (Bound::Unbounded, 0),
        (_, true) => (Bound::Included(key(a)), a),
        (_, false) => (Bound::Excluded(key(a)), a + 1),
    };
    let (end, hi) = match (edge, w.one_in(2)) {
        (1, _) => (Bound::Unbounded, keys),
        (_, true) => (Bound::Included(key(b)), b + 1),
        (_, false) => (Bound::Excluded(key(b)), b),
    };
    Range {
        start,
        end,
        lo,
        hi: hi.max(lo),
    }
}

/// A scan of a drawn range, forward or `backward`, sometimes stopped after
/// a few entries.
pub fn scan(w: &mut Worker, store: &Store, backward: bool) -> Checked {
    let sh = w.sh;
    let ks = w.keyspace();
    let r = draw_range(w);
    let _held = sh.locks.lock_range(ks, r.lo, r.hi);
    let it = if ks == 0 && w.one_in(2) {
        store.db.scan(r.bounds())
    } else {
        store.ks[ks as usize].scan(r.bounds())
    };
    let limit = if w.one_in(4) {
        w.below(10) as usize
    } else {
        usize::MAX
    };
    let op = if backward { "scan_backward" } else { "scan" };
    let got = collect(op, it, backward, limit)?;
    let mut want = present(&sh.expected, ks, r.lo, r.hi);
    if backward {
        want.reverse();
    }
    want.truncate(limit);
    check_entries(op, ks, &got, &want, backward)
}

/// Up to `limit` entries of `it`, from its back end when `backward`.
fn collect(op: &str, it: DbIter, backward: bool, limit: usize) -> Checked<Vec<(Bytes, Bytes)>> {
    let r: bloomlsm::Result<Vec<_>> = if backward {
        it.rev().take(limit).collect()
    } else {
        it.take(limit).collect()
    };
    engine(op, r)
}

/// A scan read from both ends at random until they meet: the front must
/// yield the first keys in order, the back the last keys in reverse, and
/// together every key once.
pub fn scan_both_ends(w: &mut Worker, store: &Store) -> Checked {
    let sh = w.sh;
    let ks = w.keyspace();
    let r = draw_range(w);
    let _held = sh.locks.lock_range(ks, r.lo, r.hi);
    let mut it = store.ks[ks as usize].scan(r.bounds());
    let (mut front, mut back) = (Vec::new(), Vec::new());
    loop {
        let from_front = w.one_in(2);
        let e = if from_front {
            it.next()
        } else {
            it.next_back()
        };
        let Some(e) = e else { break };
        let e = engine("scan_both_ends", e)?;
        if from_front {
            front.push(e);
        } else {
            back.push(e);
        }
    }
    // One end done means both are.
    if let Some(e) = it.next().or_else(|| it.next_back()) {
        let (k, v) = engine("scan_both_ends", e)?;
        return Err(Failure::mismatch(
            "scan_both_ends",
            &keyspace_name(ks),
            &k,
            "no entry once an end has met the other",
            super::codec::describe(Some(&v)),
        ));
    }
    let want = present(&sh.expected, ks, r.lo, r.hi);
    let split = front.len().min(want.len());
    check_entries("scan_both_ends (front)", ks, &front, &want[..split], false)?;
    let mut want_back = want[split..].to_vec();
    want_back.reverse();
    check_entries("scan_both_ends (back)", ks, &back, &want_back, true)
}

/// The first index in `0..keys` whose key fails `below` (`below` holds for
/// a prefix of the indices).
fn first_not(keys: u32, below: impl Fn(&[u8]) -> bool) -> u32 {
    let (mut lo, mut hi) = (0u32, keys);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if below(&key(mid)) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

/// A prefix scan, forward or backward: of the keyspace's extractor's
/// prefix of a key (three times in four, when it has one), else of the
/// first 5 to 9 bytes of a key.
pub fn prefix_scan(w: &mut Worker, store: &Store) -> Checked {
    let sh = w.sh;
    let keys = sh.expected.keys();
    let ks = w.keyspace();
    let handle = &store.ks[ks as usize];
    let kb = key(w.key());
    let prefix = match handle.options().prefix_extractor {
        Some(e) if !w.one_in(4) => e.prefix(&kb).unwrap_or(&kb).to_vec(),
        _ => kb[..5 + w.below(5) as usize].to_vec(),
    };
    let lo = first_not(keys, |k| k < &prefix[..]);
    let hi = first_not(keys, |k| k < &prefix[..] || k.starts_with(&prefix));
    let _held = sh.locks.lock_range(ks, lo, hi);
    let backward = w.one_in(3);
    let it = if ks == 0 && w.one_in(2) {
        store.db.scan_prefix(&prefix)
    } else {
        handle.scan_prefix(&prefix)
    };
    let got = collect("prefix_scan", it, backward, usize::MAX)?;
    let mut want = present(&sh.expected, ks, lo, hi);
    if backward {
        want.reverse();
    }
    check_entries("prefix_scan", ks, &got, &want, backward)
}

/// Three seeks on one iterator over a drawn range, each to a key, to a
/// point between two keys, or outside the range, forward or back from
/// the last; each then reads up to 8 entries.
pub fn seek(w: &mut Worker, store: &Store) -> Checked {
    let sh = w.sh;
    let ks = w.keyspace();
    let r = draw_range(w);
    let _held = sh.locks.lock_range(ks, r.lo, r.hi);
    let want = present(&sh.expected, ks, r.lo, r.hi);
    let mut it = store.ks[ks as usize].scan(r.bounds());
    for _ in 0..3 {
        let c = r.lo.saturating_sub(2) + w.below(u64::from(r.hi - r.lo) + 4) as u32;
        let mut target = key(c);
        let first = if w.one_in(3) {
            target.push(b'~');
            c + 1
        } else {
            c
        };
        it.seek(&target);
        let n = 1 + w.below(8) as usize;
        let got: Vec<(Bytes, Bytes)> =
            engine("seek", it.by_ref().take(n).collect::<Result<_, _>>())?;
        let from: Vec<(u32, State)> = want
            .iter()
            .filter(|(k, _)| *k >= first)
            .take(n)
            .copied()
            .collect();
        check_entries("seek", ks, &got, &from, false)?;
    }
    Ok(())
}

/// A snapshot read: with up to 16 adjacent keys locked, take a snapshot
/// (through `Db` or any keyspace's handle), write some of the keys, maybe
/// flush or compact the keyspace, then read them through the snapshot
/// (get, multi_get, scan), which must see them as they were, and now,
/// which must see the writes.
pub fn snapshot(w: &mut Worker, store: &Store) -> Checked {
    let sh = w.sh;
    let keys = sh.expected.keys();
    let ks = w.keyspace();
    let lo = w.key();
    let hi = (lo + 1 + w.below(16) as u32).min(keys);
    let _held = sh.locks.lock_range(ks, lo, hi);
    let handle = &store.ks[ks as usize];
    let snap = if w.one_in(2) {
        store.db.snapshot()
    } else {
        let other = w.keyspace();
        engine("snapshot", store.ks[other as usize].snapshot())?
    };
    let before: Vec<(u32, State)> = (lo..hi).map(|k| (k, sh.expected.state((ks, k)))).collect();
    for _ in 0..w.below(5) {
        let k = lo + w.below(u64::from(hi - lo)) as u32;
        let old = sh.expected.state((ks, k));
        if w.one_in(3) {
            apply(sh, &[((ks, k), old.deleted())], "delete", || {
                handle.delete(key(k))
            })?;
        } else {
            let new = old.put();
            let v = super::codec::value(ks, k, new.version());
            apply(sh, &[((ks, k), new)], "put", || handle.put(key(k), &v))?;
        }
    }
    match w.below(16) {
        0 => {
            engine("compact", handle.compact())?;
            w.crash_point();
        }
        1..=5 => {
            engine("flush", handle.flush())?;
            w.crash_point();
        }
        _ => {}
    }
    let op = "snapshot_read";
    for &(k, s) in &before {
        let got = if ks == 0 && w.one_in(2) {
            snap.get(key(k))
        } else {
            handle.get_at(&snap, key(k))
        };
        check(op, ks, k, engine(op, got)?.as_deref(), s)?;
    }
    let kb: Vec<Vec<u8>> = before.iter().map(|&(k, _)| key(k)).collect();
    let got = engine(op, handle.multi_get_at(&snap, &kb))?;
    for (&(k, s), v) in before.iter().zip(&got) {
        check("snapshot_read (multi_get)", ks, k, v.as_deref(), s)?;
    }
    let backward = w.one_in(2);
    let got = collect(
        op,
        handle.scan_at(&snap, key(lo)..key(hi)),
        backward,
        usize::MAX,
    )?;
    let mut want: Vec<(u32, State)> = before
        .iter()
        .filter(|(_, s)| s.present())
        .copied()
        .collect();
    if backward {
        want.reverse();
    }
    check_entries("snapshot_read (scan)", ks, &got, &want, backward)?;
    drop(snap);
    for k in lo..hi {
        let got = engine("get", handle.get(key(k)))?;
        check(
            "snapshot_read (now)",
            ks,
            k,
            got.as_deref(),
            sh.expected.state((ks, k)),
        )?;
    }
    Ok(())
}
