//! The `good-practices` validator of the operatorframework suite: every container asks for
//! resources, owned and required CRDs are described, channels follow the naming convention,
//! the operator cannot create CRDs, and the CSV is named `<operator>.v<semver>`.

use std::collections::BTreeSet;

use serde_json::Value;

use super::{Finding, LoadedBundle};

/// Where the recommended channel names are explained.
const CHANNEL_NAMING: &str = "https://olm.operatorframework.io/docs/best-practices/channel-naming";

/// The findings for `bundle`; every finding carries the CSV name as its value, as upstream's.
pub fn findings(bundle: &LoadedBundle) -> Vec<Finding> {
    let csv = &bundle.csv;
    let name = csv["metadata"]["name"].as_str().unwrap_or_default();
    let mut out = Vec::new();
    let mut warn = |detail: String| out.push(Finding::warning(name, detail));

    let deployments = &csv["spec"]["install"]["spec"]["deployments"];
    let mut missing_deployments = false;
    if deployments.is_null() {
        missing_deployments = true;
    }
    for deployment in deployments.as_array().into_iter().flatten() {
        for container in deployment["spec"]["template"]["spec"]["containers"]
            .as_array()
            .into_iter()
            .flatten()
        {
            // Upstream only reads a missing `requests` map as missing: an empty map gives
            // zero quantities, which it accepts.
            if container["resources"]["requests"].is_null() {
                warn(format!(
                    "unable to find the resource requests for the container: ({}). It is recommended to ensure the resource request for CPU and Memory. Be aware that for some clusters configurations it is required to specify requests or limits for those values. Otherwise, the system or quota may reject Pod creation. More info: https://master.sdk.operatorframework.io/docs/best-practices/managing-resources/",
                    container["name"].as_str().unwrap_or_default()
                ));
            }
        }
    }

    for relation in ["owned", "required"] {
        for crd in csv["spec"]["customresourcedefinitions"][relation]
            .as_array()
            .into_iter()
            .flatten()
        {
            if crd["description"].as_str().unwrap_or_default().is_empty() {
                warn(format!(
                    "{relation} CRD {:?} has an empty description",
                    crd["name"].as_str().unwrap_or_default()
                ));
            }
        }
    }

    let channels = unconventional_channels(bundle);
    if !channels.is_empty() {
        let quoted: Vec<String> = channels.iter().map(|c| format!("{c:?}")).collect();
        warn(format!(
            "channel(s) [{}] are not following the recommended naming convention: {CHANNEL_NAMING}",
            quoted.join(" ")
        ));
    }

    if may_create_crds(csv) {
        warn("CSV contains permissions to create CRD. An Operator shouldn't deploy or manage other operators (such patterns are known as meta or super operators or include CRDs in its Operands). It's the Operator Lifecycle Manager's job to manage the deployment and lifecycle of operators.  Please, review the design of your solution and if you should not be using Dependency Resolution from OLM instead. More info: https://sdk.operatorframework.io/docs/best-practices/common-recommendation/".into());
    }

    let semver_suffix = version_suffix(name)
        .is_some_and(|suffix| crate::version_range::parse_version(suffix).is_ok());
    if !semver_suffix {
        warn(format!(
            "csv.metadata.Name {name} is not following the versioning convention (MAJOR.MINOR.PATCH e.g 0.0.1): https://semver.org/"
        ));
    }
    if name.split(".v").count() != 2 {
        warn(format!(
            "csv.metadata.Name {name} is not following the recommended naming convention: <operator-name>.v<semver> e.g. memcached-operator.v0.0.1"
        ));
    }

    if missing_deployments {
        out.insert(
            0,
            Finding::error(name, "unable to find a deployment to install in the CSV"),
        );
    }
    out
}

/// Channels of `metadata/annotations.yaml` (and the default channel) that do not start
/// with `candidate`, `stable` or `fast`, trimmed, without duplicates, sorted.
fn unconventional_channels(bundle: &LoadedBundle) -> BTreeSet<String> {
    let annotations = &bundle.annotations;
    let channels = annotations
        .get("operators.operatorframework.io.bundle.channels.v1")
        .map(String::as_str)
        .unwrap_or_default()
        .split(',');
    let default = annotations
        .get("operators.operatorframework.io.bundle.channel.default.v1")
        .map(String::as_str);
    channels
        .chain(default)
        .map(str::trim)
        .filter(|c| {
            !c.is_empty()
                && !["candidate", "stable", "fast"]
                    .iter()
                    .any(|prefix| c.starts_with(prefix))
        })
        .map(str::to_string)
        .collect()
}

/// True when a rule of the CSV's permissions or cluster permissions lets the operator create
/// or patch CustomResourceDefinitions.
fn may_create_crds(csv: &Value) -> bool {
    let strategy = &csv["spec"]["install"]["spec"];
    let contains = |list: &Value, wanted: &[&str]| {
        list.as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .any(|item| wanted.contains(&item))
    };
    ["permissions", "clusterPermissions"]
        .iter()
        .flat_map(|key| strategy[*key].as_array().into_iter().flatten())
        .flat_map(|permission| permission["rules"].as_array().into_iter().flatten())
        .any(|rule| {
            contains(&rule["apiGroups"], &["apiextensions.k8s.io"])
                && contains(
                    &rule["resources"],
                    &["customresourcedefinitions", "*", "[*]"],
                )
                && contains(&rule["verbs"], &["create", "*", "[*]", "patch"])
        })
}

