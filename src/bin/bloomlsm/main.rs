//! `bloomlsm`: the filter / disk-I/O study (`bench`), SSTable inspection
//! (`sst`) and store commands (`db`), built on the library's public API only.
//!
//! - [`bench`](mod@bench): the filter / disk-I/O study (`bloomlsm bench`);
//!   [`sweep`] is its filter-only FPR sweep, [`workload`] its keys.
//! - [`sst_cmd`]: `bloomlsm sst dump | verify | filter-test`.
//! - [`db_cmd`]: `bloomlsm db put | get | delete | scan | load | stats | verify | compact`.
//! - [`report`]: text tables, JSON lines, CSV and number formats.
//! - [`plot`]: the SVG charts of `bench --plot`.
//! - [`escape`]: printable escaping of binary keys and values.
//!
//! Every command writes its results to a caller-supplied `Write` (stdout
//! here) and returns a [`CliError`] on failure, which `main` prints as one
//! line, `bloomlsm: <message>`, with a non-zero exit status.

mod bench;
mod db_cmd;
mod escape;
mod plot;
mod report;
mod sst_cmd;
mod sweep;
mod workload;

use std::fmt;
use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::time::Duration;

use bench::BenchArgs;
use clap::{Parser, Subcommand};
use db_cmd::DbCommand;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use sst_cmd::SstCommand;

/// An LSM key-value store whose SSTables carry cache-blocked Bloom filters,
/// and the tools to measure how much disk I/O those filters save.
#[derive(Debug, Parser)]
#[command(name = "bloomlsm", version, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Build a store per filter configuration and measure filter FPR, data-block
    /// reads per missing get and get latency (the study).
    Bench(BenchArgs),
    /// Inspect SSTable files: dump, verify, filter-test.
    Sst {
        #[command(subcommand)]
        command: SstCommand,
    },
    /// Operate on a store directory: put, get, delete, scan, load, stats, verify, compact.
    Db {
        #[command(subcommand)]
        command: DbCommand,
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
        Command::Db { command } => command.run(&mut out),
    };
    let result = result.and_then(|()| out.flush().map_err(CliError::from));
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
            let _ = e.print();
            ExitCode::from(EXIT_USAGE as u8)
        }
        _ => {
            // clap's message is the paragraph before "Usage:" / "tip:";
            // it may span lines (e.g. the list of missing arguments).
            let text = e.to_string();
            let para = text.trim_start().split("\n\n").next().unwrap_or_default();
            let msg = one_line(para.strip_prefix("error:").unwrap_or(para));
            let msg = if msg.is_empty() {
                "invalid arguments".into()
            } else {
                msg
            };
            eprintln!("bloomlsm: {msg} (see --help)");
            ExitCode::from(EXIT_USAGE as u8)
        }
    }
}

/// Exit status of a failed command (bad input data, corruption, I/O).
pub const EXIT_FAILURE: i32 = 1;
/// Exit status of a usage error (bad arguments), as clap uses.
pub const EXIT_USAGE: i32 = 2;

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
        CliError {
            code: EXIT_USAGE,
            ..Self::new(message)
        }
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
        let code = match e {
            bloomlsm::Error::InvalidArgument(_) => EXIT_USAGE,
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

/// Parses a key or value given on the command line in the escaped form that
/// the command prints (see [`escape`]).
pub fn parse_bytes(what: &str, text: &str) -> CliResult<Vec<u8>> {
    escape::unescape(text).map_err(|e| CliError::usage(format!("{what} {text:?}: {e}")))
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
    fn errors_are_one_line() {
        let e: CliError = bloomlsm::Error::corruption("/x.sst", 7, "bad\nthing").into();
        assert_eq!(e.message, "corruption in /x.sst at offset 7: bad thing");
        assert_eq!(e.code, EXIT_FAILURE);
        let e: CliError = bloomlsm::Error::invalid("nope").into();
        assert_eq!(e.code, EXIT_USAGE);
        assert!(parse_bytes("key", "a\\q").is_err());
    }
}
