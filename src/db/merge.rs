//! The k-way merge under compactions and the user iterators: memtables and
//! files in internal-key order, ascending or descending.

use std::cmp::Ordering;
use std::collections::binary_heap::PeekMut;
use std::collections::{BinaryHeap, VecDeque};
use std::ops::Bound;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};

use crate::db::memtable::MemTable;
use crate::db::version::FileHandle;
use crate::error::Result;
use crate::key;
use crate::sst::table::{ReadStats, TableRevIter};
use crate::sst::{Table, TableIter};
use crate::stats::IoCounters;

/// Whether `k` lies above the lower bound `lo`.
pub(crate) fn above(lo: &Bound<Bytes>, k: &[u8]) -> bool {
    match lo {
        Bound::Included(b) => k >= &b[..],
        Bound::Excluded(b) => k > &b[..],
        Bound::Unbounded => true,
    }
}

/// Whether `k` lies below the upper bound `hi`.
pub(crate) fn below(hi: &Bound<Bytes>, k: &[u8]) -> bool {
    match hi {
        Bound::Included(b) => k <= &b[..],
        Bound::Excluded(b) => k < &b[..],
        Bound::Unbounded => true,
    }
}

/// A stream of `(internal key, value)` in internal-key order.
pub(crate) type Entry = (Bytes, Bytes);

/// Which way a source or a merge runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Direction {
    /// Ascending internal keys (user key up, newest version first).
    Forward,
    /// Descending internal keys (user key down, oldest version first).
    Reverse,
}

/// One input of the merge.
pub(crate) enum Source {
    /// A memtable, read in chunks so that no borrow outlives a call.
    Mem {
        mem: Arc<MemTable>,
        snapshot: u64,
        dir: Direction,
        /// Where the next chunk starts (the far end is unbounded).
        resume: Bound<Bytes>,
        buf: VecDeque<Entry>,
        done: bool,
    },
    /// One table, forward.
    Table(TableIter<Arc<Table>>),
    /// One table, backward.
    TableRev(TableRevIter<Arc<Table>>),
    /// A file a user's scan reads: charges the data blocks the scan read
    /// from it to the file ([`Scanned`]), and for a file a prefix or range
    /// filter let through, on the file's first entry inside or past the
    /// scan's keys (or its end), counts a false positive on the file if it
    /// holds none of them there.
    Scanned(Scanned),
    /// The disjoint, sorted files of one level ≥ 1, opened one after another
    /// (from the front, or from the back when reversed). With `scan` (a
    /// user's scan), each is opened [`Source::Scanned`], and a file marked
    /// `true` is watched for the scan's filter.
    Level {
        files: VecDeque<(Arc<FileHandle>, bool)>,
        scan: Option<(ScanKeys, Option<Watch>)>,
        dir: Direction,
        /// Bound for the first file opened.
        start: Option<Bytes>,
        current: Option<Box<Source>>,
        /// Files are read as a compaction reads them ([`Source::table`]).
        sequential: bool,
    },
}

/// The bounds of a user's scan, which tell the data blocks that held its
/// entries from the ones it only touched.
#[derive(Clone, Debug)]
pub(crate) struct ScanKeys {
    pub(crate) lo: Bound<Bytes>,
    pub(crate) hi: Bound<Bytes>,
}

impl ScanKeys {
    /// Whether user key `uk` lies inside the scan's bounds.
    fn holds(&self, uk: &[u8]) -> bool {
        above(&self.lo, uk) && below(&self.hi, uk)
    }
}

/// A file a user's scan reads (see [`Source::Scanned`]). Dropped, it
/// charges the data blocks read from the file to the file's
/// `scan_blocks`, `scan_useful_blocks`, `scan_block_reads` and
/// `scan_bytes_read`, and for a file its filter let through, to its
/// `prefix_scan_blocks` or `range_scan_blocks`.
pub(crate) struct Scanned {
    inner: Box<Source>,
    file: Arc<FileHandle>,
    keys: ScanKeys,
    /// The scan's filter kind, for a file that filter let through.
    watch: Option<Watch>,
    dir: Direction,
    /// Cleared once the watched filter's outcome is known.
    open: bool,
    /// Data blocks from which the scan read an entry inside its bounds.
    useful: u64,
    /// The count of blocks loaded when the last useful block was counted:
    /// an entry read while that count is unchanged comes from a block
    /// already counted.
    counted_at: u64,
}

impl Scanned {
    /// Data blocks the table source has loaded so far.
    fn loaded(&self) -> u64 {
        self.inner
            .read_stats()
            .map_or(0, |r| r.blocks_read + r.cache_hits)
    }
}

