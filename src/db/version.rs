//! The set of live files, level by level, as one immutable snapshot.
//!
//! A [`Version`] is replaced, never modified: flushes and compactions build a
//! new one and swap it in, while readers keep using the one they started with.
//! Each file's [`Table`] (index and filter in memory) is opened once and shared
//! by every version that contains it.

use std::sync::Arc;

use crate::db::manifest::FileMeta;
use crate::key;
use crate::sst::Table;
use crate::stats::AtomicIo;

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
}

impl FileHandle {
    pub(crate) fn new(meta: FileMeta, table: Arc<Table>) -> Self {
        let predicted_fpr = table
            .filter()
            .filter(|f| f.is_usable())
            .map_or(1.0, |f| f.predicted_fpr());
        FileHandle {
            meta,
            table,
            io: AtomicIo::default(),
            predicted_fpr,
        }
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

    /// Whether `user_key` lies inside the file's key range.
    pub fn covers(&self, user_key: &[u8]) -> bool {
        self.smallest_user_key() <= user_key && user_key <= self.largest_user_key()
    }

    /// Whether the file's range meets `[lo, hi]` (user keys; `None` = unbounded).
    pub fn overlaps(&self, lo: Option<&[u8]>, hi: Option<&[u8]>) -> bool {
        lo.is_none_or(|lo| self.largest_user_key() >= lo)
            && hi.is_none_or(|hi| self.smallest_user_key() <= hi)
    }
}

/// An immutable snapshot of the files of every level.
#[derive(Debug, Clone)]
pub struct Version {
    /// `levels[0]`: L0 files, newest (highest number) first; deeper levels:
    /// disjoint files sorted by smallest key.
    pub levels: Vec<Vec<Arc<FileHandle>>>,
}

impl Version {
    /// An empty version with `n` levels.
    pub fn empty(n: usize) -> Self {
        Version {
            levels: vec![Vec::new(); n],
        }
    }

    /// Restores the ordering invariants after edits.
    pub fn sort(&mut self) {
        self.levels[0].sort_by_key(|f| std::cmp::Reverse(f.number()));
        for level in self.levels.iter_mut().skip(1) {
            level.sort_by(|a, b| key::compare_internal(&a.meta.smallest, &b.meta.smallest));
        }
    }

    /// The one file of `level` (≥ 1) that may hold `user_key`.
    pub fn file_for(&self, level: usize, user_key: &[u8]) -> Option<&Arc<FileHandle>> {
        let files = &self.levels[level];
        // First file whose largest user key is ≥ user_key.
        let i = files.partition_point(|f| f.largest_user_key() < user_key);
        files.get(i)
    }

    /// Files of `level` whose ranges meet `[lo, hi]` (user keys).
    pub fn overlapping(
        &self,
        level: usize,
        lo: Option<&[u8]>,
        hi: Option<&[u8]>,
    ) -> Vec<Arc<FileHandle>> {
        self.levels[level]
            .iter()
            .filter(|f| f.overlaps(lo, hi))
            .cloned()
            .collect()
    }

    /// Bytes of the data blocks of the files of `level`: level targets are
    /// about data, so the tree's shape does not depend on the filter
    /// configuration (filter blocks, and the properties that describe them,
    /// differ in size between configurations).
    pub fn level_bytes(&self, level: usize) -> u64 {
        self.levels[level]
            .iter()
            .map(|f| f.table.properties().data_size)
            .sum()
    }

    /// Entries in the files of `level`.
    pub fn level_entries(&self, level: usize) -> u64 {
        self.levels[level].iter().map(|f| f.meta.entries).sum()
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
        (level + 1..self.levels.len()).any(|l| {
            self.file_for(l, user_key)
                .is_some_and(|f| f.covers(user_key))
        })
    }
}
