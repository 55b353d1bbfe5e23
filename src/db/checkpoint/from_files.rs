//! [`Db::checkpoint`] through a read-only handle ([`Db::open_read_only`]):
//! a checkpoint of a store that a writer in another process may be
//! changing, made from the store's files as they are on disk.
//!
//! A read-only handle cannot flush, so the checkpoint holds what the files
//! hold: the tables each MANIFEST names (hard links, or copies where links
//! are refused) and every write-ahead log the store still replays, copied up
//! to its last whole record. Opening it replays those logs, as opening the
//! store would. One attempt:
//!
//! 1. Note each manifest's name and length (the store's and each
//!    keyspace's).
//! 2. Read the store's MANIFEST, then each keyspace's; link or copy their
//!    tables; copy the logs at or above the store's log number (a log
//!    being written is cut at its last whole record, so the copy holds the
//!    writes of a prefix of its batches); write each part's `OPTIONS`,
//!    MANIFEST and `CURRENT` (the store's last).
//! 3. Note the manifests again. Unchanged: no flush or compaction of the
//!    writer replaced a file during the copy, and the copy is the store as
//!    of one moment (with the writes the logs held then). Changed, or a
//!    file gone (a compaction or flush removed it): empty the temporary
//!    directory and try again, up to [`ATTEMPTS`] times.
//!
//! The checkpoint then holds every write the writer acknowledged before
//! the call (an acknowledged write is in a log the copy holds, or in a
//! table), and of the writes made during it a prefix in sequence order.

use std::path::Path;

use super::report::{CheckpointReport, INCOMPLETE};
use crate::db::log::LogReader;
use crate::db::manifest::RecoveredState;
use crate::db::*;
use crate::fs::link_refused;

/// Attempts before giving up on a store whose writer replaces files during
/// every copy.
pub(super) const ATTEMPTS: usize = 100;

/// Each manifest's name and length: the store's, then each keyspace's by id.
type Marks = Vec<(u32, Option<(u64, u64)>)>;

fn marks(fs: &dyn FileSystem, dir: &Path) -> Marks {
    let mark = |d: &Path| -> Option<(u64, u64)> {
        let n = crate::db::manifest::read_current(fs, d).ok()?;
        Some((n, fs.file_len(&filename::manifest_file(d, n)).ok()?))
    };
    let mut out = vec![(0, mark(dir))];
    if let Ok(names) = fs.list_dir(dir) {
        let mut ids: Vec<u32> = names
            .iter()
            .filter_map(|n| n.to_str().and_then(filename::parse_keyspace_dir))
            .collect();
        ids.sort_unstable();
        out.extend(
            ids.into_iter()
                .map(|id| (id, mark(&filename::keyspace_dir(dir, id)))),
        );
    }
    out
}

/// Fills `tmp` (which holds the [`INCOMPLETE`] marker and the lock) with a
/// checkpoint of the store in `dir` made from its files.
pub(super) fn fill_from_files(
    fs: &dyn FileSystem,
    dir: &Path,
    tmp: &Path,
) -> Result<CheckpointReport> {
    let mut last_err = None;
    for attempt in 0..ATTEMPTS {
        if attempt > 0 {
            empty_but_marker(fs, tmp)?;
            std::thread::sleep(std::time::Duration::from_micros(
                200 * attempt.min(50) as u64,
            ));
        }
        let before = marks(fs, dir);
        let copied = copy_store(fs, dir, tmp);
        let changed = marks(fs, dir) != before;
        match copied {
            Ok(report) if !changed => {
                let marker = tmp.join(INCOMPLETE);
                fs.remove_file(&marker)
                    .map_err(|e| Error::io(format!("remove {}", marker.display()), e))?;
                filename::sync_dir_in(fs, tmp)?;
                return Ok(report);
            }
            Ok(_) => last_err = None,
            Err(e) if changed => last_err = Some(e),
            Err(e) => return Err(e),
        }
    }
    let why = last_err.map_or(String::new(), |e| format!(" (the last met: {e})"));
    Err(Error::io(
        format!(
            "checkpoint of {} from its files: its writer replaced files during each of {ATTEMPTS} copies{why}",
            dir.display()
        ),
        std::io::ErrorKind::Interrupted.into(),
    ))
}

/// Removes what an attempt left in `tmp`, but the marker and the lock.
fn empty_but_marker(fs: &dyn FileSystem, tmp: &Path) -> Result<()> {
    let names = fs
        .list_dir(tmp)
        .map_err(|e| Error::io(format!("list {}", tmp.display()), e))?;
    for name in names {
        let Some(name) = name.to_str() else { continue };
        if name == INCOMPLETE || name == "LOCK" {
            continue;
        }
        let path = tmp.join(name);
        if filename::parse_keyspace_dir(name).is_some() {
            for inner in fs.list_dir(&path).unwrap_or_default() {
                let _ = fs.remove_file(&path.join(inner));
            }
            let _ = fs.remove_dir(&path);
        } else {
            fs.remove_file(&path)
                .map_err(|e| Error::io(format!("remove {}", path.display()), e))?;
        }
    }
    Ok(())
}

