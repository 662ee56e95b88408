#pragma once
// The tensor domain of the interpreter (src/analysis/interp/engine.hpp): what Candle code does to
// tensors — operations with edit-stable ids applied through the audited op catalog (dtype,
// gradient, shape, numeric domain, device, layout), crate-local calls inlined as one Call
// operation, parameters linked to the operations that read them — and the facts the finding
// checks (src/analysis/checks/) look at.
//
// Operations are keyed by their syntax node, so an operation reached from several entrypoints (or
// inlined twice) keeps one edit-stable id: operation_id(<function containing it>, <op name>,
// <occurrence in that function>).
#include <algorithm>
#include <cstddef>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "analysis/checks/check.hpp"
#include "analysis/config_binding.hpp"
#include "analysis/dataflow.hpp"
#include "analysis/interp/engine.hpp"
#include "analysis/op_catalog.hpp"
#include "analysis/tensor/value.hpp"
#include "ir/stable_id.hpp"

namespace cg::analysis::tensor {

using rust::NodeId;

class TensorDomain {
 public:
  using Value = Val;
  using Eng = interp::Engine<TensorDomain>;
  using Checks = std::vector<std::unique_ptr<checks::Check>>;

  TensorDomain(const rust::Crate& crate, const DataflowOptions& opts, ir::ModelIr& ir,
               checks::Reporter& out, Checks& checks);

  // One entrypoint: its tensor parameters become input tensors, the body is interpreted, the
  // run's facts go to the checks. Returns the nodes the run evaluated.
  void begin_run(std::size_t fn_index);
  std::size_t run_entry(Eng& eng, std::size_t fn_index, std::size_t item);
  // A function-style model (`--root models::resnet::resnet18`, `fn(.., vb) -> Result<Func>`):
  // the function runs as a constructor (closures captured, VarBuilder prefixes followed, loops
  // over known ranges expanded), then the closure it returns runs on an input tensor as the root
  // module's `forward` (closures.cpp). Returns the nodes the run evaluated.
  std::size_t run_function_root(Eng& eng, std::size_t fn_index, std::size_t item,
                                const std::string& component);
  // A struct root (`models::vgg::Vgg`) whose fields hold closures (`blocks: Vec<FuncT>`): its
  // entrypoints first run constructor `ctor_item` as a function root's does, and `self`'s
  // closure fields are what that run put there.
  void root_constructor(std::ptrdiff_t type_item, std::size_t ctor_item,
                        const std::string& component);
  // After every entrypoint: operation phases, sorted call lists.
  void finish();
  void limit(const checks::LimitFact& l);

