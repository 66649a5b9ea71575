//! The served catalog: one immutable snapshot built from a validated model, indexed for every
//! registry RPC.
//!
//! A bundle listed in several channels is stored once (`BundleRecord`, shared) and its channel
//! members carry only their edges. `csvJson` is synthesized on request rather than kept: it is
//! only sent by the single-bundle RPCs, and keeping it for every bundle would cost more memory
//! than the whole rest of the index.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use base64::Engine;
use serde_json::Value;

use super::api;
use super::csv::{CsvContext, synthesize};
use super::encoded::EncodedBundle;
use super::spill::{BlobRef, SpillFile, SpillWriter};
use crate::catalog::model::{self, Model};
use crate::catalog::render::go_json;

/// The package, channel and bundle name of one channel member.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BundleKey {
    /// The package (shared by all its keys).
    pub package: Arc<str>,
    /// The channel (shared by all its keys).
    pub channel: Arc<str>,
    /// The bundle.
    pub name: Box<str>,
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
    /// Its channels by name.
    pub channels: BTreeMap<String, ChannelEntry>,
}

/// A channel: its head and its members.
#[derive(Debug)]
pub struct ChannelEntry {
    /// Its name.
    pub name: String,
    /// The channel head's bundle name.
    pub head: String,
    /// Its deprecation message, if deprecated.
    pub deprecation: Option<String>,
    /// Its bundles by name.
    pub members: BTreeMap<String, ChannelMember>,
}

/// A bundle in one channel: the channel's edges for it and the shared bundle data.
#[derive(Debug)]
pub struct ChannelMember {
    /// The bundle it replaces in this channel.
    pub replaces: String,
    /// The bundles it skips.
    pub skips: Vec<String>,
    /// Its skip range in this channel.
    pub skip_range: String,
    /// The bundle.
    pub record: Arc<BundleRecord>,
    /// The single-bundle RPCs' answer, encoded on its first request and kept in the spill
    /// file: later requests copy bytes instead of rebuilding and re-encoding the message.
    pub answer: std::sync::OnceLock<BlobRef>,
}

/// What a bundle is, whatever channel lists it. The API message lives encoded in the spill
/// file: in memory a bundle costs only what the RPCs search by.
#[derive(Debug)]
pub struct BundleRecord {
    /// The API message without the channel's fields, `csvJson` and `object`, encoded.
    pub base: BlobRef,
    /// Where `csvJson` comes from.
    pub csv: CsvSource,
    /// The bundle's manifests as JSON (from `olm.bundle.object`, or rendered for inline
    /// serving), in the snapshot's spill file.
    pub objects: Vec<BlobRef>,
    /// The provided APIs as (group, version, kind), interned per snapshot.
    pub provides: Box<[ProvidedApi]>,
    /// The synthesized CSV once a request needed it, kept in the spill file: packageserver
    /// asks for the same channel heads again and again.
    pub synthesized_csv: std::sync::OnceLock<BlobRef>,
}

/// How a bundle's `csvJson` is produced.
#[derive(Debug)]
pub enum CsvSource {
    /// The CSV among its objects (an index into `objects`).
    Object(usize),
    /// Synthesized from its `olm.csv.metadata` property.
    Metadata {
        /// A [`SynthesisInput`] as JSON, in the spill file: only the single-bundle RPCs read it.
        input: BlobRef,
        /// The package's description (a fallback).
        package_description: Arc<str>,
        /// The package's icon (base64, media type).
        package_icon: Option<Arc<(String, String)>>,
    },
    /// Nothing to build one from: served empty.
    None,
}

/// A provided API as (group, version, kind), with names shared across the snapshot.
pub type ProvidedApi = (Arc<str>, Arc<str>, Arc<str>);

/// What the synthesized CSV is made of besides the package's description and icon.
#[derive(serde::Deserialize)]
pub struct SynthesisInput {
    /// The `olm.csv.metadata` value, embedded as JSON (not as an escaped string: writing and
    /// reading it stays a copy).
    pub metadata: Box<serde_json::value::RawValue>,
    /// The bundle's version, normalized (`spec.version`).
    pub version: String,
    /// The bundle's related images (name, image).
    pub related_images: Vec<(String, String)>,
}

