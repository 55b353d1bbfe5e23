//! `TableRevIter`: a table's entries in descending table order, for the
//! store's reverse scans.

use std::cmp::Ordering;
use std::ops::Deref;

use bytes::Bytes;

use crate::error::Result;

use super::iter::fuse;
use super::{IndexCursor, ReadStats, Table};

/// A table's entries in *descending* table order, from the last key `<= upper`
/// (or the table's last key). Restart points let a block be read forward only,
/// so each data block is decoded forward once into a buffer and yielded from
/// its end: the same block reads as a forward scan, plus one block's entries
/// held in memory. After an error it yields that error once, then ends.
pub(crate) struct TableRevIter<T: Deref<Target = Table>> {
    table: T,
    /// Upper bound not yet applied (positioning is lazy, as in
    /// [`TableIter`](super::TableIter)).
    upper: Option<Vec<u8>>,
    started: bool,
    /// Blocks `0..remaining` are still to be read, last first.
    remaining: usize,
    /// The current block's entries not yet yielded, in table order.
    buf: Vec<(Bytes, Bytes)>,
    done: bool,
    io: ReadStats,
    /// The index partition in use (a partitioned index).
    cursor: IndexCursor,
}

impl<T: Deref<Target = Table>> TableRevIter<T> {
    /// An iterator over `table` backward from the last key `<= upper` (or the
    /// last key).
    pub(crate) fn new(table: T, upper: Option<&[u8]>) -> Self {
        TableRevIter {
            table,
            upper: upper.map(<[u8]>::to_vec),
            started: false,
            remaining: 0,
            buf: Vec::new(),
            done: false,
            io: ReadStats::default(),
            cursor: IndexCursor::default(),
        }
    }

    /// Data-block I/O so far.
    pub(crate) fn read_stats(&self) -> ReadStats {
        self.io
    }

    /// Decodes data block `i` into `buf`, keeping the keys `<= upper`.
    fn load(&mut self, i: usize, upper: Option<&[u8]>) -> Result<()> {
        let t = &*self.table;
        let fmt = t.props.key_format;
        let h = t.block_handle(i, &mut self.cursor, &mut self.io)?;
        let block = t.data_block(h, &mut self.io)?;
        let mut it = block.iter(fmt);
        self.buf.clear();
        while t.block_step(&mut it, h, "data")? {
            if upper.is_some_and(|u| fmt.compare(it.key(), u) == Ordering::Greater) {
                break;
            }
            self.buf
                .push((Bytes::copy_from_slice(it.key()), it.value()));
        }
        self.remaining = i;
        Ok(())
    }

    fn step(&mut self) -> Result<Option<(Bytes, Bytes)>> {
        if !self.started {
            self.started = true;
            let n = self.table.data_blocks();
            if n == 0 {
                return Ok(None);
            }
            let upper = self.upper.take();
            // The first block whose last key is >= upper holds the last key
            // <= upper, or the block before it does; past every block: the last.
            let i = match upper.as_deref() {
                Some(u) => {
                    let t = &*self.table;
                    t.find_block(u, &mut self.cursor, &mut self.io)?.min(n - 1)
                }
                None => n - 1,
            };
            self.load(i, upper.as_deref())?;
        }
        loop {
            if let Some(e) = self.buf.pop() {
                return Ok(Some(e));
            }
            if self.remaining == 0 {
                return Ok(None);
            }
            self.load(self.remaining - 1, None)?;
        }
    }
}

impl<T: Deref<Target = Table>> Iterator for TableRevIter<T> {
    type Item = Result<(Bytes, Bytes)>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        fuse(self.step(), &mut self.done)
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_tables::build;
    use super::*;
    use crate::sst::{TableBuilderOptions, TableOpenOptions};

    #[test]
    fn reverse_iteration_matches_forward_at_every_bound() {
        let dir = tempfile::tempdir().unwrap();
        let opts = TableBuilderOptions {
            block_size: 128,
            ..Default::default()
        };
        let path = build(dir.path(), 300, opts);
        let t = Table::open(&path, TableOpenOptions::default()).unwrap();
        assert!(t.data_blocks() > 10);
        let forward: Vec<_> = t.iter().map(|r| r.unwrap()).collect();
        let all: Vec<_> = TableRevIter::new(&t, None).map(|r| r.unwrap()).collect();
        assert_eq!(all, forward.iter().rev().cloned().collect::<Vec<_>>());
        // Bounds on keys, between keys, before the first and after the last.
        let mut bounds: Vec<Vec<u8>> = vec![b"a".to_vec(), b"zzz".to_vec()];
        for i in 0..300 {
            bounds.push(format!("k{i:06}").into_bytes());
            bounds.push(format!("k{i:06}x").into_bytes());
        }
        for b in &bounds {
            let want: Vec<_> = forward
                .iter()
                .filter(|(k, _)| k.as_ref() <= b.as_slice())
                .rev()
                .cloned()
                .collect();
            let got: Vec<_> = TableRevIter::new(&t, Some(b)).map(|r| r.unwrap()).collect();
            assert_eq!(got, want, "bound {}", String::from_utf8_lossy(b));
        }
        let dir2 = tempfile::tempdir().unwrap();
        let empty = build(dir2.path(), 0, TableBuilderOptions::default());
        let e = Table::open(&empty, TableOpenOptions::default()).unwrap();
        assert_eq!(TableRevIter::new(&e, None).count(), 0);
    }
}
