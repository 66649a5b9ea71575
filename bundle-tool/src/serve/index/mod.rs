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

mod build;
mod property;

use std::ops::Range;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

use super::csv::{CsvContext, synthesize};
use super::encoded::EncodedBundle;
use super::spill::{BlobRef, SpillFile};

pub use build::Inline;

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
    /// The single-bundle RPCs' answer, kept encoded in the spill file once it was asked for
    /// twice: later requests copy bytes instead of rebuilding and re-encoding the message.
    answer: OnceLock<BlobRef>,
    /// Whether the answer was built once already.
    asked: AtomicBool,
}

/// What a bundle is, whatever channel lists it.
#[derive(Debug)]
struct BundleRecord {
    /// The API message without the channel's fields, `csvJson` and `object`, encoded.
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
    /// The synthesized CSV once `ListBundles` needed it (bundles served inline): each stream
    /// sends every bundle again.
    synthesized_csv: OnceLock<BlobRef>,
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

/// A bundle's `csvJson` text for one answer.
enum CsvText {
    /// A blob of the spill file (its CSV manifest, or a synthesized CSV kept earlier).
    Stored(BlobRef),
    /// Synthesized for this answer.
    Synthesized(String),
    /// None: the field stays empty.
    None,
}

/// Field numbers of `api.Bundle` that answers add to the stored base (registry.proto).
mod bundle_field {
    pub const CHANNEL_NAME: u32 = 3;
    pub const CSV_JSON: u32 = 4;
    pub const OBJECT: u32 = 5;
    pub const SKIP_RANGE: u32 = 10;
    pub const REPLACES: u32 = 13;
    pub const SKIPS: u32 = 14;
}

/// Appends a string field; an empty one only if `repeated` (proto3 leaves an empty scalar
/// out, but every element of a list is sent).
fn put_field(out: &mut Vec<u8>, tag: u32, text: &[u8], repeated: bool) {
    if text.is_empty() && !repeated {
        return;
    }
    prost::encoding::encode_key(tag, prost::encoding::WireType::LengthDelimited, out);
    prost::encoding::encode_varint(text.len() as u64, out);
    out.extend_from_slice(text);
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
    /// Encoded messages, CSV metadata and manifests, read on request.
    spill: SpillFile,
    /// Everything the RPCs search by.
    arrays: IndexArrays,
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

    /// Where a bundle's `csvJson` comes from; a synthesized one is kept in the spill file
    /// when `keep` says so. `input` is its synthesis input when the caller read it already.
    fn csv_text(
        &self,
        name: &str,
        record: &BundleRecord,
        keep: bool,
        read_input: Option<Vec<u8>>,
    ) -> CsvText {
        match &record.csv {
            CsvSource::Object(i) => self.arrays.objects[record.objects.range()]
                .get(*i as usize)
                .map_or(CsvText::None, |blob| CsvText::Stored(*blob)),
            CsvSource::Metadata(input) => {
                if let Some(blob) = record.synthesized_csv.get() {
                    return CsvText::Stored(*blob);
                }
                let Some(input) = read_input.or_else(|| self.spill.read(*input).ok()) else {
                    return CsvText::None;
                };
                let Ok(input) = serde_json::from_slice::<SynthesisInput>(&input) else {
                    return CsvText::None;
                };
                let package = &self.arrays.packages[record.package as usize];
                let context = CsvContext {
                    name,
                    version: input.version,
                    package_description: &package.description,
                    package_icon: package.icon.clone(),
                    related_images: input.related_images,
                };
                let csv = synthesize(input.metadata.get(), &context).unwrap_or_default();
                if keep && let Ok(blob) = self.spill.append(csv.as_bytes()) {
                    // Two requests racing both synthesize; the first stored blob wins.
                    let _ = record.synthesized_csv.set(blob);
                }
                CsvText::Synthesized(csv)
            }
            CsvSource::None => CsvText::None,
        }
    }

    /// A member's `api.Bundle` message, encoded: the stored base of its bundle followed by
    /// the fields that depend on the channel and the RPC.
    ///
    /// `ListBundles` (`listed`) adds the channel's edges, and `csvJson` and `object` only when
    /// the bundle is served inline (no bundle path); the single-bundle RPCs add `csvJson` and
    /// `object` and leave the edges blank, as opm does. A decoder reads fields in any order
    /// and the base holds none of these, so appending them gives the same message as
    /// decoding the base, setting them and encoding it again, without the copies.
    fn encode_answer(
        &self,
        channel: &ChannelEntry,
        member: &ChannelMember,
        listed: bool,
    ) -> Option<Vec<u8>> {
        let record = &self.arrays.bundles[member.bundle as usize];
        let objects = &self.arrays.objects[record.objects.range()];
        let size = record.base.len() + objects.iter().map(BlobRef::len).sum::<usize>() * 2;
        let mut out = Vec::with_capacity(size + 256);
        let sends_csv = !listed || record.inline;
        // The synthesis input is stored right before the base: one read for both.
        let mut input = None;
        match &record.csv {
            CsvSource::Metadata(blob) if sends_csv && record.synthesized_csv.get().is_none() => {
                self.spill
                    .read_pair_into(*blob, record.base, &mut out)
                    .ok()?;
                input = Some(out.drain(..blob.len()).collect::<Vec<u8>>());
            }
            _ => self.spill.read_into(record.base, &mut out).ok()?,
        }
        put_field(
            &mut out,
            bundle_field::CHANNEL_NAME,
            channel.name.as_bytes(),
            false,
        );
        put_field(
            &mut out,
            bundle_field::SKIP_RANGE,
            self.str(member.skip_range).as_bytes(),
            false,
        );
        if listed {
            put_field(
                &mut out,
                bundle_field::REPLACES,
                self.replaces(member).as_bytes(),
                false,
            );
            for skip in self.skips(member) {
                put_field(&mut out, bundle_field::SKIPS, skip.as_bytes(), true);
            }
        }
        if !sends_csv {
            return Some(out);
        }
        let csv = self.csv_text(self.name(member), record, listed, input);
        self.put_csv(&mut out, bundle_field::CSV_JSON, &csv)?;
        // A bundle known only by its metadata has no manifests: opm sends the synthesized CSV
        // as its one object.
        if matches!(record.csv, CsvSource::Metadata(_)) && objects.is_empty() {
            self.put_csv(&mut out, bundle_field::OBJECT, &csv)?;
        } else {
            for blob in objects {
                self.put_blob(&mut out, bundle_field::OBJECT, *blob, true)?;
            }
        }
        Some(out)
    }

    /// Appends a string field holding the CSV (nothing when there is none).
    fn put_csv(&self, out: &mut Vec<u8>, tag: u32, csv: &CsvText) -> Option<()> {
        match csv {
            CsvText::Stored(blob) => self.put_blob(out, tag, *blob, false),
            CsvText::Synthesized(text) => {
                put_field(out, tag, text.as_bytes(), false);
                Some(())
            }
            CsvText::None => Some(()),
        }
    }

    /// Appends a string field whose text is a blob of the spill file.
    fn put_blob(&self, out: &mut Vec<u8>, tag: u32, blob: BlobRef, repeated: bool) -> Option<()> {
        if blob.is_empty() && !repeated {
            return Some(());
        }
        prost::encoding::encode_key(tag, prost::encoding::WireType::LengthDelimited, out);
        prost::encoding::encode_varint(blob.len() as u64, out);
        self.spill.read_into(blob, out).ok()
    }

    /// The message `ListBundles` streams at `position`, encoded.
    pub fn listed_answer(&self, position: usize) -> Option<EncodedBundle> {
        let &(channel, member) = self.arrays.listing.get(position)?;
        let channel = &self.arrays.channels[channel as usize];
        let member = &self.arrays.members[member as usize];
        let bytes = self.encode_answer(channel, member, true)?;
        Some(EncodedBundle::new(bytes.into()))
    }

    /// The single-bundle RPCs' answer for a member of `channel`: `csvJson` and `object`
    /// filled, edges blank.
    pub fn single_answer(
        &self,
        channel: &ChannelEntry,
        member: &ChannelMember,
    ) -> Option<EncodedBundle> {
        if let Some(bytes) = member.answer.get().and_then(|b| self.spill.read(*b).ok()) {
            return Some(EncodedBundle::new(bytes.into()));
        }
        let bytes = self.encode_answer(channel, member, false)?;
        // Kept from the second request on: packageserver asks for the same channel heads
        // again and again, while a resolution or a mirror reads most bundles once, and
        // writing each of those to the spill file cost a third of a first answer's time
        // (generated catalog, 20,000 bundles each asked once).
        if member.asked.swap(true, Ordering::Relaxed)
            && let Ok(blob) = self.spill.append(&bytes)
        {
            // Two requests racing both encode; the first stored copy wins.
            let _ = member.answer.set(blob);
        }
        Some(EncodedBundle::new(bytes.into()))
    }
}
