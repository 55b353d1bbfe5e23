//! The same point-lookup workload on bloomlsm, fjall and (with
//! `--features rocksdb-peer`) RocksDB, measured in one process so the engines
//! can be compared by ratio on a shared, noisy machine (docs/benchmarks.md,
//! "Peers").
//!
//! One comparison in one process: the workload, the rounds and the report
//! are here, each engine's `Engine` implementation (its options in each
//! setting, its fill, its counters) in `benches/peer/<engine>_engine.rs`.
//!
//! Workload: fill N random 16-byte keys (`present_key`) with 100-byte values
//! in batches of 1000 (`BLOOMLSM_PEERS_BATCH=N`: of N; 1 puts each key with
//! the engine's single-key put), let each engine flush its memtable and settle its
//! compactions, then time gets of existing keys (random present keys) and of
//! missing keys (`absent_key`).
//!
//! Settings: every engine runs in two settings (`BLOOMLSM_PEERS_SETTINGS`),
//! each compared only with the other engines of the same setting. In both,
//! every engine gets an 8 MiB block cache, no compression (fjall is built
//! without lz4) and its filter and index blocks held in memory outside the
//! cache on every level (unpartitioned).
//! - `shared`: one tree shape for all — 10 bits/key Bloom filters on every
//!   level, a level shape mirrored from benches/db.rs (2 MiB write buffer,
//!   512 KiB files, ×8 level fan-out from 512 KiB, fixed level targets);
//!   bloomlsm with RocksDB's default L0 triggers (compaction at 4 files,
//!   slowdown at 20, stop at 36).
//! - `defaults`: each engine's own defaults for everything else, with a
//!   4 MiB write buffer for all (bloomlsm's default; RocksDB's and fjall's
//!   are 64 MiB). bloomlsm: `Options::default()`. RocksDB: `Options` and
//!   `BlockBasedOptions` defaults (64 MiB files, 256 MiB level base ×10,
//!   dynamic level sizing, L0 triggers 4/20/36) plus a 10 bits/key full
//!   Bloom filter, since its default has none. fjall: its keyspace defaults
//!   (leveled, 64 MiB tables, ratio 10, 1e-4 FPR filters on L0 and 10
//!   bits/key below), with the cache of 8 MiB instead of 32 MiB and its
//!   filter and index blocks pinned on every level instead of L0/L1.
//!
//! Before each state is timed, every engine's files are read once, so all
//! start in the OS page cache (`warm`).
//!
//! Load: each engine's fill (puts in batches, then flush and settle its
//! compactions; bloomlsm's merge of L0 once writes stop, which follows,
//! is not in its load time or CPU) in turn, reported as puts/s (fills are not interleaved: each
//! engine's background threads would run during the others' timed writes),
//! with the write amplification of the fill where the engine tells it: table
//! bytes written by flushes and compactions over the keys and values put
//! (bloomlsm's `Stats::write_amplification`; RocksDB's `table_file_creation`
//! events in its LOG; fjall does not count them), and the fill's CPU time
//! (user + system, every thread of the process, `getrusage`), the cores it
//! kept busy on average and its CPU µs per put.
//!
//! Timing: in two states — the settled tree, then after a full manual
//! compaction of every engine — one warm-up round, then `ROUNDS` rounds; in
//! each round every engine does `GETS` existing-key gets then `GETS`
//! missing-key gets (engines interleaved, so machine noise hits all of them
//! alike). Reported: the median (and min–max) of the per-round ns/op, the
//! ratio of bloomlsm's median to the fastest peer's, each engine's puts/s, and
//! the engines' own I/O counters over one extra pass of missing-key gets,
//! the device bytes read per get (`read_bytes` of `/proc/self/io` around
//! each engine's timed gets: page-cache misses, or every read with direct
//! I/O), and the process's peak resident memory (`VmHWM`) after the loads
//! and at the end: with one engine per process (`BLOOMLSM_PEERS_ENGINES`,
//! `benches/peers_apart.sh`), that engine's.
//! Each engine's version and options are printed first.
//!
//! `cargo bench --bench peers`; with RocksDB, built from the `rocksdb`
//! crate's source (or linked prebuilt when `ROCKSDB_LIB_DIR` is set, see
//! README): `cargo bench --features rocksdb-peer --bench peers`;
//! `BLOOMLSM_PEERS_SETTINGS=shared|defaults` runs one setting (default:
//! both, in one run, all engines of both settings interleaved in each round),
//! `BLOOMLSM_PEERS_SHAPE=fixed|dynamic[:FILE_MIB[:L1_MIB[:TRIGGER/SLOWDOWN/STOP]]],...` replaces
//! bloomlsm's level sizing, file size and L1 (or base level) target in the
//! `defaults` setting, one bloomlsm store per shape listed, all timed in the
//! same rounds (to choose defaults by measurement; targets are the first's),
//! `BLOOMLSM_PEERS_KEYS=N` changes the key count (default 1M),
//! `BLOOMLSM_PEERS_GETS=N` the gets per round (default 100k),
//! `BLOOMLSM_PEERS_ROUNDS=N` the rounds (default 7),
//! `BLOOMLSM_PEERS_MAINTAIN_EVERY=N` runs bloomlsm's compactions in the
//! writer thread (`Db::maintain` every N keys) instead of in the background,
//! `BLOOMLSM_PEERS_ENGINES=bloomlsm,rocksdb,fjall:defaults` runs only the
//! engines listed, in every setting or (`name:setting`) in one (e.g. to
//! profile one engine, to leave out a peer whose load takes too long, or
//! one engine per process; without bloomlsm the tables have no ratios),
//! `BLOOMLSM_PEERS_IO=direct` reads tables with direct I/O (bloomlsm
//! `ReadMode::Direct`, RocksDB `use_direct_reads`; fjall has none and is
//! refused): the page cache is not warmed, every get is timed on its own
//! and the tables gain p50 and p99 columns (a clock read costs about 20 ns,
//! a device read tens of µs),
//! `BLOOMLSM_PEERS_DIR=DIR` keeps the stores in DIR/<engine>-<setting>: a store already
//! there is reopened as it is instead of loaded (no load figures) and the full
//! compaction is skipped, so that two builds can be timed alternately on the
//! same files (delete DIR to start over; the key count must match),
//! `BLOOMLSM_PEERS_COMPACT=0|1` skips the full compaction and the gets after
//! it, or runs them on a kept store too (which it changes: the next reopen
//! times the compacted tree); by default they run unless the stores are kept,
//! `BLOOMLSM_PEERS_GET_SEED=N` (0–127, default 99) gets other existing and
//! missing keys, so that runs alternated on kept stores do not read the
//! blocks the run before them read.

