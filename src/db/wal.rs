//! The write-ahead log: files `NNNNNN.log` holding one [`WriteBatch`] encoding
//! per log record (see [`crate::db::log`] for the record format).
//!
//! # What each sync mode promises
//!
//! - `sync = true`: the record is written *and* `fdatasync`ed before
//!   [`Wal::append`] returns. An acknowledged batch survives `kill -9` of the
//!   process, an OS crash and power loss — as far as the file system and the
//!   device honour fsync (disks that lie about flushing can still lose it).
//! - `sync = false`: the record is handed to the OS with `write(2)` before
//!   `append` returns and nothing is kept in user-space buffers between calls,
//!   so it sits in the page cache. It survives `kill -9` or a panic of the
//!   process, but an OS crash or power loss may lose it (and any later
//!   unsynced records); a later `sync = true` append, or [`Wal::sync`], makes
//!   every earlier record durable too.
//!
//! Either way a crash can leave a partially written last record; [`replay`]
//! drops it as a torn tail. Nothing that was acknowledged under the mode's
//! promise is ever part of a torn tail.
//!
//! If a write or fsync fails, the WAL refuses every further append
//! ([`Error::Poisoned`]): after a failed fsync Linux may already have dropped
//! the dirty pages, so retrying could report success for lost data.

use std::path::{Path, PathBuf};

use crate::db::batch::WriteBatch;
use crate::db::filename::{log_file, sync_dir_in};
use crate::db::log::{LogReader, LogWriter, Skipped, TailDropped};
use crate::error::{Error, Result};
use crate::fs::{FileSystem, RealFs};

/// An open write-ahead log being appended to.
#[derive(Debug)]
pub struct Wal {
    writer: LogWriter,
    number: u64,
}

impl Wal {
    /// Creates `dir/NNNNNN.log` (it must not exist) and fsyncs `dir`, so that
    /// the new file is still there after a crash.
    pub fn create(dir: &Path, number: u64) -> Result<Wal> {
        Self::create_in(&RealFs, dir, number)
    }

    /// [`Wal::create`] through `fs`.
    pub fn create_in(fs: &dyn FileSystem, dir: &Path, number: u64) -> Result<Wal> {
        let writer = LogWriter::create_log_in(fs, &log_file(dir, number))?;
        sync_dir_in(fs, dir)?;
        Ok(Wal { writer, number })
    }

    /// Reopens an existing log to append after its last valid record
    /// (`valid_end` is [`ReplayReport::valid_end`]); a torn tail is cut off.
    pub fn reopen(dir: &Path, number: u64, valid_end: u64) -> Result<Wal> {
        let writer = LogWriter::reopen(&log_file(dir, number), valid_end)?;
        Ok(Wal { writer, number })
    }

    /// The log's file number.
    pub fn number(&self) -> u64 {
        self.number
    }

    /// The log's path.
    pub fn path(&self) -> &Path {
        self.writer.path()
    }

    /// Bytes in the log so far.
    pub fn size(&self) -> u64 {
        self.writer.len()
    }

    /// Appends one record — an encoded [`WriteBatch`], see
    /// [`WriteBatch::encoded`] — and returns once it meets the promise of the
    /// sync mode (see the module docs).
    pub fn append(&mut self, record: &[u8], sync: bool) -> Result<()> {
        self.writer.add_record(record)?;
        if sync {
            self.writer.sync()?;
        }
        Ok(())
    }

    /// Appends `batch` (its sequence number must already be set).
    pub fn append_batch(&mut self, batch: &WriteBatch, sync: bool) -> Result<()> {
        self.append(batch.encoded(), sync)
    }

    /// fdatasyncs everything appended so far.
    pub fn sync(&mut self) -> Result<()> {
        self.writer.sync()
    }
}

/// What [`replay`] found in a log.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReplayReport {
    /// Records (batches) replayed.
    pub records: u64,
    /// Highest sequence number replayed (0 if none).
    pub last_seq: u64,
    /// The torn tail dropped at the end, if any.
    pub tail_dropped: Option<TailDropped>,
    /// Damaged regions skipped in salvage mode (and, in salvage mode, records
    /// whose checksum held but whose batch did not decode).
    pub salvaged: Vec<Skipped>,
    /// Offset just past the last good record: where [`Wal::reopen`] continues.
    pub valid_end: u64,
}

