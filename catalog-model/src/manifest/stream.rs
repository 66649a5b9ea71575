//! Splitting YAML/JSON streams into documents, with the line each document starts on.

use std::fmt;
use std::path::{Path, PathBuf};

/// Where a document (or an error) is in its source: a file (or `-` for standard input) and a
/// 1-based line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceLocation {
    /// The file the text was read from.
    pub path: PathBuf,
    /// 1-based line number.
    pub line: u64,
    /// 1-based column, when known.
    pub column: Option<u64>,
}

impl fmt::Display for SourceLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.path.display(), self.line)?;
        if let Some(column) = self.column {
            write!(f, ":{column}")?;
        }
        Ok(())
    }
}

/// One parsed document of a stream.
#[derive(Clone, Debug, PartialEq)]
pub struct Document {
    /// Where the document starts.
    pub location: SourceLocation,
    /// The parsed content.
    pub value: serde_json::Value,
}

/// Why a stream could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    /// The file or folder could not be read.
    #[error("{path}: {error}")]
    Io {
        /// The path that failed.
        path: PathBuf,
        /// The underlying error.
        error: std::io::Error,
    },
    /// A document is not valid YAML or JSON.
    #[error("{location}: {message}")]
    Parse {
        /// Where the problem is.
        location: SourceLocation,
        /// What the parser said.
        message: String,
    },
}

/// Reads every document of a file, or of every regular file below a folder (sorted by path,
/// hidden files skipped).
pub fn read_path(path: &Path) -> Result<Vec<Document>, ManifestError> {
    let io_error = |error| ManifestError::Io {
        path: path.to_path_buf(),
        error,
    };
    let metadata = std::fs::metadata(path).map_err(io_error)?;
    if !metadata.is_dir() {
        let text = std::fs::read_to_string(path).map_err(io_error)?;
        return read_stream(path, &text);
    }
    let mut files = Vec::new();
    collect_files(path, &mut files)?;
    files.sort();
    let mut documents = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).map_err(|error| ManifestError::Io {
            path: file.clone(),
            error,
        })?;
        documents.extend(read_stream(&file, &text)?);
    }
    Ok(documents)
}

fn collect_files(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), ManifestError> {
    let io_error = |error| ManifestError::Io {
        path: dir.to_path_buf(),
        error,
    };
    for entry in std::fs::read_dir(dir).map_err(io_error)? {
        let entry = entry.map_err(io_error)?;
        if entry.file_name().to_string_lossy().starts_with('.') {
            continue;
        }
        let path = entry.path();
        if entry.file_type().map_err(io_error)?.is_dir() {
            collect_files(&path, out)?;
        } else {
            out.push(path);
        }
    }
    Ok(())
}

/// Parses a YAML (or JSON) stream of documents. Empty and comment-only documents are skipped.
///
/// Machine-written YAML is transcoded by the fast path (`manifest::yaml`); whatever
/// it declines is read by [`read_stream_generic`], with the same result.
pub fn read_stream(path: &Path, text: &str) -> Result<Vec<Document>, ManifestError> {
    if let Some(documents) = read_fast(path, text) {
        return Ok(documents);
    }
    read_stream_generic(path, text)
}

/// The fast path: the documents of the transcoded JSON, paired in order with the first
/// content line of each non-empty document; `None` to take the generic path.
fn read_fast(path: &Path, text: &str) -> Option<Vec<Document>> {
    let json = super::yaml::to_json(text)?;
    let mut values = serde_json::Deserializer::from_str(&json).into_iter::<serde_json::Value>();
    let mut documents = Vec::new();
    for line in content_lines(text) {
        documents.push(Document {
            location: SourceLocation {
                path: path.to_path_buf(),
                line,
                column: None,
            },
            value: values.next()?.ok()?,
        });
    }
    values.next().is_none().then_some(documents)
}

