//! The `bundle-tool` command line: the list of commands. Each parses into its action's
//! options, runs in the library (`bundle_tool::action`), and comes back as an outcome printed
//! here and mapped to the exit code: 0 success, 1 findings or failure, 2 usage (clap).
//! What concerns the whole process stays here: allocator settings, logging, and not freeing
//! what the process is about to drop.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use bundle_tool::action::{self, Action, ActionError, Outcome, Status};
use clap::{CommandFactory, Parser, Subcommand};

/// An `Examples:` section for a command's `--help` (and its man page), one command a line.
macro_rules! examples {
    ($($line:literal),+ $(,)?) => {
        concat!("Examples:", $("\n  ", $line),+)
    };
}

#[derive(Parser)]
#[command(
    version,
    about = "OLM packaging for operators: bundles, catalogs, images, registry"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Generate a registry+v1 bundle (CSV, CRDs, RBAC, annotations.yaml, bundle.Dockerfile)
    /// from an operator's manifests and a config file.
    #[command(after_help = examples!(
        "bundle-tool generate --output target/bundle",
        "bundle-tool generate --check",
        "bundle-tool generate --version 0.2.0 --replaces redis-operator.v0.1.0",
    ))]
    Generate(action::GenerateArgs),
    /// Write a first bundle-tool.yaml from an operator's manifests (YAML, `kustomize build`,
    /// `helm template`) or from a published bundle; what only the author can say is left
    /// commented out and listed.
    #[command(after_help = examples!(
        "bundle-tool init --manifests config/manifests.yaml --registry quay.io/me",
        "helm template my-operator ./chart | bundle-tool init --manifests -",
        "kustomize build config/default | bundle-tool init --manifests - --version 0.1.0",
        "bundle-tool init --from-bundle bundle/ --config migrated/bundle-tool.yaml",
    ))]
    Init(action::InitArgs),
    /// Serve a file-based catalog over OLM's registry gRPC API, like `opm serve`, with hot
    /// reload and an optional HTTP view.
    #[command(after_help = examples!(
        "bundle-tool serve catalog",
        "bundle-tool serve catalog --inline-bundles --http-port 8081",
    ))]
    Serve(action::ServeArgs),
    /// Validate a bundle folder with operator-framework/api's checks (as `operator-sdk bundle
    /// validate`); exit 1 on errors only.
    #[command(after_help = examples!(
        "bundle-tool validate bundle --select-optional suite=operatorframework",
        "bundle-tool validate quay.io/me/redis-operator-bundle:v0.1.0 -o json",
    ))]
    Validate(action::ValidateArgs),
    /// Build a bundle folder into a deterministic OCI image, written to an OCI image layout.
    #[command(after_help = examples!(
        "bundle-tool build bundle",
        "bundle-tool build catalog --catalog --tag latest",
        "bundle-tool build --binary target/release/redis-operator --tag v0.1.0",
    ))]
    Build(action::BuildArgs),
    /// Push a bundle folder (built on the fly) or an OCI layout to a registry; prints
    /// `REF@sha256:…` after checking the registry's digest.
    #[command(after_help = examples!(
        "bundle-tool push bundle quay.io/me/redis-operator-bundle:v0.1.0",
        "bundle-tool push target/oci:v0.1.0 127.0.0.1:5000/me/bundle:v0.1.0 --plain-http",
    ))]
    Push(action::PushArgs),
    /// Build and push every bundle folder below a folder (laid out `<package>/<version>/`, or
    /// bundles directly inside) to `<repository-prefix>/<package>:<version>`, several at a
    /// time in one process — a release job publishing many bundles.
    #[command(after_help = examples!(
        "bundle-tool push-all bundles quay.io/me",
        "bundle-tool push-all bundles 127.0.0.1:5000/test --plain-http --jobs 4",
    ))]
    PushAll(action::PushAllArgs),
    /// Release a version end to end: generate the bundle, validate, audit, build and push
    /// (or write to the OCI layout) the bundle image, add it to the catalog, validate,
    /// build and push the catalog image, and print a summary. Re-running an unchanged
    /// release changes nothing; a failure leaves the catalog and the layout as they were.
    #[command(after_help = examples!(
        "bundle-tool release",
        "bundle-tool release --version 0.2.0 --dry-run",
        "bundle-tool release --version 0.2.0 --channels candidate-v0,stable-v0 -o json",
        "bundle-tool release --version 0.2.0 --push --username ci --password-stdin < password.txt",
    ))]
    Release(action::ReleaseArgs),
    /// Install a bundle folder on a cluster through OLM v0 (or OLM v1) in one command: its
    /// catalog image (the bundle inline) pushed, or with `--server-image` the catalog in
    /// ConfigMaps, a Ready catalog server, CatalogSource, OperatorGroup (when the namespace has
    /// none), Subscription, until the CSV succeeds; on a stall, the object and the cluster's
    /// reason. `--upgrade` moves the package to a new bundle; `run cleanup`
    /// removes what `run` made.
    #[command(after_help = examples!(
        "bundle-tool run bundle --registry 127.0.0.1:5000/dev --plain-http -n operators",
        "bundle-tool run --upgrade ../next/bundle --registry quay.io/me -n operators -o json",
        "bundle-tool run bundle --server-image quay.io/me/redis-operator-catalog:v0.1.0 -n operators",
        "bundle-tool run cleanup redis-operator -n operators --delete-crds",
    ))]
    Run(action::RunCommand),
    /// Pull a bundle image and unpack it into a folder (safely: no paths escape it).
    #[command(after_help = examples!(
        "bundle-tool pull quay.io/me/redis-operator-bundle:v0.1.0 /tmp/bundle",
    ))]
    Pull(action::PullArgs),
    /// Show an image's digest, labels and layers.
    #[command(after_help = examples!(
        "bundle-tool inspect quay.io/me/redis-operator-bundle:v0.1.0",
    ))]
    Inspect(action::InspectArgs),
    /// File-based catalogs: validate, render, templates, release edits, upgrade graphs.
    #[command(subcommand, after_help = examples!(
        "bundle-tool catalog validate catalog",
        "bundle-tool catalog render catalog -o yaml",
    ))]
    Catalog(CatalogCommand),
    /// OLM v1 (operator-controller): what a ClusterExtension needs.
    #[command(subcommand, name = "olm-v1")]
    OlmV1(OlmV1Command),
    /// List the Kubernetes objects in files or folders of YAML/JSON manifests, with the
    /// file and line each starts on. `-` reads standard input.
    #[command(after_help = examples!(
        "bundle-tool objects bundle/manifests",
        "redis-operator manifests | bundle-tool objects -",
    ))]
    Objects(action::ObjectsArgs),
    /// Assess a bundle's or catalog's capability level from evidence, against the declared one,
    /// and review the rights and pod security it asks for, graded by risk.
    #[command(after_help = examples!(
        "bundle-tool audit bundle",
        "bundle-tool audit bundle --min-level 3",
        "bundle-tool audit bundle --max-risk medium",
        "bundle-tool audit catalog -o html > audit.html",
    ))]
    Audit(action::AuditArgs),
    /// Check that users of OLD can upgrade to NEW: CRDs through OLM v1's upgrade preflight
    /// rules, the upgrade edge, and what the CSV changes; exit 1 on an error-level finding.
    #[command(after_help = examples!(
        "bundle-tool check-upgrade ../old-bundle bundle",
        "bundle-tool check-upgrade quay.io/me/bundle:v0.1.0 bundle -o md",
        "bundle-tool check-upgrade ../old-bundle bundle --kubeconfig ~/.kube/config",
    ))]
    CheckUpgrade(action::CheckUpgradeArgs),
    /// Print shell completions for bash, zsh or fish, generated from these definitions.
    #[command(after_help = examples!(
        "bundle-tool completions bash > /etc/bash_completion.d/bundle-tool",
        "bundle-tool completions zsh > \"${fpath[1]}/_bundle-tool\"",
        "bundle-tool completions fish > ~/.config/fish/completions/bundle-tool.fish",
    ))]
    Completions {
        /// The shell.
        shell: CompletionShell,
    },
    /// Print the man page (roff), or write one page per command into a folder.
    #[command(after_help = examples!(
        "bundle-tool man | man -l -",
        "bundle-tool man --dir target/man",
    ))]
    Man {
        /// Write `bundle-tool.1` and a page per subcommand (`bundle-tool-catalog-render.1`…)
        /// into this folder instead of printing the main page.
        #[arg(long)]
        dir: Option<PathBuf>,
    },
}

