//! The CSV and CRDs decoded as upstream's loader decodes them: into their Go types,
//! so a field of the wrong type (`maintainers: {}`, `spec.version: 5`) or a `spec.version`
//! that tolerant semver cannot read makes the whole bundle unloadable. YAML numbers and
//! booleans in string fields are accepted: upstream's YAML-to-JSON step turns them into
//! strings when the Go field is a string (but not for `spec.version`, which has its own
//! decoder). The type trees (`csv.rs`, `crd.rs`) mirror the Go types' JSON field names and
//! type names (for Go's message); fields whose types are large Kubernetes structs (the
//! deployments' `spec`, webhook `rules`, CRD schemas) or have their own decoders
//! (`targetPort`, timestamps, `caBundle`) are not checked.

mod crd;
mod csv;
mod go;

use serde_json::Value;

use go::{Go, STR};

/// Why decoding stopped: Go's message and the JSON field path it happened at.
#[derive(Debug, PartialEq, Eq)]
pub struct DecodeError {
    /// `json: cannot unmarshal …`, or the version parser's message.
    pub message: String,
    /// The JSON field names from the root (array indices and map keys left out, as in Go).
    pub path: Vec<String>,
}

/// Where the decoder is: the innermost struct's name and the field names so far.
struct Context {
    structure: &'static str,
    path: Vec<String>,
    /// The first type error; Go keeps decoding after one and reports it at the end.
    saved: Option<DecodeError>,
}

impl Context {
    /// Go's `UnmarshalTypeError` with the field context it adds.
    fn error_for(&self, value: &Value, go: &Go) -> DecodeError {
        let short = self.structure.rsplit('.').next().unwrap_or(self.structure);
        DecodeError {
            message: format!(
                "json: cannot unmarshal {} into Go struct field {short}.{} of type {}",
                json_kind(value),
                self.path.join("."),
                go.name()
            ),
            path: self.path.clone(),
        }
    }

    fn type_error(&mut self, value: &Value, go: &Go) {
        if self.saved.is_none() {
            self.saved = Some(self.error_for(value, go));
        }
    }
}

/// How Go's decoder names the JSON value it could not store.
fn json_kind(value: &Value) -> String {
    match value {
        Value::Null => "null".into(),
        Value::Bool(_) => "bool".into(),
        Value::Number(n) if n.is_f64() => format!("number {n}"),
        Value::Number(_) => "number".into(),
        Value::String(_) => "string".into(),
        Value::Array(_) => "array".into(),
        Value::Object(_) => "object".into(),
    }
}

/// Decodes `value` as `go`. An error from a custom decoder (the version) stops at once and
/// wins over a saved type error, as in Go.
fn decode(value: &Value, go: &'static Go, cx: &mut Context) -> Result<(), DecodeError> {
    // Go skips a null, except that the version's own decoder reads it as "".
    if value.is_null() && !matches!(go, Go::Version) {
        return Ok(());
    }
    match (go, value) {
        (Go::Any, _) | (Go::Bool, Value::Bool(_)) => {}
        // sigs.k8s.io/yaml turns YAML scalars into strings where the Go field is a string.
        (Go::Str(_), Value::String(_) | Value::Number(_) | Value::Bool(_)) => {}
        (Go::Int32, Value::Number(n)) => match n.as_i64() {
            Some(i) if i32::try_from(i).is_ok() => {}
            _ => cx.type_error(value, go),
        },
        (Go::Version, Value::String(_) | Value::Null) => {
            let text = value.as_str().unwrap_or("");
            if let Err(message) = crate::version_range::parse_version_tolerant(text) {
                return Err(DecodeError {
                    message,
                    path: cx.path.clone(),
                });
            }
        }
        (Go::Version, _) => {
            // The version decoder reads a string first; Go adds the field to that error.
            return Err(cx.error_for(value, &STR));
        }
        (Go::Slice(element), Value::Array(items)) => {
            for item in items {
                decode(item, element, cx)?;
            }
        }
        (Go::Map(_, element), Value::Object(map)) => {
            for item in map.values() {
                decode(item, element, cx)?;
            }
        }
        (Go::Struct(name, fields), Value::Object(map)) => {
            for (key, item) in map {
                // Go matches a key to a field name exactly, else ignoring case.
                let field = fields
                    .iter()
                    .find(|(f, _)| f == key)
                    .or_else(|| fields.iter().find(|(f, _)| f.eq_ignore_ascii_case(key)));
                let Some((field_name, field_type)) = field else {
                    continue;
                };
                let outer = std::mem::replace(&mut cx.structure, name);
                cx.path.push((*field_name).to_string());
                let result = decode(item, field_type, cx);
                cx.path.pop();
                cx.structure = outer;
                result?;
            }
        }
        _ => cx.type_error(value, go),
    }
    Ok(())
}

fn check(value: &Value, go: &'static Go) -> Result<(), DecodeError> {
    let mut cx = Context {
        structure: "",
        path: Vec::new(),
        saved: None,
    };
    decode(value, go, &mut cx)?;
    cx.saved.map_or(Ok(()), Err)
}

/// Decodes the CSV `csv` into operator-framework/api's type: the first problem, if any.
pub fn check_csv(csv: &Value) -> Result<(), DecodeError> {
    check(csv, &csv::CSV)
}

/// Decodes the CRD `crd` into its apiextensions type (v1, else v1beta1), schema aside.
pub fn check_crd(crd: &Value) -> Result<(), DecodeError> {
    if crd["apiVersion"] == "apiextensions.k8s.io/v1" {
        check(crd, &crd::CRD_V1)
    } else {
        check(crd, &crd::CRD_V1B1)
    }
}

