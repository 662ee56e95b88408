#pragma once
// The inventory's walk over lowered bodies (rust/body.hpp): a constructor's body is walked
// statement by statement with an environment of builder values (root + key segments +
// certainty), config values and local closures. Catalog constructors and raw `get`s register
// parameter leaves; calls of crate-local constructors create child module instances; helpers are
// inlined. Loops repeat (expanded when a bound config makes the bound concrete), branches make
// leaves conditional unless every arm registers them. What is not understood becomes a
// `structure-unresolved` finding.
//
// One class, its members in five files by concern:
//   inventory_values.cpp  the value of an expression (builders, configs, layer configs, fn refs),
//                         key segments of prefixes, and the evaluator's context
//   inventory_flow.cpp    control flow: scopes, `let`, struct literals, loops and their
//                         expansion, the step/nesting budgets
//   inventory_branches.cpp  `if`/`match` forks and alternatives, the fork of a `let`
//   inventory_calls.cpp   calls: crate-local inlining, closures, method calls on builders
//   inventory_leaves.cpp  leaf registration (catalog constructors, raw `get`s)
// The control flow is what a shared interpreter core (src/analysis/interp/) will take over.
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "analysis/builder_types.hpp"
#include "analysis/config_binding.hpp"
#include "analysis/inventory.hpp"
#include "analysis/inventory_keys.hpp"
#include "analysis/layer_catalog.hpp"
#include "analysis/symbolic.hpp"
#include "rust/body.hpp"
#include "rust/crate.hpp"

namespace cg::analysis::inventory {

using rust::NodeId;

constexpr int kMaxDepth = 32;
constexpr std::size_t kMaxInstances = 20000;
constexpr std::size_t kMaxLeaves = 200000;
constexpr std::int64_t kMaxExpansion = 4096;
constexpr std::size_t kMaxSteps = 4'000'000;  // lowered nodes visited per component walk
constexpr int kMaxNesting = 400;              // nesting the walk descends into

struct Value {
  enum class Kind { none, sym, builder, config, closure, layer_config, loop_var, fn_ref };
  Kind kind = Kind::none;
  SymValue sym;
  // builder
  std::string root;
  std::vector<std::string> segs;
  Cert cert;
  // config
  ConfigRef config;
  // closure: its node in the body that bound it
  const rust::Body* closure_body = nullptr;
  NodeId closure = rust::kNone;
  // layer_config: a candle-nn config value (`Conv2dConfig { groups: 4, ..Default::default() }`,
  // `LayerNormConfig::default()`, an f64 eps that converts to one)
  std::map<std::string, SymValue> fields;
  bool defaulted = false;  // unspecified fields take candle-nn's defaults
  std::string ctor;        // `default`, `default_no_bias`
  std::string text;        // source text, for symbolic output
  // fn_ref: catalog constructors held as values (`let f = if b { linear } else { linear_no_bias }`)
  std::vector<std::pair<std::string, Cert>> fns;
  std::string declared_type;  // a parameter's declared Rust type, when bound by a call
  // module instances this local holds (set by `let x = Layer(..)`, `xs.push(Layer(..))`)
  std::vector<std::size_t> modules;
};

struct Inst {
  std::string type_name, qualified_type;
  std::optional<std::size_t> parent;
  std::string field;
  std::string root, prefix;
  std::string repeat;
  std::string source;
  std::vector<std::string> cfg;
  Cert cert;
  bool layer = false;
  std::map<std::string, std::string> attributes;  // a conv layer's config (ir::Module::attributes)
};

struct Leaf {
  std::size_t inst = 0;
  std::string root, key, kind, name;
  std::optional<std::vector<SymValue>> shape;
  std::string shape_reason;
  Cert cert;
  std::string source;
  bool running_state = false;
  std::vector<AlternativeMark> alts;  // enclosing undecided branches, outermost first
};

struct Diag {
  std::string source, message;
};

// A VarBuilder parameter type: `VarBuilder`, `&VarBuilder<'a>`, `candle_nn::VarBuilder`,
// `VarBuilderArgs<B>`, `ShardedVarBuilder`, or an import alias of one (`use ..VarBuilder as VB`).
// `MyVarBuilderConfig` is not one.
// A VarBuilder, or a VarBuilder-like alias found by `find_builder_types` (not a wrapper: its
// prefix is only right once the walker follows it into the wrapper's field).
bool is_builder_type(const BuilderTypes& types, const rust::Crate& crate, const std::string& module,
                     const std::string& t);

class Walker : public EvalContext {
 public:
  Walker(const rust::Crate& crate, const LayerCatalog& catalog, bool audited,
         const ConfigBinding& binding, const BuilderTypes& builder_types, bool bind_config)
      : crate_(crate),
        catalog_(catalog),
        audited_(audited),
        binding_(binding),
        builder_types_(builder_types),
        bind_config_(bind_config) {}

