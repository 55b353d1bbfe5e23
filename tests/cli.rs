//! The `bloomlsm` binary end to end: sst, db and bench commands, exit statuses
//! and one-line errors.
//!
//! It is one file, one test binary, because every test runs the built
//! `bloomlsm` binary through the helpers at its top (`bloomlsm`, `ok`,
//! `assert_one_line_error`).

use std::fs::File;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use bloomlsm::sst::{TableBuilder, TableBuilderOptions};
use serde_json::Value;

fn bloomlsm(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_bloomlsm"))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run bloomlsm")
}

/// Runs the binary with `input` on stdin.
fn bloomlsm_stdin(args: &[&str], input: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_bloomlsm"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run bloomlsm");
    let mut stdin = child.stdin.take().unwrap();
    let input = input.to_vec();
    // Written from a thread: a large input would fill the pipe while the
    // child waits for us to read its output.
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let o = child.wait_with_output().expect("wait for bloomlsm");
    writer.join().unwrap();
    o
}

/// Runs `bloomlsm args`, which must succeed, and returns its stdout.
fn ok(args: &[&str]) -> String {
    let o = bloomlsm(args);
    assert!(o.status.success(), "{args:?}: {o:?}");
    stdout(&o)
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
    let o = bloomlsm(&["db", "scan", s, "--reverse", "--keys-only"]);
    assert_eq!(stdout(&o), "cherry\nbin\\x00key\napple\n");
    let o = bloomlsm(&["db", "scan", s, "--prefix", "c", "--reverse"]);
    assert_eq!(stdout(&o), "cherry\tdark red\n");
    let o = bloomlsm(&["db", "scan", s, "--prefix", "b", "--from", "a"]);
    assert_eq!(o.status.code(), Some(2), "{o:?}");

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

/// Parses one line of `--json` output.
fn json(line: &str) -> Value {
    serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"))
}

/// `--benchmarks`: db_bench's line format for each workload, its
/// percentiles line, and the filter counters of the gets; readmissing's
/// filters miss at about blocked10's rate.
#[test]
fn bench_db_bench_workloads() {
    let names = [
        "fillseq",
        "fillrandom",
        "overwrite",
        "readrandom",
        "readmissing",
        "seekrandom",
        "readwhilewriting",
    ];
    // The reads read files: the fills' memtables are flushed first.
    let list = names
        .join(",")
        .replace("overwrite", "overwrite,waitforcompaction");
    let o = bloomlsm(&[
        "bench",
        "--keys",
        "20000",
        "--lookups",
        "2000",
        "--benchmarks",
        &list,
        "--quiet",
    ]);
    assert!(o.status.success(), "{o:?}");
    assert!(o.stderr.is_empty(), "--quiet: {}", stderr(&o));
    let out = stdout(&o);
    let lines: Vec<&str> = out.lines().collect();
    for name in names {
        let at = lines
            .iter()
            .position(|l| l.starts_with(&format!("{name:<12} : ")))
            .unwrap_or_else(|| panic!("no {name} line in {out}"));
        let line = lines[at];
        // "fillrandom   :       2.345 micros/op 426439 ops/sec;   47.2 MB/s"
        let rest = line.split_once(" : ").unwrap().1;
        let words: Vec<&str> = rest.split_whitespace().collect();
        assert!(words[0].parse::<f64>().unwrap() > 0.0, "{line}");
        assert_eq!(&words[1..2], ["micros/op"], "{line}");
        assert!(words[2].parse::<u64>().unwrap() > 0, "{line}");
        assert_eq!(words[3], "ops/sec;", "{line}");
        let writes = name.starts_with("fill") || name == "overwrite";
        if name != "readmissing" {
            assert!(words[4].parse::<f64>().unwrap() > 0.0, "{line}");
            assert_eq!(words[5], "MB/s", "{line}");
        }
        if !writes {
            let total = if name == "readmissing" { 0 } else { 2000 };
            assert!(
                line.ends_with(&format!("({total} of 2000 found)")),
                "{line}"
            );
        }
        let p = lines[at + 1];
        assert!(p.starts_with("Percentiles: "), "{p}");
        let labels: Vec<&str> = p.split_whitespace().skip(1).step_by(2).collect();
        assert_eq!(labels, ["P50:", "P75:", "P99:", "P99.9:", "P99.99:"], "{p}");
        let values: Vec<f64> = p
            .split_whitespace()
            .skip(2)
            .step_by(2)
            .map(|v| v.parse().unwrap())
            .collect();
        assert_eq!(values.len(), 5, "{p}");
        assert!(values.windows(2).all(|w| w[0] <= w[1]), "{p}");
        if !writes {
            assert!(lines[at + 2].starts_with("Filters: "), "{out}");
        }
    }
    assert!(out.contains("\nwaitforcompaction : "), "{out}");
    let missing = lines
        .iter()
        .position(|l| l.starts_with("readmissing "))
        .unwrap();
    // "Filters: 4000 checks, 40 false positives, FPR 1.000% (predicted 0.961%); ..."
    let f = lines[missing + 2];
    let words: Vec<&str> = f.split_whitespace().collect();
    let checks: u64 = words[1].parse().unwrap();
    assert!(checks >= 2000, "every missing get probes a filter: {f}");
    let pct = |w: &str| -> f64 { w.trim_matches(|c| "()%;".contains(c)).parse().unwrap() };
    let (measured, predicted) = (pct(words[7]), pct(words[9]));
    assert!((0.5..1.5).contains(&predicted), "blocked10: {f}");
    assert!((0.2..2.5).contains(&measured), "{f}");
    assert!(lines.last().unwrap().starts_with("shape: "), "{out}");

    // --json: one object per workload.
    let o = bloomlsm(&[
        "bench",
        "--num",
        "60000",
        "--lookups",
        "2000",
        "--benchmarks",
        "fillrandom,flush,readmissing",
        "--json",
        "--quiet",
    ]);
    assert!(o.status.success(), "{o:?}");
    let rows: Vec<Value> = stdout(&o).lines().map(json).collect();
    assert_eq!(rows.len(), 3, "{rows:?}");
    assert_eq!(rows[0]["benchmark"], "fillrandom");
    assert_eq!(rows[0]["ops"], 60000);
    assert!(rows[0]["mb_per_sec"].as_f64().unwrap() > 0.0);
    assert_eq!(rows[1]["benchmark"], "flush");
    assert_eq!(rows[1]["ops"], 1);
    assert_eq!(rows[2]["found"], 0);
    assert!(rows[2]["filter_checks"].as_u64().unwrap() >= 2000);
    assert!(rows[2]["measured_fpr"].as_f64().unwrap() < 0.025);
}

/// `--benchmarks ycsb-a,...,ycsb-f`: each workload's line, a percentiles
/// line per operation kind, and the filters' line; `--miss-fraction`
/// sends that share of the reads to absent keys.
#[test]
fn bench_ycsb_workloads() {
    let o = bloomlsm(&[
        "bench",
        "--keys",
        "60000",
        "--lookups",
        "2000",
        "--benchmarks",
        "fillrandom,ycsb-a,ycsb-b,ycsb-c,ycsb-d,ycsb-e,ycsb-f",
        "--miss-fraction",
        "0.5",
        "--quiet",
    ]);
    assert!(o.status.success(), "{o:?}");
    let out = stdout(&o);
    let lines: Vec<&str> = out.lines().collect();
    let kinds = [
        ("ycsb-a", &["read", "update"][..]),
        ("ycsb-b", &["read", "update"]),
        ("ycsb-c", &["read"]),
        ("ycsb-d", &["read", "insert"]),
        ("ycsb-e", &["insert", "scan"]),
        ("ycsb-f", &["read", "rmw"]),
    ];
    for (name, ops) in kinds {
        let at = lines
            .iter()
            .position(|l| l.starts_with(&format!("{name:<12} : ")))
            .unwrap_or_else(|| panic!("no {name} line in {out}"));
        let words: Vec<&str> = lines[at].split_whitespace().collect();
        assert_eq!(&words[3..4], ["micros/op"], "{}", lines[at]);
        assert!(words[4].parse::<u64>().unwrap() > 0, "{}", lines[at]);
        for (i, op) in ops.iter().enumerate() {
            let p = lines[at + 1 + i];
            assert!(p.starts_with(&format!("Percentiles {op}: P50: ")), "{out}");
        }
        let f = lines[at + 1 + ops.len()];
        assert!(f.starts_with("Filters: "), "{out}");
        if name == "ycsb-c" {
            // About half of 2000 reads find their key.
            let found: u64 = lines[at]
                .split(", ")
                .find_map(|p| p.split_once(" of 2000 found"))
                .map(|(n, _)| n)
                .unwrap_or_else(|| panic!("{}", lines[at]))
                .parse()
                .unwrap();
            assert!((800..1200).contains(&found), "{}", lines[at]);
        }
    }

    for dist in ["uniform", "hotspot"] {
        let o = bloomlsm(&[
            "bench",
            "--keys",
            "60000",
            "--lookups",
            "2000",
            "--benchmarks",
            "fillrandom,ycsb-c",
            "--request-distribution",
            dist,
            "--miss-fraction",
            "1",
            "--json",
            "--quiet",
        ]);
        assert!(o.status.success(), "{o:?}");
        let rows: Vec<Value> = stdout(&o).lines().map(json).collect();
        assert_eq!(rows.len(), 2, "{rows:?}");
        assert_eq!(rows[1]["benchmark"], "ycsb-c");
        assert_eq!(rows[1]["distribution"], dist);
        assert_eq!(rows[1]["found"], 0);
        assert_eq!(rows[1]["by_op"]["read"]["ops"], 2000);
        assert!(rows[1]["measured_fpr"].as_f64().unwrap() < 0.025);
    }
}

/// readwhilewriting's time series as CSV, JSON and an SVG chart; the
/// reads' storage requests behind a read latency, and their cost.
#[test]
fn bench_timeseries_and_remote_storage() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("series.csv");
    let svg = dir.path().join("series.svg");
    let o = bloomlsm(&[
        "bench",
        "--keys",
        "60000",
        "--lookups",
        "3000",
        "--benchmarks",
        "fillrandom,waitforcompaction,readmissing,readwhilewriting",
        "--stats-interval-ms",
        "1",
        "--timeseries",
        csv.to_str().unwrap(),
        "--plot",
        svg.to_str().unwrap(),
        "--read-latency-us",
        "1",
        "--read-latency-p99-us",
        "3",
        "--price-per-million-gets",
        "1",
        "--quiet",
    ]);
    assert!(o.status.success(), "{o:?}");
    let out = stdout(&o);
    assert!(out.contains("Storage:    read latency log-normal"), "{out}");
    let lines: Vec<&str> = out.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.starts_with("readmissing "))
        .unwrap();
    // "Storage: 0.009 read requests/op, ...; filters saved 0.992 requests/get ..."
    let st = lines[at + 3];
    assert!(st.starts_with("Storage: "), "{out}");
    let saved: f64 = st
        .split("filters saved ")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        saved > 0.9,
        "a missing get's filters save a request per file: {st}"
    );
    assert!(st.ends_with("at USD 1.00 per million requests"), "{st}");
    let text = std::fs::read_to_string(&csv).unwrap();
    let rows: Vec<&str> = text.lines().collect();
    assert!(rows[0].starts_with("t_s,reads,reads_per_sec,"), "{text}");
    assert!(rows.len() >= 2, "{text}");
    let reads: u64 = rows[1..]
        .iter()
        .map(|r| r.split(',').nth(1).unwrap().parse::<u64>().unwrap())
        .sum();
    assert_eq!(reads, 3000, "the samples cover every read: {text}");
    let chart = std::fs::read_to_string(&svg).unwrap();
    assert!(
        chart.starts_with("<svg"),
        "{}",
        &chart[..50.min(chart.len())]
    );
    assert!(chart.contains("Filter false-positive rate"));

    let json_path = dir.path().join("series.json");
    let o = bloomlsm(&[
        "bench",
        "--keys",
        "60000",
        "--lookups",
        "2000",
        "--benchmarks",
        "fillrandom,readwhilewriting",
        "--timeseries",
        json_path.to_str().unwrap(),
        "--json",
        "--quiet",
    ]);
    assert!(o.status.success(), "{o:?}");
    let rows: Vec<Value> = stdout(&o).lines().map(json).collect();
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert!(rows[1]["read_requests_per_op"].as_f64().unwrap() > 0.0);
    assert_eq!(rows[1]["price_per_million_gets"], 0.4);
    let series = json(std::fs::read_to_string(&json_path).unwrap().trim());
    assert_eq!(series["interval_ms"], 1000);
    assert!(!series["samples"].as_array().unwrap().is_empty());
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
    let rows: Vec<Value> = lines.iter().map(|l| json(l)).collect();
    let num = |r: &Value, k: &str| -> f64 {
        r.get(k)
            .unwrap_or_else(|| panic!("field {k} missing"))
            .as_f64()
            .unwrap_or_else(|| panic!("field {k} is not a number: {r}"))
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
            "shape",
        ] {
            assert!(r.get(k).is_some(), "field {k} missing: {r}");
        }
        assert!(num(r, "missing_get_ns") > 0.0);
        assert!(num(r, "existing_get_ns") > 0.0);
        // The shape is per-level data, and adds up to the keys loaded.
        let shape = r["shape"].as_array().expect("shape is an array");
        assert!(!shape.is_empty(), "{r}");
        let keys: u64 = shape.iter().map(|l| l["keys"].as_u64().unwrap()).sum();
        assert_eq!(keys, 20_000, "{r}");
        for l in shape {
            assert!(l["level"].is_u64() && l["files"].as_u64() > Some(0), "{l}");
            assert!(l["bytes"].as_u64() > Some(0), "{l}");
        }
    }
    let (none, blocked) = (&rows[0], &rows[1]);
    assert_eq!(none["config"], "none");
    assert_eq!(blocked["config"], "blocked10");
    assert!(none["predicted_fpr"].is_null() && none["measured_fpr"].is_null());
    assert!(none["shape"][0]["filter_bits_per_key"].is_null());
    assert!(blocked["shape"][0]["filter_bits_per_key"].as_f64() > Some(9.0));
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
    // RocksDB's ticker names carry the store's own counters, per phase.
    for r in &rows {
        let t = &r["tickers"]["missing_get"];
        assert_eq!(
            t["rocksdb.bloom.filter.useful"], r["filter_negatives"],
            "{r}"
        );
        assert_eq!(t["rocksdb.number.keys.read"], 2000, "{r}");
        assert_eq!(
            r["tickers"]["existing_get"]["rocksdb.number.keys.read"],
            2000
        );
    }
    assert!(num(blocked, "filter_negatives") > 0.0);
}

