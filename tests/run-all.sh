#!/usr/bin/env bash
# The project's test command (README; .ci/run calls it): installs what is missing, builds the
# pinned Go programs into the cache (once), then runs every test of the workspace, the
# end-to-end tests on the real control plane included. Nothing is skipped: a missing
# prerequisite stops the run with a message that says what to install.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS

say() { printf '\n==> [%ss] %s\n' "$((SECONDS - start))" "$*"; }
fail() { printf 'error: %s\n' "$*" >&2; exit 1; }

say "system packages"
# program:debian-package
# strace: the crash-safety harness (tests/tests/crash_safety.rs) kills bundle-tool at chosen syscalls.
# g++: libfuzzer-sys compiles libFuzzer; time: the fuzzers' CPU seconds (fuzz/run.sh).
# The real node: containerd, runc, the CNI plugins, iptables and conntrack for kube-proxy,
# busybox-static for test pods, gcc with the static C library for the pause image, Redis and
# its Prometheus exporter (the sample RedisCluster OLM's operator reconciles has metrics on).
# Multi-platform images: gcc-aarch64-linux-gnu (with its static C library) links the arm64
# programs, qemu-user-static runs them (called by name: no binfmt registration), podman is
# the container tool operator-sdk's multiarch validator shells out to.
needed="docker-registry:docker-registry skopeo:skopeo umoci:umoci htpasswd:apache2-utils ip:iproute2 unshare:util-linux chromium:chromium \
  containerd:containerd runc:runc /usr/lib/cni/bridge:containernetworking-plugins iptables:iptables conntrack:conntrack \
  /bin/busybox:busybox-static gcc:gcc /usr/lib/x86_64-linux-gnu/libc.a:libc6-dev redis-server:redis-server \
  /usr/bin/prometheus-redis-exporter:prometheus-redis-exporter strace:strace g++:g++ /usr/bin/time:time \
  aarch64-linux-gnu-gcc:gcc-aarch64-linux-gnu /usr/aarch64-linux-gnu/lib/libc.a:libc6-dev-arm64-cross \
  qemu-aarch64-static:qemu-user-static podman:podman"
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
# The arm64 programs of the multi-platform images are cross-built (docs/release.md).
if ! rustup target list --installed 2>/dev/null | grep -qx aarch64-unknown-linux-gnu; then
  rustup target add aarch64-unknown-linux-gnu \
    || fail "rustup target add aarch64-unknown-linux-gnu failed: the multi-platform tests need Rust's standard library for arm64 (install it, or a toolchain that has it)"
fi

# The pinned Go programs build in the background while Rust compiles: both are CPU-bound,
# but each has long stretches on one core (downloads, linking, the largest crates), and a
# cold machine spends ~20 minutes on Go. Its log is printed if it fails.
mkdir -p target
go_log=target/go-assets.log
say "Go programs (etcd, Kubernetes, kwok, OLM, opm, operator-sdk, CoreDNS, catalogd, cert-manager, helm): building into the cache in the background (log: $go_log)"
# Background work runs in a session of its own (setsid), so that the whole of it, compilers
# included, can be stopped as one group: whatever way this script ends, nothing it started
# goes on without it.
background=()
# The script's own status is kept: a group that has already ended makes `kill` fail, and
# an EXIT trap's last failing command would otherwise become the script's exit status.
trap 'status=$?; for group in "${background[@]}"; do kill -- "-$group" 2>/dev/null || true; done; exit "$status"' EXIT
# It makes a file per program in $built once that program is in the cache (built now or
# before); the arm64 cross-build below adds "arm64", and "all" follows the last Go program.
# Each test job starts as soon as what it needs is there (tests/run-test-binaries.sh,
# needed_by), while the rest builds.
built=$PWD/target/built
rm -rf "$built"
mkdir -p "$built"
GO_ASSETS_BUILT_DIR=$built setsid tests/assets/build-go-assets.sh > "$go_log" 2>&1 &
go_pid=$!
background+=("$go_pid")

say "format"
cargo fmt --all -- --check || fail "cargo fmt --all would change files: run it and commit"
# The fuzz crate is a workspace of its own with its own lock file, built much later (in the
# background, after the main build): a dependency change that leaves it stale would only
# fail there, at the very end of a run. Checked now, without building anything.
cargo tree --locked --offline -q --manifest-path fuzz/Cargo.toml > /dev/null 2>&1 ||
  cargo tree --locked -q --manifest-path fuzz/Cargo.toml > /dev/null ||
  fail "fuzz/Cargo.lock is out of date: run cargo update -w --manifest-path fuzz/Cargo.toml and commit it"

