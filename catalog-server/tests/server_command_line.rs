//! The `catalog-server` program as a catalog image runs it: `serve` on a catalog folder until
//! it is stopped, the `grpc_health_probe` name answering for it, and the refusals a user
//! meets (an invalid catalog, a bundle only a registry pull could provide).

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

const SERVER: &str = env!("CARGO_BIN_EXE_catalog-server");

/// The repository's own catalog (the Redis operator's, every bundle with its objects).
fn redis_catalog() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../catalog")
}

fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a free port");
    listener.local_addr().expect("its address").port()
}

/// A folder with `grpc_health_probe` linked to the server, as the catalog image has it.
fn probe_link(dir: &Path) -> PathBuf {
    let link = dir.join("grpc_health_probe");
    std::os::unix::fs::symlink(SERVER, &link).expect("a symlink");
    link
}

fn probe(link: &Path, port: u16) -> Output {
    Command::new(link)
        .arg(format!("-addr=127.0.0.1:{port}"))
        .arg("-connect-timeout=1s")
        .output()
        .expect("the probe runs")
}

/// Stops the server when the test ends, however it ends.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn serves_a_catalog_that_the_built_in_probe_reports_serving() {
    let scratch = tempfile::tempdir().unwrap();
    let link = probe_link(scratch.path());
    let port = free_port();
    // Nothing listens yet: the probe's connection-failure code, 2.
    assert_eq!(probe(&link, port).status.code(), Some(2));
    let mut server = Running(
        Command::new(SERVER)
            .arg("serve")
            .arg(redis_catalog())
            .args(["--port", &port.to_string(), "--inline-bundles"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("catalog-server starts"),
    );
    let deadline = Instant::now() + Duration::from_secs(60);
    let answer = loop {
        let answer = probe(&link, port);
        if answer.status.success() || Instant::now() > deadline {
            break answer;
        }
        if let Some(status) = server.0.try_wait().unwrap() {
            panic!("catalog-server exited before serving: {status}");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(
        answer.status.success(),
        "the probe never saw SERVING: {}",
        String::from_utf8_lossy(&answer.stderr)
    );
    // grpc_health_probe says it on standard error, as Go's log does.
    assert_eq!(
        String::from_utf8_lossy(&answer.stderr).trim(),
        "status: SERVING"
    );
    assert!(
        server.0.try_wait().unwrap().is_none(),
        "the server is still running"
    );
}

#[test]
fn an_invalid_catalog_is_refused_with_the_file_named() {
    let scratch = tempfile::tempdir().unwrap();
    let catalog = scratch.path().join("catalog");
    std::fs::create_dir(&catalog).unwrap();
    std::fs::write(
        catalog.join("broken.json"),
        "{\"schema\": \"olm.package\", \"name\": ",
    )
    .unwrap();
    let output = Command::new(SERVER)
        .arg("serve")
        .arg(&catalog)
        .args(["--port", &free_port().to_string()])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("catalog-server serve:"), "{stderr}");
    assert!(stderr.contains("broken.json"), "{stderr}");
}

#[test]
fn a_bundle_only_a_pull_could_inline_is_refused_by_name() {
    let scratch = tempfile::tempdir().unwrap();
    let catalog = scratch.path().join("catalog");
    std::fs::create_dir(&catalog).unwrap();
    let image = "registry.example/pkg-bundle:v1.0.0";
    let documents = [
        serde_json::json!({"schema": "olm.package", "name": "pkg", "defaultChannel": "stable"}),
        serde_json::json!({"schema": "olm.channel", "name": "stable", "package": "pkg",
            "entries": [{"name": "pkg.v1.0.0"}]}),
        serde_json::json!({"schema": "olm.bundle", "name": "pkg.v1.0.0", "package": "pkg",
            "image": image, "properties": [
                {"type": "olm.package", "value": {"packageName": "pkg", "version": "1.0.0"}}]}),
    ];
    let text: String = documents.iter().map(|d| format!("{d}\n")).collect();
    std::fs::write(catalog.join("catalog.json"), text).unwrap();
    let run = |inline: bool, port: u16| {
        let mut command = Command::new(SERVER);
        command.arg("serve").arg(&catalog).args([
            "--port",
            &port.to_string(),
            "--watch-interval",
            "0",
        ]);
        if inline {
            command.arg("--inline-bundles");
        }
        command
    };
    let output = run(true, free_port()).output().unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains(image), "{stderr}");
    assert!(stderr.contains("does not pull images"), "{stderr}");
    // Without inline bundles the same catalog is served (OLM would pull the bundle image).
    let scratch_link = probe_link(scratch.path());
    let port = free_port();
    let mut served = run(false, port);
    let mut server = Running(
        served
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let deadline = Instant::now() + Duration::from_secs(60);
    while !probe(&scratch_link, port).status.success() {
        assert!(
            Instant::now() < deadline,
            "never served without inline bundles"
        );
        assert!(server.0.try_wait().unwrap().is_none(), "the server exited");
        std::thread::sleep(Duration::from_millis(100));
    }
}
