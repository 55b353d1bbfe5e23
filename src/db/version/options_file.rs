//! The `OPTIONS` file: the design of the files a store writes — the filter and
//! compression of each level, block size, checksum, file and level sizes — so that a store
//! keeps its design across opens (RocksDB's `OPTIONS-NNNNNN`), and a history
//! of every change to it.
//!
//! A text file, one `key = value` per line, `#` lines are comments, ending in
//! a checksum line (docs/format.md §15):
//!
//! ```text
//! # bloomlsm OPTIONS: the design of the files this store writes
//! version = 1
//! filter = blocked512:10:6
//! filter.level.3 = none
//! filter.skip_last_level = false
//! filter.monkey_avg_bits_per_key = none
//! prefix_extractor = fixed:4
//! range_filter_bits_per_key = 16
//! compression = lz4
//! compression.level.0 = none
//! block_size = 4096
//! checksum = crc32
//! target_file_size = 2097152
//! level1_max_bytes = 10485760
//! level_size_multiplier = 10
//! max_levels = 7
//! dynamic_level_bytes = false
//! history = 1795335304 created
//! crc32 = 5d0c4e1a
//! ```
//!
//! A store whose tables are kept elsewhere (a bucket, [`TableLocation`])
//! records where, before its history:
//!
//! ```text
//! tables.bucket = my-bucket
//! tables.prefix = stores/a/
//! tables.endpoint = http://127.0.0.1:9000
//! tables.cache_dir = /var/cache/app/db
//! tables.cache_bytes = 1073741824
//! tables.chunk_bytes = 1048576
//! ```
//!
//! It is replaced atomically: `OPTIONS.tmp` is written and fsynced, renamed
//! over `OPTIONS`, and the directory fsynced.

use std::path::Path;

use crate::db::filename::{options_file, options_tmp_file, sync_dir_in};
use crate::error::{Error, Result};
use crate::filter::{PrefixExtractor, filter_spec, parse_filter_spec, unregistered_family};
use crate::fs::{FileSystem, TableLocation};
use crate::options::{ChecksumType, Compression, CompressionOptions, FilterOptions, Options};

/// The format version written.
pub const VERSION: u32 = 1;

/// History lines kept (the oldest are dropped).
const MAX_HISTORY: usize = 100;

/// The options that shape a store's files.
#[derive(Clone, Debug, PartialEq)]
pub struct Design {
    /// [`Options::filters`].
    pub filters: FilterOptions,
    /// [`Options::filter_partition_bytes`].
    pub filter_partition_bytes: usize,
    /// [`Options::index_partition_bytes`].
    pub index_partition_bytes: usize,
    /// [`Options::prefix_extractor`].
    pub prefix_extractor: Option<PrefixExtractor>,
    /// [`Options::range_filter_bits_per_key`].
    pub range_filter_bits_per_key: Option<f64>,
    /// [`Options::compression`].
    pub compression: CompressionOptions,
    /// [`Options::block_size`].
    pub block_size: usize,
    /// [`Options::checksum`].
    pub checksum: ChecksumType,
    /// [`Options::target_file_size`].
    pub target_file_size: u64,
    /// [`Options::level1_max_bytes`].
    pub level1_max_bytes: u64,
    /// [`Options::level_size_multiplier`].
    pub level_size_multiplier: u64,
    /// [`Options::max_levels`].
    pub max_levels: usize,
    /// [`Options::dynamic_level_bytes`].
    pub dynamic_level_bytes: bool,
}

impl Design {
    /// The design part of `opts`.
    pub fn of(opts: &Options) -> Design {
        Design {
            filters: opts.filters.clone(),
            filter_partition_bytes: opts.filter_partition_bytes,
            index_partition_bytes: opts.index_partition_bytes,
            prefix_extractor: opts.prefix_extractor,
            range_filter_bits_per_key: opts.range_filter_bits_per_key,
            compression: opts.compression.clone(),
            block_size: opts.block_size,
            checksum: opts.checksum,
            target_file_size: opts.target_file_size,
            level1_max_bytes: opts.level1_max_bytes,
            level_size_multiplier: opts.level_size_multiplier,
            max_levels: opts.max_levels,
            dynamic_level_bytes: opts.dynamic_level_bytes,
        }
    }

