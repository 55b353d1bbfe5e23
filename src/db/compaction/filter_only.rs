//! The filter-only rewrite of one file: a new table whose data blocks are
//! the old file's, copied as stored ([`TableBuilder::add_stored_block`]),
//! with the filters its level gets now ([`super::refilter`]).
//!
//! A filter rebuild replaces a file by the one a compaction of that file
//! alone would write (`OutputSize::Whole`, in its own level). When nothing
//! in that rewrite would change a data block, the blocks are copied instead
//! of merged, re-encoded and recompressed: each is read in readahead chunks,
//! its checksum verified ([`crate::sst::Table::stored_blocks`]), its keys decoded for the
//! new point, prefix and range filters and the properties, and its bytes
//! written as they were. The copy is taken when it writes exactly the file
//! the merge would:
//!
//! - the file holds no range tombstones (a merge re-cuts them and drops
//!   those it may, and drops the versions they hide);
//! - the merge drops no entry: no two versions of a key in one snapshot
//!   stripe, no tombstone in the lowest stripe over a key no deeper level
//!   holds ([`Retention`]);
//! - its blocks are the ones the store's builder writes: same codec
//!   (compression and level), restart interval, and block size
//!   ([`TableBuilder::add_stored_block`] refuses any other block).
//!
//! The checksum need not match: each block's trailer is computed anew, at
//! its offset in the new file, by the same code as for any block.
//! Otherwise the copy stops at the first block that does not qualify, its
//! file is removed, and the caller merges the file as a compaction does.
//!
//! At 10^6 keys (the study's default load, 48 files below L0) the copy
//! makes a configuration's filters in a fraction of the merge's time
//! (docs/design.md, "Filters per level").

use std::path::Path;

use super::output::{Outputs, builder_options, open_output};
use super::{FileNumbers, Retention};
use crate::db::caches::Caches;
use crate::db::version::{FileHandle, Version};
use crate::error::{Error, Result};
use crate::filter::FilterPolicy;
use crate::key::{self, ValueKind};
use crate::options::Options;
use crate::sst::{KeyFormat, TableBuilder};

/// Rewrites `f`, a file of `level` in `v`, with `policy` and the store's
/// prefix and range filters, its data blocks copied as stored. `Ok(None)`
/// when the copy would not write the file a merge writes (module docs):
/// nothing is left behind, and the caller merges instead. A damaged block
/// of `f` is its [`Error::Corruption`].
#[allow(clippy::too_many_arguments)]
pub(crate) fn rewrite(
    dir: &Path,
    opts: &Options,
    level: usize,
    v: &Version,
    f: &FileHandle,
    policy: Option<FilterPolicy>,
    numbers: &(dyn FileNumbers + Sync),
    retention: &Retention,
    caches: &Caches,
) -> Result<Option<Outputs>> {
    let table = &f.table;
    let compression = opts.compression.for_level(level);
    if table.range_tombstone_count() > 0
        || table.entries() == 0
        || table.key_format() != KeyFormat::Internal
        || table.compression() != compression
    {
        return Ok(None);
    }
    let new = numbers.new_table(dir, &*opts.fs)?;
    let path = new.path.clone();
    let mut b = TableBuilder::with_file(
        new.file,
        new.path,
        builder_options(opts, policy, compression),
    );
    let mut kept = Kept::new(v, level, retention);
    let copied = (|| -> Result<bool> {
        for block in table.stored_blocks() {
            let block = block?;
            match b.add_stored_block_if(&block, &mut |k| kept.keeps(k)) {
                Ok(true) => {}
                Ok(false) | Err(Error::InvalidArgument(_)) => return Ok(false),
                Err(e) => return Err(e),
            }
        }
        Ok(true)
    })();
    match copied {
        Ok(true) => {}
        other => {
            drop(b);
            let _ = opts.fs.remove_file(&path);
            return other.map(|_| None);
        }
    }
    let t = b.finish_unsynced()?;
    let bytes_written = t.file_size();
    let fh = open_output(t.sync()?, caches, opts)?;
    Ok(Some(Outputs {
        files: vec![fh],
        bytes_written,
    }))
}

/// Whether a merge of one file keeps every entry: what
/// `output::write_tables` drops, checked entry by entry.
struct Kept<'a> {
    v: &'a Version,
    level: usize,
    retention: &'a Retention,
    /// The previous entry's user key and stripe.
    last_user_key: Vec<u8>,
    last_stripe: Option<usize>,
}

impl<'a> Kept<'a> {
    fn new(v: &'a Version, level: usize, retention: &'a Retention) -> Self {
        Kept {
            v,
            level,
            retention,
            last_user_key: Vec::new(),
            last_stripe: None,
        }
    }

