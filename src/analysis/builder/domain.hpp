#pragma once
// The builder/prefix domain of the interpreter (src/analysis/interp/engine.hpp): the parameter
// inventory, run on the one engine (it replaced a syntax walker with its own control flow). Values
// are the inventory's (inventory_types.hpp): builders with their key segments and certainty,
// configs, candle-nn layer configs, closures, constructor references and symbolic numbers
// (symbolic.cpp). The engine's optional hooks carry the inventory's control flow: `choose` decides
// branches, the branch hooks mark alternatives and unify what every arm registers,
// `expand`/`iterated` expand loops with a concrete bound, `closure`/`run_closure` run closures
// where they are called, `split` forks a `let` bound by an undecided `if` of literals.
//
// One class, its members in four files by concern:
//   values.cpp    values of expressions, the evaluator's context, builder algebra, prefixes
//   calls.cpp     calls: crate-local constructors (child instances) and helpers, closures,
//                 method calls the domain takes over (raw gets, fallbacks, iterator maps, push)
//   dispatch.cpp  method calls on crate values given a builder, resolved over the impls the
//                 receiver's type (or, for a trait object or generic, its trait) may run
//   flow.cpp      branches, alternatives, loops, patterns, `let`, struct literals, limits
//   leaves.cpp    leaf registration (catalog constructors, raw `get`s)
#include <algorithm>
#include <cstddef>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "analysis/builder_types.hpp"
#include "analysis/config_binding.hpp"
#include "analysis/interp/engine.hpp"
#include "analysis/inventory_keys.hpp"
#include "analysis/inventory_types.hpp"
#include "analysis/layer_catalog.hpp"
#include "analysis/symbolic.hpp"

namespace cg::analysis::builder {

// candle-nn's VarBuilder getters that take a tensor name (and, but for the `*_unchecked*` and
// `get_no_shape` ones, a shape first).
inline bool raw_get(std::string_view name) {
  return name == "get" || name == "get_with_hints" || name == "get_with_hints_dtype" ||
         name == "get_unchecked" || name == "get_unchecked_dtype" || name == "get_no_shape";
}

using inventory::Cert;
using rust::NodeId;

// Whether a call's arguments hold a builder (the calls the domain follows).
inline bool any_builder(const std::vector<inventory::Value>& args) {
  return std::any_of(args.begin(), args.end(), [](const inventory::Value& v) {
    return v.kind == inventory::Value::Kind::builder;
  });
}

// Facts that depend only on the crate (not on a walk's state), remembered across every walk of one
// `build_inventory`: name resolution from an item, whether a type names a VarBuilder, a type's
// config. The inventory asks them again at every call and inlined parameter.
struct StaticMemo {
  std::unordered_map<std::string, std::vector<rust::Candidate>> resolved;  // "item\0path"
  std::unordered_map<std::string, bool> builder_type;                      // "module\0type"
  std::unordered_map<std::string, std::optional<ConfigRef>> config_type;   // "module\0type"
};

class BuilderDomain : public EvalContext {
 public:
  using Value = inventory::Value;
  using Eng = interp::Engine<BuilderDomain>;
  using Names = std::vector<std::pair<std::string, Value>>;

  BuilderDomain(const rust::Crate& crate, const LayerCatalog& catalog, bool audited,
                const ConfigBinding& binding, const BuilderTypes& builder_types, bool bind_config)
      : crate_(crate),
        catalog_(catalog),
        audited_(audited),
        binding_(binding),
        builder_types_(builder_types),
        bind_config_(bind_config) {}

  inventory::Walked out;
  void set_shallow() { shallow_ = true; }
  void set_args(const std::map<std::string, SymValue>* args) { args_ = args; }
  // Shares the crate-only facts with other walks of the same crate (default: this walk's own).
  void set_memo(StaticMemo* memo) { memo_ = memo; }
  // Runs the root constructor `ctor` of type `type_item` as instance 0.
  void run_root(std::size_t type_item, std::size_t ctor);

