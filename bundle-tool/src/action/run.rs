//! `bundle-tool run` (install or `--upgrade` a bundle folder through OLM v0, or install it
//! through OLM v1) and
//! `bundle-tool run cleanup` (remove what `run` made); the work is `olm_run/`.

use std::path::PathBuf;
use std::time::Duration;

use super::{Action, ActionError, Outcome, RegistryArgs, Status};
use crate::olm_run::{self, Approval, CleanupRequest, InstallMode, Report, RunRequest};

/// The report's format.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum RunFormat {
    /// A line per step.
    #[default]
    Text,
    /// One JSON object (steps, changed, csv, error, seconds).
    Json,
}

/// `--approval`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum ApprovalFlag {
    /// `run` approves the plan for its bundle, nothing else.
    #[default]
    Manual,
    /// OLM installs whatever the channel offers.
    Automatic,
}

/// `--olm`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum OlmFlag {
    /// OLM v0 when the cluster serves its CRDs, else OLM v1.
    #[default]
    Auto,
    /// OLM v0 (CatalogSource, Subscription).
    V0,
    /// OLM v1 (ClusterCatalog, installer ServiceAccount, ClusterExtension).
    V1,
}

/// `bundle-tool run`.
#[derive(Debug, clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct RunCommand {
    /// `cleanup`.
    #[command(subcommand)]
    pub cleanup: Option<RunSubcommand>,
    /// Install (or upgrade).
    #[command(flatten)]
    pub install: RunArgs,
}

/// `run`'s subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum RunSubcommand {
    /// Remove what `run` made for a package (Subscription, its CSV and InstallPlans,
    /// CatalogSource, catalog server pods and Services, the OperatorGroup it made), listing
    /// each; `--delete-crds` removes the CSV's CRDs too.
    Cleanup(RunCleanupArgs),
}

/// `bundle-tool run <bundle>`.
#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// The bundle folder, or a bundle image (pulled with the registry flags below, and run
    /// as the folder it holds).
    pub bundle: Option<PathBuf>,
    /// Move the package `run` installed to this bundle (like `operator-sdk run
    /// bundle-upgrade`); the catalog gets the edge from the installed CSV.
    #[arg(long)]
    pub upgrade: bool,
    /// Where the catalog image is pushed: `<PREFIX>/<package>-run-catalog:<version>`; the
    /// cluster's nodes pull it from there.
    #[arg(long, value_name = "PREFIX")]
    pub registry: Option<String>,
    /// Instead of --registry (nothing is pushed): the catalog goes into ConfigMaps, mounted
    /// into a server pod running IMAGE, which must hold bundle-tool's catalog-server, as
    /// every catalog image bundle-tool builds does (OLM v0 only).
    #[arg(long, value_name = "IMAGE", conflicts_with = "registry")]
    pub server_image: Option<String>,
    /// The namespace (default: the kubeconfig context's).
    #[arg(long, short = 'n')]
    pub namespace: Option<String>,
    /// AllNamespaces, OwnNamespace, SingleNamespace=NS or MultiNamespace=A,B (default: the
    /// namespace's OperatorGroup's, else the first of AllNamespaces and OwnNamespace the
    /// bundle supports).
    #[arg(long, value_parser = InstallMode::parse)]
    pub install_mode: Option<InstallMode>,
    /// Which OLM.
    #[arg(long, value_enum, default_value = "auto")]
    pub olm: OlmFlag,
    /// InstallPlan approval.
    #[arg(long, value_enum, default_value = "manual")]
    pub approval: ApprovalFlag,
    /// The bound on the whole command (`90s`, `5m`, `1m30s`).
    #[arg(long, default_value = "5m", value_parser = parse_duration)]
    pub timeout: Duration,
    /// The kubeconfig (default: $KUBECONFIG, ~/.kube/config, or in-cluster).
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
    /// Output format.
    #[arg(short = 'o', long = "output", value_enum, default_value = "text")]
    pub output: RunFormat,
    /// Transport and credentials of the registry.
    #[command(flatten)]
    pub registry_access: RegistryArgs,
}

/// `bundle-tool run cleanup <package>`.
#[derive(Debug, clap::Args)]
pub struct RunCleanupArgs {
    /// The package.
    pub package: String,
    /// The namespace (default: the kubeconfig context's).
    #[arg(long, short = 'n')]
    pub namespace: Option<String>,
    /// Delete the CRDs the installed CSV owns (and with them every custom resource).
    #[arg(long)]
    pub delete_crds: bool,
    /// The bound on the whole command.
    #[arg(long, default_value = "2m", value_parser = parse_duration)]
    pub timeout: Duration,
    /// The kubeconfig (default: $KUBECONFIG, ~/.kube/config, or in-cluster).
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
    /// Output format.
    #[arg(short = 'o', long = "output", value_enum, default_value = "text")]
    pub output: RunFormat,
}

/// `90`, `90s`, `5m`, `1m30s`, `1h`.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let bad = || format!("{text:?} is not a duration (e.g. 90s, 5m, 1m30s)");
    if let Ok(seconds) = text.parse::<u64>() {
        return Ok(Duration::from_secs(seconds));
    }
    let mut total = 0u64;
    let mut number = String::new();
    for c in text.chars() {
        if c.is_ascii_digit() {
            number.push(c);
            continue;
        }
        let unit = match c {
            'h' => 3600,
            'm' => 60,
            's' => 1,
            _ => return Err(bad()),
        };
        let value: u64 = number.parse().map_err(|_| bad())?;
        total += value * unit;
        number.clear();
    }
    if !number.is_empty() || total == 0 {
        return Err(bad());
    }
    Ok(Duration::from_secs(total))
}

