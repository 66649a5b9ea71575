//! The operator as users run it, on the real node: the operator is a pod from its own image
//! (this build's binary) under its generated RBAC, and each RedisCluster runs Debian's
//! redis-server in real pods. Replication, failover, rolling updates and passwords are checked
//! against what the Redis servers themselves say, over the pod network.

mod real;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use k8s_openapi::api::apps::v1::{Deployment, StatefulSet};
use k8s_openapi::api::core::v1::{ConfigMap, PersistentVolumeClaim, Pod, Secret, Service};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use real::*;
use redis_operator::redis::Role;
use serde_json::json;

/// How long a failover may take, from the primary's loss to a write on another server and
/// the new primary in status: docs/benchmarks.md measured 0.7-2.0 s after a pod's deletion
/// and 1.7-3.6 s after a SIGKILL (a 5 s unanswered threshold at most); the rest is room for
/// a loaded machine. A failover that does not happen fails here, not at a longer ceiling.
const FAILOVER_BOUND: Duration = Duration::from_secs(25);

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
    // One real node: the default anti-affinity is only preferred, so all three pods run there,
    // and status says the cluster is not spread.
    let spread = status
        .conditions
        .iter()
        .find(|c| c.type_ == "SpreadOverNodes")
        .context("the SpreadOverNodes condition")?;
    assert_eq!(
        (spread.status.as_str(), spread.reason.as_str()),
        ("False", "AllPodsOnOneNode"),
        "{}",
        spread.message
    );
    assert!(
        spread.message.contains(e2e::node::NODE_NAME),
        "{} names the node",
        spread.message
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
    let took =
        first_write_within(service, NO_AUTH, "after-delete", &old_run, FAILOVER_BOUND).await?;
    println!(
        "primary pod deleted → first write through the client Service: {:.2} s",
        took.as_secs_f64()
    );
    assert!(
        took < FAILOVER_BOUND,
        "the first write after the primary's pod was deleted took {took:?} (bound {FAILOVER_BOUND:?})"
    );
    let new_primary =
        wait_failover_within(setup, &clusters, "my-redis-0", deleted_at, FAILOVER_BOUND).await?;
    println!(
        "primary pod deleted → {new_primary} the primary in status: {:.2} s",
        deleted_at.elapsed().as_secs_f64()
    );
    let new_address = pod_address(&pods, &new_primary).await?;
    all_present(new_address, NO_AUTH, &keys).await?;
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
    let killed_at = Instant::now();
    // SAFETY: kill(2) on a pid read from /proc; at worst it is gone already.
    let killed = unsafe { libc::kill(pids[0] as i32, libc::SIGKILL) };
    anyhow::ensure!(
        killed == 0,
        "kill {}: {}",
        pids[0],
        std::io::Error::last_os_error()
    );
    let took = first_write_within(service, NO_AUTH, "after-kill", &old_run, FAILOVER_BOUND).await?;
    println!(
        "primary's Redis killed → first write through the client Service: {:.2} s",
        took.as_secs_f64()
    );
    assert!(
        took < FAILOVER_BOUND,
        "the first write after the primary's Redis was killed took {took:?} (bound {FAILOVER_BOUND:?})"
    );
    let after_kill =
        wait_failover_within(setup, &clusters, &victim, killed_at, FAILOVER_BOUND).await?;
    println!(
        "primary's Redis killed → {after_kill} the primary in status: {:.2} s",
        killed_at.elapsed().as_secs_f64()
    );
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
    // A pod is being replaced from the moment its old pod is terminating or gone until its
    // new pod is Ready; the promise is that this is never more than one pod at once.
    let mut most_in_flight: Vec<String> = Vec::new();
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
        let in_flight = being_replaced(&uids_before, &list);
        anyhow::ensure!(
            in_flight.len() <= 1,
            "more than one pod replaced at once in the rolling update: {in_flight:?} (order so far {order:?})"
        );
        if in_flight.len() > most_in_flight.len() {
            most_in_flight = in_flight;
        }
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
        "rolling update order: {order:?} (primary before: {primary_before}); at most {} pod replaced at once, {:.1} s",
        most_in_flight.len(),
        rolled.elapsed().as_secs_f64()
    );
    // Each replacement takes seconds (a new pod, its probe): reads every 200 ms that never
    // saw one would make the bound above hold for nothing.
    assert_eq!(
        most_in_flight.len(),
        1,
        "no read saw a pod being replaced: the one-at-a-time check saw nothing"
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

    // 6. Deletion: the finalizer removes the claims; nothing the cluster owned is left. The
    // claims are named as the StatefulSet makes them (`<template>-<set>-<ordinal>`, for every
    // ordinal the cluster had: a scale-down keeps them), not found by the label the
    // operator's cleanup selects them with, so that a claim without it is found left behind.
    let sets: Api<StatefulSet> = Api::namespaced(client.clone(), ns);
    let templates: Vec<String> = sets
        .get("my-redis")
        .await?
        .spec
        .and_then(|s| s.volume_claim_templates)
        .into_iter()
        .flatten()
        .filter_map(|t| t.metadata.name)
        .collect();
    anyhow::ensure!(
        !templates.is_empty(),
        "the StatefulSet has no volumeClaimTemplate for spec.persistence"
    );
    let claim_names: Vec<String> = templates
        .iter()
        .flat_map(|t| (0..5).map(move |ordinal| format!("{t}-my-redis-{ordinal}")))
        .collect();
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), ns);
    for name in &claim_names {
        anyhow::ensure!(
            claims.get_opt(name).await?.is_some(),
            "the claim {name} does not exist before the deletion (claims: {:?})",
            names(claims.list(&ListParams::default()).await?.items)
        );
    }
    clusters
        .delete("my-redis", &DeleteParams::default())
        .await?;
    let maps: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
    let services: Api<Service> = Api::namespaced(client.clone(), ns);
    let secrets: Api<Secret> = Api::namespaced(client.clone(), ns);
    // The namespace holds this cluster only: everything in it but what Kubernetes puts in
    // every namespace (the root CA ConfigMap) must go, whatever its labels.
    let every = ListParams::default();
    let budgets: Api<PodDisruptionBudget> = Api::namespaced(client.clone(), ns);
    let last_left = std::sync::Mutex::new(Vec::new());
    e2e::eventually(
        Duration::from_secs(120),
        "every object of the cluster gone",
        || async {
            let mut left = Vec::new();
            for name in &claim_names {
                if claims.get_opt(name).await?.is_some() {
                    left.push(format!("PersistentVolumeClaim/{name}"));
                }
            }
            left.extend(kinded(
                "PersistentVolumeClaim",
                claims.list(&every).await?.items,
            ));
            left.extend(kinded("Pod", pods.list(&every).await?.items));
            left.extend(kinded("StatefulSet", sets.list(&every).await?.items));
            left.extend(kinded("Service", services.list(&every).await?.items));
            left.extend(kinded("Secret", secrets.list(&every).await?.items));
            left.extend(kinded(
                "PodDisruptionBudget",
                budgets.list(&every).await?.items,
            ));
            left.extend(
                kinded("ConfigMap", maps.list(&every).await?.items)
                    .into_iter()
                    .filter(|m| m != "ConfigMap/kube-root-ca.crt"),
            );
            if clusters.get_opt("my-redis").await?.is_some() {
                left.push("RedisCluster/my-redis".into());
            }
            left.sort();
            left.dedup();
            let gone = left.is_empty();
            *last_left.lock().expect("no panics holding it") = left;
            Ok(gone.then_some(()))
        },
    )
    .await
    .map_err(|e| {
        let left = last_left.lock().expect("no panics holding it").clone();
        with_logs(setup.node)(e.context(format!("left: {left:?}")))
    })?;
    Ok(())
}

