//! Applying manifests as an admin applies them with `kubectl apply --server-side -f`: every
//! document of a YAML stream. OLM itself runs on the real node, see [`crate::olm_on_node`].

use anyhow::Context as _;

/// Server-side applies every document of a YAML stream (any kind the cluster serves).
pub async fn apply_yaml(client: &kube::Client, text: &str) -> anyhow::Result<()> {
    let mut objects = Vec::new();
    for document in text.split("\n---").filter(|d| !d.trim().is_empty()) {
        let object: serde_json::Value = serde_saphyr::from_str(document)
            .with_context(|| format!("parse a manifest:\n{document}"))?;
        // A document of comments only, or an empty one.
        if object.is_null()
            || (object["apiVersion"].is_null() && object["metadata"]["name"].is_null())
        {
            continue;
        }
        objects.push(object);
    }
    crate::apply_objects(client, &objects).await
}
