//! Compaction picking case by case, from text, in the style of Pebble's
//! datadriven tests: each case in `testdata/pick.txt` describes a version
//! (the files of each level, with their key ranges and data sizes) and the
//! options that size its levels, and states what the store compacts next —
//! [`pick`]'s choice as the store runs it, a move of a level ≥ 1 extended by
//! [`extend_trivial_move`] — or `none`. A case whose stated output differs
//! from what the code gives fails with both, and their line diff.
//!
//! The format, one case after another, separated by blank lines (a line
//! starting with `#` outside a case is a comment):
//!
//! ```text
//! pick l0_trigger=4 l1=64K
//! L0
//!   4: a..c 8K
//!   3: b..d 8K
//! L1
//!   5: a..b 32K
//! ----
//! merge L0 -> L1
//!   L0: 4 3
//!   L1: 5
//! ```
//!
//! The command line names the command and the options: `levels=N` (7),
//! `l0_trigger=N` (4), `l1=SIZE` (`level1_max_bytes`, 10M),
//! `multiplier=N` (10), `target_file=SIZE` (2M), `dynamic`
//! (`dynamic_level_bytes`), and `pointer=Ln:KEY`, the largest key last
//! compacted out of level n (repeatable). Sizes take a `K` or `M` suffix
//! (powers of 1024). Each file line is `NUMBER: SMALLEST..LARGEST SIZE`,
//! under the `Ln` line of its level; its data blocks hold about SIZE bytes.
//!
//! Commands:
//!
//! - `pick`: `none`, or `merge` / `move`, the input level and the output
//!   level, then the files taken from each, in the version's order (L0
//!   newest first). A move lists only the level it leaves.
//! - `scores`: the base level L0 compacts into (and the one the last level's
//!   size calls for, when they differ), then each level's score but the
//!   last's, to one decimal.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use super::output::TestNumbers;
use super::*;

/// The cases of picking.
const PICK: &str = include_str!("testdata/pick.txt");

/// What a case's text gives, or what is wrong with it.
type Parsed<T> = std::result::Result<T, String>;

/// Round-robin pointers set by a command line: (level, key).
type Pointers = Vec<(usize, Vec<u8>)>;

/// One case of a testdata file.
#[derive(Debug)]
struct Case {
    /// Line of the command in the file (1-based).
    line: usize,
    /// The command line.
    command: String,
    /// The lines between the command and `----`.
    input: Vec<String>,
    /// The lines after `----`.
    expected: Vec<String>,
}

/// The cases of `text`, or the line that breaks the format.
fn parse(text: &str) -> Parsed<Vec<Case>> {
    let mut cases = Vec::new();
    let mut lines = text.lines().enumerate().peekable();
    while let Some((i, line)) = lines.next() {
        if line.trim().is_empty() || line.starts_with('#') {
            continue;
        }
        let mut case = Case {
            line: i + 1,
            command: line.trim().to_string(),
            input: Vec::new(),
            expected: Vec::new(),
        };
        loop {
            match lines.next() {
                Some((_, "----")) => break,
                Some((_, l)) if l.trim().is_empty() => {
                    return Err(format!("line {}: a blank line before `----`", i + 1));
                }
                Some((_, l)) => case.input.push(l.to_string()),
                None => return Err(format!("line {}: no `----` after the case", i + 1)),
            }
        }
        while let Some((_, l)) = lines.next_if(|(_, l)| !l.trim().is_empty()) {
            case.expected.push(l.to_string());
        }
        cases.push(case);
    }
    Ok(cases)
}

/// `64K`, `2M` or a number of bytes.
fn size(s: &str) -> Parsed<u64> {
    let (digits, unit) = match s.as_bytes().last() {
        Some(b'K') => (&s[..s.len() - 1], 1 << 10),
        Some(b'M') => (&s[..s.len() - 1], 1 << 20),
        _ => (s, 1),
    };
    let n: u64 = digits.parse().map_err(|_| format!("bad size {s:?}"))?;
    Ok(n * unit)
}

fn number<T: std::str::FromStr>(s: &str) -> Parsed<T> {
    s.parse().map_err(|_| format!("bad number {s:?}"))
}

/// `L3` → 3.
fn level_name(s: &str) -> Parsed<usize> {
    s.strip_prefix('L')
        .ok_or_else(|| format!("bad level {s:?}"))
        .and_then(number)
}

