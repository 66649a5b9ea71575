//! The `multiarch` validator (`--select-optional name=multiarch`): do the images a CSV runs
//! offer the platforms its `operatorframework.io/arch.<arch>` and `operatorframework.io/os.<os>`
//! labels declare, and does the manager image offer platforms the labels leave out?
//! operator-framework/api v0.34.0's `MultipleArchitecturesValidator`
//! (pkg/validation/internal/multiarch.go), the version operator-sdk v1.42.3 runs: its rules,
//! in its order, with its messages.
//!
//! Like upstream, each image's platforms come from a container tool (`docker`, the default, or
//! `podman`, from `--optional-values container-tools=…`): `<tool> pull IMAGE`, then
//! `<tool> manifest inspect IMAGE`, retried once; what fails is a warning and the image counts
//! as inspected for every platform. Where upstream walks Go maps (in random order), the
//! images here are taken in sorted order, so that the report is the same on every run.

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

use serde_json::Value;

use super::{Finding, LoadedBundle};
use crate::manifest::text;

const ARCH_LABEL: &str = "operatorframework.io/arch.";
const OS_LABEL: &str = "operatorframework.io/os.";
/// The container operator-sdk scaffolds beside the manager, never taken for it.
const RBAC_PROXY: &str = "kube-rbac-proxy";

/// An image's platform as the tool reports it; `error/error` when it could not be inspected.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct ImagePlatform {
    /// `os`.
    pub os: String,
    /// `architecture`.
    pub architecture: String,
}

impl ImagePlatform {
    fn new(os: &str, architecture: &str) -> Self {
        ImagePlatform {
            os: os.into(),
            architecture: architecture.into(),
        }
    }

    fn error() -> Self {
        ImagePlatform::new("error", "error")
    }

    fn shown(&self) -> String {
        format!("{}/{}", self.os, self.architecture)
    }
}

/// The container tool `--optional-values container-tools=` names, as upstream checks it:
/// empty and `none` mean docker; any other value than docker and podman is an error, with
/// upstream's message (whose two values are in that order).
pub fn container_tool(value: Option<&str>) -> Result<String, String> {
    let tool = value.unwrap_or_default().to_lowercase();
    match tool.as_str() {
        "" | "none" => Ok("docker".into()),
        "docker" | "podman" => Ok(tool),
        _ => Err(format!(
            "invalid value (container-tools) for ({tool}). One of: [docker, podman, none] (If not set, the default value is docker)"
        )),
    }
}

/// The platforms of `image` by `<tool> pull` and `<tool> manifest inspect`, or the error
/// text upstream reports (`<command> failed with error: (<error>) <output>`).
pub fn inspect_with_tool(tool: &str, image: &str) -> Result<Vec<ImagePlatform>, String> {
    run(tool, &["pull", image])?;
    let output = run(tool, &["manifest", "inspect", image])?;
    let parsed: Value = serde_json::from_slice(&output).map_err(|e| e.to_string())?;
    Ok(parsed["manifests"]
        .as_array()
        .map(|entries| {
            entries
                .iter()
                .map(|entry| {
                    ImagePlatform::new(
                        entry["platform"]["os"].as_str().unwrap_or_default(),
                        entry["platform"]["architecture"]
                            .as_str()
                            .unwrap_or_default(),
                    )
                })
                .collect()
        })
        .unwrap_or_default())
}

/// Runs `tool args`, standard output and error together as Go's `CombinedOutput` has them.
fn run(tool: &str, args: &[&str]) -> Result<Vec<u8>, String> {
    let command = std::iter::once(tool)
        .chain(args.iter().copied())
        .collect::<Vec<_>>()
        .join(" ");
    let output = match Command::new("sh")
        .arg("-c")
        .arg("exec \"$0\" \"$@\" 2>&1")
        .arg(tool)
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
    {
        Ok(output) => output,
        Err(e) => return Err(format!("{command} failed with error: ({e}) ")),
    };
    if output.status.code() == Some(127) && !found_on_path(tool) {
        return Err(format!(
            "{command} failed with error: (exec: \"{tool}\": executable file not found in $PATH) "
        ));
    }
    if !output.status.success() {
        let status = match output.status.code() {
            Some(code) => format!("exit status {code}"),
            None => "signal: killed".to_string(),
        };
        return Err(format!(
            "{command} failed with error: ({status}) {}",
            String::from_utf8_lossy(&output.stdout)
        ));
    }
    Ok(output.stdout)
}

