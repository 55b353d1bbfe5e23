//! Sorted blocks: the format of data, index, properties and metaindex blocks.
//!
//! A block is a run of entries followed by a restart array:
//!
//! ```text
//! entry*  restart: u32 LE * num_restarts  num_restarts: u32 LE
//! entry = varint32 shared | varint32 non_shared | varint32 value_len
//!         | key[shared..] (non_shared bytes) | value (value_len bytes)
//! ```
//!
//! Each key stores only the suffix it does not share with the previous key
//! (LevelDB's prefix compression). Every `restart_interval`-th entry is a
//! *restart point*: it stores its whole key (`shared = 0`) and its offset is
//! listed in the restart array, so a seek binary-searches the restarts and then
//! scans at most `restart_interval` entries.
//!
//! The reader trusts nothing: every length is checked against the end of the
//! entry area before it is used, so a corrupt block gives a [`BlockError`],
//! never a panic or an out-of-bounds slice.

use std::cmp::Ordering;
use std::ops::Range;

use bytes::Bytes;

use super::format::{KeyFormat, get_varint32};

/// Builds one sorted block. The caller adds keys in order (the table builder
/// checks that).
#[derive(Debug)]
pub struct BlockBuilder {
    buf: Vec<u8>,
    restarts: Vec<u32>,
    restart_interval: usize,
    counter: usize,
    entries: usize,
    last_key: Vec<u8>,
    finished: bool,
}

impl BlockBuilder {
    /// A builder with a restart point every `restart_interval` keys (at least 1).
    pub fn new(restart_interval: usize) -> Self {
        BlockBuilder {
            buf: Vec::new(),
            restarts: vec![0],
            restart_interval: restart_interval.max(1),
            counter: 0,
            entries: 0,
            last_key: Vec::new(),
            finished: false,
        }
    }

    /// Appends an entry. Key and value must each be shorter than 4 GiB, and
    /// the key must sort after the previous one (not checked here).
    pub fn add(&mut self, key: &[u8], value: &[u8]) {
        debug_assert!(!self.finished, "add after finish");
        let shared = if self.counter < self.restart_interval {
            key.iter()
                .zip(&self.last_key)
                .take_while(|(a, b)| a == b)
                .count()
        } else {
            self.restarts.push(self.buf.len() as u32);
            self.counter = 0;
            0
        };
        let non_shared = key.len() - shared;
        super::format::put_varint32(&mut self.buf, shared as u32);
        super::format::put_varint32(&mut self.buf, non_shared as u32);
        super::format::put_varint32(&mut self.buf, value.len() as u32);
        self.buf.extend_from_slice(&key[shared..]);
        self.buf.extend_from_slice(value);
        self.last_key.truncate(shared);
        self.last_key.extend_from_slice(&key[shared..]);
        self.counter += 1;
        self.entries += 1;
    }

    /// Size of the block if it were finished now.
    pub fn size_estimate(&self) -> usize {
        self.buf.len() + 4 * self.restarts.len() + 4
    }

    /// Appends the restart array and returns the finished block contents.
    pub fn finish(&mut self) -> &[u8] {
        if !self.finished {
            for r in &self.restarts {
                self.buf.extend_from_slice(&r.to_le_bytes());
            }
            self.buf
                .extend_from_slice(&(self.restarts.len() as u32).to_le_bytes());
            self.finished = true;
        }
        &self.buf
    }

    /// Clears the builder for the next block.
    pub fn reset(&mut self) {
        self.buf.clear();
        self.restarts.clear();
        self.restarts.push(0);
        self.counter = 0;
        self.entries = 0;
        self.last_key.clear();
        self.finished = false;
    }

    /// True if no entry was added since the last reset.
    pub fn is_empty(&self) -> bool {
        self.entries == 0
    }

    /// Entries added since the last reset.
    pub fn entries(&self) -> usize {
        self.entries
    }

    /// The last key added (empty if none).
    pub fn last_key(&self) -> &[u8] {
        &self.last_key
    }
}

