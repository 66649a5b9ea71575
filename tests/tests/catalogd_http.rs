//! OLM v1's catalogd (operator-controller v1.11.0) side by side with `bundle-tool serve
//! --http-port`: the same catalog, pushed as the image `bundle-tool build --catalog` makes to
//! a loopback registry and served by catalogd from a ClusterCatalog, and served from its
//! folder by our HTTP view. `/api/v1/all` and `/api/v1/metas` are compared as multisets of
//! JSON documents (see docs/conformance.md for why not as bytes), then the HTTP behaviours a
//! client relies on: Content-Type, Last-Modified / If-Modified-Since, HEAD, 404 and 405.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use e2e::catalogd::{Catalogd, CatalogdOptions, HttpAnswer, http_request};
use e2e::registry_server::{RegistryServer, ServerKind};
use e2e::{ControlPlane, OciRegistry, RegistryAuth};
use kube::api::{Api, DeleteParams, DynamicObject};
use kube::core::{ApiResource, GroupVersionKind};
use serde_json::Value;

const START: Duration = Duration::from_secs(60);

/// The server binary of the corpus catalogs' images (Debian's busybox-static, which the test
/// command installs for the real node's pods).
const STAND_IN_SERVER: &str = "/bin/busybox";

fn cluster_catalogs(client: &kube::Client) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk("olm.operatorframework.io", "v1", "ClusterCatalog");
    Api::all_with(client.clone(), &ApiResource::from_gvk(&gvk))
}

/// Every document of a JSON-lines body, each line parsed, counted.
fn documents(body: &[u8]) -> anyhow::Result<BTreeMap<String, usize>> {
    let mut out = BTreeMap::new();
    for line in body.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
        let value: Value = serde_json::from_slice(line)?;
        // serde_json's map is ordered by key: the same document prints the same.
        *out.entry(value.to_string()).or_insert(0) += 1;
    }
    Ok(out)
}

/// Catalogs whose documents differ in a way docs/conformance.md lists: catalogd serves each
/// document as written (re-encoded), our view serves the validated model, which drops an
/// empty `properties: []`. Compared after removing empty `properties` arrays from catalogd's
/// documents; the test fails if one of these stops differing (the table would be stale) or
/// another starts.
const DOCUMENTED: &[&str] = &["e2e-kubebrowser"];

/// `documents` with every empty `properties` array removed.
fn without_empty_properties(docs: &BTreeMap<String, usize>) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for (doc, count) in docs {
        let mut value: Value = serde_json::from_str(doc).unwrap();
        if let Some(object) = value.as_object_mut()
            && object
                .get("properties")
                .is_some_and(|p| p.as_array().is_some_and(Vec::is_empty))
        {
            object.remove("properties");
        }
        *out.entry(value.to_string()).or_insert(0) += count;
    }
    out
}

/// What one side has more of than the other, a few documents each, abbreviated.
fn difference(ours: &BTreeMap<String, usize>, theirs: &BTreeMap<String, usize>) -> String {
    let short = |d: &str| d.chars().take(160).collect::<String>();
    let only = |a: &BTreeMap<String, usize>, b: &BTreeMap<String, usize>| -> Vec<String> {
        a.iter()
            .filter(|(d, n)| b.get(*d) != Some(n))
            .take(3)
            .map(|(d, n)| format!("{n}x {}", short(d)))
            .collect()
    };
    format!(
        "only ours: {:?}; only catalogd's: {:?}",
        only(ours, theirs),
        only(theirs, ours)
    )
}

/// The bytes `[start, end)` a range means in a body of the given size.
type PartOf = fn(usize) -> (usize, usize);

/// A date long before any catalog was written.
fn old_date() -> String {
    "Mon, 01 Jan 2001 00:00:00 GMT".to_string()
}

/// A gzip body decompressed.
fn gunzip(body: &[u8]) -> Vec<u8> {
    use std::io::Read as _;
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(body)
        .read_to_end(&mut out)
        .expect("a gzip body");
    out
}

