//! Validation errors as a tree, printed the way opm prints them:
//!
//! ```text
//! invalid index:
//! └── invalid package "foo":
//!     └── invalid channel "stable":
//!         └── multiple channel heads found in graph: foo.v0.2.0, foo.v0.3.0
//! ```

use std::fmt;

/// A message with the problems found beneath it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ValidationTree {
    /// `invalid index`, `invalid package "p"`, … or a leaf's message.
    pub message: String,
    /// What is wrong beneath it.
    pub children: Vec<ValidationTree>,
}

impl ValidationTree {
    /// A node with no children yet.
    pub fn node(message: impl Into<String>) -> Self {
        ValidationTree {
            message: message.into(),
            children: Vec::new(),
        }
    }

    /// Adds a leaf message.
    pub fn push(&mut self, message: impl Into<String>) {
        self.children.push(ValidationTree::node(message));
    }

    /// Adds a subtree if it holds any problem.
    pub fn push_tree(&mut self, tree: Option<ValidationTree>) {
        if let Some(tree) = tree {
            self.children.push(tree);
        }
    }

    /// `Some(self)` if anything is wrong.
    pub fn into_option(self) -> Option<ValidationTree> {
        (!self.children.is_empty()).then_some(self)
    }

    /// Every leaf message, depth first.
    pub fn leaves(&self) -> Vec<String> {
        if self.children.is_empty() {
            return vec![self.message.clone()];
        }
        self.children
            .iter()
            .flat_map(ValidationTree::leaves)
            .collect()
    }

    fn write(&self, f: &mut fmt::Formatter<'_>, prefix: &str, connector: &str) -> fmt::Result {
        let colon = if self.children.is_empty() { "" } else { ":" };
        writeln!(f, "{prefix}{connector}{}{colon}", self.message)?;
        let child_prefix = match connector {
            "" => String::new(),
            "└── " => format!("{prefix}    "),
            _ => format!("{prefix}│   "),
        };
        for (i, child) in self.children.iter().enumerate() {
            let last = i + 1 == self.children.len();
            child.write(f, &child_prefix, if last { "└── " } else { "├── " })?;
        }
        Ok(())
    }
}

impl fmt::Display for ValidationTree {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut text = String::new();
        {
            struct Collect<'a>(&'a ValidationTree);
            impl fmt::Display for Collect<'_> {
                fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                    self.0.write(f, "", "")
                }
            }
            use std::fmt::Write;
            let _ = write!(text, "{}", Collect(self));
        }
        f.write_str(text.trim_end())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prints_like_opm() {
        let mut root = ValidationTree::node("invalid index");
        let mut package = ValidationTree::node("invalid package \"foo\"");
        let mut channel = ValidationTree::node("invalid channel \"stable\"");
        channel.push("multiple channel heads found in graph: a, b");
        package.push_tree(channel.into_option());
        package.push("default channel must be set");
        root.push_tree(package.into_option());
        assert_eq!(
            root.to_string(),
            "invalid index:\n└── invalid package \"foo\":\n    ├── invalid channel \"stable\":\n    │   └── multiple channel heads found in graph: a, b\n    └── default channel must be set"
        );
    }
}
