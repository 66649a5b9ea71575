//! The Redis operator's bundle in the repository is what `bundle-tool generate` makes now.

use std::process::Command;

#[test]
fn committed_bundle_is_what_generate_produces() {
    let config = concat!(env!("CARGO_MANIFEST_DIR"), "/../bundle-tool.yaml");
    let output = Command::new(env!("CARGO_BIN_EXE_bundle-tool"))
        .args(["generate", "--config", config, "--check"])
        .output()
        .expect("run bundle-tool");
    assert!(
        output.status.success(),
        "bundle/ is out of date; run `bundle-tool generate` at the repository root and commit.\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn generate_is_deterministic_with_source_date_epoch() {
    let config = concat!(env!("CARGO_MANIFEST_DIR"), "/../bundle-tool.yaml");
    let dirs = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
    for dir in &dirs {
        let status = Command::new(env!("CARGO_BIN_EXE_bundle-tool"))
            .args(["generate", "--config", config, "--output"])
            .arg(dir.path().join("bundle"))
            .env("SOURCE_DATE_EPOCH", "1764460800")
            .status()
            .expect("run bundle-tool");
        assert!(status.success());
    }
    let read = |dir: &std::path::Path| {
        let mut files = std::collections::BTreeMap::new();
        for folder in ["manifests", "metadata"] {
            for entry in std::fs::read_dir(dir.join("bundle").join(folder)).unwrap() {
                let entry = entry.unwrap();
                files.insert(
                    format!("{folder}/{}", entry.file_name().to_string_lossy()),
                    std::fs::read(entry.path()).unwrap(),
                );
            }
        }
        files.insert(
            "bundle.Dockerfile".into(),
            std::fs::read(dir.join("bundle.Dockerfile")).unwrap(),
        );
        files
    };
    let (first, second) = (read(dirs[0].path()), read(dirs[1].path()));
    assert!(
        first.len() >= 5,
        "files: {:?}",
        first.keys().collect::<Vec<_>>()
    );
    assert_eq!(first, second, "two runs with the same input differ");
    let csv =
        String::from_utf8(first["manifests/redis-operator.clusterserviceversion.yaml"].clone())
            .unwrap();
    assert!(
        csv.contains("createdAt: '2025-11-30T00:00:00Z'")
            || csv.contains("createdAt: \"2025-11-30T00:00:00Z\"")
            || csv.contains("createdAt: 2025-11-30T00:00:00Z"),
        "{csv}"
    );
}
