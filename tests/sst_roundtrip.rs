//! Build → open → get / iterate equals the input, for random key sets, both
//! key formats, both checksum types, with and without (and with each kind of)
//! filter.

use std::fs::File;
use std::path::Path;
use std::sync::Arc;

use bloomlsm::filter::{FilterPolicy, key_point};
use bloomlsm::sst::{
    BlockCache, ChecksumType, Compression, InternalKey, KeyFormat, Table, TableBuilder,
    TableBuilderOptions, TableIter, TableOpenOptions, ValueKind,
};
use bloomlsm::{Error, PrefixExtractor, key_hash};
use proptest::collection::{btree_map, btree_set, vec};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, RngSeed};

type Entries = Vec<(Vec<u8>, Vec<u8>)>;

/// `user_key ++ trailer(seq, kind)`.
fn make_internal_key(user_key: &[u8], seq: u64, kind: ValueKind) -> Vec<u8> {
    InternalKey {
        user_key,
        seq,
        kind,
    }
    .encode()
}

fn compare_internal(a: &[u8], b: &[u8]) -> std::cmp::Ordering {
    KeyFormat::Internal.compare(a, b)
}

fn config(cases: u32) -> Config {
    Config {
        cases,
        rng_algorithm: RngAlgorithm::ChaCha,
        rng_seed: RngSeed::Fixed(0x5eed_0005),
        failure_persistence: None,
        ..Config::default()
    }
}

/// Binary keys rich in 0x00/0xff, keys with long shared prefixes, and long keys.
fn key_strategy() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        5 => vec(prop_oneof![Just(0u8), Just(0xff), Just(b'a'), any::<u8>()], 0..10),
        3 => (60usize..300, vec(any::<u8>(), 0..4)).prop_map(|(n, tail)| {
            let mut k = vec![b'p'; n];
            k.extend(tail);
            k
        }),
        1 => vec(any::<u8>(), 500..3000),
    ]
}

fn value_strategy() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        2 => Just(Vec::new()),
        5 => vec(any::<u8>(), 0..40),
        1 => vec(any::<u8>(), 300..5000),
        // Compressible: runs of a few letters.
        2 => vec((0u8..3, 1usize..40), 1..30).prop_map(|runs| runs
            .into_iter()
            .flat_map(|(b, n)| std::iter::repeat_n(b'a' + b, n))
            .collect()),
    ]
}

fn compression_strategy() -> impl Strategy<Value = Compression> {
    let zstd = if cfg!(feature = "zstd") {
        Compression::Zstd(3)
    } else {
        Compression::Lz4
    };
    prop_oneof![Just(Compression::None), Just(Compression::Lz4), Just(zstd)]
}

fn checksum_strategy() -> impl Strategy<Value = ChecksumType> {
    prop_oneof![Just(ChecksumType::Crc32), Just(ChecksumType::Xxh3)]
}

fn filter_strategy() -> impl Strategy<Value = Option<FilterPolicy>> {
    prop_oneof![
        Just(None),
        Just(Some(FilterPolicy::blocked512(10.0))),
        Just(Some(FilterPolicy::blocked512(2.0))),
        Just(Some(FilterPolicy::bloom(8.0))),
    ]
}

fn layout_strategy() -> impl Strategy<Value = (usize, usize)> {
    (
        prop_oneof![Just(64usize), Just(256), Just(4096)],
        prop_oneof![Just(1usize), Just(3), Just(16)],
    )
}

/// Builds and opens a table; `on_demand` opens it with its filter read on
/// demand (not held in memory), as a store under a filter memory budget does.
fn build(path: &Path, entries: &Entries, opts: TableBuilderOptions, on_demand: bool) -> Table {
    let mut b = TableBuilder::new(File::create(path).unwrap(), path, opts);
    for (k, v) in entries {
        b.add(k, v).unwrap();
    }
    let s = b.finish().unwrap();
    assert_eq!(s.file_size, std::fs::metadata(path).unwrap().len());
    assert_eq!(s.entries, entries.len() as u64);
    let t = Table::open(
        path,
        TableOpenOptions::default().filter_on_demand(on_demand),
    )
    .unwrap();
    assert_eq!(t.filter_info().is_some(), t.filter_handle().is_some());
    if on_demand {
        assert!(t.filter().is_none_or(|f| !f.is_usable()));
    }
    t
}

