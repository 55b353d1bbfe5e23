//! The filter interface: what a filter family must do to serve as a table's
//! filter, and the registry that maps the name recorded in each file to the
//! family that reads it.
//!
//! A family ([`FilterFamily`]) builds one file's filter from the
//! [`key_hash`](super::key_hash) of each key, opens those bytes again, and
//! models its false-positive rate so the store can size and report it. An
//! opened filter answers probes ([`KeyFilter`]). The built-in families
//! (blocked512, bloom, ribbon) implement both traits and every build and
//! open of theirs goes through them; their opened filters are then held in
//! [`Filter`]'s own variants so that a probe is a `match`, not a virtual
//! call. A family registered at run time ([`register_filter`]) gets a
//! [`FilterKind::Registered`] kind and its opened filters a
//! [`Filter::Registered`] variant behind one virtual call.
//!
//! On disk a registered family's filter is its own bytes followed by its
//! name and the usual trailer with kind byte [`KIND_REGISTERED`]
//! (docs/format.md §6): a store that has not registered that name reads the
//! file without its filter and counts it, as it does for any kind it does
//! not know.

use std::fmt;
use std::hash::{Hash, Hasher};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, RwLock};

use super::{
    FILTER_TRAILER_LEN, FILTER_VERSION, Filter, FilterDecodeError, FilterKind, FilterTrailer,
    HASH_XXH3_64, MAX_PROBES, blocked, bloom, fuse, math, ribbon,
};

/// The trailer's kind byte of a filter built by a registered family: the
/// family is named by the bytes just before the trailer.
pub const KIND_REGISTERED: u8 = 255;

/// Longest name a registered family may have, in bytes.
pub const MAX_FAMILY_NAME: usize = 64;

/// An opened filter, ready to probe. `hash` is the key's
/// [`key_hash`](super::key_hash).
pub trait KeyFilter: Send + Sync + 'static {
    /// False only if the key whose hash is `hash` was certainly not among
    /// the keys the filter was built from. A false here for such a key is a
    /// wrong answer from the store: never return it.
    fn may_contain(&self, hash: u64) -> bool;

    /// Starts loading the memory [`Self::may_contain`] of `hash` will read
    /// (a lookup probing several files calls it for each first). The
    /// default does nothing.
    fn prefetch(&self, hash: u64) {
        let _ = hash;
    }

    /// Keys (hashes) the filter was built from.
    fn key_count(&self) -> u64;

    /// Bytes of memory the filter occupies while held.
    fn memory_bytes(&self) -> usize;

    /// Probes per key, as the store reports it (1 unless the family has a k).
    fn num_probes(&self) -> u32 {
        1
    }

    /// The modelled false-positive rate of this filter as built.
    fn predicted_fpr(&self) -> f64;
}

/// A filter family: builds, opens and models the filters of one design.
///
/// A family's name is recorded in every file it builds, so it must stay the
/// same for as long as such files exist, and [`Self::version`] must change
/// whenever the bytes [`Self::build`] makes change meaning.
pub trait FilterFamily: Send + Sync + 'static {
    /// The stable name recorded in each file and used in filter specs
    /// (`NAME:BITS`): 1 to [`MAX_FAMILY_NAME`] bytes of `a-z`, `0-9`, `_`.
    fn name(&self) -> &str;

    /// The version of the encoding [`Self::build`] writes (1 to 254). A
    /// file written by another version is read without its filter.
    fn version(&self) -> u8 {
        1
    }

    /// The modelled FPR of a filter at `bits_per_key` with `num_probes`.
    fn model_fpr(&self, bits_per_key: f64, num_probes: u32) -> f64;

    /// The probe count that minimises [`Self::model_fpr`] at `bits_per_key`
    /// (1 for families without one).
    fn best_probes(&self, bits_per_key: f64) -> u32 {
        let _ = bits_per_key;
        1
    }

    /// The filter of `hashes` (duplicates possible, any count including 0)
    /// at `bits_per_key` and `num_probes`. An error says, in words, why it
    /// could not be built.
    fn build(&self, hashes: &[u64], bits_per_key: f64, num_probes: u32) -> Result<Vec<u8>, String>;

    /// Opens bytes [`Self::build`] made. Bytes that do not decode are an
    /// error, never a panic.
    fn open(&self, bytes: &[u8]) -> Result<Filter, FilterDecodeError>;
}

