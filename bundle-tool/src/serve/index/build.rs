//! Building a [`CatalogIndex`] from a validated model.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::OnceLock;
use std::sync::atomic::AtomicU8;

use base64::Engine;
use serde_json::Value;

use super::hot::HotBundles;
use super::property::{bundle_object_json, is_csv, opm_property_json, string_fields};
use super::{
    BundleRecord, CatalogIndex, ChannelEntry, ChannelMember, CsvSource, IndexArrays, PackageEntry,
    Span, put_field,
};
use crate::catalog::model::{self, Model};
use crate::serve::spill::SpillWriter;

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

impl CatalogIndex {
    /// Builds the index from a validated model; `inline` decides, bundle by bundle, whether
    /// it is served inline; `answer_memory` is how many bytes of repeated answers it may keep
    /// in memory.
    pub fn build(
        model: Model,
        inline: &mut dyn FnMut(&model::Bundle) -> Result<Inline, String>,
        answer_memory: usize,
    ) -> Result<CatalogIndex, String> {
        let mut builder = Builder::new()?;
        for (name, package) in model.packages {
            builder.package(name, package, inline)?;
        }
        builder.finish(answer_memory)
    }
}

/// The index under construction, with what only the build needs.
struct Builder {
    spill: SpillWriter,
    index: IndexArrays,
    /// Each channel's package, for the listing's order.
    channel_packages: Vec<u32>,
    api_positions: HashMap<[String; 3], u32>,
    /// Reused for each encoded message.
    scratch: Vec<u8>,
}

fn spill_error(e: std::io::Error) -> String {
    format!("spill file: {e}")
}

fn position(len: usize) -> Result<u32, String> {
    u32::try_from(len).map_err(|_| "catalog too large to index".to_string())
}

impl Builder {
    fn new() -> Result<Self, String> {
        Ok(Builder {
            spill: SpillWriter::new().map_err(spill_error)?,
            index: IndexArrays::default(),
            channel_packages: Vec::new(),
            api_positions: HashMap::new(),
            scratch: Vec::new(),
        })
    }

