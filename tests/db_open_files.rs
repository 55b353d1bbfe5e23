//! A store of many more tables than the process may hold descriptors:
//! `Options::max_open_files` bounds the table files held open, and tables
//! past it reopen their files when a read needs them. The store runs in a
//! child process whose `RLIMIT_NOFILE` is lowered, so the limit is the
//! operating system's and binds no other test.

#![cfg(target_os = "linux")]

mod common;

use std::collections::BTreeMap;
use std::ops::Bound;

use bloomlsm::{Db, Error, Options, WriteBatch};
use common::child::Child;
use common::keys::key;
use common::model::{self, Model, check_scan};

/// The child's descriptor limit (`RLIMIT_NOFILE`, soft).
const FD_LIMIT: u64 = 64;
/// The store's bound, the default under `FD_LIMIT`: 16 descriptors for its
/// other files at two compaction shards, 24 table files.
const MAX_OPEN_FILES: usize = 40;
/// Keys written: about 200 tables of 4 to 8 KiB.
const KEYS: u64 = 20_000;
const ENV: &str = "BLOOMLSM_OPEN_FILES_CHILD";

fn options(max_open_files: usize) -> Options {
    common::options::manual()
        .write_buffer_size(8 << 10)
        .target_file_size(4096)
        .level1_max_bytes(16 << 10)
        .dynamic_level_bytes(false)
        .level_size_multiplier(4)
        .block_size(1024)
        .max_subcompactions(2)
        .max_open_files(max_open_files)
}

/// 90 bytes that do not compress, so tables hold as few keys as the
/// options say.
fn value(i: u64, round: u64) -> Vec<u8> {
    let mut v = format!("value-{i}-{round}-").into_bytes();
    let mut x = (i << 8 | round) ^ 0x9e37_79b9_7f4a_7c15;
    while v.len() < 90 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        v.push(b'a' + (x % 26) as u8);
    }
    v
}

/// Writes keys `0..KEYS` (each seventh deleted again) in batches, keeping
/// the tree settled as it grows.
fn fill(db: &Db, m: &mut Model, round: u64) {
    for start in (0..KEYS).step_by(100) {
        let mut b = WriteBatch::new();
        for i in start..start + 100 {
            let v = value(i, round);
            b.put(key(i), &v);
            model::apply(m, &key(i), Some(&v));
            if i % 7 == round % 7 {
                b.delete(key(i));
                model::apply(m, &key(i), None);
            }
        }
        db.write(b).unwrap();
        if start % 1000 == 0 {
            db.maintain().unwrap();
        }
    }
    db.maintain().unwrap();
}

/// Every key's get, a multi_get of all of them with absent keys between,
/// forward and backward scans: all as the model says.
fn check_reads(db: &Db, m: &Model, ctx: &str) {
    for i in 0..KEYS + 10 {
        let want = m.get(&key(i)).cloned();
        let got = db.get(key(i)).unwrap().map(|v| v.to_vec());
        assert_eq!(got, want, "{ctx}: get of key {i}");
    }
    let keys: Vec<Vec<u8>> = (0..KEYS)
        .flat_map(|i| {
            [
                key(i),
                format!("{}~absent", String::from_utf8(key(i)).unwrap()).into_bytes(),
            ]
        })
        .collect();
    let got = db.multi_get(&keys).unwrap();
    for (k, v) in keys.iter().zip(got) {
        assert_eq!(v.map(|v| v.to_vec()), m.get(k).cloned(), "{ctx}: multi_get");
    }
    check_scan(db, m, &Bound::Unbounded, &Bound::Unbounded, ctx);
    check_scan(
        db,
        m,
        &Bound::Included(key(KEYS / 3)),
        &Bound::Excluded(key(KEYS / 2)),
        ctx,
    );
    let backward: Vec<Vec<u8>> = db.scan(..).rev().map(|r| r.unwrap().0.to_vec()).collect();
    let want: Vec<Vec<u8>> = m.keys().rev().cloned().collect();
    assert_eq!(backward, want, "{ctx}: backward scan");
}

fn tables_in(dir: &str) -> usize {
    std::fs::read_dir(dir)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "sst")
        })
        .count()
}

