//! Python's `json.dumps`, as Hugging Face's `tojson` calls it, for template values.
//!
//! HF replaces Jinja's HTML-safe `tojson` with `json.dumps(x, ensure_ascii=False,
//! indent=None, separators=None, sort_keys=False)`: separators `", "` and `": "`
//! (`","` between items once `indent` is set), no HTML escaping, non-ASCII text
//! as is, keys in the value's own order. This module reproduces that output,
//! including Python's float spelling (`1e+16`, `1.5e-05`, `2.0`).
//!
//! Key order is the order the value iterates in: the fields of the structs the
//! renderer builds keep their declared order (`{"type": "function", "function":
//! {"name": …}}` as HF writes it), while `serde_json` objects (tool schemas,
//! tool-call arguments) become minijinja maps, which are sorted (minijinja is
//! built without its `preserve_order`), whatever order serde_json keeps in
//! this build. A tool schema's keys therefore render sorted.

use std::io;

use minijinja::value::{Kwargs, Value};
use minijinja::{Error, ErrorKind};
use serde::Serialize;
use serde_json::ser::Formatter;

/// How to lay out the JSON text.
#[derive(Clone, Debug)]
pub(crate) struct JsonStyle {
    /// Indentation per level; `None` keeps everything on one line.
    pub indent: Option<String>,
    /// Between array items and object members.
    pub item_separator: String,
    /// Between an object key and its value.
    pub key_separator: String,
    /// Escape every character outside printable ASCII as `\uXXXX`.
    pub ensure_ascii: bool,
    /// Sort object keys (by code point).
    pub sort_keys: bool,
}

impl Default for JsonStyle {
    /// `json.dumps` with HF's defaults: one line, `", "` and `": "`.
    fn default() -> Self {
        Self {
            indent: None,
            item_separator: ", ".into(),
            key_separator: ": ".into(),
            ensure_ascii: false,
            sort_keys: false,
        }
    }
}

/// Serializes `value` as Python's `json.dumps` would with `style`.
pub(crate) fn dumps<T: Serialize + ?Sized>(
    value: &T,
    style: &JsonStyle,
) -> Result<String, serde_json::Error> {
    let mut out = Vec::new();
    let formatter = PyFormatter { style, depth: 0, has_value: false };
    let mut serializer = serde_json::Serializer::with_formatter(&mut out, formatter);
    if style.sort_keys {
        // serde_json's map is a BTreeMap in this workspace: converting sorts every level.
        serde_json::to_value(value)?.serialize(&mut serializer)?;
    } else {
        value.serialize(&mut serializer)?;
    }
    String::from_utf8(out).map_err(|error| serde::ser::Error::custom(error.to_string()))
}

/// The `tojson` filter: `value | tojson`, `tojson(indent=2)`, `tojson(4)`, and
/// Python's `ensure_ascii`, `separators` and `sort_keys` keywords.
pub(crate) fn tojson(value: &Value, indent: Option<Value>, kwargs: Kwargs) -> Result<Value, Error> {
    let indent = match indent {
        Some(indent) => Some(indent),
        None => kwargs.get::<Option<Value>>("indent")?,
    };
    let mut style = JsonStyle { indent: indent_text(indent.as_ref())?, ..JsonStyle::default() };
    if style.indent.is_some() {
        style.item_separator = ",".into();
    }
    if let Some(separators) = kwargs.get::<Option<Value>>("separators")?
        && !separators.is_none()
    {
        (style.item_separator, style.key_separator) = separator_pair(&separators)?;
    }
    style.ensure_ascii = kwargs.get::<Option<bool>>("ensure_ascii")?.unwrap_or(false);
    style.sort_keys = kwargs.get::<Option<bool>>("sort_keys")?.unwrap_or(false);
    kwargs.assert_all_used()?;
    let text = dumps(value, &style).map_err(|error| {
        Error::new(ErrorKind::InvalidOperation, "tojson: cannot serialize to JSON").with_source(error)
    })?;
    Ok(Value::from_safe_string(text))
}

/// Python accepts an integer (that many spaces) or a string as `indent`.
fn indent_text(indent: Option<&Value>) -> Result<Option<String>, Error> {
    let Some(indent) = indent.filter(|value| !value.is_none() && !value.is_undefined()) else {
        return Ok(None);
    };
    if let Some(text) = indent.as_str() {
        return Ok(Some(text.to_owned()));
    }
    match i64::try_from(indent.clone()) {
        Ok(width) => Ok(Some(" ".repeat(usize::try_from(width).unwrap_or(0)))),
        Err(_) => {
            Err(Error::new(ErrorKind::InvalidOperation, "tojson: indent must be an integer or a string"))
        }
    }
}

fn separator_pair(value: &Value) -> Result<(String, String), Error> {
    let invalid = || Error::new(ErrorKind::InvalidOperation, "tojson: separators must be two strings");
    let items: Vec<Value> = value.try_iter().map_err(|_| invalid())?.collect();
    match items.as_slice() {
        [item, key] => match (item.as_str(), key.as_str()) {
            (Some(item), Some(key)) => Ok((item.to_owned(), key.to_owned())),
            _ => Err(invalid()),
        },
        _ => Err(invalid()),
    }
}

