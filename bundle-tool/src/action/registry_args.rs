//! The registry flags every image verb shares: plain HTTP and credentials.

use crate::image::{Credentials, RegistryClient};

/// How to talk to a registry.
#[derive(Clone, Debug, Default, clap::Args)]
pub struct RegistryArgs {
    /// Talk plain HTTP (for registries on localhost).
    #[arg(long)]
    pub plain_http: bool,
    /// User name; the password is read from standard input with --password-stdin, else auth
    /// files ($REGISTRY_AUTH_FILE, ~/.docker/config.json) are used.
    #[arg(long, requires = "password_stdin")]
    pub username: Option<String>,
    /// Read the password from standard input (never from the command line).
    #[arg(long, requires = "username")]
    pub password_stdin: bool,
}

impl RegistryArgs {
    /// The same transport with credentials from the auth files only (for the source of a
    /// copy, whose registry the given user name is not for).
    pub fn from_auth_files(&self) -> RegistryArgs {
        RegistryArgs {
            plain_http: self.plain_http,
            username: None,
            password_stdin: false,
        }
    }

    /// A client for the registry of `reference`; reads the password from standard input
    /// when a user name was given.
    pub fn client(&self, reference: &oci_client::Reference) -> std::io::Result<RegistryClient> {
        Ok(self.access()?.client(reference))
    }

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

/// [`RegistryArgs`] with the password already read: clients for any number of registries.
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

/// A runtime for one command's registry exchanges.
pub fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
}
