//! A config from an operator's manifests: what `kustomize build`, `helm template` or a folder
//! of YAML deploys. The package name and version come from the operator Deployment's
//! `app.kubernetes.io/*` labels or its image's tag, the install modes from its RBAC
//! (`install_modes.rs`), the samples from custom resources of the CRDs it brings.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::draft::{self, Entry};
use super::install_modes::{MODES, install_modes};
use super::{InitError, InitOptions, Plan};
use crate::manifest::{KubeObject, text};

/// Where the manifests came from.
pub enum ManifestSource<'a> {
    /// A file or folder the config will point at.
    Path(&'a Path),
    /// Standard input: `init` writes them beside the config.
    Stdin,
}

/// The file standard input's operator objects are written to, beside the config.
pub const STDIN_MANIFESTS: &str = "manifests.yaml";
/// The file samples are written to when they cannot be pointed at where they are.
pub const SAMPLES_FILE: &str = "samples.yaml";

/// The config (and any files beside it) for `objects`, read from `source`.
pub fn plan(
    objects: Vec<KubeObject>,
    source: ManifestSource<'_>,
    given_samples: Option<(&Path, Vec<KubeObject>)>,
    config_path: &Path,
    options: &InitOptions,
) -> Result<Plan, InitError> {
    let source_name = match &source {
        ManifestSource::Path(path) => path.to_path_buf(),
        ManifestSource::Stdin => PathBuf::from("-"),
    };
    let owned: BTreeSet<(String, String)> = objects
        .iter()
        .filter(|o| o.id.kind == "CustomResourceDefinition")
        .flat_map(|crd| {
            let value = &crd.document.value;
            let group = text(value, "/spec/group").to_string();
            let kind = text(value, "/spec/names/kind").to_string();
            value["spec"]["versions"]
                .as_array()
                .into_iter()
                .flatten()
                .map(move |v| (format!("{group}/{}", text(v, "/name")), kind.clone()))
                .collect::<Vec<_>>()
        })
        .collect();
    let (mut samples, operator): (Vec<KubeObject>, Vec<KubeObject>) = objects
        .into_iter()
        .partition(|o| owned.contains(&(o.id.api_version.clone(), o.id.kind.clone())));
    // OLM installs into the namespace the user picks (or the suggested one): a Namespace in
    // the manifests is not something a bundle carries.
    let (namespaces, mut operator): (Vec<KubeObject>, Vec<KubeObject>) = operator
        .into_iter()
        .partition(|o| o.id.kind == "Namespace" && o.group().is_empty());
    let left_out: Vec<String> = match source {
        ManifestSource::Stdin => namespaces.iter().map(|n| n.id.name.clone()).collect(),
        ManifestSource::Path(_) => {
            // Still in the files the config points at: generate warns of it there.
            operator.extend(namespaces);
            Vec::new()
        }
    };
    let deployments: Vec<&KubeObject> = operator
        .iter()
        .filter(|o| o.id.kind == "Deployment" && o.group() == "apps")
        .collect();
    let Some(deployment) = deployments.first().copied() else {
        return Err(InitError::NoDeployment {
            manifests: source_name,
        });
    };
    let mut found = Vec::new();

    let (package, package_from) = package_name(deployment, options)?;
    let (version, version_from) = version(deployment, &operator, options)?;
    let modes = install_modes(&operator, &deployments);

    let crds: Vec<String> = operator
        .iter()
        .filter(|o| o.id.kind == "CustomResourceDefinition")
        .map(|o| {
            format!(
                "{} ({})",
                text(&o.document.value, "/spec/names/kind"),
                o.id.name
            )
        })
        .collect();
    found.push(format!("package   {package} ({package_from})"));
    found.push(format!("version   {version} ({version_from})"));
    found.push(format!(
        "owned     {}",
        if crds.is_empty() {
            "no CRD".to_string()
        } else {
            crds.join(", ")
        }
    ));
    let supported: Vec<&str> = MODES.iter().copied().filter(|m| modes.modes[*m]).collect();
    found.push(format!("modes     {}", supported.join(", ")));
    found.push(format!("images    {}", images(&deployments).join(", ")));

    let mut files = Vec::new();
    if !left_out.is_empty() {
        found.push(format!(
            "left out Namespace {} (OLM installs into the namespace the user picks)",
            left_out.join(", ")
        ));
    }
    let manifests_key = match &source {
        ManifestSource::Path(path) => super::relative_to_config(path, config_path),
        ManifestSource::Stdin => {
            let values: Vec<&Value> = operator.iter().map(|o| &o.document.value).collect();
            files.push((
                PathBuf::from(STDIN_MANIFESTS),
                super::yaml_stream(&values).into_bytes(),
            ));
            PathBuf::from(STDIN_MANIFESTS)
        }
    };
    let samples_key = if let Some((path, given)) = given_samples {
        samples.extend(given);
        Some(super::relative_to_config(path, config_path))
    } else if samples.is_empty() {
        None
    } else {
        match samples_in_place(&samples, &source) {
            Some(path) => Some(super::relative_to_config(&path, config_path)),
            None => {
                let values: Vec<&Value> = samples.iter().map(|o| &o.document.value).collect();
                files.push((
                    PathBuf::from(SAMPLES_FILE),
                    super::yaml_stream(&values).into_bytes(),
                ));
                Some(PathBuf::from(SAMPLES_FILE))
            }
        }
    };

    found.push(format!("samples   {}", samples.len()));

    let channels = vec!["alpha".to_string()];
    let mut entries = vec![
        Entry::value("package", package.clone()).noted(format!("From {package_from}.")),
        Entry::value("version", version.clone()).noted(format!(
            "From {version_from}; `generate --version` overrides it."
        )),
        Entry::value("manifests", manifests_key.display().to_string()).noted(match source {
            ManifestSource::Path(_) => {
                "The operator's deployable objects (CRDs, RBAC, Deployment, Services).".to_string()
            }
            ManifestSource::Stdin => format!(
                "The operator's deployable objects, as they came on standard input; write them\nagain (`helm template ... > {STDIN_MANIFESTS}`) when they change."
            ),
        }),
    ];
    if let Some(samples) = &samples_key {
        entries.push(
            Entry::value("samples", samples.display().to_string())
                .noted("Custom resources of the owned APIs, shown as examples (`alm-examples`)."),
        );
    }
    entries.push(Entry::value("output", "bundle"));
    entries.push(
        Entry::value("channels", json!(channels))
            .noted("The channels the bundle joins (operator-sdk's default is alpha)."),
    );
    entries.push(Entry::value("defaultChannel", "alpha"));

    let mut csv = vec![
        Entry::value("displayName", super::display_name(&package)).noted("From the package name."),
        Entry::value("installModes", json!(modes.modes)).noted(modes.reasons.join("\n")),
    ];
    csv.extend(super::author_csv_entries(&package));
    if let Some(namespace) = deployment.id.namespace.as_deref() {
        csv.push(
            Entry::value(
                "annotations",
                json!({"operatorframework.io/suggested-namespace": namespace}),
            )
            .noted("The namespace the manifests deploy the operator to."),
        );
    }
    entries.push(Entry::section("csv", csv));
    entries.push(match &options.registry {
        Some(registry) => super::release_section(&package, &channels, registry),
        None => Entry::section(
            "release",
            vec![
                Entry::value("bundleImage", format!("quay.io/example/{package}-bundle")),
                Entry::value(
                    "catalogImage",
                    format!("quay.io/example/{package}-catalog:latest"),
                ),
                Entry::value("catalog", "catalog"),
                Entry::value("channels", json!(channels)),
            ],
        )
        .for_the_author("where `bundle-tool release` publishes: `init --registry PREFIX` fills it"),
    });

    let for_the_author = draft::author_entries(&entries);
    let header = vec![
        format!(
            "`bundle-tool generate` reads this file: what the {package} bundle needs beyond its"
        ),
        "manifests. Paths are relative to this file. Written by `bundle-tool init`; the keys"
            .into(),
        "under an AUTHOR: comment are for you to fill in (uncomment them). Every key:".into(),
        "docs/config.md.".into(),
    ];
    Ok(Plan {
        config: draft::render(&header, &entries),
        files,
        found,
        for_the_author,
        objects: operator,
        samples,
    })
}

