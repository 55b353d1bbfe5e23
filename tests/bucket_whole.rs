//! A store kept wholly in a bucket (`BucketConfig::whole_store`) on a real
//! S3 server (`common::bucket`), with writers and readers in processes of
//! their own, each with a local directory and cache of its own (as on
//! other machines; the test binary runs itself again as the child):
//!
//! - two writers started at once on one store, again and again: one is
//!   fenced out (`Error::Fenced`) and stops; the other holds the store,
//!   with the higher epoch; every write either acknowledged is in the
//!   store, and of each writer's unacknowledged writes at most the one in
//!   flight;
//! - a writer killed with SIGKILL again and again, a new one opening in a
//!   fresh directory each time, while two reader processes refresh and
//!   read: no synced write acknowledged is lost, what survives of each
//!   writer is a prefix of its writes, no reader sees half a batch or a
//!   state older than one it saw;
//! - checkpoints kept by the writer and by a reader while four threads
//!   write: each opens whole, as of one moment (each thread's writes a
//!   prefix, none half), the writer's holding every write acknowledged
//!   before it and never going back, after every table they name was
//!   replaced in the store;
//! - a clone of a checkpoint under another prefix: writable on its own,
//!   reading the source's tables without deleting one, and a clone of the
//!   clone reading through both.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::mpsc;
use std::time::Duration;

use bloomlsm::fs::bucket::{BucketConfig, BucketFs};
use bloomlsm::workload::SplitMix64;
use bloomlsm::{Db, Options, WriteBatch, WriteOptions};

mod common;
use common::bucket::{config, prefix};
use common::child::Child;

const ENV: &str = "BLOOMLSM_WHOLE_CHILD";
/// Keys the batches cycle over; a batch writes `last` and one of them.
const SLOTS: u64 = 50;

fn whole(dir: &Path, cache: &Path, prefix: &str) -> BucketConfig {
    config(dir, cache, prefix)
        .whole_store(true)
        .log_flush_interval(Duration::from_millis(20))
        .delete_grace(Duration::from_secs(30))
}

fn options(fs: Arc<BucketFs>) -> Options {
    Options::default()
        .write_buffer_size(32 << 10)
        .target_file_size(16 << 10)
        .level1_max_bytes(64 << 10)
        .l0_compaction_trigger(2)
        .fs(fs)
}

/// Writer `tag`'s operation `i` is a batch of `last` = `n`, slot `n %
/// SLOTS` = `n` and `w/TAG/I`, with `n` = `base + i` (bases grow from one
/// writer to the next, so `last` only grows).
fn batch(tag: &str, base: u64, i: u64) -> WriteBatch {
    let n = format!("{:020}", base + i);
    let mut b = WriteBatch::new();
    b.put("last", &n);
    b.put(format!("slot{:03}", (base + i) % SLOTS), &n);
    b.put(format!("w/{tag}/{i:06}"), &n);
    b
}

/// Whether writer `seed`'s operation `i` is synced (one in three; every
/// one with `seed` 0).
fn synced(seed: u64, i: u64) -> bool {
    seed == 0 || SplitMix64::new(seed ^ i.wrapping_mul(0x9E37)).below(3) == 0
}

