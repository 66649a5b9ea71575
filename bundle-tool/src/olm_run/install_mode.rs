//! Which install mode `run` asks OLM v0 for, checked against the CSV's `spec.installModes`
//! and the namespace's OperatorGroup before anything is applied: OLM itself would only mark
//! the CSV Failed (`UnsupportedOperatorGroup`) after the catalog, Subscription and
//! InstallPlan were made.

use serde_json::Value;

/// An install mode as `--install-mode` names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum InstallMode {
    /// Every namespace (an OperatorGroup without target namespaces).
    AllNamespaces,
    /// The operator's own namespace only.
    OwnNamespace,
    /// One other namespace.
    SingleNamespace(String),
    /// Several namespaces.
    MultiNamespace(Vec<String>),
}

impl InstallMode {
    /// `AllNamespaces`, `OwnNamespace`, `SingleNamespace=NS`, `MultiNamespace=A,B` (as
    /// operator-sdk's `--install-mode` reads them: the names after `=` split on commas,
    /// trimmed and sorted).
    pub fn parse(text: &str) -> Result<InstallMode, String> {
        let (kind, names) = match text.split_once('=') {
            Some((kind, names)) => (kind.trim(), Some(names)),
            None => (text.trim(), None),
        };
        let mut names: Vec<String> = names
            .map(|names| {
                names
                    .split(',')
                    .map(|n| n.trim().to_string())
                    .filter(|n| !n.is_empty())
                    .collect()
            })
            .unwrap_or_default();
        names.sort();
        match (kind, names.len()) {
            ("AllNamespaces", 0) => Ok(InstallMode::AllNamespaces),
            ("OwnNamespace", 0) => Ok(InstallMode::OwnNamespace),
            ("SingleNamespace", 1) => Ok(InstallMode::SingleNamespace(names.remove(0))),
            ("MultiNamespace", n) if n > 0 => Ok(InstallMode::MultiNamespace(names)),
            ("AllNamespaces" | "OwnNamespace", _) => {
                Err(format!("install mode {kind:?} takes no namespaces"))
            }
            ("SingleNamespace", _) => Err(format!(
                "install mode \"SingleNamespace\" takes exactly one namespace, as SingleNamespace=NS (got {text:?})"
            )),
            ("MultiNamespace", _) => Err(format!(
                "install mode \"MultiNamespace\" takes namespaces, as MultiNamespace=A,B (got {text:?})"
            )),
            _ => Err(format!(
                "unknown install mode {kind:?}: one of AllNamespaces, OwnNamespace, SingleNamespace=NS, MultiNamespace=A,B"
            )),
        }
    }

    /// The `spec.installModes[].type` this mode needs.
    pub fn kind(&self) -> &'static str {
        match self {
            InstallMode::AllNamespaces => "AllNamespaces",
            InstallMode::OwnNamespace => "OwnNamespace",
            InstallMode::SingleNamespace(_) => "SingleNamespace",
            InstallMode::MultiNamespace(_) => "MultiNamespace",
        }
    }

    /// The OperatorGroup's `spec.targetNamespaces` for an operator in `namespace`.
    pub fn target_namespaces(&self, namespace: &str) -> Vec<String> {
        match self {
            InstallMode::AllNamespaces => Vec::new(),
            InstallMode::OwnNamespace => vec![namespace.to_string()],
            InstallMode::SingleNamespace(target) => vec![target.clone()],
            InstallMode::MultiNamespace(targets) => targets.clone(),
        }
    }

    /// The mode an OperatorGroup's target namespaces amount to for an operator in
    /// `namespace` (OLM reads an empty list, or `[""]`, as every namespace).
    pub fn of_targets(targets: &[String], namespace: &str) -> InstallMode {
        let targets: Vec<&String> = targets.iter().filter(|t| !t.is_empty()).collect();
        match targets[..] {
            [] => InstallMode::AllNamespaces,
            [one] if one == namespace => InstallMode::OwnNamespace,
            [one] => InstallMode::SingleNamespace(one.clone()),
            _ => {
                let mut names: Vec<String> = targets.into_iter().cloned().collect();
                names.sort();
                InstallMode::MultiNamespace(names)
            }
        }
    }
}

impl std::fmt::Display for InstallMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            InstallMode::AllNamespaces | InstallMode::OwnNamespace => f.write_str(self.kind()),
            InstallMode::SingleNamespace(target) => write!(f, "SingleNamespace={target}"),
            InstallMode::MultiNamespace(targets) => {
                write!(f, "MultiNamespace={}", targets.join(","))
            }
        }
    }
}

/// The install mode types a CSV marks `supported: true`, in its order.
pub fn supported(csv: &Value) -> Vec<String> {
    csv["spec"]["installModes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|mode| mode["supported"] == true)
        .filter_map(|mode| mode["type"].as_str().map(str::to_string))
        .collect()
}

/// Why a mode cannot be used.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum InstallModeError {
    /// The CSV does not support the mode asked for (or the one the namespace's
    /// OperatorGroup gives).
    #[error(
        "{csv} does not support install mode {mode}{because}: its spec.installModes support {}",
        if .supported.is_empty() { "none".to_string() } else { .supported.join(", ") }
    )]
    Unsupported {
        /// The CSV's name.
        csv: String,
        /// The mode.
        mode: String,
        /// Where the mode comes from, when not from the flag.
        because: String,
        /// What the CSV supports.
        supported: Vec<String>,
    },
    /// The namespace's OperatorGroup targets other namespaces than the flag asks for.
    #[error(
        "the namespace's OperatorGroup {group} gives install mode {existing}, not {asked}: change --install-mode or the OperatorGroup"
    )]
    OperatorGroupDiffers {
        /// The OperatorGroup's name.
        group: String,
        /// What it gives.
        existing: String,
        /// What was asked for.
        asked: String,
    },
    /// SingleNamespace naming the operator's own namespace (operator-sdk refuses it too).
    #[error("SingleNamespace={0} is the operator's own namespace: use install mode OwnNamespace")]
    OwnAsSingle(String),
}