/// The package name and where it came from: `--package`, the Deployment's
/// `app.kubernetes.io/name` label, its namespace less `-system` (kubebuilder's
/// `<project>-system`), or its name.
fn package_name(
    deployment: &KubeObject,
    options: &InitOptions,
) -> Result<(String, String), InitError> {
    let value = &deployment.document.value;
    let labelled = ["app.kubernetes.io/part-of", "app.kubernetes.io/name"]
        .iter()
        .find_map(|label| {
            value["metadata"]["labels"][*label]
                .as_str()
                .filter(|n| super::is_package_name(n))
                .map(|n| (n.to_string(), format!("the Deployment's {label} label")))
        });
    let (name, from) = match (&options.package, labelled) {
        (Some(name), _) => (name.clone(), "--package".to_string()),
        (None, Some(found)) => found,
        (None, None) => match deployment
            .id
            .namespace
            .as_deref()
            .and_then(|ns| ns.strip_suffix("-system"))
        {
            Some(project) => (
                project.to_string(),
                "the Deployment's namespace, less -system".to_string(),
            ),
            None => (
                deployment.id.name.clone(),
                "the Deployment's name".to_string(),
            ),
        },
    };
    if !super::is_package_name(&name) {
        return Err(InitError::PackageName { name, from });
    }
    Ok((name, from))
}

