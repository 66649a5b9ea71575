//! Validates a custom resource against a CRD version's structural OpenAPI v3 schema the way
//! OLM v0 (v0.46.0) does before it updates a CRD: the API server's schema validator
//! (kube-openapi's, with no defaulting, pruning or CEL), whose errors become Kubernetes field
//! errors (`[].spec.size: Invalid value: "string": spec.size in body must be of type
//! integer: "string"`). Written from the behaviour and message formats, not from the Go code.
//!
//! What is checked: `type` (with `nullable` and `x-kubernetes-int-or-string`), `properties`,
//! `required`, `items`, `additionalProperties` (a schema or `false`), `enum`, `maximum`,
//! `minimum` (and their exclusive forms), `multipleOf`, `maxLength`, `minLength` (in
//! characters), `pattern`, `maxItems`, `minItems`, `maxProperties`, `minProperties`,
//! `allOf`, `anyOf`, `oneOf`, `not`, and the string formats of [`super::formats`]. Like OLM
//! v0: unknown fields are not errors (pruning, not validation, drops them, so
//! `x-kubernetes-preserve-unknown-fields` changes nothing here), and neither
//! `x-kubernetes-embedded-resource` nor CEL `x-kubernetes-validations` is evaluated.

use std::collections::HashMap;

use regex::Regex;
use serde_json::Value;

use crate::go_json::go_json;
use crate::go_quote::go_quote;

/// One field error, as Kubernetes prints it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldError {
    /// The field's path in the object (`spec.size`, `spec.items[0].name`; empty for the root).
    pub path: String,
    /// The value found there, as JSON, when the error is about a value.
    pub value: Option<String>,
    /// The error as `field.Error` prints it: `[].spec.size: Required value`.
    pub text: String,
}

/// Kubernetes' aggregate of field errors (`ToAggregate().Error()`): one error as it is,
/// several (duplicates dropped) in brackets, comma-separated.
pub fn aggregate(errors: &[FieldError]) -> String {
    let mut seen: Vec<&str> = Vec::new();
    for error in errors {
        if !seen.contains(&error.text.as_str()) {
            seen.push(&error.text);
        }
    }
    match seen.as_slice() {
        [one] => one.to_string(),
        many => format!("[{}]", many.join(", ")),
    }
}

/// Validates `object` against `schema` (a version's `schema.openAPIV3Schema`).
pub fn validate(schema: &Value, object: &Value) -> Vec<FieldError> {
    let mut validator = Validator {
        patterns: HashMap::new(),
        errors: Vec::new(),
    };
    validator.node(schema, object, "");
    validator.errors
}

struct Validator {
    patterns: HashMap<String, Option<Regex>>,
    errors: Vec<FieldError>,
}

/// The JSON type of a value as the validator names it (Go's decoding: whole numbers without a
/// fraction or exponent are integers).
fn type_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_f64() => "number",
        Value::Number(_) => "integer",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// A value as a field error shows it (`field.Error.ErrorBody`): strings quoted as Go's `%q`,
/// numbers and booleans as `%v`, anything else as JSON.
fn show(value: &Value) -> String {
    match value {
        Value::String(s) => go_quote(s),
        Value::Number(n) => match n.as_f64() {
            Some(f) if n.is_f64() => go_float(f),
            _ => n.to_string(),
        },
        Value::Bool(b) => b.to_string(),
        other => go_json(other),
    }
}

/// A float as Go's `%v` writes it (shortest form; exponent below 1e-4 and from 1e21).
fn go_float(f: f64) -> String {
    let abs = f.abs();
    if abs != 0.0 && !(1e-4..1e21).contains(&abs) {
        let text = format!("{f:e}");
        let (mantissa, exponent) = text.split_once('e').unwrap_or((&text, "0"));
        let (sign, digits) = match exponent.strip_prefix('-') {
            Some(d) => ('-', d),
            None => ('+', exponent),
        };
        return format!("{mantissa}e{sign}{digits:0>2}");
    }
    format!("{f}")
}

fn number(value: &Value) -> Option<f64> {
    value.as_f64()
}

fn count(schema: &Value, key: &str) -> Option<u64> {
    schema.get(key).and_then(Value::as_u64)
}

/// A property's path below `parent` (no leading dot at the root).
fn child(parent: &str, name: &str) -> String {
    if parent.is_empty() {
        name.to_string()
    } else {
        format!("{parent}.{name}")
    }
}

/// The field path as the validator's error names it: `[]` is the root OLM validates from.
fn field(path: &str) -> String {
    if path.is_empty() {
        "[]".to_string()
    } else {
        format!("[].{path}")
    }
}

