//! A store's objects as a whole: listed under its prefix at any depth,
//! moved with a keyspace's directory, removed with the store.

use std::io;
use std::path::Path;

use object_store::path::Path as ObjectPath;

use super::{BucketFs, PROBE_OBJECT, STORE_OBJECT, client};
use crate::db::filename::{self, FileKind};
use crate::error::{Error, Result};

impl BucketFs {
    /// The objects under `dir`'s key, at any depth.
    pub(super) fn objects_under(&self, dir: &ObjectPath) -> io::Result<Vec<ObjectPath>> {
        let store = self.shared.client.store.clone();
        let d = dir.clone();
        client::add(&self.shared.client.counters.lists, 1);
        self.shared
            .client
            .run(async move {
                let mut out = Vec::new();
                let mut dirs = vec![d];
                while let Some(d) = dirs.pop() {
                    let r = store.list_with_delimiter(Some(&d)).await?;
                    out.extend(r.objects.into_iter().map(|m| m.location));
                    dirs.extend(r.common_prefixes);
                }
                Ok(out)
            })?
            .map_err(|e| client::io_error("LIST", dir, e))
    }

    /// Renames the directory `from` (in the store's directory) to `to`,
    /// moving the objects of its tables to their new keys: each is copied,
    /// the local directory renamed, then the old objects deleted, so every
    /// table is at its new key before the directory has its new name.
    pub(super) fn rename_dir(&self, from: &Path, to: &Path, old: ObjectPath) -> io::Result<()> {
        let new = self.shared.dir_key(to).ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::Unsupported,
                format!(
                    "{} holds tables in the bucket; {} is outside the store's directory",
                    from.display(),
                    to.display()
                ),
            )
        })?;
        let objects = self.objects_under(&old)?;
        let old_len = old.parts().count();
        for o in &objects {
            let rest: Vec<_> = o.parts().skip(old_len).collect();
            let dest = ObjectPath::from_iter(new.parts().chain(rest));
            self.shared.client.copy(o, &dest)?;
        }
        std::fs::rename(from, to)?;
        for o in &objects {
            self.forget(o);
            self.shared.client.delete(o)?;
        }
        Ok(())
    }

    /// Deletes the store's objects from the bucket — every table under the
    /// prefix, its keyspaces' too, then the prefix's marker
    /// ([`STORE_OBJECT`]) and [`PROBE_OBJECT`] — so the prefix belongs to no
    /// store; objects of other names are left. Returns the objects deleted.
    /// For a store that is closed and to be thrown away (the local
    /// directory, with its MANIFEST, is the caller's to remove): a store
    /// reopened afterwards finds its tables gone.
    pub fn remove_store(&self) -> Result<u64> {
        let root = ObjectPath::from_iter(self.shared.prefix.iter().map(String::as_str));
        let objects = self
            .objects_under(&root)
            .map_err(|e| Error::io(format!("list the bucket prefix {root}"), e))?;
        let is_table = |o: &ObjectPath| {
            o.filename()
                .is_some_and(|n| matches!(filename::parse_file_name(n), Some((FileKind::Table, _))))
        };
        let (tables, rest): (Vec<_>, Vec<_>) = objects.into_iter().partition(is_table);
        let ours = rest.into_iter().filter(|o| {
            o.parts().count() == root.parts().count() + 1
                && o.filename()
                    .is_some_and(|n| n == STORE_OBJECT || n == PROBE_OBJECT)
        });
        let mut n = 0;
        for o in tables.iter().chain(ours.collect::<Vec<_>>().iter()) {
            self.forget(o);
            self.shared
                .client
                .delete(o)
                .map_err(|e| Error::io(format!("delete object {o}"), e))?;
            n += 1;
        }
        Ok(n)
    }
}
