//! What changes for a cluster admin between OLD's and NEW's CSV: install modes, the minimum
//! Kubernetes version, owned and required APIs, webhooks, images. Permissions are in
//! `permissions.rs`.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::bundle_contents::BundleContents;
use super::finding::{Finding, Level};

/// Every operator finding between OLD and NEW.
pub fn check_operator(old: &BundleContents, new: &BundleContents) -> Vec<Finding> {
    let mut findings = Vec::new();
    install_modes(old, new, &mut findings);
    min_kube_version(old, new, &mut findings);
    apis(old, new, &mut findings);
    webhooks(old, new, &mut findings);
    images(old, new, &mut findings);
    findings.extend(super::permissions::check_permissions(old, new));
    findings
}

fn supported_modes(csv: &Value) -> BTreeSet<String> {
    csv["spec"]["installModes"]
        .as_array()
        .map(|modes| {
            modes
                .iter()
                .filter(|m| m["supported"].as_bool() == Some(true))
                .filter_map(|m| m["type"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

fn install_modes(old: &BundleContents, new: &BundleContents, findings: &mut Vec<Finding>) {
    let (before, after) = (supported_modes(&old.csv), supported_modes(&new.csv));
    let dropped: Vec<&String> = before.difference(&after).collect();
    if dropped.is_empty() {
        return;
    }
    let join = |set: &BTreeSet<String>| set.iter().cloned().collect::<Vec<_>>().join(",");
    findings.push(Finding::about_csv(
        &new.name,
        Level::Error,
        "installModes",
        "spec.installModes",
        format!(
            "install modes no longer supported: {}",
            dropped.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ")
        ),
        (Some(join(&before)), Some(join(&after))),
        "keep supporting every install mode OLD did: installs in an OperatorGroup of that kind cannot upgrade",
    ));
}

fn min_kube_version(old: &BundleContents, new: &BundleContents, findings: &mut Vec<Finding>) {
    let read = |csv: &Value| csv["spec"]["minKubeVersion"].as_str().map(str::to_string);
    let (before, after) = (read(&old.csv), read(&new.csv));
    let parse = |text: &Option<String>| {
        text.as_deref().and_then(|t| {
            crate::version_range::parse_version_tolerant(t.trim_start_matches('v')).ok()
        })
    };
    let raised = match (parse(&before), parse(&after)) {
        (None, Some(_)) => true,
        (Some(b), Some(a)) => a > b,
        _ => false,
    };
    if raised {
        findings.push(Finding::about_csv(
            &new.name,
            Level::Warning,
            "minKubeVersion",
            "spec.minKubeVersion",
            format!(
                "minKubeVersion raised from {} to {}",
                before.as_deref().unwrap_or("none"),
                after.as_deref().unwrap_or_default()
            ),
            (before, after),
            "clusters older than the new minimum stay on OLD: say so in the release notes, or keep the old minimum",
        ));
    }
}

/// `(kind of API, key)` of every owned or required API: CRDs by name and version, API
/// services by group, version and kind.
fn api_set(csv: &Value, which: &str) -> BTreeSet<String> {
    let mut set = BTreeSet::new();
    for crd in csv["spec"]["customresourcedefinitions"][which]
        .as_array()
        .into_iter()
        .flatten()
    {
        set.insert(format!(
            "{}/{} ({})",
            crd["name"].as_str().unwrap_or_default(),
            crd["version"].as_str().unwrap_or_default(),
            crd["kind"].as_str().unwrap_or_default()
        ));
    }
    for api in csv["spec"]["apiservicedefinitions"][which]
        .as_array()
        .into_iter()
        .flatten()
    {
        set.insert(format!(
            "{}/{} ({}, API service)",
            api["group"].as_str().unwrap_or_default(),
            api["version"].as_str().unwrap_or_default(),
            api["kind"].as_str().unwrap_or_default()
        ));
    }
    set
}

fn apis(old: &BundleContents, new: &BundleContents, findings: &mut Vec<Finding>) {
    let (owned_before, owned_after) = (api_set(&old.csv, "owned"), api_set(&new.csv, "owned"));
    for api in owned_before.difference(&owned_after) {
        findings.push(Finding::about_csv(
            &new.name,
            Level::Error,
            "ownedAPIRemoved",
            "spec.customresourcedefinitions.owned",
            format!("owned API {api} is no longer owned"),
            (Some(api.clone()), None),
            "keep owning every API OLD owned: objects of it would be left with no operator",
        ));
    }
    let (required_before, required_after) =
        (api_set(&old.csv, "required"), api_set(&new.csv, "required"));
    for api in required_after.difference(&required_before) {
        findings.push(Finding::about_csv(
            &new.name,
            Level::Warning,
            "requiredAPIAdded",
            "spec.customresourcedefinitions.required",
            format!("API {api} is newly required"),
            (None, Some(api.clone())),
            "the upgrade waits until another operator provides this API: make sure the catalog has one, and say so in the release notes",
        ));
    }
}

/// Webhooks by `type/generateName`.
fn webhook_set(csv: &Value) -> BTreeSet<String> {
    csv["spec"]["webhookdefinitions"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|w| {
            format!(
                "{} {}",
                w["type"].as_str().unwrap_or_default(),
                w["generateName"].as_str().unwrap_or_default()
            )
        })
        .collect()
}

fn webhooks(old: &BundleContents, new: &BundleContents, findings: &mut Vec<Finding>) {
    let (before, after) = (webhook_set(&old.csv), webhook_set(&new.csv));
    for added in after.difference(&before) {
        findings.push(Finding::about_csv(
            &new.name,
            Level::Warning,
            "webhookAdded",
            "spec.webhookdefinitions",
            format!("webhook added: {added}"),
            (None, Some(added.clone())),
            "a new webhook can reject or change objects that OLD accepted: check existing objects pass it",
        ));
    }
    for removed in before.difference(&after) {
        findings.push(Finding::about_csv(
            &new.name,
            Level::Warning,
            "webhookRemoved",
            "spec.webhookdefinitions",
            format!("webhook removed: {removed}"),
            (Some(removed.clone()), None),
            "a removed conversion webhook breaks CRDs that still convert through it; a removed validating one stops checks users relied on",
        ));
    }
}

/// Container images of the install strategy's deployments, by `deployment/container`.
fn deployment_images(csv: &Value) -> BTreeMap<String, String> {
    let mut images = BTreeMap::new();
    for deployment in csv["spec"]["install"]["spec"]["deployments"]
        .as_array()
        .into_iter()
        .flatten()
    {
        let name = deployment["name"].as_str().unwrap_or_default();
        let pod = &deployment["spec"]["template"]["spec"];
        for list in ["initContainers", "containers"] {
            for container in pod[list].as_array().into_iter().flatten() {
                images.insert(
                    format!("{name}/{}", container["name"].as_str().unwrap_or_default()),
                    container["image"].as_str().unwrap_or_default().to_string(),
                );
            }
        }
    }
    images
}

/// `spec.relatedImages` by name (the image itself when unnamed).
fn related_images(csv: &Value) -> BTreeMap<String, String> {
    csv["spec"]["relatedImages"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|r| {
            let image = r["image"].as_str().unwrap_or_default().to_string();
            let name = r["name"]
                .as_str()
                .filter(|n| !n.is_empty())
                .map(str::to_string);
            (name.unwrap_or_else(|| image.clone()), image)
        })
        .collect()
}

fn images(old: &BundleContents, new: &BundleContents, findings: &mut Vec<Finding>) {
    let pairs = [
        (
            "operatorImage",
            "spec.install.spec.deployments",
            deployment_images(&old.csv),
            deployment_images(&new.csv),
        ),
        (
            "relatedImages",
            "spec.relatedImages",
            related_images(&old.csv),
            related_images(&new.csv),
        ),
    ];
    for (rule, path, before, after) in pairs {
        let keys: BTreeSet<&String> = before.keys().chain(after.keys()).collect();
        for key in keys {
            let (b, a) = (before.get(key), after.get(key));
            if b == a {
                continue;
            }
            let message = match (b, a) {
                (Some(b), Some(a)) => format!("{key}: image changed from {b} to {a}"),
                (None, Some(a)) => format!("{key}: image added: {a}"),
                (Some(b), None) => format!("{key}: image removed: {b}"),
                (None, None) => continue,
            };
            findings.push(Finding::about_csv(
                &new.name,
                Level::Info,
                rule,
                path,
                message,
                (b.cloned(), a.cloned()),
                "check the new image is published, pinned by digest for disconnected installs, and listed in spec.relatedImages",
            ));
        }
    }
}