  // ---- the interpreter's domain interface ----------------------------------------------------
  Value join(const std::vector<Value>& vs);
  Value loop_merge(const Value& before, const Value& after) const;
  Value literal(Eng& eng, NodeId n) { return sym_of(eng, n); }
  Value path(Eng& eng, NodeId n);
  Value unbound(Eng& eng, NodeId n) { return path(eng, n); }
  Value index(Eng& eng, NodeId n, Value, Value) { return sym_of(eng, n); }
  Value cast(Eng& eng, NodeId n, Value) { return sym_of(eng, n); }
  Value field(Eng& eng, NodeId n, Value base);
  Value call(Eng& eng, NodeId n, std::vector<Value> args);
  Value method_call(Eng& eng, NodeId n, Value recv, std::vector<Value> args);
  Value binary(Eng& eng, NodeId n, Value l, Value r);
  Value unary(Eng& eng, NodeId n, Value) { return sym_of(eng, n); }
  Value macro(Eng& eng, NodeId n);
  Value aggregate(Eng& eng, NodeId n, std::vector<Value> elems);
  void array_argument(std::vector<Value>, std::vector<Value>& args);
  void let_begin(Eng&, NodeId) { let_marks_.push_back(ctx().created.size()); }
  Value let_value(Eng& eng, NodeId let, Value v);
  Value parameter(std::size_t item, std::size_t i, Value arg);
  void enter(Eng&, std::size_t, bool) {}
  Value returned(std::size_t, Value joined) { return joined; }
  void bound(Eng& eng, const interp::Bound& b);
  // Rust's rule: a block ending in an `if`/`match` without `;` has that expression's value
  // (`(Err(e), _) => { if let (Ok(a), Ok(b)) = (..) { (a, b) } else { return Err(e) } }`).
  bool statement_value(Eng&, NodeId) const { return true; }
  // Optional members.
  std::optional<std::size_t> choose(Eng& eng, NodeId n, const Value& cond);
  static std::optional<bool> option_variant(const SymValue& s);
  void branch_begin(Eng& eng, NodeId n, std::size_t i, std::size_t count);
  void branch_end(Eng& eng, NodeId n, std::size_t i);
  void branches_joined(Eng& eng, NodeId n);
  void loop_begin(Eng& eng, NodeId n, const Value& iter);
  void loop_end(Eng&, NodeId);
  std::optional<std::vector<Value>> expand(Eng& eng, NodeId n, const Value& iter);
  bool iterated(Eng& eng, NodeId n, std::size_t i);
  Value loop_variable(Eng&, NodeId, const Value&);
  std::optional<Value> assign(Eng& eng, NodeId n, Value v);
  std::optional<Value> closure(Eng& eng, NodeId n);
  Value structure(Eng& eng, NodeId n);
  void uncertain(Eng& eng, NodeId stmt, bool begin);
  // `let grn = convnext2_grn(dim, vb.pp("grn"));` whose Result is only matched later (`if let
  // Ok(g) = &grn`), never propagated: what it loads is optional, one alternative of two.
  void around_let(Eng& eng, NodeId stmt, bool begin);
  std::vector<Names> split_flag(NodeId let);
  std::vector<Names> split(Eng& eng, NodeId let);
  // `let vb_m = layout.text(vb.clone());` whose impls return different builders: the rest of the
  // block runs once per impl (dispatch.cpp).
  std::vector<Names> split_impls(Eng& eng, NodeId let);
  // A call `split` may fork over: a crate function whose body is an `if` of literals.
  bool splits_call(Eng&, NodeId call) { return literal_helper(call).has_value(); }
  void fork_begin(Eng& eng, NodeId let);
  void split_end(Eng& eng, NodeId let);
  bool agree(const std::vector<Value>& vs) const;
  Names bindings(Eng& eng, NodeId owner, NodeId pat, const Value& v);
  std::optional<Value> takes_over(Eng& eng, NodeId n);
  void scrutinee(Eng& eng, NodeId n, bool begin);

