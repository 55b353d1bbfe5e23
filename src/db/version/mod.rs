//! The set of live files, level by level, as one immutable snapshot.
//!
//! About 16% of this file is its unit tests (the `tests` module at the end);
//! the rest is `Version` and the types it is made of: `FileHandle` (one file)
//! and `LevelIndex` (one level's search).
//!
//! A [`Version`] is replaced, never modified: flushes and compactions build a
//! new one and swap it in, while readers keep using the one they started with.
//! Each file's [`Table`] (index and filter in memory) is opened once and shared
//! by every version that contains it.
//!
//! Beside it: the version set that installs each new version through the
//! MANIFEST (`version_set.rs`, `manifest.rs`), recovery from both at open
//! (`recovery.rs`), the names of the store's files (`filename.rs`) and the
//! store's recorded design (`options_file.rs`).

pub mod filename;
pub(crate) mod history;
pub mod manifest;
pub mod options_file;
pub(crate) mod recovery;
pub(crate) mod version_set;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::db::manifest::FileMeta;
use crate::filter::Filter;
use crate::key::{self, prefix};
use crate::sst::Table;
use crate::tally::AtomicIo;

/// One live SSTable: its manifest entry, the open table, and its read counters.
#[derive(Debug)]
pub struct FileHandle {
    /// Manifest metadata (number, size, key range).
    pub meta: FileMeta,
    /// The open table.
    pub table: Arc<Table>,
    /// Lookup costs charged to this file.
    pub(crate) io: AtomicIo,
    /// Modelled FPR of the filter (1.0 without a usable one), computed once:
    /// every lookup that probes the file adds it to the predicted reads.
    predicted_fpr: f64,
    /// The table holds range tombstones: a lookup inside the file's range
    /// consults them whatever its filter says (kept here, beside `io`, so
    /// that a lookup in a file without any does not touch the table).
    pub(crate) has_range_tombstones: bool,
    /// The filter, loaded because the filter memory budget chose it, for a
    /// table opened with its filter on demand.
    pinned: Mutex<Option<Filter>>,
    /// The lookups seen by this file, for the workload-aware filter
    /// allocation (`compaction::allocation`).
    pub(crate) history: history::LookupHistory,
}

impl FileHandle {
    pub(crate) fn new(meta: FileMeta, table: Arc<Table>) -> Self {
        let predicted_fpr = table
            .filter_info()
            .filter(|f| f.is_usable())
            .map_or(1.0, |f| f.predicted_fpr);
        let has_range_tombstones = !table.range_tombstones().is_empty();
        FileHandle {
            meta,
            table,
            io: AtomicIo::default(),
            predicted_fpr,
            has_range_tombstones,
            pinned: Mutex::new(None),
            history: Default::default(),
        }
    }

    /// The usable filter held in memory for this file: the table's own, or
    /// the one the filter memory budget pinned. `None`: no usable filter, or
    /// one read on demand.
    pub fn filter(&self) -> Option<Filter> {
        match self.table.filter() {
            Some(f) if f.is_usable() => Some(f.clone()),
            Some(_) => None,
            None => self
                .pinned
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clone(),
        }
    }

    /// Whether the usable filter is held in memory.
    pub fn filter_pinned(&self) -> bool {
        self.table.filter().is_some_and(Filter::is_usable)
            || self
                .pinned
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .is_some()
    }

    /// Holds the filter in memory (read from the file if not yet), or drops
    /// it. A filter that cannot be read stays on demand: the lookups that
    /// need it report the damage.
    fn set_pinned(&self, pin: bool) {
        if self.table.filter().is_some() {
            return; // held by the table for its life
        }
        let mut g = self.pinned.lock().unwrap_or_else(|p| p.into_inner());
        if !pin {
            *g = None;
        } else if g.is_none()
            && let Ok(Some(f)) = self.table.load_filter()
            && f.is_usable()
        {
            *g = Some(f);
        }
    }

    /// Holds the table's index partitions in memory (read from the file
    /// if not yet), or drops them. An index that cannot be read stays on
    /// demand: the lookups that need it report the damage.
    fn set_index_pinned(&self, pin: bool) {
        let _ = self.table.pin_index(pin);
    }

    /// Modelled FPR of this file's filter (1.0 without a usable one).
    pub fn predicted_fpr(&self) -> f64 {
        self.predicted_fpr
    }