#[test]
fn bench_statistics_prints_tickers() {
    let o = bloomlsm(&[
        "bench",
        "--benchmarks",
        "fillrandom,flush,readmissing",
        "--keys",
        "20000",
        "--lookups",
        "1000",
        "--statistics",
        "--quiet",
    ]);
    assert!(o.status.success(), "{o:?}");
    let out = stdout(&o);
    // One block, after the read; db_bench's `NAME COUNT : N` lines.
    assert_eq!(out.matches("STATISTICS:\n").count(), 1, "{out}");
    let useful = out
        .lines()
        .find_map(|l| l.strip_prefix("rocksdb.bloom.filter.useful COUNT : "))
        .unwrap_or_else(|| panic!("no useful ticker:\n{out}"));
    // The fill is two memtables, so two L0 files after the flush: each
    // missing get probes both filters, and about 1% of probes pass.
    let useful: u64 = useful.parse().unwrap();
    assert!((1900..=2000).contains(&useful), "{out}");
    assert!(
        out.contains("\nrocksdb.number.keys.read COUNT : 1000\n"),
        "{out}"
    );
    assert!(
        out.contains("\nbloomlsm.filter.fpr.predicted@level"),
        "{out}"
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
    let header: Vec<&str> = lines[0].split(',').collect();
    for f in [
        "io",
        "missing_get_p999_ns",
        "existing_get_max_ns",
        "multi_get_missing_device_bytes",
    ] {
        assert!(header.contains(&f), "{f} missing: {}", lines[0]);
    }
    // Fields outside quotes (the policy is quoted: it holds commas).
    let fields = |l: &str| {
        let mut quoted = false;
        1 + l
            .chars()
            .filter(|&c| {
                quoted ^= c == '"';
                c == ',' && !quoted
            })
            .count()
    };
    assert_eq!(fields(lines[1]), header.len(), "{csv}");
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(text.starts_with("<svg") && text.contains("blocked512 model"));
    assert!(text.contains("monkey8"));
    assert!(text.contains("monkey8: latency CDF (buffered reads)"));
}

/// `bench --io direct` on tiny sizes: the stores under the target directory
/// (a disk, which takes O_DIRECT), the percentiles and device bytes in the
/// table and the JSON, the sectors the store counts. (That the device's
/// bytes agree with the store's within 5% is the bench's own check, printed,
/// not asserted here: another process's paging may add to them.)
#[test]
fn bench_direct_io() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let d = dir.path().join("stores");
    let args = |extra: &[&str]| {
        let mut a = vec![
            "bench",
            "--io",
            "direct",
            "--keys",
            "5000",
            "--lookups",
            "300",
            "--configs",
            "none,blocked10",
            "--quiet",
            "--dir",
            d.to_str().unwrap(),
            "--reuse-dir",
        ];
        a.extend_from_slice(extra);
        bloomlsm(&a)
    };
    let o = args(&[]);
    assert!(o.status.success(), "{o:?}");
    let text = stdout(&o);
    for want in [
        "reads: direct I/O",
        "p99.9",
        "device B",
        "device check (direct): ",
    ] {
        assert!(text.contains(want), "{want:?} missing:\n{text}");
    }
    let o = args(&["--json"]);
    assert!(o.status.success(), "{o:?}");
    let rows: Vec<Value> = stdout(&o).lines().map(json).collect();
    assert_eq!(rows.len(), 2);
    for r in &rows {
        assert_eq!(r["io"], "direct", "{r}");
        let phases = r["phases"].as_array().unwrap();
        let names: Vec<&str> = phases
            .iter()
            .map(|p| p["phase"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["missing_get", "multi_get_missing", "existing_get"]);
        for p in phases {
            let ns = |k: &str| p[k].as_u64().unwrap_or_else(|| panic!("{k}: {p}"));
            assert!(
                ns("p50_ns") <= ns("p90_ns") && ns("p90_ns") <= ns("p99_ns"),
                "{p}"
            );
            assert!(
                ns("p99_ns") <= ns("p999_ns") && ns("p999_ns") <= ns("max_ns"),
                "{p}"
            );
            // Direct reads count whole sectors (512 bytes or 4 KiB).
            assert_eq!(p["store_bytes"].as_u64().unwrap() % 512, 0, "{p}");
            if cfg!(target_os = "linux") {
                assert!(p["device_bytes"].is_u64(), "{p}");
            }
        }
    }
    // Every missing get of `none` reads a block: bytes were counted.
    assert!(rows[0]["phases"][0]["store_bytes"].as_u64() > Some(300 * 4096));
    assert!(rows[1]["phases"][0]["device_bytes_saved_per_key"].as_f64() > Some(4096.0));
    // The YCSB reads count the device bytes of each absent read on the
    // reading thread.
    let o = args(&[
        "--benchmarks",
        "fillrandom,ycsb-c",
        "--miss-fraction",
        "1",
        "--json",
    ]);
    assert!(o.status.success(), "{o:?}");
    let rows: Vec<Value> = stdout(&o).lines().map(json).collect();
    assert_eq!(rows[1]["benchmark"], "ycsb-c", "{rows:?}");
    if cfg!(target_os = "linux") {
        let per = rows[1]["device_bytes_per_missing_get"].as_f64();
        assert!(per >= Some(0.0), "{}", rows[1]);
    }
}

#[test]
fn bad_arguments_fail_with_one_line() {
    for args in [
        &["frobnicate"][..],
        &["bench", "--keys", "lots"],
        &["bench", "--configs", "blocked10,wat"],
        &["bench", "--configs", "xor8:10"],
        &[
            "db",
            "put",
            "/tmp/never-made-store",
            "k",
            "v",
            "--filter",
            "xor8:10",
        ],
        &["bench", "--json", "--csv"],
        &["bench", "--io", "foo"],
        &["bench", "--benchmarks", "fillrandom,readseq"],
        &["bench", "--benchmarks", "readrandom", "--csv"],
        &["bench", "--benchmarks", "ycsb-a,ycsb-g"],
        &["bench", "--benchmarks", "ycsb-a", "--miss-fraction", "1.5"],
        &["bench", "--benchmarks", "ycsb-a", "--miss-fraction", "-0.1"],
        &["bench", "--benchmarks", "ycsb-a", "--miss-fraction", "lots"],
        &["bench", "--miss-fraction", "0.5"],
        &["bench", "--memory-ceiling", "12x"],
        &["bench", "--writes-per-range-tombstone", "10"],
        &[
            "bench",
            "--benchmarks",
            "fillrandom",
            "--writes-per-range-tombstone",
            "0",
        ],
        &[
            "bench",
            "--benchmarks",
            "fillrandom",
            "--range-tombstone-width",
            "5",
        ],
        &["bench", "--memory-ceiling", "10M"],
        &[
            "bench",
            "--benchmarks",
            "ycsb-a",
            "--request-distribution",
            "pareto",
        ],
        &["bench", "--store", "http://bucket/p"],
        &["bench", "--store", "s3://Bad_Bucket/p"],
        &["bench", "--store", "s3://bucket/a/../b"],
        &["bench", "--bucket-lookups", "5"],
        &[
            "bench",
            "--store",
            "s3://bucket/p",
            "--bucket-chunk-bytes",
            "3000",
        ],
        &["bench", "--store", "s3://bucket/p", "--workload", "range"],
        &["sst", "dump"],
        &["sst", "dump", "/nonexistent/x.sst"],
        &["sst", "verify", "/nonexistent/x.sst"],
        &["db", "get", "/nonexistent/store", "k"],
        &["db", "get", "/tmp", "bad\\q"],
    ] {
        let o = bloomlsm(args);
        assert_one_line_error(&o);
        if args[0] == "bench" {
            assert_eq!(o.status.code(), Some(2), "usage: {args:?}: {o:?}");
        }
        assert!(
            o.stdout.is_empty() || args[1] == "verify",
            "{args:?}: {o:?}"
        );
    }
    // A bucket without the feature that reads one: a usage error naming it.
    if !cfg!(feature = "object-store") {
        let o = bloomlsm(&["bench", "--store", "s3://bucket/p", "--keys", "10"]);
        assert_one_line_error(&o);
        assert_eq!(o.status.code(), Some(2), "{o:?}");
        assert!(
            String::from_utf8_lossy(&o.stderr).contains("--features object-store"),
            "{o:?}"
        );
    }
    // Unknown filter families: the error lists the known ones.
    for args in [
        &["bench", "--configs", "xor8:10"][..],
        &["db", "put", "/tmp/x", "k", "v", "--filter", "xor8:10"],
    ] {
        let o = bloomlsm(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {o:?}");
        assert!(
            stderr(&o).contains("(known: blocked512, bloom, ribbon"),
            "{}",
            stderr(&o)
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
        &["completions", "--help"][..],
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
        &["db", "delete-range", "--help"],
        &["db", "scan", "--help"],
        &["db", "load", "--help"],
        &["db", "stats", "--help"],
        &["db", "verify", "--help"],
        &["db", "compact", "--help"],
        &["db", "keyspaces", "--help"],
        &["db", "checkpoint", "--help"],
    ] {
        let o = bloomlsm(args);
        assert!(o.status.success(), "{args:?}: {o:?}");
        let out = stdout(&o);
        assert!(out.contains("Usage:"), "{args:?}");
        assert!(out.contains("Examples:\n  bloomlsm "), "{args:?}:\n{out}");
        assert!(
            out.contains("Exit status:\n  0  success") && out.contains("  3  bad input data"),
            "{args:?}:\n{out}"
        );
        if args.len() == 3
            && !matches!(
                args[1],
                "put" | "delete" | "delete-range" | "load" | "compact"
            )
        {
            assert!(out.contains("--json"), "{args:?}: no --json");
            assert!(
                out.contains("JSON (--json)"),
                "{args:?}: JSON fields undocumented"
            );
        }
    }
}

/// The subcommand names of a `--help`'s "Commands:" list (without `help`).
fn listed_commands(help: &str) -> Vec<String> {
    help.split("Commands:\n")
        .nth(1)
        .expect("a Commands: list")
        .lines()
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .map(String::from)
        .collect()
}

#[test]
fn top_help_names_every_db_and_sst_command() {
    let top = ok(&["--help"]);
    for group in ["db", "sst"] {
        let subs = listed_commands(&ok(&[group, "--help"]));
        assert!(subs.len() >= 3, "{group}: {subs:?}");
        let line = top
            .lines()
            .find(|l| l.trim_start().starts_with(&format!("{group} ")))
            .unwrap_or_else(|| panic!("no {group} line in:\n{top}"));
        for sub in &subs {
            assert!(
                line.split([' ', ',', ':', '.']).any(|w| w == sub),
                "bloomlsm --help's {group} line does not name {sub}: {line}"
            );
        }
    }
}

/// The examples of `bloomlsm --help` that use a store run as shown, one
/// after another, in a new directory (`bench` and `completions` aside).
#[test]
fn top_help_store_examples_run() {
    let help = ok(&["--help"]);
    let examples: Vec<&str> = help
        .split("Examples:\n")
        .nth(1)
        .unwrap()
        .lines()
        .take_while(|l| l.starts_with("  bloomlsm "))
        .map(|l| l.trim_start().split("   ").next().unwrap().trim_end())
        .filter(|c| c.starts_with("bloomlsm db ") || c.starts_with("bloomlsm sst "))
        .collect();
    assert!(examples.len() >= 4, "{examples:?}");
    let work = tempfile::tempdir().unwrap();
    let store = work.path().join("s");
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_bloomlsm")).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    for cmd in examples {
        let o = Command::new("sh")
            .arg("-c")
            .arg(cmd.replace("/tmp/s", store.to_str().unwrap()))
            .env("PATH", &path)
            .stdin(Stdio::null())
            .output()
            .expect("run sh");
        assert!(o.status.success(), "{cmd}: {}", stderr(&o));
    }
}

/// `bench --configs FAMILY:BITS` takes every family the library knows
/// without registration, and its help names them.
#[test]
fn bench_configs_take_every_built_in_family() {
    let help = ok(&["bench", "--help"]);
    let configs = help
        .split("--configs <CONFIGS>")
        .nth(1)
        .unwrap()
        .split("\n      --")
        .next()
        .unwrap()
        .to_string();
    assert!(configs.contains("FAMILY:BITS"), "{configs}");
    let families: Vec<&str> = bloomlsm::filter_families()
        .iter()
        .map(|k| k.name())
        .collect();
    for f in &families {
        assert!(configs.contains(f), "--configs help lacks {f}: {configs}");
    }
    let list: Vec<String> = families.iter().map(|f| format!("{f}:10")).collect();
    let list = format!("{},fuse8,fuse16", list.join(","));
    let o = bloomlsm(&[
        "bench",
        "--keys",
        "2000",
        "--lookups",
        "100",
        "--configs",
        &list,
        "--json",
        "--quiet",
    ]);
    assert!(o.status.success(), "{o:?}");
    let rows: Vec<Value> = stdout(&o).lines().map(json).collect();
    assert_eq!(rows.len(), families.len() + 2);
    for (row, f) in rows.iter().zip(&families) {
        assert_eq!(row["config"], format!("{f}:10"), "{row}");
        assert!(row["policy"].as_str().unwrap().starts_with(f), "{row}");
    }
    // A family only a program that registers it knows.
    let o = bloomlsm(&["bench", "--configs", "xor8:10"]);
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    assert!(
        stderr(&o).contains("known only to the program that registers it"),
        "{}",
        stderr(&o)
    );
}

/// The README's CLI tour, run command by command in a new directory: each
/// prints, in order, the lines the README shows under it (which may leave
/// lines out), times and file numbers aside, and nothing on stderr.
#[test]
fn readme_cli_tour_prints_what_the_readme_shows() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md"))
        .expect("read README.md");
    let tour = readme
        .split("## CLI tour")
        .nth(1)
        .and_then(|t| t.split("```text\n").nth(1))
        .and_then(|t| t.split("```").next())
        .expect("the README's CLI tour block");
    let mut steps: Vec<(String, Vec<&str>)> = Vec::new();
    for line in tour.lines() {
        match line.strip_prefix("$ ") {
            // A comment after the command, set off by spaces.
            Some(cmd) => steps.push((
                cmd.split("   #").next().unwrap().trim_end().to_string(),
                Vec::new(),
            )),
            None => steps
                .last_mut()
                .expect("output before a command")
                .1
                .push(line),
        }
    }
    assert!(steps.len() >= 10, "{steps:?}");
    let work = tempfile::tempdir().unwrap();
    let store = work.path().join("tour");
    let store = store.to_str().unwrap();
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_bloomlsm")).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    // "loaded … in 0.05 s (400,254 records/s)" and "compacted in 0.01 s"
    // without their times.
    // File numbers too: how many a load takes depends on when its
    // background flushes run, so "/tmp/tour/000218.sst" reads
    // "/tmp/tour/N.sst".
    let steady = |line: &str| -> String {
        let line = match line.rfind(" in ") {
            Some(i)
                if line[i + 4..].starts_with(|c: char| c.is_ascii_digit())
                    && line[i + 4..].contains(" s") =>
            {
                &line[..i]
            }
            _ => line,
        };
        let mut out = String::new();
        let mut rest = line;
        while let Some(i) = rest.find("/tmp/tour/") {
            let (head, tail) = rest.split_at(i + "/tmp/tour/".len());
            out.push_str(head);
            let digits = tail.bytes().take_while(u8::is_ascii_digit).count();
            if digits > 0 && tail[digits..].starts_with(".sst") {
                out.push('N');
                rest = &tail[digits..];
            } else {
                rest = tail;
            }
        }
        out.push_str(rest);
        out
    };
    for (cmd, want) in &steps {
        let o = Command::new("sh")
            .arg("-c")
            .arg(cmd.replace("/tmp/tour", store))
            .current_dir(work.path())
            .env("PATH", &path)
            .stdin(Stdio::null())
            .output()
            .expect("run sh");
        assert!(o.status.success(), "{cmd}: {o:?}");
        assert!(o.stderr.is_empty(), "{cmd}: {}", stderr(&o));
        let got = stdout(&o).replace(store, "/tmp/tour");
        let mut got_lines = got.lines().map(steady);
        for w in want {
            let w = steady(w);
            assert!(
                got_lines.any(|g| g == w),
                "{cmd}: the README shows {w:?}, which is not (in this order) in what it printed:\n{got}"
            );
        }
    }
}

/// A store in a directory the user may not search: the commands say
/// permission denied (an I/O failure, exit status 4), not that the
/// directory holds no store. As root, whom permissions do not bind, the
/// commands run as the unprivileged user 65534.
#[cfg(target_os = "linux")]
#[test]
fn a_store_the_user_may_not_read_is_reported_as_such() {
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::process::CommandExt;
    let dir = tempfile::tempdir().unwrap();
    let mode = |p: &Path, m: u32| std::fs::set_permissions(p, std::fs::Permissions::from_mode(m));
    mode(dir.path(), 0o755).unwrap();
    let s = dir.path().join("store");
    let s = s.to_str().unwrap();
    ok(&["db", "put", s, "k", "v"]);
    ok(&["db", "compact", s]);
    let table = std::fs::read_dir(s)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "sst"))
        .expect("a table after the compaction");
    let table = table.to_str().unwrap();
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    mode(Path::new(s), if root { 0o700 } else { 0o000 }).unwrap();
    let run = |args: &[&str]| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_bloomlsm"));
        cmd.args(args).stdin(Stdio::null());
        if root {
            cmd.uid(65534).gid(65534);
        }
        cmd.output().expect("run bloomlsm")
    };
    for args in [
        &["db", "get", s, "k"][..],
        &["db", "scan", s],
        &["db", "stats", s],
        &["db", "put", s, "k", "w"],
        &["db", "delete", s, "k"],
        &["sst", "dump", table],
    ] {
        let o = run(args);
        assert_one_line_error(&o);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(4), "{args:?}: {err}");
        assert!(err.contains("Permission denied"), "{args:?}: {err}");
        assert!(!err.contains("not a bloomlsm store"), "{args:?}: {err}");
        assert!(!err.contains("no such file"), "{args:?}: {err}");
    }
    mode(Path::new(s), 0o755).unwrap();
    assert_eq!(ok(&["db", "get", s, "k"]), "v\n");
}

