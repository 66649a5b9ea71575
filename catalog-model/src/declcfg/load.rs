//! Loading a catalog folder the way `opm` does: every file that `.indexignore` does not
//! exclude, whatever its extension, as a stream of JSON or YAML documents.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::DeclarativeConfig;
use super::generic::add_document;
use super::ignore::IgnoreRules;
use crate::manifest::{ManifestError, read_stream_generic};

/// Why a catalog could not be loaded: the file, the line when known, and opm's wording.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}{}: {message}", path.display(), line.map(|l| format!(":{l}")).unwrap_or_default())]
pub struct LoadError {
    /// The file.
    pub path: PathBuf,
    /// The line of the document, when known.
    pub line: Option<u64>,
    /// What is wrong.
    pub message: String,
}

/// The catalog files below `root`, in opm's walk order (sorted, `.indexignore` applied).
pub fn catalog_files(root: &Path) -> Result<Vec<PathBuf>, LoadError> {
    let metadata = std::fs::metadata(root).map_err(|e| LoadError {
        path: root.to_path_buf(),
        line: None,
        message: e.to_string(),
    })?;
    if !metadata.is_dir() {
        return Err(LoadError {
            path: root.to_path_buf(),
            line: None,
            message: "not a directory".into(),
        });
    }
    let mut rules = IgnoreRules::default();
    collect_ignore_files(root, Path::new(""), &mut rules)?;
    let mut files = Vec::new();
    walk(root, Path::new(""), &rules, &mut files)?;
    Ok(files)
}

/// The documents of one catalog file.
pub fn load_file(file: &Path) -> Result<DeclarativeConfig, LoadError> {
    let error = |message: String| LoadError {
        path: file.to_path_buf(),
        line: None,
        message,
    };
    let bytes = std::fs::read(file).map_err(|e| error(e.to_string()))?;
    let text = String::from_utf8(bytes).map_err(|_| error("not UTF-8 text".into()))?;
    let mut config = DeclarativeConfig::default();
    load_str(file, &text, &mut config)?;
    Ok(config)
}

/// When a catalog's files, parsed on worker threads, are handed to the caller.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Join {
    /// Each as soon as it and every file before it in walk order are parsed, largest files
    /// parsed first: for callers that keep little of each file (validate's early checks,
    /// render's spool), whose memory then does not grow with the catalog.
    AsParsed,
    /// All at once after every file is parsed: for callers that keep everything (the
    /// server). Joining during the parse left the server's heap fragmented (idle RSS on the
    /// generated catalog 31 -> 52 MiB).
    AfterAll,
}

/// The one catalog loader: walks `root` like opm ([`catalog_files`]), parses every file on
/// worker threads, runs `per_file` on each file's documents there, and hands the results to
/// `consume` on the calling thread in walk order, so the first error reported is the one a
/// sequential load gives.
pub fn load_each<R, E>(
    root: &Path,
    join: Join,
    per_file: impl Fn(&Path, DeclarativeConfig) -> Result<R, E> + Sync,
    mut consume: impl FnMut(R) -> Result<(), E>,
) -> Result<(), E>
where
    R: Send,
    E: From<LoadError> + Send,
{
    let files = catalog_files(root)?;
    let parse = |file: &PathBuf| -> Result<R, E> { per_file(file, load_file(file)?) };
    match join {
        Join::AsParsed => {
            let size = |i: usize| std::fs::metadata(&files[i]).map_or(0, |m| m.len());
            crate::parallel::for_each_ordered_largest_first(&files, size, parse, |r| consume(r?))
        }
        Join::AfterAll => {
            for result in crate::parallel::map_dynamic(&files, parse) {
                consume(result?)?;
            }
            Ok(())
        }
    }
}

/// Loads every catalog file below `root`.
pub fn load_dir(root: &Path) -> Result<DeclarativeConfig, LoadError> {
    let mut config = DeclarativeConfig::default();
    load_each(
        root,
        Join::AfterAll,
        |_, part| Ok(part),
        |part| {
            config.append(part);
            Ok(())
        },
    )?;
    Ok(config)
}

fn read_dir_sorted(dir: &Path) -> Result<Vec<std::fs::DirEntry>, LoadError> {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .map_err(|e| LoadError {
            path: dir.to_path_buf(),
            line: None,
            message: e.to_string(),
        })?
        .filter_map(Result::ok)
        .collect();
    entries.sort_by_key(|e| e.file_name());
    Ok(entries)
}

fn collect_ignore_files(
    root: &Path,
    relative: &Path,
    rules: &mut IgnoreRules,
) -> Result<(), LoadError> {
    for entry in read_dir_sorted(&root.join(relative))? {
        let path = relative.join(entry.file_name());
        if entry.file_type().map(|t| t.is_dir()).unwrap_or(false) {
            collect_ignore_files(root, &path, rules)?;
        } else if entry.file_name() == ".indexignore" {
            let text = std::fs::read_to_string(entry.path()).unwrap_or_default();
            rules.add_file(relative, &text);
        }
    }
    Ok(())
}

