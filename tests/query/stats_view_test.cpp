// Tensor statistics as a user sees them: `summary --stats` columns (absent, byte for byte, without
// the flag) and `query first-non-finite`, which tells "not recorded" from "all finite".
#include <gtest/gtest.h>

#include <algorithm>

#include "query/query.hpp"
#include "query/summary_rows.hpp"
#include "util/error.hpp"

namespace {

cg::ir::ModuleStats stats_row(const std::string& path, const std::string& module,
                              std::optional<std::uint64_t> instance, double abs_max, double rms,
                              std::uint64_t nan, std::uint64_t pos_inf) {
  cg::ir::ModuleStats s;
  s.path = path;
  s.module = module;
  s.instance = instance;
  s.samples = 2;
  s.steps = 2;
  s.max_abs_max = abs_max;
  s.max_rms = rms;
  s.nan = nan;
  s.pos_inf = pos_inf;
  return s;
}

cg::ir::FirstNonFinite at(std::uint64_t step, std::uint64_t at_ns, std::uint64_t thread,
                          std::uint64_t nan, std::uint64_t pos_inf) {
  return {step, at_ns, thread, "non_finite", nan, pos_inf, 0};
}

// Two layers of one family: layer 1 went non-finite at step 4 (thread 1), layer 0 later in the
// same step; the family row folds both.
cg::pipeline::Analysis with_stats() {
  cg::pipeline::Analysis a;
  a.package_id = "tiny 0.1.0";
  a.ir.analysis_id = "analysis:test";
  cg::ir::Component c;
  c.id = "component:Model";
  c.name = "Model";
  c.qualified_name = "tiny::Model";
  a.ir.components.push_back(c);
  cg::ir::Module root, layers;
  root.id = "module:a";
  root.component = c.id;
  root.type_name = "Model";
  layers.id = "module:b";
  layers.component = c.id;
  layers.parent = root.id;
  layers.type_name = "Layer";
  layers.prefix = "layers.{i}";
  layers.repeat = "i in 0..cfg.n";
  a.ir.modules = {root, layers};
  cg::ir::RuntimeSummary rt;
  rt.stats_records = 7;
  auto l0 = stats_row("model.layers.0", "module:b", 0, 3.5, 1.25, 1, 0);
  l0.first_non_finite = at(4, 900, 0, 1, 0);
  auto l1 = stats_row("model.layers.1", "module:b", 1, 12.0, 4.0, 2, 3);
  l1.first_non_finite = at(4, 800, 1, 2, 3);
  auto family = stats_row("model.layers.{i}", "module:b", std::nullopt, 12.0, 4.0, 3, 3);
  family.first_non_finite = l1.first_non_finite;
  auto whole = stats_row("model", "module:a", std::nullopt, 0.75, 0.5, 0, 0);
  rt.module_stats = {whole, l0, l1, family};
  a.ir.runtime = rt;
  return a;
}

std::string line_with(const std::string& text, const std::string& start) {
  for (std::size_t at = 0; at < text.size();) {
    std::size_t nl = text.find('\n', at);
    std::string line = text.substr(at, nl - at);
    if (line.find(start) != std::string::npos) return line;
    at = nl + 1;
  }
  return "";
}

TEST(StatsView, SummaryStatsColumnsOnlyWhenAskedFor) {
  auto a = with_stats();
  cg::query::SummaryOptions opts;
  opts.dtype = "F32";
  const std::string plain = cg::query::render_model_summary(a, "", opts);
  // Without --stats the table is what it is without any stats in the IR, byte for byte.
  auto none = with_stats();
  none.ir.runtime->module_stats.clear();
  none.ir.runtime->stats_records = 0;
  EXPECT_EQ(plain, cg::query::render_model_summary(none, "", opts));
  EXPECT_EQ(plain.find("Abs max"), std::string::npos);

  opts.stats = true;
  const std::string text = cg::query::render_model_summary(a, "", opts);
  EXPECT_NE(text.find("Abs max"), std::string::npos) << text;
  EXPECT_NE(text.find("Non-finite"), std::string::npos) << text;
  // The family row: the family's largest abs_max (12) and RMS (4), and 3 NaN + 3 Inf.
  const std::string family = line_with(text, "(Layer)");
  EXPECT_NE(family.find("12"), std::string::npos) << text;
  EXPECT_NE(family.find(" 4 "), std::string::npos) << family;
  EXPECT_EQ(family.back(), '6') << family;
  const std::string root = line_with(text, "Model (Model)");
  EXPECT_NE(root.find("0.75"), std::string::npos) << root;
  EXPECT_EQ(root.back(), '0') << root;
  EXPECT_NE(text.find("(7 stats records)"), std::string::npos) << text;
  // Asked for, with a trace that recorded none: said, no columns.
  none.ir.runtime->stats_records = 0;
  const std::string empty = cg::query::render_model_summary(none, "", opts);
  EXPECT_EQ(empty.find("Abs max"), std::string::npos);
  EXPECT_NE(empty.find("--stats: the trace has no stats records"), std::string::npos) << empty;
}

TEST(StatsView, QueryNamesTheFirstModuleToGoNonFinite) {
  auto a = with_stats();
  cg::query::QueryRequest r;
  r.kind = "first-non-finite";
  const std::string out = cg::query::answer_query(a, r);
  EXPECT_NE(out.find("\"found\": true"), std::string::npos) << out;
  // Layer 1 (at 800) before layer 0 (at 900) in step 4; the family row is not an instance.
  EXPECT_NE(out.find("\"answer\": \"`model.layers.1` at step 4: 2 NaN, 3 +Inf, 0 -Inf\""),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("\"path\": \"model.layers.1\""), std::string::npos) << out;
  EXPECT_EQ(out.find("\"path\": \"model.layers.{i}\""), std::string::npos) << out;
  EXPECT_NE(out.find("\"instance\": 1"), std::string::npos) << out;
  EXPECT_NE(out.find("\"returned\": 1"), std::string::npos) << out;
  // Same order, different thread at the same instant: the lower thread wins.
  a.ir.runtime->module_stats[1].first_non_finite = at(4, 800, 0, 1, 0);
  EXPECT_NE(cg::query::answer_query(a, r).find("`model.layers.0` at step 4"), std::string::npos);
}

TEST(StatsView, QueryTellsAllFiniteFromNotRecorded) {
  auto a = with_stats();
  for (auto& s : a.ir.runtime->module_stats)
    s.first_non_finite.reset();
  cg::query::QueryRequest r;
  r.kind = "first_non_finite";  // the MCP spelling reaches the same kind
  std::string out = cg::query::answer_query(a, r);
  EXPECT_NE(out.find("\"found\": false"), std::string::npos) << out;
  // 2 samples on each of the three instance rows (the family row is not counted again).
  EXPECT_NE(out.find("no non-finite value recorded in 6 module output stats records"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("\"returned\": 0"), std::string::npos) << out;
  a.ir.runtime->module_stats.clear();
  a.ir.runtime->stats_records = 0;
  out = cg::query::answer_query(a, r);
  EXPECT_NE(out.find("\"found\": null"), std::string::npos) << out;
  EXPECT_NE(out.find("\"answer\": \"? no stats records"), std::string::npos) << out;
  a.ir.runtime.reset();
  EXPECT_THROW((void)cg::query::answer_query(a, r), cg::InputError);
  // The MCP server offers it as a tool.
  const auto tools = cg::query::mcp_tools();
  EXPECT_TRUE(std::any_of(tools.begin(), tools.end(),
                          [](const auto& t) { return t.kind == "first-non-finite"; }));
}

}  // namespace
