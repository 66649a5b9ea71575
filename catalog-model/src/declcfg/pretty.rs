//! Bundle documents written as opm's pretty JSON without serde's round trip.
//!
//! Bundles are nearly all of a catalog's bytes, and most of those bytes are property values
//! kept as compact JSON text. Written through serde, every value is parsed again and every
//! string unescaped and escaped again. This writer copies the value text instead, adding
//! only line breaks and indentation; a string with an escape is decoded and escaped again
//! (serde's escapes are not always the source's), and a value with a number other than a
//! plain integer goes through serde (which re-formats such numbers) and is indented after. The result is byte for byte what
//! `serde_json`'s pretty printer (4-space indent) writes for the derived `Serialize` of
//! [`Bundle`]; the unit tests compare the two.

use std::io;

use super::{Bundle, RawJson};

const INDENT: &[u8] = b"    ";

fn newline(out: &mut Vec<u8>, depth: usize) {
    out.push(b'\n');
    for _ in 0..depth {
        out.extend_from_slice(INDENT);
    }
}

/// A JSON string of `text`, escaped as `serde_json` escapes it.
fn string(out: &mut Vec<u8>, text: &str) {
    let mut escaped = String::with_capacity(text.len() + 2);
    escaped.push('"');
    crate::go_json::push_escaped(&mut escaped, text);
    escaped.push('"');
    out.extend_from_slice(escaped.as_bytes());
}

/// The index of the quote that ends the string whose opening quote is at `open`, and
/// whether the string holds an escape.
fn string_end(text: &[u8], open: usize) -> (usize, bool) {
    let mut escaped = false;
    let mut i = open + 1;
    while i < text.len() {
        match text[i] {
            b'"' => return (i, escaped),
            b'\\' => {
                escaped = true;
                i += 2;
            }
            _ => i += 1,
        }
    }
    (text.len(), escaped)
}

