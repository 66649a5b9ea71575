//! The operator's permissions: one list, used both to generate the ClusterRole and (in the
//! end-to-end tests) to run the controller under exactly these rights.
//!
//! Least privilege: no `*` anywhere, and only the verbs the controller's calls need.

use k8s_openapi::api::rbac::v1::PolicyRule;

/// (API group, resources, verbs) the operator needs cluster-wide.
const CLUSTER_RULES: &[(&str, &[&str], &[&str])] = &[
    (
        "cache.example.com",
        &["redisclusters"],
        &["get", "list", "watch", "patch", "update"],
    ),
    (
        "cache.example.com",
        &["redisclusters/status"],
        &["get", "patch", "update"],
    ),
    // Owner references with blockOwnerDeletion need update on the owner's finalizers.
    (
        "cache.example.com",
        &["redisclusters/finalizers"],
        &["update"],
    ),
    (
        "apps",
        &["statefulsets"],
        &["get", "list", "watch", "create", "patch", "delete"],
    ),
    (
        "",
        &["services", "configmaps"],
        &["get", "list", "watch", "create", "patch"],
    ),
    (
        "policy",
        &["poddisruptionbudgets"],
        &["get", "list", "watch", "create", "patch"],
    ),
    (
        "",
        &["persistentvolumeclaims"],
        &["list", "delete", "deletecollection"],
    ),
    // Pods: watched for failover, labelled with their role, deleted one at a time for a
    // rolling update (the StatefulSet is OnDelete).
    ("", &["pods"], &["get", "list", "watch", "patch", "delete"]),
    // Secrets: the password Secret is read as metadata only (its resourceVersion rolls the
    // pods); the replication Secret is the operator's own, created once per cluster.
    ("", &["secrets"], &["get", "create"]),
    ("events.k8s.io", &["events"], &["create", "patch"]),
];

/// The operator may read and patch its own CRD only (to set the conversion webhook's CA).
const CRD_RULE: (&str, &str, &[&str]) = (
    "apiextensions.k8s.io",
    "customresourcedefinitions",
    &["get", "patch"],
);

/// (API group, resources, verbs) the operator needs in its own namespace: leader election.
const NAMESPACE_RULES: &[(&str, &[&str], &[&str])] = &[(
    "coordination.k8s.io",
    &["leases"],
    &["get", "create", "patch"],
)];

fn rules(table: &[(&str, &[&str], &[&str])]) -> Vec<PolicyRule> {
    table
        .iter()
        .map(|(group, resources, verbs)| PolicyRule {
            api_groups: Some(vec![group.to_string()]),
            resources: Some(resources.iter().map(|r| r.to_string()).collect()),
            verbs: verbs.iter().map(|v| v.to_string()).collect(),
            ..Default::default()
        })
        .collect()
}

/// Rules for the operator's ClusterRole. `manages_webhook_ca`: the operator writes its own
/// webhook CA into its CRD (a plain install); under OLM, OLM does that, and the operator
/// needs no right on CRDs at all.
pub fn cluster_rules(manages_webhook_ca: bool) -> Vec<PolicyRule> {
    let mut all = rules(CLUSTER_RULES);
    if !manages_webhook_ca {
        return all;
    }
    let (group, resource, verbs) = CRD_RULE;
    all.push(PolicyRule {
        api_groups: Some(vec![group.into()]),
        resources: Some(vec![resource.into()]),
        resource_names: Some(vec![crate::crd::CRD_NAME.into()]),
        verbs: verbs.iter().map(|v| v.to_string()).collect(),
        ..Default::default()
    });
    all
}

/// Rules for the operator's Role in its own namespace.
pub fn namespace_rules() -> Vec<PolicyRule> {
    rules(NAMESPACE_RULES)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn under_olm_there_is_no_right_on_crds() {
        let olm = cluster_rules(false);
        assert!(olm.iter().all(|r| r.api_groups.as_deref() != Some(&["apiextensions.k8s.io".to_string()][..])));
        let plain = cluster_rules(true);
        let crd_rule = plain
            .iter()
            .find(|r| {
                r.resources.as_deref() == Some(&["customresourcedefinitions".to_string()][..])
            })
            .unwrap();
        assert_eq!(
            crd_rule.resource_names.as_deref(),
            Some(&[crate::crd::CRD_NAME.to_string()][..])
        );
    }

    #[test]
    fn no_wildcards_anywhere() {
        for rule in cluster_rules(true).into_iter().chain(namespace_rules()) {
            let all = rule
                .verbs
                .iter()
                .chain(rule.resources.iter().flatten())
                .chain(rule.api_groups.iter().flatten());
            for word in all {
                assert!(!word.contains('*'), "wildcard in {rule:?}");
            }
        }
    }
}
