//! A real crash test of the write-ahead log.
//!
//! The parent test re-executes this test binary as a child process running only
//! the `#[ignore]`d `crash_child` test. The child appends batches (puts,
//! deletes, range deletes) to a WAL and prints `ACK <seq>` after each `append`
//! returns. The parent SIGKILLs it after a
//! pseudo-random number of acknowledgements (fixed seed), replays the WAL and
//! checks that every acknowledged batch is present and intact, in order, and
//! that nothing garbled appears — only a torn tail may be dropped.
//!
//! Both sync modes are exercised: each promises survival of `kill -9` (sync
//! mode also of power loss, which a test cannot produce).

use std::io::Write;
use std::path::Path;

use bloomlsm::db::wal::{Wal, replay_all, wal_path};
use bloomlsm::db::{BatchOp, WriteBatch};

mod common;
use common::child::Child;

const ENV_DIR: &str = "BLOOMLSM_CRASH_DIR";
const ENV_SYNC: &str = "BLOOMLSM_CRASH_SYNC";
const RUNS: u64 = 40;
const SEED: u64 = 0x5eed_c0ff_ee00_0001;

fn xorshift(x: &mut u64) -> u64 {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    *x
}

/// The batch with first sequence `seq`, a pure function of `seq` so the
/// parent can rebuild it: 1–4 operations, values from a few bytes to ~50 KiB
/// (so some records span several 32 KiB log blocks and a kill can land in the
/// middle of one write).
fn batch_for(seq: u64) -> WriteBatch {
    let mut x = seq.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let mut b = WriteBatch::new();
    let n = 1 + xorshift(&mut x) % 4;
    for i in 0..n {
        let key = format!("key-{seq}-{i}");
        let dice = xorshift(&mut x);
        if dice.is_multiple_of(7) {
            b.delete_range(key.as_bytes(), format!("key-{seq}-{i}~").as_bytes());
        } else if dice.is_multiple_of(5) {
            b.delete(key.as_bytes());
        } else {
            let len = match xorshift(&mut x) % 10 {
                0 => 30_000 + (xorshift(&mut x) % 20_000) as usize,
                1..=3 => (xorshift(&mut x) % 4000) as usize,
                _ => (xorshift(&mut x) % 100) as usize,
            };
            let fill = (seq as u8).wrapping_add(i as u8);
            let value: Vec<u8> = (0..len).map(|j| fill.wrapping_add(j as u8)).collect();
            b.put(key.as_bytes(), &value);
        }
    }
    b.set_sequence(seq);
    b
}

/// The child: appends batches until killed (bounded so that an orphaned child
/// cannot run forever).
#[test]
#[ignore = "run only as the child process of crash_tests"]
fn crash_child() {
    let Ok(dir) = std::env::var(ENV_DIR) else {
        return;
    };
    let sync = std::env::var(ENV_SYNC).as_deref() == Ok("1");
    let mut wal = Wal::create(Path::new(&dir), 1).unwrap();
    let mut out = std::io::stdout().lock();
    let mut seq = 1u64;
    for _ in 0..100_000 {
        let b = batch_for(seq);
        wal.append_batch(&b, sync).unwrap();
        writeln!(out, "ACK {seq}").unwrap();
        out.flush().unwrap();
        seq += b.len() as u64;
    }
}

/// `ACK <seq>` anywhere in a line: libtest prints `test crash_child ... `
/// without a newline, so the first ack shares its line.
fn parse_ack(line: &str) -> Option<u64> {
    let (_, rest) = line.split_once("ACK ")?;
    Some(rest.trim().parse().expect("well-formed ack"))
}

/// Returns (acked, replayed, tail dropped?).
fn one_run(run: u64, kill_after: u64, delay_us: u64, sync: bool) -> (usize, usize, bool) {
    let dir = tempfile::tempdir().unwrap();
    let env = [
        (ENV_DIR, dir.path().display().to_string()),
        (ENV_SYNC, if sync { "1" } else { "0" }.to_string()),
    ];
    let mut child = Child::spawn("crash_child", &env);
    let mut acked = Vec::new();
    while (acked.len() as u64) < kill_after {
        let line = child
            .next_line()
            .unwrap_or_else(|| panic!("run {run}: child ended before {kill_after} acks"));
        if let Some(seq) = parse_ack(&line) {
            acked.push(seq);
        }
    }
    // Let the child run on a little so the kill lands inside a later write or
    // fdatasync (Linux stops a large write between pages on SIGKILL, so a
    // record can really be torn).
    std::thread::sleep(std::time::Duration::from_micros(delay_us));
    // Acks printed before the kill that we had not read yet count too.
    for line in child.kill().rest {
        if let Some(seq) = parse_ack(&line) {
            acked.push(seq);
        }
    }

    let (batches, report) = replay_all(&wal_path(dir.path(), 1), false)
        .unwrap_or_else(|e| panic!("run {run}: replay failed: {e}"));
    assert!(
        batches.len() >= acked.len(),
        "run {run}: {} acked, {} replayed",
        acked.len(),
        batches.len()
    );
    // Replayed batches are exactly the deterministic sequence, in order: the
    // acknowledged ones plus possibly one or more written but not yet acked.
    let mut seq = 1;
    for (i, got) in batches.iter().enumerate() {
        let want = batch_for(seq);
        assert_eq!(got.sequence(), seq, "run {run}: batch {i}");
        assert_eq!(got, &want, "run {run}: batch {i} garbled");
        let ops: Vec<BatchOp<'_>> = got.iter().collect();
        assert_eq!(ops, want.iter().collect::<Vec<_>>());
        if let Some(&a) = acked.get(i) {
            assert_eq!(a, seq, "run {run}: ack {i}");
        }
        seq += got.len() as u64;
    }
    assert_eq!(report.records as usize, batches.len());
    assert!(report.salvaged.is_empty());
    if let Some(t) = report.tail_dropped {
        assert_eq!(t.offset, report.valid_end, "run {run}");
    }
    (acked.len(), batches.len(), report.tail_dropped.is_some())
}

#[test]
fn crash_tests() {
    let mut x = SEED;
    let start = std::time::Instant::now();
    let (mut acked, mut replayed, mut tails) = (0, 0, 0);
    for run in 0..RUNS {
        let kill_after = 1 + xorshift(&mut x) % 60;
        let delay_us = xorshift(&mut x) % 3000;
        let (a, r, t) = one_run(run, kill_after, delay_us, run.is_multiple_of(2));
        acked += a;
        replayed += r;
        tails += t as usize;
    }
    eprintln!(
        "{RUNS} crash runs in {:?}: {acked} batches acked, {replayed} replayed, \
         {tails} torn tails dropped",
        start.elapsed()
    );
}
