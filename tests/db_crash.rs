//! Crash test: the test binary re-executes itself as a child that writes to a
//! store and prints every acknowledged operation; the parent SIGKILLs it at a
//! random moment, reopens the store and checks that every acknowledged write
//! is there, the one operation that may have been in flight is there entirely
//! or not at all, and nothing that was never written appears.
//!
//! Each store goes through several crash rounds, so recovery of a store that
//! was itself killed during recovery (or during a flush or compaction) is
//! covered too. The concurrent variant runs several writer threads in the
//! child, each on its own keys, so that writes are committed in groups (one
//! WAL record and one fsync for many writers): each thread's acknowledged
//! writes must all be there, and its one in-flight operation entirely or not
//! at all. Batches hold puts, deletes and range deletes (over a writer's own
//! keys), so a range delete's WAL record is replayed after the kill too.

use std::path::Path;
use std::time::{Duration, Instant};

use bloomlsm::workload::SplitMix64;
use bloomlsm::{Db, Options, WriteBatch};

mod common;
use common::child::Child;
use common::model::{self, Model};
use common::scratch_dir;

const ENV: &str = "BLOOMLSM_CRASH_CHILD";
const KEY_SPACE: u64 = 300;
/// The child stops on its own after this many operations (it is normally
/// killed long before).
const CHILD_MAX_OPS: u64 = 20_000;

/// One write of an operation.
#[derive(Clone, Debug)]
enum Write {
    Put(Vec<u8>, Vec<u8>),
    Delete(Vec<u8>),
    /// Every key in `[start, end)`, within the thread's keys.
    DeleteRange(Vec<u8>, Vec<u8>),
}

/// One operation: its writes, applied in order as one batch.
type Op = Vec<Write>;

/// Key `i` of writer thread `t` (threads write disjoint keys).
fn thread_key(t: u64, i: u64) -> Vec<u8> {
    format!("t{t}key{i:05}").into_bytes()
}

/// The writer thread a key belongs to.
fn thread_of(k: &[u8]) -> u64 {
    let s = std::str::from_utf8(k).unwrap();
    s[1..s.find("key").unwrap()].parse().unwrap()
}

/// Operation `i` of round `round`; the value names key, round and op, so a
/// value from an unacknowledged op or another key is recognisable.
fn gen_op(rng: &mut SplitMix64, t: u64, round: u64, i: u64) -> Op {
    let n = match rng.below(100) {
        0..=59 => 1,
        60..=74 => 0, // single delete
        _ => 2 + rng.below(5),
    };
    if n == 0 {
        return vec![Write::Delete(thread_key(t, rng.below(KEY_SPACE)))];
    }
    (0..n)
        .map(|j| {
            let a = rng.below(KEY_SPACE);
            let k = thread_key(t, a);
            if n > 1 {
                match rng.below(10) {
                    // A range delete of up to 20 of the thread's keys, in a
                    // batch with puts and deletes around it.
                    0 => return Write::DeleteRange(k, thread_key(t, a + 1 + rng.below(20))),
                    1 | 2 => return Write::Delete(k),
                    _ => {}
                }
            }
            let pad = rng.below(300) as usize;
            let mut v = format!("{}|r{round}|op{i}|{j}|", String::from_utf8_lossy(&k)).into_bytes();
            v.extend(std::iter::repeat_n(b'a' + (i % 26) as u8, pad));
            Write::Put(k, v)
        })
        .collect()
}

/// The operations of writer thread `t` in round `round`.
fn op_rng(seed: u64, round: u64, t: u64) -> SplitMix64 {
    SplitMix64::new(
        seed.wrapping_mul(1_000_003)
            .wrapping_add(round.wrapping_mul(64))
            .wrapping_add(t),
    )
}

fn options(sync: bool) -> Options {
    Options::default()
        .sync_writes(sync)
        .write_buffer_size(4096)
        .target_file_size(4096)
        .level1_max_bytes(16 << 10)
        .dynamic_level_bytes(false)
        .level_size_multiplier(2)
        .l0_compaction_trigger(2)
        .block_size(512)
        // Kills land inside MANIFEST rollovers too.
        .max_manifest_edits(4)
}

fn apply(m: &mut Model, op: &Op) {
    for w in op {
        match w {
            Write::Put(k, v) => model::apply(m, k, Some(v)),
            Write::Delete(k) => model::apply(m, k, None),
            Write::DeleteRange(s, e) => model::apply_range(m, s, e),
        }
    }
}

