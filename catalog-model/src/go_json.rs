//! JSON text as Go writes it, which opm's output is made of: `serde_json`'s string escapes
//! (quotes, backslashes, control characters), Go's HTML-safe escapes in compact JSON, and
//! numbers re-encoded as Go's `unstructured` objects do. The catalog writers, the YAML
//! transcoder and the registry server all write such text; this is its one home. Two rules of
//! JSON *reading* live here too ([`lone_surrogates_replaced`], and
//! [`may_hold_a_number_out_of_range`] for the readers that skip numbers unread).

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

/// JSON text with every `\u` escape of a UTF-16 surrogate that is not half of a valid pair
/// written as `\ufffd`, the way Go's `encoding/json` (opm) decodes it: a lone surrogate is
/// U+FFFD there, while serde_json refuses the file ("unexpected end of hex escape"). opm
/// v1.73.0 validates and renders `"x\udaddy"` as `"x\u{fffd}y"`; every catalog JSON reader
/// takes its text through this first, so all of them see what opm sees. Text without a `\u`
/// is returned as it is, after one substring search.
pub fn lone_surrogates_replaced(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.contains("\\u") {
        return text.into();
    }
    let bytes = text.as_bytes();
    let unit = |at: usize| -> Option<u32> {
        let hex = bytes.get(at..at + 4)?;
        u32::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok()
    };
    let (mut out, mut copied, mut search) = (None::<String>, 0, 0);
    // Jumps from one `\u` to the next (a substring search, not a walk over every byte: a
    // catalog with Go's `\u003c` escapes is read whole).
    while let Some(found) = text[search..].find("\\u") {
        let i = search + found;
        // The backslash starts an escape only after an even run of backslashes (`\\u` is
        // an escaped backslash and a `u`).
        let run = bytes[..i].iter().rev().take_while(|&&b| b == b'\\').count();
        let Some(first) = unit(i + 2).filter(|_| run % 2 == 0) else {
            search = i + 2;
            continue;
        };
        if !(0xD800..0xE000).contains(&first) {
            search = i + 6;
            continue;
        }
        let low_follows = (0xD800..0xDC00).contains(&first)
            && bytes.get(i + 6..i + 8) == Some(b"\\u")
            && unit(i + 8).is_some_and(|low| (0xDC00..0xE000).contains(&low));
        if low_follows {
            search = i + 12;
            continue;
        }
        // A lone surrogate; an unpaired high one leaves the escape after it to be read alone.
        let out = out.get_or_insert_with(|| String::with_capacity(text.len()));
        out.push_str(&text[copied..i]);
        out.push_str("\\ufffd");
        search = i + 6;
        copied = search;
    }
    match out {
        None => text.into(),
        Some(mut out) => {
            out.push_str(&text[copied..]);
            out.into()
        }
    }
}

/// Whether `text` may hold a number too large for a 64-bit float (`1e400`, or 400 digits),
/// which the generic reader refuses ("number out of range", with the line) while serde skips
/// it unread in a field a typed reader ignores or keeps raw. The fast catalog readers give
/// such a file to the generic reader. `true` may be wrong (a string holding `: 9e999 `, or an
/// in-range `1e308`: the generic reader then takes the file as it would anyway); `false` is
/// never wrong. A number is out of range only when its digits before the point plus its
/// exponent reach 309, and only a token between JSON delimiters can be a number: that keeps
/// digests (`…4e999…`) from sending every bundle to the slow path.
///
/// opm v1.73.0 does neither: Go's decoder fails on such a number, its YAML-or-JSON reader
/// then reads the rest of the file as YAML, turning the number into a string and dropping
/// every later document of the file without an error (docs/conformance.md).
pub fn may_hold_a_number_out_of_range(text: &str) -> bool {
    let bytes = text.as_bytes();
    // A number in a document is followed by `,`, `}` or `]` (white space between): jumping
    // between those and looking back is 1.8–2.0 ms on the 17 MB of the corpus catalogs, against
    // 7.1 ms for looking at every digit (base64 and digests are full of digits) and 5.4 ms
    // for looking forward from every `:`, `,` and `[`.
    let mut at = 0;
    while let Some(found) = memchr::memchr3(b',', b'}', b']', &bytes[at..]) {
        let mut end = at + found;
        at = end + 1;
        while end > 0 && bytes[end - 1].is_ascii_whitespace() {
            end -= 1;
        }
        if end == 0 || !bytes[end - 1].is_ascii_digit() {
            continue;
        }
        let mut start = end;
        while start > 0
            && matches!(
                bytes[start - 1],
                b'0'..=b'9' | b'.' | b'e' | b'E' | b'+' | b'-'
            )
        {
            start -= 1;
        }
        let follows_a_delimiter = start == 0
            || matches!(bytes[start - 1], b':' | b',' | b'[')
            || bytes[start - 1].is_ascii_whitespace();
        if follows_a_delimiter && magnitude(&bytes[start..end]) >= 309 {
            return true;
        }
    }
    false
}

