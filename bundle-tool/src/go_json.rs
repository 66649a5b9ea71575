//! JSON text as Go writes it, which opm's output is made of: `serde_json`'s string escapes
//! (quotes, backslashes, control characters), Go's HTML-safe escapes in compact JSON, and
//! numbers re-encoded as Go's `unstructured` objects do. The catalog writers, the YAML
//! transcoder and the registry server all write such text; this is its one home.

use serde_json::{Value, json};

/// Appends `s` as the inside of a JSON string (no quotes), exactly as `serde_json` escapes it.
pub fn push_escaped(out: &mut String, s: &str) {
    let bytes = s.as_bytes();
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        // Eight bytes at a time while none needs escaping: long descriptions are most of a
        // catalog's text, and a byte-by-byte test was a tenth of a corpus render.
        if let Some(chunk) = bytes.get(i..i + 8) {
            let word = u64::from_le_bytes(chunk.try_into().unwrap_or([0; 8]));
            if !needs_escape(word) {
                i += 8;
                continue;
            }
        }
        let b = bytes[i];
        if b == b'"' || b == b'\\' || b < 0x20 {
            out.push_str(&s[start..i]);
            push_escaped_byte(out, b);
            start = i + 1;
        }
        i += 1;
    }
    out.push_str(&s[start..]);
}

/// Whether any of the eight bytes of `word` is `"`, `\` or below 0x20 (may say yes for a
/// byte that is not, never no for one that is).
fn needs_escape(word: u64) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let below = |w: u64, n: u64| w.wrapping_sub(ONES * n) & !w & HIGH;
    let zero = |w: u64| w.wrapping_sub(ONES) & !w & HIGH;
    (below(word, 0x20) | zero(word ^ (ONES * b'"' as u64)) | zero(word ^ (ONES * b'\\' as u64)))
        != 0
}

/// Appends one byte that needs escaping (`"`, `\` or a control character).
pub fn push_escaped_byte(out: &mut String, b: u8) {
    match b {
        b'"' => out.push_str("\\\""),
        b'\\' => out.push_str("\\\\"),
        b'\n' => out.push_str("\\n"),
        b'\t' => out.push_str("\\t"),
        b'\r' => out.push_str("\\r"),
        0x08 => out.push_str("\\b"),
        0x0c => out.push_str("\\f"),
        _ => {
            const HEX: &[u8; 16] = b"0123456789abcdef";
            out.push_str("\\u00");
            out.push(HEX[(b >> 4) as usize] as char);
            out.push(HEX[(b & 15) as usize] as char);
        }
    }
}

/// Numbers as Go's `unstructured` objects re-encode them: whole floats become integers.
pub fn go_numbers(value: Value) -> Value {
    match value {
        Value::Number(n) if n.is_f64() => {
            let f = n.as_f64().unwrap_or_default();
            if f.fract() == 0.0 && f.abs() < 1e15 {
                json!(f as i64)
            } else {
                Value::Number(n)
            }
        }
        Value::Array(items) => Value::Array(items.into_iter().map(go_numbers).collect()),
        Value::Object(map) => {
            Value::Object(map.into_iter().map(|(k, v)| (k, go_numbers(v))).collect())
        }
        other => other,
    }
}

/// Compact JSON as Go's encoder writes it: sorted keys, `<`, `>`, `&` escaped.
pub fn go_json(value: &Value) -> String {
    serde_json::to_string(value)
        .unwrap_or_default()
        .replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026")
        .replace('\u{2028}', "\\u2028")
        .replace('\u{2029}', "\\u2029")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_as_serde_json_and_go_do() {
        for text in [
            "plain",
            "a\"b\\c\u{1}\n",
            "long text without escapes, twice over",
        ] {
            let mut out = String::new();
            push_escaped(&mut out, text);
            assert_eq!(format!("\"{out}\""), serde_json::to_string(text).unwrap());
        }
        assert_eq!(
            go_json(&json!({"a": "<&>"})),
            r#"{"a":"\u003c\u0026\u003e"}"#
        );
        assert_eq!(go_numbers(json!([1.0, 1.5])), json!([1, 1.5]));
    }
}
