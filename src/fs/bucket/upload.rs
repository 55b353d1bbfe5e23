//! [`upload_store`]: a closed store on the local disk copied into a bucket
//! file system's directory, its tables becoming objects.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::BucketFs;
use crate::db::filename::{self, FileKind};
use crate::error::{Error, Result};
use crate::fs::FileSystem;

/// Tables uploaded at once.
const UPLOADS_IN_FLIGHT: usize = 8;

/// Bytes read from a local table per write into its upload.
const PIECE: usize = 8 << 20;

/// What [`upload_store`] copied.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Uploaded {
    /// Tables uploaded.
    pub tables: u64,
    /// Their bytes.
    pub table_bytes: u64,
    /// Other files (MANIFEST, CURRENT, OPTIONS, logs) copied to the local
    /// directory.
    pub local_files: u64,
    /// Their bytes.
    pub local_bytes: u64,
}

/// Copies the store in `from` — closed, on the local disk — to `fs`'s store
/// directory ([`super::BucketConfig::dir`]): every table (keyspaces' too)
/// uploaded as an object, every other file copied beside it on the local
/// disk, `LOCK` left out. The tables go first and `CURRENT` last, so the
/// copy is a store only once it is whole: a copy cut short has no
/// `CURRENT` and opens as no store. Refuses a target directory that holds
/// anything, locally or in the bucket.
pub fn upload_store(fs: &BucketFs, from: &Path) -> Result<Uploaded> {
    let to = fs.config().dir.clone();
    let ctx = |what: &str, p: &Path| format!("{what} {}", p.display());
    if !from.join("CURRENT").is_file() {
        return Err(Error::invalid(format!(
            "{} holds no store (no CURRENT)",
            from.display()
        )));
    }
    fs.create_dir_all(&to)
        .map_err(|e| Error::io(ctx("create", &to), e))?;
    let there = fs
        .list_dir(&to)
        .map_err(|e| Error::io(ctx("list", &to), e))?;
    if !there.is_empty() {
        return Err(Error::invalid(format!(
            "{} (and its bucket prefix) is not empty: an upload makes a new store",
            to.display()
        )));
    }
    let mut tables = Vec::new();
    let mut locals = Vec::new();
    collect(from, Path::new(""), &mut tables, &mut locals)?;
    for rel in tables.iter().chain(&locals) {
        if let Some(d) = rel.parent().filter(|d| !d.as_os_str().is_empty()) {
            let d = to.join(d);
            fs.create_dir_all(&d)
                .map_err(|e| Error::io(ctx("create", &d), e))?;
        }
    }
    let mut out = Uploaded::default();
    let next = Mutex::new(tables.iter());
    let done = Mutex::new((0u64, 0u64));
    let results: Vec<Result<()>> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..UPLOADS_IN_FLIGHT)
            .map(|_| {
                s.spawn(|| -> Result<()> {
                    loop {
                        let Some(rel) = next.lock().unwrap_or_else(|p| p.into_inner()).next()
                        else {
                            return Ok(());
                        };
                        let n = upload_table(fs, &from.join(rel), &to.join(rel))?;
                        let mut d = done.lock().unwrap_or_else(|p| p.into_inner());
                        d.0 += 1;
                        d.1 += n;
                    }
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|w| {
                w.join()
                    .unwrap_or_else(|_| Err(Error::invalid("an upload thread panicked")))
            })
            .collect()
    });
    results.into_iter().collect::<Result<()>>()?;
    (out.tables, out.table_bytes) = done.into_inner().unwrap_or_else(|p| p.into_inner());
    // CURRENT last: until it is there, the copy is no store.
    locals.sort_by_key(|r| r.file_name().is_some_and(|n| n == "CURRENT"));
    for rel in &locals {
        let (src, dst) = (from.join(rel), to.join(rel));
        let n = std::fs::copy(&src, &dst).map_err(|e| Error::io(ctx("copy", &src), e))?;
        std::fs::File::open(&dst)
            .and_then(|f| f.sync_all())
            .map_err(|e| Error::io(ctx("sync", &dst), e))?;
        out.local_files += 1;
        out.local_bytes += n;
    }
    fs.sync_dir(&to)
        .map_err(|e| Error::io(ctx("sync", &to), e))?;
    Ok(out)
}

/// The files of the store in `root` under `rel`: tables and the others
/// (`LOCK` and anything not a store file left out), as paths relative to
/// `root`.
fn collect(
    root: &Path,
    rel: &Path,
    tables: &mut Vec<PathBuf>,
    locals: &mut Vec<PathBuf>,
) -> Result<()> {
    let dir = root.join(rel);
    let entries =
        std::fs::read_dir(&dir).map_err(|e| Error::io(format!("list {}", dir.display()), e))?;
    for entry in entries {
        let entry = entry.map_err(|e| Error::io(format!("list {}", dir.display()), e))?;
        let name = entry.file_name();
        let path = rel.join(&name);
        let is_dir = entry
            .file_type()
            .map_err(|e| Error::io(format!("stat {}", dir.join(&name).display()), e))?
            .is_dir();
        if is_dir {
            collect(root, &path, tables, locals)?;
            continue;
        }
        match name.to_str().and_then(filename::parse_file_name) {
            Some((FileKind::Table, _)) => tables.push(path),
            Some((FileKind::Lock, _)) | None => {}
            Some(_) => locals.push(path),
        }
    }
    Ok(())
}

