//! A loopback HTTP proxy that fails some requests on purpose — a 503, or a connection cut
//! before any answer — to test that clients retry, or that damages every blob it relays, to
//! test that clients verify digests. One request per connection: the proxy reads a request,
//! forwards it with `Connection: close`, relays the answer and closes.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// What the proxy does wrong.
#[derive(Clone, Copy, Debug)]
enum Fault {
    /// Every `n`-th request (0: none) fails, alternately with a 503 and a cut connection.
    FailEvery(usize),
    /// Every blob download (`GET …/blobs/…`) arrives with its last byte flipped.
    CorruptBlobs,
    /// Every manifest upload (`PUT …/manifests/…`) is answered 403 `DENIED`, as a
    /// registry with immutable tags or a tag policy answers, until [`FaultyProxy::heal`].
    RefuseManifestPuts,
    /// Every upload start that asks for a mount (`POST …/uploads/?mount=…`) is answered 400
    /// `UNSUPPORTED`, as a registry that takes no mount requests may answer.
    RefuseMounts,
    /// Every blob `PUT` into an upload session that a `POST` without a mount request opened
    /// is answered 404 `BLOB_UPLOAD_UNKNOWN`, as a registry answers for a session it has
    /// expired or lost (sessions opened asking for a mount pass).
    ForgetPlainSessions,
}

/// A running proxy; it stops with the test binary.
pub struct FaultyProxy {
    port: u16,
    requests: Arc<AtomicUsize>,
    faults: Arc<AtomicUsize>,
    healed: Arc<AtomicBool>,
}

impl FaultyProxy {
    /// Proxies `127.0.0.1:<upstream>`, failing every `every`-th request (alternately with a
    /// 503 and with a cut connection).
    pub fn start(upstream: u16, every: usize) -> anyhow::Result<Self> {
        Self::start_with(upstream, Fault::FailEvery(every))
    }

    /// Proxies `127.0.0.1:<upstream>`, flipping the last byte of every blob it relays
    /// (counted as faults); manifests and everything else pass unchanged.
    pub fn start_corrupting_blobs(upstream: u16) -> anyhow::Result<Self> {
        Self::start_with(upstream, Fault::CorruptBlobs)
    }

    /// Proxies `127.0.0.1:<upstream>`, refusing every manifest upload with 403 (counted as
    /// faults) until [`heal`](Self::heal): blobs go up, nothing gets a tag.
    pub fn start_refusing_manifests(upstream: u16) -> anyhow::Result<Self> {
        Self::start_with(upstream, Fault::RefuseManifestPuts)
    }

    /// Proxies `127.0.0.1:<upstream>`, answering every mount request with 400 (counted as
    /// faults); plain uploads pass.
    pub fn start_refusing_mounts(upstream: u16) -> anyhow::Result<Self> {
        Self::start_with(upstream, Fault::RefuseMounts)
    }

    /// Proxies `127.0.0.1:<upstream>`, answering 404 to every blob upload into a session
    /// opened without a mount request (counted as faults), as if the registry had lost it.
    pub fn start_forgetting_plain_sessions(upstream: u16) -> anyhow::Result<Self> {
        Self::start_with(upstream, Fault::ForgetPlainSessions)
    }

    /// From now on relays every request unchanged.
    pub fn heal(&self) {
        self.healed.store(true, Ordering::Relaxed);
    }

    fn start_with(upstream: u16, fault: Fault) -> anyhow::Result<Self> {
        let std_listener = std::net::TcpListener::bind(("127.0.0.1", 0))?;
        std_listener.set_nonblocking(true)?;
        let port = std_listener.local_addr()?.port();
        let requests = Arc::new(AtomicUsize::new(0));
        let faults = Arc::new(AtomicUsize::new(0));
        let healed = Arc::new(AtomicBool::new(false));
        let (r, f, h) = (requests.clone(), faults.clone(), healed.clone());
        // Session ids opened by plain POSTs (for ForgetPlainSessions).
        let plain_sessions: Arc<Mutex<HashSet<String>>> = Arc::default();
        std::thread::Builder::new()
            .name("e2e-fault-proxy".into())
            .spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("runtime");
                runtime.block_on(async move {
                    let listener = TcpListener::from_std(std_listener).expect("listener");
                    loop {
                        let Ok((client, _)) = listener.accept().await else {
                            continue;
                        };
                        let (r, f, sessions) = (r.clone(), f.clone(), plain_sessions.clone());
                        let fault = if h.load(Ordering::Relaxed) {
                            Fault::FailEvery(0)
                        } else {
                            fault
                        };
                        tokio::spawn(async move {
                            let _ = handle(client, upstream, fault, r, f, sessions).await;
                        });
                    }
                });
            })?;
        Ok(FaultyProxy {
            port,
            requests,
            faults,
            healed,
        })
    }

    /// The port clients should use.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Requests seen so far.
    pub fn requests(&self) -> usize {
        self.requests.load(Ordering::Relaxed)
    }

    /// Requests failed on purpose so far.
    pub fn faults(&self) -> usize {
        self.faults.load(Ordering::Relaxed)
    }
}

