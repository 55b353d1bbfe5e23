//! The files of a whole store's journal as the store sees them: a log or
//! MANIFEST being appended to (its bytes gathered and written as journal
//! entries in groups), a `CURRENT` or `OPTIONS` being written (held in
//! memory until synced or renamed into place), a journal file read (its
//! bytes in memory), and the thread that writes each open file's gathered
//! bytes every [`super::BucketConfig::log_flush_interval`]; and the
//! `BucketFs` methods that open and read them.

use std::io;
use std::sync::{Arc, Condvar, Mutex, Weak};
use std::thread::JoinHandle;
use std::time::Duration;

use bytes::Bytes;

use super::{BucketFs, Shared, lock};
use crate::db::filename::FileKind;
use crate::fs::{ReadableFile, WritableFile};

impl BucketFs {
    /// Opens the journal file `path` for writing: a log or MANIFEST is
    /// appended to; `CURRENT`, `OPTIONS` and their `.tmp` are written whole.
    pub(super) fn create_journal_file(
        &self,
        path: String,
        kind: FileKind,
        truncate: bool,
    ) -> io::Result<Box<dyn WritableFile>> {
        let sh = &self.shared;
        match kind {
            FileKind::Log | FileKind::Manifest => {
                if truncate && sh.journal().exists(&sh.client, &path)? {
                    sh.journal().remove(&sh.client, &path)?;
                }
                Ok(Box::new(AppendWritable::create(sh, path)?))
            }
            _ => {
                let staged = matches!(kind, FileKind::CurrentTmp | FileKind::OptionsTmp);
                if !truncate {
                    let there = if staged {
                        lock(&sh.staged_whole).contains_key(&path)
                    } else {
                        sh.journal().exists(&sh.client, &path)?
                    };
                    if there {
                        return Err(io::Error::new(
                            io::ErrorKind::AlreadyExists,
                            format!("{path} exists"),
                        ));
                    }
                }
                let w = WholeWritable {
                    shared: sh.clone(),
                    path,
                    staged,
                    buf: Vec::new(),
                };
                Ok(Box::new(w))
            }
        }
    }

    /// The bytes of the journal file `path` (a staged `.tmp` from memory).
    /// A file this handle is appending to is read with every byte written
    /// to it so far, as a local file is: its gathered bytes are written
    /// first.
    pub(super) fn read_journal_file(&self, path: &str) -> io::Result<Bytes> {
        let sh = &self.shared;
        if let Some(b) = lock(&sh.staged_whole).get(path) {
            return Ok(b.clone());
        }
        sh.flush_tail(path)?;
        sh.journal().read(&sh.client, path)
    }
}

impl Shared {
    /// Writes the gathered bytes of `path`, if this handle is appending
    /// to it.
    pub(super) fn flush_tail(&self, path: &str) -> io::Result<()> {
        let tail = lock(&self.tails)
            .iter()
            .filter_map(Weak::upgrade)
            .find(|t| t.path == path);
        match tail {
            Some(t) => t.flush(self),
            None => Ok(()),
        }
    }
}

/// An appended file's bytes not yet in the journal.
#[derive(Debug, Default)]
struct Pending {
    /// The file's length in the journal.
    durable: u64,
    buf: Vec<u8>,
}

/// A log or MANIFEST open for appending, shared by its writer and the
/// flush thread.
#[derive(Debug)]
pub(super) struct Tail {
    path: String,
    pending: Mutex<Pending>,
    /// Held while gathered bytes are written: the file's entries go in
    /// order, and a sync returns only once every byte before it is in.
    flushing: Mutex<()>,
}

impl Tail {
    /// Writes the gathered bytes as one entry.
    pub(super) fn flush(&self, shared: &Shared) -> io::Result<()> {
        let _order = lock(&self.flushing);
        let (offset, data) = {
            let mut p = lock(&self.pending);
            if p.buf.is_empty() {
                return Ok(());
            }
            (p.durable, Bytes::from(std::mem::take(&mut p.buf)))
        };
        let len = data.len() as u64;
        shared
            .journal()
            .append(&shared.client, &self.path, offset, data)?;
        lock(&self.pending).durable = offset + len;
        Ok(())
    }
}

/// A log or MANIFEST being written: appends are gathered, and written as
/// one journal entry when synced, when [`super::BucketConfig::log_flush_bytes`]
/// have gathered, every [`super::BucketConfig::log_flush_interval`], and
/// when the file is dropped.
#[derive(Debug)]
pub(super) struct AppendWritable {
    shared: Arc<Shared>,
    tail: Arc<Tail>,
}

