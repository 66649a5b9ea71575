//! Certificates for the test control plane: one CA, the apiserver's serving certificate, its
//! client certificate for kubelets, the service-account token signing key, and the
//! aggregation layer's front-proxy CA and client certificate (the apiserver proxies
//! `packages.operators.coreos.com` to OLM's packageserver with it).

use std::path::{Path, PathBuf};

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose};

/// Files written by [`write_pki`].
#[derive(Clone, Debug)]
pub struct PkiFiles {
    /// The CA certificate (PEM): trusted by every client.
    pub ca_cert: PathBuf,
    /// The CA certificate as PEM text, for kubeconfig `certificate-authority-data`.
    pub ca_pem: String,
    /// kube-apiserver's serving certificate.
    pub serving_cert: PathBuf,
    /// Its key.
    pub serving_key: PathBuf,
    /// The key that signs service-account tokens (PKCS#8 PEM).
    pub service_account_key: PathBuf,
    /// Its public half, which the apiserver verifies tokens with.
    pub service_account_public_key: PathBuf,
    /// The client certificate kube-apiserver presents to kubelets (`kubectl logs/exec`).
    pub kubelet_client_cert: PathBuf,
    /// Its key.
    pub kubelet_client_key: PathBuf,
    /// The front-proxy CA: aggregated API servers trust requests signed by it.
    pub front_proxy_ca_cert: PathBuf,
    /// The client certificate the apiserver proxies aggregated requests with.
    pub front_proxy_client_cert: PathBuf,
    /// Its key.
    pub front_proxy_client_key: PathBuf,
}

/// The front-proxy client certificate's common name (`--requestheader-allowed-names`).
pub const FRONT_PROXY_CLIENT_NAME: &str = "front-proxy-client";

/// A new CA named `name`: its certificate and the issuer that signs with it.
pub(crate) fn new_ca(name: &str) -> anyhow::Result<(rcgen::Certificate, Issuer<'static, KeyPair>)> {
    let key = KeyPair::generate()?;
    let mut params = CertificateParams::new(Vec::<String>::new())?;
    params.distinguished_name.push(DnType::CommonName, name);
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let cert = params.self_signed(&key)?;
    Ok((cert, Issuer::new(params, key)))
}

/// A serving certificate and key for `names` (DNS names or IP addresses), signed by a CA of
/// its own, written to `dir/<name>.crt`, `dir/<name>.key` and `dir/<name>-ca.crt`. Returns
/// (certificate path, key path, CA PEM).
pub fn write_serving_pair(
    dir: &Path,
    name: &str,
    names: &[&str],
) -> anyhow::Result<(PathBuf, PathBuf, String)> {
    let (ca_cert, issuer) = new_ca(&format!("e2e-{name}-ca"))?;
    let key = KeyPair::generate()?;
    let mut params =
        CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>())?;
    params.distinguished_name.push(DnType::CommonName, name);
    let cert = params.signed_by(&key, &issuer)?;
    let (cert_path, key_path) = (
        dir.join(format!("{name}.crt")),
        dir.join(format!("{name}.key")),
    );
    std::fs::write(&cert_path, cert.pem())?;
    std::fs::write(&key_path, key.serialize_pem())?;
    std::fs::write(dir.join(format!("{name}-ca.crt")), ca_cert.pem())?;
    Ok((cert_path, key_path, ca_cert.pem()))
}

/// Generates a fresh CA and the control plane's keys into `dir`.
pub fn write_pki(dir: &Path) -> anyhow::Result<PkiFiles> {
    let (ca_cert, issuer) = new_ca("e2e-control-plane-ca")?;

    // Pods reach the apiserver as the `kubernetes` Service (its first address) or by the
    // node's address; tests and programs on the host side by loopback.
    let serving_key = KeyPair::generate()?;
    let mut serving_params = CertificateParams::new(vec![
        "localhost".to_string(),
        "127.0.0.1".to_string(),
        crate::node::network::KUBERNETES_SERVICE_IP.to_string(),
        crate::node::network::NODE_IP.to_string(),
        "kubernetes".to_string(),
        "kubernetes.default".to_string(),
        "kubernetes.default.svc".to_string(),
        "kubernetes.default.svc.cluster.local".to_string(),
    ])?;
    serving_params
        .distinguished_name
        .push(DnType::CommonName, "kube-apiserver");
    let serving_cert = serving_params.signed_by(&serving_key, &issuer)?;

    let sa_key = KeyPair::generate()?;

    // kubelets authorize the apiserver by this identity (a `system:masters` member).
    let kubelet_client_key = KeyPair::generate()?;
    let mut kubelet_client_params = CertificateParams::new(Vec::<String>::new())?;
    kubelet_client_params
        .distinguished_name
        .push(DnType::CommonName, "kube-apiserver-kubelet-client");
    kubelet_client_params
        .distinguished_name
        .push(DnType::OrganizationName, "system:masters");
    kubelet_client_params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth];
    let kubelet_client_cert = kubelet_client_params.signed_by(&kubelet_client_key, &issuer)?;

    let (front_proxy_ca, front_proxy_issuer) = new_ca("e2e-front-proxy-ca")?;
    let front_proxy_key = KeyPair::generate()?;
    let mut front_proxy_params = CertificateParams::new(Vec::<String>::new())?;
    front_proxy_params
        .distinguished_name
        .push(DnType::CommonName, FRONT_PROXY_CLIENT_NAME);
    front_proxy_params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth];
    let front_proxy_cert = front_proxy_params.signed_by(&front_proxy_key, &front_proxy_issuer)?;

    let files = PkiFiles {
        ca_cert: dir.join("ca.crt"),
        ca_pem: ca_cert.pem(),
        serving_cert: dir.join("apiserver.crt"),
        serving_key: dir.join("apiserver.key"),
        service_account_key: dir.join("sa.key"),
        service_account_public_key: dir.join("sa.pub"),
        kubelet_client_cert: dir.join("kubelet-client.crt"),
        kubelet_client_key: dir.join("kubelet-client.key"),
        front_proxy_ca_cert: dir.join("front-proxy-ca.crt"),
        front_proxy_client_cert: dir.join("front-proxy-client.crt"),
        front_proxy_client_key: dir.join("front-proxy-client.key"),
    };
    std::fs::write(&files.front_proxy_ca_cert, front_proxy_ca.pem())?;
    std::fs::write(&files.front_proxy_client_cert, front_proxy_cert.pem())?;
    std::fs::write(
        &files.front_proxy_client_key,
        front_proxy_key.serialize_pem(),
    )?;
    std::fs::write(&files.ca_cert, ca_cert.pem())?;
    std::fs::write(&files.serving_cert, serving_cert.pem())?;
    std::fs::write(&files.serving_key, serving_key.serialize_pem())?;
    std::fs::write(&files.service_account_key, sa_key.serialize_pem())?;
    std::fs::write(&files.service_account_public_key, sa_key.public_key_pem())?;
    std::fs::write(&files.kubelet_client_cert, kubelet_client_cert.pem())?;
    std::fs::write(
        &files.kubelet_client_key,
        kubelet_client_key.serialize_pem(),
    )?;
    Ok(files)
}
