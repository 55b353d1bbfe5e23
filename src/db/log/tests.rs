//! The log format's writer and reader against each other: round trips,
//! the documented bytes, torn tails and corruption at every offset.

use std::fs::OpenOptions;
use std::path::Path;

use super::*;
use crate::error::{Error, Result};

/// Deterministic pseudo-random bytes (xorshift64*), fixed seed per call.
fn payload(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..len)
        .map(|_| {
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            (x.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 56) as u8
        })
        .collect()
}

fn write_log(path: &Path, records: &[Vec<u8>]) -> Vec<u64> {
    let mut w = LogWriter::create(path).unwrap();
    let mut ends = Vec::new();
    for r in records {
        w.add_record(r).unwrap();
        ends.push(w.len());
    }
    w.sync().unwrap();
    ends
}

fn read_all(r: &mut LogReader) -> Result<Vec<Vec<u8>>> {
    let mut out = Vec::new();
    while let Some(rec) = r.next_record()? {
        out.push(rec);
    }
    Ok(out)
}

/// The worked example of `docs/format.md (§11–14)`, byte for byte (CRC computed
/// independently with Python's zlib).
#[test]
fn documented_example_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("000001.log");
    let mut b = crate::db::WriteBatch::new();
    b.put(b"k", b"v");
    b.set_sequence(7);
    write_log(&path, &[b.encoded().to_vec()]);
    let hex: Vec<String> = std::fs::read(&path)
        .unwrap()
        .iter()
        .map(|x| format!("{x:02x}"))
        .collect();
    assert_eq!(
        hex.join(" "),
        "df a7 74 e0 11 00 01 07 00 00 00 00 00 00 00 01 00 00 00 01 01 6b 01 76"
    );
}

#[test]
fn crc_mask_roundtrip() {
    for c in [0u32, 1, 0xdead_beef, u32::MAX] {
        assert_eq!(unmask_crc(mask_crc(c)), c);
        assert_ne!(mask_crc(c), c);
    }
}

#[test]
fn roundtrip_sizes_across_blocks() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("000001.log");
    let b = BLOCK_SIZE;
    let h = HEADER_SIZE;
    let sizes = [
        0,
        1,
        b - h,     // exactly fills a block
        b - h - 1, // leaves 1 byte: trailer padding
        b - 2 * h, // leaves exactly one header's room
        b - 2 * h + 1,
        b,
        b + 1,
        2 * (b - h),
        100 * 1024,
        0,
        3,
    ];
    let recs: Vec<Vec<u8>> = sizes
        .iter()
        .enumerate()
        .map(|(i, &n)| payload(n, i as u64))
        .collect();
    write_log(&path, &recs);
    let mut r = LogReader::open(&path, false).unwrap();
    let got = read_all(&mut r).unwrap();
    assert_eq!(got.len(), recs.len());
    for (g, w) in got.iter().zip(&recs) {
        assert_eq!(g, w);
    }
    assert_eq!(r.tail_dropped(), None);
    assert_eq!(r.valid_end(), r.file_len());
    assert!(r.next_record().unwrap().is_none());
}

#[test]
fn reopen_appends_after_torn_tail() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("000001.log");
    let recs: Vec<Vec<u8>> = (0..5).map(|i| payload(9000, i)).collect();
    write_log(&path, &recs);
    // Tear the last record.
    let len = std::fs::metadata(&path).unwrap().len();
    OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(len - 100)
        .unwrap();
    let mut r = LogReader::open(&path, false).unwrap();
    assert_eq!(read_all(&mut r).unwrap().len(), 4);
    assert!(r.tail_dropped().is_some());
    let mut w = LogWriter::reopen(&path, r.valid_end()).unwrap();
    let extra = payload(40_000, 99);
    w.add_record(&extra).unwrap();
    w.add_record(b"tail").unwrap();
    w.sync().unwrap();
    let mut r = LogReader::open(&path, false).unwrap();
    let got = read_all(&mut r).unwrap();
    assert_eq!(got.len(), 6);
    assert_eq!(got[4], extra);
    assert_eq!(got[5], b"tail");
    assert_eq!(r.tail_dropped(), None);
    assert!(LogWriter::reopen(&path, u64::MAX).is_err());
}

