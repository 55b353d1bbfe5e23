//! Crash test of batches spanning keyspaces: the test binary re-executes
//! itself as a child that writes batches, each over the default keyspace and
//! the keyspaces "a" and "b", with 4 KiB memtables (so logs switch, every
//! keyspace's memtables freeze together and flush, and the logs are retired
//! while it runs), and prints every acknowledged batch; it also drops the
//! keyspace the previous round created and creates one of its own. The
//! parent SIGKILLs it at a random moment, reopens the store and checks that
//! every acknowledged batch is whole in every keyspace, the one batch in
//! flight is whole or absent in all of them together, and the keyspaces
//! created and dropped by acknowledged calls are there or gone. A second
//! test runs the same child with every 25th batch replaced by a load
//! ([`Keyspace::ingest`]) into one of the three keyspaces, and most other
//! batches writing to one keyspace only: each
//! acknowledged load is whole, the one in flight whole or absent, and the
//! writes after a load are newer than it.

use std::collections::BTreeMap;
use std::path::Path;

use bloomlsm::workload::SplitMix64;
use bloomlsm::{Db, Keyspace, Options, WriteBatch};

mod common;
use common::child::Child;
use common::model::{Model, apply, apply_range};
use common::{options, scratch_dir};

const ENV: &str = "BLOOMLSM_KS_CRASH_CHILD";
const KEYS: u64 = 120;
/// The child stops on its own after this many batches (it is normally killed
/// long before).
const CHILD_MAX_OPS: u64 = 20_000;
const SEED: u64 = 0x6b73_c4a5_0000_0001;

fn opts() -> Options {
    options::tiny().background_compaction(true)
}

/// The store's models, by keyspace: "default", "a", "b".
type Models = BTreeMap<&'static str, Model>;

const SPACES: [&str; 3] = ["default", "a", "b"];

/// With loads, operation `i` of a round is a load when `i % LOAD_EVERY`
/// is this.
const LOAD_EVERY: u64 = 25;
const LOAD_AT: u64 = 7;
/// Records of a load (keys repeat: the later value wins).
const LOAD_RECORDS: u64 = 40;

/// Operation `i` of round `round` (with `loads`, every [`LOAD_EVERY`]th is a
/// load): applied to `models`, and written to the store through `ks`
/// when given. A pure function of its arguments, so the parent rebuilds it.
fn apply_op(
    models: &mut Models,
    store: Option<(&Db, &[Keyspace])>,
    loads: bool,
    round: u64,
    i: u64,
) {
    if loads && i % LOAD_EVERY == LOAD_AT {
        let s = ((i / LOAD_EVERY) % 3) as usize;
        let mut rng = SplitMix64::new(SEED ^ (round << 32) ^ i);
        let records: Vec<(Vec<u8>, Vec<u8>)> = (0..LOAD_RECORDS)
            .map(|j| {
                let k = format!("k{:03}", rng.below(KEYS)).into_bytes();
                (k, format!("r{round}-i{i}-load{j}").into_bytes())
            })
            .collect();
        let m = models.get_mut(SPACES[s]).unwrap();
        for (k, v) in &records {
            apply(m, k, Some(v));
        }
        if let Some((_, ks)) = store {
            ks[s].ingest(records.into_iter().map(Ok)).unwrap();
        }
        return;
    }
    // With loads, most batches write to one keyspace: the keyspaces'
    // memtables a load flushes differ in size and age.
    let only = (loads && !i.is_multiple_of(4)).then_some((i % 3) as usize);
    let mut b = WriteBatch::new();
    apply_batch(models, store.map(|(_, ks)| (&mut b, ks)), only, round, i);
    if let Some((db, _)) = store {
        db.write(b).unwrap();
    }
}

/// Batch `i` of round `round`: in each keyspace a put, a delete or a range
/// deletion of the same keys, with values naming round, batch and keyspace.
/// `only`: in that keyspace alone.
fn apply_batch(
    models: &mut Models,
    batch: Option<(&mut WriteBatch, &[Keyspace])>,
    only: Option<usize>,
    round: u64,
    i: u64,
) {
    let mut rng = SplitMix64::new(SEED ^ (round << 32) ^ i);
    let k = format!("k{:03}", rng.below(KEYS)).into_bytes();
    let kind = rng.below(10);
    let end = format!("k{:03}", rng.below(KEYS)).into_bytes();
    let mut batch = batch;
    for (s, name) in SPACES.iter().enumerate() {
        if only.is_some_and(|o| o != s) {
            continue;
        }
        let m = models.get_mut(name).unwrap();
        let v = format!("r{round}-i{i}-{name}").into_bytes();
        match kind {
            0 => {
                apply(m, &k, None);
                if let Some((b, ks)) = batch.as_mut() {
                    b.delete_in(&ks[s], &k);
                }
            }
            1 if k < end => {
                apply_range(m, &k, &end);
                if let Some((b, ks)) = batch.as_mut() {
                    b.delete_range_in(&ks[s], &k, &end);
                }
            }
            _ => {
                apply(m, &k, Some(&v));
                if let Some((b, ks)) = batch.as_mut() {
                    b.put_in(&ks[s], &k, &v);
                }
            }
        }
    }
}

