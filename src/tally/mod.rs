//! Counts that the read path adds to on every lookup without a locked
//! instruction.
//!
//! An atomic `fetch_add` is a locked read-modify-write: on x86 it is also a
//! full fence, so the loads after it (the next filter line, the next
//! file's key range) wait for the store buffer to drain. Three of them per
//! missing get, for its counts, took about a fifth of its time (docs/design.md,
//! "Counting lookups and pinning the super-version"). A [`Tally`] keeps one
//! cell per counter per thread *stripe* instead: a thread that owns a
//! stripe is the only writer of its cells, so its add is a plain load and
//! store. A reader sums the cells.
//!
//! There are [`STRIPES`] stripes for the whole process. A thread claims
//! one the first time it counts through [`Tally::add_claiming`] (the
//! lookup entry points) and gives it back when it exits; the stripe's
//! counts stay in the cells, and the next owner adds on to them. A thread
//! without a stripe (all taken, or its thread-locals already destroyed)
//! adds to a shared cell with an atomic add.

mod lookups;

pub(crate) use lookups::{AtomicIo, Get, GetCounters};

use std::cell::Cell;
use std::sync::atomic::AtomicU32;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::{AcqRel, Acquire, Relaxed, Release};

/// Stripes in the process: threads that count at once without locked adds.
pub(crate) const STRIPES: usize = 16;

/// Bit `i` set: stripe `i` has an owner.
static TAKEN: AtomicU32 = AtomicU32::new(0);

const UNCLAIMED: u8 = u8::MAX;
const NONE_FREE: u8 = u8::MAX - 1;

/// This thread's stripe, given back when the thread exits.
struct Owned(Cell<u8>);

impl Drop for Owned {
    fn drop(&mut self) {
        let s = self.0.get();
        if (s as usize) < STRIPES {
            // Release: the next owner's first load sees this thread's last
            // store to the stripe's cells.
            TAKEN.fetch_and(!(1u32 << s), Release);
        }
    }
}

thread_local! {
    static OWNED: Owned = const { Owned(Cell::new(UNCLAIMED)) };
}

/// Claims a free stripe, or answers `NONE_FREE`.
fn claim() -> u8 {
    let mut taken = TAKEN.load(Relaxed);
    loop {
        let free = !taken & ((1u64 << STRIPES) - 1) as u32;
        if free == 0 {
            return NONE_FREE;
        }
        let s = free.trailing_zeros();
        // Acquire: this thread's first load of the stripe's cells sees the
        // last store of its previous owner.
        match TAKEN.compare_exchange_weak(taken, taken | (1 << s), AcqRel, Relaxed) {
            Ok(_) => return s as u8,
            Err(now) => taken = now,
        }
    }
}

/// This thread's stripe, claimed now if `claim_one` and it has none.
#[inline]
fn stripe(claim_one: bool) -> Option<usize> {
    OWNED
        .try_with(|o| {
            let mut s = o.0.get();
            if s == UNCLAIMED && claim_one {
                s = claim();
                o.0.set(s);
            }
            ((s as usize) < STRIPES).then_some(s as usize)
        })
        .ok()
        .flatten()
}

/// The cache lines of a [`Tally`] of `counters` counters, packed or padded.
pub(crate) const fn lines(counters: usize, padded: bool) -> usize {
    let stride = if padded {
        counters.div_ceil(8) * 8
    } else {
        counters
    };
    (stride * STRIPES + counters).div_ceil(8)
}

/// This thread's stripe, claimed now if it has none; `None` if every
/// stripe is taken (or this thread is exiting).
#[inline]
pub(crate) fn claimed_stripe() -> Option<usize> {
    stripe(true)
}

/// A cache line of cells.
#[repr(align(64))]
#[derive(Default)]
struct Line([AtomicU64; 8]);

/// `N` counters, each kept as one cell per stripe plus a shared cell, on
/// `L` cache lines held inline (no pointer to follow to the cells).
pub(crate) struct Tally<const N: usize, const L: usize> {
    /// Cell `c` of stripe `s` is flat cell `s * stride + c`; the shared
    /// cells come after the last stripe.
    lines: [Line; L],
    /// `N`, or `N` rounded up to whole lines so that no two stripes share
    /// a line (a count every lookup adds to, whichever file it probes).
    stride: usize,
    /// What each counter read at the last [`Tally::reset`]: a reset cannot
    /// zero another thread's cell, whose owner may be storing to it.
    base: [AtomicU64; N],
}

impl<const N: usize, const L: usize> Tally<N, L> {
    /// Counters whose stripes share cache lines: the least memory, for
    /// counters kept per file.
    pub(crate) fn packed() -> Self {
        Self::with_stride(N)
    }

    /// Counters each stripe holds on lines of its own.
    pub(crate) fn padded() -> Self {
        Self::with_stride(N.div_ceil(8) * 8)
    }

