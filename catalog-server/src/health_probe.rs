//! `grpc_health_probe`, built into the catalog server: the catalog image links the name to the
//! binary, so OLM's exec probe of a registry pod (`grpc_health_probe -addr=:50051
//! -rpc-timeout=5s`) finds a program on `PATH` without a second binary in the image.
//!
//! It takes the flags of grpc-ecosystem's `grpc_health_probe` the way Go's `flag` package
//! parses them (`-addr=:50051`, `-addr :50051`, `--addr=…`; a bare `-v`), and ends with the
//! same exit codes: 0 SERVING, 1 invalid arguments (also what Go's flag package refuses: an
//! unknown flag, a missing or bad value), 2 no connection within `-connect-timeout`, 3 the
//! Check RPC failed or timed out, 4 an answer other than SERVING. Its
//! messages go to standard error, as the original's `log.Printf` does. TLS, ALTS and SPIFFE
//! are not offered: a flag asking for them is an invalid argument (exit 1) that says so,
//! rather than a plaintext probe that would pass where the real one could not.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use tonic::transport::Endpoint;
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_client::HealthClient;

/// The program name the catalog image links to the server (`catalog-server`).
pub const PROGRAM_NAME: &str = "grpc_health_probe";

/// Exit code: SERVING.
pub const EXIT_SERVING: i32 = 0;
/// Exit code: invalid arguments.
pub const EXIT_INVALID_ARGUMENTS: i32 = 1;
/// Exit code: the connection failed or timed out.
pub const EXIT_CONNECTION_FAILURE: i32 = 2;
/// Exit code: the Check RPC failed or timed out.
pub const EXIT_RPC_FAILURE: i32 = 3;
/// Exit code: the service answered, but not SERVING.
pub const EXIT_UNHEALTHY: i32 = 4;
/// Exit code for a command line Go's `flag` package cannot parse: the probe parses with
/// `ContinueOnError` and exits with its invalid-arguments code (measured against v0.4.62).
const EXIT_FLAG_SYNTAX: i32 = EXIT_INVALID_ARGUMENTS;

/// What one probe checks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProbeOptions {
    /// `host:port` (an empty host is this machine, as Go dials it).
    pub addr: String,
    /// The service name asked for ("" is the server as a whole).
    pub service: String,
    /// How long to keep trying to connect.
    pub connect_timeout: Duration,
    /// The Check RPC's deadline.
    pub rpc_timeout: Duration,
    /// The `user-agent` sent.
    pub user_agent: String,
    /// `key: value` metadata sent with the RPC (`-rpc-header`, repeatable).
    pub headers: Vec<(String, String)>,
    /// Logs the options and timings.
    pub verbose: bool,
}

/// Why the command line was not taken: the message and the exit code.
#[derive(Debug, PartialEq, Eq)]
pub struct ArgumentError {
    /// What is printed on standard error.
    pub message: String,
    /// 1 (a refused command line), or 0 for `-h` (usage asked for).
    pub exit_code: i32,
}

/// The flags, and whether each takes a value (Go's bool flags do not need one).
const FLAGS: &[(&str, bool, &str)] = &[
    ("addr", true, "(required) tcp host:port to connect"),
    ("service", true, "service name to check (default: \"\")"),
    (
        "user-agent",
        true,
        "user-agent header value of health check requests (default \"grpc_health_probe\")",
    ),
    (
        "connect-timeout",
        true,
        "timeout for establishing connection (default 1s)",
    ),
    (
        "rpc-timeout",
        true,
        "timeout for health check rpc (default 1s)",
    ),
    (
        "rpc-header",
        true,
        "additional RPC headers in 'name: value' format; may be given more than once",
    ),
    (
        "gzip",
        false,
        "use GZIPCompressor for requests and GZIPDecompressor for response (accepted; requests are small and sent uncompressed)",
    ),
    ("v", false, "verbose logs"),
    ("version", false, "print the probe's version and exit"),
    ("tls", false, "not supported here: TLS"),
    ("tls-no-verify", false, "not supported here: TLS"),
    ("tls-ca-cert", true, "not supported here: TLS"),
    ("tls-client-cert", true, "not supported here: TLS"),
    ("tls-client-key", true, "not supported here: TLS"),
    ("tls-server-name", true, "not supported here: TLS"),
    ("alts", false, "not supported here: ALTS"),
    ("spiffe", false, "not supported here: SPIFFE"),
];