/// The child: lowers its descriptor limit, then builds, reads, compacts
/// and reopens a store of ten times more tables than the store may hold
/// open. Prints `DONE <reopens>` at the end.
#[test]
#[ignore = "run by stores_of_more_tables_than_the_process_may_open as a child process"]
fn child_under_a_descriptor_limit() {
    let Ok(dir) = std::env::var(ENV) else {
        return;
    };
    let limit = libc::rlimit {
        rlim_cur: FD_LIMIT,
        rlim_max: FD_LIMIT,
    };
    // SAFETY: a plain system call on a struct of ours.
    assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &limit) }, 0);
    // The default stays below the limit, with room for the process's
    // other descriptors: the bound this test sets.
    let default = Options::default().max_open_files;
    assert_eq!(default, bloomlsm::options::max_open_files_under(FD_LIMIT));
    assert_eq!(default, MAX_OPEN_FILES);

    let mut m: Model = BTreeMap::new();
    let db = Db::open(&dir, options(MAX_OPEN_FILES)).unwrap();
    fill(&db, &mut m, 0);
    let tables = db.file_stats().len();
    assert!(tables > 2 * FD_LIMIT as usize, "only {tables} tables");
    let capacity = options(MAX_OPEN_FILES).table_cache_capacity();
    assert!(db.stats().table_files_open as usize <= capacity);
    check_reads(&db, &m, "built");
    assert!(db.stats().table_files_open as usize <= capacity);

    // An iterator and a snapshot taken before every table is replaced:
    // their tables' files outlive the compaction, which reopens them.
    let before = m.clone();
    let snapshot = db.snapshot();
    let mut old = db.scan(..);
    let first: Vec<_> = old
        .by_ref()
        .take(10)
        .map(|r| r.unwrap().0.to_vec())
        .collect();
    fill(&db, &mut m, 1);
    db.compact().unwrap();
    let rest: Vec<Vec<u8>> = old.map(|r| r.unwrap().0.to_vec()).collect();
    let seen: Vec<Vec<u8>> = first.into_iter().chain(rest).collect();
    assert_eq!(seen, before.keys().cloned().collect::<Vec<_>>());
    for i in (0..KEYS).step_by(97) {
        let got = snapshot.get(key(i)).unwrap().map(|v| v.to_vec());
        assert_eq!(got, before.get(&key(i)).cloned(), "snapshot get of key {i}");
    }
    drop(snapshot);
    // The replaced tables are gone once nothing holds them.
    assert_eq!(tables_in(&dir), db.file_stats().len());
    check_reads(&db, &m, "compacted");
    let reopens = db.stats().table_reopens;
    assert!(reopens > 0);
    db.close().unwrap();

    // Without the bound the tables do not fit under the limit: an error,
    // not a panic, and the store is left as it was.
    let tables = tables_in(&dir);
    match Db::open(&dir, options(bloomlsm::options::DEFAULT_MAX_OPEN_FILES)) {
        Err(Error::Io { source, .. }) => assert_eq!(source.raw_os_error(), Some(libc::EMFILE)),
        Err(e) => panic!("not EMFILE: {e}"),
        Ok(_) => panic!("{tables} tables opened under a limit of {FD_LIMIT} descriptors"),
    }
    assert_eq!(tables_in(&dir), tables);

    // Reopened with the default bound and background compaction: more
    // writes, flushes and compactions on the store's threads.
    let db = Db::open(&dir, options(default).background_compaction(true)).unwrap();
    check_reads(&db, &m, "reopened");
    fill(&db, &mut m, 2);
    db.compact().unwrap();
    check_reads(&db, &m, "written again");
    let reopens = db.stats().table_reopens;
    assert!(reopens > 0);
    db.close().unwrap();
    println!("DONE {reopens}");
}

#[test]
fn stores_of_more_tables_than_the_process_may_open() {
    let dir = common::scratch_dir();
    let child = Child::spawn(
        "child_under_a_descriptor_limit",
        &[(ENV, dir.path().display().to_string())],
    );
    let done = child.wait();
    assert!(
        done.status.success(),
        "child failed: {}\n{}",
        done.status,
        done.stderr
    );
    let reopens: u64 = done
        .rest
        .iter()
        .find_map(|l| l.split("DONE ").nth(1))
        .unwrap_or_else(|| panic!("no DONE line: {:?}", done.rest))
        .trim()
        .parse()
        .unwrap();
    assert!(reopens > 0);
}

#[test]
fn max_open_files_below_the_minimum_is_refused_at_open() {
    let dir = common::scratch_dir();
    let opts = options(0);
    let min = opts.min_max_open_files();
    for n in [0, 1, min - 1] {
        match Db::open(dir.path(), options(n)) {
            Err(Error::InvalidArgument(what)) => {
                assert!(what.contains(&format!("at least {min}")), "{what}")
            }
            Err(e) => panic!("{n}: {e}"),
            Ok(_) => panic!("{n} accepted"),
        }
    }
    // Nothing was created by the refused opens.
    assert!(std::fs::read_dir(dir.path()).unwrap().next().is_none());
    Db::open(dir.path(), options(min)).unwrap().close().unwrap();
}
