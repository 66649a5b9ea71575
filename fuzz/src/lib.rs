//! The checks of the fuzz targets, one function a target (`fuzz_targets/<name>.rs` calls
//! `<name>`). A check panics when the property it states does not hold; bad input must
//! otherwise give an error, never a panic. Plain Rust without libFuzzer: the regression
//! test `bundle-tool/tests/fuzz_regressions.rs` includes this file and runs the same checks
//! on the committed inputs (`fuzz/regressions/`, `fuzz/seeds/`).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use bundle_tool::catalog::bundle_source::BundleSources;
use bundle_tool::catalog::declcfg::{
    DeclarativeConfig, add_document, load_generic, load_json_one_pass, load_json_probing, load_str,
    to_json, to_yaml,
};
use bundle_tool::catalog::template::semver;
use bundle_tool::image::{Blob, parse_reference, unpack_layers};
use bundle_tool::manifest::yaml::to_ordered_json;
use bundle_tool::manifest::{KubeObject, read_stream, read_stream_generic};
use bundle_tool::serve::api;
use bundle_tool::serve::direct_bundle::message_of_frame;
use bundle_tool::serve::encoded::EncodedBundle;
use bundle_tool::validate::{check_crd, check_csv, line_of};
use bundle_tool::version_range::{VersionRange, parse_version, parse_version_tolerant};
use bytes::Bytes;
use prost::Message;
use serde_json::{Value, json};

/// The FBC loader on one file, JSON stream or YAML documents: `load_str` (the fast paths
/// first: typed JSON readers, the YAML transcoder) must give what the generic loader
/// (serde_json / serde-saphyr into `Value`s, then by schema) gives, error for error; a loaded
/// catalog must write as JSON and YAML without panicking, and the JSON must load back to a
/// catalog that writes the same JSON.
pub fn fbc_load(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let path = Path::new("catalog.yaml");
    let mut fast = DeclarativeConfig::default();
    let fast_result = load_str(path, text, &mut fast);
    let mut generic = DeclarativeConfig::default();
    let generic_result = load_generic(path, text, &mut generic);
    match (&fast_result, &generic_result) {
        (Ok(()), Ok(())) => assert!(
            fast == generic,
            "load_str and the generic loader differ on {text:?}:\n{fast:?}\n{generic:?}"
        ),
        (Err(a), Err(b)) => assert_eq!(a, b, "different errors on {text:?}"),
        _ => {
            panic!("load_str {fast_result:?} but the generic loader {generic_result:?} on {text:?}")
        }
    }
    if fast_result.is_ok() {
        let json = to_json(&fast);
        let _ = to_yaml(&fast);
        let mut again = DeclarativeConfig::default();
        load_str(Path::new("catalog.json"), &json, &mut again)
            .unwrap_or_else(|e| panic!("written JSON does not load: {e}\n{json}"));
        // The writer puts documents in opm's order, so the catalog read back is compared
        // by what it writes.
        let again = to_json(&again);
        assert!(
            again == json,
            "written JSON loads differently:\n{json}\n{again}"
        );
    }
}

/// The fast YAML→JSON transcoder (`manifest::yaml`) against serde-saphyr
/// (`manifest::read_stream_generic`): when the transcoder takes a text, serde-saphyr must
/// read it too and give the same documents; when serde-saphyr refuses it, the transcoder must
/// have declined. `manifest::read_stream` (fast path first) must equal the generic reader,
/// errors included.
pub fn yaml_differential(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let path = Path::new("doc.yaml");
    let generic = read_stream_generic(path, text);
    match (&generic, read_stream(path, text)) {
        (Ok(generic), Ok(fast)) => {
            assert!(
                &fast == generic,
                "read_stream differs on {text:?}:\n{fast:?}\n{generic:?}"
            )
        }
        (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string(), "errors differ on {text:?}"),
        (generic, fast) => panic!("generic {generic:?} but fast {fast:?} on {text:?}"),
    }
    let Some((json, _sorted)) = to_ordered_json(text) else {
        return;
    };
    let fast: Vec<Value> = serde_json::Deserializer::from_str(&json)
        .into_iter::<Value>()
        .map(|v| v.unwrap_or_else(|e| panic!("the transcoder wrote bad JSON ({e}): {json:?}")))
        .collect();
    let reference: Vec<Value> = match generic {
        Ok(documents) => documents.into_iter().map(|d| d.value).collect(),
        Err(e) => {
            panic!("the transcoder took {text:?} (as {json:?}) but serde-saphyr refuses it: {e}")
        }
    };
    assert!(
        fast == reference,
        "documents differ on {text:?}:\nfast      {fast:?}\nreference {reference:?}"
    );
}