    /// Sets the design part of `opts` to this.
    pub fn apply(&self, opts: &mut Options) {
        opts.filters = self.filters.clone();
        opts.filter_partition_bytes = self.filter_partition_bytes;
        opts.index_partition_bytes = self.index_partition_bytes;
        opts.prefix_extractor = self.prefix_extractor;
        opts.range_filter_bits_per_key = self.range_filter_bits_per_key;
        opts.compression = self.compression.clone();
        opts.block_size = self.block_size;
        opts.checksum = self.checksum;
        opts.target_file_size = self.target_file_size;
        opts.level1_max_bytes = self.level1_max_bytes;
        opts.level_size_multiplier = self.level_size_multiplier;
        opts.max_levels = self.max_levels;
        opts.dynamic_level_bytes = self.dynamic_level_bytes;
    }

    /// `(key, value)` lines, in file order.
    fn lines(&self) -> Vec<(String, String)> {
        let f = &self.filters;
        let mut v = vec![("filter".to_string(), filter_spec(f.policy.as_ref()))];
        for (level, p) in &f.per_level {
            v.push((format!("filter.level.{level}"), filter_spec(p.as_ref())));
        }
        v.push((
            "filter.skip_last_level".into(),
            f.skip_last_level.to_string(),
        ));
        v.push((
            "filter.monkey_avg_bits_per_key".into(),
            f.monkey_avg_bits_per_key
                .map_or("none".to_string(), |b| b.to_string()),
        ));
        // Only when set: a build from before the workload-aware allocation
        // reads the OPTIONS of a store that does not use it (and refuses,
        // as an unknown key, the design of one that does).
        if let Some(b) = f.workload_avg_bits_per_key {
            v.push(("filter.workload_avg_bits_per_key".into(), b.to_string()));
        }
        // Only when set: a build from before partitioned filters reads the
        // OPTIONS of a store that does not use them.
        if self.filter_partition_bytes != 0 {
            v.push((
                "filter.partition_bytes".into(),
                self.filter_partition_bytes.to_string(),
            ));
        }
        // Only when set, as above: a build from before partitioned indexes
        // reads the OPTIONS of a store that does not use them.
        if self.index_partition_bytes != 0 {
            v.push((
                "index.partition_bytes".into(),
                self.index_partition_bytes.to_string(),
            ));
        }
        // Only when set, as above.
        if let Some(e) = &self.prefix_extractor {
            v.push(("prefix_extractor".into(), e.to_string()));
        }
        if let Some(b) = self.range_filter_bits_per_key {
            v.push(("range_filter_bits_per_key".into(), b.to_string()));
        }
        let c = &self.compression;
        v.push(("compression".into(), c.default.to_string()));
        for (level, x) in &c.per_level {
            v.push((format!("compression.level.{level}"), x.to_string()));
        }
        v.push(("block_size".into(), self.block_size.to_string()));
        v.push(("checksum".into(), self.checksum.name().to_string()));
        v.push(("target_file_size".into(), self.target_file_size.to_string()));
        v.push(("level1_max_bytes".into(), self.level1_max_bytes.to_string()));
        v.push((
            "level_size_multiplier".into(),
            self.level_size_multiplier.to_string(),
        ));
        v.push(("max_levels".into(), self.max_levels.to_string()));
        v.push((
            "dynamic_level_bytes".into(),
            self.dynamic_level_bytes.to_string(),
        ));
        v
    }

    /// What differs from `self` to `to`, one `key: old -> new` per setting.
    pub fn changes(&self, to: &Design) -> Vec<String> {
        let (a, b) = (self.lines(), to.lines());
        let mut out = Vec::new();
        for (k, v) in &b {
            match a.iter().find(|(ka, _)| ka == k) {
                Some((_, va)) if va == v => {}
                Some((_, va)) => out.push(format!("{k}: {va} -> {v}")),
                None => out.push(format!("{k}: (unset) -> {v}")),
            }
        }
        for (k, v) in &a {
            if !b.iter().any(|(kb, _)| kb == k) {
                out.push(format!("{k}: {v} -> (unset)"));
            }
        }
        out
    }
}

