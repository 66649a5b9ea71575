//! The `bundle-tool` command line: parses arguments, calls the library, prints, sets the exit code.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use bundle_tool::bundle::{self, GenerateConfig};
use bundle_tool::manifest::{self, KubeObject};
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
    Generate(GenerateArgs),
    /// Serve a file-based catalog over OLM's registry gRPC API, like `opm serve`, with hot
    /// reload and an optional HTTP view.
    #[command(after_help = examples!(
        "bundle-tool serve catalog",
        "bundle-tool serve catalog --inline-bundles --http-port 8081",
    ))]
    Serve(bundle_tool::serve::cli::ServeArgs),
    /// Validate a bundle folder with operator-framework/api's checks (as `operator-sdk bundle
    /// validate`); exit 1 on errors only.
    #[command(after_help = examples!(
        "bundle-tool validate bundle --select-optional suite=operatorframework",
        "bundle-tool validate quay.io/me/redis-operator-bundle:v0.1.0 -o json",
    ))]
    Validate {
        /// The bundle folder (with `manifests/` and `metadata/`), or a bundle image reference.
        dir: PathBuf,
        /// Optional validators, a label selector like operator-sdk's:
        /// `suite=operatorframework`, `name=good-practices`, `suite=operatorframework,name!=good-practices`.
        #[arg(long, value_parser = bundle_tool::validate::Optional::select)]
        select_optional: Option<bundle_tool::validate::Optional>,
        /// Values for optional validators, like operator-sdk: `k8s-version=1.25` (removed
        /// APIs become errors from that version on). Repeatable or comma-separated.
        #[arg(long, value_parser = optional_values)]
        optional_values: Vec<String>,
        /// Pull an image reference over plain HTTP.
        #[arg(long)]
        plain_http: bool,
        /// Output format.
        #[arg(short, long, value_enum, default_value = "text")]
        output: ValidateFormat,
    },
    /// Build a bundle folder into a deterministic OCI image, written to an OCI image layout.
    #[command(after_help = examples!(
        "bundle-tool build bundle",
        "bundle-tool build catalog --catalog --tag latest",
        "bundle-tool build --binary target/release/redis-operator --tag v0.1.0",
    ))]
    Build {
        /// The bundle folder (or, with --catalog, the catalog folder).
        #[arg(required_unless_present = "binary")]
        dir: Option<PathBuf>,
        /// Build an operator image from this statically linked binary instead (as `ko` does):
        /// the binary alone, run as a non-root user.
        #[arg(long, conflicts_with_all = ["dir", "catalog"])]
        binary: Option<PathBuf>,
        /// Build a catalog image: the folder at /configs, labelled for opm and OLM.
        #[arg(long)]
        catalog: bool,
        /// The tag in the layout (default `v<version>` from the CSV).
        #[arg(long)]
        tag: Option<String>,
        /// The OCI image layout folder.
        #[arg(long, default_value = "target/oci")]
        oci_layout: PathBuf,
        /// Manifest format: OCI (default) or Docker v2 schema 2.
        #[arg(long, value_enum, default_value = "oci")]
        format: bundle_tool::image::ImageFormat,
    },
    /// Push a bundle folder (built on the fly) or an OCI layout to a registry; prints
    /// `REF@sha256:…` after checking the registry's digest.
    #[command(after_help = examples!(
        "bundle-tool push bundle quay.io/me/redis-operator-bundle:v0.1.0",
        "bundle-tool push target/oci:v0.1.0 127.0.0.1:5000/me/bundle:v0.1.0 --plain-http",
    ))]
    Push {
        /// A bundle folder, an OCI layout folder (`DIR` or `DIR:TAG`), or an image reference to
        /// copy.
        source: String,
        /// Where to push, e.g. `quay.io/me/redis-operator-bundle:v0.1.0`.
        reference: String,
        /// Manifest format when building from a folder: OCI (default) or Docker v2 schema 2.
        #[arg(long, value_enum, default_value = "oci")]
        format: bundle_tool::image::ImageFormat,
        #[command(flatten)]
        registry: RegistryArgs,
    },
    /// Build and push every bundle folder below a folder (laid out `<package>/<version>/`, or
    /// bundles directly inside) to `<repository-prefix>/<package>:<version>`, several at a
    /// time in one process — a release job publishing many bundles.
    #[command(after_help = examples!(
        "bundle-tool push-all bundles quay.io/me",
        "bundle-tool push-all bundles 127.0.0.1:5000/test --plain-http --jobs 4",
    ))]
    PushAll {
        /// The folder of bundle folders.
        dir: PathBuf,
        /// Where to push, e.g. `quay.io/me` (each bundle goes to `<prefix>/<package>:<version>`).
        prefix: String,
        /// Pushes at the same time.
        #[arg(long, default_value_t = 8)]
        jobs: usize,
        #[command(flatten)]
        registry: RegistryArgs,
    },
    /// Pull a bundle image and unpack it into a folder (safely: no paths escape it).
    #[command(after_help = examples!(
        "bundle-tool pull quay.io/me/redis-operator-bundle:v0.1.0 /tmp/bundle",
    ))]
    Pull {
        /// The image.
        reference: String,
        /// Where to unpack.
        dir: PathBuf,
        #[command(flatten)]
        registry: RegistryArgs,
    },
    /// Show an image's digest, labels and layers.
    #[command(after_help = examples!(
        "bundle-tool inspect quay.io/me/redis-operator-bundle:v0.1.0",
    ))]
    Inspect {
        /// The image.
        reference: String,
        #[command(flatten)]
        registry: RegistryArgs,
    },
    /// File-based catalogs: validate, render, templates, release edits, upgrade graphs.
    #[command(subcommand, after_help = examples!(
        "bundle-tool catalog validate catalog",
        "bundle-tool catalog render catalog -o yaml",
    ))]
    Catalog(CatalogCommand),
    /// List the Kubernetes objects in files or folders of YAML/JSON manifests, with the
    /// file and line each starts on. `-` reads standard input.
    #[command(after_help = examples!(
        "bundle-tool objects bundle/manifests",
        "redis-operator manifests | bundle-tool objects -",
    ))]
    Objects {
        /// Files or folders to read.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
    },
    /// Assess a bundle's or catalog's capability level from evidence, against the declared one.
    #[command(after_help = examples!(
        "bundle-tool audit bundle",
        "bundle-tool audit bundle --min-level 3",
        "bundle-tool audit catalog -o html > audit.html",
    ))]
    Audit(bundle_tool::audit::cli::AuditArgs),
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
enum CatalogCommand {
    /// Check a catalog folder with every rule of `opm validate`; exit 1 if it is invalid.
    #[command(after_help = examples!("bundle-tool catalog validate catalog"))]
    Validate {
        /// The catalog folder.
        dir: PathBuf,
    },
    /// Print catalog folders' documents, or bundle folders as `olm.bundle` documents, the way
    /// `opm render` does.
    #[command(after_help = examples!(
        "bundle-tool catalog render catalog -o yaml",
        "bundle-tool catalog render bundle quay.io/me/catalog:latest > all.json",
    ))]
    Render {
        /// Catalog folders, bundle folders (with `manifests/` and `metadata/`), or catalog and
        /// bundle image references.
        #[arg(required = true)]
        dirs: Vec<PathBuf>,
        /// Output format.
        #[arg(short, long, value_enum, default_value = "json")]
        output: RenderFormat,
        /// Pull images over plain HTTP (opm's --use-http).
        #[arg(long)]
        plain_http: bool,
    },
    /// Render an `olm.template.basic` or `olm.semver` template into FBC, as
    /// `opm alpha render-template` does.
    #[command(after_help = examples!(
        "bundle-tool catalog template semver catalog/template.yaml -o yaml",
        "bundle-tool catalog template catalog/template.yaml --bundle-source quay.io/me/b:v0.1.0=bundle",
    ))]
    Template(bundle_tool::catalog::template::TemplateArgs),
    /// Add a bundle to a catalog as the new head of channels; validated before writing.
    #[command(after_help = examples!(
        "bundle-tool catalog add catalog bundle --channels alpha,stable --image quay.io/me/b:v0.2.0",
        "bundle-tool catalog add catalog quay.io/me/b:v0.3.0 --channels alpha --replaces auto",
    ))]
    Add(bundle_tool::catalog::add::AddArgs),
    /// Deprecate a bundle, a channel or a package (`olm.deprecations`).
    #[command(after_help = examples!(
        "bundle-tool catalog deprecate catalog --package redis-operator --bundle redis-operator.v0.1.0 --message \"upgrade to 0.2.0\"",
        "bundle-tool catalog deprecate catalog --package redis-operator --channel alpha --message \"use stable\"",
    ))]
    Deprecate(bundle_tool::catalog::deprecate::DeprecateArgs),
    /// Draw a catalog's upgrade graph: mermaid (as `opm alpha render-graph`) or HTML.
    #[command(after_help = examples!(
        "bundle-tool catalog graph catalog",
        "bundle-tool catalog graph catalog -p redis-operator -o html > graph.html",
    ))]
    Graph(bundle_tool::catalog::graph::GraphArgs),
}

