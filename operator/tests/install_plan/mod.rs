//! What an OLM v0 InstallPlan says, read from its JSON: how its bundle reached it, who owns
//! it, and what its steps will create. The shapes are catalog-operator's (OLM v0.46.0,
//! `pkg/controller/operators/catalog/operator.go`): a bundle the catalog serves inline becomes
//! steps carrying each object, while one served by `bundlePath` gets a `bundleLookups` entry,
//! an unpack Job, and steps whose manifest is a reference to the ConfigMap the Job wrote.

use anyhow::{bail, ensure};
use serde_json::Value;

/// How an InstallPlan got its bundle's objects.
#[derive(Debug, PartialEq)]
pub enum BundleSource {
    /// No bundle lookup, and every step carries its own object.
    Inline,
    /// Bundle lookups by image (their paths), and every step a reference to an unpacked
    /// bundle's ConfigMap.
    Unpacked(Vec<String>),
}

/// One step: the object it creates.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Step {
    pub group: String,
    pub version: String,
    pub kind: String,
    pub name: String,
}

impl std::fmt::Display for Step {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.kind, self.name)
    }
}

/// The plan's steps, each as the object it creates.
pub fn steps(plan: &Value) -> Vec<Step> {
    plan["status"]["plan"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|step| {
            let field = |name: &str| {
                step["resource"][name]
                    .as_str()
                    .unwrap_or_default()
                    .to_string()
            };
            Step {
                group: field("group"),
                version: field("version"),
                kind: field("kind"),
                name: field("name"),
            }
        })
        .collect()
}

/// The plan that installs `csv` among `plans` (by `spec.clusterServiceVersionNames`).
pub fn plan_for<'a>(plans: &'a [Value], csv: &str) -> anyhow::Result<&'a Value> {
    let mut found = plans.iter().filter(|plan| {
        plan["spec"]["clusterServiceVersionNames"]
            .as_array()
            .is_some_and(|names| names.iter().any(|n| n == csv))
    });
    let plan = found
        .next()
        .ok_or_else(|| anyhow::anyhow!("no InstallPlan installs {csv}"))?;
    ensure!(
        found.next().is_none(),
        "more than one InstallPlan installs {csv}"
    );
    Ok(plan)
}

