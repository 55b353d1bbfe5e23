//! [`Db::advise`]: from the lookups the store has counted, what other
//! filter designs would have cost for the same lookups, and which to use.
//!
//! The model (docs/filters.md, "The advisor"): a get probes, level by
//! level, the files whose key range holds its key. Each probe of a file
//! that does not hold the key is a read the filter may save; the store
//! counts them per level (`filter_checks` less the positives that found
//! their key). Under a design giving level `l` `b_l` bits per key, those
//! probes cost `N_l · fpr(b_l)` wasted data-block reads, on the filter
//! family's own model; every other read (a file that holds the key, a file
//! without a usable filter) costs the same under every design. The memory
//! is `Σ keys_l · b_l`. L0 keeps its present bits (a rebuild does not
//! rewrite L0 files; the next flushes write the level's new bits), and the
//! candidates share out the memory of the levels below it: the same bits on
//! every level, Monkey's allocation, and the allocation that minimises the
//! wasted reads of the probes counted; and RocksDB's
//! `optimize_filters_for_hits` (no filter on the last level), which spends
//! less.

use crate::filter::{FilterKind, FilterPolicy, math};
use crate::options::FilterOptions;

use super::{Db, Inner, Keyspace};
use crate::error::{Error, Result};

/// One filter design, costed for the lookups the store counted.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct DesignCost {
    /// What it is: `present`, `uniform`, `monkey`, `observed`,
    /// `no-last-level`.
    pub name: String,
    /// Bits per key for each level of [`Advice::levels`] (0: no filter).
    pub bits_per_key: Vec<f64>,
    /// Filter memory, bytes.
    pub memory_bytes: u64,
    /// Predicted data-block reads per get for keys a file did not hold
    /// (the reads its filters failed to save).
    pub wasted_reads_per_get: f64,
    /// Predicted data-block reads per get in all: the wasted ones, plus
    /// the reads of files that held the key and of files with no usable
    /// filter, the same under every design.
    pub reads_per_get: f64,
}

/// What [`Db::advise`] found.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Advice {
    /// Gets counted: the store's lookup history ([`Db::lookup_history`]).
    pub gets: u64,
    /// When that history began (Unix seconds).
    pub since_unix_secs: u64,
    /// The filter family the designs use (the store's).
    pub kind: FilterKind,
    /// The levels that hold keys.
    pub levels: Vec<usize>,
    /// Each level's keys.
    pub level_keys: Vec<u64>,
    /// Each level's probes of its files by gets for keys they did not
    /// hold.
    pub absent_probes: Vec<u64>,
    /// Each level's FPR under the present design, on its files' own
    /// models.
    pub present_fprs: Vec<f64>,
    /// The present design first, then the candidates.
    pub designs: Vec<DesignCost>,
    /// The one to use: the fewest reads per get among those spending no
    /// more memory than the present design (the present one unless
    /// another saves at least 2% of its wasted reads).
    pub recommended: usize,
}

impl Advice {
    /// The filter options of design `i`: its bits on each level, the
    /// store's family.
    pub fn filter_options(&self, i: usize) -> FilterOptions {
        let d = &self.designs[i];
        self.options_for(&d.bits_per_key, d.memory_bytes)
    }

    /// The filter options giving each level of [`Advice::levels`] `bits`
    /// per key of the store's family, `memory_bytes` in all.
    pub(crate) fn options_for(&self, bits: &[f64], memory_bytes: u64) -> FilterOptions {
        let keys: u64 = self.level_keys.iter().sum();
        let avg = memory_bytes as f64 * 8.0 / keys.max(1) as f64;
        let policy = |bits: f64| {
            (bits >= crate::filter::MIN_BITS_PER_KEY).then(|| FilterPolicy::new(self.kind, bits))
        };
        FilterOptions {
            policy: policy(avg.max(crate::filter::MIN_BITS_PER_KEY)),
            per_level: self
                .levels
                .iter()
                .zip(bits)
                .map(|(&l, &b)| (l, policy(b)))
                .collect(),
            ..FilterOptions::default()
        }
    }
}

impl Db {
    /// Costs other filter designs for the gets the store has served, over
    /// its lookup history ([`Db::lookup_history`]; module docs): the present design, the same memory spent uniformly,
    /// by Monkey's allocation and by the allocation best for the probes
    /// counted, and no filter on the last level; with one recommendation.
    /// Open the store with [`Advice::filter_options`] of a design (and
    /// [`crate::Options::use_stored_design`] off) and call
    /// [`Db::rebuild_filters`] to use it.
    ///
    /// Fails when no get has been counted, or no level holds a filtered
    /// key. A read-only handle advises on the history the store's writers
    /// kept.
    pub fn advise(&self) -> Result<Advice> {
        self.inner.advise()
    }
}

