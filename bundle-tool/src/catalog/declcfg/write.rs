//! Writing a catalog as `opm render` does: packages by name, each followed by its channels
//! and bundles (by name), its other documents, its deprecations; package-less documents last.

use serde::Serialize;
use serde_json::Value;

use super::DeclarativeConfig;

fn ordered(config: &DeclarativeConfig) -> Vec<Value> {
    use std::collections::BTreeMap;
    // One pass to group by package (render used to scan every document once per package).
    #[derive(Default)]
    struct Group<'a> {
        packages: Vec<&'a super::Package>,
        channels: Vec<&'a super::Channel>,
        bundles: Vec<&'a super::Bundle>,
        others: Vec<&'a super::Meta>,
        deprecations: Vec<&'a super::Deprecation>,
    }
    let mut groups: BTreeMap<&str, Group> = BTreeMap::new();
    for p in &config.packages {
        groups.entry(&p.name).or_default().packages.push(p);
    }
    for c in &config.channels {
        groups.entry(&c.package).or_default().channels.push(c);
    }
    for b in &config.bundles {
        groups.entry(&b.package).or_default().bundles.push(b);
    }
    for d in &config.deprecations {
        groups.entry(&d.package).or_default().deprecations.push(d);
    }
    let mut loose: Vec<&super::Meta> = Vec::new();
    for o in &config.others {
        if o.package.is_empty() {
            loose.push(o);
        } else {
            groups.entry(&o.package).or_default().others.push(o);
        }
    }
    let value = |v: &dyn erased::Serializable| v.value();
    let mut out = Vec::new();
    for (_, mut group) in groups {
        out.extend(group.packages.iter().map(|p| value(*p)));
        group.channels.sort_by(|a, b| a.name.cmp(&b.name));
        out.extend(group.channels.iter().map(|c| value(*c)));
        group.bundles.sort_by(|a, b| a.name.cmp(&b.name));
        out.extend(group.bundles.iter().map(|b| value(*b)));
        group.others.sort_by(|a, b| a.schema.cmp(&b.schema));
        out.extend(group.others.iter().map(|o| o.blob.clone()));
        out.extend(group.deprecations.iter().map(|d| value(*d)));
    }
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
