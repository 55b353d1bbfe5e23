//! The user's view of the store: [`DbIter`], for each user key in a range
//! the newest version visible at one sequence number, tombstones hidden,
//! from either end, with `seek`; and the [`ScanRange`] bounds it takes.

use std::ops::{
    Bound, Range, RangeBounds, RangeFrom, RangeFull, RangeInclusive, RangeTo, RangeToInclusive,
};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use bytes::Bytes;

use crate::db::memtable::MemTable;
use crate::db::merge::{Direction, MergeIter, ScanKeys, Source, Watch, above, below};
use crate::db::version::{FileHandle, Version};
use crate::error::{Error, Result};
use crate::filter::{PrefixExtractor, PrefixFilter, key_hash, key_point};
use crate::key::{self, MAX_SEQUENCE, ValueKind};
use crate::range_tombstone::Fragments;
use crate::sst::Table;
use crate::stats::IoCounters;

/// A range of user keys for [`Db::scan`](crate::Db::scan): `..`, `a..b`,
/// `a..=b`, `a..`, `..b`, `..=b`, or a `(Bound, Bound)` pair, with keys of
/// any type that is `AsRef<[u8]>`: `&[u8]`, `&[u8; N]`, `Vec<u8>`, `&str`,
/// `String`, [`Bytes`].
///
/// ```
/// use std::ops::Bound;
/// use bloomlsm::ScanRange;
///
/// let (lo, hi) = ("a".."m").into_bounds();
/// assert_eq!((lo, hi), (Bound::Included("a".into()), Bound::Excluded("m".into())));
/// let (lo, hi) = (..).into_bounds();
/// assert_eq!((lo, hi), (Bound::Unbounded, Bound::Unbounded));
/// let (lo, _) = (Bound::Excluded(b"k".as_slice()), Bound::Unbounded).into_bounds();
/// assert_eq!(lo, Bound::Excluded(bloomlsm::Bytes::from_static(b"k")));
/// ```
pub trait ScanRange {
    /// The start and end bounds, as owned bytes.
    fn into_bounds(self) -> (Bound<Bytes>, Bound<Bytes>);
}

impl ScanRange for RangeFull {
    fn into_bounds(self) -> (Bound<Bytes>, Bound<Bytes>) {
        (Bound::Unbounded, Bound::Unbounded)
    }
}

/// The bounds of `range`, copied.
fn owned_bounds<K: AsRef<[u8]>>(range: &impl RangeBounds<K>) -> (Bound<Bytes>, Bound<Bytes>) {
    let owned = |b: Bound<&K>| b.map(|k| Bytes::copy_from_slice(k.as_ref()));
    (owned(range.start_bound()), owned(range.end_bound()))
}

macro_rules! scan_range_by_range_bounds {
    ($($range:ty),* $(,)?) => {$(
        impl<K: AsRef<[u8]>> ScanRange for $range {
            fn into_bounds(self) -> (Bound<Bytes>, Bound<Bytes>) {
                owned_bounds(&self)
            }
        }
    )*};
}

scan_range_by_range_bounds!(
    Range<K>,
    RangeInclusive<K>,
    RangeFrom<K>,
    RangeTo<K>,
    RangeToInclusive<K>,
    (Bound<K>, Bound<K>),
);

/// What an iterator reads: the memtables and files pinned when it was made,
/// at one sequence number.
pub(crate) struct View {
    /// The active, then the frozen memtables, newest first.
    pub mems: Vec<Arc<MemTable>>,
    /// The files.
    pub version: Arc<Version>,
    /// Versions with a higher sequence number are invisible.
    pub seq: u64,
    /// Set when the store closes; the iterator then fails with
    /// [`Error::Closed`].
    pub closed: Arc<AtomicBool>,
    /// What lets the scan skip files by their prefix or range filters.
    pub skip: Option<Skip>,
}

/// How a scan skips files by their filters.
#[derive(Clone, Debug)]
pub(crate) enum Skip {
    /// A prefix scan, by prefix filters.
    Prefix(ScanPrefix),
    /// A scan bounded at both ends, by range filters.
    Range(ScanPoints),
}