/// The names of `objects`.
fn names<K: kube::Resource>(objects: Vec<K>) -> Vec<String> {
    objects
        .into_iter()
        .filter_map(|o| o.meta().name.clone())
        .collect()
}

/// `Kind/name` of each of `objects`.
fn kinded<K: kube::Resource>(kind: &str, objects: Vec<K>) -> Vec<String> {
    names(objects)
        .into_iter()
        .map(|name| format!("{kind}/{name}"))
        .collect()
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
    // Probes run every 2 s: look for 5 s so that their processes are caught too. Every scan
    // must have read the command lines of processes (not merely listed /proc), among them
    // the Redis servers' and the operator's, or it proves nothing.
    let scanned = Instant::now();
    let mut scans = 0usize;
    let mut least = usize::MAX;
    let mut programs = std::collections::BTreeSet::new();
    while scanned.elapsed() < Duration::from_secs(5) {
        let scan = scan_cmdlines(std::path::Path::new("/proc"), &[first.as_str()]);
        assert!(scan.found.is_empty(), "the password is in {:?}", scan.found);
        least = least.min(scan.processes);
        programs.extend(scan.programs);
        scans += 1;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    println!("argv scan: {scans} scans of /proc, at least {least} command lines read in each");
    assert!(
        scans >= 10 && least >= 10,
        "the scan read too little: {scans} scans, one read only {least} command lines"
    );
    for program in ["redis-server", "redis-operator"] {
        assert!(
            programs.contains(program),
            "the scan never read a command line of {program}: {programs:?}"
        );
    }
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
    // The pods' Events so far (scheduled, pulled, started: the operator records none for a
    // plain start).
    no_event_holds(client, ns, &[first.as_str()], None).await?;

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
    let found = scan_cmdlines(
        std::path::Path::new("/proc"),
        &[first.as_str(), second.as_str()],
    );
    assert!(found.found.is_empty(), "a password is in {:?}", found.found);

    // Every log the cluster wrote (each process's, the audit log, every container's: the
    // Redis pods', the exporters', the operator's), with both passwords as written and as a
    // Secret's data carries them; and the custom resource's status.
    use base64::Engine as _;
    let b64 = |p: &str| base64::engine::general_purpose::STANDARD.encode(p);
    let needles = vec![first.clone(), second.clone(), b64(&first), b64(&second)];
    let needle_refs: Vec<&str> = needles.iter().map(String::as_str).collect();
    // The new password rolled the pods: the operator's Events of that roll too.
    no_event_holds(client, ns, &needle_refs, Some("redis-operator")).await?;
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
    let survivor = {
        let others: Vec<String> = operator_pod_names(setup.node)
            .into_iter()
            .filter(|p| *p != leader)
            .collect();
        anyhow::ensure!(
            others.len() == 1,
            "one operator pod besides the leader {leader}: {others:?}"
        );
        others[0].clone()
    };
    let operator_pods: Api<Pod> = Api::namespaced(client.clone(), OPERATOR_NAMESPACE);
    // The leader is ended by a scale-down of the Deployment, not a pod deletion: a deleted
    // pod gets a replacement, which starts by taking the released Lease at once, while the
    // other replica only looks again when the Lease it last read would expire. The lowest
    // deletion cost makes the ReplicaSet end the leader; the survivor is then the only one
    // that can take over.
    for (pod, cost) in [(&leader, "-1000"), (&survivor, "1000")] {
        operator_pods
            .patch(
                pod,
                &PatchParams::default(),
                &Patch::Merge(json!({"metadata": {"annotations": {
                    "controller.kubernetes.io/pod-deletion-cost": cost
                }}})),
            )
            .await?;
    }
    let clusters = new_cluster(client, ns, json!({"replicas": 3})).await?;
    // The leader is reconciling the new cluster (its first children appear) when it gets
    // SIGTERM.
    let maps: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
    e2e::eventually(
        Duration::from_secs(30),
        "the leader reconciling",
        || async { Ok(maps.get_opt("my-redis-config").await?.map(|_| ())) },
    )
    .await?;
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), OPERATOR_NAMESPACE);
    let scale = |replicas: i32| {
        let deployments = deployments.clone();
        async move {
            deployments
                .patch(
                    "redis-operator",
                    &PatchParams::default(),
                    &Patch::Merge(json!({"spec": {"replicas": replicas}})),
                )
                .await
        }
    };
    let terminated = Instant::now();
    scale(1).await?;
    let ended = e2e::eventually(
        Duration::from_secs(30),
        "an operator pod terminating after the scale-down",
        || async {
            for pod in [&leader, &survivor] {
                let gone = operator_pods
                    .get_opt(pod)
                    .await?
                    .is_none_or(|p| p.metadata.deletion_timestamp.is_some());
                if gone {
                    return Ok(Some(pod.clone()));
                }
            }
            Ok(None)
        },
    )
    .await?;
    anyhow::ensure!(
        ended == leader,
        "the scale-down ended {ended}, not the leader {leader}"
    );
    // Mid-reconcile: the cluster the leader was working on is not done when it is told to
    // stop (the pods' start and probes take seconds after the ConfigMap).
    let at_sigterm = clusters.get("my-redis").await?;
    anyhow::ensure!(
        !is_running(&at_sigterm, 3),
        "the cluster was already Running when the leader got SIGTERM: nothing was mid-reconcile ({:?})",
        at_sigterm.status
    );
    // The leader's promise is to release the Lease on SIGTERM; when the survivor then takes
    // it depends on when it looks again (under load, a CI run saw 14 s).
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
    anyhow::ensure!(
        next == survivor,
        "the Lease went to {next}, not to the surviving replica {survivor}"
    );
    // The Lease lasts 15 s: released well before that, or it was only left to expire.
    assert!(
        released < Duration::from_secs(12),
        "the Lease was not released: {released:?}"
    );
    // The survivor converges the cluster its predecessor left half done.
    let running = wait_running(setup, &clusters, 3, Duration::from_secs(180)).await?;
    anyhow::ensure!(
        holder().await?.as_ref() == Some(&survivor),
        "the cluster converged, but {survivor} no longer holds the Lease"
    );
    scale(2).await?;
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

