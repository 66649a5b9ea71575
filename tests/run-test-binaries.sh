#!/usr/bin/env bash
# Runs every test binary of the workspace, several at once, the longest first
# (tests/run-all.sh calls it once everything is built; docs/testing.md, "The budget").
#
#   tests/run-test-binaries.sh [CARGO_TEST_ARGS...]
#
# Each job is one `cargo test` of one target: a package's unit tests (`--lib --bins`), one
# integration test file (`--test NAME`), or the doc tests. Jobs are independent: each test
# binary runs in network, PID and mount namespaces of its own with its own TMPDIR
# (tests/assets/netns-runner.sh), and most of them spend their time waiting on a cluster, so
# running a few together fills the two cores instead of leaving them idle.
#
# Environment:
#   TEST_JOBS   how many jobs run at once (default 4; 1 runs them one after another)
#   TEST_LOGS   folder for one log per job (default target/test-logs, emptied first)
#   TEST_ONLY   space-separated job names to run instead of all (e.g. "e2e:release")
#   TEST_BUILT  a folder: when set, a job starts only once what it needs (see needed_by)
#               is built, which tests/run-all.sh shows by a file per item there: one per Go
#               program of tests/assets/build-go-assets.sh (GO_ASSETS_BUILT_DIR), `arm64`
#               for the cross-built programs, `all` once every Go program is (tests/run-all.sh
#               on a new machine: the Go programs build while tests run)
#
# The arguments are given to every `cargo test` (the build flags of run-all.sh, so that no
# job rebuilds anything). Each job's log is kept; a failing job's tail is printed as soon as
# it ends. At the end every test executable cargo built must have been run by some job, or
# the run fails: a test file no job names cannot go unrun.
set -uo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
jobs_at_once=${TEST_JOBS:-4}
logs=${TEST_LOGS:-$repo/target/test-logs}
cargo_args=("$@")
[[ $jobs_at_once =~ ^[1-9][0-9]*$ ]] || { echo "error: TEST_JOBS must be a positive number, not '$jobs_at_once'" >&2; exit 2; }
rm -rf "$logs"
mkdir -p "$logs"

# Seconds each job took on the last measured run (docs/testing.md, "The budget"); only the
# order depends on them: longest first, so that the longest job is not the last to start.
# Jobs not named here count as 10 s.
expected_seconds() {
  case $1 in
    redis-operator:olm_on_a_real_node) echo 700 ;;
    redis-operator:olm_v1_install_on_a_real_node) echo 266 ;;
    redis-operator:olm_v1_on_a_real_node) echo 218 ;;
    redis-operator:olm_v1_upgrade_safety_on_a_real_node) echo 175 ;;
    redis-operator:run_on_a_real_node) echo 310 ;;
    redis-operator:disconnected_on_a_real_node) echo 245 ;;
    redis-operator:run_vs_operator_sdk_on_a_real_node) echo 180 ;;
    redis-operator:run_olm_v1_on_a_real_node) echo 191 ;;
    e2e:generate_conformance) echo 118 ;;
    e2e:bundle_validate_conformance) echo 161 ;;
    redis-operator:faults) echo 111 ;;
    redis-operator:redis_on_a_real_node) echo 200 ;;
    e2e:catalog_conformance) echo 169 ;;
    e2e:serve_conformance) echo 193 ;;
    e2e:catalogd_http) echo 72 ;;
    redis-operator:lifecycle) echo 49 ;;
    e2e:real_node) echo 75 ;;
    e2e:crash_safety) echo 139 ;;
    e2e:audit_corpus) echo 25 ;;
    e2e:serve_behaviour) echo 23 ;;
    e2e:release) echo 21 ;;
    e2e:yaml_fast_differential) echo 21 ;;
    e2e:catalog_graph) echo 20 ;;
    e2e:catalog_templates) echo 18 ;;
    redis-operator:resilience) echo 18 ;;
    e2e:bundle_images) echo 17 ;;
    e2e:multi_arch) echo 45 ;;
    *) echo 10 ;;
  esac
}

