//! Why an install does not progress, read from the objects on the cluster: a pure function
//! over what [`super::cluster`] read (so it is tested with recorded objects), naming the
//! object, the reason the cluster gives, and what to look at next.

use serde_json::Value;

/// What `run` waits for, in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// The catalog server pod Ready.
    ServerReady,
    /// The CatalogSource connected (`READY`).
    CatalogReady,
    /// The Subscription resolved into an InstallPlan.
    Resolved,
    /// The InstallPlan Complete.
    Installed,
    /// The CSV Succeeded.
    Succeeded,
    /// OLM v1: the ClusterCatalog serving.
    CatalogServing,
    /// OLM v1: the ClusterExtension installed.
    ExtensionInstalled,
}

impl std::fmt::Display for Stage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Stage::ServerReady => "the catalog server pod to be Ready",
            Stage::CatalogReady => "the CatalogSource to be READY",
            Stage::Resolved => "the Subscription to resolve",
            Stage::Installed => "the InstallPlan to complete",
            Stage::Succeeded => "the ClusterServiceVersion to succeed",
            Stage::CatalogServing => "the ClusterCatalog to be Serving",
            Stage::ExtensionInstalled => "the ClusterExtension to be Installed",
        })
    }
}

/// What was read from the cluster while waiting (each absent when not made yet).
#[derive(Clone, Debug, Default)]
pub struct Observed {
    /// The catalog server pod.
    pub server_pod: Option<Value>,
    /// The CatalogSource.
    pub catalog_source: Option<Value>,
    /// The Subscription.
    pub subscription: Option<Value>,
    /// The InstallPlan for the bundle.
    pub install_plan: Option<Value>,
    /// The CSV being installed.
    pub csv: Option<Value>,
    /// The pods of the CSV's Deployments.
    pub operator_pods: Vec<Value>,
    /// The last lines of a failing container's log, by `pod/container`.
    pub logs: Vec<(String, String)>,
    /// OLM v1's ClusterCatalog.
    pub cluster_catalog: Option<Value>,
    /// OLM v1's ClusterExtension.
    pub cluster_extension: Option<Value>,
}

/// A named reason for not progressing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stuck {
    /// `Kind namespace/name`.
    pub object: String,
    /// What the cluster says.
    pub reason: String,
    /// What to look at next.
    pub next: String,
    /// Whether waiting longer cannot help (a failed plan or CSV, a crashing or unpullable
    /// container): the command stops at once.
    pub terminal: bool,
}

impl std::fmt::Display for Stuck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.object, self.reason)?;
        if !self.next.is_empty() {
            write!(f, "\n  next: {}", self.next)?;
        }
        Ok(())
    }
}

fn name_of(kind: &str, object: &Value) -> String {
    if object["metadata"]["namespace"].is_null() {
        return format!("{kind} {}", text(&object["metadata"]["name"]));
    }
    format!(
        "{kind} {}/{}",
        object["metadata"]["namespace"].as_str().unwrap_or_default(),
        object["metadata"]["name"].as_str().unwrap_or_default()
    )
}

fn condition<'a>(object: &'a Value, kind: &str) -> Option<&'a Value> {
    object["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == kind)
}

fn text(value: &Value) -> &str {
    value.as_str().unwrap_or_default()
}

