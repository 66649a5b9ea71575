//! A CRD as upstream's validator sees it: apiextensions' defaults applied, then converted to
//! the internal version. The conversion moves things: a v1 CRD's per-version subresources and
//! printer columns move to the top level when every version has the same ones, and its
//! `conversion.webhook.clientConfig` becomes `conversion.webhookClientConfig`. Field paths in
//! the messages follow the internal shape, so the checks read this view, not the file.

use crate::manifest::text;
use serde_json::Value;

/// One entry of `spec.versions`.
pub struct Version<'a> {
    /// `name`.
    pub name: &'a str,
    /// `storage`.
    pub storage: bool,
    /// `deprecated`.
    pub deprecated: bool,
    /// `deprecationWarning`, when set (even empty).
    pub deprecation_warning: Option<&'a str>,
    /// `schema`, when set.
    pub schema: Option<&'a Value>,
    /// `subresources`, unless moved to the top level.
    pub subresources: Option<&'a Value>,
    /// `additionalPrinterColumns`, unless moved to the top level.
    pub columns: &'a [Value],
}

/// `spec.conversion` after defaulting.
pub struct Conversion<'a> {
    /// `strategy`.
    pub strategy: &'a str,
    /// The webhook client config (v1 `webhook.clientConfig`, v1beta1 `webhookClientConfig`).
    pub client_config: Option<&'a Value>,
    /// `conversionReviewVersions` (v1beta1 defaults it to `[v1beta1]` for webhooks).
    pub review_versions: Vec<&'a str>,
}

/// The internal CRD.
pub struct Crd<'a> {
    /// The file's own object, for the fields the view does not normalise.
    pub raw: &'a Value,
    /// `spec.scope` (v1beta1 defaults it to `Namespaced`).
    pub scope: &'a str,
    /// `spec.names.singular` (defaults to the lower-cased kind).
    pub singular: String,
    /// `spec.names.listKind` (defaults to `<kind>List`).
    pub list_kind: String,
    /// `spec.versions` (v1beta1 builds one from `spec.version`).
    pub versions: Vec<Version<'a>>,
    /// `spec.version` (set to the first version's name).
    pub version: String,
    /// The top-level schema (v1beta1 `validation`, or a v1 schema shared by every version).
    pub validation: Option<&'a Value>,
    /// Top-level `subresources`.
    pub subresources: Option<&'a Value>,
    /// Top-level `additionalPrinterColumns`.
    pub columns: &'a [Value],
    /// The key of a column's JSON path (`jsonPath` in v1, `JSONPath` in v1beta1).
    pub json_path_key: &'static str,
    /// `spec.preserveUnknownFields` (v1beta1 defaults it to true).
    pub preserve_unknown_fields: bool,
    /// `spec.conversion` (defaults to strategy None).
    pub conversion: Option<Conversion<'a>>,
}

fn list(value: &Value) -> &[Value] {
    value.as_array().map(Vec::as_slice).unwrap_or(&[])
}

fn present(value: &Value) -> Option<&Value> {
    (!value.is_null()).then_some(value)
}

/// A null to borrow "absent" from (no columns, no top-level fields) for the view's lifetime.
static NOTHING: Value = Value::Null;

