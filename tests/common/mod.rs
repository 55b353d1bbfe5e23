//! Helpers shared by the store's integration tests.

use std::path::Path;

/// The `bench` command's deterministic keys (`SplitMix64`, the present and
/// absent key families); not part of the library's API.
#[allow(dead_code)]
#[path = "../../src/bin/bloomlsm/workload.rs"]
pub mod workload;

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
#[allow(dead_code)]
pub fn long_mode() -> bool {
    std::env::var_os("BLOOMLSM_LONG").is_some_and(|v| v != "0")
}
