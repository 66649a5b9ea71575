//! OpenAPI schemas as operator-controller's preflight sees them: walked into one node per
//! property path (crdify's flattening), each node reduced to the fields Go decodes into
//! `JSONSchemaProps`, and values printed the way Go's `fmt` prints them in crdify's messages.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

/// One schema node with its children (`properties`, `items`) dropped: the unit crdify
/// compares, so that a child's change is reported on the child only.
pub type Node = Map<String, Value>;

/// Every node of a version's schema by its simple path (`^`, `^.spec.size`,
/// `^.spec.list.items`, `^.spec.x.oneOf[0]`), as crdify's `FlattenCRDVersion` names them,
/// each already reduced by [`node`] (so no node holds a copy of its subtree).
pub fn flatten(schema: Option<&Value>) -> BTreeMap<String, Node> {
    let mut nodes = BTreeMap::new();
    if let Some(schema) = schema.filter(|s| s.is_object()) {
        walk(schema, "^".to_string(), &mut nodes);
    }
    nodes
}

fn walk(schema: &Value, path: String, nodes: &mut BTreeMap<String, Node>) {
    let Some(object) = schema.as_object() else {
        return;
    };
    // A later node at the same path replaces an earlier one, as in crdify's map.
    nodes.insert(path.clone(), node(schema));
    match object.get("items") {
        Some(items @ Value::Object(_)) => walk(items, format!("{path}.items"), nodes),
        Some(Value::Array(list)) => {
            for (index, item) in list.iter().enumerate() {
                walk(item, format!("{path}.items[{index}]"), nodes);
            }
        }
        _ => {}
    }
    for keyword in ["allOf", "anyOf", "oneOf"] {
        if let Some(Value::Array(list)) = object.get(keyword) {
            for (index, item) in list.iter().enumerate() {
                walk(item, format!("{path}.{keyword}[{index}]"), nodes);
            }
        }
    }
    if let Some(not) = object.get("not") {
        walk(not, format!("{path}.not"), nodes);
    }
    if let Some(Value::Object(properties)) = object.get("properties") {
        for (name, property) in properties {
            walk(property, format!("{path}.{name}"), nodes);
        }
    }
    for keyword in ["additionalProperties", "additionalItems"] {
        if let Some(child @ Value::Object(_)) = object.get(keyword) {
            walk(child, format!("{path}.{keyword}"), nodes);
        }
    }
    for keyword in ["patternProperties", "definitions", "dependencies"] {
        if let Some(Value::Object(children)) = object.get(keyword) {
            for (key, child) in children {
                // A dependency may be a list of property names: only schemas are walked.
                walk(child, format!("{path}.{keyword}[{key}]"), nodes);
            }
        }
    }
}

/// How Go holds a field of `JSONSchemaProps`, which decides what counts as "unset".
#[derive(Clone, Copy, PartialEq, Eq)]
enum FieldKind {
    /// A plain string or bool: "" and false are the same as absent.
    Plain,
    /// A pointer, a raw JSON value or a nested schema: absent only when absent.
    Pointer,
    /// A slice or map: empty is the same as absent (Kubernetes' semantic equality).
    Collection,
    /// A float64 pointer (`maximum`, `minimum`, `multipleOf`): 1 and 1.0 are the same.
    Float,
}

