//! The crate's error type. Errors are values: a corrupt or truncated file yields
//! [`Error::Corruption`] naming the file and the byte offset, never a panic.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Result alias used throughout the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What a file system reports inside an [`std::io::Error`] that is not an
/// operating-system error: [`Error::io`] turns it into the store's own
/// variant, so a file system keeps the trait's plain `io::Result`s and the
/// caller still gets [`Error::Fenced`] or [`Error::Corruption`].
#[derive(Debug)]
pub enum IoCause {
    /// [`Error::Fenced`].
    Fenced {
        /// [`Error::Fenced::at`].
        at: String,
        /// [`Error::Fenced::by`].
        by: String,
    },
    /// [`Error::Corruption`].
    Corruption {
        /// The file.
        file: PathBuf,
        /// The byte offset.
        offset: u64,
        /// What failed.
        what: String,
    },
}

impl fmt::Display for IoCause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IoCause::Fenced { at, by } => write!(f, "fenced: {at} written by {by}"),
            IoCause::Corruption { file, offset, what } => {
                write!(
                    f,
                    "corruption in {} at offset {offset}: {what}",
                    file.display()
                )
            }
        }
    }
}

impl std::error::Error for IoCause {}

impl IoCause {
    /// This cause as an `io::Error` (kind `Other` for a fence, `InvalidData`
    /// for corruption).
    pub fn into_io(self) -> std::io::Error {
        let kind = match self {
            IoCause::Fenced { .. } => std::io::ErrorKind::Other,
            IoCause::Corruption { .. } => std::io::ErrorKind::InvalidData,
        };
        std::io::Error::new(kind, self)
    }
}

/// Everything that can go wrong in bloomlsm.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// An operating-system I/O error, with what we were doing when it happened.
    Io {
        /// The operation and path, e.g. `"read /db/000012.sst"`.
        context: String,
        /// The underlying error.
        source: std::io::Error,
    },
    /// Bytes on disk are not what we wrote: bad checksum, bad magic, bad length, a
    /// handle past the end of the file, a truncated record.
    Corruption {
        /// The file in which the corruption was found.
        file: PathBuf,
        /// The byte offset in that file of the structure that failed.
        offset: u64,
        /// What failed, in words.
        what: String,
    },
    /// The caller passed something the store cannot accept (keys out of order,
    /// empty key, value too large, bad option).
    InvalidArgument(String),
    /// Another process (or another `Db` in this process) holds the directory lock.
    Locked(PathBuf),
    /// The store hit an earlier fatal error (a failed WAL or MANIFEST write, a
    /// background flush or compaction that failed or panicked) and refuses
    /// further writes, flushes and compactions so that nothing acknowledged
    /// can be lost. Reads keep working. Reopening the store recovers it: every
    /// acknowledged write is in its WAL or its tables.
    Poisoned {
        /// What the store was doing when it failed, e.g. `"compaction"`.
        during: String,
        /// The error that stopped it: an [`Error::Io`] keeps its
        /// [`std::io::ErrorKind`] (see [`Error::io_kind`]), a panic is an
        /// [`Error::Panicked`].
        cause: Arc<Error>,
    },
    /// A thread of the store panicked (a bug in bloomlsm or in code it
    /// calls): the panic's message. The store is poisoned with it
    /// ([`Error::Poisoned`]); the thread does not die silently.
    Panicked(String),
    /// A registered filter family failed to build a table's filter: its
    /// build returned an error or panicked, or what it built does not open
    /// or rejects a key it was built from. Nothing built with it is
    /// installed.
    Filter {
        /// The family's name.
        family: String,
        /// What went wrong, in words.
        what: String,
    },
    /// The store was closed.
    Closed,
    /// The store was opened with [`crate::Db::open_read_only`]: writes,
    /// flushes and compactions are refused.
    ReadOnly,
    /// Another writer took the store (a store kept wholly in a bucket:
    /// `fs::bucket::BucketConfig::whole_store`): this one's write to the
    /// store's journal found the newer writer's entry in its place. Nothing
    /// this writer does from then on is acknowledged or deletes anything;
    /// the store is poisoned with this cause.
    Fenced {
        /// The journal entry that took the place, e.g. `"journal
        /// 00000000000000000042"`.
        at: String,
        /// The newer writer as it named itself (host and process), or what
        /// the entry holds.
        by: String,
    },
}

impl Error {
    /// Builds a [`Error::Corruption`].
    pub fn corruption(file: impl AsRef<Path>, offset: u64, what: impl Into<String>) -> Self {
        Error::Corruption {
            file: file.as_ref().to_path_buf(),
            offset,
            what: what.into(),
        }
    }

