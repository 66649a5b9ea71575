//! The upgrade graph as a mermaid flowchart, line for line as `opm alpha render-graph`
//! prints it (without `--minimum-edge`, and without `--draw-v0-semantics`, its defaults):
//! packages and channels as nested subgraphs, entries by descending version, then per entry
//! its `skip`, `skipRange(…)` and `replace` edges, pointing from the older bundle to the newer.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

use super::{EntryRange, UpgradeGraph};

/// Writes the mermaid text of `graph`.
pub fn write(graph: &UpgradeGraph) -> String {
    let mut out = String::from(
        "graph LR\n  classDef deprecated fill:#E8960F\n  classDef skipped stroke:#FF0000,stroke-width:4px\n  classDef deprecatedskipped fill:#E8960F,stroke:#FF0000,stroke-width:4px\n",
    );
    let mut deprecated_package = None;
    let mut deprecated_channels = Vec::new();
    let mut deprecated_bundles = BTreeSet::new();
    let mut by_package: BTreeMap<&str, String> = BTreeMap::new();
    for channel in &graph.channels {
        let text = by_package.entry(&channel.package).or_default();
        let channel_id = format!("{}-{}", channel.package, channel.name);
        let _ = writeln!(text, "    %% channel {}", quoted(&channel.name));
        let _ = writeln!(text, "    subgraph {channel_id}[{}]", quoted(&channel.name));
        if graph.deprecated_packages.contains(&channel.package) {
            deprecated_package = Some(channel.package.clone());
        }
        // opm matches channel and bundle deprecations by name alone, across packages.
        if graph.deprecated_channels.contains(&channel.name) {
            deprecated_channels.push(channel_id.clone());
        }
        let node = |name: &str| format!("{channel_id}-{name}[{}]", quoted(name));
        for entry in channel.entries_by_descending_version(graph) {
            let entry_node = node(&entry.name);
            let _ = writeln!(text, "      {entry_node}");
            if graph.deprecated_bundles.contains(&entry.name) {
                deprecated_bundles.insert(format!("{channel_id}-{}", entry.name));
            }
            for skipped in &entry.skips {
                let _ = writeln!(text, "      {}-- skip --> {entry_node}", node(skipped));
            }
            if let Some(range) = entry.parsed_skip_range() {
                for other in &channel.entries {
                    if range.contains(&graph.version_of(&other.name)) {
                        let _ = writeln!(
                            text,
                            "      {}-- \"skipRange({})\" --> {entry_node}",
                            node(&other.name),
                            entry.skip_range
                        );
                    }
                }
            }
            if !entry.replaces.is_empty() {
                let _ = writeln!(
                    text,
                    "      {}-- replace --> {entry_node}",
                    node(&entry.replaces)
                );
            }
        }
        text.push_str("    end\n");
    }
    for (package, text) in &by_package {
        let _ = writeln!(out, "  %% package {}", quoted(package));
        let _ = writeln!(out, "  subgraph {}", quoted(package));
        out.push_str(text);
        out.push_str("  end\n");
    }
    if let Some(package) = deprecated_package {
        let _ = writeln!(out, "style {package} fill:#989695");
    }
    for channel in deprecated_channels {
        let _ = writeln!(out, "style {channel} fill:#DCD0FF");
    }
    if !deprecated_bundles.is_empty() {
        let ids: Vec<String> = deprecated_bundles.into_iter().collect();
        let _ = writeln!(out, "class {} deprecated", ids.join(","));
    }
    out
}

/// A string in double quotes with Go's `%q` escapes for the characters names can hold.
fn quoted(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}
