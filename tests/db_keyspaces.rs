//! Named keyspaces: random writes, batches spanning keyspaces, flushes,
//! compactions, creates, drops and reopens against one `BTreeMap` per
//! keyspace, and snapshots read in every keyspace against copies of the
//! maps taken with them; each keyspace's design surviving reopens; the log shared by
//! all of them retired only once every keyspace has flushed it; and the
//! refusals (a dropped keyspace's handle, a duplicate or reserved name, an
//! unknown one).

mod common;

use std::collections::BTreeMap;
use std::path::Path;

use bloomlsm::db::FileKind;
use bloomlsm::workload::SplitMix64;
use bloomlsm::{
    Compression, CompressionOptions, Db, Error, FilterOptions, FilterPolicy, Keyspace, Options,
    Snapshot, WriteBatch,
};
use common::files::files_of;
use common::model::{Model, apply, apply_range};
use common::{options, scratch_dir};

/// A keyspace design unlike the store's (4 KiB memtables, ribbon or bloom
/// filters, compression), `i` picking one.
fn design(i: u64) -> Options {
    let policy = match i % 3 {
        0 => FilterPolicy::ribbon(8.0),
        1 => FilterPolicy::bloom(14.0),
        _ => FilterPolicy::blocked512(6.0),
    };
    let mut o = options::tiny().filters(FilterOptions::uniform(Some(policy)));
    if i % 2 == 1 {
        o = o.compression(CompressionOptions::uniform(Compression::Lz4));
    }
    o
}

fn entries(ks: &Keyspace) -> Vec<(Vec<u8>, Vec<u8>)> {
    ks.scan(..)
        .map(|e| e.map(|(k, v)| (k.to_vec(), v.to_vec())))
        .collect::<Result<_, _>>()
        .unwrap()
}

fn check(db: &Db, models: &BTreeMap<String, Model>, ctx: &str) {
    assert_eq!(
        db.keyspace_names(),
        models.keys().cloned().collect::<Vec<_>>(),
        "{ctx}"
    );
    for (name, model) in models {
        let ks = db.keyspace(name).unwrap();
        let want: Vec<_> = model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        assert_eq!(entries(&ks), want, "{ctx}: keyspace {name}");
        for k in model.keys().take(5) {
            assert_eq!(ks.get(k).unwrap().as_deref(), model.get(k).map(|v| &v[..]));
        }
    }
}

/// Each live snapshot reads, in every keyspace the store holds, what the
/// models held when it was taken (nothing in a keyspace created since).
fn check_snapshots(db: &Db, snaps: &[(Snapshot, BTreeMap<String, Model>)], ctx: &str) {
    for (i, (snap, then)) in snaps.iter().enumerate() {
        for name in db.keyspace_names() {
            let ks = db.keyspace(&name).unwrap();
            let empty = Model::new();
            let want = then.get(&name).unwrap_or(&empty);
            let got: Vec<(Vec<u8>, Vec<u8>)> = ks
                .scan_at(snap, ..)
                .map(|e| e.map(|(k, v)| (k.to_vec(), v.to_vec())))
                .collect::<Result<_, _>>()
                .unwrap();
            let want_entries: Vec<_> = want.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
            assert_eq!(got, want_entries, "{ctx}: snapshot {i}, keyspace {name}");
            for k in [b"k000".to_vec(), b"k100".to_vec(), b"k199".to_vec()] {
                assert_eq!(
                    ks.get_at(snap, &k).unwrap().as_deref(),
                    want.get(&k).map(|v| &v[..]),
                    "{ctx}: snapshot {i}, keyspace {name}"
                );
            }
        }
    }
}

fn key(rng: &mut SplitMix64) -> Vec<u8> {
    format!("k{:03}", rng.below(200)).into_bytes()
}

/// Keyspace names in creation order, sorting after "default": the models'
/// map is then in `keyspace_names` order.
fn name(n: u64) -> String {
    format!("ks{n:03}")
}

