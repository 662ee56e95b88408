#include "analysis/dataflow.hpp"

#include <tree_sitter/api.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "analysis/config_binding.hpp"
#include "analysis/numeric_domain.hpp"
#include "analysis/op_catalog.hpp"
#include "ir/stable_id.hpp"
#include "util/deep_stack.hpp"
#include "util/text.hpp"

// Per-entrypoint expression dataflow (spec reference-static §4.4): an abstract interpreter over
// the tree-sitter body of each entrypoint that inlines crate-local calls and applies the audited
// operation catalog to candle calls. Operations are keyed by their syntax node, so an operation
// reached from several entrypoints (or inlined twice) keeps one edit-stable id:
// operation_id(<function containing it>, <op name>, <occurrence in that function>).
namespace cg::analysis {
namespace {

enum class Grad { trainable, frozen, differentiable, severed, layout_dependent, unknown };

struct Val {
  bool tensor = false;
  std::string tid;  // IR tensor id (tensors only)
  std::string dtype = "Unknown";
  Grad grad = Grad::unknown;
  NumericDomain dom = NumericDomain::unknown;
  bool undischarged_log = false;
  bool log_of_zero = false;       // a `log` whose operand is 0 on every execution
  std::optional<double> num;      // a numeric literal
  std::ptrdiff_t type_item = -1;  // crate-local struct/enum this value is an instance of
  std::string ext_type;           // external type name (`Linear`) when known
  std::set<std::string> modules;  // inventory module ids this value may denote
  std::string field;              // `f` when the value is `<owner>.f`
};

constexpr std::size_t kMaxDepth = 24;
constexpr std::size_t kNodeBudget = 400000;
// Syntax nesting one evaluation descends into (calls inlined included). Deeper code is a
// `dataflow-bound` finding, never a stack overflow; the analysis runs on a deep stack
// (util/deep_stack.hpp), so this bound, not the stack, decides, and it is the same in every build.
constexpr int kMaxNesting = 1000;

bool mentions(const std::string& s, const char* w) {
  return s.find(w) != std::string::npos;
}

std::string last_segment(const std::string& p) {
  return std::string(last_path_segment(p));
}

std::string first_segment(const std::string& p) {
  auto s = p.find("::");
  return s == std::string::npos ? p : p.substr(0, s);
}

std::string peel_generics(std::string t) {
  while (!t.empty() && (t[0] == '&' || t[0] == ' '))
    t.erase(0, 1);
  if (t.rfind("mut ", 0) == 0) t = t.substr(4);
  if (t.rfind("dyn ", 0) == 0) t = t.substr(4);
  auto lt = t.find('<');
  if (lt != std::string::npos) t = t.substr(0, lt);
  return t;
}

bool tensor_type(const std::string& t) {
  std::string b = last_segment(peel_generics(t));
  while (!b.empty() && (b[0] == '&' || b[0] == ' '))
    b.erase(0, 1);
  if (b.rfind("mut ", 0) == 0) b = b.substr(4);
  return b == "Tensor" || b == "Var";
}

bool var_type(const std::string& t) {
  std::string b = last_segment(peel_generics(t));
  return b == "Var";
}

Grad join_grad(Grad a, Grad b) {
  return a == b ? a : Grad::unknown;
}

const std::set<std::string>& passthrough_methods() {
  static const std::set<std::string> s{"clone",          "unwrap",     "expect",   "as_ref",
                                       "borrow",         "iter",       "iter_mut", "into_iter",
                                       "enumerate",      "rev",        "to_owned", "deref",
                                       "as_mut",         "borrow_mut", "skip",     "take",
                                       "unwrap_or_else", "context",    "map_err"};
  return s;
}

const std::set<std::string>& non_tensor_methods() {
  static const std::set<std::string> s{"dims",          "dims0",
                                       "dims1",         "dims2",
                                       "dims3",         "dims4",
                                       "dims5",         "dim",
                                       "shape",         "dtype",
                                       "device",        "rank",
                                       "elem_count",    "to_scalar",
                                       "to_vec0",       "to_vec1",
                                       "to_vec2",       "to_vec3",
                                       "is_contiguous", "stride",
                                       "layout",        "id",
                                       "len",           "is_empty",
                                       "to_string",     "is_some",
                                       "is_none",       "get",
                                       "push",          "insert",
                                       "collect",       "map",
                                       "zip",           "sum_keepdim_scalar"};
  return s;
}

struct PendingNumeric {
  std::string rule;
  bool proven = false;       // on every execution
  bool library = false;      // inside an expanded candle-nn function
  bool known_domain = true;  // the producer's domain is known (conditional), not unknown
  std::string message, source, tensor, op;
};

class Engine {
 public:
  Engine(const rust::Crate& crate, const DataflowOptions& opts, ir::ModelIr& ir)
      : crate_(crate),
        cat_(OpCatalog::for_version(opts.candle_version)),
        ir_(ir),
        crate_budget_(opts.crate_node_budget) {
    if (opts.config) binding_.emplace(crate, opts.config);
    for (std::size_t i = 0; i < ir_.functions.size(); ++i)
      fn_index_[ir_.functions[i].id] = i;
    for (const auto& m : ir_.modules) {
      modules_by_type_[m.qualified_type.value_or("")].push_back(m.id);
      if (m.parent) children_[*m.parent].push_back(&m);
    }
    for (std::size_t i = 0; i < ir_.parameters.size(); ++i)
      if (ir_.parameters[i].module) params_by_module_[*ir_.parameters[i].module].push_back(i);
  }

  void run() {
    std::size_t skipped = 0;
    std::string first_skipped;
    for (std::size_t i = 0; i < ir_.functions.size(); ++i) {
      if (!ir_.functions[i].is_entrypoint) continue;
      // A crate-wide budget as well as the per-entrypoint one: time and memory stay bounded on
      // any crate (tens of thousands of entrypoints), and what was not analyzed is said.
      if (total_nodes_ > crate_budget_) {
        if (skipped++ == 0) first_skipped = ir_.functions[i].qualified_name;
        continue;
      }
      auto item = item_of(ir_.functions[i]);
      if (!item) {
        finding("dataflow-entrypoint", ir::Severity::information, ir::Confidence::proven,
                "entrypoint `" + ir_.functions[i].qualified_name +
                    "` could not be analyzed: not found or ambiguous",
                ir_.functions[i].source, {ir_.functions[i].id});
        continue;
      }
      analyze_entry(i, *item);
    }
    if (skipped > 0)
      finding("dataflow-bound", ir::Severity::warning, ir::Confidence::proven,
              "dataflow stopped after " + std::to_string(crate_budget_) +
                  " expression nodes over the crate; " + std::to_string(skipped) +
                  " entrypoints were not analyzed, from `" + first_skipped + "` on",
              "", {});
    // An operation reached by both a train and an infer graph has no single phase.
    for (std::size_t oi = 0; oi < op_phases_.size(); ++oi) {
      if (op_phases_[oi] == 1) ir_.operations[oi].execution_phase = ir::ExecutionPhase::train;
      if (op_phases_[oi] == 2) ir_.operations[oi].execution_phase = ir::ExecutionPhase::infer;
    }
    flush();
  }

 private:
  struct Frame {
    std::size_t item;
    std::string fid;
    std::map<std::string, Val> env;
    std::vector<Val> returns;
  };

  struct Session {
    std::string entry_fid;
    bool train = false;
    std::set<std::string> loss_tensors, trainable, returned;
    std::unordered_map<std::string, std::vector<std::pair<std::string, bool>>>
        succ;  // tensor -> (out,sev)
    std::vector<PendingNumeric> numeric;
    std::set<std::size_t> ops;  // indexes into ir.operations
    std::size_t budget = 0;
    bool exhausted = false;
  };

  const rust::Crate& crate_;
  const OpCatalog& cat_;
  std::optional<ConfigBinding> binding_;  // set when a config.json is bound
  // struct item -> the numbers its constructor gives its fields with the config bound.
  std::unordered_map<std::ptrdiff_t, std::map<std::string, double>> ctor_nums_;
  ir::ModelIr& ir_;
  std::unordered_map<std::string, std::size_t> fn_index_;
  std::map<std::string, std::vector<std::string>> modules_by_type_;
  std::map<std::string, std::vector<const ir::Module*>> children_;
  std::map<std::string, std::vector<std::size_t>> params_by_module_;
  std::unordered_map<std::string, std::size_t>
      op_by_node_;  // "file:byte:name" -> index into ir.operations
  std::unordered_map<std::string, std::size_t> tensor_index_;
  ir::OccurrenceCounter occ_;
  std::vector<std::size_t> stack_;
  std::vector<Frame*> frames_;
  Session* s_ = nullptr;
  std::set<std::string> emitted_;
  int nesting_ = 0;              // eval() frames open
  std::size_t total_nodes_ = 0;  // expression nodes over every entrypoint so far
  std::size_t crate_budget_;
  std::unordered_map<std::size_t, std::unordered_set<std::string>> uses_seen_;  // per parameter
  std::map<std::string, std::size_t> numeric_at_;
  std::string dims_tid_;
  std::vector<std::vector<std::pair<std::string, std::optional<Val>>>> undo_;  // per open block
  std::vector<int>
      op_phases_;  // per operation: 1 train, 2 infer, 3 both  // the tensor whose dims() the
                   // current `let` reads  // rule + op -> index into ir.findings

  // ---- helpers -------------------------------------------------------------------------------
  std::optional<std::size_t> item_of(const ir::Function& f) const {
    for (std::size_t it : crate_.find(f.qualified_name)) {
      const auto& item = crate_.items()[it];
      if (ir::function_id(item.qualified, item.cfg.predicates) == f.id) return it;
    }
    return std::nullopt;
  }

