//! One plain-HTTP session with a registry: kept-alive HTTP/1.1 connections shared by every
//! request of a process, and the registry's auth challenge answered once per session.
//!
//! Why not oci-client here: for an anonymous registry it asks `/v2/` again before nearly
//! every request (17 exchanges for a 2-blob image where 8 do), and building its client loads
//! the system's CA certificates (~25 ms a process) even when no TLS is ever spoken.

use std::sync::Mutex;

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Method, Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use tokio::sync::OnceCell;

use super::credentials::Credentials;

/// How a registry wants to be talked to, learnt from its answer to `GET /v2/`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Access {
    /// Requests go through (anonymously, or with the basic credentials we sent).
    Granted,
    /// The registry wants bearer tokens: left to oci-client, which implements the token dance.
    NeedsToken,
}

/// A failed exchange; `transient` ones (5xx, broken connections) are worth another try.
#[derive(Debug)]
pub struct ExchangeError {
    /// What went wrong, without any credential.
    pub message: String,
    /// Whether retrying may help.
    pub transient: bool,
}

impl std::fmt::Display for ExchangeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl ExchangeError {
    fn broken(what: impl std::fmt::Display) -> Self {
        ExchangeError {
            message: what.to_string(),
            transient: true,
        }
    }
}

/// An answer, its body read in full (bundle blobs and manifests are small).
pub struct Answer {
    /// Status code.
    pub status: StatusCode,
    /// Response headers.
    pub headers: HeaderMap,
    /// Response body.
    pub body: Bytes,
}

/// A plain-HTTP session with one registry (`host[:port]`).
pub struct Session {
    host: String,
    /// `Authorization` value for basic credentials; never logged or put in an error.
    authorization: Option<HeaderValue>,
    /// Idle kept-alive connections.
    idle: Mutex<Vec<SendRequest<Full<Bytes>>>>,
    access: OnceCell<Access>,
}

impl Session {
    /// A session with `host`; nothing is sent until the first request.
    pub fn new(host: &str, credentials: &Credentials) -> Self {
        let authorization = match credentials {
            Credentials::Anonymous => None,
            Credentials::Basic { username, password } => {
                let token = base64::Engine::encode(
                    &base64::engine::general_purpose::STANDARD,
                    format!("{username}:{password}"),
                );
                HeaderValue::from_str(&format!("Basic {token}"))
                    .ok()
                    .map(|mut v| {
                        v.set_sensitive(true);
                        v
                    })
            }
        };
        Session {
            host: host.to_string(),
            authorization,
            idle: Mutex::new(Vec::new()),
            access: OnceCell::new(),
        }
    }

    /// The registry's `host[:port]`.
    pub fn host(&self) -> &str {
        &self.host
    }

    /// Asks `GET /v2/` once per session (concurrent callers wait for the one answer). Basic
    /// credentials are sent with it, so an anonymous or basic-auth registry costs one
    /// exchange per session, not one per request.
    pub async fn access(&self) -> Result<Access, ExchangeError> {
        self.access
            .get_or_try_init(|| async {
                let answer = self
                    .exchange(Method::GET, "/v2/", HeaderMap::new(), Bytes::new())
                    .await?;
                if answer.status.is_success() {
                    return Ok(Access::Granted);
                }
                let challenge = answer
                    .headers
                    .get(http::header::WWW_AUTHENTICATE)
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or_default()
                    .to_ascii_lowercase();
                match answer.status {
                    StatusCode::UNAUTHORIZED if challenge.starts_with("bearer") => {
                        Ok(Access::NeedsToken)
                    }
                    StatusCode::UNAUTHORIZED => Err(ExchangeError {
                        message: if self.authorization.is_some() {
                            format!("{}: unauthorized: the credentials were refused", self.host)
                        } else {
                            format!(
                                "{}: unauthorized: the registry wants credentials",
                                self.host
                            )
                        },
                        transient: false,
                    }),
                    status => Err(status_error(status, "GET /v2/")),
                }
            })
            .await
            .cloned()
    }

