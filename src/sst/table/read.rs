//! Reading one block of a table: its bounds against the file, its checksum
//! and type byte, decompression of data blocks, the block cache, and the
//! readahead chunks of a sequential pass. Every block a table hands out has
//! passed these checks.

use std::path::Path;
use std::sync::{Arc, Mutex, mpsc};

use bytes::{Bytes, BytesMut};

use crate::error::{Error, Result};
use crate::fs::{ReadAdvice, ReadableFile};
use crate::sst::block::Block;
use crate::sst::compression::{self, BLOCK_TYPE_NONE};
use crate::sst::format::{BLOCK_TRAILER_LEN, BlockHandle, FOOTER_LEN, get_varint32, verify_block};

use super::{DATA, Table};

/// Data-block I/O done by one lookup or one iterator.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReadStats {
    /// Data blocks read from the file (cache misses or no cache).
    pub blocks_read: u64,
    /// Data blocks served by the block cache.
    pub cache_hits: u64,
    /// Bytes read from the file as stored (compressed, if the block is),
    /// trailers included: the I/O, not the decompressed size; with direct
    /// reads, the whole sectors read ([`ReadableFile::transfer_len`]).
    pub bytes_read: u64,
    /// Index partitions read from the file, for a partitioned index not
    /// held in memory.
    pub index_blocks_read: u64,
    /// Index partitions served by the block cache.
    pub index_cache_hits: u64,
    /// Bytes of the index partitions read, trailers included.
    pub index_bytes_read: u64,
}

/// Bytes a sequential pass reads at once (RocksDB's compactions read ahead
/// 2 MiB; a merge of 20 L0 files on two shards holds 40 chunks).
pub const READAHEAD_BYTES: usize = 256 << 10;

/// The first stretch a forward scan advises the page cache to read ahead;
/// each next one is twice as long, up to [`READAHEAD_BYTES`] (RocksDB's
/// iterators' automatic readahead grows from 8 KiB the same way), so a
/// short scan brings in little it does not read.
pub(super) const SCAN_READAHEAD_START: u64 = 16 << 10;

/// A chunk of a table's data blocks read at once, from file offset `offset`,
/// and the read of the chunk after it, in flight on a reading thread
/// ([`crate::fs::read_ahead`]) while this one's blocks are merged: a pass over
/// a table then waits on the device only for its first chunk.
#[derive(Default)]
pub(super) struct Readahead {
    offset: u64,
    buf: Bytes,
    next: Option<Ahead>,
}

impl Readahead {
    fn end(&self) -> u64 {
        self.offset + self.buf.len() as u64
    }
}

/// Makes `buf` `len` bytes long for a read to fill, zeroing only what it
/// did not hold before: a reused chunk's old bytes are overwritten by the
/// read, so a pass does not clear every chunk it reads.
fn fit(buf: &mut BytesMut, len: usize) {
    if buf.len() >= len {
        buf.truncate(len);
    } else {
        buf.resize(len, 0);
    }
}

/// A chunk being read on an I/O thread: `len` bytes from `offset`.
struct Ahead {
    offset: u64,
    len: usize,
    /// In a mutex only so that an iterator stays `Sync`: one thread waits.
    read: Mutex<mpsc::Receiver<Result<BytesMut>>>,
}

impl Ahead {
    /// Starts reading `len` bytes at `offset` of `file` on a reading
    /// thread, into `buf`'s memory; `None` if there are none.
    fn start(
        file: Arc<dyn ReadableFile>,
        path: &Path,
        offset: u64,
        len: usize,
        mut buf: BytesMut,
    ) -> Option<Ahead> {
        let (tx, rx) = mpsc::sync_channel(1);
        let path = path.to_path_buf();
        crate::fs::read_ahead::spawn(Box::new(move || {
            let read = std::panic::AssertUnwindSafe(|| {
                fit(&mut buf, len);
                read_at(file.as_ref(), &path, &mut buf, offset).map(|()| buf)
            });
            // A panic is the reader's error, not the I/O thread's end.
            let r = std::panic::catch_unwind(read)
                .unwrap_or_else(|p| Err(Error::from_panic(p.as_ref())));
            // The pass may have ended without it: nobody to tell.
            let _ = tx.send(r);
        }))
        .ok()?;
        Some(Ahead {
            offset,
            len,
            read: Mutex::new(rx),
        })
    }