impl Skip {
    /// Whether the scan skips `f` (counted on the file): `Some(true)` skip,
    /// `Some(false)` read it and watch for a false positive, `None` read it
    /// (no filter of the kind, or one the store cannot use).
    fn check(&self, f: &FileHandle) -> Option<bool> {
        match self {
            Skip::Prefix(p) => p.check(f),
            Skip::Range(r) => r.check(f),
        }
    }

    /// What a file the filter lets through is watched for.
    fn watch(&self) -> Watch {
        match self {
            Skip::Prefix(p) => Watch::Prefix(p.prefix.clone()),
            Skip::Range(r) => Watch::Range(r.start.clone(), r.end.clone()),
        }
    }
}

/// The key range of a [`Db::scan`](crate::Db::scan) bounded at both ends,
/// whose files may be skipped by their range filters: every key of the
/// range has its [`key_point`] in `lo..=hi` (the points of its ends, both
/// included, whether or not the range includes its ends: the points of
/// keys in order are in order).
#[derive(Clone, Debug)]
pub(crate) struct ScanPoints {
    start: Bound<Bytes>,
    end: Bound<Bytes>,
    lo: u64,
    hi: u64,
}

impl ScanPoints {
    /// `None` for a range open at either end: its points reach the end of
    /// the space, and a range filter answers "maybe" for nearly every file.
    pub(crate) fn of(start: &Bound<Bytes>, end: &Bound<Bytes>) -> Option<ScanPoints> {
        let (lo, hi) = (bound_key(start)?, bound_key(end)?);
        Some(ScanPoints {
            lo: key_point(lo),
            hi: key_point(hi),
            start: start.clone(),
            end: end.clone(),
        })
    }

    /// As [`Skip::check`].
    fn check(&self, f: &FileHandle) -> Option<bool> {
        let rf = match f.table.range_filter()? {
            Ok(rf) => rf,
            Err(_) => {
                f.io.add(&RANGE_UNUSABLE);
                return None;
            }
        };
        let absent = !rf.may_contain_range(self.lo, self.hi);
        f.io.add(if absent {
            &RANGE_NEGATIVE
        } else {
            &RANGE_CHECK
        });
        Some(absent)
    }
}

const RANGE_CHECK: IoCounters = IoCounters {
    range_checks: 1,
    ..IoCounters::ZERO
};
const RANGE_NEGATIVE: IoCounters = IoCounters {
    range_checks: 1,
    range_negatives: 1,
    ..IoCounters::ZERO
};
const RANGE_UNUSABLE: IoCounters = IoCounters {
    range_unusable_reads: 1,
    ..IoCounters::ZERO
};

/// The prefix of a [`Db::scan_prefix`](crate::Db::scan_prefix) whose files
/// may be skipped by their prefix filters: every key the scan reads starts
/// with `prefix`, so it has the extractor's prefix of `prefix` as its own.
#[derive(Clone, Debug)]
pub(crate) struct ScanPrefix {
    /// The store's extractor.
    pub extractor: PrefixExtractor,
    /// The scanned prefix.
    pub prefix: Bytes,
    /// The [`key_hash`] of the extractor's prefix of `prefix`.
    pub hash: u64,
}

impl ScanPrefix {
    /// `None` without an extractor, or for a prefix outside its domain
    /// (shorter than a fixed prefix, or without the delimiter): such a scan
    /// reads every file in its range.
    pub(crate) fn of(extractor: Option<PrefixExtractor>, prefix: &[u8]) -> Option<ScanPrefix> {
        let extractor = extractor?;
        let p = extractor.prefix(prefix)?;
        Some(ScanPrefix {
            extractor,
            prefix: Bytes::copy_from_slice(prefix),
            hash: key_hash(p),
        })
    }

    /// Whether the scan skips `f` (counted on the file): `Some(true)` skip,
    /// `Some(false)` read it and watch for a false positive, `None` read it
    /// (no prefix filter, or one the store cannot use).
    fn check(&self, f: &FileHandle) -> Option<bool> {
        let pf = match f.table.prefix_filter()? {
            Ok(pf) if pf.extractor == self.extractor => pf,
            _ => {
                f.io.add(&PREFIX_UNUSABLE);
                return None;
            }
        };
        let absent = !pf.may_contain(self.hash);
        f.io.add(if absent {
            &PREFIX_NEGATIVE
        } else {
            &PREFIX_CHECK
        });
        Some(absent)
    }
}

