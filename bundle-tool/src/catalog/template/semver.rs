//! The `olm.semver` template: bundles listed per stability archetype (candidate, fast,
//! stable); channels and upgrade edges derived from their versions, as
//! `opm alpha render-template semver` derives them.
//!
//! Channels are `<archetype>-v<X>` (major) and/or `<archetype>-v<X>.<Y>` (minor). Within one
//! archetype, kind and major version, the highest bundle of each minor stream replaces the
//! highest bundle of the previous minor stream and skips every lower bundle seen so far; the
//! other bundles get no edges. That puts some edge targets in other (minor) channels, which
//! OLM allows because they are the channel's tail or skipped.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};

use semver::Version;
use serde_json::Value;

use super::go_decode::{GoDecodeError, GoObject};
use super::{BundleInfoError, TemplateError};
use crate::catalog::bundle_source::BundleSources;
use crate::catalog::declcfg::{
    Bundle, Channel, ChannelEntry, DeclarativeConfig, Icon, Package, SCHEMA_CHANNEL, SCHEMA_PACKAGE,
};

/// The template's `schema`.
pub const SCHEMA: &str = "olm.semver";

/// A stability level; the order is opm's priority (stable is the most stable).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Archetype {
    Candidate,
    Fast,
    Stable,
}

impl Archetype {
    const ALL: [Archetype; 3] = [Archetype::Candidate, Archetype::Fast, Archetype::Stable];

    fn name(self) -> &'static str {
        match self {
            Archetype::Candidate => "candidate",
            Archetype::Fast => "fast",
            Archetype::Stable => "stable",
        }
    }
}

/// Which version stream a channel follows. The order is opm's preference when nothing else
/// decides: unset < major < minor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum StreamKind {
    Unset,
    Major,
    Minor,
}

/// A parsed `olm.semver` template.
#[derive(Clone, Debug, PartialEq)]
pub struct SemverTemplate {
    generate_major: bool,
    generate_minor: bool,
    preference: StreamKind,
    /// Bundle image references per archetype, in template order.
    bundles: BTreeMap<Archetype, Vec<String>>,
}

impl SemverTemplate {
    /// The channels the template puts a bundle of `version` in when an archetype lists it:
    /// `(archetype, channel)` for every archetype and generated stream kind.
    pub fn channels_for(&self, version: &Version) -> Vec<(&'static str, String)> {
        let mut channels = Vec::new();
        for archetype in Archetype::ALL {
            if self.generate_major {
                channels.push((
                    archetype.name(),
                    format!("{}-v{}", archetype.name(), version.major),
                ));
            }
            if self.generate_minor {
                channels.push((
                    archetype.name(),
                    format!("{}-v{}.{}", archetype.name(), version.major, version.minor),
                ));
            }
        }
        channels
    }

    /// The bundle images an archetype (`candidate`, `fast`, `stable`) lists.
    pub fn images(&self, archetype: &str) -> &[String] {
        Archetype::ALL
            .iter()
            .find(|a| a.name() == archetype)
            .and_then(|a| self.bundles.get(a))
            .map_or(&[], Vec::as_slice)
    }

    /// Every bundle image the template lists, once each.
    pub fn all_images(&self) -> BTreeSet<&str> {
        self.bundles
            .values()
            .flatten()
            .map(String::as_str)
            .collect()
    }
}

/// Parses the template document strictly (unknown keys are errors, as opm's
/// `yaml.UnmarshalStrict`), applying opm's defaults: minor channels when neither kind is asked
/// for, and the default-channel preference following what is generated.
pub fn parse(document: &Value) -> Result<SemverTemplate, TemplateError> {
    let decoded = decode(document).map_err(TemplateError::SemverDecode)?;
    let (schema, generate_major, mut generate_minor, preference, bundles) = decoded;
    if schema != SCHEMA {
        return Err(TemplateError::SemverSchema);
    }
    if !generate_major && !generate_minor {
        generate_minor = true;
    }
    let preference = match preference.as_str() {
        "" if generate_minor => StreamKind::Minor,
        "" => StreamKind::Major,
        "minor" if !generate_minor => {
            return Err(TemplateError::MinorPreferenceWithoutMinor);
        }
        "major" if !generate_major => {
            return Err(TemplateError::MajorPreferenceWithoutMajor);
        }
        "minor" => StreamKind::Minor,
        "major" => StreamKind::Major,
        other => {
            return Err(TemplateError::UnknownPreference(other.to_string()));
        }
    };
    Ok(SemverTemplate {
        generate_major,
        generate_minor,
        preference,
        bundles,
    })
}

