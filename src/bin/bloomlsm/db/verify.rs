//! `db verify`: every block of every file of the store checked, and the
//! store's write-ahead logs as an open finds them: a store that lost writes
//! is not OK.

use std::io::Write;
use std::path::{Path, PathBuf};

use bloomlsm::{Db, Options, WalRecovery};
use serde_json::json;

use super::store::{check_store, read_only_db, wal_damage};
use crate::open_files::OpenFilesArg;
use crate::report::{bytes, count};
use crate::{CliError, CliResult, write_json};

pub(super) fn verify(
    dir: &Path,
    json: bool,
    files: &OpenFilesArg,
    out: &mut dyn Write,
) -> CliResult {
    check_store(dir)?;
    // A corrupt store is a failed check (exit status 1), whether the damage
    // stops the open or turns up in a block; other errors stay failures.
    let as_check = |e: bloomlsm::Error| {
        let corrupt = e.is_corruption();
        let e = CliError::from(e);
        if corrupt {
            e.with_code(crate::EXIT_NEGATIVE)
        } else {
            e
        }
    };
    // Opened as the other commands open it (a log's torn or damaged end
    // dropped), so that the check can say what the open lost.
    let checked = read_only_db(dir, files).and_then(|db| {
        db.verify()?;
        let files = db.file_stats();
        let stats = db.stats();
        db.close()?;
        Ok((files, stats))
    });
    let report =
        |files: Option<(usize, u64, u64)>, wal: Option<(u64, u64)>, error: Option<&str>| {
            json!({
                "store": dir.display().to_string(),
                "ok": error.is_none(),
                "files": files.map(|f| f.0),
                "entries": files.map(|f| f.1),
                "bytes": files.map(|f| f.2),
                "wal_tail_bytes_dropped": wal.map(|w| w.0),
                "wal_records_salvaged": wal.map(|w| w.1),
                "error": error,
            })
        };
    let (files, stats) = match checked.map_err(as_check) {
        Ok(checked) => checked,
        Err(e) => {
            if json && e.code == crate::EXIT_NEGATIVE {
                write_json(out, &report(None, None, Some(&e.message)))?;
            }
            return Err(e);
        }
    };
    let totals = (
        files.len(),
        files.iter().map(|f| f.entries).sum(),
        files.iter().map(|f| f.file_bytes).sum(),
    );
    let wal = (stats.wal_tail_bytes_dropped, stats.wal_records_salvaged);
    // Every block is sound, but the store is not all that was written to it:
    // not OK.
    let cut = (wal.0 > 0).then(|| first_cut(dir)).flatten();
    if let Some(what) = wal_damage(dir, &stats, false, cut) {
        let e = CliError::negative(what);
        if json {
            write_json(out, &report(Some(totals), Some(wal), Some(&e.message)))?;
        }
        return Err(e);
    }
    if json {
        return write_json(out, &report(Some(totals), Some(wal), None));
    }
    writeln!(
        out,
        "OK  {}: {} files, {} entries, {}",
        dir.display(),
        count(totals.0 as u64),
        count(totals.1),
        bytes(totals.2)
    )?;
    Ok(())
}

/// The log and offset where the first end an open of `dir` drops starts,
/// as an open that refuses to drop it ([`WalRecovery::AbsoluteConsistency`])
/// names them; `None` if that open names no log (the store changed since).
fn first_cut(dir: &Path) -> Option<(PathBuf, u64)> {
    if super::bucket_url::bucket_of(dir).is_some() {
        return None;
    }
    let strict = Options::default().wal_recovery(WalRecovery::AbsoluteConsistency);
    match Db::open_read_only(dir, strict) {
        Err(bloomlsm::Error::Corruption { file, offset, .. })
            if file.extension().is_some_and(|x| x == "log") =>
        {
            Some((file, offset))
        }
        _ => None,
    }
}