    fn end(&self) -> u64 {
        self.offset + self.len as u64
    }

    /// The chunk, once read.
    fn wait(self, path: &Path) -> Result<Bytes> {
        let read = self.read.into_inner().unwrap_or_else(|p| p.into_inner());
        match read.recv() {
            Ok(r) => r.map(BytesMut::freeze),
            Err(_) => Err(Error::io(
                format!("read {} at {}", path.display(), self.offset),
                std::io::Error::other("the I/O thread reading ahead stopped"),
            )),
        }
    }
}

impl Table {
    /// Reads and verifies the block at `h`; returns its contents: the
    /// payload, decompressed if it is a compressed data block.
    pub(super) fn read_raw(&self, h: BlockHandle, what: &str) -> Result<Bytes> {
        self.read_raw_from(self.file.get()?.as_ref(), h, what)
    }

    /// [`read_raw`](Self::read_raw) from `file`, the table's descriptor.
    pub(super) fn read_raw_from(
        &self,
        file: &dyn ReadableFile,
        h: BlockHandle,
        what: &str,
    ) -> Result<Bytes> {
        self.read_raw_into(file, h, what, BytesMut::new())
    }

    /// [`read_raw`](Self::read_raw) from `file`, the table's descriptor,
    /// into `buf`'s memory (its length and contents do not matter: every
    /// byte is overwritten by the read).
    fn read_raw_into(
        &self,
        file: &dyn ReadableFile,
        h: BlockHandle,
        what: &str,
        mut buf: BytesMut,
    ) -> Result<Bytes> {
        let data_end = self.file_size - FOOTER_LEN as u64;
        let end = h.end_with_trailer();
        if end.is_none_or(|e| e > data_end) {
            return Err(self.corruption(
                h.offset,
                format!(
                    "{what} block (offset {}, size {}) runs past the end of the data at {data_end}",
                    h.offset, h.size
                ),
            ));
        }
        // Bounded by the file size above, so a corrupt length cannot make us
        // allocate more than the file holds. A recycled buffer of about the
        // same size needs no zeroing: only a longer tail is written here.
        let need = h.size as usize + BLOCK_TRAILER_LEN;
        if buf.capacity() < need {
            // Room for the table's largest data block (at most twice this
            // one), so that recycled, this buffer takes any other block
            // without growing.
            let largest = (self.props.data_raw_max as usize).saturating_add(BLOCK_TRAILER_LEN);
            buf = BytesMut::with_capacity(largest.clamp(need, need * 2));
        }
        buf.resize(need, 0);
        read_at(file, &self.path, &mut buf, h.offset)?;
        let (n, block_type) = self.check_block(h, what, &buf)?;
        buf.truncate(n);
        if block_type == BLOCK_TYPE_NONE {
            return Ok(buf.freeze());
        }
        self.decompress_block(h, what, block_type, &buf)
    }

    /// Verifies block `h` as stored (`raw`: its bytes and trailer): its
    /// length, stored with its checksum and its type byte.
    fn check_block(&self, h: BlockHandle, what: &str, raw: &[u8]) -> Result<(usize, u8)> {
        let compressed_ok = what == DATA && self.compressed_table();
        verify_block(self.footer.checksum, raw, h.offset, compressed_ok)
            .map_err(|e| self.corruption(h.offset, format!("{what} block: {e}")))
    }

