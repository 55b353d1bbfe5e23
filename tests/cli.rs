//! The `bloomlsm` binary end to end: sst, db and bench commands, exit statuses
//! and one-line errors.

use std::collections::HashMap;
use std::fs::File;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use bloomlsm::sst::{TableBuilder, TableBuilderOptions};

fn bloomlsm(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_bloomlsm"))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run bloomlsm")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Fails unless the command failed with exactly one `bloomlsm: ` line on stderr.
fn assert_one_line_error(o: &Output) {
    assert!(!o.status.success(), "expected failure: {o:?}");
    let err = stderr(o);
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 1, "stderr: {err:?}");
    assert!(lines[0].starts_with("bloomlsm: "), "stderr: {err:?}");
}

fn build_table(path: &Path, n: u32) {
    let f = File::create(path).unwrap();
    let mut b = TableBuilder::new(f, path, TableBuilderOptions::default());
    for i in 0..n {
        b.add(
            format!("key{i:06}").as_bytes(),
            format!("value-{i}").as_bytes(),
        )
        .unwrap();
    }
    b.finish().unwrap();
}

#[test]
fn sst_dump_verify_and_filter_test() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.sst");
    build_table(&path, 5000);
    let p = path.to_str().unwrap();

    let o = bloomlsm(&["sst", "dump", p, "--entries", "--limit", "3"]);
    assert!(o.status.success(), "{o:?}");
    let out = stdout(&o);
    for want in [
        "format version",
        "checksum",
        "crc32",
        "entries          5,000",
        "blocked512",
        "predicted FPR",
        "data blocks",
        "key range        key000000 .. key004999",
        "key000000 => value-0",
    ] {
        assert!(out.contains(want), "missing {want:?} in:\n{out}");
    }
    assert!(!out.contains("key000003 =>"), "--limit 3 ignored:\n{out}");

    let o = bloomlsm(&["sst", "verify", p]);
    assert!(o.status.success(), "{o:?}");
    assert!(stdout(&o).starts_with("OK"));

    let o = bloomlsm(&["sst", "filter-test", p, "--probes", "100000"]);
    assert!(o.status.success(), "{o:?}");
    let out = stdout(&o);
    assert!(
        out.contains("measured FPR") && out.contains("predicted FPR"),
        "{out}"
    );

    // Flip one byte inside the first data block.
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[100] ^= 0x40;
    std::fs::write(&path, &bytes).unwrap();
    let good = dir.path().join("good.sst");
    build_table(&good, 10);
    let o = bloomlsm(&["sst", "verify", good.to_str().unwrap(), p]);
    assert_one_line_error(&o);
    assert_eq!(o.status.code(), Some(1));
    let out = stdout(&o);
    assert!(
        out.contains("OK      ") && out.contains("FAILED  "),
        "{out}"
    );
    assert!(out.contains("offset 0"), "first bad block's offset: {out}");
    assert!(stderr(&o).contains("1 of 2 files failed"), "{}", stderr(&o));
}

