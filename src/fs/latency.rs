//! [`LatencyFs`]: a [`FileSystem`] that makes every read of a file opened
//! through it wait a fixed or sampled latency first, and counts the read
//! requests and their bytes: a local store made to answer as one on remote
//! storage (an object store's GETs) would, for studies of what each lookup
//! costs there. Writes, renames and listings pass through untouched.
//!
//! Each [`ReadableFile::read_exact_at`] call is one request (a block read,
//! a filter or index load, a compaction's read of its input); a file's
//! length is not one. The wait goes through a [`Sleeper`], so tests can
//! count the latency applied instead of spending it.
//!
//! ```
//! use std::sync::Arc;
//! use std::time::Duration;
//! use bloomlsm::fs::RealFs;
//! use bloomlsm::fs::latency::{Latency, LatencyFs};
//!
//! let fs = Arc::new(LatencyFs::new(
//!     RealFs::shared(),
//!     Latency::Fixed(Duration::from_micros(200)),
//! ));
//! // Give `fs.clone()` to the store as `Options::fs`; later
//! // `fs.reads().requests` counts what the store asked for.
//! assert_eq!(fs.reads().requests, 0);
//! ```

use std::fmt;
use std::io;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use super::{FileLock, FileSystem, ReadableFile, WritableFile};
use crate::workload::{SplitMix64, mix64};

/// `Φ⁻¹(0.99)`: the standard normal's 99th percentile.
const Z99: f64 = 2.326_347_874;

/// How long each read request waits.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Latency {
    /// The same wait for every request.
    Fixed(Duration),
    /// A log-normal wait with this median and 99th percentile (`p99 >=
    /// median`), the long-tailed shape of object-store first-byte
    /// latencies; drawn per request from a seeded sequence, so a run's
    /// waits are the same from run to run.
    LogNormal {
        /// The median wait.
        median: Duration,
        /// The 99th-percentile wait.
        p99: Duration,
    },
}

impl Latency {
    /// The wait of request number `i` (a pure function of `i` and `seed`).
    pub fn sample(&self, seed: u64, i: u64) -> Duration {
        match *self {
            Latency::Fixed(d) => d,
            Latency::LogNormal { median, p99 } => {
                let m = median.as_secs_f64();
                if m <= 0.0 {
                    return Duration::ZERO;
                }
                let sigma = (p99.as_secs_f64() / m).max(1.0).ln() / Z99;
                let mut rng = SplitMix64::new(mix64(seed ^ mix64(i)));
                // Box-Muller; 1 - unit() is in (0, 1], so its log is finite.
                let (u1, u2) = (1.0 - rng.unit(), rng.unit());
                let z = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
                Duration::try_from_secs_f64(m * (sigma * z).exp()).unwrap_or(Duration::MAX)
            }
        }
    }
}

/// Spends a request's latency: [`ThreadSleep`] sleeps; a test's sleeper
/// may record it instead.
pub trait Sleeper: Send + Sync + fmt::Debug {
    /// Waits `d`.
    fn sleep(&self, d: Duration);
}

/// Sleeps the calling thread.
#[derive(Clone, Copy, Debug, Default)]
pub struct ThreadSleep;

impl Sleeper for ThreadSleep {
    fn sleep(&self, d: Duration) {
        if !d.is_zero() {
            std::thread::sleep(d);
        }
    }
}

/// What the files of a [`LatencyFs`] have been asked for so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReadCount {
    /// Read requests (`read_exact_at` calls).
    pub requests: u64,
    /// Bytes they asked for.
    pub bytes: u64,
    /// The latency applied to them in total.
    pub latency: Duration,
}

#[derive(Debug, Default)]
struct Counters {
    requests: AtomicU64,
    bytes: AtomicU64,
    latency_ns: AtomicU64,
}

#[derive(Debug)]
struct Shared {
    latency: Latency,
    seed: u64,
    sleeper: Arc<dyn Sleeper>,
    counters: Counters,
}

impl Shared {
    fn read(&self, len: usize) {
        let i = self.counters.requests.fetch_add(1, Ordering::Relaxed);
        self.counters.bytes.fetch_add(len as u64, Ordering::Relaxed);
        let d = self.latency.sample(self.seed, i);
        let ns = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        self.counters.latency_ns.fetch_add(ns, Ordering::Relaxed);
        self.sleeper.sleep(d);
    }
}

/// A [`FileSystem`] whose read requests wait a [`Latency`] and are counted
/// ([`LatencyFs::reads`]); every other operation is `inner`'s.
#[derive(Debug)]
pub struct LatencyFs {
    inner: Arc<dyn FileSystem>,
    shared: Arc<Shared>,
}

