//! How the reports print: one readable summary per [`Stats`],
//! [`LevelStats`], [`FileStats`] and [`IoCounters`], sizes short and keys
//! cut.

use std::fmt;

use super::*;

/// Bytes as a short figure: `512 B`, `3.4 KiB`, `12.0 MiB`.
struct Size(u64);

impl fmt::Display for Size {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
        if self.0 < 1024 {
            return write!(f, "{} B", self.0);
        }
        let (mut v, mut unit) = (self.0 as f64 / 1024.0, 0);
        while v >= 1024.0 && unit + 1 < UNITS.len() {
            v /= 1024.0;
            unit += 1;
        }
        write!(f, "{v:.1} {}", UNITS[unit])
    }
}

/// A key, printable ASCII kept and other bytes escaped, cut after 32 bytes.
struct Key<'a>(&'a [u8]);

impl fmt::Display for Key<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let cut = &self.0[..self.0.len().min(32)];
        write!(f, "\"{}\"", cut.escape_ascii())?;
        if cut.len() < self.0.len() {
            write!(f, "...({} bytes)", self.0.len())?;
        }
        Ok(())
    }
}

/// One line, e.g. `5 files considered: 1 out of key range, 4 filter checks
/// (3 negative, 1 false positives), 0 without a filter; 1 data blocks read
/// from disk (4.0 KiB), 0 cache hits`.
impl fmt::Display for IoCounters {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} files considered: {} out of key range, {} filter checks ({} negative, {} false positives), \
             {} without a filter; {} data blocks read from disk ({}), {} cache hits",
            self.files_considered,
            self.key_range_skips,
            self.filter_checks,
            self.filter_negatives,
            self.false_positives,
            self.unusable_filter_reads + self.unfiltered_reads,
            self.block_reads,
            Size(self.bytes_read),
            self.cache_hits,
        )?;
        if self.filter_block_reads + self.filter_cache_hits > 0 {
            write!(
                f,
                "; {} filter blocks read from disk ({}), {} from the cache",
                self.filter_block_reads,
                Size(self.filter_bytes_read),
                self.filter_cache_hits
            )?;
        }
        if self.index_block_reads + self.index_cache_hits > 0 {
            write!(
                f,
                "; {} index partitions read from disk ({}), {} from the cache",
                self.index_block_reads,
                Size(self.index_bytes_read),
                self.index_cache_hits
            )?;
        }
        if self.prefix_checks + self.prefix_unusable_reads > 0 {
            write!(
                f,
                "; {} prefix filter checks ({} negative, {} false positives), {} unusable",
                self.prefix_checks,
                self.prefix_negatives,
                self.prefix_false_positives,
                self.prefix_unusable_reads
            )?;
        }
        if self.range_checks + self.range_unusable_reads > 0 {
            write!(
                f,
                "; {} range filter checks ({} negative, {} false positives), {} unusable",
                self.range_checks,
                self.range_negatives,
                self.range_false_positives,
                self.range_unusable_reads
            )?;
        }
        if self.scan_blocks > 0 {
            write!(
                f,
                "; scans: {} data blocks ({} holding their entries), {} read from disk ({})",
                self.scan_blocks,
                self.scan_useful_blocks,
                self.scan_block_reads,
                Size(self.scan_bytes_read)
            )?;
        }
        Ok(())
    }
}

