//! Reading `bundle validate` reports (operator-sdk's `-o json-alpha1`, ours `-o json`) into
//! comparable sets of messages: lists upstream builds from Go maps are sorted, and values
//! upstream prints as pointers or Go dumps are normalised (docs/conformance.md).

use std::collections::BTreeSet;
use std::path::Path;

use serde_json::Value;

/// (passed, error messages, warning messages) from a `json-alpha1`-shaped report.
pub fn verdict(
    output: &std::process::Output,
    who: &str,
    dir: &Path,
) -> (bool, BTreeSet<String>, BTreeSet<String>) {
    let report: Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "{who} on {}: {e}: {}",
            dir.display(),
            String::from_utf8_lossy(&output.stderr)
        )
    });
    let messages = |level: &str| {
        report["outputs"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|o| o["type"] == level)
            .map(|o| canonical(o["message"].as_str().unwrap_or_default()))
            .collect()
    };
    (
        report["passed"] == true,
        messages("error"),
        messages("warning"),
    )
}

/// Where the removed-API message lists the offending kinds.
pub const MIGRATE: &str = "Migrate the API(s) for ";

/// The `kind: ([names])` items of a removed-API message, and whether it ended with a comma.
pub fn removed_api_items(message: &str) -> Option<(&str, Vec<&str>)> {
    let (head, tail) = message.split_once(MIGRATE)?;
    let items = tail
        .split("]),")
        .map(|i| i.trim_end_matches("])"))
        .filter(|i| !i.is_empty())
        .collect();
    Some((head, items))
}

/// Rebuilds a removed-API message from its items the way upstream prints them.
pub fn removed_api_message(head: &str, items: &[&str]) -> String {
    let list = if items.len() == 1 {
        format!("{}])", items[0])
    } else {
        items.iter().map(|i| format!("{i}]),")).collect()
    };
    format!("{head}{MIGRATE}{list}")
}

/// operator-sdk prints lists it builds from Go maps in a varying order (removed-API kinds,
/// channel names): sorted here so that equal findings compare equal.
pub fn canonical(message: &str) -> String {
    if let Some((head, mut items)) = removed_api_items(message) {
        items.sort_unstable();
        return removed_api_message(head, &items);
    }
    if let Some((head, rest)) = message.split_once("channel(s) [")
        && let Some((list, tail)) = rest.split_once(']')
    {
        let mut channels: Vec<&str> = list.split(' ').collect();
        channels.sort_unstable();
        return format!("{head}channel(s) [{}]{tail}", channels.join(" "));
    }
    message.to_string()
}

/// operator-sdk's CRD messages made comparable with ours: where upstream prints a pointer
/// as the value (`Value 0xc000…`) the pointed-to value is put back, and the Go dump of the
/// versions list (`spec.versions` errors) is reduced to the reason (docs/conformance.md).
pub fn comparable(message: &str) -> String {
    let message = canonical(message);
    if let Some(rest) = message.strip_prefix("Error: Field spec.versions, Value ") {
        let why = rest.rsplit_once(": ").map_or(rest, |(_, why)| why);
        return format!("Error: Field spec.versions: {why}");
    }
    let Some((head, rest)) = message.split_once("Value 0x") else {
        return message;
    };
    let rest = rest.trim_start_matches(|c: char| c.is_ascii_hexdigit());
    let value = rest
        .split_once("Invalid value: ")
        .and_then(|(_, v)| v.split_once(": "))
        .map_or("", |(v, _)| v);
    let value = value
        .strip_prefix('"')
        .and_then(|v| v.strip_suffix('"'))
        .unwrap_or(value);
    format!("{head}Value {value}{rest}")
}
