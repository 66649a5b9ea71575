//! The crash harness: runs a `bundle-tool` command under strace, kills it with SIGKILL at a
//! chosen syscall, and checks that each output is its old or its new version, that the
//! outputs' own integrity holds, and that a re-run completes with the new version.
//!
//! Kills are strace fault injections (`-e inject=NAME:signal=KILL:when=N`), not timers: the
//! N-th call of syscall NAME (strace counts per syscall and per thread) is where the process
//! dies, so a failure is reproduced by its seed alone. The points are drawn uniformly from a
//! full traced run's calls of [`TRACED`].

pub mod rng;
pub mod state;
pub mod strace;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Instant;

/// The syscalls a kill may land on: every call naming a file (opens, renames, links, unlinks,
/// mkdirs, stats), every write to a file or socket, and the fsyncs.
pub const TRACED: &str = "%file,write,writev,pwrite64,sendto,sendmsg,fsync,fdatasync";

/// `createdAt` of every generated bundle, as catalog/README.md pins it.
pub const SOURCE_DATE_EPOCH: &str = "1764460800";

/// One `bundle-tool` command line and where it runs.
#[derive(Clone, Debug)]
pub struct Invocation {
    pub cwd: PathBuf,
    pub args: Vec<String>,
}

impl Invocation {
    pub fn new(cwd: &Path, args: &[&str]) -> Invocation {
        Invocation {
            cwd: cwd.to_path_buf(),
            args: args.iter().map(|a| a.to_string()).collect(),
        }
    }

    /// The command, with the environment pinned so that every run writes the same bytes.
    pub fn command(&self, program: &Path) -> Command {
        let mut command = Command::new(program);
        command
            .current_dir(&self.cwd)
            .env("SOURCE_DATE_EPOCH", SOURCE_DATE_EPOCH)
            .env("NO_COLOR", "1")
            // The catalog image carries its server program as a layer: a 35 KB one instead
            // of this 76 MB debug bundle-tool takes `release` from 9 s to under 1 s, and the
            // layout and catalog writes under test are the same.
            .env("BUNDLE_TOOL_SERVER_BINARY", "/bin/true")
            .env_remove("RUST_LOG");
        command
    }

    /// Runs it to the end; panics with its output unless it succeeds.
    pub fn run(&self) -> Output {
        let output = self
            .command(&e2e::bundle_tool_binary())
            .args(&self.args)
            .output()
            .unwrap();
        assert!(output.status.success(), "{}", describe(self, &output));
        output
    }
}

pub fn describe(invocation: &Invocation, output: &Output) -> String {
    format!(
        "bundle-tool {} (in {}): {}\n{}{}",
        invocation.args.join(" "),
        invocation.cwd.display(),
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// A step of a case, given the run's folder and number.
pub type Step<'a, T> = Box<dyn Fn(&Path, usize) -> T + 'a>;

/// Each output by name, and a digest of its whole content (`None`: absent).
pub type Outputs = BTreeMap<String, Option<String>>;

/// What one command's crash runs need.
pub struct Case<'a> {
    pub name: &'static str,
    /// A folder in the old state; every run starts from a copy of it.
    pub pristine: PathBuf,
    /// Makes the run's extra old state (a registry repository), before the command runs.
    pub prepare: Step<'a, ()>,
    /// The command that makes the new version, run in the copy.
    pub invocation: Step<'a, Invocation>,
    /// Each output by name, and a digest of its whole content (`None`: absent).
    pub outputs: Step<'a, Outputs>,
    /// Integrity beyond old-or-new (blobs an index names exist, and so on).
    pub check: Step<'a, Result<(), String>>,
    /// Every output's name, in the order the command replaces them. A kill may leave the
    /// first few new and the rest old, nothing else: an output new while one before it in
    /// this order is old is a failure.
    pub commit_order: &'static [&'static str],
}

/// Where one output stands after a kill.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Version {
    Old,
    New,
    /// The command does not change it: old and new at once.
    Unchanged,
}

