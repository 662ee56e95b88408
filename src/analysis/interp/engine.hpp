#pragma once
// The abstract interpreter over lowered bodies (src/rust/body.hpp), parameterised by a domain.
//
// The engine owns what every interpretation of Rust shares: environments with block scoping,
// `let`/pattern binding, joins of `if`/`match` branches, loops (one symbolic iteration, then a
// merge with the state before the loop), closures (their body runs in a forked environment),
// `return`, inlining of crate-local calls with a recursion guard and a depth bound, the per-run
// work budget and the nesting bound, and skipping statements whose `#[cfg]` is False. It knows
// no domain fact: what a literal, path, field, call, method call, operator or macro denotes is the
// domain's answer. See docs/architecture.md ("The interpreter") for the interface in one table.
//
// A domain is a class with:
//   using Value = …;   default-constructed = nothing known
//   Value join(const std::vector<Value>&)                       branches, returns
//   Value loop_merge(const Value& before, const Value& after)   a name after one loop iteration
//   Value literal(Engine&, NodeId) / path(Engine&, NodeId)     (path: names not bound locally)
//   Value field(Engine&, NodeId, Value base)
//   Value call(Engine&, NodeId, std::vector<Value> args)      the callee is the node's `a`
//   Value method_call(Engine&, NodeId, Value recv, std::vector<Value> args)
//   Value binary(Engine&, NodeId, Value l, Value r) / unary(Engine&, NodeId, Value v)
//   Value macro(Engine&, NodeId) / aggregate(Engine&, NodeId, std::vector<Value> elements)
//   void array_argument(std::vector<Value> elements, std::vector<Value>& args)  `f(&[a, b])`
//   void let_begin(Engine&, NodeId let); Value let_value(Engine&, NodeId let, Value v)
//   Value parameter(std::size_t fn_item, std::size_t i, Value arg)     binding an argument
//   void enter(Engine&, std::size_t callee, bool entry)                a call is inlined
//   Value returned(std::size_t fn_item, Value joined)                  the call's value
//   void bound(Engine&, const Bound&)                                  a limit was reached
// Domains call back `invoke` to inline a crate-local function and `lookup`/`frame`/`body` to read
// the state.
//
// Optional members (a domain without one gets the behaviour described above; they exist for the
// builder/prefix domain of the inventory, whose walk decides branches, expands loops and runs
// closures where they are called):
//   std::optional<std::size_t> choose(Engine&, NodeId if_or_match, const Value& cond)
//       the branch taken (`if`: 0 then, 1 else; `match`: the arm's index), nullopt: all of them
//   std::optional<std::size_t> lead(Engine&, NodeId if_or_match, const Value& cond) and
//   Value join_led(std::vector<Value>, std::size_t k)
//       all branches run, but branch k's value leads their join (the first call's arm of a
//       `match` on a cache the constructor leaves `None`)
//   void branch_begin(Engine&, NodeId n, std::size_t i, std::size_t count)
//   void branch_end(Engine&, NodeId n, std::size_t i) / void branches_joined(Engine&, NodeId n)
//       around each branch of an undecided `if`/`match` (an `if` without `else` has count 2 and
//       its branch 1 runs nothing), then once after the join
//   void body_begin(Engine&) / void body_end(Engine&, bool called)
//       around the run of an inlined function's body and of a closure's (what a `return` ends);
//       `called` false: a closure's body analyzed where it is written, not run there
//   void returning(Engine&, NodeId ret)   a `return e` statement, before `e` is evaluated
//   void arm_value(Engine&, Value& v)   an undecided branch's value, before branch_end (a domain
//       empties the value of an arm that never completes, so the join is the other arms')
//   void loop_begin(Engine&, NodeId loop, const Value& iter) / void loop_end(Engine&, NodeId)
//   std::optional<std::vector<Value>> expand(Engine&, NodeId for_loop, const Value& iter)
//       a `for` run once per value, each bound to its pattern in its own scope
//   bool iterated(Engine&, NodeId for_loop, std::size_t i)   after expanded iteration i; false
//       undoes the expansion (the locals as before the loop) and runs the symbolic iteration
//   Value loop_variable(Engine&, NodeId for_loop, const Value& iter)   the symbolic iteration's
//       pattern value (default: the iterated value)
//   bool runs_at_least_once(Engine&, NodeId for_loop, const Value& iter)   asked at the loop's
//       head: true when the `for` (run symbolically, not expanded) is known to run its body at
//       least once. A local the body assigns on every iteration (a `x = e` statement of the body
//       block itself; no `break`/`continue` may end an iteration early) is then, after the
//       loop, the body's value rather than its merge with the one before (default: false)
//   Value loop_exit(const Value& before, const Value& body)   that value (default: the body's)
//   std::optional<Value> assign(Engine&, NodeId assign, Value v)   every `=`/`op=`; for `x = v`
//       the value `x` takes, nullopt: `x` keeps its value
//   std::optional<Value> closure(Engine&, NodeId)   a closure taken as a value: its body is not
//       run at its definition (the domain runs it with `run_closure` where it is called)
//   Value structure(Engine&, NodeId)                 a struct literal (default: not evaluated)
//   void uncertain(Engine&, NodeId stmt, bool begin) around a statement whose #[cfg] is Unknown
//   std::optional<Value> element(const Value& tuple, std::size_t i, std::size_t count)
//       element i of a tuple value bound to a tuple pattern of `count` names (`let (q, k) =
//       rotary(..)?`); nullopt for any element: every name is bound to the whole value
//   std::vector<std::vector<std::pair<std::string, Value>>> split(Engine&, NodeId let)
//       non-empty: the `let` is not evaluated; the rest of its block runs once per alternative
//       with its names bound, between the branch hooks (the `let` as the branch node), and the
//       values and locals join
//   bool splits_call(Engine&, NodeId call)  a `let` of this call may split (default: only an
//       `if` may): a statement naming a pending split's names that may split again runs the
//       rest of its block once per alternative
//   std::vector<std::pair<std::string, Value>> bindings(Engine&, NodeId owner, NodeId pat,
//                                                       const Value& v)
//       the names pattern `pat` of `owner` binds to `v`, in place of the engine's own rules:
//       a `let`, a match arm (its guard included: nothing else binds there), a `for` (expanded
//       and symbolic), a closure's parameters, and the `if let` condition, whose pattern then
//       binds in the then-branch (without this member an `if let` pattern binds nothing)
//   std::optional<Value> takes_over(Engine&, NodeId call)   a call or method call the domain
//       evaluates itself, its receiver and arguments through `eval` (nullopt: the engine's way)
//   void scrutinee(Engine&, NodeId match, bool begin)   around a match's scrutinee
//   Value unbound(Engine&, NodeId path)   an identifier that names no local (default: nothing)
//   Value index(Engine&, NodeId n, Value base, Value i)   `base[i]` (default: the base's value)
//   Value cast(Engine&, NodeId n, Value v)   `x as T` (default: x's value)
//   bool statement_value(Engine&, NodeId stmt)   true: a block's last statement, an expression
//       without `;` (a trailing `if`/`match`), gives the block's value (default: only the tail)
// Domains may end a run at a limit of their own with `stop()`, and let it go on with `resume()`.
#include <algorithm>
#include <cstddef>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "analysis/interp/env.hpp"
#include "analysis/interp/option_pattern.hpp"
#include "rust/body.hpp"
#include "rust/crate.hpp"

