//! The `db` commands on the store as a whole: `compact`, `keyspaces`
//! (list, create, drop) and `checkpoint`.

use std::io::Write;
use std::path::Path;
use std::time::Instant;

use bloomlsm::db::Manifest;
use bloomlsm::fs::RealFs;
use bloomlsm::{Db, Options};
use serde_json::json;

use super::store::{
    KeyspaceArg, NewStore, check_store, open, open_for_reading, open_keyspace, warn_wal_damage,
};
use crate::design::DesignArgs;
use crate::open_files::OpenFilesArg;
use crate::report::{bytes, count, shape_line};
use crate::{CliError, CliResult, write_json};

/// `db compact`: flushes and merges everything down to the deepest level,
/// printing the store's shape before and after.
pub(super) fn compact(
    dir: &Path,
    keyspace: &KeyspaceArg,
    design: &DesignArgs,
    files: &OpenFilesArg,
    out: &mut dyn Write,
) -> CliResult {
    let (db, ks) = open_keyspace(dir, keyspace, design, NewStore::Refuse, files)?;
    writeln!(out, "before: {}", shape_line(&ks.stats()))?;
    let t = Instant::now();
    ks.compact()?;
    writeln!(out, "after:  {}", shape_line(&ks.stats()))?;
    writeln!(out, "compacted in {:.2} s", t.elapsed().as_secs_f64())?;
    Ok(db.close()?)
}

/// `db keyspaces`: lists the store's keyspaces (read-only) or, with
/// `--create` or `--drop`, opens it for writing to change them first.
pub(super) fn keyspaces(
    dir: &Path,
    create: Option<&str>,
    drop: Option<&str>,
    json: bool,
    design: &DesignArgs,
    files: &OpenFilesArg,
    out: &mut dyn Write,
) -> CliResult {
    if create.is_none() && design.any() {
        return Err(CliError::usage(
            "the design flags of db keyspaces are the design of the keyspace --create makes",
        ));
    }
    // A name or design the change cannot take is a usage error, found
    // before the store is opened for writing (which writes files).
    let mut opts = Options::default();
    if let Some(name) = create {
        if let Some(why) = bloomlsm::db::keyspace_name_error(name) {
            return Err(CliError::usage(format!("--create {name:?}: {why}")));
        }
        design.apply_flags(&mut opts)?;
        opts.validate()
            .map_err(|e| CliError::usage(format!("--create {name:?}: {e}")))?;
    }
    if create.is_some() || drop.is_some() {
        check_store(dir)?;
        let (state, _) = Manifest::recover(&RealFs, dir)?;
        let exists = |name: &str| name == "default" || state.keyspaces.values().any(|n| n == name);
        let d = dir.display();
        if let Some(name) = create.filter(|n| exists(n)) {
            return Err(CliError::usage(format!(
                "{d} already has a keyspace {name:?}"
            )));
        }
        if drop == Some("default") {
            return Err(CliError::usage(
                "the default keyspace cannot be dropped (it holds the keys written without --keyspace)",
            ));
        }
        if let Some(name) = drop.filter(|n| !exists(n)) {
            return Err(CliError::usage(format!(
                "{d} has no keyspace {name:?} (db keyspaces {d} lists them)"
            )));
        }
    }
    let db = if create.is_some() || drop.is_some() {
        open(dir, NewStore::Refuse, &DesignArgs::default(), files)?
    } else {
        open_for_reading(dir, files)?
    };
    if let Some(name) = create {
        db.create_keyspace(name, opts)?;
    }
    if let Some(name) = drop {
        db.drop_keyspace(name)?;
    }
    let names = db.keyspace_names();
    db.close()?;
    if json {
        return write_json(out, &json!({ "keyspaces": names }));
    }
    for n in names {
        writeln!(out, "{n}")?;
    }
    Ok(())
}

/// `db checkpoint`: refuses a target that exists, whose parent does not, or
/// that lies inside the store's directory (usage errors, before the store
/// is opened), then opens the store for writing and takes the checkpoint.
pub(super) fn checkpoint(dir: &Path, target: &Path, json: bool, out: &mut dyn Write) -> CliResult {
    let in_bucket = super::bucket_url::bucket_of(dir).is_some()
        || dir.to_str().is_some_and(|d| d.starts_with("s3://"));
    if !in_bucket {
        check_store(dir)?;
    }
    if super::bucket_url::bucket_of(target).is_some() {
        return checkpoint_into_bucket(dir, target, json, out);
    }
    if target.exists() {
        return Err(CliError::usage(format!(
            "{} exists; a checkpoint makes a new directory",
            target.display()
        )));
    }
    let parent = target
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    if !parent.is_dir() {
        return Err(CliError::usage(format!(
            "{}: the directory {} does not exist",
            target.display(),
            parent.display()
        )));
    }
    // A checkpoint is a store of its own: nested in the live store's
    // directory it would be removed with that directory, and the store's
    // directory would hold files that are not the store's. Compared as
    // real paths, so that `..` and symbolic links cannot hide the nesting.
    let real = |p: &Path| {
        std::fs::canonicalize(p).map_err(|e| CliError::new(format!("{}: {e}", p.display())))
    };
    if in_bucket {
        // A copy of a store in a bucket on the local disk: its tables are
        // downloaded, and it opens as a local store.
        let db = super::store::open_read_only(dir, Options::default())?;
        let r = db.checkpoint(target)?;
        return report_checkpoint(dir, target, &r, json, out);
    }
    if real(parent)?.starts_with(real(dir)?) {
        return Err(CliError::usage(format!(
            "{} is inside the store {}; a checkpoint goes outside the store's directory",
            target.display(),
            dir.display()
        )));
    }
    let db = open_to_copy(dir)?;
    let r = db.checkpoint(target)?;
    db.close()?;
    report_checkpoint(dir, target, &r, json, out)
}

