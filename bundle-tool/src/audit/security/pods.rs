//! How the operator's pods are sandboxed: the pod template of every install deployment
//! (`spec.install.spec.deployments[].spec.template.spec`) and each of its containers and
//! init containers. A container's `securityContext` overrides the pod's for the fields both
//! have (`runAsNonRoot`, `runAsUser`, `seccompProfile`), as the kubelet applies them.

use serde_json::Value;

use super::Finding;
use super::risk::{self, Risk};

/// The field's value as evidence: `path = value`, or `path unset`.
fn field(path: &str, value: &Value) -> String {
    if value.is_null() {
        format!("{path} unset")
    } else {
        format!("{path} = {value}")
    }
}

/// Capabilities that amount to root on the node, or close to it.
const CRITICAL_CAPABILITIES: &[&str] = &["ALL", "SYS_ADMIN"];
/// Capabilities that reach other processes, the network stack or the kernel.
const HIGH_CAPABILITIES: &[&str] = &[
    "NET_ADMIN",
    "SYS_PTRACE",
    "SYS_MODULE",
    "SYS_RAWIO",
    "DAC_READ_SEARCH",
    "BPF",
    "PERFMON",
    "SYS_BOOT",
];

fn capability_risk(name: &str) -> Risk {
    let name = name.to_ascii_uppercase();
    let name = name.strip_prefix("CAP_").unwrap_or(&name);
    if CRITICAL_CAPABILITIES.contains(&name) {
        Risk::Critical
    } else if HIGH_CAPABILITIES.contains(&name) {
        Risk::High
    } else if name == "NET_BIND_SERVICE" {
        // Binding a port below 1024 is all it allows; the restricted Pod Security level permits it.
        Risk::Low
    } else {
        Risk::Medium
    }
}

/// The pod-level findings: host namespaces and hostPath volumes.
fn pod_findings(pod: &Value, subject: &str, base: &str) -> Vec<Finding> {
    let mut out = Vec::new();
    for (key, rule) in [
        ("hostNetwork", risk::POD_HOST_NETWORK),
        ("hostPID", risk::POD_HOST_PID),
        ("hostIPC", risk::POD_HOST_IPC),
    ] {
        if pod[key] == Value::Bool(true) {
            let path = format!("{base}.{key}");
            out.push(Finding::new(
                rule,
                Risk::High,
                subject,
                field(&path, &pod[key]),
            ));
        }
    }
    for (i, volume) in pod["volumes"].as_array().into_iter().flatten().enumerate() {
        if volume["hostPath"].is_object() {
            let path = format!("{base}.volumes[{i}].hostPath.path");
            out.push(Finding::new(
                risk::POD_HOST_PATH,
                Risk::High,
                subject,
                field(&path, &volume["hostPath"]["path"]),
            ));
        }
    }
    out
}