fn usage() -> String {
    let mut text = format!("Usage of {PROGRAM_NAME}:\n");
    for (name, takes_value, help) in FLAGS {
        let kind = if *takes_value { " string" } else { "" };
        text.push_str(&format!("  -{name}{kind}\n    \t{help}\n"));
    }
    text
}

/// What the command line asks for: a probe, or the version.
#[derive(Debug, PartialEq, Eq)]
pub enum Request {
    /// Run this probe.
    Probe(ProbeOptions),
    /// Print the version.
    Version,
}

/// Parses the arguments after the program name as Go's `flag` package would, then checks
/// them as `grpc_health_probe` does.
pub fn parse_args(args: &[String]) -> Result<Request, ArgumentError> {
    let syntax = |message: String| ArgumentError {
        message: format!("{message}\n{}", usage()),
        exit_code: EXIT_FLAG_SYNTAX,
    };
    let invalid = |message: String| ArgumentError {
        message: format!("error: {message}"),
        exit_code: EXIT_INVALID_ARGUMENTS,
    };
    let mut options = ProbeOptions {
        addr: String::new(),
        service: String::new(),
        connect_timeout: Duration::from_secs(1),
        rpc_timeout: Duration::from_secs(1),
        user_agent: PROGRAM_NAME.to_string(),
        headers: Vec::new(),
        verbose: false,
    };
    let mut version = false;
    let mut unsupported = None;
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        // Go stops at the first argument that is not a flag, and after `--`.
        if arg == "--" || !arg.starts_with('-') || arg == "-" {
            break;
        }
        let body = arg.strip_prefix("--").unwrap_or(&arg[1..]);
        if body.is_empty() || body.starts_with('-') || body.starts_with('=') {
            return Err(syntax(format!("bad flag syntax: {arg}")));
        }
        let (name, inline) = match body.split_once('=') {
            Some((name, value)) => (name, Some(value.to_string())),
            None => (body, None),
        };
        if name == "h" || name == "help" {
            return Err(ArgumentError {
                message: usage(),
                exit_code: 0,
            });
        }
        let Some((_, takes_value, _)) = FLAGS.iter().find(|(flag, _, _)| *flag == name) else {
            return Err(syntax(format!("flag provided but not defined: -{name}")));
        };
        let value = if *takes_value {
            match inline {
                Some(value) => value,
                None => rest
                    .next()
                    .cloned()
                    .ok_or_else(|| syntax(format!("flag needs an argument: -{name}")))?,
            }
        } else {
            inline.unwrap_or_else(|| "true".into())
        };
        let bad_value =
            |why: &str| syntax(format!("invalid value {value:?} for flag -{name}: {why}"));
        let boolean = || parse_go_bool(&value).ok_or_else(|| bad_value("parse error"));
        match name {
            "addr" => options.addr = value.clone(),
            "service" => options.service = value.clone(),
            "user-agent" => options.user_agent = value.clone(),
            "connect-timeout" => {
                options.connect_timeout =
                    parse_go_duration(&value).ok_or_else(|| bad_value("parse error"))?
            }
            "rpc-timeout" => {
                options.rpc_timeout =
                    parse_go_duration(&value).ok_or_else(|| bad_value("parse error"))?
            }
            "rpc-header" => {
                let Some((key, header)) = value.split_once(':') else {
                    return Err(bad_value("want 'name: value'"));
                };
                options
                    .headers
                    .push((key.trim().to_ascii_lowercase(), header.trim().to_string()));
            }
            "gzip" => {
                boolean()?;
            }
            "v" => options.verbose = boolean()?,
            "version" => version = boolean()?,
            _ => {
                // TLS, ALTS, SPIFFE: remembered, refused below (a false bool is harmless).
                if !*takes_value && !boolean()? {
                    continue;
                }
                unsupported.get_or_insert_with(|| name.to_string());
            }
        }
    }
    if version {
        return Ok(Request::Version);
    }
    if options.addr.is_empty() {
        return Err(invalid("-addr not specified".into()));
    }
    if options.connect_timeout.is_zero() {
        return Err(invalid(format!(
            "-connect-timeout must be greater than zero (specified: {})",
            format_go_duration(options.connect_timeout)
        )));
    }
    if options.rpc_timeout.is_zero() {
        return Err(invalid(format!(
            "-rpc-timeout must be greater than zero (specified: {})",
            format_go_duration(options.rpc_timeout)
        )));
    }
    if let Some(flag) = unsupported {
        return Err(invalid(format!(
            "-{flag} is not supported by the catalog server's built-in probe (plaintext only); use the grpc_health_probe program for TLS, ALTS or SPIFFE"
        )));
    }
    Ok(Request::Probe(options))
}

