//! `release.olmV1Installer`: once the catalog holds the release, the RBAC of the OLM v1
//! installer ServiceAccount that installs it and upgrades into it, written to a file for the
//! cluster admin. The bundles are read from the catalog's own `olm.bundle.object`s — what
//! OLM v1 unpacks — so the file is about the released bundle and each bundle with an upgrade
//! edge into it (`replaces`, `skips`, `skipRange`), not about the working tree.

use super::ReleaseError;
use super::plan::{InstallerRbacFile, Plan};
use crate::catalog::declcfg;
use crate::olm_v1::{self, RegistryV1};

/// What the step did to the file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Written {
    /// The file was written with new content.
    Written,
    /// The file already had this content.
    Unchanged,
}

/// Derives the RBAC from the catalog at `plan.catalog_dir` and writes it to `rbac.file`
/// (atomically; left alone when it already says the same). Returns what it did and the
/// bundles the RBAC covers, the released one first.
pub(super) fn write(
    plan: &Plan,
    rbac: &InstallerRbacFile,
) -> Result<(Written, Vec<String>), ReleaseError> {
    let failed = |message: String| ReleaseError::InstallerRbac {
        path: rbac.file.clone(),
        message,
    };
    let config = declcfg::load_dir(&plan.catalog_dir)
        .map_err(|e| failed(format!("reading {}: {e}", plan.catalog_dir.display())))?;
    let mut names = vec![plan.bundle_name.clone()];
    names.extend(crate::upgrade::upgrades_into(
        &config,
        &plan.package,
        &plan.bundle_name,
    ));
    let mut bundles = Vec::new();
    for name in &names {
        let bundle = config
            .bundles
            .iter()
            .find(|b| b.package == plan.package && &b.name == name)
            .ok_or_else(|| failed(format!("{name}: no such bundle in the catalog")))?;
        if bundle.objects().is_empty() {
            return Err(failed(format!(
                "{name}: the catalog entry carries no olm.bundle.object properties, so its objects are unknown; release with a catalog that keeps them (as release writes them)"
            )));
        }
        bundles.push(RegistryV1::from_catalog_bundle(bundle).map_err(|e| failed(e.to_string()))?);
    }
    let derived = olm_v1::derive(&bundles, &rbac.options).map_err(|e| failed(e.to_string()))?;
    let objects = derived
        .to_yaml()
        .map_err(|e| failed(format!("cannot write YAML: {e}")))?;
    let text = format!(
        "# The OLM v1 installer ServiceAccount {namespace}/{account} and its RBAC for the\n# ClusterExtension {extension}: install {released}{upgrades}.\n# Written by `bundle-tool release` from the catalog's objects; apply it before the\n# ClusterExtension (docs/olm-v1.md).\n{objects}",
        namespace = rbac.options.namespace,
        account = rbac.options.service_account,
        extension = rbac.options.extension,
        released = names[0],
        upgrades = match &names[1..] {
            [] => String::new(),
            from => format!(", and upgrade into it from {}", from.join(", ")),
        },
    );
    if std::fs::read(&rbac.file).is_ok_and(|old| old == text.as_bytes()) {
        return Ok((Written::Unchanged, names));
    }
    if let Some(parent) = rbac.file.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)
            .map_err(|e| failed(format!("creating {}: {e}", parent.display())))?;
    }
    crate::durable::write_file(&rbac.file, text.as_bytes()).map_err(|e| failed(e.to_string()))?;
    Ok((Written::Written, names))
}

/// The summary's words for the step's result.
pub(super) fn describe(file: &std::path::Path, written: &Written, bundles: &[String]) -> String {
    let what = match written {
        Written::Written => "written",
        Written::Unchanged => "unchanged",
    };
    format!("{} {what} ({})", file.display(), bundles.join(", "))
}