/// How `plan` (which installs `csv`) got its bundle; an error when it is neither wholly
/// inline nor wholly unpacked, or has no step creating `csv`.
pub fn bundle_source(plan: &Value, csv: &str) -> anyhow::Result<BundleSource> {
    let steps = plan["status"]["plan"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    ensure!(!steps.is_empty(), "the InstallPlan has no steps: {plan}");
    let lookups: Vec<String> = plan["status"]["bundleLookups"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|lookup| lookup["path"].as_str().unwrap_or_default().to_string())
        .collect();
    let mut inline = Vec::new();
    let mut references = Vec::new();
    let mut csv_inline = false;
    for step in &steps {
        let resource = &step["resource"];
        let name = format!(
            "{}/{}",
            resource["kind"].as_str().unwrap_or_default(),
            resource["name"].as_str().unwrap_or_default()
        );
        let manifest: Value = resource["manifest"]
            .as_str()
            .and_then(|text| serde_json::from_str(text).ok())
            .unwrap_or(Value::Null);
        // An object as OLM's resolver writes it may lack kind and apiVersion (Go's encoding of
        // a typed object: an inline ServiceAccount step has only its metadata); its name is
        // the step's.
        if manifest["kind"] == "ConfigMap" && manifest["catalogSourceName"].is_string() {
            references.push(name);
        } else if !resource["name"].is_null() && manifest["metadata"]["name"] == resource["name"] {
            csv_inline |=
                resource["kind"] == "ClusterServiceVersion" && manifest["metadata"]["name"] == csv;
            inline.push(name);
        } else {
            bail!("the step {name} carries neither its object nor a bundle reference: {manifest}");
        }
    }
    match (lookups.is_empty(), inline.is_empty(), references.is_empty()) {
        (true, false, true) => {
            ensure!(
                csv_inline,
                "no step carries the ClusterServiceVersion {csv} itself: {inline:?}"
            );
            Ok(BundleSource::Inline)
        }
        (false, true, false) => Ok(BundleSource::Unpacked(lookups)),
        _ => bail!(
            "the InstallPlan mixes sources: bundle lookups {lookups:?}, steps carrying their object {inline:?}, steps referring to an unpacked bundle {references:?}"
        ),
    }
}

/// The plans among `plans` not owned by the Subscription with `uid`, as their names: OLM
/// makes each plan with its Subscriptions as owners, which is what removes the plans when
/// the Subscription goes.
pub fn not_owned_by(plans: &[Value], uid: &str) -> Vec<String> {
    plans
        .iter()
        .filter(|plan| {
            !plan["metadata"]["ownerReferences"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|owner| owner["kind"] == "Subscription" && owner["uid"] == uid)
        })
        .map(|plan| {
            plan["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const CSV: &str = "redis-operator.v0.3.0";

    fn step(kind: &str, name: &str, manifest: Value) -> Value {
        json!({"resolving": CSV, "status": "Unknown", "resource": {
            "group": "", "version": "v1", "kind": kind, "name": name,
            "manifest": manifest.to_string(),
        }})
    }

    fn reference() -> Value {
        json!({"kind": "ConfigMap", "name": "abc", "namespace": "olm",
               "catalogSourceName": "redis-operator-catalog", "catalogSourceNamespace": "olm",
               "replaces": ""})
    }

    fn inline_plan() -> Value {
        json!({"spec": {"clusterServiceVersionNames": [CSV]}, "status": {"plan": [
            step("ClusterServiceVersion", CSV,
                 json!({"kind": "ClusterServiceVersion", "metadata": {"name": CSV}})),
            // As OLM v0.46.0 wrote it in a real run: no kind, no apiVersion.
            step("ServiceAccount", "redis-operator",
                 json!({"metadata": {"name": "redis-operator", "namespace": "redis-operator"}})),
        ]}})
    }

    #[test]
    fn a_plan_whose_steps_carry_their_objects_is_inline() {
        assert_eq!(
            bundle_source(&inline_plan(), CSV).unwrap(),
            BundleSource::Inline
        );
        assert_eq!(
            steps(&inline_plan())
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>(),
            [
                format!("ClusterServiceVersion/{CSV}"),
                "ServiceAccount/redis-operator".into()
            ]
        );
    }

    #[test]
    fn a_plan_of_an_unpacked_bundle_is_not_inline() {
        let mut plan = json!({"status": {
            "bundleLookups": [{"path": "quay.io/example/redis-operator-bundle:v0.3.0"}],
            "plan": [step("ClusterServiceVersion", CSV, reference()),
                     step("ServiceAccount", "redis-operator", reference())],
        }});
        assert_eq!(
            bundle_source(&plan, CSV).unwrap(),
            BundleSource::Unpacked(vec!["quay.io/example/redis-operator-bundle:v0.3.0".into()])
        );
        // Lookups with inline steps, or a reference among inline steps: neither.
        plan["status"]["plan"] = inline_plan()["status"]["plan"].clone();
        assert!(bundle_source(&plan, CSV).is_err());
        let mut mixed = inline_plan();
        mixed["status"]["plan"][1] = step("ServiceAccount", "redis-operator", reference());
        assert!(bundle_source(&mixed, CSV).is_err());
        // A manifest that is neither (another object's name, or not an object).
        let mut stray = inline_plan();
        stray["status"]["plan"][1] = step("ServiceAccount", "redis-operator", json!("text"));
        assert!(bundle_source(&stray, CSV).is_err());
        stray["status"]["plan"][1] = step(
            "ServiceAccount",
            "redis-operator",
            json!({"metadata": {"name": "other"}}),
        );
        assert!(bundle_source(&stray, CSV).is_err());
        // No steps yet, or no step carrying the CSV asked about.
        assert!(bundle_source(&json!({"status": {}}), CSV).is_err());
        assert!(bundle_source(&inline_plan(), "redis-operator.v0.1.0").is_err());
    }

    #[test]
    fn plans_without_the_subscription_as_owner_are_named() {
        let plan = |name: &str, owners: Value| json!({"metadata": {"name": name, "ownerReferences": owners}});
        let plans = [
            plan(
                "install-a",
                json!([{"kind": "Subscription", "uid": "sub-1"}]),
            ),
            plan(
                "install-b",
                json!([{"kind": "Subscription", "uid": "sub-2"}]),
            ),
            plan("install-c", Value::Null),
        ];
        assert_eq!(not_owned_by(&plans, "sub-1"), ["install-b", "install-c"]);
        assert!(not_owned_by(&plans[..1], "sub-1").is_empty());
    }

    #[test]
    fn the_plan_for_a_csv_is_found_once() {
        let plans = [inline_plan()];
        assert!(plan_for(&plans, CSV).is_ok());
        assert!(plan_for(&plans, "redis-operator.v0.1.0").is_err());
        let twice = [inline_plan(), inline_plan()];
        assert!(plan_for(&twice, CSV).is_err());
    }
}
