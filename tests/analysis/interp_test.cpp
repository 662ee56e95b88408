// The interpreter core (analysis/interp/engine.hpp) with a toy domain that knows only integer
// literals, `+`, and crate-local calls: what a function may return is the set of numbers the
// engine's scoping, joins, loops, inlining and bounds let through — the behaviour every domain
// (tensor today, the inventory's builder prefixes next) inherits.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <optional>
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

template <class Self>
struct NumsBase {
  using Value = std::set<long>;
  using Eng = Engine<Self>;
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
    const bool eq = e.node(n).str == "==";
    if (e.node(n).str != "+" && !eq) return {};
    Value out;
    for (long a : l)
      for (long b : r)
        out.insert(eq ? long{a == b} : a + b);
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
struct Nums : NumsBase<Nums> {};

// The same numbers with every optional hook: branches on one known number are decided, `for`
// loops over a literal range are expanded, closures are values run where they are called, and
// each hook call is logged.
struct Hooked : NumsBase<Hooked> {
  static constexpr long kClosure = 1'000'000;  // a closure value: {kClosure + its index}
  std::vector<std::string> log;
  bool decide = true;
  bool frozen = false;                // assignments leave locals as they were
  bool splitting = false;             // `let x = if c { lit } else { lit }` splits
  std::size_t undo_after = SIZE_MAX;  // the expansion is undone after this iteration
  std::vector<std::pair<const cg::rust::Body*, NodeId>> closures;

  std::optional<std::size_t> choose(Eng& e, NodeId n, const Value& v) {
    if (!decide || v.size() != 1) return std::nullopt;
    if (e.node(n).kind == cg::rust::Kind::If) return *v.begin() != 0 ? 0 : 1;
    const auto arms = e.body().kids(n);
    for (std::size_t i = 0; i < arms.size(); ++i)
      if (e.node(arms[i]).text == std::to_string(*v.begin()) || e.node(arms[i]).text == "_")
        return i;
    return std::nullopt;
  }
  void branch_begin(Eng&, NodeId, std::size_t i, std::size_t count) {
    log.push_back("begin " + std::to_string(i) + "/" + std::to_string(count));
  }
  void branch_end(Eng&, NodeId, std::size_t i) { log.push_back("end " + std::to_string(i)); }
  void branches_joined(Eng&, NodeId) { log.push_back("joined"); }
  void loop_begin(Eng&, NodeId, const Value&) { log.push_back("loop"); }
  void loop_end(Eng&, NodeId) { log.push_back("loop end"); }
  std::optional<std::vector<Value>> expand(Eng& e, NodeId n, const Value&) {
    const auto& range = e.node(e.node(n).b);
    if (range.kind != cg::rust::Kind::Range || range.a == cg::rust::kNone ||
        range.b == cg::rust::kNone)
      return std::nullopt;
    std::vector<Value> out;
    for (long i = std::stol(std::string(e.node(range.a).str));
         i < std::stol(std::string(e.node(range.b).str)); ++i)
      out.push_back({i});
    return out;
  }
  bool iterated(Eng&, NodeId, std::size_t i) {
    log.push_back("iteration " + std::to_string(i));
    return i != undo_after;
  }
  Value loop_variable(Eng&, NodeId, const Value&) { return {7}; }
  std::optional<Value> assign(Eng&, NodeId, Value v) {
    log.push_back("assign");
    return frozen ? std::nullopt : std::optional<Value>(std::move(v));
  }
  std::optional<Value> closure(Eng& e, NodeId n) {
    closures.emplace_back(&e.body(), n);
    return Value{kClosure + static_cast<long>(closures.size()) - 1};
  }
  Value call(Eng& e, NodeId n, std::vector<Value> args) {
    const auto& b = e.body();
    if (const Value* v = e.lookup(std::string(b.source(b[n].a)));
        v && v->size() == 1 && *v->begin() >= kClosure) {
      const auto& [where, node] = closures.at(static_cast<std::size_t>(*v->begin() - kClosure));
      return e.run_closure(*where, node, args);
    }
    return NumsBase<Hooked>::call(e, n, std::move(args));
  }
  Value structure(Eng& e, NodeId n) {
    std::vector<Value> fields;
    for (NodeId f : e.body().kids(n))
      fields.push_back(e.eval(e.node(f).a));
    return join(fields);
  }
  void uncertain(Eng&, NodeId, bool begin) { log.push_back(begin ? "unsure" : "sure"); }
  // `let x = if c { 2 } else { 3 };` with `c` unknown splits into x = 2 and x = 3.
  std::vector<std::vector<std::pair<std::string, Value>>> split(Eng& e, NodeId let) {
    const auto& b = e.body();
    NodeId value = b[let].b;
    if (!splitting || value == cg::rust::kNone || b[value].kind != cg::rust::Kind::If ||
        b[b[let].a].kind != cg::rust::Kind::PIdent)
      return {};
    std::vector<std::vector<std::pair<std::string, Value>>> out;
    for (NodeId arm : {b[value].b, b[value].c}) {
      NodeId t = arm == cg::rust::kNone ? cg::rust::kNone : b.tail(arm);
      if (t == cg::rust::kNone || b[t].lit != cg::rust::LitKind::Int) return {};
      out.push_back({{std::string(b[b[let].a].str), {std::stol(std::string(b[t].str))}}});
    }
    return out;
  }
};

template <class Dom>
class InterpT : public ::testing::Test {
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
    Engine<Dom> eng(crate, dom, limits);
    eng.begin_run();
    return eng.invoke(items[0], nullptr, {}, true);
  }

