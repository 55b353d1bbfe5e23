//! Ordered iteration over the whole store: a k-way merge of memtables and
//! files in internal-key order, then the user view (newest version of each
//! key, tombstones hidden, range bounds applied).

use std::cmp::Ordering;
use std::collections::{BinaryHeap, VecDeque};
use std::ops::{
    Bound, Range, RangeBounds, RangeFrom, RangeFull, RangeInclusive, RangeTo, RangeToInclusive,
};
use std::sync::Arc;

use bytes::Bytes;

use crate::db::memtable::MemTable;
use crate::db::version::FileHandle;
use crate::error::Result;
use crate::key::{self, MAX_SEQUENCE, ValueKind};
use crate::sst::{Table, TableIter};

/// A stream of `(internal key, value)` in internal-key order.
pub(crate) type Entry = (Bytes, Bytes);

/// One input of the merge.
pub(crate) enum Source {
    /// A memtable, read in chunks so that no borrow outlives a call.
    Mem {
        mem: Arc<MemTable>,
        snapshot: u64,
        /// Internal key to resume from (exclusive once `started`).
        resume: Bytes,
        started: bool,
        buf: VecDeque<Entry>,
        done: bool,
    },
    /// One table.
    Table(TableIter<Arc<Table>>),
    /// The files of one level ≥ 1, opened one after another.
    Level {
        files: VecDeque<Arc<FileHandle>>,
        start: Option<Bytes>,
        current: Option<TableIter<Arc<Table>>>,
    },
}

const MEM_CHUNK: usize = 256;

impl Source {
    /// A memtable from internal key `start` (or the beginning).
    pub(crate) fn mem(mem: Arc<MemTable>, snapshot: u64, start: Option<Bytes>) -> Self {
        Source::Mem {
            mem,
            snapshot,
            resume: start.unwrap_or_default(),
            started: false,
            buf: VecDeque::new(),
            done: false,
        }
    }

    /// One table from internal key `start` (or the beginning).
    pub(crate) fn table(table: Arc<Table>, start: Option<&[u8]>) -> Self {
        Source::Table(TableIter::new(table, start))
    }

    /// The disjoint, sorted `files` of one level, from internal key `start`.
    pub(crate) fn level(files: Vec<Arc<FileHandle>>, start: Option<Bytes>) -> Self {
        let files = match &start {
            Some(s) => {
                let uk = key::user_key(s);
                files
                    .into_iter()
                    .filter(|f| f.largest_user_key() >= uk)
                    .collect()
            }
            None => files.into(),
        };
        Source::Level {
            files,
            start,
            current: None,
        }
    }

    fn next(&mut self) -> Option<Result<Entry>> {
        match self {
            Source::Mem {
                mem,
                snapshot,
                resume,
                started,
                buf,
                done,
            } => {
                if buf.is_empty() && !*done {
                    let skip_first = *started;
                    let it = if resume.is_empty() {
                        mem.iter_snapshot(*snapshot)
                    } else {
                        mem.iter_from(resume, *snapshot)
                    };
                    let mut it = it.skip_while(|(k, _)| skip_first && k == resume);
                    for e in it.by_ref().take(MEM_CHUNK) {
                        buf.push_back(e);
                    }
                    match buf.back() {
                        Some((k, _)) => {
                            *resume = k.clone();
                            *started = true;
                        }
                        None => *done = true,
                    }
                    if buf.len() < MEM_CHUNK {
                        *done = true;
                    }
                }
                buf.pop_front().map(Ok)
            }
            Source::Table(it) => it.next(),
            Source::Level {
                files,
                start,
                current,
            } => loop {
                if let Some(it) = current {
                    match it.next() {
                        Some(e) => return Some(e),
                        None => *current = None,
                    }
                }
                let f = files.pop_front()?;
                let from = start.take();
                *current = Some(TableIter::new(f.table.clone(), from.as_deref()));
            },
        }
    }
}

struct HeapItem {
    key: Bytes,
    value: Bytes,
    source: usize,
}

impl PartialEq for HeapItem {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for HeapItem {}
impl PartialOrd for HeapItem {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for HeapItem {
    // BinaryHeap is a max-heap: reverse so the smallest key (then the newest
    // source, lowest index) is on top.
    fn cmp(&self, other: &Self) -> Ordering {
        key::compare_internal(&other.key, &self.key).then_with(|| other.source.cmp(&self.source))
    }
}

/// K-way merge of sources in internal-key order. Sources are listed newest
/// first. After an error it yields that error once and ends.
pub(crate) struct MergeIter {
    sources: Vec<Source>,
    heap: BinaryHeap<HeapItem>,
    primed: bool,
    failed: bool,
}

impl MergeIter {
    pub(crate) fn new(sources: Vec<Source>) -> Self {
        MergeIter {
            sources,
            heap: BinaryHeap::new(),
            primed: false,
            failed: false,
        }
    }

    fn pull(&mut self, i: usize) -> Result<()> {
        if let Some(e) = self.sources[i].next() {
            let (key, value) = e?;
            self.heap.push(HeapItem {
                key,
                value,
                source: i,
            });
        }
        Ok(())
    }
}

impl Iterator for MergeIter {
    type Item = Result<Entry>;

    fn next(&mut self) -> Option<Result<Entry>> {
        if self.failed {
            return None;
        }
        if !self.primed {
            self.primed = true;
            for i in 0..self.sources.len() {
                if let Err(e) = self.pull(i) {
                    self.failed = true;
                    return Some(Err(e));
                }
            }
        }
        let top = self.heap.pop()?;
        if let Err(e) = self.pull(top.source) {
            self.failed = true;
            return Some(Err(e));
        }
        Some(Ok((top.key, top.value)))
    }
}

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

/// The user's view of a merge: for each user key in `range` the newest
/// version, tombstones hidden. Returned by [`crate::Db::scan`].
pub struct DbIter {
    merge: MergeIter,
    end: Bound<Bytes>,
    last_user_key: Option<Bytes>,
    done: bool,
}

impl DbIter {
    /// `skip`: a user key whose versions are all passed over (an excluded
    /// start bound).
    pub(crate) fn new(merge: MergeIter, end: Bound<Bytes>, skip: Option<Bytes>) -> Self {
        DbIter {
            merge,
            end,
            last_user_key: skip,
            done: false,
        }
    }

    fn past_end(&self, user_key: &[u8]) -> bool {
        match &self.end {
            Bound::Included(e) => user_key > &e[..],
            Bound::Excluded(e) => user_key >= &e[..],
            Bound::Unbounded => false,
        }
    }
}

impl Iterator for DbIter {
    type Item = Result<(Bytes, Bytes)>;

    fn next(&mut self) -> Option<Self::Item> {
        while !self.done {
            let (ikey, value) = match self.merge.next()? {
                Ok(e) => e,
                Err(e) => {
                    self.done = true;
                    return Some(Err(e));
                }
            };
            let Some(parsed) = key::parse(&ikey) else {
                self.done = true;
                return Some(Err(crate::Error::corruption(
                    "<scan>",
                    0,
                    format!("malformed internal key of {} bytes", ikey.len()),
                )));
            };
            if self.last_user_key.as_deref() == Some(parsed.user_key) {
                continue; // an older version of a key already decided
            }
            if self.past_end(parsed.user_key) {
                self.done = true;
                return None;
            }
            let user_key = ikey.slice(..parsed.user_key.len());
            self.last_user_key = Some(user_key.clone());
            if parsed.kind == ValueKind::Value {
                return Some(Ok((user_key, value)));
            }
        }
        None
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
