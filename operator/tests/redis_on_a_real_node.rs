//! The operator as users run it, on the real node: the operator is a pod from its own image
//! (this build's binary) under its generated RBAC, and each RedisCluster runs Debian's
//! redis-server in real pods. Replication, failover, rolling updates and passwords are checked
//! against what the Redis servers themselves say, over the pod network.

mod real;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use k8s_openapi::api::core::v1::{ConfigMap, PersistentVolumeClaim, Pod, Secret, Service};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use real::*;
use redis_operator::redis::Role;
use serde_json::json;

#[tokio::test]
async fn replication_failover_scaling_rolling_update_and_deletion_with_real_redis()
-> anyhow::Result<()> {
    let setup = setup().await?;
    // A client per test: each test has its own runtime, and a client's worker dies with the
    // runtime it was made in.
    let client = &setup.plane.client().await?;
    let ns = "redis-real";
    setup.node.namespace(client, ns).await?;
    let started = Instant::now();
    let clusters = new_cluster(
        client,
        ns,
        json!({"replicas": 3, "redisVersion": "7.2", "persistence": {"size": "64Mi"}}),
    )
    .await?;

    // 1. Three pods Ready by their real probes; the Ready condition names the primary.
    let running = wait_running(setup, &clusters, 3, Duration::from_secs(180)).await?;
    println!(
        "apply → Ready=True with 3 real Redis pods: {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let status = running.status.clone().unwrap();
    assert_eq!(status.primary.as_deref(), Some("my-redis-0"));
    let ready = status
        .conditions
        .iter()
        .find(|c| c.type_ == "Ready")
        .unwrap();
    assert!(
        ready.message.contains("my-redis-0 is the primary"),
        "{}",
        ready.message
    );

    // 2. A write through the client Service is read back from each replica.
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    let service = service_address(client, ns, "my-redis").await?;
    assert_eq!(
        redis(service, NO_AUTH, &["SET", "greeting", "hello"]).await?,
        "OK"
    );
    assert_eq!(redis(service, NO_AUTH, &["WAIT", "2", "5000"]).await?, "2");
    let primary_info = replication(pod_address(&pods, "my-redis-0").await?, NO_AUTH).await?;
    assert_eq!(primary_info.role, Role::Primary);
    assert_eq!(primary_info.connected_replicas, 2, "{primary_info:?}");
    for replica in ["my-redis-1", "my-redis-2"] {
        let address = pod_address(&pods, replica).await?;
        assert_eq!(
            redis(address, NO_AUTH, &["GET", "greeting"]).await?,
            "hello",
            "{replica}"
        );
        let info = replication(address, NO_AUTH).await?;
        assert!(
            matches!(&info.role, Role::Replica { host, link_up: true, .. } if host.starts_with("my-redis-0.")),
            "{replica}: {info:?}"
        );
        let refused = redis(address, NO_AUTH, &["SET", "x", "y"]).await;
        assert!(
            refused.is_err_and(|e| e.to_string().contains("READONLY")),
            "{replica} takes writes"
        );
    }
    let replicas_service = service_address(client, ns, "my-redis-replicas").await?;
    assert_eq!(
        redis(replicas_service, NO_AUTH, &["GET", "greeting"]).await?,
        "hello"
    );
    assert!(
        replication(replicas_service, NO_AUTH).await?.role != Role::Primary,
        "the replicas Service reached the primary"
    );

    // 3. Five replicas: the two new ones sync the existing key.
    clusters
        .patch(
            "my-redis",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 5}})),
        )
        .await?;
    wait_running(setup, &clusters, 5, Duration::from_secs(120)).await?;
    for replica in ["my-redis-3", "my-redis-4"] {
        let address = pod_address(&pods, replica).await?;
        assert_eq!(
            redis(address, NO_AUTH, &["GET", "greeting"]).await?,
            "hello",
            "{replica}"
        );
    }

    // 4a. The primary's pod is deleted: a replica takes over, no acknowledged write is lost,
    // and the pod comes back as a replica.
    let keys = write_acknowledged(service, NO_AUTH, "before-delete", 50).await?;
    let old_run = run_id(pod_address(&pods, "my-redis-0").await?, NO_AUTH).await?;
    let deleted_at = Instant::now();
    pods.delete("my-redis-0", &DeleteParams::default()).await?;
    let took = first_write(service, NO_AUTH, "after-delete", &old_run).await?;
    println!(
        "primary pod deleted → first write through the client Service: {:.2} s",
        took.as_secs_f64()
    );
    let new_primary = wait_failover(setup, &clusters, "my-redis-0").await?;
    let new_address = pod_address(&pods, &new_primary).await?;
    all_present(new_address, NO_AUTH, &keys).await?;
    assert!(deleted_at.elapsed() < Duration::from_secs(60));
    let running = wait_running(setup, &clusters, 5, Duration::from_secs(120)).await?;
    assert_eq!(
        running.status.unwrap().primary.as_deref(),
        Some(new_primary.as_str())
    );
    if let Ok(output) = setup.node.kubectl(&["get", "redisclusters", "-n", ns]) {
        println!(
            "$ kubectl get redisclusters\n{}",
            String::from_utf8_lossy(&output.stdout)
        );
    }
    let returned = replication(pod_address(&pods, "my-redis-0").await?, NO_AUTH).await?;
    assert!(
        matches!(&returned.role, Role::Replica { host, .. } if host.starts_with(&format!("{new_primary}."))),
        "the old primary came back as {returned:?}"
    );
    all_present(pod_address(&pods, "my-redis-0").await?, NO_AUTH, &keys).await?;
    let reasons: Vec<String> = events(client, ns)
        .await?
        .into_iter()
        .filter_map(|e| e.reason)
        .collect();
    // A terminating primary that still answers is switched away from under control
    // (Switched); one that is gone already is failed over from (FailedOver).
    assert!(
        reasons.iter().any(|r| r == "FailedOver" || r == "Switched"),
        "no failover Event among {reasons:?}"
    );

    // 4b. The Redis process in the primary's container is killed (the pod stays): the
    // restarted Redis does not lead with what it lost; a replica takes over.
    let keys = write_acknowledged(service, NO_AUTH, "before-kill", 20).await?;
    let victim = new_primary.clone();
    let old_run = run_id(pod_address(&pods, &victim).await?, NO_AUTH).await?;
    let victim_uid = pods.get(&victim).await?.metadata.uid.context("a pod uid")?;
    let pids = redis_pids_of(&victim_uid);
    anyhow::ensure!(
        pids.len() == 1,
        "found redis-server pids {pids:?} for {victim}"
    );
    // SAFETY: kill(2) on a pid read from /proc; at worst it is gone already.
    let killed = unsafe { libc::kill(pids[0] as i32, libc::SIGKILL) };
    anyhow::ensure!(
        killed == 0,
        "kill {}: {}",
        pids[0],
        std::io::Error::last_os_error()
    );
    let took = first_write(service, NO_AUTH, "after-kill", &old_run).await?;
    println!(
        "primary's Redis killed → first write through the client Service: {:.2} s",
        took.as_secs_f64()
    );
    let after_kill = wait_failover(setup, &clusters, &victim).await?;
    all_present(pod_address(&pods, &after_kill).await?, NO_AUTH, &keys).await?;
    wait_running(setup, &clusters, 5, Duration::from_secs(120)).await?;
    let victim_now = replication(pod_address(&pods, &victim).await?, NO_AUTH).await?;
    assert!(
        matches!(&victim_now.role, Role::Replica { host, link_up: true, .. } if host.starts_with(&format!("{after_kill}."))),
        "{victim} after its restart: {victim_now:?}"
    );

    // 5. A version change rolls one pod at a time, replicas first, the primary last after a
    // controlled switch; every key survives.
    let all_keys: Vec<String> = (0..20).map(|i| format!("before-kill-{i}")).collect();
    let primary_before = primary_of(&clusters).await?;
    let uids_before: BTreeMap<String, String> = pods
        .list(&ListParams::default().labels("app.kubernetes.io/instance=my-redis"))
        .await?
        .items
        .into_iter()
        .map(|p| {
            (
                p.metadata.name.clone().unwrap(),
                p.metadata.uid.clone().unwrap(),
            )
        })
        .collect();
    clusters
        .patch(
            "my-redis",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"redisVersion": "7.0"}})),
        )
        .await?;
    let mut order: Vec<String> = Vec::new();
    let mut most_unready = 0;
    let rolled = Instant::now();
    loop {
        anyhow::ensure!(
            rolled.elapsed() < Duration::from_secs(300),
            "the rolling update did not finish; order so far {order:?}"
        );
        let list = pods
            .list(&ListParams::default().labels("app.kubernetes.io/instance=my-redis"))
            .await?
            .items;
        let unready = 5 - list
            .iter()
            .filter(|p| {
                p.status
                    .as_ref()
                    .and_then(|s| s.conditions.as_ref())
                    .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
            })
            .count();
        most_unready = most_unready.max(unready);
        for pod in &list {
            let name = pod.metadata.name.clone().unwrap();
            if uids_before.get(&name) != pod.metadata.uid.as_ref() && !order.contains(&name) {
                order.push(name);
            }
        }
        let cluster = clusters.get("my-redis").await?;
        if order.len() == 5 && is_running(&cluster, 5) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    println!(
        "rolling update order: {order:?} (primary before: {primary_before}); at most {most_unready} pods unready at once, {:.1} s",
        rolled.elapsed().as_secs_f64()
    );
    assert_eq!(
        order.last(),
        Some(&primary_before),
        "the primary was not restarted last: {order:?}"
    );
    let images: Vec<String> = pods
        .list(&ListParams::default().labels("app.kubernetes.io/instance=my-redis"))
        .await?
        .items
        .into_iter()
        .map(|p| {
            p.spec.unwrap().containers[0]
                .image
                .clone()
                .unwrap_or_default()
        })
        .collect();
    assert!(
        images.iter().all(|i| i.ends_with("e2e/redis:7.0")),
        "{images:?}"
    );
    let primary = primary_of(&clusters).await?;
    assert_ne!(
        primary, primary_before,
        "the primary was switched away from before its restart"
    );
    all_present(service, NO_AUTH, &all_keys).await?;
    let switched = events(client, ns).await?.into_iter().any(|e| {
        e.reason.as_deref() == Some("Switched") && e.action.as_deref() == Some("RollingUpdate")
    });
    assert!(switched, "no Switched Event for the rolling update");

    // 5b. Scaling down to one pod never removes the primary: a primary above the new size is
    // switched away from first.
    let primary_before_scale = primary_of(&clusters).await?;
    clusters
        .patch(
            "my-redis",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 1}})),
        )
        .await?;
    wait_running(setup, &clusters, 1, Duration::from_secs(120)).await?;
    assert_eq!(primary_of(&clusters).await?, "my-redis-0");
    // The Service may still route a connection to a pod that is going away until
    // kube-proxy has its new endpoints (a CI-like run once got no answer here at once).
    let routed = Instant::now();
    let mut last = None;
    while routed.elapsed() < Duration::from_secs(30) {
        match all_present(service, NO_AUTH, &all_keys).await {
            Ok(()) => {
                last = None;
                break;
            }
            Err(error) => last = Some(error),
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    if let Some(error) = last {
        return Err(error.context("the keys through the Service 30 s after the scale-down"));
    }
    println!(
        "scale-down to 1: primary {primary_before_scale} → my-redis-0; every key read through the Service {:.1} s after Running",
        routed.elapsed().as_secs_f64()
    );

    // 6. Deletion: the finalizer removes the claims; nothing the cluster owned is left.
    clusters
        .delete("my-redis", &DeleteParams::default())
        .await?;
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), ns);
    let maps: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
    let services: Api<Service> = Api::namespaced(client.clone(), ns);
    let secrets: Api<Secret> = Api::namespaced(client.clone(), ns);
    e2e::eventually(
        Duration::from_secs(120),
        "every object of the cluster gone",
        || async {
            let selector = ListParams::default().labels("app.kubernetes.io/instance=my-redis");
            let left = pods.list(&selector).await?.items.len()
                + claims.list(&selector).await?.items.len()
                + maps.list(&selector).await?.items.len()
                + services.list(&selector).await?.items.len()
                + secrets.list(&selector).await?.items.len()
                + usize::from(clusters.get_opt("my-redis").await?.is_some());
            Ok((left == 0).then_some(()))
        },
    )
    .await
    .map_err(with_logs(setup.node))?;
    Ok(())
}

