//! The registry verbs against a registry like quay.io or ghcr.io: `docker-registry` over
//! HTTPS with a certificate from a CA made for the test, and `auth: token` with a token
//! server that checks Basic credentials and grants push per repository (user `ci` may push
//! `team/app`, `team/app-catalog` and `team/bundles/redis-operator`, not `other/app`;
//! anyone may pull).

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use e2e::TokenRegistry;
use serde_json::Value;

/// `createdAt` of every generated bundle, as tests/tests/release.rs pins it.
const SOURCE_DATE_EPOCH: &str = "1764460800";

fn password() -> String {
    format!("token-registry-secret-{}", std::process::id())
}

async fn start(lifetime: Duration) -> TokenRegistry {
    let password = password();
    TokenRegistry::start(e2e::token_policy(
        &[("ci", &password)],
        &[
            ("ci", "team/app"),
            ("ci", "team/app-bundle"),
            ("ci", "team/app-catalog"),
            ("ci", "team/bundles/redis-operator"),
        ],
        lifetime,
    ))
    .await
    .expect("the token registry starts")
}

/// `bundle-tool ARGS` with `stdin` and `envs`; its output.
fn bundle_tool(args: &[&str], stdin: Option<&str>, envs: &[(&str, &str)]) -> Output {
    let mut command = Command::new(e2e::bundle_tool_binary());
    command
        .args(args)
        .env_remove("SSL_CERT_FILE")
        .env_remove("REGISTRY_AUTH_FILE")
        // No auth file of the machine's user.
        .env("HOME", std::env::temp_dir())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (name, value) in envs {
        command.env(name, value);
    }
    let mut child = command.spawn().expect("bundle-tool runs");
    let input = stdin.unwrap_or_default().to_string();
    std::io::Write::write_all(child.stdin.as_mut().expect("piped"), input.as_bytes())
        .expect("stdin");
    drop(child.stdin.take());
    child.wait_with_output().expect("bundle-tool ends")
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn succeeded(what: &str, output: &Output) -> String {
    assert!(output.status.success(), "{what}: {}", stderr(output));
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// The digest `inspect` reports for `reference`, anonymously, trusting `ca`.
fn anonymous_digest(reference: &str, ca: &Path) -> String {
    let out = succeeded(
        &format!("inspect {reference}"),
        &bundle_tool(
            &["inspect", reference, "--ca-file", &ca.display().to_string()],
            None,
            &[],
        ),
    );
    let report: Value = serde_json::from_str(&out).expect("inspect prints JSON");
    report["digest"].as_str().expect("a digest").to_string()
}

/// `bundle-tool push SOURCE REFERENCE` as `ci`, trusting `ca`; the digest it reports.
fn push_as_ci(source: &str, reference: &str, ca: &str) -> String {
    let pushed = succeeded(
        &format!("push {reference}"),
        &bundle_tool(
            &[
                "push",
                source,
                reference,
                "--ca-file",
                ca,
                "--username",
                "ci",
                "--password-stdin",
            ],
            Some(&password()),
            &[],
        ),
    );
    pushed
        .trim()
        .rsplit_once('@')
        .map(|(_, d)| d.to_string())
        .expect("push prints REF@DIGEST")
}

/// Pushes of the Redis bundle as `ci` over `--ca-file`, then pulls without credentials; the
/// CA also works through `SSL_CERT_FILE`.
#[tokio::test]
async fn push_and_pull_with_a_ca_file_and_token_auth() {
    let registry = start(Duration::from_secs(300)).await;
    let ca = registry.ca_file().display().to_string();
    let reference = format!("{}/team/app:v0.1.0", registry.host());
    let bundle = e2e::corpus::redis_bundle().display().to_string();
    let digest = push_as_ci(&bundle, &reference, &ca);
    assert_eq!(anonymous_digest(&reference, registry.ca_file()), digest);
    let scratch = tempfile::tempdir().unwrap();
    let pulled = scratch.path().join("pulled");
    succeeded(
        "pull",
        &bundle_tool(
            &[
                "pull",
                &reference,
                &pulled.display().to_string(),
                "--ca-file",
                &ca,
            ],
            None,
            &[],
        ),
    );
    assert!(
        pulled.join("manifests").is_dir(),
        "the pull wrote no bundle"
    );
    // SSL_CERT_FILE instead of the flag.
    succeeded(
        "inspect with SSL_CERT_FILE",
        &bundle_tool(&["inspect", &reference], None, &[("SSL_CERT_FILE", &ca)]),
    );
    let issued = registry.tokens().issued();
    assert!(
        issued.iter().any(|t| t.user.as_deref() == Some("ci")
            && t.granted
                .contains(&"repository:team/app:pull,push".to_string())),
        "no push token was issued to ci: {:?}",
        issued.iter().map(|t| &t.granted).collect::<Vec<_>>()
    );
    assert!(
        issued
            .iter()
            .any(|t| t.user.is_none() && t.granted == ["repository:team/app:pull"]),
        "the pull was not anonymous"
    );
}

/// Without the CA the registry's certificate is refused at once, naming the registry and how
/// to trust it; `--insecure-skip-tls-verify` works and warns; a CA file that holds no
/// certificate is named.
#[tokio::test]
async fn an_unknown_ca_is_refused_with_how_to_trust_it() {
    let registry = start(Duration::from_secs(300)).await;
    let host = registry.host();
    let reference = format!("{host}/team/app:v0.1.0");
    let bundle = e2e::corpus::redis_bundle().display().to_string();
    for args in [
        vec!["inspect", reference.as_str()],
        vec![
            "push",
            bundle.as_str(),
            reference.as_str(),
            "--username",
            "ci",
            "--password-stdin",
        ],
    ] {
        let started = Instant::now();
        let output = bundle_tool(&args, Some(&password()), &[]);
        let text = stderr(&output);
        assert!(!output.status.success(), "{args:?} trusted an unknown CA");
        for needle in [
            format!("registry {host} is not trusted"),
            "--ca-file".into(),
            "--insecure-skip-tls-verify".into(),
        ] {
            assert!(text.contains(&needle), "{args:?}: no {needle:?} in {text}");
        }
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{args:?} took {:?}: a certificate refusal is not worth retrying",
            started.elapsed()
        );
        eprintln!("{args:?} without the CA: {}", text.trim());
    }

    // Push something, then read it without verifying.
    let ca = registry.ca_file().display().to_string();
    succeeded(
        "push",
        &bundle_tool(
            &[
                "push",
                &bundle,
                &reference,
                "--ca-file",
                &ca,
                "--username",
                "ci",
                "--password-stdin",
            ],
            Some(&password()),
            &[],
        ),
    );
    let output = bundle_tool(
        &["inspect", &reference, "--insecure-skip-tls-verify"],
        None,
        &[],
    );
    succeeded("inspect --insecure-skip-tls-verify", &output);
    assert!(
        stderr(&output).contains("warning: --insecure-skip-tls-verify"),
        "no warning: {}",
        stderr(&output)
    );

    let scratch = tempfile::tempdir().unwrap();
    let not_pem = scratch.path().join("not-a-ca.pem");
    std::fs::write(&not_pem, "hello\n").unwrap();
    let output = bundle_tool(
        &[
            "inspect",
            &reference,
            "--ca-file",
            &not_pem.display().to_string(),
        ],
        None,
        &[],
    );
    assert!(!output.status.success());
    assert!(
        stderr(&output).contains(&format!("--ca-file {}: no certificate", not_pem.display())),
        "{}",
        stderr(&output)
    );
}

/// A push to a repository the token server grants `ci` no push on fails with the registry's
/// refusal, named `denied`, without a retry loop.
#[tokio::test]
async fn a_push_without_push_access_is_denied() {
    let registry = start(Duration::from_secs(300)).await;
    let reference = format!("{}/other/app:v0.1.0", registry.host());
    let bundle = e2e::corpus::redis_bundle().display().to_string();
    let started = Instant::now();
    let output = bundle_tool(
        &[
            "push",
            &bundle,
            &reference,
            "--ca-file",
            &registry.ca_file().display().to_string(),
            "--username",
            "ci",
            "--password-stdin",
        ],
        Some(&password()),
        &[],
    );
    let text = stderr(&output);
    assert!(!output.status.success(), "pushed without push access");
    // docker-registry 2.8's refusal: 401 with the UNAUTHORIZED errcode (its challenge says
    // `error="insufficient_scope"`).
    for needle in ["denied", "user ci", "other/app", "UNAUTHORIZED"] {
        assert!(text.contains(needle), "no {needle:?} in {text}");
    }
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "the refusal took {:?}",
        started.elapsed()
    );
    eprintln!("push to other/app: {}", text.trim());
}

