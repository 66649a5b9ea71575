//! OLM's property types: their names and the shape of the value each known one carries.
//!
//! A bundle's properties are `{type, value}` pairs. The loader, the model's checks, render,
//! the server's index and the upgrade checks all need the same names and the same idea of
//! which fields a value has; they are written here once, below all of them (opm keeps the
//! same knowledge in one package too). Values themselves stay as the catalog stores them
//! (canonical JSON text, `declcfg::RawJson`): decoding them into structs would cost the
//! loader the copies it avoids.

/// `olm.package`: the bundle's package and version (exactly one per bundle).
pub const PACKAGE: &str = "olm.package";
/// `olm.gvk`: an API the bundle provides.
pub const GVK: &str = "olm.gvk";
/// `olm.csv.metadata`: the CSV's metadata, for a bundle whose manifests are not inline.
pub const CSV_METADATA: &str = "olm.csv.metadata";
/// `olm.bundle.object`: one manifest of the bundle, base64 in `data`.
pub const BUNDLE_OBJECT: &str = "olm.bundle.object";
/// `olm.gvk.required`: an API the bundle needs.
pub const GVK_REQUIRED: &str = "olm.gvk.required";
/// `olm.package.required`: a package (and version range) the bundle needs.
pub const PACKAGE_REQUIRED: &str = "olm.package.required";
/// `olm.channel`: a channel the bundle declares itself in (old catalogs).
pub const CHANNEL: &str = "olm.channel";
/// `olm.bundle.mediatype`: the bundle's format.
pub const BUNDLE_MEDIATYPE: &str = "olm.bundle.mediatype";
/// `olm.maxOpenShiftVersion`: the newest OpenShift the bundle runs on.
pub const MAX_OPENSHIFT_VERSION: &str = "olm.maxOpenShiftVersion";
/// `olm.constraint`: a generic dependency constraint.
pub const CONSTRAINT: &str = "olm.constraint";
/// `olm.deprecated`: the bundle is deprecated (old form).
pub const DEPRECATED: &str = "olm.deprecated";
/// `olm.substitutesFor`: the bundle replaces another of the same version.
pub const SUBSTITUTES_FOR: &str = "olm.substitutesFor";
/// `olm.label`: a label a dependency may select.
pub const LABEL: &str = "olm.label";
/// `olm.label.required`: a label the bundle needs some other bundle to carry.
pub const LABEL_REQUIRED: &str = "olm.label.required";

/// Every property type OLM and operator-registry define.
pub const KNOWN_TYPES: [&str; 14] = [
    PACKAGE,
    GVK,
    CSV_METADATA,
    BUNDLE_OBJECT,
    GVK_REQUIRED,
    PACKAGE_REQUIRED,
    CHANNEL,
    BUNDLE_MEDIATYPE,
    MAX_OPENSHIFT_VERSION,
    CONSTRAINT,
    DEPRECATED,
    SUBSTITUTES_FOR,
    LABEL,
    LABEL_REQUIRED,
];

/// The fields of an API (`olm.gvk`, `olm.gvk.required`), in the order the index stores them.
pub const GVK_FIELDS: [&str; 3] = ["group", "version", "kind"];

/// The Go type of a field of a typed property value, as Go's decoder names it in its errors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GoKind {
    /// `string`.
    String,
    /// `int`.
    Int,
}

impl GoKind {
    /// The name Go's messages use.
    pub fn go_name(self) -> &'static str {
        match self {
            GoKind::String => "string",
            GoKind::Int => "int",
        }
    }
}

/// The fields opm's typed struct for a property type reads, with their Go types; `None` for a
/// type opm keeps as opaque JSON. A value of a typed property must be an object (or null) whose
/// listed fields have these types; other fields are ignored, as Go's decoder ignores them.
pub fn value_fields(type_: &str) -> Option<&'static [(&'static str, GoKind)]> {
    use GoKind::{Int, String};
    Some(match type_ {
        PACKAGE => &[
            ("packageName", String),
            ("version", String),
            ("release", String),
        ],
        GVK | GVK_REQUIRED => &[("group", String), ("kind", String), ("version", String)],
        PACKAGE_REQUIRED => &[("packageName", String), ("versionRange", String)],
        BUNDLE_OBJECT => &[("data", String)],
        CHANNEL => &[("channelName", String), ("priority", Int)],
        CSV_METADATA => &[],
        _ => return None,
    })
}
