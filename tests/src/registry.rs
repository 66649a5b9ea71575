//! A real OCI distribution registry on loopback: Debian's `docker-registry`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, bail};

use crate::ports::free_port;
use crate::process::ManagedProcess;

const REGISTRY_BINARY: &str = "/usr/bin/docker-registry";

/// Whether the registry asks for credentials.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RegistryAuth {
    /// Anyone may push and pull.
    Anonymous,
    /// HTTP basic auth against an htpasswd file with this one user.
    Htpasswd {
        /// The user name.
        username: String,
        /// The password.
        password: String,
    },
    /// Bearer tokens from a token server (`auth: token`), as quay.io and ghcr.io do.
    Token {
        /// The token server's URL.
        realm: String,
        /// The `service` the registry asks tokens for (and checks as `aud`).
        service: String,
        /// The `iss` the registry accepts.
        issuer: String,
        /// PEM file of the CAs the tokens' `x5c` certificates must chain to.
        rootcertbundle: PathBuf,
    },
}

/// The serving certificate and key (PEM files) of a registry that talks HTTPS.
#[derive(Clone, Debug)]
pub struct RegistryTls {
    /// The certificate (chain).
    pub certificate: PathBuf,
    /// Its key.
    pub key: PathBuf,
}

/// A running registry; stopped and its storage removed when dropped.
pub struct OciRegistry {
    process: ManagedProcess,
    address: String,
    auth: RegistryAuth,
    _dir: tempfile::TempDir,
}

impl OciRegistry {
    /// Starts a registry on `127.0.0.1:<free port>`, storing blobs in a temporary folder.
    pub async fn start(auth: RegistryAuth) -> anyhow::Result<Self> {
        Self::start_on(auth, &format!("127.0.0.1:{}", free_port()?)).await
    }

    /// Starts a registry listening on `address` (`ip:port`).
    pub async fn start_on(auth: RegistryAuth, address: &str) -> anyhow::Result<Self> {
        Self::start_configured(auth, address, None).await
    }

    /// Starts a registry on `address` that talks HTTPS with `tls` when given.
    pub async fn start_configured(
        auth: RegistryAuth,
        address: &str,
        tls: Option<&RegistryTls>,
    ) -> anyhow::Result<Self> {
        if !Path::new(REGISTRY_BINARY).is_file() {
            bail!(
                "{REGISTRY_BINARY} is missing: install Debian's docker-registry package (the README test command does)"
            );
        }
        let dir = tempfile::Builder::new().prefix("e2e-registry-").tempdir()?;
        let mut config = format!(
            "version: 0.1\nlog:\n  level: warn\n  accesslog:\n    disabled: true\nstorage:\n  filesystem:\n    rootdirectory: {}\n  delete:\n    enabled: true\nhttp:\n  addr: {address}\n  secret: e2e-not-a-secret\n",
            dir.path().join("data").display()
        );
        // Under `http:`, which the text above ends with.
        if let Some(tls) = tls {
            config.push_str(&format!(
                "  tls:\n    certificate: {}\n    key: {}\n",
                tls.certificate.display(),
                tls.key.display()
            ));
        }
        if let RegistryAuth::Htpasswd { username, password } = &auth {
            let htpasswd = dir.path().join("htpasswd");
            // bcrypt, the only hash docker-registry accepts; the password goes in on stdin.
            let mut child = std::process::Command::new("htpasswd")
                .args(["-niB", username])
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .context("running htpasswd (Debian package apache2-utils)")?;
            std::io::Write::write_all(child.stdin.as_mut().expect("piped"), password.as_bytes())?;
            let output = child.wait_with_output()?;
            if !output.status.success() {
                bail!(
                    "htpasswd failed: {}",
                    String::from_utf8_lossy(&output.stderr)
                );
            }
            std::fs::write(&htpasswd, &output.stdout)?;
            config.push_str(&format!(
                "auth:\n  htpasswd:\n    realm: e2e\n    path: {}\n",
                htpasswd.display()
            ));
        }
        if let RegistryAuth::Token {
            realm,
            service,
            issuer,
            rootcertbundle,
        } = &auth
        {
            config.push_str(&format!(
                "auth:\n  token:\n    realm: {realm}\n    service: {service}\n    issuer: {issuer}\n    rootcertbundle: {}\n",
                rootcertbundle.display()
            ));
        }
        let config_path = dir.path().join("config.yml");
        std::fs::write(&config_path, config)?;
        let process = ManagedProcess::spawn(
            "docker-registry",
            Path::new(REGISTRY_BINARY),
            &["serve".into(), config_path.display().to_string()],
            &[],
            &dir.path().join("registry.log"),
        )?;
        let expected = if auth == RegistryAuth::Anonymous {
            "200"
        } else {
            "401"
        };
        if tls.is_some() {
            // Listening is enough: the HTTPS answers are the tests' business.
            process
                .wait_ready(Duration::from_secs(20), || async move {
                    Ok(tokio::net::TcpStream::connect(address).await.is_ok())
                })
                .await?;
        } else {
            process
                .wait_ready(Duration::from_secs(20), || async move {
                    Ok(crate::http_get_at(address, "/v2/").await?.0.to_string() == expected)
                })
                .await?;
        }
        Ok(OciRegistry {
            process,
            address: address.to_string(),
            auth,
            _dir: dir,
        })
    }

