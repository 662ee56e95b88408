#!/usr/bin/env bash
# `make bench`: builds the baselines in ../shared/baselines, then runs every project benchmark
# (build/<preset>/bench/bench_*) in the same run and prints one table.
#
# Protocol for a benchmark program: it is run as `bench_X BASELINES_FILE WORK_DIR` where
# BASELINES_FILE holds the "name value unit" lines printed by shared/baselines/run.sh in this run
# (and WORK_DIR/seed-trace.jsonl is the trace it wrote). It prints one line per figure:
#   ROW|figure|ours|baseline|ratio|target|met
# Any other output is passed through to stderr.
# CG_CANDLE_SRC: a candle checkout (candle-transformers, candle-nn) for the rows measured on real
# model code; those rows print SKIPPED without one. CG_VLLM_SRC: a candle-vllm checkout (or any
# engine crate) for the corpus row (bench_pipeline_corpus: the crate with its dependencies against
# a raw parse of the same files); SKIPPED without it.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$here/build/release}"
shared="${CG_SHARED_DIR:-$here/../shared}"
work="${TMPDIR:-/tmp}/cg-bench"; mkdir -p "$work"
n_ops="${CG_BENCH_OPS:-1000000}"

baselines="$work/baselines.txt"
if [ -x "$shared/baselines/run.sh" ] || [ -f "$shared/baselines/run.sh" ]; then
  echo "bench: building and running baselines (N=$n_ops)…" >&2
  TMPDIR="$work" bash "$shared/baselines/run.sh" "$n_ops" | tee "$baselines" >&2
else
  echo "bench: $shared/baselines not found; ratios against baselines are unavailable" >&2
  : > "$baselines"
fi

rows="$work/rows.txt"; : > "$rows"
run_bench() {
  echo "bench: running $(basename "$1")…" >&2
  "$@" "$baselines" "$work/cg-baselines" | while IFS= read -r line; do
    case "$line" in ROW\|*) echo "${line#ROW|}" >> "$rows" ;; *) echo "$line" >&2 ;; esac
  done
}
for b in "$build"/bench/bench_*; do
  [ -x "$b" ] || continue
  run_bench "$b"
done
# The Rust crate measured from Rust (its seed-compatible API is what Candle programs call). It has
# no crate dependencies, so cargo builds it offline; skipped with a note where cargo is missing.
crate="$here/bindings/rust/candle-graph-profile"
if command -v cargo >/dev/null 2>&1 && [ -f "$crate/Cargo.toml" ]; then
  if (cd "$crate" && CARGO_TARGET_DIR="$work/cargo-target" cargo build --release --offline --quiet \
        --example profile_overhead >&2); then
    run_bench "$work/cargo-target/release/examples/profile_overhead"
  else
    echo "bench: the Rust crate's benchmark did not build; its rows are missing" >&2
  fi
else
  echo "bench: cargo not found; the Rust crate's rows are missing" >&2
fi

# instrument --stats on the CPU stand-in (needs cargo): statistics per call against the module's
# own time, and the run with statistics compiled in but never due against the plain build.
if command -v cargo >/dev/null 2>&1 && [ -x "$build/candle-graph" ]; then
  echo "bench: running stats_overhead.sh…" >&2
  bash "$here/bench/stats_overhead.sh" "$build/candle-graph" 200 | while IFS= read -r line; do
    case "$line" in ROW\|*) echo "${line#ROW|}" >> "$rows" ;; *) echo "$line" >&2 ;; esac
  done
fi
printf '\n%-44s %14s %14s %9s %12s %s\n' figure ours baseline ratio target met
printf '%-44s %14s %14s %9s %12s %s\n' "$(printf -- '-%.0s' {1..44})" -------------- -------------- --------- ------------ ---
while IFS='|' read -r fig ours base ratio target met; do
  printf '%-44s %14s %14s %9s %12s %s\n' "$fig" "$ours" "$base" "$ratio" "$target" "$met"
done < "$rows"
echo "measured $(date -u +%Y-%m-%d) on $(nproc) cores"
