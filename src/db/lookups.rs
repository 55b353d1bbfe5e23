//! The store's lookup history ([`LookupHistory`]): its `LOOKUPS` file
//! (docs/format.md §18) and what a handle adds to it.
//!
//! A handle opens with the history the file holds (its *base*) and counts
//! its own lookups in [`Counters`] as always; the history is the base plus
//! what the handle counted since open, less what it had counted when the
//! history was last reset (the *skip*). [`Db::reset_stats`] folds the
//! handle's counts into the base before zeroing them, so the history never
//! goes back. A writable handle writes the file after each flush and at
//! close, replacing it whole (`LOOKUPS.tmp`, fsynced, renamed over it); a
//! failed write is not an error of the store's (the history is advice). A
//! whole store in a bucket writes none: its local directory holds only its
//! lock (`FileSystem::keeps_local_files`), and its history lives in the
//! process. A damaged file makes the history begin again at open, saying why
//! ([`LookupHistory::restarted`]); it never fails the open.

use std::path::Path;

use super::*;
use crate::stats::LookupHistory;

/// The first line of a `LOOKUPS` file.
const HEADER: &str = "# bloomlsm LOOKUPS: the lookups this store has served\n";
/// The format version this build writes and reads.
const VERSION: u32 = 1;
/// The most levels a file may name (a store has at most 16 today).
const MAX_LEVELS: usize = 64;

/// What a handle adds its counts to (module docs).
#[derive(Default)]
pub(super) struct HistoryBase {
    /// The file's history at open, plus the counts folded in by resets.
    base: LookupHistory,
    /// The handle's counts when the history was last reset by it.
    skip: LookupHistory,
}

impl HistoryBase {
    /// The history in `dir`'s `LOOKUPS` (a new one, counted from now, if
    /// there is none; a restarted one if it cannot be read).
    pub(super) fn load(fs: &dyn FileSystem, dir: &Path, levels: usize) -> HistoryBase {
        let path = filename::lookups_file(dir);
        let mut base = match crate::fs::read_all(fs, &path) {
            Ok(bytes) => decode(&bytes, &path).unwrap_or_else(|e| LookupHistory {
                restarted: Some(e.to_string()),
                ..LookupHistory::empty(now_unix_secs(), levels)
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                LookupHistory::empty(now_unix_secs(), levels)
            }
            Err(e) => LookupHistory {
                restarted: Some(format!("read {}: {e}", path.display())),
                ..LookupHistory::empty(now_unix_secs(), levels)
            },
        };
        if base.levels.len() < levels {
            base.levels.resize(levels, IoCounters::ZERO);
        }
        HistoryBase {
            base,
            skip: LookupHistory::default(),
        }
    }
}

/// Seconds since the Unix epoch (0 if the clock is before it).
fn now_unix_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The file's bytes: the header, `key = value` lines (counters that are 0
/// left out), and a CRC-32 of everything before the last line.
fn encode(h: &LookupHistory) -> Vec<u8> {
    let mut s = String::from(HEADER);
    s.push_str(&format!("version = {VERSION}\n"));
    s.push_str(&format!("since = {}\n", h.since_unix_secs));
    s.push_str(&format!("gets = {}\n", h.gets));
    s.push_str(&format!("gets_found = {}\n", h.gets_found));
    for (level, io) in h.levels.iter().enumerate() {
        for (name, v) in IoCounters::NAMES.iter().zip(io.to_array()) {
            if v > 0 {
                s.push_str(&format!("L{level}.{name} = {v}\n"));
            }
        }
    }
    options_file::seal(&mut s);
    s.into_bytes()
}

/// Parses a file read from `path`: any damage, unknown key or value out of
/// range is [`Error::Corruption`] at the offset of the line at fault.
fn decode(bytes: &[u8], path: &Path) -> Result<LookupHistory> {
    let bad = |at: usize, what: String| Error::corruption(path, at as u64, what);
    let text = options_file::unsealed(bytes, path, "LOOKUPS")?;
    if !text.starts_with(HEADER) {
        return Err(bad(0, "not a LOOKUPS file (its first line)".into()));
    }
    let mut h = LookupHistory::default();
    let mut version = None;
    let mut at = HEADER.len();
    for line in text[HEADER.len()..].lines() {
        let here = at;
        at += line.len() + 1;
        let (k, v) = line
            .split_once(" = ")
            .ok_or_else(|| bad(here, format!("not `key = value`: {line:?}")))?;
        let n: u64 = v
            .parse()
            .map_err(|_| bad(here, format!("{k}: not a count: {v:?}")))?;
        match k {
            "version" if n == u64::from(VERSION) => version = Some(n),
            "version" => {
                return Err(bad(
                    here,
                    format!("LOOKUPS version {n}; this build reads {VERSION}"),
                ));
            }
            _ if version.is_none() => return Err(bad(here, "LOOKUPS has no version".into())),
            "since" => h.since_unix_secs = n,
            "gets" => h.gets = n,
            "gets_found" => h.gets_found = n,
            _ => {
                let field = k
                    .strip_prefix('L')
                    .and_then(|r| r.split_once('.'))
                    .and_then(|(l, name)| {
                        let level: usize = l.parse().ok().filter(|&l| l < MAX_LEVELS)?;
                        let i = IoCounters::NAMES.iter().position(|&x| x == name)?;
                        Some((level, i))
                    });
                let Some((level, i)) = field else {
                    return Err(bad(here, format!("unknown key {k:?}")));
                };
                if h.levels.len() <= level {
                    h.levels.resize(level + 1, IoCounters::ZERO);
                }
                let mut a = h.levels[level].to_array();
                a[i] = n;
                h.levels[level] = IoCounters::from_array(a);
            }
        }
    }
    if version.is_none() {
        return Err(bad(HEADER.len(), "LOOKUPS has no version".into()));
    }
    Ok(h)
}

impl Inner {
    /// What this handle has counted since open: its lookups (including
    /// those `reset_stats` zeroed, which the base holds) per level.
    fn counted_lookups(&self) -> LookupHistory {
        let g = &self.counters.gets;
        let sv = self.super_version();
        let levels = sv
            .version
            .levels
            .iter()
            .enumerate()
            .map(|(level, files)| {
                let mut io = self.counters.retired_io[level].load();
                for f in files {
                    io.add(&f.io.load());
                }
                io
            })
            .collect();
        LookupHistory {
            gets: g.get(Get::Gets),
            gets_found: g.get(Get::Found),
            levels,
            ..LookupHistory::default()
        }
    }

