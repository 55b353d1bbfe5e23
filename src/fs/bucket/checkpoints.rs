//! Checkpoints of a store wholly in a bucket, kept beside it
//! ([`crate::Db::checkpoint_in_bucket`]): each one object,
//! `PREFIX` + `checkpoints/` + its name, written once with a conditional
//! create, holding the store's small files as of its moment and the names
//! of the tables they name (docs/format.md §17). No table is copied: the
//! writer keeps every table a checkpoint names (`pinned`, checked before
//! each deletion), and its next open deletes those only deleted
//! checkpoints kept.

use std::collections::{HashMap, HashSet};
use std::io;
use std::sync::Mutex;

use bytes::{BufMut, Bytes};
use object_store::path::Path as ObjectPath;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::client::Client;
use super::{BucketConfig, BucketFs, lock, unsupported};
use crate::error::{Error, Result};
use crate::fs::kept::{CheckpointInfo, KeptCheckpoint};

/// The checkpoints' folder under the prefix.
pub const CHECKPOINT_DIR: &str = "checkpoints";

const MAGIC: &[u8; 4] = b"BLK1";

/// The object's bytes: magic `BLK1`, the sequence (u64), the creation time
/// (u64, ms since the epoch), the files (u32 count; each a u16 path length,
/// the path, a u32 data length, the data), the tables (u32 count; each a
/// u16 path length and the path), then a CRC-32 of everything before it;
/// integers little-endian.
pub(super) fn encode(c: &KeptCheckpoint) -> io::Result<Bytes> {
    let too_long = |what: &str| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("a checkpoint's {what} is too long to record"),
        )
    };
    let mut b = Vec::new();
    b.put_slice(MAGIC);
    b.put_u64_le(c.sequence);
    b.put_u64_le(c.created_unix_ms);
    b.put_u32_le(u32::try_from(c.files.len()).map_err(|_| too_long("file list"))?);
    for (path, data) in &c.files {
        b.put_u16_le(u16::try_from(path.len()).map_err(|_| too_long("file path"))?);
        b.put_slice(path.as_bytes());
        b.put_u32_le(u32::try_from(data.len()).map_err(|_| too_long("file"))?);
        b.put_slice(data);
    }
    b.put_u32_le(u32::try_from(c.tables.len()).map_err(|_| too_long("table list"))?);
    for t in &c.tables {
        b.put_u16_le(u16::try_from(t.len()).map_err(|_| too_long("table path"))?);
        b.put_slice(t.as_bytes());
    }
    let crc = crc32fast::hash(&b);
    b.put_u32_le(crc);
    Ok(Bytes::from(b))
}

/// Reads what [`encode`] wrote; damage is an error saying what.
pub(super) fn decode(b: &[u8]) -> Result<KeptCheckpoint, String> {
    if b.len() < 4 + 8 + 8 + 4 + 4 + 4 || &b[..4] != MAGIC {
        return Err("not a checkpoint (no BLK1 magic)".into());
    }
    let (body, crc) = b.split_at(b.len() - 4);
    if crc32fast::hash(body).to_le_bytes() != crc {
        return Err("checksum mismatch".into());
    }
    let mut at: usize = 4;
    let mut take = |n: usize| -> Result<&[u8], String> {
        let s = body
            .get(at..at.checked_add(n).ok_or("length overflows")?)
            .ok_or("cut short")?;
        at += n;
        Ok(s)
    };
    let u64_at = |s: &[u8]| u64::from_le_bytes(s.try_into().expect("8 bytes"));
    let sequence = u64_at(take(8)?);
    let created_unix_ms = u64_at(take(8)?);
    let count = |s: &[u8]| u32::from_le_bytes(s.try_into().expect("4 bytes")) as usize;
    let short = |s: &[u8]| u16::from_le_bytes(s.try_into().expect("2 bytes")) as usize;
    let text = |s: &[u8]| String::from_utf8(s.to_vec()).map_err(|_| "a path is not UTF-8");
    let files_n = count(take(4)?);
    let mut files = Vec::with_capacity(files_n.min(1024));
    for _ in 0..files_n {
        let n = short(take(2)?);
        let path = text(take(n)?)?;
        let n = count(take(4)?);
        files.push((path, Bytes::copy_from_slice(take(n)?)));
    }
    let tables_n = count(take(4)?);
    let mut tables = Vec::with_capacity(tables_n.min(1 << 16));
    for _ in 0..tables_n {
        let n = short(take(2)?);
        tables.push(text(take(n)?)?);
    }
    if at != body.len() {
        return Err(format!("{} bytes past the tables", body.len() - at));
    }
    Ok(KeptCheckpoint {
        files,
        tables,
        sequence,
        created_unix_ms,
    })
}

