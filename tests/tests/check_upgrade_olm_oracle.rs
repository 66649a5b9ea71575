//! `check-upgrade`'s OLM v0 refusals against OLM v0.46.0's own code, run for real:
//! `olm-crd-oracle` (built by tests/assets/build-go-assets.sh inside a copy of the OLM module)
//! calls the catalog operator's existing-CR validation with the objects on a fake dynamic
//! client, and `SafeStorageVersionUpgrade`, for every pair in bundle-tool's
//! `tests/fixtures/upgrade/olm-pairs` (old.yaml, new.yaml, objects.yaml). On every pair the
//! verdicts must be equal, OLM's message must be ours for the object it names, and a stored
//! version OLM refuses to drop must be our `storedVersionRemoval`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use bundle_tool::upgrade::cr_validation;
use bundle_tool::upgrade::crd_rules::{Crd, check_crd};
use bundle_tool::upgrade::live_crds::{olm_message, versions_to_validate};
use e2e::assets::Assets;
use kube::api::ApiResource;
use serde_json::Value;

fn pairs() -> Vec<PathBuf> {
    e2e::upgrade_pairs::pair_dirs("olm-pairs")
}

fn read_all(path: &Path) -> Vec<Value> {
    if !path.exists() {
        return Vec::new();
    }
    bundle_tool::manifest::read_path(path)
        .expect("fixture parses")
        .into_iter()
        .map(|d| d.value)
        .collect()
}

/// The field errors of OLM's aggregate, as a set (Go walks properties in map order).
fn field_errors(aggregate: &str) -> BTreeSet<String> {
    let inner = aggregate
        .strip_prefix('[')
        .and_then(|a| a.strip_suffix(']'))
        .unwrap_or(aggregate);
    inner
        .split(", [].")
        .map(|e| e.trim_start_matches("[].").to_string())
        .collect()
}

/// `(object, field errors)` of OLM's message.
fn split_message(message: &str) -> (String, BTreeSet<String>) {
    let (head, errors) = message
        .split_once(": updated validation is too restrictive: ")
        .unwrap_or_else(|| panic!("not OLM's message: {message}"));
    (head.to_string(), field_errors(errors))
}

#[test]
fn refusals_equal_olm_v0s_own_checks() -> anyhow::Result<()> {
    let oracle = Assets::locate()?.program("OLM_CRD_ORACLE", "olm-crd-oracle")?;
    let dirs = pairs();
    assert!(dirs.len() >= 15, "only {} pairs", dirs.len());
    let results: Vec<Value> = e2e::upgrade_pairs::run_oracle(&oracle, &dirs)?;
    assert_eq!(results.len(), dirs.len(), "one result per pair");
    let (mut refused_objects, mut refused_storage) = (0, 0);
    for (dir, result) in dirs.iter().zip(&results) {
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        assert_eq!(result["pair"], name.as_str());
        let old_object = read_all(&dir.join("old.yaml")).remove(0);
        let old = Crd::from_object(&old_object);
        let new = Crd::from_object(&read_all(&dir.join("new.yaml")).remove(0));
        let objects = read_all(&dir.join("objects.yaml"));
        let group = old_object["spec"]["group"].as_str().unwrap_or_default();

        // Existing objects: ours, the message for each refused object.
        let mut ours = Vec::new();
        for version in versions_to_validate(&old, &new) {
            let resource = ApiResource {
                group: group.to_string(),
                version: version.clone(),
                api_version: format!("{group}/{version}"),
                kind: old_object["spec"]["names"]["kind"]
                    .as_str()
                    .unwrap_or_default()
                    .into(),
                plural: old_object["spec"]["names"]["plural"]
                    .as_str()
                    .unwrap_or_default()
                    .into(),
            };
            let schema = new
                .versions
                .iter()
                .find(|v| v.name == version)
                .and_then(|v| v.schema.clone())
                .unwrap_or(Value::Null);
            for object in objects
                .iter()
                .filter(|o| o["apiVersion"] == resource.api_version.as_str())
            {
                let errors = cr_validation::validate(&schema, object);
                if errors.is_empty() {
                    continue;
                }
                let metadata = &object["metadata"];
                let object_name = match metadata["namespace"].as_str() {
                    Some(ns) => format!("{ns}/{}", metadata["name"].as_str().unwrap_or_default()),
                    None => metadata["name"].as_str().unwrap_or_default().to_string(),
                };
                ours.push(split_message(&olm_message(
                    &resource,
                    &object_name,
                    &errors,
                )));
            }
        }
        let theirs = result["validation"].as_str().expect("validation text");
        assert_eq!(
            ours.is_empty(),
            theirs.is_empty(),
            "{name}: verdict on existing objects; OLM said {theirs:?}, we found {ours:#?}"
        );
        if !theirs.is_empty() {
            // OLM stops at the first object it refuses; it must be one of ours, word for word.
            let theirs = split_message(theirs);
            assert!(
                ours.contains(&theirs),
                "{name}: OLM said {theirs:?}, we found {ours:#?}"
            );
            refused_objects += 1;
        }

        // Stored versions.
        let storage = result["storage"].as_str().expect("storage text");
        let removed: Vec<String> = check_crd(&old, &new)
            .into_iter()
            .filter(|f| f.rule == "storedVersionRemoval")
            .map(|f| f.message)
            .collect();
        assert_eq!(
            removed.is_empty(),
            storage.is_empty(),
            "{name}: stored versions; OLM said {storage:?}, we found {removed:?}"
        );
        refused_storage += usize::from(!storage.is_empty());
    }
    // Both kinds of refusal, and passing pairs, are there.
    assert!(
        refused_objects >= 8,
        "only {refused_objects} pairs refused for objects"
    );
    assert!(
        refused_storage >= 2,
        "only {refused_storage} pairs refused for stored versions"
    );
    Ok(())
}
