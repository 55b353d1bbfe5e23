//! A 3-wise binary fuse filter with 8- or 16-bit fingerprints (Graf &
//! Lemire, "Binary Fuse Filters: Fast and Smaller Than Xor Filters", 2022),
//! written from the paper's description.
//!
//! About 28% of this file is its unit tests (the `tests` module at the end);
//! the rest is one filter: its layout, its construction and its probes.
//!
//! The filter is an array of `A` fingerprint cells cut into
//! `segment_count + 2` segments of `segment_length` cells (a power of two).
//! A key, through its 64-bit [`key_hash`](super::key_hash) remixed with the
//! filter's seed into `m`, owns three cells, one in each of three
//! consecutive segments, and a fingerprint `f(m)` of `w` bits. The
//! construction fills the cells so that for every key the XOR of its three
//! cells is its fingerprint; a query answers "may contain" when that holds.
//! An absent key passes with probability `2^-w` (its fingerprint has to
//! match a value it is independent of), whatever the number of keys.
//!
//! * **Positions** of remixed hash `m`, with `L = segment_length` and
//!   `C = segment_count · L`:
//!   `h0 = (m · C) >> 64` (a cell of the first `segment_count` segments),
//!   `h1 = (h0 + L) ^ ((m >> 18) & (L - 1))` (the next segment),
//!   `h2 = (h0 + 2L) ^ (m & (L - 1))` (the one after). `L` is at most
//!   2^18, so the two offsets use disjoint bits of `m`.
//! * **Fingerprint**: the low `w` bits of `m ^ (m >> 32)`.
//! * **Construction** (hypergraph peeling): the keys are counting-sorted by
//!   the segment of `h0` (the cells they touch are then close together in
//!   memory); every cell counts its keys and XORs their `m`; a cell with one
//!   key gives that key away: the key is pushed on a stack and removed from
//!   its other two cells, which may in turn hold one key. If every key is
//!   peeled, the cells are assigned in the reverse order of the stack, each
//!   key's peeled cell getting `f(m)` XOR its other two cells (which no
//!   later assignment changes). Otherwise the build retries with the next
//!   seed, and after every [`RETRIES_PER_SIZE`] failures the array grows;
//!   after [`MAX_ATTEMPTS`] failures it gives up and writes a filter that
//!   passes every key. Measured first attempts (fixed key sets, seed 0):
//!   at most 6% failed at any size from 2 to 10^4 keys (23 of 400 at 20
//!   keys), 1 of 20 at 10^5, 0 of 20 at 10^6; so the array grows about once
//!   in 10^9 builds and the last resort never happens, but the bound makes
//!   the build total.
//! * **Duplicates**: two equal hashes own the same three cells and can
//!   never be peeled. The build notices a cell holding exactly two equal
//!   hashes as it counts (or any failed peeling), then sorts and dedups the
//!   hashes once and sizes the filter for the distinct ones.
//! * **Size** (`layout_for`): the reference code's parameters for arity
//!   3: `L = 2^floor(ln(n) / ln(3.33) + 2.25)` (at most 2^18), capacity
//!   `round(n · max(1.125, 0.875 + 0.25 · ln(10^6) / ln(n)))` rounded to
//!   whole segments. About 9.0 bits per key at 8 bits and 10^6 keys
//!   ([`expected_bits_per_key`]).
//!
//! # Serialized form
//!
//! All integers little-endian; the payload, then the common 20-byte
//! [`FilterTrailer`]:
//!
//! ```text
//! cells      A cells of w bits: A bytes (w = 8) or A u16 LE (w = 16), cell 0 first
//! u64 LE  seed            seed of the remix the construction succeeded with
//! u32 LE  segment_length  L: a power of two, 4..=2^18 (0 if A = 0)
//! u32 LE  segment_count   >= 1, A = (segment_count + 2) · L (0 if A = 0)
//! u8      width           w: 8 or 16
//! u8 × 3  reserved        zero
//! trailer units = A (cells), key_count = distinct hashes, k = 3,
//!         hash = 1 (XXH3-64), version = 1, kind = the caller's kind byte
//! ```
//!
//! The remix of key hash `h` is `m = mix(h + seed)` with
//! `mix(x) = x ^= x >> 32; x *= 0xD6E8FEB86659FD93; x ^= x >> 32;
//! x *= 0xD6E8FEB86659FD93; x ^ (x >> 32)` (mod 2^64). No keys: `A` = 0, a
//! zero header (but the width), key count 0; it answers "absent" to every
//! key. `A` = 0 with a nonzero key count is the filter that passes every key
//! (written only after [`MAX_ATTEMPTS`] failed constructions). Open checks
//! ([`FuseFilter::from_parts`]): `k` = 3, width 8 or 16, reserved bytes zero,
//! `L` a power of two in 4..=2^18 equal to [`segment_length_for`] the key
//! count, `A = (segment_count + 2) · L`, the key count at most `A` (a
//! peeled filter has a cell per key) and `segment_count` within one of the
//! sizing rule's (up to the growth [`MAX_ATTEMPTS`] failures can add), and
//! the payload exactly `A · w / 8 + 20` bytes; anything else is corruption.

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use super::{BATCH_GROUP, FILTER_VERSION, FilterDecodeError, FilterTrailer, HASH_XXH3_64};

/// Length of the header between the cells and the trailer.
pub const FUSE_HEADER_LEN: usize = 20;
/// Cells per key the sizing rule tends to as files grow (1.125): what a
/// fuse policy records as its bits per key, per fingerprint bit.
pub const ASYMPTOTIC_SIZE_FACTOR: f64 = 1.125;
/// Cells a key owns, stored as the trailer's `num_probes`.
pub const FUSE_PROBES: u8 = 3;
/// Largest segment length (the offsets of `h1` and `h2` take 18 bits of
/// the remixed hash each).
pub const MAX_SEGMENT_LENGTH: u32 = 1 << 18;
/// Smallest segment length (what the sizing rule gives 1 or 2 keys).
pub const MIN_SEGMENT_LENGTH: u32 = 4;
/// Failed constructions with one array size before the array grows.
pub const RETRIES_PER_SIZE: u32 = 8;
/// Failed constructions after which the build writes a filter that passes
/// every key.
pub const MAX_ATTEMPTS: u32 = 64;

