//! The flags of `bloomlsm stress`, and the parser of their durations.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

/// Most keys per keyspace: a key's index fits the value's header, and the
/// expected-state file stays small.
pub const MAX_KEYS: u32 = 1 << 24;

/// Most keyspaces of a run: the default one and `ks1` up to `ks15`.
pub const MAX_KEYSPACES: u32 = 16;

/// `bloomlsm stress`.
#[derive(Clone, Debug, Args)]
pub struct StressArgs {
    /// Worker threads, each choosing operations at random.
    #[arg(long, default_value_t = 4, value_name = "N",
          value_parser = clap::value_parser!(u32).range(1..=256))]
    pub threads: u32,
    /// Keys per keyspace.
    #[arg(long, default_value_t = 10_000, value_name = "N",
          value_parser = clap::value_parser!(u32).range(64..=MAX_KEYS as i64))]
    pub keys: u32,
    /// Keyspaces written: the default one and `ks1`, `ks2`, ... (each with a
    /// design of its own drawn from the seed).
    #[arg(long, default_value_t = 3, value_name = "N",
          value_parser = clap::value_parser!(u32).range(1..=MAX_KEYSPACES as i64))]
    pub keyspaces: u32,
    /// Seed of the options and of every choice of the run.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// Stop after this many operations (all threads together). Without
    /// --ops and --duration: 100000.
    #[arg(long, value_name = "N", conflicts_with = "kill")]
    pub ops: Option<u64>,
    /// Stop after this long: `90s`, `5m`, `1h`, `500ms`, or seconds.
    #[arg(long, value_name = "TIME", value_parser = parse_duration)]
    pub duration: Option<Duration>,
    /// The run's directory (must be missing or empty); default: a new one
    /// under the temporary directory. What the run writes there is removed
    /// at the end unless --keep.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Keep the run's directory at the end (a failed run always keeps it).
    #[arg(long)]
    pub keep: bool,
    /// Run the stress in child processes and SIGKILL each at a random
    /// moment; after each kill, reopen the store and check every key.
    #[arg(long)]
    pub kill: bool,
    /// --kill: stop after this many kills (without --duration: 60 s).
    #[arg(long, value_name = "N", requires = "kill",
          value_parser = clap::value_parser!(u64).range(1..))]
    pub rounds: Option<u64>,
    /// --kill: the shortest time a child runs before it is killed.
    #[arg(long, value_name = "TIME", default_value = "1s", value_parser = parse_duration)]
    pub kill_min: Duration,
    /// --kill: the longest time a child runs before it is killed.
    #[arg(long, value_name = "TIME", default_value = "5s", value_parser = parse_duration)]
    pub kill_max: Duration,
    /// --kill: each child also kills itself at random points (right after a
    /// flush, compaction, ingest or checkpoint returns, between a batch's
    /// expected state and its write), about once in this many such points.
    #[arg(long, value_name = "N", requires = "kill",
          value_parser = clap::value_parser!(u64).range(1..))]
    pub whitebox: Option<u64>,
    /// Print a line per kill round.
    #[arg(long)]
    pub verbose: bool,
    /// A child of --kill: runs on the parent's directory until killed.
    #[arg(long, hide = true)]
    pub child: bool,
    /// The child's round (its choices' seed is drawn from --seed and it).
    #[arg(long, hide = true, default_value_t = 0)]
    pub round: u64,
    /// Writes one value with a version the expected state does not record
    /// and reads it back: the run must end in a mismatch.
    #[arg(long, hide = true)]
    pub inject_fault: bool,
}

impl StressArgs {
    /// The operation budget: --ops, or 100000 when neither --ops nor
    /// --duration bounds the run; `None`: unbounded.
    pub fn op_budget(&self) -> Option<u64> {
        match (self.ops, self.duration) {
            (Some(n), _) => Some(n),
            (None, None) if !self.kill && !self.child => Some(100_000),
            _ => None,
        }
    }
}

/// A duration: a number with a unit (`ms`, `s`, `m`, `h`), or seconds; the
/// number may have a fraction (`1.5s`).
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let secs_per = match unit.trim() {
        "" | "s" => 1.0,
        "ms" => 0.001,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        _ => f64::NAN,
    };
    let n: f64 = num.parse().unwrap_or(f64::NAN);
    let secs = n * secs_per;
    if secs.is_finite() && (0.0..=1e9).contains(&secs) {
        Ok(Duration::from_secs_f64(secs))
    } else {
        Err(format!(
            "{s:?} is not a duration (e.g. 500ms, 90s, 5m, 1h, or seconds)"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_or_explain() {
        assert_eq!(parse_duration("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("5m"), Ok(Duration::from_secs(300)));
        assert_eq!(parse_duration("1h"), Ok(Duration::from_secs(3600)));
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("1.5"), Ok(Duration::from_millis(1500)));
        for bad in ["", "s", "1x", "-1s", "1e99", "ten"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }
}
