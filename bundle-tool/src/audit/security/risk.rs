//! The risk scale and the catalogue of security rules: every finding names one of [`RULES`]
//! by its stable id, so reports, `--max-risk` messages and docs/security-review.md agree.

use std::fmt;
use std::str::FromStr;

use serde::Serialize;

/// How much a finding widens what a compromised or buggy operator could do to the cluster.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Risk {
    /// Hardening left undone; exploiting it needs another flaw first.
    Low,
    /// Reach beyond the operator's own objects, or a weaker sandbox.
    Medium,
    /// Reads what others own (secrets, exec), or touches the node.
    High,
    /// Equivalent to cluster-admin or root on the node.
    Critical,
}

impl Risk {
    /// Every level, lowest first (the order of report columns and summary keys).
    pub const ALL: [Risk; 4] = [Risk::Low, Risk::Medium, Risk::High, Risk::Critical];

    /// The lowercase name used on the command line and in every report.
    pub fn name(self) -> &'static str {
        match self {
            Risk::Low => "low",
            Risk::Medium => "medium",
            Risk::High => "high",
            Risk::Critical => "critical",
        }
    }
}

impl fmt::Display for Risk {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A `--max-risk` value that is not one of the four levels.
#[derive(Debug, thiserror::Error)]
#[error("{0:?} is not a risk level: use low, medium, high or critical")]
pub struct UnknownRisk(String);

impl FromStr for Risk {
    type Err = UnknownRisk;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Risk::ALL
            .into_iter()
            .find(|r| r.name().eq_ignore_ascii_case(text))
            .ok_or_else(|| UnknownRisk(text.to_string()))
    }
}

/// One rule of the review: what it looks for and what to do about it.
#[derive(Debug)]
pub struct Rule {
    /// Stable kebab-case id, documented in docs/security-review.md.
    pub id: &'static str,
    /// What the rule flags, in a few words.
    pub title: &'static str,
    /// The one-line fix shown with each finding.
    pub hint: &'static str,
}

macro_rules! rules {
    ($($name:ident = $id:literal, $title:literal, $hint:literal;)*) => {
        $(
            #[doc = concat!("`", $id, "`: ", $title, ".")]
            pub const $name: &Rule = &Rule { id: $id, title: $title, hint: $hint };
        )*
        /// Every rule, in the order reports list them when risks tie.
        pub const RULES: &[&Rule] = &[$($name),*];
    };
}

rules! {
    RBAC_WILDCARD_ALL = "rbac-wildcard-all",
        "any verb or any resource on every API group",
        "list the API groups, resources and verbs the operator uses";
    RBAC_WILDCARD = "rbac-wildcard",
        "a `*` in the verbs, resources or API groups of a rule",
        "replace `*` with the verbs and resources the operator calls";
    RBAC_ESCALATE = "rbac-escalate",
        "the escalate verb on roles: may grant rights it does not hold",
        "drop escalate; create roles only with rights the operator holds";
    RBAC_BIND = "rbac-bind",
        "the bind verb on roles: may bind roles it does not hold",
        "drop bind, or limit it with resourceNames to the roles it binds";
    RBAC_IMPERSONATE = "rbac-impersonate",
        "the impersonate verb: may act as any user, group or service account",
        "drop impersonate; use the operator's own service account";
    RBAC_SECRETS_READ = "rbac-secrets-read",
        "get, list or watch on secrets without resourceNames",
        "read secrets only in the namespaces of the operands, or by resourceNames";
    RBAC_PODS_EXEC = "rbac-pods-exec",
        "exec or attach into pods",
        "drop pods/exec and pods/attach; talk to operands over their APIs";
    RBAC_NODES_PROXY = "rbac-nodes-proxy",
        "nodes/proxy: the kubelet API, including exec into any pod of a node",
        "drop nodes/proxy; read node metrics through metrics.k8s.io";
    RBAC_RBAC_WRITE = "rbac-rbac-write",
        "create, update or patch roles, cluster roles or their bindings",
        "ship the roles in the bundle instead of creating them at run time";
    RBAC_WEBHOOK_WRITE = "rbac-webhook-write",
        "create, update or patch admission webhook configurations",
        "declare webhooks in the CSV's webhookdefinitions so OLM manages them";
    RBAC_CRD_WRITE = "rbac-crd-write",
        "create, update, patch or delete CustomResourceDefinitions",
        "ship CRDs in the bundle; OLM installs and upgrades them";
    CONTAINER_PRIVILEGED = "container-privileged",
        "a privileged container: root on the node",
        "remove privileged; add only the capabilities it needs";
    POD_HOST_NETWORK = "pod-host-network",
        "hostNetwork: the node's network namespace",
        "remove hostNetwork; expose ports through a Service";
    POD_HOST_PID = "pod-host-pid",
        "hostPID: sees and signals every process of the node",
        "remove hostPID";
    POD_HOST_IPC = "pod-host-ipc",
        "hostIPC: the node's shared memory and semaphores",
        "remove hostIPC";
    POD_HOST_PATH = "pod-host-path",
        "a hostPath volume: files of the node",
        "use a ConfigMap, Secret, emptyDir or PersistentVolumeClaim instead";
    CONTAINER_CAPABILITY_ADDED = "container-capability-added",
        "a Linux capability added to a container",
        "drop the capability unless the operator cannot work without it";
    CONTAINER_CAPABILITIES_NOT_DROPPED = "container-capabilities-not-dropped",
        "capabilities.drop does not include ALL",
        "set securityContext.capabilities.drop: [ALL]";
    CONTAINER_PRIVILEGE_ESCALATION = "container-privilege-escalation",
        "allowPrivilegeEscalation is not false: setuid binaries may gain rights",
        "set securityContext.allowPrivilegeEscalation: false";
    CONTAINER_MAY_RUN_AS_ROOT = "container-may-run-as-root",
        "nothing keeps the container from running as root",
        "set runAsNonRoot: true (and a non-zero runAsUser) on the pod or container";
    CONTAINER_WRITABLE_ROOT_FS = "container-writable-root-fs",
        "readOnlyRootFilesystem is not true",
        "set readOnlyRootFilesystem: true and mount an emptyDir where it writes";
    CONTAINER_NO_SECCOMP = "container-no-seccomp",
        "no RuntimeDefault or Localhost seccomp profile",
        "set securityContext.seccompProfile.type: RuntimeDefault on the pod";
    CONTAINER_NO_RESOURCE_LIMITS = "container-no-resource-limits",
        "no memory limit: a leak takes memory from the node",
        "set resources.limits.memory (a CPU limit is optional)";
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn risk_names_parse_back_and_order_by_severity() {
        for risk in Risk::ALL {
            assert_eq!(risk.name().parse::<Risk>().ok(), Some(risk));
        }
        assert_eq!("HIGH".parse::<Risk>().ok(), Some(Risk::High));
        assert!("severe".parse::<Risk>().is_err());
        assert!(Risk::Low < Risk::Medium && Risk::High < Risk::Critical);
    }

    #[test]
    fn rule_ids_are_unique_kebab_case() {
        let mut ids: Vec<&str> = RULES.iter().map(|r| r.id).collect();
        for id in &ids {
            assert!(
                id.chars().all(|c| c.is_ascii_lowercase() || c == '-'),
                "{id}"
            );
        }
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), RULES.len());
    }
}