/// A keyspace's memtable size and L0 triggers, as given to
/// `Db::create_keyspace`: kept in its `OPTIONS` file (`keyspace.*` lines),
/// they apply at every open. `None`: not recorded (a store's own file, or a
/// keyspace's written before they were recorded), the options the store
/// is opened with apply.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tuning {
    /// [`Options::write_buffer_size`].
    pub write_buffer_size: Option<usize>,
    /// [`Options::l0_compaction_trigger`].
    pub l0_compaction_trigger: Option<usize>,
    /// [`Options::l0_slowdown_trigger`].
    pub l0_slowdown_trigger: Option<usize>,
    /// [`Options::l0_stop_trigger`].
    pub l0_stop_trigger: Option<usize>,
}

impl Tuning {
    /// Every setting of `opts` a keyspace keeps.
    pub fn of(opts: &Options) -> Tuning {
        Tuning {
            write_buffer_size: Some(opts.write_buffer_size),
            l0_compaction_trigger: Some(opts.l0_compaction_trigger),
            l0_slowdown_trigger: Some(opts.l0_slowdown_trigger),
            l0_stop_trigger: Some(opts.l0_stop_trigger),
        }
    }

    /// Sets the recorded settings in `opts`.
    pub fn apply(&self, opts: &mut Options) {
        let set = |to: &mut usize, v: Option<usize>| {
            if let Some(v) = v {
                *to = v;
            }
        };
        set(&mut opts.write_buffer_size, self.write_buffer_size);
        set(&mut opts.l0_compaction_trigger, self.l0_compaction_trigger);
        set(&mut opts.l0_slowdown_trigger, self.l0_slowdown_trigger);
        set(&mut opts.l0_stop_trigger, self.l0_stop_trigger);
    }

    /// `(key, value)` lines of the recorded settings, in file order.
    fn lines(&self) -> Vec<(&'static str, usize)> {
        [
            ("keyspace.write_buffer_size", self.write_buffer_size),
            ("keyspace.l0_compaction_trigger", self.l0_compaction_trigger),
            ("keyspace.l0_slowdown_trigger", self.l0_slowdown_trigger),
            ("keyspace.l0_stop_trigger", self.l0_stop_trigger),
        ]
        .into_iter()
        .filter_map(|(k, v)| v.map(|v| (k, v)))
        .collect()
    }
}

/// An `OPTIONS` file's contents.
#[derive(Clone, Debug, PartialEq)]
pub struct OptionsFile {
    /// The design new files follow.
    pub design: Design,
    /// A keyspace's own memtable size and L0 triggers.
    pub tuning: Tuning,
    /// Where the store's tables are kept, if not beside this file: what
    /// [`FileSystem::table_location`] said of the store's directory when
    /// the store recorded its design.
    pub tables: Option<TableLocation>,
    /// Changes to the design, oldest first: `<unix seconds> <what>`.
    pub history: Vec<String>,
    /// Filter families the design names that this process has not
    /// registered (their places in `design` read as no filter). Not
    /// written: a store whose design names one opens only with
    /// `use_stored_design` off, or once the family is registered.
    pub unknown_families: Vec<String>,
}

impl OptionsFile {
    /// The file's bytes.
    pub fn encode(&self) -> Vec<u8> {
        let mut s = String::from("# bloomlsm OPTIONS: the design of the files this store writes\n");
        s.push_str(&format!("version = {VERSION}\n"));
        for (k, v) in self.design.lines() {
            s.push_str(&format!("{k} = {v}\n"));
        }
        for (k, v) in self.tuning.lines() {
            s.push_str(&format!("{k} = {v}\n"));
        }
        if let Some(t) = &self.tables {
            for (k, v) in location_lines(t) {
                s.push_str(&format!("{k} = {v}\n"));
            }
        }
        let skip = self.history.len().saturating_sub(MAX_HISTORY);
        for h in &self.history[skip..] {
            s.push_str(&format!("history = {}\n", h.replace('\n', " ")));
        }
        seal(&mut s);
        s.into_bytes()
    }

