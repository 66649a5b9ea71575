//! `--bundle-source REF=DIR`: a local bundle folder standing in for a bundle image, read the
//! same way by `catalog template`, `check-upgrade` and both servers (`bundle-tool serve`,
//! `catalog-server serve`).

use std::path::PathBuf;

/// A `--bundle-source` argument that is not `REF=DIR`.
#[derive(Debug, thiserror::Error)]
#[error("--bundle-source {0:?}: expected REF=DIR")]
pub struct MappingSyntaxError(pub String);

/// Reads a `--bundle-source REF=DIR` argument. An image reference has no `=`, so the first
/// one ends it.
pub fn parse_mapping(spec: &str) -> Result<(String, PathBuf), MappingSyntaxError> {
    spec.split_once('=')
        .filter(|(r, d)| !r.is_empty() && !d.is_empty())
        .map(|(r, d)| (r.to_string(), PathBuf::from(d)))
        .ok_or_else(|| MappingSyntaxError(spec.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_equals_sign_ends_the_reference() {
        let (reference, dir) = parse_mapping("quay.io/a/b:v1=bundles/a=b").unwrap();
        assert_eq!(reference, "quay.io/a/b:v1");
        assert_eq!(dir, PathBuf::from("bundles/a=b"));
    }

    #[test]
    fn an_empty_side_is_refused_with_the_argument_named() {
        for spec in ["=dir", "ref=", "no-equals"] {
            let error = parse_mapping(spec).unwrap_err();
            assert_eq!(
                error.to_string(),
                format!("--bundle-source {spec:?}: expected REF=DIR")
            );
        }
    }
}
