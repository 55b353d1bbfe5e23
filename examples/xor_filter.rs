//! A filter family written outside the crate: the xor filter with 8-bit
//! fingerprints (Graf and Lemire, 2019), registered as `xor8`, serving a
//! store beside the built-in blocked Bloom filter on the same missing keys.
//! Run with `cargo run --release --example xor_filter`.

use bloomlsm::filter::FilterDecodeError;
use bloomlsm::workload::SplitMix64;
use bloomlsm::{
    Db, Filter, FilterFamily, FilterKind, FilterOptions, FilterPolicy, KeyFilter, Options, Result,
};

/// The xor8 family: 1.23 × 8 bits per key plus 32 slots, FPR 2^-8.
pub struct Xor8;

/// An opened xor8 filter: three blocks of `block` one-byte slots.
pub struct Xor8Filter {
    seed: u64,
    block: usize,
    keys: u64,
    slots: Vec<u8>,
}

/// Murmur3's finaliser of `h + seed`: distinct hashes stay distinct.
fn mix(h: u64, seed: u64) -> u64 {
    let mut z = h.wrapping_add(seed);
    z = (z ^ (z >> 33)).wrapping_mul(0xff51_afd7_ed55_8ccd);
    z = (z ^ (z >> 33)).wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    z ^ (z >> 33)
}

/// The three slots (one per block) and the fingerprint of a mixed hash.
fn slots(m: u64, block: usize) -> ([usize; 3], u8) {
    let r = |i: usize| {
        i * block + ((m.rotate_left(21 * i as u32) as u32 as u64 * block as u64) >> 32) as usize
    };
    ([r(0), r(1), r(2)], (m ^ (m >> 32)) as u8)
}

impl Xor8Filter {
    /// Peels (removes keys alone in a slot), then fills slots in reverse.
    fn build(hashes: &[u64]) -> std::result::Result<Xor8Filter, String> {
        let mut keys = hashes.to_vec();
        keys.sort_unstable();
        keys.dedup();
        let block = (keys.len() as f64 * 1.23 / 3.0).ceil() as usize + 32 / 3 + 1;
        for attempt in 0..64u64 {
            let seed = mix(attempt, 0x9e37_79b9_7f4a_7c15);
            let mut count = vec![0u32; 3 * block];
            let mut xors = vec![0u64; 3 * block];
            for &k in &keys {
                let m = mix(k, seed);
                for s in slots(m, block).0 {
                    count[s] += 1;
                    xors[s] ^= m;
                }
            }
            let mut queue: Vec<usize> = (0..3 * block).filter(|&s| count[s] == 1).collect();
            let mut order: Vec<(u64, usize)> = Vec::with_capacity(keys.len());
            while let Some(s) = queue.pop() {
                if count[s] != 1 {
                    continue;
                }
                let m = xors[s];
                order.push((m, s));
                for t in slots(m, block).0 {
                    count[t] -= 1;
                    xors[t] ^= m;
                    if count[t] == 1 {
                        queue.push(t);
                    }
                }
            }
            if order.len() < keys.len() {
                continue; // a 2-core is left: try another seed
            }
            let mut f = Xor8Filter {
                seed,
                block,
                keys: keys.len() as u64,
                slots: vec![0; 3 * block],
            };
            for &(m, s) in order.iter().rev() {
                let (at, fp) = slots(m, block);
                // `s` is still 0: the xor of the three is `fp`.
                f.slots[s] = fp ^ f.slots[at[0]] ^ f.slots[at[1]] ^ f.slots[at[2]];
            }
            return Ok(f);
        }
        Err(format!("{} keys did not peel in 64 attempts", keys.len()))
    }
}

impl KeyFilter for Xor8Filter {
    fn may_contain(&self, hash: u64) -> bool {
        let (at, fp) = slots(mix(hash, self.seed), self.block);
        fp == self.slots[at[0]] ^ self.slots[at[1]] ^ self.slots[at[2]]
    }
    fn key_count(&self) -> u64 {
        self.keys
    }
    fn memory_bytes(&self) -> usize {
        self.slots.len()
    }
    fn predicted_fpr(&self) -> f64 {
        (self.keys.min(1) as f64) / 256.0 // 0 for the filter of no keys
    }
}