/// The version and where it came from: `--version`, an `app.kubernetes.io/version` label
/// (the Deployment's first), the operator image's tag, else 0.1.0.
fn version(
    deployment: &KubeObject,
    objects: &[KubeObject],
    options: &InitOptions,
) -> Result<(String, String), InitError> {
    if let Some(version) = &options.version {
        let parsed = semver::Version::parse(version.trim_start_matches('v')).map_err(|source| {
            InitError::Version {
                version: version.clone(),
                source,
            }
        })?;
        return Ok((parsed.to_string(), "--version".into()));
    }
    let semver_of = |text: &str| {
        semver::Version::parse(text.trim_start_matches('v'))
            .ok()
            .map(|v| v.to_string())
    };
    let label = "app.kubernetes.io/version";
    let labelled = std::iter::once(deployment)
        .chain(objects.iter())
        .find_map(|o| {
            o.document.value["metadata"]["labels"][label]
                .as_str()
                .and_then(semver_of)
                .map(|v| {
                    (
                        v,
                        format!("the {label} label of {} {}", o.id.kind, o.id.name),
                    )
                })
        });
    if let Some(found) = labelled {
        return Ok(found);
    }
    let image = text(
        &deployment.document.value,
        "/spec/template/spec/containers/0/image",
    );
    let tag = image
        .split('@')
        .next()
        .and_then(|reference| reference.rsplit_once(':'))
        .map(|(_, tag)| tag)
        .filter(|tag| !tag.contains('/'));
    if let Some(version) = tag.and_then(semver_of) {
        return Ok((version, format!("the tag of the operator image {image}")));
    }
    Ok((
        "0.1.0".into(),
        "nothing: no app.kubernetes.io/version label and no version tag on the operator image; set it".into(),
    ))
}

/// Every image the Deployments run, and every `RELATED_IMAGE_*` value, each once.
fn images(deployments: &[&KubeObject]) -> Vec<String> {
    let mut images: Vec<String> = Vec::new();
    for deployment in deployments {
        let pod = &deployment.document.value["spec"]["template"]["spec"];
        for list in ["initContainers", "containers"] {
            for container in pod[list].as_array().into_iter().flatten() {
                let mut found = vec![text(container, "/image").to_string()];
                for env in container["env"].as_array().into_iter().flatten() {
                    if text(env, "/name").starts_with("RELATED_IMAGE_") {
                        found.push(text(env, "/value").to_string());
                    }
                }
                for image in found {
                    if !image.is_empty() && !images.contains(&image) {
                        images.push(image);
                    }
                }
            }
        }
    }
    images
}

