//! `bundle-tool catalog graph`: the mermaid output is byte-for-byte `opm alpha render-graph`'s
//! on every corpus catalog and on a catalog with every edge kind and deprecation; the HTML
//! page, opened in headless Chromium, shows every bundle and logs no console errors.

use std::path::Path;
use std::process::Command;

use e2e::assets::Assets;

fn opm_graph(dir: &Path, package: Option<&str>, v0_semantics: bool) -> String {
    let mut command = Command::new(Assets::locate().unwrap().opm().unwrap());
    command.args(["alpha", "render-graph"]).arg(dir);
    if v0_semantics {
        command.arg("--draw-v0-semantics");
    }
    if let Some(package) = package {
        command.args(["-p", package]);
    }
    let output = command.output().unwrap();
    assert!(
        output.status.success(),
        "opm render-graph {}: {}",
        dir.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

fn our_graph(dir: &Path, args: &[&str]) -> String {
    let output = Command::new(e2e::bundle_tool_binary())
        .args(["catalog", "graph"])
        .arg(dir)
        .args(args)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "catalog graph {}: {}",
        dir.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

/// Two packages; replaces, skips, a skipRange, bundle/channel/package deprecations.
const EDGES_CATALOG: &str = r#"
{"schema": "olm.package", "name": "alpha-op", "defaultChannel": "stable"}
{"schema": "olm.channel", "package": "alpha-op", "name": "stable", "entries": [
  {"name": "alpha-op.v1.0.0"},
  {"name": "alpha-op.v1.1.0", "replaces": "alpha-op.v1.0.0"},
  {"name": "alpha-op.v1.2.0", "replaces": "alpha-op.v1.1.0", "skips": ["alpha-op.v1.0.0"]},
  {"name": "alpha-op.v2.0.0", "replaces": "alpha-op.v1.2.0", "skipRange": ">=1.0.0 <2.0.0"}]}
{"schema": "olm.channel", "package": "alpha-op", "name": "fast", "entries": [
  {"name": "alpha-op.v2.0.0"}]}
{"schema": "olm.bundle", "package": "alpha-op", "name": "alpha-op.v1.0.0", "image": "example.com/a:1.0.0", "properties": [{"type": "olm.package", "value": {"packageName": "alpha-op", "version": "1.0.0"}}]}
{"schema": "olm.bundle", "package": "alpha-op", "name": "alpha-op.v1.1.0", "image": "example.com/a:1.1.0", "properties": [{"type": "olm.package", "value": {"packageName": "alpha-op", "version": "1.1.0"}}]}
{"schema": "olm.bundle", "package": "alpha-op", "name": "alpha-op.v1.2.0", "image": "example.com/a:1.2.0", "properties": [{"type": "olm.package", "value": {"packageName": "alpha-op", "version": "1.2.0"}}]}
{"schema": "olm.bundle", "package": "alpha-op", "name": "alpha-op.v2.0.0", "image": "example.com/a:2.0.0", "properties": [{"type": "olm.package", "value": {"packageName": "alpha-op", "version": "2.0.0"}}]}
{"schema": "olm.deprecations", "package": "alpha-op", "entries": [
  {"reference": {"schema": "olm.bundle", "name": "alpha-op.v1.0.0"}, "message": "old"},
  {"reference": {"schema": "olm.channel", "name": "fast"}, "message": "use stable"}]}
{"schema": "olm.package", "name": "beta-op", "defaultChannel": "alpha"}
{"schema": "olm.channel", "package": "beta-op", "name": "alpha", "entries": [{"name": "beta-op.v0.1.0"}]}
{"schema": "olm.bundle", "package": "beta-op", "name": "beta-op.v0.1.0", "image": "example.com/b:0.1.0", "properties": [{"type": "olm.package", "value": {"packageName": "beta-op", "version": "0.1.0"}}]}
{"schema": "olm.deprecations", "package": "beta-op", "entries": [
  {"reference": {"schema": "olm.package"}, "message": "gone"}]}
"#;

#[test]
fn mermaid_is_opms_render_graph() {
    let catalogs = e2e::corpus::catalogs();
    assert_eq!(catalogs.len(), 39);
    let mut marked = 0;
    for dir in &catalogs {
        assert_eq!(
            our_graph(dir, &[]),
            opm_graph(dir, None, false),
            "mermaid differs on {}",
            dir.display()
        );
        let v0 = opm_graph(dir, None, true);
        marked += usize::from(v0.contains("linkStyle") || v0.contains(" skipped\n"));
        assert_eq!(
            our_graph(dir, &["--draw-v0-semantics"]),
            v0,
            "mermaid with OLMv0 semantics differs on {}",
            dir.display()
        );
    }
    assert!(
        marked >= 5,
        "only {marked} catalogs exercise the OLMv0 marks"
    );
    let folder = tempfile::tempdir().unwrap();
    std::fs::write(folder.path().join("catalog.json"), EDGES_CATALOG).unwrap();
    let ours = our_graph(folder.path(), &[]);
    assert_eq!(ours, opm_graph(folder.path(), None, false));
    assert_eq!(
        our_graph(folder.path(), &["--draw-v0-semantics"]),
        opm_graph(folder.path(), None, true)
    );
    for kind in [
        "-- skip -->",
        "-- \"skipRange(>=1.0.0 <2.0.0)\" -->",
        "-- replace -->",
    ] {
        assert!(ours.contains(kind), "no {kind} edge in {ours}");
    }
    assert!(ours.contains("class alpha-op-stable-alpha-op.v1.0.0 deprecated"));
    assert_eq!(
        our_graph(folder.path(), &["-p", "beta-op"]),
        opm_graph(folder.path(), Some("beta-op"), false)
    );
}

/// Opens `page` in headless Chromium: (the DOM after load, the page's console lines).
fn chromium(page: &Path) -> (String, Vec<String>) {
    let output = Command::new("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--enable-logging=stderr",
            "--v=0",
            "--dump-dom",
        ])
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "chromium could not be started ({e}); install it (apt-get install -y chromium; \
                 tests/run-all.sh does)"
            )
        });
    assert!(
        output.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    // Only the page's own console lines: Chromium also logs its internal pages' messages
    // (e.g. "Slow network is detected" from chrome://resources on a loaded machine).
    let source = format!("source: file://{}", page.display());
    let console = String::from_utf8_lossy(&output.stderr)
        .lines()
        .filter(|l| l.contains(":CONSOLE") && l.contains(&source))
        .map(str::to_string)
        .collect();
    (
        String::from_utf8_lossy(&output.stdout).into_owned(),
        console,
    )
}

