//! Varints and a bounds-checked decoder, shared by every on-disk encoding: the
//! SSTable's block handles and entries, the WAL batch payload and the
//! MANIFEST's version edits. Decoding never panics: every read is
//! bounds-checked and reports where it failed so callers can build an
//! [`crate::Error::Corruption`].

/// Longest LEB128 encoding of a `u64`.
pub const MAX_VARINT64_LEN: usize = 10;

/// Appends `v` as an unsigned LEB128 varint (7 bits per byte, low bits first,
/// high bit set on every byte but the last).
pub fn put_varint64(dst: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        dst.push((v as u8) | 0x80);
        v >>= 7;
    }
    dst.push(v as u8);
}

/// Appends `v` as a varint (same encoding as [`put_varint64`], at most 5 bytes).
pub fn put_varint32(out: &mut Vec<u8>, v: u32) {
    put_varint64(out, u64::from(v));
}

/// Decodes a varint64 at the start of `buf`: `(value, bytes used)`, or `None`
/// if it is truncated, longer than 10 bytes or overflows 64 bits.
pub fn get_varint64(buf: &[u8]) -> Option<(u64, usize)> {
    let mut v: u64 = 0;
    for (i, &b) in buf.iter().enumerate().take(MAX_VARINT64_LEN) {
        // The 10th byte may only carry the single top bit of a u64.
        if i == MAX_VARINT64_LEN - 1 && b > 1 {
            return None;
        }
        v |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return Some((v, i + 1));
        }
    }
    None
}

/// Decodes a varint32: like [`get_varint64`] but at most 5 bytes and `<= u32::MAX`.
pub fn get_varint32(buf: &[u8]) -> Option<(u32, usize)> {
    let (v, n) = get_varint64(&buf[..buf.len().min(5)])?;
    Some((u32::try_from(v).ok()?, n))
}

/// Appends a varint length followed by the bytes.
pub fn put_length_prefixed(dst: &mut Vec<u8>, bytes: &[u8]) {
    put_varint64(dst, bytes.len() as u64);
    dst.extend_from_slice(bytes);
}

/// A bounds-checked cursor over an encoded buffer. Every getter returns
/// `Err(what)` on truncated or malformed input; [`Decoder::pos`] then names the
/// offset of the field that failed.
pub struct Decoder<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Decoder<'a> {
    /// A cursor at the start of `buf`.
    pub fn new(buf: &'a [u8]) -> Self {
        Decoder { buf, pos: 0 }
    }

    /// Offset of the next unread byte.
    pub fn pos(&self) -> usize {
        self.pos
    }

    /// Bytes not yet read.
    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// True when every byte has been read.
    pub fn is_empty(&self) -> bool {
        self.remaining() == 0
    }

    /// Reads one byte.
    pub fn u8(&mut self) -> Result<u8, &'static str> {
        let b = *self.buf.get(self.pos).ok_or("truncated: expected a byte")?;
        self.pos += 1;
        Ok(b)
    }

    /// Reads `n` raw bytes.
    pub fn bytes(&mut self, n: usize) -> Result<&'a [u8], &'static str> {
        if self.remaining() < n {
            return Err("truncated: field runs past the end");
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    /// Reads a little-endian `u32`.
    pub fn fixed32(&mut self) -> Result<u32, &'static str> {
        let b = self.bytes(4)?;
        Ok(u32::from_le_bytes(b.try_into().expect("4 bytes")))
    }

    /// Reads a little-endian `u64`.
    pub fn fixed64(&mut self) -> Result<u64, &'static str> {
        let b = self.bytes(8)?;
        Ok(u64::from_le_bytes(b.try_into().expect("8 bytes")))
    }

    /// Reads a LEB128 varint; rejects encodings longer than 10 bytes and
    /// values that overflow 64 bits.
    pub fn varint64(&mut self) -> Result<u64, &'static str> {
        let rest = &self.buf[self.pos..];
        match get_varint64(rest) {
            Some((v, n)) => {
                self.pos += n;
                Ok(v)
            }
            None if rest.len() < MAX_VARINT64_LEN && rest.iter().all(|b| b & 0x80 != 0) => {
                Err("truncated varint")
            }
            None => Err("varint overflows 64 bits or is longer than 10 bytes"),
        }
    }

    /// Reads a varint that must fit a `u32`.
    pub fn varint32(&mut self) -> Result<u32, &'static str> {
        u32::try_from(self.varint64()?).map_err(|_| "varint does not fit 32 bits")
    }

    /// Reads a varint length followed by that many bytes.
    pub fn length_prefixed(&mut self) -> Result<&'a [u8], &'static str> {
        let n = self.varint64()?;
        let n = usize::try_from(n).map_err(|_| "length does not fit in memory")?;
        self.bytes(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Number of bytes [`put_varint64`] writes for `v`.
    fn varint64_len(mut v: u64) -> usize {
        let mut n = 1;
        while v >= 0x80 {
            v >>= 7;
            n += 1;
        }
        n
    }

    #[test]
    fn varint_roundtrip_lengths_and_truncation() {
        let vals = [
            0u64,
            1,
            127,
            128,
            300,
            16383,
            16384,
            u32::MAX as u64,
            u64::MAX - 1,
            u64::MAX,
        ];
        let mut buf = Vec::new();
        for &v in &vals {
            let mut b = Vec::new();
            put_varint64(&mut b, v);
            assert_eq!(b.len(), varint64_len(v));
            assert_eq!(get_varint64(&b), Some((v, b.len())));
            // Every strict prefix is truncated.
            for cut in 0..b.len() {
                assert_eq!(get_varint64(&b[..cut]), None);
            }
            buf.extend_from_slice(&b);
        }
        let mut d = Decoder::new(&buf);
        for &v in &vals {
            assert_eq!(d.varint64().unwrap(), v);
        }
        assert!(d.is_empty());
    }

    #[test]
    fn varint_rejects_overlong_and_truncated() {
        // 11 continuation bytes.
        assert!(Decoder::new(&[0x80; 11]).varint64().is_err());
        // 10th byte carrying more than one bit.
        let mut b = vec![0xff; 9];
        b.push(0x02);
        assert!(Decoder::new(&b).varint64().is_err());
        assert!(Decoder::new(&[0x80]).varint64().is_err());
        assert!(Decoder::new(&[]).varint64().is_err());
        assert!(Decoder::new(&[0x05, 1, 2]).length_prefixed().is_err());
        assert!(
            Decoder::new(&[0x80, 0x80, 0x80, 0x80, 0x10])
                .varint32()
                .is_err()
        );
    }

    #[test]
    fn get_varint_limits() {
        assert_eq!(get_varint64(&[0xff; 10]), None, "overflows 64 bits");
        assert_eq!(get_varint64(&[0x80; 11]), None, "too long");
        let mut b = Vec::new();
        put_varint64(&mut b, u64::from(u32::MAX) + 1);
        assert_eq!(get_varint32(&b), None);
        assert_eq!(get_varint32(&[5]), Some((5, 1)));
    }
}
