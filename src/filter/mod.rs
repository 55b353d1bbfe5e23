//! Filter policies: how a file's filter block is built, stored and probed.
//!
//! It is one file because it is where the engine meets every filter kind: the
//! policy that builds a filter, the trailer that names its kind, and the
//! `Filter` enum that opens and probes each kind; the test vectors at the end
//! are 4% of it.
//!
//! A [`FilterPolicy`] is a value (kind + bits per key + probes) that builds the
//! filter of one SSTable from the 64-bit hashes of that file's *user keys*
//! ([`key_hash`]). The bytes it produces end with a self-describing trailer
//! (see `docs/format.md`), so [`Filter::open`] needs nothing but those bytes: a
//! file built with any policy, any bits/key, stays readable by any later
//! configuration. A filter whose kind, version or hash function this build
//! does not know opens as [`Filter::Unusable`]: it answers "may contain" for
//! every key (never a false negative) and reports itself unusable so the
//! engine can count it.

pub mod blocked;
pub mod bloom;
pub mod elias_fano;
pub mod family;
pub mod fuse;
pub mod math;
pub mod partitioned;
pub mod prefix;
pub mod range;
pub mod ribbon;
mod spec;

use std::fmt;

pub use blocked::Blocked512Filter;
pub use bloom::BloomFilter;
pub use family::{FilterFamily, KeyFilter, RegisteredFilter, filter_families, register_filter};
pub use fuse::{FuseFilter, FuseWidth};
pub use partitioned::PartitionedFilter;
pub use prefix::{PrefixExtractor, PrefixFilter};
pub use range::{RangeFilter, key_point};
pub use ribbon::RibbonFilter;
pub use spec::{filter_spec, parse_filter_spec, unregistered_family};

/// The hash every filter is built from and probed with: XXH3-64 (seed 0) of the
/// user key. The store computes it once per lookup and reuses it for every file.
#[inline]
pub fn key_hash(key: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(key)
}

/// Keys per group of the blocked filter's batch probes
/// ([`Blocked512Filter::may_contain_batch`]): each group's cache lines are
/// prefetched before any is tested. 64 kept more misses in flight than 16 or
/// 32 at 10^7 keys and cost nothing at 10^6 (docs/filters.md).
pub const BATCH_GROUP: usize = 64;

/// Hints the CPU to load the cache line holding `*x` (no effect elsewhere).
#[inline(always)]
pub(crate) fn prefetch_read<T>(x: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: prefetch is a hint; it never faults, whatever the address.
    unsafe {
        core::arch::x86_64::_mm_prefetch(
            (x as *const T).cast::<i8>(),
            core::arch::x86_64::_MM_HINT_T0,
        );
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = x;
}

/// Length in bytes of the trailer that ends every serialized filter.
pub const FILTER_TRAILER_LEN: usize = 20;
/// Current version of both filter encodings.
pub const FILTER_VERSION: u8 = 1;
/// Hash-function id stored in the trailer: 1 = XXH3-64 with seed 0.
pub const HASH_XXH3_64: u8 = 1;

/// A filter family: one of the built-ins, or one registered at run time
/// ([`register_filter`]). Every family builds, opens and models its filters
/// through the [`FilterFamily`] interface ([`Self::family`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FilterKind {
    /// 512-bit cache-line blocked Bloom filter (RocksDB's FastLocalBloom
    /// scheme). Kind byte 1.
    Blocked512,
    /// Classic whole-array Bloom filter with 64-bit double hashing
    /// (baseline). Kind byte 2.
    Bloom,
    /// Standard Ribbon filter with 128-bit coefficient rows: a static
    /// filter about 30% smaller than a Bloom filter at the same FPR
    /// ([`ribbon`]). Its probe count is always 1. Kind byte 3.
    Ribbon,
    /// Binary fuse filter with 8-bit fingerprints ([`fuse`]): FPR 2^-8
    /// whatever the bits, about 9.0 bits per key in a file of 10^6 keys
    /// and more in smaller ones (10.2 at 10^4). Kind byte 4.
    Fuse8,
    /// Binary fuse filter with 16-bit fingerprints: FPR 2^-16, about 18.0
    /// bits per key at 10^6 keys. Kind byte 5.
    Fuse16,
    /// A family registered in this process ([`register_filter`]). Kind byte
    /// [`family::KIND_REGISTERED`], the family named in the filter's bytes.
    Registered(family::Registered),
}