/// A registered family, as a [`FilterKind`] holds it: compared, hashed and
/// printed by name.
#[derive(Clone, Copy)]
pub struct Registered(&'static dyn FilterFamily);

impl Registered {
    /// The family.
    pub fn family(self) -> &'static dyn FilterFamily {
        self.0
    }
}

impl PartialEq for Registered {
    fn eq(&self, other: &Self) -> bool {
        self.0.name() == other.0.name()
    }
}

impl Eq for Registered {}

impl Hash for Registered {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.0.name().hash(state)
    }
}

impl fmt::Debug for Registered {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Registered({:?})", self.0.name())
    }
}

/// Families registered in this process, in registration order.
static REGISTRY: RwLock<Vec<Registered>> = RwLock::new(Vec::new());

/// Registers `family` for this process: from now on filter specs, options
/// and files may name it. Returns its kind.
///
/// # Errors
///
/// [`Error::InvalidArgument`](crate::Error::InvalidArgument) if the name is
/// not 1 to [`MAX_FAMILY_NAME`] bytes of `a-z`, `0-9` and `_`, is a built-in
/// family's or is already registered, or if the version is 0 or 255.
pub fn register_filter<F: FilterFamily>(family: F) -> crate::Result<FilterKind> {
    let name = family.name();
    let well_formed = !name.is_empty()
        && name.len() <= MAX_FAMILY_NAME
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
    if !well_formed {
        return Err(crate::Error::invalid(format!(
            "filter family name {name:?}: want 1 to {MAX_FAMILY_NAME} bytes of a-z, 0-9 and _"
        )));
    }
    if !(1..=254).contains(&family.version()) {
        return Err(crate::Error::invalid(format!(
            "filter family {name}: version {} (1..=254)",
            family.version()
        )));
    }
    if FilterKind::ALL.iter().any(|k| k.name() == name) {
        return Err(crate::Error::invalid(format!(
            "filter family {name}: the name of a built-in family"
        )));
    }
    let mut registry = REGISTRY.write().unwrap_or_else(|e| e.into_inner());
    if registry.iter().any(|r| r.0.name() == name) {
        return Err(crate::Error::invalid(format!(
            "filter family {name} is already registered"
        )));
    }
    // A registered family lives as long as the process: files and kinds
    // refer to it by a `'static` reference.
    let family: &'static dyn FilterFamily = Box::leak(Box::new(family));
    registry.push(Registered(family));
    Ok(FilterKind::Registered(Registered(family)))
}

/// The kind of the registered family named `name`, if any.
pub(crate) fn registered(name: &str) -> Option<FilterKind> {
    let registry = REGISTRY.read().unwrap_or_else(|e| e.into_inner());
    registry
        .iter()
        .find(|r| r.0.name() == name)
        .map(|&r| FilterKind::Registered(r))
}

/// Every family this process can build and read: the built-ins, then the
/// registered ones in registration order.
pub fn filter_families() -> Vec<FilterKind> {
    let registry = REGISTRY.read().unwrap_or_else(|e| e.into_inner());
    FilterKind::ALL
        .into_iter()
        .chain(registry.iter().map(|&r| FilterKind::Registered(r)))
        .collect()
}

/// Builds a registered family's filter and seals it: its bytes, its name,
/// the name's length and the trailer. A panic or an error in the family, or
/// bytes that do not open or that reject one of the first keys, is an
/// [`Error::Filter`](crate::Error::Filter) naming the family.
pub(crate) fn build_registered(
    family: &'static dyn FilterFamily,
    hashes: &[u64],
    bits_per_key: f64,
    num_probes: u32,
) -> crate::Result<Vec<u8>> {
    let name = family.name();
    let fail = |what: String| crate::Error::Filter {
        family: name.to_string(),
        what,
    };
    let built = catch_unwind(AssertUnwindSafe(|| {
        family.build(hashes, bits_per_key, num_probes)
    }))
    .map_err(|p| fail(format!("build panicked: {}", panic_message(&*p))))?
    .map_err(|e| fail(format!("build failed: {e}")))?;
    let mut out = built;
    let payload_len = out.len() as u64;
    out.extend_from_slice(name.as_bytes());
    out.push(name.len() as u8);
    FilterTrailer {
        units: payload_len,
        key_count: hashes.len() as u64,
        num_probes: num_probes.clamp(1, MAX_PROBES) as u8,
        hash: HASH_XXH3_64,
        version: family.version(),
        kind: KIND_REGISTERED,
    }
    .encode_to(&mut out);
    // What the family built must answer for the keys it was built from:
    // checked on a sample, so a family that loses keys fails its build
    // instead of making the store answer "absent" for a stored key.
    let opened = Filter::open(&out).map_err(|e| fail(format!("built bytes do not open: {e}")))?;
    if let Filter::Unusable { reason } = &opened {
        return Err(fail(format!("built bytes do not open: {reason}")));
    }
    let step = (hashes.len() / SAMPLE).max(1);
    for &h in hashes.iter().step_by(step).take(SAMPLE) {
        let found = catch_unwind(AssertUnwindSafe(|| opened.may_contain(h)))
            .map_err(|p| fail(format!("probe panicked: {}", panic_message(&*p))))?;
        if !found {
            return Err(fail(format!(
                "the built filter rejects a key it was built from (hash {h:#018x})"
            )));
        }
    }
    Ok(out)
}

