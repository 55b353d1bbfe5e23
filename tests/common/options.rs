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

/// `opts` with L0 merged at four files, delayed at 8 and stopped at 12
/// (LevelDB's triggers), so that the presets make the trees their tests
/// check.
pub fn leveldb_l0(opts: Options) -> Options {
    opts.l0_compaction_trigger(4)
        .l0_slowdown_trigger(8)
        .l0_stop_trigger(12)
}

/// [`manual`] with 4 KiB memtables and files and LevelDB's L0 triggers: a
/// few dozen writes make a file.
pub fn tiny() -> Options {
    leveldb_l0(manual().write_buffer_size(4096).target_file_size(4096))
}

/// [`manual`] with 8 KiB memtables, 4 KiB files and 1 KiB blocks, L1 of
/// 16 KiB and each level 4 times the one above, sized from L1 down (fixed
/// targets), LevelDB's L0 triggers: a few thousand keys make three levels.
pub fn small() -> Options {
    leveldb_l0(manual())
        .write_buffer_size(8 << 10)
        .target_file_size(4096)
        .level1_max_bytes(16 << 10)
        .level_size_multiplier(4)
        .dynamic_level_bytes(false)
        .block_size(1024)
}

/// [`manual`] with 16 KiB memtables, 4 KiB files and 1 KiB blocks, L1 of
/// 16 KiB doubling per level (fixed targets), LevelDB's L0 triggers, and no
/// block cache: every read of a table reaches its file, as the tests that
/// damage files need.
pub fn uncached() -> Options {
    leveldb_l0(manual())
        .write_buffer_size(16 << 10)
        .target_file_size(4096)
        .level1_max_bytes(16 << 10)
        .level_size_multiplier(2)
        .dynamic_level_bytes(false)
        .block_size(1024)
        .block_cache_capacity(0)
}