    fn history_base(&self) -> MutexGuard<'_, HistoryBase> {
        self.counters
            .history
            .lock()
            .unwrap_or_else(|p| p.into_inner())
    }

    /// [`Db::lookup_history`].
    pub(super) fn lookup_history(&self) -> LookupHistory {
        let hb = self.history_base();
        self.history_of(&hb)
    }

    fn history_of(&self, hb: &HistoryBase) -> LookupHistory {
        let mut h = hb.base.clone();
        h.add(&self.counted_lookups().saturating_sub(&hb.skip));
        h
    }

    /// Before `reset_stats` zeroes the handle's counts: keeps them in the
    /// base.
    pub(super) fn fold_lookup_history(&self) {
        let mut hb = self.history_base();
        let counted = self.counted_lookups().saturating_sub(&hb.skip);
        hb.base.add(&counted);
        hb.skip = LookupHistory::default();
    }

    /// [`Db::reset_lookup_history`].
    pub(super) fn reset_lookup_history(&self) -> Result<()> {
        if self.state().vs.is_read_only() {
            return Err(Error::ReadOnly);
        }
        {
            let mut hb = self.history_base();
            hb.base = LookupHistory::empty(now_unix_secs(), self.opts.max_levels);
            hb.skip = self.counted_lookups();
        }
        self.save_lookup_history()
    }

    /// Writes the history to `LOOKUPS` (a writable handle; a read-only one
    /// writes nothing).
    pub(super) fn save_lookup_history(&self) -> Result<()> {
        if self.state().vs.is_read_only() || !self.opts.fs.keeps_local_files(&self.dir) {
            return Ok(());
        }
        // Held across the write: two saves never share `LOOKUPS.tmp`.
        let hb = self.history_base();
        let mut h = self.history_of(&hb);
        h.restarted = None;
        let fs = self.opts.fs.as_ref();
        let tmp = filename::lookups_tmp_file(&self.dir);
        let path = filename::lookups_file(&self.dir);
        let ctx = |what: &str, p: &Path| format!("{what} {}", p.display());
        let mut f = fs
            .create_truncate(&tmp)
            .map_err(|e| Error::io(ctx("create", &tmp), e))?;
        f.write_all(&encode(&h))
            .map_err(|e| Error::io(ctx("write", &tmp), e))?;
        f.sync_data()
            .map_err(|e| Error::io(ctx("fsync", &tmp), e))?;
        drop(f);
        fs.rename(&tmp, &path)
            .map_err(|e| Error::io(ctx("rename onto", &path), e))
    }
}

