// Parameter inventory over every model of candle-transformers (its lib root reaches the 200
// files of src/models), against tree-sitter's
// raw parse of the same files in the same run. Target: inventory ≤ 0.5 s (the load is measured by
// bench_rust_load). `--report` prints the per-model truth table instead (issue #4): leaves,
// template families, conditional and unknown leaves, and diagnostics per component.
// Usage (bench protocol): bench_analysis_inventory BASELINES_FILE WORK_DIR; env CG_CANDLE_SRC.
#include <tree_sitter/api.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "analysis/inventory.hpp"
#include "rust/grammar.hpp"

namespace fs = std::filesystem;

namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

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
  fs::path crate_dir = fs::path(env != nullptr ? env : "/work/candle-src") / "candle-transformers";
  if (!fs::exists(crate_dir / "src/models/mod.rs")) {
    std::printf("ROW|inventory of all models (s)|SKIPPED (no candle checkout)|||≤0.5 s|\n");
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
  std::vector<double> ours, raw;
  std::size_t params = 0, components = 0;
  for (int rep = 0; rep < 5; ++rep) {
    cg::ir::ModelIr ir;
    double t0 = now_s();
    cg::analysis::build_inventory(crate, opts, ir);
    ours.push_back(now_s() - t0);
    params = ir.parameters.size();
    components = ir.components.size();
  }
  for (int rep = 0; rep < 5; ++rep) {
    double t0 = now_s();
    TSParser* parser = ts_parser_new();
    ts_parser_set_language(parser, cg::rust::rust_language());
    for (const auto& f : crate.files()) {
      const std::string& t = f->text();
      TSTree* tree =
          ts_parser_parse_string(parser, nullptr, t.data(), static_cast<std::uint32_t>(t.size()));
      ts_tree_delete(tree);
    }
    ts_parser_delete(parser);
    raw.push_back(now_s() - t0);
  }
  double o = median(ours), r = median(raw);
  std::fprintf(stderr, "inventory: %zu files, %zu components, %zu parameter leaves (median of 5)\n",
               crate.files().size(), components, params);
  std::printf("ROW|inventory of all models (s)|%.3f|%.3f|%.2f|≤0.5 s|%s\n", o, r, o / r,
              o <= 0.5 ? "yes" : "no");
  return 0;
}
