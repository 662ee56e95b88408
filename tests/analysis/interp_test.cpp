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
template <class Self>
struct HookedBase : NumsBase<Self> {
  using Value = std::set<long>;
  using Eng = Engine<Self>;
  static constexpr long kClosure = 1'000'000;  // a closure value: {kClosure + its index}
  std::vector<std::string> log;
  bool decide = true;
  bool frozen = false;                // assignments leave locals as they were
  bool splitting = false;             // `let x = if c { lit } else { lit }` splits
  std::size_t undo_after = SIZE_MAX;  // the expansion is undone after this iteration
  std::vector<std::pair<const cg::rust::Body*, NodeId>> closures;
  std::vector<std::pair<std::string, Value>> also;  // bound in a closure's scope when it runs

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
  bool iterated(Eng& e, NodeId, std::size_t i) {
    log.push_back("iteration " + std::to_string(i));
    if (i == undo_after && resume_on_undo) e.resume();
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
      return e.run_closure(*where, node, args, also);
    }
    return NumsBase<Self>::call(e, n, std::move(args));
  }
  Value structure(Eng& e, NodeId n) {
    std::vector<Value> fields;
    for (NodeId f : e.body().kids(n))
      fields.push_back(e.eval(e.node(f).a));
    return this->join(fields);
  }
  void uncertain(Eng&, NodeId, bool begin) { log.push_back(begin ? "unsure" : "sure"); }
  void scrutinee(Eng&, NodeId, bool begin) { log.push_back(begin ? "scrutinee" : "scrutinee end"); }
  // `{..}.lazy(v)` is `v`: its receiver is never evaluated. `x.halt()` stops the run (once).
  int halts = 0;
  bool resume_on_undo = false;
  std::optional<Value> takes_over(Eng& e, NodeId n) {
    const auto& nd = e.node(n);
    if (nd.kind != cg::rust::Kind::MethodCall) return std::nullopt;
    if (nd.str == "lazy" && nd.kids_count == 1) return e.eval(e.body().kid(n, 0));
    if (nd.str == "halt" && halts > 0) {
      --halts;
      e.stop();
      return Value{};
    }
    return std::nullopt;
  }
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

struct Hooked : HookedBase<Hooked> {};

// The hooks plus `bindings`: every identifier of a pattern is bound to the value, nothing else
// (no variant names, no guard identifiers), and each binding site is logged by its owner.
struct Named : HookedBase<Named> {
  std::vector<std::pair<std::string, Value>> bindings(Eng& e, NodeId owner, NodeId pat,
                                                      const Value& v) {
    log.push_back("bind " + std::string(e.node(owner).syntax));
    std::vector<std::pair<std::string, Value>> out;
    names(e, pat, v, out);
    return out;
  }
  void names(Eng& e, NodeId pat, const Value& v, std::vector<std::pair<std::string, Value>>& out) {
    if (pat == cg::rust::kNone) return;
    const auto& p = e.node(pat);
    if (p.kind == cg::rust::Kind::PIdent) out.emplace_back(std::string(p.str), v);
    names(e, p.a, v, out);
    for (NodeId k : e.body().kids(pat))
      names(e, k, v, out);
  }
};