use std::hint::black_box;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bloomlsm::workload::{SplitMix64, absent_key, present_key};
use bloomlsm::{Db, FilterOptions, FilterPolicy, Options, WriteBatch};
use fjall::AbstractTree;

const SEED: u64 = 7;
const VALUE_LEN: usize = 100;
/// Puts per write batch in the loads (`BLOOMLSM_PEERS_BATCH`): 1000 by
/// default; 1 puts each key with its own write, through each engine's
/// single-key put (bloomlsm `Db::put`, RocksDB `DB::put`, fjall
/// `Keyspace::insert`).
fn batch_size() -> usize {
    env_u64("BLOOMLSM_PEERS_BATCH", 1000).max(1) as usize
}
/// `BLOOMLSM_PEERS_IO=direct`: tables read with direct I/O (module doc).
fn direct_io() -> bool {
    match std::env::var("BLOOMLSM_PEERS_IO").as_deref() {
        Err(_) | Ok("buffered") => false,
        Ok("direct") => true,
        Ok(other) => {
            eprintln!("error: BLOOMLSM_PEERS_IO: {other:?} is not buffered or direct");
            std::process::exit(2);
        }
    }
}
const CACHE_BYTES: usize = 8 << 20;
const BITS_PER_KEY: f64 = 10.0;
// Level shape (as benches/db.rs).
const WRITE_BUFFER: usize = 2 << 20;
const TARGET_FILE: u64 = 512 << 10;
const LEVEL1_BYTES: u64 = 512 << 10;
const FANOUT: u64 = 8;
const BLOCK_SIZE: usize = 4096;
// L0 write slowdown and stop (RocksDB's defaults, which its fill runs with).
const L0_SLOWDOWN: usize = 20;
const L0_STOP: usize = 36;
/// The write buffer of every engine in [`Setting::Defaults`]: bloomlsm's
/// default (RocksDB's and fjall's are 64 MiB).
const DEFAULTS_WRITE_BUFFER: usize = 4 << 20;

/// The options an engine runs with (module doc, "Settings").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Setting {
    /// One tree shape for every engine.
    Shared,
    /// Each engine's own defaults, with the same write buffer, cache, no
    /// compression, and filters and indexes in memory.
    Defaults,
}

impl Setting {
    fn label(self) -> &'static str {
        match self {
            Setting::Shared => "shared",
            Setting::Defaults => "defaults",
        }
    }
}

/// `BLOOMLSM_PEERS_SETTINGS=shared,defaults` (comma-separated); unset, both.
fn settings_wanted() -> Vec<Setting> {
    let Ok(list) = std::env::var("BLOOMLSM_PEERS_SETTINGS") else {
        return vec![Setting::Shared, Setting::Defaults];
    };
    list.split(',')
        .map(|s| match s.trim() {
            "shared" => Setting::Shared,
            "defaults" => Setting::Defaults,
            other => {
                eprintln!(
                    "error: BLOOMLSM_PEERS_SETTINGS: unknown setting {other:?} (shared, defaults)"
                );
                std::process::exit(2);
            }
        })
        .collect()
}

