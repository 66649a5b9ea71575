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
use super::index::{BundleAnswer, CatalogIndex, ChannelEntry, ChannelMember, PackageEntry};
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
        while this.position < this.index.listing_len() {
            this.position += 1;
            if let Some(bundle) = this.index.listed_answer(this.position - 1) {
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
        let name = self
            .index
            .packages()
            .get(self.position)
            .map(|p| p.name.clone());
        self.position += 1;
        Poll::Ready(name.map(|name| Ok(api::PackageName { name })))
    }
}

fn unknown(message: String) -> Status {
    Status::unknown(message)
}

/// A package, or opm's error for it missing.
fn find_package<'a>(index: &'a CatalogIndex, package: &str) -> Result<&'a PackageEntry, Status> {
    index
        .package(package)
        .ok_or_else(|| unknown(format!("package {package:?} not found")))
}

/// A package's channel, or opm's error for the missing package or channel.
fn find_channel<'a>(
    index: &'a CatalogIndex,
    package: &str,
    channel: &str,
) -> Result<&'a ChannelEntry, Status> {
    index
        .channel(find_package(index, package)?, channel)
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

/// A member's entries for the provider RPCs: itself with its `replaces`, then one per skip
/// (other than `replaces`); `in_channel_only` keeps just skips of bundles in the channel.
fn provider_entries(
    out: &mut Vec<api::ChannelEntry>,
    index: &CatalogIndex,
    (package, channel): (&str, &ChannelEntry),
    member: &ChannelMember,
    in_channel_only: bool,
) {
    let (name, replaces) = (index.name(member), index.replaces(member));
    out.push(entry(package, &channel.name, name, replaces));
    for skip in index.skips(member) {
        if skip != replaces && (!in_channel_only || index.member(channel, skip).is_some()) {
            out.push(entry(package, &channel.name, name, skip));
        }
    }
}

/// A member's single-bundle answer.
fn answer(
    index: &CatalogIndex,
    channel: &ChannelEntry,
    member: &ChannelMember,
) -> Result<BundleAnswer, Status> {
    index
        .single_answer(channel, member)
        .ok_or_else(|| Status::internal("bundle missing from the spill file"))
}

/// `GetBundle`'s answer.
pub(super) fn get_bundle(
    index: &CatalogIndex,
    request: &api::GetBundleRequest,
) -> Result<BundleAnswer, Status> {
    let api::GetBundleRequest {
        pkg_name,
        channel_name,
        csv_name,
    } = request;
    let channel = find_channel(index, pkg_name, channel_name)?;
    let member = index.member(channel, csv_name).ok_or_else(|| {
        unknown(format!(
            "package {pkg_name:?}, channel {channel_name:?}, bundle {csv_name:?} not found"
        ))
    })?;
    answer(index, channel, member)
}

/// `GetBundleForChannel`'s answer.
pub(super) fn get_bundle_for_channel(
    index: &CatalogIndex,
    request: &api::GetBundleInChannelRequest,
) -> Result<BundleAnswer, Status> {
    let api::GetBundleInChannelRequest {
        pkg_name,
        channel_name,
    } = request;
    let channel = find_channel(index, pkg_name, channel_name)?;
    answer(index, channel, index.head(channel))
}

fn no_providers(group: &str, version: &str, kind: &str) -> Status {
    unknown(format!(
        "no channel entries found that provide group:{group:?} version:{version:?} kind:{kind:?}"
    ))
}

fn latest_providers(
    index: &CatalogIndex,
    group: &str,
    version: &str,
    kind: &str,
) -> Result<Vec<api::ChannelEntry>, Status> {
    let api = index
        .api(group, version, kind)
        .ok_or_else(|| no_providers(group, version, kind))?;
    let mut entries = Vec::new();
    for package in index.packages() {
        for channel in index.channels(package) {
            let head = index.head(channel);
            if index.provides(head, api) {
                provider_entries(&mut entries, index, (&package.name, channel), head, true);
            }
        }
    }
    if entries.is_empty() {
        return Err(no_providers(group, version, kind));
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
        let package = find_package(&index, &request.get_ref().name)?;
        let deprecation = |message: &Option<String>| {
            message.as_ref().map(|message| api::Deprecation {
                message: message.clone(),
            })
        };
        Ok(Response::new(api::Package {
            name: package.name.clone(),
            channels: index
                .channels(package)
                .iter()
                .map(|c| api::Channel {
                    name: c.name.clone(),
                    csv_name: index.name(index.head(c)).to_string(),
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
        get_bundle(&index, request.get_ref()).map(|a| Response::new(a.into_encoded()))
    }

    async fn get_bundle_for_channel(
        &self,
        request: Request<api::GetBundleInChannelRequest>,
    ) -> Result<Response<EncodedBundle>, Status> {
        let index = self.snapshot("GetBundleForChannel");
        get_bundle_for_channel(&index, request.get_ref()).map(|a| Response::new(a.into_encoded()))
    }

    type GetChannelEntriesThatReplaceStream = EntryStream;

    async fn get_channel_entries_that_replace(
        &self,
        request: Request<api::GetAllReplacementsRequest>,
    ) -> Result<Response<Self::GetChannelEntriesThatReplaceStream>, Status> {
        let index = self.snapshot("GetChannelEntriesThatReplace");
        let name = &request.get_ref().csv_name;
        let mut entries = Vec::new();
        for package in index.packages() {
            for channel in index.channels(package) {
                for member in index.members(channel) {
                    let (bundle, replaces) = (index.name(member), index.replaces(member));
                    let found = |package: &str| entry(package, &channel.name, bundle, replaces);
                    if replaces == name {
                        entries.push(found(&package.name));
                    }
                    // opm adds one more entry per matching skip, still carrying `replaces`.
                    for skip in index.skips(member) {
                        if skip == name && skip != replaces {
                            entries.push(found(&package.name));
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
            .package(pkg_name)
            .ok_or_else(|| unknown(format!("package {pkg_name} not found")))?;
        let channel = index.channel(package, channel_name).ok_or_else(|| {
            unknown(format!(
                "package {pkg_name:?}, channel {channel_name:?} not found"
            ))
        })?;
        // opm picks any match (map order); the first by name is a deterministic choice of the
        // same set.
        let found = index
            .members(channel)
            .iter()
            .find(|m| index.replaces(m) == csv_name || index.skips(m).any(|skip| skip == csv_name));
        match found {
            Some(member) => {
                answer(&index, channel, member).map(|a| Response::new(a.into_encoded()))
            }
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
        let api = index
            .api(group, version, kind)
            .ok_or_else(|| no_providers(group, version, kind))?;
        let mut entries = Vec::new();
        for package in index.packages() {
            for channel in index.channels(package) {
                for member in index.members(channel) {
                    if index.provides(member, api) {
                        let at = (package.name.as_str(), channel);
                        provider_entries(&mut entries, &index, at, member, false);
                    }
                }
            }
        }
        if entries.is_empty() {
            return Err(no_providers(group, version, kind));
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
            let Some(package) = index.package(&e.package_name) else {
                continue;
            };
            if e.channel_name == package.default_channel {
                let member = index
                    .channel(package, &e.channel_name)
                    .and_then(|channel| Some((channel, index.member(channel, &e.bundle_name)?)));
                let Some((channel, member)) = member else {
                    return Err(Status::internal("bundle vanished from the index"));
                };
                return answer(&index, channel, member).map(|a| Response::new(a.into_encoded()));
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
