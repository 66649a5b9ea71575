//! What the `bundle-tool run` tests and the `run` bench share: the namespace `run` installs
//! into, the labels it puts on what it makes, the command line, and listing those objects.

#![allow(dead_code)] // the two tests and the bench use different parts

use std::path::PathBuf;
use std::process::{Command, Output};
use std::time::Instant;

use kube::api::{Api, ApiResource, DynamicObject, ListParams};

use super::olm_release::{Checkout, static_catalog_server};

pub mod operator_sdk_run;

/// The namespace `run` installs into (the one the Redis checks read).
pub const NAMESPACE: &str = "redis-operator";

/// What every object `run` made for the Redis operator carries.
pub const SELECTOR: &str =
    "app.kubernetes.io/managed-by=bundle-tool-run,bundle-tool.run/package=redis-operator";

/// `bundle-tool ARGS… -n NAMESPACE --kubeconfig KUBECONFIG`, with the static server binary
/// in the catalog images it builds.
pub fn command(kubeconfig: &str, args: &[&str]) -> anyhow::Result<Command> {
    let mut command = Command::new(e2e::bundle_tool_binary());
    command
        .env(
            bundle_tool::image::SERVER_BINARY_VARIABLE,
            static_catalog_server()?,
        )
        .args(args)
        .args(["-n", NAMESPACE, "--kubeconfig", kubeconfig]);
    Ok(command)
}

/// [`command`] run to the end; prints what it said and how long it took.
pub fn bundle_tool(kubeconfig: &str, args: &[&str]) -> anyhow::Result<Output> {
    let started = Instant::now();
    let output = command(kubeconfig, args)?.output()?;
    println!(
        "bundle-tool {} ({:.1} s, {}):\n{}{}",
        args.join(" "),
        started.elapsed().as_secs_f64(),
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    Ok(output)
}

/// A kind to look for: API group, version, kind, plural, and whether it is namespaced.
pub type Kind = (&'static str, &'static str, &'static str, &'static str, bool);

/// Every object of `kinds` (in [`NAMESPACE`] when namespaced) carrying `run`'s labels, as
/// `Kind/name`.
pub async fn labelled(client: &kube::Client, kinds: &[Kind]) -> anyhow::Result<Vec<String>> {
    let mut found = Vec::new();
    for &(group, version, kind, plural, namespaced) in kinds {
        let resource = ApiResource {
            group: group.into(),
            version: version.into(),
            api_version: if group.is_empty() {
                version.into()
            } else {
                format!("{group}/{version}")
            },
            kind: kind.into(),
            plural: plural.into(),
        };
        let api: Api<DynamicObject> = if namespaced {
            Api::namespaced_with(client.clone(), NAMESPACE, &resource)
        } else {
            Api::all_with(client.clone(), &resource)
        };
        for object in api
            .list(&ListParams::default().labels(SELECTOR))
            .await?
            .items
        {
            found.push(format!(
                "{kind}/{}",
                object.metadata.name.unwrap_or_default()
            ));
        }
    }
    Ok(found)
}

/// What a command said: standard output, then standard error.
pub fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// Fails unless `said` names every one of `steps`.
pub fn said_each(said: &str, steps: &[&str]) -> anyhow::Result<()> {
    for step in steps {
        anyhow::ensure!(said.contains(step), "no step {step:?}:\n{said}");
    }
    Ok(())
}

/// The Redis bundle 0.2.0 generated into `checkout`, for `run --upgrade`: its CSV names no
/// `replaces`, so `run` has to add the edge.
pub fn next_bundle(checkout: &Checkout) -> anyhow::Result<PathBuf> {
    let next = checkout.root().join("bundle-0.2.0");
    checkout.bundle_tool(&[
        "generate",
        "--version",
        "0.2.0",
        "--output",
        &next.display().to_string(),
    ])?;
    Ok(next)
}

/// The phase of the ClusterServiceVersion `name` in [`NAMESPACE`]; `None` when there is none.
pub async fn csv_phase(client: &kube::Client, name: &str) -> anyhow::Result<Option<String>> {
    let csvs: Api<DynamicObject> = Api::namespaced_with(
        client.clone(),
        NAMESPACE,
        &e2e::olm_on_node::olm_resource(
            "v1alpha1",
            "ClusterServiceVersion",
            "clusterserviceversions",
        ),
    );
    Ok(csvs
        .get_opt(name)
        .await?
        .and_then(|csv| csv.data["status"]["phase"].as_str().map(str::to_string)))
}
