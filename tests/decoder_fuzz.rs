//! Every decoder of bytes that come from disk, fed generated inputs: mutants
//! of valid encodings (bytes flipped, set, inserted or removed; cut; spliced
//! with random bytes) and random bytes. None may panic or allocate without
//! bound; a decoder that accepts a mutant must give something usable (an
//! iterator that ends, a filter that answers).
//!
//! Decoders: SSTable data blocks, compressed block payloads (LZ4 and zstd
//! decompression with its length prefix and bound), footers, filter blocks (trailer and body,
//! every family), whole tables (`Table::open` + `verify_all`; blocked512,
//! Bloom and Ribbon filters, none, LZ4 and zstd), WAL batches and
//! MANIFEST edits, record logs as WAL and MANIFEST readers see them, and
//! `OPTIONS` files.
//!
//! The default run makes 50,000 inputs per decoder (10,000 logs, each read
//! twice; 5,000 whole tables); `BLOOMLSM_LONG=1` makes 1,000,000 of each
//! (200,000 whole tables, which go through a file each). No
//! coverage-guided fuzzer runs on the stable toolchain without extra tools
//! (cargo-fuzz needs nightly), so this is generation with fixed seeds.

use std::path::Path;

use bloomlsm::db::{LogReader, LogWriter, VersionEdit, WriteBatch};
use bloomlsm::sst::block::{Block, BlockBuilder};
use bloomlsm::sst::compression::{self, Compressor};
use bloomlsm::sst::format::FOOTER_LEN;
use bloomlsm::sst::{
    Compression, Footer, KeyFormat, Table, TableBuilder, TableBuilderOptions, TableOpenOptions,
};
use bloomlsm::workload::SplitMix64;
use bloomlsm::{Filter, FilterKind, FilterPolicy, key_hash};

mod common;
use common::scratch_dir;

/// The shared test generator, with indices.
struct Rng(SplitMix64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0.next_u64()
    }
    fn below(&mut self, n: usize) -> usize {
        self.0.below(n.max(1) as u64) as usize
    }
}

fn cases(default: usize, long: usize) -> usize {
    if common::long_mode() { long } else { default }
}

/// A mutant of one of `seeds` (or, one time in 16, random bytes).
fn mutant(rng: &mut Rng, seeds: &[Vec<u8>]) -> Vec<u8> {
    if rng.below(16) == 0 {
        let n = rng.below(300);
        return (0..n).map(|_| rng.next() as u8).collect();
    }
    let mut b = seeds[rng.below(seeds.len())].clone();
    for _ in 0..1 + rng.below(4) {
        let len = b.len();
        match rng.below(7) {
            0 | 1 if len > 0 => {
                let i = rng.below(len);
                b[i] ^= 1 << rng.below(8);
            }
            2 if len > 0 => {
                let i = rng.below(len);
                b[i] = [0, 0xff, 0x7f, 0x80][rng.below(4)];
            }
            3 => {
                let i = rng.below(len + 1);
                b.insert(i, rng.next() as u8);
            }
            4 if len > 0 => {
                b.remove(rng.below(len));
            }
            5 => b.truncate(rng.below(len + 1)),
            _ if len > 8 => {
                // A run of random bytes.
                let i = rng.below(len - 4);
                let n = 1 + rng.below((len - i).min(16));
                for x in &mut b[i..i + n] {
                    *x = rng.next() as u8;
                }
            }
            _ => {}
        }
    }
    b
}

fn keys(n: usize) -> Vec<Vec<u8>> {
    (0..n as u64).map(common::keys::key).collect()
}

#[test]
fn data_blocks() {
    let mut seeds = Vec::new();
    for (n, restart) in [(1, 1), (40, 16), (200, 4)] {
        let mut b = BlockBuilder::new(restart);
        for (i, k) in keys(n).iter().enumerate() {
            b.add(k, format!("value{i}").as_bytes());
        }
        seeds.push(b.finish().to_vec());
    }
    let mut rng = Rng(SplitMix64::new(1));
    for _ in 0..cases(50_000, 1_000_000) {
        let data = mutant(&mut rng, &seeds);
        let Ok(block) = Block::new(data.into()) else {
            continue;
        };
        for format in [KeyFormat::Plain, KeyFormat::Internal] {
            let mut it = block.iter(format);
            let mut steps = 0;
            while let Ok(true) = it.advance() {
                steps += 1;
                assert!(steps <= block.len(), "an iterator that does not end");
            }
            let mut it = block.iter(format);
            let _ = it.seek(b"key000100");
        }
    }
}

