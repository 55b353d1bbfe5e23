//! Corrupt and truncated tables: every single-byte flip and every truncation
//! gives either the original answers or `Error::Corruption` — never a panic,
//! never a wrong value. Tables with blocked512 and Ribbon filters; damage
//! re-sealed behind a valid checksum tests the block and filter decoders
//! themselves.
//!
//! It is one file, one test binary, because its tests share the table builders
//! and checks at its top (`build_with`, `check`, `reseal`); each group of tests
//! after them is one table design (whole filter, compressed, Ribbon,
//! partitioned).

use std::fs::File;
use std::path::Path;

use bloomlsm::filter::{Filter, FilterPolicy};
use bloomlsm::sst::format::block_trailer;
use bloomlsm::sst::{
    BlockHandle, ChecksumType, Compression, KeyFormat, Table, TableBuilder, TableBuilderOptions,
    TableOpenOptions,
};
use bloomlsm::{Error, key_hash};

mod common;

type Entries = Vec<(Vec<u8>, Vec<u8>)>;

fn entries() -> Entries {
    (0..60u32)
        .map(|i| {
            (
                format!("key{:04}", i * 3).into_bytes(),
                format!("value-{i}-{}", "x".repeat(i as usize % 13)).into_bytes(),
            )
        })
        .collect()
}

/// Same-length keys and values: with restart interval 1 (no prefix
/// compression) all full data blocks have the same size.
fn uniform_entries() -> Entries {
    (0..60u32)
        .map(|i| {
            (
                format!("key{:04}", i).into_bytes(),
                format!("value{i:04}").into_bytes(),
            )
        })
        .collect()
}

fn build(path: &Path, checksum: ChecksumType, restart_interval: usize) -> Vec<u8> {
    build_from(path, checksum, restart_interval, &entries())
}

fn build_from(
    path: &Path,
    checksum: ChecksumType,
    restart_interval: usize,
    es: &Entries,
) -> Vec<u8> {
    build_with(path, checksum, restart_interval, es, Compression::None)
}

fn build_with(
    path: &Path,
    checksum: ChecksumType,
    restart_interval: usize,
    es: &Entries,
    compression: Compression,
) -> Vec<u8> {
    build_filtered(
        path,
        checksum,
        restart_interval,
        es,
        compression,
        FilterPolicy::blocked512(10.0),
    )
}

fn build_filtered(
    path: &Path,
    checksum: ChecksumType,
    restart_interval: usize,
    es: &Entries,
    compression: Compression,
    filter: FilterPolicy,
) -> Vec<u8> {
    let opts = TableBuilderOptions::default()
        .block_size(256)
        .restart_interval(restart_interval)
        .checksum(checksum)
        .filter(Some(filter))
        .key_format(KeyFormat::Plain)
        .creation_time(Some(1_700_000_000))
        .compression(compression)
        .filter_partition_bytes(0)
        .prefix_extractor(None);
    let mut b = TableBuilder::new(File::create(path).unwrap(), path, opts);
    for (k, v) in es {
        b.add(k, v).unwrap();
    }
    b.finish().unwrap();
    std::fs::read(path).unwrap()
}

fn expect_corruption(e: Error, what: &str) {
    assert!(e.is_corruption(), "{what}: expected corruption, got {e}");
}

/// Opens the (possibly damaged) file and checks every answer. Returns whether
/// any corruption was reported.
fn check(path: &Path, es: &Entries, what: &str) -> bool {
    check_opened(path, es, what, TableOpenOptions::default())
}

/// [`check`] with the table opened with `opts` (e.g. its filter on demand).
fn check_opened(path: &Path, es: &Entries, what: &str, opts: TableOpenOptions) -> bool {
    let t = match Table::open(path, opts) {
        Ok(t) => t,
        Err(e) => {
            expect_corruption(e, what);
            return true;
        }
    };
    let mut corrupt = false;
    for (i, (k, v)) in es.iter().enumerate() {
        match t.get(k, key_hash(k)) {
            Ok(r) => {
                let (gk, gv) = r.entry.unwrap_or_else(|| panic!("{what}: key {i} lost"));
                assert_eq!((&gk[..], &gv[..]), (&k[..], &v[..]), "{what}: wrong value");
            }
            Err(e) => {
                expect_corruption(e, what);
                corrupt = true;
            }
        }
        // An absent key between two present ones.
        let mut absent = k.clone();
        absent.push(b'!');
        match t.get(&absent, key_hash(&absent)) {
            Ok(r) => assert!(r.entry.is_none(), "{what}: phantom key"),
            Err(e) => {
                expect_corruption(e, what);
                corrupt = true;
            }
        }
    }
    let mut n = 0;
    for item in t.iter() {
        match item {
            Ok((k, v)) => {
                assert_eq!(
                    (&k[..], &v[..]),
                    (&es[n].0[..], &es[n].1[..]),
                    "{what}: scan"
                );
                n += 1;
            }
            Err(e) => {
                expect_corruption(e, what);
                corrupt = true;
            }
        }
    }
    assert!(
        corrupt || n == es.len(),
        "{what}: scan ended early without an error"
    );
    match t.verify_all() {
        Ok(()) => corrupt,
        Err(e) => {
            expect_corruption(e, what);
            true
        }
    }
}

#[test]
fn every_byte_flip_is_detected_or_harmless() {
    let dir = tempfile::tempdir().unwrap();
    let es = entries();
    for (checksum, patterns) in [
        (ChecksumType::Crc32, &[0x01u8, 0xa5][..]),
        (ChecksumType::Xxh3, &[0x80u8][..]),
    ] {
        let path = dir.path().join(format!("{}.sst", checksum.name()));
        let good = build(&path, checksum, 16);
        assert!(!check(&path, &es, "pristine"));
        let t = Table::open(&path, TableOpenOptions::default()).unwrap();
        assert!(t.data_blocks() >= 4, "a few blocks: {}", t.data_blocks());
        drop(t);
        for i in 0..good.len() {
            for &pat in patterns {
                let mut bad = good.clone();
                bad[i] ^= pat;
                std::fs::write(&path, &bad).unwrap();
                let what = format!("{} flip {pat:#04x} at {i}", checksum.name());
                // Every byte is covered by a checksum, so every flip is reported
                // (at the latest by verify_all).
                assert!(check(&path, &es, &what), "{what}: not detected");
            }
        }
    }
}

