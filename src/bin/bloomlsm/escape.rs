//! How keys and values are written on the command line and in output.
//!
//! Two forms, chosen per command with `--hex` ([`Codec`]):
//!
//! - **Text** (the default): UTF-8 text stands for itself, so `café` prints
//!   as `café`; a backslash is `\\`; control characters (tab, newline, ESC,
//!   DEL, C1 controls) and bytes that are not valid UTF-8 are `\xNN`, one per
//!   byte. The form never contains a tab or newline and reads back to the
//!   same bytes: [`unescape`] parses it (plus `\t`, `\n`, `\r`, `\0` for
//!   convenience), so a key copied from `db scan` output can be pasted into
//!   `db get`, and `db scan` output can be fed back to `db load`.
//! - **Hex** (`--hex`, as `ldb --hex`): two lowercase hex digits per byte on
//!   output; on input upper or lower case, with an optional `0x` prefix.

use std::fmt::Write as _;

use bloomlsm::sst::{InternalKey, ValueKind};

/// The form of keys and values on the command line and in output.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Codec {
    /// Text with `\xNN` escapes ([`escape`] / [`unescape`]).
    #[default]
    Text,
    /// Hex digits, two per byte.
    Hex,
}

impl Codec {
    /// [`Codec::Hex`] if `hex`, else [`Codec::Text`].
    pub fn new(hex: bool) -> Self {
        if hex { Codec::Hex } else { Codec::Text }
    }

    /// The printable form of `bytes`.
    pub fn encode(self, bytes: &[u8]) -> String {
        match self {
            Codec::Text => escape(bytes),
            Codec::Hex => to_hex(bytes),
        }
    }

    /// Parses the printable form back into bytes; errors say what is wrong
    /// and where, e.g. `bad escape "\q" at byte 3`.
    pub fn decode(self, text: &str) -> Result<Vec<u8>, String> {
        match self {
            Codec::Text => unescape(text),
            Codec::Hex => from_hex(text),
        }
    }
}

/// The text form of `bytes` (see the module docs).
pub fn escape(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len());
    let push_bytes = |s: &mut String, b: &[u8]| {
        for &b in b {
            let _ = write!(s, "\\x{b:02x}");
        }
    };
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            if c == '\\' {
                s.push_str("\\\\");
            } else if c.is_control() {
                push_bytes(&mut s, c.encode_utf8(&mut [0; 4]).as_bytes());
            } else {
                s.push(c);
            }
        }
        push_bytes(&mut s, chunk.invalid());
    }
    s
}

/// Parses the text form back into bytes. Errors name the offending escape,
/// e.g. `bad escape "\q" at byte 3`.
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
            Some(_) => {
                let c = text[i + 1..].chars().next().unwrap_or('?');
                return Err(format!(
                    "bad escape \"\\{c}\" at byte {i} (use \\\\ for a backslash)"
                ));
            }
            None => return Err(format!("trailing backslash at byte {i}")),
        }
        i += 2;
    }
    Ok(out)
}

/// Two lowercase hex digits per byte.
pub fn to_hex(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

/// Parses hex digits (either case, optional `0x` prefix) into bytes.
pub fn from_hex(text: &str) -> Result<Vec<u8>, String> {
    let digits = text
        .strip_prefix("0x")
        .or_else(|| text.strip_prefix("0X"))
        .unwrap_or(text);
    if !digits.len().is_multiple_of(2) {
        return Err(format!(
            "odd number of hex digits ({}); --hex takes two per byte",
            digits.len()
        ));
    }
    digits
        .as_bytes()
        .chunks(2)
        .enumerate()
        .map(|(i, pair)| {
            std::str::from_utf8(pair)
                .ok()
                .and_then(|p| u8::from_str_radix(p, 16).ok())
                .ok_or_else(|| format!("not a hex digit pair at byte {}", 2 * i))
        })
        .collect()
}

/// An internal key (`user key ++ 8-byte trailer`) as `user_key @seq kind`,
/// e.g. `apple @42 put`; malformed keys fall back to the plain form with a note.
pub fn internal_key(codec: Codec, key: &[u8]) -> String {
    match InternalKey::parse(key) {
        Some(p) => format!(
            "{} @{} {}",
            codec.encode(p.user_key),
            p.seq,
            kind_name(p.kind)
        ),
        None => format!("{} (malformed internal key)", codec.encode(key)),
    }
}

/// `put` or `del`.
pub fn kind_name(kind: ValueKind) -> &'static str {
    match kind {
        ValueKind::Value => "put",
        ValueKind::Deletion => "del",
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
        for codec in [Codec::Text, Codec::Hex] {
            assert_eq!(codec.decode(&codec.encode(&all)).unwrap(), all);
        }
    }

    #[test]
    fn utf8_prints_as_text() {
        let s = "café ✓ 日本";
        assert_eq!(escape(s.as_bytes()), s);
        assert_eq!(unescape(s).unwrap(), s.as_bytes());
        // Controls are escaped even when valid UTF-8 (C1 NEL is two bytes),
        // and a broken sequence shows its bytes.
        assert_eq!(escape("a\u{85}b\tc".as_bytes()), "a\\xc2\\x85b\\x09c");
        assert_eq!(escape(b"\xc3(\xe2\x9c\x93"), "\\xc3(✓");
        let mixed = b"\xff\xfe\xc3\xa9\\\x1b[0m";
        assert_eq!(unescape(&escape(mixed)).unwrap(), mixed);
    }

    #[test]
    fn rejects_bad_escapes() {
        assert!(unescape("a\\q").is_err());
        assert!(unescape("a\\x4").is_err());
        assert!(unescape("a\\xzz").is_err());
        assert!(unescape("a\\").is_err());
        assert!(unescape("a\\é").unwrap_err().contains("\"\\é\""));
        assert_eq!(unescape("\\t\\x41").unwrap(), b"\tA");
    }

    #[test]
    fn hex_both_ways() {
        assert_eq!(to_hex(b"\x00\xffA"), "00ff41");
        assert_eq!(from_hex("00FF41").unwrap(), b"\x00\xffA");
        assert_eq!(from_hex("0x6b").unwrap(), b"k");
        assert_eq!(from_hex("").unwrap(), b"");
        assert!(from_hex("abc").unwrap_err().contains("odd"));
        assert!(from_hex("zz").unwrap_err().contains("byte 0"));
        assert!(from_hex("00é0").is_err());
    }

    #[test]
    fn shows_internal_keys() {
        let k = InternalKey {
            user_key: b"k\x01",
            seq: 42,
            kind: ValueKind::Value,
        }
        .encode();
        assert_eq!(internal_key(Codec::Text, &k), "k\\x01 @42 put");
        assert_eq!(internal_key(Codec::Hex, &k), "6b01 @42 put");
        assert!(internal_key(Codec::Text, b"ab").contains("malformed"));
    }
}