/// The options of a command line, and its round-robin pointers.
fn options(args: &[&str]) -> Parsed<(Options, Pointers)> {
    // The format's own defaults (module doc), whatever `Options::default()`'s.
    let mut opts = Options {
        dynamic_level_bytes: false,
        level1_max_bytes: 10 << 20,
        target_file_size: 2 << 20,
        level_size_multiplier: 10,
        max_levels: 7,
        l0_compaction_trigger: 4,
        ..Options::default()
    };
    let mut pointers = Vec::new();
    for arg in args {
        match arg.split_once('=') {
            None if *arg == "dynamic" => opts.dynamic_level_bytes = true,
            Some(("levels", v)) => opts.max_levels = number(v)?,
            Some(("l0_trigger", v)) => opts.l0_compaction_trigger = number(v)?,
            Some(("l1", v)) => opts.level1_max_bytes = size(v)?,
            Some(("multiplier", v)) => opts.level_size_multiplier = number(v)?,
            Some(("target_file", v)) => opts.target_file_size = size(v)?,
            Some(("pointer", v)) => {
                let (l, k) = v
                    .split_once(':')
                    .ok_or_else(|| format!("bad pointer {v:?}"))?;
                pointers.push((level_name(l)?, k.as_bytes().to_vec()));
            }
            _ => return Err(format!("unknown option {arg:?}")),
        }
    }
    Ok((opts, pointers))
}

/// A table numbered `number` holding `lo` and `hi` (user keys), its data
/// blocks about `bytes` long.
fn sized_table(dir: &Path, number: u64, lo: &str, hi: &str, bytes: u64) -> Arc<FileHandle> {
    let keys: Vec<&str> = if lo == hi { vec![lo] } else { vec![lo, hi] };
    // Each entry's block adds its key, lengths, restart array and trailer.
    let value_len = (bytes / keys.len() as u64).saturating_sub(40) as usize;
    let entries = keys.into_iter().map(|k| {
        let k = key::make_internal_key(k.as_bytes(), 1, ValueKind::Value);
        Ok((
            bytes::Bytes::from(k),
            bytes::Bytes::from(vec![1u8; value_len]),
        ))
    });
    let out = write_outputs(
        dir,
        &Options::default(),
        OutputSize::Whole,
        entries,
        None,
        crate::sst::Compression::None,
        &TestNumbers(AtomicU64::new(number)),
        &Retention::new(Vec::new()),
        &|_| false,
        &crate::range_tombstone::Fragments::default(),
        &|_, _| false,
        &[],
        None,
        crate::db::caches::Caches::new(&Options::default()),
    )
    .unwrap();
    out.files[0].clone()
}

/// The version the input lines describe, its tables written in `dir`.
fn version(input: &[String], levels: usize, dir: &Path) -> Parsed<Version> {
    let mut v = Version::empty(levels);
    let mut level = None;
    for line in input {
        let line = line.trim();
        if line.starts_with('#') {
            continue;
        }
        if let Ok(l) = level_name(line) {
            if l >= levels {
                return Err(format!("L{l} in a version of {levels} levels"));
            }
            level = Some(l);
            continue;
        }
        let l = level.ok_or_else(|| format!("{line:?} before any level"))?;
        let bad = || format!("bad file {line:?}: NUMBER: SMALLEST..LARGEST SIZE");
        let (n, rest) = line.split_once(':').ok_or_else(bad)?;
        let (range, bytes) = rest.trim().split_once(' ').ok_or_else(bad)?;
        let (lo, hi) = range.split_once("..").ok_or_else(bad)?;
        if lo > hi {
            return Err(format!("{line:?}: the range ends before it starts"));
        }
        let f = sized_table(dir, number(n.trim())?, lo, hi, size(bytes.trim())?);
        v.levels[l].push(f);
    }
    v.sort();
    for (l, files) in v.levels.iter().enumerate().skip(1) {
        if let Some(w) = files
            .windows(2)
            .find(|w| w[0].largest_user_key() >= w[1].smallest_user_key())
        {
            return Err(format!(
                "L{l}: files {} and {} overlap",
                w[0].number(),
                w[1].number()
            ));
        }
    }
    Ok(v)
}

/// The file numbers of `files`, space-separated.
fn numbers(files: &[Arc<FileHandle>]) -> String {
    let n: Vec<String> = files.iter().map(|f| f.number().to_string()).collect();
    n.join(" ")
}

/// What the store compacts next in `v`, as the `pick` command prints it.
fn describe_pick(v: &Version, opts: &Options, pointers: &[Vec<u8>]) -> Vec<String> {
    let Some(mut c) = pick(v, opts, pointers) else {
        return vec!["none".to_string()];
    };
    // What the store runs (`Db::run_compaction`): a move of one file of a
    // level ≥ 1 takes along the files after it that meet nothing below.
    if c.move_only && c.level > 0 {
        extend_trivial_move(v, &mut c, opts.target_file_size.saturating_mul(25));
    }
    let kind = if c.move_only { "move" } else { "merge" };
    let mut out = vec![
        format!("{kind} L{} -> L{}", c.level, c.output_level),
        format!("  L{}: {}", c.level, numbers(&c.inputs)),
    ];
    if !c.move_only {
        let next = if c.next_inputs.is_empty() {
            "(none)".to_string()
        } else {
            numbers(&c.next_inputs)
        };
        out.push(format!("  L{}: {next}", c.output_level));
    }
    out
}

