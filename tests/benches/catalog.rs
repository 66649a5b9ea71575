//! `bundle-tool catalog validate|render` against `opm validate|render` on the same input, in
//! one run (not a timed test). Inputs: (a) all 39 corpus catalogs merged into one folder,
//! (b) a generated catalog of 20,000 bundles in 500 packages. Reports the median wall time
//! of several runs, each tool's peak RSS, the ratios, and our throughput against the floor
//! of reading and parsing the same bytes with serde_json alone.
//!
//! `cargo bench -p e2e --bench catalog` (set `CATALOG_BENCH_RUNS` for more runs).
//! `BENCH_BUNDLE_TOOL` names the binary measured as ours (default: the `bundle-tool` beside
//! this bench); `BENCH_BASELINE` a second one (an earlier build), measured in the same loop
//! and printed in a column of its own.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use e2e::assets::Assets;

/// Runs a command, returning its wall time and the peak RSS (KiB) of the child.
fn measure(program: &Path, args: &[&str], dir: &Path) -> (Duration, u64) {
    let started = Instant::now();
    let mut child = Command::new(program)
        .args(args)
        .arg(dir)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn");
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: wait4 on our own child, with valid pointers.
    unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    let took = started.elapsed();
    let _ = child.try_wait();
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "{} {args:?} failed",
        program.display()
    );
    (took, usage.ru_maxrss as u64)
}

fn median(program: &Path, args: &[&str], dir: &Path, runs: usize) -> (Duration, u64) {
    let mut times = Vec::new();
    let mut peak = 0;
    for _ in 0..runs {
        let (t, rss) = measure(program, args, dir);
        times.push(t);
        peak = peak.max(rss);
    }
    times.sort();
    (times[times.len() / 2], peak)
}

/// The floor: read every file and parse it with serde_json (JSON) or serde-saphyr (YAML).
fn floor(dir: &Path, runs: usize) -> Duration {
    let mut files = Vec::new();
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap().filter_map(Result::ok) {
            if entry.path().is_dir() {
                walk(&entry.path(), out)
            } else {
                out.push(entry.path())
            }
        }
    }
    walk(dir, &mut files);
    let mut times = Vec::new();
    for _ in 0..runs {
        let started = Instant::now();
        let mut count = 0usize;
        for file in &files {
            let text = std::fs::read_to_string(file).unwrap();
            if text.trim_start().starts_with('{') {
                count += serde_json::Deserializer::from_str(&text)
                    .into_iter::<serde_json::Value>()
                    .count();
            } else {
                count += serde_saphyr::from_multiple::<serde_json::Value>(&text)
                    .map(|v| v.len())
                    .unwrap_or(0);
            }
        }
        std::hint::black_box(count);
        times.push(started.elapsed());
    }
    times.sort();
    times[times.len() / 2]
}

fn main() {
    let runs: usize = std::env::var("CATALOG_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3);
    let opm = Assets::locate().expect("assets").opm().expect("opm");
    let ours = std::env::var_os("BENCH_BUNDLE_TOOL")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            std::env::current_exe()
                .unwrap()
                .parent()
                .unwrap()
                .parent()
                .unwrap()
                .join("bundle-tool")
        });
    let baseline = std::env::var_os("BENCH_BASELINE").map(PathBuf::from);
    for binary in std::iter::once(&ours).chain(baseline.as_ref()) {
        assert!(
            binary.is_file(),
            "{} is not a file: build bundle-tool first (release: cargo build --release -p bundle-tool)",
            binary.display()
        );
    }
    let work = tempfile::tempdir().unwrap();
    let corpus = work.path().join("corpus");
    let synthetic = work.path().join("generated");
    std::fs::create_dir_all(&corpus).unwrap();
    std::fs::create_dir_all(&synthetic).unwrap();
    let corpus_bytes = e2e::corpus::merge_catalogs(&corpus);
    let synthetic_bytes = e2e::corpus::generate_catalog(&synthetic, 500, 40);

    println!("bundle-tool: {}", ours.display());
    if let Some(baseline) = &baseline {
        println!("baseline:    {}", baseline.display());
    }
    println!(
        "{:<34} {:>10} {:>10} {:>8} {:>10} {:>10} {:>8} {:>10} {:>10}",
        "input / action",
        "opm",
        "ours",
        "speedup",
        "opm RSS",
        "our RSS",
        "RSS",
        "baseline",
        "base RSS"
    );
    for (label, dir, bytes) in [
        ("corpus merged (39)", &corpus, corpus_bytes),
        ("generated 20,000 bundles", &synthetic, synthetic_bytes),
    ] {
        for action in ["validate", "render"] {
            let (opm_args, our_args): (Vec<&str>, Vec<&str>) = match action {
                "validate" => (vec!["validate"], vec!["catalog", "validate"]),
                _ => (
                    vec!["render", "-o", "json"],
                    vec!["catalog", "render", "-o", "json"],
                ),
            };
            let (theirs, their_rss) = median(&opm, &opm_args, dir, runs);
            let (mine, my_rss) = median(&ours, &our_args, dir, runs);
            let (base, base_rss) = match &baseline {
                Some(baseline) => {
                    let (t, rss) = median(baseline, &our_args, dir, runs);
                    (
                        format!("{:.0}ms", t.as_secs_f64() * 1e3),
                        format!("{}MiB", rss / 1024),
                    )
                }
                None => ("-".to_string(), "-".to_string()),
            };
            println!(
                "{:<34} {:>9.0}ms {:>9.0}ms {:>7.1}x {:>8}MiB {:>8}MiB {:>7.2} {:>10} {:>10}",
                format!("{label} / {action}"),
                theirs.as_secs_f64() * 1e3,
                mine.as_secs_f64() * 1e3,
                theirs.as_secs_f64() / mine.as_secs_f64(),
                their_rss / 1024,
                my_rss / 1024,
                my_rss as f64 / their_rss as f64,
                base,
                base_rss,
            );
        }
        let (mine, _) = median(&ours, &["catalog", "validate"], dir, runs);
        let parse = floor(dir, runs);
        println!(
            "{:<34} {:.1} MB: parse-only floor {:.0} ms ({:.0} MB/s), validate {:.0} ms ({:.0} MB/s, {:.2}x the floor, process start included)",
            format!("{label} / throughput"),
            bytes as f64 / 1e6,
            parse.as_secs_f64() * 1e3,
            bytes as f64 / 1e6 / parse.as_secs_f64(),
            mine.as_secs_f64() * 1e3,
            bytes as f64 / 1e6 / mine.as_secs_f64(),
            mine.as_secs_f64() / parse.as_secs_f64(),
        );
    }
}
