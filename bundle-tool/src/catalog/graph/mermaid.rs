//! The upgrade graph as a mermaid flowchart, line for line as `opm alpha render-graph`
//! prints it (without `--minimum-edge`): packages and channels as nested subgraphs, entries by
//! descending version, then per entry its `skip`, `skipRange(…)` and `replace` edges, pointing
//! from the older bundle to the newer. With OLMv0 semantics (`--draw-v0-semantics`, and always
//! for `catalog template -o mermaid`, as for opm's `render-template`) bundles a newer entry
//! skips are marked, and so are the edges OLMv0 would not follow.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

use super::{EntryRange, UpgradeGraph};

/// Writes the mermaid text of `graph`; `v0_semantics` marks bundles a newer entry skips,
/// and the edges OLMv0 does not follow (a bundle's second skip, upgrades into a skipped
/// bundle).
pub fn write(graph: &UpgradeGraph, v0_semantics: bool) -> String {
    let mut out = String::from(
        "graph LR\n  classDef deprecated fill:#E8960F\n  classDef skipped stroke:#FF0000,stroke-width:4px\n  classDef deprecatedskipped fill:#E8960F,stroke:#FF0000,stroke-width:4px\n",
    );
    let mut deprecated_package = None;
    let mut deprecated_channels = Vec::new();
    // Decoration class → node ids; mermaid takes one class per node, so the combination
    // is a class of its own.
    let mut decorated: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
    // Edges are numbered in the order they are defined, across all channels (by name).
    let mut link_id = 0usize;
    let mut marked_links: Vec<String> = Vec::new();
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
        // OLMv0: bundles skipped by a newer entry of this channel (entries come newest first).
        let mut skipped_here: BTreeSet<&str> = BTreeSet::new();
        for entry in channel.entries_by_descending_version(graph) {
            let entry_node = node(&entry.name);
            let _ = writeln!(text, "      {entry_node}");
            let deprecated = graph.deprecated_bundles.contains(&entry.name);
            let skipped = skipped_here.contains(entry.name.as_str());
            let class = match (deprecated, skipped) {
                (true, true) => Some("deprecatedskipped"),
                (true, false) => Some("deprecated"),
                (false, true) => Some("skipped"),
                (false, false) => None,
            };
            if let Some(class) = class {
                decorated
                    .entry(class)
                    .or_default()
                    .insert(format!("{channel_id}-{}", entry.name));
            }
            for skip in &entry.skips {
                let _ = writeln!(text, "      {}-- skip --> {entry_node}", node(skip));
                // A bundle skipped a second time: that edge is marked.
                if v0_semantics && !skipped_here.insert(skip) {
                    marked_links.push(link_id.to_string());
                }
                link_id += 1;
            }
            // Edges into a bundle that a newer entry skips are marked.
            let into_skipped = v0_semantics && skipped;
            if let Some(range) = entry.parsed_skip_range() {
                for other in &channel.entries {
                    if range.contains(&graph.version_of(&other.name)) {
                        let _ = writeln!(
                            text,
                            "      {}-- \"skipRange({})\" --> {entry_node}",
                            node(&other.name),
                            entry.skip_range
                        );
                        if into_skipped {
                            marked_links.push(link_id.to_string());
                        }
                        link_id += 1;
                    }
                }
            }
            if !entry.replaces.is_empty() {
                let _ = writeln!(
                    text,
                    "      {}-- replace --> {entry_node}",
                    node(&entry.replaces)
                );
                if into_skipped {
                    marked_links.push(link_id.to_string());
                }
                link_id += 1;
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
    for (class, ids) in decorated {
        let ids: Vec<String> = ids.into_iter().collect();
        let _ = writeln!(out, "class {} {class}", ids.join(","));
    }
    if !marked_links.is_empty() {
        let _ = writeln!(
            out,
            "linkStyle {} stroke:#FF0000,stroke-width:3px,stroke-dasharray:5;",
            marked_links.join(",")
        );
    }
    out
}

/// Names in opm's graphs are written with Go's `%q`.
use crate::go_quote::go_quote as quoted;