/// The template's fields, decoded as Go's strict decoder does: schema, the two generate
/// flags, the preference as written, and the bundle images per archetype.
type DecodedTemplate = (String, bool, bool, String, BTreeMap<Archetype, Vec<String>>);

fn decode(document: &Value) -> Result<DecodedTemplate, GoDecodeError> {
    let top = GoObject::new(document, "semver.SemverTemplateData")?;
    top.reject_unknown(&[
        "schema",
        "generateMajorChannels",
        "generateMinorChannels",
        "defaultChannelTypePreference",
        "candidate",
        "fast",
        "stable",
    ])?;
    let mut bundles = BTreeMap::new();
    for archetype in Archetype::ALL {
        let channel = GoObject::new(
            top.get(archetype.name()).unwrap_or(&Value::Null),
            "semver.channelBundles",
        )?;
        channel.reject_unknown(&["bundles"])?;
        let mut images = Vec::new();
        for entry in channel.list("bundles", "semver.bundleEntry")? {
            let entry = GoObject::new(entry, "semver.bundleEntry")?;
            entry.reject_unknown(&["image"])?;
            images.push(entry.string("image")?);
        }
        bundles.insert(archetype, images);
    }
    Ok((
        top.string("schema")?,
        top.boolean("generateMajorChannels")?,
        top.boolean("generateMinorChannels")?,
        top.string("defaultChannelTypePreference")?,
        bundles,
    ))
}

/// One bundle of an archetype: its name and version.
#[derive(Clone, Debug)]
struct VersionedBundle {
    name: String,
    version: Version,
}

/// The channel being generated first of all, and the most stable so far: opm's
/// "high-water" channel, which becomes the package's default.
#[derive(Clone, Debug)]
struct DefaultChannelCandidate {
    archetype: Archetype,
    kind: StreamKind,
    version: Version,
    name: String,
}

impl DefaultChannelCandidate {
    /// Whether `self` should replace `best`: a more stable archetype, then a higher version,
    /// then the preferred kind, then minor over major.
    fn beats(&self, best: &DefaultChannelCandidate, preference: StreamKind) -> bool {
        if self.archetype != best.archetype {
            return self.archetype > best.archetype;
        }
        match self.version.cmp_precedence(&best.version) {
            Ordering::Equal => {}
            order => return order == Ordering::Greater,
        }
        if self.kind != best.kind {
            if self.kind == preference {
                return true;
            }
            if best.kind == preference {
                return false;
            }
            return self.kind > best.kind;
        }
        false
    }
}

/// One bundle's place in one generated channel, for linking edges afterwards.
#[derive(Clone, Debug)]
struct Placement {
    archetype: Archetype,
    kind: StreamKind,
    channel: String,
    entry: usize,
    name: String,
    version: Version,
}

/// Renders the template: every bundle image rendered once, then the package, the generated
/// channels and the default channel.
pub fn render(
    template: &SemverTemplate,
    sources: &BundleSources,
) -> Result<DeclarativeConfig, TemplateError> {
    let mut rendered: Vec<Bundle> = Vec::new();
    let mut seen = BTreeSet::new();
    for image in template.bundles.values().flatten() {
        if seen.insert(image.clone()) {
            rendered.push(sources.render_image(image)?);
        }
    }
    if rendered.is_empty() {
        return Err(TemplateError::NoBundles);
    }
    let mut package = String::new();
    let mut by_archetype = BTreeMap::new();
    for (archetype, images) in &template.bundles {
        let versions =
            versions_of(images, &rendered, &mut package).map_err(TemplateError::PostProcess)?;
        by_archetype.insert(*archetype, versions);
    }
    let (channels, default_channel) = generate_channels(template, &package, &by_archetype);
    let mut package = Package {
        schema: SCHEMA_PACKAGE.into(),
        name: package,
        default_channel,
        icon: None,
        description: String::new(),
        properties: Vec::new(),
    };
    copy_head_metadata(&mut package, &channels, &rendered);
    Ok(DeclarativeConfig {
        packages: vec![package],
        channels,
        bundles: rendered,
        ..DeclarativeConfig::default()
    })
}