impl SynthesisInput {
    /// The JSON text of a [`SynthesisInput`] whose metadata is the JSON text `metadata`.
    pub fn encode(metadata: &str, version: &str, related_images: &[(&str, &str)]) -> String {
        let text = |value: &str| Value::from(value).to_string();
        let images: Vec<String> = related_images
            .iter()
            .map(|(name, image)| format!("[{},{}]", text(name), text(image)))
            .collect();
        format!(
            "{{\"metadata\":{metadata},\"version\":{},\"related_images\":[{}]}}",
            text(version),
            images.join(",")
        )
    }
}

/// Whether a bundle is served inline (empty bundle path, manifests embedded).
#[derive(Debug)]
pub enum Inline {
    /// Served by image, as written.
    No,
    /// Inline, from its `olm.bundle.object` properties.
    FromProperties,
    /// Inline, with these manifests (JSON) rendered from its bundle folder or image.
    Rendered(Vec<String>),
}

/// One snapshot of the served catalog.
#[derive(Debug)]
pub struct CatalogIndex {
    /// CSV metadata and manifests, read on request.
    pub spill: SpillFile,
    /// Packages by name.
    pub packages: BTreeMap<String, PackageEntry>,
    /// Every channel member in `ListBundles` order: (channel, package, name).
    pub listing: Vec<BundleKey>,
    /// How many distinct bundles there are.
    pub bundle_count: usize,
}

impl CatalogIndex {
    /// A bundle's `csvJson`.
    pub fn csv_json(&self, name: &str, record: &BundleRecord) -> String {
        let read = |blob: BlobRef| self.spill.read_string(blob).unwrap_or_default();
        match &record.csv {
            CsvSource::Object(i) => record.objects.get(*i).map(|b| read(*b)).unwrap_or_default(),
            CsvSource::Metadata {
                input,
                package_description,
                package_icon,
            } => {
                if let Some(blob) = record.synthesized_csv.get() {
                    return read(*blob);
                }
                let Ok(input) = serde_json::from_str::<SynthesisInput>(&read(*input)) else {
                    return String::new();
                };
                let context = CsvContext {
                    name,
                    version: input.version,
                    package_description,
                    package_icon: package_icon.as_deref().cloned(),
                    related_images: input.related_images,
                };
                let csv = synthesize(input.metadata.get(), &context).unwrap_or_default();
                if let Ok(blob) = self.spill.append(csv.as_bytes()) {
                    // Two requests racing both synthesize; the first stored blob wins.
                    let _ = record.synthesized_csv.set(blob);
                }
                csv
            }
            CsvSource::None => String::new(),
        }
    }

    /// A bundle's stored message, decoded.
    fn base(&self, record: &BundleRecord) -> Option<api::Bundle> {
        let bytes = self.spill.read(record.base).ok()?;
        prost::Message::decode(bytes.as_slice()).ok()
    }

    /// A bundle's `object` list: its manifests, or the synthesized CSV alone as opm sends it.
    fn object_list(&self, record: &BundleRecord, csv_json: &str) -> Vec<String> {
        match (&record.csv, record.objects.is_empty()) {
            (CsvSource::Metadata { .. }, true) if !csv_json.is_empty() => {
                vec![csv_json.to_string()]
            }
            _ => record
                .objects
                .iter()
                .map(|blob| self.spill.read_string(*blob).unwrap_or_default())
                .collect(),
        }
    }

    /// Looks a member up.
    pub fn member(&self, package: &str, channel: &str, name: &str) -> Option<&ChannelMember> {
        self.packages
            .get(package)?
            .channels
            .get(channel)?
            .members
            .get(name)
    }

    /// The message `ListBundles` streams for a member: edges filled; `csvJson` and `object`
    /// only when the bundle is served inline (no bundle path).
    pub fn listed_bundle(&self, key: &BundleKey) -> Option<api::Bundle> {
        let member = self.member(&key.package, &key.channel, &key.name)?;
        let record = &member.record;
        let mut bundle = self.base(record)?;
        bundle.channel_name = key.channel.to_string();
        bundle.skip_range = member.skip_range.clone();
        bundle.replaces = member.replaces.clone();
        bundle.skips = member.skips.clone();
        if bundle.bundle_path.is_empty() {
            bundle.csv_json = self.csv_json(&key.name, record);
            bundle.object = self.object_list(record, &bundle.csv_json);
        }
        Some(bundle)
    }

