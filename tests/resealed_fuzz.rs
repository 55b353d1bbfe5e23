//! Damage behind valid checksums ("resealed" mutants): each mutant changes
//! the payload of a block or a log record and then recomputes the checksum
//! that covers it, so the damage reaches the decoders and checks *behind*
//! the checksums, which tests/decoder_fuzz.rs (whose mutants almost all stop
//! at a checksum) barely reaches.
//!
//! It is one file, one test binary, because every area runs on one harness: the
//! seeded trials, the panic hook, the reseal step and the checks (`trials`,
//! `reseal`, `check_table`, `check_db`).
//!
//! Areas, each a test with fixed seeds:
//!
//! * **SSTables** (`Table::open`, `get`, `iter`, `iter_from`, `verify_all`),
//!   six designs: whole blocked512 filter; Ribbon + LZ4; fuse16 with a
//!   range filter; partitioned blocked512; Bloom + zstd with xxh3 checksums
//!   and restart interval 1; a two-level index (format version 4) over LZ4
//!   blocks with a partitioned filter. Half the trials read the filter and
//!   the index partitions on demand (checked again at each read).
//!   Mutants: bytes of a data block (and its restart array, entry order,
//!   entry lengths, block type), of the filter block, a filter partition or
//!   the partition index, the prefix filter block (Ribbon + LZ4 tables have
//!   a 4-byte fixed prefix extractor), the range filter block (fuse16
//!   tables, and the store's, have range filters at 10 bits per key), the
//!   index (the top level of a two-level one) and its partitions, the
//!   properties, the metaindex (each
//!   resealed in place), the footer's fields (footer checksum recomputed),
//!   and *entry-level* mutants of the index, an index partition, the
//!   properties and the metaindex: decoded, entries changed (values, names,
//!   handles, order, count), and the table written again from that block on
//!   with every handle (the top level's too, and its key for the partition
//!   half the time), `index.size` and the footer made to match, so the
//!   mutant gets past the block structure to `TableProperties::decode` and
//!   the open's cross-checks.
//!   One test per part of the table (data blocks, filters, properties;
//!   index + metaindex + footer), each over the six designs.
//! * **A store's SSTables** through `Db::open`: the same mutants (those that
//!   keep the file's size), then forward and *reverse* scans, bounded scans
//!   both ways (which seek), gets and `Db::verify`. A second store has
//!   two-level indexes (64-byte partitions, some read on demand under a
//!   metadata budget) and range tombstones in two L0 tables over the data
//!   they delete: its range-tombstone blocks are mutated as bytes or as
//!   decoded tombstones (sequence numbers, starts and ends, order, count;
//!   those of the block's size), its indexes and metaindexes as above.
//! * **The MANIFEST** through `Db::open`: version edits mutated as decoded
//!   fields (`VersionEdit::decode` / `encode`: counters and comparator; new
//!   and deleted files and logs) or as bytes; records dropped, repeated,
//!   swapped, added; all written back with `LogWriter`.
//! * **The WAL** through `Db::open`: batches mutated as bytes or as decoded
//!   batches (sequence numbers, operations, batch order), written back with
//!   `LogWriter`; sometimes also a torn tail after them.
//!
//! Every mutant must give: no panic (caught per trial and reported with its
//! seed and the crate's frames); every error `Corruption`; iterators that
//! end. Tables: the answers of an opened table are its original entries or
//! errors, except that a wrong answer (a lost key, a phantom, a foreign
//! entry) is allowed if `verify_all` then reports the table (the standard
//! of tests/sst_corruption.rs for filters), and a table that passes
//! `verify_all` must agree with itself (its scan sorted and complete, every
//! `get` and `iter_from` agreeing with the scan). A resealed *data* block
//! may hold other entries (its checksum covers them); only that
//! self-consistency is checked then. Stores: a failed `Db::open` changes no
//! file (names and bytes, `LOCK` aside); an opened store's scans are sorted
//! and return only key/value pairs that were written (values are derived
//! from their keys and a version, so a value under the wrong key shows; for
//! the WAL, pairs the mutated log itself holds count as written); forward,
//! reverse, bounded and point reads agree when `Db::verify` passes; a write
//! made after the open reads back (get and scan) before and after a clean
//! reopen, and the reopen succeeds. What a consistent lie behind a valid
//! checksum can legitimately cause after a successful open (stale, lost or
//! resurrected keys, tables deleted as leftovers, a lookup and a scan that
//! disagree because a table sits on another level or a key's sequence
//! number changed) is counted and printed, not failed. A resealed
//! range-tombstone block can only hide versions: the pairs a store returns
//! must still all have been written, in order, whatever `Db::verify` says;
//! what it hides (lost keys, older versions, a lookup that stops at a
//! tombstone whose sequence number no longer covers the versions below) is
//! counted.
//!
//! The default run makes about 7,500 mutants in 11 tests (900 filters,
//! 1,800 data blocks, 1,500 properties, 1,500 index/metaindex/footer,
//! 300 + 200 + 300 of a store's tables, 300 + 150 + 150 MANIFEST, 400 WAL).
//! `BLOOMLSM_LONG=1` makes 25 times as many. Five bugs these sweeps found
//! (a restart point at a block's entries end, a user-key range property
//! differing from the key range, writes past the last sequence number, a
//! next-file number near the limit, a metaindex that no longer names the
//! range-tombstone block) are fixed; each has a test that reduces it to one
//! mutant, below or, for the last, `a_lost_range_tombstone_block_is_refused`
//! in src/sst/table/open.rs.

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::fs::File;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, Once};

use bloomlsm::db::{BatchOp, LogReader, LogWriter, VersionEdit, WriteBatch};
use bloomlsm::sst::block::Block;
use bloomlsm::sst::format::{block_trailer, offset_mix};
use bloomlsm::sst::{
    BlockHandle, ChecksumType, Compression, Footer, KeyFormat, Table, TableBuilder,
    TableBuilderOptions, TableOpenOptions,
};
use bloomlsm::{
    Bytes, Db, Error, FilterKind, FilterOptions, FilterPolicy, Options, PrefixExtractor, key_hash,
};

mod common;

type Entries = Vec<(Vec<u8>, Vec<u8>)>;
type Pairs = HashSet<(Vec<u8>, Vec<u8>)>;

const MAX_SEQUENCE: u64 = (1 << 56) - 1;

// ---------------------------------------------------------------- harness

/// SplitMix64 with a fixed seed per trial, so each trial can be rerun alone.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Self {
        Rng(seed)
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }

    fn one_in(&mut self, n: usize) -> bool {
        self.below(n) == 0
    }

    fn pick<T: Clone>(&mut self, v: &[T]) -> T {
        v[self.below(v.len())].clone()
    }
}

fn trial_seed(area: u64, i: usize) -> u64 {
    area ^ (i as u64 + 1).wrapping_mul(0xD1B5_4A32_D192_ED03)
}

fn trials(default: usize) -> usize {
    if common::long_mode() {
        default * 25
    } else {
        default
    }
}

thread_local! {
    /// Set while a trial runs on this thread: its panic is caught.
    static CATCHING: Cell<bool> = const { Cell::new(false) };
    /// The caught panic's message, location and the crate's frames.
    static CAUGHT: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Panics outside a trial (e.g. on the store's own threads).
static OTHER_PANICS: Mutex<Vec<String>> = Mutex::new(Vec::new());

fn install_panic_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if CATCHING.with(Cell::get) {
                let bt = std::backtrace::Backtrace::force_capture().to_string();
                let msg = format!("{info}\n{}", our_frames(&bt));
                CAUGHT.with(|c| *c.borrow_mut() = Some(msg));
            } else {
                // The store's threads (a test thread's own panic fails its test).
                let name = std::thread::current().name().map(str::to_string);
                if name
                    .as_deref()
                    .is_none_or(|n| n.starts_with("bloomlsm") || n.starts_with("rayon"))
                {
                    OTHER_PANICS
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .push(format!("thread {name:?}: {info}"));
                }
                default(info);
            }
        }));
    });
}

/// The frames of a backtrace in this crate's sources (src/ and tests/).
fn our_frames(bt: &str) -> String {
    let lines: Vec<&str> = bt.lines().map(str::trim).collect();
    let mut out = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        let ours = (l.contains("src/") || l.contains("tests/"))
            && !l.contains("/rustc/")
            && !l.contains(".cargo")
            && !l.contains("/library/");
        if l.starts_with("at ") && ours {
            let f = if i > 0 { lines[i - 1] } else { "" };
            out.push(format!("    {f}\n        {l}"));
        }
    }
    out.truncate(10);
    out.join("\n")
}

/// (kind, example): something worth counting that is not a failure.
type Notes = Vec<(String, String)>;

/// The outcomes of one area's trials.
struct Tally {
    area: String,
    trials: usize,
    outcomes: BTreeMap<&'static str, usize>,
    notes: BTreeMap<String, (usize, String)>,
    failures: Vec<String>,
    started: std::time::Instant,
}

impl Tally {
    fn new(area: &str) -> Self {
        install_panic_hook();
        Tally {
            area: area.to_string(),
            trials: 0,
            outcomes: BTreeMap::new(),
            notes: BTreeMap::new(),
            failures: Vec::new(),
            started: std::time::Instant::now(),
        }
    }

    /// Runs one trial: `Ok(outcome)`, `Err(what is wrong)`, or a panic.
    fn run(&mut self, what: &str, f: impl FnOnce(&mut Notes) -> Result<&'static str, String>) {
        self.trials += 1;
        let mut notes = Notes::new();
        CATCHING.with(|c| c.set(true));
        let r = catch_unwind(AssertUnwindSafe(|| f(&mut notes)));
        CATCHING.with(|c| c.set(false));
        for (kind, example) in notes {
            let e = self
                .notes
                .entry(kind)
                .or_insert_with(|| (0, format!("{what}: {example}")));
            e.0 += 1;
        }
        match r {
            Ok(Ok(outcome)) => *self.outcomes.entry(outcome).or_default() += 1,
            Ok(Err(msg)) => self.failures.push(format!("WRONG  {what}\n    {msg}")),
            Err(payload) => {
                let caught = CAUGHT.with(|c| c.borrow_mut().take()).unwrap_or_else(|| {
                    payload
                        .downcast_ref::<String>()
                        .cloned()
                        .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
                        .unwrap_or_default()
                });
                self.failures.push(format!("PANIC  {what}\n    {caught}"));
            }
        }
    }

    fn finish(self) {
        eprintln!(
            "{}: {} mutants in {:.1?}: {:?}",
            self.area,
            self.trials,
            self.started.elapsed(),
            self.outcomes
        );
        for (kind, (n, example)) in &self.notes {
            eprintln!("  note: {n} x {kind}; first: {example}");
        }
        let other = std::mem::take(&mut *OTHER_PANICS.lock().unwrap_or_else(|e| e.into_inner()));
        assert!(other.is_empty(), "panics outside the trials: {other:#?}");
        if !self.failures.is_empty() {
            let shown: Vec<&String> = self.failures.iter().take(8).collect();
            panic!(
                "{}: {} of {} mutants failed; the first {}:\n{}",
                self.area,
                self.failures.len(),
                self.trials,
                shown.len(),
                shown
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join("\n")
            );
        }
    }
}

fn show(k: &[u8]) -> String {
    let s = String::from_utf8_lossy(&k[..k.len().min(48)]);
    if k.len() > 48 {
        format!("{s:?}..({} bytes)", k.len())
    } else {
        format!("{s:?}")
    }
}

fn show_opt(v: Option<&[u8]>) -> String {
    v.map_or_else(|| "None".to_string(), show)
}

/// An error must be `Corruption`.
fn corrupt(e: Error, ctx: &str) -> Result<(), String> {
    if e.is_corruption() {
        Ok(())
    } else {
        Err(format!("{ctx}: an error that is not Corruption: {e}"))
    }
}

/// Drains an iterator of entries: `(entries, ended in an error)`. More than
/// `limit` entries is a failure (an iterator that does not end).
fn collect(
    it: impl Iterator<Item = bloomlsm::Result<(Bytes, Bytes)>>,
    limit: usize,
    what: &str,
) -> Result<(Entries, bool), String> {
    let mut out = Vec::new();
    for item in it {
        match item {
            Ok((k, v)) => {
                out.push((k.to_vec(), v.to_vec()));
                if out.len() > limit {
                    return Err(format!(
                        "{what}: more than {limit} entries, an endless iterator?"
                    ));
                }
            }
            Err(e) => {
                corrupt(e, what)?;
                return Ok((out, true));
            }
        }
    }
    Ok((out, false))
}

// ---------------------------------------------------------------- encodings

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn varint(v: u64) -> Vec<u8> {
    let mut out = Vec::new();
    put_varint(&mut out, v);
    out
}

fn get_varint(b: &[u8]) -> Option<(u64, usize)> {
    let mut v = 0u64;
    for (i, &x) in b.iter().enumerate().take(10) {
        v |= u64::from(x & 0x7f) << (7 * i);
        if x & 0x80 == 0 {
            return Some((v, i + 1));
        }
    }
    None
}

/// A sorted block of `es` in the documented format (docs/format.md §4),
/// byte for byte what `BlockBuilder` writes for sorted keys; unsorted or
/// repeated keys are written as given.
fn encode_block(es: &[(Vec<u8>, Vec<u8>)], restart_interval: usize) -> Vec<u8> {
    let mut out = Vec::new();
    let mut restarts = Vec::new();
    let mut last: &[u8] = &[];
    for (i, (k, v)) in es.iter().enumerate() {
        let shared = if i % restart_interval == 0 {
            restarts.push(out.len() as u32);
            0
        } else {
            k.iter().zip(last).take_while(|(a, b)| a == b).count()
        };
        put_varint(&mut out, shared as u64);
        put_varint(&mut out, (k.len() - shared) as u64);
        put_varint(&mut out, v.len() as u64);
        out.extend_from_slice(&k[shared..]);
        out.extend_from_slice(v);
        last = k;
    }
    if restarts.is_empty() {
        restarts.push(0);
    }
    for r in &restarts {
        out.extend_from_slice(&r.to_le_bytes());
    }
    out.extend_from_slice(&(restarts.len() as u32).to_le_bytes());
    out
}

