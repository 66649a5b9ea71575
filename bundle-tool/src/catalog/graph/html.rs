//! The upgrade graph as one self-contained HTML page: per package an inline SVG with a
//! column per channel and a node per bundle (newest on top), `replaces` edges on the left of
//! a column, `skips` on the right, `skipRange` as dotted arcs, channel heads highlighted,
//! deprecated bundles coloured. No scripts, fonts or images are loaded, so the page works
//! offline and from CI artefacts, and cannot log console errors.

use std::fmt::Write;

use super::{EntryRange, GraphChannel, UpgradeGraph};

/// Pixels per character of the 12 px monospace label font (an estimate: the layout must not
/// depend on a browser measuring text).
const CHAR_WIDTH: usize = 8;
/// Height of a bundle node and the gap between nodes.
const NODE_HEIGHT: usize = 28;
const ROW_GAP: usize = 22;
/// Room above the first node for the channel's title.
const HEADER: usize = 48;
/// Horizontal room around a node for the edge arcs.
const ARC_ROOM: usize = 70;

/// Writes the page for `graph`; `title` names the catalog.
pub fn write(graph: &UpgradeGraph, title: &str) -> String {
    let mut body = String::new();
    let mut packages: Vec<&str> = graph.channels.iter().map(|c| c.package.as_str()).collect();
    packages.sort();
    packages.dedup();
    for package in packages {
        let channels: Vec<&GraphChannel> = graph
            .channels
            .iter()
            .filter(|c| c.package == package)
            .collect();
        let deprecated = if graph.deprecated_packages.contains(package) {
            " <span class=\"deprecated-tag\">deprecated</span>"
        } else {
            ""
        };
        let _ = writeln!(
            body,
            "<section>\n<h2>{}{deprecated}</h2>\n<p>default channel: <b>{}</b></p>",
            escape(package),
            escape(
                graph
                    .default_channels
                    .get(package)
                    .map(String::as_str)
                    .unwrap_or("(none)")
            )
        );
        body.push_str(&package_svg(graph, &channels));
        body.push_str("</section>\n");
    }
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>Upgrade graph: {title}</title>\n<style>\n{STYLE}</style>\n</head>\n<body>\n<h1>Upgrade graph of {title}</h1>\n{LEGEND}{body}</body>\n</html>\n",
        title = escape(title)
    )
}

