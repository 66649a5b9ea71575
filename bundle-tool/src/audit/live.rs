//! Live evidence (`--kubeconfig`): on a cluster where the operator is installed, read every
//! CR of the owned CRDs at each served version (conversion works), look for
//! `status.conditions` on them, and scrape the metrics Service through the apiserver's
//! service proxy. Whatever cannot be reached is reported unknown, with the reason.

use std::path::Path;

use anyhow::Context as _;
use serde_json::Value;

use super::evidence::{CapabilityEvidence, LiveEvidence, Verdict};

/// How long one request to the cluster may take.
const REQUEST_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(20);

/// A connection to the cluster, shared by the audit's threads.
pub struct LiveProbe {
    runtime: tokio::runtime::Runtime,
    client: kube::Client,
    namespace: Option<String>,
}

/// An owned CRD as installed: group, plural and served versions.
struct InstalledCrd {
    name: String,
    group: String,
    plural: String,
    served: Vec<String>,
    storage: String,
}

impl LiveProbe {
    /// Connects with `kubeconfig`; `namespace` is where the metrics Service lives (searched
    /// in every namespace when `None`).
    pub fn new(kubeconfig: &Path, namespace: Option<String>) -> anyhow::Result<LiveProbe> {
        let _ = rustls::crypto::ring::default_provider().install_default();
        // Several audit threads call `block_on` at once: a multi-thread runtime allows it.
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()?;
        let client = runtime.block_on(async {
            let config = kube::config::Kubeconfig::read_from(kubeconfig)
                .with_context(|| format!("reading {}", kubeconfig.display()))?;
            let config = kube::Config::from_custom_kubeconfig(
                config,
                &kube::config::KubeConfigOptions::default(),
            )
            .await
            .with_context(|| format!("{}: unusable kubeconfig", kubeconfig.display()))?;
            anyhow::Ok(kube::Client::try_from(config)?)
        })?;
        Ok(LiveProbe {
            runtime,
            client,
            namespace,
        })
    }

    /// Probes the cluster for one bundle's live criteria.
    pub fn probe(&self, evidence: &CapabilityEvidence) -> LiveEvidence {
        self.runtime.block_on(self.probe_async(evidence))
    }

    async fn get(&self, path: &str) -> Result<String, String> {
        let request = http::Request::get(path)
            .body(Vec::new())
            .map_err(|e| e.to_string())?;
        // The apiserver retries an unreachable service proxy target for minutes: bound it.
        match tokio::time::timeout(REQUEST_TIMEOUT, self.client.request_text(request)).await {
            Ok(result) => result.map_err(|e| format!("GET {path}: {e}")),
            Err(_) => Err(format!("GET {path}: no answer in {REQUEST_TIMEOUT:?}")),
        }
    }

    async fn get_json(&self, path: &str) -> Result<Value, String> {
        let text = self.get(path).await?;
        serde_json::from_str(&text).map_err(|e| format!("GET {path}: not JSON: {e}"))
    }