    /// Stores a name in the text buffer.
    fn text(&mut self, text: &str) -> Result<Span, String> {
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

    fn package(
        &mut self,
        name: String,
        package: model::Package,
        inline: &mut dyn FnMut(&model::Bundle) -> Result<Inline, String>,
    ) -> Result<(), String> {
        let package_position = position(self.index.packages.len())?;
        let channels_start = position(self.index.channels.len())?;
        // A bundle in several channels becomes one record.
        let mut records: HashMap<String, u32> = HashMap::new();
        for (channel_name, channel) in package.channels {
            let head_name = channel.head()?.name.clone();
            let channel_position = position(self.index.channels.len())?;
            let members_start = position(self.index.members.len())?;
            let mut head = None;
            for (bundle_name, bundle) in channel.bundles {
                let record = match records.get(&bundle_name) {
                    Some(record) => *record,
                    None => {
                        let decision =
                            inline(&bundle).map_err(|e| format!("bundle {bundle_name:?}: {e}"))?;
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
            let head = head.ok_or_else(|| format!("channel {channel_name:?}: head not found"))?;
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
    fn api(&mut self, gvk: [String; 3]) -> Result<u32, String> {
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
    ) -> Result<u32, String> {
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
                "olm.csv.metadata" => {
                    metadata.push(raw);
                    continue;
                }
                "olm.bundle.object" => {
                    objects.push(bundle_object_json(raw)?);
                    continue;
                }
                "olm.package" => {
                    let [found] = string_fields(raw, ["version"]);
                    version = found;
                }
                "olm.gvk" => provided.push(string_fields(raw, ["group", "version", "kind"])),
                "olm.gvk.required" => {
                    required.push(string_fields(raw, ["group", "version", "kind"]));
                    dependencies.push(("olm.gvk", opm_property_json(raw)));
                }
                "olm.package.required" => {
                    // Encoded like opm: the struct's field order, no HTML escaping.
                    let [name, range] = string_fields(raw, ["packageName", "versionRange"]);
                    let value = format!(
                        "{{\"packageName\":{},\"version\":{}}}",
                        Value::String(name),
                        Value::String(range)
                    );
                    dependencies.push(("olm.package", Cow::Owned(value)));
                }
                _ => {}
            }
            // Every property but the two above passes through; most are already in opm's form.
            properties.push((property.type_.as_ref(), opm_property_json(raw)));
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
        let csv_position = objects.iter().position(|o| is_csv(o));
        let objects_start = position(self.index.objects.len())?;
        for object in &objects {
            let blob = self.spill.append(object.as_bytes()).map_err(spill_error)?;
            self.index.objects.push(blob);
        }
        let csv = match (csv_position, metadata.first()) {
            (Some(i), _) => CsvSource::Object(position(i)?),
            (None, Some(metadata)) => {
                self.scratch.clear();
                write_synthesis_input(&mut self.scratch, metadata, bundle);
                CsvSource::Metadata(self.spill.append(&self.scratch).map_err(spill_error)?)
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
        let base = self.spill.append(&self.scratch).map_err(spill_error)?;
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

    fn finish(mut self, answer_memory: usize) -> Result<CatalogIndex, String> {
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
            spill: self.spill.finish().map_err(spill_error)?,
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

/// The fields of a bundle's `api.Bundle` that every answer shares (the stored base).
struct BaseFields<'a> {
    csv_name: &'a str,
    package: &'a str,
    bundle_path: &'a str,
    provided: &'a [[String; 3]],
    required: &'a [[String; 3]],
    version: &'a str,
    /// (type, value) of each dependency.
    dependencies: &'a [(&'a str, Cow<'a, str>)],
    /// (type, value) of each property.
    properties: &'a [(&'a str, Cow<'a, str>)],
    deprecation: Option<&'a str>,
}

/// Encodes the base as prost encodes an `api.Bundle` holding just these fields (in field
/// number order, empty scalars left out), without building the message: at start-up that
/// is 20,000 messages of owned strings for the generated catalog.
fn write_base(out: &mut Vec<u8>, base: &BaseFields) {
    put_field(out, 1, base.csv_name.as_bytes(), false);
    put_field(out, 2, base.package.as_bytes(), false);
    put_field(out, 6, base.bundle_path.as_bytes(), false);
    for (tag, apis) in [(7, base.provided), (8, base.required)] {
        for [group, version, kind] in apis {
            put_message(out, tag, &[(1, group), (2, version), (3, kind)]);
        }
    }
    put_field(out, 9, base.version.as_bytes(), false);
    for (tag, entries) in [(11, base.dependencies), (12, base.properties)] {
        for (type_, value) in entries {
            put_message(out, tag, &[(1, type_), (2, value)]);
        }
    }
    if let Some(message) = base.deprecation {
        put_message(out, 15, &[(1, message)]);
    }
}

/// Appends an embedded message of string fields (empty ones left out).
fn put_message(out: &mut Vec<u8>, tag: u32, fields: &[(u32, &str)]) {
    use prost::encoding::{encode_key, encode_varint, encoded_len_varint, key_len};
    let len: usize = fields
        .iter()
        .filter(|(_, text)| !text.is_empty())
        .map(|(tag, text)| key_len(*tag) + encoded_len_varint(text.len() as u64) + text.len())
        .sum();
    encode_key(tag, prost::encoding::WireType::LengthDelimited, out);
    encode_varint(len as u64, out);
    for (tag, text) in fields {
        put_field(out, *tag, text.as_bytes(), false);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::serve::api;

    #[test]
    fn the_base_is_encoded_as_prost_encodes_the_message() {
        let gvk = |g: &str, v: &str, k: &str| [g.to_string(), v.to_string(), k.to_string()];
        let provided = [gvk("example.com", "v1", "Thing"), gvk("", "v1", "Other")];
        let required = [gvk("other.io", "v1beta1", "Need")];
        let dependencies = [("olm.gvk", Cow::Borrowed(r#"{"group":"other.io"}"#))];
        let properties = [
            (
                "olm.package",
                Cow::Borrowed(r#"{"packageName":"p","version":"1.0.0"}"#),
            ),
            ("olm.empty", Cow::Borrowed("")),
        ];
        for (path, deprecation) in [("quay.io/x:1", None), ("", Some("gone")), ("", Some(""))] {
            let mut out = Vec::new();
            write_base(
                &mut out,
                &BaseFields {
                    csv_name: "p.v1.0.0",
                    package: "p",
                    bundle_path: path,
                    provided: &provided,
                    required: &required,
                    version: "1.0.0",
                    dependencies: &dependencies,
                    properties: &properties,
                    deprecation,
                },
            );
            let api_gvk = |[g, v, k]: &[String; 3]| api::GroupVersionKind {
                group: g.clone(),
                version: v.clone(),
                kind: k.clone(),
                plural: String::new(),
            };
            let message = api::Bundle {
                csv_name: "p.v1.0.0".into(),
                package_name: "p".into(),
                bundle_path: path.into(),
                provided_apis: provided.iter().map(api_gvk).collect(),
                required_apis: required.iter().map(api_gvk).collect(),
                version: "1.0.0".into(),
                dependencies: dependencies
                    .iter()
                    .map(|(t, v)| api::Dependency {
                        r#type: t.to_string(),
                        value: v.to_string(),
                    })
                    .collect(),
                properties: properties
                    .iter()
                    .map(|(t, v)| api::Property {
                        r#type: t.to_string(),
                        value: v.to_string(),
                    })
                    .collect(),
                deprecation: deprecation.map(|m| api::Deprecation {
                    message: m.to_string(),
                }),
                ..Default::default()
            };
            assert_eq!(
                out,
                prost::Message::encode_to_vec(&message),
                "{deprecation:?}"
            );
        }
    }
}