/// A structural problem inside a block; `offset` is relative to the block's
/// first byte (the table adds the block's file offset).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockError {
    /// Offset within the block of the bad structure.
    pub offset: usize,
    /// What is wrong.
    pub what: String,
}

impl BlockError {
    fn new(offset: usize, what: impl Into<String>) -> Self {
        BlockError {
            offset,
            what: what.into(),
        }
    }
}

/// A decoded, immutable block. Cloning is cheap (the contents are [`Bytes`]),
/// so cached blocks are shared between readers.
#[derive(Clone, Debug)]
pub struct Block {
    data: Bytes,
    /// Where the restart array starts = end of the entry area.
    restarts_offset: usize,
    num_restarts: usize,
}

impl Block {
    /// Checks the restart array's bounds and wraps `data`.
    pub fn new(data: Bytes) -> Result<Block, BlockError> {
        let len = data.len();
        if len < 4 {
            return Err(BlockError::new(
                0,
                format!("block of {len} bytes is too short"),
            ));
        }
        let num_restarts =
            u32::from_le_bytes(data[len - 4..].try_into().expect("4 bytes")) as usize;
        let restarts_offset = num_restarts
            .checked_mul(4)
            .and_then(|n| n.checked_add(4))
            .and_then(|n| len.checked_sub(n))
            .ok_or_else(|| {
                BlockError::new(
                    len - 4,
                    format!("{num_restarts} restart points do not fit in a {len}-byte block"),
                )
            })?;
        if num_restarts == 0 {
            return Err(BlockError::new(len - 4, "block has no restart points"));
        }
        let block = Block {
            data,
            restarts_offset,
            num_restarts,
        };
        // The array's shape, cheaply, on every read: the first restart is 0
        // and each next one lies further on inside the entry area (a restart
        // at the area's end is legal only in an empty block, whose one restart
        // is 0). A seek trusts these offsets; one at the area's end would make
        // it find nothing and skip the block's keys. Whether each offset
        // starts an entry needs every entry decoded: `check_restarts`.
        let mut prev = None;
        for i in 0..num_restarts {
            let r = block.restart_point(i);
            let ok = match prev {
                None => r == 0,
                Some(p) => r > p && r < restarts_offset,
            };
            if !ok {
                return Err(BlockError::new(
                    restarts_offset + 4 * i,
                    format!(
                        "restart point {i} is {r}: restarts must start at 0 and increase inside the {restarts_offset}-byte entry area"
                    ),
                ));
            }
            prev = Some(r);
        }
        Ok(block)
    }

    /// Checks that every restart point starts an entry whose key is not
    /// prefix-compressed, decoding each entry in turn (what a seek assumes
    /// of them; [`Block::new`] checks only their order and bounds).
    pub fn check_restarts(&self) -> Result<(), BlockError> {
        let mut next = 1; // restart 0 is offset 0, an entry start
        let mut p = 0;
        while p < self.restarts_offset {
            let e = decode_entry(&self.data, p, self.restarts_offset)?;
            if p == 0 && e.shared != 0 {
                return Err(BlockError::new(p, "first entry is prefix-compressed"));
            }
            let q = e.value.end;
            // Restarts past the first lie inside the entry area (`new`), so
            // none equals the end `q` of the last entry.
            while next < self.num_restarts {
                let r = self.restart_point(next);
                if r > q {
                    break;
                }
                if r != q {
                    return Err(BlockError::new(
                        self.restarts_offset + 4 * next,
                        format!("restart point {next} ({r}) is inside an entry"),
                    ));
                }
                let e = decode_entry(&self.data, r, self.restarts_offset)?;
                if e.shared != 0 {
                    return Err(BlockError::new(r, "restart entry is prefix-compressed"));
                }
                next += 1;
            }
            p = q;
        }
        if next < self.num_restarts {
            let r = self.restart_point(next);
            return Err(BlockError::new(
                self.restarts_offset + 4 * next,
                format!("restart point {next} ({r}) starts no entry"),
            ));
        }
        Ok(())
    }