    /// File number.
    pub fn number(&self) -> u64 {
        self.meta.number
    }

    /// Smallest user key.
    pub fn smallest_user_key(&self) -> &[u8] {
        key::user_key(&self.meta.smallest)
    }

    /// Largest user key.
    pub fn largest_user_key(&self) -> &[u8] {
        key::user_key(&self.meta.largest)
    }

    /// Bytes of the file's data blocks: what level targets and compaction
    /// limits count, so that the tree's shape does not depend on the filter
    /// configuration (filter blocks, and the properties that describe them,
    /// differ in size between configurations).
    pub fn data_bytes(&self) -> u64 {
        self.table.properties().data_size
    }

    /// Whether the file's range meets `[lo, hi]` (user keys; `None` = unbounded).
    pub fn overlaps(&self, lo: Option<&[u8]>, hi: Option<&[u8]>) -> bool {
        lo.is_none_or(|lo| self.largest_user_key() >= lo)
            && hi.is_none_or(|hi| self.smallest_user_key() <= hi)
    }
}

/// What a point lookup needs of one level, as flat arrays in the level's
/// order: each file's boundaries (user keys), its usable filter and its
/// modelled FPR. A lookup binary-searches the 8-byte prefixes, held
/// contiguously (eight files per cache line), reads a full key only on a
/// prefix tie, and probes the filter from here: it touches no file handle,
/// table or key buffer of the files it passes over, nor of the one whose
/// filter rules the key out. (Searching the handles themselves costs two to
/// three dependent cache misses per step — the handle, then its key's
/// buffer — and reaching a filter two more: the handle, then the table.)
#[derive(Debug, Clone, Default)]
struct LevelIndex {
    smallest_prefix: Vec<u64>,
    largest_prefix: Vec<u64>,
    /// File i's smallest user key is `keys[ends[2i-1]..ends[2i]]` (from 0 for
    /// i = 0), its largest `keys[ends[2i]..ends[2i+1]]`.
    keys: Vec<u8>,
    ends: Vec<usize>,
    /// Each file's filter if usable (a clone shares the filter's bits).
    filters: Vec<Option<Filter>>,
    /// Each file's number, so that a new version can find the entries of
    /// the files it keeps without touching their handles.
    numbers: Vec<u64>,
    /// Each file's data bytes ([`FileHandle::data_bytes`]) and entries, for
    /// compaction picking and level sizes.
    data_bytes: Vec<u64>,
    entries: Vec<u64>,
    /// Whether each file holds range tombstones
    /// ([`FileHandle::has_range_tombstones`]), for compaction scores.
    tombstones: Vec<bool>,
}