async fn handle(
    mut client: TcpStream,
    upstream: u16,
    fault: Fault,
    requests: Arc<AtomicUsize>,
    faults: Arc<AtomicUsize>,
    plain_sessions: Arc<Mutex<HashSet<String>>>,
) -> anyhow::Result<()> {
    // The request head.
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 8192];
    let head_end = loop {
        let n = client.read(&mut chunk).await?;
        if n == 0 {
            return Ok(());
        }
        buffer.extend_from_slice(&chunk[..n]);
        if let Some(i) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
    };
    let head = String::from_utf8_lossy(&buffer[..head_end]).into_owned();
    let length: usize = head
        .lines()
        .find_map(|l| {
            l.to_ascii_lowercase()
                .strip_prefix("content-length:")
                .map(|v| v.trim().parse().unwrap_or(0))
        })
        .unwrap_or(0);
    while buffer.len() < head_end + length {
        let n = client.read(&mut chunk).await?;
        if n == 0 {
            break;
        }
        buffer.extend_from_slice(&chunk[..n]);
    }
    let number = requests.fetch_add(1, Ordering::Relaxed) + 1;
    if let Fault::FailEvery(every) = fault
        && every > 0
        && number.is_multiple_of(every)
    {
        let count = faults.fetch_add(1, Ordering::Relaxed);
        if count.is_multiple_of(2) {
            client
                .write_all(b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                .await?;
        }
        // Odd faults: close without answering.
        return Ok(());
    }
    let request_line = head.lines().next().unwrap_or_default();
    let refusal: Option<(&str, &[u8])> = match fault {
        Fault::RefuseManifestPuts
            if request_line.starts_with("PUT ") && request_line.contains("/manifests/") =>
        {
            Some((
                "403 Forbidden",
                br#"{"errors":[{"code":"DENIED","message":"tags are immutable here"}]}"#,
            ))
        }
        Fault::RefuseMounts
            if request_line.starts_with("POST ") && request_line.contains("mount=") =>
        {
            Some((
                "400 Bad Request",
                br#"{"errors":[{"code":"UNSUPPORTED","message":"no mounts here"}]}"#,
            ))
        }
        Fault::ForgetPlainSessions
            if request_line.starts_with("PUT ")
                && session_id(request_line)
                    .is_some_and(|id| plain_sessions.lock().expect("lock").contains(id)) =>
        {
            Some((
                "404 Not Found",
                br#"{"errors":[{"code":"BLOB_UPLOAD_UNKNOWN","message":"blob upload unknown to registry"}]}"#,
            ))
        }
        _ => None,
    };
    if let Some((status, body)) = refusal {
        faults.fetch_add(1, Ordering::Relaxed);
        let head = format!(
            "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        );
        client.write_all(head.as_bytes()).await?;
        client.write_all(body).await?;
        return Ok(());
    }
    // Forward with Connection: close, so that each connection carries one request.
    let mut lines: Vec<&str> = head[..head.len() - 4].split("\r\n").collect();
    lines.retain(|l| !l.to_ascii_lowercase().starts_with("connection:"));
    let mut forwarded = lines.join("\r\n").into_bytes();
    forwarded.extend_from_slice(b"\r\nConnection: close\r\n\r\n");
    forwarded.extend_from_slice(&buffer[head_end..]);
    let mut server = TcpStream::connect(("127.0.0.1", upstream)).await?;
    server.write_all(&forwarded).await?;
    let mut answer = Vec::new();
    server.read_to_end(&mut answer).await?;
    let blob_download =
        head.starts_with("GET ") && head.lines().next().is_some_and(|l| l.contains("/blobs/"));
    if matches!(fault, Fault::CorruptBlobs) && blob_download {
        // Only a body is damaged (the answer's head stays valid HTTP): a blob with no body
        // is left alone and not counted.
        let body_start = answer
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .map(|i| i + 4);
        if let Some(start) = body_start
            && answer.len() > start
        {
            *answer.last_mut().expect("a body") ^= 0xff;
            faults.fetch_add(1, Ordering::Relaxed);
        }
    }
    if matches!(fault, Fault::ForgetPlainSessions)
        && request_line.starts_with("POST ")
        && request_line.contains("/blobs/uploads/")
        && !request_line.contains("mount=")
    {
        let answer_head = String::from_utf8_lossy(&answer);
        let location = answer_head.lines().find_map(|l| {
            l.to_ascii_lowercase()
                .starts_with("location:")
                .then(|| l["location:".len()..].trim().to_string())
        });
        if let Some(id) = location.as_deref().and_then(session_id) {
            plain_sessions.lock().expect("lock").insert(id.to_string());
        }
    }
    // Upload locations stay right: the registry builds them from the Host header, which is
    // the proxy's.
    client.write_all(&answer).await?;
    Ok(())
}

/// The upload session id in a request line or `Location` (`…/blobs/uploads/<id>?…`).
fn session_id(text: &str) -> Option<&str> {
    let (_, rest) = text.split_once("/blobs/uploads/")?;
    let id = rest.split(['?', ' ']).next()?;
    (!id.is_empty()).then_some(id)
}