    /// The block's raw contents.
    pub fn data(&self) -> &Bytes {
        &self.data
    }

    /// Size in bytes (entries + restart array).
    pub fn len(&self) -> usize {
        self.data.len()
    }

    /// True if the block holds no bytes (never true for a valid block).
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// Number of restart points.
    pub fn num_restarts(&self) -> usize {
        self.num_restarts
    }

    /// Restart offset `i`; [`Block::new`] checked every one is in bounds and
    /// in order.
    fn restart_point(&self, i: usize) -> usize {
        let at = self.restarts_offset + 4 * i;
        u32::from_le_bytes(self.data[at..at + 4].try_into().expect("4 bytes")) as usize
    }

    /// The size a [`BlockBuilder`] with a restart point every
    /// `restart_interval` entries estimated for this block just before its
    /// last entry was added ([`BlockBuilder::size_estimate`]; 0 for a block
    /// of one entry), if the block has the restart points such a builder
    /// writes: exactly entries `0`, `restart_interval`, `2 × restart_interval`,
    /// …, each storing its whole key. `None` if it has others, or no entry.
    /// Every entry's lengths are decoded; a fault is a [`BlockError`].
    pub fn size_before_last(&self, restart_interval: usize) -> Result<Option<usize>, BlockError> {
        let interval = restart_interval.max(1);
        let mut p = 0;
        let mut n = 0usize;
        // Restart points at or before the current entry.
        let mut restarts = 0usize;
        let mut before_last = 0;
        while p < self.restarts_offset {
            let e = decode_entry(&self.data, p, self.restarts_offset)?;
            let is_restart = n.is_multiple_of(interval);
            if is_restart {
                if restarts >= self.num_restarts
                    || self.restart_point(restarts) != p
                    || e.shared != 0
                {
                    return Ok(None);
                }
                restarts += 1;
            }
            // The builder's estimate before this entry: its bytes so far,
            // and the restart array it had then (always at least one point).
            let restarts_then = (restarts - usize::from(is_restart)).max(1);
            before_last = if n == 0 { 0 } else { p + 4 * restarts_then + 4 };
            n += 1;
            p = e.value.end;
        }
        Ok((n > 0 && restarts == self.num_restarts).then_some(before_last))
    }

    /// An iterator positioned before the first entry.
    pub fn iter(&self, format: KeyFormat) -> BlockIter {
        BlockIter {
            block: self.clone(),
            format,
            next_offset: 0,
            key: Vec::new(),
            value: 0..0,
            valid: false,
            prev_user_key_match: None,
        }
    }
}

/// The decoded header of one entry.
struct EntryHeader {
    shared: usize,
    key: Range<usize>,
    value: Range<usize>,
}

/// Decodes the entry at `p`, bounded by `end` (the restart array).
fn decode_entry(data: &[u8], p: usize, end: usize) -> Result<EntryHeader, BlockError> {
    let bad = |what: &str| BlockError::new(p, what.to_string());
    let area = data
        .get(p..end)
        .ok_or_else(|| bad("entry starts past the entry area"))?;
    let (shared, a) = get_varint32(area).ok_or_else(|| bad("bad shared-length varint"))?;
    let (non_shared, b) = get_varint32(&area[a..]).ok_or_else(|| bad("bad key-length varint"))?;
    let (value_len, c) =
        get_varint32(&area[a + b..]).ok_or_else(|| bad("bad value-length varint"))?;
    let key_start = p + a + b + c;
    let key_end = key_start
        .checked_add(non_shared as usize)
        .filter(|&e| e <= end)
        .ok_or_else(|| bad("key runs past the end of the block"))?;
    let value_end = key_end
        .checked_add(value_len as usize)
        .filter(|&e| e <= end)
        .ok_or_else(|| bad("value runs past the end of the block"))?;
    Ok(EntryHeader {
        shared: shared as usize,
        key: key_start..key_end,
        value: key_end..value_end,
    })
}