# What each job needs built besides the workspace: pinned Go programs
# (tests/assets/build-go-assets.sh, one name per cache entry), read from the programs its test
# file and the harness modules it uses ask tests/src/assets.rs for (none, the clusters' — etcd,
# Kubernetes, kwok, CoreDNS, OLM v0, opm and grpc_health_probe, built first — or those and
# more), and `arm64`, the cross-built programs (tests/run-all.sh). On a new machine a job
# starts as soon as these are built, so the tests that need no Go program run beside the Go
# builds, and each later group of jobs starts with its own program instead of waiting for
# the last one. A job named here that needs another program fails on a new machine, saying
# which program is missing, so a cold run shows a wrong entry (the jobs named as needing none
# are checked with an empty asset cache, docs/testing.md); a job not named here waits for
# everything (`all arm64`).
clusters="etcd kubernetes kwok olm opm coredns grpc-health-probe"
needed_by() {
  case $1 in
    workspace:unit | workspace:doc | bundle-tool:* | catalog-server:* | \
    e2e:audit_corpus | e2e:check_upgrade_history | e2e:check_upgrade_pull | e2e:crash_safety | \
    e2e:isolation | e2e:oci_registry | e2e:olm_v1_rbac_corpus | e2e:registry_mirrors | \
    e2e:release | e2e:yaml_fast_differential) echo "" ;;
    # its releases are linux/amd64 + linux/arm64 image indexes
    redis-operator:olm_on_a_real_node) echo "$clusters arm64" ;;
    redis-operator:redis_on_a_real_node | \
    redis-operator:run_on_a_real_node | redis-operator:disconnected_on_a_real_node | \
    e2e:serve_conformance | e2e:catalog_conformance | e2e:real_node) echo "$clusters" ;;
    # operator-controller and catalogd v1.5.1, cert-manager (rendered by helm)
    redis-operator:olm_v1_install_on_a_real_node | redis-operator:olm_v1_upgrade_safety_on_a_real_node | \
    redis-operator:run_olm_v1_on_a_real_node) echo "$clusters olm-v1 helm cert-manager" ;;
    # catalogd v1.11.0 with cert-manager
    redis-operator:olm_v1_on_a_real_node) echo "$clusters helm cert-manager catalogd" ;;
    e2e:catalogd_http) echo "$clusters catalogd" ;;
    redis-operator:run_vs_operator_sdk_on_a_real_node) echo "$clusters operator-sdk" ;;
    e2e:generate_conformance | e2e:bundle_validate_conformance | e2e:reference_tools | \
    e2e:token_registry) echo "$clusters operator-sdk" ;;
    e2e:multi_arch) echo "$clusters operator-sdk arm64" ;;
    e2e:check_upgrade_oracle) echo "crd-preflight" ;;
    e2e:check_upgrade_olm_oracle) echo "olm-crd-oracle" ;;
    *) echo "all arm64" ;;
  esac
}

# Whether job NAME may start now.
may_start() {
  [ -n "${TEST_BUILT:-}" ] || return 0
  local item
  for item in $(needed_by "$1"); do
    case $item in
      arm64 | all) ;;
      *) [ -e "$TEST_BUILT/all" ] && continue ;;
    esac
    [ -e "$TEST_BUILT/$item" ] || return 1
  done
}

# The jobs: name, then the cargo test arguments that select it. Every job says
# `--workspace`: cargo unifies dependency features over the packages a command selects, so
# `-p PACKAGE` would build parts of the tree again with other features (measured: 7 minutes
# for the first jobs). Integration test names are unique across the workspace (checked here).
declare -A selector=()
selector["workspace:unit"]="--workspace --lib --bins"
selector["workspace:doc"]="--workspace --doc"
for package_dir in catalog-server bundle-tool operator tests; do
  package=$(sed -n 's/^name = "\(.*\)"$/\1/p' "$package_dir/Cargo.toml" | head -1)
  [ -n "$package" ] || { echo "error: no package name in $package_dir/Cargo.toml" >&2; exit 1; }
  for file in "$package_dir"/tests/*.rs; do
    name=$(basename "$file" .rs)
    for existing in "${!selector[@]}"; do
      [ "${existing#*:}" != "$name" ] || { echo "error: two integration tests are named $name ($existing and $package); cargo test --test $name would run both" >&2; exit 1; }
    done
    selector["$package:$name"]="--workspace --test $name"
  done
done

names=("${!selector[@]}")
if [ -n "${TEST_ONLY:-}" ]; then
  for name in $TEST_ONLY; do
    [ -n "${selector[$name]:-}" ] || { echo "error: TEST_ONLY names '$name', which is no job (jobs: ${names[*]})" >&2; exit 2; }
  done
  read -r -a names <<< "$TEST_ONLY"
fi
mapfile -t order < <(for name in "${names[@]}"; do echo "$(expected_seconds "$name") $name"; done | sort -k1,1nr -k2 | cut -d' ' -f2)

# Host-wide state that concurrent test binaries would otherwise race on:
# - kubelet sets these sysctls at start-up; a runner that starts while another binary's
#   kubelet has them changed would save the changed values as the machine's. They are read
#   once here, handed to every runner and the node harness, and checked at the end.
# - the fixed paths each real node mounts a tmpfs on in its own mount namespace: a runner
#   removes the mount points it had to create, and removing one while another binary's node
#   has a mount on it would detach that mount. They are made here, and removed at the end.
sysctls="vm.overcommit_memory kernel.panic kernel.panic_on_oops"
saved=""
for key in $sysctls; do saved="$saved $key=$(sysctl -n "$key")"; done
export E2E_HOST_SYSCTLS="${saved# }"
made_paths=""
if [ "$(id -u)" = 0 ]; then
  for path in /run/containerd /run/netns /var/lib/cni /var/log/pods /var/log/containers; do
    [ -e "$path" ] || { mkdir -p "$path" && made_paths="$made_paths $path"; }
  done
fi
# Runs on exit and keeps the script's status: a failing last command inside an EXIT trap
# would otherwise become the exit status of a run whose tests all passed.
put_host_back() {
  local status=$? pair path
  for pair in $E2E_HOST_SYSCTLS; do
    [ "$(sysctl -n "${pair%=*}")" = "${pair#*=}" ] || sysctl -q -w "$pair" >/dev/null || true
  done
  for path in $made_paths; do
    rmdir "$path" 2>/dev/null || echo "left in place, not empty: $path" >&2
  done
  exit "$status"
}
trap put_host_back EXIT
trap 'exit 130' INT TERM

declare -A pid_of=() started_at=()
failed=()
passed_jobs=0
now() { date +%s; }

# finish NAME STATUS: reports one finished job.
finish() {
  local name=$1 status=$2 took=$(( $(now) - ${started_at[$1]} ))
  local log="$logs/${name//:/__}.log"
  local results
  results=$(sed -n 's/^test result: [A-Za-z]*\. \([0-9]*\) passed; \([0-9]*\) failed.*/\1 \2/p' "$log" |
    awk '{ p += $1; f += $2; n++ } END { if (n) printf "%d passed, %d failed (%d binaries)", p, f, n }')
  if [ "$status" = 0 ]; then
    passed_jobs=$((passed_jobs + 1))
    printf 'ok     %-48s %4ss  %s\n' "$name" "$took" "${results:-no test result line}"
  else
    failed+=("$name")
    printf 'FAILED %-48s %4ss  exit %s\n' "$name" "$took" "$status"
    echo "---- last 120 lines of $log ----"
    tail -n 120 "$log"
    echo "---- end of $name ----"
  fi
}