/// The findings of one container, with the pod's security context as its defaults.
fn container_findings(
    container: &Value,
    pod: &Value,
    subject: &str,
    pod_base: &str,
    base: &str,
) -> Vec<Finding> {
    let mut out = Vec::new();
    let context = &container["securityContext"];
    let at = |key: &str| format!("{base}.securityContext.{key}");
    let mut flag =
        |rule, risk, evidence: String| out.push(Finding::new(rule, risk, subject, evidence));

    if context["privileged"] == Value::Bool(true) {
        flag(
            risk::CONTAINER_PRIVILEGED,
            Risk::Critical,
            field(&at("privileged"), &context["privileged"]),
        );
    }
    let added = &context["capabilities"]["add"];
    for (i, capability) in added.as_array().into_iter().flatten().enumerate() {
        let name = capability.as_str().unwrap_or_default();
        let path = format!("{}[{i}]", at("capabilities.add"));
        flag(
            risk::CONTAINER_CAPABILITY_ADDED,
            capability_risk(name),
            field(&path, capability),
        );
    }
    let dropped = &context["capabilities"]["drop"];
    let drops_all = dropped.as_array().is_some_and(|d| {
        d.iter()
            .any(|c| c.as_str().is_some_and(|c| c.eq_ignore_ascii_case("ALL")))
    });
    if !drops_all {
        flag(
            risk::CONTAINER_CAPABILITIES_NOT_DROPPED,
            Risk::Low,
            field(&at("capabilities.drop"), dropped),
        );
    }
    match &context["allowPrivilegeEscalation"] {
        Value::Bool(false) => {}
        Value::Bool(true) => flag(
            risk::CONTAINER_PRIVILEGE_ESCALATION,
            Risk::Medium,
            field(&at("allowPrivilegeEscalation"), &Value::Bool(true)),
        ),
        other => flag(
            risk::CONTAINER_PRIVILEGE_ESCALATION,
            Risk::Low,
            field(&at("allowPrivilegeEscalation"), other),
        ),
    }

    // The container's setting wins; else the pod's (the path names where the value is).
    let effective = |key: &str| -> (String, &Value) {
        if !context[key].is_null() {
            (at(key), &context[key])
        } else {
            (
                format!("{pod_base}.securityContext.{key}"),
                &pod["securityContext"][key],
            )
        }
    };
    let (user_path, user) = effective("runAsUser");
    let (non_root_path, non_root) = effective("runAsNonRoot");
    if user.as_i64() == Some(0) {
        flag(
            risk::CONTAINER_MAY_RUN_AS_ROOT,
            Risk::High,
            field(&user_path, user),
        );
    } else if *non_root != Value::Bool(true) && user.as_i64().is_none() {
        // A non-zero runAsUser is enough on its own: the kubelet starts the process as that user.
        flag(
            risk::CONTAINER_MAY_RUN_AS_ROOT,
            Risk::Medium,
            field(&non_root_path, non_root),
        );
    }
    if context["readOnlyRootFilesystem"] != Value::Bool(true) {
        flag(
            risk::CONTAINER_WRITABLE_ROOT_FS,
            Risk::Low,
            field(
                &at("readOnlyRootFilesystem"),
                &context["readOnlyRootFilesystem"],
            ),
        );
    }
    let (seccomp_path, seccomp) = effective("seccompProfile");
    match seccomp["type"].as_str() {
        Some("RuntimeDefault" | "Localhost") => {}
        Some(_) => flag(
            risk::CONTAINER_NO_SECCOMP,
            Risk::Medium,
            field(&format!("{seccomp_path}.type"), &seccomp["type"]),
        ),
        None => flag(
            risk::CONTAINER_NO_SECCOMP,
            Risk::Low,
            field(&format!("{seccomp_path}.type"), &Value::Null),
        ),
    }
    let limits = &container["resources"]["limits"];
    if limits["memory"].is_null() {
        let risk = if limits.as_object().is_some_and(|l| !l.is_empty()) {
            Risk::Low
        } else {
            Risk::Medium
        };
        flag(
            risk::CONTAINER_NO_RESOURCE_LIMITS,
            risk,
            field(&format!("{base}.resources.limits"), limits),
        );
    }
    out
}

