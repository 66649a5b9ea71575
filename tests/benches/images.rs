//! Build and push all 266 corpus bundles to a local registry with `bundle-tool push`, against
//! `skopeo copy` of the same images from OCI layouts (built beforehand, not timed) to a second
//! registry, in the same run (not a timed test): one process per bundle for each tool, and
//! `bundle-tool push-all` publishing all of them from one process.
//! Each phase also reports the CPU time (user + system) of the processes it ran, which a
//! machine shared with other builds disturbs far less than wall time.
//! `cargo build --release -p bundle-tool && cargo bench -p e2e --bench images`.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Instant;

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

/// CPU seconds (user + system) used so far by finished child processes. The registries are
/// children too but still running, so they are not counted.
fn children_cpu() -> f64 {
    // SAFETY: getrusage only writes the struct we pass.
    let usage = unsafe {
        let mut usage = std::mem::zeroed::<libc::rusage>();
        libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage);
        usage
    };
    let seconds = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    seconds(usage.ru_utime) + seconds(usage.ru_stime)
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let ours = e2e::bundle_tool_binary();
    let root = e2e::corpus::bundles_root();
    // Tags allow [A-Za-z0-9_.-]: a version's `+build` becomes `_build`.
    let bundles: Vec<(String, PathBuf)> = e2e::corpus::bundles()
        .into_iter()
        .map(|(package, version, dir)| (format!("{package}:{}", version.replace('+', "_")), dir))
        .collect();
    let for_us = OciRegistry::start(RegistryAuth::Anonymous).await?;
    let for_skopeo = OciRegistry::start(RegistryAuth::Anonymous).await?;
    let for_push_all = OciRegistry::start(RegistryAuth::Anonymous).await?;

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

    let (started, cpu) = (Instant::now(), children_cpu());
    for (name, dir) in &bundles {
        quiet(
            Command::new(&ours)
                .arg("push")
                .arg(dir)
                .arg(format!("{}/bench/{name}", for_us.host()))
                .arg("--plain-http"),
        );
    }
    let (mine, mine_cpu) = (started.elapsed(), children_cpu() - cpu);

    let (started, cpu) = (Instant::now(), children_cpu());
    quiet(
        Command::new(&ours)
            .arg("push-all")
            .arg(&root)
            .arg(format!("{}/bench", for_push_all.host()))
            .arg("--plain-http"),
    );
    let (all_at_once, all_cpu) = (started.elapsed(), children_cpu() - cpu);

    let (started, cpu) = (Instant::now(), children_cpu());
    for (i, (name, _)) in bundles.iter().enumerate() {
        quiet(
            Command::new("skopeo")
                .args(["copy", "--dest-tls-verify=false"])
                .arg(format!(
                    "oci:{}:bench",
                    layouts.path().join(i.to_string()).display()
                ))
                .arg(format!("docker://{}/bench/{name}", for_skopeo.host())),
        );
    }
    let (theirs, theirs_cpu) = (started.elapsed(), children_cpu() - cpu);

    println!("bundles                          {}", bundles.len());
    println!(
        "bundle-tool build + push         {:.2} s ({:.1} ms per bundle)",
        mine.as_secs_f64(),
        mine.as_secs_f64() * 1e3 / bundles.len() as f64
    );
    println!(
        "skopeo copy from OCI layouts     {:.2} s ({:.1} ms per bundle)",
        theirs.as_secs_f64(),
        theirs.as_secs_f64() * 1e3 / bundles.len() as f64
    );
    println!(
        "speedup, process per bundle      {:.1}x",
        theirs.as_secs_f64() / mine.as_secs_f64()
    );
    println!(
        "bundle-tool push-all (1 process) {:.2} s ({:.1} ms per bundle)",
        all_at_once.as_secs_f64(),
        all_at_once.as_secs_f64() * 1e3 / bundles.len() as f64
    );
    println!(
        "speedup, push-all                {:.1}x",
        theirs.as_secs_f64() / all_at_once.as_secs_f64()
    );
    println!(
        "CPU s (user+sys): push {mine_cpu:.2}, skopeo {theirs_cpu:.2}, push-all {all_cpu:.2}; \
         speedup in CPU: per process {:.1}x, push-all {:.1}x",
        theirs_cpu / mine_cpu,
        theirs_cpu / all_cpu
    );
    Ok(())
}
