//! crdify's property comparators, configured as operator-controller v1.11.0 configures its
//! preflight: every comparator an error, `enum` allowing added values, `description` off,
//! `unhandled` (whatever no comparator looked at) an error. Each comparator removes the
//! fields it judged from both nodes, so that `unhandled` sees only what is left.

use std::collections::BTreeSet;

use serde_json::Value;

use super::schema::{GoShape, Node, go_fields, go_list, go_number, go_quote, node, raw_text};

/// A comparator's failure: its rule name and crdify's message, and the values compared.
#[derive(Clone, Debug, PartialEq)]
pub struct Violation {
    /// The rule (`enum`, `maxLength`, `unhandled`…).
    pub rule: &'static str,
    /// crdify's message text.
    pub message: String,
    /// OLD's value, shown to people.
    pub old: Option<String>,
    /// NEW's value.
    pub new: Option<String>,
}

/// The rules this module runs, in the order their results are listed.
pub const PROPERTY_RULES: [&str; 17] = [
    "default",
    "description",
    "enum",
    "maximum",
    "maxItems",
    "maxLength",
    "maxProperties",
    "minimum",
    "minItems",
    "minLength",
    "minProperties",
    "nullable",
    "oneOf",
    "pattern",
    "required",
    "type",
    "unhandled",
];

/// Compares one property's node in OLD with the same property's node in NEW (an empty
/// node when NEW lacks it, as crdify does).
pub fn compare(old: &Node, new: &Node) -> Vec<Violation> {
    let (mut a, mut b) = (old.clone(), new.clone());
    let mut found = Vec::new();
    let mut push = |v: Option<Violation>| found.extend(v);
    push(default(&mut a, &mut b));
    // `description` runs with enforcement "None": it only takes the field out of `unhandled`.
    a.remove("description");
    b.remove("description");
    push(enumeration(&mut a, &mut b));
    for rule in ["maximum", "maxItems", "maxLength", "maxProperties"] {
        push(bound(&mut a, &mut b, rule, Direction::Max));
    }
    for rule in ["minimum", "minItems", "minLength", "minProperties"] {
        push(bound(&mut a, &mut b, rule, Direction::Min));
    }
    push(nullable(&mut a, &mut b));
    push(one_of(&mut a, &mut b));
    push(pattern(&mut a, &mut b));
    push(required(&mut a, &mut b));
    push(type_change(&mut a, &mut b));
    push(unhandled(&a, &b));
    found
}

fn violation(
    rule: &'static str,
    message: String,
    old: Option<String>,
    new: Option<String>,
) -> Option<Violation> {
    Some(Violation {
        rule,
        message,
        old,
        new,
    })
}

fn default(a: &mut Node, b: &mut Node) -> Option<Violation> {
    let (old, new) = (a.remove("default"), b.remove("default"));
    let (old, new) = (old.as_ref().map(raw_text), new.as_ref().map(raw_text));
    match (&old, &new) {
        (None, Some(n)) => violation(
            "default",
            format!(
                "default added when there was none previously : {}",
                go_quote(n)
            ),
            old.clone(),
            new.clone(),
        ),
        (Some(o), None) => violation(
            "default",
            format!("default value removed : {}", go_quote(o)),
            old.clone(),
            new.clone(),
        ),
        (Some(o), Some(n)) if o != n => violation(
            "default",
            format!("default value changed : {} -> {}", go_quote(o), go_quote(n)),
            old.clone(),
            new.clone(),
        ),
        _ => None,
    }
}

/// The raw JSON texts of a node's `enum`, sorted as crdify sorts them.
fn enum_values(node: &mut Node) -> BTreeSet<String> {
    match node.remove("enum") {
        Some(Value::Array(values)) => values.iter().map(raw_text).collect(),
        _ => BTreeSet::new(),
    }
}

fn enumeration(a: &mut Node, b: &mut Node) -> Option<Violation> {
    let (old, new) = (enum_values(a), enum_values(b));
    let show = |set: &BTreeSet<String>| {
        (!set.is_empty()).then(|| go_list(&set.iter().collect::<Vec<_>>()))
    };
    let removed: Vec<&String> = old.difference(&new).collect();
    let message = if old.is_empty() && !new.is_empty() {
        format!(
            "enum constraint added when there was none previously : {}",
            go_list(&new.iter().collect::<Vec<_>>())
        )
    } else if !removed.is_empty() {
        format!("allowed enum values removed : {}", go_list(&removed))
    } else {
        // Added values are allowed (operator-controller's `additionPolicy: Allow`).
        return None;
    };
    violation("enum", message, show(&old), show(&new))
}

#[derive(Clone, Copy, PartialEq)]
enum Direction {
    Max,
    Min,
}

fn number(value: &Value) -> Option<f64> {
    value.as_f64()
}