impl<'a> Crd<'a> {
    /// The view of `crd`.
    pub fn new(crd: &'a Value) -> Self {
        let v1 = text(crd, "/apiVersion") == "apiextensions.k8s.io/v1";
        let spec = &crd["spec"];
        let kind = text(crd, "/spec/names/kind");
        let singular = match text(crd, "/spec/names/singular") {
            "" => kind.to_lowercase(),
            s => s.to_string(),
        };
        let list_kind = match text(crd, "/spec/names/listKind") {
            "" if !kind.is_empty() => format!("{kind}List"),
            s => s.to_string(),
        };
        let mut versions: Vec<Version> = list(&spec["versions"])
            .iter()
            .map(|v| Version {
                name: v["name"].as_str().unwrap_or(""),
                storage: v["storage"] == true,
                deprecated: v["deprecated"] == true,
                deprecation_warning: v["deprecationWarning"].as_str(),
                schema: present(&v["schema"]),
                subresources: present(&v["subresources"]),
                columns: list(&v["additionalPrinterColumns"]),
            })
            .collect();
        let mut version = text(crd, "/spec/version").to_string();
        if !v1 && versions.is_empty() && !version.is_empty() {
            versions.push(Version {
                name: text(crd, "/spec/version"),
                storage: true,
                deprecated: false,
                deprecation_warning: None,
                schema: None,
                subresources: None,
                columns: list(&NOTHING),
            });
        }
        if (v1 || version.is_empty()) && !versions.is_empty() {
            version = versions[0].name.to_string();
        }
        // v1 has no top-level schema, subresources or columns (Go's decoder drops them).
        let top = if v1 { &NOTHING } else { spec };
        let (mut validation, mut subresources, mut columns) = (
            present(&top["validation"]),
            present(&top["subresources"]),
            list(&top["additionalPrinterColumns"]),
        );
        if v1 && !versions.is_empty() {
            let first = (
                versions[0].schema,
                versions[0].subresources,
                versions[0].columns,
            );
            if versions.iter().all(|v| v.schema == first.0) {
                validation = first.0;
                versions.iter_mut().for_each(|v| v.schema = None);
            }
            if versions.iter().all(|v| v.subresources == first.1) {
                subresources = first.1;
                versions.iter_mut().for_each(|v| v.subresources = None);
            }
            if versions.iter().all(|v| v.columns == first.2) {
                columns = first.2;
                versions.iter_mut().for_each(|v| v.columns = list(&NOTHING));
            }
        }
        let preserve_unknown_fields = match spec["preserveUnknownFields"].as_bool() {
            Some(set) => set,
            None => !v1,
        };
        let conversion = match present(&spec["conversion"]) {
            None => Some(Conversion {
                strategy: "None",
                client_config: None,
                review_versions: Vec::new(),
            }),
            Some(c) => {
                let (client_config, reviews) = if v1 {
                    (
                        present(&c["webhook"]["clientConfig"]),
                        &c["webhook"]["conversionReviewVersions"],
                    )
                } else {
                    (
                        present(&c["webhookClientConfig"]),
                        &c["conversionReviewVersions"],
                    )
                };
                let strategy = c["strategy"].as_str().unwrap_or("");
                let mut review_versions: Vec<&str> = list(reviews)
                    .iter()
                    .map(|v| v.as_str().unwrap_or(""))
                    .collect();
                if !v1 && strategy == "Webhook" && review_versions.is_empty() {
                    review_versions.push("v1beta1");
                }
                Some(Conversion {
                    strategy,
                    client_config,
                    review_versions,
                })
            }
        };
        Crd {
            raw: crd,
            scope: match text(crd, "/spec/scope") {
                "" if !v1 => "Namespaced",
                s => s,
            },
            singular,
            list_kind,
            versions,
            version,
            validation,
            subresources,
            columns,
            json_path_key: if v1 { "jsonPath" } else { "JSONPath" },
            preserve_unknown_fields,
            conversion,
        }
    }

    /// A string field of the file's object.
    pub fn text(&self, pointer: &str) -> &'a str {
        text(self.raw, pointer)
    }

    /// The version names, as we show upstream's `%#v` dump of the versions list.
    pub fn version_names(&self) -> String {
        let names: Vec<&str> = self.versions.iter().map(|v| v.name).collect();
        format!("[{}]", names.join(" "))
    }

    /// True when some schema (top-level or per version) has a `default` anywhere.
    pub fn has_defaults(&self) -> bool {
        let schemas = self
            .validation
            .into_iter()
            .chain(self.versions.iter().filter_map(|v| v.schema));
        schemas
            .filter_map(|s| present(&s["openAPIV3Schema"]))
            .any(schema_has_default)
    }
}

/// Walks a JSON schema the way apiextensions' `SchemaHas` does, looking for `default`.
fn schema_has_default(schema: &Value) -> bool {
    let Some(object) = schema.as_object() else {
        return false;
    };
    if object.get("default").is_some_and(|d| !d.is_null()) {
        return true;
    }
    let maps = [
        "properties",
        "patternProperties",
        "definitions",
        "dependencies",
    ];
    let in_maps = maps.iter().any(|key| {
        object
            .get(*key)
            .and_then(Value::as_object)
            .is_some_and(|m| m.values().any(schema_has_default))
    });
    let lists = ["allOf", "anyOf", "oneOf"];
    let in_lists = lists
        .iter()
        .any(|key| list(&schema[*key]).iter().any(schema_has_default));
    let singles = ["not", "additionalProperties", "additionalItems"];
    let in_singles = singles.iter().any(|key| schema_has_default(&schema[*key]));
    let in_items = match &schema["items"] {
        Value::Array(items) => items.iter().any(schema_has_default),
        items => schema_has_default(items),
    };
    in_maps || in_lists || in_singles || in_items
}
