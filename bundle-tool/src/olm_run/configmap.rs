//! The catalog served from ConfigMaps (`run --server-image IMAGE`), for a cluster whose nodes
//! can pull from no registry `run` can push to: the same one-package catalog, validated the
//! same way, goes into ConfigMaps instead of an image, and the server pod runs the image the
//! user names with those ConfigMaps mounted where it reads the catalog. Nothing is pushed.
//!
//! - **The server image** must hold `catalog-server` at [`SERVER_PATH`] (and the
//!   `grpc_health_probe` link beside it), as every catalog image `bundle-tool` builds does. Its
//!   own `/configs` is hidden by the volume, so any such image serves this catalog. The pod
//!   names the program, so the image's entrypoint does not matter.
//! - **The size limit**: the API server refuses a ConfigMap whose data passes 1 MiB. The
//!   catalog is split at document boundaries into parts of at most [`PART_LIMIT`] bytes, one
//!   ConfigMap each, all projected into one folder. No compression, no init container, no
//!   shell: the server reads the files as they are. A single document larger than a part (a
//!   bundle whose manifests inline pass about 1 MB) cannot be split and is refused, naming
//!   its size, before anything is applied.
//! - **The volume's layout**: the kubelet writes a projected volume's files into a
//!   timestamped folder, links `..data` to it, and links each file at the top to
//!   `..data/<file>`. The catalog loader walks every entry (as opm does); it would read the
//!   timestamped copies a second time and take the `..data` link for a file. The first
//!   ConfigMap therefore carries an `.indexignore` ([`IGNORE_RULES`]) that leaves only the
//!   top-level files.
//! - **Names**: the revision is the first 10 hex digits of the SHA-256 of the server image
//!   and the catalog, so the same bundle and image give the same ConfigMaps, pod and Service
//!   (a second run changes nothing), and a new catalog gets a new server beside the old one,
//!   as a new catalog image does.

use serde::Deserialize;
use serde_json::{Value, json};

use super::RunError;
use super::catalog::{PushedCatalog, RunBundle};
use super::cluster::{Cluster, Kind};
use super::objects::{
    self, CATALOG_CONFIGMAPS_ANNOTATION, CATALOG_IMAGE_ANNOTATION, CATALOG_REVISION_LABEL, Names,
    SERVER_IMAGE_ANNOTATION,
};
use crate::catalog::declcfg::{self, DeclarativeConfig};
use crate::image::SERVER_PATH;

/// The most bytes of catalog one ConfigMap holds. The API server's limit is 1 MiB
/// (1,048,576 bytes) of data per ConfigMap; the margin covers the ignore file the first one
/// also holds.
pub const PART_LIMIT: usize = 1_000_000;

/// The key of the catalog part in each ConfigMap.
pub const CATALOG_KEY: &str = "catalog.json";

/// The key, and the file, of the ignore rules in the first ConfigMap.
pub const IGNORE_KEY: &str = ".indexignore";

/// What the loader skips in the volume: the kubelet's `..data` link and timestamped folder.
pub const IGNORE_RULES: &str = "..*\n";

/// Where the server reads the catalog (the volume hides the image's own catalog there).
pub const MOUNT_PATH: &str = "/configs";

/// The name of the pod's catalog volume.
const VOLUME: &str = "catalog";

/// A catalog document too large for one ConfigMap.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TooLarge {
    /// The document: its schema and name (`olm.bundle op.v1`).
    pub document: String,
    /// Its size in bytes.
    pub bytes: usize,
}

/// The schema and name of a catalog document; the rest is skipped unread.
#[derive(Deserialize)]
struct Head {
    #[serde(default)]
    schema: Value,
    #[serde(default)]
    name: Value,
}

