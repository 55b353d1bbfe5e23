use super::*;
use crate::filter::{FilterKind, FilterPolicy};

fn sample() -> OptionsFile {
    let mut opts = Options {
        filters: FilterOptions::monkey(FilterKind::Bloom, 9.5),
        block_size: 8192,
        checksum: ChecksumType::Xxh3,
        dynamic_level_bytes: true,
        prefix_extractor: Some(PrefixExtractor::UpToDelimiter(b':')),
        range_filter_bits_per_key: Some(14.5),
        ..Options::default()
    };
    opts.filters.per_level.push((3, None));
    opts.filters
        .per_level
        .push((1, Some(FilterPolicy::blocked512(12.25))));
    opts.compression = CompressionOptions {
        default: Compression::Lz4,
        per_level: vec![(0, Compression::None), (4, Compression::Zstd(9))],
    };
    if !cfg!(feature = "zstd") {
        opts.compression.per_level.pop();
    }
    OptionsFile {
        unknown_families: Vec::new(),
        design: Design::of(&opts),
        tuning: Tuning {
            write_buffer_size: Some(1 << 20),
            l0_compaction_trigger: Some(3),
            ..Tuning::default()
        },
        tables: None,
        history: vec!["1 created".into(), "2 changed: x".into()],
    }
}

fn location() -> TableLocation {
    TableLocation {
        bucket: "b".into(),
        prefix: "stores/a/".into(),
        endpoint: Some("http://127.0.0.1:9000".into()),
        region: None,
        cache_dir: "/var/cache/a".into(),
        cache_bytes: 1 << 30,
        chunk_bytes: 1 << 20,
    }
}

#[test]
fn a_table_location_round_trips_and_a_partial_one_is_corruption() {
    let mut f = sample();
    for prefix in ["stores/a/", ""] {
        f.tables = Some(TableLocation {
            prefix: prefix.into(),
            ..location()
        });
        let bytes = f.encode();
        let back = OptionsFile::decode(&bytes, Path::new("OPTIONS")).unwrap();
        assert_eq!(back, f, "{}", String::from_utf8_lossy(&bytes));
    }
    let text = String::from_utf8(f.encode()).unwrap();
    for (drop, why) in [
        ("tables.bucket", "without tables.bucket"),
        ("tables.cache_dir", "without tables.cache_dir"),
    ] {
        let body: String = text
            .lines()
            .filter(|l| !l.starts_with(drop) && !l.starts_with("crc32"))
            .map(|l| format!("{l}\n"))
            .collect();
        let bytes = format!("{body}crc32 = {:08x}\n", crc32fast::hash(body.as_bytes()));
        let e = OptionsFile::decode(bytes.as_bytes(), Path::new("OPTIONS")).unwrap_err();
        assert!(
            matches!(e, Error::Corruption { .. }) && e.to_string().contains(why),
            "{e}"
        );
    }
}

/// A file system that says its tables are at `location()`.
#[derive(Debug)]
struct Elsewhere(Option<TableLocation>);

impl FileSystem for Elsewhere {
    fn create_new(&self, p: &Path) -> std::io::Result<Box<dyn crate::fs::WritableFile>> {
        crate::fs::RealFs.create_new(p)
    }
    fn create_truncate(&self, p: &Path) -> std::io::Result<Box<dyn crate::fs::WritableFile>> {
        crate::fs::RealFs.create_truncate(p)
    }
    fn open_read(&self, p: &Path) -> std::io::Result<std::sync::Arc<dyn crate::fs::ReadableFile>> {
        crate::fs::RealFs.open_read(p)
    }
    fn rename(&self, a: &Path, b: &Path) -> std::io::Result<()> {
        crate::fs::RealFs.rename(a, b)
    }
    fn remove_file(&self, p: &Path) -> std::io::Result<()> {
        crate::fs::RealFs.remove_file(p)
    }
    fn sync_dir(&self, p: &Path) -> std::io::Result<()> {
        crate::fs::RealFs.sync_dir(p)
    }
    fn list_dir(&self, p: &Path) -> std::io::Result<Vec<std::ffi::OsString>> {
        crate::fs::RealFs.list_dir(p)
    }
    fn file_len(&self, p: &Path) -> std::io::Result<u64> {
        crate::fs::RealFs.file_len(p)
    }
    fn create_dir_all(&self, p: &Path) -> std::io::Result<()> {
        crate::fs::RealFs.create_dir_all(p)
    }
    fn lock(&self, p: &Path) -> std::io::Result<Option<Box<dyn crate::fs::FileLock>>> {
        crate::fs::RealFs.lock(p)
    }
    fn table_location(&self, _: &Path) -> Option<TableLocation> {
        self.0.clone()
    }
}

