//! `bundle-tool validate --select-optional suite=operatorframework` against `operator-sdk
//! bundle validate` (v1.42.3) with the same suite, on every bundle of the shared corpus and on
//! the Redis operator's bundle: the same verdict and the same set of error messages; the
//! warnings are compared too, as a printed agreement rate, and every difference must be one
//! that docs/conformance.md explains.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use e2e::assets::Assets;
use e2e::validate_report::{comparable, removed_api_items, removed_api_message, verdict};
use serde_json::Value;

/// operator-sdk's warnings as we mean to print them: the one documented difference
/// (docs/conformance.md) applied. operator-framework/api v0.34.0 warns about RBAC rules on
/// every resource that had a version removed in 1.25; we follow v0.45.0, which keeps only
/// `podsecuritypolicies` (the others live on in newer versions).
fn expected_warnings(theirs: &BTreeSet<String>) -> BTreeSet<String> {
    theirs
        .iter()
        .filter_map(|message| {
            if !message.contains("removed in v1.25") {
                return Some(message.clone());
            }
            let (head, items) = removed_api_items(message)?;
            let kept: Vec<&str> = items
                .into_iter()
                .filter(|item| {
                    !item.contains("ClusterServiceVersion.Spec.InstallStrategy")
                        || item.starts_with("podsecuritypolicies:")
                })
                .collect();
            (!kept.is_empty()).then(|| removed_api_message(head, &kept))
        })
        .collect()
}

/// How operator-sdk's bundle format check (operator-registry's `ValidateBundleFormat`, on
/// `metadata/annotations.yaml`) starts its errors. Not implemented here (docs/conformance.md).
const FORMAT_CHECK: &str = "error validating format in ";

/// The bundles on which that check finds an error (an empty default-channel annotation);
/// their other errors must still agree, and a bundle not listed here must not hit it.
const NOT_IMPLEMENTED_FORMAT_CHECK: &[&str] =
    &["corpus-extra/bundles/community-operators/reportportal-operator/0.0.5"];

/// How a set of bundles compared with operator-sdk.
#[derive(Default)]
struct Agreement {
    /// Bundles where operator-sdk's format check, which we do not implement, adds an error.
    format_check: Vec<String>,
    bundles: usize,
    invalid: usize,
    /// Bundles operator-sdk could not load at all (one fatal line, no report).
    unloadable: usize,
    same_warnings: usize,
    /// Bundles whose warnings differ only by the documented RBAC removed-API rule.
    explained: Vec<String>,
}

