//! `bloomlsm db advise` end to end: the lookups a store served, counted
//! across processes in its `LOOKUPS` file, costed under other designs; the
//! recommendation applied and rebuilt reads what it predicted; and the bad
//! inputs (no store, no gets, no filtered key, a held lock, a keyspace).

use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::Value;

fn bloomlsm(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_bloomlsm"))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run bloomlsm")
}

/// Runs `bloomlsm args`, which must succeed, and returns its stdout.
fn ok(args: &[&str]) -> String {
    let o = bloomlsm(args);
    assert!(o.status.success(), "{args:?}: {o:?}");
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Fails unless the command exited with `code` and one `bloomlsm: ` line
/// on stderr holding `says`.
fn fails(args: &[&str], code: i32, says: &str) {
    let o = bloomlsm(args);
    assert_eq!(o.status.code(), Some(code), "{args:?}: {o:?}");
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
    assert!(
        err.starts_with("bloomlsm: ") && err.contains(says),
        "{args:?}: {err}"
    );
}

/// `Filters: N checks, M false positives, ...` of a readmissing run: its
/// false positives per get, the data blocks its filters failed to save.
fn wasted_reads_per_get(out: &str, lookups: f64) -> f64 {
    let line = out
        .lines()
        .find(|l| l.starts_with("Filters: "))
        .unwrap_or_else(|| panic!("no Filters line: {out}"));
    let fp: f64 = line
        .split(", ")
        .nth(1)
        .and_then(|x| x.strip_suffix(" false positives"))
        .and_then(|x| x.parse().ok())
        .unwrap_or_else(|| panic!("{line}"));
    fp / lookups
}

/// The advisor's prediction for the design it recommends holds across
/// processes: lookups counted by two bench runs, the design applied and
/// rebuilt by `db advise --apply --rebuild`, then the same gets read what
/// it predicted within 10%, at the memory it said.
#[test]
fn the_applied_recommendation_reads_what_was_predicted() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path().to_str().unwrap();
    let store = home.path().join("blocked10");
    let s = store.to_str().unwrap();
    let lookups = 50_000.0;
    let read = [
        "bench",
        "--benchmarks",
        "readmissing",
        "--dir",
        h,
        "--use-existing-db",
        "--lookups",
        "50000",
    ];
    ok(&[
        "bench",
        "--benchmarks",
        "fillrandom,flush,waitforcompaction",
        "--dir",
        h,
        "--keys",
        "300000",
    ]);
    // `waitforcompaction` merges L0 down as an idle store does, except a
    // single file (which of the two depends on where the background
    // flushes fell). The advisor leaves L0's bits as they are and shares
    // out the levels below it: at least two of them.
    let shape: Value = serde_json::from_str(&ok(&["db", "stats", s, "--json"])).unwrap();
    let levels = shape["levels"].as_array().unwrap();
    let l0_files = levels
        .iter()
        .find(|l| l["level"] == 0)
        .map_or(0, |l| l["files"].as_u64().unwrap());
    assert!(l0_files <= 1, "{shape}");
    assert!(
        levels.iter().filter(|l| l["level"] != 0).count() >= 2,
        "{shape}"
    );
    // Nothing counted yet.
    fails(&["db", "advise", s], 1, "no gets counted");
    let before = wasted_reads_per_get(&ok(&read), lookups);
    ok(&read);
    let advice: Value = serde_json::from_str(&ok(&["db", "advise", s, "--json"])).unwrap();
    assert_eq!(advice["gets"], 100_000, "{advice}");
    assert_eq!(advice["history_restarted"], Value::Null);
    let designs = advice["designs"].as_array().unwrap();
    let present = &designs[0];
    assert_eq!(present["name"], "present");
    let predicted = present["wasted_reads_per_get"].as_f64().unwrap();
    assert!(
        (0.9..=1.1).contains(&(before / predicted)),
        "present: measured {before}, predicted {predicted}"
    );
    let name = advice["recommended"].as_str().unwrap();
    assert_ne!(name, "present", "{advice}");
    let chosen = designs.iter().find(|d| d["name"] == name).unwrap();
    let text = ok(&["db", "advise", s]);
    assert!(text.contains(&format!("* {name}")), "{text}");
    assert!(text.contains("--apply --rebuild"), "{text}");

    let applied = ok(&["db", "advise", s, "--apply", "--rebuild"]);
    assert!(applied.contains(&format!("applied: {name}")), "{applied}");
    let after_out = ok(&read);
    let after = wasted_reads_per_get(&after_out, lookups);
    let predicted = chosen["wasted_reads_per_get"].as_f64().unwrap();
    assert!(
        (0.9..=1.1).contains(&(after / predicted)),
        "{name}: measured {after}, predicted {predicted}"
    );
    let stats: Value = serde_json::from_str(&ok(&["db", "stats", s, "--json"])).unwrap();
    let memory = stats["memory"]["filter_bytes"].as_f64().unwrap();
    let said = chosen["memory_bytes"].as_f64().unwrap();
    assert!(
        (0.99..=1.02).contains(&(memory / said)),
        "{memory} vs {said}"
    );
    // The design is the store's now: recorded in OPTIONS.
    let options = std::fs::read_to_string(store.join("OPTIONS")).unwrap();
    assert!(options.contains("filter.level.1"), "{options}");

    // A window: the history starts again.
    let reset = ok(&["db", "advise", s, "--reset"]);
    assert!(reset.contains("lookup history started again"), "{reset}");
    fails(&["db", "advise", s], 1, "no gets counted");
}

