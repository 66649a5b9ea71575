//! Which optional validators run, chosen the way operator-sdk chooses them: a label selector
//! over each validator's `name` and `suite` labels (`--select-optional`), and key=value pairs
//! for them (`--optional-values`).

/// The optional validators we implement: (name label, member of `suite=operatorframework`).
/// `olm-v1` is ours (operator-sdk has no such validator) and in no suite: it is about another
/// installer, so a bundle meant for OLM v0 only should not fail it by default. `disconnected`
/// is ours too, and in no suite, so that the default and the operatorframework suite still
/// say exactly what operator-sdk says (docs/conformance.md). `multiarch`
/// pulls every image the CSV names, with a container tool, and is in no suite, as upstream.
/// The deprecated `operatorhub`/`community` are not implemented; selecting them is refused
/// rather than silently running nothing.
const VALIDATORS: [(&str, bool); 8] = [
    ("operatorhubv2", true),
    ("capabilities", true),
    ("categories", true),
    ("alpha-deprecated-apis", true),
    ("good-practices", true),
    ("olm-v1", false),
    ("multiarch", false),
    ("disconnected", false),
];

/// Names operator-sdk knows but we do not run, so that the refusal can say why.
const NOT_IMPLEMENTED: [&str; 2] = ["operatorhub", "community"];

/// The optional validators selected, and their values.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Optional {
    /// `operatorhubv2`: provider, maintainers, links, version, icon, minKubeVersion.
    pub operatorhub: bool,
    /// `capabilities`: the capability annotation is a known level.
    pub capabilities: bool,
    /// `categories`: the categories annotation uses standard categories.
    pub categories: bool,
    /// `alpha-deprecated-apis`: APIs removed in Kubernetes 1.22, 1.25 and 1.26.
    pub deprecated_apis: bool,
    /// `good-practices`: resource requests, channel names, CRD descriptions, RBAC on CRDs,
    /// CSV naming.
    pub good_practices: bool,
    /// `olm-v1`: what operator-controller v1.11.0 (OLM v1) refuses or treats differently
    /// (docs/olm-v1.md).
    pub olm_v1: bool,
    /// `multiarch`: the platforms of every image the CSV names against its arch and os
    /// labels (operator-framework/api's multiple-architectures validator).
    pub multiarch: bool,
    /// `disconnected`: every image the CSV names (relatedImages, containers, init
    /// containers) pinned by digest.
    pub disconnected: bool,
    /// `container-tools`: the tool `multiarch` inspects images with (docker, podman, none).
    pub container_tools: Option<String>,
    /// `k8s-version`: the Kubernetes version the bundle is meant for; removed APIs become
    /// errors from that version on (as from `spec.minKubeVersion`).
    pub k8s_version: Option<String>,
}

impl Optional {
    /// Every validator of `suite=operatorframework`.
    pub fn operatorframework() -> Self {
        Optional {
            operatorhub: true,
            capabilities: true,
            categories: true,
            deprecated_apis: true,
            good_practices: true,
            olm_v1: false,
            multiarch: false,
            disconnected: false,
            container_tools: None,
            k8s_version: None,
        }
    }

    /// True when any validator is selected.
    pub fn any(&self) -> bool {
        self.operatorhub
            || self.capabilities
            || self.categories
            || self.deprecated_apis
            || self.good_practices
            || self.olm_v1
            || self.multiarch
            || self.disconnected
    }

