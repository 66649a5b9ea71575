//! What the registries users really push to cost, in one run:
//!
//! 1. **TLS and tokens.** `bundle-tool release --push` of a new version (0.4.0) of the Redis
//!    operator to Debian's docker-registry over plain HTTP, anonymous, against the same
//!    release to docker-registry over HTTPS (a test CA, `--ca-file`) with `auth: token` and a
//!    token server (`e2e::TokenRegistry`), as `ci` with `--password-stdin`, as quay.io and
//!    ghcr.io are pushed to. Each release goes to repositories of its own, with no layer cache,
//!    so every blob is sent. Target: the token registry at most 1.3 × the plain one.
//! 2. **Pinning.** `generate --use-image-digests` against `generate`, ours and
//!    `operator-sdk generate bundle` (v1.42.3) with and without `--use-image-digests`, on the
//!    Redis manifests with their five images in the token registry (anonymous pulls over
//!    HTTPS), and on the same manifests with 80 `RELATED_IMAGE_*` variables more (85 images).
//!    The cost of pinning is each tool's pinned time less its plain time. Ours asks for every
//!    digest at once (`image/digests.rs`).
//!
//! ```sh
//! cargo build --release -p bundle-tool -p catalog-server && BENCH_ROUNDS=3 cargo bench -p e2e --bench registry_transports
//! ```

use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail, ensure};
use e2e::bench_run::{median, rounds};
use e2e::{OciRegistry, RegistryAuth, TokenRegistry};
use serde_json::Value;

const VERSION: &str = "0.4.0";
const CHANNEL: &str = "candidate-v0";
/// `createdAt` pinned, as the committed catalog's bundles are.
const SOURCE_DATE_EPOCH: &str = "1764460800";
/// The images the Redis manifests name, each replaced by an image of the token registry.
const PUBLIC_IMAGES: [&str; 5] = [
    "quay.io/example/redis-operator:0.1.0",
    "docker.io/library/redis:6.2",
    "docker.io/library/redis:7.0",
    "docker.io/library/redis:7.2",
    "quay.io/oliver006/redis_exporter:v1.62.0",
];
/// `RELATED_IMAGE_*` variables added for the larger pinning case.
const EXTRA_IMAGES: usize = 80;

fn password() -> String {
    format!("bench-secret-{}", std::process::id())
}