/// Runs both tools on every bundle and fails on the first bundle where the verdict or the set
/// of error messages differs, or where the warnings differ beyond the documented difference.
fn compare_with_operator_sdk(bundles: &[PathBuf]) -> Agreement {
    let sdk = Assets::locate().unwrap().operator_sdk().unwrap();
    let mut agreement = Agreement::default();
    for dir in bundles {
        let theirs = Command::new(&sdk)
            .args([
                "bundle",
                "validate",
                "--select-optional",
                "suite=operatorframework",
                "-o",
                "json-alpha1",
            ])
            .arg(dir)
            .output()
            .unwrap();
        let ours = Command::new(e2e::bundle_tool_binary())
            .args([
                "validate",
                "--select-optional",
                "suite=operatorframework",
                "-o",
                "json",
            ])
            .arg(dir)
            .output()
            .unwrap();
        let (our_pass, our_errors, our_warnings) = verdict(&ours, "bundle-tool", dir);
        assert_eq!(
            ours.status.success(),
            our_pass,
            "exit code and verdict disagree on {}",
            dir.display()
        );
        agreement.bundles += 1;
        if theirs.stdout.is_empty() {
            // operator-sdk could not load the bundle: one fatal line on stderr, which must
            // carry our one error (logrus quotes the message, escaping its quotes).
            let fatal = String::from_utf8_lossy(&theirs.stderr).replace("\\\"", "\"");
            assert!(!theirs.status.success(), "{}: {fatal}", dir.display());
            assert!(!our_pass, "{}: operator-sdk failed: {fatal}", dir.display());
            assert_eq!(our_errors.len(), 1, "{}: {our_errors:#?}", dir.display());
            let ours = our_errors.first().unwrap();
            let detail = ours.strip_prefix("Error: ").unwrap_or(ours);
            let detail = detail.rsplit_once(" (line ").map_or(detail, |(d, _)| d);
            assert!(
                fatal.contains(detail),
                "{}: {detail:?} not in {fatal}",
                dir.display()
            );
            agreement.invalid += 1;
            agreement.unloadable += 1;
            continue;
        }
        let (their_pass, their_errors, their_warnings) = verdict(&theirs, "operator-sdk", dir);
        assert_eq!(theirs.status.success(), their_pass);
        // Where upstream prints a pointer or a Go dump of internal structs as the value, the
        // documented normalisation (docs/conformance.md) is applied to both sides.
        let mut their_errors: BTreeSet<String> =
            their_errors.iter().map(|m| comparable(m)).collect();
        let our_errors: BTreeSet<String> = our_errors.iter().map(|m| comparable(m)).collect();
        let format_errors: Vec<String> = their_errors
            .iter()
            .filter(|m| m.starts_with(FORMAT_CHECK))
            .cloned()
            .collect();
        let known = NOT_IMPLEMENTED_FORMAT_CHECK
            .iter()
            .any(|suffix| dir.ends_with(suffix));
        if known {
            assert!(
                !format_errors.is_empty(),
                "{}: operator-sdk no longer reports a bundle format error; update \
                 NOT_IMPLEMENTED_FORMAT_CHECK",
                dir.display()
            );
            for message in &format_errors {
                their_errors.remove(message);
            }
            agreement.format_check.push(dir.display().to_string());
        }
        assert_eq!(
            (our_pass, &our_errors),
            (their_pass, &their_errors),
            "{}: operator-sdk and bundle-tool disagree",
            dir.display()
        );
        agreement.invalid += usize::from(!their_pass);
        if our_warnings == their_warnings {
            agreement.same_warnings += 1;
        } else {
            assert_eq!(
                our_warnings,
                expected_warnings(&their_warnings),
                "{}: warnings differ from operator-sdk's beyond the documented difference",
                dir.display()
            );
            agreement.explained.push(dir.display().to_string());
        }
    }
    let Agreement {
        format_check,
        bundles,
        invalid,
        unloadable,
        same_warnings,
        explained,
    } = &agreement;
    eprintln!(
        "{bundles} bundles: same verdict as operator-sdk on all, same errors on {} ({invalid} \
         invalid, of which {unloadable} operator-sdk cannot load); operator-sdk's format check \
         (not implemented) adds an error on {}: {format_check:?}",
        bundles - format_check.len(),
        format_check.len()
    );
    eprintln!(
        "warnings: the same set on {same_warnings}/{bundles} bundles ({:.1} %); {} differ only by \
         the RBAC removed-API rule of operator-framework/api v0.45.0:",
        100.0 * *same_warnings as f64 / *bundles as f64,
        explained.len()
    );
    for dir in explained {
        eprintln!("  {dir}");
    }
    agreement
}

#[test]
fn corpus_bundles_get_operator_sdks_verdict_and_errors() {
    let mut bundles = vec![e2e::corpus::redis_bundle()];
    bundles.extend(e2e::corpus::bundles().into_iter().map(|(_, _, dir)| dir));
    assert!(bundles.len() >= 267);
    compare_with_operator_sdk(&bundles);
}

/// The second corpus (tests/corpus-extra: 324 bundles of operator-framework/community-operators).
#[test]
fn second_corpus_bundles_get_operator_sdks_verdict_and_errors() {
    let bundles = e2e::corpus::extra_bundles();
    assert_eq!(
        bundles.len(),
        324,
        "tests/corpus-extra/SOURCE.md lists 324 bundles"
    );
    compare_with_operator_sdk(&bundles);
}

