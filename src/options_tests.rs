use super::*;

/// The option structs' fields named in `src` (by `pub struct NAME`) and
/// in its `setters!(NAME { .. })` list.
fn fields_and_setters(src: &str, name: &str) -> (Vec<String>, Vec<String>) {
    let body = |start: &str, end: &str| -> Vec<String> {
        let from = src.find(start).unwrap_or_else(|| panic!("{start}")) + start.len();
        let to = from + src[from..].find(end).unwrap();
        src[from..to]
            .lines()
            .map(str::trim)
            .filter(|l| !l.starts_with("//") && l.contains(':'))
            .map(|l| {
                let l = l.trim_start_matches("pub ");
                l[..l.find(':').unwrap()].to_string()
            })
            .collect()
    };
    let fields = body(&format!("pub struct {name} {{"), "\n}");
    let setters = body(&format!("setters!({name} {{"), "});");
    (fields, setters)
}

#[test]
fn default_open_files_stay_below_the_limit() {
    let table = [
        (32, 16),
        (64, 40),
        (256, 232),
        (1024, 1000),
        (2000, 1000),
        (4096, 2048),
        (20_000, 10_000),
        (u64::MAX, 1 << 19),
    ];
    for (limit, want) in table {
        assert_eq!(max_open_files_under(limit), want, "limit {limit}");
    }
    for limit in 1..5000u64 {
        let n = max_open_files_under(limit) as u64;
        assert!(n < limit, "{n} under a limit of {limit}");
        // Half the limit at least, and room for the rest of the process.
        assert!(n >= limit / 2, "{n} under a limit of {limit}");
        if limit > 2 * PROCESS_RESERVED_FILES as u64 {
            assert!(
                limit - n >= PROCESS_RESERVED_FILES as u64,
                "{n} under {limit}"
            );
        }
    }
    // The defaults pass their own check, whatever the limit.
    let o = Options::default();
    assert!(o.max_open_files >= o.min_max_open_files());
    o.validate().unwrap();
}

#[test]
fn every_option_field_has_a_setter() {
    for (src, name) in [
        (include_str!("options.rs"), "Options"),
        (include_str!("options.rs"), "FilterOptions"),
        (include_str!("options.rs"), "CompressionOptions"),
        (include_str!("sst/builder.rs"), "TableBuilderOptions"),
        (include_str!("sst/table/mod.rs"), "TableOpenOptions"),
    ] {
        let (mut fields, mut setters) = fields_and_setters(src, name);
        // `CompressionOptions::default` would shadow `Default::default`.
        fields.retain(|f| !(name == "CompressionOptions" && f == "default"));
        assert!(!fields.is_empty(), "{name}");
        fields.sort();
        setters.sort();
        assert_eq!(
            fields, setters,
            "{name}: a field without a setter, or a setter without a field"
        );
    }
}

#[test]
fn monkey_over_two_families() {
    let f = FilterOptions::hybrid_monkey(FilterKind::Blocked512, FilterKind::Ribbon, 2, 8.0);
    let runs = [(0, 1_000), (1, 10_000), (2, 100_000), (3, 1_000_000)];
    let p: Vec<FilterPolicy> = (0..4).map(|l| f.policy_for(l, &runs, 3).unwrap()).collect();
    assert_eq!(p[0].kind(), FilterKind::Blocked512);
    assert_eq!(p[1].kind(), FilterKind::Blocked512);
    assert_eq!(p[2].kind(), FilterKind::Ribbon);
    assert_eq!(p[3].kind(), FilterKind::Ribbon);
    // Smaller runs get more bits; the budget holds.
    assert!(p[0].bits_per_key() > p[3].bits_per_key(), "{p:?}");
    let used: f64 = runs
        .iter()
        .zip(&p)
        .map(|(&(_, n), p)| n as f64 * p.bits_per_key())
        .sum();
    let keys: f64 = runs.iter().map(|&(_, n)| n as f64).sum();
    assert!(used / keys <= 8.0 + 1e-9, "{}", used / keys);
    // Ribbon's cheaper bits buy it a lower FPR than the same budget in
    // blocked512 alone would give the largest run.
    let blocked = FilterOptions::monkey(FilterKind::Blocked512, 8.0);
    let b3 = blocked.policy_for(3, &runs, 3).unwrap();
    assert!(p[3].predicted_fpr() < b3.predicted_fpr());
    // A None override still removes the filter under Monkey.
    let mut g = f.clone();
    g.per_level.push((1, None));
    assert_eq!(g.policy_for(1, &runs, 3), None);
}

