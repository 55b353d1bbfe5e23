//! The text after each command's `--help`: examples, the fields of its
//! `--json` output (names are stable: fields may be added, none renamed or
//! removed without a major version), and the exit statuses.

/// The exit statuses of every command (the constants in `main.rs`).
macro_rules! exit_status {
    () => {
        "
Exit status:
  0  success
  1  the answer is no: db get found no such key; sst verify / db verify found a bad file,
     or db verify found that opening the store drops writes from a write-ahead log;
     stress read an answer that disagrees with its expected state (a mismatch)
  2  usage error: bad arguments, a store directory that is missing, not a directory or
     not a store, a --keyspace or --drop that names no keyspace of it, a --create name
     it cannot take, a checkpoint inside the store, or a bad output path (nothing was
     written)
  3  bad input data: a bad db load line, an empty key, a key or value over the store's
     limits (nothing was written)
  4  failure: I/O error (a permission denied among them), corruption met, store locked
     by a writer
Errors are one line on stderr: `bloomlsm: <what>`."
    };
}

/// How keys and values are written (every `db` command and `sst dump`).
macro_rules! key_forms {
    () => {
        "
Keys and values: UTF-8 text as itself; a backslash as \\\\; control characters and
bytes that are not UTF-8 as \\xNN (also accepted on input: \\t \\n \\r \\0). With
--hex, two hex digits per byte, in and out (input may start with 0x).
"
    };
}

/// What the reading commands promise.
macro_rules! read_only {
    () => {
        "
The store is opened read-only: no lock is taken and no file is created or changed,
so this works beside a running writer and on a directory you cannot write.
"
    };
}

/// What every command that opens a store says of a damaged write-ahead log.
macro_rules! wal_warning {
    () => {
        "
If opening the store drops the end of a write-ahead log (a write torn by a crash, or
a damaged record), the command still runs, on the store without those writes, and
prints one line on stderr: `bloomlsm: warning: the open of DIR dropped N bytes ...`
(db verify fails instead, exit status 1).
"
    };
}

/// Where the writing commands that make a store make one.
macro_rules! new_store {
    () => {
        "
A missing or empty directory becomes a new store; a directory that holds other files
(and no store) is refused unless --create is given.
"
    };
}

