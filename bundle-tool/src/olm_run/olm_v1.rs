//! `run` on OLM v1 (operator-controller v1.5.1): the bundle image and the catalog image
//! pushed (operator-controller pulls bundles by image; it serves nothing inline), a
//! ClusterCatalog on the catalog by digest, the installer ServiceAccount with exactly the
//! RBAC `olm-v1 rbac` derives, and a ClusterExtension of the package from that catalog only,
//! waited for until `Installed=True` at the bundle.

use serde_json::json;

use super::RunError;
use super::catalog::{self, RunBundle};
use super::cluster::{self, Cluster, Kind, describe};
use super::diagnosis::Stage;
use super::install_mode::InstallMode;
use super::objects::{self, Names};
use super::request::RunRequest;
use super::steps::Steps;
use super::wait::{Waiter, ensure, installed_at};
use crate::catalog::render::render_bundle_dir;
use crate::olm_v1::{RbacOptions, RegistryV1, derive};

/// Installs `bundle` through OLM v1; the CSV name on success.
pub(super) async fn install(
    request: &RunRequest,
    steps: &mut Steps,
    cluster: &Cluster,
    bundle: RunBundle,
) -> Result<String, RunError> {
    if request.server_image.is_some() {
        return Err(RunError::ServerImageOnOlmV1);
    }
    if !cluster.namespace_exists().await? {
        return Err(RunError::NoNamespace(cluster.namespace.clone()));
    }
    if let Some(mode) = request
        .install_mode
        .as_ref()
        .filter(|m| **m != InstallMode::AllNamespaces)
    {
        return Err(RunError::InstallModeOnOlmV1(mode.to_string()));
    }
    let names = Names {
        package: bundle.package().to_string(),
        namespace: cluster.namespace.clone(),
    };
    let csv = bundle.csv_name().to_string();
    let mut installer_of = vec![RegistryV1::read(&bundle.dir)?];
    // On --upgrade: the catalog the installed bundle came from, and that bundle, whose
    // objects the installer must still be able to manage (the union of both bundles' RBAC).
    let mut upgrade_from = None;
    if request.upgrade {
        let nothing = || RunError::NothingToUpgrade {
            package: names.package.clone(),
            namespace: names.namespace.clone(),
        };
        let extension = cluster
            .get(Kind::ClusterExtension, &names.subscription())
            .await?
            .filter(objects::made_by_run)
            .ok_or_else(nothing)?;
        let installed = extension["status"]["install"]["bundle"]["name"]
            .as_str()
            .filter(|n| !n.is_empty())
            .ok_or_else(nothing)?
            .to_string();
        if installed == csv {
            steps.push(
                "unchanged",
                format!("ClusterExtension {}", names.subscription()),
                format!("Installed at {csv}; nothing changed"),
            );
            return Ok(csv);
        }
        let previous = cluster
            .get(Kind::ClusterCatalog, &names.catalog_source())
            .await?
            .and_then(|c| {
                c["spec"]["source"]["image"]["ref"]
                    .as_str()
                    .map(str::to_string)
            })
            .ok_or_else(nothing)?;
        let config = catalog::pulled_catalog(&previous, &request.transport)?;
        let old_image = config
            .bundles
            .iter()
            .find(|b| b.name == installed)
            .map(|b| b.image.clone())
            .filter(|image| !image.is_empty())
            .ok_or_else(nothing)?;
        let old = catalog::pull(&old_image, &request.transport)?;
        installer_of.insert(0, RegistryV1::read(old.root())?);
        upgrade_from = Some((previous, installed, config));
    }
    let rbac = derive(
        &installer_of,
        &RbacOptions {
            namespace: names.namespace.clone(),
            service_account: objects::installer_account(&names),
            extension: names.subscription(),
        },
    )?;

    let labels = crate::bundle::read::labels(&bundle.dir)
        .map_err(|e| RunError::BundleImage(e.to_string()))?;
    let bundle_image = crate::image::build_bundle_image(&bundle.dir, &labels)
        .map_err(|e| RunError::BundleImage(e.to_string()))?;
    let repository = objects::bundle_repository(&names, &request.registry);
    let digest = catalog::push_image(
        &bundle_image,
        &repository,
        &bundle.version(),
        &request.access,
    )
    .await?;
    let bundle_ref = format!("{repository}@{digest}");
    steps.push("pushed", bundle_ref.clone(), "the bundle image");
    let rendered =
        render_bundle_dir(&bundle.dir, &bundle_ref).map_err(|error| RunError::Render {
            dir: bundle.dir.clone(),
            error,
        })?;
    let with_image = RunBundle {
        bundle: rendered,
        ..bundle
    };
    let config = match upgrade_from {
        Some((previous, installed, config)) => {
            let edge = catalog::with_upgrade(config, &previous, &with_image, &installed)?;
            if let Some(line) = edge.added_edge {
                steps.push("note", format!("upgrade edge {installed} -> {csv}"), line);
            }
            edge.config
        }
        None => catalog::first_catalog(&with_image)?,
    };
    let (pushed, warning) = catalog::build_and_push(
        &config,
        &names.package,
        &names.catalog_repository(&request.registry),
        &with_image.version(),
        &request.access,
    )
    .await?;
    if let Some(warning) = warning {
        steps.push("note", "catalog image", warning);
    }
    steps.push("pushed", pushed.image.clone(), "the catalog image");

    // The installer's rights first: on --upgrade, operator-controller resolves the new bundle
    // as soon as the catalog serves it, and its permission preflight must find them.
    for object in &rbac.objects {
        let kind_name = object["kind"].as_str().unwrap_or_default();
        let kind = Kind::of_installer_object(kind_name)
            .ok_or_else(|| RunError::Object(format!("unexpected installer object {kind_name}")))?;
        let object = objects::labelled(object.clone(), &names.package);
        match cluster.get(kind, cluster::name(&object)).await? {
            // An installer `run` made gets the rules the bundles now need; one made by
            // someone else is theirs (the permission preflight says what it lacks).
            Some(existing)
                if objects::made_by_run(&existing)
                    && !object["rules"].is_null()
                    && existing["rules"] != object["rules"] =>
            {
                cluster
                    .patch(
                        kind,
                        cluster::name(&object),
                        &json!({"rules": object["rules"]}),
                    )
                    .await?;
                steps.push(
                    "updated",
                    describe(kind, &existing),
                    "the rules of both bundles",
                );
            }
            _ => ensure(cluster, steps, kind, &object).await?,
        }
    }
    let wanted = objects::cluster_catalog(&names, &pushed.image);
    match cluster
        .get(Kind::ClusterCatalog, &names.catalog_source())
        .await?
    {
        None => {
            cluster.create(Kind::ClusterCatalog, &wanted).await?;
            steps.push("created", describe(Kind::ClusterCatalog, &wanted), "");
        }
        Some(existing) if existing["spec"]["source"] == wanted["spec"]["source"] => {
            steps.push("unchanged", describe(Kind::ClusterCatalog, &existing), "");
        }
        Some(existing) => {
            cluster
                .patch(
                    Kind::ClusterCatalog,
                    &names.catalog_source(),
                    &json!({"spec": wanted["spec"]}),
                )
                .await?;
            steps.push("updated", describe(Kind::ClusterCatalog, &existing), "");
        }
    }
    let mut waiter = Waiter::new(cluster, &names, steps, request.timeout, &csv, "");
    waiter.catalog_image = pushed.image.clone();
    waiter
        .wait(Stage::CatalogServing, steps, request.approval)
        .await?;
    steps.push(
        "ready",
        format!("ClusterCatalog {}", names.catalog_source()),
        "Serving",
    );

    let extension = objects::cluster_extension(&names);
    let existing = cluster
        .get(Kind::ClusterExtension, &names.subscription())
        .await?;
    let installed_here = existing.as_ref().is_some_and(|e| installed_at(e, &csv));
    ensure(cluster, steps, Kind::ClusterExtension, &extension).await?;
    if installed_here && !steps.changed() {
        steps.push(
            "unchanged",
            format!("ClusterExtension {}", names.subscription()),
            format!("Installed at {csv}; nothing changed"),
        );
        return Ok(csv);
    }
    waiter
        .wait(Stage::ExtensionInstalled, steps, request.approval)
        .await?;
    steps.push(
        "installed",
        format!("ClusterExtension {}", names.subscription()),
        format!("Installed=True at {csv}"),
    );
    Ok(csv)
}
