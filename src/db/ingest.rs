//! [`Db::ingest`] and [`Keyspace::ingest`](super::Keyspace::ingest): a bulk
//! load that reaches the store all at once or not at all, like RocksDB's
//! `IngestExternalFile`.
//!
//! The records are written into tables that no version names, under file
//! numbers the MANIFEST reserves, and installed as L0 files by one MANIFEST
//! edit. Until that edit is durable a crash leaves only unreferenced tables,
//! which the next open deletes; once it is, every record is in the store.
//!
//! The load takes the store's writer lock for its whole length, so that its
//! sequence numbers, given in input order after the store's last, are the
//! newest in every keyspace: other writers wait for it. Every keyspace's
//! memtables are flushed first and every log but the active, empty one
//! retired: a read takes any memtable entry to be newer than any table's,
//! and the load's sequence numbers are in no log, so a log holding writes
//! from before the load and after it would read, at replay, as a log that
//! lost the writes between. Records are sorted in memtables of
//! [`CHUNK_BYTES`] each written as a run of tables; several runs are then
//! merged into one run of disjoint tables, which a compaction can move down
//! whole when nothing below overlaps it.
//!
//! A load into another keyspace is written and installed by that keyspace's
//! engine the same way, under the store's writer lock. The store's MANIFEST
//! records the load's last sequence number before the keyspace's MANIFEST
//! installs its tables, so that no reopen numbers a write below them.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::compaction::{self, FileNumbers, OutputSize, Retention};
use super::install::Change;
use super::memtable::MemTable;
use super::merge::{MergeIter, Source};
use super::version::FileHandle;
use super::{Db, Inner, Wal, WriteBatch, Writer, filename, outside_write_limits};
use crate::db::manifest::VersionEdit;
use crate::error::{Error, Result};
use crate::key;

/// Bytes of records sorted in memory at once (small in the crate's tests,
/// so that they load several runs and merge them).
const CHUNK_BYTES: usize = if cfg!(test) { 256 << 10 } else { 64 << 20 };

/// Records per batch inserted into a chunk's memtable.
const BATCH_RECORDS: usize = 1024;

/// What [`Db::ingest`] installed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct IngestReport {
    /// Records read (a key given twice counts twice; the later value wins).
    pub records: u64,
    /// Tables installed in L0.
    pub tables: usize,
    /// Bytes of those tables.
    pub bytes: u64,
}

/// Fresh file numbers from the MANIFEST, in increasing order: a table
/// prepared ahead for a compaction may carry an older number, which in L0,
/// ordered by number, would rank the load below older files.
struct Fresh<'a>(&'a Inner);

impl FileNumbers for Fresh<'_> {
    fn next_file_number(&self) -> Result<u64> {
        self.0.next_file_number()
    }
}

impl Db {
    /// Writes `records` (key, value) as one atomic load: after it returns
    /// `Ok` all of them are in the store, and if it fails, or the process
    /// dies at any moment before it returns, none of them is (module docs of
    /// `db::ingest` for how). A key given twice keeps its later value. The
    /// records need not be sorted. Other writers, to every keyspace, wait
    /// until it is done (every keyspace's memtable is flushed first); reads
    /// go on, and see the load whole, once it is installed.
    /// [`Keyspace::ingest`](crate::Keyspace::ingest) loads into another
    /// keyspace.
    ///
    /// An `Err` item ends the load with that error, nothing installed; so
    /// does a key or value outside the write limits
    /// ([`crate::db::MAX_KEY_LEN`], [`crate::db::MAX_VALUE_LEN`]).
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// let db = bloomlsm::Db::open(dir.path(), bloomlsm::Options::default())?;
    /// let records = (0..1000).map(|i| Ok((format!("key{i:04}"), format!("value{i}"))));
    /// let report = db.ingest(records)?;
    /// assert_eq!(report.records, 1000);
    /// assert_eq!(db.get("key0999")?.as_deref(), Some(&b"value999"[..]));
    /// // A failed load leaves nothing.
    /// let bad = vec![Ok(("a", "1")), Err(bloomlsm::Error::invalid("stop"))];
    /// assert!(db.ingest(bad).is_err());
    /// assert_eq!(db.get("a")?, None);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn ingest<K, V>(
        &self,
        records: impl IntoIterator<Item = Result<(K, V)>>,
    ) -> Result<IngestReport>
    where
        K: AsRef<[u8]>,
        V: AsRef<[u8]>,
    {
        self.inner
            .ingest(&self.inner, &|| Ok(()), &mut records.into_iter())
    }
}

