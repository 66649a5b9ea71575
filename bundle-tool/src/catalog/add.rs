//! `catalog add`: the release edit a CI job makes — a new bundle becomes the head of the
//! channels it ships in.
//!
//! The bundle is rendered (from a folder, or pulled by image reference), its `olm.bundle`
//! added, and in each named channel (created if missing) a new entry replaces the channel's
//! current head, so the channel stays one upgrade chain. The result is validated as a whole
//! before the package's file is replaced (see [`super::package_file`]).

use std::path::PathBuf;

use super::bundle_source::BundleSources;
use super::declcfg::{
    Bundle, Channel, ChannelEntry, DeclarativeConfig, Package, SCHEMA_CHANNEL, SCHEMA_PACKAGE,
};
use super::package_file::{EditError, PackageFile};
use super::render::{is_bundle_dir, render_bundle_dir};
use crate::location::Location;

/// What `catalog add` is asked to do.
#[derive(Clone, Debug)]
pub struct Addition {
    /// The catalog folder (`<catalog>/<package>/catalog.json|yaml` per package).
    pub catalog: PathBuf,
    /// The bundle: a bundle folder or a bundle image reference.
    pub bundle: String,
    /// The channels the bundle becomes the head of (created if missing).
    pub channels: Vec<String>,
    /// What the new entries replace.
    pub replaces: Replaces,
    /// An `olm.skipRange` for the new entries.
    pub skip_range: Option<String>,
    /// For a bundle folder: the pull spec to record as the bundle's `image` (without it the
    /// bundle is carried inline, image "", as `opm render` does for folders).
    pub image: Option<String>,
    /// How to pull an image reference.
    pub transport: crate::image::Transport,
}

/// What a new channel entry replaces.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Replaces {
    /// The channel's current head (nothing if the channel is new or empty).
    Auto,
    /// Nothing.
    Nothing,
    /// This bundle.
    Bundle(String),
}

impl Replaces {
    /// `auto`, `none` (or empty), or a bundle name.
    pub fn parse(text: &str) -> Replaces {
        match text {
            "auto" => Replaces::Auto,
            "none" | "" => Replaces::Nothing,
            name => Replaces::Bundle(name.to_string()),
        }
    }
}

/// Runs `catalog add`; the line to print on success.
pub fn run(args: &Addition) -> Result<String, EditError> {
    let bundle = render_argument(args)?;
    let mut file = PackageFile::open(&args.catalog, &bundle.package)?;
    let name = bundle.name.clone();
    let skip_range = args.skip_range.as_deref().unwrap_or_default();
    if is_added(&file.config, &bundle, &args.channels, skip_range) {
        // The re-run of an add that was killed after its commit (or that CI repeats): the
        // edit is there already, so succeed without writing, clearing what a kill left.
        crate::durable::sweep(&args.catalog);
        return Ok(format!(
            "{name} is already the head of {} in {}; nothing changed\n",
            args.channels.join(", "),
            file.path.display()
        ));
    }
    add_bundle(
        &mut file.config,
        bundle,
        &args.channels,
        &args.replaces,
        args.skip_range.as_deref().unwrap_or_default(),
    )?;
    let path = file.commit()?;
    Ok(format!(
        "added {name} as the head of {} in {}\n",
        args.channels.join(", "),
        path.display()
    ))
}

fn render_argument(args: &Addition) -> Result<Bundle, EditError> {
    let location = Location::of(&args.bundle);
    if let Ok(Location::Local(path)) = &location {
        if !is_bundle_dir(path) {
            return Err(EditError::NotABundleFolder(path.clone()));
        }
        let image = args.image.as_deref().unwrap_or_default();
        return render_bundle_dir(path, image).map_err(|error| EditError::Render {
            path: path.clone(),
            error,
        });
    }
    if args.image.is_some() {
        return Err(EditError::ImageForReference(args.bundle.clone()));
    }
    location?;
    Ok(BundleSources::new(args.transport.clone()).render_image(&args.bundle)?)
}

/// Whether `config` has `bundle` exactly as rendered, with an entry of `skip_range` for it in
/// each of `channels` and heading each: what [`add_bundle`] would have made.
fn is_added(
    config: &DeclarativeConfig,
    bundle: &Bundle,
    channels: &[String],
    skip_range: &str,
) -> bool {
    config.bundles.iter().any(|b| b == bundle)
        && channels.iter().all(|name| {
            config
                .channels
                .iter()
                .find(|c| c.name == *name && c.package == bundle.package)
                .is_some_and(|channel| {
                    channel
                        .entries
                        .iter()
                        .any(|e| e.name == bundle.name && e.skip_range == skip_range)
                        && current_head(channel).ok().flatten().as_deref()
                            == Some(bundle.name.as_str())
                })
        })
}

