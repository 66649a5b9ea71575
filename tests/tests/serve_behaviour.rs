//! `bundle-tool serve` as a long-running server: refusing an invalid catalog at start-up,
//! health and reflection, the HTTP view, hot reload (file changes, SIGHUP, a rejected invalid
//! catalog, streams finishing on their snapshot), malformed requests, graceful shutdown, and a
//! load test with reloads under way.

// The load test calls GetBundleForChannel, deprecated in the API but what packageserver uses.
#![allow(deprecated)]

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bundle_tool::serve::api;
use e2e::registry_server::{RegistryServer, ServerKind};
use tonic::codegen::tokio_stream::StreamExt;

const START: Duration = Duration::from_secs(60);

fn corpus_catalog(name: &str, into: &Path) {
    let dir = e2e::corpus::catalogs()
        .into_iter()
        .find(|d| d.file_name().is_some_and(|n| n == name))
        .unwrap_or_else(|| panic!("corpus catalog {name} is missing"));
    e2e::copy_dir(&dir, &into.join(name)).unwrap();
}

async fn package_names(server: &RegistryServer) -> Vec<String> {
    let mut client = server.client().await.unwrap();
    let mut stream = client
        .list_packages(api::ListPackageRequest {})
        .await
        .unwrap()
        .into_inner();
    let mut names = Vec::new();
    while let Some(p) = stream.message().await.unwrap() {
        names.push(p.name);
    }
    names
}

async fn metric(http_port: u16, name: &str) -> f64 {
    let (status, body) = e2e::http_get(http_port, "/metrics").await.unwrap();
    assert_eq!(status, 200);
    body.lines()
        .find(|l| l.starts_with(name))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("metric {name} missing from:\n{body}"))
}

#[test]
fn an_invalid_catalog_at_start_up_exits_1_with_the_validation_errors() {
    let catalog = tempfile::tempdir().unwrap();
    corpus_catalog("kubevirt-wol", catalog.path());
    let file = catalog.path().join("kubevirt-wol/catalog.yaml");
    let text = std::fs::read_to_string(&file).unwrap();
    // A second channel head: the bundle's entry now replaces nothing in a new channel, twice.
    std::fs::write(
        &file,
        format!(
            "{text}\n---\nschema: olm.channel\npackage: kubevirt-wol\nname: broken\nentries:\n- name: a\n  replaces: b\n- name: b\n  replaces: a\n"
        ),
    )
    .unwrap();
    let output = std::process::Command::new(e2e::bundle_tool_binary())
        .args(["serve", "--port", "0"])
        .arg(catalog.path())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    // opm's text for a channel whose entries have no bundle documents.
    assert!(
        stderr.contains("no olm.bundle blobs found in package \"kubevirt-wol\"")
            && stderr.contains("[a b]"),
        "stderr names the problem: {stderr}"
    );
}

#[tokio::test]
async fn health_answers_serving_for_registry_and_empty_and_reflection_lists_the_services() {
    use tonic_health::pb::health_client::HealthClient;
    use tonic_health::pb::{HealthCheckRequest, health_check_response::ServingStatus};
    use tonic_reflection::pb::v1::ServerReflectionRequest;
    use tonic_reflection::pb::v1::server_reflection_client::ServerReflectionClient;
    use tonic_reflection::pb::v1::server_reflection_request::MessageRequest;
    use tonic_reflection::pb::v1::server_reflection_response::MessageResponse;

    let catalog = tempfile::tempdir().unwrap();
    corpus_catalog("kubevirt-wol", catalog.path());
    let server = RegistryServer::start(ServerKind::BundleTool, catalog.path(), &[], START)
        .await
        .unwrap();
    let channel = server.channel().await.unwrap();
    let mut health = HealthClient::new(channel.clone());
    for service in ["", "Registry"] {
        let status = health
            .check(HealthCheckRequest {
                service: service.into(),
            })
            .await
            .unwrap()
            .into_inner()
            .status;
        assert_eq!(status, ServingStatus::Serving as i32, "service {service:?}");
    }
    let watch = health
        .watch(HealthCheckRequest {
            service: "Registry".into(),
        })
        .await;
    assert_eq!(
        watch.err().map(|s| s.code()),
        Some(tonic::Code::Unimplemented)
    );

    let mut reflection = ServerReflectionClient::new(channel);
    let request = ServerReflectionRequest {
        host: String::new(),
        message_request: Some(MessageRequest::ListServices(String::new())),
    };
    let mut answers = reflection
        .server_reflection_info(tonic::codegen::tokio_stream::iter(vec![request]))
        .await
        .unwrap()
        .into_inner();
    let answer = answers.message().await.unwrap().unwrap();
    let Some(MessageResponse::ListServicesResponse(list)) = answer.message_response else {
        panic!("unexpected reflection answer {answer:?}");
    };
    let names: Vec<String> = list.service.into_iter().map(|s| s.name).collect();
    for wanted in ["api.Registry", "grpc.health.v1.Health"] {
        assert!(names.iter().any(|n| n == wanted), "{wanted} in {names:?}");
    }
}