    async fn installed_crds(
        &self,
        evidence: &CapabilityEvidence,
    ) -> Result<Vec<InstalledCrd>, String> {
        let mut names: Vec<&str> = evidence
            .owned
            .iter()
            .filter_map(|o| o["name"].as_str())
            .collect();
        names.sort();
        names.dedup();
        if names.is_empty() {
            return Err("the CSV owns no CRD".into());
        }
        let mut crds = Vec::new();
        for name in names {
            let crd = self
                .get_json(&format!(
                    "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}"
                ))
                .await
                .map_err(|e| format!("owned CRD {name} is not installed ({e})"))?;
            let versions = crd["spec"]["versions"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            crds.push(InstalledCrd {
                name: name.to_string(),
                group: crd["spec"]["group"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
                plural: crd["spec"]["names"]["plural"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
                served: versions
                    .iter()
                    .filter(|v| v["served"].as_bool() == Some(true))
                    .filter_map(|v| v["name"].as_str().map(str::to_string))
                    .collect(),
                storage: versions
                    .iter()
                    .find(|v| v["storage"].as_bool() == Some(true))
                    .and_then(|v| v["name"].as_str())
                    .unwrap_or_default()
                    .to_string(),
            });
        }
        Ok(crds)
    }

    async fn probe_async(&self, evidence: &CapabilityEvidence) -> LiveEvidence {
        let mut live = LiveEvidence::default();
        match self.installed_crds(evidence).await {
            Err(why) => {
                for id in ["L2.live-conversion", "L4.live-conditions"] {
                    live.verdicts.insert(id.into(), Verdict::fail(why.clone()));
                }
            }
            Ok(crds) => {
                live.verdicts
                    .insert("L2.live-conversion".into(), self.conversion(&crds).await);
                live.verdicts
                    .insert("L4.live-conditions".into(), self.conditions(&crds).await);
            }
        }
        live.verdicts
            .insert("L4.live-metrics".into(), self.metrics(evidence).await);
        live
    }

    /// Lists every CR at every served version: each list goes through conversion.
    async fn conversion(&self, crds: &[InstalledCrd]) -> Verdict {
        let mut read = Vec::new();
        let mut total = 0;
        for crd in crds {
            let mut counts = Vec::new();
            for version in &crd.served {
                let path = format!("/apis/{}/{version}/{}", crd.group, crd.plural);
                match self.get_json(&path).await {
                    Ok(list) => counts.push(list["items"].as_array().map_or(0, Vec::len)),
                    Err(e) => return Verdict::fail(format!("{} at {version}: {e}", crd.name)),
                }
            }
            if counts.windows(2).any(|w| w[0] != w[1]) {
                return Verdict::fail(format!(
                    "{}: different CR counts per version {counts:?}",
                    crd.name
                ));
            }
            total += counts.first().copied().unwrap_or(0);
            read.push(format!("{} at {}", crd.name, crd.served.join(", ")));
        }
        if total == 0 {
            Verdict::unknown("no CR exists to convert: create one (e.g. from alm-examples)")
        } else {
            Verdict::pass(format!("{total} CR(s) read: {}", read.join("; ")))
        }
    }

    async fn conditions(&self, crds: &[InstalledCrd]) -> Verdict {
        let (mut with, mut without) = (0, Vec::new());
        for crd in crds {
            let path = format!("/apis/{}/{}/{}", crd.group, crd.storage, crd.plural);
            let list = match self.get_json(&path).await {
                Ok(list) => list,
                Err(e) => return Verdict::fail(e),
            };
            for item in list["items"].as_array().into_iter().flatten() {
                if item["status"]["conditions"]
                    .as_array()
                    .is_some_and(|c| !c.is_empty())
                {
                    with += 1;
                } else {
                    without.push(format!(
                        "{}/{}",
                        item["metadata"]["namespace"].as_str().unwrap_or_default(),
                        item["metadata"]["name"].as_str().unwrap_or_default()
                    ));
                }
            }
        }
        match (with, without.is_empty()) {
            (0, true) => {
                Verdict::unknown("no CR exists to look at: create one (e.g. from alm-examples)")
            }
            (_, true) => Verdict::pass(format!("{with} CR(s) with status.conditions")),
            _ => Verdict::fail(format!("no status.conditions on {}", without.join(", "))),
        }
    }

    /// The metrics Services of the bundle, scraped through the apiserver's service proxy.
    async fn metrics(&self, evidence: &CapabilityEvidence) -> Verdict {
        let services: Vec<(String, String)> = evidence
            .manifests
            .iter()
            .flat_map(|m| &m.others)
            .filter(|o| o["kind"].as_str() == Some("Service"))
            .filter_map(|s| {
                let name = s["metadata"]["name"].as_str()?;
                let ports = s["spec"]["ports"].as_array()?;
                let port = ports
                    .iter()
                    .find(|p| p["name"].as_str().is_some_and(|n| n.contains("metrics")))
                    .or_else(|| name.contains("metrics").then(|| ports.first()).flatten())?;
                let port = port["name"]
                    .as_str()
                    .map(str::to_string)
                    .unwrap_or_else(|| port["port"].to_string());
                Some((name.to_string(), port))
            })
            .collect();
        if services.is_empty() {
            return Verdict::unknown("the bundle has no metrics Service to probe");
        }
        let mut problems = Vec::new();
        for (name, port) in services {
            let namespaces = match &self.namespace {
                Some(ns) => vec![ns.clone()],
                None => match self
                    .get_json(&format!(
                        "/api/v1/services?fieldSelector=metadata.name%3D{name}"
                    ))
                    .await
                {
                    Ok(list) => list["items"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(|s| s["metadata"]["namespace"].as_str().map(str::to_string))
                        .collect(),
                    Err(e) => {
                        problems.push(e);
                        continue;
                    }
                },
            };
            if namespaces.is_empty() {
                problems.push(format!("Service {name} is not on the cluster"));
            }
            for ns in namespaces {
                let scheme = if port.contains("https") { "https:" } else { "" };
                let path =
                    format!("/api/v1/namespaces/{ns}/services/{scheme}{name}:{port}/proxy/metrics");
                match self.get(&path).await {
                    Ok(body)
                        if body
                            .lines()
                            .any(|l| l.starts_with("# TYPE") || l.starts_with("# HELP")) =>
                    {
                        let series = body
                            .lines()
                            .filter(|l| !l.starts_with('#') && !l.is_empty())
                            .count();
                        return Verdict::pass(format!(
                            "{path}: {series} samples in Prometheus text format"
                        ));
                    }
                    Ok(_) => problems.push(format!(
                        "{path}: answered, but not in Prometheus text format"
                    )),
                    Err(e) => problems.push(e),
                }
            }
        }
        Verdict::unknown(format!("metrics not reachable: {}", problems.join("; ")))
    }
}
