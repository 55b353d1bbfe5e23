//! A bump allocator for the memtable's skip list: nodes are carved one after
//! the other from 256 KiB chunks and all freed at once when the memtable is
//! dropped (RocksDB's `Arena`). An insert costs a pointer bump instead of a
//! heap allocation, and the memory a memtable reports is the memory it holds.

use std::alloc::{Layout, alloc, dealloc, handle_alloc_error};
use std::ptr::NonNull;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Bytes of a chunk.
const CHUNK: usize = 256 << 10;
/// Allocations larger than this get a block of their own, so that a chunk
/// never wastes more than this much at its end.
const MAX_IN_CHUNK: usize = CHUNK / 8;
/// Every allocation is aligned to this (the skip list's atomic pointers).
pub(crate) const ALIGN: usize = 8;

/// See the module documentation. `Send + Sync`: allocation takes a lock.
pub(crate) struct Arena {
    state: Mutex<State>,
    /// Bytes handed out, with the unused ends of full chunks.
    used: AtomicUsize,
}

struct State {
    /// Every block allocated, freed on drop.
    blocks: Vec<(NonNull<u8>, Layout)>,
    /// The free rest of the current chunk.
    next: *mut u8,
    left: usize,
}

// SAFETY: the raw pointers in `State` are owned by the arena (no other
// handle frees them) and only touched under the mutex.
unsafe impl Send for State {}

impl Arena {
    /// An arena that has allocated nothing yet.
    pub(crate) fn new() -> Self {
        Arena {
            state: Mutex::new(State {
                blocks: Vec::new(),
                next: std::ptr::null_mut(),
                left: 0,
            }),
            used: AtomicUsize::new(0),
        }
    }

    /// `size` bytes (rounded up to [`ALIGN`]), aligned to [`ALIGN`],
    /// uninitialised, valid and never moved until the arena is dropped.
    pub(crate) fn alloc(&self, size: usize) -> NonNull<u8> {
        let size = size.max(1).next_multiple_of(ALIGN);
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if size > MAX_IN_CHUNK {
            let p = s.new_block(size);
            self.used.fetch_add(size, Ordering::Relaxed);
            return p;
        }
        if s.left < size {
            // The rest of the old chunk is lost: count it.
            self.used.fetch_add(s.left, Ordering::Relaxed);
            s.next = s.new_block(CHUNK).as_ptr();
            s.left = CHUNK;
        }
        let p = s.next;
        // SAFETY: `size <= left`, so `p + size` stays inside the chunk.
        s.next = unsafe { p.add(size) };
        s.left -= size;
        self.used.fetch_add(size, Ordering::Relaxed);
        // SAFETY: `p` points into a live block, so it is not null.
        unsafe { NonNull::new_unchecked(p) }
    }

    /// Bytes handed out so far, with the unused ends of chunks already left
    /// behind (not the free rest of the current one).
    pub(crate) fn memory_usage(&self) -> usize {
        self.used.load(Ordering::Relaxed)
    }
}

impl State {
    fn new_block(&mut self, size: usize) -> NonNull<u8> {
        let layout = Layout::from_size_align(size, ALIGN).expect("arena block layout");
        // SAFETY: `layout` has a non-zero size.
        let p = unsafe { alloc(layout) };
        let Some(p) = NonNull::new(p) else {
            handle_alloc_error(layout)
        };
        self.blocks.push((p, layout));
        p
    }
}

impl Drop for Arena {
    fn drop(&mut self) {
        let s = self.state.get_mut().unwrap_or_else(|p| p.into_inner());
        for (p, layout) in s.blocks.drain(..) {
            // SAFETY: allocated in `new_block` with this layout, freed once.
            unsafe { dealloc(p.as_ptr(), layout) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Allocations are aligned, disjoint, keep their bytes, and are counted;
    /// large ones stand alone without breaking the current chunk.
    #[test]
    fn allocations_are_aligned_disjoint_and_counted() {
        let a = Arena::new();
        let mut spans: Vec<(usize, usize, u8)> = Vec::new();
        let sizes = [
            1usize,
            7,
            8,
            9,
            100,
            MAX_IN_CHUNK,
            MAX_IN_CHUNK + 1,
            3,
            CHUNK * 2,
            5,
        ];
        let mut total = 0;
        // Miri interprets every byte written: fewer rounds there.
        for (i, &n) in sizes
            .iter()
            .cycle()
            .take(if cfg!(miri) { 20 } else { 200 })
            .enumerate()
        {
            let p = a.alloc(n);
            assert_eq!(p.as_ptr() as usize % ALIGN, 0);
            // SAFETY: `n` bytes were just allocated at `p`.
            unsafe { std::ptr::write_bytes(p.as_ptr(), i as u8, n) };
            spans.push((p.as_ptr() as usize, n, i as u8));
            total += n.next_multiple_of(ALIGN);
        }
        for &(p, n, fill) in &spans {
            // SAFETY: still live: the arena is.
            let bytes = unsafe { std::slice::from_raw_parts(p as *const u8, n) };
            assert!(bytes.iter().all(|&b| b == fill));
        }
        spans.sort();
        for w in spans.windows(2) {
            assert!(w[0].0 + w[0].1 <= w[1].0, "overlap");
        }
        // Counted: every byte handed out, and at most one small allocation's
        // worth lost at the end of each chunk.
        let used = a.memory_usage();
        assert!(used >= total, "{used} < {total}");
        let chunks = a.state.lock().unwrap().blocks.len();
        assert!(used <= total + chunks * MAX_IN_CHUNK, "{used}");
    }
}
