//! Checking image pull specs the way opm does: `ParseNormalizedNamed` of containers/image's
//! `docker/reference` (go.podman.io/image/v5 v5.40.0, the version opm v1.73.0 builds with),
//! whose grammar is `[domain[:port]/]path[:tag][@digest]`.
//!
//! The order of its checks decides which message a bad reference gets, so it is kept:
//! 1. a 64-character lower-case hex string is refused as an image ID;
//! 2. the reference is normalized, Docker Hub's `docker.io/` (and `library/` for a
//!    one-component name) put in front when the first component is no domain;
//! 3. the repository path must be lower case;
//! 4. the normalized text must match the grammar;
//! 5. the normalized name (the domain included) must be at most 255 characters;
//! 6. the digest must pass go-digest's `Validate`.
//!
//! The length is counted after normalization: `a` repeated 250 times is refused, because
//! `docker.io/library/aaa…` is 268 characters (opm refuses it the same way).

/// The longest name (domain and path, after normalization) a reference may have.
const NAME_MAX: usize = 255;

/// A valid reference, normalized: what a pull of it asks the registry for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Normalized {
    /// The registry (`docker.io` when the reference names none).
    pub domain: String,
    /// The repository path (`library/…` for a one-component Docker Hub name).
    pub path: String,
    /// The tag, if one is given.
    pub tag: Option<String>,
    /// The digest, if one is given.
    pub digest: Option<String>,
}

/// Why a pull spec is not a valid reference, in the words of containers/image and go-digest.
pub fn check(spec: &str) -> Result<(), String> {
    parse(spec).map(|_| ())
}

/// The reference normalized, or why it is not one (see [`check`]).
pub fn parse(spec: &str) -> Result<Normalized, String> {
    if spec.len() == 64
        && spec
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    {
        return Err(format!(
            "invalid repository name ({spec}), cannot specify 64-byte hexadecimal strings"
        ));
    }
    let (domain, remainder) = split_docker_domain(spec);
    // The repository part ends at the first ':' (a tag, or the ':' inside a digest).
    let remote_name = remainder.split(':').next().unwrap_or_default();
    if remote_name.bytes().any(|b| b.is_ascii_uppercase()) {
        return Err("invalid reference format: repository name must be lowercase".into());
    }
    let normalized = format!("{domain}/{remainder}");
    let Some(parts) = Parts::of(&normalized) else {
        return Err(if Parts::of(&normalized.to_ascii_lowercase()).is_some() {
            "repository name must be lowercase".into()
        } else {
            "invalid reference format".into()
        });
    };
    if parts.name.len() > NAME_MAX {
        return Err("repository name must not be more than 255 characters".into());
    }
    if let Some(digest) = parts.digest {
        validate_digest(digest)?;
    }
    Ok(Normalized {
        domain: domain.to_string(),
        // The name is the domain put in front above, a '/', and the path.
        path: parts.name[domain.len() + 1..].to_string(),
        tag: parts.tag.map(str::to_string),
        digest: parts.digest.map(str::to_string),
    })
}

/// Docker Hub's defaults: a first component is a domain only if it has a `.` or a `:` or is
/// `localhost`; `index.docker.io` is `docker.io`; a one-component name on it is `library/…`.
/// containers/image reads an upper-case first component as a path (newer docker reads it as
/// a domain), which is why `Foo/bar` is refused as not lower case.
fn split_docker_domain(spec: &str) -> (&str, std::borrow::Cow<'_, str>) {
    let (domain, remainder) = match spec.split_once('/') {
        Some((first, rest))
            if first.contains('.') || first.contains(':') || first == "localhost" =>
        {
            (first, rest)
        }
        _ => ("docker.io", spec),
    };
    let domain = if domain == "index.docker.io" {
        "docker.io"
    } else {
        domain
    };
    if domain == "docker.io" && !remainder.contains('/') {
        (domain, format!("library/{remainder}").into())
    } else {
        (domain, remainder.into())
    }
}

/// A text that matches the reference grammar, cut into its parts.
struct Parts<'a> {
    /// Domain and path: what the length limit counts.
    name: &'a str,
    tag: Option<&'a str>,
    digest: Option<&'a str>,
}

