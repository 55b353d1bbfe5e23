//! The read path: point gets, `multi_get` with its sorted, batched probes,
//! and the probe of one file (key range, filter, one data block), with the
//! I/O each lookup is charged; and the start of a scan.

use super::*;
use crate::range_tombstone::Fragments;
use crate::sst::{BlockHandle, Preloaded, adjacent_runs};
use iter::{ScanPoints, ScanPrefix, Skip};

/// The reads of [`Db`] and [`crate::Keyspace`], and [`Snapshot`]'s scans,
/// one implementation for every handle: each key's limits checked before
/// anything is read. `at`: a snapshot's sequence number (`None`: the
/// latest).
impl Inner {
    /// A caller's `get`.
    pub(super) fn checked_get(&self, key: &[u8], at: Option<u64>) -> Result<Option<Bytes>> {
        check_key(key)?;
        self.get(key, at)
    }

    /// A caller's `multi_get`.
    pub(super) fn checked_multi_get<K: AsRef<[u8]>>(
        &self,
        keys: &[K],
        at: Option<u64>,
    ) -> Result<Vec<Option<Bytes>>> {
        let keys: Vec<&[u8]> = keys.iter().map(|k| k.as_ref()).collect();
        for k in &keys {
            check_key(k)?;
        }
        self.multi_get(&keys, at)
    }

    /// A caller's `scan` of `range`.
    pub(super) fn scan_range(&self, range: impl iter::ScanRange, at: Option<u64>) -> DbIter {
        let (start, end) = range.into_bounds();
        self.scan(start, end, at, None)
    }

    /// A caller's `scan_prefix`: the range of the keys that start with
    /// `prefix`, whose files the prefix filters may skip.
    pub(super) fn scan_prefix(&self, prefix: &[u8], at: Option<u64>) -> DbIter {
        let (start, end) = iter::prefix_range(prefix);
        let skip = ScanPrefix::of(self.opts.prefix_extractor, prefix);
        self.scan(start, end, at, skip)
    }
}