fn run_model(seed: u64, steps: usize, store: Options) {
    let dir = scratch_dir();
    let mut db = Db::open(dir.path(), store.clone()).unwrap();
    let mut rng = SplitMix64::new(seed);
    let mut models: BTreeMap<String, Model> = BTreeMap::new();
    models.insert("default".into(), Model::new());
    let mut next_name = 0u64;
    // Live snapshots, each with the models as they were when taken.
    let mut snaps: Vec<(Snapshot, BTreeMap<String, Model>)> = Vec::new();
    for step in 0..steps {
        let names: Vec<String> = models.keys().cloned().collect();
        let pick = |rng: &mut SplitMix64| names[rng.below(names.len() as u64) as usize].clone();
        let ctx = format!("seed {seed} step {step}");
        match rng.below(100) {
            0..=39 => {
                let n = pick(&mut rng);
                let ks = db.keyspace(&n).unwrap();
                let k = key(&mut rng);
                if rng.below(4) == 0 {
                    ks.delete(&k).unwrap();
                    apply(models.get_mut(&n).unwrap(), &k, None);
                } else {
                    let v = format!("{ctx}-{}", "x".repeat(rng.below(40) as usize));
                    ks.put(&k, &v).unwrap();
                    apply(models.get_mut(&n).unwrap(), &k, Some(v.as_bytes()));
                }
            }
            40..=44 => {
                let n = pick(&mut rng);
                let (a, b) = (key(&mut rng), key(&mut rng));
                let (a, b) = if a < b { (a, b) } else { (b, a) };
                if a < b {
                    db.keyspace(&n).unwrap().delete_range(&a, &b).unwrap();
                    apply_range(models.get_mut(&n).unwrap(), &a, &b);
                }
            }
            45..=69 => {
                // One batch across several keyspaces.
                let mut batch = WriteBatch::new();
                let mut staged = models.clone();
                for i in 0..1 + rng.below(8) {
                    let n = pick(&mut rng);
                    let ks = db.keyspace(&n).unwrap();
                    let k = key(&mut rng);
                    match rng.below(6) {
                        0 => {
                            batch.delete_in(&ks, &k);
                            apply(staged.get_mut(&n).unwrap(), &k, None);
                        }
                        1 => {
                            let e = [k.clone(), b"~".to_vec()].concat();
                            batch.delete_range_in(&ks, &k, &e);
                            apply_range(staged.get_mut(&n).unwrap(), &k, &e);
                        }
                        _ => {
                            let v = format!("{ctx}-b{i}");
                            batch.put_in(&ks, &k, &v);
                            apply(staged.get_mut(&n).unwrap(), &k, Some(v.as_bytes()));
                        }
                    }
                }
                db.write(batch).unwrap();
                models = staged;
            }
            70..=76 => db.keyspace(&pick(&mut rng)).unwrap().flush().unwrap(),
            77..=80 => db.keyspace(&pick(&mut rng)).unwrap().compact().unwrap(),
            81..=86 if models.len() < 5 => {
                next_name += 1;
                let n = name(next_name);
                db.create_keyspace(&n, design(next_name)).unwrap();
                models.insert(n, Model::new());
            }
            87..=90 if models.len() > 1 => {
                let others: Vec<&String> = models.keys().filter(|n| *n != "default").collect();
                let n = others[rng.below(others.len() as u64) as usize].clone();
                let ks = db.keyspace(&n).unwrap();
                db.drop_keyspace(&n).unwrap();
                models.remove(&n);
                assert!(matches!(ks.get("k"), Err(Error::InvalidArgument(_))));
            }
            91..=92 => {
                // Snapshots do not survive a reopen.
                snaps.clear();
                db.close().unwrap();
                db = Db::open(dir.path(), store.clone()).unwrap();
                check(&db, &models, &format!("{ctx} reopened"));
            }
            93..=95 => {
                let snap = match rng.below(2) {
                    0 => db.snapshot(),
                    _ => db.keyspace(&pick(&mut rng)).unwrap().snapshot().unwrap(),
                };
                snaps.push((snap, models.clone()));
                if snaps.len() > 3 {
                    snaps.remove(rng.below(snaps.len() as u64) as usize);
                }
            }
            _ => {
                check(&db, &models, &ctx);
                check_snapshots(&db, &snaps, &ctx);
            }
        }
    }
    check(&db, &models, "end");
    check_snapshots(&db, &snaps, "end");
    // Compacted in every keyspace, the snapshots still read as taken.
    for name in db.keyspace_names() {
        db.keyspace(&name).unwrap().compact().unwrap();
    }
    check_snapshots(&db, &snaps, "end, compacted");
    drop(snaps);
    db.close().unwrap();
    let db = Db::open(dir.path(), store).unwrap();
    check(&db, &models, "end, reopened");
}

#[test]
fn keyspaces_match_a_model_through_batches_flushes_drops_and_reopens() {
    for seed in [1, 2, 3] {
        run_model(seed, 600, options::tiny());
    }
}

#[test]
fn keyspaces_match_a_model_with_background_work() {
    run_model(11, 600, options::tiny().background_compaction(true));
}