    /// The contents of block `h`, stored compressed as `block_type`. Called
    /// after [`check_block`](Self::check_block): only intact stored bytes
    /// reach the decoder, and the table's largest block bounds what it may
    /// allocate.
    fn decompress_block(
        &self,
        h: BlockHandle,
        what: &str,
        block_type: u8,
        stored: &[u8],
    ) -> Result<Bytes> {
        compression::decompress(block_type, stored, self.props.data_raw_max)
            .map(Bytes::from)
            .map_err(|e| self.corruption(h.offset, format!("{what} block: {e}")))
    }

    /// The contents of block `h` from `raw`, its bytes as stored with its
    /// trailer: verified, then decompressed if it is stored compressed.
    pub(super) fn decode_raw(&self, h: BlockHandle, what: &str, raw: &Bytes) -> Result<Bytes> {
        let (n, block_type) = self.check_block(h, what, raw)?;
        if block_type == BLOCK_TYPE_NONE {
            return Ok(raw.slice(..n));
        }
        self.decompress_block(h, what, block_type, &raw[..n])
    }

    pub(super) fn read_block(&self, h: BlockHandle, what: &str) -> Result<Block> {
        let data = self.read_raw(h, what)?;
        Block::new(data).map_err(|e| self.block_error(h, what, e))
    }

    /// The data block at `h`, from the cache or the file (verified, then
    /// cached).
    pub(super) fn data_block(&self, h: BlockHandle, io: &mut ReadStats) -> Result<Block> {
        let cache = self.cache.as_deref().filter(|c| c.is_enabled());
        if let Some(c) = cache
            && let Some(data) = c.get(self.file_id, h.offset)
        {
            io.cache_hits += 1;
            return Block::new(data).map_err(|e| self.block_error(h, DATA, e));
        }
        // The I/O is the stored bytes; the cache holds the decompressed block.
        let file = self.file.get()?;
        io.blocks_read += 1;
        io.bytes_read += file.transfer_len(h.offset, h.size as usize + BLOCK_TRAILER_LEN);
        let buf = cache.map_or_else(BytesMut::new, |c| c.recycled(self.file_id, h.offset));
        let data = self.read_raw_into(file.as_ref(), h, DATA, buf)?;
        let block = Block::new(data).map_err(|e| self.block_error(h, DATA, e))?;
        if let Some(c) = cache {
            c.insert(self.file_id, h.offset, block.data().clone());
        }
        Ok(block)
    }

    /// Advises the page cache that the `len` bytes of data blocks from
    /// `offset` on will be read soon ([`ReadAdvice::WillNeed`]), not past
    /// the last data block. Returns the end of the stretch advised. A
    /// forward scan's readahead, which the descriptor's random-access
    /// advice leaves to the reader.
    pub(super) fn advise_ahead(&self, offset: u64, len: u64) -> Result<u64> {
        let end = self.data_end.min(offset.saturating_add(len));
        if end > offset {
            self.file.get()?.advise(ReadAdvice::WillNeed {
                offset,
                len: end - offset,
            });
        }
        Ok(end)
    }

    /// The data block at `h` for a sequential pass (a compaction's input): cut out of
    /// `ra`, a chunk of [`READAHEAD_BYTES`] read at once, so a table costs
    /// one read per chunk instead of one per block. The block cache is
    /// neither consulted nor filled (RocksDB's compactions read with
    /// `fill_cache = false`): the inputs are deleted when the compaction
    /// ends, and their blocks would push out the ones readers use.
    pub(super) fn data_block_ahead(
        &self,
        h: BlockHandle,
        ra: &mut Readahead,
        io: &mut ReadStats,
    ) -> Result<Block> {
        self.stored_block_ahead(h, ra, io)
            .map(|(_, _, block)| block)
    }

