//! `db advise`: what other filter designs would have cost for the lookups
//! the store has served ([`bloomlsm::Db::advise`] over its lookup history),
//! one recommendation, and with `--apply` that design written as the
//! store's (with `--rebuild`, its filters rebuilt to it now).

use std::io::Write;
use std::path::{Path, PathBuf};

use bloomlsm::db::options_file;
use bloomlsm::{Advice, Db, FilterOptions, LookupHistory, Options};
use clap::Args;
use serde_json::json;

use super::store::{KeyspaceArg, NewStore, check_store};
use crate::design::DesignArgs;
use crate::open_files::OpenFilesArg;
use crate::report::{TextTable, bytes, count, sig3, utc_date};
use crate::{CliError, CliResult, write_json};

/// Arguments of `db advise`.
#[derive(Debug, Args)]
pub struct AdviseArgs {
    /// The store's directory, or s3://BUCKET/PREFIX for a store kept wholly in
    /// a bucket (AWS_* environment; reading only).
    pub dir: PathBuf,
    /// Write the recommended design as the store's (with --keyspace, that
    /// keyspace's; with --keyspaces, each keyspace's share), in OPTIONS:
    /// files written from then on follow it. Takes the store's lock.
    #[arg(long, conflicts_with = "reset")]
    pub apply: bool,
    /// With --apply: also rewrite now the filters of every file below L0
    /// whose bits the new design changes (Db::rebuild_filters).
    #[arg(long, requires = "apply")]
    pub rebuild: bool,
    /// Start the store's lookup history again from now (a window for the
    /// next advice), after printing the advice for the history so far.
    /// Takes the store's lock.
    #[arg(long)]
    pub reset: bool,
    /// One filter memory budget across the store's keyspaces: the memory
    /// the filters of every keyspace that counted gets hold now, shared out
    /// over their levels by those gets (Db::advise_keyspaces).
    #[arg(long, conflicts_with_all = ["reset", "keyspace"])]
    pub keyspaces: bool,
    /// Print one JSON object (fields below).
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub keyspace: KeyspaceArg,
}

pub(super) fn advise(a: &AdviseArgs, files: &OpenFilesArg, out: &mut dyn Write) -> CliResult {
    if a.reset && a.keyspace.keyspace.is_some() {
        return Err(CliError::usage(
            "--reset starts the store's lookup history again, every keyspace's: leave out \
             --keyspace",
        ));
    }
    check_store(&a.dir)?;
    if a.keyspaces {
        return super::advise_keyspaces::advise_keyspaces(a, files, out);
    }
    let writing = a.apply || a.reset;
    let db = if writing {
        super::store::open(&a.dir, NewStore::Refuse, &DesignArgs::default(), files)?
    } else {
        super::store::open_for_reading(&a.dir, files)?
    };
    let ks = a.keyspace.of(&db)?;
    let history = ks.lookup_history();
    if let Some(why) = &history.restarted {
        eprintln!(
            "bloomlsm: warning: the store's lookup history could not be read ({why}): it \
             counts from this open"
        );
    }
    let advice = ks.advise().map_err(|e| match e {
        bloomlsm::Error::InvalidArgument(m) => {
            CliError::negative(format!("{}: {m}", a.dir.display()))
        }
        e => e.into(),
    });
    let advice = match advice {
        Ok(x) => x,
        Err(e) if a.reset => {
            // A reset needs no advice.
            drop(ks);
            db.reset_lookup_history()?;
            db.close()?;
            writeln!(out, "{}", e.message)?;
            writeln!(out, "lookup history started again")?;
            return Ok(());
        }
        Err(e) => return Err(e),
    };
    drop(ks);
    if a.reset {
        db.reset_lookup_history()?;
    }
    db.close()?;
    let pick = advice.recommended;
    let mut rebuilt = None;
    let applied = a.apply && pick != 0;
    if applied {
        rebuilt = apply(
            &a.dir,
            a.keyspace.keyspace.as_deref(),
            &advice,
            a.rebuild,
            files,
        )?;
    }
    if a.json {
        return write_json(
            out,
            &report_json(&a.dir, &history, &advice, applied, rebuilt),
        );
    }
    print_report(out, &a.dir, &history, &advice)?;
    if a.reset {
        writeln!(out, "lookup history started again")?;
    }
    let best = &advice.designs[pick];
    if pick == 0 {
        writeln!(
            out,
            "recommendation: keep the present design (no other saves 2% of its wasted reads)"
        )?;
    } else if applied {
        writeln!(
            out,
            "applied: {} is the store's design (OPTIONS); {}",
            best.name,
            match rebuilt {
                Some(n) => format!("{n} files' filters rebuilt to it"),
                None => "files follow it as they are rewritten (or with --rebuild)".into(),
            }
        )?;
    } else {
        writeln!(
            out,
            "apply it: bloomlsm db advise {} --apply --rebuild",
            a.dir.display()
        )?;
    }
    Ok(())
}

