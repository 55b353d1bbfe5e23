//! SSTables: immutable sorted files of key/value entries, each with one
//! filter block, an in-memory index and checksummed blocks.
//!
//! - [`format`](mod@format): varints, block handles, trailers and checksums, the footer,
//!   key orders.
//! - [`block`]: prefix-compressed sorted blocks with restart points.
//! - [`builder`]: [`TableBuilder`] writes a table.
//! - [`table`]: [`Table`] opens, verifies and reads one.
//! - [`properties`]: the properties block.
//! - [`compression`]: the block codecs (none, LZ4, zstd) and their specs.
//! - [`filter_block`]: a table's filter on disk: whole, or hash-partitioned.
//! - [`cache`]: the shared [`BlockCache`] of data blocks.
//! - [`table_cache`]: the [`TableCache`], a bound on the table files held
//!   open at once.
//!
//! Tables the store writes hold [`InternalKey`]s ([`KeyFormat::Internal`]):
//! decode a key from [`Table::iter`] with [`InternalKey::parse`].
//!
//! The byte-level format is in `docs/format.md`.

pub mod block;
pub mod builder;
pub mod cache;
pub mod compression;
pub mod filter_block;
#[doc(hidden)]
pub mod format;
pub mod properties;
pub mod table;
pub mod table_cache;

pub use crate::key::{InternalKey, ValueKind};
pub use builder::{TableBuilder, TableBuilderOptions, TableSummary, UnsyncedTable};
pub use cache::{BlockCache, CacheStats};
pub use compression::Compression;
pub use filter_block::FilterInfo;
pub use format::{
    BlockHandle, ChecksumType, FORMAT_VERSION, FORMAT_VERSION_COMPRESSED,
    FORMAT_VERSION_PARTITIONED_FILTER, FORMAT_VERSION_UNCOMPRESSED, Footer, KeyFormat,
};
pub use properties::TableProperties;
pub(crate) use table::{Preloaded, adjacent_runs};
pub use table::{
    ReadStats, StoredBlock, StoredBlocks, Table, TableGet, TableIter, TableOpenOptions,
};
pub use table_cache::TableCache;