/// The fast JSON catalog paths against the generic one on a JSON stream: the one-pass reader
/// and the probing reader each either decline (adding nothing) or give exactly what the
/// generic loader (`Value`s, then by schema) gives; a stream the generic loader refuses must
/// be declined by both.
pub fn json_differential(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    // The loader reads a file as JSON only when it starts with `{`; otherwise it is YAML.
    if !text.trim_start().starts_with('{') {
        return;
    }
    let mut generic = DeclarativeConfig::default();
    let generic = load_generic(Path::new("catalog.json"), text, &mut generic).map(|()| generic);
    for (name, read) in [
        (
            "one-pass",
            load_json_one_pass as fn(&str, &mut DeclarativeConfig) -> bool,
        ),
        ("probing", load_json_probing),
    ] {
        let mut fast = DeclarativeConfig::default();
        if !read(text, &mut fast) {
            assert!(
                fast == DeclarativeConfig::default(),
                "{name} declined {text:?} but added {fast:?}"
            );
            continue;
        }
        match &generic {
            Ok(generic) => assert!(
                &fast == generic,
                "{name} and the generic loader differ on {text:?}:\n{fast:?}\n{generic:?}"
            ),
            Err(e) => panic!("{name} took {text:?} but the generic loader refuses it: {e}"),
        }
    }
}

/// The manifest reader and the CSV/CRD decoders of the bundle loader: a stream of Kubernetes
/// objects read with file lines (the fast YAML path first must equal serde-saphyr's reading),
/// each document viewed as an object, and every CSV or CRD decoded into operator-framework's
/// Go types, with the line of the failing field looked up in the text. Bad input is an
/// error, never a panic.
pub fn manifest_csv(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let path = Path::new("manifests/operator.clusterserviceversion.yaml");
    let documents = match (read_stream(path, text), read_stream_generic(path, text)) {
        (Ok(fast), Ok(generic)) => {
            assert!(
                fast == generic,
                "read_stream differs from the generic reader on {text:?}"
            );
            fast
        }
        (Err(_), Err(_)) => return,
        (fast, generic) => panic!("read_stream {fast:?} but generic {generic:?} on {text:?}"),
    };
    for document in documents {
        assert!(document.location.line >= 1, "line 0 in {text:?}");
        let value = document.value.clone();
        let Ok(object) = KubeObject::from_document(document) else {
            continue;
        };
        let _ = object.group();
        let checked = match object.id.kind.as_str() {
            "CustomResourceDefinition" => check_crd(&value),
            _ => check_csv(&value),
        };
        if let Err(error) = checked {
            let _ = line_of(text, &error.path);
        }
    }
}

/// `olm.skipRange` (blang/semver ranges) and version parsing. The input is a range, a
/// newline, and a version. Besides never panicking: a strictly parsed version prints and
/// parses back to itself, reads the same leniently, and `>=V` contains it while `<V` does
/// not.
pub fn version_range(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (range_text, version_text) = text.split_once('\n').unwrap_or((text, text));
    let range = VersionRange::parse(range_text);
    if let Ok(range) = &range {
        let _ = range.to_string();
    }
    let _ = parse_version_tolerant(version_text);
    let Ok(version) = parse_version(version_text) else {
        return;
    };
    if let Ok(range) = &range {
        let _ = range.contains(&version);
    }
    let printed = version.to_string();
    assert_eq!(
        parse_version(&printed).as_ref(),
        Ok(&version),
        "{version_text:?} printed as {printed:?}"
    );
    assert_eq!(
        parse_version_tolerant(version_text).as_ref(),
        Ok(&version),
        "{version_text:?} read leniently"
    );
    // blang reads an `x` anywhere in a range's version as a wildcard (`1.0.0-rc.x1` becomes
    // `1.0.0-rc.01`), as opm and OLM do, so only versions without one name themselves.
    if printed.contains(['x', 'X', '*']) {
        return;
    }
    let at_least =
        VersionRange::parse(&format!(">={printed}")).unwrap_or_else(|e| panic!(">={printed}: {e}"));
    assert!(
        at_least.contains(&version),
        ">={printed} does not contain it"
    );
    let below =
        VersionRange::parse(&format!("<{printed}")).unwrap_or_else(|e| panic!("<{printed}: {e}"));
    assert!(!below.contains(&version), "<{printed} contains it");
}

