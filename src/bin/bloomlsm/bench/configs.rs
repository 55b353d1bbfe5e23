//! The study's filter configurations: [`BenchConfig`], parsed from names
//! such as `blocked10` or `monkey-ribbon8` ([`parse_config`]), and the store
//! options every configuration shares ([`bench_options`]).

use bloomlsm::filter::{self, FilterKind, FilterPolicy};
use bloomlsm::{FilterOptions, Options, ReadMode};

/// The configurations `bench` runs when `--configs` is not given.
pub const DEFAULT_CONFIGS: &str =
    "none,bloom10,blocked6,blocked10,blocked16,ribbon10,ribbon7,fuse8,hybrid10,monkey10";

/// One filter configuration of the study.
#[derive(Clone, Debug, PartialEq)]
pub struct BenchConfig {
    /// The name given on the command line, e.g. `blocked10`.
    pub name: String,
    /// The store's filter options.
    pub filters: FilterOptions,
    /// For `monkeyB` / `monkey-bloomB`: the kind and average bits per key
    /// ([`FilterOptions::monkey`]: the store re-solves the allocation for
    /// every file it writes).
    pub monkey: Option<(FilterKind, f64)>,
}

impl BenchConfig {
    /// A description of the policy, e.g. `blocked512(10 b/k, k=6)`,
    /// `monkey blocked512 (10 b/k average)` or `none`.
    pub fn policy(&self) -> String {
        let f = &self.filters;
        if let Some((kind, avg)) = self.monkey {
            return match f.per_level.as_slice() {
                [(0, Some(top)), .., (last, _)] => format!(
                    "monkey {} on L0-L{last}, {} below ({avg} b/k average)",
                    top.name(),
                    kind.name()
                ),
                _ => format!("monkey {} ({avg} b/k average)", kind.name()),
            };
        }
        if let (Some(avg), Some(p)) = (f.workload_avg_bits_per_key, f.policy) {
            return format!("workload-aware {} ({avg} b/k average)", p.name());
        }
        let show = |p: Option<FilterPolicy>| match p {
            None => "none".to_string(),
            Some(p) => format!(
                "{}({} b/k, k={})",
                p.name(),
                p.bits_per_key(),
                p.num_probes()
            ),
        };
        match f.per_level.as_slice() {
            [] => show(f.policy),
            [(0, top), .., (last, _)] => {
                format!("{} on L0-L{last}, {} below", show(*top), show(f.policy))
            }
            _ => format!("{} with per-level overrides", show(f.policy)),
        }
    }

    /// Whether a store that spends `bits_per_key` spends what the
    /// configuration's name says, to within 2% (always, for a name that
    /// says no bits per key).
    pub fn spends_nominal(&self, bits_per_key: f64) -> bool {
        self.nominal_bits_per_key()
            .is_none_or(|nominal| (bits_per_key - nominal).abs() <= 0.02 * nominal)
    }

    /// The nominal bits per key (0 without filters); `None` for a fuse
    /// filter, whose size is set by its fingerprint width and the keys of
    /// each file, not by a number in its name.
    pub fn nominal_bits_per_key(&self) -> Option<f64> {
        if self.monkey.is_none()
            && self.filters.per_level.is_empty()
            && self
                .filters
                .policy
                .is_some_and(|p| p.kind().fuse_width().is_some())
        {
            return None;
        }
        Some(
            self.monkey
                .map(|(_, avg)| avg)
                .or(self.filters.policy.map(|p| p.bits_per_key()))
                .unwrap_or(0.0),
        )
    }
}