/// The child: `writer|dir|cache|prefix|tag|base|seed` or
/// `reader|dir|cache|prefix|stopfile`.
#[test]
#[ignore = "run by the tests below as a child process"]
fn whole_store_child() {
    let Ok(spec) = std::env::var(ENV) else {
        return;
    };
    let p: Vec<&str> = spec.split('|').collect();
    let (dir, cache, prefix) = (Path::new(p[1]), Path::new(p[2]), p[3]);
    // The harness's "test ... " has no line end: the first line is ours.
    println!();
    match p[0] {
        "writer" => {
            let (tag, base, seed) = (p[4], p[5].parse().unwrap(), p[6].parse().unwrap());
            let fs = Arc::new(BucketFs::open(whole(dir, cache, prefix)).unwrap());
            let db = match Db::open(dir, options(fs.clone())) {
                Ok(db) => db,
                Err(e) if e.is_fenced() => {
                    println!("FENCED at open: {e}");
                    return;
                }
                Err(e) => panic!("open: {e}"),
            };
            println!("OPEN {}", fs.writer_epoch().unwrap());
            for i in 0..1_000_000u64 {
                let sync = synced(seed, i);
                match db.write_with(batch(tag, base, i), WriteOptions::default().sync(sync)) {
                    Ok(()) => println!("ACK {i} {}", u8::from(sync)),
                    Err(e) if e.is_fenced() => {
                        println!("FENCED {e}");
                        return;
                    }
                    Err(e) => panic!("write {i}: {e}"),
                }
            }
        }
        "reader" => {
            let stop = Path::new(p[4]);
            let fs = Arc::new(BucketFs::open(whole(dir, cache, prefix).cache_bytes(0)).unwrap());
            let db = Db::open_read_only(dir, options(fs)).unwrap();
            let mut seen = 0u64;
            let mut reads = 0u64;
            while !stop.exists() {
                if let Err(e) = db.refresh() {
                    println!("REFRESH-ERROR {e}");
                    continue;
                }
                // One state: an iterator holds it, so `last` and its slot
                // are read from the same moment.
                let state: Vec<(Vec<u8>, Vec<u8>)> = db
                    .scan(..)
                    .map(|e| e.map(|(k, v)| (k.to_vec(), v.to_vec())))
                    .filter(|e| e.as_ref().map_or(true, |(k, _)| !k.starts_with(b"w/")))
                    .collect::<Result<_, _>>()
                    .unwrap_or_else(|e| panic!("scan: {e}"));
                let get = |k: &[u8]| state.iter().find(|(x, _)| x == k).map(|(_, v)| v.clone());
                let Some(last) = get(b"last") else { continue };
                let n: u64 = String::from_utf8(last.clone()).unwrap().parse().unwrap();
                if n < seen {
                    println!("BACK {n} after {seen}");
                }
                let slot = format!("slot{:03}", n % SLOTS);
                if get(slot.as_bytes()).as_deref() != Some(&last[..]) {
                    println!("TORN last {n}, {slot} = {:?}", get(slot.as_bytes()));
                }
                seen = n;
                reads += 1;
                if reads.is_multiple_of(10) {
                    println!("READ {reads} {seen}");
                }
            }
            println!("DONE {reads} {seen}");
        }
        r => panic!("role {r}"),
    }
}

/// A child and its lines, read on a thread of their own.
struct Running {
    child: Child,
    rx: mpsc::Receiver<String>,
    got: Vec<String>,
}

impl Running {
    fn spawn(spec: String) -> Running {
        let mut child = Child::spawn("whole_store_child", &[(ENV, spec)]);
        let rx = child.lines_on_a_thread();
        Running {
            child,
            rx,
            got: Vec::new(),
        }
    }

    /// Takes the lines printed so far; whether the child has closed its
    /// output.
    fn poll(&mut self) -> bool {
        loop {
            match self.rx.try_recv() {
                Ok(l) => self.got.push(l),
                Err(mpsc::TryRecvError::Empty) => return false,
                Err(mpsc::TryRecvError::Disconnected) => return true,
            }
        }
    }

    /// Kills the child (if it still runs) and takes everything it printed;
    /// its stderr.
    fn finish(self) -> (Vec<String>, String) {
        let Running { child, rx, mut got } = self;
        let k = child.kill();
        while let Ok(l) = rx.recv_timeout(Duration::from_secs(5)) {
            got.push(l);
        }
        got.extend(k.rest);
        (got, k.stderr)
    }
}

/// The operations a writer acknowledged, and whether each was synced.
fn acks(lines: &[String]) -> Vec<(u64, bool)> {
    lines
        .iter()
        .filter_map(|l| l.strip_prefix("ACK "))
        .map(|r| {
            let (i, s) = r.split_once(' ').unwrap();
            (i.parse().unwrap(), s == "1")
        })
        .collect()
}

fn fenced(lines: &[String]) -> bool {
    lines.iter().any(|l| l.starts_with("FENCED"))
}

/// The writer's epoch, if it opened.
fn epoch(lines: &[String]) -> Option<u64> {
    lines
        .iter()
        .find_map(|l| l.strip_prefix("OPEN ").map(|e| e.parse().unwrap()))
}

fn writer_spec(root: &Path, prefix: &str, tag: &str, base: u64, seed: u64) -> String {
    let d = root.join(tag);
    format!(
        "writer|{}|{}|{prefix}|{tag}|{base}|{seed}",
        d.join("db").display(),
        d.join("cache").display()
    )
}

