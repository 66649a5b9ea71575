//! A TLS proxy in front of kube-apiserver that injects the faults a controller meets in a
//! real cluster: every open connection cut at once (watches included, as when a load
//! balancer or the apiserver drops them), and `409 Conflict` answers to writes. It also
//! counts what passes, so a test can tell a controller that backs off from one that hammers
//! the API.
//!
//! It terminates TLS with a certificate of its own (the client's kubeconfig trusts that CA
//! and keeps its bearer token, which is forwarded unchanged) and opens one upstream TLS
//! connection per client connection: HTTP/1.1 is one request at a time, so the pair carries
//! the client's requests in order, streamed both ways (a watch is one long answer).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use anyhow::Context as _;
use bytes::Bytes;
use http_body_util::{BodyExt, Full, combinators::BoxBody};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::AbortHandle;

type Body = BoxBody<Bytes, hyper::Error>;

/// What passed through the proxy, by request line.
#[derive(Debug, Default)]
struct Counts {
    requests: u64,
    /// `METHOD path` (no query) → requests.
    by_request: BTreeMap<String, u64>,
}

struct Shared {
    upstream: u16,
    upstream_tls: tokio_rustls::TlsConnector,
    /// A write (POST, PUT, PATCH, DELETE) is answered 409 with a chance of one in this; 0
    /// for never. Drawn at random: a fixed every-n-th pattern resonates with a reconcile
    /// that makes n writes, refusing the same write every time.
    conflict_one_in: AtomicU64,
    /// The xorshift generator's state (seeded by the test, so a run can be replayed).
    random: AtomicU64,
    conflicts: AtomicU64,
    cuts: AtomicU64,
    connections: Mutex<Vec<AbortHandle>>,
    counts: Mutex<Counts>,
}

/// A running proxy; it stops with the test binary.
pub struct ApiFaultProxy {
    port: u16,
    ca_pem: String,
    shared: Arc<Shared>,
}

impl ApiFaultProxy {
    /// Proxies the apiserver at `127.0.0.1:<upstream>`, whose serving certificate `ca_pem`
    /// signs; its own certificate and CA are written into `dir`.
    pub async fn start(upstream: u16, upstream_ca_pem: &str, dir: &Path) -> anyhow::Result<Self> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let (cert, key, ca_pem) =
            crate::pki::write_serving_pair(dir, "api-fault-proxy", &["127.0.0.1"])?;
        let certs: Vec<CertificateDer<'static>> =
            CertificateDer::pem_file_iter(&cert)?.collect::<Result<_, _>>()?;
        let key = PrivateKeyDer::from_pem_file(&key)?;
        let mut server = rustls::ServerConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()?
            .with_no_client_auth()
            .with_single_cert(certs, key)?;
        server.alpn_protocols = vec![b"http/1.1".to_vec()];
        let mut roots = rustls::RootCertStore::empty();
        for cert in CertificateDer::pem_slice_iter(upstream_ca_pem.as_bytes()) {
            roots.add(cert?)?;
        }
        let client = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()?
            .with_root_certificates(roots)
            .with_no_client_auth();
        let shared = Arc::new(Shared {
            upstream,
            upstream_tls: tokio_rustls::TlsConnector::from(Arc::new(client)),
            conflict_one_in: AtomicU64::new(0),
            random: AtomicU64::new(0x9e37_79b9_7f4a_7c15),
            conflicts: AtomicU64::new(0),
            cuts: AtomicU64::new(0),
            connections: Mutex::new(Vec::new()),
            counts: Mutex::new(Counts::default()),
        });
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        let port = listener.local_addr()?.port();
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(server));
        let accepting = shared.clone();
        tokio::spawn(async move {
            loop {
                let Ok((tcp, _)) = listener.accept().await else {
                    continue;
                };
                let (shared, acceptor) = (accepting.clone(), acceptor.clone());
                let task = tokio::spawn(async move {
                    let _ = relay(tcp, acceptor, shared).await;
                });
                let mut connections = accepting.connections.lock().expect("lock");
                connections.retain(|c| !c.is_finished());
                connections.push(task.abort_handle());
            }
        });
        Ok(ApiFaultProxy {
            port,
            ca_pem,
            shared,
        })
    }

    /// The proxy's address, `https://127.0.0.1:<port>`.
    pub fn server(&self) -> String {
        format!("https://127.0.0.1:{}", self.port)
    }

    /// The CA clients must trust for the proxy.
    pub fn ca_pem(&self) -> &str {
        &self.ca_pem
    }

    /// A kubeconfig for the proxy that authenticates with `token`.
    pub fn kubeconfig_yaml(&self, token: &str) -> String {
        crate::control_plane::kubeconfig_yaml_for(&self.server(), &self.ca_pem, "proxied", token)
    }

    /// Answers a write with 409 Conflict with a chance of one in `n` from now on (0: none),
    /// drawn from a generator seeded with `seed` (not 0).
    pub fn conflict_one_in(&self, n: u64, seed: u64) {
        self.shared.random.store(seed.max(1), Ordering::Relaxed);
        self.shared.conflict_one_in.store(n, Ordering::Relaxed);
    }

    /// Cuts every open connection, watches included; returns how many.
    pub fn cut_connections(&self) -> usize {
        let mut connections = self.shared.connections.lock().expect("lock");
        let open = connections.iter().filter(|c| !c.is_finished()).count();
        for connection in connections.drain(..) {
            connection.abort();
        }
        self.shared.cuts.fetch_add(open as u64, Ordering::Relaxed);
        open
    }

    /// Requests forwarded or answered so far.
    pub fn requests(&self) -> u64 {
        self.shared.counts.lock().expect("lock").requests
    }

    /// 409s injected so far.
    pub fn conflicts(&self) -> u64 {
        self.shared.conflicts.load(Ordering::Relaxed)
    }

    /// Connections cut so far.
    pub fn cuts(&self) -> u64 {
        self.shared.cuts.load(Ordering::Relaxed)
    }

    /// Requests so far by `METHOD path`.
    pub fn requests_by_line(&self) -> BTreeMap<String, u64> {
        self.shared.counts.lock().expect("lock").by_request.clone()
    }
}