/// The decompression path of a data block: `varint32 raw_len` + LZ4 block
/// or zstd frame, checked against a bound. Mutants must give an error or
/// exactly the declared number of bytes, and never a panic; the bound keeps
/// the allocation at most 64 KiB whatever the prefix says.
#[test]
fn compressed_block_payloads() {
    let mut codecs = vec![Compression::Lz4];
    if cfg!(feature = "zstd") {
        codecs.push(Compression::Zstd(3));
    }
    let mut rng = Rng(SplitMix64::new(7));
    for c in codecs {
        let mut seeds = Vec::new();
        for (n, restart) in [(3, 1), (40, 16), (300, 4)] {
            let mut b = BlockBuilder::new(restart);
            for (i, k) in keys(n).iter().enumerate() {
                b.add(k, format!("value{}", i % 7).as_bytes());
            }
            let raw = b.finish().to_vec();
            let mut cx = Compressor::new(c).unwrap();
            let (stored, t) = cx.compress(&raw);
            assert_eq!(t, c.block_type(), "{c}: a seed that compresses");
            seeds.push(stored.to_vec());
        }
        for _ in 0..cases(25_000, 500_000) {
            let data = mutant(&mut rng, &seeds);
            let bound = 1 << 16;
            if let Ok(out) = compression::decompress(c.block_type(), &data, bound) {
                assert!(out.len() <= bound as usize);
                if let Ok(block) = Block::new(out.into()) {
                    let mut it = block.iter(KeyFormat::Plain);
                    let mut steps = 0;
                    while let Ok(true) = it.advance() {
                        steps += 1;
                        assert!(steps <= block.len(), "an iterator that does not end");
                    }
                }
            }
        }
    }
}

#[test]
fn footers() {
    let seeds: Vec<Vec<u8>> = sample_table_bytes()
        .iter()
        .map(|t| t[t.len() - FOOTER_LEN..].to_vec())
        .collect();
    let mut rng = Rng(SplitMix64::new(2));
    for _ in 0..cases(50_000, 1_000_000) {
        let mut f = mutant(&mut rng, &seeds);
        f.resize(FOOTER_LEN, 0);
        let _ = Footer::decode(f.as_slice().try_into().unwrap(), rng.next() >> 20);
    }
}

#[test]
fn filter_blocks() {
    let hashes: Vec<u64> = keys(500).iter().map(|k| key_hash(k)).collect();
    let mut seeds = Vec::new();
    for policy in [
        FilterPolicy::blocked512(10.0),
        FilterPolicy::blocked512(3.5),
        FilterPolicy::bloom(10.0),
        FilterPolicy::ribbon(7.0),
        FilterPolicy::ribbon(0.7),
        FilterPolicy::new(FilterKind::Fuse8, 0.0),
        FilterPolicy::new(FilterKind::Fuse16, 0.0),
    ] {
        seeds.push(policy.build(&hashes).unwrap());
        seeds.push(policy.build(&hashes[..1]).unwrap());
        seeds.push(policy.build(&[]).unwrap());
    }
    let mut rng = Rng(SplitMix64::new(3));
    for _ in 0..cases(50_000, 1_000_000) {
        let bytes = mutant(&mut rng, &seeds);
        if let Ok(f) = Filter::open(&bytes) {
            let probe = [hashes[0], rng.next(), rng.next()];
            for h in probe {
                let _ = f.may_contain(h);
            }
            let mut out = [false; 3];
            f.may_contain_batch(&probe, &mut out);
            let _ = f.predicted_fpr();
        }
    }
}

#[test]
fn wal_batches_and_manifest_edits() {
    let mut batch_seeds = Vec::new();
    for n in [1usize, 3, 20] {
        let mut b = WriteBatch::new();
        for (i, k) in keys(n).iter().enumerate() {
            if i % 3 == 2 {
                b.delete(k);
            } else {
                b.put(k, format!("v{i}"));
            }
        }
        b.set_sequence(1000 + n as u64);
        batch_seeds.push(b.encoded().to_vec());
    }
    let edit_seeds = manifest_edits();
    let mut rng = Rng(SplitMix64::new(4));
    for _ in 0..cases(50_000, 1_000_000) {
        let b = mutant(&mut rng, &batch_seeds);
        if let Ok(batch) = WriteBatch::decode(&b) {
            assert!(batch.iter().count() <= b.len());
        }
        let e = mutant(&mut rng, &edit_seeds);
        if let Ok(edit) = VersionEdit::decode(&e) {
            assert_eq!(VersionEdit::decode(&edit.encode()).unwrap(), edit);
        }
    }
}

