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

use std::path::{Path, PathBuf};

use super::output::{Outputs, builder_options, open_output};
use super::{FileNumbers, Retention};
use crate::db::caches::Caches;
use crate::db::version::{FileHandle, Version};
use crate::error::{Error, Result};
use crate::filter::FilterPolicy;
use crate::fs::FileSystem;
use crate::key::{self, ValueKind};
use crate::options::Options;
use crate::sst::{KeyFormat, TableBuilder};

/// One store's side of a filter-only rewrite: where the new table goes and
/// what it gets. Several stores holding the same file (hard links of one
/// checkpoint) share one read of it ([`rewrite_many`]).
pub(crate) struct Target<'a> {
    /// The store's directory and options.
    pub dir: &'a Path,
    pub opts: &'a Options,
    /// The file's level in `v`, the store's version.
    pub level: usize,
    pub v: &'a Version,
    /// The filter the file's level gets now in this store.
    pub policy: Option<FilterPolicy>,
    /// The store's file numbers.
    pub numbers: &'a (dyn FileNumbers + Sync),
    /// The versions the store's snapshots see.
    pub retention: &'a Retention,
    pub caches: &'a Caches,
}

/// A table being written for one [`Target`].
struct Copy<'a> {
    b: TableBuilder,
    path: PathBuf,
    kept: Kept<'a>,
    fs: &'a dyn FileSystem,
}

impl Copy<'_> {
    /// Abandons the table: its file is removed.
    fn discard(self) {
        let Copy { b, path, fs, .. } = self;
        drop(b);
        let _ = fs.remove_file(&path);
    }
}

/// Rewrites `f` for each of `targets` (which all hold `f`, in the target's
/// level and version) with the target's filter and the store's prefix and
/// range filters, its data blocks copied as stored, read and checked once.
/// One answer per target, in order: `None` when the copy would not write
/// the file a merge writes (module docs), nothing being left behind, and
/// the caller merges instead. A damaged block of `f` is its
/// [`Error::Corruption`]. Any error (a damaged block, a failed write) is
/// the answer for all of them: the tables not yet finished are removed,
/// and those finished are left, named by no version, to the next open's
/// sweep, as any failed job's.
pub(crate) fn rewrite_many(f: &FileHandle, targets: &[Target<'_>]) -> Result<Vec<Option<Outputs>>> {
    let table = &f.table;
    let mut copies: Vec<Option<Copy<'_>>> = Vec::with_capacity(targets.len());
    let discard_all =
        |copies: Vec<Option<Copy<'_>>>| copies.into_iter().flatten().for_each(Copy::discard);
    let copyable = table.range_tombstone_count() == 0
        && table.entries() > 0
        && table.key_format() == KeyFormat::Internal;
    for t in targets {
        let compression = t.opts.compression.for_level(t.level);
        if !copyable || table.compression() != compression {
            copies.push(None);
            continue;
        }
        // Several tables written from one read are bound by the device's
        // writes, which past the page cache go twice as fast on the study's
        // VM; one table per read goes through the cache, as any table
        // (docs/design.md, "Filters per level").
        let new = if targets.len() > 1 {
            t.numbers.new_direct_table(t.dir, &*t.opts.fs)
        } else {
            t.numbers.new_table(t.dir, &*t.opts.fs)
        };
        let new = match new {
            Ok(new) => new,
            Err(e) => {
                discard_all(copies);
                return Err(e);
            }
        };
        copies.push(Some(Copy {
            path: new.path.clone(),
            b: TableBuilder::with_file(
                new.file,
                new.path,
                builder_options(t.opts, t.policy, compression),
            ),
            kept: Kept::new(t.v, t.level, t.retention),
            fs: &*t.opts.fs,
        }));
    }
    let read = (|| -> Result<()> {
        let mut blocks = table.stored_blocks();
        while copies.iter().any(Option::is_some) {
            let Some(block) = blocks.next() else {
                return Ok(());
            };
            let block = block?;
            for slot in copies.iter_mut() {
                let Some(c) = slot else { continue };
                match c.b.add_stored_block_if(&block, &mut |k| c.kept.keeps(k)) {
                    Ok(true) => {}
                    Ok(false) | Err(Error::InvalidArgument(_)) => {
                        if let Some(c) = slot.take() {
                            c.discard();
                        }
                    }
                    Err(e) => return Err(e),
                }
            }
        }
        Ok(())
    })();
    if let Err(e) = read {
        discard_all(copies);
        return Err(e);
    }
    let mut outs = Vec::with_capacity(copies.len());
    let mut rest = copies.into_iter().zip(targets);
    while let Some((slot, t)) = rest.next() {
        let Some(Copy { b, path, fs, .. }) = slot else {
            outs.push(None);
            continue;
        };
        let written = b.finish_unsynced().and_then(|table| {
            let bytes_written = table.file_size();
            let fh = open_output(table.sync()?, t.caches, t.opts)?;
            Ok(Outputs {
                files: vec![fh],
                bytes_written,
            })
        });
        match written {
            Ok(out) => outs.push(Some(out)),
            Err(e) => {
                let _ = fs.remove_file(&path);
                discard_all(rest.map(|(slot, _)| slot).collect());
                return Err(e);
            }
        }
    }
    Ok(outs)
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
    use super::super::{Compaction, OutputSize, merge_inputs};
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
        let retention = Retention::new(snapshots);
        let target = Target {
            dir,
            opts,
            level: 1,
            v,
            policy,
            numbers: &numbers,
            retention: &retention,
            caches: &caches,
        };
        rewrite_many(f, &[target]).unwrap().pop().unwrap()
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
        let merged = merge_inputs(
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