#[test]
fn every_truncation_and_extension_is_detected() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.sst");
    let good = build(&path, ChecksumType::Crc32, 16);
    for len in 0..good.len() {
        std::fs::write(&path, &good[..len]).unwrap();
        let e = Table::open(&path, TableOpenOptions::default()).unwrap_err();
        expect_corruption(e, &format!("truncated to {len}"));
    }
    let mut longer = good.clone();
    longer.extend_from_slice(b"garbage");
    std::fs::write(&path, &longer).unwrap();
    expect_corruption(
        Table::open(&path, TableOpenOptions::default()).unwrap_err(),
        "extended",
    );
    // Footer error names the file and the offset of the bad field.
    std::fs::write(&path, &good[..good.len() - 1]).unwrap();
    match Table::open(&path, TableOpenOptions::default()).unwrap_err() {
        Error::Corruption { file, offset, what } => {
            assert_eq!(file, path);
            assert_eq!(offset, good.len() as u64 - 1 - 52 + 44);
            assert!(what.contains("magic"), "{what}");
        }
        e => panic!("{e}"),
    }
}

#[test]
fn block_copied_to_another_offset_fails() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.sst");
    let es = uniform_entries();
    let good = build_from(&path, ChecksumType::Crc32, 1, &es);
    let t = Table::open(&path, TableOpenOptions::default()).unwrap();
    let handles: Vec<_> = t
        .index_entries()
        .unwrap()
        .into_iter()
        .map(|(_, h)| h)
        .collect();
    drop(t);
    let (a, b) = handles
        .iter()
        .enumerate()
        .find_map(|(i, a)| {
            handles[i + 1..]
                .iter()
                .find(|b| b.size == a.size)
                .map(|b| (*a, *b))
        })
        .expect("two data blocks of equal size");
    let len = (a.size + 5) as usize;
    let mut bad = good.clone();
    bad.copy_within(
        b.offset as usize..b.offset as usize + len,
        a.offset as usize,
    );
    std::fs::write(&path, &bad).unwrap();
    let t = Table::open(&path, TableOpenOptions::default()).unwrap();
    let victim = t
        .index_entries()
        .unwrap()
        .into_iter()
        .find(|(_, h)| *h == a)
        .map(|(k, _)| k.to_vec())
        .unwrap();
    let (k, _) = es.iter().find(|(k, _)| *k == victim).unwrap();
    match t.get(k, key_hash(k)).unwrap_err() {
        Error::Corruption { offset, what, .. } => {
            assert_eq!(offset, a.offset);
            assert!(what.contains("checksum"), "{what}");
        }
        e => panic!("{e}"),
    }
    expect_corruption(t.verify_all().unwrap_err(), "moved block");
}

/// Rewrites the payload of the block at `offset..offset+size` and re-seals its
/// trailer, so only structural checks (not checksums) can catch the damage.
fn reseal(bytes: &mut [u8], offset: u64, size: u64, edit: impl FnOnce(&mut [u8])) {
    let (s, e) = (offset as usize, (offset + size) as usize);
    edit(&mut bytes[s..e]);
    let tr = block_trailer(ChecksumType::Crc32, &bytes[s..e], 0, offset);
    bytes[e..e + 5].copy_from_slice(&tr);
}

#[test]
fn structural_damage_behind_valid_checksums_is_corruption() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.sst");
    let good = build(&path, ChecksumType::Crc32, 16);
    let t = Table::open(&path, TableOpenOptions::default()).unwrap();
    let index = t.footer().index;
    let first_key_len = t
        .index_entries()
        .unwrap()
        .into_iter()
        .next()
        .unwrap()
        .0
        .len();
    drop(t);
    let open = |bytes: &[u8]| {
        std::fs::write(&path, bytes).unwrap();
        Table::open(&path, TableOpenOptions::default())
    };

    // An index handle whose size points past the end of the file.
    let mut bad = good.clone();
    reseal(&mut bad, index.offset, index.size, |p| {
        // entry 0: shared(1) non_shared(1) value_len(1) key handle=[offset=0][size:2 bytes]
        let at = 3 + first_key_len + 1;
        p[at..at + 2].copy_from_slice(&[0xff, 0x7f]);
    });
    match open(&bad).unwrap_err() {
        Error::Corruption { what, offset, .. } => {
            assert!(what.contains("past the end"), "{what}");
            assert_eq!(offset, index.offset);
        }
        e => panic!("{e}"),
    }

    // A restart count that does not fit in the block.
    let mut bad = good.clone();
    reseal(&mut bad, index.offset, index.size, |p| {
        let n = p.len();
        p[n - 4..].copy_from_slice(&u32::MAX.to_le_bytes());
    });
    let e = open(&bad).unwrap_err();
    assert!(e.to_string().contains("restart"), "{e}");

    // A key length running past the end of the block.
    let mut bad = good.clone();
    reseal(&mut bad, index.offset, index.size, |p| p[1] = 0x7f);
    expect_corruption(open(&bad).unwrap_err(), "key overrun");

    // Footer handle with an absurd size: rejected before allocating it.
    let mut bad = good.clone();
    let f = bad.len() - 52;
    bad[f + 8..f + 16].copy_from_slice(&(u64::MAX / 2).to_le_bytes());
    let c = ChecksumType::Crc32.checksum(&[&bad[f..f + 40]])
        ^ bloomlsm::sst::format::offset_mix(f as u64);
    bad[f + 40..f + 44].copy_from_slice(&c.to_le_bytes());
    let e = open(&bad).unwrap_err();
    assert!(e.to_string().contains("past the end"), "{e}");

    // Unknown format version and checksum type (checked before the checksum).
    let mut bad = good.clone();
    bad[f + 36] = bloomlsm::sst::FORMAT_VERSION as u8 + 1;
    assert!(
        open(&bad)
            .unwrap_err()
            .to_string()
            .contains("format version")
    );
    let mut bad = good.clone();
    bad[f + 32] = 9;
    assert!(
        open(&bad)
            .unwrap_err()
            .to_string()
            .contains("checksum type")
    );
}

