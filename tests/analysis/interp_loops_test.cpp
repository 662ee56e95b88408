// The interpreter's loops that run at least once (engine.hpp, `runs_at_least_once`): with a toy
// domain of integer sets that says a `for` over a literal range `a..b` with a < b runs, a local
// the body assigns on every iteration is the body's value after the loop; a conditional
// assignment, one a `break` or `continue` may skip, or one to a name the body rebinds with `let`
// is merged with the value before, as without the hook.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
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

struct Once {
  using Value = std::set<long>;
  using Eng = Engine<Once>;
  bool hook = true;

  Value join(const std::vector<Value>& vs) const {
    Value out;
    for (const auto& v : vs)
      out.insert(v.begin(), v.end());
    return out;
  }
  Value loop_merge(const Value& before, const Value& after) const { return join({before, after}); }
  bool runs_at_least_once(Eng& e, NodeId n, const Value&) const {
    const auto& r = e.node(e.node(n).b);
    if (!hook || r.kind != cg::rust::Kind::Range || r.a == cg::rust::kNone ||
        r.b == cg::rust::kNone)
      return false;
    return std::stol(std::string(e.node(r.a).str)) < std::stol(std::string(e.node(r.b).str));
  }
  Value literal(Eng& e, NodeId n) {
    const auto& nd = e.node(n);
    if (nd.lit != cg::rust::LitKind::Int) return {};
    return {std::stol(std::string(nd.str))};
  }
  Value path(Eng&, NodeId) { return {}; }
  Value field(Eng&, NodeId, Value) { return {}; }
  Value call(Eng&, NodeId, std::vector<Value>) { return {}; }
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
  void enter(Eng&, std::size_t, bool) {}
  Value returned(std::size_t, Value v) { return v; }
  void bound(Eng&, const Bound&) {}
};

class InterpLoops : public ::testing::Test {
 protected:
  std::set<long> run(const std::string& body) {
    dir_ = fs::temp_directory_path() / ("cg-interp-loops-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "src");
    std::ofstream(dir_ / "Cargo.toml") << "[package]\nname = \"t\"\nversion = \"0.1.0\"\n";
    std::ofstream(dir_ / "src/lib.rs") << "pub fn f(c: u32) -> u32 { " << body << " }\n";
    auto loaded =
        std::make_unique<cg::rust::LoadedCrate>(cg::rust::load_crate(dir_, cg::cargo::Selection{}));
    auto items = loaded->crate.find("f");
    EXPECT_EQ(items.size(), 1u);
    if (items.empty()) return {};
    Engine<Once> eng(loaded->crate, dom, {});
    eng.begin_run();
    return eng.invoke(items[0], nullptr, {}, true);
  }
  void TearDown() override { fs::remove_all(dir_); }

  Once dom;
  fs::path dir_;
};

TEST_F(InterpLoops, AnUnconditionalAssignmentLeavesTheBodysValue) {
  EXPECT_EQ(run("let mut x = 1; for i in 0..3 { x = 10; } x"), (std::set<long>{10}));
  dom.hook = false;
  EXPECT_EQ(run("let mut x = 1; for i in 0..3 { x = 10; } x"), (std::set<long>{1, 10}));
}

TEST_F(InterpLoops, ALoopNotKnownToRunIsMerged) {
  EXPECT_EQ(run("let mut x = 1; for i in 0..0 { x = 10; } x"), (std::set<long>{1, 10}));
}

TEST_F(InterpLoops, AConditionalAssignmentIsMerged) {
  EXPECT_EQ(run("let mut x = 1; for i in 0..3 { if c == 1 { x = 10; } } x"),
            (std::set<long>{1, 10}));
}

TEST_F(InterpLoops, ABreakOrContinueThatMaySkipItIsMerged) {
  EXPECT_EQ(run("let mut x = 1; for i in 0..3 { if c == 1 { break; } x = 10; } x"),
            (std::set<long>{1, 10}));
  EXPECT_EQ(run("let mut x = 1; for i in 0..3 { if c == 1 { continue; } x = 10; } x"),
            (std::set<long>{1, 10}));
  // A nested loop's own `break` leaves only that loop; a labeled one may leave this one.
  EXPECT_EQ(run("let mut x = 1; for i in 0..3 { x = 10; for j in 0..2 { break; } } x"),
            (std::set<long>{10}));
  EXPECT_EQ(run("let mut x = 1; 'o: for i in 0..3 { x = 10; for j in 0..2 { break 'o; } } x"),
            (std::set<long>{1, 10}));
}

TEST_F(InterpLoops, ANameTheBodyRebindsIsNotTheOuterOne) {
  EXPECT_EQ(run("let mut x = 1; for i in 0..3 { let mut x = 5; x = 10; } x"), (std::set<long>{1}));
}

}  // namespace
