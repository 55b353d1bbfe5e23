//! [`LookupHistory`]: the lookups a store has served across opens.

use super::IoCounters;

/// The lookups a store has served over its history (or since
/// [`crate::Db::reset_lookup_history`]), kept across opens in its
/// `LOOKUPS` file (docs/format.md): what [`crate::Db::advise`] reads.
///
/// A writable handle adds its own lookups to the file after each flush and
/// at close; a read-only handle reads the file and adds nothing; a whole
/// store in a bucket keeps no such file (its history is the process's). A process
/// killed between flushes loses the lookups it served since the last one:
/// the history is advice, not an account.
#[derive(Clone, Debug, Default, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub struct LookupHistory {
    /// When the counting began (Unix seconds): the store's first open that
    /// counted, or the last reset.
    pub since_unix_secs: u64,
    /// Point lookups.
    pub gets: u64,
    /// Of those, the ones that found their key.
    pub gets_found: u64,
    /// Each level's counters (index = level), as [`crate::LevelStats::io`]
    /// counts them: a file's counts go to the level it was in when counted.
    pub levels: Vec<IoCounters>,
    /// Set when the counts began again at this open because the `LOOKUPS`
    /// file could not be read: what was wrong with it.
    pub restarted: Option<String>,
}

impl LookupHistory {
    /// No lookups, counted from `since_unix_secs`, over `levels` levels.
    pub fn empty(since_unix_secs: u64, levels: usize) -> LookupHistory {
        LookupHistory {
            since_unix_secs,
            levels: vec![IoCounters::ZERO; levels],
            ..LookupHistory::default()
        }
    }

    /// Every level's counters added up.
    pub fn total(&self) -> IoCounters {
        let mut t = IoCounters::ZERO;
        for l in &self.levels {
            t.add(l);
        }
        t
    }

    /// Adds `other`'s counts (its levels beyond ours extend ours).
    pub(crate) fn add(&mut self, other: &LookupHistory) {
        self.gets += other.gets;
        self.gets_found += other.gets_found;
        if self.levels.len() < other.levels.len() {
            self.levels.resize(other.levels.len(), IoCounters::ZERO);
        }
        for (a, b) in self.levels.iter_mut().zip(&other.levels) {
            a.add(b);
        }
    }

    /// `self` less `other`, each count at least 0.
    pub(crate) fn saturating_sub(&self, other: &LookupHistory) -> LookupHistory {
        let zero = IoCounters::ZERO;
        LookupHistory {
            since_unix_secs: self.since_unix_secs,
            gets: self.gets.saturating_sub(other.gets),
            gets_found: self.gets_found.saturating_sub(other.gets_found),
            levels: self
                .levels
                .iter()
                .enumerate()
                .map(|(i, l)| l.saturating_sub(other.levels.get(i).unwrap_or(&zero)))
                .collect(),
            restarted: self.restarted.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn add_then_sub_gives_back_the_counts() {
        let mut a = LookupHistory::empty(7, 2);
        a.gets = 10;
        a.levels[1].filter_checks = 4;
        let mut b = LookupHistory::empty(9, 3);
        b.gets = 5;
        b.gets_found = 2;
        b.levels[2].false_positives = 1;
        let mut sum = a.clone();
        sum.add(&b);
        assert_eq!((sum.gets, sum.gets_found, sum.levels.len()), (15, 2, 3));
        assert_eq!(sum.since_unix_secs, 7);
        assert_eq!(sum.total().filter_checks, 4);
        let back = sum.saturating_sub(&b);
        assert_eq!(back.gets, 10);
        assert_eq!(back.levels[1].filter_checks, 4);
        assert_eq!(back.levels[2], IoCounters::ZERO);
        // Never below zero.
        assert_eq!(a.saturating_sub(&sum).gets, 0);
    }
}