  std::vector<Inst> insts;
  std::vector<Leaf> leaves;
  std::vector<Diag> diags;
  std::set<std::string> constructed_types;  // qualified types built as children
  // Only record which types the constructor builds as children, without walking them: finding
  // the roots needs no more, and it keeps that pass linear in the crate.
  void set_shallow() { shallow_ = true; }
  void set_args(const std::map<std::string, SymValue>* args) { args_ = args; }
  std::set<std::string> used_args;  // --arg names the root constructor took
  std::string unbound_config;       // the root's config type, when --config could not bind it
  bool truncated = false;

  // Walks the root constructor `ctor` of type `type_item` as instance 0.
  void run_root(std::size_t type_item, std::size_t ctor);

  // EvalContext ---------------------------------------------------------------------------
  std::optional<SymValue> lookup(std::string_view name) override;
  std::optional<SymValue> field(const rust::Body& body, NodeId base,
                                std::string_view name) override;
  std::optional<SymValue> method(const rust::Body& body, NodeId recv, std::string_view name,
                                 const std::vector<SymValue>& args) override;

 private:
  struct Frame {
    std::size_t fn_item = 0;
    std::size_t file = 0;
    const rust::Body* body = nullptr;  // the lowered body being walked
    std::size_t inst = 0;
    std::string type_qualified;  // the instance's type
    Cert cert;
    std::vector<std::string> repeat;  // "i in 0..n", innermost last
    std::vector<std::map<std::string, Value>> scopes;
    std::vector<std::size_t> created;  // instances created directly under `inst`, in order
    // Inlined helpers report the call site in the instance's own constructor (`src/attn.rs:6`
    // rather than the helper's body, which every caller shares).
    std::string call_site;
  };
  using Marks = std::pair<std::size_t, std::size_t>;  // [leaf, instance] counts

  const rust::Crate& crate_;
  const LayerCatalog& catalog_;
  bool audited_;
  const ConfigBinding& binding_;
  const BuilderTypes& builder_types_;
  bool bind_config_;
  bool shallow_ = false;
  const std::map<std::string, SymValue>* args_ = nullptr;
  int const_depth_ = 0;
  std::map<std::string, std::map<std::string, SymValue>> module_fields_;  // by qualified type
  std::size_t steps_ = 0;
  int nesting_ = 0;
  int forks_ = 0;  // nested fork_let continuations in flight (each doubles the work)
  std::vector<Frame*> stack_;
  int value_depth_ = 0;
  // The undecided branches the walk is inside, outermost first (issue #21: totals never sum two
  // alternatives of one group).
  std::vector<AlternativeMark> alt_ctx_;
  std::size_t alt_groups_ = 0;

  // Node access in the current frame's body.
  Frame& frame() { return *stack_.back(); }
  const rust::Body& body() { return *frame().body; }
  const rust::Node& node(NodeId n) { return body()[n]; }
  std::string text(NodeId n) { return std::string(body().source(n)); }
  std::string where(NodeId n);
  std::string site(NodeId n) { return frame().call_site.empty() ? where(n) : frame().call_site; }
  void diag(NodeId n, std::string message) { diags.push_back({where(n), std::move(message)}); }
  // A pattern or path node that was written as a bare identifier.
  bool is_ident(NodeId n);

  // Environment (inventory_values.cpp).
  Value* find_var(const std::string& name);
  void bind(const std::string& name, Value v) { frame().scopes.back()[name] = std::move(v); }
  Value param_value(const rust::Param& p, const std::string& module);
  std::optional<SymValue> const_value(const std::string& path);
  std::optional<SymValue> layer_field(const Value& b, std::string_view name);
  std::optional<SymValue> module_field(const Value& b, std::string_view name);
  SymValue eval(NodeId n);

