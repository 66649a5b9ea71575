//! What differs between a bundle already in the catalog and the same version generated now:
//! empty means a re-release is the same release.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::catalog::declcfg::Bundle;

/// The most differing fields listed for one object (the rest are counted).
const FIELDS_SHOWN: usize = 5;

/// The differences, one line each, naming the property, object and field; empty when the
/// two render the same.
pub fn differences(released: &Bundle, new: &Bundle) -> Vec<String> {
    let mut out = Vec::new();
    if released.image != new.image {
        out.push(format!(
            "image: the catalog records {:?}, this release {:?}",
            released.image, new.image
        ));
    }
    if released.related_images != new.related_images {
        out.push("relatedImages differ".into());
    }
    let (old_properties, old_objects) = split(released);
    let (new_properties, new_objects) = split(new);
    for (type_, values) in &old_properties {
        match new_properties.get(type_) {
            Some(other) if other == values => {}
            Some(_) => out.push(format!("property {type_} differs")),
            None => out.push(format!("property {type_} is gone")),
        }
    }
    for type_ in new_properties.keys() {
        if !old_properties.contains_key(type_) {
            out.push(format!("property {type_} is new"));
        }
    }
    for (id, object) in &old_objects {
        match new_objects.get(id) {
            Some(other) if other == object => {}
            Some(other) => {
                let mut fields = Vec::new();
                changed_fields(object, other, String::new(), &mut fields);
                let shown = fields.len().min(FIELDS_SHOWN);
                let more = match fields.len() - shown {
                    0 => String::new(),
                    n => format!(" and {n} more"),
                };
                out.push(format!("{id}: {}{more}", fields[..shown].join(", ")));
            }
            None => out.push(format!("{id}: no longer in the bundle")),
        }
    }
    for id in new_objects.keys() {
        if !old_objects.contains_key(id) {
            out.push(format!("{id}: new in the bundle"));
        }
    }
    out
}

/// Sorted values per property type (objects apart), and the bundle's objects by kind/name.
type Split = (BTreeMap<String, Vec<Value>>, BTreeMap<String, Value>);

fn split(bundle: &Bundle) -> Split {
    let mut properties: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    for property in bundle
        .properties
        .iter()
        .filter(|p| p.type_ != crate::olm_property::BUNDLE_OBJECT)
    {
        properties
            .entry(property.type_.to_string())
            .or_default()
            .push(property.value.to_value());
    }
    for values in properties.values_mut() {
        values.sort_by_key(Value::to_string);
    }
    let objects = bundle
        .objects()
        .iter()
        .filter_map(|bytes| serde_json::from_slice::<Value>(bytes).ok())
        .map(|object| {
            let id = format!(
                "{} {}",
                object["kind"].as_str().unwrap_or("object"),
                object["metadata"]["name"].as_str().unwrap_or_default()
            );
            (id, object)
        })
        .collect();
    (properties, objects)
}

/// JSON paths (`/spec/version`) where `old` and `new` differ, leaf-most.
fn changed_fields(old: &Value, new: &Value, at: String, out: &mut Vec<String>) {
    match (old, new) {
        (Value::Object(a), Value::Object(b)) => {
            for key in a.keys().chain(b.keys().filter(|k| !a.contains_key(*k))) {
                let path = format!("{at}/{key}");
                match (a.get(key), b.get(key)) {
                    (Some(x), Some(y)) if x == y => {}
                    (Some(x), Some(y)) => changed_fields(x, y, path, out),
                    _ => out.push(path),
                }
            }
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
            for (index, (x, y)) in a.iter().zip(b).enumerate() {
                if x != y {
                    changed_fields(x, y, format!("{at}/{index}"), out);
                }
            }
        }
        _ => out.push(if at.is_empty() { "/".into() } else { at }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::declcfg::{Property, RawJson};

    fn bundle(version: &str, replicas: u32) -> Bundle {
        let object = serde_json::json!({
            "kind": "ClusterServiceVersion",
            "metadata": {"name": "p.v1"},
            "spec": {"version": version, "replicas": replicas},
        });
        let data = base64::Engine::encode(
            &base64::engine::general_purpose::STANDARD,
            object.to_string(),
        );
        Bundle {
            schema: "olm.bundle".into(),
            name: "p.v1".into(),
            package: "p".into(),
            image: "example.com/p:v1".into(),
            properties: vec![
                Property {
                    type_: "olm.package".into(),
                    value: RawJson::from_value(
                        &serde_json::json!({"packageName": "p", "version": version}),
                    ),
                },
                Property {
                    type_: "olm.bundle.object".into(),
                    value: RawJson::from_value(&serde_json::json!({"data": data})),
                },
            ],
            related_images: Vec::new(),
        }
    }

    #[test]
    fn the_same_bundle_has_no_differences_and_a_changed_one_names_its_fields() {
        assert!(differences(&bundle("1.0.0", 1), &bundle("1.0.0", 1)).is_empty());
        let found = differences(&bundle("1.0.0", 1), &bundle("1.0.0", 2));
        assert_eq!(found, ["ClusterServiceVersion p.v1: /spec/replicas"]);
        let found = differences(&bundle("1.0.0", 1), &bundle("1.0.1", 1));
        assert_eq!(
            found,
            [
                "property olm.package differs",
                "ClusterServiceVersion p.v1: /spec/version"
            ]
        );
    }
}
