//! `bundle-tool check-upgrade` and `catalog check-upgrades` end to end: the Redis operator's
//! bundle against edited copies of itself (each edit one kind of break), the exit codes,
//! the output formats, bad input, and the Redis catalog's edges.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{Value, json};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace")
        .to_path_buf()
}

fn bundle_tool(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_bundle-tool"))
        .args(args)
        .output()
        .expect("run bundle-tool")
}

/// A bundle folder written from the Redis bundle's objects (as JSON, which is YAML).
struct TestBundle {
    csv: Value,
    crd: Option<Value>,
    others: Vec<Value>,
}

impl TestBundle {
    /// The repository's bundle, renamed to `version`.
    fn redis(version: &str) -> TestBundle {
        let docs =
            bundle_tool::manifest::read_path(&repo().join("bundle/manifests")).expect("bundle");
        let mut csv = None;
        let mut crd = None;
        let mut others = Vec::new();
        for doc in docs {
            match doc.value["kind"].as_str() {
                Some("ClusterServiceVersion") => csv = Some(doc.value),
                Some("CustomResourceDefinition") => crd = Some(doc.value),
                _ => others.push(doc.value),
            }
        }
        let mut bundle = TestBundle {
            csv: csv.expect("CSV"),
            crd,
            others,
        };
        bundle.csv["metadata"]["name"] = json!(format!("redis-operator.v{version}"));
        bundle.csv["spec"]["version"] = json!(version);
        bundle
    }

    /// This bundle, upgrading from `old` by `spec.replaces`.
    fn replacing(mut self, old: &TestBundle) -> TestBundle {
        self.csv["spec"]["replaces"] = old.csv["metadata"]["name"].clone();
        self
    }

    fn write(&self, dir: &Path) -> String {
        std::fs::create_dir_all(dir.join("manifests")).expect("mkdir");
        std::fs::create_dir_all(dir.join("metadata")).expect("mkdir");
        std::fs::copy(
            repo().join("bundle/metadata/annotations.yaml"),
            dir.join("metadata/annotations.yaml"),
        )
        .expect("annotations");
        let mut objects = vec![("csv.yaml".to_string(), &self.csv)];
        if let Some(crd) = &self.crd {
            objects.push(("crd.yaml".to_string(), crd));
        }
        for (i, other) in self.others.iter().enumerate() {
            objects.push((format!("other{i}.yaml"), other));
        }
        for (name, object) in objects {
            std::fs::write(dir.join("manifests").join(name), object.to_string()).expect("write");
        }
        dir.to_str().expect("utf-8").to_string()
    }
}

/// Runs `check-upgrade OLD NEW -o json`: exit code and the report.
fn check(old: &TestBundle, new: &TestBundle) -> (Option<i32>, Value) {
    let dir = tempfile::tempdir().expect("tempdir");
    let old_dir = old.write(&dir.path().join("old"));
    let new_dir = new.write(&dir.path().join("new"));
    let output = bundle_tool(&["check-upgrade", &old_dir, &new_dir, "-o", "json"]);
    let report: Value = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&output.stderr)));
    (output.status.code(), report)
}

/// `(level, rule)` of every finding.
fn rules(report: &Value) -> Vec<(String, String)> {
    let mut found: Vec<(String, String)> = report["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .map(|f| {
            (
                f["level"].as_str().expect("level").to_string(),
                f["rule"].as_str().expect("rule").to_string(),
            )
        })
        .collect();
    found.sort();
    found.dedup();
    found
}

fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

#[test]
fn a_plain_release_is_safe() {
    let old = TestBundle::redis("0.1.0");
    let new = TestBundle::redis("0.2.0").replacing(&old);
    let (code, report) = check(&old, &new);
    assert_eq!(code, Some(0), "{report:#}");
    assert_eq!(rules(&report), []);
    assert_eq!(report["passed"], true);
}

#[test]
fn no_edge_from_old_is_an_error_and_skips_or_skip_range_are_edges() {
    let old = TestBundle::redis("0.1.0");
    let new = TestBundle::redis("0.2.0");
    let (code, report) = check(&old, &new);
    assert_eq!(code, Some(1));
    assert_eq!(rules(&report), pairs(&[("error", "upgradeEdge")]));

    let mut skipping = TestBundle::redis("0.2.0");
    skipping.csv["spec"]["skips"] = json!(["redis-operator.v0.1.0"]);
    assert_eq!(check(&old, &skipping).0, Some(0));

    let mut ranged = TestBundle::redis("0.2.0");
    ranged.csv["metadata"]["annotations"]["olm.skipRange"] = json!(">=0.1.0 <0.2.0");
    assert_eq!(check(&old, &ranged).0, Some(0));
    ranged.csv["metadata"]["annotations"]["olm.skipRange"] = json!(">=0.1.1 <0.2.0");
    assert_eq!(
        rules(&check(&old, &ranged).1),
        pairs(&[("error", "upgradeEdge")])
    );
}

