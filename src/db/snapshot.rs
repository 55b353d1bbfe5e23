//! Snapshots: [`Snapshot`], a read-only view of the store at one sequence
//! number, and the list of live ones (`SnapshotList`) for which flushes and
//! compactions keep old versions.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;

use super::Inner;
use super::iter::{DbIter, ScanRange};
use crate::error::{Error, Result};

/// The sequence numbers of the live snapshots, with how many handles hold
/// each.
#[derive(Debug, Default)]
pub(crate) struct SnapshotList {
    live: Mutex<BTreeMap<u64, usize>>,
}

impl SnapshotList {
    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<u64, usize>> {
        self.live.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Registers a snapshot at the last published sequence number, read under
    /// the list's lock: a flush or compaction that reads the list before this
    /// only holds versions at or below that number, so it keeps what the new
    /// snapshot sees (the newest of each key).
    pub(crate) fn acquire(&self, last_seq: &AtomicU64) -> u64 {
        let mut live = self.lock();
        let seq = last_seq.load(Ordering::Acquire);
        *live.entry(seq).or_default() += 1;
        seq
    }

    /// Registers one more handle at `seq` (a clone).
    fn add(&self, seq: u64) {
        *self.lock().entry(seq).or_default() += 1;
    }

    /// Releases one handle at `seq`.
    fn release(&self, seq: u64) {
        let mut live = self.lock();
        if let Some(n) = live.get_mut(&seq) {
            *n -= 1;
            if *n == 0 {
                live.remove(&seq);
            }
        }
    }

    /// The live snapshots' sequence numbers, ascending, without repeats.
    pub(crate) fn sequences(&self) -> Vec<u64> {
        self.lock().keys().copied().collect()
    }
}

/// A consistent, read-only view of the store as it was when
/// [`Db::snapshot`](crate::Db::snapshot) was called: its reads and scans see
/// exactly the writes made before it (a batch whole or not at all), in
/// every keyspace (its own methods read the default keyspace;
/// [`Keyspace::get_at`](crate::Keyspace::get_at) and its siblings read a
/// named one at it), whatever
/// is written, flushed or compacted afterwards. Flushes and compactions keep,
/// for each key, the version a live snapshot sees; dropping the handle
/// releases those versions, to be removed by later compactions.
///
/// A `Snapshot` owns what it needs (it is `'static`, `Send` and `Sync`: keep
/// it in a struct, move it to another thread, clone it). It does **not**
/// survive its store: once the [`Db`](crate::Db) is closed or dropped, every
/// read through the snapshot returns [`Error::Closed`], and the snapshot does
/// not hold the directory lock, so the store can be reopened meanwhile.
/// Snapshots are not persistent: a reopened store has none.
///
/// ```
/// # let dir = tempfile::tempdir()?;
/// # let db = bloomlsm::Db::open(dir.path(), bloomlsm::Options::default())?;
/// db.put("apple", "red")?;
/// let snap = db.snapshot();
/// db.put("apple", "green")?;
/// db.delete("apple")?;
/// db.compact()?; // keeps "red" for the snapshot
/// assert_eq!(snap.get("apple")?.as_deref(), Some(&b"red"[..]));
/// assert_eq!(db.get("apple")?, None);
/// drop(snap); // a later compaction may now drop "red"
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Snapshot {
    inner: Arc<Inner>,
    seq: u64,
}

impl Snapshot {
    /// Registers a snapshot of `inner` at its last sequence number.
    pub(super) fn new(inner: Arc<Inner>) -> Snapshot {
        let seq = inner.snapshots.acquire(&inner.last_seq);
        Snapshot { inner, seq }
    }

    /// Whether this is a snapshot of the store whose engine is `store`.
    pub(super) fn is_of(&self, store: &Arc<Inner>) -> bool {
        Arc::ptr_eq(&self.inner, store)
    }

    fn check_open(&self) -> Result<()> {
        if self.inner.closed.load(Ordering::Acquire) {
            return Err(Error::Closed);
        }
        Ok(())
    }

    /// The sequence number of the last write the snapshot sees (0 on a store
    /// never written). Writes get consecutive numbers, one per key of a batch.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// # let db = bloomlsm::Db::open(dir.path(), bloomlsm::Options::default())?;
    /// let before = db.snapshot();
    /// db.put("a", "1")?;
    /// assert_eq!(db.snapshot().sequence(), before.sequence() + 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn sequence(&self) -> u64 {
        self.seq
    }