fn bound(
    a: &mut Node,
    b: &mut Node,
    rule: &'static str,
    direction: Direction,
) -> Option<Violation> {
    let (old, new) = (a.remove(rule), b.remove(rule));
    let (word, tighter): (&str, fn(f64, f64) -> bool) = match direction {
        // crdify's messages name both bounds after their kind, whatever the keyword.
        Direction::Max => ("maximum", |old, new| new < old),
        Direction::Min => ("minimum", |old, new| new > old),
    };
    let changed = match direction {
        Direction::Max => "maximum decreased",
        Direction::Min => "minimum increased",
    };
    let message = match (&old, &new) {
        (None, Some(n)) => format!(
            "{word} constraint added when there was none previously : {}",
            go_number(n)
        ),
        (Some(o), Some(n)) if tighter(number(o)?, number(n)?) => {
            format!("{changed} : {} -> {}", go_number(o), go_number(n))
        }
        _ => return None,
    };
    violation(
        rule,
        message,
        old.as_ref().map(go_number),
        new.as_ref().map(go_number),
    )
}

fn flag(node: &mut Node, key: &str) -> bool {
    node.remove(key).and_then(|v| v.as_bool()).unwrap_or(false)
}

fn nullable(a: &mut Node, b: &mut Node) -> Option<Violation> {
    let (old, new) = (flag(a, "nullable"), flag(b, "nullable"));
    let word = match (old, new) {
        (false, true) => "nullable added",
        (true, false) => "nullable removed",
        _ => return None,
    };
    violation(
        "nullable",
        format!("{word} : {old} -> {new}"),
        Some(old.to_string()),
        Some(new.to_string()),
    )
}

/// A `oneOf` entry with the fields crdify ignores in it removed (description, title,
/// example, externalDocs), as compact JSON.
fn one_of_entry(schema: &Value) -> String {
    let mut schema = schema.clone();
    if let Some(object) = schema.as_object_mut() {
        for key in ["description", "title", "example", "externalDocs"] {
            object.remove(key);
        }
    }
    raw_text(&schema)
}

fn one_of(a: &mut Node, b: &mut Node) -> Option<Violation> {
    let entries = |node: &mut Node| -> BTreeSet<String> {
        match node.remove("oneOf") {
            Some(Value::Array(list)) => list.iter().map(one_of_entry).collect(),
            _ => BTreeSet::new(),
        }
    };
    let (old, new) = (entries(a), entries(b));
    let list = |items: Vec<&String>| go_list(&items);
    let removed: Vec<&String> = old.difference(&new).collect();
    let added: Vec<&String> = new.difference(&old).collect();
    // The schemas are shown as JSON; crdify prints Go's struct dump of them.
    let message = if old.is_empty() && !new.is_empty() {
        format!(
            "oneOf constraint added when there was none previously: {}",
            list(new.iter().collect())
        )
    } else if !removed.is_empty() {
        format!("allowed oneOf schemas removed: {}", list(removed))
    } else if !added.is_empty() {
        format!("allowed oneOf schemas added: {}", list(added))
    } else {
        return None;
    };
    let show = |set: &BTreeSet<String>| (!set.is_empty()).then(|| list(set.iter().collect()));
    violation("oneOf", message, show(&old), show(&new))
}

