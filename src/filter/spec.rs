//! Filter specs: the short text form of a policy, as the command line takes
//! it and the store's OPTIONS file records it.
//!
//! ```text
//! none                no filter
//! KIND:BITS           KIND at BITS bits/key (fractional), the model's best k
//! KIND:BITS:K         ... with K probes
//! fpr:F               blocked512 sized for a modelled FPR of F (below 1, and at
//!                     least FilterKind::min_fpr, see FilterPolicy::for_fpr)
//! KIND:fpr:F          KIND sized for F
//! fuse8, fuse16       a binary fuse filter (its size is its own: any BITS
//!                     given reads as what a file of many keys spends)
//! ```
//!
//! `KIND` is a family's stable name ([`FilterKind::name`]): `blocked512`,
//! `bloom`, …

use super::{FilterKind, FilterPolicy, MAX_BITS_PER_KEY, MAX_PROBES, MIN_BITS_PER_KEY};

/// The family a well-formed spec names when this process does not know it
/// (not built in, not registered): `Some("xor8")` for `xor8:10` or
/// `xor8:10:1` in a process that has not registered `xor8`. `None` for
/// `none`, `fpr:F`, known families and text not of that form.
pub fn unregistered_family(spec: &str) -> Option<&str> {
    let parts: Vec<&str> = spec.trim().split(':').collect();
    // `NAME:BITS` or `NAME:BITS:K`, as specs are written.
    if !(2..=3).contains(&parts.len()) || parts[1..].iter().any(|p| p.parse::<f64>().is_err()) {
        return None;
    }
    let name = parts[0];
    let well_formed = !name.is_empty()
        && name.len() <= super::family::MAX_FAMILY_NAME
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
    (well_formed && name != "none" && name != "fpr" && FilterKind::from_name(name).is_none())
        .then_some(name)
}

/// Parses a spec (module docs); `Ok(None)` is `none`. Out-of-range numbers are
/// errors, not clamped: a spec is user input.
pub fn parse_filter_spec(spec: &str) -> Result<Option<FilterPolicy>, String> {
    let spec = spec.trim();
    if spec == "none" {
        return Ok(None);
    }
    let parts: Vec<&str> = spec.split(':').collect();
    let kind_of = |name: &str| {
        FilterKind::from_name(name).ok_or_else(|| {
            format!(
                "unknown filter kind {name:?} in {spec:?} (known: {})",
                super::filter_families()
                    .iter()
                    .map(|k| k.name())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        })
    };
    // The range is the library's to check, in its words.
    let for_fpr = |kind: FilterKind, s: &str| -> Result<FilterPolicy, String> {
        let fpr = s
            .parse::<f64>()
            .map_err(|_| format!("the FPR in {spec:?} is not a number"))?;
        FilterPolicy::for_fpr(kind, fpr).map_err(|e| e.to_string())
    };
    let policy = match parts.as_slice() {
        // A fuse filter's size is its own: its name is a whole spec.
        [kind] if FilterKind::from_name(kind).is_some_and(|k| k.fuse_width().is_some()) => {
            FilterPolicy::new(kind_of(kind)?, 0.0)
        }
        ["fpr", f] => for_fpr(FilterKind::Blocked512, f)?,
        [kind, "fpr", f] => for_fpr(kind_of(kind)?, f)?,
        [kind, bits] | [kind, bits, _] => {
            let kind = kind_of(kind)?;
            let bits: f64 = bits
                .parse()
                .ok()
                .filter(|b| (MIN_BITS_PER_KEY..=MAX_BITS_PER_KEY).contains(b))
                .ok_or_else(|| {
                    format!(
                        "bits per key in {spec:?} must be a number in \
                         {MIN_BITS_PER_KEY}..={MAX_BITS_PER_KEY}"
                    )
                })?;
            let p = FilterPolicy::new(kind, bits);
            match parts.get(2) {
                None => p,
                Some(k) => {
                    let k: u32 = k
                        .parse()
                        .ok()
                        .filter(|k| (1..=MAX_PROBES).contains(k))
                        .ok_or_else(|| {
                            format!("probes in {spec:?} must be a whole number in 1..={MAX_PROBES}")
                        })?;
                    p.with_probes(k)
                }
            }
        }
        _ => {
            return Err(format!(
                "bad filter spec {spec:?}: want none, KIND:BITS, KIND:BITS:K, fpr:F or KIND:fpr:F"
            ));
        }
    };
    Ok(Some(policy))
}

/// The spec that parses back to exactly `policy`: `KIND:BITS:K` (bits in the
/// shortest form that round-trips), or `none`.
pub fn filter_spec(policy: Option<&FilterPolicy>) -> String {
    match policy {
        None => "none".to_string(),
        Some(p) => format!("{}:{}:{}", p.name(), p.bits_per_key(), p.num_probes()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse_and_round_trip() {
        let p = parse_filter_spec("blocked512:10").unwrap().unwrap();
        assert_eq!(p, FilterPolicy::blocked512(10.0));
        let p = parse_filter_spec("bloom:12.5:7").unwrap().unwrap();
        assert_eq!(p, FilterPolicy::bloom(12.5).with_probes(7));
        assert_eq!(parse_filter_spec("none").unwrap(), None);
        assert_eq!(
            parse_filter_spec("fpr:0.01").unwrap().unwrap(),
            FilterPolicy::for_fpr(FilterKind::Blocked512, 0.01).unwrap()
        );
        assert_eq!(
            parse_filter_spec("bloom:fpr:0.001").unwrap().unwrap(),
            FilterPolicy::for_fpr(FilterKind::Bloom, 0.001).unwrap()
        );
        for p in [
            FilterPolicy::blocked512(9.123_456_789),
            FilterPolicy::bloom(3.0).with_probes(30),
            FilterPolicy::for_fpr(FilterKind::Blocked512, 0.003).unwrap(),
            FilterPolicy::ribbon(7.25),
            FilterPolicy::for_fpr(FilterKind::Ribbon, 0.001).unwrap(),
        ] {
            let s = filter_spec(Some(&p));
            assert_eq!(parse_filter_spec(&s).unwrap(), Some(p), "{s}");
        }
        assert_eq!(filter_spec(None), "none");
    }

    #[test]
    fn bad_specs_are_errors() {
        for bad in [
            "",
            "blocked512",
            "blocked:10",
            "blocked512:abc",
            "blocked512:0",
            "blocked512:0.4",
            "blocked512:101",
            "blocked512:nan",
            "blocked512:inf",
            "blocked512:10:0",
            "blocked512:10:31",
            "blocked512:10:6:1",
            "fpr:0",
            "fpr:1",
            "fpr:-0.1",
            "fpr:nan",
            "fpr:1e-30",
            "ribbon:fpr:1e-300",
            "bloom:fpr:x",
            "none:10",
        ] {
            assert!(parse_filter_spec(bad).is_err(), "{bad:?} accepted");
        }
        // Out of range: the library's words.
        let e = parse_filter_spec("fpr:1e-30").unwrap_err();
        let lib = FilterPolicy::for_fpr(FilterKind::Blocked512, 1e-30).unwrap_err();
        assert_eq!(e, lib.to_string());
    }
}
