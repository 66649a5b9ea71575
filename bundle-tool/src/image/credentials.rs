//! Registry credentials: given on the command line (basic auth), or found the way the
//! container tools find them (`$REGISTRY_AUTH_FILE`, `~/.docker/config.json`, credential
//! helpers). Both push paths and pulls take them from here.

use oci_client::secrets::RegistryAuth;
use serde_json::Value;

/// Registry credentials. `Debug` never shows the password.
#[derive(Clone, Default)]
pub enum Credentials {
    /// No credentials.
    #[default]
    Anonymous,
    /// HTTP basic auth.
    Basic {
        /// User name.
        username: String,
        /// Password (never printed).
        password: String,
    },
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Credentials::Anonymous => write!(f, "Anonymous"),
            Credentials::Basic { username, .. } => write!(f, "Basic({username}, <redacted>)"),
        }
    }
}

impl Credentials {
    /// Credentials for `registry` from a Docker/Podman auth file: `$REGISTRY_AUTH_FILE`, else
    /// `~/.docker/config.json` (the `auths.<registry>.auth` base64 `user:password` entry).
    pub fn from_auth_files(registry: &str) -> Credentials {
        let candidates = [
            std::env::var_os("REGISTRY_AUTH_FILE").map(std::path::PathBuf::from),
            std::env::var_os("HOME")
                .map(|h| std::path::PathBuf::from(h).join(".docker/config.json")),
        ];
        for path in candidates.into_iter().flatten() {
            let Some(config) = std::fs::read(&path)
                .ok()
                .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
            else {
                continue;
            };
            if let Some(credentials) = Self::from_auth_entry(&config["auths"][registry]) {
                return credentials;
            }
            // A credential helper for this registry, or for every registry.
            let helper = config["credHelpers"][registry]
                .as_str()
                .or_else(|| config["credsStore"].as_str());
            if let Some(credentials) = helper.and_then(|h| Self::from_helper(h, registry)) {
                return credentials;
            }
        }
        Credentials::Anonymous
    }

    fn from_auth_entry(entry: &Value) -> Option<Credentials> {
        let encoded = entry["auth"].as_str()?;
        let decoded =
            base64::Engine::decode(&base64::engine::general_purpose::STANDARD, encoded).ok()?;
        let text = String::from_utf8_lossy(&decoded).into_owned();
        let (username, password) = text.split_once(':')?;
        Some(Credentials::Basic {
            username: username.into(),
            password: password.into(),
        })
    }

    /// Asks `docker-credential-<helper> get` (the Docker credential helper protocol: the
    /// registry on stdin, `{"Username", "Secret"}` on stdout).
    fn from_helper(helper: &str, registry: &str) -> Option<Credentials> {
        use std::io::Write;
        let mut child = std::process::Command::new(format!("docker-credential-{helper}"))
            .arg("get")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .ok()?;
        child.stdin.take()?.write_all(registry.as_bytes()).ok()?;
        let output = child.wait_with_output().ok()?;
        if !output.status.success() {
            return None;
        }
        let answer: Value = serde_json::from_slice(&output.stdout).ok()?;
        Some(Credentials::Basic {
            username: answer["Username"].as_str()?.to_string(),
            password: answer["Secret"].as_str()?.to_string(),
        })
    }

    /// Who these credentials are, for messages: the user name, or `anonymous`.
    pub fn who(&self) -> String {
        match self {
            Credentials::Anonymous => "anonymous".into(),
            Credentials::Basic { username, .. } => format!("user {username}"),
        }
    }

    /// The same credentials as oci-client takes them.
    pub(super) fn auth(&self) -> RegistryAuth {
        match self {
            Credentials::Anonymous => RegistryAuth::Anonymous,
            Credentials::Basic { username, password } => {
                RegistryAuth::Basic(username.clone(), password.clone())
            }
        }
    }
}
