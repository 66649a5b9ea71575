//! Version ranges as OLM reads them: the blang/semver v4 grammar used by `olm.skipRange` and
//! `olm.package.required`.
//!
//! A range is comparators separated by spaces (all must hold), alternatives separated by
//! `||`. Operators: `<`, `<=`, `>`, `>=`, `=`/`==`/none, `!`/`!=`. A trailing `x` is a
//! wildcard (`1.2.x` is `>=1.2.0 <1.3.0`). There are no `^`, `~` or brackets, and prereleases
//! compare by plain SemVer precedence (unlike npm, `>=1.0.0` matches `1.1.0-beta`).
//! `semver::VersionReq` (Cargo's flavour) accepts none of this, hence this module.

use std::fmt;

use semver::Version;

/// One `operator version` test.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Comparator {
    op: Op,
    version: Version,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Eq,
    Ne,
    Gt,
    Ge,
    Lt,
    Le,
}

/// A parsed range: alternatives of conjunctions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VersionRange {
    alternatives: Vec<Vec<Comparator>>,
    text: String,
}

/// Why a range does not parse (messages follow blang's wording).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct RangeError(String);

impl fmt::Display for VersionRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// Precedence as SemVer defines it: build metadata does not count.
fn compare(a: &Version, b: &Version) -> std::cmp::Ordering {
    a.major
        .cmp(&b.major)
        .then(a.minor.cmp(&b.minor))
        .then(a.patch.cmp(&b.patch))
        .then_with(|| match (a.pre.is_empty(), b.pre.is_empty()) {
            (true, true) => std::cmp::Ordering::Equal,
            (true, false) => std::cmp::Ordering::Greater,
            (false, true) => std::cmp::Ordering::Less,
            (false, false) => a.pre.cmp(&b.pre),
        })
}

impl VersionRange {
    /// Parses a range.
    pub fn parse(text: &str) -> Result<Self, RangeError> {
        let parts = split_and_trim(text);
        let mut alternatives_text: Vec<Vec<String>> = Vec::new();
        let mut current = Vec::new();
        for (index, part) in parts.iter().enumerate() {
            if part == "||" {
                if index == 0 {
                    return Err(RangeError("First element in range is '||'".into()));
                }
                alternatives_text.push(std::mem::take(&mut current));
            } else {
                current.push(part.clone());
            }
        }
        if !parts.is_empty() && current.is_empty() && parts.last().is_some_and(|p| p == "||") {
            return Err(RangeError("Last element in range is '||'".into()));
        }
        alternatives_text.push(current);

        let mut alternatives = Vec::new();
        for alternative in alternatives_text {
            let mut comparators = Vec::new();
            for part in expand_wildcards(&alternative)? {
                comparators.push(parse_comparator(&part)?);
            }
            alternatives.push(comparators);
        }
        Ok(VersionRange {
            alternatives,
            text: text.to_string(),
        })
    }

    /// Whether `version` is in the range.
    pub fn contains(&self, version: &Version) -> bool {
        self.alternatives.iter().any(|all| {
            all.iter().all(|c| {
                let ordering = compare(version, &c.version);
                match c.op {
                    Op::Eq => ordering.is_eq(),
                    Op::Ne => !ordering.is_eq(),
                    Op::Gt => ordering.is_gt(),
                    Op::Ge => ordering.is_ge(),
                    Op::Lt => ordering.is_lt(),
                    Op::Le => ordering.is_le(),
                }
            })
        })
    }
}

/// Splits at spaces, except right after an operator character (`>= 1.0.0` is one part).
/// Like blang, a part of a single character is dropped (its `last < i-1` test).
fn split_and_trim(text: &str) -> Vec<String> {
    let bytes = text.as_bytes();
    let mut result = Vec::new();
    let mut last: i64 = 0;
    let mut last_char = 0u8;
    for (i, &b) in bytes.iter().enumerate() {
        let i = i as i64;
        if b == b' ' && !matches!(last_char, b'>' | b'<' | b'=') {
            if last < i - 1 {
                result.push(&text[last as usize..i as usize]);
            }
            last = i + 1;
        } else if b != b' ' {
            last_char = b;
        }
    }
    if last < bytes.len() as i64 - 1 {
        result.push(&text[last as usize..]);
    }
    result.into_iter().map(|p| p.replace(' ', "")).collect()
}

