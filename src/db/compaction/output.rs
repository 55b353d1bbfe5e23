//! Running a compaction or a flush: merging the inputs in key-range shards
//! and writing the output tables, synced and opened, cut at the target size
//! and at the boundaries of the level below.

use std::path::Path;
use std::sync::Arc;

use super::*;
use crate::range_tombstone::{Fragments, successor};

/// What a flush or compaction produced.
#[derive(Debug, Default)]
pub(crate) struct Outputs {
    pub files: Vec<Arc<FileHandle>>,
    pub bytes_written: u64,
}

/// Writes the entries of `merge` (internal-key order) into tables of at most
/// about the `size` target's bytes (one table for [`OutputSize::Whole`]), keeping the versions `retention` keeps and
/// dropping the tombstones it allows where `drop_tombstone` (no deeper level
/// covers the key) says so.
///
/// `tombstones` are the inputs' range deletions. A version one of them
/// hides from every reader that would see it (a newer tombstone over its
/// key in its stripe) is dropped. Of each fragment's tombstones the newest
/// per stripe is kept, except one in the lowest stripe where
/// `drop_range(start, end)` (no deeper level meets the range) says so: what
/// it hid is gone. The rest go into every output file whose range they
/// meet, cut at the files' boundaries: a file that ends at user key `k`
/// takes them up to `k ++ [0]` (so up to `k` itself) and the next one from
/// there, so the files' key ranges, widened by their tombstones
/// ([`file_meta`]), never share a user key. A range with tombstones and no
/// entry left still gets a file.
///
/// `cuts` are the smallest user keys of the files one level below the output
/// (ascending): a file ends where the keys cross one of them once it holds
/// half its target size, plus 5% per boundary it already spans, at most 90%
/// (RocksDB's `level_compaction_dynamic_file_size`, whose ramp keeps dense
/// boundaries from making small files). Its range then lies inside fewer
/// files of that level, so compacting it down later rewrites fewer bytes
/// there. With cuts, a file that meets no boundary grows up to twice its
/// target before it is cut by size, as RocksDB's non-bottommost outputs do;
/// without, it is cut at its target.
#[allow(clippy::too_many_arguments)]
pub(crate) fn write_outputs<K: AsRef<[u8]>, V: AsRef<[u8]>>(
    dir: &Path,
    opts: &Options,
    size: OutputSize,
    merge: impl Iterator<Item = Result<(K, V)>>,
    policy: Option<FilterPolicy>,
    compression: crate::sst::Compression,
    numbers: &(dyn FileNumbers + Sync),
    retention: &Retention,
    drop_tombstone: &(dyn Fn(&[u8]) -> bool + Sync),
    tombstones: &Fragments,
    drop_range: &(dyn Fn(&[u8], &[u8]) -> bool + Sync),
    cuts: &[&[u8]],
    choose: Option<&ChooseFilter<'_>>,
    caches: Caches,
) -> Result<Outputs> {
    // Every table but the last is synced (and opened) by a helper thread
    // while this one writes the next: the fsync of a table is about a
    // millisecond of waiting on the device that the merge would otherwise
    // spend idle. Started with the second table, so a flush (one table)
    // runs no thread.
    let spec = TableSpec {
        dir,
        opts,
        size,
        policy,
        compression,
        numbers,
        retention,
        drop_tombstone,
        tombstones,
        drop_range,
        cuts,
        choose,
    };
    std::thread::scope(|scope| {
        let mut syncer: Option<Syncer<'_>> = None;
        let written = write_tables(&spec, merge, |t| {
            let s = match &mut syncer {
                Some(s) => s,
                None => syncer.insert(Syncer::start(scope, &caches, opts)?),
            };
            // A closed channel means the syncer failed: its error is
            // reported when it is joined below.
            s.queue
                .send(t)
                .map_err(|_| Error::Panicked("the table sync thread stopped".into()))
        });
        let last = written.and_then(|(bytes, last)| {
            last.map(|t| {
                t.sync()
                    .and_then(|summary| open_output(summary, &caches, opts))
            })
            .transpose()
            .map(|last| (bytes, last))
        });
        // The syncer's error comes first: it explains the main thread's, if any.
        let mut files = match syncer {
            Some(s) => {
                drop(s.queue);
                s.thread
                    .join()
                    .unwrap_or_else(|p| std::panic::resume_unwind(p))?
            }
            None => Vec::new(),
        };
        let (bytes_written, last) = last?;
        files.extend(last);
        Ok(Outputs {
            files,
            bytes_written,
        })
    })
}