#[test]
fn html_page_shows_every_bundle_in_chromium_without_console_errors() {
    let work = tempfile::tempdir().unwrap();
    // The check itself must be able to fail: a page with a script error is caught.
    let broken = work.path().join("broken.html");
    std::fs::write(&broken, "<script>undefinedThing.call()</script>").unwrap();
    assert!(
        !chromium(&broken).1.is_empty(),
        "chromium's console is not being read"
    );

    let edges = work.path().join("edges");
    std::fs::create_dir(&edges).unwrap();
    std::fs::write(edges.join("catalog.json"), EDGES_CATALOG).unwrap();
    let mut catalogs = vec![edges];
    catalogs.extend(
        e2e::corpus::catalogs()
            .into_iter()
            .filter(|c| c.ends_with("konflux") || c.ends_with("project-quay")),
    );
    assert_eq!(catalogs.len(), 3);
    for (index, dir) in catalogs.iter().enumerate() {
        let page = work.path().join(format!("graph{index}.html"));
        std::fs::write(&page, our_graph(dir, &["-o", "html"])).unwrap();
        let (dom, console) = chromium(&page);
        assert!(
            console.is_empty(),
            "{}: console: {console:?}",
            dir.display()
        );
        assert!(dom.contains("<svg"), "{}: no SVG in the DOM", dir.display());
        let config = bundle_tool::catalog::declcfg::load_dir(dir).unwrap();
        assert!(!config.bundles.is_empty());
        for bundle in &config.bundles {
            assert!(
                dom.contains(&format!(">{}</text>", bundle.name)),
                "{}: bundle {} not shown",
                dir.display(),
                bundle.name
            );
        }
        for channel in &config.channels {
            assert!(
                dom.contains(&format!("data-channel=\"{}\"", channel.name)),
                "{}: channel {} not shown",
                dir.display(),
                channel.name
            );
        }
    }
}
