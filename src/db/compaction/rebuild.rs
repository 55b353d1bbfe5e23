//! Filter rebuilds: the files whose filter is not the one their level gets
//! now ([`compaction::refilter`]) rewritten in their places, several at a
//! time, each batch installed with one MANIFEST edit. Stores that hold the
//! same file (checkpoints of one store, whose tables are hard links of its
//! files) rebuild it from one read ([`Db::rebuild_filters_together`]).

use super::allocation;
use super::filter_only::{self, Target};
use super::refilter::Refilter;
use crate::db::install::Change;
use crate::db::*;

/// Most files [`Db::rebuild_filters`] rewrites before one MANIFEST edit
/// installs them (the compaction thread's idle rebuilds go one at a time).
const REFILTER_BATCH: usize = 64;

/// Files of one [`Db::rebuild_filters`] batch rewritten at once: more than
/// the cores, because each rewrite waits on the device (its reads' first
/// chunk, its closing `fdatasync`) while the others compute
/// (docs/design.md, "Filters per level").
const REFILTER_WORKERS: usize = 8;

/// One store's part of a batch: the files picked, the version they were
/// picked from, and what the store's snapshots see.
struct Share<'s> {
    store: &'s Inner,
    rs: Vec<Refilter>,
    v: Arc<Version>,
    retention: Retention,
}

impl Inner {
    /// Rebuilds filters until none is due ([`Db::rebuild_filters`]).
    pub(in crate::db) fn rebuild_filters(&self) -> Result<u64> {
        let counts = Inner::rebuild_filters_together(&[self])?;
        Ok(counts.iter().sum())
    }

