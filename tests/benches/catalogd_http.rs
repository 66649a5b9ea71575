//! `bundle-tool serve --http-port` against OLM v1's catalogd (operator-controller v1.11.0, a
//! process on the test control plane), same catalog, in the same run: requests per second
//! at 64 concurrent clients, each on one kept-alive connection, for `/api/v1/all` and a
//! `metas` query, and each server's peak resident memory during the load.
//!
//! ```sh
//! cargo build --profile quick-release -p bundle-tool
//! cargo bench --profile quick-release -p e2e --bench catalogd_http
//! ```
//!
//! catalogd answers over HTTPS (it cannot serve without TLS), ours over plain HTTP: the TLS
//! cost is catalogd's, as a client meets it. Both servers and the clients share the machine.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use e2e::catalogd::{Catalogd, CatalogdOptions};
use e2e::registry_server::{RegistryServer, ServerKind};
use e2e::{ControlPlane, OciRegistry, RegistryAuth};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

const CLIENTS: usize = 64;
const LOAD: Duration = Duration::from_secs(10);

/// Reads one HTTP/1.1 answer with a `Content-Length` body from a kept-alive connection;
/// returns (status, body length). `buffer` keeps bytes read past the answer.
async fn read_answer<S: AsyncRead + Unpin>(
    stream: &mut S,
    buffer: &mut Vec<u8>,
) -> anyhow::Result<(u16, usize)> {
    let mut chunk = vec![0u8; 64 * 1024];
    let head_end = loop {
        if let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break end;
        }
        let n = stream.read(&mut chunk).await?;
        anyhow::ensure!(n > 0, "the server closed the connection");
        buffer.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buffer[..head_end]).into_owned();
    let status: u16 = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| anyhow::anyhow!("no status line in {head:?}"))?;
    let length: usize = head
        .lines()
        .filter_map(|l| l.split_once(':'))
        .find(|(n, _)| n.trim().eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.trim().parse().ok())
        .ok_or_else(|| anyhow::anyhow!("no Content-Length in {head:?}"))?;
    let total = head_end + 4 + length;
    while buffer.len() < total {
        let n = stream.read(&mut chunk).await?;
        anyhow::ensure!(n > 0, "the server closed the connection mid-body");
        buffer.extend_from_slice(&chunk[..n]);
    }
    buffer.drain(..total);
    Ok((status, length))
}

/// Makes a new connection to a server.
type Connector<S> = Arc<
    dyn Fn() -> std::pin::Pin<Box<dyn std::future::Future<Output = anyhow::Result<S>> + Send>>
        + Send
        + Sync,
>;

/// One client: connects, then requests `path` until `stop`, counting complete answers of
/// `expected` bytes; any other answer is an error. catalogd closes a connection that waits
/// more than its 5 s `ReadTimeout` for a request, so each client connects just before it
/// starts, and one that finds its connection closed between answers connects again (counted).
async fn client<S: AsyncRead + AsyncWrite + Unpin>(
    connect: Connector<S>,
    host: String,
    path: String,
    expected: usize,
    stop: Arc<AtomicBool>,
    counts: Arc<(AtomicU64, AtomicU64)>,
) -> anyhow::Result<()> {
    let request = format!("GET {path} HTTP/1.1\r\nHost: {host}\r\n\r\n");
    let mut stream = connect().await?;
    let mut buffer = Vec::new();
    while !stop.load(Ordering::Relaxed) {
        let answer = match stream.write_all(request.as_bytes()).await {
            Ok(()) => read_answer(&mut stream, &mut buffer).await,
            Err(error) => Err(error.into()),
        };
        let (status, length) = match answer {
            Ok(answer) => answer,
            Err(_) if buffer.is_empty() => {
                counts.1.fetch_add(1, Ordering::Relaxed);
                stream = connect().await?;
                continue;
            }
            Err(error) => return Err(error),
        };
        anyhow::ensure!(
            status == 200 && length == expected,
            "{path}: status {status}, {length} bytes (expected {expected})"
        );
        counts.0.fetch_add(1, Ordering::Relaxed);
    }
    Ok(())
}

/// The resident memory of `pid` in bytes.
fn rss(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches(" kB").trim().parse::<u64>().ok())
        })
        .map(|kib| kib * 1024)
        .unwrap_or(0)
}

struct Result {
    requests_per_second: f64,
    peak_rss: u64,
    reconnects: u64,
}

/// Runs `CLIENTS` clients for `LOAD`, sampling `pid`'s memory.
async fn load<S>(connect: Connector<S>, host: &str, path: &str, expected: usize, pid: u32) -> Result
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let stop = Arc::new(AtomicBool::new(false));
    let counts = Arc::new((AtomicU64::new(0), AtomicU64::new(0)));
    let tasks: Vec<_> = (0..CLIENTS)
        .map(|_| {
            tokio::spawn(client(
                connect.clone(),
                host.to_string(),
                path.to_string(),
                expected,
                stop.clone(),
                counts.clone(),
            ))
        })
        .collect();
    // Connections and TLS handshakes first: count from the first second on.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let before = counts.0.load(Ordering::Relaxed);
    let started = Instant::now();
    let mut peak = rss(pid);
    while started.elapsed() < LOAD {
        tokio::time::sleep(Duration::from_millis(100)).await;
        peak = peak.max(rss(pid));
    }
    let done = counts.0.load(Ordering::Relaxed) - before;
    let elapsed = started.elapsed();
    stop.store(true, Ordering::Relaxed);
    for task in tasks {
        task.await.expect("a client task").expect("a client");
    }
    Result {
        requests_per_second: done as f64 / elapsed.as_secs_f64(),
        peak_rss: peak,
        reconnects: counts.1.load(Ordering::Relaxed),
    }
}