#[test]
fn db_round_trip_and_load() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let s = store.to_str().unwrap();

    assert!(bloomlsm(&["db", "put", s, "apple", "red"]).status.success());
    assert!(
        bloomlsm(&["db", "put", s, "bin\\x00key", "tab\\tvalue"])
            .status
            .success()
    );
    assert!(
        bloomlsm(&["db", "put", s, "cherry", "dark red"])
            .status
            .success()
    );

    let o = bloomlsm(&["db", "get", s, "apple"]);
    assert!(o.status.success(), "{o:?}");
    assert_eq!(stdout(&o), "red\n");
    let o = bloomlsm(&["db", "get", s, "bin\\x00key", "--raw"]);
    assert_eq!(o.stdout, b"tab\tvalue");

    let o = bloomlsm(&["db", "scan", s]);
    assert_eq!(
        stdout(&o),
        "apple\tred\nbin\\x00key\ttab\\x09value\ncherry\tdark red\n"
    );
    let o = bloomlsm(&["db", "scan", s, "--from", "b", "--to", "c", "--keys-only"]);
    assert_eq!(stdout(&o), "bin\\x00key\n");

    assert!(bloomlsm(&["db", "delete", s, "apple"]).status.success());
    let o = bloomlsm(&["db", "get", s, "apple"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(o.stdout.is_empty());
    assert_one_line_error(&o);

    // Bulk load: keys only, key<TAB>value, and scan output fed back.
    let input = dir.path().join("input.txt");
    let mut f = File::create(&input).unwrap();
    for i in 0..3000 {
        if i % 2 == 0 {
            writeln!(f, "k{i:05}\tv{i}").unwrap();
        } else {
            writeln!(f, "k{i:05}").unwrap();
        }
    }
    drop(f);
    let o = bloomlsm(&["db", "load", s, input.to_str().unwrap(), "--quiet"]);
    assert!(o.status.success(), "{o:?}");
    assert!(
        stdout(&o).contains("loaded 3,000 records"),
        "{}",
        stdout(&o)
    );
    assert_eq!(stdout(&bloomlsm(&["db", "get", s, "k00010"])), "v10\n");
    assert_eq!(stdout(&bloomlsm(&["db", "get", s, "k00011"])), "\n");

    let o = bloomlsm(&["db", "compact", s]);
    assert!(o.status.success(), "{o:?}");
    let o = bloomlsm(&["db", "stats", s, "--probe", "1000"]);
    assert!(o.status.success(), "{o:?}");
    let out = stdout(&o);
    assert!(
        out.contains("blocked512") && out.contains("observed FPR"),
        "{out}"
    );
    let o = bloomlsm(&["db", "verify", s]);
    assert!(o.status.success(), "{o:?}");
    assert!(stdout(&o).contains("3,002 entries"), "{}", stdout(&o));

    // A load line with a bad escape names the line.
    let bad = dir.path().join("bad.txt");
    std::fs::write(&bad, "ok\tfine\nbad\\q\tvalue\n").unwrap();
    let o = bloomlsm(&["db", "load", s, bad.to_str().unwrap(), "-q"]);
    assert_one_line_error(&o);
    assert!(stderr(&o).contains("bad.txt:2"), "{}", stderr(&o));
}

/// A minimal parser of the flat JSON objects `bench --json` prints: string,
/// number and null values.
fn parse_flat_json(line: &str) -> HashMap<String, Option<String>> {
    let body = line
        .trim()
        .strip_prefix('{')
        .and_then(|l| l.strip_suffix('}'))
        .expect("an object");
    let b = body.as_bytes();
    let mut out = HashMap::new();
    let mut i = 0;
    let read_string = |i: &mut usize| -> String {
        assert_eq!(b[*i], b'"');
        *i += 1;
        let mut s = String::new();
        while b[*i] != b'"' {
            if b[*i] == b'\\' {
                *i += 1;
            }
            s.push(b[*i] as char);
            *i += 1;
        }
        *i += 1;
        s
    };
    while i < b.len() {
        let key = read_string(&mut i);
        assert_eq!(b[i], b':');
        i += 1;
        let value = if b[i] == b'"' {
            Some(read_string(&mut i))
        } else {
            let start = i;
            while i < b.len() && b[i] != b',' {
                i += 1;
            }
            let v = &body[start..i];
            (v != "null").then(|| v.to_string())
        };
        out.insert(key, value);
        if i < b.len() {
            assert_eq!(b[i], b',');
            i += 1;
        }
    }
    out
}

#[test]
fn bench_json_lines() {
    let o = bloomlsm(&[
        "bench",
        "--keys",
        "20000",
        "--lookups",
        "2000",
        "--configs",
        "none,blocked10",
        "--json",
        "--quiet",
    ]);
    assert!(o.status.success(), "{o:?}");
    assert!(o.stderr.is_empty(), "--quiet: {}", stderr(&o));
    let lines: Vec<&str> = std::str::from_utf8(&o.stdout).unwrap().lines().collect();
    assert_eq!(lines.len(), 2, "{lines:?}");
    let rows: Vec<_> = lines.iter().map(|l| parse_flat_json(l)).collect();
    let num = |r: &HashMap<String, Option<String>>, k: &str| -> f64 {
        r.get(k)
            .unwrap_or_else(|| panic!("field {k} missing"))
            .as_deref()
            .unwrap_or_else(|| panic!("field {k} is null"))
            .parse()
            .unwrap()
    };
    for r in &rows {
        for k in [
            "config",
            "policy",
            "bits_per_key",
            "filter_bytes",
            "predicted_fpr",
            "measured_fpr",
            "block_reads_per_missing_get",
            "predicted_block_reads_per_missing_get",
            "missing_get_ns",
            "existing_get_ns",
        ] {
            assert!(r.contains_key(k), "field {k} missing: {r:?}");
        }
        assert!(num(r, "missing_get_ns") > 0.0);
        assert!(num(r, "existing_get_ns") > 0.0);
    }
    let (none, blocked) = (&rows[0], &rows[1]);
    assert_eq!(none["config"].as_deref(), Some("none"));
    assert_eq!(blocked["config"].as_deref(), Some("blocked10"));
    assert_eq!(num(none, "filter_bytes"), 0.0);
    assert!(num(none, "block_reads_per_missing_get") >= 1.0);
    let fpr = num(blocked, "measured_fpr");
    let pred = num(blocked, "predicted_fpr");
    assert!((0.0..0.05).contains(&fpr), "{fpr}");
    assert!((0.005..0.015).contains(&pred), "{pred}");
    assert!((9.5..11.0).contains(&num(blocked, "bits_per_key")));
    assert!(
        num(blocked, "block_reads_per_missing_get")
            < num(none, "block_reads_per_missing_get") / 10.0
    );
}

#[test]
fn bench_plot_writes_an_svg() {
    let dir = tempfile::tempdir().unwrap();
    let svg = dir.path().join("chart.svg");
    let o = bloomlsm(&[
        "bench",
        "--keys",
        "5000",
        "--lookups",
        "500",
        "--configs",
        "blocked8,monkey8",
        "--csv",
        "--quiet",
        "--sweep-keys",
        "5000",
        "--sweep-probes",
        "20000",
        "--plot",
        svg.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{o:?}");
    let csv = stdout(&o);
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 3, "{csv}");
    assert!(lines[0].starts_with("config,policy,"));
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(text.starts_with("<svg") && text.contains("blocked512 model"));
    assert!(text.contains("monkey8"));
}

#[test]
fn bad_arguments_fail_with_one_line() {
    for args in [
        &["frobnicate"][..],
        &["bench", "--keys", "lots"],
        &["bench", "--configs", "blocked10,wat"],
        &["bench", "--json", "--csv"],
        &["sst", "dump"],
        &["sst", "dump", "/nonexistent/x.sst"],
        &["sst", "verify", "/nonexistent/x.sst"],
        &["db", "get", "/nonexistent/store", "k"],
        &["db", "get", "/tmp", "bad\\q"],
    ] {
        let o = bloomlsm(args);
        assert_one_line_error(&o);
        assert!(
            o.stdout.is_empty() || args[1] == "verify",
            "{args:?}: {o:?}"
        );
    }
    // Not a table at all.
    let dir = tempfile::tempdir().unwrap();
    let junk = dir.path().join("junk.sst");
    std::fs::write(&junk, vec![7u8; 300]).unwrap();
    let o = bloomlsm(&["sst", "dump", junk.to_str().unwrap()]);
    assert_one_line_error(&o);
    assert!(stderr(&o).contains("corruption"), "{}", stderr(&o));
}

#[test]
fn help_on_every_command() {
    for args in [
        &["--help"][..],
        &["bench", "--help"],
        &["sst", "--help"],
        &["sst", "dump", "--help"],
        &["sst", "verify", "--help"],
        &["sst", "filter-test", "--help"],
        &["db", "--help"],
        &["db", "put", "--help"],
        &["db", "get", "--help"],
        &["db", "delete", "--help"],
        &["db", "scan", "--help"],
        &["db", "load", "--help"],
        &["db", "stats", "--help"],
        &["db", "verify", "--help"],
        &["db", "compact", "--help"],
    ] {
        let o = bloomlsm(args);
        assert!(o.status.success(), "{args:?}: {o:?}");
        assert!(stdout(&o).contains("Usage:"), "{args:?}");
    }
}
