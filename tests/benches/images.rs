//! Build and push all 266 corpus bundles to a local registry with `bundle-tool push`, against
//! `skopeo copy` of the same images from OCI layouts (built beforehand, not timed) to a second
//! registry, in the same run (not a timed test): one process per bundle for each tool, and
//! `bundle-tool push-all` publishing all of them from one process.
//! Each phase also reports the CPU time (user + system) of the processes it ran, which a
//! machine shared with other builds disturbs far less than wall time. Every phase pushes to a
//! registry of its own, started empty, so no phase finds blobs another one pushed.
//! `cargo build --release -p bundle-tool && cargo bench -p e2e --bench images`.
//!
//! `BENCH_BASELINE`, `BENCH_BUNDLE_TOOL` and `BENCH_ROUNDS` as in `e2e::bench_run`: with a
//! baseline, every round runs each of our phases with ours and then with the baseline, then
//! skopeo, and medians are printed.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use e2e::bench_run::{bundle_tools, children_cpu, median, rounds};
use e2e::{OciRegistry, RegistryAuth};

fn quiet(command: &mut Command) {
    let status = command
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .expect("run");
    assert!(
        status.status.success(),
        "{command:?} failed: {}",
        String::from_utf8_lossy(&status.stderr)
    );
}

/// Wall and CPU seconds of `phase`, run against a registry started empty for it.
async fn timed(phase: impl FnOnce(&str)) -> anyhow::Result<(f64, f64)> {
    let registry = OciRegistry::start(RegistryAuth::Anonymous).await?;
    let (started, cpu) = (Instant::now(), children_cpu());
    phase(&registry.host());
    Ok((started.elapsed().as_secs_f64(), children_cpu() - cpu))
}

fn push_each(binary: &Path, bundles: &[(String, PathBuf)], host: &str) {
    for (name, dir) in bundles {
        quiet(
            Command::new(binary)
                .arg("push")
                .arg(dir)
                .arg(format!("{host}/bench/{name}"))
                .arg("--plain-http"),
        );
    }
}

fn push_all(binary: &Path, root: &Path, host: &str) {
    quiet(
        Command::new(binary)
            .arg("push-all")
            .arg(root)
            .arg(format!("{host}/bench"))
            .arg("--plain-http"),
    );
}

fn skopeo_each(layouts: &Path, bundles: &[(String, PathBuf)], host: &str) {
    for (i, (name, _)) in bundles.iter().enumerate() {
        quiet(
            Command::new("skopeo")
                .args(["copy", "--dest-tls-verify=false"])
                .arg(format!(
                    "oci:{}:bench",
                    layouts.join(i.to_string()).display()
                ))
                .arg(format!("docker://{host}/bench/{name}")),
        );
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let (ours, baseline) = bundle_tools();
    let root = e2e::corpus::bundles_root();
    // Tags allow [A-Za-z0-9_.-]: a version's `+build` becomes `_build`.
    let bundles: Vec<(String, PathBuf)> = e2e::corpus::bundles()
        .into_iter()
        .map(|(package, version, dir)| (format!("{package}:{}", version.replace('+', "_")), dir))
        .collect();
    let count = bundles.len() as f64;

    // Layouts for skopeo (not timed).
    let layouts = tempfile::tempdir()?;
    for (i, (_, dir)) in bundles.iter().enumerate() {
        quiet(
            Command::new(&ours)
                .arg("build")
                .arg(dir)
                .args(["--tag", "bench", "--oci-layout"])
                .arg(layouts.path().join(i.to_string())),
        );
    }

    let mut binaries = vec![("bundle-tool", ours.as_path())];
    if let Some(baseline) = &baseline {
        binaries.push(("baseline", baseline.as_path()));
    }
    // Per binary: (push per process, push-all) figures of each round; then skopeo's.
    let mut ours_figures = vec![(Vec::new(), Vec::new()); binaries.len()];
    let mut skopeo = Vec::new();
    for round in 1..=rounds() {
        for (i, (name, binary)) in binaries.iter().enumerate() {
            let each = timed(|host| push_each(binary, &bundles, host)).await?;
            let all = timed(|host| push_all(binary, &root, host)).await?;
            println!(
                "round {round}: {name:<12} push {:.2} s wall {:.2} s CPU, push-all {:.2} s wall {:.2} s CPU",
                each.0, each.1, all.0, all.1
            );
            ours_figures[i].0.push(each);
            ours_figures[i].1.push(all);
        }
        let copied = timed(|host| skopeo_each(layouts.path(), &bundles, host)).await?;
        println!(
            "round {round}: skopeo       copy {:.2} s wall {:.2} s CPU",
            copied.0, copied.1
        );
        skopeo.push(copied);
    }

    let medians = |runs: &[(f64, f64)]| {
        (
            median(runs.iter().map(|r| r.0).collect()),
            median(runs.iter().map(|r| r.1).collect()),
        )
    };
    let (theirs, theirs_cpu) = medians(&skopeo);
    println!("bundles                          {}", bundles.len());
    println!(
        "skopeo copy from OCI layouts     {theirs:.2} s ({:.1} ms per bundle), CPU {theirs_cpu:.2} s",
        theirs * 1e3 / count
    );
    for ((name, binary), (each, all)) in binaries.iter().zip(&ours_figures) {
        let ((each, each_cpu), (all, all_cpu)) = (medians(each), medians(all));
        println!("{name}: {}", binary.display());
        println!(
            "  build + push, process per bundle {each:.2} s ({:.1} ms per bundle), CPU {each_cpu:.2} s; \
             speedup {:.1}x wall, {:.1}x CPU",
            each * 1e3 / count,
            theirs / each,
            theirs_cpu / each_cpu
        );
        println!(
            "  push-all (1 process)             {all:.2} s ({:.1} ms per bundle), CPU {all_cpu:.2} s; \
             speedup {:.1}x wall, {:.1}x CPU",
            all * 1e3 / count,
            theirs / all,
            theirs_cpu / all_cpu
        );
    }
    Ok(())
}