/// The shells completions are generated for.
#[derive(Clone, Copy, clap::ValueEnum)]
enum CompletionShell {
    Bash,
    Zsh,
    Fish,
}

#[derive(Subcommand)]
enum OlmV1Command {
    /// Print the installer ServiceAccount, ClusterRole, Role and bindings that let
    /// operator-controller v1.5.1 install, upgrade and remove exactly these bundles.
    #[command(after_help = examples!(
        "bundle-tool olm-v1 rbac bundle --namespace redis-operator --service-account redis-operator-installer",
        "bundle-tool olm-v1 rbac quay.io/me/b:v0.1.0 quay.io/me/b:v0.2.0 -n ops --service-account installer -o json",
    ))]
    Rbac(action::OlmV1RbacArgs),
}

#[derive(Subcommand)]
enum CatalogCommand {
    /// Check a catalog folder with every rule of `opm validate`; exit 1 if it is invalid.
    #[command(after_help = examples!("bundle-tool catalog validate catalog"))]
    Validate(action::CatalogValidateArgs),
    /// Print catalog folders' documents, or bundle folders as `olm.bundle` documents, the way
    /// `opm render` does.
    #[command(after_help = examples!(
        "bundle-tool catalog render catalog -o yaml",
        "bundle-tool catalog render bundle quay.io/me/catalog:latest > all.json",
    ))]
    Render(action::CatalogRenderArgs),
    /// Render an `olm.template.basic` or `olm.semver` template into FBC, as
    /// `opm alpha render-template` does.
    #[command(after_help = examples!(
        "bundle-tool catalog template semver catalog/template.yaml -o yaml",
        "bundle-tool catalog template catalog/template.yaml --bundle-source quay.io/me/b:v0.1.0=bundle",
    ))]
    Template(action::TemplateArgs),
    /// Add a bundle to a catalog as the new head of channels; validated before writing.
    #[command(after_help = examples!(
        "bundle-tool catalog add catalog bundle --channels alpha,stable --image quay.io/me/b:v0.2.0",
        "bundle-tool catalog add catalog quay.io/me/b:v0.3.0 --channels alpha --replaces auto",
    ))]
    Add(action::AddArgs),
    /// Deprecate a bundle, a channel or a package (`olm.deprecations`).
    #[command(after_help = examples!(
        "bundle-tool catalog deprecate catalog --package redis-operator --bundle redis-operator.v0.1.0 --message \"upgrade to 0.2.0\"",
        "bundle-tool catalog deprecate catalog --package redis-operator --channel alpha --message \"use stable\"",
    ))]
    Deprecate(action::DeprecateArgs),
    /// Draw a catalog's upgrade graph: mermaid (as `opm alpha render-graph`) or HTML.
    #[command(after_help = examples!(
        "bundle-tool catalog graph catalog",
        "bundle-tool catalog graph catalog -p redis-operator -o html > graph.html",
    ))]
    Graph(action::GraphArgs),
    /// Check every upgrade edge (replaces, skips, skipRange) of a catalog whose bundles carry
    /// their objects, as `check-upgrade` checks a pair; exit 1 if any edge is unsafe.
    #[command(after_help = examples!(
        "bundle-tool catalog check-upgrades catalog",
        "bundle-tool catalog check-upgrades catalog --package redis-operator -o json",
    ))]
    CheckUpgrades(action::CatalogCheckUpgradesArgs),
}

