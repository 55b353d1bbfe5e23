//! The filter-design flags of the writing `db` commands. Without any, a store
//! keeps the design it records in its `OPTIONS` file; with some, those parts
//! of the recorded design change (and the store logs the change).

use std::path::Path;

use bloomlsm::db::options_file;
use bloomlsm::filter::{
    FilterPolicy, MAX_BITS_PER_KEY, MIN_BITS_PER_KEY, filter_spec, parse_filter_spec,
};
use bloomlsm::{FilterOptions, Options};
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
}

/// A parsed filter spec (`None`: no filter).
#[derive(Clone, Debug, PartialEq)]
pub struct Spec(pub Option<FilterPolicy>);

fn parse_spec(s: &str) -> Result<Spec, String> {
    parse_filter_spec(s).map(Spec)
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
    }
}