/// The mode to install `csv` with in `namespace`: the one asked for, else the existing
/// OperatorGroup's, else the first the CSV supports of AllNamespaces and OwnNamespace.
/// `existing` is the namespace's OperatorGroup, as (name, target namespaces).
pub fn choose(
    csv_name: &str,
    csv: &Value,
    namespace: &str,
    asked: Option<&InstallMode>,
    existing: Option<(&str, &[String])>,
) -> Result<InstallMode, InstallModeError> {
    let supported = supported(csv);
    let unsupported = |mode: &InstallMode, because: String| InstallModeError::Unsupported {
        csv: csv_name.to_string(),
        mode: mode.to_string(),
        because,
        supported: supported.clone(),
    };
    if let Some(InstallMode::SingleNamespace(target)) = asked
        && target == namespace
    {
        return Err(InstallModeError::OwnAsSingle(target.clone()));
    }
    let mode = match (asked, existing) {
        (Some(asked), Some((group, targets))) => {
            let given = InstallMode::of_targets(targets, namespace);
            if given != *asked {
                return Err(InstallModeError::OperatorGroupDiffers {
                    group: group.to_string(),
                    existing: given.to_string(),
                    asked: asked.to_string(),
                });
            }
            given
        }
        (Some(asked), None) => asked.clone(),
        (None, Some((group, targets))) => {
            let given = InstallMode::of_targets(targets, namespace);
            if !supported.iter().any(|s| s == given.kind()) {
                return Err(unsupported(
                    &given,
                    format!(" (the namespace's OperatorGroup {group} gives it)"),
                ));
            }
            given
        }
        (None, None) => {
            return [InstallMode::AllNamespaces, InstallMode::OwnNamespace]
                .into_iter()
                .find(|mode| supported.iter().any(|s| s == mode.kind()))
                .ok_or_else(|| {
                    unsupported(
                        &InstallMode::AllNamespaces,
                        " or OwnNamespace (name one with --install-mode)".into(),
                    )
                });
        }
    };
    if supported.iter().any(|s| s == mode.kind()) {
        Ok(mode)
    } else {
        Err(unsupported(&mode, String::new()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn csv(modes: &[(&str, bool)]) -> Value {
        json!({"spec": {"installModes": modes.iter().map(|(t, s)| json!({"type": t, "supported": s})).collect::<Vec<_>>()}})
    }

    #[test]
    fn parses_operator_sdk_forms() {
        assert_eq!(
            InstallMode::parse("AllNamespaces"),
            Ok(InstallMode::AllNamespaces)
        );
        assert_eq!(
            InstallMode::parse("SingleNamespace=other"),
            Ok(InstallMode::SingleNamespace("other".into()))
        );
        assert_eq!(
            InstallMode::parse("MultiNamespace= b ,a"),
            Ok(InstallMode::MultiNamespace(vec!["a".into(), "b".into()]))
        );
        assert!(InstallMode::parse("SingleNamespace").is_err());
        assert!(InstallMode::parse("OwnNamespace=x").is_err());
        assert!(
            InstallMode::parse("Everywhere")
                .unwrap_err()
                .contains("unknown install mode")
        );
    }

    #[test]
    fn an_unsupported_mode_is_refused_with_what_is_supported() {
        let all_only = csv(&[("OwnNamespace", false), ("AllNamespaces", true)]);
        let error = choose(
            "op.v1",
            &all_only,
            "ns",
            Some(&InstallMode::OwnNamespace),
            None,
        )
        .unwrap_err();
        assert_eq!(
            error.to_string(),
            "op.v1 does not support install mode OwnNamespace: its spec.installModes support AllNamespaces"
        );
        assert_eq!(
            choose("op.v1", &all_only, "ns", None, None),
            Ok(InstallMode::AllNamespaces)
        );
    }

    #[test]
    fn an_existing_operator_group_decides_the_mode() {
        let own_only = csv(&[("OwnNamespace", true), ("AllNamespaces", false)]);
        let targets = vec!["ns".to_string()];
        assert_eq!(
            choose("op.v1", &own_only, "ns", None, Some(("og", &targets))),
            Ok(InstallMode::OwnNamespace)
        );
        let error = choose("op.v1", &own_only, "ns", None, Some(("og", &[]))).unwrap_err();
        assert!(
            error
                .to_string()
                .contains("(the namespace's OperatorGroup og gives it)"),
            "{error}"
        );
        let error = choose(
            "op.v1",
            &own_only,
            "ns",
            Some(&InstallMode::AllNamespaces),
            Some(("og", &targets)),
        )
        .unwrap_err();
        assert!(matches!(
            error,
            InstallModeError::OperatorGroupDiffers { .. }
        ));
    }

    #[test]
    fn single_namespace_naming_its_own_is_refused() {
        let single = csv(&[("SingleNamespace", true)]);
        assert_eq!(
            choose(
                "op.v1",
                &single,
                "ns",
                Some(&InstallMode::SingleNamespace("ns".into())),
                None
            ),
            Err(InstallModeError::OwnAsSingle("ns".into()))
        );
    }
}