fn main() -> ExitCode {
    // Called as `grpc_health_probe` (a catalog image built with this binary as its server
    // links that name to it): the probe OLM's registry pods exec.
    if let Some(code) = catalog_server::command::run_as_health_probe() {
        return ExitCode::from(code);
    }
    let cli = Cli::parse();
    // The other commands print only their results and errors; `RUST_LOG` (e.g. `debug`)
    // adds their logs on standard error: registry retries, HTTP exchanges.
    if std::env::var_os("RUST_LOG").is_some() {
        catalog_server::command::init_logging();
    }
    match cli.command {
        Command::Generate(args) => finish(args.run()),
        Command::Init(args) => finish(args.run()),
        Command::Serve(args) => {
            bundle_tool::heap::limit_malloc_arenas();
            bundle_tool::heap::merge_small_frees();
            catalog_server::command::init_logging();
            finish(args.run())
        }
        Command::Validate(args) => finish(args.run()),
        Command::Build(args) => finish(args.run()),
        Command::Push(args) => finish(args.run()),
        Command::PushAll(args) => finish(args.run()),
        Command::Release(args) => finish(args.run()),
        Command::Run(args) => finish(args.run()),
        Command::Pull(args) => finish(args.run()),
        Command::Inspect(args) => finish(args.run()),
        Command::Catalog(CatalogCommand::Validate(args)) => {
            bundle_tool::heap::map_large_allocations();
            finish(args.run())
        }
        Command::Catalog(CatalogCommand::Render(args)) => {
            bundle_tool::heap::map_large_allocations();
            bundle_tool::heap::grow_heap_in_large_steps();
            finish(args.run())
        }
        Command::Catalog(CatalogCommand::Template(args)) => finish(args.run()),
        Command::Catalog(CatalogCommand::Add(args)) => finish(args.run()),
        Command::Catalog(CatalogCommand::Deprecate(args)) => finish(args.run()),
        Command::Catalog(CatalogCommand::Graph(args)) => finish(args.run()),
        Command::Catalog(CatalogCommand::CheckUpgrades(args)) => finish(args.run()),
        Command::CheckUpgrade(args) => finish(args.run()),
        Command::OlmV1(OlmV1Command::Rbac(args)) => finish(args.run()),
        Command::Objects(args) => finish(args.run()),
        Command::Audit(args) => finish(args.run()),
        Command::Completions { shell } => finish(completions(shell)),
        Command::Man { dir } => finish(man(dir)),
    }
}

