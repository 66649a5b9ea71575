//! Validating registry+v1 bundles with the checks of operator-framework/api that
//! `operator-sdk bundle validate` runs, and upstream's message texts (people grep for them).
//!
//! The loader's structural checks and typed CSV decoding, the default validators (CSV, CRD,
//! bundle) and the optional ones of `suite=operatorframework` (operatorhubv2, capabilities,
//! categories, alpha-deprecated-apis, good-practices), and our own `olm-v1` (what OLM v1 refuses;
//! docs/olm-v1.md) and `disconnected` (images named by tag). docs/conformance.md lists what differs
//! from operator-sdk and what is not implemented (a few CRD metadata rules, multiarch).

mod bundle_checks;
mod crd;
mod csv_metadata;
mod deprecated_apis;
mod disconnected;
mod examples;
mod finding;
mod good_practices;
mod load;
mod multiarch;
mod objects;
mod olm_v1;
mod operatorhub;
mod optional;
mod typed;

pub use finding::{Finding, Level, Report};
pub use load::{LoadedBundle, load_bundle};
pub use optional::Optional;
// The typed CSV and CRD decoders the bundle loader runs (operator-framework/api's Go types),
// on their own for the manifest fuzz target.
pub use typed::{DecodeError, check_crd, check_csv, line_of};

/// Optional validators selectable like operator-sdk's `--select-optional`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Suite {
    /// The default validators only (CSV, CRD, bundle).
    Default,
    /// `suite=operatorframework`: also operatorhub, categories, capabilities, good practices.
    OperatorFramework,
}

impl From<Suite> for Optional {
    fn from(suite: Suite) -> Self {
        match suite {
            Suite::Default => Optional::default(),
            Suite::OperatorFramework => Optional::operatorframework(),
        }
    }
}

/// Validates the bundle folder `dir`.
pub fn validate_bundle(dir: &std::path::Path, suite: Suite) -> Report {
    validate_bundle_with(dir, &suite.into())
}

/// Validates the bundle folder `dir` with the optional validators `optional`.
pub fn validate_bundle_with(dir: &std::path::Path, optional: &Optional) -> Report {
    let mut report = Report::default();
    match load_bundle(dir) {
        Ok(bundle) => bundle_checks::run(&bundle, optional, &mut report),
        Err(findings) => report.findings.extend(findings),
    }
    report
}

/// Validates a bundle already loaded with [`load_bundle`] (callers that also read the bundle
/// for other purposes, such as `audit`, parse it once).
pub fn validate_loaded(bundle: &LoadedBundle, suite: Suite) -> Report {
    let mut report = Report::default();
    bundle_checks::run(bundle, &suite.into(), &mut report);
    report
}
