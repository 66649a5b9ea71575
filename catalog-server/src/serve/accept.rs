//! Accepting connections when the process is out of file descriptors.
//!
//! A listener whose `accept` fails with EMFILE still has the pending connection in its
//! backlog, so it is readable again at once: a loop that simply retries spins a core and
//! logs nothing useful, and tonic's own accept loop does exactly that. This one waits
//! before retrying, 5 ms doubling to 1 s, the back-off Go's gRPC server (and so `opm serve`)
//! uses for the same errors, and says once per episode that it is waiting. Connections
//! already open are served throughout; new ones are taken as descriptors free up.

use std::io;
use std::net::SocketAddr;
use std::time::Duration;

use tokio::net::{TcpListener, TcpSocket, TcpStream};
use tokio::sync::mpsc;
use tonic::codegen::tokio_stream::wrappers::ReceiverStream;

const FIRST_WAIT: Duration = Duration::from_millis(5);
const LONGEST_WAIT: Duration = Duration::from_secs(1);

/// Accepts from `listener`, backing off on errors that are the process's rather than the
/// connection's.
pub struct Acceptor {
    listener: TcpListener,
    /// The wait after the last failure, while failures go on.
    backoff: Option<Duration>,
}

impl Acceptor {
    /// Accepts on `listener`.
    pub fn new(listener: TcpListener) -> Self {
        Acceptor {
            listener,
            backoff: None,
        }
    }

    /// The next connection, with `TCP_NODELAY` set (answers are small and latency-bound).
    pub async fn accept(&mut self) -> TcpStream {
        loop {
            match self.listener.accept().await {
                Ok((stream, _)) => {
                    if self.backoff.take().is_some() {
                        tracing::info!("accepting connections again");
                    }
                    // A socket that refuses the option still works; only latency suffers.
                    let _ = stream.set_nodelay(true);
                    return stream;
                }
                // The peer gave up before we took the connection: nothing to wait for.
                Err(error) if connection_gone(&error) => continue,
                Err(error) => {
                    let wait = match self.backoff {
                        None => {
                            tracing::warn!(
                                %error,
                                "cannot accept connections; retrying with back-off up to 1 s"
                            );
                            FIRST_WAIT
                        }
                        Some(previous) => (previous * 2).min(LONGEST_WAIT),
                    };
                    self.backoff = Some(wait);
                    tokio::time::sleep(wait).await;
                }
            }
        }
    }

    /// The connections as the stream tonic's `serve_with_incoming*` takes. The accepting task
    /// ends, closing the listener, when the server drops the stream.
    pub fn into_incoming(mut self) -> ReceiverStream<io::Result<TcpStream>> {
        let (sender, receiver) = mpsc::channel(1);
        tokio::spawn(async move {
            loop {
                let stream = self.accept().await;
                if sender.send(Ok(stream)).await.is_err() {
                    break;
                }
            }
        });
        ReceiverStream::new(receiver)
    }
}

/// Binds and listens on `address` with the backlog the kernel allows
/// (`net.core.somaxconn`), as Go's `net.Listen` does, rather than tokio's fixed 1024: a burst
/// of clients beyond the backlog has its SYNs dropped and waits a second per retransmit.
pub fn listen(address: SocketAddr) -> io::Result<TcpListener> {
    let socket = match address {
        SocketAddr::V4(_) => TcpSocket::new_v4()?,
        SocketAddr::V6(_) => TcpSocket::new_v6()?,
    };
    // As tokio's `TcpListener::bind`: a restarted server rebinds a port in TIME_WAIT.
    socket.set_reuseaddr(true)?;
    socket.bind(address)?;
    socket.listen(kernel_backlog())
}

fn kernel_backlog() -> u32 {
    std::fs::read_to_string("/proc/sys/net/core/somaxconn")
        .ok()
        .and_then(|text| text.trim().parse().ok())
        .unwrap_or(1024)
}

fn connection_gone(error: &io::Error) -> bool {
    matches!(
        error.kind(),
        io::ErrorKind::ConnectionAborted | io::ErrorKind::ConnectionReset
    )
}

/// Raises this process's soft limit on open files to its hard limit, as the Go runtime does
/// at start-up (since Go 1.19) for every Go server, `opm serve` included; without it a
/// server under a default soft limit of 1024 refuses its 1021st idle client. Returns the
/// limit in force.
pub fn raise_open_files_limit() -> io::Result<u64> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the struct we own.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return Err(io::Error::last_os_error());
    }
    if limit.rlim_cur < limit.rlim_max {
        let raised = libc::rlimit {
            rlim_cur: limit.rlim_max,
            rlim_max: limit.rlim_max,
        };
        // SAFETY: setrlimit reads the struct we own.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } != 0 {
            return Err(io::Error::last_os_error());
        }
        limit = raised;
    }
    Ok(limit.rlim_cur)
}

#[cfg(test)]
mod tests {
    use super::Acceptor;

    #[tokio::test]
    async fn accepts_and_sets_nodelay() {
        let listener = super::listen("127.0.0.1:0".parse().unwrap()).unwrap();
        let address = listener.local_addr().unwrap();
        let mut acceptor = Acceptor::new(listener);
        let (accepted, _client) =
            tokio::join!(acceptor.accept(), tokio::net::TcpStream::connect(address));
        assert!(accepted.nodelay().unwrap());
    }

    #[test]
    fn the_open_files_limit_is_at_its_hard_limit_after_raising() {
        let limit = super::raise_open_files_limit().unwrap();
        let mut now = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit writes into the struct we own.
        assert_eq!(unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut now) }, 0);
        assert_eq!((now.rlim_cur, now.rlim_max), (limit, limit));
    }
}
