//! A `bundle-tool.yaml` being written: keys in the order a reader meets them, each with the
//! comment that says where its value came from, and the keys only the author can fill in,
//! written commented out so that the file stays valid until they do.

use serde_json::Value;

/// One key of the config, or a section of them.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    /// The key, as the config spells it (`displayName`).
    pub key: String,
    /// Its value, or the keys of its section.
    pub value: EntryValue,
    /// Comment lines written above it (without `# `).
    pub comment: Vec<String>,
    /// Written commented out: a value only the author can give, shown as an example.
    pub for_the_author: bool,
}

/// What a key holds.
#[derive(Clone, Debug, PartialEq)]
pub enum EntryValue {
    /// A value written as YAML.
    Value(Value),
    /// A section of further keys.
    Section(Vec<Entry>),
}

impl Entry {
    /// A key with a value.
    pub fn value(key: &str, value: impl Into<Value>) -> Entry {
        Entry {
            key: key.into(),
            value: EntryValue::Value(value.into()),
            comment: Vec::new(),
            for_the_author: false,
        }
    }

    /// A section of keys.
    pub fn section(key: &str, entries: Vec<Entry>) -> Entry {
        Entry {
            key: key.into(),
            value: EntryValue::Section(entries),
            comment: Vec::new(),
            for_the_author: false,
        }
    }

    /// The same entry with a comment above it.
    pub fn noted(mut self, comment: impl Into<String>) -> Entry {
        self.comment
            .extend(comment.into().lines().map(str::to_string));
        self
    }

    /// The same entry, commented out for the author to fill in; `why` says what to write.
    pub fn for_the_author(mut self, why: impl Into<String>) -> Entry {
        self.comment
            .push(format!("{AUTHOR_MARK} {}", why.into().trim()));
        self.for_the_author = true;
        self
    }
}

/// The mark on a comment whose key only the author can fill in; `init` lists them too.
pub const AUTHOR_MARK: &str = "AUTHOR:";

/// The config as YAML text: `header` comment lines, then the entries.
pub fn render(header: &[String], entries: &[Entry]) -> String {
    let mut out = String::new();
    for line in header {
        push_comment(&mut out, 0, line);
    }
    render_entries(&mut out, entries, 0, false);
    out
}

/// The dotted paths of the entries only the author can fill in, with what to write.
pub fn author_entries(entries: &[Entry]) -> Vec<(String, String)> {
    let mut found = Vec::new();
    collect_author(entries, "", &mut found);
    found
}

fn collect_author(entries: &[Entry], prefix: &str, found: &mut Vec<(String, String)>) {
    for entry in entries {
        let path = format!("{prefix}{}", entry.key);
        if entry.for_the_author {
            let why = entry
                .comment
                .iter()
                .find_map(|c| c.strip_prefix(AUTHOR_MARK))
                .unwrap_or_default()
                .trim()
                .to_string();
            found.push((path.clone(), why));
        }
        if let EntryValue::Section(inner) = &entry.value {
            collect_author(inner, &format!("{path}."), found);
        }
    }
}

fn push_comment(out: &mut String, indent: usize, line: &str) {
    out.push_str(&" ".repeat(indent));
    if line.is_empty() {
        out.push_str("#\n");
    } else {
        out.push_str("# ");
        out.push_str(line);
        out.push('\n');
    }
}

fn render_entries(out: &mut String, entries: &[Entry], indent: usize, commented: bool) {
    for entry in entries {
        for line in &entry.comment {
            push_comment(out, indent, line);
        }
        let commented = commented || entry.for_the_author;
        let mut text = String::new();
        match &entry.value {
            EntryValue::Value(value) => {
                text.push_str(&key_text(&entry.key));
                text.push(':');
                text.push_str(&value_text(value, indent));
            }
            EntryValue::Section(inner) => {
                text.push_str(&key_text(&entry.key));
                text.push_str(":\n");
                let mut inner_text = String::new();
                render_entries(&mut inner_text, inner, indent + 2, false);
                text.push_str(&inner_text);
            }
        }
        // The entry's own lines were indented by `indent` except the first; comment every line
        // out after the indentation, so that uncommenting is deleting `# `.
        for (i, line) in text.lines().enumerate() {
            let line_indent = if i == 0 { indent } else { 0 };
            let line = format!("{}{line}", " ".repeat(line_indent));
            if commented {
                let body = line.trim_start();
                let spaces = line.len() - body.len();
                if body.starts_with('#') {
                    out.push_str(&line);
                } else {
                    out.push_str(&" ".repeat(spaces.min(indent)));
                    out.push_str("# ");
                    out.push_str(&line[spaces.min(indent)..]);
                }
            } else {
                out.push_str(&line);
            }
            out.push('\n');
        }
    }
}

/// A key as YAML: plain where that reads back as the same string, else double-quoted.
fn key_text(key: &str) -> String {
    if plain_reads_back(key) {
        key.to_string()
    } else {
        Value::String(key.into()).to_string()
    }
}

/// Whether `text` written plain (`k: text`) reads back as the string `text`.
fn plain_reads_back(text: &str) -> bool {
    if text.is_empty()
        || text.contains([
            '\n', '#', '\'', '"', '{', '}', '[', ']', ',', '&', '*', '!', '|', '>', '%', '@', '`',
        ])
    {
        return false;
    }
    let document = format!("{text}: {text}\n");
    let read: Result<serde_json::Map<String, Value>, _> = serde_saphyr::from_str(&document);
    matches!(read, Ok(map) if map.len() == 1 && map.get(text) == Some(&Value::String(text.into())))
}

