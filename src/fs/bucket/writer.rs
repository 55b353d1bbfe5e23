//! A table being written: staged in a local file, uploaded whole when
//! synced.

use std::collections::VecDeque;
use std::fs::File;
use std::io::{self, Write};
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::sync::Arc;

use bytes::Bytes;
use object_store::path::Path as ObjectPath;
use object_store::{ObjectStoreExt, PutPayload};

use super::cache::ChunkId;
use super::client::{add, io_error};
use super::{Known, Shared};
use crate::fs::WritableFile;

/// Parts of a multipart upload in flight at once.
const PARTS_IN_FLIGHT: usize = 4;

/// A table file being written. Appends go to a staging file in the cache
/// directory; [`WritableFile::sync_data`] uploads it whole and returns once
/// the object is durable in the bucket (S3 acknowledges a PUT, or a
/// multipart upload's completion, only then), so the store's rule — a
/// table synced before the MANIFEST edit that names it — holds with the
/// bucket in place of the disk. The uploaded bytes also fill the disk
/// cache, so the store's reads of the table it just wrote cost no GET.
#[derive(Debug)]
pub(super) struct BucketWritable {
    pub shared: Arc<Shared>,
    pub key: ObjectPath,
    pub staging: PathBuf,
    pub file: File,
    pub written: u64,
}

impl WritableFile for BucketWritable {
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.file.write_all(buf)?;
        self.written += buf.len() as u64;
        Ok(())
    }

    fn sync_data(&mut self) -> io::Result<()> {
        let sh = &self.shared;
        sh.uploading(&self.key);
        let e_tag = if self.written > sh.config.multipart_above {
            self.upload_parts()?
        } else {
            let data = self.read(0, self.written)?;
            sh.client.put(&self.key, data)?
        };
        let known = Known {
            size: self.written,
            e_tag,
        };
        let object = sh.object_id(&self.key, &known);
        sh.uploaded(&self.key, known);
        self.fill_cache(object);
        Ok(())
    }
}

impl BucketWritable {
    /// `len` staged bytes from `offset`.
    fn read(&self, offset: u64, len: u64) -> io::Result<Bytes> {
        let mut buf = vec![0u8; len as usize];
        self.file.read_exact_at(&mut buf, offset)?;
        Ok(Bytes::from(buf))
    }

    /// A multipart upload of the staged bytes, [`PARTS_IN_FLIGHT`] parts at
    /// a time; aborted on failure, so no part is left stored.
    fn upload_parts(&self) -> io::Result<Option<String>> {
        let sh = &self.shared;
        let client = &sh.client;
        let store = client.store.clone();
        let k = self.key.clone();
        let mut upload = client
            .run(async move { store.put_multipart(&k).await })?
            .map_err(|e| io_error("start multipart upload", &self.key, e))?;
        let part = sh.config.part_bytes.max(5 << 20);
        let mut sent = || -> io::Result<()> {
            let mut in_flight = VecDeque::new();
            let mut at = 0;
            while at < self.written {
                let n = part.min(self.written - at);
                let data = self.read(at, n)?;
                add(&client.counters.puts, 1);
                add(&client.counters.put_bytes, n);
                in_flight.push_back(client.spawn(upload.put_part(PutPayload::from(data))));
                at += n;
                if in_flight.len() >= PARTS_IN_FLIGHT
                    && let Some(p) = in_flight.pop_front()
                {
                    p.wait()?
                        .map_err(|e| io_error("upload part", &self.key, e))?;
                }
            }
            for p in in_flight {
                p.wait()?
                    .map_err(|e| io_error("upload part", &self.key, e))?;
            }
            Ok(())
        };
        if let Err(e) = sent() {
            let _ = client.run(async move { upload.abort().await });
            return Err(e);
        }
        let (mut upload, done) = client.run(async move {
            let r = upload.complete().await;
            (upload, r)
        })?;
        match done {
            Ok(r) => {
                add(&client.counters.multipart_uploads, 1);
                Ok(r.e_tag)
            }
            Err(e) => {
                let _ = client.run(async move { upload.abort().await });
                Err(io_error("complete multipart upload", &self.key, e))
            }
        }
    }

    /// Copies the uploaded bytes into the disk cache as `object`'s chunks.
    /// Best effort: a chunk left out is fetched when first read.
    fn fill_cache(&self, object: u128) {
        let sh = &self.shared;
        if !sh.cache.enabled() {
            return;
        }
        let cs = sh.config.chunk_bytes;
        let mut at = 0;
        while at < self.written {
            let n = cs.min(self.written - at);
            let Ok(data) = self.read(at, n) else { return };
            sh.cache.insert(
                ChunkId {
                    object,
                    index: at / cs,
                },
                &data,
                &sh.client.counters,
            );
            add(&sh.client.counters.cache_fills, 1);
            at += n;
        }
    }
}

impl Drop for BucketWritable {
    fn drop(&mut self) {
        // The staged bytes are in the bucket (and the cache) or abandoned.
        let _ = std::fs::remove_file(&self.staging);
    }
}
