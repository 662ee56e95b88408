// Parameter inventory over every model of candle-transformers (its lib root reaches the 200
// files of src/models), against tree-sitter's
// raw parse of the same files in the same run. Target: inventory ≤ 0.5 s (the load is measured by
// bench_rust_load). `--report` prints the per-model truth table instead (issue #4): leaves,
// template families, conditional and unknown leaves, and diagnostics per component.
// Usage (bench protocol): bench_analysis_inventory BASELINES_FILE WORK_DIR; env CG_CANDLE_SRC.

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "analysis/inventory.hpp"
#include "parse_baseline.hpp"

namespace fs = std::filesystem;

namespace {

void report(const cg::ir::ModelIr& ir) {
  struct Row {
    std::size_t leaves = 0, families = 0, conditional = 0, unknown = 0, diags = 0;
  };
  std::map<std::string, Row> rows;
  std::map<std::string, std::string> name_of;
  for (const auto& c : ir.components)
    name_of[c.id] = c.qualified_name;
  for (const auto& p : ir.parameters) {
    Row& r = rows[name_of[p.component]];
    ++r.leaves;
    if (p.key.find('{') != std::string::npos) ++r.families;
    if (p.confidence == cg::ir::Confidence::conditional) ++r.conditional;
    if (p.confidence == cg::ir::Confidence::unknown) ++r.unknown;
  }
  for (const auto& f : ir.findings)
    for (const auto& rel : f.related)
      if (name_of.count(rel)) ++rows[name_of[rel]].diags;
  Row total;
  std::printf("%-60s %7s %8s %11s %7s %5s\n", "component", "leaves", "families", "conditional",
              "unknown", "diags");
  for (const auto& [name, r] : rows) {
    std::printf("%-60s %7zu %8zu %11zu %7zu %5zu\n", name.c_str(), r.leaves, r.families,
                r.conditional, r.unknown, r.diags);
    total.leaves += r.leaves;
    total.families += r.families;
    total.conditional += r.conditional;
    total.unknown += r.unknown;
    total.diags += r.diags;
  }
  std::printf("%-60s %7zu %8zu %11zu %7zu %5zu\n", "TOTAL", total.leaves, total.families,
              total.conditional, total.unknown, total.diags);
  std::printf("components %zu, modules %zu\n", ir.components.size(), ir.modules.size());
}

}  // namespace

int main(int argc, char** argv) {
  bool want_report = argc > 1 && std::strcmp(argv[1], "--report") == 0;
  const char* env = std::getenv("CG_CANDLE_SRC");
  fs::path crate_dir = fs::path(env != nullptr ? env : "") / "candle-transformers";
  if (!fs::exists(crate_dir / "src/models/mod.rs")) {
    std::printf(
        "ROW|inventory of all models (s)|SKIPPED (set CG_CANDLE_SRC to a candle checkout)|||≤0.5 "
        "s|\n");
    return 0;
  }
  auto ctx = cg::cargo::load_cargo_context(crate_dir, {});
  cg::rust::CfgSet cfg(ctx.cfgs);
  // The library root: the models import `crate::models::with_tracing`, `crate::quantized_nn`, …
  auto crate = cg::rust::Crate::load(crate_dir, ctx.root_file, &ctx, cfg, 2);
  std::string nn_version;
  for (const auto& v : ctx.candle_versions)
    if (v.package == "candle-nn" && v.exact) nn_version = v.version;
  cg::analysis::InventoryOptions opts;
  opts.candle_nn_version = nn_version;

  if (want_report) {
    cg::ir::ModelIr ir;
    cg::analysis::build_inventory(crate, opts, ir);
    report(ir);
    return 0;
  }
  std::vector<double> ours;
  std::size_t params = 0, components = 0;
  for (int rep = 0; rep < 5; ++rep) {
    cg::ir::ModelIr ir;
    double t0 = bench::now_s();
    cg::analysis::build_inventory(crate, opts, ir);
    ours.push_back(bench::now_s() - t0);
    params = ir.parameters.size();
    components = ir.components.size();
  }
  double o = bench::median(ours), r = bench::raw_parse_seconds(crate);
  std::fprintf(stderr, "inventory: %zu files, %zu components, %zu parameter leaves (median of 5)\n",
               crate.files().size(), components, params);
  std::printf("ROW|inventory of all models (s)|%.3f|%.3f|%.2f|≤0.5 s|%s\n", o, r, o / r,
              o <= 0.5 ? "yes" : "no");
  return 0;
}
