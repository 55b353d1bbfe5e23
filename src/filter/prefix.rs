//! Prefix filters: a [`PrefixExtractor`] maps a key to its prefix, and a
//! table's prefix filter is a filter ([`prefix_filter_policy`])
//! over the [`key_hash`](super::key_hash) of the distinct prefixes of its
//! keys, so a prefix scan skips a table that holds no key with the prefix
//! (RocksDB's prefix extractor and prefix Bloom).
//!
//! A key the extractor gives no prefix for (shorter than a fixed length, or
//! without the delimiter) is out of its domain: it adds nothing to the
//! filter, and a scan of a prefix outside the domain reads every table.
//! Every key that starts with an in-domain prefix `p` has the extractor's
//! prefix of `p` as its own prefix, so a scan of `p` may skip on that
//! prefix's hash without ever hiding a key.
//!
//! The block's bytes (`docs/format.md`, "Prefix filter block"): the
//! extractor's text form, length first, then the serialized filter.

use std::fmt;

use super::{Filter, FilterPolicy};
use crate::coding::{get_varint32, put_varint32};

/// The filter family and size every prefix filter is built with: blocked512
/// at 10 bits per prefix (k = 6, modelled FPR 0.97%). A table records its
/// filter's own parameters, so a reader needs no setting.
pub fn prefix_filter_policy() -> FilterPolicy {
    FilterPolicy::blocked512(10.0)
}

/// Longest fixed prefix accepted: a bound that keeps the text form and the
/// filter's keys short.
pub const MAX_FIXED_PREFIX: usize = 1 << 16;

/// How a key's prefix is taken. A store with one builds a prefix filter per
/// table and skips tables in [`Db::scan_prefix`](crate::Db::scan_prefix).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PrefixExtractor {
    /// The first `n` bytes (`n` ≥ 1); a shorter key has no prefix.
    Fixed(usize),
    /// The bytes up to and including the first occurrence of the delimiter
    /// (`UpToDelimiter(b':')` maps `user:42` to `user:`); a key without it
    /// has no prefix.
    UpToDelimiter(u8),
}

impl PrefixExtractor {
    /// The prefix of `key`, or `None` if the key is outside the domain.
    #[inline]
    pub fn prefix<'a>(&self, key: &'a [u8]) -> Option<&'a [u8]> {
        match *self {
            PrefixExtractor::Fixed(n) => key.get(..n),
            PrefixExtractor::UpToDelimiter(d) => {
                key.iter().position(|&b| b == d).map(|i| &key[..=i])
            }
        }
    }

    /// Checks the parameters: a fixed length of 1..=[`MAX_FIXED_PREFIX`].
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) otherwise.
    pub fn validate(&self) -> crate::Result<()> {
        match *self {
            PrefixExtractor::Fixed(n) if !(1..=MAX_FIXED_PREFIX).contains(&n) => {
                Err(crate::Error::invalid(format!(
                    "prefix extractor: a fixed prefix of {n} bytes, must be 1..={MAX_FIXED_PREFIX}"
                )))
            }
            _ => Ok(()),
        }
    }

    /// Parses the text form ([`Display`](fmt::Display)): `fixed:<n>` or
    /// `delimiter:0x<hex byte>`.
    ///
    /// ```
    /// use bloomlsm::PrefixExtractor;
    /// assert_eq!(PrefixExtractor::parse("fixed:4")?, PrefixExtractor::Fixed(4));
    /// assert_eq!(PrefixExtractor::parse("delimiter:0x3a")?, PrefixExtractor::UpToDelimiter(b':'));
    /// assert!(PrefixExtractor::parse("fixed:0").is_err());
    /// # Ok::<(), bloomlsm::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) naming the
    /// accepted forms.
    pub fn parse(s: &str) -> crate::Result<Self> {
        let bad = || {
            crate::Error::invalid(format!(
                "prefix extractor {s:?}: expected fixed:<bytes> or delimiter:0x<hex byte>"
            ))
        };
        let e = if let Some(n) = s.strip_prefix("fixed:") {
            PrefixExtractor::Fixed(n.parse().map_err(|_| bad())?)
        } else if let Some(b) = s.strip_prefix("delimiter:0x") {
            if b.len() != 2 {
                return Err(bad());
            }
            PrefixExtractor::UpToDelimiter(u8::from_str_radix(b, 16).map_err(|_| bad())?)
        } else {
            return Err(bad());
        };
        e.validate()?;
        Ok(e)
    }
}

impl fmt::Display for PrefixExtractor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PrefixExtractor::Fixed(n) => write!(f, "fixed:{n}"),
            PrefixExtractor::UpToDelimiter(d) => write!(f, "delimiter:0x{d:02x}"),
        }
    }
}

/// Collects the distinct prefixes of a table's keys, added in key order
/// (the keys sharing a prefix are contiguous in that order).
#[derive(Debug)]
pub(crate) struct PrefixCollector {
    extractor: PrefixExtractor,
    last: Option<Vec<u8>>,
    hashes: Vec<u64>,
}

impl PrefixCollector {
    pub(crate) fn new(extractor: PrefixExtractor) -> Self {
        PrefixCollector {
            extractor,
            last: None,
            hashes: Vec::new(),
        }
    }

