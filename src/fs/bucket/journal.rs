//! The journal of a store kept wholly in a bucket
//! ([`super::BucketConfig::whole_store`]): the files the store appends to —
//! its write-ahead logs and MANIFESTs — and the small files it replaces
//! whole — `CURRENT` and `OPTIONS` — kept as one numbered sequence of
//! objects, `PREFIX` + `journal/` + a 20-digit number, each written with a
//! conditional create (`If-None-Match: *`) at the number after the last
//! (docs/design.md, "A whole store in a bucket"; docs/format.md §16).
//!
//! One sequence makes one writer. A writer takes its place at open by
//! creating a fence entry after the last entry it lists; once that create
//! has succeeded, an older writer's next entry — at that same number — is
//! refused by the bucket, and the older writer stops as fenced
//! ([`crate::Error::Fenced`]). A writer has one entry in flight at a time,
//! so the entry it is writing is always the one after the last the bucket
//! holds: a newer writer's fence either takes that number first, or lands
//! after it and sees it. Everything a writer wrote before its fence-out is
//! in the entries below the fence, which the newer writer reads.

use std::collections::BTreeMap;
use std::io;
use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard};

use bytes::{BufMut, Bytes};
use object_store::ObjectStoreExt;
use object_store::path::Path as ObjectPath;

use super::client::Client;
use super::lock;
use crate::error::IoCause;

/// The journal's folder under the prefix.
pub const JOURNAL_DIR: &str = "journal";

/// The journal's file of a clone's tables kept under another prefix
/// (`clone.rs`): no file of the store's own.
pub(super) const LINKS_FILE: &str = "LINKS";

const MAGIC: &[u8; 4] = b"BLJ1";
const APPEND: u8 = 1;
const WHOLE: u8 = 2;
const FENCE: u8 = 3;
/// Entries fetched at once when the journal is read.
const FETCH_IN_FLIGHT: usize = 16;
/// Readings of the journal before a reader gives up on one its writer
/// keeps changing under it.
const READ_ATTEMPTS: usize = 16;
/// Fence attempts before a writer gives up taking the store (one fails
/// only when another writer's entry has landed at its number).
const FENCE_ATTEMPTS: usize = 32;
/// How far past the last entry listed a fence first lands: an older
/// writer writes at most this many entries between the listing and the
/// fence's PUT without beating it (doubled at each retry).
const FENCE_LEAP: u64 = 8;

/// One entry of the journal.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Entry {
    /// `data` written at `offset` of the appended file `path`.
    Append {
        path: String,
        offset: u64,
        data: Bytes,
    },
    /// The whole of the file `path`, replacing what it held.
    Whole { path: String, data: Bytes },
    /// A writer took the store; `writer` names it (host and process).
    Fence { writer: String },
}

impl Entry {
    /// The entry's bytes: magic `BLJ1`, kind (1 append, 2 whole, 3 fence),
    /// the path's length (u16) and bytes, for an append the offset (u64),
    /// the data, then a CRC-32 (little-endian) of everything before it.
    pub(super) fn encode(&self) -> Bytes {
        let (kind, path, offset, data) = match self {
            Entry::Append { path, offset, data } => (APPEND, path.as_str(), Some(*offset), data),
            Entry::Whole { path, data } => (WHOLE, path.as_str(), None, data),
            Entry::Fence { writer } => (FENCE, "", None, &Bytes::from(writer.clone())),
        };
        let mut v = Vec::with_capacity(4 + 1 + 2 + path.len() + 8 + data.len() + 4);
        v.extend_from_slice(MAGIC);
        v.push(kind);
        v.put_u16_le(path.len() as u16);
        v.extend_from_slice(path.as_bytes());
        if let Some(o) = offset {
            v.put_u64_le(o);
        }
        v.extend_from_slice(data);
        let crc = crc32fast::hash(&v);
        v.put_u32_le(crc);
        Bytes::from(v)
    }