impl Db {
    /// The lookups the store has served over its history, this handle's
    /// included ([`LookupHistory`]): what [`Db::advise`] costs designs for.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// use bloomlsm::{Db, Options};
    /// let db = Db::open(dir.path(), Options::default())?;
    /// db.get("apple")?;
    /// db.close()?;
    /// let db = Db::open(dir.path(), Options::default())?;
    /// db.get("pear")?;
    /// assert_eq!(db.stats().gets, 1); // this handle's
    /// assert_eq!(db.lookup_history().gets, 2); // the store's
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn lookup_history(&self) -> LookupHistory {
        self.inner.lookup_history()
    }

    /// Starts the lookup history again from now (a window for
    /// [`Db::advise`]), and writes it. [`Error::ReadOnly`] on a read-only
    /// handle.
    pub fn reset_lookup_history(&self) -> Result<()> {
        self.inner.reset_lookup_history()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> LookupHistory {
        let mut h = LookupHistory::empty(1_764_000_000, 3);
        h.gets = 1000;
        h.gets_found = 400;
        h.levels[1].filter_checks = 900;
        h.levels[2].false_positives = 7;
        h.levels[2].range_checks = 3;
        h
    }

    #[test]
    fn encode_decode_roundtrip() {
        let h = sample();
        let bytes = encode(&h);
        let back = decode(&bytes, Path::new("LOOKUPS")).unwrap();
        assert_eq!(back.gets, 1000);
        assert_eq!(back.gets_found, 400);
        assert_eq!(back.since_unix_secs, 1_764_000_000);
        assert_eq!(back.levels[1].filter_checks, 900);
        assert_eq!(back.levels[2].false_positives, 7);
        assert_eq!(back.levels[2].range_checks, 3);
        assert_eq!(back.total(), h.total());
    }

    /// Every flipped byte and every truncation is refused, naming the
    /// file: a damaged history is never read as counts.
    #[test]
    fn damage_is_refused() {
        let bytes = encode(&sample());
        let path = Path::new("/s/LOOKUPS");
        for i in 0..bytes.len() {
            for bit in [0x01u8, 0x20, 0x80] {
                let mut b = bytes.clone();
                b[i] ^= bit;
                let e = decode(&b, path).expect_err(&format!("byte {i} bit {bit:#x}"));
                assert!(e.to_string().contains("/s/LOOKUPS"), "{e}");
            }
        }
        for n in 0..bytes.len() {
            assert!(decode(&bytes[..n], path).is_err(), "truncated to {n}");
        }
    }

    /// A well-checksummed file with a key or value this build does not
    /// know is refused too (a newer version's file).
    #[test]
    fn unknown_content_is_refused() {
        let with = |extra: &str| {
            let mut s = String::from(HEADER);
            s.push_str("version = 1\n");
            s.push_str(extra);
            options_file::seal(&mut s);
            s.into_bytes()
        };
        let p = Path::new("LOOKUPS");
        assert!(decode(&with("gets = 3\n"), p).is_ok());
        for bad in [
            "L1.no_such_counter = 3\n",
            "L64.filter_checks = 3\n",
            "gets = -1\n",
            "gets = 99999999999999999999\n",
            "elsewhere = 1\n",
            "gets=3\n",
        ] {
            assert!(decode(&with(bad), p).is_err(), "{bad}");
        }
        let mut s = String::from(HEADER);
        s.push_str("version = 2\n");
        options_file::seal(&mut s);
        let e = decode(s.as_bytes(), p).unwrap_err();
        assert!(e.to_string().contains("version 2"), "{e}");
    }

    fn small() -> Options {
        Options {
            write_buffer_size: 64 << 10,
            background_compaction: false,
            ..Options::default()
        }
    }

    /// The history outlives the handle, `reset_stats` and a read-only
    /// handle; a reset starts it again; each level's counts stay with it.
    #[test]
    fn the_history_is_kept_across_opens() {
        let dir = tempfile::tempdir().unwrap();
        {
            let db = Db::open(dir.path(), small()).unwrap();
            for i in 0..2_000u32 {
                db.put(i.to_be_bytes(), [1u8; 30]).unwrap();
            }
            db.flush().unwrap();
            for i in 0..300u32 {
                db.get((i * 6).to_be_bytes()).unwrap();
            }
            db.reset_stats();
            for i in 0..200u32 {
                db.get((i + 10_000).to_be_bytes()).unwrap();
            }
            assert_eq!(db.stats().gets, 200);
            let h = db.lookup_history();
            assert_eq!((h.gets, h.gets_found), (500, 300));
            db.close().unwrap();
        }
        let db = Db::open(dir.path(), small()).unwrap();
        let h = db.lookup_history();
        assert_eq!(
            (h.gets, h.gets_found, h.restarted.clone()),
            (500, 300, None)
        );
        // The absent keys are past every file's key range.
        assert_eq!(h.levels[0].filter_checks, 300, "{h:?}");
        db.get(1u32.to_be_bytes()).unwrap();
        assert_eq!(db.lookup_history().gets, 501);
        drop(db);
        // A read-only handle reads the history and adds nothing to it.
        let ro = Db::open_read_only(dir.path(), small()).unwrap();
        ro.get(1u32.to_be_bytes()).unwrap();
        assert_eq!(ro.lookup_history().gets, 502);
        assert!(matches!(ro.reset_lookup_history(), Err(Error::ReadOnly)));
        drop(ro);
        let db = Db::open(dir.path(), small()).unwrap();
        assert_eq!(db.lookup_history().gets, 501);
        db.get(2u32.to_be_bytes()).unwrap();
        db.reset_lookup_history().unwrap();
        assert_eq!(db.lookup_history().gets, 0);
        db.get(3u32.to_be_bytes()).unwrap();
        assert_eq!(db.lookup_history().gets, 1);
        drop(db);
        assert_eq!(
            Db::open(dir.path(), small()).unwrap().lookup_history().gets,
            1
        );
    }

    /// A damaged `LOOKUPS` never fails the open or reads as counts: the
    /// history begins again, saying why, and the next save replaces it.
    #[test]
    fn a_damaged_file_restarts_the_history() {
        let dir = tempfile::tempdir().unwrap();
        {
            let db = Db::open(dir.path(), small()).unwrap();
            db.get("a").unwrap();
        }
        let path = filename::lookups_file(dir.path());
        let mut bytes = std::fs::read(&path).unwrap();
        let at = bytes.len() / 2;
        bytes[at] ^= 0x04;
        std::fs::write(&path, &bytes).unwrap();
        let db = Db::open(dir.path(), small()).unwrap();
        let h = db.lookup_history();
        assert_eq!(h.gets, 0);
        let why = h.restarted.expect("restarted");
        assert!(why.contains("LOOKUPS") && why.contains("checksum"), "{why}");
        db.get("b").unwrap();
        drop(db);
        let h = Db::open(dir.path(), small()).unwrap().lookup_history();
        assert_eq!((h.gets, h.restarted), (1, None));
    }

    /// A history that cannot be written costs the store nothing: flushes
    /// and close succeed, every key reads, and the handle keeps counting.
    #[test]
    fn a_failing_history_write_is_not_the_stores() {
        let dir = tempfile::tempdir().unwrap();
        // A directory where the history's temporary file goes: every
        // write of it fails.
        std::fs::create_dir(filename::lookups_tmp_file(dir.path())).unwrap();
        let db = Db::open(dir.path(), small()).unwrap();
        for i in 0..3_000u32 {
            db.put(i.to_be_bytes(), [2u8; 30]).unwrap();
        }
        db.flush().unwrap();
        db.get(5u32.to_be_bytes()).unwrap();
        assert!(db.inner.save_lookup_history().is_err());
        assert_eq!(db.lookup_history().gets, 1);
        db.close().unwrap();
        assert!(!filename::lookups_file(dir.path()).exists());
        let db = Db::open(dir.path(), small()).unwrap();
        for i in 0..3_000u32 {
            assert!(db.get(i.to_be_bytes()).unwrap().is_some());
        }
    }
}
