//! The reference Go tools used as oracles are built at their pinned versions and run.

use std::process::Command;

use e2e::assets::Assets;

fn run(program: &std::path::Path, args: &[&str]) -> anyhow::Result<String> {
    let output = Command::new(program).args(args).output()?;
    anyhow::ensure!(
        output.status.success(),
        "{} {args:?} failed: {}",
        program.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

#[test]
fn opm_reports_its_pinned_version() -> anyhow::Result<()> {
    let out = run(&Assets::locate()?.opm()?, &["version"])?;
    assert!(out.contains("v1.73.0"), "opm version printed: {out}");
    Ok(())
}

#[test]
fn operator_sdk_reports_its_pinned_version() -> anyhow::Result<()> {
    let out = run(&Assets::locate()?.operator_sdk()?, &["version"])?;
    assert!(
        out.contains("v1.42.3"),
        "operator-sdk version printed: {out}"
    );
    Ok(())
}

#[test]
fn olm_binaries_and_crds_are_present() -> anyhow::Result<()> {
    let assets = Assets::locate()?;
    for name in ["olm", "catalog"] {
        let help = Command::new(assets.olm(name)?).arg("--help").output()?;
        let text = String::from_utf8_lossy(&help.stdout).into_owned()
            + &String::from_utf8_lossy(&help.stderr);
        assert!(
            text.contains("--namespace"),
            "{name} --help printed: {text}"
        );
    }
    let crds = assets.olm_crds()?;
    let names: Vec<String> = crds
        .iter()
        .filter_map(|p| p.file_name())
        .map(|n| n.to_string_lossy().into_owned())
        .collect();
    for kind in [
        "catalogsources",
        "clusterserviceversions",
        "installplans",
        "operatorgroups",
        "subscriptions",
    ] {
        assert!(
            names.iter().any(|n| n.contains(kind)),
            "no {kind} CRD among {names:?}"
        );
    }
    Ok(())
}