/// Uploads the local table `src` as `dst`'s object; its size.
fn upload_table(fs: &BucketFs, src: &Path, dst: &Path) -> Result<u64> {
    use std::os::unix::fs::FileExt;
    let ctx = |what: &str, p: &Path| format!("{what} {}", p.display());
    let f = std::fs::File::open(src).map_err(|e| Error::io(ctx("open", src), e))?;
    let len = f
        .metadata()
        .map_err(|e| Error::io(ctx("stat", src), e))?
        .len();
    let mut w = fs
        .create_new(dst)
        .map_err(|e| Error::io(ctx("create", dst), e))?;
    let mut buf = vec![0u8; PIECE];
    let mut at = 0;
    while at < len {
        let n = (len - at).min(PIECE as u64) as usize;
        f.read_exact_at(&mut buf[..n], at)
            .map_err(|e| Error::io(ctx("read", src), e))?;
        w.write_all(&buf[..n])
            .map_err(|e| Error::io(ctx("write", dst), e))?;
        at += n as u64;
    }
    w.sync_data()
        .map_err(|e| Error::io(ctx("upload", dst), e))?;
    Ok(len)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use object_store::memory::InMemory;

    use super::*;
    use crate::fs::bucket::BucketConfig;
    use crate::{Db, Options};

    fn bucket_fs(dir: &Path, cache: &Path, store: &Arc<InMemory>, cache_bytes: u64) -> BucketFs {
        // A prefix of each directory's own.
        let prefix = format!("{}/", dir.file_name().unwrap().to_str().unwrap());
        let config = BucketConfig::new(dir, "b", cache)
            .prefix(prefix)
            .chunk_bytes(4096)
            .cache_bytes(cache_bytes);
        BucketFs::with_store(config, store.clone()).unwrap()
    }

    fn key(i: u32) -> Vec<u8> {
        format!("key{i:06}").into_bytes()
    }

    fn opts_ks() -> Options {
        Options::default()
            .write_buffer_size(64 << 10)
            .target_file_size(32 << 10)
    }

    /// A closed local store of `n` keys in several tables, one keyspace.
    fn local_store(dir: &Path, n: u32) {
        let db = Db::open(dir, opts_ks()).unwrap();
        let ks = db.create_keyspace("other", opts_ks()).unwrap();
        for i in 0..n {
            db.put(key(i), vec![i as u8; 100]).unwrap();
            if i % 4 == 0 {
                ks.put(key(i), b"k").unwrap();
            }
        }
        db.flush().unwrap();
        ks.flush().unwrap();
        db.close().unwrap();
    }

    #[test]
    fn an_uploaded_store_opens_from_the_bucket_and_reads_every_key() {
        let root = tempfile::tempdir().unwrap();
        let (local, copy) = (root.path().join("local"), root.path().join("copy"));
        local_store(&local, 5_000);
        let store = Arc::new(InMemory::new());
        let fs = bucket_fs(&copy, &root.path().join("c1"), &store, 0);
        let up = upload_store(&fs, &local).unwrap();
        assert!(up.tables >= 4, "{up:?}");
        assert_eq!(
            fs.counters().puts,
            2 + up.tables,
            "the probe, the prefix's marker, then one PUT a table"
        );
        // No table file on the local disk: they are objects.
        let mut stack = vec![copy.clone()];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).unwrap() {
                let p = e.unwrap().path();
                assert!(p.extension().is_none_or(|x| x != "sst"), "{}", p.display());
                if p.is_dir() {
                    stack.push(p);
                }
            }
        }
        // A second upload into the same place is refused.
        let e = upload_store(&fs, &local).unwrap_err();
        assert!(e.to_string().contains("not empty"), "{e}");
        drop(fs);

        // Read back cold, then warm: after a prefetch no read costs a GET.
        let fs = Arc::new(bucket_fs(&copy, &root.path().join("c2"), &store, 64 << 20));
        let fetched = fs.prefetch(&copy).unwrap();
        assert_eq!(fetched, up.table_bytes);
        let gets = fs.counters().gets;
        assert!(gets >= up.tables, "one GET a table at least");
        let db = Db::open_read_only(&copy, Options::default().fs(fs.clone())).unwrap();
        let ks = db.keyspace("other").unwrap();
        for i in 0..5_000 {
            assert_eq!(db.get(key(i)).unwrap().unwrap(), vec![i as u8; 100]);
            assert_eq!(ks.get(key(i)).unwrap().is_some(), i % 4 == 0, "{i}");
        }
        assert_eq!(fs.counters().gets, gets, "every read from the disk cache");
    }

    #[test]
    fn a_directory_without_a_store_is_not_uploaded() {
        let root = tempfile::tempdir().unwrap();
        let empty = root.path().join("empty");
        std::fs::create_dir(&empty).unwrap();
        let store = Arc::new(InMemory::new());
        let fs = bucket_fs(&root.path().join("copy"), &root.path().join("c"), &store, 0);
        let e = upload_store(&fs, &empty).unwrap_err();
        assert!(e.to_string().contains("no CURRENT"), "{e}");
        let nofs = bucket_fs(
            &root.path().join("copy2"),
            &root.path().join("c2"),
            &store,
            0,
        );
        let e = nofs.prefetch(&root.path().join("copy2")).unwrap_err();
        assert!(e.to_string().contains("no disk cache"), "{e}");
    }
}
