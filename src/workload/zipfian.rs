//! YCSB's key choosers, written to draw the same distributions as its
//! `ZipfianGenerator`, `ScrambledZipfianGenerator` and
//! `SkewedLatestGenerator` (Gray et al., "Quickly generating billion-record
//! synthetic databases", SIGMOD 1994), deterministic for a
//! [`SplitMix64`] seed.

use super::SplitMix64;

/// YCSB's default Zipfian constant (`zipfian.ZIPFIAN_CONSTANT`).
pub const YCSB_THETA: f64 = 0.99;

/// The items a [`ScrambledZipfian`] draws from before hashing them onto the
/// key space: YCSB's `ScrambledZipfianGenerator.ITEM_COUNT`, 10^10.
const SCRAMBLED_ITEMS: u64 = 10_000_000_000;

/// `zeta(10^10, 0.99)`, YCSB's precomputed `ScrambledZipfianGenerator.ZETAN`
/// (summing 10^10 terms at start-up would take a minute).
const SCRAMBLED_ZETAN: f64 = 26.469_028_201_783_02;

/// `zeta(n, theta) = sum_{i=1..n} 1 / i^theta`.
pub fn zeta(n: u64, theta: f64) -> f64 {
    zeta_from(0, n, theta, 0.0)
}

/// `zeta(n, theta)` continued from `sum = zeta(from, theta)`.
fn zeta_from(from: u64, n: u64, theta: f64, sum: f64) -> f64 {
    (from..n).fold(sum, |acc, i| acc + 1.0 / ((i + 1) as f64).powf(theta))
}

/// Zipfian over `0..n`: item `i` has probability `1 / ((i + 1)^theta ·
/// zeta(n, theta))`, item 0 the most popular (YCSB's `ZipfianGenerator`,
/// Gray's algorithm: items 0 and 1 exact, the rest from a closed-form
/// approximation of the inverse CDF). The item count may grow between
/// draws ([`Zipfian::next_of`]); zeta is then extended, not recomputed.
#[derive(Clone, Debug)]
pub struct Zipfian {
    items: u64,
    theta: f64,
    alpha: f64,
    zetan: f64,
    zeta2: f64,
    eta: f64,
}

impl Zipfian {
    /// Over `0..n` (`n >= 1`) with exponent `theta` in `[0, 1)`.
    pub fn new(n: u64, theta: f64) -> Self {
        Self::with_zeta(n, theta, zeta(n, theta))
    }

    fn with_zeta(n: u64, theta: f64, zetan: f64) -> Self {
        let n = n.max(1);
        let zeta2 = zeta(2, theta);
        let mut z = Zipfian {
            items: n,
            theta,
            alpha: 1.0 / (1.0 - theta),
            zetan,
            zeta2,
            eta: 0.0,
        };
        z.eta = z.eta_for(n);
        z
    }

    fn eta_for(&self, n: u64) -> f64 {
        (1.0 - (2.0 / n as f64).powf(1.0 - self.theta)) / (1.0 - self.zeta2 / self.zetan)
    }

    /// The item count drawn from.
    pub fn items(&self) -> u64 {
        self.items
    }

    /// One draw over `0..items()`.
    pub fn next(&mut self, rng: &mut SplitMix64) -> u64 {
        self.draw(rng.unit())
    }

    /// One draw over `0..n`: a larger `n` than before extends zeta by the
    /// new terms (YCSB's `nextLong(itemcount)`); a smaller one recomputes it.
    pub fn next_of(&mut self, n: u64, rng: &mut SplitMix64) -> u64 {
        let n = n.max(1);
        if n != self.items {
            self.zetan = if n > self.items {
                zeta_from(self.items, n, self.theta, self.zetan)
            } else {
                zeta(n, self.theta)
            };
            self.items = n;
            self.eta = self.eta_for(n);
        }
        self.next(rng)
    }

