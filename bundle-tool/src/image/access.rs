//! How to talk to registries: plain HTTP or not, and whose credentials, as settings any
//! caller can fill in (the command line's flags are one way), and with the password read
//! once, clients for any number of registries.

use super::{Credentials, RegistryClient};

/// Transport and credentials, as given.
#[derive(Clone, Debug, Default)]
pub struct RegistrySettings {
    /// Talk plain HTTP (for registries on localhost).
    pub plain_http: bool,
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
            plain_http: self.plain_http,
            basic,
        })
    }
}

/// [`RegistrySettings`] with the password already read: clients for any number of registries.
#[derive(Clone)]
pub struct RegistryAccess {
    plain_http: bool,
    basic: Option<(String, String)>,
}

impl RegistryAccess {
    /// A client for the registry of `reference`: the given user, else the auth files.
    pub fn client(&self, reference: &oci_client::Reference) -> RegistryClient {
        let credentials = match &self.basic {
            Some((username, password)) => Credentials::Basic {
                username: username.clone(),
                password: password.clone(),
            },
            None => Credentials::from_auth_files(reference.registry()),
        };
        RegistryClient::new(self.plain_http, credentials)
    }
}