/// Fingerprint width.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FuseWidth {
    /// 8-bit fingerprints: FPR 2^-8 (0.39%).
    W8,
    /// 16-bit fingerprints: FPR 2^-16 (0.0015%).
    W16,
}

impl FuseWidth {
    /// Bits per fingerprint.
    pub fn bits(self) -> u32 {
        match self {
            FuseWidth::W8 => 8,
            FuseWidth::W16 => 16,
        }
    }

    /// The width of `bits` bits (8 or 16).
    pub fn from_bits(bits: u32) -> Option<Self> {
        match bits {
            8 => Some(FuseWidth::W8),
            16 => Some(FuseWidth::W16),
            _ => None,
        }
    }

    /// The false-positive rate of a fuse filter of this width: `2^-bits`.
    pub fn fpr(self) -> f64 {
        0.5f64.powi(self.bits() as i32)
    }
}

/// Smallest key count whose segment length is `2^k`, for `k = 3..=18`:
/// the least `n` with `floor(ln(n) / ln(3.33) + 2.25) >= k` (the reference
/// code's rule, evaluated in f64; the nearest n either side of each step is
/// more than 10^-9 from the integer, so this table and the float formula
/// agree on every platform, see the tests). 1 and 2 keys get `2^2`.
const SEGMENT_STEPS: [u64; 16] = [
    3, 9, 28, 92, 304, 1010, 3362, 11193, 37273, 124118, 413310, 1376322, 4583150, 15261887,
    50822082, 169237530,
];

/// Segment length of a filter of `keys` distinct keys:
/// `2^floor(ln(keys) / ln(3.33) + 2.25)`, between [`MIN_SEGMENT_LENGTH`]
/// and [`MAX_SEGMENT_LENGTH`] (0 for no keys). Exact integer arithmetic.
pub fn segment_length_for(keys: u64) -> u32 {
    if keys == 0 {
        return 0;
    }
    let steps = SEGMENT_STEPS.iter().take_while(|&&t| keys >= t).count();
    MIN_SEGMENT_LENGTH << steps
}

/// The size factor (cells per key before rounding to segments) for `keys`
/// keys: `max(1.125, 0.875 + 0.25 · ln(10^6) / ln(keys))`; small sets need
/// more room to peel. 0 for fewer than 2 keys (one segment's worth is used).
pub fn size_factor(keys: u64) -> f64 {
    if keys <= 1 {
        return 0.0;
    }
    (0.875 + 0.25 * 1e6f64.ln() / (keys as f64).ln()).max(1.125)
}

/// The array geometry: segment length and count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Layout {
    segment_length: u32,
    segment_count: u32,
}

impl Layout {
    const EMPTY: Layout = Layout {
        segment_length: 0,
        segment_count: 0,
    };

    /// Cells: `(segment_count + 2) · segment_length` (0 if empty).
    fn cells(&self) -> u64 {
        if self.segment_length == 0 {
            return 0;
        }
        (u64::from(self.segment_count) + 2) * u64::from(self.segment_length)
    }

    /// The layout after `times` growth steps of [`Self::grow`].
    fn grown(mut self, times: u32) -> Layout {
        for _ in 0..times {
            self = self.grow();
        }
        self
    }

    /// One growth step: 1/32 more segments (at least one).
    fn grow(self) -> Layout {
        Layout {
            segment_length: self.segment_length,
            segment_count: self
                .segment_count
                .saturating_add((self.segment_count / 32).max(1)),
        }
    }
}

/// The first layout the build tries for `keys` distinct keys (the reference
/// code's sizing for arity 3). The segment count saturates at `u32::MAX`
/// (about 10^15 keys).
fn layout_for(keys: u64) -> Layout {
    if keys == 0 {
        return Layout::EMPTY;
    }
    let segment_length = segment_length_for(keys);
    let capacity = (keys as f64 * size_factor(keys)).round() as u64;
    // Segments the capacity covers, less the two the last key's h1 and h2
    // spill into; at least one.
    let segments = capacity.div_ceil(u64::from(segment_length));
    let segment_count = segments.saturating_sub(2).max(1);
    Layout {
        segment_length,
        segment_count: u32::try_from(segment_count).unwrap_or(u32::MAX),
    }
}

/// Fingerprint cells of a first-attempt filter of `keys` distinct keys (the
/// size the build almost always ends with; a failed construction grows it by
/// 1/32).
pub fn array_length_for(keys: u64) -> u64 {
    layout_for(keys).cells()
}

/// Expected bits per key of a filter of `keys` distinct keys at `width`:
/// [`array_length_for`] cells of `width` bits over the keys (0 for no keys).
/// 8 bits: 10.24 at 10^4 keys, 9.50 at 10^5, 9.04 at 10^6.
pub fn expected_bits_per_key(keys: u64, width: FuseWidth) -> f64 {
    if keys == 0 {
        return 0.0;
    }
    array_length_for(keys) as f64 * f64::from(width.bits()) / keys as f64
}

/// Largest segment count a filter of `keys` keys can have: the sizing
/// rule's plus the growth of every failed attempt, plus one for a platform
/// whose `ln` rounds differently.
fn max_segment_count(keys: u64) -> u64 {
    let base = layout_for(keys);
    u64::from(base.grown(MAX_ATTEMPTS / RETRIES_PER_SIZE).segment_count) + 1
}

/// Seed of construction attempt `i` (a fixed sequence: builds are
/// deterministic).
fn seed_for(attempt: u32) -> u64 {
    mix(u64::from(attempt).wrapping_mul(0x9e37_79b9_7f4a_7c15))
}

