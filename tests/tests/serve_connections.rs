//! `bundle-tool serve` under many connections: 10,000 idle HTTP/2 clients and slow readers
//! that never read their `ListBundles` stream, with the server's memory measured and a new
//! client served throughout; and a server out of file descriptors, which waits for them to
//! free up (without spinning) and then serves again.

use std::time::{Duration, Instant};

use bundle_tool::serve::api;
use e2e::registry_server::{Launch, RegistryServer, ServerKind};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

const START: Duration = Duration::from_secs(60);
const IDLE: usize = 10_000;
const SLOW_READERS: usize = 200;
/// What a new client may wait for its answers while the server holds the idle and slow
/// connections: not a speed target, only "served, not starved".
const ANSWER_WITHIN: Duration = Duration::from_secs(10);

/// The client side of an HTTP/2 handshake: the connection preface and an empty SETTINGS
/// frame, after which a gRPC client with nothing to ask is idle.
const PREFACE_AND_SETTINGS: &[u8] =
    b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00";

fn corpus_catalog(name: &str, into: &std::path::Path) {
    let dir = e2e::corpus::catalogs()
        .into_iter()
        .find(|d| d.file_name().is_some_and(|n| n == name))
        .unwrap_or_else(|| panic!("corpus catalog {name} is missing"));
    e2e::copy_dir(&dir, &into.join(name)).unwrap();
}

/// A field of `/proc/<pid>/status` in KiB; a test that cannot read it fails.
fn status_kib(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_else(|e| panic!("reading /proc/{pid}/status: {e}"));
    status
        .lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .filter(|kib| *kib > 0)
        .unwrap_or_else(|| panic!("no {field} in /proc/{pid}/status:\n{status}"))
}

/// User and system CPU seconds of `pid` so far.
fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .unwrap_or_else(|e| panic!("reading /proc/{pid}/stat: {e}"));
    let fields: Vec<u64> = stat
        .rsplit(") ")
        .next()
        .unwrap_or_default()
        .split(' ')
        .skip(11)
        .take(2)
        .filter_map(|f| f.parse().ok())
        .collect();
    assert_eq!(fields.len(), 2, "no CPU times in /proc/{pid}/stat: {stat}");
    // SAFETY: sysconf has no preconditions.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    fields.iter().sum::<u64>() as f64 / ticks
}

/// Open file descriptors of `pid`.
fn open_files(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap_or_else(|e| panic!("reading /proc/{pid}/fd: {e}"))
        .count()
}

/// This test process needs `wanted` descriptors: raises its soft limit, or fails saying what
/// to raise.
fn need_open_files(wanted: u64) {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the struct we own.
    assert_eq!(
        unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) },
        0
    );
    assert!(
        limit.rlim_max >= wanted,
        "this test opens {wanted} connections; the hard limit on open files is {}: raise it \
         (e.g. `ulimit -Hn {wanted}` as root, or LimitNOFILE= for the CI service)",
        limit.rlim_max
    );
    if limit.rlim_cur < wanted {
        limit.rlim_cur = limit.rlim_max;
        // SAFETY: setrlimit reads the struct we own.
        assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &limit) }, 0);
    }
}

/// `count` connections to `port` that complete the HTTP/2 handshake and go silent.
async fn idle_clients(port: u16, count: usize) -> Vec<TcpStream> {
    let mut idle = Vec::with_capacity(count);
    for _ in 0..count {
        let mut c = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
        c.write_all(PREFACE_AND_SETTINGS).await.unwrap();
        idle.push(c);
    }
    idle
}

