//! The current [`super::SuperVersion`], which a lookup pins without touching
//! a shared reference count.
//!
//! Taking a read lock and cloning an `Arc` cost a lookup four locked
//! read-modify-writes (lock, clone, unlock, drop), each a full fence on
//! x86; for a missing get answered by the filters they were about a sixth
//! of its samples (docs/design.md, "Counting lookups and pinning the
//! super-version"). Here a thread that owns a stripe ([`crate::tally`])
//! pins the super-version by naming it in its own hazard slot instead — one
//! locked exchange — and [`Current::install`] frees a replaced
//! super-version only once no slot names it. A thread without a stripe,
//! and every reader other than a point lookup, takes an `Arc`
//! ([`Current::load`]).
//!
//! The protocol is the hazard pointer's. A reader stores the pointer it
//! read into its slot, then reads the current pointer again; an installer
//! stores the new pointer, then reads every slot. All four accesses are
//! sequentially consistent, so either the reader sees the new pointer and
//! retries, or the installer sees the slot and keeps the old super-version
//! in `retired` until the slot is cleared. A reader that clears its slot
//! while something is retired frees what no slot names any more, so an old
//! super-version (its memtables, its obsolete files) outlives its last
//! reader by no more than the lookup that held it.

use crate::tally::{self, STRIPES};
use std::ptr;
use std::sync::atomic::Ordering::{Relaxed, Release, SeqCst};
use std::sync::atomic::{AtomicPtr, AtomicUsize};
use std::sync::{Arc, Mutex, RwLock};

/// A slot on a cache line of its own: each is written by one thread at
/// every lookup.
#[repr(align(64))]
struct Slot<T>(AtomicPtr<T>);

/// `T`: the store's [`super::SuperVersion`].
pub(super) struct Current<T> {
    /// The owner of the current super-version.
    owner: RwLock<Arc<T>>,
    /// `Arc::as_ptr` of `owner`'s.
    ptr: AtomicPtr<T>,
    /// Per stripe, the super-version its thread's lookup holds (null: none).
    slots: [Slot<T>; STRIPES],
    /// Replaced super-versions a slot still named when they were replaced.
    retired: Mutex<Vec<Arc<T>>>,
    /// `retired.len()`, read without the lock when a slot is cleared.
    retired_len: AtomicUsize,
}

/// A pinned super-version: the current one when it was pinned, kept alive
/// until the pin is dropped.
pub(super) enum Pin<'a, T> {
    /// Named in this thread's slot of `current`.
    Slot {
        sv: &'a T,
        slot: usize,
        current: &'a Current<T>,
    },
    /// Held by a reference count of its own.
    Arc(Arc<T>),
}

impl<T> std::ops::Deref for Pin<'_, T> {
    type Target = T;

    fn deref(&self) -> &T {
        match self {
            Pin::Slot { sv, .. } => sv,
            Pin::Arc(sv) => sv,
        }
    }
}

impl<T> Drop for Pin<'_, T> {
    fn drop(&mut self) {
        if let Pin::Slot { slot, current, .. } = *self {
            // Release: what this lookup read of the super-version happens
            // before an installer that sees the slot clear frees it. (Not a
            // SeqCst store, a locked exchange on x86: an install that read
            // the slot just before it was cleared may be missed by the
            // check below, and then its super-version waits for the next
            // lookup or install to free it.)
            current.slots[slot].0.store(ptr::null_mut(), Release);
            if current.retired_len.load(Relaxed) > 0 {
                current.reclaim();
            }
        }
    }
}

impl<T> Current<T> {
    pub(super) fn new(sv: T) -> Self {
        let sv = Arc::new(sv);
        Current {
            ptr: AtomicPtr::new(Arc::as_ptr(&sv).cast_mut()),
            owner: RwLock::new(sv),
            slots: std::array::from_fn(|_| Slot(AtomicPtr::new(ptr::null_mut()))),
            retired: Mutex::new(Vec::new()),
            retired_len: AtomicUsize::new(0),
        }
    }

    /// The current super-version, with a reference count of its own: for
    /// readers that keep it (iterators, snapshots of the file set, stats).
    pub(super) fn load(&self) -> Arc<T> {
        self.owner.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The current super-version for one lookup on this thread.
    #[inline]
    pub(super) fn pin(&self) -> Pin<'_, T> {
        let Some(slot) = tally::claimed_stripe() else {
            return Pin::Arc(self.load());
        };
        let mine = &self.slots[slot].0;
        // A slot already in use: a pin inside a pin on this thread.
        if !mine.load(Relaxed).is_null() {
            return Pin::Arc(self.load());
        }
        let mut p = self.ptr.load(SeqCst);
        loop {
            mine.swap(p, SeqCst);
            let now = self.ptr.load(SeqCst);
            if now == p {
                break;
            }
            p = now;
        }
        // SAFETY: `p` was current after this slot named it, so an install
        // that replaced it since saw the slot (both sides are SeqCst) and
        // keeps it in `retired` until the slot is cleared, which only
        // dropping this pin does.
        let sv = unsafe { &*p };
        Pin::Slot {
            sv,
            slot,
            current: self,
        }
    }