/// Why a pod's containers do not run: an image that cannot be pulled, a container that
/// keeps exiting (its exit code and last log lines), or a pod that cannot be scheduled.
pub fn pod_problem(pod: &Value, logs: &[(String, String)]) -> Option<Stuck> {
    let object = name_of("Pod", pod);
    let pod_name = text(&pod["metadata"]["name"]);
    let namespace = text(&pod["metadata"]["namespace"]);
    let statuses = pod["status"]["initContainerStatuses"]
        .as_array()
        .into_iter()
        .flatten()
        .chain(
            pod["status"]["containerStatuses"]
                .as_array()
                .into_iter()
                .flatten(),
        );
    for status in statuses {
        let container = text(&status["name"]);
        let waiting = &status["state"]["waiting"];
        let reason = text(&waiting["reason"]);
        let message = text(&waiting["message"]);
        match reason {
            "ErrImagePull" | "ImagePullBackOff" | "InvalidImageName" | "ErrImageNeverPull" => {
                return Some(Stuck {
                    object,
                    reason: format!(
                        "container {container} cannot pull its image {}: {reason}{}",
                        text(&status["image"]),
                        if message.is_empty() {
                            String::new()
                        } else {
                            format!(": {message}")
                        }
                    ),
                    next: format!(
                        "check that the image exists and that the node can reach and authenticate to its registry (kubectl describe pod -n {namespace} {pod_name})"
                    ),
                    terminal: true,
                });
            }
            "CrashLoopBackOff"
            | "RunContainerError"
            | "CreateContainerError"
            | "CreateContainerConfigError" => {
                let terminated = &status["lastState"]["terminated"];
                let exit = terminated["exitCode"]
                    .as_i64()
                    .map(|code| format!(", exit code {code}"))
                    .unwrap_or_default();
                let why = text(&terminated["reason"]);
                let key = format!("{pod_name}/{container}");
                let log = logs
                    .iter()
                    .find(|(k, _)| *k == key)
                    .map(|(_, log)| log.trim_end())
                    .filter(|log| !log.is_empty())
                    .map(|log| {
                        let lines: Vec<&str> = log.lines().collect();
                        let tail = &lines[lines.len().saturating_sub(10)..];
                        format!(
                            "\n  last log lines of {container}:\n    {}",
                            tail.join("\n    ")
                        )
                    })
                    .unwrap_or_default();
                return Some(Stuck {
                    object,
                    reason: format!(
                        "container {container} is in {reason} (restarted {} times{exit}{}){}{log}",
                        status["restartCount"].as_i64().unwrap_or(0),
                        if why.is_empty() {
                            String::new()
                        } else {
                            format!(", {why}")
                        },
                        if message.is_empty() {
                            String::new()
                        } else {
                            format!(": {message}")
                        }
                    ),
                    next: format!(
                        "kubectl logs -n {namespace} {pod_name} -c {container} --previous"
                    ),
                    // A first crash may be a dependency not up yet; a third is the operator.
                    terminal: reason != "CrashLoopBackOff"
                        || status["restartCount"].as_i64().unwrap_or(0) >= 2,
                });
            }
            _ => {}
        }
    }
    if let Some(scheduled) = condition(pod, "PodScheduled")
        && scheduled["status"] == "False"
    {
        return Some(Stuck {
            object,
            reason: format!(
                "not scheduled: {}: {}",
                text(&scheduled["reason"]),
                text(&scheduled["message"])
            ),
            next: "check the nodes' capacity, taints and the namespace's node selector".into(),
            terminal: false,
        });
    }
    None
}