impl Inner {
    /// `at`: a snapshot's sequence number (`None`: the latest).
    pub(super) fn get(&self, user_key: &[u8], at: Option<u64>) -> Result<Option<Bytes>> {
        let sv = self.sv.pin();
        let snapshot = at.unwrap_or_else(|| self.last_seq.load(Ordering::Acquire));
        self.counters.gets.count_gets(1);
        let hash = key_hash(user_key);
        let v = &sv.version;
        // First pick the file of every level and start loading the filter
        // memory of each file the key will be probed in: the cache misses
        // of all levels then overlap instead of following one another, and
        // with the memtables' probes, which come next.
        let mut slots = [Slot::None; MAX_LEVELS];
        for (i, f) in v.levels[0].iter().enumerate() {
            if v.l0_covers(i, user_key) {
                prefetch_probe(v, 0, i, f, hash);
            }
        }
        for (level, slot) in slots.iter_mut().enumerate().take(v.levels.len()).skip(1) {
            *slot = v.slot(level, user_key);
            if let Slot::In(i) = *slot {
                prefetch_probe(v, level, i, &v.levels[level][i], hash);
            }
        }
        // The newest range tombstone over the key that the read sees among
        // the sources searched so far (0: none). A version older than it is
        // deleted, and so is every version in the sources after the one
        // holding it: those are older (docs/design.md, "Range deletions").
        let mut cover = 0u64;
        for mem in std::iter::once(&sv.mem).chain(&sv.imm) {
            if let Some(t) = mem.range_tombstones() {
                self.counters.gets.add(Get::RangeTombstoneChecks, 1);
                cover = cover.max(t.max_cover(user_key, snapshot));
            }
            let found = match mem.get_versioned(user_key, hash, snapshot) {
                Some((seq, LookupResult::Value(v))) => (seq, Some(v)),
                Some((seq, LookupResult::Deleted)) => (seq, None),
                None if cover > 0 => (0, None),
                None => continue,
            };
            self.counters.gets.add(Get::MemtableAnswers, 1);
            let value = self.resolve(found, cover);
            if value.is_some() {
                self.counters.gets.add(Get::Found, 1);
            }
            return Ok(value);
        }
        // Built on the first filter positive: most missing gets need none.
        let mut lookup = Lookup::new(user_key, snapshot);
        let mut cost = GetCost::default();
        let mut answer = None;
        'levels: for (level, files) in v.levels.iter().enumerate() {
            if level == 0 {
                for (i, f) in files.iter().enumerate() {
                    if !v.l0_covers(i, user_key) {
                        f.io.count_key_range_skip();
                        continue;
                    }
                    cover = cover.max(self.file_cover(f, user_key, snapshot));
                    if let Some(found) = self.probe_at(v, level, i, &mut lookup, hash, &mut cost)? {
                        answer = Some(found);
                        break 'levels;
                    }
                    if cover > 0 {
                        answer = Some((0, None));
                        break 'levels;
                    }
                }
                continue;
            }
            let slot = match slots.get(level) {
                Some(&s) => s,
                None => v.slot(level, user_key),
            };
            match slot {
                Slot::None => {}
                Slot::Below(i) => files[i].io.count_key_range_skip(),
                Slot::In(i) => {
                    cover = cover.max(self.file_cover(&files[i], user_key, snapshot));
                    if let Some(found) = self.probe_at(v, level, i, &mut lookup, hash, &mut cost)? {
                        answer = Some(found);
                        break 'levels;
                    }
                    if cover > 0 {
                        answer = Some((0, None));
                        break 'levels;
                    }
                }
            }
        }
        match answer.map(|found| self.resolve(found, cover)) {
            Some(Some(value)) => {
                self.counters.gets.add(Get::Found, 1);
                Ok(Some(value))
            }
            Some(None) => Ok(None),
            None => {
                self.charge_missing([&cost]);
                Ok(None)
            }
        }
    }

    /// What a lookup learns of a key from the version it found at `seq`
    /// (`(0, None)`: none, but a range tombstone over the key) under the
    /// newest range tombstone `cover` over it: a value, or `None` if
    /// deleted (counted when a range tombstone deleted it).
    pub(super) fn resolve(&self, found: Found, cover: u64) -> Option<Bytes> {
        if found.0 < cover {
            self.counters.gets.add(Get::RangeDeleted, 1);
            return None;
        }
        found.1
    }

    /// The newest range tombstone of file `f` over `user_key` that a read
    /// at `snapshot` sees (0: none), counted. Consulted for every file whose
    /// range holds the key, before and whatever its filter answers.
    pub(super) fn file_cover(&self, f: &FileHandle, user_key: &[u8], snapshot: u64) -> u64 {
        if !f.has_range_tombstones {
            return 0;
        }
        let g = &self.counters.gets;
        g.add(Get::RangeTombstoneChecks, 1);
        g.add(Get::RangeTombstoneFiles, 1);
        f.table.range_tombstones().max_cover(user_key, snapshot)
    }

    /// Adds missing gets' costs to the counters, one add per counter for
    /// all of them (each get's predicted reads rounded to billionths on its
    /// own, so a multi_get charges what its keys' gets would).
    pub(super) fn charge_missing<'c>(&self, costs: impl IntoIterator<Item = &'c GetCost>) {
        let (mut blocks, mut disk_blocks, mut predicted_nano) = (0u64, 0u64, 0u64);
        for c in costs {
            blocks += c.blocks;
            disk_blocks += c.disk_blocks;
            predicted_nano += (c.predicted * 1e9).round() as u64;
        }
        let g = &self.counters.gets;
        if blocks > 0 {
            g.add(Get::MissingBlockReads, blocks);
            g.add(Get::MissingDiskReads, disk_blocks);
        }
        if predicted_nano > 0 {
            g.add(Get::MissingPredictedNano, predicted_nano);
        }
    }

    /// [`Db::multi_get`]: the same probes, in the same order per key, as one
    /// `get` per key, but each file's filter is probed for all the keys that
    /// reach it at once ([`crate::Filter::may_contain_batch`]: prefetched
    /// lines), and the keys are hashed and the version pinned once.
    pub(super) fn multi_get(&self, keys: &[&[u8]], at: Option<u64>) -> Result<Vec<Option<Bytes>>> {
        let sv = self.sv.pin();
        let snapshot = at.unwrap_or_else(|| self.last_seq.load(Ordering::Acquire));
        let g = &self.counters.gets;
        g.count_gets(keys.len() as u64);
        let mut out: Vec<Option<Bytes>> = vec![None; keys.len()];
        // Keys still looked for, as indexes into `keys`.
        let mut pending: Vec<usize> = Vec::with_capacity(keys.len());
        // Hashed once: for the memtables' key filters and the tables'.
        let hashes: Vec<u64> = keys.iter().map(|k| key_hash(k)).collect();
        // Per key, the newest range tombstone over it seen so far, as in `get`.
        let mut cover = vec![0u64; keys.len()];
        let mems: Vec<(&Arc<MemTable>, Option<Arc<Fragments>>)> = std::iter::once(&sv.mem)
            .chain(&sv.imm)
            .map(|m| (m, m.range_tombstones()))
            .collect();
        let mut mem_checks = 0u64;
        'keys: for (i, k) in keys.iter().enumerate() {
            for (mem, tombstones) in &mems {
                if let Some(t) = tombstones {
                    mem_checks += 1;
                    cover[i] = cover[i].max(t.max_cover(k, snapshot));
                }
                let found = match mem.get_versioned(k, hashes[i], snapshot) {
                    Some((seq, LookupResult::Value(v))) => (seq, Some(v)),
                    Some((seq, LookupResult::Deleted)) => (seq, None),
                    None if cover[i] > 0 => (0, None),
                    None => continue,
                };
                g.add(Get::MemtableAnswers, 1);
                if let Some(v) = self.resolve(found, cover[i]) {
                    g.add(Get::Found, 1);
                    out[i] = Some(v);
                }
                continue 'keys;
            }
            pending.push(i);
        }
        if mem_checks > 0 {
            g.add(Get::RangeTombstoneChecks, mem_checks);
        }
        let mut prefixes = vec![0u64; keys.len()];
        for &i in &pending {
            prefixes[i] = key::prefix(keys[i]);
        }
        sort_by_user_key(&mut pending, keys, &prefixes);
        let mut costs: Vec<GetCost> = (0..keys.len()).map(|_| GetCost::default()).collect();
        let mut done = vec![false; keys.len()];
        let v = &sv.version;
        let mut batch_hashes: Vec<u64> = Vec::new();
        let mut answers: Vec<bool> = Vec::new();
        let mut group: Vec<usize> = Vec::new();
        // Keys a filter let through (or with no filter), with their file and
        // the filter's answer: their data blocks are read together, a whole
        // level's at once (`read_batch`).
        let mut reads: Vec<(usize, &FileHandle, Option<bool>)> = Vec::new();
        // L0: every file may hold any key, newest first, so each file is
        // probed for all the keys still pending, its filter in one batch.
        for (fi, f) in v.levels[0].iter().enumerate() {
            if pending.is_empty() {
                break;
            }
            // Keys outside the file's range and keys its filter rules out
            // cost no read: counted here, on the file's counters once.
            let mut local = IoCounters::default();
            group.clear();
            for &i in &pending {
                if v.l0_covers(fi, keys[i]) {
                    group.push(i);
                } else {
                    local.files_considered += 1;
                    local.key_range_skips += 1;
                }
            }
            for &i in &group {
                cover[i] = cover[i].max(self.file_cover(f, keys[i], snapshot));
            }
            let filter = v.filter(0, fi);
            if let Some(filter) = filter {
                batch_hashes.clear();
                batch_hashes.extend(group.iter().map(|&i| hashes[i]));
                answers.clear();
                answers.resize(group.len(), true);
                filter.may_contain_batch(&batch_hashes, &mut answers);
            }
            reads.clear();
            for (j, &i) in group.iter().enumerate() {
                let says = filter.map(|_| answers[j]);
                if says == Some(false) {
                    local.files_considered += 1;
                    local.filter_checks += 1;
                    local.filter_negatives += 1;
                    costs[i].predicted += f.predicted_fpr();
                } else {
                    reads.push((i, f, says));
                }
            }
            if local != IoCounters::default() {
                f.io.add(&local);
            }
            let found = self.read_batch(&reads, keys, snapshot, &hashes, &mut costs)?;
            if self.settle_probed(found, &group, &cover, g, &mut out, &mut done) {
                pending.retain(|&i| !done[i]);
            }
        }
        // Deeper levels: at most one file per key. The pending keys, sorted,
        // are placed on a level's files by one walk along it (no search per
        // key), which hands each file its keys as one run: the run's filter
        // probes go in one batch (prefetched lines) and its counters are
        // added once.
        let mut runs: Vec<Run> = Vec::new();
        for (level, files) in v.levels.iter().enumerate().skip(1) {
            if pending.is_empty() {
                break;
            }
            v.runs_sorted(level, keys, &prefixes, &pending, &mut runs);
            reads.clear();
            // Deep levels hold many files, so a run is often a key or two:
            // too short for its batch probe to overlap cache misses. Start
            // loading every key's filter line of the level first (1,024
            // lines are 64 KiB: they wait in L2), then test.
            for run in &runs {
                if let Some(filter) = v.filter(level, run.file) {
                    for &i in &pending[run.below..run.end] {
                        filter.prefetch(hashes[i]);
                    }
                }
            }
            for run in &runs {
                let f = &files[run.file];
                let skips = (run.below - run.start) as u64;
                if skips > 0 {
                    f.io.add(&IoCounters {
                        files_considered: skips,
                        key_range_skips: skips,
                        ..IoCounters::ZERO
                    });
                }
                let inside = &pending[run.below..run.end];
                if inside.is_empty() {
                    continue;
                }
                if f.has_range_tombstones {
                    for &i in inside {
                        cover[i] = cover[i].max(self.file_cover(f, keys[i], snapshot));
                    }
                }
                let Some(filter) = v.filter(level, run.file) else {
                    reads.extend(inside.iter().map(|&i| (i, &**f, None)));
                    continue;
                };
                batch_hashes.clear();
                batch_hashes.extend(inside.iter().map(|&i| hashes[i]));
                answers.clear();
                answers.resize(inside.len(), true);
                filter.may_contain_batch(&batch_hashes, &mut answers);
                let mut negatives = 0u64;
                for (&i, &says) in inside.iter().zip(&answers) {
                    if says {
                        reads.push((i, f, Some(true)));
                    } else {
                        negatives += 1;
                        costs[i].predicted += f.predicted_fpr();
                    }
                }
                if negatives > 0 {
                    f.io.add(&IoCounters {
                        files_considered: negatives,
                        filter_checks: negatives,
                        filter_negatives: negatives,
                        ..IoCounters::ZERO
                    });
                }
            }
            // The level's data-block reads, together (a key is in at most
            // one file of the level, so they are independent; with direct
            // reads they are made in parallel).
            let found = self.read_batch(&reads, keys, snapshot, &hashes, &mut costs)?;
            if self.settle_probed(found, &pending, &cover, g, &mut out, &mut done) {
                pending.retain(|&i| !done[i]);
            }
        }
        self.charge_missing(pending.iter().map(|&i| &costs[i]));
        Ok(out)
    }

    /// Settles the multi_get keys that one probe step (an L0 file, or a
    /// deeper level) answered: first those its reads found (`found`), then
    /// those of the keys it probed (`probed`) that a range tombstone covers
    /// (`cover`) with no newer version found. Returns whether it settled
    /// any, for the caller to drop them from the pending keys.
    fn settle_probed(
        &self,
        found: Vec<(usize, Found)>,
        probed: &[usize],
        cover: &[u64],
        g: &GetCounters,
        out: &mut [Option<Bytes>],
        done: &mut [bool],
    ) -> bool {
        let mut settled = false;
        for (i, found) in found {
            settle(g, out, done, i, self.resolve(found, cover[i]));
            settled = true;
        }
        for &i in probed {
            if !done[i] && cover[i] > 0 {
                settle(g, out, done, i, self.resolve((0, None), cover[i]));
                settled = true;
            }
        }
        settled
    }

    /// Looks up `reads` — (key index, file, the file filter's answer) — in
    /// their files, charging each key's cost, and returns the keys a file
    /// answered (a value or a tombstone) in `reads`' order. With direct
    /// reads, or tables in an object store
    /// ([`FileSystem::remote_reads`](crate::fs::FileSystem::remote_reads)),
    /// they are made in parallel on the I/O threads
    /// ([`crate::fs::io_pool`]), so that up to 16 device reads are in flight
    /// (RocksDB's MultiGet overlaps them with asynchronous I/O). Buffered reads stay on this thread: served by
    /// the page cache in a few µs, they lost more to the hand-offs than they
    /// gained (multi_get at 10^6 keys, quiet machine: 352–397 ns per missing
    /// key in parallel against 247–361 ns on one thread).
    pub(super) fn read_batch(
        &self,
        reads: &[(usize, &FileHandle, Option<bool>)],
        keys: &[&[u8]],
        snapshot: u64,
        hashes: &[u64],
        costs: &mut [GetCost],
    ) -> Result<Vec<(usize, Found)>> {
        use rayon::prelude::*;
        // A device read takes ~100 µs, a GET from a bucket milliseconds:
        // two already overlap usefully.
        let slow = self.opts.read_mode == ReadMode::Direct || self.opts.fs.remote_reads();
        let pool = if slow && reads.len() >= 2 {
            crate::fs::io_pool()
        } else {
            None
        };
        let units = match pool {
            Some(_) => adjacent_units(reads, keys, snapshot),
            None => (0..reads.len()).map(ReadUnit::one).collect(),
        };
        let run = |u: &ReadUnit| -> Vec<(usize, GetCost, Result<Probed>)> {
            let mut pre = Preloaded::default();
            if let Some(&first) = u.reads.first()
                && let Err(e) = reads[first].1.table.read_adjacent(&u.span, &mut pre)
            {
                return vec![(reads[first].0, GetCost::default(), Err(e))];
            }
            u.reads
                .iter()
                .map(|&r| {
                    let (i, f, says) = reads[r];
                    let mut cost = GetCost::default();
                    let p = (!pre.is_empty()).then_some(&mut pre);
                    let lookup = key::make_internal_key(keys[i], snapshot, ValueKind::Value);
                    let probed = self.probe(f, &lookup, hashes[i], &mut cost, says, p);
                    (i, cost, probed)
                })
                .collect()
        };
        let results: Vec<(usize, GetCost, Result<Probed>)> = match pool {
            // One task per unit, so every read has its own thread. A panic
            // on one of them, resumed here by rayon, is caught: it poisons
            // the store like a background thread's.
            Some(pool) => {
                let on_pool = |u: &ReadUnit| {
                    let mut out = run(u);
                    if let Some(first) = out.first_mut() {
                        let hit = inject::hit(&self.dir, inject::Point::Io);
                        first.2 = hit.and(std::mem::replace(&mut first.2, Ok(None)));
                    }
                    out
                };
                let all = std::panic::AssertUnwindSafe(|| {
                    pool.install(|| {
                        units
                            .par_iter()
                            .with_max_len(1)
                            .flat_map_iter(on_pool)
                            .collect()
                    })
                });
                std::panic::catch_unwind(all).map_err(|p| {
                    let e = Error::from_panic(p.as_ref());
                    self.poison("a read on the I/O threads", &e);
                    e
                })?
            }
            None => units.iter().flat_map(run).collect(),
        };
        let mut found = Vec::new();
        for (i, cost, r) in results {
            costs[i].add(&cost);
            if let Some(x) = r? {
                found.push((i, x));
            }
        }
        Ok(found)
    }

    /// [`Self::probe`] of file `i` of `level`, its filter probed from the
    /// version's index: a negative touches neither the table nor its index.
    pub(super) fn probe_at(
        &self,
        v: &Version,
        level: usize,
        i: usize,
        lookup: &mut Lookup,
        hash: u64,
        cost: &mut GetCost,
    ) -> Result<Probed> {
        let f = &v.levels[level][i];
        let says = v.filter(level, i).map(|x| x.may_contain(hash));
        if says == Some(false) {
            f.io.count_filter_negative();
            cost.predicted += f.predicted_fpr();
            return Ok(None);
        }
        self.probe(f, lookup.key(), hash, cost, says, None)
    }

    /// Looks `lookup` up in one file, charging the costs. `Some((seq,
    /// Some(v)))`: a value written at `seq`; `Some((seq, None))`: a
    /// tombstone; `None`: not in this file. Its data block comes from
    /// `preloaded` when it is there.
    pub(super) fn probe(
        &self,
        f: &FileHandle,
        lookup: &[u8],
        hash: u64,
        cost: &mut GetCost,
        filter_says: Option<bool>,
        preloaded: Option<&mut Preloaded>,
    ) -> Result<Probed> {
        let r = f
            .table
            .get_in_range_with(lookup, hash, filter_says, preloaded)?;
        let has_filter = f.table.filter_info().is_some();
        let c = IoCounters {
            files_considered: 1,
            key_range_skips: u64::from(r.key_range_skipped),
            filter_checks: u64::from(r.filter_checked),
            filter_negatives: u64::from(r.filter_negative),
            filter_positives: u64::from(r.filter_checked && !r.filter_negative),
            false_positives: u64::from(r.filter_checked && r.false_positive()),
            unusable_filter_reads: u64::from(r.filter_unusable && !r.key_range_skipped),
            unfiltered_reads: u64::from(!has_filter && !r.key_range_skipped),
            block_reads: r.blocks_read,
            cache_hits: r.cache_hits,
            bytes_read: r.bytes_read,
            filter_block_reads: r.filter_blocks_read,
            filter_cache_hits: r.filter_cache_hits,
            filter_bytes_read: r.filter_bytes_read,
            index_block_reads: r.index_blocks_read,
            index_cache_hits: r.index_cache_hits,
            index_bytes_read: r.index_bytes_read,
            ..IoCounters::ZERO
        };
        f.io.add(&c);
        if !r.key_range_skipped {
            cost.predicted += f.predicted_fpr();
        }
        cost.blocks += r.blocks_read + r.cache_hits;
        cost.disk_blocks += r.blocks_read;
        let Some((ikey, value)) = r.entry else {
            return Ok(None);
        };
        match key::parse(&ikey).map(|p| (p.seq, p.kind)) {
            Some((seq, ValueKind::Value)) => Ok(Some((seq, Some(value)))),
            Some((seq, ValueKind::Deletion)) => Ok(Some((seq, None))),
            None => Err(Error::corruption(
                f.table.path(),
                0,
                format!("malformed internal key of {} bytes", ikey.len()),
            )),
        }
    }

    /// `at`: a snapshot's sequence number (`None`: the latest).
    /// `prefix`: a prefix scan's, whose files its prefix filters may skip;
    /// without one, a range bounded at both ends skips files by their range
    /// filters.
    pub(super) fn scan(
        &self,
        start: Bound<Bytes>,
        end: Bound<Bytes>,
        at: Option<u64>,
        prefix: Option<ScanPrefix>,
    ) -> DbIter {
        let skip = match prefix {
            Some(p) => Some(Skip::Prefix(p)),
            None => ScanPoints::of(&start, &end).map(Skip::Range),
        };
        let sv = self.super_version();
        let seq = at.unwrap_or_else(|| self.last_seq.load(Ordering::Acquire));
        let view = View {
            mems: std::iter::once(&sv.mem).chain(&sv.imm).cloned().collect(),
            version: sv.version.clone(),
            seq,
            closed: self.closed.clone(),
            skip,
        };
        DbIter::new(view, start, end)
    }
}