/// The checkpoints of one store, as one handle reads them: each decoded
/// object is kept by name and ETag (an object is written once; a name
/// taken again after a deletion is another ETag).
#[derive(Debug)]
pub(super) struct Checkpoints {
    /// `PREFIX/checkpoints`.
    dir: ObjectPath,
    /// The prefix, to which a checkpoint's table paths are relative.
    prefix: ObjectPath,
    read: Mutex<HashMap<String, (Option<String>, KeptCheckpoint)>>,
}

impl Checkpoints {
    pub(super) fn new(prefix: &ObjectPath) -> Self {
        Checkpoints {
            dir: prefix.clone().join(CHECKPOINT_DIR),
            prefix: prefix.clone(),
            read: Mutex::default(),
        }
    }

    fn key(&self, name: &str) -> ObjectPath {
        self.dir.clone().join(name)
    }

    fn damaged(key: &ObjectPath, what: String) -> io::Error {
        crate::error::IoCause::Corruption {
            file: std::path::PathBuf::from(key.to_string()),
            offset: 0,
            what: format!("checkpoint object damaged: {what}"),
        }
        .into_io()
    }

    /// Writes `c` as `name`, refusing a name taken.
    pub(super) fn put(&self, client: &Client, name: &str, c: &KeptCheckpoint) -> io::Result<()> {
        let key = self.key(name);
        if !client.put_create(&key, encode(c)?)? {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!("a checkpoint named {name:?} exists ({key})"),
            ));
        }
        Ok(())
    }

    /// Deletes `name` (`NotFound` if there is no such checkpoint).
    pub(super) fn delete(&self, client: &Client, name: &str) -> io::Result<()> {
        let key = self.key(name);
        if let Err(e) = client.head(&key) {
            return Err(match e.kind() {
                io::ErrorKind::NotFound => io::Error::new(
                    io::ErrorKind::NotFound,
                    format!("no checkpoint named {name:?}"),
                ),
                _ => e,
            });
        }
        client.delete(&key)?;
        lock(&self.read).remove(name);
        Ok(())
    }

    /// Every checkpoint, by name: one LIST, and a GET of each not read
    /// before.
    pub(super) fn all(&self, client: &Client) -> io::Result<Vec<(String, KeptCheckpoint)>> {
        let listed = client.list(&self.dir)?;
        let mut read = lock(&self.read);
        let mut out = Vec::with_capacity(listed.len());
        let mut names = HashSet::new();
        for m in listed {
            let Some(name) = m.location.filename().map(str::to_string) else {
                continue;
            };
            names.insert(name.clone());
            let c = match read.get(&name) {
                Some((tag, c)) if *tag == m.e_tag => c.clone(),
                _ => {
                    let bytes = match client.get(&m.location) {
                        Ok(b) => b,
                        // Deleted since the listing.
                        Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                        Err(e) => return Err(e),
                    };
                    let c = decode(&bytes).map_err(|w| Self::damaged(&m.location, w))?;
                    read.insert(name.clone(), (m.e_tag.clone(), c.clone()));
                    c
                }
            };
            out.push((name, c));
        }
        read.retain(|n, _| names.contains(n));
        out.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(out)
    }

    /// What a listing shows of each checkpoint.
    pub(super) fn infos(&self, client: &Client) -> io::Result<Vec<CheckpointInfo>> {
        Ok(self
            .all(client)?
            .into_iter()
            .map(|(name, c)| CheckpointInfo {
                name,
                sequence: c.sequence,
                tables: c.tables.len(),
                created_unix_ms: c.created_unix_ms,
            })
            .collect())
    }

    /// The checkpoint `name`.
    pub(super) fn get(&self, client: &Client, name: &str) -> io::Result<KeptCheckpoint> {
        let key = self.key(name);
        let bytes = client.get(&key).map_err(|e| match e.kind() {
            io::ErrorKind::NotFound => io::Error::new(
                io::ErrorKind::NotFound,
                format!("no checkpoint named {name:?} ({key})"),
            ),
            _ => e,
        })?;
        decode(&bytes).map_err(|w| Self::damaged(&key, w))
    }

    /// The object keys of every table some checkpoint names.
    pub(super) fn pinned(&self, client: &Client) -> io::Result<HashSet<String>> {
        let mut out = HashSet::new();
        for (_, c) in self.all(client)? {
            for t in &c.tables {
                let mut key = self.prefix.clone();
                for part in t.split('/') {
                    key = key.join(part);
                }
                out.insert(key.to_string());
            }
        }
        Ok(out)
    }
}

