//! A registry+v1 bundle as operator-controller reads it: the CSV, the CRDs, and every other
//! object of `manifests/`.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::OlmV1Error;
use crate::catalog::declcfg::Bundle;
use crate::manifest::{Document, KubeObject, read_path, read_stream};

/// The bundle's objects, each with where it came from.
#[derive(Clone, Debug)]
pub struct RegistryV1 {
    /// The ClusterServiceVersion.
    pub csv: KubeObject,
    /// The CustomResourceDefinitions.
    pub crds: Vec<KubeObject>,
    /// Everything else (Services, ConfigMaps, RBAC, ...).
    pub others: Vec<KubeObject>,
}

impl RegistryV1 {
    /// Reads a bundle folder (with `manifests/`) or a `manifests/` folder itself.
    pub fn read(dir: &Path) -> Result<RegistryV1, OlmV1Error> {
        let manifests = if dir.join("manifests").is_dir() {
            dir.join("manifests")
        } else {
            dir.to_path_buf()
        };
        Self::from_documents(read_path(&manifests)?, dir)
    }

    /// A catalog's bundle from the objects it carries (`olm.bundle.object`), each named
    /// `<bundle>/olm.bundle.object[i]` in messages.
    pub fn from_catalog_bundle(bundle: &Bundle) -> Result<RegistryV1, OlmV1Error> {
        let mut documents = Vec::new();
        for (index, data) in bundle.objects().iter().enumerate() {
            let label = PathBuf::from(format!("{}/olm.bundle.object[{index}]", bundle.name));
            documents.extend(read_stream(&label, &String::from_utf8_lossy(data))?);
        }
        Self::from_documents(documents, Path::new(&bundle.name))
    }

    /// Sorts documents into the CSV, the CRDs and the rest; `source` names the bundle when it
    /// has no CSV.
    fn from_documents(documents: Vec<Document>, source: &Path) -> Result<RegistryV1, OlmV1Error> {
        let mut csv: Option<KubeObject> = None;
        let (mut crds, mut others) = (Vec::new(), Vec::new());
        for document in documents {
            let location = document.location.clone();
            let object = KubeObject::from_document(document).map_err(|why| OlmV1Error::Field {
                location,
                field: "apiVersion/kind".into(),
                why: why.to_string(),
            })?;
            match object.id.kind.as_str() {
                "ClusterServiceVersion" if csv.is_some() => {
                    return Err(OlmV1Error::SecondCsv {
                        location: object.document.location,
                    });
                }
                "ClusterServiceVersion" => csv = Some(object),
                "CustomResourceDefinition" => crds.push(object),
                _ => others.push(object),
            }
        }
        let csv = csv.ok_or_else(|| OlmV1Error::NoCsv {
            dir: source.to_path_buf(),
        })?;
        Ok(RegistryV1 { csv, crds, others })
    }

    /// `metadata.name` of the CSV.
    pub fn csv_name(&self) -> &str {
        &self.csv.id.name
    }

    /// A field of the CSV's `spec` by JSON pointer (`/install/spec/deployments`).
    pub fn csv_spec(&self, pointer: &str) -> Option<&Value> {
        self.csv.document.value.pointer(&format!("/spec{pointer}"))
    }

    /// The CSV's field at `pointer` as an array; absent is empty, another type an error.
    pub fn csv_array(&self, pointer: &str) -> Result<&[Value], OlmV1Error> {
        match self.csv_spec(pointer) {
            None | Some(Value::Null) => Ok(&[]),
            Some(Value::Array(items)) => Ok(items),
            Some(_) => Err(self.field_error(pointer, "not a list")),
        }
    }

    /// An error about the CSV field at `pointer`.
    pub fn field_error(&self, pointer: &str, why: &str) -> OlmV1Error {
        OlmV1Error::Field {
            location: self.csv.document.location.clone(),
            field: format!("spec{}", pointer.replace('/', ".")),
            why: why.into(),
        }
    }
}
