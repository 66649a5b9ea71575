//! A registry like quay.io or ghcr.io, on loopback: Debian's `docker-registry` over HTTPS
//! with a certificate from a CA made for the test (so no client trusts it by default), and
//! `auth: token` with its realm at a [`TokenServer`] (also HTTPS, same CA) that checks Basic
//! credentials and grants per-repository access.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rcgen::{CertificateParams, DnType, KeyPair};
use rustls::pki_types::CertificateDer;

use crate::registry::{OciRegistry, RegistryAuth, RegistryTls};
use crate::token_server::{TokenPolicy, TokenServer, TokenServerKeys};

/// The `service` the registry names in its challenge and checks as the tokens' `aud`.
pub const SERVICE: &str = "e2e-registry";
/// The tokens' issuer.
pub const ISSUER: &str = "e2e-token-server";

/// The running pair; both stopped when dropped.
pub struct TokenRegistry {
    registry: OciRegistry,
    tokens: TokenServer,
    ca_file: PathBuf,
    _dir: tempfile::TempDir,
}

impl TokenRegistry {
    /// Starts the token server with `policy` and the registry behind it.
    pub async fn start(policy: TokenPolicy) -> anyhow::Result<TokenRegistry> {
        Self::start_with(policy, false).await
    }

    /// [`start`](Self::start), with `refuse_first_token` the first token signed by a
    /// certificate that has expired: the registry refuses it, although its `exp` claim says
    /// it is good for the policy's lifetime (what a client meets when the registry's clock
    /// runs ahead of its own, or its token was revoked).
    pub async fn start_with(
        policy: TokenPolicy,
        refuse_first_token: bool,
    ) -> anyhow::Result<TokenRegistry> {
        let dir = tempfile::Builder::new()
            .prefix("e2e-token-registry-")
            .tempdir()?;
        // One CA for HTTPS (what clients are given with --ca-file), another for the token
        // signing certificate (what the registry's rootcertbundle holds).
        let (https_ca, https_issuer) = crate::pki::new_ca("e2e-registry-https-ca")?;
        let (signing_ca, signing_issuer) = crate::pki::new_ca("e2e-token-signing-ca")?;
        let serving = |name: &str| -> anyhow::Result<(rcgen::Certificate, KeyPair)> {
            let key = KeyPair::generate()?;
            let mut params =
                CertificateParams::new(vec!["127.0.0.1".to_string(), "localhost".to_string()])?;
            params.distinguished_name.push(DnType::CommonName, name);
            Ok((params.signed_by(&key, &https_issuer)?, key))
        };
        let (registry_cert, registry_key) = serving("e2e-registry")?;
        let (token_cert, token_key) = serving("e2e-token-server")?;
        let signing_key = KeyPair::generate()?;
        let mut signing_params = CertificateParams::new(Vec::<String>::new())?;
        signing_params
            .distinguished_name
            .push(DnType::CommonName, "e2e-token-signer");
        let signing_cert = signing_params.signed_by(&signing_key, &signing_issuer)?;
        let first_token_signer = match refuse_first_token {
            true => {
                let key = KeyPair::generate()?;
                let mut params = CertificateParams::new(Vec::<String>::new())?;
                params
                    .distinguished_name
                    .push(DnType::CommonName, "e2e-short-lived-token-signer");
                let now = time::OffsetDateTime::now_utc();
                params.not_before = now - Duration::from_secs(7200);
                params.not_after = now - Duration::from_secs(3600);
                let cert = params.signed_by(&key, &signing_issuer)?;
                Some((cert.der().to_vec(), key.serialize_der()))
            }
            false => None,
        };

        let ca_file = dir.path().join("ca.pem");
        std::fs::write(&ca_file, https_ca.pem())?;
        let bundle = dir.path().join("token-signing-ca.pem");
        std::fs::write(&bundle, signing_ca.pem())?;
        let tls = RegistryTls {
            certificate: dir.path().join("registry.crt"),
            key: dir.path().join("registry.key"),
        };
        std::fs::write(
            &tls.certificate,
            format!("{}{}", registry_cert.pem(), https_ca.pem()),
        )?;
        std::fs::write(&tls.key, registry_key.serialize_pem())?;

        let tokens = TokenServer::start(
            TokenServerKeys {
                serving_chain: vec![
                    CertificateDer::from(token_cert.der().to_vec()),
                    CertificateDer::from(https_ca.der().to_vec()),
                ],
                serving_key: token_key.serialize_der(),
                signing_certificate: signing_cert.der().to_vec(),
                signing_key: signing_key.serialize_der(),
                first_token_signer,
            },
            SERVICE,
            ISSUER,
            policy,
        )?;
        let address = format!("127.0.0.1:{}", crate::free_port()?);
        let registry = OciRegistry::start_configured(
            RegistryAuth::Token {
                realm: tokens.realm(),
                service: SERVICE.into(),
                issuer: ISSUER.into(),
                rootcertbundle: bundle,
            },
            &address,
            Some(&tls),
        )
        .await?;
        Ok(TokenRegistry {
            registry,
            tokens,
            ca_file,
            _dir: dir,
        })
    }

    /// `127.0.0.1:<port>`, the registry part of image references.
    pub fn host(&self) -> String {
        self.registry.host()
    }

    /// The PEM file of the CA that signed the registry's and the token server's certificates.
    pub fn ca_file(&self) -> &Path {
        &self.ca_file
    }

    /// The token server (what it issued, its token lifetime).
    pub fn tokens(&self) -> &TokenServer {
        &self.tokens
    }

    /// The registry process (for its log).
    pub fn registry(&self) -> &OciRegistry {
        &self.registry
    }
}

/// A policy: `users` as (name, password), `pushers` as (user, repository), tokens lasting
/// `lifetime`.
pub fn policy(users: &[(&str, &str)], pushers: &[(&str, &str)], lifetime: Duration) -> TokenPolicy {
    TokenPolicy {
        users: users
            .iter()
            .map(|(u, p)| (u.to_string(), p.to_string()))
            .collect(),
        pushers: pushers
            .iter()
            .map(|(u, r)| (u.to_string(), r.to_string()))
            .collect(),
        lifetime,
    }
}