impl Inner {
    /// Loads `records` into keyspace `k` of this store (the store itself
    /// for the default keyspace). `live` is checked under the writer lock:
    /// `Ok` while `k` exists.
    pub(super) fn ingest<K: AsRef<[u8]>, V: AsRef<[u8]>>(
        &self,
        k: &Inner,
        live: &dyn Fn() -> Result<()>,
        records: &mut dyn Iterator<Item = Result<(K, V)>>,
    ) -> Result<IngestReport> {
        let mut w = self.open_writer()?;
        live()?;
        self.flush_all_for_load(&mut w)?;
        let first = self.last_seq.load(Ordering::Acquire) + 1;
        let mut written: Vec<Arc<FileHandle>> = Vec::new();
        let loaded = k.write_runs(records, first, &mut written);
        let installed = loaded.and_then(|(report, runs)| {
            let files = if runs > 1 {
                k.merge_runs(&written)
            } else {
                Ok(std::mem::take(&mut written))
            }?;
            self.install_load(k, files, first, report)
        });
        // Tables of a failed load, and the runs a merge replaced: no version
        // names them.
        for f in written {
            let _ = k
                .fs()
                .remove_file(&filename::table_file(&k.dir, f.number()));
        }
        installed
    }

    /// Flushes the memtables of every keyspace and retires every log but
    /// the active one, which is left empty (the caller holds the writer
    /// lock `w`): no logged write is older than the load that follows.
    fn flush_all_for_load(&self, w: &mut Writer) -> Result<()> {
        if w.wal.is_none() {
            return Err(Error::ReadOnly);
        }
        // A log holds more than the memtables show: writes to a keyspace
        // dropped since.
        if w.wal.as_ref().map_or(0, Wal::size) > 0 {
            let mut st = self.state();
            if let Some(e) = &st.bg_error {
                return Err(e.duplicate());
            }
            self.freeze_memtable(w, &mut st)?;
        }
        self.wait_for_flushes()?;
        for c in self.children().values() {
            c.inner().wait_for_flushes()?;
        }
        self.retire_logs()
    }

    /// Sorts `records` into chunks, each written as a run of tables into
    /// `out`, with sequence numbers from `first` on. Returns the count of
    /// records and of runs.
    fn write_runs<K: AsRef<[u8]>, V: AsRef<[u8]>>(
        &self,
        records: &mut dyn Iterator<Item = Result<(K, V)>>,
        first: u64,
        out: &mut Vec<Arc<FileHandle>>,
    ) -> Result<(IngestReport, usize)> {
        let mut report = IngestReport::default();
        let mut runs = 0;
        let mut next_seq = first;
        let mut mem = MemTable::for_write_buffer(CHUNK_BYTES);
        let mut batch = WriteBatch::new();
        let mut done = false;
        while !done {
            match records.next() {
                Some(r) => {
                    let (k, v) = r?;
                    let (k, v) = (k.as_ref(), v.as_ref());
                    if let Some(why) = outside_write_limits(k, v) {
                        return Err(Error::invalid(format!(
                            "record {} of the load: {why}",
                            report.records + 1
                        )));
                    }
                    batch.put(k, v);
                    report.records += 1;
                }
                None => done = true,
            }
            if batch.len() >= BATCH_RECORDS || (done && !batch.is_empty()) {
                let n = batch.len() as u64;
                if next_seq.saturating_add(n - 1) > key::MAX_SEQUENCE {
                    return Err(Error::invalid(
                        "the load needs more sequence numbers than the store has left",
                    ));
                }
                batch.set_sequence(next_seq);
                mem.insert_batch(&batch);
                next_seq += n;
                batch = WriteBatch::new();
            }
            if !mem.is_empty() && (done || mem.approximate_memory_bytes() >= CHUNK_BYTES) {
                let chunk = std::mem::replace(&mut mem, MemTable::for_write_buffer(CHUNK_BYTES));
                out.extend(self.write_run(chunk.iter().map(Ok))?);
                runs += 1;
            }
        }
        Ok((report, runs))
    }

