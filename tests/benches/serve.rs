//! `bundle-tool serve` against `opm serve` on the same catalog, in one run (not a timed
//! test). Inputs: (a) all 39 corpus catalogs merged, (b) a generated catalog of 20,000 bundles
//! in 500 packages. For each server: time from spawn to health SERVING (opm without a cache,
//! and with a cache pre-built by `opm serve --cache-only`), RSS when idle after start-up and
//! after serving a full ListBundles and the GetBundle load, the time of a full ListBundles
//! stream, GetBundle requests per second from 64 concurrent clients (20,000 requests on one
//! HTTP/2 connection, a stride through all bundles), and the server's CPU time per request.
//!
//! Fairness on a small machine: the load generator would otherwise compete with the server
//! for the same cores and cap both tools' figures. So every server (opm and ours alike) runs
//! under `taskset -c 0` and this process pins itself to CPU 1 (`sched_setaffinity`), runs a
//! single-threaded runtime, and sends requests encoded once up front; answers are checked for
//! status OK and a non-empty body, never decoded. With fewer than two CPUs nothing is pinned.
//!
//! `cargo build --release -p bundle-tool && cargo bench -p e2e --bench serve`
//!
//! - `SERVE_BENCH_REQUESTS`: the GetBundle count (default 20,000).
//! - `SERVE_BENCH_ROUNDS`: how many times each server runs, in turn (default 1); medians are
//!   printed.
//! - `SERVE_BENCH_BASELINE`: another `bundle-tool` binary to run in the same rounds (an
//!   earlier build, to compare before and after a change on one noisy machine).
//! - `SERVE_BENCH_SKIP_OPM=1`: run only the bundle-tool rows (quick before/after checks with
//!   a baseline; no ratios to opm are printed).

#[path = "serve_parts/get_bundle_load.rs"]
mod get_bundle_load;
#[path = "serve_parts/load.rs"]
mod load;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use e2e::registry_server::{Launch, RegistryServer, ServerKind};
use load::{Figures, measure};

/// The CPU the servers run on; the load generator takes the next one.
const SERVER_CPU: usize = 0;

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

/// Pins this process to the CPU after the servers'; `false` when the machine has one CPU.
fn pin_load_generator() -> bool {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    if cpus < 2 {
        return false;
    }
    // SAFETY: a zeroed cpu_set_t is a valid empty set; the calls only read and write it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(SERVER_CPU + 1, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0
    }
}

/// One server row: how to start it, and its figures from every round.
struct Row {
    name: &'static str,
    kind: ServerKind,
    program: Option<PathBuf>,
    extra: Vec<String>,
    rounds: Vec<Figures>,
}

fn main() {
    let env_usize = |name: &str, default: usize| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let requests = env_usize("SERVE_BENCH_REQUESTS", 20_000);
    let rounds = env_usize("SERVE_BENCH_ROUNDS", 1).max(1);
    let baseline = std::env::var_os("SERVE_BENCH_BASELINE").map(PathBuf::from);
    let pinned = pin_load_generator();
    let cpus = pinned.then(|| SERVER_CPU.to_string());
    println!("bundle-tool: {}", e2e::bundle_tool_binary().display());
    println!(
        "servers pinned to CPU {SERVER_CPU}, load generator to CPU {}: {pinned}",
        SERVER_CPU + 1
    );
    let runtime = tokio::runtime::Builder::new_current_thread()
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
        let skip_opm = std::env::var_os("SERVE_BENCH_SKIP_OPM").is_some();
        let prebuild = if skip_opm {
            Duration::ZERO
        } else {
            prebuild_opm_cache(dir, &cache)
        };
        let mut rows = vec![
            Row {
                name: "opm serve (no cache)",
                kind: ServerKind::Opm,
                program: None,
                extra: vec![],
                rounds: vec![],
            },
            Row {
                name: "opm serve (pre-built cache)",
                kind: ServerKind::Opm,
                program: None,
                extra: vec![format!("--cache-dir={}", cache.display())],
                rounds: vec![],
            },
            Row {
                name: "bundle-tool serve",
                kind: ServerKind::BundleTool,
                program: None,
                extra: vec!["--watch-interval".into(), "0".into()],
                rounds: vec![],
            },
        ];
        if skip_opm {
            rows.retain(|row| row.kind == ServerKind::BundleTool);
        }
        if let Some(program) = &baseline {
            rows.push(Row {
                name: "bundle-tool serve (baseline)",
                kind: ServerKind::BundleTool,
                program: Some(program.clone()),
                extra: vec!["--watch-interval".into(), "0".into()],
                rounds: vec![],
            });
        }
        runtime.block_on(async {
            for _ in 0..rounds {
                for row in rows.iter_mut() {
                    let launch = Launch {
                        program: row.program.clone(),
                        cpus: cpus.clone(),
                        ..Launch::default()
                    };
                    let extra: Vec<&str> = row.extra.iter().map(String::as_str).collect();
                    let server = RegistryServer::start_with(
                        row.kind,
                        dir,
                        &extra,
                        Duration::from_secs(600),
                        &launch,
                    )
                    .await
                    .expect("server");
                    row.rounds.push(measure(&server, requests).await);
                    server.process().terminate(Duration::from_secs(10));
                }
            }
        });
        println!(
            "opm cache pre-build (--cache-only): {:.2} s; medians of {rounds} round(s)",
            prebuild.as_secs_f64()
        );
        println!(
            "{:<30} {:>9} {:>9} {:>9} {:>11} {:>11} {:>12} {:>10}",
            "server",
            "start (s)",
            "RSS idle",
            "RSS load",
            "ListBundles",
            "GetBundle/s",
            "CPU µs/req",
            "client µs"
        );
        let summary: Vec<Figures> = rows.iter().map(|r| Figures::median_of(&r.rounds)).collect();
        for (row, f) in rows.iter().zip(&summary) {
            println!(
                "{:<30} {:>9.3} {:>8.1}M {:>8.1}M {:>9.0}ms {:>11.0} {:>12.1} {:>10.1}   ({} bundles, {:.1} KB/answer)",
                row.name,
                f.startup.as_secs_f64(),
                f.rss_idle_kib as f64 / 1024.0,
                f.rss_kib as f64 / 1024.0,
                f.list_bundles.as_secs_f64() * 1000.0,
                f.requests_per_second,
                f.server_cpu_per_request_us,
                f.client_cpu_per_request_us,
                f.bundles,
                f.answer_bytes as f64 / 1e3
            );
        }
        if skip_opm {
            continue;
        }
        let (no_cache, cached, ours) = (&summary[0], &summary[1], &summary[2]);
        println!(
            "ratios: start-up {:.1}x vs no cache, {:.1}x vs cache; RSS {:.2} of opm (no cache), {:.2} (cache); ListBundles {:.1}x; GetBundle throughput {:.1}x (no cache), {:.1}x (cache); server CPU per request {:.2} of opm",
            no_cache.startup.as_secs_f64() / ours.startup.as_secs_f64(),
            cached.startup.as_secs_f64() / ours.startup.as_secs_f64(),
            ours.rss_kib as f64 / no_cache.rss_kib as f64,
            ours.rss_kib as f64 / cached.rss_kib as f64,
            no_cache.list_bundles.as_secs_f64() / ours.list_bundles.as_secs_f64(),
            ours.requests_per_second / no_cache.requests_per_second,
            ours.requests_per_second / cached.requests_per_second,
            ours.server_cpu_per_request_us / no_cache.server_cpu_per_request_us,
        );
    }
}
