//! `Db::multi_get` answers exactly what `get` answers key by key, and charges
//! the same counters (property test over random stores and key sets).

use std::collections::BTreeMap;

use bloomlsm::{Db, FilterKind, FilterOptions, FilterPolicy, Options, Stats};
use proptest::prelude::*;

mod common;
use common::scratch_dir;

fn options(filters: FilterOptions) -> Options {
    Options {
        write_buffer_size: 4096,
        target_file_size: 4096,
        level1_max_bytes: 8 << 10,
        level_size_multiplier: 2,
        block_size: 512,
        block_cache_capacity: 0,
        background_compaction: false,
        filters,
        ..Options::default()
    }
}

fn key(i: u16) -> Vec<u8> {
    format!("k{i:04}").into_bytes()
}

/// The counters a lookup charges (everything but timings).
fn counters(s: &Stats) -> (u64, u64, u64, u64, u64, Vec<bloomlsm::IoCounters>) {
    (
        s.gets,
        s.gets_found,
        s.memtable_answers,
        s.missing_get_block_reads,
        (s.missing_get_predicted_reads * 1e6).round() as u64,
        s.levels.iter().map(|l| l.io).collect(),
    )
}

#[derive(Clone, Debug)]
enum Op {
    Put(u16, u8),
    Delete(u16),
    Flush,
    Maintain,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        8 => (0u16..400, any::<u8>()).prop_map(|(k, v)| Op::Put(k, v)),
        2 => (0u16..400).prop_map(Op::Delete),
        1 => Just(Op::Flush),
        1 => Just(Op::Maintain),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn multi_get_equals_get(ops in prop::collection::vec(op(), 50..600),
                            probe in prop::collection::vec(0u16..500, 1..300),
                            kind in 0usize..4) {
        let filters = match kind {
            0 => FilterOptions::default(),
            1 => FilterOptions::uniform(Some(FilterPolicy::ribbon(8.0))),
            2 => FilterOptions::hybrid_monkey(FilterKind::Blocked512, FilterKind::Ribbon, 2, 9.0),
            _ => FilterOptions::none(),
        };
        let dir = scratch_dir();
        let db = Db::open(dir.path(), options(filters)).unwrap();
        let mut model = BTreeMap::new();
        for op in &ops {
            match op {
                Op::Put(k, v) => {
                    db.put(key(*k), [*v; 40]).unwrap();
                    model.insert(key(*k), vec![*v; 40]);
                }
                Op::Delete(k) => {
                    db.delete(key(*k)).unwrap();
                    model.remove(&key(*k));
                }
                Op::Flush => db.flush().unwrap(),
                Op::Maintain => db.maintain().unwrap(),
            }
        }
        let keys: Vec<Vec<u8>> = probe.iter().map(|&k| key(k)).collect();
        db.reset_stats();
        let one: Vec<_> = keys.iter().map(|k| db.get(k).unwrap()).collect();
        let by_get = counters(&db.stats());
        db.reset_stats();
        let many = db.multi_get(&keys).unwrap();
        let by_multi = counters(&db.stats());
        prop_assert_eq!(&many, &one);
        for (k, v) in keys.iter().zip(&many) {
            prop_assert_eq!(v.as_deref(), model.get(k).map(Vec::as_slice));
        }
        prop_assert_eq!(by_multi, by_get);
    }
}

#[test]
fn empty_and_bad_keys() {
    let dir = scratch_dir();
    let db = Db::open(dir.path(), options(FilterOptions::default())).unwrap();
    assert!(db.multi_get::<&[u8]>(&[]).unwrap().is_empty());
    assert!(
        db.multi_get(&["ok", ""]).is_err(),
        "an empty key is refused"
    );
}
