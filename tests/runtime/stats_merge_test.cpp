// Tensor statistics merged into the IR (runtime.module_stats / grad_stats) and the findings drawn
// from them (docs/diagnostics.md): paths resolve as module timings do, keys to parameters, nothing
// unmatched is dropped, and every expected figure is computed here from the trace's elements.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <limits>

#include "ir/model.hpp"
#include "runtime/merge_ir.hpp"
#include "scratch.hpp"
#include "stats_test_util.hpp"

namespace cg::runtime {
namespace {

using testing::compute;
using testing::end_line;
using ::testing::HasSubstr;
using testing::kMetaV4Stats;
using testing::stats_line;

constexpr double kNan = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

std::filesystem::path write(const std::string& name, const std::string& text) {
  auto path = cg_test::scratch_path(name);
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

ir::ModelIr model_ir() {
  ir::ModelIr m;
  ir::Component c;
  c.id = "component:Model";
  c.name = "Model";
  c.qualified_name = "tiny::Model";
  m.components.push_back(c);
  auto module = [&](const char* id, const char* prefix, bool family) {
    ir::Module mod;
    mod.id = id;
    mod.component = "component:Model";
    mod.prefix = prefix;
    mod.builder_root = "vb";
    if (family) mod.repeat = "i in 0..n (not expanded: no config)";
    m.modules.push_back(mod);
  };
  module("module:a-root", "", false);
  module("module:b-layers", "layers.{i}", true);
  module("module:c-mlp", "layers.{i}.mlp", true);
  auto parameter = [&](const char* id, const char* key) {
    ir::Parameter p;
    p.id = id;
    p.component = "component:Model";
    p.key = key;
    p.builder_root = "vb";
    m.parameters.push_back(p);
  };
  parameter("parameter:up", "layers.{i}.mlp.up_proj.weight");
  parameter("parameter:head", "lm_head.weight");
  return m;
}

const ir::ModuleStats& row(const ir::ModelIr& m, const std::string& path) {
  for (const auto& s : m.runtime->module_stats) {
    if (s.path == path) return s;
  }
  throw std::runtime_error("no module_stats row for " + path);
}

const ir::GradStats& grad(const ir::ModelIr& m, const std::string& key) {
  for (const auto& s : m.runtime->grad_stats) {
    if (s.key == key) return s;
  }
  throw std::runtime_error("no grad_stats row for " + key);
}

std::vector<const ir::Finding*> findings(const ir::ModelIr& m, const std::string& rule) {
  std::vector<const ir::Finding*> out;
  for (const auto& f : m.findings) {
    if (f.rule == rule) out.push_back(&f);
  }
  return out;
}

std::string layer(int i) {
  return "model.layers." + std::to_string(i);
}

// Layer i's output at step 0 holds {3^i, -3^i}: its RMS triples from layer to layer.
std::vector<double> growing(int i) {
  const double a = std::pow(3.0, i);
  return {a, -a};
}

struct Trace {
  std::string text = kMetaV4Stats;
  std::uint64_t lines = 0;
  void add(const std::string& path, const std::string& of, std::uint64_t step, std::uint64_t at,
           const std::vector<double>& v, std::uint64_t thread = 0,
           const std::string& reason = "sampled") {
    text += stats_line(++lines, path, of, step, at, v, thread, reason);
  }
  std::filesystem::path write_to(const std::string& name) {
    return write(name, text + end_line(lines));
  }
};

const std::vector<double> kZeroGrad = {0.0, 0.0, 0.0};
const std::vector<double> kGradStep0 = {3.0, 4.0};
const std::vector<double> kGradStep1 = {kNan, 1.0, kNan, -kInf};
const std::vector<double> kMlp = {0.5, -0.5, 0.0, 0.0};

std::filesystem::path run_trace() {
  Trace t;
  for (int i = 0; i < 5; ++i)
    t.add(layer(i), "output", 0, 100 + static_cast<std::uint64_t>(i), growing(i));
  for (int i = 0; i < 5; ++i)
    t.add(layer(i) + ".mlp", "output", 0, 200 + static_cast<std::uint64_t>(i), kMlp);
  t.add("model.vision", "output", 0, 300, {1.0});
  t.add("model.layers.0.mlp.up_proj.weight", "grad", 0, 310, kZeroGrad);
  t.add("model.layers.1.mlp.up_proj.weight", "grad", 0, 311, kGradStep0);
  t.add("model.ghost.weight", "grad", 0, 312, {1.0});
  // Step 1: layer 0 is finite; layer 2's mlp goes non-finite first (thread 0, at 500), layer 3's
  // mlp at the same instant on thread 1 (later in the order), layer 2 itself after its mlp.
  t.add(layer(0), "output", 1, 400, growing(0));
  t.add(layer(3) + ".mlp", "output", 1, 500, {kInf, 1.0}, 1, "non_finite");
  t.add(layer(2) + ".mlp", "output", 1, 500, {kNan, kNan, 0.5, kInf}, 0, "non_finite");
  t.add(layer(2), "output", 1, 600, {9.0, -9.0, kNan}, 0, "non_finite");
  t.add("model.layers.0.mlp.up_proj.weight", "grad", 1, 700, kZeroGrad);
  t.add("model.layers.1.mlp.up_proj.weight", "grad", 1, 701, kGradStep1, 0, "non_finite");
  return t.write_to("stats-merge.jsonl");
}

TEST(StatsMerge, ModuleOutputsResolveLikeModuleTimingsWithFamilyRows) {
  auto m = model_ir();
  merge_runtime(m, read_traces({run_trace()}), {"model", ""});
  ASSERT_TRUE(m.runtime);
  const auto& rt = *m.runtime;
  EXPECT_EQ(rt.stats_records, 20u);
  // Layer 2: two samples (steps 0 and 1), the last one the step-1 record with its NaN.
  const auto& l2 = row(m, layer(2));
  EXPECT_EQ(l2.module, "module:b-layers");
  EXPECT_EQ(l2.instance, 2u);
  EXPECT_EQ(l2.samples, 2u);
  EXPECT_EQ(l2.steps, 2u);
  EXPECT_EQ(l2.last.step, 1u);
  EXPECT_EQ(l2.last.nan, 1u);
  EXPECT_EQ(l2.last.elements, 3u);
  const auto c2 = compute({9.0, -9.0, kNan});
  EXPECT_DOUBLE_EQ(*l2.last.rms, c2.rms);
  EXPECT_DOUBLE_EQ(*l2.max_abs_max, std::max(compute(growing(2)).abs_max, c2.abs_max));
  EXPECT_EQ(l2.nan, 1u);
  ASSERT_TRUE(l2.first_non_finite);
  EXPECT_EQ(l2.first_non_finite->step, 1u);
  EXPECT_EQ(l2.first_non_finite->at_ns, 600u);
  EXPECT_EQ(l2.first_non_finite->reason, "non_finite");
  // The mlp family: four elements, two of them zero, in every finite sample.
  const auto& mlp0 = row(m, layer(0) + ".mlp");
  EXPECT_EQ(mlp0.module, "module:c-mlp");
  EXPECT_DOUBLE_EQ(mlp0.max_zeros_fraction, static_cast<double>(compute(kMlp).zeros) / 4.0);
  EXPECT_FALSE(mlp0.first_non_finite);
  // Family row: every member of layers.{i} folded (seven samples: five at step 0, two at step 1).
  const auto& family = row(m, "model.layers.{i}");
  EXPECT_EQ(family.module, "module:b-layers");
  EXPECT_FALSE(family.instance);
  EXPECT_EQ(family.samples, 7u);
  EXPECT_EQ(family.steps, 2u);
  EXPECT_DOUBLE_EQ(*family.max_rms, compute(growing(4)).rms);
  EXPECT_EQ(family.nan, 1u);
  ASSERT_TRUE(family.first_non_finite);
  EXPECT_EQ(family.first_non_finite->at_ns, 600u);
  const auto& mlp_family = row(m, "model.layers.{i}.mlp");
  EXPECT_EQ(mlp_family.nan, 2u);
  EXPECT_EQ(mlp_family.pos_inf, 2u);
  ASSERT_TRUE(mlp_family.first_non_finite);
  EXPECT_EQ(mlp_family.first_non_finite->thread, 0u);  // same instant: thread 0 before 1
  // model.vision names no module: its row is kept with no module, counted and named.
  EXPECT_EQ(row(m, "model.vision").module, "");
  EXPECT_EQ(rt.unmatched_stats_paths, 1u);
  EXPECT_EQ(rt.unmatched_stats_path_examples, std::vector<std::string>{"model.vision"});
  bool named = false;
  for (const auto* f : findings(m, "runtime-unmapped"))
    named = named || f->message.find(
                         "1 stats paths (module outputs) name no module instance "
                         "(first: model.vision)") != std::string::npos;
  EXPECT_TRUE(named);
  // The IR round-trips with its statistics.
  EXPECT_EQ(ir::parse_model_ir(ir::write_model_ir(m), "m.json"), m);
}

TEST(StatsMerge, GradientStatsByParameterKey) {
  auto m = model_ir();
  merge_runtime(m, read_traces({run_trace()}), {"model", ""});
  const auto& dead = grad(m, "model.layers.0.mlp.up_proj.weight");
  EXPECT_EQ(dead.parameters, std::vector<std::string>{"parameter:up"});
  EXPECT_EQ(dead.samples, 2u);
  EXPECT_TRUE(dead.all_zero);
  EXPECT_EQ(*dead.norm_max, 0.0);
  const auto& bad = grad(m, "model.layers.1.mlp.up_proj.weight");
  EXPECT_FALSE(bad.all_zero);
  // norm = rms * sqrt(finite elements): {3, 4} → 5; the step-1 sample has one finite element, 1.
  const auto c0 = compute(kGradStep0), c1 = compute(kGradStep1);
  const double n0 = c0.rms * std::sqrt(static_cast<double>(c0.finite));
  const double n1 = c1.rms * std::sqrt(static_cast<double>(c1.finite));
  EXPECT_NEAR(n0, 5.0, 1e-12);
  EXPECT_DOUBLE_EQ(*bad.norm_max, n0);
  EXPECT_DOUBLE_EQ(*bad.norm_min, n1);
  EXPECT_DOUBLE_EQ(*bad.norm_last, n1);
  EXPECT_DOUBLE_EQ(*bad.max_abs_max, std::max(c0.abs_max, c1.abs_max));
  EXPECT_EQ(bad.nan, c1.nan);
  EXPECT_EQ(bad.neg_inf, c1.neg_inf);
  ASSERT_TRUE(bad.first_non_finite);
  EXPECT_EQ(bad.first_non_finite->step, 1u);
  // A key no parameter has: kept, counted, named.
  EXPECT_TRUE(grad(m, "model.ghost.weight").parameters.empty());
  EXPECT_EQ(m.runtime->unmatched_grad_keys, 1u);
  EXPECT_EQ(m.runtime->unmatched_grad_key_examples, std::vector<std::string>{"model.ghost.weight"});

  const auto dead_findings = findings(m, "runtime-dead-gradient");
  ASSERT_EQ(dead_findings.size(), 1u);
  EXPECT_THAT(dead_findings[0]->message,
              HasSubstr("`model.layers.0.mlp.up_proj.weight` was all zero in every one of its 2 "
                        "recorded samples"));
  EXPECT_EQ(dead_findings[0]->confidence, ir::Confidence::conditional);
  EXPECT_EQ(dead_findings[0]->related, std::vector<std::string>{"parameter:up"});
  const auto nf = findings(m, "runtime-non-finite-gradient");
  ASSERT_EQ(nf.size(), 1u);
  EXPECT_THAT(nf[0]->message, HasSubstr("`model.layers.1.mlp.up_proj.weight` held non-finite "
                                        "values, first at step 1: 2 NaN, 0 +Inf, 1 -Inf"));
  EXPECT_EQ(nf[0]->severity, ir::Severity::error);
}

TEST(StatsMerge, FirstNonFiniteIsTheEarliestModuleNotItsParent) {
  auto m = model_ir();
  merge_runtime(m, read_traces({run_trace()}), {"model", ""});
  const auto first = findings(m, "runtime-first-non-finite");
  ASSERT_EQ(first.size(), 1u);
  // layers.2.mlp (thread 0, at 500) comes before layers.3.mlp (thread 1, at 500) and before
  // layers.2 (at 600), which holds the same NaN later.
  EXPECT_THAT(first[0]->message, HasSubstr("`model.layers.2.mlp` at step 1 (at_ns 500, thread 0): "
                                           "2 NaN, 1 +Inf, 0 -Inf of 4 elements"));
  EXPECT_THAT(first[0]->message, HasSubstr("every module output recorded before it was finite"));
  EXPECT_EQ(first[0]->confidence, ir::Confidence::conditional);
  EXPECT_EQ(first[0]->related, std::vector<std::string>{"module:c-mlp"});
}

TEST(StatsMerge, FirstRecordOfItsStepSaysItsInputsWereNotObserved) {
  Trace t;
  t.add(layer(0), "output", 0, 100, {1.0});
  t.add(layer(1), "output", 3, 50, {kNan}, 0, "non_finite");
  t.add(layer(0), "output", 3, 40, {2.0}, 1);  // thread 1, earlier, finite: layer 1 is not first
  t.add(layer(1), "output", 4, 10, {kNan}, 0, "non_finite");
  auto m = model_ir();
  merge_runtime(m, read_traces({t.write_to("stats-first-in-step.jsonl")}), {"model", ""});
  auto first = findings(m, "runtime-first-non-finite");
  ASSERT_EQ(first.size(), 1u);
  EXPECT_THAT(first[0]->message, HasSubstr("`model.layers.1` at step 3"));
  EXPECT_THAT(first[0]->message, HasSubstr("every module output recorded before it was finite"));

  Trace u;
  u.add(layer(0), "output", 0, 100, {1.0});
  u.add(layer(1), "output", 3, 50, {kNan, 1.0}, 0, "non_finite");
  u.add(layer(2), "output", 3, 60, {kNan, 1.0}, 0, "non_finite");
  auto n = model_ir();
  merge_runtime(n, read_traces({u.write_to("stats-first-of-step.jsonl")}), {"model", ""});
  first = findings(n, "runtime-first-non-finite");
  ASSERT_EQ(first.size(), 1u);
  EXPECT_THAT(first[0]->message, HasSubstr("`model.layers.1` at step 3"));
  EXPECT_THAT(first[0]->message, HasSubstr("first module output recorded in step 3, so its inputs "
                                           "were not observed"));
}

TEST(StatsMerge, ActivationGrowthAlongAFamilyNamesFactorAndLayers) {
  auto m = model_ir();
  merge_runtime(m, read_traces({run_trace()}), {"model", ""});
  const auto growth = findings(m, "runtime-activation-growth");
  // layers.{i}: RMS 1, 3, 9, 27, 81 (x3 each); the mlp family is flat and raises nothing.
  ASSERT_EQ(growth.size(), 1u);
  EXPECT_THAT(growth[0]->message,
              HasSubstr("output RMS of `model.layers.{i}` grows more than 2x per layer over 4 "
                        "consecutive layers, 0 to 4 (RMS 1 -> 81; 3x, 3x, 3x, 3x"));
  EXPECT_EQ(growth[0]->confidence, ir::Confidence::heuristic);
  EXPECT_EQ(growth[0]->severity, ir::Severity::warning);
  // Above the stated factor nothing fires; a shorter run than asked for neither.
  auto strict = model_ir();
  merge_runtime(strict, read_traces({run_trace()}), {"model", ""}, {3.5, 3});
  EXPECT_TRUE(findings(strict, "runtime-activation-growth").empty());
  auto longer = model_ir();
  merge_runtime(longer, read_traces({run_trace()}), {"model", ""}, {2.0, 5});
  EXPECT_TRUE(findings(longer, "runtime-activation-growth").empty());
}

// With a config the family is expanded: each layer its own module, no `{i}` row. The growth rule
// still walks the layers in order.
TEST(StatsMerge, ActivationGrowthAlsoAlongAnExpandedFamily) {
  ir::ModelIr m;
  ir::Component c;
  c.id = "component:Model";
  c.name = "Model";
  m.components.push_back(c);
  for (int i = 0; i < 4; ++i) {
    ir::Module mod;
    mod.id = "module:layer" + std::to_string(i);
    mod.component = c.id;
    mod.prefix = "layers." + std::to_string(i);
    mod.repeat = "i in 0..4";
    m.modules.push_back(mod);
  }
  Trace t;
  // RMS 1, 2.5, 6.25, 15.625: x2.5 per layer over 3 layers.
  double a = 1;
  for (int i = 0; i < 4; ++i, a *= 2.5)
    t.add(layer(i), "output", 0, 10 + static_cast<std::uint64_t>(i), {a, -a});
  merge_runtime(m, read_traces({t.write_to("stats-expanded.jsonl")}), {"model", ""});
  EXPECT_EQ(row(m, layer(3)).module, "module:layer3");
  EXPECT_EQ(row(m, layer(3)).instance, 3u);
  const auto growth = findings(m, "runtime-activation-growth");
  ASSERT_EQ(growth.size(), 1u);
  EXPECT_THAT(growth[0]->message, HasSubstr("`model.layers.{i}` grows more than 2x per layer over "
                                            "3 consecutive layers, 0 to 3 (RMS 1 -> 15.6"));
}

TEST(StatsMerge, ATraceWithoutStatsAddsNoRowsAndOldIrJsonStillReads) {
  auto m = model_ir();
  Trace t;
  merge_runtime(
      m,
      read_traces({write(
          "stats-none.jsonl",
          t.text +
              R"({"kind":"end","operations":0,"edge_timings":0,"dropped":0,"errors":0,"open_operations":0,"threads":1,"duration_ns":10})"
              "\n")}));
  ASSERT_TRUE(m.runtime);
  EXPECT_EQ(m.runtime->stats_records, 0u);
  EXPECT_TRUE(m.runtime->module_stats.empty());
  // An IR written before tensor statistics existed: the runtime object without their fields.
  std::string json = ir::write_model_ir(m);
  const auto from = json.find(",\n    \"stats_records\"");
  ASSERT_NE(from, std::string::npos);
  const auto to = json.find("\n  }", from);
  json.erase(from, to - from);
  ASSERT_EQ(json.find("module_stats"), std::string::npos);
  EXPECT_EQ(ir::parse_model_ir(json, "old.json"), m);
}

}  // namespace
}  // namespace cg::runtime
