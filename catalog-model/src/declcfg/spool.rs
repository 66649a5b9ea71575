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

use std::collections::HashMap;
use std::io::{self, Write};

use super::DeclarativeConfig;
use super::order::{self, Place};
use super::write::write_pretty;

/// A document's [`Place`] in opm's order, owned: it outlives the parsed documents.
#[derive(Debug)]
struct OwnedPlace {
    loose: bool,
    package: String,
    rank: u8,
    key: String,
}

/// One file's documents as opm's pretty JSON, each with its place.
#[derive(Debug)]
pub struct RenderedDocuments {
    text: Vec<u8>,
    documents: Vec<(OwnedPlace, usize)>,
}

impl RenderedDocuments {
    /// Writes every document of `config`.
    pub fn of(config: &DeclarativeConfig) -> io::Result<RenderedDocuments> {
        let mut rendered = RenderedDocuments {
            text: Vec::new(),
            documents: Vec::new(),
        };
        for document in order::documents(config) {
            let start = rendered.text.len();
            write_pretty(&document, &mut rendered.text)?;
            let place = Place::of(&document);
            let place = OwnedPlace {
                loose: place.loose,
                package: place.package.to_string(),
                rank: place.rank,
                key: place.key.to_string(),
            };
            rendered
                .documents
                .push((place, rendered.text.len() - start));
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

impl Entry {
    /// The entry's place; `packages` are the index's package names.
    fn place<'a>(&'a self, packages: &'a [String]) -> Place<'a> {
        Place {
            loose: self.loose,
            package: &packages[self.package as usize],
            rank: self.rank,
            key: &self.key,
        }
    }
}

/// Where the text goes: a temporary file, or memory when none can be made.
enum Storage {
    File(std::fs::File),
    Memory(std::sync::Mutex<Vec<u8>>),
}

/// The text of every document stored so far. Loader threads store their file's text
/// themselves, each at the end of the spool when it is ready: the order of the text does
/// not matter, the index says where each document is.
pub struct SpoolText {
    storage: Storage,
    end: std::sync::atomic::AtomicU64,
}

/// One file's documents once their text is stored.
#[derive(Debug)]
pub struct StoredDocuments {
    offset: u64,
    documents: Vec<(OwnedPlace, usize)>,
}

impl SpoolText {
    /// Stores one file's text; thread-safe.
    pub fn store(&self, rendered: RenderedDocuments) -> io::Result<StoredDocuments> {
        use std::sync::atomic::Ordering::Relaxed;
        let offset = match &self.storage {
            Storage::File(file) => {
                let offset = self.end.fetch_add(rendered.text.len() as u64, Relaxed);
                std::os::unix::fs::FileExt::write_all_at(file, &rendered.text, offset)?;
                offset
            }
            Storage::Memory(text) => {
                let mut text = text.lock().unwrap_or_else(|e| e.into_inner());
                let offset = text.len() as u64;
                text.extend_from_slice(&rendered.text);
                offset
            }
        };
        Ok(StoredDocuments {
            offset,
            documents: rendered.documents,
        })
    }
}

/// Where each document stored so far is, in document order.
#[derive(Default)]
pub struct SpoolIndex {
    entries: Vec<Entry>,
    packages: Vec<String>,
    package_ids: HashMap<String, u32>,
}

impl SpoolIndex {
    /// Records one file's stored documents after those recorded before.
    pub fn append(&mut self, stored: StoredDocuments) {
        let mut offset = stored.offset;
        for (place, length) in stored.documents {
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
                offset,
                length: length as u32,
            });
            offset += length as u64;
        }
    }
}

/// Every document rendered so far: their text, and where each is.
pub struct JsonSpool {
    text: SpoolText,
    index: SpoolIndex,
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
            Err(_) => Storage::Memory(Default::default()),
        };
        JsonSpool {
            text: SpoolText {
                storage,
                end: Default::default(),
            },
            index: SpoolIndex::default(),
        }
    }

    /// The text, which loader threads store into, and the index, which records stored files
    /// in document order.
    pub fn parts(&mut self) -> (&SpoolText, &mut SpoolIndex) {
        (&self.text, &mut self.index)
    }

    /// Adds one file's documents after those added before.
    pub fn append(&mut self, rendered: RenderedDocuments) -> io::Result<()> {
        let stored = self.text.store(rendered)?;
        self.index.append(stored);
        Ok(())
    }

    /// Writes every document in opm's order.
    pub fn write_to(self, out: &mut impl Write) -> io::Result<()> {
        self.copy_out(out, |_, _, _| Ok(false))
    }

    /// [`JsonSpool::write_to`] into a file descriptor (standard output): the kernel copies
    /// the text from the spool file with `sendfile`, without a pass through this process.
    pub fn write_to_fd<W: Write + std::os::fd::AsFd>(self, out: &mut W) -> io::Result<()> {
        out.flush()?;
        let mut sendfile_works = true;
        self.copy_out(out, |out, file, (start, end)| {
            if !sendfile_works {
                return Ok(false);
            }
            let (mut offset, mut left) = (start as libc::off_t, (end - start) as usize);
            let mut first = true;
            while left > 0 {
                use std::os::fd::AsRawFd;
                // SAFETY: both descriptors are open for the call; `offset` is a valid pointer.
                let sent = unsafe {
                    libc::sendfile(out.as_fd().as_raw_fd(), file.as_raw_fd(), &mut offset, left)
                };
                if sent < 0 {
                    let error = io::Error::last_os_error();
                    if error.kind() == io::ErrorKind::Interrupted {
                        continue;
                    }
                    // Not every output takes sendfile (EINVAL): copy through memory instead.
                    if first && matches!(error.raw_os_error(), Some(libc::EINVAL | libc::ENOSYS)) {
                        sendfile_works = false;
                        return Ok(false);
                    }
                    return Err(error);
                }
                first = false;
                left -= sent as usize;
            }
            Ok(true)
        })
    }

    /// Copies the documents out in opm's order, runs of contiguous text at once; `direct`
    /// may copy a run from the spool file itself and say so.
    fn copy_out<W: Write>(
        self,
        out: &mut W,
        mut direct: impl FnMut(&mut W, &std::fs::File, (u64, u64)) -> io::Result<bool>,
    ) -> io::Result<()> {
        let JsonSpool { text, mut index } = self;
        let packages = &index.packages;
        // A stable sort: entries were recorded in document order, which breaks ties.
        index
            .entries
            .sort_by(|a, b| a.place(packages).cmp(&b.place(packages)));
        let entries = &index.entries;
        let memory = match &text.storage {
            Storage::Memory(text) => Some(text.lock().unwrap_or_else(|e| e.into_inner())),
            Storage::File(_) => None,
        };
        let mut buffer = Vec::new();
        let mut at = 0;
        while at < entries.len() {
            // Entries whose text follows one another in the spool are copied in one piece
            // (usually all of a file's documents).
            let start = entries[at].offset;
            let mut end = start + entries[at].length as u64;
            at += 1;
            while at < entries.len() && entries[at].offset == end && end - start < (4 << 20) {
                end += entries[at].length as u64;
                at += 1;
            }
            match (&text.storage, &memory) {
                (_, Some(text)) => out.write_all(&text[start as usize..end as usize])?,
                (Storage::File(file), None) => {
                    if direct(out, file, (start, end))? {
                        continue;
                    }
                    buffer.resize((end - start) as usize, 0);
                    std::os::unix::fs::FileExt::read_exact_at(file, &mut buffer, start)?;
                    out.write_all(&buffer)?;
                }
                (Storage::Memory(_), None) => unreachable!("memory storage is always locked"),
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
        let mut spool = JsonSpool::new();
        spool.text.storage = Storage::Memory(Default::default());
        let mut file_spool = JsonSpool::new();
        assert!(matches!(file_spool.text.storage, Storage::File(_)));
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
        // And through sendfile into a file, as standard output is written.
        let mut sent = tempfile::tempfile().unwrap();
        let mut second = JsonSpool::new();
        for (i, text) in files.iter().enumerate() {
            let mut config = DeclarativeConfig::default();
            super::super::load_str(
                &std::path::PathBuf::from(format!("{i}.json")),
                text,
                &mut config,
            )
            .unwrap();
            second
                .append(RenderedDocuments::of(&config).unwrap())
                .unwrap();
        }
        second.write_to_fd(&mut sent).unwrap();
        let mut from_sendfile = String::new();
        std::io::Seek::rewind(&mut sent).unwrap();
        std::io::Read::read_to_string(&mut sent, &mut from_sendfile).unwrap();
        let expected = super::super::to_json(&whole);
        assert_eq!(String::from_utf8(from_memory).unwrap(), expected);
        assert_eq!(String::from_utf8(from_file).unwrap(), expected);
        assert_eq!(from_sendfile, expected);
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