#[test]
fn options_files() {
    use bloomlsm::db::options_file::{Design, OptionsFile, Tuning};
    let mut seeds = Vec::new();
    for (i, filters) in [
        bloomlsm::FilterOptions::default(),
        bloomlsm::FilterOptions::monkey(bloomlsm::FilterKind::Ribbon, 7.5),
        bloomlsm::FilterOptions::hybrid(
            FilterPolicy::blocked512(10.0),
            FilterPolicy::ribbon(7.0),
            2,
        ),
    ]
    .into_iter()
    .enumerate()
    {
        let opts = bloomlsm::Options::default()
            .filters(filters)
            .index_partition_bytes(if i == 1 { 4096 } else { 0 });
        let f = OptionsFile {
            unknown_families: Vec::new(),
            design: Design::of(&opts),
            // A keyspace's file records its memtable size and triggers.
            tuning: if i == 1 {
                Tuning::of(&opts)
            } else {
                Tuning::default()
            },
            // A store whose tables are in a bucket records where.
            tables: (i == 2).then(|| {
                let mut t = bloomlsm::fs::TableLocation::new("bucket", "stores/a/", "/var/cache/a");
                t.endpoint = Some("http://127.0.0.1:9000".into());
                t
            }),
            history: (0..i).map(|h| format!("{h} changed")).collect(),
        };
        seeds.push(f.encode());
    }
    // Bodies without their checksum line: half the mutants get a correct one
    // again, so the parser behind the checksum sees them too.
    let bodies: Vec<Vec<u8>> = seeds
        .iter()
        .map(|f| {
            let cut = f[..f.len() - 1].iter().rposition(|&c| c == b'\n').unwrap() + 1;
            f[..cut].to_vec()
        })
        .collect();
    let mut rng = Rng(SplitMix64::new(7));
    let mut accepted = 0;
    for i in 0..cases(50_000, 1_000_000) {
        let bytes = if i % 2 == 0 {
            mutant(&mut rng, &seeds)
        } else {
            let mut b = mutant(&mut rng, &bodies);
            let crc = crc32fast::hash(&b);
            b.extend_from_slice(format!("crc32 = {crc:08x}\n").as_bytes());
            b
        };
        if let Ok(f) = OptionsFile::decode(&bytes, Path::new("OPTIONS")) {
            // Accepted only if whole: it re-encodes to a file that decodes alike
            // (a family this process does not know is not written back).
            let again = OptionsFile::decode(&f.encode(), Path::new("OPTIONS")).unwrap();
            assert_eq!(again.design, f.design);
            assert_eq!(again.history, f.history);
            accepted += 1;
        }
    }
    // Some mutants (a changed history line, a number still in range) are
    // valid files: the parser was reached, not only the checksum.
    assert!(accepted > 0);
}

#[test]
fn record_logs() {
    let dir = scratch_dir();
    let path = dir.path().join("000001.log");
    let mut w = LogWriter::create(&path).unwrap();
    let mut rng = Rng(SplitMix64::new(5));
    for i in 0..60 {
        // Records of every fragment shape, one spanning several blocks.
        let n = if i == 30 { 70_000 } else { rng.below(900) };
        w.add_record(&vec![i as u8; n]).unwrap();
    }
    drop(w);
    let log = std::fs::read(&path).unwrap();
    // Mutate around the block boundaries and the small records too.
    let seeds = vec![
        log.clone(),
        log[..2000].to_vec(),
        log[32_000..34_000].to_vec(),
    ];
    for _ in 0..cases(10_000, 1_000_000) {
        let data = mutant(&mut rng, &seeds);
        for salvage in [false, true] {
            let mut r = LogReader::from_bytes("fuzz.log", data.clone(), salvage);
            let mut n = 0;
            while let Ok(Some(rec)) = r.next_record() {
                n += 1;
                assert!(rec.len() <= data.len());
                assert!(n <= data.len(), "a reader that does not end");
            }
        }
    }
}

