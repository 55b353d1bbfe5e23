//! `--kill`: the parent runs the stress in a child process (this binary
//! again, with a hidden `--child` flag), SIGKILLs it after a random time,
//! reopens the store itself and checks every key against the expected
//! state (a key whose write was in flight may hold its old or its new
//! state, and is settled to the one found), then starts the next child.
//! With `--whitebox`, children also kill themselves at random points.
//!
//! A child reports its operation counts every 100 ms on stdout (a
//! `counts` line); the parent keeps the last line of each, so the
//! operations of a child's last 100 ms are not counted.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bloomlsm::workload::{SplitMix64, mix64};

use super::admin::clean_checkpoints;
use super::args::StressArgs;
use super::expected::Expected;
use super::failure::{Checked, Failure};
use super::ops::{Op, parse_counts_line};
use super::options::RunOptions;
use super::scratch;
use super::store::Store;
use super::verify::{Settled, verify_all};
use super::worker::lock;

/// A `--kill` run's default length, without `--duration` or `--rounds`.
pub const DEFAULT_DURATION: Duration = Duration::from_secs(60);

/// What the kill loop did.
#[derive(Debug, Default)]
pub struct KillReport {
    /// Children the parent killed.
    pub kills: u64,
    /// Children that killed themselves (`--whitebox`).
    pub self_kills: u64,
    /// Writes in flight at the kills, found written or not.
    pub settled: Settled,
    /// Finished checkpoints left by a kill, opened and verified.
    pub checkpoints: u64,
    /// Reopens that dropped a torn WAL tail, and its bytes.
    pub torn_tails: u64,
    /// Bytes of those tails.
    pub torn_bytes: u64,
    /// The children's operation counts (as last reported).
    pub counts: [u64; Op::ALL.len()],
}

/// Runs the kill loop on the store of `dir` (made, with its expected state,
/// before the first child starts). `round_done` is told of each round.
pub fn kill_loop(
    args: &StressArgs,
    dir: &Path,
    opts: &RunOptions,
    mut round_done: impl FnMut(u64, &KillReport),
) -> Checked<KillReport> {
    let (keyspaces, keys) = (args.keyspaces, args.keys);
    let expected_path = dir.join("expected");
    Expected::create(&expected_path, keyspaces, keys).map_err(Failure::Error)?;
    Store::open(&dir.join("db"), opts)?.close()?;
    let end = match (args.duration, args.rounds) {
        (Some(d), _) => Some(Instant::now() + d),
        (None, Some(_)) => None,
        (None, None) => Some(Instant::now() + DEFAULT_DURATION),
    };
    let mut rng = SplitMix64::new(mix64(args.seed ^ 0x4b49_4c4c));
    let mut report = KillReport::default();
    for round in 0.. {
        if args.rounds.is_some_and(|r| round >= r) {
            break;
        }
        let mut wait = args.kill_min + (args.kill_max - args.kill_min).mul_f64(rng.unit());
        if let Some(end) = end {
            let left = end.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            wait = wait.min(left);
        }
        let outcome = run_child(args, dir, round, wait)?;
        if outcome.self_killed {
            report.self_kills += 1;
        } else {
            report.kills += 1;
        }
        if let Some(c) = outcome.counts {
            for (sum, c) in report.counts.iter_mut().zip(c) {
                *sum += c;
            }
        }
        recover(dir, opts, keyspaces, keys, &mut report)?;
        round_done(round, &report);
    }
    Ok(report)
}

/// After a kill: opens the store, checks the checkpoints and the scratch
/// keyspace it left, checks and settles every key, verifies every table.
fn recover(
    dir: &Path,
    opts: &RunOptions,
    keyspaces: u32,
    keys: u32,
    report: &mut KillReport,
) -> Checked {
    let expected =
        Expected::open(&dir.join("expected"), keyspaces, keys).map_err(Failure::Error)?;
    let store = Store::open(&dir.join("db"), opts)?;
    let dropped = store.db.stats().wal_tail_bytes_dropped;
    if dropped > 0 {
        report.torn_tails += 1;
        report.torn_bytes += dropped;
    }
    report.checkpoints += clean_checkpoints(&dir.join("checkpoints"), &opts.store)?;
    scratch::reset(&store)?;
    let s = verify_all(&store, &expected, true)?;
    report.settled.old += s.old;
    report.settled.new += s.new;
    store.close()
}