/// Every pod and container finding of the CSV's install deployments.
pub fn review(deployments: &[Value]) -> Vec<Finding> {
    let mut out = Vec::new();
    for deployment in deployments {
        let name = deployment["name"].as_str().unwrap_or("(unnamed)");
        let pod = &deployment["spec"]["template"]["spec"];
        let base = "spec.template.spec";
        out.extend(pod_findings(pod, &format!("Deployment {name}"), base));
        for key in ["initContainers", "containers"] {
            for (i, container) in pod[key].as_array().into_iter().flatten().enumerate() {
                let container_name = container["name"].as_str().unwrap_or("(unnamed)");
                let subject = format!("Deployment {name}, container {container_name}");
                let path = format!("{base}.{key}[{i}]");
                out.extend(container_findings(container, pod, &subject, base, &path));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// A container hardened the way the restricted Pod Security level asks, in a pod that
    /// sets nothing else.
    fn hardened() -> Value {
        json!({
            "name": "op",
            "spec": {"template": {"spec": {
                "securityContext": {"runAsNonRoot": true, "seccompProfile": {"type": "RuntimeDefault"}},
                "containers": [{
                    "name": "manager",
                    "resources": {"limits": {"memory": "128Mi"}},
                    "securityContext": {
                        "allowPrivilegeEscalation": false,
                        "capabilities": {"drop": ["ALL"]},
                        "readOnlyRootFilesystem": true
                    }
                }]
            }}}
        })
    }

    fn rules(deployment: &Value) -> Vec<(&'static str, Risk)> {
        review(std::slice::from_ref(deployment))
            .into_iter()
            .map(|f| (f.rule, f.risk))
            .collect()
    }

    fn pod(deployment: &mut Value) -> &mut Value {
        &mut deployment["spec"]["template"]["spec"]
    }

    fn container(deployment: &mut Value) -> &mut Value {
        &mut pod(deployment)["containers"][0]
    }

    #[test]
    fn a_hardened_pod_has_no_findings() {
        assert_eq!(rules(&hardened()), vec![]);
    }

    #[test]
    fn an_empty_security_context_misses_every_hardening() {
        let bare = json!({"name": "op", "spec": {"template": {"spec": {"containers": [{"name": "manager"}]}}}});
        assert_eq!(
            rules(&bare),
            vec![
                ("container-capabilities-not-dropped", Risk::Low),
                ("container-privilege-escalation", Risk::Low),
                ("container-may-run-as-root", Risk::Medium),
                ("container-writable-root-fs", Risk::Low),
                ("container-no-seccomp", Risk::Low),
                ("container-no-resource-limits", Risk::Medium),
            ]
        );
    }

    #[test]
    fn privileged_and_host_namespaces_are_flagged_with_their_field() {
        let mut d = hardened();
        container(&mut d)["securityContext"]["privileged"] = json!(true);
        pod(&mut d)["hostPID"] = json!(true);
        pod(&mut d)["hostNetwork"] = json!(true);
        pod(&mut d)["volumes"] = json!([{"name": "cfg", "configMap": {"name": "c"}}, {"name": "sock", "hostPath": {"path": "/var/run"}}]);
        let found = review(std::slice::from_ref(&d));
        let evidence: Vec<(&str, Risk, &str)> = found
            .iter()
            .map(|f| (f.rule, f.risk, f.evidence.as_str()))
            .collect();
        assert_eq!(
            evidence,
            vec![
                (
                    "pod-host-network",
                    Risk::High,
                    "spec.template.spec.hostNetwork = true"
                ),
                (
                    "pod-host-pid",
                    Risk::High,
                    "spec.template.spec.hostPID = true"
                ),
                (
                    "pod-host-path",
                    Risk::High,
                    "spec.template.spec.volumes[1].hostPath.path = \"/var/run\""
                ),
                (
                    "container-privileged",
                    Risk::Critical,
                    "spec.template.spec.containers[0].securityContext.privileged = true"
                ),
            ]
        );
        assert_eq!(found[3].subject, "Deployment op, container manager");
    }

    #[test]
    fn added_capabilities_are_graded_by_what_they_allow() {
        let mut d = hardened();
        container(&mut d)["securityContext"]["capabilities"]["add"] =
            json!(["CAP_SYS_ADMIN", "NET_ADMIN", "CHOWN", "NET_BIND_SERVICE"]);
        assert_eq!(
            rules(&d),
            vec![
                ("container-capability-added", Risk::Critical),
                ("container-capability-added", Risk::High),
                ("container-capability-added", Risk::Medium),
                ("container-capability-added", Risk::Low),
            ]
        );
    }

    #[test]
    fn the_container_context_overrides_the_pod_context() {
        let mut d = hardened();
        container(&mut d)["securityContext"]["runAsUser"] = json!(0);
        container(&mut d)["securityContext"]["seccompProfile"] = json!({"type": "Unconfined"});
        let found = review(std::slice::from_ref(&d));
        let evidence: Vec<(&str, Risk, &str)> = found
            .iter()
            .map(|f| (f.rule, f.risk, f.evidence.as_str()))
            .collect();
        assert_eq!(
            evidence,
            vec![
                (
                    "container-may-run-as-root",
                    Risk::High,
                    "spec.template.spec.containers[0].securityContext.runAsUser = 0"
                ),
                (
                    "container-no-seccomp",
                    Risk::Medium,
                    "spec.template.spec.containers[0].securityContext.seccompProfile.type = \"Unconfined\""
                ),
            ]
        );
    }

    #[test]
    fn a_non_root_user_id_is_enough_without_run_as_non_root() {
        let mut d = hardened();
        pod(&mut d)["securityContext"]["runAsNonRoot"] = Value::Null;
        assert_eq!(rules(&d), vec![("container-may-run-as-root", Risk::Medium)]);
        pod(&mut d)["securityContext"]["runAsUser"] = json!(65532);
        assert_eq!(rules(&d), vec![]);
    }

    #[test]
    fn limits_and_escalation_are_graded_by_what_is_set() {
        let mut d = hardened();
        container(&mut d)["resources"] = json!({"limits": {"cpu": "1"}});
        container(&mut d)["securityContext"]["allowPrivilegeEscalation"] = json!(true);
        assert_eq!(
            rules(&d),
            vec![
                ("container-privilege-escalation", Risk::Medium),
                ("container-no-resource-limits", Risk::Low),
            ]
        );
    }

    #[test]
    fn init_containers_are_reviewed_too() {
        let mut d = hardened();
        pod(&mut d)["initContainers"] =
            json!([{"name": "setup", "securityContext": {"privileged": true}}]);
        let found = review(std::slice::from_ref(&d));
        assert!(found.iter().any(|f| {
            f.rule == "container-privileged"
                && f.subject == "Deployment op, container setup"
                && f.evidence
                    .starts_with("spec.template.spec.initContainers[0]")
        }));
    }
}
