//! The serve benchmark's GetBundle load (tests/benches/serve.rs: 3 ListBundles, then
//! `requests` GetBundles from 64 concurrent clients on one HTTP/2 connection, a stride of
//! 7919 through the listed keys), run against one `bundle-tool serve` binary under a counter,
//! so that two builds can be compared by the CPU work of the server rather than by wall
//! clock on a loaded machine.
//!
//! ```text
//! serve_load <callgrind|perf|startup> <bundle-tool binary> <catalog folder> <requests> <out prefix>
//! ```
//!
//! - `callgrind`: the server runs under `valgrind --tool=callgrind` (this machine's VM has no
//!   hardware counters for `perf`); `callgrind_control --dump` closes a part at SERVING,
//!   after the ListBundles and after the GetBundle load, so `<out>.1`, `.2`, `.3` hold the
//!   instructions (Ir) of start-up, listing and load.
//! - `perf`: `perf stat` of software events (task-clock, context switches, system calls),
//!   counting only during the GetBundle load (`--control` fifos, started disabled).
//! - `startup`: `perf stat` from exec until the health check answers SERVING.
//!
//! The server runs on CPU 0 (`taskset`), this process on CPU 1, as in the bench. It prints
//! one line: the counts and their per-request quotients.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use bundle_tool::serve::api;
use bundle_tool::serve::api::registry_client::RegistryClient;
use tonic::transport::Channel;
use tonic_health::pb::health_client::HealthClient;
use tonic_health::pb::{HealthCheckRequest, health_check_response::ServingStatus};

// The load itself is the bench's, word for word.
#[path = "../../tests/benches/serve_parts/get_bundle_load.rs"]
mod get_bundle_load;

fn pin_to_cpu(cpu: usize) {
    // SAFETY: a zeroed cpu_set_t is a valid empty set; the calls only read and write it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

async fn connect(port: u16) -> Option<Channel> {
    Channel::from_shared(format!("http://127.0.0.1:{port}"))
        .ok()?
        .connect_timeout(Duration::from_millis(500))
        .connect()
        .await
        .ok()
}

async fn serving(port: u16) -> bool {
    let Some(channel) = connect(port).await else {
        return false;
    };
    let answer = HealthClient::new(channel)
        .check(HealthCheckRequest {
            service: "Registry".into(),
        })
        .await;
    answer.is_ok_and(|a| a.into_inner().status == ServingStatus::Serving as i32)
}

/// The server's pid: the wrapper's child (perf forks it) or the wrapper itself (valgrind and
/// taskset exec).
fn server_pid(wrapper: &Child, mode: &str) -> u32 {
    if mode == "callgrind" {
        return wrapper.id();
    }
    let path = format!("/proc/{0}/task/{0}/children", wrapper.id());
    let text = std::fs::read_to_string(&path).expect("children");
    text.split_whitespace()
        .next()
        .and_then(|p| p.parse().ok())
        .expect("perf's child")
}

fn callgrind_dump(pid: u32, vgdb_prefix: &str, what: &str) {
    let status = Command::new("callgrind_control")
        .arg(format!("--vgdb-prefix={vgdb_prefix}"))
        .arg(format!("--dump={what}"))
        .arg(pid.to_string())
        .stdout(Stdio::null())
        .status()
        .expect("callgrind_control");
    assert!(status.success(), "callgrind_control --dump failed");
}

/// A line of `perf stat -x,` output: (value, event).
fn perf_counts(path: &Path) -> Vec<(f64, String)> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .filter_map(|l| {
            let fields: Vec<&str> = l.split(',').collect();
            Some((fields.first()?.parse().ok()?, fields.get(2)?.to_string()))
        })
        .collect()
}