    /// Parses an entry; what is wrong, in words, for bytes no writer made.
    pub(super) fn decode(b: &Bytes) -> Result<Entry, String> {
        if b.len() < 4 + 1 + 2 + 4 {
            return Err(format!("{} bytes, shorter than any entry", b.len()));
        }
        let (body, crc) = b.split_at(b.len() - 4);
        if crc32fast::hash(body) != u32::from_le_bytes(crc.try_into().expect("4 bytes")) {
            return Err("checksum mismatch".into());
        }
        if &body[..4] != MAGIC {
            return Err("bad magic".into());
        }
        let kind = body[4];
        let plen = u16::from_le_bytes([body[5], body[6]]) as usize;
        let rest = &body[7..];
        if rest.len() < plen {
            return Err("path past the end".into());
        }
        let path = std::str::from_utf8(&rest[..plen])
            .map_err(|_| "path not UTF-8".to_string())?
            .to_string();
        let at = 7 + plen;
        let end = body.len();
        match kind {
            APPEND => {
                if end < at + 8 {
                    return Err("offset past the end".into());
                }
                let offset = u64::from_le_bytes(body[at..at + 8].try_into().expect("8 bytes"));
                Ok(Entry::Append {
                    path,
                    offset,
                    data: b.slice(at + 8..end),
                })
            }
            WHOLE => Ok(Entry::Whole {
                path,
                data: b.slice(at..end),
            }),
            FENCE => Ok(Entry::Fence {
                writer: String::from_utf8_lossy(&body[at..end]).into_owned(),
            }),
            k => Err(format!("unknown kind {k}")),
        }
    }
}

/// A piece of an appended file: the entry `seq` holding `len` bytes at
/// `offset`, its bytes if read or kept.
#[derive(Clone, Debug)]
struct Piece {
    seq: u64,
    offset: u64,
    len: u64,
    data: Option<Bytes>,
}

/// A file replaced whole: its newest entry, and older ones to delete.
#[derive(Clone, Debug)]
struct WholeFile {
    seq: u64,
    data: Bytes,
    older: Vec<u64>,
}

/// What the journal holds, as read (and, for the writer, as written since).
#[derive(Debug, Default)]
struct Index {
    /// Appended files by path: pieces in entry order.
    appended: BTreeMap<String, Vec<Piece>>,
    whole: BTreeMap<String, WholeFile>,
}

impl Index {
    fn add(&mut self, seq: u64, e: Entry) {
        match e {
            Entry::Append { path, offset, data } => {
                let pieces = self.appended.entry(path).or_default();
                let piece = Piece {
                    seq,
                    offset,
                    len: data.len() as u64,
                    data: Some(data),
                };
                let at = pieces.partition_point(|p| p.seq < seq);
                pieces.insert(at, piece);
            }
            Entry::Whole { path, data } => match self.whole.get_mut(&path) {
                Some(w) if w.seq > seq => w.older.push(seq),
                Some(w) => {
                    let old = std::mem::replace(
                        w,
                        WholeFile {
                            seq,
                            data,
                            older: Vec::new(),
                        },
                    );
                    w.older = old.older;
                    w.older.push(old.seq);
                }
                None => {
                    self.whole.insert(
                        path,
                        WholeFile {
                            seq,
                            data,
                            older: Vec::new(),
                        },
                    );
                }
            },
            // A fence holds its number against older writers; it is no
            // part of any file.
            Entry::Fence { .. } => {}
        }
    }
}

/// This handle's place as a writer.
#[derive(Debug, Default)]
struct Writer {
    /// The number its next entry takes; `None` until it holds the store.
    next: Option<u64>,
    /// Its fence's number.
    epoch: u64,
    /// Why no entry may follow: a fence-out, or a write whose outcome is
    /// unknown.
    failed: Option<Failed>,
}

#[derive(Clone, Debug)]
enum Failed {
    Fenced { at: String, by: String },
    Other(String),
}

impl Failed {
    fn to_io(&self) -> io::Error {
        match self {
            Failed::Fenced { at, by } => IoCause::Fenced {
                at: at.clone(),
                by: by.clone(),
            }
            .into_io(),
            Failed::Other(what) => io::Error::other(format!(
                "an earlier write to the store's journal failed ({what}); no entry may follow it"
            )),
        }
    }
}

