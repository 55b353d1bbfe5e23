//! `bloomlsm db`: operate on a store directory from the shell.
//!
//! This file holds the commands' arguments and their dispatch. The commands
//! are grouped by what they work on: `records.rs` (`put`, `get`, `delete`,
//! `delete-range`, `scan`), `load.rs` (`load`), `stats.rs` (`stats`),
//! `verify.rs` (`verify`), `advise.rs` (`advise`) and `admin.rs` (`compact`, `keyspaces`,
//! `checkpoint`); `store.rs` holds what they share: the `--keyspace` flag,
//! the checks of a store directory and the opens. The store's shape as the
//! commands and the bench print it is in [`crate::report`].
//!
//! `get`, `scan`, `stats` and `verify` open the store read-only
//! ([`bloomlsm::Db::open_read_only`]): they take no lock and change no file.
//!
//! Every command that opens a store says so when the open dropped the end of
//! a write-ahead log or skipped damaged records in one
//! ([`bloomlsm::Stats::wal_tail_bytes_dropped`],
//! [`bloomlsm::Stats::wal_records_salvaged`]):
//! `verify` fails (exit status 1), the others print one warning line on
//! stderr, so that a read never answers from a store that lost writes
//! without saying so.
//!
//! Keys and values are given and printed in the text form of
//! [`escape`](crate::escape) (UTF-8 as itself, `\xNN` for control characters
//! and other bytes, `\\` for a backslash), or as hex with `--hex`, so `db scan`
//! output (`key<TAB>value` lines) can be fed back to `db load`. `--json`
//! prints the same keys and values inside JSON objects (fields in
//! [`help`]).

mod admin;
mod advise;
mod advise_keyspaces;
mod bucket_url;
mod load;
mod records;
pub mod stats;
mod store;
mod verify;

use std::io::Write;
use std::path::PathBuf;

use clap::Subcommand;

use crate::design::DesignArgs;
use crate::open_files::OpenFilesArg;
use crate::{CliResult, help};
use advise::AdviseArgs;
use load::LoadArgs;
use records::{GetArgs, PutArgs, ScanArgs};
use stats::StatsArgs;
use store::KeyspaceArg;