impl Drop for Scanned {
    fn drop(&mut self) {
        if let Some(r) = self.inner.read_stats() {
            let blocks = r.blocks_read + r.cache_hits;
            let mut io = IoCounters {
                scan_blocks: blocks,
                scan_useful_blocks: self.useful,
                scan_block_reads: r.blocks_read,
                scan_bytes_read: r.bytes_read,
                ..IoCounters::ZERO
            };
            match self.watch {
                Some(Watch::Prefix(_)) => io.prefix_scan_blocks = blocks,
                Some(Watch::Range(..)) => io.range_scan_blocks = blocks,
                None => {}
            }
            self.file.io.add(&io);
        }
    }
}

/// The keys a scan asks of a file its prefix or range filter let through.
#[derive(Clone, Debug)]
pub(crate) enum Watch {
    /// The keys with this prefix (a prefix filter's "maybe").
    Prefix(Bytes),
    /// The keys between these bounds (a range filter's "maybe").
    Range(Bound<Bytes>, Bound<Bytes>),
}

impl Watch {
    /// The verdict on the file from its first entry at user key `uk` read in
    /// direction `dir`: `Some(false)` the file holds a wanted key,
    /// `Some(true)` its entries are past the wanted keys (the filter's
    /// "maybe" was a false positive), `None` not at the wanted keys yet.
    fn judge(&self, uk: &[u8], dir: Direction) -> Option<bool> {
        match self {
            Watch::Prefix(prefix) => {
                if uk.starts_with(prefix) {
                    Some(false)
                } else if dir == Direction::Forward || uk < &prefix[..] {
                    Some(true)
                } else {
                    None // still past the prefix's keys, backward
                }
            }
            Watch::Range(lo, hi) => {
                let (before, past) = match dir {
                    Direction::Forward => (!above(lo, uk), !below(hi, uk)),
                    Direction::Reverse => (!below(hi, uk), !above(lo, uk)),
                };
                if before { None } else { Some(past) }
            }
        }
    }

    /// The counters of a false positive.
    fn false_positive(&self) -> &'static IoCounters {
        match self {
            Watch::Prefix(_) => &PREFIX_FALSE_POSITIVE,
            Watch::Range(..) => &RANGE_FALSE_POSITIVE,
        }
    }
}

const MEM_CHUNK: usize = 256;

/// The counters of a prefix-filter "maybe" for a file without the prefix.
const PREFIX_FALSE_POSITIVE: IoCounters = IoCounters {
    prefix_false_positives: 1,
    ..IoCounters::ZERO
};

/// The counters of a range-filter "maybe" for a file without a key in the
/// range.
const RANGE_FALSE_POSITIVE: IoCounters = IoCounters {
    range_false_positives: 1,
    ..IoCounters::ZERO
};

impl Source {
    /// A memtable from internal key `start` (included; `None`: the end the
    /// direction starts at).
    pub(crate) fn mem_dir(
        mem: Arc<MemTable>,
        snapshot: u64,
        start: Option<Bytes>,
        dir: Direction,
    ) -> Self {
        Source::Mem {
            mem,
            snapshot,
            dir,
            resume: start.map_or(Bound::Unbounded, Bound::Included),
            buf: VecDeque::new(),
            done: false,
        }
    }

    /// One table from internal key `start` (or the beginning), forward, as
    /// a compaction reads it: in large chunks, past the block cache
    /// ([`TableIter::sequential`]).
    pub(crate) fn table(table: Arc<Table>, start: Option<&[u8]>) -> Self {
        Source::Table(TableIter::sequential(table, start))
    }

    /// One table from internal key `start` (included) in direction `dir`.
    pub(crate) fn table_dir(table: Arc<Table>, start: Option<&[u8]>, dir: Direction) -> Self {
        match dir {
            Direction::Forward => Source::Table(TableIter::new(table, start)),
            Direction::Reverse => Source::TableRev(TableRevIter::new(table, start)),
        }
    }

    /// The disjoint, sorted `files` of one level, from internal key `start`,
    /// forward, each read as [`Source::table`] reads it (a compaction's input).
    pub(crate) fn level(files: Vec<Arc<FileHandle>>, start: Option<Bytes>) -> Self {
        Source::level_with(files, start, Direction::Forward, true)
    }

    /// The disjoint, sorted `files` of one level for a user's scan of
    /// `keys`, from internal key `start` (included) in direction `dir`
    /// (files wholly on the far side of `start` are left out), each opened
    /// [`Source::Scanned`], and watched for `watch` if marked `true`: its
    /// prefix or range filter let it through.
    pub(crate) fn level_scanned(
        files: Vec<(Arc<FileHandle>, bool)>,
        start: Option<Bytes>,
        dir: Direction,
        keys: ScanKeys,
        watch: Option<Watch>,
    ) -> Self {
        let watched: Vec<u64> = files.iter().filter(|f| f.1).map(|f| f.0.number()).collect();
        let mut s = Source::level_with(files.into_iter().map(|f| f.0).collect(), start, dir, false);
        if let Source::Level { files, scan, .. } = &mut s {
            for f in files.iter_mut() {
                f.1 = watched.contains(&f.0.number());
            }
            *scan = Some((keys, watch));
        }
        s
    }