    /// Selects validators with a label selector like operator-sdk's: requirements
    /// `key=value`, `key==value` or `key!=value` joined by commas, all of which must hold,
    /// over the labels `name` and `suite`.
    pub fn select(selector: &str) -> Result<Self, String> {
        let mut requirements = Vec::new();
        for part in selector.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (key, equal, value) = if let Some((k, v)) = part.split_once("!=") {
                (k, false, v)
            } else if let Some((k, v)) = part.split_once("==") {
                (k, true, v)
            } else if let Some((k, v)) = part.split_once('=') {
                (k, true, v)
            } else {
                return Err(format!(
                    "--select-optional {selector:?}: {part:?} is not key=value or key!=value"
                ));
            };
            let (key, value) = (key.trim(), value.trim());
            if equal && key == "name" && NOT_IMPLEMENTED.contains(&value) {
                return Err(format!(
                    "--select-optional {selector:?}: the {value:?} validator is not implemented by bundle-tool"
                ));
            }
            requirements.push((key.to_string(), equal, value.to_string()));
        }
        if requirements.is_empty() {
            return Err("--select-optional: empty selector".into());
        }
        let mut selected = Optional::default();
        for (name, in_suite) in VALIDATORS {
            let label = |key: &str| match key {
                "name" => Some(name),
                "suite" if in_suite => Some("operatorframework"),
                _ => None,
            };
            let matches = requirements
                .iter()
                .all(|(key, equal, value)| (label(key) == Some(value.as_str())) == *equal);
            if matches {
                match name {
                    "operatorhubv2" => selected.operatorhub = true,
                    "capabilities" => selected.capabilities = true,
                    "categories" => selected.categories = true,
                    "alpha-deprecated-apis" => selected.deprecated_apis = true,
                    "olm-v1" => selected.olm_v1 = true,
                    "multiarch" => selected.multiarch = true,
                    "disconnected" => selected.disconnected = true,
                    _ => selected.good_practices = true,
                }
            }
        }
        if !selected.any() {
            let names: Vec<&str> = VALIDATORS.iter().map(|(n, _)| *n).collect();
            return Err(format!(
                "--select-optional {selector:?} selects no validator; names: {}, suite: operatorframework",
                names.join(", ")
            ));
        }
        Ok(selected)
    }

    /// Applies `--optional-values`: `key=value` pairs separated by commas. `k8s-version` is
    /// used, `container-tools` is multiarch's; `index-path` belongs to a validator we do not
    /// run and is accepted and ignored, as operator-sdk ignores values no selected validator
    /// reads.
    pub fn set_values(&mut self, values: &str) -> Result<(), String> {
        for pair in values.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let Some((key, value)) = pair.split_once('=') else {
                return Err(format!("--optional-values: {pair:?} is not key=value"));
            };
            match key.trim() {
                "k8s-version" => self.k8s_version = Some(value.trim().to_string()),
                "container-tools" => self.container_tools = Some(value.trim().to_string()),
                "index-path" => {}
                other => {
                    return Err(format!(
                        "--optional-values: unknown key {other:?}; known: k8s-version, container-tools, index-path"
                    ));
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_suite_selects_every_validator() {
        assert_eq!(
            Optional::select("suite=operatorframework").unwrap(),
            Optional::operatorframework()
        );
    }

    #[test]
    fn a_name_selects_one_validator_and_not_equal_excludes_one() {
        let one = Optional::select("name=good-practices").unwrap();
        assert!(one.good_practices && !one.operatorhub && !one.deprecated_apis);
        let all_but = Optional::select("suite=operatorframework,name!=good-practices").unwrap();
        assert!(!all_but.good_practices && all_but.operatorhub && all_but.deprecated_apis);
    }

    #[test]
    fn olm_v1_is_selected_by_name_only() {
        let olm_v1 = Optional::select("name=olm-v1").unwrap();
        assert!(olm_v1.olm_v1 && !olm_v1.good_practices && !olm_v1.operatorhub);
        assert!(!Optional::select("suite=operatorframework").unwrap().olm_v1);
        let both = Optional::select("name!=multiarch").unwrap();
        assert!(both.olm_v1 && both.good_practices);
    }

    #[test]
    fn unknown_or_unimplemented_selections_are_refused() {
        assert!(
            Optional::select("name=community")
                .unwrap_err()
                .contains("not implemented")
        );
        assert!(
            Optional::select("suite=other")
                .unwrap_err()
                .contains("selects no validator")
        );
        assert!(Optional::select("suite").is_err());
    }

    #[test]
    fn optional_values_set_the_kubernetes_version() {
        let mut optional = Optional::operatorframework();
        optional
            .set_values("k8s-version=1.25,container-tools=none")
            .unwrap();
        assert_eq!(optional.k8s_version.as_deref(), Some("1.25"));
        assert!(optional.set_values("colour=blue").is_err());
    }
}