/// One line, e.g. `L1: 3 files, 30000 entries, 1.2 MiB; blocked512(10 b/k,
/// k=6) x3, 10.02 bits/key, 36.6 KiB in memory, predicted FPR 0.955%;
/// lookups: ...` (the [`IoCounters`] line).
impl fmt::Display for LevelStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "L{}: {} files, {} entries, {}; ",
            self.level,
            self.files,
            self.entries,
            Size(self.file_bytes)
        )?;
        if self.filtered_keys == 0 {
            f.write_str("no filters")?;
        } else {
            write!(
                f,
                "{}, {:.2} bits/key, {} in memory, predicted FPR {:.3}%",
                self.policies,
                self.filter_bits_per_key(),
                Size(self.filter_bytes),
                self.predicted_fpr * 100.0
            )?;
        }
        write!(f, "; lookups: {}", self.io)?;
        let w = &self.writes;
        if w.jobs > 0 || w.files_moved > 0 {
            write!(
                f,
                "; written: {} in {} jobs (read {} from above, {} here), {} moved in ({} files in {} moves)",
                Size(w.bytes_written),
                w.jobs,
                Size(w.bytes_read_above),
                Size(w.bytes_read_here),
                Size(w.bytes_moved),
                w.files_moved,
                w.moves
            )?;
        }
        Ok(())
    }
}

impl fmt::Display for Stats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "gets: {} ({} found, {} answered by memtables); {:.4} data-block reads per missing get (predicted {:.4})",
            self.gets,
            self.gets_found,
            self.memtable_answers,
            self.block_reads_per_missing_get(),
            self.predicted_block_reads_per_missing_get()
        )?;
        writeln!(
            f,
            "memory: filters {} (of {}), indexes {} (of {}), block cache {}, memtables {}",
            Size(self.filter_pinned_bytes),
            Size(self.filter_bytes),
            Size(self.index_pinned_bytes),
            Size(self.index_bytes),
            Size(self.block_cache_bytes),
            Size(self.memtable_bytes)
        )?;
        writeln!(
            f,
            "background: {} flushes ({}), {} compactions ({}), {} filter rebuilds ({} copying data blocks); {} write slowdowns, {} stalls",
            self.flushes,
            Size(self.bytes_flushed),
            self.compactions,
            Size(self.bytes_compacted),
            self.filter_rebuilds,
            self.filter_rebuilds_copied,
            self.write_slowdowns,
            self.write_stalls
        )?;
        if let Some(w) = self.write_amplification() {
            writeln!(
                f,
                "writes: {} from the user; write amplification {w:.2}",
                Size(self.user_bytes_written)
            )?;
        }
        if self.table_reopens > 0 {
            writeln!(
                f,
                "table files: {} open, {} reopened",
                self.table_files_open, self.table_reopens
            )?;
        }
        if self.wal_tail_bytes_dropped > 0 || self.wal_records_salvaged > 0 {
            writeln!(
                f,
                "last open: {} bytes dropped from a torn WAL tail, {} corrupt WAL records skipped",
                self.wal_tail_bytes_dropped, self.wal_records_salvaged
            )?;
        }
        let active = |l: &&LevelStats| {
            l.files > 0 || l.io != IoCounters::default() || l.writes != LevelWrites::default()
        };
        for l in self.levels.iter().filter(active) {
            writeln!(f, "{l}")?;
        }
        write!(f, "all levels: {}", self.total)
    }
}