const MIX_MUL: u64 = 0xd6e8_feb8_6659_fd93;

/// A full-avalanche bijection of 64-bit words.
#[inline(always)]
fn mix(mut x: u64) -> u64 {
    x ^= x >> 32;
    x = x.wrapping_mul(MIX_MUL);
    x ^= x >> 32;
    x = x.wrapping_mul(MIX_MUL);
    x ^ (x >> 32)
}

/// The remixed hash of `hash` under `seed`: the positions and the
/// fingerprint come from it.
#[inline(always)]
fn remix(hash: u64, seed: u64) -> u64 {
    mix(hash.wrapping_add(seed))
}

/// The precomputed parts of a layout that the positions need.
#[derive(Clone, Copy, Debug)]
struct Geometry {
    segment_length: u64,
    /// `segment_count · segment_length`: `h0` is below it.
    count_length: u64,
    mask: u64,
}

impl Geometry {
    fn of(layout: &Layout) -> Geometry {
        let l = u64::from(layout.segment_length);
        Geometry {
            segment_length: l,
            count_length: u64::from(layout.segment_count) * l,
            mask: l.saturating_sub(1),
        }
    }

    /// The three cells of remixed hash `m`, one in each of three consecutive
    /// segments; all below `(segment_count + 2) · segment_length`.
    #[inline(always)]
    fn positions(&self, m: u64) -> [usize; 3] {
        let h0 = ((u128::from(m) * u128::from(self.count_length)) >> 64) as u64;
        let h1 = (h0 + self.segment_length) ^ ((m >> 18) & self.mask);
        let h2 = (h0 + 2 * self.segment_length) ^ (m & self.mask);
        [h0 as usize, h1 as usize, h2 as usize]
    }
}

/// A fingerprint cell type (u8 or u16).
trait Cell: Copy + Default + Eq + std::ops::BitXor<Output = Self> + fmt::Debug {
    /// The fingerprint of remixed hash `m`: low bits of `m ^ (m >> 32)`.
    fn of(m: u64) -> Self;
    fn put(self, out: &mut Vec<u8>);
    fn get(bytes: &[u8]) -> Self;
}

impl Cell for u8 {
    #[inline(always)]
    fn of(m: u64) -> Self {
        (m ^ (m >> 32)) as u8
    }
    fn put(self, out: &mut Vec<u8>) {
        out.push(self);
    }
    fn get(bytes: &[u8]) -> Self {
        bytes[0]
    }
}

impl Cell for u16 {
    #[inline(always)]
    fn of(m: u64) -> Self {
        (m ^ (m >> 32)) as u16
    }
    fn put(self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_le_bytes());
    }
    fn get(bytes: &[u8]) -> Self {
        u16::from_le_bytes([bytes[0], bytes[1]])
    }
}

/// The key of cell index `j`'s other two cells: `(j + 1) % 3, (j + 2) % 3`.
const OTHERS: [[usize; 2]; 3] = [[1, 2], [2, 0], [0, 1]];

/// Why one construction attempt failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Failure {
    /// Two equal hashes were seen: dedup and size for the distinct ones.
    Duplicate,
    /// Peeling stopped before every key was peeled (or a cell counted more
    /// than 63 keys).
    Stuck,
}

/// One construction attempt for `layout` and `seed`: the cells, or why not.
fn try_build<F: Cell>(hashes: &[u64], layout: &Layout, seed: u64) -> Result<Vec<F>, Failure> {
    let geo = Geometry::of(layout);
    let cells = layout.cells() as usize;
    let segments = u64::from(layout.segment_count);
    // Counting sort of the remixed hashes by the segment of h0.
    let segment_of = |m: u64| ((u128::from(m) * u128::from(segments)) >> 64) as usize;
    let mut ends = vec![0usize; layout.segment_count as usize + 1];
    for &h in hashes {
        ends[segment_of(remix(h, seed)) + 1] += 1;
    }
    for s in 1..ends.len() {
        ends[s] += ends[s - 1];
    }
    let mut sorted = vec![0u64; hashes.len()];
    for &h in hashes {
        let m = remix(h, seed);
        let at = &mut ends[segment_of(m)];
        sorted[*at] = m;
        *at += 1;
    }
    drop(ends);

    // Per cell: keys << 2 | XOR of the key's cell indices (0, 1, 2) there,
    // and the XOR of the keys' remixed hashes. With one key left, the two
    // give the key and which of its cells this is.
    let mut counts = vec![0u8; cells];
    let mut xors = vec![0u64; cells];
    let mut overflow = false;
    for &m in &sorted {
        let p = geo.positions(m);
        for (j, &c) in p.iter().enumerate() {
            counts[c] = counts[c].wrapping_add(4) ^ j as u8;
            xors[c] ^= m;
            // 64 keys in one cell wrap the count.
            overflow |= counts[c] < 4;
        }
        // A cell holding exactly two keys whose hashes XOR to 0: the same
        // hash twice (distinct hashes remix to distinct values).
        if xors[p[0]] & xors[p[1]] & xors[p[2]] == 0
            && p.iter().any(|&c| xors[c] == 0 && counts[c] >> 2 == 2)
        {
            return Err(Failure::Duplicate);
        }
    }
    if overflow {
        return Err(Failure::Stuck);
    }

    // Peeling: `sorted` becomes the stack of peeled keys, `which[i]` the
    // index of the cell key `i` was peeled from.
    let mut queue: Vec<usize> = (0..cells).filter(|&c| counts[c] >> 2 == 1).collect();
    let mut which = vec![0u8; hashes.len()];
    let mut peeled = 0;
    while let Some(c) = queue.pop() {
        if counts[c] >> 2 != 1 {
            continue;
        }
        let m = xors[c];
        let j = (counts[c] & 3) as usize;
        counts[c] = 0;
        xors[c] = 0;
        // `peeled` < keys: each peel removes a distinct key from the cells.
        sorted[peeled] = m;
        which[peeled] = j as u8;
        peeled += 1;
        let p = geo.positions(m);
        for o in OTHERS[j] {
            let c = p[o];
            counts[c] = counts[c].wrapping_sub(4) ^ o as u8;
            xors[c] ^= m;
            if counts[c] >> 2 == 1 {
                queue.push(c);
            }
        }
    }
    if peeled != hashes.len() {
        return Err(Failure::Stuck);
    }
    drop((counts, xors, queue));

    // Assignment, last peeled first: a key's other two cells are final when
    // its peeled cell is set (keys peeled before it never use that cell).
    let mut out = vec![F::default(); cells];
    for (&m, &j) in sorted.iter().zip(&which).rev() {
        let p = geo.positions(m);
        let [a, b] = OTHERS[j as usize];
        out[p[j as usize]] = F::of(m) ^ out[p[a]] ^ out[p[b]];
    }
    Ok(out)
}

