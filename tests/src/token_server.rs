//! A token server of the Docker registry token protocol on loopback, over HTTPS, for a
//! `docker-registry` configured with `auth: token` (see [`crate::TokenRegistry`]).
//!
//! The protocol as docker-registry 2.8 checks it (distribution v2.8.3
//! `registry/auth/token/token.go` and `accesscontroller.go`): a `GET <realm>?service=S&scope=…`
//! with HTTP Basic credentials (or none); the answer `{"token", "access_token", "expires_in"}`;
//! the token a JWT signed ES256 whose header carries the signing certificate as `x5c`, which
//! must chain to the registry's `rootcertbundle`, and whose claims hold `iss`, `aud` (one
//! string, not a list, in 2.8), `exp`, `nbf` (whole seconds, no leeway) and `access[]`. A
//! scope the caller may not have is left out of `access`, as the spec says (the registry then
//! refuses the request itself); only wrong credentials get a 401 here.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use http_body_util::Full;
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;
use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

/// Who may do what.
#[derive(Clone, Debug)]
pub struct TokenPolicy {
    /// User name → password.
    pub users: BTreeMap<String, String>,
    /// (user, repository) pairs that may push; every user and anonymous may pull anything.
    pub pushers: Vec<(String, String)>,
    /// How long a token lasts (whole seconds; docker-registry 2.8 checks `exp` to the second).
    pub lifetime: Duration,
}

/// A token handed out, for tests to look at.
#[derive(Clone, Debug)]
pub struct IssuedToken {
    /// The user, or `None` for anonymous.
    pub user: Option<String>,
    /// The scopes granted (`repository:NAME:ACTIONS`), one per requested scope.
    pub granted: Vec<String>,
    /// The token itself (a secret: tests check no output shows it).
    pub token: String,
}

/// What the server was asked, for tests.
#[derive(Debug, Default)]
pub struct TokenLog {
    /// Tokens issued, in order.
    pub issued: Vec<IssuedToken>,
    /// Requests refused for wrong credentials.
    pub refused_logins: usize,
}

struct Signer {
    key: EcdsaKeyPair,
    /// The signing certificate, DER, for the `x5c` header.
    certificate: Vec<u8>,
    service: String,
    issuer: String,
}

struct Shared {
    policy: Mutex<TokenPolicy>,
    signer: Signer,
    first_signer: Option<Signer>,
    log: Mutex<TokenLog>,
}

