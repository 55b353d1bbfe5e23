//! The `db` commands on keys and values: `put`, `get`, `delete`,
//! `delete-range` and `scan`, and the store's limits on a key and a value
//! checked before anything is opened.

use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use bloomlsm::db::{MAX_KEY_LEN, MAX_VALUE_LEN};
use clap::Args;
use serde_json::json;

use super::store::{KeyspaceArg, NewStore, open_for_reading, open_keyspace};
use crate::design::DesignArgs;
use crate::escape::Codec;
use crate::open_files::OpenFilesArg;
use crate::report::count;
use crate::{CliError, CliResult, parse_bytes, write_json};

/// Arguments of `db put`.
#[derive(Debug, Args)]
pub struct PutArgs {
    /// The store's directory.
    pub dir: PathBuf,
    /// The key.
    pub key: String,
    /// The value, or `-` to read it from stdin (raw bytes).
    #[arg(required_unless_present = "value_file", conflicts_with = "value_file")]
    pub value: Option<String>,
    /// Read the value from this file (raw bytes) instead.
    #[arg(long, value_name = "FILE")]
    pub value_file: Option<PathBuf>,
    /// The key and value are hex (a value from stdin or a file is always raw).
    #[arg(long)]
    pub hex: bool,
    /// Make a new store even in a directory that is not empty (a missing or
    /// empty one needs no flag).
    #[arg(long)]
    pub create: bool,
    #[command(flatten)]
    pub keyspace: KeyspaceArg,
    #[command(flatten)]
    pub design: DesignArgs,
}

/// Arguments of `db get`.
#[derive(Debug, Args)]
pub struct GetArgs {
    /// The store's directory, or s3://BUCKET/PREFIX for a store kept wholly in
    /// a bucket (endpoint and credentials from the AWS_* environment).
    pub dir: PathBuf,
    /// The key.
    pub key: String,
    /// Write the value's raw bytes, without escaping or a newline.
    #[arg(long, conflicts_with = "json")]
    pub raw: bool,
    /// The key is hex, and the value printed as hex.
    #[arg(long)]
    pub hex: bool,
    /// Print one JSON object (fields below).
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub keyspace: KeyspaceArg,
}

/// Arguments of `db scan`.
#[derive(Debug, Args)]
pub struct ScanArgs {
    /// The store's directory, or s3://BUCKET/PREFIX for a store kept wholly in
    /// a bucket (endpoint and credentials from the AWS_* environment).
    pub dir: PathBuf,
    /// First key (inclusive).
    #[arg(long)]
    pub from: Option<String>,
    /// End key (exclusive).
    #[arg(long)]
    pub to: Option<String>,
    /// Only the keys that start with this prefix.
    #[arg(long, conflicts_with_all = ["from", "to"])]
    pub prefix: Option<String>,
    /// Last key first (with --limit: the last N keys).
    #[arg(long)]
    pub reverse: bool,
    /// Print at most this many entries.
    #[arg(long, value_name = "N")]
    pub limit: Option<u64>,
    /// Print keys only.
    #[arg(long)]
    pub keys_only: bool,
    /// Keys and values (and --from, --to) are hex.
    #[arg(long)]
    pub hex: bool,
    /// Print one JSON object per entry per line (fields below).
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub keyspace: KeyspaceArg,
}

pub(super) fn put(a: &PutArgs, files: &OpenFilesArg) -> CliResult {
    let codec = Codec::new(a.hex);
    let key = parse_bytes(codec, "key", &a.key)?;
    let value = match (&a.value_file, a.value.as_deref()) {
        (Some(f), _) => {
            let name = f.display().to_string();
            let file = File::open(f).map_err(|e| CliError::new(format!("{name}: {e}")))?;
            read_value(file, &name)?
        }
        (None, Some("-")) => read_value(std::io::stdin().lock(), "stdin")?,
        (None, Some(v)) => parse_bytes(codec, "value", v)?,
        (None, None) => return Err(CliError::usage("a value, - or --value-file is needed")),
    };
    check_record(&key, &value).map_err(|what| CliError::from(bloomlsm::Error::invalid(what)))?;
    let new = a.keyspace.new_store(a.create);
    let (db, ks) = open_keyspace(&a.dir, &a.keyspace, &a.design, new, files)?;
    ks.put(key, value)?;
    Ok(db.close()?)
}

pub(super) fn get(a: &GetArgs, files: &OpenFilesArg, out: &mut dyn Write) -> CliResult {
    let codec = Codec::new(a.hex);
    let k = parse_bytes(codec, "key", &a.key)?;
    check_key(&k)?;
    let db = open_for_reading(&a.dir, files)?;
    let v = a.keyspace.of(&db)?.get(&k)?;
    if a.json {
        write_json(
            out,
            &json!({
                "key": codec.encode(&k),
                "found": v.is_some(),
                "value": v.as_deref().map(|v| codec.encode(v)),
            }),
        )?;
    }
    match v {
        Some(v) if a.raw => out.write_all(&v)?,
        Some(v) if !a.json => writeln!(out, "{}", codec.encode(&v))?,
        Some(_) => {}
        None => {
            return Err(CliError::negative(format!(
                "key not found: {}",
                codec.encode(&k)
            )));
        }
    }
    Ok(db.close()?)
}

/// `db delete`: removes a key of an existing store.
pub(super) fn delete(
    dir: &Path,
    key: &str,
    hex: bool,
    keyspace: &KeyspaceArg,
    design: &DesignArgs,
    files: &OpenFilesArg,
) -> CliResult {
    let k = parse_bytes(Codec::new(hex), "key", key)?;
    check_key(&k)?;
    let (db, ks) = open_keyspace(dir, keyspace, design, NewStore::Refuse, files)?;
    ks.delete(k)?;
    Ok(db.close()?)
}

