//! `Db::multi_get` answers exactly what `get` answers key by key, and charges
//! the same counters (property test over random stores and key sets).

use bloomlsm::{Db, FilterKind, FilterOptions, FilterPolicy, Options, Stats};
use proptest::prelude::*;

mod common;
use common::model::Model;
use common::scratch_dir;

fn options(filters: FilterOptions) -> Options {
    common::options::tiny()
        .level1_max_bytes(8 << 10)
        .dynamic_level_bytes(false)
        .level_size_multiplier(2)
        .block_size(512)
        .block_cache_capacity(0)
        .filters(filters)
}

/// Key `i` in one of three shapes: distinct 8-byte prefixes, one prefix
/// shared by every key (each comparison goes to the whole key), and
/// unpadded numbers of 1 to 3 bytes (zero-padded prefixes that tie).
fn styled_key(i: u16, style: u8) -> Vec<u8> {
    match style {
        0 => format!("k{i:04}"),
        1 => format!("shared-prefix/{i:04}"),
        _ => format!("{i}"),
    }
    .into_bytes()
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
                            kind in 0usize..4,
                            style in 0u8..3) {
        let filters = match kind {
            0 => FilterOptions::default(),
            1 => FilterOptions::uniform(Some(FilterPolicy::ribbon(8.0))),
            2 => FilterOptions::hybrid_monkey(FilterKind::Blocked512, FilterKind::Ribbon, 2, 9.0),
            _ => FilterOptions::none(),
        };
        let dir = scratch_dir();
        let db = Db::open(dir.path(), options(filters)).unwrap();
        let mut model = Model::new();
        for op in &ops {
            match op {
                Op::Put(k, v) => {
                    db.put(styled_key(*k, style), [*v; 40]).unwrap();
                    model.insert(styled_key(*k, style), vec![*v; 40]);
                }
                Op::Delete(k) => {
                    db.delete(styled_key(*k, style)).unwrap();
                    model.remove(&styled_key(*k, style));
                }
                Op::Flush => db.flush().unwrap(),
                Op::Maintain => db.maintain().unwrap(),
            }
        }
        // Frozen memtables are flushed by a background thread: settle them
        // so both lookups see the same tree, then put a few keys again (same
        // values, from the model) so the memtable still answers some.
        db.flush().unwrap();
        for (k, v) in model.iter().step_by(7).take(8) {
            db.put(k, v).unwrap();
        }
        let keys: Vec<Vec<u8>> = probe.iter().map(|&k| styled_key(k, style)).collect();
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

/// Where a read waits on a network (a `LatencyFs` with a latency, as a
/// bucket): the keys of one file whose data blocks lie side by side are
/// read with one request, each block still counted once as read, and the
/// answers are `get`'s.
#[test]
fn adjacent_blocks_of_one_file_are_read_in_one_request() {
    use bloomlsm::fs::RealFs;
    use bloomlsm::fs::latency::{Latency, LatencyFs};
    use std::sync::Arc;
    use std::time::Duration;

    let dir = scratch_dir();
    let fs = Arc::new(LatencyFs::new(
        RealFs::shared(),
        Latency::Fixed(Duration::from_micros(1)),
    ));
    let opts = options(FilterOptions::default())
        .target_file_size(64 << 10)
        .fs(fs.clone());
    let db = Db::open(dir.path(), opts).unwrap();
    for i in 0..3_000u16 {
        db.put(format!("k{i:05}"), [i as u8; 40]).unwrap();
    }
    db.flush().unwrap();
    db.compact().unwrap();
    let mut keys: Vec<Vec<u8>> = (1_000..1_200u16)
        .map(|i| format!("k{i:05}").into_bytes())
        .collect();
    // Keys of no block, and a key asked twice.
    keys.push(b"k01000x".to_vec());
    keys.push(b"k01100".to_vec());
    let one: Vec<_> = keys.iter().map(|k| db.get(k).unwrap()).collect();
    db.reset_stats();
    let before = fs.reads().requests;
    let many = db.multi_get(&keys).unwrap();
    let requests = fs.reads().requests - before;
    assert_eq!(many, one);
    let io: Vec<_> = db.stats().levels.iter().map(|l| l.io).collect();
    let blocks: u64 = io.iter().map(|c| c.block_reads).sum();
    let hits: u64 = io.iter().map(|c| c.cache_hits).sum();
    assert!(blocks >= 20, "{blocks} blocks read");
    // One block per key found, and one for the missing key if its filter
    // let it through.
    let found = keys.len() as u64 - 1;
    assert!(
        (found..=found + 1).contains(&(blocks + hits)),
        "{blocks} + {hits}"
    );
    assert!(
        requests * 4 <= blocks,
        "{requests} requests for {blocks} blocks"
    );
}
