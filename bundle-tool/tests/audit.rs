//! `bundle-tool audit` on hand-made bundles: a ladder of bundles that each reach exactly one
//! level (evidence of levels 1..=N only), bundles that claim more than they show, and the
//! Redis operator's own bundle, whose declared level must be met by evidence.

mod audit {
    use std::path::{Path, PathBuf};
    use std::process::Command;

    use bundle_tool::audit::{self, AuditTarget, LevelStatus, Outcome};
    use serde_json::{Value, json};

    fn fixture(name: &str) -> Value {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/audit")
            .join(name);
        let text = std::fs::read_to_string(&path).expect("fixture");
        serde_saphyr::from_str(&text).expect("fixture YAML")
    }

    /// A demo bundle: the CSV and CRD fixtures plus the evidence of levels 2..=`level`.
    struct DemoBundle {
        csv: Value,
        crd: Value,
        extra: Vec<(String, Value)>,
    }

    fn push_rule(csv: &mut Value, rule: Value) {
        csv["spec"]["install"]["spec"]["clusterPermissions"][0]["rules"]
            .as_array_mut()
            .expect("rules")
            .push(rule);
    }

    impl DemoBundle {
        fn level_1() -> Self {
            DemoBundle {
                csv: fixture("csv.yaml"),
                crd: fixture("crd.yaml"),
                extra: Vec::new(),
            }
        }