    /// [`data_block_ahead`](Self::data_block_ahead), with the block as
    /// stored: its payload (compressed if its type byte says so, without
    /// its trailer), whose checksum was verified, and its type byte.
    pub(super) fn stored_block_ahead(
        &self,
        h: BlockHandle,
        ra: &mut Readahead,
        io: &mut ReadStats,
    ) -> Result<(Bytes, [u8; BLOCK_TRAILER_LEN], Block)> {
        let data_end = self.file_size - FOOTER_LEN as u64;
        let end = match h.end_with_trailer() {
            Some(e) if e <= data_end => e,
            _ => {
                return Err(self.corruption(
                    h.offset,
                    format!(
                        "{DATA} block (offset {}, size {}) runs past the end of the data at {data_end}",
                        h.offset, h.size
                    ),
                ));
            }
        };
        let need = (end - h.offset) as usize;
        // The end of the data blocks (the last block's end is known: the
        // index is in memory).
        let blocks_end = self.data_end.clamp(end, data_end);
        let raw = if ra.offset <= h.offset && end <= ra.end() {
            let at = (h.offset - ra.offset) as usize;
            ra.buf.slice(at..at + need)
        } else {
            match ra.next.take() {
                // The next chunk holds the block: the common case.
                Some(a) if a.offset <= h.offset && end <= a.end() => {
                    let (file, from) = (self.file.get()?, a.offset);
                    let buf = a.wait(&self.path)?;
                    self.switch_chunk(ra, file, from, buf, blocks_end);
                    let at = (h.offset - ra.offset) as usize;
                    ra.buf.slice(at..at + need)
                }
                // The block starts in this chunk and ends in the next one:
                // its two parts are joined in a buffer of its own.
                Some(a)
                    if ra.offset <= h.offset
                        && h.offset < ra.end()
                        && a.offset == ra.end()
                        && end <= a.end() =>
                {
                    let (file, from) = (self.file.get()?, a.offset);
                    let buf = a.wait(&self.path)?;
                    let mut joined = BytesMut::with_capacity(need);
                    joined.extend_from_slice(&ra.buf[(h.offset - ra.offset) as usize..]);
                    joined.extend_from_slice(&buf[..(end - from) as usize]);
                    self.switch_chunk(ra, file, from, buf, blocks_end);
                    joined.freeze()
                }
                // Not read ahead (the first block, a block larger than a
                // chunk, or a pass that skipped): read a chunk from this
                // block, and start reading the one after it.
                _ => {
                    let file = self.file.get()?;
                    let len = (blocks_end - h.offset)
                        .min(READAHEAD_BYTES as u64)
                        .max(need as u64) as usize;
                    // The previous chunk's memory, if no block or value
                    // still uses it.
                    let mut buf = std::mem::take(&mut ra.buf)
                        .try_into_mut()
                        .unwrap_or_else(|_| BytesMut::new());
                    fit(&mut buf, len);
                    read_at(file.as_ref(), &self.path, &mut buf, h.offset)?;
                    self.switch_chunk(ra, file, h.offset, buf.freeze(), blocks_end);
                    ra.buf.slice(..need)
                }
            }
        };
        io.blocks_read += 1;
        io.bytes_read += need as u64;
        let (n, block_type) = self.check_block(h, DATA, &raw)?;
        let stored = raw.slice(..n);
        let mut trailer = [0; BLOCK_TRAILER_LEN];
        trailer.copy_from_slice(&raw[n..n + BLOCK_TRAILER_LEN]);
        let data = if block_type == BLOCK_TYPE_NONE {
            stored.clone()
        } else {
            self.decompress_block(h, DATA, block_type, &stored)?
        };
        let block = Block::new(data).map_err(|e| self.block_error(h, DATA, e))?;
        Ok((stored, trailer, block))
    }

    /// Makes `buf`, read from `offset`, the chunk of `ra`, and starts
    /// reading the next one (up to `blocks_end`, the end of the data
    /// blocks) into the memory of the chunk it replaces, if no block or
    /// value still uses it.
    fn switch_chunk(
        &self,
        ra: &mut Readahead,
        file: Arc<dyn ReadableFile>,
        offset: u64,
        buf: Bytes,
        blocks_end: u64,
    ) {
        let old = std::mem::replace(&mut ra.buf, buf);
        ra.offset = offset;
        let from = ra.end();
        if from < blocks_end {
            let len = (blocks_end - from).min(READAHEAD_BYTES as u64) as usize;
            let mem = old.try_into_mut().unwrap_or_else(|_| BytesMut::new());
            ra.next = Ahead::start(file, &self.path, from, len, mem);
        }
    }