    /// Rebuilds the filters of `stores` until none is due in any, a file
    /// that several of them hold read once for all
    /// ([`Db::rebuild_filters_together`]). Returns each store's count.
    pub(in crate::db) fn rebuild_filters_together(stores: &[&Inner]) -> Result<Vec<u64>> {
        // The stores' work locks are taken in one order (by address), so
        // that two calls naming the same stores cannot wait on each other.
        let mut order: Vec<usize> = (0..stores.len()).collect();
        order.sort_by_key(|&i| std::ptr::from_ref(stores[i]) as usize);
        if order
            .windows(2)
            .any(|w| std::ptr::eq(stores[w[0]], stores[w[1]]))
        {
            return Err(Error::invalid(
                "rebuild_filters_together: a store is named twice",
            ));
        }
        let mut counts = vec![0; stores.len()];
        loop {
            let _work: Vec<MutexGuard<'_, ()>> = order
                .iter()
                .map(|&i| {
                    stores[i]
                        .compact_work
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                })
                .collect();
            // Picked and written under one catch: a panic outside a
            // rewrite job poisons every store, as one inside a job poisons
            // those it was writing for.
            let round = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                let shares: Vec<Share<'_>> = stores
                    .iter()
                    .map(|&store| {
                        let v = store.state().vs.current().clone();
                        Share {
                            rs: compaction::refilter::pick_batch(
                                &v,
                                &store.opts,
                                store.lookups(),
                                REFILTER_BATCH,
                            ),
                            v,
                            retention: store.retention(),
                            store,
                        }
                    })
                    .collect();
                if shares.iter().all(|s| s.rs.is_empty()) {
                    return None;
                }
                let outs = rewrite_shares(&shares);
                Some((shares, outs))
            }))
            .map_err(|p| Error::from_panic(p.as_ref()));
            let (shares, outs) = match round {
                Ok(Some(round)) => round,
                Ok(None) => return Ok(counts),
                Err(e) => {
                    stores.iter().for_each(|s| s.poison("filter rebuild", &e));
                    return Err(e);
                }
            };
            // Each store installs what was written for it, or is poisoned
            // by its own first error; the first error is returned.
            let mut first_err = None;
            for ((share, outs), count) in shares.into_iter().zip(outs).zip(&mut counts) {
                if share.rs.is_empty() {
                    continue; // nothing due: no edit
                }
                let store = share.store;
                let k = share.rs.len() as u64;
                let installed = store.guarded("filter rebuild", || {
                    let obsolete = store.install_refilters(share.rs, outs, "filter rebuild")?;
                    store.retire_replaced(obsolete, share.v);
                    Ok(())
                });
                match installed {
                    Ok(()) => *count += k,
                    Err(e) => {
                        first_err.get_or_insert(e);
                    }
                }
            }
            if let Some(e) = first_err {
                return Err(e);
            }
        }
    }

    /// Rewrites files, each in its level, with the filter its level gets
    /// now, and installs them in the files' places in one MANIFEST edit:
    /// each file's data blocks copied as stored when that writes the file a
    /// merge would ([`compaction::filter_only`]), else merged as a
    /// compaction of that file alone. The rewrites run in parallel, each
    /// table synced as it is finished, then the directory once and the edit
    /// once, not three syncs per file (docs/design.md, "Filters per
    /// level"). Returns the replaced files, for [`Inner::retire_replaced`].
    /// `during`: what runs the rebuild, in the poisoned store's error.
    pub(in crate::db) fn run_refilters(
        &self,
        rs: Vec<Refilter>,
        v: &Arc<Version>,
        during: &str,
    ) -> Result<Vec<Arc<FileHandle>>> {
        let share = Share {
            store: self,
            rs,
            v: v.clone(),
            retention: self.retention(),
        };
        let outs = rewrite_shares(std::slice::from_ref(&share))
            .pop()
            .unwrap_or_default();
        self.install_refilters(share.rs, outs, during)
    }

    /// Installs the rewrites `outs` of the files `rs` (in order) with one
    /// MANIFEST edit, if every one succeeded. Every rewrite that succeeded
    /// is synced; on an error none is installed, and their files are left
    /// to the next open's sweep of files no version names.
    fn install_refilters(
        &self,
        rs: Vec<Refilter>,
        outs: Vec<Result<compaction::Outputs>>,
        during: &str,
    ) -> Result<Vec<Arc<FileHandle>>> {
        let outs: Vec<compaction::Outputs> = outs.into_iter().collect::<Result<_>>()?;
        filename::sync_dir_in(self.fs(), &self.dir)?;
        let mut edit = VersionEdit::new();
        let mut new_files = Vec::new();
        for (r, out) in rs.iter().zip(&outs) {
            allocation::inherit(&r.file, &out.files, self.lookups());
            self.counters
                .bytes_compacted
                .fetch_add(out.bytes_written, Ordering::Relaxed);
            edit.deleted_files.push((r.level, r.file.number()));
            for f in &out.files {
                edit.new_files.push((r.level, f.meta.clone()));
                new_files.push(f.clone());
            }
        }
        let st = self.state();
        let change = Change {
            edit,
            written: &new_files,
            replaced: rs.iter().map(|r| (r.level, r.file.clone())).collect(),
            synced: true,
            seq: self.last_seq.load(Ordering::Acquire),
            during,
        };
        let (st, replaced) = self.install_change(st, change, |_| {})?;
        drop(st);
        self.counters
            .filter_rebuilds
            .fetch_add(rs.len() as u64, Ordering::Relaxed);
        for (r, out) in rs.iter().zip(&outs) {
            self.add_level_writes(
                r.level,
                &LevelWrites {
                    jobs: 1,
                    bytes_written: out.bytes_written,
                    bytes_read_here: r.file.meta.file_size,
                    ..LevelWrites::default()
                },
            );
        }
        Ok(replaced)
    }

    /// `r`'s file merged as a compaction of that file alone, in its level:
    /// the rewrite when its blocks cannot be copied.
    fn refilter_merge(
        &self,
        r: &Refilter,
        v: &Arc<Version>,
        retention: &Retention,
    ) -> Result<compaction::Outputs> {
        let one = Compaction {
            level: r.level,
            inputs: vec![r.file.clone()],
            next_inputs: Vec::new(),
            output_level: r.level,
            move_only: false,
        };
        compaction::merge_inputs(
            &self.dir,
            &self.opts,
            OutputSize::Whole,
            v,
            &one,
            r.policy,
            None,
            self,
            retention,
            self.caches.clone(),
        )
    }
}