/// A keyspace keeps its design across reopens whatever the store is opened
/// with, and its tables are built with it.
#[test]
fn each_keyspace_keeps_its_own_design() {
    let dir = scratch_dir();
    let db = Db::open(dir.path(), options::manual()).unwrap();
    let ribbon = db.create_keyspace("ribbon", design(0)).unwrap();
    let bloom = db.create_keyspace("bloom", design(1)).unwrap();
    for i in 0..50 {
        ribbon.put(format!("r{i}"), "v").unwrap();
        bloom.put(format!("b{i}"), "v").unwrap();
    }
    ribbon.flush().unwrap();
    bloom.flush().unwrap();
    let filter_of = |ks: &Keyspace| ks.file_stats()[0].filter.clone();
    assert!(
        filter_of(&ribbon).contains("ribbon"),
        "{}",
        filter_of(&ribbon)
    );
    assert!(filter_of(&bloom).contains("bloom"), "{}", filter_of(&bloom));
    db.close().unwrap();
    let db = Db::open(dir.path(), options::manual()).unwrap();
    let (ribbon, bloom) = (
        db.keyspace("ribbon").unwrap(),
        db.keyspace("bloom").unwrap(),
    );
    assert_eq!(
        ribbon.options().filters.policy,
        Some(FilterPolicy::ribbon(8.0))
    );
    assert_eq!(
        bloom.options().filters.policy,
        Some(FilterPolicy::bloom(14.0))
    );
    assert_eq!(
        db.options().filters.policy,
        options::manual().filters.policy
    );
    assert_eq!(ribbon.get("r7").unwrap().as_deref(), Some(&b"v"[..]));
    assert_eq!(bloom.get("r7").unwrap(), None);
    // Its memtable size and L0 triggers came back too; the store's follow
    // the options it is opened with.
    let (given, store) = (design(0), options::manual());
    assert_ne!(given.write_buffer_size, store.write_buffer_size);
    let o = ribbon.options();
    assert_eq!(
        (
            o.write_buffer_size,
            o.l0_compaction_trigger,
            o.l0_slowdown_trigger,
            o.l0_stop_trigger
        ),
        (
            given.write_buffer_size,
            given.l0_compaction_trigger,
            given.l0_slowdown_trigger,
            given.l0_stop_trigger
        )
    );
    assert_eq!(db.options().write_buffer_size, store.write_buffer_size);
    db.close().unwrap();
    // A keyspace's OPTIONS from before these were recorded: the store's
    // options apply, as they did.
    let kdir = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.is_dir() && p.join("OPTIONS").exists())
        .unwrap();
    let path = kdir.join("OPTIONS");
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains("keyspace.write_buffer_size = "), "{text}");
    let mut f = bloomlsm::db::options_file::OptionsFile::decode(text.as_bytes(), &path).unwrap();
    f.tuning = Default::default();
    std::fs::write(&path, f.encode()).unwrap();
    let db = Db::open(dir.path(), store.clone()).unwrap();
    for name in ["ribbon", "bloom"] {
        let o = db.keyspace(name).unwrap().options().clone();
        let want = if kdir.ends_with("keyspace-000001") == (name == "ribbon") {
            store.write_buffer_size
        } else {
            design(u64::from(name == "bloom")).write_buffer_size
        };
        assert_eq!(o.write_buffer_size, want, "{name}");
    }
}

fn logs(dir: &Path) -> usize {
    files_of(dir, FileKind::Log).len()
}

/// A log stays while any keyspace holds unflushed writes from it, and goes
/// once each has flushed them; reopening after a drop and a create finds
/// exactly the keyspaces that exist.
#[test]
fn logs_wait_for_every_keyspace_and_drops_and_creates_survive_reopen() {
    let dir = scratch_dir();
    let db = Db::open(dir.path(), options::manual()).unwrap();
    let a = db.create_keyspace("a", options::manual()).unwrap();
    a.put("ka", "1").unwrap();
    db.put("kd", "1").unwrap();
    assert_eq!(logs(dir.path()), 1);
    // The default keyspace's flush freezes "a" too; "a" flushes by itself.
    db.flush().unwrap();
    a.flush().unwrap();
    assert_eq!(logs(dir.path()), 1, "only the active log is left");
    a.put("ka", "2").unwrap();
    let b = db.create_keyspace("b", options::manual()).unwrap();
    b.put("kb", "1").unwrap();
    db.drop_keyspace("a").unwrap();
    let c = db.create_keyspace("a", options::manual()).unwrap();
    assert_eq!(
        c.get("ka").unwrap(),
        None,
        "a new keyspace of a dropped one's name"
    );
    c.put("kc", "1").unwrap();
    drop(db);
    let db = Db::open(dir.path(), options::manual()).unwrap();
    assert_eq!(db.keyspace_names(), ["default", "b", "a"]);
    assert_eq!(db.get("kd").unwrap().as_deref(), Some(&b"1"[..]));
    assert_eq!(
        db.keyspace("b").unwrap().get("kb").unwrap().as_deref(),
        Some(&b"1"[..])
    );
    let a = db.keyspace("a").unwrap();
    assert_eq!(a.get("ka").unwrap(), None);
    assert_eq!(a.get("kc").unwrap().as_deref(), Some(&b"1"[..]));
    // Two keyspace directories: the dropped one's is gone.
    let dirs = std::fs::read_dir(dir.path())
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .starts_with("keyspace-")
        })
        .count();
    assert_eq!(dirs, 2);
    drop(b);
}

