//! The MANIFEST: a log (same record format as the WAL, [`crate::db::log`]) of
//! [`VersionEdit`]s describing which SSTables make up each level, plus the
//! counters recovery needs. `CURRENT` names the live manifest.
//!
//! About 34% of this file is its unit tests (the `tests` module at the end);
//! the rest is the MANIFEST's record (`VersionEdit`), its encoding, and the
//! file that holds the records.
//!
//! # Rotation
//!
//! [`Manifest::create`] writes `MANIFEST-NNNNNN` whose first record is a full
//! snapshot edit, fsyncs it, then points `CURRENT` at it atomically: write
//! `CURRENT.tmp`, fsync it, rename it over `CURRENT`, fsync the directory. A
//! crash at any point leaves `CURRENT` naming either the old complete manifest
//! or the new complete one; the loser is a leftover to delete.
//!
//! # Recovery
//!
//! [`Manifest::recover`] reads `CURRENT`, replays every edit of the manifest it
//! names (through the builder `version_set.rs` also applies run-time edits
//! with) and returns the resulting [`RecoveredState`]; `recovery.rs` then
//! checks the directory against it. A torn tail (an edit
//! whose append was cut by a crash, never acknowledged) is dropped; damage in
//! the middle is [`Error::Corruption`] — there is no salvage mode for the
//! manifest, because skipping an edit would silently resurrect deleted files
//! or lose new ones. Since the torn tail is not truncated, the store must not
//! append to a recovered manifest: it rotates to a new one with
//! [`RecoveredState::snapshot_edit`].

use std::path::{Path, PathBuf};

use crate::coding::{Decoder, put_length_prefixed, put_varint64};
use crate::db::filename::{
    FileKind, current_file, current_tmp_file, manifest_file, manifest_name, parse_file_name,
    sync_dir_in,
};
use crate::db::log::{LogReader, LogWriter, TailDropped};
use crate::db::version::version_set::Builder;
use crate::error::{Error, Result};
use crate::filter::{FilterKind, FilterPolicy};
use crate::fs::FileSystem;
use crate::key::{self, compare_internal};

/// Number of levels (L0 … L6).
pub const NUM_LEVELS: usize = 7;

/// Name of the key order and file format, recorded in the first edit of every
/// manifest; a store written with another name is refused. `v2` added the
/// WAL-tracking field ([`VersionEdit::new_logs`]); a `v1` manifest
/// ([`FORMAT_NAME_V1`]) is still read.
pub const FORMAT_NAME: &str = "bloomlsm.internal-key-bytewise.v2";

/// The format name of manifests written before WALs were tracked; read, never
/// written.
pub const FORMAT_NAME_V1: &str = "bloomlsm.internal-key-bytewise.v1";

/// Version-edit field tags (see `docs/format.md (§11–14)`).
mod tag {
    pub const COMPARATOR: u64 = 1;
    pub const LOG_NUMBER: u64 = 2;
    pub const NEXT_FILE_NUMBER: u64 = 3;
    pub const LAST_SEQUENCE: u64 = 4;
    pub const DELETED_FILE: u64 = 5;
    pub const NEW_FILE: u64 = 6;
    pub const NEW_LOG: u64 = 7;
    pub const NEW_KEYSPACE: u64 = 8;
    pub const DROPPED_KEYSPACE: u64 = 9;
    pub const NEXT_KEYSPACE: u64 = 10;
    pub const FLUSHED_SEQUENCE: u64 = 11;
}

/// The longest keyspace name a manifest holds, in bytes.
pub const MAX_KEYSPACE_NAME: usize = 255;

/// The filter an SSTable was built with, as recorded in the manifest. Kept as
/// a name rather than a [`FilterKind`] so a manifest naming a filter this build
/// does not know still loads (the table is then read without its filter).
#[derive(Clone, Debug, PartialEq)]
pub struct FilterMeta {
    /// Stable policy name ([`FilterKind::name`]), e.g. `"blocked512"`.
    pub name: String,
    /// Bits per key the filter was built with.
    pub bits_per_key: f64,
    /// Probes per key.
    pub num_probes: u32,
}

impl FilterMeta {
    /// The policy, if this build knows the name.
    pub fn policy(&self) -> Option<FilterPolicy> {
        let kind = FilterKind::from_name(&self.name)?;
        Some(FilterPolicy::new(kind, self.bits_per_key).with_probes(self.num_probes))
    }
}

impl From<&FilterPolicy> for FilterMeta {
    fn from(p: &FilterPolicy) -> Self {
        FilterMeta {
            name: p.name().to_string(),
            bits_per_key: p.bits_per_key(),
            num_probes: p.num_probes(),
        }
    }
}

