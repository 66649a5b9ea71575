//! The check operator-sdk's `bundle validate` runs on every bundle object other than the CSV
//! and the CRDs: Kubernetes' `ValidateObjectMetaAccessor` on the object's metadata, as for a
//! cluster-scoped type whatever the kind, with no name rule. So a ServiceAccount, ConfigMap or
//! ClusterRole that carries `metadata.namespace` is an error (OLM puts namespaced objects in
//! the install namespace itself), as is an object without a name or with bad labels,
//! annotations or finalizers.
//!
//! operator-sdk reports all of one object's field errors in one message, Kubernetes'
//! aggregate of them followed by a Go `%v` dump of the object, with the object's name as the
//! value: `error validating object: metadata.namespace: Forbidden: not allowed on this type.
//! &{map[apiVersion:v1 kind:ConfigMap metadata:map[name:x namespace:y]]}`.

use serde_json::Value;

use super::Finding;
use super::crd::{object_meta, rules};

/// The metadata finding of one object (a kind other than CSV or CRD), if it has problems.
pub fn finding(object: &Value) -> Option<Finding> {
    let metadata = &object["metadata"];
    let text = |key: &str| metadata[key].as_str().unwrap_or_default();
    let mut errors = Vec::new();
    // Upstream's name rule for these objects accepts any name, so only its absence counts.
    if text("name").is_empty() {
        errors.push(rules::required(
            "metadata.name",
            "name or generateName is required",
        ));
    }
    if !text("namespace").is_empty() {
        errors.push(rules::forbidden(
            "metadata.namespace",
            "not allowed on this type",
        ));
    }
    if let Some(generation) = metadata["generation"].as_i64()
        && generation < 0
    {
        errors.push(rules::error(
            "metadata.generation",
            &generation.to_string(),
            format!("Invalid value: {generation}: must be greater than or equal to 0"),
        ));
    }
    object_meta::findings(&string_fields_only(object), &mut errors);
    // Kubernetes' aggregate: each message once, in order; one alone, several in brackets.
    let mut messages: Vec<&str> = Vec::new();
    for error in &errors {
        if !messages.contains(&error.detail.as_str()) {
            messages.push(&error.detail);
        }
    }
    let aggregate = match messages.as_slice() {
        [] => return None,
        [one] => one.to_string(),
        many => format!("[{}]", many.join(", ")),
    };
    Some(Finding::error(
        text("name"),
        format!(
            "error validating object: {aggregate}. &{{{}}}",
            go_dump(object)
        ),
    ))
}

/// The object as the label, annotation and finalizer checks see it upstream: the unstructured
/// object's accessors give nothing for a map or list with a value that is not a string.
fn string_fields_only(object: &Value) -> Value {
    let mut object = object.clone();
    if let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        for key in ["labels", "annotations"] {
            if metadata
                .get(key)
                .and_then(Value::as_object)
                .is_some_and(|m| m.values().any(|v| !v.is_string()))
            {
                metadata.remove(key);
            }
        }
        if metadata
            .get("finalizers")
            .and_then(Value::as_array)
            .is_some_and(|f| f.iter().any(|v| !v.is_string()))
        {
            metadata.remove("finalizers");
        }
    }
    object
}

/// A JSON value as Go's `%v` prints the `map[string]interface{}` that Kubernetes' unstructured
/// decoding makes of it: maps with sorted keys as `map[k:v ...]`, lists as `[a b]`, strings
/// bare, null as `<nil>`, whole numbers as int64 and other numbers as float64.
fn go_dump(value: &Value) -> String {
    let mut out = String::new();
    write_go(value, &mut out);
    out
}

fn write_go(value: &Value, out: &mut String) {
    match value {
        Value::Null => out.push_str("<nil>"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::String(s) => out.push_str(s),
        Value::Number(n) => out.push_str(&go_number(n)),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                write_go(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push_str("map[");
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                out.push_str(key);
                out.push(':');
                write_go(&map[key], out);
            }
            out.push(']');
        }
    }
}