fn codecs() -> Vec<Compression> {
    let mut v = vec![Compression::Lz4];
    if cfg!(feature = "zstd") {
        v.push(Compression::Zstd(3));
    }
    v
}

/// Compressible entries: long values of repeated structure, so every data
/// block is stored compressed.
fn compressible_entries() -> Entries {
    (0..24u32)
        .map(|i| {
            (
                format!("key{:04}", i * 3).into_bytes(),
                format!("value-{i}-")
                    .repeat(4 + i as usize % 5)
                    .into_bytes(),
            )
        })
        .collect()
}

/// Builds a compressed table and returns its bytes and the handles of its
/// data blocks, checking that every one of them is stored compressed.
fn build_compressed(
    path: &Path,
    c: Compression,
    es: &Entries,
) -> (Vec<u8>, Vec<bloomlsm::sst::BlockHandle>) {
    let good = build_with(path, ChecksumType::Crc32, 16, es, c);
    let t = Table::open(path, TableOpenOptions::default()).unwrap();
    assert!(t.data_blocks() >= 3, "{}", t.data_blocks());
    for i in 0..t.data_blocks() {
        assert_eq!(
            t.data_block_codec(i).unwrap().0,
            c.block_type(),
            "{c} block {i}"
        );
    }
    let handles = t
        .index_entries()
        .unwrap()
        .into_iter()
        .map(|(_, h)| h)
        .collect();
    (good, handles)
}

#[test]
fn every_byte_flip_of_a_compressed_table_is_detected_or_harmless() {
    let dir = tempfile::tempdir().unwrap();
    let es = compressible_entries();
    for c in codecs() {
        let path = dir.path().join(format!("{}.sst", c.name()));
        let (good, _) = build_compressed(&path, c, &es);
        assert!(!check(&path, &es, "pristine"));
        for i in 0..good.len() {
            let mut bad = good.clone();
            bad[i] ^= 0x01;
            std::fs::write(&path, &bad).unwrap();
            let what = format!("{c} flip at {i}");
            assert!(check(&path, &es, &what), "{what}: not detected");
        }
    }
}

/// The decompressor itself facing damage: each byte of each compressed data
/// block flipped (two patterns) and the trailer re-sealed, so the checksum
/// passes and only the decoder and the length check stand between the damage
/// and the caller. Every answer must be right or a corruption error.
#[test]
fn damaged_compressed_blocks_behind_valid_checksums_never_give_wrong_values() {
    let dir = tempfile::tempdir().unwrap();
    let es = compressible_entries();
    for c in codecs() {
        let path = dir.path().join(format!("r-{}.sst", c.name()));
        let (good, handles) = build_compressed(&path, c, &es);
        let mut detected = 0;
        let mut flips = 0;
        for h in &handles {
            for j in 0..h.size as usize {
                for pat in [0x01u8, 0xff] {
                    let mut bad = good.clone();
                    reseal_as(&mut bad, h.offset, h.size, c.block_type(), |p| p[j] ^= pat);
                    std::fs::write(&path, &bad).unwrap();
                    let what = format!("{c}: block at {} byte {j} ^ {pat:#04x}", h.offset);
                    flips += 1;
                    // A flip in a literal decodes to other bytes of the right
                    // length: a changed entry the block decoder may accept. Such
                    // a value differs from the original, so `check` would
                    // fail on it: count only what it lets through.
                    if let Some(found) = check_no_panic(&path, &es, &what) {
                        detected += usize::from(found);
                    }
                }
            }
        }
        assert!(detected > flips / 2, "{c}: {detected} of {flips} detected");
    }
}

/// Like `check`, but a damaged literal may legitimately change a key or a
/// value (the checksum was re-sealed over it), so this checks only that
/// nothing panics and that every error is corruption. `Some(true)` if an
/// error was reported.
fn check_no_panic(path: &Path, es: &Entries, what: &str) -> Option<bool> {
    let t = match Table::open(path, TableOpenOptions::default()) {
        Ok(t) => t,
        Err(e) => {
            expect_corruption(e, what);
            return Some(true);
        }
    };
    let mut corrupt = false;
    for (k, _) in es {
        if let Err(e) = t.get(k, key_hash(k)) {
            expect_corruption(e, what);
            corrupt = true;
        }
    }
    for item in t.iter() {
        if let Err(e) = item {
            expect_corruption(e, what);
            corrupt = true;
        }
    }
    if let Err(e) = t.verify_all() {
        expect_corruption(e, what);
        corrupt = true;
    }
    Some(corrupt)
}

fn reseal_as(
    bytes: &mut [u8],
    offset: u64,
    size: u64,
    block_type: u8,
    edit: impl FnOnce(&mut [u8]),
) {
    let (s, e) = (offset as usize, (offset + size) as usize);
    edit(&mut bytes[s..e]);
    let tr = block_trailer(ChecksumType::Crc32, &bytes[s..e], block_type, offset);
    bytes[e..e + 5].copy_from_slice(&tr);
}