/// The message of a caught panic.
fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    match crate::Error::from_panic(payload) {
        crate::Error::Panicked(msg) => msg,
        e => e.to_string(),
    }
}

/// Keys of a registered family's new filter probed before it is accepted.
const SAMPLE: usize = 256;

/// Opens a filter whose trailer `t` has kind [`KIND_REGISTERED`]: finds the
/// family by the name before the trailer. A family this process has not
/// registered, another version of it, or bytes it cannot decode (or panics
/// on) give [`Filter::Unusable`]: the file is read without its filter.
pub(crate) fn open_registered(
    bytes: &[u8],
    t: &FilterTrailer,
) -> Result<Filter, FilterDecodeError> {
    let body = &bytes[..bytes.len() - FILTER_TRAILER_LEN];
    let Some((&name_len, rest)) = body.split_last() else {
        return Err(FilterDecodeError(
            "registered filter without its name".into(),
        ));
    };
    let name_len = usize::from(name_len);
    let payload_len = rest.len().checked_sub(name_len).ok_or_else(|| {
        FilterDecodeError(format!(
            "registered filter name of {name_len} bytes in {} bytes",
            rest.len()
        ))
    })?;
    if t.units != payload_len as u64 {
        return Err(FilterDecodeError(format!(
            "registered filter of {payload_len} bytes, trailer says {}",
            t.units
        )));
    }
    let (payload, name) = rest.split_at(payload_len);
    let Ok(name) = std::str::from_utf8(name) else {
        return Err(FilterDecodeError(
            "registered filter name is not UTF-8".into(),
        ));
    };
    let Some(FilterKind::Registered(r)) = registered(name) else {
        return Ok(Filter::Unusable {
            reason: format!("filter family {name:?} is not registered"),
        });
    };
    let family = r.family();
    if t.version != family.version() {
        return Ok(Filter::Unusable {
            reason: format!(
                "{name} filter version {} (this process reads version {})",
                t.version,
                family.version()
            ),
        });
    }
    match catch_unwind(AssertUnwindSafe(|| family.open(payload))) {
        Ok(Ok(Filter::Registered(mut f))) => {
            f.kind = Some(r);
            Ok(Filter::Registered(f))
        }
        Ok(Ok(f @ Filter::Unusable { .. })) => Ok(f),
        // A family may hand back a built-in filter: it still answers as
        // the family the file names.
        Ok(Ok(f)) => Ok(Filter::Registered(RegisteredFilter {
            kind: Some(r),
            filter: Arc::new(f),
        })),
        Ok(Err(e)) => Ok(Filter::Unusable {
            reason: format!("{name} filter does not decode: {e}"),
        }),
        Err(p) => Ok(Filter::Unusable {
            reason: format!("{name} filter decoder panicked: {}", panic_message(&*p)),
        }),
    }
}

/// The built-in families. Each builds and opens through [`FilterFamily`],
/// as a registered one does; only the probe skips the virtual call.
pub(crate) struct Blocked512Family;
pub(crate) struct BloomFamily;
pub(crate) struct RibbonFamily;
pub(crate) struct FuseFamily(pub(crate) fuse::FuseWidth);