/// The running server; stopped when dropped.
pub struct TokenServer {
    address: std::net::SocketAddr,
    shared: Arc<Shared>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// What the server needs: its TLS pair and the JWT signing pair (PKCS#8 DER keys).
pub struct TokenServerKeys {
    /// The serving certificate chain (DER).
    pub serving_chain: Vec<CertificateDer<'static>>,
    /// Its key (PKCS#8 DER).
    pub serving_key: Vec<u8>,
    /// The JWT signing certificate (DER), sent as `x5c`.
    pub signing_certificate: Vec<u8>,
    /// Its P-256 key (PKCS#8 DER).
    pub signing_key: Vec<u8>,
    /// A signing pair (certificate DER, key PKCS#8 DER) for the first token only: one whose
    /// certificate has expired makes the registry refuse a token whose own `exp` says it is
    /// still good, as when the registry's clock runs ahead of the client's.
    pub first_token_signer: Option<(Vec<u8>, Vec<u8>)>,
}

impl TokenServer {
    /// Serves on `127.0.0.1:<free port>` from a thread of its own (tests run the client as a
    /// child process, often from a single-threaded runtime).
    pub fn start(
        keys: TokenServerKeys,
        service: &str,
        issuer: &str,
        policy: TokenPolicy,
    ) -> anyhow::Result<TokenServer> {
        let rng = ring::rand::SystemRandom::new();
        let key =
            EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &keys.signing_key, &rng)
                .map_err(|e| anyhow::anyhow!("the JWT signing key: {e}"))?;
        let first_signer = match keys.first_token_signer {
            Some((certificate, key)) => Some(Signer {
                key: EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &key, &rng)
                    .map_err(|e| anyhow::anyhow!("the first token's signing key: {e}"))?,
                certificate,
                service: service.to_string(),
                issuer: issuer.to_string(),
            }),
            None => None,
        };
        let shared = Arc::new(Shared {
            first_signer,
            policy: Mutex::new(policy),
            signer: Signer {
                key,
                certificate: keys.signing_certificate,
                service: service.to_string(),
                issuer: issuer.to_string(),
            },
            log: Mutex::new(TokenLog::default()),
        });
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut tls = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()?
            .with_no_client_auth()
            .with_single_cert(
                keys.serving_chain,
                PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(keys.serving_key)),
            )?;
        tls.alpn_protocols = vec![b"http/1.1".to_vec()];
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(tls));
        let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
        listener.set_nonblocking(true)?;
        let address = listener.local_addr()?;
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let serving = shared.clone();
        let thread = std::thread::Builder::new()
            .name("token-server".into())
            .spawn(move || {
                let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                else {
                    return;
                };
                runtime.block_on(async move {
                    let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
                        return;
                    };
                    let accepting = async {
                        loop {
                            let Ok((tcp, _)) = listener.accept().await else {
                                continue;
                            };
                            let (acceptor, shared) = (acceptor.clone(), serving.clone());
                            tokio::spawn(async move {
                                let Ok(tls) = acceptor.accept(tcp).await else {
                                    return;
                                };
                                let service = hyper::service::service_fn(move |request| {
                                    let shared = shared.clone();
                                    async move {
                                        Ok::<_, std::convert::Infallible>(answer(&shared, &request))
                                    }
                                });
                                let _ = hyper::server::conn::http1::Builder::new()
                                    .serve_connection(TokioIo::new(tls), service)
                                    .await;
                            });
                        }
                    };
                    tokio::select! {
                        () = accepting => {}
                        _ = stopped => {}
                    }
                });
            })?;
        Ok(TokenServer {
            address,
            shared,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// The realm URL, `https://127.0.0.1:<port>/token`.
    pub fn realm(&self) -> String {
        format!("https://{}/token", self.address)
    }

    /// Replaces how long new tokens last.
    pub fn set_lifetime(&self, lifetime: Duration) {
        self.shared.policy.lock().expect("policy").lifetime = lifetime;
    }

    /// A copy of what was issued and refused so far.
    pub fn issued(&self) -> Vec<IssuedToken> {
        self.shared.log.lock().expect("log").issued.clone()
    }

    /// How many requests had wrong credentials.
    pub fn refused_logins(&self) -> usize {
        self.shared.log.lock().expect("log").refused_logins
    }
}

impl Drop for TokenServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn json_response(status: u16, body: String) -> hyper::Response<Full<Bytes>> {
    hyper::Response::builder()
        .status(status)
        .header("Content-Type", "application/json")
        .body(Full::new(Bytes::from(body)))
        .expect("a valid response")
}

/// The answer to one request: a token, or the refusal of wrong credentials.
fn answer<B>(shared: &Shared, request: &hyper::Request<B>) -> hyper::Response<Full<Bytes>> {
    if request.uri().path() != "/token" {
        return json_response(404, r#"{"errors":[{"code":"NOT_FOUND"}]}"#.into());
    }
    let query = request.uri().query().unwrap_or_default();
    let scopes: Vec<String> = query
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .filter(|(name, _)| *name == "scope")
        .map(|(_, value)| percent_decode(value))
        .flat_map(|value| {
            value
                .split(' ')
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .collect();
    let policy = shared.policy.lock().expect("policy").clone();
    let user = match basic_credentials(request) {
        None => None,
        Some((user, password)) => {
            if policy.users.get(&user) != Some(&password) {
                shared.log.lock().expect("log").refused_logins += 1;
                // The registry's words for a failed login, as distribution's errcode JSON.
                return json_response(
                    401,
                    format!(
                        r#"{{"errors":[{{"code":"UNAUTHORIZED","message":"incorrect username or password for {user}"}}]}}"#
                    ),
                );
            }
            Some(user)
        }
    };
    let mut access = Vec::new();
    let mut granted = Vec::new();
    for scope in &scopes {
        let mut parts = scope.splitn(3, ':');
        let (Some(kind), Some(name), Some(actions)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        if kind != "repository" {
            continue;
        }
        let allowed: Vec<&str> = actions
            .split(',')
            .filter(|action| match *action {
                "pull" => true,
                "push" => user.as_ref().is_some_and(|user| {
                    policy
                        .pushers
                        .iter()
                        .any(|(u, repository)| u == user && repository == name)
                }),
                _ => false,
            })
            .collect();
        granted.push(format!("repository:{name}:{}", allowed.join(",")));
        access.push(serde_json::json!({"type": "repository", "name": name, "actions": allowed}));
    }
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs();
    let lifetime = policy.lifetime.as_secs();
    let jti = shared.log.lock().expect("log").issued.len();
    let signer = match &shared.first_signer {
        Some(first) if jti == 0 => first,
        _ => &shared.signer,
    };
    let claims = serde_json::json!({
        "iss": shared.signer.issuer,
        "sub": user.clone().unwrap_or_default(),
        "aud": shared.signer.service,
        "exp": now + lifetime,
        "nbf": now,
        "iat": now,
        "jti": format!("e2e-{jti}"),
        "access": access,
    });
    let header = serde_json::json!({
        "typ": "JWT",
        "alg": "ES256",
        "x5c": [STANDARD.encode(&signer.certificate)],
    });
    let signing_input = format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(header.to_string()),
        URL_SAFE_NO_PAD.encode(claims.to_string())
    );
    let rng = ring::rand::SystemRandom::new();
    let Ok(signature) = signer.key.sign(&rng, signing_input.as_bytes()) else {
        return json_response(500, r#"{"errors":[{"code":"UNKNOWN"}]}"#.into());
    };
    let token = format!(
        "{signing_input}.{}",
        URL_SAFE_NO_PAD.encode(signature.as_ref())
    );
    shared.log.lock().expect("log").issued.push(IssuedToken {
        user,
        granted,
        token: token.clone(),
    });
    json_response(
        200,
        serde_json::json!({"token": token, "access_token": token, "expires_in": lifetime})
            .to_string(),
    )
}

/// The Basic credentials of `request`, if any.
fn basic_credentials<B>(request: &hyper::Request<B>) -> Option<(String, String)> {
    let value = request.headers().get("authorization")?.to_str().ok()?;
    let encoded = value
        .strip_prefix("Basic ")
        .or_else(|| value.strip_prefix("basic "))?;
    let decoded = String::from_utf8(STANDARD.decode(encoded.trim()).ok()?).ok()?;
    let (user, password) = decoded.split_once(':')?;
    Some((user.to_string(), password.to_string()))
}

/// `%XX` and `+` decoded (query values).
fn percent_decode(value: &str) -> String {
    let bytes = value.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap_or("");
                match u8::from_str_radix(hex, 16) {
                    Ok(byte) => {
                        out.push(byte);
                        i += 3;
                        continue;
                    }
                    Err(_) => out.push(b'%'),
                }
            }
            b'+' => out.push(b' '),
            other => out.push(other),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::percent_decode;

    #[test]
    fn query_values_are_decoded() {
        assert_eq!(
            percent_decode("repository%3Ateam%2Fapp%3Apull%2Cpush"),
            "repository:team/app:pull,push"
        );
        assert_eq!(percent_decode("a+b%2"), "a b%2");
    }
}