namespace cg::analysis::interp {

using rust::Kind;
using rust::NodeId;

struct Limits {
  std::size_t max_call_depth = 24;   // inlined calls open at once
  std::size_t node_budget = 400000;  // nodes evaluated per run (`begin_run`)
  int max_nesting = 1000;            // evaluation frames open at once, inlined calls included
};

// A limit the engine stopped at; the domain reports it (a `dataflow-bound` finding).
struct Bound {
  enum class What { budget, nesting, recursion } what = What::budget;
  NodeId node = rust::kNone;  // nesting: where; kNone when the lowering cut the tree there
  std::size_t item = 0;       // recursion: the function not inlined again
  std::size_t depth = 0;      // recursion: inlined calls open
};

template <class Domain>
class Engine {
 public:
  using Value = typename Domain::Value;
  using Env = Locals<Value>;

  struct Frame {
    std::size_t item = 0;
    const rust::Body* body = nullptr;
    Env env;
    std::vector<Value> returns;
  };

  Engine(const rust::Crate& crate, Domain& domain, Limits limits = {})
      : crate_(crate), dom_(domain), limits_(limits) {}

  // A run is one entrypoint: the budget starts again.
  void begin_run() {
    used_ = 0;
    exhausted_ = false;
  }
  std::size_t used() const { return used_; }
  const Limits& limits() const { return limits_; }