/// The fields of `JSONSchemaProps`: JSON name, Go name, kind. Anything else in a schema is
/// dropped when Go decodes it, so it cannot differ.
const FIELDS: [(&str, &str, FieldKind); 44] = [
    ("id", "ID", FieldKind::Plain),
    ("$schema", "Schema", FieldKind::Plain),
    ("$ref", "Ref", FieldKind::Pointer),
    ("description", "Description", FieldKind::Plain),
    ("type", "Type", FieldKind::Plain),
    ("format", "Format", FieldKind::Plain),
    ("title", "Title", FieldKind::Plain),
    ("default", "Default", FieldKind::Pointer),
    ("maximum", "Maximum", FieldKind::Float),
    ("exclusiveMaximum", "ExclusiveMaximum", FieldKind::Plain),
    ("minimum", "Minimum", FieldKind::Float),
    ("exclusiveMinimum", "ExclusiveMinimum", FieldKind::Plain),
    ("maxLength", "MaxLength", FieldKind::Pointer),
    ("minLength", "MinLength", FieldKind::Pointer),
    ("pattern", "Pattern", FieldKind::Plain),
    ("maxItems", "MaxItems", FieldKind::Pointer),
    ("minItems", "MinItems", FieldKind::Pointer),
    ("uniqueItems", "UniqueItems", FieldKind::Plain),
    ("multipleOf", "MultipleOf", FieldKind::Float),
    ("enum", "Enum", FieldKind::Collection),
    ("maxProperties", "MaxProperties", FieldKind::Pointer),
    ("minProperties", "MinProperties", FieldKind::Pointer),
    ("required", "Required", FieldKind::Collection),
    ("items", "Items", FieldKind::Pointer),
    ("allOf", "AllOf", FieldKind::Collection),
    ("oneOf", "OneOf", FieldKind::Collection),
    ("anyOf", "AnyOf", FieldKind::Collection),
    ("not", "Not", FieldKind::Pointer),
    ("properties", "Properties", FieldKind::Collection),
    (
        "additionalProperties",
        "AdditionalProperties",
        FieldKind::Pointer,
    ),
    (
        "patternProperties",
        "PatternProperties",
        FieldKind::Collection,
    ),
    ("dependencies", "Dependencies", FieldKind::Collection),
    ("additionalItems", "AdditionalItems", FieldKind::Pointer),
    ("definitions", "Definitions", FieldKind::Collection),
    ("externalDocs", "ExternalDocs", FieldKind::Pointer),
    ("example", "Example", FieldKind::Pointer),
    ("nullable", "Nullable", FieldKind::Plain),
    (
        "x-kubernetes-preserve-unknown-fields",
        "XPreserveUnknownFields",
        FieldKind::Pointer,
    ),
    (
        "x-kubernetes-embedded-resource",
        "XEmbeddedResource",
        FieldKind::Plain,
    ),
    (
        "x-kubernetes-int-or-string",
        "XIntOrString",
        FieldKind::Plain,
    ),
    (
        "x-kubernetes-list-map-keys",
        "XListMapKeys",
        FieldKind::Collection,
    ),
    ("x-kubernetes-list-type", "XListType", FieldKind::Pointer),
    ("x-kubernetes-map-type", "XMapType", FieldKind::Pointer),
    (
        "x-kubernetes-validations",
        "XValidations",
        FieldKind::Collection,
    ),
];

/// How Go's diff writes a field's value (for the `unhandled` message).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GoShape {
    /// A plain string or bool: unset is `""` or `false`.
    Plain,
    /// A pointer or a slice: unset is `nil`, a pointer's value is written `&value`.
    Pointer,
    /// A slice or map: unset is `nil`, a list of strings is written `[]string{"a"}`.
    Collection,
}

/// Every field of `JSONSchemaProps` in Go's order: JSON name, Go name, how Go writes it.
pub fn go_fields() -> impl Iterator<Item = (&'static str, &'static str, GoShape)> {
    FIELDS.iter().map(|(json, go, kind)| {
        let shape = match kind {
            FieldKind::Plain => GoShape::Plain,
            FieldKind::Pointer | FieldKind::Float => GoShape::Pointer,
            FieldKind::Collection => GoShape::Collection,
        };
        (*json, *go, shape)
    })
}