/// The entries of an intact sorted block.
fn block_entries(payload: &[u8]) -> Entries {
    let b = Block::new(Bytes::copy_from_slice(payload)).unwrap();
    let mut it = b.iter(KeyFormat::Plain);
    let mut out = Vec::new();
    while it.advance().unwrap() {
        out.push((it.key().to_vec(), it.value_slice().to_vec()));
    }
    out
}

/// Spans `(start, end)` of the entries of an uncompressed sorted block, and
/// where its restart array starts.
fn entry_spans(p: &[u8]) -> Option<(Vec<(usize, usize)>, usize)> {
    let n = p.len();
    let nr = u32::from_le_bytes(p.get(n.checked_sub(4)?..)?.try_into().ok()?) as usize;
    let ro = n.checked_sub(4 + 4 * nr)?;
    let mut spans = Vec::new();
    let mut at = 0;
    while at < ro {
        let (_, a) = get_varint(&p[at..ro])?;
        let (ns, b) = get_varint(&p[at + a..ro])?;
        let (vl, c) = get_varint(&p[at + a + b..ro])?;
        let end = at + a + b + c + ns as usize + vl as usize;
        if end > ro {
            return None;
        }
        spans.push((at, end));
        at = end;
    }
    Some((spans, ro))
}

// ---------------------------------------------------------------- byte mutations

/// Changes bytes of `p` in place (its length kept); returns what it did.
fn mutate_fixed(rng: &mut Rng, p: &mut [u8]) -> String {
    let n = p.len();
    if n == 0 {
        return "nothing (empty payload)".into();
    }
    let mut d = Vec::new();
    for _ in 0..1 + rng.below(3) {
        let i = rng.below(n);
        match rng.below(9) {
            0 => {
                let b = rng.below(8);
                p[i] ^= 1 << b;
                d.push(format!("bit {b} of byte {i} flipped"));
            }
            1 => {
                let v = rng.pick(&[0u8, 1, 0x7f, 0x80, 0xff, 0x0f]);
                p[i] = v;
                d.push(format!("byte {i} = {v:#04x}"));
            }
            2 => {
                let v = rng.next() as u8;
                p[i] = v;
                d.push(format!("byte {i} = {v:#04x}"));
            }
            3 => {
                let len = 1 + rng.below(8.min(n - i));
                for x in &mut p[i..i + len] {
                    *x = rng.next() as u8;
                }
                d.push(format!("{len} random bytes at {i}"));
            }
            4 => {
                let j = rng.below(n);
                let len = 1 + rng.below(16.min(n - i.max(j)));
                p.copy_within(j..j + len, i);
                d.push(format!("{len} bytes from {j} copied to {i}"));
            }
            5 => {
                let j = rng.below(n);
                p.swap(i, j);
                d.push(format!("bytes {i} and {j} swapped"));
            }
            6 => {
                let delta = rng.pick(&[1u8, 2, 255, 254]);
                p[i] = p[i].wrapping_add(delta);
                d.push(format!("byte {i} += {delta}"));
            }
            7 if n >= 4 => {
                let i = rng.below(n - 3);
                let r = rng.below(n) as u32;
                let v = rng.pick(&[0u32, 1, n as u32, n as u32 - 4, u32::MAX, 0x7fff_ffff, r]);
                p[i..i + 4].copy_from_slice(&v.to_le_bytes());
                d.push(format!("u32 at {i} = {v}"));
            }
            _ => {
                p[i] |= 0x80;
                d.push(format!("byte {i} |= 0x80"));
            }
        }
    }
    d.join(", ")
}

/// Changes `p`, possibly its length; returns what it did.
fn mutate_var(rng: &mut Rng, p: &mut Vec<u8>) -> String {
    let n = p.len();
    match rng.below(8) {
        0 => {
            let i = rng.below(n + 1);
            let v = rng.next() as u8;
            p.insert(i, v);
            format!("byte {v:#04x} inserted at {i}")
        }
        1 if n > 0 => {
            let i = rng.below(n);
            p.remove(i);
            format!("byte {i} removed")
        }
        2 => {
            let at = rng.below(n + 1);
            p.truncate(at);
            format!("cut to {at} bytes")
        }
        3 if n > 0 => {
            let i = rng.below(n);
            let len = 1 + rng.below(16.min(n - i));
            let copy = p[i..i + len].to_vec();
            let at = rng.below(n + 1);
            p.splice(at..at, copy);
            format!("{len} bytes from {i} repeated at {at}")
        }
        _ => mutate_fixed(rng, p),
    }
}

// ---------------------------------------------------------------- tables

#[derive(Clone)]
struct TableConfig {
    filter: Option<FilterPolicy>,
    compression: Compression,
    partition_bytes: usize,
    index_partition_bytes: usize,
    restart_interval: usize,
    checksum: ChecksumType,
    keys: usize,
    prefix: Option<PrefixExtractor>,
    range_bits: Option<f64>,
}

fn tkey(i: usize) -> Vec<u8> {
    format!("t{:05}", i * 3).into_bytes()
}

/// The value of table key `k`: derived from it, so a value under another key shows.
fn tval(k: &[u8]) -> Vec<u8> {
    let h = key_hash(k);
    let mut v = k.to_vec();
    v.push(b'=');
    v.extend(std::iter::repeat_n(
        b'a' + (h % 26) as u8,
        (h >> 8) as usize % 40,
    ));
    v
}

fn table_entries(n: usize) -> Entries {
    (0..n)
        .map(|i| {
            let k = tkey(i);
            let v = tval(&k);
            (k, v)
        })
        .collect()
}

fn build_table(path: &Path, cfg: &TableConfig, es: &Entries) {
    let opts = TableBuilderOptions::default()
        .block_size(256)
        .restart_interval(cfg.restart_interval)
        .checksum(cfg.checksum)
        .filter(cfg.filter)
        .key_format(KeyFormat::Plain)
        .creation_time(Some(1_700_000_000))
        .compression(cfg.compression)
        .filter_partition_bytes(cfg.partition_bytes)
        .index_partition_bytes(cfg.index_partition_bytes)
        .prefix_extractor(cfg.prefix)
        .range_filter_bits_per_key(cfg.range_bits);
    let mut b = TableBuilder::new(File::create(path).unwrap(), path, opts);
    for (k, v) in es {
        b.add(k, v).unwrap();
    }
    b.finish().unwrap();
}

/// Where the blocks of a table are, and the entries of its index,
/// properties and metaindex.
struct Layout {
    good: Vec<u8>,
    footer: Footer,
    data: Vec<BlockHandle>,
    /// The whole filter block, or the partition index of a partitioned one.
    filter: Option<BlockHandle>,
    parts: Vec<BlockHandle>,
    /// The prefix filter block.
    prefix: Option<BlockHandle>,
    /// The range filter block.
    range: Option<BlockHandle>,
    /// The range-tombstone block (a store's table with range deletions).
    tombstones: Option<BlockHandle>,
    /// The index partitions of a two-level index (format version 4).
    index_parts: Vec<BlockHandle>,
    /// The index, or the top level of a two-level one.
    index: BlockHandle,
    props: BlockHandle,
    meta: BlockHandle,
    index_entries: Entries,
    /// The entries of each index partition.
    index_part_entries: Vec<Entries>,
    props_entries: Entries,
    meta_entries: Entries,
    /// Keys of the table (for realistic replacement values).
    keys: Vec<Vec<u8>>,
}

impl Layout {
    fn of(path: &Path) -> Layout {
        let good = std::fs::read(path).unwrap();
        let t = Table::open(path, TableOpenOptions::default()).unwrap();
        let footer = *t.footer();
        let index = footer.index;
        let props_at = index.offset + index.size + 5;
        let props = BlockHandle::new(props_at, footer.metaindex.offset - 5 - props_at);
        let payload = |h: BlockHandle| &good[h.offset as usize..(h.offset + h.size) as usize];
        let index_entries = block_entries(payload(index));
        let meta_entries = block_entries(payload(footer.metaindex));
        let index_parts: Vec<BlockHandle> = if t.index_partitions() > 0 {
            index_entries
                .iter()
                .map(|(_, v)| BlockHandle::decode_exact(v).unwrap())
                .collect()
        } else {
            Vec::new()
        };
        let l = Layout {
            footer,
            data: t
                .index_entries()
                .unwrap()
                .into_iter()
                .map(|(_, h)| h)
                .collect(),
            filter: t.filter_handle(),
            parts: t.filter_partitions().to_vec(),
            prefix: t.prefix_filter_handle(),
            range: t.range_filter_handle(),
            tombstones: meta_entries
                .iter()
                .find(|(k, _)| k == b"range_tombstones")
                .map(|(_, v)| BlockHandle::decode_exact(v).unwrap()),
            index_part_entries: index_parts
                .iter()
                .map(|&h| block_entries(payload(h)))
                .collect(),
            index_parts,
            index,
            props,
            meta: footer.metaindex,
            index_entries,
            props_entries: block_entries(payload(props)),
            meta_entries,
            keys: t.iter().map(|e| e.unwrap().0.to_vec()).step_by(7).collect(),
            good: good.clone(),
        };
        // The decoded tail, written again, is the table itself: the
        // entry-level mutants start from the exact layout.
        let again = l.rebuild_tail(
            &encode_block(&l.index_entries, 1),
            &encode_block(&l.props_entries, 1),
            None,
        );
        assert!(
            again == good,
            "{}: the tail does not rebuild",
            path.display()
        );
        if !l.index_parts.is_empty() {
            let parts: Vec<Entries> = l.index_part_entries.clone();
            let keys: Vec<Vec<u8>> = l.index_entries.iter().map(|(k, _)| k.clone()).collect();
            assert!(
                l.rebuild_index(&parts, &keys) == good,
                "{}: the two-level index does not rebuild",
                path.display()
            );
        }
        l
    }

    /// Bytes of the index partitions, trailers included (0: one block).
    fn index_parts_bytes(&self) -> u64 {
        self.index_parts
            .first()
            .map_or(0, |h| self.index.offset - h.offset)
    }

    /// The table with its two-level index written again from `parts` (the
    /// entries of each partition) and the top level's keys `keys`: the
    /// partitions back to back where they were, the top level's handles,
    /// `index.size`, the metaindex and the footer made to match.
    fn rebuild_index(&self, parts: &[Entries], keys: &[Vec<u8>]) -> Vec<u8> {
        let ck = self.footer.checksum;
        let start = self.index_parts[0].offset;
        let mut out = self.good[..start as usize].to_vec();
        let handles: Vec<BlockHandle> = parts
            .iter()
            .map(|es| append_block(&mut out, ck, &encode_block(es, 1)))
            .collect();
        let top: Entries = keys
            .iter()
            .zip(&handles)
            .map(|(k, h)| (k.clone(), h.encode()))
            .collect();
        let top = encode_block(&top, 1);
        let size = out.len() as u64 - start + top.len() as u64 + 5;
        let props = with_value(&self.props_entries, b"index.size", varint(size));
        self.rebuild_tail_after(out, &top, &encode_block(&props, 1), None)
    }

    fn payload(&self, h: BlockHandle) -> &[u8] {
        &self.good[h.offset as usize..(h.offset + h.size) as usize]
    }

    fn all_handles(&self) -> Vec<BlockHandle> {
        let mut v = self.data.clone();
        v.extend(self.filter);
        v.extend(&self.parts);
        v.extend(self.prefix);
        v.extend(self.range);
        v.extend(self.tombstones);
        v.extend(&self.index_parts);
        v.extend([self.index, self.props, self.meta]);
        v
    }

    /// The table with its index, properties and metaindex replaced: blocks
    /// written back to back after the filter, the metaindex's `properties`
    /// handle (unless `meta` is given) and the footer made to match.
    fn rebuild_tail(&self, index: &[u8], props: &[u8], meta: Option<&[u8]>) -> Vec<u8> {
        let out = self.good[..self.index.offset as usize].to_vec();
        self.rebuild_tail_after(out, index, props, meta)
    }

    /// [`Layout::rebuild_tail`] after the bytes `out`.
    fn rebuild_tail_after(
        &self,
        mut out: Vec<u8>,
        index: &[u8],
        props: &[u8],
        meta: Option<&[u8]>,
    ) -> Vec<u8> {
        let ck = self.footer.checksum;
        let ih = append_block(&mut out, ck, index);
        let ph = append_block(&mut out, ck, props);
        let meta = match meta {
            Some(m) => m.to_vec(),
            None => encode_block(
                &with_value(&self.meta_entries, b"properties", ph.encode()),
                1,
            ),
        };
        let mh = append_block(&mut out, ck, &meta);
        let f = Footer {
            metaindex: mh,
            index: ih,
            ..self.footer
        };
        let at = out.len() as u64;
        out.extend_from_slice(&f.encode(at));
        out
    }
}

fn append_block(out: &mut Vec<u8>, ck: ChecksumType, payload: &[u8]) -> BlockHandle {
    let h = BlockHandle::new(out.len() as u64, payload.len() as u64);
    out.extend_from_slice(payload);
    out.extend_from_slice(&block_trailer(ck, payload, 0, h.offset));
    h
}

fn with_value(es: &Entries, name: &[u8], value: Vec<u8>) -> Entries {
    es.iter()
        .map(|(k, v)| {
            if k == name {
                (k.clone(), value.clone())
            } else {
                (k.clone(), v.clone())
            }
        })
        .collect()
}

