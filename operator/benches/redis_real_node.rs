//! Issue #17's figures on the real node, ours and the floor in one run:
//! - `kubectl apply` → Ready=True of a 3-replica RedisCluster, against the floor: the same
//!   Secret, ConfigMap, Services and StatefulSet applied directly (replication configured by
//!   the same start script, no operator), until the StatefulSet has 3 ready pods;
//! - failover: primary pod deleted → first write through the client Service that lands on
//!   another server, 10 rounds, with the acknowledged writes (WAIT 1) counted after each;
//! - the operator pods' resident memory at idle.
//!
//! Run: `cargo bench -p redis-operator --bench redis_real_node` (as root, like the tests).

#[path = "../tests/real/mod.rs"]
mod real;

use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams};
use real::*;
use redis_operator::api::v1::RedisCluster;
use redis_operator::resources;
use serde_json::json;

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(|a, b| a.partial_cmp(b).expect("no NaN"));
    values[values.len() / 2]
}

async fn floor_once(setup: &Setup, client: &kube::Client, ns: &str) -> anyhow::Result<f64> {
    setup.node.namespace(client, ns).await?;
    let mut cluster: RedisCluster = serde_json::from_value(json!({
        "apiVersion": "cache.example.com/v1", "kind": "RedisCluster",
        "metadata": {"name": "my-redis", "namespace": ns, "uid": "00000000-0000-0000-0000-000000000001"},
        "spec": {"replicas": 3},
    }))?;
    cluster.metadata.namespace = Some(ns.into());
    let strip = |mut v: serde_json::Value| {
        v["metadata"]
            .as_object_mut()
            .expect("metadata")
            .remove("ownerReferences");
        v
    };
    let objects = vec![
        strip(serde_json::to_value(resources::replication_secret(
            &cluster,
            "floor-password",
        ))?),
        strip(serde_json::to_value(resources::config_map(
            &cluster,
            "my-redis-0",
            "",
        ))?),
        strip(serde_json::to_value(resources::headless_service(&cluster))?),
        strip(serde_json::to_value(resources::client_service(&cluster))?),
        strip(serde_json::to_value(resources::replicas_service(&cluster))?),
        strip(serde_json::to_value(resources::stateful_set(
            &cluster,
            &resources::SetInputs {
                replicas: 3,
                password_version: None,
            },
        ))?),
    ];
    // The image the operator would pick (its RELATED_IMAGE_REDIS_7_2 in the Deployment).
    let mut objects = objects;
    if let Some(set) = objects.last_mut() {
        set["spec"]["template"]["spec"]["containers"][0]["image"] =
            json!(setup.redis_images["7.2"]);
    }
    let started = Instant::now();
    e2e::apply_objects(client, &objects).await?;
    let sets: Api<StatefulSet> = Api::namespaced(client.clone(), ns);
    e2e::eventually(
        Duration::from_secs(180),
        "the floor's 3 pods ready",
        || async {
            let set = sets.get("my-redis").await?;
            Ok((set.status.and_then(|s| s.ready_replicas) == Some(3)).then_some(()))
        },
    )
    .await
    .map_err(|e| {
        let pods = setup
            .node
            .kubectl(&["describe", "pods", "-n", ns])
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default();
        anyhow::anyhow!("{e:#}\n{pods}")
    })?;
    let took = started.elapsed().as_secs_f64();
    // Its pods' CPU requests would otherwise keep later rounds from being scheduled.
    sets.delete("my-redis", &DeleteParams::default()).await?;
    pods_gone(client, ns).await?;
    Ok(took)
}

async fn pods_gone(client: &kube::Client, ns: &str) -> anyhow::Result<()> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    e2e::eventually(
        Duration::from_secs(120),
        "the round's pods gone",
        || async {
            Ok(pods
                .list(&Default::default())
                .await?
                .items
                .is_empty()
                .then_some(()))
        },
    )
    .await
}

async fn ours_once(setup: &Setup, client: &kube::Client, ns: &str) -> anyhow::Result<f64> {
    setup.node.namespace(client, ns).await?;
    let started = Instant::now();
    let clusters = new_cluster(client, ns, json!({"replicas": 3})).await?;
    wait_running(setup, &clusters, 3, Duration::from_secs(180)).await?;
    let took = started.elapsed().as_secs_f64();
    clusters
        .delete("my-redis", &DeleteParams::default())
        .await?;
    pods_gone(client, ns).await?;
    Ok(took)
}

fn rss_mib(pid: u32) -> Option<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let kib: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kib / 1024.0)
}

fn main() -> anyhow::Result<()> {
    let runtime = tokio::runtime::Runtime::new()?;
    runtime.block_on(async {
        let setup = setup().await?;
        let client = setup.plane.client().await?;
        let (mut floor, mut ours) = (Vec::new(), Vec::new());
        // Interleaved, so that a slower stretch of the machine hits both.
        for round in 0..3 {
            floor.push(floor_once(setup, &client, &format!("bench-floor-{round}")).await?);
            ours.push(ours_once(setup, &client, &format!("bench-ours-{round}")).await?);
        }
        let (f, o) = (median(floor.clone()), median(ours.clone()));
        println!("apply → ready, 3 replicas: floor {floor:.2?} s (median {f:.2}), ours {ours:.2?} s (median {o:.2}); ratio {:.2}", o / f);

        let ns = "bench-failover";
        setup.node.namespace(&client, ns).await?;
        let clusters = new_cluster(&client, ns, json!({"replicas": 3})).await?;
        wait_running(setup, &clusters, 3, Duration::from_secs(180)).await?;
        let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
        let service = service_address(&client, ns, "my-redis").await?;
        let (mut times, mut lost, mut written) = (Vec::new(), 0usize, 0usize);
        for round in 0..10 {
            let keys = write_acknowledged(service, NO_AUTH, &format!("round-{round}"), 20).await?;
            written += keys.len();
            let primary = primary_of(&clusters).await?;
            let old_run = run_id(pod_address(&pods, &primary).await?, NO_AUTH).await?;
            pods.delete(&primary, &DeleteParams::default()).await?;
            let took = first_write(service, NO_AUTH, &format!("after-{round}"), &old_run).await?;
            times.push(took.as_secs_f64());
            let next = wait_failover(setup, &clusters, &primary).await?;
            let address = pod_address(&pods, &next).await?;
            for key in &keys {
                if redis(address, NO_AUTH, &["GET", key]).await.ok().as_deref() != Some(key.as_str()) {
                    lost += 1;
                }
            }
            wait_running(setup, &clusters, 3, Duration::from_secs(180)).await?;
        }
        let mut sorted = times.clone();
        sorted.sort_by(|a, b| a.partial_cmp(b).expect("no NaN"));
        println!(
            "failover, primary pod deleted → first write on the new primary: median {:.2} s, max {:.2} s over {} rounds; acknowledged writes lost: {lost} of {written}",
            median(times.clone()),
            sorted[sorted.len() - 1],
            times.len()
        );

        tokio::time::sleep(Duration::from_secs(20)).await;
        for entry in std::fs::read_dir("/proc")?.flatten() {
            let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else { continue };
            let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
            if comm.trim() == "redis-operator"
                && let Some(rss) = rss_mib(pid)
            {
                println!("operator pod process {pid}: {rss:.1} MiB resident after 20 s idle");
            }
        }
        clusters.delete("my-redis", &DeleteParams::default()).await?;
        Ok(())
    })
}
