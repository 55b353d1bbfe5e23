//! bloomlsm with its tables in an S3 bucket beside SlateDB, which keeps
//! everything in object storage, on the same S3 server (docs/benchmarks.md,
//! "SlateDB on the same S3 server").
//!
//! Workload: N random 16-byte keys (`present_key`) with random 100-byte
//! values, put in batches of 1000 into each engine in turn and flushed so
//! that all data is in tables in the bucket (the load). Then both stores
//! are closed and reopened with empty caches, and each does the same
//! missing-key gets (`absent_key`), then the same existing-key gets (random
//! present keys), the engines alternating every 100 gets so that the
//! server's and the machine's noise hits both alike.
//!
//! Settings, the same for both where both have them: 10 bits/key Bloom
//! filters (bloomlsm's default blocked512; SlateDB's `BloomFilterPolicy`,
//! also its default), filters and indexes held in memory (bloomlsm pins
//! every table's; SlateDB's `DbCache` is a `SplitCache` whose meta cache,
//! 128 MiB, holds every SST's filter, index and stats), no data-block cache
//! (bloomlsm `block_cache_capacity(0)`; SlateDB's `SplitCache` without a
//! block cache), no disk cache (bloomlsm `BucketConfig::cache_bytes(0)`;
//! SlateDB's object store cache unset, its default), no compression (the
//! values are random; SlateDB's default), 4 KiB data blocks (both defaults),
//! WAL on and not synced per write (bloomlsm: a local file, handed to the
//! OS per batch; SlateDB: in the bucket, flushed every 100 ms, its default,
//! no write awaiting its durability). Everything else is each engine's
//! default.
//!
//! Measured per engine: the load (puts and the final flush; bloomlsm's idle
//! L0 merge once writes stop, which follows, is not in it), then over the
//! gets: GET requests for table data per get (bloomlsm:
//! `BucketFs::counters`; SlateDB: a counting wrapper around the
//! `ObjectStore` it is given, benches/peer/slatedb.rs), the bytes they
//! returned per get, and the latency of each get (p50, p99). The requests
//! outside the gets — the load's PUTs, the reopen's reads, and what SlateDB
//! asks of the bucket by itself while the gets run — are printed apart.
//!
//! Needs an S3 server with a bucket:
//!
//! ```text
//! export BLOOMLSM_S3_ENDPOINT=$(bash .ci/moto.sh start)
//! cargo bench --features slatedb-peer --bench slatedb_peer
//! bash .ci/moto.sh stop
//! ```
//!
//! `BLOOMLSM_PEER_KEYS=N` changes the key count (default 100,000),
//! `BLOOMLSM_PEER_GETS=N` the gets of each kind (default 2,000),
//! `BLOOMLSM_S3_BUCKET` the bucket (default `bloomlsm-test`). Each run
//! writes under a prefix of its own, `slatedb-peer/<time>-<pid>/`.

#[path = "peer/slatedb.rs"]
mod slate;

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bloomlsm::fs::bucket::{BucketConfig, BucketCounters, BucketFs};
use bloomlsm::workload::{SplitMix64, absent_key, present_key};
use bloomlsm::{CompressionOptions, Db, Options, WriteBatch};
use hdrhistogram::Histogram;

const SEED: u64 = 7;
const VALUE_LEN: usize = 100;
const BATCH: usize = 1000;
const BITS_PER_KEY: f64 = 10.0;
/// Gets of one engine before the other takes its turn.
const TURN: u64 = 100;

/// A key and its value.
type Record = ([u8; 16], [u8; VALUE_LEN]);

/// The S3 server and bucket both engines use.
#[derive(Clone, Debug)]
struct S3 {
    endpoint: String,
    bucket: String,
}

/// Requests an engine made, as its counters tell. "Table" requests read
/// the tables' data and metadata; "other" ones read SlateDB's WAL, manifest
/// and compactor state (bloomlsm keeps those files on the local disk).
#[derive(Clone, Copy, Debug, Default)]
struct Requests {
    table_gets: u64,
    table_get_bytes: u64,
    table_heads: u64,
    other_gets: u64,
    other_heads: u64,
    puts: u64,
    put_bytes: u64,
    lists: u64,
    deletes: u64,
    copies: u64,
}