/// Rewrites the payload of block `h` with `edit` and reseals its trailer
/// (type `block_type`), so only the decoders can catch the damage.
fn reseal(
    bytes: &mut [u8],
    ck: ChecksumType,
    h: BlockHandle,
    block_type: u8,
    edit: impl FnOnce(&mut [u8]) -> String,
) -> String {
    let (s, e) = (h.offset as usize, (h.offset + h.size) as usize);
    let d = edit(&mut bytes[s..e]);
    let tr = block_trailer(ck, &bytes[s..e], block_type, h.offset);
    bytes[e..e + 5].copy_from_slice(&tr);
    d
}

const PROPERTY_NAMES: [&str; 23] = [
    "compression",
    "creation.time",
    "data.blocks",
    "data.raw_max",
    "data.raw_size",
    "data.size",
    "deletions",
    "entries",
    "filter.bits_per_key",
    "filter.keys",
    "filter.partitions",
    "filter.policy",
    "filter.probes",
    "filter.size",
    "format.version",
    "index.size",
    "key.format",
    "key.largest",
    "key.smallest",
    "raw.key.bytes",
    "raw.value.bytes",
    "user_key.largest",
    "user_key.smallest",
];

const KNOWN_STRINGS: [&str; 16] = [
    "plain",
    "internal",
    "none",
    "lz4",
    "zstd:3",
    "zstd:0",
    "zstd:99",
    "blocked512",
    "bloom",
    "ribbon",
    "fuse8",
    "fuse16",
    "",
    "~",
    "properties",
    "filter.blocked512",
];

#[derive(Clone, Copy, PartialEq, Debug)]
enum Tail {
    Index,
    Props,
    Meta,
}

/// A changed number: edge values and near misses of `n`.
fn number_near(rng: &mut Rng, n: u64) -> u64 {
    let r = rng.below(1000) as u64;
    rng.pick(&[
        0,
        1,
        2,
        n.wrapping_sub(1),
        n + 1,
        n.saturating_mul(2),
        n / 2,
        n + 5,
        u64::from(u32::MAX),
        1 << 32,
        1 << 62,
        u64::MAX,
        r,
    ])
}

fn mutate_handle(rng: &mut Rng, h: BlockHandle, all: &[BlockHandle]) -> BlockHandle {
    let other = rng.pick(all);
    match rng.below(8) {
        0 => BlockHandle::new(h.offset + 1, h.size),
        1 => BlockHandle::new(h.offset.saturating_sub(1), h.size),
        2 => BlockHandle::new(h.offset, h.size + rng.pick(&[1, 5, 6])),
        3 => BlockHandle::new(h.offset, h.size.saturating_sub(1)),
        4 | 5 => other,
        6 => BlockHandle::new(0, rng.pick(&[0, 1, h.size])),
        _ => BlockHandle::new(h.offset, rng.pick(&[1 << 40, u64::MAX / 2, u64::MAX])),
    }
}

/// Entry-level change of a decoded index, properties or metaindex block.
fn mutate_entries(rng: &mut Rng, es: &mut Entries, tail: Tail, l: &Layout) -> String {
    let handles = l.all_handles();
    let mut d = Vec::new();
    for _ in 0..1 + rng.below(2) {
        let n = es.len();
        let j = rng.below(n);
        match rng.below(10) {
            _ if n == 0 => {
                es.push((b"properties".to_vec(), l.props.encode()));
                d.push("an entry added to an empty block".to_string());
            }
            0..=3 => {
                let (k, v) = es[j].clone();
                let name = show(&k);
                let newv = if let Some(h) =
                    BlockHandle::decode_exact(&v).filter(|_| tail != Tail::Props)
                {
                    let h2 = mutate_handle(rng, h, &handles);
                    d.push(format!("{name}: handle {h:?} -> {h2:?}"));
                    h2.encode()
                } else if let Some((x, len)) = get_varint(&v).filter(|&(_, len)| len == v.len())
                    && tail == Tail::Props
                    && !k.starts_with(b"key")
                    && !k.starts_with(b"user_key")
                    && rng.below(5) > 0
                {
                    let y = number_near(rng, x);
                    d.push(format!("{name}: {x} ({len} bytes) -> {y}"));
                    varint(y)
                } else if k == b"filter.bits_per_key" && rng.below(3) > 0 {
                    let f =
                        rng.pick(&[0.0, -1.0, f64::NAN, f64::INFINITY, 1e-300, 1e300, 1.0, 64.0]);
                    d.push(format!("{name}: -> {f}"));
                    f.to_le_bytes().to_vec()
                } else {
                    let s = match rng.below(6) {
                        0 | 1 => rng.pick(&l.keys),
                        2 => es[rng.below(n)].1.clone(),
                        3 => rng.pick(&KNOWN_STRINGS).as_bytes().to_vec(),
                        _ => {
                            let mut v = v.clone();
                            mutate_var(rng, &mut v);
                            v
                        }
                    };
                    d.push(format!("{name}: {} -> {}", show(&v), show(&s)));
                    s
                };
                es[j].1 = newv;
            }
            4 | 5 => {
                let old = es[j].0.clone();
                let k = match (tail, rng.below(4)) {
                    (Tail::Index, 0 | 1) => rng.pick(&l.keys),
                    (Tail::Index, 2) => es[rng.below(n)].0.clone(),
                    (_, 0) => rng.pick(&PROPERTY_NAMES).as_bytes().to_vec(),
                    (_, 1) => rng.pick(&KNOWN_STRINGS).as_bytes().to_vec(),
                    _ => {
                        let mut k = old.clone();
                        mutate_var(rng, &mut k);
                        k
                    }
                };
                d.push(format!("key {} -> {}", show(&old), show(&k)));
                es[j].0 = k;
            }
            6 => {
                let (k, _) = es.remove(j);
                d.push(format!("entry {} removed", show(&k)));
            }
            7 => {
                let e = es[j].clone();
                d.push(format!("entry {} repeated", show(&e.0)));
                es.insert(j, e);
            }
            8 if n > 1 => {
                let j = j.min(n - 2);
                es.swap(j, j + 1);
                d.push(format!("entries {j} and {} swapped", j + 1));
            }
            _ => {
                let e = match tail {
                    Tail::Index => (rng.pick(&l.keys), rng.pick(&l.data).encode()),
                    Tail::Props => (
                        rng.pick(&PROPERTY_NAMES).as_bytes().to_vec(),
                        varint(rng.below(300) as u64),
                    ),
                    Tail::Meta => {
                        let name = rng.pick(&[
                            "properties",
                            "filter.blocked512",
                            "filter.ribbon",
                            "filter.bloom",
                            "filter.fuse16",
                            "filter_partitions.blocked512",
                            "filter_partitions.ribbon",
                            "zzz.later",
                        ]);
                        (name.as_bytes().to_vec(), rng.pick(&handles).encode())
                    }
                };
                d.push(format!("entry {} = {} added", show(&e.0), show(&e.1)));
                es.insert(rng.below(n + 1), e);
            }
        }
    }
    // Sorted again half the time, so the block itself is in order and the
    // checks behind it are reached.
    if rng.one_in(2) {
        es.sort_by(|a, b| a.0.cmp(&b.0));
        d.push("sorted".into());
    }
    d.join("; ")
}

/// `(start, end, seq)` of each range tombstone, as the block lists them.
type Tombstones = Vec<(Vec<u8>, Vec<u8>, u64)>;

/// The range-tombstone block's entries (docs/format.md §6.1), if it decodes.
fn decode_tombstones(p: &[u8]) -> Option<Tombstones> {
    let (n, mut at) = get_varint(p)?;
    let mut out = Vec::new();
    for _ in 0..n {
        let mut lp = [Vec::new(), Vec::new()];
        for x in &mut lp {
            let (len, a) = get_varint(p.get(at..)?)?;
            let s = at + a;
            *x = p.get(s..s.checked_add(len as usize)?)?.to_vec();
            at = s + len as usize;
        }
        let seq = u64::from_le_bytes(p.get(at..at + 8)?.try_into().ok()?);
        at += 8;
        let [start, end] = lp;
        out.push((start, end, seq));
    }
    (at == p.len()).then_some(out)
}

/// The range-tombstone block of `ts`, with `count` as its count.
fn encode_tombstones(ts: &Tombstones, count: u64) -> Vec<u8> {
    let mut out = varint(count);
    for (start, end, seq) in ts {
        put_varint(&mut out, start.len() as u64);
        out.extend_from_slice(start);
        put_varint(&mut out, end.len() as u64);
        out.extend_from_slice(end);
        out.extend_from_slice(&seq.to_le_bytes());
    }
    out
}

/// A numeric property of table `l`.
fn prop_number(l: &Layout, name: &[u8]) -> Option<u64> {
    let v = &l.props_entries.iter().find(|(k, _)| k[..] == name[..])?.1;
    get_varint(v).map(|x| x.0)
}

/// Entry-level change of decoded range tombstones: `(what was done, the
/// count to write)`.
fn mutate_tombstones(rng: &mut Rng, ts: &mut Tombstones, l: &Layout) -> (String, u64) {
    let n = ts.len();
    let j = rng.below(n);
    // The table's user keys (internal keys without their 8-byte trailer).
    let user_keys: Vec<Vec<u8>> = l
        .keys
        .iter()
        .map(|k| k[..k.len().saturating_sub(8)].to_vec())
        .collect();
    let mut count = n as u64;
    let d = match rng.below(10) {
        _ if n == 0 => {
            count = 1;
            "count 0 -> 1".to_string()
        }
        0..=2 => {
            let s = ts[j].2;
            let max = prop_number(l, b"seq.max").unwrap_or(s);
            let other = ts[rng.below(n)].2;
            let new = rng.pick(&[
                0,
                1,
                s.wrapping_sub(1),
                s + 1,
                max,
                max + 1,
                other,
                MAX_SEQUENCE,
                MAX_SEQUENCE + 1,
                u64::MAX,
            ]);
            ts[j].2 = new;
            format!("tombstone {j}: seq {s} -> {new}")
        }
        3..=5 => {
            let end = rng.one_in(2);
            let old = if end { &ts[j].1 } else { &ts[j].0 }.clone();
            let new = match rng.below(5) {
                0 | 1 => rng.pick(&user_keys),
                2 => {
                    let o = rng.below(n);
                    rng.pick(&[ts[o].0.clone(), ts[o].1.clone()])
                }
                3 => {
                    let mut k = old.clone();
                    if let Some(b) = k.last_mut() {
                        *b = b.wrapping_add(rng.pick(&[1, 255]));
                    }
                    k
                }
                _ => Vec::new(),
            };
            let what = if end { "end" } else { "start" };
            let d = format!("tombstone {j}: {what} {} -> {}", show(&old), show(&new));
            if end {
                ts[j].1 = new;
            } else {
                ts[j].0 = new;
            }
            d
        }
        6 if n > 1 => {
            let j = j.min(n - 2);
            ts.swap(j, j + 1);
            format!("tombstones {j} and {} swapped", j + 1)
        }
        7 => {
            let t = ts[j].clone();
            ts[j] = (t.1, t.0, t.2);
            format!("tombstone {j}: start and end swapped")
        }
        8 => {
            ts[j].1 = ts[j].0.clone();
            format!("tombstone {j}: end = start")
        }
        _ => {
            count = rng.pick(&[n as u64 + 1, n as u64 - 1, 0, u64::MAX]);
            format!("count {n} -> {count}")
        }
    };
    (d, count)
}

/// A structural change of an uncompressed data block (its size kept).
fn mutate_data_structure(rng: &mut Rng, p: &mut [u8]) -> String {
    let Some((spans, ro)) = entry_spans(p) else {
        return mutate_fixed(rng, p);
    };
    let n = p.len();
    let nr = (n - ro - 4) / 4;
    if spans.is_empty() {
        return mutate_fixed(rng, p);
    }
    match rng.below(5) {
        0 | 1 => {
            let r = rng.below(nr);
            let (s, _) = rng.pick(&spans);
            let v = match rng.below(4) {
                0 => s + 1,
                1 => ro,
                2 => rng.below(ro),
                _ => s,
            };
            p[ro + 4 * r..ro + 4 * r + 4].copy_from_slice(&(v as u32).to_le_bytes());
            format!("restart {r} of {nr} -> {v} (entries end at {ro})")
        }
        2 if spans.len() > 1 => {
            let i = rng.below(spans.len() - 1);
            let (a, b, c) = (spans[i].0, spans[i].1, spans[i + 1].1);
            p[a..c].rotate_left(b - a);
            format!("entries {i} and {} swapped", i + 1)
        }
        3 => {
            let v = (nr as u32).wrapping_add(rng.pick(&[1, u32::MAX]));
            p[n - 4..].copy_from_slice(&v.to_le_bytes());
            format!("restart count {nr} -> {v}")
        }
        _ => {
            // One length varint of an entry (one byte long) changed.
            let (s, _) = rng.pick(&spans);
            let f = rng.below(3);
            let mut at = s;
            for _ in 0..f {
                at += get_varint(&p[at..]).map_or(1, |x| x.1);
            }
            if p[at] < 0x7f {
                let old = p[at];
                p[at] = rng.pick(&[old + 1, old.saturating_sub(1), 0, 0x7f]);
                format!("length field {f} of the entry at {s}: {old} -> {}", p[at])
            } else {
                mutate_fixed(rng, p)
            }
        }
    }
}

/// Which blocks of a table a test damages.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Area {
    /// Data blocks.
    Data,
    /// The whole filter, or the partitions and their index; and the prefix
    /// and range filter blocks, if any.
    Filters,
    /// The properties block.
    Properties,
    /// The index (the partitions and the top level of a two-level one),
    /// the metaindex and the footer.
    Index,
    /// The range-tombstone block.
    Tombstones,
}

