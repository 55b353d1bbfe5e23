//! bloomlsm: an embeddable log-structured key-value store whose immutable
//! SSTables each carry a cache-blocked Bloom filter, built to measure how much
//! disk I/O filters save.

#![warn(missing_docs)]

pub mod db;
pub mod error;
pub mod filter;
pub mod key;
pub mod sst;
pub mod workload;

pub use db::WriteBatch;
pub use error::{Error, Result};
pub use filter::{Filter, FilterKind, FilterPolicy, key_hash};