    /// How data block `i` is stored: its type byte (0 = raw, 1 = LZ4,
    /// 2 = zstd) and its size before compression (trailer excluded), read
    /// from its trailer and its length prefix without checking the block
    /// (for `sst dump`; [`verify_all`](Self::verify_all) checks). A prefix
    /// that is not a varint32 is corruption.
    pub fn data_block_codec(&self, i: usize) -> Result<(u8, u64)> {
        if i >= self.data_blocks() {
            return Err(Error::invalid(format!("no data block {i}")));
        }
        let mut cur = super::IndexCursor::default();
        let h = self.block_handle(i, &mut cur, &mut ReadStats::default())?;
        let file = self.file.get()?;
        let mut t = [0u8; 1];
        read_at(
            file.as_ref(),
            &self.path,
            &mut t,
            h.offset.saturating_add(h.size),
        )?;
        if t[0] == BLOCK_TYPE_NONE {
            return Ok((t[0], h.size));
        }
        let mut prefix = [0u8; 5];
        let n = (h.size as usize).min(prefix.len());
        read_at(file.as_ref(), &self.path, &mut prefix[..n], h.offset)?;
        let (raw, _) = get_varint32(&prefix[..n]).ok_or_else(|| {
            self.corruption(h.offset, "data block: bad uncompressed-length varint")
        })?;
        Ok((t[0], u64::from(raw)))
    }
}

