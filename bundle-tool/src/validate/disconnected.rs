//! The `disconnected` validator (ours; operator-sdk v1.42.3 has none like it): every image the
//! CSV names should be pinned by digest. A disconnected cluster pulls from a mirror, and the
//! mirrors its tools make hold images by digest (oc-mirror; registries.conf's
//! `mirror-by-digest-only`, OpenShift's ImageDigestMirrorSet), so an image named by tag is
//! not found there. Each tag is a warning that says how to pin it, and says so more loudly
//! when the CSV claims disconnected support (`features.operators.openshift.io/disconnected`,
//! or the older `operators.openshift.io/infrastructure-features` list).

use serde_json::Value;

use super::{Finding, LoadedBundle};

/// The findings for `bundle`, each with the CSV name as its value.
pub fn findings(bundle: &LoadedBundle) -> Vec<Finding> {
    let csv = &bundle.csv;
    let name = csv["metadata"]["name"].as_str().unwrap_or_default();
    let claim = if claims_disconnected(&csv["metadata"]["annotations"]) {
        ", although the CSV says the operator supports disconnected clusters"
    } else {
        ""
    };
    let mut out = Vec::new();
    let mut tagged = |place: String, image: &str| {
        if !image.contains("@sha256:") {
            out.push(Finding::warning(
                name,
                format!(
                    "{place} names the image {image:?} by tag, not by digest{claim}: the mirror of a disconnected cluster serves images by digest only; pin it with `bundle-tool generate --use-image-digests` or `bundle-tool release --pin-digests`"
                ),
            ));
        }
    };
    for (index, related) in csv["spec"]["relatedImages"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        if let Some(image) = related["image"].as_str() {
            let label = related["name"].as_str().unwrap_or_default();
            tagged(format!("relatedImages[{index}] ({label:?})"), image);
        }
    }
    for deployment in csv["spec"]["install"]["spec"]["deployments"]
        .as_array()
        .into_iter()
        .flatten()
    {
        let deployment_name = deployment["name"].as_str().unwrap_or_default();
        let pod = &deployment["spec"]["template"]["spec"];
        for kind in ["initContainers", "containers"] {
            for container in pod[kind].as_array().into_iter().flatten() {
                let container_name = container["name"].as_str().unwrap_or_default();
                if let Some(image) = container["image"].as_str() {
                    tagged(
                        format!("deployment {deployment_name:?} {kind} {container_name:?}"),
                        image,
                    );
                }
            }
        }
    }
    out
}

/// Whether the annotations say the operator runs on disconnected clusters.
fn claims_disconnected(annotations: &Value) -> bool {
    let feature = annotations["features.operators.openshift.io/disconnected"]
        .as_str()
        .is_some_and(|value| value.trim() == "true");
    let listed = annotations["operators.openshift.io/infrastructure-features"]
        .as_str()
        .and_then(|text| serde_json::from_str::<Vec<String>>(text).ok())
        .is_some_and(|features| {
            features
                .iter()
                .any(|f| f.eq_ignore_ascii_case("disconnected"))
        });
    feature || listed
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bundle(csv: Value) -> LoadedBundle {
        LoadedBundle {
            dir: "b".into(),
            csv,
            csv_file: "b/manifests/csv.yaml".into(),
            crds: vec![],
            others: vec![],
            files: vec![],
            annotations: Default::default(),
        }
    }

    #[test]
    fn each_image_named_by_tag_is_a_warning() {
        let digest = format!("sha256:{}", "a".repeat(64));
        let csv = serde_json::json!({
            "metadata": {"name": "op.v1.0.0", "annotations": {}},
            "spec": {
                "relatedImages": [
                    {"name": "operator", "image": format!("quay.io/me/op@{digest}")},
                    {"name": "redis", "image": "docker.io/library/redis:7.2"},
                ],
                "install": {"spec": {"deployments": [{
                    "name": "op",
                    "spec": {"template": {"spec": {
                        "initContainers": [{"name": "init", "image": "busybox:1.36"}],
                        "containers": [{"name": "manager", "image": format!("quay.io/me/op:v1@{digest}")}],
                    }}},
                }]}},
            },
        });
        let findings = findings(&bundle(csv));
        let details: Vec<&str> = findings.iter().map(|f| f.detail.as_str()).collect();
        assert_eq!(details.len(), 2, "{details:#?}");
        assert!(details[0].starts_with(
            "relatedImages[1] (\"redis\") names the image \"docker.io/library/redis:7.2\" by tag, not by digest: "
        ));
        assert!(details[1].starts_with(
            "deployment \"op\" initContainers \"init\" names the image \"busybox:1.36\" by tag"
        ));
        assert!(
            findings
                .iter()
                .all(|f| f.value.as_deref() == Some("op.v1.0.0"))
        );
    }

    #[test]
    fn a_claim_of_disconnected_support_is_named() {
        for annotations in [
            serde_json::json!({"features.operators.openshift.io/disconnected": "true"}),
            serde_json::json!({"operators.openshift.io/infrastructure-features": "[\"Disconnected\", \"proxy-aware\"]"}),
        ] {
            let csv = serde_json::json!({
                "metadata": {"name": "op.v1.0.0", "annotations": annotations},
                "spec": {"relatedImages": [{"name": "x", "image": "quay.io/me/x:1"}]},
            });
            let found = findings(&bundle(csv));
            assert_eq!(found.len(), 1);
            assert!(
                found[0]
                    .detail
                    .contains("although the CSV says the operator supports disconnected clusters"),
                "{}",
                found[0].detail
            );
        }
    }
}