/// A number as it comes out of the Go round trip: go-yaml decodes it, `encoding/json` writes
/// it (a whole float64 without a fraction), and the unstructured decoder reads an int64 when
/// the text is an integer in range, else a float64, which `%v` prints like `%g` with the
/// shortest exact digits.
fn go_number(n: &serde_json::Number) -> String {
    if let Some(i) = n.as_i64() {
        return i.to_string();
    }
    let f = n.as_f64().unwrap_or_default();
    if f.fract() == 0.0 && f.abs() < 9.2e18 {
        return (f as i64).to_string();
    }
    go_float(f)
}

/// Go's `strconv.FormatFloat(f, 'g', -1, 64)`: the shortest exact digits, in exponent form
/// when the exponent is below -4 or 6 and above (checked against Go 1.26's `%v`).
fn go_float(f: f64) -> String {
    let scientific = format!("{f:e}");
    let (mantissa, exponent) = scientific.split_once('e').unwrap_or((&scientific, "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    if (-4..6).contains(&exponent) {
        return f.to_string();
    }
    let sign = if exponent < 0 { '-' } else { '+' };
    format!("{mantissa}e{sign}{:02}", exponent.abs())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_namespace_on_any_kind_is_forbidden_with_upstreams_message() {
        for kind in ["ServiceAccount", "ConfigMap", "ClusterRole"] {
            let object = json!({"apiVersion": "v1", "kind": kind,
                "metadata": {"name": "x", "namespace": "ns"}});
            let finding = finding(&object).expect("a namespace is an error");
            assert_eq!(
                finding.to_string(),
                format!(
                    "Error: Value x: error validating object: metadata.namespace: Forbidden: not allowed on this type. &{{map[apiVersion:v1 kind:{kind} metadata:map[name:x namespace:ns]]}}"
                )
            );
        }
    }

    #[test]
    fn an_object_without_a_namespace_or_problem_passes() {
        let object = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "x", "labels": {"app": "y"}}, "data": {"a": "b"}});
        assert_eq!(finding(&object), None);
    }

    #[test]
    fn several_problems_are_one_aggregate_message() {
        let object = json!({"kind": "Service",
            "metadata": {"namespace": "ns", "generation": -1, "labels": {"a": "-b"}}});
        let finding = finding(&object).unwrap();
        assert_eq!(finding.value.as_deref(), Some(""));
        let detail = finding.detail;
        assert!(
            detail.starts_with("error validating object: [metadata.name: Required value: name or generateName is required, metadata.namespace: Forbidden: not allowed on this type, metadata.generation: Invalid value: -1: must be greater than or equal to 0, metadata.labels: Invalid value: \"-b\": "),
            "{detail}"
        );
        assert!(
            detail.ends_with(
                "]. &{map[kind:Service metadata:map[generation:-1 labels:map[a:-b] namespace:ns]]}"
            ),
            "{detail}"
        );
    }

    #[test]
    fn labels_with_a_value_that_is_not_a_string_are_not_checked() {
        // The unstructured accessor returns no labels at all then.
        let object = json!({"kind": "ConfigMap",
            "metadata": {"name": "x", "labels": {"bad key": 1}}});
        assert_eq!(finding(&object), None);
    }

    #[test]
    fn values_print_like_go() {
        let value = json!({"z": [1, 2.5, true, null, "s p"], "a": {}, "m": [],
            "f": 1.0, "big": 1e21, "small": 0.00001, "mid": 1234567.5, "neg": -0.25,
            "e5": 100000.5, "u": 12345678901234567890u64});
        assert_eq!(
            go_dump(&value),
            // Go 1.26 printed the same for the same map (int64 1, float64 for the others).
            "map[a:map[] big:1e+21 e5:100000.5 f:1 m:[] mid:1.2345675e+06 neg:-0.25 small:1e-05 u:1.2345678901234567e+19 z:[1 2.5 true <nil> s p]]"
        );
    }
}