#[tokio::test]
async fn the_http_view_serves_documents_metrics_and_health() {
    let catalog = tempfile::tempdir().unwrap();
    corpus_catalog("kubevirt-wol", catalog.path());
    corpus_catalog("libredb-studio-operator", catalog.path());
    let http_port = e2e::free_port().unwrap();
    let server = RegistryServer::start(
        ServerKind::BundleTool,
        catalog.path(),
        &["--http-port", &http_port.to_string()],
        START,
    )
    .await
    .unwrap();
    assert_eq!(
        e2e::http_get(http_port, "/healthz").await.unwrap(),
        (200, "ok\n".to_string())
    );
    let (status, all) = e2e::http_get(http_port, "/api/v1/all").await.unwrap();
    assert_eq!(status, 200);
    let documents: Vec<serde_json::Value> = all
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let bundles = documents
        .iter()
        .filter(|d| d["schema"] == "olm.bundle")
        .count();
    let packages = documents
        .iter()
        .filter(|d| d["schema"] == "olm.package")
        .count();
    assert_eq!(packages, 2);
    assert!(bundles >= 2);

    let (status, selected) = e2e::http_get(
        http_port,
        "/api/v1/metas?schema=olm.bundle&package=kubevirt-wol",
    )
    .await
    .unwrap();
    assert_eq!(status, 200);
    assert!(selected.lines().count() >= 1);
    for line in selected.lines() {
        let d: serde_json::Value = serde_json::from_str(line).unwrap();
        assert_eq!(
            (d["schema"].as_str(), d["package"].as_str()),
            (Some("olm.bundle"), Some("kubevirt-wol"))
        );
    }
    let (status, _) = e2e::http_get(http_port, "/api/v1/metas?schema=olm.bundle&bogus=1")
        .await
        .unwrap();
    assert_eq!(status, 400);

    package_names(&server).await;
    assert_eq!(metric(http_port, "bundle_tool_catalog_packages").await, 2.0);
    assert!(
        metric(
            http_port,
            "bundle_tool_grpc_requests_total{method=\"ListPackages\"}"
        )
        .await
            >= 1.0
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reloads_on_change_and_sighup_keep_serving_through_an_invalid_catalog() {
    let catalog = tempfile::tempdir().unwrap();
    corpus_catalog("kubevirt-wol", catalog.path());
    let http_port = e2e::free_port().unwrap();
    let server = RegistryServer::start(
        ServerKind::BundleTool,
        catalog.path(),
        &[
            "--http-port",
            &http_port.to_string(),
            "--watch-interval",
            "1",
        ],
        START,
    )
    .await
    .unwrap();
    assert_eq!(package_names(&server).await, ["kubevirt-wol"]);

    // A new package appears on disk: picked up by the watcher.
    corpus_catalog("libredb-studio-operator", catalog.path());
    e2e::eventually(
        Duration::from_secs(20),
        "the new package is served",
        || async { Ok((package_names(&server).await.len() == 2).then_some(())) },
    )
    .await
    .unwrap();
    assert_eq!(
        metric(
            http_port,
            "bundle_tool_catalog_reloads_total{result=\"success\"}"
        )
        .await,
        1.0
    );

    // An invalid catalog: rejected, the previous one keeps serving, the failure is counted.
    std::fs::write(
        catalog.path().join("broken.yaml"),
        "schema: olm.package\nname: Not_A_DNS_Name\n",
    )
    .unwrap();
    e2e::eventually(
        Duration::from_secs(20),
        "the rejected reload is counted",
        || async {
            Ok((metric(
                http_port,
                "bundle_tool_catalog_reloads_total{result=\"failure\"}",
            )
            .await
                == 1.0)
                .then_some(()))
        },
    )
    .await
    .unwrap();
    assert_eq!(
        metric(http_port, "bundle_tool_catalog_last_reload_ok").await,
        0.0
    );
    assert_eq!(package_names(&server).await.len(), 2);
    server.process().check_running().unwrap();

    // Fixed, and reloaded by SIGHUP without waiting for the watcher.
    std::fs::remove_file(catalog.path().join("broken.yaml")).unwrap();
    std::fs::remove_dir_all(catalog.path().join("libredb-studio-operator")).unwrap();
    // SAFETY: kill(2) on the child's pid with a valid signal number.
    unsafe { libc::kill(server.process().pid() as i32, libc::SIGHUP) };
    e2e::eventually(
        Duration::from_secs(20),
        "the fixed catalog is served",
        || async { Ok((package_names(&server).await == ["kubevirt-wol"]).then_some(())) },
    )
    .await
    .unwrap();
    assert_eq!(
        metric(http_port, "bundle_tool_catalog_last_reload_ok").await,
        1.0
    );

    // SIGTERM: a graceful stop, exit 0.
    let status = server.process().terminate(Duration::from_secs(10));
    assert_eq!(status.and_then(|s| s.code()), Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_finishes_on_the_snapshot_it_began_with() {
    let catalog = tempfile::tempdir().unwrap();
    for dir in e2e::corpus::catalogs() {
        e2e::copy_dir(&dir, &catalog.path().join(dir.file_name().unwrap())).unwrap();
    }
    let http_port = e2e::free_port().unwrap();
    let server = RegistryServer::start(
        ServerKind::BundleTool,
        catalog.path(),
        &[
            "--http-port",
            &http_port.to_string(),
            "--watch-interval",
            "0",
        ],
        START,
    )
    .await
    .unwrap();
    let mut client = server.client().await.unwrap();
    let mut full = client
        .list_bundles(api::ListBundlesRequest {})
        .await
        .unwrap()
        .into_inner();
    let first = full.message().await.unwrap().unwrap();

    // Drop every package but one, reload, and wait until the reload is done.
    for dir in e2e::corpus::catalogs().iter().skip(1) {
        std::fs::remove_dir_all(catalog.path().join(dir.file_name().unwrap())).unwrap();
    }
    // SAFETY: kill(2) on the child's pid with a valid signal number.
    unsafe { libc::kill(server.process().pid() as i32, libc::SIGHUP) };
    e2e::eventually(Duration::from_secs(30), "the reload", || async {
        Ok((metric(
            http_port,
            "bundle_tool_catalog_reloads_total{result=\"success\"}",
        )
        .await
            == 1.0)
            .then_some(()))
    })
    .await
    .unwrap();
    let mut count = 1;
    let mut packages = std::collections::BTreeSet::from([first.package_name]);
    while let Some(bundle) = full.message().await.unwrap() {
        packages.insert(bundle.package_name);
        count += 1;
    }
    assert_eq!(
        packages.len(),
        39,
        "the old stream saw the whole old catalog"
    );
    assert!(count > 900, "{count} bundles in the old stream");

    let after = client
        .list_bundles(api::ListBundlesRequest {})
        .await
        .unwrap()
        .into_inner()
        .collect::<Vec<_>>()
        .await;
    let names: std::collections::BTreeSet<String> =
        after.into_iter().map(|b| b.unwrap().package_name).collect();
    assert_eq!(names.len(), 1, "a new stream sees the new catalog");
}

/// Sends raw bytes as a request message, to see how the server treats malformed protobuf.
#[derive(Clone, Default)]
struct RawCodec;

struct RawEncoder;
struct RawDecoder;

impl tonic::codec::Codec for RawCodec {
    type Encode = Vec<u8>;
    type Decode = Vec<u8>;
    type Encoder = RawEncoder;
    type Decoder = RawDecoder;
    fn encoder(&mut self) -> RawEncoder {
        RawEncoder
    }
    fn decoder(&mut self) -> RawDecoder {
        RawDecoder
    }
}

impl tonic::codec::Encoder for RawEncoder {
    type Item = Vec<u8>;
    type Error = tonic::Status;
    fn encode(
        &mut self,
        item: Vec<u8>,
        dst: &mut tonic::codec::EncodeBuf<'_>,
    ) -> Result<(), tonic::Status> {
        bytes::BufMut::put_slice(dst, &item);
        Ok(())
    }
}

impl tonic::codec::Decoder for RawDecoder {
    type Item = Vec<u8>;
    type Error = tonic::Status;
    fn decode(
        &mut self,
        src: &mut tonic::codec::DecodeBuf<'_>,
    ) -> Result<Option<Vec<u8>>, tonic::Status> {
        let remaining = bytes::Buf::remaining(src);
        Ok(Some(bytes::Buf::copy_to_bytes(src, remaining).to_vec()))
    }
}

#[tokio::test]
async fn malformed_requests_get_grpc_errors_and_the_server_keeps_serving() {
    let catalog = tempfile::tempdir().unwrap();
    corpus_catalog("kubevirt-wol", catalog.path());
    let server = RegistryServer::start(ServerKind::BundleTool, catalog.path(), &[], START)
        .await
        .unwrap();
    let channel = server.channel().await.unwrap();
    let mut grpc = tonic::client::Grpc::new(channel);
    for (path, body) in [
        // Field 1 (name) declared as a string but truncated.
        ("/api.Registry/GetPackage", vec![0x0a, 0x10, b'x']),
        // A wire type that does not exist.
        ("/api.Registry/GetBundle", vec![0x0f, 0xff, 0xff]),
        // Not valid UTF-8 in a string field.
        ("/api.Registry/GetPackage", vec![0x0a, 0x02, 0xff, 0xfe]),
        // A method that does not exist.
        ("/api.Registry/DropTables", vec![]),
    ] {
        grpc.ready().await.unwrap();
        let status = grpc
            .unary::<Vec<u8>, Vec<u8>, _>(
                tonic::Request::new(body),
                http::uri::PathAndQuery::from_static(path),
                RawCodec,
            )
            .await
            .expect_err("a malformed request must fail");
        let expected = if path.ends_with("DropTables") {
            tonic::Code::Unimplemented
        } else {
            tonic::Code::Internal
        };
        assert_eq!(status.code(), expected, "{path}: {status:?}");
    }
    // Well-formed requests for things that do not exist: opm's code (UNKNOWN) and text.
    let mut client = server.client().await.unwrap();
    let status = client
        .get_package(api::GetPackageRequest {
            name: String::new(),
        })
        .await
        .unwrap_err();
    assert_eq!(status.code(), tonic::Code::Unknown);
    assert_eq!(status.message(), "package \"\" not found");
    server.process().check_running().unwrap();
    assert_eq!(package_names(&server).await, ["kubevirt-wol"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn load_test_with_reloads_loses_no_request() {
    const REQUESTS: u64 = 100_000;
    const CLIENTS: u64 = 64;
    const RELOADS: u64 = 20;
    let catalog = tempfile::tempdir().unwrap();
    corpus_catalog("kubevirt-wol", catalog.path());
    corpus_catalog("libredb-studio-operator", catalog.path());
    let http_port = e2e::free_port().unwrap();
    let server = RegistryServer::start(
        ServerKind::BundleTool,
        catalog.path(),
        &[
            "--http-port",
            &http_port.to_string(),
            "--watch-interval",
            "0",
        ],
        START,
    )
    .await
    .unwrap();
    let pid = server.process().pid();
    // The server's resident memory; a test that cannot read it fails rather than compare zeros.
    let rss = move || -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
            .unwrap_or_else(|e| panic!("reading /proc/{pid}/status: {e}"));
        status
            .lines()
            .find(|l| l.starts_with("VmRSS:"))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
            .filter(|kib| *kib > 0)
            .unwrap_or_else(|| panic!("no VmRSS in /proc/{pid}/status:\n{status}"))
    };
    let client = server.client().await.unwrap();
    let mut list = client.clone();
    let heads: Vec<(String, String)> = {
        let mut stream = list
            .list_bundles(api::ListBundlesRequest {})
            .await
            .unwrap()
            .into_inner();
        let mut keys = Vec::new();
        while let Some(b) = stream.message().await.unwrap() {
            keys.push((b.package_name, b.channel_name));
        }
        keys
    };
    // Warm up, then take the steady-state footprint.
    for (pkg, ch) in heads.iter().cycle().take(2000) {
        client
            .clone()
            .get_bundle_for_channel(api::GetBundleInChannelRequest {
                pkg_name: pkg.clone(),
                channel_name: ch.clone(),
            })
            .await
            .unwrap();
    }
    let steady = rss();

    let failures = Arc::new(AtomicU64::new(0));
    let done = Arc::new(AtomicU64::new(0));
    // The clients go on until they have sent REQUESTS and the reloads are over, so every
    // reload happens under load.
    let reloading = Arc::new(AtomicBool::new(true));
    let started = Instant::now();
    let mut workers = Vec::new();
    for worker in 0..CLIENTS {
        let (mut client, heads) = (client.clone(), heads.clone());
        let (failures, done, reloading) = (failures.clone(), done.clone(), reloading.clone());
        workers.push(tokio::spawn(async move {
            let mut i = worker as usize;
            while done.fetch_add(1, Ordering::Relaxed) < REQUESTS
                || reloading.load(Ordering::Relaxed)
            {
                let (pkg, ch) = &heads[i % heads.len()];
                i += CLIENTS as usize;
                let answer = client
                    .get_bundle_for_channel(api::GetBundleInChannelRequest {
                        pkg_name: pkg.clone(),
                        channel_name: ch.clone(),
                    })
                    .await;
                if answer.is_err() {
                    failures.fetch_add(1, Ordering::Relaxed);
                }
            }
        }));
    }
    // Reloads while the clients run; the 10th with an invalid catalog. Each SIGHUP is sent
    // once the previous reload is counted (signals that arrive during a reload are merged
    // into one), so all RELOADS of them are handled and counted.
    let broken = catalog.path().join("broken.yaml");
    let reloads_counted = || async {
        let ok = metric(
            http_port,
            "bundle_tool_catalog_reloads_total{result=\"success\"}",
        )
        .await;
        let failed = metric(
            http_port,
            "bundle_tool_catalog_reloads_total{result=\"failure\"}",
        )
        .await;
        (ok + failed) as u64
    };
    for reload in 0..RELOADS {
        tokio::time::sleep(Duration::from_millis(100)).await;
        if reload == 9 {
            std::fs::write(&broken, "schema: olm.package\nname: Not_A_DNS_Name\n").unwrap();
        }
        if reload == 10 {
            std::fs::remove_file(&broken).unwrap();
        }
        // SAFETY: kill(2) on the child's pid with a valid signal number.
        unsafe { libc::kill(pid as i32, libc::SIGHUP) };
        e2e::eventually(Duration::from_secs(30), "the reload counted", || async {
            Ok((reloads_counted().await > reload).then_some(()))
        })
        .await
        .unwrap();
    }
    reloading.store(false, Ordering::Relaxed);
    for worker in workers {
        worker.await.unwrap();
    }
    let elapsed = started.elapsed();
    // Each worker's last increment sent no request.
    let sent = done.load(Ordering::Relaxed) - CLIENTS;
    assert_eq!(reloads_counted().await, RELOADS, "reloads counted");
    let after = rss();
    let server_cpu = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            let fields: Vec<u64> = stat
                .rsplit(") ")
                .next()?
                .split(' ')
                .skip(11)
                .take(2)
                .filter_map(|f| f.parse().ok())
                .collect();
            Some(fields.iter().sum::<u64>() as f64 / 100.0)
        })
        .unwrap_or_default();
    println!("server CPU time {server_cpu:.1} s");
    println!(
        "{sent} GetBundleForChannel at {CLIENTS} clients with {RELOADS} SIGHUP reloads: {:.1} s ({:.0}/s), failures {}, RSS steady {steady} KiB, after {after} KiB",
        elapsed.as_secs_f64(),
        sent as f64 / elapsed.as_secs_f64(),
        failures.load(Ordering::Relaxed)
    );
    assert_eq!(failures.load(Ordering::Relaxed), 0, "failed RPCs");
    assert_eq!(
        metric(
            http_port,
            "bundle_tool_catalog_reloads_total{result=\"failure\"}"
        )
        .await,
        1.0
    );
    assert!(
        after < steady + 16 * 1024,
        "memory did not come back to steady state: {steady} KiB before, {after} KiB after"
    );
    server.process().check_running().unwrap();
}
