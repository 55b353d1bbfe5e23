//! The store remembers its design: the options that shape files
//! are recorded in `OPTIONS` and used on reopen unless the caller replaces
//! them, and each replacement is logged there.

use bloomlsm::{Compression, CompressionOptions, Db, FilterOptions, FilterPolicy, Options};

mod common;
use common::scratch_dir;

fn options(filters: FilterOptions) -> Options {
    common::options::small().filters(filters)
}

fn fill(db: &Db, from: u32, n: u32) {
    for i in from..from + n {
        db.put(format!("key{i:06}"), format!("value{i:040}"))
            .unwrap();
    }
}

/// `(filter name, bits per key)` of every live file.
fn filters(db: &Db) -> Vec<(String, f64)> {
    db.file_stats()
        .iter()
        .map(|f| (f.filter.clone(), f.bits_per_key))
        .collect()
}

fn options_text(dir: &std::path::Path) -> String {
    std::fs::read_to_string(dir.join("OPTIONS")).unwrap()
}

#[test]
fn a_reopened_store_keeps_its_filters() {
    let dir = scratch_dir();
    let bloom12 = FilterOptions::uniform(Some(FilterPolicy::bloom(12.0)));
    let db = Db::open(dir.path(), options(bloom12)).unwrap();
    fill(&db, 0, 2000);
    db.close().unwrap();
    // Reopened with the default design (blocked512 at 10 bits/key): the
    // store's own design wins, for every file written from now on.
    let db = Db::open(dir.path(), options(FilterOptions::default())).unwrap();
    assert_eq!(db.options().filters.policy, Some(FilterPolicy::bloom(12.0)));
    fill(&db, 2000, 500);
    db.compact().unwrap();
    let fs = filters(&db);
    assert!(fs.len() >= 3, "{fs:?}");
    for (name, bits) in &fs {
        // Built at 12 bits/key (a small filter rounds up to whole words).
        assert!(name == "bloom" && (12.0..13.5).contains(bits), "{fs:?}");
    }
    db.close().unwrap();
    assert_eq!(options_text(dir.path()).matches("history = ").count(), 1);
}

#[test]
fn a_store_without_filters_stays_without() {
    let dir = scratch_dir();
    let db = Db::open(dir.path(), options(FilterOptions::none())).unwrap();
    fill(&db, 0, 1500);
    db.close().unwrap();
    let db = Db::open(dir.path(), options(FilterOptions::default())).unwrap();
    db.put("one more", "put").unwrap();
    db.compact().unwrap();
    let fs = filters(&db);
    assert!(
        !fs.is_empty() && fs.iter().all(|(n, _)| n == "none"),
        "{fs:?}"
    );
}

#[test]
fn a_replaced_design_is_used_and_logged() {
    let dir = scratch_dir();
    let db = Db::open(dir.path(), options(FilterOptions::none())).unwrap();
    fill(&db, 0, 1000);
    db.close().unwrap();
    let blocked = options(FilterOptions::uniform(Some(FilterPolicy::blocked512(9.5))))
        .use_stored_design(false)
        .block_size(2048);
    let db = Db::open(dir.path(), blocked).unwrap();
    db.compact().unwrap();
    let fs = filters(&db);
    assert!(
        fs.iter().all(|(n, b)| n == "blocked512" && *b > 9.0),
        "{fs:?}"
    );
    db.close().unwrap();
    let text = options_text(dir.path());
    let history: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("history = "))
        .collect();
    assert_eq!(history.len(), 2, "{text}");
    assert!(history[0].ends_with(" created"), "{text}");
    assert!(
        history[1].contains("filter: none -> blocked512:9.5:"),
        "{text}"
    );
    assert!(history[1].contains("block_size: 1024 -> 2048"), "{text}");
    // The new design is the stored one now.
    let db = Db::open_read_only(dir.path(), Options::default()).unwrap();
    assert_eq!(db.options().block_size, 2048);
    assert_eq!(
        db.options().filters.policy,
        Some(FilterPolicy::blocked512(9.5))
    );
}

