//! The Redis operator's catalog (`catalog/`) stays in step with its template: the bundles the
//! template names are generated from the operator at each version (SOURCE_DATE_EPOCH fixed:
//! the `createdAt` the catalog records for that bundle, which `bundle-tool release` keeps, or
//! 2025-11-30 for a bundle not in it yet), rendered with `catalog template --bundle-source`,
//! and the result must equal `catalog/redis-operator/catalog.json`. The catalog must pass
//! `catalog validate` and `opm validate`.
//!
//! `UPDATE_CATALOG=1 cargo test -p e2e --test redis_catalog` rewrites the file when it differs
//! and then fails, so that only a run without it can pass: the check always compares the
//! render with the file as it was before the run (catalog/README.md).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use e2e::assets::Assets;

/// `createdAt` of every generated bundle (2025-11-30T00:00:00Z), so renders are reproducible.
const SOURCE_DATE_EPOCH: &str = "1764460800";

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn succeeded(output: Output, what: &str) -> Vec<u8> {
    assert!(
        output.status.success(),
        "{what} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    output.stdout
}

/// The bundle images the template names, each with the version its tag carries
/// (`…:v0.2.0` → `0.2.0`).
fn template_images(template: &Path) -> Vec<(String, String)> {
    let text = std::fs::read_to_string(template).unwrap();
    let mut images: Vec<(String, String)> = text
        .lines()
        .filter_map(|l| l.trim().strip_prefix("- image:"))
        .map(|image| {
            let image = image.trim().to_string();
            let version = image
                .rsplit_once(":v")
                .map(|(_, v)| v.to_string())
                .unwrap_or_else(|| panic!("{image}: the tag must be v<version>"));
            (image, version)
        })
        .collect();
    images.sort();
    images.dedup();
    images
}

/// Seconds since the epoch of an RFC 3339 UTC time as CSVs write it (`2025-11-30T00:00:00Z`).
fn epoch_seconds(time: &str) -> Option<i64> {
    let (date, clock) = time.strip_suffix('Z')?.split_once('T')?;
    let mut date = date.splitn(3, '-').map(|p| p.parse::<i64>().ok());
    let (year, month, day) = (date.next()??, date.next()??, date.next()??);
    let mut clock = clock.splitn(3, ':').map(|p| p.parse::<i64>().ok());
    let (hour, minute, second) = (clock.next()??, clock.next()??, clock.next()??);
    // Days from 1970-01-01 to the date in the proleptic Gregorian calendar.
    let (y, m) = if month <= 2 {
        (year - 1, month + 9)
    } else {
        (year, month - 3)
    };
    let era = y.div_euclid(400);
    let year_of_era = y - era * 400;
    let day_of_year = (153 * m + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    let days = era * 146_097 + day_of_era - 719_468;
    Some(days * 86_400 + hour * 3_600 + minute * 60 + second)
}

/// The SOURCE_DATE_EPOCH that regenerates `image` as the catalog has it: its CSV's
/// `createdAt` when the catalog has the bundle, else the pinned default.
fn epoch_for(catalog_file: &Path, image: &str) -> String {
    let Ok(catalog) = bundle_tool::catalog::declcfg::load_file(catalog_file) else {
        return SOURCE_DATE_EPOCH.into();
    };
    catalog
        .bundles
        .iter()
        .filter(|b| b.image == image)
        .flat_map(|b| b.objects())
        .filter_map(|bytes| serde_json::from_slice::<serde_json::Value>(&bytes).ok())
        .filter(|object| object["kind"] == "ClusterServiceVersion")
        .find_map(|csv| {
            csv["metadata"]["annotations"]["createdAt"]
                .as_str()
                .and_then(epoch_seconds)
        })
        .map_or_else(|| SOURCE_DATE_EPOCH.into(), |seconds| seconds.to_string())
}

/// Replaces `path` with `bytes` by a rename, so that an interrupted update leaves the old file.
fn write_atomically(path: &Path, bytes: &[u8]) {
    let staged = path.with_extension("json.updating");
    std::fs::write(&staged, bytes).unwrap_or_else(|e| panic!("{}: {e}", staged.display()));
    std::fs::rename(&staged, path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
}

#[test]
fn createdat_converts_to_epoch_seconds() {
    assert_eq!(epoch_seconds("2025-11-30T00:00:00Z"), Some(1_764_460_800));
    assert_eq!(epoch_seconds("1970-01-01T00:00:01Z"), Some(1));
    assert_eq!(epoch_seconds("2024-02-29T12:34:56Z"), Some(1_709_210_096));
    assert_eq!(epoch_seconds("not a time"), None);
}

#[test]
fn redis_catalog_is_rendered_from_its_template_and_valid() {
    let catalog = workspace().join("catalog");
    let template = catalog.join("template.yaml");
    let rendered_file = catalog.join("redis-operator/catalog.json");
    let images = template_images(&template);
    assert!(images.len() >= 3, "the catalog has at least three releases");

    let bundles = tempfile::tempdir().unwrap();
    let mut command = Command::new(e2e::bundle_tool_binary());
    command
        .args(["catalog", "template", "semver"])
        .arg(&template)
        .args(["-o", "json"]);
    for (image, version) in &images {
        let dir = bundles.path().join(version);
        succeeded(
            Command::new(e2e::bundle_tool_binary())
                .current_dir(workspace())
                .env("SOURCE_DATE_EPOCH", epoch_for(&rendered_file, image))
                .args(["generate", "--version", version, "--output"])
                .arg(&dir)
                .output()
                .unwrap(),
            "generate",
        );
        command
            .arg("--bundle-source")
            .arg(format!("{image}={}", dir.display()));
    }
    let rendered = succeeded(command.output().unwrap(), "catalog template");
    // The committed file, read before anything may write it: the comparison is always
    // between the render and what was there.
    let on_disk = std::fs::read(&rendered_file);
    let matches = on_disk.as_ref().is_ok_and(|on_disk| *on_disk == rendered);
    if !matches && std::env::var_os("UPDATE_CATALOG").is_some() {
        write_atomically(&rendered_file, &rendered);
        panic!(
            "UPDATE_CATALOG: {} was not what catalog/template.yaml renders to and is rewritten; \
             review and commit it, then run the test again without UPDATE_CATALOG to check it",
            rendered_file.display()
        );
    }
    assert!(
        matches,
        "{} is not what catalog/template.yaml renders to ({}); run \
         `UPDATE_CATALOG=1 cargo test -p e2e --test redis_catalog` and commit the file",
        rendered_file.display(),
        match &on_disk {
            Ok(bytes) => format!("{} bytes against {} rendered", bytes.len(), rendered.len()),
            Err(error) => error.to_string(),
        }
    );

    let ours = Command::new(e2e::bundle_tool_binary())
        .args(["catalog", "validate"])
        .arg(&catalog)
        .output()
        .unwrap();
    succeeded(ours, "catalog validate catalog/");
    let opm = Command::new(Assets::locate().unwrap().opm().unwrap())
        .arg("validate")
        .arg(&catalog)
        .output()
        .unwrap();
    succeeded(opm, "opm validate catalog/");

    // The shape the README promises: both channels, stable the default, inline objects.
    let config = bundle_tool::catalog::declcfg::load_dir(&catalog).unwrap();
    assert_eq!(config.packages[0].default_channel, "stable-v0");
    let mut channels: Vec<&str> = config.channels.iter().map(|c| c.name.as_str()).collect();
    channels.sort();
    assert_eq!(channels, ["candidate-v0", "stable-v0"]);
    assert!(config.bundles.iter().all(|b| {
        b.image
            .starts_with("quay.io/example/redis-operator-bundle:v")
            && !b.objects().is_empty()
    }));
}