const STYLE: &str = "body { font-family: sans-serif; margin: 1.5em; color: #222; }
svg { display: block; margin-bottom: 1em; }
.node rect { fill: #f4f6fa; stroke: #6b7a90; stroke-width: 1; }
.node.head rect { fill: #d9f2dd; stroke: #1e7b34; stroke-width: 2.5; }
.node.deprecated rect { fill: #fbe3c0; stroke: #c26a00; }
.node text, .channel-title { font: 12px monospace; }
.channel-title { font-weight: bold; }
.column { fill: #fafafa; stroke: #ddd; }
.column.default { stroke: #1e7b34; stroke-dasharray: 4 3; }
.edge { fill: none; stroke-width: 1.5; }
.replaces { stroke: #2b59c3; }
.skips { stroke: #c0392b; stroke-dasharray: 6 4; }
.skiprange { stroke: #8e44ad; stroke-dasharray: 2 3; }
.legend span { display: inline-block; margin-right: 1.5em; }
.swatch { display: inline-block; width: 2em; height: 0; vertical-align: middle; margin-right: .4em; border-top: 2px solid; }
.deprecated-tag { font-size: 60%; background: #fbe3c0; padding: .1em .4em; }
";

const LEGEND: &str = "<p class=\"legend\"><span><i class=\"swatch\" style=\"border-color:#2b59c3\"></i>replaces (left)</span><span><i class=\"swatch\" style=\"border-color:#c0392b;border-top-style:dashed\"></i>skips (right)</span><span><i class=\"swatch\" style=\"border-color:#8e44ad;border-top-style:dotted\"></i>skipRange (right)</span><span>green node: channel head</span><span>orange node: deprecated</span></p>\n";

/// One column's geometry.
struct Column<'a> {
    channel: &'a GraphChannel,
    x: usize,
    width: usize,
    node_width: usize,
}

fn package_svg(graph: &UpgradeGraph, channels: &[&GraphChannel]) -> String {
    let mut columns = Vec::new();
    let mut x = 10;
    let mut rows = 0;
    for channel in channels {
        let longest = channel
            .entries
            .iter()
            .map(|e| e.name.chars().count())
            .chain(std::iter::once(channel.name.chars().count()))
            .max()
            .unwrap_or(0);
        let node_width = longest * CHAR_WIDTH + 20;
        let width = node_width + 2 * ARC_ROOM;
        columns.push(Column {
            channel,
            x,
            width,
            node_width,
        });
        x += width + 20;
        rows = rows.max(channel.entries.len());
    }
    let height = HEADER + rows * (NODE_HEIGHT + ROW_GAP) + 20;
    let mut svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{x}\" height=\"{height}\" viewBox=\"0 0 {x} {height}\" role=\"img\">\n"
    );
    for column in &columns {
        column_svg(graph, column, height, &mut svg);
    }
    svg.push_str("</svg>\n");
    svg
}

fn column_svg(graph: &UpgradeGraph, column: &Column, height: usize, svg: &mut String) {
    let channel = column.channel;
    let is_default = graph.default_channels.get(&channel.package) == Some(&channel.name);
    let _ = writeln!(
        svg,
        "<g class=\"channel\" data-channel=\"{name}\"><rect class=\"column{default}\" x=\"{x}\" y=\"4\" width=\"{w}\" height=\"{h}\" rx=\"6\"/><text class=\"channel-title\" x=\"{cx}\" y=\"28\" text-anchor=\"middle\">{name}{star}</text>",
        name = escape(&channel.name),
        default = if is_default { " default" } else { "" },
        x = column.x,
        w = column.width,
        h = height - 8,
        cx = column.x + column.width / 2,
        star = if graph.deprecated_channels.contains(&channel.name) {
            " (deprecated)"
        } else {
            ""
        },
    );
    let ordered = channel.entries_by_descending_version(graph);
    let row_of = |name: &str| ordered.iter().position(|e| e.name == name);
    let node_left = column.x + ARC_ROOM;
    let node_right = node_left + column.node_width;
    let middle = |row: usize| HEADER + row * (NODE_HEIGHT + ROW_GAP) + NODE_HEIGHT / 2;
    // Edges first, so nodes are drawn over their ends.
    for (row, entry) in ordered.iter().enumerate() {
        if let Some(from) = row_of(&entry.replaces) {
            arc(
                svg,
                "replaces",
                node_left,
                middle(from),
                middle(row),
                -1,
                &entry.replaces,
                &entry.name,
            );
        }
        for skipped in &entry.skips {
            if let Some(from) = row_of(skipped) {
                arc(
                    svg,
                    "skips",
                    node_right,
                    middle(from),
                    middle(row),
                    1,
                    skipped,
                    &entry.name,
                );
            }
        }
        if let Some(range) = entry.parsed_skip_range() {
            for (from, other) in ordered.iter().enumerate() {
                if from != row && range.contains(&graph.version_of(&other.name)) {
                    arc(
                        svg,
                        "skiprange",
                        node_right,
                        middle(from),
                        middle(row),
                        1,
                        &other.name,
                        &entry.name,
                    );
                }
            }
        }
    }
    let heads = channel.heads();
    for (row, entry) in ordered.iter().enumerate() {
        let mut classes = String::from("node");
        if heads.contains(entry.name.as_str()) {
            classes.push_str(" head");
        }
        if graph.deprecated_bundles.contains(&entry.name) {
            classes.push_str(" deprecated");
        }
        let version = graph
            .versions
            .get(&entry.name)
            .map(|v| v.to_string())
            .unwrap_or_else(|| "no bundle".into());
        let mut tooltip = format!("{} (version {version})", entry.name);
        if let Some(image) = graph.images.get(&entry.name).filter(|i| !i.is_empty()) {
            let _ = write!(tooltip, "\nimage: {image}");
        }
        if !entry.replaces.is_empty() {
            let _ = write!(tooltip, "\nreplaces: {}", entry.replaces);
        }
        if !entry.skips.is_empty() {
            let _ = write!(tooltip, "\nskips: {}", entry.skips.join(", "));
        }
        if !entry.skip_range.is_empty() {
            let _ = write!(tooltip, "\nskipRange: {}", entry.skip_range);
        }
        let top = middle(row) - NODE_HEIGHT / 2;
        let _ = writeln!(
            svg,
            "<g class=\"{classes}\" data-bundle=\"{name}\"><title>{tip}</title><rect x=\"{node_left}\" y=\"{top}\" width=\"{w}\" height=\"{NODE_HEIGHT}\" rx=\"4\"/><text x=\"{cx}\" y=\"{ty}\" text-anchor=\"middle\">{name}</text></g>",
            name = escape(&entry.name),
            tip = escape(&tooltip),
            w = column.node_width,
            cx = node_left + column.node_width / 2,
            ty = middle(row) + 4,
        );
    }
    svg.push_str("</g>\n");
}

/// An arc from the node at `from_y` to the node at `to_y` on the side `x` (`direction` -1
/// bulges left, 1 right), bulging more for longer jumps so parallel edges stay apart, with
/// an arrow head at the newer bundle.
#[allow(clippy::too_many_arguments)]
fn arc(
    svg: &mut String,
    class: &str,
    x: usize,
    from_y: usize,
    to_y: usize,
    direction: i64,
    from: &str,
    to: &str,
) {
    let span = from_y.abs_diff(to_y) as i64;
    let bulge = direction * (14 + (span / 4).min(ARC_ROOM as i64 - 20));
    let (x, from_y, to_y) = (x as i64, from_y as i64, to_y as i64);
    let control = x + bulge;
    let tip = to_y;
    let _ = writeln!(
        svg,
        "<path class=\"edge {class}\" d=\"M {x} {from_y} C {control} {from_y}, {control} {tip}, {x} {tip}\"><title>{}</title></path><path class=\"edge {class}\" d=\"M {ax} {ay1} L {x} {tip} L {ax} {ay2}\"/>",
        escape(&format!("{from} → {to} ({class})")),
        ax = x + direction * 7,
        ay1 = tip - 4,
        ay2 = tip + 4,
    );
}

/// Text made safe for HTML element content and attribute values.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_escaped() {
        assert_eq!(escape("a<b>&\"c'"), "a&lt;b&gt;&amp;&quot;c&#39;");
    }
}
