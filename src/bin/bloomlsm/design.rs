//! The design flags (filters, compression) of the writing `db` commands. Without any, a store
//! keeps the design it records in its `OPTIONS` file; with some, those parts
//! of the recorded design change (and the store logs the change).

use std::path::Path;

use bloomlsm::db::options_file;
use bloomlsm::filter::{
    FilterPolicy, MAX_BITS_PER_KEY, MIN_BITS_PER_KEY, filter_spec, parse_filter_spec,
    unregistered_family,
};
use bloomlsm::{Compression, CompressionOptions, FilterOptions, Options};
use clap::Args;

use crate::{CliError, CliResult};

/// How new files are filtered. Each flag changes only its part of the
/// store's recorded design; without flags the recorded design is kept.
#[derive(Debug, Default, Args)]
pub struct DesignArgs {
    /// The filter of every level: `blocked512:10`, `bloom:12.5`, `KIND:BITS:K`
    /// (K probes), `fpr:0.01` (blocked512 sized for an FPR), `KIND:fpr:F`, or
    /// `none`.
    #[arg(long, value_name = "SPEC", value_parser = parse_spec)]
    pub filter: Option<Spec>,
    /// The filter of one level, as `LEVEL=SPEC` (e.g. `0=bloom:8`,
    /// `6=none`); repeatable, replaces that level's recorded filter.
    #[arg(long = "level-filter", value_name = "LEVEL=SPEC", value_parser = parse_level_spec)]
    pub level_filter: Vec<(usize, Spec)>,
    /// The Monkey allocation: BITS bits/key on average over the store, more
    /// for smaller levels (of the filter's kind; blocked512 if none).
    #[arg(long, value_name = "BITS", value_parser = parse_bits)]
    pub monkey: Option<f64>,
    /// No filter on the last level (the largest; it answers most lookups of
    /// keys that exist anyway).
    #[arg(long)]
    pub no_last_level_filter: bool,
    /// Split each new file's filter into partitions of about BYTES (64 B to
    /// 16 MiB; 0: one block), so a store opened with a filter memory budget
    /// reads one partition per probe of a filter it does not hold.
    #[arg(long, value_name = "BYTES", value_parser = parse_partition_bytes)]
    pub filter_partition_bytes: Option<usize>,
    #[command(flatten)]
    pub compression: CompressionArgs,
}

fn parse_partition_bytes(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(0) => Ok(0),
        Ok(b) if (64..=1 << 24).contains(&b) => Ok(b),
        _ => Err(format!("{s:?}: expected 0 or 64..=16777216 bytes")),
    }
}

/// The compression flags, shared by the writing `db` commands and `bench`.
#[derive(Clone, Debug, Default, Args)]
pub struct CompressionArgs {
    /// Data-block compression of every level: `none`, `lz4`, `zstd` (level 3)
    /// or `zstd:LEVEL` (1-22). Files keep the compression they were written
    /// with; new default stores use lz4 below L0, none on L0.
    #[arg(long, value_name = "SPEC", value_parser = Compression::parse)]
    pub compression: Option<Compression>,
    /// The compression of one level, as `LEVEL=SPEC` (e.g. `0=none`,
    /// `3=zstd:9`); repeatable, replaces that level's recorded compression.
    #[arg(long = "level-compression", value_name = "LEVEL=SPEC", value_parser = parse_level_compression)]
    pub level_compression: Vec<(usize, Compression)>,
}

impl CompressionArgs {
    /// Whether any flag was given.
    pub fn any(&self) -> bool {
        self.compression.is_some() || !self.level_compression.is_empty()
    }

    /// Applies the flags to `c` (a store with `max_levels` levels); a usage
    /// error for a level the store lacks or a codec this build lacks.
    pub fn apply(&self, c: &mut CompressionOptions, max_levels: usize) -> CliResult {
        if let Some(x) = self.compression {
            c.default = x;
            // `--compression` alone means every level.
            if self.level_compression.is_empty() {
                c.per_level.clear();
            }
        }
        for (level, x) in &self.level_compression {
            if *level >= max_levels {
                return Err(CliError::usage(format!(
                    "--level-compression {level}=…: the store has levels 0..{}",
                    max_levels - 1
                )));
            }
            c.per_level.retain(|(l, _)| l != level);
            c.per_level.push((*level, *x));
        }
        if let Some(x) = c.all().find(|x| !x.is_available()) {
            return Err(CliError::usage(format!(
                "--compression {x}: this build of bloomlsm has no zstd (feature `zstd`)"
            )));
        }
        Ok(())
    }
}

fn parse_level_compression(s: &str) -> Result<(usize, Compression), String> {
    let (level, spec) = s
        .split_once('=')
        .ok_or_else(|| format!("{s:?}: want LEVEL=SPEC, e.g. 0=none or 3=zstd:9"))?;
    let level: usize = level
        .parse()
        .ok()
        .filter(|l| *l < 32)
        .ok_or_else(|| format!("{s:?}: the level must be a number below 32"))?;
    Ok((level, Compression::parse(spec)?))
}

/// A parsed filter spec (`None`: no filter).
#[derive(Clone, Debug, PartialEq)]
pub struct Spec(pub Option<FilterPolicy>);

fn parse_spec(s: &str) -> Result<Spec, String> {
    cli_filter_spec(s).map(Spec)
}

