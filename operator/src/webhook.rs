//! The CRD conversion webhook: answers the apiserver's ConversionReviews over HTTPS, using
//! [`crate::api::conversion`], and makes the apiserver trust its certificate.

use std::path::Path;
use std::sync::Arc;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, Patch, PatchParams};
use kube::core::conversion::{ConversionRequest, ConversionResponse, ConversionReview};
use kube::core::response::Status;
use rcgen::{CertificateParams, KeyPair};
use serde_json::Value;

use crate::api::{conversion, v1, v1alpha1};
use crate::crd::{CONVERSION_PATH, CRD_NAME};
use crate::http::{Request, Response};

/// Converts one stored object to `desired` (`cache.example.com/v1` or `.../v1alpha1`).
pub fn convert_object(object: Value, desired: &str) -> Result<Value, String> {
    let from = object
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    if from == desired {
        return Ok(object);
    }
    let converted = match (from.as_str(), desired) {
        ("cache.example.com/v1alpha1", "cache.example.com/v1") => {
            let old: v1alpha1::RedisCluster =
                serde_json::from_value(object).map_err(|e| e.to_string())?;
            serde_json::to_value(conversion::to_v1(old))
        }
        ("cache.example.com/v1", "cache.example.com/v1alpha1") => {
            let new: v1::RedisCluster =
                serde_json::from_value(object).map_err(|e| e.to_string())?;
            serde_json::to_value(conversion::to_v1alpha1(new))
        }
        _ => return Err(format!("cannot convert {from} to {desired}")),
    };
    converted.map_err(|e| e.to_string())
}

/// Answers a ConversionReview: every object converted, or a failure naming the first one that
/// could not be.
pub fn review(review: ConversionReview) -> ConversionReview {
    let request = match ConversionRequest::from_review(review) {
        Ok(request) => request,
        Err(error) => {
            // Without a request there is no uid to answer to; an empty failed review is all we can say.
            return ConversionResponse::invalid(Status::failure(&error.to_string(), "BadRequest"))
                .into_review();
        }
    };
    let desired = request.desired_api_version.clone();
    let objects = request.objects.clone();
    let response = ConversionResponse::for_request(request);
    let mut converted = Vec::with_capacity(objects.len());
    for object in objects {
        match convert_object(object, &desired) {
            Ok(value) => converted.push(value),
            Err(message) => {
                return response
                    .failure(Status::failure(&message, "ConversionFailed"))
                    .into_review();
            }
        }
    }
    response.success(converted).into_review()
}

/// The HTTP handler: POST [`CONVERSION_PATH`] with a ConversionReview.
pub fn handle(request: Request) -> Response {
    if request.path != CONVERSION_PATH || request.method != http::Method::POST {
        return Response::error(http::StatusCode::NOT_FOUND, "POST /convert only");
    }
    match serde_json::from_slice::<ConversionReview>(&request.body) {
        Ok(incoming) => Response::json(&review(incoming)),
        Err(error) => Response::error(
            http::StatusCode::BAD_REQUEST,
            format!("not a ConversionReview: {error}"),
        ),
    }
}

/// The webhook's serving certificate and key, PEM.
#[derive(Clone, Debug)]
pub struct ServingCertificate {
    /// The certificate chain.
    pub cert_pem: String,
    /// The private key.
    pub key_pem: String,
}

impl ServingCertificate {
    /// Reads `tls.crt`/`tls.key` style files (as OLM or cert-manager mount them).
    pub fn from_files(cert: &Path, key: &Path) -> anyhow::Result<Self> {
        Ok(ServingCertificate {
            cert_pem: std::fs::read_to_string(cert)?,
            key_pem: std::fs::read_to_string(key)?,
        })
    }

