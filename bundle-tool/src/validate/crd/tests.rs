use super::*;
use serde_json::json;

fn messages(crd: Value) -> Vec<String> {
    findings(&crd).iter().map(ToString::to_string).collect()
}

fn sound() -> Value {
    json!({"apiVersion": "apiextensions.k8s.io/v1", "metadata": {"name": "caches.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"plural": "caches", "kind": "Cache", "shortNames": ["ca"], "categories": ["all"]},
            "versions": [{"name": "v1", "served": true, "storage": true},
                         {"name": "v2", "served": true, "storage": false}]}})
}

#[test]
fn a_sound_crd_has_no_findings() {
    assert_eq!(messages(sound()), Vec::<String>::new());
    let v1beta1 = json!({"apiVersion": "apiextensions.k8s.io/v1beta1",
        "metadata": {"name": "caches.example.com"}, "spec": {"group": "example.com",
        "names": {"plural": "caches", "kind": "Cache"}, "version": "v1",
        "preserveUnknownFields": false}});
    assert_eq!(messages(v1beta1), Vec::<String>::new());
}

#[test]
fn each_problem_is_a_kubernetes_field_error() {
    let mut crd = sound();
    crd["metadata"]["name"] = json!("caches.example");
    crd["spec"]["group"] = json!("example");
    crd["spec"]["versions"][1] = json!({"name": "v1", "storage": true});
    assert_eq!(
        messages(crd),
        vec![
            "Error: Field spec.group, Value example: spec.group: Invalid value: \"example\": should be a domain with at least one dot",
            "Error: Field spec.versions, Value [v1 v1]: spec.versions: Invalid value: [v1 v1]: must contain unique version names",
            "Error: Field spec.versions, Value [v1 v1]: spec.versions: Invalid value: [v1 v1]: must have exactly one version marked as storage version",
        ]
    );
    let mut misnamed = sound();
    misnamed["metadata"]["name"] = json!("cache.example.com");
    assert_eq!(
        messages(misnamed),
        vec![
            "Error: Field metadata.name, Value cache.example.com: metadata.name: Invalid value: \"cache.example.com\": must be spec.names.plural+\".\"+spec.group"
        ]
    );
}

#[test]
fn names_scope_and_versions_follow_kubernetes_rules() {
    let mut crd = sound();
    crd["metadata"]["namespace"] = json!("ns");
    crd["spec"]["scope"] = json!("Global");
    crd["spec"]["names"]["shortNames"] = json!(["ok", "Bad_Short"]);
    crd["spec"]["names"]["listKind"] = json!("Cache");
    crd["spec"]["versions"][1]["name"] = json!("V2");
    let found = messages(crd);
    let dns = rules::DNS1035_RULE;
    assert_eq!(
        found,
        vec![
            "Error: Field metadata.namespace, Value : metadata.namespace: Forbidden: not allowed on this type".to_string(),
            "Error: Field spec.scope, Value Global: spec.scope: Unsupported value: \"Global\": supported values: \"Cluster\", \"Namespaced\"".to_string(),
            format!("Error: Field spec.versions[1].name, Value V2: spec.versions[1].name: Invalid value: \"V2\": {dns}"),
            format!("Error: Field spec.names.shortNames[1], Value Bad_Short: spec.names.shortNames[1]: Invalid value: \"Bad_Short\": {dns}"),
            "Error: Field spec.names.listKind, Value Cache: spec.names.listKind: Invalid value: \"Cache\": kind and listKind may not be the same".to_string(),
        ]
    );
    let mut nameless = sound();
    nameless["spec"]["names"] = json!({"plural": "caches"});
    assert_eq!(
        messages(nameless),
        vec![
            "Error: Field spec.names.singular, Value : spec.names.singular: Required value",
            "Error: Field spec.names.kind, Value : spec.names.kind: Required value",
            "Error: Field spec.names.listKind, Value : spec.names.listKind: Required value",
        ]
    );
}

#[test]
fn errors_under_status_or_the_schema_are_dropped_like_upstream() {
    let mut crd = sound();
    // One version: its subresources move to the top level in the internal form.
    crd["spec"]["versions"] = json!([{"name": "v1", "storage": true,
        "schema": {"openAPIV3Schema": {"type": "wrong", "properties": {"spec": {"default": {}}}}},
        "subresources": {"scale": {"specReplicasPath": "spec.r", "statusReplicasPath": ".spec.x"}}}]);
    assert_eq!(
        messages(crd),
        vec![
            "Error: Field spec.subresources.scale.specReplicasPath, Value spec.r: spec.subresources.scale.specReplicasPath: Invalid value: \"spec.r\": must be a simple json path starting with ."
        ]
    );
}

#[test]
fn preserve_unknown_fields_true_is_refused() {
    let mut crd = sound();
    crd["spec"]["preserveUnknownFields"] = json!(true);
    crd["spec"]["versions"][0]["schema"] =
        json!({"openAPIV3Schema": {"properties": {"a": {"default": 1}}}});
    assert_eq!(
        messages(crd),
        vec![
            "Error: Field spec.preserveUnknownFields, Value true: spec.preserveUnknownFields: Invalid value: true: must be false in order to use defaults in the schema",
            "Error: Field spec.preserveUnknownFields, Value true: spec.preserveUnknownFields: Invalid value: true: cannot set to true, set x-kubernetes-preserve-unknown-fields to true in spec.versions[*].schema instead",
        ]
    );
    // v1beta1 defaults it to true.
    let v1beta1 = json!({"apiVersion": "apiextensions.k8s.io/v1beta1",
        "metadata": {"name": "caches.example.com"}, "spec": {"group": "example.com",
        "names": {"plural": "caches", "kind": "Cache"}, "version": "v1"}});
    assert_eq!(messages(v1beta1).len(), 1);
}

#[test]
fn kubernetes_groups_need_api_approval() {
    let mut crd = sound();
    crd["metadata"]["name"] = json!("caches.x.k8s.io");
    crd["spec"]["group"] = json!("x.k8s.io");
    assert_eq!(
        messages(crd.clone()),
        vec![
            "Error: Field metadata.annotations[api-approved.kubernetes.io], Value : metadata.annotations[api-approved.kubernetes.io]: Required value: protected groups must have approval annotation \"api-approved.kubernetes.io\", see https://github.com/kubernetes/enhancements/pull/1111"
        ]
    );
    crd["metadata"]["annotations"] =
        json!({"api-approved.kubernetes.io": "https://github.com/kubernetes/kubernetes/pull/1"});
    assert_eq!(messages(crd), Vec::<String>::new());
}
