//! The study's timed read phases: the three of a configuration's store
//! ([`PHASES`](super::row::PHASES)), each from zeroed counters
//! ([`measure`]), and the gets the bucket's phases make, existing keys drawn
//! uniformly or from a [`Zipf`] distribution.

use bloomlsm::{Db, Stats};

use crate::phase::{Phase, Recorder};
use crate::workload::{SplitMix64, absent_key, present_key};
use crate::{CliError, CliResult, progress};

use super::args::BenchArgs;
use super::configs::BenchConfig;

/// A Zipf(s) sampler over `0..n` by inverse CDF (rank 0 is the hottest).
#[derive(Clone, Debug)]
pub struct Zipf {
    cdf: Vec<f64>,
}

impl Zipf {
    /// The distribution `P(i) ∝ 1 / (i + 1)^s` over `0..n` (`n ≥ 1`, `s ≥ 0`).
    pub fn new(n: u64, s: f64) -> Self {
        let mut cdf = Vec::with_capacity(n as usize);
        let mut acc = 0.0;
        for i in 0..n {
            acc += ((i + 1) as f64).powf(-s);
            cdf.push(acc);
        }
        for c in &mut cdf {
            *c /= acc;
        }
        Zipf { cdf }
    }

    /// One draw.
    pub fn sample(&self, rng: &mut SplitMix64) -> u64 {
        let u = rng.unit();
        (self.cdf.partition_point(|&c| c <= u) as u64).min(self.cdf.len() as u64 - 1)
    }
}

/// Runs the missing-key, multi_get and existing-key phases on a loaded
/// store, each from zeroed counters.
pub fn measure(
    args: &BenchArgs,
    config: &BenchConfig,
    db: &Db,
    zipf: Option<&Zipf>,
) -> CliResult<Measured> {
    let (missing, missing_phase) = missing_gets(args, &config.name, db, args.lookups)?;
    let multi_phase = multi_get_missing(args, config, db)?;
    let (existing, existing_phase) = existing_gets(args, &config.name, db, zipf, args.lookups)?;
    Ok(Measured {
        missing,
        existing,
        phases: [missing_phase, multi_phase, existing_phase],
    })
}

/// Gets timed between two updates of a phase's progress bar.
const STEP: u64 = 4096;

/// The error of a phase that found a key of the absent family.
fn absent_found() -> CliError {
    CliError::new("an absent-family key was found in the store")
}

/// The missing-key phase: `n` gets of absent keys, one at a time (the
/// progress bar labelled `name`).
pub fn missing_gets(args: &BenchArgs, name: &str, db: &Db, n: u64) -> CliResult<(Stats, Phase)> {
    db.reset_stats();
    let pb = progress(Some(n), args.quiet, format!("{name}: missing gets"));
    let mut rec = Recorder::start();
    let mut i = 0;
    while i < n {
        let end = (i + STEP).min(n);
        for j in i..end {
            let key = absent_key(args.seed, j);
            if rec.time(1, || db.get(key))?.is_some() {
                return Err(absent_found());
            }
        }
        pb.inc(end - i);
        i = end;
    }
    let missing = db.stats();
    let phase = rec.finish(n, missing.total.bytes_read);
    pb.finish_and_clear();
    Ok((missing, phase))
}

/// The multi_get phase: the same missing keys again, [`MULTI_GET_BATCH`] at
/// a time.
fn multi_get_missing(args: &BenchArgs, config: &BenchConfig, db: &Db) -> CliResult<Phase> {
    let n = args.lookups;
    db.reset_stats();
    let pb = progress(
        Some(n),
        args.quiet,
        format!("{}: missing keys by multi_get", config.name),
    );
    let mut batch: Vec<[u8; 16]> = Vec::with_capacity(MULTI_GET_BATCH as usize);
    let mut rec = Recorder::start();
    let mut i = 0;
    while i < n {
        let end = (i + MULTI_GET_BATCH).min(n);
        batch.clear();
        batch.extend((i..end).map(|j| absent_key(args.seed, j)));
        if rec
            .time(end - i, || db.multi_get(&batch))?
            .iter()
            .any(Option::is_some)
        {
            return Err(absent_found());
        }
        pb.inc(end - i);
        i = end;
    }
    let phase = rec.finish(n, db.stats().total.bytes_read);
    pb.finish_and_clear();
    Ok(phase)
}

