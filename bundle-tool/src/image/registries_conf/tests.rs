use std::path::PathBuf;

use super::{ConfFiles, RegistriesConf, RegistriesConfError};
use crate::image::parse_reference;

const DIGEST: &str = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

/// A configuration of one main file with `text`, no drop-ins.
fn conf(text: &str) -> Result<RegistriesConf, RegistriesConfError> {
    let dir = tempfile::tempdir().expect("temp dir");
    let main = dir.path().join("registries.conf");
    std::fs::write(&main, text).expect("write");
    RegistriesConf::read(&ConfFiles {
        main,
        main_required: true,
        drop_in_folders: Vec::new(),
    })
}

/// Where `reference` is pulled from, in order: (reference, insecure, mirror).
fn sources(conf: &RegistriesConf, reference: &str) -> Vec<(String, bool, bool)> {
    conf.pull_sources(&parse_reference(reference).expect("a reference"))
        .expect("sources")
        .into_iter()
        .map(|s| (s.reference.whole(), s.insecure, s.mirror))
        .collect()
}

#[test]
fn mirrors_come_first_then_the_registry_and_the_longest_prefix_wins() {
    let conf = conf(
        r#"
unqualified-search-registries = ["quay.io"]

[[registry]]
location = "quay.io"
[[registry.mirror]]
location = "mirror.example:5000/quay"
[[registry.mirror]]
location = "127.0.0.1:5001"
insecure = true

[[registry]]
prefix = "quay.io/team"
location = "registry.corp/team-images"

[aliases]
"redis" = "docker.io/library/redis"
"#,
    )
    .expect("a valid file");
    assert_eq!(
        sources(&conf, "quay.io/me/bundle:0.1.0"),
        [
            (
                "mirror.example:5000/quay/me/bundle:0.1.0".into(),
                false,
                true
            ),
            ("127.0.0.1:5001/me/bundle:0.1.0".into(), true, true),
            ("quay.io/me/bundle:0.1.0".into(), false, false),
        ]
    );
    // quay.io/team is longer than quay.io: moved, and without quay.io's mirrors.
    assert_eq!(
        sources(&conf, "quay.io/team/op:1"),
        [("registry.corp/team-images/op:1".into(), false, false)]
    );
    // `quay.io/teammate` is not under the prefix `quay.io/team`.
    assert_eq!(sources(&conf, "quay.io/teammate/op:1").len(), 3);
    // No table: the reference itself.
    assert_eq!(
        sources(&conf, "ghcr.io/me/op:1"),
        [("ghcr.io/me/op:1".into(), false, false)]
    );
}

#[test]
fn digest_only_and_tag_only_mirrors_serve_their_kind_of_reference() {
    let conf = conf(
        r#"
[[registry]]
location = "quay.io"
[[registry.mirror]]
location = "by-digest.example"
pull-from-mirror = "digest-only"
[[registry.mirror]]
location = "by-tag.example"
pull-from-mirror = "tag-only"

[[registry]]
location = "registry.redhat.io"
mirror-by-digest-only = true
[[registry.mirror]]
location = "mirror.example/rh"
"#,
    )
    .expect("a valid file");
    let by_digest = format!("quay.io/me/op@{DIGEST}");
    let hosts = |reference: &str| -> Vec<String> {
        sources(&conf, reference)
            .into_iter()
            .map(|(r, _, _)| r.split('/').next().unwrap_or_default().to_string())
            .collect()
    };
    assert_eq!(hosts(&by_digest), ["by-digest.example", "quay.io"]);
    assert_eq!(hosts("quay.io/me/op:1"), ["by-tag.example", "quay.io"]);
    assert_eq!(
        sources(&conf, &format!("registry.redhat.io/ubi9/ubi@{DIGEST}"))[0].0,
        format!("mirror.example/rh/ubi9/ubi@{DIGEST}")
    );
    assert_eq!(
        hosts("registry.redhat.io/ubi9/ubi:9"),
        ["registry.redhat.io"]
    );
}