    /// `inner`, reading `file` for a user's scan of `keys`, watched for
    /// `watch` if the scan's filter let the file through.
    pub(crate) fn scanned(
        inner: Source,
        file: Arc<FileHandle>,
        keys: ScanKeys,
        watch: Option<Watch>,
        dir: Direction,
    ) -> Self {
        Source::Scanned(Scanned {
            inner: Box::new(inner),
            file,
            keys,
            open: watch.is_some(),
            watch,
            dir,
            useful: 0,
            counted_at: 0,
        })
    }

    /// A table source's data-block I/O so far.
    fn read_stats(&self) -> Option<ReadStats> {
        match self {
            Source::Table(it) => Some(it.read_stats()),
            Source::TableRev(it) => Some(it.read_stats()),
            _ => None,
        }
    }

    fn level_with(
        files: Vec<Arc<FileHandle>>,
        start: Option<Bytes>,
        dir: Direction,
        sequential: bool,
    ) -> Self {
        let files = match &start {
            Some(s) => {
                let uk = key::user_key(s);
                files
                    .into_iter()
                    .filter(|f| match dir {
                        Direction::Forward => f.largest_user_key() >= uk,
                        Direction::Reverse => f.smallest_user_key() <= uk,
                    })
                    .map(|f| (f, false))
                    .collect()
            }
            None => files.into_iter().map(|f| (f, false)).collect(),
        };
        Source::Level {
            files,
            scan: None,
            dir,
            start,
            current: None,
            sequential,
        }
    }

    fn next(&mut self) -> Option<Result<Entry>> {
        match self {
            Source::Mem {
                mem,
                snapshot,
                dir,
                resume,
                buf,
                done,
            } => {
                if buf.is_empty() && !*done {
                    let from = match &*resume {
                        Bound::Included(k) => Bound::Included(&k[..]),
                        Bound::Excluded(k) => Bound::Excluded(&k[..]),
                        Bound::Unbounded => Bound::Unbounded,
                    };
                    // One buffer for the chunk's bytes, each entry a slice of
                    // it: two allocations per chunk, not per entry.
                    let mut bytes = BytesMut::new();
                    let mut spans = Vec::with_capacity(MEM_CHUNK);
                    let mut take = |(k, v): (&[u8], &[u8])| {
                        let at = bytes.len();
                        bytes.extend_from_slice(k);
                        bytes.extend_from_slice(v);
                        spans.push((at, k.len(), v.len()));
                    };
                    match dir {
                        Direction::Forward => mem
                            .iter_range(from, Bound::Unbounded, *snapshot)
                            .take(MEM_CHUNK)
                            .for_each(&mut take),
                        Direction::Reverse => mem
                            .iter_range(Bound::Unbounded, from, *snapshot)
                            .rev()
                            .take(MEM_CHUNK)
                            .for_each(&mut take),
                    }
                    let bytes = bytes.freeze();
                    buf.extend(spans.into_iter().map(|(at, k, v)| {
                        (bytes.slice(at..at + k), bytes.slice(at + k..at + k + v))
                    }));
                    match buf.back() {
                        Some((k, _)) => *resume = Bound::Excluded(k.clone()),
                        None => *done = true,
                    }
                    if buf.len() < MEM_CHUNK {
                        *done = true;
                    }
                }
                buf.pop_front().map(Ok)
            }
            Source::Table(it) => it.next(),
            Source::TableRev(it) => it.next(),
            Source::Scanned(sc) => {
                let e = sc.inner.next();
                match &e {
                    Some(Ok((ikey, _))) => {
                        let uk = key::user_key(ikey);
                        let loaded = sc.loaded();
                        if loaded != sc.counted_at && sc.keys.holds(uk) {
                            sc.useful += 1;
                            sc.counted_at = loaded;
                        }
                        if sc.open
                            && let Some(w) = &sc.watch
                            && let Some(false_positive) = w.judge(uk, sc.dir)
                        {
                            sc.open = false;
                            if false_positive {
                                sc.file.io.add(w.false_positive());
                            }
                        }
                    }
                    None | Some(Err(_)) if sc.open => {
                        sc.open = false;
                        if e.is_none()
                            && let Some(w) = &sc.watch
                        {
                            sc.file.io.add(w.false_positive());
                        }
                    }
                    _ => {}
                }
                e
            }
            Source::Level {
                files,
                scan,
                dir,
                start,
                current,
                sequential,
            } => loop {
                if let Some(it) = current {
                    match it.next() {
                        Some(e) => return Some(e),
                        None => *current = None,
                    }
                }
                let (f, watched) = match dir {
                    Direction::Forward => files.pop_front()?,
                    Direction::Reverse => files.pop_back()?,
                };
                let from = start.take();
                let source = if *sequential {
                    Source::table(f.table.clone(), from.as_deref())
                } else {
                    Source::table_dir(f.table.clone(), from.as_deref(), *dir)
                };
                *current = Some(Box::new(match scan {
                    Some((keys, w)) => {
                        let w = w.as_ref().filter(|_| watched).cloned();
                        Source::scanned(source, f, keys.clone(), w, *dir)
                    }
                    None => source,
                }));
            },
        }
    }
}

