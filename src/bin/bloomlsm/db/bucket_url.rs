//! `s3://BUCKET/PREFIX` in place of a store's directory: a store kept
//! wholly in a bucket (the library's `BucketConfig::whole_store`, feature
//! `object-store`). The reading commands (`get`, `scan`, `stats`,
//! `verify`, `keyspaces`) open it read-only — from any machine, beside its
//! running writer — with the endpoint, region and credentials of the
//! `AWS_*` environment; `s3://BUCKET/PREFIX?checkpoint=NAME` opens its kept
//! checkpoint `NAME` instead. `checkpoint` keeps a checkpoint beside it or
//! copies it into a local directory, `checkpoints` lists and deletes them;
//! the writing commands refuse it (a store in a bucket has one writer,
//! which the library opens).

use std::path::Path;

use bloomlsm::{Db, Options};

use crate::CliError;

/// The bucket and prefix `dir` names, if it is `s3://BUCKET[/PREFIX]`
/// (without a `?checkpoint=NAME`).
pub fn bucket_of(dir: &Path) -> Option<(String, String)> {
    parse(dir).map(|(b, p, _)| (b, p))
}

/// `s3://BUCKET[/PREFIX][?checkpoint=NAME]`: the bucket, the prefix and
/// the checkpoint named, if `dir` is such a URL.
fn parse(dir: &Path) -> Option<(String, String, Option<String>)> {
    let s = dir.to_str()?.strip_prefix("s3://")?;
    let (s, checkpoint) = match s.split_once('?') {
        Some((s, q)) => (
            s,
            Some(q.strip_prefix("checkpoint=").unwrap_or(q).to_string()),
        ),
        None => (s, None),
    };
    let (bucket, prefix) = s.split_once('/').unwrap_or((s, ""));
    (!bucket.is_empty()).then(|| (bucket.to_string(), prefix.to_string(), checkpoint))
}

/// Refuses `s3://…` for a writing command (a usage error).
pub fn refuse_for_writing(dir: &Path) -> Result<(), CliError> {
    if bucket_of(dir).is_some() {
        return Err(CliError::usage(format!(
            "{}: the writing commands take a local directory; a store in a bucket has one \
             writer, opened through the library (BucketConfig::whole_store), and the reading \
             commands read it beside that writer",
            dir.display()
        )));
    }
    Ok(())
}

/// Opens the store `dir` names read-only if it is `s3://…`; `None` for a
/// local directory.
#[cfg(feature = "object-store")]
pub fn open_read_only(dir: &Path, opts: Options) -> bloomlsm::Result<Option<Db>> {
    use bloomlsm::fs::FileSystem;
    use bloomlsm::fs::bucket::{BucketConfig, BucketFs};
    let Some((bucket, prefix, checkpoint)) = parse(dir) else {
        return Ok(None);
    };
    let config = BucketConfig::new("", bucket, "").prefix(prefix);
    if let Some(name) = checkpoint {
        let (fs, local) = BucketFs::checkpoint_reader(config, &name)?;
        return Db::open_read_only(local, opts.fs(fs)).map(Some);
    }
    let (fs, local) = BucketFs::whole_store_reader(config)?;
    if fs.file_len(&local.join("CURRENT")).is_err() {
        return Err(bloomlsm::Error::invalid(format!(
            "{} holds no store kept wholly in a bucket (no CURRENT in its journal)",
            dir.display()
        )));
    }
    Db::open_read_only(local, opts.fs(fs)).map(Some)
}

/// A new store's file system and directory.
pub type Destination = (
    std::sync::Arc<dyn bloomlsm::fs::FileSystem>,
    std::path::PathBuf,
);