# One Rust build for everything the tests run: the workspace's test, bench and example
# targets and its two programs, statically linked (`--target` keeps RUSTFLAGS away from build
# scripts and proc macros). The real-node tests package the operator with `bundle-tool build
# --binary` as a release does, and the catalog images OLM runs have the static catalog-server
# as their server; the other tests use the same binaries. Clippy lints the workspace's own
# crates while they are built (clippy-driver as the workspace's compiler wrapper, as fuzz/run.sh
# does), so the ~300 dependencies are compiled once, not once more in check mode. Before,
# clippy, a dynamic build and a static one compiled the dependency tree three times.
command -v clippy-driver >/dev/null || fail "clippy-driver is missing: rustup component add clippy"
export RUSTFLAGS="-C target-feature=+crt-static"
export RUSTC_WORKSPACE_WRAPPER
RUSTC_WORKSPACE_WRAPPER=$(command -v clippy-driver)
export CLIPPY_ARGS="-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__"
# A fresh clone builds once: incremental state would never be read again, and it was 7.1 of
# the 16 GB the target folder took (measured 2026-12-04).
export CARGO_INCREMENTAL=0
build_args=(--locked --target x86_64-unknown-linux-gnu)
say "build and lint (clippy -D warnings on the workspace's crates; statically linked)"
# (The programs come out of this build too, as the integration tests' binaries: a separate
# `cargo build -p …` would resolve features without the dev-dependencies and rebuild part of
# the tree.)
cargo test "${build_args[@]}" --workspace --all-targets --no-run
for program in bundle-tool catalog-server redis-operator; do
  [ -x "target/x86_64-unknown-linux-gnu/debug/$program" ] || fail "the build made no target/x86_64-unknown-linux-gnu/debug/$program"
done

# The two programs images carry, for arm64, statically linked like the x86-64 ones (the
# catalog server and the operator): the arm64 images of tests/tests/multi_arch.rs and of
# olm_on_a_real_node's releases carry them and run them under qemu-aarch64-static.
# Only the two binaries (no tests), linked by Debian's aarch64-linux-gnu-gcc (.cargo/config.toml);
# the same environment as the build above, so the host's build scripts and proc macros are
# reused. Before the tests, not beside them: in a target folder of its own (a cargo command
# holds the host build folder while it builds, so in the shared one the test jobs would wait
# for it) it built the host's part again and, beside four test jobs, took over ten minutes,
# holding back the longest job that needs it (measured 2026-12-08, docs/testing.md).
say "cross-build for arm64 (catalog-server, redis-operator)"
cargo build "${build_args[@]/x86_64-unknown-linux-gnu/aarch64-unknown-linux-gnu}" --bin catalog-server --bin redis-operator
for program in catalog-server redis-operator; do
  [ -x "target/aarch64-unknown-linux-gnu/debug/$program" ] || fail "the cross-build made no target/aarch64-unknown-linux-gnu/debug/$program"
done
export E2E_AARCH64_BIN_DIR="$PWD/target/aarch64-unknown-linux-gnu/debug"
touch "$built/arm64"

# The fuzz targets' short run (fuzz/run.sh), only when FUZZ_SECONDS names its length: every
# target for that many seconds, after an instrumented build of bundle-tool and its
# dependencies in fuzz/target (about 12 CPU-minutes cold). It is not part of the default run:
# on a fresh clone its build outlasted the test binaries by 339 s and its 12 CPU-minutes were
# an eighth of a cold run's CPU (docs/testing.md, "The budget"). Seconds of fuzzing find
# crashes in a target that is new (findings 1 and 2 in docs/testing.md, "Fuzzing"), which is
# when its author runs fuzz/run.sh; in the default run the short run never found one. What
# the targets check runs on every committed input in the normal build
# (bundle-tool/tests/fuzz_regressions.rs). With FUZZ_SECONDS it runs beside the test binaries
# at the lowest priority, on the CPU they leave while they wait on clusters.
fuzz_seconds=${FUZZ_SECONDS:-0}
fuzz_pid=""
fuzz_log=target/fuzz-smoke.log
if [ "$fuzz_seconds" != 0 ]; then
  say "fuzzing: a short run of every fuzz target, ${fuzz_seconds}s each, in the background (fuzz/run.sh; log: $fuzz_log)"
  env -u RUSTFLAGS -u RUSTC_WORKSPACE_WRAPPER -u CLIPPY_ARGS FUZZ_PROFILE=fuzz-short FUZZ_MAX_SEEDS=50 FUZZ_NICE=19 \
    BUNDLE_TOOL=target/x86_64-unknown-linux-gnu/debug/bundle-tool \
    setsid nice -n 19 fuzz/run.sh "$fuzz_seconds" > "$fuzz_log" 2>&1 &
  fuzz_pid=$!
  background+=("$fuzz_pid")
else
  say "fuzzing: no short run (FUZZ_SECONDS=5 in front adds one; fuzz/run.sh runs campaigns); every committed fuzz input is tested below"
fi

# On a new machine the Go programs are still building: each test job starts once those it
# needs are built (none for most of them; the clusters' for the longest, which waits on its
# cluster most of its ten minutes), the others as their programs come
# (tests/run-test-binaries.sh, TEST_BUILT).
say "tests (unit, integration, end-to-end on the real control plane), several test binaries at once"
TEST_BUILT=$built setsid tests/run-test-binaries.sh "${build_args[@]}" &
tests_pid=$!
background+=("$tests_pid")
if ! wait "$go_pid"; then
  tail -n 60 "$go_log"
  fail "building the Go programs failed (the whole log: $go_log)"
fi
touch "$built/all"
say "Go programs: all in the cache"
grep -E '^\[build-go-assets\] built ' "$go_log" || echo "(all Go programs were cached)"
tests_status=0
wait "$tests_pid" || tests_status=$?

if [ -n "$fuzz_pid" ]; then
  say "fuzzing: waiting for the short run"
  if wait "$fuzz_pid"; then
    tail -n 12 "$fuzz_log"
  else
    tail -n 60 "$fuzz_log"
    fail "the fuzz smoke run failed (the whole log: $fuzz_log)"
  fi
fi
[ "$tests_status" = 0 ] || fail "tests failed (logs in target/test-logs)"

say "all tests passed in $((SECONDS - start))s"