#[test]
fn text_hex_and_json_forms_of_keys_and_values() {
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("store");
    let s = s.to_str().unwrap();
    assert!(
        bloomlsm(&["db", "put", s, "café", "crème brûlée"])
            .status
            .success()
    );
    assert!(
        bloomlsm(&["db", "put", s, "--hex", "0x00ff", "6869"])
            .status
            .success()
    );
    // UTF-8 prints as text; other bytes as \xNN; --hex both ways.
    assert_eq!(
        stdout(&bloomlsm(&["db", "get", s, "café"])),
        "crème brûlée\n"
    );
    assert_eq!(stdout(&bloomlsm(&["db", "get", s, "\\x00\\xff"])), "hi\n");
    assert_eq!(
        stdout(&bloomlsm(&["db", "get", s, "--hex", "636166c3a9"])),
        "6372c3a86d65206272c3bb6cc3a965\n"
    );
    assert_eq!(
        stdout(&bloomlsm(&["db", "scan", s])),
        "\\x00\\xff\thi\ncafé\tcrème brûlée\n"
    );
    assert_eq!(
        stdout(&bloomlsm(&["db", "scan", s, "--hex", "--keys-only"])),
        "00ff\n636166c3a9\n"
    );
    // JSON: one object, or one per line for scans.
    let o = bloomlsm(&["db", "get", s, "café", "--json"]);
    assert_eq!(
        json(&stdout(&o)),
        serde_json::json!({"key": "café", "found": true, "value": "crème brûlée"})
    );
    let o = bloomlsm(&["db", "get", s, "nope", "--json"]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(json(&stdout(&o))["found"], false);
    assert!(json(&stdout(&o))["value"].is_null());
    let o = bloomlsm(&["db", "scan", s, "--json", "--from", "c"]);
    let lines: Vec<Value> = stdout(&o).lines().map(json).collect();
    assert_eq!(
        lines,
        [serde_json::json!({"key": "café", "value": "crème brûlée"})]
    );
    let o = bloomlsm(&["db", "scan", s, "--json", "--hex", "--limit", "1"]);
    assert_eq!(
        json(&stdout(&o)),
        serde_json::json!({"key": "00ff", "value": "6869"})
    );
    // Bad hex is a usage error, and writes nothing.
    let fresh = dir.path().join("fresh");
    let o = bloomlsm(&["db", "put", fresh.to_str().unwrap(), "--hex", "6", "00"]);
    assert_eq!(o.status.code(), Some(2));
    assert_one_line_error(&o);
    assert!(
        stderr(&o).contains("odd number of hex digits"),
        "{}",
        stderr(&o)
    );
    assert!(!fresh.exists(), "a usage error created the store");
}

#[test]
fn put_reads_large_values_from_stdin_and_files() {
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("store");
    let s = s.to_str().unwrap();
    // 200 KB of every byte value: too long for an argument list, not for stdin.
    let value: Vec<u8> = (0..200_000u32).map(|i| (i * 7 % 251) as u8).collect();
    let o = bloomlsm_stdin(&["db", "put", s, "big", "-"], &value);
    assert!(o.status.success(), "{o:?}");
    assert_eq!(bloomlsm(&["db", "get", s, "big", "--raw"]).stdout, value);
    let file = dir.path().join("value.bin");
    std::fs::write(&file, &value[..1000]).unwrap();
    let f = file.to_str().unwrap();
    assert!(
        bloomlsm(&["db", "put", s, "small", "--value-file", f])
            .status
            .success()
    );
    assert_eq!(
        bloomlsm(&["db", "get", s, "small", "--raw"]).stdout,
        &value[..1000]
    );
    // A literal `-` is \x2d; a value and --value-file together are a usage error.
    assert!(
        bloomlsm(&["db", "put", s, "dash", "\\x2d"])
            .status
            .success()
    );
    assert_eq!(stdout(&bloomlsm(&["db", "get", s, "dash"])), "-\n");
    let o = bloomlsm(&["db", "put", s, "k", "v", "--value-file", f]);
    assert_eq!(o.status.code(), Some(2));
    assert_one_line_error(&o);
    // Over the 32 MiB limit: bad data (3), and no store is created.
    let huge = dir.path().join("huge.bin");
    std::fs::write(&huge, vec![b'x'; (32 << 20) + 1]).unwrap();
    let fresh = dir.path().join("fresh");
    let o = bloomlsm(&[
        "db",
        "put",
        fresh.to_str().unwrap(),
        "k",
        "--value-file",
        huge.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(3), "{o:?}");
    assert_one_line_error(&o);
    assert!(
        stderr(&o).contains("33,554,432-byte limit"),
        "{}",
        stderr(&o)
    );
    assert!(!fresh.exists());
}

/// A file of a store: name, bytes, modification time.
type FileState = (String, Vec<u8>, std::time::SystemTime);

/// Every file of a store directory with its bytes and modification time
/// (those of a keyspace's directory as `keyspace-NNNNNN/NAME`, and the
/// directory itself with no bytes), plus the directory's own modification
/// time (changed by any file created, renamed or deleted in it).
fn snapshot(dir: &Path) -> (Vec<FileState>, std::time::SystemTime) {
    fn walk(dir: &Path, prefix: &str, out: &mut Vec<FileState>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            let name = format!("{prefix}{}", p.file_name().unwrap().to_string_lossy());
            let modified = std::fs::metadata(&p).unwrap().modified().unwrap();
            if p.is_dir() {
                walk(&p, &format!("{name}/"), out);
                out.push((name, Vec::new(), modified));
            } else {
                out.push((name, std::fs::read(&p).unwrap(), modified));
            }
        }
    }
    let mut files = Vec::new();
    walk(dir, "", &mut files);
    files.sort();
    (files, std::fs::metadata(dir).unwrap().modified().unwrap())
}

#[test]
fn load_is_all_or_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let s = store.to_str().unwrap();
    assert!(bloomlsm(&["db", "put", s, "before", "1"]).status.success());
    let before = stdout(&bloomlsm(&["db", "scan", s]));

    // Line 2,501 is bad and so is line 3,002: nothing of the 3,000 good lines
    // is written, and the message names the first bad line and the count.
    let mut text = String::new();
    for i in 1..=3002 {
        match i {
            2501 => text.push_str("bad\\q\tvalue\n"),
            3002 => text.push_str("\tno key\n"),
            _ => text.push_str(&format!("k{i:05}\tv{i}\n")),
        }
    }
    let bad = dir.path().join("bad.tsv");
    std::fs::write(&bad, &text).unwrap();
    let o = bloomlsm(&["db", "load", s, bad.to_str().unwrap(), "-q"]);
    assert_eq!(o.status.code(), Some(3), "{o:?}");
    assert_one_line_error(&o);
    let err = stderr(&o);
    assert!(err.contains("bad.tsv:2501: key: bad escape"), "{err}");
    assert!(
        err.contains("2 bad lines in all, nothing was written"),
        "{err}"
    );
    assert_eq!(stdout(&bloomlsm(&["db", "scan", s])), before);
    // The same from stdin.
    let o = bloomlsm_stdin(&["db", "load", s, "-", "-q"], text.as_bytes());
    assert_eq!(o.status.code(), Some(3));
    assert!(stderr(&o).contains("<stdin>:2501:"), "{}", stderr(&o));
    assert_eq!(stdout(&bloomlsm(&["db", "scan", s])), before);

    // An oversized key or value: the same file:line message and status.
    let big = dir.path().join("big.tsv");
    std::fs::write(&big, format!("ok\t1\n{}\tv\n", "k".repeat(65_537))).unwrap();
    let o = bloomlsm(&["db", "load", s, big.to_str().unwrap(), "-q"]);
    assert_eq!(o.status.code(), Some(3));
    assert!(
        stderr(&o).contains("big.tsv:2: key of 65,537 bytes is over the 65,536-byte limit"),
        "{}",
        stderr(&o)
    );
    assert_eq!(stdout(&bloomlsm(&["db", "scan", s])), before);

    // A bad file does not create a store either.
    let fresh = dir.path().join("fresh");
    let o = bloomlsm(&["db", "load", fresh.to_str().unwrap(), bad.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(3));
    assert!(!fresh.exists());

    // Good input, in hex.
    let o = bloomlsm_stdin(
        &["db", "load", s, "-", "--hex", "-q"],
        b"6b31\t7631\n6b32\n",
    );
    assert!(o.status.success(), "{o:?}");
    assert!(stdout(&o).starts_with("loaded 2 records"), "{}", stdout(&o));
    assert_eq!(stdout(&bloomlsm(&["db", "get", s, "k1"])), "v1\n");
}

/// `db stats` says per level what its filters hold and the reads they
/// saved (their "absent" answers) per MiB; a level whose filters answered
/// none of at least 1,000 lookups "absent" is flagged in one line, one
/// that answered fewer lookups is not; without lookups, or without
/// filters, one line says so.
#[test]
fn db_stats_filters_paying() {
    let dir = tempfile::tempdir().unwrap();
    let input: String = (0..5000).map(|i| format!("k{i:05}\n")).collect();
    let load = |name: &str, filter: &str| {
        let s = dir.path().join(name).to_str().unwrap().to_string();
        let o = bloomlsm_stdin(
            &["db", "load", &s, "-", "-q", "--filter", filter],
            input.as_bytes(),
        );
        assert!(o.status.success(), "{o:?}");
        s
    };
    let good = load("good", "blocked512:10");
    // 16 probes into half a bit per key: every bit set, every answer "maybe".
    let saturated = load("saturated", "blocked512:0.5:16");
    let paying =
        |s: &str, probes: &str| json(&ok(&["db", "stats", s, "--json", "--probe", probes]));
    let v = paying(&good, "2000");
    let p = &v["filters_paying"];
    assert_eq!(p["unpaid_after_checks"], 1000);
    let levels = p["levels"].as_array().unwrap();
    assert!(!levels.is_empty(), "{v}");
    for l in levels {
        let level = v["levels"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["level"] == l["level"])
            .unwrap();
        assert_eq!(l["reads_saved"], level["filter_negatives"], "{l}");
        assert_eq!(l["filter_bytes"], level["filter_bytes"], "{l}");
        let per_mib = l["reads_saved"].as_f64().unwrap()
            / (l["filter_bytes"].as_f64().unwrap() / (1u64 << 20) as f64);
        assert!((l["reads_saved_per_mib"].as_f64().unwrap() - per_mib).abs() < 1e-6 * per_mib);
        assert_eq!(l["unpaid"], false, "{l}");
    }
    let text = ok(&["db", "stats", &good, "--probe", "2000"]);
    assert!(
        text.contains("filters paying for themselves: the reads"),
        "{text}"
    );
    assert!(!text.contains("flagged"), "{text}");

    let v = paying(&saturated, "1500");
    let l = &v["filters_paying"]["levels"][0];
    assert_eq!(
        (&l["reads_saved"], &l["unpaid"]),
        (&Value::from(0), &Value::Bool(true)),
        "{v}"
    );
    let text = ok(&["db", "stats", &saturated, "--probe", "1500"]);
    let flagged: Vec<&str> = text.lines().filter(|l| l.contains("flagged")).collect();
    assert_eq!(flagged.len(), 1, "{text}");
    assert!(flagged[0].contains("none of 1,500 lookups"), "{text}");
    // Fewer lookups than that prove nothing yet.
    let v = paying(&saturated, "999");
    assert_eq!(v["filters_paying"]["levels"][0]["unpaid"], false, "{v}");

    let text = ok(&["db", "stats", &good]);
    assert!(text.contains("no lookup has checked a filter"), "{text}");
    let none = load("none", "none");
    let text = ok(&["db", "stats", &none, "--probe", "100"]);
    assert!(text.contains("the store holds no filters"), "{text}");
    assert_eq!(
        paying(&none, "100")["filters_paying"]["levels"],
        serde_json::json!([])
    );
}

#[test]
fn store_and_table_json() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let s = store.to_str().unwrap();
    let input: String = (0..5000).map(|i| format!("k{i:05}\tv{i}\n")).collect();
    assert!(
        bloomlsm_stdin(&["db", "load", s, "-", "-q"], input.as_bytes())
            .status
            .success()
    );
    assert!(bloomlsm(&["db", "compact", s]).status.success());

    let o = bloomlsm(&["db", "stats", s, "--json", "--probe", "1000", "--files"]);
    assert!(o.status.success(), "{o:?}");
    let v = json(&stdout(&o));
    let levels = v["levels"].as_array().unwrap();
    let keys: u64 = levels.iter().map(|l| l["keys"].as_u64().unwrap()).sum();
    assert_eq!(keys, 5000);
    assert_eq!(v["total"]["keys"], 5000);
    assert_eq!(v["probe"]["lookups"], 1000);
    assert_eq!(v["probe"]["found"], 0);
    assert!(v["memory"]["filter_bytes"].as_u64() > Some(0));
    // RocksDB's ticker names carry the store's own counters.
    let tickers = &v["tickers"];
    let negatives = v["total"]["filter_negatives"].as_u64().unwrap();
    assert!(negatives > 0, "{v}");
    assert_eq!(tickers["rocksdb.bloom.filter.useful"], negatives);
    assert_eq!(tickers["rocksdb.number.keys.read"], 1000);
    assert_eq!(
        tickers["bloomlsm.filter.false.positive"],
        v["total"]["false_positives"]
    );
    let files = v["files"].as_array().unwrap();
    assert!(files[0]["file"].as_str().unwrap().ends_with(".sst"));
    assert!(bloomlsm(&["db", "stats", s, "--json"]).status.success());
    assert!(json(&stdout(&bloomlsm(&["db", "stats", s, "--json"])))["probe"].is_null());

    let o = bloomlsm(&["db", "verify", s, "--json"]);
    assert_eq!(
        json(&stdout(&o)),
        serde_json::json!({"store": s, "ok": true, "files": files.len(), "entries": 5000,
            "bytes": files.iter().map(|f| f["bytes"].as_u64().unwrap()).sum::<u64>(),
            "wal_tail_bytes_dropped": 0, "wal_records_salvaged": 0, "error": null})
    );

    let table = store.join(files[0]["file"].as_str().unwrap());
    let t = table.to_str().unwrap();
    let o = bloomlsm(&[
        "sst",
        "dump",
        t,
        "--json",
        "--entries",
        "--blocks",
        "--limit",
        "2",
    ]);
    assert!(o.status.success(), "{o:?}");
    let d = json(&stdout(&o));
    assert_eq!(d["entries"], 5000);
    assert_eq!(d["key_format"], "internal");
    assert_eq!(d["smallest_key"]["key"], "k00000");
    assert_eq!(d["smallest_key"]["kind"], "put");
    assert_eq!(d["filter"]["policy"], "blocked512");
    assert_eq!(d["filter"]["keys"], 5000);
    assert_eq!(d["records"].as_array().unwrap().len(), 2);
    assert_eq!(d["records"][1]["value"], "v1");
    assert_eq!(d["blocks"].as_array().unwrap().len(), 2);
    let created = d["created_utc"].as_str().unwrap();
    assert!(created.len() == 20 && created.ends_with('Z'), "{created}");
    // The text dump shows the same date.
    let text = stdout(&bloomlsm(&["sst", "dump", t]));
    let date = format!("{} {} UTC", &created[..10], &created[11..19]);
    assert!(text.contains(&date), "{date} not in:\n{text}");

    let o = bloomlsm(&["sst", "filter-test", t, "--json", "--probes", "20000"]);
    let f = json(&stdout(&o));
    assert_eq!(f["probes"], 20000);
    let (lo, fpr, hi) = (
        f["measured_fpr_low95"].as_f64().unwrap(),
        f["measured_fpr"].as_f64().unwrap(),
        f["measured_fpr_high95"].as_f64().unwrap(),
    );
    assert!(lo <= fpr && fpr <= hi && hi < 0.05, "{f}");
    assert_eq!(f["filter"], d["filter"]);

    // sst verify --json: one object; a corrupt file makes ok false and exit 1.
    let bad = dir.path().join("bad.sst");
    let mut bytes = std::fs::read(&table).unwrap();
    bytes[100] ^= 0x40;
    std::fs::write(&bad, &bytes).unwrap();
    let o = bloomlsm(&["sst", "verify", t, bad.to_str().unwrap(), "--json"]);
    assert_eq!(o.status.code(), Some(1));
    assert_one_line_error(&o);
    let v = json(&stdout(&o));
    assert_eq!(v["ok"], false);
    assert_eq!(v["files"][0]["ok"], true);
    assert_eq!(v["files"][0]["entries"], 5000);
    assert_eq!(v["files"][1]["ok"], false);
    assert!(
        v["files"][1]["error"]
            .as_str()
            .unwrap()
            .contains("corruption")
    );
}

