//! `--memory-ceiling`: the study runs inside a memory cgroup of its own,
//! whose limit covers the page cache its reads fill as well as the
//! process's own memory, so that buffered reads find the store's data in
//! memory only as far as the ceiling leaves room: the run behaves as on a
//! machine whose memory is that small, with data many times larger.
//!
//! Linux only. The cgroup is made under the process's own memory cgroup
//! (cgroup v2's unified hierarchy, or v1's `memory` controller), the
//! process moves into it before the study starts any thread, and it moves
//! back and removes the cgroup at the end. Making a cgroup needs the right
//! to write there (root, or a delegated subtree); without it the run stops
//! before anything is written and says how to run it under `systemd-run`
//! instead, which sets the same limit from outside.

use std::path::{Path, PathBuf};

use crate::{CliError, CliResult};

use super::args::BenchArgs;

/// Memory the process needs beside its stores' metadata, block cache and
/// memtables: its code, allocator slack, the key lists of the lookups.
const PROCESS_FLOOR: u64 = 64 << 20;

/// The memory cgroup the run is in while this lives.
pub struct Ceiling {
    /// The cgroup's directory.
    dir: PathBuf,
    /// The directory of the cgroup the process came from.
    parent: PathBuf,
    /// Which hierarchy: v2 names its files `memory.*` differently.
    v2: bool,
    /// The limit, in bytes.
    pub limit: u64,
}

/// The smallest ceiling a run of `args` can work under: the block cache,
/// two memtables, the filters of the configuration that spends most and
/// the indexes (about a byte per key), and [`PROCESS_FLOOR`].
pub fn minimum(args: &BenchArgs, block_cache: u64, write_buffer: u64) -> u64 {
    let bits = args
        .configs
        .iter()
        .map(|c| c.nominal_bits_per_key().unwrap_or(32.0))
        .fold(0.0f64, f64::max);
    let per_key = (bits / 8.0 + 1.0).ceil() as u64;
    PROCESS_FLOOR
        .saturating_add(block_cache)
        .saturating_add(write_buffer.saturating_mul(2))
        .saturating_add(args.keys.saturating_mul(per_key))
}

impl Ceiling {
    /// With `--memory-ceiling`, checks it against [`minimum`] and moves the
    /// process into a new memory cgroup limited to it. A ceiling below the
    /// minimum, or a cgroup that cannot be made, is a usage error before
    /// anything is written.
    pub fn enter(
        args: &BenchArgs,
        block_cache: u64,
        write_buffer: u64,
    ) -> CliResult<Option<Ceiling>> {
        let Some(limit) = args.memory_ceiling else {
            return Ok(None);
        };
        let min = minimum(args, block_cache, write_buffer);
        if limit < min {
            return Err(CliError::usage(format!(
                "--memory-ceiling {} is below what this run needs in memory ({}: block cache, two memtables, filters and indexes of {} keys, and {} for the process)",
                mib(limit),
                mib(min),
                args.keys,
                mib(PROCESS_FLOOR)
            )));
        }
        Self::make(limit).map(Some).map_err(|e| {
            CliError::usage(format!(
                "--memory-ceiling: cannot make a memory cgroup ({e}); run the study without it under a limit set from outside, e.g. `systemd-run --user --scope -p MemoryMax={limit} bloomlsm bench ...`"
            ))
        })
    }

    fn make(limit: u64) -> Result<Ceiling, String> {
        let (parent, v2) = own_memory_cgroup()?;
        let dir = parent.join(format!("bloomlsm-bench-{}", std::process::id()));
        std::fs::create_dir(&dir).map_err(|e| format!("create {}: {e}", dir.display()))?;
        let ceiling = Ceiling {
            dir,
            parent,
            v2,
            limit,
        };
        let limit_file = if v2 {
            "memory.max"
        } else {
            "memory.limit_in_bytes"
        };
        ceiling.write(limit_file, &limit.to_string())?;
        // Swap would let the process's own memory leave the ceiling's count
        // (v1 counts it apart; v2's swap has its own limit).
        if v2 {
            let _ = ceiling.write("memory.swap.max", "0");
        }
        ceiling.write("cgroup.procs", &std::process::id().to_string())?;
        Ok(ceiling)
    }

    /// Writes `value` to the cgroup's file `name`.
    fn write(&self, name: &str, value: &str) -> Result<(), String> {
        let p = self.dir.join(name);
        std::fs::write(&p, value).map_err(|e| format!("write {}: {e}", p.display()))
    }

    /// The most memory the cgroup has held, page cache included (`None`
    /// where the kernel does not say).
    pub fn peak(&self) -> Option<u64> {
        let name = if self.v2 {
            "memory.peak"
        } else {
            "memory.max_usage_in_bytes"
        };
        std::fs::read_to_string(self.dir.join(name))
            .ok()?
            .trim()
            .parse()
            .ok()
    }

    /// Where the cgroup is.
    pub fn path(&self) -> &Path {
        &self.dir
    }
}

impl Drop for Ceiling {
    fn drop(&mut self) {
        let _ = std::fs::write(
            self.parent.join("cgroup.procs"),
            std::process::id().to_string(),
        );
        let _ = std::fs::remove_dir(&self.dir);
    }
}

/// The directory of this process's memory cgroup, and whether it is in
/// cgroup v2's unified hierarchy: v1's `memory` controller line of
/// `/proc/self/cgroup` if there is one, else the v2 line `0::PATH` when the
/// unified hierarchy has the memory controller.
fn own_memory_cgroup() -> Result<(PathBuf, bool), String> {
    let text = std::fs::read_to_string("/proc/self/cgroup")
        .map_err(|e| format!("read /proc/self/cgroup: {e}"))?;
    for line in text.lines() {
        let mut parts = line.splitn(3, ':');
        let (_, controllers, path) = (parts.next(), parts.next(), parts.next());
        if let (Some(c), Some(p)) = (controllers, path)
            && c.split(',').any(|c| c == "memory")
        {
            let dir = Path::new("/sys/fs/cgroup/memory").join(p.trim_start_matches('/'));
            if dir.is_dir() {
                return Ok((dir, false));
            }
        }
    }
    for line in text.lines() {
        if let Some(p) = line.strip_prefix("0::") {
            let root = Path::new("/sys/fs/cgroup");
            let has_memory = std::fs::read_to_string(root.join("cgroup.controllers"))
                .is_ok_and(|c| c.split_whitespace().any(|c| c == "memory"));
            if has_memory {
                return Ok((root.join(p.trim_start_matches('/')), true));
            }
        }
    }
    Err("no memory cgroup controller is mounted for this process".to_string())
}

/// `n` bytes in MiB, for messages.
fn mib(n: u64) -> String {
    format!("{:.0} MiB", n as f64 / (1u64 << 20) as f64)
}
