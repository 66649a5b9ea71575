//! The registry flags every image verb shares: the transport (plain HTTP, or HTTPS and the
//! CAs it trusts) and credentials.

use std::path::PathBuf;

use crate::image::{RegistryAccess, RegistryClient, RegistrySettings, Transport};

/// How to reach a registry: every verb that pulls or pushes takes these.
#[derive(Clone, Debug, Default, clap::Args)]
pub struct TransportArgs {
    /// Talk plain HTTP (for registries on localhost).
    #[arg(long, conflicts_with_all = ["ca_file", "insecure_skip_tls_verify"])]
    pub plain_http: bool,
    /// Trust the CA certificates in this PEM file for registries' HTTPS, beside the system's
    /// store (which the SSL_CERT_FILE environment variable replaces); may be repeated.
    #[arg(long = "ca-file", value_name = "PEM")]
    pub ca_file: Vec<PathBuf>,
    /// Accept any TLS certificate from registries (a throwaway test registry only: anyone on
    /// the network path can then read and change what is pushed and pulled).
    #[arg(long)]
    pub insecure_skip_tls_verify: bool,
    /// Pull through the mirrors, and refuse the blocked registries, of this containers
    /// registries.conf (v2), read instead of $CONTAINERS_REGISTRIES_CONF,
    /// ~/.config/containers/registries.conf or /etc/containers/registries.conf; drop-ins in
    /// registries.conf.d are read as podman reads them. Pushes ignore it.
    #[arg(long, value_name = "FILE")]
    pub registries_conf: Option<PathBuf>,
}

impl TransportArgs {
    /// The settings the areas take.
    pub fn transport(&self) -> Transport {
        Transport {
            plain_http: self.plain_http,
            ca_files: self.ca_file.clone(),
            insecure_skip_tls_verify: self.insecure_skip_tls_verify,
            registries_conf: self.registries_conf.clone(),
        }
    }
}

/// How to talk to a registry.
#[derive(Clone, Debug, Default, clap::Args)]
pub struct RegistryArgs {
    /// Plain HTTP or HTTPS, and whom HTTPS trusts.
    #[command(flatten)]
    pub transport: TransportArgs,
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
            transport: self.transport.clone(),
            username: None,
            password_stdin: false,
        }
    }

    /// A client for the registry of `reference`; reads the password from standard input
    /// when a user name was given.
    pub fn client(&self, reference: &oci_client::Reference) -> std::io::Result<RegistryClient> {
        self.access()?
            .client(reference)
            .map_err(|error| std::io::Error::new(std::io::ErrorKind::InvalidInput, error))
    }

    /// The settings the areas take.
    pub fn settings(&self) -> RegistrySettings {
        RegistrySettings {
            transport: self.transport.transport(),
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
