//! The checks: CSV required fields, bundle/CSV consistency, service-account clashes, the
//! size rule, and the operatorframework suite's categories and capabilities.

use std::collections::BTreeSet;
use std::io::Write;

use base64::Engine;
use serde_json::Value;

use super::{Finding, LoadedBundle, Optional, Report};
use crate::manifest::text;

/// The standard OperatorHub categories.
const CATEGORIES: [&str; 16] = [
    "AI/Machine Learning",
    "Application Runtime",
    "Big Data",
    "Cloud Provider",
    "Developer Tools",
    "Database",
    "Integration & Delivery",
    "Logging & Tracing",
    "Monitoring",
    "Modernization & Migration",
    "Networking",
    "OpenShift Optional",
    "Security",
    "Storage",
    "Streaming & Messaging",
    "Observability",
];

/// The capability level names.
pub const CAPABILITIES: [&str; 5] = [
    "Basic Install",
    "Seamless Upgrades",
    "Full Lifecycle",
    "Deep Insights",
    "Auto Pilot",
];

/// The size limit of a bundle's manifests, gzip-compressed and base64-encoded.
const MAX_BUNDLE_SIZE: u64 = 1 << 20;

/// The webhook types OLM's CSV CRD allows.
const WEBHOOK_TYPES: [&str; 3] = [
    "ValidatingAdmissionWebhook",
    "MutatingAdmissionWebhook",
    "ConversionWebhook",
];