  // ---- EvalContext (symbolic.cpp asks for names, fields, config methods) ---------------------
  std::optional<SymValue> lookup(std::string_view name) override;
  std::optional<SymValue> field(const rust::Body& body, NodeId base,
                                std::string_view name) override;
  std::optional<SymValue> method(const rust::Body& body, NodeId recv, std::string_view name,
                                 const std::vector<SymValue>& args) override;
  // `cfg.version == ModelVersion::V7b`, resolved from the running function's module.
  std::optional<std::vector<std::string>> variant_spellings(std::string_view path) override {
    if (!eng_ || !bind_config_) return std::nullopt;
    return binding_.variant_spellings(path, crate_.items()[eng_->item()].module);
  }

 private:
  // Per inlined constructor or helper: the instance it builds into (a helper shares its
  // caller's), the certainty, the repeat texts, the instances created directly, the call site.
  struct Ctx {
    std::size_t inst = 0;
    std::string type_qualified;
    Cert cert;
    std::vector<std::string> repeat;
    std::vector<std::size_t> created;
    std::string call_site;
  };
  using Marks = std::pair<std::size_t, std::size_t>;  // [leaf, instance] counts
  // An undecided branch (`if`, `match`, a split `let`) while its arms run.
  struct Branch {
    NodeId node = rust::kNone;
    enum class Kind { if_, match, fallback, split } kind = Kind::if_;
    std::string group, reason, scrut_text, cond_text;
    std::vector<std::string> labels;  // per alternative, where they are named (impls)
    Cert outer;
    std::vector<Marks> marks;
    std::size_t count = 0;
    bool closing = false;
  };
  // A loop while it runs: what expanding it needs to undo.
  struct Loop {
    NodeId iter = rust::kNone;
    std::shared_ptr<const std::vector<std::vector<SymValue>>> rows;  // a literal array iterated
    std::string var, bound_text;
    std::optional<std::int64_t> lo, hi;
    std::size_t n_inst = 0, n_leaf = 0, n_diag = 0, n_created = 0;
    bool was_stopped = false;
  };

  const rust::Crate& crate_;
  const LayerCatalog& catalog_;
  bool audited_;
  const ConfigBinding& binding_;
  const BuilderTypes& builder_types_;
  bool bind_config_;
  bool shallow_ = false;
  const std::map<std::string, SymValue>* args_ = nullptr;
  StaticMemo own_memo_;
  StaticMemo* memo_ = &own_memo_;
  Eng* eng_ = nullptr;
  std::vector<Ctx> ctxs_;
  std::vector<std::size_t> items_;  // functions open, innermost last (recursion guard)
  int depth_ = 0;                   // inlined calls and closures open
  int forks_ = 0;
  int const_depth_ = 0;
  int arg_calls_ = 0;                     // --arg constructor calls running
  std::vector<std::size_t> const_items_;  // consts being evaluated (their names resolve there)
  std::vector<std::size_t> let_marks_;
  std::vector<Branch> branches_;
  std::vector<std::pair<NodeId, Branch>> splits_;  // split `let`s waiting, with their group
  std::vector<Loop> loops_;
  std::vector<Cert> saved_certs_;
  // around_let: for each open `let`, whether it pushed an alternative, and the sizes of the
  // alternative and certainty stacks before it.
  struct OptionalLet {
    bool pushed = false;
    std::size_t alts = 0, certs = 0;
  };
  std::vector<OptionalLet> optional_lets_;
  std::vector<AlternativeMark> alt_ctx_;
  std::size_t alt_groups_ = 0;
  std::map<std::string, std::map<std::string, SymValue>> module_fields_;

