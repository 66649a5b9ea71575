//! How to talk to registries: the transport (plain HTTP, or HTTPS and whom to trust) and
//! whose credentials, as settings any caller can fill in (the command line's flags are one
//! way), and with the password read once, clients for any number of registries, and pulls
//! that go where registries.conf sends them.

use super::registries_conf::{ConfFiles, RegistriesConf};
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
        })
    }
}

/// [`RegistrySettings`] with the password already read: clients for any number of registries.
#[derive(Clone)]
pub struct RegistryAccess {
    transport: Transport,
    basic: Option<(String, String)>,
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
        F: FnMut(RegistryClient, oci_client::Reference) -> Fut,
        Fut: std::future::Future<Output = anyhow::Result<T>>,
    {
        let conf = RegistriesConf::read(&ConfFiles::standard(
            self.transport.registries_conf.as_deref(),
        ))?;
        let sources = conf.pull_sources(reference)?;
        let mut failures = Vec::new();
        for source in sources {
            let credentials = if source.mirror {
                Credentials::from_auth_files(source.reference.registry())
            } else {
                self.credentials(&source.reference)
            };
            let result = if source.insecure && !self.transport.plain_http {
                // containers/image's rule for an insecure registry: HTTPS without checking
                // the certificate, and plain HTTP when HTTPS is not spoken there at all.
                let mut https = RegistryClient::unverified(&self.transport, credentials.clone())?;
                https.attempts = 1;
                match pull(https, source.reference.clone()).await {
                    Ok(value) => Ok(value),
                    Err(over_https) => {
                        let http = RegistryClient::new(
                            &Transport {
                                plain_http: true,
                                ..self.transport.clone()
                            },
                            credentials,
                        )?;
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
                let client = RegistryClient::new(&self.transport, credentials)?;
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