impl Keyspace {
    /// [`Db::advise`] for this keyspace: its lookups, its levels, its
    /// design.
    pub fn advise(&self) -> Result<Advice> {
        self.check()?;
        self.inner.advise()
    }

    /// [`Db::lookup_history`] of this keyspace.
    pub fn lookup_history(&self) -> crate::LookupHistory {
        self.inner.lookup_history()
    }
}

impl Inner {
    fn advise(&self) -> Result<Advice> {
        let stats = self.stats();
        let history = self.lookup_history();
        if history.gets == 0 {
            return Err(Error::invalid(
                "no gets counted yet: the advisor costs designs for the lookups the store has \
                 served (its LOOKUPS file holds none)"
                    .to_string(),
            ));
        }
        let held: Vec<&crate::LevelStats> = stats.levels.iter().filter(|l| l.entries > 0).collect();
        if held.iter().all(|l| l.filtered_keys == 0) {
            return Err(Error::invalid(
                "no level holds a filtered key: nothing to advise on".to_string(),
            ));
        }
        let kind = self
            .opts
            .filters
            .policy
            .map_or(FilterKind::Blocked512, |p| p.kind());
        let gets = history.gets as f64;
        let levels: Vec<usize> = held.iter().map(|l| l.level).collect();
        let level_keys: Vec<u64> = held.iter().map(|l| l.entries).collect();
        let zero = crate::IoCounters::ZERO;
        let absent_probes: Vec<u64> = levels
            .iter()
            .map(|&l| {
                let io = history.levels.get(l).unwrap_or(&zero);
                let found = io.filter_positives.saturating_sub(io.false_positives);
                io.filter_checks.saturating_sub(found)
            })
            .collect();
        let t = history.total();
        let found_reads = t.filter_positives.saturating_sub(t.false_positives)
            + t.unfiltered_reads
            + t.unusable_filter_reads;
        let memory = stats.filter_bytes;

        let cost = |name: &str, bits: Vec<f64>, fprs: Vec<f64>, memory_bytes: u64| {
            let wasted: f64 = absent_probes
                .iter()
                .zip(&fprs)
                .map(|(&n, &f)| n as f64 * f)
                .sum::<f64>()
                / gets;
            DesignCost {
                name: name.to_string(),
                bits_per_key: bits,
                memory_bytes,
                wasted_reads_per_get: wasted,
                reads_per_get: wasted + found_reads as f64 / gets,
            }
        };
        let modelled = |name: &str, bits: Vec<f64>| {
            let fprs = bits.iter().map(|&b| math::best_fpr(kind, b)).collect();
            let bytes = level_keys
                .iter()
                .zip(&bits)
                .map(|(&n, &b)| n as f64 * b / 8.0)
                .sum::<f64>()
                .round() as u64;
            cost(name, bits, fprs, bytes)
        };
        let present_bits: Vec<f64> = held
            .iter()
            .map(|l| l.filter_bytes as f64 * 8.0 / l.filtered_keys.max(1) as f64)
            .collect();
        let present_fprs: Vec<f64> = held
            .iter()
            .map(|l| {
                if l.filtered_keys > 0 {
                    l.predicted_fpr
                } else {
                    1.0
                }
            })
            .collect();
        // L0's files keep the bits they were written with (a rebuild does
        // not rewrite L0; the next flushes write the level's new bits): the
        // designs share out the memory of the levels below it.
        let fixed = usize::from(levels.first() == Some(&0));
        let fixed_bits: Vec<f64> = present_bits[..fixed].to_vec();
        let fixed_memory: f64 = held[..fixed]
            .iter()
            .map(|l| l.filter_bytes as f64 * 8.0)
            .sum();
        let rest_keys = &level_keys[fixed..];
        let rest_avg =
            (memory as f64 * 8.0 - fixed_memory) / rest_keys.iter().sum::<u64>().max(1) as f64;
        let with_fixed =
            |rest: Vec<f64>| -> Vec<f64> { fixed_bits.iter().copied().chain(rest).collect() };
        let mut designs = vec![cost(
            "present",
            present_bits.clone(),
            present_fprs.clone(),
            memory,
        )];
        designs.push(modelled(
            "uniform",
            with_fixed(vec![rest_avg; rest_keys.len()]),
        ));
        designs.push(modelled(
            "monkey",
            with_fixed(math::monkey_allocation(kind, rest_keys, rest_avg)),
        ));
        let weights: Vec<f64> = absent_probes[fixed..].iter().map(|&n| n as f64).collect();
        if weights.iter().any(|&w| w > 0.0) {
            designs.push(modelled(
                "observed",
                with_fixed(math::monkey_allocation_weighted(
                    kind, rest_keys, &weights, rest_avg,
                )),
            ));
        }
        if rest_keys.len() > 1 {
            let mut bits = vec![rest_avg; rest_keys.len()];
            *bits.last_mut().expect("levels") = 0.0;
            designs.push(modelled("no-last-level", with_fixed(bits)));
        }

        let budget = memory as f64 * 1.005;
        let present = designs[0].reads_per_get;
        let saving = designs[0].wasted_reads_per_get * 0.02;
        let recommended = (1..designs.len())
            .filter(|&i| designs[i].memory_bytes as f64 <= budget)
            .min_by(|&a, &b| {
                designs[a]
                    .reads_per_get
                    .total_cmp(&designs[b].reads_per_get)
            })
            .filter(|&i| designs[i].reads_per_get < present - saving)
            .unwrap_or(0);
        Ok(Advice {
            gets: history.gets,
            since_unix_secs: history.since_unix_secs,
            kind,
            levels,
            level_keys,
            absent_probes,
            present_fprs,
            designs,
            recommended,
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::workload::{absent_key, present_key};
    use crate::{Db, Options};

    fn opts() -> Options {
        Options {
            write_buffer_size: 256 << 10,
            target_file_size: 256 << 10,
            level1_max_bytes: 512 << 10,
            level_size_multiplier: 4,
            dynamic_level_bytes: false,
            background_compaction: false,
            ..Options::default()
        }
    }

    /// Gets of `n` keys the store never held.
    fn missing_gets(db: &Db, n: u64) {
        for i in 0..n {
            assert!(db.get(absent_key(7, i)).unwrap().is_none());
        }
    }

    /// The advisor's prediction for the design it recommends holds: after
    /// the store is rebuilt to it, the same gets read what it said, within
    /// 10%, and its filters spend the memory it said.
    #[test]
    fn the_recommended_design_reads_what_the_advisor_predicted() {
        let dir = tempfile::tempdir().unwrap();
        let keys = 200_000u64;
        let gets = 100_000u64;
        {
            let db = Db::open(dir.path(), opts()).unwrap();
            // Maintained as it grows, so the newer keys sit in the upper
            // levels: several levels to allocate among.
            for i in 0..keys {
                db.put(present_key(7, i), [1u8; 20]).unwrap();
                if i % 5_000 == 4_999 {
                    db.maintain().unwrap();
                }
            }
            db.maintain().unwrap();
        }
        let db = Db::open(dir.path(), opts()).unwrap();
        let e = db.advise().unwrap_err();
        assert!(e.to_string().contains("no gets counted"), "{e}");
        missing_gets(&db, gets);
        let advice = db.advise().unwrap();
        assert!(advice.levels.len() >= 2, "{advice:?}");
        let present = &advice.designs[0];
        // The present design's prediction against what it read.
        let measured = db.stats().total.false_positives as f64 / gets as f64;
        let ratio = measured / present.wasted_reads_per_get;
        assert!((0.9..=1.1).contains(&ratio), "present: {ratio} {advice:?}");
        let pick = if advice.recommended == 0 {
            advice
                .designs
                .iter()
                .position(|d| d.name == "observed")
                .unwrap()
        } else {
            advice.recommended
        };
        let chosen = advice.designs[pick].clone();
        assert!(
            chosen.memory_bytes as f64 <= present.memory_bytes as f64 * 1.005,
            "{advice:?}"
        );
        db.close().unwrap();

        let db = Db::open(
            dir.path(),
            Options {
                filters: advice.filter_options(pick),
                use_stored_design: false,
                ..opts()
            },
        )
        .unwrap();
        assert!(db.rebuild_filters().unwrap() > 0, "nothing rebuilt");
        missing_gets(&db, gets);
        let s = db.stats();
        let measured = s.total.false_positives as f64 / gets as f64;
        let ratio = measured / chosen.wasted_reads_per_get;
        assert!(
            (0.9..=1.1).contains(&ratio),
            "{}: measured {measured}, predicted {}; {advice:?}",
            chosen.name,
            chosen.wasted_reads_per_get
        );
        let memory = s.filter_bytes as f64 / chosen.memory_bytes as f64;
        assert!(
            (0.99..=1.02).contains(&memory),
            "memory {memory}: {advice:?}"
        );
    }
}
