//! The write path: the writer queue and group commit, the limits on keys and
//! values, and making room in the memtable (freezing it for a flush, the L0
//! slowdown and stop rules).

use super::*;

/// Options of one write ([`Db::write_with`]). New fields may come: build it
/// from [`WriteOptions::default`] and its setters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct WriteOptions {
    /// Fsync (`fdatasync`) the write-ahead log before the write is
    /// acknowledged, as [`Options::sync_writes`] does for every write.
    /// Default false: the store's own setting applies.
    pub sync: bool,
}

impl WriteOptions {
    /// These options with [`WriteOptions::sync`] set to `sync`.
    pub fn sync(mut self, sync: bool) -> Self {
        self.sync = sync;
        self
    }
}

/// Frozen memtables allowed to wait for a flush before writes stall.
pub(super) const MAX_IMMUTABLE: usize = 2;

pub(super) fn check_key(key: &[u8]) -> Result<()> {
    match key_outside_limits(key) {
        Some(what) => Err(Error::invalid(what)),
        None => Ok(()),
    }
}

pub(super) fn key_outside_limits(key: &[u8]) -> Option<String> {
    if key.is_empty() {
        Some("empty key".into())
    } else if key.len() > MAX_KEY_LEN {
        Some(format!(
            "key of {} bytes is over the {MAX_KEY_LEN}-byte limit",
            key.len()
        ))
    } else {
        None
    }
}

/// Why `Db::write` refuses an operation with this key and value (an empty
/// key, a key over [`MAX_KEY_LEN`], a value over [`MAX_VALUE_LEN`]), if it
/// does. WAL replay holds logged batches to the same rule: the store never
/// logs such an operation.
pub(crate) fn outside_write_limits(key: &[u8], value: &[u8]) -> Option<String> {
    key_outside_limits(key).or_else(|| {
        (value.len() > MAX_VALUE_LEN).then(|| {
            format!(
                "value of {} bytes is over the {MAX_VALUE_LEN}-byte limit",
                value.len()
            )
        })
    })
}

/// [`outside_write_limits`] for one operation of a batch: a range
/// deletion's start and end are both keys, and the range must not be empty
/// (`start < end`).
pub(crate) fn op_outside_limits(op: &BatchOp<'_>) -> Option<String> {
    match *op {
        BatchOp::DeleteRange { start, end } => key_outside_limits(start)
            .map(|w| format!("range start: {w}"))
            .or_else(|| key_outside_limits(end).map(|w| format!("range end: {w}")))
            .or_else(|| {
                (start >= end).then(|| "range deletion whose start is not below its end".into())
            }),
        _ => outside_write_limits(op.key(), op.value()),
    }
}

impl Inner {
    /// Makes sure the active memtable, and that of each keyspace in
    /// `children` (the other keyspaces a batch writes to), has room,
    /// freezing them all if one is full; applies the L0 slowdown and stop
    /// rules of each.
    pub(super) fn make_room(
        &self,
        w: &mut Writer,
        children: &[Arc<keyspace::Child>],
    ) -> Result<()> {
        let mut delayed = false;
        let mut full = self.room(&w.mem, &mut delayed)?;
        for c in children {
            let k = c.inner();
            let mem = k
                .writer
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .mem
                .clone();
            full |= k.room(&mem, &mut delayed)?;
        }
        if full {
            let mut st = self.state();
            self.freeze_memtable(w, &mut st)?;
            self.cv.notify_all();
        }
        Ok(())
    }

    /// For this engine's active memtable `mem`: applies the L0 slowdown
    /// (once per write, `delayed`) and waits while writes must stall.
    /// Returns whether `mem` is full and may be frozen.
    pub(super) fn room(&self, mem: &MemTable, delayed: &mut bool) -> Result<bool> {
        loop {
            let st = self.state();
            if let Some(e) = &st.bg_error {
                return Err(e.duplicate());
            }
            let l0 = st.vs.current().levels[0].len();
            let compacting = self.opts.background_compaction;
            if compacting && !*delayed && l0 >= self.opts.l0_slowdown_trigger {
                // Give compaction some CPU, once per write, before stopping.
                drop(st);
                self.counters.slowdowns.fetch_add(1, Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(1));
                *delayed = true;
                continue;
            }
            if mem.approximate_memory_bytes() < self.opts.write_buffer_size {
                return Ok(false);
            }
            if st.imm.len() >= MAX_IMMUTABLE || (compacting && l0 >= self.opts.l0_stop_trigger) {
                self.counters.stalls.fetch_add(1, Ordering::Relaxed);
                self.cv.notify_all();
                let (g, _) = self
                    .cv
                    .wait_timeout(st, Duration::from_millis(100))
                    .unwrap_or_else(|p| p.into_inner());
                drop(g);
                continue;
            }
            return Ok(true);
        }
    }