fn collect<T: std::ops::Deref<Target = Table>>(it: TableIter<T>) -> Entries {
    it.map(|r| {
        let (k, v) = r.unwrap();
        (k.to_vec(), v.to_vec())
    })
    .collect()
}

fn check_properties(t: &Table, entries: &Entries, fmt: KeyFormat) {
    let p = t.properties();
    assert_eq!(p.entries, entries.len() as u64);
    assert_eq!(p.key_format, fmt);
    let raw_k: usize = entries.iter().map(|e| e.0.len()).sum();
    let raw_v: usize = entries.iter().map(|e| e.1.len()).sum();
    assert_eq!(
        (p.raw_key_bytes, p.raw_value_bytes),
        (raw_k as u64, raw_v as u64)
    );
    if let (Some(first), Some(last)) = (entries.first(), entries.last()) {
        assert_eq!(t.smallest_key(), &first.0[..]);
        assert_eq!(t.largest_key(), &last.0[..]);
    }
    assert_eq!(p.data_blocks as usize, t.data_blocks());
    assert!(p.data_raw_size >= p.data_size || p.compression != Compression::None);
    let version = if p.filter_partitions > 0 {
        3
    } else if p.compression == Compression::None {
        1
    } else {
        2
    };
    assert_eq!(p.format_version, version);
    assert_eq!(p.filter_partitions as usize, t.filter_partitions().len());
    if p.compression == Compression::None {
        assert_eq!(p.data_raw_size, p.data_size);
    }
}

proptest! {
    #![proptest_config(config(64))]

    #[test]
    fn plain_tables_roundtrip(
        map in btree_map(key_strategy(), value_strategy(), 0..120),
        absent in vec(key_strategy(), 0..40),
        seeks in vec(key_strategy(), 0..12),
        checksum in checksum_strategy(),
        filter in filter_strategy(),
        (block_size, restart_interval) in layout_strategy(),
        compression in compression_strategy(),
        filter_partition_bytes in prop_oneof![Just(0usize), Just(64), Just(256)],
        on_demand in any::<bool>(),
        prefix_extractor in prop_oneof![
            Just(None),
            (1usize..4).prop_map(|n| Some(PrefixExtractor::Fixed(n))),
            any::<u8>().prop_map(|b| Some(PrefixExtractor::UpToDelimiter(b))),
        ],
        range_bits in prop_oneof![Just(None), (2.0f64..24.0).prop_map(Some)],
    ) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.sst");
        let entries: Entries = map.clone().into_iter().collect();
        let opts = TableBuilderOptions::default().block_size(block_size).restart_interval(restart_interval).checksum(checksum).filter(filter).key_format(KeyFormat::Plain).creation_time(None).compression(compression).filter_partition_bytes(filter_partition_bytes).prefix_extractor(prefix_extractor).range_filter_bits_per_key(range_bits);
        let t = build(&path, &entries, opts, on_demand);
        // The range filter holds every key's point, and was built at its bits.
        match (range_bits, t.range_filter()) {
            (None, None) => {}
            (Some(b), Some(Ok(rf))) => {
                prop_assert!(rf.built_at(b));
                for (k, _) in &entries {
                    let x = key_point(k);
                    prop_assert!(rf.may_contain_point(x));
                    prop_assert!(rf.may_contain_range(x.saturating_sub(3), x.saturating_add(5)));
                }
            }
            (b, f) => prop_assert!(false, "range bits {:?}, range filter {:?}", b, f),
        }
        // The prefix filter holds every in-domain key's prefix.
        match (prefix_extractor, t.prefix_filter()) {
            (None, None) => {}
            (Some(e), Some(Ok(pf))) => {
                prop_assert_eq!(pf.extractor, e);
                for (k, _) in &entries {
                    if let Some(p) = e.prefix(k) {
                        prop_assert!(pf.may_contain(key_hash(p)));
                    }
                }
            }
            (e, f) => prop_assert!(false, "extractor {:?}, prefix filter {:?}", e, f),
        }
        check_properties(&t, &entries, KeyFormat::Plain);
        prop_assert_eq!(t.checksum_type(), checksum);
        prop_assert_eq!(t.filter_info().is_some(), filter.is_some());
        for (k, v) in &entries {
            let r = t.get(k, key_hash(k)).unwrap();
            prop_assert!(!r.filter_negative, "false negative");
            let (gk, gv) = r.entry.clone().expect("present key found");
            prop_assert_eq!(&gk[..], &k[..]);
            prop_assert_eq!(&gv[..], &v[..]);
            prop_assert_eq!(r.blocks_read, 1);
            prop_assert!(r.user_key_found && !r.false_positive());
            // A filter not in memory costs one filter-block read per probe.
            let filtered = on_demand && filter.is_some();
            prop_assert_eq!(r.filter_blocks_read, u64::from(filtered));
        }
        for k in &absent {
            if map.contains_key(k) { continue; }
            let r = t.get(k, key_hash(k)).unwrap();
            prop_assert!(r.entry.is_none());
            prop_assert!(r.blocks_read <= 1);
            if r.blocks_read == 1 {
                prop_assert!(t.filter_info().is_none() || r.false_positive());
            }
        }
        prop_assert_eq!(collect(t.iter()), entries.clone());
        for s in &seeks {
            let expect: Entries = map.range(s.clone()..).map(|(k, v)| (k.clone(), v.clone())).collect();
            prop_assert_eq!(collect(t.iter_from(s)), expect);
        }
        t.verify_all().unwrap();
    }
}