/// Where the samples already are, when that place holds nothing else: their one file, or
/// the one folder all their files are in, every document below which is one of them.
fn samples_in_place(samples: &[KubeObject], source: &ManifestSource<'_>) -> Option<PathBuf> {
    if matches!(source, ManifestSource::Stdin) {
        return None;
    }
    let files: BTreeSet<&Path> = samples
        .iter()
        .map(|s| s.document.location.path.as_path())
        .collect();
    let place = if files.len() == 1 {
        files.iter().next()?.to_path_buf()
    } else {
        let mut folders = files.iter().map(|f| f.parent());
        let first = folders.next()??;
        if !folders.all(|f| f == Some(first)) {
            return None;
        }
        first.to_path_buf()
    };
    // Everything at that place must be one of the samples.
    let documents = crate::manifest::read_path(&place).ok()?;
    let at_place = documents.iter().filter(|d| !d.value.is_null()).count();
    let in_samples = samples
        .iter()
        .filter(|s| s.document.location.path.starts_with(&place))
        .count();
    (at_place == in_samples).then_some(place)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::read_stream;

    const MANIFESTS: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  names: {kind: Widget, plural: widgets}
  scope: Namespaced
  versions: [{name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}]
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: widget-operator, namespace: widgets}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: widget-operator, namespace: widgets}
rules: [{apiGroups: [example.com], resources: [widgets], verbs: [get, list, watch]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: widget-operator, namespace: widgets}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: widget-operator}
subjects: [{kind: ServiceAccount, name: widget-operator, namespace: widgets}]
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: widget-operator
  namespace: widgets
  labels: {app.kubernetes.io/name: widget-operator, app.kubernetes.io/version: "2.3.4"}
spec:
  selector: {matchLabels: {app: w}}
  template:
    metadata: {labels: {app: w}}
    spec:
      serviceAccountName: widget-operator
      containers:
      - name: manager
        image: registry.example.com/widget-operator:v2.3.4
        env: [{name: RELATED_IMAGE_AGENT, value: registry.example.com/agent:1.0}]
