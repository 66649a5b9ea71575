//! A Go type as `encoding/json` decodes into it, and the shared leaf types.

/// A Go type as `encoding/json` sees it.
pub enum Go {
    /// A string kind, with its Go type name.
    Str(&'static str),
    /// `bool`.
    Bool,
    /// `int32` (ports, timeouts).
    Int32,
    /// `version.OperatorVersion`: a string read with tolerant semver.
    Version,
    /// Not checked.
    Any,
    /// A slice of the element type.
    Slice(&'static Go),
    /// A map with string keys: its Go type name and value type.
    Map(&'static str, &'static Go),
    /// A struct: its Go type name and JSON fields.
    Struct(&'static str, &'static [(&'static str, Go)]),
}

/// Go's `string`.
pub const STR: Go = Go::Str("string");
/// `[]string`.
pub const STRINGS: Go = Go::Slice(&STR);
/// `map[string]string`.
pub const STRING_MAP: Go = Go::Map("map[string]string", &STR);
/// `v1.ObjectMeta`, the fields a manifest sets.
pub const OBJECT_META: Go = Go::Struct(
    "v1.ObjectMeta",
    &[
        ("annotations", STRING_MAP),
        ("generateName", STR),
        ("labels", STRING_MAP),
        ("name", STR),
        ("namespace", STR),
    ],
);

impl Go {
    /// The type's name as Go's `reflect.Type.String()` prints it.
    pub fn name(&self) -> String {
        match self {
            Go::Str(name) => (*name).to_string(),
            Go::Bool => "bool".into(),
            Go::Int32 => "int32".into(),
            Go::Version => "version.OperatorVersion".into(),
            Go::Any => "interface {}".into(),
            Go::Slice(element) => format!("[]{}", element.name()),
            Go::Map(name, _) | Go::Struct(name, _) => (*name).to_string(),
        }
    }
}
