//! Catalog registry servers for the tests: `opm serve` (the reference) and `bundle-tool serve`,
//! started on a catalog folder, ready once gRPC health answers SERVING for `Registry` (the
//! name OLM's probes use).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use bundle_tool::serve::api::registry_client::RegistryClient;
use tonic::transport::Channel;
use tonic_health::pb::health_client::HealthClient;
use tonic_health::pb::{HealthCheckRequest, health_check_response::ServingStatus};

use crate::ManagedProcess;
use crate::assets::Assets;

/// Which program serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ServerKind {
    /// `opm serve` v1.73.0.
    Opm,
    /// `bundle-tool serve` of this build.
    BundleTool,
}

/// How a server process is launched, beyond its kind and arguments.
#[derive(Clone, Debug, Default)]
pub struct Launch {
    /// Another binary of the same kind (an earlier `bundle-tool` build, for before/after
    /// comparisons); `None` runs this build's binary or the reference opm.
    pub program: Option<PathBuf>,
    /// A `taskset -c` CPU list the server is confined to (the benchmark keeps servers and its
    /// load generator on different CPUs).
    pub cpus: Option<String>,
    /// A limit on the server's open files, soft and hard (`prlimit --nofile=N:N`, which execs
    /// the server too).
    pub open_files: Option<u64>,
}

/// A running registry server.
pub struct RegistryServer {
    /// The program.
    pub kind: ServerKind,
    /// Its gRPC port on 127.0.0.1.
    pub port: u16,
    /// How long from spawn to SERVING.
    pub startup: Duration,
    process: ManagedProcess,
    _workdir: tempfile::TempDir,
}

impl RegistryServer {
    /// Starts `kind` on `catalog` with extra arguments and waits (up to `timeout`) until it
    /// serves. opm binds every interface: call [`crate::require_isolated_network`] first.
    pub async fn start(
        kind: ServerKind,
        catalog: &Path,
        extra: &[&str],
        timeout: Duration,
    ) -> anyhow::Result<Self> {
        Self::start_with(kind, catalog, extra, timeout, &Launch::default()).await
    }

    /// [`RegistryServer::start`], launched as `launch` says.
    pub async fn start_with(
        kind: ServerKind,
        catalog: &Path,
        extra: &[&str],
        timeout: Duration,
        launch: &Launch,
    ) -> anyhow::Result<Self> {
        let port = crate::free_port()?;
        let workdir = tempfile::tempdir()?;
        let (program, mut args): (PathBuf, Vec<String>) = match kind {
            ServerKind::Opm => {
                crate::require_isolated_network()?;
                (
                    Assets::locate()?.opm()?,
                    vec![
                        "serve".into(),
                        catalog.display().to_string(),
                        "--port".into(),
                        port.to_string(),
                        // pprof would bind localhost:6060 in every instance.
                        "--pprof-addr=".into(),
                        "--termination-log".into(),
                        workdir.path().join("termination.log").display().to_string(),
                    ],
                )
            }
            ServerKind::BundleTool => (
                crate::bundle_tool_binary(),
                vec![
                    "serve".into(),
                    catalog.display().to_string(),
                    "--port".into(),
                    port.to_string(),
                ],
            ),
        };
        args.extend(extra.iter().map(|s| s.to_string()));
        let program = launch.program.clone().unwrap_or(program);
        // taskset execs the server, so the process id stays the server's.
        let (program, args) = match &launch.cpus {
            Some(cpus) => {
                let mut wrapped = vec!["-c".to_string(), cpus.clone()];
                wrapped.push(program.display().to_string());
                wrapped.extend(args);
                (PathBuf::from("taskset"), wrapped)
            }
            None => (program, args),
        };
        let (program, args) = match launch.open_files {
            Some(limit) => {
                let mut wrapped = vec![format!("--nofile={limit}:{limit}")];
                wrapped.push(program.display().to_string());
                wrapped.extend(args);
                (PathBuf::from("prlimit"), wrapped)
            }
            None => (program, args),
        };
        let name = format!("{kind:?}").to_lowercase();
        let spawned = Instant::now();
        let process = ManagedProcess::spawn(
            &name,
            &program,
            &args,
            &[("TMPDIR", &workdir.path().display().to_string())],
            &workdir.path().join("serve.log"),
        )?;
        let deadline = spawned + timeout;
        loop {
            process.check_running()?;
            if health(port).await == Some(ServingStatus::Serving) {
                break;
            }
            anyhow::ensure!(
                Instant::now() < deadline,
                "{name} did not serve within {timeout:?}:\n{}",
                process.log_tail(20)
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        Ok(RegistryServer {
            kind,
            port,
            startup: spawned.elapsed(),
            process,
            _workdir: workdir,
        })
    }

    /// A registry client.
    pub async fn client(&self) -> anyhow::Result<RegistryClient<Channel>> {
        Ok(RegistryClient::new(self.channel().await?).max_decoding_message_size(64 * 1024 * 1024))
    }

    /// A connected gRPC channel, for the other services (health, reflection) or raw calls.
    pub async fn channel(&self) -> anyhow::Result<Channel> {
        Channel::from_shared(format!("http://127.0.0.1:{}", self.port))?
            .connect()
            .await
            .with_context(|| format!("connect to {:?} on {}", self.kind, self.port))
    }

    /// The process (for its pid, log and signals).
    pub fn process(&self) -> &ManagedProcess {
        &self.process
    }
}

/// The health status of service `Registry` on `port`, if anything answers.
pub async fn health(port: u16) -> Option<ServingStatus> {
    let channel = Channel::from_shared(format!("http://127.0.0.1:{port}"))
        .ok()?
        .connect_timeout(Duration::from_millis(200))
        .connect()
        .await
        .ok()?;
    let answer = HealthClient::new(channel)
        .check(HealthCheckRequest {
            service: "Registry".into(),
        })
        .await
        .ok()?;
    ServingStatus::try_from(answer.into_inner().status).ok()
}