/// The journal of one store, as one handle sees and writes it.
#[derive(Debug)]
pub(super) struct Journal {
    /// `PREFIX/journal`.
    dir: ObjectPath,
    /// Where errors say the store is (the store's directory).
    root: PathBuf,
    /// How this handle names itself in its fence.
    whoami: String,
    index: Mutex<Option<Index>>,
    /// Held while an entry is written: one in flight.
    writer: Mutex<Writer>,
    /// The prefix's marker is missing: the writer writes it when it takes
    /// the store.
    marker_due: bool,
    /// Every entry read, by number: an entry is written once and never
    /// changes, so a reader's next reading of the journal fetches only the
    /// entries it has not read (a refresh costs a LIST and the new
    /// entries), and drops those deleted since.
    read: Mutex<BTreeMap<u64, Entry>>,
    /// The files are a kept checkpoint's ([`Journal::fix`]): never listed,
    /// never forgotten, never written.
    fixed: std::sync::atomic::AtomicBool,
}

/// A journal entry's key name: 20 digits.
fn entry_name(seq: u64) -> String {
    format!("{seq:020}")
}

fn parse_entry_name(name: &str) -> Option<u64> {
    (name.len() == 20 && name.bytes().all(|b| b.is_ascii_digit()))
        .then(|| name.parse().ok())
        .flatten()
}

impl Journal {
    pub(super) fn new(prefix: &ObjectPath, root: PathBuf, marker_due: bool) -> Journal {
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
            .map(|h| h.trim().to_string())
            .unwrap_or_else(|_| "a host".into());
        Journal {
            dir: prefix.clone().join(JOURNAL_DIR),
            root,
            whoami: format!("{host}, process {}", std::process::id()),
            index: Mutex::new(None),
            writer: Mutex::new(Writer::default()),
            marker_due,
            read: Mutex::new(BTreeMap::new()),
            fixed: Default::default(),
        }
    }

    fn key(&self, seq: u64) -> ObjectPath {
        self.dir.clone().join(entry_name(seq).as_str())
    }

    /// `journal/NNN…` as errors name an entry.
    fn entry_label(seq: u64) -> String {
        format!("{JOURNAL_DIR}/{}", entry_name(seq))
    }

    fn corruption(&self, path: &str, offset: u64, what: String) -> io::Error {
        IoCause::Corruption {
            file: self.root.join(path),
            offset,
            what,
        }
        .into_io()
    }

