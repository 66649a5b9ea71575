//! Building the model from the documents, with opm's structural checks: the first one that
//! fails is the error, as in opm's `ConvertToModel`. Each step is one pass over one kind of
//! document, in opm's order: packages, channels, bundles, the last channels' entries,
//! default channels, deprecations.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use super::bundle_document::{BundleDocumentError, CheckedDocument, check_bundle_document};
use super::{Bundle, Channel, Model, Package};
use crate::declcfg::{self, DeclarativeConfig};

/// Why the documents do not make a model (the first structural problem), in opm's words.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ModelError {
    /// A package document without a name.
    #[error("config contains package with no name")]
    PackageWithoutName,
    /// Two package documents of one name.
    #[error("duplicate package {0:?}")]
    DuplicatePackage(String),
    /// A package name that is not a DNS-1123 label.
    #[error("invalid package name {name:?}: [{}]", .problems.join(" "))]
    PackageName {
        /// The name.
        name: String,
        /// What is wrong with it.
        problems: Vec<String>,
    },
    /// A channel of a package no document defines.
    #[error("unknown package {package:?} for channel {channel:?}")]
    ChannelOfUnknownPackage {
        /// The package.
        package: String,
        /// The channel.
        channel: String,
    },
    /// A channel document without a name.
    #[error("package {0:?} contains channel with no name")]
    ChannelWithoutName(String),
    /// Two channel documents of one name in one package.
    #[error("package {package:?} has duplicate channel {channel:?}")]
    DuplicateChannel {
        /// The package.
        package: String,
        /// The channel.
        channel: String,
    },
    /// A channel listing one bundle twice.
    #[error("invalid package {package:?}, channel {channel:?}: duplicate entry {entry:?}")]
    DuplicateEntry {
        /// The package.
        package: String,
        /// The channel.
        channel: String,
        /// The entry.
        entry: String,
    },
    /// A bundle document without a package.
    #[error("package name must be set for bundle {0:?}")]
    BundleWithoutPackage(String),
    /// A bundle of a package no document defines.
    #[error("unknown package {package:?} for bundle {bundle:?}")]
    BundleOfUnknownPackage {
        /// The package.
        package: String,
        /// The bundle.
        bundle: String,
    },
    /// Two bundle documents of one name in one package.
    #[error("package {package:?} has duplicate bundle {bundle:?}")]
    DuplicateBundle {
        /// The package.
        package: String,
        /// The bundle.
        bundle: String,
    },
    /// A bundle document's own checks failed (boxed: one result per bundle is held until
    /// the model is built, and most are not errors).
    #[error(transparent)]
    BundleDocument(#[from] Box<BundleDocumentError>),
    /// A bundle document no channel lists.
    #[error("package {package:?}, bundle {bundle:?} not found in any channel entries")]
    BundleInNoChannel {
        /// The package.
        package: String,
        /// The bundle.
        bundle: String,
    },
    /// Entries of a package's last channel without a bundle document.
    #[error("no olm.bundle blobs found in package {package:?} for olm.channel entries [{}]", .entries.join(" "))]
    EntriesWithoutDocuments {
        /// The package.
        package: String,
        /// The entries.
        entries: Vec<String>,
    },
    /// A deprecation document without a package.
    #[error("package name must be set for deprecation item {0}")]
    DeprecationWithoutPackage(usize),
    /// A deprecation document of a package no document defines.
    #[error("cannot apply deprecations to an unknown package {0:?}")]
    DeprecationOfUnknownPackage(String),
    /// Two deprecation documents for one package.
    #[error("expected a maximum of one deprecation per package: {0:?}")]
    DuplicateDeprecation(String),
    /// A deprecation entry without a schema.
    #[error("schema must be set for deprecation entry [{entry}] for package {package:?}")]
    DeprecationEntryWithoutSchema {
        /// The entry's position.
        entry: usize,
        /// The package.
        package: String,
    },
    /// Two deprecation entries for one object.
    #[error(
        "duplicate deprecation entry declcfg.PackageScopedReference{{Schema:{schema:?}, Name:{name:?}}} for package {package:?}"
    )]
    DuplicateDeprecationEntry {
        /// The entry's schema.
        schema: String,
        /// The entry's name.
        name: String,
        /// The package.
        package: String,
    },
    /// A deprecated bundle that has no document.
    #[error("cannot deprecate bundle {bundle:?} for package {package:?}: bundle not found")]
    DeprecatedBundleNotFound {
        /// The bundle.
        bundle: String,
        /// The package.
        package: String,
    },
    /// A deprecated channel that does not exist.
    #[error("cannot deprecate channel {channel:?} for package {package:?}: channel not found")]
    DeprecatedChannelNotFound {
        /// The channel.
        channel: String,
        /// The package.
        package: String,
    },
    /// A package deprecation entry that names something.
    #[error("package name must be empty for deprecated package {package:?} (specified {name:?})")]
    DeprecatedPackageNamed {
        /// The package.
        package: String,
        /// The name given.
        name: String,
    },
    /// A deprecation entry of an unknown schema.
    #[error(
        "cannot deprecate object declcfg.PackageScopedReference{{Schema:{schema:?}, Name:{name:?}}} referenced by entry {entry} for package {package:?}: object schema unknown"
    )]
    DeprecatedUnknownSchema {
        /// The entry's schema.
        schema: String,
        /// The entry's name.
        name: String,
        /// The entry's position.
        entry: usize,
        /// The package.
        package: String,
    },
}