impl FilterKind {
    /// The built-in families.
    pub const ALL: [FilterKind; 5] = [
        FilterKind::Blocked512,
        FilterKind::Bloom,
        FilterKind::Ribbon,
        FilterKind::Fuse8,
        FilterKind::Fuse16,
    ];

    /// The built-in families whose size is set by the bits per key (a fuse
    /// filter's is set by its fingerprint width and its key count).
    pub const SIZED_BY_BITS: [FilterKind; 3] = [
        FilterKind::Blocked512,
        FilterKind::Bloom,
        FilterKind::Ribbon,
    ];

    /// The fingerprint width of a fuse kind.
    pub fn fuse_width(self) -> Option<FuseWidth> {
        match self {
            FilterKind::Fuse8 => Some(FuseWidth::W8),
            FilterKind::Fuse16 => Some(FuseWidth::W16),
            _ => None,
        }
    }

    /// The family's implementation of the filter interface.
    pub fn family(self) -> &'static dyn FilterFamily {
        match self {
            FilterKind::Blocked512 => &family::Blocked512Family,
            FilterKind::Bloom => &family::BloomFamily,
            FilterKind::Ribbon => &family::RibbonFamily,
            FilterKind::Fuse8 => &family::FuseFamily(FuseWidth::W8),
            FilterKind::Fuse16 => &family::FuseFamily(FuseWidth::W16),
            FilterKind::Registered(r) => r.family(),
        }
    }

    /// The stable name written to disk (metaindex key `filter.<name>` and the
    /// properties block).
    pub fn name(self) -> &'static str {
        self.family().name()
    }

    /// The kind named `name`: a built-in, or a family registered in this
    /// process.
    pub fn from_name(name: &str) -> Option<Self> {
        FilterKind::ALL
            .into_iter()
            .find(|k| k.name() == name)
            .or_else(|| family::registered(name))
    }

    /// The built-in kind for an on-disk kind byte.
    pub fn from_byte(b: u8) -> Option<Self> {
        match b {
            1 => Some(FilterKind::Blocked512),
            2 => Some(FilterKind::Bloom),
            3 => Some(FilterKind::Ribbon),
            4 => Some(FilterKind::Fuse8),
            5 => Some(FilterKind::Fuse16),
            _ => None,
        }
    }

    /// The on-disk kind byte of the trailer.
    pub fn byte(self) -> u8 {
        match self {
            FilterKind::Blocked512 => 1,
            FilterKind::Bloom => 2,
            FilterKind::Ribbon => 3,
            FilterKind::Fuse8 => 4,
            FilterKind::Fuse16 => 5,
            FilterKind::Registered(_) => family::KIND_REGISTERED,
        }
    }

    /// The exact false-positive model of this kind (see [`math`]). Ribbon
    /// ignores `num_probes` ([`math::ribbon_fpr`]).
    pub fn model_fpr(self, bits_per_key: f64, num_probes: u32) -> f64 {
        self.family().model_fpr(bits_per_key, num_probes)
    }

    /// The least FPR the model of this kind gives a filter: its FPR at
    /// [`MAX_BITS_PER_KEY`] bits per key with the best probe count. The
    /// smallest target [`FilterPolicy::for_fpr`] accepts.
    pub fn min_fpr(self) -> f64 {
        math::best_fpr(self, MAX_BITS_PER_KEY)
    }

    /// The number of probes that minimises this kind's modelled FPR at
    /// `bits_per_key` (always 1 for Ribbon: one 128-slot window per key),
    /// within 1..=[`MAX_PROBES`].
    pub fn best_probes(self, bits_per_key: f64) -> u32 {
        self.family().best_probes(bits_per_key).clamp(1, MAX_PROBES)
    }
}