#[test]
fn a_damaged_options_file_is_refused() {
    let dir = scratch_dir();
    Db::open(dir.path(), options(FilterOptions::default()))
        .unwrap()
        .close()
        .unwrap();
    let path = dir.path().join("OPTIONS");
    let mut bytes = std::fs::read(&path).unwrap();
    let at = bytes.len() / 2;
    bytes[at] ^= 0x04;
    std::fs::write(&path, &bytes).unwrap();
    let before: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    for e in [
        Db::open(dir.path(), Options::default()).unwrap_err(),
        Db::open_read_only(dir.path(), Options::default()).unwrap_err(),
    ] {
        assert!(e.is_corruption(), "{e}");
        assert!(e.to_string().contains("OPTIONS"), "{e}");
    }
    let after: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(before, after);
    assert_eq!(std::fs::read(&path).unwrap(), bytes, "left as it was");
}

/// `(level, compression)` of every live file.
fn compressions(db: &Db) -> Vec<(usize, String)> {
    db.file_stats()
        .iter()
        .map(|f| (f.level, f.compression.clone()))
        .collect()
}

fn strong() -> Compression {
    if cfg!(feature = "zstd") {
        Compression::Zstd(5)
    } else {
        Compression::Lz4
    }
}

#[test]
fn a_reopened_store_keeps_its_compression() {
    let dir = scratch_dir();
    let mut mine = CompressionOptions::uniform(strong());
    mine.per_level.push((1, Compression::Lz4));
    let db = Db::open(
        dir.path(),
        options(FilterOptions::default()).compression(mine.clone()),
    )
    .unwrap();
    fill(&db, 0, 1500);
    db.close().unwrap();
    let text = options_text(dir.path());
    assert!(
        text.contains(&format!("\ncompression = {}\n", strong())),
        "{text}"
    );
    assert!(text.contains("\ncompression.level.1 = lz4\n"), "{text}");
    // Reopened with the default compression: the stored one wins.
    let db = Db::open(dir.path(), options(FilterOptions::default())).unwrap();
    assert_eq!(db.options().compression, mine);
    fill(&db, 1500, 6000);
    db.compact().unwrap();
    db.maintain().unwrap(); // L1 is over its target: some of it moves down
    let cs = compressions(&db);
    assert!(cs.iter().any(|(l, _)| *l >= 2), "{cs:?}");
    for (level, c) in &cs {
        let want = if *level == 1 {
            "lz4".to_string()
        } else {
            strong().to_string()
        };
        assert_eq!(c, &want, "{cs:?}");
    }
    for i in (0..3000).step_by(97) {
        let v = db.get(format!("key{i:06}")).unwrap().unwrap();
        assert_eq!(v, format!("value{i:040}").as_bytes());
    }
    let s = db.stats();
    let (raw, stored): (u64, u64) = s
        .levels
        .iter()
        .fold((0, 0), |a, l| (a.0 + l.data_raw_bytes, a.1 + l.data_bytes));
    assert!(
        raw > stored * 2,
        "zero-padded values compress: {raw} vs {stored}"
    );
    db.close().unwrap();
    assert_eq!(options_text(dir.path()).matches("history = ").count(), 1);
}

#[test]
fn replaced_compression_applies_to_new_files_and_old_ones_still_read() {
    let dir = scratch_dir();
    let db = Db::open(
        dir.path(),
        options(FilterOptions::default())
            .compression(CompressionOptions::uniform(Compression::Lz4)),
    )
    .unwrap();
    fill(&db, 0, 2000);
    db.close().unwrap();
    let none = options(FilterOptions::default())
        .use_stored_design(false)
        .compression(CompressionOptions::none());
    let db = Db::open(dir.path(), none).unwrap();
    // Files keep the compression they were built with until rewritten (the
    // WAL's tail, flushed at open, is written with the new design).
    let cs = compressions(&db);
    assert!(cs.iter().filter(|(_, c)| c == "lz4").count() >= 2, "{cs:?}");
    fill(&db, 2000, 2000);
    db.compact().unwrap();
    let cs = compressions(&db);
    assert!(cs.iter().all(|(_, c)| c == "none"), "{cs:?}");
    for i in (0..4000).step_by(89) {
        assert!(db.get(format!("key{i:06}")).unwrap().is_some(), "key {i}");
    }
    db.close().unwrap();
    let text = options_text(dir.path());
    assert!(text.contains("compression: lz4 -> none"), "{text}");
}

#[test]
fn zstd_without_the_feature_is_refused() {
    let o = Options::default().compression(CompressionOptions::uniform(Compression::Zstd(3)));
    assert_eq!(o.validate().is_ok(), cfg!(feature = "zstd"));
}