/// Bad input: one line each, the exit status of its kind.
#[test]
fn bad_input_is_refused_in_one_line() {
    let home = tempfile::tempdir().unwrap();
    let missing = home.path().join("missing");
    fails(
        &["db", "advise", missing.to_str().unwrap()],
        2,
        "does not exist",
    );
    let s = home.path().join("s");
    let s = s.to_str().unwrap();
    ok(&["db", "put", s, "k", "v"]);
    // A store that has served no get.
    fails(&["db", "advise", s], 1, "no gets counted");
    // Gets counted, but no file has a filter: nothing to advise on.
    let bare = home.path().join("bare");
    let bare = bare.to_str().unwrap();
    ok(&["db", "put", bare, "k", "v", "--filter", "none"]);
    ok(&["db", "compact", bare]);
    {
        let db = bloomlsm::Db::open(bare, bloomlsm::Options::default()).unwrap();
        db.get("k").unwrap();
        db.get("absent").unwrap();
        db.close().unwrap();
    }
    fails(&["db", "advise", bare], 1, "no level holds a filtered key");
    // --reset restarts the whole store's history: no --keyspace.
    fails(
        &["db", "advise", s, "--reset", "--keyspace", "users"],
        2,
        "every keyspace's",
    );
    // No keyspace has gets to share out; --keyspaces takes no --keyspace.
    fails(
        &["db", "advise", s, "--keyspaces"],
        1,
        "nothing to share out",
    );
    let o = bloomlsm(&["db", "advise", s, "--keyspaces", "--keyspace", "users"]);
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    // --rebuild belongs to --apply.
    let o = bloomlsm(&["db", "advise", s, "--rebuild"]);
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    // A store held by a writer: --apply and --reset are refused with the
    // lock's message, and the plain advice still reads.
    let db = bloomlsm::Db::open(s, bloomlsm::Options::default()).unwrap();
    for flag in ["--apply", "--reset"] {
        fails(&["db", "advise", s, flag], 4, "lock");
    }
    fails(
        &["db", "advise", s, "--keyspaces"],
        1,
        "nothing to share out",
    );
    fails(&["db", "advise", s], 1, "no gets counted");
    db.close().unwrap();
    assert!(Path::new(s).join("LOOKUPS").exists());
}

/// Options for stores of a few levels from 10^5 keys, compactions run
/// only when asked.
fn small_levels() -> bloomlsm::Options {
    bloomlsm::Options::default()
        .background_compaction(false)
        .write_buffer_size(256 << 10)
        .target_file_size(256 << 10)
        .level1_max_bytes(512 << 10)
        .level_size_multiplier(4)
        .dynamic_level_bytes(false)
}