    /// Parses and checks a file read from `path` (for error reports). Any
    /// damage, unknown key or value out of range is [`Error::Corruption`]
    /// with the offset of the line at fault.
    pub fn decode(bytes: &[u8], path: &Path) -> Result<OptionsFile> {
        let bad = |at: usize, what: String| Error::corruption(path, at as u64, what);
        let text = unsealed(bytes, path, "OPTIONS")?;

        let mut opts = Options::default();
        opts.filters.per_level.clear();
        // A store recorded before compression existed wrote its files raw.
        opts.compression = CompressionOptions::none();
        // A store recorded before dynamic level sizing existed sized its
        // levels from L1 down, whatever the default is now.
        opts.dynamic_level_bytes = false;
        let mut seen: Vec<String> = Vec::new();
        let mut history = Vec::new();
        let mut unknown_families = Vec::new();
        let mut tuning = Tuning::default();
        let mut tables = LocationLines::default();
        let mut version = None;
        let mut at = 0;
        for line in text.split_inclusive('\n') {
            let here = at;
            at += line.len();
            let line = line.trim_end_matches('\n');
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let err = |what: String| bad(here, what);
            let (k, v) = line
                .split_once(" = ")
                .ok_or_else(|| err(format!("not `key = value`: {line:?}")))?;
            if k == "history" {
                history.push(v.to_string());
                continue;
            }
            if seen.iter().any(|s| s == k) {
                return Err(err(format!("{k} is set twice")));
            }
            seen.push(k.to_string());
            let num = |v: &str| -> Result<u64> {
                v.parse()
                    .map_err(|_| err(format!("{k}: {v:?} is not a whole number")))
            };
            let flag = |v: &str| -> Result<bool> {
                v.parse()
                    .map_err(|_| err(format!("{k}: {v:?} is not true or false")))
            };
            if let Some(field) = k.strip_prefix("tables.") {
                tables.set(field, v, here).map_err(err)?;
                continue;
            }
            let f = &mut opts.filters;
            match k {
                "version" => version = Some(num(v)?),
                "filter" => match unregistered_family(v) {
                    Some(name) => {
                        unknown_families.push(name.to_string());
                        f.policy = None;
                    }
                    None => f.policy = parse_filter_spec(v).map_err(&err)?,
                },
                "filter.skip_last_level" => f.skip_last_level = flag(v)?,
                "filter.monkey_avg_bits_per_key" => {
                    f.monkey_avg_bits_per_key = match v {
                        "none" => None,
                        _ => Some(
                            v.parse::<f64>()
                                .ok()
                                .filter(|b| b.is_finite() && *b > 0.0)
                                .ok_or_else(|| err(format!("{k}: {v:?} is not bits per key")))?,
                        ),
                    }
                }
                "filter.workload_avg_bits_per_key" => {
                    f.workload_avg_bits_per_key = Some(
                        v.parse::<f64>()
                            .ok()
                            .filter(|b| b.is_finite() && *b > 0.0)
                            .ok_or_else(|| err(format!("{k}: {v:?} is not bits per key")))?,
                    )
                }
                "compression" => opts.compression.default = Compression::parse(v).map_err(&err)?,
                "block_size" => opts.block_size = num(v)? as usize,
                "keyspace.write_buffer_size" => tuning.write_buffer_size = Some(num(v)? as usize),
                "keyspace.l0_compaction_trigger" => {
                    tuning.l0_compaction_trigger = Some(num(v)? as usize)
                }
                "keyspace.l0_slowdown_trigger" => {
                    tuning.l0_slowdown_trigger = Some(num(v)? as usize)
                }
                "keyspace.l0_stop_trigger" => tuning.l0_stop_trigger = Some(num(v)? as usize),
                "filter.partition_bytes" => opts.filter_partition_bytes = num(v)? as usize,
                "index.partition_bytes" => opts.index_partition_bytes = num(v)? as usize,
                "prefix_extractor" => {
                    opts.prefix_extractor =
                        Some(PrefixExtractor::parse(v).map_err(|e| err(e.to_string()))?)
                }
                "range_filter_bits_per_key" => {
                    opts.range_filter_bits_per_key = Some(
                        v.parse::<f64>()
                            .ok()
                            .filter(|b| b.is_finite())
                            .ok_or_else(|| err(format!("{k}: {v:?} is not bits per key")))?,
                    )
                }
                "checksum" => {
                    opts.checksum = [ChecksumType::Crc32, ChecksumType::Xxh3]
                        .into_iter()
                        .find(|c| c.name() == v)
                        .ok_or_else(|| err(format!("unknown checksum {v:?}")))?
                }
                "target_file_size" => opts.target_file_size = num(v)?,
                "level1_max_bytes" => opts.level1_max_bytes = num(v)?,
                "level_size_multiplier" => opts.level_size_multiplier = num(v)?,
                "max_levels" => opts.max_levels = num(v)? as usize,
                "dynamic_level_bytes" => opts.dynamic_level_bytes = flag(v)?,
                _ => {
                    let level = |prefix: &str| match k.strip_prefix(prefix).map(str::parse) {
                        Some(Ok(l)) if l < 64 => Some(l),
                        _ => None,
                    };
                    if let Some(l) = level("filter.level.") {
                        match unregistered_family(v) {
                            Some(name) => {
                                unknown_families.push(name.to_string());
                                f.per_level.push((l, None));
                            }
                            None => f.per_level.push((l, parse_filter_spec(v).map_err(&err)?)),
                        }
                    } else if let Some(l) = level("compression.level.") {
                        let c = Compression::parse(v).map_err(&err)?;
                        opts.compression.per_level.push((l, c));
                    } else {
                        return Err(err(format!("unknown setting {k:?}")));
                    }
                }
            }
        }
        match version {
            Some(v) if v == u64::from(VERSION) => {}
            Some(v) => {
                return Err(bad(
                    0,
                    format!("OPTIONS version {v}; this build reads {VERSION}"),
                ));
            }
            None => return Err(bad(0, "OPTIONS has no version".into())),
        }
        for k in [
            "filter",
            "block_size",
            "checksum",
            "target_file_size",
            "level1_max_bytes",
            "level_size_multiplier",
            "max_levels",
        ] {
            if !seen.iter().any(|s| s == k) {
                return Err(bad(0, format!("OPTIONS does not set {k}")));
            }
        }
        tuning.apply(&mut opts);
        opts.validate()
            .map_err(|e| bad(0, format!("OPTIONS holds a design no store can use: {e}")))?;
        let tables = tables.finish().map_err(|(at, what)| bad(at, what))?;
        Ok(OptionsFile {
            design: Design::of(&opts),
            tuning,
            tables,
            history,
            unknown_families,
        })
    }
}