impl LevelIndex {
    /// From each file's `(smallest, largest)` user keys and usable filter,
    /// in level order (numbers and data bytes zero: for tests of the search).
    #[cfg(test)]
    fn new<'a>(files: impl Iterator<Item = (&'a [u8], &'a [u8], Option<Filter>)>) -> Self {
        let mut b = LevelIndex::default();
        for (smallest, largest, filter) in files {
            b.push(smallest, largest, filter, [0; 3], false);
        }
        b
    }

    /// From the files of one level, in level order.
    fn of_files(files: &[Arc<FileHandle>]) -> Self {
        let mut b = LevelIndex::default();
        for f in files {
            b.push_file(f);
        }
        b
    }

    /// Appends an entry; `counts` is the file's number, data bytes and
    /// entries.
    fn push(
        &mut self,
        smallest: &[u8],
        largest: &[u8],
        filter: Option<Filter>,
        counts: [u64; 3],
        tombstones: bool,
    ) {
        let [number, data_bytes, entries] = counts;
        self.tombstones.push(tombstones);
        self.filters.push(filter);
        for k in [smallest, largest] {
            self.keys.extend_from_slice(k);
            self.ends.push(self.keys.len());
        }
        self.smallest_prefix.push(prefix(smallest));
        self.largest_prefix.push(prefix(largest));
        self.numbers.push(number);
        self.data_bytes.push(data_bytes);
        self.entries.push(entries);
    }

    /// Appends `f`'s entry, read from its handle.
    fn push_file(&mut self, f: &FileHandle) {
        self.push(
            f.smallest_user_key(),
            f.largest_user_key(),
            f.filter(),
            [f.number(), f.data_bytes(), f.meta.entries],
            f.has_range_tombstones,
        );
    }

    /// Appends a copy of `other`'s entry `j`: contiguous arrays only, no
    /// file handle or table touched (rebuilding an index from the handles
    /// costs two to three dependent cache misses per file of the level, on
    /// every edit: a fifth of the compaction thread's time at 10^7 keys).
    fn push_copy(&mut self, other: &LevelIndex, j: usize) {
        self.push(
            other.key(2 * j),
            other.key(2 * j + 1),
            other.filters[j].clone(),
            [other.numbers[j], other.data_bytes[j], other.entries[j]],
            other.tombstones[j],
        );
    }

    /// Files in the index.
    fn len(&self) -> usize {
        self.largest_prefix.len()
    }

    /// The files whose ranges meet `[lo, hi]` (`None` = unbounded), for a
    /// level of disjoint sorted ranges: `first..end` (empty, at the place
    /// such a range would go, when none).
    fn span(&self, lo: Option<&[u8]>, hi: Option<&[u8]>) -> (usize, usize) {
        let first = lo.map_or(0, |lo| self.first_not_below(lo, prefix(lo)));
        let Some(hi) = hi else {
            return (first, self.len());
        };
        let hp = prefix(hi);
        // The first file from `first` on whose smallest key is above `hi`.
        let (mut a, mut b) = (first, self.len());
        while a < b {
            let mid = a + (b - a) / 2;
            if cmp_keys(self.smallest_prefix[mid], self.key(2 * mid), hp, hi).is_le() {
                a = mid + 1;
            } else {
                b = mid;
            }
        }
        (first, a)
    }

    /// Where `key` falls, for a level of disjoint sorted ranges.
    #[inline]
    fn slot(&self, key: &[u8]) -> Slot {
        let kp = prefix(key);
        let i = self.first_not_below(key, kp);
        if i == self.largest_prefix.len() {
            Slot::None
        } else if self.covers(i, key, kp) {
            Slot::In(i)
        } else {
            Slot::Below(i)
        }
    }

    /// Where each key of a batch falls, the keys taken in ascending order:
    /// `order` lists indexes into `keys` sorted by key (`kps[i]` is
    /// `prefix(keys[i])`). Pushes one [`Run`] per file that some keys reach,
    /// in level order; keys past the last file are in none. Each file's run
    /// is cut from the sorted keys by two binary searches (its largest key,
    /// its smallest), so the cost grows with the files reached, not the keys.
    fn runs_sorted(&self, keys: &[&[u8]], kps: &[u64], order: &[usize], out: &mut Vec<Run>) {
        out.clear();
        let n = self.largest_prefix.len();
        let (mut j, mut pos) = (0, 0);
        while pos < order.len() && j < n {
            let (key, kp) = (keys[order[pos]], kps[order[pos]]);
            // The first file whose largest key is >= the smallest key left:
            // the keys ascend, so never before the previous run's file.
            while j < n && cmp_keys(self.largest_prefix[j], self.key(2 * j + 1), kp, key).is_lt() {
                j += 1;
            }
            if j == n {
                break;
            }
            let (sp, lp) = (self.smallest_prefix[j], self.largest_prefix[j]);
            let (smallest, largest) = (self.key(2 * j), self.key(2 * j + 1));
            let rest = &order[pos..];
            let end =
                pos + rest.partition_point(|&i| cmp_keys(kps[i], keys[i], lp, largest).is_le());
            let below = pos
                + rest[..end - pos]
                    .partition_point(|&i| cmp_keys(kps[i], keys[i], sp, smallest).is_lt());
            out.push(Run {
                file: j,
                start: pos,
                below,
                end,
            });
            pos = end;
            j += 1;
        }
    }

    fn key(&self, j: usize) -> &[u8] {
        let start = if j == 0 { 0 } else { self.ends[j - 1] };
        &self.keys[start..self.ends[j]]
    }

    /// The first file whose largest key is `>= key` (`len` if none).
    #[inline]
    fn first_not_below(&self, key: &[u8], kp: u64) -> usize {
        // On prefixes alone first: `partition_point` compiles to a loop
        // without data-dependent branches, so a search of random keys pays
        // no mispredictions (nine of them per level at 400 files, measured
        // as the search's hottest instructions with a branchy loop).
        let lp = &self.largest_prefix;
        let i = lp.partition_point(|&p| p < kp);
        if i == lp.len() || lp[i] != kp {
            return i;
        }
        // Files whose largest key shares the key's 8-byte prefix: compare
        // whole keys among them.
        let (mut lo, mut hi) = (i, i + lp[i..].partition_point(|&p| p == kp));
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.key(2 * mid + 1) < key {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// Whether file `i`'s range holds `key` (smallest `<=` key `<=` largest);
    /// `kp` is `prefix(key)`.
    #[inline]
    fn covers(&self, i: usize, key: &[u8], kp: u64) -> bool {
        let (sp, lp) = (self.smallest_prefix[i], self.largest_prefix[i]);
        cmp_keys(sp, self.key(2 * i), kp, key).is_le()
            && cmp_keys(kp, key, lp, self.key(2 * i + 1)).is_le()
    }
}

/// Orders user keys `a` and `b` given their 8-byte prefixes `ap` and `bp`
/// (`prefix`): by the prefixes, and by the whole keys only on a tie.
#[inline]
fn cmp_keys(ap: u64, a: &[u8], bp: u64, b: &[u8]) -> std::cmp::Ordering {
    ap.cmp(&bp).then_with(|| a.cmp(b))
}

/// Where a user key falls in a level ≥ 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Slot {
    /// Past every file of the level.
    None,
    /// File `i` is the only one that may hold the key, but the key is below
    /// its smallest key (a key-range skip).
    Below(usize),
    /// File `i`'s range holds the key.
    In(usize),
}