/// The versions of an archetype's bundles, checking that they share one package, that no
/// bundle is listed twice, and that no two versions differ only in build metadata (which
/// semver cannot order).
fn versions_of(
    images: &[String],
    rendered: &[Bundle],
    package: &mut String,
) -> Result<Vec<VersionedBundle>, BundleInfoError> {
    let mut out: Vec<VersionedBundle> = Vec::new();
    for image in images {
        let bundle = rendered
            .iter()
            .find(|b| &b.image == image)
            .ok_or_else(|| BundleInfoError::NotRendered(image.clone()))?;
        let (property, version) = crate::catalog::graph::package_and_version(bundle)?;
        let package_name = property.str_field("packageName").unwrap_or_default();
        if package.is_empty() {
            *package = package_name;
        } else if &package_name != package {
            return Err(BundleInfoError::OtherPackage {
                bundle_package: package_name,
                package: package.clone(),
            });
        }
        if out.iter().any(|b| b.name == bundle.name) {
            return Err(BundleInfoError::DuplicateBundle(bundle.name.clone()));
        }
        out.push(VersionedBundle {
            name: bundle.name.clone(),
            version,
        });
    }
    reject_build_metadata_twins(&out)?;
    Ok(out)
}

fn reject_build_metadata_twins(bundles: &[VersionedBundle]) -> Result<(), BundleInfoError> {
    let mut seen = BTreeSet::new();
    let mut problems = Vec::new();
    for bundle in bundles {
        let mut stripped = bundle.version.clone();
        stripped.build = semver::BuildMetadata::EMPTY;
        let stripped = stripped.to_string();
        if !seen.insert(stripped.clone()) {
            problems.push(format!(
                "bundle version {:?} cannot be compared to {stripped:?}",
                bundle.version.to_string()
            ));
        }
    }
    match problems.len() {
        0 => Ok(()),
        1 => Err(BundleInfoError::BuildMetadataTwin(problems.remove(0))),
        _ => Err(BundleInfoError::BuildMetadataTwins(problems)),
    }
}

/// The channels (sorted by name, entries ascending by version, edges linked) and the name of
/// the default channel.
fn generate_channels(
    template: &SemverTemplate,
    package: &str,
    by_archetype: &BTreeMap<Archetype, Vec<VersionedBundle>>,
) -> (Vec<Channel>, String) {
    let mut channels: BTreeMap<String, Channel> = BTreeMap::new();
    let mut placements: Vec<Placement> = Vec::new();
    let mut best = DefaultChannelCandidate {
        archetype: Archetype::Candidate,
        kind: StreamKind::Unset,
        version: Version::new(0, 0, 0),
        name: String::new(),
    };
    for (archetype, bundles) in by_archetype {
        let mut ascending: Vec<&VersionedBundle> = bundles.iter().collect();
        ascending.sort_by(|a, b| a.version.cmp_precedence(&b.version));
        for bundle in ascending {
            let v = &bundle.version;
            let mut kinds = Vec::new();
            if template.generate_major {
                let name = format!("{}-v{}", archetype.name(), v.major);
                kinds.push((StreamKind::Major, name));
            }
            if template.generate_minor {
                let name = format!("{}-v{}.{}", archetype.name(), v.major, v.minor);
                kinds.push((StreamKind::Minor, name));
            }
            for (kind, name) in kinds {
                let channel = channels.entry(name.clone()).or_insert_with(|| {
                    let candidate = DefaultChannelCandidate {
                        archetype: *archetype,
                        kind,
                        version: v.clone(),
                        name: name.clone(),
                    };
                    if candidate.beats(&best, template.preference) {
                        best = candidate;
                    }
                    Channel {
                        schema: SCHEMA_CHANNEL.into(),
                        name: name.clone(),
                        package: package.to_string(),
                        entries: Vec::new(),
                        properties: Vec::new(),
                    }
                });
                channel.entries.push(ChannelEntry {
                    name: bundle.name.clone(),
                    replaces: String::new(),
                    skips: Vec::new(),
                    skip_range: String::new(),
                });
                placements.push(Placement {
                    archetype: *archetype,
                    kind,
                    channel: name,
                    entry: channel.entries.len() - 1,
                    name: bundle.name.clone(),
                    version: v.clone(),
                });
            }
        }
    }
    link(&mut channels, &mut placements);
    (channels.into_values().collect(), best.name)
}