  Dom dom;
  fs::path dir_;
  std::unique_ptr<cg::rust::LoadedCrate> loaded_;
};
using Interp = InterpT<Nums>;
using Hooks = InterpT<Hooked>;

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

// ---- the optional hooks ------------------------------------------------------------------

TEST_F(Hooks, ADecidedIfRunsOnlyItsBranch) {
  load("pub fn f() -> u32 { let c = 1; let mut x = 0; if c == 1 { x = 2; } else { x = 3; } x }\n");
  EXPECT_EQ(run("f"), (std::set<long>{2}));
  EXPECT_TRUE(std::find(dom.log.begin(), dom.log.end(), "joined") == dom.log.end());
}

TEST_F(Hooks, UndecidedBranchesAreBracketedThenJoined) {
  load("pub fn f(c: u32) -> u32 { let mut x = 0; if c == 1 { x = 2; } x }\n");
  EXPECT_EQ(run("f"), (std::set<long>{0, 2}));
  std::vector<std::string> branches;
  for (const auto& l : dom.log)
    if (l != "assign") branches.push_back(l);
  EXPECT_EQ(branches,
            (std::vector<std::string>{"begin 0/2", "end 0", "begin 1/2", "end 1", "joined"}));
}

TEST_F(Hooks, ADecidedMatchRunsOneArmWithItsBindings) {
  load(
      "pub fn f() -> u32 { let c = 2; let r = match c { 1 => 10, 2 => 20, _ => 30 }; r }\n"
      "pub fn g(c: u32) -> u32 { let r = match c { 1 => 10, _ => 30 }; r }\n");
  EXPECT_EQ(run("f"), (std::set<long>{20}));
  EXPECT_EQ(run("g"), (std::set<long>{10, 30}));
  EXPECT_EQ(std::count(dom.log.begin(), dom.log.end(), "joined"), 1) << "only g's match joins";
}

TEST_F(Hooks, AnExpandedLoopRunsOncePerValueWithItsVariableScoped) {
  load("pub fn f() -> u32 { let i = 100; let mut x = 0; for i in 0..3 { x = x + i; } x + i }\n");
  EXPECT_EQ(run("f"), (std::set<long>{103})) << "0+1+2, then the outer i";
  EXPECT_EQ(dom.log.front(), "loop");
  EXPECT_EQ(dom.log.back(), "loop end");
}

TEST_F(Hooks, AnUndoneExpansionFallsBackToTheSymbolicIteration) {
  load("pub fn f() -> u32 { let k = 100; let mut x = 0; for i in 0..3 { x = x + i; } x + k }\n");
  dom.undo_after = 0;
  // The first iteration's x = 0 is undone; one iteration with i = 7 (loop_variable) merged with
  // the state before the loop.
  EXPECT_EQ(run("f"), (std::set<long>{100, 107}));
  EXPECT_EQ(std::count(dom.log.begin(), dom.log.end(), "iteration 0"), 1);
  EXPECT_EQ(std::count(dom.log.begin(), dom.log.end(), "iteration 1"), 0);
}

TEST_F(Hooks, AssignmentsGoThroughTheDomain) {
  load("pub fn f() -> u32 { let mut x = 1; x = 5; x += 2; x }\n");
  dom.frozen = true;
  EXPECT_EQ(run("f"), (std::set<long>{1}));
  EXPECT_EQ(std::count(dom.log.begin(), dom.log.end(), "assign"), 2) << "`=` and `+=`";
}

TEST_F(Hooks, AClosureRunsWhereItIsCalledWithItsArguments) {
  load(
      "pub fn f() -> u32 { let mut x = 1; let g = |a| { x = a; a + 10 }; let y = g(5); x + y }\n"
      "pub fn r() -> u32 { let g = |a| { if a == 5 { return 1; } 2 }; g(5) + 0 }\n");
  EXPECT_EQ(run("f"), (std::set<long>{20})) << "x = 5 by the call, y = 15";
  EXPECT_EQ(run("r"), (std::set<long>{1, 2})) << "the closure's return is its own";
}

TEST_F(Hooks, AClosurePassedToAHelperRunsInTheBodyThatWroteIt) {
  load(
      "fn h(k: u32) -> u32 { k(3) }\n"
      "pub fn f() -> u32 { let g = |a| a + 1; h(g) }\n");
  EXPECT_EQ(run("f"), (std::set<long>{4}));
}

TEST_F(Hooks, StructLiteralsAndUncertainStatementsReachTheDomain) {
  load(
      "pub fn f() -> u32 { #[cfg(some_unknown_thing(x))] let y = 1; let s = S { a: 4, b: 5 }; s "
      "}\n");
  EXPECT_EQ(run("f"), (std::set<long>{4, 5}));
  EXPECT_EQ(std::count(dom.log.begin(), dom.log.end(), "unsure"), 1);
  EXPECT_EQ(std::count(dom.log.begin(), dom.log.end(), "sure"), 1);
}

TEST_F(Hooks, ASplitLetRunsTheRestOfTheBlockOncePerAlternative) {
  load("pub fn f(c: u32) -> u32 { let x = if c == 1 { 2 } else { 3 }; let y = x + x; y }\n");
  EXPECT_EQ(run("f"), (std::set<long>{4, 5, 6})) << "unsplit, x is {2, 3} in one run";
  dom.splitting = true;
  dom.log.clear();
  EXPECT_EQ(run("f"), (std::set<long>{4, 6})) << "x + x never mixes the two alternatives";
  EXPECT_EQ(dom.log,
            (std::vector<std::string>{"begin 0/2", "end 0", "begin 1/2", "end 1", "joined"}))
      << "the `let`'s own `if` is not run";
}

}  // namespace