/// On a terminal, each step (and what a wait shows) as it happens, on standard error; the
/// report on standard output is then left out when that is the same terminal.
fn live(format: RunFormat) -> Option<olm_run::Progress> {
    use std::io::IsTerminal;
    (format == RunFormat::Text && std::io::stderr().is_terminal())
        .then(|| std::sync::Arc::new(|line: &str| eprintln!("{line}")) as olm_run::Progress)
}

fn outcome(report: &Report, error: Option<olm_run::RunError>, format: RunFormat) -> Outcome {
    use std::io::IsTerminal;
    let shown = live(format).is_some() && std::io::stdout().is_terminal();
    let mut outcome = Outcome::text(match format {
        RunFormat::Text if shown => String::new(),
        RunFormat::Text => report.to_text(),
        RunFormat::Json => report.to_json(),
    });
    if let Some(error) = error {
        outcome.notes.push(format!("error: {error}"));
        outcome.status = Status::Failure;
    }
    outcome
}

impl Action for RunCommand {
    fn run(&self) -> Result<Outcome, ActionError> {
        match &self.cleanup {
            Some(RunSubcommand::Cleanup(args)) => args.run(),
            None => self.install.run(),
        }
    }
}

impl Action for RunArgs {
    fn run(&self) -> Result<Outcome, ActionError> {
        let Some(bundle) = &self.bundle else {
            return Err(ActionError::message(
                "a bundle folder or image is needed: bundle-tool run <bundle-dir|bundle-image> --registry PREFIX",
            ));
        };
        let registry = match (&self.registry, &self.server_image) {
            (Some(registry), _) => registry.clone(),
            (None, Some(image)) => {
                crate::image::parse_reference(image)
                    .map_err(|error| ActionError::message(format!("--server-image: {error}")))?;
                String::new()
            }
            (None, None) => {
                return Err(ActionError::message(
                    "--registry PREFIX or --server-image IMAGE is needed: the catalog image is pushed to the registry and the cluster's nodes pull it from there, or the catalog goes into ConfigMaps served by a pod running the image (docs/run.md)",
                ));
            }
        };
        // A bundle image is unpacked and served like a folder (its objects inline in the
        // catalog `run` makes); the unpacked folder lives until the run ends.
        let pulled;
        let bundle = match crate::location::Location::of_path(bundle)? {
            crate::location::Location::Local(dir) => dir,
            crate::location::Location::Image(reference) => {
                pulled = super::pulled(&reference, &self.registry_access.transport.transport())?;
                if pulled.kind != Some(crate::image::ImageKind::Bundle) {
                    return Err(ActionError::message(format!(
                        "{reference} is a catalog image: run takes a bundle folder or a bundle image"
                    )));
                }
                pulled.root().to_path_buf()
            }
        };
        let request = RunRequest {
            bundle,
            registry,
            server_image: self.server_image.clone(),
            access: self.registry_access.access()?,
            transport: self.registry_access.transport.transport(),
            namespace: self.namespace.clone(),
            install_mode: self.install_mode.clone(),
            approval: match self.approval {
                ApprovalFlag::Manual => Approval::Manual,
                ApprovalFlag::Automatic => Approval::Automatic,
            },
            timeout: self.timeout,
            kubeconfig: self.kubeconfig.clone(),
            upgrade: self.upgrade,
            olm: match self.olm {
                OlmFlag::Auto => olm_run::OlmChoice::Auto,
                OlmFlag::V0 => olm_run::OlmChoice::V0,
                OlmFlag::V1 => olm_run::OlmChoice::V1,
            },
            progress: live(self.output),
        };
        let (report, error) = olm_run::run(&request);
        Ok(outcome(&report, error, self.output))
    }
}

impl Action for RunCleanupArgs {
    fn run(&self) -> Result<Outcome, ActionError> {
        let request = CleanupRequest {
            package: self.package.clone(),
            namespace: self.namespace.clone(),
            kubeconfig: self.kubeconfig.clone(),
            delete_crds: self.delete_crds,
            timeout: self.timeout,
            progress: live(self.output),
        };
        let (report, error) = olm_run::cleanup(&request);
        Ok(outcome(&report, error, self.output))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BUNDLE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../bundle");

    #[derive(clap::Parser)]
    struct Cli {
        #[command(flatten)]
        run: RunArgs,
    }

    #[test]
    fn the_catalog_goes_to_a_registry_or_to_configmaps_not_both() {
        use clap::Parser as _;
        let both = Cli::try_parse_from(["run", BUNDLE, "--registry", "r", "--server-image", "i"]);
        let error = both.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(error.contains("--server-image"), "{error}");
        let neither = Cli::try_parse_from(["run", BUNDLE]).unwrap().run.run();
        let error = neither.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(
            error.contains("--registry PREFIX or --server-image IMAGE is needed"),
            "{error}"
        );
        let bad = Cli::try_parse_from(["run", BUNDLE, "--server-image", "Not An Image"])
            .unwrap()
            .run
            .run();
        let error = bad.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(error.starts_with("--server-image: "), "{error}");
    }

    #[test]
    fn durations_read_as_go_writes_them() {
        assert_eq!(parse_duration("90"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("5m"), Ok(Duration::from_secs(300)));
        assert_eq!(parse_duration("1m30s"), Ok(Duration::from_secs(90)));
        assert!(parse_duration("5x").is_err());
        assert!(parse_duration("1m3").is_err());
        assert!(parse_duration("").is_err());
    }
}