/// Sets `replaces` and `skips` on the top bundle of every minor stream (see the module
/// comment), walking all placements ordered by archetype, kind and version.
fn link(channels: &mut BTreeMap<String, Channel>, placements: &mut [Placement]) {
    placements.sort_by(|a, b| {
        (a.archetype, a.kind)
            .cmp(&(b.archetype, b.kind))
            .then_with(|| a.version.cmp_precedence(&b.version))
    });
    let mut set_edges = |at: &Placement, replaces: &str, skipped: &BTreeSet<String>| {
        if let Some(entry) = channels
            .get_mut(&at.channel)
            .and_then(|c| c.entries.get_mut(at.entry))
        {
            entry.replaces = replaces.to_string();
            entry.skips = skipped
                .iter()
                .filter(|s| s.as_str() != replaces)
                .cloned()
                .collect();
        }
    };
    // The top of the previous minor stream, and every bundle passed in this major stream.
    let mut previous_top = String::new();
    let mut passed: BTreeSet<String> = BTreeSet::new();
    for pair in placements.windows(2) {
        let (previous, current) = (&pair[0], &pair[1]);
        let new_major = previous.archetype != current.archetype
            || previous.kind != current.kind
            || previous.version.major != current.version.major;
        let new_minor = previous.version.minor != current.version.minor;
        if new_major || new_minor {
            set_edges(previous, &previous_top, &passed);
        }
        if new_major {
            previous_top.clear();
            passed.clear();
        } else {
            if new_minor {
                previous_top = previous.name.clone();
            }
            passed.insert(previous.name.clone());
        }
    }
    // The last placement tops its stream too, unless it opened a new major stream alone.
    if let [.., penultimate, last] = &placements[..] {
        let new_major = penultimate.archetype != last.archetype
            || penultimate.kind != last.kind
            || penultimate.version.major != last.version.major;
        if !new_major {
            set_edges(last, &previous_top, &passed);
        }
    }
}

/// Copies the description and icon of the default channel's head bundle's CSV onto the
/// package, as opm does, so that the catalog shows them without an extra step.
fn copy_head_metadata(package: &mut Package, channels: &[Channel], bundles: &[Bundle]) {
    let Some(head) = channels
        .iter()
        .find(|c| c.name == package.default_channel)
        .and_then(|c| c.entries.last())
    else {
        return;
    };
    let Some(bundle) = bundles.iter().find(|b| b.name == head.name) else {
        return;
    };
    let Some(csv) = bundle
        .objects()
        .into_iter()
        .filter_map(|o| serde_json::from_slice::<Value>(&o).ok())
        .find(|o| o["kind"] == "ClusterServiceVersion")
    else {
        return;
    };
    if let Some(description) = csv["spec"]["description"].as_str() {
        package.description = description.to_string();
    }
    // Like opm, an icon list that does not decode is ignored as a whole.
    if let Some(icons) = csv["spec"].get("icon").filter(|i| !i.is_null())
        && let Ok(icons) = serde_json::from_value::<Vec<Icon>>(icons.clone())
        && let Some(first) = icons.into_iter().next()
    {
        package.icon = Some(first);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn placements_for(versions: &[&str], minor: bool) -> Vec<Channel> {
        let template = SemverTemplate {
            generate_major: !minor,
            generate_minor: minor,
            preference: if minor {
                StreamKind::Minor
            } else {
                StreamKind::Major
            },
            bundles: BTreeMap::new(),
        };
        let bundles = versions
            .iter()
            .map(|v| VersionedBundle {
                name: format!("op.v{v}"),
                version: Version::parse(v).unwrap(),
            })
            .collect();
        let by_archetype = BTreeMap::from([(Archetype::Stable, bundles)]);
        generate_channels(&template, "op", &by_archetype).0
    }

    #[test]
    fn each_minor_top_replaces_the_previous_top_and_skips_the_rest() {
        let channels = placements_for(&["0.1.0", "0.1.1", "0.2.0", "0.2.1", "1.0.0"], false);
        let names: Vec<&str> = channels.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["stable-v0", "stable-v1"]);
        let v0 = &channels[0].entries;
        assert_eq!(v0[1].name, "op.v0.1.1");
        assert_eq!(v0[1].replaces, "");
        assert_eq!(v0[1].skips, ["op.v0.1.0"]);
        assert_eq!(v0[3].replaces, "op.v0.1.1");
        assert_eq!(v0[3].skips, ["op.v0.1.0", "op.v0.2.0"]);
        assert!(v0[0].replaces.is_empty() && v0[2].replaces.is_empty());
        // A major stream of one bundle gets no edges.
        assert_eq!(channels[1].entries[0].replaces, "");
    }

    #[test]
    fn strict_parse_rejects_unknown_keys_and_mismatched_preferences() {
        let unknown = serde_json::json!({"schema": SCHEMA, "avoidSkipPatch": true});
        assert_eq!(
            parse(&unknown).unwrap_err().to_string(),
            "error unmarshaling JSON: while decoding JSON: json: unknown field \"avoidSkipPatch\""
        );
        let mismatch = serde_json::json!({"Schema": SCHEMA, "GenerateMajorChannels": true,
            "defaultChannelTypePreference": "minor"});
        assert!(
            parse(&mismatch)
                .unwrap_err()
                .to_string()
                .contains("set to 'minor'")
        );
        let defaults = parse(&serde_json::json!({"schema": SCHEMA})).unwrap();
        assert!(defaults.generate_minor && !defaults.generate_major);
    }
}
