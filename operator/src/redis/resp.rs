//! RESP2 over TCP: requests are arrays of bulk strings, replies are parsed into [`Reply`].
//! Every call runs under the connection's deadline, so a dead or partitioned pod costs a
//! reconcile at most that long and never blocks it.

use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

/// Why a Redis call failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Connecting, reading or writing failed.
    #[error("{address}: {source}")]
    Io {
        /// The server.
        address: SocketAddr,
        /// The socket error.
        #[source]
        source: std::io::Error,
    },
    /// No answer within the deadline.
    #[error("{address}: no answer within {timeout:?}")]
    Timeout {
        /// The server.
        address: SocketAddr,
        /// The deadline.
        timeout: Duration,
    },
    /// The server answered with an error reply (`-ERR ...`).
    #[error("{address}: {message}")]
    Server {
        /// The server.
        address: SocketAddr,
        /// Its error text.
        message: String,
    },
    /// The server's bytes are not RESP.
    #[error("{address}: not a RESP reply: {what}")]
    Protocol {
        /// The server.
        address: SocketAddr,
        /// What was wrong.
        what: String,
    },
}

/// A RESP2 reply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reply {
    /// `+OK`.
    Simple(String),
    /// `:42`.
    Integer(i64),
    /// `$5\r\nhello` (None for `$-1`).
    Bulk(Option<Vec<u8>>),
    /// `*2 ...` (None for `*-1`).
    Array(Option<Vec<Reply>>),
}

impl Reply {
    /// The reply as text: a simple string, or a bulk string read as UTF-8 (lossily).
    pub fn text(&self) -> Option<String> {
        match self {
            Reply::Simple(s) => Some(s.clone()),
            Reply::Bulk(Some(bytes)) => Some(String::from_utf8_lossy(bytes).into_owned()),
            _ => None,
        }
    }
}

/// One connection to one Redis server.
pub struct Connection {
    stream: BufReader<TcpStream>,
    address: SocketAddr,
    timeout: Duration,
}

/// Bulk strings longer than this are refused: the operator reads `INFO` sections (a few KiB),
/// never values, so a huge length means a confused peer, not data.
const MAX_BULK: i64 = 16 << 20;

impl Connection {
    /// Connects and, with `auth` (user, password), authenticates; each step under `timeout`.
    pub async fn open(
        address: SocketAddr,
        auth: Option<(&str, &str)>,
        timeout: Duration,
    ) -> Result<Connection, Error> {
        let stream = tokio::time::timeout(timeout, TcpStream::connect(address))
            .await
            .map_err(|_| Error::Timeout { address, timeout })?
            .map_err(|source| Error::Io { address, source })?;
        let _ = stream.set_nodelay(true);
        let mut connection = Connection {
            stream: BufReader::new(stream),
            address,
            timeout,
        };
        if let Some((user, password)) = auth {
            connection.call(&["AUTH", user, password]).await?;
        }
        Ok(connection)
    }

    /// Sends one command and reads its reply; an error reply is [`Error::Server`].
    pub async fn call(&mut self, args: &[&str]) -> Result<Reply, Error> {
        let address = self.address;
        let timeout = self.timeout;
        tokio::time::timeout(timeout, self.exchange(args))
            .await
            .map_err(|_| Error::Timeout { address, timeout })?
    }

    async fn exchange(&mut self, args: &[&str]) -> Result<Reply, Error> {
        let mut request = format!("*{}\r\n", args.len()).into_bytes();
        for arg in args {
            request.extend_from_slice(format!("${}\r\n", arg.len()).as_bytes());
            request.extend_from_slice(arg.as_bytes());
            request.extend_from_slice(b"\r\n");
        }
        let address = self.address;
        self.stream
            .get_mut()
            .write_all(&request)
            .await
            .map_err(|source| Error::Io { address, source })?;
        self.read_reply().await
    }

    async fn read_line(&mut self) -> Result<String, Error> {
        let address = self.address;
        let mut line = String::new();
        let n = self
            .stream
            .read_line(&mut line)
            .await
            .map_err(|source| Error::Io { address, source })?;
        if n == 0 {
            return Err(Error::Io {
                address,
                source: std::io::ErrorKind::UnexpectedEof.into(),
            });
        }
        Ok(line.trim_end_matches(['\r', '\n']).to_string())
    }

    fn protocol(&self, what: impl Into<String>) -> Error {
        Error::Protocol {
            address: self.address,
            what: what.into(),
        }
    }

