//! Point lookups: [`Table::get`] and its variants, which read at most one
//! data block (and one index partition, for a partitioned index not held in
//! memory), and [`TableGet`], what a lookup found and what it cost.

use bytes::Bytes;

use crate::error::Result;
use crate::filter::key_hash;

use super::{DATA, IndexCursor, Preloaded, ReadStats, Table};

/// The outcome of [`Table::get`], with what it cost, for the engine's accounting.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TableGet {
    /// The first entry whose key is `>=` the lookup key, if it has the lookup's
    /// user key.
    pub entry: Option<(Bytes, Bytes)>,
    /// The user key lies outside the table's key range: nothing was read.
    pub key_range_skipped: bool,
    /// A usable filter was probed.
    pub filter_checked: bool,
    /// The filter ruled the key out: no data block was read (an I/O saved).
    pub filter_negative: bool,
    /// The table has a filter this build cannot read (unknown policy); the
    /// lookup went to the data block as if there were no filter.
    pub filter_unusable: bool,
    /// The table holds some entry with the lookup's user key (possibly only
    /// versions newer than the one asked for). Known without extra I/O.
    pub user_key_found: bool,
    /// Data blocks read from disk (0 or 1).
    pub blocks_read: u64,
    /// Data blocks served by the cache (0 or 1).
    pub cache_hits: u64,
    /// Bytes read from disk (as stored, trailer included).
    pub bytes_read: u64,
    /// Filter blocks (whole filters or partitions) read from disk for a
    /// filter not held in memory (0 or 1).
    pub filter_blocks_read: u64,
    /// Bytes of those filter blocks (trailer included; whole sectors with
    /// direct reads).
    pub filter_bytes_read: u64,
    /// Filter blocks served by the block cache (0 or 1).
    pub filter_cache_hits: u64,
    /// Index partitions read from disk for a partitioned index not held in
    /// memory (0 or 1).
    pub index_blocks_read: u64,
    /// Bytes of those index partitions (trailer included; whole sectors
    /// with direct reads).
    pub index_bytes_read: u64,
    /// Index partitions served by the block cache (0 or 1).
    pub index_cache_hits: u64,
}

impl TableGet {
    /// True if an entry was returned.
    pub fn found(&self) -> bool {
        self.entry.is_some()
    }

    /// The filter said "maybe" but the file does not hold the user key: a data
    /// block was read for nothing.
    pub fn false_positive(&self) -> bool {
        self.filter_checked && !self.filter_negative && !self.user_key_found
    }

    /// The filter said "maybe" and the user key is in the file.
    pub fn true_positive(&self) -> bool {
        self.filter_checked && !self.filter_negative && self.user_key_found
    }

    fn add_io(&mut self, io: &ReadStats) {
        self.blocks_read += io.blocks_read;
        self.cache_hits += io.cache_hits;
        self.bytes_read += io.bytes_read;
        self.index_blocks_read += io.index_blocks_read;
        self.index_cache_hits += io.index_cache_hits;
        self.index_bytes_read += io.index_bytes_read;
    }
}

impl Table {
    /// Point lookup: the first entry whose key is `>= key` in the table's
    /// order, returned only if its user key equals `key`'s user key. `hash`
    /// must be [`key_hash`] of that user key (the engine hashes once per
    /// lookup). Reads at most one data block; none if the key is outside the
    /// table's range or the filter rules it out.
    pub fn get(&self, key: &[u8], hash: u64) -> Result<TableGet> {
        self.get_filtered(key, hash, None)
    }

    /// [`get`](Self::get) with the filter's answer for `hash` already known
    /// (`filter_says`, from a batch probe of a usable filter); `None` probes
    /// the filter here.
    pub(crate) fn get_filtered(
        &self,
        key: &[u8],
        hash: u64,
        filter_says: Option<bool>,
    ) -> Result<TableGet> {
        let uk = self.props.key_format.user_key(key);
        if self.data_blocks() == 0
            || uk < &self.props.smallest_user_key[..]
            || uk > &self.props.largest_user_key[..]
        {
            return Ok(TableGet {
                key_range_skipped: true,
                ..TableGet::default()
            });
        }
        self.get_in_range(key, hash, filter_says)
    }