/// A DNS-1123 name for a ClusterCatalog and an image repository.
fn catalog_name(dir: &Path) -> String {
    let name: String = dir
        .file_name()
        .unwrap()
        .to_string_lossy()
        .to_ascii_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    format!("e2e-{name}")
}

/// Builds the catalog image of `dir` as `bundle-tool build --catalog` does, with `server` as
/// its server binary, and pushes it to `registry`; returns the reference.
async fn push_catalog_image(
    registry: &OciRegistry,
    dir: &Path,
    name: &str,
    server: &Path,
) -> String {
    let built = bundle_tool::image::build_runnable_catalog_image(dir, server).unwrap();
    let reference = format!("{}/e2e/{name}:latest", registry.host());
    let client = bundle_tool::image::RegistryClient::new(
        &bundle_tool::image::Transport {
            plain_http: true,
            ..Default::default()
        },
        Default::default(),
    )
    .expect("a plain-HTTP client");
    client
        .push(
            &bundle_tool::image::parse_reference(&reference).unwrap(),
            &built.image,
        )
        .await
        .unwrap();
    reference
}

/// The shared catalogd, registry and a kube client for one test.
async fn setup() -> (
    std::sync::Arc<ControlPlane>,
    kube::Client,
    OciRegistry,
    Catalogd,
) {
    let plane = ControlPlane::shared().await.unwrap();
    let client = plane.client().await.unwrap();
    let registry = OciRegistry::start(RegistryAuth::Anonymous).await.unwrap();
    let catalogd = Catalogd::start(
        &plane,
        &registry.host(),
        CatalogdOptions {
            metas_handler: true,
        },
    )
    .await
    .unwrap();
    (plane, client, registry, catalogd)
}

/// One catalog's comparison.
struct Agreement {
    name: String,
    documents: usize,
    bytes_equal: bool,
    documents_equal: bool,
    metas_equal: bool,
    /// Equal once catalogd's empty `properties` arrays are removed (all and metas).
    equal_without_empty_properties: bool,
    detail: String,
}

async fn compare_catalog(
    client: &kube::Client,
    registry: &OciRegistry,
    catalogd: &Catalogd,
    dir: &Path,
) -> Agreement {
    let name = catalog_name(dir);
    // catalogd reads only `/configs`: the server layer is a small static stand-in here. With
    // this build's 77 MB debug bundle-tool, compressing it and catalogd unpacking it took
    // about half of the 306 s the 40 catalogs needed.
    let image = push_catalog_image(registry, dir, &name, Path::new(STAND_IN_SERVER)).await;
    let base = catalogd.serve_catalog(client, &name, &image).await.unwrap();
    let http_port = e2e::free_port().unwrap();
    let ours = RegistryServer::start(
        ServerKind::BundleTool,
        dir,
        &["--http-port", &http_port.to_string()],
        START,
    )
    .await
    .unwrap();
    let ours_address = format!("127.0.0.1:{http_port}");
    let theirs_all = catalogd
        .request("GET", &format!("{base}/api/v1/all"), &[])
        .await
        .unwrap();
    let ours_all = http_request(&ours_address, "GET", "/api/v1/all", &[])
        .await
        .unwrap();
    assert_eq!((theirs_all.status, ours_all.status), (200, 200), "{name}");
    let (theirs_docs, ours_docs) = (
        documents(&theirs_all.body).unwrap(),
        documents(&ours_all.body).unwrap(),
    );
    let mut detail = String::new();
    if theirs_docs != ours_docs {
        detail = format!("/api/v1/all: {}", difference(&ours_docs, &theirs_docs));
    }
    // /api/v1/metas: a schema, a schema within a package, a package, one document by name.
    let mut queries = vec!["schema=olm.package".to_string()];
    for line in ours_docs.keys() {
        let doc: Value = serde_json::from_str(line).unwrap();
        if doc["schema"] == "olm.channel" {
            let package = doc["package"].as_str().unwrap();
            queries.push(format!("schema=olm.bundle&package={package}"));
            // A package's documents: catalogd files a document under its `package` key, which
            // a package document does not have.
            queries.push(format!("package={package}"));
            queries.push(format!("schema=olm.package&package={package}"));
            // An empty value is no filter.
            queries.push(format!("schema=olm.channel&package={package}&name="));
            queries.push(format!(
                "schema=olm.channel&package={package}&name={}",
                doc["name"].as_str().unwrap()
            ));
            break;
        }
    }
    queries.push("package=no-such-package".into());
    let mut metas_equal = true;
    let mut equal_without_empty_properties = without_empty_properties(&theirs_docs) == ours_docs;
    for query in &queries {
        let theirs = catalogd
            .request("GET", &format!("{base}/api/v1/metas?{query}"), &[])
            .await
            .unwrap();
        let mine = http_request(&ours_address, "GET", &format!("/api/v1/metas?{query}"), &[])
            .await
            .unwrap();
        let (t, m) = (
            documents(&theirs.body).unwrap(),
            documents(&mine.body).unwrap(),
        );
        if theirs.status != mine.status || without_empty_properties(&t) != m {
            equal_without_empty_properties = false;
        }
        if theirs.status != mine.status || t != m {
            metas_equal = false;
            detail.push_str(&format!(
                " metas?{query}: status {} vs ours {}, {}",
                theirs.status,
                mine.status,
                difference(&m, &t)
            ));
        }
    }
    ours.process().stop(Duration::from_secs(5));
    cluster_catalogs(client)
        .delete(&name, &DeleteParams::default())
        .await
        .unwrap();
    Agreement {
        name,
        documents: theirs_docs.values().sum(),
        bytes_equal: theirs_all.body == ours_all.body,
        documents_equal: theirs_docs == ours_docs,
        metas_equal,
        equal_without_empty_properties,
        detail,
    }
}