/// Image references: our grammar checker (`image_ref::check`) and splitter
/// (`image::parse_reference`) against oci-client's regex-based parser, which they replace.
/// Every reference we accept, oci-client must accept with the same registry, repository,
/// tag and digest (oci-client accepts more: it counts the 255-character limit on the path
/// alone, opm's parser on the normalized name).
pub fn image_ref(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let checked = bundle_tool::image_ref::check(text);
    let ours = parse_reference(text);
    assert_eq!(
        checked.is_ok(),
        ours.is_ok(),
        "check and parse_reference disagree on {text:?}"
    );
    let Ok(ours) = ours else {
        return;
    };
    let theirs: oci_client::Reference = text
        .parse()
        .unwrap_or_else(|e| panic!("we accept {text:?}, oci-client refuses it: {e}"));
    assert_eq!(ours.registry(), theirs.registry(), "registry of {text:?}");
    assert_eq!(
        ours.repository(),
        theirs.repository(),
        "repository of {text:?}"
    );
    assert_eq!(ours.tag(), theirs.tag(), "tag of {text:?}");
    assert_eq!(ours.digest(), theirs.digest(), "digest of {text:?}");
    assert_eq!(ours.whole(), theirs.whole(), "whole of {text:?}");
    // What we print parses back to the same reference: the length limit counts the name
    // as printed, `docker.io/` included (finding 3 of docs/testing.md).
    let again = parse_reference(&ours.whole())
        .unwrap_or_else(|e| panic!("{text:?} printed as {:?}, refused: {e}", ours.whole()));
    assert_eq!(again.whole(), ours.whole(), "{text:?}");
}

/// `unpack.rs`'s `MAX_TOTAL`.
const MAX_TOTAL: u64 = 64 * 1024 * 1024;

/// Every entry below `dir`, with the total size of its regular files.
fn walk(dir: &Path, out: &mut Vec<PathBuf>, total: &mut u64) {
    for entry in std::fs::read_dir(dir).expect("read_dir") {
        let entry = entry.expect("entry");
        let kind = entry.file_type().expect("file type");
        let path = entry.path();
        assert!(!kind.is_symlink(), "a link was made: {}", path.display());
        if kind.is_dir() {
            walk(&path, out, total);
        } else {
            assert!(kind.is_file(), "not a regular file: {}", path.display());
            *total += entry.metadata().expect("metadata").len();
            out.push(path);
        }
    }
}

/// Unpacking an image's layers (`image::unpack_layers`): the input is a tar (gzipped here, as
/// a layer is) or already a gzip stream, unpacked as both layers of an image, so that its
/// whiteouts (`.wh.<name>`, `.wh..wh..opq`) meet what its first copy wrote. Whatever it
/// holds, nothing may be written outside the target folder, nothing but folders and regular
/// files may be made, the files written must be the ones reported, and the unpacked total may
/// not pass the library's 64 MiB limit.
pub fn tar_unpack(data: &[u8]) {
    let layer = if data.starts_with(&[0x1f, 0x8b]) {
        data.to_vec()
    } else {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(data).expect("gzip");
        gz.finish().expect("gzip")
    };
    // The layer goes into `base/out`; `base` has nothing else, so anything escaping `out`
    // through `..` shows up beside it.
    let base = tempfile::tempdir().expect("temporary folder");
    let out = base.path().join("out");
    std::fs::create_dir(&out).expect("mkdir");
    let layer = Blob::new(layer);
    let result = unpack_layers(&[layer.clone(), layer], &out, None);
    let beside: Vec<_> = std::fs::read_dir(base.path())
        .expect("read_dir")
        .map(|e| e.expect("entry").file_name())
        .collect();
    assert_eq!(beside, ["out"], "written beside the target folder");
    let mut files = Vec::new();
    let mut total = 0;
    walk(&out, &mut files, &mut total);
    assert!(total <= MAX_TOTAL, "{total} bytes unpacked");
    if let Ok(written) = result {
        for path in &written {
            assert!(
                path.is_relative(),
                "reported absolute path {}",
                path.display()
            );
            let file = out.join(path);
            assert!(
                file.starts_with(&out) && file.is_file(),
                "reported {} not in the folder",
                path.display()
            );
        }
        let mut reported: Vec<_> = written.iter().map(|p| out.join(p)).collect();
        reported.sort();
        reported.dedup();
        files.sort();
        // A path given twice is written twice; each file on disk was reported.
        for file in &files {
            assert!(
                reported
                    .iter()
                    .any(|r| r.components().eq(file.components())),
                "{} written but not reported",
                file.display()
            );
        }
    }
}

fn round_trip<M: Message + Default + PartialEq + std::fmt::Debug>(message: &[u8]) {
    let Ok(decoded) = M::decode(message) else {
        return;
    };
    let again = M::decode(decoded.encode_to_vec().as_slice())
        .unwrap_or_else(|e| panic!("re-encoded {decoded:?} does not decode: {e}"));
    assert!(again == decoded, "{decoded:?} round-trips as {again:?}");
}