/// `BLOOMLSM_PEERS_SHAPE=fixed|dynamic[:FILE_MIB[:L1_MIB[:TRIGGER/SLOWDOWN/STOP]]],...`: the
/// shapes of bloomlsm's stores in the `defaults` setting; unset, one store
/// at `Options::default()`'s (`None`).
fn shapes_wanted() -> Vec<Option<String>> {
    match std::env::var("BLOOMLSM_PEERS_SHAPE") {
        Ok(list) => list
            .split(',')
            .map(|s| Some(s.trim().to_string()))
            .collect(),
        Err(_) => vec![None],
    }
}

/// Keys between bloomlsm's `maintain` calls in the fill, with compaction in
/// the writer thread; 0 (default): compaction on bloomlsm's background
/// thread, as the peers run theirs.
fn maintain_every() -> u64 {
    env_u64("BLOOMLSM_PEERS_MAINTAIN_EVERY", 0)
}

/// A package's version as Cargo.lock pins it (the bench is built from it).
fn locked_version(package: &str) -> String {
    let lock = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.lock"));
    let head = format!("name = \"{package}\"\nversion = \"");
    lock.split_once(&head)
        .and_then(|(_, rest)| rest.split_once('"'))
        .map_or_else(|| "?".to_string(), |(v, _)| v.to_string())
}

/// Whether to compact every engine fully and time the gets again
/// (`BLOOMLSM_PEERS_COMPACT`; by default only on stores not kept).
fn compact_wanted(kept: bool) -> bool {
    env_u64("BLOOMLSM_PEERS_COMPACT", u64::from(!kept)) != 0
}

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The fill's key/value stream: `(key, value)` for `i in 0..n`, values random.
fn for_each_record(n: u64, mut f: impl FnMut(u64, &[u8; 16], &[u8])) {
    let mut value = vec![0u8; VALUE_LEN];
    let mut rng = SplitMix64::new(SEED);
    for i in 0..n {
        rng.fill(&mut value);
        f(i, &present_key(SEED, i), &value);
    }
}

/// One engine under test.
trait Engine {
    fn name(&self) -> &'static str;
    fn setting(&self) -> Setting;
    /// Name and setting, for the reports.
    fn label(&self) -> String {
        format!("{} ({})", self.row(), self.setting().label())
    }
    /// Name in a setting's table: the engine, and the shape of a bloomlsm
    /// candidate (`BLOOMLSM_PEERS_SHAPE`).
    fn row(&self) -> String {
        self.name().to_string()
    }
    /// Version and the options that matter for the comparison.
    fn describe(&self) -> String;
    /// Full manual compaction, blocking until done.
    fn compact(&self);
    /// After the fill, outside its time and CPU: waits for the work the
    /// engine does by itself once writes stop.
    fn settle(&self) {}
    /// `true` if the key was found.
    fn get(&self, key: &[u8; 16]) -> bool;
    /// Level shape after the fill, for the report.
    fn shape(&self) -> String;
    /// Table bytes written by flushes and compactions since open over
    /// `user_bytes` (keys + values put), if the engine tells.
    fn write_amplification(&self, _user_bytes: u64) -> Option<f64> {
        None
    }
    /// How the fill went inside the engine (flushes, compactions, write
    /// slowdowns and stalls), if the engine tells.
    fn load_notes(&self) -> Option<String> {
        None
    }
    /// Starts counting I/O for [`Engine::counters`].
    fn reset_counters(&self);
    /// The engine's own counters since [`Engine::reset_counters`], after
    /// `missing` missing-key gets.
    fn counters(&self, missing: u64) -> String;
}

#[path = "peer/bloomlsm_engine.rs"]
mod bloomlsm_engine;
#[path = "peer/fjall_engine.rs"]
mod fjall_engine;
#[cfg(feature = "rocksdb-peer")]
#[path = "peer/rocksdb_engine.rs"]
mod rocksdb_engine;
use bloomlsm_engine::Bloomlsm;
use fjall_engine::Fjall;
#[cfg(feature = "rocksdb-peer")]
use rocksdb_engine::Rocks;

// ---------------------------------------------------------------- driver

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    if v.len() % 2 == 1 {
        v[m]
    } else {
        (v[m - 1] + v[m]) / 2.0
    }
}

/// `read_bytes` of `/proc/self/io`: bytes this process had the device read
/// (page-cache misses; every read with direct I/O). Linux only.
fn device_read_bytes() -> Option<u64> {
    std::fs::read_to_string("/proc/self/io")
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("read_bytes:"))?
        .trim()
        .parse()
        .ok()
}