impl Requests {
    fn from_bucket(c: &BucketCounters) -> Self {
        Requests {
            table_gets: c.gets,
            table_get_bytes: c.get_bytes,
            table_heads: c.heads,
            puts: c.puts,
            put_bytes: c.put_bytes,
            lists: c.lists,
            deletes: c.deletes,
            copies: c.copies,
            ..Requests::default()
        }
    }

    /// The requests made since `before`.
    fn since(&self, before: &Requests) -> Requests {
        Requests {
            table_gets: self.table_gets - before.table_gets,
            table_get_bytes: self.table_get_bytes - before.table_get_bytes,
            table_heads: self.table_heads - before.table_heads,
            other_gets: self.other_gets - before.other_gets,
            other_heads: self.other_heads - before.other_heads,
            puts: self.puts - before.puts,
            put_bytes: self.put_bytes - before.put_bytes,
            lists: self.lists - before.lists,
            deletes: self.deletes - before.deletes,
            copies: self.copies - before.copies,
        }
    }

    fn add(&mut self, d: &Requests) {
        self.table_gets += d.table_gets;
        self.table_get_bytes += d.table_get_bytes;
        self.table_heads += d.table_heads;
        self.other_gets += d.other_gets;
        self.other_heads += d.other_heads;
        self.puts += d.puts;
        self.put_bytes += d.put_bytes;
        self.lists += d.lists;
        self.deletes += d.deletes;
        self.copies += d.copies;
    }
}

/// A package's version as Cargo.lock pins it (the bench is built from it).
fn locked_version(package: &str) -> String {
    let lock = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.lock"));
    let head = format!("name = \"{package}\"\nversion = \"");
    lock.split_once(&head)
        .and_then(|(_, rest)| rest.split_once('"'))
        .map_or_else(|| "?".to_string(), |(v, _)| v.to_string())
}

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The load's records: `present_key(SEED, i)` for `i in 0..n`, values random.
fn records(n: u64) -> Vec<Record> {
    let mut rng = SplitMix64::new(SEED);
    (0..n)
        .map(|i| {
            let mut value = [0u8; VALUE_LEN];
            rng.fill(&mut value);
            (present_key(SEED, i), value)
        })
        .collect()
}

// ---------------------------------------------------------------- bloomlsm

/// A bloomlsm store whose tables are in the bucket.
struct Bloom {
    dir: tempfile::TempDir,
    cache_dir: tempfile::TempDir,
    s3: S3,
    prefix: String,
    fs: Option<Arc<BucketFs>>,
    db: Option<Db>,
}

impl Bloom {
    fn new(s3: &S3, prefix: String) -> Self {
        Bloom {
            dir: tempfile::tempdir().unwrap(),
            cache_dir: tempfile::tempdir().unwrap(),
            s3: s3.clone(),
            prefix,
            fs: None,
            db: None,
        }
    }

    fn options() -> Options {
        Options::default()
            .block_cache_capacity(0)
            .compression(CompressionOptions::none())
    }

    /// Opens the store with a new `BucketFs` (its counters from zero, nothing
    /// known of the bucket's objects), as a new process would.
    fn open(&mut self) {
        let config = BucketConfig::new(self.dir.path(), &self.s3.bucket, self.cache_dir.path())
            .endpoint(&self.s3.endpoint)
            .prefix(&self.prefix)
            .region("us-east-1")
            .credentials("test", "test")
            .cache_bytes(0);
        let fs = Arc::new(BucketFs::open(config).expect("bucket"));
        self.db = Some(Db::open(self.dir.path(), Self::options().fs(fs.clone())).unwrap());
        self.fs = Some(fs);
    }

    fn db(&self) -> &Db {
        self.db.as_ref().expect("open")
    }

    fn requests(&self) -> Requests {
        Requests::from_bucket(&self.fs.as_ref().expect("open").counters())
    }

