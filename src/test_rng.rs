//! A seeded xorshift64 sequence for unit tests that draw random cases: fixed
//! seeds, the same cases on every run.

/// The xorshift64 sequence from `seed` (not 0): each call gives the next
/// value.
pub(crate) fn xorshift(mut seed: u64) -> impl FnMut() -> u64 {
    assert_ne!(seed, 0, "xorshift stays at 0");
    move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    }
}