impl Validator {
    fn push(&mut self, path: &str, value: Option<&Value>, body: String) {
        self.errors.push(FieldError {
            path: path.to_string(),
            value: value.map(go_json),
            text: format!("{}: {body}", field(path)),
        });
    }

    /// `Invalid value: V: DETAIL` where DETAIL is the validator's own message.
    fn invalid(&mut self, path: &str, value: &Value, shown: String, detail: String) {
        self.push(
            path,
            Some(value),
            format!("Invalid value: {shown}: {path} in body {detail}"),
        );
    }

    fn node(&mut self, schema: &Value, value: &Value, path: &str) {
        let Some(schema) = schema.as_object().map(|_| schema) else {
            return;
        };
        self.check_type(schema, value, path);
        self.check_compositions(schema, value, path);
        if value.is_null() {
            self.check_enum(schema, value, path);
            return;
        }
        if let Value::String(text) = value {
            self.check_string(schema, value, text, path);
        }
        self.check_enum(schema, value, path);
        match value {
            Value::Array(items) => self.check_array(schema, items, path),
            Value::Number(_) => self.check_number(schema, value, path),
            Value::Object(map) => self.check_object(schema, map, path),
            _ => {}
        }
    }

    fn check_type(&mut self, schema: &Value, value: &Value, path: &str) {
        let int_or_string = schema["x-kubernetes-int-or-string"].as_bool() == Some(true);
        let types: Vec<&str> = if int_or_string {
            vec!["integer", "string"]
        } else {
            match schema["type"].as_str() {
                Some(t) if !t.is_empty() => vec![t],
                _ => return,
            }
        };
        let actual = type_of(value);
        let ok = match actual {
            "null" => schema["nullable"].as_bool() == Some(true),
            "integer" => types.contains(&"integer") || types.contains(&"number"),
            "number" => {
                types.contains(&"number")
                    || (types.contains(&"integer")
                        && value.as_f64().is_some_and(|f| f.fract() == 0.0))
            }
            other => types.contains(&other),
        };
        if !ok {
            let wanted = types.join(",");
            self.push(
                path,
                Some(value),
                format!(
                    "Invalid value: {}: {path} in body must be of type {wanted}: {}",
                    go_quote(actual),
                    go_quote(actual)
                ),
            );
        }
    }

    fn check_compositions(&mut self, schema: &Value, value: &Value, path: &str) {
        let passes = |this: &mut Validator, sub: &Value| {
            let mut inner = Validator {
                patterns: std::mem::take(&mut this.patterns),
                errors: Vec::new(),
            };
            inner.node(sub, value, path);
            this.patterns = inner.patterns;
            inner.errors
        };
        let composite = |this: &mut Validator, message: String| {
            this.errors.push(FieldError {
                path: path.to_string(),
                value: None,
                text: format!("[]: Invalid value: \"\": {message}"),
            });
        };
        if let Some(all) = schema["allOf"].as_array() {
            let mut failed = false;
            for sub in all {
                let errors = passes(self, sub);
                failed |= !errors.is_empty();
                self.errors.extend(errors);
            }
            if failed {
                composite(
                    self,
                    format!("{} must validate all the schemas (allOf)", go_quote(path)),
                );
            }
        }
        if let Some(any) = schema["anyOf"].as_array()
            && !any.is_empty()
            && !any.iter().any(|sub| passes(self, sub).is_empty())
        {
            composite(
                self,
                format!(
                    "{} must validate at least one schema (anyOf)",
                    go_quote(path)
                ),
            );
        }
        if let Some(one) = schema["oneOf"].as_array()
            && !one.is_empty()
        {
            let valid = one
                .iter()
                .filter(|sub| passes(self, sub).is_empty())
                .count();
            if valid != 1 {
                let detail = if valid == 0 {
                    "Found none valid".to_string()
                } else {
                    format!("Found {valid} valid alternatives")
                };
                composite(
                    self,
                    format!(
                        "{} must validate one and only one schema (oneOf). {detail}",
                        go_quote(path)
                    ),
                );
            }
        }
        if let Some(not) = schema.get("not").filter(|s| s.is_object())
            && passes(self, not).is_empty()
        {
            composite(
                self,
                format!("{} must not validate the schema (not)", go_quote(path)),
            );
        }
    }

