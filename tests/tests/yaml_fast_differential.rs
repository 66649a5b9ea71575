//! The fast YAML path (`manifest::yaml`) against serde-saphyr on every YAML file of
//! the corpus: for each file it either declines or yields, document by document, the same
//! `serde_json::Value`s as the reference reader (`manifest::read_stream_generic`). No reference
//! tools are run.

use std::path::{Path, PathBuf};

use bundle_tool::manifest::yaml::to_json;
use bundle_tool::manifest::{read_stream, read_stream_generic};
use serde_json::Value;

fn yaml_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(Result::ok)
        .map(|e| e.path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            yaml_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "yaml" || e == "yml") {
            out.push(path);
        }
    }
}

/// Compares every YAML file below `root`; returns (files, files the fast path read).
fn compare(root: &Path) -> (usize, usize) {
    let mut files = Vec::new();
    yaml_files(root, &mut files);
    let mut taken = 0;
    let mut declined = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).expect("read a corpus file");
        // `read_stream` (the fast path first) gives the same documents and lines.
        let generic = read_stream_generic(file, &text);
        match (&generic, read_stream(file, &text)) {
            (Ok(generic), Ok(fast)) => {
                assert!(&fast == generic, "{}: documents differ", file.display())
            }
            (Err(_), Err(_)) => {}
            (generic, fast) => panic!("{}: {generic:?} but {fast:?}", file.display()),
        }
        let Some(json) = to_json(&text) else {
            declined.push(file.display().to_string());
            continue;
        };
        taken += 1;
        let fast: Vec<Value> = serde_json::Deserializer::from_str(&json)
            .into_iter::<Value>()
            .map(|v| {
                v.unwrap_or_else(|e| {
                    panic!("{}: the fast path wrote bad JSON: {e}", file.display())
                })
            })
            .collect();
        let reference: Vec<Value> = read_stream_generic(file, &text)
            .unwrap_or_else(|e| panic!("the fast path read a file serde-saphyr rejects: {e}"))
            .into_iter()
            .map(|d| d.value)
            .collect();
        assert_eq!(
            fast.len(),
            reference.len(),
            "{}: document count",
            file.display()
        );
        for (index, (f, r)) in fast.iter().zip(&reference).enumerate() {
            assert!(f == r, "{}: document {} differs", file.display(), index + 1);
        }
    }
    eprintln!(
        "{}: {taken} of {} YAML files read by the fast path; declined ({}): {:#?}",
        root.display(),
        files.len(),
        declined.len(),
        &declined[..declined.len().min(10)]
    );
    (files.len(), taken)
}

#[test]
fn corpus_catalogs_read_the_same_on_the_fast_path() {
    let root = e2e::corpus::catalogs()[0].parent().unwrap().to_path_buf();
    let (files, taken) = compare(&root);
    assert_eq!(files, 39);
    // Nearly all machine-written catalogs must take the fast path, or it is not worth having.
    assert!(
        taken >= 35,
        "only {taken} of {files} catalogs took the fast path"
    );
}

#[test]
fn corpus_bundles_read_the_same_on_the_fast_path() {
    let (files, taken) = compare(&e2e::corpus::bundles_root());
    assert!(files > 266, "{files} bundle manifests");
    assert!(taken > 0);
}