/// The pods of `before` (name → uid before a rolling update) being replaced in `now`: the old
/// pod terminating or gone, or a new pod not Ready yet.
fn being_replaced(before: &BTreeMap<String, String>, now: &[Pod]) -> Vec<String> {
    before
        .iter()
        .filter(|(name, uid)| {
            let Some(pod) = now
                .iter()
                .find(|p| p.metadata.name.as_deref() == Some(name.as_str()))
            else {
                return true;
            };
            let ready = pod
                .status
                .as_ref()
                .and_then(|s| s.conditions.as_ref())
                .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"));
            if pod.metadata.uid.as_ref() == Some(*uid) {
                pod.metadata.deletion_timestamp.is_some()
            } else {
                !ready
            }
        })
        .map(|(name, _)| name.clone())
        .collect()
}

/// Fails if an Event in any namespace (the cluster's, the operator's, any other) holds one of
/// `needles` anywhere in it, or if there is no Event in `ns` (recorded by `reporter`, when
/// given) to look in: an empty list would pass for nothing.
async fn no_event_holds(
    client: &kube::Client,
    ns: &str,
    needles: &[&str],
    reporter: Option<&str>,
) -> anyhow::Result<()> {
    use k8s_openapi::api::events::v1::Event;
    let all: Vec<Event> = Api::<Event>::all(client.clone())
        .list(&ListParams::default())
        .await?
        .items;
    let in_ns = all
        .iter()
        .filter(|e| {
            e.metadata.namespace.as_deref() == Some(ns)
                && reporter.is_none_or(|r| e.reporting_controller.as_deref() == Some(r))
        })
        .count();
    anyhow::ensure!(
        in_ns > 0,
        "no Event in {ns} recorded by {} (of {} Events in all namespaces): nothing to look for the password in",
        reporter.unwrap_or("anyone"),
        all.len()
    );
    for event in &all {
        let text = serde_json::to_string(event)?;
        for needle in needles {
            anyhow::ensure!(
                !text.contains(needle),
                "the Event {}/{} holds a password",
                event.metadata.namespace.as_deref().unwrap_or_default(),
                event.metadata.name.as_deref().unwrap_or_default()
            );
        }
    }
    println!(
        "Events: {} in all namespaces read, {in_ns} in {ns} recorded by {}",
        all.len(),
        reporter.unwrap_or("anyone")
    );
    Ok(())
}