/// Internal-key entries: each user key has 1..=3 versions, newest first.
fn internal_entries() -> impl Strategy<Value = Entries> {
    btree_set(key_strategy(), 0..60).prop_flat_map(|users| {
        let n = users.len();
        (
            Just(users),
            vec(
                (
                    btree_set(1u64..1000, 1..4),
                    vec(any::<bool>(), 3),
                    value_strategy(),
                ),
                n,
            ),
        )
            .prop_map(|(users, versions)| {
                let mut out = Vec::new();
                for (uk, (seqs, kinds, value)) in users.into_iter().zip(versions) {
                    for (i, seq) in seqs.into_iter().rev().enumerate() {
                        let kind = if kinds[i] {
                            ValueKind::Value
                        } else {
                            ValueKind::Deletion
                        };
                        let v = if kind == ValueKind::Value {
                            value.clone()
                        } else {
                            Vec::new()
                        };
                        out.push((make_internal_key(&uk, seq, kind), v));
                    }
                }
                out.sort_by(|a, b| compare_internal(&a.0, &b.0));
                out
            })
    })
}

proptest! {
    #![proptest_config(config(48))]

    #[test]
    fn internal_tables_roundtrip(
        entries in internal_entries(),
        probes in vec((key_strategy(), 0u64..1100), 0..40),
        checksum in checksum_strategy(),
        filter in filter_strategy(),
        (block_size, restart_interval) in layout_strategy(),
        compression in compression_strategy(),
        filter_partition_bytes in prop_oneof![Just(0usize), Just(64), Just(256)],
        on_demand in any::<bool>(),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("i.sst");
        let opts = TableBuilderOptions::default().block_size(block_size).restart_interval(restart_interval).checksum(checksum).filter(filter).key_format(KeyFormat::Internal).creation_time(None).compression(compression).filter_partition_bytes(filter_partition_bytes).prefix_extractor(None);
        let t = build(&path, &entries, opts, on_demand);
        check_properties(&t, &entries, KeyFormat::Internal);
        let dels = entries.iter().filter(|e| e.0[e.0.len() - 8] == 0).count() as u64;
        prop_assert_eq!(t.properties().deletions, Some(dels));
        let users: std::collections::BTreeSet<&[u8]> =
            entries.iter().map(|e| &e.0[..e.0.len() - 8]).collect();
        prop_assert_eq!(t.properties().filter_keys, if filter.is_some() { users.len() as u64 } else { 0 });
        // Every stored entry is found by its exact key.
        for (k, v) in &entries {
            let r = t.get(k, key_hash(&k[..k.len() - 8])).unwrap();
            let (gk, gv) = r.entry.expect("present key found");
            prop_assert_eq!(&gk[..], &k[..]);
            prop_assert_eq!(&gv[..], &v[..]);
        }
        // Snapshot reads: the newest version with seq <= s, if any. Probe both
        // stored and random user keys.
        let stored: Vec<&[u8]> = users.iter().copied().collect();
        for (i, (uk, seq)) in probes.iter().enumerate() {
            let uk: &[u8] = if i % 2 == 0 && !stored.is_empty() { stored[i % stored.len()] } else { uk };
            let target = make_internal_key(uk, *seq, ValueKind::Value);
            let expect = entries.iter().find(|(k, _)| compare_internal(k, &target).is_ge());
            let expect = expect.filter(|(k, _)| &k[..k.len() - 8] == uk);
            let r = t.get(&target, key_hash(uk)).unwrap();
            prop_assert_eq!(r.entry.as_ref().map(|(k, v)| (k.to_vec(), v.to_vec())), expect.cloned());
            prop_assert_eq!(r.user_key_found, users.contains(uk));
            let newest = make_internal_key(uk, InternalKey::MAX_SEQUENCE, ValueKind::Value);
            prop_assert_eq!(t.get(&newest, key_hash(uk)).unwrap().found(), users.contains(uk));
            let from: Entries = entries.iter().filter(|(k, _)| compare_internal(k, &target).is_ge()).cloned().collect();
            prop_assert_eq!(collect(t.iter_from(&target)), from);
        }
        prop_assert_eq!(collect(t.iter()), entries.clone());
        t.verify_all().unwrap();
    }
}