fn walk(
    root: &Path,
    relative: &Path,
    rules: &IgnoreRules,
    out: &mut Vec<PathBuf>,
) -> Result<(), LoadError> {
    for entry in read_dir_sorted(&root.join(relative))? {
        let path = relative.join(entry.file_name());
        let is_dir = entry.file_type().map(|t| t.is_dir()).unwrap_or(false);
        if entry.file_name() == ".indexignore" || rules.is_ignored(&path, is_dir) {
            continue;
        }
        if is_dir {
            walk(root, &path, rules, out)?;
        } else {
            out.push(root.join(&path));
        }
    }
    Ok(())
}

/// Parses one file's documents into `config`.
pub fn load_str(path: &Path, text: &str, config: &mut DeclarativeConfig) -> Result<(), LoadError> {
    if text.trim_start().starts_with('{') {
        if super::one_pass::load_json_one_pass(text, config) || super::json::load_json(text, config)
        {
            return Ok(());
        }
    } else if let Some((json, sorted)) = crate::manifest::yaml::to_ordered_json(text)
        && super::raw::reading_sorted_compact(sorted, || {
            super::one_pass::load_json_one_pass(&json, config)
                || super::json::load_json(&json, config)
        })
    {
        // Machine-written YAML: transcoded to JSON and read by the typed path. Anything the
        // transcoder declines, and any file with an error, is read by serde-saphyr below, so
        // errors keep its text and lines.
        return Ok(());
    }
    load_generic(path, text, config)
}

/// Parses every document into a `Value` first, then adds it by its schema: the reference
/// behaviour, which the JSON fast path falls back to (public for the differential fuzz
/// targets, which hold [`load_str`]'s fast paths to it).
pub fn load_generic(
    path: &Path,
    text: &str,
    config: &mut DeclarativeConfig,
) -> Result<(), LoadError> {
    for (line, document) in documents(path, text)? {
        add_document(document, config).map_err(|e| LoadError {
            path: path.to_path_buf(),
            line,
            message: e.to_string(),
        })?;
    }
    Ok(())
}

