//! One filter memory budget across a store's keyspaces
//! (`Db::advise_keyspaces`, `Options::keyspace_filters`): three keyspaces
//! of the same size under different lookup loads, each with its own
//! uniform filters, read again after the budget they share is moved to
//! where the lookups are. The same total memory, fewer reads, the reads
//! the advice predicted.

use bloomlsm::workload::{absent_key, present_key};
use bloomlsm::{Db, Error, FilterOptions, FilterPolicy, Options};

mod common;
use common::scratch_dir;

const KEYS: u64 = 60_000;
/// Missing-key gets per keyspace: a hot one, a warm one, a cold one.
const LOAD: [(&str, u64); 3] = [("hot", 120_000), ("warm", 12_000), ("cold", 1_200)];

fn options() -> Options {
    common::options::manual()
        .write_buffer_size(256 << 10)
        .target_file_size(256 << 10)
        .level1_max_bytes(512 << 10)
        .level_size_multiplier(4)
        .dynamic_level_bytes(false)
        .filters(FilterOptions::uniform(Some(FilterPolicy::blocked512(10.0))))
}

/// Each keyspace's wasted data-block reads (filter false positives) for
/// its share of the gets, and the filter memory of all three.
fn read_all(db: &Db) -> (Vec<u64>, u64) {
    let mut wasted = Vec::new();
    let mut memory = 0;
    for (seed, (name, gets)) in LOAD.iter().enumerate() {
        let ks = db.keyspace(name).unwrap();
        ks.reset_stats();
        for i in 0..*gets {
            assert!(ks.get(absent_key(seed as u64, i)).unwrap().is_none());
        }
        let s = ks.stats();
        wasted.push(s.total.false_positives);
        memory += s.filter_bytes;
    }
    (wasted, memory)
}

#[test]
fn a_shared_budget_moves_bits_to_the_lookups_and_reads_less() {
    let dir = scratch_dir();
    {
        let db = Db::open(dir.path(), options()).unwrap();
        for (seed, (name, _)) in LOAD.iter().enumerate() {
            let ks = db.create_keyspace(name, options()).unwrap();
            // Maintained as it grows: several levels in each.
            for i in 0..KEYS {
                ks.put(present_key(seed as u64, i), [1u8; 20]).unwrap();
                if i % 5_000 == 4_999 {
                    ks.maintain().unwrap();
                }
            }
            ks.maintain().unwrap();
        }
        let e = db.advise_keyspaces().unwrap_err();
        assert!(matches!(e, Error::InvalidArgument(_)), "{e}");
        db.close().unwrap();
    }
    let db = Db::open(dir.path(), options()).unwrap();
    let (before, memory_before) = read_all(&db);
    let advice = db.advise_keyspaces().unwrap();
    // The default keyspace served no get: it keeps its design.
    assert_eq!(advice.keyspaces.len(), 3, "{advice:?}");
    assert_eq!(advice.left_alone.len(), 1, "{advice:?}");
    assert_eq!(advice.left_alone[0].0, "default");
    assert_eq!(advice.memory_bytes, memory_before);
    let gets: u64 = LOAD.iter().map(|l| l.1).sum();
    assert_eq!(advice.gets, gets);
    // The present design's prediction against what it read.
    let measured = before.iter().sum::<u64>() as f64 / gets as f64;
    let [present, alone, shared] = advice.wasted_reads_per_get;
    assert!(
        (0.9..=1.1).contains(&(measured / present)),
        "present: measured {measured}, predicted {present}"
    );
    // Sharing beats each keyspace spending its own memory as well as it
    // can, which beats uniform bits.
    assert!(shared < alone && alone <= present, "{advice:?}");
    let bits = |name: &str| -> f64 {
        let k = advice.keyspaces.iter().find(|k| k.name == name).unwrap();
        let b = &k.shared_bits_per_key;
        let keys = &k.advice.level_keys;
        b.iter().zip(keys).map(|(b, &n)| b * n as f64).sum::<f64>()
            / keys.iter().sum::<u64>() as f64
    };
    assert!(
        bits("hot") > bits("warm") && bits("warm") > bits("cold"),
        "{advice:?}"
    );
    assert!(advice.filter_options("default").is_none());
    db.close().unwrap();

    let mut opts = options();
    for (name, _) in LOAD {
        opts.keyspace_filters
            .push((name.to_string(), advice.filter_options(name).unwrap()));
    }
    let db = Db::open(dir.path(), opts.clone()).unwrap();
    for (name, _) in LOAD {
        assert!(
            db.keyspace(name).unwrap().rebuild_filters().unwrap() > 0,
            "{name}"
        );
    }
    let (after, memory_after) = read_all(&db);
    let measured = after.iter().sum::<u64>() as f64 / gets as f64;
    assert!(
        (0.9..=1.1).contains(&(measured / shared)),
        "shared: measured {measured}, predicted {shared}; before {before:?}, after {after:?}"
    );
    assert!(after.iter().sum::<u64>() < before.iter().sum::<u64>());
    let ratio = memory_after as f64 / memory_before as f64;
    assert!(
        (0.98..=1.02).contains(&ratio),
        "memory {memory_before} -> {memory_after}"
    );
    db.close().unwrap();

    // The designs are the keyspaces' own now: a plain open keeps them.
    let db = Db::open(dir.path(), options()).unwrap();
    let (again, memory_again) = read_all(&db);
    assert_eq!(again, after);
    assert_eq!(memory_again, memory_after);
    db.close().unwrap();

    // A name the store has no keyspace for fails the open.
    opts.keyspace_filters
        .push(("nowhere".into(), FilterOptions::none()));
    let e = Db::open(dir.path(), opts).unwrap_err();
    assert!(e.to_string().contains("\"nowhere\""), "{e}");
}
