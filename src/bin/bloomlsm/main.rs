//! `bloomlsm`: the filter / disk-I/O study (`bench`), SSTable inspection
//! (`sst`) and store commands (`db`), built on the library's public API only.
//!
//! - [`bench`](mod@bench): the filter / disk-I/O study (`bloomlsm bench`);
//!   [`sweep`] is its filter-only FPR sweep, [`workload`] its keys.
//! - [`sst_cmd`]: `bloomlsm sst dump | verify | filter-test`.
//! - [`db`](mod@db): `bloomlsm db put | get | delete | delete-range | scan | load | stats | verify |
//!   compact | keyspaces | checkpoint | checkpoints`.
//! - [`stress`]: `bloomlsm stress`, random operations checked against an
//!   expected state, with `--kill` a SIGKILL loop.
//! - [`report`]: text tables, JSON, CSV, number and date formats, the
//!   store's shape.
//! - [`plot`]: the SVG charts of `bench --plot`.
//! - [`escape`]: the text and hex forms of keys and values.
//! - [`help`]: examples, JSON fields and exit statuses shown by `--help`.
//! - [`interrupt`]: `bench`'s temporary stores removed on SIGINT / SIGTERM.
//!
//! Every command writes its results to a caller-supplied `Write` (stdout
//! here) and returns a [`CliError`] on failure, which `main` prints as one
//! line, `bloomlsm: <message>`, with a documented non-zero exit status
//! ([`EXIT_NEGATIVE`], [`EXIT_USAGE`], [`EXIT_DATA`], [`EXIT_FAILURE`]).

mod bench;
mod db;
mod design;
mod escape;
mod filter_cost;
mod help;
mod interrupt;
mod open_files;
mod phase;
mod plot;
mod report;
mod sst_cmd;
mod stress;
mod sweep;

use std::fmt;
use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::time::Duration;

use bench::BenchArgs;
// The study's keys are the library's: `bench` names them `crate::workload`.
use bloomlsm::workload;
use clap::{CommandFactory, Parser, Subcommand};
use db::DbCommand;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use sst_cmd::SstCommand;

/// An LSM key-value store whose SSTables carry cache-blocked Bloom filters,
/// and the tools to measure how much disk I/O those filters save.
#[derive(Debug, Parser)]
#[command(name = "bloomlsm", version, propagate_version = true, after_help = help::TOP)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Build a store per filter configuration and measure filter FPR, data-block
    /// reads per missing get and get latency (the study).
    #[command(after_help = help::BENCH)]
    Bench(Box<BenchArgs>),
    /// Inspect SSTable files: dump, verify, filter-test.
    #[command(after_help = help::TOP)]
    Sst {
        #[command(subcommand)]
        command: SstCommand,
    },
    /// Operate on a store directory: put, get, delete, delete-range, scan, load, stats, advise, verify,
    /// compact, keyspaces, checkpoint, checkpoints.
    #[command(after_help = help::TOP)]
    Db {
        #[command(subcommand)]
        command: Box<DbCommand>,
        #[command(flatten)]
        files: open_files::OpenFilesArg,
    },
    /// Run random operations on many threads and check every read against
    /// an expected state; with --kill, SIGKILL the run again and again and
    /// check the store after each kill.
    #[command(after_help = help::STRESS)]
    Stress(Box<stress::StressArgs>),
    /// Print a shell completion script for bash, zsh, fish, elvish or powershell.
    #[command(after_help = help::COMPLETIONS)]
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => return usage_error(e),
    };
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let result = match &cli.command {
        Command::Bench(a) => bench::run(a, &mut out).map(drop),
        Command::Sst { command } => command.run(&mut out),
        Command::Db { command, files } => command.run(files, &mut out),
        Command::Stress(a) => stress::run(a, &mut out),
        Command::Completions { shell } => {
            // Into memory first: clap_complete panics on a write error.
            let mut script = Vec::new();
            clap_complete::generate(*shell, &mut Cli::command(), "bloomlsm", &mut script);
            out.write_all(&script).map_err(CliError::from)
        }
    };
    let result = result.and_then(|()| out.flush().map_err(CliError::from));
    // An interrupted `bench` ends with the signal's status, not with what
    // the removal of its files did to the run.
    interrupt::settle();
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.broken_pipe => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bloomlsm: {}", one_line(&e.message));
            ExitCode::from(e.code.clamp(1, 255) as u8)
        }
    }
}

/// `--help` and `--version` print as clap renders them; real usage errors
/// become one line, `bloomlsm: <error>`, with exit status 2.
fn usage_error(e: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    match e.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
            let _ = e.print();
            ExitCode::SUCCESS
        }
        ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            eprintln!("bloomlsm: {}", missing_subcommand(std::env::args().skip(1)));
            ExitCode::from(EXIT_USAGE as u8)
        }
        _ => {
            eprintln!("bloomlsm: {}", clap_message(&e.to_string()));
            ExitCode::from(EXIT_USAGE as u8)
        }
    }
}

