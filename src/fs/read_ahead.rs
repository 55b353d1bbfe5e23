//! The threads that read a sequential pass's next chunk (a compaction's
//! input) while the pass merges the current one, so that a compaction waits
//! on the device only for each input's first chunk.
//!
//! Plain threads blocked on a queue, not a rayon pool: rayon's idle
//! workers spin before they sleep, and sixteen of them, woken a few hundred
//! times a second, spent CPU the compactions they served needed
//! (docs/design.md, "Compaction I/O").

use std::sync::{Mutex, OnceLock, mpsc};

/// Chunks read at once at most: one per input a merge is about to reach.
const THREADS: usize = 4;

type Job = Box<dyn FnOnce() + Send>;

/// Runs `read` on a reading thread. Returns it if there are none (they
/// could not be started): the caller then reads on its own thread.
pub(crate) fn spawn(read: Job) -> Result<(), Job> {
    static QUEUE: OnceLock<Option<mpsc::Sender<Job>>> = OnceLock::new();
    let queue = QUEUE.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<Job>();
        let rx = std::sync::Arc::new(Mutex::new(rx));
        let mut started = 0;
        for i in 0..THREADS {
            let rx = rx.clone();
            let t = std::thread::Builder::new()
                .name(format!("bloomlsm-ahead-{i}"))
                .spawn(move || {
                    loop {
                        // One thread waits on the queue at a time; the
                        // others wait for the lock.
                        let job = match rx.lock() {
                            Ok(q) => q.recv(),
                            Err(_) => return,
                        };
                        match job {
                            // A job catches its own panics.
                            Ok(job) => job(),
                            Err(_) => return,
                        }
                    }
                });
            started += usize::from(t.is_ok());
        }
        (started > 0).then_some(tx)
    });
    match queue {
        Some(tx) => tx.send(read).map_err(|e| e.0),
        None => Err(read),
    }
}