/// The keys of a sorted batch that one file of a level may hold
/// ([`Version::runs_sorted`]): positions `start..end` in the batch's order,
/// of which `start..below` lie below the file's smallest key (key-range
/// skips) and `below..end` inside its range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Run {
    /// The file's index in its level.
    pub file: usize,
    /// First position of the run.
    pub start: usize,
    /// First position inside the file's range.
    pub below: usize,
    /// One past the run's last position.
    pub end: usize,
}

/// An immutable snapshot of the files of every level.
#[derive(Debug, Clone)]
pub struct Version {
    /// `levels[0]`: L0 files, newest (highest number) first; deeper levels:
    /// disjoint files sorted by smallest key. After changing it, call
    /// [`Version::sort`], which also rebuilds the lookup index.
    pub levels: Vec<Vec<Arc<FileHandle>>>,
    /// Each level's lookup index, in `levels`' order (shared with the
    /// versions whose level is the same).
    index: Vec<Arc<LevelIndex>>,
}

impl Version {
    /// An empty version with `n` levels.
    pub fn empty(n: usize) -> Self {
        Version {
            levels: vec![Vec::new(); n],
            index: (0..n).map(|_| Arc::default()).collect(),
        }
    }

    /// The chance that a lookup of a key drawn like the store's keys has
    /// its key inside each file's range, per level in level order: the
    /// share of all the store's keys that lie in the file's range, counting
    /// a partly covered file in proportion to the covered part of its range
    /// (by 8-byte key prefixes). An upper level that covers only part of
    /// the key space (its other files moved down) gets less than its share
    /// of its own keys, and a last level that is still filling up covers
    /// only part of the space too.
    pub fn probe_chances(&self) -> Vec<Vec<f64>> {
        let total: u64 = self.levels.iter().flatten().map(|f| f.meta.entries).sum();
        let covered = |g: &FileHandle, lo: &[u8], hi: &[u8]| -> f64 {
            covered_part(g.smallest_user_key(), g.largest_user_key(), lo, hi)
        };
        let share = |lo: &[u8], hi: &[u8]| -> f64 {
            if total == 0 {
                return 1.0;
            }
            let mut keys = 0.0;
            for (level, files) in self.levels.iter().enumerate() {
                // Deeper levels are sorted and disjoint: only the files from
                // the first that ends at or after `lo` can overlap.
                let from = if level == 0 {
                    0
                } else {
                    files.partition_point(|g| g.largest_user_key() < lo)
                };
                for g in &files[from..] {
                    if level > 0 && g.smallest_user_key() > hi {
                        break;
                    }
                    keys += g.meta.entries as f64 * covered(g, lo, hi);
                }
            }
            (keys / total as f64).min(1.0)
        };
        self.levels
            .iter()
            .map(|files| {
                files
                    .iter()
                    .map(|f| share(f.smallest_user_key(), f.largest_user_key()))
                    .collect()
            })
            .collect()
    }

