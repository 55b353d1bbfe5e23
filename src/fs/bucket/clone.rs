//! Clones: a new store kept wholly in the bucket, under a prefix of its
//! own, made from a kept checkpoint of another ([`BucketFs::clone_checkpoint`])
//! without copying a table. The clone's journal starts with the
//! checkpoint's small files and a `LINKS` file (docs/format.md §17) naming,
//! for each of the checkpoint's tables, the object under the source's
//! prefix that holds it. The clone reads a linked table there, never
//! deletes it (its compactions only stop naming it), and writes every new
//! table under its own prefix, numbered past the checkpoint's; the
//! source's checkpoint keeps the linked tables as long as it is kept.

use std::collections::HashMap;
use std::io;
use std::path::Path;

use bytes::Bytes;
use object_store::path::Path as ObjectPath;

use super::journal::LINKS_FILE;
use super::{BucketConfig, BucketFs, Shared};
use crate::error::{Error, Result};
use crate::fs::FileSystem;

/// `LINKS`: one line per linked table, its path relative to the store's
/// directory, a tab, the object key holding it.
fn encode(links: &[(String, String)]) -> Bytes {
    let mut s = String::new();
    for (rel, key) in links {
        s.push_str(rel);
        s.push('\t');
        s.push_str(key);
        s.push('\n');
    }
    Bytes::from(s)
}

fn decode(b: &[u8]) -> io::Result<HashMap<String, ObjectPath>> {
    let bad = || {
        io::Error::new(
            io::ErrorKind::InvalidData,
            "the clone's LINKS file is damaged",
        )
    };
    let text = std::str::from_utf8(b).map_err(|_| bad())?;
    let mut out = HashMap::new();
    for line in text.lines() {
        let (rel, key) = line.split_once('\t').ok_or_else(bad)?;
        out.insert(rel.to_string(), ObjectPath::from(key));
    }
    Ok(out)
}

impl Shared {
    /// The object that holds the table whose own key is `key`, if the
    /// store is a clone that links it from another prefix.
    pub(super) fn linked(&self, key: &ObjectPath) -> io::Result<Option<ObjectPath>> {
        let Some(j) = &self.journal else {
            return Ok(None);
        };
        let links = match j.read(&self.client, LINKS_FILE) {
            Ok(b) => decode(&b)?,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        };
        let rel: Vec<String> = key
            .parts()
            .skip(self.prefix.len())
            .map(|p| p.as_ref().to_string())
            .collect();
        Ok(links.get(&rel.join("/")).cloned())
    }

    /// The names of the tables linked into the folder `dir` (`""` the
    /// store's directory).
    pub(super) fn linked_in(&self, dir: &str) -> io::Result<Vec<String>> {
        let Some(j) = &self.journal else {
            return Ok(Vec::new());
        };
        let links = match j.read(&self.client, LINKS_FILE) {
            Ok(b) => decode(&b)?,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(e),
        };
        Ok(links
            .keys()
            .filter_map(|rel| {
                let (d, name) = rel.rsplit_once('/').unwrap_or(("", rel.as_str()));
                (d == dir).then(|| name.to_string())
            })
            .collect())
    }
}

impl BucketFs {
    /// Makes a new store kept wholly in the bucket under `into_prefix`
    /// from the kept checkpoint `name` of the whole store `config` names
    /// (same bucket and endpoint): a clone, writable on its own
    /// ([`crate::Db::open`] on a `BucketFs` of `into_prefix`), whose
    /// writes never touch the source's objects. No table is copied: the
    /// clone reads the checkpoint's tables under the source's prefix, so
    /// keep the checkpoint as long as the clone names any of them.
    /// Returns how many tables the clone links. `into_prefix` must hold no
    /// store.
    pub fn clone_checkpoint(config: BucketConfig, name: &str, into_prefix: &str) -> Result<usize> {
        let same = |a: &str| a.trim_matches('/').to_string();
        if same(&config.prefix) == same(into_prefix) {
            return Err(Error::invalid(format!(
                "clone of checkpoint {name:?} into {into_prefix:?}: that is the source's prefix"
            )));
        }
        let (src, _) = Self::whole_store_reader(config.clone())?;
        let sh = &src.shared;
        let c = sh
            .checkpoints
            .as_ref()
            .expect("a whole store")
            .get(&sh.client, name)
            .map_err(|e| Error::io(format!("read checkpoint {name:?}"), e))?;
        let mut links = Vec::with_capacity(c.tables.len());
        for rel in &c.tables {
            let mut own = ObjectPath::from_iter(sh.prefix.iter().map(String::as_str));
            for part in rel.split('/') {
                own = own.join(part);
            }
            // A clone of a clone links where its source did.
            let held = sh
                .linked(&own)
                .map_err(|e| Error::io("read the source's LINKS", e))?
                .unwrap_or(own);
            links.push((rel.clone(), held.to_string()));
        }
        let (dst, dir) = Self::whole_store_reader(config.prefix(into_prefix))?;
        let out: &dyn FileSystem = dst.as_ref();
        let ctx = |what: &str| format!("clone of checkpoint {name:?} into {into_prefix:?}: {what}");
        let current = dir.join("CURRENT");
        if out.file_len(&current).is_ok() {
            return Err(Error::invalid(ctx("that prefix holds a store already")));
        }
        out.take_writer(&dir)
            .map_err(|e| Error::io(ctx("take the writer's place"), e))?;
        if out.file_len(&current).is_ok() {
            return Err(Error::invalid(ctx("that prefix holds a store already")));
        }
        let d = &dst.shared;
        d.journal()
            .replace(&d.client, LINKS_FILE, encode(&links))
            .map_err(|e| Error::io(ctx("write LINKS"), e))?;
        let files: Vec<(String, Bytes)> = c
            .files
            .into_iter()
            .filter(|(rel, _)| rel != LINKS_FILE)
            .collect();
        crate::db::checkpoint::write_store_files(out, Path::new(&dir), &files)?;
        Ok(links.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_round_trip() {
        let links = vec![
            ("000007.sst".to_string(), "src/000007.sst".to_string()),
            (
                "keyspace-000001/000009.sst".to_string(),
                "src/keyspace-000001/000009.sst".to_string(),
            ),
        ];
        let back = decode(&encode(&links)).unwrap();
        assert_eq!(back.len(), 2);
        assert_eq!(back["000007.sst"], ObjectPath::from("src/000007.sst"));
        assert!(decode(b"no tab here\n").is_err());
    }
}
