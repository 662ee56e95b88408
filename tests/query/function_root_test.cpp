// Function-style models (`pub fn resnet18(num_classes, vb) -> Result<Func>`) are roots when
// `--root` names them: the function is the component and its constructor. Fixture:
// tests/fixtures/crates/function_root.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "pipeline/pipeline.hpp"
#include "util/error.hpp"

namespace {

using namespace cg;

pipeline::Options options(const std::string& root) {
  pipeline::Options o;
  o.path = std::string(CG_SOURCE_DIR) + "/tests/fixtures/crates/function_root";
  o.root = root;
  return o;
}

std::uint64_t total(const ir::ModelIr& ir) {
  std::uint64_t n = 0;
  for (const auto& p : ir.parameters) {
    if (!p.shape) return 0;
    std::uint64_t e = 1;
    for (auto d : *p.shape)
      e *= d;
    n += e;
  }
  return n;
}

TEST(FunctionRoot, QualifiedFunctionIsTheComponentWithItsHelpersLeaves) {
  auto o = options("other::tiny_net");
  auto a = pipeline::analyze(o);
  ASSERT_EQ(a.ir.components.size(), 1u);
  EXPECT_EQ(a.ir.components[0].qualified_name, "other::tiny_net");
  std::set<std::string> keys;
  for (const auto& p : a.ir.parameters)
    keys.insert(p.key);
  EXPECT_EQ(keys, (std::set<std::string>{"stem.conv.weight", "stem.conv.bias", "head.weight",
                                         "head.bias"}));
  // conv 8x3x3x3 + 8, linear 2x8 + 2 (other::tiny_net passes 2 classes).
  EXPECT_EQ(total(a.ir), 8u * 3 * 3 * 3 + 8 + 2 * 8 + 2);
}

TEST(FunctionRoot, ConstructorArgumentBindsTheHead) {
  // `tiny_net` is the top-level function's full path, so it is not ambiguous with
  // `other::tiny_net`; `--arg num_classes=10` sizes its head.
  auto o = options("tiny_net");
  o.args = {"num_classes=10"};
  auto a = pipeline::analyze(o);
  ASSERT_EQ(a.ir.components.size(), 1u);
  EXPECT_EQ(a.ir.components[0].qualified_name, "tiny_net");
  EXPECT_EQ(total(a.ir), 8u * 3 * 3 * 3 + 8 + 10 * 8 + 10);
}

TEST(FunctionRoot, FunctionsAreNeverRootsWithoutRoot) {
  // Every layer helper (`fn block(.., vb) -> Result<Func>`) has a function root's shape.
  auto a = pipeline::analyze(options(""));
  EXPECT_TRUE(a.ir.components.empty());
}

TEST(FunctionRoot, UnknownNameSaysWhatWasLookedFor) {
  try {
    pipeline::analyze(options("resnet50"));
    ADD_FAILURE() << "expected an input error";
  } catch (const InputError& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("nor a function of that name taking one"), std::string::npos) << what;
  }
}

}  // namespace