    /// Chooses which files' filters and index partitions are held in
    /// memory under `budget` bytes (`None`: no budget; every table keeps
    /// the filter and index it opened with). What every table always holds
    /// (an index of one block, a partitioned index's top level) counts
    /// first; the rest of the budget goes to the candidates that save the
    /// most reads per byte, per lookup of a key drawn like the store's keys,
    /// present or missing counted alike (docs/design.md, "Metadata under a
    /// memory budget"):
    ///
    /// - file f's filter saves the filter-block read of each probe of f:
    ///   `p_f` per lookup, the chance its key falls in f's range
    ///   ([`Version::probe_chances`]);
    /// - f's index partitions save the partition read of each lookup that
    ///   gets past the filter: a missing key with chance `p_f · fpr_f`
    ///   (`p_f` without a usable filter), a present one when f holds it,
    ///   with chance `e_f / N`, f's share of the store's entries; the mean
    ///   of the two.
    ///
    /// Candidates are taken in decreasing reads saved per byte; one that
    /// does not fit in what is left is skipped, and smaller ones after it
    /// may still be taken. Call before [`Version::sort`], which indexes the
    /// filters held.
    pub fn pin_metadata(&self, budget: Option<u64>) {
        let Some(budget) = budget else { return };
        let chances = self.probe_chances();
        let total: u64 = self.levels.iter().flatten().map(|f| f.meta.entries).sum();
        let mut resident = 0u64;
        // (reads saved per byte, level, bytes, file, is the index)
        let mut candidates: Vec<(f64, usize, u64, &Arc<FileHandle>, bool)> = Vec::new();
        for (level, files) in self.levels.iter().enumerate() {
            for (f, &p) in files.iter().zip(&chances[level]) {
                resident += f.table.index_resident_bytes() as u64;
                let filter = f.table.filter_info().filter(|i| i.is_usable());
                if let Some(info) = filter {
                    let bytes = info.memory_bytes as u64;
                    candidates.push((p / bytes.max(1) as f64, level, bytes, f, false));
                }
                let bytes = f.table.index_partitions_memory_bytes() as u64;
                if bytes > 0 {
                    let miss = p * filter.map_or(1.0, |_| f.predicted_fpr());
                    let hit = f.meta.entries as f64 / total.max(1) as f64;
                    let saved = (miss + hit) / 2.0;
                    candidates.push((saved / bytes as f64, level, bytes, f, true));
                }
            }
        }
        // Ties (a level's files): upper levels first, then key order.
        candidates.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        let mut used = resident;
        for (_, _, bytes, f, index) in candidates {
            let pin = used.saturating_add(bytes) <= budget;
            if pin {
                used += bytes;
            }
            if index {
                f.set_index_pinned(pin);
            } else {
                f.set_pinned(pin);
            }
        }
    }

    /// Restores the ordering invariants after edits and rebuilds the lookup
    /// index.
    pub fn sort(&mut self) {
        self.sort_levels(|_| true);
    }

    /// [`Version::sort`] for the levels `changed` picks; the others keep
    /// their order and index.
    pub fn sort_levels(&mut self, changed: impl Fn(usize) -> bool) {
        for (level, files) in self.levels.iter_mut().enumerate() {
            if !changed(level) {
                continue;
            }
            if level == 0 {
                files.sort_by_key(|f| std::cmp::Reverse(f.number()));
            } else {
                files.sort_by(|a, b| key::compare_internal(&a.meta.smallest, &b.meta.smallest));
            }
            self.index[level] = Arc::new(LevelIndex::of_files(files));
        }
    }