#[tokio::test]
async fn the_password_is_on_no_command_line_and_a_new_one_rolls_the_pods() -> anyhow::Result<()> {
    let setup = setup().await?;
    // A client per test: each test has its own runtime, and a client's worker dies with the
    // runtime it was made in.
    let client = &setup.plane.client().await?;
    let ns = "redis-secret";
    setup.node.namespace(client, ns).await?;
    let first = format!("first password {}", std::process::id());
    let secrets: Api<Secret> = Api::namespaced(client.clone(), ns);
    let secret: Secret = serde_json::from_value(json!({
        "metadata": {"name": "redis-auth"},
        "stringData": {"password": first},
    }))?;
    secrets.create(&PostParams::default(), &secret).await?;
    let clusters = new_cluster(
        client,
        ns,
        json!({"replicas": 2, "passwordSecret": {"name": "redis-auth", "key": "password"}}),
    )
    .await?;
    wait_running(setup, &clusters, 2, Duration::from_secs(180)).await?;

    let service = service_address(client, ns, "my-redis").await?;
    let denied = redis(service, NO_AUTH, &["SET", "k", "v"]).await;
    assert!(
        denied.is_err_and(|e| e.to_string().contains("NOAUTH")),
        "a write without the password was taken"
    );
    assert_eq!(
        redis(service, Some(("default", &first)), &["SET", "k", "v"]).await?,
        "OK"
    );

    // No process of the node (containers, probes, the operator) has the password in argv.
    let scan = |password: &str| {
        let mut found = Vec::new();
        for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
            let path = entry.path().join("cmdline");
            if let Ok(bytes) = std::fs::read(&path)
                && String::from_utf8_lossy(&bytes).contains(password)
            {
                found.push(path.display().to_string());
            }
        }
        found
    };
    // Probes run every 2 s: look for 5 s so that their processes are caught too.
    let scanned = Instant::now();
    let mut seen = 0usize;
    while scanned.elapsed() < Duration::from_secs(5) {
        let found = scan(&first);
        assert!(found.is_empty(), "the password is in {found:?}");
        seen += std::fs::read_dir("/proc")?.count();
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        seen > 1000,
        "the scan read almost nothing from /proc ({seen} entries)"
    );
    // And from inside a Redis container, as its user sees it.
    let inside = setup.node.kubectl(&[
        "exec",
        "-n",
        ns,
        "my-redis-0",
        "-c",
        "redis",
        "--",
        "sh",
        "-c",
        "for f in /proc/[0-9]*/cmdline; do cat \"$f\"; echo; done",
    ])?;
    anyhow::ensure!(
        inside.status.success(),
        "kubectl exec failed: {}",
        String::from_utf8_lossy(&inside.stderr)
    );
    let argv = String::from_utf8_lossy(&inside.stdout);
    assert!(
        argv.contains("redis-server"),
        "the container's processes were not read: {argv}"
    );
    assert!(
        !argv.contains(&first),
        "the password is in a container's argv"
    );
    assert!(
        !operator_logs(setup.node).contains(&first),
        "the operator logged the password"
    );
    for event in events(client, ns).await? {
        assert!(
            !event.note.unwrap_or_default().contains(&first),
            "an Event holds the password"
        );
    }

    // A new password rolls the pods; the new one works, the old one no longer does.
    let uids = |list: Vec<Pod>| -> Vec<String> {
        list.into_iter().filter_map(|p| p.metadata.uid).collect()
    };
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    let before = uids(
        pods.list(&ListParams::default().labels("app.kubernetes.io/instance=my-redis"))
            .await?
            .items,
    );
    let second = format!("second password {}", std::process::id());
    secrets
        .patch(
            "redis-auth",
            &PatchParams::default(),
            &Patch::Merge(json!({"stringData": {"password": second}})),
        )
        .await?;
    e2e::eventually(
        Duration::from_secs(180),
        "every pod restarted with the new password",
        || async {
            let now = uids(
                pods.list(&ListParams::default().labels("app.kubernetes.io/instance=my-redis"))
                    .await?
                    .items,
            );
            let rolled = now.len() == 2 && now.iter().all(|u| !before.contains(u));
            let cluster = clusters.get("my-redis").await?;
            Ok((rolled && is_running(&cluster, 2)).then_some(()))
        },
    )
    .await
    .map_err(with_logs(setup.node))?;
    let service = service_address(client, ns, "my-redis").await?;
    assert_eq!(
        redis(service, Some(("default", &second)), &["GET", "k"]).await?,
        "v"
    );
    let old = redis(service, Some(("default", &first)), &["GET", "k"]).await;
    assert!(
        old.is_err_and(|e| e.to_string().contains("WRONGPASS")),
        "the old password still works"
    );
    let found = scan(&second);
    assert!(found.is_empty(), "the new password is in {found:?}");

    // Every log the cluster wrote (each process's, the audit log, every container's: the
    // Redis pods', the exporters', the operator's), with both passwords as written and as a
    // Secret's data carries them; and the custom resource's status.
    use base64::Engine as _;
    let b64 = |p: &str| base64::engine::general_purpose::STANDARD.encode(p);
    let needles = vec![first.clone(), second.clone(), b64(&first), b64(&second)];
    let logs = scan_logs(setup, &needles);
    println!(
        "password scan: {} log files, {} KiB, {} container logs",
        logs.files,
        logs.bytes / 1024,
        logs.container_logs.len()
    );
    assert!(
        logs.found.is_empty(),
        "a log holds a password: {:?}",
        logs.found
    );
    assert!(
        logs.container_logs
            .iter()
            .any(|p| p.contains(&format!("{ns}_my-redis-0_")))
            && logs
                .container_logs
                .iter()
                .any(|p| p.contains(&format!("{OPERATOR_NAMESPACE}_"))),
        "the Redis and operator container logs were not read: {:?}",
        logs.container_logs
    );
    let status = serde_json::to_string(&clusters.get("my-redis").await?.status)?;
    assert!(
        !needles.iter().any(|n| status.contains(n.as_str())),
        "the status holds a password: {status}"
    );
    Ok(())
}