const DNS1123_LABEL_MESSAGE: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";

fn dns1123_label_errors(name: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if name.len() > 63 {
        errors.push("must be no more than 63 characters".to_string());
    }
    let bytes = name.as_bytes();
    let valid = !bytes.is_empty()
        && bytes
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
        && bytes[0] != b'-'
        && bytes[bytes.len() - 1] != b'-';
    if !valid {
        errors.push(DNS1123_LABEL_MESSAGE.to_string());
    }
    errors
}

impl Model {
    /// Builds the model from the documents, with opm's structural checks (the first one that
    /// fails is the error); [`Model::validate`] then checks the graph.
    pub fn from_declcfg(config: DeclarativeConfig) -> Result<Model, ModelError> {
        // What a bundle document alone decides (its properties, version, image references) is
        // checked on every core first; building the model reports those results in document
        // order, after the checks that depend on the documents before it, as a sequential
        // pass does.
        let own_checks = crate::parallel::map_ordered(&config.bundles, |b| {
            check_bundle_document(b).map_err(Box::new)
        });
        Model::from_checked_declcfg(config, own_checks)
    }

    /// [`Model::from_declcfg`] with each bundle document's own checks already done, one
    /// result per bundle in document order.
    pub(super) fn from_checked_declcfg(
        config: DeclarativeConfig,
        own_checks: Vec<Result<CheckedDocument, Box<BundleDocumentError>>>,
    ) -> Result<Model, ModelError> {
        let mut model = Model::default();
        let default_channels = model.add_packages(&config.packages)?;
        let last_channel = model.add_channels(&config.channels, &default_channels)?;
        model.add_bundles(config.bundles, own_checks)?;
        model.check_last_channels(&last_channel)?;
        model.add_missing_default_channels(&default_channels);
        model.apply_deprecations(&config.deprecations)?;
        Ok(model)
    }

    /// Adds the packages; returns each one's default channel as written.
    fn add_packages(
        &mut self,
        packages: &[declcfg::Package],
    ) -> Result<BTreeMap<String, String>, ModelError> {
        let mut default_channels = BTreeMap::new();
        for p in packages {
            if p.name.is_empty() {
                return Err(ModelError::PackageWithoutName);
            }
            if self.packages.contains_key(&p.name) {
                return Err(ModelError::DuplicatePackage(p.name.clone()));
            }
            let problems = dns1123_label_errors(&p.name);
            if !problems.is_empty() {
                return Err(ModelError::PackageName {
                    name: p.name.clone(),
                    problems,
                });
            }
            default_channels.insert(p.name.clone(), p.default_channel.clone());
            self.packages.insert(
                p.name.clone(),
                Package {
                    name: p.name.clone(),
                    description: p.description.clone(),
                    icon: p.icon.clone(),
                    ..Default::default()
                },
            );
        }
        Ok(default_channels)
    }

