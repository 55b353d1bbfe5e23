//! bloomlsm: an embeddable log-structured key-value store whose immutable
//! SSTables each carry a cache-blocked Bloom filter, built to measure how much
//! disk I/O filters save. The README follows (its Rust example is a doctest).
#![doc = include_str!("../README.md")]
#![warn(missing_docs)]

pub(crate) mod coding;
pub mod db;
pub mod error;
pub mod filter;
pub mod fs;
pub(crate) mod key;
pub mod options;
pub mod sst;
pub mod stats;
#[cfg(test)]
pub(crate) mod test_rng;

pub use bytes::Bytes;
pub use db::iter::ScanRange;
pub use db::{Db, DbIter, Snapshot, WriteBatch};
pub use error::{Error, Result};
pub use filter::{Filter, FilterKind, FilterPolicy, key_hash};
pub use options::{Compression, CompressionOptions, FilterOptions, Options, ReadMode};
pub use stats::{FileStats, IoCounters, LevelStats, LevelWrites, Stats};
