//! Building a [`CatalogIndex`] from a validated model.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::OnceLock;
use std::sync::atomic::AtomicU8;

use base64::Engine;
use serde_json::Value;

use super::encoding::{BaseFields, write_base};
use super::hot::HotBundles;
use super::property::{
    BundleObjectError, bundle_object_json, is_csv, opm_property_json, string_fields,
};
use super::{
    BundleRecord, CatalogIndex, ChannelEntry, ChannelMember, CsvSource, IndexArrays, PackageEntry,
    Span,
};
use crate::serve::spill::SpillWriter;
use catalog_model::model::{self, HeadError, Model};
use catalog_model::olm_property;

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

/// Why a model could not be indexed.
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    /// The spill file could not be written.
    #[error("spill file: {0}")]
    Spill(std::io::Error),
    /// More names, bundles or bytes than 32-bit positions reach.
    #[error("catalog too large to index")]
    TooLarge,
    /// A channel without a single head (validation lets none through).
    #[error(transparent)]
    Head(#[from] HeadError),
    /// A channel whose head is not among its members (a bug if it happens).
    #[error("channel {0:?}: head not found")]
    HeadNotFound(String),
    /// A bundle with more than one `olm.csv.metadata`.
    #[error("expected at most 1 property of type \"olm.csv.metadata\", found {0}")]
    CsvMetadataCount(usize),
    /// An `olm.bundle.object` that cannot be served.
    #[error(transparent)]
    BundleObject(#[from] BundleObjectError),
}

/// [`IndexError`], or why a bundle's manifests could not be had for inline serving: `E` is
/// the error of the caller's way of finding them.
#[derive(Debug, thiserror::Error)]
pub enum IndexBuildError<E: std::error::Error> {
    /// The index itself.
    #[error(transparent)]
    Index(#[from] IndexError),
    /// A bundle's manifests for inline serving.
    #[error("bundle {bundle:?}: {error}")]
    Inline {
        /// The bundle.
        bundle: String,
        /// Why its manifests could not be had.
        error: E,
    },
}

impl CatalogIndex {
    /// Builds the index from a validated model; `inline` decides, bundle by bundle, whether
    /// it is served inline; `answer_memory` is how many bytes of repeated answers it may keep
    /// in memory.
    pub fn build<E: std::error::Error>(
        model: Model,
        inline: &mut dyn FnMut(&model::Bundle) -> Result<Inline, E>,
        answer_memory: usize,
    ) -> Result<CatalogIndex, IndexBuildError<E>> {
        let mut builder = Builder::new()?;
        for (name, package) in model.packages {
            builder.package(name, package, inline)?;
        }
        Ok(builder.finish(answer_memory)?)
    }
}

/// The index under construction, with what only the build needs.
struct Builder {
    spill: SpillWriter,
    bases: SpillWriter,
    index: IndexArrays,
    /// Each channel's package, for the listing's order.
    channel_packages: Vec<u32>,
    api_positions: HashMap<[String; 3], u32>,
    /// Reused for each encoded message.
    scratch: Vec<u8>,
}

/// A position in one of the index's arrays.
fn position(len: usize) -> Result<u32, IndexError> {
    u32::try_from(len).map_err(|_| IndexError::TooLarge)
}

impl Builder {
    fn new() -> Result<Self, IndexError> {
        Ok(Builder {
            spill: SpillWriter::new().map_err(IndexError::Spill)?,
            bases: SpillWriter::new().map_err(IndexError::Spill)?,
            index: IndexArrays::default(),
            channel_packages: Vec::new(),
            api_positions: HashMap::new(),
            scratch: Vec::new(),
        })
    }

    /// Stores a name in the text buffer.
    fn text(&mut self, text: &str) -> Result<Span, IndexError> {
        if text.is_empty() {
            return Ok(Span::default());
        }
        let span = Span {
            start: position(self.index.text.len())?,
            len: position(text.len())?,
        };
        position(self.index.text.len() + text.len())?;
        self.index.text.push_str(text);
        Ok(span)
    }

    fn package<E: std::error::Error>(
        &mut self,
        name: String,
        package: model::Package,
        inline: &mut dyn FnMut(&model::Bundle) -> Result<Inline, E>,
    ) -> Result<(), IndexBuildError<E>> {
        let package_position = position(self.index.packages.len())?;
        let channels_start = position(self.index.channels.len())?;
        // A bundle in several channels becomes one record.
        let mut records: HashMap<String, u32> = HashMap::new();
        for (channel_name, channel) in package.channels {
            let head_name = channel.head().map_err(IndexError::from)?.name.clone();
            let channel_position = position(self.index.channels.len())?;
            let members_start = position(self.index.members.len())?;
            let mut head = None;
            for (bundle_name, bundle) in channel.bundles {
                let record = match records.get(&bundle_name) {
                    Some(record) => *record,
                    None => {
                        let decision =
                            inline(&bundle).map_err(|error| IndexBuildError::Inline {
                                bundle: bundle_name.clone(),
                                error,
                            })?;
                        let record = self.bundle(package_position, &name, &bundle, decision)?;
                        records.insert(bundle_name.clone(), record);
                        record
                    }
                };
                let member_position = position(self.index.members.len())?;
                if bundle_name == head_name {
                    head = Some(member_position);
                }
                let skips_start = position(self.index.skips.len())?;
                for skip in &bundle.skips {
                    let span = self.text(skip)?;
                    self.index.skips.push(span);
                }
                let member = ChannelMember {
                    name: self.text(&bundle_name)?,
                    replaces: self.text(&bundle.replaces)?,
                    skip_range: self.text(&bundle.skip_range)?,
                    skips: Span {
                        start: skips_start,
                        len: position(bundle.skips.len())?,
                    },
                    bundle: record,
                };
                self.index.members.push(member);
                self.index.listing.push((channel_position, member_position));
            }
            let Some(head) = head else {
                return Err(IndexError::HeadNotFound(channel_name).into());
            };
            self.index.channels.push(ChannelEntry {
                name: channel_name,
                deprecation: channel.deprecation,
                head,
                members: Span {
                    start: members_start,
                    len: position(self.index.members.len())? - members_start,
                },
            });
            self.channel_packages.push(package_position);
        }
        let icon = package.icon.as_ref().map(|icon| {
            (
                base64::engine::general_purpose::STANDARD.encode(&icon.data),
                icon.media_type.clone(),
            )
        });
        self.index.packages.push(PackageEntry {
            name,
            default_channel: package.default_channel.unwrap_or_default(),
            deprecation: package.deprecation,
            description: package.description,
            icon,
            channels: Span {
                start: channels_start,
                len: position(self.index.channels.len())? - channels_start,
            },
        });
        Ok(())
    }

    /// The position of a provided API, added when new.
    fn api(&mut self, gvk: [String; 3]) -> Result<u32, IndexError> {
        if let Some(found) = self.api_positions.get(&gvk) {
            return Ok(*found);
        }
        let api = position(self.index.apis.len())?;
        let name = [
            self.text(&gvk[0])?,
            self.text(&gvk[1])?,
            self.text(&gvk[2])?,
        ];
        self.index.apis.push(name);
        self.api_positions.insert(gvk, api);
        Ok(api)
    }

    /// Stores a bundle's record and its message; returns its position.
    fn bundle(
        &mut self,
        package: u32,
        package_name: &str,
        bundle: &model::Bundle,
        inline: Inline,
    ) -> Result<u32, IndexError> {
        let mut provided = Vec::new();
        let mut required = Vec::new();
        let mut dependencies = Vec::new();
        let mut properties = Vec::new();
        let mut metadata = Vec::new();
        let mut objects = Vec::new();
        let mut version = String::new();
        for property in bundle.properties.iter() {
            let raw = property.value.as_str();
            match property.type_.as_ref() {
                // Read again only by the CSV synthesis, which parses the text itself.
                olm_property::CSV_METADATA => {
                    metadata.push(raw);
                    continue;
                }
                olm_property::BUNDLE_OBJECT => {
                    objects.push(bundle_object_json(raw)?);
                    continue;
                }
                olm_property::PACKAGE => {
                    let [found] = string_fields(raw, ["version"]);
                    version = found;
                }
                olm_property::GVK => provided.push(string_fields(raw, olm_property::GVK_FIELDS)),
                olm_property::GVK_REQUIRED => {
                    required.push(string_fields(raw, olm_property::GVK_FIELDS));
                    // opm's dependency types are the provided types' names.
                    dependencies.push((olm_property::GVK, opm_property_json(raw)));
                }
                olm_property::PACKAGE_REQUIRED => {
                    // Encoded like opm: the struct's field order, no HTML escaping.
                    let [name, range] = string_fields(raw, ["packageName", "versionRange"]);
                    let value = format!(
                        "{{\"packageName\":{},\"version\":{}}}",
                        Value::String(name),
                        Value::String(range)
                    );
                    dependencies.push((olm_property::PACKAGE, Cow::Owned(value)));
                }
                _ => {}
            }
            // Every property but the two above passes through; most are already in opm's form.
            properties.push((property.type_.as_ref(), opm_property_json(raw)));
        }
        if metadata.len() > 1 {
            return Err(IndexError::CsvMetadataCount(metadata.len()));
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
        let csv_position = objects.iter().position(|o| is_csv(o));
        let objects_start = position(self.index.objects.len())?;
        for object in &objects {
            let blob = self
                .spill
                .append(object.as_bytes())
                .map_err(IndexError::Spill)?;
            self.index.objects.push(blob);
        }
        let csv = match (csv_position, metadata.first()) {
            (Some(i), _) => CsvSource::Object(position(i)?),
            (None, Some(metadata)) => {
                self.scratch.clear();
                write_synthesis_input(&mut self.scratch, metadata, bundle);
                CsvSource::Metadata(
                    self.spill
                        .append(&self.scratch)
                        .map_err(IndexError::Spill)?,
                )
            }
            (None, None) => CsvSource::None,
        };
        let served_inline = image.is_empty();
        self.scratch.clear();
        write_base(
            &mut self.scratch,
            &BaseFields {
                csv_name: &bundle.name,
                package: package_name,
                bundle_path: &image,
                provided: &provided,
                required: &required,
                version: &version,
                dependencies: &dependencies,
                properties: &properties,
                deprecation: bundle.deprecation.as_deref(),
            },
        );
        let base = self
            .bases
            .append(&self.scratch)
            .map_err(IndexError::Spill)?;
        if let CsvSource::Metadata(_) = csv {
            // A copy right after the synthesis input: a single answer reads both at once
            // (two reads cost the generated catalog ~15 % of its GetBundle/s).
            self.spill
                .append(&self.scratch)
                .map_err(IndexError::Spill)?;
        }
        let provides_start = position(self.index.provided.len())?;
        let provides_len = position(provided.len())?;
        for gvk in provided {
            let api = self.api(gvk)?;
            self.index.provided.push(api);
        }
        self.index.bundles.push(BundleRecord {
            base,
            csv,
            objects: Span {
                start: objects_start,
                len: position(objects.len())?,
            },
            provides: Span {
                start: provides_start,
                len: provides_len,
            },
            package,
            inline: served_inline,
            synthesized_csv: OnceLock::new(),
            asked: AtomicU8::new(super::asked::NEVER),
        });
        position(self.index.bundles.len() - 1)
    }

    fn finish(mut self, answer_memory: usize) -> Result<CatalogIndex, IndexError> {
        // opm's bundle store is ordered by (channel, package, name).
        let key = |&(channel, member): &(u32, u32)| {
            let package = self.channel_packages[channel as usize] as usize;
            let name = self.index.members[member as usize].name;
            (
                self.index.channels[channel as usize].name.as_str(),
                self.index.packages[package].name.as_str(),
                &self.index.text[name.range()],
            )
        };
        let mut listing = std::mem::take(&mut self.index.listing);
        listing.sort_by(|a, b| key(a).cmp(&key(b)));
        let mut arrays = IndexArrays {
            listing,
            ..self.index
        };
        // Exact sizes: the arrays live as long as the snapshot.
        arrays.text.shrink_to_fit();
        arrays.packages.shrink_to_fit();
        arrays.channels.shrink_to_fit();
        arrays.members.shrink_to_fit();
        arrays.skips.shrink_to_fit();
        arrays.bundles.shrink_to_fit();
        arrays.objects.shrink_to_fit();
        arrays.provided.shrink_to_fit();
        arrays.apis.shrink_to_fit();
        arrays.listing.shrink_to_fit();
        Ok(CatalogIndex {
            spill: self
                .spill
                .finish()
                .map_err(IndexError::Spill)?
                .drop_pages_once_written(),
            bases: self.bases.finish().map_err(IndexError::Spill)?,
            arrays,
            hot: HotBundles::new(answer_memory),
        })
    }
}

/// Writes the JSON of a `SynthesisInput` whose metadata is the JSON text `metadata`.
fn write_synthesis_input(out: &mut Vec<u8>, metadata: &str, bundle: &model::Bundle) {
    let version = bundle
        .version
        .as_ref()
        .map(ToString::to_string)
        .unwrap_or_default();
    // Writing JSON strings into a Vec cannot fail.
    let string = |out: &mut Vec<u8>, text: &str| {
        let _ = serde_json::to_writer(&mut *out, text);
    };
    out.extend_from_slice(b"{\"metadata\":");
    out.extend_from_slice(metadata.as_bytes());
    out.extend_from_slice(b",\"version\":");
    string(out, &version);
    out.extend_from_slice(b",\"related_images\":[");
    for (i, related) in bundle.related_images.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.push(b'[');
        string(out, &related.name);
        out.push(b',');
        string(out, &related.image);
        out.push(b']');
    }
    out.extend_from_slice(b"]}");
}