/// Parses a filter spec of the command line: [`parse_filter_spec`], whose
/// error for a family this process does not know also says that this
/// command knows the built-in families only (a family registered with
/// `bloomlsm::register_filter` is known to the program that registers it).
pub fn cli_filter_spec(s: &str) -> Result<Option<FilterPolicy>, String> {
    parse_filter_spec(s).map_err(|e| match unregistered_family(s) {
        Some(_) => format!(
            "{e}; a family registered with bloomlsm::register_filter is known only to the \
             program that registers it"
        ),
        None => e,
    })
}

fn parse_level_spec(s: &str) -> Result<(usize, Spec), String> {
    let (level, spec) = s
        .split_once('=')
        .ok_or_else(|| format!("{s:?}: want LEVEL=SPEC, e.g. 0=bloom:8"))?;
    let level: usize = level
        .parse()
        .ok()
        .filter(|l| *l < 32)
        .ok_or_else(|| format!("{s:?}: the level must be a number below 32"))?;
    Ok((level, parse_spec(spec)?))
}

fn parse_bits(s: &str) -> Result<f64, String> {
    s.parse::<f64>()
        .ok()
        .filter(|b| (MIN_BITS_PER_KEY..=MAX_BITS_PER_KEY).contains(b))
        .ok_or_else(|| {
            format!(
                "{s:?}: bits per key must be a number in {MIN_BITS_PER_KEY}..={MAX_BITS_PER_KEY}"
            )
        })
}

impl DesignArgs {
    /// Whether any flag was given.
    pub fn any(&self) -> bool {
        self.filter.is_some()
            || !self.level_filter.is_empty()
            || self.monkey.is_some()
            || self.no_last_level_filter
            || self.compression.any()
            || self.filter_partition_bytes.is_some()
    }

    /// Sets `opts` up for the store in `dir`: unchanged (the store's recorded
    /// design will be used) without flags; otherwise the recorded design (the
    /// defaults for a new store) with the flags' changes, replacing it.
    pub fn apply(&self, dir: &Path, opts: &mut Options) -> CliResult {
        if !self.any() {
            return Ok(());
        }
        if let Some(file) = options_file::read(opts.fs.as_ref(), dir)? {
            file.design.apply(opts);
        }
        self.apply_flags(opts)
    }

    /// Changes the design of `opts` as the flags say.
    pub fn apply_flags(&self, opts: &mut Options) -> CliResult {
        let f: &mut FilterOptions = &mut opts.filters;
        if let Some(Spec(p)) = &self.filter {
            f.policy = *p;
        }
        for (level, Spec(p)) in &self.level_filter {
            f.per_level.retain(|(l, _)| l != level);
            f.per_level.push((*level, *p));
        }
        if let Some(bits) = self.monkey {
            f.monkey_avg_bits_per_key = Some(bits);
        }
        if self.no_last_level_filter {
            f.skip_last_level = true;
        }
        if let Some((level, _)) = f.per_level.iter().find(|(l, _)| *l >= opts.max_levels) {
            return Err(CliError::usage(format!(
                "--level-filter {level}=…: the store has levels 0..{}",
                opts.max_levels - 1
            )));
        }
        self.compression
            .apply(&mut opts.compression, opts.max_levels)?;
        if let Some(b) = self.filter_partition_bytes {
            opts.filter_partition_bytes = b;
        }
        opts.use_stored_design = false;
        Ok(())
    }
}

/// One line describing a filter design, for reports.
pub fn describe(f: &FilterOptions) -> String {
    let mut s = format!("filter {}", filter_spec(f.policy.as_ref()));
    for (level, p) in &f.per_level {
        s.push_str(&format!(", L{level} {}", filter_spec(p.as_ref())));
    }
    if let Some(b) = f.monkey_avg_bits_per_key {
        s.push_str(&format!(", Monkey at {b} bits/key on average"));
    }
    if f.skip_last_level {
        s.push_str(", none on the last level");
    }
    s
}

/// One line describing a compression design, e.g. `compression lz4, L0 none`.
pub fn describe_compression(c: &CompressionOptions) -> String {
    let mut s = format!("compression {}", c.default);
    for (level, x) in &c.per_level {
        s.push_str(&format!(", L{level} {x}"));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn level_specs_and_bits_parse_or_explain() {
        assert_eq!(
            parse_level_spec("2=bloom:8").unwrap(),
            (2, Spec(Some(FilterPolicy::bloom(8.0))))
        );
        assert_eq!(parse_level_spec("6=none").unwrap(), (6, Spec(None)));
        for bad in ["2", "x=bloom:8", "40=none", "2=bogus:1", "=none"] {
            assert!(parse_level_spec(bad).is_err(), "{bad}");
        }
        assert_eq!(parse_bits("7.5").unwrap(), 7.5);
        for bad in ["0", "-1", "nan", "1000", "x"] {
            assert!(parse_bits(bad).is_err(), "{bad}");
        }
        assert_eq!(
            parse_level_compression("3=zstd:9").unwrap(),
            (3, Compression::Zstd(9))
        );
        for bad in ["3", "x=lz4", "40=lz4", "2=gzip", "2=zstd:0", "=none"] {
            assert!(parse_level_compression(bad).is_err(), "{bad}");
        }
        assert_eq!(parse_partition_bytes("4096"), Ok(4096));
        assert_eq!(parse_partition_bytes("0"), Ok(0));
        for bad in ["1", "63", "16777217", "-1", "4k"] {
            assert!(parse_partition_bytes(bad).is_err(), "{bad}");
        }
    }
}
