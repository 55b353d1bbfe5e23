//! The tree's shape as `Db::stats` shows it.

use bloomlsm::Stats;

/// The levels holding files, L0 first.
pub fn full_levels(s: &Stats) -> Vec<usize> {
    s.levels
        .iter()
        .filter(|l| l.files > 0)
        .map(|l| l.level)
        .collect()
}