#[test]
fn compressed_block_lengths_are_checked_before_allocating() {
    let dir = tempfile::tempdir().unwrap();
    let es = compressible_entries();
    for c in codecs() {
        let path = dir.path().join(format!("l-{}.sst", c.name()));
        let (good, handles) = build_compressed(&path, c, &es);
        let t = Table::open(&path, TableOpenOptions::default()).unwrap();
        let max = t.properties().data_raw_max;
        drop(t);
        // The varint32 length prefix of a block (always 2 bytes here).
        let declared_of = |h: &bloomlsm::sst::BlockHandle| {
            let b = &good[h.offset as usize..];
            assert!(b[0] & 0x80 != 0 && b[1] & 0x80 == 0, "a 2-byte prefix");
            u32::from(b[0] & 0x7f) | u32::from(b[1]) << 7
        };
        // The block whose decoded size is smallest, so one more is in bounds.
        let h = *handles.iter().min_by_key(|h| declared_of(h)).unwrap();
        let actual = declared_of(&h);
        assert!(u64::from(actual) < max);
        let prefix_len = 2;
        let payload = &good[h.offset as usize + prefix_len..(h.offset + h.size) as usize];
        for (declared, want) in [
            (u32::MAX, "more than the table's largest block"),
            (max as u32 + 1, "more than the table's largest block"),
            (actual + 1, "decompress"),
            (actual - 1, "decompress"),
            (1, "decompress"),
            (0, "decompress"),
        ] {
            let mut block = Vec::new();
            let mut v = declared;
            while v >= 0x80 {
                block.push((v as u8) | 0x80);
                v >>= 7;
            }
            block.push(v as u8);
            block.extend_from_slice(payload);
            // Keep the block's size (cut or zero-padded at the end), so the
            // handles stay valid and only the length prefix tells.
            block.resize(h.size as usize, 0);
            let mut bad = good.clone();
            reseal_as(&mut bad, h.offset, h.size, c.block_type(), |p| {
                p.copy_from_slice(&block)
            });
            std::fs::write(&path, &bad).unwrap();
            let t = Table::open(&path, TableOpenOptions::default()).unwrap();
            let victim = t
                .index_entries()
                .unwrap()
                .into_iter()
                .find(|(_, x)| *x == h)
                .map(|(k, _)| k.to_vec())
                .unwrap();
            match t.get(&victim, key_hash(&victim)).unwrap_err() {
                Error::Corruption { offset, what, file } => {
                    assert_eq!((offset, file), (h.offset, path.clone()));
                    assert!(what.contains(want), "{c} {declared}: {what}");
                }
                e => panic!("{e}"),
            }
        }
    }
}

#[test]
fn unknown_block_types_are_corruption() {
    let dir = tempfile::tempdir().unwrap();
    let es = compressible_entries();
    let path = dir.path().join("u.sst");
    let (good, handles) = build_compressed(&path, Compression::Lz4, &es);
    let h = handles[1];
    let mut bad = good.clone();
    reseal_as(&mut bad, h.offset, h.size, 7, |_| {});
    std::fs::write(&path, &bad).unwrap();
    let t = Table::open(&path, TableOpenOptions::default()).unwrap();
    let e = t.verify_all().unwrap_err();
    assert!(e.to_string().contains("unknown block type 7"), "{e}");
    // An LZ4 type byte on a version 1 (uncompressed) table's block is unknown
    // there too.
    let path1 = dir.path().join("v1.sst");
    let good1 = build(&path1, ChecksumType::Crc32, 16);
    let t = Table::open(&path1, TableOpenOptions::default()).unwrap();
    let h = t.index_entries().unwrap().into_iter().next().unwrap().1;
    drop(t);
    let mut bad = good1.clone();
    reseal_as(&mut bad, h.offset, h.size, 1, |_| {});
    std::fs::write(&path1, &bad).unwrap();
    let t = Table::open(&path1, TableOpenOptions::default()).unwrap();
    let e = t.verify_all().unwrap_err();
    assert!(e.to_string().contains("unknown block type 1"), "{e}");
}

// ---- Ribbon filter blocks -------------------------------------------------

/// Enough keys for a Ribbon filter of several 128-slot blocks, so its header
/// has a real "upper columns from block" field.
fn ribbon_entries() -> Entries {
    (0..200u32)
        .map(|i| {
            (
                format!("k{:05}", i * 7).into_bytes(),
                format!("v{i}").into_bytes(),
            )
        })
        .collect()
}

/// A Ribbon-filtered table of `es`, its bytes and its filter block handle
/// (checked to be an opened Ribbon filter of more than one block).
fn build_ribbon(path: &Path, es: &Entries) -> (Vec<u8>, bloomlsm::sst::BlockHandle) {
    let good = build_filtered(
        path,
        ChecksumType::Crc32,
        16,
        es,
        Compression::None,
        FilterPolicy::ribbon(7.0),
    );
    let t = Table::open(path, TableOpenOptions::default()).unwrap();
    match t.filter() {
        Some(Filter::Ribbon(r)) => {
            assert!(r.num_blocks() >= 2, "{} blocks", r.num_blocks());
            assert!(r.upper_start_block() < r.num_blocks(), "{r:?}");
        }
        f => panic!("not a ribbon filter: {f:?}"),
    }
    assert!(t.data_blocks() >= 4, "a few blocks: {}", t.data_blocks());
    let h = t.filter_handle().unwrap();
    drop(t);
    (good, h)
}

/// `check`, which also asserts that a table whose filter opened as
/// [`Filter::Unusable`] reports that on every lookup (the flag the store
/// counts as `unusable_filter_reads`). Returns whether corruption was
/// reported, and whether the filter was unusable.
fn check_counting_unusable(path: &Path, es: &Entries, what: &str) -> (bool, bool) {
    let unusable = match Table::open(path, TableOpenOptions::default()) {
        Ok(t) => {
            let unusable = matches!(t.filter(), Some(Filter::Unusable { .. }));
            for (k, _) in es {
                if let Ok(r) = t.get(k, key_hash(k)) {
                    assert_eq!(r.filter_unusable, unusable, "{what}: unusable flag");
                }
            }
            unusable
        }
        Err(_) => false,
    };
    (check(path, es, what), unusable)
}