/// The file system and directory of a new store kept wholly in the bucket
/// `url` names (`s3://BUCKET/PREFIX`), for `db checkpoint DIR s3://…`: its
/// local directory a scratch one, removed when the file system is dropped.
#[cfg(feature = "object-store")]
pub fn whole_store_destination(url: &Path) -> bloomlsm::Result<Destination> {
    use bloomlsm::fs::FileSystem;
    use bloomlsm::fs::bucket::{BucketConfig, BucketFs};
    let (bucket, prefix, checkpoint) = parse(url).ok_or_else(|| {
        bloomlsm::Error::invalid(format!("{} is not s3://BUCKET/PREFIX", url.display()))
    })?;
    if checkpoint.is_some() {
        return Err(bloomlsm::Error::invalid(format!(
            "{}: a checkpoint opens read-only; name a prefix to copy the store into",
            url.display()
        )));
    }
    let config = BucketConfig::new("", bucket, "").prefix(prefix);
    let (fs, dir) = BucketFs::whole_store_reader(config)?;
    if fs.file_len(&dir.join("CURRENT")).is_ok() {
        return Err(bloomlsm::Error::invalid(format!(
            "{} holds a store already; copy into an empty prefix",
            url.display()
        )));
    }
    Ok((fs, dir))
}

/// `db checkpoint s3://BUCKET/SRC?checkpoint=NAME s3://BUCKET/DEST`: a
/// clone of the checkpoint under `DEST`, linking its tables; the number
/// linked.
#[cfg(feature = "object-store")]
pub fn clone_checkpoint(from: &Path, into: &Path) -> Result<usize, CliError> {
    use bloomlsm::fs::bucket::{BucketConfig, BucketFs};
    let (Some((bucket, prefix, checkpoint)), Some((into_bucket, into_prefix, into_cp))) =
        (parse(from), parse(into))
    else {
        return Err(CliError::usage(
            "a clone goes from s3://… to s3://…".to_string(),
        ));
    };
    let Some(name) = checkpoint else {
        return Err(CliError::usage(format!(
            "{} to {}: a store in a bucket goes into another prefix as a clone of one of its              checkpoints: keep one (db checkpoint {} --name NAME), then copy              {}?checkpoint=NAME",
            from.display(),
            into.display(),
            from.display(),
            from.display()
        )));
    };
    if into_bucket != bucket || into_cp.is_some() {
        return Err(CliError::usage(format!(
            "{}: a clone goes into another prefix of the same bucket ({bucket})",
            into.display()
        )));
    }
    let config = BucketConfig::new("", bucket, "").prefix(prefix);
    Ok(BucketFs::clone_checkpoint(config, &name, &into_prefix)?)
}

/// Without the `object-store` feature there is no bucket to clone in.
#[cfg(not(feature = "object-store"))]
pub fn clone_checkpoint(from: &Path, _into: &Path) -> Result<usize, CliError> {
    Err(CliError::new(format!(
        "{}: reading a store in a bucket needs the object-store feature \
         (cargo build --release --features object-store)",
        from.display()
    )))
}

/// Without the `object-store` feature there is no bucket to copy into.
#[cfg(not(feature = "object-store"))]
pub fn whole_store_destination(url: &Path) -> bloomlsm::Result<Destination> {
    Err(bloomlsm::Error::invalid(format!(
        "{}: writing a store into a bucket needs the object-store feature \
         (cargo build --release --features object-store)",
        url.display()
    )))
}

/// Without the `object-store` feature, `s3://…` is refused naming it.
#[cfg(not(feature = "object-store"))]
pub fn open_read_only(dir: &Path, opts: Options) -> bloomlsm::Result<Option<Db>> {
    let _ = opts;
    match bucket_of(dir) {
        Some(_) => Err(bloomlsm::Error::invalid(format!(
            "{}: reading a store in a bucket needs the object-store feature \
             (cargo build --release --features object-store)",
            dir.display()
        ))),
        None => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bucket_url_names_a_bucket_and_a_prefix() {
        let b = |s: &str| bucket_of(Path::new(s));
        assert_eq!(b("s3://bk/a/b/"), Some(("bk".into(), "a/b/".into())));
        assert_eq!(b("s3://bk"), Some(("bk".into(), String::new())));
        assert_eq!(b("s3://"), None);
        assert_eq!(b("/var/db"), None);
        assert_eq!(b("s3:/bk"), None);
        assert_eq!(
            parse(Path::new("s3://bk/a/?checkpoint=n1")),
            Some(("bk".into(), "a/".into(), Some("n1".into())))
        );
        assert_eq!(
            b("s3://bk/a?checkpoint=n1"),
            Some(("bk".into(), "a".into()))
        );
    }
}
