// Issue #21: totals never add mutually exclusive alternatives, conditions the config decides are
// folded, and constructor arguments and module fields bind. One fixture crate per idiom.
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

cg::pipeline::Analysis analyze(const std::string& name, const std::string& config = "config.json",
                               std::vector<std::string> args = {}) {
  cg::pipeline::Options o;
  o.path = fixture(name);
  if (!config.empty()) o.config = fixture(name) + "/" + config;
  o.args = std::move(args);
  return cg::pipeline::analyze(o);
}

bool has_key(const cg::pipeline::Analysis& a, const std::string& key) {
  return std::any_of(a.ir.parameters.begin(), a.ir.parameters.end(),
                     [&](const auto& p) { return p.key == key; });
}

TEST(Alternatives, FallbackMatchCountsOneBranchNotBoth) {
  // bert-style: `embeddings`/`encoder`, else `bert.embeddings`/`bert.encoder`; the norm's
  // `weight`/`bias`, else `gamma`/`beta`. 80 + 72 + 16, once.
  auto a = analyze("alt_fallback_match");
  EXPECT_TRUE(has_key(a, "embeddings.word_embeddings.weight"));
  EXPECT_TRUE(has_key(a, "bert.embeddings.word_embeddings.weight"));
  EXPECT_TRUE(has_key(a, "norm.gamma"));
  auto m = cg::query::build_summary(a.ir, "F32");
  EXPECT_EQ(m.totals.total, std::optional<std::uint64_t>(168));
  EXPECT_FALSE(m.totals.total_max);  // both alternatives weigh the same: the total is exact
  EXPECT_EQ(m.rows[0].params, std::optional<std::uint64_t>(168));
  std::string text = cg::query::render_model_summary(a, "", {.dtype = "F32"});
  EXPECT_NE(text.find("Total params: 168\n"), std::string::npos) << text;
  EXPECT_NE(text.find("alternatives: src/lib.rs:58: primary"), std::string::npos) << text;
  EXPECT_NE(text.find("fallback when"), std::string::npos) << text;
}

TEST(Alternatives, OrElseFallbackIsWalkedAndNotAdded) {
  auto a = analyze("alt_or_else");
  EXPECT_TRUE(has_key(a, "dense.weight"));
  EXPECT_TRUE(has_key(a, "model.dense.weight"));  // the fallback's keys are listed
  auto m = cg::query::build_summary(a.ir, "F32");
  EXPECT_EQ(m.totals.total, std::optional<std::uint64_t>(72));
  EXPECT_FALSE(m.totals.total_max);
}

