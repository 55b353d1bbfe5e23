//! Output formatting for the `bloomlsm` command: aligned text tables and CSV,
//! and the one set of number and date formats every command uses.
//! (`--json` output is built with `serde_json`, see [`crate::write_json`].)
//!
//! Numbers in text output: counts with thousands separators ([`count`]),
//! sizes in B / KiB / MiB / GiB ([`bytes()`]), rates as percentages ([`percent`]),
//! measured ratios with three significant digits ([`sig3`]), durations with a
//! unit ([`duration_ns`]), times as UTC dates ([`utc_date`]). Byte offsets in
//! a file stay plain integers, as the engine's error messages print them.
//!
//! The store's shape as `db`, `sst` and `bench` print it: on one line
//! ([`shape_line`]), as JSON ([`shape_json`]), summed over the levels
//! ([`level_total`]), and compression ratios ([`ratio`]). Its counters under
//! RocksDB's names ([`Stats::tickers`]) as JSON ([`tickers_json`]) and as
//! db_bench's `--statistics` lines ([`tickers_text`]).

use bloomlsm::{LevelStats, Stats, TickerValue};
use serde_json::{Value, json};

/// Column alignment in a [`TextTable`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Align {
    /// Left-aligned (names).
    Left,
    /// Right-aligned (numbers).
    Right,
}

/// A plain-text table with a header row, columns padded to their widest cell.
#[derive(Clone, Debug, Default)]
pub struct TextTable {
    headers: Vec<String>,
    align: Vec<Align>,
    rows: Vec<Vec<String>>,
}

impl TextTable {
    /// A table with these column headers; the first column is left-aligned,
    /// the others right-aligned (override with [`TextTable::align`]).
    pub fn new<S: AsRef<str>>(headers: &[S]) -> Self {
        let align = (0..headers.len())
            .map(|i| if i == 0 { Align::Left } else { Align::Right })
            .collect();
        TextTable {
            headers: headers.iter().map(|h| h.as_ref().to_string()).collect(),
            align,
            rows: Vec::new(),
        }
    }

    /// Sets the alignment of column `col`.
    pub fn align(mut self, col: usize, align: Align) -> Self {
        if let Some(a) = self.align.get_mut(col) {
            *a = align;
        }
        self
    }

    /// Appends a row (missing cells print empty, extra cells are dropped).
    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    /// The table as text: header, a rule, the rows; every line ends in `\n`.
    pub fn render(&self) -> String {
        let n = self.headers.len();
        let cell = |r: &Vec<String>, i: usize| r.get(i).map_or("", String::as_str).to_string();
        let mut width: Vec<usize> = self.headers.iter().map(|h| h.chars().count()).collect();
        for r in &self.rows {
            for (i, w) in width.iter_mut().enumerate() {
                *w = (*w).max(cell(r, i).chars().count());
            }
        }
        let mut out = String::new();
        let mut line = |cells: Vec<String>| {
            let mut l = String::new();
            for (i, c) in cells.iter().enumerate().take(n) {
                if i > 0 {
                    l.push_str("  ");
                }
                let pad = width[i].saturating_sub(c.chars().count());
                match self.align[i] {
                    Align::Left => {
                        l.push_str(c);
                        l.extend(std::iter::repeat_n(' ', pad));
                    }
                    Align::Right => {
                        l.extend(std::iter::repeat_n(' ', pad));
                        l.push_str(c);
                    }
                }
            }
            out.push_str(l.trim_end());
            out.push('\n');
        };
        line(self.headers.clone());
        line(width.iter().map(|&w| "-".repeat(w)).collect());
        for r in &self.rows {
            line((0..n).map(|i| cell(r, i)).collect());
        }
        out
    }
}

/// One CSV line (RFC 4180): fields with commas, quotes or newlines are quoted.
pub fn csv_line<S: AsRef<str>>(fields: &[S]) -> String {
    let mut s = String::new();
    for (i, f) in fields.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        let f = f.as_ref();
        if f.contains([',', '"', '\n', '\r']) {
            s.push('"');
            s.push_str(&f.replace('"', "\"\""));
            s.push('"');
        } else {
            s.push_str(f);
        }
    }
    s
}