/// A block-style YAML line's key part and the column it starts at (list dashes count as
/// indentation), or None for blank and comment lines.
fn key_at(line: &str) -> Option<(usize, &str)> {
    let mut rest = line.trim_start();
    let mut indent = line.len() - rest.len();
    while let Some(item) = rest.strip_prefix("- ") {
        let trimmed = item.trim_start();
        indent += line[indent..].len() - trimmed.len();
        rest = trimmed;
    }
    (!rest.is_empty() && !rest.starts_with('#')).then_some((indent, rest))
}

/// The 1-based line of the field at `path` in the YAML `text`: each key is looked for among
/// the direct children of the previous one (block style). When a key cannot be found (flow
/// style, JSON), the line of the deepest key found is given.
pub fn line_of(text: &str, path: &[String]) -> Option<usize> {
    let lines: Vec<&str> = text.lines().collect();
    let (mut from, mut parent_indent, mut found) = (0, None, None);
    for key in path {
        let mut child_indent = None;
        let mut hit = None;
        for (i, line) in lines.iter().enumerate().skip(from) {
            let Some((indent, rest)) = key_at(line) else {
                continue;
            };
            if parent_indent.is_some_and(|p| indent <= p) {
                break;
            }
            let child = *child_indent.get_or_insert(indent);
            let matches =
                rest.starts_with(&format!("{key}:")) || rest.starts_with(&format!("\"{key}\":"));
            if indent == child && matches {
                hit = Some((i, indent));
                break;
            }
        }
        let Some((i, indent)) = hit else { break };
        (from, parent_indent, found) = (i + 1, Some(indent), Some(i + 1));
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn message(csv: Value) -> String {
        check_csv(&csv).expect_err("should not decode").message
    }

    #[test]
    fn a_well_typed_csv_decodes() {
        let csv = json!({"metadata": {"name": "op.v1.0.0", "annotations": {"a": "b"}},
            "spec": {"version": "1.0.0", "maintainers": [{"name": "n"}], "icon": null,
            "installModes": [{"type": "OwnNamespace", "supported": true}],
            "install": {"strategy": "deployment", "spec": {"deployments": [{"name": "d", "spec": {"replicas": 1}}]}}}});
        assert_eq!(check_csv(&csv), Ok(()));
    }

    #[test]
    fn wrong_types_give_gos_message() {
        assert_eq!(
            message(json!({"spec": {"maintainers": {}}})),
            "json: cannot unmarshal object into Go struct field ClusterServiceVersionSpec.spec.maintainers of type []v1alpha1.Maintainer"
        );
        assert_eq!(
            message(json!({"spec": {"installModes": "x"}})),
            "json: cannot unmarshal string into Go struct field ClusterServiceVersionSpec.spec.installModes of type []v1alpha1.InstallMode"
        );
        assert_eq!(
            message(json!({"spec": {"installModes": [{"supported": "yes"}]}})),
            "json: cannot unmarshal string into Go struct field InstallMode.spec.installModes.supported of type bool"
        );
        assert_eq!(
            message(json!({"metadata": {"annotations": {"x": ["a"]}}})),
            "json: cannot unmarshal array into Go struct field ObjectMeta.metadata.annotations of type string"
        );
        // A YAML number or boolean where Go wants a string is converted, not refused.
        let scalars = json!({"metadata": {"annotations": {"x": 5}}, "spec": {"replaces": true}});
        assert_eq!(check_csv(&scalars), Ok(()));
    }

    #[test]
    fn the_version_decoder_stops_first() {
        let csv = json!({"spec": {"keywords": "x", "version": 5}});
        assert_eq!(
            message(csv),
            "json: cannot unmarshal number into Go struct field ClusterServiceVersionSpec.spec.version of type string"
        );
        let err = check_csv(&json!({"spec": {"version": "not-a-version"}})).unwrap_err();
        assert_eq!(
            err.message,
            "Short version cannot contain PreRelease/Build meta data"
        );
        assert_eq!(err.path, vec!["spec", "version"]);
        let null = check_csv(&json!({"spec": {"version": null}})).unwrap_err();
        assert_eq!(
            null.message,
            "strconv.ParseUint: parsing \"\": invalid syntax"
        );
    }

    #[test]
    fn crds_are_decoded_by_their_version() {
        let v1 = json!({"apiVersion": "apiextensions.k8s.io/v1", "spec": {"scope": ["x"],
            "versions": [{"served": "yes", "schema": {"openAPIV3Schema": {"type": 5}}}]}});
        assert_eq!(
            check_crd(&v1).unwrap_err().message,
            "json: cannot unmarshal array into Go struct field CustomResourceDefinitionSpec.spec.scope of type v1.ResourceScope"
        );
        let v1beta1 = json!({"apiVersion": "apiextensions.k8s.io/v1beta1", "spec": {
            "additionalPrinterColumns": [{"JSONPath": ".a", "priority": "high"}]}});
        assert_eq!(
            check_crd(&v1beta1).unwrap_err().message,
            "json: cannot unmarshal string into Go struct field CustomResourceColumnDefinition.spec.additionalPrinterColumns.priority of type int32"
        );
    }

    #[test]
    fn lines_are_found_below_their_parents() {
        let text = "metadata:\n  name: x\nspec:\n  owned:\n  - version: v1\n    name: y\n  installModes:\n  - type: A\n    supported: x\n  version: 1\n";
        let path = |p: &[&str]| p.iter().map(ToString::to_string).collect::<Vec<_>>();
        assert_eq!(line_of(text, &path(&["spec", "version"])), Some(10));
        assert_eq!(
            line_of(text, &path(&["spec", "installModes", "supported"])),
            Some(9)
        );
        assert_eq!(line_of(text, &path(&["spec", "missing"])), Some(3));
    }
}
