//! Hand-written inputs, each checked against what serde-saphyr (the reference reader in
//! `manifest::stream`) makes of the same text.

use std::path::Path;

use serde_json::Value;

use super::to_json;
use crate::manifest::read_stream_generic;

fn reference(text: &str) -> Vec<Value> {
    read_stream_generic(Path::new("t.yaml"), text)
        .unwrap_or_else(|e| panic!("serde-saphyr rejects {text:?}: {e}"))
        .into_iter()
        .map(|d| d.value)
        .collect()
}

fn fast(text: &str) -> Option<Vec<Value>> {
    let json = to_json(text)?;
    Some(
        serde_json::Deserializer::from_str(&json)
            .into_iter::<Value>()
            .map(|v| v.unwrap_or_else(|e| panic!("bad JSON {e} from {text:?}: {json}")))
            .collect(),
    )
}

/// The fast path reads `text`, and reads it as serde-saphyr does.
fn same(text: &str) {
    let fast = fast(text).unwrap_or_else(|| panic!("the fast path declined {text:?}"));
    assert_eq!(fast, reference(text), "{text:?}");
}

fn declines(text: &str) {
    assert_eq!(fast(text), None, "{text:?} should be left to serde-saphyr");
}

#[test]
fn quoted_scalars_with_escapes() {
    same("a: \"tab\\tquote\\\" back\\\\ slash\\/ \\x41\\u00e9\\U0001F600 \\0\\e\\N\\_\"\n");
    same("a: 'it''s'\nb: '\"\\'\nc: ''\nd: \"\"\n");
    same("a: \"  leading and trailing  \"\n");
    same("a: \"folded\n  over lines\n\n  and a blank\"\nb: x\n");
    same("a: \"escaped \\\n  \\ break\"\n");
    same("a: 'single\n  folded  \n\n\n  twice'\n");
    same("- \"in a\n  sequence\"\n".replace("- ", "k:\n- ").as_str());
}

#[test]
fn keys_needing_quotes() {
    same("\"a: b\": 1\n'#c': 2\n\"true\": 3\n'': 4\n\"x\\ny\": 5\n");
    same("url:with:colons: v\nkey with spaces: v\n\"quoted\":\n  nested: 1\n");
    // Keys that resolve to other types, and merge keys.
    declines("true: 1\n");
    declines("1: a\n");
    declines("~: a\n");
    declines("<<:\n  a: 1\n");
}

#[test]
fn sequences_at_parent_indent_and_nested() {
    same("entries:\n- name: a\n  replaces: b\n- name: c\nnext: 1\n");
    same("a:\n  - 1\n  - two\nb:\n- - x\n  - y\n- []\n- {}\n-\n- - - deep\n");
    same("a:\n-\n  k: v\n- k: v\n  l:\n  - m\n  o: p\n");
    same("a: []\nb: {}\nc:\nd:\n  e:\n");
}

#[test]
fn block_scalars_and_their_indicators() {
    same(
        "a: |\n  line 1\n\n    indented\n  last\n\n\nb: |-\n  strip\n\n\nc: |+\n  keep\n\n\nd: x\n",
    );
    same("a: |2\n   leading space\n  normal\nb: |-2\n    two more\n");
    same("k:\n- |\n  in a sequence\n- |-\n  # not a comment\n  key: not a key\n");
    same("a: |\n  trailing spaces   \n     \n  x\n---\nb: |+\n  kept at the end\n\n");
    same("a:\n  b: |\n    deep\n  c: d\n");
    declines("a: >\n  folded\n");
    declines("a: |\n\n   \n  more blank than content\n");
}

#[test]
fn plain_scalar_typing_matches_serde_saphyr() {
    for value in [
        "1",
        "0",
        "12345678901234567890",
        "1.2.3",
        "0.1.0",
        "v1.0",
        "3scale",
        "2021-01-01",
        "12:30",
        "true",
        "True",
        "FALSE",
        "yes",
        "No",
        "on",
        "OFF",
        "y",
        "n",
        "~",
        "null",
        "Null",
        "NULL",
        "inf",
        "nan",
        "Infinity",
        "--flag",
        "-x",
        "<1.0.0",
        "/path",
        "a b  c",
        "quay.io/x/y@sha256:abc",
        ".status.phase",
        "./bin/run",
        ".x",
        "http://x:80/y",
        "a,b",
        "a [b] {c}",
        "é",
        "x\"y\\z",
    ] {
        same(&format!("k: {value}\nl:\n- {value}\n"));
    }
    for value in [
        "1.0", "010", "1e3", ".5", "-1", "+1", "0x1F", "1_000", ".inf", "-.5", "09",
    ] {
        declines(&format!("k: {value}\n"));
    }
}

#[test]
fn multi_line_plain_scalars_fold() {
    same("description: a long\n  text over\n  three lines\nname: x\n");
    same("a: one\n\n  after a blank\n\n\n  after two\nb: 1\n");
    same("- first\n  second\n".replace("- ", "k:\n- ").as_str());
    same("k:\n- name: x\n  description: wrapped\n    [link](y) \"quoted\" it's\n");
    same("k: text\n  - dash\n  -- more\n");
    same("k:\n- name: x\n  description: text\n    - e.g. a, b,...\n  other: y\n");
    declines("k: text\n  more: colon\n");
}

#[test]
fn documents_and_empty_values() {
    same("---\na: 1\n---\n---\n\nb: 2\n");
    same("a:\nb: ~\nc: null\nd: ''\n");
    // A repeated key keeps its last value, as with serde-saphyr's `LastWins`.
    same("a: 1\nb:\n  c: x\n  c: y\na: 2\n");
    same("\n\n---   \na: 1\n");
    same(
        "# header\n---\n# only a comment\n---\na:\n  # inside\n  b: |\n    # content\n  # after\nc: x\n",
    );
    assert_eq!(fast("\n---\n"), Some(vec![]));
}

#[test]
fn anything_else_is_declined() {
    for text in [
        "a: &x 1\nb: *x\n",
        "a: !!str 1\n",
        "a: [1, 2]\n",
        "a: {b: 1}\n",
        "a: 1 # comment\n",
        "a:\n\tb: 1\n",
        "a: 1\r\n",
        "- a\n",
        "just a scalar\n",
        "%YAML 1.2\n---\na: 1\n",
        "a: 1\n...\n",
        "--- a: 1\n",
        "? a\n: b\n",
        "a: \"unterminated\n",
        "a: b: c\n",
        "a: 1\n  b: 2\n",
        "a:\n  b: 1\n - c\n",
        "a: \"\\q\"\n",
        "a: |\n",
        "a: x\n- y\n",
        "\u{feff}a: 1\n",
    ] {
        declines(text);
    }
    // Nesting deeper than the transcoder follows is declined, not a stack overflow.
    declines(&format!("a:\n{}x\n", "- ".repeat(100_000)));
    same(&format!("a:\n{}x\n", "- ".repeat(50)));
}
