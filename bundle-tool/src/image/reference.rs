//! Image references without regular expressions. oci-client's `Reference::from_str` compiles
//! the docker reference grammar as a regex on first use: ~40 % of the CPU of a one-image
//! `bundle-tool push` process (perf), which is paid once per process. We check the text with
//! our own grammar checker (`image_ref`) and split it the way docker does instead.

use oci_client::Reference;

/// Docker Hub, the registry of references that name none.
const DOCKER_HUB: &str = "docker.io";

/// Parses `[domain[:port]/]path[:tag][@digest]` (docker's defaults: Docker Hub, `library/`
/// for one-component names on it, `latest` when neither tag nor digest is given).
pub fn parse_reference(text: &str) -> anyhow::Result<Reference> {
    crate::image_ref::check(text)
        .map_err(|e| anyhow::anyhow!("{text:?} is not an image reference: {e}"))?;
    let (rest, digest) = match text.split_once('@') {
        Some((rest, digest)) => (rest, Some(digest.to_string())),
        None => (text, None),
    };
    // The tag is after the last ':' that follows the last '/' (a port's ':' comes before it).
    let last_slash = rest.rfind('/').map(|i| i + 1).unwrap_or(0);
    let (name, tag) = match rest[last_slash..].rfind(':') {
        Some(i) => (
            &rest[..last_slash + i],
            Some(rest[last_slash + i + 1..].to_string()),
        ),
        None => (rest, None),
    };
    let (mut domain, mut path) = match name.split_once('/') {
        Some((first, path))
            // Docker's splitDomain: an upper-case letter makes it a domain too (paths are
            // lower case), as `image_ref::check` reads it; oci-client lacks that rule.
            if first.contains('.')
                || first.contains(':')
                || first == "localhost"
                || first.chars().any(|c| c.is_ascii_uppercase()) =>
        {
            (first.to_string(), path.to_string())
        }
        _ => (DOCKER_HUB.to_string(), name.to_string()),
    };
    if domain == "index.docker.io" {
        domain = DOCKER_HUB.to_string();
    }
    if domain == DOCKER_HUB && !path.contains('/') {
        path = format!("library/{path}");
    }
    Ok(match (tag, digest) {
        (Some(tag), Some(digest)) => Reference::with_tag_and_digest(domain, path, tag, digest),
        (None, Some(digest)) => Reference::with_digest(domain, path, digest),
        (tag, None) => Reference::with_tag(domain, path, tag.unwrap_or_else(|| "latest".into())),
    })
}

#[cfg(test)]
mod tests {
    use super::parse_reference;

    #[test]
    fn splits_references_as_oci_client_does() {
        let digest = format!("sha256:{}", "ab".repeat(32));
        for text in [
            "quay.io/me/bundle:v0.1.0".to_string(),
            "127.0.0.1:5000/a/b/c:1.0_build".to_string(),
            "localhost/x:y".to_string(),
            "redis:7".to_string(),
            "me/redis:7".to_string(),
            "index.docker.io/me/redis:7".to_string(),
            format!("quay.io/me/bundle@{digest}"),
            format!("quay.io/me/bundle:v1@{digest}"),
            "quay.io/me/bundle".to_string(),
        ] {
            let ours = parse_reference(&text).unwrap();
            let theirs: oci_client::Reference = text.parse().unwrap();
            assert_eq!(ours.registry(), theirs.registry(), "{text}");
            assert_eq!(ours.repository(), theirs.repository(), "{text}");
            assert_eq!(ours.tag(), theirs.tag(), "{text}");
            assert_eq!(ours.digest(), theirs.digest(), "{text}");
            assert_eq!(ours.whole(), theirs.whole(), "{text}");
        }
    }

    #[test]
    fn an_upper_case_first_component_is_a_domain_as_in_docker() {
        let reference = parse_reference("Registry-Host/a/b:1").unwrap();
        assert_eq!(reference.registry(), "Registry-Host");
        assert_eq!(reference.repository(), "a/b");
        assert_eq!(reference.whole(), "Registry-Host/a/b:1");
    }

    #[test]
    fn refuses_what_the_grammar_refuses() {
        for text in ["", "quay.io/x:-bad", "a/B:1", "a:b:c", "a@sha256:12"] {
            assert!(parse_reference(text).is_err(), "{text} accepted");
        }
    }
}