impl fmt::Display for FilterKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// How to build one file's filter: a kind, a memory budget in bits per key
/// (fractional values such as 9.5 work) and a probe count.
///
/// For [`FilterKind::Ribbon`] the probe count is always 1 (a key's equation
/// covers one window of 128 slots; there is no k to choose) and
/// [`Self::with_probes`] leaves it at 1; the bits per key alone set the
/// result columns ([`ribbon::result_bits_for`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FilterPolicy {
    kind: FilterKind,
    bits_per_key: f64,
    num_probes: u32,
}

/// Smallest and largest accepted bits per key.
pub const MIN_BITS_PER_KEY: f64 = 0.5;
/// See [`MIN_BITS_PER_KEY`].
pub const MAX_BITS_PER_KEY: f64 = 100.0;
/// Largest accepted probe count (k) of either kind; the smallest is 1.
///
/// The range is LevelDB's (`bloom.cc` clamps k to 1..=30). Every filter this
/// crate builds or opens has k in `1..=MAX_PROBES`: [`FilterPolicy`] clamps
/// to it, [`Blocked512Filter::from_hashes`], [`BloomFilter::from_hashes`] and
/// the `build` functions reject anything else with
/// [`Error::InvalidArgument`](crate::Error::InvalidArgument), and
/// [`Filter::open`] rejects a stored k outside it. The blocked probe relies on
/// it (its AVX2 table of multipliers has 32 entries), and the trailer stores
/// k in one byte.
pub const MAX_PROBES: u32 = 30;

/// Checks the parameters of the public filter constructors: `num_probes` in
/// `1..=`[`MAX_PROBES`] and `bits_per_key` in
/// [`MIN_BITS_PER_KEY`]`..=`[`MAX_BITS_PER_KEY`] (so not NaN or infinite).
fn check_params(kind: FilterKind, bits_per_key: f64, num_probes: u32) -> crate::Result<()> {
    if !(1..=MAX_PROBES).contains(&num_probes) {
        return Err(crate::Error::invalid(format!(
            "{kind} filter: {num_probes} probes per key, must be 1..={MAX_PROBES}"
        )));
    }
    if !(MIN_BITS_PER_KEY..=MAX_BITS_PER_KEY).contains(&bits_per_key) {
        return Err(crate::Error::invalid(format!(
            "{kind} filter: {bits_per_key} bits per key, must be \
             {MIN_BITS_PER_KEY}..={MAX_BITS_PER_KEY}"
        )));
    }
    Ok(())
}

impl FilterPolicy {
    /// A policy of `kind` at `bits_per_key`, with the probe count that minimises
    /// that kind's own FPR model. Bits per key are clamped to
    /// [`MIN_BITS_PER_KEY`]..=[`MAX_BITS_PER_KEY`] (NaN counts as
    /// [`MIN_BITS_PER_KEY`], infinity as [`MAX_BITS_PER_KEY`]), so every
    /// policy can build its filters.
    pub fn new(kind: FilterKind, bits_per_key: f64) -> Self {
        // A fuse filter's size is its own: the policy records what a file of
        // many keys spends (docs/filters.md).
        let bits_per_key = match kind.fuse_width() {
            Some(w) => fuse::ASYMPTOTIC_SIZE_FACTOR * f64::from(w.bits()),
            None => clamp_bits(bits_per_key),
        };
        FilterPolicy {
            kind,
            bits_per_key,
            num_probes: kind.best_probes(bits_per_key),
        }
    }

    /// The default policy: 512-bit blocked Bloom at `bits_per_key`.
    pub fn blocked512(bits_per_key: f64) -> Self {
        Self::new(FilterKind::Blocked512, bits_per_key)
    }

    /// The classic Bloom baseline at `bits_per_key` (k ≈ 0.69 · bits).
    pub fn bloom(bits_per_key: f64) -> Self {
        Self::new(FilterKind::Bloom, bits_per_key)
    }

    /// The Ribbon filter at `bits_per_key` (FPR ≈ 2^-(bits / 1.05)).
    pub fn ribbon(bits_per_key: f64) -> Self {
        Self::new(FilterKind::Ribbon, bits_per_key)
    }

