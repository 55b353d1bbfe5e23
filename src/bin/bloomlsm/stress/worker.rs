//! What the worker threads share ([`Shared`]): the store behind a
//! read-write lock (an operation holds it shared; a reopen holds it alone,
//! so every thread pauses), the expected state, the key locks, the counts,
//! and the first failure, which stops every thread; and one thread's own
//! state ([`Worker`]): its random choices and its crash points.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, RwLock};
use std::time::Instant;

use bloomlsm::workload::{SplitMix64, mix64};

use super::args::StressArgs;
use super::expected::Expected;
use super::failure::{Checked, Failure};
use super::locks::KeyLocks;
use super::ops::Counts;
use super::options::RunOptions;
use super::store::{Scratch, Store};

/// What every worker shares.
pub struct Shared<'a> {
    /// The run's flags.
    pub args: &'a StressArgs,
    /// The store's directory.
    pub db_dir: PathBuf,
    /// Where checkpoints are made.
    pub checkpoint_dir: PathBuf,
    /// The run's options.
    pub opts: RunOptions,
    /// The store; `None` only while a reopen replaces it (or after a
    /// reopen failed).
    pub store: RwLock<Option<Store>>,
    /// The expected state of every key.
    pub expected: Expected,
    /// The key locks.
    pub locks: KeyLocks,
    /// The scratch keyspace, under its own lock.
    pub scratch: Mutex<Scratch>,
    /// Operations done, per kind.
    pub counts: Counts,
    /// Operations started (for `--ops`).
    started: AtomicU64,
    /// When the run ends (`--duration`).
    deadline: Option<Instant>,
    /// Set on the first failure, or when the run's bound is reached.
    stop: AtomicBool,
    failure: Mutex<Option<Failure>>,
    /// Set once the fault of `--inject-fault` is written.
    pub fault_written: AtomicBool,
    /// Full verifications done (reopens), and keys checked by them.
    pub verified_keys: AtomicU64,
    /// Numbers the checkpoints' directories.
    pub checkpoints: AtomicU64,
}

impl<'a> Shared<'a> {
    /// The shared state of a run on `store`.
    pub fn new(
        args: &'a StressArgs,
        dir: PathBuf,
        opts: RunOptions,
        store: Store,
        expected: Expected,
    ) -> Shared<'a> {
        let locks = KeyLocks::new(expected.keyspaces(), expected.keys());
        Shared {
            args,
            db_dir: dir.join("db"),
            checkpoint_dir: dir.join("checkpoints"),
            opts,
            store: RwLock::new(Some(store)),
            expected,
            locks,
            scratch: Mutex::new(Scratch::default()),
            counts: Counts::default(),
            started: AtomicU64::new(0),
            deadline: args.duration.map(|d| Instant::now() + d),
            stop: AtomicBool::new(false),
            failure: Mutex::new(None),
            fault_written: AtomicBool::new(false),
            verified_keys: AtomicU64::new(0),
            checkpoints: AtomicU64::new(0),
        }
    }

    /// Records `f` (the first one is kept) and stops every worker.
    pub fn fail(&self, f: Failure) {
        lock(&self.failure).get_or_insert(f);
        self.stop.store(true, Ordering::SeqCst);
    }

    /// Whether the run is over.
    pub fn stopped(&self) -> bool {
        self.stop.load(Ordering::SeqCst)
    }

    /// The first failure, if any.
    pub fn take_failure(&self) -> Option<Failure> {
        lock(&self.failure).take()
    }

    /// Claims the next operation: `false` once the run's bound is reached.
    pub fn claim(&self) -> bool {
        if self.stopped() || self.deadline.is_some_and(|d| Instant::now() >= d) {
            return false;
        }
        match self.args.op_budget() {
            Some(n) => self.started.fetch_add(1, Ordering::Relaxed) < n,
            None => true,
        }
    }

    /// The store: `Err` when a failed reopen left none.
    pub fn with_store<T>(&self, f: impl FnOnce(&Store) -> Checked<T>) -> Checked<T> {
        let g = self.store.read().unwrap_or_else(|p| p.into_inner());
        match g.as_ref() {
            Some(s) => f(s),
            None => Err(Failure::Error("the store is closed".into())),
        }
    }

    /// Stops every worker, with no failure.
    pub fn stop(&self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

/// Locks `m`, whatever a panicking holder left (a first failure, a scratch
/// state: each is replaced whole).
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// One worker thread.
pub struct Worker<'s, 'a> {
    /// The shared state.
    pub sh: &'s Shared<'a>,
    /// The thread's choices: drawn from the seed, the round and the thread.
    pub rng: SplitMix64,
    /// The thread's number.
    pub thread: u32,
}

impl<'s, 'a> Worker<'s, 'a> {
    /// Thread `thread`'s worker.
    pub fn new(sh: &'s Shared<'a>, thread: u32) -> Self {
        let seed = mix64(sh.args.seed ^ mix64(sh.args.round) ^ mix64(u64::from(thread) + 1));
        Worker {
            sh,
            rng: SplitMix64::new(seed),
            thread,
        }
    }

    /// A number below `n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.rng.below(n)
    }

    /// One chance in `n`.
    pub fn one_in(&mut self, n: u64) -> bool {
        self.rng.below(n) == 0
    }

    /// A keyspace of the run.
    pub fn keyspace(&mut self) -> u32 {
        self.rng.below(u64::from(self.sh.expected.keyspaces())) as u32
    }

    /// A key index.
    pub fn key(&mut self) -> u32 {
        self.rng.below(u64::from(self.sh.expected.keys())) as u32
    }

    /// With `--whitebox N` in a child of `--kill`: about once in N calls,
    /// the process kills itself here (SIGKILL), as a crash at this point.
    pub fn crash_point(&mut self) {
        if let Some(n) = self.sh.args.whitebox
            && self.sh.args.child
            && self.rng.below(n) == 0
        {
            kill_self();
        }
    }
}

/// Kills this process at once (SIGKILL): a crash at the caller's point.
fn kill_self() -> ! {
    #[cfg(target_os = "linux")]
    // SAFETY: kill(2) on our own pid takes no pointers.
    unsafe {
        libc::kill(libc::getpid(), libc::SIGKILL);
    }
    std::process::abort()
}
