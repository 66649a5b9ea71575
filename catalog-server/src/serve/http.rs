//! The HTTP view of the served catalog (`--http-port`): the documents as JSON lines like OLM
//! v1's catalogd (`/api/v1/all`, `/api/v1/metas?schema=&package=&name=`), Prometheus
//! `/metrics`, and `/healthz`.

use std::fmt::Write as _;

use bytes::Bytes;
use http_body_util::Full;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;

use super::accept::Acceptor;
use super::byte_ranges;
use super::metas::MetaQuery;
use super::state::CatalogHandle;

/// Serves the view on `acceptor`'s connections until the task is dropped.
pub async fn serve_http(mut acceptor: Acceptor, catalog: CatalogHandle) {
    loop {
        let stream = acceptor.accept().await;
        let catalog = catalog.clone();
        tokio::spawn(async move {
            let service = service_fn(move |request: hyper::Request<hyper::body::Incoming>| {
                let catalog = catalog.clone();
                async move { Ok::<_, http::Error>(respond(&catalog, &request)) }
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

/// Answers one request as catalogd's handlers do: GET and HEAD only (405 otherwise); the
/// documents with `Last-Modified` (when this snapshot was loaded), `If-Modified-Since` (304)
/// and `If-Unmodified-Since` (412) honoured; `/api/v1/all` with `Accept-Ranges` and `Range`
/// (206, 416) as Go's `ServeContent` answers; HEAD with the GET's headers and no body (hyper
/// leaves the body out and keeps its length); and, as catalogd's gzip wrapper does, every
/// answer `Vary: Accept-Encoding` and a GET body of 1 KiB or more gzipped when the client
/// accepts gzip.
fn respond<B>(
    catalog: &CatalogHandle,
    request: &hyper::Request<B>,
) -> hyper::Response<Full<Bytes>> {
    let method = request.method();
    let mut headers: Vec<(http::header::HeaderName, String)> = Vec::new();
    let (status, content_type, mut body) =
        if method != http::Method::GET && method != http::Method::HEAD {
            (405, Some("text/plain"), b"only GET and HEAD\n".to_vec())
        } else {
            let path = request.uri().path();
            let documents = matches!(path, "/api/v1/all" | "/api/v1/metas");
            match (documents, catalog.metas()) {
                (true, Some(metas)) => {
                    let modified = metas.modified();
                    match precondition(request.headers(), modified) {
                        Some(status) => {
                            headers.push((
                                http::header::LAST_MODIFIED,
                                httpdate::fmt_http_date(modified),
                            ));
                            (status, None, Vec::new())
                        }
                        None => {
                            let (status, content_type, body) =
                                route(catalog, path, request.uri().query().unwrap_or(""));
                            if status == 200 && path == "/api/v1/all" {
                                whole_or_range(request.headers(), modified, body, &mut headers)
                            } else {
                                if status == 200 {
                                    headers.push((
                                        http::header::LAST_MODIFIED,
                                        httpdate::fmt_http_date(modified),
                                    ));
                                }
                                (status, content_type, body)
                            }
                        }
                    }
                }
                _ => route(catalog, path, request.uri().query().unwrap_or("")),
            }
        };
    if method == http::Method::GET
        && body.len() >= GZIP_MIN_SIZE
        && !headers
            .iter()
            .any(|(name, _)| name == http::header::CONTENT_RANGE)
        && accepts_gzip(request.headers())
        && let Some(compressed) = gzip(&body)
    {
        body = compressed;
        headers.retain(|(name, _)| name != http::header::ACCEPT_RANGES);
        headers.push((http::header::CONTENT_ENCODING, "gzip".into()));
    }
    let mut response = hyper::Response::builder()
        .status(status)
        .header(http::header::VARY, "Accept-Encoding");
    if let Some(content_type) = content_type {
        response = response.header(http::header::CONTENT_TYPE, content_type);
    }
    for (name, value) in headers {
        response = response.header(name, value);
    }
    response
        .body(Full::new(Bytes::from(body)))
        .unwrap_or_else(|_| hyper::Response::new(Full::new(Bytes::new())))
}

/// The documents' content type, as catalogd sends it.
const JSONL_TYPE: &str = "application/jsonl";

/// Below this many bytes catalogd's gzip wrapper (gzhttp's default minimum) sends a body as is.
const GZIP_MIN_SIZE: usize = 1024;

/// `/api/v1/all`'s 200 body, or the part a `Range` header asks for (206), or Go's 416 for a
/// range it cannot serve; with the headers `ServeContent` sets for each.
fn whole_or_range(
    request: &http::HeaderMap,
    modified: std::time::SystemTime,
    body: Vec<u8>,
    headers: &mut Vec<(http::header::HeaderName, String)>,
) -> (u16, Option<&'static str>, Vec<u8>) {
    let header = |name: http::header::HeaderName| request.get(name).and_then(|v| v.to_str().ok());
    let size = body.len() as u64;
    let ranges = match header(http::header::RANGE) {
        Some(range) if byte_ranges::if_range_holds(header(http::header::IF_RANGE), modified) => {
            byte_ranges::parse(range, size)
        }
        _ => Ok(Vec::new()),
    };
    let ranges = match ranges {
        // An empty body ignores a range that misses it, as Go does.
        Err(byte_ranges::RangeError::NoOverlap) if size == 0 => Vec::new(),
        Err(error) => {
            if error == byte_ranges::RangeError::NoOverlap {
                headers.push((http::header::CONTENT_RANGE, format!("bytes */{size}")));
            }
            // Go's error answer: no Last-Modified, plain text, the message and a newline.
            headers.push((http::header::X_CONTENT_TYPE_OPTIONS, "nosniff".into()));
            return (
                416,
                Some("text/plain; charset=utf-8"),
                format!("{error}\n").into_bytes(),
            );
        }
        Ok(ranges) => ranges,
    };
    headers.push((
        http::header::LAST_MODIFIED,
        httpdate::fmt_http_date(modified),
    ));
    headers.push((http::header::ACCEPT_RANGES, "bytes".into()));
    match ranges.as_slice() {
        [one] => {
            headers.push((http::header::CONTENT_RANGE, one.content_range(size)));
            let start = one.start as usize;
            let part = body[start..start + one.length as usize].to_vec();
            (206, Some(JSONL_TYPE), part)
        }
        _ => (200, Some(JSONL_TYPE), body),
    }
}

/// Whether `Accept-Encoding` names gzip with a quality above 0, read as catalogd's gzhttp
/// reads it (the first `gzip` entry counts; no `*`).
fn accepts_gzip(headers: &http::HeaderMap) -> bool {
    let Some(value) = headers
        .get(http::header::ACCEPT_ENCODING)
        .and_then(|v| v.to_str().ok())
    else {
        return false;
    };
    for coding in value.split(',') {
        let mut parts = coding.split(';');
        let name = parts.next().unwrap_or("").trim();
        if !name.eq_ignore_ascii_case("gzip") {
            continue;
        }
        let mut quality = 1.0_f64;
        for parameter in parts {
            let parameter = parameter.trim();
            if parameter.len() >= 2 && parameter[..2].eq_ignore_ascii_case("q=") {
                quality = parameter[2..].parse().unwrap_or(0.0);
            }
        }
        return quality > 0.0;
    }
    false
}

/// `body` gzipped at the default level; `None` if the encoder fails (then it goes as is).
fn gzip(body: &[u8]) -> Option<Vec<u8>> {
    use std::io::Write as _;
    let mut encoder = flate2::write::GzEncoder::new(
        Vec::with_capacity(body.len() / 4),
        flate2::Compression::default(),
    );
    encoder.write_all(body).ok()?;
    encoder.finish().ok()
}

/// The status a conditional request ends with before any body (304, 412), as Go's
/// `http.ServeContent` decides it from `If-Unmodified-Since` and `If-Modified-Since`
/// (dates compared to the second; an unreadable date is ignored).
fn precondition(headers: &http::HeaderMap, modified: std::time::SystemTime) -> Option<u16> {
    let date = |name: http::header::HeaderName| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| httpdate::parse_http_date(v).ok())
    };
    // Whole seconds, as the header carries them.
    let modified = httpdate::parse_http_date(&httpdate::fmt_http_date(modified)).ok()?;
    if let Some(since) = date(http::header::IF_UNMODIFIED_SINCE)
        && modified > since
    {
        return Some(412);
    }
    match date(http::header::IF_MODIFIED_SINCE) {
        Some(since) if modified <= since => Some(304),
        _ => None,
    }
}

/// Answers one GET: (status, content type, body).
pub fn route(
    catalog: &CatalogHandle,
    path: &str,
    query: &str,
) -> (u16, Option<&'static str>, Vec<u8>) {
    const JSONL: Option<&str> = Some(JSONL_TYPE);
    const TEXT: Option<&str> = Some("text/plain");
    match path {
        "/healthz" => (200, TEXT, b"ok\n".to_vec()),
        "/metrics" => (
            200,
            Some("text/plain; version=0.0.4"),
            metrics(catalog).into_bytes(),
        ),
        "/api/v1/all" | "/api/v1/metas" => {
            let Some(metas) = catalog.metas() else {
                return (503, TEXT, b"documents not kept\n".to_vec());
            };
            let filter = if path == "/api/v1/all" {
                MetaQuery::default()
            } else {
                match parse_query(query) {
                    Ok(filter) => filter,
                    Err(error) => return (400, TEXT, format!("{error}\n").into_bytes()),
                }
            };
            match metas.select(&filter) {
                Ok(body) => (200, JSONL, body),
                Err(error) => (500, TEXT, format!("{error}\n").into_bytes()),
            }
        }
        _ => (404, TEXT, b"not found\n".to_vec()),
    }
}

/// A `metas` query the view does not take (answered 400 with this text).
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
enum QueryError {
    /// A `%` not followed by two hex digits.
    #[error("bad escape in {0:?}")]
    BadEscape(String),
    /// A parameter other than `schema`, `package` and `name`.
    #[error("unknown query parameter {0:?}")]
    UnknownParameter(String),
}

/// `schema`, `package` and `name` from a query string; anything else is an error, so that a
/// typo does not silently return the whole catalog.
fn parse_query(query: &str) -> Result<MetaQuery, QueryError> {
    let mut filter = MetaQuery::default();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        let value = percent_decode(value).ok_or_else(|| QueryError::BadEscape(pair.to_string()))?;
        // The first of a repeated parameter counts, as Go's `url.Values.Get` reads it.
        match key {
            "schema" => _ = filter.schema.get_or_insert(value),
            "package" => _ = filter.package.get_or_insert(value),
            "name" => _ = filter.name.get_or_insert(value),
            other => return Err(QueryError::UnknownParameter(other.to_string())),
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
                .to_string()
                .contains("unknown query parameter")
        );
        assert!(parse_query("name=%zz").is_err());
        let q = parse_query("schema=a&schema=b&name=").unwrap();
        assert_eq!(q.schema.as_deref(), Some("a"), "the first counts");
        assert_eq!(q.name.as_deref(), Some(""));
    }

    #[test]
    fn conditional_requests_compare_whole_seconds() {
        use std::time::{Duration, SystemTime};
        let modified = SystemTime::UNIX_EPOCH + Duration::from_millis(1_700_000_000_700);
        let at =
            |secs: u64| httpdate::fmt_http_date(SystemTime::UNIX_EPOCH + Duration::from_secs(secs));
        let headers = |name: http::header::HeaderName, value: String| {
            let mut map = http::HeaderMap::new();
            map.insert(name, value.parse().unwrap());
            map
        };
        let ims = http::header::IF_MODIFIED_SINCE;
        let ius = http::header::IF_UNMODIFIED_SINCE;
        // The date the server gave (the second, without its fraction) is not older.
        assert_eq!(
            precondition(&headers(ims.clone(), at(1_700_000_000)), modified),
            Some(304)
        );
        assert_eq!(
            precondition(&headers(ims.clone(), at(1_699_999_999)), modified),
            None
        );
        assert_eq!(
            precondition(&headers(ims, "not a date".into()), modified),
            None
        );
        assert_eq!(
            precondition(&headers(ius.clone(), at(1_699_999_999)), modified),
            Some(412)
        );
        assert_eq!(
            precondition(&headers(ius, at(1_700_000_000)), modified),
            None
        );
        assert_eq!(precondition(&http::HeaderMap::new(), modified), None);
    }
}