/// The `w/TAG/` operations the store holds.
fn written(db: &Db, tag: &str) -> Vec<u64> {
    db.scan_prefix(format!("w/{tag}/"))
        .map(|e| {
            let (k, _) = e.unwrap();
            let k = String::from_utf8(k.to_vec()).unwrap();
            k.rsplit('/').next().unwrap().parse().unwrap()
        })
        .collect()
}

/// Opens the store in a fresh directory, as the next writer would.
fn open_fresh(root: &Path, prefix: &str, name: &str) -> (Db, PathBuf) {
    let d = root.join(name);
    let fs = Arc::new(BucketFs::open(whole(&d.join("db"), &d.join("cache"), prefix)).unwrap());
    (Db::open(d.join("db"), options(fs)).unwrap(), d)
}

#[test]
fn writers_started_together_leave_one_holder_and_every_acknowledged_write() {
    let rounds = if common::long_mode() { 12 } else { 4 };
    let root = common::scratch_dir();
    let prefix = prefix("whole-fence");
    let mut acked: Vec<(String, Vec<(u64, bool)>)> = Vec::new();
    let mut running_fenced = 0;
    for r in 0..rounds {
        let tags = [format!("r{r}a"), format!("r{r}b")];
        // Even rounds start both at once; odd ones start the second once
        // the first is writing, so that a running writer is fenced.
        let spawn = |j: usize| {
            Running::spawn(writer_spec(
                root.path(),
                &prefix,
                &tags[j],
                (r * 2 + j as u64) << 32,
                0,
            ))
        };
        let mut w = vec![spawn(0)];
        if r % 2 == 1 {
            while acks(&w[0].got).len() < 20 {
                assert!(!w[0].poll(), "round {r}: the first writer ended");
                std::thread::sleep(Duration::from_millis(5));
            }
        }
        w.push(spawn(1));
        // Until one is fenced and the other has gone on writing (or both
        // have ended: the checks below then say what went wrong).
        loop {
            let closed: Vec<bool> = w.iter_mut().map(Running::poll).collect();
            let f: Vec<bool> = w.iter().map(|x| fenced(&x.got)).collect();
            let done = (0..2).any(|j| f[j] && !f[1 - j] && acks(&w[1 - j].got).len() >= 40);
            if done || closed.iter().all(|&c| c) {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let mut outs = Vec::new();
        for run in w {
            let (got, stderr) = run.finish();
            assert!(!stderr.contains("panicked"), "round {r}: {stderr}");
            outs.push(got);
        }
        let f: Vec<bool> = outs.iter().map(|g| fenced(g)).collect();
        assert_eq!(
            f.iter().filter(|&&f| f).count(),
            1,
            "round {r}: exactly one writer is fenced: {:?}",
            outs.iter()
                .map(|g| g
                    .iter()
                    .filter(|l| !l.starts_with("ACK"))
                    .collect::<Vec<_>>())
                .collect::<Vec<_>>()
        );
        let (loser, winner) = if f[0] { (0, 1) } else { (1, 0) };
        if let Some(e) = epoch(&outs[loser]) {
            assert!(
                epoch(&outs[winner]).unwrap() > e,
                "round {r}: the holder has the newer epoch"
            );
        }
        if r % 2 == 1 {
            assert!(
                f[0] && !acks(&outs[0]).is_empty(),
                "round {r}: the running writer is fenced"
            );
            running_fenced += 1;
        }
        for (j, g) in outs.iter().enumerate() {
            acked.push((tags[j].clone(), acks(g)));
        }
    }
    let (db, _) = open_fresh(root.path(), &prefix, "check");
    let mut total = 0;
    for (tag, acks) in &acked {
        let have = written(&db, tag);
        let n = acks.len() as u64;
        assert!(
            have.len() as u64 == n || have.len() as u64 == n + 1,
            "{tag}: {} acknowledged, {} in the store",
            n,
            have.len()
        );
        assert_eq!(
            have,
            (0..have.len() as u64).collect::<Vec<_>>(),
            "{tag}: a prefix"
        );
        total += n;
    }
    assert!(total > 0);
    eprintln!(
        "whole fence: {rounds} rounds ({running_fenced} fencing a running writer), {total} \
         acknowledged writes kept"
    );
    db.close().unwrap();
}

#[test]
fn killed_writers_lose_no_synced_write_and_readers_never_see_half_or_the_past() {
    let rounds = if common::long_mode() { 30 } else { 8 };
    let root = common::scratch_dir();
    let prefix = prefix("whole-kill");
    let stop = root.path().join("stop");
    // The store exists before the readers open it.
    open_fresh(root.path(), &prefix, "first").0.close().unwrap();
    let readers: Vec<Running> = (0..2)
        .map(|j| {
            let d = root.path().join(format!("reader{j}"));
            Running::spawn(format!(
                "reader|{}|{}|{prefix}|{}",
                d.join("db").display(),
                d.join("cache").display(),
                stop.display()
            ))
        })
        .collect();
    let mut rng = SplitMix64::new(0xD0_11E5);
    let mut rounds_acked: Vec<(String, Vec<(u64, bool)>)> = Vec::new();
    for r in 0..rounds {
        let tag = format!("k{r}");
        let mut w = Running::spawn(writer_spec(
            root.path(),
            &prefix,
            &tag,
            (r + 1) << 32,
            0xA5 + r,
        ));
        let want = 10 + rng.below(150) as usize;
        while acks(&w.got).len() < want {
            assert!(!w.poll(), "round {r}: the writer ended: {:?}", w.got.last());
            std::thread::sleep(Duration::from_millis(5));
        }
        let (got, stderr) = w.finish();
        assert!(!stderr.contains("panicked"), "round {r}: {stderr}");
        assert!(!fenced(&got), "round {r}: a lone writer was fenced");
        rounds_acked.push((tag, acks(&got)));
    }
    std::fs::write(&stop, b"").unwrap();
    let mut reads = 0;
    for (j, rd) in readers.into_iter().enumerate() {
        let mut rd = rd;
        // It stops at its next look at the stop file.
        while !rd.poll() {
            std::thread::sleep(Duration::from_millis(20));
        }
        let (got, stderr) = rd.finish();
        assert!(!stderr.contains("panicked"), "reader {j}: {stderr}");
        let bad: Vec<&String> = got
            .iter()
            .filter(|l| l.starts_with("BACK") || l.starts_with("TORN"))
            .collect();
        assert!(bad.is_empty(), "reader {j}: {bad:?}");
        let done = got
            .iter()
            .find_map(|l| l.strip_prefix("DONE "))
            .unwrap_or_else(|| panic!("reader {j} did not finish: {:?}", got.last()));
        reads += done.split(' ').next().unwrap().parse::<u64>().unwrap();
    }
    assert!(reads > 0, "the readers read");

    let (db, _) = open_fresh(root.path(), &prefix, "check");
    let (mut synced_kept, mut all) = (0, 0);
    for (tag, acks) in &rounds_acked {
        let have = written(&db, tag);
        assert_eq!(
            have,
            (0..have.len() as u64).collect::<Vec<_>>(),
            "{tag}: a prefix"
        );
        let last_synced = acks
            .iter()
            .filter(|a| a.1)
            .map(|a| a.0 + 1)
            .max()
            .unwrap_or(0);
        assert!(
            have.len() as u64 >= last_synced && have.len() <= acks.len() + 1,
            "{tag}: {} kept, {} acknowledged, through {last_synced} synced",
            have.len(),
            acks.len()
        );
        synced_kept += acks.iter().filter(|a| a.1).count();
        all += acks.len();
    }
    eprintln!(
        "whole kill: {rounds} kills, {all} writes acknowledged ({synced_kept} synced, all kept), \
         {reads} reads by 2 readers"
    );
    db.close().unwrap();
}

/// Thread `t`'s write `i`: `t{t}/last` = `i` and `t{t}/{i}` = `i` padded
/// to 256 bytes (the writes fill memtables, flushes and compactions run),
/// one batch.
fn thread_batch(t: usize, i: u64) -> WriteBatch {
    let mut b = WriteBatch::new();
    b.put(format!("t{t}/last"), format!("{i:08}"));
    b.put(format!("t{t}/{i:08}"), format!("{i:08}{}", "x".repeat(248)));
    b
}

/// Of the store `db`, for each of `threads` writer threads: how many of its
/// writes it holds, checked to be exactly its first ones with `last`
/// naming the newest (a store as of one moment).
fn writes_held(db: &Db, threads: usize) -> Vec<u64> {
    (0..threads)
        .map(|t| {
            let held: Vec<u64> = db
                .scan_prefix(format!("t{t}/0"))
                .map(|e| {
                    String::from_utf8(e.unwrap().1[..8].to_vec())
                        .unwrap()
                        .parse()
                        .unwrap()
                })
                .collect();
            let n = held.len() as u64;
            assert!(
                held.iter().copied().eq(0..n),
                "thread {t}: a hole in {held:?}"
            );
            let last = db.get(format!("t{t}/last")).unwrap();
            let last = last.map(|v| {
                String::from_utf8(v.to_vec())
                    .unwrap()
                    .parse::<u64>()
                    .unwrap()
            });
            assert_eq!(last.map(|l| l + 1), (n > 0).then_some(n), "thread {t}");
            n
        })
        .collect()
}

#[test]
fn checkpoints_taken_under_writers_open_whole_as_of_one_moment() {
    const THREADS: usize = 4;
    let root = tempfile::tempdir().unwrap();
    let prefix = prefix("whole-checkpoints");
    // No grace: a replaced table goes at once, unless a checkpoint keeps it.
    let at = |name: &str| {
        whole(
            &root.path().join(name),
            &root.path().join(format!("{name}-cache")),
            &prefix,
        )
        .delete_grace(Duration::ZERO)
    };
    let w_fs = Arc::new(BucketFs::open(at("writer")).unwrap());
    let db = Db::open(root.path().join("writer"), options(w_fs)).unwrap();
    let r_fs = Arc::new(BucketFs::open(at("reader")).unwrap());
    let acked: Vec<std::sync::atomic::AtomicU64> =
        (0..THREADS).map(|_| Default::default()).collect();
    let stop = std::sync::atomic::AtomicBool::new(false);
    let mut taken = Vec::new();
    std::thread::scope(|s| {
        for (t, acked) in acked.iter().enumerate() {
            let (db, stop) = (&db, &stop);
            s.spawn(move || {
                let mut i = 0;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let sync = WriteOptions::default().sync(i % 4 == 0);
                    db.write_with(thread_batch(t, i), sync).unwrap();
                    i += 1;
                    acked.store(i, std::sync::atomic::Ordering::Release);
                }
            });
        }
        let reader = Db::open_read_only(root.path().join("reader"), options(r_fs.clone())).unwrap();
        for k in 0..6 {
            std::thread::sleep(Duration::from_millis(150));
            let before: Vec<u64> = acked
                .iter()
                .map(|a| a.load(std::sync::atomic::Ordering::Acquire))
                .collect();
            let name = format!("writer-{k}");
            db.checkpoint_in_bucket(&name).unwrap();
            taken.push((name, Some(before)));
            // A reader's checkpoint: what it read, whole.
            reader.refresh().unwrap();
            let name = format!("reader-{k}");
            reader.checkpoint_in_bucket(&name).unwrap();
            taken.push((name, None));
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
    });
    // Every table the checkpoints hold is replaced.
    db.compact().unwrap();
    let total: u64 = acked
        .iter()
        .map(|a| a.load(std::sync::atomic::Ordering::Acquire))
        .sum();
    assert_eq!(writes_held(&db, THREADS).iter().sum::<u64>(), total);
    assert_eq!(db.bucket_checkpoints().unwrap().len(), taken.len());
    let mut previous = vec![0; THREADS];
    for (name, before) in &taken {
        let (fs, dir) = BucketFs::checkpoint_reader(at(&format!("open-{name}")), name).unwrap();
        let cp = Db::open_read_only(&dir, options(fs)).unwrap();
        cp.verify().unwrap();
        let held = writes_held(&cp, THREADS);
        if let Some(before) = before {
            for t in 0..THREADS {
                assert!(
                    held[t] >= before[t],
                    "{name}: thread {t} held {held:?}, acked {before:?}"
                );
                assert!(
                    held[t] >= previous[t],
                    "{name} went back: {held:?} after {previous:?}"
                );
            }
            previous = held;
        }
    }
    db.close().unwrap();
}

#[test]
fn a_clone_of_a_checkpoint_writes_on_its_own_and_never_touches_its_source() {
    let root = tempfile::tempdir().unwrap();
    let (src, dst, dst2) = (
        prefix("clone-source"),
        prefix("clone-copy"),
        prefix("clone-copy-of-copy"),
    );
    let at = |name: &str, prefix: &str| {
        let d = root.path().join(name);
        let c = whole(&d.join("db"), &d.join("cache"), prefix).delete_grace(Duration::ZERO);
        (Arc::new(BucketFs::open(c).unwrap()), d.join("db"))
    };
    let (fs, dir) = at("source", &src);
    let db = Db::open(&dir, options(fs)).unwrap();
    let ks = db.create_keyspace("ks", Options::default()).unwrap();
    for i in 0..3000u64 {
        db.put(format!("key{i:05}"), format!("src-{i}")).unwrap();
    }
    ks.put("k", "ks-src").unwrap();
    db.checkpoint_in_bucket("base").unwrap();
    let source_objects = common::bucket::Bucket::new().all_under(&src);

    let base = whole(&root.path().join("x"), &root.path().join("x-cache"), &src);
    let linked = BucketFs::clone_checkpoint(base.clone(), "base", &dst).unwrap();
    assert!(linked > 1, "{linked}");
    let e = BucketFs::clone_checkpoint(base.clone(), "base", &dst).unwrap_err();
    assert!(e.to_string().contains("holds a store already"), "{e}");
    let e = BucketFs::clone_checkpoint(base.clone(), "base", &src).unwrap_err();
    assert!(e.to_string().contains("source's prefix"), "{e}");

    // The clone: writable on its own; its compactions replace every
    // table it linked, and delete none of them.
    let (cfs, cdir) = at("clone", &dst);
    let clone = Db::open(&cdir, options(cfs)).unwrap();
    assert_eq!(
        clone.get("key01234").unwrap().as_deref(),
        Some(&b"src-1234"[..])
    );
    let cks = clone.keyspace("ks").unwrap();
    assert_eq!(cks.get("k").unwrap().as_deref(), Some(&b"ks-src"[..]));
    // Kept while the clone links only its source's tables.
    clone.checkpoint_in_bucket("early").unwrap();
    for i in 0..3000u64 {
        clone
            .put(format!("key{i:05}"), format!("clone-{i}"))
            .unwrap();
    }
    clone.compact().unwrap();
    cks.put("k", "ks-clone").unwrap();
    cks.compact().unwrap();
    clone.verify().unwrap();
    // The source goes on as it was.
    db.put("key00007", "src-later").unwrap();
    assert_eq!(
        db.get("key01234").unwrap().as_deref(),
        Some(&b"src-1234"[..])
    );
    assert_eq!(
        clone.get("key00007").unwrap().as_deref(),
        Some(&b"clone-7"[..])
    );
    let now = common::bucket::Bucket::new().all_under(&src);
    for o in &source_objects {
        if o.ends_with(".sst") {
            assert!(now.contains(o), "the clone deleted its source's {o}");
        }
    }

    // A clone of the clone, from a checkpoint the clone keeps while it
    // still links the source's tables.
    let (cfs2, cdir2) = at("clone-fresh", &dst);
    drop(cks);
    clone.close().unwrap();
    let clone = Db::open(&cdir2, options(cfs2)).unwrap();
    clone.checkpoint_in_bucket("of-clone").unwrap();
    let from_clone = whole(&root.path().join("y"), &root.path().join("y-cache"), &dst);
    // Its tables are where the clone's links lead: under the source.
    BucketFs::clone_checkpoint(from_clone, "early", &dst2).unwrap();
    let (rfs, rdir) = BucketFs::checkpoint_reader(
        whole(&root.path().join("z"), &root.path().join("z-cache"), &dst),
        "of-clone",
    )
    .unwrap();
    let r = Db::open_read_only(&rdir, options(rfs)).unwrap();
    r.verify().unwrap();
    assert_eq!(
        r.get("key00042").unwrap().as_deref(),
        Some(&b"clone-42"[..])
    );
    let (gfs, gdir) = at("grandchild", &dst2);
    let g = Db::open(&gdir, options(gfs)).unwrap();
    assert_eq!(g.get("key00042").unwrap().as_deref(), Some(&b"src-42"[..]));
    g.put("key00042", "grandchild").unwrap();
    g.compact().unwrap();
    assert_eq!(
        g.get("key00042").unwrap().as_deref(),
        Some(&b"grandchild"[..])
    );
    g.verify().unwrap();
    g.close().unwrap();
    clone.close().unwrap();
    db.close().unwrap();
}
