//! Child processes that die with the test binary and explain themselves when they fail.

use std::collections::VecDeque;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

/// A running program with its output in a log file; killed when dropped.
#[derive(Debug)]
pub struct ManagedProcess {
    name: String,
    child: Mutex<Child>,
    log: PathBuf,
    /// How it was started, for [`ManagedProcess::restart`].
    launch: Launch,
}

#[derive(Debug)]
struct Launch {
    program: PathBuf,
    args: Vec<String>,
    envs: Vec<(String, String)>,
}

type SpawnRequest = (Command, mpsc::Sender<std::io::Result<Child>>);

/// Children are spawned from one thread that lives as long as the process: the kernel's
/// parent-death signal fires when the *spawning thread* exits, and test threads exit early.
/// With it, a test binary that is killed (or exits with a shared cluster still up) leaves no
/// etcd or apiserver behind.
fn spawner() -> &'static Mutex<mpsc::Sender<SpawnRequest>> {
    static SPAWNER: OnceLock<Mutex<mpsc::Sender<SpawnRequest>>> = OnceLock::new();
    SPAWNER.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<SpawnRequest>();
        std::thread::Builder::new()
            .name("e2e-spawner".into())
            .spawn(move || {
                for (mut command, reply) in rx {
                    // SAFETY: prctl is async-signal-safe and touches no memory of the parent.
                    unsafe {
                        command.pre_exec(|| {
                            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                                return Err(std::io::Error::last_os_error());
                            }
                            Ok(())
                        });
                    }
                    let _ = reply.send(command.spawn());
                }
            })
            .expect("spawn the e2e process spawner thread");
        Mutex::new(tx)
    })
}

impl ManagedProcess {
    /// Starts `program` with `args`, stdout and stderr appended to `log`.
    pub fn spawn(
        name: &str,
        program: &Path,
        args: &[String],
        envs: &[(&str, &str)],
        log: &Path,
    ) -> anyhow::Result<Self> {
        let out = File::create(log).with_context(|| format!("creating {}", log.display()))?;
        let launch = Launch {
            program: program.to_path_buf(),
            args: args.to_vec(),
            envs: envs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        };
        let child = start(name, &launch, out)?;
        Ok(ManagedProcess {
            name: name.to_string(),
            child: Mutex::new(child),
            log: log.to_path_buf(),
            launch,
        })
    }

    /// Stops the program (SIGTERM, SIGKILL after `grace`) and starts it again with the same
    /// command line, its output appended to the same log: a restart, as a supervisor does.
    pub fn restart(&self, grace: Duration) -> anyhow::Result<()> {
        self.stop(grace);
        let out = std::fs::OpenOptions::new()
            .append(true)
            .open(&self.log)
            .with_context(|| format!("opening {}", self.log.display()))?;
        let child = start(&self.name, &self.launch, out)?;
        *self
            .child
            .lock()
            .map_err(|_| anyhow::anyhow!("lock poisoned"))? = child;
        Ok(())
    }

    /// The program's name as given to [`ManagedProcess::spawn`].
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.lock().map(|c| c.id()).unwrap_or(0)
    }

    /// Where its output goes.
    pub fn log_path(&self) -> &Path {
        &self.log
    }

    /// `Err("<name> exited (<status>): <last lines of its log>")` if the program has stopped.
    pub fn check_running(&self) -> anyhow::Result<()> {
        let mut child = self
            .child
            .lock()
            .map_err(|_| anyhow::anyhow!("lock poisoned"))?;
        if let Some(status) = child.try_wait()? {
            bail!("{} exited ({status}): {}", self.name, self.log_tail(25));
        }
        Ok(())
    }

    /// The last `lines` lines of the log, joined for an error message.
    pub fn log_tail(&self, lines: usize) -> String {
        let Ok(file) = File::open(&self.log) else {
            return format!("(no log at {})", self.log.display());
        };
        let mut tail = VecDeque::with_capacity(lines);
        for line in BufReader::new(file).lines().map_while(Result::ok) {
            if tail.len() == lines {
                tail.pop_front();
            }
            tail.push_back(line);
        }
        let joined: Vec<String> = tail.into_iter().collect();
        format!("\n    {}", joined.join("\n    "))
    }

    /// Polls `ready` until it returns `Ok(true)`, failing early (with the log) if the program
    /// exits, and with the last probe error and the log if `timeout` passes.
    pub async fn wait_ready<F, Fut>(&self, timeout: Duration, mut ready: F) -> anyhow::Result<()>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = anyhow::Result<bool>>,
    {
        let deadline = Instant::now() + timeout;
        loop {
            self.check_running()?;
            let last = match ready().await {
                Ok(true) => return Ok(()),
                Ok(false) => "not ready".to_string(),
                Err(e) => format!("{e:#}"),
            };
            if Instant::now() > deadline {
                bail!(
                    "{} did not become ready in {:?} (last probe: {last}); its log:{}",
                    self.name,
                    timeout,
                    self.log_tail(25)
                );
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// Kills the program at once (SIGKILL), as a crash or an OOM kill would.
    pub fn kill(&self) {
        if let Ok(mut child) = self.child.lock() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Sends SIGTERM and waits up to `timeout` for the program to exit; `None` if it did not
    /// (it is then killed).
    pub fn terminate(&self, timeout: Duration) -> Option<std::process::ExitStatus> {
        let mut child = self.child.lock().ok()?;
        if let Ok(Some(status)) = child.try_wait() {
            return Some(status);
        }
        // SAFETY: plain kill(2) on our own child's pid.
        unsafe {
            libc::kill(child.id() as libc::pid_t, libc::SIGTERM);
        }
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            if let Ok(Some(status)) = child.try_wait() {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = child.kill();
        let _ = child.wait();
        None
    }

    /// Stops the program: SIGTERM, then SIGKILL after `grace`.
    pub fn stop(&self, grace: Duration) {
        let Ok(mut child) = self.child.lock() else {
            return;
        };
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        // SAFETY: plain kill(2) on our own child's pid.
        unsafe {
            libc::kill(child.id() as libc::pid_t, libc::SIGTERM);
        }
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline {
            if let Ok(Some(_)) = child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = child.kill();
        let _ = child.wait();
    }
}

/// Spawns `launch` from the spawner thread, its output into `out`.
fn start(name: &str, launch: &Launch, out: File) -> anyhow::Result<Child> {
    let err = out.try_clone()?;
    let mut command = Command::new(&launch.program);
    command
        .args(&launch.args)
        .envs(launch.envs.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err);
    let (tx, rx) = mpsc::channel();
    spawner()
        .lock()
        .map_err(|_| anyhow::anyhow!("spawner lock poisoned"))?
        .send((command, tx))
        .map_err(|_| anyhow::anyhow!("the spawner thread is gone"))?;
    rx.recv()
        .context("the spawner thread did not answer")?
        .with_context(|| format!("{name}: cannot start {}", launch.program.display()))
}

impl Drop for ManagedProcess {
    fn drop(&mut self) {
        self.stop(Duration::from_secs(5));
    }
}