/// The 1-based line of the first content line (neither blank nor a comment) of every
/// document that has one, as [`read_stream_generic`] numbers them.
fn content_lines(text: &str) -> Vec<u64> {
    let mut lines = Vec::new();
    let mut found = false;
    for (index, line) in text.lines().enumerate() {
        if line == "---" || line.starts_with("--- ") || line.starts_with("---\t") {
            found = false;
        } else if !found {
            let t = line.trim();
            if !t.is_empty() && !t.starts_with('#') {
                lines.push(index as u64 + 1);
                found = true;
            }
        }
    }
    lines
}

/// Parses a YAML (or JSON) stream with serde-saphyr (serde_json for JSON documents): the
/// reference reader, which the fast path of [`read_stream`] is tested against.
///
/// The stream is split at `---` lines before parsing so that every document knows the line it
/// starts on; a parse error is reported at its line in the whole file, not in the document.
pub fn read_stream_generic(path: &Path, text: &str) -> Result<Vec<Document>, ManifestError> {
    let mut documents = Vec::new();
    for (first_line, chunk) in split_documents(text) {
        if chunk.lines().all(|l| {
            let t = l.trim();
            t.is_empty() || t.starts_with('#')
        }) {
            continue;
        }
        let value =
            parse_document(&chunk).map_err(|(line, column, message)| ManifestError::Parse {
                location: SourceLocation {
                    path: path.to_path_buf(),
                    line: first_line + line.saturating_sub(1),
                    column,
                },
                message,
            })?;
        if value.is_null() {
            continue;
        }
        let content_line = chunk
            .lines()
            .position(|l| {
                let t = l.trim();
                !t.is_empty() && !t.starts_with('#') && !t.starts_with('%')
            })
            .unwrap_or(0) as u64;
        documents.push(Document {
            location: SourceLocation {
                path: path.to_path_buf(),
                line: first_line + content_line,
                column: None,
            },
            value,
        });
    }
    Ok(documents)
}

/// Splits at document markers (`---` at the start of a line), returning each chunk with the
/// 1-based line it starts on. Text after `---` on the marker line belongs to the document.
fn split_documents(text: &str) -> Vec<(u64, String)> {
    let mut chunks = Vec::new();
    let mut current = String::new();
    let mut start = 1u64;
    for (index, line) in text.lines().enumerate() {
        let line_no = index as u64 + 1;
        let is_marker = line == "---" || line.starts_with("--- ") || line.starts_with("---\t");
        let is_end = line == "..." || line.starts_with("... ");
        if is_marker || is_end {
            chunks.push((start, std::mem::take(&mut current)));
            start = line_no;
            if is_marker {
                // Keep the marker line's tail (e.g. `--- !tag` or `--- {a: 1}`) in place, so
                // line numbers inside the chunk stay right.
                current.push_str(line[3..].trim_start());
            }
            current.push('\n');
            if is_end {
                start = line_no + 1;
                current.clear();
            }
            continue;
        }
        current.push_str(line);
        current.push('\n');
    }
    chunks.push((start, current));
    chunks
}

type ParseFailure = (u64, Option<u64>, String);

/// The most nodes (mappings, sequences, scalars) one document may have, aliases expanded
/// (serde-saphyr's default is 250,000). go-yaml starts refusing heavily aliased documents at
/// 400,000 decoded nodes; a million is tens of megabytes of YAML written out, while a
/// registry+v1 bundle is at most 1 MiB compressed. serde-saphyr's limit of a million parser
/// events, which also counts expanded aliases, is kept. A billion-laughs document reaches
/// these limits within a second.
const MAX_NODES: usize = 1_000_000;

/// The most parser events one document may replay from aliases.
const MAX_REPLAYED_ALIAS_EVENTS: usize = 1_000_000;