    /// Adds the channels and their entries (bundles without their documents yet); returns
    /// each package's channel processed last.
    fn add_channels(
        &mut self,
        channels: &[declcfg::Channel],
        default_channels: &BTreeMap<String, String>,
    ) -> Result<BTreeMap<String, String>, ModelError> {
        // opm remembers, per package, the entries of the channel processed last: those without
        // a bundle document are an error once every bundle has been seen.
        let mut last_channel: BTreeMap<String, String> = BTreeMap::new();
        // Entries are copied, not moved: strings the loader threads allocated, kept for the
        // life of a server, pin their arenas' pages (moving them cost 6 MiB more idle RSS on
        // the generated catalog, heap left fragmented after the index build).
        for c in channels {
            let Some(package) = self.packages.get_mut(&c.package) else {
                return Err(ModelError::ChannelOfUnknownPackage {
                    package: c.package.clone(),
                    channel: c.name.clone(),
                });
            };
            if c.name.is_empty() {
                return Err(ModelError::ChannelWithoutName(c.package.clone()));
            }
            if package.channels.contains_key(&c.name) {
                return Err(ModelError::DuplicateChannel {
                    package: c.package.clone(),
                    channel: c.name.clone(),
                });
            }
            let mut channel = Channel {
                name: c.name.clone(),
                properties: c.properties.clone(),
                ..Default::default()
            };
            for entry in &c.entries {
                if channel.bundles.contains_key(&entry.name) {
                    return Err(ModelError::DuplicateEntry {
                        package: c.package.clone(),
                        channel: c.name.clone(),
                        entry: entry.name.clone(),
                    });
                }
                channel.bundles.insert(
                    entry.name.clone(),
                    Bundle {
                        name: entry.name.clone(),
                        replaces: entry.replaces.clone(),
                        skips: entry.skips.clone(),
                        skip_range: entry.skip_range.clone(),
                        ..Default::default()
                    },
                );
            }
            if default_channels.get(&c.package) == Some(&c.name) {
                package.default_channel = Some(c.name.clone());
            }
            package.channels.insert(c.name.clone(), channel);
            last_channel.insert(c.package.clone(), c.name.clone());
        }
        Ok(last_channel)
    }

    /// Gives every channel member its bundle document's data.
    fn add_bundles(
        &mut self,
        bundles: Vec<declcfg::Bundle>,
        own_checks: Vec<Result<CheckedDocument, Box<BundleDocumentError>>>,
    ) -> Result<(), ModelError> {
        // Each document is dropped as soon as the model has what it needs from it: the model's
        // allocations then reuse its memory (keeping them all until the end left the serve
        // index 7 MiB more fragmented heap on the generated catalog).
        for (b, own) in bundles.into_iter().zip(own_checks) {
            if b.package.is_empty() {
                return Err(ModelError::BundleWithoutPackage(b.name));
            }
            let Some(package) = self.packages.get_mut(&b.package) else {
                return Err(ModelError::BundleOfUnknownPackage {
                    package: b.package,
                    bundle: b.name,
                });
            };
            // Every document found so far is in at least one channel (or the build stopped
            // there), so a name already marked in a channel is a duplicate document.
            let mut listed = false;
            for channel in package.channels.values() {
                if let Some(member) = channel.bundles.get(&b.name) {
                    if member.has_document {
                        return Err(ModelError::DuplicateBundle {
                            package: b.package,
                            bundle: b.name,
                        });
                    }
                    listed = true;
                }
            }
            let CheckedDocument {
                version,
                object_count,
            } = own?;
            // One copy of the document's data, shared by its members in every channel: cloning
            // it per channel cost memory on catalogs whose bundles are in several channels.
            let properties = Arc::new(b.properties);
            let related_images = Arc::new(b.related_images);
            if !listed {
                return Err(ModelError::BundleInNoChannel {
                    package: b.package,
                    bundle: b.name,
                });
            }
            for channel in package.channels.values_mut() {
                let Some(member) = channel.bundles.get_mut(&b.name) else {
                    continue;
                };
                member.image = b.image.clone();
                member.properties = Arc::clone(&properties);
                member.related_images = Arc::clone(&related_images);
                member.version = Some(version.clone());
                member.has_document = true;
                member.object_count = object_count;
            }
        }
        Ok(())
    }

