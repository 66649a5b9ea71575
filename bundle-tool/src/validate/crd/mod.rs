//! The CRD validator: upstream converts each CRD to the internal apiextensions type and runs
//! Kubernetes' `ValidateCustomResourceDefinition`, keeping every error whose field path
//! contains neither `openAPIV3Schema` nor `status` (so schema problems, the status
//! subresource, `statusReplicasPath` and stored versions are never reported). Here: metadata
//! (name, namespace, API approval of Kubernetes groups), group, scope, names, versions,
//! subresources, printer columns, `preserveUnknownFields` and conversion. Messages are
//! Kubernetes' field errors (`<field>: Invalid value: "<v>": <why>`), wrapped the way
//! upstream wraps them.

mod columns;
mod conversion;
pub(super) mod object_meta;
pub(super) mod rules;
mod view;

use std::collections::BTreeSet;

use serde_json::Value;

use super::Finding;
use rules::{dns1035_problems, enum_string, error, forbidden, invalid, required};
use view::Crd;

/// The findings for one CRD (apiextensions.k8s.io v1 or v1beta1).
pub fn findings(crd: &Value) -> Vec<Finding> {
    let crd = Crd::new(crd);
    let mut out = Vec::new();
    metadata(&crd, &mut out);
    group_and_scope(&crd, &mut out);
    if crd.has_defaults() && crd.preserve_unknown_fields {
        out.push(error(
            "spec.preserveUnknownFields",
            "true",
            "Invalid value: true: must be false in order to use defaults in the schema".into(),
        ));
    }
    versions(&crd, &mut out);
    names(&crd, &mut out);
    columns::subresources(crd.subresources, "spec.subresources", &mut out);
    let top = "spec.additionalPrinterColumns";
    columns::columns(crd.columns, top, crd.json_path_key, &mut out);
    conversion::findings(&crd, &mut out);
    api_approval(&crd, &mut out);
    if crd.preserve_unknown_fields {
        // Upstream's value is a pointer, printed as an address; we print what it points to.
        out.push(error(
            "spec.preserveUnknownFields",
            "true",
            "Invalid value: true: cannot set to true, set x-kubernetes-preserve-unknown-fields to true in spec.versions[*].schema instead".into(),
        ));
    }
    out.retain(|f| {
        let field = f.field.as_deref().unwrap_or("");
        !field.contains("openAPIV3Schema") && !field.contains("status")
    });
    out
}

/// `ValidateObjectMeta` with the CRD's name rule, on a cluster-scoped object.
fn metadata(crd: &Crd, out: &mut Vec<Finding>) {
    let required_name = format!(
        "{}.{}",
        crd.text("/spec/names/plural"),
        crd.text("/spec/group")
    );
    let rule = "must be spec.names.plural+\".\"+spec.group";
    let generate_name = crd.text("/metadata/generateName");
    if !generate_name.is_empty() {
        // A prefix may end in '-': the generated suffix follows it.
        let masked = match generate_name.strip_suffix('-') {
            Some(head) if !head.is_empty() => format!("{head}a"),
            _ => generate_name.to_string(),
        };
        let mut problems = rules::subdomain_problems(&masked);
        if generate_name != required_name {
            problems.push(rule.to_string());
        }
        for problem in problems {
            out.push(invalid("metadata.generateName", generate_name, &problem));
        }
    }
    let name = crd.text("/metadata/name");
    if name.is_empty() {
        out.push(required(
            "metadata.name",
            "name or generateName is required",
        ));
    } else {
        let mut problems = rules::subdomain_problems(name);
        if name != required_name {
            problems.push(rule.to_string());
        }
        for problem in problems {
            out.push(invalid("metadata.name", name, &problem));
        }
    }
    if !crd.text("/metadata/namespace").is_empty() {
        out.push(forbidden("metadata.namespace", "not allowed on this type"));
    }
    object_meta::findings(crd.raw, out);
}