#[test]
fn whole_tables() {
    let seeds = sample_table_bytes();
    let dir = scratch_dir();
    let path = dir.path().join("000009.sst");
    let mut rng = Rng(SplitMix64::new(6));
    for _ in 0..cases(5_000, 200_000) {
        let bytes = mutant(&mut rng, &seeds);
        std::fs::write(&path, &bytes).unwrap();
        // Half the cases read the filter and the index partitions on
        // demand, as under a metadata memory budget (each probe decodes the
        // block it needs).
        let on_demand = rng.below(2) == 0;
        let opts = TableOpenOptions::default()
            .filter_on_demand(on_demand)
            .index_on_demand(on_demand);
        if let Ok(t) = Table::open(&path, opts) {
            let _ = t.verify_all();
            let _ = t.get(b"key000017", key_hash(b"key000017"));
            let _ = t.get(b"key000017x", key_hash(b"key000017x"));
            let mut n = 0;
            for e in t.iter() {
                n += 1;
                if e.is_err() || n > bytes.len() {
                    break;
                }
            }
        }
    }
}

fn sample_table_bytes() -> Vec<Vec<u8>> {
    let dir = scratch_dir();
    let mut out = Vec::new();
    let zstd = if cfg!(feature = "zstd") {
        Compression::Zstd(1)
    } else {
        Compression::Lz4
    };
    // (keys, filter, compression, filter partition bytes), then index
    // partition bytes
    for (i, (n, filter, compression, partition_bytes, index_partition_bytes)) in [
        (
            30,
            Some(FilterPolicy::blocked512(10.0)),
            Compression::None,
            0,
        ),
        (200, Some(FilterPolicy::bloom(8.0)), Compression::None, 0),
        (5, None, Compression::None, 0),
        (
            60,
            Some(FilterPolicy::blocked512(10.0)),
            Compression::Lz4,
            0,
        ),
        (60, None, zstd, 0),
        (150, Some(FilterPolicy::ribbon(7.0)), Compression::None, 0),
        (
            150,
            Some(FilterPolicy::new(FilterKind::Fuse8, 0.0)),
            Compression::None,
            0,
        ),
        // Partitioned filters (format version 3): partition index and
        // partitions.
        (
            200,
            Some(FilterPolicy::blocked512(10.0)),
            Compression::None,
            64,
        ),
        (150, Some(FilterPolicy::ribbon(7.0)), Compression::Lz4, 64),
    ]
    .into_iter()
    .map(|(n, f, c, p)| (n, f, c, p, 0))
    // Two-level indexes (format version 4): top-level index and index
    // partitions, beside a whole and a partitioned filter.
    .chain([
        (
            200,
            Some(FilterPolicy::blocked512(10.0)),
            Compression::None,
            0,
            64,
        ),
        (
            150,
            Some(FilterPolicy::ribbon(7.0)),
            Compression::Lz4,
            64,
            64,
        ),
    ])
    .enumerate()
    {
        let path = dir.path().join(format!("{i:06}.sst"));
        let file = std::fs::File::create(&path).unwrap();
        let mut b = TableBuilder::new(
            file,
            &path,
            TableBuilderOptions::default()
                .block_size(256)
                .filter(filter)
                .key_format(KeyFormat::Plain)
                .compression(compression)
                .filter_partition_bytes(partition_bytes)
                .index_partition_bytes(index_partition_bytes),
        );
        for (j, k) in keys(n).iter().enumerate() {
            b.add(k, format!("value{j}").as_bytes()).unwrap();
        }
        b.finish().unwrap();
        if partition_bytes > 0 {
            let t = Table::open(&path, TableOpenOptions::default()).unwrap();
            assert!(t.filter_partitions().len() >= 3, "table {i}: partitioned");
        }
        if index_partition_bytes > 0 {
            let t = Table::open(&path, TableOpenOptions::default()).unwrap();
            assert!(t.index_partitions() >= 3, "table {i}: two-level index");
        }
        out.push(std::fs::read(&path).unwrap());
    }
    out
}

fn manifest_edits() -> Vec<Vec<u8>> {
    // The edits of a real store's manifest, read back through its log.
    let dir = scratch_dir();
    let opts = bloomlsm::Options::default()
        .write_buffer_size(4096)
        .target_file_size(4096);
    let db = bloomlsm::Db::open(dir.path(), opts).unwrap();
    for (i, k) in keys(400).iter().enumerate() {
        db.put(k, format!("value{i:050}")).unwrap();
    }
    db.compact().unwrap();
    db.close().unwrap();
    let manifest = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_str()
                .unwrap()
                .starts_with("MANIFEST-")
        })
        .unwrap();
    let mut r = LogReader::open(Path::new(&manifest), false).unwrap();
    let mut edits = Vec::new();
    while let Some(rec) = r.next_record().unwrap() {
        edits.push(rec);
    }
    assert!(edits.len() >= 3, "{} edits", edits.len());
    edits
}