#[test]
fn out_of_order_and_duplicate_keys_are_invalid() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("o.sst");
    let mut b = TableBuilder::new(
        File::create(&path).unwrap(),
        &path,
        TableBuilderOptions::default(),
    );
    b.add(b"b", b"1").unwrap();
    assert!(matches!(b.add(b"b", b"2"), Err(Error::InvalidArgument(_))));
    assert!(matches!(b.add(b"a", b"2"), Err(Error::InvalidArgument(_))));
    b.add(b"c", b"3").unwrap();
    assert_eq!(b.entries(), 2);
    b.finish().unwrap();
    let t = Table::open(&path, TableOpenOptions::default()).unwrap();
    assert_eq!(collect(t.iter()).len(), 2);
}

#[test]
fn concurrent_readers_share_table_and_cache() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.sst");
    let entries: Entries = (0..3000u32)
        .map(|i| (format!("key{i:08}").into_bytes(), i.to_le_bytes().repeat(5)))
        .collect();
    build(&path, &entries, TableBuilderOptions::default(), false);
    let cache = Arc::new(BlockCache::new(64 * 1024));
    let t = Arc::new(
        Table::open(
            &path,
            TableOpenOptions::default()
                .file_id(1)
                .cache(Some(cache.clone())),
        )
        .unwrap(),
    );
    std::thread::scope(|s| {
        for th in 0..4 {
            let t = &t;
            let entries = &entries;
            s.spawn(move || {
                for (k, v) in entries.iter().skip(th).step_by(3) {
                    let r = t.get(k, key_hash(k)).unwrap();
                    assert_eq!(r.entry.unwrap().1, &v[..]);
                }
            });
        }
    });
    // An owned iterator over an Arc outlives the borrow of `t`.
    let it = TableIter::new(Arc::clone(&t), Some(b"key00002990"));
    assert_eq!(collect(it).len(), 10);
    let s = cache.stats();
    assert!(s.hits > 0 && s.misses > 0 && s.usage <= 64 * 1024);
}
