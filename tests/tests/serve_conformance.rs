//! `bundle-tool serve` against `opm serve` v1.73.0 on the same catalog — every corpus catalog
//! and the Redis operator's catalog merged into one folder — RPC by RPC: ListPackages,
//! GetPackage for each package, the whole ListBundles stream (order included), GetBundle and
//! GetBundleForChannel for every channel entry and head, GetChannelEntriesThatReplace and
//! GetBundleThatReplaces for every bundle, the provider RPCs for every provided GVK, and the
//! error cases (same code and text).
//!
//! Where opm's order comes from Go map iteration (ListPackages, the channel-entry streams),
//! streams are compared as multisets; where opm picks among several answers at random
//! (GetBundleThatReplaces with more than one replacing bundle), ours must be one of them.
//! `csvJson` and `object` are compared as JSON documents (docs/conformance.md).

// GetBundleForChannel is deprecated in the API, yet packageserver still calls it.
#![allow(deprecated)]

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use bundle_tool::serve::api::{self, registry_client::RegistryClient};
use e2e::registry_server::{RegistryServer, ServerKind};
use serde_json::Value;
use tonic::transport::Channel;

type Client = RegistryClient<Channel>;

fn merged_corpus(into: &Path) {
    let catalogs = e2e::corpus::catalogs();
    assert_eq!(catalogs.len(), 39, "the corpus has 39 catalogs");
    for dir in catalogs {
        let name = dir.file_name().unwrap();
        e2e::copy_dir(&dir, &into.join(name)).unwrap();
    }
    // The Redis operator's own catalog: its bundles carry olm.bundle.object manifests.
    let redis = Path::new(env!("CARGO_MANIFEST_DIR")).join("../catalog/redis-operator");
    e2e::copy_dir(&redis, &into.join("redis-operator")).unwrap();
}

/// A bundle with its JSON strings parsed, for comparison.
fn comparable(mut bundle: api::Bundle) -> (api::Bundle, Value, Vec<Value>) {
    let parse = |text: &str| -> Value {
        if text.is_empty() {
            Value::Null
        } else {
            serde_json::from_str(text)
                .unwrap_or_else(|e| panic!("not JSON ({e}): {}", &text[..text.len().min(200)]))
        }
    };
    let csv = parse(&std::mem::take(&mut bundle.csv_json));
    let objects = std::mem::take(&mut bundle.object)
        .iter()
        .map(|o| parse(o))
        .collect();
    (bundle, csv, objects)
}

fn assert_same_bundle(what: &str, ours: api::Bundle, theirs: api::Bundle) {
    let (ours, our_csv, our_objects) = comparable(ours);
    let (theirs, their_csv, their_objects) = comparable(theirs);
    if ours != theirs {
        // The messages are long: show only the lines that differ.
        let (a, b) = (format!("{ours:#?}"), format!("{theirs:#?}"));
        let diff: Vec<String> = a
            .lines()
            .zip(b.lines())
            .filter(|(x, y)| x != y)
            .take(10)
            .map(|(x, y)| format!("  ours:   {x}\n  opm's:  {y}"))
            .collect();
        panic!("{what}: bundle fields differ\n{}", diff.join("\n"));
    }
    if let Some(difference) = first_difference(&our_csv, &their_csv, "csvJson") {
        panic!("{what}: {difference}");
    }
    let (ours, theirs) = (Value::Array(our_objects), Value::Array(their_objects));
    if let Some(difference) = first_difference(&ours, &theirs, "object") {
        panic!("{what}: {difference}");
    }
}