/// Splits serialized built-in filter bytes into payload and trailer.
fn builtin_parts(bytes: &[u8]) -> Result<(&[u8], FilterTrailer), FilterDecodeError> {
    let t = FilterTrailer::decode(bytes).ok_or_else(|| {
        FilterDecodeError(format!(
            "filter of {} bytes is shorter than its {FILTER_TRAILER_LEN}-byte trailer",
            bytes.len()
        ))
    })?;
    Ok((&bytes[..bytes.len() - FILTER_TRAILER_LEN], t))
}

impl FilterFamily for Blocked512Family {
    fn name(&self) -> &str {
        "blocked512"
    }
    fn version(&self) -> u8 {
        FILTER_VERSION
    }
    fn model_fpr(&self, bits_per_key: f64, num_probes: u32) -> f64 {
        math::blocked512_fpr(bits_per_key, num_probes)
    }
    fn best_probes(&self, bits_per_key: f64) -> u32 {
        math::blocked512_best_k(bits_per_key)
    }
    fn build(&self, hashes: &[u64], bits_per_key: f64, num_probes: u32) -> Result<Vec<u8>, String> {
        blocked::build(hashes, bits_per_key, num_probes).map_err(|e| e.to_string())
    }
    fn open(&self, bytes: &[u8]) -> Result<Filter, FilterDecodeError> {
        let (payload, t) = builtin_parts(bytes)?;
        blocked::Blocked512Filter::from_parts(payload, &t).map(Filter::Blocked512)
    }
}

impl FilterFamily for BloomFamily {
    fn name(&self) -> &str {
        "bloom"
    }
    fn version(&self) -> u8 {
        FILTER_VERSION
    }
    fn model_fpr(&self, bits_per_key: f64, num_probes: u32) -> f64 {
        math::classic_fpr(bits_per_key, num_probes)
    }
    fn best_probes(&self, bits_per_key: f64) -> u32 {
        math::classic_best_k(bits_per_key)
    }
    fn build(&self, hashes: &[u64], bits_per_key: f64, num_probes: u32) -> Result<Vec<u8>, String> {
        bloom::build(hashes, bits_per_key, num_probes).map_err(|e| e.to_string())
    }
    fn open(&self, bytes: &[u8]) -> Result<Filter, FilterDecodeError> {
        let (payload, t) = builtin_parts(bytes)?;
        bloom::BloomFilter::from_parts(payload, &t).map(Filter::Bloom)
    }
}

impl FilterFamily for RibbonFamily {
    fn name(&self) -> &str {
        "ribbon"
    }
    fn version(&self) -> u8 {
        FILTER_VERSION
    }
    fn model_fpr(&self, bits_per_key: f64, _num_probes: u32) -> f64 {
        math::ribbon_fpr(bits_per_key)
    }
    fn build(
        &self,
        hashes: &[u64],
        bits_per_key: f64,
        _num_probes: u32,
    ) -> Result<Vec<u8>, String> {
        Ok(ribbon::build(hashes, bits_per_key))
    }
    fn open(&self, bytes: &[u8]) -> Result<Filter, FilterDecodeError> {
        let (payload, t) = builtin_parts(bytes)?;
        ribbon::RibbonFilter::from_parts(payload, &t).map(Filter::Ribbon)
    }
}

/// The binary fuse families, one per fingerprint width.
impl FilterFamily for FuseFamily {
    fn name(&self) -> &str {
        match self.0 {
            fuse::FuseWidth::W8 => "fuse8",
            fuse::FuseWidth::W16 => "fuse16",
        }
    }
    fn version(&self) -> u8 {
        FILTER_VERSION
    }
    fn model_fpr(&self, _bits_per_key: f64, _num_probes: u32) -> f64 {
        self.0.fpr()
    }
    fn best_probes(&self, _bits_per_key: f64) -> u32 {
        u32::from(fuse::FUSE_PROBES)
    }
    fn build(&self, hashes: &[u64], _bits: f64, _k: u32) -> Result<Vec<u8>, String> {
        let kind = match self.0 {
            fuse::FuseWidth::W8 => FilterKind::Fuse8,
            fuse::FuseWidth::W16 => FilterKind::Fuse16,
        };
        Ok(fuse::build(hashes, self.0, kind.byte()))
    }
    fn open(&self, bytes: &[u8]) -> Result<Filter, FilterDecodeError> {
        let (payload, t) = builtin_parts(bytes)?;
        let f = fuse::FuseFilter::from_parts(payload, &t)?;
        if f.width() != self.0 {
            return Err(FilterDecodeError(format!(
                "{} filter holds {}-bit fingerprints",
                self.name(),
                f.width().bits()
            )));
        }
        Ok(Filter::Fuse(f))
    }
}