---
apiVersion: example.com/v1
kind: Widget
metadata: {name: sample, namespace: default}
spec: {size: 1}
"#;

    fn objects(yaml: &str) -> Vec<KubeObject> {
        super::super::objects_of(read_stream(Path::new("all.yaml"), yaml).unwrap()).unwrap()
    }

    #[test]
    fn standard_input_gives_a_config_that_generates_with_the_facts_filled_in() {
        let dir = tempfile::tempdir().unwrap();
        let config_path = dir.path().join("bundle-tool.yaml");
        let plan = plan(
            objects(MANIFESTS),
            ManifestSource::Stdin,
            None,
            &config_path,
            &InitOptions::default(),
        )
        .unwrap();
        plan.check(&config_path).unwrap();
        let config = crate::bundle::GenerateConfig::parse(&plan.config, &config_path).unwrap();
        assert_eq!(config.package, "widget-operator");
        assert_eq!(config.version, "2.3.4");
        assert_eq!(config.csv.display_name, "Widget Operator");
        assert!(config.csv.install_modes["OwnNamespace"]);
        assert!(!config.csv.install_modes["AllNamespaces"]);
        assert!(config.csv.provider.is_none() && config.release.is_none());
        assert_eq!(
            config.csv.annotations["operatorframework.io/suggested-namespace"],
            "widgets"
        );
        // The custom resource went to the samples, the rest to the manifests file.
        let names: Vec<&Path> = plan.files.iter().map(|(p, _)| p.as_path()).collect();
        assert_eq!(names, [Path::new(STDIN_MANIFESTS), Path::new(SAMPLES_FILE)]);
        assert!(!String::from_utf8_lossy(&plan.files[0].1).contains("apiVersion: example.com/v1"));
        assert!(String::from_utf8_lossy(&plan.files[1].1).contains("apiVersion: example.com/v1"));
        assert_eq!(plan.samples.len(), 1);
        let authors: Vec<&str> = plan
            .for_the_author
            .iter()
            .map(|(k, _)| k.as_str())
            .collect();
        for key in [
            "csv.provider",
            "csv.maintainers",
            "csv.description",
            "release",
        ] {
            assert!(authors.contains(&key), "{authors:?}");
        }
        assert!(
            plan.config.contains("# AUTHOR: who ships the operator"),
            "{}",
            plan.config
        );
        assert!(
            plan.found
                .iter()
                .any(|l| l.contains("registry.example.com/agent:1.0"))
        );
    }

    #[test]
    fn the_image_tag_gives_the_version_and_the_registry_fills_release() {
        let yaml = MANIFESTS.replace(", app.kubernetes.io/version: \"2.3.4\"", "");
        let dir = tempfile::tempdir().unwrap();
        let config_path = dir.path().join("bundle-tool.yaml");
        let options = InitOptions {
            registry: Some("quay.io/me/".into()),
            ..Default::default()
        };
        let plan = plan(
            objects(&yaml),
            ManifestSource::Stdin,
            None,
            &config_path,
            &options,
        )
        .unwrap();
        let config = crate::bundle::GenerateConfig::parse(&plan.config, &config_path).unwrap();
        assert_eq!(config.version, "2.3.4");
        assert!(
            plan.found[1].contains("tag of the operator image"),
            "{:?}",
            plan.found
        );
        let release = config.release.unwrap();
        assert_eq!(
            release.bundle_image.as_deref(),
            Some("quay.io/me/widget-operator-bundle")
        );
        assert_eq!(
            release.catalog_image.as_deref(),
            Some("quay.io/me/widget-operator-catalog:latest")
        );
    }

    #[test]
    fn a_samples_folder_is_pointed_at_and_a_bad_name_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let (operator, sample) = MANIFESTS
            .rsplit_once("---\napiVersion: example.com/v1")
            .unwrap();
        std::fs::create_dir_all(dir.path().join("deploy/samples")).unwrap();
        std::fs::write(dir.path().join("deploy/operator.yaml"), operator).unwrap();
        std::fs::write(
            dir.path().join("deploy/samples/widget.yaml"),
            format!("apiVersion: example.com/v1{sample}"),
        )
        .unwrap();
        let config_path = dir.path().join("bundle-tool.yaml");
        let manifests = dir.path().join("deploy");
        let read = super::super::read_objects(&manifests).unwrap();
        let plan = plan(
            read.clone(),
            ManifestSource::Path(&manifests),
            None,
            &config_path,
            &InitOptions::default(),
        )
        .unwrap();
        assert!(plan.files.is_empty());
        let config = crate::bundle::GenerateConfig::parse(&plan.config, &config_path).unwrap();
        assert_eq!(config.manifests.unwrap(), dir.path().join("deploy"));
        assert_eq!(
            config.samples.unwrap(),
            dir.path().join("deploy/samples/widget.yaml")
        );

        let options = InitOptions {
            package: Some("Widget_Operator".into()),
            ..Default::default()
        };
        let error = super::plan(
            read,
            ManifestSource::Path(&manifests),
            None,
            &config_path,
            &options,
        )
        .unwrap_err();
        assert!(error.to_string().contains("give --package"), "{error}");
        let error = super::plan(
            objects("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"),
            ManifestSource::Stdin,
            None,
            &config_path,
            &InitOptions::default(),
        )
        .unwrap_err();
        assert_eq!(
            error.to_string(),
            "-: no Deployment (apps/v1): init needs the operator's Deployment to package it"
        );
    }
}
