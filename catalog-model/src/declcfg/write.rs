//! Writing a catalog as `opm render` does, in opm's order (`order.rs`).

use serde::Serialize;
use serde_json::Value;

use super::DeclarativeConfig;
use super::order::{Document, in_order};

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
    let documents = in_order(config);
    let workers = crate::parallel::workers();
    for batch in documents.chunks(BATCH * workers) {
        // Each worker serializes a contiguous share; the shares are written in order.
        let shares: Vec<&[Document<'_>]> =
            batch.chunks(batch.len().div_ceil(workers).max(1)).collect();
        for buffer in
            crate::parallel::map_dynamic_on(workers, &shares, |share| serialize_pretty(share))
        {
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
    in_order(config)
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
