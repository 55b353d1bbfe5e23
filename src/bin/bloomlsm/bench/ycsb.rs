//! `bench --benchmarks ycsb-a,...,ycsb-f`: YCSB's core workloads A to F
//! (Cooper et al., SoCC 2010; the `workloads/workload[a-f]` files of
//! YCSB 0.17) on the store the db_bench workloads use, `--lookups`
//! operations each, after a load of `--keys` records (`fillrandom` or
//! `fillseq` first in the list).
//!
//! | workload | operations | request distribution |
//! |---|---|---|
//! | `ycsb-a` | 50% read, 50% update | zipfian |
//! | `ycsb-b` | 95% read, 5% update | zipfian |
//! | `ycsb-c` | 100% read | zipfian |
//! | `ycsb-d` | 95% read, 5% insert | latest |
//! | `ycsb-e` | 95% scan (1..=100 records, uniform), 5% insert | zipfian |
//! | `ycsb-f` | 50% read, 50% read-modify-write | zipfian |
//!
//! "zipfian" is YCSB's scrambled Zipfian (0.99), "latest" its skewed-latest
//! ([`bloomlsm::workload`]); `--request-distribution` replaces a workload's
//! with `zipfian`, `latest`, `uniform` or `hotspot`: YCSB's hotspot
//! generator over the keys' order ([`Hotspot`]), the one of them whose
//! popular records form a key range rather than being spread over it, or
//! `sliding`, such a range that moves up the key order ([`Sliding`]). A record is one key and one
//! `--value-size` value (YCSB's are ten 100-byte fields); an update writes
//! a whole new value. Inserts append keys after the last one loaded or
//! inserted by an earlier workload of the run, as YCSB's insert sequence.
//! `--miss-fraction F` makes that fraction of the reads (not the reads of a
//! read-modify-write) ask for an absent key, drawn with the same skew
//! (under `hotspot` and `sliding`, a key beside the drawn record's,
//! [`absent_beside`]).
//! With `--io direct` each absent read's device bytes are counted on the
//! reading thread (`/proc/thread-self/io`, outside the timed call).

use std::io::Write;
use std::time::Instant;

use bloomlsm::Db;
use bloomlsm::fs::latency::LatencyFs;
use serde_json::json;

use crate::phase::{Recorder, ThreadDeviceBytes};
use crate::workload::present_key;
use crate::workload::{ScrambledZipfian, SkewedLatest, SplitMix64, ValueSource, absent_key};
use crate::{CliResult, progress};

use super::args::{BenchArgs, IoMode};
use super::benchmarks::{Distribution, Workload};
use super::remote::{Requests, Snapshot};
use super::row::predicted_fpr;
use super::sliding::Sliding;

/// The share of the key space, from its low end, that holds
/// [`Distribution::Hotspot`]'s hot records (YCSB's `hotspotdatafraction`).
pub(super) const HOT_DATA: f64 = 0.2;
/// The share of the requests that go to them (`hotspotopnfraction`).
pub(super) const HOT_OPS: f64 = 0.8;

/// YCSB's hotspot generator (`HotspotIntegerGenerator`) with its hot set a
/// range of the keys' order rather than of the record numbers: the bench's
/// keys are hashes of their record numbers ([`present_key`]), so a range of
/// numbers is spread over every file and a range of keys is what a
/// workload with locality (one tenant, one day) reads. A record is hot
/// when its key's first 8 bytes are below `HOT_DATA · 2^64`: about
/// `HOT_DATA` of the records, in one contiguous key range. Records are
/// sorted into the two sets as they come to exist (inserts included).
struct Hotspot {
    seed: u64,
    /// Records sorted so far: `0..seen`.
    seen: u64,
    hot: Vec<u64>,
    cold: Vec<u64>,
}

impl Hotspot {
    fn new(seed: u64) -> Self {
        Hotspot {
            seed,
            seen: 0,
            hot: Vec::new(),
            cold: Vec::new(),
        }
    }

