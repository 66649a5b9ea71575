//! The HTTP view of the served catalog (`--http-port`): the documents as JSON lines like OLM
//! v1's catalogd (`/api/v1/all`, `/api/v1/metas?schema=&package=&name=`), Prometheus
//! `/metrics`, and `/healthz`.

use std::fmt::Write as _;

use bytes::Bytes;
use http_body_util::Full;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;

use super::metas::MetaQuery;
use super::state::CatalogHandle;

/// Serves the view on `listener` until the task is dropped.
pub async fn serve_http(listener: TcpListener, catalog: CatalogHandle) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        let catalog = catalog.clone();
        tokio::spawn(async move {
            let service = service_fn(move |request: hyper::Request<hyper::body::Incoming>| {
                let catalog = catalog.clone();
                async move {
                    let (status, content_type, body) = if request.method() != http::Method::GET {
                        (405, "text/plain", b"only GET\n".to_vec())
                    } else {
                        route(
                            &catalog,
                            request.uri().path(),
                            request.uri().query().unwrap_or(""),
                        )
                    };
                    hyper::Response::builder()
                        .status(status)
                        .header(http::header::CONTENT_TYPE, content_type)
                        .body(Full::new(Bytes::from(body)))
                }
            });
            let result = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
            if let Err(error) = result {
                tracing::debug!(%error, "HTTP connection ended with an error");
            }
        });
    }
}

/// Answers one GET: (status, content type, body).
pub fn route(catalog: &CatalogHandle, path: &str, query: &str) -> (u16, &'static str, Vec<u8>) {
    const JSONL: &str = "application/jsonl";
    match path {
        "/healthz" => (200, "text/plain", b"ok\n".to_vec()),
        "/metrics" => (
            200,
            "text/plain; version=0.0.4",
            metrics(catalog).into_bytes(),
        ),
        "/api/v1/all" | "/api/v1/metas" => {
            let Some(metas) = catalog.metas() else {
                return (503, "text/plain", b"documents not kept\n".to_vec());
            };
            let filter = if path == "/api/v1/all" {
                MetaQuery::default()
            } else {
                match parse_query(query) {
                    Ok(filter) => filter,
                    Err(message) => return (400, "text/plain", message.into_bytes()),
                }
            };
            match metas.select(&filter) {
                Ok(body) => (200, JSONL, body),
                Err(error) => (500, "text/plain", format!("{error}\n").into_bytes()),
            }
        }
        _ => (404, "text/plain", b"not found\n".to_vec()),
    }
}

/// `schema`, `package` and `name` from a query string; anything else is an error, so that a
/// typo does not silently return the whole catalog.
fn parse_query(query: &str) -> Result<MetaQuery, String> {
    let mut filter = MetaQuery::default();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        let value = percent_decode(value).ok_or_else(|| format!("bad escape in {pair:?}\n"))?;
        match key {
            "schema" => filter.schema = Some(value),
            "package" => filter.package = Some(value),
            "name" => filter.name = Some(value),
            other => return Err(format!("unknown query parameter {other:?}\n")),
        }
    }
    Ok(filter)
}

fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 3;
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}

fn metrics(catalog: &CatalogHandle) -> String {
    let c = catalog.counters();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# HELP bundle_tool_catalog_reloads_total Catalog reloads by result.\n# TYPE bundle_tool_catalog_reloads_total counter"
    );
    let _ = writeln!(
        out,
        "bundle_tool_catalog_reloads_total{{result=\"success\"}} {}",
        c.reloads_succeeded
    );
    let _ = writeln!(
        out,
        "bundle_tool_catalog_reloads_total{{result=\"failure\"}} {}",
        c.reloads_failed
    );
    let _ = writeln!(
        out,
        "# HELP bundle_tool_catalog_last_reload_ok 1 if the last reload succeeded, 0 if the served catalog is older than the files.\n# TYPE bundle_tool_catalog_last_reload_ok gauge\nbundle_tool_catalog_last_reload_ok {}",
        c.last_reload_ok
    );
    let _ = writeln!(
        out,
        "# HELP bundle_tool_catalog_packages Packages served.\n# TYPE bundle_tool_catalog_packages gauge\nbundle_tool_catalog_packages {}",
        c.packages
    );
    let _ = writeln!(
        out,
        "# HELP bundle_tool_catalog_bundles Bundles served.\n# TYPE bundle_tool_catalog_bundles gauge\nbundle_tool_catalog_bundles {}",
        c.bundles
    );
    let _ = writeln!(
        out,
        "# HELP bundle_tool_grpc_requests_total Registry RPCs started, by method.\n# TYPE bundle_tool_grpc_requests_total counter"
    );
    for (method, count) in &c.requests {
        let _ = writeln!(
            out,
            "bundle_tool_grpc_requests_total{{method=\"{method}\"}} {count}"
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_are_decoded_and_unknown_keys_rejected() {
        let q = parse_query("schema=olm.bundle&package=my%2Dop&name=a+b").unwrap();
        assert_eq!(q.schema.as_deref(), Some("olm.bundle"));
        assert_eq!(q.package.as_deref(), Some("my-op"));
        assert_eq!(q.name.as_deref(), Some("a b"));
        assert!(
            parse_query("schemas=x")
                .unwrap_err()
                .contains("unknown query parameter")
        );
        assert!(parse_query("name=%zz").is_err());
    }
}