/// Python's `repr(float)`: shortest round-trip digits, exponent form below
/// 1e-4 and from 1e16 on, with a signed two-digit-minimum exponent.
fn python_float(value: f64) -> String {
    if value == 0.0 {
        return if value.is_sign_negative() { "-0.0".into() } else { "0.0".into() };
    }
    let scientific = format!("{value:e}");
    let (mantissa, exponent) = scientific.split_once('e').unwrap_or((scientific.as_str(), "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    if !(-4..16).contains(&exponent) {
        let sign = if exponent < 0 { '-' } else { '+' };
        return format!("{mantissa}e{sign}{:02}", exponent.unsigned_abs());
    }
    let plain = format!("{value}");
    if plain.contains('.') { plain } else { plain + ".0" }
}

/// A `serde_json` formatter with Python's separators, indentation and escaping.
struct PyFormatter<'a> {
    style: &'a JsonStyle,
    depth: usize,
    has_value: bool,
}

impl PyFormatter<'_> {
    fn newline<W: ?Sized + io::Write>(&self, writer: &mut W) -> io::Result<()> {
        if let Some(indent) = &self.style.indent {
            writer.write_all(b"\n")?;
            for _ in 0..self.depth {
                writer.write_all(indent.as_bytes())?;
            }
        }
        Ok(())
    }

    fn begin<W: ?Sized + io::Write>(&mut self, writer: &mut W, open: &[u8]) -> io::Result<()> {
        self.depth += 1;
        self.has_value = false;
        writer.write_all(open)
    }

    fn end<W: ?Sized + io::Write>(&mut self, writer: &mut W, close: &[u8]) -> io::Result<()> {
        self.depth = self.depth.saturating_sub(1);
        if self.has_value {
            self.newline(writer)?;
        }
        writer.write_all(close)
    }

    fn item<W: ?Sized + io::Write>(&mut self, writer: &mut W, first: bool) -> io::Result<()> {
        if !first {
            writer.write_all(self.style.item_separator.as_bytes())?;
        }
        self.newline(writer)
    }
}

impl Formatter for PyFormatter<'_> {
    fn write_f64<W: ?Sized + io::Write>(&mut self, writer: &mut W, value: f64) -> io::Result<()> {
        writer.write_all(python_float(value).as_bytes())
    }

    fn write_f32<W: ?Sized + io::Write>(&mut self, writer: &mut W, value: f32) -> io::Result<()> {
        self.write_f64(writer, f64::from(value))
    }

    fn write_string_fragment<W: ?Sized + io::Write>(
        &mut self,
        writer: &mut W,
        fragment: &str,
    ) -> io::Result<()> {
        if !self.style.ensure_ascii {
            return writer.write_all(fragment.as_bytes());
        }
        for ch in fragment.chars() {
            if (' '..='~').contains(&ch) {
                writer.write_all(&[ch as u8])?;
            } else {
                let mut units = [0u16; 2];
                for unit in ch.encode_utf16(&mut units) {
                    write!(writer, "\\u{unit:04x}")?;
                }
            }
        }
        Ok(())
    }

    fn begin_array<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.begin(writer, b"[")
    }

    fn end_array<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.end(writer, b"]")
    }

    fn begin_array_value<W: ?Sized + io::Write>(&mut self, writer: &mut W, first: bool) -> io::Result<()> {
        self.item(writer, first)
    }

    fn end_array_value<W: ?Sized + io::Write>(&mut self, _writer: &mut W) -> io::Result<()> {
        self.has_value = true;
        Ok(())
    }

    fn begin_object<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.begin(writer, b"{")
    }

    fn end_object<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.end(writer, b"}")
    }

    fn begin_object_key<W: ?Sized + io::Write>(&mut self, writer: &mut W, first: bool) -> io::Result<()> {
        self.item(writer, first)
    }

    fn begin_object_value<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        writer.write_all(self.style.key_separator.as_bytes())
    }

    fn end_object_value<W: ?Sized + io::Write>(&mut self, _writer: &mut W) -> io::Result<()> {
        self.has_value = true;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn py(value: &serde_json::Value, style: &JsonStyle) -> String {
        dumps(value, style).unwrap()
    }

    #[test]
    fn default_style_is_python_json_dumps() {
        let value = json!({"a": "<tag> & 'quote' é \"x\"\n", "b": [1, 2.5, null, true]});
        assert_eq!(
            py(&value, &JsonStyle::default()),
            r#"{"a": "<tag> & 'quote' é \"x\"\n", "b": [1, 2.5, null, true]}"#
        );
    }

    #[test]
    fn indent_uses_comma_newline_and_keeps_empty_containers_short() {
        let style =
            JsonStyle { indent: Some("  ".into()), item_separator: ",".into(), ..JsonStyle::default() };
        let value = json!({"a": [1, []], "b": {}});
        assert_eq!(py(&value, &style), "{\n  \"a\": [\n    1,\n    []\n  ],\n  \"b\": {}\n}");
    }

    #[test]
    fn ensure_ascii_escapes_like_python() {
        let style = JsonStyle { ensure_ascii: true, ..JsonStyle::default() };
        assert_eq!(py(&json!("é😀\u{7f}\t"), &style), r#""\u00e9\ud83d\ude00\u007f\t""#);
    }

    #[test]
    fn floats_are_spelled_as_python_repr() {
        let cases = [
            (1.0, "1.0"),
            (2.5, "2.5"),
            (1e16, "1e+16"),
            (1.5e16, "1.5e+16"),
            (1e15, "1000000000000000.0"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (-1.5e-7, "-1.5e-07"),
            (-0.0, "-0.0"),
            (1e300, "1e+300"),
        ];
        for (value, text) in cases {
            assert_eq!(python_float(value), text, "{value}");
        }
    }
}
