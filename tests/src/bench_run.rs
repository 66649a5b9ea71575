//! What the benchmarks under `benches/` share: which `bundle-tool` binaries they compare, how
//! many rounds they run, the CPU time their child processes used, and medians.
//!
//! A before/after comparison on a shared machine is only worth something when both builds run
//! in the same run, alternated, so every bench that runs `bundle-tool` as a process reads:
//! - `BENCH_BUNDLE_TOOL`: the binary measured as "ours" (default: the `bundle-tool` of this
//!   build's profile, checked to be newer than its sources);
//! - `BENCH_BASELINE`: a second binary (an earlier build) run in every round beside it;
//! - `BENCH_ROUNDS`: how many rounds (default 1); each round runs every tool once, in turn.

use std::path::PathBuf;

/// The binary measured as ours, and the baseline to compare it with, if one is asked for.
pub fn bundle_tools() -> (PathBuf, Option<PathBuf>) {
    let ours = std::env::var_os("BENCH_BUNDLE_TOOL")
        .map(PathBuf::from)
        .unwrap_or_else(crate::bundle_tool_binary);
    let baseline = std::env::var_os("BENCH_BASELINE").map(PathBuf::from);
    for binary in std::iter::once(&ours).chain(baseline.as_ref()) {
        assert!(
            binary.is_file(),
            "{} is not a file: build bundle-tool first (cargo build --release -p bundle-tool)",
            binary.display()
        );
    }
    (ours, baseline)
}

/// `BENCH_ROUNDS`, at least 1.
pub fn rounds() -> usize {
    match std::env::var("BENCH_ROUNDS") {
        Err(_) => 1,
        Ok(text) => text
            .parse::<usize>()
            .unwrap_or_else(|_| panic!("BENCH_ROUNDS={text} is not a count"))
            .max(1),
    }
}

/// CPU seconds (user + system) used so far by finished child processes. Children still running
/// (a registry the bench started) are not counted.
pub fn children_cpu() -> f64 {
    // SAFETY: getrusage only writes the struct we pass.
    let usage = unsafe {
        let mut usage = std::mem::zeroed::<libc::rusage>();
        libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage);
        usage
    };
    let seconds = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    seconds(usage.ru_utime) + seconds(usage.ru_stime)
}

/// The middle value (the upper one of an even count).
pub fn median(mut values: Vec<f64>) -> f64 {
    assert!(!values.is_empty(), "the median of no values");
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

#[cfg(test)]
mod tests {
    use super::median;

    #[test]
    fn median_takes_the_middle_value() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(vec![4.0, 1.0, 3.0, 2.0]), 3.0);
    }
}