/// The leftmost suffix of `name` shaped like a semantic version
/// (`N.N.N[-pre.release][+build]`), as upstream's regular expression finds it.
fn version_suffix(name: &str) -> Option<&str> {
    (0..name.len())
        .filter(|&i| name.is_char_boundary(i))
        .map(|i| &name[i..])
        .find(|candidate| looks_like_version(candidate))
}

/// True when all of `text` is `N.N.N`, then optionally `-identifiers` and `+build`.
fn looks_like_version(text: &str) -> bool {
    let identifier =
        |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '-');
    let mut rest = text;
    for position in 0..3 {
        let digits = rest.chars().take_while(char::is_ascii_digit).count();
        if digits == 0 {
            return false;
        }
        rest = &rest[digits..];
        if position < 2 {
            match rest.strip_prefix('.') {
                Some(r) => rest = r,
                None => return false,
            }
        }
    }
    let (pre, build) = match rest.split_once('+') {
        Some((pre, build)) => (pre, Some(build)),
        None => (rest, None),
    };
    let pre_ok = pre.is_empty()
        || pre
            .strip_prefix('-')
            .is_some_and(|p| p.split('.').all(identifier));
    pre_ok && build.is_none_or(identifier)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::collections::BTreeMap;

    fn bundle(csv: Value, channels: &str) -> LoadedBundle {
        LoadedBundle {
            dir: "b".into(),
            csv,
            csv_file: "b/manifests/csv.yaml".into(),
            crds: vec![],
            others: vec![],
            files: vec![],
            annotations: BTreeMap::from([(
                "operators.operatorframework.io.bundle.channels.v1".to_string(),
                channels.to_string(),
            )]),
        }
    }

    fn messages(csv: Value, channels: &str) -> Vec<String> {
        findings(&bundle(csv, channels))
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn a_well_behaved_bundle_has_no_findings() {
        let csv = json!({"metadata": {"name": "op.v1.2.3"}, "spec": {
            "customresourcedefinitions": {"owned": [{"name": "as.x.io", "description": "A"}]},
            "install": {"spec": {"deployments": [{"spec": {"template": {"spec": {"containers": [
                {"name": "manager", "resources": {"requests": {"cpu": "10m", "memory": "64Mi"}}}
            ]}}}}]}}
        }});
        assert_eq!(messages(csv, "stable,fast-1"), Vec::<String>::new());
    }

    #[test]
    fn each_bad_practice_is_named() {
        let csv = json!({"metadata": {"name": "op-1.02.3"}, "spec": {
            "customresourcedefinitions": {"owned": [{"name": "as.x.io"}], "required": [{"name": "bs.y.io", "description": ""}]},
            "install": {"spec": {
                "deployments": [{"spec": {"template": {"spec": {"containers": [{"name": "manager"}]}}}}],
                "clusterPermissions": [{"rules": [{"apiGroups": ["apiextensions.k8s.io"], "resources": ["customresourcedefinitions"], "verbs": ["get", "patch"]}]}]
            }}
        }});
        let found = messages(csv, "alpha, stable,beta");
        let expected = [
            "Warning: Value op-1.02.3: unable to find the resource requests for the container: (manager).",
            "Warning: Value op-1.02.3: owned CRD \"as.x.io\" has an empty description",
            "Warning: Value op-1.02.3: required CRD \"bs.y.io\" has an empty description",
            "Warning: Value op-1.02.3: channel(s) [\"alpha\" \"beta\"] are not following",
            "Warning: Value op-1.02.3: CSV contains permissions to create CRD.",
            "Warning: Value op-1.02.3: csv.metadata.Name op-1.02.3 is not following the versioning convention",
            "Warning: Value op-1.02.3: csv.metadata.Name op-1.02.3 is not following the recommended naming convention",
        ];
        assert_eq!(found.len(), expected.len(), "{found:#?}");
        for (f, e) in found.iter().zip(expected) {
            assert!(f.starts_with(e), "{f:?} does not start with {e:?}");
        }
    }

    #[test]
    fn a_csv_without_deployments_is_an_error() {
        let found = messages(json!({"metadata": {"name": "op.v1.0.0"}, "spec": {}}), "");
        assert_eq!(
            found,
            vec!["Error: Value op.v1.0.0: unable to find a deployment to install in the CSV"]
        );
    }

    #[test]
    fn the_version_suffix_is_found_like_upstreams_regex() {
        assert_eq!(version_suffix("op.v0.1.0"), Some("0.1.0"));
        assert_eq!(version_suffix("op.v1.2.3-rc.1+b7"), Some("1.2.3-rc.1+b7"));
        assert_eq!(version_suffix("a.v10.2.3.4"), Some("2.3.4"));
        assert_eq!(version_suffix("op.v1.2"), None);
        assert_eq!(version_suffix("op.v1.2.3+a.b"), None);
    }
}