fn repository_catalog() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../catalog")
}

#[tokio::test(flavor = "multi_thread")]
async fn catalogd_and_our_http_view_agree_on_the_repository_catalog_and_the_corpus() {
    let started = Instant::now();
    let (_plane, client, registry, catalogd) = setup().await;
    eprintln!("catalogd ready after {:?}", started.elapsed());

    // HTTP behaviours, on the repository's catalog.
    let dir = repository_catalog();
    let name = catalog_name(&dir);
    let image = push_catalog_image(&registry, &dir, &name, &e2e::bundle_tool_binary()).await;
    let base = catalogd
        .serve_catalog(&client, &name, &image)
        .await
        .unwrap();
    assert!(
        base.starts_with(&format!("https://{}/catalogs/", catalogd.catalog_address())),
        "{base}"
    );
    let object = cluster_catalogs(&client).get(&name).await.unwrap();
    assert_eq!(
        object.metadata.labels.unwrap_or_default()["olm.operatorframework.io/metadata.name"],
        name,
        "catalogd's mutating webhook labels the ClusterCatalog"
    );
    let http_port = e2e::free_port().unwrap();
    let ours = RegistryServer::start(
        ServerKind::BundleTool,
        &dir,
        &["--http-port", &http_port.to_string()],
        START,
    )
    .await
    .unwrap();
    let ours_address = format!("127.0.0.1:{http_port}");
    let theirs = |method: &'static str, path: String, headers: Vec<(&'static str, String)>| {
        let url = format!("{base}{path}");
        let catalogd = &catalogd;
        async move {
            let headers: Vec<(&str, &str)> =
                headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
            catalogd.request(method, &url, &headers).await.unwrap()
        }
    };
    let mine = |method: &'static str, path: String, headers: Vec<(&'static str, String)>| {
        let address = ours_address.clone();
        async move {
            let headers: Vec<(&str, &str)> =
                headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
            http_request(&address, method, &path, &headers)
                .await
                .unwrap()
        }
    };
    let both = |what: &str, t: &HttpAnswer, m: &HttpAnswer| {
        eprintln!(
            "{what}: catalogd {} {:?} / ours {} {:?}",
            t.status, t.headers, m.status, m.headers
        );
    };

    let t = theirs("GET", "/api/v1/all".into(), vec![]).await;
    let m = mine("GET", "/api/v1/all".into(), vec![]).await;
    both("GET /api/v1/all", &t, &m);
    assert_eq!((t.status, m.status), (200, 200));
    assert_eq!(t.header("content-type"), Some("application/jsonl"));
    assert_eq!(m.header("content-type"), t.header("content-type"));
    assert_eq!(
        documents(&m.body).unwrap(),
        documents(&t.body).unwrap(),
        "the repository catalog's documents"
    );
    for answer in [&t, &m] {
        assert_eq!(
            answer.header("content-length"),
            Some(answer.body.len().to_string().as_str())
        );
    }
    let their_modified = t.header("last-modified").expect("catalogd's Last-Modified");
    let my_modified = m.header("last-modified").expect("our Last-Modified");

    // A conditional GET with the date each server gave: 304 without a body.
    let t304 = theirs(
        "GET",
        "/api/v1/all".into(),
        vec![("If-Modified-Since", their_modified.to_string())],
    )
    .await;
    let m304 = mine(
        "GET",
        "/api/v1/all".into(),
        vec![("If-Modified-Since", my_modified.to_string())],
    )
    .await;
    both("GET If-Modified-Since", &t304, &m304);
    assert_eq!((t304.status, m304.status), (304, 304));
    assert!(t304.body.is_empty() && m304.body.is_empty());
    // An older date: the whole body.
    let old = old_date();
    let t_old = theirs(
        "GET",
        "/api/v1/all".into(),
        vec![("If-Modified-Since", old.clone())],
    )
    .await;
    let m_old = mine(
        "GET",
        "/api/v1/all".into(),
        vec![("If-Modified-Since", old)],
    )
    .await;
    assert_eq!((t_old.status, m_old.status), (200, 200));
    assert_eq!(m_old.body, m.body);

    // HEAD: the GET's headers, no body.
    let t_head = theirs("HEAD", "/api/v1/all".into(), vec![]).await;
    let m_head = mine("HEAD", "/api/v1/all".into(), vec![]).await;
    both("HEAD /api/v1/all", &t_head, &m_head);
    assert_eq!((t_head.status, m_head.status), (200, 200));
    assert!(t_head.body.is_empty() && m_head.body.is_empty());
    assert_eq!(m_head.header("content-type"), Some("application/jsonl"));
    assert_eq!(
        m_head.header("content-length"),
        Some(m.body.len().to_string().as_str())
    );

    // metas: the same filters; an unknown parameter is refused by both; HEAD.
    let t_metas = theirs("GET", "/api/v1/metas?schema=olm.package".into(), vec![]).await;
    let m_metas = mine("GET", "/api/v1/metas?schema=olm.package".into(), vec![]).await;
    both("GET /api/v1/metas", &t_metas, &m_metas);
    assert_eq!(
        m_metas.header("content-type"),
        t_metas.header("content-type")
    );
    assert!(m_metas.header("last-modified").is_some());
    assert_eq!(
        documents(&m_metas.body).unwrap(),
        documents(&t_metas.body).unwrap()
    );
    let t_bad = theirs("GET", "/api/v1/metas?schemas=x".into(), vec![]).await;
    let m_bad = mine("GET", "/api/v1/metas?schemas=x".into(), vec![]).await;
    assert_eq!((t_bad.status, m_bad.status), (400, 400));
    let t_head = theirs("HEAD", "/api/v1/metas?schema=olm.package".into(), vec![]).await;
    let m_head = mine("HEAD", "/api/v1/metas?schema=olm.package".into(), vec![]).await;
    assert_eq!((t_head.status, m_head.status), (200, 200));
    assert!(m_head.body.is_empty());

    // An unknown path, and a method neither serves.
    let t404 = theirs("GET", "/api/v1/nothing".into(), vec![]).await;
    let m404 = mine("GET", "/api/v1/nothing".into(), vec![]).await;
    assert_eq!((t404.status, m404.status), (404, 404));
    let t405 = theirs("POST", "/api/v1/all".into(), vec![]).await;
    let m405 = mine("POST", "/api/v1/all".into(), vec![]).await;
    both("POST /api/v1/all", &t405, &m405);
    assert_eq!((t405.status, m405.status), (405, 405));
    for answer in [&t, &m, &t404, &m404] {
        assert_eq!(
            answer.header("vary"),
            Some("Accept-Encoding"),
            "catalogd's gzip wrapper varies every answer on Accept-Encoding"
        );
    }

    // Range on /api/v1/all, as Go's ServeContent answers it. The two bodies differ in bytes
    // (documents compared above), so each part is checked against its own server's body.
    assert_eq!(t.header("accept-ranges"), Some("bytes"));
    assert_eq!(m.header("accept-ranges"), Some("bytes"));
    let ranged = |answer: &HttpAnswer, whole: &HttpAnswer, start: usize, end: usize| {
        let size = whole.body.len();
        assert_eq!(answer.status, 206, "{:?}", answer.headers);
        assert_eq!(
            answer.header("content-range"),
            Some(format!("bytes {start}-{}/{size}", end - 1).as_str())
        );
        assert_eq!(answer.body, whole.body[start..end]);
    };
    // Each range with the part it means of a body of `size` bytes.
    let parts: [(&str, PartOf); 4] = [
        ("bytes=0-99", |_| (0, 100)),
        ("bytes=-50", |size| (size - 50, size)),
        ("bytes=100-", |size| (100, size)),
        ("bytes=10-999999999", |size| (10, size)),
    ];
    for (range, part) in parts {
        let header = vec![("Range", range.to_string())];
        let tr = theirs("GET", "/api/v1/all".into(), header.clone()).await;
        let mr = mine("GET", "/api/v1/all".into(), header).await;
        both(range, &tr, &mr);
        let (start, end) = part(t.body.len());
        ranged(&tr, &t, start, end);
        let (start, end) = part(m.body.len());
        ranged(&mr, &m, start, end);
    }
    for (range, body) in [
        ("bytes=999999999-", "invalid range: failed to overlap\n"),
        ("bytes=9-5", "invalid range\n"),
        ("pages=1", "invalid range\n"),
    ] {
        let header = vec![("Range", range.to_string())];
        let tr = theirs("GET", "/api/v1/all".into(), header.clone()).await;
        let mr = mine("GET", "/api/v1/all".into(), header).await;
        both(range, &tr, &mr);
        assert_eq!((tr.status, mr.status), (416, 416), "{range}");
        assert_eq!(
            (tr.body.as_slice(), mr.body.as_slice()),
            (body.as_bytes(), body.as_bytes())
        );
        assert_eq!(mr.header("content-type"), tr.header("content-type"));
        assert_eq!(mr.header("last-modified"), None);
        assert_eq!(tr.header("last-modified"), None);
        let unsatisfied = |a: &HttpAnswer, size: usize| {
            a.header("content-range") == Some(format!("bytes */{size}").as_str())
        };
        if range.starts_with("bytes=999") {
            assert!(unsatisfied(&tr, t.body.len()) && unsatisfied(&mr, m.body.len()));
        } else {
            assert_eq!(
                (tr.header("content-range"), mr.header("content-range")),
                (None, None)
            );
        }
    }
    // If-Range: the server's own date keeps the range, another date gets the whole body.
    for holds in [true, false] {
        let date = |own: &str| if holds { own.to_string() } else { old_date() };
        let tr = theirs(
            "GET",
            "/api/v1/all".into(),
            vec![
                ("Range", "bytes=0-9".into()),
                ("If-Range", date(their_modified)),
            ],
        )
        .await;
        let mr = mine(
            "GET",
            "/api/v1/all".into(),
            vec![
                ("Range", "bytes=0-9".into()),
                ("If-Range", date(my_modified)),
            ],
        )
        .await;
        let want = if holds { 206 } else { 200 };
        assert_eq!(
            (tr.status, mr.status),
            (want, want),
            "If-Range holds: {holds}"
        );
    }

    // gzip when asked: the same documents once decompressed; no Accept-Ranges then. An answer
    // under 1 KiB and a HEAD go as they are.
    let gzip = vec![("Accept-Encoding", "gzip".to_string())];
    let tg = theirs("GET", "/api/v1/all".into(), gzip.clone()).await;
    let mg = mine("GET", "/api/v1/all".into(), gzip.clone()).await;
    both("GET gzip", &tg, &mg);
    for (answer, whole) in [(&tg, &t), (&mg, &m)] {
        assert_eq!(answer.status, 200);
        assert_eq!(answer.header("content-encoding"), Some("gzip"));
        assert_eq!(answer.header("accept-ranges"), None);
        assert_eq!(gunzip(&answer.body), whole.body);
    }
    let tsmall = theirs(
        "GET",
        "/api/v1/metas?package=no-such-package".into(),
        gzip.clone(),
    )
    .await;
    let msmall = mine(
        "GET",
        "/api/v1/metas?package=no-such-package".into(),
        gzip.clone(),
    )
    .await;
    assert_eq!(
        (
            tsmall.header("content-encoding"),
            msmall.header("content-encoding")
        ),
        (None, None)
    );
    let thead = theirs("HEAD", "/api/v1/all".into(), gzip.clone()).await;
    let mhead = mine("HEAD", "/api/v1/all".into(), gzip.clone()).await;
    assert_eq!(
        (
            thead.header("content-encoding"),
            mhead.header("content-encoding")
        ),
        (None, None)
    );
    let no_gzip = vec![("Accept-Encoding", "gzip;q=0, identity".to_string())];
    let tplain = theirs("GET", "/api/v1/all".into(), no_gzip.clone()).await;
    let mplain = mine("GET", "/api/v1/all".into(), no_gzip).await;
    assert_eq!(
        (
            tplain.header("content-encoding"),
            mplain.header("content-encoding")
        ),
        (None, None)
    );
    ours.process().stop(Duration::from_secs(5));
    cluster_catalogs(&client)
        .delete(&name, &DeleteParams::default())
        .await
        .unwrap();
    eprintln!(
        "repository catalog and HTTP behaviours done after {:?}",
        started.elapsed()
    );

    // Every corpus catalog, one ClusterCatalog after the other.
    let mut rows = Vec::new();
    for dir in std::iter::once(repository_catalog()).chain(e2e::corpus::catalogs()) {
        let one = Instant::now();
        let row = compare_catalog(&client, &registry, &catalogd, &dir).await;
        eprintln!(
            "{:<48} {:>5} documents  bytes equal: {:<5}  documents equal: {:<5}  metas equal: {:<5} ({:?}) {}",
            row.name,
            row.documents,
            row.bytes_equal,
            row.documents_equal,
            row.metas_equal,
            one.elapsed(),
            row.detail
        );
        rows.push(row);
    }
    let differing: Vec<&Agreement> = rows
        .iter()
        .filter(|r| !r.documents_equal || !r.metas_equal)
        .collect();
    eprintln!(
        "{} catalogs, {} agree as documents, {} byte for byte; total {:?}",
        rows.len(),
        rows.len() - differing.len(),
        rows.iter().filter(|r| r.bytes_equal).count(),
        started.elapsed()
    );
    let unexplained: Vec<String> = differing
        .iter()
        .filter(|r| !(DOCUMENTED.contains(&r.name.as_str()) && r.equal_without_empty_properties))
        .map(|r| format!("{}: {}", r.name, r.detail))
        .collect();
    assert!(
        unexplained.is_empty(),
        "catalogs where catalogd and our HTTP view differ: {unexplained:?}"
    );
    let names: Vec<&str> = differing.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(
        names, DOCUMENTED,
        "the documented differences (docs/conformance.md) are exactly the ones seen"
    );
}
