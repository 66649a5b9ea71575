//! `validate` never panics: the Redis CSV cut at many points, and its fields replaced by
//! values of the wrong type, each give a report. A cut CSV's report must refuse it unless
//! the cut lost nothing the bundle needs (as an independent YAML reader sees what it lost).

use std::path::Path;

use bundle_tool::validate::{Suite, validate_bundle};

const CSV: &str = "redis-operator.clusterserviceversion.yaml";

fn bundle_with_csv(text: &str) -> tempfile::TempDir {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("../bundle/manifests");
    let dir = tempfile::tempdir().expect("tempdir");
    let manifests = dir.path().join("manifests");
    std::fs::create_dir_all(&manifests).unwrap();
    for entry in std::fs::read_dir(&source).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), manifests.join(entry.file_name())).unwrap();
    }
    std::fs::write(manifests.join(CSV), text).unwrap();
    dir
}

fn original() -> String {
    std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../bundle/manifests")
            .join(CSV),
    )
    .unwrap()
}

/// The fields of a CSV's webhook definition that may be left out (`omitempty` in
/// operator-framework/api's `WebhookDescription`); every other field a cut can lose is one
/// the bundle needs (the webhook's required fields, or spec fields before them).
const OPTIONAL_WEBHOOK_FIELDS: [&str; 10] = [
    "deploymentName",
    "containerPort",
    "targetPort",
    "rules",
    "failurePolicy",
    "matchPolicy",
    "objectSelector",
    "timeoutSeconds",
    "reinvocationPolicy",
    "webhookPath",
];

/// The paths of `whole` that `part` lacks or holds otherwise (`spec.install`, `spec.icon[0]`).
fn lost(whole: &serde_json::Value, part: &serde_json::Value, path: &str) -> Vec<String> {
    use serde_json::Value;
    match (whole, part) {
        _ if whole == part => Vec::new(),
        (Value::Object(whole), Value::Object(part)) => whole
            .iter()
            .flat_map(|(key, value)| match part.get(key) {
                Some(kept) => lost(value, kept, &format!("{path}.{key}")),
                None => vec![format!("{path}.{key}")],
            })
            .collect(),
        (Value::Array(whole), Value::Array(part)) => whole
            .iter()
            .enumerate()
            .flat_map(|(i, value)| match part.get(i) {
                Some(kept) => lost(value, kept, &format!("{path}[{i}]")),
                None => vec![format!("{path}[{i}]")],
            })
            .collect(),
        _ => vec![path.to_string()],
    }
}

#[test]
fn truncated_csvs_give_a_report() {
    let text = original();
    let whole: serde_json::Value = serde_saphyr::from_str(&text).expect("the CSV parses");
    let base_dir = bundle_with_csv(&text);
    let base = validate_bundle(base_dir.path(), Suite::OperatorFramework);
    assert!(
        base.passed(),
        "the committed bundle does not pass: {base:?}"
    );
    let step = text.len() / 40;
    let (mut refused, mut unreadable) = (0, 0);
    for cut in (1..text.len()).step_by(step.max(1)) {
        let cut = (0..=cut).rev().find(|&i| text.is_char_boundary(i)).unwrap();
        let part = &text[..cut];
        let dir = bundle_with_csv(part);
        let report = validate_bundle(dir.path(), Suite::OperatorFramework);
        let line = part.lines().count();
        let tail = (part.len().saturating_sub(120)..=part.len())
            .find(|&i| part.is_char_boundary(i))
            .unwrap_or(part.len());
        let at = format!(
            "the CSV cut at byte {cut} (line {line}, ending {:?})",
            &part[tail..]
        );
        // What the cut took, by an independent YAML reader: nothing that matters (only the
        // optional fields of the last webhook), or something the bundle needs, which the
        // report must refuse.
        let parsed = serde_saphyr::from_str::<serde_json::Value>(part)
            .ok()
            .filter(serde_json::Value::is_object);
        let Some(parsed) = parsed else {
            unreadable += 1;
            // The file, or (upstream's "unable to find a csv in bundle directory") its folder.
            let manifests = dir.path().join("manifests").display().to_string();
            assert!(
                !report.passed()
                    && report.findings.iter().any(|f| {
                        let text = f.to_string();
                        text.contains(CSV)
                            || text.contains(&manifests)
                            || f.file.as_deref().is_some_and(|file| file.contains(CSV))
                    }),
                "{at} is not a YAML mapping, and no error names the file: {report:?}"
            );
            continue;
        };
        let gone = lost(&whole, &parsed, "");
        let optional = gone.iter().all(|path| {
            path.starts_with(".spec.webhookdefinitions[")
                && OPTIONAL_WEBHOOK_FIELDS
                    .iter()
                    .any(|field| path.ends_with(&format!("].{field}")))
        });
        if optional {
            assert!(
                report.passed(),
                "{at} lost only optional fields {gone:?}, yet: {report:?}"
            );
            continue;
        }
        assert!(
            !report.passed(),
            "{at} lost {gone:?} and passed validation: {report:?}"
        );
        refused += 1;
    }
    println!("{refused} cuts refused as incomplete, {unreadable} as not a YAML mapping");
    assert!(
        refused + unreadable >= 30,
        "only {} of the cuts lost something the bundle needs",
        refused + unreadable
    );
}