/// The writer. Only runs when the parent sets `ENV`
/// ("dir|seed|round|sync|threads").
#[test]
#[ignore = "run by the crash tests as a child process"]
fn child_writer() {
    let Ok(spec) = std::env::var(ENV) else {
        return;
    };
    let parts: Vec<&str> = spec.split('|').collect();
    let (dir, seed, round, sync, threads) = (
        parts[0],
        parts[1].parse::<u64>().unwrap(),
        parts[2].parse::<u64>().unwrap(),
        parts[3] == "sync",
        parts[4].parse::<u64>().unwrap(),
    );
    let db = Db::open(dir, options(sync)).unwrap();
    println!("OPEN");
    std::thread::scope(|s| {
        for t in 0..threads {
            let db = &db;
            s.spawn(move || write_ops(db, seed, round, t));
        }
    });
    db.close().unwrap();
}

/// Writer thread `t`'s operations, each acknowledged on stdout once the call
/// returned.
fn write_ops(db: &Db, seed: u64, round: u64, t: u64) {
    let mut rng = op_rng(seed, round, t);
    for i in 0..CHILD_MAX_OPS {
        let op = gen_op(&mut rng, t, round, i);
        match op.as_slice() {
            [Write::Put(k, v)] => db.put(k, v).unwrap(),
            [Write::Delete(k)] => db.delete(k).unwrap(),
            _ => {
                let mut b = WriteBatch::new();
                for w in &op {
                    match w {
                        Write::Put(k, v) => b.put(k, v),
                        Write::Delete(k) => b.delete(k),
                        Write::DeleteRange(s, e) => b.delete_range(s, e),
                    }
                }
                db.write(b).unwrap();
            }
        }
        // Acknowledged: the call returned.
        println!("ACK {t} {i}");
    }
}

/// Runs the child on `dir` and kills it; returns, per writer thread, the
/// index of its last acknowledged op (`None` if none was).
fn crash_round(
    dir: &Path,
    seed: u64,
    round: u64,
    sync: bool,
    threads: u64,
    rng: &mut SplitMix64,
) -> Vec<Option<u64>> {
    let mode = if sync { "sync" } else { "nosync" };
    let spec = format!("{}|{seed}|{round}|{mode}|{threads}", dir.display());
    let mut child = Child::spawn("child_writer", &[(ENV, spec)]);
    // When to kill: after a random number of acknowledgements, or (one round
    // in eight) after a short random delay, which may fall inside open and
    // recovery.
    let kill_after_acks = match rng.below(8) {
        0 => None,
        1 => Some(rng.below(5)),
        _ => Some(rng.below(1500)),
    };
    let mut last_ack = vec![None; threads as usize];
    let mut acks = 0;
    let mut record = |line: &str, last_ack: &mut Vec<Option<u64>>| {
        if let Some(a) = line.strip_prefix("ACK ") {
            let (t, i) = a.split_once(' ').unwrap();
            let (t, i): (usize, u64) = (t.parse().unwrap(), i.parse().unwrap());
            // A thread's acknowledgements come in order.
            assert!(last_ack[t].is_none_or(|l| l < i));
            last_ack[t] = Some(i);
            acks += 1;
        }
        acks
    };
    match kill_after_acks {
        None => {
            std::thread::sleep(Duration::from_micros(rng.below(20_000)));
        }
        Some(n) => {
            while let Some(line) = child.next_line() {
                if record(&line, &mut last_ack) >= n {
                    break;
                }
            }
        }
    }
    let killed = child.kill();
    // Acknowledgements printed before the kill still count.
    for line in &killed.rest {
        record(line, &mut last_ack);
    }
    let (status, err) = (killed.status, killed.stderr);
    // The child must have been killed, not have failed by itself.
    assert!(
        status.code().is_none() || status.success(),
        "child exited with {status}: {err}"
    );
    assert!(
        !err.contains("panicked"),
        "child panicked (seed {seed} round {round}): {err}"
    );
    last_ack
}

/// Checks the reopened store: every acknowledged op applied, each writer
/// thread's in-flight op applied entirely or not at all, nothing else.
/// Returns the store's state.
fn check_recovered(db: &Db, model: &Model, in_flight: &[Op], ctx: &str) -> Model {
    let got: Model = db
        .scan(..)
        .map(|r| {
            let (k, v) = r.unwrap_or_else(|e| panic!("{ctx}: scan: {e}"));
            (k.to_vec(), v.to_vec())
        })
        .collect();
    for (t, op) in in_flight.iter().enumerate() {
        let of = |m: &Model| -> Model {
            m.iter()
                .filter(|(k, _)| thread_of(k) == t as u64)
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        };
        let mut with_flight = model.clone();
        apply(&mut with_flight, op);
        check_thread(
            &of(&got),
            &of(model),
            &of(&with_flight),
            &format!("{ctx} thread {t}"),
        );
    }
    // Nothing outside the writers' keys.
    assert!(
        got.keys()
            .all(|k| (thread_of(k) as usize) < in_flight.len()),
        "{ctx}: keys of no writer"
    );
    // Point lookups agree with the scan (and check keys outside it).
    for t in 0..in_flight.len() as u64 {
        for i in 0..KEY_SPACE {
            let k = thread_key(t, i);
            let g = db
                .get(&k)
                .unwrap_or_else(|e| panic!("{ctx}: get: {e}"))
                .map(|v| v.to_vec());
            assert_eq!(g.as_ref(), got.get(&k), "{ctx}: get vs scan of key {t}/{i}");
        }
    }
    got
}