#[test]
fn a_stored_version_removed_is_refused() {
    let old = TestBundle::redis("0.1.0");
    let mut new = TestBundle::redis("0.2.0").replacing(&old);
    // v1 is OLD's storage version; NEW keeps only v1alpha1.
    let crd = new.crd.as_mut().expect("crd");
    let versions = crd["spec"]["versions"].as_array_mut().expect("versions");
    versions.retain(|v| v["name"] != "v1");
    versions[0]["storage"] = json!(true);
    let (code, report) = check(&old, &new);
    assert_eq!(code, Some(1));
    assert_eq!(rules(&report), pairs(&[("error", "storedVersionRemoval")]));
    let finding = &report["findings"][0];
    assert_eq!(finding["subject"], "redisclusters.cache.example.com");
    assert_eq!(finding["message"], "stored versions removed : [v1]");
    assert!(
        finding["hint"]
            .as_str()
            .expect("hint")
            .contains("storedVersions")
    );
}

#[test]
fn a_crd_dropped_from_the_bundle_is_an_error() {
    let old = TestBundle::redis("0.1.0");
    let mut new = TestBundle::redis("0.2.0").replacing(&old);
    new.crd = None;
    let (code, report) = check(&old, &new);
    assert_eq!(code, Some(1));
    assert_eq!(rules(&report), pairs(&[("error", "crdRemoved")]));
}