/// The decimal digits before the point of the number `token` plus its exponent, an upper
/// bound of its order of magnitude (0 for a negative exponent or what is not a number).
fn magnitude(token: &[u8]) -> usize {
    let token = token.strip_prefix(b"-").unwrap_or(token);
    if !token.first().is_some_and(u8::is_ascii_digit) {
        return 0;
    }
    let (mantissa, exponent) = match token.iter().position(|b| b | 0x20 == b'e') {
        Some(e) => (&token[..e], &token[e + 1..]),
        None => (token, &b""[..]),
    };
    // The fraction's digits counted too: that only errs high.
    let digits = mantissa.len();
    if exponent.first() == Some(&b'-') {
        return 0;
    }
    let exponent = exponent.strip_prefix(b"+").unwrap_or(exponent);
    let value = exponent
        .iter()
        .take_while(|b| b.is_ascii_digit())
        .fold(0usize, |v, d| (v * 10 + usize::from(d - b'0')).min(1 << 20));
    digits + value
}

#[cfg(test)]
mod tests {

    #[test]
    fn numbers_past_a_float_are_found_and_digests_are_not() {
        use super::may_hold_a_number_out_of_range as may;
        for text in [
            r#"{"a":5e3933}"#,
            r#"{"a": -2E+308 }"#,
            r#"{"a":[1,0.5e309]}"#,
            &format!(r#"{{"a":{}}}"#, "9".repeat(309)),
            &format!(r#"{{"a":{}e10}}"#, "9".repeat(300)),
            "{\"a\":\n  [\n\t9e999\n]}",
        ] {
            assert!(may(text), "{text}");
        }
        for text in [
            r#"{"a":1e307,"b":-5e-999,"c":123.456e200}"#,
            r#"{"image":"quay.io/x@sha256:1e999a4e3089bf00"}"#,
            r#"{"a":"sha256:4e999"}"#,
            r#"{"a":"x,4e999y"}"#,
            &format!(r#"{{"a":{}}}"#, "9".repeat(308)),
        ] {
            assert!(!may(text), "{text}");
        }
        // What it finds, the generic reader refuses; what it passes, serde reads.
        assert!(serde_json::from_str::<serde_json::Value>(r#"{"a":5e3933}"#).is_err());
        assert!(serde_json::from_str::<serde_json::Value>(r#"{"a":1e307}"#).is_ok());
    }

    #[test]
    fn lone_surrogates_become_the_replacement_character_as_in_go() {
        use super::lone_surrogates_replaced as replaced;
        assert!(matches!(
            replaced(r#"{"a":"plain \n"}"#),
            std::borrow::Cow::Borrowed(_)
        ));
        // A valid pair stays; a lone high, a lone low, a high before a non-low escape, and a
        // high at the end are replaced; an escaped backslash before "udadd" is no escape.
        for (text, expected) in [
            (r#""\ud83d\ude00""#, r#""\ud83d\ude00""#),
            (r#""x\udaddy""#, r#""x\ufffdy""#),
            (r#""\udc00""#, r#""\ufffd""#),
            (r#""\ud83d\u0041""#, r#""\ufffd\u0041""#),
            (r#""\ud83d\ud83d\ude00""#, r#""\ufffd\ud83d\ude00""#),
            (r#""\ud83d""#, r#""\ufffd""#),
            (r#""\\udadd""#, r#""\\udadd""#),
            (r#""\\\udadd""#, r#""\\\ufffd""#),
            (r#""é\udadd€""#, r#""é\ufffd€""#),
        ] {
            assert_eq!(replaced(text), expected, "{text}");
            let value: serde_json::Value = serde_json::from_str(&replaced(text)).expect(text);
            assert!(value.is_string());
        }
        assert_eq!(
            serde_json::from_str::<String>(&replaced(r#""x\udaddy""#)).unwrap(),
            "x\u{fffd}y"
        );
    }
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
