//! How to talk to registries: the transport (plain HTTP, or HTTPS and whom to trust) and
//! whose credentials, as settings any caller can fill in (the command line's flags are one
//! way), and with the password read once, clients for any number of registries.

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
        let credentials = match &self.basic {
            Some((username, password)) => Credentials::Basic {
                username: username.clone(),
                password: password.clone(),
            },
            None => Credentials::from_auth_files(reference.registry()),
        };
        RegistryClient::new(&self.transport, credentials)
    }

    /// The transport the clients use.
    pub fn transport(&self) -> &Transport {
        &self.transport
    }
}