/// Byte flips of tables with a Ribbon filter: every bit of a multi-block
/// filter block and of its block trailer, and a spread of single-byte flips
/// (every 3rd byte, pattern 0x01) over a whole small table. The filter block
/// is read and its checksum verified at `Table::open`, so every flip inside
/// it is `Corruption` from `open` naming the block's offset — the Ribbon
/// decoder never sees damaged bytes; flips elsewhere behave as for any table
/// (the original answers or `Corruption`, at the latest from `verify_all`).
#[test]
fn every_byte_flip_of_a_ribbon_table_is_detected_or_harmless() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.sst");
    let (good, h) = build_ribbon(&path, &ribbon_entries());
    let (s, e) = (h.offset as usize, (h.offset + h.size) as usize + 5);
    for i in s..e {
        for bit in 0..8 {
            let mut bad = good.clone();
            bad[i] ^= 1 << bit;
            std::fs::write(&path, &bad).unwrap();
            let what = format!("ribbon filter block bit {bit} at {i}");
            match Table::open(&path, TableOpenOptions::default()) {
                Err(Error::Corruption {
                    offset, what: w, ..
                }) => {
                    assert_eq!(offset, h.offset, "{what}: {w}");
                    assert!(w.contains("checksum"), "{what}: {w}");
                }
                Err(e) => panic!("{what}: {e}"),
                Ok(_) => panic!("{what}: opened"),
            }
        }
    }
    let es = entries();
    let small = build_filtered(
        &path,
        ChecksumType::Crc32,
        16,
        &es,
        Compression::None,
        FilterPolicy::ribbon(7.0),
    );
    assert!(!check(&path, &es, "pristine"));
    for i in (0..small.len()).step_by(3) {
        let mut bad = small.clone();
        bad[i] ^= 0x01;
        std::fs::write(&path, &bad).unwrap();
        let what = format!("ribbon table flip at {i}");
        assert!(check(&path, &es, &what), "{what}: not detected");
    }
}

/// Which part of a Ribbon filter block a byte offset (within the block's
/// payload of `len` bytes) falls in.
#[derive(Debug, PartialEq)]
enum RibbonPart {
    /// Solution words: any value is a well-formed filter.
    Solution,
    /// The seed (header) and key count (trailer): any value is well formed.
    FreeField,
    /// Every other header and trailer byte: sizes, columns, reserved bytes,
    /// k, hash, version, kind.
    Checked,
}

fn ribbon_part(at: usize, len: usize) -> RibbonPart {
    use bloomlsm::filter::FILTER_TRAILER_LEN;
    use bloomlsm::filter::ribbon::RIBBON_HEADER_LEN;
    let header = len - FILTER_TRAILER_LEN - RIBBON_HEADER_LEN;
    let trailer = len - FILTER_TRAILER_LEN;
    if at < header {
        RibbonPart::Solution
    } else if at < trailer {
        // upper_start u64, seed u32, lower u8, 3 reserved bytes.
        match at - header {
            8..12 => RibbonPart::FreeField,
            _ => RibbonPart::Checked,
        }
    } else {
        // units u64, key_count u64, k, hash, version, kind.
        match at - trailer {
            8..16 => RibbonPart::FreeField,
            _ => RibbonPart::Checked,
        }
    }
}

/// The Ribbon decoder itself facing damage: every bit of the filter block's
/// payload flipped and its block trailer re-sealed, so the checksum passes.
/// * A header or trailer field whose value is checked (blocks, upper start,
///   lower columns, reserved bytes, k, kind) gives `Corruption` from
///   `Table::open`; an unknown hash function or version opens the filter as
///   unusable, every lookup reports it (`filter_unusable`, counted by the
///   store) and every answer is right.
/// * A flip in the solution words, the seed or the key count leaves a
///   well-formed filter that may now say "absent" for a stored key: without
///   the checksum that is a wrong answer no decoder can see. Those cases
///   assert only no panic, every error `Corruption`, and that `verify_all`
///   (which probes the filter for every stored key) reports any key a lookup
///   lost.
#[test]
fn damaged_ribbon_filters_behind_valid_checksums_never_panic() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.sst");
    let es = ribbon_entries();
    let (good, h) = build_ribbon(&path, &es);
    let (s, e) = (h.offset as usize, (h.offset + h.size) as usize);
    let block_type = good[e];
    let (mut corrupt, mut unusable, mut lost_and_reported) = (0, 0, 0);
    for i in s..e {
        let part = ribbon_part(i - s, e - s);
        // Every bit of the header and trailer; one bit (varying) of each
        // solution byte, which keeps the sweep quick.
        let bits = if part == RibbonPart::Solution {
            i % 8..i % 8 + 1
        } else {
            0..8
        };
        for bit in bits {
            let mut bad = good.clone();
            reseal_as(&mut bad, h.offset, h.size, block_type, |p| {
                p[i - s] ^= 1 << bit
            });
            std::fs::write(&path, &bad).unwrap();
            let what = format!("re-sealed ribbon bit {bit} at {i} ({part:?})");
            if part == RibbonPart::Checked {
                let (reported, was_unusable) = check_counting_unusable(&path, &es, &what);
                assert!(reported || was_unusable, "{what}: not detected");
                corrupt += usize::from(reported);
                unusable += usize::from(was_unusable);
                continue;
            }
            let t = match Table::open(&path, TableOpenOptions::default()) {
                Ok(t) => t,
                Err(e) => panic!("{what}: a well-formed filter rejected: {e}"),
            };
            let mut lost = false;
            for (k, v) in &es {
                let r = t.get(k, key_hash(k)).unwrap();
                match r.entry {
                    Some((gk, gv)) => assert_eq!((&gk[..], &gv[..]), (&k[..], &v[..])),
                    None => lost = true,
                }
                let mut absent = k.clone();
                absent.push(b'!');
                assert!(t.get(&absent, key_hash(&absent)).unwrap().entry.is_none());
            }
            match t.verify_all() {
                Ok(()) => assert!(!lost, "{what}: a key lost and verify_all passed"),
                Err(e) => {
                    expect_corruption(e, &what);
                    lost_and_reported += usize::from(lost);
                }
            }
        }
    }
    // The sweep reached every outcome.
    assert!(corrupt > 0 && unusable > 0 && lost_and_reported > 0);
}