#[test]
fn bench_checks_output_paths_first() {
    let dir = tempfile::tempdir().unwrap();
    let small = [
        "bench",
        "--keys",
        "2000",
        "--lookups",
        "100",
        "--configs",
        "blocked8",
        "--quiet",
    ];
    let run = |extra: &[&str]| {
        let args: Vec<&str> = small.iter().chain(extra).copied().collect();
        bloomlsm(&args)
    };
    // A chart in a missing directory fails at once, before --dir is created.
    let stores = dir.path().join("stores");
    let d = stores.to_str().unwrap();
    let o = run(&["--dir", d, "--plot", "/nonexistent/dir/chart.svg"]);
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    assert_one_line_error(&o);
    assert!(o.stdout.is_empty() && !stores.exists());
    // --dir keeps the store; a second run refuses it unless --reuse-dir.
    assert!(run(&["--dir", d, "--csv"]).status.success());
    let kept = stores.join("blocked8");
    assert!(kept.join("CURRENT").exists());
    let files = snapshot(&kept);
    let o = run(&["--dir", d, "--csv"]);
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    assert_one_line_error(&o);
    assert!(stderr(&o).contains("--reuse-dir"), "{}", stderr(&o));
    assert_eq!(snapshot(&kept), files, "a refused run touched the store");
    assert!(run(&["--dir", d, "--csv", "--reuse-dir"]).status.success());
    // A store itself is not a --dir.
    let o = run(&["--dir", kept.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("is a bloomlsm store"), "{}", stderr(&o));
    let o = bloomlsm(&["bench", "--reuse-dir"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn bench_json_with_plot_includes_the_sweep() {
    let dir = tempfile::tempdir().unwrap();
    let svg = dir.path().join("chart.svg");
    let o = bloomlsm(&[
        "bench",
        "--keys",
        "3000",
        "--lookups",
        "300",
        "--configs",
        "blocked8",
        "--json",
        "--quiet",
        "--sweep-keys",
        "2000",
        "--sweep-probes",
        "20000",
        "--plot",
        svg.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{o:?}");
    let lines: Vec<Value> = stdout(&o).lines().map(json).collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["config"], "blocked8");
    let sweep = lines[1]["sweep"].as_array().unwrap();
    // Bits per key 2..=20 for each of the three filter kinds.
    assert_eq!(sweep.len(), 57);
    for kind in ["blocked512", "bloom", "ribbon"] {
        assert_eq!(
            sweep.iter().filter(|p| p["filter"] == kind).count(),
            19,
            "{kind}"
        );
    }
    assert_eq!(lines[1]["sweep_keys"], 2000);
    for p in sweep {
        assert_eq!(p["probes"], 20000);
        let fpr = p["measured_fpr"].as_f64().unwrap();
        let pred = p["predicted_fpr"].as_f64().unwrap();
        assert!(fpr <= 1.0 && pred > 0.0, "{p}");
    }
    assert!(svg.exists());
}

#[test]
fn usage_errors_suggest_and_completions_generate() {
    let o = bloomlsm(&["bnech"]);
    assert_eq!(o.status.code(), Some(2));
    assert_one_line_error(&o);
    assert!(
        stderr(&o).contains("tip: a similar subcommand exists: 'bench'"),
        "{}",
        stderr(&o)
    );
    let o = bloomlsm(&["db", "scan", "/tmp", "--key-only"]);
    assert_one_line_error(&o);
    assert!(stderr(&o).contains("'--keys-only'"), "{}", stderr(&o));
    for args in [&["db"][..], &[]] {
        let o = bloomlsm(args);
        assert_eq!(o.status.code(), Some(2));
        assert_one_line_error(&o);
        assert!(stderr(&o).contains("needs a command") || stderr(&o).contains("is needed"));
    }
    for (shell, marker) in [
        ("bash", "complete -F"),
        ("zsh", "#compdef bloomlsm"),
        ("fish", "complete -c bloomlsm"),
    ] {
        let o = bloomlsm(&["completions", shell]);
        assert!(o.status.success(), "{o:?}");
        let script = stdout(&o);
        assert!(script.contains(marker), "{shell}: {script}");
        assert!(script.contains("filter-test"), "{shell}");
    }
}

/// A store with tables on two levels, a write-ahead log with records not yet
/// in any table (so that a read replays it), and a deletion.
fn store_with_wal(dir: &Path) -> std::path::PathBuf {
    let store = dir.join("store");
    let s = store.to_str().unwrap();
    let input: String = (0..3000).map(|i| format!("k{i:05}\tv{i}\n")).collect();
    assert!(
        bloomlsm_stdin(&["db", "load", s, "-", "-q"], input.as_bytes())
            .status
            .success()
    );
    assert!(bloomlsm(&["db", "compact", s]).status.success());
    assert!(
        bloomlsm(&["db", "put", s, "wal-only", "fresh"])
            .status
            .success()
    );
    assert!(bloomlsm(&["db", "delete", s, "k00001"]).status.success());
    store
}

/// The read commands: `(arguments, expected exit status)`.
fn read_commands(store: &Path) -> Vec<(Vec<String>, i32)> {
    let s = store.to_str().unwrap().to_string();
    let mut tables: Vec<String> = std::fs::read_dir(store)
        .unwrap()
        .map(|e| e.unwrap().path().to_str().unwrap().to_string())
        .filter(|p| p.ends_with(".sst"))
        .collect();
    tables.sort();
    assert!(!tables.is_empty());
    let args = |a: &[&str]| a.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    let mut cmds = vec![
        (args(&["db", "get", &s, "wal-only"]), 0),
        (args(&["db", "get", &s, "k00002", "--json"]), 0),
        (args(&["db", "get", &s, "k00001"]), 1),
        (args(&["db", "scan", &s]), 0),
        (args(&["db", "scan", &s, "--json", "--hex"]), 0),
        (args(&["db", "stats", &s, "--probe", "500", "--files"]), 0),
        (args(&["db", "stats", &s, "--json"]), 0),
        (args(&["db", "verify", &s]), 0),
        (args(&["db", "verify", &s, "--json"]), 0),
        // No get has been counted: nothing to advise on.
        (args(&["db", "advise", &s]), 1),
    ];
    for t in &tables {
        cmds.push((args(&["sst", "dump", t, "--entries", "--blocks"]), 0));
        cmds.push((args(&["sst", "dump", t, "--json"]), 0));
        cmds.push((args(&["sst", "filter-test", t, "--probes", "2000"]), 0));
    }
    let mut verify = args(&["sst", "verify", "--json"]);
    verify.extend(tables);
    cmds.push((verify, 0));
    cmds
}

/// Runs a read command and checks its exit status and what it saw.
fn run_read(args: &[String], code: i32, as_user: Option<u32>) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_bloomlsm"));
    cmd.args(args).stdin(Stdio::null());
    if let Some(uid) = as_user {
        use std::os::unix::process::CommandExt;
        cmd.uid(uid).gid(uid);
    }
    let o = cmd.output().expect("run bloomlsm");
    assert_eq!(o.status.code(), Some(code), "{args:?}: {o:?}");
    let out = stdout(&o);
    match args[..2].join(" ").as_str() {
        "db get" if code == 0 && args[3] == "wal-only" => assert_eq!(out, "fresh\n"),
        "db scan" => {
            // 3,000 loaded, one deleted, one put after the compaction.
            assert_eq!(out.lines().count(), 3000, "{args:?}");
            assert!(out.contains("wal-only") || out.contains("77616c2d6f6e6c79"));
        }
        "db verify" => assert!(out.contains("OK") || out.contains("\"ok\":true"), "{out}"),
        _ => {}
    }
}

/// The effective user id of this process (the owner of a file it creates).
fn my_uid(dir: &Path) -> u32 {
    use std::os::unix::fs::MetadataExt;
    let probe = dir.join("uid-probe");
    std::fs::write(&probe, b"").unwrap();
    let uid = std::fs::metadata(&probe).unwrap().uid();
    std::fs::remove_file(&probe).unwrap();
    uid
}

#[test]
fn read_commands_change_no_file() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_with_wal(dir.path());
    // The open that follows a write leaves a log behind: the reads below must
    // replay it without rolling it into a new one.
    assert!(
        std::fs::read_dir(&store).unwrap().any(|e| e
            .unwrap()
            .path()
            .extension()
            .is_some_and(|x| x == "log"))
    );
    for (args, code) in read_commands(&store) {
        let before = snapshot(&store);
        run_read(&args, code, None);
        assert!(
            snapshot(&store) == before,
            "{args:?} changed the store's files"
        );
    }
}

#[test]
fn read_commands_work_on_a_directory_the_user_cannot_write() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let store = store_with_wal(dir.path());
    let set_mode = |dir_mode: u32, file_mode: u32| {
        for e in std::fs::read_dir(&store).unwrap() {
            let p = e.unwrap().path();
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(file_mode)).unwrap();
        }
        std::fs::set_permissions(&store, std::fs::Permissions::from_mode(dir_mode)).unwrap();
    };
    // World-readable, nobody may write: `chmod -R a-w`.
    set_mode(0o555, 0o444);
    // Tests usually run as root here, and root writes through missing write
    // bits. So as root, the commands also run as user `nobody` (65534), for
    // whom the store really is read-only (a write command fails to show it);
    // and the byte-for-byte snapshot checks that root's runs change nothing.
    let mut nobody = (my_uid(dir.path()) == 0).then_some(65_534);
    if nobody.is_some() {
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let mut version = Command::new(env!("CARGO_BIN_EXE_bloomlsm"));
        {
            use std::os::unix::process::CommandExt;
            version.arg("--version").uid(65_534).gid(65_534);
        }
        if !version.output().is_ok_and(|o| o.status.success()) {
            // The binary's path is closed to other users: root's runs only.
            eprintln!("note: user nobody cannot run the binary here; root's runs only");
            nobody = None;
        }
    }
    if nobody.is_some() {
        let mut put = Command::new(env!("CARGO_BIN_EXE_bloomlsm"));
        {
            use std::os::unix::process::CommandExt;
            put.args(["db", "put", store.to_str().unwrap(), "k", "v"])
                .uid(65_534)
                .gid(65_534);
        }
        let o = put.output().unwrap();
        assert_eq!(o.status.code(), Some(4), "a write as nobody: {o:?}");
        assert!(stderr(&o).contains("ermission denied"), "{}", stderr(&o));
    }
    for (args, code) in read_commands(&store) {
        let before = snapshot(&store);
        for user in [nobody, None] {
            run_read(&args, code, user);
            assert!(
                snapshot(&store) == before,
                "{args:?} as {user:?} changed the store"
            );
        }
    }
    set_mode(0o755, 0o644);
}

#[test]
fn read_commands_work_beside_a_running_writer() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let s = store.to_str().unwrap();
    // This process holds the store open for writing (and its LOCK), with
    // data in tables and in the write-ahead log, as during a `db load`.
    let db = bloomlsm::Db::open(&store, bloomlsm::Options::default()).unwrap();
    for i in 0..2000 {
        db.put(format!("k{i:05}"), format!("v{i}")).unwrap();
    }
    db.flush().unwrap();
    for i in 2000..2100 {
        db.put(format!("k{i:05}"), format!("v{i}")).unwrap();
    }
    // A second writer is refused: the lock is real.
    let o = bloomlsm(&["db", "put", s, "x", "y"]);
    assert_eq!(o.status.code(), Some(4), "{o:?}");
    assert_one_line_error(&o);

    assert_eq!(stdout(&bloomlsm(&["db", "get", s, "k00007"])), "v7\n");
    assert_eq!(stdout(&bloomlsm(&["db", "get", s, "k02099"])), "v2099\n");
    let o = bloomlsm(&["db", "scan", s, "--keys-only"]);
    assert!(o.status.success(), "{o:?}");
    assert_eq!(stdout(&o).lines().count(), 2100);
    let o = bloomlsm(&["db", "stats", s, "--json", "--probe", "100"]);
    assert!(o.status.success(), "{o:?}");
    assert!(json(&stdout(&o))["total"]["keys"].as_u64() >= Some(2000));
    let o = bloomlsm(&["db", "verify", s]);
    assert!(o.status.success(), "{o:?}");

    // A checkpoint beside the writer, from the store's files: the tables and
    // the writes still in the log.
    let backup = dir.path().join("backup");
    let o = bloomlsm(&["db", "checkpoint", s, backup.to_str().unwrap(), "--json"]);
    assert!(o.status.success(), "{o:?}");
    assert!(json(&stdout(&o))["tables"].as_u64() >= Some(1));
    let b = backup.to_str().unwrap();
    assert_eq!(stdout(&bloomlsm(&["db", "get", b, "k02099"])), "v2099\n");
    let o = bloomlsm(&["db", "scan", b, "--keys-only"]);
    assert_eq!(stdout(&o).lines().count(), 2100);

    // The writer goes on undisturbed, and a reader started later sees it.
    db.put("late", "write").unwrap();
    db.compact().unwrap();
    assert_eq!(stdout(&bloomlsm(&["db", "get", s, "late"])), "write\n");
    db.close().unwrap();
}

