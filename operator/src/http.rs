//! A small HTTP/1.1 server (hyper) for the operator's endpoints: `/metrics`, `/healthz`,
//! `/readyz` in plain HTTP, and the conversion webhook over TLS. Handlers are synchronous:
//! everything they do is in memory.

use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;

/// Largest request body accepted (a ConversionReview of many objects fits easily).
const MAX_BODY: usize = 16 * 1024 * 1024;

/// A request as the handlers see it.
pub struct Request {
    /// `GET`, `POST`, …
    pub method: http::Method,
    /// The path without the query.
    pub path: String,
    /// The whole body.
    pub body: Bytes,
}

/// A response: status, content type, body.
pub struct Response {
    /// HTTP status.
    pub status: http::StatusCode,
    /// `content-type` header.
    pub content_type: &'static str,
    /// The body.
    pub body: Vec<u8>,
}

impl Response {
    /// 200 with a plain-text body.
    pub fn text(body: impl Into<String>) -> Self {
        Response {
            status: http::StatusCode::OK,
            content_type: "text/plain; version=0.0.4",
            body: body.into().into_bytes(),
        }
    }

    /// 200 with a JSON body.
    pub fn json(value: &impl serde::Serialize) -> Self {
        Response {
            status: http::StatusCode::OK,
            content_type: "application/json",
            body: serde_json::to_vec(value).unwrap_or_default(),
        }
    }

    /// An error status with a plain-text message.
    pub fn error(status: http::StatusCode, message: impl Into<String>) -> Self {
        Response {
            status,
            content_type: "text/plain",
            body: message.into().into_bytes(),
        }
    }
}

/// Serves connections from `listener` until the task is dropped; TLS when `tls` is given.
pub async fn serve<H>(listener: TcpListener, tls: Option<TlsAcceptor>, handler: H)
where
    H: Fn(Request) -> Response + Send + Sync + 'static,
{
    let handler = Arc::new(handler);
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        let handler = handler.clone();
        let tls = tls.clone();
        tokio::spawn(async move {
            let service = service_fn(move |request: hyper::Request<hyper::body::Incoming>| {
                let handler = handler.clone();
                async move {
                    let (parts, body) = request.into_parts();
                    let limited = http_body_util::Limited::new(body, MAX_BODY);
                    let response = match limited.collect().await {
                        Ok(collected) => handler(Request {
                            method: parts.method,
                            path: parts.uri.path().to_string(),
                            body: collected.to_bytes(),
                        }),
                        Err(error) => {
                            Response::error(http::StatusCode::PAYLOAD_TOO_LARGE, error.to_string())
                        }
                    };
                    hyper::Response::builder()
                        .status(response.status)
                        .header(http::header::CONTENT_TYPE, response.content_type)
                        .body(Full::new(Bytes::from(response.body)))
                }
            });
            let builder = hyper::server::conn::http1::Builder::new();
            let result = match tls {
                Some(acceptor) => match acceptor.accept(stream).await {
                    Ok(stream) => {
                        builder
                            .serve_connection(TokioIo::new(stream), service)
                            .await
                    }
                    Err(error) => {
                        tracing::debug!(%error, "TLS handshake failed");
                        return;
                    }
                },
                None => {
                    builder
                        .serve_connection(TokioIo::new(stream), service)
                        .await
                }
            };
            if let Err(error) = result {
                tracing::debug!(%error, "connection ended with an error");
            }
        });
    }
}