/// Upper bound of `Options::max_levels` (checked by `Options::validate`).
pub(super) const MAX_LEVELS: usize = 32;

/// Sorts `order` (indexes into `keys`) into ascending key order: by the
/// keys' 8-byte prefixes `prefixes` (numbers, one pass of an integer sort),
/// then the rare runs of equal prefixes by whole key.
/// Reads of a batch (indexes into it) that one task makes: alone, or keys
/// of one file whose data blocks lie side by side, with those blocks
/// (`span`), read in one request before the keys are looked up.
struct ReadUnit {
    reads: Vec<usize>,
    span: Vec<BlockHandle>,
}

impl ReadUnit {
    fn one(r: usize) -> ReadUnit {
        ReadUnit {
            reads: vec![r],
            span: Vec::new(),
        }
    }
}

/// `reads` cut into [`ReadUnit`]s: the keys of one file whose data blocks
/// are side by side (or the same block) share one read of those blocks —
/// one GET from a bucket instead of one per key — and every other read is
/// a unit of its own. Only blocks a lookup will read are grouped: the keys
/// a filter let through (or of a file without one), whose block the
/// in-memory index names and the block cache lacks.
fn adjacent_units(
    reads: &[(usize, &FileHandle, Option<bool>)],
    keys: &[&[u8]],
    snapshot: u64,
) -> Vec<ReadUnit> {
    let mut units = Vec::new();
    // Per file, in the order `reads` first names it: its reads with their
    // blocks.
    let mut by_file: Vec<Vec<(usize, BlockHandle)>> = Vec::new();
    let mut file_slot: HashMap<*const FileHandle, usize> = HashMap::new();
    for (r, &(i, f, says)) in reads.iter().enumerate() {
        let will_read = says == Some(true) || f.table.filter_info().is_none();
        let block = will_read
            .then(|| {
                let lookup = key::make_internal_key(keys[i], snapshot, ValueKind::Value);
                f.table.resident_block_for(&lookup)
            })
            .flatten()
            .filter(|&h| !f.table.data_block_cached(h));
        let Some(h) = block else {
            units.push(ReadUnit::one(r));
            continue;
        };
        let slot = *file_slot.entry(f as *const FileHandle).or_insert_with(|| {
            by_file.push(Vec::new());
            by_file.len() - 1
        });
        by_file[slot].push((r, h));
    }
    for mut v in by_file {
        v.sort_by_key(|&(r, h)| (h.offset, r));
        let mut handles: Vec<BlockHandle> = v.iter().map(|&(_, h)| h).collect();
        handles.dedup();
        let mut next = 0;
        for run in adjacent_runs(&handles) {
            let end = run.last().map_or(0, |h| h.offset);
            let mut unit = ReadUnit {
                reads: Vec::new(),
                span: run.to_vec(),
            };
            while next < v.len() && v[next].1.offset <= end {
                unit.reads.push(v[next].0);
                next += 1;
            }
            if unit.reads.len() == 1 {
                // One key, one block: read as any lookup reads.
                unit.span.clear();
            }
            units.push(unit);
        }
    }
    units
}