    /// The numbers of the entries the bucket holds, ascending; a key under
    /// `journal/` that is not an entry's is an error.
    fn list(&self, client: &Client, after: Option<u64>) -> io::Result<Vec<u64>> {
        let offset = after.map(|s| self.key(s));
        let keys = client.list_keys(&self.dir, offset.as_ref())?;
        let mut seqs = Vec::with_capacity(keys.len());
        for k in keys {
            match k.filename().and_then(parse_entry_name) {
                Some(s) if k.parts().count() == self.dir.parts().count() + 1 => seqs.push(s),
                _ => {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        format!("object {k} under the store's journal is not a journal entry"),
                    ));
                }
            }
        }
        seqs.sort_unstable();
        Ok(seqs)
    }

    /// Reads the entries `seqs` (16 at a time); an entry deleted since it
    /// was listed is left out, and counted; a damaged one is corruption.
    fn fetch(&self, client: &Client, seqs: &[u64]) -> io::Result<(Vec<(u64, Entry)>, usize)> {
        let mut out = Vec::with_capacity(seqs.len());
        let mut vanished = 0;
        for chunk in seqs.chunks(FETCH_IN_FLIGHT) {
            let pending: Vec<_> = chunk
                .iter()
                .map(|&s| {
                    let store = client.store.clone();
                    let k = self.key(s);
                    (
                        s,
                        client.spawn(async move { store.get(&k).await?.bytes().await }),
                    )
                })
                .collect();
            for (s, p) in pending {
                super::client::add(&client.counters.gets, 1);
                let bytes = match p.wait()? {
                    Ok(b) => b,
                    Err(object_store::Error::NotFound { .. }) => {
                        vanished += 1;
                        continue;
                    }
                    Err(e) => return Err(super::client::io_error("GET", &self.key(s), e)),
                };
                super::client::add(&client.counters.get_bytes, bytes.len() as u64);
                let e = Entry::decode(&bytes).map_err(|what| {
                    self.corruption(
                        &Self::entry_label(s),
                        0,
                        format!("journal entry damaged: {what}"),
                    )
                })?;
                out.push((s, e));
            }
        }
        Ok((out, vanished))
    }

    /// Reads the whole journal (entries below `below` only, if given). An
    /// entry is deleted only once a later one has made it obsolete (a
    /// flush's edit, a newer `CURRENT`), so when some listed entries
    /// vanish before they are read, the journal is listed again: the
    /// entries read that are still listed are kept, the new ones read,
    /// until one listing's entries are all read — the journal as it was at
    /// that listing.
    fn read_index(&self, client: &Client, below: Option<u64>) -> io::Result<Index> {
        let mut have = std::mem::take(&mut *lock(&self.read));
        for _ in 0..READ_ATTEMPTS {
            let mut listed = self.list(client, None)?;
            if let Some(b) = below {
                listed.retain(|&s| s < b);
            }
            let keep: std::collections::HashSet<u64> = listed.iter().copied().collect();
            have.retain(|s, _| keep.contains(s));
            let missing: Vec<u64> = listed
                .into_iter()
                .filter(|s| !have.contains_key(s))
                .collect();
            let (entries, vanished) = self.fetch(client, &missing)?;
            have.extend(entries);
            if vanished == 0 {
                let mut index = Index::default();
                for (s, e) in &have {
                    index.add(*s, e.clone());
                }
                *lock(&self.read) = have;
                return Ok(index);
            }
        }
        Err(io::Error::other(format!(
            "the store's journal ({}) changed under {READ_ATTEMPTS} readings in a row",
            self.dir
        )))
    }

    /// The index, read from the bucket the first time.
    fn index(&self, client: &Client) -> io::Result<MutexGuard<'_, Option<Index>>> {
        let mut g = lock(&self.index);
        if g.is_none() {
            *g = Some(self.read_index(client, None)?);
        }
        Ok(g)
    }

    /// Takes the writer's place (module docs): a fence some numbers past
    /// the last entry listed, every number between filled (each fill
    /// either lands, or finds an older writer's entry there), then the
    /// journal below the fence read. Leaping ahead lets a fence land while
    /// an older writer keeps writing: that writer stops at the first
    /// filled number, and the fill makes the journal below the fence
    /// final before it is read. A handle that holds the store already
    /// does nothing.
    pub(super) fn take_writer(&self, client: &Client, marker: Bytes) -> io::Result<()> {
        let mut w = lock(&self.writer);
        if w.next.is_some() {
            return Ok(());
        }
        if self.is_fixed() {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                "a kept checkpoint opens read-only",
            ));
        }
        if self.marker_due {
            let key = self
                .dir
                .parts()
                .take(self.dir.parts().count() - 1)
                .collect::<ObjectPath>()
                .join(super::STORE_OBJECT);
            client.put(&key, marker)?;
        }
        let fence = Entry::Fence {
            writer: self.whoami.clone(),
        }
        .encode();
        let mut leap = FENCE_LEAP;
        for _ in 0..FENCE_ATTEMPTS {
            let last = self.list(client, None)?.last().copied().unwrap_or(0);
            let seq = last + leap;
            if !client.put_create(&self.key(seq), fence.clone())? {
                // Another writer is as far: leap further.
                leap = leap.saturating_mul(2);
                continue;
            }
            for n in last + 1..seq {
                client.put_create(&self.key(n), fence.clone())?;
            }
            w.next = Some(seq + 1);
            w.epoch = seq;
            let index = self.read_index(client, Some(seq))?;
            *lock(&self.index) = Some(index);
            return Ok(());
        }
        Err(io::Error::other(format!(
            "the store's journal ({}) kept moving: {FENCE_ATTEMPTS} fences in a row found \
             another entry in their place",
            self.dir
        )))
    }

    /// Makes `files` (whole, by path) this handle's journal for good: a
    /// kept checkpoint's, opened read-only.
    pub(super) fn fix(&self, files: Vec<(String, Bytes)>) {
        let mut index = Index::default();
        for (path, data) in files {
            index.add(0, Entry::Whole { path, data });
        }
        *lock(&self.index) = Some(index);
        self.fixed.store(true, std::sync::atomic::Ordering::Release);
    }

    fn is_fixed(&self) -> bool {
        self.fixed.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Drops what a reader read of the journal: the next access lists it
    /// again. The writer's index is the journal (no other handle writes
    /// it) and stays; so does a kept checkpoint's.
    pub(super) fn forget(&self) {
        if lock(&self.writer).next.is_none() && !self.is_fixed() {
            *lock(&self.index) = None;
        }
    }

    /// This handle's fence number, once it holds the store.
    pub(super) fn epoch(&self) -> Option<u64> {
        let w = lock(&self.writer);
        w.next.map(|_| w.epoch)
    }

    /// Writes `entry` at the next number. A refused create is a fence-out
    /// (unless the entry there is this one: a retried PUT that had
    /// landed); any failure stops every later entry.
    fn put(&self, client: &Client, entry: &Entry) -> io::Result<u64> {
        let mut w = lock(&self.writer);
        if let Some(f) = &w.failed {
            return Err(f.to_io());
        }
        let Some(seq) = w.next else {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                "this handle has not taken the store's writer's place (a store opened \
                 read-only writes nothing)",
            ));
        };
        let body = entry.encode();
        let created = match client.put_create(&self.key(seq), body.clone()) {
            Ok(c) => c,
            Err(e) => {
                w.failed = Some(Failed::Other(e.to_string()));
                return Err(e);
            }
        };
        if !created {
            let there = client.get(&self.key(seq)).ok();
            if there.as_ref() != Some(&body) {
                let e = there.as_ref().and_then(|b| Entry::decode(b).ok());
                return Err(fenced_out(&mut w, seq, e));
            }
        }
        w.next = Some(seq + 1);
        Ok(seq)
    }

    /// Checks that no entry follows this writer's last: a newer writer has
    /// not taken the store. Before a deletion that a listing chose.
    pub(super) fn confirm(&self, client: &Client) -> io::Result<()> {
        let mut w = lock(&self.writer);
        if let Some(f) = &w.failed {
            return Err(f.to_io());
        }
        let Some(next) = w.next else {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                "this handle has not taken the store's writer's place",
            ));
        };
        let after = self.list(client, Some(next - 1))?;
        if let Some(&seq) = after.first() {
            let e = self.fetch(client, &[seq])?.0.pop().map(|(_, e)| e);
            return Err(fenced_out(&mut w, seq, e));
        }
        Ok(())
    }

    /// Appends `data` at `offset` of `path` (an entry of its own; an empty
    /// one makes the file exist).
    pub(super) fn append(
        &self,
        client: &Client,
        path: &str,
        offset: u64,
        data: Bytes,
    ) -> io::Result<()> {
        let len = data.len() as u64;
        let seq = self.put(
            client,
            &Entry::Append {
                path: path.to_string(),
                offset,
                data,
            },
        )?;
        let mut g = self.index(client)?;
        let pieces = g
            .as_mut()
            .expect("read")
            .appended
            .entry(path.to_string())
            .or_default();
        pieces.push(Piece {
            seq,
            offset,
            len,
            // Its writer does not read it back: a reader elsewhere GETs it.
            data: None,
        });
        Ok(())
    }

    /// Replaces the whole of `path` by `data`, then deletes the entries
    /// that held it before.
    pub(super) fn replace(&self, client: &Client, path: &str, data: Bytes) -> io::Result<()> {
        let seq = self.put(
            client,
            &Entry::Whole {
                path: path.to_string(),
                data: data.clone(),
            },
        )?;
        let mut older = Vec::new();
        {
            let mut g = self.index(client)?;
            let index = g.as_mut().expect("read");
            if let Some(w) = index.whole.get_mut(path) {
                older = std::mem::take(&mut w.older);
                older.push(w.seq);
            }
            index.whole.insert(
                path.to_string(),
                WholeFile {
                    seq,
                    data,
                    older: Vec::new(),
                },
            );
        }
        for s in older {
            client.delete(&self.key(s))?;
        }
        Ok(())
    }

    /// Deletes `path`'s entries (an appended file's last piece first, so
    /// an interrupted removal leaves a shorter file, never a hole).
    pub(super) fn remove(&self, client: &Client, path: &str) -> io::Result<()> {
        let mut g = self.index(client)?;
        let index = g.as_mut().expect("read");
        let seqs: Vec<u64> = if let Some(p) = index.appended.remove(path) {
            p.iter().rev().map(|p| p.seq).collect()
        } else if let Some(w) = index.whole.remove(path) {
            std::iter::once(w.seq).chain(w.older).collect()
        } else {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("{path} is not in the store's journal"),
            ));
        };
        drop(g);
        for s in seqs {
            client.delete(&self.key(s))?;
        }
        Ok(())
    }

    /// Whether `path` is in the journal.
    pub(super) fn exists(&self, client: &Client, path: &str) -> io::Result<bool> {
        let g = self.index(client)?;
        let index = g.as_ref().expect("read");
        Ok(index.appended.contains_key(path) || index.whole.contains_key(path))
    }

    /// The length of `path` (`NotFound` if the journal lacks it).
    pub(super) fn len(&self, client: &Client, path: &str) -> io::Result<u64> {
        let g = self.index(client)?;
        let index = g.as_ref().expect("read");
        if let Some(w) = index.whole.get(path) {
            return Ok(w.data.len() as u64);
        }
        let pieces = index.appended.get(path).ok_or_else(|| not_found(path))?;
        Ok(contiguous(pieces).1)
    }

    /// The bytes of `path`. An appended file is its pieces in order; for
    /// the writer a hole (a piece deleted behind the store) is corruption
    /// naming its offset, for a reader the file ends there (the pieces
    /// past it may have landed after the listing it read).
    pub(super) fn read(&self, client: &Client, path: &str) -> io::Result<Bytes> {
        let holder = lock(&self.writer).next.is_some();
        let missing: Vec<u64> = {
            let g = self.index(client)?;
            let index = g.as_ref().expect("read");
            if let Some(w) = index.whole.get(path) {
                return Ok(w.data.clone());
            }
            let pieces = index.appended.get(path).ok_or_else(|| not_found(path))?;
            let (n, _) = contiguous(pieces);
            pieces[..n]
                .iter()
                .filter(|p| p.data.is_none() && p.len > 0)
                .map(|p| p.seq)
                .collect()
        };
        let (fetched, _) = self.fetch(client, &missing)?;
        let mut g = self.index(client)?;
        let index = g.as_mut().expect("read");
        let pieces = index
            .appended
            .get_mut(path)
            .ok_or_else(|| not_found(path))?;
        for (s, e) in fetched {
            if let (Some(p), Entry::Append { data, .. }) =
                (pieces.iter_mut().find(|p| p.seq == s), e)
            {
                p.data = Some(data);
            }
        }
        let (n, end) = contiguous(pieces);
        if holder && n < pieces.len() {
            return Err(self.corruption(
                path,
                end,
                format!(
                    "the journal entry holding these bytes is missing (the next one, {}, \
                     starts at offset {})",
                    Self::entry_label(pieces[n].seq),
                    pieces[n].offset
                ),
            ));
        }
        let mut out = Vec::with_capacity(end as usize);
        for p in &pieces[..n] {
            match &p.data {
                Some(d) => out.extend_from_slice(d),
                None if p.len == 0 => {}
                None => {
                    return Err(self.corruption(
                        path,
                        p.offset,
                        format!(
                            "journal entry {} is missing (deleted behind the store)",
                            Self::entry_label(p.seq)
                        ),
                    ));
                }
            }
        }
        Ok(Bytes::from(out))
    }

    /// The names of the files directly in the folder `dir` (`""` the
    /// store's directory, else a keyspace's), and the keyspace folders
    /// holding files (for `""`).
    pub(super) fn names_in(&self, client: &Client, dir: &str) -> io::Result<Vec<String>> {
        let g = self.index(client)?;
        let index = g.as_ref().expect("read");
        let mut out = Vec::new();
        for path in index.appended.keys().chain(index.whole.keys()) {
            if path == LINKS_FILE {
                continue;
            }
            let (d, name) = path.rsplit_once('/').unwrap_or(("", path.as_str()));
            if d == dir {
                out.push(name.to_string());
            } else if dir.is_empty() && !out.iter().any(|n| n == d) {
                out.push(d.to_string());
            }
        }
        Ok(out)
    }
}

