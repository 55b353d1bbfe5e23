//! `bloomlsm stress`: many threads run random operations on a store with
//! options drawn from a seed, and every read is checked exactly against an
//! expected state, as RocksDB's `db_stress` does; `--kill` SIGKILLs the
//! stress process again and again and checks the store after each kill, as
//! `db_crashtest.py`'s blackbox mode does.
//!
//! - [`args`]: the flags.
//! - [`options`]: the store's and each keyspace's options, drawn from the seed.
//! - [`codec`]: the keys, the values (which name their keyspace, key and
//!   version) and a key's expected [`codec::State`].
//! - [`expected`]: the expected state, in memory and in a file that
//!   outlives a kill.
//! - [`locks`]: the striped key locks.
//! - [`failure`]: mismatches and errors.
//! - [`ops`]: the kinds of operation, their weights and counts.
//! - [`store`]: the store and its keyspaces' handles, the scratch
//!   keyspace's among them.
//! - [`verify`]: reads compared with the expected state.
//! - [`worker`]: what the worker threads share, and one thread's state.
//! - [`writes`], [`reads`], [`scratch`], [`admin`]: the operations.
//! - [`threads`]: the worker threads, each running operations.
//! - [`crash`]: the kill loop.
//!
//! Each file imports only from those listed before it.

mod admin;
pub mod args;
mod codec;
mod crash;
mod expected;
mod failure;
mod locks;
mod ops;
mod options;
mod reads;
mod scratch;
mod store;
mod threads;
mod verify;
mod worker;
mod writes;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

pub use args::StressArgs;
use crash::KillReport;
use expected::Expected;
use failure::{Checked, Failure};
use ops::{Op, counts_line};
use options::RunOptions;
use store::Store;
use threads::run_workers;
use worker::Shared;

use crate::report::count;
use crate::{CliError, CliResult};

/// Runs `bloomlsm stress`, writing its report to `out`.
pub fn run(args: &StressArgs, out: &mut dyn Write) -> CliResult {
    if args.kill_min > args.kill_max {
        return Err(CliError::usage(
            "--kill-min must not exceed --kill-max (see --help)",
        ));
    }
    if args.child {
        return child(args, out);
    }
    let dir = RunDir::prepare(args)?;
    let opts = options::draw(args.seed, args.keyspaces);
    banner(args, &dir.path, &opts, out)?;
    let started = Instant::now();
    let result = if args.kill {
        crash::kill_loop(args, &dir.path, &opts, |round, r| {
            if args.verbose {
                let _ = writeln!(
                    out,
                    "round {round}: {} kills, {} self-kills; writes in flight found written {}, not {}",
                    r.kills, r.self_kills, r.settled.new, r.settled.old
                );
            }
        })
        .map(|r| (r.counts, Some(r)))
    } else {
        plain(args, &dir.path, opts).map(|c| (c, None))
    };
    let (counts, kills) =
        result.map_err(|f| f.into_cli(args.seed, &dir.path.display().to_string()))?;
    summary(args, &counts, kills.as_ref(), started.elapsed(), out)?;
    if !args.keep {
        dir.remove()?;
    }
    Ok(())
}

/// A run without kills: the workers until the bound, then every key
/// checked, the store reopened and every key checked again.
fn plain(args: &StressArgs, dir: &Path, opts: RunOptions) -> Checked<[u64; Op::ALL.len()]> {
    let expected = Expected::create(&dir.join("expected"), args.keyspaces, args.keys)
        .map_err(Failure::Error)?;
    let store = Store::open(&dir.join("db"), &opts)?;
    let sh = Shared::new(args, dir.to_path_buf(), opts, store, expected);
    run_workers(&sh, args.threads, Duration::MAX, |_| Ok(()))
        .map_err(|e| Failure::error("run", e))?;
    if let Some(f) = sh.take_failure() {
        return Err(f);
    }
    sh.with_store(|s| verify_all_exact(s, &sh.expected))?;
    admin::reopen(&sh)?;
    let store = sh.store.write().unwrap_or_else(|p| p.into_inner()).take();
    if let Some(s) = store {
        s.close()?;
    }
    let mut counts = sh.counts.snapshot();
    counts[Op::ALL.iter().position(|&o| o == Op::Reopen).unwrap_or(0)] += 1;
    Ok(counts)
}

fn verify_all_exact(store: &Store, expected: &Expected) -> Checked {
    verify::verify_all(store, expected, false).map(drop)
}

/// A child of `--kill`: runs on the parent's store, printing its counts
/// every 100 ms, until killed.
fn child(args: &StressArgs, out: &mut dyn Write) -> CliResult {
    let Some(dir) = &args.dir else {
        return Err(CliError::usage("--child needs --dir"));
    };
    let shown = dir.display().to_string();
    let fail = |f: Failure| f.into_cli(args.seed, &shown);
    let opts = options::draw(args.seed, args.keyspaces);
    let expected = Expected::open(&dir.join("expected"), args.keyspaces, args.keys)
        .map_err(|e| fail(Failure::Error(e)))?;
    let store = Store::open(&dir.join("db"), &opts).map_err(fail)?;
    let sh = Shared::new(args, dir.clone(), opts, store, expected);
    run_workers(&sh, args.threads, Duration::from_millis(100), |c| {
        writeln!(out, "{}", counts_line(c))?;
        out.flush()
    })?;
    if let Some(f) = sh.take_failure() {
        return Err(fail(f));
    }
    Ok(())
}

