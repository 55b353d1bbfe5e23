//! Reading a table's filter from the file: the whole filter (every partition
//! of a partitioned one) for a table that holds it in memory, or the one
//! block a lookup needs, through the block cache, for a table that reads its
//! filter on demand. Each block is checked to be of the family the
//! metaindex names.

use crate::error::Result;
use crate::filter::{Filter, FilterKind, PartitionedFilter, partitioned};
use crate::sst::format::{BLOCK_TRAILER_LEN, BlockHandle};

use super::{Table, TableGet};

impl Table {
    /// Opens the filter block at `h` (a whole filter or one partition),
    /// checking it is of the metaindex's family.
    fn open_filter_block(&self, h: BlockHandle, what: &str, bytes: &[u8]) -> Result<Filter> {
        let name = self.filter_name.as_deref().unwrap_or_default();
        let f =
            Filter::open(bytes).map_err(|e| self.corruption(h.offset, format!("{what}: {e}")))?;
        match (FilterKind::from_name(name), f.kind()) {
            (Some(want), Some(got)) if want != got => Err(self.corruption(
                h.offset,
                format!("{what} is {got:?}, metaindex says {name}"),
            )),
            _ => Ok(f),
        }
    }

    /// Reads the whole filter from the file (every partition of a
    /// partitioned one), bypassing the block cache: what the store pins
    /// when a table opened with
    /// [`TableOpenOptions::filter_on_demand`](super::TableOpenOptions::filter_on_demand)
    /// gets a place in its filter memory budget. `None` if the table has no
    /// filter; [`Filter::Unusable`] for a family this build does not know.
    pub fn load_filter(&self) -> Result<Option<Filter>> {
        let (Some(name), Some(h)) = (&self.filter_name, self.filter_handle) else {
            return Ok(None);
        };
        if FilterKind::from_name(name).is_none() {
            return Ok(Some(Filter::Unusable {
                reason: format!("unknown filter policy {name:?}"),
            }));
        }
        if self.filter_partitions.is_empty() {
            let bytes = self.read_raw(h, "filter")?;
            return self.open_filter_block(h, "filter block", &bytes).map(Some);
        }
        let mut parts = Vec::with_capacity(self.filter_partitions.len());
        for (i, &ph) in self.filter_partitions.iter().enumerate() {
            let what = format!("filter partition {i}");
            let bytes = self.read_raw(ph, &what)?;
            parts.push(self.open_filter_block(ph, &what, &bytes)?);
        }
        PartitionedFilter::new(parts)
            .map(|p| Some(Filter::Partitioned(p)))
            .map_err(|e| self.corruption(h.offset, format!("partitioned filter: {e}")))
    }

    /// Probes the filter from the file for a table whose filter is not held
    /// in memory: reads the block `hash` needs (its partition, or the whole
    /// filter) through the block cache, counting the read in `r`.
    pub(super) fn probe_on_demand(&self, hash: u64, r: &mut TableGet) -> Result<bool> {
        let Some(whole) = self.filter_handle else {
            return Ok(true);
        };
        let (h, what) = if self.filter_partitions.is_empty() {
            (whole, "filter block".to_string())
        } else {
            let i = partitioned::partition_of(hash, self.filter_partitions.len());
            (self.filter_partitions[i], format!("filter partition {i}"))
        };
        let cache = self.cache.as_deref().filter(|c| c.is_enabled());
        let bytes = match cache.and_then(|c| c.get(self.file_id, h.offset)) {
            Some(b) => {
                r.filter_cache_hits += 1;
                b
            }
            None => {
                let file = self.file.get()?;
                r.filter_blocks_read += 1;
                r.filter_bytes_read +=
                    file.transfer_len(h.offset, h.size as usize + BLOCK_TRAILER_LEN);
                let b = self.read_raw_from(file.as_ref(), h, &what)?;
                if let Some(c) = cache {
                    c.insert(self.file_id, h.offset, b.clone());
                }
                b
            }
        };
        let f = self.open_filter_block(h, &what, &bytes)?;
        Ok(f.may_contain(hash))
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_tables::build;
    use super::*;
    use crate::sst::{TableBuilderOptions, TableOpenOptions};

    #[test]
    fn unknown_filter_policy_reads_without_filter() {
        let dir = tempfile::tempdir().unwrap();
        let path = build(dir.path(), 50, TableBuilderOptions::default());
        // Rename "filter.blocked512" to "filter.blocked51X" in the metaindex and
        // properties, re-checksumming both blocks, as a future writer would.
        let mut bytes = std::fs::read(&path).unwrap();
        let t = Table::open(&path, TableOpenOptions::default()).unwrap();
        let footer = *t.footer();
        let ph = t.properties_handle;
        drop(t);
        for h in [footer.metaindex, ph] {
            let start = h.offset as usize;
            let end = start + h.size as usize;
            let payload = &mut bytes[start..end];
            let pos = payload
                .windows(10)
                .position(|w| w == b"blocked512")
                .unwrap();
            payload[pos + 9] = b'X';
            let tr =
                crate::sst::format::block_trailer(footer.checksum, &bytes[start..end], 0, h.offset);
            bytes[end..end + 5].copy_from_slice(&tr);
        }
        std::fs::write(&path, &bytes).unwrap();
        let t = Table::open(&path, TableOpenOptions::default()).unwrap();
        assert!(!t.filter().unwrap().is_usable());
        assert_eq!(t.filter_policy_name(), Some("blocked51X"));
        let r = t.get_unhashed(b"k000010").unwrap();
        assert!(r.filter_unusable && !r.filter_checked && r.found());
        let r = t.get_unhashed(b"k000010x").unwrap();
        assert!(r.filter_unusable && !r.found() && r.blocks_read == 1);
        t.verify_all().unwrap();
    }
}