fn found_on_path(tool: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|dir| dir.join(tool).is_file()))
}

/// Go's `%q` of a string (the strings here are image references and platform names).
fn quote(text: &str) -> String {
    let mut out = String::from("\"");
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Go's `%q` of a slice of strings: `["a" "b"]`.
fn quote_list<S: AsRef<str>>(items: &[S]) -> String {
    let quoted: Vec<String> = items.iter().map(|s| quote(s.as_ref())).collect();
    format!("[{}]", quoted.join(" "))
}

/// Go's `%s` of a slice of strings: `[a b]`.
fn plain_list(items: &[String]) -> String {
    format!("[{}]", items.join(" "))
}

fn platform_list(platforms: &[ImagePlatform]) -> String {
    let shown: Vec<String> = platforms.iter().map(ImagePlatform::shown).collect();
    quote_list(&shown)
}

/// What the validator gathers from the CSV and the images.
struct Gathered {
    arch_labels: Vec<String>,
    os_labels: Vec<String>,
    manager: BTreeMap<String, Vec<ImagePlatform>>,
    manager_order: Vec<String>,
    others: BTreeMap<String, Vec<ImagePlatform>>,
    related: BTreeMap<String, Vec<ImagePlatform>>,
    affinity: BTreeMap<String, Vec<ImagePlatform>>,
    manager_archs: BTreeSet<String>,
    manager_os: BTreeSet<String>,
    warnings: Vec<String>,
    errors: Vec<String>,
}

/// How an image's platforms are found: given the container tool and the image, its platforms
/// or the error text to report.
pub type Inspect = dyn Fn(&str, &str) -> Result<Vec<ImagePlatform>, String>;

/// The findings of the `multiarch` validator on `bundle`, each image inspected by `inspect`.
pub fn findings(bundle: &LoadedBundle, tool: Option<&str>, inspect: &Inspect) -> Vec<Finding> {
    let csv = &bundle.csv;
    let name = text(csv, "/metadata/name").to_string();
    let file = bundle.csv_file.display().to_string();
    let tool = match container_tool(tool) {
        Ok(tool) => tool,
        Err(message) => return vec![Finding::error(name, message).in_file(file)],
    };
    let mut data = gather(csv);
    for images in [&mut data.manager, &mut data.others, &mut data.related] {
        for (image, platforms) in images.iter_mut() {
            let inspected = inspect(&tool, image).or_else(|_| inspect(&tool, image));
            match inspected {
                Ok(found) => platforms.extend(found),
                Err(error) => {
                    data.warnings
                        .push(format!("unable to inspect the image ({image}) : {error}"));
                    *platforms = vec![ImagePlatform::error()];
                }
            }
        }
    }
    data.load_supported();
    data.check_support_defined();
    data.check_missing_labels(true);
    data.check_missing_labels(false);
    let (others, related) = (data.others.clone(), data.related.clone());
    data.check_other_images(&others);
    data.check_other_images(&related);
    let manager = data.manager.clone();
    data.check_node_affinity(&manager);
    data.check_node_affinity(&others);
    let mut out: Vec<Finding> = data
        .warnings
        .iter()
        .map(|w| Finding::warning(&name, w).in_file(&file))
        .collect();
    out.extend(
        data.errors
            .iter()
            .map(|e| Finding::error(&name, e).in_file(&file)),
    );
    out
}

fn gather(csv: &Value) -> Gathered {
    let labels = csv["metadata"]["labels"].as_object();
    let supported = |prefix: &str| -> Vec<String> {
        labels
            .into_iter()
            .flatten()
            .filter(|(key, value)| key.contains(prefix) && value.as_str() == Some("supported"))
            .map(|(key, _)| key.clone())
            .collect()
    };
    let mut data = Gathered {
        arch_labels: supported(ARCH_LABEL),
        os_labels: supported(OS_LABEL),
        manager: BTreeMap::new(),
        manager_order: Vec::new(),
        others: BTreeMap::new(),
        related: BTreeMap::new(),
        affinity: BTreeMap::new(),
        manager_archs: BTreeSet::new(),
        manager_os: BTreeSet::new(),
        warnings: Vec::new(),
        errors: Vec::new(),
    };
    let deployments: Vec<&Value> = csv
        .pointer("/spec/install/spec/deployments")
        .and_then(Value::as_array)
        .map(|d| d.iter().collect())
        .unwrap_or_default();
    let containers = |deployment: &Value| -> Vec<(String, String)> {
        deployment
            .pointer("/spec/template/spec/containers")
            .and_then(Value::as_array)
            .map(|cs| {
                cs.iter()
                    .map(|c| {
                        (
                            c["name"].as_str().unwrap_or_default().to_string(),
                            c["image"].as_str().unwrap_or_default().to_string(),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    for deployment in &deployments {
        let mut found_manager = false;
        let pod = deployment
            .pointer("/spec/template/spec")
            .unwrap_or(&Value::Null);
        for (container, image) in containers(deployment) {
            if data.manager.contains_key(&image) {
                continue;
            }
            if container == "manager" {
                data.manager.insert(image.clone(), Vec::new());
                data.manager_order.push(image.clone());
                found_manager = true;
            }
            data.affinity.insert(image, affinity_platforms(pod));
        }
        if !found_manager {
            for (container, image) in containers(deployment) {
                if container == RBAC_PROXY || data.manager.contains_key(&image) {
                    continue;
                }
                data.manager.insert(image.clone(), Vec::new());
                data.manager_order.push(image);
            }
        }
    }
    for deployment in &deployments {
        for (_, image) in containers(deployment) {
            if !data.manager.contains_key(&image) {
                data.others.insert(image, Vec::new());
            }
        }
    }
    for related in csv
        .pointer("/spec/relatedImages")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        data.related.insert(
            related["image"].as_str().unwrap_or_default().to_string(),
            Vec::new(),
        );
    }
    data
}

/// The platforms a pod's required node affinity allows: for each term, every `In` value of
/// `kubernetes.io/os` with every `In` value of `kubernetes.io/arch`.
fn affinity_platforms(pod: &Value) -> Vec<ImagePlatform> {
    let terms = pod
        .pointer("/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms")
        .and_then(Value::as_array);
    let mut platforms = Vec::new();
    for term in terms.into_iter().flatten() {
        let (mut arches, mut systems) = (Vec::new(), Vec::new());
        for expression in term["matchExpressions"].as_array().into_iter().flatten() {
            if expression["operator"] != "In" {
                continue;
            }
            let values: Vec<String> = expression["values"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect();
            match expression["key"].as_str() {
                Some("kubernetes.io/arch") => arches = values,
                Some("kubernetes.io/os") => systems = values,
                _ => {}
            }
        }
        for os in &systems {
            for arch in &arches {
                platforms.push(ImagePlatform::new(os, arch));
            }
        }
    }
    platforms
}

impl Gathered {
    fn label_values(labels: &[String], prefix: &str) -> Vec<String> {
        labels.iter().map(|l| l.replace(prefix, "")).collect()
    }

    /// Every arch and OS the labels declare (amd64 and linux without labels) and the manager
    /// images offer.
    fn load_supported(&mut self) {
        self.manager_archs
            .extend(Self::label_values(&self.arch_labels, ARCH_LABEL));
        if self.arch_labels.is_empty() {
            self.manager_archs.insert("amd64".into());
        }
        self.manager_os
            .extend(Self::label_values(&self.os_labels, OS_LABEL));
        if self.os_labels.is_empty() {
            self.manager_os.insert("linux".into());
        }
        for platforms in self.manager.values() {
            for platform in platforms {
                if !platform.architecture.is_empty() {
                    self.manager_archs.insert(platform.architecture.clone());
                }
                if !platform.os.is_empty() {
                    self.manager_os.insert(platform.os.clone());
                }
            }
        }
    }

    /// Errors: an `os.arch` the labels declare that an image does not offer.
    fn check_support_defined(&mut self) {
        let mut systems = Self::label_values(&self.os_labels, OS_LABEL);
        if systems.is_empty() {
            systems.push("linux".into());
        }
        let mut arches = Self::label_values(&self.arch_labels, ARCH_LABEL);
        if arches.is_empty() {
            arches.push("amd64".into());
        }
        let mut unsupported: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for os in &systems {
            for arch in &arches {
                let wanted = format!("{os}.{arch}");
                for images in [&self.manager, &self.others, &self.related] {
                    for (image, platforms) in images {
                        let found = platforms.iter().any(|p| {
                            p.os == "error" || format!("{}.{}", p.os, p.architecture) == wanted
                        });
                        if !found {
                            unsupported
                                .entry(wanted.clone())
                                .or_default()
                                .push(image.clone());
                        }
                    }
                }
            }
        }
        for (platform, mut images) in unsupported {
            images.sort();
            self.errors.push(format!(
                "not all images specified are providing the support described via the CSV labels. Note that (OS.architecture): ({platform}) was not found for the image(s) {}",
                plain_list(&images)
            ));
        }
    }

    /// Warnings: an arch (or OS) the manager images offer that no label declares, unless it
    /// is amd64 (linux) alone.
    fn check_missing_labels(&mut self, arch: bool) {
        let (supported, labels, prefix, default, what, beyond) = if arch {
            (
                &self.manager_archs,
                &self.arch_labels,
                ARCH_LABEL,
                "amd64",
                "Arch(s)",
                "if you support more than amd64 architectures, you MUST,",
            )
        } else {
            (
                &self.manager_os,
                &self.os_labels,
                OS_LABEL,
                "linux",
                "OS(s)",
                "if you support more than linux OS you MUST,",
            )
        };
        let missing: Vec<String> = supported
            .iter()
            .filter(|value| {
                !labels.iter().any(|l| l.contains(value.as_str()))
                    && value.as_str() != "error"
                    && !(value.as_str() == default && supported.len() == 1)
            })
            .cloned()
            .collect();
        if !missing.is_empty() {
            self.warnings.push(format!(
                "check if the CSV is missing the label ({prefix}<value>) for the {what}: {}. Be aware that your Operator manager image {} provides this support. Thus, it is very likely that you want to provide it and {beyond}use the required labels for all which are supported.Otherwise, your solution cannot be listed on the cluster for these architectures",
                quote_list(&missing),
                quote_list(&self.manager_order)
            ));
        }
    }

    /// Warnings: a non-manager or related image without an arch (OS) the manager offers or
    /// the labels declare.
    fn check_other_images(&mut self, images: &BTreeMap<String, Vec<ImagePlatform>>) {
        for (image, platforms) in images {
            for arch in [true, false] {
                let wanted = if arch {
                    &self.manager_archs
                } else {
                    &self.manager_os
                };
                let field = |p: &ImagePlatform| {
                    if arch {
                        p.architecture.clone()
                    } else {
                        p.os.clone()
                    }
                };
                let missing: Vec<String> = wanted
                    .iter()
                    .filter(|value| {
                        value.as_str() != "error"
                            && !platforms
                                .iter()
                                .any(|p| field(p) == "error" || field(p) == **value)
                    })
                    .cloned()
                    .collect();
                if !missing.is_empty() {
                    self.warnings.push(format!(
                        "check if the image {image} should not support {}. Note that this CSV has labels for this {} Your manager image {} are providing this support OR the CSV is configured via labels to support it. Then, please verify if this image should not support it",
                        quote_list(&missing),
                        if arch { "Arch(s)" } else { "OS(s)" },
                        quote_list(&self.manager_order)
                    ));
                }
            }
        }
    }

    /// Warnings: an image whose required node affinity does not match its platforms.
    fn check_node_affinity(&mut self, images: &BTreeMap<String, Vec<ImagePlatform>>) {
        for (image, platforms) in images {
            let valid = !platforms.iter().any(|p| p.architecture == "error");
            let affinity = self.affinity.get(image).cloned().unwrap_or_default();
            if affinity.is_empty() {
                if !valid {
                    self.warnings.push(format!(
                        "check if the CSV is missing a node affinity configuration for the image: {}. ",
                        quote(image)
                    ));
                }
                self.warnings.push(format!(
                    "check if the CSV has a missing or invalid node affinity configuration for the image: {}. The image data suggests the following platforms are supported: {}",
                    quote(image),
                    platform_list(platforms)
                ));
                continue;
            }
            let extra: Vec<ImagePlatform> = affinity
                .iter()
                .filter(|a| !platforms.contains(a))
                .cloned()
                .collect();
            let missing: Vec<ImagePlatform> = platforms
                .iter()
                .filter(|p| !affinity.contains(p))
                .cloned()
                .collect();
            if !extra.is_empty() {
                self.warnings.push(format!(
                    "the CSV includes {} in the node affinity configuration for the image: {}, but the image data suggests the following platforms are supported: {}",
                    platform_list(&extra),
                    quote(image),
                    platform_list(platforms)
                ));
            }
            if !missing.is_empty() {
                self.warnings.push(format!(
                    "the image data indicates {} is supported for the image: {}, but the node affinity configuration for the image only specifies {}",
                    platform_list(&missing),
                    quote(image),
                    platform_list(&affinity)
                ));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bundle(labels: Value, images: &[(&str, &str)], related: &[&str]) -> LoadedBundle {
        let containers: Vec<Value> = images
            .iter()
            .map(|(name, image)| serde_json::json!({"name": name, "image": image}))
            .collect();
        let related: Vec<Value> = related
            .iter()
            .map(|image| serde_json::json!({"name": "x", "image": image}))
            .collect();
        let csv = serde_json::json!({
            "metadata": {"name": "op.v1.0.0", "labels": labels},
            "spec": {
                "install": {"spec": {"deployments": [
                    {"name": "op", "spec": {"template": {"spec": {"containers": containers}}}}
                ]}},
                "relatedImages": related,
            },
        });
        LoadedBundle {
            dir: "b".into(),
            csv,
            csv_file: "b/manifests/op.csv.yaml".into(),
            crds: Vec::new(),
            others: Vec::new(),
            files: Vec::new(),
            annotations: BTreeMap::new(),
        }
    }

    fn both(_: &str, image: &str) -> Result<Vec<ImagePlatform>, String> {
        match image {
            "multi" => Ok(vec![
                ImagePlatform::new("linux", "amd64"),
                ImagePlatform::new("linux", "arm64"),
            ]),
            "amd64-only" => Ok(vec![ImagePlatform::new("linux", "amd64")]),
            _ => Err("podman pull x failed with error: (exit status 125) no".into()),
        }
    }

    fn texts(findings: &[Finding]) -> Vec<String> {
        findings.iter().map(Finding::to_string).collect()
    }

    #[test]
    fn labels_matching_the_manager_image_leave_only_the_affinity_warning() {
        let labels = serde_json::json!({
            "operatorframework.io/arch.amd64": "supported",
            "operatorframework.io/arch.arm64": "supported",
        });
        let found = findings(
            &bundle(labels, &[("manager", "multi")], &[]),
            Some("podman"),
            &both,
        );
        assert_eq!(
            texts(&found),
            [
                "Warning: Value op.v1.0.0: check if the CSV has a missing or invalid node affinity configuration for the image: \"multi\". The image data suggests the following platforms are supported: [\"linux/amd64\" \"linux/arm64\"]"
            ]
        );
    }

    #[test]
    fn a_declared_arch_an_image_lacks_is_an_error_and_an_offered_one_a_warning() {
        let labels = serde_json::json!({"operatorframework.io/arch.arm64": "supported"});
        let found = texts(&findings(
            &bundle(labels, &[("manager", "amd64-only")], &["multi"]),
            None,
            &both,
        ));
        assert!(found.contains(&"Error: Value op.v1.0.0: not all images specified are providing the support described via the CSV labels. Note that (OS.architecture): (linux.arm64) was not found for the image(s) [amd64-only]".to_string()), "{found:#?}");
        assert!(found.iter().any(|f| f.contains("check if the CSV is missing the label (operatorframework.io/arch.<value>) for the Arch(s): [\"amd64\"]")), "{found:#?}");
        let bad = findings(
            &bundle(Value::Null, &[("manager", "multi")], &[]),
            Some("crio"),
            &both,
        );
        assert_eq!(
            texts(&bad),
            [
                "Error: Value op.v1.0.0: invalid value (container-tools) for (crio). One of: [docker, podman, none] (If not set, the default value is docker)"
            ]
        );
    }

    #[test]
    fn an_image_that_cannot_be_inspected_is_a_warning_and_counts_for_every_platform() {
        let found = texts(&findings(
            &bundle(Value::Null, &[("manager", "gone")], &[]),
            Some("podman"),
            &both,
        ));
        assert!(found[0].starts_with("Warning: Value op.v1.0.0: unable to inspect the image (gone) : podman pull x failed"), "{found:#?}");
        assert!(
            found
                .iter()
                .any(|f| f.ends_with("node affinity configuration for the image: \"gone\". "))
        );
        assert!(
            found
                .iter()
                .any(|f| f.ends_with("supported: [\"error/error\"]"))
        );
        assert!(!found.iter().any(|f| f.starts_with("Error")), "{found:#?}");
    }
}