/// What the manifest records about one SSTable.
#[derive(Clone, Debug, PartialEq)]
pub struct FileMeta {
    /// File number (`NNNNNN.sst`).
    pub number: u64,
    /// Size of the file in bytes.
    pub file_size: u64,
    /// Smallest internal key in the file.
    pub smallest: Vec<u8>,
    /// Largest internal key in the file.
    pub largest: Vec<u8>,
    /// Number of entries (versions and tombstones).
    pub entries: u64,
    /// The filter the file carries, if any.
    pub filter: Option<FilterMeta>,
}

/// One change to the set of files and counters. Absent fields are unchanged.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct VersionEdit {
    /// Key order / format name; present in the first edit of a manifest.
    pub comparator: Option<String>,
    /// WALs numbered below this are fully contained in SSTables.
    pub log_number: Option<u64>,
    /// The next unused file number.
    pub next_file_number: Option<u64>,
    /// Highest sequence number contained in the SSTables and older logs.
    pub last_sequence: Option<u64>,
    /// Files removed: `(level, number)`.
    pub deleted_files: Vec<(usize, u64)>,
    /// Files added: `(level, meta)`.
    pub new_files: Vec<(usize, FileMeta)>,
    /// Write-ahead logs created (each already on disk, its directory entry
    /// synced). A tracked log stays required until the log number passes it:
    /// recovery refuses a store missing one.
    pub new_logs: Vec<u64>,
    /// Keyspaces created: `(id, name)` (a store's MANIFEST only).
    pub new_keyspaces: Vec<(u32, String)>,
    /// Keyspaces dropped, by id (a store's MANIFEST only).
    pub dropped_keyspaces: Vec<u32>,
    /// The id the next keyspace created gets (ids are never reused).
    pub next_keyspace: Option<u32>,
    /// Every write of this MANIFEST's keyspace at or below this sequence is
    /// in its tables, and none above it: replay skips the logged writes at
    /// or below it. Written once the store has keyspaces, and by every
    /// keyspace's flush.
    pub flushed_sequence: Option<u64>,
}

impl VersionEdit {
    /// An empty edit.
    pub fn new() -> Self {
        Self::default()
    }

    /// Encodes the edit (one manifest record).
    pub fn encode(&self) -> Vec<u8> {
        let mut b = Vec::new();
        if let Some(c) = &self.comparator {
            put_varint64(&mut b, tag::COMPARATOR);
            put_length_prefixed(&mut b, c.as_bytes());
        }
        for (t, v) in [
            (tag::LOG_NUMBER, self.log_number),
            (tag::NEXT_FILE_NUMBER, self.next_file_number),
            (tag::LAST_SEQUENCE, self.last_sequence),
        ] {
            if let Some(v) = v {
                put_varint64(&mut b, t);
                put_varint64(&mut b, v);
            }
        }
        for &(level, number) in &self.deleted_files {
            put_varint64(&mut b, tag::DELETED_FILE);
            put_varint64(&mut b, level as u64);
            put_varint64(&mut b, number);
        }
        for (level, f) in &self.new_files {
            put_varint64(&mut b, tag::NEW_FILE);
            put_varint64(&mut b, *level as u64);
            put_varint64(&mut b, f.number);
            put_varint64(&mut b, f.file_size);
            put_length_prefixed(&mut b, &f.smallest);
            put_length_prefixed(&mut b, &f.largest);
            put_varint64(&mut b, f.entries);
            match &f.filter {
                None => put_varint64(&mut b, 0),
                Some(m) => {
                    put_length_prefixed(&mut b, m.name.as_bytes());
                    b.extend_from_slice(&m.bits_per_key.to_bits().to_le_bytes());
                    put_varint64(&mut b, m.num_probes as u64);
                }
            }
        }
        for &n in &self.new_logs {
            put_varint64(&mut b, tag::NEW_LOG);
            put_varint64(&mut b, n);
        }
        for (id, name) in &self.new_keyspaces {
            put_varint64(&mut b, tag::NEW_KEYSPACE);
            put_varint64(&mut b, u64::from(*id));
            put_length_prefixed(&mut b, name.as_bytes());
        }
        for &id in &self.dropped_keyspaces {
            put_varint64(&mut b, tag::DROPPED_KEYSPACE);
            put_varint64(&mut b, u64::from(id));
        }
        for (t, v) in [
            (tag::NEXT_KEYSPACE, self.next_keyspace.map(u64::from)),
            (tag::FLUSHED_SEQUENCE, self.flushed_sequence),
        ] {
            if let Some(v) = v {
                put_varint64(&mut b, t);
                put_varint64(&mut b, v);
            }
        }
        b
    }