#[test]
fn the_location_recorded_is_the_file_systems_and_another_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let there = Elsewhere(Some(location()));
    let mut opts = Options::default();
    settle(&there, dir.path(), &mut opts)
        .unwrap()
        .record(&there, dir.path(), &opts, true)
        .unwrap();
    let read_back = read(&crate::fs::RealFs, dir.path()).unwrap().unwrap();
    assert_eq!(read_back.tables, Some(location()));

    // The same objects through another endpoint and cache: accepted.
    let moved = Elsewhere(Some(TableLocation {
        endpoint: None,
        cache_dir: "/elsewhere".into(),
        ..location()
    }));
    let mut opts = Options::default();
    settle(&moved, dir.path(), &mut opts).unwrap();

    // Another prefix, or a file system that keeps tables locally: refused,
    // naming where the tables are.
    let other = Elsewhere(Some(TableLocation {
        prefix: "stores/b/".into(),
        ..location()
    }));
    for (fs, says) in [
        (&other as &dyn FileSystem, "keeps them in s3://b/stores/b/"),
        (&Elsewhere(None), "beside the store's other files"),
        (
            &crate::fs::RealFs,
            if cfg!(feature = "object-store") {
                "reaches them through this record"
            } else {
                "no object-store feature"
            },
        ),
    ] {
        let mut opts = Options::default();
        let e = settle(fs, dir.path(), &mut opts).err().unwrap();
        let s = e.to_string();
        assert!(
            s.contains("are in s3://b/stores/a/ at http://127.0.0.1:9000") && s.contains(says),
            "{s}"
        );
        // A design of the caller's own takes the file system given.
        let mut opts = Options::default().use_stored_design(false);
        settle(fs, dir.path(), &mut opts).unwrap();
    }
}

#[test]
fn round_trip_and_changes() {
    let f = sample();
    let bytes = f.encode();
    let back = OptionsFile::decode(&bytes, Path::new("OPTIONS")).unwrap();
    assert_eq!(back, f);
    let d = Design::of(&Options::default());
    let ch = d.changes(&f.design);
    assert!(ch.iter().any(|c| c == "block_size: 4096 -> 8192"), "{ch:?}");
    assert!(
        ch.iter()
            .any(|c| c.starts_with("filter.level.3: (unset) -> none")),
        "{ch:?}"
    );
    assert!(d.changes(&d).is_empty());
    let none = Design {
        compression: CompressionOptions::none(),
        ..d.clone()
    };
    let ch = none.changes(&d);
    assert!(ch.iter().any(|c| c == "compression: none -> lz4"), "{ch:?}");
    assert!(
        ch.iter()
            .any(|c| c == "compression.level.0: (unset) -> none"),
        "{ch:?}"
    );
}

/// The workload-aware allocation is recorded, only when set, and read
/// back; a value that is not bits per key is damage.
#[test]
fn the_workload_aware_average_round_trips() {
    let mut f = sample();
    f.design.filters = FilterOptions::workload_aware(FilterKind::Blocked512, 9.25);
    let bytes = f.encode();
    let text = String::from_utf8(bytes.clone()).unwrap();
    assert!(
        text.contains("\nfilter.workload_avg_bits_per_key = 9.25\n"),
        "{text}"
    );
    assert_eq!(
        OptionsFile::decode(&bytes, Path::new("OPTIONS")).unwrap(),
        f
    );
    let plain = String::from_utf8(sample().encode()).unwrap();
    assert!(!plain.contains("workload"), "{plain}");
    let body = text
        .replace("= 9.25", "= nan")
        .lines()
        .filter(|l| !l.starts_with("crc32"))
        .map(|l| format!("{l}\n"))
        .collect::<String>();
    let crc = crc32fast::hash(body.as_bytes());
    let bad = format!("{body}crc32 = {crc:08x}\n").into_bytes();
    let e = OptionsFile::decode(&bad, Path::new("OPTIONS")).unwrap_err();
    assert!(e.is_corruption(), "{e}");
}