/// The reason `stage` does not progress, from what was read; `None` when nothing is wrong
/// yet (it is only slow).
pub fn diagnose(stage: Stage, observed: &Observed) -> Option<Stuck> {
    match stage {
        Stage::ServerReady => observed
            .server_pod
            .as_ref()
            .and_then(|pod| pod_problem(pod, &observed.logs)),
        Stage::CatalogReady => {
            let source = observed.catalog_source.as_ref()?;
            let state = &source["status"]["connectionState"];
            let last = text(&state["lastObservedState"]);
            Some(Stuck {
                object: name_of("CatalogSource", source),
                reason: if last.is_empty() {
                    "catalog-operator has not connected to it yet (no status.connectionState)"
                        .into()
                } else {
                    format!(
                        "not READY: its connection is {last} (address {})",
                        text(&state["address"])
                    )
                },
                next: "check that catalog-operator runs and can reach the catalog server's Service (kubectl logs -n <olm namespace> deployment/catalog-operator)".into(),
                terminal: false,
            })
        }
        Stage::Resolved => {
            let subscription = observed.subscription.as_ref()?;
            let object = name_of("Subscription", subscription);
            for kind in ["ResolutionFailed", "CatalogSourcesUnhealthy"] {
                if let Some(c) = condition(subscription, kind)
                    && c["status"] == "True"
                {
                    return Some(Stuck {
                        object,
                        reason: format!("{kind}: {}", text(&c["message"])),
                        next: "the message is OLM's resolver's: check the bundle's dependencies, the namespace's OperatorGroup and other Subscriptions in it".into(),
                        terminal: false,
                    });
                }
            }
            Some(Stuck {
                object,
                reason: format!(
                    "no InstallPlan yet (state {})",
                    match text(&subscription["status"]["state"]) {
                        "" => "unknown",
                        state => state,
                    }
                ),
                next: "kubectl get subscription -o yaml; catalog-operator's log".into(),
                terminal: false,
            })
        }
        Stage::Installed => {
            let plan = observed.install_plan.as_ref()?;
            let phase = text(&plan["status"]["phase"]);
            let object = name_of("InstallPlan", plan);
            if phase == "Failed" {
                let message = condition(plan, "Installed")
                    .map(|c| format!("{}: {}", text(&c["reason"]), text(&c["message"])))
                    .or_else(|| plan["status"]["message"].as_str().map(str::to_string))
                    .unwrap_or_else(|| "no message".into());
                return Some(Stuck {
                    object,
                    reason: format!("Failed: {message}"),
                    next: "the plan's steps show which object OLM could not create (kubectl get installplan -o yaml)".into(),
                    terminal: true,
                });
            }
            Some(Stuck {
                object,
                reason: format!("phase {}", if phase.is_empty() { "unknown" } else { phase }),
                next: "catalog-operator's log".into(),
                terminal: false,
            })
        }
        Stage::Succeeded => {
            for pod in &observed.operator_pods {
                if let Some(stuck) = pod_problem(pod, &observed.logs) {
                    return Some(stuck);
                }
            }
            let csv = observed.csv.as_ref()?;
            let phase = text(&csv["status"]["phase"]);
            let reason = text(&csv["status"]["reason"]);
            let message = text(&csv["status"]["message"]);
            Some(Stuck {
                object: name_of("ClusterServiceVersion", csv),
                reason: format!(
                    "phase {}{}{}",
                    if phase.is_empty() { "unknown" } else { phase },
                    if reason.is_empty() {
                        String::new()
                    } else {
                        format!(" ({reason})")
                    },
                    if message.is_empty() {
                        String::new()
                    } else {
                        format!(": {message}")
                    }
                ),
                next: "kubectl get csv -o yaml; the operator's Deployment and pods".into(),
                terminal: phase == "Failed",
            })
        }
        Stage::CatalogServing => {
            let catalog = observed.cluster_catalog.as_ref()?;
            let progressing = condition(catalog, "Progressing");
            Some(Stuck {
                object: name_of("ClusterCatalog", catalog),
                reason: match progressing {
                    Some(c) => format!(
                        "not Serving: Progressing {} ({}): {}",
                        text(&c["status"]),
                        text(&c["reason"]),
                        text(&c["message"])
                    ),
                    None => "catalogd has not reported on it yet".into(),
                },
                next: "catalogd must be able to pull the catalog image (its registries.conf, pull secrets); catalogd's log".into(),
                terminal: false,
            })
        }
        Stage::ExtensionInstalled => {
            let extension = observed.cluster_extension.as_ref()?;
            let progressing = condition(extension, "Progressing");
            let message = progressing.map(|c| text(&c["message"])).unwrap_or_default();
            Some(Stuck {
                object: name_of("ClusterExtension", extension),
                reason: match progressing {
                    Some(c) => format!("Progressing {}: {message}", text(&c["reason"])),
                    None => "operator-controller has not reported on it yet".into(),
                },
                next: if message.contains("pre-authorization failed") {
                    "the installer ServiceAccount lacks the rights listed: bundle-tool olm-v1 rbac derives them".into()
                } else {
                    "kubectl get clusterextension -o yaml; operator-controller's log".into()
                },
                // The permission preflight does not pass until someone grants the rights.
                terminal: message.contains("pre-authorization failed"),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(statuses: Value) -> Value {
        json!({
            "metadata": {"name": "op-1", "namespace": "ns"},
            "status": {"containerStatuses": statuses},
        })
    }

    #[test]
    fn an_image_that_cannot_be_pulled_is_named_with_the_kubelets_message() {
        let observed = Observed {
            server_pod: Some(pod(json!([{
                "name": "registry",
                "image": "example.com/cat@sha256:1",
                "restartCount": 0,
                "state": {"waiting": {"reason": "ImagePullBackOff", "message": "Back-off pulling image \"example.com/cat@sha256:1\": not found"}},
            }]))),
            ..Observed::default()
        };
        let stuck = diagnose(Stage::ServerReady, &observed).unwrap();
        assert_eq!(stuck.object, "Pod ns/op-1");
        assert!(stuck.reason.contains("cannot pull its image example.com/cat@sha256:1: ImagePullBackOff: Back-off pulling image"), "{}", stuck.reason);
        assert!(stuck.terminal);
    }

    #[test]
    fn a_crashing_operator_shows_its_exit_code_and_last_log_lines() {
        let observed = Observed {
            csv: Some(
                json!({"metadata": {"name": "op.v1", "namespace": "ns"}, "status": {"phase": "Installing"}}),
            ),
            operator_pods: vec![pod(json!([{
                "name": "manager",
                "restartCount": 3,
                "state": {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 40s restarting failed container"}},
                "lastState": {"terminated": {"exitCode": 1, "reason": "Error"}},
            }]))],
            logs: vec![(
                "op-1/manager".into(),
                "starting\nno config: giving up\n".into(),
            )],
            ..Observed::default()
        };
        let stuck = diagnose(Stage::Succeeded, &observed).unwrap();
        assert_eq!(stuck.object, "Pod ns/op-1");
        assert!(
            stuck
                .reason
                .contains("CrashLoopBackOff (restarted 3 times, exit code 1, Error)"),
            "{}",
            stuck.reason
        );
        assert!(
            stuck.reason.contains("no config: giving up"),
            "{}",
            stuck.reason
        );
        assert!(stuck.terminal);
        assert!(stuck.next.contains("--previous"));
    }

    #[test]
    fn a_first_crash_is_not_yet_terminal() {
        let crashing = pod(json!([{
            "name": "manager", "restartCount": 1,
            "state": {"waiting": {"reason": "CrashLoopBackOff"}},
            "lastState": {"terminated": {"exitCode": 1}},
        }]));
        assert!(!pod_problem(&crashing, &[]).unwrap().terminal);
    }

    #[test]
    fn resolution_failures_carry_olms_message() {
        let observed = Observed {
            subscription: Some(json!({
                "metadata": {"name": "op-run", "namespace": "ns"},
                "status": {"conditions": [
                    {"type": "CatalogSourcesUnhealthy", "status": "False"},
                    {"type": "ResolutionFailed", "status": "True", "reason": "ConstraintsNotSatisfiable",
                     "message": "no operators found in package op in the catalog referenced by subscription op-run"},
                ]},
            })),
            ..Observed::default()
        };
        let stuck = diagnose(Stage::Resolved, &observed).unwrap();
        assert_eq!(stuck.object, "Subscription ns/op-run");
        assert_eq!(
            stuck.reason,
            "ResolutionFailed: no operators found in package op in the catalog referenced by subscription op-run"
        );
        assert!(!stuck.terminal);
    }

    #[test]
    fn a_failed_plan_and_csv_stop_the_wait() {
        let plan = json!({
            "metadata": {"name": "install-abc", "namespace": "ns"},
            "status": {"phase": "Failed", "conditions": [{"type": "Installed", "status": "False", "reason": "InstallComponentFailed", "message": "error creating csv op.v1: forbidden"}]},
        });
        let stuck = diagnose(
            Stage::Installed,
            &Observed {
                install_plan: Some(plan),
                ..Observed::default()
            },
        )
        .unwrap();
        assert_eq!(
            stuck.reason,
            "Failed: InstallComponentFailed: error creating csv op.v1: forbidden"
        );
        assert!(stuck.terminal);
        let csv = json!({"metadata": {"name": "op.v1", "namespace": "ns"}, "status": {"phase": "Failed", "reason": "UnsupportedOperatorGroup", "message": "OwnNamespace InstallModeType not supported"}});
        let stuck = diagnose(
            Stage::Succeeded,
            &Observed {
                csv: Some(csv),
                ..Observed::default()
            },
        )
        .unwrap();
        assert_eq!(stuck.object, "ClusterServiceVersion ns/op.v1");
        assert_eq!(
            stuck.reason,
            "phase Failed (UnsupportedOperatorGroup): OwnNamespace InstallModeType not supported"
        );
        assert!(stuck.terminal);
    }

    #[test]
    fn nothing_read_is_no_diagnosis() {
        assert_eq!(diagnose(Stage::ServerReady, &Observed::default()), None);
        let fine = pod(json!([{"name": "registry", "state": {"running": {}}}]));
        assert_eq!(pod_problem(&fine, &[]), None);
    }

    #[test]
    fn olm_v1_names_the_missing_rights_and_stops() {
        let extension = json!({"metadata": {"name": "op-run"}, "status": {"conditions": [
            {"type": "Installed", "status": "False"},
            {"type": "Progressing", "status": "True", "reason": "Retrying", "message": "pre-authorization failed: service account requires the following permissions to manage cluster extension:\n Namespace:\"\" APIGroups:[apps] Resources:[deployments] Verbs:[create]"},
        ]}});
        let stuck = diagnose(
            Stage::ExtensionInstalled,
            &Observed {
                cluster_extension: Some(extension),
                ..Observed::default()
            },
        )
        .unwrap();
        assert_eq!(stuck.object, "ClusterExtension op-run");
        assert!(
            stuck
                .reason
                .starts_with("Progressing Retrying: pre-authorization failed"),
            "{}",
            stuck.reason
        );
        assert!(
            stuck
                .reason
                .contains("Resources:[deployments] Verbs:[create]")
        );
        assert!(stuck.terminal);
        let catalog = json!({"metadata": {"name": "c"}, "status": {"conditions": [{"type": "Progressing", "status": "True", "reason": "Retrying", "message": "error pulling image: 401"}]}});
        let stuck = diagnose(
            Stage::CatalogServing,
            &Observed {
                cluster_catalog: Some(catalog),
                ..Observed::default()
            },
        )
        .unwrap();
        assert_eq!(
            stuck.reason,
            "not Serving: Progressing True (Retrying): error pulling image: 401"
        );
    }

    #[test]
    fn a_catalog_source_not_ready_says_its_state() {
        let source = json!({"metadata": {"name": "c", "namespace": "ns"}, "status": {"connectionState": {"lastObservedState": "TRANSIENT_FAILURE", "address": "c.ns.svc:50051"}}});
        let stuck = diagnose(
            Stage::CatalogReady,
            &Observed {
                catalog_source: Some(source),
                ..Observed::default()
            },
        )
        .unwrap();
        assert_eq!(
            stuck.reason,
            "not READY: its connection is TRANSIENT_FAILURE (address c.ns.svc:50051)"
        );
    }
}