/// Every table's filter line from `sst dump`, e.g. "bloom: 12 bits/key requested, k=8".
fn table_filters(store: &Path) -> Vec<String> {
    let mut v = Vec::new();
    for e in std::fs::read_dir(store).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "sst") {
            let o = bloomlsm(&["sst", "dump", p.to_str().unwrap()]);
            assert!(o.status.success(), "{}", stderr(&o));
            let line = stdout(&o)
                .lines()
                .find(|l| l.starts_with("filter "))
                .unwrap()
                .to_string();
            let what = line["filter".len()..].trim();
            v.push(what.split(", ").take(2).collect::<Vec<_>>().join(", "));
        }
    }
    v
}

#[test]
fn a_store_keeps_the_filter_design_it_was_made_with() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    let s = store.to_str().unwrap();
    let o = bloomlsm(&["db", "put", s, "k", "v", "--filter", "bloom:12"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let keys: String = (0..20_000).map(|i| format!("key{i:06}\tv{i}\n")).collect();
    let o = bloomlsm_stdin(&["db", "load", s, "-", "-q"], keys.as_bytes());
    assert!(o.status.success(), "{}", stderr(&o));
    // No flags: the recorded design, not the default blocked512:10.
    let o = bloomlsm(&["db", "compact", s]);
    assert!(o.status.success(), "{}", stderr(&o));
    let filters = table_filters(&store);
    assert!(!filters.is_empty());
    for f in &filters {
        assert_eq!(f, "bloom: 12 bits/key requested, k=8", "{filters:?}");
    }
    let o = bloomlsm(&["db", "stats", s]);
    assert!(
        stdout(&o).contains("design: filter bloom:12:8; compression lz4, L0 none\n"),
        "{}",
        stdout(&o)
    );

    // Flags change the design for new files, and the change is logged.
    let more: String = (0..3000).map(|i| format!("new{i:06}\tv\n")).collect();
    let o = bloomlsm_stdin(
        &[
            "db",
            "load",
            s,
            "-",
            "-q",
            "--filter",
            "none",
            "--level-filter",
            "0=blocked512:6",
        ],
        more.as_bytes(),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(store.join("OPTIONS")).unwrap();
    assert!(text.contains("filter = none\n"), "{text}");
    assert!(
        text.contains("changed by the caller: filter: bloom:12:8 -> none; filter.level.0: (unset) -> blocked512:6:"),
        "{text}"
    );
    let o = bloomlsm(&["db", "compact", s]);
    assert!(o.status.success(), "{}", stderr(&o));
    // New files follow the new design; the old one keeps its own filter.
    let filters = table_filters(&store);
    assert!(filters.iter().any(|f| f.starts_with("none")), "{filters:?}");
    assert!(
        filters
            .iter()
            .all(|f| f.starts_with("none") || f == "bloom: 12 bits/key requested, k=8"),
        "{filters:?}"
    );
}

#[test]
fn stats_probes_reach_the_filters() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    let s = store.to_str().unwrap();
    // Every third key: a probe inside the range is absent.
    let keys: String = (0..60_000).map(|i| format!("k{:07}\tv\n", i * 3)).collect();
    let o = bloomlsm_stdin(&["db", "load", s, "-", "-q"], keys.as_bytes());
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(bloomlsm(&["db", "compact", s]).status.success());
    let o = bloomlsm(&["db", "stats", s, "--probe", "50000", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v = json(stdout(&o).trim());
    assert_eq!(v["probe"]["found"], 0);
    let total = &v["total"];
    let checks = total["filter_checks"].as_u64().unwrap();
    assert!(checks >= 50_000, "{v}");
    for l in v["levels"].as_array().unwrap() {
        let observed = l["observed_fpr"].as_f64().unwrap();
        let predicted = l["predicted_fpr_of_checks"].as_f64().unwrap();
        // ~480 false positives expected: 25% is five standard deviations.
        assert!(
            (0.75..1.25).contains(&(observed / predicted)),
            "observed {observed}, predicted {predicted}: {l}"
        );
    }
}

#[test]
fn compression_flags_are_recorded_and_reported() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    let s = store.to_str().unwrap();
    let zstd = if cfg!(feature = "zstd") {
        "zstd:7"
    } else {
        "lz4"
    };
    // Compressible values; written with the codec on every level.
    let input: String = (0..3000)
        .map(|i| format!("key{i:06}\tvalue-{}\n", "abc".repeat(20 + i % 7)))
        .collect();
    let o = bloomlsm_stdin(
        &["db", "load", s, "-", "--quiet", "--compression", zstd],
        input.as_bytes(),
    );
    assert!(o.status.success(), "{o:?}");
    let o = bloomlsm(&["db", "compact", s]);
    assert!(o.status.success(), "{o:?}");
    let options = std::fs::read_to_string(store.join("OPTIONS")).unwrap();
    assert!(
        options.contains(&format!("\ncompression = {zstd}\n")),
        "{options}"
    );
    // Per-level replacement; the rest of the recorded design stays.
    let o = bloomlsm(&["db", "put", s, "k", "v", "--level-compression", "0=none"]);
    assert!(o.status.success(), "{o:?}");
    let options = std::fs::read_to_string(store.join("OPTIONS")).unwrap();
    assert!(
        options.contains("\ncompression.level.0 = none\n"),
        "{options}"
    );
    assert!(
        options.contains(&format!("\ncompression = {zstd}\n")),
        "{options}"
    );

    let o = bloomlsm(&["db", "stats", s, "--files", "--json"]);
    assert!(o.status.success(), "{o:?}");
    let v = json(&stdout(&o));
    let f = &v["files"][0];
    assert_eq!(f["compression"], zstd, "{v}");
    let (raw, stored) = (
        f["data_raw_bytes"].as_u64().unwrap(),
        f["data_bytes"].as_u64().unwrap(),
    );
    assert!(raw > 3 * stored, "{raw} vs {stored}");

    // sst dump: per file and per block.
    let sst = std::fs::read_dir(&store)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "sst"))
        .unwrap();
    let o = bloomlsm(&["sst", "dump", sst.to_str().unwrap(), "--json", "--blocks"]);
    assert!(o.status.success(), "{o:?}");
    let d = json(&stdout(&o));
    assert_eq!(d["compression"], zstd);
    assert_eq!(d["footer_format_version"], 2);
    assert!(d["compression_ratio"].as_f64().unwrap() > 3.0, "{d}");
    assert_eq!(d["compressed_blocks"], d["data_blocks"]);
    let b = &d["blocks"][0];
    assert_eq!(b["type"], &zstd[..4]);
    assert!(b["raw_size"].as_u64().unwrap() > b["size"].as_u64().unwrap());
    let o = bloomlsm(&["sst", "dump", sst.to_str().unwrap()]);
    assert!(
        stdout(&o).contains(&format!("compression      {zstd}: ")),
        "{}",
        stdout(&o)
    );
}

/// Design flags a store cannot take, as one table: each is a usage error
/// (status 2) in one line and `db put` writes nothing; `bench`, where it
/// takes the flag too, refuses it alike.
#[test]
fn bad_design_flags_are_usage_errors_and_write_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("new");
    let s = store.to_str().unwrap();
    // (the flags, whether `bench` takes them)
    let table: &[(&[&str], bool)] = &[
        (&["--filter", "bogus:3"], false),
        (&["--filter", "bloom:0.1"], false),
        (&["--filter", "blocked512:10:99"], false),
        (&["--filter", "fpr:2"], false),
        (&["--filter", "fpr:1e-30"], false),
        (&["--level-filter", "x=none"], false),
        (&["--level-filter", "3"], false),
        (&["--monkey", "-1"], false),
        (&["--compression", "gzip"], true),
        (&["--compression", "zstd:0"], true),
        (&["--compression", "lz4:1"], true),
        (&["--level-compression", "9=lz4"], true),
        (&["--level-compression", "lz4"], true),
        (&["--level-compression", "1=zstd:99"], true),
    ];
    for &(flags, bench) in table {
        let mut args = vec!["db", "put", s, "k", "v"];
        args.extend_from_slice(flags);
        let o = bloomlsm(&args);
        assert_one_line_error(&o);
        assert_eq!(o.status.code(), Some(2), "{flags:?}: {o:?}");
        assert!(!store.exists(), "{flags:?} wrote the store");
        if bench {
            let mut args = vec!["bench", "--keys", "100", "--quiet"];
            args.extend_from_slice(flags);
            let o = bloomlsm(&args);
            assert_one_line_error(&o);
            assert_eq!(o.status.code(), Some(2), "bench {flags:?}: {o:?}");
        }
    }
    let o = bloomlsm(&["bench", "--keys", "100", "--value-ratio", "0"]);
    assert_eq!(o.status.code(), Some(2), "{o:?}");
}

/// The study's single load (each configuration's store made from it by
/// rebuilding its filters) and `--reload` (one load per configuration) give
/// every configuration the same tree, filters and filter counts: uniform,
/// per-level (hybrid) and no filters, on a tree with files in L0 (written
/// again after the load's last copy) and below (rebuilt).
#[test]
fn bench_single_load_agrees_with_reload() {
    let run = |reload: bool| {
        let mut args = vec![
            "bench",
            "--keys",
            "100000",
            "--lookups",
            "5000",
            "--configs",
            "none,blocked6,hybrid10",
            "--json",
            "--quiet",
        ];
        if reload {
            args.push("--reload");
        }
        let o = bloomlsm(&args);
        assert!(o.status.success(), "{o:?}");
        stdout(&o).lines().map(json).collect::<Vec<Value>>()
    };
    let (once, reload) = (run(false), run(true));
    assert_eq!(once.len(), 3);
    assert_eq!(reload.len(), 3);
    for (a, b) in once.iter().zip(&reload) {
        for k in [
            "config",
            "bits_per_key",
            "filter_bytes",
            "filter_checks",
            "filter_negatives",
            "false_positives",
            "block_reads_per_missing_get",
            "disk_bytes",
            "shape",
        ] {
            assert_eq!(a[k], b[k], "{k}: {a} vs {b}");
        }
    }
    let shape = once[1]["shape"].as_array().unwrap();
    assert!(shape.iter().any(|s| s["level"] == 0), "{shape:?}");
    assert!(shape.iter().any(|s| s["level"] != 0), "{shape:?}");
    // The load's write counters, the same for every configuration.
    assert_eq!(once[0]["bytes_compacted"], once[2]["bytes_compacted"]);
}

/// A load longer than `--stepwise-keys` and two copy windows (sixteen
/// 2 MiB memtables each: about 4,200 keys of 8,000 bytes) puts its first
/// keys in with the store's own compaction thread, then the rest step by
/// step: every key is in the
/// store, once, whether one configuration loads its own store or two share
/// one load, and every existing key is found (the study checks each one).
#[test]
fn bench_bulk_load_keeps_every_key() {
    for configs in ["blocked10", "none,blocked10"] {
        let o = bloomlsm(&[
            "bench",
            "--keys",
            "12000",
            "--value-size",
            "8000",
            "--stepwise-keys",
            "0",
            "--lookups",
            "2000",
            "--configs",
            configs,
            "--json",
            "--quiet",
        ]);
        assert!(o.status.success(), "{o:?}");
        let rows: Vec<Value> = stdout(&o).lines().map(json).collect();
        assert_eq!(rows.len(), configs.split(',').count());
        for r in &rows {
            let shape = r["shape"].as_array().unwrap();
            let keys: u64 = shape.iter().map(|l| l["keys"].as_u64().unwrap()).sum();
            assert_eq!(keys, 12000, "{configs}: {shape:?}");
            assert!(shape.iter().any(|l| l["level"] != 0), "{shape:?}");
        }
    }
}

/// Several configurations from one load open one store at a time: under a
/// descriptor limit that one store's `--max-open-files` fits and two do
/// not, the study runs through, reopening tables as it must.
#[test]
fn bench_configurations_share_the_open_file_limit() {
    use std::os::unix::process::CommandExt;
    const LIMIT: libc::rlim_t = 56;
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_bloomlsm"));
    cmd.args([
        "bench",
        "--keys",
        "16000",
        "--value-size",
        "8000",
        "--lookups",
        "2000",
        "--configs",
        "none,blocked10",
        "--max-open-files",
        "40",
        "--json",
        "--quiet",
    ])
    .stdin(Stdio::null());
    // SAFETY: setrlimit is async-signal-safe and touches only the child.
    unsafe {
        cmd.pre_exec(|| {
            let l = libc::rlimit {
                rlim_cur: LIMIT,
                rlim_max: LIMIT,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &l) == 0 {
                Ok(())
            } else {
                Err(std::io::Error::last_os_error())
            }
        });
    }
    let o = cmd.output().expect("run bloomlsm");
    assert!(o.status.success(), "{o:?}");
    let rows: Vec<Value> = stdout(&o).lines().map(json).collect();
    assert_eq!(rows.len(), 2);
    for r in &rows {
        let shape = r["shape"].as_array().unwrap();
        let files: u64 = shape.iter().map(|l| l["files"].as_u64().unwrap()).sum();
        // More tables than the 40 descriptors less the reserved ones (16
        // on two cores, 20 from four) hold.
        assert!(files > 30, "{shape:?}");
    }
}

/// Without `--max-open-files`, `bench` under `ulimit -n 64` bounds each
/// store's descriptors below the limit and makes the configurations' stores
/// in passes that fit it, on stores of more tables than the limit.
#[cfg(target_os = "linux")]
#[test]
fn bench_defaults_fit_a_small_open_file_limit() {
    use std::os::unix::process::CommandExt;
    const LIMIT: libc::rlim_t = 64;
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_bloomlsm"));
    cmd.args([
        "bench",
        "--keys",
        "20000",
        "--value-size",
        "8000",
        "--value-ratio",
        "1",
        "--lookups",
        "2000",
        "--configs",
        "none,blocked10,ribbon10",
        "--json",
        "--quiet",
    ])
    .stdin(Stdio::null());
    // SAFETY: setrlimit is async-signal-safe and touches only the child.
    unsafe {
        cmd.pre_exec(|| {
            let l = libc::rlimit {
                rlim_cur: LIMIT,
                rlim_max: LIMIT,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &l) == 0 {
                Ok(())
            } else {
                Err(std::io::Error::last_os_error())
            }
        });
    }
    let o = cmd.output().expect("run bloomlsm");
    assert!(o.status.success(), "{}", stderr(&o));
    let rows: Vec<Value> = stdout(&o).lines().map(json).collect();
    assert_eq!(rows.len(), 3);
    for row in &rows {
        let files: u64 = row["shape"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l["files"].as_u64().unwrap())
            .sum();
        assert!(files > LIMIT, "{row}");
    }
}

#[test]
fn bench_reports_disk_bytes_ratio_and_write_amplification() {
    let run = |c: &str| {
        let o = bloomlsm(&[
            "bench",
            "--keys",
            "60000",
            "--lookups",
            "1000",
            "--configs",
            "blocked10",
            "--compression",
            c,
            "--json",
            "--quiet",
        ]);
        assert!(o.status.success(), "{o:?}");
        json(stdout(&o).lines().next().unwrap())
    };
    let (none, lz4) = (run("none"), run("lz4"));
    assert_eq!(none["compression_ratio"], 1.0);
    let r = lz4["compression_ratio"].as_f64().unwrap();
    // Values made to compress to 0.5 (the default --value-ratio).
    assert!(r > 1.3, "{lz4}");
    assert!(lz4["disk_bytes"].as_u64() < none["disk_bytes"].as_u64());
    // 60,000 16-byte keys with 100-byte values.
    let n = |k: &str| none[k].as_u64().unwrap();
    assert_eq!(n("user_bytes_written"), 60_000 * 116, "{none}");
    assert!(n("bytes_flushed") > 0 && n("bytes_compacted") > 0, "{none}");
    let wa = (n("bytes_flushed") + n("bytes_compacted")) as f64 / n("user_bytes_written") as f64;
    assert_eq!(none["write_amplification"].as_f64(), Some(wa), "{none}");
    let o = bloomlsm(&[
        "bench",
        "--keys",
        "3000",
        "--lookups",
        "100",
        "--configs",
        "none",
        "--csv",
        "--quiet",
    ]);
    let csv = stdout(&o);
    let header = csv.lines().next().unwrap();
    assert!(
        header.contains(
            ",disk_bytes,compression_ratio,write_amplification,user_bytes_written,\
             bytes_flushed,bytes_compacted,"
        ),
        "{header}"
    );
}

