#!/usr/bin/env bash
# The project's test command (README; .ci/run calls it): installs what is missing, builds the
# pinned Go programs into the cache (once), then runs every test of the workspace, the
# end-to-end tests on the real control plane included. Nothing is skipped: a missing
# prerequisite stops the run with a message that says what to install.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS

say() { printf '\n==> %s\n' "$*"; }
fail() { printf 'error: %s\n' "$*" >&2; exit 1; }

say "system packages"
# program:debian-package
# strace: the crash-safety harness (tests/tests/crash_safety.rs) kills bundle-tool at chosen syscalls.
# g++: libfuzzer-sys compiles libFuzzer; time: the fuzzers' CPU seconds (fuzz/run.sh).
# The real node: containerd, runc, the CNI plugins, iptables and conntrack for kube-proxy,
# busybox-static for test pods, gcc with the static C library for the pause image, Redis and
# its Prometheus exporter (the sample RedisCluster OLM's operator reconciles has metrics on).
needed="docker-registry:docker-registry skopeo:skopeo umoci:umoci htpasswd:apache2-utils ip:iproute2 unshare:util-linux chromium:chromium \
  containerd:containerd runc:runc /usr/lib/cni/bridge:containernetworking-plugins iptables:iptables conntrack:conntrack \
  /bin/busybox:busybox-static gcc:gcc /usr/lib/x86_64-linux-gnu/libc.a:libc6-dev redis-server:redis-server \
  /usr/bin/prometheus-redis-exporter:prometheus-redis-exporter strace:strace g++:g++ /usr/bin/time:time"
missing=""
for pair in $needed; do
  program=${pair%%:*}
  if [ "${program#/}" != "$program" ]; then
    [ -e "$program" ] || missing="$missing ${pair#*:}"
  else
    command -v "$program" >/dev/null 2>&1 || missing="$missing ${pair#*:}"
  fi
done
if [ -n "$missing" ]; then
  echo "installing:$missing"
  if [ "$(id -u)" = 0 ]; then apt_get="apt-get"; elif command -v sudo >/dev/null; then apt_get="sudo apt-get"; else
    fail "missing Debian packages:$missing (install them, e.g. apt-get install$missing)"
  fi
  DEBIAN_FRONTEND=noninteractive $apt_get update -qq || fail "apt-get update failed; install by hand:$missing"
  # shellcheck disable=SC2086
  DEBIAN_FRONTEND=noninteractive $apt_get install -y -qq $missing >/dev/null || fail "apt-get install failed:$missing"
fi
command -v cargo >/dev/null || fail "cargo is missing: install Rust (1.89 or newer) with rustup"

say "Go programs (etcd, Kubernetes, kwok, OLM, opm, operator-sdk, CoreDNS, catalogd, cert-manager, helm) into the cache"
tests/assets/build-go-assets.sh

say "format and lints"
cargo fmt --all -- --check || fail "cargo fmt --all would change files: run it and commit"
cargo clippy --workspace --all-targets --locked -- -D warnings
# The catalog conformance tests run the bundle-tool binary beside opm.
cargo build --locked -p bundle-tool -p redis-operator
# The operator's image in the real-node tests is `bundle-tool build --binary` of a statically
# linked build, as a release makes it, and the catalog image's server is a statically linked
# bundle-tool (their own folder under target/, so no rebuild of the rest).
RUSTFLAGS="-C target-feature=+crt-static" cargo build --locked -p redis-operator --bin redis-operator -p bundle-tool --bin bundle-tool --target x86_64-unknown-linux-gnu

# The fuzz targets' short run (fuzz/run.sh): every target for FUZZ_SECONDS (default 5),
# after an instrumented build of bundle-tool and its dependencies in fuzz/target (about 12
# CPU-minutes cold, 6 min 13 s on two free cores; docs/testing.md, Fuzzing). FUZZ_SECONDS=0
# leaves it out, and says so; the inputs every campaign found are also checked by
# bundle-tool/tests/fuzz_regressions.rs below.
fuzz_seconds=${FUZZ_SECONDS:-5}
if [ "$fuzz_seconds" != 0 ]; then
  say "fuzzing: a short run of every fuzz target, ${fuzz_seconds}s each (fuzz/run.sh; docs/testing.md, Fuzzing)"
  FUZZ_PROFILE=fuzz-short FUZZ_MAX_SEEDS=50 BUNDLE_TOOL=target/debug/bundle-tool fuzz/run.sh "$fuzz_seconds"
else
  say "fuzzing: left out by FUZZ_SECONDS=0; the regression inputs are tested below"
fi

say "tests (unit, integration, end-to-end on the real control plane)"
cargo test --workspace --locked --no-fail-fast

say "all tests passed in $((SECONDS - start))s"