/// A mutant of the table `l` in one of `areas`: `(bytes, what was done,
/// what kind of block changed)`.
fn table_mutant(rng: &mut Rng, l: &Layout, areas: &[Area]) -> (Vec<u8>, String, Damaged) {
    #[derive(Clone, Copy)]
    enum Part {
        Data,
        Filter,
        Partition,
        PartitionIndex,
        PrefixFilter,
        RangeFilter,
        Tombstones,
        IndexPartition,
        Index,
        Props,
        Meta,
        Footer,
    }
    let mut parts = Vec::new();
    for a in areas {
        match a {
            Area::Data => parts.push(Part::Data),
            Area::Filters if l.parts.is_empty() => parts.extend(l.filter.map(|_| Part::Filter)),
            Area::Filters => parts.extend([Part::Partition, Part::Partition, Part::PartitionIndex]),
            Area::Properties => parts.push(Part::Props),
            Area::Index => {
                parts.extend([
                    Part::Index,
                    Part::Index,
                    Part::Meta,
                    Part::Meta,
                    Part::Footer,
                ]);
                if !l.index_parts.is_empty() {
                    parts.extend([Part::IndexPartition; 3]);
                }
            }
            // As often as the other blocks of the area together.
            Area::Tombstones if l.tombstones.is_some() => parts.extend([Part::Tombstones; 8]),
            Area::Tombstones => {}
        }
    }
    if areas.contains(&Area::Filters) && l.prefix.is_some() {
        parts.push(Part::PrefixFilter);
    }
    if areas.contains(&Area::Filters) && l.range.is_some() {
        parts.push(Part::RangeFilter);
    }
    let ck = l.footer.checksum;
    let mut bytes = l.good.clone();
    let entries_mode = rng.below(5) < 3;
    match rng.pick(&parts) {
        Part::Data => {
            let i = rng.below(l.data.len());
            let h = l.data[i];
            let ty = l.good[(h.offset + h.size) as usize];
            let d = if rng.one_in(12) {
                let t = rng.pick(&[0u8, 1, 2, 3, 0xff]);
                reseal(&mut bytes, ck, h, t, |_| format!("block type {ty} -> {t}"))
            } else if ty == 0 && rng.one_in(2) {
                reseal(&mut bytes, ck, h, ty, |p| mutate_data_structure(rng, p))
            } else {
                reseal(&mut bytes, ck, h, ty, |p| mutate_fixed(rng, p))
            };
            (
                bytes,
                format!("data block {i} (type {ty}) at {}: {d}", h.offset),
                Damaged::TableData,
            )
        }
        p @ (Part::Filter
        | Part::Partition
        | Part::PartitionIndex
        | Part::PrefixFilter
        | Part::RangeFilter) => {
            let (h, name) = match p {
                Part::Filter => (l.filter.unwrap(), "filter".to_string()),
                Part::PrefixFilter => (l.prefix.unwrap(), "prefix filter".to_string()),
                Part::RangeFilter => (l.range.unwrap(), "range filter".to_string()),
                Part::Partition => {
                    let i = rng.below(l.parts.len());
                    (l.parts[i], format!("filter partition {i}"))
                }
                _ => (l.filter.unwrap(), "partition index".to_string()),
            };
            // Half the time within the last 36 bytes: the filter's trailer
            // (and a Ribbon filter's header), where its sizes are.
            let tail_only = rng.one_in(2);
            let d = reseal(&mut bytes, ck, h, 0, |p| {
                let from = if tail_only {
                    p.len().saturating_sub(36)
                } else {
                    0
                };
                mutate_fixed(rng, &mut p[from..])
            });
            (
                bytes,
                format!("{name} at {}: {d}", h.offset),
                Damaged::TableMeta,
            )
        }
        Part::Tombstones => {
            let h = l.tombstones.unwrap();
            let old = l.payload(h);
            if entries_mode && let Some(mut ts) = decode_tombstones(old) {
                let (d, count) = mutate_tombstones(rng, &mut ts, l);
                let new = encode_tombstones(&ts, count);
                // Only mutants of the block's size: a store's MANIFEST
                // records the table's.
                if new.len() == old.len() {
                    reseal(&mut bytes, ck, h, 0, |p| {
                        p.copy_from_slice(&new);
                        String::new()
                    });
                    let what = format!("range tombstones at {}: {d}", h.offset);
                    return (bytes, what, Damaged::TableTombstones);
                }
            }
            let d = reseal(&mut bytes, ck, h, 0, |p| mutate_fixed(rng, p));
            let what = format!("range-tombstone block bytes at {}: {d}", h.offset);
            (bytes, what, Damaged::TableTombstones)
        }
        Part::IndexPartition => {
            let p = rng.below(l.index_parts.len());
            let h = l.index_parts[p];
            if !entries_mode {
                let d = reseal(&mut bytes, ck, h, 0, |x| mutate_fixed(rng, x));
                let what = format!("index partition {p} bytes: {d}");
                return (bytes, what, Damaged::TableMeta);
            }
            let mut parts = l.index_part_entries.clone();
            let d = mutate_entries(rng, &mut parts[p], Tail::Index, l);
            let mut keys: Vec<Vec<u8>> = l.index_entries.iter().map(|(k, _)| k.clone()).collect();
            // Half the time the top level follows the partition's last key,
            // as a writer would have it, so the open's cross-check of the
            // two passes and the checks behind it are reached.
            let follow = rng.one_in(2);
            if follow && let Some((k, _)) = parts[p].last() {
                keys[p] = k.clone();
            }
            let what = format!(
                "index partition {p} entries: {d}{}",
                if follow {
                    "; top-level key follows"
                } else {
                    ""
                }
            );
            (l.rebuild_index(&parts, &keys), what, Damaged::TableMeta)
        }
        p @ (Part::Index | Part::Props | Part::Meta) => {
            let (h, tail) = match p {
                Part::Index => (l.index, Tail::Index),
                Part::Props => (l.props, Tail::Props),
                _ => (l.meta, Tail::Meta),
            };
            if !entries_mode {
                let d = reseal(&mut bytes, ck, h, 0, |p| mutate_fixed(rng, p));
                return (
                    bytes,
                    format!("{tail:?} block bytes: {d}"),
                    Damaged::TableMeta,
                );
            }
            let index = l.payload(l.index);
            let props = l.payload(l.props);
            let (bytes, d) = match tail {
                Tail::Index => {
                    let mut es = l.index_entries.clone();
                    let d = mutate_entries(rng, &mut es, tail, l);
                    let ib = encode_block(&es, 1);
                    // `index.size` follows the block (and the partitions
                    // before it), as a writer would have it (the open
                    // checks the index, not its size).
                    let size = l.index_parts_bytes() + ib.len() as u64 + 5;
                    let props = encode_block(
                        &with_value(&l.props_entries, b"index.size", varint(size)),
                        1,
                    );
                    (l.rebuild_tail(&ib, &props, None), d)
                }
                Tail::Props => {
                    let mut es = l.props_entries.clone();
                    let d = mutate_entries(rng, &mut es, tail, l);
                    (l.rebuild_tail(index, &encode_block(&es, 1), None), d)
                }
                Tail::Meta => {
                    let mut es = l.meta_entries.clone();
                    let d = mutate_entries(rng, &mut es, tail, l);
                    (l.rebuild_tail(index, props, Some(&encode_block(&es, 1))), d)
                }
            };
            (bytes, format!("{tail:?} entries: {d}"), Damaged::TableMeta)
        }
        Part::Footer => {
            let at = l.good.len() - 52;
            let f = &mut bytes[at..];
            let d = if rng.one_in(3) {
                mutate_fixed(rng, &mut f[..40])
            } else {
                let field = rng.below(4);
                let old = u64::from_le_bytes(f[8 * field..8 * field + 8].try_into().unwrap());
                let h = rng.pick(&l.all_handles());
                let v = match rng.below(3) {
                    0 => number_near(rng, old),
                    1 if field.is_multiple_of(2) => h.offset,
                    _ => h.size,
                };
                f[8 * field..8 * field + 8].copy_from_slice(&v.to_le_bytes());
                format!("footer field {field}: {old} -> {v}")
            };
            if let Some(c) = ChecksumType::from_byte(f[32]) {
                let sum = c.checksum(&[&f[..40]]) ^ offset_mix(at as u64);
                f[40..44].copy_from_slice(&sum.to_le_bytes());
            }
            (bytes, format!("footer: {d}"), Damaged::TableMeta)
        }
    }
}

/// What a table held before the damage.
struct Expect {
    es: Entries,
    map: BTreeMap<Vec<u8>, Vec<u8>>,
    absent: Vec<Vec<u8>>,
}

impl Expect {
    fn new(es: Entries) -> Self {
        let map = es.iter().cloned().collect();
        let mut absent: Vec<Vec<u8>> = es
            .iter()
            .step_by(5)
            .map(|(k, _)| {
                let mut a = k.clone();
                a.push(b'!');
                a
            })
            .collect();
        absent.extend([b"a".to_vec(), b"zzz".to_vec(), b"t".to_vec()]);
        Expect { es, map, absent }
    }
}

/// Opens the damaged table and reads it every way (module docs).
fn check_table(
    path: &Path,
    ex: &Expect,
    on_demand: bool,
    data_touched: bool,
    rng: &mut Rng,
    notes: &mut Notes,
) -> Result<&'static str, String> {
    // On demand: the filter and the index partitions are read (and
    // checked again) when a lookup needs them, not held from the open.
    let opts = TableOpenOptions::default()
        .filter_on_demand(on_demand)
        .index_on_demand(on_demand);
    let t = match Table::open(path, opts) {
        Ok(t) => t,
        Err(e) => {
            corrupt(e, "Table::open")?;
            return Ok("open refused");
        }
    };
    let limit = std::fs::metadata(path).map_or(1 << 20, |m| m.len() as usize);
    // Answers that differ from the original table's.
    let mut wrong: Vec<String> = Vec::new();
    let mut read_errors = 0;
    let mut gets: BTreeMap<Vec<u8>, Option<Vec<u8>>> = BTreeMap::new();
    for k in ex.es.iter().map(|(k, _)| k).chain(&ex.absent) {
        match t.get(k, key_hash(k)) {
            Ok(r) => {
                if let Some((gk, _)) = &r.entry
                    && gk[..] != k[..]
                {
                    return Err(format!("get {}: an entry of key {}", show(k), show(gk)));
                }
                let got = r.entry.map(|(_, v)| v.to_vec());
                let want = ex.map.get(k);
                if got.as_ref() != want {
                    wrong.push(format!(
                        "get {} gives {}, the table held {}",
                        show(k),
                        show_opt(got.as_deref()),
                        show_opt(want.map(|v| &v[..]))
                    ));
                }
                gets.insert(k.clone(), got);
            }
            Err(e) => {
                corrupt(e, &format!("get {}", show(k)))?;
                read_errors += 1;
            }
        }
    }
    let (scan, scan_failed) = collect(t.iter(), limit, "iter")?;
    // An error may end a read early: what it gave before must be right.
    let mismatch = |got: &Entries, want: &[(Vec<u8>, Vec<u8>)], failed: bool| {
        if failed {
            got.len() > want.len() || got[..] != want[..got.len()]
        } else {
            got[..] != want[..]
        }
    };
    if mismatch(&scan, &ex.es, scan_failed) {
        wrong.push(format!(
            "iter gives {} entries{} unlike the table's {}",
            scan.len(),
            if scan_failed { " then an error," } else { "" },
            ex.es.len()
        ));
    }
    let mut targets = vec![
        ex.es[rng.below(ex.es.len())].0.clone(),
        rng.pick(&ex.absent),
    ];
    targets.extend([b"".to_vec(), b"\xff".to_vec()]);
    let mut froms = Vec::new();
    for target in targets {
        let (items, failed) = collect(t.iter_from(&target), limit, "iter_from")?;
        let from = ex.es.partition_point(|(k, _)| *k < target);
        if mismatch(&items, &ex.es[from..], failed) {
            wrong.push(format!(
                "iter_from {} differs from the table's",
                show(&target)
            ));
        }
        froms.push((target, items, failed));
    }
    if let Err(e) = t.verify_all() {
        corrupt(e, "verify_all")?;
        if !data_touched && let Some(w) = wrong.first() {
            notes.push((
                "wrong answer before verify_all reported the table".into(),
                w.clone(),
            ));
        }
        return Ok(if read_errors > 0 || scan_failed {
            "read error"
        } else {
            "verify_all error"
        });
    }
    // verify_all passed: the table must agree with itself...
    if scan_failed {
        return Err("verify_all passed, the scan failed".into());
    }
    if let Some(w) = scan.windows(2).find(|w| w[0].0 >= w[1].0) {
        return Err(format!(
            "verify_all passed, the scan gives {} before {}",
            show(&w[0].0),
            show(&w[1].0)
        ));
    }
    if scan.len() as u64 != t.entries() {
        return Err(format!(
            "verify_all passed, the scan has {} entries, the table says {}",
            scan.len(),
            t.entries()
        ));
    }
    let scanned: BTreeMap<&[u8], &[u8]> = scan.iter().map(|(k, v)| (&k[..], &v[..])).collect();
    for (k, v) in &scan {
        match t.get(k, key_hash(k)) {
            Ok(r) if r.entry.as_ref().is_some_and(|(_, gv)| gv[..] == v[..]) => {}
            Ok(r) => {
                return Err(format!(
                    "verify_all passed, the scan has {} = {}, get gives {} (filter checked {}, \
                     negative {}, range skipped {})",
                    show(k),
                    show(v),
                    show_opt(r.entry.as_ref().map(|(_, v)| &v[..])),
                    r.filter_checked,
                    r.filter_negative,
                    r.key_range_skipped
                ));
            }
            Err(e) => {
                corrupt(e, "get")?;
                notes.push((
                    "verify_all passed, a get of a scanned key failed".into(),
                    show(k),
                ));
            }
        }
    }
    for (k, got) in &gets {
        if got.as_deref() != scanned.get(&k[..]).copied() {
            return Err(format!(
                "verify_all passed, get {} gives {}, the scan {}",
                show(k),
                show_opt(got.as_deref()),
                show_opt(scanned.get(&k[..]).copied())
            ));
        }
    }
    for (target, items, failed) in &froms {
        let from = scan.partition_point(|(k, _)| k < target);
        if *failed {
            notes.push((
                "verify_all passed, an iter_from failed".into(),
                show(target),
            ));
        } else if items[..] != scan[from..] {
            return Err(format!(
                "verify_all passed, iter_from {} gives {} entries starting {}, the scan {} \
                 starting {}",
                show(target),
                items.len(),
                show_opt(items.first().map(|e| &e.0[..])),
                scan.len() - from,
                show_opt(scan.get(from).map(|e| &e.0[..]))
            ));
        }
    }
    // ... and, if only its metadata was damaged, be the original table.
    if !data_touched && let Some(w) = wrong.first() {
        return Err(format!("verify_all passed, but {w}"));
    }
    Ok(if read_errors > 0 {
        "verified, some reads failed"
    } else {
        "verified"
    })
}

