//! `operator-sdk generate bundle` fed what `bundle-tool generate` reads: the operator's
//! manifests and samples on standard input, and the config's metadata as a base CSV under
//! `kustomize/bases` (where operator-sdk keeps base fields). The generate conformance test and
//! the release benchmark both run it.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use anyhow::{Context as _, bail};
use base64::Engine;
use bundle_tool::bundle::GenerateConfig;
use serde_json::{Value, json};

/// Runs `operator-sdk generate bundle` in `out` (which gets `kustomize/`, `bundle/` and
/// `bundle.Dockerfile`), with `stdin` as the manifests and samples stream.
pub fn generate_bundle(
    sdk: &Path,
    config: &GenerateConfig,
    stdin: &str,
    out: &Path,
) -> anyhow::Result<()> {
    generate_bundle_with(sdk, config, stdin, out, &[], &[])
}

/// [`generate_bundle`] with more flags (`--use-image-digests`) and environment variables
/// (`SSL_CERT_FILE` for a registry with a test CA).
pub fn generate_bundle_with(
    sdk: &Path,
    config: &GenerateConfig,
    stdin: &str,
    out: &Path,
    args: &[&str],
    envs: &[(&str, &str)],
) -> anyhow::Result<()> {
    let bases = out.join("kustomize/bases");
    std::fs::create_dir_all(&bases).with_context(|| bases.display().to_string())?;
    std::fs::write(
        bases.join(format!("{}.clusterserviceversion.yaml", config.package)),
        serde_saphyr::to_string(&base_csv(config)?)?,
    )?;
    let mut command = Command::new(sdk);
    command
        .current_dir(out)
        .args(["generate", "bundle", "--kustomize-dir", "kustomize"])
        .args(["--output-dir", "bundle", "--package", &config.package])
        .args(["--version", &config.version])
        .args(["--channels", &config.channels.join(",")]);
    if let Some(default) = &config.default_channel {
        command.args(["--default-channel", default]);
    }
    if !config.extra_service_accounts.is_empty() {
        command.args([
            "--extra-service-accounts",
            &config.extra_service_accounts.join(","),
        ]);
    }
    command.args(args).envs(envs.iter().copied());
    // operator-sdk reads standard input only when it is a pipe.
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| sdk.display().to_string())?;
    child
        .stdin
        .take()
        .context("operator-sdk's standard input")?
        .write_all(stdin.as_bytes())?;
    let output = child.wait_with_output()?;
    if !output.status.success() {
        bail!(
            "operator-sdk generate bundle failed: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    Ok(())
}

/// The base CSV that gives operator-sdk the metadata the config gives bundle-tool: every
/// human-facing field a config can hold, where operator-sdk keeps base fields.
pub fn base_csv(config: &GenerateConfig) -> anyhow::Result<Value> {
    let meta = &config.csv;
    let mut annotations = serde_json::Map::new();
    let mut put = |key: &str, value: &Option<String>| {
        if let Some(value) = value {
            annotations.insert(key.into(), json!(value));
        }
    };
    put("capabilities", &meta.capabilities);
    put("description", &meta.short_description);
    put("repository", &meta.repository);
    put("support", &meta.support);
    put("olm.skipRange", &config.skip_range);
    if !meta.categories.is_empty() {
        annotations.insert("categories".into(), json!(meta.categories.join(", ")));
    }
    for (key, value) in &meta.annotations {
        annotations.insert(key.clone(), json!(value));
    }
    let install_modes: Vec<Value> = [
        "OwnNamespace",
        "SingleNamespace",
        "MultiNamespace",
        "AllNamespaces",
    ]
    .iter()
    .map(|mode| json!({"type": mode, "supported": meta.install_modes.get(*mode).copied().unwrap_or(false)}))
    .collect();
    let mut spec = json!({
        "displayName": meta.display_name,
        "installModes": install_modes,
        "install": {"strategy": "deployment", "spec": {"deployments": null}},
        "customresourcedefinitions": {},
        "version": "0.0.0",
    });
    let mut set = |key: &str, value: Value| {
        if !value.is_null() && value != json!([]) {
            spec[key] = value;
        }
    };
    set("description", json!(meta.description));
    set("keywords", json!(meta.keywords));
    set("maintainers", json!(meta.maintainers));
    set("provider", json!(meta.provider));
    set("links", json!(meta.links));
    set("maturity", json!(meta.maturity));
    set("minKubeVersion", json!(meta.min_kube_version));
    set("replaces", json!(config.replaces));
    set("skips", json!(config.skips));
    if let Some(icon) = &meta.icon {
        let media_type = match icon.extension().and_then(|e| e.to_str()) {
            Some("svg") => "image/svg+xml",
            Some("png") => "image/png",
            Some("jpg") | Some("jpeg") => "image/jpeg",
            _ => "image/gif",
        };
        let data = base64::engine::general_purpose::STANDARD
            .encode(std::fs::read(icon).with_context(|| icon.display().to_string())?);
        set(
            "icon",
            json!([{"base64data": data, "mediatype": media_type}]),
        );
    }
    Ok(json!({
        "apiVersion": "operators.coreos.com/v1alpha1",
        "kind": "ClusterServiceVersion",
        "metadata": {
            "name": format!("{}.v0.0.0", config.package),
            "namespace": "placeholder",
            "annotations": annotations,
        },
        "spec": spec,
    }))
}
