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

/// `createdAt` of a generated CSV.
fn created_at(bundle: &std::path::Path) -> String {
    let csv =
        std::fs::read_to_string(bundle.join("manifests/redis-operator.clusterserviceversion.yaml"))
            .unwrap();
    csv.lines()
        .find_map(|l| l.trim().strip_prefix("createdAt:"))
        .map(|v| v.trim().trim_matches(['\'', '"']).to_string())
        .expect("a createdAt annotation")
}

#[test]
fn regenerating_unchanged_input_keeps_created_at_and_rewrites_nothing() {
    let config = concat!(env!("CARGO_MANIFEST_DIR"), "/../bundle-tool.yaml");
    let dir = tempfile::tempdir().unwrap();
    let bundle = dir.path().join("bundle");
    let generate = |extra: &[&str], epoch: Option<&str>| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_bundle-tool"));
        command
            .args(["generate", "--config", config, "--output"])
            .arg(&bundle)
            .args(extra)
            .env_remove("SOURCE_DATE_EPOCH");
        if let Some(epoch) = epoch {
            command.env("SOURCE_DATE_EPOCH", epoch);
        }
        let output = command.output().expect("run bundle-tool");
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8(output.stdout).unwrap()
    };
    // An old createdAt on disk, as a run on another day would have left it.
    generate(&[], Some("1764460800"));
    let csv_path = bundle.join("manifests/redis-operator.clusterserviceversion.yaml");
    let before = std::fs::read(&csv_path).unwrap();
    let modified = std::fs::metadata(&csv_path).unwrap().modified().unwrap();
    assert_eq!(created_at(&bundle), "2025-11-30T00:00:00Z");

    let printed = generate(&[], None);
    assert!(printed.contains("nothing written"), "{printed}");
    assert_eq!(std::fs::read(&csv_path).unwrap(), before);
    assert_eq!(
        std::fs::metadata(&csv_path).unwrap().modified().unwrap(),
        modified
    );

    // SOURCE_DATE_EPOCH still wins over the kept value.
    generate(&[], Some("1767225600"));
    assert_eq!(created_at(&bundle), "2026-01-01T00:00:00Z");

    // A real change gets a new createdAt (now), not the old one.
    generate(&["--version", "0.9.0"], None);
    assert_ne!(created_at(&bundle), "2026-01-01T00:00:00Z");
}
