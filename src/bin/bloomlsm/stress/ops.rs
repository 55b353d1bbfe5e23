//! The kinds of operation a worker chooses from, their weights, and the
//! count of each done.

use std::sync::atomic::{AtomicU64, Ordering};

use bloomlsm::workload::SplitMix64;

/// One kind of operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Put,
    Delete,
    DeleteRange,
    Batch,
    Ingest,
    Get,
    MultiGet,
    Scan,
    ScanBackward,
    ScanBothEnds,
    PrefixScan,
    Seek,
    Snapshot,
    Flush,
    Compact,
    Maintain,
    RebuildFilters,
    Checkpoint,
    Keyspace,
    Reopen,
}

impl Op {
    /// Every kind, in report order.
    pub const ALL: [Op; 20] = [
        Op::Put,
        Op::Delete,
        Op::DeleteRange,
        Op::Batch,
        Op::Ingest,
        Op::Get,
        Op::MultiGet,
        Op::Scan,
        Op::ScanBackward,
        Op::ScanBothEnds,
        Op::PrefixScan,
        Op::Seek,
        Op::Snapshot,
        Op::Flush,
        Op::Compact,
        Op::Maintain,
        Op::RebuildFilters,
        Op::Checkpoint,
        Op::Keyspace,
        Op::Reopen,
    ];

    /// The name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Op::Put => "put",
            Op::Delete => "delete",
            Op::DeleteRange => "delete_range",
            Op::Batch => "batch",
            Op::Ingest => "ingest",
            Op::Get => "get",
            Op::MultiGet => "multi_get",
            Op::Scan => "scan",
            Op::ScanBackward => "scan_backward",
            Op::ScanBothEnds => "scan_both_ends",
            Op::PrefixScan => "prefix_scan",
            Op::Seek => "seek",
            Op::Snapshot => "snapshot_read",
            Op::Flush => "flush",
            Op::Compact => "compact",
            Op::Maintain => "maintain",
            Op::RebuildFilters => "rebuild_filters",
            Op::Checkpoint => "checkpoint",
            Op::Keyspace => "keyspace_create_drop",
            Op::Reopen => "reopen",
        }
    }

    /// How often it is chosen, in thousandths of the total weight (about:
    /// the weights sum to a little under 1000).
    fn weight(self) -> u64 {
        match self {
            Op::Put => 180,
            Op::Delete => 50,
            Op::DeleteRange => 20,
            Op::Batch => 60,
            Op::Ingest => 3,
            Op::Get => 200,
            Op::MultiGet => 60,
            Op::Scan => 35,
            Op::ScanBackward => 25,
            Op::ScanBothEnds => 10,
            Op::PrefixScan => 30,
            Op::Seek => 40,
            Op::Snapshot => 40,
            Op::Flush => 8,
            Op::Compact => 2,
            Op::Maintain => 5,
            Op::RebuildFilters => 3,
            Op::Checkpoint => 2,
            Op::Keyspace => 3,
            Op::Reopen => 1,
        }
    }

    /// A kind drawn by weight; `reopen` only when `reopen` is allowed.
    pub fn draw(rng: &mut SplitMix64, reopen: bool) -> Op {
        let kinds = || Op::ALL.into_iter().filter(|&o| reopen || o != Op::Reopen);
        let total: u64 = kinds().map(Op::weight).sum();
        let mut x = rng.below(total);
        for o in kinds() {
            if x < o.weight() {
                return o;
            }
            x -= o.weight();
        }
        Op::Get
    }

    fn index(self) -> usize {
        Op::ALL.iter().position(|&o| o == self).unwrap_or(0)
    }
}

/// Operations done, per kind.
#[derive(Default)]
pub struct Counts([AtomicU64; Op::ALL.len()]);

impl Counts {
    /// Counts one `op` done.
    pub fn add(&self, op: Op) {
        self.0[op.index()].fetch_add(1, Ordering::Relaxed);
    }

    /// The counts, in [`Op::ALL`] order.
    pub fn snapshot(&self) -> [u64; Op::ALL.len()] {
        std::array::from_fn(|i| self.0[i].load(Ordering::Relaxed))
    }
}

/// The line a `--kill` child prints of its counts: `counts N N ...`.
pub fn counts_line(counts: &[u64]) -> String {
    let mut s = "counts".to_string();
    for c in counts {
        s.push_str(&format!(" {c}"));
    }
    s
}

/// The counts of a [`counts_line`]; `None` for any other line.
pub fn parse_counts_line(line: &str) -> Option<[u64; Op::ALL.len()]> {
    let mut words = line.split_whitespace();
    if words.next() != Some("counts") {
        return None;
    }
    let v: Vec<u64> = words.map(|w| w.parse().ok()).collect::<Option<_>>()?;
    v.try_into().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_lines_read_back() {
        let c: [u64; Op::ALL.len()] = std::array::from_fn(|i| i as u64 * 7);
        assert_eq!(parse_counts_line(&counts_line(&c)), Some(c));
        assert_eq!(parse_counts_line("counts 1 2"), None);
        assert_eq!(parse_counts_line("other"), None);
    }

    #[test]
    fn every_kind_is_drawn() {
        let mut rng = SplitMix64::new(1);
        let mut seen = [false; Op::ALL.len()];
        for _ in 0..200_000 {
            seen[Op::draw(&mut rng, true).index()] = true;
        }
        assert!(seen.iter().all(|&s| s));
        assert!((0..10_000).all(|_| Op::draw(&mut rng, false) != Op::Reopen));
    }
}