/// A successful build: cells, layout, seed and distinct key count.
struct Built<F> {
    cells: Vec<F>,
    layout: Layout,
    seed: u64,
    keys: u64,
}

/// Builds cells for `hashes`, starting from `first_layout(distinct keys)`:
/// retries with the next seed after a failure, grows the array after every
/// [`RETRIES_PER_SIZE`] failures, dedups once after a duplicate or the
/// first failure; `None` after `max_attempts` attempts.
fn build_cells<F: Cell>(
    hashes: &[u64],
    max_attempts: u32,
    first_layout: impl Fn(u64) -> Layout,
) -> Option<Built<F>> {
    let mut keys: Cow<'_, [u64]> = Cow::Borrowed(hashes);
    let mut deduped = false;
    let mut layout = first_layout(keys.len() as u64);
    let mut failures_at_size = 0;
    for attempt in 0..max_attempts {
        let seed = seed_for(attempt);
        let failure = match try_build::<F>(&keys, &layout, seed) {
            Ok(cells) => {
                return Some(Built {
                    cells,
                    layout,
                    seed,
                    keys: keys.len() as u64,
                });
            }
            Err(f) => f,
        };
        if !deduped {
            deduped = true;
            let mut distinct = keys.into_owned();
            distinct.sort_unstable();
            distinct.dedup();
            keys = Cow::Owned(distinct);
            if keys.len() != hashes.len() {
                layout = first_layout(keys.len() as u64);
                failures_at_size = 0;
                continue;
            }
        }
        debug_assert_eq!(failure, Failure::Stuck, "distinct hashes never repeat");
        failures_at_size += 1;
        if failures_at_size == RETRIES_PER_SIZE {
            layout = layout.grow();
            failures_at_size = 0;
        }
    }
    None
}

/// The cells, by width; `None` when the array is empty (no keys, or the
/// filter that passes every key).
#[derive(Clone)]
enum Cells {
    W8(Arc<[u8]>),
    W16(Arc<[u16]>),
    None,
}

/// An opened (or freshly built) binary fuse filter.
#[derive(Clone)]
pub struct FuseFilter {
    /// `(segment_count + 2) · segment_length` cells, so every position of
    /// `geo` is in bounds (checked where a filter is made).
    cells: Cells,
    width: FuseWidth,
    layout: Layout,
    geo: Geometry,
    seed: u64,
    key_count: u64,
}

impl fmt::Debug for FuseFilter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FuseFilter")
            .field("width", &self.width.bits())
            .field("segment_length", &self.layout.segment_length)
            .field("segment_count", &self.layout.segment_count)
            .field("array_length", &self.array_length())
            .field("seed", &self.seed)
            .field("keys", &self.key_count)
            .finish()
    }
}

impl FuseFilter {
    /// Builds the filter in memory from key hashes. Duplicate hashes are
    /// harmless (the filter is sized for the distinct ones, and its key
    /// count is theirs). Never fails and never panics: after
    /// [`MAX_ATTEMPTS`] failed constructions (which do not happen in
    /// practice) it gives the filter that passes every key.
    pub fn from_hashes(hashes: &[u64], width: FuseWidth) -> Self {
        Self::build_bounded(hashes, width, MAX_ATTEMPTS, layout_for)
    }

    fn build_bounded(
        hashes: &[u64],
        width: FuseWidth,
        max_attempts: u32,
        first_layout: impl Fn(u64) -> Layout,
    ) -> Self {
        if hashes.is_empty() {
            return Self::new(Cells::None, width, Layout::EMPTY, 0, 0);
        }
        let made = match width {
            FuseWidth::W8 => build_cells::<u8>(hashes, max_attempts, first_layout)
                .map(|b| (Cells::W8(b.cells.into()), b.layout, b.seed, b.keys)),
            FuseWidth::W16 => build_cells::<u16>(hashes, max_attempts, first_layout)
                .map(|b| (Cells::W16(b.cells.into()), b.layout, b.seed, b.keys)),
        };
        match made {
            Some((cells, layout, seed, keys)) => Self::new(cells, width, layout, seed, keys),
            // Passes every key; its count is at least 1 (hashes not empty).
            None => {
                let mut distinct = hashes.to_vec();
                distinct.sort_unstable();
                distinct.dedup();
                Self::new(Cells::None, width, Layout::EMPTY, 0, distinct.len() as u64)
            }
        }
    }

    fn new(cells: Cells, width: FuseWidth, layout: Layout, seed: u64, key_count: u64) -> Self {
        let len = match &cells {
            Cells::W8(c) => c.len() as u64,
            Cells::W16(c) => c.len() as u64,
            Cells::None => 0,
        };
        assert_eq!(len, layout.cells(), "every position is in bounds");
        FuseFilter {
            cells,
            width,
            layout,
            geo: Geometry::of(&layout),
            seed,
            key_count,
        }
    }