fn split_operator(part: &str) -> Result<(&str, &str), RangeError> {
    match part.find(|c: char| c.is_ascii_digit()) {
        Some(i) => Ok((part[..i].trim(), &part[i..])),
        None => Err(RangeError(format!(
            "Could not get version from string: {part:?}"
        ))),
    }
}

fn expand_wildcards(parts: &[String]) -> Result<Vec<String>, RangeError> {
    let mut out = Vec::new();
    for part in parts {
        if !part.contains('x') {
            out.push(part.clone());
            continue;
        }
        let (op, version) = split_operator(part)?;
        let pieces: Vec<&str> = version.split('.').collect();
        // blang: the wildcard kind comes from how many parts there are, if the last is `x`.
        let wildcard = if pieces.last() == Some(&"x") {
            pieces.len()
        } else {
            0
        };
        let flat = {
            let once = version.replacen(".x.x", ".x", 1).replacen(".x", ".0", 1);
            if once.split('.').count() == 2 {
                format!("{once}.0")
            } else {
                once
            }
        };
        let increment = |flat: &str| -> String {
            let mut numbers: Vec<String> = flat.split('.').map(str::to_string).collect();
            let index = match wildcard {
                3 => 1,
                2 => 0,
                _ => return String::new(),
            };
            // blang reads the number with Go's `strconv.Atoi` (an int64, a sign allowed),
            // adds one with Go's wrapping arithmetic, and on a parse error leaves the
            // version empty, so the comparator is just the operator and fails to parse.
            match numbers.get(index).map(|n| n.parse::<i64>()) {
                Some(Ok(n)) => numbers[index] = n.wrapping_add(1).to_string(),
                _ => return String::new(),
            }
            numbers.join(".")
        };
        let (result_op, bump) = match op {
            ">" => (">=", true),
            ">=" => (">=", false),
            "<" => ("<", false),
            "<=" => ("<", true),
            "" | "=" | "==" => {
                out.push(format!(">={flat}"));
                ("<", true)
            }
            "!=" | "!" => {
                out.push(format!("<{flat}"));
                (">=", true)
            }
            _ => ("", false),
        };
        let version = if bump { increment(&flat) } else { flat };
        out.push(format!("{result_op}{version}"));
    }
    Ok(out)
}

/// Parses a version strictly, with blang/semver's checks in blang's order and its messages
/// (opm and OLM report these texts).
pub fn parse_version(text: &str) -> Result<Version, String> {
    let digits = |s: &str| s.chars().all(|c| c.is_ascii_digit());
    let alphanumeric = |s: &str| s.chars().all(|c| c.is_ascii_alphanumeric() || c == '-');
    let leading_zero = |s: &str| s.len() > 1 && s.starts_with('0');
    let number = |s: &str| -> Result<u64, String> {
        s.parse::<u64>()
            .map_err(|_| format!("strconv.ParseUint: parsing {s:?}: invalid syntax"))
    };
    if text.is_empty() {
        return Err("Version string empty".into());
    }
    let parts: Vec<&str> = text.splitn(3, '.').collect();
    if parts.len() != 3 {
        return Err("No Major.Minor.Patch elements found".into());
    }
    for (part, label, title) in [(parts[0], "major", "Major"), (parts[1], "minor", "Minor")] {
        if !digits(part) {
            return Err(format!(
                "Invalid character(s) found in {label} number {part:?}"
            ));
        }
        if leading_zero(part) {
            return Err(format!(
                "{title} number must not contain leading zeroes {part:?}"
            ));
        }
        number(part)?;
    }
    let mut patch = parts[2];
    let mut build: Vec<&str> = Vec::new();
    if let Some((rest, meta)) = patch.split_once('+') {
        build = meta.split('.').collect();
        patch = rest;
    }
    let mut pre: Vec<&str> = Vec::new();
    if let Some((rest, prerelease)) = patch.split_once('-') {
        pre = prerelease.split('.').collect();
        patch = rest;
    }
    if !digits(patch) {
        return Err(format!(
            "Invalid character(s) found in patch number {patch:?}"
        ));
    }
    if leading_zero(patch) {
        return Err(format!(
            "Patch number must not contain leading zeroes {patch:?}"
        ));
    }
    number(patch)?;
    for identifier in &pre {
        if identifier.is_empty() {
            return Err("Prerelease is empty".into());
        }
        if digits(identifier) {
            if leading_zero(identifier) {
                return Err(format!(
                    "Numeric PreRelease version must not contain leading zeroes {identifier:?}"
                ));
            }
            number(identifier)?;
        } else if !alphanumeric(identifier) {
            return Err(format!(
                "Invalid character(s) found in prerelease {identifier:?}"
            ));
        }
    }
    for identifier in &build {
        if identifier.is_empty() {
            return Err("Build meta data is empty".into());
        }
        if !alphanumeric(identifier) {
            return Err(format!(
                "Invalid character(s) found in build meta data {identifier:?}"
            ));
        }
    }
    Version::parse(text).map_err(|e| e.to_string())
}

