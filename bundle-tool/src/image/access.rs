//! How to talk to registries: the transport (plain HTTP, or HTTPS and whom to trust) and
//! whose credentials, as settings any caller can fill in (the command line's flags are one
//! way), and with the password read once, clients for any number of registries, and pulls
//! that go where registries.conf sends them.

use std::sync::Arc;

use super::registries_conf::{ConfFiles, RegistriesConf, RegistriesConfError};
use super::{Credentials, RegistryClient, Transport, TransportError};

/// Transport and credentials, as given.
#[derive(Clone, Debug, Default)]
pub struct RegistrySettings {
    /// Plain HTTP or HTTPS, and the CAs HTTPS trusts.
    pub transport: Transport,
    /// User name; its password is read from standard input.
    pub username: Option<String>,
}

impl RegistrySettings {
    /// The transport and credentials with the password read now: standard input can be read
    /// only once, and a command that pushes to two registries needs it twice.
    pub fn access(&self) -> std::io::Result<RegistryAccess> {
        let basic = match &self.username {
            Some(username) => {
                let password = std::io::read_to_string(std::io::stdin())?
                    .trim_end_matches(['\n', '\r'])
                    .to_string();
                Some((username.clone(), password))
            }
            None => None,
        };
        Ok(RegistryAccess {
            transport: self.transport.clone(),
            basic,
            pull_clients: Default::default(),
            registries_conf: Default::default(),
        })
    }
}

/// [`RegistrySettings`] with the password already read: clients for any number of registries.
#[derive(Clone)]
pub struct RegistryAccess {
    transport: Transport,
    basic: Option<(String, String)>,
    /// The clients pulls made, shared by the pulls after them: a client loads the CA store
    /// and keeps its connections and tokens. Pinning 85 images of one HTTPS token registry
    /// took 4.4 s with a client each and 0.9 s with one shared (debug build, 2026-12-07,
    /// tests/benches/registry_transports.rs).
    pull_clients: std::sync::Arc<
        std::sync::Mutex<std::collections::HashMap<PullClientKey, Arc<RegistryClient>>>,
    >,
    /// registries.conf, read by the first pull and kept for the others (pinning pulls a
    /// manifest per image, all at once).
    registries_conf: Arc<std::sync::OnceLock<RegistriesConf>>,
}

/// Which shared client a pull source uses: its registry, how it is reached, and whether the
/// given user's credentials go with it (the registry named) or the auth files' (a mirror).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct PullClientKey {
    registry: String,
    reach: Reach,
    given_credentials: bool,
}

/// How a pull source is reached.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Reach {
    /// The command line's transport.
    AsGiven,
    /// HTTPS without certificate checks, one attempt (an insecure registry's first try).
    Unverified,
    /// Plain HTTP (an insecure registry's second try).
    PlainHttp,
}

impl RegistryAccess {
    /// A client for the registry of `reference`: the given user, else the auth files; fails
    /// on a CA file that cannot be used, naming it.
    pub fn client(
        &self,
        reference: &oci_client::Reference,
    ) -> Result<RegistryClient, TransportError> {
        RegistryClient::new(&self.transport, self.credentials(reference))
    }

    /// The transport the clients use.
    pub fn transport(&self) -> &Transport {
        &self.transport
    }