    /// Writes `entries` (internal-key order) as a run of disjoint tables
    /// cut at the target file size, with the filter and compression of a
    /// new L0 file.
    fn write_run<K: AsRef<[u8]>, V: AsRef<[u8]>>(
        &self,
        entries: impl Iterator<Item = Result<(K, V)>>,
    ) -> Result<Vec<Arc<FileHandle>>> {
        let v = self.super_version().version.clone();
        let policy = self
            .opts
            .filters
            .policy_for(0, &v.runs(), v.last_nonempty_level().max(1));
        let out = compaction::write_outputs(
            &self.dir,
            &self.opts,
            OutputSize::Target(self.opts.target_file_size),
            entries,
            policy,
            self.opts.compression.for_level(0),
            &Fresh(self),
            &Retention::default(),
            &|_| false,
            &crate::range_tombstone::Fragments::default(),
            &|_, _| false,
            &[],
            None,
            self.caches.clone(),
        )?;
        crate::db::compaction::allocation::note_written(&out.files, self.lookups());
        Ok(out.files)
    }

    /// Merges the runs `runs` (tables newest run last) into one run of
    /// disjoint tables. The inputs stay in `runs`, to be deleted.
    fn merge_runs(&self, runs: &[Arc<FileHandle>]) -> Result<Vec<Arc<FileHandle>>> {
        // Sequence numbers rise with the input: an internal-key merge puts
        // a key's later value first, and the writer keeps only it.
        let sources = runs
            .iter()
            .map(|f| Source::table(f.table.clone(), None))
            .collect();
        self.write_run(MergeIter::new(sources))
    }

    /// Installs `files` in L0 of keyspace `k` by one MANIFEST edit of its
    /// that also records the load's last sequence number, then makes the
    /// load visible. For a keyspace other than the store's own, the store's
    /// MANIFEST records that sequence number first: a reopen after a crash
    /// between the two edits then numbers new writes above the load's
    /// tables (or above numbers no table uses). The store's last sequence
    /// moves only once the tables are installed: a snapshot taken meanwhile
    /// does not see the load appear.
    fn install_load(
        &self,
        k: &Inner,
        files: Vec<Arc<FileHandle>>,
        first: u64,
        mut report: IngestReport,
    ) -> Result<IngestReport> {
        if report.records == 0 {
            return Ok(report);
        }
        let last = first + report.records - 1;
        filename::sync_dir_in(k.fs(), &k.dir)?;
        if std::ptr::eq(self, k) {
            k.install_tables(&files, last)?;
        } else {
            let st = self.state();
            self.log_edit_or_poison(
                st,
                VersionEdit::new(),
                last,
                "recording a load's sequence numbers",
            )?;
            let r = k.install_tables(&files, last);
            // Used, or (if the install failed, its edit's fate unknown)
            // given up: the store's MANIFEST holds them.
            self.last_seq.store(last, Ordering::Release);
            r?;
        }
        k.cv.notify_all();
        report.tables = files.len();
        report.bytes = files.iter().map(|f| f.meta.file_size).sum();
        k.counters
            .bytes_flushed
            .fetch_add(report.bytes, Ordering::Relaxed);
        Ok(report)
    }