/// The rewrites of every share's files, one list per share in its files'
/// order. The picks of several shares that name one file ([`same_file`])
/// are one job, which reads the file once.
fn rewrite_shares(shares: &[Share<'_>]) -> Vec<Vec<Result<compaction::Outputs>>> {
    let mut jobs: Vec<Vec<(usize, usize)>> = Vec::new();
    let mut by_file: HashMap<(u64, u64), usize> = HashMap::new();
    for (si, share) in shares.iter().enumerate() {
        for ri in 0..share.rs.len() {
            let id = (shares.len() > 1)
                .then(|| same_file(share.store, &share.rs[ri].file))
                .flatten();
            let job = match id {
                Some(id) => *by_file.entry(id).or_insert_with(|| {
                    jobs.push(Vec::new());
                    jobs.len() - 1
                }),
                None => {
                    jobs.push(Vec::new());
                    jobs.len() - 1
                }
            };
            jobs[job].push((si, ri));
        }
    }
    let done = concurrently(jobs.len(), REFILTER_WORKERS, |j| {
        rewrite_job(shares, &jobs[j])
    });
    // A job not run (another failed first) answers with the first failure.
    let first_err = done.iter().find_map(|d| match d {
        Some(Err(e)) => Some(e.duplicate()),
        _ => None,
    });
    let mut outs: Vec<Vec<Option<Result<compaction::Outputs>>>> = shares
        .iter()
        .map(|s| s.rs.iter().map(|_| None).collect())
        .collect();
    for (members, d) in jobs.iter().zip(done) {
        match d {
            Some(Ok(written)) => {
                for (&(si, ri), out) in members.iter().zip(written) {
                    outs[si][ri] = Some(Ok(out));
                }
            }
            Some(Err(e)) => {
                for &(si, ri) in members {
                    outs[si][ri] = Some(Err(e.duplicate()));
                }
            }
            None => {}
        }
    }
    outs.into_iter()
        .map(|o| {
            o.into_iter()
                .map(|out| {
                    out.unwrap_or_else(|| {
                        Err(first_err.as_ref().map_or_else(
                            || Error::invalid("a rewrite did not run"),
                            Error::duplicate,
                        ))
                    })
                })
                .collect()
        })
        .collect()
}

/// One job of [`rewrite_shares`]: the file that the picks `members`
/// (share, pick) name, rewritten for each, in order.
fn rewrite_job(
    shares: &[Share<'_>],
    members: &[(usize, usize)],
) -> Result<Vec<compaction::Outputs>> {
    for &(si, _) in members {
        inject::hit(&shares[si].store.dir, inject::Point::Refilter)?;
    }
    let Some(&(s0, r0)) = members.first() else {
        return Ok(Vec::new());
    };
    let targets: Vec<Target<'_>> = members
        .iter()
        .map(|&(si, ri)| {
            let share = &shares[si];
            let r = &share.rs[ri];
            Target {
                dir: &share.store.dir,
                opts: &share.store.opts,
                level: r.level,
                v: &share.v,
                policy: r.policy,
                numbers: share.store,
                retention: &share.retention,
                caches: &share.store.caches,
            }
        })
        .collect();
    let copied = filter_only::rewrite_many(&shares[s0].rs[r0].file, &targets)?;
    members
        .iter()
        .zip(copied)
        .map(|(&(si, ri), copy)| {
            let share = &shares[si];
            match copy {
                Some(out) => {
                    share
                        .store
                        .counters
                        .filter_rebuilds_copied
                        .fetch_add(1, Ordering::Relaxed);
                    Ok(out)
                }
                None => share
                    .store
                    .refilter_merge(&share.rs[ri], &share.v, &share.retention),
            }
        })
        .collect()
}

/// Which file `store`'s table `f` is (device and inode), when the platform
/// says and the file is the size the store recorded: two stores' tables
/// that are one file (hard links) have the same bytes, so one read serves
/// both. `None` where it cannot be told; the table is then read for its
/// store alone.
fn same_file(store: &Inner, f: &FileHandle) -> Option<(u64, u64)> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let m = std::fs::metadata(filename::table_file(&store.dir, f.number())).ok()?;
        (m.len() == f.meta.file_size).then(|| (m.dev(), m.ino()))
    }
    #[cfg(not(unix))]
    {
        let _ = (store, f);
        None
    }
}

