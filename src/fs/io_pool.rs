//! The threads that make a `multi_get`'s direct (O_DIRECT) reads: blocked on
//! the device most of the time, so there are more of them than cores — as
//! many reads in flight as there are threads, which is what RocksDB's
//! MultiGet gets from asynchronous I/O. Compactions keep rayon's global pool,
//! sized to the cores, and read ahead on threads of their own
//! ([`super::read_ahead`]).

use std::sync::OnceLock;

/// Reads in flight at most. A virtio or NVMe device serves many at once; the
/// threads cost memory only while idle.
const IO_THREADS: usize = 16;

/// The pool, made on first use. `None` if the threads could not be started
/// (the caller then reads on its own thread).
pub(crate) fn io_pool() -> Option<&'static rayon::ThreadPool> {
    static POOL: OnceLock<Option<rayon::ThreadPool>> = OnceLock::new();
    POOL.get_or_init(|| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(IO_THREADS)
            .thread_name(|i| format!("bloomlsm-io-{i}"))
            .build()
            .ok()
    })
    .as_ref()
}