    /// The least memory of `kind` whose modelled FPR is at most `fpr` (like
    /// Guava's `create(n, fpp)`, but with this kind's own model). Blocked filters
    /// need more bits than the classic formula suggests, and more still at low
    /// FPRs. Targets that [`MIN_BITS_PER_KEY`] already meets get that minimum.
    ///
    /// ```
    /// use bloomlsm::{FilterKind, FilterPolicy};
    /// let p = FilterPolicy::for_fpr(FilterKind::Blocked512, 0.01)?;
    /// assert!(p.predicted_fpr() <= 0.01);
    /// assert!(FilterPolicy::for_fpr(FilterKind::Blocked512, 1e-30).is_err());
    /// # Ok::<(), bloomlsm::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument), naming the
    /// range, for an `fpr` that no filter of `kind` can be sized for: NaN, at
    /// or below 0, at or above 1, or below [`FilterKind::min_fpr`] (what the
    /// largest filter, [`MAX_BITS_PER_KEY`] bits per key, reaches).
    pub fn for_fpr(kind: FilterKind, fpr: f64) -> crate::Result<Self> {
        let min = kind.min_fpr();
        // NaN fails both comparisons: refused too.
        if !(fpr >= min && fpr < 1.0) {
            let shown = if fpr != 0.0 && fpr.abs() < 1e-4 {
                format!("{fpr:e}")
            } else {
                format!("{fpr}")
            };
            return Err(crate::Error::invalid(format!(
                "{kind} filter: an FPR of {shown} is out of range: it must be at least \
                 {min:.3e} (what the largest filter, {MAX_BITS_PER_KEY} bits per key, \
                 reaches) and below 1"
            )));
        }
        Ok(Self::new(kind, math::bits_per_key_for_fpr(kind, fpr)))
    }

    /// Overrides the probe count, e.g. to study k. It is clamped to
    /// 1..=[`MAX_PROBES`], as LevelDB clamps its k: 0 gives 1, anything above
    /// [`MAX_PROBES`] gives [`MAX_PROBES`]. A Ribbon policy keeps k = 1.
    pub fn with_probes(mut self, num_probes: u32) -> Self {
        self.num_probes = match self.kind {
            FilterKind::Ribbon => 1,
            FilterKind::Fuse8 | FilterKind::Fuse16 => u32::from(fuse::FUSE_PROBES),
            _ => num_probes.clamp(1, MAX_PROBES),
        };
        self
    }

    /// The same kind at a different memory budget (probe count re-chosen).
    pub fn with_bits_per_key(self, bits_per_key: f64) -> Self {
        Self::new(self.kind, bits_per_key)
    }

    /// The filter family.
    pub fn kind(&self) -> FilterKind {
        self.kind
    }

    /// The stable on-disk name of the family.
    pub fn name(&self) -> &'static str {
        self.kind.name()
    }

    /// Requested memory budget in bits per key.
    pub fn bits_per_key(&self) -> f64 {
        self.bits_per_key
    }

    /// Number of probes per key (k).
    pub fn num_probes(&self) -> u32 {
        self.num_probes
    }

    /// The modelled false-positive rate of filters this policy builds.
    pub fn predicted_fpr(&self) -> f64 {
        self.kind.model_fpr(self.bits_per_key, self.num_probes)
    }

    /// Builds a serialized filter (payload + trailer) over `hashes`, the
    /// [`key_hash`] of each key. Duplicate hashes are harmless.
    ///
    /// # Errors
    ///
    /// Never for a built-in family. For a registered one,
    /// [`Error::Filter`](crate::Error::Filter) naming it if its build fails
    /// or panics, or if what it built does not open or rejects a key it was
    /// built from.
    pub fn build(&self, hashes: &[u64]) -> crate::Result<Vec<u8>> {
        match self.kind {
            FilterKind::Registered(r) => {
                family::build_registered(r.family(), hashes, self.bits_per_key, self.num_probes)
            }
            // Every constructor of a policy clamps both parameters into the
            // ranges the built-in builds accept.
            kind => Ok(kind
                .family()
                .build(hashes, self.bits_per_key, self.num_probes)
                .expect("a FilterPolicy's parameters are in range")),
        }
    }
}