/// The text after `key:` for `value`, for an entry at `indent`: ` scalar`, a block literal for
/// a multi-line string, or a block below the key for lists and maps.
fn value_text(value: &Value, indent: usize) -> String {
    let pad = " ".repeat(indent + 2);
    match value {
        Value::String(text) if text.contains('\n') => {
            let (indicator, body) = match text.strip_suffix('\n') {
                Some(body) if !body.ends_with('\n') => ("|", body),
                Some(_) => return format!(" {value}\n"),
                None => ("|-", text.as_str()),
            };
            // A block literal cannot start with a space or hold a line of trailing spaces the
            // reader would keep differently; such strings are written quoted.
            if body.starts_with(' ') || body.lines().any(|l| l.ends_with(' ') || l.contains('\t')) {
                return format!(" {value}\n");
            }
            let mut out = format!(" {indicator}\n");
            for line in body.split('\n') {
                if line.is_empty() {
                    out.push('\n');
                } else {
                    out.push_str(&pad);
                    out.push_str(line);
                    out.push('\n');
                }
            }
            out
        }
        Value::String(text) if plain_reads_back(text) => format!(" {text}\n"),
        Value::Array(items) if items.is_empty() => " []\n".into(),
        Value::Object(map) if map.is_empty() => " {}\n".into(),
        Value::Array(items) if items.iter().all(is_short_scalar) => {
            let parts: Vec<String> = items.iter().map(flow_scalar).collect();
            format!(" [{}]\n", parts.join(", "))
        }
        Value::Array(items) => {
            let mut out = String::from("\n");
            for item in items {
                let block = match item {
                    Value::Object(map) if !map.is_empty() => {
                        let inner = map_block(map, indent + 4);
                        format!("{pad}- {}", inner.trim_start())
                    }
                    other => format!("{pad}-{}", value_text(other, indent + 2)),
                };
                out.push_str(&block);
            }
            out
        }
        Value::Object(map) => format!("\n{}", map_block(map, indent + 2)),
        other => format!(" {}\n", scalar_text(other)),
    }
}

/// The lines of a map's keys at `indent`.
fn map_block(map: &serde_json::Map<String, Value>, indent: usize) -> String {
    let pad = " ".repeat(indent);
    let mut out = String::new();
    for (key, value) in map {
        out.push_str(&pad);
        out.push_str(&key_text(key));
        out.push(':');
        out.push_str(&value_text(value, indent));
    }
    out
}

fn is_short_scalar(value: &Value) -> bool {
    match value {
        Value::String(text) => !text.contains('\n') && text.len() <= 40,
        Value::Bool(_) | Value::Number(_) | Value::Null => true,
        _ => false,
    }
}

/// A scalar inside a flow list: plain when that reads back and has no `,`, else quoted.
fn flow_scalar(value: &Value) -> String {
    match value {
        Value::String(text) if plain_reads_back(text) && !text.contains(':') => text.clone(),
        other => scalar_text(other),
    }
}

/// A number, boolean or null as YAML, or a string double-quoted (JSON's escapes are YAML's).
fn scalar_text(value: &Value) -> String {
    match value {
        Value::Null => "null".into(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn reads_back(entries: &[Entry]) -> Value {
        let text = render(&["header".into()], entries);
        serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{e}\n{text}"))
    }

    #[test]
    fn every_shape_of_value_reads_back_as_written() {
        let awkward = json!({
            "plain": "redis-operator",
            "number-like": "1.0",
            "bool-like": "true",
            "colon": "a: b",
            "hash": "a # b",
            "block": "line one\n\nline three\n",
            "block-no-newline": "one\ntwo",
            "leading-space": "  indented\nnext\n",
            "list": ["a", "b, c", "yes", 3],
            "maps": [{"name": "Source", "url": "https://example.com"}, {"email": "a@b"}],
            "nested": {"operatorframework.io/suggested-namespace": "x", "deep": {"list": [{"a": [1, 2]}]}},
            "empty-list": [],
            "empty-map": {},
            "null": null,
            "long-list": ["a very long string that goes past the flow-list limit of forty"],
        });
        let entries: Vec<Entry> = awkward
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| Entry::value(k, v.clone()))
            .collect();
        assert_eq!(
            reads_back(&[Entry::section("csv", entries)]),
            json!({"csv": awkward})
        );
    }

    #[test]
    fn author_entries_are_commented_out_and_listed() {
        let entries = vec![
            Entry::value("package", "demo").noted("from the Deployment"),
            Entry::section(
                "csv",
                vec![
                    Entry::value("displayName", "Demo"),
                    Entry::value("provider", json!({"name": "Example"}))
                        .for_the_author("who ships it"),
                    Entry::value("description", "one\ntwo\n").for_the_author("what it does"),
                ],
            ),
        ];
        let text = render(&[], &entries);
        assert!(
            text.contains("  # AUTHOR: who ships it\n  # provider:\n  #   name: Example\n"),
            "{text}"
        );
        assert_eq!(
            reads_back(&entries),
            json!({"package": "demo", "csv": {"displayName": "Demo"}})
        );
        // Uncommenting (deleting `# ` after the indentation) gives the value.
        let uncommented: String = text
            .lines()
            .filter(|l| {
                !l.trim_start().starts_with("# AUTHOR") && !l.trim_start().starts_with("# from")
            })
            .map(|l| l.replacen("# ", "", 1) + "\n")
            .collect();
        let value: Value = serde_saphyr::from_str(&uncommented).unwrap();
        assert_eq!(value["csv"]["provider"]["name"], "Example");
        assert_eq!(value["csv"]["description"], "one\ntwo\n");
        assert_eq!(
            author_entries(&entries),
            [
                ("csv.provider".to_string(), "who ships it".to_string()),
                ("csv.description".to_string(), "what it does".to_string())
            ]
        );
    }
}