    /// Appends the serialized form (cells, header, trailer; see the module
    /// documentation) to `out`, with `kind` as the trailer's kind byte.
    pub fn encode_to(&self, kind: u8, out: &mut Vec<u8>) {
        out.reserve(self.memory_bytes() + FUSE_HEADER_LEN + super::FILTER_TRAILER_LEN);
        match &self.cells {
            Cells::W8(c) => out.extend_from_slice(c),
            Cells::W16(c) => c.iter().for_each(|&x| x.put(out)),
            Cells::None => {}
        }
        out.extend_from_slice(&self.seed.to_le_bytes());
        out.extend_from_slice(&self.layout.segment_length.to_le_bytes());
        out.extend_from_slice(&self.layout.segment_count.to_le_bytes());
        out.extend_from_slice(&[self.width.bits() as u8, 0, 0, 0]);
        FilterTrailer {
            units: self.layout.cells(),
            key_count: self.key_count,
            num_probes: FUSE_PROBES,
            hash: HASH_XXH3_64,
            version: FILTER_VERSION,
            kind,
        }
        .encode_to(out);
    }

    /// Opens serialized bytes (payload + trailer) of any kind byte: the
    /// trailer must name version [`FILTER_VERSION`] and hash
    /// [`HASH_XXH3_64`], then [`Self::from_parts`] checks the rest.
    pub fn decode(bytes: &[u8]) -> Result<Self, FilterDecodeError> {
        let t = FilterTrailer::decode(bytes).ok_or_else(|| {
            FilterDecodeError(format!(
                "fuse filter of {} bytes is shorter than its trailer",
                bytes.len()
            ))
        })?;
        if t.version != FILTER_VERSION || t.hash != HASH_XXH3_64 {
            return Err(FilterDecodeError(format!(
                "fuse filter version {} hash {} (want {FILTER_VERSION} and {HASH_XXH3_64})",
                t.version, t.hash
            )));
        }
        Self::from_parts(&bytes[..bytes.len() - super::FILTER_TRAILER_LEN], &t)
    }

    /// Rebuilds the in-memory filter from a payload and its decoded trailer
    /// (whose kind byte it does not look at). Checks every field (see the
    /// module documentation); never panics, whatever the bytes.
    pub fn from_parts(payload: &[u8], t: &FilterTrailer) -> Result<Self, FilterDecodeError> {
        let err = |what: String| Err(FilterDecodeError(format!("fuse filter: {what}")));
        if t.num_probes != FUSE_PROBES {
            return err(format!(
                "stores k = {}, must be {FUSE_PROBES}",
                t.num_probes
            ));
        }
        let Some(body_len) = payload.len().checked_sub(FUSE_HEADER_LEN) else {
            return err(format!(
                "payload of {} bytes is shorter than its {FUSE_HEADER_LEN}-byte header",
                payload.len()
            ));
        };
        let (body, header) = payload.split_at(body_len);
        let word = |at: usize| u32::from_le_bytes(header[at..at + 4].try_into().expect("4 bytes"));
        let seed = u64::from_le_bytes(header[0..8].try_into().expect("8 bytes"));
        let layout = Layout {
            segment_length: word(8),
            segment_count: word(12),
        };
        let Some(width) = FuseWidth::from_bits(u32::from(header[16])) else {
            return err(format!("{}-bit fingerprints (8 or 16)", header[16]));
        };
        if header[17..20] != [0, 0, 0] {
            return err(format!(
                "reserved header bytes {:?} are not zero",
                &header[17..20]
            ));
        }
        let n = t.key_count;
        if t.units == 0 {
            // No keys, or the filter that passes every key.
            if layout != Layout::EMPTY || seed != 0 || !body.is_empty() {
                return err(format!(
                    "no cells but {layout:?}, seed {seed:#x}, {} bytes of cells",
                    body.len()
                ));
            }
            return Ok(Self::new(Cells::None, width, layout, 0, n));
        }
        let l = layout.segment_length;
        if n == 0 || l != segment_length_for(n) {
            return err(format!(
                "segment length {l} for {n} keys (the sizing rule gives {})",
                segment_length_for(n)
            ));
        }
        if layout.segment_count == 0
            || u64::from(layout.segment_count) > max_segment_count(n)
            || layout.cells() != t.units
            || n > t.units
        {
            return err(format!(
                "{} cells in {} segments of {l} for {n} keys",
                t.units, layout.segment_count
            ));
        }
        let bytes = width.bits() as u64 / 8;
        if t.units.checked_mul(bytes) != Some(body.len() as u64) {
            return err(format!(
                "{} cells of {} bits need {} bytes, payload has {}",
                t.units,
                width.bits(),
                t.units.saturating_mul(bytes),
                body.len()
            ));
        }
        let cells = match width {
            FuseWidth::W8 => Cells::W8(body.into()),
            FuseWidth::W16 => Cells::W16(body.chunks_exact(2).map(u16::get).collect()),
        };
        Ok(Self::new(cells, width, layout, seed, n))
    }

    /// False only if `hash` was certainly not added: the XOR of its three
    /// cells and its fingerprint, without a branch between the loads.
    #[inline]
    pub fn may_contain(&self, hash: u64) -> bool {
        let m = remix(hash, self.seed);
        let p = self.geo.positions(m);
        match &self.cells {
            Cells::W8(c) => u8::of(m) ^ c[p[0]] ^ c[p[1]] ^ c[p[2]] == 0,
            Cells::W16(c) => u16::of(m) ^ c[p[0]] ^ c[p[1]] ^ c[p[2]] == 0,
            Cells::None => self.key_count > 0,
        }
    }

    /// Starts loading the three cells of `hash`.
    #[inline]
    pub fn prefetch(&self, hash: u64) {
        let p = self.geo.positions(remix(hash, self.seed));
        match &self.cells {
            Cells::W8(c) => p.iter().for_each(|&i| super::prefetch_read(&c[i])),
            Cells::W16(c) => p.iter().for_each(|&i| super::prefetch_read(&c[i])),
            Cells::None => {}
        }
    }