/// The documents of the JSON stream `json` (as `declcfg::to_json` writes it), each as its
/// `schema name` and its text. Text that does not read as JSON (never written by `run`) is
/// kept whole as one last document.
fn documents(json: &str) -> Vec<(String, &str)> {
    let mut stream = serde_json::Deserializer::from_str(json).into_iter::<Head>();
    let mut out = Vec::new();
    loop {
        let start = stream.byte_offset();
        match stream.next() {
            None => return out,
            Some(Ok(head)) => {
                let text = json[start..stream.byte_offset()].trim();
                let label = |v: &Value| v.as_str().unwrap_or("?").to_string();
                out.push((
                    format!("{} {}", label(&head.schema), label(&head.name)),
                    text,
                ));
            }
            Some(Err(_)) => {
                out.push(("rest of the catalog".to_string(), json[start..].trim()));
                return out;
            }
        }
    }
}

/// `json` split at document boundaries into parts of at most `limit` bytes, documents in
/// order, each part as full as the next document allows; refused when one document alone is
/// larger than `limit`.
pub fn split(json: &str, limit: usize) -> Result<Vec<String>, TooLarge> {
    let mut parts: Vec<String> = Vec::new();
    let mut current = String::new();
    for (document, text) in documents(json) {
        let bytes = text.len() + 1;
        if bytes > limit {
            return Err(TooLarge { document, bytes });
        }
        if current.len() + bytes > limit {
            parts.push(std::mem::take(&mut current));
        }
        current.push_str(text);
        current.push('\n');
    }
    if !current.is_empty() || parts.is_empty() {
        parts.push(current);
    }
    Ok(parts)
}

/// The file a part is projected to in the volume.
pub fn part_file(index: usize) -> String {
    format!("catalog-{index:02}.json")
}

/// How the catalog reaches its server, and the objects that differ between the two ways.
#[derive(Clone, Debug)]
pub struct Served {
    /// The catalog revision: names the server pod, its Service and the ConfigMaps.
    pub revision: String,
    /// The image the server pod runs.
    pub image: String,
    /// The ConfigMaps of the catalog, in order (none when it is in the image).
    pub config_maps: Vec<Value>,
}

impl Served {
    /// The catalog image pushed, run by digest.
    pub fn pushed(pushed: &PushedCatalog) -> Served {
        Served {
            revision: objects::revision(&pushed.digest),
            image: pushed.image.clone(),
            config_maps: Vec::new(),
        }
    }

    /// `config` in ConfigMaps, served by `server_image`.
    pub fn from_config_maps(
        config: &DeclarativeConfig,
        names: &Names,
        server_image: &str,
    ) -> Result<Served, TooLarge> {
        let json = declcfg::to_json(config);
        let parts = split(&json, PART_LIMIT)?;
        let revision = objects::revision(&crate::image::digest(
            format!("{server_image}\n{json}").as_bytes(),
        ));
        let server = names.server(&revision);
        let config_maps = parts
            .into_iter()
            .enumerate()
            .map(|(index, part)| {
                let mut data = json!({CATALOG_KEY: part});
                if index == 0 {
                    data[IGNORE_KEY] = json!(IGNORE_RULES);
                }
                let map = json!({
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {
                        "name": format!("{server}-{index}"),
                        "namespace": names.namespace,
                        "labels": {CATALOG_REVISION_LABEL: revision},
                    },
                    "immutable": true,
                    "data": data,
                });
                objects::labelled(map, &names.package)
            })
            .collect();
        Ok(Served {
            revision,
            image: server_image.to_string(),
            config_maps,
        })
    }

    /// The names of the ConfigMaps, in order.
    pub fn config_map_names(&self) -> Vec<String> {
        self.config_maps
            .iter()
            .map(|map| super::cluster::name(map).to_string())
            .collect()
    }