/// Broken copies of the Redis bundle: each is rejected by both tools, and ours says why in a
/// line that names the problem (and never panics).
#[test]
fn broken_bundles_are_rejected_with_a_clear_error() {
    let sdk = Assets::locate().unwrap().operator_sdk().unwrap();
    let source = e2e::corpus::redis_bundle();
    let csv_name = "redis-operator.clusterserviceversion.yaml";
    type Break = fn(&Path);
    let cases: &[(&str, Break, &str)] = &[
        (
            "invalid YAML",
            |m| {
                std::fs::write(
                    m.join("bad.yaml"),
                    "apiVersion: v1\nkind: Service\nmetadata: {name: [oops\n",
                )
                .unwrap()
            },
            "bad.yaml:3:",
        ),
        (
            "two CSVs",
            |m| {
                std::fs::copy(
                    m.join("redis-operator.clusterserviceversion.yaml"),
                    m.join("second.clusterserviceversion.yaml"),
                )
                .unwrap();
            },
            "contains multiple CSVs",
        ),
        (
            "no CSV",
            |m| std::fs::remove_file(m.join("redis-operator.clusterserviceversion.yaml")).unwrap(),
            "unable to find a csv",
        ),
        (
            "CRD the CSV does not own",
            |m| {
                let crd = std::fs::read_to_string(m.join("cache.example.com_redisclusters.yaml"))
                    .unwrap();
                let other = crd
                    .replace(
                        "redisclusters.cache.example.com",
                        "others.cache.example.com",
                    )
                    .replace("plural: redisclusters", "plural: others")
                    .replace("kind: RedisCluster\n", "kind: Other\n");
                std::fs::write(m.join("cache.example.com_others.yaml"), other).unwrap();
            },
            "is present in bundle",
        ),
        (
            "a CRD whose name is not <plural>.<group>",
            |m| {
                let path = m.join("cache.example.com_redisclusters.yaml");
                let crd = std::fs::read_to_string(&path).unwrap().replace(
                    "name: redisclusters.cache.example.com",
                    "name: rediscluster.cache.example.com",
                );
                std::fs::write(path, crd).unwrap();
            },
            "must be spec.names.plural+\".\"+spec.group",
        ),
        (
            "oversize",
            |m| {
                // Incompressible data: ~3 MB of it is over the 1 MiB compressed limit.
                let mut state = 0x2545_f491_4f6c_dd1du64;
                let blob: String = (0..3_000_000)
                    .map(|_| {
                        state ^= state << 13;
                        state ^= state >> 7;
                        state ^= state << 17;
                        char::from(b'a' + (state % 26) as u8)
                    })
                    .collect();
                std::fs::write(m.join("big_v1_configmap.yaml"), format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: big\ndata:\n  blob: {blob}\n")).unwrap();
            },
            "maximum bundle compressed size",
        ),
        (
            "a kind a bundle cannot carry",
            |m| {
                std::fs::write(m.join("extra.yaml"), "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: extra}\nspec: {selector: {matchLabels: {a: b}}, template: {metadata: {labels: {a: b}}, spec: {containers: [{name: c, image: x}]}}}\n").unwrap()
            },
            "unsupported media type registry+v1",
        ),
        (
            "an alias bomb",
            |m| {
                // Nine levels of ten aliases each: 10^9 strings once expanded.
                let mut text = String::from(
                    "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: lol}\ndata:\n  a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n",
                );
                for level in 1..10 {
                    let list = vec![format!("*a{}", level - 1); 10].join(", ");
                    text.push_str(&format!("  a{level}: &a{level} [{list}]\n"));
                }
                std::fs::write(m.join("lol_v1_configmap.yaml"), text).unwrap()
            },
            "document too large once its YAML aliases are expanded",
        ),
        (
            "service account clash",
            |m| {
                std::fs::write(
                    m.join("redis-operator_v1_serviceaccount.yaml"),
                    "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: redis-operator}\n",
                )
                .unwrap()
            },
            "invalid service account found in bundle",
        ),
    ];
    let _ = csv_name;
    for (name, break_it, expected) in cases {
        let dir = tempfile::tempdir().unwrap();
        let bundle = dir.path().join("bundle");
        e2e::copy_dir(&source, &bundle).unwrap();
        break_it(&bundle.join("manifests"));
        let theirs = Command::new(&sdk)
            .args([
                "bundle",
                "validate",
                "--select-optional",
                "suite=operatorframework",
            ])
            .arg(&bundle)
            .output()
            .unwrap();
        let ours = Command::new(e2e::bundle_tool_binary())
            .args(["validate", "--select-optional", "suite=operatorframework"])
            .arg(&bundle)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&ours.stdout).into_owned()
            + &String::from_utf8_lossy(&ours.stderr);
        assert!(!theirs.status.success(), "{name}: operator-sdk accepted it");
        assert_eq!(
            ours.status.code(),
            Some(1),
            "{name}: expected exit 1, got {:?}: {text}",
            ours.status.code()
        );
        assert!(
            text.contains(expected),
            "{name}: {expected:?} not in our output:\n{text}"
        );
    }
}

