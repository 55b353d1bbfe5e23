//! Printable escaping of binary keys and values.
//!
//! The `bloomlsm` command prints keys and values in a form that is plain
//! ASCII, never contains a tab or newline, and reads back to the same bytes:
//! printable ASCII stands for itself, a backslash is `\\`, and every other byte
//! is `\xNN`. [`unescape`] parses that form (plus `\t`, `\n`, `\r`, `\0` for
//! convenience), so a key copied from `db scan` output can be pasted into
//! `db get`, and `db scan` output can be fed back to `db load`.

use std::fmt::Write as _;

use bloomlsm::sst::{InternalKey, ValueKind};

/// The printable form of `bytes` (see the module docs).
pub fn escape(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len());
    for &b in bytes {
        match b {
            b'\\' => s.push_str("\\\\"),
            0x20..=0x7e => s.push(b as char),
            _ => {
                let _ = write!(s, "\\x{b:02x}");
            }
        }
    }
    s
}

/// Parses the printable form back into bytes. Errors name the offending
/// escape, e.g. `bad escape "\q" at byte 3`.
pub fn unescape(text: &str) -> Result<Vec<u8>, String> {
    let b = text.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'\\' {
            out.push(b[i]);
            i += 1;
            continue;
        }
        let esc = b.get(i + 1).copied();
        match esc {
            Some(b'\\') => out.push(b'\\'),
            Some(b't') => out.push(b'\t'),
            Some(b'n') => out.push(b'\n'),
            Some(b'r') => out.push(b'\r'),
            Some(b'0') => out.push(0),
            Some(b'x') => {
                let hex = b.get(i + 2..i + 4).and_then(|h| {
                    std::str::from_utf8(h)
                        .ok()
                        .and_then(|h| u8::from_str_radix(h, 16).ok())
                });
                match hex {
                    Some(v) => out.push(v),
                    None => {
                        return Err(format!("bad escape at byte {i}: \\x needs two hex digits"));
                    }
                }
                i += 4;
                continue;
            }
            Some(c) => {
                return Err(format!(
                    "bad escape \"\\{}\" at byte {i} (use \\\\ for a backslash)",
                    c as char
                ));
            }
            None => return Err(format!("trailing backslash at byte {i}")),
        }
        i += 2;
    }
    Ok(out)
}

/// An internal key (`user key ++ 8-byte trailer`) as `user_key @seq kind`,
/// e.g. `apple @42 put`; malformed keys fall back to [`escape`] with a note.
pub fn internal_key(key: &[u8]) -> String {
    match InternalKey::parse(key) {
        Some(p) => {
            let kind = match p.kind {
                ValueKind::Value => "put",
                ValueKind::Deletion => "del",
            };
            format!("{} @{} {kind}", escape(p.user_key), p.seq)
        }
        None => format!("{} (malformed internal key)", escape(key)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_every_byte() {
        let all: Vec<u8> = (0..=255u8).collect();
        let e = escape(&all);
        assert!(e.bytes().all(|c| (0x20..=0x7e).contains(&c)));
        assert_eq!(unescape(&e).unwrap(), all);
        assert_eq!(escape(b"a\\b\n"), "a\\\\b\\x0a");
    }

    #[test]
    fn rejects_bad_escapes() {
        assert!(unescape("a\\q").is_err());
        assert!(unescape("a\\x4").is_err());
        assert!(unescape("a\\xzz").is_err());
        assert!(unescape("a\\").is_err());
        assert_eq!(unescape("\\t\\x41").unwrap(), b"\tA");
    }

    #[test]
    fn shows_internal_keys() {
        let k = InternalKey {
            user_key: b"k\x01",
            seq: 42,
            kind: ValueKind::Value,
        }
        .encode();
        assert_eq!(internal_key(&k), "k\\x01 @42 put");
        assert!(internal_key(b"ab").contains("malformed"));
    }
}
