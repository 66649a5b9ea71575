//! Why a template could not be rendered, in opm's words: each variant is one of opm's
//! messages, and the nested ones add opm's prefixes (`rendering template: `, …) around the
//! error they carry, so the printed text is the one opm prints.

use std::path::PathBuf;

use super::go_decode::GoDecodeError;
use crate::catalog::bundle_source::{BundleSourceError, MappingError};
use crate::catalog::declcfg::DocumentError;
use crate::manifest::ManifestError;

/// A `catalog template` failure.
#[derive(Debug, thiserror::Error)]
pub enum TemplateError {
    /// TYPE is not a template type.
    #[error("invalid template type {0:?}, must be one of: [basic semver]")]
    InvalidType(String),
    /// Neither `FILE` nor `TYPE FILE`.
    #[error("expected [TYPE] FILE")]
    Usage,
    /// A `--bundle-source` argument.
    #[error(transparent)]
    Mapping(#[from] MappingError),
    /// Standard input could not be read.
    #[error("standard input: {0}")]
    Stdin(std::io::Error),
    /// The template file could not be opened.
    #[error("unable to open {:?}: {error}", .path.display().to_string())]
    Open {
        /// The file.
        path: PathBuf,
        /// Why.
        error: std::io::Error,
    },
    /// The template file is not YAML or JSON.
    #[error(transparent)]
    Manifest(#[from] ManifestError),
    /// An error of the template at `path`.
    #[error("{}: {error}", .path.display())]
    In {
        /// The template file.
        path: PathBuf,
        /// What is wrong.
        error: Box<TemplateError>,
    },
    /// The `schema` could not be read while detecting the type.
    #[error("auto-detecting template type: unmarshalling template schema: {0}")]
    DetectDecode(GoDecodeError),
    /// No `schema` to detect the type from.
    #[error("auto-detecting template type: template input missing required 'schema' field")]
    DetectMissing,
    /// A `schema` of no known template.
    #[error("auto-detecting template type: unknown template schema: {0}")]
    DetectUnknown(String),
    /// The semver template could not be read.
    #[error("render: unable to read file: {0}")]
    ReadFile(Box<TemplateError>),
    /// The template could not be rendered.
    #[error("rendering template: {0}")]
    Rendering(Box<TemplateError>),
    /// The rendered catalog could not be drawn as a graph.
    #[error("{}: writing output: {error}", .path.display())]
    WritingGraph {
        /// The template file.
        path: PathBuf,
        /// Why.
        error: crate::catalog::graph::GraphError,
    },
    /// A bundle image could not be rendered.
    #[error(transparent)]
    BundleSource(#[from] BundleSourceError),

    /// The basic template's object does not decode.
    #[error("unmarshalling template: {0}")]
    BasicDecode(GoDecodeError),
    /// The basic template's schema is not `olm.template.basic`.
    #[error("template has unknown schema ({0:?}), should be {schema:?}", schema = super::basic::SCHEMA)]
    BasicSchema(String),
    /// An entry of the basic template is not a catalog document.
    #[error(transparent)]
    Document(#[from] DocumentError),
    /// A bundle of the basic template written out in full instead of by image.
    #[error("unexpected fields present in basic template bundle")]
    BasicBundleFields,

    /// The semver template's object does not decode (strictly).
    #[error("error unmarshaling JSON: while decoding JSON: {0}")]
    SemverDecode(GoDecodeError),
    /// The semver template's schema is not `olm.semver`.
    #[error("readFile: input file has unknown schema, should be {schema:?}", schema = super::semver::SCHEMA)]
    SemverSchema,
    /// `defaultChannelTypePreference: minor` without minor channels.
    #[error(
        "schema attribute mismatch: DefaultChannelTypePreference set to 'minor' doesn't make sense if not generating minor-version channels"
    )]
    MinorPreferenceWithoutMinor,
    /// `defaultChannelTypePreference: major` without major channels.
    #[error(
        "schema attribute mismatch: DefaultChannelTypePreference set to 'major' doesn't make sense if not generating major-version channels"
    )]
    MajorPreferenceWithoutMajor,
    /// An unknown `defaultChannelTypePreference`.
    #[error("unknown DefaultChannelTypePreference: {0:?}\nValid values are 'major' or 'minor'")]
    UnknownPreference(String),
    /// The semver template lists no bundle.
    #[error("render: no bundles specified or no bundles could be rendered")]
    NoBundles,
    /// The rendered bundles do not make one package of distinct versions.
    #[error("render: unable to post-process bundle info: {0}")]
    PostProcess(BundleInfoError),
}

/// Why the semver template's rendered bundles cannot be put in channels.
#[derive(Debug, thiserror::Error)]
pub enum BundleInfoError {
    /// A listed image was not rendered.
    #[error("supplied bundle image name {0:?} not found in rendered bundle images")]
    NotRendered(String),
    /// Not exactly one `olm.package` property, or a version that is not semver (the
    /// graph's reading, and words).
    #[error(transparent)]
    PackageVersion(#[from] crate::catalog::graph::GraphError),
    /// A bundle of another package.
    #[error("bundle {bundle_package:?} does not belong to this package: {package:?}")]
    OtherPackage {
        /// The bundle's package.
        bundle_package: String,
        /// The template's package.
        package: String,
    },
    /// One bundle listed twice.
    #[error("duplicate bundle name {0:?}")]
    DuplicateBundle(String),
    /// Versions that differ only in build metadata (one pair).
    #[error(
        "encountered bundle versions which differ only by build metadata, which cannot be ordered: {0}"
    )]
    BuildMetadataTwin(String),
    /// Versions that differ only in build metadata (several pairs).
    #[error("encountered bundle versions which differ only by build metadata, which cannot be ordered: [{}]", .0.join(", "))]
    BuildMetadataTwins(Vec<String>),
}
