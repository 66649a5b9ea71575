//! A Kubernetes object read from a stream, seen through the fields every object has.

use std::fmt;

use super::Document;

/// `apiVersion`, `kind`, and the name and namespace: what identifies an object.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct ObjectRef {
    /// `apiVersion`, e.g. `apps/v1`.
    pub api_version: String,
    /// `kind`, e.g. `Deployment`.
    pub kind: String,
    /// `metadata.name`.
    pub name: String,
    /// `metadata.namespace`, if set.
    pub namespace: Option<String>,
}

impl fmt::Display for ObjectRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.api_version, self.kind)?;
        match &self.namespace {
            Some(ns) => write!(f, " {ns}/{}", self.name),
            None => write!(f, " {}", self.name),
        }
    }
}

/// A document that is a Kubernetes object (it has `apiVersion` and `kind`).
#[derive(Clone, Debug, PartialEq)]
pub struct KubeObject {
    /// What the object is.
    pub id: ObjectRef,
    /// The document it came from.
    pub document: Document,
}

/// Why a document is not a Kubernetes object: an identifying field is missing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum NotAnObject {
    /// No `apiVersion` string.
    #[error("missing apiVersion")]
    ApiVersion,
    /// No `kind` string.
    #[error("missing kind")]
    Kind,
}

/// The string at `pointer` (a JSON pointer, `/metadata/name`) in `value`; `""` when there is
/// none or it is not a string, which is how the validators and generators read an optional
/// field of an object. The one such reader: every module that reads manifests uses it.
pub fn text<'a>(value: &'a serde_json::Value, pointer: &str) -> &'a str {
    value
        .pointer(pointer)
        .and_then(serde_json::Value::as_str)
        .unwrap_or_default()
}

impl KubeObject {
    /// Views a document as a Kubernetes object; `Err` says which identifying field is missing.
    pub fn from_document(document: Document) -> Result<Self, NotAnObject> {
        let text = |pointer: &str| {
            document
                .value
                .pointer(pointer)
                .and_then(|v| v.as_str())
                .map(str::to_string)
        };
        let api_version = text("/apiVersion").ok_or(NotAnObject::ApiVersion)?;
        let kind = text("/kind").ok_or(NotAnObject::Kind)?;
        let name = text("/metadata/name")
            .or_else(|| text("/metadata/generateName"))
            .unwrap_or_default();
        let namespace = text("/metadata/namespace");
        Ok(KubeObject {
            id: ObjectRef {
                api_version,
                kind,
                name,
                namespace,
            },
            document,
        })
    }

    /// The API group of `apiVersion` (`""` for the core group).
    pub fn group(&self) -> &str {
        self.id
            .api_version
            .rsplit_once('/')
            .map(|(g, _)| g)
            .unwrap_or("")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::read_stream;
    use std::path::Path;

    #[test]
    fn identifies_objects_and_their_group() {
        let docs = read_stream(
            Path::new("x.yaml"),
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: op, namespace: ns}\n---\napiVersion: v1\nkind: Service\nmetadata: {name: svc}\n",
        )
        .unwrap();
        let objects: Vec<KubeObject> = docs
            .into_iter()
            .map(|d| KubeObject::from_document(d).unwrap())
            .collect();
        assert_eq!(objects[0].id.to_string(), "apps/v1 Deployment ns/op");
        assert_eq!(objects[0].group(), "apps");
        assert_eq!(objects[1].group(), "");
    }

    #[test]
    fn a_document_without_kind_is_not_an_object() {
        let docs = read_stream(Path::new("x.yaml"), "apiVersion: v1\nmetadata: {}\n").unwrap();
        assert_eq!(
            KubeObject::from_document(docs[0].clone())
                .unwrap_err()
                .to_string(),
            "missing kind"
        );
    }
}