/// Whether outputs at `versions` (in commit order) are a state a kill can leave: new ones
/// first, then old ones. `None` when so; else the first output that is new behind an old one.
pub fn out_of_order(versions: &[(&str, Version)]) -> Option<String> {
    let mut old_before: Option<&str> = None;
    for (name, version) in versions {
        match (version, old_before) {
            (Version::Old, None) => old_before = Some(name),
            (Version::New, Some(old)) => {
                return Some(format!(
                    "{name} is new while {old}, which the command replaces before it, is old"
                ));
            }
            _ => {}
        }
    }
    None
}

/// What the runs of one case found.
#[derive(Debug, Default)]
pub struct Report {
    /// Uniform draws plus one run per rename of the full run.
    pub runs: usize,
    pub at_renames: usize,
    pub kills: usize,
    pub calls_in_a_full_run: usize,
    /// Kills by syscall name.
    pub hits: BTreeMap<String, usize>,
    /// Runs whose outputs were at the old version after the kill, and at the new.
    pub old_after_kill: usize,
    pub new_after_kill: usize,
    pub failures: Vec<String>,
    pub seconds: f64,
}

impl std::fmt::Display for Report {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let hits: Vec<String> = self.hits.iter().map(|(n, c)| format!("{n} {c}")).collect();
        write!(
            f,
            "{} runs ({} of them at the renames), {} killed ({} calls traced in a full run); hit: {}; outputs old after the kill in {}, new in {}, the first few new and the rest old in {}; {} failures; {:.0} s",
            self.runs,
            self.at_renames,
            self.kills,
            self.calls_in_a_full_run,
            hits.join(", "),
            self.old_after_kill,
            self.new_after_kill,
            self.kills
                .saturating_sub(self.old_after_kill + self.new_after_kill),
            self.failures.len(),
            self.seconds
        )
    }
}

