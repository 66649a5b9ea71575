//! `bundle-tool audit` on the shared corpus: all 266 bundles and the 39 catalogs audited in
//! seconds, the HTML report rendered by headless Chromium (no console errors, every package
//! in the DOM, a screenshot kept under `target/test-artifacts/`), and the corpus summary in
//! `docs/capability-levels.md` still matching what the tool says.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use bundle_tool::audit::{self, AuditReport, report, source};
use e2e::corpus;

fn audit_path(path: &Path, all: bool) -> (AuditReport, Duration) {
    let started = Instant::now();
    let targets = source::targets_in(path, all).expect("targets");
    let jobs = std::thread::available_parallelism().map_or(2, |n| n.get());
    let (bundles, errors) = audit::audit_targets(&targets, jobs, &|| {}, &|_| {});
    let report = AuditReport::new(path.display().to_string(), bundles, errors);
    (report, started.elapsed())
}

fn artifacts() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/test-artifacts");
    std::fs::create_dir_all(&dir).expect("artifacts folder");
    dir.canonicalize().expect("canonical")
}

fn chromium() -> PathBuf {
    for name in ["chromium", "chromium-browser", "google-chrome"] {
        if let Ok(output) = Command::new("sh")
            .args(["-c", &format!("command -v {name}")])
            .output()
            && output.status.success()
        {
            return PathBuf::from(String::from_utf8_lossy(&output.stdout).trim());
        }
    }
    panic!(
        "headless Chromium is needed to check the HTML report: apt-get install -y chromium (tests/run-all.sh installs it)"
    );
}

#[test]
fn audit_of_the_corpus_bundles_is_fast_and_its_html_renders() {
    let expected = corpus::bundles();
    let (report, took) = audit_path(&corpus::bundles_root(), false);
    println!(
        "audited {} corpus bundles in {took:.2?}",
        report.bundles.len()
    );
    assert!(report.errors.is_empty(), "{:#?}", report.errors);
    // Every package has one version in the corpus: the newest of each is every bundle.
    assert_eq!(report.bundles.len(), expected.len());
    assert!(
        took < Duration::from_secs(60),
        "auditing the corpus took {took:?}"
    );
    for audit in &report.bundles {
        assert_eq!(audit.evidence_kind, "bundle");
        assert_eq!(audit.levels.len(), 5);
    }

    // The documented corpus summary is the one the tool gives today.
    let markdown = report::markdown::render(&report);
    let table: String = markdown
        .lines()
        .skip_while(|l| !l.starts_with("| declared |"))
        .take_while(|l| !l.is_empty())
        .map(|l| format!("{l}\n"))
        .collect();
    assert!(table.lines().count() == 8, "{markdown}");
    let doc = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/capability-levels.md"),
    )
    .expect("docs/capability-levels.md");
    assert!(
        doc.contains(&table),
        "docs/capability-levels.md's corpus summary is out of date; it is now:\n{table}"
    );

    let html = report::html::render(&report).expect("html");
    assert!(
        !html.contains("<script"),
        "the report must not need scripts"
    );
    assert!(
        !html.contains("src=\"http") && !html.contains("<link") && !html.contains("url(http"),
        "the report must fetch nothing"
    );
    let dir = artifacts();
    let page = dir.join("audit-corpus.html");
    std::fs::write(&page, &html).expect("write html");
    let url = format!("file://{}", page.display());
    let profile = tempfile::tempdir().expect("profile");
    let chromium = chromium();
    let common = [
        "--headless".to_string(),
        "--disable-gpu".into(),
        "--no-sandbox".into(),
        "--no-first-run".into(),
        "--enable-logging=stderr".into(),
        "--v=0".into(),
        format!("--user-data-dir={}", profile.path().display()),
    ];
    let dom = Command::new(&chromium)
        .args(&common)
        .arg("--dump-dom")
        .arg(&url)
        .output()
        .expect("run chromium");
    let stderr = String::from_utf8_lossy(&dom.stderr);
    assert!(dom.status.success(), "chromium --dump-dom failed: {stderr}");
    // Chromium's own pages (`chrome://…`) log to the console too: only the report's count.
    let console: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("CONSOLE") && !l.contains("source: chrome://"))
        .collect();
    assert!(
        console.is_empty(),
        "console messages while rendering the report: {console:#?}"
    );
    let dom = String::from_utf8_lossy(&dom.stdout);
    assert!(
        dom.contains("id=\"level-chart\"") && dom.contains("id=\"criteria-chart\""),
        "charts missing from the rendered DOM"
    );
    let missing: Vec<&String> = expected
        .iter()
        .map(|(package, _, _)| package)
        .filter(|p| !dom.contains(&format!(">{p}</a>")))
        .collect();
    assert!(
        missing.is_empty(),
        "packages missing from the rendered page: {missing:?}"
    );

    let screenshot = dir.join("audit-corpus.png");
    let _ = std::fs::remove_file(&screenshot);
    let shot = Command::new(&chromium)
        .args(&common)
        .arg(format!("--screenshot={}", screenshot.display()))
        .arg("--window-size=1280,2400")
        .arg(&url)
        .output()
        .expect("run chromium");
    assert!(
        shot.status.success(),
        "chromium --screenshot failed: {}",
        String::from_utf8_lossy(&shot.stderr)
    );
    let png = std::fs::read(&screenshot).expect("screenshot written");
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 10_000,
        "not a real screenshot"
    );
    println!(
        "CI artifact: screenshot of the corpus audit report: {}",
        screenshot.display()
    );
    println!("CI artifact: the report itself: {}", page.display());
}