/// `table`'s prefix filter if a store with `extractor` skips files by it:
/// decoded, and built with that extractor.
pub(crate) fn usable_prefix_filter(
    table: &Table,
    extractor: Option<PrefixExtractor>,
) -> Option<&PrefixFilter> {
    match table.prefix_filter()? {
        Ok(pf) if Some(pf.extractor) == extractor => Some(pf),
        _ => None,
    }
}

const PREFIX_CHECK: IoCounters = IoCounters {
    prefix_checks: 1,
    ..IoCounters::ZERO
};
const PREFIX_NEGATIVE: IoCounters = IoCounters {
    prefix_checks: 1,
    prefix_negatives: 1,
    ..IoCounters::ZERO
};
const PREFIX_UNUSABLE: IoCounters = IoCounters {
    prefix_unusable_reads: 1,
    ..IoCounters::ZERO
};

impl View {
    /// A merge of every source that may hold user keys between `front` and
    /// `back`, from internal key `start` (included) in direction `dir`; each
    /// file's source charges the data blocks the scan read from it
    /// ([`Source::Scanned`]).
    fn merge(
        &self,
        front: &Bound<Bytes>,
        back: &Bound<Bytes>,
        start: Option<Bytes>,
        dir: Direction,
    ) -> MergeIter {
        let (lo, hi) = (bound_key(front), bound_key(back));
        let keys = ScanKeys {
            lo: front.clone(),
            hi: back.clone(),
        };
        let mut sources = Vec::new();
        for mem in &self.mems {
            sources.push(Source::mem_dir(mem.clone(), self.seq, start.clone(), dir));
        }
        let v = &self.version;
        let check = |f: &FileHandle| self.skip.as_ref().and_then(|s| s.check(f));
        for f in &v.levels[0] {
            if !f.overlaps(lo, hi) {
                continue;
            }
            let watch = match (check(f), &self.skip) {
                (Some(true), _) => continue,
                (Some(false), Some(s)) => Some(s.watch()),
                _ => None,
            };
            let source = Source::table_dir(f.table.clone(), start.as_deref(), dir);
            sources.push(Source::scanned(source, f.clone(), keys.clone(), watch, dir));
        }
        for level in 1..v.levels.len() {
            let files = v.overlapping(level, lo, hi);
            if files.is_empty() {
                continue;
            }
            let kept: Vec<(Arc<FileHandle>, bool)> = files
                .into_iter()
                .filter_map(|f| match check(&f) {
                    Some(true) => None,
                    Some(false) => Some((f, true)),
                    None => Some((f, false)),
                })
                .collect();
            if !kept.is_empty() {
                let watch = self.skip.as_ref().map(Skip::watch);
                sources.push(Source::level_scanned(
                    kept,
                    start.clone(),
                    dir,
                    keys.clone(),
                    watch,
                ));
            }
        }
        MergeIter::with_direction(sources, dir)
    }

    /// The range tombstones of every source that may hold user keys in
    /// `[lo, hi]`, of every sequence number (a reader picks those at or
    /// below its own with [`Fragments::max_cover`]): files the scan skips by
    /// their prefix or range filters included, since a filter covers a
    /// file's keys, not its range tombstones.
    fn range_tombstones(&self, lo: Option<&[u8]>, hi: Option<&[u8]>) -> Fragments {
        let mems: Vec<Arc<Fragments>> = self
            .mems
            .iter()
            .filter_map(|m| m.range_tombstones())
            .collect();
        let mut lists: Vec<&Fragments> = mems.iter().map(|f| &**f).collect();
        let v = &self.version;
        let files: Vec<Arc<crate::db::version::FileHandle>> = v.levels[0]
            .iter()
            .filter(|f| f.has_range_tombstones && f.overlaps(lo, hi))
            .cloned()
            .chain((1..v.levels.len()).flat_map(|level| {
                v.overlapping(level, lo, hi)
                    .into_iter()
                    .filter(|f| f.has_range_tombstones)
            }))
            .collect();
        lists.extend(files.iter().map(|f| f.table.range_tombstones()));
        Fragments::merged(lists)
    }
}

