//! The command line itself: completions and man pages come from the clap definitions, every
//! verb's `--help` shows examples, and the exit codes are the documented ones.

use std::process::{Command, Output};

fn bundle_tool(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_bundle-tool"))
        .args(args)
        .output()
        .expect("run bundle-tool")
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[test]
fn completions_for_each_shell_name_every_verb() {
    for shell in ["bash", "zsh", "fish"] {
        let output = bundle_tool(&["completions", shell]);
        assert_eq!(output.status.code(), Some(0), "{shell}");
        let script = stdout(&output);
        for verb in [
            "generate", "validate", "push-all", "catalog", "render", "serve",
        ] {
            assert!(script.contains(verb), "{shell} completions lack {verb}");
        }
    }
    // An unknown shell is a usage error.
    assert_eq!(bundle_tool(&["completions", "tcsh"]).status.code(), Some(2));
}

#[test]
fn man_page_is_roff_and_one_page_per_verb_can_be_written() {
    let output = bundle_tool(&["man"]);
    assert_eq!(output.status.code(), Some(0));
    let page = stdout(&output);
    assert!(page.starts_with(".ie"), "{}", &page[..page.len().min(200)]);
    assert!(page.contains(".TH bundle-tool 1"), "no title line");
    let dir = tempfile::tempdir().expect("tempdir");
    let dir_arg = dir.path().to_str().expect("utf-8 path");
    assert_eq!(
        bundle_tool(&["man", "--dir", dir_arg]).status.code(),
        Some(0)
    );
    for page in [
        "bundle-tool.1",
        "bundle-tool-validate.1",
        "bundle-tool-catalog-render.1",
    ] {
        assert!(dir.path().join(page).is_file(), "{page} not written");
    }
}

#[test]
fn every_verb_help_has_examples() {
    let verbs: &[&[&str]] = &[
        &["generate"],
        &["init"],
        &["serve"],
        &["validate"],
        &["build"],
        &["push"],
        &["push-all"],
        &["pull"],
        &["inspect"],
        &["catalog"],
        &["catalog", "validate"],
        &["catalog", "render"],
        &["catalog", "template"],
        &["catalog", "add"],
        &["catalog", "deprecate"],
        &["catalog", "graph"],
        &["catalog", "check-upgrades"],
        &["check-upgrade"],
        &["objects"],
        &["audit"],
        &["completions"],
        &["man"],
    ];
    for verb in verbs {
        let mut args = verb.to_vec();
        args.push("--help");
        let output = bundle_tool(&args);
        assert_eq!(output.status.code(), Some(0), "{verb:?}");
        let help = stdout(&output);
        assert!(
            help.contains("Examples:\n  bundle-tool ") || help.contains("Examples:\n  redis-"),
            "{verb:?} --help has no examples:\n{help}"
        );
    }
}

#[test]
fn a_missing_path_is_reported_as_missing_by_every_verb() {
    let cases: &[&[&str]] = &[
        &["validate", "/nonexistent"],
        &["catalog", "render", "/nonexistent"],
        &["audit", "/nonexistent"],
        &["push", "/nonexistent", "127.0.0.1:5000/x:y", "--plain-http"],
        &["catalog", "add", "/tmp", "/nonexistent", "--channels", "a"],
    ];
    for args in cases {
        let output = bundle_tool(args);
        assert_eq!(output.status.code(), Some(1), "{args:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stderr.contains(
                "/nonexistent: no such file or folder, and not an image reference either (invalid reference format)"
            ),
            "{args:?}: {stderr}"
        );
    }
}