#[test]
fn audit_of_the_corpus_catalogs_sees_only_what_fbc_carries() {
    let catalogs = corpus::catalogs();
    let root = catalogs[0].parent().expect("catalogs root").to_path_buf();
    let (report, took) = audit_path(&root, false);
    println!(
        "audited the newest bundle of {} catalog packages in {took:.2?}",
        report.bundles.len()
    );
    assert!(report.errors.is_empty(), "{:#?}", report.errors);
    assert_eq!(
        report.bundles.len(),
        catalogs.len(),
        "one package per corpus catalog"
    );
    for audit in &report.bundles {
        assert_eq!(audit.evidence_kind, "catalog");
        let outcome = |id: &str| {
            audit
                .criteria
                .iter()
                .find(|c| c.id == id)
                .expect(id)
                .outcome
        };
        assert_eq!(
            outcome("L1.bundle-valid"),
            audit::Outcome::Unknown,
            "{}",
            audit.package
        );
        assert_eq!(
            outcome("L3.probes"),
            audit::Outcome::Unknown,
            "{}",
            audit.package
        );
        // Visible in a catalog: a verdict either way.
        assert_ne!(
            outcome("L2.upgrade-edge"),
            audit::Outcome::Unknown,
            "{}",
            audit.package
        );
        assert_ne!(
            outcome("L1.install-modes"),
            audit::Outcome::Unknown,
            "{}",
            audit.package
        );
    }
    // Upgrade edges come from the channels: some packages have them.
    assert!(report.summary.criteria["L2.upgrade-edge"].pass > 0);
    let (all, _) = audit_path(&root, true);
    assert!(all.bundles.len() > report.bundles.len());
}

#[tokio::test]
async fn audit_of_a_bundle_image_pulls_it_and_gives_the_folder_verdict() -> anyhow::Result<()> {
    let registry = e2e::OciRegistry::start(e2e::RegistryAuth::Anonymous).await?;
    let reference = format!("{}/example/redis-operator-bundle:v0.1.0", registry.host());
    let bundle = Path::new(env!("CARGO_MANIFEST_DIR")).join("../bundle");
    let run = |args: Vec<String>| {
        let output = Command::new(e2e::bundle_tool_binary())
            .args(&args)
            .output()
            .expect("run bundle-tool");
        assert!(
            output.status.success(),
            "bundle-tool {args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8_lossy(&output.stdout).into_owned()
    };
    let pushed = tokio::task::spawn_blocking({
        let (bundle, reference) = (bundle.clone(), reference.clone());
        move || {
            run(vec![
                "push".into(),
                bundle.display().to_string(),
                reference,
                "--plain-http".into(),
            ])
        }
    })
    .await?;
    assert!(pushed.starts_with(&reference), "{pushed}");
    let (from_image, from_folder) = tokio::task::spawn_blocking(move || {
        let audit = |target: String| -> serde_json::Value {
            serde_json::from_str(&run(vec![
                "audit".into(),
                target,
                "--plain-http".into(),
                "-o".into(),
                "json".into(),
            ]))
            .expect("JSON")
        };
        (audit(reference), audit(bundle.display().to_string()))
    })
    .await?;
    let (image, folder) = (&from_image["bundles"][0], &from_folder["bundles"][0]);
    assert_eq!(
        image["source"], from_image["input"],
        "an image's bundles are named by the reference"
    );
    assert_eq!(image["package"], "redis-operator");
    for key in [
        "cumulativeLevel",
        "independentLevel",
        "levels",
        "criteria",
        "declared",
    ] {
        assert_eq!(
            image[key], folder[key],
            "{key} differs between the image and the folder"
        );
    }
    Ok(())
}
