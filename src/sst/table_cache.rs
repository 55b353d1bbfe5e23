//! The table cache: a bound on the file descriptors a store's tables hold.
//!
//! Every open [`Table`](super::Table) keeps its index, properties and
//! (pinned) filter in memory; only its file descriptor goes through this
//! cache. A table opened or reopened is admitted; past the capacity the
//! cache closes the descriptor of a table not read lately (CLOCK: a table
//! read since the hand last passed it is skipped once), and that table
//! reopens its file on its next read, checked to be the same file, counted
//! in [`TableCache::reopens`]. A read in progress holds its own reference to
//! the descriptor, so closing one never fails a read; the descriptor closes
//! when that read ends.
//!
//! A closed descriptor can only be reopened while the file exists, so the
//! store deletes a table's file only when the table itself goes: a table
//! that compactions made obsolete while an old version, iterator or
//! snapshot still reads it deletes its file when its last holder drops it
//! (`Table::remove_file_on_drop`), not before.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use crate::fs::ReadableFile;

/// A bound on the table files held open at once, shared by a store's tables
/// ([`TableOpenOptions::table_cache`](super::TableOpenOptions::table_cache)).
#[derive(Debug)]
pub struct TableCache {
    capacity: usize,
    /// The admitted slots, in the order the hand walks them.
    clock: Mutex<Clock>,
    /// Admitted slots holding a descriptor now ([`Slot::counted`]).
    open: AtomicUsize,
    reopens: AtomicU64,
    evictions: AtomicU64,
}

/// A table's descriptor.
type File = Arc<dyn ReadableFile>;

#[derive(Debug, Default)]
struct Clock {
    ring: Vec<Weak<Slot>>,
    hand: usize,
}

/// One table's descriptor, as the cache sees it.
#[derive(Debug)]
pub(crate) struct Slot {
    /// The descriptor; `None` once the cache closed it.
    pub(crate) file: Mutex<Option<File>>,
    /// Read since the hand last passed.
    used: AtomicBool,
    /// Counted in [`TableCache::open`] (admitted, and not closed since).
    counted: AtomicBool,
    /// The cache this slot is counted in.
    cache: Option<Arc<TableCache>>,
}