  // Values without side effects (inventory_values.cpp).
  Value value_of(NodeId n, int depth);
  std::optional<Value> call_value(NodeId n, int depth);
  std::optional<Value> struct_value(NodeId n);
  std::optional<Value> if_value(NodeId n, int depth);
  std::optional<Value> builder_chain(NodeId n, int depth);
  Value block_value(NodeId block, int depth);
  std::vector<std::string> prefix_segments(NodeId arg);
  std::string format_template(NodeId macro);
  std::string placeholder_text(const std::string& expr);
  std::optional<std::string> function_path(const std::string& path);

  // Control flow (inventory_flow.cpp; branches and let forks in inventory_branches.cpp).
  using Stmts = std::vector<std::pair<NodeId, rust::Tri>>;
  void walk(NodeId n, int depth);
  void walk_children(NodeId n, int depth);
  void walk_block(NodeId n, int depth);
  void walk_stmts(const Stmts& stmts, std::size_t from, int depth);
  bool fork_let(const Stmts& stmts, std::size_t i, int depth);
  std::optional<std::vector<std::vector<SymValue>>> fork_arms(NodeId value, std::size_t names);
  void walk_let(NodeId n, int depth);
  void shadow_pattern(NodeId pat);
  void shadow_path(std::string_view path, bool last);
  void shadow_expr(NodeId n);
  std::vector<NodeId> pattern_elems(NodeId pat);
  std::string first_identifier(NodeId pat);
  void statement_macro(NodeId n);
  void walk_struct(NodeId n, int depth);
  void name_held_modules(NodeId value, const std::string& field);
  void walk_for(NodeId n, int depth);
  void repeat_body(const std::string& var, NodeId iter, NodeId pat,
                   const std::function<void()>& body);
  std::string expand_or_undo(const std::string& var, std::int64_t lo, std::int64_t hi,
                             const std::function<void()>& body, NodeId iter);
  Marks marks() { return {leaves.size(), insts.size()}; }
  void under(const Cert& c, const std::function<void()>& fn);
  std::string new_group(NodeId n) { return where(n) + "#" + std::to_string(++alt_groups_); }
  void in_alt(const std::string& group, NodeId at, int index, int count, const std::string& label,
              const std::function<void()>& fn);
  void drop_group(std::size_t from, std::size_t to, const std::string& group);
  void walk_if(NodeId n, int depth);
  void unify(Marks m0, Marks m1, Marks m2, const Cert& outer, const std::string& group);
  Cert inner_of(std::size_t i, const Cert& outer);
  void walk_match(NodeId n, int depth);
  void unify_arms(const std::vector<Marks>& ms, std::size_t arms, const Cert& outer,
                  const std::string& group);

  // Calls (inventory_calls.cpp).
  void walk_args(const std::vector<NodeId>& args, int depth);
  bool any_builder(const std::vector<NodeId>& args);
  void walk_call(NodeId n, int depth);
  void call_fn_ref(NodeId n, const std::string& path, const std::vector<NodeId>& args, int depth);
  void call_path(NodeId n, const std::string& path, const std::vector<NodeId>& args, int depth);
  void walk_method_call(NodeId n, int depth);
  void walk_fallback(NodeId n, NodeId recv, NodeId closure, int depth);
  void walk_closure_call(NodeId recv, const std::string& name, NodeId closure, int depth);
  std::vector<NodeId> closure_params(NodeId closure);
  void inline_closure(const std::string& name, const Value& closure,
                      const std::vector<NodeId>& args, int depth);
  void call_local(NodeId n, std::size_t callee, const std::vector<NodeId>& args,
                  const std::string& path, int depth);

  // Leaves (inventory_leaves.cpp).
  void register_layer(NodeId n, const ConstructorSpec& spec, const std::string& path,
                      const std::vector<NodeId>& args);
  std::string layer_leaf_name(const std::string& name, const ConstructorSpec& spec,
                              const std::vector<Value>& argv, const std::vector<NodeId>& args);
  SymValue template_value(const std::string& templ, const ConstructorSpec& spec,
                          const std::vector<Value>& argv, const std::vector<NodeId>& args);
  SymValue term_value(const std::string& term, const ConstructorSpec& spec,
                      const std::vector<Value>& argv, const std::vector<NodeId>& args);
  bool scalar_param(const std::string& name);
  bool is_float(NodeId arg);
  void register_raw(NodeId n, const Value& b, const std::string& method,
                    const std::vector<NodeId>& args);
  void raw_shape(Leaf& leaf, NodeId arg);
};

}  // namespace cg::analysis::inventory
