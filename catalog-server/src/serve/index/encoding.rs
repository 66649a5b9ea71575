//! The protobuf wire format of `api.Bundle`, written by hand: the stored base of every bundle
//! is encoded once at build time, and answers append the fields that depend on the channel
//! and the RPC to it, so neither side builds a message to encode it.

use std::borrow::Cow;

/// Field numbers of `api.Bundle` that answers add to the stored base (registry.proto).
pub(super) mod bundle_field {
    pub const CHANNEL_NAME: u32 = 3;
    pub const CSV_JSON: u32 = 4;
    pub const OBJECT: u32 = 5;
    pub const SKIP_RANGE: u32 = 10;
    pub const REPLACES: u32 = 13;
    pub const SKIPS: u32 = 14;
}

/// Appends a string field; an empty one only if `repeated` (proto3 leaves an empty scalar
/// out, but every element of a list is sent).
pub(super) fn put_field(out: &mut Vec<u8>, tag: u32, text: &[u8], repeated: bool) {
    if text.is_empty() && !repeated {
        return;
    }
    prost::encoding::encode_key(tag, prost::encoding::WireType::LengthDelimited, out);
    prost::encoding::encode_varint(text.len() as u64, out);
    out.extend_from_slice(text);
}

/// The fields of a bundle's `api.Bundle` that every answer shares (the stored base).
pub(super) struct BaseFields<'a> {
    pub(super) csv_name: &'a str,
    pub(super) package: &'a str,
    pub(super) bundle_path: &'a str,
    pub(super) provided: &'a [[String; 3]],
    pub(super) required: &'a [[String; 3]],
    pub(super) version: &'a str,
    /// (type, value) of each dependency.
    pub(super) dependencies: &'a [(&'a str, Cow<'a, str>)],
    /// (type, value) of each property.
    pub(super) properties: &'a [(&'a str, Cow<'a, str>)],
    pub(super) deprecation: Option<&'a str>,
}

/// Encodes the base as prost encodes an `api.Bundle` holding just these fields (in field
/// number order, empty scalars left out), without building the message: at start-up that
/// is 20,000 messages of owned strings for the generated catalog.
pub(super) fn write_base(out: &mut Vec<u8>, base: &BaseFields) {
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
