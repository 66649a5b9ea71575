//! `bundle-tool validate` against `operator-sdk bundle validate`, both with
//! `--select-optional suite=operatorframework`, over all 266 corpus bundles, one process per
//! bundle for each tool, in the same run (not a timed test). Prints each tool's wall and CPU
//! time (user + system of its processes) and the ratios.
//! `cargo build --release -p bundle-tool && cargo bench -p e2e --bench validate`.
//!
//! `BENCH_BASELINE`, `BENCH_BUNDLE_TOOL` and `BENCH_ROUNDS` as in `e2e::bench_run`: with a
//! baseline, every round runs operator-sdk, ours and the baseline in turn, and medians are
//! printed.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use e2e::assets::Assets;
use e2e::bench_run::{bundle_tools, children_cpu, median, rounds};

/// Wall and CPU seconds of validating every bundle, one process each.
fn total(program: &Path, args: &[&str], bundles: &[PathBuf]) -> (f64, f64) {
    let (started, cpu) = (Instant::now(), children_cpu());
    for bundle in bundles {
        let status = Command::new(program)
            .args(args)
            .arg(bundle)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .expect("run");
        // Exit 1 is a verdict (8 corpus bundles are invalid), not a failure of the run.
        assert!(
            matches!(status.code(), Some(0) | Some(1)),
            "{} crashed on {}",
            program.display(),
            bundle.display()
        );
    }
    (started.elapsed().as_secs_f64(), children_cpu() - cpu)
}

fn main() {
    let sdk = Assets::locate()
        .expect("assets")
        .operator_sdk()
        .expect("operator-sdk");
    let (ours, baseline) = bundle_tools();
    let bundles: Vec<PathBuf> = e2e::corpus::bundles()
        .into_iter()
        .map(|(_, _, dir)| dir)
        .collect();
    let sdk_args = [
        "bundle",
        "validate",
        "--select-optional",
        "suite=operatorframework",
    ];
    let our_args = ["validate", "--select-optional", "suite=operatorframework"];

    let mut tools: Vec<(String, &Path, &[&str])> = vec![
        ("operator-sdk".into(), &sdk, &sdk_args),
        (format!("bundle-tool {}", ours.display()), &ours, &our_args),
    ];
    if let Some(baseline) = &baseline {
        tools.push((
            format!("baseline {}", baseline.display()),
            baseline,
            &our_args,
        ));
    }
    let mut figures: Vec<Vec<(f64, f64)>> = vec![Vec::new(); tools.len()];
    for round in 1..=rounds() {
        for (tool, (name, program, args)) in tools.iter().enumerate() {
            let (wall, cpu) = total(program, args, &bundles);
            println!("round {round}: {name:<60} {wall:6.2} s wall, {cpu:6.2} s CPU");
            figures[tool].push((wall, cpu));
        }
    }

    println!("bundles validated           {}", bundles.len());
    let medians: Vec<(f64, f64)> = figures
        .iter()
        .map(|runs| {
            (
                median(runs.iter().map(|r| r.0).collect()),
                median(runs.iter().map(|r| r.1).collect()),
            )
        })
        .collect();
    let (sdk_wall, sdk_cpu) = medians[0];
    for ((name, _, _), (wall, cpu)) in tools.iter().zip(&medians) {
        println!(
            "{name:<60} {wall:6.2} s ({:5.1} ms per bundle), CPU {cpu:6.2} s; \
             operator-sdk / this: {:.1}x wall, {:.1}x CPU",
            wall * 1e3 / bundles.len() as f64,
            sdk_wall / wall,
            sdk_cpu / cpu
        );
    }
}