#[derive(clap::Args)]
struct RegistryArgs {
    /// Talk plain HTTP (for registries on localhost).
    #[arg(long)]
    plain_http: bool,
    /// User name; the password is read from standard input with --password-stdin, else auth
    /// files ($REGISTRY_AUTH_FILE, ~/.docker/config.json) are used.
    #[arg(long, requires = "password_stdin")]
    username: Option<String>,
    /// Read the password from standard input (never from the command line).
    #[arg(long, requires = "username")]
    password_stdin: bool,
}

impl RegistryArgs {
    fn client(
        &self,
        reference: &oci_client::Reference,
    ) -> anyhow::Result<bundle_tool::image::RegistryClient> {
        use bundle_tool::image::Credentials;
        let credentials = match &self.username {
            Some(username) => {
                let password = std::io::read_to_string(std::io::stdin())?
                    .trim_end_matches(['\n', '\r'])
                    .to_string();
                Credentials::Basic {
                    username: username.clone(),
                    password,
                }
            }
            None => Credentials::from_auth_files(reference.registry()),
        };
        Ok(bundle_tool::image::RegistryClient::new(
            self.plain_http,
            credentials,
        ))
    }
}

/// Pulls an image into a temporary folder: for a catalog image, the folder its
/// `index.configs.v1` label names; for a bundle image, the bundle root.
fn pull_to_temp(reference: &str, plain_http: bool) -> anyhow::Result<(tempfile::TempDir, PathBuf)> {
    let parsed = parse_reference(reference)?;
    let args = RegistryArgs {
        plain_http,
        username: None,
        password_stdin: false,
    };
    let client = args.client(&parsed)?;
    let image = runtime()?.block_on(client.pull(&parsed))?;
    let folder = tempfile::tempdir()?;
    bundle_tool::image::unpack_layer(&image.layer, folder.path())?;
    let config: serde_json::Value = serde_json::from_slice(&image.config)?;
    let labels = &config["config"]["Labels"];
    let root = match labels[bundle_tool::image::CATALOG_CONFIGS_LABEL].as_str() {
        Some(configs) => folder.path().join(configs.trim_start_matches('/')),
        None if labels["operators.operatorframework.io.bundle.package.v1"].is_string() => {
            folder.path().to_path_buf()
        }
        None => anyhow::bail!(
            "{reference}: image type could not be determined (no catalog or bundle labels)"
        ),
    };
    Ok((folder, root))
}

