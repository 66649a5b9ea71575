//! Go's `%q` of a string (`strconv.Quote`), which opm's mermaid graphs and operator-controller's
//! preflight messages are written with; one implementation for both.

/// `text` in double quotes with Go's escapes: `\"`, `\\`, the C escapes (`\a \b \f \n \r \t
/// \v`), `\xHH` for other ASCII controls, `\uHHHH` for other non-printable characters.
pub fn go_quote(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c if c.is_control() => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::go_quote;

    #[test]
    fn escapes_as_go_strconv_quote() {
        // Expected values as Go 1.26 prints them with fmt.Sprintf("%q", …).
        assert_eq!(go_quote("stable"), "\"stable\"");
        assert_eq!(go_quote("a\"b\\c"), "\"a\\\"b\\\\c\"");
        assert_eq!(go_quote("x\ny\r\t"), "\"x\\ny\\r\\t\"");
        assert_eq!(go_quote("\u{1}\u{7f}"), "\"\\x01\\x7f\"");
        assert_eq!(go_quote("\u{85}é"), "\"\\u0085é\"");
    }
}