/// A multi-record log crossing a block boundary, cut at every length:
/// the records wholly before the cut come back, the rest is a torn tail.
#[test]
fn torn_tail_at_every_truncation_length() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("000001.log");
    let sizes = [0usize, 1, 100, 3000, 24_000, 9000, 5, 300];
    let recs: Vec<Vec<u8>> = sizes
        .iter()
        .enumerate()
        .map(|(i, &n)| payload(n, 7 + i as u64))
        .collect();
    let ends = write_log(&path, &recs);
    let full = std::fs::read(&path).unwrap();
    assert!(full.len() > BLOCK_SIZE);
    for cut in 0..=full.len() {
        let mut r = LogReader::from_bytes(&path, full[..cut].to_vec(), false);
        let got = read_all(&mut r).unwrap_or_else(|e| panic!("cut {cut}: {e}"));
        let whole = ends.iter().filter(|&&e| e as usize <= cut).count();
        assert_eq!(got.len(), whole, "cut {cut}");
        assert_eq!(&got[..], &recs[..whole], "cut {cut}");
        let valid = if whole == 0 { 0 } else { ends[whole - 1] };
        assert_eq!(r.valid_end(), valid);
        match r.tail_dropped() {
            None => assert_eq!(cut as u64, valid, "cut {cut}: tail not reported"),
            Some(t) => {
                assert_eq!(t.offset, valid, "cut {cut}");
                assert_eq!(t.offset + t.bytes, cut as u64);
                assert!(t.bytes > 0);
            }
        }
    }
}

/// Flipping any byte of a middle record, with valid records after it, is
/// corruption; salvage skips exactly that record and keeps the others.
#[test]
fn flip_in_middle_is_corruption_or_salvaged() {
    let sizes = [50usize, 700, 40_000, 120, 33, 2000];
    let recs: Vec<Vec<u8>> = sizes
        .iter()
        .enumerate()
        .map(|(i, &n)| payload(n, 100 + i as u64))
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("000001.log");
    let ends = write_log(&path, &recs);
    let full = std::fs::read(&path).unwrap();
    // Every byte of record 1 (small, in block 0) and a sample of the
    // multi-block record 2, including its fragment headers.
    let r1 = ends[0] as usize..ends[1] as usize;
    let r2 = (ends[1] as usize..ends[2] as usize).step_by(97);
    let hdr2 = [BLOCK_SIZE, BLOCK_SIZE + 3, BLOCK_SIZE + 6];
    for (victim, at) in r1
        .map(|a| (1, a))
        .chain(r2.map(|a| (2, a)))
        .chain(hdr2.iter().map(|&a| (2, a)))
    {
        for mask in [0x01u8, 0x80, 0xff] {
            let mut bad = full.clone();
            bad[at] ^= mask;
            let mut r = LogReader::from_bytes(&path, bad.clone(), false);
            let err = read_all(&mut r).expect_err(&format!("flip at {at}"));
            match err {
                Error::Corruption { offset, .. } => {
                    assert_eq!(offset, ends[victim - 1], "flip at {at}")
                }
                e => panic!("{e}"),
            }
            let mut s = LogReader::from_bytes(&path, bad, true);
            let got = read_all(&mut s).unwrap();
            let mut want = recs.clone();
            want.remove(victim);
            assert_eq!(got, want, "salvage, flip at {at} mask {mask:#x}");
            assert_eq!(s.skipped().len(), 1);
            assert_eq!(s.skipped()[0].offset, ends[victim - 1]);
            assert_eq!(s.tail_dropped(), None);
        }
    }
}

#[test]
fn flip_in_last_record_is_torn_tail() {
    let recs: Vec<Vec<u8>> = (0..4).map(|i| payload(500, i)).collect();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("000001.log");
    let ends = write_log(&path, &recs);
    let full = std::fs::read(&path).unwrap();
    for at in ends[2] as usize..full.len() {
        let mut bad = full.clone();
        bad[at] ^= 0x10;
        let mut r = LogReader::from_bytes(&path, bad, false);
        assert_eq!(read_all(&mut r).unwrap(), &recs[..3]);
        let t = r.tail_dropped().unwrap();
        assert_eq!((t.offset, t.offset + t.bytes), (ends[2], ends[3]));
    }
}