/// The Redis bundle with its CRD written with YAML anchors and many aliases to them (200
/// aliases to two anchors, as generated CRDs sometimes are): both tools read it and give the
/// same verdict, errors and warnings as for the plain bundle.
#[test]
fn a_crd_with_many_aliases_to_few_anchors_is_read_like_operator_sdk() {
    let sdk = Assets::locate().unwrap().operator_sdk().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let bundle = dir.path().join("bundle");
    e2e::copy_dir(&e2e::corpus::redis_bundle(), &bundle).unwrap();
    let path = bundle
        .join("manifests")
        .join("cache.example.com_redisclusters.yaml");
    let mut crd: Value = serde_saphyr::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let schema = &mut crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
        ["properties"];
    // Named to come before the aliases in sorted and in insertion order alike.
    schema["anchoredQuantity"] = "ANCHOR_QUANTITY".into();
    schema["anchoredLabels"] = "ANCHOR_LABELS".into();
    for i in 0..100 {
        schema[format!("extraQuantity{i}")] = "ALIAS_QUANTITY".into();
        schema[format!("extraLabels{i}")] = "ALIAS_LABELS".into();
    }
    // JSON is YAML; put the anchors and aliases in where the placeholders are.
    let text = serde_json::to_string_pretty(&crd)
        .unwrap()
        .replace(
            "\"ANCHOR_QUANTITY\"",
            "&quantity {\"type\": \"string\", \"pattern\": \"^[0-9]+(Mi|Gi)$\"}",
        )
        .replace(
            "\"ANCHOR_LABELS\"",
            "&labels {\"type\": \"object\", \"additionalProperties\": {\"type\": \"string\"}}",
        )
        .replace("\"ALIAS_QUANTITY\"", "*quantity ")
        .replace("\"ALIAS_LABELS\"", "*labels ");
    assert_eq!(text.matches("*quantity").count(), 100);
    std::fs::write(&path, text).unwrap();
    let suite = ["--select-optional", "suite=operatorframework"];
    let theirs = Command::new(&sdk)
        .args(["bundle", "validate", "-o", "json-alpha1"])
        .args(suite)
        .arg(&bundle)
        .output()
        .unwrap();
    let ours = Command::new(e2e::bundle_tool_binary())
        .args(["validate", "-o", "json"])
        .args(suite)
        .arg(&bundle)
        .output()
        .unwrap();
    let (their_pass, their_errors, their_warnings) = verdict(&theirs, "operator-sdk", &bundle);
    let (our_pass, our_errors, our_warnings) = verdict(&ours, "bundle-tool", &bundle);
    assert!(their_pass, "operator-sdk refused it: {their_errors:#?}");
    assert!(our_pass, "we refused it: {our_errors:#?}");
    assert_eq!(our_errors, their_errors);
    assert_eq!(our_warnings, expected_warnings(&their_warnings));
}

fn edit_crd(manifests: &Path, edit: impl FnOnce(&mut Value)) {
    let path = manifests.join("cache.example.com_redisclusters.yaml");
    let mut crd: Value = serde_saphyr::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    edit(&mut crd);
    std::fs::write(path, serde_json::to_string_pretty(&crd).unwrap()).unwrap();
}

fn edit_csv(manifests: &Path, from: &str, to: &str) {
    let path = manifests.join("redis-operator.clusterserviceversion.yaml");
    let csv = std::fs::read_to_string(&path).unwrap();
    assert!(csv.contains(from), "{from:?} not in the Redis CSV");
    std::fs::write(path, csv.replacen(from, to, 1)).unwrap();
}