  // Node access.
  Ctx& ctx() { return ctxs_.back(); }
  const rust::Body& body() const { return eng_->body(); }
  const rust::Node& node(NodeId n) const { return eng_->node(n); }
  std::string text(NodeId n) const { return std::string(body().source(n)); }
  // An expression as a message quotes it: on one line, cut after 120 bytes with its length said
  // (an 8,000-link `vb.pp(..)` chain is not repeated whole in a warning).
  std::string quoted(NodeId n) const;
  bool is_ident(NodeId n) const { return n != rust::kNone && node(n).is_identifier(); }
  std::string where(NodeId n) const;
  std::string site(NodeId n) { return ctx().call_site.empty() ? where(n) : ctx().call_site; }
  void diag(NodeId n, std::string message) { out.diags.push_back({where(n), std::move(message)}); }
  Marks marks() const { return {out.leaves.size(), out.insts.size()}; }
  std::string new_group(NodeId n) { return where(n) + "#" + std::to_string(++alt_groups_); }
  void push_alt(const std::string& group, NodeId at, int index, int count,
                const std::string& label);
  void under(const Cert& c, const std::function<void()>& fn);

  // The derive macro that may generate a method the source lacks (calls.cpp), for messages.
  std::string generated_by(const std::vector<std::size_t>& items, const std::string& method) const;
  std::vector<std::size_t> receiver_items(NodeId recv_node, const Value& recv);

  // Method dispatch (dispatch.cpp): the methods a call `recv.name(..)` may run, each with the
  // impl it belongs to (`impl DeviceMapper for LayerDeviceMapper`), and their run.
  struct Impls {
    std::vector<std::size_t> methods;
    std::vector<std::string> labels;
    std::string via;  // how the receiver's type was found, for messages
  };
  Impls method_impls(NodeId recv_node, const Value& recv, const std::string& name);
  std::optional<std::pair<std::string, std::string>> written_type(NodeId r, int depth = 0);
  Impls impls_of_type(const std::string& module, const std::string& type_text,
                      const std::string& name);
  Impls trait_impls(const std::vector<std::size_t>& traits, const std::string& name);
  Impls impls_by_name(const std::string& name);
  std::string impl_label(std::size_t method) const;
  Value call_impls(Eng& eng, NodeId n, const Impls& impls, const std::vector<Value>& args);
  // Runs every impl as an alternative of branch `br` (opened by the caller); their returns.
  std::vector<Value> run_impls(Eng& eng, NodeId n, const Impls& impls,
                               const std::vector<Value>& args, Branch& br);
  bool side_effect_free(NodeId n, int depth = 0) const;
  // Method calls a split already ran, whose impls agreed: their value, by body and node.
  std::map<std::pair<const rust::Body*, NodeId>, Value> settled_;

  // Crate-only facts, remembered (values.cpp).
  const std::vector<rust::Candidate>& resolve_in(std::size_t item, const std::string& path);
  bool builder_type(const std::string& module, const std::string& type_text);
  std::optional<ConfigRef> config_type(const std::string& type_text, const std::string& module);

  // Values (values.cpp).
  Value sym_of(Eng& eng, NodeId n);
  SymValue eval_sym(NodeId n) { return evaluate(body(), n, *this); }
  Value peek(NodeId n, int depth);
  const Value* local(const std::string& name);
  Value* local_mut(const std::string& name);  // the frame's own copy, to change
  Value param_value(const rust::Param& p, const std::string& module);
  // `--arg cfg=Config::tiny()`: that crate function's body run on this engine; the config value
  // its struct literal gives, or nullopt with `out.arg_problems[p.name]` saying why.
  std::optional<Value> arg_call(const rust::Param& p, const std::string& call, std::size_t ctor);
  // A struct literal of a crate-local struct built while an --arg call runs: the config it is.
  Value run_arg_fn(Eng& eng, std::size_t fn, const std::vector<Value>& args);
  std::optional<Value> constructed_config(Eng& eng, NodeId n,
                                          const std::map<std::string, Value>& evaluated);
  std::optional<SymValue> const_value(const std::string& path);
  std::optional<SymValue> layer_field(const Value& b, std::string_view name);
  std::optional<SymValue> module_field(const Value& b, std::string_view name);
  std::optional<std::string> function_path(const std::string& path);
  std::optional<Value> builder_method(NodeId n, const Value& recv);
  std::optional<Value> struct_value(NodeId n, const std::map<std::string, Value>* evaluated);
  Value record_field(const Value& record, std::string_view name);
  Value member(Value base, std::string_view name);
  std::vector<std::string> prefix_segments(NodeId arg);
  std::string format_template(NodeId macro);
  std::size_t resolution_item() const;