/// Prints an action's outcome (notes on standard error, output on standard output) and
/// gives its exit code.
fn finish(result: Result<Outcome, ActionError>) -> ExitCode {
    let outcome = match result {
        Ok(outcome) => outcome,
        Err(error) => return fail(&error),
    };
    let Outcome {
        output,
        notes,
        status,
        loaded,
    } = outcome;
    // The process ends now: freeing a large catalog or model piece by piece is wasted time.
    std::mem::forget(loaded);
    for note in &notes {
        eprintln!("{note}");
    }
    let mut stdout = std::io::stdout().lock();
    if let Err(error) = output.write_to(&mut stdout).and_then(|()| stdout.flush()) {
        return fail(&ActionError::from(error));
    }
    match status {
        Status::Success => ExitCode::SUCCESS,
        Status::Failure => ExitCode::FAILURE,
    }
}

fn fail(error: &ActionError) -> ExitCode {
    // A closed pipe (`bundle-tool objects . | head`) is the reader's choice, not an error.
    if error.is_broken_pipe() {
        return ExitCode::SUCCESS;
    }
    eprintln!("error: {error}");
    ExitCode::FAILURE
}

/// Completions are generated from `Cli`, which only the binary has.
fn completions(shell: CompletionShell) -> Result<Outcome, ActionError> {
    let shell = match shell {
        CompletionShell::Bash => clap_complete::Shell::Bash,
        CompletionShell::Zsh => clap_complete::Shell::Zsh,
        CompletionShell::Fish => clap_complete::Shell::Fish,
    };
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "bundle-tool", &mut script);
    Ok(Outcome::text(String::from_utf8_lossy(&script)))
}

/// The man page of `Cli` on standard output, or a page per command into `dir`.
fn man(dir: Option<PathBuf>) -> Result<Outcome, ActionError> {
    match dir {
        None => {
            let mut page = Vec::new();
            clap_mangen::Man::new(Cli::command()).render(&mut page)?;
            Ok(Outcome::text(String::from_utf8_lossy(&page)))
        }
        Some(dir) => {
            std::fs::create_dir_all(&dir)
                .and_then(|()| clap_mangen::generate_to(Cli::command(), &dir))
                .map_err(|e| {
                    ActionError::message(format!("writing man pages into {}: {e}", dir.display()))
                })?;
            Ok(Outcome::line(format!(
                "wrote man pages into {}",
                dir.display()
            )))
        }
    }
}