/// Runs the default validators (CSV, CRD, bundle) and the selected optional ones.
pub fn run(bundle: &LoadedBundle, optional: &Optional, report: &mut Report) {
    let csv = &bundle.csv;
    let name = text(csv, "/metadata/name").to_string();
    let csv_file = bundle.csv_file.display().to_string();
    let mut add = |finding: Finding| report.findings.push(finding);

    // CSV required fields.
    if name.is_empty() {
        add(Finding {
            field: Some("metadata.name".into()),
            value: None,
            ..Finding::error("", "csv name is empty")
        }
        .in_file(&csv_file));
    }
    if text(csv, "/spec/displayName").is_empty() {
        add(Finding {
            field: Some("spec.displayName".into()),
            value: None,
            ..Finding::error("", "required field missing")
        }
        .in_file(&csv_file));
    }
    let modes = csv
        .pointer("/spec/installModes")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if modes.is_empty() {
        add(Finding::error("", format!("({name}) install modes not found")).in_file(&csv_file));
    } else if !modes.iter().any(|m| m["supported"] == true) {
        add(Finding::error(
            "",
            format!("({name}) none of InstallModeTypes are supported"),
        )
        .in_file(&csv_file));
    }
    for finding in super::csv_metadata::findings(csv, &name) {
        add(finding.in_file(&csv_file));
    }
    for finding in super::examples::findings(csv, &name) {
        add(finding.in_file(&csv_file));
    }
    // Conversion webhooks need the operator to watch every namespace.
    let has_conversion = csv["spec"]["webhookdefinitions"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|w| {
            w["conversionCRDs"]
                .as_array()
                .is_some_and(|c| !c.is_empty())
        });
    let only_all_namespaces = modes.iter().all(|m| {
        let all = m["type"] == "AllNamespaces";
        let supported = m["supported"] == true;
        all == supported
    });
    // OLM's CSV CRD enumerates the webhook types (operator-framework/api's
    // WebhookDescription, `+kubebuilder:validation:Enum`): the API server refuses a CSV with
    // any other when OLM creates it. operator-sdk's validators do not look.
    let webhooks = csv["spec"]["webhookdefinitions"].as_array();
    for (i, webhook) in webhooks.into_iter().flatten().enumerate() {
        let kind = text(webhook, "/type");
        if !WEBHOOK_TYPES.contains(&kind) {
            add(Finding {
                field: Some(format!("spec.webhookdefinitions[{i}].type")),
                ..Finding::error(
                    kind,
                    format!(
                        "({name}) Unsupported value: {kind:?}: supported values: {}",
                        WEBHOOK_TYPES.map(|t| format!("{t:?}")).join(", ")
                    ),
                )
            }
            .in_file(&csv_file));
        }
    }
    if has_conversion && !only_all_namespaces {
        add(Finding::error("", format!(
            "({name}) only AllNamespaces InstallModeType is supported when conversionCRDs is present"
        )).in_file(&csv_file));
    }
    // The CSV type parses spec.version tolerantly (`v1.2` is 1.2.0); opm, when the bundle
    // goes into a catalog, parses it strictly. An error for the first, a warning for the second.
    let version = text(csv, "/spec/version");
    match crate::version_range::parse_version_tolerant(version) {
        Err(e) => add(Finding {
            field: Some("spec.version".into()),
            ..Finding::error(version, format!("not a valid semantic version: {e}"))
        }
        .in_file(&csv_file)),
        Ok(_) => {
            if let Err(e) = crate::version_range::parse_version(version) {
                add(Finding {
                    field: Some("spec.version".into()),
                    ..Finding::warning(
                        version,
                        format!(
                            "not a strict semantic version ({e}); opm will refuse it in a catalog"
                        ),
                    )
                }
                .in_file(&csv_file));
            }
        }
    }
    let min_kube = text(csv, "/spec/minKubeVersion").trim().to_string();
    if min_kube.is_empty() {
        add(Finding::warning("", format!(
            "({name}) csv.Spec.minKubeVersion is not informed. It is recommended you provide this information. Otherwise, it would mean that your operator project can be distributed and installed in any cluster version available, which is not necessarily the case for all projects."
        )).in_file(&csv_file));
    } else if crate::version_range::parse_version(&min_kube).is_err() {
        add(Finding::error(
            "",
            format!("({name}) csv.Spec.MinKubeVersion has an invalid value: {min_kube}"),
        )
        .in_file(&csv_file));
    }

    // Owned CRDs and the CRDs in the bundle must be the same set. Keys are (group, version,
    // kind): the owned entry's group is its name after the first dot, a CRD's is spec.group.
    type Key = (String, String, String);
    let owned: Vec<Key> = csv
        .pointer("/spec/customresourcedefinitions/owned")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|o| {
            let crd_name = text(o, "/name");
            let group = crd_name.split_once('.').map_or(crd_name, |(_, g)| g);
            (
                group.to_string(),
                text(o, "/version").to_string(),
                text(o, "/kind").to_string(),
            )
        })
        .collect();
    // v1 CRDs first, then v1beta1 ones, as upstream lists them; a v1beta1 CRD's single
    // `spec.version` counts only when it has no `spec.versions`.
    let mut keys: Vec<Key> = Vec::new();
    for v1 in [true, false] {
        for (_, crd) in &bundle.crds {
            if (text(crd, "/apiVersion") == "apiextensions.k8s.io/v1") != v1 {
                continue;
            }
            let group = text(crd, "/spec/group").to_string();
            let kind = text(crd, "/spec/names/kind").to_string();
            let versions: Vec<&str> = crd["spec"]["versions"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|v| text(v, "/name"))
                .collect();
            if versions.is_empty() && !v1 {
                let single = text(crd, "/spec/version").to_string();
                keys.push((group.clone(), single, kind.clone()));
            }
            for version in versions {
                keys.push((group.clone(), version.to_string(), kind.clone()));
            }
        }
    }
    let show = |(group, version, kind): &Key| format!("{group}/{version}, Kind={kind}");
    let mut present: BTreeSet<Key> = BTreeSet::new();
    for key in keys {
        if present.contains(&key) {
            add(Finding::error(
                show(&key),
                format!("duplicate CRD {:?} in bundle {name:?}", show(&key)),
            ));
        }
        present.insert(key);
    }
    let mut owned_kinds = BTreeSet::new();
    for key in &owned {
        if present.remove(key) {
            owned_kinds.insert((key.0.clone(), key.2.clone()));
        } else {
            add(Finding::error(
                show(key),
                format!("owned CRD {:?} not found in bundle {name:?}", show(key)),
            ));
        }
    }
    // Versions of an owned CRD that the CSV does not list are fine; CRDs it does not own are not.
    for extra in present
        .iter()
        .filter(|(group, _, kind)| !owned_kinds.contains(&(group.clone(), kind.clone())))
    {
        add(Finding::error(
            show(extra),
            format!(
                "CRD {:?} is present in bundle {name:?} but not defined in CSV",
                show(extra)
            ),
        ));
    }

    for (file, crd) in &bundle.crds {
        for finding in super::crd::findings(crd) {
            add(finding.in_file(file.display().to_string()));
        }
    }

    // Kinds a registry+v1 bundle cannot carry; the others get the metadata check.
    for (file, object) in &bundle.others {
        let kind = text(object, "/kind");
        if crate::bundle::generate::SUPPORTED_KINDS.contains(&kind) {
            if let Some(finding) = super::objects::finding(object) {
                add(finding.in_file(file.display().to_string()));
            }
        } else {
            let api_version = text(object, "/apiVersion");
            let group_version = if api_version.contains('/') {
                api_version.to_string()
            } else {
                format!("/{api_version}")
            };
            add(Finding::error(
                format!("{group_version}, Kind={kind}"),
                "unsupported media type registry+v1 for bundle object",
            )
            .in_file(file.display().to_string()));
        }
    }

    // A ServiceAccount manifest with the name of a CSV deployment's account.
    let csv_accounts: BTreeSet<&str> = csv
        .pointer("/spec/install/spec/deployments")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|d| text(d, "/spec/template/spec/serviceAccountName"))
        .collect();
    for (file, object) in &bundle.others {
        if object["kind"] == "ServiceAccount" {
            let account = text(object, "/metadata/name");
            if csv_accounts.contains(account) {
                add(Finding::error(account, format!(
                    "invalid service account found in bundle. This service account {account} in your bundle is not valid, because a service account with the same name was already specified in your CSV. If this was unintentional, please remove the service account manifest from your bundle. If it was intentional to specify a separate service account, please rename the SA in either the bundle manifest or the CSV."
                )).in_file(file.display().to_string()));
            }
        }
    }

    // Size: every manifest gzip-compressed and base64-encoded, summed.
    let mut compressed = 0u64;
    let mut uncompressed = 0u64;
    for (_, bytes) in &bundle.files {
        uncompressed += bytes.len() as u64;
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        if encoder.write_all(bytes).is_ok()
            && let Ok(gz) = encoder.finish()
        {
            compressed += base64::engine::general_purpose::STANDARD.encode(gz).len() as u64;
        }
    }
    if compressed > MAX_BUNDLE_SIZE {
        add(Finding::error(
            name.clone(),
            format!(
                "maximum bundle compressed size with gzip size exceeded: size=~{} , max={}. Bundle uncompressed size is {}",
                decimal_units(compressed),
                decimal_units(MAX_BUNDLE_SIZE),
                decimal_units(uncompressed)
            ),
        ));
    } else if compressed as f64 > MAX_BUNDLE_SIZE as f64 * 0.85 {
        add(Finding::warning(
            name.clone(),
            format!(
                "nearing maximum bundle compressed size with gzip: size=~{} , max={}. Bundle uncompressed size is {}",
                decimal_units(compressed),
                decimal_units(MAX_BUNDLE_SIZE),
                decimal_units(uncompressed)
            ),
        ));
    }

    if optional.operatorhub {
        for finding in super::operatorhub::findings(csv, &name) {
            add(finding.in_file(&csv_file));
        }
    }
    // Upstream runs the removed-API checks in operatorhubv2 and again in
    // alpha-deprecated-apis, printing each message twice; once is enough.
    if optional.operatorhub || optional.deprecated_apis {
        for finding in super::deprecated_apis::findings(bundle, optional.k8s_version.as_deref()) {
            add(finding.in_file(&csv_file));
        }
    }
    if optional.good_practices {
        for finding in super::good_practices::findings(bundle) {
            add(finding.in_file(&csv_file));
        }
    }
    if optional.multiarch {
        let inspect = super::multiarch::inspect_with_tool;
        for finding in
            super::multiarch::findings(bundle, optional.container_tools.as_deref(), &inspect)
        {
            add(finding);
        }
    }
    if optional.disconnected {
        for finding in super::disconnected::findings(bundle) {
            add(finding.in_file(&csv_file));
        }
    }
    if optional.olm_v1 {
        // Each finding names its own file (the CSV, a CRD or a metadata file).
        for finding in super::olm_v1::findings(bundle) {
            add(finding);
        }
    }
    {
        let annotations = &csv["metadata"]["annotations"];
        if let Some(categories) = annotations
            .get("categories")
            .and_then(Value::as_str)
            .filter(|_| optional.categories)
        {
            for category in categories.split(',') {
                if !CATEGORIES.contains(&category.trim()) {
                    add(Finding::error("", format!(
                        "({name}) csv.Metadata.Annotations[\"categories\"] value {category:?} is not in the set of standard categories"
                    )).in_file(&csv_file));
                }
            }
        }
        if let Some(capability) = annotations.get("capabilities").and_then(Value::as_str)
            && optional.capabilities
            && !CAPABILITIES.contains(&capability)
        {
            add(Finding::error("", format!(
                "({name}) csv.Metadata.Annotations.Capabilities {capability:?} is not a valid capabilities level"
            )).in_file(&csv_file));
        }
    }
    report.findings.sort_by_key(|f| f.level);
}

/// Sizes as upstream prints them: decimal units, one decimal (`1.0 MB`).
fn decimal_units(bytes: u64) -> String {
    const UNIT: f64 = 1000.0;
    if (bytes as f64) < UNIT {
        return format!("{bytes} B");
    }
    let (mut div, mut exp) = (UNIT, 0usize);
    let mut n = bytes as f64 / UNIT;
    while n >= UNIT {
        div *= UNIT;
        exp += 1;
        n /= UNIT;
    }
    format!(
        "{:.1} {}B",
        bytes as f64 / div,
        ['k', 'M', 'G', 'T', 'P', 'E'][exp]
    )
}