/// Reading a store with keyspaces beside its writer sees every keyspace's
/// logged writes.
#[test]
fn read_only_open_reads_every_keyspace() {
    let dir = scratch_dir();
    let db = Db::open(dir.path(), options::manual()).unwrap();
    let a = db.create_keyspace("a", options::manual()).unwrap();
    a.put("k", "in a").unwrap();
    db.put("k", "in default").unwrap();
    let r = Db::open_read_only(dir.path(), options::manual()).unwrap();
    let ra = r.keyspace("a").unwrap();
    assert_eq!(ra.get("k").unwrap().as_deref(), Some(&b"in a"[..]));
    assert_eq!(r.get("k").unwrap().as_deref(), Some(&b"in default"[..]));
    assert!(matches!(ra.put("k", "v"), Err(Error::ReadOnly)));
    assert!(matches!(
        r.create_keyspace("b", Options::default()),
        Err(Error::ReadOnly)
    ));
}

#[test]
fn bad_keyspace_input_is_a_clear_error() {
    let dir = scratch_dir();
    let db = Db::open(dir.path(), options::manual()).unwrap();
    let a = db.create_keyspace("a", Options::default()).unwrap();
    let invalid = |r: bloomlsm::Result<()>, what: &str| match r {
        Err(Error::InvalidArgument(m)) => assert!(m.contains(what), "{m}"),
        other => panic!("{other:?}"),
    };
    invalid(
        db.create_keyspace("a", Options::default()).map(drop),
        "already exists",
    );
    invalid(
        db.create_keyspace("default", Options::default()).map(drop),
        "always exists",
    );
    invalid(
        db.create_keyspace("", Options::default()).map(drop),
        "empty",
    );
    invalid(
        db.create_keyspace(&"x".repeat(256), Options::default())
            .map(drop),
        "limit",
    );
    invalid(
        db.create_keyspace("a\n", Options::default()).map(drop),
        "control",
    );
    invalid(db.drop_keyspace("default"), "cannot be dropped");
    invalid(db.drop_keyspace("nope"), "no keyspace named");
    invalid(db.keyspace("nope").map(drop), "no keyspace named");
    invalid(a.put("", "v"), "empty key");
    // A snapshot of another store.
    let other_dir = scratch_dir();
    let other = Db::open(other_dir.path(), options::manual()).unwrap();
    invalid(a.get_at(&other.snapshot(), "k").map(drop), "another store");
    assert!(a.scan_at(&other.snapshot(), ..).next().unwrap().is_err());
    let snap = a.snapshot().unwrap();

    let mut batch = WriteBatch::new();
    batch.put_in(&a, "k", "v");
    batch.put("d", "v");
    db.drop_keyspace("a").unwrap();
    invalid(db.drop_keyspace("a"), "no keyspace named");
    invalid(a.put("k", "v"), "was dropped");
    invalid(a.get("k").map(drop), "was dropped");
    invalid(a.flush(), "was dropped");
    invalid(a.compact(), "was dropped");
    invalid(a.get_at(&snap, "k").map(drop), "was dropped");
    invalid(a.multi_get_at(&snap, &["k"]).map(drop), "was dropped");
    invalid(a.snapshot().map(drop), "was dropped");
    assert!(a.scan_at(&snap, ..).next().unwrap().is_err());
    assert!(matches!(
        a.scan(..).next(),
        Some(Err(Error::InvalidArgument(_)))
    ));
    assert!(a.scan_prefix("k").next().unwrap().is_err());
    // A batch naming the dropped keyspace writes nothing.
    invalid(db.write(batch), "was dropped");
    assert_eq!(db.get("d").unwrap(), None);
    db.close().unwrap();
    invalid(a.put("k", "v"), "was dropped");
}