pub(super) fn sort_by_user_key(order: &mut [usize], keys: &[&[u8]], prefixes: &[u64]) {
    let mut packed: Vec<(u64, usize)> = order.iter().map(|&i| (prefixes[i], i)).collect();
    packed.sort_unstable();
    for (o, &(_, i)) in order.iter_mut().zip(&packed) {
        *o = i;
    }
    let mut start = 0;
    while start < order.len() {
        let p = prefixes[order[start]];
        let end = start
            + order[start..]
                .iter()
                .take_while(|&&i| prefixes[i] == p)
                .count();
        if end - start > 1 {
            order[start..end].sort_unstable_by(|&a, &b| keys[a].cmp(keys[b]));
        }
        start = end;
    }
}

/// Records multi_get key `i`'s answer from a file: a value, or a tombstone
/// (`None`); either way the key is done.
pub(super) fn settle(
    g: &GetCounters,
    out: &mut [Option<Bytes>],
    done: &mut [bool],
    i: usize,
    found: Option<Bytes>,
) {
    if let Some(v) = found {
        g.add(Get::Found, 1);
        out[i] = Some(v);
    }
    done[i] = true;
}

/// Starts loading what a probe of `hash` in file `i` of `level` (`f`) will
/// read: the filter's memory, and the file's counters.
#[inline]
pub(super) fn prefetch_probe(v: &Version, level: usize, i: usize, f: &FileHandle, hash: u64) {
    if let Some(filter) = v.filter(level, i) {
        filter.prefetch(hash);
    }
    f.io.prefetch();
}