impl Default for FilterPolicy {
    /// `blocked512` at 10 bits per key (k = 6, modelled FPR 0.966%).
    fn default() -> Self {
        Self::blocked512(10.0)
    }
}

impl fmt::Display for FilterPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}({} bits/key, k={})",
            self.name(),
            self.bits_per_key,
            self.num_probes
        )
    }
}

fn clamp_bits(bits: f64) -> f64 {
    if bits.is_nan() {
        return MIN_BITS_PER_KEY;
    }
    bits.clamp(MIN_BITS_PER_KEY, MAX_BITS_PER_KEY)
}

/// The decoded trailer of a serialized filter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FilterTrailer {
    /// Number of 64-byte lines (blocked512), of bits (bloom) or of 128-slot
    /// blocks (ribbon).
    pub units: u64,
    /// Number of hashes the filter was built from.
    pub key_count: u64,
    /// Probes per key (1 for ribbon).
    pub num_probes: u8,
    /// Hash-function id ([`HASH_XXH3_64`]).
    pub hash: u8,
    /// Encoding version ([`FILTER_VERSION`]).
    pub version: u8,
    /// Kind byte ([`FilterKind`] discriminant).
    pub kind: u8,
}

impl FilterTrailer {
    /// Appends the 20-byte little-endian encoding to `out`.
    pub fn encode_to(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.units.to_le_bytes());
        out.extend_from_slice(&self.key_count.to_le_bytes());
        out.extend_from_slice(&[self.num_probes, self.hash, self.version, self.kind]);
    }

    /// Decodes the trailer at the end of `bytes`; `None` if too short.
    pub fn decode(bytes: &[u8]) -> Option<Self> {
        let t = bytes.get(bytes.len().checked_sub(FILTER_TRAILER_LEN)?..)?;
        Some(FilterTrailer {
            units: u64::from_le_bytes(t[0..8].try_into().ok()?),
            key_count: u64::from_le_bytes(t[8..16].try_into().ok()?),
            num_probes: t[16],
            hash: t[17],
            version: t[18],
            kind: t[19],
        })
    }
}

/// A serialized filter that is structurally invalid although its kind and
/// version are known (e.g. a payload length that disagrees with the trailer).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FilterDecodeError(pub String);

impl fmt::Display for FilterDecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// An opened filter, ready to probe. Dispatch is a `match`, not a virtual call,
/// so the hot path inlines. Clones share the filter's bits (cheap).
#[derive(Clone)]
pub enum Filter {
    /// A 512-bit blocked Bloom filter.
    Blocked512(Blocked512Filter),
    /// A classic Bloom filter.
    Bloom(BloomFilter),
    /// A Ribbon filter.
    Ribbon(RibbonFilter),
    /// A binary fuse filter (8- or 16-bit fingerprints).
    Fuse(FuseFilter),
    /// Partitions of one filter, each a filter of one of the kinds above,
    /// picked by key hash ([`partitioned::partition_of`]).
    Partitioned(PartitionedFilter),
    /// A filter of a registered family, probed through its [`KeyFilter`].
    Registered(RegisteredFilter),
    /// A filter this build cannot read: answers "may contain" for every key.
    Unusable {
        /// Why, e.g. `"unknown filter kind 7"`.
        reason: String,
    },
}

