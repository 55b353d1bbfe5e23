//! `Db::refresh`: a store opened read-only moves to the newest state its
//! writer has made durable, read from the store's files again.

use super::*;
use crate::db::version::recovery::{self, Recovered};

impl Db {
    /// Reads the store's files again and shows this read-only handle the
    /// newest state its writer (in another process, or on another machine
    /// for a store kept wholly in a bucket) has made durable: the writes
    /// its logs hold and the tables its MANIFEST names. Returns whether
    /// the view moved on. A view never moves back: a state older than the
    /// one shown (by its last sequence number) is left unshown. An
    /// iterator made before keeps the state it saw. A keyspace created
    /// since the open is seen after a reopen.
    ///
    /// Refused with [`Error::InvalidArgument`] on a writable handle (it
    /// sees every write already) and while a [`Snapshot`] of this handle
    /// is alive: a snapshot reads the state the handle shows at its
    /// sequence number, and the writer's compactions keep no version for a
    /// reader's snapshot, so after a refresh it would read keys as missing.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// use bloomlsm::{Db, Options};
    /// let db = Db::open(dir.path(), Options::default())?;
    /// let reader = Db::open_read_only(dir.path(), Options::default())?;
    /// db.put("k", "v")?;
    /// assert_eq!(reader.get("k")?, None);
    /// assert!(reader.refresh()?);
    /// assert_eq!(reader.get("k")?.as_deref(), Some(&b"v"[..]));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn refresh(&self) -> Result<bool> {
        refresh(&self.inner)
    }
}

/// [`Db::refresh`] of the store whose engine is `inner`.
pub(super) fn refresh(inner: &Inner) -> Result<bool> {
    if inner.closed.load(Ordering::Acquire) {
        return Err(Error::Closed);
    }
    if !inner.state().vs.is_read_only() {
        return Err(Error::invalid(
            "refresh is for a store opened read-only: a writable handle sees every write",
        ));
    }
    let live = inner.snapshots.sequences().len();
    if live > 0 {
        return Err(Error::invalid(format!(
            "refresh with {live} snapshot(s) of this handle alive: drop them first (a \
                 snapshot reads the state the handle shows, which a refresh replaces)"
        )));
    }
    inner.opts.fs.refresh();
    let (dir, opts, caches) = (&inner.dir, &inner.opts, &inner.caches);
    let open_keyspace =
        |id: u32, name: &str| keyspace::recover_keyspace(dir, opts, caches, id, name, true);
    let rec = recovery::recover_read_only(dir, opts, caches.clone(), &open_keyspace)?;
    if rec.last_sequence < inner.last_seq.load(Ordering::Acquire) {
        return Ok(false);
    }
    let last_sequence = rec.last_sequence;
    let children = inner.children();
    Ok(show(inner, rec, last_sequence, &children))
}

/// Shows `rec` (a read-only recovery) to the readers of `inner` and of its
/// keyspaces; whether anything changed.
fn show(
    inner: &Inner,
    mut rec: Recovered,
    last_sequence: u64,
    children: &BTreeMap<u32, Arc<keyspace::Child>>,
) -> bool {
    let files = |inner: &Inner| -> Vec<u64> { inner.sv.load().version.file_numbers().collect() };
    let before = (inner.last_seq.load(Ordering::Acquire), files(inner));
    for k in std::mem::take(&mut rec.keyspaces) {
        if let Some(c) = children.get(&k.id) {
            show(c.inner(), k.rec, last_sequence, &BTreeMap::new());
        }
    }
    let mem = Arc::new(rec.mem);
    let mut st = inner.state();
    st.vs = rec.vs;
    st.flushed_seq = last_sequence;
    inner.writer.lock().unwrap_or_else(|p| p.into_inner()).mem = mem.clone();
    inner.last_seq.fetch_max(last_sequence, Ordering::AcqRel);
    inner.install_super_version(&st, mem);
    drop(st);
    before != (inner.last_seq.load(Ordering::Acquire), files(inner))
}

/// The thread of a read-only store that refreshes it every `every`
/// ([`Options::refresh_interval`]) until the store shuts down.
pub(super) fn refresh_thread(
    inner: Arc<Inner>,
    every: std::time::Duration,
) -> Result<std::thread::JoinHandle<()>> {
    std::thread::Builder::new()
        .name("bloomlsm-refresh".into())
        .spawn(move || {
            loop {
                let st = inner.state();
                let (st, _) = inner
                    .cv
                    .wait_timeout_while(st, every, |s| !s.shutting_down)
                    .unwrap_or_else(|p| p.into_inner());
                if st.shutting_down {
                    return;
                }
                drop(st);
                // A failure leaves the view where it was; the next try may
                // succeed, and an explicit refresh reports it.
                let _ = refresh(&inner);
            }
        })
        .map_err(|e| Error::io("spawn the refresh thread", e))
}