// ---- Partitioned filters (format version 3) ---------------------------------

/// The families partitioned here, each at a size that makes ≥ 3 partitions of
/// 64 bytes for [`partitioned_entries`].
fn partition_policies() -> [FilterPolicy; 2] {
    [FilterPolicy::blocked512(10.0), FilterPolicy::ribbon(7.0)]
}

fn partitioned_entries() -> Entries {
    (0..200u32)
        .map(|i| {
            (
                format!("p{:05}", i * 5).into_bytes(),
                format!("val{i}").into_bytes(),
            )
        })
        .collect()
}

/// Opens with the filter in memory (`false`) or read on demand per probe
/// (`true`, as a store under a filter memory budget does).
fn open_opts(on_demand: bool) -> TableOpenOptions {
    TableOpenOptions::default().filter_on_demand(on_demand)
}

/// Where the blocks of a partitioned table are.
struct Layout {
    good: Vec<u8>,
    /// The filter partitions.
    parts: Vec<BlockHandle>,
    /// The partition index block.
    index: BlockHandle,
    properties: BlockHandle,
    metaindex: BlockHandle,
    data: Vec<BlockHandle>,
}

fn build_partitioned(path: &Path, es: &Entries, policy: FilterPolicy) -> Layout {
    let opts = TableBuilderOptions::default()
        .block_size(256)
        .restart_interval(16)
        .checksum(ChecksumType::Crc32)
        .filter(Some(policy))
        .key_format(KeyFormat::Plain)
        .creation_time(Some(1_700_000_000))
        .compression(Compression::None)
        .filter_partition_bytes(64)
        .prefix_extractor(None);
    let mut b = TableBuilder::new(File::create(path).unwrap(), path, opts);
    for (k, v) in es {
        b.add(k, v).unwrap();
    }
    b.finish().unwrap();
    let good = std::fs::read(path).unwrap();
    let t = Table::open(path, TableOpenOptions::default()).unwrap();
    let parts = t.filter_partitions().to_vec();
    assert!(parts.len() >= 3, "{policy:?}: {} partitions", parts.len());
    assert_eq!(t.properties().filter_partitions, parts.len() as u64);
    assert_eq!(t.footer().format_version, 3);
    match t.filter() {
        Some(Filter::Partitioned(p)) => assert_eq!(p.partitions().len(), parts.len()),
        f => panic!("{policy:?}: not a partitioned filter: {f:?}"),
    }
    assert!(t.data_blocks() >= 4, "a few blocks: {}", t.data_blocks());
    let f = *t.footer();
    // Index, properties, metaindex, footer: the properties block fills the gap.
    let props_at = f.index.offset + f.index.size + 5;
    Layout {
        good,
        parts,
        index: t.filter_handle().unwrap(),
        properties: BlockHandle::new(props_at, f.metaindex.offset - 5 - props_at),
        metaindex: f.metaindex,
        data: t
            .index_entries()
            .unwrap()
            .into_iter()
            .map(|(_, h)| h)
            .collect(),
    }
}

fn payload(bytes: &[u8], h: BlockHandle) -> &[u8] {
    &bytes[h.offset as usize..(h.offset + h.size) as usize]
}

/// A partition index payload: `varint32 count`, then the handles.
fn encode_partition_index(count: u32, handles: &[BlockHandle]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut v = count;
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
    for h in handles {
        out.extend_from_slice(&h.encode());
    }
    out
}

/// Every bit of every partition, of the partition index block, and of their
/// block trailers: `Corruption` from `Table::open` naming that block's
/// offset, whether the filter is then kept in memory or read on demand (the
/// open reads and checks every partition either way).
#[test]
fn every_bit_flip_of_a_partitioned_filter_is_corruption_at_its_block() {
    let dir = common::scratch_dir();
    let path = dir.path().join("p.sst");
    let es = partitioned_entries();
    for policy in partition_policies() {
        let l = build_partitioned(&path, &es, policy);
        let mut blocks: Vec<(String, BlockHandle)> = l
            .parts
            .iter()
            .enumerate()
            .map(|(i, &h)| (format!("partition {i}"), h))
            .collect();
        blocks.push(("partition index".into(), l.index));
        for (name, h) in &blocks {
            for i in h.offset as usize..(h.offset + h.size) as usize + 5 {
                for bit in 0..8 {
                    let mut bad = l.good.clone();
                    bad[i] ^= 1 << bit;
                    std::fs::write(&path, &bad).unwrap();
                    for on_demand in [false, true] {
                        let what =
                            format!("{policy:?} {name} bit {bit} at {i} on demand {on_demand}");
                        match Table::open(&path, open_opts(on_demand)) {
                            Err(Error::Corruption {
                                offset, what: w, ..
                            }) => {
                                assert_eq!(offset, h.offset, "{what}: {w}");
                                assert!(w.contains("checksum"), "{what}: {w}");
                            }
                            Err(e) => panic!("{what}: {e}"),
                            Ok(_) => panic!("{what}: opened"),
                        }
                    }
                }
            }
        }
    }
}

