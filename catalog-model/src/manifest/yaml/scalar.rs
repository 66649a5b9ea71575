//! Scalars of the fast YAML path: how a plain scalar is typed, and JSON string output.
//!
//! The typing reproduces what serde-saphyr does for a plain scalar read into a
//! `serde_json::Value` with the options of `manifest::stream` (YAML 1.1 booleans, legacy
//! octal): null, then booleans, then integers, then floats, else a string. Only the answers
//! that are certain without reimplementing its number parsers are given; everything else
//! (floats, signed or octal or hexadecimal numbers, `_` separators, `.inf`) is `Decline`,
//! which sends the whole file to serde-saphyr.

/// What a plain scalar is once resolved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Plain {
    Null,
    Bool(bool),
    /// An unsigned decimal integer without leading zeros, written as it is.
    Int,
    Str,
    /// Not certain: the caller gives up on the file.
    Decline,
}

/// Resolves a plain scalar (already folded and trimmed, never empty) the way serde-saphyr
/// does for an untyped value.
pub(super) fn classify(s: &str) -> Plain {
    match s {
        "~" | "null" | "Null" | "NULL" => return Plain::Null,
        _ => {}
    }
    // YAML 1.1 booleans, any case (serde-saphyr's default, like go-yaml v2).
    for (word, value) in [
        ("true", true),
        ("yes", true),
        ("y", true),
        ("on", true),
        ("false", false),
        ("no", false),
        ("n", false),
        ("off", false),
    ] {
        if s.eq_ignore_ascii_case(word) {
            return Plain::Bool(value);
        }
    }
    let bytes = s.as_bytes();
    match bytes[0] {
        // Neither integer nor float parsing accepts a leading letter (Rust's `inf`/`nan`
        // spellings are rejected as non-finite, then as not starting with a digit).
        b'a'..=b'z' | b'A'..=b'Z' => Plain::Str,
        b'0'..=b'9' => classify_digits(s),
        // `-5`, `-.5`, `-.inf`: numbers; `--flag`, `-x`: strings.
        b'-' => match bytes.get(1) {
            Some(b'0'..=b'9' | b'.') | None => Plain::Decline,
            Some(_) => Plain::Str,
        },
        // `.5`, `.inf`, `.NaN`: floats; `.status.phase`: a string.
        b'.' => match bytes.get(1) {
            Some(b'0'..=b'9') | None => Plain::Decline,
            _ if s.eq_ignore_ascii_case(".inf") || s.eq_ignore_ascii_case(".nan") => Plain::Decline,
            _ => Plain::Str,
        },
        b'+' => Plain::Decline,
        _ => Plain::Str,
    }
}

fn classify_digits(s: &str) -> Plain {
    let bytes = s.as_bytes();
    if bytes.iter().all(u8::is_ascii_digit) {
        // `0755` is octal for serde-saphyr here; `09` becomes a float.
        if bytes.len() > 1 && bytes[0] == b'0' {
            return Plain::Decline;
        }
        return if s.parse::<u64>().is_ok() {
            Plain::Int
        } else {
            // Too large for u64: serde-saphyr makes it a float.
            Plain::Decline
        };
    }
    // `1_000`, `0x1f`, `0o17`, `0b1`: integers in some radix.
    if bytes.contains(&b'_')
        || (bytes[0] == b'0' && bytes.get(1).is_some_and(u8::is_ascii_alphabetic))
    {
        return Plain::Decline;
    }
    // `1.0`, `1e3`, `1e999`: floats. What Rust's parser rejects is a string to serde-saphyr
    // too (its integer parsers accept only digits and `_` after a radix prefix).
    if s.parse::<f64>().is_ok() {
        return Plain::Decline;
    }
    Plain::Str
}

pub(super) use crate::go_json::push_escaped;
use crate::go_json::push_escaped_byte;