/// The table designs: whole blocked512 filter; Ribbon + LZ4 (format 2);
/// fuse16 with a range filter; partitioned blocked512 (format 3); Bloom +
/// zstd, xxh3 checksums, restart interval 1; a two-level index over LZ4
/// blocks with a partitioned filter (format 4).
fn designs() -> Vec<(&'static str, TableConfig)> {
    let base = TableConfig {
        filter: Some(FilterPolicy::blocked512(10.0)),
        compression: Compression::None,
        partition_bytes: 0,
        index_partition_bytes: 0,
        restart_interval: 16,
        checksum: ChecksumType::Crc32,
        keys: 120,
        prefix: None,
        range_bits: None,
    };
    let zstd = if cfg!(feature = "zstd") {
        Compression::Zstd(1)
    } else {
        Compression::Lz4
    };
    vec![
        ("blocked512", base.clone()),
        (
            "ribbon+lz4",
            TableConfig {
                filter: Some(FilterPolicy::ribbon(7.0)),
                compression: Compression::Lz4,
                restart_interval: 4,
                keys: 200,
                prefix: Some(PrefixExtractor::Fixed(4)),
                ..base.clone()
            },
        ),
        (
            "fuse16",
            TableConfig {
                filter: Some(FilterPolicy::new(FilterKind::Fuse16, 0.0)),
                keys: 150,
                range_bits: Some(10.0),
                ..base.clone()
            },
        ),
        (
            "partitioned",
            TableConfig {
                partition_bytes: 64,
                keys: 200,
                ..base.clone()
            },
        ),
        (
            "bloom+zstd+xxh3",
            TableConfig {
                filter: Some(FilterPolicy::bloom(8.0)),
                compression: zstd,
                restart_interval: 1,
                checksum: ChecksumType::Xxh3,
                keys: 100,
                ..base.clone()
            },
        ),
        (
            "two-level index+lz4",
            TableConfig {
                compression: Compression::Lz4,
                partition_bytes: 64,
                index_partition_bytes: 64,
                keys: 200,
                ..base
            },
        ),
    ]
}

/// `n` mutants in `areas` of a table of each design.
fn table_area(test: &str, seed: u64, areas: &[Area], n: usize) {
    let mut tally = Tally::new(test);
    for (d, (design, cfg)) in designs().into_iter().enumerate() {
        let dir = common::scratch_dir();
        let path = dir.path().join("000007.sst");
        let ex = Expect::new(table_entries(cfg.keys));
        build_table(&path, &cfg, &ex.es);
        let l = Layout::of(&path);
        assert!(l.data.len() >= 4, "{design}: {} data blocks", l.data.len());
        assert_eq!(l.filter.is_some(), cfg.filter.is_some(), "{design}");
        assert_eq!(!l.parts.is_empty(), cfg.partition_bytes > 0, "{design}");
        assert_eq!(
            l.index_parts.len() >= 2,
            cfg.index_partition_bytes > 0,
            "{design}"
        );
        let mut rng = Rng::new(seed);
        for on_demand in [false, true] {
            let mut notes = Notes::new();
            let r = check_table(&path, &ex, on_demand, false, &mut rng, &mut notes);
            assert_eq!(r, Ok("verified"), "{design}");
            assert!(notes.is_empty(), "{notes:?}");
        }
        let seed = seed ^ (d as u64) << 32;
        for i in 0..trials(n) {
            let s = trial_seed(seed, i);
            let mut rng = Rng::new(s);
            let (bytes, what, damaged) = table_mutant(&mut rng, &l, areas);
            let data_touched = damaged == Damaged::TableData;
            let on_demand = rng.one_in(2);
            std::fs::write(&path, &bytes).unwrap();
            let what =
                format!("{design} trial {i} (seed {s:#x}, metadata on demand {on_demand}): {what}");
            tally.run(&what, |notes| {
                check_table(&path, &ex, on_demand, data_touched, &mut rng, notes)
            });
        }
    }
    tally.finish();
}

#[test]
fn sst_data_blocks_resealed() {
    table_area("sst data blocks", 0x5e1, &[Area::Data], 300);
}

#[test]
fn sst_filters_resealed() {
    table_area("sst filters", 0x5e2, &[Area::Filters], 150);
}

#[test]
fn sst_properties_resealed() {
    table_area("sst properties", 0x5e3, &[Area::Properties], 250);
}

#[test]
fn sst_index_metaindex_footer_resealed() {
    table_area("sst index, metaindex, footer", 0x5e4, &[Area::Index], 250);
}

// ---------------------------------------------------------------- stores

fn db_options() -> Options {
    common::options::manual()
        .write_buffer_size(8 << 10)
        .target_file_size(4 << 10)
        .level1_max_bytes(8 << 10)
        .dynamic_level_bytes(false)
        .level_size_multiplier(2)
        .block_size(512)
        .block_cache_capacity(64 << 10)
        .filter_partition_bytes(64)
        .range_filter_bits_per_key(Some(10.0))
        .filters(FilterOptions::hybrid(
            FilterPolicy::blocked512(10.0),
            FilterPolicy::ribbon(7.0),
            2,
        ))
}

fn dkey(i: usize) -> Vec<u8> {
    format!("k{i:04}").into_bytes()
}

/// Version `ver` of key `k`'s value: the key, the version, and padding
/// derived from both.
fn dval(k: &[u8], ver: u64) -> Vec<u8> {
    let h = key_hash(k) ^ ver.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    let mut v = k.to_vec();
    v.extend_from_slice(format!("={ver}=").as_bytes());
    v.extend(std::iter::repeat_n(
        b'a' + (h % 26) as u8,
        (h >> 8) as usize % 80,
    ));
    v
}

/// A closed store with tables on several levels (L0 uncompressed, LZ4
/// below; blocked512 filters above L2 and Ribbon below, partitioned when
/// larger than 64 bytes), a manifest of a snapshot and later edits, and a
/// WAL of multi-operation batches, one of them spanning log blocks.
struct Store {
    dir: tempfile::TempDir,
    model: BTreeMap<Vec<u8>, Vec<u8>>,
    /// Every key/value pair ever written.
    written: Pairs,
    /// Keys to look up: all ever written, and some never written.
    lookups: Vec<Vec<u8>>,
    last_sequence_in_manifest: u64,
    /// The options the store is written and opened with.
    opts: Options,
}

impl Store {
    fn build(seed: u64) -> Store {
        Store::build_with(seed, db_options(), 0)
    }

    /// A store written with `opts`; with `range_deletes` (0: none), one
    /// operation in `range_deletes` of the last 150 before the WAL's deletes
    /// a range of up to 6 keys, and they are flushed as two L0 tables
    /// (tombstones above the data they delete) instead of maintained.
    fn build_with(seed: u64, opts: Options, range_deletes: usize) -> Store {
        let dir = common::scratch_dir();
        let mut rng = Rng::new(seed);
        let mut ver = 0u64;
        let mut model = BTreeMap::new();
        let mut written = Pairs::new();
        let mut batch_op =
            |rng: &mut Rng, b: &mut WriteBatch, keys: usize, deletes: usize, ranges: usize| {
                let i = rng.below(keys);
                let k = dkey(i);
                ver += 1;
                if ranges > 0 && rng.one_in(ranges) {
                    let end = dkey(i + 1 + rng.below(6));
                    b.delete_range(&k, &end);
                    model.retain(|m: &Vec<u8>, _| *m < k || *m >= end);
                } else if rng.one_in(deletes) {
                    b.delete(&k);
                    model.remove(&k);
                } else {
                    let v = dval(&k, ver);
                    b.put(&k, &v);
                    written.insert((k.clone(), v.clone()));
                    model.insert(k, v);
                }
            };
        {
            let db = Db::open(dir.path(), opts.clone()).unwrap();
            for _ in 0..3 {
                for _ in 0..400 {
                    let mut b = WriteBatch::new();
                    batch_op(&mut rng, &mut b, 500, 7, 0);
                    db.write(b).unwrap();
                }
                db.maintain().unwrap();
            }
            db.close().unwrap();
        }
        // A write buffer that holds everything below: no flush runs in
        // the background, so the files are the same on every run.
        let db = Db::open(dir.path(), opts.clone().write_buffer_size(256 << 10)).unwrap();
        for j in 0..150 {
            let mut b = WriteBatch::new();
            batch_op(&mut rng, &mut b, 500, 9, range_deletes);
            db.write(b).unwrap();
            if range_deletes > 0 && j == 74 {
                db.flush().unwrap();
            }
        }
        if range_deletes > 0 {
            db.flush().unwrap();
        } else {
            db.maintain().unwrap();
        }
        // The WAL: batches of several operations, one of ~40 KiB.
        for i in 0..12 {
            let mut b = WriteBatch::new();
            let n = if i == 6 { 900 } else { 1 + rng.below(12) };
            for _ in 0..n {
                batch_op(&mut rng, &mut b, 520, 5, 0);
            }
            db.write(b).unwrap();
        }
        let s = db.stats();
        eprintln!(
            "store levels: {:?}",
            s.levels.iter().map(|l| l.files).collect::<Vec<_>>()
        );
        assert!(
            s.levels.iter().filter(|l| l.files > 0).count() >= 2,
            "{:?}",
            s.levels
        );
        db.close().unwrap();
        let mut lookups: BTreeSet<Vec<u8>> = written.iter().map(|(k, _)| k.clone()).collect();
        lookups.extend(model.keys().cloned());
        lookups.extend((0..12).map(|i| dkey(600 + i)));
        lookups.extend([b"a".to_vec(), b"k".to_vec(), b"zz".to_vec()]);
        let mut st = Store {
            dir,
            model,
            written,
            lookups: lookups.into_iter().collect(),
            last_sequence_in_manifest: 0,
            opts,
        };
        assert_eq!(
            st.files("log").len(),
            1,
            "{:?}",
            std::fs::read_dir(st.dir.path())
                .unwrap()
                .map(|e| e.unwrap().file_name())
                .collect::<Vec<_>>()
        );
        assert_eq!(st.files("MANIFEST-").len(), 1);
        let edits = read_log(&st.files("MANIFEST-")[0]);
        st.last_sequence_in_manifest = edits
            .iter()
            .filter_map(|r| VersionEdit::decode(r).unwrap().last_sequence)
            .max()
            .unwrap();
        // The pristine store reads back as written.
        let work = common::scratch_dir();
        copy_dir(st.dir.path(), work.path());
        let mut notes = Notes::new();
        let r = check_db(
            work.path(),
            &st,
            &Pairs::new(),
            Damaged::Nothing,
            0,
            &mut notes,
        );
        assert_eq!(r, Ok("opened"));
        assert!(notes.is_empty(), "{notes:?}");
        st
    }

    /// The store's files whose names end with (`log`, `sst`) or start with
    /// (`MANIFEST-`) `what`.
    fn files(&self, what: &str) -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = std::fs::read_dir(self.dir.path())
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| {
                let n = p.file_name().unwrap().to_string_lossy();
                n.ends_with(what) || n.starts_with(what)
            })
            .collect();
        v.sort();
        v
    }
}