/// An iterator over the live entries of a key range, in key order, as of one
/// point in time: for each user key the newest version visible then, deleted
/// keys left out. Returned by [`Db::scan`](crate::Db::scan),
/// [`Db::scan_prefix`](crate::Db::scan_prefix) and the same methods of a
/// [`Snapshot`](crate::Snapshot).
///
/// - **Both ends**: it is a [`DoubleEndedIterator`]; `.rev()` scans
///   backward, and `next` and `next_back` may be mixed: the two ends meet
///   and never yield a key twice.
/// - **Seek**: [`seek`](Self::seek) moves the front end.
/// - **Point in time**: it reads the memtables and files of the moment it was
///   made, at that moment's sequence number (or its snapshot's); later writes,
///   flushes and compactions do not change what it yields.
/// - **Errors**: a damaged file yields `Err` once, then the iterator ends.
///   Used after its store was closed (or dropped), it yields
///   `Err(`[`Error::Closed`]`)` once and ends: it owns what it reads (it is
///   `'static`, `Send` and `Sync`, like [`Snapshot`](crate::Snapshot)), so this
///   is checked at run time, not by the borrow checker.
///
/// ```
/// # let dir = tempfile::tempdir()?;
/// # let db = bloomlsm::Db::open(dir.path(), bloomlsm::Options::default())?;
/// for k in ["a", "b", "c", "d", "e"] {
///     db.put(k, k.to_uppercase())?;
/// }
/// let keys = |it: &mut dyn Iterator<Item = bloomlsm::Result<(bloomlsm::Bytes, bloomlsm::Bytes)>>| {
///     it.map(|e| e.map(|(k, _)| k)).collect::<bloomlsm::Result<Vec<_>>>()
/// };
/// assert_eq!(keys(&mut db.scan("b"..).rev())?, ["e", "d", "c", "b"]);
/// let mut it = db.scan(..);
/// it.seek("c");
/// assert_eq!(keys(&mut it)?, ["c", "d", "e"]);
/// // Both ends at once.
/// let mut it = db.scan(..);
/// assert_eq!(it.next().transpose()?.unwrap().0, "a");
/// assert_eq!(it.next_back().transpose()?.unwrap().0, "e");
/// assert_eq!(keys(&mut it)?, ["b", "c", "d"]);
/// assert!(it.next_back().is_none());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct DbIter {
    view: View,
    /// The range's start: where a seek before it lands.
    start: Bound<Bytes>,
    /// The front end yields only keys above `front`, the back end only keys
    /// below `back`; each end moves its bound past every key it decides
    /// (yields, or finds deleted), so the ends never yield a key twice.
    front: Bound<Bytes>,
    back: Bound<Bytes>,
    /// Built on first use (and again by `seek`).
    front_merge: Option<MergeIter>,
    back_merge: Option<MergeIter>,
    front_done: bool,
    back_done: bool,
    /// The back end's key being read: its newest visible version so far (a
    /// reverse merge shows a key's versions oldest first).
    pending: Option<(Bytes, ValueKind, Bytes)>,
    /// The range tombstones of the scan's range.
    tombstones: Fragments,
    failed: bool,
    /// An error to yield first (a scan of a dropped keyspace).
    error: Option<Error>,
}

fn bound_key(b: &Bound<Bytes>) -> Option<&[u8]> {
    match b {
        Bound::Included(k) | Bound::Excluded(k) => Some(&k[..]),
        Bound::Unbounded => None,
    }
}

fn malformed(ikey: &[u8]) -> Error {
    Error::corruption(
        "<scan>",
        0,
        format!("malformed internal key of {} bytes", ikey.len()),
    )
}