/// The thread that syncs and opens finished tables in the order it gets them.
pub(super) struct Syncer<'scope> {
    queue: std::sync::mpsc::SyncSender<crate::sst::UnsyncedTable>,
    thread: std::thread::ScopedJoinHandle<'scope, Result<Vec<Arc<FileHandle>>>>,
}

impl<'scope> Syncer<'scope> {
    fn start<'env>(
        scope: &'scope std::thread::Scope<'scope, 'env>,
        caches: &'env Caches,
        opts: &'env Options,
    ) -> Result<Self> {
        // A hand-over, not a queue: the writer waits while the previous
        // table is still syncing, so a compaction holds at most two output
        // files open per shard (`Options::reserved_files`) however fast it
        // writes.
        let (queue, tables) = std::sync::mpsc::sync_channel::<crate::sst::UnsyncedTable>(0);
        let thread = std::thread::Builder::new()
            .name("bloomlsm-sync".into())
            .spawn_scoped(scope, move || {
                let mut files = Vec::new();
                for t in tables {
                    files.push(open_output(t.sync()?, caches, opts)?);
                }
                Ok(files)
            })
            .map_err(|e| Error::io("start the table sync thread", e))?;
        Ok(Syncer { queue, thread })
    }
}

/// How the store builds a table of its own: `opts`' block size, checksum,
/// filter partitions, prefix and range filters, with filter `policy` and
/// data blocks compressed as `compression`.
pub(super) fn builder_options(
    opts: &Options,
    policy: Option<FilterPolicy>,
    compression: crate::sst::Compression,
) -> TableBuilderOptions {
    TableBuilderOptions {
        block_size: opts.block_size,
        checksum: opts.checksum,
        filter: policy,
        compression,
        key_format: KeyFormat::Internal,
        filter_partition_bytes: opts.filter_partition_bytes,
        index_partition_bytes: opts.index_partition_bytes,
        prefix_extractor: opts.prefix_extractor,
        range_filter_bits_per_key: opts.range_filter_bits_per_key,
        ..TableBuilderOptions::default()
    }
}

/// Chooses the filter of an output table once it is complete, from its
/// first and last user keys and its entries (the workload-aware allocation,
/// [`super::allocation::Plan::policy`]); the table's builder was made with
/// the level's policy, which collects the keys' hashes.
pub(crate) type ChooseFilter<'a> = dyn Fn(&[u8], &[u8], u64) -> Option<FilterPolicy> + Sync + 'a;

/// What [`write_tables`] writes with: [`write_outputs`]'s arguments.
pub(super) struct TableSpec<'a> {
    dir: &'a Path,
    opts: &'a Options,
    size: OutputSize,
    policy: Option<FilterPolicy>,
    compression: crate::sst::Compression,
    numbers: &'a (dyn FileNumbers + Sync),
    retention: &'a Retention,
    drop_tombstone: &'a (dyn Fn(&[u8]) -> bool + Sync),
    tombstones: &'a Fragments,
    drop_range: &'a (dyn Fn(&[u8], &[u8]) -> bool + Sync),
    cuts: &'a [&'a [u8]],
    choose: Option<&'a ChooseFilter<'a>>,
}

impl TableSpec<'_> {
    /// A new output table.
    fn builder(&self) -> Result<TableBuilder> {
        let opts = self.opts;
        let NewTable { path, file } = self.numbers.new_table(self.dir, &*opts.fs)?;
        Ok(TableBuilder::with_file(
            file,
            path,
            builder_options(opts, self.policy, self.compression),
        ))
    }

    /// The range tombstones the outputs keep: of each fragment the newest
    /// per stripe, less those `drop_range` lets go.
    fn kept_tombstones(&self) -> Fragments {
        let mut kept = self.tombstones.clone();
        let r = self.retention;
        let mut last: Option<(usize, usize)> = None;
        kept.retain_seqs(|i, f, seq| {
            // Sequence numbers come newest first within a fragment.
            let stripe = r.stripe(seq);
            let here = (i, stripe);
            if last == Some(here) {
                return false;
            }
            last = Some(here);
            !(stripe == 0 && (self.drop_range)(&f.start, &f.end))
        });
        kept
    }
}