/// One line, e.g. `000012.sst L1: 10000 entries, 1.2 MiB, keys "a".."m";
/// blocked512, 10.02 bits/key, predicted FPR 0.955%; lookups: ...`.
impl fmt::Display for FileStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:06}.sst L{}: {} entries, {}, keys {}..{}; ",
            self.number,
            self.level,
            self.entries,
            Size(self.file_bytes),
            Key(&self.smallest),
            Key(&self.largest)
        )?;
        if self.compression != "none" {
            write!(
                f,
                "{} (data {:.2}x), ",
                self.compression,
                self.data_raw_bytes as f64 / self.data_bytes.max(1) as f64
            )?;
        }
        if self.filter_usable {
            write!(
                f,
                "{}, {:.2} bits/key, predicted FPR {:.3}%",
                self.filter,
                self.bits_per_key,
                self.predicted_fpr * 100.0
            )?;
            if self.filter_partitions > 0 {
                write!(f, ", {} partitions", self.filter_partitions)?;
            }
            if !self.filter_pinned {
                f.write_str(", read on demand")?;
            }
        } else if self.filter == "none" {
            f.write_str("no filter")?;
        } else {
            write!(f, "{} (unusable by this build)", self.filter)?;
        }
        write!(f, "; lookups: {}", self.io)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_keys_print_short() {
        assert_eq!(Size(512).to_string(), "512 B");
        assert_eq!(Size(3 << 10).to_string(), "3.0 KiB");
        assert_eq!(Size(12 << 20).to_string(), "12.0 MiB");
        assert_eq!(Size(5 << 40).to_string(), "5.0 TiB");
        assert_eq!(Key(b"a\x00").to_string(), "\"a\\x00\"");
        assert_eq!(
            Key(&[b'k'; 40]).to_string(),
            format!("\"{}\"...(40 bytes)", "k".repeat(32))
        );
    }

    #[test]
    fn display_summarises_stats() {
        let io = IoCounters {
            files_considered: 5,
            key_range_skips: 1,
            filter_checks: 4,
            filter_negatives: 3,
            filter_positives: 1,
            false_positives: 1,
            block_reads: 1,
            bytes_read: 4096,
            ..IoCounters::default()
        };
        assert_eq!(
            io.to_string(),
            "5 files considered: 1 out of key range, 4 filter checks (3 negative, 1 false positives), \
             0 without a filter; 1 data blocks read from disk (4.0 KiB), 0 cache hits"
        );
        let level = LevelStats {
            level: 1,
            files: 3,
            entries: 30_000,
            file_bytes: 3 << 20,
            filter_bytes: 37_500,
            filtered_keys: 30_000,
            policies: "blocked512(10 b/k, k=6) x3".into(),
            predicted_fpr: 0.00955,
            io,
            ..LevelStats::default()
        };
        assert_eq!(
            level.to_string(),
            format!(
                "L1: 3 files, 30000 entries, 3.0 MiB; blocked512(10 b/k, k=6) x3, 10.00 bits/key, \
                 36.6 KiB in memory, predicted FPR 0.955%; lookups: {io}"
            )
        );
        let stats = Stats {
            gets: 10,
            levels: vec![LevelStats::default(), level.clone(), LevelStats::default()],
            total: io,
            ..Stats::default()
        };
        let text = stats.to_string();
        assert!(
            text.starts_with("gets: 10 (0 found, 0 answered by memtables)"),
            "{text}"
        );
        assert!(text.contains(&format!("\n{level}\n")), "{text}");
        assert!(!text.contains("L0:") && !text.contains("L2:"), "{text}");
        assert!(!text.contains("last open"), "{text}");
        assert!(text.ends_with(&format!("all levels: {io}")), "{text}");
        let file = FileStats {
            level: 1,
            number: 12,
            file_bytes: 1000,
            data_bytes: 900,
            data_raw_bytes: 900,
            compression: "none".into(),
            entries: 10,
            smallest: b"a".to_vec(),
            largest: b"m".to_vec(),
            filter: "none".into(),
            bits_per_key: 0.0,
            filter_usable: false,
            filter_pinned: false,
            filter_partitions: 0,
            index_partitions: 0,
            index_pinned: true,
            probe_chance: 1.0,
            predicted_fpr: 1.0,
            io: IoCounters::default(),
        };
        assert!(
            file.to_string().starts_with(
                "000012.sst L1: 10 entries, 1000 B, keys \"a\"..\"m\"; no filter; lookups: 0 files"
            ),
            "{file}"
        );
    }

    #[test]
    fn write_amplification_is_table_bytes_over_user_bytes() {
        let mut s = Stats::default();
        assert_eq!(s.write_amplification(), None);
        assert!(!s.to_string().contains("write amplification"));
        s.user_bytes_written = 1000;
        s.bytes_flushed = 1100;
        s.bytes_compacted = 2400;
        assert_eq!(s.write_amplification(), Some(3.5));
        assert!(
            s.to_string()
                .contains("writes: 1000 B from the user; write amplification 3.50"),
            "{s}"
        );
    }
}