#[test]
fn a_wildcard_prefix_matches_subdomains_only_in_the_registry_part() {
    let conf = conf(
        r#"
[[registry]]
prefix = "*.corp.example"
blocked = true

[[registry]]
prefix = "*.mirrored.example"
[[registry.mirror]]
location = "mirror.example"
"#,
    )
    .expect("a valid file");
    let blocked = conf
        .pull_sources(&parse_reference("a.b.corp.example/x:1").unwrap())
        .expect_err("blocked");
    assert!(
        blocked
            .to_string()
            .starts_with("registry *.corp.example is blocked in "),
        "{blocked}"
    );
    // The bare domain, and the domain in a path, are not matched.
    assert_eq!(sources(&conf, "corp.example/x:1").len(), 1);
    assert_eq!(sources(&conf, "quay.io/a.corp.example/x:1").len(), 1);
    // No location: the name unchanged, after the mirror.
    assert_eq!(
        sources(&conf, "eu.mirrored.example/x:1"),
        [
            ("mirror.example/x:1".into(), false, true),
            ("eu.mirrored.example/x:1".into(), false, false),
        ]
    );
}

#[test]
fn the_first_format_blocks_and_allows_insecure_registries() {
    let conf = conf(
        r#"
[registries.search]
registries = ["quay.io"]
[registries.insecure]
registries = ["lab.example:5000"]
[registries.block]
registries = ["docker.io"]
"#,
    )
    .expect("a v1 main file");
    assert!(matches!(
        conf.pull_sources(&parse_reference("redis:7").unwrap()),
        Err(RegistriesConfError::Blocked { .. })
    ));
    assert_eq!(
        sources(&conf, "lab.example:5000/x:1"),
        [("lab.example:5000/x:1".into(), true, false)]
    );
}

#[test]
fn each_broken_rule_is_refused_naming_the_file() {
    for (text, expected) in [
        (
            "[[registry]]\nlocation = \"https://quay.io\"\n",
            "no URL scheme",
        ),
        (
            "[[registry]]\ninsecure = true\n",
            "neither prefix nor location",
        ),
        (
            "[[registry]]\nprefix = \"quay.io/x\"\n",
            "has no location (only a *.example.com prefix",
        ),
        (
            "[[registry]]\nprefix = \"*.example.com/x\"\n",
            "only *.example.com is allowed",
        ),
        (
            "[[registry]]\nlocation = \"quay.io\"\npull-from-mirror = \"all\"\n",
            "belongs in a [[registry.mirror]] table",
        ),
        (
            "[[registry]]\nlocation = \"quay.io\"\n[[registry.mirror]]\ninsecure = true\n",
            "a mirror has no location",
        ),
        (
            "[[registry]]\nlocation = \"quay.io\"\nmirror-by-digest-only = true\n[[registry.mirror]]\nlocation = \"m.example\"\npull-from-mirror = \"all\"\n",
            "cannot both be set",
        ),
        (
            "[[registry]]\nlocation = \"quay.io\"\n[[registry.mirror]]\nlocation = \"m.example\"\npull-from-mirror = \"sometimes\"\n",
            "is not one of all, digest-only, tag-only",
        ),
        (
            "[[registry]]\nlocation = \"quay.io\"\n[[registry]]\nprefix = \"quay.io/x\"\nlocation = \"quay.io\"\ninsecure = true\n",
            "defined more than once with different \"insecure\"",
        ),
        (
            "[registries.block]\nregistries = [\"a.example\"]\n[[registry]]\nlocation = \"quay.io\"\n",
            "mixes the v1 format",
        ),
    ] {
        let error = conf(text).expect_err(text).to_string();
        assert!(
            error.starts_with("registries configuration /") && error.contains("registries.conf: "),
            "{error}"
        );
        assert!(error.contains(expected), "{text}\n=> {error}");
    }
}

#[test]
fn a_syntax_error_names_the_file_and_line() {
    let error = conf("[[registry]]\nlocation = \"quay.io\"\ninsecure = maybe\n")
        .expect_err("not TOML")
        .to_string();
    assert!(error.contains("registries.conf: "), "{error}");
    assert!(error.contains("line 3"), "{error}");
}