/// `db advise --keyspaces`: the store's filter memory shared out over two
/// keyspaces by the gets each served, applied and rebuilt from the command
/// line, then read as predicted, within 10%, at the same memory.
#[test]
fn keyspace_shares_applied_from_the_command_line_read_as_predicted() {
    use bloomlsm::workload::{absent_key, present_key};
    use bloomlsm::{Db, FilterOptions, FilterPolicy, Options};
    let home = tempfile::tempdir().unwrap();
    let dir = home.path().join("s");
    let s = dir.to_str().unwrap();
    let opts =
        || small_levels().filters(FilterOptions::uniform(Some(FilterPolicy::blocked512(10.0))));
    let load = [("hot", 100_000u64), ("cold", 2_000)];
    let gets = |db: &Db| -> (u64, u64) {
        let (mut wasted, mut memory) = (0, 0);
        for (seed, (name, n)) in load.iter().enumerate() {
            let ks = db.keyspace(name).unwrap();
            ks.reset_stats();
            for i in 0..*n {
                assert!(ks.get(absent_key(seed as u64, i)).unwrap().is_none());
            }
            wasted += ks.stats().total.false_positives;
            memory += ks.stats().filter_bytes;
        }
        (wasted, memory)
    };
    let (before, memory_before) = {
        let db = Db::open(s, opts()).unwrap();
        for (seed, (name, _)) in load.iter().enumerate() {
            let ks = db.create_keyspace(name, opts()).unwrap();
            for i in 0..50_000u64 {
                ks.put(present_key(seed as u64, i), [1u8; 20]).unwrap();
                if i % 5_000 == 4_999 {
                    ks.maintain().unwrap();
                }
            }
            ks.maintain().unwrap();
        }
        let r = gets(&db);
        db.close().unwrap();
        r
    };
    let advice: Value =
        serde_json::from_str(&ok(&["db", "advise", s, "--keyspaces", "--json"])).unwrap();
    assert_eq!(advice["gets"], 102_000, "{advice}");
    assert_eq!(advice["memory_bytes"], memory_before, "{advice}");
    assert_eq!(advice["left_alone"][0]["name"], "default", "{advice}");
    let present = advice["wasted_reads_per_get"]["present"].as_f64().unwrap();
    let shared = advice["wasted_reads_per_get"]["shared"].as_f64().unwrap();
    let measured = before as f64 / 102_000.0;
    assert!(
        (0.9..=1.1).contains(&(measured / present)),
        "{measured} {advice}"
    );
    let text = ok(&["db", "advise", s, "--keyspaces"]);
    assert!(text.contains("--keyspaces --apply --rebuild"), "{text}");
    let applied = ok(&["db", "advise", s, "--keyspaces", "--apply", "--rebuild"]);
    assert!(
        applied.contains("applied: each keyspace's share"),
        "{applied}"
    );
    let db = Db::open(s, Options::default()).unwrap();
    let (after, memory_after) = gets(&db);
    db.close().unwrap();
    let measured = after as f64 / 102_000.0;
    assert!(
        (0.9..=1.1).contains(&(measured / shared)),
        "measured {measured}, predicted {shared}: {advice}"
    );
    assert!(after < before, "{before} -> {after}");
    let ratio = memory_after as f64 / memory_before as f64;
    assert!(
        (0.98..=1.02).contains(&ratio),
        "{memory_before} -> {memory_after}"
    );
}

/// `db advise --keyspace NAME --apply --rebuild`: the keyspace's
/// recommendation becomes its design (the default keyspace's untouched),
/// and stays its design at the next plain open.
#[test]
fn a_keyspace_takes_its_recommendation_from_the_command_line() {
    use bloomlsm::workload::{absent_key, present_key};
    use bloomlsm::{Db, Options};
    let home = tempfile::tempdir().unwrap();
    let dir = home.path().join("s");
    let s = dir.to_str().unwrap();
    let opts = small_levels;
    {
        let db = Db::open(s, opts()).unwrap();
        let ks = db.create_keyspace("users", opts()).unwrap();
        for i in 0..100_000u64 {
            ks.put(present_key(3, i), [1u8; 20]).unwrap();
            if i % 5_000 == 4_999 {
                ks.maintain().unwrap();
            }
        }
        ks.maintain().unwrap();
        for i in 0..50_000 {
            assert!(ks.get(absent_key(3, i)).unwrap().is_none());
        }
        db.close().unwrap();
    }
    let advice: Value =
        serde_json::from_str(&ok(&["db", "advise", s, "--keyspace", "users", "--json"])).unwrap();
    let name = advice["recommended"].as_str().unwrap();
    assert_ne!(name, "present", "{advice}");
    let applied = ok(&[
        "db",
        "advise",
        s,
        "--keyspace",
        "users",
        "--apply",
        "--rebuild",
    ]);
    assert!(applied.contains(&format!("applied: {name}")), "{applied}");
    let db = Db::open(s, Options::default()).unwrap();
    let ks = db.keyspace("users").unwrap();
    assert!(
        !ks.options().filters.per_level.is_empty(),
        "{:?}",
        ks.options().filters
    );
    assert!(
        db.options().filters.per_level.is_empty(),
        "{:?}",
        db.options().filters
    );
    db.close().unwrap();
}