/// A point lookup's internal key (the user key at the read's sequence
/// number), made when a table is first searched.
pub(super) struct Lookup<'a> {
    user_key: &'a [u8],
    seq: u64,
    key: Option<Vec<u8>>,
}

impl<'a> Lookup<'a> {
    fn new(user_key: &'a [u8], seq: u64) -> Self {
        Lookup {
            user_key,
            seq,
            key: None,
        }
    }

    fn key(&mut self) -> &[u8] {
        self.key.get_or_insert_with(|| {
            key::make_internal_key(self.user_key, self.seq, ValueKind::Value)
        })
    }
}

/// What a probe of one file found: `Some((seq, Some(v)))` a value written
/// at `seq`, `Some((seq, None))` a tombstone, `None` nothing.
pub(super) type Probed = Option<Found>;

/// A version a lookup found: its sequence number, and its value (`None`: a
/// tombstone).
pub(super) type Found = (u64, Option<Bytes>);

#[derive(Default)]
pub(super) struct GetCost {
    blocks: u64,
    disk_blocks: u64,
    predicted: f64,
}

impl GetCost {
    fn add(&mut self, o: &GetCost) {
        self.blocks += o.blocks;
        self.disk_blocks += o.disk_blocks;
        self.predicted += o.predicted;
    }
}