/// Stops writer `w` for good: entry `seq`, `e` as read, is another
/// writer's (a fence names its writer).
fn fenced_out(w: &mut Writer, seq: u64, e: Option<Entry>) -> io::Error {
    let by = match e {
        Some(Entry::Fence { writer }) => writer,
        _ => "another writer".to_string(),
    };
    let f = Failed::Fenced {
        at: format!("journal entry {}", Journal::entry_label(seq)),
        by,
    };
    w.failed = Some(f.clone());
    f.to_io()
}

fn not_found(path: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::NotFound,
        format!("{path} is not in the store's journal"),
    )
}

/// How many of `pieces` follow one another from offset 0, and where they
/// end.
fn contiguous(pieces: &[Piece]) -> (usize, u64) {
    let mut end = 0;
    for (i, p) in pieces.iter().enumerate() {
        if p.offset != end {
            return (i, end);
        }
        end += p.len;
    }
    (pieces.len(), end)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_round_trip_and_damage_is_refused() {
        let entries = [
            Entry::Append {
                path: "000007.log".into(),
                offset: 4096,
                data: Bytes::from_static(b"a record"),
            },
            Entry::Whole {
                path: "keyspace-000001/CURRENT".into(),
                data: Bytes::from_static(b"MANIFEST-000004\n"),
            },
            Entry::Fence {
                writer: "host, process 7".into(),
            },
            Entry::Append {
                path: "MANIFEST-000002".into(),
                offset: 0,
                data: Bytes::new(),
            },
        ];
        for e in entries {
            let b = e.encode();
            assert_eq!(Entry::decode(&b).unwrap(), e);
            for i in 0..b.len() {
                let mut d = b.to_vec();
                d[i] ^= 0x10;
                assert!(Entry::decode(&Bytes::from(d)).is_err(), "{e:?} byte {i}");
            }
            for n in 0..b.len() {
                assert!(Entry::decode(&b.slice(..n)).is_err());
            }
        }
    }

    #[test]
    fn entry_names_sort_as_numbers() {
        assert_eq!(entry_name(42), "00000000000000000042");
        assert_eq!(parse_entry_name("00000000000000000042"), Some(42));
        for bad in ["42", "0000000000000000004x", "000000000000000000042"] {
            assert_eq!(parse_entry_name(bad), None);
        }
        assert!(entry_name(9) < entry_name(10));
    }

    #[test]
    fn an_appended_file_is_its_pieces_up_to_the_first_hole() {
        let p = |seq, offset, len| Piece {
            seq,
            offset,
            len,
            data: None,
        };
        assert_eq!(contiguous(&[]), (0, 0));
        assert_eq!(contiguous(&[p(1, 0, 0), p(2, 0, 10), p(3, 10, 5)]), (3, 15));
        assert_eq!(contiguous(&[p(1, 0, 10), p(3, 20, 5)]), (1, 10));
        assert_eq!(contiguous(&[p(2, 10, 5)]), (0, 0));
    }
}