    fn check_enum(&mut self, schema: &Value, value: &Value, path: &str) {
        let Some(allowed) = schema["enum"].as_array() else {
            return;
        };
        if allowed.is_empty() || allowed.iter().any(|a| same(a, value)) {
            return;
        }
        let listed: Vec<String> = allowed
            .iter()
            .map(|a| match a {
                Value::String(s) => go_quote(s),
                other => go_quote(&go_json(other)),
            })
            .collect();
        self.push(
            path,
            Some(value),
            format!(
                "Unsupported value: {}: supported values: {}",
                show(value),
                listed.join(", ")
            ),
        );
    }

    fn check_string(&mut self, schema: &Value, value: &Value, text: &str, path: &str) {
        let length = text.chars().count() as u64;
        if let Some(max) = count(schema, "maxLength")
            && length > max
        {
            let unit = if max == 1 { "byte" } else { "bytes" };
            self.push(
                path,
                Some(value),
                format!("Too long: may not be more than {max} {unit}"),
            );
        }
        if let Some(min) = count(schema, "minLength")
            && length < min
        {
            self.invalid(
                path,
                value,
                show(value),
                format!("should be at least {min} chars long"),
            );
        }
        if let Some(pattern) = schema["pattern"].as_str().filter(|p| !p.is_empty()) {
            let regex = self
                .patterns
                .entry(pattern.to_string())
                .or_insert_with(|| Regex::new(pattern).ok());
            if let Some(regex) = regex
                && !regex.is_match(text)
            {
                let detail = format!("should match '{pattern}'");
                self.invalid(path, value, show(value), detail);
            }
        }
        if let Some(format) = schema["format"].as_str()
            && let Some(valid) = super::formats::valid(format, text)
            && !valid
        {
            self.push(
                path,
                Some(value),
                format!(
                    "Invalid value: {}: {path} in body must be of type {format}: {}",
                    show(value),
                    go_quote(text)
                ),
            );
        }
    }

    fn check_number(&mut self, schema: &Value, value: &Value, path: &str) {
        let Some(n) = number(value) else { return };
        let exclusive = |key: &str| schema[key].as_bool() == Some(true);
        if let Some(max) = number(&schema["maximum"]) {
            if exclusive("exclusiveMaximum") && n >= max {
                self.invalid(
                    path,
                    value,
                    show(value),
                    format!("should be less than {}", go_float(max)),
                );
            } else if n > max {
                self.invalid(
                    path,
                    value,
                    show(value),
                    format!("should be less than or equal to {}", go_float(max)),
                );
            }
        }
        if let Some(min) = number(&schema["minimum"]) {
            if exclusive("exclusiveMinimum") && n <= min {
                self.invalid(
                    path,
                    value,
                    show(value),
                    format!("should be greater than {}", go_float(min)),
                );
            } else if n < min {
                self.invalid(
                    path,
                    value,
                    show(value),
                    format!("should be greater than or equal to {}", go_float(min)),
                );
            }
        }
        if let Some(factor) = number(&schema["multipleOf"]).filter(|f| *f > 0.0) {
            let quotient = n / factor;
            if (quotient - quotient.round()).abs() > 1e-9 {
                self.invalid(
                    path,
                    value,
                    show(value),
                    format!("should be a multiple of {}", go_float(factor)),
                );
            }
        }
    }

    fn check_array(&mut self, schema: &Value, items: &[Value], path: &str) {
        let size = items.len() as u64;
        if let Some(max) = count(schema, "maxItems")
            && size > max
        {
            let unit = if max == 1 { "item" } else { "items" };
            self.push(
                path,
                None,
                format!("Too many: {size}: must have at most {max} {unit}"),
            );
        }
        if let Some(min) = count(schema, "minItems")
            && size < min
        {
            self.invalid(
                path,
                &Value::from(size),
                size.to_string(),
                format!("should have at least {min} items"),
            );
        }
        if let Some(item_schema) = schema.get("items").filter(|s| s.is_object()) {
            for (index, item) in items.iter().enumerate() {
                self.node(item_schema, item, &format!("{path}[{index}]"));
            }
        }
    }

