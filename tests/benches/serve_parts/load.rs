//! The serve benchmark's measurements of one running server, with a load generator that costs
//! as little as possible: requests encoded once, answers only checked for status and size.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use bundle_tool::serve::api;
use bytes::{Buf, BufMut, Bytes};
use e2e::registry_server::RegistryServer;
use prost::Message;
use tonic::Status;
use tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};
use tonic::codegen::http::uri::PathAndQuery;

/// Concurrent GetBundle clients.
const CLIENTS: usize = 64;

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

/// Sends pre-encoded request bytes and reads an answer as its length only.
#[derive(Clone, Copy, Default)]
struct RawCodec;

struct RawEncoder;
struct RawDecoder;

impl Codec for RawCodec {
    type Encode = Bytes;
    type Decode = usize;
    type Encoder = RawEncoder;
    type Decoder = RawDecoder;

    fn encoder(&mut self) -> RawEncoder {
        RawEncoder
    }

    fn decoder(&mut self) -> RawDecoder {
        RawDecoder
    }
}

impl Encoder for RawEncoder {
    type Item = Bytes;
    type Error = Status;

    fn encode(&mut self, item: Bytes, dst: &mut EncodeBuf<'_>) -> Result<(), Status> {
        dst.put_slice(&item);
        Ok(())
    }
}

impl Decoder for RawDecoder {
    type Item = usize;
    type Error = Status;

    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<usize>, Status> {
        let length = src.remaining();
        src.advance(length);
        Ok(Some(length))
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
    // A stride through the keys, so that no cache sees only one bundle.
    let bodies: Arc<Vec<Bytes>> = Arc::new(
        (0..requests)
            .map(|i| {
                let (package, channel, name) = &keys[(i * 7919) % keys.len()];
                let request = api::GetBundleRequest {
                    pkg_name: package.clone(),
                    channel_name: channel.clone(),
                    csv_name: name.clone(),
                };
                Bytes::from(request.encode_to_vec())
            })
            .collect(),
    );
    let channel = server.channel().await.expect("channel");
    let next = Arc::new(AtomicUsize::new(0));
    let answered = Arc::new(AtomicUsize::new(0));
    let (server_cpu, client_cpu) = (cpu_seconds(&pid.to_string()), cpu_seconds("self"));
    let started = Instant::now();
    let mut workers = Vec::new();
    for _ in 0..CLIENTS {
        let mut grpc =
            tonic::client::Grpc::new(channel.clone()).max_decoding_message_size(64 * 1024 * 1024);
        let (bodies, next, answered) = (bodies.clone(), next.clone(), answered.clone());
        workers.push(tokio::spawn(async move {
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(body) = bodies.get(i) else {
                    break;
                };
                grpc.ready().await.expect("ready");
                let answer = grpc
                    .unary(
                        tonic::Request::new(body.clone()),
                        PathAndQuery::from_static("/api.Registry/GetBundle"),
                        RawCodec,
                    )
                    .await
                    .expect("GetBundle");
                assert!(*answer.get_ref() > 0, "empty GetBundle answer");
                answered.fetch_add(*answer.get_ref(), Ordering::Relaxed);
            }
        }));
    }
    for worker in workers {
        worker.await.expect("worker");
    }
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
        answer_bytes: answered.load(Ordering::Relaxed) / requests.max(1),
    }
}