    /// Puts `records` in batches of [`BATCH`] (WAL on, not synced), then
    /// flushes the memtable to a table in the bucket.
    fn load(&self, records: &[Record]) -> Duration {
        let db = self.db();
        let t = Instant::now();
        for chunk in records.chunks(BATCH) {
            let mut batch = WriteBatch::new();
            for (k, v) in chunk {
                batch.put(k, v);
            }
            db.write(batch).unwrap();
        }
        db.flush().unwrap();
        t.elapsed()
    }

    /// After the load, outside its time: after a second without writes
    /// the compaction thread merges an L0 of two or more tables
    /// (`Options::idle_l0_compaction`). Waits until L0 holds at most one
    /// table (at most a minute: the merge uploads its output first), then
    /// until the level shape holds for three polls 200 ms apart, so that
    /// no merge runs during the gets after the reopen.
    fn settle(&self) {
        let levels = || {
            let s = self.db().stats();
            (
                s.compactions,
                s.levels.iter().map(|l| l.files).collect::<Vec<_>>(),
            )
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        while levels().1[0] > 1 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(200));
        }
        let mut last = levels();
        let mut still = 0;
        while still < 3 {
            std::thread::sleep(Duration::from_millis(200));
            let now = levels();
            still = if now == last { still + 1 } else { 0 };
            last = now;
        }
    }

    fn close(&mut self) {
        if let Some(db) = self.db.take() {
            db.close().unwrap();
        }
        self.fs = None;
    }

    fn get(&self, key: &[u8]) -> bool {
        self.db().get(key).unwrap().is_some()
    }

    fn shape(&self) -> String {
        let s = self.db().stats();
        let levels: Vec<String> = s
            .levels
            .iter()
            .enumerate()
            .filter(|(_, l)| l.files > 0)
            .map(|(i, l)| format!("L{i}: {} tables", l.files))
            .collect();
        levels.join(", ")
    }

    fn describe(&self) -> String {
        let o = self.db().options();
        format!(
            "bloomlsm {} (this tree): filters {} pinned with the indexes, {} B blocks, \
             block cache {} B, no compression, write buffer {} MiB, WAL on the local disk \
             (not synced per write), tables in the bucket through BucketFs with its disk cache \
             off (cache_bytes 0: each block read is one ranged GET)",
            env!("CARGO_PKG_VERSION"),
            bloomlsm::filter::filter_spec(o.filters.policy.as_ref()),
            o.block_size,
            o.block_cache_capacity,
            o.write_buffer_size >> 20,
        )
    }
}

// ---------------------------------------------------------------- report

/// What the gets of one kind cost one engine.
struct Gets {
    /// Nanoseconds per get.
    latency: Histogram<u64>,
    requests: Requests,
    n: u64,
}

impl Gets {
    fn new() -> Self {
        Gets {
            latency: Histogram::new_with_bounds(1, 600_000_000_000, 3).unwrap(),
            requests: Requests::default(),
            n: 0,
        }
    }

    fn gets_per(&self) -> f64 {
        self.requests.table_gets as f64 / self.n as f64
    }

    fn bytes_per(&self) -> f64 {
        self.requests.table_get_bytes as f64 / self.n as f64
    }

    /// The `q` quantile of the latency, in µs.
    fn p(&self, q: f64) -> f64 {
        self.latency.value_at_quantile(q) as f64 / 1e3
    }
}