impl fmt::Debug for Filter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Filter::Blocked512(b) => f
                .debug_struct("Blocked512")
                .field("lines", &b.num_lines())
                .field("keys", &b.key_count())
                .field("k", &b.num_probes())
                .finish(),
            Filter::Bloom(b) => f
                .debug_struct("Bloom")
                .field("bits", &b.num_bits())
                .field("keys", &b.key_count())
                .field("k", &b.num_probes())
                .finish(),
            Filter::Ribbon(r) => f
                .debug_struct("Ribbon")
                .field("blocks", &r.num_blocks())
                .field("keys", &r.key_count())
                .field("lower_columns", &r.lower_columns())
                .field("upper_start_block", &r.upper_start_block())
                .field("seed", &r.seed())
                .finish(),
            Filter::Fuse(x) => fmt::Debug::fmt(x, f),
            Filter::Partitioned(p) => f
                .debug_struct("Partitioned")
                .field("kind", &p.kind())
                .field("partitions", &p.partitions().len())
                .field("keys", &p.key_count())
                .finish(),
            Filter::Registered(r) => f
                .debug_struct("Registered")
                .field("family", &r.family().map(|f| f.name()))
                .field("keys", &r.filter().key_count())
                .finish(),
            Filter::Unusable { reason } => {
                f.debug_struct("Unusable").field("reason", reason).finish()
            }
        }
    }
}

impl Filter {
    /// Opens serialized filter bytes (payload + trailer). Unknown kind, version
    /// or hash function gives `Ok(Filter::Unusable)`; a known kind whose sizes
    /// do not add up, or whose stored k is outside 1..=[`MAX_PROBES`], gives
    /// an error (the table reader reports it as corruption). The payload is copied into 64-byte-aligned
    /// memory so that one blocked probe touches exactly one cache line.
    pub fn open(bytes: &[u8]) -> Result<Filter, FilterDecodeError> {
        let t = FilterTrailer::decode(bytes).ok_or_else(|| {
            FilterDecodeError(format!(
                "filter of {} bytes is shorter than its {FILTER_TRAILER_LEN}-byte trailer",
                bytes.len()
            ))
        })?;
        if t.kind == family::KIND_REGISTERED {
            if t.hash != HASH_XXH3_64 {
                return Ok(Filter::Unusable {
                    reason: format!("registered filter uses unknown hash function {}", t.hash),
                });
            }
            return family::open_registered(bytes, &t);
        }
        let Some(kind) = FilterKind::from_byte(t.kind) else {
            return Ok(Filter::Unusable {
                reason: format!("unknown filter kind {}", t.kind),
            });
        };
        if t.version != FILTER_VERSION {
            return Ok(Filter::Unusable {
                reason: format!("{kind} filter version {} is not supported", t.version),
            });
        }
        if t.hash != HASH_XXH3_64 {
            return Ok(Filter::Unusable {
                reason: format!("{kind} filter uses unknown hash function {}", t.hash),
            });
        }
        if t.num_probes == 0 || u32::from(t.num_probes) > MAX_PROBES {
            return Err(FilterDecodeError(format!(
                "{kind} filter has {} probes (1..={MAX_PROBES})",
                t.num_probes
            )));
        }
        kind.family().open(bytes)
    }

    /// Wraps a registered family's opened filter: what its
    /// [`FilterFamily::open`] returns.
    pub fn registered(filter: impl KeyFilter) -> Filter {
        Filter::Registered(RegisteredFilter {
            kind: None,
            filter: std::sync::Arc::new(filter),
        })
    }

    /// False only if the key whose [`key_hash`] is `hash` was certainly not in
    /// the set the filter was built from.
    #[inline]
    pub fn may_contain(&self, hash: u64) -> bool {
        match self {
            Filter::Blocked512(f) => f.may_contain(hash),
            Filter::Bloom(f) => f.may_contain(hash),
            Filter::Ribbon(f) => f.may_contain(hash),
            Filter::Fuse(f) => f.may_contain(hash),
            Filter::Partitioned(f) => f.may_contain(hash),
            Filter::Registered(f) => f.filter.may_contain(hash),
            Filter::Unusable { .. } => true,
        }
    }

    /// Starts loading the memory a [`Self::may_contain`] of `hash` will read,
    /// and returns at once. A lookup that will probe several filters calls
    /// this for each first, so their cache misses overlap instead of
    /// following one another.
    #[inline]
    pub fn prefetch(&self, hash: u64) {
        match self {
            Filter::Blocked512(f) => f.prefetch(hash),
            Filter::Bloom(f) => f.prefetch(hash),
            Filter::Ribbon(f) => f.prefetch(hash),
            Filter::Fuse(f) => f.prefetch(hash),
            Filter::Partitioned(f) => f.prefetch(hash),
            Filter::Registered(f) => f.filter.prefetch(hash),
            Filter::Unusable { .. } => {}
        }
    }