/// A field of `/proc/self/status` in KiB (`VmHWM`, `VmRSS`). Linux only.
fn status_kib(field: &str) -> Option<u64> {
    std::fs::read_to_string("/proc/self/status")
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()
}

/// The process's peak and current resident memory, for the report.
fn memory_line() -> String {
    let mib =
        |k: Option<u64>| k.map_or_else(|| "?".to_string(), |k| format!("{:.0}", k as f64 / 1024.0));
    format!(
        "peak resident {} MiB (VmHWM), resident now {} MiB (VmRSS)",
        mib(status_kib("VmHWM")),
        mib(status_kib("VmRSS"))
    )
}

/// One engine's timed pass over a key list.
struct Pass {
    /// Mean ns per get.
    ns: f64,
    /// Each get's ns, when timed one by one (direct I/O).
    each: Vec<u64>,
    /// Device bytes read during the pass, where the system tells.
    device: Option<u64>,
}

/// Times gets of `keys` (each on its own if `each`); checks every answer
/// is `expect`.
fn time_gets(e: &dyn Engine, keys: &[[u8; 16]], expect: bool, each: bool) -> Pass {
    let device0 = device_read_bytes();
    let mut lat = Vec::with_capacity(if each { keys.len() } else { 0 });
    let t = Instant::now();
    let mut hits = 0usize;
    if each {
        for k in keys {
            let t0 = Instant::now();
            hits += usize::from(black_box(e.get(black_box(k))));
            lat.push(t0.elapsed().as_nanos() as u64);
        }
    } else {
        for k in keys {
            hits += usize::from(black_box(e.get(black_box(k))));
        }
    }
    let ns = t.elapsed().as_nanos() as f64 / keys.len() as f64;
    let device = device0
        .zip(device_read_bytes())
        .map(|(a, b)| b.saturating_sub(a));
    assert_eq!(hits, if expect { keys.len() } else { 0 }, "{}", e.name());
    Pass {
        ns,
        each: lat,
        device,
    }
}

/// What one engine's timed rounds of one kind of get add up to.
#[derive(Clone, Default)]
struct Kind {
    /// ns/op of each round.
    rounds: Vec<f64>,
    /// Every get's ns over all rounds, when timed one by one.
    each: Vec<u64>,
    /// Device bytes over all rounds, and the gets they served.
    device: Option<(u64, u64)>,
}

impl Kind {
    fn add(&mut self, p: Pass, gets: usize) {
        self.rounds.push(p.ns);
        self.each.extend(p.each);
        self.device = match (self.device, p.device) {
            (None, Some(b)) if self.rounds.len() == 1 => Some((b, gets as u64)),
            (Some((b0, g0)), Some(b)) => Some((b0 + b, g0 + gets as u64)),
            _ => None,
        };
    }
    /// The `q` quantile of the gets timed one by one, in µs.
    fn quantile_us(&mut self, q: f64) -> Option<f64> {
        if self.each.is_empty() {
            return None;
        }
        self.each.sort_unstable();
        let i = ((q * self.each.len() as f64).ceil() as usize).clamp(1, self.each.len()) - 1;
        Some(self.each[i] as f64 / 1e3)
    }
    fn device_per_get(&self) -> Option<f64> {
        self.device.map(|(b, g)| b as f64 / g.max(1) as f64)
    }
}

/// Per-round ns/op of one state, per engine: `(existing, missing)`.
struct Rounds {
    existing: Vec<Kind>,
    missing: Vec<Kind>,
    /// Each engine's [`Engine::shape`] in this state.
    shapes: Vec<String>,
}

/// Key streams shared by the two states (each state gets fresh keys).
struct Keys {
    n: u64,
    gets: usize,
    rounds: usize,
    rng: SplitMix64,
    next_absent: u64,
}