/// One writer's keys: recovered state `got` is the acknowledged `model` or
/// `model` plus the in-flight op.
fn check_thread(got: &Model, model: &Model, with_flight: &Model, ctx: &str) {
    if got != model && got != with_flight {
        let diff: Vec<String> = got
            .keys()
            .chain(model.keys())
            .chain(with_flight.keys())
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .filter(|k| {
                let g = got.get(*k);
                g != model.get(*k) || g != with_flight.get(*k)
            })
            .take(10)
            .map(|k| {
                let show = |v: Option<&Vec<u8>>| {
                    v.map(|v| String::from_utf8_lossy(&v[..v.len().min(40)]).into_owned())
                };
                format!(
                    "{}: got {:?}, acked {:?}, with in-flight {:?}",
                    String::from_utf8_lossy(k),
                    show(got.get(k)),
                    show(model.get(k)),
                    show(with_flight.get(k))
                )
            })
            .collect();
        panic!("{ctx}: recovered state is neither acked nor acked+in-flight:\n{diff:#?}");
    }
}

fn crash_test(sync: bool, threads: u64, stores: u64, rounds: u64) {
    let start = Instant::now();
    let mut killed_mid_run = 0;
    for s in 0..stores {
        let seed = 0xC0A5_0000 + s + if sync { 0 } else { 1000 } + threads * 10_000;
        let dir = scratch_dir();
        let mut rng = SplitMix64::new(seed);
        let mut model = Model::new();
        for round in 0..rounds {
            let ctx = format!("seed {seed:#x} round {round} sync {sync} threads {threads}");
            let last_ack = crash_round(dir.path(), seed, round, sync, threads, &mut rng);
            // Replay each thread's ops: acknowledged ones go into the model,
            // the next one may have been in flight.
            let mut in_flight = Vec::new();
            for (t, last) in last_ack.iter().enumerate() {
                let t = t as u64;
                let mut ops = op_rng(seed, round, t);
                let acked = last.map_or(0, |i| i + 1);
                for i in 0..acked {
                    apply(&mut model, &gen_op(&mut ops, t, round, i));
                }
                in_flight.push(gen_op(&mut ops, t, round, acked));
            }
            if last_ack.iter().any(Option::is_some) {
                killed_mid_run += 1;
            }
            let db = Db::open(dir.path(), options(sync))
                .unwrap_or_else(|e| panic!("{ctx}: reopen after kill: {e}"));
            db.verify().unwrap_or_else(|e| panic!("{ctx}: verify: {e}"));
            model = check_recovered(&db, &model, &in_flight, &ctx);
            db.close().unwrap();
        }
        // A clean reopen sees the same state.
        let db = Db::open(dir.path(), options(sync)).unwrap();
        let none = vec![Vec::new(); threads as usize];
        check_recovered(&db, &model, &none, &format!("seed {seed:#x} final"));
    }
    assert!(killed_mid_run >= (stores * rounds) as usize / 2);
    eprintln!(
        "{} crash rounds (sync {sync}, {threads} writer threads), {killed_mid_run} after some acks, in {:?}",
        stores * rounds,
        start.elapsed()
    );
}

/// Stores and crash rounds per store: 30 kills, or 200 in long mode.
fn size() -> (u64, u64) {
    if common::long_mode() {
        (50, 4)
    } else {
        (10, 3)
    }
}

#[test]
fn crash_sync_writes() {
    let (stores, rounds) = size();
    crash_test(true, 1, stores, rounds);
}

#[test]
fn crash_sync_writes_concurrent_writers() {
    // Four writers: their batches are committed in groups.
    let (stores, rounds) = size();
    crash_test(true, 4, stores, rounds);
}

#[test]
fn crash_without_sync_keeps_acknowledged_writes() {
    // Without fsync the promise is weaker against power loss, but a killed
    // process loses nothing: every acknowledged record reached the OS.
    let (stores, rounds) = size();
    crash_test(false, 1, stores, rounds);
}

#[test]
fn crash_without_sync_concurrent_writers() {
    let (stores, rounds) = size();
    crash_test(false, 4, stores, rounds);
}
