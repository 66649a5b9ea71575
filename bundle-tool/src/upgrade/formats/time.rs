//! `datetime` and `duration` as kube-openapi's strfmt checks them: its own grammars, with
//! Go's `time.ParseDuration` as the first try for a duration.

use std::sync::LazyLock;

use regex::Regex;

use super::{date, pattern};

static CLOCK: LazyLock<Regex> = LazyLock::new(|| {
    // The `.` before the fraction is any character in the original pattern, not a dot.
    pattern(r"^([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))$")
});
static DURATION_PART: LazyLock<Regex> =
    LazyLock::new(|| pattern(r"(([0-9]+)[\t\n\f\r ]*([A-Za-zµ]+))"));

/// strfmt's `IsDateTime`: lower-cased and split at every `t`, the first piece a `date` and
/// the second a clock time with an offset (`z` or `±hh:mm`), hours ≤ 23, minutes and
/// seconds ≤ 59; pieces after the second are not looked at.
pub(super) fn date_time(text: &str) -> bool {
    if text.len() < 4 {
        return false;
    }
    let lower = text.to_lowercase();
    let mut pieces = lower.split('t');
    let (Some(day), Some(clock)) = (pieces.next(), pieces.next()) else {
        return false;
    };
    date(day)
        && CLOCK
            .captures(clock)
            .is_some_and(|clock| &clock[1] <= "23" && &clock[2] <= "59" && &clock[3] <= "59")
}

/// strfmt's `ParseDuration` succeeds: Go's `time.ParseDuration`, or else at least one
/// "number unit" anywhere in the text with a unit it knows (`5 seconds`, `3wk`), no number
/// past Go's `int`.
pub(super) fn duration(text: &str) -> bool {
    if go_duration(text) {
        return true;
    }
    let mut known = false;
    for part in DURATION_PART.captures_iter(text) {
        if part[2].parse::<i64>().is_err() {
            return false;
        }
        let unit = part[3].to_lowercase();
        const UNITS: [&[&str]; 8] = [
            &["ns", "nano"],
            &["us", "µs", "micro"],
            &["ms", "milli"],
            &["s", "sec"],
            &["m", "min"],
            &["h", "hr", "hour"],
            &["d", "day"],
            &["w", "wk", "week"],
        ];
        known |= UNITS.iter().any(|variants| {
            variants.iter().enumerate().any(|(i, variant)| {
                (i == variants.len() - 1 && unit.starts_with(variant)) || equal_fold(variant, &unit)
            })
        });
    }
    known
}

/// Go's `strings.EqualFold` for the unit names above: ASCII case, and the micro sign `µ`
/// equal to the Greek `μ` and `Μ` (Unicode simple folding).
fn equal_fold(a: &str, b: &str) -> bool {
    let fold = |c: char| match c {
        'µ' | 'Μ' => 'μ',
        c => c.to_ascii_lowercase(),
    };
    a.chars().map(fold).eq(b.chars().map(fold))
}

/// Whether Go's `time.ParseDuration` accepts `text`: `[-+]?([0-9]*(\.[0-9]*)?unit)+` or
/// `0`, units `ns us µs μs ms s m h`, within ±2⁶³ ns.
fn go_duration(text: &str) -> bool {
    const LIMIT: u64 = 1 << 63;
    let mut s = text.as_bytes();
    let mut negative = false;
    if let Some((&sign, rest)) = s.split_first()
        && (sign == b'-' || sign == b'+')
    {
        negative = sign == b'-';
        s = rest;
    }
    if s == b"0" {
        return true;
    }
    if s.is_empty() {
        return false;
    }
    let mut total: u64 = 0;
    while !s.is_empty() {
        if !(s[0] == b'.' || s[0].is_ascii_digit()) {
            return false;
        }
        let mut whole: u64 = 0;
        let digits = s.iter().take_while(|b| b.is_ascii_digit()).count();
        for &b in &s[..digits] {
            if whole > LIMIT / 10 {
                return false;
            }
            whole = whole * 10 + u64::from(b - b'0');
            if whole > LIMIT {
                return false;
            }
        }
        s = &s[digits..];
        let mut fraction: u64 = 0;
        let mut scale: f64 = 1.0;
        let mut fraction_digits = 0;
        if s.first() == Some(&b'.') {
            s = &s[1..];
            fraction_digits = s.iter().take_while(|b| b.is_ascii_digit()).count();
            let mut overflow = false;
            for &b in &s[..fraction_digits] {
                if overflow {
                    continue;
                }
                if fraction > (LIMIT - 1) / 10 {
                    overflow = true;
                    continue;
                }
                let next = fraction * 10 + u64::from(b - b'0');
                if next > LIMIT {
                    overflow = true;
                    continue;
                }
                fraction = next;
                scale *= 10.0;
            }
            s = &s[fraction_digits..];
        }
        if digits == 0 && fraction_digits == 0 {
            return false;
        }
        let unit_length = s
            .iter()
            .take_while(|&&b| !(b == b'.' || b.is_ascii_digit()))
            .count();
        let unit: u64 = match &s[..unit_length] {
            b"ns" => 1,
            b"us" => 1_000,
            u if u == "µs".as_bytes() || u == "μs".as_bytes() => 1_000,
            b"ms" => 1_000_000,
            b"s" => 1_000_000_000,
            b"m" => 60_000_000_000,
            b"h" => 3_600_000_000_000,
            _ => return false,
        };
        s = &s[unit_length..];
        if whole > LIMIT / unit {
            return false;
        }
        let mut value = whole * unit;
        if fraction > 0 {
            value += (fraction as f64 * (unit as f64 / scale)) as u64;
            if value > LIMIT {
                return false;
            }
        }
        total = total.wrapping_add(value);
        if total > LIMIT {
            return false;
        }
    }
    negative || total < LIMIT
}