    /// A self-signed certificate for `names` (DNS names or IP addresses); the certificate is
    /// its own CA, so it is also the `caBundle`.
    pub fn self_signed(names: Vec<String>) -> anyhow::Result<Self> {
        let key = KeyPair::generate()?;
        let params = CertificateParams::new(names)?;
        let cert = params.self_signed(&key)?;
        Ok(ServingCertificate {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        })
    }

    /// A TLS acceptor serving this certificate (HTTP/1.1 only).
    pub fn acceptor(&self) -> anyhow::Result<tokio_rustls::TlsAcceptor> {
        use rustls::pki_types::pem::PemObject;
        use rustls::pki_types::{CertificateDer, PrivateKeyDer};
        let certs: Vec<CertificateDer<'static>> =
            CertificateDer::pem_slice_iter(self.cert_pem.as_bytes()).collect::<Result<_, _>>()?;
        let key = PrivateKeyDer::from_pem_slice(self.key_pem.as_bytes())?;
        let config = rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(certs, key)?;
        Ok(tokio_rustls::TlsAcceptor::from(Arc::new(config)))
    }
}

/// Sets the CRD's conversion `caBundle` to `ca_pem`, so the apiserver trusts the webhook.
pub async fn publish_ca_bundle(client: &kube::Client, ca_pem: &str) -> anyhow::Result<()> {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let encoded = k8s_openapi::ByteString(ca_pem.as_bytes().to_vec());
    let patch = serde_json::json!({
        "spec": {"conversion": {"webhook": {"clientConfig": {"caBundle": encoded}}}}
    });
    crds.patch(CRD_NAME, &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn review_of(objects: Vec<Value>, desired: &str) -> ConversionReview {
        serde_json::from_value(json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "ConversionReview",
            "request": {"uid": "abc", "desiredAPIVersion": desired, "objects": objects}
        }))
        .unwrap()
    }

    #[test]
    fn converts_every_object_and_keeps_the_uid() {
        let answer = review(review_of(
            vec![json!({
                "apiVersion": "cache.example.com/v1alpha1", "kind": "RedisCluster",
                "metadata": {"name": "a"}, "spec": {"replicas": 2, "version": "6.2"}
            })],
            "cache.example.com/v1",
        ));
        let response = answer.response.unwrap();
        assert_eq!(response.uid, "abc");
        assert_eq!(
            response.result.status,
            Some(kube::core::response::StatusSummary::Success)
        );
        assert_eq!(
            response.converted_objects[0]["apiVersion"],
            "cache.example.com/v1"
        );
        assert_eq!(response.converted_objects[0]["spec"]["redisVersion"], "6.2");
    }

    #[test]
    fn unknown_versions_fail_the_review() {
        let answer = review(review_of(
            vec![
                json!({"apiVersion": "cache.example.com/v9", "kind": "RedisCluster", "metadata": {"name": "a"}, "spec": {}}),
            ],
            "cache.example.com/v1",
        ));
        let response = answer.response.unwrap();
        assert_eq!(
            response.result.status,
            Some(kube::core::response::StatusSummary::Failure)
        );
        assert!(response.result.message.contains("cannot convert"));
    }

    #[test]
    fn the_handler_rejects_what_is_not_a_review() {
        let response = handle(Request {
            method: http::Method::POST,
            path: "/convert".into(),
            body: "{}".into(),
        });
        assert_eq!(response.status, http::StatusCode::BAD_REQUEST);
        let response = handle(Request {
            method: http::Method::GET,
            path: "/other".into(),
            body: "".into(),
        });
        assert_eq!(response.status, http::StatusCode::NOT_FOUND);
    }

    #[test]
    fn self_signed_certificates_make_an_acceptor() {
        let cert =
            ServingCertificate::self_signed(vec!["127.0.0.1".into(), "localhost".into()]).unwrap();
        assert!(cert.cert_pem.starts_with("-----BEGIN CERTIFICATE-----"));
        let _ = rustls::crypto::ring::default_provider().install_default();
        cert.acceptor().unwrap();
    }
}