async fn relay(
    tcp: TcpStream,
    acceptor: tokio_rustls::TlsAcceptor,
    shared: Arc<Shared>,
) -> anyhow::Result<()> {
    let downstream = acceptor.accept(tcp).await?;
    let upstream_tcp = TcpStream::connect(("127.0.0.1", shared.upstream)).await?;
    let upstream = shared
        .upstream_tls
        .connect(ServerName::try_from("127.0.0.1")?, upstream_tcp)
        .await?;
    let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(upstream))
        .await
        .context("HTTP handshake with the apiserver")?;
    // The upstream half lives as long as this task: aborted with it, so a cut closes the
    // apiserver's side too (a leaked upstream watch would hold the apiserver's resources).
    struct AbortOnDrop(tokio::task::JoinHandle<Result<(), hyper::Error>>);
    impl Drop for AbortOnDrop {
        fn drop(&mut self) {
            self.0.abort();
        }
    }
    let mut upstream_half = AbortOnDrop(tokio::spawn(connection));
    let sender = Arc::new(tokio::sync::Mutex::new(sender));
    let service = hyper::service::service_fn(move |request: hyper::Request<Incoming>| {
        let (shared, sender) = (shared.clone(), sender.clone());
        async move { forward(request, &shared, &sender).await }
    });
    let serving = hyper::server::conn::http1::Builder::new()
        .serve_connection(TokioIo::new(downstream), service);
    // When the apiserver closes its side (a restart), the client's connection closes too,
    // as it would without the proxy; kept open, it would fail its next request instead.
    tokio::select! {
        served = serving => served.map_err(Into::into),
        _ = &mut upstream_half.0 => Ok(()),
    }
}

async fn forward(
    request: hyper::Request<Incoming>,
    shared: &Shared,
    sender: &tokio::sync::Mutex<hyper::client::conn::http1::SendRequest<Incoming>>,
) -> Result<hyper::Response<Body>, hyper::Error> {
    let line = format!("{} {}", request.method(), request.uri().path());
    {
        let mut counts = shared.counts.lock().expect("lock");
        counts.requests += 1;
        *counts.by_request.entry(line).or_default() += 1;
    }
    let write = matches!(
        *request.method(),
        http::Method::POST | http::Method::PUT | http::Method::PATCH | http::Method::DELETE
    );
    let one_in = shared.conflict_one_in.load(Ordering::Relaxed);
    if write && one_in > 0 {
        let draw = shared
            .random
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |mut x| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                Some(x)
            })
            .unwrap_or_default();
        if draw.is_multiple_of(one_in) {
            shared.conflicts.fetch_add(1, Ordering::Relaxed);
            return Ok(conflict(request.uri().path()));
        }
    }
    let mut sender = sender.lock().await;
    sender.ready().await?;
    let answer = sender.send_request(request).await?;
    Ok(answer.map(|body| body.boxed()))
}

/// The apiserver's answer to a write on a stale resourceVersion.
fn conflict(path: &str) -> hyper::Response<Body> {
    let name = path.rsplit('/').next().unwrap_or_default();
    let status = serde_json::json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": format!("Operation cannot be fulfilled on {name}: the object has been modified; please apply your changes to the latest version and try again"),
        "reason": "Conflict",
        "details": {"name": name},
        "code": 409
    });
    hyper::Response::builder()
        .status(409)
        .header("content-type", "application/json")
        .body(
            Full::new(Bytes::from(status.to_string()))
                .map_err(|never| match never {})
                .boxed(),
        )
        .expect("a valid response")
}
