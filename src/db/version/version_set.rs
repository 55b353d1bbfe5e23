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

use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;

use crate::db::manifest::{FileMeta, Manifest, NUM_LEVELS, RecoveredState, VersionEdit};
use crate::db::version::{FileHandle, Version};
use crate::error::{Error, Result};
use crate::fs::FileSystem;
use crate::key::{self, compare_internal};

/// File numbers reserved by one MANIFEST append: the counter may run this far
/// ahead of the last recorded bound before another reservation is logged.
pub(crate) const RESERVE: u64 = 16;

/// The largest next-file number a MANIFEST may record. A store hands out
/// numbers one at a time and never comes near it; a larger one (a crafted
/// edit, or a `CURRENT` naming `MANIFEST-18446744073709551615`) is refused as
/// corruption, so the counter's `+ 1` and `+ RESERVE` can never wrap back
/// onto the numbers of live files. Recovery refuses a recovered counter past
/// half of it ([`Builder::finish`]), so that an open never runs into it.
pub(crate) const MAX_FILE_NUMBER: u64 = 1 << 62;

/// Accumulates version edits into a [`RecoveredState`]: recovery feeds it the
/// MANIFEST's edits; [`VersionSet`] keeps one as its state and feeds a copy
/// of it each edit. A copy is cheap: each level's files are shared until an
/// edit changes the level (only the flat set of live numbers is copied
/// whole), and only the levels an edit changed are sorted and checked again
/// ([`Builder::settle`]), so an edit costs about what it touches, not what
/// the store holds.
#[derive(Default, Clone)]
pub(crate) struct Builder {
    levels: [Arc<Vec<FileMeta>>; NUM_LEVELS],
    /// The number of every file in `levels`.
    live: HashSet<u64>,
    /// Levels changed since the last [`Builder::settle`].
    touched: [bool; NUM_LEVELS],
    log_number: Option<u64>,
    next_file_number: Option<u64>,
    last_sequence: Option<u64>,
    logs: BTreeSet<u64>,
    keyspaces: std::collections::BTreeMap<u32, String>,
    next_keyspace: u32,
    flushed_sequence: u64,
}

impl Builder {
    /// A builder holding `state` (every level to be checked when settled).
    pub(crate) fn from_state(state: &RecoveredState) -> Self {
        let mut b = Builder::default();
        for (l, files) in state.levels.iter().enumerate().take(NUM_LEVELS) {
            b.levels[l] = Arc::new(files.clone());
            b.live.extend(files.iter().map(|f| f.number));
        }
        b.touched = [true; NUM_LEVELS];
        b.log_number = Some(state.log_number);
        b.next_file_number = Some(state.next_file_number);
        b.last_sequence = Some(state.last_sequence);
        b.logs = state.logs.iter().copied().collect();
        b.keyspaces = state.keyspaces.clone();
        b.next_keyspace = state.next_keyspace;
        b.flushed_sequence = state.flushed_sequence;
        b
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
        if let Some(s) = e.flushed_sequence {
            self.flushed_sequence = s;
        }
        if let Some(n) = e.next_keyspace {
            self.next_keyspace = self.next_keyspace.max(n);
        }
        for &id in &e.dropped_keyspaces {
            if self.keyspaces.remove(&id).is_none() {
                return Err(format!("edit drops keyspace {id}, which does not exist"));
            }
        }
        for (id, name) in &e.new_keyspaces {
            if self.keyspaces.values().any(|n| n == name) {
                return Err(format!("edit creates keyspace {name:?} twice"));
            }
            if self.keyspaces.insert(*id, name.clone()).is_some() {
                return Err(format!("edit creates keyspace {id} twice"));
            }
            // Ids are never reused: a dropped keyspace's logged writes must
            // never replay into a new one.
            self.next_keyspace = self.next_keyspace.max(id.saturating_add(1));
        }
        // Deletions first, so an edit may move a file between levels.
        for &(level, number) in &e.deleted_files {
            let at = self.levels[level].iter().position(|f| f.number == number);
            match at {
                Some(i) => {
                    Arc::make_mut(&mut self.levels[level]).remove(i);
                    self.live.remove(&number);
                    self.touched[level] = true;
                }
                None => return Err(format!("edit deletes file {number} absent from L{level}")),
            }
        }
        for (level, f) in &e.new_files {
            if !self.live.insert(f.number) {
                return Err(format!("edit adds file {} twice", f.number));
            }
            Arc::make_mut(&mut self.levels[*level]).push(f.clone());
            self.touched[*level] = true;
        }
        self.logs.extend(e.new_logs.iter().copied());
        if let Some(n) = self.log_number {
            // Logs below the log number are in tables: no longer required.
            self.logs.retain(|&l| l >= n);
        }
        Ok(())
    }