/// Zeros after the last record, as a log allocated ahead leaves them, are
/// its end: no tail is dropped. Zeros after part of a record are not: the
/// record is a torn tail.
#[test]
fn a_zero_tail_is_the_end_and_a_record_cut_into_zeros_is_torn() {
    let recs: Vec<Vec<u8>> = (0..3).map(|i| payload(100, i)).collect();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("000001.log");
    let ends = write_log(&path, &recs);
    let clean = std::fs::read(&path).unwrap();
    for zeros in [1, 6, 7, 500, 40_000] {
        let mut img = clean.clone();
        img.resize(img.len() + zeros, 0);
        let mut r = LogReader::from_bytes(&path, img, false);
        assert_eq!(read_all(&mut r).unwrap(), recs, "{zeros} zeros");
        assert_eq!(r.tail_dropped(), None, "{zeros} zeros");
        assert_eq!(r.valid_end(), ends[2]);
    }
    // The last record cut short, the rest of its bytes zeros.
    let mut img = clean.clone();
    for b in &mut img[ends[1] as usize + 20..] {
        *b = 0;
    }
    img.resize(img.len() + 40_000, 0);
    let mut r = LogReader::from_bytes(&path, img.clone(), false);
    assert_eq!(read_all(&mut r).unwrap(), &recs[..2]);
    let t = r.tail_dropped().unwrap();
    assert_eq!((t.offset, t.bytes), (ends[1], img.len() as u64 - ends[1]));
}

/// A log cut back to its records while a reader reads it (its writer
/// closed it, dropping the zeros allocated ahead) reads as if opened after
/// the cut: every record, no tail dropped, no error.
#[test]
fn a_log_cut_back_under_a_reader_reads_whole() {
    // Records spanning several blocks, then a zero tail of two more.
    let recs: Vec<Vec<u8>> = (0..40).map(|i| payload(2000 + i * 37, i as u64)).collect();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("000001.log");
    let ends = write_log(&path, &recs);
    let records = *ends.last().unwrap();
    for cut_after in [0, 1, 20] {
        let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        f.set_len(records + 2 * BLOCK_SIZE as u64).unwrap();
        let mut r = LogReader::open(&path, false).unwrap();
        let mut got = Vec::new();
        for _ in 0..cut_after {
            got.push(r.next_record().unwrap().unwrap());
        }
        f.set_len(records).unwrap();
        got.extend(read_all(&mut r).unwrap());
        assert_eq!(got, recs, "cut after {cut_after} records");
        assert_eq!(r.tail_dropped(), None);
        assert_eq!(r.valid_end(), records);
    }
}

/// Arbitrary bytes never panic, in either mode.
#[test]
fn garbage_never_panics() {
    for seed in 0..200u64 {
        let len = (seed as usize * 977) % (2 * BLOCK_SIZE + 50);
        let mut img = payload(len, seed);
        // Sprinkle plausible headers so deeper paths are exercised.
        let mut i = 0;
        while i + HEADER_SIZE < img.len() {
            img[i + 6] = (seed % 5) as u8;
            img[i + 5] = 0;
            i += 331;
        }
        for salvage in [false, true] {
            let mut r = LogReader::from_bytes("garbage", img.clone(), salvage);
            for _ in 0..10_000 {
                match r.next_record() {
                    Ok(Some(_)) => {}
                    Ok(None) | Err(_) => break,
                }
            }
        }
    }
}

#[test]
fn poisoned_writer_refuses() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("000001.log");
    let mut w = LogWriter::create(&path).unwrap();
    assert!(LogWriter::create(&path).is_err(), "create must not clobber");
    w.poisoned = Some(Error::io("test", std::io::ErrorKind::StorageFull.into()));
    assert!(matches!(w.add_record(b"x"), Err(Error::Poisoned { .. })));
    let e = w.sync().unwrap_err();
    assert_eq!(e.io_kind(), Some(std::io::ErrorKind::StorageFull), "{e}");
}
