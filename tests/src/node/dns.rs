//! CoreDNS as the cluster's DNS: a Deployment on the real node behind the `kube-dns` Service,
//! answering for `cluster.local` from the API (no upstream: the namespace has no way out).

use serde_json::{Value, json};

use super::kubelet::{TAINT_KEY, TAINT_VALUE};
use super::network::{CLUSTER_DOMAIN, DNS_SERVICE_IP};

/// The objects that run CoreDNS from `image`.
pub fn objects(image: &str) -> Vec<Value> {
    let labels = json!({"k8s-app": "kube-dns"});
    let corefile = format!(
        ".:53 {{\n    errors\n    health :8080\n    ready :8181\n    kubernetes {CLUSTER_DOMAIN} in-addr.arpa ip6.arpa {{\n        pods insecure\n        fallthrough in-addr.arpa ip6.arpa\n    }}\n    cache 30\n    reload 2s\n    loadbalance\n}}\n"
    );
    vec![
        json!({"apiVersion": "v1", "kind": "ServiceAccount",
               "metadata": {"name": "coredns", "namespace": "kube-system"}}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": "e2e:coredns"},
        "rules": [
            {"apiGroups": [""], "resources": ["endpoints", "services", "pods", "namespaces"], "verbs": ["list", "watch"]},
            {"apiGroups": ["discovery.k8s.io"], "resources": ["endpointslices"], "verbs": ["list", "watch"]},
        ]}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
               "metadata": {"name": "e2e:coredns"},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "e2e:coredns"},
               "subjects": [{"kind": "ServiceAccount", "name": "coredns", "namespace": "kube-system"}]}),
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": "coredns", "namespace": "kube-system"},
               "data": {"Corefile": corefile}}),
        json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "coredns", "namespace": "kube-system", "labels": labels},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "serviceAccountName": "coredns",
                    // It is the cluster's DNS: it cannot ask itself.
                    "dnsPolicy": "Default",
                    "nodeSelector": {TAINT_KEY: TAINT_VALUE},
                    "tolerations": [{"key": TAINT_KEY, "operator": "Equal", "value": TAINT_VALUE, "effect": "NoSchedule"}],
                    "securityContext": {
                        "runAsNonRoot": true, "runAsUser": 65532, "runAsGroup": 65532,
                        // Port 53 without root or a capability: a namespaced, safe sysctl.
                        "sysctls": [{"name": "net.ipv4.ip_unprivileged_port_start", "value": "53"}],
                        "seccompProfile": {"type": "RuntimeDefault"},
                    },
                    "containers": [{
                        "name": "coredns",
                        "image": image,
                        "args": ["-conf", "/etc/coredns/Corefile"],
                        "ports": [
                            {"name": "dns", "containerPort": 53, "protocol": "UDP"},
                            {"name": "dns-tcp", "containerPort": 53, "protocol": "TCP"},
                        ],
                        "readinessProbe": {"httpGet": {"path": "/ready", "port": 8181}, "periodSeconds": 2},
                        "livenessProbe": {"httpGet": {"path": "/health", "port": 8080}, "periodSeconds": 10},
                        "resources": {"requests": {"cpu": "50m", "memory": "32Mi"}, "limits": {"memory": "128Mi"}},
                        "securityContext": {"allowPrivilegeEscalation": false, "readOnlyRootFilesystem": true, "capabilities": {"drop": ["ALL"]}},
                        "volumeMounts": [{"name": "config", "mountPath": "/etc/coredns", "readOnly": true}],
                    }],
                    "volumes": [{"name": "config", "configMap": {"name": "coredns"}}],
                },
            },
        }}),
        json!({"apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "kube-dns", "namespace": "kube-system", "labels": labels},
        "spec": {
            "selector": labels,
            "clusterIP": DNS_SERVICE_IP.to_string(),
            "ports": [
                {"name": "dns", "port": 53, "targetPort": 53, "protocol": "UDP"},
                {"name": "dns-tcp", "port": 53, "targetPort": 53, "protocol": "TCP"},
            ],
        }}),
    ]
}
