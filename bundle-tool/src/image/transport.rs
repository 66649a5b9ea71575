//! How a registry is reached: plain HTTP (local registries), or HTTPS trusting the system's
//! CA store (`SSL_CERT_FILE` replaces it, as with OpenSSL and Go) plus the CA files given,
//! or, on request only, any certificate at all; and which registries.conf pulls follow.

use std::path::PathBuf;

use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;

/// The transport settings, as given.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Transport {
    /// Talk plain HTTP (for registries on localhost).
    pub plain_http: bool,
    /// PEM files of CA certificates trusted beside the system's store.
    pub ca_files: Vec<PathBuf>,
    /// Accept any certificate: no protection against anyone on the network path.
    pub insecure_skip_tls_verify: bool,
    /// The registries.conf that pulls follow (mirrors, blocked and insecure registries)
    /// instead of the standard places ([`super::ConfFiles::standard`]).
    pub registries_conf: Option<PathBuf>,
}

/// Why the transport cannot be set up.
#[derive(Debug, thiserror::Error)]
pub enum TransportError {
    /// A CA file could not be read.
    #[error("--ca-file {path}: {source}")]
    ReadCaFile {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A CA file holds no PEM certificate, or a broken one.
    #[error("--ca-file {path}: {message}")]
    BadCaFile {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// The HTTP client refused the settings (a certificate it cannot use).
    #[error("setting up HTTPS with --ca-file {files}: {message}")]
    Client {
        /// The CA files given.
        files: String,
        /// The client's words.
        message: String,
    },
}

impl Transport {
    /// The certificates of every CA file, in DER, each file checked to hold at least one.
    pub fn ca_certificates(&self) -> Result<Vec<CertificateDer<'static>>, TransportError> {
        let mut certificates = Vec::new();
        for path in &self.ca_files {
            let text = std::fs::read(path).map_err(|source| TransportError::ReadCaFile {
                path: path.clone(),
                source,
            })?;
            let bad = |message: String| TransportError::BadCaFile {
                path: path.clone(),
                message,
            };
            let found = CertificateDer::pem_slice_iter(&text)
                .collect::<Result<Vec<_>, _>>()
                .map_err(|error| bad(format!("not a PEM certificate file ({error})")))?;
            if found.is_empty() {
                return Err(bad(
                    "no certificate in it (expected PEM `-----BEGIN CERTIFICATE-----` blocks)"
                        .into(),
                ));
            }
            certificates.extend(found);
        }
        Ok(certificates)
    }

    /// The flags that give these settings, for a command to print (e.g. a re-run command).
    pub fn flags(&self) -> Vec<String> {
        let mut flags = Vec::new();
        if self.plain_http {
            flags.push("--plain-http".to_string());
        }
        for path in &self.ca_files {
            flags.push(format!("--ca-file {}", path.display()));
        }
        if self.insecure_skip_tls_verify {
            flags.push("--insecure-skip-tls-verify".to_string());
        }
        if let Some(path) = &self.registries_conf {
            flags.push(format!("--registries-conf {}", path.display()));
        }
        flags
    }

    /// Says once per process, on standard error, that certificates go unchecked.
    pub(super) fn warn_if_insecure(&self) {
        static WARNED: std::sync::Once = std::sync::Once::new();
        if self.insecure_skip_tls_verify && !self.plain_http {
            WARNED.call_once(|| {
                eprintln!(
                    "warning: --insecure-skip-tls-verify: registry TLS certificates are not \
                     verified, so anyone on the network path can read and change what is pushed \
                     and pulled; trust the registry's CA with --ca-file instead"
                );
            });
        }
    }
}

/// When `error`, or one of its causes, is a TLS certificate the client did not trust: the
/// message that names `registry` and says how to trust it.
pub(super) fn untrusted_certificate(
    registry: &str,
    error: &(dyn std::error::Error + 'static),
) -> Option<String> {
    let mut cause = Some(error);
    while let Some(current) = cause {
        // io::Error's `source` skips the error it wraps, so look inside it too.
        let inner = current
            .downcast_ref::<std::io::Error>()
            .and_then(|io| io.get_ref())
            .map(|inner| inner as &(dyn std::error::Error + 'static));
        for candidate in [Some(current), inner].into_iter().flatten() {
            if let Some(rustls::Error::InvalidCertificate(reason)) =
                candidate.downcast_ref::<rustls::Error>()
            {
                return Some(refusal(registry, &format!("{reason:?}")));
            }
        }
        cause = current.source();
    }
    // Whatever the wrapping (reqwest boxes the connector's error), rustls's own words in
    // the chain of messages say it.
    let mut text = error.to_string();
    let mut cause = error.source();
    while let Some(current) = cause {
        text.push_str(": ");
        text.push_str(&current.to_string());
        cause = current.source();
    }
    text.contains("invalid peer certificate")
        .then(|| refusal(registry, text.rsplit(": ").next().unwrap_or(&text)))
}

fn refusal(registry: &str, reason: &str) -> String {
    format!(
        "the TLS certificate of registry {registry} is not trusted ({reason}): trust the CA that \
         signed it with --ca-file CA.pem (or the SSL_CERT_FILE environment variable, which \
         replaces the system's CA store), or, for a throwaway test registry only, pass \
         --insecure-skip-tls-verify"
    )
}

#[cfg(test)]
mod tests {
    use super::{Transport, TransportError};

    #[test]
    fn a_ca_file_without_certificates_is_named() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("ca.pem");
        std::fs::write(&path, "not a certificate\n").expect("write");
        let transport = Transport {
            ca_files: vec![path.clone()],
            ..Default::default()
        };
        let error = transport.ca_certificates().expect_err("no certificate");
        assert!(matches!(error, TransportError::BadCaFile { .. }));
        assert!(
            error
                .to_string()
                .starts_with(&format!("--ca-file {}: no certificate", path.display())),
            "{error}"
        );
        let missing = Transport {
            ca_files: vec![dir.path().join("missing.pem")],
            ..Default::default()
        };
        assert!(matches!(
            missing.ca_certificates(),
            Err(TransportError::ReadCaFile { .. })
        ));
    }

    #[test]
    fn flags_give_the_settings_back() {
        let transport = Transport {
            plain_http: false,
            ca_files: vec!["ca.pem".into()],
            insecure_skip_tls_verify: true,
            registries_conf: Some("mirrors.conf".into()),
        };
        assert_eq!(
            transport.flags(),
            [
                "--ca-file ca.pem",
                "--insecure-skip-tls-verify",
                "--registries-conf mirrors.conf"
            ]
        );
    }
}