fn every_request(message: &[u8]) {
    round_trip::<api::ListPackageRequest>(message);
    round_trip::<api::ListBundlesRequest>(message);
    round_trip::<api::GetPackageRequest>(message);
    round_trip::<api::GetBundleRequest>(message);
    round_trip::<api::GetBundleInChannelRequest>(message);
    round_trip::<api::GetAllReplacementsRequest>(message);
    round_trip::<api::GetReplacementRequest>(message);
    round_trip::<api::GetAllProvidersRequest>(message);
    round_trip::<api::GetLatestProvidersRequest>(message);
    round_trip::<api::GetDefaultProviderRequest>(message);
    // What a client decodes from the server's answers.
    round_trip::<api::Bundle>(message);
    round_trip::<api::Package>(message);
    if let Ok(bundle) = EncodedBundle::decode(message) {
        assert!(
            bundle.bytes().is_empty(),
            "EncodedBundle kept decoded bytes"
        );
    }
}

/// Decoding registry gRPC requests as the server does: the 5-byte length-prefixed frame
/// (`serve::direct_bundle::message_of_frame`), then the message as every request type of
/// `api.Registry` (prost). Both the framed input and the bare input are decoded. A message
/// that decodes re-encodes to one that decodes to the same request; `EncodedBundle` (only ever
/// sent) keeps nothing it decodes.
pub fn grpc_request(data: &[u8]) {
    match message_of_frame(Bytes::copy_from_slice(data)) {
        Ok(message) => {
            assert_eq!(message.len() + 5, data.len(), "frame length");
            every_request(&message);
        }
        // Every framing error is gRPC INTERNAL, as in tonic's own decoder.
        Err(status) => assert_eq!(status.code(), tonic::Code::Internal, "{status:?}"),
    }
    every_request(data);
}

/// Versions of the known bundles `quay.io/fuzz/p:<version>` (package `p`), and one of
/// another package, `quay.io/fuzz/q:1.0.0`.
const VERSIONS: &[&str] = &[
    "0.0.1",
    "0.1.0",
    "0.1.1",
    "0.2.0-rc.1",
    "0.2.0",
    "1.0.0",
    "1.0.0+build.1",
    "1.1.0",
    "1.1.5",
    "2.0.0-alpha",
    "2.0.0",
    "10.0.0",
];

fn sources() -> &'static (BundleSources, Vec<String>) {
    static SOURCES: OnceLock<(BundleSources, Vec<String>)> = OnceLock::new();
    SOURCES.get_or_init(|| {
        let mut config = DeclarativeConfig::default();
        let mut images = Vec::new();
        let bundles = VERSIONS.iter().map(|v| ("p", *v)).chain([("q", "1.0.0")]);
        for (package, version) in bundles {
            let image = format!("quay.io/fuzz/{package}:{version}");
            let document = json!({
                "schema": "olm.bundle",
                "name": format!("{package}.v{version}"),
                "package": package,
                "image": image,
                "properties": [
                    {"type": "olm.package", "value": {"packageName": package, "version": version}}
                ],
            });
            add_document(document, &mut config).expect("a known bundle");
            images.push(image);
        }
        let mut sources = BundleSources::new(Default::default());
        for bundle in config.bundles {
            sources.add_rendered(bundle);
        }
        (sources, images)
    })
}

/// The `olm.semver` template: a YAML or JSON text read as `catalog template` reads it (the
/// first document), parsed strictly, and — when every image it names is one of the bundles
/// below, so nothing is pulled — rendered into a catalog, which must then write as JSON and
/// load back to a catalog that writes the same JSON.
pub fn semver_template(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(documents) = read_stream(Path::new("template.yaml"), text) else {
        return;
    };
    let document = documents
        .into_iter()
        .next()
        .map(|d| d.value)
        .unwrap_or(Value::Null);
    let Ok(template) = semver::parse(&document) else {
        return;
    };
    let (sources, known) = sources();
    for version in VERSIONS {
        let _ = template.channels_for(&semver_version(version));
    }
    if !template
        .all_images()
        .iter()
        .all(|image| known.iter().any(|k| k == image))
    {
        return;
    }
    let Ok(config) = semver::render(&template, sources) else {
        return;
    };
    let written = to_json(&config);
    let mut again = DeclarativeConfig::default();
    load_str(Path::new("catalog.json"), &written, &mut again)
        .unwrap_or_else(|e| panic!("rendered catalog does not load: {e}\n{written}"));
    // Written in opm's order: compared by what the catalog read back writes.
    let again = to_json(&again);
    assert!(
        again == written,
        "rendered catalog loads differently:\n{written}\n{again}"
    );
}

fn semver_version(text: &str) -> ::semver::Version {
    bundle_tool::version_range::parse_version(text).expect("a known version")
}