impl FilterFamily for Xor8 {
    fn name(&self) -> &str {
        "xor8"
    }
    fn model_fpr(&self, _bits_per_key: f64, _num_probes: u32) -> f64 {
        1.0 / 256.0
    }
    /// Bytes: seed (8), keys (8), then the slots, all little-endian.
    fn build(&self, hashes: &[u64], _bits: f64, _k: u32) -> std::result::Result<Vec<u8>, String> {
        let f = Xor8Filter::build(hashes)?;
        let mut out = Vec::with_capacity(16 + f.slots.len());
        out.extend_from_slice(&f.seed.to_le_bytes());
        out.extend_from_slice(&f.keys.to_le_bytes());
        out.extend_from_slice(&f.slots);
        Ok(out)
    }
    fn open(&self, bytes: &[u8]) -> std::result::Result<Filter, FilterDecodeError> {
        let word = |at: usize| Some(u64::from_le_bytes(bytes.get(at..at + 8)?.try_into().ok()?));
        let (Some(seed), Some(keys)) = (word(0), word(8)) else {
            return Err(FilterDecodeError("xor8: short header".into()));
        };
        let slots = bytes[16..].to_vec();
        if slots.is_empty() || !slots.len().is_multiple_of(3) || (slots.len() as u64) < keys {
            return Err(FilterDecodeError("xor8: slots do not fit the keys".into()));
        }
        Ok(Filter::registered(Xor8Filter {
            seed,
            block: slots.len() / 3,
            keys,
            slots,
        }))
    }
}

/// Filter bits per key as built; filters asked for a missing key; those that
/// said "maybe" (each a wasted block read).
#[derive(Debug, Clone, Copy)]
pub struct Report {
    pub bits_per_key: f64,
    pub checks: u64,
    pub false_positives: u64,
}

/// Loads `keys` keys filtered by `policy`, then asks for `misses` keys
/// between them, which only a filter can turn away.
pub fn run(dir: &std::path::Path, policy: FilterPolicy, keys: u64, misses: u64) -> Result<Report> {
    let opts = Options::default()
        .write_buffer_size(256 << 10)
        .target_file_size(256 << 10)
        .filters(FilterOptions::uniform(Some(policy)));
    let db = Db::open(dir, opts)?;
    for i in 0..keys {
        db.put(format!("key{:012}", 2 * i), [7u8; 32])?;
    }
    db.flush()?;
    db.reset_stats();
    let mut rng = SplitMix64::new(11);
    for _ in 0..misses {
        let absent = format!("key{:012}", 2 * rng.below(keys) + 1);
        assert!(db.get(absent)?.is_none());
    }
    let s = db.stats();
    let stored: u64 = s.levels.iter().map(|l| l.filtered_keys).sum();
    db.close()?;
    Ok(Report {
        bits_per_key: s.filter_bytes as f64 * 8.0 / stored.max(1) as f64,
        checks: s.total.filter_checks,
        false_positives: s.total.false_positives,
    })
}

/// Registers `xor8` once per process and returns its kind.
pub fn xor8() -> FilterKind {
    static KIND: std::sync::OnceLock<FilterKind> = std::sync::OnceLock::new();
    *KIND.get_or_init(|| bloomlsm::register_filter(Xor8).expect("xor8 registers"))
}

fn main() -> Result<()> {
    let (keys, misses) = (200_000, 200_000);
    println!("{keys} keys, {misses} lookups of missing keys\n");
    let xor = FilterPolicy::new(xor8(), 10.0);
    for policy in [xor, FilterPolicy::blocked512(10.0)] {
        let dir = tempfile::tempdir()?;
        let r = run(dir.path(), policy, keys, misses)?;
        let fpr = 100.0 * r.false_positives as f64 / r.checks as f64;
        let (name, bits, checks) = (policy.name(), r.bits_per_key, r.checks);
        println!("{name:<10} {bits:>5.2} bits/key  {checks:>8} filter checks  FPR {fpr:.3}%");
    }
    Ok(())
}