/// Replays the log at `path`, handing each batch to `apply` in log order.
///
/// A torn tail is dropped and reported. Mid-file corruption — a damaged record
/// with valid records after it, a record whose batch does not decode, or a
/// batch whose sequence does not exceed its predecessor's — fails with
/// [`Error::Corruption`], unless `salvage`, which skips and reports it.
/// Errors returned by `apply` abort the replay.
pub fn replay(
    path: &Path,
    salvage: bool,
    apply: impl FnMut(WriteBatch) -> Result<()>,
) -> Result<ReplayReport> {
    replay_in(&RealFs, path, salvage, apply)
}

/// [`replay`] through `fs`.
pub fn replay_in(
    fs: &dyn FileSystem,
    path: &Path,
    salvage: bool,
    mut apply: impl FnMut(WriteBatch) -> Result<()>,
) -> Result<ReplayReport> {
    let mut reader = LogReader::open_in(fs, path, salvage)?;
    let mut report = ReplayReport::default();
    let mut extra_skips = Vec::new();
    while let Some(rec) = reader.next_record()? {
        let at = reader.last_record_offset();
        let batch = WriteBatch::decode_in(&rec, path, at).and_then(|b| {
            if let Some(what) = outside_write_limits(&b) {
                Err(Error::corruption(path, at, what))
            } else if !b.is_empty() && report.records > 0 && b.sequence() <= report.last_seq {
                Err(Error::corruption(
                    path,
                    at,
                    format!(
                        "batch sequence {} does not follow the previous batch's last sequence {}",
                        b.sequence(),
                        report.last_seq
                    ),
                ))
            } else {
                Ok(b)
            }
        });
        match batch {
            Ok(b) => {
                if let Some(last) = b.last_sequence() {
                    report.last_seq = report.last_seq.max(last);
                }
                report.records += 1;
                apply(b)?;
            }
            Err(e) if salvage => extra_skips.push(Skipped {
                offset: at,
                bytes: reader.valid_end() - at,
                reason: e.to_string(),
            }),
            Err(e) => return Err(e),
        }
    }
    report.tail_dropped = reader.tail_dropped();
    report.valid_end = reader.valid_end();
    report.salvaged = reader.skipped().to_vec();
    report.salvaged.extend(extra_skips);
    report.salvaged.sort_by_key(|s| s.offset);
    Ok(report)
}

/// Why a logged batch breaks a limit `Db::write` enforces before it logs
/// anything ([`db::outside_write_limits`]), if it does. Such a record is
/// damage, not a write: replaying it would put an empty key in the store, or
/// a key the memtable cannot hold.
///
/// [`db::outside_write_limits`]: crate::db::outside_write_limits
fn outside_write_limits(batch: &WriteBatch) -> Option<String> {
    batch.iter().enumerate().find_map(|(i, op)| {
        crate::db::write::op_outside_limits(&op).map(|what| format!("operation {i}: {what}"))
    })
}

/// [`replay`] collecting every batch into a vector.
pub fn replay_all(path: &Path, salvage: bool) -> Result<(Vec<WriteBatch>, ReplayReport)> {
    let mut out = Vec::new();
    let report = replay(path, salvage, |b| {
        out.push(b);
        Ok(())
    })?;
    Ok((out, report))
}