/// The run's directory: `--dir` (missing or empty), or a new one under the
/// temporary directory.
struct RunDir {
    path: PathBuf,
    /// The run made the directory (else it only fills it).
    made: bool,
}

impl RunDir {
    fn prepare(args: &StressArgs) -> CliResult<RunDir> {
        let path = match &args.dir {
            Some(d) => d.clone(),
            None => std::env::temp_dir().join(format!(
                "bloomlsm-stress-{}-{}",
                std::process::id(),
                args.seed
            )),
        };
        let bad =
            |e: &dyn std::fmt::Display| CliError::usage(format!("--dir {}: {e}", path.display()));
        let made = match std::fs::read_dir(&path) {
            Ok(mut entries) => {
                if entries.next().is_some() {
                    return Err(bad(
                        &"not empty (the run needs a missing or empty directory)",
                    ));
                }
                false
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                std::fs::create_dir_all(&path).map_err(|e| bad(&e))?;
                true
            }
            Err(e) => return Err(bad(&e)),
        };
        std::fs::create_dir(path.join("checkpoints")).map_err(|e| bad(&e))?;
        Ok(RunDir { path, made })
    }

    /// Removes what the run made.
    fn remove(&self) -> CliResult {
        let r = if self.made {
            std::fs::remove_dir_all(&self.path)
        } else {
            ["db", "checkpoints", "expected"]
                .iter()
                .map(|n| self.path.join(n))
                .filter(|p| p.exists())
                .try_for_each(|p| {
                    if p.is_dir() {
                        std::fs::remove_dir_all(p)
                    } else {
                        std::fs::remove_file(p)
                    }
                })
        };
        r.map_err(|e| CliError::new(format!("remove {}: {e}", self.path.display())))
    }
}

/// The run's parameters and options, before it starts.
fn banner(args: &StressArgs, dir: &Path, opts: &RunOptions, out: &mut dyn Write) -> CliResult {
    writeln!(
        out,
        "bloomlsm stress: seed {}, {} threads, {} keyspaces of {} keys, in {}",
        args.seed,
        args.threads,
        args.keyspaces,
        count(u64::from(args.keys)),
        dir.display()
    )?;
    writeln!(out, "  store: {}", options::describe_store(&opts.store))?;
    writeln!(out, "  default: {}", options::describe_design(&opts.store))?;
    for (i, o) in opts.keyspaces.iter().enumerate() {
        writeln!(out, "  ks{}: {}", i + 1, options::describe_design(o))?;
    }
    if args.kill {
        let bound = match (args.duration, args.rounds) {
            (Some(d), Some(r)) => format!("for {} or {r} kills", secs(d)),
            (Some(d), None) => format!("for {}", secs(d)),
            (None, Some(r)) => format!("for {r} kills"),
            (None, None) => format!("for {}", secs(crash::DEFAULT_DURATION)),
        };
        writeln!(
            out,
            "  kills: each child runs {} to {} before its SIGKILL{}, {bound}",
            secs(args.kill_min),
            secs(args.kill_max),
            match args.whitebox {
                Some(n) => format!(" (and kills itself at about 1 in {n} crash points)"),
                None => String::new(),
            }
        )?;
    }
    out.flush()?;
    Ok(())
}

fn secs(d: Duration) -> String {
    format!("{:.1} s", d.as_secs_f64())
}

/// The counts per operation, the kills, and the verdict.
fn summary(
    args: &StressArgs,
    counts: &[u64],
    kills: Option<&KillReport>,
    elapsed: Duration,
    out: &mut dyn Write,
) -> CliResult {
    let total: u64 = counts.iter().sum();
    let whose = if kills.is_some() {
        " (as the children last reported them)"
    } else {
        ""
    };
    writeln!(
        out,
        "operations: {} in {} with {} threads{whose}",
        count(total),
        secs(elapsed),
        args.threads
    )?;
    for (op, n) in Op::ALL.iter().zip(counts) {
        writeln!(out, "  {:<22}{:>12}", op.name(), count(*n))?;
    }
    let keys = u64::from(args.keys) * u64::from(args.keyspaces);
    match kills {
        Some(k) => {
            writeln!(
                out,
                "kills: {} by the parent, {} by the children themselves; each followed by a \
                 check of all {} keys",
                k.kills,
                k.self_kills,
                count(keys)
            )?;
            writeln!(
                out,
                "  writes in flight at a kill: {} found written, {} found not written",
                count(k.settled.new),
                count(k.settled.old)
            )?;
            writeln!(
                out,
                "  torn WAL tails dropped on reopen: {} ({} bytes); checkpoints left by a kill \
                 and verified: {}",
                k.torn_tails, k.torn_bytes, k.checkpoints
            )?;
        }
        None => writeln!(
            out,
            "reopens: {}, each followed by a check of all {} keys",
            counts[Op::ALL.len() - 1],
            count(keys)
        )?,
    }
    writeln!(out, "seed {}: 0 mismatches", args.seed)?;
    Ok(())
}
