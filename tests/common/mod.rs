//! The integration tests' kit: scratch directories and the long mode here;
//! readable keys and values ([`keys`]), the `BTreeMap` model of a store
//! ([`model`]), small-store option presets ([`options`]), the levels holding
//! files ([`levels`]), a store's files and directory snapshots ([`files`]),
//! resealed damage to a table's filter block ([`damage`]),
//! the crash tests' child processes ([`child`]), a TCP proxy that can be
//! stopped and restarted ([`proxy`]) and, with `object-store`, the bucket
//! tests' server, prefixes and client (`bucket`). The study's keys are
//! the library's own, [`bloomlsm::workload`].
//!
//! Cargo compiles this module into every test binary, and each binary uses
//! only a part of it.
#![allow(dead_code)]

#[cfg(feature = "object-store")]
pub mod bucket;
pub mod child;
pub mod damage;
pub mod files;
pub mod keys;
pub mod levels;
pub mod model;
pub mod options;
pub mod proxy;

use std::path::Path;

/// A scratch directory, in memory when the machine has `/dev/shm`: the store
/// fsyncs on every flush, compaction and reopen, which a disk makes slow, and
/// these tests are about logic, not devices.
pub fn scratch_dir() -> tempfile::TempDir {
    let shm = Path::new("/dev/shm");
    if shm.is_dir()
        && let Ok(d) = tempfile::tempdir_in(shm)
    {
        return d;
    }
    tempfile::tempdir().unwrap()
}

/// `BLOOMLSM_LONG=1` (not in CI): the long runs of the crash, fault and
/// decoder tests (docs/design.md, "Testing").
pub fn long_mode() -> bool {
    std::env::var_os("BLOOMLSM_LONG").is_some_and(|v| v != "0")
}
