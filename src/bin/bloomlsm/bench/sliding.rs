//! [`Sliding`]: the request distribution `sliding`, a hot key range that
//! moves. `HOT_OPS` of the requests go to the records whose keys lie in a
//! window of `HOT_DATA` of the key space (uniform within it and within the
//! rest), and the window moves up the key order by [`SLIDE`] of the key
//! space per `--lookups` requests, across the YCSB workloads of a run,
//! wrapping at the top: what a store whose keys lead with a time or a
//! sequence sees (today's range is read most, yesterday's less so), and
//! what an allocation that sizes filters by the lookups it has seen must
//! follow.
//!
//! The scan studies (`--workload range`, `prefix`) draw their scans'
//! starts and prefixes through [`ScanChooser`]: uniform, or the same hot
//! range, fixed at the bottom of the key space (`hotspot`) or moving
//! (`sliding`, one `SLIDE` per `--lookups` scans, across a store's phases).

use crate::workload::{SplitMix64, present_key};

use super::benchmarks::Distribution;
use super::ycsb::{HOT_DATA, HOT_OPS};

/// How far the window moves per `--lookups` requests, as a share of the
/// key space.
pub const SLIDE: f64 = 0.1;

/// The sliding hot range's chooser (module docs).
pub struct Sliding {
    seed: u64,
    /// Requests drawn by the run so far (this workload's included): where
    /// the window stands.
    drawn: u64,
    /// Requests per `SLIDE` of movement (`--lookups`); `None`: the window
    /// stays at the bottom of the key space (`hotspot`).
    per_slide: Option<u64>,
    /// A record's place in the key order (`seed`, record).
    place: fn(u64, u64) -> u64,
    /// `(first 8 bytes of the key, record)` of records `0..sorted_to`,
    /// sorted.
    sorted: Vec<(u64, u64)>,
    /// Records sorted so far; later ones (inserts) join in batches, when
    /// they are 1/64 of the sorted ones: until then they are not drawn.
    sorted_to: u64,
}

/// The first 8 bytes of record `k`'s key, as a number: its place in the
/// key order.
pub fn place(seed: u64, k: u64) -> u64 {
    let key = present_key(seed, k);
    u64::from_be_bytes(key[..8].try_into().expect("8 bytes"))
}

impl Sliding {
    /// A chooser keyed by `seed`, for a run that has drawn `drawn`
    /// requests before this workload, its window moving `SLIDE` per
    /// `per_slide` requests.
    pub fn new(seed: u64, drawn: u64, per_slide: u64) -> Self {
        Self::over(seed, drawn, Some(per_slide), place)
    }

    /// A chooser of records whose places in the key order are
    /// `place(seed, record)`, for a run that has drawn `drawn` requests
    /// before; its window moves `SLIDE` per `per_slide` requests, or
    /// (`None`) stays at the bottom of the key space.
    pub fn over(seed: u64, drawn: u64, per_slide: Option<u64>, place: fn(u64, u64) -> u64) -> Self {
        Sliding {
            seed,
            drawn,
            per_slide: per_slide.map(|p| p.max(1)),
            place,
            sorted: Vec::new(),
            sorted_to: 0,
        }
    }

    /// The requests drawn by the run so far.
    pub fn drawn(&self) -> u64 {
        self.drawn
    }

    /// The window's low end now, in the key order's `u64` space.
    pub fn window_start(&self) -> u64 {
        let Some(per_slide) = self.per_slide else {
            return 0;
        };
        let at = self.drawn as f64 / per_slide as f64 * SLIDE;
        (at.fract() * 2f64.powi(64)) as u64
    }

    /// A point of the key space (a key's first 8 bytes): `HOT_OPS` of
    /// them uniform in the window, the rest uniform outside it.
    pub fn point(&mut self, rng: &mut SplitMix64) -> u64 {
        let lo = self.window_start();
        self.drawn += 1;
        let width = (HOT_DATA * 2f64.powi(64)) as u64;
        if rng.unit() < HOT_OPS {
            lo.wrapping_add(rng.below(width))
        } else {
            lo.wrapping_add(width)
                .wrapping_add(rng.below(width.wrapping_neg()))
        }
    }