  // ---- the interpreter's domain interface (engine.hpp) ----------------------------------------
  Val join(const std::vector<Val>& vs) const { return tensor::join(vs); }
  // Branch k leads the join (lead): its value first, its shapes kept where the branches differ.
  Val join_led(std::vector<Val> vs, std::size_t k) const {
    if (k < vs.size())
      std::rotate(vs.begin(), vs.begin() + static_cast<std::ptrdiff_t>(k),
                  vs.begin() + static_cast<std::ptrdiff_t>(k) + 1);
    return tensor::join(vs, true);
  }
  Val loop_merge(const Val& before, const Val& after) const {
    return tensor::loop_merge(before, after);
  }
  // A `for` over `a..b` in a root's forward run (loops.cpp) runs at least once when `a < b` are
  // known numbers, or when `a` is 0 and `b` a dimension of the root's input: the forward the
  // figures describe is one call on a non-empty input (batch and context at least 1).
  bool runs_at_least_once(Eng& eng, NodeId n, const Val& iter);
  // A local such a loop assigns on every iteration: the body's value, its `Option` variant kept;
  // a number the iteration changed is not known after it (`n = n * 2`).
  Val loop_exit(const Val& before, const Val& body) const;
  // A local a loop body assigns (or calls a method on), before its one symbolic iteration: its
  // `Option` variant at a later iteration's head is not known (`sum = match sum { None =>
  // Some(z), Some(s) => Some((s + z)?) }`).
  void widen(Val& v) const { v.variant = Val::Variant::unknown; }
  std::optional<Val> element(const Val& tuple, std::size_t i, std::size_t count) const {
    return tensor::element(tuple, i, count);
  }
  Val literal(Eng& eng, NodeId n);
  Val path(Eng& eng, NodeId n);
  Val unbound(Eng& eng, NodeId n) const;  // a name that is no local: `None`
  Val field(Eng& eng, NodeId n, Val base);
  // A struct literal: its fields evaluated (their operations run), the value remembering each.
  Val structure(Eng& eng, NodeId n);
  Val call(Eng& eng, NodeId n, std::vector<Val> args);
  Val method_call(Eng& eng, NodeId n, Val recv, std::vector<Val> args);
  Val binary(Eng& eng, NodeId n, Val l, Val r);
  Val unary(Eng& eng, NodeId n, Val v);
  Val cast(Eng& eng, NodeId n, Val v);
  Val macro(Eng& eng, NodeId n);  // instances.cpp: `panic!`, `bail!` … end the path
  Val aggregate(Eng& eng, NodeId n, std::vector<Val> elems);
  void array_argument(std::vector<Val> elems, std::vector<Val>& args);
  void let_begin(Eng&, NodeId) { dims_tid_.clear(); }
  Val let_value(Eng& eng, NodeId let, Val v);
  Val parameter(std::size_t item, std::size_t i, Val arg);
  // `x.dims()[1]`: an element of a list of known sizes at a known index; any other indexing is
  // the base's value (a family member is the family).
  Val index(Eng& eng, NodeId n, Val v, Val i);
  // `self.kv_cache = Some((k, v))`, `cache.kvs[i] = Some(..)`: in a root's run, a store of
  // tensors into the model's state (a field of `self` or of a parameter) is recorded
  // (ir::StateStore: what a forward keeps across calls, the base of `memory`).
  std::optional<Val> assign(Eng& eng, NodeId n, Val v);
  void enter(Eng& eng, std::size_t callee, bool entry);
  Val returned(std::size_t item, Val joined);
  void bound(Eng& eng, const interp::Bound& b);
  // Constructor runs only (closures.cpp): a closure is a value capturing its environment, and a
  // `for` over a known range or a collected `Vec` runs once per value.
  std::optional<Val> closure(Eng& eng, NodeId n);
  std::optional<std::vector<Val>> expand(Eng& eng, NodeId n, const Val& iter);
  // A `match`/`if let` on an `Option` of known variant takes the arm it selects; in constructor
  // runs, an `if` whose condition is a known number takes that branch (`if stride != 1 || c_in
  // != c_out` builds a projection shortcut or the identity).
  std::optional<std::size_t> choose(Eng& eng, NodeId n, const Val& cond) const;
  // An enum value whose variant the modules it denotes tell (variants.cpp): deepseek2's `q:
  // QProj` holding one `Linear` instance is `QProj::Plain(Linear)`, so `match self {
  // Self::Lora { .. } => .., Self::Plain(lin) => lin.forward(xs) }` takes the `Plain` arm, and
  // the pattern binds `lin` to that `Linear` (the payload), not to the enum again.
  std::optional<std::size_t> variant_arm(Eng& eng, NodeId match, const Val& v) const;
  std::optional<Val> payload(Eng& eng, NodeId pat, const Val& v, std::string_view field);
  // In a root's forward run, a `match`/`if let` on a cache the constructor leaves `None` runs
  // every arm, the `None` arm leading the join: the first call's shapes (Val::fresh_none).
  std::optional<std::size_t> lead(Eng& eng, NodeId n, const Val& cond) const;
  // A trailing `if`/`match` statement (no `;`) is the block's value, as in Rust: `if n_rep == 1 {
  // Ok(xs) } else { .. }` ending a helper returns `xs`.
  bool statement_value(Eng&, NodeId) const { return true; }
  // Undecided branches (instances.cpp): the arms an instance call or an operation ran in, so
  // that a total adds one arm of each branch point; the rest of a body after arms that `return`
  // stands in the arms that did not.
  void branch_begin(Eng& eng, NodeId n, std::size_t i, std::size_t count);
  void branch_end(Eng& eng, NodeId n, std::size_t i);
  void branches_joined(Eng& eng, NodeId n);
  void body_begin(Eng& eng);
  void body_end(Eng& eng, bool called);
  void returning(Eng& eng, NodeId ret);
  void arm_value(Eng&, Val& v) const {
    if (diverged_) v = Val{};
  }