    /// The item for the uniform variate `u` in `[0, 1)`.
    fn draw(&self, u: f64) -> u64 {
        let uz = u * self.zetan;
        if uz < 1.0 {
            return 0;
        }
        if uz < 1.0 + 0.5f64.powf(self.theta) {
            return 1.min(self.items - 1);
        }
        let x = self.items as f64 * (self.eta * u - self.eta + 1.0).powf(self.alpha);
        (x as u64).min(self.items - 1)
    }
}

/// YCSB's 64-bit FNV-1a over the eight little-endian bytes of `v`, made
/// non-negative as Java's `Math.abs` of a `long` (`Utils.fnvhash64`).
pub fn fnv_hash64(mut v: u64) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for _ in 0..8 {
        h ^= v & 0xff;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
        v >>= 8;
    }
    (h as i64).wrapping_abs() as u64
}

/// YCSB's request distribution `zipfian`: a Zipfian(0.99) over 10^10 items,
/// each hashed onto `0..n` (`ScrambledZipfianGenerator`), so that the
/// popular keys are spread over the key space instead of clustered at its
/// start. Some items share a key, so the hottest key is a little hotter
/// than a plain Zipfian's.
#[derive(Clone, Debug)]
pub struct ScrambledZipfian {
    n: u64,
    zipf: Zipfian,
}

impl ScrambledZipfian {
    /// Over `0..n` (`n >= 1`).
    pub fn new(n: u64) -> Self {
        ScrambledZipfian {
            n: n.max(1),
            zipf: Zipfian::with_zeta(SCRAMBLED_ITEMS, YCSB_THETA, SCRAMBLED_ZETAN),
        }
    }

    /// One draw over `0..n`.
    pub fn next(&mut self, rng: &mut SplitMix64) -> u64 {
        fnv_hash64(self.zipf.next(rng)) % self.n
    }
}

/// YCSB's request distribution `latest`: the most recently inserted items
/// the most popular, `last - Zipfian(0.99 over 0..=last)`
/// (`SkewedLatestGenerator`).
#[derive(Clone, Debug)]
pub struct SkewedLatest {
    zipf: Zipfian,
}

impl SkewedLatest {
    /// For `n >= 1` items inserted so far.
    pub fn new(n: u64) -> Self {
        SkewedLatest {
            zipf: Zipfian::new(n.max(1), YCSB_THETA),
        }
    }