/// Wrong credentials: the token server's own words, at once (one login attempt).
#[tokio::test]
async fn wrong_credentials_fail_at_once_in_the_token_servers_words() {
    let registry = start(Duration::from_secs(300)).await;
    let reference = format!("{}/team/app:v0.1.0", registry.host());
    let bundle = e2e::corpus::redis_bundle().display().to_string();
    let started = Instant::now();
    let output = bundle_tool(
        &[
            "push",
            &bundle,
            &reference,
            "--ca-file",
            &registry.ca_file().display().to_string(),
            "--username",
            "ci",
            "--password-stdin",
        ],
        Some("not-the-password"),
        &[],
    );
    let text = stderr(&output);
    assert!(!output.status.success(), "pushed with a wrong password");
    assert!(
        text.contains("incorrect username or password for ci"),
        "the token server's words are missing: {text}"
    );
    assert_eq!(
        registry.tokens().refused_logins(),
        1,
        "a wrong password was tried again"
    );
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "took {:?}",
        started.elapsed()
    );
}

/// Tokens that last one second, and a push of 192 MiB in 96 layers that lasts longer: the
/// token expires during the push, a new one is asked for, and the push completes.
#[tokio::test]
async fn a_token_expiring_during_a_push_is_renewed() {
    let registry = start(Duration::from_secs(1)).await;
    let scratch = tempfile::tempdir().unwrap();
    let layout =
        e2e::release_inputs::write_random_image_layout(scratch.path(), 96, 2 * 1024 * 1024);
    let reference = format!("{}/team/app:big", registry.host());
    let started = Instant::now();
    let output = bundle_tool(
        &[
            "push",
            &format!("{}:big", layout.display()),
            &reference,
            "--ca-file",
            &registry.ca_file().display().to_string(),
            "--username",
            "ci",
            "--password-stdin",
        ],
        Some(&password()),
        &[("RUST_LOG", "bundle_tool=debug")],
    );
    let pushed = succeeded("push of the big layout", &output);
    let took = started.elapsed();
    // Either oci-client saw the expiry coming and asked for a token itself, or the registry
    // refused a token in its last second and bundle-tool asked for a new one.
    let refused = stderr(&output)
        .matches("the registry refused the token")
        .count();
    let push_tokens = registry
        .tokens()
        .issued()
        .iter()
        .filter(|t| {
            t.user.as_deref() == Some("ci")
                && t.granted
                    .contains(&"repository:team/app:pull,push".to_string())
        })
        .count();
    eprintln!(
        "pushed in {took:?} with {push_tokens} push tokens, {refused} renewed after a 401: {}",
        pushed.trim()
    );
    assert!(
        push_tokens >= 2,
        "one push token lasted the whole {took:?} push of 1 s tokens{}",
        if took < Duration::from_secs(2) {
            " (too short a push for a token to expire in it: make the layout bigger)"
        } else {
            ""
        }
    );
    let digest = pushed.trim().rsplit_once('@').map(|(_, d)| d).unwrap();
    assert_eq!(anonymous_digest(&reference, registry.ca_file()), digest);
}

