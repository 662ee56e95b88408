#pragma once
// The inventory's values and results, those of the builder/prefix domain on the interpreter
// (builder/domain.hpp): a value (builder with its key
// segments, config, layer config, closure, constructor reference, symbolic number), a module
// instance, a parameter leaf, a message, and what one component's run produced.
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "analysis/builder_types.hpp"
#include "analysis/config_binding.hpp"
#include "analysis/inventory.hpp"
#include "analysis/inventory_keys.hpp"
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
  // A field that holds a tuple of literals (`in_dim: (4096, 512, 7, 7)`): its one row, so
  // `cfg.in_dim` passed on is still a shape.
  std::map<std::string, std::shared_ptr<const std::vector<std::vector<SymValue>>>> field_rows;
  bool defaulted = false;  // unspecified fields take candle-nn's defaults
  std::string ctor;        // `default`, `default_no_bias`
  std::string text;        // source text, for symbolic output
  // fn_ref: catalog constructors held as values (`let f = if b { linear } else { linear_no_bias }`)
  std::vector<std::pair<std::string, Cert>> fns;
  std::string declared_type;  // a parameter's declared Rust type, when bound by a call
  // module instances this local holds (set by `let x = Layer(..)`, `xs.push(Layer(..))`)
  std::vector<std::size_t> modules;
  // A tensor a candle-nn layer instance holds (`embed.embeddings()`, `lin.weight().clone()`):
  // a layer built from it (`Linear::new(..)`) ties its weights to that instance's.
  std::optional<std::size_t> tensor_of;
  // A tensor the code asked its VarBuilder for (`vb.get(shape, "weight")?`): its leaf, which a
  // candle-nn layer built from it (`Conv1d::new(weight, Some(bias), cfg)`) owns.
  std::optional<std::size_t> leaf_of;
  // An array of literals or of tuples of literals (`&[(3, 64, "features.0"), (64, 64, ..)]`), one
  // row per element (a scalar element is a row of one): a loop over it is expanded, each
  // iteration's pattern bound to its row. One row: a tuple of literals.
  std::shared_ptr<const std::vector<std::vector<SymValue>>> rows;
  // A tuple expression's elements, each its own value (`(cfg.hidden_size, vb.pp("fc"))`): a
  // tuple pattern binds each name to its element (`let (h, i) = (..)`, nested tuples too).
  std::shared_ptr<const std::vector<Value>> elems;
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
  std::map<std::string, std::string> arguments;   // numbers its constructor call passed
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

// What one component's run produced: the driver (inventory.cpp) turns it into the IR.
struct Walked {
  std::vector<Inst> insts;
  std::vector<Leaf> leaves;
  std::vector<Diag> diags;
  std::set<std::string> constructed_types;  // qualified types built as children
  // Child constructor calls a shallow walk met, once per alternative it forked into: how much a
  // full walk of this root will expand (what orders the full walks, costliest first).
  std::size_t children_met = 0;
  std::set<std::string> used_args;  // --arg names the root constructor took
  // --arg values the root could not take, by name: why (a config given no call, a call that did
  // not evaluate to the config's struct literal, a field of it left unknown).
  std::map<std::string, std::string> arg_problems;
  std::map<std::size_t, ConfigRef> arg_configs;  // what an --arg call built, by struct item
  // A struct parameter of the root --config could not bind (warned about only when no other
  // parameter took the config: `new(cfg: &Config, vb, meta: LoadingMetadata)` binds `cfg`).
  std::string unbound_config;
  bool config_bound = false;
  bool truncated = false;
};

}  // namespace cg::analysis::inventory