 private:
  // ---- closures and constructor runs (closures.cpp) -----------------------------------------
  // Runs callable `f` (a closure, or a collection applied in order) on `args`; nullopt when `f`
  // is neither.
  std::optional<Val> apply_callable(Eng& eng, NodeId n, const Val& f, std::vector<Val> args,
                                    bool train);
  Val call_closure(Eng& eng, const Closure& c, const std::vector<Val>& args);
  Val run_constructor(Eng& eng, std::size_t item, const std::string& component);
  void given_shape(const std::string& name, std::size_t tensor);
  const SymValue* arg(const std::string& name) const {
    if (!args_) return nullptr;
    auto it = args_->find(name);
    return it == args_->end() ? nullptr : &it->second;
  }
  // `vb.pp(..)`, `layers.push(..)`, `seq().add(..)`: nullopt when `n` is none of them.
  std::optional<Val> builder_method(Eng& eng, NodeId n, const Val& recv,
                                    const std::vector<Val>& args);
  // A candle-nn layer constructor given a VarBuilder (`conv2d(.., vb.pp("conv1"))`): the
  // inventory modules under that prefix; nullopt when no argument is a VarBuilder.
  std::optional<Val> built_layer(const std::vector<Val>& args, const std::string& leaf);
  std::optional<std::string> child_of_root(std::ptrdiff_t owner) const;
  std::optional<Val> layer_from_tensors(std::size_t fn_item, const std::string& path,
                                        const std::vector<Val>& args);
  std::set<std::string> modules_at(const std::string& prefix, const std::string* type) const;
  std::optional<Val> collection(std::vector<Val>& elems) const;  // facts.cpp

  // ---- operations (ops.cpp) ------------------------------------------------------------------
  Val make_op(Eng& eng, NodeId node, const std::string& name, const OpRule& rule,
              const std::vector<const Val*>& ins, const Val* recv,
              const std::optional<std::string>& explicit_dtype);
  std::size_t record_op(Eng& eng, NodeId node, const std::string& name, const OpRule& rule,
                        const std::vector<const Val*>& ins, const Val* recv);
  void transfer(const std::string& name, const OpRule& rule, const std::vector<const Val*>& ins,
                const std::optional<std::string>& explicit_dtype, Val& out) const;
  void update_tensor(Eng& eng, NodeId node, const std::string& name, const Val& out);
  std::string runtime_dtype(Eng& eng, NodeId call);
  Val apply_catalog(Eng& eng, NodeId node, const std::string& name, const OpRule& rule,
                    const std::vector<Val>& operands, const Val* recv);
  Val inline_call(Eng& eng, NodeId node, std::size_t callee, const Val* self,
                  const std::vector<Val>& args, const std::string& name);
  void link_params(const std::string& op_id, const Val* recv);
  void mark_loss(Eng& eng, const std::string& tid, bool loss_fn = true);