/// Both engines' gets of one kind, alternating every [`TURN`] gets; checks
/// every answer against `expect`. Returns bloomlsm's and SlateDB's figures
/// and SlateDB's requests over the whole phase that were not its tables'.
fn gets(
    bloom: &Bloom,
    slate: &slate::Slate,
    keys: &[[u8; 16]],
    expect: bool,
) -> (Gets, Gets, Requests) {
    let (mut b, mut s) = (Gets::new(), Gets::new());
    let slate_start = slate.requests();
    for turn in keys.chunks(TURN as usize) {
        let before = bloom.requests();
        for k in turn {
            let t = Instant::now();
            assert_eq!(bloom.get(k), expect, "bloomlsm get");
            b.latency.record(t.elapsed().as_nanos() as u64).unwrap();
        }
        b.requests.add(&bloom.requests().since(&before));
        b.n += turn.len() as u64;

        let before = slate.requests();
        for k in turn {
            let t = Instant::now();
            assert_eq!(slate.get(k), expect, "SlateDB get");
            s.latency.record(t.elapsed().as_nanos() as u64).unwrap();
        }
        s.requests.add(&slate.requests().since(&before));
        s.n += turn.len() as u64;
    }
    let mut background = slate.requests().since(&slate_start);
    background.table_gets -= s.requests.table_gets;
    background.table_get_bytes -= s.requests.table_get_bytes;
    (b, s, background)
}

fn verdict(ok: bool) -> &'static str {
    if ok { "met" } else { "MISSED" }
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1 << 20) as f64
}