    /// Adds a user key; keys outside the extractor's domain add nothing.
    pub(crate) fn add(&mut self, user_key: &[u8]) {
        let Some(p) = self.extractor.prefix(user_key) else {
            return;
        };
        if self.last.as_deref() == Some(p) {
            return;
        }
        self.hashes.push(super::key_hash(p));
        let last = self.last.get_or_insert_with(Vec::new);
        last.clear();
        last.extend_from_slice(p);
    }

    /// Distinct prefixes added.
    #[cfg(test)]
    pub(crate) fn count(&self) -> usize {
        self.hashes.len()
    }

    /// The block's payload: the extractor, then the filter over the prefixes.
    pub(crate) fn finish(&self) -> crate::Result<Vec<u8>> {
        let filter = prefix_filter_policy().build(&self.hashes)?;
        Ok(encode_block(&self.extractor, &filter))
    }
}

/// A prefix filter block's payload: `varint32 n`, the extractor's text form
/// (`n` bytes of ASCII), then a serialized filter.
pub(crate) fn encode_block(extractor: &PrefixExtractor, filter: &[u8]) -> Vec<u8> {
    let spec = extractor.to_string();
    let mut out = Vec::with_capacity(spec.len() + 1 + filter.len());
    put_varint32(&mut out, spec.len() as u32);
    out.extend_from_slice(spec.as_bytes());
    out.extend_from_slice(filter);
    out
}

/// A table's prefix filter, decoded.
#[derive(Clone, Debug)]
pub struct PrefixFilter {
    /// The extractor the filter was built with.
    pub extractor: PrefixExtractor,
    /// The filter over the hashes of the table's distinct prefixes.
    pub filter: Filter,
}

impl PrefixFilter {
    /// Decodes a prefix filter block's payload. Every way it can fail to
    /// decode (a bad length, an unknown extractor, a filter that does not
    /// open or is of an unknown kind) is an `Err` naming what: the table is
    /// then read without prefix skipping.
    pub fn decode(bytes: &[u8]) -> Result<PrefixFilter, String> {
        let (n, used) =
            get_varint32(bytes).ok_or("the extractor's length is not a varint32".to_string())?;
        let rest = &bytes[used..];
        let spec = rest
            .get(..n as usize)
            .ok_or_else(|| format!("an extractor of {n} bytes in {} bytes", rest.len()))?;
        let spec =
            std::str::from_utf8(spec).map_err(|_| "the extractor is not UTF-8".to_string())?;
        let extractor = PrefixExtractor::parse(spec).map_err(|e| e.to_string())?;
        let filter = Filter::open(&rest[n as usize..]).map_err(|e| e.to_string())?;
        if !filter.is_usable() {
            return Err(format!("{filter:?}"));
        }
        Ok(PrefixFilter { extractor, filter })
    }

    /// False only if no key of the table has the prefix whose
    /// [`key_hash`](super::key_hash) is `hash`.
    #[inline]
    pub fn may_contain(&self, hash: u64) -> bool {
        self.filter.may_contain(hash)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::filter::key_hash;

    #[test]
    fn prefixes_and_domains() {
        let f = PrefixExtractor::Fixed(3);
        assert_eq!(f.prefix(b"abcd"), Some(&b"abc"[..]));
        assert_eq!(f.prefix(b"abc"), Some(&b"abc"[..]));
        assert_eq!(f.prefix(b"ab"), None);
        let d = PrefixExtractor::UpToDelimiter(b':');
        assert_eq!(d.prefix(b"user:1:2"), Some(&b"user:"[..]));
        assert_eq!(d.prefix(b":"), Some(&b":"[..]));
        assert_eq!(d.prefix(b"user"), None);
        assert!(PrefixExtractor::Fixed(0).validate().is_err());
        for e in [f, d, PrefixExtractor::UpToDelimiter(0xff)] {
            assert_eq!(PrefixExtractor::parse(&e.to_string()).unwrap(), e);
        }
        for bad in [
            "",
            "fixed:",
            "fixed:0",
            "fixed:x",
            "delimiter:0x3",
            "delimiter::",
            "upto:1",
        ] {
            assert!(PrefixExtractor::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_block_round_trips_and_damage_is_refused() {
        let mut c = PrefixCollector::new(PrefixExtractor::Fixed(2));
        for k in [&b"a"[..], b"aa1", b"aa2", b"ab", b"ba9"] {
            c.add(k);
        }
        assert_eq!(c.count(), 3);
        let bytes = c.finish().unwrap();
        let f = PrefixFilter::decode(&bytes).unwrap();
        assert_eq!(f.extractor, PrefixExtractor::Fixed(2));
        for p in [&b"aa"[..], b"ab", b"ba"] {
            assert!(f.may_contain(key_hash(p)));
        }
        // Every truncation and every single-byte change either decodes to a
        // filter that still holds the prefixes or is refused, and none panics.
        for cut in 0..bytes.len() {
            let _ = PrefixFilter::decode(&bytes[..cut]);
        }
        for i in 0..bytes.len() {
            let mut b = bytes.clone();
            b[i] ^= 0x5a;
            let _ = PrefixFilter::decode(&b);
        }
        assert!(PrefixFilter::decode(&encode_block(&PrefixExtractor::Fixed(2), b"xx")).is_err());
        assert!(PrefixFilter::decode(&[0x80]).is_err());
    }
}