/// Whether a tombstone of `tombstones` newer than `seq`, in the same stripe,
/// covers `user_key`: every reader that sees the version sees it deleted.
fn hidden(tombstones: &Fragments, r: &Retention, user_key: &[u8], seq: u64, stripe: usize) -> bool {
    tombstones.covering(user_key).is_some_and(|f| {
        f.seqs
            .iter()
            .take_while(|&&t| t > seq)
            .any(|&t| r.stripe(t) == stripe)
    })
}

/// Adds the part of `kept` in `[lo, hi)` to `b`.
fn add_tombstones(
    b: &mut TableBuilder,
    kept: &Fragments,
    lo: Option<&[u8]>,
    hi: Option<&[u8]>,
) -> Result<()> {
    for (start, end, seq) in kept.clipped(lo, hi).tombstones() {
        b.add_range_tombstone(start, end, seq)?;
    }
    Ok(())
}

/// The merge loop of [`write_outputs`]: hands each finished table but the
/// last to `done`, and returns the bytes of all tables and the last one.
pub(super) fn write_tables<K: AsRef<[u8]>, V: AsRef<[u8]>>(
    spec: &TableSpec<'_>,
    merge: impl Iterator<Item = Result<(K, V)>>,
    mut done: impl FnMut(crate::sst::UnsyncedTable) -> Result<()>,
) -> Result<(u64, Option<crate::sst::UnsyncedTable>)> {
    let cuts = spec.cuts;
    // With a level below to align to, a file may grow past its target, up to
    // twice it, to end at one of that level's boundaries (RocksDB's
    // `max_output_file_size` for non-bottommost outputs): one cut by size
    // alone would end inside a file below, which the next compaction of this
    // range then has to rewrite too.
    // `None`: one file, never cut.
    let target = match spec.size {
        OutputSize::Target(t) => Some(t),
        OutputSize::Whole => None,
    };
    let max_size = target.map(|t| {
        if cuts.is_empty() {
            t
        } else {
            t.saturating_mul(2)
        }
    });
    let mut bytes_written = 0u64;
    // The first of `cuts` not yet passed, and how many the current file spans.
    let mut next_cut = 0;
    let mut spanned = 0u64;
    let mut builder: Option<TableBuilder> = None;
    // The previous entry's user key and stripe (versions come newest first,
    // so a key's stripes only go down).
    let mut last_user_key: Vec<u8> = Vec::new();
    let mut last_stripe: Option<usize> = None;
    // Whether an entry of `last_user_key` went into a file. The cut between
    // files and the file's last key follow the first version *written*, not
    // the first one read: when the newest version is dropped (hidden by a
    // range tombstone) and an older one is kept for a snapshot, that older
    // one still starts the key in its file, so the file's tombstones reach
    // up to it and the next file's start above it.
    let mut key_written = false;
    let mut finish =
        |mut b: TableBuilder, first: &[u8], last: &[u8]| -> Result<crate::sst::UnsyncedTable> {
            if let Some(choose) = spec.choose
                && b.entries() > 0
            {
                b.set_filter_policy(choose(first, last, b.entries()))?;
            }
            let t = b.finish_unsynced()?;
            bytes_written += t.file_size();
            Ok(t)
        };
    let kept = spec.kept_tombstones();
    // Where the current file's share of the tombstones starts (`None`: the
    // first file, from the lowest key), and its last user key.
    let mut file_lo: Option<Vec<u8>> = None;
    let mut file_first: Vec<u8> = Vec::new();
    let mut file_last: Vec<u8> = Vec::new();
    for entry in merge {
        let (ikey, value) = entry?;
        let (ikey, value) = (ikey.as_ref(), value.as_ref());
        let parsed = key::parse(ikey).ok_or_else(|| {
            Error::corruption("<compaction>", 0, "malformed internal key in input")
        })?;
        let stripe = spec.retention.stripe(parsed.seq);
        let new_key = last_stripe.is_none() || last_user_key != parsed.user_key;
        if !new_key && last_stripe == Some(stripe) {
            continue; // a newer version is seen by every reader that sees this one
        }
        if new_key {
            last_user_key.clear();
            last_user_key.extend_from_slice(parsed.user_key);
            key_written = false;
        }
        last_stripe = Some(stripe);
        if !spec.tombstones.is_empty()
            && hidden(
                spec.tombstones,
                spec.retention,
                parsed.user_key,
                parsed.seq,
                stripe,
            )
        {
            continue;
        }
        if parsed.kind == ValueKind::Deletion
            && stripe == 0
            && (spec.drop_tombstone)(parsed.user_key)
        {
            continue;
        }
        // Files are cut between user keys only: the files of a level ≥ 1 must
        // not share a user key, and all versions of a key sit in one file.
        let first_written = !key_written;
        key_written = true;
        if first_written {
            let passed = cuts[next_cut..]
                .iter()
                .take_while(|&&c| c <= parsed.user_key)
                .count();
            next_cut += passed;
            spanned += passed as u64;
            let size = builder
                .as_ref()
                .map_or(0, TableBuilder::estimated_file_size);
            let cut = match (target, max_size) {
                (Some(target), Some(max_size)) => {
                    let at_boundary = passed > 0
                        && u128::from(size) * 100
                            >= u128::from(target)
                                * u128::from(50 + spanned.saturating_mul(5).min(40));
                    size >= max_size || at_boundary
                }
                _ => false,
            };
            if builder.is_some() && cut {
                let mut b = builder.take().expect("builder");
                let hi = successor(&file_last);
                add_tombstones(&mut b, &kept, file_lo.as_deref(), Some(&hi))?;
                file_lo = Some(hi);
                done(finish(b, &file_first, &file_last)?)?;
            }
            if builder.is_none() {
                spanned = 0; // this key starts a file
            }
        }
        let b = match &mut builder {
            Some(b) => b,
            None => {
                file_first.clear();
                file_first.extend_from_slice(parsed.user_key);
                builder.insert(spec.builder()?)
            }
        };
        b.add(ikey, value)?;
        if first_written {
            file_last.clear();
            file_last.extend_from_slice(parsed.user_key);
        }
    }
    let rest = kept.clipped(file_lo.as_deref(), None);
    if builder.is_none() && !rest.is_empty() {
        builder = Some(spec.builder()?);
    }
    if let Some(b) = &mut builder {
        add_tombstones(b, &rest, None, None)?;
    }
    let last = builder
        .map(|b| finish(b, &file_first, &file_last))
        .transpose()?;
    Ok((bytes_written, last))
}