fn parse_reference(text: &str) -> anyhow::Result<oci_client::Reference> {
    // Not `text.parse()`: that compiles a large regex, a third of a one-image push's CPU.
    bundle_tool::image::parse_reference(text)
}

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?)
}

/// The bundle labels: every key of metadata/annotations.yaml.
fn bundle_labels(dir: &Path) -> anyhow::Result<std::collections::BTreeMap<String, String>> {
    let path = dir.join("metadata").join("annotations.yaml");
    let documents = manifest::read_path(&path)?;
    let annotations = documents
        .first()
        .and_then(|d| d.value.get("annotations"))
        .and_then(serde_json::Value::as_object)
        .with_context(|| format!("{}: no `annotations:` map", path.display()))?;
    Ok(annotations
        .iter()
        .map(|(k, v)| {
            (
                k.clone(),
                v.as_str()
                    .map(str::to_string)
                    .unwrap_or_else(|| v.to_string()),
            )
        })
        .collect())
}

fn build_image(dir: &Path) -> anyhow::Result<bundle_tool::image::BuiltImage> {
    let labels = bundle_labels(dir)?;
    Ok(bundle_tool::image::build_bundle_image(dir, &labels)?)
}

fn csv_version(dir: &Path) -> Option<String> {
    let documents = manifest::read_path(&dir.join("manifests")).ok()?;
    documents
        .iter()
        .find(|d| d.value["kind"] == "ClusterServiceVersion")
        .and_then(|d| {
            d.value
                .pointer("/spec/version")
                .and_then(serde_json::Value::as_str)
                .map(str::to_string)
        })
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum ValidateFormat {
    Text,
    Json,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum RenderFormat {
    Json,
    Yaml,
}

#[derive(clap::Args)]
struct GenerateArgs {
    /// The config file (package, version, channels, CSV metadata).
    #[arg(long, default_value = "bundle-tool.yaml")]
    config: PathBuf,
    /// The manifests: a file, a folder, or `-` for standard input (overrides the config).
    #[arg(long)]
    manifests: Option<PathBuf>,
    /// Where to write the bundle (overrides the config; default `bundle`).
    #[arg(long)]
    output: Option<PathBuf>,
    /// The operator version (overrides the config).
    #[arg(long)]
    version: Option<String>,
    /// Channels, comma-separated (override the config).
    #[arg(long, value_delimiter = ',')]
    channels: Option<Vec<String>>,
    /// The default channel (overrides the config).
    #[arg(long)]
    default_channel: Option<String>,
    /// `spec.replaces` (overrides the config).
    #[arg(long)]
    replaces: Option<String>,
    /// The `olm.skipRange` annotation (overrides the config).
    #[arg(long)]
    skip_range: Option<String>,
    /// Check that the bundle on disk is what would be generated, write nothing; exit 1 if not.
    #[arg(long)]
    check: bool,
}

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(code) => code,
        // A closed pipe (`bundle-tool objects . | head`) is the reader's choice, not an error.
        Err(error)
            if error
                .downcast_ref::<std::io::Error>()
                .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe) =>
        {
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Generate(args) => generate(args),
        Command::Completions { shell } => {
            let shell = match shell {
                CompletionShell::Bash => clap_complete::Shell::Bash,
                CompletionShell::Zsh => clap_complete::Shell::Zsh,
                CompletionShell::Fish => clap_complete::Shell::Fish,
            };
            let mut command = Cli::command();
            clap_complete::generate(shell, &mut command, "bundle-tool", &mut std::io::stdout());
            Ok(ExitCode::SUCCESS)
        }
        Command::Man { dir: None } => {
            let mut out = std::io::stdout().lock();
            clap_mangen::Man::new(Cli::command()).render(&mut out)?;
            out.flush()?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Man { dir: Some(dir) } => {
            std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
            clap_mangen::generate_to(Cli::command(), &dir)
                .with_context(|| format!("writing man pages into {}", dir.display()))?;
            println!("wrote man pages into {}", dir.display());
            Ok(ExitCode::SUCCESS)
        }
        Command::Serve(args) => bundle_tool::serve::cli::serve(args),
        Command::Build {
            dir: None,
            binary: Some(binary),
            tag,
            oci_layout,
            format,
            ..
        } => {
            let name = binary
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let labels = std::collections::BTreeMap::from([
                ("org.opencontainers.image.title".to_string(), name),
                (
                    "org.opencontainers.image.version".to_string(),
                    tag.clone().unwrap_or_else(|| "latest".into()),
                ),
            ]);
            let image =
                bundle_tool::image::build_binary_image(&binary, &labels)?.with_format(format);
            let tag = tag.unwrap_or_else(|| "latest".into());
            bundle_tool::image::write_layout(&oci_layout, &tag, &image)?;
            println!("{}:{tag}@{}", oci_layout.display(), image.digest());
            Ok(ExitCode::SUCCESS)
        }
        Command::Build {
            dir,
            catalog,
            tag,
            oci_layout,
            format,
            ..
        } => {
            let dir = dir.context("a folder to build is needed")?;
            let image = if catalog {
                // Refuse to package a catalog opm would not load.
                bundle_tool::catalog::model::validate_dir(&dir)
                    .map_err(|e| anyhow::anyhow!("{}: {e}", dir.display()))?;
                bundle_tool::image::build_catalog_image(&dir)?
            } else {
                build_image(&dir)?
            }
            .with_format(format);
            let tag = tag
                .or_else(|| csv_version(&dir).map(|v| format!("v{v}")))
                .unwrap_or_else(|| "latest".into());
            bundle_tool::image::write_layout(&oci_layout, &tag, &image)?;
            println!("{}:{tag}@{}", oci_layout.display(), image.digest());
            Ok(ExitCode::SUCCESS)
        }
        Command::Push {
            source,
            reference,
            format,
            registry,
        } => {
            let target = parse_reference(&reference)?;
            let (path, tag) = match source.rsplit_once(':') {
                Some((path, tag)) if Path::new(path).join("index.json").is_file() => {
                    (PathBuf::from(path), Some(tag.to_string()))
                }
                _ => (PathBuf::from(&source), None),
            };
            let image = if path.join("index.json").is_file() {
                bundle_tool::image::read_layout(&path, tag.as_deref())?
            } else if path.exists() {
                build_image(&path)?.with_format(format)
            } else {
                // An image reference: copy it (credentials for the source from auth files).
                let from = parse_reference(&source)?;
                let source_args = RegistryArgs {
                    plain_http: registry.plain_http,
                    username: None,
                    password_stdin: false,
                };
                runtime()?.block_on(source_args.client(&from)?.pull(&from))?
            };
            let client = registry.client(&target)?;
            let digest = runtime()?.block_on(client.push(&target, &image))?;
            println!(
                "{}@{digest}",
                target.whole().split('@').next().unwrap_or_default()
            );
            Ok(ExitCode::SUCCESS)
        }
        Command::Pull {
            reference,
            dir,
            registry,
        } => {
            let source = parse_reference(&reference)?;
            let client = registry.client(&source)?;
            let image = runtime()?.block_on(client.pull(&source))?;
            let files = bundle_tool::image::unpack_layer(&image.layer, &dir)?;
            println!(
                "unpacked {} files of {}@{} into {}",
                files.len(),
                reference,
                image.digest(),
                dir.display()
            );
            Ok(ExitCode::SUCCESS)
        }
        Command::Inspect {
            reference,
            registry,
        } => {
            let source = parse_reference(&reference)?;
            let client = registry.client(&source)?;
            let image = runtime()?.block_on(client.pull(&source))?;
            let config: serde_json::Value = serde_json::from_slice(&image.config)?;
            let manifest: serde_json::Value = serde_json::from_slice(&image.manifest)?;
            let report = serde_json::json!({
                "reference": reference,
                "digest": image.digest(),
                "mediaType": manifest["mediaType"],
                "labels": config["config"]["Labels"],
                "layers": manifest["layers"],
            });
            println!("{}", serde_json::to_string_pretty(&report)?);
            Ok(ExitCode::SUCCESS)
        }
        Command::Validate {
            dir,
            select_optional,
            optional_values,
            output,
            plain_http,
        } => {
            let mut optional = select_optional.unwrap_or_default();
            for values in &optional_values {
                optional.set_values(values).map_err(anyhow::Error::msg)?;
            }
            if dir.exists() {
                validate(&dir, &optional, output)
            } else {
                let (_folder, root) = pull_to_temp(&dir.to_string_lossy(), plain_http)?;
                validate(&root, &optional, output)
            }
        }
        Command::Catalog(CatalogCommand::Validate { dir }) => {
            bundle_tool::heap::map_large_allocations();
            match bundle_tool::catalog::model::validate_dir(&dir) {
                Ok(valid) => {
                    println!(
                        "{}: valid ({} packages, {} channel entries)",
                        dir.display(),
                        valid.packages,
                        valid.channel_entries
                    );
                    Ok(ExitCode::SUCCESS)
                }
                Err(message) => {
                    eprintln!("{message}");
                    Ok(ExitCode::FAILURE)
                }
            }
        }
        Command::Catalog(CatalogCommand::Render {
            dirs,
            output,
            plain_http,
        }) => {
            bundle_tool::heap::map_large_allocations();
            bundle_tool::heap::grow_heap_in_large_steps();
            use bundle_tool::catalog::declcfg::{self, DeclarativeConfig};
            let mut all = DeclarativeConfig::default();
            let mut spool = declcfg::JsonSpool::new();
            let json = matches!(output, RenderFormat::Json);
            let mut pulled = Vec::new();
            for argument in &dirs {
                let (dir, image) = if argument.exists() {
                    (argument.clone(), String::new())
                } else {
                    let reference = argument.to_string_lossy().into_owned();
                    let (folder, root) = pull_to_temp(&reference, plain_http)?;
                    pulled.push(folder);
                    (root, reference)
                };
                let dir = &dir;
                if bundle_tool::catalog::render::is_bundle_dir(dir) {
                    let bundle = bundle_tool::catalog::render::render_bundle_dir(dir, &image)
                        .map_err(|e| anyhow::anyhow!("{}: {e}", argument.display()))?;
                    if json {
                        let config = DeclarativeConfig {
                            bundles: vec![bundle],
                            ..Default::default()
                        };
                        spool.append(declcfg::RenderedDocuments::of(&config)?)?;
                    } else {
                        all.bundles.push(bundle);
                    }
                    continue;
                }
                if !image.is_empty() {
                    anyhow::ensure!(
                        dir.is_dir(),
                        "{}: neither a bundle nor a catalog image",
                        argument.display()
                    );
                }
                if json {
                    // File by file, each written out as soon as it is parsed (see `spool`).
                    let files = declcfg::catalog_files(dir)?;
                    let (text, index) = spool.parts();
                    let render_file = |file: &std::path::PathBuf| -> anyhow::Result<_> {
                        let config = declcfg::load_file(file)?;
                        Ok(text.store(declcfg::RenderedDocuments::of(&config)?)?)
                    };
                    // Workers store the text themselves and hand back only where it is, so
                    // files can be rendered in any order: largest first.
                    let size = |i: usize| std::fs::metadata(&files[i]).map_or(0, |m| m.len());
                    bundle_tool::parallel::for_each_ordered_largest_first(
                        &files,
                        size,
                        render_file,
                        |r| {
                            index.append(r?);
                            Ok::<(), anyhow::Error>(())
                        },
                    )?;
                    continue;
                }
                let config = declcfg::load_dir(dir)?;
                all.append(config);
            }
            let mut stdout = std::io::stdout().lock();
            match output {
                RenderFormat::Json => spool.write_to_fd(&mut stdout)?,
                RenderFormat::Yaml => stdout.write_all(declcfg::to_yaml(&all).as_bytes())?,
            }
            stdout.flush()?;
            // The process ends now: freeing every document one by one is wasted time.
            std::mem::forget(all);
            Ok(ExitCode::SUCCESS)
        }
        Command::Catalog(CatalogCommand::Template(args)) => {
            print_or_fail(bundle_tool::catalog::template::run(&args))
        }
        Command::Catalog(CatalogCommand::Add(args)) => {
            print_or_fail(bundle_tool::catalog::add::run(&args))
        }
        Command::Catalog(CatalogCommand::Deprecate(args)) => {
            print_or_fail(bundle_tool::catalog::deprecate::run(&args))
        }
        Command::Catalog(CatalogCommand::Graph(args)) => {
            print_or_fail(bundle_tool::catalog::graph::run(&args))
        }
        Command::PushAll {
            dir,
            prefix,
            jobs,
            registry,
        } => push_all(&dir, &prefix, jobs.max(1), &registry),
        Command::Objects { paths } => list_objects(&paths),
        Command::Audit(args) => bundle_tool::audit::cli::run(args),
    }
}

/// Prints a command's text output, or its error on stderr with exit code 1.
fn print_or_fail(result: Result<String, String>) -> anyhow::Result<ExitCode> {
    match result {
        Ok(text) => {
            std::io::stdout().lock().write_all(text.as_bytes())?;
            Ok(ExitCode::SUCCESS)
        }
        Err(message) => {
            eprintln!("error: {message}");
            Ok(ExitCode::FAILURE)
        }
    }
}

fn read_objects(path: &Path) -> anyhow::Result<Vec<KubeObject>> {
    let documents = if path.as_os_str() == "-" {
        let text = std::io::read_to_string(std::io::stdin())?;
        manifest::read_stream(path, &text)?
    } else {
        manifest::read_path(path)?
    };
    documents
        .into_iter()
        .map(|d| {
            let location = d.location.clone();
            KubeObject::from_document(d)
                .map_err(|why| anyhow::anyhow!("{location}: not a Kubernetes object: {why}"))
        })
        .collect()
}

/// `createdAt`: `SOURCE_DATE_EPOCH` when set (reproducible builds), else now.
fn created_at() -> anyhow::Result<String> {
    let timestamp = match std::env::var("SOURCE_DATE_EPOCH") {
        Ok(epoch) => {
            let seconds: i64 = epoch
                .trim()
                .parse()
                .with_context(|| format!("SOURCE_DATE_EPOCH={epoch:?} is not a number"))?;
            jiff::Timestamp::from_second(seconds)?
        }
        Err(_) => jiff::Timestamp::from_second(jiff::Timestamp::now().as_second())?,
    };
    Ok(timestamp.strftime("%Y-%m-%dT%H:%M:%SZ").to_string())
}

fn generate(args: GenerateArgs) -> anyhow::Result<ExitCode> {
    let mut config = GenerateConfig::load(&args.config)?;
    if let Some(version) = args.version {
        config.version = version;
    }
    if let Some(channels) = args.channels {
        config.channels = channels;
    }
    if args.default_channel.is_some() {
        config.default_channel = args.default_channel;
    }
    if args.replaces.is_some() {
        config.replaces = args.replaces;
    }
    if args.skip_range.is_some() {
        config.skip_range = args.skip_range;
    }
    let manifests_path = args
        .manifests
        .or_else(|| config.manifests.clone())
        .context("no manifests: give --manifests or `manifests:` in the config")?;
    let objects = read_objects(&manifests_path)?;
    let samples = match &config.samples {
        Some(path) => read_objects(path)?,
        None => Vec::new(),
    };
    let icon = match &config.csv.icon {
        Some(path) => {
            let data = std::fs::read(path)
                .with_context(|| format!("reading the icon {}", path.display()))?;
            let media_type = match path.extension().and_then(|e| e.to_str()) {
                Some("svg") => "image/svg+xml",
                Some("png") => "image/png",
                Some("jpg") | Some("jpeg") => "image/jpeg",
                Some("gif") => "image/gif",
                _ => anyhow::bail!(
                    "{}: the icon must be .svg, .png, .jpg or .gif",
                    path.display()
                ),
            };
            Some((
                base64::Engine::encode(&base64::engine::general_purpose::STANDARD, data),
                media_type.to_string(),
            ))
        }
        None => None,
    };
    let generated = bundle::generate(&config, &objects, &samples, icon, &created_at()?)?;
    for warning in &generated.warnings {
        eprintln!("warning: {}", warning.0);
    }
    let output = args
        .output
        .or(config.output.clone())
        .unwrap_or_else(|| PathBuf::from("bundle"));
    if args.check {
        let differences = bundle::write::compare(&generated, &output)?;
        if differences.is_empty() {
            println!("{} is up to date", output.display());
            return Ok(ExitCode::SUCCESS);
        }
        for difference in differences {
            eprintln!("out of date: {difference}");
        }
        eprintln!("run `bundle-tool generate` and commit the result");
        return Ok(ExitCode::FAILURE);
    }
    let dockerfile = bundle::write::write_bundle(&generated, &output)?;
    println!(
        "wrote {} ({} files) and {}",
        output.display(),
        generated.files.len(),
        dockerfile.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// Checks `--optional-values` when the command line is parsed, so that a bad key is a usage
/// error (exit 2) rather than a validation failure (exit 1).
fn optional_values(values: &str) -> Result<String, String> {
    bundle_tool::validate::Optional::default().set_values(values)?;
    Ok(values.to_string())
}

fn validate(
    dir: &Path,
    optional: &bundle_tool::validate::Optional,
    output: ValidateFormat,
) -> anyhow::Result<ExitCode> {
    let report = bundle_tool::validate::validate_bundle_with(dir, optional);
    let mut out = std::io::stdout().lock();
    match output {
        ValidateFormat::Json => {
            writeln!(out, "{}", serde_json::to_string_pretty(&report.to_json())?)?
        }
        ValidateFormat::Text => {
            // Grouped by file, as people fix them file by file.
            let mut current_file: Option<&str> = None;
            for finding in &report.findings {
                let file = finding.file.as_deref();
                if file.is_some() && file != current_file {
                    writeln!(out, "{}:", file.unwrap_or_default())?;
                }
                current_file = file;
                writeln!(out, "{}{finding}", if file.is_some() { "  " } else { "" })?;
            }
            if report.passed() {
                writeln!(out, "{}: valid", dir.display())?;
            }
        }
    }
    Ok(if report.passed() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// `(package, version, folder)` for every bundle folder at most two levels below `dir`.
fn bundle_folders(dir: &Path) -> anyhow::Result<Vec<(String, String, PathBuf)>> {
    let mut found = Vec::new();
    let mut entries: Vec<_> = std::fs::read_dir(dir)?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .collect();
    entries.sort();
    for entry in entries {
        if bundle_tool::catalog::render::is_bundle_dir(&entry) {
            let name = entry
                .file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned();
            found.push((
                name,
                csv_version(&entry).unwrap_or_else(|| "latest".into()),
                entry,
            ));
        } else if entry.is_dir() {
            let mut versions: Vec<_> = std::fs::read_dir(&entry)?
                .filter_map(Result::ok)
                .map(|e| e.path())
                .collect();
            versions.sort();
            for version in versions
                .into_iter()
                .filter(|v| bundle_tool::catalog::render::is_bundle_dir(v))
            {
                let package = entry
                    .file_name()
                    .unwrap_or_default()
                    .to_string_lossy()
                    .into_owned();
                let tag = version
                    .file_name()
                    .unwrap_or_default()
                    .to_string_lossy()
                    .into_owned();
                found.push((package, tag, version));
            }
        }
    }
    Ok(found)
}

fn push_all(
    dir: &Path,
    prefix: &str,
    jobs: usize,
    registry: &RegistryArgs,
) -> anyhow::Result<ExitCode> {
    let bundles = bundle_folders(dir)?;
    anyhow::ensure!(
        !bundles.is_empty(),
        "{}: no bundle folders found",
        dir.display()
    );
    let first = parse_reference(&format!("{prefix}/probe:latest"))?;
    let client = std::sync::Arc::new(registry.client(&first)?);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let results = runtime.block_on(async {
        let limit = std::sync::Arc::new(tokio::sync::Semaphore::new(jobs));
        let mut tasks = Vec::new();
        for (package, version, folder) in bundles {
            let (client, limit, prefix) = (client.clone(), limit.clone(), prefix.to_string());
            tasks.push(tokio::spawn(async move {
                let _permit = limit.acquire_owned().await?;
                // Tags allow [A-Za-z0-9_.-]: a version's `+build` becomes `_build`.
                let reference =
                    parse_reference(&format!("{prefix}/{package}:{}", version.replace('+', "_")))?;
                let image = tokio::task::spawn_blocking(move || build_image(&folder)).await??;
                let digest = client.push(&reference, &image).await?;
                anyhow::Ok(format!("{}@{digest}", reference.whole()))
            }));
        }
        let mut lines = Vec::new();
        for task in tasks {
            lines.push(task.await.map_err(anyhow::Error::from).and_then(|r| r));
        }
        lines
    });
    let mut failed = 0;
    let mut out = std::io::stdout().lock();
    for result in results {
        match result {
            Ok(line) => writeln!(out, "{line}")?,
            Err(error) => {
                failed += 1;
                eprintln!("error: {error:#}");
            }
        }
    }
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

fn list_objects(paths: &[PathBuf]) -> anyhow::Result<ExitCode> {
    let mut failed = false;
    let mut out = std::io::stdout().lock();
    for path in paths {
        let documents = if path.as_os_str() == "-" {
            let text = std::io::read_to_string(std::io::stdin())?;
            manifest::read_stream(path, &text)?
        } else {
            manifest::read_path(path)?
        };
        for document in documents {
            let location = document.location.clone();
            match KubeObject::from_document(document) {
                Ok(object) => writeln!(out, "{location}\t{}", object.id)?,
                Err(why) => {
                    eprintln!("error: {location}: not a Kubernetes object: {why}");
                    failed = true;
                }
            }
        }
    }
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}