/// The one-line error for a command given without its subcommand, e.g.
/// `'db' needs a command: put, get, ... (see bloomlsm db --help)`.
fn missing_subcommand(args: impl Iterator<Item = String>) -> String {
    let mut cmd = Cli::command();
    let mut path = Vec::new();
    for a in args {
        let Some(sub) = cmd.find_subcommand(&a).cloned() else {
            break;
        };
        path.push(a);
        cmd = sub;
    }
    let subs = cmd
        .get_subcommands()
        .map(|c| c.get_name())
        .collect::<Vec<_>>()
        .join(", ");
    match path.as_slice() {
        [] => format!("a command is needed: {subs} (see --help)"),
        [.., last] => format!(
            "'{last}' needs a command: {subs} (see bloomlsm {} --help)",
            path.join(" ")
        ),
    }
}

/// clap's error text as one line: its message (the paragraph before
/// "Usage:"; it may span lines, e.g. the list of missing arguments) and its
/// "did you mean" tips, e.g. `unrecognized subcommand 'bnech' (tip: a similar
/// subcommand exists: 'bench'; see --help)`.
fn clap_message(text: &str) -> String {
    let mut paras = text.trim_start().split("\n\n").map(str::trim);
    let first = paras.next().unwrap_or_default();
    let msg = one_line(first.strip_prefix("error:").unwrap_or(first));
    let msg = if msg.is_empty() {
        "invalid arguments".into()
    } else {
        msg
    };
    let mut notes: Vec<String> = paras
        .filter(|p| p.starts_with("tip:"))
        .map(one_line)
        .collect();
    notes.push("see --help".into());
    format!("{msg} ({})", notes.join("; "))
}

/// Exit status when the answer is no: `db get` found no such key, `sst
/// verify` / `db verify` found a bad file.
pub const EXIT_NEGATIVE: i32 = 1;
/// Exit status of a usage error (bad arguments or output paths; nothing was
/// written), as clap uses.
pub const EXIT_USAGE: i32 = 2;
/// Exit status of bad input data: a `db load` line that does not parse, a key
/// or value over the store's limits (nothing was written).
pub const EXIT_DATA: i32 = 3;
/// Exit status of any other failure: I/O error, corruption met while doing
/// something else, a store locked by another process.
pub const EXIT_FAILURE: i32 = 4;

/// Why a command failed: a one-line message and the exit status to use.
#[derive(Debug)]
pub struct CliError {
    /// One line, without the `bloomlsm: ` prefix.
    pub message: String,
    /// Process exit status (non-zero).
    pub code: i32,
    /// The failure was a closed stdout (e.g. `| head`): exit quietly.
    pub broken_pipe: bool,
}

impl CliError {
    /// A failure with exit status [`EXIT_FAILURE`].
    pub fn new(message: impl Into<String>) -> Self {
        CliError {
            message: message.into(),
            code: EXIT_FAILURE,
            broken_pipe: false,
        }
    }

    /// A usage error (exit status [`EXIT_USAGE`]).
    pub fn usage(message: impl Into<String>) -> Self {
        Self::new(message).with_code(EXIT_USAGE)
    }

    /// Bad input data (exit status [`EXIT_DATA`]).
    pub fn data(message: impl Into<String>) -> Self {
        Self::new(message).with_code(EXIT_DATA)
    }

    /// A negative answer (exit status [`EXIT_NEGATIVE`]).
    pub fn negative(message: impl Into<String>) -> Self {
        Self::new(message).with_code(EXIT_NEGATIVE)
    }

    /// The same error with another exit status.
    pub fn with_code(self, code: i32) -> Self {
        CliError { code, ..self }
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for CliError {}

impl From<bloomlsm::Error> for CliError {
    fn from(e: bloomlsm::Error) -> Self {
        // The engine rejects a key or value (empty, over a limit): input data.
        let code = match e {
            bloomlsm::Error::InvalidArgument(_) => EXIT_DATA,
            _ => EXIT_FAILURE,
        };
        CliError {
            code,
            ..CliError::new(one_line(&e.to_string()))
        }
    }
}

impl From<std::io::Error> for CliError {
    fn from(e: std::io::Error) -> Self {
        CliError {
            broken_pipe: e.kind() == std::io::ErrorKind::BrokenPipe,
            ..CliError::new(format!("write output: {e}"))
        }
    }
}

/// Result of a command.
pub type CliResult<T = ()> = Result<T, CliError>;

/// Collapses a message onto one line (errors are printed as one line).
pub fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Parses a key or value given on the command line in the form that the
/// command prints (see [`escape`]); a bad one is a usage error.
pub fn parse_bytes(codec: escape::Codec, what: &str, text: &str) -> CliResult<Vec<u8>> {
    codec
        .decode(text)
        .map_err(|e| CliError::usage(format!("{what} {text:?}: {e}")))
}

/// A byte count: digits, optionally followed by K, M or G (binary units).
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let (num, mult) = match t.char_indices().last() {
        Some((i, 'K' | 'k')) => (&t[..i], 1u64 << 10),
        Some((i, 'M' | 'm')) => (&t[..i], 1 << 20),
        Some((i, 'G' | 'g')) => (&t[..i], 1 << 30),
        _ => (t, 1),
    };
    num.parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(mult))
        .ok_or_else(|| format!("{s:?} is not a byte count (e.g. 65536, 64K, 2M)"))
}

