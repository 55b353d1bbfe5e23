//! `bloomlsm stress` end to end: a bounded run and a kill loop end with
//! `0 mismatches`, a value the expected state never recorded is caught as
//! a mismatch (exit status 1), and the seed alone draws the options.

use std::path::Path;
use std::process::{Command, Output, Stdio};

fn stress(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_bloomlsm"))
        .arg("stress")
        .arg("--dir")
        .arg(dir)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run bloomlsm")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The number in `line` right after `word`.
fn number_after(out: &str, word: &str) -> u64 {
    let at = out
        .find(word)
        .unwrap_or_else(|| panic!("{word:?} in:\n{out}"))
        + word.len();
    let digits: String = out[at..]
        .trim_start()
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == ',')
        .filter(|c| *c != ',')
        .collect();
    digits
        .parse()
        .unwrap_or_else(|_| panic!("a number after {word:?} in:\n{out}"))
}

#[test]
fn a_bounded_run_checks_every_read_and_leaves_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    let o = stress(&dir, &["--ops", "3000", "--keys", "1000", "--seed", "7"]);
    let out = text(&o.stdout);
    assert!(o.status.success(), "{o:?}");
    assert!(
        out.starts_with("bloomlsm stress: seed 7, 4 threads"),
        "{out}"
    );
    // The 3,000 operations and the last reopen.
    assert_eq!(number_after(&out, "operations:"), 3001, "{out}");
    for op in [
        "put",
        "batch",
        "scan_backward",
        "snapshot_read",
        "checkpoint",
    ] {
        assert!(out.contains(&format!("\n  {op} ")), "{op} in:\n{out}");
    }
    assert!(out.ends_with("seed 7: 0 mismatches\n"), "{out}");
    assert!(
        !dir.exists(),
        "the run's directory is removed without --keep"
    );
}

#[test]
fn a_kill_loop_checks_the_store_after_each_kill() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    let o = stress(
        &dir,
        &[
            "--kill",
            "--rounds",
            "4",
            "--kill-min",
            "300ms",
            "--kill-max",
            "900ms",
            "--keys",
            "1000",
            "--whitebox",
            "300",
            "--seed",
            "3",
            "--keep",
        ],
    );
    let out = text(&o.stdout);
    assert!(o.status.success(), "{o:?}");
    let kills = number_after(&out, "\nkills:") + number_after(&out, "by the parent,");
    assert_eq!(kills, 4, "{out}");
    assert!(number_after(&out, "operations:") > 0, "{out}");
    assert!(out.ends_with("seed 3: 0 mismatches\n"), "{out}");
    assert!(
        dir.join("expected").exists(),
        "--keep keeps the expected state"
    );
}

#[test]
fn a_value_the_expected_state_never_recorded_is_a_mismatch() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    let o = stress(&dir, &["--ops", "2000", "--keys", "500", "--inject-fault"]);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    assert!(
        err.starts_with("bloomlsm: mismatch: put (read back) of keyspace "),
        "{err}"
    );
    assert!(err.contains("found version"), "{err}");
    assert!(err.contains("(seed 42;"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        dir.join("expected").exists(),
        "a failed run keeps its files"
    );
}

#[test]
fn the_seed_alone_draws_the_options() {
    let tmp = tempfile::tempdir().unwrap();
    let options = |name: &str, seed: &str| {
        let o = stress(
            &tmp.path().join(name),
            &["--ops", "50", "--keys", "200", "--seed", seed],
        );
        assert!(o.status.success(), "{o:?}");
        // The banner's lines after the first (which names the directory).
        let out = text(&o.stdout);
        let lines: Vec<String> = out
            .lines()
            .skip(1)
            .take_while(|l| l.starts_with("  "))
            .map(String::from)
            .collect();
        assert_eq!(lines.len(), 4, "{out}");
        lines
    };
    assert_eq!(options("a", "11"), options("b", "11"));
    assert_ne!(options("c", "11"), options("d", "12"));
}

#[test]
fn a_directory_in_use_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("file"), b"x").unwrap();
    let o = stress(tmp.path(), &["--ops", "10"]);
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    assert!(text(&o.stderr).contains("not empty"), "{o:?}");
    let o = stress(
        tmp.path(),
        &["--kill", "--kill-min", "2s", "--kill-max", "1s"],
    );
    assert_eq!(o.status.code(), Some(2), "{o:?}");
}