    async fn read_reply(&mut self) -> Result<Reply, Error> {
        // Arrays nest; an explicit stack keeps this an ordinary async fn (no boxed recursion).
        let mut stack: Vec<(usize, Vec<Reply>)> = Vec::new();
        loop {
            let line = self.read_line().await?;
            let (kind, rest) = line.split_at(line.len().min(1));
            let number = || rest.parse::<i64>();
            let mut value = match kind {
                "+" => Reply::Simple(rest.to_string()),
                "-" => {
                    return Err(Error::Server {
                        address: self.address,
                        message: rest.to_string(),
                    });
                }
                ":" => Reply::Integer(number().map_err(|_| self.protocol(line.clone()))?),
                "$" => {
                    let len = number().map_err(|_| self.protocol(line.clone()))?;
                    if len < 0 {
                        Reply::Bulk(None)
                    } else if len > MAX_BULK {
                        return Err(self.protocol(format!("a bulk string of {len} bytes")));
                    } else {
                        let mut bytes = vec![0; len as usize + 2];
                        let address = self.address;
                        self.stream
                            .read_exact(&mut bytes)
                            .await
                            .map_err(|source| Error::Io { address, source })?;
                        bytes.truncate(len as usize);
                        Reply::Bulk(Some(bytes))
                    }
                }
                "*" => {
                    let len = number().map_err(|_| self.protocol(line.clone()))?;
                    if len < 0 {
                        Reply::Array(None)
                    } else if len == 0 {
                        Reply::Array(Some(Vec::new()))
                    } else {
                        stack.push((len as usize, Vec::with_capacity(len.min(1024) as usize)));
                        continue;
                    }
                }
                _ => return Err(self.protocol(line.clone())),
            };
            // Fold the finished value into the arrays waiting for it.
            loop {
                let Some((want, items)) = stack.last_mut() else {
                    return Ok(value);
                };
                items.push(value);
                if items.len() < *want {
                    break;
                }
                let (_, items) = stack.pop().expect("just looked");
                value = Reply::Array(Some(items));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::net::TcpListener;

    /// A one-shot server that answers the first request with `answer`.
    async fn server(answer: &'static [u8]) -> SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.unwrap();
            let mut buf = [0u8; 1024];
            let _ = socket.read(&mut buf).await.unwrap();
            socket.write_all(answer).await.unwrap();
            // Keep the socket open so a short reply is not mistaken for EOF.
            tokio::time::sleep(Duration::from_secs(5)).await;
        });
        address
    }

    async fn ask(answer: &'static [u8]) -> Result<Reply, Error> {
        let address = server(answer).await;
        let mut c = Connection::open(address, None, Duration::from_millis(500))
            .await
            .unwrap();
        c.call(&["PING"]).await
    }

    #[tokio::test]
    async fn replies_of_every_kind_parse() {
        assert_eq!(
            ask(b"+PONG\r\n").await.unwrap(),
            Reply::Simple("PONG".into())
        );
        assert_eq!(ask(b":12\r\n").await.unwrap(), Reply::Integer(12));
        assert_eq!(
            ask(b"$5\r\nhel\r\n\r\n").await.unwrap(),
            Reply::Bulk(Some(b"hel\r\n".to_vec())),
            "a bulk string is read by its length, CRLF inside included"
        );
        assert_eq!(ask(b"$-1\r\n").await.unwrap(), Reply::Bulk(None));
        assert_eq!(
            ask(b"*2\r\n*1\r\n:1\r\n$1\r\nx\r\n").await.unwrap(),
            Reply::Array(Some(vec![
                Reply::Array(Some(vec![Reply::Integer(1)])),
                Reply::Bulk(Some(b"x".to_vec()))
            ]))
        );
    }

    #[tokio::test]
    async fn an_error_reply_and_garbage_are_errors() {
        let error = ask(b"-WRONGPASS invalid username-password pair\r\n")
            .await
            .unwrap_err();
        assert!(
            matches!(error, Error::Server { ref message, .. } if message.starts_with("WRONGPASS")),
            "{error}"
        );
        assert!(matches!(
            ask(b"hello\r\n").await.unwrap_err(),
            Error::Protocol { .. }
        ));
        assert!(matches!(
            ask(b"$999999999999\r\n").await.unwrap_err(),
            Error::Protocol { .. }
        ));
    }

    #[tokio::test]
    async fn a_silent_server_times_out() {
        let error = ask(b"").await.unwrap_err();
        assert!(matches!(error, Error::Timeout { .. }), "{error}");
    }
}