fn callgrind_total(path: &Path) -> u64 {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .find_map(|l| {
            l.strip_prefix("totals: ")
                .or_else(|| l.strip_prefix("summary: "))
        })
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// Stops the server (SIGTERM, SIGKILL after 20 s) and waits for its wrapper, without
/// blocking this runtime (which still closes our connections).
async fn stop(pid: u32, wrapper: &mut Child) {
    tokio::time::sleep(Duration::from_millis(100)).await;
    // SAFETY: signals to the server we started.
    unsafe { libc::kill(pid as i32, libc::SIGTERM) };
    let deadline = Instant::now() + Duration::from_secs(20);
    while wrapper.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            // SAFETY: as above.
            unsafe { libc::kill(pid as i32, libc::SIGKILL) };
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, mode, binary, catalog, requests, out] = &args[..] else {
        eprintln!("usage: serve_load <callgrind|perf|startup> <binary> <catalog> <requests> <out>");
        std::process::exit(2);
    };
    let requests: usize = requests.parse().expect("requests");
    let out = PathBuf::from(out);
    pin_to_cpu(1);
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port();
    let tmp = tempfile::tempdir().expect("temp dir");
    let server = [
        binary.as_str(),
        "serve",
        catalog,
        "--port",
        &port.to_string(),
        "--watch-interval",
        "0",
    ];
    // valgrind's gdbserver FIFOs, through which callgrind_control asks for a dump.
    let vgdb_prefix = format!("{}-vgdb", out.display());
    let ctl = tmp.path().join("ctl");
    let ack = tmp.path().join("ack");
    let mut command = Command::new("taskset");
    command.args(["-c", "0"]);
    match mode.as_str() {
        "callgrind" => {
            command.args([
                "valgrind",
                "--tool=callgrind",
                "--quiet",
                &format!("--vgdb-prefix={vgdb_prefix}"),
                &format!("--callgrind-out-file={}", out.display()),
            ]);
        }
        "perf" | "startup" => {
            let events =
                "task-clock,context-switches,cpu-migrations,page-faults,raw_syscalls:sys_enter";
            command.args(["perf", "stat", "-x,", "-e", events]);
            command.arg(format!("-o{}", out.display()));
            if mode == "perf" {
                for fifo in [&ctl, &ack] {
                    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
                    // SAFETY: mkfifo reads the path.
                    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo");
                }
                command.args(["-D", "-1"]);
                command.arg(format!(
                    "--control=fifo:{},{}",
                    ctl.display(),
                    ack.display()
                ));
            }
            command.arg("--");
        }
        other => panic!("unknown mode {other}"),
    }
    command
        .args(server)
        .env("TMPDIR", tmp.path())
        .stdout(Stdio::null())
        .stderr(Stdio::from(
            std::fs::File::create(tmp.path().join("serve.log")).unwrap(),
        ));
    let spawned = Instant::now();
    let mut wrapper = command.spawn().expect("spawn the server");
    // perf opens the fifos only once it runs: open them after it started, ctl for writing.
    let mut control = (mode == "perf").then(|| {
        let ctl = std::fs::OpenOptions::new().write(true).open(&ctl).unwrap();
        let ack = std::fs::File::open(&ack).unwrap();
        (ctl, ack)
    });
    let mut send = |command: &str| {
        if let Some((ctl, ack)) = control.as_mut() {
            ctl.write_all(command.as_bytes()).unwrap();
            let mut answer = [0u8; 5];
            ack.read_exact(&mut answer).unwrap();
        }
    };
    while !serving(port).await {
        if let Ok(Some(status)) = wrapper.try_wait() {
            let log = std::fs::read_to_string(tmp.path().join("serve.log")).unwrap_or_default();
            panic!("the server exited ({status}):\n{log}");
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let startup = spawned.elapsed();
    let pid = server_pid(&wrapper, mode);
    if mode == "startup" {
        stop(pid, &mut wrapper).await;
        let counts = perf_counts(&out);
        let line: Vec<String> = counts.iter().map(|(v, e)| format!("{e}={v}")).collect();
        println!("startup {:.3}s {}", startup.as_secs_f64(), line.join(" "));
        return;
    }
    if mode == "callgrind" {
        callgrind_dump(pid, &vgdb_prefix, "startup");
    }
    let channel = connect(port).await.expect("connect");
    let client = RegistryClient::new(channel.clone()).max_decoding_message_size(64 << 20);
    let mut keys = Vec::new();
    for _ in 0..3 {
        keys.clear();
        let mut stream = client
            .clone()
            .list_bundles(api::ListBundlesRequest {})
            .await
            .expect("ListBundles")
            .into_inner();
        while let Some(b) = stream.message().await.expect("stream") {
            keys.push((b.package_name, b.channel_name, b.csv_name));
        }
    }
    let bodies = get_bundle_load::encoded_requests(&keys, requests);
    if mode == "callgrind" {
        callgrind_dump(pid, &vgdb_prefix, "list");
    }
    send("enable\n");
    let started = Instant::now();
    let answered = get_bundle_load::send_all(&channel, bodies).await;
    let elapsed = started.elapsed();
    send("disable\n");
    if mode == "callgrind" {
        callgrind_dump(pid, &vgdb_prefix, "load");
    }
    // The server's graceful shutdown waits for open connections: close ours first.
    drop((channel, client));
    stop(pid, &mut wrapper).await;
    let per = |v: f64| v / requests as f64;
    let bytes = answered / requests;
    let head = format!(
        "keys={} answer={bytes}B load_wall={:.2}s",
        keys.len(),
        elapsed.as_secs_f64()
    );
    if mode == "callgrind" {
        let part = |n: u32| callgrind_total(&PathBuf::from(format!("{}.{n}", out.display())));
        let (startup, list, load) = (part(1), part(2), part(3));
        println!(
            "{head} Ir_startup={startup} Ir_list={list} Ir_load={load} Ir_per_request={:.0}",
            per(load as f64)
        );
    } else {
        let counts = perf_counts(&out);
        let line: Vec<String> = counts
            .iter()
            .map(|(v, e)| format!("{e}={v} ({:.3}/req)", per(*v)))
            .collect();
        println!("{head} {}", line.join(" "));
    }
}