pub(super) fn read_at(
    file: &dyn ReadableFile,
    path: &Path,
    buf: &mut [u8],
    offset: u64,
) -> Result<()> {
    file.read_exact_at(buf, offset).map_err(|e| {
        if e.kind() == std::io::ErrorKind::UnexpectedEof {
            // The file is shorter than its own structure says: truncated
            // (or shrunk after open).
            Error::corruption(
                path,
                offset,
                format!("truncated: cannot read {} bytes", buf.len()),
            )
        } else {
            Error::io(format!("read {} at {offset}", path.display()), e)
        }
    })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::super::open::size_bounds_broken;
    use super::super::test_tables::build;
    use super::*;
    use crate::sst::{BlockCache, Compression, TableBuilderOptions, TableOpenOptions};

    /// A sequential pass over a table of many readahead chunks, each read
    /// ahead while the one before is used: every entry comes back in
    /// order, across blocks that straddle two chunks and a block larger
    /// than a chunk, and it reads each block once.
    #[test]
    fn a_pass_read_ahead_yields_every_entry_once() {
        use super::super::TableIter;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.sst");
        let file = std::fs::File::create(&path).unwrap();
        let mut b = crate::sst::TableBuilder::new(
            file,
            &path,
            TableBuilderOptions {
                block_size: 3000,
                ..Default::default()
            },
        );
        let n = 20_000;
        let value = |i: usize| -> Vec<u8> {
            // One value larger than a chunk: a block of its own, read alone.
            let len = if i == 7_000 {
                READAHEAD_BYTES + 5_000
            } else {
                97
            };
            (0..len).map(|j| (i + j) as u8).collect()
        };
        for i in 0..n {
            b.add(format!("k{i:06}").as_bytes(), &value(i)).unwrap();
        }
        b.finish().unwrap();
        let t = Table::open(&path, TableOpenOptions::default()).unwrap();
        assert!(t.file_size() > 8 * READAHEAD_BYTES as u64);
        let mut it = TableIter::sequential(&t, None);
        let mut i = 0;
        for e in &mut it {
            let (k, v) = e.unwrap();
            assert_eq!(k, format!("k{i:06}").as_bytes());
            assert_eq!(v, value(i), "entry {i}");
            i += 1;
        }
        assert_eq!(i, n);
        assert_eq!(it.read_stats().blocks_read, t.data_blocks() as u64);
        // From a key in the middle, as a shard of a compaction starts.
        let from = TableIter::sequential(&t, Some(b"k012345")).count();
        assert_eq!(from, n - 12_345);
    }

    /// A chunk whose read ahead fails makes the pass fail when it reaches
    /// that chunk, with the read's error, never end early or skip it.
    #[test]
    fn a_failed_read_ahead_fails_the_pass() {
        use super::super::TableIter;
        use crate::fs::fault::{Fault, FaultError, FaultFs, Op};
        let dir = tempfile::tempdir().unwrap();
        let path = build(
            dir.path(),
            100_000,
            TableBuilderOptions {
                block_size: 4096,
                ..Default::default()
            },
        );
        let fs = FaultFs::new();
        let t = Table::open(
            &path,
            TableOpenOptions {
                fs: Some(Arc::new(fs.clone())),
                ..TableOpenOptions::default()
            },
        )
        .unwrap();
        assert!(t.file_size() > 2 * READAHEAD_BYTES as u64);
        fs.reset_counts();
        // Read 0 is the first chunk, on this thread; read 1 the chunk after
        // it, read ahead.
        fs.arm(Fault {
            op: Some(Op::Read),
            nth: 1,
            error: FaultError::Io,
            sticky: false,
        });
        let mut n = 0;
        let mut err = None;
        for e in TableIter::sequential(&t, None) {
            match e {
                Ok(_) => n += 1,
                Err(e) => err = Some(e),
            }
        }
        assert!(fs.tripped());
        let e = err.expect("the failed chunk's error");
        assert!(e.to_string().contains("injected I/O error"), "{e}");
        assert!(n > 0 && n < 100_000, "{n}");
    }

    #[test]
    fn compressed_tables_read_the_same() {
        let dir = tempfile::tempdir().unwrap();
        let mut codecs = vec![Compression::None, Compression::Lz4];
        if cfg!(feature = "zstd") {
            codecs.push(Compression::Zstd(3));
        }
        for c in codecs {
            let opts = TableBuilderOptions {
                block_size: 512,
                compression: c,
                ..Default::default()
            };
            let path = build(dir.path(), 2000, opts);
            let cache = Arc::new(BlockCache::new(1 << 20));
            let t = Table::open(
                &path,
                TableOpenOptions {
                    cache: Some(cache.clone()),
                    ..TableOpenOptions::default()
                },
            )
            .unwrap();
            let p = t.properties();
            assert_eq!(t.compression(), c);
            assert_eq!(p.format_version, if c == Compression::None { 1 } else { 2 });
            let want_type = c.block_type();
            assert_eq!(t.data_block_codec(0).unwrap().0, want_type, "{c}");
            if c == Compression::None {
                assert_eq!(p.data_raw_size, p.data_size);
            } else {
                assert!(p.data_raw_size > p.data_size * 3 / 2, "{c}: {p:?}");
                assert!(p.data_raw_max >= 512 && p.data_raw_max < 1024, "{p:?}");
            }
            for i in (0..2000).step_by(7) {
                let r = t.get_unhashed(format!("k{i:06}").as_bytes()).unwrap();
                assert_eq!(r.entry.unwrap().1, format!("v{i}").as_bytes());
                // The I/O counted is the stored block, not its decoded size.
                assert!(r.bytes_read == 0 || r.bytes_read < 1024 + 5);
            }
            // Cached blocks are decoded ones: hits read the same.
            let r = t.get_unhashed(b"k000007").unwrap();
            assert_eq!((r.cache_hits, r.entry.unwrap().1), (1, Bytes::from("v7")));
            assert_eq!(t.iter().count(), 2000);
            assert_eq!(t.iter_from(b"k001500").count(), 500);
            t.verify_all().unwrap();
            assert_eq!(size_bounds_broken(p, t.file_size()), None, "{c}");
        }
    }
}