/// A webhook type OLM's CSV CRD does not list (here what a cut inside `ConversionWebhook`
/// leaves) is an error naming the field: the API server would refuse the CSV.
#[test]
fn an_unknown_webhook_type_is_refused() {
    let text = original();
    assert!(
        text.contains("type: ConversionWebhook\n"),
        "the CSV has no conversion webhook"
    );
    let dir =
        bundle_with_csv(&text.replace("type: ConversionWebhook\n", "type: ConversionWebho\n"));
    let report = validate_bundle(dir.path(), Suite::OperatorFramework);
    assert!(
        report.findings.iter().any(|f| f
            .to_string()
            .contains("Unsupported value: \"ConversionWebho\"")
            && f.field.as_deref() == Some("spec.webhookdefinitions[0].type")),
        "{report:?}"
    );
    assert!(!report.passed());
}

#[test]
fn fields_of_the_wrong_type_give_a_report() {
    let text = original();
    // Each line `key: value` (or `key:` opening a block) replaced by a value of another shape.
    let keys = [
        "  name: ",
        "  version: ",
        "  minKubeVersion: ",
        "  installModes:",
        "  customresourcedefinitions:",
        "  install:",
        "    alm-examples: ",
        "  icon:",
        "  maintainers:",
        "  links:",
    ];
    let mut checked = 0;
    for key in keys {
        for replacement in ["[]", "{}", "7", "null", "\"\""] {
            let Some(start) = text.find(&format!("\n{key}")) else {
                continue;
            };
            let line_end = text[start + 1..]
                .find('\n')
                .map_or(text.len(), |e| start + 1 + e);
            let indent = key.len() - key.trim_start().len();
            let field = key.trim().trim_end_matches(':');
            let broken = format!(
                "{}\n{}{field}: {replacement}\n{}",
                &text[..start],
                " ".repeat(indent),
                // Drop the block below a replaced mapping/list key: deeper-indented lines.
                text[line_end + 1..]
                    .lines()
                    .skip_while(|l| {
                        key.ends_with(':')
                            && (l.len() - l.trim_start().len() > indent
                                || l.trim_start().starts_with("- "))
                    })
                    .collect::<Vec<_>>()
                    .join("\n")
            );
            let dir = bundle_with_csv(&broken);
            // Must not panic. Not every variant is an error: like upstream's decoder, ours
            // accepts `null`, an empty list or mapping of the right shape, and YAML scalars
            // in string fields (tests/tests/bundle_validate_conformance.rs compares which
            // variants are refused with operator-sdk).
            let _ = validate_bundle(dir.path(), Suite::OperatorFramework);
            checked += 1;
        }
    }
    assert!(checked >= 40, "only {checked} variants were built");
}