impl LatencyFs {
    /// Reads through `inner`, each waiting `latency` (by sleeping).
    pub fn new(inner: Arc<dyn FileSystem>, latency: Latency) -> Self {
        Self::with_sleeper(inner, latency, 0, Arc::new(ThreadSleep))
    }

    /// As [`LatencyFs::new`], the log-normal waits drawn from `seed`, and
    /// spent by `sleeper`.
    pub fn with_sleeper(
        inner: Arc<dyn FileSystem>,
        latency: Latency,
        seed: u64,
        sleeper: Arc<dyn Sleeper>,
    ) -> Self {
        LatencyFs {
            inner,
            shared: Arc::new(Shared {
                latency,
                seed,
                sleeper,
                counters: Counters::default(),
            }),
        }
    }

    /// The latency each read waits.
    pub fn latency(&self) -> Latency {
        self.shared.latency
    }

    /// The read requests so far, by every file opened through this file
    /// system.
    pub fn reads(&self) -> ReadCount {
        let c = &self.shared.counters;
        ReadCount {
            requests: c.requests.load(Ordering::Relaxed),
            bytes: c.bytes.load(Ordering::Relaxed),
            latency: Duration::from_nanos(c.latency_ns.load(Ordering::Relaxed)),
        }
    }

    fn wrap(&self, file: Arc<dyn ReadableFile>) -> Arc<dyn ReadableFile> {
        Arc::new(LatencyFile {
            inner: file,
            shared: Arc::clone(&self.shared),
        })
    }
}

/// A file of a [`LatencyFs`]: each read waits, then reads.
#[derive(Debug)]
struct LatencyFile {
    inner: Arc<dyn ReadableFile>,
    shared: Arc<Shared>,
}

impl ReadableFile for LatencyFile {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.shared.read(buf.len());
        self.inner.read_exact_at(buf, offset)
    }

    fn len(&self) -> io::Result<u64> {
        self.inner.len()
    }

    fn transfer_len(&self, offset: u64, len: usize) -> u64 {
        self.inner.transfer_len(offset, len)
    }

    fn advise(&self, advice: crate::fs::ReadAdvice) {
        self.inner.advise(advice);
    }

    fn identity(&self) -> Option<crate::fs::FileIdentity> {
        self.inner.identity()
    }
}