/// `db delete-range`: removes the keys in `[start, end)` of an existing
/// store with one range tombstone.
pub(super) fn delete_range(
    dir: &Path,
    (start, end): (&str, &str),
    hex: bool,
    keyspace: &KeyspaceArg,
    design: &DesignArgs,
    files: &OpenFilesArg,
) -> CliResult {
    let s = parse_bytes(Codec::new(hex), "start", start)?;
    let e = parse_bytes(Codec::new(hex), "end", end)?;
    check_key(&s)?;
    check_key(&e)?;
    if s >= e {
        return Err(CliError::usage(format!(
            "empty range: START {start:?} is not below END {end:?}"
        )));
    }
    let (db, ks) = open_keyspace(dir, keyspace, design, NewStore::Refuse, files)?;
    ks.delete_range(s, e)?;
    Ok(db.close()?)
}

pub(super) fn scan(a: &ScanArgs, files: &OpenFilesArg, out: &mut dyn Write) -> CliResult {
    use std::ops::Bound;
    let codec = Codec::new(a.hex);
    let bound = |flag: &str, k: &Option<String>| {
        k.as_deref()
            .map(|k| parse_bytes(codec, flag, k))
            .transpose()
    };
    let (from, to) = (bound("--from", &a.from)?, bound("--to", &a.to)?);
    // A bound is a key: an empty one is refused as `db get` refuses it. (An
    // empty --prefix is every key.)
    for (flag, k) in [("--from", &from), ("--to", &to)] {
        if let Some(k) = k {
            check_key(k).map_err(|e| CliError {
                message: format!("{} in {flag}", e.message),
                ..e
            })?;
        }
    }
    let prefix = bound("--prefix", &a.prefix)?;
    let db = open_for_reading(&a.dir, files)?;
    let ks = a.keyspace.of(&db)?;
    let lo = from.as_deref().map_or(Bound::Unbounded, Bound::Included);
    let hi = to.as_deref().map_or(Bound::Unbounded, Bound::Excluded);
    let it = match &prefix {
        Some(p) => ks.scan_prefix(p),
        None => ks.scan((lo, hi)),
    };
    let it: Box<dyn Iterator<Item = bloomlsm::Result<_>>> = if a.reverse {
        Box::new(it.rev())
    } else {
        Box::new(it)
    };
    let limit = a.limit.unwrap_or(u64::MAX);
    let mut out = std::io::BufWriter::new(out);
    for (n, e) in it.enumerate() {
        if n as u64 >= limit {
            break;
        }
        let (k, v) = e?;
        match (a.json, a.keys_only) {
            (true, true) => write_json(&mut out, &json!({ "key": codec.encode(&k) }))?,
            (true, false) => write_json(
                &mut out,
                &json!({ "key": codec.encode(&k), "value": codec.encode(&v) }),
            )?,
            (false, true) => writeln!(out, "{}", codec.encode(&k))?,
            (false, false) => writeln!(out, "{}\t{}", codec.encode(&k), codec.encode(&v))?,
        }
    }
    out.flush()?;
    Ok(())
}

/// Refuses a key the store cannot hold, before the store is opened, in the
/// library's words (`invalid argument: empty key`) and with its exit status
/// ([`crate::EXIT_DATA`]).
pub(super) fn check_key(key: &[u8]) -> CliResult {
    check_record(key, b"").map_err(|what| bloomlsm::Error::invalid(what).into())
}

/// Checks a record against the store's limits before anything is written:
/// a non-empty key of at most [`MAX_KEY_LEN`] bytes, a value of at most
/// [`MAX_VALUE_LEN`]. An empty key is `empty key`, the library's words.
pub fn check_record(key: &[u8], value: &[u8]) -> Result<(), String> {
    if key.is_empty() {
        return Err(EMPTY_KEY.into());
    }
    let over = |what: &str, n: usize, max: usize| {
        format!(
            "{what} of {} bytes is over the {}-byte limit",
            count(n as u64),
            count(max as u64)
        )
    };
    if key.len() > MAX_KEY_LEN {
        return Err(over("key", key.len(), MAX_KEY_LEN));
    }
    if value.len() > MAX_VALUE_LEN {
        return Err(over("value", value.len(), MAX_VALUE_LEN));
    }
    Ok(())
}

/// What the library says of an empty key ([`bloomlsm::Error::InvalidArgument`]).
const EMPTY_KEY: &str = "empty key";

/// Reads a value byte for byte from `r` (named `name` in errors), refusing
/// one over [`MAX_VALUE_LEN`] without reading all of it.
fn read_value(r: impl Read, name: &str) -> CliResult<Vec<u8>> {
    let mut v = Vec::new();
    r.take(MAX_VALUE_LEN as u64 + 1)
        .read_to_end(&mut v)
        .map_err(|e| CliError::new(format!("read {name}: {e}")))?;
    if v.len() > MAX_VALUE_LEN {
        return Err(CliError::data(format!(
            "value from {name} is over the {}-byte limit",
            count(MAX_VALUE_LEN as u64)
        )));
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bloomlsm::{Db, Options};

    #[test]
    fn key_refusals_are_the_librarys_words() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path(), Options::default()).unwrap();
        let lib = db.get(b"").unwrap_err().to_string();
        assert_eq!(db.put(b"", b"v").unwrap_err().to_string(), lib);
        db.close().unwrap();
        let e = check_key(b"").unwrap_err();
        assert_eq!((e.message, e.code), (lib, crate::EXIT_DATA));
        assert!(check_key(b"k").is_ok());
    }
}
