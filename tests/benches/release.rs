//! `bundle-tool release` end to end against the same release made with the reference tools,
//! on the same inputs, into the same local registry (Debian's docker-registry on loopback), in
//! one run: a new version (0.4.0) of the Redis operator into `candidate-v0`, from a copy of
//! the repository's `bundle-tool.yaml`, `operator/config` and `catalog/`.
//!
//! The reference steps are what a Makefile without Docker does:
//! 1. `operator-sdk generate bundle` (manifests and samples on stdin, the config's metadata as
//!    a base CSV, as the generate conformance test feeds it);
//! 2. `operator-sdk bundle validate --select-optional suite=operatorframework`;
//! 3. the bundle image with `umoci` (`bundle.Dockerfile`'s two COPYs as two inserted layers,
//!    its labels) and `skopeo copy` to the registry;
//! 4. `opm render` of the pushed bundle image, the bundle and its channel entry added to
//!    `catalog.json` (what `opm render >> catalog.json` plus an edit does), `opm validate`;
//! 5. the catalog image as `opm generate dockerfile` writes it (`/bin/opm`, `/configs`, the
//!    cache from `opm serve --cache-only`, the same entrypoint and label) with `umoci`, and
//!    `skopeo copy`.
//!
//! It has no capability audit, security review or upgrade check (ours runs them, with
//! `minLevel: 3`).
//!
//! Two cases, each round: **cold**, the first release on a machine (ours with its layer cache
//! off, so the server is compressed into the catalog image; the reference compresses `opm`
//! into its catalog image with umoci), and **warm**, every release after it (ours finds the
//! server's compressed part in its layer cache; the reference starts the catalog image from a
//! layout that already holds the opm layer, as `docker build` reuses the pulled opm base
//! image). Every push goes to a repository of its own, so no blob is in it already; a blob
//! the registry holds in another repository may be mounted from there instead of sent, as
//! skopeo does for the blobs its blob-info cache has seen and ours for the large blobs its
//! layer cache saw it push (warm only: ours runs cold with no cache).
//!
//! ```sh
//! cargo build --release -p bundle-tool -p catalog-server && cargo bench -p e2e --bench release
//! ```
//!
//! The catalog image's server is the `catalog-server` beside the bundle-tool that runs the
//! release (dynamically linked here, so its libraries come along and `ldd` runs each time);
//! `E2E_CATALOG_SERVER` names a statically linked one instead, as a release job builds it
//! (`RUSTFLAGS="-C target-feature=+crt-static" cargo build --release -p catalog-server
//! --target x86_64-unknown-linux-gnu`).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail, ensure};
use bundle_tool::bundle::GenerateConfig;
use e2e::assets::Assets;
use e2e::bench_run::median;
use e2e::{OciRegistry, RegistryAuth};
use serde_json::{Value, json};

/// Rounds unless `RELEASE_BENCH_ROUNDS` says how many.
const ROUNDS: usize = 3;
const VERSION: &str = "0.4.0";
const CHANNEL: &str = "candidate-v0";
/// `createdAt` pinned, as the committed catalog's bundles are.
const SOURCE_DATE_EPOCH: &str = "1764460800";

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// A fresh copy of what a release reads.
fn inputs() -> anyhow::Result<tempfile::TempDir> {
    let dir = tempfile::Builder::new()
        .prefix("release-bench-")
        .tempdir()?;
    std::fs::copy(
        workspace().join("bundle-tool.yaml"),
        dir.path().join("bundle-tool.yaml"),
    )?;
    e2e::copy_dir(
        &workspace().join("operator/config"),
        &dir.path().join("operator/config"),
    )?;
    e2e::copy_dir(&workspace().join("catalog"), &dir.path().join("catalog"))?;
    Ok(dir)
}

