//! What an audit can see of one bundle: everything in its folder, or only what a file-based
//! catalog carries about it (`olm.csv.metadata`, channel entries). Criteria read this view
//! and never the files, so a bundle is parsed once whatever the number of criteria.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

use crate::catalog::declcfg;
use crate::validate::{self, LoadedBundle, Suite};

/// The outcome of one criterion.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// The evidence is there.
    Pass,
    /// The place where the evidence would be was looked at, and it is not there.
    Fail,
    /// The evidence cannot be seen from here (catalog only, no cluster, behaviour).
    Unknown,
}

/// A criterion's outcome and the evidence (or its absence) in words.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Verdict {
    /// Pass, fail or unknown.
    pub outcome: Outcome,
    /// What was found or missed, naming the objects concerned.
    pub detail: String,
}

impl Verdict {
    /// A pass, with what proves it.
    pub fn pass(detail: impl Into<String>) -> Self {
        Verdict {
            outcome: Outcome::Pass,
            detail: detail.into(),
        }
    }

    /// A fail, with what is missing.
    pub fn fail(detail: impl Into<String>) -> Self {
        Verdict {
            outcome: Outcome::Fail,
            detail: detail.into(),
        }
    }

    /// Unknown, with why it cannot be seen.
    pub fn unknown(detail: impl Into<String>) -> Self {
        Verdict {
            outcome: Outcome::Unknown,
            detail: detail.into(),
        }
    }
}

/// Upgrade edges into a bundle.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UpgradeEdges {
    /// The bundle it replaces.
    pub replaces: Option<String>,
    /// Bundles it skips.
    pub skips: Vec<String>,
    /// The `olm.skipRange` it declares.
    pub skip_range: Option<String>,
}

/// What is only visible in a bundle folder (or image): the manifests themselves.
#[derive(Clone, Debug, Default)]
pub struct BundleManifests {
    /// Error messages of the default validators (empty when the bundle is valid).
    pub validation_errors: Vec<String>,
    /// The CRDs in `manifests/`.
    pub crds: Vec<Value>,
    /// The CSV's install deployments (`spec.install.spec.deployments[]`).
    pub deployments: Vec<Value>,
    /// Every RBAC rule of `permissions` and `clusterPermissions`.
    pub rules: Vec<Value>,
    /// The CSV's `permissions` entries as written (service account and its namespaced rules).
    pub permissions: Vec<Value>,
    /// The CSV's `clusterPermissions` entries as written (service account and cluster rules).
    pub cluster_permissions: Vec<Value>,
    /// Objects in `manifests/` other than the CSV and CRDs.
    pub others: Vec<Value>,
    /// The CSV's `spec.webhookdefinitions`.
    pub webhooks: Vec<Value>,
}

/// Results of probing a cluster, one verdict per live criterion id.
#[derive(Clone, Debug, Default)]
pub struct LiveEvidence {
    /// Verdicts keyed by criterion id (`L2.live-conversion`, …).
    pub verdicts: BTreeMap<String, Verdict>,
}

/// Everything an audit knows about one bundle.
#[derive(Clone, Debug, Default)]
pub struct CapabilityEvidence {
    /// The package name.
    pub package: String,
    /// The bundle (CSV) name.
    pub bundle: String,
    /// `spec.version` (or the catalog's `olm.package` version).
    pub version: String,
    /// Where it came from: a folder, an image reference or a catalog folder.
    pub source: String,
    /// The CSV's `metadata.annotations`.
    pub annotations: BTreeMap<String, String>,
    /// `spec.customresourcedefinitions.owned`.
    pub owned: Vec<Value>,
    /// `spec.installModes`.
    pub install_modes: Vec<Value>,
    /// Images of `spec.relatedImages` (or the catalog's `relatedImages`).
    pub related_images: Vec<String>,
    /// Upgrade edges into this bundle.
    pub upgrade: UpgradeEdges,
    /// The manifests; `None` when only a catalog entry was seen.
    pub manifests: Option<BundleManifests>,
    /// Cluster probes; `None` without `--kubeconfig`.
    pub live: Option<LiveEvidence>,
}

fn string_map(value: &Value) -> BTreeMap<String, String> {
    value
        .as_object()
        .map(|map| {
            map.iter()
                .map(|(k, v)| {
                    let text = v
                        .as_str()
                        .map(str::to_string)
                        .unwrap_or_else(|| v.to_string());
                    (k.clone(), text)
                })
                .collect()
        })
        .unwrap_or_default()
}

fn array(value: &Value) -> Vec<Value> {
    value.as_array().cloned().unwrap_or_default()
}

fn text(value: &Value) -> Option<String> {
    value.as_str().filter(|s| !s.is_empty()).map(str::to_string)
}