    /// The server pod: [`objects::server_pod`], and with ConfigMaps, the server named and the
    /// ConfigMaps projected into one read-only folder at [`MOUNT_PATH`].
    pub fn server_pod(&self, names: &Names) -> Value {
        let mut pod = objects::server_pod(names, &self.revision, &self.image);
        if self.config_maps.is_empty() {
            return pod;
        }
        let sources: Vec<Value> = self
            .config_maps
            .iter()
            .enumerate()
            .map(|(index, map)| {
                let mut items = vec![json!({"key": CATALOG_KEY, "path": part_file(index)})];
                if map["data"][IGNORE_KEY].is_string() {
                    items.push(json!({"key": IGNORE_KEY, "path": IGNORE_KEY}));
                }
                json!({"configMap": {"name": super::cluster::name(map), "items": items}})
            })
            .collect();
        let container = &mut pod["spec"]["containers"][0];
        container["command"] = json!([SERVER_PATH]);
        container["volumeMounts"] =
            json!([{"name": VOLUME, "mountPath": MOUNT_PATH, "readOnly": true}]);
        pod["spec"]["volumes"] = json!([{"name": VOLUME, "projected": {"sources": sources}}]);
        pod
    }

    /// The CatalogSource pointing at this server, annotated with where its catalog is.
    pub fn catalog_source(&self, names: &Names) -> Value {
        if self.config_maps.is_empty() {
            return objects::catalog_source(names, &self.revision, &self.image);
        }
        let mut source = objects::catalog_source(names, &self.revision, "");
        source["metadata"]["annotations"] = json!({
            CATALOG_CONFIGMAPS_ANNOTATION: self.config_map_names().join(","),
            SERVER_IMAGE_ANNOTATION: self.image,
        });
        source
    }
}

/// `config`, validated as a pushed catalog is, in ConfigMaps served by `server_image`; a
/// document too large for a ConfigMap is refused naming `bundle`'s folder.
pub fn served_from_config_maps(
    config: &DeclarativeConfig,
    names: &Names,
    server_image: &str,
    bundle: &RunBundle,
) -> Result<Served, RunError> {
    super::catalog::validated_folder(config, &names.package)?;
    Served::from_config_maps(config, names, server_image).map_err(|too| RunError::CatalogTooLarge {
        bundle: bundle.dir.clone(),
        document: too.document,
        bytes: too.bytes,
    })
}