/// Opens the store with design `advice.recommended` in place of the
/// filter design of `keyspace` (the default one for `None`), which the
/// open records; with `rebuild`, rebuilds the filters it changes: how
/// many files.
fn apply(
    dir: &Path,
    keyspace: Option<&str>,
    advice: &Advice,
    rebuild: bool,
    files: &OpenFilesArg,
) -> CliResult<Option<u64>> {
    let filters = advice.filter_options(advice.recommended);
    let designs: Vec<(String, FilterOptions)> =
        vec![(keyspace.unwrap_or("default").to_string(), filters)];
    let db = open_with_filters(dir, &designs, files)?;
    let rebuilt = if rebuild {
        Some(
            db.keyspace(keyspace.unwrap_or("default"))?
                .rebuild_filters()?,
        )
    } else {
        None
    };
    db.close()?;
    Ok(rebuilt)
}

/// Opens the store with `designs` (keyspace name, filter options) in
/// place of those keyspaces' recorded filter designs, which the open
/// records; the rest of each recorded design is kept.
pub(super) fn open_with_filters(
    dir: &Path,
    designs: &[(String, FilterOptions)],
    files: &OpenFilesArg,
) -> CliResult<Db> {
    let mut opts = Options::default().create_if_missing(false);
    files.apply(&mut opts);
    if let Some(file) = options_file::read(opts.fs.as_ref(), dir)? {
        file.design.apply(&mut opts);
    }
    for (name, filters) in designs {
        if name == "default" {
            opts.filters = filters.clone();
            opts.use_stored_design = false;
        } else {
            opts.keyspace_filters.push((name.clone(), filters.clone()));
        }
    }
    Ok(Db::open(dir, opts)?)
}

/// The bits per key of each of `levels`, `L1 9.9 L2 8.0`.
pub(super) fn bits_line(levels: &[usize], bits: &[f64]) -> String {
    levels
        .iter()
        .zip(bits)
        .map(|(l, b)| format!("L{l} {b:.1}"))
        .collect::<Vec<_>>()
        .join(" ")
}

fn print_report(
    out: &mut dyn Write,
    dir: &Path,
    history: &LookupHistory,
    advice: &Advice,
) -> CliResult {
    writeln!(
        out,
        "{}: {} gets counted since {} ({} found), {} filters",
        dir.display(),
        count(advice.gets),
        utc_date(history.since_unix_secs, false),
        count(history.gets_found),
        advice.kind.name()
    )?;
    let mut t = TextTable::new(&["level", "keys", "absent probes", "per get"]);
    for ((l, k), n) in advice
        .levels
        .iter()
        .zip(&advice.level_keys)
        .zip(&advice.absent_probes)
    {
        t.row(vec![
            format!("L{l}"),
            count(*k),
            count(*n),
            sig3(*n as f64 / advice.gets.max(1) as f64),
        ]);
    }
    write!(out, "{}", t.render())?;
    writeln!(out)?;
    let present = advice.designs[0].reads_per_get;
    let mut t = TextTable::new(&[
        "design",
        "memory",
        "bits/key by level",
        "wasted reads/get",
        "reads/get",
        "vs present",
    ])
    .align(2, crate::report::Align::Left);
    for (i, d) in advice.designs.iter().enumerate() {
        let mark = if i == advice.recommended { "* " } else { "  " };
        t.row(vec![
            format!("{mark}{}", d.name),
            bytes(d.memory_bytes),
            bits_line(&advice.levels, &d.bits_per_key),
            format!("{:.4}", d.wasted_reads_per_get),
            format!("{:.4}", d.reads_per_get),
            if present > 0.0 {
                format!("{:.3}x", d.reads_per_get / present)
            } else {
                "-".into()
            },
        ]);
    }
    write!(out, "{}", t.render())?;
    Ok(())
}

fn report_json(
    dir: &Path,
    history: &LookupHistory,
    advice: &Advice,
    applied: bool,
    rebuilt: Option<u64>,
) -> serde_json::Value {
    json!({
        "store": dir.display().to_string(),
        "gets": advice.gets,
        "gets_found": history.gets_found,
        "since_unix_secs": history.since_unix_secs,
        "history_restarted": history.restarted,
        "filter_kind": advice.kind.name(),
        "levels": advice.levels.iter().zip(&advice.level_keys).zip(&advice.absent_probes)
            .map(|((l, k), n)| json!({"level": l, "keys": k, "absent_probes": n}))
            .collect::<Vec<_>>(),
        "designs": advice.designs.iter().map(|d| json!({
            "name": d.name,
            "memory_bytes": d.memory_bytes,
            "bits_per_key": d.bits_per_key,
            "wasted_reads_per_get": d.wasted_reads_per_get,
            "reads_per_get": d.reads_per_get,
        })).collect::<Vec<_>>(),
        "recommended": advice.designs[advice.recommended].name,
        "applied": applied,
        "rebuilt_files": rebuilt,
    })
}
