//! Image references without regular expressions. oci-client's `Reference::from_str` compiles
//! the docker reference grammar as a regex on first use: ~40 % of the CPU of a one-image
//! `bundle-tool push` process (perf), which is paid once per process. We check the text with
//! our own grammar checker (`image_ref`) and split it the way docker does instead.

use oci_client::Reference;

/// Parses `[domain[:port]/]path[:tag][@digest]` as opm does (`image_ref::parse`: Docker Hub
/// and `library/` for names without a domain), and `latest` when neither tag nor digest is
/// given.
pub fn parse_reference(text: &str) -> anyhow::Result<Reference> {
    let parts = crate::image_ref::parse(text)
        .map_err(|e| anyhow::anyhow!("{text:?} is not an image reference: {e}"))?;
    let crate::image_ref::Normalized {
        domain,
        path,
        tag,
        digest,
    } = parts;
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
    fn an_upper_case_first_component_is_a_path_as_in_opm() {
        // containers/image (opm's parser) has no upper-case-domain rule; newer docker has.
        let error = parse_reference("Registry-Host/a/b:1")
            .unwrap_err()
            .to_string();
        assert!(
            error.ends_with("repository name must be lowercase"),
            "{error}"
        );
        let reference = parse_reference("Registry.Host/a/b:1").unwrap();
        assert_eq!(reference.registry(), "Registry.Host");
        assert_eq!(reference.repository(), "a/b");
    }

    #[test]
    fn refuses_what_the_grammar_refuses() {
        for text in ["", "quay.io/x:-bad", "a/B:1", "a:b:c", "a@sha256:12"] {
            assert!(parse_reference(text).is_err(), "{text} accepted");
        }
    }
}
