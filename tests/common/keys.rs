//! Readable keys and values: they sort as their numbers, and a value names
//! the key and the write that stored it, so a stale or misplaced value shows
//! in a failure. (The study's 16-byte random keys are
//! [`bloomlsm::workload`]'s.)

use bloomlsm::workload::SplitMix64;

/// `key` and `i` in six digits.
pub fn key(i: u64) -> Vec<u8> {
    format!("key{i:06}").into_bytes()
}

/// `key` and `i` in five digits.
pub fn key5(i: u64) -> Vec<u8> {
    format!("key{i:05}").into_bytes()
}

/// Key `i` of a scattered space of `space` keys (`key` and eight digits):
/// consecutive `i` land far apart, so sequential writes reach every file.
pub fn scattered_key(i: u64, space: u64) -> Vec<u8> {
    format!("key{:08}", i.wrapping_mul(0x9e37_79b9) % space).into_bytes()
}

/// Keys of 4 to 6 bytes sharing prefixes (`k000`, `k000b`, `k000bb`, …):
/// prefix compression, and key-range comparisons between keys of different
/// lengths.
pub fn varlen_key(i: u64) -> Vec<u8> {
    let mut k = format!("k{:03}", i / 3).into_bytes();
    for _ in 0..(i % 3) {
        k.push(b'a' + (i % 7) as u8);
    }
    k
}

/// The value op `op` writes under `k`: `k@op:` padded with dots to `len`
/// bytes (longer when the name is), or empty when `len` is 0.
pub fn op_value(k: &[u8], op: usize, len: usize) -> Vec<u8> {
    let mut v = format!("{}@{op}:", String::from_utf8_lossy(k)).into_bytes();
    v.resize(len.max(v.len()), b'.');
    if len == 0 {
        v.clear();
    }
    v
}

/// `k=tag|` and `rng.below(max_pad)` bytes `v`.
pub fn tagged_value(rng: &mut SplitMix64, k: &[u8], tag: &str, max_pad: u64) -> Vec<u8> {
    let mut v = format!("{}={tag}|", String::from_utf8_lossy(k)).into_bytes();
    v.extend(std::iter::repeat_n(b'v', rng.below(max_pad) as usize));
    v
}

/// A key for a failure message.
pub fn show(k: &[u8]) -> String {
    String::from_utf8_lossy(k).into_owned()
}

/// A random key around the [`varlen_key`] space of `space` keys: one draw
/// in `odds` is `a` (before every key), one `zzz` (after every key), one per
/// byte of `suffixes` a key of the space with that byte appended (between
/// two keys), and the others a key of the space.
pub fn random_varlen_key(rng: &mut SplitMix64, odds: u64, space: u64, suffixes: &[u8]) -> Vec<u8> {
    match rng.below(odds) {
        0 => b"a".to_vec(),
        1 => b"zzz".to_vec(),
        d if d < 2 + suffixes.len() as u64 => {
            let mut k = varlen_key(rng.below(space));
            k.push(suffixes[d as usize - 2]);
            k
        }
        _ => varlen_key(rng.below(space)),
    }
}