    /// [`get_filtered`](Self::get_filtered) for a key the caller has found
    /// inside the table's key range (the engine's level index holds every
    /// file's range, so it checks without touching the table).
    pub(crate) fn get_in_range(
        &self,
        key: &[u8],
        hash: u64,
        filter_says: Option<bool>,
    ) -> Result<TableGet> {
        self.get_in_range_with(key, hash, filter_says, None)
    }

    /// [`get_in_range`](Self::get_in_range), its data block taken from
    /// `preloaded` when it is there (read there together with its
    /// neighbours) rather than from the cache or the file.
    pub(crate) fn get_in_range_with(
        &self,
        key: &[u8],
        hash: u64,
        filter_says: Option<bool>,
        preloaded: Option<&mut Preloaded>,
    ) -> Result<TableGet> {
        let mut r = TableGet::default();
        if self.data_blocks() == 0 {
            r.key_range_skipped = true;
            return Ok(r);
        }
        let says = match (&self.filter, &self.filter_info) {
            (_, None) => None,
            (_, Some(info)) if !info.is_usable() => {
                r.filter_unusable = true;
                None
            }
            (Some(f), _) => Some(filter_says.unwrap_or_else(|| f.may_contain(hash))),
            (None, _) => match filter_says {
                Some(s) => Some(s),
                None => Some(self.probe_on_demand(hash, &mut r)?),
            },
        };
        if let Some(says) = says {
            r.filter_checked = true;
            if !says {
                r.filter_negative = true;
                return Ok(r);
            }
        }
        let mut io = ReadStats::default();
        let found = self.get_from_blocks(key, &mut r, &mut io, preloaded);
        r.add_io(&io);
        found?;
        Ok(r)
    }

    /// The data-block part of a lookup: the block the index names for
    /// `key`, searched; what it finds goes into `r`, what it reads into `io`.
    fn get_from_blocks(
        &self,
        key: &[u8],
        r: &mut TableGet,
        io: &mut ReadStats,
        preloaded: Option<&mut Preloaded>,
    ) -> Result<()> {
        let fmt = self.props.key_format;
        let uk = fmt.user_key(key);
        let mut cur = IndexCursor::default();
        let i = self.find_block(key, &mut cur, io)?;
        if i == self.data_blocks() {
            // Past the largest key, e.g. an older sequence of the last user key.
            r.user_key_found = fmt.user_key(&self.props.largest_key) == uk;
            return Ok(());
        }
        let h = self.block_handle(i, &mut cur, io)?;
        let block = match preloaded.and_then(|p| p.take(h, io)) {
            Some(b) => b,
            None => self.data_block(h, io)?,
        };
        let mut it = block.iter(fmt);
        let found = it.seek(key).map_err(|e| self.block_error(h, DATA, e))?;
        if !found {
            return Err(
                self.corruption(h.offset, "data block has no key at or after its index key")
            );
        }
        let prev_match = match it.prev_user_key_match() {
            Some(m) => m,
            None => i > 0 && self.block_user_key_is(i - 1, uk, &mut cur, io)?,
        };
        if fmt.user_key(it.key()) == uk {
            r.user_key_found = true;
            r.entry = Some((Bytes::copy_from_slice(it.key()), it.value()));
        } else {
            r.user_key_found = prev_match;
        }
        Ok(())
    }

    /// Convenience for tests and tools: [`get`](Self::get) with the hash
    /// computed here.
    pub fn get_unhashed(&self, key: &[u8]) -> Result<TableGet> {
        self.get(key, key_hash(self.props.key_format.user_key(key)))
    }
}

#[cfg(test)]
mod tests {
    use std::fs::File;
    use std::sync::Arc;

    use super::super::test_tables::{build, open_cached};
    use super::*;
    use crate::error::Error;
    use crate::sst::{BlockCache, KeyFormat, TableBuilder, TableBuilderOptions, TableOpenOptions};