/// Appends one decoded character (from a YAML escape) to a JSON string.
pub(super) fn push_char(out: &mut String, c: char) {
    if c.is_ascii() {
        let b = c as u8;
        if b == b'"' || b == b'\\' || b < 0x20 {
            push_escaped_byte(out, b);
            return;
        }
    }
    out.push(c);
}

/// Decodes the escape after a `\` in a double-quoted scalar (`rest` starts after the
/// backslash, on the same line); returns the character and how many bytes it used.
pub(super) fn decode_escape(rest: &[u8]) -> Option<(char, usize)> {
    let simple = match *rest.first()? {
        b'0' => '\0',
        b'a' => '\u{7}',
        b'b' => '\u{8}',
        b't' => '\t',
        b'n' => '\n',
        b'v' => '\u{b}',
        b'f' => '\u{c}',
        b'r' => '\r',
        b'e' => '\u{1b}',
        b' ' => ' ',
        b'"' => '"',
        b'/' => '/',
        b'\\' => '\\',
        b'N' => '\u{85}',
        b'_' => '\u{a0}',
        b'L' => '\u{2028}',
        b'P' => '\u{2029}',
        b'x' => return hex_escape(rest, 2),
        b'u' => return hex_escape(rest, 4),
        b'U' => return hex_escape(rest, 8),
        _ => return None,
    };
    Some((simple, 1))
}

fn hex_escape(rest: &[u8], digits: usize) -> Option<(char, usize)> {
    let hex = rest.get(1..1 + digits)?;
    let mut code = 0u32;
    for &h in hex {
        code = code * 16 + (h as char).to_digit(16)?;
    }
    Some((char::from_u32(code)?, 1 + digits))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_eight_bytes_at_a_time_matches_byte_by_byte() {
        let naive = |s: &str| {
            let mut out = String::new();
            for c in s.chars() {
                push_char(&mut out, c);
            }
            out
        };
        let specials = ['"', '\\', '\n', '\u{1}', '\u{1f}', ' ', 'é', '~', '\u{7f}'];
        for length in 0..24 {
            for special in specials {
                for at in 0..length.max(1) {
                    let text: String = (0..length)
                        .map(|i| if i == at { special } else { 'a' })
                        .collect();
                    let mut fast = String::new();
                    push_escaped(&mut fast, &text);
                    assert_eq!(fast, naive(&text), "{text:?}");
                }
            }
        }
    }

    #[test]
    fn plain_typing_is_certain_or_declines() {
        for (text, want) in [
            ("abc", Plain::Str),
            ("1.2.3", Plain::Str),
            ("0.1.0", Plain::Str),
            ("3scale", Plain::Str),
            ("--flag", Plain::Str),
            ("12", Plain::Int),
            ("0", Plain::Int),
            ("010", Plain::Decline),
            ("1.0", Plain::Decline),
            ("1e3", Plain::Decline),
            (".5", Plain::Decline),
            ("-1", Plain::Decline),
            ("0x1f", Plain::Decline),
            ("1_000", Plain::Decline),
            ("99999999999999999999", Plain::Decline),
            ("Yes", Plain::Bool(true)),
            ("off", Plain::Bool(false)),
            ("~", Plain::Null),
            ("inf", Plain::Str),
            (".status.phase", Plain::Str),
            ("./bin/run", Plain::Str),
            (".Inf", Plain::Decline),
        ] {
            assert_eq!(classify(text), want, "{text}");
        }
    }

    #[test]
    fn escapes_decode_and_reencode() {
        assert_eq!(decode_escape(b"x41rest"), Some(('A', 3)));
        assert_eq!(decode_escape(b"u00e9"), Some(('é', 5)));
        assert_eq!(
            decode_escape(b"ud800"),
            None,
            "a lone surrogate is no character"
        );
        assert_eq!(decode_escape(b"q"), None);
        let mut out = String::new();
        push_escaped(&mut out, "a\"b\\c\u{1}");
        push_char(&mut out, '\u{1b}');
        assert_eq!(out, "a\\\"b\\\\c\\u0001\\u001b");
    }
}
