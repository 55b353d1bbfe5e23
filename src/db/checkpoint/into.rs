//! [`Db::checkpoint_into`]: a checkpoint written onto another file system —
//! a store on a local disk into a bucket as a whole store, or the reverse.
//! The checkpoint is made in memory first ([`CaptureFs`]: the small files
//! as of one moment, the tables by name), then written at the destination:
//! the tables, each keyspace's files, then the store's, `CURRENT` last, so
//! the destination is a store only once it is whole.

use std::sync::Arc;

use super::capture::CaptureFs;
use super::*;

impl Db {
    /// Makes a copy of the store as of one moment, as [`Db::checkpoint`]
    /// does, in the directory `dir` of another file system `fs`: every
    /// table copied, then the small files, `CURRENT` last. A store on a
    /// local disk goes into a bucket as a store kept wholly there (`fs` a
    /// `BucketFs` with `BucketConfig::whole_store`, `dir` its directory),
    /// or a store in a bucket onto a local disk. The destination takes the
    /// writer's place first (a whole store's fence), and must hold no
    /// store. After a failure the destination has no `CURRENT` (it opens as
    /// no store) but may hold some of the tables.
    pub fn checkpoint_into(
        &self,
        fs: Arc<dyn FileSystem>,
        dir: impl AsRef<Path>,
    ) -> Result<CheckpointReport> {
        let inner = &self.inner;
        let dir = dir.as_ref();
        let capture = CaptureFs::new(inner.fs(), &inner.dir).homed(fs.as_ref(), dir);
        let mut report = inner.checkpoint(capture.target(), &capture)?;
        let kept = capture.kept(report.sequence, 0);
        let out = fs.as_ref();
        out.create_dir_all(dir)
            .map_err(io_err("create directory", dir))?;
        let current = filename::current_file(dir);
        let holds_store = || {
            out.file_len(&current).is_ok().then(|| {
                Error::invalid(format!(
                    "checkpoint into {}: it holds a store already",
                    dir.display()
                ))
            })
        };
        // Before the writer's place is taken (which fences a running
        // writer out), and after (another copy may have come first).
        if let Some(e) = holds_store() {
            return Err(e);
        }
        out.take_writer(dir)
            .map_err(io_err("take the writer's place in", dir))?;
        if let Some(e) = holds_store() {
            return Err(e);
        }
        report.linked = 0;
        report.copied = 0;
        report.bytes_copied = 0;
        for rel in &kept.tables {
            if let Some((folder, _)) = rel.rsplit_once('/') {
                let d = dir.join(folder);
                out.create_dir_all(&d)
                    .map_err(io_err("create directory", &d))?;
            }
            let from_path = inner.dir.join(rel);
            let from = inner
                .fs()
                .open_read(&from_path)
                .map_err(io_err("open", &from_path))?;
            let size = from.len().map_err(io_err("size", &from_path))?;
            copy_file(out, &*from, size, &dir.join(rel), &format!("table {rel}"))?;
            report.copied += 1;
            report.bytes_copied += size;
        }
        write_store_files(out, dir, &kept.files)?;
        Ok(report)
    }
}

/// Writes a checkpoint's small `files` (by path relative to `dir`) into
/// `dir` on `out`: each keyspace's first, the store's last, `CURRENT` last
/// of each, `CURRENT` and `OPTIONS` through their `.tmp` and a rename;
/// each `OPTIONS` records where `out` keeps the tables of its directory.
pub(crate) fn write_store_files(
    out: &dyn FileSystem,
    dir: &Path,
    files: &[(String, bytes::Bytes)],
) -> Result<()> {
    for (rel, _) in files {
        if let Some((folder, _)) = rel.rsplit_once('/') {
            let d = dir.join(folder);
            out.create_dir_all(&d)
                .map_err(io_err("create directory", &d))?;
        }
    }
    let mut files: Vec<&(String, bytes::Bytes)> = files.iter().collect();
    files.sort_by_key(|(rel, _)| (!rel.contains('/'), rel.ends_with("CURRENT")));
    for (rel, data) in files {
        let path = dir.join(rel);
        let (name, parent) = (
            path.file_name().and_then(|n| n.to_str()).unwrap_or(""),
            path.parent().unwrap_or(dir),
        );
        let mut data = data.to_vec();
        let tmp = match name {
            "CURRENT" => Some(filename::current_tmp_file(parent)),
            "OPTIONS" => {
                let mut o = options_file::OptionsFile::decode(&data, &path)?;
                o.tables = out.table_location(parent);
                data = o.encode();
                Some(filename::options_tmp_file(parent))
            }
            _ => None,
        };
        let write_to = tmp.as_deref().unwrap_or(&path);
        let mut f = out
            .create_new(write_to)
            .map_err(io_err("create", write_to))?;
        f.write_all(&data).map_err(io_err("write", write_to))?;
        f.sync_data().map_err(io_err("fsync", write_to))?;
        drop(f);
        if let Some(tmp) = &tmp {
            out.rename(tmp, &path)
                .map_err(io_err("rename onto", &path))?;
        }
        out.sync_dir(parent)
            .map_err(io_err("sync directory", parent))?;
    }
    Ok(())
}
