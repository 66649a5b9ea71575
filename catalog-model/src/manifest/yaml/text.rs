//! Scalar text: plain scalars folded over lines, quoted scalars, literal block scalars.

use super::Transcoder;
use super::block::plain_start;
use super::scalar::{Plain, classify, decode_escape, push_char, push_escaped};

/// What a literal block scalar does with its final line breaks.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Chomp {
    Clip,
    Strip,
    Keep,
}

impl Transcoder<'_> {
    /// The end (trailing spaces trimmed) of the plain text starting at `at` on its line;
    /// `None` when the line holds `: ` or ` #`, which would make it a key or a comment.
    fn plain_line(&self, at: usize) -> Option<usize> {
        let end = self.line_end(at);
        let line = &self.src[at..end];
        for (i, &b) in line.iter().enumerate() {
            match b {
                b':' if line.get(i + 1).is_none_or(|&n| n == b' ') => return None,
                b'#' if i > 0 && line[i - 1] == b' ' => return None,
                _ => {}
            }
        }
        let trimmed = line.iter().rposition(|&b| b != b' ').map_or(0, |i| i + 1);
        Some(at + trimmed)
    }

    /// A plain scalar starting at `at`, continued on following lines indented more than
    /// `parent` (joined by a space, or by one newline per blank line between them).
    pub(super) fn plain(&mut self, at: usize, parent: usize) -> Option<()> {
        if !plain_start(self.src, at) {
            return None;
        }
        let end = self.plain_line(at)?;
        let mut next = self.next_line(end);
        let mut folded: Option<String> = None;
        loop {
            let mut p = next;
            let mut blanks = 0;
            while p < self.src.len() && self.at_eol(p + self.spaces(p)) {
                blanks += 1;
                p = self.next_line(p + self.spaces(p));
            }
            if p >= self.src.len() {
                break;
            }
            let indent = self.spaces(p);
            if indent <= parent {
                break;
            }
            let c = p + indent;
            // `- ` goes on the scalar (checked against serde-saphyr); other indicators are
            // left to it.
            if matches!(self.src[c], b'?' | b':' | b'#') {
                return None;
            }
            let c_end = self.plain_line(c)?;
            let f = folded.get_or_insert_with(|| self.text[at..end].to_string());
            if blanks == 0 {
                f.push(' ');
            } else {
                f.extend(std::iter::repeat_n('\n', blanks));
            }
            f.push_str(&self.text[c..c_end]);
            next = self.next_line(c_end);
        }
        self.pos = next;
        let value = folded.as_deref().unwrap_or(&self.text[at..end]);
        match classify(value) {
            Plain::Null => self.out.push_str("null"),
            Plain::Bool(true) => self.out.push_str("true"),
            Plain::Bool(false) => self.out.push_str("false"),
            Plain::Int => self.out.push_str(value),
            Plain::Str => {
                self.out.push('"');
                push_escaped(&mut self.out, value);
                self.out.push('"');
            }
            Plain::Decline => return None,
        }
        Some(())
    }

    /// A single- or double-quoted scalar opening at `at`, written as a JSON string; returns
    /// the position after its closing quote. Line breaks fold as YAML says (continuation
    /// lines indented more than `parent`); with no `parent` (a key) it must fit on its line.
    pub(super) fn quoted(&mut self, at: usize, parent: Option<usize>) -> Option<usize> {
        let double = self.src[at] == b'"';
        self.out.push('"');
        let mut p = at + 1;
        // Spaces are written only once something follows them on the line: before a line
        // break they are dropped.
        let mut spaces = 0usize;
        loop {
            let b = *self.src.get(p)?;
            if b != b' ' && b != b'\n' && spaces > 0 {
                self.out.extend(std::iter::repeat_n(' ', spaces));
                spaces = 0;
            }
            match b {
                b' ' => {
                    spaces += 1;
                    p += 1;
                }
                b'\n' => {
                    spaces = 0;
                    p = self.fold(p + 1, parent?, false)?;
                }
                b'"' if double => {
                    p += 1;
                    break;
                }
                b'\'' if !double => {
                    if self.src.get(p + 1) == Some(&b'\'') {
                        self.out.push('\'');
                        p += 2;
                    } else {
                        p += 1;
                        break;
                    }
                }
                b'\\' if double => {
                    if self.at_eol(p + 1) {
                        p = self.fold(p + 2, parent?, true)?;
                    } else {
                        let (c, used) = decode_escape(&self.src[p + 1..])?;
                        push_char(&mut self.out, c);
                        p += 1 + used;
                    }
                }
                _ => {
                    // A run of ordinary text up to the next byte that needs a decision.
                    let run = self.src[p..]
                        .iter()
                        .position(|&b| matches!(b, b' ' | b'\n' | b'"' | b'\'' | b'\\'))
                        .map_or(self.src.len(), |i| p + i);
                    let run = run.max(p + 1);
                    push_escaped(&mut self.out, &self.text[p..run]);
                    p = run;
                }
            }
        }
        self.out.push('"');
        Some(p)
    }

    /// Folds a line break inside a quoted scalar: `p` is the start of the next line. Blank
    /// lines become newlines; otherwise the break is a space (nothing after a `\`). Returns
    /// where the continued text starts.
    fn fold(&mut self, mut p: usize, parent: usize, escaped: bool) -> Option<usize> {
        let mut blanks = 0;
        loop {
            if p >= self.src.len() {
                return None;
            }
            let indent = self.spaces(p);
            if !self.at_eol(p + indent) {
                if indent <= parent {
                    return None;
                }
                if blanks == 0 && !escaped {
                    self.out.push(' ');
                }
                self.out.extend(std::iter::repeat_n("\\n", blanks));
                return Some(p + indent);
            }
            blanks += 1;
            p = self.next_line(p + indent);
        }
    }

    /// A literal block scalar whose `|` is at `at`; `parent` is the indent of the mapping or
    /// sequence holding it.
    pub(super) fn literal(&mut self, at: usize, parent: usize, in_map: bool) -> Option<()> {
        let mut p = at + 1;
        let mut chomp = Chomp::Clip;
        let mut explicit = None;
        for _ in 0..2 {
            match self.src.get(p) {
                Some(b'-') if chomp == Chomp::Clip => chomp = Chomp::Strip,
                Some(b'+') if chomp == Chomp::Clip => chomp = Chomp::Keep,
                Some(&d @ b'1'..=b'9') if explicit.is_none() => {
                    explicit = Some((d - b'0') as usize)
                }
                _ => break,
            }
            p += 1;
        }
        p += self.spaces(p);
        if !self.at_eol(p) {
            return None;
        }
        let first = self.next_line(p);
        let indent = match explicit {
            // The indicator counts from the mapping's indent; for a sequence entry it is
            // relative to something else, and left to serde-saphyr.
            Some(m) if in_map => parent + m,
            Some(_) => return None,
            None => self.detect_indent(first, parent)?,
        };
        self.out.push('"');
        let mut p = first;
        let mut breaks = 0usize;
        let mut any = false;
        while p < self.src.len() {
            let spaces = self.spaces(p);
            let end = self.line_end(p);
            if p + spaces == end && spaces <= indent {
                breaks += 1;
                p = self.next_line(end);
                continue;
            }
            if spaces < indent {
                break;
            }
            if end == self.src.len() {
                // A last line without its line break: clipping would differ.
                return None;
            }
            self.out.extend(std::iter::repeat_n("\\n", breaks));
            push_escaped(&mut self.out, &self.text[p + indent..end]);
            breaks = 1;
            any = true;
            p = end + 1;
        }
        if !any || (chomp == Chomp::Keep && !self.text.ends_with('\n')) {
            return None;
        }
        match chomp {
            Chomp::Clip => self.out.push_str("\\n"),
            Chomp::Strip => {}
            Chomp::Keep => self.out.extend(std::iter::repeat_n("\\n", breaks)),
        }
        self.out.push('"');
        self.pos = p;
        Some(())
    }

    /// The content indent of a literal scalar without an indicator: that of its first
    /// non-blank line, which must be deeper than `parent` and than any blank line before it.
    fn detect_indent(&self, mut p: usize, parent: usize) -> Option<usize> {
        let mut widest_blank = 0;
        while p < self.src.len() {
            let spaces = self.spaces(p);
            if !self.at_eol(p + spaces) {
                return (spaces > parent && spaces >= widest_blank).then_some(spaces);
            }
            widest_blank = widest_blank.max(spaces);
            p = self.next_line(p + spaces);
        }
        None
    }
}