fn main() {
    // `cargo bench` passes `--bench`; nothing else is taken.
    let Ok(endpoint) = std::env::var("BLOOMLSM_S3_ENDPOINT") else {
        eprintln!(
            "error: BLOOMLSM_S3_ENDPOINT is not set: start an S3 server first, \
             e.g. `export BLOOMLSM_S3_ENDPOINT=$(bash .ci/moto.sh start)`"
        );
        std::process::exit(2);
    };
    let s3 = S3 {
        endpoint,
        bucket: std::env::var("BLOOMLSM_S3_BUCKET").unwrap_or_else(|_| "bloomlsm-test".into()),
    };
    let n = env_u64("BLOOMLSM_PEER_KEYS", 100_000).max(1);
    let g = env_u64("BLOOMLSM_PEER_GETS", 2_000).max(1);
    let run = format!(
        "slatedb-peer/{}-{}",
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs(),
        std::process::id()
    );

    let data = records(n);
    let mut bloom = Bloom::new(&s3, format!("{run}/bloomlsm/"));
    let mut slate = slate::Slate::new(&s3, format!("{run}/slatedb"));

    // Loads, one engine after the other.
    bloom.open();
    let bloom_load = bloom.load(&data);
    eprintln!("bloomlsm loaded in {:.1}s", bloom_load.as_secs_f64());
    bloom.settle();
    let bloom_load_req = bloom.requests();
    let bloom_shape = bloom.shape();
    let bloom_describe = bloom.describe();
    bloom.close();

    slate.open();
    let slate_start = slate.requests();
    let slate_load = slate.load(&data);
    eprintln!("SlateDB loaded in {:.1}s", slate_load.as_secs_f64());
    let slate_load_req = slate.requests().since(&slate_start);
    let slate_shape = slate.shape();
    slate.close();

    // Reopens, with nothing cached.
    let t = Instant::now();
    bloom.open();
    let bloom_open = (t.elapsed(), bloom.requests());
    let before = slate.requests();
    let t = Instant::now();
    slate.open();
    let slate_open = (t.elapsed(), slate.requests().since(&before));

    let missing: Vec<[u8; 16]> = (0..g).map(|i| absent_key(SEED, i)).collect();
    let mut rng = SplitMix64::new(SEED ^ 0x5eed);
    let existing: Vec<[u8; 16]> = (0..g).map(|_| present_key(SEED, rng.below(n))).collect();
    let (bm, sm, slate_bg_m) = gets(&bloom, &slate, &missing, false);
    let (be, se, slate_bg_e) = gets(&bloom, &slate, &existing, true);
    bloom.close();
    slate.close();

    println!(
        "\nSlateDB on the same S3 server: {n} keys (16 B) x {VALUE_LEN} B values put in batches \
         of {BATCH}; after a reopen with empty caches, {g} missing-key gets then {g} \
         existing-key gets per engine, the engines alternating every {TURN} gets"
    );
    println!(
        "S3 server {}, bucket {}, prefix {run}/",
        s3.endpoint, s3.bucket
    );
    println!("\nEngines:");
    println!("  {bloom_describe}");
    println!("  {}", slate::describe());
    println!("\nTables after the load: bloomlsm {bloom_shape}; SlateDB {slate_shape}");

    println!(
        "\n| engine | load s | GETs/missing get | GETs/existing get | bytes/get (missing, existing) \
         | missing get p50 / p99 µs | existing get p50 / p99 µs |"
    );
    println!("|---|---|---|---|---|---|---|");
    for (name, load, m, e) in [
        ("bloomlsm", bloom_load, &bm, &be),
        ("SlateDB", slate_load, &sm, &se),
    ] {
        println!(
            "| {name} | {:.2} | {:.4} | {:.4} | {:.0}, {:.0} | {:.1} / {:.1} | {:.0} / {:.0} |",
            load.as_secs_f64(),
            m.gets_per(),
            e.gets_per(),
            m.bytes_per(),
            e.bytes_per(),
            m.p(0.5),
            m.p(0.99),
            e.p(0.5),
            e.p(0.99),
        );
    }

    println!("\nRequests outside the gets' own table reads:");
    let r = &bloom_load_req;
    println!(
        "  bloomlsm load and the idle L0 merge after it: {} PUTs ({:.1} MiB), {} DELETEs; reopen {:.2}s: {} GETs ({:.1} KiB), \
         {} HEADs, {} LISTs, {} PUT (BucketFs's probe); during the gets: {} HEADs",
        r.puts,
        mib(r.put_bytes),
        r.deletes,
        bloom_open.0.as_secs_f64(),
        bloom_open.1.table_gets,
        bloom_open.1.table_get_bytes as f64 / 1024.0,
        bloom_open.1.table_heads,
        bloom_open.1.lists,
        bloom_open.1.puts,
        bm.requests.table_heads + be.requests.table_heads,
    );
    let (r, o) = (&slate_load_req, &slate_open.1);
    let mut bg = slate_bg_m;
    bg.add(&slate_bg_e);
    println!(
        "  SlateDB load: {} PUTs ({:.1} MiB), {} GETs + {} HEADs (WAL, manifest), {} LISTs, \
         {} DELETEs; reopen {:.2}s: {} table GETs, {} other GETs, {} HEADs, {} LISTs, {} PUTs; \
         during the gets, besides the tables' reads: {} GETs, {} HEADs, {} LISTs, {} PUTs \
         (its own polling of the manifest and the WAL, compactor and GC)",
        r.puts,
        mib(r.put_bytes),
        r.table_gets + r.other_gets,
        r.table_heads + r.other_heads,
        r.lists,
        r.deletes,
        slate_open.0.as_secs_f64(),
        o.table_gets,
        o.other_gets,
        o.table_heads + o.other_heads,
        o.lists,
        o.puts,
        bg.other_gets + bg.table_gets,
        bg.table_heads + bg.other_heads,
        bg.lists,
        bg.puts,
    );
    println!(
        "  (SlateDB reads an SST's filter and index on the first get that needs them, so they \
         are in its gets' counts; bloomlsm reads them when it opens a table)"
    );

    println!("\nTargets:");
    let le = |a: f64, b: f64| a <= b + 1e-12;
    println!(
        "  GETs per missing get ≤ SlateDB's: {:.4} vs {:.4} {}",
        bm.gets_per(),
        sm.gets_per(),
        verdict(le(bm.gets_per(), sm.gets_per()))
    );
    println!(
        "  GETs per existing get ≤ SlateDB's: {:.4} vs {:.4} {}",
        be.gets_per(),
        se.gets_per(),
        verdict(le(be.gets_per(), se.gets_per()))
    );
    let ratio = bm.p(0.5) / sm.p(0.5);
    println!(
        "  missing get latency (p50) ≤ 0.8× SlateDB's: {ratio:.2}× {} (p99: {:.2}×)",
        verdict(ratio <= 0.8),
        bm.p(0.99) / sm.p(0.99),
    );
    let speed = slate_load.as_secs_f64() / bloom_load.as_secs_f64();
    println!(
        "  load ≥ 1.5× SlateDB's speed: {speed:.2}× {}",
        verdict(speed >= 1.5)
    );
}