#[test]
fn a_file_from_before_compression_reads_as_none() {
    let text = String::from_utf8(sample().encode()).unwrap();
    let body: String = text
        .lines()
        .filter(|l| !l.starts_with("compression") && !l.starts_with("crc32"))
        .map(|l| format!("{l}\n"))
        .collect();
    let crc = crc32fast::hash(body.as_bytes());
    let bytes = format!("{body}crc32 = {crc:08x}\n").into_bytes();
    let f = OptionsFile::decode(&bytes, Path::new("OPTIONS")).unwrap();
    assert_eq!(f.design.compression, CompressionOptions::none());
}

/// A store recorded without the key keeps its levels sized from L1
/// down, whatever `Options::default()` says.
#[test]
fn a_file_without_dynamic_level_bytes_reads_as_fixed() {
    let text = String::from_utf8(sample().encode()).unwrap();
    assert!(text.contains("\ndynamic_level_bytes = true\n"), "{text}");
    let body: String = text
        .lines()
        .filter(|l| !l.starts_with("dynamic_level_bytes") && !l.starts_with("crc32"))
        .map(|l| format!("{l}\n"))
        .collect();
    let crc = crc32fast::hash(body.as_bytes());
    let bytes = format!("{body}crc32 = {crc:08x}\n").into_bytes();
    let f = OptionsFile::decode(&bytes, Path::new("OPTIONS")).unwrap();
    assert!(!f.design.dynamic_level_bytes);
}

#[test]
fn every_damage_is_corruption() {
    let bytes = sample().encode();
    for i in 0..bytes.len() {
        for bit in [0x01u8, 0x20, 0x80] {
            let mut b = bytes.clone();
            b[i] ^= bit;
            let e = OptionsFile::decode(&b, Path::new("OPTIONS")).unwrap_err();
            assert!(e.is_corruption(), "flip at {i}: {e}");
        }
    }
    for cut in 0..bytes.len() {
        let e = OptionsFile::decode(&bytes[..cut], Path::new("OPTIONS")).unwrap_err();
        assert!(e.is_corruption(), "cut at {cut}: {e}");
    }
}

#[test]
fn well_checksummed_nonsense_is_corruption() {
    let body = |text: &str| {
        let mut s = text.to_string();
        let crc = crc32fast::hash(s.as_bytes());
        s.push_str(&format!("crc32 = {crc:08x}\n"));
        s.into_bytes()
    };
    let good = String::from_utf8(sample().encode()).unwrap();
    let good_body = &good[..good.rfind("crc32 = ").unwrap()];
    for bad in [
        good_body.replace("block_size = 8192", "block_size = 10"),
        good_body.replace("version = 1", "version = 2"),
        good_body.replace("version = 1\n", ""),
        good_body.replace("checksum = xxh3", "checksum = md5"),
        good_body.replace("max_levels = 7", "max_levels = 7\nmax_levels = 7"),
        good_body.replace("filter = bloom", "filter = Bogus"),
        good_body.replace("compression = lz4", "compression = lz5"),
        good_body.replace("compression = lz4", "compression = zstd:99"),
        good_body.replace("compression.level.0 = none", "compression.level.x = none"),
        good_body.replace("compression.level.0 = none", "compression.level.64 = none"),
        good_body.replace("compression = lz4", "compression = lz4\ncompression = lz4"),
        format!("{good_body}colour = blue\n"),
        format!("{good_body}no equals sign\n"),
        good_body.replace("block_size = 8192\n", ""),
    ] {
        let e = OptionsFile::decode(&body(&bad), Path::new("OPTIONS")).unwrap_err();
        assert!(e.is_corruption(), "{e}");
    }
    OptionsFile::decode(&body(good_body), Path::new("OPTIONS")).unwrap();
    // A family this process has not registered is not damage.
    let other = good_body.replace("filter = bloom:9.5:7", "filter = not_here:9.5:1");
    assert_ne!(other, good_body);
    let f = OptionsFile::decode(&body(&other), Path::new("OPTIONS")).unwrap();
    assert_eq!(f.unknown_families, ["not_here"]);
    assert_eq!(f.design.filters.policy, None);
}