fn parse_document(chunk: &str) -> Result<serde_json::Value, ParseFailure> {
    let trimmed = chunk.trim_start();
    if trimmed.starts_with('{') || trimmed.starts_with('[') {
        // JSON first: it is exact about numbers and much faster; fall back to YAML for
        // flow-style YAML that only looks like JSON.
        if let Ok(value) = serde_json::from_str(chunk) {
            return Ok(value);
        }
    }
    // Read like the Go YAML readers of kubectl, opm and OLM (sigs.k8s.io/yaml, non-strict):
    // 0755 is octal, and a repeated key keeps its last value.
    //
    // Aliases: serde-saphyr's default budget refuses a document with more than ten aliases
    // per anchor (once it has 100 aliases), which real files written with a few anchors
    // reused many times trip while go-yaml reads them. What makes an alias bomb dangerous is
    // the size it expands to, so that is what is bounded, while expanding: at most
    // `MAX_NODES` nodes (aliases expanded) and `MAX_REPLAYED_ALIAS_EVENTS` events replayed
    // from aliases per document.
    let mut budget = serde_saphyr::Budget::default();
    budget.enforce_alias_anchor_ratio = false;
    budget.max_nodes = MAX_NODES;
    let options = serde_saphyr::options! {
        legacy_octal_numbers: true,
        duplicate_keys: serde_saphyr::DuplicateKeyPolicy::LastWins,
        budget: Some(budget),
        alias_limits: serde_saphyr::alias_limits! {
            max_total_replayed_events: MAX_REPLAYED_ALIAS_EVENTS,
        },
    };
    serde_saphyr::from_str_with_options::<serde_json::Value>(chunk, options).map_err(|e| {
        let location = e.location();
        let line = location.as_ref().map(|l| l.line()).unwrap_or(1);
        let column = location.as_ref().map(|l| l.column());
        let mut message = first_line_of(&e.to_string());
        let mut inner = &e;
        while let serde_saphyr::Error::WithSnippet { error, .. }
        | serde_saphyr::Error::AliasError { error, .. } = inner
        {
            inner = error;
        }
        if matches!(
            inner,
            serde_saphyr::Error::Budget { .. }
                | serde_saphyr::Error::AliasReplayLimitExceeded { .. }
        ) {
            message = format!("document too large once its YAML aliases are expanded: {message}");
        }
        (line, column, message)
    })
}