/// A cursor over one block's entries.
#[derive(Clone, Debug)]
pub struct BlockIter {
    block: Block,
    format: KeyFormat,
    next_offset: usize,
    key: Vec<u8>,
    value: Range<usize>,
    valid: bool,
    prev_user_key_match: Option<bool>,
}

impl BlockIter {
    /// Moves to the next entry; `Ok(false)` (and not valid) at the end.
    pub fn advance(&mut self) -> Result<bool, BlockError> {
        let p = self.next_offset;
        if p >= self.block.restarts_offset {
            self.valid = false;
            return Ok(false);
        }
        self.valid = false;
        let e = decode_entry(&self.block.data, p, self.block.restarts_offset)?;
        if e.shared > self.key.len() {
            return Err(BlockError::new(
                p,
                format!(
                    "entry shares {} bytes with a {}-byte previous key",
                    e.shared,
                    self.key.len()
                ),
            ));
        }
        self.key.truncate(e.shared);
        self.key.extend_from_slice(&self.block.data[e.key]);
        self.value = e.value.clone();
        self.next_offset = e.value.end;
        self.valid = true;
        Ok(true)
    }

    /// Positions before the first entry (call [`advance`](Self::advance) next).
    pub fn rewind(&mut self) {
        self.next_offset = 0;
        self.key.clear();
        self.valid = false;
    }

    /// The full key of the restart entry `i`, which must not be prefix-compressed.
    fn restart_key(&self, i: usize) -> Result<&[u8], BlockError> {
        let p = self.block.restart_point(i);
        let e = decode_entry(&self.block.data, p, self.block.restarts_offset)?;
        if e.shared != 0 {
            return Err(BlockError::new(p, "restart entry is prefix-compressed"));
        }
        Ok(&self.block.data[e.key])
    }