  std::string fid_of(std::size_t item) const {
    const auto& it = crate_.items()[item];
    return ir::function_id(it.qualified, it.cfg.predicates);
  }

  std::string text(std::size_t file, TSNode n) const { return crate_.node_text(file, n); }
  std::size_t file() const { return crate_.items()[frames_.back()->item].file; }
  std::string src(TSNode n) const {
    return crate_.files()[file()]->path() + ":" + std::to_string(ts_node_start_point(n).row + 1);
  }
  static std::string_view type_of(TSNode n) {
    return ts_node_is_null(n) ? std::string_view{} : std::string_view{ts_node_type(n)};
  }
  static TSNode field(TSNode n, const char* f) {
    return ts_node_child_by_field_name(n, f, static_cast<uint32_t>(std::strlen(f)));
  }

  // The struct/enum item the impl of method `item` is for.
  std::ptrdiff_t owner_item(std::size_t item) const {
    const auto& it = crate_.items()[item];
    if (it.impl < 0) return -1;
    const auto& impl = crate_.impls()[static_cast<std::size_t>(it.impl)];
    for (const auto& c : crate_.resolve(impl.module, impl.self_base))
      if (c.kind == rust::Candidate::Kind::Item) return static_cast<std::ptrdiff_t>(c.item);
    return -1;
  }

  std::ptrdiff_t resolve_type(const std::string& module, const std::string& type) const {
    std::string t = peel_generics(type);
    if (t.empty()) return -1;
    for (const auto& c : crate_.resolve(module, t)) {
      if (c.kind != rust::Candidate::Kind::Item) continue;
      auto k = crate_.items()[c.item].kind;
      if (k == rust::ItemKind::Struct || k == rust::ItemKind::Enum)
        return static_cast<std::ptrdiff_t>(c.item);
    }
    return -1;
  }

  Val typed_val(const std::string& module, const std::string& type_text, const std::string& base) {
    Val v;
    if (tensor_type(base.empty() ? type_text : base) && !mentions(type_text, "Vec") &&
        !mentions(type_text, "Option")) {
      v.tensor = true;
      v.grad = var_type(base.empty() ? type_text : base) ? Grad::trainable : Grad::unknown;
      return v;
    }
    v.type_item = resolve_type(module, base.empty() ? type_text : base);
    if (v.type_item < 0) {
      // External types only (`Linear`); primitives (`usize`, `f64`) are scalars.
      std::string ext = last_segment(peel_generics(base.empty() ? type_text : base));
      if (!ext.empty() && std::isupper(static_cast<unsigned char>(ext[0]))) v.ext_type = ext;
    }
    return v;
  }

  std::size_t add_tensor(const std::string& id, const std::string& name, ir::TensorRole role,
                         const std::string& owner) {
    auto it = tensor_index_.find(id);
    if (it != tensor_index_.end()) return it->second;
    ir::Tensor t;
    t.id = id;
    t.name = name;
    t.role = role;
    t.owner_function = owner;
    ir_.tensors.push_back(std::move(t));
    tensor_index_[id] = ir_.tensors.size() - 1;
    return ir_.tensors.size() - 1;
  }

  void finding(const std::string& rule, ir::Severity sev, ir::Confidence conf,
               const std::string& msg, const std::string& source,
               std::vector<std::string> related) {
    ir::Finding f = ir::make_finding(rule, sev, conf, msg, source, std::move(related));
    if (!emitted_.insert(f.id).second) return;
    ir::Evidence e;
    e.kind = ir::EvidenceKind::source;
    e.confidence = conf;
    if (!source.empty()) e.source = source;
    e.detail = "static dataflow";
    f.evidence.push_back(std::move(e));
    ir_.findings.push_back(std::move(f));
  }

  bool tick() {
    if (s_->exhausted) return false;
    if (++s_->budget > kNodeBudget) {
      s_->exhausted = true;
      finding("dataflow-bound", ir::Severity::information, ir::Confidence::proven,
              "dataflow of `" + s_->entry_fid + "` stopped after " + std::to_string(kNodeBudget) +
                  " expression nodes; the graph is partial",
              "", {s_->entry_fid});
      return false;
    }
    return true;
  }

  // ---- config-bound numbers, mult-adds, devices, literal dtypes --------------------------------
  // The number the constructor of `type_item` gives primitive field `f` with config.json bound
  // (`head_dim: cfg.hidden_size / cfg.num_attention_heads`); nullopt when symbolic or unbound.
  std::optional<double> constructor_number(std::ptrdiff_t type_item, const std::string& f) {
    if (!binding_ || type_item < 0) return std::nullopt;
    auto it = ctor_nums_.find(type_item);
    if (it == ctor_nums_.end()) {
      std::map<std::string, double> nums;
      for (const auto& [name, v] :
           binding_->constructor_fields(static_cast<std::size_t>(type_item))) {
        if (v.kind == SymValue::Kind::integer) nums[name] = static_cast<double>(v.integer);
        if (v.kind == SymValue::Kind::real) nums[name] = v.real;
      }
      it = ctor_nums_.emplace(type_item, std::move(nums)).first;
    }
    auto n = it->second.find(f);
    if (n == it->second.end()) return std::nullopt;
    return n->second;
  }

  // A dimension expression's value without side effects: literals, locals holding numbers,
  // `self.f` bound through the constructor, and + - * / of those. Non-negative integers only.
  std::optional<double> static_num(TSNode n, int depth) {
    if (ts_node_is_null(n) || depth > 16) return std::nullopt;
    std::string_view t = type_of(n);
    std::optional<double> r;
    if (t == "integer_literal") {
      std::string s = text(file(), n);
      s.erase(std::remove(s.begin(), s.end(), '_'), s.end());
      r = std::strtod(s.c_str(), nullptr);
    } else if (t == "identifier") {
      auto& env = frames_.back()->env;
      auto it = env.find(text(file(), n));
      if (it != env.end() && !it->second.tensor) r = it->second.num;
    } else if (t == "field_expression") {
      TSNode b = field(n, "value");
      if (type_of(b) == "self" || type_of(b) == "identifier") {
        auto& env = frames_.back()->env;
        auto it = env.find(text(file(), b));
        if (it != env.end())
          r = constructor_number(it->second.type_item, text(file(), field(n, "field")));
      }
    } else if (t == "parenthesized_expression") {
      r = static_num(ts_node_named_child(n, 0), depth + 1);
    } else if (t == "binary_expression") {
      auto a = static_num(field(n, "left"), depth + 1);
      auto b = static_num(field(n, "right"), depth + 1);
      std::string op = text(file(), field(n, "operator"));
      if (a && b) {
        if (op == "+") r = *a + *b;
        if (op == "-") r = *a - *b;
        if (op == "*") r = *a * *b;
        if (op == "/" && *b != 0) r = std::floor(*a / *b);
      }
    }
    if (r && (*r < 0 || *r != std::floor(*r) || *r > 1e15)) return std::nullopt;
    return r;
  }

  static std::string dim_text(double d) { return std::to_string(static_cast<std::uint64_t>(d)); }