    fn with_stride(stride: usize) -> Self {
        assert!(
            stride * STRIPES + N <= L * 8,
            "a Tally's lines hold its cells"
        );
        Tally {
            lines: std::array::from_fn(|_| Line::default()),
            stride,
            base: std::array::from_fn(|_| AtomicU64::new(0)),
        }
    }

    #[inline]
    fn cell(&self, flat: usize) -> &AtomicU64 {
        &self.lines[flat / 8].0[flat % 8]
    }

    /// Adds `v` to counter `c`, in this thread's stripe if it has one.
    #[inline]
    pub(crate) fn add(&self, c: usize, v: u64) {
        self.add_in(stripe(false), c, v);
    }

    /// [`Tally::add`], claiming a stripe for this thread if it has none: for
    /// the threads that look keys up, whose every lookup counts.
    #[inline]
    pub(crate) fn add_claiming(&self, c: usize, v: u64) {
        self.add_in(stripe(true), c, v);
    }

    #[inline]
    fn add_in(&self, s: Option<usize>, c: usize, v: u64) {
        match s {
            // This thread is the cell's only writer: no lost update.
            Some(s) => {
                let cell = self.cell(s * self.stride + c);
                cell.store(cell.load(Relaxed).wrapping_add(v), Relaxed);
            }
            None => {
                self.cell(self.stride * STRIPES + c).fetch_add(v, Relaxed);
            }
        }
    }

    /// Starts loading the line of counter `c` that this thread adds to.
    #[inline]
    pub(crate) fn prefetch(&self, c: usize) {
        let flat = match stripe(false) {
            Some(s) => s * self.stride + c,
            None => self.stride * STRIPES + c,
        };
        crate::filter::prefetch_read(self.cell(flat));
    }

    /// Counter `c` since the last reset.
    pub(crate) fn get(&self, c: usize) -> u64 {
        // The base first: a reset seen here read cells no newer than the
        // ones read next, so the difference is never below zero.
        let base = self.base[c].load(Acquire);
        self.sum(c).saturating_sub(base)
    }

    fn sum(&self, c: usize) -> u64 {
        (0..STRIPES)
            .map(|s| self.cell(s * self.stride + c).load(Relaxed))
            .fold(
                self.cell(self.stride * STRIPES + c).load(Relaxed),
                u64::wrapping_add,
            )
    }

    /// Counts from zero again. Adds made while it runs may fall on either
    /// side.
    pub(crate) fn reset(&self) {
        for c in 0..N {
            self.base[c].store(self.sum(c), Release);
        }
    }
}

/// [`Tally::packed`].
impl<const N: usize, const L: usize> Default for Tally<N, L> {
    fn default() -> Self {
        Self::packed()
    }
}

impl<const N: usize, const L: usize> std::fmt::Debug for Tally<N, L> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries((0..N).map(|c| self.get(c))).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn adds_from_many_threads_are_all_counted() {
        // More threads than stripes, each exiting in turn: stripes are
        // claimed, given back and claimed again, and the threads beyond
        // the stripes add to the shared cells.
        let t = Arc::new(Tally::<3, { lines(3, false) }>::packed());
        let threads: Vec<_> = (0..(STRIPES as u64 + 8))
            .map(|i| {
                let t = t.clone();
                std::thread::spawn(move || {
                    for k in 0..10_000u64 {
                        t.add_claiming(0, 1);
                        t.add(1, k);
                        if k % 7 == 0 {
                            t.add(2, i);
                        }
                    }
                })
            })
            .collect();
        for th in threads {
            th.join().unwrap();
        }
        let n = STRIPES as u64 + 8;
        assert_eq!(t.get(0), n * 10_000);
        assert_eq!(t.get(1), n * (10_000 * 9_999 / 2));
        assert_eq!(t.get(2), (0..n).sum::<u64>() * 10_000u64.div_ceil(7));
    }

    #[test]
    fn a_reset_counts_from_zero_and_claimed_stripes_are_given_back() {
        let t = Tally::<2, { lines(2, true) }>::padded();
        t.add_claiming(1, 5);
        t.add(0, 2);
        assert_eq!((t.get(0), t.get(1)), (2, 5));
        t.reset();
        assert_eq!((t.get(0), t.get(1)), (0, 0));
        t.add(1, 3);
        assert_eq!(t.get(1), 3);
        // Threads one after another, each claiming a stripe: were stripes
        // not given back at exit, at most STRIPES of them would get one
        // (other tests' threads may hold a few meanwhile).
        let claimed = (0..3 * STRIPES)
            .filter(|_| {
                std::thread::spawn(|| stripe(true))
                    .join()
                    .unwrap()
                    .is_some()
            })
            .count();
        assert!(
            claimed > STRIPES,
            "{claimed} of {} threads got a stripe",
            3 * STRIPES
        );
    }
}
