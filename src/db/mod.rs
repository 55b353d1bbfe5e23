//! The store's durability layer: the record log shared by the write-ahead log
//! and the MANIFEST, write batches, the memtable, and the file names of a
//! store directory. (The `Db` type that ties them together comes later.)

pub mod batch;
pub mod coding;
pub mod filename;
pub mod log;
pub mod manifest;
pub mod memtable;
pub mod wal;

pub use batch::{BatchOp, WriteBatch};
pub use filename::FileKind;
pub use log::{LogReader, LogWriter, Skipped, TailDropped};
pub use manifest::{FileMeta, FilterMeta, Manifest, RecoverReport, RecoveredState, VersionEdit};
pub use memtable::{LookupResult, MemTable};
pub use wal::{ReplayReport, Wal};