  // Interprets function `item` with `self` and `args` (the entry, or an inlined call): binds the
  // parameters, runs the body, and returns the domain's value of the call. A call already open,
  // or past the depth bound, is not inlined (Bound::recursion) and is nothing known.
  Value invoke(std::size_t item, const Value* self, const std::vector<Value>& args, bool entry) {
    if (!tick()) return {};
    const rust::Body& body = crate_.lowered(item);
    if (body.root == rust::kNone) return {};
    if (std::find(stack_.begin(), stack_.end(), item) != stack_.end() ||
        stack_.size() >= limits_.max_call_depth) {
      Bound b;
      b.what = Bound::What::recursion;
      b.item = item;
      b.depth = stack_.size();
      dom_.bound(*this, b);
      return {};
    }
    dom_.enter(*this, item, entry);
    Frame fr;
    fr.item = item;
    fr.body = &body;
    if (self) fr.env.set("self", *self);
    const auto& params = crate_.items()[item].params;
    for (std::size_t i = 0; i < params.size(); ++i)
      fr.env.set(params[i].name, dom_.parameter(item, i, i < args.size() ? args[i] : Value{}));
    stack_.push_back(item);
    frames_.push_back(&fr);
    if constexpr (requires { dom_.body_begin(*this); }) dom_.body_begin(*this);
    Value r = eval(body.root);
    if constexpr (requires { dom_.body_end(*this, true); }) dom_.body_end(*this, true);
    fr.returns.push_back(std::move(r));
    frames_.pop_back();
    stack_.pop_back();
    return dom_.returned(item, dom_.join(fr.returns));
  }

  // ---- state the domain reads ----------------------------------------------------------------
  const rust::Crate& crate() const { return crate_; }
  bool running() const { return !frames_.empty(); }
  Frame& frame() { return *frames_.back(); }
  const rust::Body& body() const { return *frames_.back()->body; }
  const rust::Node& node(NodeId id) const { return body()[id]; }
  std::size_t item() const { return frames_.back()->item; }
  // A local of the current frame, nullptr when unbound.
  const Value* lookup(const std::string& name) const { return frames_.back()->env.find(name); }
  // Evaluates an expression of the current body (a domain asking for a sub-expression's value).
  Value eval(NodeId n);
  // Runs closure `closure` of `where` (the body that wrote it: a closure may have been passed to
  // an inlined helper) in the current frame: its parameter patterns bound to `args` in a scope of
  // their own, its `return`s its own. The closure's value: its body's joined with its returns.
  // `also`: names bound in the closure's scope before its parameters (a domain's own names).
  using Bindings = std::vector<std::pair<std::string, Value>>;
  Value run_closure(const rust::Body& where, NodeId closure, const std::vector<Value>& args,
                    const Bindings& also = {});
  // Runs `what()` in a frame of function `item` (its body, no locals): a domain running code after
  // the call that made it returned (a closure a constructor returned, run as the model's forward).
  template <class F>
  Value in_frame(std::size_t item, F&& what) {
    Frame fr;
    fr.item = item;
    fr.body = &crate_.lowered(item);
    frames_.push_back(&fr);
    Value v = what();
    frames_.pop_back();
    return v;
  }
  // Ends the run as an exhausted budget does (nothing more is evaluated), without a Bound: a
  // domain stops at a limit of its own. `resume` lets a stopped or exhausted run go on (a domain
  // that undid the work past the limit); the budget used is kept, so the next node past it
  // stops the run again.
  void stop() { exhausted_ = true; }
  void resume() { exhausted_ = false; }
  bool stopped() const { return exhausted_; }

