//! The real node: pods from images the project built really run under kubelet, containerd
//! and runc, with real probes, Services through kube-proxy, names through CoreDNS, volumes
//! that outlive pods, restarts with back-off, image pull errors and memory limits.

use std::time::{Duration, Instant};

use e2e::ControlPlane;
use e2e::node::{ContainerConfig, NODE_NAME, RealNode, RootfsEntry};
use k8s_openapi::api::core::v1::{ContainerStatus, Event, Node, Pod};
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use serde_json::{Value, json};

/// A Pod in `namespace` from `spec`.
fn pod(name: &str, labels: Value, spec: Value) -> anyhow::Result<Pod> {
    Ok(serde_json::from_value(json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels},
        "spec": spec,
    }))?)
}

fn is_ready(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

fn container_status(pod: &Pod) -> Option<ContainerStatus> {
    pod.status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .and_then(|cs| cs.first().cloned())
}

async fn wait_ready(pods: &Api<Pod>, name: &str, node: &RealNode) -> anyhow::Result<Pod> {
    e2e::eventually(
        Duration::from_secs(90),
        &format!("pod {name} Ready"),
        || async {
            node.check_running()?;
            Ok(pods.get_opt(name).await?.filter(is_ready))
        },
    )
    .await
}

fn kubectl_ok(node: &RealNode, args: &[&str]) -> anyhow::Result<String> {
    let out = node.kubectl(args)?;
    anyhow::ensure!(
        out.status.success(),
        "kubectl {}: {}{}",
        args.join(" "),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Processes of this PID namespace whose command line contains `marker` (the test binary is
/// PID 1 of a namespace of its own, so containers' processes are listed here too).
fn processes_with(marker: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        if let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) {
            let text = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            if text.contains(marker) {
                found.push(format!("{name}: {text}"));
            }
        }
    }
    found
}

#[tokio::test]
async fn the_node_is_real_and_kwok_keeps_to_its_own() -> anyhow::Result<()> {
    let plane = ControlPlane::shared().await?;
    let node = plane.real_node().await?;
    let client = plane.client().await?;
    let nodes: Api<Node> = Api::all(client.clone());
    let real = nodes.get(NODE_NAME).await?;
    let info = real
        .status
        .as_ref()
        .and_then(|s| s.node_info.clone())
        .expect("kubelet reports node info");
    assert_eq!(info.kubelet_version, plane.version());
    assert!(
        info.container_runtime_version
            .starts_with("containerd://1."),
        "{}",
        info.container_runtime_version
    );
    // kwok's fake nodes report a fake kubelet; the real one keeps the real one's status.
    let annotations = real.metadata.annotations.clone().unwrap_or_default();
    assert!(!annotations.contains_key("kwok.x-k8s.io/node"));
    let taints = real
        .spec
        .as_ref()
        .and_then(|s| s.taints.clone())
        .unwrap_or_default();
    assert!(
        taints.iter().any(|t| t.key == e2e::node::TAINT_KEY),
        "{taints:?}"
    );
    let kwok_ready = nodes
        .list(&ListParams::default().labels("type=kwok"))
        .await?
        .items
        .iter()
        .filter(|n| {
            n.status
                .as_ref()
                .and_then(|s| s.conditions.as_ref())
                .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
        })
        .count();
    assert_eq!(
        kwok_ready, 2,
        "both kwok nodes stay Ready beside the real one"
    );
    // kubelet set these host-wide at start-up; the harness put them back. The runner saved
    // the machine's values before the test binary started.
    let saved = std::env::var("E2E_HOST_SYSCTLS").map_err(|_| {
        anyhow::anyhow!("E2E_HOST_SYSCTLS is not set: run through cargo test's runner")
    })?;
    let pairs: Vec<&str> = saved.split_whitespace().collect();
    assert_eq!(pairs.len(), 3, "{saved}");
    // Test binaries run side by side (tests/run-test-binaries.sh): another binary's kubelet
    // may be starting right now, with the values changed until its harness puts them back
    // (seconds). A minute without the machine's values means nobody put them back.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let mut wrong = Vec::new();
        for pair in &pairs {
            let (key, value) = pair.split_once('=').expect("key=value");
            let path = format!("/proc/sys/{}", key.replace('.', "/"));
            let now = std::fs::read_to_string(&path)?.trim().to_string();
            if now != value {
                wrong.push(format!("{key} is {now}, the machine's value is {value}"));
            }
        }
        if wrong.is_empty() {
            break;
        }
        assert!(Instant::now() < deadline, "{}", wrong.join("; "));
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    println!(
        "real node started in {:.1?} (images, containerd, kubelet, kube-proxy, CoreDNS)",
        node.started_in()
    );
    Ok(())
}

#[tokio::test]
async fn a_pod_serves_http_through_its_service_name_and_stops_when_deleted() -> anyhow::Result<()> {
    let plane = ControlPlane::shared().await?;
    let node = plane.real_node().await?;
    let client = plane.client().await?;
    let ns = "real-web";
    node.namespace(&client, ns).await?;
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    let busybox = node.images().busybox.clone();
    let marker = format!("www-{}", std::process::id() ^ 0x5eed);

    let created = Instant::now();
    pods.create(
        &PostParams::default(),
        &pod(
            "web",
            json!({"app": "web"}),
            json!({
                "containers": [{
                    "name": "web",
                    "image": busybox,
                    "command": ["sh", "-c", format!(
                        "echo web starting; mkdir -p /tmp/{marker}; echo hello from {marker} > /tmp/{marker}/index.html; \
                         exec httpd -f -v -p 8080 -h /tmp/{marker}")],
                    "ports": [{"name": "http", "containerPort": 8080}],
                    "readinessProbe": {"httpGet": {"path": "/index.html", "port": 8080}, "periodSeconds": 1},
                    "securityContext": {"runAsUser": 65534, "runAsNonRoot": true, "allowPrivilegeEscalation": false},
                }],
                "terminationGracePeriodSeconds": 5,
            }),
        )?,
    )
    .await?;
    // A probe nobody answers: the pod must stay unready, or probes are not real.
    pods.create(
        &PostParams::default(),
        &pod(
            "unready",
            json!({"app": "unready"}),
            json!({
                "containers": [{
                    "name": "idle",
                    "image": node.images().busybox,
                    "command": ["sleep", "3600"],
                    "readinessProbe": {"httpGet": {"path": "/", "port": 8080}, "periodSeconds": 1},
                }],
                "terminationGracePeriodSeconds": 0,
            }),
        )?,
    )
    .await?;
    pods.create(
        &PostParams::default(),
        &pod(
            "client",
            json!({"app": "client"}),
            json!({
                "containers": [{"name": "client", "image": node.images().busybox, "command": ["sleep", "3600"]}],
                "terminationGracePeriodSeconds": 0,
            }),
        )?,
    )
    .await?;
    e2e::apply_objects(
        &client,
        &[json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "web", "namespace": ns},
            "spec": {"selector": {"app": "web"}, "ports": [{"name": "http", "port": 80, "targetPort": "http"}]},
        })],
    )
    .await?;
    let web = wait_ready(&pods, "web", node).await?;
    let to_ready = created.elapsed();
    assert_eq!(
        web.spec.as_ref().and_then(|s| s.node_name.as_deref()),
        Some(NODE_NAME),
        "the namespace's pods run on the real node"
    );
    wait_ready(&pods, "client", node).await?;

    // Through the Service's name: CoreDNS answers, kube-proxy forwards, the pod serves.
    let url = format!("http://web.{ns}.svc.cluster.local/index.html");
    let body = e2e::eventually(Duration::from_secs(30), "the Service to answer", || async {
        let out = node.kubectl(&[
            "exec", "-n", ns, "client", "--", "wget", "-q", "-O", "-", &url,
        ])?;
        Ok(out
            .status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).into_owned()))
    })
    .await?;
    assert_eq!(body.trim(), format!("hello from {marker}"));
    let logs = kubectl_ok(node, &["logs", "-n", ns, "web"])?;
    assert!(logs.contains("web starting"), "kubectl logs: {logs}");

    // The apiserver itself reaches the pod behind a Service (the path it takes to call an
    // admission or conversion webhook): its service proxy dials the endpoint's pod IP.
    let proxied = kubectl_ok(
        node,
        &[
            "get",
            "--raw",
            &format!("/api/v1/namespaces/{ns}/services/web:http/proxy/index.html"),
        ],
    )?;
    assert_eq!(proxied.trim(), format!("hello from {marker}"));

    // kubectl port-forward: apiserver -> kubelet -> containerd -> the pod's network namespace.
    let local_port = e2e::free_port()?;
    let kubectl = e2e::assets::Assets::locate()?.kubernetes("kubectl")?;
    let mut forward = std::process::Command::new(kubectl)
        .arg(format!(
            "--kubeconfig={}",
            plane.kubeconfig_path().display()
        ))
        .args([
            "port-forward",
            "-n",
            ns,
            "pod/web",
            &format!("{local_port}:8080"),
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()?;
    let forwarded = e2e::eventually(Duration::from_secs(20), "kubectl port-forward", || async {
        Ok(e2e::http_get(local_port, "/index.html")
            .await
            .ok()
            .filter(|(status, _)| *status == 200))
    })
    .await;
    let _ = forward.kill();
    let _ = forward.wait();
    assert_eq!(forwarded?.1.trim(), format!("hello from {marker}"));

    let unready = pods.get("unready").await?;
    assert!(
        !is_ready(&unready),
        "a pod whose readiness probe gets no answer is not Ready"
    );
    let running = container_status(&unready)
        .and_then(|s| s.state)
        .and_then(|s| s.running);
    assert!(running.is_some(), "its container runs all the same");

    assert!(
        !processes_with(&marker).is_empty(),
        "the web server is a process of this machine"
    );
    pods.delete("web", &DeleteParams::default()).await?;
    e2e::eventually(
        Duration::from_secs(30),
        "the web pod to be gone",
        || async { Ok(pods.get_opt("web").await?.is_none().then_some(())) },
    )
    .await?;
    e2e::eventually(
        Duration::from_secs(10),
        "the web server's process to end",
        || async { Ok(processes_with(&marker).is_empty().then_some(())) },
    )
    .await?;
    println!("pod created -> Ready on the real node: {to_ready:.1?}");
    Ok(())
}

#[tokio::test]
async fn a_stateful_pod_gets_its_volume_back_after_it_is_deleted() -> anyhow::Result<()> {
    let plane = ControlPlane::shared().await?;
    let node = plane.real_node().await?;
    let client = plane.client().await?;
    let ns = "real-store";
    node.namespace(&client, ns).await?;
    let token = format!("token-{}", std::process::id());
    e2e::apply_objects(
        &client,
        &[json!({
            "apiVersion": "apps/v1", "kind": "StatefulSet",
            "metadata": {"name": "store", "namespace": ns},
            "spec": {
                "serviceName": "store",
                "replicas": 1,
                "selector": {"matchLabels": {"app": "store"}},
                "template": {
                    "metadata": {"labels": {"app": "store"}},
                    "spec": {
                        "containers": [{
                            "name": "store",
                            "image": node.images().busybox,
                            "command": ["sh", "-c", format!(
                                "[ -f /data/token ] || echo {token} > /data/token; sync; exec sleep 3600")],
                            "volumeMounts": [{"name": "data", "mountPath": "/data"}],
                            "securityContext": {"runAsUser": 1000, "runAsNonRoot": true},
                        }],
                        "terminationGracePeriodSeconds": 0,
                    },
                },
                "volumeClaimTemplates": [{
                    "metadata": {"name": "data"},
                    "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "64Mi"}}},
                }],
            },
        })],
    )
    .await?;
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    let first = wait_ready(&pods, "store-0", node).await?;
    let read = || {
        kubectl_ok(
            node,
            &["exec", "-n", ns, "store-0", "--", "cat", "/data/token"],
        )
    };
    assert_eq!(read()?.trim(), token);

    pods.delete("store-0", &DeleteParams::default()).await?;
    let first_uid = first.metadata.uid.clone();
    let second = e2e::eventually(
        Duration::from_secs(90),
        "store-0 recreated and Ready",
        || async {
            node.check_running()?;
            Ok(pods
                .get_opt("store-0")
                .await?
                .filter(|p| p.metadata.uid != first_uid && is_ready(p)))
        },
    )
    .await?;
    assert_ne!(second.metadata.uid, first.metadata.uid);
    assert_eq!(
        read()?.trim(),
        token,
        "the recreated pod reads what the first one wrote"
    );
    Ok(())
}

#[tokio::test]
async fn crashes_back_off_and_a_missing_image_says_why() -> anyhow::Result<()> {
    let plane = ControlPlane::shared().await?;
    let node = plane.real_node().await?;
    let client = plane.client().await?;
    let ns = "real-failures";
    node.namespace(&client, ns).await?;
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    pods.create(
        &PostParams::default(),
        &pod(
            "crasher",
            json!({}),
            json!({"containers": [{"name": "crash", "image": node.images().busybox,
                                   "command": ["sh", "-c", "echo about to fail; exit 3"]}]}),
        )?,
    )
    .await?;
    let missing = format!("{}/e2e/no-such-image:v0", node.registry());
    pods.create(
        &PostParams::default(),
        &pod(
            "ghost",
            json!({}),
            json!({"containers": [{"name": "ghost", "image": missing, "imagePullPolicy": "Always"}]}),
        )?,
    )
    .await?;

    // 34 s alone; with the binary's other tests starting pods beside it on two cores it took
    // over 90 s once (fresh-clone CI run, 2026-12-01). The waiting state is a snapshot the
    // kubelet may replace before a read sees it, so its BackOff event counts as well.
    let events: Api<Event> = Api::namespaced(client.clone(), ns);
    let crashed = e2e::eventually(Duration::from_secs(180), "CrashLoopBackOff", || async {
        node.check_running()?;
        let Some(status) = pods
            .get("crasher")
            .await
            .ok()
            .as_ref()
            .and_then(container_status)
        else {
            return Ok(None);
        };
        let waiting_in_back_off = status
            .state
            .as_ref()
            .and_then(|st| st.waiting.as_ref())
            .and_then(|w| w.reason.as_deref())
            == Some("CrashLoopBackOff");
        let backed_off = waiting_in_back_off
            || events
                .list(&ListParams::default().fields("involvedObject.name=crasher"))
                .await?
                .items
                .iter()
                .any(|e| e.reason.as_deref() == Some("BackOff"));
        Ok((backed_off && status.restart_count >= 1).then_some(status))
    })
    .await;
    let crashed = match crashed {
        Ok(status) => status,
        Err(error) => {
            let described = node
                .kubectl(&["describe", "pod", "-n", ns, "crasher"])
                .map(|out| String::from_utf8_lossy(&out.stdout).into_owned());
            return Err(error.context(format!("the crasher: {described:?}")));
        }
    };
    assert!(crashed.restart_count >= 1, "{crashed:?}");
    let last = crashed
        .last_state
        .as_ref()
        .and_then(|s| s.terminated.as_ref())
        .expect("the last run's end is recorded");
    assert_eq!(last.exit_code, 3);
    // `--previous` names the run before the current one when kubectl asks; a run that ends
    // meanwhile can make the kubelet answer (exit 0) that it cannot read that run's log.
    let mut logs = String::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    while !logs.contains("about to fail") && Instant::now() < deadline {
        logs = kubectl_ok(node, &["logs", "-n", ns, "crasher", "--previous"])?;
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    assert!(logs.contains("about to fail"), "{logs}");

    let waiting = e2e::eventually(Duration::from_secs(60), "an image pull error", || async {
        let status = pods
            .get("ghost")
            .await
            .ok()
            .as_ref()
            .and_then(container_status);
        Ok(status
            .and_then(|s| s.state)
            .and_then(|s| s.waiting)
            .filter(|w| {
                matches!(
                    w.reason.as_deref(),
                    Some("ErrImagePull") | Some("ImagePullBackOff")
                ) && w.message.is_some()
            }))
    })
    .await?;
    let message = waiting.message.unwrap_or_default();
    assert!(
        message.contains("no-such-image") && message.contains("not found"),
        "the registry's reason reaches the pod's status: {message}"
    );
    Ok(())
}

#[tokio::test]
async fn a_container_past_its_memory_limit_is_oom_killed() -> anyhow::Result<()> {
    let plane = ControlPlane::shared().await?;
    let node = plane.real_node().await?;
    let client = plane.client().await?;
    let ns = "real-memory";
    node.namespace(&client, ns).await?;
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    // The shell doubles a string until the cgroup's limit stops it.
    pods.create(
        &PostParams::default(),
        &pod(
            "hog",
            json!({}),
            json!({
                "restartPolicy": "Never",
                "containers": [{
                    "name": "hog",
                    "image": node.images().busybox,
                    "command": ["sh", "-c", "a=xxxxxxxxxxxxxxxx; while true; do a=\"$a$a\"; done"],
                    "resources": {"limits": {"memory": "32Mi"}, "requests": {"memory": "32Mi"}},
                }],
            }),
        )?,
    )
    .await?;
    let terminated = e2e::eventually(Duration::from_secs(60), "the hog to be killed", || async {
        node.check_running()?;
        let status = pods
            .get("hog")
            .await
            .ok()
            .as_ref()
            .and_then(container_status);
        Ok(status.and_then(|s| s.state).and_then(|s| s.terminated))
    })
    .await?;
    assert_eq!(
        terminated.reason.as_deref(),
        Some("OOMKilled"),
        "{terminated:?}"
    );
    assert_eq!(terminated.exit_code, 137);
    Ok(())
}

/// Idle cost of the node, for docs/testing.md: CPU over ten seconds and resident memory of
/// containerd, kubelet and kube-proxy, and memory of the pods' cgroup. Fails if a figure
/// cannot be read.
#[tokio::test]
async fn node_processes_at_idle() -> anyhow::Result<()> {
    let plane = ControlPlane::shared().await?;
    let node = plane.real_node().await?;
    let ticks = |pid: u32| -> anyhow::Result<u64> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
        let after = stat
            .rsplit_once(')')
            .map(|(_, rest)| rest)
            .unwrap_or_default();
        let fields: Vec<&str> = after.split_whitespace().collect();
        // utime and stime are fields 14 and 15 of stat(5); here 12 and 13 after the name.
        let utime: u64 = fields
            .get(11)
            .ok_or_else(|| anyhow::anyhow!("short stat"))?
            .parse()?;
        let stime: u64 = fields
            .get(12)
            .ok_or_else(|| anyhow::anyhow!("short stat"))?
            .parse()?;
        Ok(utime + stime)
    };
    let rss_kib = |pid: u32| -> anyhow::Result<u64> {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
        let line = status
            .lines()
            .find(|l| l.starts_with("VmRSS:"))
            .ok_or_else(|| anyhow::anyhow!("no VmRSS for {pid}"))?;
        Ok(line.split_whitespace().nth(1).unwrap_or("0").parse()?)
    };
    let processes: Vec<_> = node
        .processes()
        .map(|p| (p.name().to_string(), p.pid()))
        .collect();
    let before: Vec<u64> = processes
        .iter()
        .map(|(_, pid)| ticks(*pid))
        .collect::<Result<_, _>>()?;
    let window = Duration::from_secs(10);
    tokio::time::sleep(window).await;
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    for ((name, pid), start) in processes.iter().zip(before) {
        let used = (ticks(*pid)? - start) as f64 / hz;
        let rss = rss_kib(*pid)?;
        anyhow::ensure!(rss > 0, "{name} has no resident memory?");
        println!(
            "{name}: {:.1} % of one CPU, {:.1} MiB resident",
            100.0 * used / window.as_secs_f64(),
            rss as f64 / 1024.0
        );
    }
    println!(
        "pods' cgroup: {:.1} MiB",
        node.pods_memory()? as f64 / 1048576.0
    );
    Ok(())
}

#[tokio::test]
async fn redis_from_debian_runs_in_an_image_of_its_binary_and_libraries() -> anyhow::Result<()> {
    let plane = ControlPlane::shared().await?;
    let node = plane.real_node().await?;
    let client = plane.client().await?;
    let ns = "real-redis";
    node.namespace(&client, ns).await?;
    let server = std::path::Path::new("/usr/bin/redis-server");
    let cli = std::path::Path::new("/usr/bin/redis-cli");
    anyhow::ensure!(
        server.is_file() && cli.is_file(),
        "redis-server is missing: install Debian's redis-server (the README test command does)"
    );
    // redis-server is dynamically linked (libc, libssl, libsystemd, ...): the image carries
    // every library ldd lists and the loader, nothing else.
    let image = node
        .push_programs(
            &format!("e2e/redis:{}", e2e::node::debian_version("redis-server")?),
            &[server, cli],
            vec![RootfsEntry::Dir {
                path: "/data".into(),
                mode: 0o1777,
            }],
            &ContainerConfig {
                entrypoint: vec!["/usr/bin/redis-server".into()],
                user: "999:999".into(),
                ..ContainerConfig::default()
            },
        )
        .await?;
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    pods.create(
        &PostParams::default(),
        &pod(
            "redis",
            json!({}),
            json!({
                "containers": [{
                    "name": "redis",
                    "image": image,
                    "args": ["--port", "6379", "--dir", "/data", "--save", ""],
                    "readinessProbe": {"exec": {"command": ["redis-cli", "ping"]}, "periodSeconds": 1},
                }],
                "terminationGracePeriodSeconds": 0,
            }),
        )?,
    )
    .await?;
    wait_ready(&pods, "redis", node).await?;
    let set = kubectl_ok(
        node,
        &[
            "exec",
            "-n",
            ns,
            "redis",
            "--",
            "redis-cli",
            "set",
            "greeting",
            "hello",
        ],
    )?;
    assert_eq!(set.trim(), "OK");
    let get = kubectl_ok(
        node,
        &[
            "exec",
            "-n",
            ns,
            "redis",
            "--",
            "redis-cli",
            "get",
            "greeting",
        ],
    )?;
    assert_eq!(get.trim(), "hello");
    Ok(())
}

/// The operator's own manifests (`redis-operator manifests`), image swapped for one built from
/// this build's binary: the operator runs as a pod under its ServiceAccount and generated
/// RBAC, passes its real probes, and the apiserver converts a v1alpha1 object through the
/// operator's webhook Service (a pod IP behind kube-proxy's Service, the self-signed CA the
/// operator wrote into the CRD).
#[tokio::test]
async fn the_redis_operator_runs_as_a_pod_and_converts_through_its_service() -> anyhow::Result<()> {
    use k8s_openapi::api::apps::v1::Deployment;
    use kube::api::DynamicObject;
    let plane = ControlPlane::shared().await?;
    let node = plane.real_node().await?;
    let client = plane.client().await?;
    let ns = "redis-operator-system";
    node.namespace(&client, ns).await?;

    let binary = e2e::bundle_tool_binary()
        .parent()
        .expect("the target folder")
        .join("redis-operator");
    anyhow::ensure!(
        binary.is_file(),
        "{} is missing: run `cargo build -p redis-operator` (the README test command does)",
        binary.display()
    );
    let image = node
        .push_programs(
            "e2e/redis-operator:dev",
            &[binary.as_path()],
            Vec::new(),
            &ContainerConfig {
                entrypoint: vec!["/usr/bin/redis-operator".into()],
                user: "65532:65532".into(),
                ..ContainerConfig::default()
            },
        )
        .await?;
    let manifests = std::process::Command::new(&binary)
        .arg("manifests")
        .output()?;
    anyhow::ensure!(
        manifests.status.success(),
        "redis-operator manifests failed"
    );
    let text = String::from_utf8(manifests.stdout)?;
    anyhow::ensure!(
        text.contains("image: quay.io/example/redis-operator:0.1.0"),
        "the manifests name no operator image to swap"
    );
    let text = text.replace(
        "image: quay.io/example/redis-operator:0.1.0",
        &format!("image: {image}"),
    );
    e2e::olm::apply_yaml(&client, &text).await?;

    let deployments: Api<Deployment> = Api::namespaced(client.clone(), ns);
    e2e::eventually(
        Duration::from_secs(120),
        "the operator Deployment available",
        || async {
            node.check_running()?;
            let available = deployments
                .list(&ListParams::default())
                .await?
                .items
                .iter()
                .any(|d| {
                    d.status
                        .as_ref()
                        .and_then(|s| s.available_replicas)
                        .unwrap_or(0)
                        >= 1
                });
            Ok(available.then_some(()))
        },
    )
    .await?;

    // A v1alpha1 object: stored as v1, so the apiserver calls the webhook in the pod.
    let resource = kube::api::ApiResource {
        group: "cache.example.com".into(),
        version: "v1alpha1".into(),
        api_version: "cache.example.com/v1alpha1".into(),
        kind: "RedisCluster".into(),
        plural: "redisclusters".into(),
    };
    let clusters: Api<DynamicObject> = Api::namespaced_with(client.clone(), ns, &resource);
    let v1 = kube::api::ApiResource {
        version: "v1".into(),
        api_version: "cache.example.com/v1".into(),
        ..resource.clone()
    };
    let clusters_v1: Api<DynamicObject> = Api::namespaced_with(client.clone(), ns, &v1);
    let sample: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "cache.example.com/v1alpha1", "kind": "RedisCluster",
        "metadata": {"name": "converted"},
        "spec": {"replicas": 1, "version": "7.2"},
    }))?;
    e2e::eventually(
        Duration::from_secs(60),
        "a v1alpha1 RedisCluster accepted",
        || async { Ok(clusters.create(&PostParams::default(), &sample).await.ok()) },
    )
    .await?;
    let reconciled = e2e::eventually(
        Duration::from_secs(60),
        "conditions from the operator pod",
        || async {
            let cluster = clusters_v1.get("converted").await?;
            let reconciled = cluster.data["status"]["conditions"]
                .as_array()
                .is_some_and(|c| !c.is_empty());
            Ok(reconciled.then_some(cluster))
        },
    )
    .await
    .map_err(|e| {
        let logs = node
            .kubectl(&["logs", "-n", ns, "deployment/redis-operator", "--tail=30"])
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default();
        anyhow::anyhow!("{e:#}; the operator's log:\n{logs}")
    })?;
    // Stored as v1 (the conversion's result), read back through v1alpha1 (a second one).
    assert_eq!(
        reconciled.data["spec"]["redisVersion"], "7.2",
        "{:?}",
        reconciled.data
    );
    let back = clusters.get("converted").await?;
    assert_eq!(back.data["spec"]["version"], "7.2");
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    let operator_pods = pods
        .list(&ListParams::default().labels("app.kubernetes.io/name=redis-operator"))
        .await?
        .items;
    anyhow::ensure!(
        !operator_pods.is_empty(),
        "no operator pod found by its label"
    );
    assert!(
        operator_pods
            .iter()
            .all(|p| p.spec.as_ref().and_then(|s| s.node_name.as_deref()) == Some(NODE_NAME)),
        "the operator pod runs on the real node"
    );
    Ok(())
}
