//! `api.Registry`: the ten RPCs with opm serve's answers, read from the current snapshot.
//!
//! Every RPC takes the snapshot once when it starts, so a reload in the middle of a stream
//! never mixes two catalogs: the stream finishes on the snapshot it began with.
//!
//! opm returns its "not found" errors as plain Go errors, which clients see as code UNKNOWN
//! with the text; OLM only logs them. The same codes and texts are kept here.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use tonic::codegen::tokio_stream::{self, Stream};
use tonic::{Request, Response, Status};

use super::api;
use super::encoded::{EncodedBundle, registry_server::Registry};
use super::index::{CatalogIndex, ChannelMember};
use super::state::CatalogHandle;

type EntryStream = tokio_stream::Iter<std::vec::IntoIter<Result<api::ChannelEntry, Status>>>;

/// The registry service over a reloadable catalog.
pub struct RegistryService {
    catalog: CatalogHandle,
}

impl RegistryService {
    /// A service answering from `catalog`.
    pub fn new(catalog: CatalogHandle) -> Self {
        RegistryService { catalog }
    }

    fn snapshot(&self, method: &'static str) -> Arc<CatalogIndex> {
        self.catalog.count_request(method);
        self.catalog.snapshot()
    }
}

/// `ListBundles`' stream: walks the snapshot's listing, building each message when it is sent.
pub struct BundleStream {
    index: Arc<CatalogIndex>,
    position: usize,
}

impl Stream for BundleStream {
    type Item = Result<EncodedBundle, Status>;

    fn poll_next(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        while let Some(key) = this.index.listing.get(this.position) {
            this.position += 1;
            if let Some(bundle) = this.index.listed_answer(key) {
                return Poll::Ready(Some(Ok(bundle)));
            }
        }
        Poll::Ready(None)
    }
}

/// `ListPackages`' stream.
pub struct PackageNameStream {
    index: Arc<CatalogIndex>,
    position: usize,
}

impl Stream for PackageNameStream {
    type Item = Result<api::PackageName, Status>;

    fn poll_next(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let name = self.index.packages.keys().nth(self.position).cloned();
        self.position += 1;
        Poll::Ready(name.map(|name| Ok(api::PackageName { name })))
    }
}

fn unknown(message: String) -> Status {
    Status::unknown(message)
}

/// A package's channel, or opm's error for the missing package or channel.
fn find_channel<'a>(
    index: &'a CatalogIndex,
    package: &str,
    channel: &str,
) -> Result<&'a super::index::ChannelEntry, Status> {
    index
        .packages
        .get(package)
        .ok_or_else(|| unknown(format!("package {package:?} not found")))?
        .channels
        .get(channel)
        .ok_or_else(|| {
            unknown(format!(
                "package {package:?}, channel {channel:?} not found"
            ))
        })
}

fn entry(package: &str, channel: &str, bundle: &str, replaces: &str) -> api::ChannelEntry {
    api::ChannelEntry {
        package_name: package.to_string(),
        channel_name: channel.to_string(),
        bundle_name: bundle.to_string(),
        replaces: replaces.to_string(),
    }
}

fn stream_of(entries: Vec<api::ChannelEntry>) -> Response<EntryStream> {
    Response::new(tokio_stream::iter(
        entries.into_iter().map(Ok).collect::<Vec<_>>(),
    ))
}

fn provides(member: &ChannelMember, group: &str, version: &str, kind: &str) -> bool {
    member
        .record
        .provides
        .iter()
        .any(|(g, v, k)| **g == *group && **v == *version && **k == *kind)
}

/// A member's entries for the provider RPCs: itself with its `replaces`, then one per skip
/// (other than `replaces`); `in_channel_only` keeps just skips of bundles in the channel.
fn provider_entries(
    out: &mut Vec<api::ChannelEntry>,
    (package, channel, name): (&str, &super::index::ChannelEntry, &str),
    member: &ChannelMember,
    in_channel_only: bool,
) {
    out.push(entry(package, &channel.name, name, &member.replaces));
    for skip in &member.skips {
        if *skip != member.replaces && (!in_channel_only || channel.members.contains_key(skip)) {
            out.push(entry(package, &channel.name, name, skip));
        }
    }
}

