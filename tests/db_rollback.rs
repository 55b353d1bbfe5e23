//! A damaged store never opens silently into an older state: a
//! MANIFEST, WAL or CURRENT cut at any length, any one file deleted, a file
//! numbered past what the MANIFEST knows. Each trial damages a copy of one
//! closed store and opens it. The open must either
//!
//! - fail with `Corruption` and leave every file exactly as it was (nothing
//!   deleted, nothing rewritten), or
//! - succeed with every acknowledged write — except that a cut WAL may lose
//!   the writes of its cut-off tail, and only as a suffix: the store then
//!   holds exactly the state after some prefix of the log's batches, and a
//!   longer cut never yields a shorter prefix.

use std::path::Path;

use bloomlsm::workload::SplitMix64 as Rng;
use bloomlsm::{Db, Error, WriteBatch};

mod common;
use common::files::{Snapshot, restore, snapshot};
use common::keys::{key5, tagged_value};
use common::levels::full_levels;
use common::model::{self, Model};
use common::options::uncached;
use common::scratch_dir;

/// One write of the final open, kept in the WAL.
enum Op {
    Put(Vec<u8>, Vec<u8>),
    Delete(Vec<u8>),
}

struct Pristine {
    dir: tempfile::TempDir,
    /// Every acknowledged write applied.
    model: Model,
    /// The state before the WAL's batches, and the batches, in log order.
    before_wal: Model,
    wal_batches: Vec<Vec<Op>>,
}

impl Pristine {
    /// The state after the first `j` WAL batches.
    fn after(&self, j: usize) -> Model {
        let mut m = self.before_wal.clone();
        for batch in &self.wal_batches[..j] {
            for op in batch {
                match op {
                    Op::Put(k, v) => {
                        m.insert(k.clone(), v.clone());
                    }
                    Op::Delete(k) => {
                        m.remove(k);
                    }
                }
            }
        }
        m
    }
}

/// Three opens: tables on several levels, a MANIFEST with a snapshot
/// followed by flush and compaction edits, deletions of keys that live in
/// tables, and a last WAL of multi-write batches.
fn build() -> Pristine {
    let dir = scratch_dir();
    let mut rng = Rng::new(0x0051_0711);
    let mut model = Model::new();
    let churn = |db: &Db, rng: &mut Rng, model: &mut Model, n: usize, tag: &str| {
        model::churn(db, model, n, || {
            let k = key5(rng.below(900));
            let v = (rng.below(5) != 0).then(|| tagged_value(rng, &k, tag, 100));
            (k, v)
        });
    };
    for open in 0..2 {
        let db = Db::open(dir.path(), uncached()).unwrap();
        for round in 0..3 {
            churn(&db, &mut rng, &mut model, 500, &format!("s{open}r{round}"));
            db.maintain().unwrap();
        }
        db.close().unwrap();
    }
    let db = Db::open(dir.path(), uncached()).unwrap();
    churn(&db, &mut rng, &mut model, 400, "s2");
    db.flush().unwrap();
    let before_wal = model.clone();
    let mut wal_batches = Vec::new();
    for _ in 0..16 {
        let mut batch = WriteBatch::new();
        let mut ops = Vec::new();
        for _ in 0..1 + rng.below(3) {
            let k = key5(rng.below(900));
            if rng.below(3) == 0 {
                batch.delete(&k);
                model.remove(&k);
                ops.push(Op::Delete(k));
            } else {
                let v = format!("wal{}", rng.below(1000)).into_bytes();
                batch.put(&k, &v);
                model.insert(k.clone(), v.clone());
                ops.push(Op::Put(k, v));
            }
        }
        db.write(batch).unwrap();
        wal_batches.push(ops);
    }
    let s = db.stats();
    assert!(full_levels(&s).len() >= 2, "{s:?}");
    db.close().unwrap();
    Pristine {
        dir,
        model,
        before_wal,
        wal_batches,
    }
}

/// Everything the store returns, by scan and by get of every key either
/// model knows.
fn contents(db: &Db, keys: &[&Vec<u8>]) -> Result<Model, Error> {
    let mut m = Model::new();
    for item in db.scan(..) {
        let (k, v) = item?;
        m.insert(k.to_vec(), v.to_vec());
    }
    for k in keys {
        let got = db.get(k)?;
        if got.as_deref() != m.get(*k).map(Vec::as_slice) {
            panic!(
                "get {} disagrees with scan",
                String::from_utf8_lossy(k.as_slice())
            );
        }
    }
    Ok(m)
}

/// How one damaged open ended.
#[derive(Debug, PartialEq)]
enum Outcome {
    /// Refused with Corruption, every file untouched.
    Refused,
    /// Opened holding this state.
    Opened(Model),
}

/// Writes `damaged` into a fresh directory, opens it, and checks the refusal
/// rule; returns what the open gave.
fn trial(p: &Pristine, damaged: &Snapshot, what: &str) -> Outcome {
    let work = scratch_dir();
    restore(work.path(), damaged);
    match Db::open(work.path(), uncached()) {
        Err(e) => {
            assert!(e.is_corruption(), "{what}: not Corruption: {e}");
            assert!(
                snapshot(work.path()) == *damaged,
                "{what}: a refused open changed the directory ({e})"
            );
            Outcome::Refused
        }
        Ok(db) => {
            let keys: Vec<&Vec<u8>> = p.model.keys().chain(p.before_wal.keys()).collect();
            let m = contents(&db, &keys).unwrap_or_else(|e| panic!("{what}: read failed: {e}"));
            db.close().unwrap();
            Outcome::Opened(m)
        }
    }
}