    /// Sets `level` to the files `numbers` names, listed as an edit's
    /// state holds them (L0 by ascending number, deeper levels in key
    /// order), and rebuilds its index. A file the level already holds keeps
    /// its handle, and at a level ≥ 1 its index entry is copied, found by
    /// number in the index: no handle or table of a kept file is read, so
    /// an edit costs a copy of the level's flat arrays, not a cache miss
    /// or three per file. Other files come from `added`. Returns, as the
    /// error, the number of a file found in neither.
    pub(crate) fn replace_level(
        &mut self,
        level: usize,
        numbers: impl Iterator<Item = u64>,
        added: &HashMap<u64, Arc<FileHandle>>,
    ) -> std::result::Result<(), u64> {
        let old_files = &self.levels[level];
        let old = &self.index[level];
        let mut files = Vec::with_capacity(old_files.len() + added.len());
        let mut index = LevelIndex::default();
        // Kept files appear in the same order before and after, so each is
        // found at or after the last one found; a miss there (never in a
        // sorted level) searches the whole level.
        let mut j = 0;
        for n in numbers {
            if let Some(f) = added.get(&n) {
                index.push_file(f);
                files.push(f.clone());
                continue;
            }
            let at = match old.numbers[j.min(old.numbers.len())..]
                .iter()
                .position(|&m| m == n)
            {
                Some(k) => j + k,
                None => old.numbers.iter().position(|&m| m == n).ok_or(n)?,
            };
            index.push_copy(old, at);
            files.push(old_files[at].clone());
            j = at + 1;
        }
        if level == 0 {
            files.reverse();
            index = LevelIndex::of_files(&files);
        }
        self.levels[level] = files;
        self.index[level] = Arc::new(index);
        Ok(())
    }

    /// The handle of file `number` on `level`, found by number in the
    /// level's index.
    pub(crate) fn find(&self, level: usize, number: u64) -> Option<&Arc<FileHandle>> {
        let i = self.index[level]
            .numbers
            .iter()
            .position(|&m| m == number)?;
        Some(&self.levels[level][i])
    }

    /// Whether `level`'s lookup index is the one `other` has (not rebuilt).
    #[cfg(test)]
    pub(crate) fn shares_index(&self, other: &Version, level: usize) -> bool {
        Arc::ptr_eq(&self.index[level], &other.index[level])
    }

    /// Where `user_key` falls in `level` (≥ 1): the one file that may hold
    /// it, and whether the file's range does.
    #[inline]
    pub fn slot(&self, level: usize, user_key: &[u8]) -> Slot {
        self.index[level].slot(user_key)
    }

    /// Where a batch of keys falls in `level` (≥ 1), found in one walk
    /// along the level: `order` lists indexes into `keys` in ascending key
    /// order, `kps[i]` is `keys[i]`'s first 8 bytes as a big-endian number
    /// (zero-padded). `out` receives a [`Run`] per file reached, in order.
    pub fn runs_sorted(
        &self,
        level: usize,
        keys: &[&[u8]],
        kps: &[u64],
        order: &[usize],
        out: &mut Vec<Run>,
    ) {
        self.index[level].runs_sorted(keys, kps, order, out)
    }

    /// The usable filter of file `i` of `level`, if it has one.
    #[inline]
    pub fn filter(&self, level: usize, i: usize) -> Option<&Filter> {
        self.index[level].filters[i].as_ref()
    }

    /// Whether L0 file `i`'s range holds `user_key`.
    #[inline]
    pub fn l0_covers(&self, i: usize, user_key: &[u8]) -> bool {
        self.index[0].covers(i, user_key, prefix(user_key))
    }

    /// Files of `level` whose ranges meet `[lo, hi]` (user keys).
    pub fn overlapping(
        &self,
        level: usize,
        lo: Option<&[u8]>,
        hi: Option<&[u8]>,
    ) -> Vec<Arc<FileHandle>> {
        if level == 0 {
            return self.levels[0]
                .iter()
                .filter(|f| f.overlaps(lo, hi))
                .cloned()
                .collect();
        }
        let (first, end) = self.span(level, lo, hi);
        self.levels[level][first..end].to_vec()
    }

    /// The files of `level` (≥ 1) whose ranges meet `[lo, hi]` (user keys;
    /// `None` = unbounded): `first..end`, empty at the place such a range
    /// would go when none. Searched in the level's index.
    pub(crate) fn span(
        &self,
        level: usize,
        lo: Option<&[u8]>,
        hi: Option<&[u8]>,
    ) -> (usize, usize) {
        self.index[level].span(lo, hi)
    }

    /// File `i` of `level`'s `(smallest, largest)` user keys, from the
    /// level's index.
    pub(crate) fn range_of(&self, level: usize, i: usize) -> (&[u8], &[u8]) {
        let index = &self.index[level];
        (index.key(2 * i), index.key(2 * i + 1))
    }