fn copy_dir(from: &Path, to: &Path) {
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_file() && e.file_name() != "LOCK" {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

/// Every file under `dir` (relative name → bytes), `LOCK` aside.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<PathBuf, Vec<u8>>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let e = e.unwrap();
            let p = e.path();
            if e.file_type().unwrap().is_dir() {
                out.insert(p.strip_prefix(root).unwrap().join(""), Vec::new());
                walk(root, &p, out);
            } else if e.file_name() != "LOCK" {
                out.insert(
                    p.strip_prefix(root).unwrap().to_path_buf(),
                    std::fs::read(&p).unwrap_or_default(),
                );
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

fn snapshot_diff(a: &BTreeMap<PathBuf, Vec<u8>>, b: &BTreeMap<PathBuf, Vec<u8>>) -> String {
    let mut d = Vec::new();
    for (p, x) in a {
        match b.get(p) {
            None => d.push(format!("{} deleted", p.display())),
            Some(y) if x != y => d.push(format!("{} changed", p.display())),
            _ => {}
        }
    }
    for p in b.keys().filter(|p| !a.contains_key(*p)) {
        d.push(format!("{} created", p.display()));
    }
    d.join(", ")
}

fn read_log(path: &Path) -> Vec<Vec<u8>> {
    let mut r = LogReader::open(path, false).unwrap();
    let mut out = Vec::new();
    while let Some(rec) = r.next_record().unwrap() {
        out.push(rec);
    }
    assert!(r.tail_dropped().is_none());
    out
}

fn write_log(path: &Path, records: &[Vec<u8>]) {
    let _ = std::fs::remove_file(path);
    let mut w = LogWriter::create(path).unwrap();
    for r in records {
        w.add_record(r).unwrap();
    }
    w.flush().unwrap();
}

/// What a store trial damaged.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Damaged {
    Nothing,
    /// A table's data block: its entries may legitimately differ.
    TableData,
    /// A table's other blocks.
    TableMeta,
    /// A table's range-tombstone block: it can hide versions (keys lost,
    /// older versions shown, lookups and scans that disagree), never make
    /// a pair that was not written, nor disorder a scan.
    TableTombstones,
    /// The MANIFEST or the WAL (every table intact).
    Log,
}

/// The reads of an opened store.
struct Reads {
    fwd: Entries,
    fwd_failed: bool,
    rev: Entries,
    rev_failed: bool,
    gets: BTreeMap<Vec<u8>, Option<Vec<u8>>>,
    get_errors: usize,
    /// `(k, scan(k..), failed, scan(..=k).rev(), failed)`: reads that seek.
    ranges: Vec<(Vec<u8>, Entries, bool, Entries, bool)>,
}

fn read_store(db: &Db, st: &Store, trial: usize) -> Result<Reads, String> {
    let limit = 20 * st.lookups.len() + 5000;
    let (fwd, fwd_failed) = collect(db.scan(..), limit, "scan")?;
    let (rev, rev_failed) = collect(db.scan(..).rev(), limit, "reverse scan")?;
    let mut ranges = Vec::new();
    for j in 0..4 {
        let k = st.lookups[(trial * 13 + j * 97) % st.lookups.len()].clone();
        let (a, af) = collect(db.scan(k.clone()..), limit, "scan from")?;
        let (b, bf) = collect(db.scan(..=k.clone()).rev(), limit, "reverse scan to")?;
        ranges.push((k, a, af, b, bf));
    }
    let mut gets = BTreeMap::new();
    let mut get_errors = 0;
    for k in &st.lookups {
        match db.get(k) {
            Ok(v) => {
                gets.insert(k.clone(), v.map(|v| v.to_vec()));
            }
            Err(e) => {
                corrupt(e, &format!("get {}", show(k)))?;
                get_errors += 1;
            }
        }
    }
    Ok(Reads {
        fwd,
        fwd_failed,
        rev,
        rev_failed,
        gets,
        get_errors,
        ranges,
    })
}

/// Opens the damaged store and checks it (module docs). `extra`: pairs the
/// damaged files themselves hold (a mutated WAL's).
fn check_db(
    dir: &Path,
    st: &Store,
    extra: &Pairs,
    damaged: Damaged,
    trial: usize,
    notes: &mut Notes,
) -> Result<&'static str, String> {
    let before = snapshot(dir);
    let db = match Db::open(dir, st.opts.clone()) {
        Ok(db) => db,
        Err(e) => {
            let after = snapshot(dir);
            if after != before {
                return Err(format!(
                    "Db::open failed ({e}) and changed the directory: {}",
                    snapshot_diff(&before, &after)
                ));
            }
            // A manifest naming another format (comparator) is refused as
            // written by another build, as docs/format.md §13 says.
            if matches!(&e, Error::InvalidArgument(w) if w.contains("was written with format")) {
                return Ok("open refused: another format");
            }
            corrupt(e, "Db::open")?;
            return Ok("open refused");
        }
    };
    let tables_after_open: BTreeSet<PathBuf> = snapshot(dir).into_keys().collect();
    let deleted: Vec<String> = before
        .keys()
        .filter(|p| p.extension().is_some_and(|e| e == "sst") && !tables_after_open.contains(*p))
        .map(|p| p.display().to_string())
        .collect();
    if !deleted.is_empty() {
        notes.push(("opened and deleted tables".into(), deleted.join(" ")));
    }
    let r = read_store(&db, st, trial)?;
    let strict = matches!(
        damaged,
        Damaged::Log | Damaged::Nothing | Damaged::TableTombstones
    );
    let allowed = |k: &[u8], v: &[u8]| {
        let p = (k.to_vec(), v.to_vec());
        st.written.contains(&p) || extra.contains(&p)
    };
    // Only pairs that were written, in order.
    let mut foreign = None;
    let ranged = r.ranges.iter().flat_map(|x| x.1.iter().chain(&x.3));
    for (k, v) in r.fwd.iter().chain(&r.rev).chain(ranged) {
        if !allowed(k, v) {
            foreign = Some(format!("{} = {}", show(k), show(v)));
        }
    }
    for (k, v) in &r.gets {
        if let Some(v) = v
            && !allowed(k, v)
        {
            foreign = Some(format!("get {} = {}", show(k), show(v)));
        }
    }
    let unordered =
        r.fwd.windows(2).any(|w| w[0].0 >= w[1].0) || r.rev.windows(2).any(|w| w[0].0 <= w[1].0);
    let verified = match db.verify() {
        Ok(()) => true,
        Err(e) => {
            corrupt(e, "Db::verify")?;
            false
        }
    };
    let mut disagree: Vec<Vec<u8>> = Vec::new();
    let read_errors =
        r.fwd_failed || r.rev_failed || r.get_errors > 0 || r.ranges.iter().any(|x| x.2 || x.4);
    if let Some(f) = &foreign {
        if strict || (verified && damaged != Damaged::TableData) {
            return Err(format!(
                "a pair never written: {f} (verify passed: {verified})"
            ));
        }
        if damaged == Damaged::TableMeta {
            notes.push((
                "a pair never written, before Db::verify reported it".into(),
                f.clone(),
            ));
        }
    }
    if unordered {
        if strict || verified {
            return Err(format!("scan out of order (verify passed: {verified})"));
        }
        notes.push((
            "scan out of order, before Db::verify reported it".into(),
            String::new(),
        ));
    }
    if verified && !read_errors {
        let mut back = r.rev.clone();
        back.reverse();
        if back != r.fwd {
            return Err(format!(
                "forward scan ({} entries) and reverse scan ({}) differ",
                r.fwd.len(),
                r.rev.len()
            ));
        }
        for (k, from, _, to, _) in &r.ranges {
            let at = r.fwd.partition_point(|e| e.0 < *k);
            let upto = r.fwd.partition_point(|e| e.0 <= *k);
            let mut want_to = r.fwd[..upto].to_vec();
            want_to.reverse();
            if from[..] != r.fwd[at..] || to[..] != want_to[..] {
                return Err(format!(
                    "Db::verify passed; scan({}..) gives {} entries from {}, scan(..={}).rev() \
                     {} from {}; the full scan has {} and {} (from {})",
                    show(k),
                    from.len(),
                    show_opt(from.first().map(|e| &e.0[..])),
                    show(k),
                    to.len(),
                    show_opt(to.first().map(|e| &e.0[..])),
                    r.fwd.len() - at,
                    upto,
                    show_opt(r.fwd.get(at).map(|e| &e.0[..]))
                ));
            }
        }
        let scanned: BTreeMap<&[u8], &[u8]> = r.fwd.iter().map(|(k, v)| (&k[..], &v[..])).collect();
        for (k, got) in &r.gets {
            let want = scanned.get(&k[..]).copied();
            if got.as_deref() != want {
                let d = format!(
                    "get {} gives {}, the scan {}",
                    show(k),
                    show_opt(got.as_deref()),
                    show_opt(want)
                );
                // A table on another level (a resealed manifest) or a
                // key's sequence number changed (a resealed data block)
                // is a lie no check can see (tables do not record their
                // sequence numbers): a lookup, which stops at the first
                // level holding the key, then disagrees with a scan, which
                // merges by sequence number. Counted; the key is written
                // below, and that write must show both ways.
                if matches!(
                    damaged,
                    Damaged::Log | Damaged::TableData | Damaged::TableTombstones
                ) {
                    notes.push(("get and scan disagree".into(), d));
                    disagree.push(k.clone());
                    if disagree.len() == 2 {
                        break;
                    }
                    continue;
                }
                return Err(d);
            }
        }
        if damaged != Damaged::TableData {
            let model: BTreeMap<&[u8], &[u8]> =
                st.model.iter().map(|(k, v)| (&k[..], &v[..])).collect();
            if scanned != model {
                let diff = model
                    .iter()
                    .find(|(k, v)| scanned.get(*k) != Some(*v))
                    .map(|(k, v)| (k.to_vec(), Some(v.to_vec())))
                    .or_else(|| {
                        scanned
                            .keys()
                            .find(|k| !model.contains_key(*k))
                            .map(|k| (k.to_vec(), None))
                    })
                    .unwrap();
                let now = scanned.get(&diff.0[..]).copied();
                let kind = match (&diff.1, now) {
                    (Some(_), None) => "lost",
                    (None, Some(_)) => "resurrected",
                    _ => "stale",
                };
                let example = format!(
                    "{} is {}, was {}",
                    show(&diff.0),
                    show_opt(now),
                    show_opt(diff.1.as_deref())
                );
                if damaged == Damaged::TableMeta {
                    return Err(format!("Db::verify passed, but key {example}"));
                }
                notes.push((format!("opened with other contents ({kind} keys)"), example));
            }
        }
    }
    // A write after the open reads back (get and scan), now and after a
    // clean reopen.
    let mut w: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
    let some: Vec<Vec<u8>> = (0..2)
        .map(|j| st.lookups[(trial * 7 + j * 131) % st.lookups.len()].clone())
        .collect();
    for (j, k) in some
        .into_iter()
        .chain([dkey(700 + trial % 50)])
        .chain(disagree)
        .enumerate()
    {
        let v = dval(&k, 1_000_000 + j as u64);
        match db.put(&k, &v) {
            Ok(()) => {
                // A key put twice (it can be in `some` and in `disagree`)
                // reads back as its last value.
                w.retain(|(wk, _)| wk[..] != k[..]);
                w.push((k, v));
            }
            Err(e) => notes.push(("a put failed after the open".into(), e.to_string())),
        }
    }
    read_back(&db, &w, "put, then")?;
    if let Err(e) = db.close() {
        notes.push(("close failed".into(), e.to_string()));
    }
    let db = Db::open(dir, st.opts.clone())
        .map_err(|e| format!("the store opened the mutant, then refused its own state: {e}"))?;
    read_back(&db, &w, "put, closed, reopened, then")?;
    drop(db);
    Ok(if read_errors {
        "opened, reads failed"
    } else {
        "opened"
    })
}

/// Each pair of `w`, just put, reads back through `get` and a scan.
fn read_back(db: &Db, w: &[(Vec<u8>, Vec<u8>)], when: &str) -> Result<(), String> {
    for (k, v) in w {
        let got = match db.get(k) {
            Ok(got) => got.map(|v| v.to_vec()),
            Err(e) => {
                corrupt(e, "get after put")?;
                continue;
            }
        };
        let scanned = match db.scan(k.clone()..).next() {
            Some(Ok((sk, sv))) => (sk[..] == k[..]).then(|| sv.to_vec()),
            Some(Err(e)) => {
                corrupt(e, "scan after put")?;
                continue;
            }
            None => None,
        };
        if got.as_ref() != Some(v) || scanned.as_ref() != Some(v) {
            return Err(format!(
                "{when} get {} gives {}, scan {} (put {})",
                show(k),
                show_opt(got.as_deref()),
                show_opt(scanned.as_deref()),
                show(v)
            ));
        }
    }
    Ok(())
}

/// Copies the pristine store, lets `damage` change it, and checks it.
fn store_trial(
    tally: &mut Tally,
    st: &Store,
    trial: usize,
    what: &str,
    damage: impl FnOnce(&Path) -> (Pairs, Damaged),
) {
    let work = common::scratch_dir();
    copy_dir(st.dir.path(), work.path());
    let (extra, damaged) = damage(work.path());
    tally.run(what, |notes| {
        check_db(work.path(), st, &extra, damaged, trial, notes)
    });
}

// ---------------------------------------------------------------- store tables

/// `n` mutants in `areas` of the tables of store `seed` (one table each).
fn store_tables_area(test: &str, seed: u64, areas: &[Area], n: usize) {
    store_tables_area_of(test, &Store::build(seed), seed, areas, n);
}

/// `n` mutants in `areas` of `st`'s tables (one table each).
fn store_tables_area_of(test: &str, st: &Store, seed: u64, areas: &[Area], n: usize) {
    let tables: Vec<(PathBuf, Layout)> = st
        .files("sst")
        .into_iter()
        .map(|p| {
            let l = Layout::of(&p);
            (p, l)
        })
        .collect();
    assert!(
        tables.iter().any(|(_, l)| !l.parts.is_empty()),
        "a partitioned filter"
    );
    // Tables with uncompressed data blocks (L0) twice as often: their
    // blocks get the structural mutants.
    let uncompressed = |l: &Layout| {
        l.data
            .iter()
            .any(|h| l.good[(h.offset + h.size) as usize] == 0)
    };
    let mut picks: Vec<usize> = (0..tables.len()).collect();
    picks.extend((0..tables.len()).filter(|&i| uncompressed(&tables[i].1)));
    // Tables with range tombstones three times as often, when their block
    // is a target.
    if areas.contains(&Area::Tombstones) {
        let with = (0..tables.len()).filter(|&i| tables[i].1.tombstones.is_some());
        picks.extend(with.flat_map(|i| [i, i]));
    }
    assert!(
        picks.len() > tables.len(),
        "a table with uncompressed blocks"
    );
    let mut tally = Tally::new(test);
    for i in 0..trials(n) {
        let s = trial_seed(seed, i);
        let mut rng = Rng::new(s);
        let (path, l) = &tables[rng.pick(&picks)];
        // Only mutants of the table's size: the manifest records it.
        let Some((bytes, d, damaged)) = (0..20)
            .map(|_| table_mutant(&mut rng, l, areas))
            .find(|m| m.0.len() == l.good.len())
        else {
            continue;
        };
        let name = path.file_name().unwrap().to_owned();
        let what = format!("{test} trial {i} (seed {s:#x}): {name:?}: {d}");
        store_trial(&mut tally, st, i, &what, |dir| {
            std::fs::write(dir.join(&name), &bytes).unwrap();
            (Pairs::new(), damaged)
        });
    }
    tally.finish();
}

#[test]
fn store_table_data_resealed() {
    store_tables_area("store table data", 0xdb1, &[Area::Data], 300);
}

#[test]
fn store_table_metadata_resealed() {
    let areas = [Area::Filters, Area::Properties, Area::Index];
    store_tables_area("store table metadata", 0xdb2, &areas, 200);
}

/// A store whose tables have two-level indexes (partitions of 64 bytes,
/// some read on demand under a metadata budget) and range tombstones: its
/// tombstone blocks and indexes (partitions, top level), metaindexes and
/// footers resealed.
#[test]
fn store_table_tombstones_and_index_partitions_resealed() {
    let opts = db_options()
        .index_partition_bytes(64)
        .metadata_memory_budget(Some(8 << 10));
    let st = Store::build_with(0xdb3, opts, 12);
    let tables: Vec<Layout> = st.files("sst").iter().map(|p| Layout::of(p)).collect();
    let with_tombstones = tables.iter().filter(|l| l.tombstones.is_some()).count();
    let two_level = tables.iter().filter(|l| !l.index_parts.is_empty()).count();
    eprintln!(
        "{} tables, {with_tombstones} with range tombstones, {two_level} with two-level indexes",
        tables.len()
    );
    assert!(with_tombstones >= 2 && two_level >= 2);
    let areas = [Area::Tombstones, Area::Index];
    store_tables_area_of(
        "store table tombstones and index partitions",
        &st,
        0xdb3,
        &areas,
        300,
    );
}

// ---------------------------------------------------------------- manifest

/// A decoded field of a version edit changed: a counter or the comparator
/// (`counters`), or the files and logs it adds and deletes.
fn mutate_edit(
    rng: &mut Rng,
    e: &mut VersionEdit,
    pool: &[(usize, bloomlsm::db::FileMeta)],
    last_seq: u64,
    counters: bool,
) -> String {
    let opt = |rng: &mut Rng, v: Option<u64>, edge: &[u64]| -> Option<u64> {
        match rng.below(4) {
            0 => None,
            1 => Some(rng.pick(edge)),
            _ => Some(number_near(rng, v.unwrap_or(1))),
        }
    };
    let op = if counters {
        rng.below(5)
    } else {
        5 + rng.below(8)
    };
    match op {
        0 => {
            let old = e.log_number;
            e.log_number = opt(rng, old, &[0, 1, 2]);
            format!("log_number {old:?} -> {:?}", e.log_number)
        }
        1 => {
            let old = e.next_file_number;
            e.next_file_number = opt(rng, old, &[0, 1, 5, (1 << 62) + 1, u64::MAX]);
            format!("next_file_number {old:?} -> {:?}", e.next_file_number)
        }
        2 | 3 => {
            let old = e.last_sequence;
            let l = last_seq;
            e.last_sequence = opt(
                rng,
                old,
                &[
                    0,
                    1,
                    l / 2,
                    l - 1,
                    l + 1,
                    l + 1000,
                    MAX_SEQUENCE,
                    MAX_SEQUENCE - 1,
                ],
            );
            format!("last_sequence {old:?} -> {:?}", e.last_sequence)
        }
        4 => {
            let old = e.comparator.clone();
            e.comparator = rng.pick(&[
                None,
                Some("bloomlsm.internal-key-bytewise.v1".to_string()),
                Some("bloomlsm.internal-key-bytewise.v3".to_string()),
                Some("leveldb.BytewiseComparator".to_string()),
            ]);
            format!("comparator {old:?} -> {:?}", e.comparator)
        }
        5 => {
            if e.deleted_files.is_empty() || rng.one_in(3) {
                let (level, f) = rng.pick(pool);
                let l = if rng.one_in(2) { level } else { rng.below(7) };
                e.deleted_files.push((l, f.number));
                format!("deleted_file ({l}, {}) added", f.number)
            } else {
                let j = rng.below(e.deleted_files.len());
                let old = e.deleted_files.remove(j);
                format!("deleted_file {old:?} removed")
            }
        }
        6 if !e.deleted_files.is_empty() => {
            let j = rng.below(e.deleted_files.len());
            let old = e.deleted_files[j];
            e.deleted_files[j] = if rng.one_in(2) {
                (rng.below(7), old.1)
            } else {
                (old.0, number_near(rng, old.1))
            };
            format!("deleted_file {old:?} -> {:?}", e.deleted_files[j])
        }
        7 if !e.new_files.is_empty() => {
            let j = rng.below(e.new_files.len());
            let n = e.new_files[j].1.number;
            match rng.below(3) {
                0 => {
                    e.new_files.remove(j);
                    format!("new_file {n} removed")
                }
                1 => {
                    let f = e.new_files[j].clone();
                    e.new_files.push(f);
                    format!("new_file {n} repeated")
                }
                _ => {
                    let f = rng.pick(pool);
                    e.new_files.push(f.clone());
                    format!("new_file {} (level {}) added", f.1.number, f.0)
                }
            }
        }
        8..=11 if !e.new_files.is_empty() => {
            let j = rng.below(e.new_files.len());
            let (level, f) = &mut e.new_files[j];
            let other = rng.pick(pool).1;
            let n = f.number;
            let d = match rng.below(9) {
                0 => {
                    let old = *level;
                    *level = rng.below(7);
                    format!("level {old} -> {level}")
                }
                1 => {
                    f.number = if rng.one_in(2) {
                        other.number
                    } else {
                        number_near(rng, n)
                    };
                    format!("number -> {}", f.number)
                }
                2 => {
                    f.file_size = number_near(rng, f.file_size);
                    format!("file_size -> {}", f.file_size)
                }
                3 => {
                    f.smallest = if rng.one_in(2) {
                        other.smallest
                    } else {
                        other.largest
                    };
                    format!("smallest -> {}", show(&f.smallest))
                }
                4 => {
                    f.largest = if rng.one_in(2) {
                        other.largest
                    } else {
                        other.smallest
                    };
                    format!("largest -> {}", show(&f.largest))
                }
                5 => {
                    // The key's sequence number or kind (its last 8 bytes).
                    let key = if rng.one_in(2) {
                        &mut f.smallest
                    } else {
                        &mut f.largest
                    };
                    let at = key.len() - 1 - rng.below(8.min(key.len()));
                    key[at] ^= 1 << rng.below(8);
                    format!("byte {at} of a key bound flipped")
                }
                6 => {
                    f.entries = number_near(rng, f.entries);
                    format!("entries -> {}", f.entries)
                }
                7 => {
                    f.filter = match rng.below(3) {
                        0 => None,
                        _ => f.filter.clone().map(|mut m| {
                            match rng.below(3) {
                                0 => {
                                    m.name =
                                        rng.pick(&["bloom", "ribbon", "blocked512", "x"]).into()
                                }
                                1 => {
                                    m.bits_per_key =
                                        rng.pick(&[0.5, 100.0, 1e300, f64::MIN_POSITIVE])
                                }
                                _ => m.num_probes = rng.pick(&[1, 30, 31, u32::MAX]),
                            }
                            m
                        }),
                    };
                    format!("filter -> {:?}", f.filter)
                }
                _ => {
                    let old = f.number;
                    *f = other;
                    format!("replaced by file {} ({old} gone)", f.number)
                }
            };
            format!("new_file {n}: {d}")
        }
        _ => {
            if e.new_logs.is_empty() || rng.one_in(2) {
                let n = rng.pick(&[0u64, 1, 2, 3, 1 << 40]) + e.log_number.unwrap_or(0);
                e.new_logs.push(n);
                format!("new_log {n} added")
            } else {
                let j = rng.below(e.new_logs.len());
                let old = e.new_logs[j];
                e.new_logs[j] = number_near(rng, old);
                format!("new_log {old} -> {}", e.new_logs[j])
            }
        }
    }
}

/// What a MANIFEST test changes.
#[derive(Clone, Copy, PartialEq, Debug)]
enum EditPart {
    /// Decoded edits' counters (log number, next file number, last
    /// sequence) and comparator.
    Counters,
    /// Decoded edits' new and deleted files and new logs.
    Files,
    /// Records' bytes; records dropped, repeated, swapped, added.
    Records,
}

fn manifest_area(test: &str, seed: u64, part: EditPart, n: usize) {
    let st = Store::build(seed);
    let manifest = st.files("MANIFEST-")[0].clone();
    let name = manifest.file_name().unwrap().to_owned();
    let records = read_log(&manifest);
    let edits: Vec<VersionEdit> = records
        .iter()
        .map(|r| VersionEdit::decode(r).unwrap())
        .collect();
    assert!(edits.len() >= 4, "{} edits", edits.len());
    let pool: Vec<(usize, bloomlsm::db::FileMeta)> =
        edits.iter().flat_map(|e| e.new_files.clone()).collect();
    let mut tally = Tally::new(test);
    for i in 0..trials(n) {
        let s = trial_seed(seed, i);
        let mut rng = Rng::new(s);
        let mut recs = records.clone();
        let j = rng.below(recs.len());
        let d = match (part, rng.below(10)) {
            (EditPart::Counters | EditPart::Files, _) => {
                let mut e = edits[j].clone();
                let mut d = Vec::new();
                for _ in 0..1 + rng.below(2) {
                    let counters = part == EditPart::Counters;
                    d.push(mutate_edit(
                        &mut rng,
                        &mut e,
                        &pool,
                        st.last_sequence_in_manifest,
                        counters,
                    ));
                }
                recs[j] = e.encode();
                format!("edit {j} of {}: {}", recs.len(), d.join("; "))
            }
            (_, 0..=5) => format!("record {j} bytes: {}", mutate_var(&mut rng, &mut recs[j])),
            (_, 6) => {
                recs.remove(j);
                format!("record {j} of {} dropped", records.len())
            }
            (_, 7) => {
                let r = recs[j].clone();
                recs.insert(rng.below(recs.len() + 1), r);
                format!("record {j} repeated")
            }
            (_, 8) if j + 1 < recs.len() => {
                recs.swap(j, j + 1);
                format!("records {j} and {} swapped", j + 1)
            }
            _ => {
                recs.insert(j, VersionEdit::new().encode());
                format!("an empty edit inserted at {j}")
            }
        };
        let what = format!("{test} trial {i} (seed {s:#x}): {d}");
        store_trial(&mut tally, &st, i, &what, |dir| {
            write_log(&dir.join(&name), &recs);
            (Pairs::new(), Damaged::Log)
        });
    }
    tally.finish();
}

#[test]
fn manifest_counters_resealed() {
    manifest_area("manifest counters", 0x3a1, EditPart::Counters, 150);
}

#[test]
fn manifest_files_resealed() {
    manifest_area("manifest files", 0x3a2, EditPart::Files, 300);
}

#[test]
fn manifest_records_resealed() {
    manifest_area("manifest records", 0x3a3, EditPart::Records, 150);
}

// ---------------------------------------------------------------- WAL

/// A batch rebuilt from operations and a sequence number.
fn batch_of(seq: u64, ops: &[(Vec<u8>, Option<Vec<u8>>)]) -> WriteBatch {
    let mut b = WriteBatch::new();
    for (k, v) in ops {
        match v {
            Some(v) => b.put(k, v),
            None => b.delete(k),
        }
    }
    b.set_sequence(seq);
    b
}

fn ops_of(b: &WriteBatch) -> Vec<(Vec<u8>, Option<Vec<u8>>)> {
    b.iter()
        .map(|op| match op {
            BatchOp::Put { key, value } => (key.to_vec(), Some(value.to_vec())),
            BatchOp::Delete { key } => (key.to_vec(), None),
            // Writes no pair (the store's own batches here hold none; a
            // mutant may decode as one).
            BatchOp::DeleteRange { start, .. } => (start.to_vec(), None),
        })
        .collect()
}

#[test]
fn wal_resealed() {
    let st = Store::build(0x3a4);
    let wal = st.files("log")[0].clone();
    let name = wal.file_name().unwrap().to_owned();
    let records = read_log(&wal);
    let batches: Vec<WriteBatch> = records
        .iter()
        .map(|r| WriteBatch::decode(r).unwrap())
        .collect();
    assert!(batches.len() >= 10 && records.iter().any(|r| r.len() > 32 << 10));
    assert_eq!(batches[0].sequence(), st.last_sequence_in_manifest + 1);
    let mut tally = Tally::new("wal");
    let seed = 0x3a4;
    for i in 0..trials(400) {
        let s = trial_seed(seed, i);
        let mut rng = Rng::new(s);
        let mut recs = records.clone();
        let j = rng.below(recs.len());
        let b = &batches[j];
        let (seq, count) = (b.sequence(), b.len() as u64);
        let mut ops = ops_of(b);
        let d = match rng.below(20) {
            0..=5 => format!("record {j} bytes: {}", mutate_var(&mut rng, &mut recs[j])),
            6..=9 => {
                let l = st.last_sequence_in_manifest;
                let new = rng.pick(&[
                    seq.wrapping_sub(1),
                    seq + 1,
                    seq + count,
                    seq.saturating_sub(count),
                    0,
                    1,
                    l,
                    l + 1,
                    l / 2,
                    MAX_SEQUENCE,
                    MAX_SEQUENCE + 1 - count,
                    1 << 56,
                    u64::MAX,
                ]);
                recs[j] = batch_of(new, &ops).encoded().to_vec();
                format!("batch {j}: sequence {seq} -> {new} ({count} ops)")
            }
            10..=14 => {
                let o = rng.below(ops.len());
                let d = match rng.below(6) {
                    0 => {
                        ops.remove(o);
                        "removed"
                    }
                    1 => {
                        let op = ops[o].clone();
                        ops.insert(o, op);
                        "repeated"
                    }
                    2 => {
                        let k = ops[o].0.clone();
                        ops[o].1 = match ops[o].1 {
                            Some(_) => None,
                            None => Some(dval(&k, 777_000 + o as u64)),
                        };
                        "put <-> delete"
                    }
                    3 if ops.len() > 1 => {
                        let o2 = rng.below(ops.len());
                        ops.swap(o, o2);
                        "swapped"
                    }
                    4 => {
                        ops[o].0 = dkey(rng.below(530));
                        "key replaced (value kept)"
                    }
                    _ => {
                        ops[o].0 = rng.pick(&[Vec::new(), vec![b'k'; 65_537], b"k".to_vec()]);
                        "key replaced by an edge key"
                    }
                };
                recs[j] = batch_of(seq, &ops).encoded().to_vec();
                format!("batch {j}: operation {o} {d}")
            }
            15 => {
                recs.remove(j);
                format!("batch {j} of {} dropped", records.len())
            }
            16 => {
                let r = recs[j].clone();
                let at = rng.below(recs.len() + 1);
                recs.insert(at, r);
                format!("batch {j} repeated at {at}")
            }
            17 if j + 1 < recs.len() => {
                recs.swap(j, j + 1);
                format!("batches {j} and {} swapped", j + 1)
            }
            18 => {
                let d = rng.pick(&[1u64, 2, 50, u64::MAX, u64::MAX - 1]);
                for (r, b) in recs.iter_mut().zip(&batches) {
                    *r = batch_of(b.sequence().wrapping_add(d), &ops_of(b))
                        .encoded()
                        .to_vec();
                }
                format!("every batch's sequence + {}", d as i64)
            }
            _ => {
                let seq = rng.pick(&[0, seq, seq + count, MAX_SEQUENCE]);
                recs.insert(j, batch_of(seq, &[]).encoded().to_vec());
                format!("an empty batch at sequence {seq} inserted at {j}")
            }
        };
        // Sometimes a torn tail as well (not resealed): the open keeps a
        // copy of the log in lost/ before it writes anything else.
        let tail = match rng.below(4) {
            0 => Some(rng.pick(&[7usize, 20, 300])),
            _ => None,
        };
        let mut extra = Pairs::new();
        for r in &recs {
            if let Ok(b) = WriteBatch::decode(r) {
                for (k, v) in ops_of(&b) {
                    if let Some(v) = v {
                        extra.insert((k, v));
                    }
                }
            }
        }
        let what = format!("wal trial {i} (seed {s:#x}): {d}; torn tail {tail:?}");
        store_trial(&mut tally, &st, i, &what, |dir| {
            let path = dir.join(&name);
            write_log(&path, &recs);
            if let Some(n) = tail {
                let mut bytes = std::fs::read(&path).unwrap();
                // A record header and part of its payload, never completed.
                let rec = &records[records.len() - 1];
                let start = bytes.len();
                bytes.extend_from_slice(&[0x12, 0x34, 0x56, 0x78]);
                bytes.extend_from_slice(&((rec.len() as u16).min(200)).to_le_bytes());
                bytes.push(1);
                bytes.extend_from_slice(&rec[..n.min(rec.len())]);
                bytes.truncate(start + n);
                std::fs::write(&path, bytes).unwrap();
            }
            (extra, Damaged::Log)
        });
    }
    tally.finish();
}

// ---------------------------------------------------------------- findings
//
// Each of these reproduces, reduced to one mutant, a failure the sweeps
// above found.

/// A table of the first design, its layout and entries.
fn first_design_table(dir: &Path) -> (PathBuf, Layout, Entries) {
    let path = dir.join("000007.sst");
    let (_, cfg) = designs().swap_remove(0);
    let es = table_entries(cfg.keys);
    build_table(&path, &cfg, &es);
    (path.clone(), Layout::of(&path), es)
}

/// Sets data block `h`'s first restart point to the end of its entries (a
/// block of one restart point), resealed.
fn restart_at_entries_end(bytes: &mut [u8], ck: ChecksumType, h: BlockHandle) {
    reseal(bytes, ck, h, 0, |p| {
        let (_, ro) = entry_spans(p).unwrap();
        assert_eq!(p.len() - ro, 8, "one restart point");
        p[ro..ro + 4].copy_from_slice(&(ro as u32).to_le_bytes());
        String::new()
    });
}

/// Found by sst_properties_resealed: `Table::get` skipped a key outside the
/// `user_key.smallest` / `user_key.largest` properties, which neither the
/// open nor `verify_all` compared with the keys. The open now refuses a
/// user-key range that differs from the key range, and `verify_all`
/// compares both ends of the key range with the stored keys.
#[test]
fn user_key_properties_cannot_hide_stored_keys() {
    let dir = common::scratch_dir();
    let (path, l, es) = first_design_table(dir.path());
    let props = with_value(&l.props_entries, b"user_key.smallest", tkey(10));
    let bytes = l.rebuild_tail(l.payload(l.index), &encode_block(&props, 1), None);
    std::fs::write(&path, bytes).unwrap();
    let e = Table::open(&path, TableOpenOptions::default()).unwrap_err();
    assert!(e.is_corruption(), "{e}");
    assert!(e.to_string().contains("user-key range"), "{e}");
    // A user key and its full key moved together.
    for (full, user) in [
        (b"key.smallest".as_slice(), b"user_key.smallest".as_slice()),
        (b"key.largest", b"user_key.largest"),
    ] {
        let props = with_value(&l.props_entries, user, tkey(10));
        let props = with_value(&props, full, tkey(10));
        let bytes = l.rebuild_tail(l.payload(l.index), &encode_block(&props, 1), None);
        std::fs::write(&path, bytes).unwrap();
        // The open compares the largest key with the last index key; the
        // smallest only `verify_all` can compare.
        let e = match Table::open(&path, TableOpenOptions::default()) {
            Err(e) => e,
            Ok(t) => {
                let k = &es[0].0;
                let _ = t.get(k, key_hash(k));
                t.verify_all().unwrap_err()
            }
        };
        assert!(e.is_corruption(), "{e}");
    }
}

/// Sizes and counts in the properties that no real table has (they are
/// summed over a store's tables) are refused at open, each alone, with
/// every other property as the builder wrote it, and with its checksum
/// recomputed.
#[test]
fn property_sizes_past_their_bounds_are_refused() {
    let dir = common::scratch_dir();
    // The LZ4 design: a version 2 table, which carries `data.raw_size`.
    let path = dir.path().join("000007.sst");
    let (name, cfg) = designs().swap_remove(1);
    assert_eq!(name, "ribbon+lz4");
    build_table(&path, &cfg, &table_entries(cfg.keys));
    let l = Layout::of(&path);
    let file_size = l.good.len() as u64;
    let num = |name: &[u8]| {
        let v = &l
            .props_entries
            .iter()
            .find(|(k, _)| k[..] == name[..])
            .unwrap()
            .1;
        let (mut n, mut shift) = (0u64, 0);
        for b in v {
            n |= u64::from(b & 0x7f) << shift;
            shift += 7;
        }
        n
    };
    let (raw_size, data_size) = (num(b"data.raw_size"), num(b"data.size"));
    for (name, value) in [
        (&b"data.size"[..], file_size + 1),
        (b"data.raw_size", data_size * 32768 + 1),
        (b"entries", raw_size + 1),
        (b"entries", u64::MAX),
    ] {
        let props = with_value(&l.props_entries, name, varint(value));
        let bytes = l.rebuild_tail(l.payload(l.index), &encode_block(&props, 1), None);
        std::fs::write(&path, bytes).unwrap();
        let what = format!("{} = {value}", String::from_utf8_lossy(name));
        let e = Table::open(&path, TableOpenOptions::default()).unwrap_err();
        assert!(e.is_corruption(), "{what}: {e}");
        assert!(e.to_string().contains("raw data bytes"), "{what}: {e}");
    }
}

/// Found by sst_data_blocks_resealed: a restart offset equal to the end of
/// the entries was accepted for a block that has entries, and a seek into
/// the block found nothing and went on to the next block: `iter_from` and a
/// store's `scan(k..)` skipped the block's keys (older versions in deeper
/// levels showed through) while `verify_all` and `Db::verify` passed. Such a
/// block is now refused when it is read.
#[test]
fn a_restart_point_at_the_entries_end_is_refused() {
    let dir = common::scratch_dir();
    let (path, l, es) = first_design_table(dir.path());
    let mut bytes = l.good.clone();
    restart_at_entries_end(&mut bytes, l.footer.checksum, l.data[1]);
    std::fs::write(&path, &bytes).unwrap();
    let t = Table::open(&path, TableOpenOptions::default()).unwrap();
    assert!(t.verify_all().unwrap_err().is_corruption());
    // The first key of data block 1: reading its block is an error.
    let at = es.partition_point(|(k, _)| k[..] <= l.index_entries[0].0[..]);
    let first = &es[at].0;
    assert!(
        t.iter_from(first)
            .next()
            .unwrap()
            .unwrap_err()
            .is_corruption()
    );

    // The same damage in a store's uncompressed (L0) table.
    let st = Store::build(0xf1);
    let work = common::scratch_dir();
    copy_dir(st.dir.path(), work.path());
    let (p0, l0) = st
        .files("sst")
        .into_iter()
        .map(|p| {
            let l = Layout::of(&p);
            (p, l)
        })
        .find(|(_, l)| l.good[(l.data[1].offset + l.data[1].size) as usize] == 0)
        .unwrap();
    let mut bytes = l0.good.clone();
    restart_at_entries_end(&mut bytes, l0.footer.checksum, l0.data[1]);
    std::fs::write(work.path().join(p0.file_name().unwrap()), &bytes).unwrap();
    let t0 = Table::open(&p0, TableOpenOptions::default()).unwrap();
    let (first0, _) = t0
        .iter()
        .map(|e| e.unwrap())
        .find(|(k, _)| k[..] > l0.index_entries[0].0[..] && k[..] <= l0.index_entries[1].0[..])
        .unwrap();
    let user_key = first0[..first0.len() - 8].to_vec();
    let db = Db::open(work.path(), db_options()).unwrap();
    assert!(db.verify().unwrap_err().is_corruption());
    // A scan from a key of the block errors or starts right; never skips.
    match db.scan(user_key.clone()..).next() {
        Some(Err(e)) => assert!(e.is_corruption(), "{e}"),
        Some(Ok((k, v))) => {
            let want = st.model.range(user_key.clone()..).next().unwrap();
            assert_eq!((&k[..], &v[..]), (&want.0[..], &want.1[..]));
        }
        None => panic!("the scan from {} ended at once", show(&user_key)),
    }
}

/// A copy of store `seed` whose MANIFEST's last edit `change` rewrote (the
/// record's checksum recomputed).
fn with_last_edit(seed: u64, change: impl FnOnce(&mut VersionEdit)) -> (Store, tempfile::TempDir) {
    let st = Store::build(seed);
    let work = common::scratch_dir();
    copy_dir(st.dir.path(), work.path());
    let manifest = work
        .path()
        .join(st.files("MANIFEST-")[0].file_name().unwrap());
    let mut recs = read_log(&manifest);
    let last = recs.len() - 1;
    let mut e = VersionEdit::decode(&recs[last]).unwrap();
    change(&mut e);
    recs[last] = e.encode();
    write_log(&manifest, &recs);
    (st, work)
}

/// Found by manifest_counters_resealed: with a recovered `last_sequence` of
/// 2^56 - 1, the largest a version edit may hold, the next write was
/// acknowledged with sequence 2^56, which `pack_trailer` shifts out of the
/// key; get and scan then disagreed, and after a clean close the store no
/// longer opened. Writes that cannot be numbered are now refused.
#[test]
fn writes_past_the_last_sequence_are_refused() {
    let (st, work) = with_last_edit(0xf3, |e| e.last_sequence = Some(MAX_SEQUENCE));
    let db = Db::open(work.path(), db_options()).unwrap();
    let (k, old) = st.model.iter().next().unwrap();
    let v = dval(k, 5_000_000);
    assert!(db.put(k, &v).is_err(), "a put past sequence 2^56 - 1");
    assert_eq!(db.get(k).unwrap().as_deref(), Some(&old[..]));
    assert_eq!(
        &db.scan(k.clone()..).next().unwrap().unwrap().1[..],
        &old[..]
    );
    db.close().unwrap();
    Db::open(work.path(), db_options())
        .unwrap()
        .close()
        .unwrap();
}

/// Found by manifest_counters_resealed (long run, trial 793): recovery
/// accepted a `next_file_number` up to 2^62, created the new MANIFEST and
/// switched `CURRENT` to it, and only then refused the reserved numbers past
/// 2^62: every later open failed. Recovery now refuses numbers above 2^61,
/// as `Corruption`, before writing anything.
#[test]
fn a_next_file_number_near_the_limit_is_refused_before_any_write() {
    let (_st, work) = with_last_edit(0xf4, |e| e.next_file_number = Some(1 << 62));
    let before = snapshot(work.path());
    let err = Db::open(work.path(), db_options()).unwrap_err();
    let after = snapshot(work.path());
    let again = Db::open(work.path(), db_options()).map(drop);
    assert!(
        after == before && err.is_corruption(),
        "Db::open: {err}; it changed {}; the next open: {again:?}",
        snapshot_diff(&before, &after)
    );
}
