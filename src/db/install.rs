//! Installing a change to the tree: the one path by which a flush, a
//! compaction, a filter rebuild and a bulk load put their tables in place.
//!
//! A change is one MANIFEST edit ([`Change`]). Installing it, under the
//! state lock: the edit is logged (synced, unless it only moves files), the
//! state that moves with the version is updated, the lookup counts of the
//! files leaving the tree go into their levels' totals, and readers are
//! shown the new version ([`Inner::install_super_version`]). A failed
//! MANIFEST write leaves the edit's fate on disk unknown: the store is
//! poisoned, for the reopen to judge. The files the change replaced are
//! deleted behind the caller once no reader holds them
//! ([`Inner::retire_replaced`]).

use super::*;

/// A change to the file set, logged as one MANIFEST edit.
pub(super) struct Change<'a> {
    /// The edit: the files added and removed, and what else it records.
    pub(super) edit: VersionEdit,
    /// The tables the change wrote, already synced with their directory:
    /// the version opens them as they are.
    pub(super) written: &'a [Arc<FileHandle>],
    /// The files that leave the tree, by the level they leave (a file moved
    /// to another level does not leave it: it keeps its own counts).
    pub(super) replaced: Vec<(usize, Arc<FileHandle>)>,
    /// Whether the edit is synced before the change is shown. Only a
    /// change that writes nothing, files moved between levels, goes
    /// unsynced: lost in a power failure, it leaves the files where they
    /// were ([`VersionSet::log_and_apply_unsynced`]).
    pub(super) synced: bool,
    /// The store's last sequence number, which the edit records.
    pub(super) seq: u64,
    /// What the change is, in the poisoned store's error.
    pub(super) during: &'a str,
}

impl Inner {
    /// Installs `change` under the state lock `st`: logs its edit, applies
    /// `along` (the state that moves with the version: the memtable flushed,
    /// the compaction pointer), keeps the lookup counts of the files it
    /// replaces in their levels' totals, and shows readers the new version.
    /// Returns the lock, still held, and the replaced files, for
    /// [`Inner::retire_replaced`]. On a failure the lock is released and the
    /// store poisoned.
    pub(super) fn install_change<'s>(
        &'s self,
        mut st: MutexGuard<'s, State>,
        change: Change<'_>,
        along: impl FnOnce(&mut State),
    ) -> Result<(MutexGuard<'s, State>, Vec<Arc<FileHandle>>)> {
        let Change {
            edit,
            written,
            replaced,
            synced,
            seq,
            during,
        } = change;
        let logged = if synced {
            st.vs.log_and_apply(edit, written, seq)
        } else {
            debug_assert!(written.is_empty(), "a change that writes tables is synced");
            st.vs.log_and_apply_unsynced(edit, seq)
        };
        if let Err(e) = logged {
            drop(st);
            self.poison(during, &e);
            return Err(e);
        }
        along(&mut st);
        // The files replaced leave the version: their lookup counts stay in
        // their levels' totals ([`Stats`] adds them to the live files').
        for (level, f) in &replaced {
            self.counters.retired_io[*level].add(&f.io.load());
        }
        let mem_now = self.super_version().mem.clone();
        self.install_super_version(&st, mem_now);
        Ok((st, replaced.into_iter().map(|(_, f)| f).collect()))
    }

    /// Logs `edit`, which adds and removes no table, to the MANIFEST under
    /// `st`, then releases `st`. A failed MANIFEST write leaves the edit's
    /// fate on disk unknown: the store is poisoned (`during` says by what)
    /// and the error returned, for the reopen to judge.
    pub(super) fn log_edit_or_poison(
        &self,
        mut st: MutexGuard<'_, State>,
        edit: VersionEdit,
        seq: u64,
        during: &str,
    ) -> Result<()> {
        let r = st.vs.log_and_apply(edit, &[], seq);
        drop(st);
        r.inspect_err(|e| self.poison(during, e))
    }

    /// Deletes `replaced`, the files a change took out of the tree, and
    /// drops `picked_from`, the version the change was made from, behind
    /// the caller ([`TableFiles::retire`]): readers holding an older version
    /// keep their open descriptors until they let go.
    pub(super) fn retire_replaced(
        &self,
        replaced: Vec<Arc<FileHandle>>,
        picked_from: Arc<Version>,
    ) {
        self.table_files.retire(replaced, picked_from);
    }

    /// Shows readers the state `st` with the active memtable `mem`: a new
    /// super-version, after a memtable is frozen or a change installed.
    pub(super) fn install_super_version(&self, st: &State, mem: Arc<MemTable>) {
        let sv = SuperVersion {
            mem,
            imm: st.imm.iter().rev().map(|f| f.mem.clone()).collect(),
            version: st.vs.current().clone(),
        };
        self.sv.install(sv);
    }
}