  // Calls (calls.cpp).
  Value call_path(Eng& eng, NodeId n, const std::string& path, const std::vector<Value>& args);
  Value call_fn_ref(Eng& eng, NodeId n, const Value& fns, const std::vector<Value>& args);
  Value call_closure(Eng& eng, NodeId n, const std::string& name, const Value& closure,
                     const std::vector<Value>& args);
  Value call_local(Eng& eng, NodeId n, std::size_t callee, const std::vector<Value>& args,
                   const std::string& path);
  Value plain_call_value(NodeId n, const std::vector<Value>& args);
  std::optional<Value> closure_method(Eng& eng, NodeId n, NodeId closure);
  Value fallback(Eng& eng, NodeId n, NodeId closure);
  void repeat_closure(Eng& eng, NodeId recv, NodeId closure);
  Value push_call(Eng& eng, NodeId n);
  Value then_some(Eng& eng, NodeId n);

  // Flow (flow.cpp).
  Branch open_branch(NodeId n, Branch::Kind kind);
  std::string label_of(const Branch& b, std::size_t i);
  void unify(const Branch& b, bool instances);
  Cert inner_of(std::size_t i, const Cert& outer, const std::string& group) const;
  std::string first_identifier(NodeId pat) const;
  void shadow_pattern(NodeId pat, Names& out) const;
  void destructure(NodeId pat, const Value& v, Names& out, int depth);
  void shadow_path(std::string_view path, bool last, Names& out) const;
  void shadow_expr(NodeId n, Names& out) const;
  std::vector<NodeId> pattern_elems(NodeId pat) const;
  void name_held_modules(NodeId value, const std::string& field, int depth = 0);
  std::optional<std::vector<std::vector<SymValue>>> fork_arms(const rust::Body& b, NodeId value,
                                                              std::size_t names);
  std::optional<std::pair<const rust::Body*, NodeId>> literal_helper(NodeId value);
  Loop loop_of(NodeId iter, NodeId pat);
  Value iteration(const Loop& lp, std::int64_t i) const;
  bool row_pattern(NodeId pat, std::size_t arity) const;
  std::optional<std::vector<std::vector<SymValue>>> array_rows(NodeId iter);
  bool expandable(Loop& lp, NodeId pat);
  bool undo_if_too_big(Eng& eng, Loop& lp);

  // Leaves (leaves.cpp).
  void register_layer(NodeId n, const ConstructorSpec& spec, const std::string& path,
                      const std::vector<Value>& argv);
  std::string layer_leaf_name(const std::string& name, const ConstructorSpec& spec,
                              const std::vector<Value>& argv, std::span<const NodeId> args);
  SymValue template_value(const std::string& templ, const ConstructorSpec& spec,
                          const std::vector<Value>& argv, std::span<const NodeId> args);
  SymValue term_value(const std::string& term, const ConstructorSpec& spec,
                      const std::vector<Value>& argv, std::span<const NodeId> args);
  bool scalar_param(const std::string& name);
  bool is_float(NodeId arg);
  void register_raw(NodeId n, const Value& b, const std::string& method);
  std::optional<Value> held_tensor(NodeId n, const Value& recv, const std::vector<Value>& args);
  std::optional<std::string> new_layer_type(const std::string& external) const;
  std::optional<Value> own_layer(NodeId n, const std::string& external,
                                 const std::vector<Value>& args);
  std::optional<Value> tied_layer(NodeId n, const std::string& external,
                                  const std::vector<Value>& args);
  void raw_shape(inventory::Leaf& leaf, NodeId arg);
};

}  // namespace cg::analysis::builder