    /// Makes `sv` current. The one replaced is freed now if no lookup
    /// holds it, else when the last one that does ends.
    pub(super) fn install(&self, sv: T) {
        let sv = Arc::new(sv);
        let new = Arc::as_ptr(&sv).cast_mut();
        let old = {
            let mut owner = self.owner.write().unwrap_or_else(|p| p.into_inner());
            self.ptr.store(new, SeqCst);
            std::mem::replace(&mut *owner, sv)
        };
        let mut retired = self.retired.lock().unwrap_or_else(|p| p.into_inner());
        retired.push(old);
        // Counted before the slots are read: a lookup clearing its slot
        // after that read sees the count and frees what it held.
        self.retired_len.store(retired.len(), SeqCst);
        let freed = self.sweep(&mut retired);
        drop(retired);
        drop(freed);
    }

    /// Frees the retired super-versions no slot names.
    fn reclaim(&self) {
        let mut retired = self.retired.lock().unwrap_or_else(|p| p.into_inner());
        let freed = self.sweep(&mut retired);
        drop(retired);
        drop(freed);
    }

    /// Takes out of `retired` the super-versions no slot names, to be
    /// dropped by the caller once the lock is released.
    fn sweep(&self, retired: &mut Vec<Arc<T>>) -> Vec<Arc<T>> {
        let named: Vec<*mut T> = self
            .slots
            .iter()
            .map(|s| s.0.load(SeqCst))
            .filter(|p| !p.is_null())
            .collect();
        let (held, freed) = std::mem::take(retired)
            .into_iter()
            .partition(|sv| named.contains(&Arc::as_ptr(sv).cast_mut()));
        *retired = held;
        self.retired_len.store(retired.len(), SeqCst);
        freed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, AtomicU64};

    const ALIVE: u64 = 0x5eed_5eed_5eed_5eed;

    /// A super-version stand-in that says when it is freed, and scribbles
    /// over itself then: a reader of a freed one sees the scribble (or the
    /// allocator's own).
    struct Canary {
        tag: AtomicU64,
        freed: Arc<AtomicU64>,
    }

    impl Canary {
        fn new(freed: &Arc<AtomicU64>) -> Self {
            Canary {
                tag: AtomicU64::new(ALIVE),
                freed: freed.clone(),
            }
        }
    }

    impl Drop for Canary {
        fn drop(&mut self) {
            self.tag.store(0xdead, SeqCst);
            self.freed.fetch_add(1, SeqCst);
        }
    }

    #[test]
    fn a_replaced_version_lives_until_the_lookup_holding_it_ends() {
        let freed = Arc::new(AtomicU64::new(0));
        let current = Current::new(Canary::new(&freed));
        let pin = current.pin();
        assert!(matches!(pin, Pin::Slot { .. }), "this thread has a stripe");
        current.install(Canary::new(&freed));
        assert_eq!(freed.load(SeqCst), 0, "held by the pin");
        assert_eq!(pin.tag.load(SeqCst), ALIVE);
        drop(pin);
        assert_eq!(freed.load(SeqCst), 1, "freed by the pin's end");
        // Not held: freed by the install itself.
        current.install(Canary::new(&freed));
        assert_eq!(freed.load(SeqCst), 2);
        // A pin inside a pin takes a count of its own.
        let outer = current.pin();
        let inner = current.pin();
        assert!(matches!(inner, Pin::Arc(_)));
        current.install(Canary::new(&freed));
        drop(inner);
        assert_eq!(freed.load(SeqCst), 2, "the outer pin still holds it");
        drop(outer);
        assert_eq!(freed.load(SeqCst), 3);
    }

    #[test]
    fn lookups_never_see_a_freed_version_while_installs_run() {
        let freed = Arc::new(AtomicU64::new(0));
        let current = Current::new(Canary::new(&freed));
        let stop = AtomicBool::new(false);
        let installs = 20_000u64;
        std::thread::scope(|s| {
            for _ in 0..3 {
                s.spawn(|| {
                    let mut pins = 0u64;
                    while !stop.load(Relaxed) || pins < 1_000 {
                        let pin = current.pin();
                        for _ in 0..4 {
                            assert_eq!(pin.tag.load(SeqCst), ALIVE, "a pinned version was freed");
                            std::hint::spin_loop();
                        }
                        pins += 1;
                    }
                });
            }
            for _ in 0..installs {
                current.install(Canary::new(&freed));
            }
            stop.store(true, Relaxed);
        });
        // With no lookup left, an install frees all that was replaced.
        current.install(Canary::new(&freed));
        assert_eq!(freed.load(SeqCst), installs + 1);
        assert_eq!(current.retired_len.load(SeqCst), 0);
    }
}