/// Parses a configuration name: `none`, `bloomB`, `blockedB`, `monkeyB`
/// (blocked512 with the Monkey allocation) or `monkey-bloomB`, where `B` is
/// bits per key (fractional allowed, e.g. `blocked12.5`); or a filter spec
/// `FAMILY:BITS` of any family the process knows (`ribbon:7.5`), every level
/// alike.
pub fn parse_config(name: &str) -> Result<BenchConfig, String> {
    let name = name.trim();
    let bits = |s: &str| -> Result<f64, String> {
        let b: f64 = s
            .parse()
            .map_err(|_| format!("bad bits per key {s:?} in configuration {name:?}"))?;
        if !(filter::MIN_BITS_PER_KEY..=filter::MAX_BITS_PER_KEY).contains(&b) {
            return Err(format!(
                "bits per key in {name:?} must be in {}..={}",
                filter::MIN_BITS_PER_KEY,
                filter::MAX_BITS_PER_KEY
            ));
        }
        Ok(b)
    };
    let mut monkey = None;
    let filters = if name == "fuse8" || name == "fuse16" || name.contains(':') {
        let policy = crate::design::cli_filter_spec(name)?;
        FilterOptions::uniform(policy)
    } else if name == "none" {
        FilterOptions::none()
    } else if let Some(b) = name.strip_prefix("monkey-bloom") {
        monkey = Some((FilterKind::Bloom, bits(b)?));
        FilterOptions::monkey(FilterKind::Bloom, bits(b)?)
    } else if let Some(b) = name.strip_prefix("monkey-hybrid") {
        monkey = Some((FilterKind::Ribbon, bits(b)?));
        FilterOptions::hybrid_monkey(FilterKind::Blocked512, FilterKind::Ribbon, 2, bits(b)?)
    } else if let Some(b) = name.strip_prefix("monkey-ribbon") {
        monkey = Some((FilterKind::Ribbon, bits(b)?));
        FilterOptions::monkey(FilterKind::Ribbon, bits(b)?)
    } else if let Some(b) = name.strip_prefix("ribbon") {
        FilterOptions::uniform(Some(FilterPolicy::ribbon(bits(b)?)))
    } else if let Some(b) = name.strip_prefix("hybrid") {
        // Both families at B bits/key: the name says what it spends.
        let b = bits(b)?;
        FilterOptions::hybrid(FilterPolicy::blocked512(b), FilterPolicy::ribbon(b), 2)
    } else if let Some(b) = name.strip_prefix("workload") {
        FilterOptions::workload_aware(FilterKind::Blocked512, bits(b)?)
    } else if let Some(b) = name.strip_prefix("monkey") {
        monkey = Some((FilterKind::Blocked512, bits(b)?));
        FilterOptions::monkey(FilterKind::Blocked512, bits(b)?)
    } else if let Some(b) = name.strip_prefix("blocked") {
        FilterOptions::uniform(Some(FilterPolicy::blocked512(bits(b)?)))
    } else if let Some(b) = name.strip_prefix("bloom") {
        FilterOptions::uniform(Some(FilterPolicy::bloom(bits(b)?)))
    } else {
        return Err(format!(
            "unknown configuration {name:?} (expected none, bloomB, blockedB, ribbonB, fuse8, fuse16, hybridB, monkeyB, monkey-bloomB, monkey-ribbonB, monkey-hybridB, workloadB, e.g. blocked10, or FAMILY:BITS with FAMILY one of {})",
            filter::filter_families()
                .iter()
                .map(|k| k.name())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    };
    Ok(BenchConfig {
        name: name.to_string(),
        filters,
        monkey,
    })
}

/// The store options of the study: small buffers and levels so that 1M keys
/// make a tree of at least four levels, compaction on the caller thread (a
/// shape that depends on the writes alone; a long load runs its first keys
/// with the background thread instead, `stores::bulk_load`), block cache off (every data-block read is
/// a real `pread`), tables read in `read_mode`.
pub fn bench_options(filters: FilterOptions, read_mode: ReadMode) -> Options {
    Options::default()
        .read_mode(read_mode)
        .write_buffer_size(2 << 20)
        .target_file_size(2 << 20)
        .level1_max_bytes(4 << 20)
        .level_size_multiplier(10)
        // Levels from L1 down, L0 merged at four files (LevelDB's and
        // RocksDB's trigger): the tree every study measurement describes.
        .dynamic_level_bytes(false)
        .l0_compaction_trigger(4)
        .l0_slowdown_trigger(8)
        .l0_stop_trigger(12)
        .block_cache_capacity(0)
        .background_compaction(false)
        .sync_writes(false)
        .filters(filters)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_configs() {
        assert_eq!(parse_config("none").unwrap().filters, FilterOptions::none());
        assert_eq!(
            parse_config("ribbon:7.5").unwrap().filters.policy,
            Some(FilterPolicy::ribbon(7.5))
        );
        let e = parse_config("xor8:10").unwrap_err();
        assert!(e.contains("unknown filter kind \"xor8\""), "{e}");
        assert!(e.contains("(known: blocked512, bloom, ribbon"), "{e}");
        assert!(
            e.contains("known only to the program that registers it"),
            "{e}"
        );
        // Every family the process knows, as FAMILY:BITS.
        for kind in filter::filter_families() {
            let c = parse_config(&format!("{}:10", kind.name())).unwrap();
            assert_eq!(c.filters.policy.map(|p| p.kind()), Some(kind));
        }
        let b = parse_config("blocked12.5").unwrap();
        assert_eq!(b.filters.policy, Some(FilterPolicy::blocked512(12.5)));
        assert_eq!(
            parse_config("bloom8").unwrap().filters.policy,
            Some(FilterPolicy::bloom(8.0))
        );
        let w = parse_config("workload10").unwrap();
        assert_eq!(w.filters.workload_avg_bits_per_key, Some(10.0));
        assert_eq!(w.policy(), "workload-aware blocked512 (10 b/k average)");
        assert_eq!(w.nominal_bits_per_key(), Some(10.0));
        assert!(parse_config("workload0").is_err());
        assert!(parse_config("workloadx").is_err());
        let m = parse_config("monkey8").unwrap();
        assert_eq!(m.filters.monkey_avg_bits_per_key, Some(8.0));
        assert_eq!(m.policy(), "monkey blocked512 (8 b/k average)");
        assert_eq!(
            parse_config("monkey-bloom10")
                .unwrap()
                .filters
                .policy
                .unwrap()
                .kind(),
            FilterKind::Bloom
        );
        let h = parse_config("hybrid10").unwrap();
        assert_eq!(h.policy().split(" on L0-L1, ").count(), 2, "{}", h.policy());
        assert!(
            h.policy().starts_with("blocked512(10 b/k"),
            "{}",
            h.policy()
        );
        assert_eq!(
            parse_config("ribbon7").unwrap().filters.policy,
            Some(FilterPolicy::ribbon(7.0))
        );
        assert_eq!(
            parse_config("monkey-ribbon8").unwrap().monkey,
            Some((FilterKind::Ribbon, 8.0))
        );
        assert_eq!(
            parse_config("monkey-hybrid8").unwrap().policy(),
            "monkey blocked512 on L0-L1, ribbon below (8 b/k average)"
        );
        for bad in [
            "blocked",
            "bloomx",
            "foo10",
            "blocked0",
            "blocked1000",
            "",
            "ribbon",
            "hybridx",
        ] {
            assert!(parse_config(bad).is_err(), "{bad}");
        }
    }
}