    /// Whether `x` (a key's place) is in the window starting at `lo`.
    #[cfg(test)]
    fn hot(lo: u64, x: u64) -> bool {
        x.wrapping_sub(lo) < (HOT_DATA * 2f64.powi(64)) as u64
    }

    /// The record of the next request among `records` records.
    pub fn next(&mut self, records: u64, rng: &mut SplitMix64) -> u64 {
        let behind = records.saturating_sub(self.sorted_to);
        if self.sorted.is_empty() || behind > self.sorted_to / 64 {
            let (seed, place) = (self.seed, self.place);
            self.sorted
                .extend((self.sorted_to..records).map(|k| (place(seed, k), k)));
            self.sorted.sort_unstable();
            self.sorted_to = records;
        }
        let lo = self.window_start();
        self.drawn += 1;
        let n = self.sorted.len() as u64;
        if n == 0 {
            return 0;
        }
        // The window's records: one run of the sorted list, or two when it
        // wraps past the top of the key space.
        let hi = lo.wrapping_add((HOT_DATA * 2f64.powi(64)) as u64);
        let at = |x: u64| self.sorted.partition_point(|&(p, _)| p < x) as u64;
        let (a, b) = (at(lo), at(hi));
        let in_window = if lo <= hi { b - a } else { n - a + b };
        let want_hot = rng.unit() < HOT_OPS;
        if want_hot && in_window > 0 {
            let i = (a + rng.below(in_window)) % n;
            return self.sorted[i as usize].1;
        }
        if in_window == n {
            return self.sorted[rng.below(n) as usize].1;
        }
        // A cold record: the ones after the window, wrapping.
        let i = (b + rng.below(n - in_window)) % n;
        self.sorted[i as usize].1
    }

    /// Whether record `k` is in the window now.
    #[cfg(test)]
    fn is_hot(&self, k: u64) -> bool {
        Self::hot(self.window_start(), (self.place)(self.seed, k))
    }
}

/// The name of a scan study's request distribution (`--request-distribution`;
/// uniform when not given), for its reports.
pub fn scan_distribution_name(dist: Option<Distribution>) -> String {
    format!("{:?}", dist.unwrap_or(Distribution::Uniform)).to_lowercase()
}

/// How a scan study draws its scans (module docs).
pub enum ScanChooser {
    Uniform,
    Window(Sliding),
}

impl ScanChooser {
    /// The chooser of `--request-distribution` (`None`: uniform) for a
    /// store's scans of records placed by `place`, `per_slide` scans per
    /// `SLIDE`; an error names the distributions the scan studies take.
    pub fn new(
        dist: Option<Distribution>,
        seed: u64,
        per_slide: u64,
        place: fn(u64, u64) -> u64,
    ) -> Result<Self, String> {
        match dist {
            None | Some(Distribution::Uniform) => Ok(ScanChooser::Uniform),
            Some(Distribution::Hotspot) => {
                Ok(ScanChooser::Window(Sliding::over(seed, 0, None, place)))
            }
            Some(Distribution::Sliding) => Ok(ScanChooser::Window(Sliding::over(
                seed,
                0,
                Some(per_slide),
                place,
            ))),
            Some(d) => Err(format!(
                "the scan studies take --request-distribution uniform, hotspot or sliding \
                 (a range of the key order), not {}",
                format!("{d:?}").to_lowercase()
            )),
        }
    }

    /// The same window, now placing records by `place` (another family of
    /// keys), where this one stands.
    pub fn replace(&self, seed: u64, place: fn(u64, u64) -> u64) -> Self {
        match self {
            ScanChooser::Uniform => ScanChooser::Uniform,
            ScanChooser::Window(s) => {
                ScanChooser::Window(Sliding::over(seed, s.drawn, s.per_slide, place))
            }
        }
    }

    /// A record among `records`.
    pub fn record(&mut self, records: u64, rng: &mut SplitMix64) -> u64 {
        match self {
            ScanChooser::Uniform => rng.below(records),
            ScanChooser::Window(s) => s.next(records, rng),
        }
    }