    /// Orders the levels changed since the last call (L0 by file number,
    /// deeper levels by smallest key) and checks them: every field set,
    /// deeper levels disjoint. The next-file number is raised above every
    /// number they, the logs and `manifest_number` use. Returns the levels
    /// it ordered (the untouched ones were, and still are, in order).
    pub(crate) fn settle(
        &mut self,
        manifest_number: u64,
    ) -> std::result::Result<[bool; NUM_LEVELS], String> {
        let log_number = self
            .log_number
            .ok_or("manifest never sets the log number")?;
        let next = self
            .next_file_number
            .ok_or("manifest never sets the next file number")?;
        self.last_sequence
            .ok_or("manifest never sets the last sequence")?;
        let touched = std::mem::replace(&mut self.touched, [false; NUM_LEVELS]);
        let mut max_used = self
            .logs
            .iter()
            .copied()
            .chain([manifest_number, log_number])
            .max()
            .unwrap_or(0);
        for (l, level) in self.levels.iter_mut().enumerate() {
            if !touched[l] {
                continue;
            }
            let files = Arc::make_mut(level);
            max_used = files.iter().map(|f| f.number).fold(max_used, u64::max);
            if l == 0 {
                files.sort_by_key(|f| f.number);
                continue;
            }
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
        let next = next.max(max_used.saturating_add(1));
        if next > MAX_FILE_NUMBER {
            return Err(format!(
                "file number {} is past {MAX_FILE_NUMBER}, the largest a store uses",
                next - 1
            ));
        }
        self.next_file_number = Some(next);
        Ok(touched)
    }

    /// The state, ordered and checked ([`Builder::settle`]).
    pub(crate) fn finish(
        mut self,
        manifest_number: u64,
    ) -> std::result::Result<RecoveredState, String> {
        self.settle(manifest_number)?;
        // Recovery writes a manifest and switches `CURRENT` before the store
        // reserves more numbers; a recovered counter this close to the limit
        // would be refused only after that switch. Half the range is left
        // for numbers handed out after the open.
        let next = self.next_file_number();
        if next > MAX_FILE_NUMBER / 2 {
            return Err(format!(
                "next file number {next} is past {}, the largest a store recovers",
                MAX_FILE_NUMBER / 2
            ));
        }
        let (log_number, next_file_number, last_sequence) = (
            self.log_number(),
            self.next_file_number(),
            self.last_sequence(),
        );
        Ok(RecoveredState {
            levels: self
                .levels
                .into_iter()
                .map(|l| Arc::try_unwrap(l).unwrap_or_else(|shared| (*shared).clone()))
                .collect(),
            log_number,
            next_file_number,
            last_sequence,
            logs: self.logs.into_iter().collect(),
            next_keyspace: self.next_keyspace.max(1),
            keyspaces: self.keyspaces,
            flushed_sequence: self.flushed_sequence,
        })
    }

    /// Each level's files, as last settled.
    fn level(&self, level: usize) -> &[FileMeta] {
        &self.levels[level]
    }

    /// Logs numbered below this are contained in tables.
    fn log_number(&self) -> u64 {
        self.log_number.unwrap_or(0)
    }

    /// The next-file number the state records.
    fn next_file_number(&self) -> u64 {
        self.next_file_number.unwrap_or(1)
    }

    /// The last sequence number the state records.
    fn last_sequence(&self) -> u64 {
        self.last_sequence.unwrap_or(0)
    }
}

/// The current version and everything that decides the next one.
pub(crate) struct VersionSet {
    /// `None` for a read-only store: every edit is refused.
    manifest: Option<Manifest>,
    current: Arc<Version>,
    /// The state `current` was built from, as the MANIFEST describes it
    /// (settled).
    state: Builder,
    /// The next number to hand out; `state.next_file_number` is the bound
    /// the MANIFEST records (always above every number handed out).
    next_file: u64,
    /// Round-robin compaction pointers per level (user keys).
    pub(crate) pointers: Vec<Vec<u8>>,
    /// A failed MANIFEST append: the file's tail is unknown, so no edit may
    /// follow it.
    failed: Option<Error>,
    /// [`crate::Options::metadata_memory_budget`]: each new version chooses
    /// the filters and index partitions held in memory under it.
    pub(crate) metadata_budget: Option<u64>,
    /// Where and when the MANIFEST rolls over ([`VersionSet::roll_over_every`]).
    rollover: Option<Rollover>,
    /// Edits appended to the open MANIFEST since it was created.
    edits: u64,
}

/// A writer's MANIFEST rollover: after `limit` edits the next edit first
/// starts a new MANIFEST in `dir` on `fs`.
struct Rollover {
    fs: Arc<dyn FileSystem>,
    dir: PathBuf,
    limit: u64,
    /// A rollover is under way (its number reservation is an edit too).
    running: bool,
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
            state: settled(&state),
            pointers: vec![Vec::new(); levels],
            failed: None,
            metadata_budget: None,
            rollover: None,
            edits: 0,
        }
    }

    /// A version set of a store opened read-only: it changes nothing.
    pub(crate) fn read_only(state: RecoveredState, version: Version) -> Self {
        let levels = version.levels.len();
        VersionSet {
            manifest: None,
            current: Arc::new(version),
            next_file: state.next_file_number,
            state: settled(&state),
            pointers: vec![Vec::new(); levels],
            failed: None,
            metadata_budget: None,
            rollover: None,
            edits: 0,
        }
    }

    /// Starts a new MANIFEST in `dir` on `fs` once the open one holds
    /// `limit` edits ([`crate::Options::max_manifest_edits`]), so that an
    /// open never replays more than that many.
    pub(crate) fn roll_over_every(&mut self, fs: Arc<dyn FileSystem>, dir: PathBuf, limit: u64) {
        self.rollover = Some(Rollover {
            fs,
            dir,
            limit: limit.max(1),
            running: false,
        });
    }

    /// Writes the state as one snapshot edit into a new MANIFEST, points
    /// `CURRENT` at it and deletes the old one. The state is the same in
    /// both, so a crash anywhere in between recovers it whichever `CURRENT`
    /// names (a new MANIFEST `CURRENT` never named is deleted at the next
    /// open). A failure leaves which one is live unknown: no edit follows.
    fn roll_over(&mut self, last_sequence: u64) -> Result<()> {
        let number = self.new_file_number(last_sequence)?;
        let mut state = self.state.clone();
        let bound = VersionEdit {
            next_file_number: Some(self.state.next_file_number().max(self.next_file)),
            last_sequence: Some(last_sequence.max(self.state.last_sequence())),
            ..VersionEdit::default()
        };
        let snapshot = state
            .apply(&bound)
            .and_then(|()| state.finish(number))
            .map_err(|what| Error::invalid(format!("MANIFEST rollover refused: {what}")))?;
        let Some(r) = self.rollover.as_ref() else {
            return Ok(());
        };
        let created = Manifest::create(r.fs.as_ref(), &r.dir, number, &snapshot.snapshot_edit());
        let manifest = match created {
            Ok(m) => m,
            Err(e) => {
                self.failed = Some(e.duplicate());
                return Err(e);
            }
        };
        if let Some(old) = self.manifest.replace(manifest) {
            // A leftover is deleted at the next open.
            let _ = r.fs.remove_file(old.path());
        }
        self.state = settled(&snapshot);
        self.next_file = self.next_file.max(number + 1);
        self.edits = 0;
        Ok(())
    }

    /// Whether the store was opened read-only (every edit is refused).
    pub(crate) fn is_read_only(&self) -> bool {
        self.manifest.is_none()
    }

    /// The live version.
    pub(crate) fn current(&self) -> &Arc<Version> {
        &self.current
    }

    /// Logs numbered below this are contained in tables.
    pub(crate) fn log_number(&self) -> u64 {
        self.state.log_number()
    }

    /// The logs the MANIFEST tracks, ascending: those at or above the log
    /// number, each of which exists.
    pub(crate) fn logs(&self) -> impl Iterator<Item = u64> + '_ {
        self.state.logs.iter().copied()
    }

    /// The store's keyspaces besides the default one, by id.
    pub(crate) fn keyspaces(&self) -> &std::collections::BTreeMap<u32, String> {
        &self.state.keyspaces
    }

    /// Every write of this MANIFEST's keyspace at or below this sequence is
    /// in its tables ([`VersionEdit::flushed_sequence`]).
    pub(crate) fn flushed_sequence(&self) -> u64 {
        self.state.flushed_sequence
    }

    /// The id the next keyspace created gets.
    pub(crate) fn next_keyspace(&self) -> u32 {
        self.state.next_keyspace.max(1)
    }

    /// A fresh file number, reserved in the MANIFEST before it is returned
    /// (see the module docs).
    pub(crate) fn new_file_number(&mut self, last_sequence: u64) -> Result<u64> {
        let n = self.next_file;
        if n >= self.state.next_file_number() {
            let edit = VersionEdit {
                next_file_number: Some(n + RESERVE),
                ..VersionEdit::default()
            };
            self.log_and_apply(edit, &[], last_sequence)?;
        }
        self.next_file = n + 1;
        Ok(n)
    }

    /// Makes the MANIFEST's unsynced edits (trivial moves) durable; `close`
    /// calls it, so a closed store comes back in the shape it had.
    pub(crate) fn sync_manifest(&mut self) -> Result<()> {
        if let Some(e) = &self.failed {
            return Err(Error::poisoned("an earlier MANIFEST append", e.duplicate()));
        }
        match self.manifest.as_mut() {
            Some(m) => m.sync().inspect_err(|e| self.failed = Some(e.duplicate())),
            None => Ok(()),
        }
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
            return Err(Error::poisoned("an earlier MANIFEST append", e.duplicate()));
        }
        if self.manifest.is_none() {
            return Err(Error::ReadOnly);
        }
        if let Some(r) = self.rollover.as_mut()
            && !r.running
            && self.edits >= r.limit
        {
            r.running = true;
            let rolled = self.roll_over(last_sequence);
            if let Some(r) = self.rollover.as_mut() {
                r.running = false;
            }
            rolled?;
        }
        let Some(manifest) = self.manifest.as_mut() else {
            return Err(Error::ReadOnly);
        };
        let bound = edit
            .next_file_number
            .unwrap_or(0)
            .max(self.state.next_file_number())
            .max(self.next_file);
        edit.next_file_number = Some(bound);
        edit.last_sequence = Some(last_sequence.max(self.state.last_sequence()));
        let refused = |what: String| Error::invalid(format!("version edit refused: {what}"));

        let mut state = self.state.clone();
        state.apply(&edit).map_err(refused)?;
        let changed = state.settle(manifest.number()).map_err(refused)?;
        let mut v = (*self.current).clone();
        // The handles of the files the edit adds: tables just written, or
        // files moved from another level of the current version.
        let mut added: HashMap<u64, Arc<FileHandle>> =
            opened.iter().map(|f| (f.number(), f.clone())).collect();
        for (_, meta) in &edit.new_files {
            if added.contains_key(&meta.number) {
                continue;
            }
            let moved = edit
                .deleted_files
                .iter()
                .filter(|&&(_, n)| n == meta.number)
                .find_map(|&(level, n)| self.current.find(level, n));
            if let Some(f) = moved {
                added.insert(meta.number, f.clone());
            }
        }
        for (level, &touched) in changed.iter().enumerate() {
            if !touched {
                continue;
            }
            let files = state.level(level);
            if level >= v.levels.len() {
                if files.is_empty() {
                    continue;
                }
                return Err(refused(format!(
                    "a file on L{level}, beyond the store's {} levels",
                    v.levels.len()
                )));
            }
            v.replace_level(level, files.iter().map(|m| m.number), &added)
                .map_err(|n| refused(format!("file {n} has no open table")))?;
        }
        // A metadata budget weighs every file against every other: each
        // version chooses afresh, and every level's index follows.
        if self.metadata_budget.is_some() {
            v.pin_metadata(self.metadata_budget);
            v.sort();
        }

        let appended = if sync {
            manifest.append(&edit)
        } else {
            manifest.append_unsynced(&edit)
        };
        if let Err(e) = appended {
            self.failed = Some(e.duplicate());
            return Err(e);
        }
        self.edits += 1;
        self.current = Arc::new(v);
        self.state = state;
        Ok(())
    }
}