/// One attempt: step 2 of the module docs.
fn copy_store(fs: &dyn FileSystem, dir: &Path, tmp: &Path) -> Result<CheckpointReport> {
    let (mut state, _) = Manifest::recover(fs, dir)?;
    let mut report = CheckpointReport::default();
    let mut sequence = state.last_sequence;
    for &id in state.keyspaces.keys() {
        let from = filename::keyspace_dir(dir, id);
        let to = filename::keyspace_dir(tmp, id);
        fs.create_dir_all(&to)
            .map_err(|e| Error::io(format!("create directory {}", to.display()), e))?;
        let (kstate, _) = Manifest::recover(fs, &from)?;
        sequence = sequence.max(kstate.last_sequence);
        copy_part(fs, &from, &to, kstate, 0, &mut report)?;
        filename::sync_dir_in(fs, &to)?;
    }
    let mut logs: Vec<u64> = filename::list_store_files_in(fs, dir)?
        .into_iter()
        .filter(|(k, n, _)| *k == FileKind::Log && *n >= state.log_number)
        .map(|(_, n, _)| n)
        .collect();
    logs.sort_unstable();
    for &n in &logs {
        let last = copy_log(fs, &filename::log_file(dir, n), &filename::log_file(tmp, n))?;
        sequence = sequence.max(last);
        report.logs += 1;
    }
    // The manifest written is numbered above every copied file.
    let above_logs = logs.last().map_or(0, |&n| n + 1);
    state.next_file_number = state.next_file_number.max(above_logs);
    copy_part(fs, dir, tmp, state, above_logs, &mut report)?;
    report.sequence = sequence;
    Ok(report)
}

/// Links (or copies) the tables of `state` from `from` to `to`, copies
/// `OPTIONS`, and writes a MANIFEST of `state` numbered at least `min_number`
/// and `CURRENT`.
fn copy_part(
    fs: &dyn FileSystem,
    from: &Path,
    to: &Path,
    mut state: RecoveredState,
    min_number: u64,
    report: &mut CheckpointReport,
) -> Result<()> {
    for meta in state.levels.iter().flatten() {
        let src = filename::table_file(from, meta.number);
        let dst = filename::table_file(to, meta.number);
        report.tables += 1;
        report.bytes += meta.file_size;
        match fs.hard_link(&src, &dst) {
            Ok(()) => report.linked += 1,
            Err(e) if link_refused(&e) => {
                let f = fs
                    .open_read(&src)
                    .map_err(|e| Error::io(format!("open {}", src.display()), e))?;
                copy_bytes(fs, &*f, meta.file_size, &dst)?;
                report.copied += 1;
                report.bytes_copied += meta.file_size;
            }
            Err(e) => {
                return Err(Error::io(
                    format!("link {} to {}", src.display(), dst.display()),
                    e,
                ));
            }
        }
    }
    if let Some(mut options) = options_file::read(fs, from)? {
        options.tables = fs.table_location(&super::report::home_of(to));
        options_file::write(fs, to, &options)?;
    }
    let number = state.next_file_number.max(min_number);
    state.next_file_number = number + 1;
    Manifest::create(fs, to, number, &state.snapshot_edit())?;
    Ok(())
}

/// Copies the write-ahead log `from` to `to` up to the end of its last whole
/// record, fsynced; returns the last sequence number its batches hold (0
/// for none).
fn copy_log(fs: &dyn FileSystem, from: &Path, to: &Path) -> Result<u64> {
    let mut reader = LogReader::open_in(fs, from, false)?;
    let mut last = 0;
    while let Some(rec) = reader.next_record()? {
        let batch = WriteBatch::decode_in(&rec, from, reader.last_record_offset())?;
        last = last.max(batch.last_sequence().unwrap_or(0));
    }
    let end = reader.valid_end();
    let f = fs
        .open_read(from)
        .map_err(|e| Error::io(format!("open {}", from.display()), e))?;
    copy_bytes(fs, &*f, end, to)?;
    Ok(last)
}

/// Copies the first `size` bytes of `from` to the new file `to`, fsynced.
fn copy_bytes(
    fs: &dyn FileSystem,
    from: &dyn crate::fs::ReadableFile,
    size: u64,
    to: &Path,
) -> Result<()> {
    const CHUNK: u64 = 1 << 20;
    let mut out = fs
        .create_new(to)
        .map_err(|e| Error::io(format!("create {}", to.display()), e))?;
    let mut buf = vec![0u8; CHUNK.min(size) as usize];
    let mut at = 0u64;
    while at < size {
        let n = (size - at).min(CHUNK) as usize;
        from.read_exact_at(&mut buf[..n], at)
            .map_err(|e| Error::io(format!("read {} bytes at {at}", n), e))?;
        out.write_all(&buf[..n])
            .map_err(|e| Error::io(format!("write {}", to.display()), e))?;
        at += n as u64;
    }
    out.sync_data()
        .map_err(|e| Error::io(format!("fsync {}", to.display()), e))
}