    /// Each file of `level`'s data bytes ([`FileHandle::data_bytes`]), in
    /// level order, from the level's index.
    pub(crate) fn data_bytes_of(&self, level: usize) -> &[u64] {
        &self.index[level].data_bytes
    }

    /// The positions in `level` of the files holding range tombstones,
    /// from the level's index.
    pub(crate) fn files_with_tombstones(&self, level: usize) -> impl Iterator<Item = usize> + '_ {
        self.index[level]
            .tombstones
            .iter()
            .enumerate()
            .filter_map(|(i, &t)| t.then_some(i))
    }

    /// Bytes of the data blocks of the files of `level`
    /// ([`FileHandle::data_bytes`]).
    pub fn level_bytes(&self, level: usize) -> u64 {
        self.index[level].data_bytes.iter().sum()
    }

    /// Entries in the files of `level`.
    pub fn level_entries(&self, level: usize) -> u64 {
        self.index[level].entries.iter().sum()
    }

    /// The deepest level holding a file (0 if none).
    pub fn last_nonempty_level(&self) -> usize {
        self.levels.iter().rposition(|l| !l.is_empty()).unwrap_or(0)
    }

    /// The runs a lookup may probe, as `(level, entries)`: each L0 file, then
    /// each non-empty deeper level.
    pub fn runs(&self) -> Vec<(usize, u64)> {
        let mut runs: Vec<(usize, u64)> =
            self.levels[0].iter().map(|f| (0, f.meta.entries)).collect();
        for l in 1..self.levels.len() {
            let n = self.level_entries(l);
            if n > 0 {
                runs.push((l, n));
            }
        }
        runs
    }

    /// Every live file number.
    pub fn file_numbers(&self) -> impl Iterator<Item = u64> + '_ {
        self.levels.iter().flatten().map(|f| f.number())
    }

    /// Whether any level deeper than `level` has a file whose range covers
    /// `user_key` (if not, a tombstone written to `level` can be dropped).
    pub fn deeper_covers(&self, level: usize, user_key: &[u8]) -> bool {
        (level + 1..self.levels.len()).any(|l| matches!(self.slot(l, user_key), Slot::In(_)))
    }
}