/// The `db` subcommands.
#[derive(Debug, Subcommand)]
pub enum DbCommand {
    /// Store a value under a key (creates the store if missing).
    #[command(after_help = help::DB_PUT)]
    Put(PutArgs),
    /// Print a key's value; exit status 1 if the key is absent.
    #[command(after_help = help::DB_GET)]
    Get(GetArgs),
    /// Remove a key (a no-op if absent; the store must exist).
    #[command(after_help = help::DB_DELETE)]
    Delete {
        /// The store's directory.
        dir: PathBuf,
        /// The key.
        key: String,
        /// The key is hex.
        #[arg(long)]
        hex: bool,
        #[command(flatten)]
        keyspace: KeyspaceArg,
        #[command(flatten)]
        design: DesignArgs,
    },
    /// Remove every key in [START, END) with one range tombstone (the store
    /// must exist).
    #[command(after_help = help::DB_DELETE_RANGE)]
    DeleteRange {
        /// The store's directory.
        dir: PathBuf,
        /// The first key removed.
        start: String,
        /// The end of the range: the first key after it, not removed.
        end: String,
        /// START and END are hex.
        #[arg(long)]
        hex: bool,
        #[command(flatten)]
        keyspace: KeyspaceArg,
        #[command(flatten)]
        design: DesignArgs,
    },
    /// Print entries in key order as `key<TAB>value` lines.
    #[command(after_help = help::DB_SCAN)]
    Scan(ScanArgs),
    /// Bulk-load `key` or `key<TAB>value` lines from a file or `-` (stdin),
    /// all or nothing, even if the process is killed.
    #[command(after_help = help::DB_LOAD)]
    Load(LoadArgs),
    /// Print the per-level shape, filters and lookup counters.
    #[command(after_help = help::DB_STATS)]
    Stats(StatsArgs),
    /// Cost other filter designs for the lookups the store has served, and
    /// recommend one (--apply writes it as the store's design).
    #[command(after_help = help::DB_ADVISE)]
    Advise(AdviseArgs),
    /// Check every block of every file of the store.
    #[command(after_help = help::DB_VERIFY)]
    Verify {
        /// The store's directory, or s3://BUCKET/PREFIX for a store kept
        /// wholly in a bucket (AWS_* environment).
        dir: PathBuf,
        /// Print one JSON object (fields below).
        #[arg(long)]
        json: bool,
    },
    /// Flush and merge everything down to the deepest level.
    #[command(after_help = help::DB_COMPACT)]
    Compact {
        /// The store's directory.
        dir: PathBuf,
        #[command(flatten)]
        keyspace: KeyspaceArg,
        #[command(flatten)]
        design: DesignArgs,
    },
    /// List the store's keyspaces, after creating (with the design flags)
    /// or dropping one.
    #[command(after_help = help::DB_KEYSPACES)]
    Keyspaces {
        /// The store's directory, or s3://BUCKET/PREFIX for a store kept
        /// wholly in a bucket (AWS_* environment).
        dir: PathBuf,
        /// Create this keyspace, with the design the flags give (the
        /// defaults without flags).
        #[arg(long, value_name = "NAME", conflicts_with = "drop")]
        create: Option<String>,
        /// Drop this keyspace and delete its files.
        #[arg(long, value_name = "NAME")]
        drop: Option<String>,
        /// Print one JSON object (fields below).
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        design: DesignArgs,
    },
    /// Copy the store as of now into a new directory (hard links where
    /// possible): a store of its own, for backups.
    #[command(after_help = help::DB_CHECKPOINT)]
    #[command(group = clap::ArgGroup::new("into").required(true).args(["target", "name"]))]
    Checkpoint {
        /// The store's directory, or s3://BUCKET/PREFIX for a store in a
        /// bucket.
        dir: PathBuf,
        /// The new directory (must not exist; its parent must).
        target: Option<PathBuf>,
        /// For a store in a bucket: keep the checkpoint beside it under
        /// this name, naming its tables instead of copying them.
        #[arg(long, value_name = "NAME")]
        name: Option<String>,
        /// Print one JSON object (fields below).
        #[arg(long)]
        json: bool,
    },
    /// List the checkpoints kept beside a store in a bucket, after
    /// deleting one.
    #[command(after_help = help::DB_CHECKPOINTS)]
    Checkpoints {
        /// s3://BUCKET/PREFIX.
        dir: PathBuf,
        /// Delete this checkpoint first.
        #[arg(long, value_name = "NAME")]
        delete: Option<String>,
        /// Print one JSON object per checkpoint.
        #[arg(long)]
        json: bool,
    },
}

impl DbCommand {
    /// Runs the command, writing its report to `out`.
    /// `files`: the `--max-open-files` flag of every subcommand.
    pub fn run(&self, files: &OpenFilesArg, out: &mut dyn Write) -> CliResult {
        match self {
            DbCommand::Put(a) => records::put(a, files),
            DbCommand::Get(a) => records::get(a, files, out),
            DbCommand::Delete {
                dir,
                key,
                hex,
                keyspace,
                design,
            } => records::delete(dir, key, *hex, keyspace, design, files),
            DbCommand::DeleteRange {
                dir,
                start,
                end,
                hex,
                keyspace,
                design,
            } => records::delete_range(dir, (start, end), *hex, keyspace, design, files),
            DbCommand::Scan(a) => records::scan(a, files, out),
            DbCommand::Load(a) => load::load(a, files, out),
            DbCommand::Stats(a) => stats::stats(a, files, out),
            DbCommand::Advise(a) => advise::advise(a, files, out),
            DbCommand::Verify { dir, json } => verify::verify(dir, *json, files, out),
            DbCommand::Compact {
                dir,
                keyspace,
                design,
            } => admin::compact(dir, keyspace, design, files, out),
            DbCommand::Keyspaces {
                dir,
                create,
                drop,
                json,
                design,
            } => admin::keyspaces(
                dir,
                create.as_deref(),
                drop.as_deref(),
                *json,
                design,
                files,
                out,
            ),
            DbCommand::Checkpoint {
                dir,
                target,
                name,
                json,
            } => match (target, name) {
                (_, Some(name)) => admin::keep_checkpoint(dir, name, *json, out),
                (Some(target), None) => admin::checkpoint(dir, target, *json, out),
                (None, None) => unreachable!("clap requires one"),
            },
            DbCommand::Checkpoints { dir, delete, json } => {
                admin::checkpoints(dir, delete.as_deref(), *json, out)
            }
        }
    }
}
