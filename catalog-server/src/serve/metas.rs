//! The catalog's documents for the HTTP view, as JSON lines (one document per line, like
//! OLM v1's catalogd), kept in an unnamed temporary file rather than in memory: the HTTP view
//! is read rarely and the documents are the bulk of a catalog.

use super::spill::{BlobRef, SpillFile, SpillWriter};
use catalog_model::declcfg::DeclarativeConfig;

/// Where one document is.
struct MetaEntry {
    schema: String,
    package: String,
    name: String,
    line: BlobRef,
}

/// All documents of one snapshot.
pub struct MetaStore {
    file: SpillFile,
    entries: Vec<MetaEntry>,
    written: std::time::SystemTime,
}

/// A filter on documents: each set field must match exactly (an empty value, as catalogd
/// reads one, is no filter).
#[derive(Debug, Default)]
pub struct MetaQuery {
    /// `schema`.
    pub schema: Option<String>,
    /// `package` (a package document has none).
    pub package: Option<String>,
    /// `name`.
    pub name: Option<String>,
}

impl MetaStore {
    /// Writes every document of `config` to a new temporary file.
    pub fn write(config: &DeclarativeConfig) -> std::io::Result<MetaStore> {
        let mut writer = SpillWriter::new()?;
        let mut entries = Vec::new();
        let mut add = |schema: &str, package: &str, name: &str, mut line: Vec<u8>| {
            line.push(b'\n');
            entries.push(MetaEntry {
                schema: schema.to_string(),
                package: package.to_string(),
                name: name.to_string(),
                line: writer.append(&line)?,
            });
            std::io::Result::Ok(())
        };
        // A package document has no `package` key, so like catalogd's index (which files a
        // document under the value of that key) it is found by schema and name, not package.
        for p in &config.packages {
            add(&p.schema, "", &p.name, serde_json::to_vec(p)?)?;
        }
        for c in &config.channels {
            add(&c.schema, &c.package, &c.name, serde_json::to_vec(c)?)?;
        }
        for b in &config.bundles {
            add(&b.schema, &b.package, &b.name, serde_json::to_vec(b)?)?;
        }
        for d in &config.deprecations {
            add(&d.schema, &d.package, "", serde_json::to_vec(d)?)?;
        }
        for m in &config.others {
            add(&m.schema, &m.package, &m.name, serde_json::to_vec(&m.blob)?)?;
        }
        Ok(MetaStore {
            file: writer.finish()?,
            entries,
            written: std::time::SystemTime::now(),
        })
    }

    /// When the documents were written (the HTTP view's `Last-Modified`).
    pub fn modified(&self) -> std::time::SystemTime {
        self.written
    }

    /// How many documents there are.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The matching documents as JSON lines, in catalog order.
    pub fn select(&self, query: &MetaQuery) -> std::io::Result<Vec<u8>> {
        let wanted = |filter: &Option<String>, value: &str| {
            filter.as_deref().is_none_or(|f| f.is_empty() || f == value)
        };
        let mut out = Vec::new();
        for entry in &self.entries {
            if wanted(&query.schema, &entry.schema)
                && wanted(&query.package, &entry.package)
                && wanted(&query.name, &entry.name)
            {
                self.file.read_into(entry.line, &mut out)?;
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_select_documents_by_schema_package_and_name() {
        let mut config = DeclarativeConfig::default();
        catalog_model::declcfg::load_str(
            std::path::Path::new("catalog.yaml"),
            "schema: olm.package\nname: a\n---\nschema: olm.channel\npackage: a\nname: stable\nentries: [{name: a.v1}]\n---\nschema: olm.bundle\npackage: a\nname: a.v1\nimage: x/a:1\nproperties: [{type: olm.package, value: {packageName: a, version: 1.0.0}}]\n",
            &mut config,
        )
        .unwrap();
        let store = MetaStore::write(&config).unwrap();
        assert_eq!(store.len(), 3);
        let all = String::from_utf8(store.select(&MetaQuery::default()).unwrap()).unwrap();
        assert_eq!(all.lines().count(), 3);
        for line in all.lines() {
            serde_json::from_str::<serde_json::Value>(line).unwrap();
        }
        let channels = store
            .select(&MetaQuery {
                schema: Some("olm.channel".into()),
                ..Default::default()
            })
            .unwrap();
        let text = String::from_utf8(channels).unwrap();
        assert!(
            text.starts_with("{\"entries\"") || text.contains("\"name\":\"stable\""),
            "{text}"
        );
        assert_eq!(text.lines().count(), 1);
        let none = store
            .select(&MetaQuery {
                package: Some("b".into()),
                ..Default::default()
            })
            .unwrap();
        assert!(none.is_empty());
    }
}
