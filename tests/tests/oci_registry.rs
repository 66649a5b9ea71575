//! The local OCI registries (Debian's docker-registry) accept pushes and serve pulls, with and
//! without basic auth.

use e2e::{OciRegistry, RegistryAuth};
use oci_client::client::{ClientConfig, ClientProtocol, Config, ImageLayer};
use oci_client::secrets::RegistryAuth as Credentials;
use oci_client::{Client, Reference};

fn client() -> Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    Client::new(ClientConfig {
        protocol: ClientProtocol::Http,
        ..Default::default()
    })
}

fn image() -> (Vec<ImageLayer>, Config) {
    let layer = ImageLayer::oci_v1(
        b"not really a tar, but the registry stores bytes".to_vec(),
        None,
    );
    let config = Config::oci_v1(br#"{"config":{"Labels":{"e2e":"yes"}}}"#.to_vec(), None);
    (vec![layer], config)
}

async fn push_and_pull(registry: &OciRegistry, credentials: &Credentials) -> anyhow::Result<()> {
    let reference: Reference = format!("{}/smoke/image:v1", registry.host()).parse()?;
    let (layers, config) = image();
    let pushed = client()
        .push(&reference, &layers, config.clone(), credentials, None)
        .await?;
    assert!(
        pushed.manifest_url.contains("/v2/smoke/image/manifests/"),
        "{}",
        pushed.manifest_url
    );

    // A new client, so nothing is cached from the push.
    let pulled = client()
        .pull(
            &reference,
            credentials,
            vec![oci_client::manifest::IMAGE_LAYER_MEDIA_TYPE],
        )
        .await?;
    assert_eq!(pulled.layers.len(), 1);
    assert_eq!(pulled.layers[0].data, layers[0].data);
    assert_eq!(pulled.config.data, config.data);
    let digest = client()
        .fetch_manifest_digest(&reference, credentials)
        .await?;
    assert_eq!(pulled.digest.as_deref(), Some(digest.as_str()));
    assert!(digest.starts_with("sha256:"));
    Ok(())
}

#[tokio::test]
async fn anonymous_registry_round_trips_an_image() -> anyhow::Result<()> {
    let registry = OciRegistry::start(RegistryAuth::Anonymous).await?;
    push_and_pull(&registry, &Credentials::Anonymous).await
}

#[tokio::test]
async fn htpasswd_registry_requires_and_accepts_credentials() -> anyhow::Result<()> {
    let registry = OciRegistry::start(RegistryAuth::Htpasswd {
        username: "pusher".into(),
        password: "s3cret-e2e".into(),
    })
    .await?;

    let reference: Reference = format!("{}/smoke/denied:v1", registry.host()).parse()?;
    let (layers, config) = image();
    let denied = client()
        .push(
            &reference,
            &layers,
            config.clone(),
            &Credentials::Anonymous,
            None,
        )
        .await;
    assert!(denied.is_err(), "an anonymous push must be refused");
    let wrong = Credentials::Basic("pusher".into(), "wrong".into());
    assert!(
        client()
            .push(&reference, &layers, config, &wrong, None)
            .await
            .is_err(),
        "a wrong password must be refused"
    );

    push_and_pull(
        &registry,
        &Credentials::Basic("pusher".into(), "s3cret-e2e".into()),
    )
    .await
}