/// Writes `value` as one line of compact JSON.
pub fn write_json(out: &mut dyn Write, value: &serde_json::Value) -> CliResult {
    serde_json::to_writer(&mut *out, value).map_err(std::io::Error::from)?;
    writeln!(out)?;
    Ok(())
}

/// A progress bar on stderr for a phase of `len` steps (a spinner if `None`),
/// hidden when `quiet` or when stderr is not a terminal (pipes, CI, tests).
pub fn progress(len: Option<u64>, quiet: bool, message: impl Into<String>) -> ProgressBar {
    let visible = !quiet && std::io::stderr().is_terminal();
    let target = if visible {
        ProgressDrawTarget::stderr_with_hz(10)
    } else {
        ProgressDrawTarget::hidden()
    };
    let pb = match len {
        Some(n) => {
            let pb = ProgressBar::with_draw_target(Some(n), target);
            pb.set_style(
                ProgressStyle::with_template(
                    "{msg:>28} [{bar:30}] {human_pos}/{human_len} ({per_sec}, {eta})",
                )
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> "),
            );
            pb
        }
        None => {
            let pb = ProgressBar::with_draw_target(None, target);
            pb.set_style(
                ProgressStyle::with_template("{spinner} {msg} {human_pos} ({per_sec})")
                    .unwrap_or_else(|_| ProgressStyle::default_spinner()),
            );
            pb.enable_steady_tick(Duration::from_millis(200));
            pb
        }
    };
    pb.set_message(message.into());
    pb
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_or_explain() {
        assert_eq!(parse_size("65536"), Ok(65536));
        assert_eq!(parse_size("64K"), Ok(64 << 10));
        assert_eq!(parse_size("2m"), Ok(2 << 20));
        assert_eq!(parse_size("1G"), Ok(1 << 30));
        for bad in ["", "K", "-1", "1.5M", "x", "99999999999999999999G"] {
            assert!(parse_size(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn errors_are_one_line() {
        let e: CliError = bloomlsm::Error::corruption("/x.sst", 7, "bad\nthing").into();
        assert_eq!(e.message, "corruption in /x.sst at offset 7: bad thing");
        assert_eq!(e.code, EXIT_FAILURE);
        let e: CliError = bloomlsm::Error::invalid("nope").into();
        assert_eq!(e.code, EXIT_DATA);
        let e = parse_bytes(escape::Codec::Text, "key", "a\\q").unwrap_err();
        assert_eq!(e.code, EXIT_USAGE);
        assert!(parse_bytes(escape::Codec::Hex, "key", "abc").is_err());
    }

    #[test]
    fn usage_errors_keep_tips() {
        let e = Cli::try_parse_from(["bloomlsm", "bnech"]).unwrap_err();
        let m = clap_message(&e.to_string());
        assert!(m.contains("unrecognized subcommand 'bnech'"), "{m}");
        assert!(
            m.contains("tip: a similar subcommand exists: 'bench'"),
            "{m}"
        );
        assert!(m.ends_with("; see --help)"), "{m}");
        assert_eq!(
            clap_message(
                "error: the following required arguments were not provided:\n  <DIR>\n\nUsage: x"
            ),
            "the following required arguments were not provided: <DIR> (see --help)"
        );
    }

    #[test]
    fn missing_subcommands_are_listed() {
        let m = missing_subcommand(["db".to_string()].into_iter());
        assert!(
            m.starts_with("'db' needs a command: put, get, delete,"),
            "{m}"
        );
        assert!(m.ends_with("(see bloomlsm db --help)"), "{m}");
        let m = missing_subcommand(std::iter::empty());
        assert_eq!(
            m,
            "a command is needed: bench, sst, db, stress, completions (see --help)"
        );
    }

    /// Each command's one-line summary names every one of its subcommands.
    #[test]
    fn summaries_name_every_subcommand() {
        let cli = Cli::command();
        for group in ["sst", "db"] {
            let cmd = cli.find_subcommand(group).unwrap();
            let about = cmd.get_about().unwrap().to_string();
            let listed: Vec<&str> = about
                .split_once(": ")
                .unwrap()
                .1
                .trim_end_matches('.')
                .split(", ")
                .collect();
            let subs: Vec<&str> = cmd.get_subcommands().map(|c| c.get_name()).collect();
            assert_eq!(listed, subs, "{group}: {about}");
        }
    }

    #[test]
    fn the_command_is_well_formed() {
        Cli::command().debug_assert();
    }
}
