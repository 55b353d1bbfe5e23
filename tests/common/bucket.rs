//! The bucket tests' kit (feature `object-store`): the S3 server
//! `BLOOMLSM_S3_ENDPOINT` names (`.ci/moto.sh start` runs one and prints
//! its endpoint) and its bucket `BLOOMLSM_S3_BUCKET` (default
//! `bloomlsm-test`, which the script makes), a fresh key prefix per store,
//! the store's `BucketConfig`, and the test's own client of the bucket for
//! what happens behind the store's back. Without the endpoint every bucket
//! test fails: none is skipped.

use std::collections::BTreeSet;
use std::path::Path;

use bloomlsm::Db;
use bloomlsm::fs::bucket::BucketConfig;
use object_store::aws::AmazonS3Builder;
use object_store::path::Path as ObjectPath;
use object_store::{ClientOptions, ObjectStore, ObjectStoreExt, PutPayload};

pub fn endpoint() -> String {
    std::env::var("BLOOMLSM_S3_ENDPOINT").expect(
        "BLOOMLSM_S3_ENDPOINT names no S3 server: run `BLOOMLSM_S3_ENDPOINT=$(bash .ci/moto.sh start)`",
    )
}

pub fn bucket() -> String {
    std::env::var("BLOOMLSM_S3_BUCKET").unwrap_or_else(|_| "bloomlsm-test".to_string())
}

/// A key prefix no other test or earlier run uses.
pub fn prefix(test: &str) -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    format!("{test}-{}-{n}-{nanos}/", std::process::id())
}

/// The store in `dir`, its tables under `prefix` at `endpoint`, cached in
/// `cache` (16 KiB chunks).
pub fn config_at(endpoint: &str, dir: &Path, cache: &Path, prefix: &str) -> BucketConfig {
    BucketConfig::new(dir, bucket(), cache)
        .endpoint(endpoint)
        .region("us-east-1")
        .credentials("test", "test")
        .prefix(prefix)
        .chunk_bytes(16 << 10)
        .cache_bytes(256 << 20)
}

/// [`config_at`] the server itself.
pub fn config(dir: &Path, cache: &Path, prefix: &str) -> BucketConfig {
    config_at(&endpoint(), dir, cache, prefix)
}

/// The table files a store's current version (its MANIFEST) names.
pub fn table_names(db: &Db) -> BTreeSet<String> {
    db.file_stats()
        .iter()
        .map(|f| format!("{:06}.sst", f.number))
        .collect()
}

/// The test's own client of the bucket, straight to the server.
pub struct Bucket {
    store: object_store::aws::AmazonS3,
    rt: tokio::runtime::Runtime,
}

impl Bucket {
    pub fn new() -> Bucket {
        let store = AmazonS3Builder::new()
            .with_endpoint(endpoint())
            .with_bucket_name(bucket())
            .with_region("us-east-1")
            .with_access_key_id("test")
            .with_secret_access_key("test")
            .with_client_options(ClientOptions::new().with_allow_http(true))
            .build()
            .unwrap();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        Bucket { store, rt }
    }

    /// The names of the objects directly under `prefix`.
    pub fn list(&self, prefix: &str) -> BTreeSet<String> {
        let p = ObjectPath::from(prefix);
        let r = self
            .rt
            .block_on(self.store.list_with_delimiter(Some(&p)))
            .unwrap();
        r.objects
            .iter()
            .map(|m| m.location.filename().unwrap().to_string())
            .collect()
    }

    /// The keys of every object under `prefix`, at any depth.
    pub fn all_under(&self, prefix: &str) -> Vec<String> {
        let mut out = Vec::new();
        let mut dirs = vec![ObjectPath::from(prefix)];
        while let Some(d) = dirs.pop() {
            let r = self
                .rt
                .block_on(self.store.list_with_delimiter(Some(&d)))
                .unwrap();
            out.extend(r.objects.into_iter().map(|m| m.location.to_string()));
            dirs.extend(r.common_prefixes);
        }
        out
    }

    /// The table objects (`*.sst`) directly under `prefix`.
    pub fn tables(&self, prefix: &str) -> BTreeSet<String> {
        let mut names = self.list(prefix);
        names.retain(|n| n.ends_with(".sst"));
        names
    }

    pub fn get(&self, key: &str) -> Vec<u8> {
        let k = ObjectPath::from(key);
        self.rt
            .block_on(async { self.store.get(&k).await?.bytes().await })
            .unwrap()
            .to_vec()
    }

    pub fn put(&self, key: &str, data: Vec<u8>) {
        let k = ObjectPath::from(key);
        self.rt
            .block_on(self.store.put(&k, PutPayload::from(data)))
            .unwrap();
    }

    pub fn delete(&self, key: &str) {
        let k = ObjectPath::from(key);
        self.rt.block_on(self.store.delete(&k)).unwrap();
    }
}

/// Every table `db`'s MANIFEST names is an object under `prefix`.
pub fn check_named_in_bucket(bucket: &Bucket, prefix: &str, db: &Db, what: &str) {
    let there = bucket.tables(prefix);
    let missing: Vec<String> = table_names(db)
        .into_iter()
        .filter(|n| !there.contains(n))
        .collect();
    assert!(
        missing.is_empty(),
        "{what}: the MANIFEST names {missing:?}, which the bucket lacks"
    );
}