fn group_and_scope(crd: &Crd, out: &mut Vec<Finding>) {
    let group = crd.text("/spec/group");
    if group.is_empty() {
        out.push(required("spec.group", ""));
    } else if let problems @ [_, ..] = rules::subdomain_problems(group).as_slice() {
        out.push(invalid("spec.group", group, &problems.join(",")));
    } else if !group.contains('.') {
        out.push(invalid(
            "spec.group",
            group,
            "should be a domain with at least one dot",
        ));
    }
    out.extend(enum_string(
        "spec.scope",
        crd.scope,
        &["Cluster", "Namespaced"],
    ));
}

/// Kubernetes' deprecation-warning rules.
fn deprecation_warning(deprecated: bool, warning: Option<&str>) -> Vec<String> {
    let Some(warning) = warning else {
        return Vec::new();
    };
    if !deprecated {
        return vec!["can only be set for deprecated versions".into()];
    }
    let mut problems = Vec::new();
    if warning.len() > 256 {
        problems.push("must be <= 256 characters long".into());
    }
    if warning.is_empty() {
        problems.push("must not be an empty string".into());
    }
    if let Some((i, _)) = warning
        .char_indices()
        .find(|(_, c)| c.is_control() || (*c != ' ' && c.is_whitespace()))
    {
        problems.push(format!(
            "must only contain printable UTF-8 characters; non-printable character found at index {i}"
        ));
    }
    problems
}

fn versions(crd: &Crd, out: &mut Vec<Finding>) {
    for (i, version) in crd.versions.iter().enumerate() {
        let at = format!("spec.versions[{i}]");
        if let problems @ [_, ..] = dns1035_problems(version.name).as_slice() {
            out.push(invalid(
                &format!("{at}.name"),
                version.name,
                &problems.join(","),
            ));
        }
        let warning = version.deprecation_warning;
        for problem in deprecation_warning(version.deprecated, warning) {
            // Upstream's value is a pointer, printed as an address; we print the text.
            let field = format!("{at}.deprecationWarning");
            out.push(invalid(&field, warning.unwrap_or(""), &problem));
        }
        let subresources = format!("{at}.subresources");
        columns::subresources(version.subresources, &subresources, out);
        let at = format!("{at}.additionalPrinterColumns");
        columns::columns(version.columns, &at, crd.json_path_key, out);
    }
    let shown = crd.version_names();
    let per_version_schema = crd.versions.iter().any(|v| v.schema.is_some());
    let per_version_subresources = crd.versions.iter().any(|v| v.subresources.is_some());
    let per_version_columns = crd.versions.iter().any(|v| !v.columns.is_empty());
    if crd.validation.is_some() && per_version_schema {
        let why = "top-level and per-version schemas are mutually exclusive";
        out.push(forbidden("spec.validation", why));
    }
    if crd.subresources.is_some() && per_version_subresources {
        let why = "top-level and per-version subresources are mutually exclusive";
        out.push(forbidden("spec.subresources", why));
    }
    if !crd.columns.is_empty() && per_version_columns {
        let why = "top-level and per-version additionalPrinterColumns are mutually exclusive";
        out.push(forbidden("spec.additionalPrinterColumns", why));
    }
    let first = crd.versions.first();
    let identical = [
        (
            first.is_some_and(|f| {
                crd.versions
                    .iter()
                    .all(|v| v.schema.is_some() && v.schema == f.schema)
            }),
            "schemas",
            "validation",
        ),
        (
            first.is_some_and(|f| {
                crd.versions
                    .iter()
                    .all(|v| v.subresources.is_some() && v.subresources == f.subresources)
            }),
            "subresources",
            "subresources",
        ),
        (
            first.is_some_and(|f| {
                crd.versions
                    .iter()
                    .all(|v| !v.columns.is_empty() && v.columns == f.columns)
            }),
            "additionalPrinterColumns",
            "additionalPrinterColumns",
        ),
    ];
    for (_, what, top) in identical.iter().filter(|(same, ..)| *same) {
        let why = format!(
            "per-version {what} may not all be set to identical values (top-level {top} should be used instead)"
        );
        out.push(versions_error(&shown, &why));
    }
    let unique: BTreeSet<&str> = crd.versions.iter().map(|v| v.name).collect();
    if unique.len() != crd.versions.len() {
        out.push(versions_error(&shown, "must contain unique version names"));
    }
    if crd.versions.iter().filter(|v| v.storage).count() != 1 {
        let why = "must have exactly one version marked as storage version";
        out.push(versions_error(&shown, why));
    }
    if !crd.version.is_empty() {
        if let problems @ [_, ..] = dns1035_problems(&crd.version).as_slice() {
            out.push(invalid("spec.version", &crd.version, &problems.join(",")));
        }
        if crd.versions.first().is_some_and(|v| v.name != crd.version) {
            let why = "must match the first version in spec.versions";
            out.push(invalid("spec.version", &crd.version, why));
        }
    }
}

