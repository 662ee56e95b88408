// Module scope timings as a user sees them: the summary table's Time/Self/%/Calls columns (a
// folded family shows its sum and slowest instance) and `query module-timings` (bounded).
#include <gtest/gtest.h>

#include "query/query.hpp"
#include "query/summary_rows.hpp"
#include "util/error.hpp"

namespace {

cg::pipeline::Analysis timed() {
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
  auto stats = [](std::uint64_t samples, std::uint64_t total) {
    cg::ir::TimingStats s;
    s.samples = samples;
    s.total_ns = total;
    return s;
  };
  rt.module_timings = {
      {"model", "module:a", std::nullopt, 1, stats(1, 10000), stats(1, 3000)},
      {"model.layers.0", "module:b", 0, 1, stats(1, 4000), stats(1, 2000)},
      {"model.layers.1", "module:b", 1, 3, stats(3, 4200), stats(3, 4200)},
      {"model.layers.{i}", "module:b", std::nullopt, 4, stats(4, 8200), stats(4, 6200)},
  };
  rt.thread_busy_ns = {10000, 1200};
  rt.unmatched_module_paths = 1;
  rt.unmatched_module_path_examples = {"vision"};
  a.ir.runtime = rt;
  return a;
}

TEST(ModuleTimingsView, SummaryTableShowsTimeSelfShareAndCalls) {
  auto a = timed();
  std::string text = cg::query::render_model_summary(a, "", {.dtype = "F32"});
  EXPECT_NE(text.find("Time (total)"), std::string::npos) << text;
  // The family row: sum over both layers, its slowest instance, self share 6200 / 11200.
  std::string family_line;
  std::string root_line;
  std::size_t at = 0;
  while (at < text.size()) {
    std::size_t nl = text.find('\n', at);
    std::string line = text.substr(at, nl - at);
    if (line.find("(Layer)") != std::string::npos) family_line = line;
    if (line.rfind("Model (Model)", 0) == 0) root_line = line;
    at = nl + 1;
  }
  EXPECT_NE(family_line.find("8.2 µs (max #1 4.2 µs)"), std::string::npos) << text;
  EXPECT_NE(family_line.find("6.2 µs"), std::string::npos) << family_line;
  EXPECT_NE(family_line.find("55.4%"), std::string::npos) << family_line;
  EXPECT_NE(root_line.find("10 µs"), std::string::npos) << text;
  EXPECT_NE(root_line.find("26.8%"), std::string::npos) << root_line;
  EXPECT_NE(text.find("timings are host-side"), std::string::npos);
  EXPECT_NE(text.find("1 traced module paths match no module here"), std::string::npos);
  // Without a trace, the table has no time columns.
  auto plain = timed();
  plain.ir.runtime.reset();
  EXPECT_EQ(cg::query::render_model_summary(plain, "", {.dtype = "F32"}).find("Time (total)"),
            std::string::npos);
}

TEST(ModuleTimingsView, QueryIsBoundedAndOrderedBySelfTime) {
  auto a = timed();
  cg::query::QueryRequest r;
  r.kind = "module-timings";
  r.limit = 2;
  std::string out = cg::query::answer_query(a, r);
  EXPECT_NE(out.find("\"total\": 4"), std::string::npos) << out;
  EXPECT_NE(out.find("\"returned\": 2"), std::string::npos) << out;
  EXPECT_NE(out.find("\"truncated\": true"), std::string::npos) << out;
  EXPECT_NE(out.find("\"wall_ns\": 11200"), std::string::npos) << out;
  auto fam = out.find("\"path\": \"model.layers.{i}\""),
       l1 = out.find("\"path\": \"model.layers.1\"");
  ASSERT_NE(fam, std::string::npos) << out;
  EXPECT_LT(fam, l1);                                                    // self 6200 before 4200
  EXPECT_EQ(out.find("\"path\": \"model\""), std::string::npos) << out;  // page 2
  r.selector = "layers.0";
  r.limit = 100;
  out = cg::query::answer_query(a, r);
  EXPECT_NE(out.find("\"total\": 1"), std::string::npos) << out;
  EXPECT_NE(out.find("\"instance\": 0"), std::string::npos) << out;
  // No trace merged: a clear error, not an empty answer.
  auto none = timed();
  none.ir.runtime.reset();
  r.selector.clear();
  EXPECT_THROW((void)cg::query::answer_query(none, r), cg::InputError);
}

// Two threads busy at the same time: the run's wall time is their union (rt.wall_ns, what
// `profile` prints), not the 11.2 µs sum of their busy times. `query module-timings`, `query
// profile` (and the MCP tools, which answer through the same function) and the summary table all
// divide by it: the root's 3 µs self time is 30% of a 10 µs run.
TEST(ModuleTimingsView, SharesAreOfTheRunsRealWallTime) {
  auto a = timed();
  a.ir.runtime->wall_ns = 10000;  // thread 1's 1.2 µs ran inside thread 0's 10 µs
  cg::query::QueryRequest r;
  r.kind = "module-timings";
  r.limit = 100;
  std::string out = cg::query::answer_query(a, r);
  EXPECT_NE(out.find("\"wall_ns\": 10000"), std::string::npos) << out;
  EXPECT_NE(out.find("\"self_share\": 0.3,"), std::string::npos) << out;
  r.kind = "profile";
  out = cg::query::answer_query(a, r);
  EXPECT_NE(out.find("\"step_time_ns\": 10000"), std::string::npos) << out;
  EXPECT_EQ(out.find("\"step_time_ns\": 11200"), std::string::npos) << out;
  std::string text = cg::query::render_model_summary(a, "", {.dtype = "F32"});
  std::string root_line;
  for (std::size_t at = 0; at < text.size();) {
    std::size_t nl = text.find('\n', at);
    std::string line = text.substr(at, nl - at);
    if (line.rfind("Model (Model)", 0) == 0) root_line = line;
    at = nl + 1;
  }
  EXPECT_NE(root_line.find("30.0%"), std::string::npos) << root_line;
  // An IR merged before the field existed (wall_ns 0): the busy times' sum, as before.
  a.ir.runtime->wall_ns = 0;
  r.kind = "module-timings";
  EXPECT_NE(cg::query::answer_query(a, r).find("\"wall_ns\": 11200"), std::string::npos);
}

}  // namespace