/// Opens a freshly written table and describes it for the manifest.
pub(super) fn open_output(
    summary: TableSummary,
    caches: &Caches,
    opts: &Options,
) -> Result<Arc<FileHandle>> {
    let number = filename::parse_file_name(
        summary
            .path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default(),
    )
    .map(|(_, n)| n)
    .ok_or_else(|| Error::invalid(format!("not a table file name: {}", summary.path.display())))?;
    let table = Table::open(&summary.path, caches.table_options(number, opts))?;
    let meta = file_meta(number, &table);
    Ok(Arc::new(FileHandle::new(meta, Arc::new(table))))
}

/// The manifest entry of an open table.
pub(crate) fn file_meta(number: u64, table: &Table) -> FileMeta {
    let p = table.properties();
    let (smallest, largest) = file_range(table);
    FileMeta {
        number,
        file_size: table.file_size(),
        smallest,
        largest,
        entries: table.entries(),
        filter: p.filter_policy.as_ref().map(|name| FilterMeta {
            name: name.clone(),
            bits_per_key: p.filter_bits_per_key,
            num_probes: p.filter_probes,
        }),
    }
}

/// A table's key range as its MANIFEST entry records it (internal keys):
/// its entries' range widened by its range tombstones'. A tombstone's start
/// `s` counts as `(s, MAX_SEQUENCE, Value)`, before every version of `s`. Its
/// end `e` is exclusive: when `e` is `k ++ [0]` (a boundary [`write_outputs`]
/// cuts at) the range ends with `k`, as `(k, 0, Deletion)`, after every
/// version of `k`; otherwise with `e` itself, as `(e, MAX_SEQUENCE, Value)`
/// (one key too wide: a file of the same level never starts at `e`, since a
/// compaction takes every file of its output level that meets its inputs'
/// ranges, these widened ones included).
pub(crate) fn file_range(table: &Table) -> (Vec<u8>, Vec<u8>) {
    let mut lo = (table.entries() > 0).then(|| table.smallest_key().to_vec());
    let mut hi = (table.entries() > 0).then(|| table.largest_key().to_vec());
    if let Some((s, e)) = table.range_tombstones().bounds() {
        let s = key::make_internal_key(s, key::MAX_SEQUENCE, ValueKind::Value);
        let e = match e.split_last() {
            Some((0, k)) => key::make_internal_key(k, 0, ValueKind::Deletion),
            _ => key::make_internal_key(e, key::MAX_SEQUENCE, ValueKind::Value),
        };
        if lo
            .as_ref()
            .is_none_or(|l| key::compare_internal(&s, l).is_lt())
        {
            lo = Some(s);
        }
        if hi
            .as_ref()
            .is_none_or(|h| key::compare_internal(&e, h).is_gt())
        {
            hi = Some(e);
        }
    }
    (lo.unwrap_or_default(), hi.unwrap_or_default())
}