/// How many runs per command (`CRASH_RUNS`, default 100).
pub fn runs() -> usize {
    std::env::var("CRASH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100)
}

/// Runs `case` `runs` times with kills drawn from `seed`, and reports.
pub fn crash(case: &Case, runs: usize, seed: u64) -> Report {
    strace::require();
    let started = Instant::now();
    let program = e2e::bundle_tool_binary();
    let work = tempfile::Builder::new()
        .prefix(&format!("crash-{}-", case.name))
        .tempdir()
        .unwrap();

    // The old version, and the new one from a full traced run, which also gives the calls
    // to draw kill points from.
    let old = (case.outputs)(&case.pristine, usize::MAX);
    let full = work.path().join("full");
    state::copy_tree(&case.pristine, &full);
    (case.prepare)(&full, 0);
    let invocation = (case.invocation)(&full, 0);
    let calls = strace::calls(&program, &invocation);
    let new = (case.outputs)(&full, 0);
    assert_ne!(old, new, "{}: the command changes nothing", case.name);
    let mut named: Vec<&str> = case.commit_order.to_vec();
    named.sort_unstable();
    assert_eq!(
        named,
        new.keys().map(String::as_str).collect::<Vec<_>>(),
        "{}: the commit order must name every output once",
        case.name
    );
    (case.check)(&full, 0).unwrap_or_else(|e| panic!("{}: a full run: {e}", case.name));

    let mut rng = rng::SplitMix::new(seed);
    let mut report = Report {
        runs,
        calls_in_a_full_run: calls.len(),
        ..Report::default()
    };
    // Beyond the uniform draws, every rename of the full run is a kill point once: the
    // windows between commit renames are single calls that 100 draws among hundreds miss
    // about two times in three.
    let renames = strace::renames(&calls);
    report.runs += renames.len();
    report.at_renames = renames.len();
    let kills: Vec<strace::Kill> = (0..runs)
        .map(|_| strace::pick(&calls, &mut rng))
        .chain(renames)
        .collect();
    for (run, kill) in (1..).zip(kills) {
        let dir = work.path().join(format!("run-{run}"));
        state::copy_tree(&case.pristine, &dir);
        (case.prepare)(&dir, run);
        let invocation = (case.invocation)(&dir, run);
        let killed = strace::run_killed(&program, &invocation, &kill);
        let fail = |what: String| {
            format!(
                "{} run {run} (seed {seed}, kill at {} call {} of its thread, killed: {killed}): {what}",
                case.name, kill.syscall, kill.nth
            )
        };
        if killed {
            report.kills += 1;
            *report.hits.entry(kill.syscall.clone()).or_default() += 1;
        }
        let after = (case.outputs)(&dir, run);
        let mut all_old = true;
        let mut all_new = true;
        for (name, digest) in &after {
            let (was, will) = (&old[name], &new[name]);
            all_old &= digest == was;
            all_new &= digest == will;
            if digest != was && digest != will {
                report.failures.push(fail(format!(
                    "{name} is neither the old version ({was:?}) nor the new ({will:?}) but {digest:?}"
                )));
            }
        }
        if killed {
            report.old_after_kill += usize::from(all_old);
            report.new_after_kill += usize::from(all_new && !all_old);
        }
        let versions: Vec<(&str, Version)> = case
            .commit_order
            .iter()
            .filter_map(|name| {
                let (now, was, will) = (after.get(*name)?, &old[*name], &new[*name]);
                let version = if was == will {
                    Version::Unchanged
                } else if now == will {
                    Version::New
                } else if now == was {
                    Version::Old
                } else {
                    // Neither: a failure of its own, reported above.
                    return None;
                };
                Some((*name, version))
            })
            .collect();
        if let Some(mixed) = out_of_order(&versions) {
            report
                .failures
                .push(fail(format!("after the kill: {mixed}")));
        }
        if let Err(e) = (case.check)(&dir, run) {
            report.failures.push(fail(format!("after the kill: {e}")));
        }
        let output = invocation
            .command(&program)
            .args(&invocation.args)
            .output()
            .unwrap();
        if !output.status.success() {
            report.failures.push(fail(format!(
                "the re-run failed: {}",
                describe(&invocation, &output)
            )));
        } else if (case.outputs)(&dir, run) != new {
            report
                .failures
                .push(fail("the re-run did not give the new version".into()));
        } else if let Err(e) = (case.check)(&dir, run) {
            report.failures.push(fail(format!("after the re-run: {e}")));
        }
        let leftovers = state::staging_leftovers(&dir);
        if !leftovers.is_empty() {
            report.failures.push(fail(format!(
                "staging files left after the re-run: {leftovers:?}"
            )));
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
    report.seconds = started.elapsed().as_secs_f64();
    report
}

/// The seed: `CRASH_SEED` to reproduce a failure, else a new one (printed either way).
pub fn seed(case: &str) -> u64 {
    let seed = std::env::var("CRASH_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
        });
    eprintln!("{case}: seed {seed} (CRASH_SEED={seed} repeats these kills)");
    seed
}

/// Runs the case and fails the test with every failure found.
pub fn assert_crash_safe(case: &Case) {
    let seed = seed(case.name);
    let report = crash(case, runs(), seed);
    eprintln!("{}: {report}", case.name);
    assert!(
        // Thread scheduling moves calls between threads (a point is the nth call of a
        // syscall in one thread), the more so on busy cores: with four test binaries side by
        // side on 2 cores, `release` was killed in 79 and 78 of 108 runs (73 %), where the
        // binaries one at a time gave over 75 %. Points that are not this binary's calls
        // give almost no kills, far below three in five.
        report.kills * 5 >= report.runs * 3,
        "{}: only {} of {} runs were killed: the kill points do not match the runs",
        case.name,
        report.kills,
        report.runs
    );
    assert!(
        report.failures.is_empty(),
        "{}: {} failures (seed {seed}):\n{}",
        case.name,
        report.failures.len(),
        report.failures.join("\n")
    );
}
