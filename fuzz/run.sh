#!/usr/bin/env bash
# Builds the libFuzzer targets of fuzz/ on the stable toolchain and runs each for SECONDS
# (docs/testing.md, "Fuzzing"). Fails, naming the target and the input file, on any crash,
# timeout (an input running over 1 s), or allocation past the limits below.
#
#   fuzz/run.sh SECONDS [TARGET...]        every target when none is named
#
# Environment:
#   FUZZ_PROFILE   cargo profile of the build: `release` (default; the campaigns) or
#                  `fuzz-short` (opt-level 1: cheaper to build, for tests/run-all.sh)
#   FUZZ_CORPUS    the shared test corpus (default: ../shared/corpus beside the repository)
#   FUZZ_WORK      folder for the seed corpora, what the runs add, crash files and logs
#                  (default: a new temporary folder, removed on success)
#   FUZZ_NICE      nice level of the runs (default 0; the long campaigns use 19)
#   FUZZ_MAX_SEEDS at most this many corpus files a target is seeded with (default 400; the
#                  hand-made seeds of fuzz/seeds/ come on top)
#   BUNDLE_TOOL    a built bundle-tool, to render the corpus catalogs as JSON seeds (default:
#                  target/debug/bundle-tool of the repository, built if missing)
set -euo pipefail
fuzz_dir=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$fuzz_dir")
fail() { printf 'fuzz: error: %s\n' "$*" >&2; exit 1; }

[ $# -ge 1 ] || fail "usage: fuzz/run.sh SECONDS [TARGET...]"
seconds=$1
shift
[[ $seconds =~ ^[0-9]+$ ]] && [ "$seconds" -gt 0 ] || fail "SECONDS must be a positive whole number, not '$seconds'"
all_targets="fbc_load yaml_differential json_differential manifest_csv version_range image_ref tar_unpack grpc_request semver_template"
targets=${*:-$all_targets}
for target in $targets; do
  [[ " $all_targets " == *" $target "* ]] || fail "unknown target '$target' (targets: $all_targets)"
done
profile=${FUZZ_PROFILE:-release}
corpus=${FUZZ_CORPUS:-$repo/../shared/corpus}
max_seeds=${FUZZ_MAX_SEEDS:-400}
nice_level=${FUZZ_NICE:-0}

# Limits every run is held to (docs/testing.md): one input at most 1 s; at most 2048 MiB
# resident; no single allocation (malloc) over 512 MiB; inputs of at most 64 KiB.
limits=(-timeout=1 -rss_limit_mb=2048 -malloc_limit_mb=512 -max_len=65536)

# Prerequisites: what is missing is named with what to install.
command -v cargo >/dev/null || fail "cargo is missing: install Rust (stable, 1.89 or newer) with rustup"
[ -x /usr/bin/time ] || fail "/usr/bin/time is missing: install the Debian package time (apt-get install time)"
command -v c++ >/dev/null || command -v g++ >/dev/null || command -v clang++ >/dev/null ||
  fail "no C++ compiler: libfuzzer-sys compiles libFuzzer (install g++, e.g. apt-get install g++)"
[ -d "$corpus/catalogs" ] && [ -d "$corpus/bundles" ] ||
  fail "the test corpus is not at $corpus (set FUZZ_CORPUS; see its SOURCE.md)"

# The sancov instrumentation libFuzzer feeds on, as codegen flags (stable rustc has them;
# cargo-fuzz passes the same through nightly-only options). --target keeps RUSTFLAGS away
# from build scripts and proc macros.
triple=x86_64-unknown-linux-gnu
export RUSTFLAGS="-Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4 -Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table -Cllvm-args=-sanitizer-coverage-trace-compares --cfg fuzzing -Cdebug-assertions -Coverflow-checks"
# A relative BUNDLE_TOOL is relative to where run.sh was started, not to fuzz/.
if [ -n "${BUNDLE_TOOL:-}" ] && [ "${BUNDLE_TOOL#/}" = "$BUNDLE_TOOL" ]; then
  BUNDLE_TOOL=$PWD/$BUNDLE_TOOL
fi
cd "$fuzz_dir"
echo "fuzz: cargo fmt, clippy and build (profile $profile)"
cargo fmt -- --check || fail "cargo fmt would change files in fuzz/: run it there and commit"
# Clippy lints the fuzz crate while it is built: clippy-driver compiles the workspace's own
# crate (cargo-clippy's -D warnings passed as it passes them), the instrumented dependencies
# are the build's. A separate `cargo clippy` would check all ~300 dependencies again.
command -v clippy-driver >/dev/null || fail "clippy-driver is missing: rustup component add clippy"
RUSTC_WORKSPACE_WRAPPER=$(command -v clippy-driver) CLIPPY_ARGS="-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__" \
  cargo build --locked --profile "$profile" --target "$triple" --lib --bins
bin_dir=$fuzz_dir/target/$triple/$profile

if [ -n "${FUZZ_WORK:-}" ]; then
  work=$FUZZ_WORK
  mkdir -p "$work"
else
  work=$(mktemp -d -t bundle-tool-fuzz.XXXXXX)
fi

# Seeds: the committed hand-made ones (fuzz/seeds/<target>) and pieces of the shared corpus,
# copied into $work/corpus/<target> (libFuzzer adds what it finds there; nothing of it is
# committed).
seed_files() { # target -> the corpus files to copy, one a line
  case $1 in
    fbc_load | yaml_differential)
      find "$corpus/catalogs" -name '*.yaml' | sort
      [ "$1" = yaml_differential ] && find "$corpus/bundles" -name '*.yaml' -size -64k | sort
      ;;
    manifest_csv) find "$corpus/bundles" -path '*/manifests/*' -size -64k -type f | sort ;;
  esac
}
split_documents() { # file prefix -> one seed file a YAML document (catalogs are too large whole)
  awk -v prefix="$2" 'BEGIN { n = 0; out = prefix "-0" }
    /^---/ { n++; out = prefix "-" n; next } { print > out }' "$1"
}
json_seeds() { # folder: every corpus catalog rendered as JSON, one seed a document
  local tool=${BUNDLE_TOOL:-$repo/target/debug/bundle-tool}
  if [ ! -x "$tool" ]; then
    (cd "$repo" && env -u RUSTFLAGS cargo build --locked -q -p bundle-tool) ||
      fail "building bundle-tool for the JSON seeds failed"
  fi
  local n=0 catalog
  for catalog in "$corpus"/catalogs/*/; do
    n=$((n + 1))
    "$tool" catalog render "$catalog" -o json |
      awk -v prefix="$1/corpus-$n" '{ print > (prefix "-" d) } /^}$/ { d++ }'
  done
}
mkdir -p "$work/json"
[ -n "$(ls -A "$work/json")" ] || json_seeds "$work/json"
for target in $targets; do
  dir=$work/corpus/$target
  [ -d "$dir" ] && continue
  mkdir -p "$dir"
  cp "$fuzz_dir/seeds/$target"/* "$dir/"
  n=0
  while read -r file && [ "$n" -lt "$max_seeds" ]; do
    n=$((n + 1))
    case $target in
      fbc_load | yaml_differential) split_documents "$file" "$dir/corpus-$n" ;;
      *) cp "$file" "$dir/corpus-$n" ;;
    esac
  done < <(seed_files "$target")
  case $target in
    fbc_load | json_differential) find "$work/json" -type f | sort | sed -n "1,${max_seeds}p" | xargs -r cp -t "$dir" ;;
    version_range) # every skipRange of the corpus catalogs with a version of the same file
      grep -rh "olm.skipRange: \|skipRange: " "$corpus/catalogs" | sed "s/.*skipRange: *//; s/^'//; s/'\$//" |
        sort -u | sed -n "1,${max_seeds}p" | awk -v dir="$dir" '{ printf "%s\n%d.%d.%d", $0, NR % 5, NR % 13, NR % 7 > (dir "/corpus-" NR) }' ;;
    image_ref)
      grep -rhoE "image: [^ ]+" "$corpus/catalogs" | cut -d' ' -f2 | sort -u | sed -n "1,${max_seeds}p" |
        awk -v dir="$dir" '{ printf "%s", $0 > (dir "/corpus-" NR) }' ;;
    tar_unpack) # a few corpus bundles as tar layers
      for bundle in $(find "$corpus/bundles" -mindepth 2 -maxdepth 2 -type d | sort | sed -n 1,20p); do
        n=$((n + 1))
        tar -cf "$dir/corpus-$n.tar" -C "$bundle" .
      done ;;
  esac
  # At most FUZZ_MAX_SEEDS corpus files (a split catalog gives hundreds), drawn the same way
  # every run; the hand-made seeds are always kept.
  find "$dir" -name 'corpus-*' -type f | sort | shuf --random-source=<(yes) |
    sed -n "$((max_seeds + 1)),\$p" | xargs -r rm --
