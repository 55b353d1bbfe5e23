//! `docs/format.md` contains a hexdump of a tiny table, and one of an
//! LZ4-compressed data block. This rebuilds both and checks the document's
//! bytes are exactly the bytes we write.
//! To regenerate the dump: `BLOOMLSM_PRINT_EXAMPLE=1 cargo test --test
//! format_example -- --nocapture`.

use std::fs::File;

use bloomlsm::filter::FilterPolicy;
use bloomlsm::sst::{
    ChecksumType, Compression, KeyFormat, Table, TableBuilder, TableBuilderOptions,
    TableOpenOptions,
};

const ENTRIES: [(&str, &str); 3] = [("apple", "red"), ("banana", "yellow"), ("cherry", "")];

fn example_bytes() -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("example.sst");
    let opts = TableBuilderOptions::default()
        .block_size(4096)
        .restart_interval(16)
        .checksum(ChecksumType::Crc32)
        .filter(Some(FilterPolicy::blocked512(10.0)))
        .key_format(KeyFormat::Plain)
        .creation_time(Some(1_700_000_000))
        .compression(Compression::None)
        .filter_partition_bytes(0)
        .prefix_extractor(None);
    let mut b = TableBuilder::new(File::create(&path).unwrap(), &path, opts);
    for (k, v) in ENTRIES {
        b.add(k.as_bytes(), v.as_bytes()).unwrap();
    }
    b.finish().unwrap();
    // The example must also be a valid table.
    let t = Table::open(&path, TableOpenOptions::default()).unwrap();
    t.verify_all().unwrap();
    assert_eq!(
        t.get_unhashed(b"banana").unwrap().entry.unwrap().1,
        &b"yellow"[..]
    );
    std::fs::read(&path).unwrap()
}

fn hexdump(bytes: &[u8]) -> String {
    let mut out = String::new();
    for (i, chunk) in bytes.chunks(16).enumerate() {
        out.push_str(&format!("{:08x} ", i * 16));
        for j in 0..16 {
            if j == 8 {
                out.push(' ');
            }
            match chunk.get(j) {
                Some(b) => out.push_str(&format!(" {b:02x}")),
                None => out.push_str("   "),
            }
        }
        out.push_str("  |");
        for &b in chunk {
            out.push(if b.is_ascii_graphic() || b == b' ' {
                b as char
            } else {
                '.'
            });
        }
        out.push_str("|\n");
    }
    out
}

/// The bytes of the hexdump between the `<!-- NAME-begin -->` and
/// `<!-- NAME-end -->` markers in `docs/format.md`.
fn documented_bytes(name: &str) -> Vec<u8> {
    let doc =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/format.md")).unwrap();
    let start = doc
        .find(&format!("<!-- {name}-begin -->"))
        .expect("begin marker");
    let end = doc
        .find(&format!("<!-- {name}-end -->"))
        .expect("end marker");
    let mut bytes = Vec::new();
    for line in doc[start..end].lines() {
        let Some((offset, rest)) = line.split_once(' ') else {
            continue;
        };
        let Ok(offset) = usize::from_str_radix(offset, 16) else {
            continue;
        };
        assert_eq!(offset, bytes.len(), "hexdump offsets are contiguous");
        let hex = rest.split("  |").next().unwrap();
        for tok in hex.split_whitespace() {
            bytes.push(u8::from_str_radix(tok, 16).expect("hex byte"));
        }
    }
    bytes
}

#[test]
fn documented_example_matches_the_bytes_we_write() {
    let bytes = example_bytes();
    if std::env::var_os("BLOOMLSM_PRINT_EXAMPLE").is_some() {
        println!("{} bytes\n{}", bytes.len(), hexdump(&bytes));
    }
    let doc = documented_bytes("example-hexdump");
    assert_eq!(doc.len(), bytes.len(), "documented example length");
    assert_eq!(
        &doc[doc.len() - 52..],
        &bytes[bytes.len() - 52..],
        "footer bytes"
    );
    assert!(
        doc == bytes,
        "docs/format.md hexdump differs from the bytes written"
    );
}

/// The first data block (payload and trailer) of a table of three entries
/// whose values repeat, written with LZ4.
fn compressed_block_bytes() -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("lz4.sst");
    let opts = TableBuilderOptions::default()
        .checksum(ChecksumType::Crc32)
        .filter(None)
        .key_format(KeyFormat::Plain)
        .creation_time(Some(1_700_000_000))
        .compression(Compression::Lz4);
    let mut b = TableBuilder::new(File::create(&path).unwrap(), &path, opts);
    for k in ["k1", "k2", "k3"] {
        b.add(k.as_bytes(), "abcd".repeat(5).as_bytes()).unwrap();
    }
    b.finish().unwrap();
    let t = Table::open(&path, TableOpenOptions::default()).unwrap();
    t.verify_all().unwrap();
    assert_eq!(t.data_block_codec(0).unwrap().0, 1);
    let h = t.index_entries().unwrap().into_iter().next().unwrap().1;
    let bytes = std::fs::read(&path).unwrap();
    bytes[h.offset as usize..(h.offset + h.size + 5) as usize].to_vec()
}

#[test]
fn documented_compressed_block_matches_the_bytes_we_write() {
    let bytes = compressed_block_bytes();
    if std::env::var_os("BLOOMLSM_PRINT_EXAMPLE").is_some() {
        println!("{} bytes\n{}", bytes.len(), hexdump(&bytes));
    }
    assert!(
        documented_bytes("compressed-block-hexdump") == bytes,
        "docs/format.md compressed block differs from the bytes written"
    );
}