fn latest_providers(
    index: &CatalogIndex,
    group: &str,
    version: &str,
    kind: &str,
) -> Result<Vec<api::ChannelEntry>, Status> {
    let mut entries = Vec::new();
    for (package, p) in &index.packages {
        for channel in p.channels.values() {
            let Some(head) = channel.members.get(&channel.head) else {
                continue;
            };
            if provides(head, group, version, kind) {
                provider_entries(&mut entries, (package, channel, &channel.head), head, true);
            }
        }
    }
    if entries.is_empty() {
        return Err(unknown(format!(
            "no channel entries found that provide group:{group:?} version:{version:?} kind:{kind:?}"
        )));
    }
    Ok(entries)
}

#[tonic::async_trait]
impl Registry for RegistryService {
    type ListPackagesStream = PackageNameStream;

    async fn list_packages(
        &self,
        _: Request<api::ListPackageRequest>,
    ) -> Result<Response<Self::ListPackagesStream>, Status> {
        Ok(Response::new(PackageNameStream {
            index: self.snapshot("ListPackages"),
            position: 0,
        }))
    }

    async fn get_package(
        &self,
        request: Request<api::GetPackageRequest>,
    ) -> Result<Response<api::Package>, Status> {
        let index = self.snapshot("GetPackage");
        let name = &request.get_ref().name;
        let package = index
            .packages
            .get(name)
            .ok_or_else(|| unknown(format!("package {name:?} not found")))?;
        let deprecation = |message: &Option<String>| {
            message.as_ref().map(|message| api::Deprecation {
                message: message.clone(),
            })
        };
        Ok(Response::new(api::Package {
            name: package.name.clone(),
            channels: package
                .channels
                .values()
                .map(|c| api::Channel {
                    name: c.name.clone(),
                    csv_name: c.head.clone(),
                    deprecation: deprecation(&c.deprecation),
                })
                .collect(),
            default_channel_name: package.default_channel.clone(),
            deprecation: deprecation(&package.deprecation),
        }))
    }

    async fn get_bundle(
        &self,
        request: Request<api::GetBundleRequest>,
    ) -> Result<Response<EncodedBundle>, Status> {
        let index = self.snapshot("GetBundle");
        let api::GetBundleRequest {
            pkg_name,
            channel_name,
            csv_name,
        } = request.get_ref();
        let channel = find_channel(&index, pkg_name, channel_name)?;
        if !channel.members.contains_key(csv_name) {
            return Err(unknown(format!(
                "package {pkg_name:?}, channel {channel_name:?}, bundle {csv_name:?} not found"
            )));
        }
        index
            .single_answer(pkg_name, channel_name, csv_name)
            .map(Response::new)
            .ok_or_else(|| Status::internal("bundle vanished from the index"))
    }

    async fn get_bundle_for_channel(
        &self,
        request: Request<api::GetBundleInChannelRequest>,
    ) -> Result<Response<EncodedBundle>, Status> {
        let index = self.snapshot("GetBundleForChannel");
        let api::GetBundleInChannelRequest {
            pkg_name,
            channel_name,
        } = request.get_ref();
        let channel = find_channel(&index, pkg_name, channel_name)?;
        index
            .single_answer(pkg_name, channel_name, &channel.head)
            .map(Response::new)
            .ok_or_else(|| Status::internal("channel head missing from the index"))
    }

    type GetChannelEntriesThatReplaceStream = EntryStream;

    async fn get_channel_entries_that_replace(
        &self,
        request: Request<api::GetAllReplacementsRequest>,
    ) -> Result<Response<Self::GetChannelEntriesThatReplaceStream>, Status> {
        let index = self.snapshot("GetChannelEntriesThatReplace");
        let name = &request.get_ref().csv_name;
        let mut entries = Vec::new();
        for (package, p) in &index.packages {
            for channel in p.channels.values() {
                for (bundle, member) in &channel.members {
                    if member.replaces == *name {
                        entries.push(entry(package, &channel.name, bundle, &member.replaces));
                    }
                    // opm adds one more entry per matching skip, still carrying `replaces`.
                    for skip in &member.skips {
                        if skip == name && *skip != member.replaces {
                            entries.push(entry(package, &channel.name, bundle, &member.replaces));
                        }
                    }
                }
            }
        }
        if entries.is_empty() {
            return Err(unknown(format!(
                "no channel entries found that replace {name}"
            )));
        }
        Ok(stream_of(entries))
    }