    /// One draw over `0..n`, where `n` (the items inserted so far) may have
    /// grown since the last draw.
    pub fn next(&mut self, n: u64, rng: &mut SplitMix64) -> u64 {
        let n = n.max(1);
        n - 1 - self.zipf.next_of(n, rng)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(n: u64, draws: u64, mut f: impl FnMut(&mut SplitMix64) -> u64) -> Vec<u64> {
        let mut rng = SplitMix64::new(42);
        let mut c = vec![0u64; n as usize];
        for _ in 0..draws {
            c[f(&mut rng) as usize] += 1;
        }
        c
    }

    /// The two hottest items come up at their exact Zipfian rates,
    /// `1 / zeta(n)` and `2^-theta / zeta(n)` (n = 1000, theta = 0.99:
    /// 12.9% and 6.5%), and the others near theirs.
    #[test]
    fn zipfian_matches_theory() {
        let (n, draws) = (1000, 1_000_000);
        let mut z = Zipfian::new(n, YCSB_THETA);
        let c = counts(n, draws, |r| z.next(r));
        let zn = zeta(n, YCSB_THETA);
        let p = |i: u64| 1.0 / ((i + 1) as f64).powf(YCSB_THETA) / zn;
        let f = |i: u64| c[i as usize] as f64 / draws as f64;
        assert!((0.125..0.135).contains(&p(0)), "{}", p(0));
        // Binomial sd at 10^6 draws is under 0.04% here.
        for i in [0, 1] {
            assert!(
                (f(i) - p(i)).abs() < 0.002,
                "item {i}: {} vs {}",
                f(i),
                p(i)
            );
        }
        // The approximation's tail: within 20% of the model, in buckets.
        for (lo, hi) in [(2, 10), (10, 100), (100, 1000)] {
            let got: f64 = (lo..hi).map(f).sum();
            let want: f64 = (lo..hi).map(p).sum();
            assert!(
                (got / want - 1.0).abs() < 0.2,
                "{lo}..{hi}: {got} vs {want}"
            );
        }
        // Monotone in rank, roughly: the first ten decrease.
        assert!(c[..10].windows(2).all(|w| w[0] as f64 >= w[1] as f64 * 0.9));
    }

    /// Growing the item count extends zeta to what a fresh generator has.
    #[test]
    fn zeta_extends_incrementally() {
        let mut z = Zipfian::new(100, 0.99);
        let mut rng = SplitMix64::new(1);
        assert!(z.next_of(250, &mut rng) < 250);
        let fresh = Zipfian::new(250, 0.99);
        assert!((z.zetan - fresh.zetan).abs() < 1e-9);
        assert!((z.eta - fresh.eta).abs() < 1e-12);
        assert_eq!(z.items(), 250);
        assert!(
            (zeta(10_000, 0.99) - zeta_from(5000, 10_000, 0.99, zeta(5000, 0.99))).abs() < 1e-9
        );
    }

    /// Scrambled: in range, as skewed as a Zipfian (the hottest key about
    /// 1 / zeta(10^10) = 3.8% of draws), its hot keys spread over the range.
    #[test]
    fn scrambled_is_skewed_and_spread() {
        let (n, draws) = (1000, 200_000);
        let mut z = ScrambledZipfian::new(n);
        let c = counts(n, draws, |r| z.next(r));
        let mut sorted = c.clone();
        sorted.sort_unstable_by(|a, b| b.cmp(a));
        let top = sorted[0] as f64 / draws as f64;
        assert!((0.035..0.06).contains(&top), "top {top}");
        let hottest = c.iter().position(|&x| x == sorted[0]).unwrap();
        assert_ne!(hottest, 0, "the hottest key is hashed away from 0");
        // The ten hottest keys are not all in one tenth of the range.
        let mut hot: Vec<usize> = (0..n as usize).collect();
        hot.sort_unstable_by(|&a, &b| c[b].cmp(&c[a]));
        let tenths: std::collections::HashSet<usize> = hot[..10].iter().map(|i| i / 100).collect();
        assert!(tenths.len() > 3, "{:?}", &hot[..10]);
    }

    /// Latest: the newest item the most popular, and new items picked up.
    #[test]
    fn latest_favours_new_items() {
        let mut l = SkewedLatest::new(1000);
        let c = counts(1000, 100_000, |r| l.next(1000, r));
        assert!(c[999] > c[998] && c[998] > c[990] && c[990] > c[500]);
        let f = c[999] as f64 / 100_000.0;
        assert!((f - 1.0 / zeta(1000, YCSB_THETA)).abs() < 0.005, "{f}");
        let mut rng = SplitMix64::new(3);
        let hits = (0..1000).filter(|_| l.next(1001, &mut rng) == 1000).count();
        assert!(hits > 80, "{hits}");
    }

    /// YCSB's FNV: the values its Java code gives, and never negative.
    #[test]
    fn fnv_matches_ycsb() {
        // Utils.fnvhash64's steps for 0 and 1.
        assert_eq!(fnv_hash64(0), 0x5738_07cd_d7e5_c63b);
        assert_eq!(fnv_hash64(1), 0x7632_ced6_e2d5_105c);
        assert!((0..1000).all(|v| (fnv_hash64(v) as i64) >= 0));
        assert_ne!(fnv_hash64(1), fnv_hash64(2));
    }

    /// Deterministic for a seed.
    #[test]
    fn draws_are_deterministic() {
        let a = counts(100, 1000, {
            let mut z = ScrambledZipfian::new(100);
            move |r| z.next(r)
        });
        let b = counts(100, 1000, {
            let mut z = ScrambledZipfian::new(100);
            move |r| z.next(r)
        });
        assert_eq!(a, b);
    }
}