/// `state` as a settled [`Builder`] (it is ordered and checked already when
/// it comes from recovery; settling again costs one pass at open).
fn settled(state: &RecoveredState) -> Builder {
    let mut b = Builder::from_state(state);
    // A state recovery produced is settled; one that is not fails its first
    // edit instead, which is refused with the reason.
    let _ = b.settle(0);
    b
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
            // Any sequence will do: numbers up to u64::MAX are tested.
            smallest: make_internal_key(lo.as_bytes(), number % 1000 * 10, ValueKind::Value),
            largest: make_internal_key(hi.as_bytes(), number % 1000 * 10 + 1, ValueKind::Value),
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
    fn file_numbers_near_the_top_of_u64_are_corruption() {
        let base = VersionEdit {
            log_number: Some(3),
            next_file_number: Some(4),
            last_sequence: Some(0),
            ..VersionEdit::default()
        };
        let settle = |edit: VersionEdit, manifest: u64| {
            let mut b = Builder::from_state(&RecoveredState::empty());
            b.apply(&base).unwrap();
            b.apply(&edit).unwrap();
            b.finish(manifest).map(|st| st.next_file_number)
        };
        assert_eq!(settle(VersionEdit::default(), 1), Ok(4));
        let half = MAX_FILE_NUMBER / 2;
        assert_eq!(settle(VersionEdit::default(), half - 1), Ok(half));
        // Under the limit, but with too little room left after an open.
        for manifest in [half, MAX_FILE_NUMBER - 1] {
            let e = settle(VersionEdit::default(), manifest).unwrap_err();
            assert!(e.contains("the largest a store recovers"), "{e}");
        }
        for (edit, manifest) in [
            (
                VersionEdit {
                    next_file_number: Some(u64::MAX),
                    ..VersionEdit::default()
                },
                1,
            ),
            (
                VersionEdit {
                    new_files: vec![(1, file(u64::MAX, "a", "b"))],
                    ..VersionEdit::default()
                },
                1,
            ),
            (
                VersionEdit {
                    new_logs: vec![u64::MAX - RESERVE],
                    ..VersionEdit::default()
                },
                1,
            ),
            (VersionEdit::default(), u64::MAX),
            (VersionEdit::default(), MAX_FILE_NUMBER),
        ] {
            let e = settle(edit.clone(), manifest).unwrap_err();
            assert!(e.contains("the largest a store uses"), "{edit:?}: {e}");
        }
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
    fn an_edit_rebuilds_only_the_levels_it_changes() {
        use crate::db::compaction::test_table;
        use crate::db::version::Slot;
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let state = RecoveredState {
            log_number: 2,
            next_file_number: 100,
            ..RecoveredState::empty()
        };
        let m = Manifest::create(&crate::fs::RealFs, d, 1, &state.snapshot_edit()).unwrap();
        let mut vs = VersionSet::new(m, state, Version::empty(NUM_LEVELS));
        let (a, b, c) = (
            test_table(d, 10, "a", "c"),
            test_table(d, 11, "d", "f"),
            test_table(d, 12, "g", "k"),
        );
        let files = [(1, &a), (2, &b), (2, &c)];
        let edit = VersionEdit {
            new_files: files.iter().map(|(l, f)| (*l, f.meta.clone())).collect(),
            ..VersionEdit::default()
        };
        vs.log_and_apply(edit, &[a.clone(), b, c], 0).unwrap();
        let before = vs.current().clone();
        // A move from L1 to L3: L2 keeps its index; L1 and L3 get new ones.
        let edit = VersionEdit {
            deleted_files: vec![(1, 10)],
            new_files: vec![(3, a.meta.clone())],
            ..VersionEdit::default()
        };
        vs.log_and_apply_unsynced(edit, 0).unwrap();
        let after = vs.current().clone();
        assert!(after.shares_index(&before, 2));
        assert!(!after.shares_index(&before, 1) && !after.shares_index(&before, 3));
        assert_eq!(after.slot(1, b"b"), Slot::None);
        assert_eq!(after.slot(3, b"b"), Slot::In(0));
        assert_eq!(after.slot(2, b"h"), Slot::In(1));
        assert_eq!(after.slot(2, b"cc"), Slot::Below(0));
        // A refused edit (it overlaps L2) changes nothing.
        let e = test_table(d, 13, "e", "h");
        let edit = VersionEdit {
            new_files: vec![(2, e.meta.clone())],
            ..VersionEdit::default()
        };
        let err = vs.log_and_apply(edit, &[e], 0).unwrap_err();
        assert!(err.to_string().contains("overlap"), "{err}");
        assert!(Arc::ptr_eq(vs.current(), &after));
        // The MANIFEST replays to the same levels.
        let numbers = |v: &Version| -> Vec<Vec<u64>> {
            v.levels
                .iter()
                .map(|l| l.iter().map(|f| f.number()).collect())
                .collect()
        };
        let want = numbers(&after);
        assert_eq!(want[1..4], [vec![], vec![11, 12], vec![10]]);
        drop(vs);
        let (st, _) = Manifest::recover(&crate::fs::RealFs, d).unwrap();
        let got: Vec<Vec<u64>> = st
            .levels
            .iter()
            .map(|l| l.iter().map(|f| f.number).collect())
            .collect();
        assert_eq!(got, want);
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

#[cfg(test)]
mod rollover_tests {
    use crate::db::version::filename::{FileKind, list_store_files_in};
    use crate::fs::RealFs;
    use crate::{Db, Options};

    fn manifests(dir: &std::path::Path) -> Vec<u64> {
        list_store_files_in(&RealFs, dir)
            .unwrap()
            .into_iter()
            .filter(|(k, _, _)| *k == FileKind::Manifest)
            .map(|(_, n, _)| n)
            .collect()
    }

    #[test]
    fn a_manifest_rolls_over_after_its_edits_and_the_store_reopens_whole() {
        let dir = tempfile::tempdir().unwrap();
        let opts = || Options {
            max_manifest_edits: 3,
            background_compaction: false,
            ..Options::default()
        };
        let db = Db::open(dir.path(), opts()).unwrap();
        let first = manifests(dir.path());
        assert_eq!(first.len(), 1);
        for i in 0..20u32 {
            db.put(format!("key{i:02}"), format!("v{i}")).unwrap();
            db.flush().unwrap();
        }
        // One MANIFEST, newer than the open's, named by CURRENT, holding no
        // more than the snapshot and the limit's edits.
        let now = manifests(dir.path());
        assert_eq!(now.len(), 1, "{now:?}");
        assert!(now[0] > first[0], "{first:?} -> {now:?}");
        let current = crate::db::manifest::read_current(&RealFs, dir.path()).unwrap();
        assert_eq!(current, now[0]);
        let (_, report) = crate::db::manifest::Manifest::recover(&RealFs, dir.path()).unwrap();
        assert!(report.edits <= 4, "{report:?}");
        drop(db);
        let db = Db::open(dir.path(), opts()).unwrap();
        for i in 0..20u32 {
            let got = db.get(format!("key{i:02}")).unwrap();
            assert_eq!(got.as_deref(), Some(format!("v{i}").as_bytes()));
        }
        assert_eq!(db.stats().levels.iter().map(|l| l.entries).sum::<u64>(), 20);
    }
}
