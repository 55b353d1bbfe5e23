//! The workloads `--benchmarks` names: db_bench's ([`Benchmark`]) and
//! YCSB's core workloads A to F ([`Workload`]: each one's operation mix and
//! request distribution), and the request distributions
//! `--request-distribution` chooses among ([`Distribution`]). The
//! workloads run in `db_bench.rs` and `ycsb.rs`.

use clap::ValueEnum;

/// One db_bench workload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Benchmark {
    /// `--keys` puts in key order.
    FillSeq,
    /// `--keys` puts in random key order (the study's load order).
    FillRandom,
    /// `--keys` puts of existing keys drawn at random, new values.
    Overwrite,
    /// `--lookups` gets of existing keys drawn at random.
    ReadRandom,
    /// `--lookups` gets of keys the store never held.
    ReadMissing,
    /// `--lookups` seeks to a random existing key, each reading one entry.
    SeekRandom,
    /// `--lookups` gets of existing keys while one thread overwrites
    /// random keys as fast as it can.
    ReadWhileWriting,
    /// Flushes the memtables to L0 (db_bench's `flush`): one timed step.
    Flush,
    /// Runs every due flush and compaction, then the work an idle store's
    /// compaction thread does, before the next workload (db_bench's
    /// `waitforcompaction`, [`bloomlsm::Db::wait_for_compaction`]): one
    /// timed step.
    WaitForCompaction,
    /// One of YCSB's core workloads, `--lookups` operations ([`ycsb`]).
    Ycsb(Workload),
}

/// The workloads, by db_bench's names, then YCSB's as `ycsb-a` to `ycsb-f`.
pub const BENCHMARKS: [(&str, Benchmark); 15] = [
    ("fillseq", Benchmark::FillSeq),
    ("fillrandom", Benchmark::FillRandom),
    ("overwrite", Benchmark::Overwrite),
    ("readrandom", Benchmark::ReadRandom),
    ("readmissing", Benchmark::ReadMissing),
    ("seekrandom", Benchmark::SeekRandom),
    ("readwhilewriting", Benchmark::ReadWhileWriting),
    ("flush", Benchmark::Flush),
    ("waitforcompaction", Benchmark::WaitForCompaction),
    ("ycsb-a", Benchmark::Ycsb(Workload::A)),
    ("ycsb-b", Benchmark::Ycsb(Workload::B)),
    ("ycsb-c", Benchmark::Ycsb(Workload::C)),
    ("ycsb-d", Benchmark::Ycsb(Workload::D)),
    ("ycsb-e", Benchmark::Ycsb(Workload::E)),
    ("ycsb-f", Benchmark::Ycsb(Workload::F)),
];

impl Benchmark {
    /// db_bench's name.
    pub fn name(self) -> &'static str {
        BENCHMARKS
            .iter()
            .find(|(_, b)| *b == self)
            .map_or("?", |(n, _)| n)
    }

    /// Whether the workload writes.
    pub fn writes(self) -> bool {
        matches!(
            self,
            Benchmark::FillSeq | Benchmark::FillRandom | Benchmark::Overwrite
        )
    }

    /// Whether the workload is one step on the store rather than many
    /// operations.
    pub fn is_step(self) -> bool {
        matches!(self, Benchmark::Flush | Benchmark::WaitForCompaction)
    }
}

/// Parses one name of `--benchmarks`; an unknown one lists the known.
pub fn parse_benchmark(s: &str) -> Result<Benchmark, String> {
    let s = s.trim();
    BENCHMARKS
        .iter()
        .find(|(n, _)| *n == s)
        .map(|(_, b)| *b)
        .ok_or_else(|| {
            let known: Vec<&str> = BENCHMARKS.iter().map(|(n, _)| *n).collect();
            format!("unknown benchmark {s:?} (known: {})", known.join(", "))
        })
}

/// One of YCSB's core workloads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Workload {
    A,
    B,
    C,
    D,
    E,
    F,
}

/// A YCSB request distribution (`requestdistribution`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Distribution {
    /// Scrambled Zipfian, theta 0.99: popular keys spread over the key space.
    Zipfian,
    /// The most recently inserted keys the most popular.
    Latest,
    /// Every key equally likely.
    Uniform,
    /// YCSB's hotspot over the keys' order: 80% of the requests go to the
    /// records whose keys are the lowest 20% of the key space, uniform
    /// within it and within the rest.
    Hotspot,
    /// A hot key range that moves: 80% of the requests go to a window of
    /// 20% of the key space, which moves up the key order by a tenth of it
    /// per `--lookups` requests, across the run's workloads.
    Sliding,
}

impl Workload {
    /// The operation proportions: read, update, insert, scan,
    /// read-modify-write.
    pub fn mix(self) -> [f64; 5] {
        match self {
            Workload::A => [0.5, 0.5, 0.0, 0.0, 0.0],
            Workload::B => [0.95, 0.05, 0.0, 0.0, 0.0],
            Workload::C => [1.0, 0.0, 0.0, 0.0, 0.0],
            Workload::D => [0.95, 0.0, 0.05, 0.0, 0.0],
            Workload::E => [0.0, 0.0, 0.05, 0.95, 0.0],
            Workload::F => [0.5, 0.0, 0.0, 0.0, 0.5],
        }
    }

    /// The request distribution of YCSB's workload file.
    pub fn distribution(self) -> Distribution {
        if self == Workload::D {
            Distribution::Latest
        } else {
            Distribution::Zipfian
        }
    }

    /// Whether the workload writes (its device bytes then include its
    /// compactions' reads).
    pub fn writes(self) -> bool {
        self != Workload::C
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_unknown_lists_known() {
        for (name, b) in BENCHMARKS {
            assert_eq!(parse_benchmark(name), Ok(b));
            assert_eq!(b.name(), name);
        }
        let e = parse_benchmark("readseq").unwrap_err();
        assert!(e.contains("\"readseq\""), "{e}");
        assert!(e.contains("known: fillseq, fillrandom"), "{e}");
        assert!(e.contains("ycsb-a, ycsb-b"), "{e}");
        assert!(Benchmark::Overwrite.writes() && !Benchmark::SeekRandom.writes());
    }
}
