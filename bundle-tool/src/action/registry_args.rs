//! The registry flags every image verb shares: plain HTTP and credentials.

use crate::image::{RegistryAccess, RegistryClient, RegistrySettings};

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

    /// The settings the areas take.
    pub fn settings(&self) -> RegistrySettings {
        RegistrySettings {
            plain_http: self.plain_http,
            username: self.username.clone(),
        }
    }

    /// The transport and credentials with the password read now ([`RegistrySettings::access`]).
    pub fn access(&self) -> std::io::Result<RegistryAccess> {
        self.settings().access()
    }
}

/// A runtime for one command's registry exchanges.
pub fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
}