/// The parser's message without its source snippet: the snippet repeats what the location
/// already says and breaks one-line error output.
fn first_line_of(message: &str) -> String {
    let first = message.lines().next().unwrap_or(message).trim();
    let first = first.strip_prefix("error: ").unwrap_or(first);
    // "line 3 column 4: what" -> "what": the location is reported separately.
    match first.split_once(": ") {
        Some((head, rest)) if head.starts_with("line ") && head.contains(" column ") => {
            rest.to_string()
        }
        _ => first.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Result<Vec<Document>, ManifestError> {
        read_stream(Path::new("in.yaml"), text)
    }

    #[test]
    fn documents_know_their_first_line() {
        let docs = read("# header\na: 1\n---\n\nb: 2\n--- \nc: 3\n").unwrap();
        let lines: Vec<u64> = docs.iter().map(|d| d.location.line).collect();
        assert_eq!(lines, vec![2, 5, 7]);
        assert_eq!(docs[1].value, serde_json::json!({"b": 2}));
    }

    #[test]
    fn the_fast_path_gives_the_generic_documents_and_lines() {
        let text = "# header\n\nkind: A\nspec:\n  # note\n  x: |\n    text\n---\n# only\n---\n\n\nkind: B\n";
        let fast = read_fast(Path::new("in.yaml"), text).expect("the fast path reads this");
        assert_eq!(
            fast,
            read_stream_generic(Path::new("in.yaml"), text).unwrap()
        );
        let lines: Vec<u64> = fast.iter().map(|d| d.location.line).collect();
        assert_eq!(lines, vec![3, 13]);
    }

    #[test]
    fn empty_and_comment_only_documents_are_skipped() {
        let docs = read("---\n# nothing\n---\n---\nkind: A\n").unwrap();
        assert_eq!(docs.len(), 1);
        assert_eq!(docs[0].location.line, 5);
    }

    #[test]
    fn parse_errors_point_at_the_line_in_the_file() {
        let err = read("a: 1\n---\nkind: A\nmetadata:\n  name: [unclosed\n").unwrap_err();
        match err {
            ManifestError::Parse { location, .. } => {
                assert_eq!(location.path, Path::new("in.yaml"));
                assert!(
                    location.line >= 5,
                    "line {} should be in the second document",
                    location.line
                );
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    /// A mapping with one anchored schema and `aliases` uses of it, as generated CRDs
    /// sometimes are: many aliases to few anchors.
    fn aliased_schema(aliases: usize) -> String {
        let mut text = String::from(
            "kind: CustomResourceDefinition\nschema:\n  base: &quantity\n    type: string\n    pattern: '^[0-9]+$'\n  properties:\n",
        );
        for i in 0..aliases {
            text.push_str(&format!("    field{i}: *quantity\n"));
        }
        text
    }

    #[test]
    fn many_aliases_to_one_anchor_are_read_like_go_yaml() {
        // 150 aliases of one anchor: serde-saphyr's default alias/anchor ratio refuses this.
        let docs = read(&aliased_schema(150)).unwrap();
        let properties = docs[0].value["schema"]["properties"].as_object().unwrap();
        assert_eq!(properties.len(), 150);
        assert_eq!(
            properties["field149"],
            serde_json::json!({"type": "string", "pattern": "^[0-9]+$"})
        );
    }

    #[test]
    fn an_alias_bomb_is_refused_with_its_line() {
        // Nine levels of ten aliases each: 10^9 strings once expanded.
        let mut text = String::from("a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n");
        for level in 1..10 {
            let previous = format!("*a{}", level - 1);
            let list = [previous.as_str(); 10].join(", ");
            text.push_str(&format!("a{level}: &a{level} [{list}]\n"));
        }
        let started = std::time::Instant::now();
        let err = read(&format!("kind: ConfigMap\n{text}")).unwrap_err();
        // Refused early, it takes a few seconds in a debug build (14.7 s once beside other
        // test binaries on 2 busy cores); expanding the 10^9 strings would take far longer
        // than this bound, and the memory limit first.
        assert!(
            started.elapsed() < std::time::Duration::from_secs(60),
            "took {:?}",
            started.elapsed()
        );
        match err {
            ManifestError::Parse { location, message } => {
                assert_eq!(location.path, Path::new("in.yaml"));
                assert!(location.line > 1, "line {}", location.line);
                assert!(
                    message.starts_with("document too large once its YAML aliases are expanded"),
                    "{message}"
                );
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn octal_reads_like_go_yaml() {
        let docs = read("mode: 0755\n").unwrap();
        assert_eq!(docs[0].value["mode"], serde_json::json!(493));
    }

    #[test]
    fn a_repeated_key_keeps_its_last_value_like_go_yaml() {
        let docs = read("metadata:\n  labels: {a: b}\n  labels: {c: d}\n").unwrap();
        assert_eq!(
            docs[0].value["metadata"]["labels"],
            serde_json::json!({"c": "d"})
        );
    }

    #[test]
    fn json_documents_are_read_exactly() {
        let docs = read("{\"a\": 12345678901234567890}\n").unwrap();
        assert_eq!(docs[0].value["a"].to_string(), "12345678901234567890");
    }

    #[test]
    fn folders_are_read_in_path_order_without_hidden_files() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("b.yaml"), "kind: B\n").unwrap();
        std::fs::write(dir.path().join("a.yaml"), "kind: A\n").unwrap();
        std::fs::write(dir.path().join(".hidden.yaml"), "kind: H\n").unwrap();
        let kinds: Vec<String> = read_path(dir.path())
            .unwrap()
            .into_iter()
            .map(|d| d.value["kind"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(kinds, vec!["A", "B"]);
    }
}
