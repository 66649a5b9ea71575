#!/usr/bin/env bash
# cargo's target runner (.cargo/config.toml). Test and bench binaries (target/*/deps/*) run in
# a network namespace of their own that has only a loopback interface: OLM, opm and the
# registries they start bind every interface, and test traffic must never leave the machine.
# Other binaries (`cargo run`) run as they are.
set -euo pipefail
case "$1" in
  */deps/*) ;;
  *) exec "$@" ;;
esac
if [ -n "${E2E_IN_NETNS:-}" ]; then
  exec "$@"
fi
export E2E_IN_NETNS=1
inner='ip link set lo up && exec "$@"'
if [ "$(id -u)" = 0 ]; then
  exec unshare --net -- sh -c "$inner" sh "$@"
fi
# Unprivileged: a user namespace owns the network namespace.
exec unshare --net --map-root-user -- sh -c "$inner" sh "$@" || {
  echo "netns-runner: cannot create a network namespace (unshare --net); the end-to-end tests need one" >&2
  exit 1
}
