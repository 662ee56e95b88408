// Issue "Faithful Rust": general evaluator rules, each pinned by the figure a user sees (a
// parameter count, a shape) computed by hand from a small fixture crate of our own.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "pipeline/pipeline.hpp"
#include "query/summary_rows.hpp"
#include "util/error.hpp"

namespace {

std::string fixture(const std::string& name) {
  return std::string(CG_SOURCE_DIR) + "/tests/fixtures/crates/" + name;
}

cg::pipeline::Analysis analyze(const std::string& name, const std::string& config = "config.json") {
  cg::pipeline::Options o;
  o.path = fixture(name);
  if (!config.empty()) o.config = fixture(name) + "/" + config;
  return cg::pipeline::analyze(o);
}

// "4,8" for a concrete shape, "symbolic" when a dimension is not known, "none" if no such key.
std::string shape_of(const cg::pipeline::Analysis& a, const std::string& key) {
  for (const auto& p : a.ir.parameters) {
    if (p.key != key) continue;
    if (!p.shape) return "symbolic";
    std::string s;
    for (auto d : *p.shape)
      s += (s.empty() ? "" : ",") + std::to_string(d);
    return s;
  }
  return "none";
}

TEST(Destructuring, TupleLetBindsEachNameToItsPart) {
  // starcoder2's MLP: `let (h_size, i_size) = (cfg.hidden_size, cfg.intermediate_size);`
  // hidden 4, intermediate 8, vocab 10, biases on.
  auto a = analyze("destructure_let");
  EXPECT_EQ(shape_of(a, "mlp.c_fc.weight"), "8,4");
  EXPECT_EQ(shape_of(a, "mlp.c_fc.bias"), "8");
  EXPECT_EQ(shape_of(a, "mlp.c_proj.weight"), "4,8");
  // A nested tuple holding a builder: `let ((d_in, d_out), proj_vb) = ((..), vb.pp("proj"))`.
  EXPECT_EQ(shape_of(a, "head.proj.weight"), "10,4");
  // A struct pattern of the config, shorthand and renamed: `let Config { hidden_size,
  // intermediate_size: inter, .. } = cfg;`
  EXPECT_EQ(shape_of(a, "head.gate.weight"), "8,4");
  // A tuple a crate-local helper returns: helpers without a VarBuilder are not inlined, so its
  // parts are not known and stay unknown.
  EXPECT_EQ(shape_of(a, "wide.weight"), "symbolic");
  // `let (h, .., v) = (hidden, 0, 1, vocab)`: first and last parts.
  EXPECT_EQ(shape_of(a, "hv"), "4,10");
  // `let (r, c) = t.dims2()?`: parts not known stay unknown, not a guess.
  EXPECT_EQ(shape_of(a, "u"), "symbolic");
  auto m = cg::query::build_summary(a.ir, "F32");
  // 40 + 36 (mlp) + 40 + 32 (head) + 40 (hv) + 16 (t); wide and u unknown.
  EXPECT_EQ(m.totals.total, std::optional<std::uint64_t>(204));
  EXPECT_EQ(m.totals.unknown_leaves, 2u);
}

TEST(ConfigCopies, AssignedFieldsChangeTheCopyOnly) {
  // d_model 4, d_ff 8, num_layers 2, num_decoder_layers 3, is_decoder true in the file.
  auto a = analyze("config_update");
  // encoder: `is_decoder = false` on its copy: no cross attention, 2 blocks.
  EXPECT_EQ(shape_of(a, "encoder.block.1.ff.weight"), "8,4");
  EXPECT_EQ(shape_of(a, "encoder.block.0.cross.weight"), "none");
  EXPECT_EQ(shape_of(a, "encoder.block.2.attn.weight"), "none");
  // decoder: `num_layers = cfg.num_decoder_layers.unwrap_or(cfg.num_layers)` = 3, cross on.
  EXPECT_EQ(shape_of(a, "decoder.block.2.cross.weight"), "4,4");
  EXPECT_EQ(shape_of(a, "decoder.block.3.attn.weight"), "none");
  // `Config { num_layers: 1, d_ff: 2, ..cfg.clone() }`: is_decoder from the file.
  EXPECT_EQ(shape_of(a, "small.block.0.ff.weight"), "2,4");
  EXPECT_EQ(shape_of(a, "small.block.0.cross.weight"), "4,4");
  EXPECT_EQ(shape_of(a, "small.block.1.attn.weight"), "none");
  // `grown_cfg.d_ff += 1`: not evaluated, so unknown (never the file's 8).
  EXPECT_EQ(shape_of(a, "grown.weight"), "symbolic");
  // `#[serde(default)] ff: FfOptions` absent from the file: derived Default, `gated` false.
  EXPECT_EQ(shape_of(a, "decoder.block.0.gate.weight"), "none");
  // `#[serde(default)] extra: Extra` absent: `impl Default` gives width 3.
  EXPECT_EQ(shape_of(a, "extra.weight"), "3,4");
  auto m = cg::query::build_summary(a.ir, "F32");
  // encoder 2 x (16 + 32), decoder 3 x (16 + 16 + 32), small 1 x (16 + 16 + 8), extra 12.
  EXPECT_EQ(m.totals.total, std::optional<std::uint64_t>(96 + 192 + 40 + 12));
  EXPECT_FALSE(m.totals.total_max);  // no alternative left open
  // `maybe_cfg.d_ff = 100` in one arm of an `if` the config does not decide: unknown after it
  // (neither the file's 8 nor 100).
  EXPECT_EQ(shape_of(a, "maybe.weight"), "symbolic");
  EXPECT_EQ(m.totals.unknown_leaves, 2u);
}

TEST(ConfigArrays, AKnownIndexReadsTheElement) {
  // num_channels 3, hidden_sizes [4, 8], depths [1, 2]; a loop over 0..hidden_sizes.len().
  auto a = analyze("config_index");
  EXPECT_EQ(shape_of(a, "stages.0.downsample.weight"), "4,3");  // num_channels -> [0]
  EXPECT_EQ(shape_of(a, "stages.1.downsample.weight"), "8,4");  // [i - 1] -> [i]
  EXPECT_EQ(shape_of(a, "stages.1.blocks.1.weight"), "8,8");    // depths.get(1) = 2 blocks
  EXPECT_EQ(shape_of(a, "stages.0.blocks.1.weight"), "none");   // depths.get(0) = 1 block
  EXPECT_EQ(shape_of(a, "head.weight"), "7,8");  // last() = 8; get(5) is None: unwrap_or(7)
  // `for (i, &r) in cfg.ratios.iter().rev().enumerate()` over [2, 3]: (0, 3), (1, 2).
  EXPECT_EQ(shape_of(a, "norms.0.weight"), "1,3");
  EXPECT_EQ(shape_of(a, "norms.1.weight"), "2,2");
  EXPECT_EQ(shape_of(a, "norms.2.weight"), "none");
  // `cfg.depths.iter().enumerate().map(|(i, &d)| ..)` over [1, 2]: the closure once per element.
  EXPECT_EQ(shape_of(a, "convs.0.weight"), "2,1");
  EXPECT_EQ(shape_of(a, "convs.1.weight"), "2,2");
  auto m = cg::query::build_summary(a.ir, "F32");
  // stage 0: 12 + 16, stage 1: 32 + 2 x 64, head 56, norms 3 + 4, convs 2 + 4.
  EXPECT_EQ(m.totals.total, std::optional<std::uint64_t>(28 + 160 + 56 + 7 + 6));
  EXPECT_EQ(m.totals.unknown_leaves, 0u);
  EXPECT_TRUE(m.totals.lower_bound.empty()) << m.totals.lower_bound;
}

TEST(ConfigArrays, WithoutAFileTheIndexedWidthsStaySymbolic) {
  auto a = analyze("config_index", "");
  EXPECT_EQ(shape_of(a, "head.weight"), "symbolic");
  auto m = cg::query::build_summary(a.ir, "F32");
  EXPECT_GT(m.totals.unknown_leaves, 0u);
}

cg::pipeline::Analysis analyze_arg(const std::string& name, const std::string& arg) {
  cg::pipeline::Options o;
  o.path = fixture(name);
  o.root = "Model";
  o.args.push_back(arg);
  return cg::pipeline::analyze(o);
}

TEST(ConfigFromCode, ArgCallRunsTheConstructorBody) {
  // `--arg cfg=Config::tiny()`: channels [4, 8], depths [1, 2], hidden widen(3) + 2 = 8, head
  // HeadConfig::with_classes(5) (a nested config built by a call with a literal argument).
  auto a = analyze_arg("config_ctor", "cfg=Config::tiny()");
  EXPECT_EQ(shape_of(a, "stages.0.0.weight"), "4,4");
  EXPECT_EQ(shape_of(a, "stages.1.1.weight"), "8,8");
  EXPECT_EQ(shape_of(a, "stages.0.1.weight"), "none");
  EXPECT_EQ(shape_of(a, "proj.weight"), "8,8");
  EXPECT_EQ(shape_of(a, "head.weight"), "5,8");
  // `act: Act::Gated`, an enum variant: the match takes its arm.
  EXPECT_EQ(shape_of(a, "gate.weight"), "8,8");
  auto m = cg::query::build_summary(a.ir, "F32");
  // 16 + 2 x 64 (stages) + 64 (proj) + 40 (head) + 64 (gate).
  EXPECT_EQ(m.totals.total, std::optional<std::uint64_t>(16 + 128 + 64 + 40 + 64));
  EXPECT_EQ(m.totals.unknown_leaves, 0u);
}

TEST(ConfigFromCode, ArgCallTakesLiteralArguments) {
  // `Config::sized(6)`: channels [2, 2], one block each, hidden 6, 3 classes, `Act::Plain` (no
  // gate): 4 + 4 + 12 + 18.
  auto a = analyze_arg("config_ctor", "cfg=Config::sized(6)");
  auto m = cg::query::build_summary(a.ir, "F32");
  EXPECT_EQ(m.totals.total, std::optional<std::uint64_t>(38));
}

std::string arg_error(const std::string& arg) {
  try {
    analyze_arg("config_ctor", arg);
  } catch (const cg::InputError& e) {
    return e.what();
  }
  return "no error";
}

TEST(ConfigFromCode, WhatCannotBeEvaluatedIsAnInputError) {
  // A field the body computes from something not known names that field.
  EXPECT_NE(arg_error("cfg=Config::opaque()").find("hidden"), std::string::npos)
      << arg_error("cfg=Config::opaque()");
  EXPECT_NE(arg_error("cfg=Config::nothing()").find("names no function"), std::string::npos)
      << arg_error("cfg=Config::nothing()");
  EXPECT_NE(arg_error("cfg=7").find("not a call"), std::string::npos) << arg_error("cfg=7");
  EXPECT_NE(arg_error("cfg=Config::sized(x)").find("literal arguments"), std::string::npos)
      << arg_error("cfg=Config::sized(x)");
}

}  // namespace