#[test]
fn operator_changes_are_each_reported_with_their_level() {
    let old = TestBundle::redis("0.1.0");
    let mut new = TestBundle::redis("0.2.0").replacing(&old);
    let spec = &mut new.csv["spec"];
    spec["installModes"] = json!([{"type": "AllNamespaces", "supported": false}, {"type": "OwnNamespace", "supported": true}]);
    spec["minKubeVersion"] = json!("1.35.0");
    spec["customresourcedefinitions"]["required"] =
        json!([{"name": "certificates.cert-manager.io", "version": "v1", "kind": "Certificate"}]);
    spec["webhookdefinitions"] = json!([]);
    let cluster_rules = &mut spec["install"]["spec"]["clusterPermissions"][0]["rules"];
    cluster_rules.as_array_mut().expect("rules").push(json!(
        {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list"]}
    ));
    spec["install"]["spec"]["permissions"] = json!([]);
    spec["install"]["spec"]["deployments"][0]["spec"]["template"]["spec"]["containers"][0]["image"] =
        json!("quay.io/example/redis-operator:0.2.0");
    spec["relatedImages"][0]["image"] = json!("quay.io/example/redis-operator:0.2.0");
    let (code, report) = check(&old, &new);
    assert_eq!(code, Some(1), "install modes narrowed is an error");
    assert_eq!(
        rules(&report),
        pairs(&[
            ("error", "installModes"),
            ("info", "operatorImage"),
            ("info", "permissionRemoved"),
            ("info", "relatedImages"),
            ("warning", "minKubeVersion"),
            ("warning", "permissionAdded"),
            ("warning", "requiredAPIAdded"),
            ("warning", "webhookRemoved"),
        ])
    );
    let added: Vec<&Value> = report["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter(|f| f["rule"] == "permissionAdded")
        .collect();
    assert_eq!(added.len(), 1);
    assert_eq!(
        added[0]["message"],
        "clusterPermissions redis-operator core/nodes: get,list granted"
    );
}

#[test]
fn owned_api_removed_and_webhook_added() {
    let old = TestBundle::redis("0.1.0");
    let mut new = TestBundle::redis("0.2.0").replacing(&old);
    let owned = &mut new.csv["spec"]["customresourcedefinitions"]["owned"];
    owned
        .as_array_mut()
        .expect("owned")
        .retain(|api| api["version"] != "v1alpha1");
    new.csv["spec"]["webhookdefinitions"]
        .as_array_mut()
        .expect("webhooks")
        .push(json!({"type": "ValidatingAdmissionWebhook", "generateName": "vrediscluster.kb.io"}));
    let (code, report) = check(&old, &new);
    assert_eq!(code, Some(1));
    assert_eq!(
        rules(&report),
        pairs(&[("error", "ownedAPIRemoved"), ("warning", "webhookAdded")])
    );
}

#[test]
fn text_and_markdown_reports() {
    let dir = tempfile::tempdir().expect("tempdir");
    let old = TestBundle::redis("0.1.0");
    let new = TestBundle::redis("0.2.0");
    let old_dir = old.write(&dir.path().join("old"));
    let new_dir = new.write(&dir.path().join("new"));
    let text = bundle_tool(&["check-upgrade", &old_dir, &new_dir]);
    assert_eq!(text.status.code(), Some(1));
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("error: redis-operator.v0.2.0 spec.replaces [upgradeEdge]"),
        "{text}"
    );
    assert!(
        text.contains("    fix: set spec.replaces: redis-operator.v0.1.0"),
        "{text}"
    );
    assert!(text.ends_with("redis-operator.v0.1.0 -> redis-operator.v0.2.0: unsafe (1 errors, 0 warnings, 0 info)\n"), "{text}");
    let md = bundle_tool(&["check-upgrade", &old_dir, &new_dir, "-o", "md"]);
    let md = String::from_utf8_lossy(&md.stdout);
    assert!(
        md.contains("| level | rule | where | message | old | new | fix |"),
        "{md}"
    );
    assert!(md.contains("| error | `upgradeEdge` |"), "{md}");
}

#[test]
fn bad_input_names_the_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let good = TestBundle::redis("0.1.0").write(&dir.path().join("good"));
    let output = bundle_tool(&["check-upgrade", "/nonexistent", &good]);
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("/nonexistent: no such file or folder"),
        "{stderr}"
    );

    let empty = dir.path().join("empty");
    std::fs::create_dir_all(&empty).expect("mkdir");
    let output = bundle_tool(&["check-upgrade", empty.to_str().unwrap(), &good]);
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("empty: not a bundle folder"), "{stderr}");

    let broken = dir.path().join("broken");
    TestBundle::redis("0.2.0").write(&broken);
    std::fs::write(broken.join("manifests/crd.yaml"), "kind: [unclosed\n").expect("write");
    let output = bundle_tool(&["check-upgrade", &good, broken.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("broken/manifests/crd.yaml:1"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");

    let no_csv = dir.path().join("no-csv");
    TestBundle::redis("0.2.0").write(&no_csv);
    std::fs::remove_file(no_csv.join("manifests/csv.yaml")).expect("rm");
    let output = bundle_tool(&["check-upgrade", &good, no_csv.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("no-csv: no ClusterServiceVersion in the bundle"),
        "{stderr}"
    );
}

#[test]
fn the_redis_catalog_upgrades_cleanly() {
    let catalog = repo().join("catalog");
    let output = bundle_tool(&[
        "catalog",
        "check-upgrades",
        catalog.to_str().unwrap(),
        "-o",
        "json",
    ]);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stdout)
    );
    let report: Value = serde_json::from_slice(&output.stdout).expect("json");
    let edges: Vec<(String, String)> = report["edges"]
        .as_array()
        .expect("edges")
        .iter()
        .map(|e| {
            (
                e["report"]["old"].as_str().unwrap().to_string(),
                e["report"]["new"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        edges,
        pairs(&[
            ("redis-operator.v0.1.0", "redis-operator.v0.2.0"),
            ("redis-operator.v0.1.0", "redis-operator.v0.3.0"),
            ("redis-operator.v0.2.0", "redis-operator.v0.3.0"),
        ])
    );
    let unknown = bundle_tool(&[
        "catalog",
        "check-upgrades",
        catalog.to_str().unwrap(),
        "--package",
        "nope",
    ]);
    assert_eq!(unknown.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("no package \"nope\""));
}

#[test]
fn a_catalog_edge_that_removes_a_stored_version_fails() {
    use base64::Engine;
    let engine = base64::engine::general_purpose::STANDARD;
    let text = std::fs::read_to_string(repo().join("catalog/redis-operator/catalog.json"))
        .expect("catalog");
    // The catalog is a stream of JSON documents.
    let docs = serde_json::Deserializer::from_str(&text).into_iter::<Value>();
    let mut out = String::new();
    for doc in docs {
        let mut value = doc.expect("catalog document");
        if value["name"] == "redis-operator.v0.3.0" && value["schema"] == "olm.bundle" {
            for property in value["properties"].as_array_mut().expect("properties") {
                if property["type"] != "olm.bundle.object" {
                    continue;
                }
                let data = engine
                    .decode(property["value"]["data"].as_str().unwrap())
                    .expect("base64");
                let mut object: Value = serde_json::from_slice(&data).expect("object json");
                if object["kind"] == "CustomResourceDefinition" {
                    let versions = object["spec"]["versions"].as_array_mut().unwrap();
                    versions.retain(|v| v["name"] != "v1");
                    versions[0]["storage"] = json!(true);
                    property["value"]["data"] = json!(engine.encode(object.to_string()));
                }
            }
        }
        out.push_str(&value.to_string());
        out.push('\n');
    }
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(dir.path().join("redis-operator")).unwrap();
    std::fs::write(dir.path().join("redis-operator/catalog.json"), out).unwrap();
    let output = bundle_tool(&["catalog", "check-upgrades", dir.path().to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1));
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(
        text.ends_with("3 upgrade edges checked, 2 unsafe\n"),
        "{text}"
    );
    assert!(
        text.contains("[storedVersionRemoval]: stored versions removed : [v1]"),
        "{text}"
    );
}

/// The Redis catalog with v0.3.0's `olm.bundle.object` properties removed: v0.3.0 is then an
/// image reference only. Returns the catalog folder and v0.3.0's image.
fn catalog_without_objects_of_v030() -> (tempfile::TempDir, String) {
    let text = std::fs::read_to_string(repo().join("catalog/redis-operator/catalog.json"))
        .expect("catalog");
    let mut out = String::new();
    let mut image = String::new();
    for doc in serde_json::Deserializer::from_str(&text).into_iter::<Value>() {
        let mut value = doc.expect("catalog document");
        if value["name"] == "redis-operator.v0.3.0" && value["schema"] == "olm.bundle" {
            image = value["image"].as_str().expect("image").to_string();
            value["properties"]
                .as_array_mut()
                .expect("properties")
                .retain(|p| p["type"] != "olm.bundle.object");
        }
        out.push_str(&value.to_string());
        out.push('\n');
    }
    assert!(!image.is_empty(), "v0.3.0 in the catalog");
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(dir.path().join("redis-operator")).unwrap();
    std::fs::write(dir.path().join("redis-operator/catalog.json"), out).unwrap();
    (dir, image)
}

#[test]
fn catalog_bundles_without_objects_come_from_bundle_sources() {
    let (catalog, image) = catalog_without_objects_of_v030();
    let catalog = catalog.path().to_str().unwrap().to_string();

    // Without a source the two edges into v0.3.0 are named as not checked, with the way out.
    let output = bundle_tool(&["catalog", "check-upgrades", &catalog]);
    assert_eq!(output.status.code(), Some(0));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stdout.ends_with("1 upgrade edges checked, 0 unsafe, 2 not checked\n"),
        "{stdout}"
    );
    assert!(
        stderr.contains(&format!(
            "redis-operator: redis-operator.v0.2.0 -> redis-operator.v0.3.0: not checked (a bundle without olm.bundle.object properties; give --bundle-source {image}=DIR or --pull)"
        )),
        "{stderr}"
    );

    // From a folder: a v0.3.0 whose CRD became cluster-scoped. The two edges into it are
    // checked from that folder, and refused.
    let mut broken = TestBundle::redis("0.3.0");
    broken.crd.as_mut().expect("CRD")["spec"]["scope"] = json!("Cluster");
    let dir = tempfile::tempdir().expect("tempdir");
    let folder = broken.write(&dir.path().join("v0.3.0"));
    let output = bundle_tool(&[
        "catalog",
        "check-upgrades",
        &catalog,
        "--bundle-source",
        &format!("{image}={folder}"),
    ]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stdout}{stderr}");
    assert!(
        stdout.ends_with("3 upgrade edges checked, 2 unsafe\n"),
        "{stdout}"
    );
    assert!(
        stdout.contains("[scope]: scope changed : \"Namespaced\" -> \"Cluster\""),
        "{stdout}"
    );

    // A folder holding another bundle than the catalog's: an error naming both.
    let other = TestBundle::redis("0.9.0").write(&dir.path().join("v0.9.0"));
    let output = bundle_tool(&[
        "catalog",
        "check-upgrades",
        &catalog,
        "--bundle-source",
        &format!("{image}={other}"),
    ]);
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(&format!(
            "{image}: the bundle read for it is \"redis-operator.v0.9.0\", the catalog's is \"redis-operator.v0.3.0\""
        )),
        "{stderr}"
    );

    // A source that is not a bundle folder: a clear error naming it.
    let output = bundle_tool(&[
        "catalog",
        "check-upgrades",
        &catalog,
        "--bundle-source",
        &format!("{image}={}", dir.path().display()),
    ]);
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(&format!("{} is not a bundle folder", dir.path().display())),
        "{stderr}"
    );
}
