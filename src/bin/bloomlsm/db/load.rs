//! `db load`: `key<TAB>value` lines loaded all or nothing, the whole input
//! checked before the store is opened and then ingested as one load.

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::PathBuf;
use std::time::Instant;

use clap::Args;

use super::records::check_record;
use super::store::{KeyspaceArg, open};
use crate::design::DesignArgs;
use crate::escape::Codec;
use crate::open_files::OpenFilesArg;
use crate::report::{bytes, count, sig3};
use crate::{CliError, CliResult, progress};

/// Arguments of `db load`.
#[derive(Debug, Args)]
pub struct LoadArgs {
    /// The store's directory (created if missing).
    pub dir: PathBuf,
    /// Input file, or `-` for stdin.
    pub file: PathBuf,
    /// Keys and values in the input are hex.
    #[arg(long)]
    pub hex: bool,
    /// No progress display.
    #[arg(long, short)]
    pub quiet: bool,
    /// Make a new store even in a directory that is not empty (a missing or
    /// empty one needs no flag).
    #[arg(long)]
    pub create: bool,
    #[command(flatten)]
    pub keyspace: KeyspaceArg,
    #[command(flatten)]
    pub design: DesignArgs,
}

/// Splits an input line of `db load` into key and value (`key<TAB>value`,
/// or a bare key with an empty value) and checks them against the store's
/// limits.
pub fn parse_load_line(codec: Codec, line: &str) -> Result<(Vec<u8>, Vec<u8>), String> {
    let (k, v) = line.split_once('\t').unwrap_or((line, ""));
    let key = codec.decode(k).map_err(|e| format!("key: {e}"))?;
    let value = codec.decode(v).map_err(|e| format!("value: {e}"))?;
    check_record(&key, &value)?;
    Ok((key, value))
}

/// What one pass over `db load` input found.
#[derive(Debug, Default)]
struct LoadPass {
    /// Good records.
    records: u64,
    /// Bytes of their keys and values.
    payload: u64,
    /// Lines that failed to parse.
    bad_lines: u64,
    /// The first of them, as `name:line: what`.
    first_bad: Option<String>,
}

/// Reads `db load` input, calling `f` on every good record; bad lines are
/// counted and the first one kept (reading goes on to count them all).
fn load_pass(
    input: impl BufRead,
    name: &str,
    codec: Codec,
    mut f: impl FnMut(&[u8], &[u8]) -> CliResult,
) -> CliResult<LoadPass> {
    let mut pass = LoadPass::default();
    for (i, line) in input.split(b'\n').enumerate() {
        let line = line.map_err(|e| CliError::new(format!("read {name}: {e}")))?;
        let line = line.strip_suffix(b"\r").unwrap_or(&line);
        if line.is_empty() {
            continue;
        }
        let parsed = std::str::from_utf8(line)
            .map_err(|_| "not UTF-8 (write other bytes as \\xNN)".to_string())
            .and_then(|text| parse_load_line(codec, text));
        match parsed {
            Ok((k, v)) => {
                pass.records += 1;
                pass.payload += (k.len() + v.len()) as u64;
                f(&k, &v)?;
            }
            Err(e) => {
                pass.bad_lines += 1;
                pass.first_bad
                    .get_or_insert_with(|| format!("{name}:{}: {e}", i + 1));
            }
        }
    }
    Ok(pass)
}

