//! `Range` requests on `/api/v1/all`. catalogd serves the catalog file through Go's
//! `http.ServeContent`, so a client that resumes or samples a large catalog gets `206 Partial
//! Content`; this module decides the same answers from the same header (`bytes=` ranges,
//! `If-Range` by date, 416 with Go's messages). Several ranges at once, which Go answers as
//! `multipart/byteranges`, get the whole body instead (docs/conformance.md).

/// One satisfiable range: `length` bytes from `start`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ByteRange {
    /// The offset of the first byte.
    pub start: u64,
    /// How many bytes: none only for a `-0` suffix, which Go accepts too.
    pub length: u64,
}

impl ByteRange {
    /// The `Content-Range` value of a 206 answer.
    pub fn content_range(&self, size: u64) -> String {
        // Signed, as Go computes it: a `-0` suffix has no bytes and ends before it starts.
        let last = self.start as i64 + self.length as i64 - 1;
        format!("bytes {}-{last}/{size}", self.start)
    }
}

/// Why a `Range` header cannot be served; `Display` is the body Go's `ServeContent` sends
/// with its 416.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum RangeError {
    /// Not `bytes=` ranges, or a range that cannot be read.
    #[error("invalid range")]
    Invalid,
    /// Every range starts at or after the end of the body.
    #[error("invalid range: failed to overlap")]
    NoOverlap,
}

/// The ranges of a `Range` header value for a body of `size` bytes, read as Go's
/// `net/http` reads them: `bytes=` then comma-separated `first-last`, `first-` or `-suffix`
/// (spaces around each part allowed, empty parts skipped, `last` past the end clipped, a
/// range starting past the end dropped, and `NoOverlap` only when every range was dropped).
pub fn parse(header: &str, size: u64) -> Result<Vec<ByteRange>, RangeError> {
    let spec = header.strip_prefix("bytes=").ok_or(RangeError::Invalid)?;
    let number = |text: &str| -> Result<u64, RangeError> {
        // Go's ParseInt: an optional sign, then digits; a negative value is refused below.
        let digits = text.strip_prefix('+').unwrap_or(text);
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return Err(RangeError::Invalid);
        }
        digits
            .parse::<i64>()
            .map(|n| n as u64)
            .map_err(|_| RangeError::Invalid)
    };
    let mut ranges = Vec::new();
    let mut dropped = false;
    for part in spec.split(',') {
        let part = trim(part);
        if part.is_empty() {
            continue;
        }
        let (first, last) = part.split_once('-').ok_or(RangeError::Invalid)?;
        let (first, last) = (trim(first), trim(last));
        if first.is_empty() {
            // A suffix: the last `n` bytes.
            if last.is_empty() || last.starts_with('-') {
                return Err(RangeError::Invalid);
            }
            let n = number(last)?.min(size);
            ranges.push(ByteRange {
                start: size - n,
                length: n,
            });
            continue;
        }
        let start = number(first)?;
        if start >= size {
            dropped = true;
            continue;
        }
        let length = if last.is_empty() {
            size - start
        } else {
            let end = number(last)?;
            if start > end {
                return Err(RangeError::Invalid);
            }
            end.min(size - 1) - start + 1
        };
        ranges.push(ByteRange { start, length });
    }
    if dropped && ranges.is_empty() {
        return Err(RangeError::NoOverlap);
    }
    Ok(ranges)
}

/// Whether `If-Range` lets the `Range` header count: absent, or the date the body was last
/// modified (to the second). An entity tag never matches (the view sends none).
pub fn if_range_holds(if_range: Option<&str>, modified: std::time::SystemTime) -> bool {
    let Some(value) = if_range else {
        return true;
    };
    let value = value.trim_start_matches([' ', '\t']);
    if value.starts_with('"') || value.starts_with("W/") {
        return false;
    }
    let seconds = |time: std::time::SystemTime| {
        time.duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .ok()
    };
    match httpdate::parse_http_date(value) {
        Ok(date) => seconds(date) == seconds(modified),
        Err(_) => false,
    }
}

/// Go's `textproto.TrimString`: ASCII spaces, tabs, CR and LF at both ends.
fn trim(text: &str) -> &str {
    text.trim_matches([' ', '\t', '\r', '\n'])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn range(start: u64, length: u64) -> ByteRange {
        ByteRange { start, length }
    }

    #[test]
    fn ranges_are_read_as_go_reads_them() {
        assert_eq!(parse("bytes=0-9", 100), Ok(vec![range(0, 10)]));
        assert_eq!(parse("bytes=90-", 100), Ok(vec![range(90, 10)]));
        assert_eq!(parse("bytes=-10", 100), Ok(vec![range(90, 10)]));
        assert_eq!(parse("bytes=-500", 100), Ok(vec![range(0, 100)]));
        assert_eq!(parse("bytes=50-500", 100), Ok(vec![range(50, 50)]));
        assert_eq!(
            parse("bytes= 0-1 , ,5-6", 100),
            Ok(vec![range(0, 2), range(5, 2)])
        );
        assert_eq!(parse("bytes=100-", 100), Err(RangeError::NoOverlap));
        assert_eq!(parse("bytes=100-,0-0", 100), Ok(vec![range(0, 1)]));
        for bad in [
            "items=0-1",
            "bytes=5",
            "bytes=9-5",
            "bytes=-",
            "bytes=--5",
            "bytes=a-b",
        ] {
            assert_eq!(parse(bad, 100), Err(RangeError::Invalid), "{bad}");
        }
        assert_eq!(
            RangeError::NoOverlap.to_string(),
            "invalid range: failed to overlap"
        );
        assert_eq!(range(0, 0).content_range(0), "bytes 0--1/0");
        assert_eq!(range(90, 10).content_range(100), "bytes 90-99/100");
    }

    #[test]
    fn if_range_matches_the_date_to_the_second() {
        use std::time::{Duration, SystemTime};
        let modified = SystemTime::UNIX_EPOCH + Duration::from_millis(1_700_000_000_400);
        let same = httpdate::fmt_http_date(modified);
        let older = httpdate::fmt_http_date(modified - Duration::from_secs(5));
        assert!(if_range_holds(None, modified));
        assert!(if_range_holds(Some(&same), modified));
        assert!(!if_range_holds(Some(&older), modified));
        assert!(!if_range_holds(Some("\"an-etag\""), modified));
        assert!(!if_range_holds(Some("not a date"), modified));
    }
}
