//! The install modes an operator's own manifests allow, read from what it is granted and
//! what it reads, as OLM runs it:
//!
//! - A CRD converted by a webhook: `AllNamespaces` only (OLM installs such a bundle in no
//!   other mode; `generate` warns of any other).
//! - A ClusterRoleBinding to the operator's ServiceAccount: it may act in every namespace, so
//!   `AllNamespaces`.
//! - Only RoleBindings: it acts in its own namespace, so `OwnNamespace`.
//! - A `WATCH_NAMESPACE` variable: the operator watches what it is told, which OLM sets to
//!   the OperatorGroup's namespaces (`generate` points it at `olm.targetNamespaces`), so
//!   `OwnNamespace`, `SingleNamespace` and `MultiNamespace` as well (OLM copies a CSV's
//!   `permissions` into each target namespace).

use std::collections::BTreeMap;

use crate::manifest::{KubeObject, text};

/// The four modes in OLM's order, each supported or not, and why.
pub struct InstallModes {
    /// `{mode: supported}`, all four.
    pub modes: BTreeMap<String, bool>,
    /// One line per fact the choice rests on.
    pub reasons: Vec<String>,
}

/// OLM's install modes, in the CSV's order.
pub const MODES: [&str; 4] = [
    "OwnNamespace",
    "SingleNamespace",
    "MultiNamespace",
    "AllNamespaces",
];

/// The install modes `objects` allow for the operator run by `deployments`.
pub fn install_modes(objects: &[KubeObject], deployments: &[&KubeObject]) -> InstallModes {
    let accounts: Vec<&str> = deployments
        .iter()
        .map(|d| {
            let name = text(&d.document.value, "/spec/template/spec/serviceAccountName");
            if name.is_empty() { "default" } else { name }
        })
        .collect();
    let binds_operator = |kind: &str| {
        objects.iter().any(|o| {
            o.id.kind == kind
                && o.group() == "rbac.authorization.k8s.io"
                && o.document.value["subjects"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|s| {
                        text(s, "/kind") == "ServiceAccount" && accounts.contains(&text(s, "/name"))
                    })
        })
    };
    let cluster_wide = binds_operator("ClusterRoleBinding");
    let namespaced = binds_operator("RoleBinding");
    let watch_namespace = deployments.iter().any(|d| {
        let pod = &d.document.value["spec"]["template"]["spec"];
        ["containers", "initContainers"].iter().any(|list| {
            pod[*list].as_array().into_iter().flatten().any(|c| {
                c["env"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|e| e["name"] == "WATCH_NAMESPACE")
            })
        })
    });
    let conversion_webhook = objects.iter().any(|o| {
        o.id.kind == "CustomResourceDefinition"
            && text(&o.document.value, "/spec/conversion/strategy") == "Webhook"
    });

    let mut supported: BTreeMap<String, bool> =
        MODES.iter().map(|m| (m.to_string(), false)).collect();
    let mut reasons = Vec::new();
    let mut set = |mode: &str| {
        supported.insert(mode.to_string(), true);
    };
    if conversion_webhook {
        set("AllNamespaces");
        reasons.push(
            "a CRD is converted by a webhook: OLM installs such a bundle only in AllNamespaces"
                .to_string(),
        );
    } else {
        if cluster_wide {
            set("AllNamespaces");
            reasons.push(
                "a ClusterRoleBinding grants the operator's ServiceAccount cluster-wide access: AllNamespaces"
                    .to_string(),
            );
        } else if namespaced {
            set("OwnNamespace");
            reasons.push(
                "only RoleBindings grant the operator's ServiceAccount access: OwnNamespace"
                    .to_string(),
            );
        }
        if watch_namespace {
            set("OwnNamespace");
            set("SingleNamespace");
            set("MultiNamespace");
            reasons.push(
                "the operator reads WATCH_NAMESPACE, which OLM sets to the OperatorGroup's namespaces: OwnNamespace, SingleNamespace, MultiNamespace"
                    .to_string(),
            );
        }
        if !cluster_wide && !namespaced && !watch_namespace {
            set("AllNamespaces");
            reasons.push(
                "no RoleBinding or ClusterRoleBinding names the operator's ServiceAccount and it reads no WATCH_NAMESPACE: AllNamespaces, OLM's usual mode; check it"
                    .to_string(),
            );
        }
    }
    InstallModes {
        modes: supported,
        reasons,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::read_stream;
    use std::path::Path;

    fn modes(yaml: &str) -> Vec<String> {
        let objects: Vec<KubeObject> = read_stream(Path::new("m.yaml"), yaml)
            .unwrap()
            .into_iter()
            .map(|d| KubeObject::from_document(d).unwrap())
            .collect();
        let deployments: Vec<&KubeObject> = objects
            .iter()
            .filter(|o| o.id.kind == "Deployment")
            .collect();
        let found = install_modes(&objects, &deployments);
        MODES
            .iter()
            .filter(|m| found.modes[**m])
            .map(|m| m.to_string())
            .collect()
    }

    const DEPLOYMENT: &str = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: op}\nspec:\n  template:\n    spec:\n      serviceAccountName: op\n      containers: [{name: m, image: x}]\n";
    const WATCHING: &str = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: op}\nspec:\n  template:\n    spec:\n      serviceAccountName: op\n      containers: [{name: m, image: x, env: [{name: WATCH_NAMESPACE, value: ''}]}]\n";

    fn binding(kind: &str, account: &str) -> String {
        format!(
            "---\napiVersion: rbac.authorization.k8s.io/v1\nkind: {kind}\nmetadata: {{name: b}}\nroleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: r}}\nsubjects: [{{kind: ServiceAccount, name: {account}, namespace: ns}}]\n"
        )
    }

    #[test]
    fn the_rbac_scope_and_watch_namespace_decide() {
        let cluster = binding("ClusterRoleBinding", "op");
        let role = binding("RoleBinding", "op");
        assert_eq!(
            modes(&format!("{DEPLOYMENT}{cluster}{role}")),
            ["AllNamespaces"]
        );
        assert_eq!(modes(&format!("{DEPLOYMENT}{role}")), ["OwnNamespace"]);
        assert_eq!(
            modes(&format!("{WATCHING}{role}")),
            ["OwnNamespace", "SingleNamespace", "MultiNamespace"]
        );
        assert_eq!(
            modes(&format!("{WATCHING}{cluster}")),
            [
                "OwnNamespace",
                "SingleNamespace",
                "MultiNamespace",
                "AllNamespaces"
            ]
        );
        // A binding to another account says nothing of the operator.
        let other = binding("RoleBinding", "someone-else");
        assert_eq!(modes(&format!("{DEPLOYMENT}{other}")), ["AllNamespaces"]);
    }

    #[test]
    fn a_conversion_webhook_allows_all_namespaces_only() {
        let crd = "---\napiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: a.b}\nspec:\n  conversion: {strategy: Webhook}\n";
        let role = binding("RoleBinding", "op");
        assert_eq!(modes(&format!("{WATCHING}{role}{crd}")), ["AllNamespaces"]);
    }
}
