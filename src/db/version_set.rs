//! The one way the set of files changes.
//!
//! [`VersionSet`] owns the current [`Version`], the open MANIFEST, the log
//! number, the tracked write-ahead logs, the file-number counter and the
//! compaction pointers. [`VersionSet::log_and_apply`] is the only way to
//! change them: it applies the edit to the current state with the same
//! [`Builder`] recovery replays the MANIFEST with, checks the result, appends
//! the edit to the MANIFEST and fsyncs it, and only then installs the new
//! version (LevelDB's `VersionSet::LogAndApply`). An edit the checks refuse is
//! never written; an edit whose append fails is never installed, and the
//! manifest accepts no edit after it.
//!
//! # File numbers are reserved before use
//!
//! Every table, log and manifest takes its number from one counter, and the
//! MANIFEST always records a next-file number above every number the store
//! has handed out: [`VersionSet::new_file_number`] first logs a reservation
//! (a bound [`RESERVE`] numbers ahead) when the counter reaches the recorded
//! bound. A crash therefore never leaves a file numbered at or past the
//! recovered next-file number, and recovery takes such a file as proof that
//! the MANIFEST lost edits (docs/design.md, "Recovery").

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use crate::db::manifest::{FileMeta, Manifest, NUM_LEVELS, RecoveredState, VersionEdit};
use crate::db::version::{FileHandle, Version};
use crate::error::{Error, Result};
use crate::key::{self, compare_internal};

/// File numbers reserved by one MANIFEST append: the counter may run this far
/// ahead of the last recorded bound before another reservation is logged.
pub(crate) const RESERVE: u64 = 16;

/// Accumulates version edits into a [`RecoveredState`]: recovery feeds it the
/// MANIFEST's edits; [`VersionSet::log_and_apply`] feeds it one edit on top of
/// the current state.
#[derive(Default)]
pub(crate) struct Builder {
    levels: [Vec<FileMeta>; NUM_LEVELS],
    log_number: Option<u64>,
    next_file_number: Option<u64>,
    last_sequence: Option<u64>,
    logs: BTreeSet<u64>,
}

impl Builder {
    /// A builder holding `state`.
    pub(crate) fn from_state(state: &RecoveredState) -> Self {
        let mut levels: [Vec<FileMeta>; NUM_LEVELS] = Default::default();
        for (l, files) in state.levels.iter().enumerate().take(NUM_LEVELS) {
            levels[l] = files.clone();
        }
        Builder {
            levels,
            log_number: Some(state.log_number),
            next_file_number: Some(state.next_file_number),
            last_sequence: Some(state.last_sequence),
            logs: state.logs.iter().copied().collect(),
        }
    }

    /// Applies `e`; an edit that deletes a file the state does not hold, or
    /// adds one it already holds, is refused.
    pub(crate) fn apply(&mut self, e: &VersionEdit) -> std::result::Result<(), String> {
        if let Some(n) = e.log_number {
            self.log_number = Some(n);
        }
        if let Some(n) = e.next_file_number {
            self.next_file_number = Some(n);
        }
        if let Some(s) = e.last_sequence {
            self.last_sequence = Some(s);
        }
        // Deletions first, so an edit may move a file between levels.
        for &(level, number) in &e.deleted_files {
            let files = &mut self.levels[level];
            match files.iter().position(|f| f.number == number) {
                Some(i) => {
                    files.remove(i);
                }
                None => return Err(format!("edit deletes file {number} absent from L{level}")),
            }
        }
        for (level, f) in &e.new_files {
            if self.levels.iter().flatten().any(|g| g.number == f.number) {
                return Err(format!("edit adds file {} twice", f.number));
            }
            self.levels[*level].push(f.clone());
        }
        self.logs.extend(e.new_logs.iter().copied());
        if let Some(n) = self.log_number {
            // Logs below the log number are in tables: no longer required.
            self.logs.retain(|&l| l >= n);
        }
        Ok(())
    }