/// Ends `s` with its checksum line, `crc32 = ` and the CRC-32 of every byte
/// before it in 8 lowercase hex digits: the last line of an `OPTIONS` or
/// `LOOKUPS` file.
pub(crate) fn seal(s: &mut String) {
    let crc = crc32fast::hash(s.as_bytes());
    s.push_str(&format!("crc32 = {crc:08x}\n"));
}

/// The text before the checksum line of a file [`seal`] ended, read from
/// `path`, a file of kind `what`: [`Error::Corruption`] unless the last line
/// is the checksum of the rest, byte for byte, and the rest is UTF-8.
pub(crate) fn unsealed<'a>(bytes: &'a [u8], path: &Path, what: &str) -> Result<&'a str> {
    let bad = |at: usize, what: String| Error::corruption(path, at as u64, what);
    let body_end = bytes
        .strip_suffix(b"\n")
        .and_then(|b| b.iter().rposition(|&c| c == b'\n'))
        .map(|i| i + 1)
        .ok_or_else(|| bad(0, format!("{what} does not end in a checksum line")))?;
    let (body, last) = bytes.split_at(body_end);
    if !last.starts_with(b"crc32 = ") {
        return Err(bad(
            body_end,
            "the last line is not `crc32 = <8 hex digits>`".into(),
        ));
    }
    let want = format!("crc32 = {:08x}\n", crc32fast::hash(body));
    if last != want.as_bytes() {
        return Err(bad(body_end, "checksum mismatch".into()));
    }
    std::str::from_utf8(body).map_err(|e| bad(e.valid_up_to(), "not UTF-8".into()))
}

/// Reads `dir/OPTIONS`; `None` if there is none.
pub fn read(fs: &dyn FileSystem, dir: &Path) -> Result<Option<OptionsFile>> {
    let path = options_file(dir);
    match crate::fs::read_all(fs, &path) {
        Ok(bytes) => OptionsFile::decode(&bytes, &path).map(Some),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::io(format!("read {}", path.display()), e)),
    }
}