impl CapabilityEvidence {
    /// The view of a bundle folder already loaded by the validator's loader; `package` comes
    /// from `metadata/annotations.yaml` when the caller has it.
    pub fn from_loaded(bundle: &LoadedBundle, package: &str, source: &str) -> Self {
        let report = validate::validate_loaded(bundle, Suite::Default);
        let validation_errors = report
            .findings
            .iter()
            .filter(|f| f.level == validate::Level::Error)
            .map(|f| f.to_string())
            .collect();
        let csv = &bundle.csv;
        let spec = &csv["spec"];
        let install = &spec["install"]["spec"];
        let rules = ["permissions", "clusterPermissions"]
            .iter()
            .flat_map(|key| array(&install[*key]))
            .flat_map(|p| array(&p["rules"]))
            .collect();
        let annotations = string_map(&csv["metadata"]["annotations"]);
        let upgrade = UpgradeEdges {
            replaces: text(&spec["replaces"]),
            skips: array(&spec["skips"]).iter().filter_map(text).collect(),
            skip_range: annotations
                .get("olm.skipRange")
                .filter(|s| !s.is_empty())
                .cloned(),
        };
        CapabilityEvidence {
            package: package.to_string(),
            bundle: text(&csv["metadata"]["name"]).unwrap_or_default(),
            version: spec["version"]
                .as_str()
                .map(str::to_string)
                .unwrap_or_else(|| spec["version"].to_string()),
            source: source.to_string(),
            annotations,
            owned: array(&spec["customresourcedefinitions"]["owned"]),
            install_modes: array(&spec["installModes"]),
            related_images: array(&spec["relatedImages"])
                .iter()
                .filter_map(|r| text(&r["image"]))
                .collect(),
            upgrade,
            manifests: Some(BundleManifests {
                validation_errors,
                crds: bundle.crds.iter().map(|(_, crd)| crd.clone()).collect(),
                deployments: array(&install["deployments"]),
                rules,
                permissions: array(&install["permissions"]),
                cluster_permissions: array(&install["clusterPermissions"]),
                others: bundle.others.iter().map(|(_, o)| o.clone()).collect(),
                webhooks: array(&spec["webhookdefinitions"]),
            }),
            live: None,
        }
    }

    /// The view of an `olm.bundle` of a file-based catalog: its `olm.csv.metadata` and
    /// `olm.package` properties, related images, and the channel entries naming it.
    pub fn from_catalog(
        bundle: &declcfg::Bundle,
        channels: &[declcfg::Channel],
        source: &str,
    ) -> Self {
        let property = |kind: &str| {
            bundle
                .properties
                .iter()
                .find(|p| p.type_ == kind)
                .map(|p| &p.value)
        };
        let metadata = property(crate::olm_property::CSV_METADATA)
            .map(|v| v.to_value())
            .unwrap_or(Value::Null);
        let version = property(crate::olm_property::PACKAGE)
            .and_then(|v| v.str_field("version"))
            .unwrap_or_default();
        // A bundle may sit in several channels with different edges: any edge counts.
        let mut upgrade = UpgradeEdges::default();
        for entry in channels
            .iter()
            .filter(|c| c.package == bundle.package)
            .flat_map(|c| &c.entries)
            .filter(|e| e.name == bundle.name)
        {
            if upgrade.replaces.is_none() && !entry.replaces.is_empty() {
                upgrade.replaces = Some(entry.replaces.clone());
            }
            for skip in &entry.skips {
                if !upgrade.skips.contains(skip) {
                    upgrade.skips.push(skip.clone());
                }
            }
            if upgrade.skip_range.is_none() && !entry.skip_range.is_empty() {
                upgrade.skip_range = Some(entry.skip_range.clone());
            }
        }
        CapabilityEvidence {
            package: bundle.package.clone(),
            bundle: bundle.name.clone(),
            version,
            source: source.to_string(),
            annotations: string_map(&metadata["annotations"]),
            owned: array(&metadata["crdDescriptions"]["owned"]),
            install_modes: array(&metadata["installModes"]),
            related_images: bundle
                .related_images
                .iter()
                .map(|r| r.image.clone())
                .collect(),
            upgrade,
            manifests: None,
            live: None,
        }
    }

    /// The kinds of the owned APIs, from the CSV (also visible in a catalog).
    pub fn owned_kinds(&self) -> Vec<String> {
        let mut kinds: Vec<String> = self.owned.iter().filter_map(|o| text(&o["kind"])).collect();
        kinds.sort();
        kinds.dedup();
        kinds
    }

    /// The owned CRDs among the manifests (matched by `<plural>.<group>` name), or every CRD
    /// when the CSV lists none by name.
    pub fn owned_crds(&self) -> Option<Vec<&Value>> {
        let manifests = self.manifests.as_ref()?;
        let names: Vec<String> = self.owned.iter().filter_map(|o| text(&o["name"])).collect();
        Some(
            manifests
                .crds
                .iter()
                .filter(|crd| {
                    names.is_empty()
                        || crd["metadata"]["name"]
                            .as_str()
                            .is_some_and(|n| names.iter().any(|m| m == n))
                })
                .collect(),
        )
    }

    /// The verdict of a criterion that needs manifests when only a catalog entry was seen.
    pub fn catalog_only(&self) -> Verdict {
        Verdict::unknown(
            "a catalog entry carries no manifests (no olm.bundle.object): audit the bundle folder or image",
        )
    }
}