/// A spread of single-byte flips over whole partitioned tables (every 4th
/// byte, every byte in long mode), opened both ways: the original answers or
/// `Corruption`, at the latest from `verify_all`.
#[test]
fn byte_flips_of_a_partitioned_table_are_detected_or_harmless() {
    let dir = common::scratch_dir();
    let path = dir.path().join("p.sst");
    let es = partitioned_entries();
    let step = if common::long_mode() { 1 } else { 4 };
    for policy in partition_policies() {
        let l = build_partitioned(&path, &es, policy);
        for on_demand in [false, true] {
            assert!(!check_opened(&path, &es, "pristine", open_opts(on_demand)));
        }
        for i in (0..l.good.len()).step_by(step) {
            let mut bad = l.good.clone();
            bad[i] ^= if i % 2 == 0 { 0x01 } else { 0x80 };
            std::fs::write(&path, &bad).unwrap();
            for on_demand in [false, true] {
                let what = format!("{policy:?} flip at {i} on demand {on_demand}");
                assert!(
                    check_opened(&path, &es, &what, open_opts(on_demand)),
                    "{what}: not detected"
                );
            }
        }
    }
}

/// The partition index behind a re-sealed checksum: a changed partition
/// count, swapped handles, a handle pointing at a data block, handles whose
/// sizes overlap the next partition or run into the index block. Each is
/// `Corruption` from `Table::open` within the partition index block,
/// either way the filter is opened — never a filter that sends a key to the
/// wrong partition (a false negative: a wrong answer).
#[test]
fn damaged_partition_index_behind_valid_checksums_is_corruption() {
    let dir = common::scratch_dir();
    let path = dir.path().join("p.sst");
    let es = partitioned_entries();
    for policy in partition_policies() {
        let l = build_partitioned(&path, &es, policy);
        let n = l.parts.len();
        let original = encode_partition_index(n as u32, &l.parts);
        assert_eq!(
            original,
            payload(&l.good, l.index),
            "the index as documented"
        );
        let with = |i: usize, h: BlockHandle| {
            let mut v = l.parts.clone();
            v[i] = h;
            v
        };
        let swapped = |a: usize, b: usize| {
            let mut v = l.parts.clone();
            v.swap(a, b);
            v
        };
        let grown = |i: usize, by: u64| {
            let h = l.parts[i];
            with(i, BlockHandle::new(h.offset, h.size + by))
        };
        // Partition i replaced by a data block whose handle encodes to as
        // many bytes, so the index keeps its size.
        let data = |i: usize| {
            let d = *l
                .data
                .iter()
                .find(|d| d.encode().len() == l.parts[i].encode().len())
                .expect("a data block handle of the same length");
            with(i, d)
        };
        let cases: Vec<(&str, u32, Vec<BlockHandle>)> = vec![
            ("count + 1", n as u32 + 1, l.parts.clone()),
            ("count - 1", n as u32 - 1, l.parts.clone()),
            ("count 1", 1, l.parts.clone()),
            ("count 0", 0, l.parts.clone()),
            ("partitions 0 and 1 swapped", n as u32, swapped(0, 1)),
            ("first and last swapped", n as u32, swapped(0, n - 1)),
            ("partition 1 is a data block", n as u32, data(1)),
            ("partition 0 is a data block", n as u32, data(0)),
            (
                "last partition runs into the index",
                n as u32,
                grown(n - 1, 1),
            ),
            ("partition 0 overlaps partition 1", n as u32, grown(0, 1)),
            (
                "partition 1 shrunk",
                n as u32,
                with(1, BlockHandle::new(l.parts[1].offset, l.parts[1].size - 1)),
            ),
        ];
        for (name, count, handles) in cases {
            let p = encode_partition_index(count, &handles);
            assert_eq!(p.len(), original.len(), "{name}: keeps the block's size");
            let mut bad = l.good.clone();
            reseal(&mut bad, l.index.offset, l.index.size, |b| {
                b.copy_from_slice(&p)
            });
            std::fs::write(&path, &bad).unwrap();
            for on_demand in [false, true] {
                let what = format!("{policy:?}: {name}, on demand {on_demand}");
                match Table::open(&path, open_opts(on_demand)) {
                    Err(Error::Corruption {
                        offset, what: w, ..
                    }) => assert!(
                        // Within the payload, or at its end (a handle missing).
                        (l.index.offset..=l.index.offset + l.index.size).contains(&offset),
                        "{what}: at {offset}: {w}"
                    ),
                    Err(e) => panic!("{what}: {e}"),
                    Ok(_) => panic!("{what}: opened"),
                }
            }
        }
    }
}