    /// A point of the key space below `bound` (a window's point above it
    /// is taken down to the last below it).
    pub fn point_below(&mut self, rng: &mut SplitMix64, bound: u64) -> u64 {
        match self {
            ScanChooser::Uniform => rng.below(bound),
            ScanChooser::Window(s) => s.point(rng).min(bound.saturating_sub(1)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `HOT_OPS` of the draws land in the window, which holds about
    /// `HOT_DATA` of the records and moves `SLIDE` of the key space per
    /// `per_slide` draws, across choosers of one run.
    #[test]
    fn the_hot_range_moves() {
        let (seed, records, per_slide) = (5, 20_000, 10_000);
        let mut rng = SplitMix64::new(3);
        let mut s = Sliding::new(seed, 0, per_slide);
        assert_eq!(s.window_start(), 0);
        let mut hot = 0;
        let draws = 10_000;
        for _ in 0..draws {
            // The window as the draw sees it.
            let lo = s.window_start();
            let k = s.next(records, &mut rng);
            assert!(k < records);
            hot += u64::from(Sliding::hot(lo, place(seed, k)));
        }
        let share = hot as f64 / draws as f64;
        assert!((share - HOT_OPS).abs() < 0.015, "{share}");
        // One SLIDE further after per_slide draws.
        let moved = s.window_start() as f64 / 2f64.powi(64);
        assert!((moved - SLIDE).abs() < 1e-9, "{moved}");
        let held = (0..records).filter(|&k| s.is_hot(k)).count() as f64;
        assert!((held / records as f64 - HOT_DATA).abs() < 0.02, "{held}");
        // The next workload's chooser goes on from where this one stopped.
        let t = Sliding::new(seed, s.drawn(), per_slide);
        assert_eq!(t.window_start(), s.window_start());
        // Past the top of the key space, the window wraps.
        let mut w = Sliding::new(seed, 9 * per_slide, per_slide);
        assert!(w.window_start() as f64 / 2f64.powi(64) > 0.89);
        let mut hot = 0;
        for _ in 0..5_000 {
            let lo = w.window_start();
            let k = w.next(records, &mut rng);
            hot += u64::from(Sliding::hot(lo, place(seed, k)));
        }
        assert!((hot as f64 / 5_000.0 - HOT_OPS).abs() < 0.03, "{hot}");
        // Records inserted later join once they are 1/64 of the rest.
        assert!((0..1000).all(|_| w.next(records + 400, &mut rng) < records + 400));
        assert_eq!(w.sorted_to, records + 400);
    }

    /// A scan chooser's points fall `HOT_OPS` in the window, which stays
    /// at the bottom of the key space for `hotspot` and moves for
    /// `sliding`; uniform draws are `below`'s.
    #[test]
    fn scan_points_land_in_the_window() {
        let mut rng = SplitMix64::new(9);
        for (dist, moves) in [
            (Distribution::Hotspot, false),
            (Distribution::Sliding, true),
        ] {
            let mut c = ScanChooser::new(Some(dist), 5, 1_000, place).unwrap();
            let ScanChooser::Window(w) = &c else {
                panic!("{dist:?} draws from a window")
            };
            assert_eq!(w.window_start(), 0);
            let mut hot = 0;
            for _ in 0..2_000 {
                let lo = match &c {
                    ScanChooser::Window(w) => w.window_start(),
                    ScanChooser::Uniform => unreachable!(),
                };
                hot += u64::from(Sliding::hot(lo, c.point_below(&mut rng, u64::MAX)));
            }
            assert!(
                (hot as f64 / 2_000.0 - HOT_OPS).abs() < 0.03,
                "{dist:?} {hot}"
            );
            let ScanChooser::Window(w) = &c else {
                unreachable!()
            };
            let moved = w.window_start() as f64 / 2f64.powi(64);
            let want = if moves { 2.0 * SLIDE } else { 0.0 };
            assert!((moved - want).abs() < 1e-9, "{dist:?} {moved}");
            // The next family of keys goes on from the same window.
            let d = c.replace(5, place);
            let ScanChooser::Window(v) = &d else {
                unreachable!()
            };
            assert_eq!(v.window_start(), w.window_start());
        }
        let mut u = ScanChooser::new(None, 5, 1_000, place).unwrap();
        let mut same = SplitMix64::new(4);
        let mut r = SplitMix64::new(4);
        assert_eq!(u.point_below(&mut r, 1_000), same.below(1_000));
        assert!(ScanChooser::new(Some(Distribution::Zipfian), 5, 1, place).is_err());
    }
}
