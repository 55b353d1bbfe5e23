//! Leveled compaction: choosing what to merge, and writing merged output files.
//!
//! L0 files overlap one another, so when there are `l0_compaction_trigger` of
//! them, or they hold more data than the base level's target (at least
//! `level1_max_bytes`), they are merged,
//! all at once, with the L1 files they overlap. A level
//! n ≥ 1 over its target size (`level1_max_bytes · multiplier^(n-1)`) gives up
//! one file (the one meeting the fewest bytes below per byte of its own, as
//! RocksDB's default `kMinOverlappingRatio`; ties round-robin through the key
//! space, as LevelDB picks) to be merged with the files of level n+1 it
//! overlaps. The level with the highest
//! size/target score goes first. The output keeps, of each user key, the
//! newest version each live snapshot sees and the newest of all ([`Retention`]);
//! it drops a tombstone that no snapshot needs when no deeper level could
//! hold an older value of the key.
//!
//! With `Options::dynamic_level_bytes` the targets come from the bottom up
//! instead ([`shape`]): L0 compacts into the *base level*, and the levels
//! between L1 and the base stay empty.
//!
//! A compaction is picked in `pick.rs`, run in `run.rs` (its inputs merged
//! by `output.rs`) and installed by `db/install.rs`, the path every change
//! to the tree takes. Filter rebuilds are picked in `refilter.rs` and run
//! in `rebuild.rs`, each file's blocks copied as stored by `filter_only.rs`
//! where they can be.

pub(crate) mod allocation;
#[cfg(test)]
mod datadriven_tests;
pub(crate) mod filter_only;
mod output;
mod pick;
mod rebuild;
pub(crate) mod refilter;
mod run;
pub(crate) mod table_files;
#[cfg(test)]
mod tests;

#[cfg(test)]
pub(crate) use output::test_table;
pub(crate) use output::{ChooseFilter, Outputs, file_meta, merge_inputs, write_outputs};
pub(crate) use pick::{extend_trivial_move, idle_l0, pick, scores, shape, whole_or_next};

use std::path::Path;
use std::sync::Arc;

use crate::db::caches::Caches;
use crate::db::compaction::table_files::{NewTable, create_table};
use crate::db::filename;
use crate::db::iter::seek_key;
use crate::db::manifest::{FileMeta, FilterMeta};
use crate::db::merge::{MergeIter, Source};
use crate::db::version::{FileHandle, Version};
use crate::error::{Error, Result};
use crate::filter::FilterPolicy;
use crate::fs::FileSystem;
use crate::key::{self, ValueKind};
use crate::options::Options;
use crate::sst::{KeyFormat, Table, TableBuilder, TableBuilderOptions, TableSummary};

/// A chosen compaction.
#[derive(Debug)]
pub(crate) struct Compaction {
    /// Level of `inputs`.
    pub level: usize,
    /// Files of `level` to merge.
    pub inputs: Vec<Arc<FileHandle>>,
    /// Overlapping files of the output level.
    pub next_inputs: Vec<Arc<FileHandle>>,
    /// The level the output goes to: `level + 1`, except for L0 under dynamic
    /// level sizes (the base level) and for a full compaction, which skips
    /// empty levels.
    pub output_level: usize,
    /// The inputs go down as they are (or each rewritten alone where the
    /// output level wants another filter or compression), not merged: one
    /// file of a level ≥ 1 that overlaps nothing in the output level, or the
    /// files of a picked L0 compaction that overlap neither one another nor
    /// the output level (RocksDB moves such L0 files too).
    pub move_only: bool,
}

impl Compaction {
    /// The level the output goes to.
    pub fn output_level(&self) -> usize {
        self.output_level
    }

    /// Every input file.
    pub fn all_inputs(&self) -> impl Iterator<Item = &Arc<FileHandle>> {
        self.inputs.iter().chain(&self.next_inputs)
    }

    /// The whole user-key range of the inputs.
    pub(crate) fn range(&self) -> (Vec<u8>, Vec<u8>) {
        let lo = self
            .all_inputs()
            .map(|f| f.smallest_user_key())
            .min()
            .unwrap_or_default();
        let hi = self
            .all_inputs()
            .map(|f| f.largest_user_key())
            .max()
            .unwrap_or_default();
        (lo.to_vec(), hi.to_vec())
    }
}

/// Which versions a flush or compaction keeps, given the live snapshots'
/// sequence numbers `s1 < s2 < … < sn`. They cut the sequence numbers into
/// *stripes* `[0, s1]`, `(s1, s2]`, …, `(sn, ∞)`; every reader (a snapshot,
/// or the latest state in the top stripe) sees, of each key, the newest
/// version at or below its sequence number: the newest version of some
/// stripe. So of each key the newest version in each stripe is kept and the
/// rest dropped (RocksDB's rule; LevelDB keeps every version above `s1`).
/// A tombstone in the lowest stripe hides nothing any reader could see: it
/// may go where no deeper level holds the key.
#[derive(Debug, Clone, Default)]
pub(crate) struct Retention {
    /// Live snapshots, ascending, without repeats.
    snapshots: Vec<u64>,
}

impl Retention {
    /// The rule for the live snapshots `snapshots` (ascending).
    pub(crate) fn new(snapshots: Vec<u64>) -> Self {
        debug_assert!(snapshots.windows(2).all(|w| w[0] < w[1]));
        Retention { snapshots }
    }

    /// The stripe of sequence number `seq`: how many snapshots are below it.
    /// Readers see the same versions of every key in it.
    fn stripe(&self, seq: u64) -> usize {
        self.snapshots.partition_point(|&s| s < seq)
    }
}

/// Allocates file numbers for outputs (and reserves them against deletion).
pub(crate) trait FileNumbers {
    /// A fresh file number (reserved in the MANIFEST before it is returned).
    fn next_file_number(&self) -> Result<u64>;

    /// A new, empty table file in `dir` under a fresh number.
    fn new_table(&self, dir: &Path, fs: &dyn FileSystem) -> Result<NewTable> {
        create_table(fs, dir, self.next_file_number()?)
    }

    /// [`FileNumbers::new_table`] written past the page cache where the
    /// file system allows ([`FileSystem::create_new_direct`]).
    fn new_direct_table(&self, dir: &Path, fs: &dyn FileSystem) -> Result<NewTable> {
        let path = filename::table_file(dir, self.next_file_number()?);
        let file = fs
            .create_new_direct(&path)
            .map_err(|e| Error::io(format!("create {}", path.display()), e))?;
        Ok(NewTable { path, file })
    }
}

/// How large the files a flush or compaction writes may grow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum OutputSize {
    /// Cut near this many bytes ([`Options::target_file_size`]; see
    /// [`write_outputs`] for the boundaries that may end a file earlier or
    /// let it grow to twice this).
    Target(u64),
    /// One file whatever its size: a flush, or a file rewritten in place of a
    /// move (which stays one file, as moved). Never split into shards.
    Whole,
}