/// Go's `strconv.ParseBool`.
fn parse_go_bool(text: &str) -> Option<bool> {
    match text {
        "1" | "t" | "T" | "true" | "TRUE" | "True" => Some(true),
        "0" | "f" | "F" | "false" | "FALSE" | "False" => Some(false),
        _ => None,
    }
}

/// Go's `time.ParseDuration` for non-negative durations: `5s`, `1.5s`, `500ms`, `1m30s`,
/// `0`. A negative one is refused here as the probe would refuse it later.
pub fn parse_go_duration(text: &str) -> Option<Duration> {
    let text = text.strip_prefix('+').unwrap_or(text);
    if text == "0" {
        return Some(Duration::ZERO);
    }
    if text.is_empty() || text.starts_with('-') {
        return None;
    }
    let mut total = 0f64;
    let mut rest = text;
    while !rest.is_empty() {
        let number_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let (number, after) = rest.split_at(number_end);
        if number.is_empty() || number == "." {
            return None;
        }
        let value: f64 = number.parse().ok()?;
        let unit_end = after
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(after.len());
        let (unit, after) = after.split_at(unit_end);
        let nanos = match unit {
            "ns" => 1.0,
            "us" | "µs" | "μs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            _ => return None,
        };
        total += value * nanos;
        rest = after;
    }
    Some(Duration::from_nanos(total.round() as u64))
}

/// A duration as Go's `%v` prints it, for the units probes use: `1s`, `1.5s`, `500ms`,
/// `2m0s`.
pub fn format_go_duration(duration: Duration) -> String {
    let nanos = duration.as_nanos();
    if nanos == 0 {
        return "0s".into();
    }
    let trim = |value: f64| {
        let text = format!("{value:.9}");
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    };
    if nanos < 1_000 {
        format!("{nanos}ns")
    } else if nanos < 1_000_000 {
        format!("{}µs", trim(nanos as f64 / 1e3))
    } else if nanos < 1_000_000_000 {
        format!("{}ms", trim(nanos as f64 / 1e6))
    } else {
        let seconds = duration.as_secs_f64();
        let hours = (seconds / 3600.0).floor();
        let minutes = ((seconds - hours * 3600.0) / 60.0).floor();
        let rest = seconds - hours * 3600.0 - minutes * 60.0;
        match (hours > 0.0, minutes > 0.0 || hours > 0.0) {
            (true, _) => format!("{hours}h{minutes}m{}s", trim(rest)),
            (false, true) => format!("{minutes}m{}s", trim(rest)),
            _ => format!("{}s", trim(rest)),
        }
    }
}

/// Runs the probe with the arguments after the program name; returns the exit code.
pub fn run(args: &[String]) -> i32 {
    let options = match parse_args(args) {
        Ok(Request::Probe(options)) => options,
        Ok(Request::Version) => {
            eprintln!(
                "{PROGRAM_NAME} (catalog-server {})",
                env!("CARGO_PKG_VERSION")
            );
            return EXIT_SERVING;
        }
        Err(error) => {
            eprint!("{}", error.message);
            if !error.message.ends_with('\n') {
                eprintln!();
            }
            return error.exit_code;
        }
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("error: failed to start: {error}");
            return EXIT_CONNECTION_FAILURE;
        }
    };
    let (code, message) = runtime.block_on(probe(&options));
    eprintln!("{message}");
    code
}