/// Runs `command` with `stdin`, failing with its output unless it succeeds; its standard
/// output.
fn run(command: &mut Command, stdin: &str) -> anyhow::Result<Vec<u8>> {
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("{command:?}"))?;
    child
        .stdin
        .take()
        .expect("piped")
        .write_all(stdin.as_bytes())?;
    let output = child.wait_with_output()?;
    if !output.status.success() {
        bail!(
            "{command:?} failed: {}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }
    Ok(output.stdout)
}

/// `bundle-tool` in `dir`, with no auth file or CA of the machine's user.
fn bundle_tool(dir: &Path, home: &Path) -> Command {
    let mut command = Command::new(e2e::bundle_tool_binary());
    command
        .current_dir(dir)
        .env("SOURCE_DATE_EPOCH", SOURCE_DATE_EPOCH)
        .env("HOME", home)
        .env_remove("SSL_CERT_FILE")
        .env_remove("REGISTRY_AUTH_FILE")
        .env_remove("CONTAINERS_REGISTRIES_CONF");
    command
}

/// One `release --push` of [`VERSION`] into `registry/prefix/…` with `flags`; its wall time.
fn release(
    registry: &str,
    prefix: &str,
    flags: &[&str],
    stdin: &str,
    home: &Path,
) -> anyhow::Result<Duration> {
    let inputs = e2e::release_inputs::release_repository("transport-bench-");
    let started = Instant::now();
    let out = run(
        bundle_tool(inputs.path(), home)
            .args(["release", "--version", VERSION, "--channels", CHANNEL])
            .args([
                "--bundle-image",
                &format!("{registry}/{prefix}/redis-operator-bundle"),
                "--catalog-image",
                &format!("{registry}/{prefix}/redis-operator-catalog:latest"),
                "--push",
                "-o",
                "json",
            ])
            .args(flags)
            // No layer cache: every blob is compressed and sent in both cases.
            .env(bundle_tool::image::CACHE_DIR_VARIABLE, ""),
        stdin,
    )?;
    let elapsed = started.elapsed();
    let summary: Value = serde_json::from_slice(&out)?;
    ensure!(
        summary["pushed"] == true && summary["changed"] == true,
        "the release did not push: {summary}"
    );
    Ok(elapsed)
}

/// A copy of the release inputs whose manifests name `images` instead of the five public
/// ones, the ones beyond five as `RELATED_IMAGE_EXTRA_<n>` variables of the operator's
/// container.
fn manifests_naming(images: &[String]) -> anyhow::Result<(tempfile::TempDir, String)> {
    let repo = e2e::release_inputs::release_repository("pin-bench-");
    let path = repo.path().join("operator/config/manifests.yaml");
    let mut text = std::fs::read_to_string(&path)?;
    for (public, image) in PUBLIC_IMAGES.iter().zip(images) {
        ensure!(
            text.contains(public),
            "the manifests no longer name {public}"
        );
        text = text.replace(public, image);
    }
    let anchor = "        - name: RELATED_IMAGE_REDIS_6_2\n";
    ensure!(
        text.contains(anchor),
        "the manifests no longer set RELATED_IMAGE_REDIS_6_2"
    );
    let extra: String = images
        .iter()
        .skip(PUBLIC_IMAGES.len())
        .enumerate()
        .map(|(n, image)| {
            format!("        - name: RELATED_IMAGE_EXTRA_{n}\n          value: {image}\n")
        })
        .collect();
    text = text.replacen(anchor, &format!("{extra}{anchor}"), 1);
    std::fs::write(&path, &text)?;
    Ok((repo, text))
}

/// Ours: `generate` with `args`; its wall time.
fn generate_ours(repo: &Path, home: &Path, ca: &str, pin: bool) -> anyhow::Result<Duration> {
    let output = repo.join(if pin { "pinned" } else { "plain" });
    let _ = std::fs::remove_dir_all(&output);
    let started = Instant::now();
    let mut command = bundle_tool(repo, home);
    command.args(["generate", "--output"]).arg(&output);
    if pin {
        command.args(["--use-image-digests", "--ca-file", ca]);
    }
    run(&mut command, "")?;
    Ok(started.elapsed())
}

/// operator-sdk's `generate bundle` on the same manifests; its wall time.
fn generate_theirs(
    sdk: &Path,
    repo: &Path,
    manifests: &str,
    ca: &str,
    pin: bool,
) -> anyhow::Result<Duration> {
    let config = bundle_tool::bundle::GenerateConfig::load(&repo.join("bundle-tool.yaml"))?;
    let out = repo.join(if pin { "sdk-pinned" } else { "sdk-plain" });
    let _ = std::fs::remove_dir_all(&out);
    let home = repo.display().to_string();
    let args: &[&str] = if pin { &["--use-image-digests"] } else { &[] };
    let started = Instant::now();
    e2e::operator_sdk::generate_bundle_with(
        sdk,
        &config,
        manifests,
        &out,
        args,
        &[("SSL_CERT_FILE", ca), ("HOME", &home)],
    )?;
    Ok(started.elapsed())
}

fn seconds(values: &[Duration]) -> f64 {
    median(values.iter().map(Duration::as_secs_f64).collect())
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let sdk = e2e::assets::Assets::locate()?.operator_sdk()?;
    let rounds = rounds();
    let home = tempfile::tempdir()?;
    let plain = OciRegistry::start(RegistryAuth::Anonymous).await?;
    let mut pushers = Vec::new();
    for round in 0..rounds {
        for repository in ["redis-operator-bundle", "redis-operator-catalog"] {
            pushers.push(format!("r{round}/{repository}"));
        }
    }
    pushers.push("team/app".to_string());
    let password = password();
    let pusher_pairs: Vec<(&str, &str)> = pushers.iter().map(|r| ("ci", r.as_str())).collect();
    let tokens = TokenRegistry::start(e2e::token_policy(
        &[("ci", &password)],
        &pusher_pairs,
        Duration::from_secs(300),
    ))
    .await?;
    let ca = tokens.ca_file().display().to_string();

    // 1. TLS and tokens.
    let (mut over_http, mut over_tokens) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        let prefix = format!("r{round}");
        over_http.push(release(
            &plain.host(),
            &prefix,
            &["--plain-http"],
            "",
            home.path(),
        )?);
        over_tokens.push(release(
            &tokens.host(),
            &prefix,
            &["--ca-file", &ca, "--username", "ci", "--password-stdin"],
            &password,
            home.path(),
        )?);
    }
    let (http, token) = (seconds(&over_http), seconds(&over_tokens));
    println!(
        "release --push of {VERSION} ({rounds} round(s), median): plain HTTP anonymous {http:.2} s, HTTPS with token auth {token:.2} s: {:.2}x (target <= 1.3x)",
        token / http
    );

    // 2. Pinning: distinct images in the token registry (setup, not timed).
    let scratch = tempfile::tempdir()?;
    let mut images = Vec::new();
    for n in 0..PUBLIC_IMAGES.len() + EXTRA_IMAGES {
        // Different sizes: different images.
        let layout = e2e::release_inputs::write_random_image_layout(
            &scratch.path().join(format!("image-{n}")),
            1,
            64 * (n + 1),
        );
        let reference = format!("{}/team/app:image-{n}", tokens.host());
        run(
            bundle_tool(scratch.path(), home.path()).args([
                "push",
                &format!("{}:big", layout.display()),
                &reference,
                "--ca-file",
                &ca,
                "--username",
                "ci",
                "--password-stdin",
            ]),
            &password,
        )?;
        images.push(reference);
    }
    for count in [PUBLIC_IMAGES.len(), PUBLIC_IMAGES.len() + EXTRA_IMAGES] {
        let (repo, manifests) = manifests_naming(&images[..count])?;
        let mut times: [Vec<Duration>; 4] = Default::default();
        for _ in 0..rounds {
            times[0].push(generate_ours(repo.path(), home.path(), &ca, false)?);
            times[1].push(generate_ours(repo.path(), home.path(), &ca, true)?);
            times[2].push(generate_theirs(&sdk, repo.path(), &manifests, &ca, false)?);
            times[3].push(generate_theirs(&sdk, repo.path(), &manifests, &ca, true)?);
        }
        let pinned_csv = std::fs::read_to_string(
            repo.path()
                .join("pinned/manifests/redis-operator.clusterserviceversion.yaml"),
        )?;
        ensure!(
            pinned_csv.matches("@sha256:").count() >= count,
            "ours pinned fewer than {count} images"
        );
        let [ours_plain, ours_pinned, theirs_plain, theirs_pinned] = times.map(|t| seconds(&t));
        let (ours_cost, theirs_cost) = (ours_pinned - ours_plain, theirs_pinned - theirs_plain);
        println!(
            "pinning {count} images ({rounds} round(s), median): ours generate {ours_plain:.3} s, with --use-image-digests {ours_pinned:.3} s (pinning {ours_cost:.3} s); operator-sdk {theirs_plain:.3} s, with it {theirs_pinned:.3} s (pinning {theirs_cost:.3} s); whole command {:.1}x, pinning alone {:.1}x",
            theirs_pinned / ours_pinned,
            theirs_cost / ours_cost.max(0.001)
        );
    }
    Ok(())
}