    /// Runs `pull` against each place registries.conf gives for `reference` (its mirrors,
    /// then the registry itself; the reference alone when no table applies), until one
    /// succeeds; a blocked registry is refused before any request. A mirror is asked with
    /// the auth files' credentials for its own host, the registry with the given ones.
    /// When every place fails, the registry's error is reported with each mirror's.
    pub async fn pull_from_sources<T, F, Fut>(
        &self,
        reference: &oci_client::Reference,
        mut pull: F,
    ) -> anyhow::Result<T>
    where
        F: FnMut(Arc<RegistryClient>, oci_client::Reference) -> Fut,
        Fut: std::future::Future<Output = anyhow::Result<T>>,
    {
        let conf = self.registries_conf()?;
        let sources = conf.pull_sources(reference)?;
        let mut failures = Vec::new();
        for source in sources {
            let given = !source.mirror;
            let result = if source.insecure && !self.transport.plain_http {
                // containers/image's rule for an insecure registry: HTTPS without checking
                // the certificate, and plain HTTP when HTTPS is not spoken there at all.
                let https = self.pull_client(&source.reference, Reach::Unverified, given)?;
                match pull(https, source.reference.clone()).await {
                    Ok(value) => Ok(value),
                    Err(over_https) => {
                        let http = self.pull_client(&source.reference, Reach::PlainHttp, given)?;
                        pull(http, source.reference.clone())
                            .await
                            .map_err(|over_http| {
                                anyhow::anyhow!(
                                    "over HTTPS: {over_https:#}; over plain HTTP: {over_http:#}"
                                )
                            })
                    }
                }
            } else {
                let client = self.pull_client(&source.reference, Reach::AsGiven, given)?;
                pull(client, source.reference.clone()).await
            };
            match result {
                Ok(value) => {
                    if source.mirror {
                        tracing::debug!(
                            "{} pulled from the mirror {}",
                            reference.whole(),
                            source.reference.whole()
                        );
                    }
                    return Ok(value);
                }
                Err(error) => failures.push((source, error)),
            }
        }
        let (registry, error) = failures.pop().expect("the registry is always a source");
        if failures.is_empty() {
            return Err(error);
        }
        let mirrors = failures
            .iter()
            .map(|(mirror, error)| format!("{}: {error:#}", mirror.reference.whole()))
            .collect::<Vec<_>>()
            .join("; ");
        Err(anyhow::anyhow!(
            "{error:#} (at {}; its mirrors in {} failed too: {mirrors})",
            registry.reference.whole(),
            conf.files()
        ))
    }

    /// registries.conf as the first pull read it; a file that cannot be read is an error
    /// for every pull that asks.
    fn registries_conf(&self) -> Result<&RegistriesConf, RegistriesConfError> {
        if let Some(conf) = self.registries_conf.get() {
            return Ok(conf);
        }
        let read = RegistriesConf::read(&ConfFiles::standard(
            self.transport.registries_conf.as_deref(),
        ))?;
        Ok(self.registries_conf.get_or_init(|| read))
    }

    /// The shared client for pulls from `reference`'s registry, reached as `reach`, with the
    /// given credentials (`given`) or the auth files' for that registry.
    fn pull_client(
        &self,
        reference: &oci_client::Reference,
        reach: Reach,
        given: bool,
    ) -> Result<Arc<RegistryClient>, TransportError> {
        let key = PullClientKey {
            registry: reference.resolve_registry().to_string(),
            reach,
            given_credentials: given,
        };
        let mut clients = self
            .pull_clients
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(client) = clients.get(&key) {
            return Ok(client.clone());
        }
        let credentials = if given {
            self.credentials(reference)
        } else {
            Credentials::from_auth_files(reference.registry())
        };
        let client = match reach {
            Reach::AsGiven => RegistryClient::new(&self.transport, credentials)?,
            Reach::Unverified => {
                let mut client = RegistryClient::unverified(&self.transport, credentials)?;
                client.attempts = 1;
                client
            }
            Reach::PlainHttp => RegistryClient::new(
                &Transport {
                    plain_http: true,
                    ..self.transport.clone()
                },
                credentials,
            )?,
        };
        let client = Arc::new(client);
        clients.insert(key, client.clone());
        Ok(client)
    }

    /// The credentials for `reference`'s registry: the given user, else the auth files.
    fn credentials(&self, reference: &oci_client::Reference) -> Credentials {
        match &self.basic {
            Some((username, password)) => Credentials::Basic {
                username: username.clone(),
                password: password.clone(),
            },
            None => Credentials::from_auth_files(reference.registry()),
        }
    }
}
