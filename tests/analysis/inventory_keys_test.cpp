// The inventory's builder/prefix domain on its own: key segments, format templates, catalog
// shape arithmetic, certainty joins and candle-nn's config defaults, without a crate.
#include "analysis/inventory_keys.hpp"

#include <gtest/gtest.h>

#include <map>

namespace cg::analysis::inventory {
namespace {

TEST(InventoryKeys, PrefixTextSplitsOnDotsOutsideBraces) {
  EXPECT_EQ(split_key("model.layers.{self.idx}.attn"),
            (std::vector<std::string>{"model", "layers", "{self.idx}", "attn"}));
  EXPECT_EQ(split_key("weight"), (std::vector<std::string>{"weight"}));
}

TEST(InventoryKeys, JoinSkipsEmptySegments) {
  // `vb.pp("")` pushes nothing a checkpoint key would show.
  EXPECT_EQ(join_key({"model", "", "embed_tokens", "weight"}), "model.embed_tokens.weight");
  EXPECT_EQ(join_key({}), "");
}

TEST(InventoryKeys, FormatTemplateSubstitutesBoundValuesAndKeepsLoopVariables) {
  rust::FormatArgs f = rust::parse_format_args(R"("layers.{}.{name}.{0}", i, name = kind)");
  ASSERT_TRUE(f.ok);
  std::map<std::string, std::string> bound{{"kind", "attn"}};
  auto key = format_key(f, [&](const std::string& e) {
    auto it = bound.find(e);
    return it != bound.end() ? it->second : "{" + e + "}";
  });
  EXPECT_EQ(key, "layers.{i}.attn.{i}");
}

TEST(InventoryKeys, FormatTemplateKeepsEscapedBracesAndNamesWithoutArguments) {
  rust::FormatArgs f = rust::parse_format_args(R"("{{{idx}.{:>3}")");
  ASSERT_TRUE(f.ok);
  auto key = format_key(f, [](const std::string& e) { return "<" + e + ">"; });
  // `{{` is a literal brace; `{idx}` with no named argument captures the local `idx`; a
  // positional placeholder without an argument is `?`.
  EXPECT_EQ(key, "{<idx>.<?>");
}

TEST(InventoryKeys, GenericsAreStrippedFromCalledPaths) {
  EXPECT_EQ(strip_generics("Vec::<Block>::with_capacity"), "Vec::with_capacity");
  EXPECT_EQ(strip_generics("collect::<Vec<_>>"), "collect");
  EXPECT_EQ(last_segment("candle_nn::linear_no_bias"), "linear_no_bias");
}

TEST(InventoryKeys, CatalogShapeArithmeticFoldsIntegersAndKeepsTheRestSymbolic) {
  std::map<std::string, SymValue> terms{{"{in}", SymValue::of_int(64)},
                                        {"{groups}", SymValue::of_int(4)},
                                        {"{h}", SymValue::symbolic("cfg.h", "not bound")}};
  auto term = [&](const std::string& t) {
    auto it = terms.find(t);
    if (it != terms.end()) return it->second;
    return SymValue::of_int(std::stoll(t));
  };
  SymValue a = template_arithmetic("{in} / {groups}", term);
  ASSERT_EQ(a.kind, SymValue::Kind::integer);
  EXPECT_EQ(a.integer, 16);
  SymValue b = template_arithmetic("4 * {h}", term);
  EXPECT_FALSE(b.concrete());
  EXPECT_EQ(b.text, "4 * cfg.h");
  EXPECT_EQ(b.reason, "not bound");
  // `x * 1` stays `x`; a division by zero is named, not computed.
  EXPECT_EQ(template_arithmetic("{h} * 1", term).text, "cfg.h");
  SymValue z = template_arithmetic("{in} / 0", term);
  EXPECT_FALSE(z.concrete());
  EXPECT_EQ(z.reason, "division by zero");
}

TEST(InventoryKeys, CertaintyJoinKeepsTheLeastCertainAndTheOuterReasonOnATie) {
  Cert proven;
  Cert cond = conditional(proven, "if cfg.use_bias");
  EXPECT_EQ(cond.level, ir::Confidence::conditional);
  EXPECT_EQ(cond.reason, "if cfg.use_bias");
  Cert again = conditional(cond, "unless x");
  EXPECT_EQ(again.reason, "if cfg.use_bias");
  Cert unknown{ir::Confidence::unknown, "unaudited"};
  EXPECT_EQ(join(cond, unknown).reason, "unaudited");
}

TEST(InventoryKeys, ReasonsAndLabelsReadInOneLine) {
  EXPECT_EQ(one_line("if a\n    && b"), "if a && b");
  std::string long_text(200, 'x');
  EXPECT_EQ(one_line(long_text).size(), 120u);
  EXPECT_EQ(brief("A::load(vb.pp(\"a\"))"), "`A::load(vb.pp(\"a\"))`");
  EXPECT_EQ(brief(long_text).size(), 50u);  // 48 characters and two backticks
}

TEST(InventoryKeys, LayerConfigDefaultsAreCandleNnReleaseDefaults) {
  EXPECT_EQ(layer_config_default("groups", "default")->integer, 1);
  EXPECT_EQ(layer_config_default("padding", "default")->integer, 0);
  EXPECT_TRUE(layer_config_default("affine", "default")->boolean);
  EXPECT_EQ(layer_config_default("b_ih_init", "default_no_bias")->kind, SymValue::Kind::none);
  EXPECT_EQ(layer_config_default("b_ih_init", "default")->text, "Const(0)");
  EXPECT_FALSE(layer_config_default("hidden_size", "default"));
}

TEST(InventoryKeys, StatementMacrosThatNeverRegisterParametersAreKnown) {
  EXPECT_TRUE(ignored_macro("bail"));
  EXPECT_TRUE(ignored_macro("println"));
  EXPECT_FALSE(ignored_macro("my_layers"));
  EXPECT_TRUE(is_iterator_method("enumerate"));
  EXPECT_FALSE(is_iterator_method("map"));
}

}  // namespace
}  // namespace cg::analysis::inventory