    /// The message `ListBundles` streams for a member, encoded.
    pub fn listed_answer(&self, key: &BundleKey) -> Option<EncodedBundle> {
        self.listed_bundle(key).map(|b| EncodedBundle::encode(&b))
    }

    /// The single-bundle RPCs' answer for a member ([`CatalogIndex::trimmed_bundle`]),
    /// encoded once per snapshot.
    pub fn single_answer(&self, package: &str, channel: &str, name: &str) -> Option<EncodedBundle> {
        let member = self.member(package, channel, name)?;
        if let Some(bytes) = member.answer.get().and_then(|b| self.spill.read(*b).ok()) {
            return Some(EncodedBundle::new(bytes.into()));
        }
        let encoded = EncodedBundle::encode(&self.trimmed_bundle(package, channel, name)?);
        if let Ok(blob) = self.spill.append(encoded.bytes()) {
            // Two first requests racing both encode; the first stored copy wins.
            let _ = member.answer.set(blob);
        }
        Some(encoded)
    }

    /// The message the single-bundle RPCs send: `csvJson` and `object` kept, edges blanked.
    pub fn trimmed_bundle(&self, package: &str, channel: &str, name: &str) -> Option<api::Bundle> {
        let member = self.member(package, channel, name)?;
        let record = &member.record;
        let mut bundle = self.base(record)?;
        bundle.channel_name = channel.to_string();
        bundle.skip_range = member.skip_range.clone();
        bundle.csv_json = self.csv_json(name, record);
        bundle.object = self.object_list(record, &bundle.csv_json);
        Some(bundle)
    }

    /// Builds the index from a validated model; `inline` decides, bundle by bundle, whether
    /// it is served inline.
    pub fn build(
        model: Model,
        inline: &mut dyn FnMut(&model::Bundle) -> Result<Inline, String>,
    ) -> Result<CatalogIndex, String> {
        let mut spill = SpillWriter::new().map_err(|e| format!("spill file: {e}"))?;
        let mut packages = BTreeMap::new();
        let mut listing = Vec::new();
        let mut bundle_count = 0;
        let mut interner = Interner::default();
        for (package_name, package) in model.packages {
            let package_key = interner.get(&package_name);
            let description: Arc<str> = Arc::from(package.description.as_str());
            let icon = package.icon.as_ref().map(|icon| {
                Arc::new((
                    base64::engine::general_purpose::STANDARD.encode(&icon.data),
                    icon.media_type.clone(),
                ))
            });
            let mut records: HashMap<String, Arc<BundleRecord>> = HashMap::new();
            let mut channels = BTreeMap::new();
            for (channel_name, channel) in package.channels {
                let channel_key = interner.get(&channel_name);
                let head = channel.head()?.name.clone();
                let mut members = BTreeMap::new();
                for (bundle_name, bundle) in channel.bundles {
                    let record = match records.get(&bundle_name) {
                        Some(record) => record.clone(),
                        None => {
                            let decision = inline(&bundle)
                                .map_err(|e| format!("bundle {bundle_name:?}: {e}"))?;
                            let record = Arc::new(bundle_record(
                                &mut spill,
                                &mut interner,
                                &package_name,
                                &bundle,
                                decision,
                                &description,
                                &icon,
                            )?);
                            records.insert(bundle_name.clone(), record.clone());
                            record
                        }
                    };
                    listing.push(BundleKey {
                        package: package_key.clone(),
                        channel: channel_key.clone(),
                        name: bundle_name.as_str().into(),
                    });
                    members.insert(
                        bundle_name,
                        ChannelMember {
                            replaces: bundle.replaces,
                            skips: bundle.skips,
                            skip_range: bundle.skip_range,
                            record,
                            answer: std::sync::OnceLock::new(),
                        },
                    );
                }
                channels.insert(
                    channel_name.clone(),
                    ChannelEntry {
                        name: channel_name,
                        head,
                        deprecation: channel.deprecation,
                        members,
                    },
                );
            }
            bundle_count += records.len();
            packages.insert(
                package_name.clone(),
                PackageEntry {
                    name: package_name,
                    default_channel: package.default_channel.unwrap_or_default(),
                    deprecation: package.deprecation,
                    channels,
                },
            );
        }
        // opm's bundle store is ordered by (channel, package, name).
        listing.sort_by(|a, b| {
            (&a.channel, &a.package, &a.name).cmp(&(&b.channel, &b.package, &b.name))
        });
        Ok(CatalogIndex {
            spill: spill.finish().map_err(|e| format!("spill file: {e}"))?,
            packages,
            listing,
            bundle_count,
        })
    }
}

