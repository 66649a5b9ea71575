//! The `bundle-tool` command line: parses arguments, calls the library, prints, sets the exit code.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use bundle_tool::manifest::{self, KubeObject};
use clap::{Parser, Subcommand};

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
    /// List the Kubernetes objects in files or folders of YAML/JSON manifests, with the
    /// file and line each starts on. `-` reads standard input.
    Objects {
        /// Files or folders to read.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
    },
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
        Command::Objects { paths } => list_objects(&paths),
    }
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