    /// One request on a kept-alive connection (a new one when none is idle). A request on a
    /// reused connection that the server closed meanwhile is sent again at once on a fresh
    /// connection, since that is not a fault of the registry.
    pub async fn exchange(
        &self,
        method: Method,
        path_and_query: &str,
        headers: HeaderMap,
        body: Bytes,
    ) -> Result<Answer, ExchangeError> {
        let build = || {
            let mut request = Request::builder()
                .method(method.clone())
                .uri(path_and_query)
                .header(http::header::HOST, &self.host)
                .header(http::header::USER_AGENT, "bundle-tool")
                .body(Full::new(body.clone()))
                .map_err(|e| ExchangeError {
                    message: e.to_string(),
                    transient: false,
                })?;
            request.headers_mut().extend(headers.clone());
            if let Some(authorization) = &self.authorization {
                request
                    .headers_mut()
                    .insert(http::header::AUTHORIZATION, authorization.clone());
            }
            Ok::<_, ExchangeError>(request)
        };
        let started = std::time::Instant::now();
        let answer = self.exchange_on_any(build).await;
        match &answer {
            Ok(answer) => tracing::debug!(
                %method,
                path = path_and_query,
                status = answer.status.as_u16(),
                micros = started.elapsed().as_micros() as u64,
                "registry exchange"
            ),
            Err(error) => {
                tracing::debug!(%method, path = path_and_query, %error, "registry exchange failed")
            }
        }
        answer.map_err(|e| ExchangeError {
            message: format!("{method} {path_and_query}: {}", e.message),
            transient: e.transient,
        })
    }

    /// Sends the request `build` makes on an idle connection, or on a new one when there is
    /// none or the idle one was closed under us.
    async fn exchange_on_any(
        &self,
        build: impl Fn() -> Result<Request<Full<Bytes>>, ExchangeError>,
    ) -> Result<Answer, ExchangeError> {
        let reused = self.idle.lock().map(|mut idle| idle.pop()).ok().flatten();
        if let Some(mut sender) = reused
            && sender.ready().await.is_ok()
        {
            match self.send(sender, build()?).await {
                Ok(answer) => return Ok(answer),
                Err(error) if !error.transient => return Err(error),
                // Closed under us: fall through to a new connection.
                Err(_) => {}
            }
        }
        let sender = self.connect().await?;
        self.send(sender, build()?).await
    }

    async fn connect(&self) -> Result<SendRequest<Full<Bytes>>, ExchangeError> {
        let address = if self.host.contains(':') {
            self.host.clone()
        } else {
            format!("{}:80", self.host)
        };
        let stream = tokio::net::TcpStream::connect(&address)
            .await
            .map_err(|e| ExchangeError::broken(format!("connecting to {address}: {e}")))?;
        // Requests are small and sequential per connection: no Nagle delay.
        let _ = stream.set_nodelay(true);
        let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(ExchangeError::broken)?;
        tokio::spawn(async move {
            // The connection ends when the server closes it or the sender is dropped.
            let _ = connection.await;
        });
        Ok(sender)
    }

    async fn send(
        &self,
        mut sender: SendRequest<Full<Bytes>>,
        request: Request<Full<Bytes>>,
    ) -> Result<Answer, ExchangeError> {
        let response = sender
            .send_request(request)
            .await
            .map_err(ExchangeError::broken)?;
        let (parts, body) = response.into_parts();
        let body = body
            .collect()
            .await
            .map_err(ExchangeError::broken)?
            .to_bytes();
        let closing = parts
            .headers
            .get(http::header::CONNECTION)
            .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"close"));
        if !closing
            && !sender.is_closed()
            && let Ok(mut idle) = self.idle.lock()
        {
            idle.push(sender);
        }
        Ok(Answer {
            status: parts.status,
            headers: parts.headers,
            body,
        })
    }
}

/// The error for an unexpected status: 5xx and 429 are transient, other refusals are not.
pub fn status_error(status: StatusCode, what: &str) -> ExchangeError {
    ExchangeError {
        message: format!("{what}: the registry answered {status}"),
        transient: status.is_server_error() || status == StatusCode::TOO_MANY_REQUESTS,
    }
}