    /// Freezes the active memtable (it joins the flush queue) and starts a
    /// new one with a new log. The old log is synced first, so a frozen
    /// memtable's writes are on disk whatever the sync mode. Every other
    /// keyspace's non-empty memtable is frozen with it: a memtable then
    /// holds writes of one log only, which is deleted once every memtable
    /// frozen from it is flushed.
    /// Any failure poisons the store: the log switch may be half done.
    pub(super) fn freeze_memtable(&self, w: &mut Writer, st: &mut State) -> Result<()> {
        let r = self.switch_memtable(w, st);
        if let Err(e) = &r {
            st.bg_error
                .get_or_insert_with(|| Error::poisoned("switching to a new WAL", e.duplicate()));
            self.cv.notify_all();
        }
        r
    }

    pub(super) fn switch_memtable(&self, w: &mut Writer, st: &mut State) -> Result<()> {
        if w.wal.is_none() {
            return Err(Error::ReadOnly);
        }
        let seq = self.last_seq.load(Ordering::Acquire);
        let number = st.vs.new_file_number(seq)?;
        let wal = Wal::create_in(self.fs(), &self.dir, number)?;
        if let Some(old) = w.wal.as_mut() {
            old.sync()?;
        }
        // Tracked once it exists: recovery refuses a store missing it.
        let edit = VersionEdit {
            new_logs: vec![number],
            ..VersionEdit::default()
        };
        st.vs.log_and_apply(edit, &[], seq)?;
        w.wal = Some(wal);
        let frozen = std::mem::replace(
            &mut w.mem,
            Arc::new(MemTable::for_write_buffer(self.opts.write_buffer_size)),
        );
        st.imm.push(Frozen {
            mem: frozen,
            wal: st.wal_number,
            last_seq: seq,
        });
        self.freeze_children(st.wal_number, seq);
        st.wal_number = number;
        self.install_super_version(st, w.mem.clone());
        Ok(())
    }

    /// [`Db::write`] through the writer queue (LevelDB's group commit):
    /// the writer at the front of the queue leads, taking the batches queued
    /// behind it into one WAL record — one write, one fsync in sync mode —
    /// and one memtable insert; every writer of the group returns only after
    /// that, with the group's result. A lone writer is a group of one.
    /// A group is synced when any of its writers asked for it (`sync`, or
    /// the store's `sync_writes`).
    pub(super) fn write_queued(&self, batch: WriteBatch, sync: bool) -> Result<()> {
        let mut q = self.queue()?;
        let ticket = q.next_ticket;
        q.next_ticket += 1;
        q.waiting.push_back((ticket, Some(batch), sync));
        loop {
            // A lone writer finds no results waiting: no hashing for it.
            if !q.done.is_empty()
                && let Some(r) = q.done.remove(&ticket)
            {
                return r;
            }
            if q.waiting.front().map(|w| w.0) == Some(ticket) {
                break;
            }
            q = self
                .write_done
                .wait(q)
                .map_err(|_| Error::lock_poisoned("write queue lock"))?;
        }
        // Lead: this batch and those queued behind it, up to the group limit
        // (a small first batch is not held back by much more than itself).
        let mut group = q.waiting[0].1.take().expect("the leader's batch is queued");
        let mut group_sync = q.waiting[0].2;
        let first = group.approximate_size();
        let limit = if first <= GROUP_SMALL_BATCH {
            first + GROUP_SMALL_BATCH
        } else {
            GROUP_MAX_BYTES
        };
        let mut members = 1;
        for (_, b, sync) in q.waiting.iter_mut().skip(1) {
            let Some(b) = b.as_ref() else { break };
            if group.approximate_size() + b.approximate_size() > limit {
                break;
            }
            group.append(b);
            group_sync |= *sync;
            members += 1;
        }
        for (_, b, _) in q.waiting.iter_mut().skip(1).take(members - 1) {
            *b = None;
        }
        drop(q);
        let result = self.write_group(group, group_sync);
        // Hand the result to the group, whatever happens to the lock.
        let mut q = self.write_queue.lock().unwrap_or_else(|e| e.into_inner());
        for _ in 0..members {
            if let Some((t, _, _)) = q.waiting.pop_front()
                && t != ticket
            {
                let r = match &result {
                    Ok(()) => Ok(()),
                    Err(e) => Err(e.duplicate()),
                };
                q.done.insert(t, r);
            }
        }
        // Writers wait on `write_done` only while queued or grouped: a lone
        // writer wakes nobody (a notification is a system call).
        let waiting = members > 1 || !q.waiting.is_empty();
        drop(q);
        if waiting {
            self.write_done.notify_all();
        }
        result
    }