/// `release --push` and `push-all` with `ci`'s password, then anonymous pulls of what they
/// pushed.
#[tokio::test]
async fn release_and_push_all_push_with_a_token_and_pull_anonymously() {
    let registry = start(Duration::from_secs(300)).await;
    let ca = registry.ca_file().display().to_string();
    let repo = e2e::release_inputs::release_repository("token-release-");
    let bundle_repository = format!("{}/team/app-bundle", registry.host());
    let catalog_image = format!("{}/team/app-catalog:latest", registry.host());
    let mut command = Command::new(e2e::bundle_tool_binary());
    command
        .current_dir(repo.path())
        .args(["release", "--config", "bundle-tool.yaml"])
        .args([
            "--version",
            "0.1.0",
            "--catalog",
            "fresh-catalog",
            "--channels",
            "candidate-v0",
            "--bundle-image",
            &bundle_repository,
            "--catalog-image",
            &catalog_image,
            "--push",
            "--ca-file",
            &ca,
            "--username",
            "ci",
            "--password-stdin",
            "-o",
            "json",
        ])
        .env("SOURCE_DATE_EPOCH", SOURCE_DATE_EPOCH)
        .env_remove("SSL_CERT_FILE")
        .env("HOME", repo.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().unwrap();
    std::io::Write::write_all(child.stdin.as_mut().unwrap(), password().as_bytes()).unwrap();
    drop(child.stdin.take());
    let output = child.wait_with_output().unwrap();
    let run: Value = serde_json::from_str(&succeeded("release --push", &output)).unwrap();
    assert_eq!(run["pushed"], true);
    let bundle_reference = format!("{bundle_repository}:v0.1.0");
    assert_eq!(
        anonymous_digest(&bundle_reference, registry.ca_file()),
        run["bundle"]["digest"].as_str().unwrap()
    );
    assert_eq!(
        anonymous_digest(&catalog_image, registry.ca_file()),
        run["catalog"]["digest"].as_str().unwrap()
    );

    let folder = tempfile::tempdir().unwrap();
    e2e::copy_dir(
        &e2e::corpus::redis_bundle(),
        &folder.path().join("redis-operator/0.1.0"),
    )
    .unwrap();
    let prefix = format!("{}/team/bundles", registry.host());
    let out = succeeded(
        "push-all",
        &bundle_tool(
            &[
                "push-all",
                &folder.path().display().to_string(),
                &prefix,
                "--ca-file",
                &ca,
                "--username",
                "ci",
                "--password-stdin",
            ],
            Some(&password()),
            &[],
        ),
    );
    let line = out.lines().next().expect("push-all prints a line a bundle");
    let (pushed, digest) = line.trim().rsplit_once('@').expect("REF@DIGEST");
    assert_eq!(pushed, format!("{prefix}/redis-operator:0.1.0"));
    assert_eq!(anonymous_digest(pushed, registry.ca_file()), digest);
}

/// At the most verbose log level, neither the password nor any token the token server
/// issued appears in any output, of a push, a refused push and anonymous reads (the
/// htpasswd counterpart is in bundle_images.rs).
#[tokio::test]
async fn no_password_or_token_in_any_output_even_at_trace_level() {
    use base64::Engine as _;
    let registry = start(Duration::from_secs(300)).await;
    let ca = registry.ca_file().display().to_string();
    let reference = format!("{}/team/app:v0.1.0", registry.host());
    let bundle = e2e::corpus::redis_bundle().display().to_string();
    let push = [
        "push",
        bundle.as_str(),
        reference.as_str(),
        "--ca-file",
        ca.as_str(),
        "--username",
        "ci",
        "--password-stdin",
    ];
    let denied = format!("{}/other/app:v0.1.0", registry.host());
    let trace = [("RUST_LOG", "trace")];
    let outputs = [
        bundle_tool(&push, Some(&password()), &trace),
        bundle_tool(&push, Some("wrong-secret-password"), &trace),
        bundle_tool(
            &[
                "push",
                &bundle,
                &denied,
                "--ca-file",
                &ca,
                "--username",
                "ci",
                "--password-stdin",
            ],
            Some(&password()),
            &trace,
        ),
        bundle_tool(&["inspect", &reference, "--ca-file", &ca], None, &trace),
    ];
    assert!(outputs[0].status.success(), "{}", stderr(&outputs[0]));
    let basic = |p: &str| base64::engine::general_purpose::STANDARD.encode(format!("ci:{p}"));
    let mut needles = vec![
        password(),
        "wrong-secret-password".to_string(),
        basic(&password()),
        basic("wrong-secret-password"),
    ];
    let issued = registry.tokens().issued();
    assert!(issued.len() >= 3, "only {} tokens issued", issued.len());
    for token in issued {
        // The signature alone would do to use it with another header and claims.
        needles.push(token.token.rsplit('.').next().unwrap().to_string());
        needles.push(token.token);
    }
    let all: String = outputs
        .iter()
        .map(|o| format!("{}{}", stderr(o), String::from_utf8_lossy(&o.stdout)))
        .collect();
    assert!(
        all.contains("TRACE") || all.contains("DEBUG"),
        "RUST_LOG=trace logged nothing"
    );
    for needle in &needles {
        assert!(!all.contains(needle.as_str()), "an output shows a secret");
    }
}

/// The first token, the one a push asks for before its first blob, is signed by an expired
/// certificate: the registry refuses it at the first upload while its `exp` claim (300 s)
/// says it is good, as when the registry's clock runs ahead or the token was revoked.
/// oci-client would send it again until its `exp`; bundle-tool asks for a new token after
/// the 401 and the push completes.
#[tokio::test]
async fn a_token_the_registry_refuses_during_a_push_is_renewed() {
    let registry = TokenRegistry::start_with(
        e2e::token_policy(
            &[("ci", &password())],
            &[("ci", "team/app")],
            Duration::from_secs(300),
        ),
        true,
    )
    .await
    .expect("the token registry starts");
    let bundle = e2e::corpus::redis_bundle().display().to_string();
    let reference = format!("{}/team/app:v0.1.0", registry.host());
    let output = bundle_tool(
        &[
            "push",
            &bundle,
            &reference,
            "--ca-file",
            &registry.ca_file().display().to_string(),
            "--username",
            "ci",
            "--password-stdin",
        ],
        Some(&password()),
        &[("RUST_LOG", "bundle_tool=debug")],
    );
    let pushed = succeeded("push with a refused first token", &output);
    assert_eq!(
        stderr(&output)
            .matches("the registry refused the token")
            .count(),
        1,
        "{}",
        stderr(&output)
    );
    let digest = pushed.trim().rsplit_once('@').map(|(_, d)| d).unwrap();
    assert_eq!(anonymous_digest(&reference, registry.ca_file()), digest);
}

/// `generate --use-image-digests` and `release --pin-digests` resolve every image the Redis
/// CSV names (the operator's container and the four `RELATED_IMAGE_*` variables, here five
/// different images in the HTTPS token registry) anonymously, trusting the CA by flag: each
/// field becomes `name@sha256:…` with the registry's digest, and `relatedImages` lists each
/// image once. One image the registry does not have stops both, naming it, with nothing
/// written.
#[tokio::test]
async fn generate_and_release_pin_every_image_to_its_digest() {
    let registry = start(Duration::from_secs(300)).await;
    let ca = registry.ca_file().display().to_string();
    let host = registry.host();
    let scratch = tempfile::tempdir().unwrap();
    let public = [
        ("quay.io/example/redis-operator:0.1.0", "operator"),
        ("docker.io/library/redis:6.2", "redis-6.2"),
        ("docker.io/library/redis:7.0", "redis-7.0"),
        ("docker.io/library/redis:7.2", "redis-7.2"),
        ("quay.io/oliver006/redis_exporter:v1.62.0", "exporter"),
    ];
    let mut expected = Vec::new();
    for (i, (_, tag)) in public.iter().enumerate() {
        // Different sizes: five different images.
        let layout = e2e::release_inputs::write_random_image_layout(
            &scratch.path().join(tag),
            1,
            1024 * (i + 1),
        );
        let reference = format!("{host}/team/app:{tag}");
        let digest = push_as_ci(&format!("{}:big", layout.display()), &reference, &ca);
        expected.push(format!("{host}/team/app@{digest}"));
    }
    let repo = e2e::release_inputs::release_repository("token-release-");
    let manifests_path = repo.path().join("operator/config/manifests.yaml");
    let mut manifests = std::fs::read_to_string(&manifests_path).unwrap();
    for (name, tag) in public {
        assert!(
            manifests.contains(name),
            "the manifests no longer name {name}"
        );
        manifests = manifests.replace(name, &format!("{host}/team/app:{tag}"));
    }
    std::fs::write(&manifests_path, &manifests).unwrap();
    let in_repo = |args: &[&str]| {
        Command::new(e2e::bundle_tool_binary())
            .current_dir(repo.path())
            .args(args)
            .env("SOURCE_DATE_EPOCH", SOURCE_DATE_EPOCH)
            .env_remove("SSL_CERT_FILE")
            .env_remove("REGISTRY_AUTH_FILE")
            .env("HOME", repo.path())
            .output()
            .unwrap()
    };
    let generate = |output: &str| {
        in_repo(&[
            "generate",
            "--use-image-digests",
            "--ca-file",
            &ca,
            "--output",
            output,
        ])
    };
    let first = generate("pinned");
    let said = succeeded("generate --use-image-digests", &first);
    assert!(
        format!("{said}{}", stderr(&first)).contains("pinned 5 image(s) to digests"),
        "generate does not say how many images it pinned: {said}{}",
        stderr(&first)
    );
    let csv_text = std::fs::read_to_string(
        repo.path()
            .join("pinned/manifests/redis-operator.clusterserviceversion.yaml"),
    )
    .unwrap();
    let csv: Value = serde_saphyr::from_str(&csv_text).unwrap();
    let container = &csv["spec"]["install"]["spec"]["deployments"][0]["spec"]["template"]["spec"]["containers"]
        [0];
    assert_eq!(container["image"], expected[0].as_str());
    let related_variables: Vec<&str> = container["env"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["name"].as_str().unwrap().starts_with("RELATED_IMAGE_"))
        .map(|e| e["value"].as_str().unwrap())
        .collect();
    assert_eq!(
        related_variables,
        expected[1..].iter().map(String::as_str).collect::<Vec<_>>()
    );
    let mut related: Vec<&str> = csv["spec"]["relatedImages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["image"].as_str().unwrap())
        .collect();
    related.sort_unstable();
    let mut wanted: Vec<&str> = expected.iter().map(String::as_str).collect();
    wanted.sort_unstable();
    assert_eq!(related, wanted, "relatedImages");
    assert!(
        !csv_text.contains(&format!("{host}/team/app:")),
        "a tag is left in the pinned CSV"
    );
    operator_sdk_pins_the_same(repo.path(), &manifests, &ca, &csv);

    // release --pin-digests, to an OCI layout: the catalog's entry lists the pinned images.
    let bundle_image = format!("{host}/team/app-bundle");
    let catalog_image = format!("{host}/team/app-catalog:latest");
    let pinned_release = [
        "release",
        "--version",
        "0.1.0",
        "--catalog",
        "fresh-catalog",
        "--channels",
        "candidate-v0",
        "--bundle-image",
        &bundle_image,
        "--catalog-image",
        &catalog_image,
        "--pin-digests",
        "--ca-file",
        &ca,
        "-o",
        "json",
    ];
    let release = in_repo(&pinned_release);
    let summary = succeeded("release --pin-digests", &release);
    assert!(
        summary.contains("5 image(s) pinned to digests"),
        "the release summary does not say it pinned: {summary}"
    );
    let catalog = std::fs::read_to_string(
        repo.path()
            .join("fresh-catalog/redis-operator/catalog.json"),
    )
    .unwrap_or_else(|e| panic!("the release wrote no catalog.json ({e}): {summary}"));
    for image in &expected {
        assert!(
            catalog.contains(image.as_str()),
            "{image} is not in the catalog"
        );
    }
    assert!(
        !catalog.contains(&format!("{host}/team/app:")),
        "a tag is left in the catalog"
    );
    // The bundle image too is recorded by the digest of the image the release built.
    let built = serde_json::from_str::<Value>(&summary)
        .ok()
        .and_then(|s| s["bundle"]["digest"].as_str().map(str::to_string))
        .unwrap_or_else(|| panic!("no bundle digest in the release summary: {summary}"));
    let by_digest = format!("{host}/team/app-bundle@{built}");
    let entry: Value = serde_json::Deserializer::from_str(&catalog)
        .into_iter::<Value>()
        .map(|document| document.expect("catalog.json is a stream of JSON documents"))
        .find(|document| document["schema"] == "olm.bundle")
        .unwrap_or_else(|| panic!("no olm.bundle in the catalog:\n{catalog}"));
    assert_eq!(entry["image"], by_digest.as_str(), "the bundle's image");
    assert!(
        entry["relatedImages"]
            .as_array()
            .is_some_and(|list| list.iter().any(|r| r["image"] == by_digest.as_str())),
        "relatedImages does not list {by_digest}: {entry}"
    );
    assert!(
        !catalog.contains(&format!("{host}/team/app-bundle:")),
        "the catalog names the bundle by tag"
    );
    // Released again, unchanged: the same release (the recorded digest is this content's),
    // nothing written.
    let again = succeeded("release --pin-digests again", &in_repo(&pinned_release));
    let again: Value = serde_json::from_str(&again).expect("the summary is JSON");
    assert_eq!(
        again["changed"], false,
        "a pinned re-release changed: {again}"
    );
    assert_eq!(
        std::fs::read_to_string(
            repo.path()
                .join("fresh-catalog/redis-operator/catalog.json")
        )
        .expect("catalog.json"),
        catalog,
        "a pinned re-release rewrote the catalog"
    );

    // One image the registry does not have: named, and nothing written.
    std::fs::write(
        &manifests_path,
        manifests.replace(
            &format!("{host}/team/app:exporter"),
            &format!("{host}/team/app:missing"),
        ),
    )
    .unwrap();
    let failed = generate("not-written");
    assert!(
        !failed.status.success(),
        "generate pinned an image that does not exist"
    );
    let said = stderr(&failed);
    assert!(
        said.contains("cannot pin 1 image(s) to a digest")
            && said.contains(&format!("{host}/team/app:missing")),
        "the failure does not name the image: {said}"
    );
    assert!(
        !repo.path().join("not-written").exists(),
        "generate wrote a bundle with an image it could not pin"
    );
}

/// operator-sdk v1.42.3's `generate bundle --use-image-digests` on the same manifests, through
/// the same registry (Go reads the test CA from `SSL_CERT_FILE`), pins the container, the
/// `RELATED_IMAGE_*` values and `relatedImages` to the same references as `ours` (a CSV).
fn operator_sdk_pins_the_same(repo: &Path, manifests: &str, ca: &str, ours: &Value) {
    let sdk = e2e::assets::Assets::locate()
        .and_then(|assets| assets.operator_sdk())
        .expect("operator-sdk v1.42.3 (tests/assets/build-go-assets.sh builds it)");
    let config = bundle_tool::bundle::GenerateConfig::load(&repo.join("bundle-tool.yaml"))
        .expect("the repository's config");
    let out = repo.join("operator-sdk");
    let home = repo.display().to_string();
    e2e::operator_sdk::generate_bundle_with(
        &sdk,
        &config,
        manifests,
        &out,
        &["--use-image-digests"],
        &[("SSL_CERT_FILE", ca), ("HOME", &home)],
    )
    .expect("operator-sdk generate bundle --use-image-digests");
    let theirs: Value = serde_saphyr::from_str(
        &std::fs::read_to_string(
            out.join("bundle/manifests/redis-operator.clusterserviceversion.yaml"),
        )
        .unwrap(),
    )
    .unwrap();
    let pinned = |csv: &Value| {
        let container = &csv["spec"]["install"]["spec"]["deployments"][0]["spec"]["template"]["spec"]
            ["containers"][0];
        let mut variables: Vec<(String, String)> = container["env"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["name"].as_str().unwrap().starts_with("RELATED_IMAGE_"))
            .map(|e| {
                (
                    e["name"].as_str().unwrap().to_string(),
                    e["value"].as_str().unwrap().to_string(),
                )
            })
            .collect();
        variables.sort();
        // operator-sdk lists an image under several names, and in a random order: compare
        // the images.
        let related: std::collections::BTreeSet<String> = csv["spec"]["relatedImages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["image"].as_str().unwrap().to_string())
            .collect();
        (container["image"].clone(), variables, related)
    };
    assert_eq!(
        pinned(ours),
        pinned(&theirs),
        "bundle-tool (left) and operator-sdk (right) pin differently"
    );
}
