//! The checks of one `olm.bundle` document that depend on it alone (its properties, version
//! and image references), in opm's order and with opm's messages. They run on every core
//! before the model is built, or on the loader threads as each file is parsed.

use crate::declcfg::{self, Kind, Property, RawJson};
use crate::olm_property::{self, GoKind};
use crate::version_range::parse_version;

/// Why a bundle document is refused, with opm's wording.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BundleDocumentError {
    /// A property's value does not decode into its type's struct.
    #[error(
        "parse properties for bundle {bundle:?}: parse property[{index}] of type {type_:?}: {problem}"
    )]
    PropertyValue {
        /// The bundle.
        bundle: String,
        /// The property's position.
        index: usize,
        /// The property's type.
        type_: String,
        /// What Go's decoder says.
        problem: PropertyValueError,
    },
    /// Not exactly one `olm.package` property.
    #[error(
        "package {package:?} bundle {bundle:?} must have exactly 1 \"olm.package\" property, found {found}"
    )]
    PackagePropertyCount {
        /// The document's package.
        package: String,
        /// The bundle.
        bundle: String,
        /// How many there are.
        found: usize,
    },
    /// The `olm.package` property names another package.
    #[error("package {package:?} does not match \"olm.package\" property {property:?}")]
    PackageMismatch {
        /// The document's package.
        package: String,
        /// The property's package.
        property: String,
    },
    /// The bundle's image is not a valid reference.
    #[error(
        "package {package:?} bundle {bundle:?} image: invalid image pull spec {image:?}: {problem}"
    )]
    Image {
        /// The document's package.
        package: String,
        /// The bundle.
        bundle: String,
        /// The image.
        image: String,
        /// The reference grammar's message.
        problem: String,
    },
    /// A related image is not a valid reference.
    #[error(
        "package {package:?} bundle {bundle:?} relatedImages[{index}].image: invalid image pull spec {image:?}: {problem}"
    )]
    RelatedImage {
        /// The document's package.
        package: String,
        /// The bundle.
        bundle: String,
        /// The related image's position.
        index: usize,
        /// The image.
        image: String,
        /// The reference grammar's message.
        problem: String,
    },
    /// The `olm.package` version is not semver.
    #[error("error parsing bundle {bundle:?} version {version:?}: {problem}")]
    Version {
        /// The bundle.
        bundle: String,
        /// The version as written.
        version: String,
        /// blang/semver's message.
        problem: String,
    },
    /// The `olm.package` release is not a prerelease-like identifier list.
    #[error("error parsing bundle {bundle:?} release version {release:?}: invalid release")]
    Release {
        /// The bundle.
        bundle: String,
        /// The release as written.
        release: String,
    },
}

/// Go's decoder refusing a property value, in its words.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PropertyValueError {
    /// A field of the struct has the wrong JSON kind.
    #[error("json: cannot unmarshal {found} into Go struct field .{field} of type {}", .expected.go_name())]
    Field {
        /// The JSON kind found, as Go names it.
        found: &'static str,
        /// The field.
        field: &'static str,
        /// The field's Go type.
        expected: GoKind,
    },
    /// The value is not an object.
    #[error("json: cannot unmarshal {found} into Go value")]
    NotAnObject {
        /// The JSON kind found, as Go names it.
        found: &'static str,
    },
}

/// The `olm.package` values found: (packageName, version, release).
type PackageValues = Vec<(String, String, String)>;

/// Checks property values against their types, as opm's property parser does; returns the
/// `olm.package` values.
fn parse_properties(
    bundle: &str,
    properties: &[Property],
) -> Result<PackageValues, BundleDocumentError> {
    let mut packages = Vec::new();
    for (index, property) in properties.iter().enumerate() {
        let Some(fields) = olm_property::value_fields(&property.type_) else {
            continue;
        };
        check_value(&property.value, fields).map_err(|problem| {
            BundleDocumentError::PropertyValue {
                bundle: bundle.to_string(),
                index,
                type_: property.type_.to_string(),
                problem,
            }
        })?;
        if property.type_ == olm_property::PACKAGE {
            let [name, version, release] =
                property
                    .value
                    .str_fields(["packageName", "version", "release"]);
            packages.push((
                name.unwrap_or_default(),
                version.unwrap_or_default(),
                release.unwrap_or_default(),
            ));
        }
    }
    Ok(packages)
}

/// Only the kinds of the fields opm's typed structs read are looked at: nothing is decoded
/// into a tree.
fn check_value(
    value: &RawJson,
    fields: &[(&'static str, GoKind)],
) -> Result<(), PropertyValueError> {
    match value.kind() {
        Kind::Null => Ok(()),
        Kind::Object => {
            let names: Vec<&str> = fields.iter().map(|(name, _)| *name).collect();
            for ((field, expected), found) in fields.iter().zip(value.field_kinds(&names)) {
                let Some(found) = found else {
                    continue;
                };
                let ok = match expected {
                    GoKind::String => matches!(found, Kind::String | Kind::Null),
                    GoKind::Int => matches!(found, Kind::Int | Kind::Null),
                };
                if !ok {
                    return Err(PropertyValueError::Field {
                        found: found.go_name(),
                        field,
                        expected: *expected,
                    });
                }
            }
            Ok(())
        }
        other => Err(PropertyValueError::NotAnObject {
            found: other.go_name(),
        }),
    }
}

/// What [`check_bundle_document`] found in a valid bundle document.
pub(super) struct CheckedDocument {
    pub(super) version: semver::Version,
    pub(super) object_count: usize,
}

/// The checks of a bundle document that depend on it alone, in opm's order, with opm's
/// messages.
pub(super) fn check_bundle_document(
    b: &declcfg::Bundle,
) -> Result<CheckedDocument, BundleDocumentError> {
    let packages = parse_properties(&b.name, &b.properties)?;
    if packages.len() != 1 {
        return Err(BundleDocumentError::PackagePropertyCount {
            package: b.package.clone(),
            bundle: b.name.clone(),
            found: packages.len(),
        });
    }
    let (package_name, raw_version, release) = &packages[0];
    if b.package != *package_name {
        return Err(BundleDocumentError::PackageMismatch {
            package: b.package.clone(),
            property: package_name.clone(),
        });
    }
    if !b.image.is_empty()
        && let Err(problem) = crate::image_ref::check(&b.image)
    {
        return Err(BundleDocumentError::Image {
            package: b.package.clone(),
            bundle: b.name.clone(),
            image: b.image.clone(),
            problem,
        });
    }
    for (index, related) in b.related_images.iter().enumerate() {
        if !related.image.is_empty()
            && let Err(problem) = crate::image_ref::check(&related.image)
        {
            return Err(BundleDocumentError::RelatedImage {
                package: b.package.clone(),
                bundle: b.name.clone(),
                index,
                image: related.image.clone(),
                problem,
            });
        }
    }
    let version = parse_version(raw_version).map_err(|problem| BundleDocumentError::Version {
        bundle: b.name.clone(),
        version: raw_version.clone(),
        problem,
    })?;
    if !release.is_empty() && semver::Prerelease::new(release).is_err() {
        return Err(BundleDocumentError::Release {
            bundle: b.name.clone(),
            release: release.clone(),
        });
    }
    // Loading already decoded every object once; counting them is enough here.
    let object_count = b
        .properties
        .iter()
        .filter(|p| p.type_ == olm_property::BUNDLE_OBJECT)
        .count();
    Ok(CheckedDocument {
        version,
        object_count,
    })
}