/// A property value as opm keeps it: compact JSON, sorted keys, Go's number format, no HTML
/// escaping.
fn property_json(value: &Value) -> String {
    serde_json::to_string(&crate::catalog::render::go_numbers(value.clone())).unwrap_or_default()
}

/// [`property_json`] of the stored text `raw`.
///
/// Tried and measured: passing `raw` through when re-encoding cannot change it built the
/// generated 20,000-bundle index faster (index 148 -> ~106 ms), but left 25 MiB of heap
/// fragmented after `malloc_trim` (server pinned to one CPU: 30 -> 55 MiB idle), so values
/// are round-tripped.
fn opm_property_json(raw: &str) -> String {
    serde_json::from_str::<Value>(raw)
        .map(|value| property_json(&value))
        .unwrap_or_else(|_| raw.to_string())
}

fn gvk(value: &Value) -> (String, String, String) {
    let field = |name: &str| {
        value
            .as_object()
            .and_then(|m| m.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)))
            .and_then(|(_, v)| v.as_str())
            .unwrap_or_default()
            .to_string()
    };
    (field("group"), field("version"), field("kind"))
}

/// Shares equal strings (package, channel, group, version, kind names) within a snapshot.
#[derive(Default)]
struct Interner(HashMap<String, Arc<str>>);

impl Interner {
    fn get(&mut self, text: &str) -> Arc<str> {
        if let Some(shared) = self.0.get(text) {
            return shared.clone();
        }
        let shared: Arc<str> = Arc::from(text);
        self.0.insert(text.to_string(), shared.clone());
        shared
    }
}