  // ---- shapes, devices, multiply-adds (shape.cpp) ------------------------------------------
  ir::TensorShape shape_of(Eng& eng, NodeId node, const OpRule& rule,
                           const std::vector<const Val*>& ins);
  std::optional<std::string> mult_adds(const OpRule& rule, const std::vector<const Val*>& ins,
                                       const Val* recv, ir::TensorShape& out_shape);
  ir::DeviceFact device_of(Eng& eng, NodeId node, const std::string& name,
                           const std::vector<const Val*>& ins);
  const ir::TensorShape* shape_of_tensor(const Val* v);
  std::optional<std::vector<std::uint64_t>> linear_weight(const Val* recv, std::size_t rank = 2);
  std::optional<std::string> conv_mult_adds(const OpTraits& tr, const std::vector<const Val*>& ins,
                                            const Val* recv, ir::TensorShape& out_shape);
  std::optional<double> static_num(Eng& eng, NodeId n, int depth);
  std::optional<std::string> dim_product(Eng& eng, NodeId n, int depth);
  std::optional<double> constructor_number(std::ptrdiff_t type_item, const std::string& f,
                                           const Val* base = nullptr);
  const std::map<std::string, SymValue>* instance_fields(std::ptrdiff_t type_item, const Val* base);
  std::map<std::string, std::map<std::string, SymValue>> instance_fields_;  // type + arguments
  std::optional<OpRule> activation_rule(Eng& eng, NodeId layer, const Val& v);
  void record_dims(Eng& eng, NodeId let);

  // ---- module instances (instances.cpp) -----------------------------------------------------
  static constexpr std::size_t kNoInstance = static_cast<std::size_t>(-1);
  // Opens an instance call on the modules `mods` denote (kNoInstance when none is an inventory
  // module, or when they are the open call's own: a method of the same instance).
  std::size_t open_instance(const std::set<std::string>& mods, const std::string& method,
                            std::optional<std::string> function);
  void close_instance(std::size_t ic, const Val& out, const ir::TensorShape* shape,
                      const std::string& call_site);
  // A run's instance-call numbering starts over: occurrences, sequence, nothing open.
  void reset_instances() {
    inst_occ_ = {};
    call_seq_ = 0;
    open_instances_.clear();
    branch_.clear();
    points_.clear();
    body_marks_.clear();
    arm_fates_.clear();
    diverged_ = returned_ = false;
    run_calls_begin_ = ir_.instance_calls.size();
  }
  // At a run's end: what ran in arms that never complete is dropped, and every branch path
  // names the arms that are dead.
  void settle_branches();
  // In the innermost open instance call, with this call's multiply-adds of it.
  void note_op(const std::string& op_id);
  void wrapped_layer(const OpRule& rule, const std::vector<Val>& args, const Val& recv);
  Val layer_call(Eng& eng, NodeId node, const std::string& name, const OpRule& rule,
                 const std::vector<Val>& operands, const Val* recv);

  // ---- types and host data (facts.cpp) -------------------------------------------------------
  Val typed_val(const std::string& module, const std::string& type_text, const std::string& base);
  std::ptrdiff_t resolve_type(const std::string& module, const std::string& type) const;
  std::ptrdiff_t owner_item(std::size_t item) const;
  std::ptrdiff_t pick_method(std::ptrdiff_t type_item, const std::string& name) const;
  std::ptrdiff_t tensor_trait_method(const std::string& name) const;
  void infer_hole(const ir::TensorShape& in, ir::TensorShape& out) const;
  std::optional<std::size_t> dim_index(Eng& eng, NodeId n, std::size_t rank);
  std::optional<std::string> host_dtype(Eng& eng, NodeId arg, NodeId call);
  void mark_host_dtype(Eng& eng, const Val& v, const std::string& dtype, NodeId node);
  Val free_call(Eng& eng, NodeId n, const std::string& path, std::vector<Val>& args);

  const std::string& fid_of(std::size_t item) const;  // its IR function id (cached)
  std::string src(Eng& eng, NodeId n) const;
  void operation_fact(const std::string& name, const OpRule& rule,
                      const std::vector<const Val*>& ins, const Val& out, std::size_t oi,
                      const std::string& source);

