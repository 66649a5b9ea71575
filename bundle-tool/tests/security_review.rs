//! The security review of `bundle-tool audit` end to end: the Redis operator's own bundle
//! (its real findings and `--max-risk` exit codes), a copy of it made unsafe, and every
//! corpus bundle reviewed without error, with the summary in docs/security-review.md still
//! the one the tool gives.

mod security_review {
    use std::path::{Path, PathBuf};
    use std::process::Command;

    use bundle_tool::audit::security::RULES;
    use bundle_tool::audit::{self, AuditReport, report, source};
    use serde_json::{Value, json};

    fn workspace() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
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

    fn security_of(dir: &Path) -> Value {
        let (code, stdout, stderr) =
            bundle_tool(&["audit", dir.to_str().expect("utf-8"), "-o", "json"]);
        assert_eq!(code, 0, "{stderr}");
        let report: Value = serde_json::from_str(&stdout).expect("JSON");
        report["bundles"][0]["security"].clone()
    }

    #[test]
    fn the_redis_bundle_reads_secrets_cluster_wide_and_nothing_else() {
        let security = security_of(&workspace().join("bundle"));
        assert_eq!(security["reviewed"], true);
        let findings = security["findings"].as_array().expect("findings");
        let rules: Vec<&str> = findings.iter().filter_map(|f| f["rule"].as_str()).collect();
        // The password Secret is named by each RedisCluster, in any namespace (AllNamespaces),
        // so `get` on secrets is cluster-wide; docs/security-review.md explains it.
        assert_eq!(rules, ["rbac-secrets-read"], "{findings:#?}");
        assert_eq!(findings[0]["risk"], "high");
        assert_eq!(
            findings[0]["subject"],
            "ServiceAccount redis-operator (clusterPermissions)"
        );
        let evidence: Value =
            serde_json::from_str(findings[0]["evidence"].as_str().expect("text")).expect("a rule");
        assert_eq!(evidence["resources"], json!(["secrets"]));
        assert_eq!(security["risk"], "high");
        assert_eq!(security["counts"]["high"], 1);
    }

    #[test]
    fn max_risk_fails_on_findings_above_it_and_names_them() {
        let bundle = workspace().join("bundle");
        let bundle = bundle.to_str().expect("utf-8");
        for (max, expected) in [("low", 1), ("medium", 1), ("high", 0), ("critical", 0)] {
            let (code, _, stderr) = bundle_tool(&["audit", bundle, "--max-risk", max]);
            assert_eq!(code, expected, "--max-risk {max}: {stderr}");
            if expected == 1 {
                assert!(
                    stderr.contains(&format!(
                        "high rbac-secrets-read above --max-risk {max}: ServiceAccount redis-operator"
                    )),
                    "{stderr}"
                );
            }
        }
        let (code, _, stderr) = bundle_tool(&["audit", bundle, "--max-risk", "severe"]);
        assert_eq!(code, 2, "{stderr}");
    }

