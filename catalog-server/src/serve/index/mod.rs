//! The served catalog: one immutable snapshot built from a validated model, indexed for every
//! registry RPC.
//!
//! The index lives in a few large arrays instead of one small allocation per name and
//! bundle: every name is a [`Span`] of one text buffer, packages, channels and members are
//! sorted arrays that point into each other by position, and a bundle listed in several
//! channels is one [`BundleRecord`]. This was measured (docs/benchmarks.md, issue #6): with
//! ~120,000 small long-lived allocations, where they landed among the holes the catalog load
//! left decided the server's idle memory (29 to 63 MiB for the same 20,000 bundles); a few
//! large blocks stay dense whatever the load left.
//!
//! The API message of a bundle lives encoded in the spill file. `csvJson` is synthesized on
//! request rather than kept: only the single-bundle RPCs send it.
//!
//! This file holds the index's types and its lookups; `build.rs` builds it from the model,
//! `encoding.rs` writes the protobuf fields (the stored base and what answers append),
//! `respond.rs` makes a member's answer, `answer.rs` holds an answer as shared pieces,
//! `hot.rs` keeps bundles asked for again, `property.rs` prints property values as opm does.

mod answer;
mod build;
mod encoding;
mod hot;
mod property;
mod respond;

use std::ops::Range;
use std::sync::OnceLock;
use std::sync::atomic::AtomicU8;

use super::spill::{BlobRef, SpillFile};

pub use answer::{BundleAnswer, SHARE_FROM};
pub use build::{IndexBuildError, IndexError, Inline};
use hot::HotBundles;
pub use property::BundleObjectError;

/// A run of items (or bytes) in one of the index's arrays (or its text).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Span {
    start: u32,
    len: u32,
}

impl Span {
    fn range(self) -> Range<usize> {
        self.start as usize..(self.start + self.len) as usize
    }
}

/// A package as the registry API shows it.
#[derive(Debug)]
pub struct PackageEntry {
    /// Its name.
    pub name: String,
    /// Its default channel ("" when none).
    pub default_channel: String,
    /// Its deprecation message, if deprecated.
    pub deprecation: Option<String>,
    /// Its description, which a synthesized CSV falls back to.
    description: String,
    /// Its icon (base64, media type), which a synthesized CSV shows.
    icon: Option<(String, String)>,
    /// Its channels, by name, in [`CatalogIndex::channels`].
    channels: Span,
}

/// A channel: its head and its members.
#[derive(Debug)]
pub struct ChannelEntry {
    /// Its name.
    pub name: String,
    /// Its deprecation message, if deprecated.
    pub deprecation: Option<String>,
    /// The channel head's position in the index's members.
    head: u32,
    /// Its members, by name.
    members: Span,
}

/// A bundle in one channel: the channel's edges for it and which bundle it is.
#[derive(Debug)]
pub struct ChannelMember {
    name: Span,
    replaces: Span,
    skip_range: Span,
    /// Positions in the index's skip list.
    skips: Span,
    /// Position in the index's bundles.
    bundle: u32,
}

/// What a bundle is, whatever channel lists it.
#[derive(Debug)]
struct BundleRecord {
    /// The API message without the channel's fields, `csvJson` and `object`, encoded; in
    /// the bases file, and for a CSV synthesized from metadata also in the spill file,
    /// right after the synthesis input.
    base: BlobRef,
    /// Where `csvJson` comes from.
    csv: CsvSource,
    /// Its manifests as JSON (from `olm.bundle.object`, or rendered for inline serving), as
    /// a run of the index's object list.
    objects: Span,
    /// Its provided APIs, as a run of the index's provided list.
    provides: Span,
    /// Its package's position.
    package: u32,
    /// Whether it is served inline (empty bundle path, manifests in the answers).
    inline: bool,
    /// The synthesized CSV once it was needed again: by `ListBundles` (bundles served
    /// inline; each stream sends every bundle again), or by a single-bundle RPC when the
    /// memory budget for repeated bundles was spent.
    synthesized_csv: OnceLock<BlobRef>,
    /// How far single-bundle RPCs got with it: one of [`asked`]'s states.
    asked: AtomicU8,
}

/// How a bundle's `csvJson` is produced.
#[derive(Debug)]
enum CsvSource {
    /// The CSV is its object at this position within its objects.
    Object(u32),
    /// Synthesized from its `olm.csv.metadata` property; the [`SynthesisInput`] is in the
    /// spill file.
    Metadata(BlobRef),
    /// Nothing to build one from: served empty.
    None,
}

/// What single-bundle RPCs did with a bundle so far, for keeping it in memory.
mod asked {
    /// Never asked for.
    pub const NEVER: u8 = 0;
    /// Asked for once: the next request keeps it if the budget has room.
    pub const ONCE: u8 = 1;
    /// Asked for again when the budget had no room: later requests do not copy its bytes
    /// to try again (on a catalog larger than the budget every request of such a bundle
    /// did).
    pub const NOT_KEPT: u8 = 2;
}

/// What the synthesized CSV is made of besides the package's description and icon.
#[derive(serde::Deserialize)]
struct SynthesisInput {
    /// The `olm.csv.metadata` value, embedded as JSON (not as an escaped string: writing and
    /// reading it stays a copy).
    metadata: Box<serde_json::value::RawValue>,
    /// The bundle's version, normalized (`spec.version`).
    version: String,
    /// The bundle's related images (name, image).
    related_images: Vec<(String, String)>,
}

