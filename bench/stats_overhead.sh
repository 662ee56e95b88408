#!/usr/bin/env bash
# What `instrument --stats` costs per recorded output, against the module's own time, measured in
# the same run on the CPU stand-in (tests/instrument/perlayer: candle-core's API on plain f32
# buffers). The per-layer fixture is instrumented with --stats, built --release with
# candle-graph-stats, and run STEPS forwards with CANDLE_GRAPH_STATS_EVERY=1 at hidden size 64.
# A module's scope closes before its statistics are computed and the `stats` line is stamped
# after, so for each record the statistics' cost is its `at_ns` less the end of the module record
# it follows on the same thread, and the module's own time is that record's duration. Printed per
# kind of module (median over its records): statistics µs, module µs, ratio. Then the whole run's
# wall time with EVERY=1 against no schedule (stats compiled in, never due): what switching them on
# costs, and what the feature costs when statistics are never due (the scopes' timing included),
# each as a ratio to a build without the feature.
# Usage: bench/stats_overhead.sh <candle-graph binary> [STEPS]   (default 200; needs cargo)
set -euo pipefail
cg="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
steps="${2:-200}"
here="$(cd "$(dirname "$0")/.." && pwd)"
command -v cargo >/dev/null || { echo "skipped: cargo not found"; exit 0; }
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
export CARGO_TARGET_DIR="$work/target" CARGO_TERM_COLOR=never
unset CANDLE_GRAPH_STATS_EVERY CANDLE_GRAPH_STATS_ON_NON_FINITE
cp -R "$here/tests/instrument/perlayer" "$work/perlayer"
model="$work/perlayer/model"
"$cg" instrument "$model" --stats --profile-dep "path=$here/bindings/rust/candle-graph-profile" \
  -o "$work/model.diff" 2>/dev/null
(cd "$model" && patch -p1 -s <"$work/model.diff")
mkdir -p "$model/examples"
cat >"$model/examples/bench.rs" <<'RS'
use perlayer_model::{Config, Model};
fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let steps: u64 = args.next().unwrap().parse()?;
    #[cfg(feature = "candle-graph-profile")]
    if let Some(trace) = args.next() {
        candle_graph_profile::install_global(trace, candle_graph_profile::ProfileConfig::infer("Model::forward"))?;
    }
    let device = candle::Device::Cpu;
    let mut cfg = Config::tiny();
    cfg.hidden_size = 64;
    cfg.intermediate_size = 128;
    let model = Model::new(&cfg, candle_nn::VarBuilder::deterministic(&device))?;
    let ids = candle::Tensor::from_vec((0..16).map(|i| (i % 30) as f32).collect::<Vec<_>>(), 16, &device)?;
    let start = std::time::Instant::now();
    for step in 0..steps {
        #[cfg(feature = "candle-graph-profile")]
        if let Some(s) = candle_graph_profile::global() {
            s.set_step(step);
        }
        let _ = step;
        model.forward(&ids)?;
    }
    println!("{}", start.elapsed().as_nanos());
    Ok(())
}
RS
grep -q 'pub intermediate_size' "$model/src/lib.rs" || { echo "the fixture's Config changed: update this bench"; exit 1; }
build() { (cd "$model" && cargo build --offline --release -q --example bench "$@"); }
run() { (cd "$model" && "$CARGO_TARGET_DIR/release/examples/bench" "$@"); }
build
plain=(); for _ in 1 2 3; do plain+=("$(run "$steps")"); done
build --features candle-graph-stats
off=(); for _ in 1 2 3; do off+=("$(run "$steps" "$work/off.jsonl")"); done
on=(); for i in 1 2 3; do on+=("$(CANDLE_GRAPH_STATS_EVERY=1 run "$steps" "$work/on$i.jsonl")"); done
python3 - "$work" "${plain[*]}" "${off[*]}" "${on[*]}" <<'PY'
import json, statistics, sys
work, plain, off, on = sys.argv[1], *[list(map(int, a.split())) for a in sys.argv[2:]]
per_kind = {}
for i in (1, 2, 3):
    recs = [json.loads(l) for l in open(f"{work}/on{i}.jsonl")]
    ends = {}  # (thread, path) -> ends of module records, in file order
    for r in recs:
        if r["kind"] == "module":
            ends.setdefault((r["thread"], r["path"]), []).append((r["start_ns"] + r["duration_ns"], r["duration_ns"]))
    for r in recs:
        if r["kind"] != "stats" or r["of"] != "output":
            continue
        cands = [e for e in ends.get((r["thread"], r["path"]), []) if e[0] <= r["at_ns"]]
        if not cands:
            continue
        end, own = max(cands)
        leaf = r["path"].rsplit(".", 1)[-1] if r["path"] else "(root)"
        kind = "layers.N" if leaf.isdigit() else leaf
        per_kind.setdefault(kind, ([], []))
        per_kind[kind][0].append(r["at_ns"] - end)
        per_kind[kind][1].append(own)
print(f"{'module':<26} {'stats us':>9} {'module us':>10} {'ratio':>7}   (median per call, {sum(len(v[0]) for v in per_kind.values())} records)")
for kind in sorted(per_kind):
    s, m = (statistics.median(x) / 1000 for x in per_kind[kind])
    print(f"{kind:<26} {s:9.1f} {m:10.1f} {s / m if m else float('inf'):7.2f}")
mp, mo, mn = (statistics.median(x) / 1e6 for x in (plain, off, on))
print(f"run wall ms (median of 3): no feature {mp:.1f}; candle-graph-stats with scopes timing, never due {mo:.1f} "
      f"(ratio {mo / mp:.3f}); EVERY=1 {mn:.1f} (ratio {mn / mp:.2f})")
# Rows for bench/run.sh (ROW|figure|ours|baseline|ratio|target|met): the statistics of a 16x64
# output against the 64x64 projection that made it, and the run with statistics compiled in but
# never due against the plain build.
if "q_proj" in per_kind:
    s, m = (statistics.median(x) / 1000 for x in per_kind["q_proj"])
    print(f"ROW|stats per call vs its q_proj (stand-in)|{s:.1f} us|{m:.1f} us|{s / m:.2f}|<= 1|{'yes' if s <= m else 'no'}")
print(f"ROW|run, stats compiled in never due|{mo:.1f} ms|{mp:.1f} ms|{mo / mp:.3f}|<= 1.10|{'yes' if mo <= 1.10 * mp else 'no'}")
PY