    /// The Redis bundle copied with a privileged, host-network container and a wildcard role.
    fn unsafe_copy(dir: &Path) {
        let from = workspace().join("bundle");
        for sub in ["manifests", "metadata"] {
            std::fs::create_dir_all(dir.join(sub)).expect("mkdir");
            for entry in std::fs::read_dir(from.join(sub)).expect("read_dir") {
                let path = entry.expect("entry").path();
                let name = path.file_name().expect("name");
                std::fs::copy(&path, dir.join(sub).join(name)).expect("copy");
            }
        }
        let csv_path = dir.join("manifests/redis-operator.clusterserviceversion.yaml");
        let mut csv: Value =
            serde_saphyr::from_str(&std::fs::read_to_string(&csv_path).expect("CSV"))
                .expect("CSV YAML");
        let install = &mut csv["spec"]["install"]["spec"];
        install["clusterPermissions"][0]["rules"]
            .as_array_mut()
            .expect("rules")
            .push(json!({"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}));
        let pod = &mut install["deployments"][0]["spec"]["template"]["spec"];
        pod["hostNetwork"] = json!(true);
        pod["containers"][0]["securityContext"]["privileged"] = json!(true);
        std::fs::write(&csv_path, serde_json::to_string_pretty(&csv).expect("JSON"))
            .expect("write");
    }

    #[test]
    fn an_unsafe_bundle_is_critical_in_every_format() {
        let dir = tempfile::tempdir().expect("tempdir");
        unsafe_copy(dir.path());
        let security = security_of(dir.path());
        assert_eq!(security["risk"], "critical");
        let rules: Vec<&str> = security["findings"]
            .as_array()
            .expect("findings")
            .iter()
            .filter_map(|f| f["rule"].as_str())
            .collect();
        for rule in [
            "rbac-wildcard-all",
            "container-privileged",
            "pod-host-network",
        ] {
            assert!(rules.contains(&rule), "{rule} missing from {rules:?}");
        }
        let path = dir.path().to_str().expect("utf-8");
        for format in ["text", "md", "html"] {
            let (code, out, stderr) = bundle_tool(&["audit", path, "-o", format]);
            assert_eq!(code, 0, "{stderr}");
            for needle in [
                "container-privileged",
                "spec.template.spec.hostNetwork = true",
            ] {
                assert!(out.contains(needle), "-o {format} lacks {needle}");
            }
        }
        let (code, _, stderr) = bundle_tool(&["audit", path, "--max-risk", "high"]);
        assert_eq!(code, 1);
        assert!(stderr.contains("critical rbac-wildcard-all"), "{stderr}");
        assert!(stderr.contains("critical container-privileged"), "{stderr}");
    }

    fn corpus() -> PathBuf {
        workspace().join("../shared/corpus/bundles")
    }

    /// The Markdown report's security summary: from its heading to the findings line.
    fn security_summary(markdown: &str) -> String {
        markdown
            .lines()
            .skip_while(|l| *l != "### Security review")
            .skip(1)
            .skip_while(|l| l.is_empty())
            .take_while(|l| !l.starts_with("<details>"))
            .map(|l| format!("{l}\n"))
            .collect::<String>()
            .trim()
            .to_string()
    }

    #[test]
    fn every_corpus_bundle_is_reviewed_and_the_documented_summary_holds() {
        let root = corpus();
        assert!(
            root.is_dir(),
            "{} is missing: the shared corpus sits beside the workspace",
            root.display()
        );
        let targets = source::targets_in(&root, false).expect("targets");
        let (bundles, errors) = audit::audit_targets(&targets, 2, &|| {}, &|_| {});
        assert!(errors.is_empty(), "{errors:#?}");
        assert_eq!(bundles.len(), targets.len());
        for audit in &bundles {
            assert!(audit.security.reviewed, "{}", audit.source);
            for finding in &audit.security.findings {
                assert!(
                    RULES.iter().any(|r| r.id == finding.rule),
                    "{}: undocumented rule {}",
                    audit.source,
                    finding.rule
                );
                assert!(!finding.subject.is_empty() && !finding.evidence.is_empty());
            }
            let highest = audit.security.findings.iter().map(|f| f.risk).max();
            assert_eq!(audit.security.risk, highest, "{}", audit.source);
        }
        let report = AuditReport::new("../shared/corpus/bundles".into(), bundles, errors);
        let summary = security_summary(&report::markdown::render(&report));
        assert!(
            summary.contains("| rule | findings | bundles |"),
            "{summary}"
        );
        let doc = std::fs::read_to_string(workspace().join("docs/security-review.md"))
            .expect("docs/security-review.md");
        assert!(
            doc.contains(&summary),
            "docs/security-review.md's corpus summary is out of date; it is now:\n{summary}"
        );
    }

    #[test]
    fn every_rule_is_in_the_grading_table() {
        let doc = std::fs::read_to_string(workspace().join("docs/security-review.md"))
            .expect("docs/security-review.md");
        for rule in RULES {
            assert!(
                doc.contains(&format!("| `{}` |", rule.id)),
                "docs/security-review.md does not grade {}",
                rule.id
            );
        }
    }
}