start_job() {
  local name=$1
  local log="$logs/${name//:/__}.log"
  started_at[$name]=$(now)
  # shellcheck disable=SC2086
  cargo test "${cargo_args[@]}" ${selector[$name]} --no-fail-fast > "$log" 2>&1 &
  pid_of[$name]=$!
}

echo "running ${#order[@]} test jobs, $jobs_at_once at once (logs in $logs)"
run_start=$(now)
remaining=("${order[@]}")
while [ "${#remaining[@]}" -gt 0 ] || [ "${#pid_of[@]}" -gt 0 ]; do
  # Start, longest first, the jobs that may start, as long as there is room.
  waiting=()
  for name in "${remaining[@]}"; do
    if [ "${#pid_of[@]}" -lt "$jobs_at_once" ] && may_start "$name"; then
      start_job "$name"
    else
      waiting+=("$name")
    fi
  done
  remaining=("${waiting[@]}")
  if [ "${#remaining[@]}" -gt 0 ] && [ "${#pid_of[@]}" -lt "$jobs_at_once" ]; then
    # Room, but the jobs left wait for their Go programs: look again in a moment.
    sleep 2
  else
    wait -n
  fi
  for name in "${!pid_of[@]}"; do
    if ! kill -0 "${pid_of[$name]}" 2>/dev/null; then
      wait "${pid_of[$name]}"
      finish "$name" "$?"
      unset "pid_of[$name]"
    fi
  done
done

# Every test executable cargo built for these targets must have run in some job.
if [ -z "${TEST_ONLY:-}" ]; then
  built=$(cargo test "${cargo_args[@]}" --workspace --no-run 2>&1 | sed -n 's/.*Executable .*(\(.*\))$/\1/p' | sort -u)
  ran=$(cat "$logs"/*.log | sed -n 's/^ *Running .*(\(.*\))$/\1/p' | sort -u)
  unrun=$(comm -23 <(echo "$built") <(echo "$ran"))
  if [ -z "$built" ]; then
    echo "error: cargo listed no test executable (cargo test --no-run)" >&2
    failed+=("listing")
  elif [ -n "$unrun" ]; then
    echo "error: test executables that no job ran:" >&2
    echo "$unrun" >&2
    failed+=("unrun")
  fi
fi

sum() { awk '{ total += $1 } END { print total + 0 }'; }
passed=$(cat "$logs"/*.log | sed -n 's/^test result: .*\. \([0-9]*\) passed;.*/\1/p' | sum)
failed_tests=$(cat "$logs"/*.log | sed -n 's/^test result: .*; \([0-9]*\) failed;.*/\1/p' | sum)
echo
echo "test jobs: $passed_jobs of ${#order[@]} passed in $(( $(now) - run_start ))s"
echo "tests: $passed passed, $failed_tests failed"
[ "$passed_jobs" = "${#order[@]}" ] || [ "${#failed[@]}" -gt 0 ] || failed+=("unaccounted")
if [ "${#failed[@]}" -gt 0 ]; then
  echo "failed: ${failed[*]}" >&2
  exit 1
fi