#[test]
fn per_level_overrides_and_last_level() {
    let mut f = FilterOptions::default();
    f.per_level.push((2, Some(FilterPolicy::bloom(6.0))));
    f.skip_last_level = true;
    let runs = [(0, 100), (1, 1000), (2, 10_000), (3, 100_000)];
    assert_eq!(f.policy_for(1, &runs, 3), Some(FilterPolicy::default()));
    assert_eq!(f.policy_for(2, &runs, 3), Some(FilterPolicy::bloom(6.0)));
    assert_eq!(f.policy_for(3, &runs, 3), None);
    assert_eq!(FilterOptions::none().policy_for(1, &runs, 3), None);
}

#[test]
fn dynamic_targets_fill_from_the_bottom() {
    let o = Options {
        max_levels: 7,
        level1_max_bytes: 100,
        level_size_multiplier: 10,
        ..Options::default()
    };
    // Smaller than level1_max_bytes: the last level is the base.
    assert_eq!(o.dynamic_level_targets(0), (6, vec![0, 0, 0, 0, 0, 0, 0]));
    assert_eq!(o.dynamic_level_targets(99), (6, vec![0, 0, 0, 0, 0, 0, 99]));
    // L5 would target 99 < 100: still the last level.
    assert_eq!(
        o.dynamic_level_targets(999),
        (6, vec![0, 0, 0, 0, 0, 0, 999])
    );
    assert_eq!(
        o.dynamic_level_targets(1000),
        (5, vec![0, 0, 0, 0, 0, 100, 1000])
    );
    assert_eq!(
        o.dynamic_level_targets(12_345),
        (4, vec![0, 0, 0, 0, 123, 1234, 12_345])
    );
    // Huge: the base stops at L1, whose target then exceeds level1_max_bytes.
    let (base, t) = o.dynamic_level_targets(10_000_000_000);
    assert_eq!(base, 1);
    assert_eq!(t[1], 100_000);
    assert_eq!(t[0], 0);
    // Each level from the base down is `multiplier` times the one above.
    for l in base..6 {
        assert_eq!(t[l], t[l + 1] / 10);
    }
}

#[test]
fn allocated_averages_are_checked() {
    for bad in [0.0, -1.0, 0.25, f64::NAN, f64::INFINITY, 41.0, 1e9] {
        for f in [
            FilterOptions::workload_aware(FilterKind::Blocked512, bad),
            FilterOptions::monkey(FilterKind::Blocked512, bad),
        ] {
            let e = Options::default().filters(f).validate().unwrap_err();
            assert!(matches!(e, crate::Error::InvalidArgument(_)), "{bad}: {e}");
        }
    }
    let mut both = FilterOptions::workload_aware(FilterKind::Blocked512, 10.0);
    both.monkey_avg_bits_per_key = Some(10.0);
    let e = Options::default().filters(both).validate().unwrap_err();
    assert!(matches!(e, crate::Error::InvalidArgument(_)), "{e}");
    let ok = FilterOptions::workload_aware(FilterKind::Ribbon, 0.5);
    assert!(Options::default().filters(ok).validate().is_ok());
    // Per level, the workload-aware design allocates as Monkey does.
    let runs = [(0, 10_000), (1, 100_000), (2, 1_000_000)];
    let w = FilterOptions::workload_aware(FilterKind::Blocked512, 10.0);
    let m = FilterOptions::monkey(FilterKind::Blocked512, 10.0);
    for l in 0..3 {
        assert_eq!(w.policy_for(l, &runs, 2), m.policy_for(l, &runs, 2));
    }
}

#[test]
fn monkey_gives_small_levels_more_bits() {
    let f = FilterOptions::monkey(FilterKind::Blocked512, 10.0);
    let runs = [(0, 10_000), (1, 100_000), (2, 1_000_000), (3, 10_000_000)];
    let b: Vec<f64> = (0..4)
        .map(|l| f.policy_for(l, &runs, 3).map_or(0.0, |p| p.bits_per_key()))
        .collect();
    assert!(b.windows(2).all(|w| w[0] > w[1]), "{b:?}");
    assert!(b[3] < 10.0 && b[0] > 10.0);
}