/// One warm-up round (page cache, block caches, branch predictors), then
/// `rounds` timed rounds, engines interleaved within each.
/// Reads every file of every engine's directory once, so that each engine's
/// gets start with its files in the page cache: the engines load one after
/// another, and this machine pages out memory idle for about a minute, so
/// without it the engine loaded first would have lost more of its files to
/// the disk by the time it is timed (its existing-key gets measured page-cache
/// misses, not its read path).
/// With direct I/O there is nothing to warm.
fn warm(engines: &[Box<dyn Engine>], dirs: &[std::path::PathBuf]) {
    if direct_io() {
        return;
    }
    fn read_all(path: &std::path::Path, buf: &mut [u8]) -> u64 {
        use std::io::Read;
        let Ok(meta) = std::fs::metadata(path) else {
            return 0;
        };
        if meta.is_dir() {
            let Ok(entries) = std::fs::read_dir(path) else {
                return 0;
            };
            return entries.flatten().map(|e| read_all(&e.path(), buf)).sum();
        }
        let Ok(mut f) = std::fs::File::open(path) else {
            return 0;
        };
        let mut n = 0u64;
        while let Ok(k) = f.read(buf) {
            if k == 0 {
                break;
            }
            n += k as u64;
        }
        n
    }
    let mut buf = vec![0u8; 1 << 20];
    let t = Instant::now();
    let read: Vec<String> = engines
        .iter()
        .zip(dirs)
        .map(|(e, d)| format!("{} {:.2} GB", e.label(), read_all(d, &mut buf) as f64 / 1e9))
        .collect();
    eprintln!(
        "page cache warmed (every file read once): {} in {:.1}s",
        read.join(", "),
        t.elapsed().as_secs_f64()
    );
}

fn measure(engines: &[Box<dyn Engine>], keys: &mut Keys) -> Rounds {
    let each = direct_io();
    let mut r = Rounds {
        existing: vec![Kind::default(); engines.len()],
        missing: vec![Kind::default(); engines.len()],
        shapes: engines.iter().map(|e| e.shape()).collect(),
    };
    for round in 0..=keys.rounds {
        let present: Vec<[u8; 16]> = (0..keys.gets)
            .map(|_| present_key(SEED, keys.rng.below(keys.n)))
            .collect();
        let absent: Vec<[u8; 16]> = (0..keys.gets as u64)
            .map(|i| absent_key(SEED, keys.next_absent + i))
            .collect();
        keys.next_absent += keys.gets as u64;
        for (i, e) in engines.iter().enumerate() {
            let hit = time_gets(e.as_ref(), &present, true, each);
            let miss = time_gets(e.as_ref(), &absent, false, each);
            if round > 0 {
                r.existing[i].add(hit, keys.gets);
                r.missing[i].add(miss, keys.gets);
            }
        }
    }
    r
}

/// Each engine's counters over `probes` further missing-key gets.
fn counters(engines: &[Box<dyn Engine>], probes: u64, first: u64) -> Vec<String> {
    engines
        .iter()
        .map(|e| {
            e.reset_counters();
            for i in 0..probes {
                assert!(!e.get(&absent_key(SEED, first + i)));
            }
            e.counters(probes)
        })
        .collect()
}

fn min_max(v: &[f64]) -> (f64, f64) {
    (
        v.iter().copied().fold(f64::INFINITY, f64::min),
        v.iter().copied().fold(0.0, f64::max),
    )
}

/// Prints one state's tables for the engines `group` (indexes into
/// `engines`, bloomlsm first when it runs, all of one setting); returns
/// bloomlsm's ratios to the fastest peer of the group `(existing, missing)`.
fn report(title: &str, engines: &[Box<dyn Engine>], group: &[usize], r: &mut Rounds) -> (f64, f64) {
    let meds: Vec<(f64, f64)> = group
        .iter()
        .map(|&i| {
            (
                median(&mut r.existing[i].rounds),
                median(&mut r.missing[i].rounds),
            )
        })
        .collect();
    // The peers: the engines other than bloomlsm (and its candidate shapes).
    let best = |f: fn(&(f64, f64)) -> f64| {
        group
            .iter()
            .zip(&meds)
            .filter(|(i, _)| engines[**i].name() != "bloomlsm")
            .map(|(_, m)| f(m))
            .fold(f64::INFINITY, f64::min)
    };
    let (best_e, best_m) = (best(|m| m.0), best(|m| m.1));
    println!("\n{title}\n");
    println!(
        "| engine | existing get ns/op (min–max) | missing get ns/op (min–max) | existing / fastest peer | missing / fastest peer |"
    );
    println!("|---|---|---|---|---|");
    for (g, &i) in group.iter().enumerate() {
        let e = &engines[i];
        let (lo_e, hi_e) = min_max(&r.existing[i].rounds);
        let (lo_m, hi_m) = min_max(&r.missing[i].rounds);
        let (me, mm) = meds[g];
        // Without a peer there is no ratio.
        let ratio = |x: f64, best: f64| {
            if best.is_finite() {
                format!("{:.2}×", x / best)
            } else {
                "–".to_string()
            }
        };
        println!(
            "| {} | {me:.0} ({lo_e:.0}–{hi_e:.0}) | {mm:.0} ({lo_m:.0}–{hi_m:.0}) | {} | {} |",
            e.row(),
            ratio(me, best_e),
            ratio(mm, best_m),
        );
    }
    println!(
        "\n| engine | existing get p50 / p99 µs | missing get p50 / p99 µs | device bytes per existing get | per missing get |"
    );
    println!("|---|---|---|---|---|");
    for &i in group {
        let quantiles = |k: &mut Kind| match (k.quantile_us(0.5), k.quantile_us(0.99)) {
            (Some(p50), Some(p99)) => format!("{p50:.1} / {p99:.1}"),
            _ => "– (timed in rounds)".to_string(),
        };
        let device = |k: &Kind| {
            k.device_per_get()
                .map_or_else(|| "?".to_string(), |b| format!("{b:.0}"))
        };
        println!(
            "| {} | {} | {} | {} | {} |",
            engines[i].row(),
            quantiles(&mut r.existing[i]),
            quantiles(&mut r.missing[i]),
            device(&r.existing[i]),
            device(&r.missing[i]),
        );
    }
    for &i in group {
        println!("  {:<9} {}", engines[i].row(), r.shapes[i]);
    }
    if engines[group[0]].name() != "bloomlsm" {
        return (f64::NAN, f64::NAN);
    }
    (meds[0].0 / best_e, meds[0].1 / best_m)
}