/// The indexes of the inserted keys the existing-key phases look up, in
/// the same order for every phase: uniform, or from `zipf`.
struct ExistingKeys<'a> {
    rng: SplitMix64,
    keys: u64,
    zipf: Option<&'a Zipf>,
}

impl<'a> ExistingKeys<'a> {
    fn new(args: &BenchArgs, zipf: Option<&'a Zipf>) -> Self {
        ExistingKeys {
            rng: SplitMix64::new(args.seed ^ 0x6765_7473),
            keys: args.keys.max(1),
            zipf,
        }
    }

    fn next(&mut self) -> u64 {
        match self.zipf {
            Some(z) => z.sample(&mut self.rng),
            None => self.rng.below(self.keys),
        }
    }
}

/// The existing-key phase: `n` gets of inserted keys, drawn uniformly or
/// from `zipf` (the progress bar labelled `name`).
pub fn existing_gets(
    args: &BenchArgs,
    name: &str,
    db: &Db,
    zipf: Option<&Zipf>,
    n: u64,
) -> CliResult<(Stats, Phase)> {
    db.reset_stats();
    let pb = progress(Some(n), args.quiet, format!("{name}: existing gets"));
    let mut draw = ExistingKeys::new(args, zipf);
    let mut rec = Recorder::start();
    let mut i = 0;
    while i < n {
        let end = (i + STEP).min(n);
        for _ in i..end {
            let idx = draw.next();
            let key = present_key(args.seed, idx);
            if rec.time(1, || db.get(key))?.is_none() {
                return Err(CliError::new(format!("inserted key #{idx} was not found")));
            }
        }
        pb.inc(end - i);
        i = end;
    }
    let existing = db.stats();
    let phase = rec.finish(n, existing.total.bytes_read);
    pb.finish_and_clear();
    Ok((existing, phase))
}

/// `n` inserted keys, drawn as [`existing_gets`] draws them, looked up by
/// `multi_get` [`MULTI_GET_BATCH`] at a time (the progress bar labelled
/// `name`). Only `bench --store` runs it.
#[cfg(feature = "object-store")]
pub fn existing_multi_gets(
    args: &BenchArgs,
    name: &str,
    db: &Db,
    zipf: Option<&Zipf>,
    n: u64,
) -> CliResult<(Stats, Phase)> {
    db.reset_stats();
    let pb = progress(
        Some(n),
        args.quiet,
        format!("{name}: existing keys by multi_get"),
    );
    let mut draw = ExistingKeys::new(args, zipf);
    let mut batch: Vec<[u8; 16]> = Vec::with_capacity(MULTI_GET_BATCH as usize);
    let mut rec = Recorder::start();
    let mut i = 0;
    while i < n {
        let end = (i + MULTI_GET_BATCH).min(n);
        batch.clear();
        batch.extend((i..end).map(|_| present_key(args.seed, draw.next())));
        let got = rec.time(end - i, || db.multi_get(&batch))?;
        if let Some(j) = got.iter().position(Option::is_none) {
            return Err(CliError::new(format!(
                "an inserted key ({j} of a multi_get batch) was not found"
            )));
        }
        pb.inc(end - i);
        i = end;
    }
    let stats = db.stats();
    let phase = rec.finish(n, stats.total.bytes_read);
    pb.finish_and_clear();
    Ok((stats, phase))
}

/// Keys per `multi_get` call in the study's multi_get phase.
pub const MULTI_GET_BATCH: u64 = 1024;

/// What [`measure`] measured.
pub struct Measured {
    /// Counters of the missing-key phase.
    pub missing: Stats,
    /// Counters of the existing-key phase.
    pub existing: Stats,
    /// Latencies and bytes of each phase, in
    /// [`PHASES`](super::row::PHASES) order.
    pub phases: [Phase; 3],
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zipf_prefers_low_ranks() {
        let z = Zipf::new(1000, 1.0);
        let mut rng = SplitMix64::new(3);
        let draws: Vec<u64> = (0..10_000).map(|_| z.sample(&mut rng)).collect();
        assert!(draws.iter().all(|&d| d < 1000));
        let zeros = draws.iter().filter(|&&d| d == 0).count();
        // P(0) = 1 / H(1000) ≈ 0.134.
        assert!((1100..1600).contains(&zeros), "{zeros}");
    }
}