impl KeyFilter for blocked::Blocked512Filter {
    fn may_contain(&self, hash: u64) -> bool {
        blocked::Blocked512Filter::may_contain(self, hash)
    }
    fn prefetch(&self, hash: u64) {
        blocked::Blocked512Filter::prefetch(self, hash)
    }
    fn key_count(&self) -> u64 {
        blocked::Blocked512Filter::key_count(self)
    }
    fn memory_bytes(&self) -> usize {
        blocked::Blocked512Filter::memory_bytes(self)
    }
    fn num_probes(&self) -> u32 {
        blocked::Blocked512Filter::num_probes(self)
    }
    fn predicted_fpr(&self) -> f64 {
        Filter::Blocked512(self.clone()).predicted_fpr()
    }
}

impl KeyFilter for bloom::BloomFilter {
    fn may_contain(&self, hash: u64) -> bool {
        bloom::BloomFilter::may_contain(self, hash)
    }
    fn prefetch(&self, hash: u64) {
        bloom::BloomFilter::prefetch(self, hash)
    }
    fn key_count(&self) -> u64 {
        bloom::BloomFilter::key_count(self)
    }
    fn memory_bytes(&self) -> usize {
        bloom::BloomFilter::memory_bytes(self)
    }
    fn num_probes(&self) -> u32 {
        bloom::BloomFilter::num_probes(self)
    }
    fn predicted_fpr(&self) -> f64 {
        Filter::Bloom(self.clone()).predicted_fpr()
    }
}

impl KeyFilter for ribbon::RibbonFilter {
    fn may_contain(&self, hash: u64) -> bool {
        ribbon::RibbonFilter::may_contain(self, hash)
    }
    fn prefetch(&self, hash: u64) {
        ribbon::RibbonFilter::prefetch(self, hash)
    }
    fn key_count(&self) -> u64 {
        ribbon::RibbonFilter::key_count(self)
    }
    fn memory_bytes(&self) -> usize {
        ribbon::RibbonFilter::memory_bytes(self)
    }
    fn predicted_fpr(&self) -> f64 {
        ribbon::RibbonFilter::predicted_fpr(self)
    }
}

/// A registered family's opened filter, as [`Filter::Registered`] holds it
/// (made by [`Filter::registered`] in a family's [`FilterFamily::open`]).
#[derive(Clone)]
pub struct RegisteredFilter {
    /// The family, set when the store opens the filter by the name in the
    /// file.
    pub(crate) kind: Option<Registered>,
    pub(crate) filter: Arc<dyn KeyFilter>,
}