/// The partition count in the properties and the metaindex's filter entry,
/// behind re-sealed checksums: a `filter.partitions` that disagrees with the
/// index (or is < 2) and a `filter_partitions.` entry renamed into a whole
/// `filter.` one are `Corruption`; a partitioned filter of a family this
/// build does not know (metaindex and `filter.policy` agreeing) opens as an
/// unusable filter that every lookup reports, and every answer is right.
#[test]
fn partition_metadata_damage_is_corruption_or_an_unusable_filter() {
    let dir = common::scratch_dir();
    let path = dir.path().join("p.sst");
    let es = partitioned_entries();
    let find = |hay: &[u8], needle: &[u8]| {
        hay.windows(needle.len())
            .position(|w| w == needle)
            .unwrap_or_else(|| panic!("{:?} not found", String::from_utf8_lossy(needle)))
    };
    for policy in partition_policies() {
        let l = build_partitioned(&path, &es, policy);
        let n = l.parts.len() as u8;
        let props = payload(&l.good, l.properties);
        // The entry `filter.partitions`, prefix-compressed after
        // `filter.keys`: its key delta ends in "partitions", its 1-byte
        // varint value follows.
        let value_at = find(props, b"partitions") + b"partitions".len();
        assert_eq!(
            props[value_at], n,
            "{policy:?}: the filter.partitions value"
        );
        for v in [n + 1, n - 1, 1, 0, 0x7f] {
            let mut bad = l.good.clone();
            reseal(&mut bad, l.properties.offset, l.properties.size, |p| {
                p[value_at] = v
            });
            std::fs::write(&path, &bad).unwrap();
            for on_demand in [false, true] {
                let what = format!("{policy:?}: filter.partitions {v} on demand {on_demand}");
                expect_corruption(Table::open(&path, open_opts(on_demand)).unwrap_err(), &what);
            }
        }

        let name = policy.name().as_bytes();
        let meta = payload(&l.good, l.metaindex);
        let entry = find(meta, b"filter_partitions.");
        // `filter_partitions.<kind>` → `filter.partitions.<kind>`: a whole
        // filter of an unknown policy, where the properties say partitioned.
        let mut bad = l.good.clone();
        reseal(&mut bad, l.metaindex.offset, l.metaindex.size, |p| {
            p[entry + "filter".len()] = b'.'
        });
        std::fs::write(&path, &bad).unwrap();
        for on_demand in [false, true] {
            let what = format!("{policy:?}: renamed whole, on demand {on_demand}");
            expect_corruption(Table::open(&path, open_opts(on_demand)).unwrap_err(), &what);
        }

        // An unknown family, named alike in the metaindex and `filter.policy`.
        let at_meta = entry + b"filter_partitions.".len() + name.len() - 1;
        let at_props = find(props, name) + name.len() - 1;
        let mut unknown = l.good.clone();
        reseal(&mut unknown, l.metaindex.offset, l.metaindex.size, |p| {
            p[at_meta] = b'~'
        });
        reseal(&mut unknown, l.properties.offset, l.properties.size, |p| {
            p[at_props] = b'~'
        });
        std::fs::write(&path, &unknown).unwrap();
        for on_demand in [false, true] {
            let what = format!("{policy:?}: unknown family, on demand {on_demand}");
            let t = Table::open(&path, open_opts(on_demand)).unwrap();
            assert!(
                matches!(t.filter(), Some(Filter::Unusable { .. })),
                "{what}"
            );
            assert!(!t.filter_info().unwrap().is_usable(), "{what}");
            for (k, _) in &es {
                let r = t.get(k, key_hash(k)).unwrap();
                assert!(r.filter_unusable && !r.filter_checked, "{what}");
                assert_eq!(r.filter_blocks_read, 0, "{what}: no filter read");
            }
            assert!(
                !check_opened(&path, &es, &what, open_opts(on_demand)),
                "{what}"
            );
        }
    }
}

/// The filter inside a partition facing damage behind a re-sealed checksum:
/// one bit of every payload byte of every partition flipped. The open
/// rejects what it can check (`Corruption`); bits of the filter proper leave
/// a well-formed filter that may now say "absent" for a stored key, which
/// no decoder can see: then `verify_all`, which probes the filter for every
/// stored key, must report it — whether the table holds the filter in
/// memory or reads it on demand.
#[test]
fn damaged_partitions_behind_valid_checksums_are_caught_by_verify_all() {
    let dir = common::scratch_dir();
    let path = dir.path().join("p.sst");
    let es = partitioned_entries();
    for policy in partition_policies() {
        let l = build_partitioned(&path, &es, policy);
        let mut lost_and_reported = [0usize; 2];
        for (pi, h) in l.parts.iter().enumerate() {
            for j in 0..h.size as usize {
                let mut bad = l.good.clone();
                reseal(&mut bad, h.offset, h.size, |p| p[j] ^= 1 << (j % 8));
                std::fs::write(&path, &bad).unwrap();
                for on_demand in [false, true] {
                    let what = format!(
                        "{policy:?} partition {pi} byte {j} bit {} on demand {on_demand}",
                        j % 8
                    );
                    let t = match Table::open(&path, open_opts(on_demand)) {
                        Ok(t) => t,
                        Err(e) => {
                            expect_corruption(e, &what);
                            continue;
                        }
                    };
                    let mut lost = false;
                    for (k, v) in &es {
                        match t.get(k, key_hash(k)) {
                            Ok(r) => match r.entry {
                                Some((gk, gv)) => {
                                    assert_eq!((&gk[..], &gv[..]), (&k[..], &v[..]), "{what}")
                                }
                                None => lost = true,
                            },
                            Err(e) => expect_corruption(e, &what),
                        }
                        let mut absent = k.clone();
                        absent.push(b'!');
                        if let Ok(r) = t.get(&absent, key_hash(&absent)) {
                            assert!(r.entry.is_none(), "{what}: phantom key");
                        }
                    }
                    match t.verify_all() {
                        Ok(()) => assert!(!lost, "{what}: a key lost and verify_all passed"),
                        Err(Error::Corruption {
                            offset, what: w, ..
                        }) => {
                            // Naming the damaged partition.
                            assert_eq!(offset, h.offset, "{what}: {w}");
                            lost_and_reported[usize::from(on_demand)] += usize::from(lost);
                        }
                        Err(e) => panic!("{what}: {e}"),
                    }
                }
            }
        }
        // The sweep reached lost keys, both ways.
        assert!(
            lost_and_reported.iter().all(|&x| x > 0),
            "{policy:?}: {lost_and_reported:?}"
        );
    }
}

/// `verify_all` reads every block from disk, partitions included: a
/// partition damaged after the table was opened (its filter already in
/// memory, or read on demand from a cache that holds it) is reported.
#[test]
fn verify_all_rereads_every_partition() {
    let dir = common::scratch_dir();
    let path = dir.path().join("p.sst");
    let es = partitioned_entries();
    for policy in partition_policies() {
        let l = build_partitioned(&path, &es, policy);
        for (i, h) in l.parts.iter().enumerate() {
            for on_demand in [false, true] {
                std::fs::write(&path, &l.good).unwrap();
                let t = Table::open(&path, open_opts(on_demand)).unwrap();
                let mut bad = l.good.clone();
                bad[h.offset as usize + 1] ^= 0x10;
                std::fs::write(&path, &bad).unwrap();
                let what = format!("{policy:?} partition {i} on demand {on_demand}");
                match t.verify_all() {
                    Err(Error::Corruption { offset, .. }) => assert_eq!(offset, h.offset, "{what}"),
                    Err(e) => panic!("{what}: {e}"),
                    Ok(()) => panic!("{what}: verify_all passed"),
                }
            }
        }
    }
}
