//! The graph and bundle rules of a built model, every problem collected into opm's
//! [`ValidationTree`] (opm's `Validate` methods on its model): package, channel (one head,
//! a replaces chain without cycles or stranded bundles) and bundle rules.

use std::collections::BTreeSet;

use super::{Bundle, Channel, Model, Package, ValidationTree};
use crate::version_range::VersionRange;

/// Why a channel has no single head.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum HeadError {
    /// Every bundle is replaced or skipped by another.
    #[error("no channel head found in graph")]
    None,
    /// Several bundles nothing replaces or skips.
    #[error("multiple channel heads found in graph: {}", .0.join(", "))]
    Several(Vec<String>),
}

/// What is wrong with a channel's `replaces` chain.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
enum ReplacesChainError {
    /// The chain has no start.
    #[error(transparent)]
    Head(#[from] HeadError),
    /// The chain comes back to a bundle (the bundles of the cycle, the first one again last).
    #[error("detected cycle in replaces chain of upgrade graph: {}", .0.join(" -> "))]
    Cycle(Vec<String>),
    /// Bundles neither on the chain nor skipped.
    #[error("channel contains one or more stranded bundles: {}", .0.join(", "))]
    Stranded(Vec<String>),
}

impl Model {
    /// Every problem of the model, as opm's tree; `None` when valid.
    pub fn validate(&self) -> Option<ValidationTree> {
        // Packages are checked independently, on every core; the tree keeps their order.
        let packages: Vec<&Package> = self.packages.values().collect();
        let mut root = ValidationTree::node("invalid index");
        for tree in crate::parallel::map_ordered(&packages, |p| p.validate()) {
            root.push_tree(tree);
        }
        root.into_option()
    }
}

impl Package {
    pub(super) fn validate(&self) -> Option<ValidationTree> {
        let mut tree = ValidationTree::node(format!("invalid package {:?}", self.name));
        if self.name.is_empty() {
            tree.push("package name must not be empty");
        }
        if self.default_channel.is_none() {
            tree.push("default channel must be set");
        }
        if self.channels.is_empty() {
            tree.push("package must contain at least one channel");
        }
        for channel in self.channels.values() {
            tree.push_tree(channel.validate());
        }
        // Bundles by version (a bundle in several channels counts once); the versions are
        // written out only for the duplicates, sorted as text as opm sorts them.
        let zero = semver::Version::new(0, 0, 0);
        let mut by_version: std::collections::HashMap<&semver::Version, BTreeSet<&str>> =
            std::collections::HashMap::new();
        for channel in self.channels.values() {
            for bundle in channel.bundles.values() {
                by_version
                    .entry(bundle.version.as_ref().unwrap_or(&zero))
                    .or_default()
                    .insert(&bundle.name);
            }
        }
        let mut duplicates: Vec<(String, &BTreeSet<&str>)> = by_version
            .iter()
            .filter(|(_, names)| names.len() > 1)
            .map(|(version, names)| (version.to_string(), names))
            .collect();
        duplicates.sort();
        if !duplicates.is_empty() {
            let listed: Vec<String> = duplicates
                .iter()
                .map(|(version, names)| {
                    format!(
                        "{{{version}: [{}]}}",
                        names.iter().copied().collect::<Vec<_>>().join(", ")
                    )
                })
                .collect();
            tree.push(format!(
                "duplicate versions found in bundles: [{}]",
                listed.join(" ")
            ));
        }
        if self.deprecation.as_deref() == Some("") {
            tree.push("invalid deprecation: message must be set");
        }
        tree.into_option()
    }
}

impl Channel {
    /// The one bundle nothing replaces or skips, or why there is not exactly one.
    pub fn head(&self) -> Result<&Bundle, HeadError> {
        // A sorted list, not a set: built and searched once per channel (serve's start-up
        // asks for every head twice).
        let mut incoming: Vec<&str> = Vec::with_capacity(self.bundles.len());
        for bundle in self.bundles.values() {
            if !bundle.replaces.is_empty() {
                incoming.push(&bundle.replaces);
            }
            incoming.extend(bundle.skips.iter().map(String::as_str));
        }
        incoming.sort_unstable();
        let heads: Vec<&Bundle> = self
            .bundles
            .values()
            .filter(|b| incoming.binary_search(&b.name.as_str()).is_err())
            .collect();
        match heads.len() {
            0 => Err(HeadError::None),
            1 => Ok(heads[0]),
            _ => Err(HeadError::Several(
                heads.iter().map(|b| b.name.clone()).collect(),
            )),
        }
    }