    /// Probes many hashes at once; `out[i]` receives `may_contain(hashes[i])`.
    /// Faster per key than one call each: a group's cache misses overlap.
    pub fn may_contain_batch(&self, hashes: &[u64], out: &mut [bool]) {
        match self {
            Filter::Blocked512(f) => f.may_contain_batch(hashes, out),
            Filter::Bloom(f) => f.may_contain_batch(hashes, out),
            Filter::Ribbon(f) => f.may_contain_batch(hashes, out),
            Filter::Fuse(f) => f.may_contain_batch(hashes, out),
            Filter::Partitioned(_) | Filter::Registered(_) => {
                assert_eq!(hashes.len(), out.len(), "one output per hash");
                for (hs, os) in hashes.chunks(BATCH_GROUP).zip(out.chunks_mut(BATCH_GROUP)) {
                    hs.iter().for_each(|&h| self.prefetch(h));
                    for (o, &h) in os.iter_mut().zip(hs) {
                        *o = self.may_contain(h);
                    }
                }
            }
            Filter::Unusable { .. } => {
                assert_eq!(hashes.len(), out.len(), "one output per hash");
                out.fill(true)
            }
        }
    }

    /// [`Self::may_contain_batch`] for keys, hashed with [`key_hash`] a group
    /// at a time.
    pub fn may_contain_keys<K: AsRef<[u8]>>(&self, keys: &[K], out: &mut [bool]) {
        assert_eq!(keys.len(), out.len(), "one output per key");
        match self {
            Filter::Blocked512(f) => f.may_contain_keys(keys, out),
            Filter::Bloom(_)
            | Filter::Ribbon(_)
            | Filter::Fuse(_)
            | Filter::Partitioned(_)
            | Filter::Registered(_) => {
                let mut group = [0u64; BATCH_GROUP];
                for (ks, os) in keys.chunks(BATCH_GROUP).zip(out.chunks_mut(BATCH_GROUP)) {
                    let hs = &mut group[..ks.len()];
                    for (h, k) in hs.iter_mut().zip(ks) {
                        *h = key_hash(k.as_ref());
                    }
                    self.may_contain_batch(hs, os);
                }
            }
            Filter::Unusable { .. } => out.fill(true),
        }
    }

    /// False for [`Filter::Unusable`].
    pub fn is_usable(&self) -> bool {
        !matches!(self, Filter::Unusable { .. })
    }

    /// The kind, if usable.
    pub fn kind(&self) -> Option<FilterKind> {
        match self {
            Filter::Blocked512(_) => Some(FilterKind::Blocked512),
            Filter::Bloom(_) => Some(FilterKind::Bloom),
            Filter::Ribbon(_) => Some(FilterKind::Ribbon),
            Filter::Fuse(f) => Some(match f.width() {
                FuseWidth::W8 => FilterKind::Fuse8,
                FuseWidth::W16 => FilterKind::Fuse16,
            }),
            Filter::Partitioned(f) => f.kind(),
            Filter::Registered(f) => f.kind.map(FilterKind::Registered),
            Filter::Unusable { .. } => None,
        }
    }

    /// Keys (hashes) the filter was built from.
    pub fn key_count(&self) -> u64 {
        match self {
            Filter::Blocked512(f) => f.key_count(),
            Filter::Bloom(f) => f.key_count(),
            Filter::Ribbon(f) => f.key_count(),
            Filter::Fuse(f) => f.key_count(),
            Filter::Partitioned(f) => f.key_count(),
            Filter::Registered(f) => f.filter.key_count(),
            Filter::Unusable { .. } => 0,
        }
    }