// The hooks plus `unbound`: a name that is no local (a const, a function) is 100.
struct Unbound : HookedBase<Unbound> {
  Value unbound(Eng&, NodeId) { return {100}; }
  Value cast(Eng&, NodeId, Value v) {
    Value out;
    for (long x : v)
      out.insert(-x);
    return out;
  }
  Value index(Eng&, NodeId, Value base, Value i) {
    Value out;
    for (long b : base)
      for (long k : i)
        out.insert(b * 10 + k);
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
using Bindings = InterpT<Named>;
using Unbounds = InterpT<Unbound>;

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

TEST_F(Hooks, ASplitLetForksOnlyTheStatementsThatNameItsAlternatives) {
  load(
      "pub fn f(c: u32) -> u32 { let x = if c == 1 { 2 } else { 3 }; let z = 7; let y = x + x; "
      "y }\n");
  EXPECT_EQ(run("f"), (std::set<long>{4, 5, 6})) << "unsplit, x is {2, 3} in one run";
  dom.splitting = true;
  dom.log.clear();
  EXPECT_EQ(run("f"), (std::set<long>{4, 6})) << "x + x never mixes the two alternatives";
  const std::vector<std::string> fork{"begin 0/2", "end 0", "begin 1/2", "end 1", "joined"};
  std::vector<std::string> twice = fork;
  twice.insert(twice.end(), fork.begin(), fork.end());
  EXPECT_EQ(dom.log, twice)
      << "`let y` and the tail `y` (y differs by alternative) run per alternative; the `let`'s "
         "own `if` and `let z`, which names neither, run no branch";
}

TEST_F(Hooks, ACallTheDomainTakesOverIsNotEvaluatedByTheEngine) {
  load("pub fn f() -> u32 { let mut x = 1; let y = { x = 7; 3 }.lazy(5); x + y }\n");
  EXPECT_EQ(run("f"), (std::set<long>{6})) << "the receiver block (x = 7) never ran";
  EXPECT_EQ(std::count(dom.log.begin(), dom.log.end(), "assign"), 0);
}

TEST_F(Hooks, AMatchScrutineeIsBracketed) {
  load(
      "pub fn f(c: u32) -> u32 { let mut x = 0; let r = match { x = 2; x } { 2 => 1, _ => 0 }; r "
      "}\n");
  EXPECT_EQ(run("f"), (std::set<long>{1}));
  EXPECT_EQ(dom.log, (std::vector<std::string>{"scrutinee", "assign", "scrutinee end"}));
}

TEST_F(Hooks, AStoppedRunEvaluatesNothingMoreAndReportsNoBound) {
  load("pub fn f() -> u32 { let mut x = 1; x.halt(); x = 5; x }\n");
  dom.halts = 1;
  EXPECT_EQ(run("f"), (std::set<long>{}));
  EXPECT_EQ(std::count(dom.log.begin(), dom.log.end(), "assign"), 0) << "x = 5 never ran";
  EXPECT_TRUE(dom.bounds.empty());
}

TEST_F(Hooks, AStoppedRunGoesOnWhenTheDomainResumesIt) {
  const std::string lib =
      "pub fn f() -> u32 { let k = 100; let mut x = 0; for i in 0..3 { x = x + i; x.halt(); } "
      "x + k }\n";
  load(lib);
  dom.halts = 1;
  dom.undo_after = 0;
  dom.resume_on_undo = true;
  // The first iteration stops the run; undoing it resumes: the symbolic iteration (i = 7) runs.
  EXPECT_EQ(run("f"), (std::set<long>{100, 107}));
  dom = Hooked{};
  dom.halts = 1;
  dom.undo_after = 0;
  EXPECT_EQ(run("f"), (std::set<long>{})) << "not resumed: nothing after the halt";
}

// ---- bindings: the domain decides what a pattern binds -------------------------------------

TEST_F(Bindings, EveryBindingSiteAsksTheDomain) {
  load(
      "pub fn f() -> u32 { let a = 1; let g = |p| p + a; let mut s = 0; "
      "for i in 0..2 { s = s + i; } let r = match s { m => g(m) }; r }\n");
  EXPECT_EQ(run("f"), (std::set<long>{2})) << "s = 0 + 1, then g(1) = 1 + 1";
  std::vector<std::string> sites;
  for (const auto& l : dom.log)
    if (l.rfind("bind ", 0) == 0) sites.push_back(l);
  EXPECT_EQ(sites, (std::vector<std::string>{"bind let_declaration", "bind let_declaration",
                                             "bind let_declaration", "bind for_expression",
                                             "bind for_expression", "bind match_arm",
                                             "bind closure_expression", "bind let_declaration"}));
}

TEST_F(Bindings, AnIfLetPatternBindsInItsThenBranchOnly) {
  const std::string lib =
      "pub fn f() -> u32 { let x = 1; let y = if let Some(x) = 5 { x } else { 0 }; y + x }\n"
      "pub fn g(k: u32) -> u32 { let c = if k == 1 { 2 } else { 3 }; let x = 1;\n"
      "  let y = if let Some(x) = c { x + 10 } else { x }; y + x }\n";
  load(lib);
  EXPECT_EQ(run("f"), (std::set<long>{6})) << "decided: x = 5 inside, 1 after";
  EXPECT_EQ(run("g"), (std::set<long>{2, 13, 14})) << "undecided: y is 1, 12 or 13; x is 1";
  EXPECT_NE(std::find(dom.log.begin(), dom.log.end(), "bind let_condition"), dom.log.end());
}

// Without the domain's `bindings`, an `if let` pattern binds its names to the value as a `let`
// does (`if let Some(mask) = mask { xs.broadcast_add(mask) }` sees the mask), in the then-branch
// only: after it `x` is the outer 1 again.
TEST_F(Hooks, WithoutBindingsAnIfLetPatternBindsItsNamesInTheBranch) {
  load("pub fn f() -> u32 { let x = 1; let y = if let Some(x) = 5 { x } else { 0 }; y + x }\n");
  EXPECT_EQ(run("f"), (std::set<long>{6})) << "y is 5 (this domain's join drops the else's 0); x "
                                              "is 1 after the branch, as before it (was 2: y = 1)";
}

TEST_F(Bindings, AGuardBindsOnlyWhatTheDomainSays) {
  const std::string lib =
      "pub fn h(c: u32) -> u32 { let k = 5; let r = match c { x if k == 5 => k, _ => 0 }; r }\n";
  load(lib);
  EXPECT_EQ(run("h"), (std::set<long>{0, 5})) << "k keeps its value in the guarded arm";
}

TEST_F(Hooks, WithoutBindingsAGuardsIdentifiersNameTheScrutinee) {
  load("pub fn h(c: u32) -> u32 { let k = 5; let r = match c { x if k == 5 => k, _ => 0 }; r }\n");
  EXPECT_EQ(run("h"), (std::set<long>{0})) << "k is c's value (nothing known) in that arm";
}

TEST_F(Hooks, AClosureRunsWithNamesOfTheDomainBeforeItsParameters) {
  load(
      "pub fn f() -> u32 { let g = |p| p + q; g(2) }\n"
      "pub fn s() -> u32 { let g = |q| q + 1; g(2) }\n");
  dom.also = {{"q", {40}}};
  EXPECT_EQ(run("f"), (std::set<long>{42}));
  EXPECT_EQ(run("s"), (std::set<long>{3})) << "a parameter shadows the domain's name";
}

TEST_F(Unbounds, ANameThatIsNoLocalIsTheDomainsValue) {
  load("pub fn f() -> u32 { let x = N; x }\npub fn g() -> u32 { let N = 3; N }\n");
  EXPECT_EQ(run("f"), (std::set<long>{100}));
  EXPECT_EQ(run("g"), (std::set<long>{3})) << "a local is never asked for";
}

TEST_F(Hooks, WithoutUnboundANameThatIsNoLocalIsNothing) {
  load("pub fn f() -> u32 { let x = N; x }\n");
  EXPECT_EQ(run("f"), (std::set<long>{}));
}

TEST_F(Unbounds, AnIndexIsTheDomainsValueOfBaseAndIndex) {
  load("pub fn f() -> u32 { let a = 4; let i = 2; a[i] }\n");
  EXPECT_EQ(run("f"), (std::set<long>{42}));
}

TEST_F(Hooks, WithoutIndexAnIndexIsTheIndexedValue) {
  load("pub fn f() -> u32 { let a = 4; let i = 2; a[i] }\n");
  EXPECT_EQ(run("f"), (std::set<long>{4}));
}

TEST_F(Unbounds, ACastIsTheDomainsValue) {
  load("pub fn f() -> u32 { let a = 4; a as u32 }\n");
  EXPECT_EQ(run("f"), (std::set<long>{-4}));
}

TEST_F(Hooks, WithoutCastACastIsItsOperand) {
  load("pub fn f() -> u32 { let a = 4; a as u32 }\n");
  EXPECT_EQ(run("f"), (std::set<long>{4}));
}

}  // namespace