/// `job(0..n)` on up to `workers` threads of their own, results in order.
/// A job that panics yields [`Error::Panicked`]; after the first failure no
/// job starts, and those not run yield `None`. With no thread to be had,
/// the jobs run on the caller's.
fn concurrently<T: Send>(
    n: usize,
    workers: usize,
    job: impl Fn(usize) -> Result<T> + Sync,
) -> Vec<Option<Result<T>>> {
    use std::sync::atomic::{AtomicBool, AtomicUsize};
    let next = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    let slots: Vec<Mutex<Option<Result<T>>>> = (0..n).map(|_| Mutex::new(None)).collect();
    let work = || {
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            if i >= n || failed.load(Ordering::Relaxed) {
                return;
            }
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| job(i)))
                .unwrap_or_else(|p| Err(Error::from_panic(p.as_ref())));
            if r.is_err() {
                failed.store(true, Ordering::Relaxed);
            }
            *slots[i].lock().unwrap_or_else(|p| p.into_inner()) = Some(r);
        }
    };
    std::thread::scope(|s| {
        let started = (0..workers.min(n))
            .filter(|i| {
                std::thread::Builder::new()
                    .name(format!("bloomlsm-refilter-{i}"))
                    .spawn_scoped(s, work)
                    .is_ok()
            })
            .count();
        if started == 0 {
            work();
        }
    });
    slots
        .into_iter()
        .map(|slot| slot.into_inner().unwrap_or_else(|p| p.into_inner()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Results come back in job order, each job run once, whatever thread
    /// ran it.
    #[test]
    fn concurrent_jobs_answer_in_order() {
        let runs = AtomicU64::new(0);
        let out = concurrently(100, 8, |i| {
            runs.fetch_add(1, Ordering::Relaxed);
            Ok(i * 2)
        });
        assert_eq!(runs.load(Ordering::Relaxed), 100);
        let out: Vec<usize> = out.into_iter().map(|r| r.unwrap().unwrap()).collect();
        assert_eq!(out, (0..100).map(|i| i * 2).collect::<Vec<_>>());
        assert!(concurrently(0, 8, |_| Ok(())).is_empty());
    }

    /// A panic is the job's `Panicked` error, not an unwinding caller; the
    /// first job in order without a result is the failed one, and no job
    /// starts after a failure is seen.
    #[test]
    fn a_failed_job_stops_the_others_and_is_the_first_error() {
        for workers in [1, 3] {
            let out = concurrently(50, workers, |i| match i {
                10 => panic!("job ten"),
                _ => Ok(i),
            });
            let first = out.iter().position(|r| !matches!(r, Some(Ok(_)))).unwrap();
            assert_eq!(first, 10, "{workers} workers");
            assert!(
                matches!(&out[10], Some(Err(Error::Panicked(m))) if m.contains("job ten")),
                "{:?}",
                out[10]
            );
            // With one worker no job runs after it; with more, those that
            // started before it was seen may.
            if workers == 1 {
                assert!(out[11..].iter().all(Option::is_none));
            }
        }
    }

    use crate::fs::fault::{FaultFs, Op};
    use crate::{FilterOptions, FilterPolicy};

    fn options(fs: &FaultFs, policy: Option<FilterPolicy>) -> Options {
        Options {
            write_buffer_size: 16 << 10,
            target_file_size: 4 << 10,
            level1_max_bytes: 64 << 10,
            level_size_multiplier: 4,
            block_size: 1024,
            block_cache_capacity: 0,
            background_compaction: false,
            fs: Arc::new(fs.clone()),
            ..Options::default()
        }
        .filters(FilterOptions::uniform(policy))
        .use_stored_design(false)
    }

    /// A store of unfiltered files below L0 at `dir`, and what it holds.
    fn base(dir: &Path, fs: &FaultFs) -> BTreeMap<Vec<u8>, Vec<u8>> {
        let db = Db::open(dir, options(fs, None)).unwrap();
        let mut model = BTreeMap::new();
        for i in 0..8000u32 {
            let (k, v) = (format!("key{i:06}"), format!("value{i}-{}", "v".repeat(40)));
            db.put(&k, &v).unwrap();
            model.insert(k.into_bytes(), v.into_bytes());
        }
        db.compact().unwrap();
        db.close().unwrap();
        model
    }

    fn checkpoint(from: &Path, to: &Path, fs: &FaultFs) {
        let db = Db::open(from, options(fs, None)).unwrap();
        db.checkpoint(to).unwrap();
        db.close().unwrap();
    }

    /// The bytes of every table file under `dir`, sorted (their numbers
    /// depend on which rewrite took a number first; the order is set by
    /// their first data block).
    fn tables(dir: &Path) -> Vec<Vec<u8>> {
        let mut t: Vec<Vec<u8>> = std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .filter(|e| e.path().extension().is_some_and(|x| x == "sst"))
            .map(|e| std::fs::read(e.path()).unwrap())
            .collect();
        t.sort();
        t
    }

    fn contents(db: &Db) -> BTreeMap<Vec<u8>, Vec<u8>> {
        db.scan(..)
            .map(|r| r.map(|(k, v)| (k.to_vec(), v.to_vec())))
            .collect::<Result<_>>()
            .unwrap()
    }

    const DESIGNS: [fn() -> FilterPolicy; 3] = [
        || FilterPolicy::blocked512(6.0),
        || FilterPolicy::ribbon(10.0),
        || FilterPolicy::bloom(10.0),
    ];

    /// Checkpoints of one store rebuilt together with three designs write,
    /// each, the tables a rebuild of that store alone writes, and read each
    /// shared file once.
    #[test]
    fn stores_rebuilt_together_write_what_each_alone_writes_from_one_read() {
        let root = tempfile::tempdir().unwrap();
        let fs = FaultFs::new();
        let from = root.path().join("base");
        let model = base(&from, &fs);
        let (mut alone_counts, mut alone_reads) = (Vec::new(), Vec::new());
        for (i, design) in DESIGNS.iter().enumerate() {
            let (alone, together) = (
                root.path().join(format!("alone{i}")),
                root.path().join(format!("together{i}")),
            );
            checkpoint(&from, &alone, &fs);
            checkpoint(&from, &together, &fs);
            let db = Db::open(&alone, options(&fs, Some(design()))).unwrap();
            fs.reset_counts();
            alone_counts.push(db.rebuild_filters().unwrap());
            alone_reads.push(fs.count(Some(Op::Read)));
            db.close().unwrap();
        }
        let dbs: Vec<Db> = DESIGNS
            .iter()
            .enumerate()
            .map(|(i, design)| {
                Db::open(
                    root.path().join(format!("together{i}")),
                    options(&fs, Some(design())),
                )
                .unwrap()
            })
            .collect();
        fs.reset_counts();
        let counts = Db::rebuild_filters_together(&dbs.iter().collect::<Vec<_>>()).unwrap();
        let reads = fs.count(Some(Op::Read));
        assert_eq!(counts, alone_counts);
        assert!(counts.iter().all(|&n| n >= 8), "{counts:?}");
        for (i, db) in dbs.into_iter().enumerate() {
            assert_eq!(db.stats().filter_rebuilds_copied, counts[i]);
            assert!(contents(&db) == model, "store {i}: keys lost");
            db.close().unwrap();
            let (together, alone) = (
                tables(&root.path().join(format!("together{i}"))),
                tables(&root.path().join(format!("alone{i}"))),
            );
            assert_eq!(together.len(), alone.len(), "store {i}");
            for (a, b) in together.iter().zip(&alone) {
                // The same table but its creation time (a varint in the
                // properties) and the properties block's checksum.
                let differ = a.iter().zip(b).filter(|(x, y)| x != y).count();
                assert!(
                    a.len() == b.len() && differ <= 16,
                    "store {i}: a table of {} bytes against {}, {differ} bytes differ",
                    a.len(),
                    b.len()
                );
            }
        }
        // Each rebuild alone reads every file's blocks (at least one read
        // per file, the same reads for every design) and opens its new
        // tables; together each file's blocks are read once, which saves
        // the two other stores at least a read per file.
        let sum: u64 = alone_reads.iter().sum();
        eprintln!("reads: {alone_reads:?} alone, {reads} together, {counts:?} files");
        assert!(
            reads + 2 * counts[0] <= sum,
            "{reads} reads together, {alone_reads:?} alone"
        );
    }

    /// A checkpoint whose tables were copied (no hard links) holds other
    /// files under the same numbers: each store reads its own, and both
    /// get their designs. A store with nothing due beside them writes no
    /// MANIFEST edit. A store named twice is refused and left working.
    #[test]
    fn unshared_files_are_read_per_store_and_a_store_named_twice_is_refused() {
        let root = tempfile::tempdir().unwrap();
        let fs = FaultFs::new();
        let from = root.path().join("base");
        let model = base(&from, &fs);
        let (linked, copied) = (root.path().join("linked"), root.path().join("copied"));
        checkpoint(&from, &linked, &fs);
        fs.refuse_links(true);
        checkpoint(&from, &copied, &fs);
        fs.refuse_links(false);
        let a = Db::open(&linked, options(&fs, Some(DESIGNS[0]()))).unwrap();
        let b = Db::open(&copied, options(&fs, Some(DESIGNS[1]()))).unwrap();
        assert!(matches!(
            Db::rebuild_filters_together(&[&a, &a]),
            Err(Error::InvalidArgument(_))
        ));
        a.put("after", "refused").unwrap();
        // A third store with nothing due: its MANIFEST is not written.
        let plain = root.path().join("plain");
        checkpoint(&from, &plain, &fs);
        let c = Db::open(&plain, options(&fs, None)).unwrap();
        let manifest = |dir: &Path| -> Vec<(String, u64)> {
            let mut m: Vec<(String, u64)> = std::fs::read_dir(dir)
                .unwrap()
                .flatten()
                .filter(|e| e.file_name().to_string_lossy().starts_with("MANIFEST"))
                .map(|e| {
                    (
                        e.file_name().to_string_lossy().into_owned(),
                        e.metadata().unwrap().len(),
                    )
                })
                .collect();
            m.sort();
            m
        };
        let before = manifest(&plain);
        let counts = Db::rebuild_filters_together(&[&a, &b, &c]).unwrap();
        assert!(
            counts[0] >= 8 && counts[0] == counts[1] && counts[2] == 0,
            "{counts:?}"
        );
        assert_eq!(manifest(&plain), before);
        c.close().unwrap();
        let kind = |db: &Db| -> Vec<String> {
            let mut k: Vec<String> = db.file_stats().iter().map(|f| f.filter.clone()).collect();
            k.dedup();
            k
        };
        let (ka, kb) = (kind(&a), kind(&b));
        assert!(
            ka.len() == 1 && kb.len() == 1 && ka != kb && ka[0] != "none",
            "{ka:?} {kb:?}"
        );
        assert!(contents(&b) == model);
        let mut with_after = model.clone();
        with_after.insert(b"after".to_vec(), b"refused".to_vec());
        assert!(contents(&a) == with_after);
        a.close().unwrap();
        b.close().unwrap();
    }
}
