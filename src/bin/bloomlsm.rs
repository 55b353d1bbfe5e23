//! `bloomlsm`: the filter / disk-I/O study (`bench`), SSTable inspection
//! (`sst`) and store commands (`db`). Argument parsing and dispatch only; the
//! logic lives in `bloomlsm::cli`.

use std::io::Write;
use std::process::ExitCode;

use bloomlsm::cli::{self, CliError, bench::BenchArgs, db_cmd::DbCommand, sst_cmd::SstCommand};
use clap::{Parser, Subcommand};

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
        Command::Bench(a) => cli::bench::run(a, &mut out).map(drop),
        Command::Sst { command } => command.run(&mut out),
        Command::Db { command } => command.run(&mut out),
    };
    let result = result.and_then(|()| out.flush().map_err(CliError::from));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.broken_pipe => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bloomlsm: {}", cli::one_line(&e.message));
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
            ExitCode::from(cli::EXIT_USAGE as u8)
        }
        _ => {
            // clap's message is the paragraph before "Usage:" / "tip:";
            // it may span lines (e.g. the list of missing arguments).
            let text = e.to_string();
            let para = text.trim_start().split("\n\n").next().unwrap_or_default();
            let msg = cli::one_line(para.strip_prefix("error:").unwrap_or(para));
            let msg = if msg.is_empty() {
                "invalid arguments".into()
            } else {
                msg
            };
            eprintln!("bloomlsm: {msg} (see --help)");
            ExitCode::from(cli::EXIT_USAGE as u8)
        }
    }
}
