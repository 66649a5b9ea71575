//! Writing a catalog as `opm render` does: packages by name, each followed by its channels
//! and bundles (by name), its other documents, its deprecations; package-less documents last.

use serde::Serialize;
use serde_json::Value;

use super::DeclarativeConfig;

/// One document to write, borrowed from the config.
pub(super) enum Document<'a> {
    Package(&'a super::Package),
    Channel(&'a super::Channel),
    Bundle(&'a super::Bundle),
    Other(&'a super::Meta),
    Deprecation(&'a super::Deprecation),
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

fn ordered(config: &DeclarativeConfig) -> Vec<Document<'_>> {
    use std::collections::BTreeMap;
    // One pass to group by package (render used to scan every document once per package).
    #[derive(Default)]
    struct Group<'a> {
        packages: Vec<&'a super::Package>,
        channels: Vec<&'a super::Channel>,
        bundles: Vec<&'a super::Bundle>,
        others: Vec<&'a super::Meta>,
        deprecations: Vec<&'a super::Deprecation>,
    }
    let mut groups: BTreeMap<&str, Group> = BTreeMap::new();
    for p in &config.packages {
        groups.entry(&p.name).or_default().packages.push(p);
    }
    for c in &config.channels {
        groups.entry(&c.package).or_default().channels.push(c);
    }
    for b in &config.bundles {
        groups.entry(&b.package).or_default().bundles.push(b);
    }
    for d in &config.deprecations {
        groups.entry(&d.package).or_default().deprecations.push(d);
    }
    let mut loose: Vec<&super::Meta> = Vec::new();
    for o in &config.others {
        if o.package.is_empty() {
            loose.push(o);
        } else {
            groups.entry(&o.package).or_default().others.push(o);
        }
    }
    let mut out = Vec::new();
    for (_, mut group) in groups {
        out.extend(group.packages.into_iter().map(Document::Package));
        group.channels.sort_by(|a, b| a.name.cmp(&b.name));
        out.extend(group.channels.into_iter().map(Document::Channel));
        group.bundles.sort_by(|a, b| a.name.cmp(&b.name));
        out.extend(group.bundles.into_iter().map(Document::Bundle));
        group.others.sort_by(|a, b| a.schema.cmp(&b.schema));
        out.extend(group.others.into_iter().map(Document::Other));
        out.extend(group.deprecations.into_iter().map(Document::Deprecation));
    }
    loose.sort_by(|a, b| a.schema.cmp(&b.schema));
    out.extend(loose.into_iter().map(Document::Other));
    out
}

/// JSON objects one after another, 4-space indented, as `opm render -o json`.
pub fn to_json(config: &DeclarativeConfig) -> String {
    let mut buffer = Vec::with_capacity(1 << 16);
    // Writing into a Vec cannot fail.
    let _ = write_json(config, &mut buffer);
    // serde_json writes UTF-8 only.
    String::from_utf8(buffer).unwrap_or_default()
}

/// Writes the JSON of [`to_json`] to `out` as it goes. Documents are serialized straight from
/// the typed structs (fields in opm's order), not through an intermediate `Value` per
/// document and one big string, which doubled render's time and memory. Batches of
/// documents are serialized on every core and written in order, so memory stays bounded
/// by a batch while the escaping work (most of a render's time) is shared.
pub fn write_json(
    config: &DeclarativeConfig,
    out: &mut impl std::io::Write,
) -> std::io::Result<()> {
    const BATCH: usize = 128;
    let documents = ordered(config);
    let workers = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .clamp(1, 8);
    for batch in documents.chunks(BATCH * workers) {
        let share = batch.len().div_ceil(workers).max(1);
        let buffers: Vec<std::io::Result<Vec<u8>>> = std::thread::scope(|scope| {
            let handles: Vec<_> = batch
                .chunks(share)
                .map(|part| scope.spawn(move || serialize_pretty(part)))
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join()
                        .unwrap_or_else(|_| Err(std::io::Error::other("a writer thread panicked")))
                })
                .collect()
        });
        for buffer in buffers {
            out.write_all(&buffer?)?;
        }
    }
    Ok(())
}

/// Documents as opm's pretty JSON, each followed by a line break.
fn serialize_pretty(documents: &[Document<'_>]) -> std::io::Result<Vec<u8>> {
    let mut buffer = Vec::with_capacity(documents.len() * 1024);
    for document in documents {
        write_pretty(document, &mut buffer)?;
    }
    Ok(buffer)
}

/// One document as opm's pretty JSON (4-space indent), followed by a line break.
pub(super) fn write_pretty(document: &Document<'_>, buffer: &mut Vec<u8>) -> std::io::Result<()> {
    if let Document::Bundle(bundle) = document {
        // Bundles are most of the output: written without serde's round trip of every
        // property value (see `pretty`).
        super::pretty::write_bundle(bundle, buffer)?;
    } else {
        let formatter = serde_json::ser::PrettyFormatter::with_indent(b"    ");
        let mut serializer = serde_json::Serializer::with_formatter(&mut *buffer, formatter);
        document.serialize(&mut serializer)?;
    }
    buffer.push(b'\n');
    Ok(())
}

/// YAML documents, each starting with `---`, as `opm render -o yaml` (keys sorted, as opm's
/// JSON-to-YAML conversion sorts them).
pub fn to_yaml(config: &DeclarativeConfig) -> String {
    ordered(config)
        .iter()
        .map(|document| {
            let value = serde_json::to_value(document).unwrap_or(Value::Null);
            format!(
                "---\n{}",
                serde_saphyr::to_string(&value).unwrap_or_default()
            )
        })
        .collect()
}