/// Opens an engine's store in a directory with a setting, filling it first
/// if asked (`true`); returns the engine and the load's duration.
type Filler<'a> = dyn Fn(&Path, Setting, bool) -> (Box<dyn Engine>, Duration) + 'a;

/// `BLOOMLSM_PEERS_ENGINES=bloomlsm,rocksdb,fjall:defaults` (comma-separated)
/// limits the run to those engines, in every setting or (`name:setting`) in
/// one; unset, every engine built in runs.
/// A name that is not an engine of this build ends the run before anything
/// is loaded. Without bloomlsm, the tables have no ratios (one engine per
/// process: `benches/peers_apart.sh`).
fn peers_wanted() -> impl Fn(&str, Setting) -> bool {
    let built: &[&str] = if cfg!(feature = "rocksdb-peer") {
        &["bloomlsm", "fjall", "rocksdb"]
    } else {
        &["bloomlsm", "fjall"]
    };
    let list: Option<Vec<String>> = std::env::var("BLOOMLSM_PEERS_ENGINES")
        .ok()
        .map(|l| l.split(',').map(|e| e.trim().to_string()).collect());
    if let Some(list) = &list {
        let fail = |msg: String| {
            eprintln!("error: BLOOMLSM_PEERS_ENGINES: {msg}");
            std::process::exit(2);
        };
        // `name` or `name:setting`.
        let engine = |e: &str| e.split(':').next().unwrap_or("").to_string();
        let setting_ok = |e: &String| {
            e.split_once(':')
                .is_none_or(|(_, s)| s == "shared" || s == "defaults")
        };
        if let Some(bad) = list
            .iter()
            .find(|e| !built.contains(&engine(e).as_str()) || !setting_ok(e))
        {
            let hint = if bad == "rocksdb" {
                " (build with --features rocksdb-peer)"
            } else {
                ""
            };
            fail(format!(
                "unknown engine {bad:?}{hint}; this build has {}",
                built.join(", ")
            ));
        }
    }
    if direct_io()
        && list
            .as_ref()
            .is_none_or(|l| l.iter().any(|e| e.starts_with("fjall")))
    {
        eprintln!(
            "error: BLOOMLSM_PEERS_IO=direct: fjall has no direct reads; \
             leave it out with BLOOMLSM_PEERS_ENGINES"
        );
        std::process::exit(2);
    }
    move |name, setting| {
        list.as_ref().is_none_or(|l| {
            l.iter()
                .any(|e| e == name || *e == format!("{name}:{}", setting.label()))
        })
    }
}

fn verdict(ok: bool) -> &'static str {
    if ok { "met" } else { "MISSED" }
}

/// User and system CPU seconds of this process so far, every thread
/// included (ended ones too): the cost of a fill, and with its time, how
/// many cores it kept busy.
#[cfg(target_os = "linux")]
fn process_cpu() -> Option<(f64, f64)> {
    let mut ru = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage writes a whole `rusage` into the pointer it gets
    // and reads nothing from it.
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, ru.as_mut_ptr()) } != 0 {
        return None;
    }
    // SAFETY: initialised by the successful call above.
    let ru = unsafe { ru.assume_init() };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    Some((secs(ru.ru_utime), secs(ru.ru_stime)))
}

#[cfg(not(target_os = "linux"))]
fn process_cpu() -> Option<(f64, f64)> {
    None
}