  // The product of dimension expressions as "b*t*4096" (numbers folded, symbols kept when they
  // are plain names such as `b`/`t`); nullopt when a factor is an expression or unknown (`?`).
  static std::optional<std::string> product(const std::vector<std::string>& factors) {
    double k = 1;
    std::string sym;
    for (const auto& f : factors) {
      if (f.empty()) return std::nullopt;
      bool digits = std::all_of(f.begin(), f.end(),
                                [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
      if (digits) {
        k *= std::strtod(f.c_str(), nullptr);
        continue;
      }
      bool name = (std::isalpha(static_cast<unsigned char>(f[0])) || f[0] == '_') &&
                  std::all_of(f.begin(), f.end(), [](char c) {
                    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
                  });
      if (!name) return std::nullopt;
      sym += (sym.empty() ? "" : "*") + f;
    }
    if (k > 9.2e18) return std::nullopt;
    std::string num = std::to_string(static_cast<std::uint64_t>(k));
    if (sym.empty()) return num;
    return k == 1 ? sym : sym + "*" + num;
  }

  // A candle-nn Linear's weight shape [out, in] from the receiver module's parameters.
  std::optional<std::vector<std::uint64_t>> linear_weight(const Val* recv) const {
    if (!recv) return std::nullopt;
    for (const auto& m : recv->modules) {
      auto it = params_by_module_.find(m);
      if (it == params_by_module_.end()) continue;
      for (std::size_t pi : it->second) {
        const auto& p = ir_.parameters[pi];
        bool weight = p.key == "weight" ||
                      (p.key.size() > 7 && p.key.compare(p.key.size() - 7, 7, ".weight") == 0);
        if (weight && p.shape && p.shape->size() == 2) return p.shape;
      }
    }
    return std::nullopt;
  }

  // Multiply-adds (torchinfo's "mult-adds") of a matmul or Linear forward; sets the Linear
  // output shape. Needs concrete shapes, or symbolic only in plain names (`b`, `t`).
  std::optional<std::string> mult_adds(const OpRule& rule, const std::vector<const Val*>& ins,
                                       const Val* recv, ir::TensorShape& out_shape) {
    auto exprs = [](const ir::TensorShape& s) {
      std::vector<std::string> v;
      for (const auto& d : s.dimensions)
        v.push_back(d.expr);
      return v;
    };
    if (rule.shape == ShapeRule::matrix_product && ins.size() >= 2) {
      const ir::TensorShape* a = shape_of_tensor(ins[0]);
      const ir::TensorShape* b = shape_of_tensor(ins[1]);
      if (!a || !b || a->dimensions.size() < 2 || b->dimensions.size() < 2) return std::nullopt;
      auto f = exprs(*a);
      f.push_back(b->dimensions.back().expr);
      return product(f);
    }
    if (rule.name == "Linear::forward" && !ins.empty()) {
      auto w = linear_weight(recv);
      const ir::TensorShape* a = shape_of_tensor(ins[0]);
      if (!w || !a || a->dimensions.empty()) return std::nullopt;
      // The forward only runs when the input's last dim is the weight's `in` (`_hidden` from
      // dims3() is that number), so the count uses the weight's.
      out_shape = *a;
      out_shape.source_expr.reset();
      out_shape.dimensions.back() = {std::nullopt, std::to_string((*w)[0])};
      auto f = exprs(*a);
      f.back() = std::to_string((*w)[1]);
      f.push_back(std::to_string((*w)[0]));
      return product(f);
    }
    return std::nullopt;
  }

  // Device facts (§4.3): `to_device(&Device::Cpu)`, constructors given `&Device::Cpu` or
  // `&x.device()`, and every other operation on the device of its first tensor operand.
  ir::DeviceFact device_of(TSNode node, const std::string& name,
                           const std::vector<const Val*>& ins) {
    ir::DeviceFact d;
    if (name != "to_device" && !ins.empty()) {
      if (!ins[0]->tid.empty()) {
        d.kind = ir::DeviceKind::same_as;
        d.same_as = ins[0]->tid;
      }
      return d;
    }
    TSNode args = field(node, "arguments");
    if (ts_node_is_null(args)) return d;
    for (uint32_t i = 0; i < ts_node_named_child_count(args); ++i) {
      TSNode a = ts_node_named_child(args, i);
      while (type_of(a) == "reference_expression")
        a = field(a, "value");
      std::string t = text(file(), a);
      if (t == "Device::Cpu" || t == "candle::Device::Cpu" || t == "candle_core::Device::Cpu") {
        d.kind = ir::DeviceKind::cpu;
        return d;
      }
      if (type_of(a) == "call_expression") {
        TSNode fn = field(a, "function");
        if (type_of(fn) == "field_expression" && text(file(), field(fn, "field")) == "device") {
          TSNode base = field(fn, "value");
          auto& env = frames_.back()->env;
          auto it = env.find(text(file(), base));
          if (it != env.end() && it->second.tensor && !it->second.tid.empty()) {
            d.kind = ir::DeviceKind::same_as;
            d.same_as = it->second.tid;
            return d;
          }
        }
      }
    }
    return d;
  }

  // The element type of host data (`vec![1u32, 2]`, `&[0f32; 4]`, `1f64`, a parameter
  // `on_true: f32`, or a local `let mask: Vec<u8> = ..` / `let mask: Vec<_> = .. f32::NEG_INFINITY
  // .. 0.`): every primitive type the text names (literal suffixes, `as f32`, `f32::MAX`,
  // `Vec<f32>`) when they all agree; nullopt when none or several are named.
  static std::optional<std::string> named_dtype(const std::string& t) {
    static const std::map<std::string, std::string> dtypes{
        {"u8", "U8"},   {"u32", "U32"}, {"i64", "I64"},  {"f32", "F32"},
        {"f64", "F64"}, {"f16", "F16"}, {"bf16", "BF16"}};
    static const std::set<std::string> others{"i8", "i16", "i32", "u16", "u64", "i128", "u128"};
    std::optional<std::string> out;
    auto note = [&](const std::string& w) {
      auto it = dtypes.find(w);
      if (it == dtypes.end()) return !others.count(w);
      if (out && *out != it->second) return false;
      out = it->second;
      return true;
    };
    auto word_char = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
    for (std::size_t i = 0; i < t.size(); ++i) {
      if (i > 0 && (word_char(t[i - 1]) || t[i - 1] == '.')) continue;
      if (std::isdigit(static_cast<unsigned char>(t[i]))) {  // a numeric literal and its suffix
        std::size_t j = i;
        // `0.` and `1.5` are literals; `0..n` is a range and `2.max(x)` a method call.
        auto dot = [&](std::size_t k) {
          return t[k] == '.' && (k + 1 >= t.size() || !(word_char(t[k + 1]) || t[k + 1] == '.') ||
                                 std::isdigit(static_cast<unsigned char>(t[k + 1])));
        };
        while (j < t.size() &&
               (std::isdigit(static_cast<unsigned char>(t[j])) || t[j] == '_' || dot(j) ||
                ((t[j] == 'e' || t[j] == 'E') && j + 1 < t.size() &&
                 std::isdigit(static_cast<unsigned char>(t[j + 1])))))
          ++j;
        if (j < t.size() && t[j] == '.') {  // range or method call: the integer has no suffix
          i = j;
          continue;
        }
        std::size_t e = j;
        while (e < t.size() && word_char(t[e]))
          ++e;
        std::string suffix = t.substr(j, e - j);
        if (!suffix.empty() && (!dtypes.count(suffix) || !note(suffix))) return std::nullopt;
        i = e;
        continue;
      }
      if (!std::isalpha(static_cast<unsigned char>(t[i]))) continue;
      std::size_t e = i;
      while (e < t.size() && word_char(t[e]))
        ++e;
      if (!note(t.substr(i, e - i))) return std::nullopt;
      i = e;
    }
    return out;
  }

  // The closest `let <name>` before byte `before` under `n` (the function body).
  TSNode let_of(TSNode n, const std::string& name, std::uint32_t before, int depth) {
    TSNode best{};
    if (ts_node_is_null(n) || depth > 64 || ts_node_start_byte(n) >= before) return best;
    if (type_of(n) == "let_declaration") {
      TSNode pat = field(n, "pattern");
      // Not the `let` the call is in (`let mask = Tensor::from_slice(&mask, ..)`).
      if (type_of(pat) == "identifier" && text(file(), pat) == name &&
          ts_node_end_byte(n) <= before)
        best = n;
    }
    for (uint32_t i = 0; i < ts_node_named_child_count(n); ++i) {
      TSNode c = let_of(ts_node_named_child(n, i), name, before, depth + 1);
      if (!ts_node_is_null(c)) best = c;
    }
    return best;
  }

  std::optional<std::string> host_dtype(TSNode arg, TSNode call) {
    while (type_of(arg) == "reference_expression")
      arg = field(arg, "value");
    std::string_view k = type_of(arg);
    if (k == "macro_invocation" || k == "array_expression" || k == "integer_literal" ||
        k == "float_literal")
      return named_dtype(text(file(), arg));
    if (k != "identifier") return std::nullopt;
    std::string name = text(file(), arg);
    const auto& item = crate_.items()[frames_.back()->item];
    TSNode let = let_of(item.body(), name, ts_node_start_byte(call), 0);
    if (!ts_node_is_null(let)) {
      TSNode ty = field(let, "type");
      if (!ts_node_is_null(ty)) {
        auto d = named_dtype(text(file(), ty));
        if (d) return d;
      }
      TSNode val = field(let, "value");
      // Host data built in place; a call result (`x.to_vec1()?`, `load(..)`) names no element.
      std::string_view vk = type_of(val);
      // `.collect()` of an iterator chain names its element in the closures; any other call's
      // argument types say nothing about what it returns.
      bool collect = vk == "call_expression" &&
                     type_of(field(val, "function")) == "field_expression" &&
                     text(file(), field(field(val, "function"), "field")) == "collect";
      if (vk == "macro_invocation" || vk == "array_expression" || collect)
        return named_dtype(text(file(), val));
      return std::nullopt;
    }
    for (const auto& p : item.params)
      if (p.name == name) return named_dtype(p.type_text);
    return std::nullopt;
  }

  void mark_shape_dtype(const Val& v, const std::string& dtype, TSNode node, const char* why) {
    auto it = tensor_index_.find(v.tid);
    if (it == tensor_index_.end()) return;
    auto& t = ir_.tensors[it->second];
    if (t.dtype != "Unknown") return;
    t.dtype = dtype;
    ir::Evidence e;
    e.kind = ir::EvidenceKind::inferred;
    e.confidence = ir::Confidence::proven;
    e.source = src(node);
    e.detail = why;
    t.evidence.push_back(std::move(e));
  }

  // ---- entrypoints ---------------------------------------------------------------------------
  void analyze_entry(std::size_t fn_index, std::size_t item) {
    Session s;
    s.entry_fid = ir_.functions[fn_index].id;
    s_ = &s;
    const auto& it = crate_.items()[item];
    Val self;
    std::ptrdiff_t owner = owner_item(item);
    if (owner >= 0) {
      self.type_item = owner;
      const auto& o = crate_.items()[static_cast<std::size_t>(owner)];
      auto mit = modules_by_type_.find(o.qualified);
      if (mit != modules_by_type_.end())
        self.modules.insert(mit->second.begin(), mit->second.end());
    }
    std::vector<Val> args;
    for (const auto& p : it.params) {
      Val v = typed_val(it.module, p.type_text, "");
      if (v.tensor) {
        v.tid = ir::contract_tensor_id(s.entry_fid, p.name);
        auto ti = add_tensor(v.tid, p.name, ir::TensorRole::input, s.entry_fid);
        if (v.grad == Grad::trainable) {
          ir_.tensors[ti].requires_grad = true;
          s.trainable.insert(v.tid);
        }
        auto& f = ir_.functions[fn_index];
        if (std::find(f.tensor_inputs.begin(), f.tensor_inputs.end(), v.tid) ==
            f.tensor_inputs.end())
          f.tensor_inputs.push_back(v.tid);
      }
      args.push_back(v);
    }
    Val ret = call_function(item, &self, args, true);
    if (ret.tensor && !ret.tid.empty()) {
      s.returned.insert(ret.tid);
      auto& f = ir_.functions[fn_index];
      if (std::find(f.tensor_outputs.begin(), f.tensor_outputs.end(), ret.tid) ==
          f.tensor_outputs.end())
        f.tensor_outputs.push_back(ret.tid);
    }
    finish_session(fn_index);
    total_nodes_ += s.budget;
    s_ = nullptr;
  }

  std::set<std::string> reach(const std::set<std::string>& from, bool skip_severing) const {
    std::set<std::string> seen(from);
    std::vector<std::string> work(from.begin(), from.end());
    while (!work.empty()) {
      std::string t = work.back();
      work.pop_back();
      auto it = s_->succ.find(t);
      if (it == s_->succ.end()) continue;
      for (const auto& [o, sev] : it->second)
        if (!(skip_severing && sev) && seen.insert(o).second) work.push_back(o);
    }
    return seen;
  }

  bool reaches_any(const std::string& t, const std::set<std::string>& targets) const {
    auto r = reach({t}, false);
    for (const auto& x : targets)
      if (r.count(x)) return true;
    return false;
  }

  void finish_session(std::size_t fn_index) {
    auto& f = ir_.functions[fn_index];
    ir::ExecutionPhase ph = s_->train ? ir::ExecutionPhase::train : ir::ExecutionPhase::infer;
    if (std::find(f.execution_phases.begin(), f.execution_phases.end(), ph) ==
        f.execution_phases.end())
      f.execution_phases.push_back(ph);
    for (std::size_t oi : s_->ops) {
      if (op_phases_.size() <= oi) op_phases_.resize(oi + 1, 0);
      op_phases_[oi] |= s_->train ? 1 : 2;
    }
    // dead-gradient-path: a Var with no differentiable path to a loss (train graphs only).
    if (s_->train) {
      for (const auto& t : s_->trainable) {
        auto r = reach({t}, true);
        bool ok = false;
        for (const auto& l : s_->loss_tensors)
          ok = ok || r.count(l);
        if (!ok)
          finding("dead-gradient-path", ir::Severity::warning, ir::Confidence::conditional,
                  "trainable expression `" + ir_.tensors[tensor_index_[t]].name +
                      "` has no differentiable path to a loss",
                  f.source, {f.id, t});
      }
    }
    std::set<std::string> trainable_reach = reach(s_->trainable, true);
    for (const auto& p : s_->numeric) {
      std::string impact;
      enum { loss, poison, infer, local } kind = local;
      if (s_->loss_tensors.count(p.tensor) || reaches_any(p.tensor, s_->loss_tensors)) {
        kind = loss;
        impact = " (training impact: loss can become NaN when values saturate)";
      } else if (trainable_reach.count(p.tensor)) {
        kind = poison;
        impact = " (training impact: gradients can be poisoned)";
      } else if (reaches_any(p.tensor, s_->returned)) {
        kind = infer;
        impact = " (inference impact: the output can become NaN)";
      } else {
        impact = " (local impact)";
      }
      // Proven (an error where it reaches a loss, gradients or an output) only when it happens
      // on every execution; a value that merely may be bad is a conditional warning.
      bool proven = p.proven;
      ir::Severity sev = ir::Severity::warning;
      ir::Confidence conf = proven           ? ir::Confidence::proven
                            : p.known_domain ? ir::Confidence::conditional
                                             : ir::Confidence::unknown;
      if (proven && (kind == loss || kind == poison)) sev = ir::Severity::error;
      if (proven && kind == infer && !f.is_loss) sev = ir::Severity::error;
      std::string rule = p.rule;
      if (p.library && rule == "zero-times-infinity" && (kind == loss || kind == poison))
        rule = "unstable-library-loss";
      // One finding per (rule, operation): a later entrypoint only replaces it when its impact
      // is worse (an op reached from several entrypoints is not reported twice).
      std::string key = rule + '\n' + p.op;
      auto prev = numeric_at_.find(key);
      if (prev != numeric_at_.end()) {
        ir::Finding& old = ir_.findings[prev->second];
        bool old_local = old.message.find("(local impact)") != std::string::npos;
        bool worse = static_cast<int>(sev) < static_cast<int>(old.severity) ||
                     (sev == old.severity && kind != local && old_local);
        if (!worse) continue;
        emitted_.erase(old.id);
        old.severity = sev;
        old.confidence = conf;
        old.message = p.message + impact;
        old.id = ir::finding_id(rule, p.source, old.message);
        old.evidence.front().confidence = conf;
        emitted_.insert(old.id);
        continue;
      }
      std::size_t before = ir_.findings.size();
      finding(rule, sev, conf, p.message + impact, p.source, {p.op, p.tensor});
      if (ir_.findings.size() > before) numeric_at_[key] = before;
    }
  }

  // ---- calls ---------------------------------------------------------------------------------
  Val call_function(std::size_t item, const Val* self, const std::vector<Val>& args, bool entry) {
    if (!tick()) return {};
    const auto& it = crate_.items()[item];
    TSNode body = it.body();
    if (ts_node_is_null(body)) return {};
    if (std::find(stack_.begin(), stack_.end(), item) != stack_.end() ||
        stack_.size() >= kMaxDepth) {
      finding("dataflow-bound", ir::Severity::information, ir::Confidence::proven,
              "recursion guard: `" + it.qualified + "` is not inlined again (depth " +
                  std::to_string(stack_.size()) + ")",
              crate_.source(item), {fid_of(item)});
      return {};
    }
    Frame fr;
    fr.item = item;
    fr.fid = fid_of(item);
    if (!frames_.empty() && !entry) {
      auto ci = fn_index_.find(frames_.back()->fid);
      if (ci != fn_index_.end()) {
        auto& calls = ir_.functions[ci->second].calls;
        if (std::find(calls.begin(), calls.end(), fr.fid) == calls.end()) calls.push_back(fr.fid);
      }
    }
    if (self) fr.env["self"] = *self;
    for (std::size_t i = 0; i < it.params.size(); ++i) {
      Val v = i < args.size() ? args[i] : Val{};
      if (!v.tensor && v.type_item < 0) {
        Val t = typed_val(it.module, it.params[i].type_text, "");
        if (t.tensor || t.type_item >= 0) {
          t.modules = v.modules;
          v = t;
        }
      }
      fr.env[it.params[i].name] = v;
    }
    stack_.push_back(item);
    frames_.push_back(&fr);
    Val r = eval(body);
    fr.returns.push_back(r);
    frames_.pop_back();
    stack_.pop_back();
    Val out = join_all(fr.returns);
    if (!out.tensor && tensor_type(it.return_type.empty() ? "" : strip_result(it.return_type))) {
      out.tensor = true;
    }
    return out;
  }

  static std::string strip_result(std::string t) {
    auto lt = t.find('<');
    if (lt != std::string::npos &&
        (t.rfind("Result", 0) == 0 || t.rfind("Option", 0) == 0 || mentions(t, "::Result<")))
      return t.substr(lt + 1, t.rfind('>') - lt - 1);
    return t;
  }

  Val join_all(const std::vector<Val>& vs) {
    std::vector<const Val*> live;
    for (const auto& v : vs)
      if (v.tensor || v.type_item >= 0 || !v.ext_type.empty() || v.num) live.push_back(&v);
    if (live.empty()) return {};
    Val out = *live.front();
    for (std::size_t i = 1; i < live.size(); ++i) {
      const Val& o = *live[i];
      if (o.dtype != out.dtype) out.dtype = "Unknown";
      out.grad = join_grad(out.grad, o.grad);
      if (o.dom != out.dom) out.dom = NumericDomain::unknown;
      out.undischarged_log = out.undischarged_log || o.undischarged_log;
      out.tensor = out.tensor || o.tensor;
      out.modules.insert(o.modules.begin(), o.modules.end());
      if (out.tid.empty()) out.tid = o.tid;
    }
    return out;
  }

  std::ptrdiff_t pick_method(std::ptrdiff_t type_item, const std::string& name) const {
    if (type_item < 0) return -1;
    for (std::size_t m : crate_.methods(static_cast<std::size_t>(type_item), name))
      if (crate_.items()[m].cfg.state != rust::Tri::False) return static_cast<std::ptrdiff_t>(m);
    return -1;
  }

  // An inlined crate-local call becomes one Call operation in the caller named after the method
  // (`forward`), fed by the callee's returned tensor; parameters of the receiver link to it.
  Val inline_call(TSNode node, std::size_t callee, const Val* self, const std::vector<Val>& args,
                  const std::string& name) {
    Val r = call_function(callee, self, args, false);
    if (!r.tensor) return r;
    std::vector<const Val*> ins;
    for (const auto& a : args)
      if (a.tensor) ins.push_back(&a);
    ins.push_back(&r);
    OpRule rule;
    rule.name = name;
    rule.note = "inlined crate-local call `" + crate_.items()[callee].qualified + "`";
    Val out = make_op(node, name, rule, ins, self, {});
    // A single returned tensor's shape is the call's (a tuple return binds every name to one
    // value, so its shape would be wrong for all but the first element).
    const std::string& rt = crate_.items()[callee].return_type;
    if (rt.find('(') == std::string::npos) {
      const ir::TensorShape* rs = shape_of_tensor(&r);
      auto& ot = ir_.tensors[tensor_index_[out.tid]];
      if (rs && !ot.shape.rank) ot.shape = *rs;
    }
    out.dtype = r.dtype;
    out.grad = r.grad;
    out.dom = r.dom;
    out.undischarged_log = r.undischarged_log;
    return out;
  }

  void link_params(const std::string& op_id, const Val* recv) {
    if (!recv) return;
    for (const auto& m : recv->modules) {
      auto it = params_by_module_.find(m);
      if (it == params_by_module_.end()) continue;
      for (std::size_t pi : it->second)
        // A set beside the ordered list: a parameter used by thousands of operations must not
        // cost a scan of its uses per use.
        if (uses_seen_[pi].insert(op_id).second) ir_.parameters[pi].uses.push_back(op_id);
    }
  }

  // Records (or re-finds) the operation at `node` and returns its output value.
  Val make_op(TSNode node, const std::string& name, const OpRule& rule,
              const std::vector<const Val*>& ins, const Val* recv,
              const std::optional<std::string>& explicit_dtype) {
    Frame& fr = *frames_.back();
    std::string key =
        std::to_string(file()) + ":" + std::to_string(ts_node_start_byte(node)) + ":" + name;
    std::size_t oi;
    auto found = op_by_node_.find(key);
    if (found == op_by_node_.end()) {
      std::uint64_t occ = occ_.next(fr.fid + std::string(1, '\0') + name);
      ir::Operation op;
      op.id = ir::operation_id(fr.fid, name, occ);
      op.function = fr.fid;
      op.name = name;
      // The callee label when it names a type's method ("Embedding::forward"): a call the
      // method name alone leaves anonymous (four `forward`s in one function) becomes readable.
      if (rule.known() && rule.name.find("::") != std::string::npos) op.qualified_name = rule.name;
      op.source = src(node);
      op.output = ir::dataflow_tensor_id(fr.fid, name, occ);
      op.dtype_rule = std::string(to_string(rule.dtype));
      op.gradient_rule = std::string(to_string(rule.grad));
      op.shape_rule = std::string(to_string(rule.shape));
      op.domain_rule = std::string(to_string(rule.requirement));
      op.device_rule = "same_as_inputs";
      for (const Val* v : ins)
        if (!v->tid.empty()) op.inputs.push_back(v->tid);
      ir::Evidence e;
      e.kind = ir::EvidenceKind::source;
      bool inlined = rule.note.rfind("inlined", 0) == 0;
      e.confidence = rule.known() || inlined ? ir::Confidence::proven : ir::Confidence::unknown;
      e.source = op.source;
      e.detail = rule.known() ? "audited rule `" + rule.name + "`" : rule.note;
      op.evidence.push_back(std::move(e));
      ir_.operations.push_back(std::move(op));
      oi = ir_.operations.size() - 1;
      op_by_node_[key] = oi;
      std::size_t ti =
          add_tensor(ir_.operations[oi].output, name, ir::TensorRole::activation, fr.fid);
      ir_.tensors[ti].shape = shape_of(node, rule, ins);
      ir_.operations[oi].mult_adds = mult_adds(rule, ins, recv, ir_.tensors[ti].shape);
      ir_.tensors[ti].device = device_of(node, name, ins);
      if (ir_.tensors[ti].device.kind == ir::DeviceKind::cpu)
        ir_.operations[oi].device_rule = "explicit";
    } else {
      oi = found->second;
      // An op first reached where its operand shapes were unknown (its function analyzed as an
      // entrypoint of its own) takes the shape of a later context that knows them.
      auto& t = ir_.tensors[tensor_index_[ir_.operations[oi].output]];
      if (!t.shape.rank) {
        t.shape = shape_of(node, rule, ins);
        ir_.operations[oi].mult_adds = mult_adds(rule, ins, recv, t.shape);
      }
    }
    const std::string op_id = ir_.operations[oi].id;
    const std::string out_id = ir_.operations[oi].output;
    s_->ops.insert(oi);
    link_params(op_id, recv);

    Val out;
    out.tensor = true;
    out.tid = out_id;
    bool sev = rule.grad == GradRule::severs;
    for (const Val* v : ins)
      if (!v->tid.empty()) s_->succ[v->tid].push_back({out_id, sev});

    // dtype
    std::vector<std::string> known;
    bool any_unknown = false;
    // `where_cond`'s condition is a mask (U8); only the two branches must share a dtype.
    std::size_t first_checked = name == "where_cond" && ins.size() == 3 ? 1 : 0;
    for (std::size_t i = first_checked; i < ins.size(); ++i) {
      const Val* v = ins[i];
      if (!v->tensor) continue;
      if (v->dtype == "Unknown")
        any_unknown = true;
      else
        known.push_back(v->dtype);
    }
    switch (rule.dtype) {
      case DtypeRule::preserve:
        out.dtype = ins.empty() ? "Unknown" : ins.front()->dtype;
        break;
      case DtypeRule::same_as_inputs: {
        bool conflict = false;
        for (const auto& d : known)
          conflict = conflict || d != known.front();
        if (conflict) {
          std::string msg = name + " requires same dtype, got " + known.front() + " vs " +
                            *std::find_if(known.begin(), known.end(),
                                          [&](const std::string& d) { return d != known.front(); });
          finding("dtype-conflict", ir::Severity::error, ir::Confidence::proven, msg, src(node),
                  {op_id});
        } else if (!known.empty() && any_unknown) {
          finding("dtype-risk", ir::Severity::warning, ir::Confidence::conditional,
                  name + " requires matching dtypes; one operand is " + known.front() +
                      " and another is unknown",
                  src(node), {op_id});
        }
        out.dtype = (!conflict && !known.empty() && !any_unknown) ? known.front() : "Unknown";
        break;
      }
      case DtypeRule::explicit_arg:
        out.dtype = explicit_dtype.value_or("Unknown");
        break;
      case DtypeRule::fixed:
        out.dtype = rule.fixed_dtype.empty() ? "Unknown" : rule.fixed_dtype;
        break;
      case DtypeRule::unknown:
        break;
    }
    // gradient
    switch (rule.grad) {
      case GradRule::severs:
        out.grad = Grad::severed;
        break;
      case GradRule::layout_dependent:
        out.grad = Grad::layout_dependent;
        break;
      case GradRule::propagates: {
        if (ins.empty()) {  // a constructor: a constant
          out.grad = Grad::frozen;
          break;
        }
        bool any_sev = false, any_ld = false, any_tr = false, all_frozen = !ins.empty();
        for (const Val* v : ins) {
          any_sev = any_sev || v->grad == Grad::severed;
          any_ld = any_ld || v->grad == Grad::layout_dependent;
          any_tr = any_tr || v->grad == Grad::trainable || v->grad == Grad::differentiable;
          all_frozen = all_frozen && v->grad == Grad::frozen;
        }
        out.grad = any_sev      ? Grad::severed
                   : any_ld     ? Grad::layout_dependent
                   : any_tr     ? Grad::differentiable
                   : all_frozen ? Grad::frozen
                                : Grad::unknown;
        break;
      }
      case GradRule::unknown:
        break;
    }
    // numeric domain
    const std::string& n = rule.name.empty() ? name : rule.name;
    if (n == "mul" || n == "broadcast_mul") {
      out.dom = ins.size() >= 2 ? mul_domain(ins[0]->dom, ins[1]->dom) : NumericDomain::unknown;
    } else if (n == "add" || n == "broadcast_add") {
      out.dom = ins.size() >= 2 ? add_domain(ins[0]->dom, ins[1]->dom) : NumericDomain::unknown;
    } else if ((n == "sum" || n == "sum_keepdim" || n == "mean" || n == "mean_keepdim" ||
                n == "max" || n == "max_keepdim" || n == "sum_all" || n == "mean_all") &&
               !ins.empty() && ins[0]->dom != NumericDomain::unknown) {
      out.dom = join_domain(ins[0]->dom, ins[0]->dom == NumericDomain::saturating_unit
                                             ? NumericDomain::non_negative
                                             : ins[0]->dom);
    } else {
      out.dom = ins.size() == 1 ? unary_domain(n, ins[0]->dom, rule.domain) : rule.domain;
    }
    if ((n == "mul" || n == "broadcast_mul") && ins.size() >= 2) {
      for (int k = 0; k < 2; ++k) {
        const Val* a = ins[static_cast<std::size_t>(k)];
        const Val* b = ins[static_cast<std::size_t>(1 - k)];
        if (b->undischarged_log && a->dom != NumericDomain::unknown &&
            domain_includes_zero(a->dom)) {
          // Certain only when both halves are: a factor that is 0 on every execution times a
          // `log` of 0 on every execution. Otherwise each may happen, and it is a warning.
          bool certain = a->dom == NumericDomain::zero && b->log_of_zero;
          s_->numeric.push_back({"zero-times-infinity", certain, false, true,
                                 "multiply combines a domain that includes 0 with an "
                                 "undischarged `log`, which yields `0 * -inf = NaN` rather than "
                                 "a loud `-inf` loss",
                                 src(node), out_id, op_id});
          break;
        }
      }
    }
    if (rule.requirement != Requirement::none) {
      std::size_t k = static_cast<std::size_t>(rule.checked_operand);
      if (k < ins.size()) {
        DomainRequirement req =
            rule.requirement == Requirement::non_zero       ? DomainRequirement::non_zero
            : rule.requirement == Requirement::non_negative ? DomainRequirement::non_negative
                                                            : DomainRequirement::strictly_positive;
        // Proven only when every value the producer can take is bad (`log` of a zeros tensor):
        // a sigmoid that may saturate, an `exp` that may underflow or a ReLU that may output 0
        // is a possible violation, reported as a conditional warning (domain_violation).
        auto v = domain_violation(req, ins[k]->dom);
        if (v && n == "log") {
          out.undischarged_log = true;
          out.log_of_zero = *v == Violation::proven;
        }
        // Unknown producer domains are reported only for `log`/`recip`: a tensor divisor or sqrt
        // of unknown domain is everywhere in real models and would drown the proven findings.
        bool report = v && (*v == Violation::proven || n == "log" || n == "recip");
        if (report)
          s_->numeric.push_back({"numeric-domain-violation", *v == Violation::proven, false,
                                 ins[k]->dom != NumericDomain::unknown,
                                 "`" + n + "` needs a " + std::string(to_string(rule.requirement)) +
                                     " operand, but its producer's domain is " +
                                     std::string(to_string(ins[k]->dom)),
                                 src(node), out_id, op_id});
      }
    }
    if (n == "binary_cross_entropy_with_logit") {
      const std::string suffix = " [expanded from candle-nn-0.11.0/src/loss.rs:64-74]";
      // The expansion's log can be -inf only when the logits saturate: possible, not certain.
      s_->numeric.push_back({"numeric-domain-violation", false, true, true,
                             "`log` needs a strictly_positive operand, but its producer's domain "
                             "is saturating_unit (sigmoid of the logits)" +
                                 suffix,
                             src(node), out_id, op_id});
      s_->numeric.push_back({"zero-times-infinity", false, true, true,
                             "multiply combines a domain that includes 0 with an undischarged "
                             "`log`, which yields `0 * -inf = NaN` rather than a loud `-inf` loss" +
                                 suffix,
                             src(node), out_id, op_id});
    }
    if (rule.is_loss) mark_loss(out_id);
    auto& t = ir_.tensors[tensor_index_[out_id]];
    if (t.dtype == "Unknown" && out.dtype != "Unknown") {
      t.dtype = out.dtype;
      ir::Evidence e;
      e.kind = ir::EvidenceKind::inferred;
      e.confidence = ir::Confidence::proven;
      e.source = src(node);
      e.detail = "static dtype via operation `" + name + "`";
      t.evidence.push_back(std::move(e));
    }
    if (out.grad == Grad::severed || out.grad == Grad::frozen) t.requires_grad = false;
    if (out.grad == Grad::differentiable && s_->train) t.requires_grad = true;
    if (n == "transpose" || n == "permute" || n == "narrow" || n == "t")
      t.layout.kind = ir::LayoutKind::strided;
    if (n == "contiguous") t.layout.kind = ir::LayoutKind::contiguous;
    return out;
  }

  const ir::TensorShape* shape_of_tensor(const Val* v) const {
    auto it = tensor_index_.find(v->tid);
    if (it == tensor_index_.end() || !ir_.tensors[it->second].shape.rank) return nullptr;
    return &ir_.tensors[it->second].shape;
  }

  // Symbolic output shape (§4.3): rank and dimension expressions where the rule and the
  // operands say so; an empty shape otherwise.
  ir::TensorShape shape_of(TSNode node, const OpRule& rule, const std::vector<const Val*>& ins) {
    ir::TensorShape out;
    const ir::TensorShape* a = ins.empty() ? nullptr : shape_of_tensor(ins[0]);
    TSNode args = field(node, "arguments");
    auto arg = [&](uint32_t i) {
      return ts_node_is_null(args) ? TSNode{} : ts_node_named_child(args, i);
    };
    switch (rule.shape) {
      case ShapeRule::preserve:
      case ShapeRule::keep_dimension:
        if (a) out = *a;
        break;
      case ShapeRule::explicit_argument: {
        TSNode t = arg(0);
        while (type_of(t) == "reference_expression")
          t = field(t, "value");
        if (type_of(t) == "tuple_expression" || type_of(t) == "array_expression") {
          for (uint32_t i = 0; i < ts_node_named_child_count(t); ++i) {
            TSNode d = ts_node_named_child(t, i);
            auto k = static_num(d, 0);
            out.dimensions.push_back({std::nullopt, k ? dim_text(*k) : text(file(), d)});
          }
          out.rank = out.dimensions.size();
        }
        break;
      }
      case ShapeRule::permute_dimensions:
        if (a) {
          out = *a;
          std::string n = rule.name;
          if (n == "t" && out.dimensions.size() >= 2) {
            std::swap(out.dimensions[out.dimensions.size() - 1],
                      out.dimensions[out.dimensions.size() - 2]);
          } else if (n == "transpose" && type_of(arg(0)) == "integer_literal" &&
                     type_of(arg(1)) == "integer_literal") {
            auto i = std::strtoull(text(file(), arg(0)).c_str(), nullptr, 10);
            auto j = std::strtoull(text(file(), arg(1)).c_str(), nullptr, 10);
            if (i < out.dimensions.size() && j < out.dimensions.size())
              std::swap(out.dimensions[i], out.dimensions[j]);
            else
              out = {};
          } else if (n != "t") {
            for (auto& d : out.dimensions)
              d = {std::nullopt, "?"};
          }
        }
        break;
      case ShapeRule::matrix_product:
        if (a && ins.size() >= 2) {
          const ir::TensorShape* b = shape_of_tensor(ins[1]);
          if (b && a->dimensions.size() == b->dimensions.size() && a->dimensions.size() >= 2) {
            out = *a;
            out.dimensions.back() = b->dimensions.back();
          }
        }
        break;
      case ShapeRule::insert_dimension:
        if (a) {
          out.rank = *a->rank + 1;
          for (std::uint64_t i = 0; i < *out.rank; ++i)
            out.dimensions.push_back({std::nullopt, "?"});
        }
        break;
      default:
        break;
    }
    if (out.rank) out.source_expr.reset();
    return out;
  }

  void mark_loss(const std::string& tid, bool loss_fn = true) {
    s_->train = true;
    s_->loss_tensors.insert(tid);
    auto it = tensor_index_.find(tid);
    if (it != tensor_index_.end()) ir_.tensors[it->second].role = ir::TensorRole::loss;
    if (!loss_fn) return;
    auto fi = fn_index_.find(frames_.back()->fid);
    if (fi != fn_index_.end()) ir_.functions[fi->second].is_loss = true;
  }

  // ---- expressions ---------------------------------------------------------------------------
  Val eval(TSNode n) {
    if (ts_node_is_null(n) || !tick()) return {};
    if (nesting_ >= kMaxNesting) {
      finding("dataflow-bound", ir::Severity::warning, ir::Confidence::proven,
              "expression nested deeper than " + std::to_string(kMaxNesting) + " levels in `" +
                  s_->entry_fid + "`; the rest of it is not analyzed",
              src(n), {s_->entry_fid});
      return {};
    }
    ++nesting_;
    struct Nest {
      int& d;
      ~Nest() { --d; }
    } nest{nesting_};
    std::string_view t = ts_node_type(n);
    if (t == "block") return eval_block(n);
    if (t == "try_expression" || t == "parenthesized_expression" || t == "reference_expression" ||
        t == "unary_expression" || t == "type_cast_expression" || t == "await_expression") {
      Val last;
      for (uint32_t i = 0; i < ts_node_named_child_count(n); ++i) {
        TSNode c = ts_node_named_child(n, i);
        std::string_view ct = ts_node_type(c);
        if (ct.find("type") != std::string_view::npos && ct != "type_cast_expression" &&
            t == "type_cast_expression" && i > 0)
          continue;
        if (ct == "mutable_specifier") continue;
        last = eval(c);
        break;
      }
      if (t == "unary_expression" && last.num && text(file(), n).rfind("-", 0) == 0)
        last.num = -*last.num;
      return last;
    }
    if (t == "integer_literal" || t == "float_literal") {
      Val v;
      std::string s = text(file(), n);
      s.erase(std::remove(s.begin(), s.end(), '_'), s.end());
      v.num = std::strtod(s.c_str(), nullptr);
      v.grad = Grad::frozen;
      return v;
    }
    if (t == "identifier" || t == "self") {
      std::string name = text(file(), n);
      auto& env = frames_.back()->env;
      auto it = env.find(name);
      return it == env.end() ? Val{} : it->second;
    }
    if (t == "scoped_identifier") {
      std::string p = text(file(), n);
      Val v;
      if (p.rfind("DType::", 0) == 0 || p.rfind("candle_core::DType::", 0) == 0 ||
          p.rfind("candle::DType::", 0) == 0) {
        v.dtype = last_segment(p);
        v.grad = Grad::frozen;
      }
      return v;
    }
    if (t == "field_expression") return eval_field(n);
    if (t == "call_expression") return eval_call(n);
    if (t == "binary_expression") return eval_binary(n);
    if (t == "if_expression") return eval_if(n);
    if (t == "match_expression") return eval_match(n);
    if (t == "for_expression") {
      Val it = eval(field(n, "value"));
      auto saved = frames_.back()->env;
      bind(field(n, "pattern"), it);
      eval(field(n, "body"));
      merge_env(saved);
      return {};
    }
    if (t == "while_expression" || t == "loop_expression") {
      eval(field(n, "condition"));
      auto saved = frames_.back()->env;
      eval(field(n, "body"));
      merge_env(saved);
      return {};
    }
    if (t == "closure_expression") {
      // Analyzed in a forked env; the closure value itself is opaque.
      auto saved = frames_.back()->env;
      eval(field(n, "body"));
      frames_.back()->env = saved;
      return {};
    }
    if (t == "return_expression") {
      if (ts_node_named_child_count(n) > 0)
        frames_.back()->returns.push_back(eval(ts_node_named_child(n, 0)));
      return {};
    }
    if (t == "assignment_expression" || t == "compound_assignment_expr") {
      Val r = eval(field(n, "right"));
      TSNode l = field(n, "left");
      if (type_of(l) == "identifier" && t == "assignment_expression")
        frames_.back()->env[text(file(), l)] = r;
      return {};
    }
    if (t == "index_expression") {
      Val v = eval(ts_node_named_child(n, 0));
      if (ts_node_named_child_count(n) > 1) eval(ts_node_named_child(n, 1));
      return v;
    }
    if (t == "tuple_expression" || t == "array_expression") {
      Val first;
      bool got = false;
      for (uint32_t i = 0; i < ts_node_named_child_count(n); ++i) {
        Val v = eval(ts_node_named_child(n, i));
        if (!got && v.tensor) {
          first = v;
          got = true;
        }
      }
      return first;
    }
    if (t == "macro_invocation" || t == "struct_expression" || t == "range_expression" ||
        t == "string_literal" || t == "boolean_literal" || t == "closure_parameters" ||
        t == "unit_expression" || t == "line_comment" || t == "block_comment")
      return {};
    if (t == "expression_statement") return eval(ts_node_named_child(n, 0));
    // Other kinds: evaluate children for their effects, value unknown.
    for (uint32_t i = 0; i < ts_node_named_child_count(n); ++i)
      eval(ts_node_named_child(n, i));
    return {};
  }

  void merge_env(const std::map<std::string, Val>& before) {
    auto& env = frames_.back()->env;
    std::map<std::string, Val> out;
    for (const auto& [k, v] : before) {
      auto it = env.find(k);
      out[k] = it == env.end() ? v : join_all({v, it->second});
      if (it != env.end() && it->second.tensor) out[k] = it->second;  // one symbolic iteration
    }
    env = std::move(out);
  }

  Val eval_block(TSNode n) {
    // Names bound in the block go out of scope at its end; assignments to outer names persist.
    // An undo log restores only what the block's `let`s shadowed (no copy of the whole env).
    undo_.emplace_back();
    Val last;
    bool after_attribute = false;
    for (TSNode c = ts_node_named_child(n, 0); !ts_node_is_null(c);
         c = ts_node_next_named_sibling(c)) {
      // Only a statement right after an attribute can be cfg'd out.
      bool check = after_attribute;
      after_attribute = type_of(c) == "attribute_item";
      if (check && crate_.attributes_active(file(), c) == rust::Tri::False) continue;
      std::string_view ct = ts_node_type(c);
      if (ct == "let_declaration") {
        dims_tid_.clear();
        Val v = eval(field(c, "value"));
        if (!dims_tid_.empty()) record_dims(field(c, "pattern"));
        TSNode ty = field(c, "type");
        if (!ts_node_is_null(ty) && !v.tensor && v.type_item < 0) {
          Val tv = typed_val(crate_.items()[frames_.back()->item].module, text(file(), ty), "");
          if (tv.tensor || tv.type_item >= 0) v = tv;
        }
        eval(field(c, "alternative"));
        bind(field(c, "pattern"), v);
        last = {};
      } else if (ct == "expression_statement") {
        eval(c);
        last = {};
      } else if (ct.find("item") != std::string_view::npos || ct == "attribute_item" ||
                 ct == "function_item" || ct == "use_declaration" || ct == "line_comment" ||
                 ct == "block_comment" || ct == "empty_statement") {
        continue;
      } else {
        last = eval(c);
      }
    }
    auto& env = frames_.back()->env;
    auto& log = undo_.back();
    for (auto it = log.rbegin(); it != log.rend(); ++it) {
      if (it->second)
        env[it->first] = std::move(*it->second);
      else
        env.erase(it->first);
    }
    undo_.pop_back();
    return last;
  }

  // `let (b, t, c) = x.dims3()?` / `let [b, t] = x.dims()` names x's dimensions (its contract).
  void record_dims(TSNode pat) {
    std::string_view pt = type_of(pat);
    if (pt != "tuple_pattern" && pt != "slice_pattern") return;
    auto it = tensor_index_.find(dims_tid_);
    if (it == tensor_index_.end()) return;
    ir::Tensor& t = ir_.tensors[it->second];
    if (t.shape.rank) return;
    ir::TensorShape shape;
    for (uint32_t i = 0; i < ts_node_child_count(pat); ++i) {
      TSNode c = ts_node_child(pat, i);
      std::string name = text(file(), c);
      if (name == "(" || name == ")" || name == "[" || name == "]" || name == ",") continue;
      if (type_of(c) != "identifier" && name != "_") return;  // `..` rest patterns: rank unknown
      ir::Dimension d;
      if (name != "_" && name.front() != '_') d.name = name;
      d.expr = name;
      shape.dimensions.push_back(std::move(d));
    }
    shape.rank = shape.dimensions.size();
    shape.source_expr = text(file(), ts_node_parent(pat));
    if (shape.source_expr->size() > 120) shape.source_expr.reset();
    t.shape = std::move(shape);
  }

  void bind(TSNode pat, const Val& v) {
    if (ts_node_is_null(pat)) return;
    std::string_view t = ts_node_type(pat);
    if (t == "identifier") {
      auto& env = frames_.back()->env;
      std::string name = text(file(), pat);
      if (!undo_.empty()) {
        auto& log = undo_.back();
        bool seen =
            std::any_of(log.begin(), log.end(), [&](const auto& e) { return e.first == name; });
        if (!seen) {
          auto it = env.find(name);
          log.emplace_back(name, it == env.end() ? std::nullopt : std::optional<Val>(it->second));
        }
      }
      env[name] = v;
      return;
    }
    // A tuple (or any destructuring) pattern binds every name to the same node.
    for (uint32_t i = 0; i < ts_node_named_child_count(pat); ++i) {
      TSNode c = ts_node_named_child(pat, i);
      if (type_of(c) == "scoped_identifier" || type_of(c) == "type_identifier") continue;
      bind(c, v);
    }
  }

  Val eval_if(TSNode n) {
    eval(field(n, "condition"));
    auto before = frames_.back()->env;
    Val a = eval(field(n, "consequence"));
    auto after_a = frames_.back()->env;
    frames_.back()->env = before;
    Val b;
    TSNode alt = field(n, "alternative");
    if (!ts_node_is_null(alt)) {
      TSNode inner = ts_node_named_child(alt, 0);
      b = eval(inner);
    }
    auto& env = frames_.back()->env;
    for (auto& [k, v] : env) {
      auto it = after_a.find(k);
      if (it != after_a.end()) v = join_all({it->second, v});
    }
    return join_all({a, b});
  }

  Val eval_match(TSNode n) {
    Val scrut = eval(field(n, "value"));
    TSNode body = field(n, "body");
    std::vector<Val> arms;
    auto before = frames_.back()->env;
    for (uint32_t i = 0; i < ts_node_named_child_count(body); ++i) {
      TSNode arm = ts_node_named_child(body, i);
      if (type_of(arm) != "match_arm") continue;
      frames_.back()->env = before;
      bind(field(arm, "pattern"), scrut);
      arms.push_back(eval(field(arm, "value")));
    }
    frames_.back()->env = before;
    return join_all(arms);
  }

  Val eval_field(TSNode n) {
    Val base = eval(field(n, "value"));
    std::string f = text(file(), field(n, "field"));
    Val out;
    if (base.type_item >= 0) {
      const auto& owner = crate_.items()[static_cast<std::size_t>(base.type_item)];
      for (const auto& fl : owner.fields) {
        if (fl.name != f) continue;
        Val typed = typed_val(owner.module, fl.type_text, fl.base_type);
        out = typed;
        if (!typed.tensor && typed.type_item < 0 && typed.ext_type.empty())
          out.num = constructor_number(base.type_item, f);
        if (typed.tensor &&
            (fl.container == rust::Container::None || fl.container == rust::Container::Ref ||
             fl.container == rust::Container::Arc)) {
          out.tid = ir::contract_tensor_id(frames_.back()->fid, "self." + f);
          auto ti = add_tensor(out.tid, f, ir::TensorRole::parameter, frames_.back()->fid);
          if (typed.grad == Grad::trainable) {
            ir_.tensors[ti].requires_grad = true;
            s_->trainable.insert(out.tid);
          }
        } else if (typed.tensor) {
          out.tensor = true;
        }
        break;
      }
    }
    out.field = f;
    for (const auto& m : base.modules) {
      auto it = children_.find(m);
      if (it == children_.end()) continue;
      for (const ir::Module* c : it->second)
        if (c->field && *c->field == f) out.modules.insert(c->id);
    }
    // A raw tensor field read links the parameters of the owning module whose key ends in `f`.
    if (out.tensor && !out.tid.empty()) {
      for (const auto& m : base.modules) {
        auto it = params_by_module_.find(m);
        if (it == params_by_module_.end()) continue;
        for (std::size_t pi : it->second) {
          const auto& key = ir_.parameters[pi].key;
          if (key == f ||
              (key.size() > f.size() && key.compare(key.size() - f.size(), f.size(), f) == 0 &&
               key[key.size() - f.size() - 1] == '.')) {
            auto& pt = ir_.tensors[tensor_index_[out.tid]];
            pt.parameter = ir_.parameters[pi].id;
            if (ir_.parameters[pi].shape && !pt.shape.rank) {
              for (std::uint64_t d : *ir_.parameters[pi].shape)
                pt.shape.dimensions.push_back({std::nullopt, std::to_string(d)});
              pt.shape.rank = pt.shape.dimensions.size();
            }
          }
        }
      }
    }
    return out;
  }

  std::vector<Val> eval_args(TSNode args) {
    std::vector<Val> out;
    if (ts_node_is_null(args)) return out;
    for (uint32_t i = 0; i < ts_node_named_child_count(args); ++i) {
      TSNode c = ts_node_named_child(args, i);
      std::string_view ct = ts_node_type(c);
      if (ct == "line_comment" || ct == "block_comment" || ct == "attribute_item") continue;
      // `&[&a, &b]` contributes every tensor element (cat/stack).
      TSNode inner = c;
      while (type_of(inner) == "reference_expression")
        inner = field(inner, "value");
      if (type_of(inner) == "array_expression") {
        bool any = false;
        for (uint32_t k = 0; k < ts_node_named_child_count(inner); ++k) {
          Val v = eval(ts_node_named_child(inner, k));
          if (v.tensor) {
            out.push_back(v);
            any = true;
          }
        }
        if (!any) out.push_back({});
        continue;
      }
      out.push_back(eval(c));
    }
    return out;
  }

  static std::optional<std::string> explicit_dtype(const std::vector<Val>& args) {
    for (const auto& a : args)
      if (!a.tensor && a.dtype != "Unknown") return a.dtype;
    return std::nullopt;
  }

  Val apply_catalog(TSNode node, const std::string& name, const OpRule& rule,
                    const std::vector<Val>& operands, const Val* recv) {
    std::vector<const Val*> ins;
    for (const auto& v : operands)
      if (v.tensor) ins.push_back(&v);
    Val out = make_op(node, name, rule, ins, recv, explicit_dtype(operands));
    if (name == "affine" && !operands.empty() && operands.size() >= 3 && operands[1].num &&
        operands[2].num)
      out.dom = affine_domain(operands[0].dom, *operands[1].num, *operands[2].num);
    return out;
  }

  Val eval_call(TSNode n) {
    TSNode fn = field(n, "function");
    TSNode args_node = field(n, "arguments");
    std::string_view ft = type_of(fn);
    if (ft == "generic_function") fn = field(fn, "function"), ft = type_of(fn);
    if (ft == "field_expression") {
      std::string method = text(file(), field(fn, "field"));
      Val recv = eval(field(fn, "value"));
      std::vector<Val> args = eval_args(args_node);
      return method_call(n, method, recv, args);
    }
    std::string path = text(file(), fn);
    std::vector<Val> args = eval_args(args_node);
    if (ft == "identifier" || ft == "scoped_identifier") {
      std::size_t cur = frames_.back()->item;
      for (const auto& c : crate_.resolve_in(cur, path)) {
        if (c.kind != rust::Candidate::Kind::Item) continue;
        const auto& it = crate_.items()[c.item];
        if (it.kind != rust::ItemKind::Function && it.kind != rust::ItemKind::Method) continue;
        if (it.cfg.state == rust::Tri::False) continue;
        if (it.self_kind != rust::SelfKind::None && !args.empty()) {
          Val self = args.front();
          std::vector<Val> rest(args.begin() + 1, args.end());
          return inline_call(n, c.item, &self, rest, it.name);
        }
        Val r = inline_call(n, c.item, nullptr, args, it.name);
        if (!r.tensor && (last_segment(path) == "new" || last_segment(path) == "load")) {
          std::ptrdiff_t o = owner_item(c.item);
          if (o >= 0) r.type_item = o;
        }
        return r;
      }
      std::string first = first_segment(path);
      std::string leaf = last_segment(path);
      static const std::set<std::string> candle_roots{
          "candle", "candle_core", "candle_nn", "candle_transformers", "nn",         "ops",
          "loss",   "Tensor",      "Var",       "activation",          "rotary_emb", "kv_cache"};
      if (first == "Var" && (leaf == "new" || leaf == "from_tensor" || leaf == "randn" ||
                             leaf == "zeros" || leaf == "ones" || leaf == "rand")) {
        OpRule rule = cat_.lookup(leaf);
        Val v = apply_catalog(n, "Var::" + leaf, rule, args, nullptr);
        v.grad = Grad::trainable;
        s_->trainable.insert(v.tid);
        ir_.tensors[tensor_index_[v.tid]].requires_grad = true;
        return v;
      }
      if (candle_roots.count(first) || path.find("::") == std::string::npos) {
        OpRule rule = cat_.lookup(leaf);
        if (rule.known() || first == "Tensor") {
          Val v = apply_catalog(n, leaf, rule, args, nullptr);
          if ((leaf == "from_slice" || leaf == "from_vec" || leaf == "new") &&
              v.dtype == "Unknown") {
            if (auto d = host_dtype(ts_node_named_child(args_node, 0), n)) {
              v.dtype = *d;
              mark_shape_dtype(v, *d, n, "static dtype from the element type of the host data");
            }
          }
          return v;
        }
      }
    }
    return {};
  }

  Val method_call(TSNode n, const std::string& method, const Val& recv,
                  const std::vector<Val>& args) {
    if (method == "backward" && recv.tensor) {
      if (!recv.tid.empty()) mark_loss(recv.tid, false);
      return {};
    }
    if (method == "backward_step" || method == "step") {
      for (const auto& a : args)
        if (a.tensor && !a.tid.empty()) mark_loss(a.tid, false);
      if (method == "backward_step") s_->train = true;
      return {};
    }
    if (passthrough_methods().count(method)) return recv;
    // (a) crate-local receiver type: inline the unique method.
    std::ptrdiff_t m = pick_method(recv.type_item, method);
    if (m >= 0) return inline_call(n, static_cast<std::size_t>(m), &recv, args, method);
    // `xs.apply(&layer)` is `layer.forward(xs)`.
    if (method == "apply" && !args.empty()) {
      std::ptrdiff_t fwd = pick_method(args[0].type_item, "forward");
      if (fwd >= 0)
        return inline_call(n, static_cast<std::size_t>(fwd), &args[0], {recv}, "forward");
      if (recv.tensor) {
        OpRule rule = cat_.lookup_method(args[0].ext_type, "forward");
        std::vector<Val> ops{recv};
        return apply_catalog(n, "forward", rule, ops, &args[0]);
      }
    }
    if (method.rfind("dims", 0) == 0 && recv.tensor && !recv.tid.empty()) dims_tid_ = recv.tid;
    if (non_tensor_methods().count(method)) return {};
    // (b) external module type with a catalog rule (`Linear::forward`).
    if (!recv.tensor && !recv.ext_type.empty()) {
      OpRule rule = cat_.lookup_method(recv.ext_type, method);
      if (rule.known() || method == "forward" || method == "forward_t") {
        std::vector<Val> ops = args;
        return apply_catalog(n, method, rule, ops, &recv);
      }
      return {};
    }
    // (d) tensor receiver (or unknown receiver with a known tensor op).
    OpRule rule = cat_.lookup(method);
    TSNode rnode = field(field(n, "function"), "value");
    while (type_of(rnode) == "parenthesized_expression")
      rnode = ts_node_named_child(rnode, 0);
    bool scalar_recv = recv.num || type_of(rnode) == "type_cast_expression" ||
                       type_of(rnode).find("literal") != std::string_view::npos;
    if (!scalar_recv && (recv.tensor || rule.known())) {
      std::vector<Val> ops{recv};
      ops.insert(ops.end(), args.begin(), args.end());
      if (!recv.tensor) ops.front().tensor = true;
      return apply_catalog(n, method, rule, ops, nullptr);
    }
    return {};
  }

  Val eval_binary(TSNode n) {
    Val l = eval(field(n, "left"));
    Val r = eval(field(n, "right"));
    std::string op = text(file(), field(n, "operator"));
    static const std::map<std::string, std::string> names{
        {"+", "add"}, {"-", "sub"}, {"*", "mul"}, {"/", "div"}};
    auto it = names.find(op);
    if (it == names.end() || (!l.tensor && !r.tensor)) {
      Val v;
      if (l.num && r.num) {
        double a = *l.num, b = *r.num;
        v.num = op == "+" ? a + b : op == "-" ? a - b : op == "*" ? a * b : b != 0 ? a / b : 0;
      }
      return v;
    }
    if (l.tensor != r.tensor) {
      // tensor ∘ scalar: dtype and grad of the tensor operand, no conflict or risk.
      const Val& t = l.tensor ? l : r;
      OpRule rule;
      rule.name = it->second;
      rule.dtype = DtypeRule::preserve;
      rule.grad = GradRule::propagates;
      rule.shape = ShapeRule::preserve;
      std::vector<const Val*> ins{&t};
      Val out = make_op(n, it->second, rule, ins, nullptr, std::nullopt);
      const Val& s = l.tensor ? r : l;
      if (s.num) {
        double k = *s.num;
        if (op == "+" && l.tensor)
          out.dom = affine_domain(t.dom, 1.0, k);
        else if (op == "*")
          out.dom = affine_domain(t.dom, k, 0.0);
        else
          out.dom = NumericDomain::unknown;
      }
      return out;
    }
    OpRule rule = cat_.lookup(it->second);
    std::vector<Val> ops{l, r};
    return apply_catalog(n, it->second, rule, ops, nullptr);
  }

  void flush() {
    for (auto& f : ir_.functions) {
      std::sort(f.calls.begin(), f.calls.end());
    }
  }
};

}  // namespace

void build_dataflow(const rust::Crate& crate, const DataflowOptions& opts, ir::ModelIr& ir) {
  util::run_on_deep_stack([&] {
    Engine e(crate, opts, ir);
    e.run();
  });
}

}  // namespace cg::analysis
