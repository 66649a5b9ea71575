#!/usr/bin/env bash
# cargo's target runner (.cargo/config.toml). Test and bench binaries (target/*/deps/*) run in
# namespaces of their own: a network namespace that starts with only loopback (OLM, opm and
# the registries bind every interface, and test traffic must never leave the machine), and,
# as root, a PID and a private mount namespace too, so that everything the real node starts
# (containerd, its shims, containers, kubelet's mounts) dies and vanishes with the test binary.
# Other binaries (`cargo run`) run as they are.
#
# After the test binary exits, whatever happened to it, the runner puts the host back: the
# sysctls kubelet sets host-wide are restored, and the cgroups the real node made are removed.
set -uo pipefail
case "$1" in
  */deps/*) ;;
  *) exec "$@" ;;
esac
if [ -n "${E2E_IN_NETNS:-}" ]; then
  exec "$@"
fi
export E2E_IN_NETNS=1
inner='ip link set lo up && exec "$@"'
if [ "$(id -u)" != 0 ]; then
  # Unprivileged: a user namespace owns the network namespace. No real node without root.
  exec unshare --net --map-root-user -- sh -c "$inner" sh "$@" || {
    echo "netns-runner: cannot create a network namespace (unshare --net); the end-to-end tests need one" >&2
    exit 1
  }
fi

# remove_node_cgroups ID: rmdir a run's node cgroups leaf first. Their processes died with
# that run's PID namespace; a cgroup that still has tasks refuses, which is reported.
remove_node_cgroups() {
  local root dir attempt
  for root in /sys/fs/cgroup/*/; do
    dir="${root}e2e-node-$1"
    [ -d "$dir" ] || continue
    for attempt in 1 2 3 4 5 6 7 8 9 10; do
      find "$dir" -depth -type d -exec rmdir {} + 2>/dev/null
      [ -d "$dir" ] || break
      sleep 0.2
    done
    [ -d "$dir" ] && echo "netns-runner: could not remove the cgroup $dir" >&2
  done
}

# What an earlier runner left because it was killed itself (say, with cargo): its cgroups
# and its folder, both named after its PID, once no process has that PID.
for stale in /sys/fs/cgroup/pids/e2e-node-* "${TMPDIR:-/tmp}"/e2e-run-*; do
  [ -e "$stale" ] || continue
  case $stale in
    /sys/fs/cgroup/*) id=${stale##*/e2e-node-} ;;
    *) id=${stale##*/e2e-run-}; id=${id%%-*} ;;
  esac
  case $id in ''|*[!0-9]*) continue ;; esac
  kill -0 "$id" 2>/dev/null && continue
  case $stale in
    /sys/fs/cgroup/*) remove_node_cgroups "$id" ;;
    *) [ -e "$stale/kept" ] || rm -rf "$stale" ;;
  esac
done

# The real node's cgroups are named after this id (tests/src/node/cgroups.rs reads it).
export E2E_RUN_ID="$$"
# Every temporary folder of the binary (control plane, registries, the node's containerd
# store) goes in one folder, removed afterwards: the shared control plane lives in a static
# that is never dropped, so its folders would otherwise stay.
scratch=$(mktemp -d "${TMPDIR:-/tmp}/e2e-run-$$-XXXXXX")
export TMPDIR="$scratch"
# bundle-tool's layer cache (bundle-tool/src/image/layer_cache.rs) in there too, so that tests
# and benches leave nothing in the user's ~/.cache.
export BUNDLE_TOOL_CACHE_DIR="$scratch/bundle-tool-cache"
# kubelet sets these at start-up; they are not namespaced. When several test binaries run at
# once (tests/run-test-binaries.sh), another one's kubelet may have them changed right now:
# that script read the machine's values before any binary started and hands them down.
sysctls="vm.overcommit_memory kernel.panic kernel.panic_on_oops"
saved=""
if [ -n "${E2E_HOST_SYSCTLS:-}" ]; then
  saved=" $E2E_HOST_SYSCTLS"
else
  for key in $sysctls; do saved="$saved $key=$(sysctl -n "$key")"; done
fi
# The tests check that the harness put them back while the node runs.
export E2E_HOST_SYSCTLS="${saved# }"

# Paths containerd, the CNI plugins and kubelet always use; the real node mounts a tmpfs on
# each in the test's mount namespace (tests/src/node/mod.rs), creating the mount point when
# the machine has none. Those mount points are removed again below.
fixed_paths="/run/containerd /run/netns /var/lib/cni /var/log/pods /var/log/containers"
absent=""
for path in $fixed_paths; do [ -e "$path" ] || absent="$absent $path"; done

unshare --net --pid --fork --mount --propagation private --mount-proc -- sh -c "$inner" sh "$@"
status=$?

for pair in $saved; do
  key=${pair%=*}
  [ "$(sysctl -n "$key")" = "${pair#*=}" ] || sysctl -q -w "$pair" >/dev/null
done
# The PID namespace is gone, and every process of the node with it.
remove_node_cgroups "$E2E_RUN_ID"
for path in $absent; do rmdir "$path" 2>/dev/null; done
if [ -n "${E2E_KEEP_DIR:-}" ]; then
  touch "$scratch/kept"
  echo "netns-runner: E2E_KEEP_DIR is set; the test binary's folders are kept in $scratch" >&2
else
  rm -rf "$scratch"
fi
exit "$status"