impl DbIter {
    /// The live entries of `view` with user keys between `start` and `end`.
    pub(crate) fn new(view: View, start: Bound<Bytes>, end: Bound<Bytes>) -> Self {
        let tombstones = view.range_tombstones(bound_key(&start), bound_key(&end));
        DbIter {
            tombstones,
            view,
            front: start.clone(),
            start,
            back: end,
            front_merge: None,
            back_merge: None,
            front_done: false,
            back_done: false,
            pending: None,
            failed: false,
            error: None,
        }
    }

    /// This iterator, yielding `e` once and then nothing.
    pub(crate) fn failing(mut self, e: Error) -> Self {
        self.error = Some(e);
        self
    }

    /// Moves the front end: the next [`next`](Iterator::next) yields the
    /// first live key `>= key` inside the scan's range (the range's first key
    /// if `key` lies before it), forward or backward from where the front
    /// was. Keys the back end has already yielded stay behind it. The back
    /// end does not move; to read backward from a key, scan a range ending
    /// there (`db.scan(..=key).rev()`). Costs a new merge: one seek in every
    /// memtable and file that may hold keys in the range (and one more for
    /// the back end, if it is used again).
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// # let db = bloomlsm::Db::open(dir.path(), bloomlsm::Options::default())?;
    /// for k in ["apple", "banana", "cherry"] {
    ///     db.put(k, "x")?;
    /// }
    /// let mut it = db.scan(..);
    /// it.seek("b");
    /// assert_eq!(it.next().transpose()?.unwrap().0, "banana");
    /// it.seek("a"); // back again
    /// assert_eq!(it.next().transpose()?.unwrap().0, "apple");
    /// it.seek("zebra");
    /// assert!(it.next().is_none());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn seek(&mut self, key: impl AsRef<[u8]>) {
        let key = key.as_ref();
        self.front = if above(&self.start, key) {
            Bound::Included(Bytes::copy_from_slice(key))
        } else {
            self.start.clone()
        };
        self.front_merge = None;
        self.front_done = false;
        // The back end may have stopped where the front was; it resumes from
        // its own bound.
        self.back_merge = None;
        self.back_done = false;
        self.pending = None;
    }

    /// The kind a reader sees of a version of `user_key` at `seq`: a value
    /// a range tombstone it sees covers is deleted.
    fn live_kind(&self, user_key: &[u8], seq: u64, kind: ValueKind) -> ValueKind {
        if kind == ValueKind::Value
            && !self.tombstones.is_empty()
            && seq < self.tombstones.max_cover(user_key, self.view.seq)
        {
            return ValueKind::Deletion;
        }
        kind
    }

    fn fail(&mut self, e: Error) -> Result<(Bytes, Bytes)> {
        self.failed = true;
        Err(e)
    }

    fn closed(&self) -> bool {
        self.view.closed.load(Ordering::Acquire)
    }

    fn build(&self, dir: Direction) -> MergeIter {
        let (lo, hi) = (bound_key(&self.front), bound_key(&self.back));
        let start = match dir {
            Direction::Forward => lo.map(seek_key),
            // Sorts after every version of the key.
            Direction::Reverse => {
                hi.map(|k| Bytes::from(key::make_internal_key(k, 0, ValueKind::Deletion)))
            }
        };
        self.view.merge(&self.front, &self.back, start, dir)
    }
}

impl Iterator for DbIter {
    type Item = Result<(Bytes, Bytes)>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.front_done {
            return None;
        }
        if let Some(e) = self.error.take() {
            return Some(self.fail(e));
        }
        if self.closed() {
            return Some(self.fail(Error::Closed));
        }
        if self.front_merge.is_none() {
            self.front_merge = Some(self.build(Direction::Forward));
        }
        loop {
            let (ikey, value) = match self.front_merge.as_mut()?.next() {
                None => {
                    self.front_done = true;
                    return None;
                }
                Some(Err(e)) => return Some(self.fail(e)),
                Some(Ok(e)) => e,
            };
            let Some(parsed) = key::parse(&ikey) else {
                return Some(self.fail(malformed(&ikey)));
            };
            // Newer than the view, an older version of a decided key, or
            // before the start.
            if parsed.seq > self.view.seq || !above(&self.front, parsed.user_key) {
                continue;
            }
            if !below(&self.back, parsed.user_key) {
                self.front_done = true;
                return None;
            }
            let user_key = ikey.slice(..parsed.user_key.len());
            self.front = Bound::Excluded(user_key.clone());
            if self.live_kind(parsed.user_key, parsed.seq, parsed.kind) == ValueKind::Value {
                return Some(Ok((user_key, value)));
            }
        }
    }
}

