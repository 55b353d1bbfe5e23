//! An embeddable log-structured key-value store whose SSTables each carry a
//! filter, so that a read skips every file whose filter says "absent".
//!
//! The default filter is a cache-blocked Bloom filter: 512 bits, one 64-byte
//! cache line, per key. Every file records the filter policy that built it,
//! every block on disk is checksummed, and the store counts, per level and per
//! file, how many reads each filter saved and how many it let through falsely.
//!
//! # Example
//!
//! ```
//! use bloomlsm::{Db, FilterKind, FilterOptions, FilterPolicy, Options, WriteBatch};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = tempfile::tempdir()?; // a store is a directory of files
//! let opts = Options::default()
//!     // blocked512 at 10 bits/key everywhere is the default; here: Monkey at 10 b/k on average
//!     .filters(FilterOptions::monkey(FilterKind::Blocked512, 10.0))
//!     .sync_writes(true); // fdatasync every write before acknowledging it
//! let db = Db::open(dir.path(), opts)?;
//! db.put(b"apple", b"red")?;
//! let mut batch = WriteBatch::new();
//! batch.put("banana", "yellow");
//! batch.delete("apple");
//! db.write(batch)?; // atomic
//! assert_eq!(db.get(b"banana")?.as_deref(), Some(&b"yellow"[..]));
//! let snap = db.snapshot(); // reads as of now, whatever is written next
//! db.put("cherry", "red")?;
//! for entry in db.scan("a".."z").rev() {
//!     let (key, value) = entry?;
//!     println!("{:?} = {:?}", key, value);
//! }
//! assert_eq!(snap.get("cherry")?, None);
//! drop(snap);
//! let stats = db.stats();
//! println!(
//!     "filter memory {} bytes, data-block reads per missing get {:.4}",
//!     stats.filter_bytes,
//!     stats.block_reads_per_missing_get()
//! );
//! let _ = FilterPolicy::for_fpr(FilterKind::Blocked512, 0.01)?; // the bits/key for a 1% FPR
//! db.close()?;
//! # Ok(())
//! # }
//! ```
//!
//! # Main types
//!
//! - [`Db`] is the store: `open`, [`Db::open_read_only`], `put`, `get`,
//!   `multi_get`, `delete`, atomic `write` of a [`WriteBatch`], range and
//!   prefix scans ([`DbIter`], both ways, with `seek`), [`Snapshot`]s,
//!   `flush`, `compact`, `stats`, `verify`, `close`. It is `Send + Sync`, and
//!   readers never wait for flushes or compactions.
//! - [`Options`] holds the design of a store: filters ([`FilterOptions`]: one
//!   [`FilterPolicy`] per level, hybrids, the Monkey allocation), block
//!   compression ([`CompressionOptions`]), sizes, sync mode, [`ReadMode`]
//!   (buffered or direct I/O), a filter memory budget, the [`fs::FileSystem`]
//!   every file operation goes through. The store records its design in an
//!   `OPTIONS` file and keeps it on reopen.
//! - [`FilterPolicy`], [`FilterKind`] and [`Filter`] are the blocked512,
//!   classic Bloom and Ribbon filters, sized in fractional bits per key or from a
//!   target false-positive rate with each policy's own model
//!   ([`filter::math`]).
//! - [`Stats`], [`LevelStats`], [`FileStats`] and [`IoCounters`] hold the
//!   read-path counters per level and per file, the model's predicted data-block reads
//!   next to the measured ones, and write amplification.
//! - [`Error`] makes every failure a value; damaged bytes are
//!   [`Error::Corruption`] naming the file and offset, never a panic.
//! - [`sst::Table`] is the table reader, for tools.
//! - [`workload`] holds the filter study's seeded keys and values, for
//!   measuring a store with the keys `bloomlsm bench` uses.
//!
//! # Durability
//!
//! With [`Options::sync_writes`] every acknowledged write survives a process
//! kill and, as far as the device honours `fdatasync`, a power loss; without
//! it, it survives a process kill, and a power loss may lose the last writes
//! but never reorders or half-applies them. A [`WriteBatch`] is one WAL record:
//! whole or not at all. A failed WAL or MANIFEST write poisons the store
//! ([`Error::Poisoned`]) so that nothing is acknowledged after it, and
//! recovery refuses with [`Error::Corruption`], before touching any file, a
//! store that lost files or MANIFEST edits.
//!
//! # Further documentation
//!
//! The repository holds the rest: README.md (the CLI and the filter study),
//! docs/design.md (the read, write, flush and compaction paths, concurrency,
//! durability and recovery), docs/filters.md (the filter models and their
//! measurements), docs/format.md (every byte on disk) and docs/benchmarks.md
//! (the current measurements, with their commands).
#![warn(missing_docs)]

pub(crate) mod coding;
pub mod db;
pub mod error;
pub mod filter;
pub mod fs;
pub(crate) mod key;
pub mod options;
pub(crate) mod range_tombstone;
pub mod sst;
pub mod stats;
pub(crate) mod tally;
#[cfg(test)]
pub(crate) mod test_rng;
pub mod workload;

pub use bytes::Bytes;
pub use db::iter::ScanRange;
pub use db::{
    Advice, CheckpointReport, Db, DbIter, DesignCost, IngestReport, Keyspace, KeyspaceShare,
    KeyspacesAdvice, Snapshot, WriteBatch, WriteOptions,
};
pub use error::{Error, Result};
pub use filter::PrefixExtractor;
pub use filter::{
    Filter, FilterFamily, FilterKind, FilterPolicy, KeyFilter, filter_families, key_hash,
    register_filter,
};
pub use options::{Compression, CompressionOptions, FilterOptions, Options, ReadMode, WalRecovery};
pub use stats::{
    FileStats, IoCounters, LevelStats, LevelWrites, LookupHistory, Stats, TickerValue,
};

// The README's Rust example is a doctest too.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
