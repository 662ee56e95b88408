#!/usr/bin/env bash
# Every row of the README's profiler table from ONE run: the shared baselines (the seed design,
# the clock floors), then bench_profile_overhead (C++) and the Rust crate's profile_overhead
# example, through bench/run.sh so that ratios are taken within the run and printed as one table.
# The load is printed before and after (`uptime`): on a shared machine every wall-clock figure
# moves with it, which is why the targets are stated as same-run ratios of CPU times.
#
# Usage: bench/profile_run.sh [BUILD_DIR]     (default build/release, configured with
#        `cmake --preset release`; bench_profile_overhead is built there if missing or stale)
# Environment: CG_PROFILE_BENCH_OPS (pairs per run, default 1,000,000; the string-API rows use a
# tenth), CG_PROFILE_BENCH_REPS (medians of, default 3), CG_BENCH_OPS (baselines' N, same
# default), TMPDIR (work files, several GB written and removed).
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$here/build/release}"
export CG_PROFILE_BENCH_OPS="${CG_PROFILE_BENCH_OPS:-1000000}"
export CG_PROFILE_BENCH_REPS="${CG_PROFILE_BENCH_REPS:-3}"
export CG_BENCH_OPS="${CG_BENCH_OPS:-$CG_PROFILE_BENCH_OPS}"
cmake --build "$build" --target bench_profile_overhead >&2
# bench/run.sh runs every bench_* of a build directory: give it one holding only the profiler's.
only="$(mktemp -d "${TMPDIR:-/tmp}/cg-profile-only.XXXXXX")"
trap 'rm -rf "$only"' EXIT
mkdir -p "$only/bench"
ln -s "$(cd "$build" && pwd)/bench/bench_profile_overhead" "$only/bench/bench_profile_overhead"
echo "load before: $(uptime)"
start="$(date -u +%H:%M:%S)"
bash "$here/bench/run.sh" "$only"
echo "profiler run $start-$(date -u +%H:%M:%S) UTC, N=$CG_PROFILE_BENCH_OPS, medians of $CG_PROFILE_BENCH_REPS"
echo "load after: $(uptime)"