/// A JSON stream (concatenated objects) when the text starts with `{`, else YAML documents.
fn documents(path: &Path, text: &str) -> Result<Vec<(Option<u64>, Value)>, LoadError> {
    if text.trim_start().starts_with('{') {
        // Read as opm reads it: a lone surrogate escape is U+FFFD, not an error.
        let text = &*crate::go_json::lone_surrogates_replaced(text);
        let mut out = Vec::new();
        let mut stream = serde_json::Deserializer::from_str(text).into_iter::<Value>();
        // Lines are counted incrementally: counting from the start for every document made
        // loading quadratic in the size of a file.
        let (mut counted_to, mut line) = (0usize, 1u64);
        loop {
            let offset = stream.byte_offset();
            match stream.next() {
                None => break,
                Some(Ok(value)) => {
                    // The document starts after the whitespace that follows `offset`.
                    let start = offset + text[offset..].len() - text[offset..].trim_start().len();
                    line += text[counted_to..start].matches('\n').count() as u64;
                    counted_to = start;
                    out.push((Some(line), value));
                }
                Some(Err(e)) => {
                    return Err(LoadError {
                        path: path.to_path_buf(),
                        line: Some(e.line() as u64),
                        message: e.to_string(),
                    });
                }
            }
        }
        return Ok(out);
    }
    match read_stream_generic(path, text) {
        Ok(documents) => Ok(documents
            .into_iter()
            .map(|d| (Some(d.location.line), d.value))
            .collect()),
        Err(ManifestError::Parse { location, message }) => Err(LoadError {
            path: path.to_path_buf(),
            line: Some(location.line),
            message,
        }),
        Err(ManifestError::Io { path, error }) => Err(LoadError {
            path,
            line: None,
            message: error.to_string(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(text: &str) -> Result<DeclarativeConfig, LoadError> {
        let mut config = DeclarativeConfig::default();
        load_str(Path::new("catalog.yaml"), text, &mut config).map(|_| config)
    }

    #[test]
    fn yaml_and_json_streams_and_unknown_schemas() {
        let config = load("---\nschema: olm.package\nname: p\ndefaultChannel: s\n---\nSchema: custom.thing\nName: x\nextra: 1\n").unwrap();
        assert_eq!(config.packages[0].default_channel, "s");
        assert_eq!(config.others[0].schema, "custom.thing");
        assert_eq!(config.others[0].blob["extra"], 1);
        let config = load("{\"schema\":\"olm.channel\",\"name\":\"c\",\"package\":\"p\",\"entries\":[{\"name\":\"b\"}]}\n{\"schema\":\"olm.bundle\",\"name\":\"b\",\"package\":\"p\",\"image\":\"\"}").unwrap();
        assert_eq!(config.channels[0].entries[0].name, "b");
        assert_eq!(config.bundles.len(), 1);
    }

    #[test]
    fn missing_schema_and_duplicate_folded_keys_are_errors() {
        let e = load("name: x\n").unwrap_err();
        assert!(e.message.contains("is missing root schema field"), "{e}");
        let e = load("schema: olm.package\nSchema: olm.package\n").unwrap_err();
        assert!(
            e.message.contains("duplicate keys for key \"schema\""),
            "{e}"
        );
    }

    #[test]
    fn json_fast_path_matches_the_generic_loader() {
        let generic = |text: &str| {
            let mut config = DeclarativeConfig::default();
            load_generic(Path::new("catalog.yaml"), text, &mut config).map(|_| config)
        };
        let documents = [
            r#"{"schema":"olm.package","name":"p","defaultChannel":"s","icon":{"base64data":"aGk=","mediatype":"image/png"}}"#,
            r#"{"schema":"olm.channel","name":"s","package":"p","entries":[{"name":"b","replaces":"a","skips":["z"],"skipRange":"<1.0.0"}]}"#,
            r#"{"schema":"olm.bundle","name":"b","package":"p","image":"i","properties":[{"type":"olm.package","value":{"packageName":"p","version":"1.0.0"}},{"type":"olm.bundle.object","value":{"data":"e30="}}],"relatedImages":[{"name":"x","image":"y"}]}"#,
            r#"{"schema":"olm.deprecations","package":"p","entries":[{"reference":{"schema":"olm.bundle","name":"b"},"message":"m"}]}"#,
            r#"{"Schema":"olm.package","NAME":"q"}"#,
            r#"{"schema":"olm.package","name":"r","name":"s"}"#,
            r#"{"schema":"custom.thing","package":"p","extra":[1,{"a":null}]}"#,
        ];
        let text = documents.join(
            "
  
",
        );
        let mut fast = DeclarativeConfig::default();
        assert!(super::super::json::load_json(&text, &mut fast));
        assert_eq!(fast, generic(&text).unwrap());
        assert_eq!(fast.packages.len(), 3, "{fast:?}");
        assert_eq!(
            fast.packages[2].name, "s",
            "a repeated key keeps its last value"
        );
        assert_eq!(
            fast.others[0].blob["extra"][1],
            serde_json::json!({"a": null})
        );
        // Errors (a bad document after a good one, bad base64, a bad stream) are left to the
        // generic loader, so their text and line are its own.
        for bad in [
            format!("{}\n{}", documents[0], r#"{"schema":"olm.package","name":1}"#),
            r#"{"schema":"olm.bundle","name":"b","properties":[{"type":"olm.bundle.object","value":{"data":"!"}}]}"#.to_string(),
            format!("{}\n{}", documents[1], r#"{"schema": "#),
            r#"{"name":"x"}"#.to_string(),
            r#"{"schema":"olm.package"} [1]"#.to_string(),
        ] {
            let mut fast = DeclarativeConfig::default();
            assert!(!super::super::json::load_json(&bad, &mut fast), "{bad}");
            assert_eq!(fast, DeclarativeConfig::default());
            assert_eq!(load(&bad).unwrap_err(), generic(&bad).unwrap_err());
        }
    }

    #[test]
    fn yaml_property_values_are_kept_sorted_whatever_the_key_order() {
        let document = |value: &str| {
            format!(
                "schema: olm.bundle\nname: b\npackage: p\nimage: i\nproperties:\n- type: olm.gvk\n  value:\n{value}"
            )
        };
        for (value, want) in [
            // Sorted as opm writes it: kept as read; unsorted or repeated: sorted as opm would.
            (
                "    group: g\n    kind: K\n    version: v1\n",
                r#"{"group":"g","kind":"K","version":"v1"}"#,
            ),
            (
                "    version: v1\n    kind: K\n    group: g\n",
                r#"{"group":"g","kind":"K","version":"v1"}"#,
            ),
            ("    kind: K\n    kind: L\n", r#"{"kind":"L"}"#),
            (
                "    a:\n      z: 1\n      y: 2\n    b: 3\n",
                r#"{"a":{"y":2,"z":1},"b":3}"#,
            ),
        ] {
            let text = document(value);
            let config = load(&text).unwrap();
            assert_eq!(
                config.bundles[0].properties[0].value.as_str(),
                want,
                "{text}"
            );
            let mut generic = DeclarativeConfig::default();
            load_generic(Path::new("catalog.yaml"), &text, &mut generic).unwrap();
            assert_eq!(config, generic, "{text}");
        }
    }

    #[test]
    fn errors_carry_file_and_line() {
        let e = load("schema: olm.package\nname: p\n---\nschema: olm.channel\nentries: [\n")
            .unwrap_err();
        assert_eq!(e.path, Path::new("catalog.yaml"));
        assert!(e.line.unwrap() >= 4, "{e}");
    }
}