    async fn get_bundle_that_replaces(
        &self,
        request: Request<api::GetReplacementRequest>,
    ) -> Result<Response<EncodedBundle>, Status> {
        let index = self.snapshot("GetBundleThatReplaces");
        let api::GetReplacementRequest {
            csv_name,
            pkg_name,
            channel_name,
        } = request.get_ref();
        let package = index
            .packages
            .get(pkg_name)
            .ok_or_else(|| unknown(format!("package {pkg_name} not found")))?;
        let channel = package.channels.get(channel_name).ok_or_else(|| {
            unknown(format!(
                "package {pkg_name:?}, channel {channel_name:?} not found"
            ))
        })?;
        // opm picks any match (map order); the first by name is a deterministic choice of the
        // same set.
        let found = channel
            .members
            .iter()
            .find(|(_, m)| m.replaces == *csv_name || m.skips.contains(csv_name));
        match found {
            Some((name, _)) => index
                .single_answer(pkg_name, channel_name, name)
                .map(Response::new)
                .ok_or_else(|| Status::internal("bundle vanished from the index")),
            None => Err(unknown(format!(
                "no entry found for package {pkg_name:?}, channel {channel_name:?}"
            ))),
        }
    }

    type GetChannelEntriesThatProvideStream = EntryStream;

    async fn get_channel_entries_that_provide(
        &self,
        request: Request<api::GetAllProvidersRequest>,
    ) -> Result<Response<Self::GetChannelEntriesThatProvideStream>, Status> {
        let index = self.snapshot("GetChannelEntriesThatProvide");
        let api::GetAllProvidersRequest {
            group,
            version,
            kind,
            ..
        } = request.get_ref();
        let mut entries = Vec::new();
        for (package, p) in &index.packages {
            for channel in p.channels.values() {
                for (name, member) in &channel.members {
                    if provides(member, group, version, kind) {
                        provider_entries(&mut entries, (package, channel, name), member, false);
                    }
                }
            }
        }
        if entries.is_empty() {
            return Err(unknown(format!(
                "no channel entries found that provide group:{group:?} version:{version:?} kind:{kind:?}"
            )));
        }
        Ok(stream_of(entries))
    }

    type GetLatestChannelEntriesThatProvideStream = EntryStream;

    async fn get_latest_channel_entries_that_provide(
        &self,
        request: Request<api::GetLatestProvidersRequest>,
    ) -> Result<Response<Self::GetLatestChannelEntriesThatProvideStream>, Status> {
        let index = self.snapshot("GetLatestChannelEntriesThatProvide");
        let r = request.get_ref();
        Ok(stream_of(latest_providers(
            &index, &r.group, &r.version, &r.kind,
        )?))
    }

    async fn get_default_bundle_that_provides(
        &self,
        request: Request<api::GetDefaultProviderRequest>,
    ) -> Result<Response<EncodedBundle>, Status> {
        let index = self.snapshot("GetDefaultBundleThatProvides");
        let api::GetDefaultProviderRequest {
            group,
            version,
            kind,
            ..
        } = request.get_ref();
        // Latest entries come out sorted by package already; the first in a package's default
        // channel wins, as in opm.
        let latest = latest_providers(&index, group, version, kind)?;
        for e in &latest {
            let Some(package) = index.packages.get(&e.package_name) else {
                continue;
            };
            if e.channel_name == package.default_channel {
                return index
                    .single_answer(&e.package_name, &e.channel_name, &e.bundle_name)
                    .map(Response::new)
                    .ok_or_else(|| Status::internal("bundle vanished from the index"));
            }
        }
        Err(unknown(format!(
            "no entry found that provides group:{group:?} version:{version:?} kind:{kind:?}"
        )))
    }

    type ListBundlesStream = BundleStream;

    async fn list_bundles(
        &self,
        _: Request<api::ListBundlesRequest>,
    ) -> Result<Response<Self::ListBundlesStream>, Status> {
        Ok(Response::new(BundleStream {
            index: self.snapshot("ListBundles"),
            position: 0,
        }))
    }
}