/// Broken CRDs and CSV fields of the wrong type in copies of the Redis bundle: both tools
/// reject each with the same set of error messages (for a CSV operator-sdk cannot decode, its
/// one fatal line carries our message), and ours names the problem we meant to break.
#[test]
fn broken_crds_and_csv_types_get_operator_sdks_errors() {
    let sdk = Assets::locate().unwrap().operator_sdk().unwrap();
    type Break = fn(&Path);
    let cases: &[(&str, Break, &str)] = &[
        (
            "CRD names, scope and printer columns",
            |m| {
                edit_crd(m, |c| {
                    c["spec"]["scope"] = "Global".into();
                    c["spec"]["names"]["shortNames"] = serde_json::json!(["rc", "Bad_Short"]);
                    c["spec"]["names"]["listKind"] = "RedisCluster".into();
                    c["spec"]["names"]["categories"] = serde_json::json!(["all", "X y"]);
                    c["spec"]["versions"][0]["additionalPrinterColumns"][0]["type"] = "int".into();
                    c["spec"]["versions"][0]["additionalPrinterColumns"][2]["jsonPath"] =
                        "status.phase".into();
                })
            },
            "kind and listKind may not be the same",
        ),
        (
            "CRD label, annotation and finalizer syntax",
            |m| {
                edit_crd(m, |c| {
                    c["metadata"]["labels"] = serde_json::json!({"bad key": "-v", "ok": ""});
                    c["metadata"]["annotations"]["a/b/c"] = "x".into();
                    c["metadata"]["finalizers"] =
                        serde_json::json!(["example.com/ok", "bad finalizer"]);
                })
            },
            "name part must consist of alphanumeric characters",
        ),
        (
            "CRD conversion webhook settings",
            |m| {
                edit_crd(m, |c| {
                    let webhook = &mut c["spec"]["conversion"]["webhook"];
                    webhook["conversionReviewVersions"] = serde_json::json!(["v2", "v2"]);
                    webhook["clientConfig"]["service"]["port"] = 0.into();
                    webhook["clientConfig"]["service"]["path"] = "bad//Path".into();
                })
            },
            "must include at least one of v1, v1beta1",
        ),
        (
            "CRD preserveUnknownFields with a webhook and defaults",
            |m| edit_crd(m, |c| c["spec"]["preserveUnknownFields"] = true.into()),
            "must be None if spec.preserveUnknownFields is true",
        ),
        (
            "CRD webhook settings with strategy None, in a namespace, without kind",
            |m| {
                edit_crd(m, |c| {
                    c["spec"]["conversion"]["strategy"] = "None".into();
                    c["metadata"]["namespace"] = "default".into();
                    c["spec"]["names"] = serde_json::json!({"plural": "redisclusters"});
                })
            },
            "should not be set when strategy is not set to Webhook",
        ),
        (
            "CRD version names, deprecation warning and scale paths",
            |m| {
                edit_crd(m, |c| {
                    let version = &mut c["spec"]["versions"][1];
                    version["name"] = "V1alpha1".into();
                    version["deprecated"] = false.into();
                    version["subresources"]["scale"] = serde_json::json!({
                    "specReplicasPath": ".status.replicas", "statusReplicasPath": ".status.ready",
                    "labelSelectorPath": ".metadata.labels"});
                })
            },
            "can only be set for deprecated versions",
        ),
        (
            "v1beta1 CRD (preserveUnknownFields defaults to true)",
            |m| {
                edit_crd(m, |c| {
                    c["apiVersion"] = "apiextensions.k8s.io/v1beta1".into();
                    let spec = &mut c["spec"];
                    let versions = spec["versions"].as_array_mut().unwrap();
                    for version in versions.iter_mut() {
                        let columns = version["additionalPrinterColumns"].take();
                        version["additionalPrinterColumns"] = columns
                            .as_array()
                            .unwrap()
                            .iter()
                            .map(|col| {
                                let mut col = col.clone();
                                col["JSONPath"] = col["jsonPath"].take();
                                col
                            })
                            .collect();
                    }
                    spec["conversion"] = serde_json::json!({"strategy": "None"});
                })
            },
            "cannot set to true",
        ),
        (
            "a CRD version with a string for served",
            |m| edit_crd(m, |c| c["spec"]["versions"][0]["served"] = "yes".into()),
            "Go struct field CustomResourceDefinitionVersion.spec.versions.served of type bool",
        ),
        (
            "a CRD scope as a list",
            |m| {
                edit_crd(m, |c| {
                    c["spec"]["scope"] = serde_json::json!(["Namespaced"])
                })
            },
            "Go struct field CustomResourceDefinitionSpec.spec.scope of type v1.ResourceScope",
        ),
        (
            "maintainers of the wrong type",
            |m| {
                edit_csv(
                    m,
                    "  maintainers:\n  - email",
                    "  maintainers: {}\n  oldMaintainers:\n  - email",
                )
            },
            "Go struct field ClusterServiceVersionSpec.spec.maintainers of type []v1alpha1.Maintainer",
        ),
        (
            "a number as spec.version",
            |m| edit_csv(m, "\n  version: \"0.1.0\"\n", "\n  version: 5\n"),
            "Go struct field ClusterServiceVersionSpec.spec.version of type string",
        ),
        (
            "install modes as a string",
            |m| {
                edit_csv(
                    m,
                    "  installModes:\n",
                    "  installModes: x\n  oldInstallModes:\n",
                )
            },
            "of type []v1alpha1.InstallMode",
        ),
        (
            "a string where an install mode wants a boolean",
            |m| {
                edit_csv(
                    m,
                    "  - supported: false\n    type: OwnNamespace\n",
                    "  - supported: \"no\"\n    type: OwnNamespace\n",
                )
            },
            "Go struct field InstallMode.spec.installModes.supported of type bool",
        ),
        (
            "objects that carry metadata.namespace (namespaced and cluster-scoped kinds)",
            |m| {
                std::fs::write(
                    m.join("extra_v1_serviceaccount.yaml"),
                    "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: extra\n  namespace: redis-operator-system\n",
                )
                .unwrap();
                std::fs::write(
                    m.join("settings_v1_configmap.yaml"),
                    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: default\n  labels: {app: redis}\ndata:\n  maxmemory: 100mb\n  ratio: \"0.5\"\nbinaryData: {}\n",
                )
                .unwrap();
                std::fs::write(
                    m.join("reader_rbac.authorization.k8s.io_v1_clusterrole.yaml"),
                    "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: reader, namespace: default, generation: 3}\nrules:\n- apiGroups: [\"\"]\n  resources: [pods]\n  verbs: [get, list]\n",
                )
                .unwrap();
            },
            "metadata.namespace: Forbidden: not allowed on this type",
        ),
        (
            "an object without a name, with a bad label and a negative generation",
            |m| {
                std::fs::write(
                    m.join("nameless_v1_service.yaml"),
                    "apiVersion: v1\nkind: Service\nmetadata:\n  labels: {\"bad key\": x}\n  generation: -2\nspec:\n  ports:\n  - port: 6379\n    targetPort: 6379\n",
                )
                .unwrap();
            },
            "metadata.name: Required value: name or generateName is required",
        ),
        (
            "non-semver version",
            |m| {
                edit_csv(
                    m,
                    "\n  version: \"0.1.0\"\n",
                    "\n  version: \"not-a-version\"\n",
                )
            },
            "Short version cannot contain PreRelease/Build meta data",
        ),
    ];
    for (name, break_it, expected) in cases {
        let dir = tempfile::tempdir().unwrap();
        let bundle = dir.path().join("bundle");
        e2e::copy_dir(&e2e::corpus::redis_bundle(), &bundle).unwrap();
        break_it(&bundle.join("manifests"));
        let run = |program: &Path, args: &[&str]| {
            Command::new(program)
                .args(args)
                .arg(&bundle)
                .output()
                .unwrap()
        };
        let suite = ["--select-optional", "suite=operatorframework"];
        let theirs = run(
            &sdk,
            &[&["bundle", "validate", "-o", "json-alpha1"][..], &suite].concat(),
        );
        let ours = run(
            &e2e::bundle_tool_binary(),
            &[&["validate", "-o", "json"][..], &suite].concat(),
        );
        assert!(!theirs.status.success(), "{name}: operator-sdk accepted it");
        assert_eq!(ours.status.code(), Some(1), "{name}: our exit code");
        let (_, our_errors, _) = verdict(&ours, "bundle-tool", &bundle);
        assert!(
            our_errors.iter().any(|e| e.contains(expected)),
            "{name}: {expected:?} not in our errors {our_errors:#?}"
        );
        if theirs.stdout.is_empty() {
            // operator-sdk could not load the bundle: one fatal line on stderr.
            // logrus quotes the message, escaping its quotes.
            let fatal = String::from_utf8_lossy(&theirs.stderr).replace("\\\"", "\"");
            assert_eq!(our_errors.len(), 1, "{name}: {our_errors:#?}");
            let ours = our_errors.first().unwrap();
            let detail = ours.strip_prefix("Error: ").unwrap_or(ours);
            let detail = detail.rsplit_once(" (line ").map_or(detail, |(d, _)| d);
            assert!(fatal.contains(detail), "{name}: {detail:?} not in {fatal}");
            continue;
        }
        let (_, their_errors, _) = verdict(&theirs, "operator-sdk", &bundle);
        let theirs: BTreeSet<String> = their_errors.iter().map(|m| comparable(m)).collect();
        let ours: BTreeSet<String> = our_errors.iter().map(|m| comparable(m)).collect();
        assert_eq!(ours, theirs, "{name}: error sets differ");
    }
}

