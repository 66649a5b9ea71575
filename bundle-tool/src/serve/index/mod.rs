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

mod answer;
mod build;
mod hot;
mod property;

use std::ops::Range;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU8, Ordering};

use bytes::Bytes;

use super::csv::{CsvContext, synthesize};
use super::encoded::EncodedBundle;
use super::spill::{BlobRef, SpillFile};

use answer::AnswerWriter;
pub use answer::{BundleAnswer, SHARE_FROM};
pub use build::Inline;
use hot::{HotBundles, KeptBundle};

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

    /// A bundle's `csvJson`, and whether it was synthesized just now; `input` is its
    /// synthesis input when the caller read it already, `objects` its manifests. `None` when
    /// the spill file failed.
    fn csv_bytes(
        &self,
        name: &str,
        record: &BundleRecord,
        input: Option<Vec<u8>>,
        objects: &Bytes,
    ) -> Option<(Bytes, bool)> {
        let blob = match &record.csv {
            CsvSource::Object(i) => {
                let blobs = &self.arrays.objects[record.objects.range()];
                let Some(blob) = blobs.get(*i as usize) else {
                    return Some((Bytes::new(), false));
                };
                let start: usize = blobs[..*i as usize].iter().map(BlobRef::len).sum();
                return Some((objects.slice(start..start + blob.len()), false));
            }
            CsvSource::Metadata(blob) => blob,
            CsvSource::None => return Some((Bytes::new(), false)),
        };
        if let Some(kept) = record.synthesized_csv.get() {
            return Some((self.spill.read(*kept).ok()?.into(), false));
        }
        let input = match input {
            Some(input) => input,
            None => self.spill.read(*blob).ok()?,
        };
        // An input this build wrote and cannot read back is a bug; the answer then has no
        // CSV rather than no answer.
        let Ok(input) = serde_json::from_slice::<SynthesisInput>(&input) else {
            return Some((Bytes::new(), false));
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
        Some((csv.into(), true))
    }

    /// A member's `api.Bundle` message, encoded: the stored base of its bundle followed by
    /// the fields that depend on the channel and the RPC.
    ///
    /// `ListBundles` (`listed`) adds the channel's edges, and `csvJson` and `object` only when
    /// the bundle is served inline (no bundle path); the single-bundle RPCs add `csvJson` and
    /// `object` and leave the edges blank, as opm does. A decoder reads fields in any order
    /// and the base holds none of these, so appending them gives the same message as
    /// decoding the base, setting them and encoding it again, without the copies.
    ///
    /// A bundle asked for again by a single-bundle RPC keeps its base, CSV and manifests in
    /// memory while the budget lasts; beyond it a synthesized CSV is kept in the spill file.
    /// Not on the first request: a resolution or a mirror reads most bundles once, and
    /// keeping each of those cost a third of a first answer's time (generated catalog,
    /// 20,000 bundles each asked once).
    fn encode_answer(
        &self,
        channel: &ChannelEntry,
        member: &ChannelMember,
        listed: bool,
    ) -> Option<BundleAnswer> {
        let record = &self.arrays.bundles[member.bundle as usize];
        let blobs = &self.arrays.objects[record.objects.range()];
        let sends_csv = !listed || record.inline;
        let again =
            !listed && record.asked.fetch_max(asked::ONCE, Ordering::Relaxed) == asked::ONCE;
        let kept = if sends_csv {
            self.hot.get(member.bundle)
        } else {
            None
        };
        let mut input = None;
        let mut base = None;
        let mut answer = match &kept {
            Some(kept) => {
                let mut answer = AnswerWriter::default();
                answer.share(&kept.base);
                answer
            }
            None => {
                let mut head = Vec::with_capacity(record.base.len() + 256);
                // The synthesis input is stored right before the base: one read for both.
                match &record.csv {
                    CsvSource::Metadata(blob)
                        if sends_csv && record.synthesized_csv.get().is_none() =>
                    {
                        self.spill
                            .read_pair_into(*blob, record.base, &mut head)
                            .ok()?;
                        input = Some(head.drain(..blob.len()).collect::<Vec<u8>>());
                    }
                    _ => self.spill.read_into(record.base, &mut head).ok()?,
                }
                if again {
                    // Exactly sized: the buffer was also the synthesis input's, and a kept
                    // `Bytes` holds its whole allocation.
                    let shared = Bytes::copy_from_slice(&head);
                    let mut answer = AnswerWriter::default();
                    answer.share(&shared);
                    base = Some(shared);
                    answer
                } else {
                    AnswerWriter::starting_with(head)
                }
            }
        };
        let glue = answer.glue();
        put_field(
            glue,
            bundle_field::CHANNEL_NAME,
            channel.name.as_bytes(),
            false,
        );
        put_field(
            glue,
            bundle_field::SKIP_RANGE,
            self.str(member.skip_range).as_bytes(),
            false,
        );
        if listed {
            put_field(
                glue,
                bundle_field::REPLACES,
                self.replaces(member).as_bytes(),
                false,
            );
            for skip in self.skips(member) {
                put_field(glue, bundle_field::SKIPS, skip.as_bytes(), true);
            }
        }
        if !sends_csv {
            return Some(answer.finish());
        }
        let (objects, (csv, synthesized)) = match &kept {
            Some(kept) => (kept.objects.clone(), (kept.csv.clone(), false)),
            None => {
                let mut objects = Vec::new();
                self.spill.read_all_into(blobs, &mut objects).ok()?;
                let objects = Bytes::from(objects);
                let csv = self.csv_bytes(self.name(member), record, input, &objects)?;
                (objects, csv)
            }
        };
        answer.share_field(bundle_field::CSV_JSON, &csv, false);
        // A bundle known only by its metadata has no manifests: opm sends the synthesized CSV
        // as its one object.
        if matches!(record.csv, CsvSource::Metadata(_)) && blobs.is_empty() {
            answer.share_field(bundle_field::OBJECT, &csv, false);
        } else {
            let mut start = 0;
            for blob in blobs {
                let object = objects.slice(start..start + blob.len());
                answer.share_field(bundle_field::OBJECT, &object, true);
                start += blob.len();
            }
        }
        if let Some(base) = base {
            // A synthesized CSV's string grew by doubling; keep an exactly sized copy.
            let csv = if synthesized {
                Bytes::copy_from_slice(&csv)
            } else {
                csv.clone()
            };
            let kept = KeptBundle { base, csv, objects };
            if !self.hot.keep(member.bundle, kept.clone()) {
                record.asked.store(asked::NOT_KEPT, Ordering::Relaxed);
                if synthesized {
                    self.keep_synthesized(record, &kept.csv);
                }
            }
        } else if listed && synthesized {
            self.keep_synthesized(record, &csv);
        }
        Some(answer.finish())
    }

    /// Keeps a synthesized CSV in the spill file.
    fn keep_synthesized(&self, record: &BundleRecord, csv: &[u8]) {
        if let Ok(blob) = self.spill.append(csv) {
            // Two requests racing both synthesize; the first stored blob wins.
            let _ = record.synthesized_csv.set(blob);
        }
    }

    /// The message `ListBundles` streams at `position`, encoded.
    pub fn listed_answer(&self, position: usize) -> Option<EncodedBundle> {
        let &(channel, member) = self.arrays.listing.get(position)?;
        let channel = &self.arrays.channels[channel as usize];
        let member = &self.arrays.members[member as usize];
        let answer = self.encode_answer(channel, member, true)?;
        Some(answer.into_encoded())
    }

    /// The single-bundle RPCs' answer for a member of `channel`: `csvJson` and `object`
    /// filled, edges blank.
    pub fn single_answer(
        &self,
        channel: &ChannelEntry,
        member: &ChannelMember,
    ) -> Option<BundleAnswer> {
        self.encode_answer(channel, member, false)
    }
}