    /// Decodes and validates an edit; errors are [`Error::Corruption`] in
    /// `file` at `base_offset` + the offset of the failing field.
    pub fn decode_in(data: &[u8], file: &Path, base_offset: u64) -> Result<VersionEdit> {
        let mut d = Decoder::new(data);
        let mut e = VersionEdit::new();
        while !d.is_empty() {
            let at = d.pos();
            let bad = |what: &str| Error::corruption(file, base_offset + at as u64, what);
            let c = |r: std::result::Result<u64, &str>| r.map_err(bad);
            let t = c(d.varint64())?;
            let set = |slot: &mut Option<u64>, v: u64, name: &str| {
                if slot.replace(v).is_some() {
                    return Err(bad(&format!("version edit sets {name} twice")));
                }
                Ok(())
            };
            match t {
                tag::COMPARATOR => {
                    let s = d.length_prefixed().map_err(bad)?;
                    let s =
                        std::str::from_utf8(s).map_err(|_| bad("comparator name is not UTF-8"))?;
                    if e.comparator.replace(s.to_string()).is_some() {
                        return Err(bad("version edit sets comparator twice"));
                    }
                }
                tag::LOG_NUMBER => set(&mut e.log_number, c(d.varint64())?, "log number")?,
                tag::NEXT_FILE_NUMBER => set(
                    &mut e.next_file_number,
                    c(d.varint64())?,
                    "next file number",
                )?,
                tag::LAST_SEQUENCE => {
                    let s = c(d.varint64())?;
                    if s > key::MAX_SEQUENCE {
                        return Err(bad("last sequence exceeds the 56-bit maximum"));
                    }
                    set(&mut e.last_sequence, s, "last sequence")?
                }
                tag::DELETED_FILE => {
                    let level = decode_level(&mut d).map_err(bad)?;
                    e.deleted_files.push((level, c(d.varint64())?));
                }
                tag::NEW_FILE => {
                    let level = decode_level(&mut d).map_err(bad)?;
                    let f = decode_file(&mut d).map_err(bad)?;
                    e.new_files.push((level, f));
                }
                tag::NEW_LOG => e.new_logs.push(c(d.varint64())?),
                tag::NEW_KEYSPACE => {
                    let id = decode_keyspace_id(&mut d).map_err(bad)?;
                    let name = d.length_prefixed().map_err(bad)?;
                    let name =
                        std::str::from_utf8(name).map_err(|_| bad("keyspace name is not UTF-8"))?;
                    if name.is_empty() || name.len() > MAX_KEYSPACE_NAME {
                        return Err(bad("keyspace name is empty or too long"));
                    }
                    e.new_keyspaces.push((id, name.to_string()));
                }
                tag::DROPPED_KEYSPACE => e
                    .dropped_keyspaces
                    .push(decode_keyspace_id(&mut d).map_err(bad)?),
                tag::NEXT_KEYSPACE => {
                    let id = decode_keyspace_id(&mut d).map_err(bad)?;
                    if e.next_keyspace.replace(id).is_some() {
                        return Err(bad("version edit sets the next keyspace twice"));
                    }
                }
                tag::FLUSHED_SEQUENCE => {
                    let s = c(d.varint64())?;
                    if s > key::MAX_SEQUENCE {
                        return Err(bad("flushed sequence exceeds the 56-bit maximum"));
                    }
                    set(&mut e.flushed_sequence, s, "flushed sequence")?
                }
                _ => return Err(bad(&format!("unknown version edit tag {t}"))),
            }
        }
        Ok(e)
    }

    /// [`VersionEdit::decode_in`] with a placeholder file name.
    pub fn decode(data: &[u8]) -> Result<VersionEdit> {
        Self::decode_in(data, Path::new("<version edit>"), 0)
    }
}