    /// `127.0.0.1:<port>` (or the address it was started on), the registry part of an image
    /// reference.
    pub fn host(&self) -> String {
        self.address.clone()
    }

    /// The port it listens on (for a proxy in front of it).
    pub fn port(&self) -> u16 {
        self.address
            .rsplit_once(':')
            .and_then(|(_, port)| port.parse().ok())
            .expect("the registry's address is host:port")
    }

    /// Removes every tag of `repository`, leaving its manifests reachable by digest only:
    /// a mirror as oc-mirror leaves it, where a pull by tag finds nothing. docker-registry
    /// keeps each tag as a folder under `_manifests/tags` and reads it on every request
    /// (no tag cache in this configuration), so removing the folders is the same as the
    /// registry never having had them.
    pub fn remove_tags(&self, repository: &str) -> anyhow::Result<()> {
        let tags = self
            ._dir
            .path()
            .join("data/docker/registry/v2/repositories")
            .join(repository)
            .join("_manifests/tags");
        anyhow::ensure!(
            tags.is_dir(),
            "{} holds no tags of {repository}",
            tags.display()
        );
        std::fs::remove_dir_all(&tags).with_context(|| format!("removing {}", tags.display()))
    }

    /// The auth it was started with.
    pub fn auth(&self) -> &RegistryAuth {
        &self.auth
    }

    /// The registry process (for its log).
    pub fn process(&self) -> &ManagedProcess {
        &self.process
    }

    /// The upload sessions open in any repository, as `<repository>/_uploads/<session id>`
    /// (from the storage folder: docker-registry keeps a folder per session under `_uploads`,
    /// with the upload's `data` file, until the upload completes; a cancelled session loses
    /// its `data` but, in 2.8.2, keeps an empty `hashstates` folder).
    pub fn open_uploads(&self) -> Vec<String> {
        let repositories = self
            ._dir
            .path()
            .join("data/docker/registry/v2/repositories");
        let mut open = Vec::new();
        let mut pending = vec![repositories.clone()];
        while let Some(dir) = pending.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for entry in entries.flatten() {
                let path = entry.path();
                if !path.is_dir() {
                    continue;
                }
                if entry.file_name() == "_uploads" {
                    for session in std::fs::read_dir(&path).into_iter().flatten().flatten() {
                        if !session.path().join("data").exists() {
                            continue;
                        }
                        let relative = session.path();
                        let relative = relative.strip_prefix(&repositories).unwrap_or(&relative);
                        open.push(relative.display().to_string());
                    }
                } else if !entry.file_name().to_string_lossy().starts_with('_') {
                    pending.push(path);
                }
            }
        }
        open.sort();
        open
    }
}