/// The part of the user-key range `a..=b` that lies in `lo..=hi`: 0 or 1
/// when it lies wholly outside or inside, otherwise in proportion by 8-byte
/// key prefixes (a range within one prefix counts whole).
pub(crate) fn covered_part(a: &[u8], b: &[u8], lo: &[u8], hi: &[u8]) -> f64 {
    if b < lo || a > hi {
        0.0
    } else if a >= lo && b <= hi {
        1.0
    } else {
        let (ga, gb) = (prefix(a) as f64, prefix(b) as f64);
        let (lo_p, hi_p) = (prefix(lo) as f64, prefix(hi) as f64);
        if gb > ga {
            ((gb.min(hi_p) - ga.max(lo_p)) / (gb - ga)).clamp(0.0, 1.0)
        } else {
            1.0
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Keys over a tiny alphabet with lengths around 8, so that prefixes tie,
    /// keys are prefixes of each other and zero padding meets real zeros.
    fn key() -> impl Strategy<Value = Vec<u8>> {
        proptest::collection::vec(prop_oneof![Just(0u8), Just(1), Just(0xff)], 0..12)
    }

    fn naive(ranges: &[(Vec<u8>, Vec<u8>)], k: &[u8]) -> Slot {
        match ranges.iter().position(|(_, l)| l.as_slice() >= k) {
            None => Slot::None,
            Some(i) if ranges[i].0.as_slice() <= k => Slot::In(i),
            Some(i) => Slot::Below(i),
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

        /// The flat index places every key as a scan of the ranges does.
        #[test]
        fn slot_matches_a_scan(mut cuts in proptest::collection::vec(key(), 0..24),
                               probes in proptest::collection::vec(key(), 1..40)) {
            cuts.sort();
            cuts.dedup();
            // Disjoint ranges from consecutive cut points: [c0, c1], [c2, c3], ...
            // and single-key ranges from the odd one out.
            let ranges: Vec<(Vec<u8>, Vec<u8>)> = cuts
                .chunks(2)
                .map(|c| (c[0].clone(), c[c.len() - 1].clone()))
                .collect();
            let b = LevelIndex::new(ranges.iter().map(|(s, l)| (&s[..], &l[..], None)));
            for k in probes.iter().chain(&cuts) {
                prop_assert_eq!(b.slot(k), naive(&ranges, k), "key {:?} ranges {:?}", k, ranges);
            }
        }
    }

    /// One index entry as a comparable value: keys, filter held, number,
    /// data bytes, entries.
    type Entry = (Vec<u8>, Vec<u8>, bool, u64, u64, u64);

    /// The index entries of `v`'s level.
    fn entries(v: &Version, level: usize) -> Vec<Entry> {
        let ix = &v.index[level];
        (0..ix.len())
            .map(|j| {
                (
                    ix.key(2 * j).to_vec(),
                    ix.key(2 * j + 1).to_vec(),
                    ix.filters[j].is_some(),
                    ix.numbers[j],
                    ix.data_bytes[j],
                    ix.entries[j],
                )
            })
            .collect()
    }

    /// An edit's level, made by copying the kept files' index entries
    /// (`replace_level`), indexes exactly as one rebuilt from every handle;
    /// L0 comes out newest first. Random deletions and additions, fixed seed.
    #[test]
    fn replaced_level_indexes_as_a_full_rebuild() {
        use crate::db::compaction::test_table;
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let name = |i: u64| format!("k{i:04}");
        // Files at even slots to start; odd slots are free for additions.
        let mut v = Version::empty(3);
        for i in 0..40u64 {
            v.levels[1].push(test_table(d, 100 + i, &name(4 * i), &name(4 * i + 1)));
        }
        for n in [3u64, 1, 2] {
            v.levels[0].push(test_table(d, n, "a", "z"));
        }
        v.sort();
        let mut next = crate::test_rng::xorshift(0x9e37_79b9_7f4a_7c15);
        for round in 0..20u64 {
            // Level 1: drop about a third, add a few in the gaps.
            let mut keep: Vec<(String, u64)> = Vec::new();
            for (j, f) in v.levels[1].iter().enumerate() {
                if !next().is_multiple_of(3) {
                    keep.push((
                        String::from_utf8(v.range_of(1, j).0.to_vec()).unwrap(),
                        f.number(),
                    ));
                }
            }
            let mut added = HashMap::new();
            for k in 0..3u64 {
                let slot = (next() % 40) * 4 + 2;
                let n = 1000 + round * 10 + k;
                if keep.iter().all(|(lo, _)| *lo != name(slot)) && added.len() < 3 {
                    let f = test_table(d, n, &name(slot), &name(slot + 1));
                    keep.push((name(slot), n));
                    added.insert(n, f);
                }
            }
            keep.sort();
            v.replace_level(1, keep.iter().map(|(_, n)| *n), &added)
                .unwrap();
            let mut full = v.clone();
            full.sort();
            assert_eq!(entries(&v, 1), entries(&full, 1), "round {round}");
            assert_eq!(
                v.levels[1].iter().map(|f| f.number()).collect::<Vec<_>>(),
                keep.iter().map(|(_, n)| *n).collect::<Vec<_>>()
            );
        }
        // L0: ascending numbers in, newest first out.
        let l0 = HashMap::from([(7u64, test_table(d, 7, "b", "c"))]);
        v.replace_level(0, [1u64, 3, 7].into_iter(), &l0).unwrap();
        let order: Vec<u64> = v.levels[0].iter().map(|f| f.number()).collect();
        assert_eq!(order, [7, 3, 1]);
        let mut full = v.clone();
        full.sort();
        assert_eq!(entries(&v, 0), entries(&full, 0));
        // A number found nowhere is the error.
        assert_eq!(
            v.replace_level(1, [424242u64].into_iter(), &HashMap::new()),
            Err(424242)
        );
    }

    #[test]
    fn prefix_orders_as_the_keys() {
        let keys: [&[u8]; 7] = [
            b"",
            b"\0",
            b"ab",
            b"ab\0",
            b"ab\0\0\0\0\0\0",
            b"ab\0\0\0\0\0\0\0",
            b"ab\x01",
        ];
        for a in keys {
            for b in keys {
                if prefix(a) < prefix(b) {
                    assert!(a < b, "{a:?} {b:?}");
                }
            }
        }
    }
}