impl RegisteredFilter {
    /// The family that opened it (`None` until the store has opened it by
    /// its name).
    pub fn family(&self) -> Option<&'static dyn FilterFamily> {
        self.kind.map(Registered::family)
    }

    /// The opened filter.
    pub fn filter(&self) -> &dyn KeyFilter {
        &*self.filter
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::filter::test_vectors::fixed_hashes;
    use crate::filter::{FilterPolicy, key_hash};

    /// A family that builds blocked512 filters under another name, and can
    /// be told to misbehave.
    struct Wrapped {
        name: &'static str,
        version: u8,
        fault: Fault,
    }

    #[derive(Clone, Copy, PartialEq)]
    enum Fault {
        None,
        BuildPanics,
        BuildFails,
        BuildsGarbage,
        LosesKeys,
        OpenPanics,
    }

    fn family(name: &'static str, fault: Fault) -> Wrapped {
        Wrapped {
            name,
            version: 3,
            fault,
        }
    }

    impl FilterFamily for Wrapped {
        fn name(&self) -> &str {
            self.name
        }
        fn version(&self) -> u8 {
            self.version
        }
        fn model_fpr(&self, bits_per_key: f64, num_probes: u32) -> f64 {
            Blocked512Family.model_fpr(bits_per_key, num_probes)
        }
        fn best_probes(&self, bits_per_key: f64) -> u32 {
            Blocked512Family.best_probes(bits_per_key)
        }
        fn build(&self, hashes: &[u64], bits: f64, k: u32) -> Result<Vec<u8>, String> {
            match self.fault {
                Fault::BuildPanics => panic!("the family's own bug"),
                Fault::BuildFails => Err("out of seeds".into()),
                Fault::BuildsGarbage => Ok(vec![1, 2, 3]),
                // A filter of other keys: it rejects nearly all of these.
                Fault::LosesKeys => Blocked512Family.build(&[1, 2, 3], bits, k),
                _ => Blocked512Family.build(hashes, bits, k),
            }
        }
        fn open(&self, bytes: &[u8]) -> Result<Filter, FilterDecodeError> {
            if self.fault == Fault::OpenPanics && bytes.len() > 100 {
                panic!("the family's decoder bug");
            }
            Blocked512Family.open(bytes)
        }
    }

    fn kind(name: &'static str, fault: Fault) -> FilterKind {
        register_filter(family(name, fault)).unwrap()
    }

    #[test]
    fn a_registered_family_builds_opens_and_probes_under_its_name() {
        let k = kind("t_wrapped", Fault::None);
        assert_eq!(FilterKind::from_name("t_wrapped"), Some(k));
        assert!(filter_families().contains(&k));
        assert_eq!(k.name(), "t_wrapped");
        assert_eq!(k.byte(), KIND_REGISTERED);
        let keys = fixed_hashes(1, 5000);
        let p = FilterPolicy::new(k, 10.0);
        assert_eq!(p.num_probes(), 6, "the family's own best k");
        let bytes = p.build(&keys).unwrap();
        let f = Filter::open(&bytes).unwrap();
        assert_eq!(f.kind(), Some(k), "{f:?}");
        assert_eq!(f.key_count(), 5000);
        assert!(keys.iter().all(|&h| f.may_contain(h)));
        // The same answers as the built-in it wraps, through the batch path too.
        let plain = Filter::open(&FilterPolicy::blocked512(10.0).build(&keys).unwrap()).unwrap();
        let absent = fixed_hashes(2, 20_000);
        let mut out = vec![false; absent.len()];
        f.may_contain_batch(&absent, &mut out);
        let want: Vec<bool> = absent.iter().map(|&h| plain.may_contain(h)).collect();
        assert_eq!(out, want);
        assert_eq!(f.memory_bytes(), plain.memory_bytes());
        assert_eq!(f.predicted_fpr(), plain.predicted_fpr());
        // The spec names it like a built-in.
        assert_eq!(
            crate::filter::parse_filter_spec("t_wrapped:10").unwrap(),
            Some(p)
        );
    }

    #[test]
    fn names_and_versions_are_checked_at_registration() {
        for bad in ["", "Blocked", "has space", "x-y", &"n".repeat(65)] {
            let name: &'static str = Box::leak(bad.to_string().into_boxed_str());
            let e = register_filter(family(name, Fault::None)).unwrap_err();
            assert!(e.to_string().contains("a-z, 0-9 and _"), "{bad:?}: {e}");
        }
        for builtin in ["blocked512", "bloom", "ribbon"] {
            let e = register_filter(family(builtin, Fault::None)).unwrap_err();
            assert!(e.to_string().contains("built-in"), "{e}");
        }
        kind("t_twice", Fault::None);
        let e = register_filter(family("t_twice", Fault::None)).unwrap_err();
        assert!(e.to_string().contains("already registered"), "{e}");
        for version in [0, 255] {
            let mut f = family("t_version", Fault::None);
            f.version = version;
            assert!(register_filter(f).is_err(), "version {version}");
        }
    }

    #[test]
    fn a_family_that_fails_or_lies_while_building_is_an_error_naming_it() {
        let keys = fixed_hashes(3, 2000);
        for (name, fault, says) in [
            ("t_panics", Fault::BuildPanics, "build panicked: "),
            ("t_fails", Fault::BuildFails, "build failed: out of seeds"),
            ("t_garbage", Fault::BuildsGarbage, "built bytes do not open"),
            (
                "t_loses",
                Fault::LosesKeys,
                "rejects a key it was built from",
            ),
        ] {
            let p = FilterPolicy::new(kind(name, fault), 10.0);
            match p.build(&keys) {
                Err(crate::Error::Filter { family, what }) => {
                    assert_eq!(family, name);
                    assert!(what.contains(says), "{name}: {what}");
                }
                other => panic!("{name}: {other:?}"),
            }
        }
    }

    #[test]
    fn filters_this_process_cannot_read_are_unusable_never_wrong() {
        let keys = fixed_hashes(4, 1000);
        let k = kind("t_reader", Fault::None);
        let bytes = FilterPolicy::new(k, 10.0).build(&keys).unwrap();
        // Renamed to a family nobody registered (same length).
        let mut other = bytes.clone();
        let at = other.len() - FILTER_TRAILER_LEN - 1 - "t_reader".len();
        other[at..at + 8].copy_from_slice(b"t_nobody");
        let reason = |f: Filter| match f {
            Filter::Unusable { reason } => reason,
            f => panic!("usable: {f:?}"),
        };
        let r = reason(Filter::open(&other).unwrap());
        assert_eq!(r, "filter family \"t_nobody\" is not registered");
        // Written by another version of the family.
        let mut newer = bytes.clone();
        let v = newer.len() - 2;
        newer[v] = 4;
        let r = reason(Filter::open(&newer).unwrap());
        assert!(r.contains("version 4"), "{r}");
        // A decoder that panics.
        let k = kind("t_open_panics", Fault::OpenPanics);
        let bytes = FilterPolicy::new(k, 10.0).build(&keys);
        // Its build checks what it built by opening it: the panic shows there.
        let e = bytes.unwrap_err();
        assert!(e.to_string().contains("do not open"), "{e}");
    }

    /// Every byte of a registered filter flipped, and every truncation:
    /// opening never panics, and whatever opens finds every key it holds
    /// or is unusable.
    #[test]
    fn damaged_registered_filters_never_panic() {
        let keys: Vec<u64> = (0..200u32).map(|i| key_hash(&i.to_le_bytes())).collect();
        let k = kind("t_damaged", Fault::None);
        let bytes = FilterPolicy::new(k, 10.0).build(&keys).unwrap();
        for i in 0..bytes.len() {
            for bit in [0x01u8, 0x80] {
                let mut b = bytes.clone();
                b[i] ^= bit;
                let _ =
                    Filter::open(&b).map(|f| keys.iter().filter(|&&h| f.may_contain(h)).count());
            }
        }
        for len in 0..bytes.len() {
            let _ = Filter::open(&bytes[..len]);
        }
    }
}