impl Slot {
    /// A slot holding `file`, bounded by `cache` once admitted.
    pub(crate) fn new(file: File, cache: Option<Arc<TableCache>>) -> Self {
        Slot {
            file: Mutex::new(Some(file)),
            used: AtomicBool::new(true),
            counted: AtomicBool::new(false),
            cache,
        }
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, Option<File>> {
        self.file.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The cache bounding this slot, if any.
    pub(crate) fn cache(&self) -> Option<&Arc<TableCache>> {
        self.cache.as_ref()
    }

    /// Notes a read, so the hand spares the slot once.
    pub(crate) fn touch(&self) {
        // A load first: the flag's cache line stays shared while it is set.
        if !self.used.load(Ordering::Relaxed) {
            self.used.store(true, Ordering::Relaxed);
        }
    }

    fn uncount(&self) {
        if self.counted.swap(false, Ordering::AcqRel)
            && let Some(c) = &self.cache
        {
            c.open.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        // Its ring entry no longer upgrades; the hand sweeps it out.
        self.uncount();
    }
}

impl TableCache {
    /// A cache holding at most `capacity` table files open (at least one).
    pub fn new(capacity: usize) -> Self {
        TableCache {
            capacity: capacity.max(1),
            clock: Mutex::new(Clock::default()),
            open: AtomicUsize::new(0),
            reopens: AtomicU64::new(0),
            evictions: AtomicU64::new(0),
        }
    }

    /// The most table files held open at once (a read in progress keeps
    /// a closed table's descriptor until it ends).
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Table files held open now under the bound.
    pub fn open_files(&self) -> usize {
        self.open.load(Ordering::Acquire)
    }

    /// Table files reopened since the cache was made: reads that found
    /// their table's descriptor closed.
    pub fn reopens(&self) -> u64 {
        self.reopens.load(Ordering::Relaxed)
    }

    /// Descriptors the cache has closed to stay within its capacity.
    pub fn evictions(&self) -> u64 {
        self.evictions.load(Ordering::Relaxed)
    }

    pub(crate) fn count_reopen(&self) {
        self.reopens.fetch_add(1, Ordering::Relaxed);
    }

    fn clock(&self) -> MutexGuard<'_, Clock> {
        self.clock.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Counts `slot`, which has just been given a descriptor (the caller
    /// does not hold its lock), and closes others' past the capacity.
    pub(crate) fn admit(&self, slot: &Arc<Slot>) {
        let mut clock = self.clock();
        if slot.counted.swap(true, Ordering::AcqRel) {
            return;
        }
        self.open.fetch_add(1, Ordering::AcqRel);
        slot.touch();
        clock.ring.push(Arc::downgrade(slot));
        // Closed after the clock's lock is released (a close may be slow);
        // slots upgraded here are dropped there too.
        let mut closed: Vec<(Arc<Slot>, Option<File>)> = Vec::new();
        // Two passes clear every flag; a slot whose lock is held (a read
        // or an open in progress) is passed over.
        let mut budget = 2 * clock.ring.len() + 1;
        while self.open.load(Ordering::Acquire) > self.capacity && budget > 0 {
            budget -= 1;
            if clock.ring.is_empty() {
                break;
            }
            if clock.hand >= clock.ring.len() {
                clock.hand = 0;
            }
            let at = clock.hand;
            let Some(s) = clock.ring[at].upgrade() else {
                clock.ring.swap_remove(at);
                continue;
            };
            if !s.counted.load(Ordering::Acquire) {
                clock.ring.swap_remove(at);
                closed.push((s, None));
                continue;
            }
            // The newcomer is about to be read.
            if Arc::ptr_eq(&s, slot) {
                clock.hand += 1;
                continue;
            }
            if s.used.swap(false, Ordering::Relaxed) {
                clock.hand += 1;
                continue;
            }
            let Ok(mut file) = s.file.try_lock() else {
                clock.hand += 1;
                continue;
            };
            let f = file.take();
            drop(file);
            s.uncount();
            self.evictions.fetch_add(1, Ordering::Relaxed);
            clock.ring.swap_remove(at);
            closed.push((s, f));
        }
        // Dead entries of dropped tables: swept when they outnumber the
        // live ones, so the ring stays within twice the open files.
        if clock.ring.len() > 2 * self.open.load(Ordering::Acquire) + 64 {
            clock.ring.retain(|w| w.strong_count() > 0);
            clock.hand = 0;
        }
        drop(clock);
        drop(closed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io;

    #[derive(Debug)]
    struct NoFile;

    impl ReadableFile for NoFile {
        fn read_exact_at(&self, _: &mut [u8], _: u64) -> io::Result<()> {
            Ok(())
        }
        fn len(&self) -> io::Result<u64> {
            Ok(0)
        }
    }

    fn slot(cache: &Arc<TableCache>) -> Arc<Slot> {
        let s = Arc::new(Slot::new(Arc::new(NoFile), Some(cache.clone())));
        cache.admit(&s);
        s
    }

    fn is_open(s: &Slot) -> bool {
        s.lock().is_some()
    }

    #[test]
    fn holds_at_most_its_capacity_and_spares_what_was_read() {
        let cache = Arc::new(TableCache::new(3));
        let slots: Vec<Arc<Slot>> = (0..3).map(|_| slot(&cache)).collect();
        assert_eq!(cache.open_files(), 3);
        assert!(slots.iter().all(|s| is_open(s)));
        // A fourth: one of the first three closes.
        let d = slot(&cache);
        assert_eq!(cache.open_files(), 3);
        assert_eq!(cache.evictions(), 1);
        assert!(is_open(&d));
        assert_eq!(slots.iter().filter(|s| is_open(s)).count(), 2);
        // The slots read since the hand passed are spared: read two of
        // those open, admit another, and the third one closes.
        let open: Vec<&Arc<Slot>> = slots.iter().filter(|s| is_open(s)).collect();
        open[0].touch();
        d.touch();
        let e = slot(&cache);
        assert!(is_open(open[0]) && is_open(&d) && is_open(&e));
        assert!(!is_open(open[1]));
        assert_eq!(cache.open_files(), 3);
    }

    #[test]
    fn dropped_slots_leave_the_count() {
        let cache = Arc::new(TableCache::new(2));
        let a = slot(&cache);
        let b = slot(&cache);
        drop(a);
        assert_eq!(cache.open_files(), 1);
        // Admitting an open slot again changes nothing.
        cache.admit(&b);
        assert_eq!(cache.open_files(), 1);
        let others: Vec<Arc<Slot>> = (0..10).map(|_| slot(&cache)).collect();
        assert_eq!(cache.open_files(), 2);
        assert_eq!(
            others.iter().filter(|s| is_open(s)).count() + is_open(&b) as usize,
            2
        );
        drop(others);
        drop(b);
        assert_eq!(cache.open_files(), 0);
    }

    #[test]
    fn a_slot_in_use_is_passed_over() {
        let cache = Arc::new(TableCache::new(1));
        let a = slot(&cache);
        let guard = a.lock();
        // `a` is locked (an open in progress): `b` cannot close it, so for
        // a moment both are open, and the bound is back with the next one.
        let b = slot(&cache);
        assert!(guard.is_some() && is_open(&b));
        assert_eq!(cache.open_files(), 2);
        drop(guard);
        let c = slot(&cache);
        assert_eq!(cache.open_files(), 1);
        assert!(is_open(&c));
        assert!(!is_open(&a) && !is_open(&b));
    }

    #[test]
    fn the_ring_does_not_grow_with_dropped_slots() {
        let cache = Arc::new(TableCache::new(4));
        for _ in 0..10_000 {
            drop(slot(&cache));
        }
        assert_eq!(cache.open_files(), 0);
        assert!(cache.clock().ring.len() <= 2 + 64 + 1);
    }
}