/// Whether every number in `text` is one serde writes as it is read: a plain integer of at
/// most 18 digits other than `-0` (serde writes `1e3` as `1000.0`).
pub fn numbers_are_plain(text: &[u8]) -> bool {
    let mut i = 0;
    while i < text.len() {
        match text[i] {
            b'"' => i = string_end(text, i).0,
            b'-' | b'0'..=b'9' => {
                let start = i;
                i += 1;
                while i < text.len() && text[i].is_ascii_digit() {
                    i += 1;
                }
                let number = &text[start..i];
                let digits = number.strip_prefix(b"-").unwrap_or(number);
                if digits.is_empty()
                    || digits.len() > 18
                    || number == b"-0"
                    || (digits.len() > 1 && digits[0] == b'0')
                    || matches!(text.get(i), Some(b'.' | b'e' | b'E'))
                {
                    return false;
                }
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    true
}

/// Writes a compact JSON value pretty at nesting `depth`.
fn value(out: &mut Vec<u8>, raw: &RawJson, depth: usize) -> io::Result<()> {
    let text = raw.as_str().as_bytes();
    if !numbers_are_plain(text) {
        // Through serde at depth 0, then indented: strings hold no raw line break.
        let formatter = serde_json::ser::PrettyFormatter::with_indent(INDENT);
        let mut written = Vec::with_capacity(text.len() * 2);
        let mut serializer = serde_json::Serializer::with_formatter(&mut written, formatter);
        serde::Serialize::serialize(raw, &mut serializer)?;
        for &b in &written {
            if b == b'\n' {
                newline(out, depth);
            } else {
                out.push(b);
            }
        }
        return Ok(());
    }
    let mut depth = depth;
    let mut i = 0;
    while i < text.len() {
        match text[i] {
            open @ (b'{' | b'[') => {
                let close = if open == b'{' { b'}' } else { b']' };
                out.push(open);
                if text.get(i + 1) == Some(&close) {
                    out.push(close);
                    i += 2;
                    continue;
                }
                depth += 1;
                newline(out, depth);
            }
            close @ (b'}' | b']') => {
                depth -= 1;
                newline(out, depth);
                out.push(close);
            }
            b',' => {
                out.push(b',');
                newline(out, depth);
            }
            b':' => out.extend_from_slice(b": "),
            b'"' => {
                let (end, escaped) = string_end(text, i);
                let token = &text[i..=end.min(text.len() - 1)];
                if escaped {
                    // Escapes are written the way serde writes them (`\u00e9` becomes `é`).
                    let decoded: String = serde_json::from_slice(token)?;
                    string(out, &decoded);
                } else {
                    out.extend_from_slice(token);
                }
                i = end;
            }
            other => out.push(other),
        }
        i += 1;
    }
    Ok(())
}

/// Writes the key of a field at `depth`, after a comma unless it is the first.
fn field(out: &mut Vec<u8>, first: bool, depth: usize, name: &str) {
    if !first {
        out.push(b',');
    }
    newline(out, depth);
    out.push(b'"');
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(b"\": ");
}

/// Writes a field holding an array of objects (the bundle's properties or related images),
/// each object's fields written by `fields` at depth 3.
fn object_array<T>(
    out: &mut Vec<u8>,
    name: &str,
    items: &[T],
    fields: impl Fn(&mut Vec<u8>, &T) -> io::Result<()>,
) -> io::Result<()> {
    field(out, false, 1, name);
    out.push(b'[');
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        newline(out, 2);
        out.push(b'{');
        fields(out, item)?;
        newline(out, 2);
        out.push(b'}');
    }
    newline(out, 1);
    out.push(b']');
    Ok(())
}

/// One bundle document as `serde_json` writes its derived `Serialize` with 4-space indents
/// (no trailing line break).
pub(super) fn write_bundle(bundle: &Bundle, out: &mut Vec<u8>) -> io::Result<()> {
    out.push(b'{');
    field(out, true, 1, "schema");
    string(out, &bundle.schema);
    field(out, false, 1, "name");
    string(out, &bundle.name);
    field(out, false, 1, "package");
    string(out, &bundle.package);
    field(out, false, 1, "image");
    string(out, &bundle.image);
    if !bundle.properties.is_empty() {
        object_array(out, "properties", &bundle.properties, |out, property| {
            field(out, true, 3, "type");
            string(out, &property.type_);
            field(out, false, 3, "value");
            value(out, &property.value, 3)
        })?;
    }
    if !bundle.related_images.is_empty() {
        object_array(
            out,
            "relatedImages",
            &bundle.related_images,
            |out, related| {
                field(out, true, 3, "name");
                string(out, &related.name);
                field(out, false, 3, "image");
                string(out, &related.image);
                Ok(())
            },
        )?;
    }
    newline(out, 0);
    out.push(b'}');
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::declcfg::{Property, RelatedImage};

    fn through_serde(bundle: &Bundle) -> String {
        let formatter = serde_json::ser::PrettyFormatter::with_indent(INDENT);
        let mut out = Vec::new();
        let mut serializer = serde_json::Serializer::with_formatter(&mut out, formatter);
        serde::Serialize::serialize(bundle, &mut serializer).unwrap();
        String::from_utf8(out).unwrap()
    }

    fn direct(bundle: &Bundle) -> String {
        let mut out = Vec::new();
        write_bundle(bundle, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn writes_what_serde_writes() {
        let values = [
            r#"{"group":"g","kind":"K","version":"v1"}"#,
            r#"{"a":{},"b":[],"c":[{}],"d":[[]],"e":{"f":{"g":[1,2,{"h":null}]}}}"#,
            r#"[1,-2,0,true,false,null,"x"]"#,
            r#"{"n":1.5,"m":1e3,"o":-0,"p":12345678901234567890}"#,
            r#"{"s":"caf\u00e9 \"quoted\" \\ tab\t"}"#,
            r#"{"u":"naïve ✓ <a href=\"x\">&amp;</a>"}"#,
            r#""just a string""#,
            "42",
            "null",
            r#"{"k:ey,with[brackets]{":"v:al,ue]}"}"#,
        ];
        for value in values {
            let raw = RawJson::from_json(value).unwrap();
            for (properties, related) in [
                (vec![], vec![]),
                (
                    vec![
                        Property {
                            type_: "olm.gvk".into(),
                            value: raw.clone(),
                        },
                        Property {
                            type_: "custom \"type\"".to_string().into(),
                            value: raw.clone(),
                        },
                    ],
                    vec![
                        RelatedImage {
                            name: String::new(),
                            image: "quay.io/x/y@sha256:abc".into(),
                        },
                        RelatedImage {
                            name: "op\u{1}".into(),
                            image: "i".into(),
                        },
                    ],
                ),
            ] {
                let bundle = Bundle {
                    schema: "olm.bundle".into(),
                    name: "b.v1\n".into(),
                    package: "p".into(),
                    image: String::new(),
                    properties,
                    related_images: related,
                };
                assert_eq!(direct(&bundle), through_serde(&bundle), "{value}");
            }
        }
    }
}
