//! Helpers shared by the store's integration tests.

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