/// The length of one plain answer to `path` from our server (the clients check every answer
/// against it).
async fn answer_length(address: &str, path: &str) -> usize {
    let answer = e2e::catalogd::http_request(address, "GET", path, &[])
        .await
        .expect("an answer");
    assert_eq!(answer.status, 200, "{path}");
    answer.body.len()
}

/// Pushes `dir` as a catalog image (catalogd reads only `/configs`, so the server layer is a
/// small stand-in), serves it from a ClusterCatalog, and returns catalogd's base URL.
async fn catalogd_base(
    client: &kube::Client,
    registry: &OciRegistry,
    catalogd: &Catalogd,
    dir: &Path,
    name: &str,
) -> String {
    let built =
        bundle_tool::image::build_runnable_catalog_image(dir, Path::new("/bin/busybox")).unwrap();
    let reference = format!("{}/bench/{name}:latest", registry.host());
    bundle_tool::image::RegistryClient::new(
        &bundle_tool::image::Transport {
            plain_http: true,
            ..Default::default()
        },
        Default::default(),
    )
    .expect("a plain-HTTP client")
    .push(
        &bundle_tool::image::parse_reference(&reference).unwrap(),
        &built.image,
    )
    .await
    .unwrap();
    catalogd
        .serve_catalog(client, name, &reference)
        .await
        .unwrap()
}

/// The largest corpus catalog by bytes, beside the repository's own.
fn largest_corpus_catalog() -> PathBuf {
    e2e::corpus::catalogs()
        .into_iter()
        .max_by_key(|dir| walk_size(dir))
        .expect("the corpus has catalogs")
}

fn walk_size(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| {
            let path = entry.path();
            if path.is_dir() {
                walk_size(&path)
            } else {
                entry.metadata().map(|m| m.len()).unwrap_or(0)
            }
        })
        .sum()
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let plane = ControlPlane::shared().await.unwrap();
        let client = plane.client().await.unwrap();
        let registry = OciRegistry::start(RegistryAuth::Anonymous).await.unwrap();
        let catalogd = Arc::new(
            Catalogd::start(
                &plane,
                &registry.host(),
                CatalogdOptions {
                    metas_handler: true,
                },
            )
            .await
            .unwrap(),
        );
        let repository = Path::new(env!("CARGO_MANIFEST_DIR")).join("../catalog");
        println!(
            "| catalog | path | catalogd req/s | ours req/s | ratio | catalogd peak RSS | ours peak RSS | ratio |"
        );
        println!("|---|---|---|---|---|---|---|---|");
        for (label, dir) in [
            ("Redis (`catalog/`)", repository),
            ("largest corpus catalog", largest_corpus_catalog()),
        ] {
            let name = format!(
                "bench-{}",
                dir.file_name().unwrap().to_string_lossy().to_ascii_lowercase()
            )
            .replace(|c: char| !c.is_ascii_alphanumeric() && c != '-', "-");
            let base = catalogd_base(&client, &registry, &catalogd, &dir, &name).await;
            let http_port = e2e::free_port().unwrap();
            let ours = RegistryServer::start(
                ServerKind::BundleTool,
                &dir,
                &["--http-port", &http_port.to_string()],
                Duration::from_secs(60),
            )
            .await
            .unwrap();
            let ours_address = format!("127.0.0.1:{http_port}");
            let rest = base.strip_prefix("https://").unwrap();
            let (theirs_address, prefix) = rest.split_at(rest.find('/').unwrap());
            let theirs_address = theirs_address.to_string();
            for path in ["/api/v1/all", "/api/v1/metas?schema=olm.package"] {
                let expected_ours = answer_length(&ours_address, path).await;
                let theirs_answer = catalogd
                    .request("GET", &format!("{base}{path}"), &[])
                    .await
                    .unwrap();
                assert_eq!(theirs_answer.status, 200, "catalogd {path}");
                let connect_theirs: Connector<_> = {
                    let (catalogd, address) = (catalogd.clone(), theirs_address.clone());
                    Arc::new(move || {
                        let (catalogd, address) = (catalogd.clone(), address.clone());
                        Box::pin(async move { catalogd.connect(&address).await })
                    })
                };
                let theirs = load(
                    connect_theirs,
                    &theirs_address,
                    &format!("{prefix}{path}"),
                    theirs_answer.body.len(),
                    catalogd.process().pid(),
                )
                .await;
                let connect_ours: Connector<_> = {
                    let address = ours_address.clone();
                    Arc::new(move || {
                        let address = address.clone();
                        Box::pin(async move { Ok(tokio::net::TcpStream::connect(address).await?) })
                    })
                };
                let mine = load(
                    connect_ours,
                    &ours_address,
                    path,
                    expected_ours,
                    ours.process().pid(),
                )
                .await;
                if theirs.reconnects + mine.reconnects > 0 {
                    eprintln!(
                        "{label} {path}: reconnects catalogd {} ours {}",
                        theirs.reconnects, mine.reconnects
                    );
                }
                let mib = |bytes: u64| bytes as f64 / (1024.0 * 1024.0);
                println!(
                    "| {label} | `{path}` | {:.0} | {:.0} | {:.1}× | {:.1} MiB | {:.1} MiB | {:.2} |",
                    theirs.requests_per_second,
                    mine.requests_per_second,
                    mine.requests_per_second / theirs.requests_per_second,
                    mib(theirs.peak_rss),
                    mib(mine.peak_rss),
                    mine.peak_rss as f64 / theirs.peak_rss as f64,
                );
            }
            ours.process().stop(Duration::from_secs(5));
        }
    });
}