    /// Probes per key (1 for ribbon).
    pub fn num_probes(&self) -> u32 {
        match self {
            Filter::Blocked512(f) => f.num_probes(),
            Filter::Bloom(f) => f.num_probes(),
            Filter::Ribbon(_) => 1,
            Filter::Fuse(f) => f.num_probes(),
            Filter::Partitioned(f) => f.num_probes(),
            Filter::Registered(f) => f.filter.num_probes(),
            Filter::Unusable { .. } => 0,
        }
    }

    /// Bytes of memory the filter bits occupy.
    pub fn memory_bytes(&self) -> usize {
        match self {
            Filter::Blocked512(f) => f.memory_bytes(),
            Filter::Bloom(f) => f.memory_bytes(),
            Filter::Ribbon(f) => f.memory_bytes(),
            Filter::Fuse(f) => f.memory_bytes(),
            Filter::Partitioned(f) => f.memory_bytes(),
            Filter::Registered(f) => f.filter.memory_bytes(),
            Filter::Unusable { .. } => 0,
        }
    }

    /// Effective bits per key (filter bits / keys), after rounding to whole
    /// lines or words; 0 for an empty or unusable filter.
    pub fn bits_per_key(&self) -> f64 {
        let keys = self.key_count();
        if keys == 0 {
            0.0
        } else {
            self.memory_bytes() as f64 * 8.0 / keys as f64
        }
    }

    /// The modelled FPR for this filter's actual size and probe count; 1.0 for
    /// an unusable filter, 0.0 for an empty one. For Ribbon, the exact FPR of
    /// its stored column mix ([`RibbonFilter::predicted_fpr`]).
    pub fn predicted_fpr(&self) -> f64 {
        match self {
            Filter::Ribbon(f) => return f.predicted_fpr(),
            Filter::Fuse(f) => return f.predicted_fpr(),
            Filter::Partitioned(f) => return f.predicted_fpr(),
            Filter::Registered(f) => return f.filter.predicted_fpr(),
            _ => {}
        }
        match self.kind() {
            None => 1.0,
            Some(_) if self.key_count() == 0 => 0.0,
            Some(kind) => kind.model_fpr(self.bits_per_key(), self.num_probes()),
        }
    }
}

impl KeyFilter for Filter {
    fn may_contain(&self, hash: u64) -> bool {
        Filter::may_contain(self, hash)
    }
    fn prefetch(&self, hash: u64) {
        Filter::prefetch(self, hash)
    }
    fn key_count(&self) -> u64 {
        Filter::key_count(self)
    }
    fn memory_bytes(&self) -> usize {
        Filter::memory_bytes(self)
    }
    fn num_probes(&self) -> u32 {
        Filter::num_probes(self)
    }
    fn predicted_fpr(&self) -> f64 {
        Filter::predicted_fpr(self)
    }
}

/// Inputs of the filters' pinned test vectors.
#[cfg(test)]
pub(crate) mod test_vectors {
    /// `n` SplitMix64 outputs from `seed`, written out here so that the
    /// vectors' inputs depend on nothing else in the crate.
    pub fn fixed_hashes(seed: u64, n: usize) -> Vec<u64> {
        let mut s = seed;
        (0..n)
            .map(|_| {
                s = s.wrapping_add(0x9e37_79b9_7f4a_7c15);
                let mut z = s;
                z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
                z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
                z ^ (z >> 31)
            })
            .collect()
    }

    #[test]
    fn inputs_are_fixed() {
        assert_eq!(fixed_hashes(0, 2), [0xe220a8397b1dcdaf, 0x6e789e6aa1b965f4]);
    }

    /// Every stored filter was built from these hashes of its keys: XXH3-64,
    /// seed 0 (values copied from the function's output).
    #[test]
    fn key_hash_is_pinned() {
        for (key, hash) in [
            (&b""[..], 0x2d06800538d394c2),
            (b"a", 0xe6c632b61e964e1f),
            (b"bloomlsm", 0xdb6476c8fe9435a6),
            (b"0123456789abcdef0123456789abcdef-key", 0x0acb307cc0509e05),
        ] {
            assert_eq!(super::key_hash(key), hash, "{key:?}");
        }
    }
}
