//! The object `PREFIX` + [`STORE_OBJECT`]: which store a prefix belongs to.
//!
//! `BucketFs` writes it when a store first takes a prefix, naming the
//! store's local directory, and checks it at every construction, before it
//! writes anything: a store is made only under a prefix that is empty (the
//! probe aside), that names this store's directory, or that holds only
//! tables of the store already in the local directory (a checkpoint made
//! within the store, or a store older than the marker);
//! [`BucketConfig::create_among_other_objects`] lifts the refusal.

use std::path::Path;

use bytes::Bytes;
use object_store::path::Path as ObjectPath;
use object_store::{GetOptions, GetRange};

use super::PROBE_OBJECT;
use super::client::{BucketConfig, Client, io_error};
use crate::db::filename::{self, FileKind};
use crate::error::{Error, Result};

/// The marker's name under the prefix.
pub const STORE_OBJECT: &str = "bloomlsm-store";

/// The marker's first line.
const HEADER: &str = "bloomlsm store\n";
/// A marker longer than this is not one this crate wrote.
const MAX_LEN: u64 = 64 << 10;

/// The marker of the store whose directory is `root`:
/// `bloomlsm store\ndir = ROOT\n`, `ROOT` the absolute path's bytes.
pub(super) fn contents(root: &Path) -> Bytes {
    use std::os::unix::ffi::OsStrExt;
    let mut v = HEADER.as_bytes().to_vec();
    v.extend_from_slice(b"dir = ");
    v.extend_from_slice(root.as_os_str().as_bytes());
    v.push(b'\n');
    Bytes::from(v)
}

/// The marker of a store kept wholly in the bucket
/// ([`BucketConfig::whole_store`]): no local directory names it.
const WHOLE: &[u8] = b"bloomlsm store\nwhole\n";

/// The marker `config`'s store writes: [`contents`] of `root`, or
/// `bloomlsm store\nwhole\n` for a whole store.
pub(super) fn contents_for(config: &BucketConfig, root: &Path) -> Bytes {
    if config.whole_store {
        Bytes::from_static(WHOLE)
    } else {
        contents(root)
    }
}

/// The directory a marker names; `None` for bytes no marker holds.
fn named_dir(data: &[u8]) -> Option<&[u8]> {
    let rest = data.strip_prefix(HEADER.as_bytes())?;
    let dir = rest.strip_prefix(b"dir = ")?.strip_suffix(b"\n")?;
    (!dir.is_empty() && !dir.contains(&b'\n')).then_some(dir)
}

/// Whether `name` (a last segment under the prefix) is a table's object
/// or a keyspace's prefix.
fn store_name(name: &str) -> bool {
    matches!(filename::parse_file_name(name), Some((FileKind::Table, _)))
        || filename::parse_keyspace_dir(name).is_some()
}

/// Checks that the prefix `dir_key` may hold the store in `root` (module
/// docs). First one GET of the marker: when it names `root`, as at every
/// reopen, that is all, however many tables the prefix holds. Only a
/// prefix without a marker is listed (one LIST). Returns whether the
/// marker must be written.
pub(super) fn check(
    client: &Client,
    config: &BucketConfig,
    endpoint: &str,
    dir_key: &ObjectPath,
    root: &Path,
) -> Result<bool> {
    use std::os::unix::ffi::OsStrExt;
    let here = || {
        format!(
            "bucket {} at {endpoint}, prefix {:?}",
            config.bucket, config.prefix
        )
    };
    let refuse = |what: String| {
        Err(Error::invalid(format!(
            "{}: {what}; a store is made only under a prefix of its own \
             (BucketConfig::create_among_other_objects takes it anyway)",
            here()
        )))
    };
    let key = dir_key.clone().join(STORE_OBJECT);
    // Not counted among the GETs of table data; at most MAX_LEN + 1 bytes
    // of whatever holds the name.
    let (store, k) = (client.store.clone(), key.clone());
    let opts = GetOptions {
        range: Some(GetRange::Bounded(0..MAX_LEN + 1)),
        ..GetOptions::default()
    };
    let marker = client
        .run(async move { store.get_opts(&k, opts).await?.bytes().await })
        .and_then(|r| r.map_err(|e| io_error("GET", &key, e)));
    match marker {
        Ok(data) => {
            let named = (data.len() as u64 <= MAX_LEN)
                .then(|| named_dir(&data))
                .flatten();
            let whole = data.as_ref() == WHOLE;
            let ours = if config.whole_store {
                whole
            } else {
                named == Some(root.as_os_str().as_bytes())
            };
            if ours || config.create_among_other_objects {
                return Ok(!ours);
            }
            return refuse(match named {
                _ if whole => "it holds a store kept wholly in the bucket (open it with \
                               BucketConfig::whole_store)"
                    .to_string(),
                Some(d) if config.whole_store => format!(
                    "it holds the tables of the store of directory {}, whose log and \
                     MANIFEST are on that disk",
                    String::from_utf8_lossy(d)
                ),
                Some(d) => format!(
                    "it holds the store of directory {} ({STORE_OBJECT}), not of {}",
                    String::from_utf8_lossy(d),
                    root.display()
                ),
                None => format!("its {STORE_OBJECT} object is not one bloomlsm writes"),
            });
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => {
            return Err(Error::io(
                format!("{}: the check made at open, read {STORE_OBJECT}", here()),
                e,
            ));
        }
    }
    let listing = client
        .list_entries(dir_key)
        .map_err(|e| Error::io(format!("{}: the check made at open", here()), e))?;
    let others: Vec<String> = listing
        .objects
        .iter()
        .filter_map(|m| m.location.filename())
        .filter(|n| *n != STORE_OBJECT && *n != PROBE_OBJECT)
        .map(str::to_string)
        .chain(
            listing
                .common_prefixes
                .iter()
                .filter_map(|p| p.filename().map(|n| format!("{n}/"))),
        )
        .collect();
    let has_store = !config.whole_store && std::fs::metadata(filename::current_file(root)).is_ok();
    if others.is_empty()
        || config.create_among_other_objects
        || (has_store && others.iter().all(|n| store_name(n.trim_end_matches('/'))))
    {
        return Ok(true);
    }
    let more = others.len() - 1;
    refuse(format!(
        "it holds objects of no store here ({}{})",
        others[0],
        if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        }
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_marker_names_one_directory_and_other_bytes_name_none() {
        let m = contents(Path::new("/var/lib/app/db"));
        assert_eq!(&m[..], b"bloomlsm store\ndir = /var/lib/app/db\n");
        assert_eq!(named_dir(&m), Some(&b"/var/lib/app/db"[..]));
        for bad in [
            &b""[..],
            b"bloomlsm store\n",
            b"bloomlsm store\ndir = \n",
            b"bloomlsm store\ndir = /a\n/b\n",
            b"bloomlsm store\ndir = /a",
            b"other\ndir = /a\n",
            &m[..m.len() - 1],
        ] {
            assert_eq!(named_dir(bad), None, "{bad:?}");
        }
    }
}
