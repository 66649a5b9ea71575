//! The catalog server's built-in `grpc_health_probe` (the catalog image's probe command) against
//! grpc-ecosystem's grpc_health_probe v0.4.62, side by side: the same command lines give the
//! same exit code and the same message, for a serving registry, a port nobody listens on,
//! and the command lines the probe refuses.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use e2e::assets::Assets;
use e2e::registry_server::{RegistryServer, ServerKind};

/// A folder with `grpc_health_probe` linked to this build's catalog-server (as in the image).
fn our_probe(dir: &Path) -> PathBuf {
    let link = dir.join("grpc_health_probe");
    std::os::unix::fs::symlink(e2e::catalog_server_binary(), &link).expect("a symlink");
    link
}

/// Exit code and the first line of standard error.
fn run(program: &Path, args: &[String]) -> (i32, String) {
    let output = Command::new(program)
        .args(args)
        .output()
        .expect("the probe runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    (
        output.status.code().unwrap_or(-1),
        stderr.lines().next().unwrap_or_default().to_string(),
    )
}

#[tokio::test]
async fn the_built_in_probe_answers_as_grpc_health_probe_does() -> anyhow::Result<()> {
    e2e::require_isolated_network()?;
    let theirs = Assets::locate()?.grpc_health_probe()?;
    let dir = tempfile::tempdir()?;
    let ours = our_probe(dir.path());
    let catalog = Path::new(env!("CARGO_MANIFEST_DIR")).join("../catalog");
    let server = RegistryServer::start(
        ServerKind::BundleTool,
        &catalog,
        &[],
        Duration::from_secs(30),
    )
    .await?;
    let serving = format!("-addr=:{}", server.port);
    let closed = format!("-addr=127.0.0.1:{}", e2e::free_port()?);
    let cases: Vec<(&str, Vec<String>, bool)> = vec![
        // OLM's own probe command (registry pods).
        (
            "serving",
            vec![serving.clone(), "-rpc-timeout=5s".into()],
            true,
        ),
        (
            "serving, two-dash flags",
            vec![
                format!("--addr=:{}", server.port),
                "--service".into(),
                "".into(),
            ],
            true,
        ),
        (
            "nobody listens",
            vec![closed.clone(), "-connect-timeout=300ms".into()],
            true,
        ),
        ("no -addr", vec!["-rpc-timeout=5s".into()], true),
        (
            "zero rpc timeout",
            vec![serving.clone(), "-rpc-timeout=0s".into()],
            true,
        ),
        (
            "zero connect timeout",
            vec![serving.clone(), "-connect-timeout=0".into()],
            true,
        ),
        // Go's flag package's own refusals: the code matches, the usage text differs.
        ("unknown flag", vec![serving.clone(), "-nope".into()], false),
        ("missing value", vec!["-addr".into()], false),
        (
            "bad duration",
            vec![serving.clone(), "-rpc-timeout=5".into()],
            false,
        ),
    ];
    let mut differences = Vec::new();
    for (name, args, same_message) in &cases {
        let (their_code, their_line) = run(&theirs, args);
        let (our_code, our_line) = run(&ours, args);
        println!("{name}: {their_code} {their_line:?} / {our_code} {our_line:?}");
        if their_code != our_code || (*same_message && their_line != our_line) {
            differences.push(format!(
                "{name} {args:?}: grpc_health_probe {their_code} {their_line:?}, ours {our_code} {our_line:?}"
            ));
        }
    }
    anyhow::ensure!(
        differences.is_empty(),
        "the built-in probe differs:\n{}",
        differences.join("\n")
    );
    Ok(())
}