    /// Installs the edit adding `files` (a load up to sequence `last`) to
    /// L0 of this engine ([`Inner::install_change`]). A failed install
    /// poisons the engine; its tables stay for the reopen to judge.
    fn install_tables(&self, files: &[Arc<FileHandle>], last: u64) -> Result<()> {
        let st = self.state();
        let mut edit = VersionEdit::new();
        for f in files {
            edit.new_files.push((0, f.meta.clone()));
        }
        if self.ks_id != 0 || !st.vs.keyspaces().is_empty() {
            // Logs may outlive the load: replay skips what it holds.
            edit.flushed_sequence = Some(last);
        }
        let change = Change {
            edit,
            written: files,
            replaced: Vec::new(),
            synced: true,
            seq: last,
            during: "installing a load",
        };
        let (mut st, _) = self.install_change(st, change, |_| {})?;
        self.last_seq.store(last, Ordering::Release);
        // The memtables were flushed first: the load is the newest.
        st.flushed_seq = last;
        let now = self.opened_at.elapsed().as_millis() as u64;
        self.last_write_ms.fetch_max(now, Ordering::Relaxed);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use crate::{Db, Error, Options};

    fn opts() -> Options {
        Options {
            write_buffer_size: 64 << 10,
            target_file_size: 64 << 10,
            ..Options::default()
        }
    }

    /// Records in random order with repeated keys, over several sorted
    /// runs, beside earlier writes they overwrite: every key reads its last
    /// value, before and after a reopen, and the installed tables are
    /// disjoint L0 files.
    #[test]
    fn a_load_of_several_runs_reads_back_whole() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path(), opts()).unwrap();
        let mut model = BTreeMap::new();
        for i in 0..500u64 {
            let (k, v) = (format!("k{:06}", i * 7), format!("old{i}"));
            db.put(&k, &v).unwrap();
            model.insert(k, v);
        }
        let mut rng = crate::test_rng::xorshift(0x1A9E57);
        let records: Vec<(String, String)> = (0..40_000u64)
            .map(|i| {
                (
                    format!("k{:06}", rng() % 30_000),
                    format!("v{i}-{}", "x".repeat(40)),
                )
            })
            .collect();
        for (k, v) in &records {
            model.insert(k.clone(), v.clone());
        }
        let report = db.ingest(records.iter().map(|(k, v)| Ok((k, v)))).unwrap();
        assert_eq!(report.records, 40_000);
        assert!(report.tables > 1, "{report:?}");
        let check = |db: &Db, model: &BTreeMap<String, String>| {
            let got: BTreeMap<String, String> = db
                .scan(..)
                .map(|r| {
                    let (k, v) = r.unwrap();
                    (
                        String::from_utf8(k.to_vec()).unwrap(),
                        String::from_utf8(v.to_vec()).unwrap(),
                    )
                })
                .collect();
            assert_eq!(&got, model);
            for (k, v) in model.iter().step_by(97) {
                assert_eq!(db.get(k).unwrap().as_deref(), Some(v.as_bytes()));
            }
        };
        check(&db, &model);
        // Writes after the load are newer than it.
        db.put("k000000", "after").unwrap();
        model.insert("k000000".into(), "after".into());
        check(&db, &model);
        db.close().unwrap();
        let db = Db::open(dir.path(), opts()).unwrap();
        check(&db, &model);
        db.verify().unwrap();
    }

    /// A load that fails part way (a bad record, an error from its input)
    /// installs nothing and leaves no table file behind; the store goes on.
    #[test]
    fn a_failed_load_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path(), opts()).unwrap();
        db.put("before", "1").unwrap();
        let tables = || {
            std::fs::read_dir(dir.path())
                .unwrap()
                .filter(|e| {
                    e.as_ref()
                        .unwrap()
                        .path()
                        .extension()
                        .is_some_and(|x| x == "sst")
                })
                .count()
        };
        let many = |last: crate::Result<(String, String)>| {
            (0..30_000u64)
                .map(|i| Ok((format!("k{i:06}"), "v".repeat(30))))
                .chain(std::iter::once(last))
        };
        let e = db
            .ingest(many(Err(Error::invalid("input ended early"))))
            .unwrap_err();
        assert!(e.to_string().contains("input ended early"), "{e}");
        let e = db
            .ingest(many(Ok((String::new(), "v".into()))))
            .unwrap_err();
        assert!(e.to_string().contains("empty key"), "{e}");
        assert_eq!(db.get("k000001").unwrap(), None);
        let before = tables();
        db.put("after", "2").unwrap();
        db.flush().unwrap();
        assert_eq!(tables(), before + 1);
        db.close().unwrap();
        let db = Db::open(dir.path(), opts()).unwrap();
        assert_eq!(db.get("k000001").unwrap(), None);
        assert_eq!(db.get("before").unwrap().as_deref(), Some(&b"1"[..]));
        assert_eq!(db.get("after").unwrap().as_deref(), Some(&b"2"[..]));
    }
}
