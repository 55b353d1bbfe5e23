//! Option presets for small stores: a few kilobytes of writes make files
//! and a few hundred keys make levels. A test whose sizes matter to what it
//! checks states them, on top of a preset or of `Options::default()`.

use bloomlsm::Options;

/// The defaults, with compactions only when the test calls `Db::compact`
/// or `Db::maintain`: the tree is a function of the writes alone.
pub fn manual() -> Options {
    Options::default().background_compaction(false)
}

/// [`manual`], with every write fsynced before it is acknowledged: the
/// write-ahead log holds every acknowledged write.
pub fn synced() -> Options {
    manual().sync_writes(true)
}

/// [`manual`] with 4 KiB memtables and files: a few dozen writes make a
/// file.
pub fn tiny() -> Options {
    manual().write_buffer_size(4096).target_file_size(4096)
}

/// [`manual`] with 8 KiB memtables, 4 KiB files and 1 KiB blocks, L1 of
/// 16 KiB and each level 4 times the one above, sized from L1 down (fixed
/// targets): a few thousand keys make three levels.
pub fn small() -> Options {
    manual()
        .write_buffer_size(8 << 10)
        .target_file_size(4096)
        .level1_max_bytes(16 << 10)
        .level_size_multiplier(4)
        .dynamic_level_bytes(false)
        .block_size(1024)
}

/// [`manual`] with 16 KiB memtables, 4 KiB files and 1 KiB blocks, L1 of
/// 16 KiB doubling per level (fixed targets), and no block cache: every
/// read of a table reaches its file, as the tests that damage files need.
pub fn uncached() -> Options {
    manual()
        .write_buffer_size(16 << 10)
        .target_file_size(4096)
        .level1_max_bytes(16 << 10)
        .level_size_multiplier(2)
        .dynamic_level_bytes(false)
        .block_size(1024)
        .block_cache_capacity(0)
}