    fn next(&mut self, records: u64, rng: &mut SplitMix64) -> u64 {
        let edge = (HOT_DATA * 2f64.powi(64)) as u64;
        for i in self.seen..records {
            let k = present_key(self.seed, i);
            let first = u64::from_be_bytes(k[..8].try_into().expect("8 bytes"));
            if first < edge {
                self.hot.push(i);
            } else {
                self.cold.push(i);
            }
        }
        self.seen = self.seen.max(records);
        let hot = rng.unit() < HOT_OPS;
        let set = match (hot, self.hot.is_empty(), self.cold.is_empty()) {
            (_, true, true) => return 0,
            (true, false, _) | (false, _, true) => &self.hot,
            _ => &self.cold,
        };
        set[rng.below(set.len() as u64) as usize]
    }
}

/// An absent key beside record `k`'s: its key's first 8 bytes and the
/// complement of its last 8. Never a present key (a present key's last 8
/// bytes are a function of its first 8), and in the same place of the key
/// order as record `k`, so a skew over key ranges holds for the misses too.
fn absent_beside(seed: u64, k: u64) -> [u8; 16] {
    let mut key = present_key(seed, k);
    for b in &mut key[8..] {
        *b = !*b;
    }
    key
}

/// The operation kinds, in report order, with their labels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Read,
    Update,
    Insert,
    Scan,
    ReadModifyWrite,
}

const OPS: [(Op, &str); 5] = [
    (Op::Read, "read"),
    (Op::Update, "update"),
    (Op::Insert, "insert"),
    (Op::Scan, "scan"),
    (Op::ReadModifyWrite, "rmw"),
];

/// YCSB's longest scan (`maxscanlength`); lengths are uniform in 1..=it.
const MAX_SCAN: u64 = 100;

/// The operation for the uniform variate `u`.
fn pick(mix: &[f64; 5], u: f64) -> Op {
    let mut acc = 0.0;
    for (p, (op, _)) in mix.iter().zip(OPS) {
        acc += p;
        if u < acc {
            return op;
        }
    }
    OPS.iter()
        .zip(mix)
        .rev()
        .find(|(_, p)| **p > 0.0)
        .map_or(Op::Read, |((op, _), _)| *op)
}

/// Picks the record of each request (YCSB's `keychooser`).
enum Chooser {
    Zipfian(ScrambledZipfian),
    Latest(SkewedLatest),
    Uniform,
    Hotspot(Hotspot),
    Sliding(Sliding),
}

impl Chooser {
    /// For `records` records, `inserts` more expected during the workload,
    /// keyed by `seed`; `drawn`: the requests the run drew before this
    /// workload, `per_slide` its `--lookups` (where a sliding hot range
    /// stands, and how fast it moves).
    fn new(
        d: Distribution,
        records: u64,
        inserts: u64,
        seed: u64,
        (drawn, per_slide): (u64, u64),
    ) -> Self {
        match d {
            // YCSB sizes its Zipfian for twice the expected inserts and
            // redraws a key not inserted yet.
            Distribution::Zipfian => Chooser::Zipfian(ScrambledZipfian::new(records + 2 * inserts)),
            Distribution::Latest => Chooser::Latest(SkewedLatest::new(records)),
            Distribution::Uniform => Chooser::Uniform,
            Distribution::Hotspot => Chooser::Hotspot(Hotspot::new(seed)),
            Distribution::Sliding => Chooser::Sliding(Sliding::new(seed, drawn, per_slide)),
        }
    }

    fn next(&mut self, records: u64, rng: &mut SplitMix64) -> u64 {
        match self {
            Chooser::Zipfian(z) => loop {
                let k = z.next(rng);
                if k < records {
                    return k;
                }
            },
            Chooser::Latest(l) => l.next(records, rng),
            Chooser::Uniform => rng.below(records),
            Chooser::Hotspot(h) => h.next(records, rng),
            Chooser::Sliding(s) => s.next(records, rng),
        }
    }
}

/// What every workload of a run shares.
pub struct Ctx<'a> {
    pub args: &'a BenchArgs,
    pub db: &'a Db,
    /// The store's file system, counting its read requests.
    pub fs: &'a LatencyFs,
    pub values: &'a ValueSource,
    /// Requests drawn by the run's YCSB workloads so far (where a sliding
    /// hot range stands).
    pub drawn: &'a std::cell::Cell<u64>,
}

