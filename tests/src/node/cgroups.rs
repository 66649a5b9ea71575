//! The real node's cgroup root: `/e2e-node-<run id>` in every hierarchy the machine mounts.
//! kubelet puts its `kubepods` tree under it (its `cgroupRoot`), so everything the node makes
//! is in one place, which the cargo runner (`tests/assets/netns-runner.sh`) removes after the
//! test binary has exited, whatever happened to it.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};

const CGROUP_FS: &str = "/sys/fs/cgroup";

/// `/e2e-node-<run id>`, the run id being the one the cargo runner exports.
pub fn root_name() -> anyhow::Result<String> {
    let Some(id) = std::env::var_os("E2E_RUN_ID") else {
        bail!(
            "E2E_RUN_ID is not set: the real node runs only as root under the cargo runner \
             (tests/assets/netns-runner.sh), which removes its cgroups afterwards; run the \
             tests as root with `cargo test`"
        );
    };
    Ok(format!("/e2e-node-{}", id.to_string_lossy()))
}

/// Creates the root in every mounted hierarchy and returns its name for kubelet.
pub fn create_root() -> anyhow::Result<String> {
    let name = root_name()?;
    for hierarchy in hierarchies()? {
        let dir = hierarchy.join(name.trim_start_matches('/'));
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("creating the cgroup {}", dir.display()))?;
        // A v1 cpuset cgroup starts with no CPUs and no memory nodes, and takes no task
        // until it is given some: the parent's.
        for file in ["cpuset.cpus", "cpuset.mems"] {
            let parent = hierarchy.join(file);
            if parent.is_file() {
                let value = std::fs::read_to_string(&parent)?;
                std::fs::write(dir.join(file), value.trim())
                    .with_context(|| format!("writing {}", dir.join(file).display()))?;
            }
        }
    }
    Ok(name)
}

/// Every mounted hierarchy (a folder of /sys/fs/cgroup with a `cgroup.procs` file).
fn hierarchies() -> anyhow::Result<Vec<PathBuf>> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(CGROUP_FS).with_context(|| format!("reading {CGROUP_FS}"))? {
        let path = entry?.path();
        if path.join("cgroup.procs").is_file() && !is_link(&path) {
            found.push(path);
        }
    }
    if found.is_empty() {
        bail!("no cgroup hierarchy is mounted under {CGROUP_FS}");
    }
    found.sort();
    Ok(found)
}

fn is_link(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink())
}

/// The memory usage of the cgroup `path` (below the root), in bytes, from the v1 memory
/// controller.
pub fn memory_usage(path: &str) -> anyhow::Result<u64> {
    let file = Path::new(CGROUP_FS)
        .join("memory")
        .join(path.trim_start_matches('/'))
        .join("memory.usage_in_bytes");
    let text =
        std::fs::read_to_string(&file).with_context(|| format!("reading {}", file.display()))?;
    Ok(text.trim().parse()?)
}

/// The named counters of the cgroup `path`'s `memory.stat` (v1: `total_rss`, `total_cache`,
/// `total_shmem`, `total_mapped_file`, … with its descendants), in bytes.
pub fn memory_stat(path: &str) -> anyhow::Result<std::collections::BTreeMap<String, u64>> {
    let file = Path::new(CGROUP_FS)
        .join("memory")
        .join(path.trim_start_matches('/'))
        .join("memory.stat");
    let text =
        std::fs::read_to_string(&file).with_context(|| format!("reading {}", file.display()))?;
    text.lines()
        .map(|line| {
            let (name, value) = line
                .split_once(' ')
                .with_context(|| format!("{}: {line:?}", file.display()))?;
            Ok((name.to_string(), value.trim().parse()?))
        })
        .collect()
}