#[tokio::test]
async fn the_leader_gets_sigterm_mid_reconcile_and_the_other_replica_converges()
-> anyhow::Result<()> {
    use k8s_openapi::api::coordination::v1::Lease;
    let setup = setup().await?;
    let client = &setup.plane.client().await?;
    let ns = "redis-handover";
    setup.node.namespace(client, ns).await?;
    let leases: Api<Lease> = Api::namespaced(client.clone(), OPERATOR_NAMESPACE);
    let holder = || async {
        Ok::<_, anyhow::Error>(
            leases
                .get_opt("redis-operator-leader")
                .await?
                .and_then(|l| l.spec)
                .and_then(|s| s.holder_identity)
                .filter(|h| !h.is_empty()),
        )
    };
    let leader = e2e::eventually(Duration::from_secs(60), "a leader", || async {
        Ok(holder()
            .await?
            .filter(|h| operator_pod_names(setup.node).contains(h)))
    })
    .await?;
    let clusters = new_cluster(client, ns, json!({"replicas": 3})).await?;
    // The leader is reconciling the new cluster (its children appear) when it gets SIGTERM.
    let maps: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
    e2e::eventually(
        Duration::from_secs(30),
        "the leader reconciling",
        || async { Ok(maps.get_opt("my-redis-config").await?.map(|_| ())) },
    )
    .await?;
    let operator_pods: Api<Pod> = Api::namespaced(client.clone(), OPERATOR_NAMESPACE);
    let terminated = Instant::now();
    operator_pods
        .delete(&leader, &DeleteParams::default())
        .await?;
    // The leader's promise is to release the Lease on SIGTERM; when the other replica then
    // takes it depends on how often that one looks (under load, a CI run saw 14 s).
    e2e::eventually(
        Duration::from_secs(60),
        "the Lease released by the old leader",
        || async { Ok((holder().await?.as_ref() != Some(&leader)).then_some(())) },
    )
    .await?;
    let released = terminated.elapsed();
    let next = e2e::eventually(
        Duration::from_secs(60),
        "another operator pod holding the Lease",
        || async { Ok(holder().await?.filter(|h| *h != leader)) },
    )
    .await?;
    println!(
        "Lease released {:.1} s after SIGTERM, held by {next} {:.1} s after",
        released.as_secs_f64(),
        terminated.elapsed().as_secs_f64()
    );
    // The Lease lasts 15 s: released well before that, or it was only left to expire.
    assert!(
        released < Duration::from_secs(12),
        "the Lease was not released: {released:?}"
    );
    let running = wait_running(setup, &clusters, 3, Duration::from_secs(180)).await?;
    assert_eq!(
        running.status.unwrap().primary.as_deref(),
        Some("my-redis-0")
    );
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    let info = replication(pod_address(&pods, "my-redis-0").await?, NO_AUTH).await?;
    assert_eq!(info.connected_replicas, 2, "{info:?}");

    // Metrics, scraped the way Prometheus does: through the operator's metrics Service.
    let services: Api<Service> = Api::namespaced(client.clone(), OPERATOR_NAMESPACE);
    let ip = services
        .get("redis-operator-metrics")
        .await?
        .spec
        .and_then(|s| s.cluster_ip)
        .context("the metrics Service has no cluster IP")?;
    let body = tokio::task::spawn_blocking(move || -> anyhow::Result<String> {
        use std::io::{Read, Write};
        let mut stream = std::net::TcpStream::connect((ip.as_str(), 8080))?;
        stream.set_read_timeout(Some(Duration::from_secs(5)))?;
        stream.write_all(b"GET /metrics HTTP/1.0\r\nHost: metrics\r\n\r\n")?;
        let mut body = String::new();
        stream.read_to_string(&mut body)?;
        Ok(body)
    })
    .await??;
    assert!(
        body.starts_with("HTTP/1.") && body.contains(" 200 "),
        "{body}"
    );
    assert!(
        body.contains("redis_operator_"),
        "no operator metric in {body}"
    );
    clusters
        .delete("my-redis", &DeleteParams::default())
        .await?;
    Ok(())
}