/// Opens the local store `dir` to copy it: for writing, or beside a writer
/// in another process (the store is locked) read-only, the copy then made
/// from its files. Warns of write-ahead log damage the open dropped.
fn open_to_copy(dir: &Path) -> CliResult<Db> {
    let opts = Options::default().create_if_missing(false);
    let (db, writable) = match Db::open(dir, opts.clone()) {
        Ok(db) => (db, true),
        Err(bloomlsm::Error::Locked(_)) => (Db::open_read_only(dir, opts)?, false),
        Err(e) => return Err(e.into()),
    };
    warn_wal_damage(dir, &db.stats(), writable);
    Ok(db)
}

/// `db checkpoint DIR s3://BUCKET/PREFIX`: the local store copied into
/// the bucket as a store kept wholly there (its tables uploaded).
fn checkpoint_into_bucket(dir: &Path, target: &Path, json: bool, out: &mut dyn Write) -> CliResult {
    if super::bucket_url::bucket_of(dir).is_some() {
        let linked = super::bucket_url::clone_checkpoint(dir, target)?;
        if json {
            return write_json(
                out,
                &json!({
                    "store": dir.display().to_string(),
                    "clone": target.display().to_string(),
                    "tables_linked": linked,
                }),
            );
        }
        writeln!(
            out,
            "clone of {} in {}: {} tables linked, none copied (keep the checkpoint while the \
             clone names them)",
            dir.display(),
            target.display(),
            count(linked as u64)
        )?;
        return Ok(());
    }
    let (fs, local) = super::bucket_url::whole_store_destination(target)?;
    let db = open_to_copy(dir)?;
    let r = db.checkpoint_into(fs, &local)?;
    db.close()?;
    report_checkpoint(dir, target, &r, json, out)
}

/// `db checkpoint`'s report of the checkpoint `r` of `dir` in `target`.
fn report_checkpoint(
    dir: &Path,
    target: &Path,
    r: &bloomlsm::CheckpointReport,
    json: bool,
    out: &mut dyn Write,
) -> CliResult {
    if json {
        return write_json(
            out,
            &json!({
                "store": dir.display().to_string(),
                "checkpoint": target.display().to_string(),
                "tables": r.tables,
                "linked": r.linked,
                "copied": r.copied,
                "bytes": r.bytes,
                "bytes_copied": r.bytes_copied,
                "logs": r.logs,
                "sequence": r.sequence,
            }),
        );
    }
    let why = if super::bucket_url::bucket_of(target).is_some() {
        "uploaded"
    } else {
        "hard links refused"
    };
    let copied = if r.copied > 0 {
        format!(
            ", {} copied ({}; {why})",
            count(r.copied as u64),
            bytes(r.bytes_copied)
        )
    } else {
        String::new()
    };
    writeln!(
        out,
        "checkpoint of {} in {}: {} tables, {}: {} linked{copied}; up to sequence {}",
        dir.display(),
        target.display(),
        count(r.tables as u64),
        bytes(r.bytes),
        count(r.linked as u64),
        r.sequence
    )?;
    Ok(())
}

/// `db checkpoint s3://… --name NAME`: keeps a checkpoint of the store in
/// the bucket beside it, made through a read-only handle (the store's
/// writer goes on).
pub(super) fn keep_checkpoint(
    dir: &Path,
    name: &str,
    json: bool,
    out: &mut dyn Write,
) -> CliResult {
    require_bucket(dir, "--name")?;
    let db = super::store::open_read_only(dir, Options::default())?;
    let r = db.checkpoint_in_bucket(name)?;
    if json {
        return write_json(
            out,
            &json!({
                "store": dir.display().to_string(),
                "name": name,
                "tables": r.tables,
                "bytes": r.bytes,
                "logs": r.logs,
                "sequence": r.sequence,
            }),
        );
    }
    writeln!(
        out,
        "kept checkpoint {name} beside {}: {} tables, {}, named, none copied; up to sequence {}",
        dir.display(),
        count(r.tables as u64),
        bytes(r.bytes),
        r.sequence
    )?;
    Ok(())
}

/// `db checkpoints s3://… [--delete NAME]`.
pub(super) fn checkpoints(
    dir: &Path,
    delete: Option<&str>,
    json: bool,
    out: &mut dyn Write,
) -> CliResult {
    require_bucket(dir, "db checkpoints")?;
    let db = super::store::open_read_only(dir, Options::default())?;
    if let Some(name) = delete {
        db.delete_bucket_checkpoint(name)?;
    }
    for c in db.bucket_checkpoints()? {
        if json {
            write_json(
                out,
                &json!({
                    "name": c.name,
                    "sequence": c.sequence,
                    "tables": c.tables,
                    "created_unix_ms": c.created_unix_ms,
                }),
            )?;
        } else {
            writeln!(
                out,
                "{}  sequence {}  {} tables  made {}",
                c.name,
                c.sequence,
                count(c.tables as u64),
                crate::report::utc_date(c.created_unix_ms / 1000, false)
            )?;
        }
    }
    Ok(())
}

/// Refuses `what` for a store that is not in a bucket (a usage error).
fn require_bucket(dir: &Path, what: &str) -> CliResult {
    if super::bucket_url::bucket_of(dir).is_none() {
        return Err(CliError::usage(format!(
            "{what}: {} is not s3://BUCKET/PREFIX; only a store in a bucket keeps checkpoints \
             beside it (db checkpoint DIR TARGET copies a local store)",
            dir.display()
        )));
    }
    Ok(())
}