    /// Walks `replaces` from the head: a cycle, or entries the walk (and skips) never reach,
    /// are errors.
    fn validate_replaces_chain(&self) -> Result<(), ReplacesChainError> {
        let head = self.head()?;
        let skipped: BTreeSet<&str> = self
            .bundles
            .values()
            .flat_map(|b| b.skips.iter().map(String::as_str))
            .collect();
        let mut chain: Vec<&str> = vec![head.name.as_str()];
        let mut on_chain: BTreeSet<&str> = BTreeSet::from([head.name.as_str()]);
        let mut current = Some(head);
        while let Some(bundle) = current {
            let next = bundle.replaces.as_str();
            if skipped.contains(next) {
                break;
            }
            chain.push(next);
            if on_chain.contains(next) {
                let start = chain.iter().position(|n| *n == next).unwrap_or(0);
                return Err(ReplacesChainError::Cycle(
                    chain[start..].iter().map(|n| n.to_string()).collect(),
                ));
            }
            on_chain.insert(next);
            current = self.bundles.get(next);
        }
        let stranded: Vec<&str> = self
            .bundles
            .keys()
            .map(String::as_str)
            .filter(|n| !on_chain.contains(n) && !skipped.contains(n))
            .collect();
        if !stranded.is_empty() {
            return Err(ReplacesChainError::Stranded(
                stranded.iter().map(|n| n.to_string()).collect(),
            ));
        }
        Ok(())
    }

    pub(super) fn validate(&self) -> Option<ValidationTree> {
        let mut tree = ValidationTree::node(format!("invalid channel {:?}", self.name));
        if self.name.is_empty() {
            tree.push("channel name must not be empty");
        }
        if self.bundles.is_empty() {
            tree.push("channel must contain at least one bundle");
        } else if let Err(e) = self.validate_replaces_chain() {
            tree.push(e.to_string());
        }
        for bundle in self.bundles.values() {
            tree.push_tree(bundle.validate());
        }
        if self.deprecation.as_deref() == Some("") {
            tree.push("invalid deprecation: message must be set");
        }
        tree.into_option()
    }
}

impl Bundle {
    pub(super) fn validate(&self) -> Option<ValidationTree> {
        // Most bundles are valid: the node and its message are made only for those that
        // are not.
        let mut problems: Vec<String> = Vec::new();
        if self.name.is_empty() {
            problems.push("name must be set".into());
        }
        for (i, skip) in self.skips.iter().enumerate() {
            if skip.is_empty() {
                problems.push(format!("skip[{i}] is empty"));
            }
        }
        if !self.skip_range.is_empty()
            && let Err(e) = VersionRange::parse(&self.skip_range)
        {
            problems.push(format!("invalid skipRange {:?}: {e}", self.skip_range));
        }
        // A member's properties were parsed, and its one `olm.package` checked, when the model
        // was built; only an entry with no `olm.bundle` document (opm's quirk lets some through)
        // lacks it.
        if !self.has_document {
            problems.push("must be exactly one property with type \"olm.package\"".into());
        }
        if self.image.is_empty() && self.object_count == 0 {
            problems.push("bundle image must be set".into());
        }
        if self.deprecation.as_deref() == Some("") {
            problems.push("invalid deprecation: message must be set".into());
        }
        if problems.is_empty() {
            return None;
        }
        let mut tree = ValidationTree::node(format!("invalid bundle {:?}", self.name));
        for problem in problems {
            tree.push(problem);
        }
        Some(tree)
    }
}