    fn check_object(&mut self, schema: &Value, map: &serde_json::Map<String, Value>, path: &str) {
        let size = map.len() as u64;
        if let Some(min) = count(schema, "minProperties")
            && size < min
        {
            self.invalid(
                path,
                &Value::from(size),
                size.to_string(),
                format!("should have at least {min} properties"),
            );
        }
        if let Some(max) = count(schema, "maxProperties")
            && size > max
        {
            let unit = if max == 1 { "item" } else { "items" };
            self.push(
                path,
                None,
                format!("Too many: {size}: must have at most {max} {unit}"),
            );
        }
        let properties = schema["properties"].as_object();
        let declared = |key: &str| properties.is_some_and(|p| p.contains_key(key));
        match schema.get("additionalProperties") {
            Some(Value::Bool(false)) => {
                for key in map.keys().filter(|k| !declared(k)) {
                    let name = if path.is_empty() { "" } else { path };
                    self.errors.push(FieldError {
                        path: child(path, key),
                        value: None,
                        text: format!(
                            "{}: Invalid value: {}: {name}.{key} in body is a forbidden property",
                            field(path),
                            go_quote(key)
                        ),
                    });
                }
            }
            Some(extra) if extra.is_object() => {
                for (key, item) in map.iter().filter(|(k, _)| !declared(k)) {
                    self.node(extra, item, &child(path, key));
                }
            }
            _ => {}
        }
        if let Some(properties) = properties {
            for (name, property) in properties {
                if let Some(item) = map.get(name) {
                    self.node(property, item, &child(path, name));
                }
            }
        }
        if let Some(required) = schema["required"].as_array() {
            for name in required.iter().filter_map(Value::as_str) {
                if !map.contains_key(name) {
                    self.push(&child(path, name), None, "Required value".to_string());
                }
            }
        }
    }
}