/// The child: round `round` of the store in the directory it is given.
#[test]
#[ignore = "run only as the child process of the crash tests"]
fn keyspace_child_writer() {
    let Ok(spec) = std::env::var(ENV) else {
        return;
    };
    let mut parts = spec.split(';');
    let (dir, round, loads) = (
        parts.next().unwrap(),
        parts.next().unwrap().parse::<u64>().unwrap(),
        parts.next() == Some("loads"),
    );
    let db = Db::open(dir, opts()).unwrap();
    for name in ["a", "b"] {
        if db.keyspace(name).is_err() {
            db.create_keyspace(name, opts()).unwrap();
        }
    }
    if round > 0 && db.keyspace(&format!("c{}", round - 1)).is_ok() {
        db.drop_keyspace(&format!("c{}", round - 1)).unwrap();
    }
    let own = format!("c{round}");
    let c = match db.keyspace(&own) {
        Ok(c) => c,
        Err(_) => db.create_keyspace(&own, opts()).unwrap(),
    };
    c.put("mark", "x").unwrap();
    println!("READY");
    let ks: Vec<Keyspace> = SPACES.iter().map(|n| db.keyspace(n).unwrap()).collect();
    let mut scratch: Models = SPACES.iter().map(|n| (*n, Model::new())).collect();
    for i in 0..CHILD_MAX_OPS {
        apply_op(&mut scratch, Some((&db, &ks)), loads, round, i);
        println!("ACK {i}");
        if i % 97 == 13 {
            ks[(i % 3) as usize].flush().unwrap();
        }
    }
}

fn contents(ks: &Keyspace) -> Model {
    ks.scan(..)
        .map(|e| e.map(|(k, v)| (k.to_vec(), v.to_vec())))
        .collect::<Result<_, _>>()
        .unwrap()
}

/// One round: the child runs until `kill_after` acks (and `delay_us`
/// more), is killed, and the store is checked against `models`, which it
/// then holds.
fn crash_round(
    dir: &Path,
    models: &mut Models,
    loads: bool,
    round: u64,
    kill_after: u64,
    delay_us: u64,
) {
    let mode = if loads { "loads" } else { "batches" };
    let spec = format!("{};{round};{mode}", dir.display());
    let mut child = Child::spawn("keyspace_child_writer", &[(ENV, spec)]);
    let mut ready = false;
    let mut acked = 0u64;
    let parse = |line: &str, ready: &mut bool, acked: &mut u64| {
        if line.contains("READY") {
            *ready = true;
        }
        if let Some((_, n)) = line.split_once("ACK ") {
            *acked = n.trim().parse::<u64>().unwrap() + 1;
        }
    };
    while acked < kill_after {
        let Some(line) = child.next_line() else {
            break;
        };
        parse(&line, &mut ready, &mut acked);
    }
    std::thread::sleep(std::time::Duration::from_micros(delay_us));
    let killed = child.kill();
    for line in &killed.rest {
        parse(line, &mut ready, &mut acked);
    }
    assert!(
        ready && acked >= kill_after,
        "round {round}: the child failed: {}",
        killed.stderr
    );
    let logs_left = bloomlsm::db::filename::list_store_files(dir)
        .unwrap()
        .iter()
        .filter(|f| f.0 == bloomlsm::db::FileKind::Log)
        .count();
    let db = Db::open(dir, opts()).unwrap();
    let ctx = format!("round {round}, {acked} batches acknowledged, {logs_left} logs left");
    // The keyspaces of acknowledged creates and drops.
    let names = db.keyspace_names();
    assert!(names.contains(&format!("c{round}")), "{ctx}: {names:?}");
    if round > 0 {
        assert!(
            !names.contains(&format!("c{}", round - 1)),
            "{ctx}: {names:?}"
        );
    }
    let mark = db
        .keyspace(&format!("c{round}"))
        .unwrap()
        .get("mark")
        .unwrap();
    assert_eq!(mark.as_deref(), Some(&b"x"[..]), "{ctx}");
    // Every acknowledged batch, and the one in flight whole or not at all,
    // in every keyspace alike.
    for i in 0..acked {
        apply_op(models, None, loads, round, i);
    }
    let mut with_flight = models.clone();
    apply_op(&mut with_flight, None, loads, round, acked);
    let got: Models = SPACES
        .iter()
        .map(|n| (*n, contents(&db.keyspace(n).unwrap())))
        .collect();
    let applied = got != *models;
    if applied {
        assert!(
            got == with_flight,
            "{ctx}: the store holds neither the acknowledged batches nor them and the one in \
             flight, whole in every keyspace"
        );
        *models = with_flight;
    }
    if std::env::var_os("BLOOMLSM_KS_CRASH_SHOW").is_some() {
        let files: usize = SPACES
            .iter()
            .map(|n| db.keyspace(n).unwrap().file_stats().len())
            .sum();
        eprintln!("{ctx}: {files} tables, in flight applied: {applied}");
    }
    db.close().unwrap();
}

/// `stores` stores of `rounds` rounds each, killed at random moments.
fn crash_rounds(loads: bool, stores: u64, rounds: u64, seed: u64) {
    let mut rng = SplitMix64::new(seed);
    for _ in 0..stores {
        let dir = scratch_dir();
        let mut models: Models = SPACES.iter().map(|n| (*n, Model::new())).collect();
        for round in 0..rounds {
            let kill_after = 1 + rng.below(600);
            let delay_us = rng.below(2000);
            crash_round(dir.path(), &mut models, loads, round, kill_after, delay_us);
        }
    }
}

#[test]
fn batches_spanning_keyspaces_survive_sigkill_whole() {
    let (stores, rounds) = if common::long_mode() {
        (10, 10)
    } else {
        (3, 6)
    };
    crash_rounds(false, stores, rounds, SEED);
}

#[test]
fn loads_into_keyspaces_survive_sigkill_whole() {
    let (stores, rounds) = if common::long_mode() {
        (10, 10)
    } else {
        (2, 6)
    };
    crash_rounds(true, stores, rounds, SEED ^ 0x10ad);
}