impl<'a> Parts<'a> {
    /// The parts, if some reading of `text` matches the grammar. No part may hold an `@`,
    /// only a domain's port a ':' before the last '/', and a tag no '/', so the cuts are
    /// fixed: the digest after the '@', the tag after a ':' that follows the last '/'.
    fn of(text: &'a str) -> Option<Parts<'a>> {
        let (rest, digest) = match text.split_once('@') {
            Some((rest, digest)) => (rest, Some(digest)),
            None => (text, None),
        };
        if digest.is_some_and(|d| !digest_grammar_ok(d)) {
            return None;
        }
        let last_slash = rest.rfind('/').map(|i| i + 1).unwrap_or(0);
        let (name, tag) = match rest[last_slash..].find(':') {
            Some(i) => (&rest[..last_slash + i], Some(&rest[last_slash + i + 1..])),
            None => (rest, None),
        };
        if tag.is_some_and(|t| !tag_ok(t)) || !name_ok(name) {
            return None;
        }
        Some(Parts { name, tag, digest })
    }
}

/// `[domain/]component(/component)*`: the first of several components may be a domain.
fn name_ok(name: &str) -> bool {
    let mut components = name.split('/');
    let first = components.next().unwrap_or_default();
    let rest: Vec<&str> = components.collect();
    if !rest.iter().all(|c| path_component_ok(c)) {
        return false;
    }
    path_component_ok(first) || (!rest.is_empty() && domain_ok(first))
}

/// `[\w][\w.-]{0,127}`.
fn tag_ok(tag: &str) -> bool {
    let word = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let bytes = tag.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= 128
        && word(bytes[0])
        && bytes.iter().all(|&b| word(b) || b == b'.' || b == b'-')
}

/// Labels of letters, digits and inner hyphens, joined by dots, and an optional `:port`.
fn domain_ok(domain: &str) -> bool {
    let (host, port) = match domain.split_once(':') {
        Some((host, port)) => (host, Some(port)),
        None => (domain, None),
    };
    if port.is_some_and(|p| p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit())) {
        return false;
    }
    host.split('.').all(|label| {
        !label.is_empty()
            && label
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-')
            && !label.starts_with('-')
            && !label.ends_with('-')
    })
}

/// The reference grammar's digest: `[A-Za-z][A-Za-z0-9]*([-_+.][A-Za-z][A-Za-z0-9]*)*` for
/// the algorithm, then ':' and at least 32 hex digits of either case.
fn digest_grammar_ok(digest: &str) -> bool {
    let Some((algorithm, hex)) = digest.split_once(':') else {
        return false;
    };
    let algorithm_ok = algorithm.split(['-', '_', '+', '.']).all(|part| {
        part.as_bytes()
            .first()
            .is_some_and(|b| b.is_ascii_alphabetic())
            && part.bytes().all(|b| b.is_ascii_alphanumeric())
    });
    algorithm_ok && hex.len() >= 32 && hex.bytes().all(|b| b.is_ascii_hexdigit())
}

/// go-digest's `Validate` on a digest the grammar accepted: only the algorithms Go links in,
/// their exact length, lower-case hex.
fn validate_digest(digest: &str) -> Result<(), String> {
    let (algorithm, hex) = digest.split_once(':').unwrap_or((digest, ""));
    let length = match algorithm {
        "sha256" => 64,
        "sha384" => 96,
        "sha512" => 128,
        // go-digest's own grammar for an unknown algorithm is lower case only.
        _ if algorithm.bytes().any(|b| b.is_ascii_uppercase()) => {
            return Err("invalid checksum digest format".into());
        }
        _ => return Err("unsupported digest algorithm".into()),
    };
    if hex.len() != length {
        return Err("invalid checksum digest length".into());
    }
    if hex.bytes().any(|b| b.is_ascii_uppercase()) {
        return Err("invalid checksum digest format".into());
    }
    Ok(())
}

