//! The keys and values a stress run writes, and a key's expected [`State`].
//!
//! Key `i` is `GGGGGG:NN` (the group `i / 32`, six digits, a colon, then
//! `i % 32`, two digits): the bytes sort as the indices do, and the
//! prefix extractors the run draws (`fixed:5`, `fixed:6`, `fixed:8`, up to
//! `:`) group from about ten to a few hundred keys.
//!
//! A value names its keyspace, key and version, and every other byte of it
//! follows from those three, its length too: any value read decodes to the
//! write that made it, or is caught as damaged.

use bloomlsm::workload::{SplitMix64, mix64};

/// Keys per group (the part after the colon).
pub const GROUP: u32 = 32;

/// Bytes of a key.
pub const KEY_LEN: usize = 9;

/// The key of index `i`.
pub fn key(i: u32) -> Vec<u8> {
    format!("{:06}:{:02}", i / GROUP, i % GROUP).into_bytes()
}

/// The index of a key this run writes; `None` for any other bytes.
pub fn key_index(k: &[u8]) -> Option<u32> {
    let s = std::str::from_utf8(k).ok()?;
    let (g, n) = s.split_once(':')?;
    if g.len() != 6 || n.len() != 2 || !(g.bytes().chain(n.bytes())).all(|b| b.is_ascii_digit()) {
        return None;
    }
    let (g, n): (u32, u32) = (g.parse().ok()?, n.parse().ok()?);
    (n < GROUP).then(|| g.checked_mul(GROUP)?.checked_add(n))?
}

/// A key's state in the expected state: the version of its last write, and
/// whether that write left it present. A delete keeps the version, so the
/// next put gets a version no earlier write used. `State(0)`: never
/// written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct State(pub u32);

/// Largest version: the state's top bit marks a pending write in the
/// expected-state file.
pub const MAX_VERSION: u32 = (1 << 30) - 1;

impl State {
    /// The version of the last write.
    pub fn version(self) -> u32 {
        self.0 >> 1
    }

    /// Whether the key holds a value.
    pub fn present(self) -> bool {
        self.0 & 1 == 1
    }

    /// The state after a put: the next version, present. Versions wrap
    /// below [`MAX_VERSION`] (a run writes each key far fewer times).
    pub fn put(self) -> State {
        let v = if self.version() >= MAX_VERSION {
            1
        } else {
            self.version() + 1
        };
        State(v << 1 | 1)
    }

    /// The state after a delete: the same version, absent.
    pub fn deleted(self) -> State {
        State(self.0 & !1)
    }
}

impl std::fmt::Display for State {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.present() {
            write!(f, "version {}", self.version())
        } else if self.version() == 0 {
            f.write_str("absent (never written)")
        } else {
            write!(f, "absent (deleted after version {})", self.version())
        }
    }
}

/// Bytes of a value's header: keyspace, key and version, each a u32 LE.
const HEADER: usize = 12;

/// The value of version `version` of key `key` of keyspace `ks`.
pub fn value(ks: u32, key: u32, version: u32) -> Vec<u8> {
    let h = mix64(u64::from(ks) << 56 ^ u64::from(key) << 30 ^ u64::from(version));
    // Mostly short values, one in sixteen up to 2 KiB: blocks hold a few or
    // many entries.
    let len = if h.is_multiple_of(16) {
        (h >> 8) % 2048
    } else {
        (h >> 8) % 100
    } as usize;
    let mut v = Vec::with_capacity(HEADER + len);
    v.extend_from_slice(&ks.to_le_bytes());
    v.extend_from_slice(&key.to_le_bytes());
    v.extend_from_slice(&version.to_le_bytes());
    v.resize(HEADER + len, 0);
    SplitMix64::new(h).fill(&mut v[HEADER..]);
    v
}

/// What a value read says it is: `(keyspace, key, version)` when every byte
/// is what that write wrote; `None` for a value no write of the run made
/// (torn, cut, or damaged).
pub fn decode(v: &[u8]) -> Option<(u32, u32, u32)> {
    let word = |i: usize| u32::from_le_bytes(v[i..i + 4].try_into().unwrap_or_default());
    if v.len() < HEADER {
        return None;
    }
    let (ks, key, version) = (word(0), word(4), word(8));
    (value(ks, key, version) == v).then_some((ks, key, version))
}

/// A value read, described for a report: the write it decodes to, or its
/// length when it decodes to none.
pub fn describe(v: Option<&[u8]>) -> String {
    match v {
        None => "absent".into(),
        Some(v) => match decode(v) {
            Some((ks, key, version)) => {
                format!("version {version} (a value of keyspace {ks}, key index {key})")
            }
            None => format!("a value of {} bytes that no write of the run made", v.len()),
        },
    }
}

/// Whether `found` is what state `want` of key `key` of keyspace `ks`
/// reads as: absent, or exactly that version's value.
pub fn matches(found: Option<&[u8]>, ks: u32, key: u32, want: State) -> bool {
    match found {
        None => !want.present(),
        Some(v) => want.present() && decode(v) == Some((ks, key, want.version())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_sort_as_their_indices() {
        let keys: Vec<Vec<u8>> = (0..2000).map(key).collect();
        assert!(keys.windows(2).all(|w| w[0] < w[1]));
        assert!(keys.iter().all(|k| k.len() == KEY_LEN));
        for i in [0, 31, 32, 1999, MAX_KEYS_PROBE] {
            assert_eq!(key_index(&key(i)), Some(i));
        }
        for bad in [
            &b"000001:32"[..],
            b"00001:01",
            b"000001-01",
            b"",
            b"00000a:01",
        ] {
            assert_eq!(key_index(bad), None, "{bad:?}");
        }
    }

    const MAX_KEYS_PROBE: u32 = super::super::args::MAX_KEYS - 1;

    #[test]
    fn values_decode_to_their_write_and_damage_is_caught() {
        let v = value(2, 77, 5);
        assert_eq!(decode(&v), Some((2, 77, 5)));
        assert!(matches(Some(&v), 2, 77, State(5 << 1 | 1)));
        // Another version, key or keyspace of the same bytes' header.
        assert!(!matches(Some(&v), 2, 77, State(6 << 1 | 1)));
        assert!(!matches(Some(&v), 2, 78, State(5 << 1 | 1)));
        assert!(!matches(Some(&v), 1, 77, State(5 << 1 | 1)));
        assert!(!matches(Some(&v), 2, 77, State(5 << 1)));
        assert!(!matches(None, 2, 77, State(5 << 1 | 1)));
        assert!(matches(None, 2, 77, State(5 << 1)));
        // A torn value (cut short or extended) and a flipped byte.
        assert_eq!(decode(&v[..v.len() - 1]), None);
        let mut longer = v.clone();
        longer.push(0);
        assert_eq!(decode(&longer), None);
        let mut flipped = v.clone();
        let last = flipped.len() - 1;
        flipped[last] ^= 1;
        assert_eq!(decode(&flipped), None);
        assert_eq!(decode(&v[..5]), None);
    }

    #[test]
    fn states_step_versions() {
        let s = State::default();
        assert!(!s.present());
        let p = s.put();
        assert_eq!((p.version(), p.present()), (1, true));
        let d = p.deleted();
        assert_eq!((d.version(), d.present()), (1, false));
        assert_eq!(d.put().version(), 2);
        assert_eq!(State(MAX_VERSION << 1 | 1).put().version(), 1);
    }
}