/// Parses a version the forgiving way (blang's `ParseTolerant`, which the CSV type uses):
/// surrounding spaces and a leading `v` are dropped, leading zeros trimmed, and a missing minor
/// or patch filled with 0.
pub fn parse_version_tolerant(text: &str) -> Result<Version, String> {
    let trimmed = text.trim();
    let trimmed = trimmed.strip_prefix('v').unwrap_or(trimmed);
    let mut parts: Vec<String> = trimmed.splitn(3, '.').map(str::to_string).collect();
    for part in &mut parts {
        if part.len() > 1 {
            let stripped = part.trim_start_matches('0');
            *part = if stripped.is_empty() || !stripped.starts_with(|c: char| c.is_ascii_digit()) {
                format!("0{stripped}")
            } else {
                stripped.to_string()
            };
        }
    }
    if parts.len() < 3 {
        if parts.last().is_some_and(|p| p.contains(['+', '-'])) {
            return Err("Short version cannot contain PreRelease/Build meta data".into());
        }
        while parts.len() < 3 {
            parts.push("0".into());
        }
    }
    parse_version(&parts.join("."))
}

fn parse_comparator(part: &str) -> Result<Comparator, RangeError> {
    let (op_text, version_text) = split_operator(part)?;
    let op = match op_text {
        "" | "=" | "==" => Op::Eq,
        ">" => Op::Gt,
        ">=" => Op::Ge,
        "<" => Op::Lt,
        "<=" => Op::Le,
        "!" | "!=" => Op::Ne,
        _ => {
            return Err(RangeError(format!(
                "Could not parse Range {part:?}: Could not parse comparator {op_text:?} in {part:?}"
            )));
        }
    };
    let version = parse_version(version_text).map_err(|e| {
        RangeError(format!("Could not parse Range {part:?}: Could not parse version {version_text:?} in {part:?}: {e}"))
    })?;
    Ok(Comparator { op, version })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Version {
        Version::parse(s).unwrap()
    }

    fn contains(range: &str, version: &str) -> bool {
        VersionRange::parse(range).unwrap().contains(&v(version))
    }

    #[test]
    fn space_separated_comparators_all_hold() {
        assert!(contains(">=1.0.0 <1.2.0", "1.1.5"));
        assert!(!contains(">=1.0.0 <1.2.0", "1.2.0"));
        assert!(
            contains(">= 1.0.0 < 1.2.0", "1.0.0"),
            "a space after an operator is allowed"
        );
    }

    #[test]
    fn a_wildcard_bump_reads_and_wraps_the_number_as_go_does() {
        // u64::MAX does not fit Go's int: the bumped version is empty, as in blang.
        let err = VersionRange::parse("<=18446744073709551615.x").unwrap_err();
        assert_eq!(err.to_string(), "Could not get version from string: \"<\"");
        // i64::MAX + 1 wraps to a negative number, which is not a version.
        let err = VersionRange::parse("<=9223372036854775807.x").unwrap_err();
        assert_eq!(
            err.to_string(),
            "Could not parse Range \"<-9223372036854775808.0.0\": Could not parse comparator \"<-\" in \"<-9223372036854775808.0.0\""
        );
        let err = VersionRange::parse("<=1.-2.x").unwrap_err();
        assert_eq!(
            err.to_string(),
            "Could not parse Range \"<1.-1.0\": Could not parse version \"1.-1.0\" in \"<1.-1.0\": Invalid character(s) found in minor number \"-1\""
        );
        assert!(contains("<=1.+2.x", "1.2.5"), "Go's Atoi takes a plus sign");
        // A number that does not parse also leaves the version empty. (All four messages
        // are blang v4.0.0's, read from a Go program calling semver.ParseRange.)
        let err = VersionRange::parse(">1.2a.x").unwrap_err();
        assert_eq!(err.to_string(), "Could not get version from string: \">=\"");
        assert!(contains("<=1.2.x", "1.2.9"));
        assert!(!contains("<=1.2.x", "1.3.0"));
    }

    #[test]
    fn alternatives() {
        assert!(contains("<1.0.0 || >=2.0.0", "2.1.0"));
        assert!(!contains("<1.0.0 || >=2.0.0", "1.5.0"));
    }

    #[test]
    fn prereleases_compare_by_semver_precedence() {
        // npm would exclude this; OLM (blang) includes it.
        assert!(contains(">=1.0.0 <1.2.0", "1.1.0-beta.1"));
        assert!(!contains(">=1.0.0", "1.0.0-rc.1"));
    }

    #[test]
    fn wildcards_expand_like_blang() {
        assert!(contains("1.2.x", "1.2.9"));
        assert!(!contains("1.2.x", "1.3.0"));
        assert!(contains(">1.2.x", "1.3.0"));
        assert!(!contains(">1.2.x", "1.2.5"));
        assert!(contains("<=1.x", "1.9.0"));
        assert!(!contains("<=1.x", "2.0.0"));
        // blang expands `!=1.2.x` to `<1.2.0 >=1.3.0` in one conjunction, which nothing
        // satisfies; OLM inherits that, and so do we.
        assert!(!contains("!=1.2.x", "1.3.0"));
        assert!(!contains("!=1.2.x", "1.1.0"));
    }

    #[test]
    fn not_equal_and_equal() {
        assert!(contains("!1.0.0", "1.0.1"));
        assert!(contains("=1.0.0", "1.0.0"));
        assert!(
            contains("1.0.0", "1.0.0+build"),
            "build metadata does not count"
        );
    }

    #[test]
    fn versions_parse_with_blangs_messages() {
        assert_eq!(
            parse_version("1.0").unwrap_err(),
            "No Major.Minor.Patch elements found"
        );
        assert_eq!(
            parse_version("v1.0.0").unwrap_err(),
            "Invalid character(s) found in major number \"v1\""
        );
        assert_eq!(
            parse_version("1.01.0").unwrap_err(),
            "Minor number must not contain leading zeroes \"01\""
        );
        assert_eq!(
            parse_version("1.0.0-01").unwrap_err(),
            "Numeric PreRelease version must not contain leading zeroes \"01\""
        );
        assert_eq!(
            parse_version("1.2.3-rc.1+b.5").unwrap().to_string(),
            "1.2.3-rc.1+b.5"
        );
    }

    #[test]
    fn tolerant_parsing_fills_and_trims_like_blang() {
        assert_eq!(parse_version_tolerant("v1.2").unwrap().to_string(), "1.2.0");
        assert_eq!(
            parse_version_tolerant(" 01.002.3 ").unwrap().to_string(),
            "1.2.3"
        );
        assert!(
            parse_version_tolerant("1.2-rc")
                .unwrap_err()
                .contains("Short version")
        );
        assert!(parse_version_tolerant("not-a-version").is_err());
    }

    #[test]
    fn errors_name_the_problem() {
        assert!(
            VersionRange::parse("|| 1.0.0")
                .unwrap_err()
                .0
                .contains("First element")
        );
        assert!(
            VersionRange::parse("1.0.0 ||")
                .unwrap_err()
                .0
                .contains("Last element")
        );
        assert!(
            VersionRange::parse(">=abc")
                .unwrap_err()
                .0
                .contains("Could not get version")
        );
        assert!(
            VersionRange::parse("~1.0.0")
                .unwrap_err()
                .0
                .contains("comparator")
        );
        assert!(
            VersionRange::parse(">=1.0")
                .unwrap_err()
                .0
                .contains("Could not parse version")
        );
    }
}
