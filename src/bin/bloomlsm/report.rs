//! Output formatting for the `bloomlsm` command: aligned text tables, JSON
//! objects (one per line) and CSV, plus number formats.
//!
//! JSON is written by hand (the crate has no serde): [`JsonObject`] escapes
//! strings per RFC 8259 and writes non-finite numbers as `null`.

use std::fmt::Write as _;

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

/// A JSON value for [`JsonObject`].
#[derive(Clone, Debug, PartialEq)]
pub enum JsonValue {
    /// `null`.
    Null,
    /// `true` / `false`.
    Bool(bool),
    /// An integer.
    Int(i64),
    /// An unsigned integer.
    UInt(u64),
    /// A float (`null` if not finite).
    Float(f64),
    /// A string.
    Str(String),
}

impl From<&str> for JsonValue {
    fn from(s: &str) -> Self {
        JsonValue::Str(s.to_string())
    }
}
impl From<String> for JsonValue {
    fn from(s: String) -> Self {
        JsonValue::Str(s)
    }
}
impl From<f64> for JsonValue {
    fn from(v: f64) -> Self {
        JsonValue::Float(v)
    }
}
impl From<u64> for JsonValue {
    fn from(v: u64) -> Self {
        JsonValue::UInt(v)
    }
}
impl From<usize> for JsonValue {
    fn from(v: usize) -> Self {
        JsonValue::UInt(v as u64)
    }
}
impl From<i64> for JsonValue {
    fn from(v: i64) -> Self {
        JsonValue::Int(v)
    }
}
impl From<bool> for JsonValue {
    fn from(v: bool) -> Self {
        JsonValue::Bool(v)
    }
}
impl<T: Into<JsonValue>> From<Option<T>> for JsonValue {
    fn from(v: Option<T>) -> Self {
        v.map_or(JsonValue::Null, Into::into)
    }
}

/// A JSON object built field by field, rendered on one line.
#[derive(Clone, Debug, Default)]
pub struct JsonObject {
    fields: Vec<(String, JsonValue)>,
}

impl JsonObject {
    /// An empty object.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a field (keys are not de-duplicated).
    pub fn field(mut self, key: &str, value: impl Into<JsonValue>) -> Self {
        self.fields.push((key.to_string(), value.into()));
        self
    }

    /// The object as compact JSON, e.g. `{"a":1,"b":"x"}`.
    pub fn render(&self) -> String {
        let mut s = String::from("{");
        for (i, (k, v)) in self.fields.iter().enumerate() {
            if i > 0 {
                s.push(',');
            }
            json_string(&mut s, k);
            s.push(':');
            match v {
                JsonValue::Null => s.push_str("null"),
                JsonValue::Bool(b) => s.push_str(if *b { "true" } else { "false" }),
                JsonValue::Int(n) => {
                    let _ = write!(s, "{n}");
                }
                JsonValue::UInt(n) => {
                    let _ = write!(s, "{n}");
                }
                JsonValue::Float(f) => json_float(&mut s, *f),
                JsonValue::Str(t) => json_string(&mut s, t),
            }
        }
        s.push('}');
        s
    }
}

/// Appends `f` as a JSON number (shortest round-trip form), `null` if not finite.
fn json_float(s: &mut String, f: f64) {
    if !f.is_finite() {
        s.push_str("null");
    } else if f == f.trunc() && f.abs() < 1e15 {
        // `{}` prints 3.0 as "3"; keep it visibly a float for readers.
        let _ = write!(s, "{f:.1}");
    } else {
        let _ = write!(s, "{f}");
        // Rust prints tiny numbers without an exponent ("0.0000001"); valid JSON.
    }
}

/// Appends `t` as a quoted JSON string.
pub fn json_string(s: &mut String, t: &str) {
    s.push('"');
    for c in t.chars() {
        match c {
            '"' => s.push_str("\\\""),
            '\\' => s.push_str("\\\\"),
            '\n' => s.push_str("\\n"),
            '\r' => s.push_str("\\r"),
            '\t' => s.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(s, "\\u{:04x}", c as u32);
            }
            c => s.push(c),
        }
    }
    s.push('"');
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
/// magnitudes: `0.00123`, `1.23`, `123`, `12345`.
pub fn sig3(x: f64) -> String {
    if x == 0.0 {
        return "0".to_string();
    }
    if !x.is_finite() {
        return "-".to_string();
    }
    let mag = x.abs().log10().floor() as i32;
    if mag >= 2 {
        format!("{x:.0}")
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
    fn json_escapes_and_nulls() {
        let j = JsonObject::new()
            .field("s", "a\"b\\c\n\u{1}")
            .field("f", 0.5)
            .field("i", 3u64)
            .field("whole", 2.0)
            .field("nan", f64::NAN)
            .field("none", None::<f64>)
            .render();
        assert_eq!(
            j,
            r#"{"s":"a\"b\\c\n\u0001","f":0.5,"i":3,"whole":2.0,"nan":null,"none":null}"#
        );
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
        assert_eq!(sig3(1234.4), "1234");
        assert_eq!(sig3(0.0123456), "0.0123");
        assert_eq!(duration_ns(1420.0), "1.42 µs");
    }
}