/// Replaces `dir/OPTIONS` by `file`, atomically and durably.
pub fn write(fs: &dyn FileSystem, dir: &Path, file: &OptionsFile) -> Result<()> {
    let tmp = options_tmp_file(dir);
    let ctx = |what: &str, p: &Path| format!("{what} {}", p.display());
    let mut f = fs
        .create_truncate(&tmp)
        .map_err(|e| Error::io(ctx("create", &tmp), e))?;
    f.write_all(&file.encode())
        .map_err(|e| Error::io(ctx("write", &tmp), e))?;
    f.sync_data()
        .map_err(|e| Error::io(ctx("fsync", &tmp), e))?;
    drop(f);
    let path = options_file(dir);
    fs.rename(&tmp, &path)
        .map_err(|e| Error::io(ctx("rename onto", &path), e))?;
    sync_dir_in(fs, dir)
}

/// The `tables.*` lines of `t`, in file order.
fn location_lines(t: &TableLocation) -> Vec<(&'static str, String)> {
    let mut v = vec![
        ("tables.bucket", t.bucket.clone()),
        ("tables.prefix", t.prefix.clone()),
    ];
    if let Some(e) = &t.endpoint {
        v.push(("tables.endpoint", e.clone()));
    }
    if let Some(r) = &t.region {
        v.push(("tables.region", r.clone()));
    }
    v.push((
        "tables.cache_dir",
        t.cache_dir.to_string_lossy().into_owned(),
    ));
    v.push(("tables.cache_bytes", t.cache_bytes.to_string()));
    v.push(("tables.chunk_bytes", t.chunk_bytes.to_string()));
    v
}

/// The `tables.*` lines read so far.
#[derive(Default)]
struct LocationLines {
    bucket: Option<String>,
    prefix: Option<String>,
    endpoint: Option<String>,
    region: Option<String>,
    cache_dir: Option<String>,
    cache_bytes: Option<u64>,
    chunk_bytes: Option<u64>,
    /// The offset of the first line.
    at: Option<usize>,
}

impl LocationLines {
    /// Takes the line `tables.FIELD = v` at offset `at`.
    fn set(&mut self, field: &str, v: &str, at: usize) -> std::result::Result<(), String> {
        self.at.get_or_insert(at);
        let num = |v: &str| {
            v.parse::<u64>()
                .map_err(|_| format!("tables.{field}: {v:?} is not a whole number"))
        };
        match field {
            "bucket" => self.bucket = Some(v.to_string()),
            "prefix" => self.prefix = Some(v.to_string()),
            "endpoint" => self.endpoint = Some(v.to_string()),
            "region" => self.region = Some(v.to_string()),
            "cache_dir" => self.cache_dir = Some(v.to_string()),
            "cache_bytes" => self.cache_bytes = Some(num(v)?),
            "chunk_bytes" => self.chunk_bytes = Some(num(v)?),
            _ => return Err(format!("unknown setting \"tables.{field}\"")),
        }
        Ok(())
    }

    /// The location, if any `tables.*` line was read; every one it needs
    /// must be there.
    fn finish(self) -> std::result::Result<Option<TableLocation>, (usize, String)> {
        let Some(at) = self.at else {
            return Ok(None);
        };
        let missing = |k: &str| {
            (
                at,
                format!("OPTIONS names where its tables are without tables.{k}"),
            )
        };
        let bucket = self.bucket.ok_or_else(|| missing("bucket"))?;
        let prefix = self.prefix.ok_or_else(|| missing("prefix"))?;
        let cache_dir = self.cache_dir.ok_or_else(|| missing("cache_dir"))?;
        let cache_bytes = self.cache_bytes.ok_or_else(|| missing("cache_bytes"))?;
        let chunk_bytes = self.chunk_bytes.ok_or_else(|| missing("chunk_bytes"))?;
        if bucket.is_empty() || !(prefix.is_empty() || prefix.ends_with('/')) || chunk_bytes == 0 {
            return Err((
                at,
                format!(
                    "tables: bucket {bucket:?}, prefix {prefix:?}, chunk_bytes {chunk_bytes} name no place"
                ),
            ));
        }
        Ok(Some(TableLocation {
            bucket,
            prefix,
            endpoint: self.endpoint,
            region: self.region,
            cache_dir: cache_dir.into(),
            cache_bytes,
            chunk_bytes,
        }))
    }
}