    /// The value of `key` as of the snapshot, or `None`;
    /// [`Db::get`](crate::Db::get) at an earlier moment.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// # let db = bloomlsm::Db::open(dir.path(), bloomlsm::Options::default())?;
    /// let empty = db.snapshot();
    /// db.put("k", "v")?;
    /// assert_eq!(empty.get("k")?, None);
    /// assert_eq!(db.snapshot().get("k")?.as_deref(), Some(&b"v"[..]));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn get(&self, key: impl AsRef<[u8]>) -> Result<Option<Bytes>> {
        let key = key.as_ref();
        super::check_key(key)?;
        self.check_open()?;
        self.inner.get(key, Some(self.seq))
    }

    /// The values of `keys` as of the snapshot, in order:
    /// [`Db::multi_get`](crate::Db::multi_get) at an earlier moment.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// # let db = bloomlsm::Db::open(dir.path(), bloomlsm::Options::default())?;
    /// db.put("a", "1")?;
    /// let snap = db.snapshot();
    /// db.put("b", "2")?;
    /// let got = snap.multi_get(&["a", "b"])?;
    /// assert_eq!((got[0].as_deref(), got[1].as_deref()), (Some(&b"1"[..]), None));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn multi_get<K: AsRef<[u8]>>(&self, keys: &[K]) -> Result<Vec<Option<Bytes>>> {
        let keys: Vec<&[u8]> = keys.iter().map(|k| k.as_ref()).collect();
        for k in &keys {
            super::check_key(k)?;
        }
        self.check_open()?;
        self.inner.multi_get(&keys, Some(self.seq))
    }

    /// The live entries in `range` as of the snapshot, in key order
    /// ([`Db::scan`](crate::Db::scan) at an earlier moment; a
    /// [`DbIter`]: `.rev()`, `seek`). The iterator does not need the snapshot
    /// handle to stay alive.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// # let db = bloomlsm::Db::open(dir.path(), bloomlsm::Options::default())?;
    /// db.put("a", "1")?;
    /// db.put("b", "2")?;
    /// let snap = db.snapshot();
    /// db.delete("a")?;
    /// db.put("c", "3")?;
    /// let keys: Vec<_> = snap.scan(..).rev().map(|e| e.map(|(k, _)| k)).collect::<Result<_, _>>()?;
    /// assert_eq!(keys, ["b", "a"]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn scan(&self, range: impl ScanRange) -> DbIter {
        self.inner.scan_range(range, Some(self.seq))
    }

    /// The live entries whose keys start with `prefix`, as of the snapshot
    /// (see [`Db::scan_prefix`](crate::Db::scan_prefix)).
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// # let db = bloomlsm::Db::open(dir.path(), bloomlsm::Options::default())?;
    /// db.put("user:1", "ann")?;
    /// let snap = db.snapshot();
    /// db.put("user:2", "bob")?;
    /// assert_eq!(snap.scan_prefix("user:").count(), 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn scan_prefix(&self, prefix: impl AsRef<[u8]>) -> DbIter {
        self.inner.scan_prefix(prefix.as_ref(), Some(self.seq))
    }
}

impl Clone for Snapshot {
    /// Another handle on the same view (the versions stay until both are
    /// dropped).
    fn clone(&self) -> Snapshot {
        self.inner.snapshots.add(self.seq);
        Snapshot {
            inner: self.inner.clone(),
            seq: self.seq,
        }
    }
}

impl Drop for Snapshot {
    fn drop(&mut self) {
        self.inner.snapshots.release(self.seq);
    }
}

impl std::fmt::Debug for Snapshot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Snapshot")
            .field("path", &self.inner.dir)
            .field("sequence", &self.seq)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handles_are_owned_and_shareable() {
        fn is<T: Send + Sync + 'static>() {}
        is::<Snapshot>();
        is::<DbIter>();
    }

    #[test]
    fn list_counts_handles_per_sequence() {
        let list = SnapshotList::default();
        let seq = AtomicU64::new(7);
        assert_eq!(list.acquire(&seq), 7);
        assert_eq!(list.acquire(&seq), 7);
        seq.store(9, Ordering::Release);
        assert_eq!(list.acquire(&seq), 9);
        assert_eq!(list.sequences(), [7, 9]);
        list.release(7);
        assert_eq!(list.sequences(), [7, 9]);
        list.release(7);
        list.release(7); // an extra release changes nothing
        assert_eq!(list.sequences(), [9]);
        list.add(9);
        list.release(9);
        assert_eq!(list.sequences(), [9]);
        list.release(9);
        assert!(list.sequences().is_empty());
    }
}
