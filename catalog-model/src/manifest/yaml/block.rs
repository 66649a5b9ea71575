//! Block mappings, block sequences and the values of their entries.

use super::scalar::{Plain, classify, push_escaped};
use super::{Next, Transcoder};

/// The longest implicit key YAML allows.
const MAX_KEY: usize = 1024;

impl Transcoder<'_> {
    /// A block mapping whose entries sit at `indent`, its first key at `key_at` (which may
    /// be inside a line, after `- `).
    pub(super) fn map(&mut self, indent: usize, mut key_at: usize) -> Option<()> {
        self.enter()?;
        self.out.push('{');
        // Where the previous key's text is in `out`, to see whether keys increase.
        let mut previous: Option<(usize, usize)> = None;
        loop {
            let start = self.out.len();
            self.key(key_at)?;
            // The key as written, without its quotes and `:`; escapes compare differently
            // from the text they stand for, so a key with one counts as out of order.
            let key = (start + 1, self.out.len() - 2);
            let text = &self.out.as_bytes()[key.0..key.1];
            if text.contains(&b'\\')
                || previous.is_some_and(|(a, b)| self.out.as_bytes()[a..b] >= *text)
            {
                self.keys_sorted = false;
            }
            previous = Some(key);
            self.value(indent, true)?;
            match self.peek()? {
                Next::Line(i) if i == indent => {
                    let at = self.pos + i;
                    // An entry after a complete value cannot start a sequence.
                    if self.is_dash(at) {
                        return None;
                    }
                    self.out.push(',');
                    key_at = at;
                }
                Next::Line(i) if i > indent => return None,
                _ => break,
            }
        }
        self.out.push('}');
        self.depth -= 1;
        Some(())
    }

    /// A block sequence whose `-` sit at `indent`, the first one at `dash_at`.
    fn seq(&mut self, indent: usize, mut dash_at: usize) -> Option<()> {
        self.enter()?;
        self.out.push('[');
        loop {
            self.pos = dash_at + 1;
            self.value(indent, false)?;
            match self.peek()? {
                Next::Line(i) if i == indent && self.is_dash(self.pos + i) => {
                    self.out.push(',');
                    dash_at = self.pos + i;
                }
                Next::Line(i) if i > indent => return None,
                // A key at the same indent belongs to the parent mapping.
                _ => break,
            }
        }
        self.out.push(']');
        self.depth -= 1;
        Some(())
    }

    /// Opens one more level of nesting, or declines past [`super::MAX_DEPTH`].
    fn enter(&mut self) -> Option<()> {
        self.depth += 1;
        (self.depth <= super::MAX_DEPTH).then_some(())
    }

    /// Writes the key at `at` and its `:`; leaves the cursor after the `:`.
    fn key(&mut self, at: usize) -> Option<()> {
        match self.src[at] {
            b'"' | b'\'' => {
                let end = self.quoted(at, None)?;
                if self.src.get(end) != Some(&b':')
                    || !(self.at_eol(end + 1) || self.src[end + 1] == b' ')
                {
                    return None;
                }
                self.pos = end + 1;
            }
            _ => {
                if !plain_start(self.src, at) {
                    return None;
                }
                let colon = self.key_colon(at)?;
                let key = &self.text[at..colon];
                // `<<` is a merge key to serde-saphyr; a key that resolves to another type
                // (`true`, `1`, `null`) is not read as the string it looks like.
                if key.len() > MAX_KEY
                    || key.ends_with(' ')
                    || key == "<<"
                    || classify(key) != Plain::Str
                {
                    return None;
                }
                self.out.push('"');
                push_escaped(&mut self.out, key);
                self.out.push('"');
                self.pos = colon + 1;
            }
        }
        self.out.push(':');
        Some(())
    }

    /// The `:` that ends an implicit key starting at `at` on this line; `None` when the line
    /// has none before its end or a comment.
    pub(super) fn key_colon(&self, at: usize) -> Option<usize> {
        let mut i = at;
        while i < self.src.len() {
            match self.src[i] {
                b'\n' => return None,
                b':' if self.at_eol(i + 1) || self.src[i + 1] == b' ' => return Some(i),
                b'#' if i > at && self.src[i - 1] == b' ' => return None,
                _ => {}
            }
            i += 1;
        }
        None
    }

    /// The value after a key's `:` (`in_map`) or a sequence's `-`; the cursor is right after
    /// that indicator, and ends at the start of the line after the value.
    fn value(&mut self, parent: usize, in_map: bool) -> Option<()> {
        let at = self.pos + self.spaces(self.pos);
        if self.at_eol(at) {
            self.pos = self.next_line(at);
            return self.block_value(parent, in_map);
        }
        match self.src[at] {
            b'|' => self.literal(at, parent, in_map),
            b'"' | b'\'' => {
                let end = self.quoted(at, Some(parent))?;
                self.end_of_line(end)
            }
            open @ (b'[' | b'{') => {
                let close = if open == b'[' { b']' } else { b'}' };
                if self.src.get(at + 1) != Some(&close) {
                    return None;
                }
                self.out.push(open as char);
                self.out.push(close as char);
                self.end_of_line(at + 2)
            }
            b'-' if self.is_dash(at) => {
                if in_map {
                    return None;
                }
                self.seq(self.column(at), at)
            }
            _ => {
                if !in_map && plain_start(self.src, at) && self.key_colon(at).is_some() {
                    return self.map(self.column(at), at);
                }
                self.plain(at, parent)
            }
        }
    }

    /// A value on the lines below its key or `-`: a nested block, a sequence at the key's
    /// own indent, or nothing (null).
    fn block_value(&mut self, parent: usize, in_map: bool) -> Option<()> {
        match self.peek()? {
            Next::Line(i) if i > parent => {
                let at = self.pos + i;
                if self.is_dash(at) {
                    self.seq(i, at)
                } else {
                    self.map(i, at)
                }
            }
            Next::Line(i) if i == parent && in_map && self.is_dash(self.pos + i) => {
                self.seq(i, self.pos + i)
            }
            _ => {
                self.out.push_str("null");
                Some(())
            }
        }
    }
}

/// Whether a plain scalar may start at `at`: not an indicator (`-` only before a non-space;
/// `?` and `:` before a non-space are legal YAML but left to serde-saphyr).
pub(super) fn plain_start(src: &[u8], at: usize) -> bool {
    match src[at] {
        b'-' => src.get(at + 1).is_some_and(|&b| b != b' ' && b != b'\n'),
        b'?' | b':' | b',' | b'[' | b']' | b'{' | b'}' | b'#' | b'&' | b'*' | b'!' | b'|'
        | b'>' | b'\'' | b'"' | b'%' | b'@' | b'`' | b' ' | b'\n' => false,
        _ => true,
    }
}
