//! `.indexignore` files: gitignore-style patterns, each file applying below its own folder.

use std::path::{Path, PathBuf};

/// One pattern from one `.indexignore`.
#[derive(Clone, Debug)]
struct Rule {
    /// The folder of the `.indexignore` (relative to the catalog root).
    base: PathBuf,
    pattern: String,
    negated: bool,
    directory_only: bool,
    /// The pattern has a `/` before its end: it matches from `base`, not at any depth.
    anchored: bool,
}

/// All `.indexignore` rules of a catalog tree.
#[derive(Clone, Debug, Default)]
pub struct IgnoreRules {
    rules: Vec<Rule>,
}

impl IgnoreRules {
    /// Adds the patterns of the `.indexignore` whose folder is `base` (relative to the root).
    pub fn add_file(&mut self, base: &Path, text: &str) {
        for line in text.lines() {
            let line = line.trim_end();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let (negated, rest) = match line.strip_prefix('!') {
                Some(rest) => (true, rest),
                None => (false, line.strip_prefix('\\').unwrap_or(line)),
            };
            let directory_only = rest.ends_with('/');
            let trimmed = rest.trim_end_matches('/');
            let anchored = trimmed.contains('/');
            let pattern = trimmed.trim_start_matches('/').to_string();
            if pattern.is_empty() {
                continue;
            }
            self.rules.push(Rule {
                base: base.to_path_buf(),
                pattern,
                negated,
                directory_only,
                anchored,
            });
        }
    }

    /// Whether `relative` (a path below the root) is ignored; the last matching rule decides.
    pub fn is_ignored(&self, relative: &Path, is_dir: bool) -> bool {
        let mut ignored = false;
        for rule in &self.rules {
            let Ok(below) = relative.strip_prefix(&rule.base) else {
                continue;
            };
            if rule.directory_only && !is_dir {
                continue;
            }
            let text = below.to_string_lossy().replace('\\', "/");
            let matched = if rule.anchored {
                glob_match(&rule.pattern, &text)
            } else {
                let name = below
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                glob_match(&rule.pattern, &name)
            };
            if matched {
                ignored = !rule.negated;
            }
        }
        ignored
    }
}

/// Glob matching: `*` and `?` stop at `/`, `**` crosses it.
fn glob_match(pattern: &str, text: &str) -> bool {
    fn go(p: &[u8], t: &[u8]) -> bool {
        match p.first() {
            None => t.is_empty(),
            Some(b'*') if p.get(1) == Some(&b'*') => {
                let rest = p[2..].strip_prefix(b"/").unwrap_or(&p[2..]);
                (0..=t.len()).any(|i| go(rest, &t[i..]))
            }
            Some(b'*') => {
                let rest = &p[1..];
                for i in 0..=t.len() {
                    if go(rest, &t[i..]) {
                        return true;
                    }
                    if i < t.len() && t[i] == b'/' {
                        break;
                    }
                }
                false
            }
            Some(b'?') => !t.is_empty() && t[0] != b'/' && go(&p[1..], &t[1..]),
            Some(c) => t.first() == Some(c) && go(&p[1..], &t[1..]),
        }
    }
    go(pattern.as_bytes(), text.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(text: &str) -> IgnoreRules {
        let mut r = IgnoreRules::default();
        r.add_file(Path::new(""), text);
        r
    }

    #[test]
    fn names_match_at_any_depth_and_globs_work() {
        let r = rules("# docs\n*.md\nOWNERS\n");
        assert!(r.is_ignored(Path::new("README.md"), false));
        assert!(r.is_ignored(Path::new("pkg/sub/NOTES.md"), false));
        assert!(r.is_ignored(Path::new("pkg/OWNERS"), false));
        assert!(!r.is_ignored(Path::new("pkg/catalog.yaml"), false));
    }

    #[test]
    fn anchored_directory_only_and_negation() {
        let r = rules("/templates/\n**/*.json\n!keep.json\n");
        assert!(r.is_ignored(Path::new("templates"), true));
        assert!(!r.is_ignored(Path::new("pkg/templates"), true));
        assert!(r.is_ignored(Path::new("a/b/c.json"), false));
        assert!(!r.is_ignored(Path::new("a/keep.json"), false));
    }

    #[test]
    fn rules_apply_below_their_own_folder() {
        let mut r = IgnoreRules::default();
        r.add_file(Path::new("pkg"), "*.txt\n");
        assert!(r.is_ignored(Path::new("pkg/a.txt"), false));
        assert!(!r.is_ignored(Path::new("other/a.txt"), false));
    }
}