    /// Probes many hashes; `out[i]` receives `may_contain(hashes[i])`. In
    /// groups of [`BATCH_GROUP`]: every key's three cells are prefetched
    /// for the whole group before any key is tested.
    ///
    /// # Panics
    /// If `hashes` and `out` differ in length.
    pub fn may_contain_batch(&self, hashes: &[u64], out: &mut [bool]) {
        assert_eq!(hashes.len(), out.len(), "one output per hash");
        match &self.cells {
            Cells::W8(c) => self.batch(c, hashes, out),
            Cells::W16(c) => self.batch(c, hashes, out),
            Cells::None => out.fill(self.key_count > 0),
        }
    }

    fn batch<F: Cell>(&self, cells: &[F], hashes: &[u64], out: &mut [bool]) {
        let mut ms = [0u64; BATCH_GROUP];
        let mut ps = [[0usize; 3]; BATCH_GROUP];
        for (hs, os) in hashes.chunks(BATCH_GROUP).zip(out.chunks_mut(BATCH_GROUP)) {
            for ((&h, m), p) in hs.iter().zip(&mut ms).zip(&mut ps) {
                *m = remix(h, self.seed);
                *p = self.geo.positions(*m);
                p.iter().for_each(|&i| super::prefetch_read(&cells[i]));
            }
            for ((o, &m), p) in os.iter_mut().zip(&ms).zip(&ps) {
                *o = F::of(m) ^ cells[p[0]] ^ cells[p[1]] ^ cells[p[2]] == F::default();
            }
        }
    }

    /// Fingerprint width.
    pub fn width(&self) -> FuseWidth {
        self.width
    }

    /// Cells per segment (a power of two; 0 without cells).
    pub fn segment_length(&self) -> u32 {
        self.layout.segment_length
    }

    /// Segments `h0` can fall in (the array has two more; 0 without cells).
    pub fn segment_count(&self) -> u32 {
        self.layout.segment_count
    }

    /// Fingerprint cells: `(segment_count + 2) · segment_length`.
    pub fn array_length(&self) -> u64 {
        self.layout.cells()
    }

    /// The seed the construction succeeded with.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// Distinct key hashes the filter was built from.
    pub fn key_count(&self) -> u64 {
        self.key_count
    }

    /// Cells a key owns (3).
    pub fn num_probes(&self) -> u32 {
        u32::from(FUSE_PROBES)
    }

    /// Bytes of fingerprint cells in memory.
    pub fn memory_bytes(&self) -> usize {
        match &self.cells {
            Cells::W8(c) => c.len(),
            Cells::W16(c) => c.len() * 2,
            Cells::None => 0,
        }
    }

    /// Cell bits per key (0 for no keys).
    pub fn bits_per_key(&self) -> f64 {
        if self.key_count == 0 {
            0.0
        } else {
            self.memory_bytes() as f64 * 8.0 / self.key_count as f64
        }
    }

    /// The FPR: `2^-width` (an absent key's fingerprint must equal the XOR
    /// of three cells it is independent of); 0 for no keys, 1 for the filter
    /// that passes every key.
    pub fn predicted_fpr(&self) -> f64 {
        match self.cells {
            Cells::None if self.key_count > 0 => 1.0,
            Cells::None => 0.0,
            _ => self.width.fpr(),
        }
    }

    /// False only for the filter that passes every key (written after
    /// [`MAX_ATTEMPTS`] failed constructions).
    pub fn is_exact(&self) -> bool {
        !matches!(self.cells, Cells::None) || self.key_count == 0
    }
}