/// `bench --filter-budget` (the sweep in JSON) and `db stats --filter-budget`
/// on a store written with `--filter-partition-bytes`, with bad input too.
#[test]
fn filter_budget_through_the_binary() {
    let o = bloomlsm(&[
        "bench",
        "--keys",
        "30000",
        "--lookups",
        "2000",
        "--configs",
        "none,blocked10",
        "--filter-budget",
        "0,0.5,1",
        "--filter-partition-bytes",
        "512",
        "--json",
        "--quiet",
    ]);
    assert!(o.status.success(), "{o:?}");
    let rows: Vec<Value> = stdout(&o).lines().map(json).collect();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0]["filter_budget"].as_array().unwrap().len(), 0);
    let sweep = rows[1]["filter_budget"].as_array().unwrap();
    assert_eq!(sweep.len(), 3);
    let reads = |i: usize| {
        sweep[i]["filter_block_reads_per_missing_get"]
            .as_f64()
            .unwrap()
    };
    // Nothing in memory: every probe of a filter reads a partition; all of
    // it: none does.
    assert_eq!(sweep[0]["pinned_filter_bytes"], 0);
    assert!(reads(0) >= 1.0, "{sweep:?}");
    assert!(reads(1) < reads(0), "{sweep:?}");
    assert_eq!(reads(2), 0.0);
    assert_eq!(sweep[2]["pinned_filter_bytes"], sweep[2]["filter_bytes"]);

    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    let store = store.to_str().unwrap();
    let lines: String = (0..20_000).map(|i| format!("key{i:06}\tv{i}\n")).collect();
    let o = bloomlsm_stdin(
        &["db", "load", store, "-", "--filter-partition-bytes", "256"],
        lines.as_bytes(),
    );
    assert!(o.status.success(), "{o:?}");
    assert!(bloomlsm(&["db", "compact", store]).status.success());
    let o = bloomlsm(&[
        "db",
        "stats",
        store,
        "--filter-budget",
        "0",
        "--probe",
        "1000",
        "--files",
        "--json",
    ]);
    assert!(o.status.success(), "{o:?}");
    let v = json(stdout(&o).trim());
    assert_eq!(v["memory"]["filter_pinned_bytes"], 0);
    assert_eq!(v["memory"]["filter_budget"], 0);
    let files = v["files"].as_array().unwrap();
    assert!(!files.is_empty());
    for f in files {
        assert_eq!(f["filter_in_memory"], false, "{f}");
        assert!(f["filter_partitions"].as_u64().unwrap() >= 2, "{f}");
    }
    let o = bloomlsm(&["db", "stats", store, "--files", "--json"]);
    let v = json(stdout(&o).trim());
    assert_eq!(
        v["memory"]["filter_pinned_bytes"],
        v["memory"]["filter_bytes"]
    );

    for bad in [
        &["db", "stats", store, "--filter-budget", "4X"][..],
        &[
            "db",
            "put",
            store,
            "k",
            "v",
            "--filter-partition-bytes",
            "7",
        ][..],
        &["bench", "--filter-budget", "1.5"][..],
    ] {
        let o = bloomlsm(bad);
        assert_eq!(o.status.code(), Some(2), "{bad:?}: {o:?}");
        assert_one_line_error(&o);
    }
}

/// `db stats` says when the open dropped a damaged or torn WAL tail (text
/// and JSON), and a writing command leaves a copy of that log in `lost/`.
#[test]
fn stats_report_a_dropped_wal_tail() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_with_wal(dir.path());
    let s = store.to_str().unwrap();
    let json_wal = || json(&stdout(&bloomlsm(&["db", "stats", s, "--json"])))["wal"].clone();
    assert_eq!(json_wal()["tail_bytes_dropped"], 0);
    let text = stdout(&bloomlsm(&["db", "stats", s]));
    assert!(!text.contains("wal:"), "{text}");

    let log = std::fs::read_dir(&store)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "log"))
        .unwrap();
    let mut bytes = std::fs::read(&log).unwrap();
    let last = bytes.len() - 2; // inside the last record (the deletion)
    bytes[last] ^= 0x10;
    std::fs::write(&log, &bytes).unwrap();

    let text = stdout(&bloomlsm(&["db", "stats", s]));
    assert!(text.contains("wal: the open dropped"), "{text}");
    assert!(text.contains("lost/"), "{text}");
    assert!(json_wal()["tail_bytes_dropped"].as_u64().unwrap() > 0);
    // The dropped deletion: the key is there again.
    assert_eq!(stdout(&bloomlsm(&["db", "get", s, "k00001"])).trim(), "v1");
    assert!(bloomlsm(&["db", "put", s, "after", "1"]).status.success());
    let kept = store.join("lost").join(log.file_name().unwrap());
    assert_eq!(std::fs::read(kept).unwrap(), bytes);
    assert_eq!(json_wal()["tail_bytes_dropped"], 0);
}

/// The store's only write-ahead log.
fn only_log(store: &Path) -> std::path::PathBuf {
    let logs: Vec<_> = std::fs::read_dir(store)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "log"))
        .collect();
    assert_eq!(logs.len(), 1, "{logs:?}");
    logs.into_iter().next().unwrap()
}

/// A store whose one acknowledged put sits in its log, damaged: every open
/// drops it. `db verify` fails and names what was dropped; the other
/// commands run on what is left and warn on stderr, once.
#[test]
fn verify_fails_and_reads_warn_when_the_open_drops_wal_writes() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    let s = store.to_str().unwrap();
    assert!(bloomlsm(&["db", "put", s, "apple", "red"]).status.success());
    // Undamaged: OK, and no warning.
    let o = bloomlsm(&["db", "verify", s]);
    assert!(o.status.success(), "{o:?}");
    let o = bloomlsm(&["db", "scan", s]);
    assert_eq!(
        (stdout(&o).as_str(), stderr(&o).as_str()),
        ("apple\tred\n", "")
    );

    let log = only_log(&store);
    let mut bytes = std::fs::read(&log).unwrap();
    bytes[7 + 3] ^= 0x40; // inside the record's payload, past its header
    std::fs::write(&log, &bytes).unwrap();
    let dropped = format!("dropped {} bytes", bytes.len());

    let o = bloomlsm(&["db", "verify", s]);
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    assert_one_line_error(&o);
    let err = stderr(&o);
    assert!(err.contains(&dropped), "{err}");
    assert!(
        err.contains(&format!("{} from offset 0", log.display())),
        "{err}"
    );
    assert!(!stdout(&o).contains("OK"), "{o:?}");
    let o = bloomlsm(&["db", "verify", s, "--json"]);
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    let v = json(stdout(&o).trim());
    assert_eq!(v["ok"], false);
    assert_eq!(v["wal_tail_bytes_dropped"], bytes.len() as u64);
    assert_eq!(v["wal_records_salvaged"], 0);
    assert!(v["error"].as_str().unwrap().contains(&dropped), "{v}");

    // The reads answer from the store without the put, and say so once.
    let warned = |o: &Output| {
        let err = stderr(o);
        let warnings: Vec<&str> = err
            .lines()
            .filter(|l| l.starts_with("bloomlsm: warning: "))
            .collect();
        assert_eq!(warnings.len(), 1, "{err}");
        assert!(warnings[0].contains(&dropped), "{err}");
    };
    let o = bloomlsm(&["db", "scan", s]);
    assert!(o.status.success(), "{o:?}");
    assert!(o.stdout.is_empty());
    warned(&o);
    let o = bloomlsm(&["db", "get", s, "apple"]);
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    warned(&o);
    let o = bloomlsm(&["db", "stats", s, "--json"]);
    assert!(o.status.success(), "{o:?}");
    warned(&o);
    assert_eq!(
        std::fs::read(&log).unwrap(),
        bytes,
        "a read changed the log"
    );

    // A writing open drops it for good, says so, and keeps the log in lost/.
    let o = bloomlsm(&["db", "put", s, "banana", "yellow"]);
    assert!(o.status.success(), "{o:?}");
    warned(&o);
    assert!(stderr(&o).contains("lost"), "{}", stderr(&o));
    let o = bloomlsm(&["db", "verify", s]);
    assert!(o.status.success(), "{o:?}");
    assert!(stderr(&o).is_empty(), "{o:?}");
}

#[test]
fn empty_keys_are_refused_in_the_librarys_words() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    let s = store.to_str().unwrap();
    assert!(bloomlsm(&["db", "put", s, "a", "1"]).status.success());
    // What the library says of an empty key.
    let lib = {
        let d = tempfile::tempdir().unwrap();
        let db = bloomlsm::Db::open(d.path(), bloomlsm::Options::default()).unwrap();
        let e = db.get(b"").unwrap_err().to_string();
        db.close().unwrap();
        e
    };
    assert_eq!(lib, "invalid argument: empty key");
    for args in [
        &["db", "get", s, ""][..],
        &["db", "get", s, "", "--hex"],
        &["db", "put", s, "", "v"],
        &["db", "delete", s, ""],
        &["db", "scan", s, "--from", ""],
        &["db", "scan", s, "--to", ""],
    ] {
        let o = bloomlsm(args);
        assert_eq!(o.status.code(), Some(3), "{args:?}: {o:?}");
        assert_one_line_error(&o);
        assert!(stderr(&o).contains(&lib), "{args:?}: {}", stderr(&o));
    }
    let o = bloomlsm_stdin(&["db", "load", s, "-", "-q"], b"k\t1\n\tv\n");
    assert_eq!(o.status.code(), Some(3), "{o:?}");
    assert!(
        stderr(&o).contains("<stdin>:2: empty key"),
        "{}",
        stderr(&o)
    );
    // An empty prefix is not a key: every key.
    let o = bloomlsm(&["db", "scan", s, "--prefix", ""]);
    assert_eq!(stdout(&o), "a\t1\n");
}

#[test]
fn store_directories_that_are_files_or_hold_other_files_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("file");
    std::fs::write(&file, b"not a store").unwrap();
    let f = file.to_str().unwrap();
    let input = dir.path().join("in.tsv");
    std::fs::write(&input, "k\tv\n").unwrap();
    let i = input.to_str().unwrap();
    for args in [
        &["db", "put", f, "k", "v"][..],
        &["db", "put", f, "k", "v", "--create"],
        &["db", "load", f, i, "-q"],
        &["db", "delete", f, "k"],
        &["db", "compact", f],
        &["db", "get", f, "k"],
        &["db", "scan", f],
        &["db", "stats", f],
        &["db", "verify", f],
    ] {
        let o = bloomlsm(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {o:?}");
        assert_one_line_error(&o);
        assert_eq!(
            stderr(&o).trim(),
            format!("bloomlsm: {f} is not a directory"),
            "{args:?}"
        );
    }
    assert_eq!(std::fs::read(&file).unwrap(), b"not a store");

    // Someone else's directory: refused unless --create.
    let other = dir.path().join("other");
    std::fs::create_dir(&other).unwrap();
    std::fs::write(other.join("notes.txt"), b"mine").unwrap();
    let d = other.to_str().unwrap();
    for args in [&["db", "put", d, "k", "v"][..], &["db", "load", d, i, "-q"]] {
        let o = bloomlsm(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {o:?}");
        assert_one_line_error(&o);
        assert!(stderr(&o).contains("--create"), "{}", stderr(&o));
        assert_eq!(std::fs::read_dir(&other).unwrap().count(), 1, "{args:?}");
    }
    assert!(
        bloomlsm(&["db", "put", d, "k", "v", "--create"])
            .status
            .success()
    );
    assert_eq!(stdout(&bloomlsm(&["db", "get", d, "k"])), "v\n");
    assert_eq!(std::fs::read(other.join("notes.txt")).unwrap(), b"mine");
    // Now a store: no flag needed.
    assert!(bloomlsm(&["db", "put", d, "k2", "v"]).status.success());
    // An empty directory needs none either.
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let e = empty.to_str().unwrap();
    assert!(bloomlsm(&["db", "load", e, i, "-q"]).status.success());
    assert_eq!(stdout(&bloomlsm(&["db", "get", e, "k"])), "v\n");
}

#[test]
fn filter_fprs_out_of_range_are_refused_in_the_librarys_words() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    let s = store.to_str().unwrap();
    use bloomlsm::{FilterKind, FilterPolicy};
    for (spec, kind, fpr) in [
        ("fpr:1e-30", FilterKind::Blocked512, 1e-30),
        ("ribbon:fpr:1", FilterKind::Ribbon, 1.0),
        ("bloom:fpr:0", FilterKind::Bloom, 0.0),
    ] {
        let lib = FilterPolicy::for_fpr(kind, fpr).unwrap_err().to_string();
        let o = bloomlsm(&["db", "put", s, "k", "v", "--filter", spec]);
        assert_eq!(o.status.code(), Some(2), "{spec}: {o:?}");
        assert_one_line_error(&o);
        assert!(stderr(&o).contains(&lib), "{spec}: {}", stderr(&o));
        assert!(!store.exists(), "{spec}: something was written");
    }
}

#[test]
fn bench_plot_needs_an_svg_name() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["chart.png", "chart", "chart.svg.txt"] {
        let chart = dir.path().join(name);
        let stores = dir.path().join("stores");
        let o = bloomlsm(&[
            "bench",
            "--keys",
            "1000",
            "--configs",
            "none",
            "--plot",
            chart.to_str().unwrap(),
            "--dir",
            stores.to_str().unwrap(),
        ]);
        assert_eq!(o.status.code(), Some(2), "{name}: {o:?}");
        assert_one_line_error(&o);
        assert!(stderr(&o).contains("ending in .svg"), "{}", stderr(&o));
        assert!(o.stdout.is_empty(), "{name}: work started: {o:?}");
        assert!(!chart.exists() && !stores.exists(), "{name}");
    }
}