struct HeapItem {
    key: Bytes,
    value: Bytes,
    source: usize,
    dir: Direction,
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
    // BinaryHeap is a max-heap. Forward: the smallest key on top, then the
    // newest source (lowest index). Reverse: the largest key, then the oldest
    // source, so that of two equal keys the newest source's comes last, where
    // a reverse reader takes its answer from.
    fn cmp(&self, other: &Self) -> Ordering {
        match self.dir {
            Direction::Forward => key::compare_internal(&other.key, &self.key)
                .then_with(|| other.source.cmp(&self.source)),
            Direction::Reverse => key::compare_internal(&self.key, &other.key)
                .then_with(|| self.source.cmp(&other.source)),
        }
    }
}

/// K-way merge of sources, all running in one direction, listed newest
/// first. After an error it yields that error once and ends.
pub(crate) struct MergeIter {
    sources: Vec<Source>,
    dir: Direction,
    heap: BinaryHeap<HeapItem>,
    primed: bool,
    failed: bool,
}

impl MergeIter {
    /// A forward merge.
    pub(crate) fn new(sources: Vec<Source>) -> Self {
        MergeIter::with_direction(sources, Direction::Forward)
    }

    /// A merge of `sources`, which must all run in direction `dir`.
    pub(crate) fn with_direction(sources: Vec<Source>, dir: Direction) -> Self {
        MergeIter {
            sources,
            dir,
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
                dir: self.dir,
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
        // The top's source usually has a next entry: put it in the top's
        // place and sift once (a pop and a push sift twice; the heap was 8%
        // of a full compaction's samples).
        let mut top = self.heap.peek_mut()?;
        match self.sources[top.source].next() {
            Some(Ok((key, value))) => {
                let key = std::mem::replace(&mut top.key, key);
                let value = std::mem::replace(&mut top.value, value);
                drop(top);
                Some(Ok((key, value)))
            }
            None => {
                let top = PeekMut::pop(top);
                Some(Ok((top.key, top.value)))
            }
            Some(Err(e)) => {
                self.failed = true;
                Some(Err(e))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::{ValueKind, make_internal_key};

    fn keys(m: MergeIter) -> Vec<(Vec<u8>, u64)> {
        m.map(|e| {
            let (k, _) = e.unwrap();
            let p = key::parse(&k).unwrap();
            (p.user_key.to_vec(), p.seq)
        })
        .collect()
    }

    #[test]
    fn memtables_merge_both_ways_and_resume_across_chunks() {
        let a = Arc::new(MemTable::new());
        let b = Arc::new(MemTable::new());
        let mut want = Vec::new();
        for i in 0..(3 * MEM_CHUNK as u64) {
            let k = format!("k{:05}", i / 2).into_bytes();
            let m = if i % 3 == 0 { &a } else { &b };
            m.insert(&k, i + 1, ValueKind::Value, b"v");
            want.push((k, i + 1));
        }
        want.sort_by(|x, y| x.0.cmp(&y.0).then(y.1.cmp(&x.1)));
        let sources = |dir, start: Option<Bytes>| {
            vec![
                Source::mem_dir(a.clone(), u64::MAX >> 8, start.clone(), dir),
                Source::mem_dir(b.clone(), u64::MAX >> 8, start, dir),
            ]
        };
        let fwd = keys(MergeIter::new(sources(Direction::Forward, None)));
        assert_eq!(fwd, want);
        let rev = keys(MergeIter::with_direction(
            sources(Direction::Reverse, None),
            Direction::Reverse,
        ));
        assert_eq!(rev, want.iter().rev().cloned().collect::<Vec<_>>());
        // From a bound: the entries <= (k00100, 0, Deletion), backward.
        let upper = Bytes::from(make_internal_key(b"k00100", 0, ValueKind::Deletion));
        let rev = keys(MergeIter::with_direction(
            sources(Direction::Reverse, Some(upper)),
            Direction::Reverse,
        ));
        let expect: Vec<_> = want
            .iter()
            .filter(|(k, _)| k.as_slice() <= b"k00100".as_slice())
            .rev()
            .cloned()
            .collect();
        assert_eq!(rev, expect);
    }
}
