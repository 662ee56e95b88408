// Module scope timings land in the IR (runtime.module_timings): paths resolve to module instances
// and `{i}` families under the caller prefix and one component; several traces aggregate;
// unmatched paths are counted and named, never dropped.
#include <gtest/gtest.h>

#include "ir/model.hpp"
#include "runtime/merge_ir.hpp"
#include "runtime/module_paths.hpp"
#include "trace_test_util.hpp"

namespace cg::runtime {
namespace {

ir::ModelIr model_ir() {
  ir::ModelIr m;
  auto component = [&](const char* id, const char* name) {
    ir::Component c;
    c.id = id;
    c.name = name;
    c.qualified_name = std::string("tiny::") + name;
    m.components.push_back(c);
  };
  component("component:Model", "Model");
  component("component:Other", "Other");
  auto module = [&](const char* id, const char* comp, const char* prefix, bool family) {
    ir::Module mod;
    mod.id = id;
    mod.component = comp;
    mod.prefix = prefix;
    mod.builder_root = "vb";
    if (family) mod.repeat = "i in 0..n (not expanded: no config)";
    m.modules.push_back(mod);
  };
  module("module:a-root", "component:Model", "", false);
  module("module:b-layers", "component:Model", "layers.{i}", true);
  module("module:c-mlp", "component:Model", "layers.{i}.mlp", true);
  module("module:d-other-layers", "component:Other", "layers.{i}", true);
  return m;
}

const ir::ModuleTiming& row(const ir::ModelIr& m, const std::string& path) {
  for (const auto& t : m.runtime->module_timings) {
    if (t.path == path) return t;
  }
  throw std::runtime_error("no module timing row for " + path);
}

std::filesystem::path second_rank() {
  return testing::write_temp(
      "rank1.jsonl",
      R"({"kind":"meta","schema":"candle-graph/runtime/4","entrypoint":"tiny::forward","profile":"release","cargo_features":[],"cfg":[],"phase":"infer"})"
      "\n"
      R"({"kind":"module","event_id":"infer-mod-0-1","path":"model.layers.1","step":0,"duration_ns":900,"start_ns":0,"thread":0})"
      "\n"
      R"({"kind":"module","event_id":"infer-mod-0-2","path":"model.vision","step":0,"duration_ns":100,"start_ns":1000,"thread":0})"
      "\n"
      R"({"kind":"end","operations":0,"edge_timings":0,"dropped":0,"errors":0,"open_operations":0,"threads":1,"duration_ns":1200,"modules":2,"open_modules":0})"
      "\n");
}

TEST(ModuleTimings, PathsResolveToInstancesAndFamiliesAcrossRanks) {
  auto m = model_ir();
  auto traces = read_traces({testing::fixture("v4c_modules.jsonl"), second_rank()});
  merge_runtime(m, traces, {"model", ""});
  ASSERT_TRUE(m.runtime);
  const auto& rt = *m.runtime;
  ASSERT_EQ(rt.module_timings.size(), 7u);             // model.vision too, with no module
  EXPECT_EQ(rt.module_timings.front().path, "model");  // sorted by path
  EXPECT_EQ(row(m, "model").module, "module:a-root");
  EXPECT_FALSE(row(m, "model").instance);
  EXPECT_EQ(row(m, "model").total.total_ns, 10000u);
  EXPECT_EQ(row(m, "model").self.total_ns, 3000u);
  const auto& l1 = row(m, "model.layers.1");
  EXPECT_EQ(l1.module, "module:b-layers");
  EXPECT_EQ(l1.instance, 1u);
  EXPECT_EQ(l1.calls, 4u);  // three scopes in rank 0, one in rank 1
  EXPECT_EQ(l1.total.total_ns, 5100u);
  EXPECT_EQ(row(m, "model.layers.0.mlp").module, "module:c-mlp");
  EXPECT_EQ(row(m, "model.layers.0.mlp").instance, 0u);
  // The family row folds both layers: totals 4000, 3000, 500, 700, 900.
  const auto& family = row(m, "model.layers.{i}");
  EXPECT_EQ(family.module, "module:b-layers");
  EXPECT_FALSE(family.instance);
  EXPECT_EQ(family.calls, 5u);
  EXPECT_EQ(family.total.total_ns, 9100u);
  EXPECT_EQ(family.self.total_ns, 7100u);
  EXPECT_EQ(family.total.p50_ns, 900u);
  EXPECT_EQ(family.total.p95_ns, 4000u);
  EXPECT_EQ(family.total.max_ns, 4000u);
  // model.vision is in no module of the component: counted and named, and its time kept as a
  // row of its own with no module.
  EXPECT_EQ(row(m, "model.vision").module, "");
  EXPECT_EQ(row(m, "model.vision").total.total_ns, 100u);
  EXPECT_EQ(row(m, "model.vision").calls, 1u);
  EXPECT_EQ(rt.unmatched_module_paths, 1u);
  EXPECT_EQ(rt.unmatched_module_path_examples, std::vector<std::string>{"model.vision"});
  EXPECT_TRUE(rt.host_side_timings);
  EXPECT_EQ(rt.thread_busy_ns, (std::vector<std::uint64_t>{10000, 1200, 1000}));
  // Wall time: rank 0's thread 1 (1000..1500, 2000..2700) runs inside thread 0's 1000..11000, so
  // rank 0 spans 10000; rank 1 spans 1000 (0..900, 1000..1100): 11000, not the 12200 busy sum.
  EXPECT_EQ(rt.wall_ns, 11000u);
  bool found = false;
  for (const auto& f : m.findings) {
    found = found || (f.rule == "runtime-unmapped" &&
                      f.message.find("1 traced module scope paths name no module of "
                                     "tiny::Model under prefix `model` (first: "
                                     "model.vision)") != std::string::npos);
  }
  EXPECT_TRUE(found);
  // The IR round-trips with its module timings.
  EXPECT_EQ(ir::parse_model_ir(ir::write_model_ir(m), "m.json"), m);
}

TEST(ModuleTimings, WithoutTheCallerPrefixNothingMatchesAndTheFindingSaysWhy) {
  auto m = model_ir();
  merge_runtime(m, read_traces({testing::fixture("v4_modules.jsonl")}));
  // Each path keeps its row and time, none resolved to a module.
  EXPECT_EQ(m.runtime->module_timings.size(), 4u);
  for (const auto& t : m.runtime->module_timings)
    EXPECT_EQ(t.module, "") << t.path;
  EXPECT_EQ(m.runtime->unmatched_module_paths, 4u);
  bool hint = false;
  for (const auto& f : m.findings)
    hint = hint || f.message.find("pass --prefix") != std::string::npos;
  EXPECT_TRUE(hint);
}

TEST(ModuleTimings, RootSelectsTheComponent) {
  auto m = model_ir();
  merge_runtime(m, read_traces({testing::fixture("v4_modules.jsonl")}), {"model", "Other"});
  // Only layers.{i} exists in Other: the two layer paths match, root and mlp do not.
  EXPECT_EQ(row(m, "model.layers.1").module, "module:d-other-layers");
  EXPECT_EQ(m.runtime->unmatched_module_paths, 2u);
}

// A head tied to the embedding is a module with no weights of its own at the embedding's key
// (`embed`); the instrumented model times it under its field's path (`lm_head`): that path is the
// tied module's, not an unmatched one.
TEST(ModuleTimings, ATiedHeadIsFoundByItsFieldsPath) {
  auto m = model_ir();
  ir::Module embed;
  embed.id = "module:e-embed";
  embed.component = "component:Model";
  embed.prefix = "embed";
  embed.parent = "module:a-root";
  embed.field = "embed";
  m.modules.push_back(embed);
  ir::Module head = embed;
  head.id = "module:f-head";
  head.field = "lm_head";
  m.modules.push_back(head);
  ModulePathResolver r(m, {"model", ""});
  auto got = r.resolve({"model.lm_head", "model.embed", "model.nothing"});
  ASSERT_TRUE(got.at("model.lm_head"));
  EXPECT_EQ(got.at("model.lm_head")->module, "module:f-head");
  ASSERT_TRUE(got.at("model.embed"));
  EXPECT_EQ(got.at("model.embed")->module, "module:e-embed");
  EXPECT_FALSE(got.at("model.nothing"));
}

TEST(ModuleTimings, SegmentTemplates) {
  std::optional<std::uint64_t> i;
  EXPECT_TRUE(match_segment("block_{i}", "block_12", i));
  EXPECT_EQ(i, 12u);
  EXPECT_FALSE(match_segment("block_{i}", "block_", i));
  EXPECT_FALSE(match_segment("block_{i}", "block_x", i));
  EXPECT_FALSE(match_segment("{i}", "3a", i));
  EXPECT_TRUE(match_segment("mlp", "mlp", i));
}

}  // namespace
}  // namespace cg::runtime
