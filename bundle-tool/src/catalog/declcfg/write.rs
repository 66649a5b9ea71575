//! Writing a catalog as `opm render` does: packages by name, each followed by its channels
//! and bundles (by name), its other documents, its deprecations; package-less documents last.

use serde::Serialize;
use serde_json::Value;

use super::DeclarativeConfig;

fn ordered(config: &DeclarativeConfig) -> Vec<Value> {
    let to_value = |v: &dyn erased::Serializable| v.value();
    let mut packages: Vec<String> = config
        .packages
        .iter()
        .map(|p| p.name.clone())
        .chain(config.channels.iter().map(|c| c.package.clone()))
        .chain(config.bundles.iter().map(|b| b.package.clone()))
        .chain(
            config
                .others
                .iter()
                .map(|o| o.package.clone())
                .filter(|p| !p.is_empty()),
        )
        .chain(config.deprecations.iter().map(|d| d.package.clone()))
        .collect();
    packages.sort();
    packages.dedup();
    let mut out = Vec::new();
    for package in &packages {
        out.extend(
            config
                .packages
                .iter()
                .filter(|p| &p.name == package)
                .map(|p| to_value(p)),
        );
        let mut channels: Vec<_> = config
            .channels
            .iter()
            .filter(|c| &c.package == package)
            .collect();
        channels.sort_by(|a, b| a.name.cmp(&b.name));
        out.extend(channels.into_iter().map(|c| to_value(c)));
        let mut bundles: Vec<_> = config
            .bundles
            .iter()
            .filter(|b| &b.package == package)
            .collect();
        bundles.sort_by(|a, b| a.name.cmp(&b.name));
        out.extend(bundles.into_iter().map(|b| to_value(b)));
        let mut others: Vec<_> = config
            .others
            .iter()
            .filter(|o| &o.package == package)
            .collect();
        others.sort_by(|a, b| a.schema.cmp(&b.schema));
        out.extend(others.into_iter().map(|o| o.blob.clone()));
        out.extend(
            config
                .deprecations
                .iter()
                .filter(|d| &d.package == package)
                .map(|d| to_value(d)),
        );
    }
    let mut loose: Vec<_> = config
        .others
        .iter()
        .filter(|o| o.package.is_empty())
        .collect();
    loose.sort_by(|a, b| a.schema.cmp(&b.schema));
    out.extend(loose.into_iter().map(|o| o.blob.clone()));
    out
}

mod erased {
    /// Anything that serializes, turned into a JSON value.
    pub trait Serializable {
        fn value(&self) -> serde_json::Value;
    }

    impl<T: serde::Serialize> Serializable for T {
        fn value(&self) -> serde_json::Value {
            serde_json::to_value(self).unwrap_or(serde_json::Value::Null)
        }
    }
}

/// JSON objects one after another, 4-space indented, as `opm render -o json`.
pub fn to_json(config: &DeclarativeConfig) -> String {
    let mut out = String::new();
    for value in ordered(config) {
        let mut buffer = Vec::new();
        let formatter = serde_json::ser::PrettyFormatter::with_indent(b"    ");
        let mut serializer = serde_json::Serializer::with_formatter(&mut buffer, formatter);
        if value.serialize(&mut serializer).is_ok() {
            out.push_str(&String::from_utf8_lossy(&buffer));
            out.push('\n');
        }
    }
    out
}

/// YAML documents, each starting with `---`, as `opm render -o yaml`.
pub fn to_yaml(config: &DeclarativeConfig) -> String {
    ordered(config)
        .iter()
        .map(|value| {
            format!(
                "---\n{}",
                serde_saphyr::to_string(value).unwrap_or_default()
            )
        })
        .collect()
}