fn bundle_record(
    spill: &mut SpillWriter,
    interner: &mut Interner,
    package: &str,
    bundle: &model::Bundle,
    inline: Inline,
    package_description: &Arc<str>,
    package_icon: &Option<Arc<(String, String)>>,
) -> Result<BundleRecord, String> {
    let mut provides = Vec::new();
    let mut required = Vec::new();
    let mut dependencies = Vec::new();
    let mut properties = Vec::new();
    let mut metadata = Vec::new();
    let mut objects = Vec::new();
    let mut version = String::new();
    for property in bundle.properties.iter() {
        let raw = property.value.as_str();
        match property.type_.as_str() {
            "olm.csv.metadata" => {
                // Read again only by the CSV synthesis, which parses the text itself.
                metadata.push(raw);
                continue;
            }
            "olm.gvk"
            | "olm.package"
            | "olm.gvk.required"
            | "olm.package.required"
            | "olm.bundle.object" => {}
            _ => {
                // Every other property passes through; most are already in opm's form.
                properties.push(api::Property {
                    r#type: property.type_.clone(),
                    value: opm_property_json(raw),
                });
                continue;
            }
        }
        // Decoded for the index only: the model keeps the text.
        let value = property.value.to_value();
        match property.type_.as_str() {
            "olm.bundle.object" => {
                objects.push(bundle_object_json(&value)?);
                continue;
            }
            "olm.package" => {
                version = gvk_field(&value, "version");
            }
            "olm.gvk" => provides.push(gvk(&value)),
            "olm.gvk.required" => {
                required.push(gvk(&value));
                dependencies.push(api::Dependency {
                    r#type: "olm.gvk".into(),
                    value: property_json(&value),
                });
            }
            "olm.package.required" => {
                // Encoded like opm: the struct's field order, no HTML escaping.
                let text = |name: &str| Value::String(gvk_field(&value, name)).to_string();
                dependencies.push(api::Dependency {
                    r#type: "olm.package".into(),
                    value: format!(
                        "{{\"packageName\":{},\"version\":{}}}",
                        text("packageName"),
                        text("versionRange")
                    ),
                });
            }
            _ => {}
        }
        // `value` is already decoded, but writing it from that tree (instead of parsing `raw`
        // again) was measured to bring the same 25 MiB of fragmentation back as the
        // pass-through below (generated catalog: 28 -> 52 MiB idle). The footprint depends on
        // this allocation order; building the index on its own arena is the real fix.
        properties.push(api::Property {
            r#type: property.type_.clone(),
            value: opm_property_json(raw),
        });
    }
    if metadata.len() > 1 {
        return Err(format!(
            "expected at most 1 property of type \"olm.csv.metadata\", found {}",
            metadata.len()
        ));
    }
    let mut image = bundle.image.clone();
    match inline {
        Inline::No => {}
        Inline::FromProperties => image.clear(),
        Inline::Rendered(rendered) => {
            objects = rendered;
            image.clear();
        }
    }
    let spill_error = |e: std::io::Error| format!("spill file: {e}");
    let csv_position = objects.iter().position(|o| is_csv(o));
    let objects = objects
        .iter()
        .map(|o| spill.append(o.as_bytes()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(spill_error)?;
    let csv = match csv_position {
        Some(i) => CsvSource::Object(i),
        None => match metadata.first() {
            Some(value) => CsvSource::Metadata {
                input: {
                    let version = bundle
                        .version
                        .as_ref()
                        .map(ToString::to_string)
                        .unwrap_or_default();
                    let images: Vec<(&str, &str)> = bundle
                        .related_images
                        .iter()
                        .map(|r| (r.name.as_str(), r.image.as_str()))
                        .collect();
                    let text = SynthesisInput::encode(value, &version, &images);
                    spill.append(text.as_bytes()).map_err(spill_error)?
                },
                package_description: package_description.clone(),
                package_icon: package_icon.clone(),
            },
            None => CsvSource::None,
        },
    };
    let api_gvk = |(group, version, kind): &(String, String, String)| api::GroupVersionKind {
        group: group.clone(),
        version: version.clone(),
        kind: kind.clone(),
        plural: String::new(),
    };
    let base = api::Bundle {
        csv_name: bundle.name.clone(),
        package_name: package.to_string(),
        bundle_path: image,
        provided_apis: provides.iter().map(api_gvk).collect(),
        required_apis: required.iter().map(api_gvk).collect(),
        version,
        dependencies,
        properties,
        deprecation: bundle.deprecation.as_ref().map(|message| api::Deprecation {
            message: message.clone(),
        }),
        ..Default::default()
    };
    let base = spill
        .append(&prost::Message::encode_to_vec(&base))
        .map_err(spill_error)?;
    let provides = provides
        .iter()
        .map(|(g, v, k)| (interner.get(g), interner.get(v), interner.get(k)))
        .collect();
    Ok(BundleRecord {
        base,
        csv,
        objects,
        provides,
        synthesized_csv: std::sync::OnceLock::new(),
    })
}

fn gvk_field(value: &Value, name: &str) -> String {
    value
        .as_object()
        .and_then(|m| m.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)))
        .and_then(|(_, v)| v.as_str())
        .unwrap_or_default()
        .to_string()
}

/// An `olm.bundle.object` as opm serves it: JSON data passes through as written, YAML becomes
/// JSON (keys sorted, Go's escaping).
fn bundle_object_json(value: &Value) -> Result<String, String> {
    let data = value
        .get("data")
        .and_then(Value::as_str)
        .ok_or("olm.bundle.object without data")?;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(data.trim())
        .map_err(|e| format!("olm.bundle.object data is not base64: {e}"))?;
    let text = String::from_utf8(bytes).map_err(|e| format!("olm.bundle.object: {e}"))?;
    if text.trim_start().starts_with('{') {
        return Ok(text);
    }
    let value: Value = serde_saphyr::from_str(&text)
        .map_err(|e| format!("olm.bundle.object is neither JSON nor YAML: {e}"))?;
    Ok(go_json(&value))
}

fn is_csv(object: &str) -> bool {
    serde_json::from_str::<Value>(object)
        .ok()
        .and_then(|v| v.get("kind").and_then(Value::as_str).map(str::to_string))
        .is_some_and(|kind| kind == "ClusterServiceVersion")
}