    /// opm's quirk: only the entries of each package's last channel must have documents.
    fn check_last_channels(
        &self,
        last_channel: &BTreeMap<String, String>,
    ) -> Result<(), ModelError> {
        for (package, channel) in last_channel {
            let missing: Vec<String> = self.packages[package].channels[channel]
                .bundles
                .values()
                .filter(|b| !b.has_document)
                .map(|b| b.name.clone())
                .collect();
            if !missing.is_empty() {
                return Err(ModelError::EntriesWithoutDocuments {
                    package: package.clone(),
                    entries: missing,
                });
            }
        }
        Ok(())
    }

    /// A default channel no channel document defines.
    fn add_missing_default_channels(&mut self, default_channels: &BTreeMap<String, String>) {
        for package in self.packages.values_mut() {
            let wanted = default_channels
                .get(&package.name)
                .cloned()
                .unwrap_or_default();
            if !wanted.is_empty() && package.default_channel.is_none() {
                // opm makes an empty channel of that name, which then fails validation.
                package.channels.insert(
                    wanted.clone(),
                    Channel {
                        name: wanted.clone(),
                        ..Default::default()
                    },
                );
                package.default_channel = Some(wanted);
            }
        }
    }

    /// Marks what `olm.deprecations` documents deprecate.
    fn apply_deprecations(
        &mut self,
        deprecations: &[declcfg::Deprecation],
    ) -> Result<(), ModelError> {
        let mut deprecated_packages = BTreeSet::new();
        for (i, deprecation) in deprecations.iter().enumerate() {
            if deprecation.package.is_empty() {
                return Err(ModelError::DeprecationWithoutPackage(i));
            }
            let Some(package) = self.packages.get_mut(&deprecation.package) else {
                return Err(ModelError::DeprecationOfUnknownPackage(
                    deprecation.package.clone(),
                ));
            };
            if !deprecated_packages.insert(deprecation.package.clone()) {
                return Err(ModelError::DuplicateDeprecation(
                    deprecation.package.clone(),
                ));
            }
            let mut seen = BTreeSet::new();
            for (j, entry) in deprecation.entries.iter().enumerate() {
                let reference = &entry.reference;
                if reference.schema.is_empty() {
                    return Err(ModelError::DeprecationEntryWithoutSchema {
                        entry: j,
                        package: deprecation.package.clone(),
                    });
                }
                if !seen.insert(reference.clone()) {
                    return Err(ModelError::DuplicateDeprecationEntry {
                        schema: reference.schema.clone(),
                        name: reference.name.clone(),
                        package: deprecation.package.clone(),
                    });
                }
                match reference.schema.as_str() {
                    declcfg::SCHEMA_BUNDLE => {
                        let has_document = package.channels.values().any(|c| {
                            c.bundles
                                .get(&reference.name)
                                .is_some_and(|b| b.has_document)
                        });
                        if !has_document {
                            return Err(ModelError::DeprecatedBundleNotFound {
                                bundle: reference.name.clone(),
                                package: deprecation.package.clone(),
                            });
                        }
                        for channel in package.channels.values_mut() {
                            if let Some(bundle) = channel.bundles.get_mut(&reference.name) {
                                bundle.deprecation = Some(entry.message.clone());
                            }
                        }
                    }
                    declcfg::SCHEMA_CHANNEL => match package.channels.get_mut(&reference.name) {
                        Some(channel) => channel.deprecation = Some(entry.message.clone()),
                        None => {
                            return Err(ModelError::DeprecatedChannelNotFound {
                                channel: reference.name.clone(),
                                package: deprecation.package.clone(),
                            });
                        }
                    },
                    declcfg::SCHEMA_PACKAGE => {
                        if !reference.name.is_empty() {
                            return Err(ModelError::DeprecatedPackageNamed {
                                package: deprecation.package.clone(),
                                name: reference.name.clone(),
                            });
                        }
                        package.deprecation = Some(entry.message.clone());
                    }
                    _ => {
                        return Err(ModelError::DeprecatedUnknownSchema {
                            schema: reference.schema.clone(),
                            name: reference.name.clone(),
                            entry: j,
                            package: deprecation.package.clone(),
                        });
                    }
                }
            }
        }
        Ok(())
    }
}