/// Interrupted by SIGINT or SIGTERM, `bench` removes its temporary stores
/// and exits with 128 + the signal's number.
#[cfg(target_os = "linux")]
#[test]
fn bench_removes_its_stores_when_interrupted() {
    use std::time::Duration;
    // The study, and db_bench's workloads with a writer thread running.
    let runs = [
        (libc::SIGINT, 130, &[][..]),
        (libc::SIGTERM, 143, &[][..]),
        (
            libc::SIGINT,
            130,
            &["--benchmarks", "fillrandom,readwhilewriting"][..],
        ),
    ];
    for (sig, code, extra) in runs {
        let tmp = tempfile::tempdir().unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_bloomlsm"))
            .args([
                "bench",
                "--keys",
                "20000",
                "--lookups",
                "100000000",
                "--configs",
                "blocked8",
                "--quiet",
            ])
            .args(extra)
            .env("TMPDIR", tmp.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run bloomlsm");
        // Waits until `cond` holds, polling at most 3,000 times (a bound
        // against hanging, not a timing).
        let wait_for = |what: &str, cond: &mut dyn FnMut() -> bool| {
            let mut polls = 0;
            while !cond() {
                polls += 1;
                assert!(polls < 3000, "no {what}");
                std::thread::sleep(Duration::from_millis(20));
            }
        };
        let store_made = || {
            std::fs::read_dir(tmp.path())
                .unwrap()
                .any(|e| e.unwrap().path().join("blocked8").join("CURRENT").exists())
        };
        wait_for("store", &mut || store_made());
        // SAFETY: kill(2) on the child this test started and has not reaped.
        assert_eq!(unsafe { libc::kill(child.id() as libc::pid_t, sig) }, 0);
        let mut status = None;
        wait_for("exit", &mut || {
            status = child.try_wait().unwrap();
            status.is_some()
        });
        let mut err = String::new();
        std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
        assert_eq!(status.unwrap().code(), Some(code), "signal {sig}: {err}");
        let left: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().collect();
        assert!(left.is_empty(), "signal {sig} left {left:?}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.starts_with("bloomlsm: interrupted"), "{err}");
    }
}

/// `db load` killed (SIGKILL, SIGINT) at points spread over its run leaves
/// the store with all of the input or none of it, and the store opens and
/// verifies either way.
#[test]
fn a_killed_load_leaves_all_or_nothing() {
    use std::time::Instant;
    let dir = tempfile::tempdir().unwrap();
    const RECORDS: u64 = 400_000;
    let input = dir.path().join("records.tsv");
    let mut text = String::with_capacity(RECORDS as usize * 40);
    // Keys in no order, so that the load sorts them in several runs.
    let mut x: u64 = 0x10AD;
    for i in 0..RECORDS {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        text.push_str(&format!("k{:016x}{i:07}\tvalue{i}\n", x));
    }
    std::fs::write(&input, &text).unwrap();
    // One whole load, for the span the kill points are spread over.
    let whole = dir.path().join("whole");
    let start = Instant::now();
    let o = bloomlsm(&[
        "db",
        "load",
        whole.to_str().unwrap(),
        input.to_str().unwrap(),
        "-q",
    ]);
    assert!(o.status.success(), "{o:?}");
    let span = start.elapsed();
    let mut outcomes = (0, 0);
    for (n, sig) in [
        libc::SIGKILL,
        libc::SIGINT,
        libc::SIGKILL,
        libc::SIGKILL,
        libc::SIGINT,
        libc::SIGKILL,
    ]
    .into_iter()
    .enumerate()
    {
        let store = dir.path().join(format!("s{n}"));
        let s = store.to_str().unwrap();
        assert!(bloomlsm(&["db", "put", s, "before", "1"]).status.success());
        let mut child = Command::new(env!("CARGO_BIN_EXE_bloomlsm"))
            .args(["db", "load", s, input.to_str().unwrap(), "-q"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // From 10% to 110% of a whole load's time.
        std::thread::sleep(span.mul_f64(0.1 + 0.2 * n as f64));
        // SAFETY: kill(2) on the child this test started and has not reaped.
        unsafe { libc::kill(child.id() as libc::pid_t, sig) };
        child.wait().unwrap();
        let db = bloomlsm::Db::open(&store, bloomlsm::Options::default()).unwrap();
        assert_eq!(db.get("before").unwrap().as_deref(), Some(&b"1"[..]));
        let loaded = db.scan(..).count() as u64 - 1;
        assert!(
            loaded == 0 || loaded == RECORDS,
            "kill {n}: {loaded} of {RECORDS} records"
        );
        if loaded == 0 {
            outcomes.0 += 1;
        } else {
            outcomes.1 += 1;
        }
        db.verify().unwrap();
        db.close().unwrap();
    }
    eprintln!("kills that left nothing / everything: {outcomes:?}");
}

/// `db checkpoint`: a copy that the reading commands open, with the
/// store's later writes not in it; an existing target (even empty), a
/// missing parent or a missing store is a usage error of one line, with
/// nothing made.
#[test]
fn db_checkpoint_makes_a_store_and_refuses_bad_targets() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (store, backup) = (d.join("s"), d.join("backup"));
    let (s, b) = (store.to_str().unwrap(), backup.to_str().unwrap());
    assert!(bloomlsm(&["db", "put", s, "apple", "red"]).status.success());
    let o = bloomlsm(&["db", "checkpoint", s, b, "--json"]);
    assert!(o.status.success(), "{o:?}");
    let v = json(stdout(&o).trim());
    assert_eq!(v["tables"], 1);
    assert_eq!(v["linked"], 1);
    assert_eq!(v["copied"], 0);
    assert_eq!(v["sequence"], 1);
    assert!(
        bloomlsm(&["db", "put", s, "apple", "green"])
            .status
            .success()
    );
    let o = bloomlsm(&["db", "get", b, "apple"]);
    assert_eq!(stdout(&o), "red\n");
    assert!(bloomlsm(&["db", "verify", b]).status.success());
    let text = bloomlsm(&["db", "checkpoint", s, d.join("b2").to_str().unwrap()]);
    assert!(text.status.success());
    // The store's second put is in a second table.
    assert!(
        stdout(&text).contains(": 2 tables, ")
            && stdout(&text).ends_with(": 2 linked; up to sequence 2\n"),
        "{}",
        stdout(&text)
    );

    std::fs::create_dir(d.join("empty")).unwrap();
    for (target, words) in [
        (b.to_string(), "exists"),
        (d.join("empty").to_str().unwrap().to_string(), "exists"),
        (
            d.join("nowhere/b").to_str().unwrap().to_string(),
            "does not exist",
        ),
    ] {
        let o = bloomlsm(&["db", "checkpoint", s, &target]);
        assert_one_line_error(&o);
        assert_eq!(o.status.code(), Some(2), "{target}");
        assert!(stderr(&o).contains(words), "{target}: {}", stderr(&o));
    }
    assert_eq!(std::fs::read_dir(d.join("empty")).unwrap().count(), 0);
    let o = bloomlsm(&["db", "checkpoint", d.join("none").to_str().unwrap(), "x"]);
    assert_one_line_error(&o);
    assert_eq!(o.status.code(), Some(2));
    assert!(!d.join("nowhere").exists());
}

/// `db delete-range` removes `[START, END)` with one range tombstone (END
/// stays); an empty or inverted range is a usage error, an empty key bad
/// input, each one line, and neither writes anything.
#[test]
fn db_delete_range() {
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().to_str().unwrap();
    for k in ["a", "b", "c", "d"] {
        assert!(bloomlsm(&["db", "put", s, k, "1"]).status.success());
    }
    let o = bloomlsm(&["db", "delete-range", s, "b", "d"]);
    assert!(o.status.success(), "{o:?}");
    let o = bloomlsm(&["db", "scan", s, "--keys-only"]);
    assert_eq!(stdout(&o), "a\nd\n");
    for (args, code) in [
        (&["db", "delete-range", s, "d", "a"][..], 2),
        (&["db", "delete-range", s, "d", "d"], 2),
        (&["db", "delete-range", s, "", "d"], 3),
        (&["db", "delete-range", s, "--hex", "zz", "d"], 2),
    ] {
        let o = bloomlsm(args);
        assert_eq!(o.status.code(), Some(code), "{args:?}: {o:?}");
        assert_one_line_error(&o);
    }
    let o = bloomlsm(&["db", "delete-range", s, "--hex", "00", "ff"]);
    assert!(o.status.success(), "{o:?}");
    let o = bloomlsm(&["db", "scan", s, "--keys-only"]);
    assert_eq!(stdout(&o), "");
}

/// `bench --workload range`: one JSON object for the store without range
/// filters, then one per `--range-bits` value, each with every length's
/// empty and non-empty phases; the stores share one tree; empty scans
/// return no key, and a range filter skips most of their files, so it
/// reads no more data blocks than the store without range filters, which
/// reads at least one per empty scan, none of them holding an entry; the
/// same stores and phases as CSV and text; bad values are one-line usage
/// errors.
#[test]
fn bench_range_workload() {
    let run = |format: &[&str]| {
        let o = bloomlsm(
            &[
                &[
                    "bench",
                    "--workload",
                    "range",
                    "--keys",
                    "20000",
                    "--lookups",
                    "400",
                    "--range-len",
                    "1,16",
                    "--range-bits",
                    "12,16",
                    "--correlated",
                    "-q",
                ][..],
                format,
            ]
            .concat(),
        );
        assert!(o.status.success(), "{o:?}");
        stdout(&o)
    };
    let lines: Vec<Value> = run(&["--json"])
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 3);
    let base = &lines[0];
    assert_eq!(base["baseline"], true);
    assert!(base["range_bits"].is_null(), "{base}");
    for (i, l) in base["lengths"].as_array().unwrap().iter().enumerate() {
        let e = &l["empty"];
        assert_eq!(e["range_checks"], 0, "{e}");
        assert!(e["saved"].is_null(), "{e}");
        // Each empty scan seeks in every file it overlaps: at least one
        // block read, none holding an entry of the scan.
        assert!(e["data_blocks_per_scan"].as_f64().unwrap() >= 1.0, "{e}");
        assert_eq!(e["useful_data_blocks_per_scan"], 0.0, "{e}");
        let n = &l["non_empty"];
        assert!(
            n["useful_data_blocks_per_scan"].as_f64().unwrap() >= 1.0,
            "{n}"
        );
        for v in &lines[1..] {
            for phase in ["empty", "non_empty"] {
                let (b, f) = (&l[phase], &v["lengths"][i][phase]);
                let blocks = |p: &Value| p["data_blocks_per_scan"].as_f64().unwrap();
                assert!(blocks(f) <= blocks(b), "{phase}: {f} against {b}");
                let saved = &f["saved"];
                assert!(
                    saved["data_blocks_per_scan"].as_f64().unwrap() >= 0.0,
                    "{saved}"
                );
                assert!(
                    saved["requests_per_scan"].as_f64().unwrap() >= 0.0,
                    "{saved}"
                );
                assert!(saved["bytes_per_scan"].as_f64().unwrap() >= 0.0, "{saved}");
                assert_eq!(
                    n["useful_data_blocks_per_scan"],
                    v["lengths"][i]["non_empty"]["useful_data_blocks_per_scan"],
                    "a filter never skips a block that holds an entry of the scan"
                );
            }
        }
    }
    for (v, bits) in lines[1..].iter().zip([12.0, 16.0]) {
        assert_eq!(v["workload"], "range");
        assert_eq!(v["range_bits"], bits);
        assert_eq!(v["baseline"], false);
        assert_eq!(v["same_tree_as_baseline"], true, "{v}");
        assert_eq!(v["correlated"], true);
        let lengths = v["lengths"].as_array().unwrap();
        assert_eq!(lengths.len(), 2);
        for l in lengths {
            let e = &l["empty"];
            assert_eq!(e["scans"], 200);
            assert_eq!(e["keys_per_scan"], 0.0);
            assert!(e["range_negatives"].as_u64().unwrap() > 150, "{e}");
            assert!(e["predicted_fpr"].as_f64().unwrap() < 0.02, "{e}");
            assert!(
                e["saved"]["fraction_of_data_blocks"].as_f64().unwrap() > 0.5,
                "{e}"
            );
            let n = &l["non_empty"];
            assert_eq!(n["scans"], 200);
            assert!(n["keys_per_scan"].as_f64().unwrap() >= 1.0, "{n}");
        }
    }
    // CSV: a header, then per store, length and phase one line, the
    // store without range filters first and with no savings.
    let csv = run(&["--csv"]);
    let rows: Vec<Vec<&str>> = csv.lines().map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len(), 1 + 3 * 2 * 2, "{csv}");
    let col = |name: &str| rows[0].iter().position(|c| *c == name).unwrap();
    let (filter, bits, saved) = (
        col("filter"),
        col("range_bits"),
        col("data_blocks_saved_per_scan"),
    );
    for r in &rows[1..5] {
        assert_eq!((r[filter], r[bits], r[saved]), ("none", "", ""), "{r:?}");
    }
    for r in &rows[5..] {
        assert_eq!(r[filter], "range", "{r:?}");
        assert!(r[saved].parse::<f64>().unwrap() >= 0.0, "{r:?}");
        assert_eq!(r[col("same_tree_as_baseline")], "true", "{r:?}");
    }
    let text = run(&[]);
    assert!(text.contains("no range filters (the baseline)"), "{text}");
    assert_eq!(
        text.matches("saved against the store without the filter")
            .count(),
        2 * 2 * 2,
        "{text}"
    );
    assert!(text.contains("per scan, each store against the one without range filters"));
    for args in [
        &["--range-bits", "1.5"][..],
        &["--range-bits", "65"],
        &["--range-len", "0"],
        &["--range-len", "16,x"],
        &["--empty-fraction", "1.5"],
    ] {
        let o = bloomlsm(&[&["bench", "--workload", "range", "-q"][..], args].concat());
        assert_eq!(o.status.code(), Some(2), "{args:?}: {o:?}");
        assert_one_line_error(&o);
    }
    let o = bloomlsm(&["bench", "--range-len", "16", "-q"]);
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    assert_one_line_error(&o);

    // A hot key range for the scan studies; the distributions that are not
    // a range of the key order, and the --benchmarks flags, are refused
    // rather than ignored.
    for (workload, dist) in [("range", "sliding"), ("prefix", "hotspot")] {
        let o = bloomlsm(&[
            "bench",
            "--workload",
            workload,
            "--keys",
            "20000",
            "--lookups",
            "400",
            "--request-distribution",
            dist,
            "--json",
            "-q",
        ]);
        assert!(o.status.success(), "{workload} {dist}: {o:?}");
        let lines: Vec<serde_json::Value> = stdout(&o)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 2, "{workload}");
        for l in &lines {
            assert_eq!(l["distribution"], dist, "{l}");
        }
    }
    for args in [
        &["--workload", "range", "--request-distribution", "zipfian"][..],
        &["--workload", "prefix", "--request-distribution", "latest"],
        &["--workload", "point", "--request-distribution", "sliding"],
        &["--workload", "range", "--miss-fraction", "0.5"],
        &["--workload", "prefix", "--statistics"],
    ] {
        let o = bloomlsm(&[&["bench", "--keys", "2000", "-q"][..], args].concat());
        assert_eq!(o.status.code(), Some(2), "{args:?}: {o:?}");
        assert_one_line_error(&o);
    }

    // --plot: FPR against range length, one curve per --range-bits value.
    let dir = tempfile::tempdir().unwrap();
    let svg = dir.path().join("range.svg");
    let o = bloomlsm(&[
        "bench",
        "--workload",
        "range",
        "--keys",
        "20000",
        "--lookups",
        "400",
        "--range-len",
        "256,4096",
        "--range-bits",
        "8,10",
        "--plot",
        svg.to_str().unwrap(),
        "-q",
    ]);
    assert!(o.status.success(), "{o:?}");
    let chart = std::fs::read_to_string(&svg).unwrap();
    assert!(chart.contains("8 bits/key, measured") && chart.contains("10 bits/key, measured"));
    let o = bloomlsm(&[
        "bench",
        "--workload",
        "prefix",
        "--plot",
        svg.to_str().unwrap(),
        "-q",
    ]);
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    assert_one_line_error(&o);
}