#[test]
fn the_argv_scan_counts_processes_not_entries_of_proc() {
    let proc_root = tempfile::tempdir().unwrap();
    let process = |pid: &str, argv: &[u8]| {
        let dir = proc_root.path().join(pid);
        std::fs::create_dir(&dir).unwrap();
        std::fs::write(dir.join("cmdline"), argv).unwrap();
    };
    // What /proc holds besides processes: many entries, no command line among them.
    for entry in ["self", "sys", "net", "thread-self", "meminfo", "cgroups"] {
        std::fs::create_dir(proc_root.path().join(entry)).unwrap();
    }
    let nothing = scan_cmdlines(proc_root.path(), &["secret"]);
    assert_eq!(nothing.processes, 0, "{nothing:?}");
    assert!(nothing.programs.is_empty(), "{nothing:?}");

    process("1", b"/usr/bin/redis-server *:6379\0\0\0");
    process("7", b"/redis-operator\0run\0--password=secret\0");
    process("9", b"");
    std::fs::create_dir(proc_root.path().join("12")).unwrap();
    let scan = scan_cmdlines(proc_root.path(), &["secret"]);
    assert_eq!(scan.processes, 2, "{scan:?}");
    assert_eq!(
        scan.programs.iter().map(String::as_str).collect::<Vec<_>>(),
        ["redis-operator", "redis-server"]
    );
    assert_eq!(scan.found.len(), 1, "{scan:?}");
    assert!(scan.found[0].contains("/7/cmdline"), "{scan:?}");
}