#[test]
fn drop_ins_replace_tables_of_the_same_prefix_in_name_order() {
    let dir = tempfile::tempdir().expect("temp dir");
    let main = dir.path().join("registries.conf");
    std::fs::write(
        &main,
        "[[registry]]\nlocation = \"quay.io\"\n[[registry.mirror]]\nlocation = \"old.example\"\n",
    )
    .unwrap();
    let folder = dir.path().join("registries.conf.d");
    std::fs::create_dir(&folder).unwrap();
    std::fs::write(
        folder.join("20-new.conf"),
        "[[registry]]\nlocation = \"quay.io\"\n[[registry.mirror]]\nlocation = \"new.example\"\n",
    )
    .unwrap();
    std::fs::write(
        folder.join("10-other.conf"),
        "[[registry]]\nlocation = \"quay.io\"\nblocked = true\n",
    )
    .unwrap();
    // Not a .conf file: not read.
    std::fs::write(folder.join("99.conf.bak"), "not toml [").unwrap();
    let conf = RegistriesConf::read(&ConfFiles {
        main: main.clone(),
        main_required: true,
        drop_in_folders: vec![folder.clone(), dir.path().join("missing.d")],
    })
    .expect("valid files");
    assert_eq!(
        sources(&conf, "quay.io/x:1")[0].0,
        "new.example/x:1",
        "20-new.conf is read after 10-other.conf"
    );
    // A drop-in in the first format is refused.
    std::fs::write(
        folder.join("30-v1.conf"),
        "[registries.block]\nregistries = [\"a.example\"]\n",
    )
    .unwrap();
    let error = RegistriesConf::read(&ConfFiles {
        main,
        main_required: true,
        drop_in_folders: vec![folder],
    })
    .expect_err("v1 drop-in")
    .to_string();
    assert!(
        error.contains("30-v1.conf: a drop-in file must be in the v2"),
        "{error}"
    );
}

#[test]
fn a_missing_file_is_empty_unless_it_was_named() {
    let dir = tempfile::tempdir().expect("temp dir");
    let missing = dir.path().join("nowhere.conf");
    let implicit = RegistriesConf::read(&ConfFiles {
        main: missing.clone(),
        main_required: false,
        drop_in_folders: Vec::new(),
    })
    .expect("missing standard file");
    assert_eq!(sources(&implicit, "quay.io/x:1").len(), 1);
    let named = RegistriesConf::read(&ConfFiles {
        main: missing.clone(),
        main_required: true,
        drop_in_folders: Vec::new(),
    })
    .expect_err("a named file must exist");
    assert!(
        named
            .to_string()
            .starts_with(&format!("registries configuration {}: ", missing.display())),
        "{named}"
    );
}

#[test]
fn the_files_are_chosen_as_containers_image_chooses_them() {
    let root = tempfile::tempdir().expect("temp dir");
    let home = root.path().join("home");
    let system_file = root.path().join("etc/containers/registries.conf");
    let system_drop_ins = root.path().join("etc/containers/registries.conf.d");
    let user_drop_ins = home.join(".config/containers/registries.conf.d");
    let explicit = PathBuf::from("/given/registries.conf");
    // Named: required, both drop-in folders still read.
    assert_eq!(
        ConfFiles::choose(Some(explicit.clone()), Some(&home), root.path()),
        ConfFiles {
            main: explicit,
            main_required: true,
            drop_in_folders: vec![system_drop_ins.clone(), user_drop_ins.clone()],
        }
    );
    // Nothing named, no user file: the system file, both folders.
    assert_eq!(
        ConfFiles::choose(None, Some(&home), root.path()),
        ConfFiles {
            main: system_file,
            main_required: false,
            drop_in_folders: vec![system_drop_ins, user_drop_ins.clone()],
        }
    );
    // A user file: it alone, with the user's folder only.
    let user_file = home.join(".config/containers/registries.conf");
    std::fs::create_dir_all(user_file.parent().unwrap()).unwrap();
    std::fs::write(&user_file, "").unwrap();
    assert_eq!(
        ConfFiles::choose(None, Some(&home), root.path()),
        ConfFiles {
            main: user_file,
            main_required: false,
            drop_in_folders: vec![user_drop_ins],
        }
    );
}