/// JSON equality with numbers compared by value (`1` and `1.0` are the same).
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn texts(schema: Value, object: Value) -> Vec<String> {
        validate(&schema, &object)
            .into_iter()
            .map(|e| e.text)
            .collect()
    }

    fn spec(properties: Value) -> Value {
        json!({"type": "object", "properties": {"spec": {"type": "object", "properties": properties}}})
    }

    #[test]
    fn accepts_a_matching_object_and_unknown_fields() {
        let schema = spec(json!({"size": {"type": "integer", "minimum": 1}}));
        assert!(texts(schema.clone(), json!({"spec": {"size": 3, "extra": "x"}})).is_empty());
        assert!(texts(schema, json!({"kind": "K", "metadata": {"name": "a"}})).is_empty());
    }

    #[test]
    fn type_errors_name_the_found_type() {
        let schema = spec(json!({"size": {"type": "integer"}, "ref": {"type": "object"}}));
        assert_eq!(
            texts(schema.clone(), json!({"spec": {"size": "3"}})),
            [
                r#"[].spec.size: Invalid value: "string": spec.size in body must be of type integer: "string""#
            ]
        );
        // OLM's own test text for a null object.
        assert_eq!(
            texts(schema.clone(), json!({"spec": {"ref": null}})),
            [
                r#"[].spec.ref: Invalid value: "null": spec.ref in body must be of type object: "null""#
            ]
        );
        // A whole float is an integer; a fraction is not.
        assert!(texts(schema.clone(), json!({"spec": {"size": 3.0}})).is_empty());
        assert_eq!(texts(schema, json!({"spec": {"size": 3.5}})).len(), 1);
    }

    #[test]
    fn nullable_and_int_or_string() {
        let schema = spec(json!({
            "a": {"type": "string", "nullable": true},
            "port": {"x-kubernetes-int-or-string": true},
        }));
        assert!(texts(schema.clone(), json!({"spec": {"a": null, "port": "http"}})).is_empty());
        assert!(texts(schema.clone(), json!({"spec": {"port": 80}})).is_empty());
        assert_eq!(
            texts(schema, json!({"spec": {"port": true}})),
            [
                r#"[].spec.port: Invalid value: "boolean": spec.port in body must be of type integer,string: "boolean""#
            ]
        );
    }

    #[test]
    fn required_fields() {
        let schema = json!({"type": "object", "required": ["spec"], "properties": {
            "spec": {"type": "object", "required": ["name", "platform"]}}});
        assert_eq!(
            texts(schema.clone(), json!({})),
            ["[].spec: Required value"]
        );
        assert_eq!(
            texts(schema, json!({"spec": {"name": "x"}})),
            ["[].spec.platform: Required value"]
        );
    }

    #[test]
    fn numbers_bounds_as_olm_prints_them() {
        let schema = spec(json!({
            "scalar": {"type": "integer", "minimum": 3, "maximum": 50},
            "ratio": {"type": "number", "maximum": 1, "exclusiveMaximum": true},
            "step": {"type": "integer", "multipleOf": 5},
        }));
        assert_eq!(
            texts(schema.clone(), json!({"spec": {"scalar": 2}})),
            [
                "[].spec.scalar: Invalid value: 2: spec.scalar in body should be greater than or equal to 3"
            ]
        );
        assert_eq!(
            texts(schema.clone(), json!({"spec": {"scalar": 100}})),
            [
                "[].spec.scalar: Invalid value: 100: spec.scalar in body should be less than or equal to 50"
            ]
        );
        assert_eq!(
            texts(schema.clone(), json!({"spec": {"ratio": 1}})),
            ["[].spec.ratio: Invalid value: 1: spec.ratio in body should be less than 1"]
        );
        assert_eq!(
            texts(schema, json!({"spec": {"step": 7}})),
            ["[].spec.step: Invalid value: 7: spec.step in body should be a multiple of 5"]
        );
    }

    #[test]
    fn strings_enum_pattern_lengths_formats() {
        let schema = spec(json!({
            "mode": {"type": "string", "enum": ["safe", "fast"]},
            "name": {"type": "string", "pattern": "^[a-z]+$", "maxLength": 3, "minLength": 2},
            "ip": {"type": "string", "format": "ipv4"},
            "id": {"type": "string", "format": "uuid"},
            "mail": {"type": "string", "format": "email"},
        }));
        assert_eq!(
            texts(schema.clone(), json!({"spec": {"mode": "slow"}})),
            [r#"[].spec.mode: Unsupported value: "slow": supported values: "safe", "fast""#]
        );
        assert_eq!(
            texts(schema.clone(), json!({"spec": {"name": "ABCD"}})),
            [
                "[].spec.name: Too long: may not be more than 3 bytes",
                r#"[].spec.name: Invalid value: "ABCD": spec.name in body should match '^[a-z]+$'"#
            ]
        );
        assert_eq!(
            texts(schema.clone(), json!({"spec": {"name": "a"}})),
            [
                r#"[].spec.name: Invalid value: "a": spec.name in body should be at least 2 chars long"#
            ]
        );
        assert_eq!(
            texts(schema.clone(), json!({"spec": {"ip": "10.0.0"}})),
            [
                r#"[].spec.ip: Invalid value: "10.0.0": spec.ip in body must be of type ipv4: "10.0.0""#
            ]
        );
        assert!(
            texts(
                schema,
                json!({"spec": {"ip": "10.0.0.1", "id": "123E4567-e89b12d3-a456-426614174000", "mail": "not checked"}})
            )
            .is_empty()
        );
    }

    #[test]
    fn arrays_maps_and_counts() {
        let schema = spec(json!({
            "tags": {"type": "array", "maxItems": 2, "minItems": 1, "items": {"type": "string"}},
            "labels": {"type": "object", "maxProperties": 1, "additionalProperties": {"type": "string"}},
        }));
        assert_eq!(
            texts(schema.clone(), json!({"spec": {"tags": ["a", 1, "c"]}})),
            [
                "[].spec.tags: Too many: 3: must have at most 2 items",
                r#"[].spec.tags[1]: Invalid value: "integer": spec.tags[1] in body must be of type string: "integer""#
            ]
        );
        assert_eq!(
            texts(schema.clone(), json!({"spec": {"tags": []}})),
            ["[].spec.tags: Invalid value: 0: spec.tags in body should have at least 1 items"]
        );
        assert_eq!(
            texts(schema, json!({"spec": {"labels": {"a": "x", "b": 2}}})),
            [
                "[].spec.labels: Too many: 2: must have at most 1 item",
                r#"[].spec.labels.b: Invalid value: "integer": spec.labels.b in body must be of type string: "integer""#
            ]
        );
    }

    #[test]
    fn compositions_and_extensions_not_evaluated() {
        let schema = spec(json!({
            "x": {"type": "integer", "anyOf": [{"minimum": 10}, {"maximum": 0}]},
            "raw": {"type": "object", "x-kubernetes-embedded-resource": true,
                    "x-kubernetes-preserve-unknown-fields": true},
            "c": {"type": "integer", "x-kubernetes-validations": [{"rule": "self > 100"}]},
        }));
        assert_eq!(
            texts(schema.clone(), json!({"spec": {"x": 5}})),
            [r#"[]: Invalid value: "": "spec.x" must validate at least one schema (anyOf)"#]
        );
        assert!(
            texts(
                schema,
                json!({"spec": {"x": 11, "raw": {"anything": 1}, "c": 1}})
            )
            .is_empty()
        );
    }

    #[test]
    fn aggregate_as_kubernetes_joins() {
        let error = |text: &str| FieldError {
            path: String::new(),
            value: None,
            text: text.to_string(),
        };
        assert_eq!(aggregate(&[error("a")]), "a");
        assert_eq!(aggregate(&[error("a"), error("b"), error("a")]), "[a, b]");
    }

    #[test]
    fn go_floats() {
        assert_eq!(go_float(3.0), "3");
        assert_eq!(go_float(0.5), "0.5");
        assert_eq!(go_float(1e21), "1e+21");
        assert_eq!(go_float(0.00001), "1e-05");
    }
}
