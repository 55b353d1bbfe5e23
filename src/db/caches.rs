//! The caches a store's tables share: the block cache of data blocks and
//! the table cache that bounds their open files; every table the store
//! opens (at recovery, after a flush, a compaction or a load) opens through
//! [`Caches::table_options`].

use std::sync::Arc;

use crate::options::Options;
use crate::sst::{BlockCache, TableCache, TableOpenOptions};

/// The block cache (if enabled) and the table cache of one open store.
#[derive(Clone, Debug)]
pub(crate) struct Caches {
    pub blocks: Option<Arc<BlockCache>>,
    pub tables: Arc<TableCache>,
    /// Added to a table's number to name it in the block cache: 0 for the
    /// store's own tables, the keyspace id shifted past any file number for
    /// a keyspace's (each keyspace numbers its files from 1 in its own
    /// directory, and the keyspaces share the caches).
    pub id_base: u64,
}

impl Caches {
    /// The caches `opts` asks for.
    pub(crate) fn new(opts: &Options) -> Self {
        Caches {
            blocks: (opts.block_cache_capacity > 0)
                .then(|| Arc::new(BlockCache::new(opts.block_cache_capacity))),
            tables: Arc::new(TableCache::new(opts.table_cache_capacity())),
            id_base: 0,
        }
    }

    /// The same caches, for the tables of keyspace `id`.
    pub(crate) fn for_keyspace(&self, id: u32) -> Self {
        Caches {
            id_base: u64::from(id) << 44,
            ..self.clone()
        }
    }

    /// How the store opens table `number`.
    pub(crate) fn table_options(&self, number: u64, opts: &Options) -> TableOpenOptions {
        TableOpenOptions {
            file_id: self.id_base | number,
            cache: self.blocks.clone(),
            fs: Some(opts.fs.clone()),
            read_mode: opts.read_mode,
            filter_on_demand: opts.metadata_memory_budget.is_some(),
            index_on_demand: opts.metadata_memory_budget.is_some(),
            table_cache: Some(self.tables.clone()),
        }
    }
}
