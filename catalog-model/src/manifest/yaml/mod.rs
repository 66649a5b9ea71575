//! A fast, strict YAML → JSON transcoder for the YAML that opm and go-yaml write.
//!
//! serde-saphyr builds parser events and `serde_json::Value`s; on machine-written catalogs
//! that is most of a load. This module reads the subset those writers use — block mappings
//! and sequences (a sequence may sit at its parent key's indent), plain scalars (folded over
//! lines), single- and double-quoted scalars, literal block scalars, `---` separators, empty
//! `[]`/`{}` — straight from the bytes and writes one JSON object per document, which the
//! typed JSON path then reads.
//!
//! It is all or nothing per file: on anything outside the subset (anchors, aliases, tags,
//! flow collections, folded `>` scalars, comments after a value, tabs, a root that is not a mapping, a
//! plain scalar whose type is not certain, an error) it returns `None` and the caller uses
//! serde-saphyr, so values, errors and their lines stay serde-saphyr's. The value of every
//! document it does produce equals what serde-saphyr produces for the same text (the
//! `yaml_fast_differential` test checks every corpus file).

mod block;
mod scalar;
#[cfg(test)]
mod tests;
mod text;

/// Transcodes a YAML stream into a JSON stream: one JSON object per non-empty document,
/// each followed by a newline. `None` when the text uses anything outside the subset this
/// module reads with certainty; the caller then parses it with serde-saphyr.
pub fn to_json(text: &str) -> Option<String> {
    to_ordered_json(text).map(|(json, _)| json)
}

/// [`to_json`], and whether the keys of every mapping in the text strictly increase (as
/// opm writes them), which spares its readers checking that again.
pub fn to_ordered_json(text: &str) -> Option<(String, bool)> {
    if !bytes_ok(text.as_bytes()) {
        return None;
    }
    let mut t = Transcoder {
        text,
        src: text.as_bytes(),
        pos: 0,
        out: String::with_capacity(text.len() + text.len() / 8),
        depth: 0,
        keys_sorted: true,
    };
    loop {
        match t.peek()? {
            Next::Eof => break,
            Next::Marker => t.pos = t.next_line(t.pos),
            Next::Line(0) => {
                // A root that is not a mapping (a scalar, a sequence) is left to serde-saphyr.
                if t.is_dash(t.pos) {
                    return None;
                }
                t.map(0, t.pos)?;
                t.out.push('\n');
            }
            Next::Line(_) => return None,
        }
    }
    Some((t.out, t.keys_sorted))
}

/// Bytes this module never reads: control characters (tabs and CR included), DEL, C1
/// controls (NEL among them), byte-order marks, U+2028/U+2029 and U+FFFE/U+FFFF — YAML
/// treats some as breaks or errors, and machine-written catalogs have none.
fn bytes_ok(src: &[u8]) -> bool {
    let mut i = 0;
    while i < src.len() {
        let b = src[i];
        if b < 0x20 {
            if b != b'\n' {
                return false;
            }
        } else if b == 0x7f {
            return false;
        } else if b >= 0x80 {
            let next = src.get(i + 1).copied().unwrap_or(0);
            let third = src.get(i + 2).copied().unwrap_or(0);
            let bad = match b {
                0xc2 => (0x80..=0x9f).contains(&next),
                0xe2 => next == 0x80 && (third == 0xa8 || third == 0xa9),
                0xef => (next == 0xbb && third == 0xbf) || (next == 0xbf && third >= 0xbe),
                _ => false,
            };
            if bad {
                return false;
            }
        }
        i += 1;
    }
    true
}

/// What the next non-blank line is.
enum Next {
    Eof,
    /// A `---` line.
    Marker,
    /// A content line with this many leading spaces (`pos` is at its start).
    Line(usize),
}

/// The transcoder's state: the input, a cursor (always at the start of a line between
/// nodes), and the JSON written so far.
struct Transcoder<'a> {
    text: &'a str,
    src: &'a [u8],
    pos: usize,
    out: String,
    /// How many mappings and sequences are open: deep nesting is left to serde-saphyr
    /// rather than risking the stack.
    depth: usize,
    /// Whether every mapping so far had strictly increasing keys.
    keys_sorted: bool,
}

/// The deepest nesting the transcoder follows (serde-saphyr itself stops at 64 levels).
const MAX_DEPTH: usize = 60;

impl Transcoder<'_> {
    /// The index of the `\n` ending the line that contains `from`, or the text's length.
    fn line_end(&self, from: usize) -> usize {
        self.src[from..]
            .iter()
            .position(|&b| b == b'\n')
            .map_or(self.src.len(), |i| from + i)
    }

    /// The start of the line after the one containing `from`.
    fn next_line(&self, from: usize) -> usize {
        (self.line_end(from) + 1).min(self.src.len())
    }

    fn spaces(&self, from: usize) -> usize {
        self.src[from..].iter().take_while(|&&b| b == b' ').count()
    }

    fn at_eol(&self, at: usize) -> bool {
        self.src.get(at).is_none_or(|&b| b == b'\n')
    }

    /// A `-` that starts a sequence entry.
    fn is_dash(&self, at: usize) -> bool {
        self.src.get(at) == Some(&b'-') && (self.at_eol(at + 1) || self.src[at + 1] == b' ')
    }

    /// The column of `at` in its line.
    fn column(&self, at: usize) -> usize {
        at - self.src[..at]
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |i| i + 1)
    }

    /// Skips blank and comment lines and reports the next one; `None` (decline) on a `...`
    /// end marker or a directive, which only serde-saphyr reads.
    fn peek(&mut self) -> Option<Next> {
        loop {
            if self.pos >= self.src.len() {
                return Some(Next::Eof);
            }
            let indent = self.spaces(self.pos);
            let at = self.pos + indent;
            // Blank lines and whole-line comments between nodes say nothing.
            if self.at_eol(at) || self.src[at] == b'#' {
                self.pos = self.next_line(at);
                continue;
            }
            let rest = &self.src[at..];
            if indent == 0 && rest.starts_with(b"---") {
                let tail = self.spaces(at + 3);
                return if self.at_eol(at + 3 + tail) {
                    Some(Next::Marker)
                } else {
                    None
                };
            }
            if (indent == 0 && rest.starts_with(b"...")) || rest[0] == b'%' {
                return None;
            }
            return Some(Next::Line(indent));
        }
    }

    /// Moves to the next line when only spaces are left on this one.
    fn end_of_line(&mut self, at: usize) -> Option<()> {
        let at = at + self.spaces(at);
        if !self.at_eol(at) {
            return None;
        }
        self.pos = self.next_line(at);
        Some(())
    }
}
