//! strace as the harness uses it: counting a run's calls, and killing a run at one of them.
//! (Without `--seccomp-bpf`: strace 6.1 with it never fires an injected signal.)

use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::Stdio;

use super::rng::SplitMix;
use super::{Invocation, TRACED};

const STRACE: &str = "/usr/bin/strace";

/// Fails the test unless strace is installed.
pub fn require() {
    assert!(
        Path::new(STRACE).is_file(),
        "{STRACE} is missing: install Debian's strace package (tests/run-all.sh does)"
    );
}

/// One traced call: the thread that made it and the syscall's name.
#[derive(Clone, Debug)]
pub struct Call {
    pub thread: u32,
    pub syscall: String,
}

/// Where a run is killed: the `nth` call of `syscall` in a thread.
#[derive(Clone, Debug)]
pub struct Kill {
    pub syscall: String,
    pub nth: usize,
}

/// Runs `invocation` to the end under strace and returns its [`TRACED`] calls in order.
pub fn calls(program: &Path, invocation: &Invocation) -> Vec<Call> {
    let log = tempfile::NamedTempFile::new().unwrap();
    let mut command = invocation.command(Path::new(STRACE));
    let output = command
        .args(["-f", "-qq", "-e"])
        .arg(format!("trace={TRACED}"))
        .arg("-o")
        .arg(log.path())
        .arg("--")
        .arg(program)
        .args(&invocation.args)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "the traced full run failed: {}",
        super::describe(invocation, &output)
    );
    let text = std::fs::read_to_string(log.path()).unwrap();
    text.lines().filter_map(parse).collect()
}

/// `1234  openat(AT_FDCWD, …` → thread 1234, `openat`; the second halves of interrupted
/// calls (`<... openat resumed>`) and signal or exit lines are not calls.
fn parse(line: &str) -> Option<Call> {
    let (thread, rest) = line.split_once(char::is_whitespace)?;
    let rest = rest.trim_start();
    if rest.starts_with("<...") || rest.starts_with("+++") || rest.starts_with("---") {
        return None;
    }
    let name = rest.split('(').next()?;
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return None;
    }
    Some(Call {
        thread: thread.parse().ok()?,
        syscall: name.to_string(),
    })
}

/// A call drawn uniformly from `calls`, as its syscall and its ordinal among that thread's
/// calls of that syscall (strace's injection counter).
pub fn pick(calls: &[Call], rng: &mut SplitMix) -> Kill {
    let index = rng.below(calls.len());
    let chosen = &calls[index];
    let nth = calls[..=index]
        .iter()
        .filter(|c| c.thread == chosen.thread && c.syscall == chosen.syscall)
        .count();
    Kill {
        syscall: chosen.syscall.clone(),
        nth: nth.min(65_535),
    }
}

/// A kill point at each rename call of `calls` (the signal is taken on entry, so the run
/// dies with every earlier rename done and this one not).
pub fn renames(calls: &[Call]) -> Vec<Kill> {
    let mut seen: std::collections::BTreeMap<(u32, &str), usize> = Default::default();
    let mut kills = Vec::new();
    for call in calls {
        let nth = seen
            .entry((call.thread, call.syscall.as_str()))
            .or_default();
        *nth += 1;
        if call.syscall.starts_with("rename") && *nth <= 65_535 {
            kills.push(Kill {
                syscall: call.syscall.clone(),
                nth: *nth,
            });
        }
    }
    kills
}

/// Runs `invocation` with SIGKILL injected at `kill`; whether it was killed (a run whose
/// calls came out fewer than in the counted run ends normally).
pub fn run_killed(program: &Path, invocation: &Invocation, kill: &Kill) -> bool {
    let status = invocation
        .command(Path::new(STRACE))
        .args(["-f", "-qq", "-o", "/dev/null", "-e"])
        .arg(format!("trace={}", kill.syscall))
        .arg("-e")
        .arg(format!(
            "inject={}:signal=KILL:when={}",
            kill.syscall, kill.nth
        ))
        .arg("--")
        .arg(program)
        .args(&invocation.args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    // strace ends itself with the signal that ended the traced program.
    status.signal() == Some(libc::SIGKILL)
}

#[cfg(test)]
mod tests {
    use super::parse;

    #[test]
    fn lines_are_read_as_calls() {
        let call = parse("4242  openat(AT_FDCWD, \"x\", O_RDONLY) = 3").unwrap();
        assert_eq!((call.thread, call.syscall.as_str()), (4242, "openat"));
        assert!(parse("4242  <... write resumed>) = 5").is_none());
        assert!(parse("4242  +++ exited with 0 +++").is_none());
        assert!(parse("4242  --- SIGCHLD {si_signo=SIGCHLD} ---").is_none());
    }
}