    #[test]
    fn get_reads_one_block_and_uses_cache() {
        let dir = tempfile::tempdir().unwrap();
        let opts = TableBuilderOptions {
            block_size: 256,
            ..Default::default()
        };
        let path = build(dir.path(), 500, opts);
        let cache = Arc::new(BlockCache::new(1 << 20));
        let t = open_cached(&path, &cache);
        assert!(t.data_blocks() > 10);
        let r = t.get_unhashed(b"k000123").unwrap();
        assert_eq!(r.entry.as_ref().unwrap().1, &b"v123"[..]);
        assert_eq!((r.blocks_read, r.cache_hits), (1, 0));
        assert!(r.true_positive() && !r.false_positive());
        let r = t.get_unhashed(b"k000123").unwrap();
        assert_eq!((r.blocks_read, r.cache_hits, r.bytes_read), (0, 1, 0));
        let r = t.get_unhashed(b"zzz").unwrap();
        assert!(r.key_range_skipped && r.entry.is_none() && r.blocks_read == 0);
        // Absent keys inside the range: filter negative or a false positive.
        let mut negatives = 0;
        for i in 0..499 {
            let r = t.get_unhashed(format!("k{i:06}x").as_bytes()).unwrap();
            assert!(r.entry.is_none() && r.filter_checked);
            if r.filter_negative {
                negatives += 1;
                assert_eq!(r.blocks_read + r.cache_hits, 0);
            } else {
                assert!(r.false_positive());
            }
        }
        assert!(negatives > 450, "{negatives}");
        assert!(cache.stats().hits >= 1);
        assert!(t.filter_memory_bytes() > 0 && t.index_memory_bytes() > 0);
        t.verify_all().unwrap();
    }

    #[test]
    fn internal_keys_and_versions() {
        use crate::key::{ValueKind, make_internal_key};
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("i.sst");
        let mut b = TableBuilder::new(
            File::create(&path).unwrap(),
            &path,
            TableBuilderOptions {
                key_format: KeyFormat::Internal,
                block_size: 64,
                ..Default::default()
            },
        );
        // user key "a": seqs 9 (value), 5 (deletion), 2 (value); "b": 7.
        let entries = [
            (make_internal_key(b"a", 9, ValueKind::Value), b"a9".to_vec()),
            (make_internal_key(b"a", 5, ValueKind::Deletion), vec![]),
            (make_internal_key(b"a", 2, ValueKind::Value), b"a2".to_vec()),
            (make_internal_key(b"b", 7, ValueKind::Value), b"b7".to_vec()),
        ];
        for (k, v) in &entries {
            b.add(k, v).unwrap();
        }
        // Same full key again, and an older "b" after... "a" version out of order.
        assert!(matches!(
            b.add(&entries[3].0, b"x"),
            Err(Error::InvalidArgument(_))
        ));
        assert!(matches!(
            b.add(&make_internal_key(b"b", 8, ValueKind::Value), b"x"),
            Err(Error::InvalidArgument(_))
        ));
        assert!(matches!(
            b.add(b"short", b""),
            Err(Error::InvalidArgument(_))
        ));
        let s = b.finish().unwrap();
        assert_eq!(s.properties.filter_keys, 2, "one hash per user key");
        assert_eq!(s.properties.deletions, Some(1));
        let t = Table::open(&path, TableOpenOptions::default()).unwrap();
        let get = |seq| {
            t.get_unhashed(&make_internal_key(b"a", seq, ValueKind::Value))
                .unwrap()
        };
        assert_eq!(get(100).entry.unwrap().1, &b"a9"[..]);
        assert_eq!(get(6).entry.unwrap().0, &entries[1].0[..]);
        assert_eq!(get(2).entry.unwrap().1, &b"a2"[..]);
        let r = get(1);
        assert!(r.entry.is_none() && r.user_key_found && !r.false_positive());
        let r = t
            .get_unhashed(&make_internal_key(b"b", 3, ValueKind::Value))
            .unwrap();
        assert!(r.entry.is_none() && r.user_key_found);
        t.verify_all().unwrap();
        let all: Vec<_> = t.iter().map(|r| r.unwrap()).collect();
        assert_eq!(all.len(), 4);
    }
}
