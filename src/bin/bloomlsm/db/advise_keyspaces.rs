//! `db advise --keyspaces`: one filter memory budget across the store's
//! keyspaces ([`bloomlsm::Db::advise_keyspaces`]), and with `--apply` each
//! keyspace's share written as its design (with `--rebuild`, its filters
//! rebuilt to it now).

use std::io::Write;
use std::path::Path;

use bloomlsm::{FilterOptions, KeyspacesAdvice};
use serde_json::json;

use super::advise::{AdviseArgs, bits_line, open_with_filters};
use crate::open_files::OpenFilesArg;
use crate::report::{TextTable, bytes, count};
use crate::{CliError, CliResult, write_json};

pub(super) fn advise_keyspaces(
    a: &AdviseArgs,
    files: &OpenFilesArg,
    out: &mut dyn Write,
) -> CliResult {
    let advice = {
        let db = super::store::open_for_reading(&a.dir, files)?;
        let advice = db.advise_keyspaces().map_err(|e| match e {
            bloomlsm::Error::InvalidArgument(m) => {
                CliError::negative(format!("{}: {m}", a.dir.display()))
            }
            e => e.into(),
        })?;
        db.close()?;
        advice
    };
    let [present, _, shared] = advice.wasted_reads_per_get;
    // Applied when it saves at least 2% of the present wasted reads, as
    // the one-keyspace advice.
    let worth = shared < present * 0.98;
    let mut rebuilt = None;
    if a.apply && worth {
        let designs: Vec<(String, FilterOptions)> = advice
            .keyspaces
            .iter()
            .filter_map(|k| Some((k.name.clone(), advice.filter_options(&k.name)?)))
            .collect();
        let db = open_with_filters(&a.dir, &designs, files)?;
        if a.rebuild {
            let mut n = 0;
            for (name, _) in &designs {
                n += db.keyspace(name)?.rebuild_filters()?;
            }
            rebuilt = Some(n);
        }
        db.close()?;
    }
    let applied = a.apply && worth;
    if a.json {
        return write_json(out, &report_json(&a.dir, &advice, applied, rebuilt));
    }
    print_report(out, &a.dir, &advice)?;
    if !worth {
        writeln!(
            out,
            "recommendation: keep the present designs (sharing saves less than 2% of their wasted reads)"
        )?;
    } else if applied {
        writeln!(
            out,
            "applied: each keyspace's share is its design (OPTIONS); {}",
            match rebuilt {
                Some(n) => format!("{n} files' filters rebuilt to it"),
                None => "files follow it as they are rewritten (or with --rebuild)".into(),
            }
        )?;
    } else {
        writeln!(
            out,
            "apply it: bloomlsm db advise {} --keyspaces --apply --rebuild",
            a.dir.display()
        )?;
    }
    Ok(())
}

fn print_report(out: &mut dyn Write, dir: &Path, advice: &KeyspacesAdvice) -> CliResult {
    writeln!(
        out,
        "{}: {} gets counted in {} keyspaces, {} of filters shared",
        dir.display(),
        count(advice.gets),
        advice.keyspaces.len(),
        bytes(advice.memory_bytes)
    )?;
    let mut t = TextTable::new(&[
        "keyspace",
        "gets",
        "memory now",
        "shared",
        "bits/key by level, shared",
        "wasted reads/get: now",
        "alone",
        "shared",
    ])
    .align(4, crate::report::Align::Left);
    for k in &advice.keyspaces {
        let [now, alone, shared] = k.wasted_reads_per_get;
        t.row(vec![
            k.name.clone(),
            count(k.advice.gets),
            bytes(k.advice.designs[0].memory_bytes),
            bytes(k.shared_memory_bytes),
            bits_line(&k.advice.levels, &k.shared_bits_per_key),
            format!("{now:.4}"),
            format!("{alone:.4}"),
            format!("{shared:.4}"),
        ]);
    }
    let [now, alone, shared] = advice.wasted_reads_per_get;
    t.row(vec![
        "all".into(),
        count(advice.gets),
        bytes(advice.memory_bytes),
        bytes(advice.shared_memory_bytes),
        String::new(),
        format!("{now:.4}"),
        format!("{alone:.4}"),
        format!("{shared:.4}"),
    ]);
    write!(out, "{}", t.render())?;
    for (name, why) in &advice.left_alone {
        writeln!(out, "{name}: left as it is ({why})")?;
    }
    Ok(())
}

fn report_json(
    dir: &Path,
    advice: &KeyspacesAdvice,
    applied: bool,
    rebuilt: Option<u64>,
) -> serde_json::Value {
    json!({
        "store": dir.display().to_string(),
        "gets": advice.gets,
        "memory_bytes": advice.memory_bytes,
        "shared_memory_bytes": advice.shared_memory_bytes,
        "wasted_reads_per_get": {
            "present": advice.wasted_reads_per_get[0],
            "alone": advice.wasted_reads_per_get[1],
            "shared": advice.wasted_reads_per_get[2],
        },
        "keyspaces": advice.keyspaces.iter().map(|k| json!({
            "name": k.name,
            "gets": k.advice.gets,
            "levels": k.advice.levels,
            "level_keys": k.advice.level_keys,
            "absent_probes": k.advice.absent_probes,
            "memory_bytes": k.advice.designs[0].memory_bytes,
            "shared_memory_bytes": k.shared_memory_bytes,
            "bits_per_key": k.advice.designs[0].bits_per_key,
            "shared_bits_per_key": k.shared_bits_per_key,
            "wasted_reads_per_get": {
                "present": k.wasted_reads_per_get[0],
                "alone": k.wasted_reads_per_get[1],
                "shared": k.wasted_reads_per_get[2],
            },
        })).collect::<Vec<_>>(),
        "left_alone": advice.left_alone.iter()
            .map(|(n, why)| json!({"name": n, "why": why}))
            .collect::<Vec<_>>(),
        "applied": applied,
        "rebuilt_files": rebuilt,
    })
}