/// Builds the serialized fuse filter (payload + trailer, see the module
/// documentation) over `hashes` with `kind` as the trailer's kind byte.
pub fn build(hashes: &[u64], width: FuseWidth, kind: u8) -> Vec<u8> {
    let mut out = Vec::new();
    FuseFilter::from_hashes(hashes, width).encode_to(kind, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::filter::FILTER_TRAILER_LEN;
    use crate::filter::test_vectors::fixed_hashes;

    const KIND: u8 = 4;
    const WIDTHS: [FuseWidth; 2] = [FuseWidth::W8, FuseWidth::W16];

    fn open(bytes: &[u8]) -> FuseFilter {
        FuseFilter::decode(bytes).unwrap()
    }

    #[test]
    fn no_false_negatives_at_any_size() {
        for n in [0usize, 1, 2, 3, 10, 100, 1000, 100_000] {
            let keys = fixed_hashes(n as u64 + 100, n);
            for w in WIDTHS {
                let bytes = build(&keys, w, KIND);
                let f = open(&bytes);
                assert!(f.is_exact());
                assert_eq!(f.key_count(), n as u64);
                assert_eq!(f.array_length(), array_length_for(n as u64), "{n}");
                assert!(keys.iter().all(|&h| f.may_contain(h)), "{n} {w:?}");
                let mut out = vec![false; keys.len()];
                f.may_contain_batch(&keys, &mut out);
                assert!(out.iter().all(|&x| x));
                // Re-encoding gives the same bytes.
                let mut again = Vec::new();
                f.encode_to(KIND, &mut again);
                assert_eq!(again, bytes);
            }
        }
    }

    #[test]
    fn duplicates_are_harmless_and_not_counted() {
        let distinct = fixed_hashes(31, 5_000);
        let mut dup: Vec<u64> = distinct.iter().copied().cycle().take(20_000).collect();
        dup.extend_from_slice(&[distinct[7]; 100]);
        for w in WIDTHS {
            let f = open(&build(&dup, w, KIND));
            assert_eq!(f.key_count(), 5_000);
            assert_eq!(f.array_length(), array_length_for(5_000));
            assert!(distinct.iter().all(|&h| f.may_contain(h)));
            // One hash many times is a filter of one key.
            let one = open(&build(&[42; 1000], w, KIND));
            assert_eq!((one.key_count(), one.array_length()), (1, 12));
            assert!(one.may_contain(42));
            // Two hashes, each repeated.
            let two = open(&build(&[1, 2, 1, 2, 2, 1], w, KIND));
            assert_eq!(two.key_count(), 2);
            assert!(two.may_contain(1) && two.may_contain(2));
        }
    }

    #[test]
    fn empty_filter_answers_absent() {
        for w in WIDTHS {
            let bytes = build(&[], w, KIND);
            assert_eq!(bytes.len(), FUSE_HEADER_LEN + FILTER_TRAILER_LEN);
            let f = open(&bytes);
            assert_eq!((f.key_count(), f.memory_bytes()), (0, 0));
            assert_eq!(f.predicted_fpr(), 0.0);
            assert!(fixed_hashes(3, 1000).iter().all(|&h| !f.may_contain(h)));
            let mut out = [true; 3];
            f.may_contain_batch(&[1, 2, 3], &mut out);
            assert_eq!(out, [false; 3]);
            f.prefetch(5);
        }
    }

    #[test]
    fn measured_fpr_matches_width() {
        let keys = fixed_hashes(41, 50_000);
        let absent = fixed_hashes(42, 400_000);
        for w in WIDTHS {
            let f = FuseFilter::from_hashes(&keys, w);
            let mut out = vec![false; absent.len()];
            f.may_contain_batch(&absent, &mut out);
            let single: Vec<bool> = absent.iter().map(|&h| f.may_contain(h)).collect();
            assert_eq!(out, single);
            let fp = single.iter().filter(|&&x| x).count() as f64 / absent.len() as f64;
            let want = f.predicted_fpr();
            assert_eq!(want, w.fpr());
            // 1,562 expected at 8 bits (±5 sigma = 200), 6 at 16.
            let tol = 5.0 * (want / absent.len() as f64).sqrt() + 2e-5;
            assert!((fp - want).abs() <= tol, "{w:?}: {fp} vs {want}");
        }
    }

    /// The sizing rule as the reference code writes it, in floating point.
    fn float_segment_length(n: u64) -> u32 {
        let k = ((n as f64).ln() / 3.33f64.ln() + 2.25).floor() as u32;
        (1u32 << k).min(MAX_SEGMENT_LENGTH)
    }

    #[test]
    fn segment_steps_match_the_float_rule() {
        for &t in &SEGMENT_STEPS {
            for n in t.saturating_sub(3).max(1)..t + 3 {
                assert_eq!(segment_length_for(n), float_segment_length(n), "{n}");
            }
        }
        for n in (1..2_000).chain([10_000, 1 << 20, 1 << 30, 1 << 40]) {
            assert_eq!(segment_length_for(n), float_segment_length(n), "{n}");
        }
        assert_eq!(segment_length_for(u64::MAX), MAX_SEGMENT_LENGTH);
        assert_eq!(segment_length_for(1), 4);
        assert_eq!(segment_length_for(1_000_000), 8192);
    }

    #[test]
    fn expected_size_follows_the_reference() {
        // 8-bit bits per key of the reference sizing.
        for (n, want) in [(10_000u64, 10.24), (100_000, 9.50), (1_000_000, 9.04)] {
            let got = expected_bits_per_key(n, FuseWidth::W8);
            assert!((got - want).abs() < 0.01, "{n}: {got}");
            assert_eq!(expected_bits_per_key(n, FuseWidth::W16), 2.0 * got);
        }
        assert_eq!(array_length_for(0), 0);
        assert_eq!(array_length_for(1), 12);
        assert_eq!(array_length_for(2), 12);
        // Huge counts saturate instead of overflowing.
        let _ = array_length_for(u64::MAX);
        let _ = max_segment_count(u64::MAX);
    }

    #[test]
    fn failed_constructions_retry_grow_and_stay_bounded() {
        let keys = fixed_hashes(51, 40);
        // Start from an array too small to peel (40 cells for 40 keys):
        // attempts fail until the array has grown.
        let tiny = |_| Layout {
            segment_length: 4,
            segment_count: 8,
        };
        let f = FuseFilter::build_bounded(&keys, FuseWidth::W8, MAX_ATTEMPTS, tiny);
        assert!(f.is_exact());
        assert!(f.segment_count() > 8, "{f:?}");
        assert!(keys.iter().all(|&h| f.may_contain(h)));
        assert!(f.seed() != seed_for(0));
        // No attempt left: the filter that passes every key, which
        // round-trips.
        let all = FuseFilter::build_bounded(&keys, FuseWidth::W16, 0, layout_for);
        assert!(!all.is_exact());
        assert_eq!((all.key_count(), all.predicted_fpr()), (40, 1.0));
        let mut bytes = Vec::new();
        all.encode_to(KIND, &mut bytes);
        let g = open(&bytes);
        assert!(fixed_hashes(52, 100).iter().all(|&h| g.may_contain(h)));
        let mut out = [false; 4];
        g.may_contain_batch(&[1, 2, 3, 4], &mut out);
        assert_eq!(out, [true; 4]);
        // Growth never passes the bound `from_parts` checks.
        for n in [1u64, 2, 10, 1000, 1 << 20] {
            let base = layout_for(n);
            let grown = base.grown(MAX_ATTEMPTS / RETRIES_PER_SIZE);
            assert!(u64::from(grown.segment_count) < max_segment_count(n));
        }
    }

    #[test]
    fn every_byte_flip_and_cut_is_safe() {
        let probes = fixed_hashes(61, 64);
        for (n, w) in [
            (60, FuseWidth::W8),
            (40, FuseWidth::W16),
            (0, FuseWidth::W8),
        ] {
            let keys = fixed_hashes(60, n);
            let good = build(&keys, w, KIND);
            let header = good.len() - FUSE_HEADER_LEN - FILTER_TRAILER_LEN;
            for at in 0..good.len() {
                for x in [0x01u8, 0x80, 0xff] {
                    let mut bad = good.clone();
                    bad[at] ^= x;
                    let opened = FuseFilter::decode(&bad);
                    // Caught: every header byte but the seed's, every
                    // trailer byte but the kind's and some of the key
                    // count's (a count with the same segment length).
                    let seed = (header..header + 8).contains(&at);
                    let count = (good.len() - 12..good.len() - 4).contains(&at);
                    let kind = at == good.len() - 1;
                    if at >= header && !seed && !count && !kind {
                        assert!(opened.is_err(), "{n}: flip {x:#x} at {at} opened");
                    }
                    if let Ok(f) = opened {
                        let mut out = vec![false; probes.len()];
                        f.may_contain_batch(&probes, &mut out);
                        for (&h, &o) in probes.iter().zip(&out) {
                            assert_eq!(f.may_contain(h), o);
                            f.prefetch(h);
                        }
                        let _ = (f.predicted_fpr(), f.bits_per_key(), format!("{f:?}"));
                    }
                }
            }
            for len in 0..good.len() {
                assert!(FuseFilter::decode(&good[..len]).is_err(), "cut at {len}");
            }
        }
    }

    #[test]
    fn header_fields_are_validated() {
        let keys = fixed_hashes(71, 1000);
        let good = build(&keys, FuseWidth::W8, KIND);
        let n = good.len();
        let t = n - FILTER_TRAILER_LEN;
        let h = t - FUSE_HEADER_LEN;
        let set = |at: usize, v: u8| {
            let mut b = good.clone();
            b[at] = v;
            FuseFilter::decode(&b)
        };
        assert_eq!(open(&good).array_length(), array_length_for(1000));
        assert!(set(t + 16, 2).is_err(), "k = 2");
        assert!(set(h + 16, 16).is_err(), "width 16 with 8-bit cells");
        assert!(set(h + 16, 9).is_err(), "width 9");
        assert!(set(h + 17, 1).is_err(), "reserved byte");
        assert!(set(h + 8, 0).is_err(), "segment length");
        assert!(set(h + 12, 0).is_err(), "segment count 0");
        assert!(
            set(t + 9, 0x10).is_err(),
            "key count with another segment length"
        );
        assert!(set(t, good[t] ^ 1).is_err(), "cell count");
        // A key count above the cells.
        let mut b = good.clone();
        b[t + 8..t + 16].copy_from_slice(&(1009u64).to_le_bytes());
        assert!(FuseFilter::decode(&b).is_ok(), "same segment length, fits");
        let cells = open(&good).array_length();
        b[t + 8..t + 16].copy_from_slice(&(cells + 1).to_le_bytes());
        assert!(FuseFilter::decode(&b).is_err(), "more keys than cells");
        // Consistent but impossible geometry: many more segments than the
        // key count allows, with the cells and trailer to match.
        let big = Layout {
            segment_length: 128,
            segment_count: 100,
        };
        let mut b = vec![0u8; big.cells() as usize];
        b.extend_from_slice(&[0; 8]);
        b.extend_from_slice(&128u32.to_le_bytes());
        b.extend_from_slice(&100u32.to_le_bytes());
        b.extend_from_slice(&[8, 0, 0, 0]);
        let tr = |keys: u64, units: u64, b: &mut Vec<u8>| {
            FilterTrailer {
                units,
                key_count: keys,
                num_probes: 3,
                hash: HASH_XXH3_64,
                version: FILTER_VERSION,
                kind: KIND,
            }
            .encode_to(b)
        };
        let mut ok = b.clone();
        tr(1000, big.cells(), &mut ok);
        assert!(
            FuseFilter::decode(&ok).is_err(),
            "100 segments for 1000 keys"
        );
        // An empty filter must say so everywhere.
        let empty = build(&[], FuseWidth::W16, KIND);
        for at in [0, 8, 12, 17] {
            let mut e = empty.clone();
            e[at] = 1;
            assert!(FuseFilter::decode(&e).is_err(), "{at}");
        }
        let mut e = empty.clone();
        e[FUSE_HEADER_LEN] = 12; // units
        assert!(FuseFilter::decode(&e).is_err());
        // Version and hash.
        assert!(set(n - 2, 2).is_err() && set(n - 3, 2).is_err());
    }

    /// The encoding is pinned: a digest (XXH3-64 of the bytes) of filters
    /// built from fixed hashes, both widths, including duplicates (sized
    /// for the distinct hashes). A change here is a format change.
    #[test]
    fn encoding_is_pinned() {
        let digest = |keys: &[u64], w| {
            let bytes = build(keys, w, KIND);
            (bytes.len(), crate::filter::key_hash(&bytes))
        };
        let mut dups = fixed_hashes(85, 3000);
        dups.extend_from_within(..1000);
        let got = [
            digest(&fixed_hashes(81, 1), FuseWidth::W8),
            digest(&fixed_hashes(82, 3), FuseWidth::W16),
            digest(&fixed_hashes(83, 1000), FuseWidth::W8),
            digest(&fixed_hashes(84, 20_000), FuseWidth::W16),
            digest(&dups, FuseWidth::W8),
        ];
        assert_eq!(
            got,
            [
                (52, 0xcb62_de88_c462_8013),
                (88, 0x9457_f45b_b415_f0d1),
                (1448, 0x93cb_66ab_7a6b_ff89),
                (49192, 0xff4c_eb38_d73c_8048),
                (4136, 0xa365_bd32_6c0a_4f74),
            ]
        );
        // The first cells of the 1000-key filter, and its header.
        let bytes = build(&fixed_hashes(83, 1000), FuseWidth::W8, KIND);
        assert_eq!(
            bytes[..16],
            [
                0x00, 0x00, 0x3c, 0x00, 0xa7, 0, 0, 0, 0, 0x2a, 0, 0, 0, 0, 0, 0x3b
            ]
        );
        let h = bytes.len() - FILTER_TRAILER_LEN - FUSE_HEADER_LEN;
        assert_eq!(bytes[h..h + 8], seed_for(0).to_le_bytes());
        assert_eq!(
            bytes[h + 8..h + 20],
            [128, 0, 0, 0, 9, 0, 0, 0, 8, 0, 0, 0],
            "L = 128, 9 segments, 8 bits"
        );
    }
}