/// An error about the whole versions list. Upstream prints the list as a Go `%#v` dump of
/// its internal structs; we print the version names.
fn versions_error(shown: &str, why: &str) -> Finding {
    error(
        "spec.versions",
        shown,
        format!("Invalid value: {shown}: {why}"),
    )
}

fn names(crd: &Crd, out: &mut Vec<Finding>) {
    let plural = crd.text("/spec/names/plural");
    let kind = crd.text("/spec/names/kind");
    let (singular, list_kind) = (crd.singular.as_str(), crd.list_kind.as_str());
    for (key, value) in [
        ("plural", plural),
        ("singular", singular),
        ("kind", kind),
        ("listKind", list_kind),
    ] {
        if value.is_empty() {
            out.push(required(&format!("spec.names.{key}"), ""));
        }
    }
    for (key, value, mixed_case) in [
        ("plural", plural, false),
        ("singular", singular, false),
        ("kind", kind, true),
        ("listKind", list_kind, true),
    ] {
        let checked = if mixed_case {
            value.to_lowercase()
        } else {
            value.to_string()
        };
        let problems = dns1035_problems(&checked);
        if value.is_empty() || problems.is_empty() {
            continue;
        }
        let prefix = if mixed_case {
            "may have mixed case, but should otherwise match: "
        } else {
            ""
        };
        let why = format!("{prefix}{}", problems.join(","));
        out.push(invalid(&format!("spec.names.{key}"), value, &why));
    }
    let list = |key: &str| -> Vec<String> {
        crd.raw["spec"]["names"][key]
            .as_array()
            .into_iter()
            .flatten()
            .map(|v| v.as_str().unwrap_or("").to_string())
            .collect()
    };
    for (i, short) in list("shortNames").iter().enumerate() {
        if let problems @ [_, ..] = dns1035_problems(short).as_slice() {
            let field = format!("spec.names.shortNames[{i}]");
            out.push(invalid(&field, short, &problems.join(",")));
        }
    }
    if !kind.is_empty() && kind == list_kind {
        let why = "kind and listKind may not be the same";
        out.push(invalid("spec.names.listKind", list_kind, why));
    }
    for (i, category) in list("categories").iter().enumerate() {
        if let problems @ [_, ..] = dns1035_problems(category).as_slice() {
            let field = format!("spec.names.categories[{i}]");
            out.push(invalid(&field, category, &problems.join(",")));
        }
    }
}

/// Groups under `k8s.io` and `kubernetes.io` need an approval annotation.
fn api_approval(crd: &Crd, out: &mut Vec<Finding>) {
    let group = crd.text("/spec/group");
    let protected = ["k8s.io", "kubernetes.io"]
        .iter()
        .any(|g| group == *g || group.ends_with(&format!(".{g}")));
    if !protected {
        return;
    }
    const KEY: &str = "api-approved.kubernetes.io";
    let field = format!("metadata.annotations[{KEY}]");
    let annotation = crd.text("/metadata/annotations/api-approved.kubernetes.io");
    let is_url = annotation.split_once("://").is_some_and(|(scheme, rest)| {
        !scheme.is_empty() && !rest.is_empty() && !rest.starts_with('/')
    });
    if annotation.is_empty() {
        let why = format!(
            "protected groups must have approval annotation {KEY:?}, see https://github.com/kubernetes/enhancements/pull/1111"
        );
        out.push(required(&field, &why));
    } else if !annotation.starts_with("unapproved") && !is_url {
        let why = format!(
            "protected groups must have approval annotation {KEY:?} with either a URL or a reason starting with \"unapproved\", see https://github.com/kubernetes/enhancements/pull/1111"
        );
        out.push(invalid(&field, annotation, &why));
    }
}

#[cfg(test)]
mod tests;