pub(super) fn load(a: &LoadArgs, files: &OpenFilesArg, out: &mut dyn Write) -> CliResult {
    a.keyspace.check_design(&a.design)?;
    // A mistyped keyspace fails before the input is read.
    a.keyspace.check_exists(&a.dir)?;
    let codec = Codec::new(a.hex);
    let stdin = a.file.as_os_str() == "-";
    let name = if stdin {
        "<stdin>".to_string()
    } else {
        a.file.display().to_string()
    };
    // All or nothing: the whole input is checked before the store is opened.
    // Stdin can be read once only, so it is kept in memory for the second pass.
    let stdin_bytes = if stdin {
        let mut v = Vec::new();
        std::io::stdin()
            .lock()
            .read_to_end(&mut v)
            .map_err(|e| CliError::new(format!("read {name}: {e}")))?;
        v
    } else {
        Vec::new()
    };
    let input = || -> CliResult<Box<dyn BufRead + '_>> {
        if stdin {
            return Ok(Box::new(&stdin_bytes[..]));
        }
        let f = File::open(&a.file).map_err(|e| CliError::new(format!("{name}: {e}")))?;
        Ok(Box::new(BufReader::with_capacity(1 << 16, f)))
    };
    let check = load_pass(input()?, &name, codec, |_, _| Ok(()))?;
    if let Some(first) = check.first_bad {
        let more = match check.bad_lines {
            1 => String::new(),
            n => format!("{} bad lines in all, ", count(n)),
        };
        return Err(CliError::data(format!(
            "{first}; {more}nothing was written"
        )));
    }

    let db = open(&a.dir, a.keyspace.new_store(a.create), &a.design, files)?;
    let ks = a.keyspace.of(&db)?;
    let pb = progress(Some(check.records), a.quiet, format!("loading {name}"));
    let start = Instant::now();
    // The second pass feeds `Keyspace::ingest`, which installs the whole load with
    // one MANIFEST edit, or nothing: a line that no longer parses (the file
    // changed since the check) or a read error fails the load before that.
    let mut done = LoadPass::default();
    let mut changed: Option<String> = None;
    let records = input()?.split(b'\n').enumerate().filter_map(|(i, line)| {
        let line = match line {
            Ok(line) => line,
            Err(e) => return Some(Err(bloomlsm::Error::io(format!("read {name}"), e))),
        };
        let line = line.strip_suffix(b"\r").unwrap_or(&line);
        if line.is_empty() {
            return None;
        }
        let parsed = std::str::from_utf8(line)
            .map_err(|_| "not UTF-8 (write other bytes as \\xNN)".to_string())
            .and_then(|text| parse_load_line(codec, text));
        Some(match parsed {
            Ok((k, v)) => {
                done.records += 1;
                done.payload += (k.len() + v.len()) as u64;
                pb.set_position(done.records);
                Ok((k, v))
            }
            Err(e) => {
                let what = format!("{name}:{}: {e}", i + 1);
                changed = Some(what.clone());
                Err(bloomlsm::Error::invalid(what))
            }
        })
    });
    let loaded = ks.ingest(records);
    pb.finish_and_clear();
    if let Some(first) = changed {
        return Err(CliError::data(format!(
            "{name} changed while it was loaded: {first}; nothing was written"
        )));
    }
    let report = loaded.map_err(|e| {
        let e = CliError::from(e);
        CliError {
            message: format!("{}; nothing was written", e.message),
            ..e
        }
    })?;
    db.close()?;
    debug_assert_eq!(report.records, done.records);
    let secs = start.elapsed().as_secs_f64();
    writeln!(
        out,
        "loaded {} records ({}) into {} in {:.2} s ({} records/s)",
        count(done.records),
        bytes(done.payload),
        a.dir.display(),
        secs,
        sig3(done.records as f64 / secs.max(1e-9))
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use bloomlsm::db::MAX_KEY_LEN;

    #[test]
    fn load_lines() {
        let t = Codec::Text;
        assert_eq!(
            parse_load_line(t, "k\\x00\tv v").unwrap(),
            (b"k\0".to_vec(), b"v v".to_vec())
        );
        assert_eq!(parse_load_line(t, "k").unwrap(), (b"k".to_vec(), vec![]));
        assert_eq!(
            parse_load_line(Codec::Hex, "6b00\t0x76").unwrap(),
            (b"k\0".to_vec(), b"v".to_vec())
        );
        assert!(parse_load_line(t, "\tv").is_err());
        assert!(parse_load_line(t, "k\\q\tv").is_err());
        assert!(parse_load_line(Codec::Hex, "k\tv").is_err());
        let long = "k".repeat(MAX_KEY_LEN + 1);
        let e = parse_load_line(t, &long).unwrap_err();
        assert_eq!(e, "key of 65,537 bytes is over the 65,536-byte limit");
    }

    #[test]
    fn load_pass_counts_bad_lines() {
        let input = b"a\t1\nbad\\q\n\nb\t2\r\n\tempty\n" as &[u8];
        let mut seen = Vec::new();
        let p = load_pass(input, "in.tsv", Codec::Text, |k, v| {
            seen.push((k.to_vec(), v.to_vec()));
            Ok(())
        })
        .unwrap();
        assert_eq!((p.records, p.payload, p.bad_lines), (2, 4, 2));
        assert_eq!(
            p.first_bad.as_deref(),
            Some("in.tsv:2: key: bad escape \"\\q\" at byte 3 (use \\\\ for a backslash)")
        );
        assert_eq!(seen[1], (b"b".to_vec(), b"2".to_vec()));
    }
}