fn text(node: &mut Node, key: &str) -> String {
    node.remove(key)
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

fn pattern(a: &mut Node, b: &mut Node) -> Option<Violation> {
    let (old, new) = (text(a, "pattern"), text(b, "pattern"));
    let word = if old == new {
        return None;
    } else if old.is_empty() {
        "pattern added"
    } else if new.is_empty() {
        "pattern removed"
    } else {
        "pattern changed"
    };
    violation(
        "pattern",
        format!("{word} : {} -> {}", go_quote(&old), go_quote(&new)),
        Some(old),
        Some(new),
    )
}

fn required(a: &mut Node, b: &mut Node) -> Option<Violation> {
    let names = |node: &mut Node| -> BTreeSet<String> {
        match node.remove("required") {
            Some(Value::Array(list)) => list
                .iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect(),
            _ => BTreeSet::new(),
        }
    };
    let (old, new) = (names(a), names(b));
    let added: Vec<&String> = new.difference(&old).collect();
    if added.is_empty() {
        return None;
    }
    // crdify lists them in a set's (random) order; sorted here.
    violation(
        "required",
        format!("new required fields: {}", go_list(&added)),
        Some(go_list(&old.iter().collect::<Vec<_>>())),
        Some(go_list(&new.iter().collect::<Vec<_>>())),
    )
}

fn type_change(a: &mut Node, b: &mut Node) -> Option<Violation> {
    let (old, new) = (text(a, "type"), text(b, "type"));
    if old == new {
        return None;
    }
    violation(
        "type",
        format!("type changed : {} -> {}", go_quote(&old), go_quote(&new)),
        Some(old),
        Some(new),
    )
}

/// What no comparator judged and still differs, worded as operator-controller shortens
/// crdify's diff: `unhandled changes found (Format "" -> "email")`, fields in Go's order.
fn unhandled(a: &Node, b: &Node) -> Option<Violation> {
    if a == b {
        return None;
    }
    let mut details = Vec::new();
    describe_changes(a, b, &mut details);
    violation(
        "unhandled",
        format!("unhandled changes found ({})", details.join("; ")),
        Some(Value::Object(a.clone()).to_string()),
        Some(Value::Object(b.clone()).to_string()),
    )
}

/// Keywords whose value is one nested schema: Go's diff shows the fields that changed in it.
const NESTED_SCHEMAS: [&str; 3] = ["not", "additionalProperties", "additionalItems"];

fn describe_changes(a: &Node, b: &Node, details: &mut Vec<String>) {
    for (json, go, shape) in go_fields() {
        let (old, new) = (a.get(json), b.get(json));
        if old == new {
            continue;
        }
        if let (Some(x @ Value::Object(_)), Some(y @ Value::Object(_))) = (old, new)
            && NESTED_SCHEMAS.contains(&json)
        {
            describe_changes(&node(x), &node(y), details);
            continue;
        }
        details.push(format!(
            "{go} {} -> {}",
            go_value(old, new, shape),
            go_value(new, old, shape)
        ));
    }
}

/// A field's value as Go's diff shows it, after operator-controller's clean-up: an unset
/// plain string `""`, bool `false`, pointer or slice `nil`; a pointer's value `&value`;
/// `<complex value>` for schemas and raw JSON.
fn go_value(value: Option<&Value>, other: Option<&Value>, shape: GoShape) -> String {
    let scalar = |v: &Value| match v {
        Value::String(s) => Some(go_quote(s)),
        Value::Bool(b) => Some(b.to_string()),
        n @ Value::Number(_) => Some(go_number(n)),
        _ => None,
    };
    match (shape, value) {
        (GoShape::Plain, Some(v)) => scalar(v).unwrap_or_else(|| "<complex value>".into()),
        (GoShape::Plain, None) => match other {
            Some(Value::Bool(_)) => "false".into(),
            _ => "\"\"".into(),
        },
        (GoShape::Pointer | GoShape::Collection, None) => "nil".into(),
        (GoShape::Pointer, Some(v)) => {
            scalar(v).map_or_else(|| "<complex value>".into(), |s| format!("&{s}"))
        }
        (GoShape::Collection, Some(Value::Array(items))) if items.iter().all(Value::is_string) => {
            let quoted: Vec<String> = items
                .iter()
                .filter_map(|i| i.as_str().map(go_quote))
                .collect();
            format!("[]string{{{}}}", quoted.join(", "))
        }
        (GoShape::Collection, Some(_)) => "<complex value>".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rules(old: Value, new: Value) -> Vec<(&'static str, String)> {
        compare(&node(&old), &node(&new))
            .into_iter()
            .map(|v| (v.rule, v.message))
            .collect()
    }

    #[test]
    fn messages_are_crdifys() {
        assert_eq!(
            rules(
                json!({"type": "string", "enum": ["a", "b"]}),
                json!({"type": "string", "enum": ["a", "c"]})
            ),
            [("enum", r#"allowed enum values removed : ["b"]"#.to_string())]
        );
        assert_eq!(
            rules(
                json!({"type": "integer", "maximum": 10}),
                json!({"type": "integer", "maximum": 5})
            ),
            [("maximum", "maximum decreased : 10 -> 5".to_string())]
        );
        assert_eq!(
            rules(
                json!({"type": "string"}),
                json!({"type": "string", "minLength": 2})
            ),
            [(
                "minLength",
                "minimum constraint added when there was none previously : 2".to_string()
            )]
        );
        assert_eq!(
            rules(
                json!({"type": "string"}),
                json!({"type": "string", "format": "email"})
            ),
            [(
                "unhandled",
                r#"unhandled changes found (Format "" -> "email")"#.to_string()
            )]
        );
        assert_eq!(
            rules(
                json!({"type": "string", "default": "a"}),
                json!({"type": "string", "default": "b"})
            ),
            [(
                "default",
                r#"default value changed : "\"a\"" -> "\"b\"""#.to_string()
            )]
        );
    }

    #[test]
    fn loosening_is_safe() {
        assert!(rules(
            json!({"type": "string", "enum": ["a"], "maxLength": 5, "minLength": 2, "description": "x"}),
            json!({"type": "string", "enum": ["a", "b"], "maxLength": 9, "minLength": 1, "description": "y"})
        )
        .is_empty());
    }
}