/// Adds `bundle` to a package's documents and makes it the head of `channels`.
pub fn add_bundle(
    config: &mut DeclarativeConfig,
    bundle: Bundle,
    channels: &[String],
    replaces: &Replaces,
    skip_range: &str,
) -> Result<(), EditError> {
    if channels.iter().any(String::is_empty) || channels.is_empty() {
        return Err(EditError::NoChannels);
    }
    if config.bundles.iter().any(|b| b.name == bundle.name) {
        return Err(EditError::BundleExists {
            bundle: bundle.name.clone(),
            package: bundle.package.clone(),
        });
    }
    if !config.packages.iter().any(|p| p.name == bundle.package) {
        // A first release: the package's default channel is the first one named.
        config.packages.push(Package {
            schema: SCHEMA_PACKAGE.into(),
            name: bundle.package.clone(),
            default_channel: channels[0].clone(),
            icon: None,
            description: String::new(),
            properties: Vec::new(),
        });
    }
    for channel_name in channels {
        let index = match config
            .channels
            .iter()
            .position(|c| c.name == *channel_name && c.package == bundle.package)
        {
            Some(index) => index,
            None => {
                config.channels.push(Channel {
                    schema: SCHEMA_CHANNEL.into(),
                    name: channel_name.clone(),
                    package: bundle.package.clone(),
                    entries: Vec::new(),
                    properties: Vec::new(),
                });
                config.channels.len() - 1
            }
        };
        let channel = &mut config.channels[index];
        let replaced = match replaces {
            Replaces::Auto => current_head(channel)?.unwrap_or_default(),
            Replaces::Nothing => String::new(),
            Replaces::Bundle(name) => name.clone(),
        };
        channel.entries.push(ChannelEntry {
            name: bundle.name.clone(),
            replaces: replaced,
            skips: Vec::new(),
            skip_range: skip_range.to_string(),
        });
    }
    config.bundles.push(bundle);
    Ok(())
}

/// The entry no other entry replaces or skips; `None` for an empty channel; an error when
/// the channel has several (the user must say which one to replace).
pub fn current_head(channel: &Channel) -> Result<Option<String>, EditError> {
    let targets: std::collections::BTreeSet<&str> = channel
        .entries
        .iter()
        .flat_map(|e| {
            std::iter::once(e.replaces.as_str()).chain(e.skips.iter().map(String::as_str))
        })
        .collect();
    let heads: Vec<&str> = channel
        .entries
        .iter()
        .map(|e| e.name.as_str())
        .filter(|name| !targets.contains(name))
        .collect();
    match heads[..] {
        [] if channel.entries.is_empty() => Ok(None),
        [head] => Ok(Some(head.to_string())),
        _ => Err(EditError::NoSingleHead {
            channel: channel.name.clone(),
            heads: heads.iter().map(|h| h.to_string()).collect(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::declcfg::Property;

    fn bundle(name: &str, version: &str) -> Bundle {
        Bundle {
            schema: "olm.bundle".into(),
            name: name.into(),
            package: "p".into(),
            image: format!("example.com/p:{version}"),
            properties: vec![Property {
                type_: crate::olm_property::PACKAGE.into(),
                value: (&serde_json::json!({"packageName": "p", "version": version})).into(),
            }],
            related_images: Vec::new(),
        }
    }

    #[test]
    fn each_release_replaces_the_head_and_new_channels_start_empty() {
        let mut config = DeclarativeConfig::default();
        let alpha = vec!["alpha".to_string()];
        add_bundle(
            &mut config,
            bundle("p.v1", "1.0.0"),
            &alpha,
            &Replaces::Auto,
            "",
        )
        .unwrap();
        let both = vec!["alpha".to_string(), "stable".to_string()];
        add_bundle(
            &mut config,
            bundle("p.v2", "2.0.0"),
            &both,
            &Replaces::Auto,
            "<2.0.0",
        )
        .unwrap();
        assert_eq!(config.packages[0].default_channel, "alpha");
        let entries = |c: &str| {
            config
                .channels
                .iter()
                .find(|ch| ch.name == c)
                .unwrap()
                .entries
                .clone()
        };
        assert_eq!(entries("alpha")[1].replaces, "p.v1");
        assert_eq!(entries("alpha")[1].skip_range, "<2.0.0");
        assert_eq!(entries("stable")[0].replaces, "");
        let again = add_bundle(
            &mut config,
            bundle("p.v2", "2.0.0"),
            &alpha,
            &Replaces::Auto,
            "",
        );
        assert!(
            again
                .unwrap_err()
                .to_string()
                .contains("already in package")
        );
    }
}