impl DoubleEndedIterator for DbIter {
    fn next_back(&mut self) -> Option<Self::Item> {
        if self.failed || self.back_done {
            return None;
        }
        if let Some(e) = self.error.take() {
            return Some(self.fail(e));
        }
        if self.closed() {
            return Some(self.fail(Error::Closed));
        }
        if self.back_merge.is_none() {
            self.back_merge = Some(self.build(Direction::Reverse));
        }
        loop {
            let entry = match self.back_merge.as_mut()?.next() {
                None => None,
                Some(Err(e)) => return Some(self.fail(e)),
                Some(Ok((ikey, value))) => {
                    let Some(parsed) = key::parse(&ikey) else {
                        return Some(self.fail(malformed(&ikey)));
                    };
                    // Newer than the view, or past the end.
                    if parsed.seq > self.view.seq || !below(&self.back, parsed.user_key) {
                        continue;
                    }
                    let kind = self.live_kind(parsed.user_key, parsed.seq, parsed.kind);
                    let user_key = ikey.slice(..parsed.user_key.len());
                    if self.pending.as_ref().is_some_and(|p| p.0 == user_key) {
                        self.pending = Some((user_key, kind, value)); // a newer version
                        continue;
                    }
                    Some((user_key, kind, value))
                }
            };
            // A new key (or the end): the pending key has shown all its versions.
            let end = entry.as_ref().is_none_or(|e| !above(&self.front, &e.0));
            let decided = if end {
                self.back_done = true;
                self.pending.take()
            } else {
                std::mem::replace(&mut self.pending, entry)
            };
            if let Some((user_key, kind, value)) = decided {
                // The front end may have passed it meanwhile.
                if !above(&self.front, &user_key) {
                    self.back_done = true;
                    return None;
                }
                self.back = Bound::Excluded(user_key.clone());
                if kind == ValueKind::Value {
                    return Some(Ok((user_key, value)));
                }
            }
            if self.back_done {
                return None;
            }
        }
    }
}

impl std::fmt::Debug for DbIter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DbIter")
            .field("seq", &self.view.seq)
            .field("front", &self.front)
            .field("back", &self.back)
            .finish_non_exhaustive()
    }
}

/// The internal key that sorts before every version of `user_key`.
pub(crate) fn seek_key(user_key: &[u8]) -> Bytes {
    Bytes::from(key::make_internal_key(
        user_key,
        MAX_SEQUENCE,
        ValueKind::Value,
    ))
}

/// The range of every key starting with `prefix`: from `prefix` to the
/// shortest key above all of them (the prefix with trailing `0xff` bytes cut
/// and its last byte incremented), unbounded if there is none.
pub(crate) fn prefix_range(prefix: &[u8]) -> (Bound<Bytes>, Bound<Bytes>) {
    let mut end = prefix.to_vec();
    let hi = loop {
        match end.pop() {
            Some(0xff) => continue,
            Some(b) => {
                end.push(b + 1);
                break Bound::Excluded(Bytes::from(end));
            }
            None => break Bound::Unbounded,
        }
    };
    (Bound::Included(Bytes::copy_from_slice(prefix)), hi)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_ranges() {
        let b = |s: &[u8]| Bytes::copy_from_slice(s);
        assert_eq!(
            prefix_range(b"ab"),
            (Bound::Included(b(b"ab")), Bound::Excluded(b(b"ac")))
        );
        assert_eq!(
            prefix_range(b"a\xff\xff"),
            (Bound::Included(b(b"a\xff\xff")), Bound::Excluded(b(b"b")))
        );
        assert_eq!(
            prefix_range(b"\xff"),
            (Bound::Included(b(b"\xff")), Bound::Unbounded)
        );
        assert_eq!(
            prefix_range(b""),
            (Bound::Included(b(b"")), Bound::Unbounded)
        );
    }
}