fn the_one(dir: &Path, prefix: &str) -> String {
    let v: Vec<String> = snapshot(dir)
        .into_keys()
        .filter(|n| n.starts_with(prefix) || n.ends_with(prefix))
        .collect();
    assert_eq!(v.len(), 1, "{prefix}: {v:?}");
    v.into_iter().next().unwrap()
}

fn cut_sweep(p: &Pristine, name: &str) -> Vec<Outcome> {
    let base = snapshot(p.dir.path());
    let len = base[name].len();
    (0..=len)
        .map(|cut| {
            let mut d = base.clone();
            d.get_mut(name).unwrap().truncate(cut);
            trial(p, &d, &format!("{name} cut to {cut} of {len}"))
        })
        .collect()
}

#[test]
fn manifest_cut_anywhere_is_refused_or_complete() {
    let p = build();
    let name = the_one(p.dir.path(), "MANIFEST-");
    let outcomes = cut_sweep(&p, &name);
    let mut refused = 0;
    for (cut, o) in outcomes.iter().enumerate() {
        match o {
            Outcome::Refused => refused += 1,
            Outcome::Opened(m) => assert!(*m == p.model, "{name} cut to {cut}: an older state"),
        }
    }
    let len = outcomes.len() - 1;
    assert_eq!(outcomes[len], Outcome::Opened(p.model.clone()));
    // Every cut that loses an edit naming files is refused; only cuts inside
    // edits that change no data (log tracking, reservations) may open.
    assert!(refused * 10 >= len * 9, "{refused} of {len} cuts refused");
}

#[test]
fn current_cut_anywhere_is_refused() {
    let p = build();
    let outcomes = cut_sweep(&p, "CURRENT");
    let n = outcomes.len() - 1;
    assert!(outcomes[..n].iter().all(|o| *o == Outcome::Refused));
    assert_eq!(outcomes[n], Outcome::Opened(p.model.clone()));
}

#[test]
fn wal_cut_anywhere_loses_only_a_suffix() {
    let p = build();
    let name = the_one(p.dir.path(), ".log");
    let states: Vec<Model> = (0..=p.wal_batches.len()).map(|j| p.after(j)).collect();
    let mut last_prefix = 0;
    let mut seen = vec![false; states.len()];
    for (cut, o) in cut_sweep(&p, &name).into_iter().enumerate() {
        let Outcome::Opened(m) = o else {
            panic!("{name} cut to {cut}: refused; a cut log is a torn tail");
        };
        let j = (last_prefix..states.len())
            .find(|&j| states[j] == m)
            .unwrap_or_else(|| {
                panic!("{name} cut to {cut}: not the state after any longer prefix of the log")
            });
        // Equal neighbours (a batch that changed nothing) count as one.
        for (i, s) in states.iter().enumerate().skip(j) {
            if *s == states[j] {
                seen[i] = true;
            }
        }
        last_prefix = j;
    }
    assert_eq!(states[last_prefix], p.model, "the whole log replays");
    assert!(seen.iter().all(|&s| s), "every prefix reached: {seen:?}");
    assert_eq!(states[p.wal_batches.len()], p.model);
}

#[test]
fn any_deleted_file_is_refused() {
    let p = build();
    let base = snapshot(p.dir.path());
    let mut refused = Vec::new();
    for name in base.keys() {
        let mut d = base.clone();
        d.remove(name);
        match trial(&p, &d, &format!("{name} deleted")) {
            Outcome::Refused => refused.push(name.clone()),
            // OPTIONS holds no data: the store opens with the caller's design;
            // LOOKUPS holds advice: the lookup history starts again.
            Outcome::Opened(m) if name == "OPTIONS" || name == "LOOKUPS" => {
                assert!(m == p.model)
            }
            Outcome::Opened(m) => panic!("{name} deleted: opened with {} keys", m.len()),
        }
    }
    let advisory = ["OPTIONS", "LOOKUPS"];
    let present = advisory.iter().filter(|n| base.contains_key(**n)).count();
    assert_eq!(refused.len(), base.len() - present);
    assert!(refused.iter().any(|n| n.ends_with(".log")));
    assert!(refused.iter().filter(|n| n.ends_with(".sst")).count() >= 3);
}

#[test]
fn a_file_past_the_next_file_number_is_refused() {
    let p = build();
    let base = snapshot(p.dir.path());
    let table = base.keys().find(|n| n.ends_with(".sst")).unwrap().clone();
    let log = the_one(p.dir.path(), ".log");
    for (from, to) in [(&table, "999999.sst"), (&log, "999999.log")] {
        let mut d = base.clone();
        d.insert(to.to_string(), base[from].clone());
        let work = scratch_dir();
        restore(work.path(), &d);
        let e = Db::open(work.path(), uncached()).unwrap_err();
        assert!(e.is_corruption(), "{e}");
        assert!(e.to_string().contains(to), "names the file: {e}");
        assert!(snapshot(work.path()) == d, "nothing deleted");
    }
}
