//! [`Table::verify_all`]: every block read back from the file, past the
//! block cache, and checked against the index, the properties and the
//! filter; the first bad block is reported.

use std::cmp::Ordering;

use crate::error::Result;
use crate::filter::{key_hash, key_point, partitioned};
use crate::sst::format::show_key;

use super::{DATA, Table};

impl Table {
    /// Reads every block from disk (bypassing the cache) and checks checksums,
    /// structure, key order, index/data agreement, entry count and that the
    /// filter as stored (every partition of a partitioned one; whether or
    /// not the table holds it in memory) answers "maybe" for every user key,
    /// and the prefix filter, if any, decodes and answers "maybe" for every
    /// key's prefix, and the range filter, if any, decodes and answers
    /// "maybe" for every key's point.
    /// Reports the first bad block.
    pub fn verify_all(&self) -> Result<()> {
        let f = &self.footer;
        for (h, what) in [
            (f.metaindex, "metaindex"),
            (self.properties_handle, "properties"),
            (f.index, "index"),
        ] {
            self.read_block(h, what)?
                .check_restarts()
                .map_err(|e| self.block_error(h, what, e))?;
        }
        // The filter as stored, read back from disk (every partition, and a
        // partitioned filter's index) whether or not it is held in memory:
        // a table that reads its filter on demand is checked the same way.
        if let Some(h) = self.filter_handle
            && !self.filter_partitions.is_empty()
        {
            self.read_raw(h, "filter partition index")?;
        }
        let filter = self.load_filter()?;
        // A prefix filter that does not decode changes no answer, but it is
        // damage: reported here.
        let prefix = match (&self.prefix_filter, self.prefix_filter_handle) {
            (Some(Err(why)), Some(h)) => {
                return Err(self.corruption(h.offset, format!("prefix filter block: {why}")));
            }
            (Some(Ok(pf)), Some(h)) => Some((pf, h)),
            _ => None,
        };
        // The same for the range filter.
        let range = match (&self.range_filter, self.range_filter_handle) {
            (Some(Err(why)), Some(h)) => {
                return Err(self.corruption(h.offset, format!("range filter block: {why}")));
            }
            (Some(Ok(rf)), Some(h)) => Some((rf, h)),
            _ => None,
        };
        // Every index block that points at data blocks, read back from
        // disk: the one block, or each partition of a partitioned index.
        let index_blocks = self.index_blocks()?;
        if self.partitions.is_some() {
            for p in 0..self.index.len() {
                let h = self.index.handle(p);
                let what = format!("index partition {p}");
                self.read_block(h, &what)?
                    .check_restarts()
                    .map_err(|e| self.block_error(h, &what, e))?;
            }
        }
        let blocks = index_blocks
            .iter()
            .flat_map(|b| (0..b.len()).map(move |j| (b.key(j), b.handle(j))));
        let fmt = self.props.key_format;
        let mut entries = 0u64;
        let mut prev_key: Option<Vec<u8>> = None;
        let mut expect_offset = 0u64;
        for (i, (index_key, h)) in blocks.enumerate() {
            if h.offset != expect_offset {
                return Err(self.corruption(
                    h.offset,
                    format!(
                        "data block {i} starts at {}, expected {expect_offset}",
                        h.offset
                    ),
                ));
            }
            expect_offset = h.end_with_trailer().unwrap_or(u64::MAX);
            let block = self.read_block(h, DATA)?;
            block
                .check_restarts()
                .map_err(|e| self.block_error(h, DATA, e))?;
            let mut it = block.iter(fmt);
            let mut n = 0;
            loop {
                let at = h.offset + it.next_offset() as u64;
                if !self.block_step(&mut it, h, DATA)? {
                    break;
                }
                let key = it.key();
                match &prev_key {
                    None if key != &self.props.smallest_key[..] => {
                        return Err(self.corruption(at, "first key differs from properties"));
                    }
                    Some(p) if fmt.compare(p, key) != Ordering::Less => {
                        return Err(self.corruption(at, "keys out of order"));
                    }
                    _ => {}
                }
                if let Some(filter) = &filter {
                    let fresh = prev_key
                        .as_ref()
                        .is_none_or(|p| fmt.user_key(p) != fmt.user_key(key));
                    let hash = key_hash(fmt.user_key(key));
                    if fresh && !filter.may_contain(hash) {
                        // The block at fault: the key's partition, or the
                        // whole filter.
                        let off = match self.filter_partitions.len() {
                            0 => self.filter_handle.map_or(0, |h| h.offset),
                            n => self.filter_partitions[partitioned::partition_of(hash, n)].offset,
                        };
                        return Err(self.corruption(
                            off,
                            format!("filter rejects stored key {}", show_key(key)),
                        ));
                    }
                }
                if let Some((pf, ph)) = prefix
                    && let Some(p) = pf.extractor.prefix(fmt.user_key(key))
                    && !pf.may_contain(key_hash(p))
                {
                    return Err(self.corruption(
                        ph.offset,
                        format!("prefix filter rejects stored key {}", show_key(key)),
                    ));
                }
                if let Some((rf, rh)) = range
                    && !rf.may_contain_point(key_point(fmt.user_key(key)))
                {
                    return Err(self.corruption(
                        rh.offset,
                        format!("range filter rejects stored key {}", show_key(key)),
                    ));
                }
                prev_key = Some(key.to_vec());
                n += 1;
            }
            if n == 0 || prev_key.as_deref() != Some(index_key) {
                return Err(
                    self.corruption(h.offset, "data block's last key differs from its index key")
                );
            }
            entries += n;
        }
        if prev_key.as_deref().unwrap_or_default() != &self.props.largest_key[..] {
            return Err(self.corruption(
                self.properties_handle.offset,
                "last key differs from properties",
            ));
        }
        if entries != self.props.entries {
            return Err(self.corruption(
                self.properties_handle.offset,
                format!(
                    "{entries} entries found, properties say {}",
                    self.props.entries
                ),
            ));
        }
        Ok(())
    }
}