  const rust::Crate& crate_;
  const OpCatalog& cat_;
  ir::ModelIr& ir_;
  checks::Reporter& out_;
  Checks& checks_;
  std::optional<ConfigBinding> binding_;       // set when a config.json is bound
  std::optional<ConfigBinding> bare_binding_;  // no config: constructors over their arguments
  // struct item -> the numbers its constructor gives its fields with the config bound.
  std::unordered_map<std::ptrdiff_t, std::map<std::string, double>> ctor_nums_;
  // Per type: the fields its constructor writes `None` (Val::fresh_none).
  std::unordered_map<std::ptrdiff_t, std::set<std::string>> ctor_nones_;
  // Per (type, field): the config its constructor stores there whole (`cfg: cfg.clone()`).
  std::map<std::pair<std::ptrdiff_t, std::string>, std::shared_ptr<const ConfigRef>> ctor_configs_;
  std::shared_ptr<const ConfigRef> constructor_config(std::ptrdiff_t type_item,
                                                      const std::string& f);
  // Field names some function of the crate (or its dependencies) writes outside a struct
  // literal: an assignment to `x.f` (or into it), `x.f.take()`-like calls, `&mut x.f`.
  std::optional<std::set<std::pair<std::ptrdiff_t, std::string>>> written_fields_;
  bool field_ever_written(std::ptrdiff_t type_item, const std::string& f);
  bool constructor_none(std::ptrdiff_t type_item, const std::string& f);
  bool instance_none(std::ptrdiff_t type_item, const std::string& f, const Val& base);
  bool instance_some(std::ptrdiff_t type_item, const std::string& f, const Val& base);
  std::unordered_map<std::ptrdiff_t, std::map<std::string, std::string>> ctor_strings_;
  std::unordered_map<std::string, std::size_t> fn_index_;
  std::map<std::string, std::vector<std::string>> modules_by_type_;
  std::map<std::string, std::vector<const ir::Module*>> children_;
  std::map<std::string, std::vector<std::size_t>> params_by_module_;
  std::unordered_map<std::string, std::size_t> op_by_node_;  // "file:byte:name" -> operation
  std::unordered_map<std::string, const ir::Module*> module_by_id_;
  std::vector<std::size_t> open_instances_;   // indexes into ir.instance_calls, innermost last
  std::vector<ir::BranchArm> branch_;         // the undecided arms being run, outermost first
  struct BranchPoint {                        // an undecided `if`/`match` being run
    std::size_t depth = 0;                    // branch_.size() before it
    bool diverged = false, returned = false;  // the path's state before it
    std::set<std::size_t> returned_arms;      // arms that reached a `return` of a value
    std::set<std::size_t> dead;               // arms that never complete
    std::size_t count = 0;
    NodeId node = rust::kNone;  // the `if`/`match`, in
    const rust::Body* body = nullptr;
  };
  std::vector<BranchPoint> points_;
  struct BodyMark {  // a running body: branch_.size() and the path's state where it began
    std::size_t branch = 0;
    bool diverged = false, returned = false;
  };
  std::vector<BodyMark> body_marks_;
  // The path being run never completes (a `panic!`, `bail!`, `return Err(..)`, a call of a
  // function that always does), or it has returned a value.
  bool diverged_ = false, returned_ = false;
  // Per run: (site, offset) of an undecided branch point -> the arms seen dead, seen completing.
  std::map<std::pair<std::string, std::uint64_t>,
           std::pair<std::set<std::uint64_t>, std::set<std::uint64_t>>>
      arm_fates_;
  std::size_t run_calls_begin_ = 0;               // the run's first instance call
  ir::OccurrenceCounter inst_occ_;                // per run: path + method
  std::uint64_t call_seq_ = 0;                    // per run: instance calls opened so far
  std::size_t last_op_ = 0;                       // the operation make_op last recorded
  ir::TensorShape context_shape_;                 // its output's shape where record_op last ran
  bool refound_ = false;                          // record_op last re-found an operation
  std::optional<std::string> context_mult_adds_;  // its multiply-adds where record_op last ran
  ir::OccurrenceCounter occ_;
  std::unordered_map<std::size_t, std::unordered_set<std::string>> uses_seen_;  // per parameter
  std::vector<int> op_phases_;             // per operation: 1 train, 2 infer, 3 both
  std::string dims_tid_;                   // the tensor whose dims() the current `let` reads
  checks::RunFacts run_;                   // the entrypoint being interpreted
  mutable std::vector<std::string> fids_;  // per item
  bool ctor_ = false;                      // a function root's constructor run
  bool fn_root_run_ = false;               // a function root's run (constructor and forward)
  std::string ctor_component_;             // its component id
  std::size_t closure_depth_ = 0;          // closures being run
  const std::map<std::string, SymValue>* args_ = nullptr;  // `--arg`: root constructor arguments
  // struct roots whose constructor runs before their entrypoints: type item -> (ctor, component)
  std::map<std::ptrdiff_t, std::pair<std::size_t, std::string>> root_ctors_;
  std::set<std::ptrdiff_t> root_types_;  // every struct root's type item
  // A callee's tensors as the root's forward sees them (issue #37: an edge of the root's graph
  // reads `[b, seq_len, 256]`, not the helper's own `[b, t, hidden]`): per tensor id, the shape
  // every call from a root run gave it, dimension by dimension; where calls disagree the
  // function's own dimension stays. Applied in finish().
  struct ContextShape {
    ir::TensorShape shape;
    std::vector<bool> differs;  // per dimension: two calls gave different sizes
    bool rank_differs = false;
  };
  void note_context_shape(const std::string& tid, const ir::TensorShape& s);
  // `library`: the candle-nn cache type an `append` call grows ("" for an assignment).
  std::optional<double> const_number(std::size_t item, const std::string& path);
  std::unordered_map<std::string, std::optional<double>> const_nums_;
  void record_store(Eng& eng, NodeId at, const std::vector<const Val*>& stored,
                    const std::string& library = "");
  void cache_arguments(Eng& eng, NodeId recv, ir::StateStore& s);
  std::optional<std::uint64_t> array_slots(Eng& eng, NodeId place);
  // A `cat`'s first operand of known shape in its context and the dimension it joins along: a
  // state store of its result holds the positions appended along it (set by shape_of, kept per
  // output tensor by record_op).
  struct CatOperands {
    ir::TensorShape known;
    std::size_t dim = 0;
    // An operand's shape is not known here: what a state held (`cat(&[prev_k, &k], 2)`). A cat
    // of tensors this run made (`cat(&[k_nope, k_pe], D::Minus1)`) appends nothing to a state.
    bool appends = false;
  };
  std::optional<CatOperands> last_cat_;
  std::unordered_map<std::string, CatOperands> cat_of_;  // output tensor id -> its last context
  std::unordered_map<std::string, std::size_t> op_of_output_;  // tensor id -> operation index
  // The same for an operation's multiply-adds: per operation index, the figure every root call
  // gave, or nullopt once two differ (the operation keeps its own).
  void note_context_mult_adds(std::size_t op, const std::optional<std::string>& ma);
  std::map<std::size_t, std::pair<std::optional<std::string>, bool>> context_mult_adds_by_op_;
  bool root_run_ = false;  // the run is a root type's (or a function root's) entrypoint
  std::map<std::string, ContextShape> context_shapes_;
  const std::map<std::string, std::vector<std::string>>* input_tensors_ = nullptr;
  std::set<std::string>* inputs_used_ = nullptr;
  std::set<std::string>* inputs_offered_ = nullptr;
};

// A number the symbolic evaluator gave (`--arg`, a config field or array element) as a value:
// integers and reals as numbers, a boolean as 1 or 0 (Rust's `b as usize`); anything else carries
// no number.
Val number_val(const SymValue& s);

}  // namespace cg::analysis::tensor
