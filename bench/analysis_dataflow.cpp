// Dataflow over every forward entrypoint of candle-transformers (src/models), against the raw
// tree-sitter parse of the same files measured in the same run. Target: ≤ 1 s.
// Usage: bench_analysis_dataflow [--report] [--config config.json]
//   --report prints per-model totals: operations, unknown ops, tensors with a known
//   dtype/shape/device, operations with mult-adds, findings by rule. --config binds one
//   config.json to every model (fields a model's config lacks stay symbolic).

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "analysis/config_values.hpp"
#include "analysis/dataflow.hpp"
#include "analysis/inventory.hpp"
#include "cargo/context.hpp"
#include "parse_baseline.hpp"
#include "pipeline/pipeline.hpp"
#include "rust/crate.hpp"

namespace fs = std::filesystem;

namespace {

// The pipeline's function listing and entrypoint rule, restricted to src/models.
std::vector<cg::ir::Function> functions_of(const cg::rust::Crate& crate) {
  std::vector<cg::ir::Function> out = cg::pipeline::functions_of(crate);
  for (auto& fn : out)
    fn.is_entrypoint = fn.is_entrypoint && fn.qualified_name.rfind("models::", 0) == 0;
  return out;
}

std::string model_of(const std::string& source) {
  // "src/models/llama.rs:12" -> "llama"; "src/models/whisper/audio.rs:3" -> "whisper"
  const std::string pre = "src/models/";
  if (source.rfind(pre, 0) != 0) return "(other)";
  std::string rest = source.substr(pre.size());
  auto slash = rest.find('/');
  if (slash != std::string::npos) return rest.substr(0, slash);
  return rest.substr(0, rest.find(".rs"));
}

void report(const cg::ir::ModelIr& ir) {
  struct Row {
    std::size_t ops = 0, unknown = 0, tensors = 0, dtype = 0, shape = 0, concrete = 0, device = 0,
                madds = 0;
    std::map<std::string, std::size_t> rules;
  };
  std::map<std::string, Row> rows;
  std::map<std::string, std::string> fn_src;
  for (const auto& f : ir.functions)
    fn_src[f.id] = f.source;
  for (const auto& o : ir.operations) {
    Row& r = rows[model_of(o.source)];
    ++r.ops;
    if (o.mult_adds) ++r.madds;
    // Unknown: no audited rule and not an inlined crate-local call.
    bool inlined = !o.evidence.empty() && o.evidence[0].detail.rfind("inlined", 0) == 0;
    if (o.dtype_rule == "unknown" && o.gradient_rule == "unknown" && !inlined) ++r.unknown;
  }
  for (const auto& t : ir.tensors) {
    Row& r = rows[model_of(fn_src[t.owner_function])];
    ++r.tensors;
    if (t.dtype != "Unknown") ++r.dtype;
    if (t.shape.rank) ++r.shape;
    bool all_numbers = t.shape.rank && !t.shape.dimensions.empty();
    for (const auto& d : t.shape.dimensions)
      all_numbers = all_numbers && !d.expr.empty() &&
                    std::all_of(d.expr.begin(), d.expr.end(),
                                [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
    if (all_numbers) ++r.concrete;
    if (t.device.kind != cg::ir::DeviceKind::unknown) ++r.device;
  }
  for (const auto& f : ir.findings)
    ++rows[model_of(f.source.value_or(""))].rules[f.rule];
  Row total;
  std::printf("%-28s %6s %7s %7s %6s %6s %8s %6s %5s  findings\n", "model", "ops", "unknown",
              "tensors", "dtype", "shape", "concrete", "device", "madds");
  for (const auto& [name, r] : rows) {
    std::string rules;
    for (const auto& [rule, n] : r.rules) {
      rules += " " + rule + "=" + std::to_string(n);
      total.rules[rule] += n;
    }
    std::printf("%-28s %6zu %7zu %7zu %6zu %6zu %8zu %6zu %5zu %s\n", name.c_str(), r.ops,
                r.unknown, r.tensors, r.dtype, r.shape, r.concrete, r.device, r.madds,
                rules.c_str());
    total.ops += r.ops;
    total.unknown += r.unknown;
    total.tensors += r.tensors;
    total.dtype += r.dtype;
    total.shape += r.shape;
    total.concrete += r.concrete;
    total.device += r.device;
    total.madds += r.madds;
  }
  std::string rules;
  for (const auto& [rule, n] : total.rules)
    rules += " " + rule + "=" + std::to_string(n);
  std::size_t proven_errors = 0;
  for (const auto& f : ir.findings)
    if (f.severity == cg::ir::Severity::error && f.confidence == cg::ir::Confidence::proven) {
      ++proven_errors;
      std::printf("PROVEN ERROR %s %s: %s\n", f.rule.c_str(), f.source.value_or("").c_str(),
                  f.message.c_str());
    }
  std::printf("proven errors: %zu\n", proven_errors);
  if (const char* rule = std::getenv("CG_BENCH_LIST_RULE"))
    for (const auto& f : ir.findings)
      if (f.rule == rule)
        std::printf("%s %s: %s\n", rule, f.source.value_or("").c_str(), f.message.c_str());
  std::printf("%-28s %6zu %7zu %7zu %6zu %6zu %8zu %6zu %5zu %s\n", "TOTAL", total.ops,
              total.unknown, total.tensors, total.dtype, total.shape, total.concrete, total.device,
              total.madds, rules.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  bool want_report = false;
  std::optional<cg::analysis::ConfigValues> config;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--report") == 0) want_report = true;
    if (std::strcmp(argv[i], "--config") == 0 && i + 1 < argc)
      config = cg::analysis::read_config_values(argv[++i]);
  }
  const char* env = std::getenv("CG_CANDLE_SRC");
  fs::path crate_dir = fs::path(env != nullptr ? env : "") / "candle-transformers";
  if (!fs::exists(crate_dir / "src/models/mod.rs")) {
    std::printf(
        "ROW|dataflow of all model entrypoints (s)|SKIPPED (set CG_CANDLE_SRC to a candle "
        "checkout)|||≤1 s|\n");
    return 0;
  }
  auto ctx = cg::cargo::load_cargo_context(crate_dir, {});
  cg::rust::CfgSet cfg(ctx.cfgs);
  auto crate = cg::rust::Crate::load(crate_dir, ctx.root_file, &ctx, cfg, 2);
  std::string version;
  for (const auto& v : ctx.candle_versions)
    if (v.package == "candle-core" && v.exact) version = v.version;
  cg::analysis::DataflowOptions opts;
  opts.candle_version = version;
  if (config) opts.config = &*config;
  auto fns = functions_of(crate);
  std::size_t entrypoints = 0;
  for (const auto& f : fns)
    entrypoints += f.is_entrypoint ? 1u : 0u;

  // The inventory runs first in the pipeline (parameter links); it is not part of the figure.
  cg::ir::ModelIr base;
  base.functions = fns;
  cg::analysis::InventoryOptions inv;
  for (const auto& v : ctx.candle_versions)
    if (v.package == "candle-nn" && v.exact) inv.candle_nn_version = v.version;
  if (config) inv.config = &*config;
  cg::analysis::build_inventory(crate, inv, base);

  if (want_report) {
    cg::ir::ModelIr ir = base;
    cg::analysis::build_dataflow(crate, opts, ir);
    report(ir);
    return 0;
  }
  std::vector<double> ours;
  std::size_t ops = 0;
  for (int rep = 0; rep < 5; ++rep) {
    cg::ir::ModelIr ir = base;
    double t0 = bench::now_s();
    cg::analysis::build_dataflow(crate, opts, ir);
    ours.push_back(bench::now_s() - t0);
    ops = ir.operations.size();
  }
  double o = bench::median(ours), r = bench::raw_parse_seconds(crate);
  std::fprintf(stderr, "dataflow: %zu files, %zu entrypoints, %zu operations (median of 5)\n",
               crate.files().size(), entrypoints, ops);
  std::printf("ROW|dataflow of all model entrypoints (s)|%.3f|%.3f|%.2f|≤1 s|%s\n", o, r, o / r,
              o <= 1.0 ? "yes" : "no");
  return 0;
}