        /// Adds one level's evidence (and nothing of other levels).
        fn add_evidence(&mut self, level: u8) {
            let csv = &mut self.csv;
            match level {
                2 => {
                    csv["spec"]["replaces"] = json!("demo-operator.v0.1.0");
                    self.crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
                        ["properties"]["version"] = json!({"type": "string"});
                }
                3 => {
                    let container = &mut csv["spec"]["install"]["spec"]["deployments"][0]["spec"]["template"]
                        ["spec"]["containers"][0];
                    container["livenessProbe"] =
                        json!({"httpGet": {"path": "/healthz", "port": 8080}});
                    container["readinessProbe"] =
                        json!({"httpGet": {"path": "/readyz", "port": 8080}});
                    container["resources"] = json!({"requests": {"cpu": "10m", "memory": "32Mi"}});
                    push_rule(
                        csv,
                        json!({"apiGroups": ["policy"], "resources": ["poddisruptionbudgets"], "verbs": ["get", "create", "patch"]}),
                    );
                    push_rule(
                        csv,
                        json!({"apiGroups": ["demo.example.com"], "resources": ["demos/finalizers"], "verbs": ["update"]}),
                    );
                }
                4 => {
                    push_rule(
                        csv,
                        json!({"apiGroups": [""], "resources": ["events"], "verbs": ["create", "patch"]}),
                    );
                    csv["spec"]["customresourcedefinitions"]["owned"][0]["statusDescriptors"]
                        .as_array_mut()
                        .expect("descriptors")
                        .push(json!({"path": "conditions", "displayName": "Conditions", "x-descriptors": ["urn:alm:descriptor:io.kubernetes.conditions"]}));
                    self.extra.push((
                        "demo-operator-metrics_v1_service.yaml".into(),
                        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "demo-operator-metrics"},
                               "spec": {"selector": {"app": "demo-operator"}, "ports": [{"name": "metrics", "port": 8080}]}}),
                    ));
                }
                5 => {
                    push_rule(
                        csv,
                        json!({"apiGroups": ["autoscaling"], "resources": ["horizontalpodautoscalers"], "verbs": ["get", "create", "patch"]}),
                    );
                    push_rule(
                        csv,
                        json!({"apiGroups": ["metrics.k8s.io"], "resources": ["pods"], "verbs": ["get", "list"]}),
                    );
                }
                _ => unreachable!("levels 2 to 5"),
            }
        }

        fn declare(&mut self, annotation: &str) {
            self.csv["metadata"]["annotations"]["capabilities"] = json!(annotation);
        }

        fn write(&self, dir: &Path) -> PathBuf {
            let manifests = dir.join("manifests");
            std::fs::create_dir_all(&manifests).expect("mkdir");
            std::fs::create_dir_all(dir.join("metadata")).expect("mkdir");
            let write = |name: &str, value: &Value| {
                std::fs::write(
                    manifests.join(name),
                    serde_json::to_string_pretty(value).expect("json"),
                )
                .expect("write")
            };
            write("demo-operator.clusterserviceversion.yaml", &self.csv);
            write("demos.demo.example.com.crd.yaml", &self.crd);
            for (name, value) in &self.extra {
                write(name, value);
            }
            std::fs::copy(
                Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/audit/annotations.yaml"),
                dir.join("metadata/annotations.yaml"),
            )
            .expect("copy");
            dir.to_path_buf()
        }
    }

    fn audit_dir(dir: &Path) -> audit::BundleAudit {
        let target = AuditTarget::Folder {
            package: None,
            dir: dir.to_path_buf(),
            source: dir.display().to_string(),
        };
        let evidence =
            audit::gather(&target).unwrap_or_else(|e| panic!("{}: {}", e.source, e.message));
        audit::assess(&evidence)
    }

    fn reached(audit: &audit::BundleAudit) -> Vec<u8> {
        audit
            .levels
            .iter()
            .filter(|l| l.status == LevelStatus::Reached)
            .map(|l| l.level)
            .collect()
    }

    #[test]
    fn audit_ladder_each_bundle_reaches_exactly_its_level() {
        let names = [
            "Basic Install",
            "Seamless Upgrades",
            "Full Lifecycle",
            "Deep Insights",
            "Auto Pilot",
        ];
        let mut bundle = DemoBundle::level_1();
        for level in 1..=5u8 {
            if level > 1 {
                bundle.add_evidence(level);
            }
            bundle.declare(names[usize::from(level) - 1]);
            let dir = tempfile::tempdir().expect("tempdir");
            let result = audit_dir(&bundle.write(dir.path()));
            assert_eq!(
                reached(&result),
                (1..=level).collect::<Vec<_>>(),
                "level-{level} bundle: {:#?}",
                result.criteria
            );
            assert_eq!(result.cumulative_level, level);
            assert_eq!(result.independent_level, level);
            assert_eq!(
                result.declared.declared_level_met,
                Some(true),
                "{}",
                result.declared.gap
            );
        }
    }

    #[test]
    fn audit_levels_are_also_reached_independently() {
        // Level 3 evidence without an upgrade edge (level 2): reached on its own, and the
        // cumulative reading stops at level 1.
        let mut bundle = DemoBundle::level_1();
        bundle.add_evidence(3);
        bundle.declare("Full Lifecycle");
        let dir = tempfile::tempdir().expect("tempdir");
        let result = audit_dir(&bundle.write(dir.path()));
        assert_eq!(reached(&result), vec![1, 3]);
        assert_eq!((result.cumulative_level, result.independent_level), (1, 3));
        assert_eq!(result.declared.declared_level_met, Some(true));
        assert!(
            result.declared.gap.contains("cumulatively only level 1"),
            "{}",
            result.declared.gap
        );
    }

    #[test]
    fn audit_bundles_claiming_more_than_they_show() {
        for (claim, level, missing) in [
            (
                "Deep Insights",
                4u8,
                [
                    "L4.metrics-endpoint",
                    "L4.events",
                    "L4.condition-descriptors",
                ]
                .as_slice(),
            ),
            ("Auto Pilot", 5, ["L5.autoscaling"].as_slice()),
            (
                "Full Lifecycle",
                3,
                [
                    "L3.probes",
                    "L3.pod-disruption-budget",
                    "L3.resource-requests",
                ]
                .as_slice(),
            ),
        ] {
            let mut bundle = DemoBundle::level_1();
            bundle.add_evidence(2);
            bundle.declare(claim);
            let dir = tempfile::tempdir().expect("tempdir");
            let result = audit_dir(&bundle.write(dir.path()));
            assert_eq!(result.declared.declared, Some(level));
            assert_eq!(result.declared.declared_level_met, Some(false), "{claim}");
            for id in missing {
                assert!(
                    result.declared.gap.contains(id),
                    "{claim}: {} lacks {id}",
                    result.declared.gap
                );
            }
            assert_eq!(result.independent_level, 2);
        }
    }

    #[test]
    fn audit_invalid_or_missing_annotation_is_no_claim() {
        let mut bundle = DemoBundle::level_1();
        bundle.declare("Level 9");
        let dir = tempfile::tempdir().expect("tempdir");
        let result = audit_dir(&bundle.write(dir.path()));
        assert_eq!(result.declared.declared, None);
        assert!(
            result.declared.gap.contains("not one of OLM's five"),
            "{}",
            result.declared.gap
        );
    }

    #[test]
    fn audit_broken_bundle_fails_level_one() {
        let mut bundle = DemoBundle::level_1();
        // Owned API without its CRD in manifests/: the validators reject the bundle.
        bundle.csv["spec"]["customresourcedefinitions"]["owned"]
            .as_array_mut()
            .expect("owned")
            .push(json!({"name": "others.demo.example.com", "version": "v1", "kind": "Other"}));
        let dir = tempfile::tempdir().expect("tempdir");
        let result = audit_dir(&bundle.write(dir.path()));
        let valid = result
            .criteria
            .iter()
            .find(|c| c.id == "L1.bundle-valid")
            .expect("criterion");
        assert_eq!(valid.outcome, Outcome::Fail, "{}", valid.detail);
        assert_eq!(result.cumulative_level, 0);
    }

    fn redis_bundle() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../bundle")
    }

    #[test]
    fn audit_redis_operator_meets_its_declared_level() {
        let result = audit_dir(&redis_bundle());
        let declared = result
            .declared
            .declared
            .expect("the Redis CSV declares a valid level");
        assert_eq!(
            result.declared.declared_level_met,
            Some(true),
            "the Redis operator declares level {declared} but the evidence does not show it: {}",
            result.declared.gap
        );
        assert!(result.independent_level >= declared);
    }

    fn bundle_tool(args: &[&str]) -> (i32, String, String) {
        let output = Command::new(env!("CARGO_BIN_EXE_bundle-tool"))
            .args(args)
            .output()
            .expect("run bundle-tool");
        (
            output.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&output.stdout).into_owned(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    }

    #[test]
    fn audit_cli_min_level_sets_the_exit_code() {
        let bundle = redis_bundle();
        let bundle = bundle.to_str().expect("utf-8");
        let (code, _, stderr) = bundle_tool(&["audit", bundle, "--min-level", "3"]);
        assert_eq!(code, 0, "{stderr}");
        let (code, _, stderr) = bundle_tool(&["audit", bundle, "--min-level", "5"]);
        assert_eq!(code, 1);
        assert!(stderr.contains("below --min-level 5"), "{stderr}");
        let (code, _, stderr) = bundle_tool(&["audit", "./no/such/folder"]);
        assert_eq!(code, 1);
        assert!(stderr.contains("no/such/folder"), "{stderr}");
    }

    #[test]
    fn audit_cli_json_follows_the_documented_schema() {
        let bundle = redis_bundle();
        let (code, stdout, stderr) =
            bundle_tool(&["audit", bundle.to_str().expect("utf-8"), "-o", "json"]);
        assert_eq!(code, 0, "{stderr}");
        let report: Value = serde_json::from_str(&stdout).expect("JSON");
        assert_eq!(report["schemaVersion"], 1);
        assert_eq!(report["summary"]["bundles"], 1);
        let bundle = &report["bundles"][0];
        for key in [
            "package",
            "bundle",
            "version",
            "source",
            "evidenceKind",
            "live",
            "declared",
            "cumulativeLevel",
            "independentLevel",
            "levels",
            "criteria",
        ] {
            assert!(!bundle[key].is_null(), "bundles[0].{key} missing");
        }
        assert_eq!(bundle["package"], "redis-operator");
        assert_eq!(bundle["levels"].as_array().map(Vec::len), Some(5));
        assert_eq!(
            bundle["criteria"].as_array().map(Vec::len),
            Some(audit::CRITERIA.len())
        );
        let first = &bundle["criteria"][0];
        for key in ["id", "level", "requirement", "title", "outcome", "detail"] {
            assert!(!first[key].is_null(), "criteria[0].{key} missing");
        }
        let (code, markdown, _) = bundle_tool(&["audit", bundle_path_str(), "-o", "md"]);
        assert_eq!(code, 0);
        assert!(
            markdown.contains("| redis-operator | 0.1.0 |"),
            "{markdown}"
        );
    }

    fn bundle_path_str() -> &'static str {
        concat!(env!("CARGO_MANIFEST_DIR"), "/../bundle")
    }
}
