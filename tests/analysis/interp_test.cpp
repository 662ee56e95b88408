// The interpreter core (analysis/interp/engine.hpp) with a toy domain that knows only integer
// literals, `+`, and crate-local calls: what a function may return is the set of numbers the
// engine's scoping, joins, loops, inlining and bounds let through — the behaviour every domain
// (tensor today, the inventory's builder prefixes next) inherits.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "analysis/interp/engine.hpp"
#include "rust/crate.hpp"

namespace {
namespace fs = std::filesystem;
using cg::analysis::interp::Bound;
using cg::analysis::interp::Engine;
using cg::rust::NodeId;

struct Nums {
  using Value = std::set<long>;
  using Eng = Engine<Nums>;
  std::vector<Bound> bounds;
  std::set<std::size_t> entered;

  Value join(const std::vector<Value>& vs) const {
    Value out;
    for (const auto& v : vs)
      out.insert(v.begin(), v.end());
    return out;
  }
  Value loop_merge(const Value& before, const Value& after) const { return join({before, after}); }
  Value literal(Eng& e, NodeId n) {
    const auto& nd = e.node(n);
    if (nd.lit != cg::rust::LitKind::Int) return {};
    return {std::stol(std::string(nd.str))};
  }
  Value path(Eng&, NodeId) { return {}; }
  Value field(Eng&, NodeId, Value) { return {}; }
  Value call(Eng& e, NodeId n, std::vector<Value> args) {
    const auto& b = e.body();
    for (const auto& c : e.crate().resolve_in(e.item(), std::string(b.source(b[n].a))))
      if (c.kind == cg::rust::Candidate::Kind::Item) return e.invoke(c.item, nullptr, args, false);
    return {};
  }
  Value method_call(Eng&, NodeId, Value, std::vector<Value>) { return {}; }
  Value binary(Eng& e, NodeId n, Value l, Value r) {
    if (e.node(n).str != "+") return {};
    Value out;
    for (long a : l)
      for (long b : r)
        out.insert(a + b);
    return out;
  }
  Value unary(Eng&, NodeId, Value v) { return v; }
  Value macro(Eng&, NodeId) { return {}; }
  Value aggregate(Eng&, NodeId, std::vector<Value> elems) { return join(elems); }
  void array_argument(std::vector<Value> elems, std::vector<Value>& args) {
    args.push_back(join(elems));
  }
  void let_begin(Eng&, NodeId) {}
  Value let_value(Eng&, NodeId, Value v) { return v; }
  Value parameter(std::size_t, std::size_t, Value v) { return v; }
  void enter(Eng&, std::size_t callee, bool) { entered.insert(callee); }
  Value returned(std::size_t, Value v) { return v; }
  void bound(Eng&, const Bound& b) { bounds.push_back(b); }
};

class Interp : public ::testing::Test {
 protected:
  void load(const std::string& lib) {
    dir_ = fs::temp_directory_path() / ("cg-interp-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "src");
    std::ofstream(dir_ / "Cargo.toml") << "[package]\nname = \"t\"\nversion = \"0.1.0\"\n";
    std::ofstream(dir_ / "src/lib.rs") << lib;
    loaded_ =
        std::make_unique<cg::rust::LoadedCrate>(cg::rust::load_crate(dir_, cg::cargo::Selection{}));
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::set<long> run(const std::string& fn, cg::analysis::interp::Limits limits = {}) {
    const auto& crate = loaded_->crate;
    auto items = crate.find(fn);
    EXPECT_EQ(items.size(), 1u) << fn;
    if (items.empty()) return {};
    Engine<Nums> eng(crate, dom, limits);
    eng.begin_run();
    return eng.invoke(items[0], nullptr, {}, true);
  }

  Nums dom;
  fs::path dir_;
  std::unique_ptr<cg::rust::LoadedCrate> loaded_;
};

TEST_F(Interp, BlockScopingRestoresAShadowedName) {
  load("pub fn f() -> u32 { let x = 1; { let x = 2; } x }\n");
  EXPECT_EQ(run("f"), (std::set<long>{1}));
}

TEST_F(Interp, AssignmentInsideABlockPersists) {
  load("pub fn f() -> u32 { let mut x = 1; { x = 5; } x }\n");
  EXPECT_EQ(run("f"), (std::set<long>{5}));
}

TEST_F(Interp, IfBranchesJoin) {
  load("pub fn f(c: bool) -> u32 { let mut x = 1; if c { x = 2; } else { x = 3; } x }\n");
  EXPECT_EQ(run("f"), (std::set<long>{2, 3}));
}

TEST_F(Interp, MatchArmsAndReturnsJoin) {
  load(
      "pub fn f(c: u8) -> u32 { if c == 0 { return 7; } let r = match c { 1 => 10, 2 => 20, _ => "
      "30 }; r }\n");
  EXPECT_EQ(run("f"), (std::set<long>{7, 10, 20, 30}));
}

TEST_F(Interp, ATrailingMatchStatementIsNotTheBlockValue) {
  // As tree-sitter parses it (and the syntax walker read it): a `match` ending a block without
  // `;` is a statement, so only the `return` gives the function a value.
  load("pub fn f(c: u8) -> u32 { if c == 0 { return 7; } match c { 1 => 10, _ => 30 } }\n");
  EXPECT_EQ(run("f"), (std::set<long>{7}));
}

TEST_F(Interp, LoopIsOneIterationMergedWithTheStateBefore) {
  load("pub fn f() -> u32 { let mut x = 1; for i in 0..3 { x = x + 10; } x }\n");
  EXPECT_EQ(run("f"), (std::set<long>{1, 11}));
}

TEST_F(Interp, ClosureBodyRunsInAForkedEnvironment) {
  load("pub fn f() -> u32 { let mut x = 1; let g = || { x = 9; }; x }\n");
  EXPECT_EQ(run("f"), (std::set<long>{1}));
}

TEST_F(Interp, CfgFalseStatementsAreSkipped) {
  load("pub fn f() -> u32 { let x = 1; #[cfg(feature = \"absent\")] let x = 2; x }\n");
  EXPECT_EQ(run("f"), (std::set<long>{1}));
}

TEST_F(Interp, CrateLocalCallsAreInlinedWithTheirArguments) {
  load("fn g(a: u32) -> u32 { a + 100 } pub fn f() -> u32 { g(1) + g(2) }\n");
  EXPECT_EQ(run("f"), (std::set<long>{203}));
  EXPECT_EQ(dom.entered.size(), 2u) << "f and g";
}

TEST_F(Interp, RecursionIsGuardedWithABound) {
  load("pub fn f(n: u32) -> u32 { if n == 0 { 1 } else { f(n) } }\n");
  run("f");
  ASSERT_EQ(dom.bounds.size(), 1u);
  EXPECT_EQ(dom.bounds[0].what, Bound::What::recursion);
  EXPECT_EQ(dom.bounds[0].depth, 1u);
}

TEST_F(Interp, WorkBudgetStopsTheRunOnce) {
  load("pub fn f() -> u32 { let a = 1 + 1; let b = a + a; let c = b + b; c + c }\n");
  cg::analysis::interp::Limits small;
  small.node_budget = 5;
  EXPECT_TRUE(run("f", small).empty());
  ASSERT_EQ(dom.bounds.size(), 1u);
  EXPECT_EQ(dom.bounds[0].what, Bound::What::budget);
}

TEST_F(Interp, NestingBoundIsReportedWhereItIsReached) {
  std::string deep = "1";
  for (int i = 0; i < 50; ++i)
    deep = "(" + deep + " + 1)";
  load("pub fn f() -> u32 { " + deep + " }\n");
  cg::analysis::interp::Limits shallow;
  shallow.max_nesting = 20;
  run("f", shallow);
  ASSERT_FALSE(dom.bounds.empty());
  EXPECT_EQ(dom.bounds[0].what, Bound::What::nesting);
}

}  // namespace
