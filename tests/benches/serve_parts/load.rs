//! The serve benchmark's measurements of one running server, with a load generator that costs
//! as little as possible: requests encoded once, answers only checked for status and size.

use std::time::{Duration, Instant};

use bundle_tool::serve::api;
use e2e::registry_server::RegistryServer;

/// What one server did in one round.
#[derive(Clone, Copy)]
pub struct Figures {
    pub startup: Duration,
    pub rss_idle_kib: u64,
    pub rss_kib: u64,
    pub list_bundles: Duration,
    pub requests_per_second: f64,
    pub server_cpu_per_request_us: f64,
    pub client_cpu_per_request_us: f64,
    pub bundles: usize,
    /// Mean GetBundle answer size in bytes (the same answers from every server).
    pub answer_bytes: usize,
}

impl Figures {
    /// Each figure's median over rounds.
    pub fn median_of(rounds: &[Figures]) -> Figures {
        fn median<T: Copy + PartialOrd>(mut values: Vec<T>) -> T {
            values.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
            values[values.len() / 2]
        }
        let m = |f: fn(&Figures) -> f64| median(rounds.iter().map(f).collect());
        let d = |f: fn(&Figures) -> Duration| median(rounds.iter().map(f).collect());
        let k = |f: fn(&Figures) -> u64| median(rounds.iter().map(f).collect());
        Figures {
            startup: d(|f| f.startup),
            rss_idle_kib: k(|f| f.rss_idle_kib),
            rss_kib: k(|f| f.rss_kib),
            list_bundles: d(|f| f.list_bundles),
            requests_per_second: m(|f| f.requests_per_second),
            server_cpu_per_request_us: m(|f| f.server_cpu_per_request_us),
            client_cpu_per_request_us: m(|f| f.client_cpu_per_request_us),
            bundles: rounds[0].bundles,
            answer_bytes: rounds[0].answer_bytes,
        }
    }
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

/// User plus system CPU time of a process (`"self"` for this one), in seconds.
fn cpu_seconds(pid: &str) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command name (which may hold spaces) start at state, field 3.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    // SAFETY: sysconf only reads a constant.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    (ticks(11) + ticks(12)) / hz
}

/// Measures a server that has just started.
pub async fn measure(server: &RegistryServer, requests: usize) -> Figures {
    let pid = server.process().pid();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let rss_idle_kib = rss_kib(pid);
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
    let bodies = crate::get_bundle_load::encoded_requests(&keys, requests);
    let channel = server.channel().await.expect("channel");
    let (server_cpu, client_cpu) = (cpu_seconds(&pid.to_string()), cpu_seconds("self"));
    let started = Instant::now();
    let answered = crate::get_bundle_load::send_all(&channel, bodies).await;
    let elapsed = started.elapsed();
    let per_request = |seconds: f64| seconds * 1e6 / requests as f64;
    let server_cpu = per_request(cpu_seconds(&pid.to_string()) - server_cpu);
    let client_cpu = per_request(cpu_seconds("self") - client_cpu);
    // Steady state: what the server still holds a moment after the burst.
    tokio::time::sleep(Duration::from_secs(2)).await;
    Figures {
        startup: server.startup,
        rss_idle_kib,
        rss_kib: rss_kib(pid),
        list_bundles: times[1],
        requests_per_second: requests as f64 / elapsed.as_secs_f64(),
        server_cpu_per_request_us: server_cpu,
        client_cpu_per_request_us: client_cpu,
        bundles: keys.len(),
        answer_bytes: answered / requests.max(1),
    }
}
