//! The expected state: per (keyspace, key), its [`State`] and the state a
//! write in flight will leave, kept in memory and in a file of the run's
//! directory.
//!
//! A writer holds the key's lock, records the pending state ([`Expected::begin`]),
//! writes to the store, then records the new state ([`Expected::commit`]).
//! Each step reaches the file by a positioned write before the next step
//! starts, so the file outlives a SIGKILL of the process (the page cache
//! keeps what was written): after a kill, a key with a pending state may read
//! as its old or its new state, and any other key exactly as recorded.
//!
//! The file: the magic `BLSMSTR1`, the number of keyspaces and of keys per
//! keyspace (u32 LE each), then 8 bytes per key, keyspace by keyspace: the
//! state and the pending state (u32 LE each; a pending state carries
//! [`PENDING`], 0 is none).

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use super::codec::State;

const MAGIC: &[u8; 8] = b"BLSMSTR1";
const HEADER: u64 = 16;
/// Set in a pending state (versions stay below it).
pub const PENDING: u32 = 1 << 31;

/// The expected state of every key.
pub struct Expected {
    file: File,
    keys: u32,
    keyspaces: u32,
    /// Per key: the state (low half) and the pending state (high half).
    cells: Vec<AtomicU64>,
}

/// A key's place: its keyspace and index.
pub type Slot = (u32, u32);

/// A write's effect on one key.
pub type Change = (Slot, State);

fn io_err(what: &str, path: &Path, e: std::io::Error) -> String {
    format!("{what} {}: {e}", path.display())
}

impl Expected {
    /// A new file at `path`, every key never written.
    pub fn create(path: &Path, keyspaces: u32, keys: u32) -> Result<Expected, String> {
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(path)
            .map_err(|e| io_err("create", path, e))?;
        let mut header = MAGIC.to_vec();
        header.extend_from_slice(&keyspaces.to_le_bytes());
        header.extend_from_slice(&keys.to_le_bytes());
        file.write_all(&header)
            .and_then(|()| file.set_len(HEADER + 8 * u64::from(keyspaces) * u64::from(keys)))
            .map_err(|e| io_err("write", path, e))?;
        let n = keyspaces as usize * keys as usize;
        Ok(Expected {
            file,
            keys,
            keyspaces,
            cells: (0..n).map(|_| AtomicU64::new(0)).collect(),
        })
    }

    /// The file at `path`, which must be of `keyspaces` keyspaces of `keys`
    /// keys.
    pub fn open(path: &Path, keyspaces: u32, keys: u32) -> Result<Expected, String> {
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .map_err(|e| io_err("open", path, e))?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)
            .map_err(|e| io_err("read", path, e))?;
        let n = keyspaces as usize * keys as usize;
        let word = |i: usize| u32::from_le_bytes(bytes[i..i + 4].try_into().unwrap_or_default());
        if bytes.len() != HEADER as usize + 8 * n
            || &bytes[..8] != MAGIC
            || word(8) != keyspaces
            || word(12) != keys
        {
            return Err(format!(
                "{} is not the expected state of {keyspaces} keyspaces of {keys} keys",
                path.display()
            ));
        }
        let cells = (0..n)
            .map(|i| {
                let at = HEADER as usize + 8 * i;
                AtomicU64::new(u64::from(word(at)) | u64::from(word(at + 4)) << 32)
            })
            .collect();
        Ok(Expected {
            file,
            keys,
            keyspaces,
            cells,
        })
    }

    /// Keys per keyspace.
    pub fn keys(&self) -> u32 {
        self.keys
    }

    /// Keyspaces.
    pub fn keyspaces(&self) -> u32 {
        self.keyspaces
    }

    fn index(&self, (ks, key): Slot) -> usize {
        ks as usize * self.keys as usize + key as usize
    }

    /// The key's state, and the state its write in flight will leave.
    pub fn get(&self, slot: Slot) -> (State, Option<State>) {
        let c = self.cells[self.index(slot)].load(Ordering::Acquire);
        let pending = (c >> 32) as u32;
        (
            State(c as u32),
            (pending & PENDING != 0).then_some(State(pending & !PENDING)),
        )
    }

    /// The key's state (the caller holds its lock, so none is pending).
    pub fn state(&self, slot: Slot) -> State {
        self.get(slot).0
    }

    /// Records writes about to be made: each key's new state, pending.
    pub fn begin(&self, changes: &[Change]) -> Result<(), String> {
        for &(slot, new) in changes {
            let cell = &self.cells[self.index(slot)];
            let c = cell.load(Ordering::Acquire);
            cell.store(
                (c & 0xffff_ffff) | u64::from(new.0 | PENDING) << 32,
                Ordering::Release,
            );
        }
        self.persist(changes.iter().map(|(s, _)| *s))
    }

    /// Records writes made: each key's new state, none pending.
    pub fn commit(&self, changes: &[Change]) -> Result<(), String> {
        for &(slot, new) in changes {
            self.cells[self.index(slot)].store(u64::from(new.0), Ordering::Release);
        }
        self.persist(changes.iter().map(|(s, _)| *s))
    }

    /// Writes the cells of `slots` to the file, a run of adjacent ones per
    /// positioned write.
    fn persist(&self, slots: impl Iterator<Item = Slot>) -> Result<(), String> {
        let mut idx: Vec<usize> = slots.map(|s| self.index(s)).collect();
        idx.sort_unstable();
        idx.dedup();
        let mut i = 0;
        while i < idx.len() {
            let mut j = i + 1;
            while j < idx.len() && idx[j] == idx[j - 1] + 1 {
                j += 1;
            }
            let bytes: Vec<u8> = idx[i..j]
                .iter()
                .flat_map(|&k| self.cells[k].load(Ordering::Acquire).to_le_bytes())
                .collect();
            write_at(&self.file, &bytes, HEADER + 8 * idx[i] as u64)
                .map_err(|e| format!("write the expected state: {e}"))?;
            i = j;
        }
        Ok(())
    }
}

/// A positioned write of all of `bytes` (`pwrite`): threads write their
/// keys' cells at once without a shared file offset.
#[cfg(unix)]
fn write_at(file: &File, bytes: &[u8], offset: u64) -> std::io::Result<()> {
    std::os::unix::fs::FileExt::write_all_at(file, bytes, offset)
}

#[cfg(windows)]
fn write_at(file: &File, mut bytes: &[u8], mut offset: u64) -> std::io::Result<()> {
    while !bytes.is_empty() {
        let n = std::os::windows::fs::FileExt::seek_write(file, bytes, offset)?;
        if n == 0 {
            return Err(std::io::ErrorKind::WriteZero.into());
        }
        bytes = &bytes[n..];
        offset += n as u64;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_keeps_states_and_pending_writes() {
        let dir = std::env::temp_dir().join(format!("bloomlsm-expected-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("expected");
        let _ = std::fs::remove_file(&path);
        let e = Expected::create(&path, 2, 100).unwrap();
        let a = State::default().put();
        e.begin(&[((1, 7), a), ((1, 8), a)]).unwrap();
        e.commit(&[((1, 7), a)]).unwrap();
        e.begin(&[((0, 99), a)]).unwrap();
        drop(e);
        let e = Expected::open(&path, 2, 100).unwrap();
        assert_eq!(e.get((1, 7)), (a, None));
        assert_eq!(e.get((1, 8)), (State::default(), Some(a)));
        assert_eq!(e.get((0, 99)), (State::default(), Some(a)));
        assert_eq!(e.get((0, 0)), (State::default(), None));
        assert!(Expected::open(&path, 3, 100).is_err());
        assert!(Expected::create(&path, 2, 100).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