/// Runs `w` on the store, which holds records `0..*records` (the count
/// grows by its inserts), and writes its lines or JSON object to `out`.
pub fn run(
    ctx: &Ctx<'_>,
    w: Workload,
    name: &str,
    seed: u64,
    records: &mut u64,
    out: &mut dyn Write,
) -> CliResult {
    let Ctx {
        args,
        db,
        fs,
        values,
        drawn,
    } = *ctx;
    let n = args.lookups;
    let mix = w.mix();
    let dist = args.request_distribution.unwrap_or(w.distribution());
    let miss = args.miss_fraction.unwrap_or(0.0);
    let mut chooser = Chooser::new(
        dist,
        *records,
        (n as f64 * mix[2]) as u64,
        args.seed,
        (drawn.get(), n),
    );
    // Device bytes of the absent reads, counted on this thread.
    let device = (args.io == IoMode::Direct)
        .then(ThreadDeviceBytes::open)
        .flatten();
    let (mut absent_reads, mut absent_device) = (0u64, Some(0u64));
    let mut rng = SplitMix64::new(seed);
    let mut recs: Vec<Recorder> = OPS.iter().map(|_| Recorder::start()).collect();
    let mut counts = [0u64; 5];
    let (mut found, mut reads, mut scanned) = (0u64, 0u64, 0u64);
    let mut value = Vec::with_capacity(args.value_size as usize);
    let pb = progress(Some(n), args.quiet, name);
    db.reset_stats();
    let before = Snapshot::take(fs);
    let all = Recorder::start();
    let start = Instant::now();
    for j in 0..n {
        let op = pick(&mix, rng.unit());
        let slot = OPS.iter().position(|(o, _)| *o == op).unwrap_or(0);
        counts[slot] += 1;
        let rec = &mut recs[slot];
        match op {
            Op::Read => {
                let k = chooser.next(*records, &mut rng);
                let absent = miss > 0.0 && rng.unit() < miss;
                let key = match (absent, dist) {
                    (false, _) => present_key(args.seed, k),
                    (true, Distribution::Hotspot | Distribution::Sliding) => {
                        absent_beside(args.seed, k)
                    }
                    (true, _) => absent_key(args.seed, k),
                };
                reads += 1;
                let before = device.as_ref().filter(|_| absent).map(|d| d.read());
                found += u64::from(rec.time(1, || db.get(key))?.is_some());
                if let (Some(d), Some(before)) = (&device, before) {
                    absent_reads += 1;
                    absent_device = absent_device
                        .zip(before)
                        .zip(d.read())
                        .map(|((sum, b), a)| sum + a.saturating_sub(b));
                }
            }
            Op::Update => {
                let k = chooser.next(*records, &mut rng);
                values.value(rng.next_u64(), &mut value);
                rec.time(1, || db.put(present_key(args.seed, k), &value))?;
            }
            Op::Insert => {
                let k = *records;
                values.value(k, &mut value);
                rec.time(1, || db.put(present_key(args.seed, k), &value))?;
                *records += 1;
            }
            Op::Scan => {
                let k = chooser.next(*records, &mut rng);
                let len = 1 + rng.below(MAX_SCAN);
                scanned += rec.time(1, || -> CliResult<u64> {
                    let mut it = db.scan(..);
                    it.seek(present_key(args.seed, k));
                    let mut got = 0;
                    for e in it.take(len as usize) {
                        e?;
                        got += 1;
                    }
                    Ok(got)
                })?;
            }
            Op::ReadModifyWrite => {
                let k = chooser.next(*records, &mut rng);
                values.value(rng.next_u64(), &mut value);
                let key = present_key(args.seed, k);
                let hit = rec.time(1, || -> CliResult<bool> {
                    let old = db.get(key)?;
                    db.put(key, &value)?;
                    Ok(old.is_some())
                })?;
                reads += 1;
                found += u64::from(hit);
            }
        }
        if j % 4096 == 4095 {
            pb.inc(4096);
        }
    }
    let secs = start.elapsed().as_secs_f64();
    pb.finish_and_clear();
    if let Chooser::Sliding(s) = &chooser {
        drawn.set(s.drawn());
    }
    let stats = db.stats();
    let requests = Requests::new(
        before,
        Snapshot::take(fs),
        n,
        &stats,
        args.price_per_million_gets,
    );
    let phase = all.finish(n, stats.total.bytes_read);
    let micros = secs * 1e6 / n.max(1) as f64;
    let ops_per_sec = n as f64 / secs.max(1e-9);
    let gets = stats.gets.max(1) as f64;
    let blocks_per_get = (stats.gets > 0).then(|| stats.total.block_reads as f64 / gets);
    let store_bytes_per_get = (stats.gets > 0).then(|| stats.total.bytes_read as f64 / gets);
    let missing = stats.gets.saturating_sub(stats.gets_found);
    let blocks_per_missing_get =
        (missing > 0).then(|| stats.missing_get_block_reads as f64 / missing as f64);
    let device_per_missing_get = absent_device
        .filter(|_| absent_reads > 0)
        .map(|b| b as f64 / absent_reads as f64);
    // With writes, compactions read in the same process: no device figure.
    let device_per_op = if w.writes() {
        None
    } else {
        phase.device_bytes_per_op()
    };
    let pcts = |r: &Recorder| {
        [50.0, 75.0, 99.0, 99.9, 99.99].map(|p| r.value_at_percentile(p) as f64 / 1e3)
    };
    let measured = stats.total.observed_fpr();
    let predicted = predicted_fpr(&stats);
    if args.json {
        let mut ops = serde_json::Map::new();
        for (i, (_, label)) in OPS.iter().enumerate() {
            if counts[i] > 0 {
                let p = pcts(&recs[i]);
                ops.insert(
                    label.to_string(),
                    json!({"ops": counts[i], "p50_us": p[0], "p75_us": p[1], "p99_us": p[2],
                           "p999_us": p[3], "p9999_us": p[4]}),
                );
            }
        }
        let mut v = json!({
                "benchmark": name,
                "distribution": format!("{dist:?}").to_lowercase(),
                "miss_fraction": miss,
                "ops": n,
                "micros_per_op": micros,
                "ops_per_sec": ops_per_sec,
                "reads": reads,
                "found": found,
                "scanned": scanned,
                "records": *records,
                "by_op": ops,
                "gets": stats.gets,
                "filter_checks": stats.total.filter_checks,
                "false_positives": stats.total.false_positives,
                "measured_fpr": measured,
                "predicted_fpr": predicted,
                "block_reads_per_get": blocks_per_get,
                "block_reads_per_missing_get": blocks_per_missing_get,
                "device_bytes_per_missing_get": device_per_missing_get,
                "store_bytes_per_get": store_bytes_per_get,
                "device_bytes_per_op": device_per_op,
        });
        if let (Some(map), Some(extra)) = (v.as_object_mut(), requests.json().as_object()) {
            map.extend(extra.clone());
        }
        crate::write_json(out, &v)?;
        return Ok(());
    }
    let mut extra: Vec<String> = OPS
        .iter()
        .zip(counts)
        .filter(|(_, c)| *c > 0)
        .map(|((_, l), c)| format!("{c} {l}"))
        .collect();
    if reads > 0 {
        extra.push(format!("{found} of {reads} found"));
    }
    if scanned > 0 {
        extra.push(format!("{scanned} records scanned"));
    }
    writeln!(
        out,
        "{name:<12} : {micros:11.3} micros/op {} ops/sec; ({}) {} distribution",
        ops_per_sec.round() as u64,
        extra.join(", "),
        format!("{dist:?}").to_lowercase()
    )?;
    for (i, (_, label)) in OPS.iter().enumerate() {
        if counts[i] > 0 {
            let p = pcts(&recs[i]);
            writeln!(
                out,
                "Percentiles {label}: P50: {:.2} P75: {:.2} P99: {:.2} P99.9: {:.2} P99.99: {:.2}",
                p[0], p[1], p[2], p[3], p[4]
            )?;
        }
    }
    if stats.gets == 0 {
        writeln!(out, "Filters: not consulted by scans and inserts")?;
        writeln!(out, "{}", requests.line(w.writes()))?;
        return Ok(());
    }
    let pct = |f: Option<f64>| f.map_or("n/a".to_string(), |f| format!("{:.3}%", f * 100.0));
    let mut line = format!(
        "Filters: {} checks, {} false positives, FPR {} (predicted {}); {:.3} data blocks/get, {:.1} store bytes/get",
        stats.total.filter_checks,
        stats.total.false_positives,
        pct(measured),
        pct(predicted),
        blocks_per_get.unwrap_or(0.0),
        store_bytes_per_get.unwrap_or(0.0),
    );
    if let Some(b) = blocks_per_missing_get {
        line.push_str(&format!(", {b:.4} data blocks/missing get"));
    }
    if let Some(d) = device_per_missing_get {
        line.push_str(&format!(", {d:.1} device bytes/missing get"));
    }
    if let Some(d) = device_per_op {
        line.push_str(&format!(", {d:.1} device bytes/op"));
    }
    writeln!(out, "{line}")?;
    writeln!(out, "{}", requests.line(w.writes()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each workload's mix sums to one and is drawn in its proportions.
    #[test]
    fn mixes_are_drawn_in_proportion() {
        for w in [
            Workload::A,
            Workload::B,
            Workload::C,
            Workload::D,
            Workload::E,
            Workload::F,
        ] {
            let mix = w.mix();
            assert!((mix.iter().sum::<f64>() - 1.0).abs() < 1e-12, "{w:?}");
            let mut rng = SplitMix64::new(5);
            let mut c = [0u64; 5];
            for _ in 0..100_000 {
                let op = pick(&mix, rng.unit());
                c[OPS.iter().position(|(o, _)| *o == op).unwrap()] += 1;
            }
            for i in 0..5 {
                let f = c[i] as f64 / 100_000.0;
                assert!((f - mix[i]).abs() < 0.01, "{w:?} {}: {f}", OPS[i].1);
            }
        }
        assert_eq!(pick(&Workload::C.mix(), 0.999_999_999), Op::Read);
    }

    /// Every chooser stays below the record count, and the Zipfian one
    /// redraws keys not inserted yet.
    #[test]
    fn choosers_stay_in_range() {
        let mut rng = SplitMix64::new(9);
        for d in [
            Distribution::Zipfian,
            Distribution::Latest,
            Distribution::Uniform,
            Distribution::Hotspot,
            Distribution::Sliding,
        ] {
            let mut c = Chooser::new(d, 100, 50, 3, (0, 1000));
            assert!((0..10_000).all(|_| c.next(100, &mut rng) < 100), "{d:?}");
            assert!((0..1000).all(|_| c.next(120, &mut rng) < 120), "{d:?}");
        }
    }

    /// Hotspot's hot records are one range of the key order, drawn
    /// `HOT_OPS` of the time; the absent keys beside them are in the same
    /// range and never present.
    #[test]
    fn hotspot_is_a_key_range() {
        let (seed, records) = (7, 20_000);
        let mut rng = SplitMix64::new(11);
        let mut c = Chooser::new(Distribution::Hotspot, records, 0, seed, (0, 1));
        let edge = (HOT_DATA * 2f64.powi(64)) as u64;
        let first = |k: [u8; 16]| u64::from_be_bytes(k[..8].try_into().unwrap());
        let draws = 50_000;
        let mut hot = 0;
        for _ in 0..draws {
            let k = c.next(records, &mut rng);
            assert!(k < records);
            let beside = absent_beside(seed, k);
            assert_eq!(first(beside), first(present_key(seed, k)));
            assert_ne!(beside, present_key(seed, k));
            hot += u64::from(first(present_key(seed, k)) < edge);
        }
        let share = hot as f64 / draws as f64;
        assert!((share - HOT_OPS).abs() < 0.01, "{share}");
        // About HOT_DATA of the records are hot.
        let Chooser::Hotspot(h) = &c else {
            unreachable!()
        };
        let frac = h.hot.len() as f64 / records as f64;
        assert!((frac - HOT_DATA).abs() < 0.02, "{frac}");
        // Records inserted later are sorted in as they come.
        assert!((0..1000).all(|_| c.next(records + 10, &mut rng) < records + 10));
    }
}