/// A keyspace id: 1 up to `u32::MAX` (0 is the default keyspace, which no
/// edit names).
fn decode_keyspace_id(d: &mut Decoder<'_>) -> std::result::Result<u32, &'static str> {
    match u32::try_from(d.varint64()?) {
        Ok(id) if id > 0 => Ok(id),
        _ => Err("keyspace id out of range"),
    }
}

fn decode_level(d: &mut Decoder<'_>) -> std::result::Result<usize, &'static str> {
    let l = d.varint64()?;
    if l >= NUM_LEVELS as u64 {
        return Err("level out of range");
    }
    Ok(l as usize)
}

fn decode_file(d: &mut Decoder<'_>) -> std::result::Result<FileMeta, &'static str> {
    let number = d.varint64()?;
    let file_size = d.varint64()?;
    let smallest = d.length_prefixed()?.to_vec();
    let largest = d.length_prefixed()?.to_vec();
    if key::parse(&smallest).is_none() || key::parse(&largest).is_none() {
        return Err("file key range is not a pair of internal keys");
    }
    if compare_internal(&smallest, &largest).is_gt() {
        return Err("file's smallest key is greater than its largest");
    }
    let entries = d.varint64()?;
    let name = d.length_prefixed()?;
    let filter = if name.is_empty() {
        None
    } else {
        let name = std::str::from_utf8(name).map_err(|_| "filter name is not UTF-8")?;
        let bits_per_key = f64::from_bits(d.fixed64()?);
        if !bits_per_key.is_finite() || bits_per_key <= 0.0 {
            return Err("filter bits per key is not a positive number");
        }
        let num_probes = d.varint32()?;
        if num_probes == 0 {
            return Err("filter has zero probes");
        }
        Some(FilterMeta {
            name: name.to_string(),
            bits_per_key,
            num_probes,
        })
    };
    Ok(FileMeta {
        number,
        file_size,
        smallest,
        largest,
        entries,
        filter,
    })
}

/// The store's state as the manifest describes it.
#[derive(Clone, Debug, PartialEq)]
pub struct RecoveredState {
    /// Files per level ([`NUM_LEVELS`] entries). L0 is ordered by file number
    /// (oldest first); deeper levels by smallest key.
    pub levels: Vec<Vec<FileMeta>>,
    /// WALs numbered at or above this must be replayed.
    pub log_number: u64,
    /// The next unused file number (never below any number seen).
    pub next_file_number: u64,
    /// Highest sequence number in the SSTables and retired logs.
    pub last_sequence: u64,
    /// Write-ahead logs the manifest tracks (all at or above `log_number`),
    /// ascending: each must exist.
    pub logs: Vec<u64>,
    /// The store's keyspaces besides the default one, by id.
    pub keyspaces: std::collections::BTreeMap<u32, String>,
    /// The id the next keyspace gets (1 for a store that never had one).
    pub next_keyspace: u32,
    /// [`VersionEdit::flushed_sequence`] (0 when never recorded: replay
    /// skips nothing).
    pub flushed_sequence: u64,
}

impl RecoveredState {
    /// The state of a store with no files yet.
    pub fn empty() -> Self {
        RecoveredState {
            levels: vec![Vec::new(); NUM_LEVELS],
            log_number: 0,
            next_file_number: 1,
            last_sequence: 0,
            logs: Vec::new(),
            keyspaces: std::collections::BTreeMap::new(),
            next_keyspace: 1,
            flushed_sequence: 0,
        }
    }

    /// A full snapshot edit of this state: what a new manifest starts with.
    pub fn snapshot_edit(&self) -> VersionEdit {
        VersionEdit {
            comparator: Some(FORMAT_NAME.to_string()),
            log_number: Some(self.log_number),
            next_file_number: Some(self.next_file_number),
            last_sequence: Some(self.last_sequence),
            deleted_files: Vec::new(),
            new_files: self
                .levels
                .iter()
                .enumerate()
                .flat_map(|(l, fs)| fs.iter().map(move |f| (l, f.clone())))
                .collect(),
            new_logs: self.logs.clone(),
            // Absent for a store that never had keyspaces: its snapshot is
            // what it was before keyspaces existed.
            new_keyspaces: self
                .keyspaces
                .iter()
                .map(|(&id, name)| (id, name.clone()))
                .collect(),
            dropped_keyspaces: Vec::new(),
            next_keyspace: (self.next_keyspace > 1).then_some(self.next_keyspace),
            flushed_sequence: (self.flushed_sequence > 0).then_some(self.flushed_sequence),
        }
    }
}

/// Details of a manifest recovery.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecoverReport {
    /// Number of the manifest `CURRENT` named.
    pub manifest_number: u64,
    /// Edits applied.
    pub edits: u64,
    /// A torn tail dropped from the manifest, if any.
    pub tail_dropped: Option<TailDropped>,
}

/// An open manifest being appended to.
#[derive(Debug)]
pub struct Manifest {
    writer: LogWriter,
    number: u64,
    /// An edit was appended without a sync since the last sync.
    unsynced: bool,
}

impl Manifest {
    /// Writes `dir/MANIFEST-<number>` holding `snapshot` (which should describe
    /// the whole state; its format name is filled in if absent), fsyncs it and
    /// atomically points `CURRENT` at it. A stale file of that name (a
    /// leftover of a crashed rotation) is replaced; the live manifest never is.
    pub fn create(
        fs: &dyn FileSystem,
        dir: &Path,
        number: u64,
        snapshot: &VersionEdit,
    ) -> Result<Manifest> {
        let mut snapshot = snapshot.clone();
        match &snapshot.comparator {
            None => snapshot.comparator = Some(FORMAT_NAME.to_string()),
            Some(c) if c == FORMAT_NAME => {}
            Some(c) => {
                return Err(Error::invalid(format!(
                    "manifest format name {c:?} is not {FORMAT_NAME:?}"
                )));
            }
        }
        let path = manifest_file(dir, number);
        if fs.file_len(&path).is_ok() {
            if matches!(read_current(fs, dir), Ok(n) if n == number) {
                return Err(Error::invalid(format!(
                    "{} is the live manifest",
                    path.display()
                )));
            }
            fs.remove_file(&path)
                .map_err(|e| Error::io(format!("remove {}", path.display()), e))?;
        }
        let mut writer = LogWriter::create_in(fs, &path)?;
        writer.add_record(&snapshot.encode())?;
        writer.sync()?;
        set_current(fs, dir, number)?;
        Ok(Manifest {
            writer,
            number,
            unsynced: false,
        })
    }

    /// Appends `edit` and fsyncs: once this returns, recovery sees the edit
    /// (and every edit appended before it).
    pub fn append(&mut self, edit: &VersionEdit) -> Result<()> {
        self.append_unsynced(edit)?;
        self.sync()
    }

    /// Makes every edit appended so far durable (a no-op when the last one
    /// was synced).
    pub fn sync(&mut self) -> Result<()> {
        if self.unsynced {
            self.writer.sync()?;
            self.unsynced = false;
        }
        Ok(())
    }

    /// Appends `edit` without the fsync: a crash of the process keeps it (it
    /// is in the operating system's hands), a power loss may drop it (a torn
    /// last record is dropped by recovery, as after any crash), and the next
    /// [`append`](Self::append) makes it durable with itself.
    pub fn append_unsynced(&mut self, edit: &VersionEdit) -> Result<()> {
        self.unsynced = true;
        self.writer.add_record(&edit.encode())
    }

    /// The manifest's file number.
    pub fn number(&self) -> u64 {
        self.number
    }

    /// The manifest's path.
    pub fn path(&self) -> &Path {
        self.writer.path()
    }

    /// Bytes in the manifest. (The store starts a new manifest at every open,
    /// and after [`crate::Options::max_manifest_edits`] edits.)
    pub fn size(&self) -> u64 {
        self.writer.len()
    }

    /// Reads `CURRENT` and replays the manifest it names (see the module
    /// docs). A missing `CURRENT` is an [`Error::Io`] of kind `NotFound`: no
    /// store here yet.
    pub fn recover(fs: &dyn FileSystem, dir: &Path) -> Result<(RecoveredState, RecoverReport)> {
        let number = read_current(fs, dir)?;
        let path = manifest_file(dir, number);
        let mut reader = LogReader::open_in(fs, &path, false)?;
        let mut b = Builder::default();
        let mut edits = 0u64;
        while let Some(rec) = reader.next_record()? {
            let at = reader.last_record_offset();
            let edit = VersionEdit::decode_in(&rec, &path, at)?;
            match (&edit.comparator, edits) {
                (Some(c), _) if c != FORMAT_NAME && c != FORMAT_NAME_V1 => {
                    return Err(Error::invalid(format!(
                        "{} was written with format {c:?}; this build reads {FORMAT_NAME:?}",
                        path.display()
                    )));
                }
                (None, 0) => {
                    return Err(Error::corruption(
                        &path,
                        at,
                        "first manifest edit lacks the format name",
                    ));
                }
                _ => {}
            }
            b.apply(&edit)
                .map_err(|what| Error::corruption(&path, at, what))?;
            edits += 1;
        }
        if edits == 0 {
            return Err(Error::corruption(
                &path,
                0,
                "manifest holds no complete edit",
            ));
        }
        let state = b
            .finish(number)
            .map_err(|what| Error::corruption(&path, 0, what))?;
        Ok((
            state,
            RecoverReport {
                manifest_number: number,
                edits,
                tail_dropped: reader.tail_dropped(),
            },
        ))
    }
}

/// Reads `CURRENT`: exactly `MANIFEST-NNNNNN\n`. Anything else is corruption.
pub fn read_current(fs: &dyn FileSystem, dir: &Path) -> Result<u64> {
    let path = current_file(dir);
    let data = crate::fs::read_all(fs, &path)
        .map_err(|e| Error::io(format!("read {}", path.display()), e))?;
    let bad = || {
        Error::corruption(
            &path,
            0,
            "CURRENT does not hold a manifest name and newline",
        )
    };
    let name = data.strip_suffix(b"\n").ok_or_else(bad)?;
    let name = std::str::from_utf8(name).map_err(|_| bad())?;
    match parse_file_name(name) {
        Some((FileKind::Manifest, n)) => Ok(n),
        _ => Err(bad()),
    }
}

/// Points `CURRENT` at `MANIFEST-<number>` atomically and durably: write and
/// fsync `CURRENT.tmp`, rename it over `CURRENT`, fsync the directory.
pub fn set_current(fs: &dyn FileSystem, dir: &Path, number: u64) -> Result<()> {
    let tmp = current_tmp_file(dir);
    let ctx = |what: &str, p: &PathBuf| format!("{what} {}", p.display());
    let mut f = fs
        .create_truncate(&tmp)
        .map_err(|e| Error::io(ctx("create", &tmp), e))?;
    f.write_all(format!("{}\n", manifest_name(number)).as_bytes())
        .map_err(|e| Error::io(ctx("write", &tmp), e))?;
    f.sync_data()
        .map_err(|e| Error::io(ctx("fsync", &tmp), e))?;
    drop(f);
    let cur = current_file(dir);
    fs.rename(&tmp, &cur)
        .map_err(|e| Error::io(ctx("rename onto", &cur), e))?;
    sync_dir_in(fs, dir)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::RealFs;
    use crate::key::{ValueKind, make_internal_key};
    use proptest::prelude::*;
    use std::fs::OpenOptions;

    fn file(number: u64, lo: &str, hi: &str) -> FileMeta {
        FileMeta {
            number,
            file_size: 4096 + number,
            smallest: make_internal_key(lo.as_bytes(), number * 10, ValueKind::Value),
            largest: make_internal_key(hi.as_bytes(), number * 10 + 1, ValueKind::Deletion),
            entries: 100 + number,
            filter: number
                .is_multiple_of(2)
                .then(|| FilterMeta::from(&FilterPolicy::blocked512(9.5))),
        }
    }

    fn base_edit() -> VersionEdit {
        VersionEdit {
            log_number: Some(2),
            next_file_number: Some(3),
            last_sequence: Some(0),
            ..VersionEdit::default()
        }
    }

    #[test]
    fn an_unsynced_edit_is_lost_to_a_power_cut_until_a_synced_one_follows() {
        use crate::fs::fault::FaultFs;
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let fs = FaultFs::new();
        let mut m = Manifest::create(&fs, d, 1, &base_edit()).unwrap();
        let mut put = VersionEdit::new();
        put.new_files.push((1, file(4, "a", "m")));
        put.next_file_number = Some(7);
        m.append(&put).unwrap();
        // A trivial move: the file one level down, appended without a sync.
        let mut moved = VersionEdit::new();
        moved.deleted_files.push((1, 4));
        moved.new_files.push((2, file(4, "a", "m")));
        m.append_unsynced(&moved).unwrap();
        drop(m);
        fs.power_loss().unwrap();
        let (st, _) = Manifest::recover(&fs, d).unwrap();
        assert_eq!(st.levels[1], vec![file(4, "a", "m")], "the move is lost");
        assert!(st.levels[2].is_empty());

        // Appended again, then followed by a synced edit: both survive.
        let mut m = Manifest::create(&fs, d, 8, &st.snapshot_edit()).unwrap();
        m.append_unsynced(&moved).unwrap();
        let mut seq = VersionEdit::new();
        seq.last_sequence = Some(900);
        m.append(&seq).unwrap();
        drop(m);
        fs.power_loss().unwrap();
        let (st, _) = Manifest::recover(&fs, d).unwrap();
        assert!(st.levels[1].is_empty());
        assert_eq!(st.levels[2], vec![file(4, "a", "m")]);
        assert_eq!(st.last_sequence, 900);
    }

    #[test]
    fn create_append_recover_and_rotate() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let mut m = Manifest::create(&RealFs, d, 1, &base_edit()).unwrap();
        assert_eq!(read_current(&RealFs, d).unwrap(), 1);
        let mut e = VersionEdit::new();
        e.new_files.push((0, file(4, "a", "m")));
        e.new_files.push((0, file(5, "c", "z")));
        e.log_number = Some(6);
        e.next_file_number = Some(7);
        e.last_sequence = Some(500);
        m.append(&e).unwrap();
        let mut e = VersionEdit::new();
        e.deleted_files.push((0, 4));
        e.deleted_files.push((0, 5));
        e.new_files.push((1, file(9, "n", "z")));
        e.new_files.push((1, file(8, "a", "m")));
        e.next_file_number = Some(10);
        m.append(&e).unwrap();
        let size = m.size();
        drop(m);

        let (st, rep) = Manifest::recover(&RealFs, d).unwrap();
        assert_eq!(rep.manifest_number, 1);
        assert_eq!(rep.edits, 3);
        assert_eq!(rep.tail_dropped, None);
        assert_eq!(st.log_number, 6);
        assert_eq!(st.next_file_number, 10);
        assert_eq!(st.last_sequence, 500);
        assert!(st.levels[0].is_empty());
        assert_eq!(
            st.levels[1].iter().map(|f| f.number).collect::<Vec<_>>(),
            vec![8, 9]
        );
        assert_eq!(st.levels[1][0], file(8, "a", "m"));
        assert_eq!(
            st.levels[1][0].filter.as_ref().unwrap().policy(),
            Some(FilterPolicy::blocked512(9.5))
        );

        // Rotate to manifest 10 with a snapshot; the state is unchanged.
        let mut st2 = st.clone();
        st2.next_file_number = 11;
        let m2 = Manifest::create(&RealFs, d, 10, &st2.snapshot_edit()).unwrap();
        assert_eq!(read_current(&RealFs, d).unwrap(), 10);
        assert!(!current_tmp_file(d).exists());
        assert!(
            Manifest::create(&RealFs, d, 10, &base_edit()).is_err(),
            "live manifest kept"
        );
        drop(m2);
        let (st3, rep) = Manifest::recover(&RealFs, d).unwrap();
        assert_eq!(rep.manifest_number, 10);
        assert_eq!(st3, st2);

        // A torn tail of the old manifest only drops its last edit.
        set_current(&RealFs, d, 1).unwrap();
        let f = OpenOptions::new()
            .write(true)
            .open(manifest_file(d, 1))
            .unwrap();
        f.set_len(size - 3).unwrap();
        let (st4, rep) = Manifest::recover(&RealFs, d).unwrap();
        assert!(rep.tail_dropped.is_some());
        assert_eq!(rep.edits, 2);
        assert_eq!(
            st4.levels[0].iter().map(|f| f.number).collect::<Vec<_>>(),
            vec![4, 5]
        );
        assert_eq!(st4.next_file_number, 7);
    }

    #[test]
    fn mid_file_damage_and_bad_current_are_errors() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let mut m = Manifest::create(&RealFs, d, 1, &base_edit()).unwrap();
        for (i, (lo, hi)) in [("a", "b"), ("c", "d"), ("e", "f")].into_iter().enumerate() {
            let mut e = VersionEdit::new();
            e.new_files.push((2, file(10 + i as u64, lo, hi)));
            m.append(&e).unwrap();
        }
        drop(m);
        let path = manifest_file(d, 1);
        let good = std::fs::read(&path).unwrap();
        let mut bad = good.clone();
        bad[20] ^= 0x40; // inside the first edit; three edits follow
        std::fs::write(&path, &bad).unwrap();
        assert!(Manifest::recover(&RealFs, d).unwrap_err().is_corruption());
        std::fs::write(&path, &good).unwrap();
        Manifest::recover(&RealFs, d).unwrap();

        for junk in [
            &b"MANIFEST-000001"[..],
            b"MANIFEST-1\n",
            b"",
            b"000001.log\n",
            b"\xff\n",
        ] {
            std::fs::write(current_file(d), junk).unwrap();
            assert!(Manifest::recover(&RealFs, d).unwrap_err().is_corruption());
        }
        std::fs::remove_file(current_file(d)).unwrap();
        assert!(matches!(
            Manifest::recover(&RealFs, d),
            Err(Error::Io { .. })
        ));
    }

    #[test]
    fn inconsistent_edits_are_corruption() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let mut m = Manifest::create(&RealFs, d, 1, &base_edit()).unwrap();
        let mut e = VersionEdit::new();
        e.deleted_files.push((3, 77));
        m.append(&e).unwrap();
        drop(m);
        assert!(Manifest::recover(&RealFs, d).unwrap_err().is_corruption());

        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let mut m = Manifest::create(&RealFs, d, 1, &VersionEdit::new()).unwrap();
        m.append(&VersionEdit::new()).unwrap();
        drop(m);
        let err = Manifest::recover(&RealFs, d).unwrap_err();
        assert!(err.to_string().contains("never sets"), "{err}");

        let bad_name = VersionEdit {
            comparator: Some("other".into()),
            ..base_edit()
        };
        assert!(Manifest::create(&RealFs, d, 5, &bad_name).is_err());
    }

    #[test]
    fn unknown_tag_and_bad_fields_rejected() {
        let mut enc = base_edit().encode();
        enc.push(99);
        enc.push(0);
        assert!(VersionEdit::decode(&enc).unwrap_err().is_corruption());
        let mut twice = base_edit().encode();
        twice.extend(base_edit().encode());
        assert!(VersionEdit::decode(&twice).is_err());
        let mut e = VersionEdit::new();
        e.new_files.push((0, file(2, "z", "a")));
        assert!(VersionEdit::decode(&e.encode()).is_err(), "inverted range");
        let mut e = VersionEdit::new();
        e.deleted_files.push((NUM_LEVELS, 1));
        assert!(
            VersionEdit::decode(&e.encode()).is_err(),
            "level out of range"
        );
    }

    fn arb_key() -> impl Strategy<Value = Vec<u8>> {
        (
            prop::collection::vec(any::<u8>(), 0..12),
            0u64..1 << 40,
            any::<bool>(),
        )
            .prop_map(|(k, s, v)| {
                let kind = if v {
                    ValueKind::Value
                } else {
                    ValueKind::Deletion
                };
                make_internal_key(&k, s, kind)
            })
    }

    fn arb_file() -> impl Strategy<Value = FileMeta> {
        (
            any::<u64>(),
            any::<u64>(),
            arb_key(),
            arb_key(),
            any::<u64>(),
            prop::option::of(("[a-z0-9]{1,12}", 0.5f64..100.0, 1u32..40)),
        )
            .prop_map(|(number, file_size, a, b, entries, filter)| {
                let (smallest, largest) = if compare_internal(&a, &b).is_le() {
                    (a, b)
                } else {
                    (b, a)
                };
                FileMeta {
                    number,
                    file_size,
                    smallest,
                    largest,
                    entries,
                    filter: filter.map(|(name, bits_per_key, num_probes)| FilterMeta {
                        name,
                        bits_per_key,
                        num_probes,
                    }),
                }
            })
    }

    fn arb_edit() -> impl Strategy<Value = VersionEdit> {
        (
            prop::option::of("[ -~]{0,40}"),
            prop::option::of(any::<u64>()),
            prop::option::of(any::<u64>()),
            prop::option::of(0u64..=key::MAX_SEQUENCE),
            prop::collection::vec((0..NUM_LEVELS, any::<u64>()), 0..5),
            prop::collection::vec((0..NUM_LEVELS, arb_file()), 0..5),
            prop::collection::vec(any::<u64>(), 0..3),
            (
                prop::collection::vec((1..=u32::MAX, "[a-z]{1,12}"), 0..3),
                prop::collection::vec(1..=u32::MAX, 0..3),
                prop::option::of(1..=u32::MAX),
                prop::option::of(0u64..=key::MAX_SEQUENCE),
            ),
        )
            .prop_map(
                |(comparator, log_number, next_file_number, last_sequence, d, n, logs, ks)| {
                    VersionEdit {
                        comparator,
                        log_number,
                        next_file_number,
                        last_sequence,
                        deleted_files: d,
                        new_files: n,
                        new_logs: logs,
                        new_keyspaces: ks.0,
                        dropped_keyspaces: ks.1,
                        next_keyspace: ks.2,
                        flushed_sequence: ks.3,
                    }
                },
            )
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

        #[test]
        fn edit_roundtrip(e in arb_edit()) {
            let enc = e.encode();
            prop_assert_eq!(VersionEdit::decode(&enc).unwrap(), e);
        }

        #[test]
        fn damaged_edits_never_panic(e in arb_edit(), at in any::<prop::sample::Index>(),
                                     mask in 1u8..=255, cut in any::<prop::sample::Index>()) {
            let enc = e.encode();
            if !enc.is_empty() {
                let mut bad = enc.clone();
                bad[at.index(enc.len())] ^= mask;
                let _ = VersionEdit::decode(&bad);
                let _ = VersionEdit::decode(&enc[..cut.index(enc.len())]);
            }
        }

        #[test]
        fn random_bytes_never_panic(data in prop::collection::vec(any::<u8>(), 0..80)) {
            let _ = VersionEdit::decode(&data);
        }
    }
}