impl FileSystem for LatencyFs {
    fn create_new(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        self.inner.create_new(path)
    }
    fn create_truncate(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        self.inner.create_truncate(path)
    }
    fn open_read(&self, path: &Path) -> io::Result<Arc<dyn ReadableFile>> {
        self.inner.open_read(path).map(|f| self.wrap(f))
    }
    fn open_read_direct(&self, path: &Path) -> io::Result<Arc<dyn ReadableFile>> {
        self.inner.open_read_direct(path).map(|f| self.wrap(f))
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.inner.rename(from, to)
    }
    fn remove_file(&self, path: &Path) -> io::Result<()> {
        self.inner.remove_file(path)
    }
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        self.inner.sync_dir(dir)
    }
    fn list_dir(&self, dir: &Path) -> io::Result<Vec<std::ffi::OsString>> {
        self.inner.list_dir(dir)
    }
    fn file_len(&self, path: &Path) -> io::Result<u64> {
        self.inner.file_len(path)
    }
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        self.inner.create_dir_all(dir)
    }
    fn lock(&self, path: &Path) -> io::Result<Option<Box<dyn FileLock>>> {
        self.inner.lock(path)
    }
    fn hard_link(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.inner.hard_link(from, to)
    }
    fn remove_dir(&self, dir: &Path) -> io::Result<()> {
        self.inner.remove_dir(dir)
    }
    fn remote_reads(&self) -> bool {
        self.inner.remote_reads() || self.latency() != Latency::Fixed(Duration::ZERO)
    }
    fn table_location(&self, dir: &Path) -> Option<super::TableLocation> {
        self.inner.table_location(dir)
    }
    fn take_writer(&self, dir: &Path) -> io::Result<()> {
        self.inner.take_writer(dir)
    }
    fn keeps_local_files(&self, dir: &Path) -> bool {
        self.inner.keeps_local_files(dir)
    }
    fn refresh(&self) {
        self.inner.refresh()
    }
    fn put_checkpoint(
        &self,
        dir: &Path,
        name: &str,
        checkpoint: &super::kept::KeptCheckpoint,
    ) -> io::Result<()> {
        self.inner.put_checkpoint(dir, name, checkpoint)
    }
    fn list_checkpoints(&self, dir: &Path) -> io::Result<Vec<super::kept::CheckpointInfo>> {
        self.inner.list_checkpoints(dir)
    }
    fn delete_checkpoint(&self, dir: &Path, name: &str) -> io::Result<()> {
        self.inner.delete_checkpoint(dir, name)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;
    use crate::fs::RealFs;

    /// Records the waits instead of sleeping.
    #[derive(Debug, Default)]
    struct Recorded(Mutex<Vec<Duration>>);

    impl Sleeper for Recorded {
        fn sleep(&self, d: Duration) {
            self.0.lock().unwrap().push(d);
        }
    }

    fn file_of(dir: &Path, len: usize) -> std::path::PathBuf {
        let p = dir.join("f");
        std::fs::write(&p, vec![7u8; len]).unwrap();
        p
    }

    /// Each read is one request, counted with its bytes, and waits the
    /// fixed latency once; a file's length is no request.
    #[test]
    fn fixed_latency_per_request_counted_exactly() {
        let dir = tempfile::tempdir().unwrap();
        let path = file_of(dir.path(), 4096);
        let sleeper = Arc::new(Recorded::default());
        let d = Duration::from_micros(250);
        let fs = LatencyFs::with_sleeper(RealFs::shared(), Latency::Fixed(d), 1, sleeper.clone());
        let f = fs.open_read(&path).unwrap();
        let g = fs.open_read(&path).unwrap();
        let mut buf = [0u8; 100];
        for i in 0..10 {
            f.read_exact_at(&mut buf, i * 100).unwrap();
        }
        g.read_exact_at(&mut buf[..10], 0).unwrap();
        assert_eq!(f.len().unwrap(), 4096);
        assert_eq!(buf[0], 7);
        let r = fs.reads();
        assert_eq!(r.requests, 11);
        assert_eq!(r.bytes, 1010);
        assert_eq!(r.latency, d * 11);
        assert_eq!(*sleeper.0.lock().unwrap(), vec![d; 11]);
        // A failed read (past the end) is a request too, and still fails.
        assert!(f.read_exact_at(&mut buf, 4090).is_err());
        assert_eq!(fs.reads().requests, 12);
        // Writes pass through uncounted.
        let mut w = fs.create_new(&dir.path().join("w")).unwrap();
        w.write_all(b"abc").unwrap();
        assert_eq!(fs.file_len(&dir.path().join("w")).unwrap(), 3);
        assert_eq!(fs.reads().requests, 12);
    }

    /// Log-normal waits have about the median and P99 asked for, and are
    /// the same for the same seed.
    #[test]
    fn lognormal_latency_has_its_quantiles() {
        let l = Latency::LogNormal {
            median: Duration::from_millis(10),
            p99: Duration::from_millis(50),
        };
        let mut v: Vec<Duration> = (0..20_000).map(|i| l.sample(3, i)).collect();
        assert_eq!(l.sample(3, 17), v[17]);
        v.sort_unstable();
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        let (p50, p99) = (ms(v[10_000]), ms(v[19_800]));
        assert!((9.5..10.5).contains(&p50), "p50 {p50}");
        assert!((45.0..55.0).contains(&p99), "p99 {p99}");
        assert_eq!(
            Latency::LogNormal {
                median: Duration::ZERO,
                p99: Duration::ZERO
            }
            .sample(3, 1),
            Duration::ZERO
        );
    }

    /// Behind a store: gets of a flushed table are counted as requests.
    #[test]
    fn store_reads_are_counted() {
        let dir = tempfile::tempdir().unwrap();
        let sleeper = Arc::new(Recorded::default());
        let fs = Arc::new(LatencyFs::with_sleeper(
            RealFs::shared(),
            Latency::Fixed(Duration::from_micros(1)),
            1,
            sleeper,
        ));
        // Every data-block read reaches the file system.
        let opts = crate::Options {
            fs: fs.clone(),
            block_cache_capacity: 0,
            ..crate::Options::default()
        };
        let db = crate::Db::open(dir.path(), opts).unwrap();
        for i in 0..100u32 {
            db.put(i.to_be_bytes(), b"v").unwrap();
        }
        db.flush().unwrap();
        let before = fs.reads().requests;
        assert_eq!(
            db.get(7u32.to_be_bytes()).unwrap().as_deref(),
            Some(&b"v"[..])
        );
        assert!(fs.reads().requests > before);
        db.close().unwrap();
    }
}