/// Where two JSON documents first differ, as a path with both values (shortened).
fn first_difference(ours: &Value, theirs: &Value, path: &str) -> Option<String> {
    match (ours, theirs) {
        (Value::Object(a), Value::Object(b)) => {
            // Each key once: visiting the shared keys from both sides doubled the work at every
            // level, 2^depth on the CRD schemas of olm.bundle.object (minutes on the scheduling
            // fields' deep affinity schemas).
            for key in a.keys().chain(b.keys().filter(|k| !a.contains_key(*k))) {
                let (x, y) = (a.get(key), b.get(key));
                let here = format!("{path}.{key}");
                match (x, y) {
                    (Some(x), Some(y)) => {
                        if let Some(d) = first_difference(x, y, &here) {
                            return Some(d);
                        }
                    }
                    _ => return Some(format!("{here}: ours {x:?}, opm's {y:?}")),
                }
            }
            None
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => a
            .iter()
            .zip(b)
            .enumerate()
            .find_map(|(i, (x, y))| first_difference(x, y, &format!("{path}[{i}]"))),
        _ if ours == theirs => None,
        _ => {
            let short = |v: &Value| v.to_string().chars().take(300).collect::<String>();
            Some(format!(
                "{path}: ours {}, opm's {}",
                short(ours),
                short(theirs)
            ))
        }
    }
}

type Answer<T> = Result<T, (tonic::Code, String)>;

fn answer<T>(result: Result<tonic::Response<T>, tonic::Status>) -> Answer<T> {
    result
        .map(tonic::Response::into_inner)
        .map_err(|s| (s.code(), s.message().to_string()))
}

async fn collect<T>(
    result: Result<tonic::Response<tonic::Streaming<T>>, tonic::Status>,
) -> Answer<Vec<T>> {
    let mut stream = answer(result)?;
    let mut items = Vec::new();
    loop {
        match stream.message().await {
            Ok(Some(item)) => items.push(item),
            Ok(None) => return Ok(items),
            Err(status) => return Err((status.code(), status.message().to_string())),
        }
    }
}

fn sorted_entries(entries: Answer<Vec<api::ChannelEntry>>) -> Answer<Vec<String>> {
    entries.map(|list| {
        let mut keys: Vec<String> = list
            .iter()
            .map(|e| {
                format!(
                    "{}/{}/{}/{}",
                    e.package_name, e.channel_name, e.bundle_name, e.replaces
                )
            })
            .collect();
        keys.sort();
        keys
    })
}

struct Pair {
    ours: Client,
    theirs: Client,
}

impl Pair {
    /// Asks ours three times: the first answer is built, the second is built and kept, the
    /// third comes from what was kept (in memory, or in the spill file once the memory budget
    /// is spent); each must be opm's.
    async fn bundle(&mut self, what: &str, request: api::GetBundleRequest) {
        let theirs = answer(self.theirs.get_bundle(request.clone()).await);
        for time in ["first", "second", "third"] {
            let ours = answer(self.ours.get_bundle(request.clone()).await);
            let what = format!("{what} ({time} time)");
            match (ours, theirs.clone()) {
                (Ok(a), Ok(b)) => assert_same_bundle(&what, a, b),
                (a, b) => assert_eq!(a.err(), b.err(), "{what}"),
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_answers_every_rpc_like_opm_serve_on_the_corpus() {
    let catalog = tempfile::tempdir().unwrap();
    merged_corpus(catalog.path());
    let opm = RegistryServer::start(
        ServerKind::Opm,
        catalog.path(),
        &[],
        Duration::from_secs(300),
    )
    .await
    .unwrap();
    // A memory budget for repeated bundles smaller than the corpus's (~24 MB of CSVs), so
    // that answers kept in memory and answers kept in the spill file are both compared.
    let ours = RegistryServer::start(
        ServerKind::BundleTool,
        catalog.path(),
        &["--answer-memory-mib", "8"],
        Duration::from_secs(60),
    )
    .await
    .unwrap();
    println!(
        "start-up to SERVING: opm {:?}, bundle-tool {:?}",
        opm.startup, ours.startup
    );
    let mut pair = Pair {
        ours: ours.client().await.unwrap(),
        theirs: opm.client().await.unwrap(),
    };

    // ListPackages: opm's order is Go map order, so compare sets.
    let mut our_packages: Vec<String> =
        collect(pair.ours.list_packages(api::ListPackageRequest {}).await)
            .await
            .unwrap()
            .into_iter()
            .map(|p| p.name)
            .collect();
    let mut their_packages: Vec<String> =
        collect(pair.theirs.list_packages(api::ListPackageRequest {}).await)
            .await
            .unwrap()
            .into_iter()
            .map(|p| p.name)
            .collect();
    our_packages.sort();
    their_packages.sort();
    assert_eq!(our_packages, their_packages);
    assert_eq!(our_packages.len(), 40);

    // GetPackage, and the missing-package error.
    let mut packages = Vec::new();
    for name in &our_packages {
        let request = api::GetPackageRequest { name: name.clone() };
        let ours = answer(pair.ours.get_package(request.clone()).await).unwrap();
        let theirs = answer(pair.theirs.get_package(request).await).unwrap();
        assert_eq!(ours, theirs, "GetPackage {name}");
        packages.push(ours);
    }
    let missing = api::GetPackageRequest {
        name: "no-such-package".into(),
    };
    assert_eq!(
        answer(pair.ours.get_package(missing.clone()).await).err(),
        answer(pair.theirs.get_package(missing).await).err()
    );

    // ListBundles, in order.
    let our_list = collect(pair.ours.list_bundles(api::ListBundlesRequest {}).await)
        .await
        .unwrap();
    let their_list = collect(pair.theirs.list_bundles(api::ListBundlesRequest {}).await)
        .await
        .unwrap();
    assert_eq!(our_list.len(), their_list.len(), "ListBundles length");
    for (i, (a, b)) in our_list.iter().zip(&their_list).enumerate() {
        assert_same_bundle(
            &format!("ListBundles[{i}] {}", b.csv_name),
            a.clone(),
            b.clone(),
        );
    }
    println!(
        "ListBundles: {} bundles in {} packages agree",
        our_list.len(),
        packages.len()
    );

    // Every channel entry: GetBundle; every channel: GetBundleForChannel.
    for b in &their_list {
        pair.bundle(
            &format!(
                "GetBundle {}/{}/{}",
                b.package_name, b.channel_name, b.csv_name
            ),
            api::GetBundleRequest {
                pkg_name: b.package_name.clone(),
                channel_name: b.channel_name.clone(),
                csv_name: b.csv_name.clone(),
            },
        )
        .await;
    }
    for package in &packages {
        for channel in &package.channels {
            let request = api::GetBundleInChannelRequest {
                pkg_name: package.name.clone(),
                channel_name: channel.name.clone(),
            };
            let ours = answer(pair.ours.get_bundle_for_channel(request.clone()).await).unwrap();
            let theirs = answer(pair.theirs.get_bundle_for_channel(request).await).unwrap();
            assert_same_bundle(
                &format!("GetBundleForChannel {}/{}", package.name, channel.name),
                ours,
                theirs,
            );
        }
    }

    // Replacements: every bundle name.
    let mut replacers: BTreeMap<(String, String, String), Vec<String>> = BTreeMap::new();
    for b in &their_list {
        for target in std::iter::once(&b.replaces).chain(&b.skips) {
            replacers
                .entry((
                    b.package_name.clone(),
                    b.channel_name.clone(),
                    target.clone(),
                ))
                .or_default()
                .push(b.csv_name.clone());
        }
    }
    for b in &their_list {
        let request = api::GetAllReplacementsRequest {
            csv_name: b.csv_name.clone(),
        };
        let ours = sorted_entries(
            collect(
                pair.ours
                    .get_channel_entries_that_replace(request.clone())
                    .await,
            )
            .await,
        );
        let theirs = sorted_entries(
            collect(pair.theirs.get_channel_entries_that_replace(request).await).await,
        );
        assert_eq!(ours, theirs, "GetChannelEntriesThatReplace {}", b.csv_name);

        let request = api::GetReplacementRequest {
            csv_name: b.csv_name.clone(),
            pkg_name: b.package_name.clone(),
            channel_name: b.channel_name.clone(),
        };
        let ours = answer(pair.ours.get_bundle_that_replaces(request.clone()).await);
        let theirs = answer(pair.theirs.get_bundle_that_replaces(request).await);
        let candidates = replacers
            .get(&(
                b.package_name.clone(),
                b.channel_name.clone(),
                b.csv_name.clone(),
            ))
            .cloned()
            .unwrap_or_default();
        match (ours, theirs) {
            (Ok(a), Ok(t)) if candidates.len() == 1 => {
                assert_same_bundle(&format!("GetBundleThatReplaces {}", b.csv_name), a, t)
            }
            (Ok(a), Ok(t)) => {
                assert!(candidates.contains(&a.csv_name) && candidates.contains(&t.csv_name))
            }
            (a, t) => assert_eq!(a.err(), t.err(), "GetBundleThatReplaces {}", b.csv_name),
        }
    }

    // Providers: every provided GVK, and one nobody provides.
    let mut gvks: Vec<(String, String, String)> = their_list
        .iter()
        .flat_map(|b| &b.provided_apis)
        .map(|g| (g.group.clone(), g.version.clone(), g.kind.clone()))
        .collect();
    gvks.sort();
    gvks.dedup();
    gvks.push(("nobody.example.com".into(), "v1".into(), "Nothing".into()));
    for (group, version, kind) in &gvks {
        let all = api::GetAllProvidersRequest {
            group: group.clone(),
            version: version.clone(),
            kind: kind.clone(),
            plural: String::new(),
        };
        let ours = sorted_entries(
            collect(
                pair.ours
                    .get_channel_entries_that_provide(all.clone())
                    .await,
            )
            .await,
        );
        let theirs =
            sorted_entries(collect(pair.theirs.get_channel_entries_that_provide(all).await).await);
        assert_eq!(
            ours, theirs,
            "GetChannelEntriesThatProvide {group}/{version}/{kind}"
        );

        let latest = api::GetLatestProvidersRequest {
            group: group.clone(),
            version: version.clone(),
            kind: kind.clone(),
            plural: String::new(),
        };
        let ours = sorted_entries(
            collect(
                pair.ours
                    .get_latest_channel_entries_that_provide(latest.clone())
                    .await,
            )
            .await,
        );
        let theirs = sorted_entries(
            collect(
                pair.theirs
                    .get_latest_channel_entries_that_provide(latest)
                    .await,
            )
            .await,
        );
        assert_eq!(
            ours, theirs,
            "GetLatestChannelEntriesThatProvide {group}/{version}/{kind}"
        );

        let default = api::GetDefaultProviderRequest {
            group: group.clone(),
            version: version.clone(),
            kind: kind.clone(),
            plural: String::new(),
        };
        let ours = answer(
            pair.ours
                .get_default_bundle_that_provides(default.clone())
                .await,
        );
        let theirs = answer(pair.theirs.get_default_bundle_that_provides(default).await);
        match (ours, theirs) {
            (Ok(a), Ok(t)) => assert_same_bundle(
                &format!("GetDefaultBundleThatProvides {group}/{version}/{kind}"),
                a,
                t,
            ),
            (a, t) => assert_eq!(a.err(), t.err(), "GetDefaultBundleThatProvides {kind}"),
        }
    }
    println!("providers: {} GVKs agree", gvks.len());

    // The not-found texts of the single-bundle RPCs.
    let some = &their_list[0];
    for (pkg, channel, csv) in [
        ("no-such-package", "x", "x"),
        (some.package_name.as_str(), "no-such-channel", "x"),
        (
            some.package_name.as_str(),
            some.channel_name.as_str(),
            "no-such-bundle",
        ),
    ] {
        pair.bundle(
            &format!("GetBundle {pkg}/{channel}/{csv}"),
            api::GetBundleRequest {
                pkg_name: pkg.into(),
                channel_name: channel.into(),
                csv_name: csv.into(),
            },
        )
        .await;
        let request = api::GetBundleInChannelRequest {
            pkg_name: pkg.into(),
            channel_name: channel.into(),
        };
        let ours = answer(pair.ours.get_bundle_for_channel(request.clone()).await).err();
        let theirs = answer(pair.theirs.get_bundle_for_channel(request).await).err();
        if pkg == some.package_name && channel == some.channel_name {
            assert!(ours.is_none() && theirs.is_none());
        } else {
            assert!(ours.is_some());
            assert_eq!(ours, theirs, "GetBundleForChannel {pkg}/{channel}");
        }
        let request = api::GetReplacementRequest {
            csv_name: csv.into(),
            pkg_name: pkg.into(),
            channel_name: channel.into(),
        };
        let ours = answer(pair.ours.get_bundle_that_replaces(request.clone()).await).err();
        let theirs = answer(pair.theirs.get_bundle_that_replaces(request).await).err();
        assert!(ours.is_some());
        assert_eq!(ours, theirs, "GetBundleThatReplaces {pkg}/{channel}/{csv}");
    }
}
