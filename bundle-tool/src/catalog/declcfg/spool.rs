//! `opm render -o json` for catalogs of any size, in memory bounded by a few files.
//!
//! opm's output is grouped by package, which any file may contribute to, so nothing can be
//! written before every file is read. Instead of holding every parsed document until then,
//! each file's documents are written out as their final JSON text at once (on the loader
//! threads) and appended to an unnamed temporary file, with a small entry per document that
//! says where it goes; at the end the entries are sorted into opm's order and the text is
//! copied out, contiguous runs in one piece. Peak memory is the entries plus the files in
//! flight, not the catalog: on the generated 20,000-bundle catalog the documents alone were
//! 30 MiB of heap.

use std::cmp::Ordering;
use std::collections::HashMap;
use std::io::{self, Write};

use super::DeclarativeConfig;
use super::write::{Document, write_pretty};

/// Where a document goes in opm's order: its package's group (documents of other schemas
/// without a package come last), then packages, channels, bundles, other schemas and
/// deprecations, channels and bundles by name and others by schema, ties in document order.
#[derive(Debug)]
struct Place {
    loose: bool,
    package: String,
    rank: u8,
    key: String,
}

/// One file's documents as opm's pretty JSON, each with its place.
#[derive(Debug)]
pub struct RenderedDocuments {
    text: Vec<u8>,
    documents: Vec<(Place, usize)>,
}

impl RenderedDocuments {
    /// Writes every document of `config`.
    pub fn of(config: &DeclarativeConfig) -> io::Result<RenderedDocuments> {
        let mut rendered = RenderedDocuments {
            text: Vec::new(),
            documents: Vec::new(),
        };
        let mut add = |document: Document<'_>, place: Place| -> io::Result<()> {
            let start = rendered.text.len();
            write_pretty(&document, &mut rendered.text)?;
            rendered
                .documents
                .push((place, rendered.text.len() - start));
            Ok(())
        };
        let place = |package: &str, rank: u8, key: &str| Place {
            loose: false,
            package: package.to_string(),
            rank,
            key: key.to_string(),
        };
        for p in &config.packages {
            add(Document::Package(p), place(&p.name, 0, ""))?;
        }
        for c in &config.channels {
            add(Document::Channel(c), place(&c.package, 1, &c.name))?;
        }
        for b in &config.bundles {
            add(Document::Bundle(b), place(&b.package, 2, &b.name))?;
        }
        for o in &config.others {
            let mut at = place(&o.package, 3, &o.schema);
            at.loose = o.package.is_empty();
            add(Document::Other(o), at)?;
        }
        for d in &config.deprecations {
            add(Document::Deprecation(d), place(&d.package, 4, ""))?;
        }
        Ok(rendered)
    }
}

/// A document's text in the spool and its place.
struct Entry {
    loose: bool,
    package: u32,
    rank: u8,
    key: Box<str>,
    offset: u64,
    length: u32,
}

/// Where the text goes: a temporary file, or memory when none can be made.
enum Storage {
    File(std::fs::File),
    Memory(Vec<u8>),
}

/// The documents of every file rendered so far, in the order they were added.
pub struct JsonSpool {
    storage: Storage,
    written: u64,
    entries: Vec<Entry>,
    packages: Vec<String>,
    package_ids: HashMap<String, u32>,
}

impl Default for JsonSpool {
    fn default() -> Self {
        JsonSpool::new()
    }
}

impl JsonSpool {
    /// An empty spool backed by an unnamed temporary file (in memory if none can be made).
    pub fn new() -> JsonSpool {
        let storage = match tempfile::tempfile() {
            Ok(file) => Storage::File(file),
            Err(_) => Storage::Memory(Vec::new()),
        };
        JsonSpool {
            storage,
            written: 0,
            entries: Vec::new(),
            packages: Vec::new(),
            package_ids: HashMap::new(),
        }
    }

    /// Adds one file's documents after those added before.
    pub fn append(&mut self, rendered: RenderedDocuments) -> io::Result<()> {
        match &mut self.storage {
            Storage::File(file) => file.write_all(&rendered.text)?,
            Storage::Memory(text) => text.extend_from_slice(&rendered.text),
        }
        for (place, length) in rendered.documents {
            let package = match self.package_ids.get(&place.package) {
                Some(id) => *id,
                None => {
                    let id = self.packages.len() as u32;
                    self.packages.push(place.package.clone());
                    self.package_ids.insert(place.package, id);
                    id
                }
            };
            self.entries.push(Entry {
                loose: place.loose,
                package,
                rank: place.rank,
                key: place.key.into_boxed_str(),
                offset: self.written,
                length: length as u32,
            });
            self.written += length as u64;
        }
        Ok(())
    }