/// A table of the two user keys `lo` and `hi` (1,000-byte values), numbered
/// `number`, in `dir`: a file for tests of levels and versions.
#[cfg(test)]
pub(crate) fn test_table(dir: &Path, number: u64, lo: &str, hi: &str) -> Arc<FileHandle> {
    let entries = [lo, hi].map(|k| {
        let k = key::make_internal_key(k.as_bytes(), 1, ValueKind::Value);
        Ok((bytes::Bytes::from(k), bytes::Bytes::from(vec![1u8; 1000])))
    });
    let opts = Options::default();
    let out = write_outputs(
        dir,
        &opts,
        OutputSize::Target(opts.target_file_size),
        entries.into_iter(),
        None,
        crate::sst::Compression::None,
        &TestNumbers(std::sync::atomic::AtomicU64::new(number)),
        &Retention::new(Vec::new()),
        &|_| false,
        &Fragments::default(),
        &|_, _| false,
        &[],
        None,
        Caches::new(&opts),
    )
    .unwrap();
    out.files[0].clone()
}

/// File numbers from a counter, for tests.
#[cfg(test)]
pub(crate) struct TestNumbers(pub std::sync::atomic::AtomicU64);

#[cfg(test)]
impl FileNumbers for TestNumbers {
    fn next_file_number(&self) -> Result<u64> {
        Ok(self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed))
    }
}