/// The path of log `number` in `dir` (re-exported for convenience).
pub fn wal_path(dir: &Path, number: u64) -> PathBuf {
    log_file(dir, number)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::log::LogWriter;
    use crate::db::{MAX_KEY_LEN, MAX_VALUE_LEN};

    fn batch(seq: u64, n: usize) -> WriteBatch {
        let mut b = WriteBatch::new();
        for i in 0..n {
            if i % 3 == 2 {
                b.delete(format!("k{seq}-{i}").as_bytes());
            } else {
                b.put(format!("k{seq}-{i}").as_bytes(), vec![i as u8; i * 37]);
            }
        }
        b.set_sequence(seq);
        b
    }

    #[test]
    fn append_and_replay() {
        let dir = tempfile::tempdir().unwrap();
        let mut wal = Wal::create(dir.path(), 3).unwrap();
        assert_eq!(wal.number(), 3);
        assert!(Wal::create(dir.path(), 3).is_err());
        let mut seq = 1;
        let mut want = Vec::new();
        for i in 0..50 {
            let b = batch(seq, 1 + i % 7);
            seq += b.len() as u64;
            wal.append_batch(&b, i % 2 == 0).unwrap();
            want.push(b);
        }
        wal.sync().unwrap();
        let (got, rep) = replay_all(&wal_path(dir.path(), 3), false).unwrap();
        assert_eq!(got, want);
        assert_eq!(rep.records, 50);
        assert_eq!(rep.last_seq, seq - 1);
        assert_eq!(rep.tail_dropped, None);
        assert_eq!(rep.valid_end, wal.size());

        // Torn tail, then reopen and continue.
        let path = wal_path(dir.path(), 3);
        let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        f.set_len(wal.size() - 5).unwrap();
        drop(wal);
        let (got, rep) = replay_all(&path, false).unwrap();
        assert_eq!(got.len(), 49);
        assert!(rep.tail_dropped.is_some());
        let mut wal = Wal::reopen(dir.path(), 3, rep.valid_end).unwrap();
        let b = batch(rep.last_seq + 1, 4);
        wal.append_batch(&b, true).unwrap();
        let (got, rep) = replay_all(&path, false).unwrap();
        assert_eq!(got.len(), 50);
        assert_eq!(got[49], b);
        assert_eq!(rep.tail_dropped, None);
    }

    #[test]
    fn bad_batches_are_corruption_or_salvaged() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("000001.log");
        let mut w = LogWriter::create(&path).unwrap();
        w.add_record(batch(1, 2).encoded()).unwrap();
        w.add_record(b"not a batch").unwrap();
        w.add_record(batch(3, 2).encoded()).unwrap();
        w.add_record(batch(2, 1).encoded()).unwrap(); // sequence goes backwards
        w.add_record(batch(10, 1).encoded()).unwrap();
        w.sync().unwrap();
        let err = replay_all(&path, false).unwrap_err();
        assert!(err.is_corruption(), "{err}");
        let (got, rep) = replay_all(&path, true).unwrap();
        assert_eq!(
            got.iter().map(|b| b.sequence()).collect::<Vec<_>>(),
            vec![1, 3, 10]
        );
        assert_eq!(rep.salvaged.len(), 2);
        assert_eq!(rep.last_seq, 10);
    }

    #[test]
    fn batches_outside_the_write_limits_are_corruption() {
        let dir = tempfile::tempdir().unwrap();
        let long_key = vec![b'k'; MAX_KEY_LEN + 1];
        let long_value = vec![0; MAX_VALUE_LEN + 1];
        let mut bad: Vec<WriteBatch> = Vec::new();
        for (key, value) in [
            (&b""[..], Some(&b"v"[..])),
            (&long_key[..], Some(&b"v"[..])),
            (&long_key[..], None),
            (&b""[..], None),
            (&b"k"[..], Some(&long_value[..])),
        ] {
            let mut b = batch(1, 2);
            match value {
                Some(v) => b.put(key, v),
                None => b.delete(key),
            }
            bad.push(b);
        }
        for (i, b) in bad.iter().enumerate() {
            let path = dir.path().join(format!("{i:06}.log"));
            let mut w = LogWriter::create(&path).unwrap();
            w.add_record(b.encoded()).unwrap();
            w.add_record(batch(10, 1).encoded()).unwrap();
            w.sync().unwrap();
            let err = replay_all(&path, false).unwrap_err();
            assert!(err.is_corruption(), "batch {i}: {err}");
            assert!(err.to_string().contains("operation 2"), "batch {i}: {err}");
            let (got, rep) = replay_all(&path, true).unwrap();
            assert_eq!(got, vec![batch(10, 1)], "batch {i}: salvage skips it");
            assert_eq!(rep.salvaged.len(), 1);
        }
        // At the limits exactly: a write.
        let path = dir.path().join("000099.log");
        let mut w = LogWriter::create(&path).unwrap();
        let mut b = batch(1, 1);
        b.put(&long_key[1..], &long_value[1..]);
        w.add_record(b.encoded()).unwrap();
        w.sync().unwrap();
        assert_eq!(replay_all(&path, false).unwrap().0, vec![b]);
    }

    #[test]
    fn apply_errors_abort() {
        let dir = tempfile::tempdir().unwrap();
        let mut wal = Wal::create(dir.path(), 1).unwrap();
        wal.append_batch(&batch(1, 1), false).unwrap();
        let err = replay(wal.path(), false, |_| Err(Error::Closed)).unwrap_err();
        assert!(matches!(err, Error::Closed));
    }
}
