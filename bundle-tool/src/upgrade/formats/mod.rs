//! The string `format`s the API server's CRD validator checks, as OLM v0 (v0.46.0) meets them
//! when it validates existing custom resources against a new schema: kube-openapi's format
//! registry, limited to the formats apiextensions-apiserver supports (any other format is
//! dropped from the schema before validation, so it checks nothing). Format names are matched
//! with their dashes removed, as both do (`date-time` is `datetime`).
//!
//! Each check was written from the rule the Go code states (a pattern, a checksum, the
//! grammar of Go's parser) and is compared with OLM's own validator on the fixture pairs of
//! `tests/fixtures/upgrade/olm-pairs/formats-*` (tests/tests/check_upgrade_olm_oracle.rs).
//! Patterns use ASCII classes where Go's RE2 `\d` and `\s` are ASCII-only.
//!
//! Not checked (`None`): `uri` and `email`, whose Go parsers (`net/url.ParseRequestURI`,
//! `net/mail.ParseAddress`) have not been written here.

mod time;

use std::net::IpAddr;
use std::sync::LazyLock;

use regex::Regex;

fn pattern(text: &str) -> Regex {
    Regex::new(text).expect("a valid pattern")
}

static HOSTNAME: LazyLock<Regex> = LazyLock::new(|| {
    pattern(
        r"^([a-zA-Z0-9\p{S}\p{L}]((-?[a-zA-Z0-9\p{S}\p{L}]{0,62})?)|([a-zA-Z0-9\p{S}\p{L}](([a-zA-Z0-9-\p{S}\p{L}]{0,61}[a-zA-Z0-9\p{S}\p{L}])?)(\.)){1,}([a-zA-Z\p{L}]){2,63})$",
    )
});
static UUID3: LazyLock<Regex> = LazyLock::new(|| {
    pattern(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?3[0-9a-f]{3}-?[0-9a-f]{4}-?[0-9a-f]{12}$")
});
static UUID4: LazyLock<Regex> = LazyLock::new(|| {
    pattern(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?4[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$")
});
static UUID5: LazyLock<Regex> = LazyLock::new(|| {
    pattern(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?5[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$")
});
static CREDIT_CARD: LazyLock<Regex> = LazyLock::new(|| {
    pattern(
        r"^(?:4[0-9]{12}(?:[0-9]{3})?|5[1-5][0-9]{14}|(222[1-9]|22[3-9][0-9]|2[3-6][0-9]{2}|27[01][0-9]|2720)[0-9]{12}|6(?:011|5[0-9][0-9])[0-9]{12}|3[47][0-9]{13}|3(?:0[0-5]|[68][0-9])[0-9]{11}|(?:2131|1800|35[0-9]{3})[0-9]{11}|6[27][0-9]{14})$",
    )
});
static SSN: LazyLock<Regex> = LazyLock::new(|| pattern(r"^[0-9]{3}[- ]?[0-9]{2}[- ]?[0-9]{4}$"));
static HEX_COLOR: LazyLock<Regex> =
    LazyLock::new(|| pattern(r"^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$"));
static RGB_COLOR: LazyLock<Regex> = LazyLock::new(|| {
    let channel = r"(0|[1-9][0-9]?|1[0-9][0-9]?|2[0-4][0-9]|25[0-5])";
    let space = r"[\t\n\f\r ]*";
    pattern(&format!(
        r"^rgb\({space}{channel}{space},{space}{channel}{space},{space}{channel}{space}\)$"
    ))
});
static BASE64: LazyLock<Regex> = LazyLock::new(|| {
    pattern(r"^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{4})$")
});
/// What govalidator strips from ISBNs and card numbers before it checks them.
static SPACES_AND_DASHES: LazyLock<Regex> = LazyLock::new(|| pattern(r"[\t\n\f\r -]+"));

/// Whether `text` is valid for `format`; `None` when the validator does not check `format`
/// (unsupported, so dropped) or this module does not check it yet.
pub fn valid(format: &str, text: &str) -> Option<bool> {
    // Called for every string a format applies to: the name is copied only if it has a dash.
    let name = if format.contains('-') {
        std::borrow::Cow::Owned(format.replace('-', ""))
    } else {
        std::borrow::Cow::Borrowed(format)
    };
    Some(match name.as_ref() {
        "ipv4" => ip(text) && text.contains('.'),
        "ipv6" => ip(text) && text.contains(':'),
        "cidr" => cidr(text),
        "uuid" => uuid(text),
        "uuid3" => UUID3.is_match(text),
        "uuid4" => UUID4.is_match(text),
        "uuid5" => UUID5.is_match(text),
        "date" => date(text),
        "datetime" => time::date_time(text),
        "duration" => time::duration(text),
        "byte" => BASE64.is_match(text),
        "password" => true,
        "hostname" => hostname(text),
        "mac" => mac(text),
        "bsonobjectid" => text.len() == 24 && text.bytes().all(|b| b.is_ascii_hexdigit()),
        "isbn" => isbn10(text) || isbn13(text),
        "isbn10" => isbn10(text),
        "isbn13" => isbn13(text),
        "creditcard" => credit_card(text),
        // govalidator also wants exactly 11 characters, so "123456789" is not an SSN.
        "ssn" => text.len() == 11 && SSN.is_match(text),
        "hexcolor" => HEX_COLOR.is_match(text),
        "rgbcolor" => RGB_COLOR.is_match(text),
        _ => return None,
    })
}

/// Go's `time.Parse("2006-01-02", …)`: four-digit year, two-digit month and day, a real day.
fn date(text: &str) -> bool {
    jiff::civil::Date::strptime("%Y-%m-%d", text).is_ok() && text.len() == 10
}

fn ip(text: &str) -> bool {
    text.parse::<IpAddr>().is_ok()
}

fn cidr(text: &str) -> bool {
    match text.split_once('/') {
        Some((address, bits)) => match (address.parse::<IpAddr>(), bits.parse::<u8>()) {
            (Ok(IpAddr::V4(_)), Ok(b)) => b <= 32 && !bits.starts_with('+'),
            (Ok(IpAddr::V6(_)), Ok(b)) => b <= 128 && !bits.starts_with('+'),
            _ => false,
        },
        None => false,
    }
}

/// Five groups of hex digits (8-4-4-4-12), each dash between them optional.
fn uuid(text: &str) -> bool {
    let mut rest = text;
    [8usize, 4, 4, 4, 12].iter().enumerate().all(|(i, &len)| {
        if i > 0 {
            rest = rest.strip_prefix('-').unwrap_or(rest);
        }
        let ok = rest.len() >= len && rest.as_bytes()[..len].iter().all(u8::is_ascii_hexdigit);
        rest = rest.get(len..).unwrap_or("");
        ok
    }) && rest.is_empty()
}

/// The pattern, at most 255 bytes, and no dot-separated label over 63 bytes.
fn hostname(text: &str) -> bool {
    HOSTNAME.is_match(text) && text.len() <= 255 && text.split('.').all(|label| label.len() <= 63)
}

/// Go's `net.ParseMAC`: 6, 8 or 20 bytes as hex pairs separated by `:` or `-`, as groups
/// of four separated by `.`, or (Go 1.26) as plain hex.
fn mac(text: &str) -> bool {
    let bytes = text.as_bytes();
    let hex_pair = |at: usize| {
        bytes
            .get(at..at + 2)
            .is_some_and(|pair| pair.iter().all(u8::is_ascii_hexdigit))
    };
    let size_ok = |n: usize| matches!(n, 6 | 8 | 20);
    if bytes.len() < 12 {
        return false;
    }
    if bytes[2] == b':' || bytes[2] == b'-' {
        let separator = bytes[2];
        if !(bytes.len() + 1).is_multiple_of(3) || !size_ok((bytes.len() + 1) / 3) {
            return false;
        }
        (0..(bytes.len() + 1) / 3).all(|i| {
            let at = 3 * i;
            hex_pair(at) && (at + 2 == bytes.len() || bytes[at + 2] == separator)
        })
    } else if bytes[4] == b'.' {
        if !(bytes.len() + 1).is_multiple_of(5) || !size_ok(2 * (bytes.len() + 1) / 5) {
            return false;
        }
        (0..(bytes.len() + 1) / 5).all(|i| {
            let at = 5 * i;
            hex_pair(at) && hex_pair(at + 2) && (at + 4 == bytes.len() || bytes[at + 4] == b'.')
        })
    } else {
        bytes.len().is_multiple_of(2)
            && size_ok(bytes.len() / 2)
            && (0..bytes.len() / 2).all(|i| hex_pair(2 * i))
    }
}

fn digits(text: &str) -> String {
    SPACES_AND_DASHES.replace_all(text, "").into_owned()
}

/// Nine digits and a check digit (or `X` for 10): the weighted sum is a multiple of 11.
fn isbn10(text: &str) -> bool {
    let number = digits(text);
    let bytes = number.as_bytes();
    let shape = bytes.len() == 10
        && bytes[..9].iter().all(u8::is_ascii_digit)
        && (bytes[9].is_ascii_digit() || bytes[9] == b'X');
    if !shape {
        return false;
    }
    let mut sum: u32 = (0..9)
        .map(|i| (i as u32 + 1) * u32::from(bytes[i] - b'0'))
        .sum();
    sum += 10
        * if bytes[9] == b'X' {
            10
        } else {
            u32::from(bytes[9] - b'0')
        };
    sum.is_multiple_of(11)
}

/// Thirteen digits, weights 1 and 3 alternating; the last is the check digit.
fn isbn13(text: &str) -> bool {
    let number = digits(text);
    let bytes = number.as_bytes();
    if bytes.len() != 13 || !bytes.iter().all(u8::is_ascii_digit) {
        return false;
    }
    let sum: u32 = (0..12)
        .map(|i| [1, 3][i % 2] * u32::from(bytes[i] - b'0'))
        .sum();
    u32::from(bytes[12] - b'0') == (10 - sum % 10) % 10
}

/// A known issuer's number shape, then the Luhn checksum.
fn credit_card(text: &str) -> bool {
    let number = digits(text);
    if !CREDIT_CARD.is_match(&number) {
        return false;
    }
    let sum: u32 = number
        .bytes()
        .rev()
        .enumerate()
        .map(|(i, b)| {
            let digit = u32::from(b - b'0');
            match i % 2 {
                0 => digit,
                _ if digit * 2 > 9 => digit * 2 - 9,
                _ => digit * 2,
            }
        })
        .sum();
    sum.is_multiple_of(10)
}

#[cfg(test)]
mod tests {
    use super::valid;

    #[test]
    fn each_checked_format_takes_a_good_value_and_refuses_a_bad_one() {
        for (format, good, bad) in [
            ("ipv4", "10.0.0.1", "10.0.0"),
            ("ipv6", "fd00::1", "10.0.0.1"),
            ("cidr", "10.0.0.0/8", "10.0.0.0/33"),
            ("uuid", "0fa1b2c3-d4e5-4f60-8a7b-9c0d1e2f3a4b", "0fa1b2c3"),
            (
                "uuid3",
                "a3bb189e-8bf9-3888-9912-ace4e6543002",
                "a3bb189e-8bf9-4888-9912-ace4e6543002",
            ),
            (
                "uuid4",
                "0fa1b2c3-d4e5-4f60-8a7b-9c0d1e2f3a4b",
                "0fa1b2c3-d4e5-4f60-7a7b-9c0d1e2f3a4b",
            ),
            (
                "uuid5",
                "74738ff5-5367-5958-9aee-98fffdcd1876",
                "74738ff5-5367-5958-7aee-98fffdcd1876",
            ),
            ("date", "2026-12-02", "2026-12-2"),
            ("byte", "aGk=", "aGk"),
            ("hostname", "redis.example.com", "-redis.example.com"),
            ("mac", "00:00:5e:00:53:01", "00:00:5e:00:53"),
            ("mac", "0000.5e00.5301", "0000.5e00:5301"),
            (
                "bsonobjectid",
                "507f1f77bcf86cd799439011",
                "507f1f77bcf86cd79943901",
            ),
            ("isbn10", "0321751043", "0321751044"),
            ("isbn13", "978-0321751041", "978-0321751042"),
            ("isbn", "0-321-75104-3", "0321751"),
            ("creditcard", "4111 1111 1111 1111", "4111 1111 1111 1112"),
            ("ssn", "123-45-6789", "123456789"),
            ("hexcolor", "#a0b", "#a0bc"),
            ("rgbcolor", "rgb(255, 0, 10)", "rgb(256,0,0)"),
            ("date-time", "2026-12-02T10:00:00Z", "2026-12-02T24:00:00Z"),
            (
                "datetime",
                "2026-12-02t10:00:00.5+01:00",
                "2026-12-02 10:00:00Z",
            ),
            ("duration", "1h30m", "5"),
            ("duration", "5 seconds", "99999999999999999999s"),
            ("duration", "-1.5h", "-.s"),
        ] {
            assert_eq!(valid(format, good), Some(true), "{format} {good}");
            assert_eq!(valid(format, bad), Some(false), "{format} {bad}");
        }
        assert_eq!(valid("password", ""), Some(true));
        assert_eq!(
            valid("byte", ""),
            Some(false),
            "the pattern wants one group"
        );
        assert_eq!(
            valid("uuid-4", "0fa1b2c3d4e54f608a7b9c0d1e2f3a4b"),
            Some(true)
        );
        assert_eq!(valid("x-unknown", "anything"), None);
        assert_eq!(valid("email", "a@example.com"), None, "not checked yet");
    }
}