/// The package names and one GetBundleForChannel answer, on a new connection, each within
/// [`ANSWER_WITHIN`].
async fn served(server: &RegistryServer) -> anyhow::Result<(Vec<String>, String)> {
    tokio::time::timeout(ANSWER_WITHIN, async {
        let mut client = server.client().await?;
        let mut stream = client
            .list_packages(api::ListPackageRequest {})
            .await?
            .into_inner();
        let mut names = Vec::new();
        while let Some(p) = stream.message().await? {
            names.push(p.name);
        }
        names.sort();
        let package = client
            .get_package(api::GetPackageRequest {
                name: names[0].clone(),
            })
            .await?
            .into_inner();
        #[allow(deprecated)]
        let bundle = client
            .get_bundle_for_channel(api::GetBundleInChannelRequest {
                pkg_name: package.name.clone(),
                channel_name: package.default_channel_name.clone(),
            })
            .await?
            .into_inner();
        anyhow::Ok((names, bundle.csv_json))
    })
    .await
    .map_err(|_| anyhow::anyhow!("a new client was not answered within {ANSWER_WITHIN:?}"))?
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_connections_and_slow_readers_cost_bounded_memory_and_others_are_served() {
    need_open_files((IDLE + SLOW_READERS + 256) as u64);
    let catalog = tempfile::tempdir().unwrap();
    // Every catalog of the corpus: a ListBundles answer of several flow-control windows.
    e2e::corpus::merge_catalogs(catalog.path());
    let server = RegistryServer::start(ServerKind::BundleTool, catalog.path(), &[], START)
        .await
        .unwrap();
    let pid = server.process().pid();
    let (names, csv) = served(&server).await.unwrap();
    let bundles = {
        let mut stream = server
            .client()
            .await
            .unwrap()
            .list_bundles(api::ListBundlesRequest {})
            .await
            .unwrap()
            .into_inner();
        let mut size = 0;
        while let Some(b) = stream.message().await.unwrap() {
            size += prost::Message::encoded_len(&b);
        }
        size
    };
    let base = status_kib(pid, "VmRSS:");

    // 1. Idle HTTP/2 clients: handshaken, then silent.
    let started = Instant::now();
    let idle = idle_clients(server.port, IDLE).await;
    e2e::eventually(
        Duration::from_secs(60),
        "the server holds every idle connection",
        || async { Ok((open_files(pid) >= IDLE).then_some(())) },
    )
    .await
    .unwrap();
    let connect_time = started.elapsed();
    assert_eq!(served(&server).await.unwrap(), (names.clone(), csv.clone()));
    let with_idle = status_kib(pid, "VmRSS:");

    // 2. Slow readers: each asks for every bundle and reads nothing, so the server's answer
    // waits on HTTP/2 flow control.
    let mut slow = Vec::with_capacity(SLOW_READERS);
    for _ in 0..SLOW_READERS {
        let mut client = server.client().await.unwrap();
        let stream = client
            .list_bundles(api::ListBundlesRequest {})
            .await
            .unwrap()
            .into_inner();
        slow.push((client, stream));
    }
    // Let the server fill what flow control lets it send.
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(served(&server).await.unwrap(), (names.clone(), csv.clone()));
    let with_slow = status_kib(pid, "VmRSS:");
    let peak = status_kib(pid, "VmHWM:");
    server.process().check_running().unwrap();

    let per_idle = (with_idle.saturating_sub(base)) as f64 / IDLE as f64;
    let per_slow = (with_slow.saturating_sub(with_idle)) as f64 / SLOW_READERS as f64;
    println!(
        "RSS: {base} KiB serving, {with_idle} KiB with {IDLE} idle connections ({per_idle:.1} KiB each; connected in {:.1} s), {with_slow} KiB with {SLOW_READERS} slow readers of a {} KiB ListBundles answer ({per_slow:.1} KiB each); peak {peak} KiB",
        connect_time.as_secs_f64(),
        bundles / 1024,
    );
    // The bounds: an idle connection costs the HTTP/2 connection's state and buffers, not
    // a share of the catalog; a slow reader costs what flow control and the send buffer
    // hold (about 400 KiB), not its whole answer.
    assert!(
        per_idle < 32.0,
        "an idle connection costs {per_idle:.1} KiB"
    );
    assert!(
        per_slow < 1024.0 && (per_slow * 1024.0) < bundles as f64,
        "a slow reader costs {per_slow:.1} KiB of a {} KiB answer",
        bundles / 1024
    );

    // 3. The slow readers read at last: every stream completes, whole.
    for (_, mut stream) in slow.drain(..).take(3) {
        let mut size = 0;
        while let Some(b) = stream.message().await.unwrap() {
            size += prost::Message::encoded_len(&b);
        }
        assert_eq!(size, bundles, "a slow reader's answer was cut");
    }
    drop(idle);
    e2e::eventually(
        Duration::from_secs(60),
        "the idle connections closed",
        || async { Ok((open_files(pid) < 1000).then_some(())) },
    )
    .await
    .unwrap();
    assert_eq!(served(&server).await.unwrap(), (names, csv));
}

#[tokio::test]
async fn out_of_file_descriptors_the_server_waits_instead_of_spinning_and_recovers() {
    const LIMIT: u64 = 64;
    let catalog = tempfile::tempdir().unwrap();
    corpus_catalog("kubevirt-wol", catalog.path());
    let server = RegistryServer::start_with(
        ServerKind::BundleTool,
        catalog.path(),
        &[],
        START,
        &Launch {
            open_files: Some(LIMIT),
            ..Launch::default()
        },
    )
    .await
    .unwrap();
    let pid = server.process().pid();
    let expected = served(&server).await.unwrap();

    // More connections than the server may hold: the kernel completes them all (they wait
    // in the listen backlog), the server's accept fails with EMFILE.
    let idle = idle_clients(server.port, 2 * LIMIT as usize).await;
    e2e::eventually(
        Duration::from_secs(30),
        "the server out of descriptors",
        || async { Ok((open_files(pid) as u64 >= LIMIT - 1).then_some(())) },
    )
    .await
    .unwrap();
    tokio::time::sleep(Duration::from_secs(1)).await;
    let (cpu_before, wall) = (cpu_seconds(pid), Instant::now());
    tokio::time::sleep(Duration::from_secs(3)).await;
    let busy = (cpu_seconds(pid) - cpu_before) / wall.elapsed().as_secs_f64();
    println!(
        "out of descriptors ({} open): the server used {:.1} % of a core",
        open_files(pid),
        busy * 100.0
    );
    // A retry loop without back-off keeps a core busy (~100 %); waiting 1 s between tries
    // costs next to nothing.
    assert!(
        busy < 0.2,
        "the server spins at {:.0} % of a core",
        busy * 100.0
    );
    let log = std::fs::read_to_string(server.process().log_path()).unwrap();
    assert!(
        log.contains("cannot accept connections"),
        "the log does not say why new clients wait:\n{log}"
    );
    server.process().check_running().unwrap();

    // Descriptors free up: the clients that waited in the backlog are taken, then new ones.
    drop(idle);
    assert_eq!(served(&server).await.unwrap(), expected);
    let log = std::fs::read_to_string(server.process().log_path()).unwrap();
    assert!(log.contains("accepting connections again"), "{log}");
}