/// Bytes as a short human figure: `512 B`, `3.4 KiB`, `12.0 MiB`, `1.50 GiB`.
pub fn bytes(n: u64) -> String {
    const K: f64 = 1024.0;
    let f = n as f64;
    if f < K {
        format!("{n} B")
    } else if f < K * K {
        format!("{:.1} KiB", f / K)
    } else if f < K * K * K {
        format!("{:.1} MiB", f / (K * K))
    } else {
        format!("{:.2} GiB", f / (K * K * K))
    }
}

/// A count with thousands separators: `1,000,000`.
pub fn count(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A rate such as an FPR as a percentage with three significant digits:
/// `0.947%`, `12.3%`, `0.00120%`; `-` for `None`.
pub fn percent(rate: Option<f64>) -> String {
    match rate {
        None => "-".to_string(),
        Some(r) if !r.is_finite() => "-".to_string(),
        Some(r) => format!("{}%", sig3(r * 100.0)),
    }
}

/// `x` with three significant digits, without an exponent for everyday
/// magnitudes: `0.00123`, `1.23`, `123`, `12,345` (whole numbers from 100 on,
/// with [`count`]'s separators).
pub fn sig3(x: f64) -> String {
    if x == 0.0 {
        return "0".to_string();
    }
    if !x.is_finite() {
        return "-".to_string();
    }
    let mag = x.abs().log10().floor() as i32;
    if mag >= 2 {
        let sign = if x < 0.0 { "-" } else { "" };
        format!("{sign}{}", count(x.abs().round() as u64))
    } else if mag >= -6 {
        format!("{x:.*}", (2 - mag) as usize)
    } else {
        format!("{x:.2e}")
    }
}

/// Nanoseconds as `850 ns`, `1.42 µs`, `12.3 ms`, `1.50 s`.
pub fn duration_ns(ns: f64) -> String {
    if !ns.is_finite() {
        "-".to_string()
    } else if ns < 1e3 {
        format!("{ns:.0} ns")
    } else if ns < 1e6 {
        format!("{} µs", sig3(ns / 1e3))
    } else if ns < 1e9 {
        format!("{} ms", sig3(ns / 1e6))
    } else {
        format!("{:.2} s", ns / 1e9)
    }
}

/// Unix seconds as a UTC date, `2026-11-22 03:55:04 UTC`
/// (`T` and `Z` instead of the space and ` UTC` when `iso`).
pub fn utc_date(unix_secs: u64, iso: bool) -> String {
    let days = (unix_secs / 86_400) as i64;
    let rem = unix_secs % 86_400;
    let (h, m, s) = (rem / 3600, rem / 60 % 60, rem % 60);
    // Days to civil date (H. Hinnant, "chrono-Compatible Low-Level Date Algorithms").
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let mo = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(mo <= 2);
    if iso {
        format!("{y:04}-{mo:02}-{d:02}T{h:02}:{m:02}:{s:02}Z")
    } else {
        format!("{y:04}-{mo:02}-{d:02} {h:02}:{m:02}:{s:02} UTC")
    }
}

/// The store's shape on one line: `L0 2 files 20,000 keys 2.3 MiB | L1 ...`.
pub fn shape_line(s: &Stats) -> String {
    let parts: Vec<String> = s
        .levels
        .iter()
        .filter(|l| l.files > 0)
        .map(|l| {
            format!(
                "L{} {} files {} keys {}",
                l.level,
                l.files,
                count(l.entries),
                bytes(l.file_bytes)
            )
        })
        .collect();
    if parts.is_empty() {
        "(no files)".to_string()
    } else {
        parts.join(" | ")
    }
}

/// The store's shape as JSON: one `{level, files, keys, bytes,
/// filter_bits_per_key}` per non-empty level (`filter_bits_per_key` null for
/// a level without filtered keys).
pub fn shape_json(s: &Stats) -> Value {
    s.levels
        .iter()
        .filter(|l| l.files > 0)
        .map(|l| {
            json!({
                "level": l.level,
                "files": l.files,
                "keys": l.entries,
                "bytes": l.file_bytes,
                "filter_bits_per_key": (l.filtered_keys > 0).then(|| l.filter_bits_per_key()),
            })
        })
        .collect()
}

/// A compression ratio, uncompressed over stored bytes: `2.41x` (`-` for
/// nothing stored).
pub fn ratio(raw: u64, stored: u64) -> String {
    if stored == 0 {
        "-".to_string()
    } else {
        format!("{:.2}x", raw as f64 / stored as f64)
    }
}

/// The sums over every non-empty level (policy and predicted FPR left empty).
pub fn level_total(s: &Stats) -> LevelStats {
    let mut total = LevelStats::default();
    for l in s.levels.iter().filter(|l| l.files > 0) {
        total.files += l.files;
        total.entries += l.entries;
        total.file_bytes += l.file_bytes;
        total.data_bytes += l.data_bytes;
        total.data_raw_bytes += l.data_raw_bytes;
        total.filter_bytes += l.filter_bytes;
        total.filtered_keys += l.filtered_keys;
        total.io.add(&l.io);
    }
    total
}

/// [`Stats::tickers`] as one JSON object, name to value.
pub fn tickers_json(s: &Stats) -> Value {
    Value::Object(
        s.tickers()
            .into_iter()
            .map(|(name, v)| {
                let v = match v {
                    TickerValue::Count(n) => json!(n),
                    TickerValue::Real(x) => json!(x),
                };
                (name, v)
            })
            .collect(),
    )
}

/// [`Stats::tickers`] as db_bench's `--statistics` prints tickers, one a
/// line: `rocksdb.bloom.filter.useful COUNT : 12`; a real number (a rate,
/// a model's figure) as `NAME VALUE : 0.0096`.
pub fn tickers_text(s: &Stats) -> String {
    s.tickers()
        .into_iter()
        .map(|(name, v)| match v {
            TickerValue::Count(n) => format!("{name} COUNT : {n}\n"),
            TickerValue::Real(x) => format!("{name} VALUE : {x}\n"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_aligns_columns() {
        let mut t = TextTable::new(&["name", "n"]);
        t.row(vec!["a".into(), "1".into()]);
        t.row(vec!["longer".into(), "1000".into()]);
        let s = t.render();
        let lines: Vec<&str> = s.lines().collect();
        assert_eq!(lines[0], "name       n");
        assert_eq!(lines[2], "a          1");
        assert_eq!(lines[3], "longer  1000");
    }

    #[test]
    fn dates() {
        assert_eq!(utc_date(0, false), "1970-01-01 00:00:00 UTC");
        assert_eq!(utc_date(1_795_335_304, false), "2026-11-22 08:15:04 UTC");
        assert_eq!(utc_date(951_782_400, true), "2000-02-29T00:00:00Z");
        assert_eq!(utc_date(4_102_444_799, true), "2099-12-31T23:59:59Z");
    }

    #[test]
    fn csv_quotes_when_needed() {
        assert_eq!(csv_line(&["a", "b,c", "d\"e"]), "a,\"b,c\",\"d\"\"e\"");
    }

    #[test]
    fn number_formats() {
        assert_eq!(count(1_234_567), "1,234,567");
        assert_eq!(count(12), "12");
        assert_eq!(bytes(2048), "2.0 KiB");
        assert_eq!(percent(Some(0.00947)), "0.947%");
        assert_eq!(percent(None), "-");
        assert_eq!(sig3(1234.4), "1,234");
        assert_eq!(sig3(628_538.2), "628,538");
        assert_eq!(sig3(-150.0), "-150");
        assert_eq!(sig3(0.0123456), "0.0123");
        assert_eq!(duration_ns(1420.0), "1.42 µs");
    }
}