    /// The state, ordered (L0 by file number, deeper levels by smallest key)
    /// and checked: every field set, deeper levels disjoint.
    pub(crate) fn finish(
        self,
        manifest_number: u64,
    ) -> std::result::Result<RecoveredState, String> {
        let log_number = self
            .log_number
            .ok_or("manifest never sets the log number")?;
        let next = self
            .next_file_number
            .ok_or("manifest never sets the next file number")?;
        let last_sequence = self
            .last_sequence
            .ok_or("manifest never sets the last sequence")?;
        let mut levels: Vec<Vec<FileMeta>> = self.levels.into_iter().collect();
        let max_used = levels
            .iter()
            .flatten()
            .map(|f| f.number)
            .chain(self.logs.iter().copied())
            .chain([manifest_number, log_number])
            .max()
            .unwrap_or(0);
        levels[0].sort_by_key(|f| f.number);
        for (l, files) in levels.iter_mut().enumerate().skip(1) {
            files.sort_by(|a, b| compare_internal(&a.smallest, &b.smallest));
            for w in files.windows(2) {
                if key::user_key(&w[0].largest) >= key::user_key(&w[1].smallest) {
                    return Err(format!(
                        "files {} and {} of L{l} overlap",
                        w[0].number, w[1].number
                    ));
                }
            }
        }
        Ok(RecoveredState {
            levels,
            log_number,
            next_file_number: next.max(max_used.saturating_add(1)),
            last_sequence,
            logs: self.logs.into_iter().collect(),
        })
    }
}

/// The current version and everything that decides the next one.
pub(crate) struct VersionSet {
    /// `None` for a read-only store: every edit is refused.
    manifest: Option<Manifest>,
    current: Arc<Version>,
    /// The state `current` was built from, as the MANIFEST describes it.
    state: RecoveredState,
    /// The next number to hand out; `state.next_file_number` is the bound
    /// the MANIFEST records (always above every number handed out).
    next_file: u64,
    /// Round-robin compaction pointers per level (user keys).
    pub(crate) pointers: Vec<Vec<u8>>,
    /// A failed MANIFEST append: the file's tail is unknown, so no edit may
    /// follow it.
    failed: Option<String>,
    /// [`crate::Options::filter_memory_budget`]: each new version chooses
    /// the filters held in memory under it.
    pub(crate) filter_budget: Option<u64>,
}

impl VersionSet {
    /// Wraps a freshly created `manifest` whose snapshot is `state`, and the
    /// open `version` it describes.
    pub(crate) fn new(manifest: Manifest, state: RecoveredState, version: Version) -> Self {
        let levels = version.levels.len();
        VersionSet {
            manifest: Some(manifest),
            current: Arc::new(version),
            next_file: state.next_file_number,
            state,
            pointers: vec![Vec::new(); levels],
            failed: None,
            filter_budget: None,
        }
    }

    /// A version set of a store opened read-only: it changes nothing.
    pub(crate) fn read_only(state: RecoveredState, version: Version) -> Self {
        let levels = version.levels.len();
        VersionSet {
            manifest: None,
            current: Arc::new(version),
            next_file: state.next_file_number,
            state,
            pointers: vec![Vec::new(); levels],
            failed: None,
            filter_budget: None,
        }
    }

    /// The live version.
    pub(crate) fn current(&self) -> &Arc<Version> {
        &self.current
    }

    /// Logs numbered below this are contained in tables.
    pub(crate) fn log_number(&self) -> u64 {
        self.state.log_number
    }

    /// A fresh file number, reserved in the MANIFEST before it is returned
    /// (see the module docs).
    pub(crate) fn new_file_number(&mut self, last_sequence: u64) -> Result<u64> {
        let n = self.next_file;
        if n >= self.state.next_file_number {
            let edit = VersionEdit {
                next_file_number: Some(n + RESERVE),
                ..VersionEdit::default()
            };
            self.log_and_apply(edit, &[], last_sequence)?;
        }
        self.next_file = n + 1;
        Ok(n)
    }