    /// Writes every document in opm's order.
    pub fn write_to(mut self, out: &mut impl Write) -> io::Result<()> {
        let packages = &self.packages;
        // A stable sort: entries were added in document order, which breaks ties.
        self.entries.sort_by(|a, b| {
            a.loose
                .cmp(&b.loose)
                .then_with(|| match a.package.cmp(&b.package) {
                    Ordering::Equal => Ordering::Equal,
                    _ => packages[a.package as usize].cmp(&packages[b.package as usize]),
                })
                .then(a.rank.cmp(&b.rank))
                .then_with(|| a.key.cmp(&b.key))
        });
        let mut buffer = Vec::new();
        let mut index = 0;
        while index < self.entries.len() {
            // Entries whose text follows one another in the spool are copied in one piece
            // (usually all of a package's documents).
            let start = self.entries[index].offset;
            let mut end = start + self.entries[index].length as u64;
            index += 1;
            while index < self.entries.len()
                && self.entries[index].offset == end
                && end - start < (4 << 20)
            {
                end += self.entries[index].length as u64;
                index += 1;
            }
            match &self.storage {
                Storage::File(file) => {
                    buffer.resize((end - start) as usize, 0);
                    std::os::unix::fs::FileExt::read_exact_at(file, &mut buffer, start)?;
                    out.write_all(&buffer)?;
                }
                Storage::Memory(text) => out.write_all(&text[start as usize..end as usize])?,
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rendering file by file through the spool gives exactly what rendering the whole
    /// catalog at once gives, with documents of one package spread over files.
    #[test]
    fn matches_the_in_memory_writer() {
        let files = [
            concat!(
                r#"{"schema":"olm.package","name":"zeta","defaultChannel":"b"}"#,
                r#"{"schema":"olm.channel","name":"b","package":"zeta","entries":[{"name":"z2"}]}"#,
                r#"{"schema":"custom.loose","name":"l2"}"#,
                r#"{"schema":"olm.bundle","name":"z2","package":"zeta","image":"i"}"#,
            ),
            concat!(
                r#"{"schema":"olm.channel","name":"a","package":"zeta","entries":[{"name":"z1"}]}"#,
                r#"{"schema":"olm.bundle","name":"z1","package":"zeta","image":"i"}"#,
                r#"{"schema":"olm.deprecations","package":"zeta","entries":[]}"#,
                r#"{"schema":"custom.b","package":"zeta","name":"x"}"#,
                r#"{"schema":"custom.a","package":"zeta","name":"y"}"#,
                r#"{"schema":"custom.a","package":"zeta","name":"w"}"#,
                r#"{"schema":"custom.aloose","name":"l1"}"#,
            ),
            concat!(
                r#"{"schema":"olm.package","name":"alpha","defaultChannel":"s"}"#,
                r#"{"schema":"olm.bundle","name":"a1","package":"alpha","image":"i"}"#,
                r#"{"schema":"olm.channel","name":"s","package":"alpha","entries":[{"name":"a1"}]}"#,
            ),
        ];
        let mut whole = DeclarativeConfig::default();
        let mut spool = JsonSpool {
            storage: Storage::Memory(Vec::new()),
            ..JsonSpool::new()
        };
        let mut file_spool = JsonSpool::new();
        assert!(matches!(file_spool.storage, Storage::File(_)));
        for (i, text) in files.iter().enumerate() {
            let path = std::path::PathBuf::from(format!("{i}.json"));
            let mut config = DeclarativeConfig::default();
            super::super::load_str(&path, text, &mut config).unwrap();
            super::super::load_str(&path, text, &mut whole).unwrap();
            spool
                .append(RenderedDocuments::of(&config).unwrap())
                .unwrap();
            file_spool
                .append(RenderedDocuments::of(&config).unwrap())
                .unwrap();
        }
        let mut from_memory = Vec::new();
        spool.write_to(&mut from_memory).unwrap();
        let mut from_file = Vec::new();
        file_spool.write_to(&mut from_file).unwrap();
        let expected = super::super::to_json(&whole);
        assert_eq!(String::from_utf8(from_memory).unwrap(), expected);
        assert_eq!(String::from_utf8(from_file).unwrap(), expected);
        let names: Vec<&str> = expected
            .lines()
            .filter_map(|l| l.strip_prefix("    \"name\": \""))
            .map(|l| l.trim_end_matches(['"', ',']))
            .collect();
        assert_eq!(
            names,
            [
                "alpha", "s", "a1", "zeta", "a", "b", "z1", "z2", "y", "w", "x", "l1", "l2"
            ]
        );
    }
}