fn main() {
    // `cargo bench` passes `--bench`; nothing to parse.
    let n = env_u64("BLOOMLSM_PEERS_KEYS", 1_000_000);
    let gets = env_u64("BLOOMLSM_PEERS_GETS", 100_000) as usize;
    let rounds = env_u64("BLOOMLSM_PEERS_ROUNDS", 7) as usize;
    let settings = settings_wanted();

    // A kept store is reopened as it is (no load, no full compaction), so
    // two builds can be timed alternately on the same files.
    let kept = std::env::var_os("BLOOMLSM_PEERS_DIR").map(std::path::PathBuf::from);
    let tmp = tempfile::tempdir().unwrap();
    let root = kept.clone().unwrap_or_else(|| tmp.path().to_path_buf());
    let wanted = peers_wanted();
    let mut engines: Vec<Box<dyn Engine>> = Vec::new();
    let mut loads: Vec<Option<Duration>> = Vec::new();
    let mut cpus: Vec<Option<(f64, f64)>> = Vec::new();
    let mut dirs: Vec<std::path::PathBuf> = Vec::new();
    // `tag` tells a bloomlsm candidate's directory from the others.
    let mut open = |name: &str, setting: Setting, tag: &str, fill: &Filler<'_>| {
        if !wanted(name, setting) {
            return;
        }
        let dir = root.join(format!("{name}-{}{tag}", setting.label()));
        let reuse = kept.is_some() && dir.exists();
        let before = process_cpu();
        let (e, load) = fill(&dir, setting, !reuse);
        // The fill's CPU: the engines run one after another, and the one
        // filled before is settled and idle.
        let cpu = before
            .zip(process_cpu())
            .map(|((u0, s0), (u1, s1))| (u1 - u0, s1 - s0));
        e.settle();
        if reuse {
            eprintln!("{}: reopened the kept store {}", e.label(), dir.display());
        } else {
            eprintln!("{} loaded in {:.1}s", e.label(), load.as_secs_f64());
        }
        engines.push(e);
        loads.push((!reuse).then_some(load));
        cpus.push(cpu.filter(|_| !reuse));
        dirs.push(dir);
    };
    for &setting in &settings {
        let shapes = match setting {
            Setting::Shared => vec![None],
            Setting::Defaults => shapes_wanted(),
        };
        for (j, shape) in shapes.into_iter().enumerate() {
            let tag = if j == 0 {
                String::new()
            } else {
                format!("-{j}")
            };
            open("bloomlsm", setting, &tag, &|d, s, l| {
                let (e, t) = Bloomlsm::fill(d, n, l, s, shape.clone());
                (Box::new(e), t)
            });
        }
        open("fjall", setting, "", &|d, s, l| {
            let (e, t) = Fjall::fill(d, n, l, s);
            (Box::new(e), t)
        });
        #[cfg(feature = "rocksdb-peer")]
        open("rocksdb", setting, "", &|d, s, l| {
            let (e, t) = Rocks::fill(d, n, l, s);
            (Box::new(e), t)
        });
    }
    // Each setting's engines, bloomlsm first (as opened); a setting none
    // of the engines asked for runs in has no group.
    let groups: Vec<(Setting, Vec<usize>)> = settings
        .iter()
        .map(|&s| {
            let g: Vec<usize> = (0..engines.len())
                .filter(|&i| engines[i].setting() == s)
                .collect();
            (s, g)
        })
        .filter(|(_, g)| !g.is_empty())
        .collect();

    println!("\nEngines:");
    for e in &engines {
        println!("  {}", e.describe());
    }
    println!(
        "\nPeers: {n} keys x {VALUE_LEN} B values in batches of {}, {rounds} rounds x \
         {gets} gets per kind (+1 warm-up) per state, engines of every setting interleaved in each round",
        batch_size()
    );

    let user_bytes = n * (16 + VALUE_LEN as u64);
    let puts = |i: usize| loads[i].map(|t| n as f64 / t.as_secs_f64());
    // bloomlsm's engine index in the setting of engine `i`, if it runs.
    let bloomlsm_of = |i: usize| {
        groups
            .iter()
            .find(|(s, _)| *s == engines[i].setting())
            .map(|(_, g)| g[0])
            .filter(|&b| engines[b].name() == "bloomlsm")
    };
    println!("\nLoad (fill, flush and settle; engines one after another):\n");
    println!(
        "| engine | setting | load s | puts/s | bloomlsm / engine | write amplification (table bytes written / user bytes) \
         | CPU s, user + system | cores busy | CPU µs/put |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    for (i, e) in engines.iter().enumerate() {
        let wamp = e
            .write_amplification(user_bytes)
            .map_or_else(|| "–".to_string(), |w| format!("{w:.2}"));
        let cpu = match (cpus[i], loads[i]) {
            (Some((u, s)), Some(t)) => format!(
                "{u:.1} + {s:.1} | {:.2} | {:.2}",
                (u + s) / t.as_secs_f64(),
                (u + s) * 1e6 / n as f64
            ),
            _ => "– | – | –".to_string(),
        };
        let setting = e.setting().label();
        match (loads[i], puts(i), bloomlsm_of(i).and_then(puts)) {
            (Some(t), Some(p), Some(p0)) => println!(
                "| {} | {setting} | {:.1} | {p:.0} | {:.2}× | {wamp} | {cpu} |",
                e.row(),
                t.as_secs_f64(),
                p0 / p
            ),
            (Some(t), Some(p), None) => println!(
                "| {} | {setting} | {:.1} | {p:.0} | – | {wamp} | {cpu} |",
                e.row(),
                t.as_secs_f64(),
            ),
            _ => println!(
                "| {} | {setting} | kept store | – | – | {wamp} | {cpu} |",
                e.row()
            ),
        }
    }
    for e in &engines {
        if let Some(notes) = e.load_notes() {
            println!("  {}: {notes}", e.label());
        }
    }

    // Another seed gets other keys of both kinds; the counters' probes
    // below start at 2^40 and 2^41, past any seed's.
    let seed = env_u64("BLOOMLSM_PEERS_GET_SEED", 99) % 128;
    let mut keys = Keys {
        n,
        gets,
        rounds,
        rng: SplitMix64::new(seed),
        next_absent: seed << 32,
    };
    let probes = 200_000u64;
    println!("\nAfter the loads: {}", memory_line());
    warm(&engines, &dirs);
    let mut settled = measure(&engines, &mut keys);
    let settled_counters = counters(&engines, probes, 1 << 40);
    // (setting, state, existing ratio, missing ratio)
    let mut targets = Vec::new();
    // A kept store may have been compacted by an earlier run.
    let (first_state, first_label) = if loads.iter().all(Option::is_some) {
        ("Settled tree", "settled")
    } else {
        ("Kept tree as reopened", "kept")
    };
    for (s, g) in &groups {
        let (e, m) = report(
            &format!(
                "{first_state}, {} settings (ratio = engine's median / fastest peer's median; \
                 bloomlsm's row is the target ratio)",
                s.label()
            ),
            &engines,
            g,
            &mut settled,
        );
        targets.push((*s, first_label, e, m));
    }
    if compact_wanted(kept.is_some()) {
        let mut compaction = Vec::new();
        for e in &engines {
            let t = Instant::now();
            e.compact();
            compaction.push(t.elapsed());
            eprintln!(
                "{} compacted in {:.1}s",
                e.label(),
                t.elapsed().as_secs_f64()
            );
        }
        warm(&engines, &dirs);
        let mut compacted = measure(&engines, &mut keys);
        let compacted_counters = counters(&engines, probes, 2 << 40);
        for (s, g) in &groups {
            let times: Vec<String> = g
                .iter()
                .map(|&i| format!("{} {:.1} s", engines[i].row(), compaction[i].as_secs_f64()))
                .collect();
            let (e, m) = report(
                &format!(
                    "After a full manual compaction, {} settings ({})",
                    s.label(),
                    times.join(", ")
                ),
                &engines,
                g,
                &mut compacted,
            );
            targets.push((*s, "compacted", e, m));
        }
        print_counters(&engines, probes, first_label, &settled_counters);
        print_counters(&engines, probes, "compacted", &compacted_counters);
    } else {
        println!("\n(no full compaction: BLOOMLSM_PEERS_COMPACT=0, or a kept store without it)");
        print_counters(&engines, probes, first_label, &settled_counters);
    }

    println!("\nMemory: {}", memory_line());
    println!("\nTargets:");
    for (s, g) in &groups {
        if engines[g[0]].name() != "bloomlsm" || g.iter().all(|&i| engines[i].name() == "bloomlsm")
        {
            continue;
        }
        for &i in &g[1..] {
            if engines[i].name() == "bloomlsm" {
                continue;
            }
            if let (Some(p0), Some(p)) = (puts(g[0]), puts(i)) {
                let got = p0 / p;
                println!(
                    "  {}: load ≥ 1.5× {}: {got:.2}× {}",
                    s.label(),
                    engines[i].name(),
                    verdict(got >= 1.5)
                );
            }
        }
        for (ts, state, existing, missing) in &targets {
            if ts != s {
                continue;
            }
            println!(
                "  {}: missing get, {state} ≤ 0.8× fastest peer: {missing:.2}× {}",
                s.label(),
                verdict(*missing <= 0.8)
            );
            println!(
                "  {}: existing get, {state} ≤ 1.0× fastest peer: {existing:.2}× {}",
                s.label(),
                verdict(*existing <= 1.0)
            );
        }
    }
}

fn print_counters(engines: &[Box<dyn Engine>], probes: u64, title: &str, c: &[String]) {
    println!("\nCounters over {probes} further missing-key gets, {title}:");
    for (e, c) in engines.iter().zip(c) {
        println!("  {:<20} {c}", e.label());
    }
}