/// Runs `command`, failing with its output unless it succeeds; returns its standard output.
fn run(command: &mut Command) -> anyhow::Result<Vec<u8>> {
    let output = command.output().with_context(|| format!("{command:?}"))?;
    if !output.status.success() {
        bail!(
            "{command:?} failed: {}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }
    Ok(output.stdout)
}

/// One timed step of the reference chain.
struct Steps {
    times: Vec<(&'static str, Duration)>,
}

impl Steps {
    fn time<T>(
        &mut self,
        name: &'static str,
        step: impl FnOnce() -> anyhow::Result<T>,
    ) -> anyhow::Result<T> {
        let started = Instant::now();
        let out = step().with_context(|| name)?;
        self.times.push((name, started.elapsed()));
        Ok(out)
    }

    fn total(&self) -> Duration {
        self.times.iter().map(|(_, d)| *d).sum()
    }
}

/// `bundle-tool release --push`, the whole job in one command, with its layer cache in
/// `cache` (an empty path: no cache).
fn ours(dir: &Path, registry: &str, round: &str, cache: &Path) -> anyhow::Result<Duration> {
    let started = Instant::now();
    let out = run(Command::new(e2e::bundle_tool_binary())
        .current_dir(dir)
        .args([
            "release",
            "--config",
            "bundle-tool.yaml",
            "--version",
            VERSION,
        ])
        .args(["--channels", CHANNEL])
        .args([
            "--bundle-image",
            &format!("{registry}/{round}/redis-operator-bundle"),
        ])
        .args([
            "--catalog-image",
            &format!("{registry}/{round}/redis-operator-catalog:latest"),
        ])
        .args(["--push", "--plain-http", "-o", "json"])
        .env("SOURCE_DATE_EPOCH", SOURCE_DATE_EPOCH)
        .envs(
            std::env::var_os("E2E_CATALOG_SERVER")
                .map(|server| (bundle_tool::image::SERVER_BINARY_VARIABLE, server)),
        )
        .env(bundle_tool::image::CACHE_DIR_VARIABLE, cache))?;
    let elapsed = started.elapsed();
    let summary: Value = serde_json::from_slice(&out)?;
    ensure!(
        summary["pushed"] == true && summary["changed"] == true,
        "the release did not push: {summary}"
    );
    Ok(elapsed)
}

/// An image built with umoci in `layout` under `tag`: `layers` inserted as (source, path in
/// the image), then `config` arguments (`--config.label`, entrypoint, ...).
fn umoci_image(
    layout: &Path,
    tag: &str,
    layers: &[(&Path, &str)],
    config: &[String],
) -> anyhow::Result<()> {
    let image = format!("{}:{tag}", layout.display());
    if !layout.exists() {
        run(Command::new("umoci").args(["init", "--layout"]).arg(layout))?;
    }
    run(Command::new("umoci").args(["new", "--image", &image]))?;
    add_layers(layout, tag, layers, config)
}

/// `layers` inserted into the image `tag` of `layout`, then `config` arguments.
fn add_layers(
    layout: &Path,
    tag: &str,
    layers: &[(&Path, &str)],
    config: &[String],
) -> anyhow::Result<()> {
    let image = format!("{}:{tag}", layout.display());
    for (source, target) in layers {
        run(Command::new("umoci")
            .args(["insert", "--rootless", "--image", &image])
            .arg(source)
            .arg(target))?;
    }
    if !config.is_empty() {
        run(Command::new("umoci")
            .args(["config", "--image", &image])
            .args(config))?;
    }
    Ok(())
}

fn skopeo_push(layout: &Path, tag: &str, reference: &str) -> anyhow::Result<()> {
    run(Command::new("skopeo")
        .args(["--insecure-policy", "copy", "--dest-tls-verify=false", "-q"])
        .arg(format!("oci:{}:{tag}", layout.display()))
        .arg(format!("docker://{reference}")))?;
    Ok(())
}

/// The `LABEL` lines of a Dockerfile, as `--config.label key=value` arguments.
fn dockerfile_labels(dockerfile: &Path) -> anyhow::Result<Vec<String>> {
    let text = std::fs::read_to_string(dockerfile)?;
    let labels: Vec<String> = text
        .lines()
        .filter_map(|line| line.strip_prefix("LABEL "))
        .flat_map(|label| ["--config.label".to_string(), label.trim().to_string()])
        .collect();
    ensure!(!labels.is_empty(), "{} has no LABEL", dockerfile.display());
    Ok(labels)
}

/// Adds `bundle` (an `olm.bundle` from `opm render`) to `catalog.json` and to `CHANNEL`,
/// replacing the channel's head.
fn add_to_catalog(catalog_json: &Path, bundle: Value) -> anyhow::Result<()> {
    let text = std::fs::read_to_string(catalog_json)?;
    let mut documents: Vec<Value> = serde_json::Deserializer::from_str(&text)
        .into_iter::<Value>()
        .collect::<Result<_, _>>()?;
    let name = bundle["name"].as_str().context("bundle name")?.to_string();
    let channel = documents
        .iter_mut()
        .find(|d| d["schema"] == "olm.channel" && d["name"] == CHANNEL)
        .context("no candidate-v0 channel")?;
    let entries = channel["entries"].as_array_mut().context("entries")?;
    let replaced: Vec<&str> = entries
        .iter()
        .filter_map(|e| e["replaces"].as_str())
        .collect();
    let head = entries
        .iter()
        .filter_map(|e| e["name"].as_str())
        .find(|n| !replaced.contains(n))
        .context("no channel head")?
        .to_string();
    entries.push(json!({"name": name, "replaces": head}));
    documents.push(bundle);
    let mut out = String::new();
    for document in &documents {
        out.push_str(&serde_json::to_string_pretty(document)?);
        out.push('\n');
    }
    std::fs::write(catalog_json, out)?;
    Ok(())
}

/// The opm base of the catalog image made once, as `docker build` finds the pulled opm base
/// image's layers: an OCI layout whose `catalog` image holds `/bin/opm` only.
fn opm_base_layout(assets: &Assets, dir: &Path) -> anyhow::Result<PathBuf> {
    let layout = dir.join("opm-base");
    let opm = assets.opm()?;
    umoci_image(&layout, "catalog", &[(opm.as_path(), "/bin/opm")], &[])?;
    Ok(layout)
}

/// The same release, step by step with the reference tools; with `base`, the catalog image
/// starts from that layout's opm layer instead of compressing `opm` again.
fn reference(
    assets: &Assets,
    dir: &Path,
    registry: &str,
    round: &str,
    base: Option<&Path>,
) -> anyhow::Result<Steps> {
    let sdk = assets.operator_sdk()?;
    let opm = assets.opm()?;
    let mut steps = Steps { times: Vec::new() };
    let work = dir.join("reference");
    std::fs::create_dir_all(&work)?;
    let mut config = GenerateConfig::load(&dir.join("bundle-tool.yaml"))?;
    config.version = VERSION.into();
    config.channels = vec![CHANNEL.into()];
    config.default_channel = Some(CHANNEL.into());

    steps.time("operator-sdk generate bundle", || {
        let mut stdin = std::fs::read_to_string(config.manifests.as_ref().context("manifests")?)?;
        let samples = config.samples.as_ref().context("samples")?;
        let mut files: Vec<PathBuf> = std::fs::read_dir(samples)?
            .map(|e| e.map(|e| e.path()))
            .collect::<Result<_, _>>()?;
        files.sort();
        for file in files {
            stdin.push_str("\n---\n");
            stdin.push_str(&std::fs::read_to_string(&file)?);
        }
        e2e::operator_sdk::generate_bundle(&sdk, &config, &stdin, &work)
    })?;
    steps.time("operator-sdk bundle validate", || {
        run(Command::new(&sdk)
            .current_dir(&work)
            .args(["bundle", "validate", "bundle"])
            .args(["--select-optional", "suite=operatorframework"]))
    })?;
    let bundle_ref = format!("{registry}/{round}/redis-operator-bundle:v{VERSION}");
    let layout = work.join("oci");
    steps.time("bundle image (umoci)", || {
        umoci_image(
            &layout,
            "bundle",
            &[
                (&work.join("bundle/manifests"), "/manifests/"),
                (&work.join("bundle/metadata"), "/metadata/"),
            ],
            &dockerfile_labels(&work.join("bundle.Dockerfile"))?,
        )
    })?;
    steps.time("bundle push (skopeo)", || {
        skopeo_push(&layout, "bundle", &bundle_ref)
    })?;
    let catalog = dir.join("catalog");
    steps.time("opm render + catalog edit", || {
        let rendered = run(Command::new(&opm)
            .args(["render", &bundle_ref, "--use-http", "-o", "json"])
            .env("HOME", &work))?;
        let bundle: Value = serde_json::from_slice(&rendered)?;
        ensure!(bundle["schema"] == "olm.bundle", "opm render gave {bundle}");
        add_to_catalog(&catalog.join("redis-operator/catalog.json"), bundle)
    })?;
    steps.time("opm validate", || {
        run(Command::new(&opm).arg("validate").arg(&catalog))
    })?;
    steps.time("catalog image (opm --cache-only, umoci)", || {
        let cache = work.join("cache");
        run(Command::new(&opm)
            .arg("serve")
            .arg(&catalog)
            .arg(format!("--cache-dir={}", cache.display()))
            .arg("--cache-only"))?;
        let config: Vec<String> = [
            "--config.entrypoint",
            "/bin/opm",
            "--config.cmd",
            "serve",
            "--config.cmd",
            "/configs",
            "--config.cmd",
            "--cache-dir=/tmp/cache",
            "--config.label",
            "operators.operatorframework.io.index.configs.v1=/configs",
        ]
        .map(String::from)
        .to_vec();
        match base {
            None => umoci_image(
                &layout,
                "catalog",
                &[
                    (opm.as_path(), "/bin/opm"),
                    (catalog.as_path(), "/configs/"),
                    (cache.as_path(), "/tmp/cache/"),
                ],
                &config,
            ),
            Some(base) => {
                // Blobs hard-linked (content-addressed, never rewritten), the index copied.
                let catalog_layout = work.join("oci-catalog");
                run(Command::new("cp").arg("-al").arg(base).arg(&catalog_layout))?;
                std::fs::remove_file(catalog_layout.join("index.json"))?;
                std::fs::copy(base.join("index.json"), catalog_layout.join("index.json"))?;
                add_layers(
                    &catalog_layout,
                    "catalog",
                    &[
                        (catalog.as_path(), "/configs/"),
                        (cache.as_path(), "/tmp/cache/"),
                    ],
                    &config,
                )
            }
        }
    })?;
    let catalog_layout = match base {
        None => layout.clone(),
        Some(_) => work.join("oci-catalog"),
    };
    steps.time("catalog push (skopeo)", || {
        skopeo_push(
            &catalog_layout,
            "catalog",
            &format!("{registry}/{round}/redis-operator-catalog:latest"),
        )
    })?;
    Ok(steps)
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    for tool in ["umoci", "skopeo"] {
        ensure!(
            Command::new(tool).arg("--version").output().is_ok(),
            "{tool} is missing: apt-get install {tool}"
        );
    }
    let assets = Assets::locate()?;
    match std::env::var_os("E2E_CATALOG_SERVER") {
        Some(server) => println!("catalog image server: {}", Path::new(&server).display()),
        None => println!(
            "catalog image server: {} (beside the releasing binary)",
            e2e::catalog_server_binary().display()
        ),
    }
    let registry = OciRegistry::start(RegistryAuth::Anonymous).await?;
    let host = registry.host();
    let scratch = tempfile::Builder::new()
        .prefix("release-bench-")
        .tempdir()?;
    // Warm: what every release after the first finds. Ours has the server's compressed part in
    // its layer cache (filled by one untimed release); the reference starts its catalog image
    // from a layout holding the opm layer, as `docker build` reuses the pulled opm base image.
    let cache = scratch.path().join("layer-cache");
    ours(inputs()?.path(), &host, "warm-up", &cache)?;
    let base = opm_base_layout(&assets, scratch.path())?;
    let mut ours_cold = Vec::new();
    let mut ours_warm = Vec::new();
    let mut theirs_cold = Vec::new();
    let mut theirs_warm = Vec::new();
    let rounds: usize = match std::env::var("RELEASE_BENCH_ROUNDS") {
        Ok(text) => text
            .parse()
            .with_context(|| format!("RELEASE_BENCH_ROUNDS={text:?} is not a number"))?,
        Err(_) => ROUNDS,
    };
    // Alternated rounds, so that a slow moment of the machine hits both.
    for round in 0..rounds {
        ours_cold.push(
            ours(
                inputs()?.path(),
                &host,
                &format!("ours-cold-{round}"),
                Path::new(""),
            )?
            .as_secs_f64(),
        );
        theirs_cold.push(reference(
            &assets,
            inputs()?.path(),
            &host,
            &format!("theirs-cold-{round}"),
            None,
        )?);
        ours_warm.push(
            ours(
                inputs()?.path(),
                &host,
                &format!("ours-warm-{round}"),
                &cache,
            )?
            .as_secs_f64(),
        );
        theirs_warm.push(reference(
            &assets,
            inputs()?.path(),
            &host,
            &format!("theirs-warm-{round}"),
            Some(&base),
        )?);
    }
    for (label, theirs, ours_times) in [
        ("cold", &theirs_cold, ours_cold),
        ("warm", &theirs_warm, ours_warm),
    ] {
        println!("{label}: step\tseconds (median of {rounds})");
        let names: Vec<&str> = theirs[0].times.iter().map(|(name, _)| *name).collect();
        for (index, name) in names.iter().enumerate() {
            let step = median(
                theirs
                    .iter()
                    .map(|steps| steps.times[index].1.as_secs_f64())
                    .collect(),
            );
            println!("{label}: reference: {name}\t{step:.3}");
        }
        let reference_total = median(theirs.iter().map(|s| s.total().as_secs_f64()).collect());
        println!(
            "{label}: bundle-tool release samples\t{}",
            ours_times
                .iter()
                .map(|t| format!("{t:.3}"))
                .collect::<Vec<_>>()
                .join(" ")
        );
        let ours_total = median(ours_times);
        println!("{label}: reference total\t{reference_total:.3}");
        println!("{label}: bundle-tool release\t{ours_total:.3}");
        println!(
            "{label}: ratio reference/bundle-tool\t{:.1}x",
            reference_total / ours_total
        );
    }
    Ok(())
}