impl AppendWritable {
    /// A new file `path` (relative to the store's directory), made to
    /// exist in the journal by an empty entry.
    pub(super) fn create(shared: &Arc<Shared>, path: String) -> io::Result<AppendWritable> {
        let journal = shared.journal();
        if journal.exists(&shared.client, &path)? {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!("{path} is in the store's journal already"),
            ));
        }
        journal.append(&shared.client, &path, 0, Bytes::new())?;
        let tail = Arc::new(Tail {
            path,
            pending: Mutex::default(),
            flushing: Mutex::new(()),
        });
        let mut tails = lock(&shared.tails);
        tails.retain(|t| t.strong_count() > 0);
        tails.push(Arc::downgrade(&tail));
        Ok(AppendWritable {
            shared: shared.clone(),
            tail,
        })
    }
}

impl WritableFile for AppendWritable {
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        let full = {
            let mut p = lock(&self.tail.pending);
            p.buf.extend_from_slice(buf);
            p.buf.len() as u64 >= self.shared.config.log_flush_bytes
        };
        if full {
            self.tail.flush(&self.shared)?;
        }
        Ok(())
    }

    fn sync_data(&mut self) -> io::Result<()> {
        self.tail.flush(&self.shared)
    }
}

impl Drop for AppendWritable {
    fn drop(&mut self) {
        // A failure stops the journal: the next write reports it.
        let _ = self.tail.flush(&self.shared);
    }
}

/// A `CURRENT`, `OPTIONS` or their `.tmp` being written: kept in memory;
/// a synced `.tmp` is what a rename puts into place, a synced `CURRENT`
/// or `OPTIONS` replaces the file in the journal.
#[derive(Debug)]
pub(super) struct WholeWritable {
    pub shared: Arc<Shared>,
    pub path: String,
    /// A `.tmp`: held for the rename, not written to the journal.
    pub staged: bool,
    pub buf: Vec<u8>,
}

impl WritableFile for WholeWritable {
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.buf.extend_from_slice(buf);
        if self.staged {
            self.stage();
        }
        Ok(())
    }

    fn sync_data(&mut self) -> io::Result<()> {
        if self.staged {
            self.stage();
            return Ok(());
        }
        let data = Bytes::from(self.buf.clone());
        self.shared
            .journal()
            .replace(&self.shared.client, &self.path, data)
    }
}

impl WholeWritable {
    fn stage(&self) {
        lock(&self.shared.staged_whole).insert(self.path.clone(), Bytes::from(self.buf.clone()));
    }
}

/// A journal file's bytes, read whole.
#[derive(Debug)]
pub(super) struct MemReadable(pub Bytes);

impl ReadableFile for MemReadable {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        let end = offset
            .checked_add(buf.len() as u64)
            .filter(|&e| e <= self.0.len() as u64)
            .ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    format!(
                        "read of {} bytes at {offset} past the end ({} bytes)",
                        buf.len(),
                        self.0.len()
                    ),
                )
            })?;
        buf.copy_from_slice(&self.0[offset as usize..end as usize]);
        Ok(())
    }

    fn len(&self) -> io::Result<u64> {
        Ok(self.0.len() as u64)
    }
}

/// The thread that writes every open appended file's gathered bytes each
/// interval, and deletes the tables whose grace has passed; stopped (after
/// one last pass) when dropped.
#[derive(Debug)]
pub(super) struct Flusher {
    stop: Arc<(Mutex<bool>, Condvar)>,
    thread: Option<JoinHandle<()>>,
}

impl Flusher {
    pub(super) fn start(shared: &Arc<Shared>, every: Duration) -> io::Result<Flusher> {
        let stop = Arc::new((Mutex::new(false), Condvar::new()));
        let weak: Weak<Shared> = Arc::downgrade(shared);
        let s = stop.clone();
        let thread = std::thread::Builder::new()
            .name("bloomlsm-journal".into())
            .spawn(move || {
                loop {
                    let stopped = {
                        let g = lock(&s.0);
                        let (g, _) =
                            s.1.wait_timeout_while(g, every, |stop| !*stop)
                                .unwrap_or_else(|p| p.into_inner());
                        *g
                    };
                    let Some(shared) = weak.upgrade() else { return };
                    let tails: Vec<Arc<Tail>> = lock(&shared.tails)
                        .iter()
                        .filter_map(Weak::upgrade)
                        .collect();
                    for t in tails {
                        // A failure stops the journal; the store's next
                        // write reports it.
                        let _ = t.flush(&shared);
                    }
                    shared.delete_doomed(false);
                    if stopped {
                        return;
                    }
                }
            })?;
        Ok(Flusher {
            stop,
            thread: Some(thread),
        })
    }
}

impl Drop for Flusher {
    fn drop(&mut self) {
        *lock(&self.stop.0) = true;
        self.stop.1.notify_all();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