impl BucketFs {
    /// A file system to open the kept checkpoint `name` of the whole store
    /// `config` names with [`crate::Db::open_read_only`], and the directory
    /// to open it in: as [`BucketFs::whole_store_reader`], but the store's
    /// small files are the checkpoint's (one GET), its tables the store's,
    /// and [`crate::Db::refresh`] leaves it as it is. Fails with
    /// `NotFound` naming the checkpoint when there is none of that name.
    ///
    /// ```no_run
    /// use bloomlsm::fs::bucket::{BucketConfig, BucketFs};
    /// use bloomlsm::{Db, Options};
    ///
    /// let config = BucketConfig::new("my-bucket", "stores/orders/", "unused");
    /// let (fs, dir) = BucketFs::checkpoint_reader(config, "nightly")?;
    /// let db = Db::open_read_only(&dir, Options::default().fs(fs))?;
    /// println!("{:?}", db.get("k")?);
    /// # Ok::<(), bloomlsm::Error>(())
    /// ```
    pub fn checkpoint_reader(config: BucketConfig, name: &str) -> Result<(Arc<BucketFs>, PathBuf)> {
        crate::fs::kept::check_name(name).map_err(|e| Error::invalid(e.to_string()))?;
        let (fs, dir) = Self::whole_store_reader(config)?;
        fs.fix_to_checkpoint(name)?;
        Ok((fs, dir))
    }

    /// Makes the kept checkpoint `name` the store this whole store's
    /// handle reads.
    pub(super) fn fix_to_checkpoint(&self, name: &str) -> Result<()> {
        let sh = &self.shared;
        let cps = sh.checkpoints.as_ref().expect("a whole store");
        let c = cps
            .get(&sh.client, name)
            .map_err(|e| Error::io(format!("read checkpoint {name:?}"), e))?;
        sh.journal().fix(c.files);
        Ok(())
    }

    /// The kept checkpoints of the store in `dir`, if it is a whole store's
    /// directory.
    pub(super) fn checkpoints_of(&self, dir: &Path) -> io::Result<&Checkpoints> {
        match (&self.shared.checkpoints, self.shared.journal_dir(dir)) {
            (Some(c), Some(d)) if d.is_empty() => Ok(c),
            _ => Err(unsupported(format!(
                "{} is not the directory of a store kept wholly in a bucket: only such a store \
                 keeps checkpoints beside it",
                dir.display()
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> KeptCheckpoint {
        KeptCheckpoint {
            files: vec![
                ("CURRENT".into(), Bytes::from_static(b"MANIFEST-000009\n")),
                (
                    "keyspace-000001/OPTIONS".into(),
                    Bytes::from_static(b"x=1\n"),
                ),
            ],
            tables: vec!["000007.sst".into(), "keyspace-000001/000008.sst".into()],
            sequence: 42,
            created_unix_ms: 1_764_000_000_000,
        }
    }

    #[test]
    fn checkpoints_round_trip_and_damage_is_refused() {
        let c = sample();
        let b = encode(&c).unwrap();
        assert_eq!(decode(&b).unwrap(), c);
        for i in 0..b.len() {
            let mut d = b.to_vec();
            d[i] ^= 0x10;
            assert!(decode(&d).is_err(), "byte {i} flipped");
        }
        for n in 0..b.len() {
            assert!(decode(&b[..n]).is_err(), "cut to {n}");
        }
    }
}