/// `bench --workload prefix`: one JSON object for the store without a
/// prefix extractor, then one for the store with its prefix filters, on
/// the same tree; the filtered store's empty scans read fewer data blocks
/// than the other's, which reads at least one per scan and none holding an
/// entry; its non-empty scans read every block holding entries the other
/// does; the same as CSV lines.
#[test]
fn bench_prefix_workload() {
    let args = [
        "bench",
        "--workload",
        "prefix",
        "--keys",
        "20000",
        "--lookups",
        "300",
        "-q",
    ];
    let lines: Vec<Value> = ok(&[&args[..], &["--json"]].concat())
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    let (base, filtered) = (&lines[0], &lines[1]);
    assert_eq!(
        (&base["baseline"], &base["prefix_filters"]),
        (&Value::Bool(true), &Value::Bool(false))
    );
    assert_eq!(filtered["prefix_filters"], true);
    assert_eq!(filtered["same_tree_as_baseline"], true, "{filtered}");
    let blocks = |p: &Value| p["data_blocks_per_scan"].as_f64().unwrap();
    let (be, fe) = (&base["empty"], &filtered["empty"]);
    assert!(blocks(be) >= 1.0, "{be}");
    assert_eq!(be["useful_data_blocks_per_scan"], 0.0, "{be}");
    assert!(be["saved"].is_null(), "{be}");
    assert!(blocks(fe) < blocks(be), "{fe} against {be}");
    assert!(
        fe["saved"]["data_blocks_per_scan"].as_f64().unwrap() > 0.0,
        "{fe}"
    );
    let (bn, fn_) = (&base["non_empty"], &filtered["non_empty"]);
    assert!(blocks(fn_) <= blocks(bn), "{fn_} against {bn}");
    assert!(
        fn_["saved"]["data_blocks_per_scan"].as_f64().unwrap() >= 0.0,
        "{fn_}"
    );
    assert_eq!(
        bn["useful_data_blocks_per_scan"],
        fn_["useful_data_blocks_per_scan"]
    );
    assert_eq!(bn["keys_per_scan"], 16.0);
    let csv = ok(&[&args[..], &["--csv"]].concat());
    let rows: Vec<Vec<&str>> = csv.lines().map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len(), 1 + 2 * 2, "{csv}");
    let filter = rows[0].iter().position(|c| *c == "filter").unwrap();
    let filters: Vec<&str> = rows[1..].iter().map(|r| r[filter]).collect();
    assert_eq!(filters, ["none", "none", "prefix", "prefix"]);
}

/// `--memory-ceiling` below what the run needs is refused before anything is
/// written; one the run can work under puts the study in a memory cgroup
/// limited to it, reported with its peak, and removed at the end. Where this
/// process may not make a cgroup, the run is refused with the way to set
/// the limit from outside, again before anything is written.
#[test]
fn bench_memory_ceiling() {
    let dir = tempfile::tempdir().unwrap();
    let stores = dir.path().join("stores");
    let s = stores.to_str().unwrap();
    let o = bloomlsm(&[
        "bench",
        "--keys",
        "20000",
        "--memory-ceiling",
        "60M",
        "--dir",
        s,
    ]);
    assert_one_line_error(&o);
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    assert!(stderr(&o).contains("is below what this run needs"), "{o:?}");
    assert!(!stores.exists(), "nothing is written");
    let o = bloomlsm(&[
        "bench",
        "--keys",
        "20000",
        "--lookups",
        "2000",
        "--configs",
        "blocked10",
        "--memory-ceiling",
        "200M",
        "--dir",
        s,
        "--quiet",
    ]);
    let own = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    if o.status.success() {
        let out = stdout(&o);
        assert!(out.contains("memory ceiling: 200.0 MiB"), "{out}");
        assert!(out.contains("memory peak under the ceiling: "), "{out}");
        // The cgroup is gone: this process's cgroup holds no bench's.
        for line in own.lines().filter(|l| l.contains("memory")) {
            let path = line.splitn(3, ':').nth(2).unwrap().trim_start_matches('/');
            let parent = Path::new("/sys/fs/cgroup/memory").join(path);
            let left: Vec<_> = std::fs::read_dir(&parent)
                .map(|d| {
                    d.filter_map(|e| e.ok())
                        .filter(|e| {
                            e.file_name()
                                .to_string_lossy()
                                .starts_with("bloomlsm-bench-")
                        })
                        .collect()
                })
                .unwrap_or_default();
            assert!(left.is_empty(), "{left:?}");
        }
    } else {
        assert_one_line_error(&o);
        assert_eq!(o.status.code(), Some(2), "{o:?}");
        assert!(stderr(&o).contains("systemd-run"), "{o:?}");
        assert!(!stores.exists(), "nothing is written");
    }
}

/// `--writes-per-range-tombstone`: the fills write a range delete after
/// every N puts, and the reads report the range-tombstone lists they
/// searched and the lookups a tombstone answered.
#[test]
fn bench_db_bench_range_tombstones() {
    let o = bloomlsm(&[
        "bench",
        "--benchmarks",
        "fillrandom,readrandom,readmissing",
        "--keys",
        "20000",
        "--lookups",
        "5000",
        "--writes-per-range-tombstone",
        "100",
        "--range-tombstone-width",
        "50",
        "--json",
        "--quiet",
    ]);
    assert!(o.status.success(), "{o:?}");
    let lines: Vec<Value> = stdout(&o).lines().map(json).collect();
    assert_eq!(lines.len(), 3, "{}", stdout(&o));
    assert_eq!(lines[0]["range_deletes"], 200);
    for read in &lines[1..] {
        let ops = read["ops"].as_u64().unwrap();
        assert_eq!(ops, 5000);
        // Each lookup searches at least the memtable's or a file's list
        // wherever range deletes are left; 200 deletes of about 50 of the
        // 20,000 keys each hide about 40% of the key space.
        assert!(
            read["range_tombstone_checks"].as_u64().unwrap() > 0,
            "{read}"
        );
        let deleted = read["gets_range_deleted"].as_u64().unwrap();
        assert!(deleted > ops / 10 && deleted < ops * 7 / 10, "{read}");
    }
    let found = lines[1]["found"].as_u64().unwrap();
    assert_eq!(
        found + lines[1]["gets_range_deleted"].as_u64().unwrap(),
        5000
    );
}

/// `db keyspaces` creates, lists and drops keyspaces, and the `db` commands
/// act on the one `--keyspace` names.
#[test]
fn db_keyspaces_and_the_keyspace_flag() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("s");
    let d = d.to_str().unwrap();
    ok(&["db", "put", d, "k", "in default"]);
    let o = ok(&[
        "db",
        "keyspaces",
        d,
        "--create",
        "users",
        "--filter",
        "ribbon:8",
    ]);
    assert_eq!(o, "default\nusers\n");
    ok(&["db", "put", d, "k", "in users", "--keyspace", "users"]);
    ok(&["db", "put", d, "k2", "v", "--keyspace", "users"]);
    assert_eq!(
        ok(&["db", "get", d, "k", "--keyspace", "users"]),
        "in users\n"
    );
    assert_eq!(ok(&["db", "get", d, "k"]), "in default\n");
    assert_eq!(
        ok(&["db", "scan", d, "--keyspace", "users", "--keys-only"]),
        "k\nk2\n"
    );
    ok(&["db", "delete", d, "k2", "--keyspace", "users"]);
    ok(&["db", "delete-range", d, "a", "z", "--keyspace", "default"]);
    assert_eq!(ok(&["db", "scan", d]), "");
    ok(&["db", "compact", d, "--keyspace", "users"]);
    let o = ok(&["db", "stats", d, "--keyspace", "users", "--json"]);
    assert!(o.contains("ribbon"), "{o}");
    assert_eq!(
        json(ok(&["db", "keyspaces", d, "--json"]).trim())["keyspaces"],
        serde_json::json!(["default", "users"])
    );
    // Unknown keyspaces, design flags beside --keyspace, dropping the
    // default keyspace: one-line errors.
    for args in [
        &["db", "get", d, "k", "--keyspace", "nope"][..],
        &[
            "db",
            "put",
            d,
            "k",
            "v",
            "--keyspace",
            "users",
            "--filter",
            "bloom:10",
        ],
        &["db", "keyspaces", d, "--drop", "default"],
        &["db", "keyspaces", d, "--create", "users"],
    ] {
        assert_one_line_error(&bloomlsm(args));
    }
    assert_eq!(ok(&["db", "keyspaces", d, "--drop", "users"]), "default\n");
    assert_one_line_error(&bloomlsm(&["db", "get", d, "k", "--keyspace", "users"]));
}

/// A keyspace name `--create` cannot take (empty, `default`, taken, with a
/// control character) and a `--drop` of the default keyspace or of none of
/// the store's are usage errors (exit status 2) found before the store is
/// opened for writing: every file of the store stays as it was.
#[test]
fn db_keyspaces_refuses_bad_names_as_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    let d = store.to_str().unwrap();
    ok(&["db", "put", d, "k", "v"]);
    ok(&["db", "keyspaces", d, "--create", "users"]);
    let before = snapshot(&store);
    let long = "n".repeat(256);
    for args in [
        &["db", "keyspaces", d, "--create", ""][..],
        &["db", "keyspaces", d, "--create", "default"],
        &["db", "keyspaces", d, "--create", "users"],
        &["db", "keyspaces", d, "--create", "a\u{1}b"],
        &["db", "keyspaces", d, "--create", &long],
        &["db", "keyspaces", d, "--drop", "default"],
        &["db", "keyspaces", d, "--drop", "nope"],
    ] {
        let o = bloomlsm(args);
        assert_one_line_error(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(o.stdout.is_empty(), "{args:?}");
        assert!(snapshot(&store) == before, "{args:?} changed the store");
    }
    let o = bloomlsm(&["db", "keyspaces", d, "--create", ""]);
    assert!(
        stderr(&o).contains("an empty keyspace name"),
        "{}",
        stderr(&o)
    );
    assert_eq!(
        ok(&["db", "keyspaces", d, "--create", "logs"]),
        "default\nusers\nlogs\n"
    );
}

/// `db checkpoint` refuses a target inside the store's directory, however
/// the path reaches it (directly, through `..` or a symbolic link): exit
/// status 2 and the store as it was.
#[cfg(unix)]
#[test]
fn db_checkpoint_refuses_a_target_inside_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    let d = store.to_str().unwrap();
    ok(&["db", "put", d, "k", "v"]);
    let link = dir.path().join("link");
    std::os::unix::fs::symlink(&store, &link).unwrap();
    let before = snapshot(&store);
    let inside = [
        store.join("inside"),
        store.join("../s/inside"),
        link.join("inside"),
    ];
    for target in &inside {
        let o = bloomlsm(&["db", "checkpoint", d, target.to_str().unwrap()]);
        assert_one_line_error(&o);
        assert_eq!(o.status.code(), Some(2), "{target:?}: {}", stderr(&o));
        assert!(stderr(&o).contains("inside the store"), "{}", stderr(&o));
        assert!(!target.exists());
        assert!(snapshot(&store) == before, "{target:?} changed the store");
    }
    let outside = dir.path().join("backup");
    ok(&["db", "checkpoint", d, outside.to_str().unwrap()]);
    assert_eq!(ok(&["db", "get", outside.to_str().unwrap(), "k"]), "v\n");
}

/// `db stats --probe` and `sst filter-test --probes` take at most 2^28
/// lookups: a larger count is a usage error, not a run of years.
#[test]
fn probe_counts_are_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    let d = store.to_str().unwrap();
    ok(&["db", "put", d, "k", "v"]);
    ok(&["db", "compact", d]);
    let table = std::fs::read_dir(&store)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "sst"))
        .unwrap();
    let t = table.to_str().unwrap();
    for args in [
        &["db", "stats", d, "--probe", "99999999999999"][..],
        &["db", "stats", d, "--probe", "268435457"],
        &["sst", "filter-test", t, "--probes", "99999999999999"],
        &["sst", "filter-test", t, "--probes", "268435457"],
    ] {
        let o = bloomlsm(args);
        assert_one_line_error(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains("268435456"), "{args:?}: {}", stderr(&o));
    }
    let o = json(ok(&["db", "stats", d, "--probe", "1000", "--json"]).trim());
    assert_eq!(o["probe"]["lookups"], 1000);
    ok(&["sst", "filter-test", t, "--probes", "1000"]);
}

/// `db load --keyspace` loads into an existing keyspace only; a name that
/// is no keyspace of the store (for `load` and every writing command), a
/// missing store, or design flags beside `--keyspace` fail with one line and
/// exit status 2, and leave every file of the store as it was.
#[test]
fn db_load_into_a_keyspace() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    let d = store.to_str().unwrap();
    ok(&["db", "put", d, "u1", "in default"]);
    ok(&["db", "keyspaces", d, "--create", "users"]);
    let input = dir.path().join("users.tsv");
    let text: String = (0..500).map(|i| format!("u{i}\tuser {i}\n")).collect();
    std::fs::write(&input, text).unwrap();
    let o = ok(&[
        "db",
        "load",
        d,
        input.to_str().unwrap(),
        "--keyspace",
        "users",
        "-q",
    ]);
    assert!(o.starts_with("loaded 500 records"), "{o}");
    assert_eq!(
        ok(&["db", "get", d, "u1", "--keyspace", "users"]),
        "user 1\n"
    );
    assert_eq!(ok(&["db", "get", d, "u1"]), "in default\n");
    let o = bloomlsm_stdin(
        &["db", "load", d, "-", "--keyspace", "default", "-q"],
        b"u2\tloaded into default\n",
    );
    assert!(o.status.success(), "{o:?}");
    assert_eq!(ok(&["db", "get", d, "u2"]), "loaded into default\n");
    assert_eq!(
        ok(&["db", "get", d, "u2", "--keyspace", "users"]),
        "user 2\n"
    );

    let missing = dir.path().join("missing");
    let m = missing.to_str().unwrap();
    let i = input.to_str().unwrap();
    let before = snapshot(&store);
    for args in [
        &["db", "load", d, i, "--keyspace", "nope"][..],
        &[
            "db",
            "load",
            d,
            i,
            "--keyspace",
            "users",
            "--filter",
            "bloom:10",
        ],
        &["db", "load", m, i, "--keyspace", "users"],
        &["db", "put", d, "k", "v", "--keyspace", "nope"],
        &["db", "delete", d, "k", "--keyspace", "nope"],
        &["db", "delete-range", d, "a", "b", "--keyspace", "nope"],
        &["db", "compact", d, "--keyspace", "nope"],
        &["db", "get", d, "k", "--keyspace", "nope"],
        &["db", "scan", d, "--keyspace", "nope"],
        &["db", "stats", d, "--keyspace", "nope"],
    ] {
        let o = bloomlsm(args);
        assert_one_line_error(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {o:?}");
        if args.contains(&"nope") {
            assert!(stderr(&o).contains("no keyspace \"nope\""), "{o:?}");
        }
    }
    assert!(
        snapshot(&store) == before,
        "a refused command touched the store"
    );
    assert!(!missing.exists());
    assert_eq!(ok(&["db", "keyspaces", d]), "default\nusers\n");
}

/// `db checkpoint` of a store with keyspaces: the copy holds every
/// keyspace, and the `--keyspace` commands read it.
#[test]
fn db_checkpoint_copies_every_keyspace() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("s");
    let d = d.to_str().unwrap();
    let c = dir.path().join("c");
    let c = c.to_str().unwrap();
    ok(&["db", "put", d, "k", "in default"]);
    ok(&["db", "keyspaces", d, "--create", "users"]);
    ok(&["db", "put", d, "k", "in users", "--keyspace", "users"]);
    let o = json(ok(&["db", "checkpoint", d, c, "--json"]).trim());
    assert_eq!(o["tables"], 2, "{o}");
    ok(&["db", "put", d, "k", "later", "--keyspace", "users"]);
    assert_eq!(
        ok(&["db", "get", c, "k", "--keyspace", "users"]),
        "in users\n"
    );
    assert_eq!(ok(&["db", "get", c, "k"]), "in default\n");
    assert_eq!(ok(&["db", "keyspaces", c]), "default\nusers\n");
}