/// A provided API (group, version, kind) as spans of the index's text.
type ApiName = [Span; 3];

/// One snapshot of the served catalog.
#[derive(Debug)]
pub struct CatalogIndex {
    /// CSV metadata, manifests and synthesized CSVs: read by single-bundle RPCs (and for
    /// bundles served inline), a bundle at a time.
    spill: SpillFile,
    /// Each bundle's encoded base message, read by every `ListBundles` stream. Apart from
    /// the bulky parts so that a stream's reads (and the kernel's read-ahead) bring only
    /// these pages into the page cache: interleaved, a stream over the corpus catalogs
    /// merged pulled the whole 14.8 MB file into the registry pod's memory.
    bases: SpillFile,
    /// Everything the RPCs search by.
    arrays: IndexArrays,
    /// The bytes of bundles asked for again, while they fit in the memory budget.
    hot: HotBundles,
}

/// The arrays of an index (filled by `build.rs`).
#[derive(Debug, Default)]
struct IndexArrays {
    /// Every member name, edge and skip range, and the provided APIs' names.
    text: String,
    /// Packages, sorted by name.
    packages: Vec<PackageEntry>,
    /// Channels, each package's together and sorted by name.
    channels: Vec<ChannelEntry>,
    /// Channel members, each channel's together and sorted by name.
    members: Vec<ChannelMember>,
    /// Every member's skips, each member's together.
    skips: Vec<Span>,
    /// Distinct bundles.
    bundles: Vec<BundleRecord>,
    /// Every bundle's manifests, each bundle's together.
    objects: Vec<BlobRef>,
    /// Every bundle's provided APIs (positions in `apis`), each bundle's together.
    provided: Vec<u32>,
    /// Distinct provided APIs.
    apis: Vec<ApiName>,
    /// Every (channel, member) in `ListBundles` order: channel, package, name.
    listing: Vec<(u32, u32)>,
}

impl CatalogIndex {
    fn str(&self, span: Span) -> &str {
        &self.arrays.text[span.range()]
    }

    /// A span's bytes: comparing these orders names as their text does, without checking
    /// character boundaries on every step of a search.
    fn bytes(&self, span: Span) -> &[u8] {
        &self.arrays.text.as_bytes()[span.range()]
    }

    /// Packages, by name.
    pub fn packages(&self) -> &[PackageEntry] {
        &self.arrays.packages
    }

    /// How many distinct bundles there are.
    pub fn bundle_count(&self) -> usize {
        self.arrays.bundles.len()
    }

    /// How many (channel, bundle) pairs `ListBundles` sends.
    pub fn listing_len(&self) -> usize {
        self.arrays.listing.len()
    }

    /// A package by name.
    pub fn package(&self, name: &str) -> Option<&PackageEntry> {
        let i = self
            .arrays
            .packages
            .binary_search_by(|p| p.name.as_str().cmp(name))
            .ok()?;
        Some(&self.arrays.packages[i])
    }

    /// A package's channels, by name.
    pub fn channels(&self, package: &PackageEntry) -> &[ChannelEntry] {
        &self.arrays.channels[package.channels.range()]
    }

    /// A package's channel by name.
    pub fn channel(&self, package: &PackageEntry, name: &str) -> Option<&ChannelEntry> {
        let channels = self.channels(package);
        let i = channels
            .binary_search_by(|c| c.name.as_str().cmp(name))
            .ok()?;
        Some(&channels[i])
    }

    /// A channel's members, by name.
    pub fn members(&self, channel: &ChannelEntry) -> &[ChannelMember] {
        &self.arrays.members[channel.members.range()]
    }

    /// A channel's member by name.
    pub fn member(&self, channel: &ChannelEntry, name: &str) -> Option<&ChannelMember> {
        let members = self.members(channel);
        let i = members
            .binary_search_by(|m| self.bytes(m.name).cmp(name.as_bytes()))
            .ok()?;
        Some(&members[i])
    }

    /// A channel's head.
    pub fn head(&self, channel: &ChannelEntry) -> &ChannelMember {
        &self.arrays.members[channel.head as usize]
    }

    /// A member's bundle name.
    pub fn name(&self, member: &ChannelMember) -> &str {
        self.str(member.name)
    }

    /// The bundle a member replaces in its channel ("" when none).
    pub fn replaces(&self, member: &ChannelMember) -> &str {
        self.str(member.replaces)
    }

    /// The bundles a member skips.
    pub fn skips(&self, member: &ChannelMember) -> impl Iterator<Item = &str> {
        self.arrays.skips[member.skips.range()]
            .iter()
            .map(|span| self.str(*span))
    }

    /// The position of the provided API (group, version, kind), if any bundle provides it.
    pub fn api(&self, group: &str, version: &str, kind: &str) -> Option<u32> {
        self.arrays
            .apis
            .iter()
            .position(|[g, v, k]| {
                self.str(*g) == group && self.str(*v) == version && self.str(*k) == kind
            })
            .map(|i| i as u32)
    }

    /// Whether a member's bundle provides the API at position `api`.
    pub fn provides(&self, member: &ChannelMember, api: u32) -> bool {
        let record = &self.arrays.bundles[member.bundle as usize];
        self.arrays.provided[record.provides.range()].contains(&api)
    }
}