/// Refuses to open the store in `dir` with `fs` if its file says its
/// tables are somewhere `fs` does not keep them (unless `opts` gives the
/// store a design of its own, [`Options::use_stored_design`] off: then the
/// file system in force is recorded).
fn check_location(
    fs: &dyn FileSystem,
    dir: &Path,
    stored: &OptionsFile,
    opts: &Options,
) -> Result<()> {
    let Some(recorded) = &stored.tables else {
        return Ok(());
    };
    let here = fs.table_location(dir);
    if here.as_ref().is_some_and(|h| h.same_objects(recorded)) || !opts.use_stored_design {
        return Ok(());
    }
    let with = match &here {
        Some(h) => format!("the file system given keeps them in {h}"),
        None if fs.defers_to_recorded_location() && cfg!(feature = "object-store") => {
            "open it with Db::open, which reaches them through this record".to_string()
        }
        None if fs.defers_to_recorded_location() => {
            "this build of bloomlsm has no object-store feature to reach them".to_string()
        }
        None => "the file system given keeps them beside the store's other files (open it \
                 with a bloomlsm::fs::bucket::BucketFs, or with the default file system)"
            .to_string(),
    };
    Err(Error::invalid(format!(
        "the tables of the store in {} are in {recorded} (its OPTIONS file); {with}",
        dir.display()
    )))
}

/// What `Db::open` does with the design: uses the stored one when the store
/// has one and `opts.use_stored_design`, and records the design in force
/// (with a history line) when it differs from the stored one.
pub(crate) fn settle(fs: &dyn FileSystem, dir: &Path, opts: &mut Options) -> Result<Pending> {
    let stored = read(fs, dir)?;
    if let Some(f) = &stored {
        check_location(fs, dir, f, opts)?;
    }
    if let (Some(f), true) = (&stored, opts.use_stored_design) {
        if let Some(name) = f.unknown_families.first() {
            return Err(Error::invalid(format!(
                "the store's design (its OPTIONS file) names the filter family {name:?}, which \
                 this process has not registered: register it with register_filter before \
                 opening, or open with use_stored_design off to give the store another design"
            )));
        }
        f.design.apply(opts);
        f.tuning.apply(opts);
    }
    Ok(Pending { stored })
}

/// The stored file, to compare with the design in force once the store is
/// open.
pub(crate) struct Pending {
    stored: Option<OptionsFile>,
}

impl Pending {
    /// Records `opts`'s design if it is not what the file says. `new_store`:
    /// the store was created by this open.
    pub(crate) fn record(
        self,
        fs: &dyn FileSystem,
        dir: &Path,
        opts: &Options,
        new_store: bool,
    ) -> Result<()> {
        let design = Design::of(opts);
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let tables = fs.table_location(dir);
        let file = match self.stored {
            Some(f) if f.design == design && f.tables == tables => return Ok(()),
            Some(mut f) => {
                if f.design != design {
                    let changes = f.design.changes(&design).join("; ");
                    f.history
                        .push(format!("{now} changed by the caller: {changes}"));
                    f.design = design;
                }
                if f.tables != tables {
                    let place = |t: &Option<TableLocation>| {
                        t.as_ref()
                            .map_or_else(|| "beside the store".to_string(), |t| t.to_string())
                    };
                    f.history.push(format!(
                        "{now} tables kept in {} (before: {})",
                        place(&tables),
                        place(&f.tables)
                    ));
                    f.tables = tables;
                }
                f
            }
            None => OptionsFile {
                unknown_families: Vec::new(),
                tuning: Tuning::default(),
                tables: tables.clone(),
                design,
                history: vec![format!(
                    "{now} {}",
                    if new_store {
                        "created"
                    } else {
                        "recorded (the store had no OPTIONS)"
                    }
                )],
            },
        };
        write(fs, dir, &file)
    }
}

#[cfg(test)]
#[path = "options_file_tests.rs"]
mod tests;