#[cfg(test)]
mod tests {
    use prost::Message;

    use super::*;
    use crate::serve::api;
    use crate::serve::load::{LoadOptions, load_snapshot};

    /// A one-bundle catalog whose CSV is synthesized from `olm.csv.metadata`.
    const CATALOG: &str = r#"{"schema":"olm.package","name":"p","defaultChannel":"stable"}
{"schema":"olm.channel","name":"stable","package":"p","entries":[{"name":"p.v1.0.0"}]}
{"schema":"olm.bundle","name":"p.v1.0.0","package":"p","image":"quay.io/p/bundle:1.0.0","properties":[{"type":"olm.package","value":{"packageName":"p","version":"1.0.0"}},{"type":"olm.csv.metadata","value":{"displayName":"P","description":"a package"}}]}
"#;

    #[test]
    fn repeated_answers_are_equal_whether_kept_in_memory_or_not() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("p")).unwrap();
        std::fs::write(dir.path().join("p/catalog.json"), CATALOG).unwrap();
        for budget in [0, 1, 1 << 20] {
            let options = LoadOptions {
                answer_memory: budget,
                ..Default::default()
            };
            let index = load_snapshot(dir.path(), &options).unwrap().index;
            let package = index.package("p").unwrap();
            let channel = index.channel(package, "stable").unwrap();
            let member = index.head(channel);
            let answers: Vec<Bytes> = (0..4)
                .map(|_| {
                    let answer = index.single_answer(channel, member).unwrap();
                    answer.into_encoded().into_bytes()
                })
                .collect();
            assert!(answers.iter().all(|a| *a == answers[0]), "budget {budget}");
            let bundle = api::Bundle::decode(answers[0].clone()).unwrap();
            assert!(bundle.csv_json.contains("\"displayName\":\"P\""));
            assert_eq!(bundle.object, std::slice::from_ref(&bundle.csv_json));
            let record = &index.arrays.bundles[member.bundle as usize];
            let state = record.asked.load(Ordering::Relaxed);
            let kept = index.hot.get(member.bundle).is_some();
            if budget == 1 << 20 {
                assert_eq!((state, kept), (asked::ONCE, true));
            } else {
                // Refused once, not copied again to be refused again; the synthesized CSV is
                // in the spill file instead.
                assert_eq!((state, kept), (asked::NOT_KEPT, false));
                assert!(record.synthesized_csv.get().is_some());
            }
        }
    }
}
