//! Validating registry+v1 bundles with the checks of operator-framework/api that
//! `operator-sdk bundle validate` runs, and upstream's message texts (people grep for them).
//!
//! This first version has the loader's structural checks, the checks that decide a bundle's
//! verdict in practice (bundle/CSV consistency, service-account clashes, size, categories,
//! capabilities) and the CSV's required fields; issue #4 lists what is still to come.

mod bundle_checks;
mod finding;
mod load;

pub use finding::{Finding, Level, Report};
pub use load::{LoadedBundle, load_bundle};

/// Optional validators selectable like operator-sdk's `--select-optional`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Suite {
    /// The default validators only (CSV, CRD, bundle).
    Default,
    /// `suite=operatorframework`: also operatorhub, categories, capabilities, good practices.
    OperatorFramework,
}

/// Validates the bundle folder `dir`.
pub fn validate_bundle(dir: &std::path::Path, suite: Suite) -> Report {
    let mut report = Report::default();
    match load_bundle(dir) {
        Ok(bundle) => {
            bundle_checks::run(&bundle, suite, &mut report);
        }
        Err(findings) => report.findings.extend(findings),
    }
    report
}

/// Validates a bundle already loaded with [`load_bundle`] (callers that also read the bundle
/// for other purposes, such as `audit`, parse it once).
pub fn validate_loaded(bundle: &LoadedBundle, suite: Suite) -> Report {
    let mut report = Report::default();
    bundle_checks::run(bundle, suite, &mut report);
    report
}
