//! `bundle-tool serve` against `opm serve` on the same catalog, in one run (not a timed
//! test). Inputs: (a) all 39 corpus catalogs merged, (b) a generated catalog of 20,000 bundles
//! in 500 packages. For each server: time from spawn to health SERVING (opm without a cache,
//! and with a cache pre-built by `opm serve --cache-only`), steady-state RSS after serving a
//! full ListBundles and the GetBundle load, the time of a full ListBundles stream, and GetBundle
//! requests per second from 64 concurrent clients.
//!
//! `cargo build --release -p bundle-tool && cargo bench -p e2e --bench serve`
//! (`SERVE_BENCH_REQUESTS` sets the GetBundle count, default 20,000).

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use bundle_tool::serve::api;
use e2e::registry_server::{RegistryServer, ServerKind};

const CLIENTS: usize = 64;

struct Figures {
    startup: Duration,
    rss_kib: u64,
    list_bundles: Duration,
    requests_per_second: f64,
    bundles: usize,
}

fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

async fn measure(server: &RegistryServer, requests: usize) -> Figures {
    let client = server.client().await.expect("client");
    // A full ListBundles, timed (median of 3); the keys feed the GetBundle load.
    let mut times = Vec::new();
    let mut keys = Vec::new();
    for _ in 0..3 {
        let started = Instant::now();
        let mut stream = client
            .clone()
            .list_bundles(api::ListBundlesRequest {})
            .await
            .expect("ListBundles")
            .into_inner();
        keys.clear();
        while let Some(b) = stream.message().await.expect("stream") {
            keys.push((b.package_name, b.channel_name, b.csv_name));
        }
        times.push(started.elapsed());
    }
    times.sort();
    let keys = Arc::new(keys);
    let next = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let mut workers = Vec::new();
    for _ in 0..CLIENTS {
        let (mut client, keys, next) = (client.clone(), keys.clone(), next.clone());
        workers.push(tokio::spawn(async move {
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= requests {
                    break;
                }
                // A stride through the keys, so that no cache sees only one bundle.
                let (package, channel, name) = &keys[(i * 7919) % keys.len()];
                client
                    .get_bundle(api::GetBundleRequest {
                        pkg_name: package.clone(),
                        channel_name: channel.clone(),
                        csv_name: name.clone(),
                    })
                    .await
                    .expect("GetBundle");
            }
        }));
    }
    for worker in workers {
        worker.await.expect("worker");
    }
    let elapsed = started.elapsed();
    Figures {
        startup: server.startup,
        rss_kib: rss_kib(server.process().pid()),
        list_bundles: times[1],
        requests_per_second: requests as f64 / elapsed.as_secs_f64(),
        bundles: keys.len(),
    }
}

fn prebuild_opm_cache(catalog: &Path, cache: &Path) -> Duration {
    let opm = e2e::assets::Assets::locate()
        .expect("assets")
        .opm()
        .expect("opm");
    let started = Instant::now();
    let status = std::process::Command::new(opm)
        .arg("serve")
        .arg(catalog)
        .arg(format!("--cache-dir={}", cache.display()))
        .args(["--cache-only", "--pprof-addr=", "-t", "/dev/null"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .expect("opm serve --cache-only");
    assert!(status.success(), "opm serve --cache-only failed");
    started.elapsed()
}

fn main() {
    let requests: usize = std::env::var("SERVE_BENCH_REQUESTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000);
    println!("bundle-tool: {}", e2e::bundle_tool_binary().display());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let work = tempfile::tempdir().expect("temp dir");
    let corpus = work.path().join("corpus");
    let generated = work.path().join("generated");
    let corpus_bytes = e2e::corpus::merge_catalogs(&corpus);
    let generated_bytes = e2e::corpus::generate_catalog(&generated, 500, 40);
    for (label, dir, bytes) in [
        ("corpus merged (39 catalogs)", &corpus, corpus_bytes),
        ("generated (20,000 bundles)", &generated, generated_bytes),
    ] {
        println!("\n## {label}: {:.1} MB", bytes as f64 / 1e6);
        let cache = work.path().join(format!("opm-cache-{}", label.len()));
        let prebuild = prebuild_opm_cache(dir, &cache);
        let cache_flag = format!("--cache-dir={}", cache.display());
        let timeout = Duration::from_secs(600);
        let results = runtime.block_on(async {
            let mut results = Vec::new();
            for (name, kind, extra) in [
                ("opm serve (no cache)", ServerKind::Opm, vec![]),
                (
                    "opm serve (pre-built cache)",
                    ServerKind::Opm,
                    vec![cache_flag.as_str()],
                ),
                (
                    "bundle-tool serve",
                    ServerKind::BundleTool,
                    vec!["--watch-interval", "0"],
                ),
            ] {
                let server = RegistryServer::start(kind, dir, &extra, timeout)
                    .await
                    .expect("server");
                let figures = measure(&server, requests).await;
                server.process().terminate(Duration::from_secs(10));
                results.push((name, figures));
            }
            results
        });
        println!(
            "opm cache pre-build (--cache-only): {:.2} s",
            prebuild.as_secs_f64()
        );
        println!(
            "{:<30} {:>10} {:>10} {:>14} {:>14}",
            "server", "start (s)", "RSS (MiB)", "ListBundles", "GetBundle/s"
        );
        for (name, f) in &results {
            println!(
                "{name:<30} {:>10.3} {:>10.1} {:>12.0}ms {:>14.0}   ({} bundles)",
                f.startup.as_secs_f64(),
                f.rss_kib as f64 / 1024.0,
                f.list_bundles.as_secs_f64() * 1000.0,
                f.requests_per_second,
                f.bundles
            );
        }
        let ours = &results[2].1;
        let (no_cache, cached) = (&results[0].1, &results[1].1);
        println!(
            "ratios: start-up {:.1}x vs no cache, {:.1}x vs cache; RSS {:.2} of opm (no cache), {:.2} (cache); ListBundles {:.1}x; GetBundle throughput {:.1}x",
            no_cache.startup.as_secs_f64() / ours.startup.as_secs_f64(),
            cached.startup.as_secs_f64() / ours.startup.as_secs_f64(),
            ours.rss_kib as f64 / no_cache.rss_kib as f64,
            ours.rss_kib as f64 / cached.rss_kib as f64,
            no_cache.list_bundles.as_secs_f64() / ours.list_bundles.as_secs_f64(),
            ours.requests_per_second / no_cache.requests_per_second,
        );
    }
}
