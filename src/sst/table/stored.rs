//! A table's data blocks as stored, in order: what a filter-only rewrite
//! copies into a new table ([`TableBuilder::add_stored_block`]).
//!
//! The blocks are read in readahead chunks, as a compaction reads its
//! inputs, past the block cache. Each block's checksum is verified and its
//! contents decoded before it is handed out, so a damaged block is an
//! [`Error::Corruption`] naming the file and the block's offset, and the
//! bytes a copy writes are always bytes that passed the check.
//!
//! [`TableBuilder::add_stored_block`]: crate::sst::TableBuilder::add_stored_block

use bytes::Bytes;

use crate::error::{Error, Result};
use crate::sst::block::{Block, BlockError};
use crate::sst::format::{BLOCK_TRAILER_LEN, BlockHandle};

use super::index::IndexCursor;
use super::read::Readahead;
use super::{DATA, ReadStats, Table};

/// One data block of a table: its bytes as stored, checksum verified, and
/// its contents decoded. Only [`Table::stored_blocks`] makes one.
#[derive(Debug)]
pub struct StoredBlock<'a> {
    table: &'a Table,
    handle: BlockHandle,
    stored: Bytes,
    trailer: [u8; BLOCK_TRAILER_LEN],
    block: Block,
}

impl<'a> StoredBlock<'a> {
    /// The table the block belongs to.
    pub fn table(&self) -> &'a Table {
        self.table
    }

    /// The payload as stored (compressed if [`block_type`](Self::block_type)
    /// says so), without its trailer.
    pub fn stored(&self) -> &[u8] {
        &self.stored
    }

    /// The trailer's type byte (0 = raw, 1 = LZ4, 2 = zstd).
    pub fn block_type(&self) -> u8 {
        self.trailer[0]
    }

    /// The trailer as stored: the type byte, then the checksum, which
    /// mixes in the block's offset ([`Self::handle`]) and was verified.
    pub fn trailer(&self) -> [u8; BLOCK_TRAILER_LEN] {
        self.trailer
    }

    /// The block's contents, decompressed.
    pub fn block(&self) -> &Block {
        &self.block
    }

    /// Where the block lies in its table.
    pub fn handle(&self) -> BlockHandle {
        self.handle
    }

    /// The error for `e`, a fault found while decoding the block's entries:
    /// corruption of its table at the block's offset.
    pub fn corruption(&self, e: BlockError) -> Error {
        self.table.block_error(self.handle(), DATA, e)
    }
}

/// The data blocks of a table in order ([`Table::stored_blocks`]). After
/// an error it yields that error once, then ends.
pub struct StoredBlocks<'a> {
    table: &'a Table,
    next: usize,
    /// Where the index was last read (a two-level index's partition).
    cursor: IndexCursor,
    readahead: Readahead,
    io: ReadStats,
    done: bool,
}

impl StoredBlocks<'_> {
    /// The data-block I/O done so far.
    pub fn io(&self) -> ReadStats {
        self.io
    }
}

impl<'a> Iterator for StoredBlocks<'a> {
    type Item = Result<StoredBlock<'a>>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done || self.next >= self.table.data_blocks() {
            return None;
        }
        let i = self.next;
        self.next += 1;
        let r = self
            .table
            .block_handle(i, &mut self.cursor, &mut self.io)
            .and_then(|h| {
                self.table
                    .stored_block_ahead(h, &mut self.readahead, &mut self.io)
                    .map(|b| (h, b))
            });
        Some(match r {
            Ok((handle, (stored, trailer, block))) => Ok(StoredBlock {
                table: self.table,
                handle,
                stored,
                trailer,
                block,
            }),
            Err(e) => {
                self.done = true;
                Err(e)
            }
        })
    }
}

impl Table {
    /// The table's data blocks in order, as stored, each verified
    /// (module docs).
    pub fn stored_blocks(&self) -> StoredBlocks<'_> {
        StoredBlocks {
            table: self,
            next: 0,
            cursor: IndexCursor::default(),
            readahead: Readahead::default(),
            io: ReadStats::default(),
            done: false,
        }
    }
}
