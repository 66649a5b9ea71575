//! Checking image pull specs the way the container tools parse them (docker's reference
//! grammar, as operator-registry uses it): `[domain[:port]/]path[:tag][@digest]`.

/// Why a pull spec is not a valid reference (wording of docker's reference package).
pub fn check(spec: &str) -> Result<(), String> {
    if spec.is_empty() {
        return Err("repository name must have at least one component".into());
    }
    let (rest, digest) = match spec.split_once('@') {
        Some((rest, digest)) => (rest, Some(digest)),
        None => (spec, None),
    };
    if let Some(digest) = digest {
        let (algorithm, hex) = digest.split_once(':').ok_or("invalid reference format")?;
        let algorithm_ok = !algorithm.is_empty()
            && algorithm
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "+._-".contains(c));
        let hex_ok = hex.len() >= 32 && hex.chars().all(|c| c.is_ascii_hexdigit());
        if !algorithm_ok || !hex_ok {
            return Err("invalid reference format".into());
        }
        // go-digest's `Validate`, which docker's parser runs on the digest: only the
        // algorithms Go links in, their exact length, lower-case hex.
        let length = match algorithm {
            "sha256" => 64,
            "sha384" => 96,
            "sha512" => 128,
            _ => return Err("unsupported digest algorithm".into()),
        };
        if hex.len() != length {
            return Err("invalid checksum digest length".into());
        }
        if hex.chars().any(|c| c.is_ascii_uppercase()) {
            return Err("invalid checksum digest format".into());
        }
    }
    // A tag is after the last ':' that comes after the last '/'.
    let last_slash = rest.rfind('/').map(|i| i + 1).unwrap_or(0);
    let (name, tag) = match rest[last_slash..].rfind(':') {
        Some(i) => (&rest[..last_slash + i], Some(&rest[last_slash + i + 1..])),
        None => (rest, None),
    };
    if let Some(tag) = tag {
        let mut chars = tag.chars();
        let first_ok = chars
            .next()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
        if !first_ok
            || tag.len() > 128
            || !chars.all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c))
        {
            return Err("invalid reference format".into());
        }
    }
    if name.len() > 255 {
        return Err("repository name must not be more than 255 characters".into());
    }
    let mut components: Vec<&str> = name.split('/').collect();
    if components.len() > 1 {
        let first = components[0];
        if first.contains('.')
            || first.contains(':')
            || first == "localhost"
            || first.chars().any(|c| c.is_ascii_uppercase())
        {
            check_domain(first)?;
            components.remove(0);
        }
    }
    for component in components {
        if component.chars().any(|c| c.is_ascii_uppercase()) {
            return Err(
                "invalid reference format: repository name (library/...) must be lowercase".into(),
            );
        }
        if !path_component_ok(component) {
            return Err("invalid reference format".into());
        }
    }
    Ok(())
}

fn check_domain(domain: &str) -> Result<(), String> {
    let (host, port) = match domain.rsplit_once(':') {
        Some((host, port)) if !host.contains(']') || domain.starts_with('[') => (host, Some(port)),
        _ => (domain, None),
    };
    if let Some(port) = port
        && (port.is_empty() || !port.chars().all(|c| c.is_ascii_digit()))
    {
        return Err("invalid reference format".into());
    }
    let host_ok = if host.starts_with('[') {
        host.ends_with(']')
    } else {
        !host.is_empty()
            && host.split('.').all(|label| {
                !label.is_empty()
                    && label.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
                    && !label.starts_with('-')
                    && !label.ends_with('-')
            })
    };
    if host_ok {
        Ok(())
    } else {
        Err("invalid reference format".into())
    }
}

/// `[a-z0-9]+` separated by `.`, `_`, `__` or runs of `-`.
fn path_component_ok(component: &str) -> bool {
    let bytes = component.as_bytes();
    if bytes.is_empty()
        || !bytes[0].is_ascii_alphanumeric()
        || !bytes[bytes.len() - 1].is_ascii_alphanumeric()
    {
        return false;
    }
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if b.is_ascii_lowercase() || b.is_ascii_digit() {
            i += 1;
            continue;
        }
        let start = i;
        while i < bytes.len() && !(bytes[i].is_ascii_lowercase() || bytes[i].is_ascii_digit()) {
            i += 1;
        }
        let separator = &component[start..i];
        let ok = separator == "."
            || separator == "_"
            || separator == "__"
            || separator.chars().all(|c| c == '-');
        if !ok {
            return false;
        }
    }
    true
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
        ] {
            assert_eq!(check(spec), Ok(()), "{spec}");
        }
    }

    #[test]
    fn rejects_what_they_would_not() {
        for spec in [
            "Quay.io/X/Y",
            "quay.io/UPPER/case",
            "a:b:c",
            "repo@sha256:abc",
            "-bad/x",
            "x/y:",
        ] {
            assert!(check(spec).is_err(), "{spec} should be invalid");
        }
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
        for digest in [
            format!("sha384:{}", hex(96)),
            format!("sha512:{}", hex(128)),
        ] {
            assert_eq!(check(&format!("quay.io/x/y@{digest}")), Ok(()), "{digest}");
        }
    }
}