/// The catalog the CatalogSource `source` serves, read back for `--upgrade`, and how to name
/// where it came from: the catalog image of its annotation, pulled, or the ConfigMaps of its
/// annotation, read. `None` when it has neither (not made by `run`).
pub async fn installed_catalog(
    cluster: &Cluster,
    source: &Value,
    transport: &crate::image::Transport,
) -> Result<Option<(DeclarativeConfig, String)>, RunError> {
    let annotations = &source["metadata"]["annotations"];
    if let Some(image) = annotations[CATALOG_IMAGE_ANNOTATION]
        .as_str()
        .filter(|image| !image.is_empty())
    {
        let config = super::catalog::pulled_catalog(image, transport)?;
        return Ok(Some((config, image.to_string())));
    }
    let Some(list) = annotations[CATALOG_CONFIGMAPS_ANNOTATION]
        .as_str()
        .filter(|list| !list.is_empty())
    else {
        return Ok(None);
    };
    let from = format!("ConfigMaps {list}");
    let folder = tempfile::tempdir().map_err(RunError::Io)?;
    for (index, name) in list.split(',').enumerate() {
        let gone = |why: &str| RunError::InstalledCatalog {
            config_map: format!("{}/{name}", cluster.namespace),
            why: why.to_string(),
        };
        let map = cluster
            .get(Kind::ConfigMap, name)
            .await?
            .ok_or_else(|| gone("it is gone"))?;
        let part = map["data"][CATALOG_KEY]
            .as_str()
            .ok_or_else(|| gone(&format!("it has no {CATALOG_KEY}")))?;
        std::fs::write(folder.path().join(part_file(index)), part).map_err(RunError::Io)?;
    }
    let config = declcfg::load_dir(folder.path()).map_err(|error| RunError::Load {
        image: from.clone(),
        error,
    })?;
    Ok(Some((config, from)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::olm_run::catalog::first_catalog;
    use std::path::Path;

    fn names() -> Names {
        Names {
            package: "redis-operator".into(),
            namespace: "ops".into(),
        }
    }

    fn repo_bundle() -> RunBundle {
        RunBundle::read(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../bundle")).unwrap()
    }

    /// A document of `schema` named `name` whose JSON is about `size` bytes.
    fn document(schema: &str, name: &str, size: usize) -> String {
        let head = json!({"schema": schema, "name": name, "padding": ""}).to_string();
        json!({"schema": schema, "name": name, "padding": "x".repeat(size.saturating_sub(head.len()))})
            .to_string()
    }

    #[test]
    fn the_catalog_splits_at_documents_into_full_parts_in_order() {
        let stream = [
            document("olm.package", "p", 400),
            document("olm.channel", "c", 300),
            document("olm.bundle", "b1", 500),
            document("olm.bundle", "b2", 200),
        ]
        .join("\n");
        let parts = split(&stream, 1000).unwrap();
        let sizes: Vec<usize> = parts.iter().map(String::len).collect();
        assert_eq!(sizes, vec![702, 702], "{parts:?}");
        assert!(parts.iter().all(|p| p.len() <= 1000));
        // Nothing lost, nothing reordered: the parts are the documents, one per line.
        let names: Vec<String> = parts
            .iter()
            .flat_map(|p| documents(p))
            .map(|(name, _)| name)
            .collect();
        assert_eq!(
            names,
            [
                "olm.package p",
                "olm.channel c",
                "olm.bundle b1",
                "olm.bundle b2"
            ]
        );
        assert_eq!(split(&stream, 10_000).unwrap().len(), 1);
        // A document that exactly fills a part fits.
        assert_eq!(
            split(&document("olm.bundle", "b", 999), 1000)
                .unwrap()
                .len(),
            1
        );
    }

    #[test]
    fn a_document_larger_than_a_configmap_is_refused_with_its_size() {
        let stream = [
            document("olm.package", "p", 100),
            document("olm.bundle", "big.v1", 1500),
        ]
        .join("\n");
        assert_eq!(
            split(&stream, 1000),
            Err(TooLarge {
                document: "olm.bundle big.v1".into(),
                bytes: 1501,
            })
        );
        let error = RunError::CatalogTooLarge {
            bundle: "bundle".into(),
            document: "olm.bundle big.v1".into(),
            bytes: 1_200_000,
        };
        assert_eq!(
            error.to_string(),
            "bundle: the catalog's olm.bundle big.v1 is 1200000 bytes of JSON, more than one ConfigMap holds (1000000 bytes; the API server takes at most 1 MiB of data per ConfigMap): serve this catalog from a registry instead (--registry PREFIX); nothing was applied"
        );
    }

    #[test]
    fn the_same_catalog_and_image_name_the_same_objects() {
        let config = first_catalog(&repo_bundle()).unwrap();
        let served = Served::from_config_maps(&config, &names(), "img:1").unwrap();
        let again = Served::from_config_maps(&config, &names(), "img:1").unwrap();
        assert_eq!(served.revision, again.revision);
        assert_eq!(served.config_maps, again.config_maps);
        assert_eq!(served.revision.len(), 10);
        // The Redis bundle inline fits in one ConfigMap.
        assert_eq!(
            served.config_map_names(),
            [format!("redis-operator-run-catalog-{}-0", served.revision)]
        );
        let other = Served::from_config_maps(&config, &names(), "img:2").unwrap();
        assert_ne!(served.revision, other.revision, "another server image");
    }

    #[test]
    fn the_pod_mounts_every_configmap_under_the_restricted_profile() {
        let config = first_catalog(&repo_bundle()).unwrap();
        let mut served = Served::from_config_maps(&config, &names(), "img").unwrap();
        let mut second = served.config_maps[0].clone();
        second["metadata"]["name"] = json!("second");
        second["data"] = json!({CATALOG_KEY: "{}"});
        served.config_maps.push(second);
        let pod = served.server_pod(&names());
        let container = &pod["spec"]["containers"][0];
        assert_eq!(container["command"], json!([SERVER_PATH]));
        assert_eq!(container["args"][1], MOUNT_PATH);
        assert_eq!(container["volumeMounts"][0]["mountPath"], MOUNT_PATH);
        assert_eq!(container["securityContext"]["readOnlyRootFilesystem"], true);
        assert_eq!(pod["spec"]["securityContext"]["runAsNonRoot"], true);
        assert!(container["readinessProbe"]["exec"].is_object());
        let sources = &pod["spec"]["volumes"][0]["projected"]["sources"];
        assert_eq!(
            sources[0]["configMap"]["items"],
            json!([
                {"key": CATALOG_KEY, "path": "catalog-00.json"},
                {"key": IGNORE_KEY, "path": IGNORE_KEY},
            ])
        );
        assert_eq!(sources[1]["configMap"]["name"], "second");
        assert_eq!(
            sources[1]["configMap"]["items"],
            json!([{"key": CATALOG_KEY, "path": "catalog-01.json"}])
        );
        for map in &served.config_maps {
            assert!(objects::made_by_run(map), "{map}");
            assert_eq!(map["immutable"], true);
        }
        let source = served.catalog_source(&names());
        assert_eq!(
            source["metadata"]["annotations"][CATALOG_CONFIGMAPS_ANNOTATION],
            format!("redis-operator-run-catalog-{}-0,second", served.revision)
        );
        assert!(source["metadata"]["annotations"][CATALOG_IMAGE_ANNOTATION].is_null());
        assert_eq!(
            source["spec"]["address"],
            objects::server_address(&names(), &served.revision)
        );
    }

    /// Writes `files` as the kubelet lays out a projected volume at `root`: the files in a
    /// timestamped folder, `..data` linked to it, and each file linked at the top.
    fn as_the_kubelet_projects(root: &Path, files: &[(String, String)]) {
        let stamped = "..2026_12_07_22_00_00.123456789";
        std::fs::create_dir(root.join(stamped)).unwrap();
        for (path, text) in files {
            std::fs::write(root.join(stamped).join(path), text).unwrap();
        }
        std::os::unix::fs::symlink(stamped, root.join("..data")).unwrap();
        for (path, _) in files {
            std::os::unix::fs::symlink(format!("..data/{path}"), root.join(path)).unwrap();
        }
    }

    #[test]
    fn the_server_reads_the_projected_volume_as_the_catalog_once() {
        let bundle = repo_bundle();
        let config = first_catalog(&bundle).unwrap();
        let json = declcfg::to_json(&config);
        // Parts small enough that the Redis catalog takes several ConfigMaps.
        let parts = split(&json, json.len() - 1).unwrap();
        assert!(parts.len() > 1, "{}", parts.len());
        let mut files: Vec<(String, String)> = parts
            .iter()
            .enumerate()
            .map(|(index, part)| (part_file(index), part.clone()))
            .collect();
        files.push((IGNORE_KEY.into(), IGNORE_RULES.into()));
        let volume = tempfile::tempdir().unwrap();
        as_the_kubelet_projects(volume.path(), &files);
        let loaded = declcfg::load_dir(volume.path()).unwrap();
        assert_eq!(declcfg::to_json(&loaded), json);
        crate::catalog::model::validate_dir(volume.path()).unwrap();

        // Without the ignore file, the `..data` link is taken for a file.
        let bare = tempfile::tempdir().unwrap();
        files.pop();
        as_the_kubelet_projects(bare.path(), &files);
        assert!(declcfg::load_dir(bare.path()).is_err());
    }
}