/// A node as Go would hold it after decoding, children dropped: unknown keys gone, unset
/// plain fields and empty collections gone, numbers in one form, objects with sorted keys.
pub fn node(schema: &Value) -> Node {
    let mut out = Map::new();
    let Some(object) = schema.as_object() else {
        return out;
    };
    for (json, _, kind) in FIELDS {
        if json == "properties" || json == "items" {
            continue;
        }
        let Some(value) = object.get(json) else {
            continue;
        };
        let keep = match kind {
            FieldKind::Plain => {
                !matches!(value, Value::Null | Value::Bool(false)) && value.as_str() != Some("")
            }
            FieldKind::Pointer => !value.is_null(),
            FieldKind::Collection => match value {
                Value::Array(list) => !list.is_empty(),
                Value::Object(map) => !map.is_empty(),
                Value::Null => false,
                _ => true,
            },
            FieldKind::Float => !value.is_null(),
        };
        if keep {
            out.insert(json.to_string(), canonical(value));
        }
    }
    out
}

/// A JSON value with object keys sorted and whole floats written as integers, so that two
/// spellings of one value compare equal (Go's YAML-to-JSON step writes them this way).
pub fn canonical(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            Value::Object(
                entries
                    .into_iter()
                    .map(|(k, v)| (k.clone(), canonical(v)))
                    .collect(),
            )
        }
        Value::Array(list) => Value::Array(list.iter().map(canonical).collect()),
        Value::Number(number) => match number.as_f64() {
            Some(f) if number.is_f64() && f.fract() == 0.0 && f.abs() < 9.0e15 => {
                Value::from(f as i64)
            }
            _ => value.clone(),
        },
        other => other.clone(),
    }
}

/// Compact JSON text with sorted keys: what Go's `json.RawMessage` holds for a value.
pub fn raw_text(value: &Value) -> String {
    serde_json::to_string(&canonical(value)).unwrap_or_default()
}

pub use crate::go_quote::go_quote;

/// Go's `%v` of a `[]string`: `[a b]`.
pub fn go_list<S: AsRef<str>>(items: &[S]) -> String {
    let joined: Vec<&str> = items.iter().map(AsRef::as_ref).collect();
    format!("[{}]", joined.join(" "))
}

/// Go's `%v` of a number crdify compares (an int64, or a float64 written shortest).
pub fn go_number(value: &Value) -> String {
    match value {
        Value::Number(number) if number.is_f64() => {
            let f = number.as_f64().unwrap_or_default();
            if f.fract() == 0.0 && f.abs() < 1e21 {
                format!("{f:.0}")
            } else {
                f.to_string()
            }
        }
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn paths_are_named_like_crdify() {
        let schema = json!({
            "type": "object",
            "properties": {"spec": {"type": "object", "properties": {
                "list": {"type": "array", "items": {"type": "string"}},
                "choice": {"oneOf": [{"required": ["a"]}]},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}}
            }}}
        });
        let paths: Vec<String> = flatten(Some(&schema)).into_keys().collect();
        assert_eq!(
            paths,
            [
                "^",
                "^.spec",
                "^.spec.choice",
                "^.spec.choice.oneOf[0]",
                "^.spec.labels",
                "^.spec.labels.additionalProperties",
                "^.spec.list",
                "^.spec.list.items",
            ]
        );
    }

    #[test]
    fn unset_values_are_dropped_as_go_decodes_them() {
        let a = node(
            &json!({"type": "integer", "nullable": false, "enum": [], "maximum": 10.0,
            "x-kubernetes-preserve-unknown-fields": false, "bogus": 1, "properties": {"a": {}}}),
        );
        assert_eq!(
            Value::Object(a),
            json!({"type": "integer", "maximum": 10, "x-kubernetes-preserve-unknown-fields": false})
        );
    }

    #[test]
    fn go_formatting() {
        assert_eq!(go_quote("a\"b"), r#""a\"b""#);
        assert_eq!(go_list(&["\"a\"", "\"b\""]), r#"["a" "b"]"#);
        assert_eq!(go_number(&json!(10.0)), "10");
        assert_eq!(go_number(&json!(2.5)), "2.5");
        assert_eq!(go_number(&json!(7)), "7");
    }
}