/// The Redis CSV with the field on the line starting with `key` set to `replacement`, the
/// block below it (deeper-indented or list lines) dropped.
fn replace_field(text: &str, key: &str, replacement: &str) -> Option<String> {
    let start = text.find(&format!("\n{key}"))?;
    let line_end = text[start + 1..]
        .find('\n')
        .map_or(text.len(), |e| start + 1 + e);
    let indent = key.len() - key.trim_start().len();
    let field = key.trim().trim_end_matches(':');
    let rest: Vec<&str> = text[line_end + 1..]
        .lines()
        .skip_while(|l| l.len() - l.trim_start().len() > indent || l.trim_start().starts_with("- "))
        .collect();
    Some(format!(
        "{}\n{}{field}: {replacement}\n{}\n",
        &text[..start],
        " ".repeat(indent),
        rest.join("\n")
    ))
}

/// CSV fields replaced by values of other JSON shapes: operator-sdk and bundle-tool refuse
/// to decode the same variants (Go's decoder, and sigs.k8s.io/yaml turning scalars into
/// strings for string fields), with the same message.
#[test]
fn mistyped_csv_fields_are_refused_like_operator_sdk() {
    let sdk = Assets::locate().unwrap().operator_sdk().unwrap();
    let csv_name = "redis-operator.clusterserviceversion.yaml";
    let text =
        std::fs::read_to_string(e2e::corpus::redis_bundle().join("manifests").join(csv_name))
            .unwrap();
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
    let (mut variants, mut refused) = (0, 0);
    for key in keys {
        for replacement in ["[]", "{}", "7", "null", "\"\""] {
            let broken = replace_field(&text, key, replacement).expect("key in the Redis CSV");
            let dir = tempfile::tempdir().unwrap();
            let bundle = dir.path().join("bundle");
            e2e::copy_dir(&e2e::corpus::redis_bundle(), &bundle).unwrap();
            std::fs::write(bundle.join("manifests").join(csv_name), broken).unwrap();
            let theirs = Command::new(&sdk)
                .args(["bundle", "validate"])
                .arg(&bundle)
                .output()
                .unwrap();
            let ours = Command::new(e2e::bundle_tool_binary())
                .args(["validate", "-o", "json"])
                .arg(&bundle)
                .output()
                .unwrap();
            // logrus quotes the message, escaping its quotes.
            let fatal = String::from_utf8_lossy(&theirs.stderr).replace("\\\"", "\"");
            let (_, our_errors, _) = verdict(&ours, "bundle-tool", &bundle);
            let our_refusal = our_errors
                .iter()
                .find(|e| e.contains("unable to parse CSV"));
            let variant = format!("{}: {replacement}", key.trim());
            assert_eq!(
                our_refusal.is_some(),
                fatal.contains("unable to parse CSV"),
                "{variant}: operator-sdk said {fatal}, we said {our_errors:#?}"
            );
            if let Some(ours) = our_refusal {
                let detail = ours.strip_prefix("Error: ").unwrap_or(ours);
                let detail = detail.rsplit_once(" (line ").map_or(detail, |(d, _)| d);
                assert!(
                    fatal.contains(detail),
                    "{variant}: {detail:?} not in {fatal}"
                );
                refused += 1;
            }
            variants += 1;
        }
    }
    eprintln!("{variants} mistyped CSVs: {refused} refused by both, the rest decoded by both");
    // Both outcomes must occur, or the comparison proves nothing.
    assert!(
        refused >= 20 && variants - refused >= 10,
        "{refused} of {variants} refused"
    );
}