/// The base level and the scores of `v`, as the `scores` command prints
/// them.
fn describe_scores(v: &Version, opts: &Options) -> Vec<String> {
    let s = shape(v, opts);
    let mut out = vec![if s.settled_base == s.base {
        format!("base L{}", s.base)
    } else {
        format!("base L{} (settled L{})", s.base, s.settled_base)
    }];
    for (l, score) in scores(v, opts).iter().enumerate() {
        out.push(format!("L{l} {score:.1}"));
    }
    out
}

/// Runs one case: the output it gives, or what is wrong with its text.
fn run(case: &Case) -> Parsed<Vec<String>> {
    let mut words = case.command.split_whitespace();
    let command = words.next().unwrap_or_default();
    let args: Vec<&str> = words.collect();
    let (opts, pointer_args) = options(&args)?;
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let v = version(&case.input, opts.max_levels, dir.path())?;
    let mut pointers = vec![Vec::new(); opts.max_levels];
    for (l, k) in pointer_args {
        *pointers.get_mut(l).ok_or(format!("pointer at L{l}"))? = k;
    }
    match command {
        "pick" => Ok(describe_pick(&v, &opts, &pointers)),
        "scores" => Ok(describe_scores(&v, &opts)),
        _ => Err(format!("unknown command {command:?}")),
    }
}

/// The lines of `want` and `got`, each marked `-` (only expected), `+`
/// (only got) or ` ` (both), in order: a longest-common-subsequence diff.
fn diff(want: &[String], got: &[String]) -> Vec<String> {
    let (n, m) = (want.len(), got.len());
    let mut lcs = vec![vec![0usize; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            lcs[i][j] = if want[i] == got[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let (mut i, mut j, mut out) = (0, 0, Vec::new());
    while i < n || j < m {
        if i < n && j < m && want[i] == got[j] {
            out.push(format!("  {}", want[i]));
            (i, j) = (i + 1, j + 1);
        } else if i < n && (j == m || lcs[i + 1][j] >= lcs[i][j + 1]) {
            out.push(format!("- {}", want[i]));
            i += 1;
        } else {
            out.push(format!("+ {}", got[j]));
            j += 1;
        }
    }
    out
}

/// Runs every case of `text` (the file `name`): `Err` with, for each case
/// that fails, its line, its command, and the diff of the expected output
/// against the output it gave.
fn check(name: &str, text: &str) -> Parsed<usize> {
    let cases = parse(text).map_err(|e| format!("{name}: {e}"))?;
    let mut failures = Vec::new();
    for case in &cases {
        let at = format!("{name}:{}: {}", case.line, case.command);
        match run(case) {
            Err(e) => failures.push(format!("{at}\n  bad case: {e}")),
            Ok(got) if got != case.expected => {
                let d = diff(&case.expected, &got);
                failures.push(format!(
                    "{at}\n  expected vs got (-expected +got):\n    {}",
                    d.join("\n    ")
                ));
            }
            Ok(_) => {}
        }
    }
    if failures.is_empty() {
        Ok(cases.len())
    } else {
        Err(format!(
            "{} of {} cases failed:\n{}",
            failures.len(),
            cases.len(),
            failures.join("\n")
        ))
    }
}

#[test]
fn pick_cases() {
    let n = check("testdata/pick.txt", PICK).unwrap_or_else(|e| panic!("{e}"));
    assert!(n >= 8, "{n} cases");
}

/// A case whose stated output is not what the code gives fails, naming the
/// case and showing both outputs line by line.
#[test]
fn a_wrong_expectation_fails_with_a_diff() {
    let text = "\
# L0 at its trigger, L1 empty: the picked files overlap, so they merge.
pick l0_trigger=2
L0
  2: a..c 4K
  1: b..d 4K
----
move L0 -> L1
  L0: 2 1
";
    let e = check("inline", text).unwrap_err();
    assert!(e.contains("inline:2: pick l0_trigger=2"), "{e}");
    for line in [
        "- move L0 -> L1",
        "+ merge L0 -> L1",
        "    L0: 2 1",
        "+   L1: (none)",
    ] {
        assert!(e.contains(line), "{line:?} missing from:\n{e}");
    }
}