TEST(Alternatives, ContainsTensorGuardIsARange) {
  // The checkpoint decides whether `lm_head` loads: 80 (tied) to 160, said on the total's line.
  auto a = analyze("alt_contains_tensor");
  auto m = cg::query::build_summary(a.ir, "F32");
  EXPECT_EQ(m.totals.total, std::optional<std::uint64_t>(80));
  EXPECT_EQ(m.totals.total_max, std::optional<std::uint64_t>(160));
  std::string text = cg::query::render_model_summary(a, "", {.dtype = "F32"});
  EXPECT_NE(text.find("Total params: 80 to 160 (mutually exclusive alternatives"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("if vb.contains_tensor(\"lm_head.weight\") → 80 | otherwise (registers "
                      "nothing) → 0"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("alternatives: up to 160"), std::string::npos) << text;  // the root row
}

TEST(Alternatives, AResultMatchedNotPropagatedIsOptional) {
  // `let maybe_gate = gate(4, vb.pp("gate"));` then only `if let Ok(g) = &maybe_gate`: a v1
  // checkpoint without gate.* still loads (convnext's GRN), so 40 to 60. `out`'s Result is
  // propagated with `?` a line later: required, in both ends.
  auto a = analyze("alt_fallible_let", "");
  auto m = cg::query::build_summary(a.ir, "F32");
  EXPECT_EQ(m.totals.total, std::optional<std::uint64_t>(40));
  EXPECT_EQ(m.totals.total_max, std::optional<std::uint64_t>(60));
  std::string text = cg::query::render_model_summary(a, "", {.dtype = "F32"});
  EXPECT_NE(text.find("only when `gate(4, vb.pp(\"gate\"))` succeeds"), std::string::npos) << text;
  for (const std::string row : {"gate (Linear)", "out (Linear)"}) {
    const auto at = text.find(row);
    ASSERT_NE(at, std::string::npos) << text;
    const std::string line = text.substr(at, text.find('\n', at) - at);
    EXPECT_EQ(line.find("alternatives") != std::string::npos, row == "gate (Linear)") << line;
  }
}

TEST(Alternatives, AnUnknownFlagChoosingKeysInlineSplitsTheBlock) {
  // `let merged = has_merged && !has_split;` then `vb.pp(if merged { "gate_up_proj" } else {
  // "gate_proj" })`: each key as written, under its condition (it was one `{if merged ..}` key).
  auto a = analyze("alt_flag_choice", "");
  for (const char* key : {"gate_proj.weight", "up_proj.weight", "gate_up_proj.weight"})
    EXPECT_TRUE(has_key(a, key)) << key;
  for (const auto& p : a.ir.parameters)
    EXPECT_EQ(p.key.find('{'), std::string::npos) << p.key;
  auto m = cg::query::build_summary(a.ir, "F32");
  EXPECT_EQ(m.totals.total, std::optional<std::uint64_t>(32));  // merged: one [8, 4], read twice
  EXPECT_EQ(m.totals.total_max, std::optional<std::uint64_t>(64));
  std::string text = cg::query::render_model_summary(a, "", {.dtype = "F32"});
  EXPECT_NE(text.find("if merged → 32 | unless merged → 64"), std::string::npos) << text;
}

TEST(Alternatives, IsSomeOfConfigDecidedOptionsFolds) {
  // Encoder: no cross-attention, so the feed-forward is `layer.1`; no relative bias.
  auto enc = analyze("alt_option_is_some");
  EXPECT_TRUE(has_key(enc, "block.0.layer.1.weight"));
  EXPECT_FALSE(has_key(enc, "block.0.layer.2.weight"));
  EXPECT_FALSE(has_key(enc, "block.0.layer.bias"));
  auto m = cg::query::build_summary(enc.ir, "F32");
  EXPECT_EQ(m.totals.total, std::optional<std::uint64_t>(288));
  EXPECT_FALSE(m.totals.total_max);
  // Decoder: `Some(cross)` makes the feed-forward `layer.2`; the bias has 4 buckets.
  auto dec = analyze("alt_option_is_some", "decoder.json");
  EXPECT_TRUE(has_key(dec, "block.1.layer.2.weight"));
  EXPECT_TRUE(has_key(dec, "block.1.layer.bias"));
  EXPECT_EQ(cg::query::build_summary(dec.ir, "F32").totals.total,
            std::optional<std::uint64_t>(496));
}

TEST(Alternatives, EachPrefixChoiceBuildsItsTowerOnceUnderItsOwnCondition) {
  // Two prefixes chosen by the checkpoint (`let p = if vb.contains_tensor(..) { "a" } else
  // { "b" }`): the vision tower under each of its two, the text model under each of its two;
  // never once per combination of both choices.
  auto a = analyze("alt_prefix_choice");
  auto count = [&](const std::string& type) {
    return std::count_if(a.ir.modules.begin(), a.ir.modules.end(),
                         [&](const auto& m) { return m.type_name == type; });
  };
  EXPECT_EQ(count("Vision"), 2);
  EXPECT_EQ(count("Text"), 2);
  EXPECT_EQ(count("Linear"), 2);
  EXPECT_TRUE(has_key(a, "vision_tower.proj.weight"));
  EXPECT_TRUE(has_key(a, "model.visual.proj.weight"));
  EXPECT_TRUE(has_key(a, "language_model.model.embed_tokens.weight"));
  EXPECT_TRUE(has_key(a, "model.language_model.norm.bias"));
  // No key loads on every checkpoint: each is conditional on its prefix's choice, and the norm's
  // on the checkpoint having a bias too (the text prefix's choice does not hide it).
  for (const auto& p : a.ir.parameters) {
    EXPECT_EQ(p.confidence, cg::ir::Confidence::conditional) << p.key;
    auto alts = std::count_if(p.evidence.begin(), p.evidence.end(),
                              [](const auto& e) { return e.detail.rfind("alternative ", 0) == 0; });
    EXPECT_EQ(alts, p.key.find(".norm.") != std::string::npos ? 2 : 1) << p.key;
  }
  auto m = cg::query::build_summary(a.ir, "F32");
  EXPECT_EQ(m.totals.total, std::optional<std::uint64_t>(72 + 128));
  EXPECT_EQ(m.totals.total_max, std::optional<std::uint64_t>(72 + 128 + 16));
}

TEST(Alternatives, OneKeyBuiltInSeveralArmsIsNoSharedWeight) {
  // `match size { Small => [features.0], Medium => [features.0, features.2], Large => [..] }`:
  // the three `features.0` layers are alternatives; none reuses another's weights.
  auto a = analyze("alt_same_key_arms", "");
  std::string text = cg::query::render_model_summary(a, "", {.dtype = "F32", .width = 0});
  EXPECT_EQ(text.find("shared with"), std::string::npos) << text;
  EXPECT_EQ(text.find("reuses the weights"), std::string::npos) << text;
  auto m = cg::query::build_summary(a.ir, "F32");
  EXPECT_EQ(m.totals.total, std::optional<std::uint64_t>(224)) << "the smallest arm: features.0";
  // The large arm: features.0, its own 8 -> 16 features.2 and features.4. A key two arms
  // register counts in both, each with its own shape.
  EXPECT_EQ(m.totals.total_max, std::optional<std::uint64_t>(224 + 1168 + 1160)) << text;
  EXPECT_NE(text.find("Size::Medium → 584 | match size => Size::Large → 2,328"), std::string::npos)
      << text;
  // One row per key: the arms' other `features.0`/`features.2` modules, which hold nothing, are
  // no rows of their own; a key whose shape differs by arm shows each arm's shape and the
  // largest count (the smallest is the arm without it).
  int feature0_rows = 0;
  const cg::query::SummaryRow* weight2 = nullptr;
  for (const auto& r : m.rows) {
    if (r.name == "features.0") ++feature0_rows;
    if (r.name == "weight" && r.shape.find("[16, 8, 3, 3]") != std::string::npos) weight2 = &r;
  }
  EXPECT_EQ(feature0_rows, 1) << text;
  ASSERT_NE(weight2, nullptr) << text;
  EXPECT_EQ(weight2->shape, "[8, 8, 3, 3] | [16, 8, 3, 3]");
  EXPECT_NE(weight2->marker.find("alternatives: up to 1,152"), std::string::npos)
      << weight2->marker;
  // No one shape to check a checkpoint against: either arm's checkpoint verifies.
  for (const auto& p : a.ir.parameters)
    if (p.key == "features.2.weight") {
      EXPECT_FALSE(p.shape) << "shape differs by arm";
      EXPECT_TRUE(std::any_of(p.evidence.begin(), p.evidence.end(), [](const auto& e) {
        return e.detail == "shape in this alternative: [16, 8, 3, 3]";
      }));
    }
}

// `--arg size=Medium` (or the path `Size::Large`) names the enum variant the root constructor is
// given: the `match size` takes that arm only, so the total is exact. Any other word is a string,
// never the boolean `false` it was read as.
TEST(Alternatives, AnArgNamingAnEnumVariantDecidesTheMatch) {
  auto medium =
      cg::query::build_summary(analyze("alt_same_key_arms", "", {"size=Medium"}).ir, "F32");
  EXPECT_EQ(medium.totals.total, std::optional<std::uint64_t>(224 + 584));  // features.0, .2
  EXPECT_FALSE(medium.totals.total_max) << "no alternatives left, no range";
  auto large =
      cg::query::build_summary(analyze("alt_same_key_arms", "", {"size=Size::Large"}).ir, "F32");
  EXPECT_EQ(large.totals.total, std::optional<std::uint64_t>(224 + 1168 + 1160));
  EXPECT_FALSE(large.totals.total_max);
  auto none = cg::query::build_summary(analyze("alt_same_key_arms", "", {"size=Huge"}).ir, "F32");
  EXPECT_EQ(none.totals.total, std::optional<std::uint64_t>(224)) << "no arm named: all stay";
  EXPECT_EQ(none.totals.total_max, std::optional<std::uint64_t>(2552));
}

TEST(Loops, ALiteralArrayIsIteratedRowByRow) {
  // vgg's idiom: `convs.iter().map(|&(in_c, out_c, name)| conv2d(in_c, out_c, .., vb.pp(name)))`
  // over `&[(3, 8, "features.0"), ..]`, and `for name in ["norm_a", "norm_b"]`: each element is
  // one layer under its own key with its own shape, not one `{name}` family of unknown count.
  auto a = analyze("literal_array_loop", "");
  auto shape_of = [&](const std::string& key) {
    for (const auto& p : a.ir.parameters)
      if (p.key == key && p.shape) {
        std::string s;
        for (auto d : *p.shape)
          s += (s.empty() ? "" : ",") + std::to_string(d);
        return s;
      }
    return std::string("none");
  };
  EXPECT_EQ(shape_of("features.0.weight"), "8,3,3,3");
  EXPECT_EQ(shape_of("features.2.weight"), "8,8,3,3");
  EXPECT_EQ(shape_of("features.5.weight"), "16,8,3,3");
  EXPECT_EQ(shape_of("norm_b.bias"), "16");
  EXPECT_FALSE(std::any_of(a.ir.parameters.begin(), a.ir.parameters.end(),
                           [](const auto& p) { return p.key.find('{') != std::string::npos; }));
  auto m = cg::query::build_summary(a.ir, "F32");
  EXPECT_EQ(m.totals.total, std::optional<std::uint64_t>(224 + 584 + 1168 + 2 * 32));
}

TEST(ConstructorArgs, ArgBindsAScalarParameter) {
  auto without = analyze("ctor_arg");
  auto m0 = cg::query::build_summary(without.ir, "F32");
  EXPECT_EQ(m0.totals.unknown_leaves, 2u);  // classifier.weight [num_labels, 8] and its bias
  auto a = analyze("ctor_arg", "config.json", {"num_labels=3"});
  auto m = cg::query::build_summary(a.ir, "F32");
  EXPECT_EQ(m.totals.total, std::optional<std::uint64_t>(72 + 27));
  EXPECT_EQ(m.totals.unknown_leaves, 0u);
}

TEST(ConstructorArgs, UnknownOrMalformedArgIsAUsageError) {
  try {
    analyze("ctor_arg", "config.json", {"num_classes=3"});
    FAIL() << "expected an error";
  } catch (const cg::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("parameters: cfg, num_labels, vb"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(analyze("ctor_arg", "config.json", {"num_labels"}), cg::InputError);
}

TEST(ModuleFields, FieldOfABuiltModuleEvaluates) {
  // position_embeddings [1, (8/4)^2 + 1, 4] = 20, plus the 3->4 conv with a 4x4 kernel (196).
  auto a = analyze("module_field");
  auto m = cg::query::build_summary(a.ir, "F32");
  EXPECT_EQ(m.totals.total, std::optional<std::uint64_t>(216));
  EXPECT_EQ(m.totals.unknown_leaves, 0u);
}

}  // namespace

namespace {

TEST(ConfigBinding, ConfigThatCannotBindIsAWarningInSummary) {
  auto a = analyze("config_not_deserialize");
  bool warned = false;
  for (const auto& f : a.ir.findings)
    warned = warned || (f.rule == "config-binding" &&
                        f.message.find("is not bound to `Config`") != std::string::npos);
  EXPECT_TRUE(warned);
  std::string text = cg::query::render_model_summary(
      a, fixture("config_not_deserialize") + "/config.json", {.dtype = "F32", .width = 0});
  EXPECT_NE(text.find("warning: "), std::string::npos) << text;
  EXPECT_NE(text.find("does not derive Deserialize"), std::string::npos) << text;
  EXPECT_EQ(text.find("pass --config"), std::string::npos) << text;  // it was passed
}

}  // namespace

namespace {

TEST(Constants, ModuleConstAndDivCeilEvaluate) {
  // pos [MAX_SEQ_LEN = 2 * 8, 4] and groups [16.div_ceil(3) = 6, 4]: no config needed.
  auto a = analyze("module_const", "");
  auto m = cg::query::build_summary(a.ir, "F32");
  EXPECT_EQ(m.totals.total, std::optional<std::uint64_t>(64 + 24));
  EXPECT_EQ(m.totals.unknown_leaves, 0u);
}

}  // namespace