    /// Builds an [`Error::Io`] with context.
    pub fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        match source.get_ref().and_then(|e| e.downcast_ref::<IoCause>()) {
            Some(IoCause::Fenced { at, by }) => Error::Fenced {
                at: at.clone(),
                by: by.clone(),
            },
            Some(IoCause::Corruption { file, offset, what }) => Error::Corruption {
                file: file.clone(),
                offset: *offset,
                what: what.clone(),
            },
            None => Error::Io {
                context: context.into(),
                source,
            },
        }
    }

    /// True for [`Error::Fenced`], and for a store poisoned by it.
    pub fn is_fenced(&self) -> bool {
        match self {
            Error::Fenced { .. } => true,
            Error::Poisoned { cause, .. } => cause.is_fenced(),
            _ => false,
        }
    }

    /// Builds an [`Error::InvalidArgument`].
    pub fn invalid(what: impl Into<String>) -> Self {
        Error::InvalidArgument(what.into())
    }

    /// Builds an [`Error::Poisoned`] whose cause is `cause` (kept as it is
    /// when it already is one: the first failure is the one reported).
    pub(crate) fn poisoned(during: impl Into<String>, cause: Error) -> Self {
        match cause {
            Error::Poisoned { .. } => cause,
            cause => Error::Poisoned {
                during: during.into(),
                cause: Arc::new(cause),
            },
        }
    }

    /// An [`Error::Poisoned`] for a lock that a panicking thread held.
    pub(crate) fn lock_poisoned(lock: &str) -> Self {
        Error::poisoned(
            lock,
            Error::Panicked(format!("a thread panicked while holding the {lock}")),
        )
    }

    /// An [`Error::Panicked`] from a caught panic's payload.
    pub(crate) fn from_panic(payload: &(dyn std::any::Any + Send)) -> Self {
        let msg = payload
            .downcast_ref::<&str>()
            .map(|s| (*s).to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic with a non-text payload".into());
        Error::Panicked(msg)
    }

    /// True for [`Error::Corruption`].
    pub fn is_corruption(&self) -> bool {
        matches!(self, Error::Corruption { .. })
    }

    /// The kind of the I/O error behind this one: its own for an
    /// [`Error::Io`], its cause's for an [`Error::Poisoned`] (e.g.
    /// [`std::io::ErrorKind::StorageFull`] after a flush found the disk
    /// full), `None` for the others.
    pub fn io_kind(&self) -> Option<std::io::ErrorKind> {
        match self {
            Error::Io { source, .. } => Some(source.kind()),
            Error::Poisoned { cause, .. } => cause.io_kind(),
            _ => None,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Io { context, source } => write!(f, "I/O error: {context}: {source}"),
            Error::Corruption { file, offset, what } => {
                write!(
                    f,
                    "corruption in {} at offset {offset}: {what}",
                    file.display()
                )
            }
            Error::InvalidArgument(what) => write!(f, "invalid argument: {what}"),
            Error::Locked(path) => write!(
                f,
                "store {} is locked by another process or handle",
                path.display()
            ),
            Error::Poisoned { during, cause } => write!(
                f,
                "store refuses writes after a fatal error ({during}): {cause}; reopen it to recover"
            ),
            Error::Panicked(msg) => write!(f, "a thread of the store panicked: {msg}"),
            Error::Filter { family, what } => write!(f, "filter family {family}: {what}"),
            Error::Closed => write!(f, "store is closed"),
            Error::ReadOnly => write!(f, "store is open read-only"),
            Error::Fenced { at, by } => write!(
                f,
                "fenced: another writer took the store ({at} written by {by}); this handle \
                 writes nothing more"
            ),
        }
    }
}

impl Error {
    /// An equal error for another caller: the same variant and message (an
    /// I/O error keeps its kind and text). Group commit hands the leader's
    /// error to every writer of its group.
    pub(crate) fn duplicate(&self) -> Error {
        match self {
            Error::Io { context, source } => Error::Io {
                context: context.clone(),
                source: std::io::Error::new(source.kind(), source.to_string()),
            },
            Error::Corruption { file, offset, what } => Error::Corruption {
                file: file.clone(),
                offset: *offset,
                what: what.clone(),
            },
            Error::InvalidArgument(w) => Error::InvalidArgument(w.clone()),
            Error::Locked(p) => Error::Locked(p.clone()),
            Error::Poisoned { during, cause } => Error::Poisoned {
                during: during.clone(),
                cause: cause.clone(),
            },
            Error::Panicked(msg) => Error::Panicked(msg.clone()),
            Error::Filter { family, what } => Error::Filter {
                family: family.clone(),
                what: what.clone(),
            },
            Error::Closed => Error::Closed,
            Error::ReadOnly => Error::ReadOnly,
            Error::Fenced { at, by } => Error::Fenced {
                at: at.clone(),
                by: by.clone(),
            },
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io { source, .. } => Some(source),
            Error::Poisoned { cause, .. } => Some(cause.as_ref()),
            _ => None,
        }
    }
}

impl From<std::io::Error> for Error {
    fn from(source: std::io::Error) -> Self {
        Error::Io {
            context: String::new(),
            source,
        }
    }
}