    /// Whether the merge keeps the entry of internal key `key` (entries in
    /// table order, continuing the previous ones).
    fn keeps(&mut self, key: &[u8]) -> bool {
        let Some(k) = key::parse(key) else {
            // Left to the merge, which reports it.
            return false;
        };
        let stripe = self.retention.stripe(k.seq);
        let new_key = self.last_stripe.is_none() || self.last_user_key != k.user_key;
        if !new_key && self.last_stripe == Some(stripe) {
            return false; // an older version no reader sees
        }
        if k.kind == ValueKind::Deletion
            && stripe == 0
            && !self.v.deeper_covers(self.level, k.user_key)
        {
            return false; // a tombstone over nothing
        }
        if new_key {
            self.last_user_key.clear();
            self.last_user_key.extend_from_slice(k.user_key);
        }
        self.last_stripe = Some(stripe);
        true
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicU64;

    use bytes::Bytes;

    use super::super::output::{TestNumbers, write_outputs};
    use super::super::{Compaction, OutputSize, run};
    use super::*;
    use crate::range_tombstone::Fragments;

    /// One level-1 file of `entries` `(user key, seq, kind)`, numbered 1,
    /// in a version of its own, written keeping what `snapshots` see.
    fn one_file(
        dir: &Path,
        opts: &Options,
        entries: &[(String, u64, ValueKind)],
        snapshots: Vec<u64>,
    ) -> Version {
        let entries = entries.iter().map(|(k, seq, kind)| {
            let k = key::make_internal_key(k.as_bytes(), *seq, *kind);
            Ok((Bytes::from(k), Bytes::from(format!("{seq} ").repeat(30))))
        });
        let out = write_outputs(
            dir,
            opts,
            OutputSize::Whole,
            entries,
            None,
            opts.compression.for_level(1),
            &TestNumbers(AtomicU64::new(1)),
            &Retention::new(snapshots),
            &|_| false,
            &Fragments::default(),
            &|_, _| false,
            &[],
            None,
            Caches::new(opts),
        )
        .unwrap();
        let mut v = Version::empty(4);
        v.levels[1].extend(out.files);
        v.sort();
        v
    }

    fn values(n: usize) -> Vec<(String, u64, ValueKind)> {
        (0..n)
            .map(|i| (format!("k{i:06}"), 1, ValueKind::Value))
            .collect()
    }

    fn copy(dir: &Path, opts: &Options, v: &Version, snapshots: Vec<u64>) -> Option<Outputs> {
        let f = &v.levels[1][0];
        let policy = Some(FilterPolicy::blocked512(10.0));
        let numbers = TestNumbers(AtomicU64::new(100));
        let caches = Caches::new(opts);
        rewrite(
            dir,
            opts,
            1,
            v,
            f,
            policy,
            &numbers,
            &Retention::new(snapshots),
            &caches,
        )
        .unwrap()
    }

    /// The copy writes the file a merge of the file alone writes: same
    /// manifest entry, same properties (but the creation time).
    #[test]
    fn the_copy_is_the_file_a_merge_writes() {
        let dir = tempfile::tempdir().unwrap();
        let opts = Options::default(); // LZ4 below L0
        let v = one_file(dir.path(), &opts, &values(5000), Vec::new());
        let f = v.levels[1][0].clone();
        assert!(f.table.data_blocks() > 20);
        let copied = copy(dir.path(), &opts, &v, Vec::new()).expect("copied");
        let one = Compaction {
            level: 1,
            inputs: vec![f.clone()],
            next_inputs: Vec::new(),
            output_level: 1,
            move_only: false,
        };
        let merged = run(
            dir.path(),
            &opts,
            OutputSize::Whole,
            &v,
            &one,
            Some(FilterPolicy::blocked512(10.0)),
            None,
            &TestNumbers(AtomicU64::new(200)),
            &Retention::new(Vec::new()),
            Caches::new(&opts),
        )
        .unwrap();
        let (c, m) = (&copied.files[0], &merged.files[0]);
        assert_eq!((c.number(), m.number()), (100, 200));
        let mut cm = c.meta.clone();
        cm.number = 200;
        assert_eq!(cm, m.meta);
        assert_eq!(copied.bytes_written, merged.bytes_written);
        let mut cp = c.table.properties().clone();
        cp.creation_time = m.table.properties().creation_time;
        assert_eq!(&cp, m.table.properties());
        assert_eq!(cp.compression, crate::sst::Compression::Lz4);
        let read = |t: &crate::sst::Table| t.iter().map(Result::unwrap).collect::<Vec<_>>();
        assert!(read(&c.table) == read(&f.table));
    }

    /// A file the merge would change is not copied, and leaves no file.
    #[test]
    fn what_a_merge_drops_is_not_copied() {
        let files = |d: &Path| std::fs::read_dir(d).unwrap().count();
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let opts = Options::default();
        // Two versions of a key: the merge keeps the older one only for a
        // snapshot between them.
        let mut e = values(2000);
        e.insert(700, ("k000699".into(), 2, ValueKind::Value));
        e[699].1 = 5;
        let v = one_file(d, &opts, &e, vec![3]);
        let n = files(d);
        assert!(copy(d, &opts, &v, Vec::new()).is_none());
        assert_eq!(files(d), n);
        assert!(copy(d, &opts, &v, vec![3]).is_some());
        // A tombstone with nothing below it to hide.
        let dir = tempfile::tempdir().unwrap();
        let mut e = values(2000);
        e[1500].2 = ValueKind::Deletion;
        let v = one_file(dir.path(), &opts, &e, Vec::new());
        assert!(copy(dir.path(), &opts, &v, Vec::new()).is_none());
        // Another block size.
        let dir = tempfile::tempdir().unwrap();
        let v = one_file(dir.path(), &opts, &values(2000), Vec::new());
        let other = Options {
            block_size: 8192,
            ..Options::default()
        };
        assert!(copy(dir.path(), &other, &v, Vec::new()).is_none());
    }
}