/// `[a-z0-9]+` separated by `.`, `_`, `__` or runs of `-`.
fn path_component_ok(component: &str) -> bool {
    let bytes = component.as_bytes();
    let alphanumeric = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    if bytes.is_empty() || !alphanumeric(&bytes[0]) || !alphanumeric(&bytes[bytes.len() - 1]) {
        return false;
    }
    component
        .split(|b: char| b.is_ascii_lowercase() || b.is_ascii_digit())
        .filter(|separator| !separator.is_empty())
        .all(|separator| {
            separator == "."
                || separator == "_"
                || separator == "__"
                || separator.bytes().all(|b| b == b'-')
        })
}

#[cfg(test)]
mod tests {
    use super::check;

    #[test]
    fn accepts_what_registries_serve() {
        for spec in [
            "quay.io/community-operator-pipeline-prod/clusterpulse:0.1.1",
            "registry.example.com:5000/a/b@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
            "redis",
            "localhost/x:latest",
            "127.0.0.1:5000/bundle:v1",
            "docker.io/library/redis:7.2",
            "a__b/c-d---e/f.g:1.0_rc-1",
            "Quay.IO/x/y",
        ] {
            assert_eq!(check(spec), Ok(()), "{spec}");
        }
    }

    /// Answers opm v1.73.0 gave (`opm validate` of a catalog with the spec as bundle image);
    /// tests/tests/catalog_conformance.rs asks opm itself on these and more.
    #[test]
    fn refuses_with_opm_messages() {
        let hex64 = "a".repeat(64);
        let lower = "invalid reference format: repository name must be lowercase";
        for (spec, message) in [
            (
                hex64.clone(),
                format!(
                    "invalid repository name ({hex64}), cannot specify 64-byte hexadecimal strings"
                ),
            ),
            ("Foo/bar".into(), lower.into()),
            ("foo/Bar:v1".into(), lower.into()),
            ("quay.io/UPPER/case".into(), lower.into()),
            ("a:b:c".into(), "invalid reference format".into()),
            ("repo@sha256:abc".into(), "invalid reference format".into()),
            ("-bad/x".into(), "invalid reference format".into()),
            ("x/y:".into(), "invalid reference format".into()),
            (
                "a".repeat(250),
                "repository name must not be more than 255 characters".into(),
            ),
            (
                format!("{}@sha999:{hex64}", "a".repeat(250)),
                "repository name must not be more than 255 characters".into(),
            ),
        ] {
            assert_eq!(check(&spec), Err(message), "{spec}");
        }
    }

    #[test]
    fn the_length_counts_the_normalized_name() {
        // docker.io/library/ is 18 characters.
        assert_eq!(check(&"a".repeat(237)), Ok(()));
        assert!(check(&"a".repeat(238)).is_err());
        assert_eq!(check(&format!("quay.io/{}", "a".repeat(247))), Ok(()));
        assert!(check(&format!("quay.io/{}", "a".repeat(248))).is_err());
        // index.docker.io is counted as docker.io.
        assert_eq!(
            check(&format!("index.docker.io/x/{}", "a".repeat(243))),
            Ok(())
        );
    }

    #[test]
    fn digests_are_checked_as_go_digest_checks_them() {
        let hex = |n: usize| "ab".repeat(n / 2);
        for (digest, error) in [
            (
                format!("shb256:{}", hex(64)),
                "unsupported digest algorithm",
            ),
            (
                format!("sha512:{}", hex(64)),
                "invalid checksum digest length",
            ),
            (
                format!("sha256:{}", hex(64).to_uppercase()),
                "invalid checksum digest format",
            ),
        ] {
            assert_eq!(
                check(&format!("quay.io/x/y@{digest}")),
                Err(error.into()),
                "{digest}"
            );
        }
        // Upper case before the first ':' is in the repository part, which must be lower
        // case; after a tag, go-digest's own grammar refuses it.
        assert_eq!(
            check(&format!("quay.io/x/y@SHA256:{}", hex(64))),
            Err("invalid reference format: repository name must be lowercase".into())
        );
        assert_eq!(
            check(&format!("quay.io/x/y:v1@SHA256:{}", hex(64))),
            Err("invalid checksum digest format".into())
        );
        for digest in [
            format!("sha384:{}", hex(96)),
            format!("sha512:{}", hex(128)),
        ] {
            assert_eq!(check(&format!("quay.io/x/y@{digest}")), Ok(()), "{digest}");
        }
    }
}