    /// The writer lock, for a write to a store that is not closed.
    pub(super) fn open_writer(&self) -> Result<MutexGuard<'_, Writer>> {
        let w = self
            .writer
            .lock()
            .map_err(|_| Error::lock_poisoned("writer lock"))?;
        if self.closed.load(Ordering::Acquire) {
            return Err(Error::Closed);
        }
        Ok(w)
    }

    pub(super) fn queue(&self) -> Result<MutexGuard<'_, WriteQueue>> {
        self.write_queue
            .lock()
            .map_err(|_| Error::lock_poisoned("write queue lock"))
    }

    /// Logs and applies one batch (a group's): the writer lock, room in the
    /// memtable, the WAL record (fsynced when `sync` or the store's
    /// `sync_writes` asks), the memtable insert, the new last sequence.
    pub(super) fn write_group(&self, mut batch: WriteBatch, sync: bool) -> Result<()> {
        let mut w = self.open_writer()?;
        if w.wal.is_none() {
            return Err(Error::ReadOnly);
        }
        let children: Vec<Arc<keyspace::Child>> = {
            let ids = batch.keyspace_ids();
            if ids.is_empty() {
                Vec::new()
            } else {
                // A keyspace dropped since the batch was checked: its
                // operations are logged (replay skips them) and applied to
                // nothing, as if written just before the drop.
                let all = self.children();
                ids.iter().filter_map(|id| all.get(id).cloned()).collect()
            }
        };
        if let Err(e) = self.make_room(&mut w, &children) {
            self.poison("making room for a write", &e);
            return Err(e);
        }
        let first = self.last_seq.load(Ordering::Acquire) + 1;
        // Sequence numbers are 56 bits in every key; one past the end would
        // be shifted out of the key and read back as another write. A store
        // never gets there by writing (2^56 operations), only by a damaged
        // counter: refuse, with nothing logged.
        if first.saturating_add((batch.len() as u64).saturating_sub(1)) > key::MAX_SEQUENCE {
            return Err(Error::invalid(format!(
                "the store's sequence numbers are used up: the last is {}, a batch of {} needs more (the most is {})",
                first - 1,
                batch.len(),
                key::MAX_SEQUENCE
            )));
        }
        batch.set_sequence(first);
        let Some(wal) = w.wal.as_mut() else {
            return Err(Error::ReadOnly);
        };
        if let Err(e) = wal.append_batch(&batch, sync || self.opts.sync_writes) {
            // The log may now hold a partial record; refuse further writes
            // rather than acknowledge anything after it.
            self.poison("a WAL write", &e);
            return Err(e);
        }
        let last = first + batch.len() as u64 - 1;
        if children.is_empty() {
            w.mem.insert_batch(&batch);
        } else {
            w.mem.insert_batch_in(&batch, 0, 0);
            for c in &children {
                let k = c.inner();
                let kw = k.writer.lock().unwrap_or_else(|p| p.into_inner());
                kw.mem.insert_batch_in(&batch, c.id, 0);
                k.last_seq.fetch_max(last, Ordering::AcqRel);
                // Its filters are rebuilt when its writes pause.
                let now = k.opened_at.elapsed().as_millis() as u64;
                k.last_write_ms.fetch_max(now, Ordering::Relaxed);
            }
        }
        self.last_seq.store(last, Ordering::Release);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use crate::fs::fault::{FaultFs, Op};
    use crate::{Db, Options, WriteBatch, WriteOptions};

    /// A write that asks for sync is fdatasync'd in a store that does not
    /// sync by default, and one that does not ask is not.
    #[test]
    fn a_write_with_sync_is_synced_whatever_the_store_default() {
        let dir = tempfile::tempdir().unwrap();
        let fs = FaultFs::new();
        let db = Db::open(
            dir.path(),
            Options {
                fs: Arc::new(fs.clone()),
                ..Options::default()
            },
        )
        .unwrap();
        db.put("warm", "up").unwrap();
        fs.reset_counts();
        db.put("a", "1").unwrap();
        assert_eq!(fs.count(Some(Op::Sync)), 0);
        let mut b = WriteBatch::new();
        b.put("b", "2");
        db.write_with(b, WriteOptions::default().sync(true))
            .unwrap();
        assert_eq!(fs.count(Some(Op::Sync)), 1);
        assert_eq!(db.get("b").unwrap().as_deref(), Some(&b"2"[..]));
        db.close().unwrap();
    }
}
