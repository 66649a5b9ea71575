//! opm's document order, written once for both writers (`write.rs`, which has every
//! document at hand, and `spool.rs`, which sorts documents already written out as text):
//! documents grouped by package, packages by name, documents of other schemas without a
//! package after every group; within a group the package, its channels by name, its
//! bundles by name, its documents of other schemas by schema, its deprecations; ties in
//! document order.

use serde::Serialize;

use super::{Bundle, Channel, DeclarativeConfig, Deprecation, Meta, Package};

/// One document to write, borrowed from the config.
pub(super) enum Document<'a> {
    Package(&'a Package),
    Channel(&'a Channel),
    Bundle(&'a Bundle),
    Other(&'a Meta),
    Deprecation(&'a Deprecation),
}

impl Serialize for Document<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Document::Package(p) => p.serialize(serializer),
            Document::Channel(c) => c.serialize(serializer),
            Document::Bundle(b) => b.serialize(serializer),
            Document::Other(o) => o.blob.serialize(serializer),
            Document::Deprecation(d) => d.serialize(serializer),
        }
    }
}

/// Where a document goes: compared field by field in this order (the derived `Ord`), and
/// sorted stably so that ties keep document order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Place<'a> {
    /// A document of another schema without a package: after every package's group.
    pub loose: bool,
    /// The package whose group it is in.
    pub package: &'a str,
    /// Package, channel, bundle, other schema, deprecation.
    pub rank: u8,
    /// Channels and bundles by name, other schemas by schema; "" for the rest.
    pub key: &'a str,
}

impl<'a> Place<'a> {
    /// The place of `document`.
    pub(super) fn of(document: &Document<'a>) -> Place<'a> {
        let (package, rank, key): (&str, u8, &str) = match *document {
            Document::Package(p) => (&p.name, 0, ""),
            Document::Channel(c) => (&c.package, 1, &c.name),
            Document::Bundle(b) => (&b.package, 2, &b.name),
            Document::Other(o) => (&o.package, 3, &o.schema),
            Document::Deprecation(d) => (&d.package, 4, ""),
        };
        Place {
            loose: matches!(document, Document::Other(o) if o.package.is_empty()),
            package,
            rank,
            key,
        }
    }
}

/// Every document of `config` in document order (packages, channels, bundles, other schemas,
/// deprecations, each kind as listed).
pub(super) fn documents(config: &DeclarativeConfig) -> impl Iterator<Item = Document<'_>> {
    let packages = config.packages.iter().map(Document::Package);
    let channels = config.channels.iter().map(Document::Channel);
    let bundles = config.bundles.iter().map(Document::Bundle);
    let others = config.others.iter().map(Document::Other);
    let deprecations = config.deprecations.iter().map(Document::Deprecation);
    packages
        .chain(channels)
        .chain(bundles)
        .chain(others)
        .chain(deprecations)
}

/// Every document of `config` in opm's order.
pub(super) fn in_order(config: &DeclarativeConfig) -> Vec<Document<'_>> {
    let mut out: Vec<Document<'_>> = documents(config).collect();
    // Stable: documents of one place keep their order.
    out.sort_by(|a, b| Place::of(a).cmp(&Place::of(b)));
    out
}