 private:
  bool tick() {
    if (exhausted_) return false;
    if (++used_ > limits_.node_budget) {
      exhausted_ = true;
      dom_.bound(*this, Bound{});
      return false;
    }
    return true;
  }
  Env& env() { return frames_.back()->env; }

  Value dispatch(NodeId n);
  Value eval_path(NodeId n);
  Value eval_index(NodeId n);
  Value eval_cast(NodeId n);
  Value eval_block(NodeId n);
  // A split `let` whose alternatives wait for a statement that names them: per alternative, the
  // names it binds, and the names later statements bound to values that differ by alternative.
  struct Pending {
    NodeId let = rust::kNone;
    std::vector<std::string> names;
    std::vector<std::vector<std::pair<std::string, Value>>> alts;
  };
  Value eval_stmts(std::span<const NodeId> stmts, std::size_t from, NodeId tail,
                   const std::vector<Pending>& inherited);
  Value eval_statement(std::span<const NodeId> stmts, std::size_t k, NodeId tail);
  std::vector<std::size_t> referring(NodeId s, const std::vector<Pending>& pending) const;
  bool splittable(NodeId s);
  bool rebinds(NodeId s, const Pending& p) const;
  template <class F>
  Value fork_statement(Pending& p, F&& what);
  Value run_rest(std::span<const NodeId> stmts, std::size_t k, NodeId tail,
                 std::vector<Pending>& pending, std::size_t which);
  void eval_let(NodeId n);
  Value eval_if(NodeId n);
  Value eval_match(NodeId n);
  Value eval_loop(NodeId n);
  Value eval_any_call(NodeId n);
  Value eval_call(NodeId n);
  Value eval_method_call(NodeId n);
  std::vector<Value> eval_args(NodeId n);
  void eval_assign(NodeId n);
  Value eval_aggregate(NodeId n);
  void eval_forked(NodeId n);
  Value eval_closure(NodeId n);
  Value eval_struct(NodeId n);
  void eval_kids(NodeId n);
  void bind(NodeId pat, const Value& v);
  void bind_name(const std::string& name, const Value& v);
  void bind_guard_names(NodeId n, const Value& v, int depth);
  void merge_loop(const Env& before);
  // Before one symbolic iteration of loop body `body_node`: the locals it assigns hold, at the head
  // of a later iteration, values the one before the loop does not tell; a domain that decides
  // branches on values (`widen`) forgets what it would decide by in them.
  void widen_carried(NodeId body_node);
  void assigned_names(NodeId n, std::vector<std::string>& out, int depth) const;
  // The locals a loop body assigns on every iteration it completes (runs_at_least_once).
  std::vector<std::string> assigned_every_iteration(NodeId body_node) const;
  bool may_end_early(NodeId n, bool nested, int depth) const;
  void pattern_names(NodeId pat, std::vector<std::string>& out, int depth) const;
  bool expand_loop(NodeId n, const Value& iter, const Env& before);
  template <class F>
  Value run_branch(NodeId n, std::size_t i, std::size_t count, F&& what);
  Value eval_then(NodeId n, const Value& cond);
  void bind_at(NodeId owner, NodeId pat, const Value& v);
  void bind_arm(NodeId arm, const Value& scrut);
  Value decided_arm(NodeId arm, const Value& scrut);
  void open_scope() { undo_.emplace_back(); }
  void close_scope();
  static bool truncated(const rust::Node& n);

  const rust::Crate& crate_;
  Domain& dom_;
  Limits limits_;
  std::vector<std::size_t> stack_;  // functions being inlined
  std::vector<Frame*> frames_;
  // Per open block: the names its bindings shadowed and their previous values (nullopt: unbound),
  // so leaving the block restores only those (no copy of the whole environment).
  std::vector<std::vector<std::pair<std::string, typename Env::Ptr>>> undo_;
  std::map<std::pair<const rust::Body*, NodeId>, std::vector<std::string>> carried_;
  int nesting_ = 0;
  std::size_t used_ = 0;
  bool exhausted_ = false;
};

}  // namespace cg::analysis::interp

#include "analysis/interp/engine_bind.hpp"
#include "analysis/interp/engine_impl.hpp"
