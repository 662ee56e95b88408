// Method calls given a VarBuilder run what Rust would run (src/analysis/builder/dispatch.cpp):
// a trait object's, an `impl Trait`'s or a generic's method over the trait's impls.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "pipeline/pipeline.hpp"
#include "query/summary_rows.hpp"

namespace {

cg::pipeline::Analysis analyze(const std::string& name) {
  const std::string dir = std::string(CG_SOURCE_DIR) + "/tests/fixtures/crates/" + name;
  cg::pipeline::Options o;
  o.path = dir;
  o.config = dir + "/config.json";
  return cg::pipeline::analyze(o);
}

const cg::ir::Parameter* param(const cg::pipeline::Analysis& a, const std::string& key) {
  auto it = std::find_if(a.ir.parameters.begin(), a.ir.parameters.end(),
                         [&](const auto& p) { return p.key == key; });
  return it == a.ir.parameters.end() ? nullptr : &*it;
}

TEST(Dispatch, TraitObjectImplsThatAgreeAreAsCertainAsADirectCall) {
  // `mapper.set_device(i, vb.pp("norm"), isq)` on a `&dyn DeviceMapper` (and a generic `M:
  // DeviceMapper` in the MLP, a `Box<dyn ..>` taken from a struct field in the root): both
  // mappers return the builder moved to a device, so the keys are exact. The head is read
  // through `mapper.as_ref()` in a helper of the root's own, on no layout choice: proven.
  auto a = analyze("trait_dispatch");
  const auto* head = param(a, "lm_head.weight");
  ASSERT_NE(head, nullptr);
  EXPECT_EQ(head->confidence, cg::ir::Confidence::proven);
  for (const char* key : {"model.layers.1.mlp.up_proj.weight", "model.layers.0.norm.weight",
                          "model.embed_tokens.weight", "model.norm.weight"})
    EXPECT_NE(param(a, key), nullptr) << key;
  EXPECT_EQ(std::count_if(a.ir.findings.begin(), a.ir.findings.end(),
                          [](const auto& f) { return f.rule == "structure-unresolved"; }),
            0);
  // The root's other struct parameter (`meta: LoadingMetadata`) is no config: --config binds
  // `cfg`, and no warning says it is not bound to `LoadingMetadata`.
  EXPECT_EQ(std::count_if(a.ir.findings.begin(), a.ir.findings.end(),
                          [](const auto& f) { return f.rule == "config-binding"; }),
            0);
}

TEST(Dispatch, ImplsPushingDifferentPrefixesAreAlternativesNamedByImpl) {
  // `let vb_m = layout.text(vb.clone());` with `HfLayout` pushing `model` and `LegacyLayout`
  // `transformer`: the model under each, never both in the total.
  auto a = analyze("trait_dispatch");
  for (const char* key : {"model.layers.0.mlp.down_proj.weight",
                          "transformer.layers.0.mlp.down_proj.weight", "transformer.norm.weight"}) {
    const auto* p = param(a, key);
    ASSERT_NE(p, nullptr) << key;
    EXPECT_EQ(p->confidence, cg::ir::Confidence::conditional) << key;
    const bool named = std::any_of(p->evidence.begin(), p->evidence.end(), [](const auto& e) {
      return e.detail.find("impl Layout for ") != std::string::npos;
    });
    EXPECT_TRUE(named) << key;
  }
  auto m = cg::query::build_summary(a.ir, "F32");
  // 80 (embedding) + 2 x (8 + 128 + 128) + 8 (norm) = 616 per layout, + 80 for the head.
  EXPECT_EQ(m.totals.total, std::optional<std::uint64_t>(616 + 80));
}

}  // namespace
