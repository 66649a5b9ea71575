//! `catalog-server`: the program in every catalog image. `serve` runs OLM's registry API over
//! `/configs`; called as `grpc_health_probe`, it is the probe OLM's registry pods exec.

use std::process::ExitCode;

use clap::Parser;

use catalog_server::command::{self, Command};

fn main() -> ExitCode {
    if let Some(code) = command::run_as_health_probe() {
        return ExitCode::from(code);
    }
    match Command::parse() {
        // No registry client here: a bundle that would have to be pulled is refused.
        Command::Serve(flags) => ExitCode::from(command::serve(&flags, None)),
    }
}
