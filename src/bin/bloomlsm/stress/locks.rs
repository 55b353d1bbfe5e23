//! Striped key locks: one mutex per [`STRIPE`] adjacent keys of a keyspace.
//!
//! A writer holds the locks of every key it writes from the moment it
//! records its pending state until it records the new one; a reader holds
//! those of every key it reads and compares. Every operation takes all its
//! locks at once, in (keyspace, stripe) order, and takes no other stripe
//! lock while it holds them: no two operations wait on each other in a
//! cycle.

use std::collections::BTreeSet;
use std::sync::{Mutex, MutexGuard};

use super::expected::Slot;

/// Keys per lock.
pub const STRIPE: u32 = 8;

/// The locks of every key of every keyspace.
pub struct KeyLocks {
    stripes: Vec<Vec<Mutex<()>>>,
    keys: u32,
}

/// Held locks; dropping it releases them.
pub struct Held<'a> {
    _guards: Vec<MutexGuard<'a, ()>>,
}

impl KeyLocks {
    /// The locks of `keyspaces` keyspaces of `keys` keys.
    pub fn new(keyspaces: u32, keys: u32) -> KeyLocks {
        let per = keys.div_ceil(STRIPE);
        KeyLocks {
            stripes: (0..keyspaces)
                .map(|_| (0..per).map(|_| Mutex::new(())).collect())
                .collect(),
            keys,
        }
    }

    /// Locks the keys of `slots` (in any order, repeats allowed).
    pub fn lock(&self, slots: impl IntoIterator<Item = Slot>) -> Held<'_> {
        let stripes: BTreeSet<(u32, u32)> = slots
            .into_iter()
            .map(|(ks, key)| (ks, key / STRIPE))
            .collect();
        let guards = stripes
            .into_iter()
            .map(|(ks, s)| {
                // A panic elsewhere ends the run; the lock guards no data.
                self.stripes[ks as usize][s as usize]
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
            })
            .collect();
        Held { _guards: guards }
    }

    /// Locks the keys `lo..hi` of keyspace `ks` (`hi` clipped to the keys).
    pub fn lock_range(&self, ks: u32, lo: u32, hi: u32) -> Held<'_> {
        let hi = hi.min(self.keys);
        if lo >= hi {
            return Held {
                _guards: Vec::new(),
            };
        }
        let stripes = (lo / STRIPE..=(hi - 1) / STRIPE).map(|s| s * STRIPE);
        self.lock(stripes.map(|k| (ks, k)))
    }
}