/// The `disconnected` validator (ours): on the Redis bundle, whose CSV names its images by
/// tag, one warning per image named by tag (counted from the CSV itself), the verdict still a
/// pass. operator-sdk has no such check: with every validator of `suite=operatorframework`
/// selected, none of its warnings is about an image's tag or digest; docs/conformance.md
/// says so.
#[test]
fn the_disconnected_validator_warns_of_every_tag_where_operator_sdk_says_nothing() {
    let bundle = Path::new(env!("CARGO_MANIFEST_DIR")).join("../bundle");
    let csv_text =
        std::fs::read_to_string(bundle.join("manifests/redis-operator.clusterserviceversion.yaml"))
            .unwrap();
    let csv: Value = serde_saphyr::from_str(&csv_text).unwrap();
    let mut tagged = Vec::new();
    for related in csv["spec"]["relatedImages"].as_array().unwrap() {
        tagged.push(related["image"].as_str().unwrap().to_string());
    }
    for deployment in csv["spec"]["install"]["spec"]["deployments"]
        .as_array()
        .unwrap()
    {
        for kind in ["initContainers", "containers"] {
            for container in deployment["spec"]["template"]["spec"][kind]
                .as_array()
                .into_iter()
                .flatten()
            {
                tagged.push(container["image"].as_str().unwrap().to_string());
            }
        }
    }
    tagged.retain(|image| !image.contains("@sha256:"));
    assert!(
        tagged.len() >= 5,
        "the Redis CSV no longer names its images by tag: {tagged:?}"
    );

    let ours = Command::new(e2e::bundle_tool_binary())
        .args([
            "validate",
            "--select-optional",
            "name=disconnected",
            "-o",
            "json",
        ])
        .arg(&bundle)
        .output()
        .unwrap();
    let (pass, errors, warnings) = verdict(&ours, "bundle-tool", &bundle);
    assert!(pass && errors.is_empty(), "{errors:#?}");
    let by_tag: Vec<&String> = warnings
        .iter()
        .filter(|w| w.contains("by tag, not by digest"))
        .collect();
    assert_eq!(
        by_tag.len(),
        tagged.len(),
        "{by_tag:#?}\nexpected one for each of {tagged:#?}"
    );
    for image in &tagged {
        assert!(
            by_tag.iter().any(|w| w.contains(&format!("{image:?}"))),
            "no warning names {image}: {by_tag:#?}"
        );
    }

    let sdk = Assets::locate().unwrap().operator_sdk().unwrap();
    let theirs = Command::new(&sdk)
        .args([
            "bundle",
            "validate",
            "--select-optional",
            "suite=operatorframework",
            "-o",
            "json-alpha1",
        ])
        .arg(&bundle)
        .output()
        .unwrap();
    let (their_pass, _, their_warnings) = verdict(&theirs, "operator-sdk", &bundle);
    assert!(
        their_pass,
        "operator-sdk fails the Redis bundle: {their_warnings:#?}"
    );
    assert!(
        !their_warnings.is_empty(),
        "operator-sdk printed no warning at all"
    );
    for warning in &their_warnings {
        assert!(
            !tagged.iter().any(|image| warning.contains(image.as_str()))
                && !warning.to_lowercase().contains("digest"),
            "operator-sdk warns about an image's tag after all: {warning}"
        );
    }
}