    /// Positions at the first entry whose key is `>= target`; `Ok(false)` if
    /// there is none. Afterwards [`prev_user_key_match`](Self::prev_user_key_match)
    /// tells whether the entry just before it has the same user key as
    /// `target` (`None` if it is the block's first entry).
    pub fn seek(&mut self, target: &[u8]) -> Result<bool, BlockError> {
        let fmt = self.format;
        // Last restart point whose key is < target (or restart 0).
        let (mut lo, mut hi) = (0usize, self.block.num_restarts - 1);
        while lo < hi {
            let mid = lo + (hi - lo).div_ceil(2);
            if fmt.compare(self.restart_key(mid)?, target) == Ordering::Less {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        self.next_offset = self.block.restart_point(lo);
        self.key.clear();
        self.prev_user_key_match = None;
        let target_user = fmt.user_key(target);
        while self.advance()? {
            if fmt.compare(&self.key, target) != Ordering::Less {
                return Ok(true);
            }
            self.prev_user_key_match = Some(fmt.user_key(&self.key) == target_user);
        }
        Ok(false)
    }

    /// See [`seek`](Self::seek).
    pub fn prev_user_key_match(&self) -> Option<bool> {
        self.prev_user_key_match
    }

    /// True if positioned at an entry.
    pub fn valid(&self) -> bool {
        self.valid
    }

    /// The current key (valid only when [`valid`](Self::valid)).
    pub fn key(&self) -> &[u8] {
        &self.key
    }

    /// The current value as a slice of the block (no copy).
    pub fn value(&self) -> Bytes {
        self.block.data.slice(self.value.clone())
    }

    /// The current value as a borrowed slice.
    pub fn value_slice(&self) -> &[u8] {
        &self.block.data[self.value.clone()]
    }

    /// Offset within the block of the next entry to decode.
    pub fn next_offset(&self) -> usize {
        self.next_offset
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn build(entries: &[(Vec<u8>, Vec<u8>)], interval: usize) -> Block {
        let mut b = BlockBuilder::new(interval);
        for (k, v) in entries {
            b.add(k, v);
        }
        let est = b.size_estimate();
        let data = b.finish().to_vec();
        assert_eq!(data.len(), est);
        Block::new(Bytes::from(data)).unwrap()
    }

    fn sample(n: usize) -> Vec<(Vec<u8>, Vec<u8>)> {
        (0..n)
            .map(|i| {
                (
                    format!("key{:05}", i * 2).into_bytes(),
                    vec![i as u8; i % 7],
                )
            })
            .collect()
    }

    fn all(block: &Block) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut it = block.iter(KeyFormat::Plain);
        let mut out = Vec::new();
        while it.advance().unwrap() {
            out.push((it.key().to_vec(), it.value_slice().to_vec()));
        }
        out
    }

    #[test]
    fn roundtrip_and_prefix_compression() {
        for interval in [1, 2, 16, 1000] {
            let e = sample(100);
            let block = build(&e, interval);
            assert_eq!(all(&block), e);
            assert_eq!(block.num_restarts(), 100usize.div_ceil(interval));
        }
        // Shared prefixes make interval-16 blocks smaller than interval-1 ones.
        assert!(build(&sample(100), 16).len() < build(&sample(100), 1).len());
    }

    #[test]
    fn empty_block() {
        let block = build(&[], 16);
        assert_eq!(block.len(), 8);
        assert!(all(&block).is_empty());
        assert!(!block.iter(KeyFormat::Plain).seek(b"a").unwrap());
    }

    #[test]
    fn seek_finds_first_key_at_or_after() {
        let e = sample(50);
        for interval in [1, 3, 16] {
            let block = build(&e, interval);
            let mut it = block.iter(KeyFormat::Plain);
            for i in 0..100 {
                let target = format!("key{i:05}").into_bytes();
                let found = it.seek(&target).unwrap();
                let expect = e.iter().find(|(k, _)| *k >= target);
                match expect {
                    Some((k, v)) => {
                        assert!(found);
                        assert_eq!(it.key(), &k[..]);
                        assert_eq!(it.value_slice(), &v[..]);
                    }
                    None => assert!(!found),
                }
            }
            assert!(it.seek(b"").unwrap());
            assert_eq!(it.key(), b"key00000");
            assert!(!it.seek(b"kez").unwrap());
        }
    }

    #[test]
    fn seek_reports_previous_user_key() {
        use crate::key::{ValueKind, make_internal_key};
        let e: Vec<(Vec<u8>, Vec<u8>)> = [(b"a", 9), (b"a", 5), (b"b", 7)]
            .iter()
            .map(|(k, s)| (make_internal_key(*k, *s, ValueKind::Value), vec![]))
            .collect();
        let mut b = BlockBuilder::new(16);
        for (k, v) in &e {
            b.add(k, v);
        }
        let block = Block::new(Bytes::from(b.finish().to_vec())).unwrap();
        let mut it = block.iter(KeyFormat::Internal);
        // "a" as of seq 3: nothing visible, but "a" is in the block.
        assert!(
            it.seek(&make_internal_key(b"a", 3, ValueKind::Value))
                .unwrap()
        );
        assert_eq!(crate::key::user_key(it.key()), b"b");
        assert_eq!(it.prev_user_key_match(), Some(true));
        assert!(
            it.seek(&make_internal_key(b"b", 8, ValueKind::Value))
                .unwrap()
        );
        assert_eq!(it.prev_user_key_match(), Some(false));
        assert!(
            it.seek(&make_internal_key(b"a", 10, ValueKind::Value))
                .unwrap()
        );
        assert_eq!(it.prev_user_key_match(), None, "first entry of the block");
    }

    /// Restart arrays a seek would misread: refused by `Block::new` when
    /// their order or bounds are wrong, by `check_restarts` when an offset
    /// starts no entry or a prefix-compressed one.
    #[test]
    fn restart_arrays_that_mislead_a_seek() {
        let good = build(&sample(12), 4); // restarts at entries 0, 4, 8
        assert_eq!(good.num_restarts(), 3);
        good.check_restarts().unwrap();
        let raw = good.data().to_vec();
        let end = good.restarts_offset;
        let at = |i: usize| end + 4 * i;
        let get = |i: usize| u32::from_le_bytes(raw[at(i)..at(i) + 4].try_into().unwrap());
        let with = |i: usize, v: u32| {
            let mut b = raw.clone();
            b[at(i)..at(i) + 4].copy_from_slice(&v.to_le_bytes());
            Block::new(Bytes::from(b))
        };
        let (r1, r2) = (get(1), get(2));
        // Order and bounds: the block is refused before any read.
        for (i, v, why) in [
            (
                2,
                end as u32,
                "at the entry area's end: a seek skipped the block",
            ),
            (2, end as u32 + 3, "past the entry area"),
            (0, r1, "the first restart is not 0"),
            (1, r2, "not increasing"),
            (2, r1 - 1, "decreasing"),
        ] {
            assert!(with(i, v).is_err(), "{why}");
        }
        // In order and in bounds, but not the start of a restart entry.
        let inside = with(1, r1 + 1).unwrap();
        let e = inside.check_restarts().unwrap_err();
        assert!(e.what.contains("inside an entry"), "{}", e.what);
        // The entry after restart 1 shares a prefix with the one before it.
        let first_entry_end = {
            let e = decode_entry(good.data(), r1 as usize, end).unwrap();
            e.value.end as u32
        };
        let shared = with(1, first_entry_end).unwrap();
        let e = shared.check_restarts().unwrap_err();
        assert!(e.what.contains("prefix-compressed"), "{}", e.what);
        // An empty block: one restart, 0, at the area's end.
        let empty = Block::new(Bytes::from_static(&[0, 0, 0, 0, 1, 0, 0, 0])).unwrap();
        empty.check_restarts().unwrap();
    }

    #[test]
    fn corrupt_blocks_error_without_panic() {
        let good = build(&sample(40), 4).data().to_vec();
        // Every truncation and every single-byte flip either decodes or errors.
        for cut in 0..good.len() {
            if let Ok(b) = Block::new(Bytes::copy_from_slice(&good[..cut])) {
                let mut it = b.iter(KeyFormat::Plain);
                while let Ok(true) = it.advance() {}
                let _ = it.seek(b"key00040");
            }
        }
        for i in 0..good.len() {
            for pat in [0x01u8, 0x80, 0xff] {
                let mut bad = good.clone();
                bad[i] ^= pat;
                if let Ok(b) = Block::new(Bytes::from(bad)) {
                    let mut it = b.iter(KeyFormat::Plain);
                    while let Ok(true) = it.advance() {}
                    let _ = it.seek(b"key00040");
                }
            }
        }
        // Specific structural errors.
        assert!(Block::new(Bytes::from_static(&[1, 0, 0])).is_err());
        assert!(
            Block::new(Bytes::from_static(&[0, 0, 0, 0])).is_err(),
            "no restarts"
        );
        assert!(
            Block::new(Bytes::from_static(&[9, 0, 0, 0])).is_err(),
            "too many restarts"
        );
        // Restart pointing past the entry area.
        assert!(Block::new(Bytes::from_static(&[0, 1, 0, 0, 50, 0, 0, 0, 1, 0, 0, 0])).is_err());
        // Key length past the end.
        let b = Block::new(Bytes::from_static(&[0, 9, 0, b'k', 0, 0, 0, 0, 1, 0, 0, 0])).unwrap();
        let e = b.iter(KeyFormat::Plain).advance().unwrap_err();
        assert_eq!(e.offset, 0);
        // Shared bytes without a previous key.
        let b = Block::new(Bytes::from_static(&[3, 1, 0, b'k', 0, 0, 0, 0, 1, 0, 0, 0])).unwrap();
        assert!(b.iter(KeyFormat::Plain).advance().is_err());
    }
}