/// One probe: connect (retrying until `connect_timeout`, as grpc-go's blocking dial does),
/// then one Check. The exit code and the line to print.
pub async fn probe(options: &ProbeOptions) -> (i32, String) {
    if options.verbose {
        eprintln!("parsed options:");
        eprintln!(
            "> addr={} conn_timeout={} rpc_timeout={}",
            options.addr,
            format_go_duration(options.connect_timeout),
            format_go_duration(options.rpc_timeout)
        );
    }
    let connect_started = Instant::now();
    let deadline = connect_started + options.connect_timeout;
    let timed_out = || {
        format!(
            "timeout: failed to connect service {:?} within {}",
            options.addr,
            format_go_duration(options.connect_timeout)
        )
    };
    let targets = match dial_targets(&options.addr).await {
        Ok(targets) => targets,
        Err(error) => {
            return (
                EXIT_CONNECTION_FAILURE,
                format!(
                    "error: failed to connect service at {:?}: {error}",
                    options.addr
                ),
            );
        }
    };
    let channel = loop {
        let mut connected = None;
        for target in &targets {
            let Some(left) = deadline.checked_duration_since(Instant::now()) else {
                break;
            };
            let Ok(endpoint) = Endpoint::from_shared(format!("http://{target}")) else {
                continue;
            };
            let endpoint = match endpoint.user_agent(options.user_agent.clone()) {
                Ok(endpoint) => endpoint.connect_timeout(left),
                Err(error) => {
                    return (
                        EXIT_INVALID_ARGUMENTS,
                        format!("error: invalid -user-agent: {error}"),
                    );
                }
            };
            if let Ok(Ok(channel)) = tokio::time::timeout(left, endpoint.connect()).await {
                connected = Some(channel);
                break;
            }
        }
        if let Some(channel) = connected {
            break channel;
        }
        if Instant::now() + Duration::from_millis(50) >= deadline {
            return (EXIT_CONNECTION_FAILURE, timed_out());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let connect_took = connect_started.elapsed();
    if options.verbose {
        eprintln!("connection established (took {connect_took:?})");
    }

    let rpc_started = Instant::now();
    let mut request = tonic::Request::new(HealthCheckRequest {
        service: options.service.clone(),
    });
    request.set_timeout(options.rpc_timeout);
    for (key, value) in &options.headers {
        let (Ok(key), Ok(value)) = (
            key.parse::<tonic::metadata::MetadataKey<tonic::metadata::Ascii>>(),
            value.parse(),
        ) else {
            return (
                EXIT_INVALID_ARGUMENTS,
                format!("error: invalid -rpc-header {key:?}"),
            );
        };
        request.metadata_mut().insert(key, value);
    }
    let rpc_timed_out = || {
        format!(
            "timeout: health rpc did not complete within {}",
            format_go_duration(options.rpc_timeout)
        )
    };
    let answer = match tokio::time::timeout(
        options.rpc_timeout,
        HealthClient::new(channel).check(request),
    )
    .await
    {
        Err(_) => return (EXIT_RPC_FAILURE, rpc_timed_out()),
        Ok(Err(status)) => {
            let message = match status.code() {
                tonic::Code::Unimplemented => "error: this server does not implement the grpc health protocol (grpc.health.v1.Health)".to_string(),
                tonic::Code::DeadlineExceeded => rpc_timed_out(),
                code => format!(
                    "error: health rpc failed: rpc error: code = {} desc = {}",
                    go_code_name(code),
                    status.message()
                ),
            };
            return (EXIT_RPC_FAILURE, message);
        }
        Ok(Ok(answer)) => answer.into_inner(),
    };
    let status = ServingStatus::try_from(answer.status).unwrap_or(ServingStatus::Unknown);
    if options.verbose {
        eprintln!(
            "time elapsed: connect={connect_took:?} rpc={:?}",
            rpc_started.elapsed()
        );
    }
    if status != ServingStatus::Serving {
        return (
            EXIT_UNHEALTHY,
            format!(
                "service unhealthy (responded with {:?})",
                status.as_str_name()
            ),
        );
    }
    (EXIT_SERVING, "status: SERVING".to_string())
}

/// The socket addresses to try for `addr`: an empty host is this machine (IPv4, then IPv6
/// loopback), as Go's dialer takes `:50051`.
async fn dial_targets(addr: &str) -> Result<Vec<SocketAddr>, String> {
    let (host, port) = addr
        .rsplit_once(':')
        .ok_or_else(|| format!("address {addr}: missing port in address"))?;
    let port: u16 = port
        .parse()
        .map_err(|_| format!("address {addr}: invalid port"))?;
    if host.is_empty() {
        return Ok(vec![
            SocketAddr::from(([127, 0, 0, 1], port)),
            SocketAddr::from((std::net::Ipv6Addr::LOCALHOST, port)),
        ]);
    }
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let found: Vec<SocketAddr> = tokio::net::lookup_host((host, port))
        .await
        .map_err(|e| format!("lookup {host}: {e}"))?
        .collect();
    if found.is_empty() {
        return Err(format!("lookup {host}: no such host"));
    }
    Ok(found)
}

/// grpc-go's name of a status code (`Unavailable`, `PermissionDenied`…).
fn go_code_name(code: tonic::Code) -> String {
    format!("{code:?}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    fn probe_options(list: &[&str]) -> ProbeOptions {
        match parse_args(&args(list)) {
            Ok(Request::Probe(options)) => options,
            other => panic!("{list:?}: {other:?}"),
        }
    }

    #[test]
    fn olm_probe_command_parses() {
        let options = probe_options(&["-addr=:50051", "-rpc-timeout=5s"]);
        assert_eq!(options.addr, ":50051");
        assert_eq!(options.rpc_timeout, Duration::from_secs(5));
        assert_eq!(options.connect_timeout, Duration::from_secs(1));
        assert!(!options.verbose);
    }

    #[test]
    fn go_flag_forms_are_taken() {
        let options = probe_options(&[
            "--addr",
            "localhost:1",
            "-v",
            "-connect-timeout",
            "1m30s",
            "-service=Registry",
            "-rpc-header=X-Trace: 1",
        ]);
        assert_eq!(options.addr, "localhost:1");
        assert!(options.verbose);
        assert_eq!(options.connect_timeout, Duration::from_secs(90));
        assert_eq!(options.service, "Registry");
        assert_eq!(options.headers, vec![("x-trace".into(), "1".into())]);
        // Flags stop at the first non-flag argument.
        assert!(!probe_options(&["-addr=:1", "extra", "-v"]).verbose);
    }

    #[test]
    fn exit_codes_of_refused_command_lines() {
        let code = |list: &[&str]| parse_args(&args(list)).unwrap_err().exit_code;
        assert_eq!(code(&[]), EXIT_INVALID_ARGUMENTS, "no -addr");
        assert_eq!(
            code(&["-addr=:1", "-rpc-timeout=0"]),
            EXIT_INVALID_ARGUMENTS
        );
        assert_eq!(code(&["-addr=:1", "-tls"]), EXIT_INVALID_ARGUMENTS);
        assert_eq!(code(&["-addr=:1", "-nope"]), EXIT_FLAG_SYNTAX);
        assert_eq!(code(&["-addr"]), EXIT_FLAG_SYNTAX);
        assert_eq!(code(&["-addr=:1", "-rpc-timeout=5"]), EXIT_FLAG_SYNTAX);
        assert_eq!(code(&["-addr=:1", "-v=maybe"]), EXIT_FLAG_SYNTAX);
        assert_eq!(code(&["---addr=:1"]), EXIT_FLAG_SYNTAX);
        assert_eq!(code(&["-h"]), 0);
        let message = parse_args(&args(&["-addr=:1", "-rpc-timeout=0s"]))
            .unwrap_err()
            .message;
        assert_eq!(
            message,
            "error: -rpc-timeout must be greater than zero (specified: 0s)"
        );
        assert_eq!(
            parse_args(&args(&[])).unwrap_err().message,
            "error: -addr not specified"
        );
        // `-tls=false` asks for nothing unsupported.
        assert!(parse_args(&args(&["-addr=:1", "-tls=false"])).is_ok());
    }

    #[test]
    fn durations_as_go_parses_and_prints_them() {
        for (text, nanos) in [
            ("5s", 5_000_000_000u64),
            ("1.5s", 1_500_000_000),
            ("500ms", 500_000_000),
            ("1m30s", 90_000_000_000),
            ("1h", 3_600_000_000_000),
            ("10us", 10_000),
            ("0", 0),
        ] {
            assert_eq!(
                parse_go_duration(text),
                Some(Duration::from_nanos(nanos)),
                "{text}"
            );
        }
        for bad in ["", "5", "s", "-1s", "1x", "."] {
            assert_eq!(parse_go_duration(bad), None, "{bad}");
        }
        for (nanos, text) in [
            (1_000_000_000u64, "1s"),
            (1_500_000_000, "1.5s"),
            (500_000_000, "500ms"),
            (120_000_000_000, "2m0s"),
            (3_723_000_000_000, "1h2m3s"),
        ] {
            assert_eq!(format_go_duration(Duration::from_nanos(nanos)), text);
        }
    }
}