/// Runs compaction `c` over version `v`: merges inputs into new files at the
/// output level, keeping what `retention` keeps. Installing the result is the
/// caller's job.
///
/// A large compaction is split into up to `opts.max_subcompactions` shards over
/// disjoint user-key ranges (cut at input-file boundaries so the shards carry
/// similar bytes), merged in parallel on rayon's pool; their outputs, in key
/// order, are the same files a single merge would write, cut at the shard
/// boundaries as well.
#[allow(clippy::too_many_arguments)]
pub(crate) fn merge_inputs(
    dir: &Path,
    opts: &Options,
    size: OutputSize,
    v: &Version,
    c: &Compaction,
    policy: Option<FilterPolicy>,
    choose: Option<&ChooseFilter<'_>>,
    numbers: &(dyn FileNumbers + Sync),
    retention: &Retention,
    caches: Caches,
) -> Result<Outputs> {
    let out_level = c.output_level();
    let (lo, hi) = c.range();
    // The first keys of the files just below the output that the
    // compaction's range overlaps: where outputs may end (`write_outputs`).
    // (Found in the level's index: no file handle read.)
    let below = out_level + 1;
    let cuts: Vec<&[u8]> = if below < v.levels.len() {
        let (first, end) = v.span(below, Some(&lo), Some(&hi));
        (first..end).map(|i| v.range_of(below, i).0).collect()
    } else {
        Vec::new()
    };
    let deeper_may_hold = !cuts.is_empty()
        || (out_level + 2..v.levels.len()).any(|l| {
            let (first, end) = v.span(l, Some(&lo), Some(&hi));
            first < end
        });
    let drop_tombstone = |uk: &[u8]| !deeper_may_hold || !v.deeper_covers(out_level, uk);
    let tombstones = Fragments::merged(c.all_inputs().map(|f| f.table.range_tombstones()));
    let drop_range = |s: &[u8], e: &[u8]| {
        !deeper_may_hold
            || (out_level + 1..v.levels.len()).all(|l| {
                let (first, end) = v.span(l, Some(s), Some(e));
                first >= end
            })
    };
    // Range tombstones span shard boundaries, and a shard's last file would
    // end where the next shard's first begins: such a compaction runs as one
    // merge.
    let bounds = match size {
        OutputSize::Target(target) if tombstones.is_empty() => {
            shard_bounds(c, opts.max_subcompactions, target)
        }
        _ => Vec::new(),
    };
    let shard = |i: usize| -> Result<Outputs> {
        let start = i.checked_sub(1).map(|j| bounds[j].as_slice());
        let end = bounds.get(i).map(Vec::as_slice);
        let seek = start.map(seek_key);
        // Newest first: L0 inputs are already newest first; the next level is older.
        let mut sources: Vec<Source> = Vec::new();
        if c.level == 0 {
            for f in &c.inputs {
                sources.push(Source::table(f.table.clone(), seek.as_deref()));
            }
        } else {
            sources.push(Source::level(c.inputs.clone(), seek.clone()));
        }
        if !c.next_inputs.is_empty() {
            sources.push(Source::level(c.next_inputs.clone(), seek.clone()));
        }
        let merge = MergeIter::new(sources).take_while(|e| match (e, end) {
            (Ok((k, _)), Some(end)) => key::user_key(k) < end,
            _ => true,
        });
        write_outputs(
            dir,
            opts,
            size,
            merge,
            policy,
            opts.compression.for_level(out_level),
            numbers,
            retention,
            &drop_tombstone,
            &tombstones,
            &drop_range,
            &cuts,
            choose,
            caches.clone(),
        )
    };
    if bounds.is_empty() {
        return shard(0);
    }
    use rayon::prelude::*;
    let parts: Vec<Result<Outputs>> = (0..=bounds.len()).into_par_iter().map(shard).collect();
    let mut out = Outputs::default();
    for part in parts {
        let part = part?;
        out.bytes_written += part.bytes_written;
        out.files.extend(part.files);
    }
    Ok(out)
}

/// User keys at which to split `c` into shards: none for a compaction smaller
/// than four output files or with sub-compactions off. Sized by data bytes,
/// as level targets are, so the tree's shape does not depend on the filter
/// configuration (whole file sizes include the filter blocks). The inputs' index keys
/// (the last key of every data block, already in memory) sample the key
/// distribution of the bytes to merge, about one key per 4 KiB; their
/// quantiles give shards of nearly equal size even when, as with L0 files, all
/// inputs span the same key range.
pub(super) fn shard_bounds(c: &Compaction, max_subcompactions: usize, target: u64) -> Vec<Vec<u8>> {
    let total: u64 = c
        .all_inputs()
        .map(|f| f.data_bytes())
        .fold(0, u64::saturating_add);
    let shards = max_subcompactions.max(1);
    if shards == 1 || total < target.saturating_mul(4) {
        return Vec::new();
    }
    let mut samples: Vec<&[u8]> = c
        .all_inputs()
        .flat_map(|f| f.table.index_sample_keys().map(key::user_key))
        .collect();
    samples.sort_unstable();
    let mut bounds: Vec<Vec<u8>> = Vec::new();
    for i in 1..shards {
        let q = samples[samples.len() * i / shards];
        if bounds.last().is_none_or(|b| b.as_slice() < q) && q > samples[0] {
            bounds.push(q.to_vec());
        }
    }
    bounds
}