    /// Checks `edit` against the current state, appends it to the MANIFEST
    /// (fsynced), then installs the version it makes. `opened` holds the open
    /// tables of the edit's new files (files moved between levels keep their
    /// handles). The edit records the next-file bound and `last_sequence`.
    pub(crate) fn log_and_apply(
        &mut self,
        edit: VersionEdit,
        opened: &[Arc<FileHandle>],
        last_sequence: u64,
    ) -> Result<()> {
        self.apply_edit(edit, opened, last_sequence, true)
    }

    /// [`log_and_apply`](Self::log_and_apply) without the MANIFEST fsync, for
    /// an edit whose loss in a power failure leaves a correct store: a file
    /// moved to another level (the store would find it at its old level,
    /// with nothing deleted). The next synced edit makes it durable; until
    /// then the move costs no wait on the device.
    pub(crate) fn log_and_apply_unsynced(
        &mut self,
        edit: VersionEdit,
        last_sequence: u64,
    ) -> Result<()> {
        self.apply_edit(edit, &[], last_sequence, false)
    }

    fn apply_edit(
        &mut self,
        mut edit: VersionEdit,
        opened: &[Arc<FileHandle>],
        last_sequence: u64,
        sync: bool,
    ) -> Result<()> {
        if let Some(e) = &self.failed {
            return Err(Error::Poisoned(format!(
                "an earlier MANIFEST append failed: {e}"
            )));
        }
        let Some(manifest) = self.manifest.as_mut() else {
            return Err(Error::ReadOnly);
        };
        let bound = edit
            .next_file_number
            .unwrap_or(0)
            .max(self.state.next_file_number)
            .max(self.next_file);
        edit.next_file_number = Some(bound);
        edit.last_sequence = Some(last_sequence.max(self.state.last_sequence));
        let refused = |what: String| Error::invalid(format!("version edit refused: {what}"));

        let mut b = Builder::from_state(&self.state);
        b.apply(&edit).map_err(refused)?;
        let state = b.finish(manifest.number()).map_err(refused)?;
        let mut handles: HashMap<u64, &Arc<FileHandle>> = self
            .current
            .levels
            .iter()
            .flatten()
            .chain(opened)
            .map(|f| (f.number(), f))
            .collect();
        let mut v = Version::empty(self.current.levels.len());
        for (level, files) in state.levels.iter().enumerate() {
            if !files.is_empty() && level >= v.levels.len() {
                return Err(refused(format!(
                    "a file on L{level}, beyond the store's {} levels",
                    v.levels.len()
                )));
            }
            for meta in files {
                let Some(f) = handles.remove(&meta.number) else {
                    return Err(refused(format!("file {} has no open table", meta.number)));
                };
                v.levels[level].push(f.clone());
            }
        }
        // The builder has checked the levels; the handles are the same files.
        v.pin_filters(self.filter_budget);
        v.sort();

        let appended = if sync {
            manifest.append(&edit)
        } else {
            manifest.append_unsynced(&edit)
        };
        if let Err(e) = appended {
            self.failed = Some(e.to_string());
            return Err(e);
        }
        self.current = Arc::new(v);
        self.state = state;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::manifest::FilterMeta;
    use crate::filter::FilterPolicy;
    use crate::key::{ValueKind, make_internal_key};

    fn file(number: u64, lo: &str, hi: &str) -> FileMeta {
        FileMeta {
            number,
            file_size: 4096,
            smallest: make_internal_key(lo.as_bytes(), number * 10, ValueKind::Value),
            largest: make_internal_key(hi.as_bytes(), number * 10 + 1, ValueKind::Value),
            entries: 10,
            filter: Some(FilterMeta::from(&FilterPolicy::blocked512(10.0))),
        }
    }

    #[test]
    fn builder_tracks_logs_until_the_log_number_passes_them() {
        let mut b = Builder::from_state(&RecoveredState::empty());
        b.apply(&VersionEdit {
            log_number: Some(3),
            new_logs: vec![3],
            ..VersionEdit::default()
        })
        .unwrap();
        b.apply(&VersionEdit {
            new_logs: vec![5],
            ..VersionEdit::default()
        })
        .unwrap();
        let st = Builder::from_state(&b.finish(1).unwrap());
        assert_eq!(st.logs.iter().copied().collect::<Vec<_>>(), vec![3, 5]);
        let mut st = st;
        st.apply(&VersionEdit {
            log_number: Some(5),
            ..VersionEdit::default()
        })
        .unwrap();
        let done = st.finish(1).unwrap();
        assert_eq!(done.logs, vec![5]);
        assert_eq!(done.next_file_number, 6, "above every number seen");
    }

    #[test]
    fn refused_edits_are_never_written() {
        let dir = tempfile::tempdir().unwrap();
        let state = RecoveredState {
            log_number: 2,
            next_file_number: 3,
            ..RecoveredState::empty()
        };
        let m =
            Manifest::create(&crate::fs::RealFs, dir.path(), 1, &state.snapshot_edit()).unwrap();
        let mut vs = VersionSet::new(m, state, Version::empty(NUM_LEVELS));
        let size = vs.manifest.as_ref().unwrap().size();
        for bad in [
            VersionEdit {
                deleted_files: vec![(2, 9)],
                ..VersionEdit::default()
            },
            // A file without an open table.
            VersionEdit {
                new_files: vec![(1, file(7, "a", "b"))],
                ..VersionEdit::default()
            },
        ] {
            let e = vs.log_and_apply(bad, &[], 0).unwrap_err();
            assert!(e.to_string().contains("refused"), "{e}");
            assert_eq!(
                vs.manifest.as_ref().unwrap().size(),
                size,
                "nothing appended"
            );
        }
        // Numbers are reserved in the manifest before they are handed out.
        let n = vs.new_file_number(5).unwrap();
        assert_eq!(n, 3);
        assert!(vs.manifest.as_ref().unwrap().size() > size);
        drop(vs);
        let (st, _) = Manifest::recover(&crate::fs::RealFs, dir.path()).unwrap();
        assert_eq!(st.next_file_number, 3 + RESERVE);
        assert_eq!(st.last_sequence, 5);
    }

    #[test]
    fn builder_refuses_overlap_missing_and_duplicate_files() {
        let mut b = Builder::from_state(&RecoveredState::empty());
        b.apply(&VersionEdit {
            new_files: vec![(1, file(4, "a", "m")), (1, file(5, "m", "z"))],
            ..VersionEdit::default()
        })
        .unwrap();
        let err = b.finish(1).unwrap_err();
        assert!(err.contains("overlap"), "{err}");

        let mut b = Builder::from_state(&RecoveredState::empty());
        let e = b
            .apply(&VersionEdit {
                deleted_files: vec![(2, 9)],
                ..VersionEdit::default()
            })
            .unwrap_err();
        assert!(e.contains("absent"), "{e}");

        let mut b = Builder::from_state(&RecoveredState::empty());
        let twice = VersionEdit {
            new_files: vec![(0, file(4, "a", "b"))],
            ..VersionEdit::default()
        };
        b.apply(&twice).unwrap();
        assert!(b.apply(&twice).unwrap_err().contains("twice"));
        // A move between levels: deleted, then added.
        b.apply(&VersionEdit {
            deleted_files: vec![(0, 4)],
            new_files: vec![(1, file(4, "a", "b"))],
            ..VersionEdit::default()
        })
        .unwrap();
        let st = b.finish(1).unwrap();
        assert!(st.levels[0].is_empty());
        assert_eq!(st.levels[1][0].number, 4);
    }
}