/// `bloomlsm` itself.
pub const TOP: &str = concat!(
    "Examples:
  bloomlsm db put /tmp/s apple red       store a value (creates the store)
  bloomlsm db get /tmp/s apple           red
  bloomlsm db scan /tmp/s --json         one JSON object per entry
  bloomlsm db compact /tmp/s             merge the store down into one table
  bloomlsm sst dump /tmp/s/*.sst         look inside it (db stats --files lists tables)
  bloomlsm bench --keys 100000           the filter / disk-I/O study
  bloomlsm completions bash > /etc/bash_completion.d/bloomlsm
",
    exit_status!()
);

/// `bloomlsm completions`.
pub const COMPLETIONS: &str = concat!(
    "Examples:
  bloomlsm completions bash > ~/.local/share/bash-completion/completions/bloomlsm
  bloomlsm completions zsh > ~/.zfunc/_bloomlsm     (with fpath+=~/.zfunc)
  bloomlsm completions fish > ~/.config/fish/completions/bloomlsm.fish
",
    exit_status!()
);

/// `bloomlsm bench`.
pub const BENCH: &str = concat!(
    "Examples:
  bloomlsm bench                                     the default study (about a minute)
  bloomlsm bench --keys 200000 --configs none,blocked8,monkey8
  bloomlsm bench --json --plot study.svg > study.jsonl
  bloomlsm bench --dir /tmp/stores --reuse-dir       keep the stores, replace an earlier run's
  bloomlsm bench --io direct --dir /var/tmp/b        reads that reach the device (O_DIRECT)
  bloomlsm bench --configs blocked10 --compression zstd:3 --value-ratio 0.3
  bloomlsm bench --benchmarks fillrandom,readrandom,readmissing --num 1000000
                                                     db_bench's workloads and line format
  bloomlsm bench --benchmarks fillrandom,readmissing --statistics
                                                     and the counters under RocksDB's names
  bloomlsm bench --benchmarks fillrandom,ycsb-a,ycsb-c --num 200000 --miss-fraction 0.5
                                                     YCSB's workloads, half the reads missing
  bloomlsm bench --benchmarks fillrandom,readwhilewriting --timeseries rww.csv --plot rww.svg
                                                     readwhilewriting sampled every second
  bloomlsm bench --benchmarks fillrandom,readmissing --read-latency-us 20000
                                                     reads as on remote storage, and their cost
  bloomlsm bench --store s3://my-bucket/study --configs none,blocked10
                                                     each store also read from an S3 bucket
                                                     (built with --features object-store)
  bloomlsm bench --workload prefix --keys 200000      prefix scans and prefix filters
  bloomlsm bench --workload range --range-bits 12,16 --range-len 1,256 --correlated
                                                      bounded scans and range filters

The stores are built in a temporary directory under $TMPDIR (else /tmp), removed at
the end, and also when bench is interrupted by SIGINT (Ctrl-C) or SIGTERM, which ends
it with exit status 130 or 143 (as a shell reports a process the signal killed).
Stores under --dir are kept. --plot takes a file name ending in .svg.
The keys are loaded once, without filters, and each configuration's store is made
from that load with its own filters rebuilt, up to five stores from one read of it:
load_seconds, write_amplification and the load's bytes are that single load's,
refilter_seconds the making of each store (its share of the joint rebuild).
--reload loads each configuration's store itself (refilter_seconds null).

JSON (--json): one object per configuration per line, in --configs order:
  config, policy                       the name given and its policy, e.g. \"blocked512(10 b/k, k=6)\"
  keys, nominal_bits_per_key, bits_per_key, filter_bytes
  predicted_fpr, measured_fpr          fractions (not percent); null without filter probes
  block_reads_per_missing_get, predicted_block_reads_per_missing_get,
  unfiltered_block_reads_per_missing_get, io_saved (fraction)
  missing_gets, filter_checks, filter_negatives, false_positives, missing_get_ns,
  multi_get_missing_ns                 the same missing keys by Db::multi_get, 1,024 a call
  existing_gets, block_reads_per_existing_get, existing_get_ns, load_seconds,
  refilter_seconds
  disk_bytes                           bytes of the store's files after loading
  data_bytes, data_raw_bytes           data blocks as stored and before compression
  compression_ratio                    data_raw_bytes / data_bytes (null without data)
  write_amplification                  the load's (bytes_flushed + bytes_compacted) /
                                       user_bytes_written (keys + values; WAL not counted)
  user_bytes_written, bytes_flushed, bytes_compacted   the load's bytes (Stats of the library)
  table_reopens                        table files reopened by the load and the gets: the
                                       store held more tables than --max-open-files allows
  filter_build_ns_per_key, filter_probe_ns   CPU of the store's filters: each level's policy
                                       timed on a 65,536-key filter, build weighted by keys,
                                       probe (absent key) by filter checks; null without filters
  shape                                [{level, files, keys, bytes, filter_bits_per_key}]
                                       per non-empty level; filter_bits_per_key null if unfiltered
  io                                   \"buffered\" or \"direct\"
  memory_ceiling                       --memory-ceiling in bytes (null without)
  phases                               [{phase (\"missing_get\", \"multi_get_missing\", \"existing_get\"),
                                       keys, mean_ns, p50_ns, p90_ns, p99_ns, p999_ns, max_ns,
                                       store_bytes, device_bytes, store_bytes_per_key,
                                       device_bytes_per_key, device_bytes_saved_per_key}]
                                       latency per key from an HDR histogram (multi_get: each
                                       call's time over its keys); store_bytes: the store's count
                                       of data-block bytes read (whole sectors with direct
                                       I/O); device_bytes: /proc/self/io read_bytes over the phase
                                       (null off Linux); saved: below the none configuration's
                                       (missing-key phases; null without none)
  bucket                               with --store: {url, tables, table_bytes, upload_seconds,
                                       open_get_requests, open_request_bytes, prefetch_get_requests,
                                       prefetch_bytes, prefetch_seconds, phases: {missing_cold,
                                       existing_cold, existing_multi_get_cold, missing_warm,
                                       existing_warm: {gets,
                                       get_requests, get_requests_per_get, model_requests_per_get,
                                       fpr_model_requests_per_get, request_bytes_per_get,
                                       model_bytes_per_get, p50_ns, p99_ns, mean_ns,
                                       requests_saved_per_get, usd_per_million_gets}}}
                                       cold: no disk cache, each block read one GET; warm: every
                                       table in the disk cache; model: the store's block reads
                                       (one request each); saved: below none's (null without none)
  tickers                              {missing_get, existing_get}: each phase's counters under
                                       RocksDB's names, name: value (as db stats --json's tickers;
                                       missing_get's rocksdb.bloom.filter.useful = filter_negatives)
CSV (--csv): the same scalar fields, then io, then per phase <phase>_p50_ns, _p90_ns, _p99_ns,
  _p999_ns, _max_ns, _store_bytes, _device_bytes.
With --plot, one last line: {\"sweep\": [{filter, requested_bits_per_key, bits_per_key,
  probes_per_key, predicted_fpr, measured_fpr, probes, false_positives}], \"sweep_keys\": N,
  \"plot\": PATH}.

--benchmarks LIST runs db_bench's workloads in order on one store (the first --configs
configuration, else blocked10; compactions on their background thread) and prints, per
workload, db_bench's line (micros/op, ops/sec, MB/s of keys + values, found of total),
its --histogram percentiles line (P50 P75 P99 P99.9 P99.99, micros) and, for gets, the
filters' checks, false positives, FPR and the model's, data blocks and bytes per lookup.
With --json, one object per workload: benchmark, config, ops, micros_per_op, ops_per_sec,
  mb_per_sec, bytes, found, p50_us, p75_us, p99_us, p999_us, p9999_us, filter_checks,
  false_positives, measured_fpr, predicted_fpr, block_reads_per_op, store_bytes_per_op,
  device_bytes_per_op, writer_puts (readwhilewriting), range_deletes (fills, with
  --writes-per-range-tombstone), range_tombstone_checks, range_tombstone_files and
  gets_range_deleted (gets); null where a workload has none; with --statistics, tickers
  (gets: the store's counters under RocksDB's names, as db stats --json's).
--statistics prints after each get workload its counters as db_bench's --statistics does,
  one `NAME COUNT : N` line each (rocksdb.bloom.filter.useful, bloom_filter_useful@level1, ...;
  `NAME VALUE : X` for a rate or a model's figure).
ycsb-a to ycsb-f (YCSB's core workloads, --lookups operations each) print one line, a
percentiles line per operation kind (read, update, insert, scan, rmw) and the filters'
line per get; --miss-fraction F sends that fraction of their reads to absent keys.
--request-distribution hotspot sends 80% of the requests to the records whose keys are
the lowest 20% of the key space (one range of the keys' order; record numbers are hashed
into keys, so a range of them would spread over every file), its absent reads to keys
beside the drawn records'. --request-distribution sliding moves that range up the key
order by a tenth of the key space per --lookups requests, across the run's workloads.
With --io direct the line adds the device bytes per absent read, counted on the reading
thread. --use-existing-db --dir DIR runs the list on the store an earlier run kept in DIR
(list no fill). Their
--json objects: benchmark, distribution, miss_fraction, ops, micros_per_op, ops_per_sec,
  reads, found, scanned, records, by_op {KIND: {ops, p50_us, ..., p9999_us}}, gets,
  filter_checks, false_positives, measured_fpr, predicted_fpr, block_reads_per_get,
  block_reads_per_missing_get, device_bytes_per_missing_get (--io direct),
  store_bytes_per_get, device_bytes_per_op.
Every read workload adds a Storage line: read requests and bytes per op, the requests
its filters saved per get, and USD per million ops at --price-per-million-gets (JSON:
  read_requests, read_requests_per_op, read_request_bytes_per_op, requests_saved_per_get,
  usd_per_million_ops, price_per_million_gets, read_latency_ms_total).
--timeseries FILE.csv|FILE.json and --plot FILE.svg sample readwhilewriting every
--stats-interval-ms: t_s, reads, reads_per_sec, writer_puts_per_sec, p50_us, p99_us,
  measured_fpr, predicted_fpr, data_blocks_per_get, l0_files.

--workload prefix loads --keys keys of 16 per 8-byte prefix into two stores written alike
(the first --configs configuration's point filters): one without a prefix extractor (the
baseline), then one with a fixed:8 extractor and its prefix filters; on each it runs
--lookups prefix scans of absent prefixes (empty) and as many of present ones
(non-empty), and prints per phase the prefix-filter checks, negatives, false positives,
measured vs predicted FPR, data blocks read per scan (and of those, the ones holding
entries of the scan), requests (one per block read from disk) and bytes per scan, latency
percentiles, the same per level, and for the filtered store what it saved per scan against
the baseline (blocks, requests, bytes). With --json, one object per store: workload, keys,
  keys_per_prefix, prefix_len, prefix_filters, baseline, same_tree_as_baseline, config,
  distribution, io, shape, load_secs, empty and non_empty: {scans, keys_per_scan, data_blocks_per_scan,
  useful_data_blocks_per_scan, requests_per_scan, bytes_per_scan, device_bytes_per_scan,
  saved {data_blocks_per_scan, fraction_of_data_blocks, requests_per_scan, bytes_per_scan,
  device_bytes_per_scan} (null for the baseline), prefix_checks, prefix_negatives,
  prefix_false_positives, prefix_unusable_reads, measured_fpr, predicted_fpr, latency
  {p50_ns, p90_ns, p99_ns, p999_ns, mean_ns}, levels [{level, prefix_checks,
  prefix_negatives, prefix_false_positives, data_blocks, useful_data_blocks, measured_fpr,
  predicted_fpr}]}. With --csv, one line per store and phase (the columns of both studies:
  workload, filter, range_bits, range_len, phase, the per-scan figures, the savings).

--workload range loads --keys random keys (points: their first 8 bytes), written alike, into
one store without range filters (the baseline), then one per --range-bits value (default
16) with range filters at those bits per key (the first --configs configuration's point
filters), then for each --range-len L (default 1,16,256,4096,65536) runs --lookups scans of
L points bounded at both ends: an --empty-fraction of them (default 0.5) over empty ranges
starting at random points, or with --correlated one point past a key's, the rest around a
key's point. It prints per phase the range-filter checks, negatives, false positives,
measured vs predicted FPR (L / 2^(B-2) per file), data blocks, useful blocks, requests and
bytes per scan, latency percentiles, the same per level, what each filtered store saved
against the baseline, and a table of every store's phases. With --json, one object per
store, the baseline first: workload, keys, range_bits (null for the baseline), baseline,
  same_tree_as_baseline, config, io, empty_fraction, correlated, distribution, shape,
  load_secs, lengths
  [{range_len, empty and non_empty: {the prefix study's phase fields, with range_checks,
  range_negatives, range_false_positives, range_unusable_reads} (null for a phase of no
  scans)}]. With --csv, one line per store, length and phase.
Both studies take --request-distribution uniform (the default), hotspot (80% of the scans
start in, or ask for prefixes in, the lowest 20% of the key space) or sliding (that window
moves up the key order by a tenth of it per --lookups scans, across a store's phases; every
store sees the same windows).
",
    exit_status!()
);

/// `bloomlsm stress`.
pub const STRESS: &str = concat!(
    "Examples:
  bloomlsm stress                                 100,000 operations, 4 threads, seed 42
  bloomlsm stress --duration 10m --seed 7         ten minutes; the same seed draws the same options
  bloomlsm stress --ops 20000 --threads 8 --keys 1000 --keyspaces 2
  bloomlsm stress --kill --duration 1h            SIGKILL a stress child every 1 to 5 s, for an hour
  bloomlsm stress --kill --rounds 50 --kill-min 200ms --kill-max 2s --whitebox 200
  bloomlsm stress --dir /var/tmp/s --keep         keep the store and its expected state

Worker threads choose operations at random by weight: put, delete, delete_range, batch
(puts, deletes and range deletes across keyspaces, sometimes synced), ingest, get,
multi_get, scan, scan_backward, scan_both_ends, prefix_scan, seek, snapshot_read, flush,
compact, maintain, rebuild_filters, checkpoint, keyspace_create_drop (of a scratch
keyspace) and reopen (every thread paused; the store closed, opened and checked whole).
Keys are guarded by striped locks: a writer records the key's pending version in the
expected state, writes, then records the new version; a reader compares every answer
with the expected state exactly. Values name their keyspace, key and version, and every
byte of them follows from those, so a wrong key, a stale version or a damaged value is
caught. The expected state is a file in the run's directory, written with positioned
writes before and after each write, so it outlives a SIGKILL.

The options (filter family and bits per level, Monkey or workload-aware allocation,
prefix extractor, range filters, compression, buffer, table, block and cache sizes,
background compaction, sync mode) are drawn from --seed and printed first; each
keyspace gets a design of its own. A run is reproducible in its choices given the seed,
not in the interleaving of its threads.

--kill runs the stress in a child process, SIGKILLs it after a random time between
--kill-min and --kill-max, then reopens the store and checks every key of every keyspace
(a key whose write was in flight may read as before or after it) and every table, and
starts the next child, until --duration (60 s without it or --rounds) or --rounds kills.
Writes are synced only when the drawn options or a batch's own draw say so: the
write-ahead log hands every acknowledged write to the OS, which keeps it across a
process kill. --whitebox N also
has children kill themselves at about 1 in N crash points (right after a flush,
compaction, ingest or checkpoint returns; between a batch's expected state and its
write). Children report their counts every 100 ms; the last 100 ms before a kill are not
counted.

The last line of a run is `seed S: 0 mismatches`. A mismatch prints the operation, the
keyspace and key, the version expected and the one found, with the seed, and keeps the
run's directory (exit status 1).
",
    exit_status!()
);

/// `bloomlsm sst dump`.
pub const SST_DUMP: &str = concat!(
    "Examples:
  bloomlsm sst dump /tmp/s/000005.sst
  bloomlsm sst dump /tmp/s/000005.sst --entries --limit 10
  bloomlsm sst dump /tmp/s/000005.sst --json | jq .filter.predicted_fpr
",
    key_forms!(),
    "
JSON (--json): one object:
  file, file_bytes, footer_format_version, properties_format_version, checksum,
  key_format (\"plain\" or \"internal\"), entries, deletions (null if not recorded),
  raw_key_bytes, raw_value_bytes, data_blocks, data_bytes (as stored, with trailers),
  data_raw_bytes (before compression, with trailers), compression (\"none\", \"lz4\",
  \"zstd:LEVEL\"), compression_ratio (data_raw_bytes / data_bytes; null without data
  blocks), compressed_blocks (data blocks stored compressed), index_bytes,
  index_memory_bytes, index_partitions (0: an index of one block),
  filter      null if none; {policy, usable, reason (null if usable), bits_per_key_requested,
              probes, keys, memory_bytes, bits_per_key, predicted_fpr, offset, size}
  smallest_key, largest_key   null for an empty table; {key} for plain keys,
              {key, seq, kind (\"put\" or \"del\")} for internal keys
  created (unix seconds), created_utc (\"YYYY-MM-DDTHH:MM:SSZ\")
  blocks      with --blocks: [{offset, size (as stored), type (\"none\", \"lz4\", \"zstd\"),
              raw_size (before compression), last_key}]
  records     with --entries: [{key, seq, kind, value}] (seq and kind for internal keys)
",
    exit_status!()
);

/// `bloomlsm sst verify`.
pub const SST_VERIFY: &str = concat!(
    "Examples:
  bloomlsm sst verify /tmp/s/*.sst
  bloomlsm sst verify /tmp/s/*.sst --json

JSON (--json): one object:
  ok       true if every file passed
  files    [{file, ok, entries, data_blocks, error}]: error is null if ok, else the
           first failure (entries and data_blocks null if the file did not open)
",
    exit_status!()
);

/// `bloomlsm sst filter-test`.
pub const SST_FILTER_TEST: &str = concat!(
    "Examples:
  bloomlsm sst filter-test /tmp/s/000005.sst
  bloomlsm sst filter-test /tmp/s/000005.sst --probes 100000 --seed 7 --json

JSON (--json): one object:
  file, filter (the object of `sst dump --json`), probes, key_len, seed,
  skipped (random keys that were in the table), false_positives,
  measured_fpr, measured_fpr_low95, measured_fpr_high95 (Wilson 95% interval),
  predicted_fpr; rates are fractions, not percent
",
    exit_status!()
);

/// `bloomlsm db put`.
pub const DB_PUT: &str = concat!(
    "Examples:
  bloomlsm db put /tmp/s apple red
  bloomlsm db put /tmp/s 'tab\\there' 'line\\nbreak'
  bloomlsm db put /tmp/s --hex 6b6579 00ff
  bloomlsm db put /tmp/s photo --value-file photo.jpg
  printf 'big value' | bloomlsm db put /tmp/s key -
  bloomlsm db put /tmp/new k v --filter bloom:12      (a new store filtered by bloom)
A value of - reads stdin; --value-file reads a file. Both are taken byte for byte
(no escapes, no hex, a trailing newline kept). A literal - value is \\x2d.
",
    new_store!(),
    key_forms!(),
    wal_warning!(),
    exit_status!()
);

/// `bloomlsm db get`.
pub const DB_GET: &str = concat!(
    "Examples:
  bloomlsm db get /tmp/s apple
  bloomlsm db get /tmp/s photo --raw > photo.jpg
  bloomlsm db get /tmp/s apple --json
",
    key_forms!(),
    "
JSON (--json): one object: {\"key\": KEY, \"found\": true, \"value\": VALUE}; for an absent key
  found is false, value null, and the exit status 1. KEY and VALUE are in the form above.
",
    read_only!(),
    wal_warning!(),
    exit_status!()
);

/// `bloomlsm db delete`.
pub const DB_DELETE: &str = concat!(
    "Examples:
  bloomlsm db delete /tmp/s apple
  bloomlsm db delete /tmp/s --hex 00ff
",
    key_forms!(),
    wal_warning!(),
    exit_status!()
);

/// `bloomlsm db delete-range`.
pub const DB_DELETE_RANGE: &str = concat!(
    "Examples:
  bloomlsm db delete-range /tmp/s user:100 user:200   removes user:100 up to, not including, user:200
  bloomlsm db delete-range /tmp/s --hex 00 0100
",
    key_forms!(),
    "
START must sort below END (bytewise); an empty or inverted range is a usage error
  (exit status 2) and writes nothing.
",
    wal_warning!(),
    exit_status!()
);

/// `bloomlsm db scan`.
pub const DB_SCAN: &str = concat!(
    "Examples:
  bloomlsm db scan /tmp/s
  bloomlsm db scan /tmp/s --from b --to c --keys-only
  bloomlsm db scan /tmp/s --limit 100 --json
  bloomlsm db scan /tmp/s --prefix user: --reverse --limit 10   the last 10 keys starting with user:
  bloomlsm db scan /tmp/a > dump.tsv && bloomlsm db load /tmp/b dump.tsv
",
    key_forms!(),
    "
JSON (--json): one object per entry per line: {\"key\": KEY, \"value\": VALUE}, or {\"key\": KEY}
  with --keys-only.
--from and --to are keys, so not empty; an empty --prefix is every key.
",
    read_only!(),
    wal_warning!(),
    exit_status!()
);

/// `bloomlsm db load`.
pub const DB_LOAD: &str = concat!(
    "Examples:
  bloomlsm db load /tmp/s keys.tsv
  bloomlsm db scan /tmp/a | bloomlsm db load /tmp/b -
  bloomlsm db load /tmp/s users.tsv --keyspace users
  seq 1 20000 | awk '{printf \"k%05d\\tv%d\\n\", $1, $1}' > keys.tsv   (a file to try)
Each line is `KEY<TAB>VALUE`, or a bare KEY (empty value); empty lines are skipped.
The whole input is checked before anything is written: a bad line fails the load
with `FILE:LINE: what` (exit status 3) and the store is left as it was. The records
are then written as tables that the store takes in with one MANIFEST edit: a load
that fails, or is interrupted or killed at any moment, leaves none of them; other
writers wait until it is done.
With --keyspace NAME the records go into that keyspace, which must exist: a load does
not create one, since a keyspace's design is set when it is made (db keyspaces DIR
--create NAME with the design flags), and a mistyped name is refused (exit status 2)
with nothing written. The store must exist too.
",
    new_store!(),
    key_forms!(),
    wal_warning!(),
    exit_status!()
);

/// `bloomlsm db stats`.
pub const DB_STATS: &str = concat!(
    "Examples:
  bloomlsm db stats /tmp/s
  bloomlsm db stats /tmp/s --probe 100000 --files
  bloomlsm db stats /tmp/s --filter-budget 256K --probe 100000 --files
  bloomlsm db stats /tmp/s --json | jq '.levels[] | {level, keys}'

JSON (--json): one object:
  store    the directory
  levels   one object per non-empty level: level, files, keys, bytes, filter_policy,
           filter_bytes, filter_bits_per_key, predicted_fpr (the level's model, by
           keys), predicted_fpr_of_checks (the model weighted by the checks made, as
           observed_fpr is; null without checks), filter_checks, filter_negatives,
           false_positives, observed_fpr (null before any probe), block_reads, cache_hits
  total    the same fields over all levels (level, filter_policy, predicted_fpr null)
  memory   {filter_bytes, filter_pinned_bytes (in memory), filter_budget (null without
           --filter-budget), index_bytes, memtable_bytes}
  probe    null without --probe; else {lookups, seed, found,
           block_reads_per_missing_get, predicted_block_reads_per_missing_get}
  files    with --files: [{file, level, bytes, keys, compression, data_bytes,
           data_raw_bytes, filter, filter_usable, filter_in_memory, filter_partitions,
           probe_chance, bits_per_key, predicted_fpr, filter_checks, false_positives}]
  wal      {tail_bytes_dropped, records_salvaged}: what the open dropped of the
           write-ahead logs (also a warning line on stderr when not zero)
  tickers  the counters under RocksDB's names, name: value (Stats::tickers):
           rocksdb.bloom.filter.useful (= the filter_negatives of total),
           rocksdb.bloom.filter.full.positive, ...full.true.positive, per level
           bloom_filter_useful@levelN, ..., and bloomlsm.filter.fpr.predicted@levelN
           beside bloomlsm.filter.fpr.measured@levelN (docs/benchmarks.md,
           \"RocksDB's ticker names\", lists them all)
  filters_paying  whether each level's filters pay for their memory: {unpaid_after_checks
           (1000), levels [{level, filter_bytes, filter_checks, reads_saved (the checks a
           filter answered \"absent\"), reads_saved_per_mib, unpaid (at least
           unpaid_after_checks checks and no read saved; the text flags such a level in
           one line)}]}
Rates are fractions, not percent.
",
    read_only!(),
    exit_status!()
);

/// `bloomlsm db verify`.
pub const DB_VERIFY: &str = concat!(
    "Examples:
  bloomlsm db verify /tmp/s
  bloomlsm db verify /tmp/s --json

Every block of every table is read and checked, and the write-ahead logs are replayed
as any open replays them. The check fails (exit status 1) on a bad block or file, and
also when the open drops the end of a write-ahead log (a write torn by a crash, or a
damaged record: the writes in it are not in the store; a writing command drops them
for good, keeping a copy of the log in DIR/lost/): the error names the bytes dropped
and where the first dropped end starts. Beside a writer in the middle of an append,
its unfinished record looks the same: check again once it is done.

JSON (--json): one object: {\"store\": DIR, \"ok\": true, \"files\": N, \"entries\": N, \"bytes\": N,
  \"wal_tail_bytes_dropped\": N, \"wal_records_salvaged\": N, \"error\": null}; on a failed
  check ok is false, error the first failure, and the exit status 1; the counts are
  null if the store did not open or a block was bad.
",
    read_only!(),
    exit_status!()
);

/// `bloomlsm db checkpoints`.
pub const DB_CHECKPOINTS: &str = concat!(
    "Examples:
  bloomlsm db checkpoints s3://my-bucket/stores/orders/
  bloomlsm db checkpoints s3://my-bucket/stores/orders/ --delete nightly --json

Lists the checkpoints kept beside a store in a bucket (db checkpoint --name), one per
line: its name, the sequence number of the newest write it holds, its tables and when it
was made; with --delete NAME, after deleting that one. The tables only a deleted
checkpoint kept are deleted by the store's writer when it next opens.

JSON (--json): one object per checkpoint: {\"name\": NAME, \"sequence\": N, \"tables\":
  N, \"created_unix_ms\": N}.
",
    exit_status!()
);

pub const DB_CHECKPOINT: &str = concat!(
    "Examples:
  bloomlsm db checkpoint /tmp/s /backup/s-monday
  bloomlsm db checkpoint /tmp/s /backup/s-monday --json
  bloomlsm db checkpoint s3://my-bucket/stores/orders/ --name nightly
  bloomlsm db checkpoint s3://my-bucket/stores/orders/ /restore/orders
  bloomlsm db checkpoint /restore/orders s3://my-bucket/stores/orders-copy/
  bloomlsm db checkpoint 's3://my-bucket/stores/orders/?checkpoint=nightly' s3://my-bucket/test/orders/

Makes TARGET a copy of the store as of now, which opens as a store of its own: the
memtable is flushed, then each table gets a hard link in TARGET (a copy where links are
refused, e.g. TARGET on another file system), with a new MANIFEST, CURRENT and OPTIONS.
When another process has the store open for writing, the checkpoint is made from its
files instead, beside that writer: the tables get hard links and the write-ahead logs the
store still replays are copied up to their last whole record, so TARGET holds every
write acknowledged before the command and none half; a copy during which the writer
replaced a file (a flush or compaction) is made again.
The copy is made in TARGET.checkpoint-tmp and renamed to TARGET when whole: after a
crash TARGET is whole or absent, and the next checkpoint into TARGET removes the
leftover TARGET.checkpoint-tmp (which no command opens as a store). TARGET must not
exist, its parent must, and it must lie outside the store's directory.

A store kept wholly in a bucket (s3://BUCKET/PREFIX, read beside its writer, which goes
on): --name NAME keeps the checkpoint beside the store, as one object naming its tables
(none is copied; the writer keeps them until the checkpoint is deleted: db checkpoints
--delete); it opens as s3://BUCKET/PREFIX?checkpoint=NAME with every reading command.
TARGET instead copies the store (or s3://...?checkpoint=NAME) into a local directory, its
tables downloaded: a local store of its own. A local store copied to s3://BUCKET/PREFIX
(an empty prefix) becomes a store kept wholly there: tables uploaded, then its small
files, CURRENT last. s3://BUCKET/PREFIX?checkpoint=NAME copied to s3://BUCKET/OTHER makes a
clone: a store of its own under OTHER that reads the checkpoint's tables where they are
(none copied; keep the checkpoint while the clone names them) and never deletes them.

JSON (--json): one object: {\"store\": DIR, \"checkpoint\": TARGET, \"tables\": N,
  \"linked\": N, \"copied\": N, \"bytes\": N, \"bytes_copied\": N, \"sequence\": N}: the
  tables linked and copied, and the sequence number of the newest write it holds.
",
    wal_warning!(),
    exit_status!()
);

/// `bloomlsm db keyspaces`.
pub const DB_KEYSPACES: &str = concat!(
    "Examples:
  bloomlsm db keyspaces /tmp/s
  bloomlsm db keyspaces /tmp/s --create users --filter ribbon:8 --compression lz4
  bloomlsm db keyspaces /tmp/s --drop users
  bloomlsm db put /tmp/s u1 ann --keyspace users

Prints the store's keyspaces, one name a line, \"default\" first. A keyspace is a key
space of its own in the store, with its own filter and compression design (the flags
given to --create, kept in its directory's OPTIONS file); put, get, delete,
delete-range, scan, load, stats and compact act on the one --keyspace names (the
default keyspace without it), which must exist. --create and --drop open the store for writing; a drop deletes
the keyspace's files.

JSON (--json): one object: {\"keyspaces\": [NAME, ...]}.
",
    wal_warning!(),
    exit_status!()
);

/// `bloomlsm db compact`.
pub const DB_ADVISE: &str = concat!(
    "Examples:
  bloomlsm db advise /tmp/s
  bloomlsm db advise /tmp/s --apply --rebuild
  bloomlsm db advise /tmp/s --reset
  bloomlsm db advise /tmp/s --json | jq '.designs[] | {name, reads_per_get}'
  bloomlsm db advise /tmp/s --keyspace users --apply --rebuild
  bloomlsm db advise /tmp/s --keyspaces --apply --rebuild

The store counts its lookups across opens (its LOOKUPS file: a writing process adds
its own after each flush and at close; a read-only one adds nothing). For those
gets, per level, the probes of files that did not hold the key cost
probes x FPR(bits) data-block reads under a design; the advisor costs the present
design, the same memory spent uniformly, Monkey's allocation, the allocation best
for the probes counted (observed), and no filter on the last level. L0 keeps its
present bits. The recommendation is the design with the fewest reads per get at no
more memory, if it saves at least 2% of the present wasted reads (docs/filters.md,
\"The advisor\").

--apply writes it as the store's filter design (OPTIONS, the change logged there);
files written from then on follow it, and --rebuild rewrites now the filters whose
bits it changes. --apply and --reset take the store's lock: refused while a writer
holds it. With --keyspace, all of it acts on that keyspace (--reset restarts the
whole store's history, so it takes no --keyspace).

--keyspaces: one filter memory budget across the keyspaces. The memory the filters
of every keyspace that counted gets hold now is shared out over all their levels by
the probes counted (a keyspace with no gets keeps its design, outside the pool); the
table gives each keyspace's wasted reads per get under its present design, under its
best design alone (observed) and under its share. --apply writes each share as its
keyspace's design when sharing saves at least 2% (docs/filters.md, \"One budget
across keyspaces\").

JSON (--json): one object:
  store, gets, gets_found, since_unix_secs (when the counting began),
  history_restarted (null, or why LOOKUPS could not be read), filter_kind,
  levels   [{level, keys, absent_probes}]
  designs  [{name, memory_bytes, bits_per_key (one per level of levels),
           wasted_reads_per_get, reads_per_get}], the present design first
  recommended  a design's name; applied (bool), rebuilt_files (null without --rebuild)
  With --keyspaces: store, gets, memory_bytes, shared_memory_bytes,
  wasted_reads_per_get {present, alone, shared}, keyspaces [{name, gets, levels,
  level_keys, absent_probes, memory_bytes, shared_memory_bytes, bits_per_key,
  shared_bits_per_key, wasted_reads_per_get}], left_alone [{name, why}], applied,
  rebuilt_files.
Exit status 1 when there is nothing to advise on: no gets counted, or no level holds
a filtered key.
",
    exit_status!()
);

pub const DB_COMPACT: &str = concat!(
    "Examples:
  bloomlsm db compact /tmp/s
  bloomlsm db compact /tmp/s --filter fpr:0.001 --level-filter 0=blocked512:8
  bloomlsm db compact /tmp/s --compression lz4 --level-compression 6=zstd:9
The writing commands (put, delete, load, compact) keep the filter and compression
design the store records (its OPTIONS file) unless given --filter, --level-filter,
--monkey, --no-last-level-filter, --compression or --level-compression: those change
it for every file written from then on (the change is logged in OPTIONS); files
already written keep their own filters and compression until rewritten.
",
    wal_warning!(),
    exit_status!()
);
