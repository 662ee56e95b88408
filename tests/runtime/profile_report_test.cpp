// `profile` arithmetic on a nested two-thread trace, figures computed by hand:
//   thread 0, step 0: forward 0..1000 containing matmul 100..400 and softmax 500..700
//   thread 1, step 1: forward 0..600 containing matmul 100..300
// The threads' busy time is 1000 + 600 = 1600 ns (not the 2300 ns sum of inclusive durations);
// self times forward 900, matmul 500, softmax 200 add up to it. The run's wall time is their union,
// 1000 ns (WallTimeIsTheRunsSpanOverThreads); the first test divides by the busy time, as an IR
// merged before `runtime.wall_ns` existed does.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <algorithm>

#include "runtime/aggregate.hpp"
#include "runtime/merge_ir.hpp"
#include "runtime/report_json.hpp"
#include "trace_test_util.hpp"

namespace cg::runtime {
namespace {

ir::ModelIr block_ir() {
  ir::ModelIr m;
  ir::Function f;
  f.id = "function:model::Block::forward:";
  f.owner_type = "model::Block";
  m.functions.push_back(f);
  for (const char* id : {"operation:infer:f:0", "operation:infer:f:1", "operation:infer:f:2"}) {
    ir::Operation op;
    op.id = id;
    op.function = f.id;
    op.name = "op";
    m.operations.push_back(op);
  }
  return m;
}

TEST(ProfileReport, NestedTraceSelfTotalWallAndShares) {
  auto m = block_ir();
  merge_runtime(m, read_traces({testing::fixture("v4_nested_two_threads.jsonl")}));
  EXPECT_EQ(m.runtime->wall_ns, 1000u);
  m.runtime->wall_ns = 0;  // an IR without it: the busy-time fallback
  auto r = profile_report(m);
  EXPECT_EQ(r.step_time_ns, 1600u);
  EXPECT_EQ(r.steps, 2u);
  EXPECT_EQ(r.thread_busy_ns, (std::vector<std::uint64_t>{1000, 600}));
  ASSERT_EQ(r.operations.size(), 3u);
  EXPECT_EQ(r.operations[0].id, "operation:infer:f:0");  // by self: 900, 500, 200
  EXPECT_EQ(r.operations[0].self_ns, 900u);
  EXPECT_EQ(r.operations[0].timing.total_ns, 1600u);
  EXPECT_DOUBLE_EQ(r.operations[0].share_of_step, 900.0 / 1600.0);
  EXPECT_DOUBLE_EQ(r.operations[0].total_share, 1.0);
  EXPECT_EQ(r.operations[1].self_ns, 500u);
  EXPECT_DOUBLE_EQ(r.operations[1].share_of_step, 500.0 / 1600.0);
  EXPECT_EQ(r.operations[2].self_ns, 200u);
  double shares = 0;
  for (const auto& o : r.operations)
    shares += o.share_of_step;
  EXPECT_DOUBLE_EQ(shares, 1.0);
  // The owner-type roll-up: self sums to the wall time, total overlaps.
  ASSERT_EQ(r.modules.size(), 1u);
  EXPECT_EQ(r.modules[0].self_ns, 1600u);
  EXPECT_EQ(r.modules[0].timing.total_ns, 2300u);
  EXPECT_TRUE(r.modules[0].sums_only);
  // Sorted by total instead: forward, matmul, softmax still, but by inclusive time.
  auto by_total = profile_report(m, false);
  EXPECT_EQ(by_total.operations[0].timing.total_ns, 1600u);

  JsonWriter w(0);
  write_profile_report(w, r);
  simdjson::dom::parser parser;
  simdjson::dom::element doc = parser.parse(w.str());
  EXPECT_EQ(doc["wall_ns_per_step"].get_uint64().value(), 800u);
  EXPECT_EQ(doc["step_time_ns"].get_uint64().value(), 1600u);
  EXPECT_TRUE(doc["modules"].at(0)["timing"]["p50_ns"].is_null());  // absent, not 0
  EXPECT_EQ(doc["operations"].at(0)["self_ns"].get_uint64().value(), 900u);
  std::string_view note;
  ASSERT_FALSE(doc["note"].get_string().get(note));
  EXPECT_NE(note.find("timings are host-side"), std::string_view::npos);
}

TEST(ProfileReport, ModuleScopeRowsAndFamilies) {
  auto m = block_ir();
  ir::Component c;
  c.id = "component:Model";
  c.name = "Model";
  m.components.push_back(c);
  ir::Module root, layers;
  root.id = "module:a";
  root.component = c.id;
  layers.id = "module:b";
  layers.component = c.id;
  layers.prefix = "layers.{i}";
  m.modules = {root, layers};
  merge_runtime(m, read_traces({testing::fixture("v4_modules.jsonl")}), {"model", ""});
  m.runtime->wall_ns = 0;  // the busy-time fallback, as an IR merged before it existed
  auto r = profile_report(m);
  EXPECT_TRUE(r.has_module_scopes);
  // Busy: thread 0 10000 ns, thread 1 1200 ns.
  EXPECT_EQ(r.step_time_ns, 11200u);
  // model, layers.0, layers.1, and layers.0.mlp, which names no module: a row with no module.
  ASSERT_EQ(r.module_scopes.size(), 4u);
  EXPECT_EQ(r.module_scopes[0].id, "model.layers.1");  // self 4200
  const auto mlp = std::find_if(r.module_scopes.begin(), r.module_scopes.end(),
                                [](const auto& x) { return x.id == "model.layers.0.mlp"; });
  ASSERT_NE(mlp, r.module_scopes.end());
  EXPECT_EQ(mlp->module, "");
  EXPECT_EQ(r.module_scopes[0].self_ns, 4200u);
  EXPECT_DOUBLE_EQ(r.module_scopes[0].share_of_step, 4200.0 / 11200.0);
  ASSERT_EQ(r.module_families.size(), 1u);
  EXPECT_EQ(r.module_families[0].id, "model.layers.{i}");
  EXPECT_EQ(r.module_families[0].timing.samples, 4u);
  EXPECT_EQ(r.module_families[0].timing.max_ns, 4000u);  // the slowest instance's call
}

// Wall time is the run's real span: the union over threads of the covered interval, not the sum
// of the threads' busy time. Thread 0 runs 0..1000 and thread 1 0..600 in the same trace: the run
// took 1000 ns (the 1600 ns above is the threads' busy time). Self shares of concurrent threads
// may then add up past 100 %: 1600 / 1000.
TEST(ProfileReport, WallTimeIsTheRunsSpanOverThreads) {
  auto traces = read_traces({testing::fixture("v4_nested_two_threads.jsonl")});
  ASSERT_EQ(traces.size(), 1u);
  EXPECT_EQ(traces[0].info.span_ns, 1000u);
  auto m = block_ir();
  merge_runtime(m, traces);
  auto r = profile_report(m, true, traces[0].info.span_ns);
  EXPECT_EQ(r.step_time_ns, 1000u);
  // `query profile` and the MCP tool pass no span: the one merged into the IR is the same.
  EXPECT_EQ(m.runtime->wall_ns, 1000u);
  EXPECT_EQ(profile_report(m).step_time_ns, 1000u);
  EXPECT_EQ(r.thread_busy_ns, (std::vector<std::uint64_t>{1000, 600}));  // still reported
  ASSERT_EQ(r.operations.size(), 3u);
  EXPECT_EQ(r.operations[0].self_ns, 900u);
  EXPECT_DOUBLE_EQ(r.operations[0].share_of_step, 0.9);
  EXPECT_DOUBLE_EQ(r.operations[0].total_share, 1.6);  // 1600 ns of forward in 1000 ns
  // Without the span in the IR either (one merged before `wall_ns`), the busy-time sum stands in.
  m.runtime->wall_ns = 0;
  EXPECT_EQ(profile_report(m).step_time_ns, 1600u);

  // v4_modules: thread 0's model scope 1000..11000 covers thread 1's 1000..1500 and 2000..2700,
  // so the span is 10000 ns where the busy sum is 11200.
  auto modules = read_traces({testing::fixture("v4_modules.jsonl")});
  EXPECT_EQ(modules[0].info.span_ns, 10000u);
  // Two traces (two runs): their clocks are unrelated, so their spans add.
  auto both = read_traces(
      {testing::fixture("v4_nested_two_threads.jsonl"), testing::fixture("v4_modules.jsonl")});
  EXPECT_EQ(both[0].info.span_ns + both[1].info.span_ns, 11000u);
}

TEST(ProfileReport, SpanUnionTakesIntervalsInAnyOrder) {
  SpanUnion u;
  u.add(100, 200);
  u.add(0, 50);
  EXPECT_EQ(u.covered_ns(), 150u);
  u.add(40, 120);  // bridges both: [0, 200]
  EXPECT_EQ(u.covered_ns(), 200u);
  u.add(300, 400);
  u.add(250, 260);
  EXPECT_EQ(u.covered_ns(), 310u);  // 200 + 100 + 10
  u.add(200, 250);                  // touches [0, 200] and [250, 260]: [0, 260]
  EXPECT_EQ(u.covered_ns(), 360u);
  u.add(350, 380);  // inside: nothing new
  EXPECT_EQ(u.covered_ns(), 360u);
  u.add(5, 5);  // empty
  EXPECT_EQ(u.covered_ns(), 360u);
}

}  // namespace
}  // namespace cg::runtime