/// How a child ended.
struct Outcome {
    /// It killed itself (`--whitebox`) before the parent did.
    self_killed: bool,
    /// Its last counts line.
    counts: Option<[u64; Op::ALL.len()]>,
}

/// Runs child `round` for `wait`, then kills it.
fn run_child(args: &StressArgs, dir: &Path, round: u64, wait: Duration) -> Checked<Outcome> {
    let exe = std::env::current_exe().map_err(|e| Failure::error("find this program", e))?;
    let mut cmd = Command::new(exe);
    cmd.arg("stress")
        .args(["--kill", "--child"])
        .arg("--dir")
        .arg(dir)
        .args(["--seed", &args.seed.to_string()])
        .args(["--round", &round.to_string()])
        .args(["--threads", &args.threads.to_string()])
        .args(["--keys", &args.keys.to_string()])
        .args(["--keyspaces", &args.keyspaces.to_string()])
        // A child the parent failed to kill ends by itself.
        .args(["--duration", &format!("{}s", args.kill_max.as_secs() + 60)]);
    if let Some(n) = args.whitebox {
        cmd.args(["--whitebox", &n.to_string()]);
    }
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| Failure::error("start a child", e))?;
    let last = Arc::new(Mutex::new(None));
    let stdout = child.stdout.take().map(|o| {
        let last = last.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(o).lines().map_while(Result::ok) {
                if let Some(c) = parse_counts_line(&line) {
                    *lock(&last) = Some(c);
                }
            }
        })
    });
    let stderr = child.stderr.take().map(|mut e| {
        std::thread::spawn(move || {
            let mut s = String::new();
            let _ = e.read_to_string(&mut s);
            s
        })
    });
    let started = Instant::now();
    let mut exited = None;
    while started.elapsed() < wait {
        match child.try_wait() {
            Ok(Some(status)) => {
                exited = Some(status);
                break;
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(10).min(wait)),
            Err(e) => return Err(Failure::error("wait for a child", e)),
        }
    }
    let status = match exited {
        Some(s) => s,
        None => {
            // Child::kill sends SIGKILL.
            child
                .kill()
                .map_err(|e| Failure::error("kill a child", e))?;
            child
                .wait()
                .map_err(|e| Failure::error("wait for a child", e))?
        }
    };
    if let Some(h) = stdout {
        let _ = h.join();
    }
    let err = stderr.and_then(|h| h.join().ok()).unwrap_or_default();
    let self_killed = exited.is_some() && args.whitebox.is_some() && killed_by_sigkill(&status);
    if exited.is_some() && !self_killed {
        let code = status.code().unwrap_or(crate::EXIT_FAILURE);
        let msg = err.trim().trim_start_matches("bloomlsm: ");
        // The parent names the seed and the directory itself.
        let msg = msg.rsplit_once(" (seed ").map_or(msg, |(m, _)| m);
        return Err(Failure::Child(
            if code == 0 { crate::EXIT_FAILURE } else { code },
            format!("child {round} ended by itself ({status}): {msg}"),
        ));
    }
    let counts = *lock(&last);
    Ok(Outcome {
        self_killed,
        counts,
    })
}

#[cfg(unix)]
fn killed_by_sigkill(status: &std::process::ExitStatus) -> bool {
    std::os::unix::process::ExitStatusExt::signal(status) == Some(9)
}

#[cfg(not(unix))]
fn killed_by_sigkill(status: &std::process::ExitStatus) -> bool {
    !status.success()
}