#[cfg(test)]
mod fuse_tests {
    use crate::filter::test_vectors::fixed_hashes;
    use crate::filter::{Filter, FilterKind, FilterPolicy, filter_spec, parse_filter_spec};

    #[test]
    fn fuse_policies_build_open_and_read_back_from_their_spec() {
        for (kind, bits, fpr) in [
            (FilterKind::Fuse8, 9.0, 1.0 / 256.0),
            (FilterKind::Fuse16, 18.0, 1.0 / 65536.0),
        ] {
            let p = FilterPolicy::new(kind, 3.0);
            assert_eq!(p.bits_per_key(), bits, "{kind}: its size is its own");
            assert_eq!(p.num_probes(), 3);
            assert_eq!(p.with_probes(7).num_probes(), 3);
            assert_eq!(p.predicted_fpr(), fpr);
            assert_eq!(parse_filter_spec(kind.name()).unwrap(), Some(p));
            assert_eq!(parse_filter_spec(&filter_spec(Some(&p))).unwrap(), Some(p));
            assert_eq!(FilterPolicy::for_fpr(kind, 0.01).unwrap(), p);
            assert!(FilterPolicy::for_fpr(kind, fpr / 2.0).is_err());
            let keys = fixed_hashes(9, 10_000);
            let f = Filter::open(&p.build(&keys).unwrap()).unwrap();
            assert!(matches!(f, Filter::Fuse(_)), "{f:?}");
            assert_eq!(f.kind(), Some(kind));
            assert_eq!(f.key_count(), 10_000);
            assert!(keys.iter().all(|&h| f.may_contain(h)));
            assert_eq!(f.predicted_fpr(), fpr);
            // A file of 10^4 keys spends more than the asymptote.
            assert!(
                f.bits_per_key() > bits * 1.1,
                "{kind}: {}",
                f.bits_per_key()
            );
        }
    }

    #[test]
    fn a_fuse_filter_under_the_other_width_name_is_corruption() {
        let keys = fixed_hashes(10, 100);
        let mut bytes = FilterPolicy::new(FilterKind::Fuse8, 0.0)
            .build(&keys)
            .unwrap();
        let last = bytes.len() - 1;
        bytes[last] = FilterKind::Fuse16.byte();
        let e = Filter::open(&bytes).unwrap_err();
        assert!(e.0.contains("fuse16 filter holds 8-bit"), "{e}");
    }
}