done

# The runs. No backtrace in the run: printing one for a panic under libFuzzer's 1 s alarm
# hung the process once (probably the alarm's handler and the panic both symbolizing);
# replaying the crash file prints it.
export RUST_BACKTRACE=0
failed=""
printf 'target\texecs\texec/s\tpeak RSS MiB\tseconds\tCPU seconds\tcorpus files\n' >"$work/summary.tsv"
for target in $targets; do
  mkdir -p "$work/artifacts/$target"
  log=$work/$target.log
  echo "fuzz: $target for ${seconds}s"
  start=$SECONDS
  status=0
  /usr/bin/time -f "%U %S" -o "$work/$target.cpu" nice -n "$nice_level" "$bin_dir/$target" "${limits[@]}" -max_total_time="$seconds" \
    -print_final_stats=1 -artifact_prefix="$work/artifacts/$target/" "$work/corpus/$target" \
    >"$log" 2>&1 || status=$?
  stat() { sed -n "s/^stat::$1: *//p" "$log" | tail -n 1; }
  # CPU seconds (user + system) of the fuzzer: the campaigns' target is counted in CPU time.
  # (time writes "Command exited with non-zero status N" above the figures when it failed.)
  cpu=$(tail -n 1 "$work/$target.cpu" 2>/dev/null | awk '{ printf "%.0f", $1 + $2 }')
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$target" "$(stat number_of_executed_units)" \
    "$(stat average_exec_per_sec)" "$(stat peak_rss_mb)" "$((SECONDS - start))" "$cpu" \
    "$(find "$work/corpus/$target" -type f | wc -l)" >>"$work/summary.tsv"
  if [ "$status" -ne 0 ] || [ -n "$(ls -A "$work/artifacts/$target")" ]; then
    failed="$failed $target"
    echo "fuzz: $target FAILED (exit $status); input: $(ls "$work/artifacts/$target"/* 2>/dev/null | tr '\n' ' ')" >&2
    grep -E "panicked|ERROR: libFuzzer|SUMMARY|^Error|assertion" "$log" | head -n 20 >&2 || true
    echo "fuzz: full log: $log" >&2
  fi
done
column -t -s $'\t' "$work/summary.tsv"
if [ -n "$failed" ]; then
  fail "targets failed:$failed (crash files and logs kept in $work; reproduce with $bin_dir/TARGET FILE)"
fi
[ -n "${FUZZ_WORK:-}" ] || rm -rf "$work"
echo "fuzz: every target ran ${seconds}s without a crash, timeout or allocation past the limits"
