#include "analysis/inventory.hpp"

#include <algorithm>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <map>
#include <optional>
#include <set>

#include "analysis/config_binding.hpp"
#include "analysis/layer_catalog.hpp"
#include "analysis/symbolic.hpp"
#include "analysis/syntax.hpp"
#include "ir/stable_id.hpp"
#include "util/deep_stack.hpp"
#include "util/error.hpp"
#include "util/text.hpp"

// The VarBuilder algebra (reference-static §4.1): a constructor's body is walked statement by
// statement with an environment of builder values (root + key segments + certainty), config
// values and local closures. Catalog constructors and raw `get`s register parameter leaves; calls
// of crate-local constructors create child module instances; helpers are inlined. Loops repeat
// (expanded when a bound config makes the bound concrete), branches make leaves conditional unless
// every arm registers them. What is not understood becomes a `structure-unresolved` finding.

namespace cg::analysis {
namespace {

constexpr int kMaxDepth = 32;
constexpr std::size_t kMaxInstances = 20000;
constexpr std::size_t kMaxLeaves = 200000;
constexpr std::int64_t kMaxExpansion = 4096;
constexpr std::size_t kMaxSteps = 4'000'000;  // syntax nodes visited per component walk
constexpr int kMaxNesting = 400;              // syntax nesting the walk descends into

// Certainty of a leaf or instance; joins keep the least certain (the outer reason on a tie).
struct Cert {
  ir::Confidence level = ir::Confidence::proven;  // proven < conditional < unknown
  std::string reason;
};

Cert join(const Cert& outer, const Cert& inner) {
  if (inner.level > outer.level) return inner;
  return outer;
}

// Reasons are read in one line: whitespace collapsed, long conditions cut.
std::string one_line(const std::string& s) {
  std::string out;
  for (char c : s) {
    bool space = c == ' ' || c == '\n' || c == '\t' || c == '\r';
    if (space && (out.empty() || out.back() == ' ')) continue;
    out.push_back(space ? ' ' : c);
  }
  if (out.size() > 120) out = out.substr(0, 117) + "...";
  return out;
}

// A source expression named in a label: one line, in backticks, cut at 48 characters.
std::string brief(const std::string& s) {
  std::string t = one_line(s);
  if (t.size() > 48) t = t.substr(0, 45) + "...";
  return "`" + t + "`";
}

Cert conditional(const Cert& outer, std::string reason) {
  return join(outer, Cert{ir::Confidence::conditional, one_line(reason)});
}

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
  // closure (in the file of the frame that bound it)
  TSNode closure{};
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

// Named children in order, comments and attributes skipped. A cursor walk: indexing children
// one by one (`ts_node_named_child(n, i)`) is linear per call, so quadratic per block.
std::vector<TSNode> named_children(TSNode n, bool keep_attributes = false) {
  std::vector<TSNode> out;
  if (ts_node_is_null(n) || ts_node_child_count(n) == 0) return out;
  TSTreeCursor c = ts_tree_cursor_new(n);
  if (ts_tree_cursor_goto_first_child(&c)) {
    do {
      TSNode ch = ts_tree_cursor_current_node(&c);
      if (!ts_node_is_named(ch)) continue;
      std::string_view k = kind_of(ch);
      if (k == "line_comment" || k == "block_comment") continue;
      if (k == "attribute_item" && !keep_attributes) continue;
      out.push_back(ch);
    } while (ts_tree_cursor_goto_next_sibling(&c));
  }
  ts_tree_cursor_delete(&c);
  return out;
}

// The expression inside wrappers of the given kinds: `&(x)` -> `x` for
// {"reference_expression", "parenthesized_expression"}. Stops at a wrapper with no child.
TSNode peel(TSNode n, std::initializer_list<std::string_view> wrappers) {
  while (!ts_node_is_null(n) &&
         std::find(wrappers.begin(), wrappers.end(), kind_of(n)) != wrappers.end()) {
    auto ch = named_children(n);
    if (ch.empty()) break;
    n = ch.back();
  }
  return n;
}

std::string strip_generics(std::string path) {
  // `Vec::<Block>::with_capacity` -> `Vec::with_capacity`; `collect::<..>` -> `collect`.
  std::string out;
  int depth = 0;
  for (std::size_t i = 0; i < path.size(); ++i) {
    char c = path[i];
    if (c == '<') {
      ++depth;
      if (out.size() >= 2 && out.compare(out.size() - 2, 2, "::") == 0) out.resize(out.size() - 2);
      continue;
    }
    if (c == '>') {
      --depth;
      continue;
    }
    if (depth == 0 && c != ' ' && c != '\n') out.push_back(c);
  }
  return out;
}

std::string last_segment(const std::string& path) {
  return std::string(last_path_segment(path));
}

std::vector<std::string> split_key(const std::string& s) {
  // Splits on '.' outside braces, so `{self.idx}` stays one segment.
  std::vector<std::string> out;
  std::string cur;
  int depth = 0;
  for (char c : s) {
    if (c == '{') ++depth;
    if (c == '}') --depth;
    if (c == '.' && depth == 0) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur.push_back(c);
    }
  }
  out.push_back(cur);
  return out;
}

std::string join_key(const std::vector<std::string>& segs) {
  std::string out;
  for (const auto& s : segs) {
    if (s.empty()) continue;
    if (!out.empty()) out.push_back('.');
    out += s;
  }
  return out;
}

bool is_iterator_method(std::string_view m) {
  static const char* names[] = {"iter",    "into_iter", "iter_mut", "enumerate", "zip",
                                "take",    "skip",      "rev",      "filter",    "chain",
                                "step_by", "windows",   "chunks"};
  for (const char* n : names)
    if (m == n) return true;
  return false;
}

bool ignored_macro(std::string_view name) {
  static const char* names[] = {"assert",
                                "assert_eq",
                                "assert_ne",
                                "debug_assert",
                                "debug_assert_eq",
                                "debug_assert_ne",
                                "bail",
                                "ensure",
                                "panic",
                                "todo",
                                "unimplemented",
                                "unreachable",
                                "print",
                                "println",
                                "eprint",
                                "eprintln",
                                "dbg",
                                "trace",
                                "debug",
                                "info",
                                "warn",
                                "error",
                                "span",
                                "trace_span",
                                "info_span",
                                "debug_span",
                                "write",
                                "writeln"};
  for (const char* n : names)
    if (name == n) return true;
  return false;
}

// candle-nn 0.11.0 defaults of the config types catalog constructors take.
std::optional<SymValue> layer_config_default(std::string_view field, std::string_view ctor) {
  if (field == "groups" || field == "stride" || field == "dilation") return SymValue::of_int(1);
  if (field == "padding" || field == "output_padding" || field == "layer_idx")
    return SymValue::of_int(0);
  if (field == "affine" || field == "remove_mean") return SymValue::of_bool(true);
  if (field == "b_ih_init" || field == "b_hh_init") {
    if (ctor == "default_no_bias") return SymValue::none();
    return SymValue::of_string("Const(0)");
  }
  return std::nullopt;
}

// A VarBuilder parameter type: `VarBuilder`, `&VarBuilder<'a>`, `candle_nn::VarBuilder`,
// `VarBuilderArgs<B>`, `ShardedVarBuilder`, or an import alias of one (`use ..VarBuilder as VB`).
// `MyVarBuilderConfig` is not one.
bool is_builder_type(const rust::Crate& crate, const std::string& module, std::string t) {
  auto lt = t.find('<');
  if (lt != std::string::npos) t = t.substr(0, lt);
  std::string path;
  for (char c : t)
    if (!(c == '&' || c == ' ' || c == '\'')) path.push_back(c);
  if (path.rfind("mut", 0) == 0) path = path.substr(3);
  auto is_name = [](const std::string& p) {
    std::string leaf = last_segment(p);
    return leaf == "VarBuilder" || leaf == "VarBuilderArgs" || leaf == "ShardedVarBuilder";
  };
  if (is_name(path)) return true;
  for (const auto& c : crate.resolve(module, path))
    if (c.kind == rust::Candidate::Kind::External && is_name(c.path)) return true;
  return false;
}

class Walker : public EvalContext {
 public:
  Walker(const rust::Crate& crate, const LayerCatalog& catalog, bool audited,
         const ConfigBinding& binding, bool bind_config)
      : crate_(crate),
        catalog_(catalog),
        audited_(audited),
        binding_(binding),
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
  void run_root(std::size_t type_item, std::size_t ctor) {
    const rust::Item& t = crate_.items()[type_item];
    Inst root;
    root.type_name = t.name;
    root.qualified_type = t.qualified;
    root.source = crate_.source(type_item);
    root.cfg = crate_.items()[ctor].cfg.predicates;
    insts.push_back(root);
    Frame f;
    f.fn_item = ctor;
    f.file = crate_.items()[ctor].file;
    f.inst = 0;
    f.type_qualified = t.qualified;
    f.scopes.emplace_back();
    bool first_builder = true;
    for (const auto& p : crate_.items()[ctor].params) {
      Value v = param_value(p, crate_.items()[ctor].module);
      if (v.kind == Value::Kind::builder && first_builder) {
        insts[0].root = p.name;
        first_builder = false;
      }
      f.scopes.back()[p.name] = std::move(v);
    }
    stack_.push_back(&f);
    walk(crate_.items()[ctor].body(), 0);
    stack_.pop_back();
  }

  // EvalContext ------------------------------------------------------------------------------
  std::optional<SymValue> lookup(std::string_view name) override {
    const Value* v = find_var(std::string(name));
    if (!v) return const_value(std::string(name));
    if (v->kind == Value::Kind::sym) return v->sym;
    if (v->kind == Value::Kind::loop_var)
      return SymValue::symbolic(std::string(name), "loop variable `" + std::string(name) + "`");
    return std::nullopt;
  }
  std::optional<SymValue> field(TSNode base, std::string_view name) override {
    Value b = value_of(base, 0);
    if (b.kind == Value::Kind::config) {
      auto r = binding_.field(b.config, name);
      if (r.config) return std::nullopt;
      return r.value;
    }
    if (b.kind == Value::Kind::layer_config) return layer_field(b, name);
    // `patch_embeddings.num_patches` of a module this constructor built: the value its own
    // constructor stores in the field, evaluated with the bound config.
    if (!b.modules.empty() && bind_config_) {
      const std::string& q = insts[b.modules.back()].qualified_type;
      auto [it, fresh] = module_fields_.try_emplace(q);
      if (fresh)
        for (std::size_t i = 0; i < crate_.items().size(); ++i)
          if (crate_.items()[i].kind == rust::ItemKind::Struct &&
              crate_.items()[i].qualified == q) {
            it->second = binding_.constructor_fields(i);
            break;
          }
      if (auto f = it->second.find(std::string(name)); f != it->second.end()) return f->second;
    }
    return std::nullopt;
  }
  // A crate-local `const N: usize = 4 * 64;`, evaluated in its own file (bounded nesting, so a
  // const naming itself stays symbolic).
  std::optional<SymValue> const_value(const std::string& path) {
    if (stack_.empty() || const_depth_ > 8) return std::nullopt;
    auto cands = crate_.resolve_in(frame().fn_item, path);
    if (cands.size() != 1 || cands[0].kind != rust::Candidate::Kind::Item) return std::nullopt;
    const rust::Item& it = crate_.items()[cands[0].item];
    if (it.kind != rust::ItemKind::Const) return std::nullopt;
    TSNode value = field_of(it.node, "value");
    if (ts_node_is_null(value)) return std::nullopt;
    ++const_depth_;
    Frame f;
    f.fn_item = cands[0].item;
    f.file = it.file;
    f.inst = frame().inst;
    f.scopes.emplace_back();
    stack_.push_back(&f);
    SymValue v = evaluate(value, crate_.files()[it.file]->text(), *this);
    stack_.pop_back();
    --const_depth_;
    return v;
  }
  std::optional<SymValue> method(TSNode recv, std::string_view name,
                                 const std::vector<SymValue>& args) override {
    Value b = value_of(recv, 0);
    if (b.kind == Value::Kind::config) return binding_.method(b.config, name, args);
    return std::nullopt;
  }

 private:
  struct Frame {
    std::size_t fn_item = 0;
    std::size_t file = 0;
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
  std::string site(TSNode n) { return frame().call_site.empty() ? where(n) : frame().call_site; }

  const rust::Crate& crate_;
  const LayerCatalog& catalog_;
  bool audited_;
  const ConfigBinding& binding_;
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

  std::string new_group(TSNode n) { return where(n) + "#" + std::to_string(++alt_groups_); }
  void in_alt(const std::string& group, TSNode at, int index, int count, const std::string& label,
              const std::function<void()>& fn) {
    alt_ctx_.push_back({group, where(at), one_line(label), index, count});
    fn();
    alt_ctx_.pop_back();
  }
  // Leaves registered in [from, leaves.size()) that every alternative of `group` registers are
  // no alternative of it.
  void drop_group(std::size_t from, std::size_t to, const std::string& group) {
    for (std::size_t i = from; i < to && i < leaves.size(); ++i)
      std::erase_if(leaves[i].alts, [&](const AlternativeMark& m) { return m.group == group; });
  }

  Frame& frame() { return *stack_.back(); }
  std::string text(TSNode n) { return crate_.node_text(frame().file, n); }
  std::string where(TSNode n) {
    const auto& f = crate_.files()[frame().file];
    return f->path() + ":" + std::to_string(ts_node_start_point(n).row + 1);
  }
  void diag(TSNode n, std::string message) { diags.push_back({where(n), std::move(message)}); }

  Value* find_var(const std::string& name) {
    if (stack_.empty()) return nullptr;
    auto& scopes = frame().scopes;
    for (auto it = scopes.rbegin(); it != scopes.rend(); ++it) {
      auto f = it->find(name);
      if (f != it->end()) return &f->second;
    }
    return nullptr;
  }
  void bind(const std::string& name, Value v) { frame().scopes.back()[name] = std::move(v); }

  Value param_value(const rust::Param& p, const std::string& module) {
    Value v;
    if (is_builder_type(crate_, module, p.type_text)) {
      v.kind = Value::Kind::builder;
      v.root = p.name;
      return v;
    }
    if (auto c = binding_.config_of_type(p.type_text, module)) {
      v.kind = Value::Kind::config;
      v.config = *c;
      if (bind_config_) {
        if (auto b = binding_.bind_root(*c))
          v.config = *b;
        else
          unbound_config = crate_.items()[c->item].qualified;
      }
      return v;
    }
    v.kind = Value::Kind::sym;
    if (args_ != nullptr)
      if (auto a = args_->find(p.name); a != args_->end()) {
        v.sym = a->second;
        used_args.insert(p.name);
        return v;
      }
    v.sym = SymValue::symbolic(p.name, "parameter `" + p.name +
                                           "` of the root constructor (bind it with --arg " +
                                           p.name + "=VALUE)");
    return v;
  }

 private:
  std::optional<SymValue> layer_field(const Value& b, std::string_view name) {
    auto it = b.fields.find(std::string(name));
    if (it != b.fields.end()) return it->second;
    if (b.defaulted) return layer_config_default(name, b.ctor);
    return SymValue::symbolic(b.text + "." + std::string(name),
                              "`" + b.text + "` is not a config literal");
  }

  SymValue eval(TSNode n) { return evaluate(n, crate_.files()[frame().file]->text(), *this); }

  // The value of an expression, without side effects.
  Value value_of(TSNode n, int depth) {
    Value v;
    if (ts_node_is_null(n) || depth > 64 || value_depth_ > 256) {
      v.kind = Value::Kind::sym;
      v.sym = SymValue::symbolic(ts_node_is_null(n) ? "" : text(n), "expression too deep");
      return v;
    }
    ++value_depth_;
    struct Guard {
      int& d;
      ~Guard() { --d; }
    } guard{value_depth_};
    std::string_view k = kind_of(n);
    if (k == "identifier" || k == "self" || k == "scoped_identifier") {
      if (Value* b = find_var(text(n))) return *b;
      if (auto path = function_path(text(n))) {
        v.kind = Value::Kind::fn_ref;
        v.fns.push_back({*path, Cert{}});
        return v;
      }
    } else if (k == "reference_expression" || k == "parenthesized_expression" ||
               k == "try_expression") {
      auto ch = named_children(n);
      if (!ch.empty()) return value_of(ch.back(), depth + 1);
    } else if (k == "field_expression") {
      Value base = value_of(field_of(n, "value"), depth + 1);
      if (base.kind == Value::Kind::config) {
        auto r = binding_.field(base.config, text(field_of(n, "field")));
        if (r.config) {
          base.config = *r.config;
          return base;
        }
        v.kind = Value::Kind::sym;
        v.sym = r.value;
        return v;
      }
    } else if (k == "call_expression") {
      TSNode fn = field_of(n, "function");
      TSNode args = field_of(n, "arguments");
      auto argv = named_children(args);
      if (kind_of(fn) == "generic_function") fn = field_of(fn, "function");
      if (kind_of(fn) == "field_expression") {
        if (auto b = builder_chain(n, depth)) return *b;
        std::string name = text(field_of(fn, "field"));
        Value recv = value_of(field_of(fn, "value"), depth + 1);
        if (recv.kind == Value::Kind::layer_config && name == "clone") return recv;
      } else {
        std::string path = strip_generics(text(fn));
        if (path == "Some" && argv.size() == 1) {
          Value inner = value_of(argv[0], depth + 1);
          // `Some(Layer::load(..))`: whatever it holds, `.is_some()` of it is true.
          if (inner.kind == Value::Kind::sym && !inner.sym.concrete())
            inner.sym = SymValue::symbolic("Some(" + inner.sym.text + ")", inner.sym.reason);
          return inner;
        }
        std::string leaf = last_segment(path);
        if (leaf == "default" || leaf == "default_no_bias") {
          v.kind = Value::Kind::layer_config;
          v.defaulted = true;
          v.ctor = leaf;
          v.text = text(n);
          return v;
        }
      }
    } else if (k == "struct_expression") {
      std::string name = last_segment(strip_generics(text(field_of(n, "name"))));
      if (name.size() > 6 && name.compare(name.size() - 6, 6, "Config") == 0) {
        v.kind = Value::Kind::layer_config;
        v.text = text(n);
        for (TSNode fi : named_children(field_of(n, "body"))) {
          std::string_view fk = kind_of(fi);
          if (fk == "field_initializer") {
            v.fields[text(field_of(fi, "field"))] = eval(field_of(fi, "value"));
          } else if (fk == "shorthand_field_initializer") {
            auto ch = named_children(fi);
            if (!ch.empty()) v.fields[text(ch[0])] = eval(ch[0]);
          } else if (fk == "base_field_initializer") {
            v.defaulted = true;
          }
        }
        return v;
      }
    } else if (k == "if_expression") {
      TSNode cond = field_of(n, "condition");
      TSNode cons = field_of(n, "consequence");
      TSNode alt = field_of(n, "alternative");
      Value a = block_value(cons, depth);
      Value b;
      if (!ts_node_is_null(alt)) {
        auto ch = named_children(alt);
        if (!ch.empty())
          b = kind_of(ch[0]) == "block" ? block_value(ch[0], depth) : value_of(ch[0], depth + 1);
      }
      if (kind_of(cond) != "let_condition") {
        SymValue c = eval(cond);
        if (c.kind == SymValue::Kind::boolean) return c.boolean ? a : b;
      }
      if (a.kind == Value::Kind::fn_ref && b.kind == Value::Kind::fn_ref) {
        std::string c = eval(cond).text;
        Value out;
        out.kind = Value::Kind::fn_ref;
        for (auto& f : a.fns)
          out.fns.push_back({f.first, conditional(f.second, "if " + c)});
        for (auto& f : b.fns)
          out.fns.push_back({f.first, conditional(f.second, "unless " + c)});
        return out;
      }
      for (Value* pick : {&a, &b}) {
        if (pick->kind == Value::Kind::builder) {
          pick->cert = conditional(pick->cert, "if " + eval(cond).text);
          return *pick;
        }
      }
    } else if (k == "block") {
      return block_value(n, depth);
    }
    v.kind = Value::Kind::sym;
    v.sym = eval(n);
    return v;
  }

  // A chain of builder methods (`vb.pp("a").pp(i).set_device(d)`), applied in order without
  // recursion, so a chain of any length costs its length: each link is one step of the algebra.
  // nullopt when the chain's base is not a builder or a link is not a builder method.
  std::optional<Value> builder_chain(TSNode n, int depth) {
    std::vector<TSNode> links;  // outermost first
    TSNode base = n;
    for (;;) {
      TSNode p = peel(base, {"reference_expression", "parenthesized_expression", "try_expression"});
      if (kind_of(p) != "call_expression") break;
      TSNode fn = field_of(p, "function");
      if (kind_of(fn) == "generic_function") fn = field_of(fn, "function");
      if (kind_of(fn) != "field_expression") break;
      links.push_back(p);
      base = field_of(fn, "value");
    }
    if (links.empty()) return std::nullopt;
    Value recv = value_of(base, depth + 1);
    if (recv.kind != Value::Kind::builder) return std::nullopt;
    for (auto it = links.rbegin(); it != links.rend(); ++it) {
      TSNode fn = field_of(*it, "function");
      if (kind_of(fn) == "generic_function") fn = field_of(fn, "function");
      std::string name = text(field_of(fn, "field"));
      auto argv = named_children(field_of(*it, "arguments"));
      if ((name == "pp" || name == "push_prefix") && argv.size() == 1) {
        for (auto& s : prefix_segments(argv[0]))
          recv.segs.push_back(std::move(s));
      } else if (name == "set_prefix" && argv.size() == 1) {
        recv.segs = prefix_segments(argv[0]);
      } else if (name == "root") {
        recv.segs.clear();
      } else if (!(name == "clone" || name == "as_ref" || name == "as_mut" || name == "to_owned" ||
                   name == "to_dtype" || name == "to_device" || name == "set_dtype" ||
                   name == "set_device" || name == "unwrap" || name == "expect")) {
        return std::nullopt;
      }
    }
    return recv;
  }

  Value block_value(TSNode block, int depth) {
    auto ch = named_children(block);
    if (ch.empty()) return Value{};
    TSNode last = ch.back();
    if (std::string_view(kind_of(last)).find("statement") != std::string_view::npos ||
        kind_of(last) == "let_declaration")
      return Value{};
    return value_of(last, depth + 1);
  }

  // Key segments a prefix argument pushes: `"a.b"` -> {a, b}; `i` -> {"{i}"} (or the index when
  // the loop is expanded); `format!("block_{i}")` -> {"block_{i}"}.
  std::vector<std::string> prefix_segments(TSNode arg) {
    arg = peel(arg, {"reference_expression", "parenthesized_expression"});
    std::string_view k = kind_of(arg);
    if (k == "call_expression") {
      // `format!(..).as_str()`, `name.to_string()`: the receiver carries the text.
      TSNode fn = field_of(arg, "function");
      if (kind_of(fn) == "field_expression") {
        std::string m = text(field_of(fn, "field"));
        if (m == "as_str" || m == "to_string" || m == "to_owned" || m == "clone")
          return prefix_segments(field_of(fn, "value"));
      }
    }
    if (k == "macro_invocation") {
      std::string name = last_segment(text(field_of(arg, "macro")));
      if (name == "format") return split_key(format_template(arg));
    }
    if (k == "identifier") {
      if (Value* v = find_var(text(arg)); v && v->kind == Value::Kind::loop_var)
        return {"{" + text(arg) + "}"};
    }
    SymValue s = eval(arg);
    if (s.kind == SymValue::Kind::string) return split_key(s.text);
    if (s.kind == SymValue::Kind::integer) return {std::to_string(s.integer)};
    // Arithmetic on a loop variable (`index + 1`) is a repeated family, not a gap.
    if (s.reason.rfind("loop variable", 0) == 0) return {"{" + s.text + "}"};
    diag(arg, "non-literal prefix `" + text(arg) + "`; its key segment is symbolic");
    return {"{" + text(arg) + "}"};
  }

  // `format!("layers.{}", i)` / `format!("{name}")` as a key template; bound variables are
  // substituted, loop variables stay `{i}`.
  std::string format_template(TSNode macro) {
    std::string tt;
    for (TSNode ch : named_children(macro))
      if (kind_of(ch) == "token_tree") tt = text(ch);
    if (tt.size() < 2) return "{" + text(macro) + "}";
    std::string body = tt.substr(1, tt.size() - 2);
    // The template literal, then comma-separated arguments at depth 0.
    auto q1 = body.find('"');
    auto q2 = q1 == std::string::npos ? q1 : body.find('"', q1 + 1);
    if (q2 == std::string::npos) return "{" + text(macro) + "}";
    std::string templ = body.substr(q1 + 1, q2 - q1 - 1);
    std::vector<std::string> args;
    std::map<std::string, std::string> named;
    {
      std::string rest = body.substr(q2 + 1), cur;
      int depth = 0;
      for (char c : rest + ",") {
        if (c == '(' || c == '[' || c == '{') ++depth;
        if (c == ')' || c == ']' || c == '}') --depth;
        if (c == ',' && depth == 0) {
          std::string a;
          for (char x : cur)
            if (x != ' ' && x != '\n' && x != '\t') a.push_back(x);
          if (!a.empty()) {
            auto eq = a.find('=');
            if (eq != std::string::npos && a.find("==") == std::string::npos)
              named[a.substr(0, eq)] = a.substr(eq + 1);
            else
              args.push_back(a);
          }
          cur.clear();
        } else {
          cur.push_back(c);
        }
      }
    }
    std::string out;
    std::size_t next = 0;
    for (std::size_t i = 0; i < templ.size(); ++i) {
      char c = templ[i];
      if (c == '{' && i + 1 < templ.size() && templ[i + 1] == '{') {
        out += '{';
        ++i;
        continue;
      }
      if (c != '{') {
        out.push_back(c);
        continue;
      }
      auto close = templ.find('}', i);
      if (close == std::string::npos) break;
      std::string spec = templ.substr(i + 1, close - i - 1);
      std::string name = spec.substr(0, spec.find(':'));
      std::string expr;
      if (name.empty()) {
        expr = next < args.size() ? args[next++] : "?";
      } else if (std::isdigit(static_cast<unsigned char>(name[0]))) {
        std::size_t idx = static_cast<std::size_t>(std::atoi(name.c_str()));
        expr = idx < args.size() ? args[idx] : name;
      } else {
        expr = named.count(name) ? named[name] : name;
      }
      out += placeholder_text(expr);
      i = close;
    }
    return out;
  }

  std::string placeholder_text(const std::string& expr) {
    if (Value* v = find_var(expr)) {
      if (v->kind == Value::Kind::sym && v->sym.kind == SymValue::Kind::integer)
        return std::to_string(v->sym.integer);
      if (v->kind == Value::Kind::sym && v->sym.kind == SymValue::Kind::string) return v->sym.text;
    }
    return "{" + expr + "}";
  }

  // A function named as a value: a catalog constructor's external path (`linear`,
  // `nn::linear_b`), or `item:<index>` for a unique crate-local free function.
  std::optional<std::string> function_path(const std::string& path) {
    if (stack_.empty()) return std::nullopt;
    auto cands = crate_.resolve_in(frame().fn_item, path);
    for (const auto& c : cands) {
      if (c.kind == rust::Candidate::Kind::External) {
        std::string first = c.path.substr(0, c.path.find("::"));
        if ((first == "candle_nn" || first == "nn") && catalog_.find(c.path)) return c.path;
      }
    }
    if (cands.size() == 1 && cands[0].kind == rust::Candidate::Kind::Item &&
        crate_.items()[cands[0].item].kind == rust::ItemKind::Function)
      return "item:" + std::to_string(cands[0].item);
    return std::nullopt;
  }

  // Side-effecting walk ------------------------------------------------------------------------
  void walk(TSNode n, int depth) {
    if (ts_node_is_null(n) || truncated) return;
    if (++steps_ > kMaxSteps) {
      truncated = true;
      diag(n, "analysis truncated after " + std::to_string(kMaxSteps) +
                  " steps (loops expanded by the bound config multiply the work)");
      return;
    }
    if (nesting_ >= kMaxNesting) {
      diag(n, "expression nested deeper than " + std::to_string(kMaxNesting) +
                  " levels; the rest of it is not analyzed");
      return;
    }
    ++nesting_;
    struct Nest {
      int& d;
      ~Nest() { --d; }
    } nest{nesting_};
    std::string_view k = kind_of(n);
    if (k == "function_item" || k == "struct_item" || k == "impl_item" || k == "enum_item" ||
        k == "trait_item" || k == "mod_item" || k == "use_declaration" || k == "const_item" ||
        k == "static_item" || k == "closure_expression" || k == "line_comment" ||
        k == "block_comment" || k == "attribute_item")
      return;
    if (k == "block") {
      frame().scopes.emplace_back();
      // `#[cfg(..)]` attributes gate the statement that follows them.
      std::vector<std::pair<TSNode, rust::Tri>> stmts;
      std::vector<std::string> preds;
      for (TSNode ch : named_children(n, true)) {
        if (kind_of(ch) == "attribute_item") {
          std::string t = text(ch);
          auto open = t.find("cfg("), close = t.rfind(')');
          if (open != std::string::npos && t.find("cfg_attr") == std::string::npos &&
              close != std::string::npos && close > open + 4)
            preds.push_back(
                rust::normalize_cfg(std::string_view(t).substr(open + 4, close - open - 4)));
          continue;
        }
        rust::Tri active = preds.empty() ? rust::Tri::True : crate_.cfg_set().eval_all(preds);
        preds.clear();
        if (active != rust::Tri::False) stmts.emplace_back(ch, active);
      }
      walk_stmts(stmts, 0, depth);
      frame().scopes.pop_back();
      return;
    }
    if (k == "expression_statement") {
      // A macro in statement position may register parameters we cannot see.
      auto ch = named_children(n);
      if (ch.size() == 1 && kind_of(ch[0]) == "macro_invocation") {
        std::string t = text(n);
        if (!t.empty() && t.back() == ';') statement_macro(ch[0]);
        return;
      }
    }
    if (k == "let_declaration") return walk_let(n, depth);
    if (k == "call_expression") return walk_call(n, depth);
    if (k == "macro_invocation") return;  // expression macros (`vec![..]`) hold no builders
    if (k == "for_expression") return walk_for(n, depth);
    if (k == "while_expression" || k == "loop_expression") {
      std::string bound =
          k == "loop_expression" ? std::string("loop") : "while " + text(field_of(n, "condition"));
      frame().repeat.push_back("_ in " + bound);
      walk(field_of(n, "body"), depth);
      frame().repeat.pop_back();
      return;
    }
    if (k == "if_expression") return walk_if(n, depth);
    if (k == "match_expression") return walk_match(n, depth);
    if (k == "struct_expression") return walk_struct(n, depth);
    for (TSNode ch : named_children(n))
      walk(ch, depth);
  }

  void walk_stmts(const std::vector<std::pair<TSNode, rust::Tri>>& stmts, std::size_t from,
                  int depth) {
    for (std::size_t i = from; i < stmts.size() && !truncated; ++i) {
      TSNode ch = stmts[i].first;
      rust::Tri active = stmts[i].second;
      if (kind_of(ch) == "let_declaration" && fork_let(stmts, i, depth)) return;
      if (active == rust::Tri::Unknown)
        under(conditional(frame().cert, "a #[cfg] that is not understood"),
              [&] { walk(ch, depth); });
      else
        walk(ch, depth);
    }
  }

  // `let (q, k) = if c { ("to_q", "to_k") } else { ("query", "key") };` with `c` unknown: the
  // rest of the block is walked once per arm, each arm's literals bound, under its condition.
  // Leaves every arm registers keep the outer certainty (unify).
  bool fork_let(const std::vector<std::pair<TSNode, rust::Tri>>& stmts, std::size_t i, int depth) {
    TSNode let = stmts[i].first;
    TSNode pat = field_of(let, "pattern");
    TSNode value = field_of(let, "value");
    if (ts_node_is_null(pat) || ts_node_is_null(value) || kind_of(value) != "if_expression" ||
        forks_ >= 4)
      return false;
    TSNode cond = field_of(value, "condition");
    TSNode alt = field_of(value, "alternative");
    if (kind_of(cond) == "let_condition" || ts_node_is_null(alt)) return false;
    SymValue c = eval(cond);
    if (c.concrete()) return false;
    auto alt_children = named_children(alt);
    if (alt_children.empty() || kind_of(alt_children[0]) != "block") return false;
    // Each arm's tail must be literals matching the pattern's shape.
    std::vector<TSNode> names;
    if (kind_of(pat) == "identifier") names.push_back(pat);
    if (kind_of(pat) == "tuple_pattern")
      for (TSNode p : named_children(pat))
        if (kind_of(p) == "identifier") names.push_back(p);
    if (names.empty()) return false;
    std::vector<std::vector<SymValue>> arms;
    for (TSNode block : {field_of(value, "consequence"), alt_children[0]}) {
      auto ch = named_children(block);
      if (ch.size() != 1) return false;
      std::vector<TSNode> parts;
      if (names.size() == 1)
        parts.push_back(ch[0]);
      else if (kind_of(ch[0]) == "tuple_expression")
        parts = named_children(ch[0]);
      if (parts.size() != names.size()) return false;
      std::vector<SymValue> vals;
      for (TSNode part : parts) {
        SymValue v = eval(part);
        if (!v.concrete()) return false;
        vals.push_back(v);
      }
      arms.push_back(std::move(vals));
    }
    ++forks_;
    Cert outer = frame().cert;
    std::string ctext = one_line(c.text);
    auto m0 = marks();
    std::pair<std::size_t, std::size_t> m1;
    const std::string group = new_group(value);
    for (std::size_t a = 0; a < 2; ++a) {
      const std::string label = (a == 0 ? "if " : "unless ") + ctext;
      in_alt(group, value, static_cast<int>(a), 2, label, [&] {
        under(conditional(outer, label), [&] {
          frame().scopes.emplace_back();
          for (std::size_t k = 0; k < names.size(); ++k) {
            Value v;
            v.kind = Value::Kind::sym;
            v.sym = arms[a][k];
            bind(text(names[k]), std::move(v));
          }
          walk_stmts(stmts, i + 1, depth);
          frame().scopes.pop_back();
        });
      });
      if (a == 0) m1 = marks();
    }
    unify(m0, m1, marks(), outer, group);
    --forks_;
    return true;
  }

  void walk_let(TSNode n, int depth) {
    TSNode pat = field_of(n, "pattern");
    TSNode value = field_of(n, "value");
    std::string name;
    if (!ts_node_is_null(pat)) {
      if (kind_of(pat) == "identifier") name = text(pat);
      if (kind_of(pat) == "mut_pattern") {
        auto ch = named_children(pat);
        if (!ch.empty() && kind_of(ch.back()) == "identifier") name = text(ch.back());
      }
    }
    if (ts_node_is_null(value)) {
      if (!name.empty()) bind(name, Value{});
      return;
    }
    if (kind_of(value) == "closure_expression") {
      Value v;
      v.kind = Value::Kind::closure;
      v.closure = value;
      if (!name.empty()) bind(name, std::move(v));
      return;
    }
    std::size_t before = frame().created.size();
    walk(value, depth);
    TSNode alt = field_of(n, "alternative");
    if (!ts_node_is_null(alt)) walk(alt, depth);
    if (name.empty()) {
      // Tuple patterns: shadow their names so stale bindings do not leak.
      shadow_pattern(pat);
      return;
    }
    Value v = value_of(value, 0);
    for (std::size_t i = before; i < frame().created.size(); ++i) {
      v.modules.push_back(frame().created[i]);
      insts[frame().created[i]].field = name;
    }
    bind(name, std::move(v));
  }

  void shadow_pattern(TSNode pat) {
    if (ts_node_is_null(pat)) return;
    if (kind_of(pat) == "identifier") {
      bind(text(pat), Value{});
      return;
    }
    for (TSNode ch : named_children(pat))
      shadow_pattern(ch);
  }

  void statement_macro(TSNode n) {
    std::string name = last_segment(text(field_of(n, "macro")));
    if (ignored_macro(name)) return;
    diag(n, "macro `" + name + "!` not expanded; any parameters it registers are invisible");
  }

  void walk_struct(TSNode n, int depth) {
    for (TSNode fi : named_children(field_of(n, "body"))) {
      std::string_view fk = kind_of(fi);
      if (fk == "field_initializer") {
        std::string fname = text(field_of(fi, "field"));
        TSNode value = field_of(fi, "value");
        std::size_t before = frame().created.size();
        walk(value, depth);
        for (std::size_t i = before; i < frame().created.size(); ++i)
          insts[frame().created[i]].field = fname;
        name_held_modules(value, fname);
      } else if (fk == "shorthand_field_initializer") {
        auto ch = named_children(fi);
        if (!ch.empty()) name_held_modules(ch[0], text(ch[0]));
      } else {
        walk(fi, depth);
      }
    }
  }

  // `Self { attn: a }` where `let a = Attention::new(..)`: the instance's field is `attn`.
  void name_held_modules(TSNode value, const std::string& field) {
    value = peel(value, {"try_expression", "reference_expression", "parenthesized_expression"});
    if (kind_of(value) != "identifier") return;
    if (Value* v = find_var(text(value)))
      for (std::size_t m : v->modules)
        insts[m].field = field;
  }

  void walk_for(TSNode n, int depth) {
    TSNode pat = field_of(n, "pattern");
    TSNode iter = field_of(n, "value");
    TSNode body = field_of(n, "body");
    walk(iter, depth);
    std::string var = first_identifier(pat);
    repeat_body(var, iter, pat, [&] { walk(body, depth); });
  }

  std::string first_identifier(TSNode pat) {
    if (ts_node_is_null(pat)) return "_";
    if (kind_of(pat) == "identifier") return text(pat);
    for (TSNode ch : named_children(pat)) {
      std::string s = first_identifier(ch);
      if (s != "_") return s;
    }
    return "_";
  }

  // Runs `body` for each iteration of `iter` when its range is concrete (the loop variable bound
  // to the index), else once with the loop variable symbolic; instances created inside carry
  // the repeat text.
  void repeat_body(const std::string& var, TSNode iter, TSNode pat,
                   const std::function<void()>& body) {
    TSNode range = peel(iter, {"parenthesized_expression"});
    std::optional<std::int64_t> lo, hi;
    std::string bound_text = ts_node_is_null(iter) ? "?" : text(iter);
    if (!ts_node_is_null(range) && kind_of(range) == "range_expression") {
      auto ch = named_children(range);
      bool inclusive = text(range).find("..=") != std::string::npos;
      if (ch.size() == 2) {
        SymValue a = eval(ch[0]), b = eval(ch[1]);
        if (a.kind == SymValue::Kind::integer && b.kind == SymValue::Kind::integer) {
          lo = a.integer;
          hi = b.integer + (inclusive ? 1 : 0);
        }
        bound_text = (a.concrete() ? a.display() : a.text) + (inclusive ? "..=" : "..") +
                     (b.concrete() ? b.display() : b.text);
      }
    }
    // A family of concrete count that is not expanded says so in its repeat text, so that every
    // reader (summary totals, listings) multiplies it by its count instead of counting it once.
    auto kept_as_template = [&](const std::string& why) {
      frame().repeat.back() = var + " in " + bound_text + " (not expanded: " + why + ")";
    };
    frame().repeat.push_back(var + " in " + bound_text);
    frame().scopes.emplace_back();
    bool simple = !ts_node_is_null(pat) && kind_of(pat) == "identifier";
    bool expanded = false;
    if (lo && hi && simple && *hi - *lo <= kMaxExpansion) {
      std::string why = expand_or_undo(var, *lo, *hi, body, iter);
      expanded = why.empty();
      if (!expanded) kept_as_template(why);
    } else if (lo && hi && *hi > *lo) {
      if (*hi - *lo > kMaxExpansion) {
        diag(iter, "loop of " + std::to_string(*hi - *lo) +
                       " iterations kept as a template (over " + std::to_string(kMaxExpansion) +
                       ")");
        kept_as_template("over the expansion bound");
      } else {
        kept_as_template("pattern is not a plain variable");
      }
    }
    if (!expanded) {
      if (!ts_node_is_null(pat)) shadow_pattern(pat);
      Value v;
      v.kind = Value::Kind::loop_var;
      bind(var, std::move(v));
      body();
    }
    frame().scopes.pop_back();
    frame().repeat.pop_back();
  }

  // Expands `for var in lo..hi` when the whole expansion fits the instance and leaf bounds. The
  // first iteration is walked, its cost measured, and when `hi - lo` iterations would not fit it
  // is undone (instances, leaves, messages and the scopes it changed), so a family is either
  // expanded in full or kept whole as a counted template, never cut part-way.
  // Returns "" when expanded, else the short reason the family's repeat text records.
  std::string expand_or_undo(const std::string& var, std::int64_t lo, std::int64_t hi,
                             const std::function<void()>& body, TSNode iter) {
    const std::size_t n_inst = insts.size(), n_leaf = leaves.size(), n_diag = diags.size();
    const std::size_t n_created = frame().created.size();
    const bool was_truncated = truncated;
    const auto scopes = frame().scopes;
    for (std::int64_t i = lo; i < hi && !truncated; ++i) {
      Value v;
      v.kind = Value::Kind::sym;
      v.sym = SymValue::of_int(i);
      bind(var, std::move(v));
      body();
      if (i != lo) continue;
      const auto count = static_cast<std::size_t>(hi - lo);
      const std::size_t per_inst = insts.size() - n_inst, per_leaf = leaves.size() - n_leaf;
      // Would `count` iterations of this cost fit what is left under `bound`?
      auto fits = [count](std::size_t per, std::size_t used, std::size_t bound) {
        return per == 0 || (used < bound && count <= (bound - used) / per);
      };
      const bool inst_ok = fits(per_inst, n_inst, kMaxInstances);
      const bool leaf_ok = fits(per_leaf, n_leaf, kMaxLeaves);
      if (!truncated && inst_ok && leaf_ok) continue;
      insts.resize(n_inst);
      leaves.resize(n_leaf);
      diags.resize(n_diag);
      frame().created.resize(n_created);
      frame().scopes = scopes;
      const bool steps = truncated && inst_ok && leaf_ok;
      truncated = was_truncated;
      std::string why = steps      ? "its first iteration ran past the analysis step bound"
                        : !inst_ok ? "expanding it would create " + std::to_string(per_inst) +
                                         " module instances per iteration, over the bound of " +
                                         std::to_string(kMaxInstances)
                                   : "expanding it would register " + std::to_string(per_leaf) +
                                         " parameters per iteration, over the bound of " +
                                         std::to_string(kMaxLeaves);
      diag(iter,
           "loop of " + std::to_string(count) + " iterations kept as a template (" + why + ")");
      return steps      ? "over the step bound"
             : !inst_ok ? "over the instance bound"
                        : "over the leaf bound";
    }
    return "";
  }

  // Walks `branch` under certainty `c`; returns the [leaf, instance] ranges it created.
  std::pair<std::size_t, std::size_t> marks() { return {leaves.size(), insts.size()}; }

  void under(const Cert& c, const std::function<void()>& fn) {
    Cert saved = frame().cert;
    frame().cert = c;
    fn();
    frame().cert = saved;
  }

  void walk_if(TSNode n, int depth) {
    TSNode cond = field_of(n, "condition");
    TSNode cons = field_of(n, "consequence");
    TSNode alt = field_of(n, "alternative");
    TSNode alt_body{};
    if (!ts_node_is_null(alt)) {
      auto ch = named_children(alt);
      if (!ch.empty()) alt_body = ch[0];
    }
    std::optional<bool> taken;
    std::string reason;
    std::string bind_name;
    Value bind_value;
    if (kind_of(cond) == "let_condition") {
      TSNode v = field_of(cond, "value");
      TSNode pat = field_of(cond, "pattern");
      walk(v, depth);
      Value val = value_of(v, 0);
      if (val.kind == Value::Kind::sym && val.sym.kind == SymValue::Kind::none) taken = false;
      if (!ts_node_is_null(pat) && kind_of(pat) == "tuple_struct_pattern") {
        std::string ptxt = text(pat);
        auto ch = named_children(pat);
        if (ptxt.rfind("Some", 0) == 0 && ch.size() == 2 && kind_of(ch[1]) == "identifier") {
          bind_name = text(ch[1]);
          bind_value = val;
          if (val.kind == Value::Kind::builder) taken = true;
          if (val.kind == Value::Kind::sym && val.sym.concrete() &&
              val.sym.kind != SymValue::Kind::none)
            taken = true;
        }
      }
      reason = "if " + text(cond);
    } else {
      walk(cond, depth);
      SymValue c = eval(cond);
      if (c.kind == SymValue::Kind::boolean) taken = c.boolean;
      reason = "if " + (c.concrete() ? text(cond) : c.text);
    }
    Cert outer = frame().cert;
    auto run_then = [&] {
      frame().scopes.emplace_back();
      if (!bind_name.empty()) bind(bind_name, bind_value);
      walk(cons, depth);
      frame().scopes.pop_back();
    };
    if (taken) {
      if (*taken)
        run_then();
      else if (!ts_node_is_null(alt_body))
        walk(alt_body, depth);
      return;
    }
    auto m0 = marks();
    const std::string group = new_group(n);
    in_alt(group, n, 0, 2, reason, [&] { under(conditional(outer, reason), run_then); });
    auto m1 = marks();
    if (!ts_node_is_null(alt_body)) {
      in_alt(group, n, 1, 2, "unless " + reason.substr(3), [&] {
        under(conditional(outer, "unless " + reason.substr(3)), [&] { walk(alt_body, depth); });
      });
      auto m2 = marks();
      unify(m0, m1, m2, outer, group);
    }
  }

  // Arms [m0,m1) and [m1,m2) of one branch: what both register keeps the outer certainty.
  void unify(std::pair<std::size_t, std::size_t> m0, std::pair<std::size_t, std::size_t> m1,
             std::pair<std::size_t, std::size_t> m2, const Cert& outer, const std::string& group) {
    std::set<std::string> a, b;
    auto sig = [&](std::size_t i) { return leaves[i].root + "\n" + leaves[i].key; };
    for (std::size_t i = m0.first; i < m1.first; ++i)
      a.insert(sig(i));
    for (std::size_t i = m1.first; i < m2.first; ++i)
      b.insert(sig(i));
    for (std::size_t i = m0.first; i < m2.first; ++i)
      if (a.count(sig(i)) && b.count(sig(i))) {
        leaves[i].cert = join(outer, inner_of(i, outer));
        drop_group(i, i + 1, group);
      }
    std::set<std::string> ia, ib;
    auto isig = [&](std::size_t i) {
      return insts[i].root + "\n" + insts[i].prefix + "\n" + insts[i].type_name;
    };
    for (std::size_t i = m0.second; i < m1.second; ++i)
      ia.insert(isig(i));
    for (std::size_t i = m1.second; i < m2.second; ++i)
      ib.insert(isig(i));
    for (std::size_t i = m0.second; i < m2.second; ++i)
      if (ia.count(isig(i)) && ib.count(isig(i))) insts[i].cert = outer;
  }
  // The certainty a leaf would have had outside the branch: catalog conditions stay.
  Cert inner_of(std::size_t i, const Cert& outer) {
    const Leaf& l = leaves[i];
    if (l.cert.reason.rfind("if ", 0) == 0 || l.cert.reason.rfind("unless ", 0) == 0 ||
        l.cert.reason.rfind("match ", 0) == 0)
      return outer;
    return l.cert;
  }

  void walk_match(TSNode n, int depth) {
    TSNode scrut = field_of(n, "value");
    // `match (A::load(vb.pp("a")), B::load(..)) { (Ok(a), Ok(b)) => .., (Err(e), _) => fallback }`:
    // the fallback arms load only when the primary failed — two alternatives, never both.
    bool fallback = false;
    for (TSNode ch : named_children(field_of(n, "body")))
      if (kind_of(ch) == "match_arm") {
        std::string p = text(field_of(ch, "pattern"));
        fallback = fallback || p.find("Err(") != std::string::npos;
      }
    const std::string fb_group = fallback ? new_group(n) : std::string();
    if (fallback)
      in_alt(fb_group, n, 0, 2, "primary " + brief(text(scrut)), [&] { walk(scrut, depth); });
    else
      walk(scrut, depth);
    SymValue s = eval(scrut);
    std::string stext = s.concrete() ? text(scrut) : s.text;
    std::vector<TSNode> arms;
    for (TSNode ch : named_children(field_of(n, "body")))
      if (kind_of(ch) == "match_arm") arms.push_back(ch);
    // A concrete scrutinee picks the arm whose literal pattern equals it (or `_`).
    if (s.concrete()) {
      TSNode chosen{};
      for (TSNode arm : arms) {
        TSNode pat = field_of(arm, "pattern");
        std::string p = text(pat);
        if (p == "_" || p == s.display()) {
          chosen = arm;
          break;
        }
      }
      if (!ts_node_is_null(chosen)) {
        walk(field_of(chosen, "value"), depth);
        return;
      }
    }
    Cert outer = frame().cert;
    std::vector<std::pair<std::size_t, std::size_t>> ms;
    ms.push_back(marks());
    const std::string group = fallback ? fb_group : new_group(n);
    for (std::size_t a = 0; a < arms.size(); ++a) {
      TSNode arm = arms[a];
      std::string pat = text(field_of(arm, "pattern"));
      std::string reason = "match " + stext + " => " + pat;
      auto run = [&] {
        under(conditional(outer, reason), [&] {
          frame().scopes.emplace_back();
          shadow_pattern(field_of(arm, "pattern"));
          walk(field_of(arm, "value"), depth);
          frame().scopes.pop_back();
        });
      };
      if (fallback) {
        const bool err = pat.find("Err(") != std::string::npos;
        in_alt(group, n, err ? 1 : 0, 2,
               err ? "fallback when " + brief(text(scrut)) + " fails"
                   : "primary " + brief(text(scrut)),
               run);
      } else {
        in_alt(group, n, static_cast<int>(a), static_cast<int>(arms.size()), reason, run);
      }
      ms.push_back(marks());
    }
    // Leaves every arm registers are as certain as the match (Rust matches are exhaustive).
    if (arms.size() >= 2) {
      std::map<std::string, std::size_t> counts;
      auto sig = [&](std::size_t i) { return leaves[i].root + "\n" + leaves[i].key; };
      for (std::size_t a = 0; a + 1 < ms.size(); ++a) {
        std::set<std::string> seen;
        for (std::size_t i = ms[a].first; i < ms[a + 1].first; ++i)
          seen.insert(sig(i));
        for (const auto& x : seen)
          ++counts[x];
      }
      for (std::size_t i = ms.front().first; i < leaves.size(); ++i)
        if (counts[sig(i)] == arms.size() && !fallback) {
          leaves[i].cert = join(outer, inner_of(i, outer));
          drop_group(i, i + 1, group);
        }
    }
  }

  void walk_args(const std::vector<TSNode>& args, int depth) {
    for (TSNode a : args)
      walk(a, depth);
  }

  bool any_builder(const std::vector<TSNode>& args) {
    for (TSNode a : args)
      if (value_of(a, 0).kind == Value::Kind::builder) return true;
    return false;
  }

  void walk_call(TSNode n, int depth) {
    TSNode fn = field_of(n, "function");
    auto args = named_children(field_of(n, "arguments"));
    if (kind_of(fn) == "generic_function") fn = field_of(fn, "function");
    if (kind_of(fn) == "field_expression") return walk_method_call(n, fn, args, depth);
    walk_args(args, depth);
    std::string path = strip_generics(text(fn));
    if (kind_of(fn) == "identifier") {
      if (Value* v = find_var(path); v && v->kind == Value::Kind::closure) {
        inline_closure(path, v->closure, args, depth);
        return;
      }
      if (Value* v = find_var(path); v && v->kind == Value::Kind::fn_ref) {
        // Each alternative registers under its condition; what all register stays certain.
        auto fns = v->fns;
        Cert outer = frame().cert;
        std::vector<std::pair<std::size_t, std::size_t>> ms{marks()};
        const std::string group = new_group(n);
        const int count = static_cast<int>(fns.size());
        for (std::size_t a = 0; a < fns.size(); ++a) {
          const auto& alt = fns[a];
          const std::string& fpath = alt.first;
          auto call = [&] {
            under(join(outer, alt.second), [&] {
              if (fpath.rfind("item:", 0) == 0)
                call_local(n, std::stoul(fpath.substr(5)), args, path, depth);
              else if (const ConstructorSpec* spec = catalog_.find(fpath))
                register_layer(n, *spec, fpath, args);
            });
          };
          if (count > 1)
            in_alt(group, n, static_cast<int>(a), count,
                   alt.second.reason.empty() ? path : alt.second.reason, call);
          else
            call();
          ms.push_back(marks());
        }
        if (ms.size() == 3) unify(ms[0], ms[1], ms[2], outer, group);
        return;
      }
    }
    if (path == "Some" || path == "Ok" || path == "Err" || path == "Box::new" ||
        path == "Arc::new" || path == "Rc::new")
      return;
    // Resolve: crate-local function or method, or an external path (candle_nn::…).
    auto cands = crate_.resolve_in(frame().fn_item, path);
    std::vector<std::size_t> local;
    std::string external;
    for (const auto& c : cands) {
      if (c.kind == rust::Candidate::Kind::Item) {
        const rust::Item& it = crate_.items()[c.item];
        if ((it.kind == rust::ItemKind::Function || it.kind == rust::ItemKind::Method) &&
            it.cfg.state != rust::Tri::False)
          local.push_back(c.item);
      } else if (c.kind == rust::Candidate::Kind::External) {
        external = c.path;
      }
    }
    if (local.empty() && external.empty() && path.find("::") != std::string::npos) {
      // Unresolved but written fully: `candle_nn::linear(..)` without a `use`.
      external = path;
    }
    if (!external.empty() && local.empty()) {
      std::string first = external.substr(0, external.find("::"));
      if (first == "candle_nn" || first == "nn") {
        if (const ConstructorSpec* spec = catalog_.find(external)) {
          register_layer(n, *spec, external, args);
          return;
        }
      }
      if (any_builder(args))
        diag(n, "unresolved call `" + path +
                    "` receives a VarBuilder; any parameters it registers are unknown");
      return;
    }
    if (local.empty()) {
      if (any_builder(args))
        diag(n, "unresolved call `" + path +
                    "` receives a VarBuilder; any parameters it registers are unknown");
      return;
    }
    if (!any_builder(args)) return;
    if (local.size() > 1) {
      diag(n, "ambiguous call `" + path + "` receives a VarBuilder; subtree not expanded");
      return;
    }
    call_local(n, local[0], args, path, depth);
  }

  void walk_method_call(TSNode n, TSNode fn, const std::vector<TSNode>& args, int depth) {
    TSNode recv = field_of(fn, "value");
    std::string name = text(field_of(fn, "field"));
    // Raw gets on a builder.
    if (name == "get" || name == "get_with_hints" || name == "get_with_hints_dtype" ||
        name == "get_unchecked" || name == "get_unchecked_dtype" || name == "get_no_shape") {
      Value b = value_of(recv, 0);
      if (b.kind == Value::Kind::builder) {
        walk(recv, depth);
        register_raw(n, b, name, args);
        return;
      }
    }
    TSNode closure{};
    for (TSNode a : args)
      if (kind_of(a) == "closure_expression") closure = a;
    if (!ts_node_is_null(closure) &&
        (name == "map" || name == "flat_map" || name == "for_each" || name == "and_then" ||
         name == "then" || name == "map_or" || name == "map_or_else")) {
      walk(recv, depth);
      for (TSNode a : args)
        if (kind_of(a) != "closure_expression") walk(a, depth);
      walk_closure_call(recv, name, closure, depth);
      return;
    }
    if (name == "then_some" && args.size() == 1) {
      walk(recv, depth);
      SymValue c = eval(recv);
      if (c.kind == SymValue::Kind::boolean) {
        if (c.boolean) walk(args[0], depth);
        return;
      }
      in_alt(new_group(n), n, 0, 2, "only when " + c.text, [&] {
        under(conditional(frame().cert, "only when " + c.text), [&] { walk(args[0], depth); });
      });
      return;
    }
    // `A.or_else(|_| B)`: B loads only when A failed — two alternatives, never both.
    if (!ts_node_is_null(closure) && args.size() == 1 &&
        (name == "or_else" || name == "unwrap_or_else")) {
      const std::string group = new_group(n);
      in_alt(group, n, 0, 2, "primary " + brief(text(recv)), [&] { walk(recv, depth); });
      const std::string label = "fallback when " + brief(text(recv)) + " fails";
      in_alt(group, n, 1, 2, label, [&] {
        under(conditional(frame().cert, label), [&] {
          frame().scopes.emplace_back();
          for (TSNode p : named_children(field_of(closure, "parameters")))
            shadow_pattern(kind_of(p) == "parameter" ? field_of(p, "pattern") : p);
          walk(field_of(closure, "body"), depth);
          frame().scopes.pop_back();
        });
      });
      return;
    }
    walk(recv, depth);
    std::size_t before = frame().created.size();
    walk_args(args, depth);
    if (name == "push" && kind_of(recv) == "identifier") {
      if (Value* v = find_var(text(recv)))
        for (std::size_t i = before; i < frame().created.size(); ++i) {
          v->modules.push_back(frame().created[i]);
          insts[frame().created[i]].field = text(recv);
        }
      return;
    }
    // A method of a crate-local value receiving a builder (`self.make(vb)` in a helper, a
    // config's factory) is not followed.
    bool builder_arg = false;
    for (TSNode a : args)
      if (value_of(a, 0).kind == Value::Kind::builder) builder_arg = true;
    if (builder_arg)
      diag(n, "method call `." + name +
                  "(..)` receives a VarBuilder; any parameters it registers are unknown");
  }

  void walk_closure_call(TSNode recv, const std::string& name, TSNode closure, int depth) {
    TSNode params = field_of(closure, "parameters");
    TSNode body = field_of(closure, "body");
    std::vector<TSNode> ps = named_children(params);
    Value rv = value_of(recv, 0);
    // `opt_vb.map(|vb| ..)`: the closure parameter is the builder.
    if (rv.kind == Value::Kind::builder && (name == "map" || name == "and_then")) {
      frame().scopes.emplace_back();
      if (!ps.empty()) bind(first_identifier(ps[0]), rv);
      walk(body, depth);
      frame().scopes.pop_back();
      return;
    }
    if (name == "then") {
      SymValue c = eval(recv);
      if (c.kind == SymValue::Kind::boolean) {
        if (c.boolean) walk(body, depth);
        return;
      }
      in_alt(new_group(recv), recv, 0, 2, "only when " + c.text, [&] {
        under(conditional(frame().cert, "only when " + c.text), [&] { walk(body, depth); });
      });
      return;
    }
    // An iterator (`(0..n).map(|i| ..)`, `xs.iter().enumerate().map(..)`) repeats the body.
    bool iterator = false;
    TSNode it = peel(recv, {"parenthesized_expression"});
    if (!ts_node_is_null(it) && kind_of(it) == "range_expression") iterator = true;
    if (!ts_node_is_null(it) && kind_of(it) == "call_expression") {
      TSNode f = field_of(it, "function");
      if (kind_of(f) == "field_expression" && is_iterator_method(text(field_of(f, "field"))))
        iterator = true;
    }
    if (iterator && (name == "map" || name == "flat_map" || name == "for_each")) {
      TSNode pat = ps.empty() ? TSNode{} : ps[0];
      if (!ts_node_is_null(pat) && kind_of(pat) == "parameter") pat = field_of(pat, "pattern");
      std::string var = first_identifier(pat);
      repeat_body(var, recv, pat, [&] { walk(body, depth); });
      return;
    }
    frame().scopes.emplace_back();
    for (TSNode p : ps)
      shadow_pattern(kind_of(p) == "parameter" ? field_of(p, "pattern") : p);
    walk(body, depth);
    frame().scopes.pop_back();
  }

  void inline_closure(const std::string& name, TSNode closure, const std::vector<TSNode>& args,
                      int depth) {
    if (depth > kMaxDepth) {
      diag(closure, "constructor nesting deeper than " + std::to_string(kMaxDepth) +
                        " levels; subtree not expanded");
      return;
    }
    std::vector<Value> vals;
    for (TSNode a : args)
      vals.push_back(value_of(a, 0));
    frame().scopes.emplace_back();
    // A closure does not see itself: `let linear = |n| linear(.., vb.pp(n))` calls candle-nn.
    bind(name, Value{});
    auto ps = named_children(field_of(closure, "parameters"));
    for (std::size_t i = 0; i < ps.size(); ++i) {
      TSNode p = kind_of(ps[i]) == "parameter" ? field_of(ps[i], "pattern") : ps[i];
      bind(first_identifier(p), i < vals.size() ? vals[i] : Value{});
    }
    walk(field_of(closure, "body"), depth + 1);
    frame().scopes.pop_back();
  }

  void call_local(TSNode n, std::size_t callee, const std::vector<TSNode>& args,
                  const std::string& path, int depth) {
    const rust::Item& it = crate_.items()[callee];
    for (const Frame* f : stack_)
      if (f->fn_item == callee) {
        diag(n, "recursive constructor call `" + path + "`; subtree not expanded");
        return;
      }
    if (depth + 1 > kMaxDepth) {
      diag(n, "constructor nesting deeper than " + std::to_string(kMaxDepth) +
                  " levels; subtree not expanded");
      return;
    }
    if (ts_node_is_null(it.body())) return;
    std::vector<Value> vals;
    for (TSNode a : args)
      vals.push_back(value_of(a, 0));
    std::string owner;
    if (it.impl >= 0) {
      const rust::Impl& impl = crate_.impls()[static_cast<std::size_t>(it.impl)];
      owner = impl.module.empty() ? impl.self_base : impl.module + "::" + impl.self_base;
    }
    Frame f;
    f.fn_item = callee;
    f.file = it.file;
    f.cert = frame().cert;
    f.repeat = frame().repeat;
    f.scopes.emplace_back();
    const bool child =
        !owner.empty() && owner != frame().type_qualified && it.self_kind == rust::SelfKind::None;
    const Value* builder = nullptr;
    for (const Value& v : vals)
      if (v.kind == Value::Kind::builder) {
        builder = &v;
        break;
      }
    if (child && shallow_) {
      constructed_types.insert(owner);
      return;
    }
    if (child) {
      if (insts.size() >= kMaxInstances) {
        truncated = true;
        diag(n, "analysis truncated at " + std::to_string(kMaxInstances) + " module instances");
        return;
      }
      Inst inst;
      inst.type_name = last_segment(owner);
      inst.qualified_type = owner;
      inst.parent = frame().inst;
      inst.root = builder->root;
      inst.prefix = join_key(builder->segs);
      inst.repeat = frame().repeat.empty() ? "" : frame().repeat.back();
      inst.source = site(n);
      inst.cfg = it.cfg.predicates;
      inst.cert = join(frame().cert, builder->cert);
      f.cert = inst.cert;
      insts.push_back(inst);
      f.inst = insts.size() - 1;
      f.type_qualified = owner;
      frame().created.push_back(f.inst);
      constructed_types.insert(owner);
    } else {
      f.inst = frame().inst;
      f.type_qualified = frame().type_qualified;
      f.call_site = site(n);
    }
    for (std::size_t i = 0; i < it.params.size(); ++i) {
      Value v = i < vals.size() ? vals[i] : Value{};
      v.declared_type = it.params[i].type_text;
      f.scopes.back()[it.params[i].name] = std::move(v);
    }
    stack_.push_back(&f);
    walk(it.body(), depth + 1);
    stack_.pop_back();
    if (!child) {
      // Instances an inlined helper created belong to the caller's list, for naming.
      for (std::size_t m : f.created)
        frame().created.push_back(m);
    }
  }

  // A candle-nn constructor: a layer instance plus its catalog leaves.
  void register_layer(TSNode n, const ConstructorSpec& spec, const std::string& path,
                      const std::vector<TSNode>& args) {
    std::size_t vb_arg = spec.params.size();
    if (args.size() != vb_arg + 1) {
      diag(n, "`" + path + "` called with " + std::to_string(args.size()) +
                  " arguments; expected " + std::to_string(vb_arg + 1) +
                  "; no parameters recorded");
      return;
    }
    Value b = value_of(args[vb_arg], 0);
    if (b.kind != Value::Kind::builder) {
      diag(args[vb_arg], "the VarBuilder argument `" + text(args[vb_arg]) + "` of `" + path +
                             "` is not understood; no parameters recorded");
      return;
    }
    if (insts.size() >= kMaxInstances || leaves.size() >= kMaxLeaves) {
      truncated = true;
      diag(n, "analysis truncated at " + std::to_string(insts.size()) + " module instances");
      return;
    }
    std::vector<Value> argv;
    for (std::size_t i = 0; i < vb_arg; ++i)
      argv.push_back(value_of(args[i], 0));
    Cert base = join(frame().cert, b.cert);
    if (!audited_)
      base = join(base, Cert{ir::Confidence::unknown, "candle-nn is not an audited release"});
    Inst layer;
    layer.type_name = spec.layer_type;
    layer.qualified_type = "candle_nn::" + spec.layer_type;
    layer.parent = frame().inst;
    layer.root = b.root;
    layer.prefix = join_key(b.segs);
    layer.repeat = frame().repeat.empty() ? "" : frame().repeat.back();
    layer.source = site(n);
    layer.cert = base;
    layer.layer = true;
    insts.push_back(layer);
    std::size_t li = insts.size() - 1;
    frame().created.push_back(li);
    for (const LeafSpec& ls : spec.leaves) {
      Cert c = base;
      std::vector<AlternativeMark> alts = alt_ctx_;
      if (!ls.condition.empty()) {
        SymValue cond = template_value(ls.condition, spec, argv, args);
        if (cond.kind == SymValue::Kind::boolean && !cond.boolean) continue;
        if (cond.kind != SymValue::Kind::boolean) {
          c = conditional(c, "`" + spec.name + "` registers `" + ls.name + "` only when " +
                                 (cond.concrete() ? cond.display() : cond.text));
          alts.push_back({new_group(n), where(n), c.reason, 0, 2});
        }
      }
      Leaf leaf;
      leaf.alts = std::move(alts);
      leaf.inst = li;
      leaf.root = b.root;
      std::string name = ls.name;
      if (name.find("{{") != std::string::npos) {
        // LSTM names: `weight_ih_l{{config}.layer_idx}` -> weight_ih_l0.
        auto open = name.find("{{");
        auto close = name.find("}", name.find("}", open) + 1);
        SymValue idx = template_value(name.substr(open + 1, close - open - 1), spec, argv, args);
        name = name.substr(0, open) +
               (idx.kind == SymValue::Kind::integer ? std::to_string(idx.integer)
                                                    : "{" + idx.text + "}") +
               name.substr(close + 1);
      }
      std::vector<std::string> segs = b.segs;
      segs.push_back(name);
      leaf.key = join_key(segs);
      leaf.name = name;
      leaf.kind = path;
      std::vector<SymValue> dims;
      for (const auto& d : ls.shape)
        dims.push_back(template_value(d, spec, argv, args));
      leaf.shape = std::move(dims);
      leaf.cert = c;
      leaf.source = site(n);
      leaf.running_state = ls.running_state;
      leaves.push_back(std::move(leaf));
    }
  }

  // Evaluates a catalog template (`{out_dim}`, `{in_channels} / {cfg}.groups`, `4 * {h}`,
  // `{num_channels}.unwrap_or(1)`, `{config}.affine`) over the call's argument values.
  SymValue template_value(const std::string& templ, const ConstructorSpec& spec,
                          const std::vector<Value>& argv, const std::vector<TSNode>& args) {
    // Split into terms on " * " and " / ".
    std::vector<std::string> terms;
    std::vector<char> ops;
    std::size_t pos = 0;
    while (true) {
      auto m = templ.find(" * ", pos);
      auto d = templ.find(" / ", pos);
      auto next = std::min(m, d);
      terms.push_back(
          templ.substr(pos, next == std::string::npos ? std::string::npos : next - pos));
      if (next == std::string::npos) break;
      ops.push_back(templ[next + 1]);
      pos = next + 3;
    }
    SymValue acc = term_value(terms[0], spec, argv, args);
    for (std::size_t i = 0; i < ops.size(); ++i) {
      SymValue r = term_value(terms[i + 1], spec, argv, args);
      if (acc.kind == SymValue::Kind::integer && r.kind == SymValue::Kind::integer) {
        if (ops[i] == '*')
          acc = SymValue::of_int(acc.integer * r.integer);
        else if (r.integer != 0)
          acc = SymValue::of_int(acc.integer / r.integer);
        else
          acc = SymValue::symbolic(acc.display() + " / 0", "division by zero");
        continue;
      }
      if (r.kind == SymValue::Kind::integer && r.integer == 1) continue;  // `x / 1`, `x * 1`
      auto show = [](const SymValue& v) {
        std::string t = v.concrete() ? v.display() : v.text;
        return t.find(' ') != std::string::npos ? "(" + t + ")" : t;
      };
      std::string reason = !acc.concrete() ? acc.reason : r.reason;
      acc = SymValue::symbolic(show(acc) + " " + ops[i] + " " + show(r), reason);
    }
    return acc;
  }

  SymValue term_value(const std::string& term, const ConstructorSpec& spec,
                      const std::vector<Value>& argv, const std::vector<TSNode>& args) {
    if (term.empty() || term[0] != '{') {
      if (auto v = parse_literal("integer_literal", term)) return *v;
      return SymValue::symbolic(term, "catalog term");
    }
    auto close = term.find('}');
    std::string pname = term.substr(1, close - 1);
    std::string access = term.substr(close + 1);
    auto it = std::find(spec.params.begin(), spec.params.end(), pname);
    if (it == spec.params.end()) return SymValue::symbolic(term, "catalog placeholder");
    std::size_t idx = static_cast<std::size_t>(it - spec.params.begin());
    const Value& v = argv[idx];
    std::string arg_text = text(args[idx]);
    SymValue base =
        v.kind == Value::Kind::sym ? v.sym : SymValue::symbolic(arg_text, "not a value");
    if (access.empty()) return base;
    if (access == ".unwrap_or(1)") {
      if (base.kind == SymValue::Kind::none) return SymValue::of_int(1);
      if (base.concrete()) return base;
      return SymValue::symbolic(base.text + ".unwrap_or(1)", base.reason);
    }
    std::string field = access.substr(1);
    bool is_some = false;
    if (field.size() > 10 && field.compare(field.size() - 10, 10, ".is_some()") == 0) {
      field.resize(field.size() - 10);
      is_some = true;
    }
    std::optional<SymValue> fv;
    if (v.kind == Value::Kind::layer_config) {
      fv = layer_field(v, field);
    } else if (v.kind == Value::Kind::sym && v.sym.kind == SymValue::Kind::real) {
      // An f64 eps converts through `From<f64>` with candle-nn's defaults (affine = true).
      fv = layer_config_default(field, "default");
    } else if (v.kind == Value::Kind::sym && !v.sym.concrete() && is_float(args[idx])) {
      // `cfg.layer_norm_eps` declared f64: it converts like a literal eps.
      fv = layer_config_default(field, "default");
    }
    if (!fv)
      return SymValue::symbolic(arg_text + "." + field + (is_some ? ".is_some()" : ""),
                                "`" + arg_text + "` is not a config literal");
    if (is_some) {
      if (fv->kind == SymValue::Kind::none) return SymValue::of_bool(false);
      if (fv->concrete()) return SymValue::of_bool(true);
      return SymValue::symbolic(fv->text + ".is_some()", fv->reason);
    }
    return *fv;
  }

  // A local bound to a parameter declared as an integer (`fn rms_norm(size: usize, ..)`).
  bool scalar_param(const std::string& name) {
    const Value* v = find_var(name);
    if (v == nullptr) return false;
    for (const char* t : {"usize", "u32", "u64", "i32", "i64", "isize"})
      if (v->declared_type == t) return true;
    return false;
  }

  // A float-typed expression: a float literal, or a config field declared f32/f64.
  bool is_float(TSNode arg) {
    if (kind_of(arg) == "float_literal") return true;
    if (kind_of(arg) != "field_expression") return false;
    Value base = value_of(field_of(arg, "value"), 0);
    if (base.kind != Value::Kind::config) return false;
    std::string t = binding_.field_type(base.config, text(field_of(arg, "field")));
    return t == "f64" || t == "f32";
  }

  void register_raw(TSNode n, const Value& b, const std::string& method,
                    const std::vector<TSNode>& args) {
    bool name_first =
        method == "get_unchecked" || method == "get_unchecked_dtype" || method == "get_no_shape";
    std::size_t name_idx = name_first ? 0 : 1;
    if (args.size() <= name_idx) {
      diag(n, "`." + method + "(..)` without a tensor name; key is unknown");
      return;
    }
    if (leaves.size() >= kMaxLeaves) {
      truncated = true;
      return;
    }
    Leaf leaf;
    leaf.inst = frame().inst;
    leaf.root = b.root;
    leaf.kind = method;
    std::string name;
    TSNode name_node = peel(args[name_idx], {"reference_expression"});
    SymValue nv = eval(name_node);
    if (nv.kind == SymValue::Kind::string) {
      name = nv.text;
    } else if (kind_of(name_node) == "macro_invocation") {
      name = format_template(name_node);
    } else {
      diag(args[name_idx],
           "non-literal tensor name `" + text(args[name_idx]) + "`; key is unknown");
      name = "{" + text(args[name_idx]) + "}";
    }
    std::vector<std::string> segs = b.segs;
    for (auto& s : split_key(name))
      segs.push_back(s);
    leaf.key = join_key(segs);
    leaf.name = name;
    if (!name_first) {
      TSNode shape = peel(args[0], {"reference_expression", "parenthesized_expression"});
      std::string_view sk = kind_of(shape);
      std::vector<SymValue> dims;
      if (sk == "tuple_expression" || sk == "array_expression" || sk == "unit_expression") {
        for (TSNode d : named_children(shape))
          dims.push_back(eval(d));
        leaf.shape = std::move(dims);
      } else {
        SymValue s = eval(shape);
        if (s.kind == SymValue::Kind::integer) {
          leaf.shape = std::vector<SymValue>{s};
        } else if (sk == "identifier" && scalar_param(text(shape))) {
          leaf.shape = std::vector<SymValue>{s};  // `size: usize` is one dimension
        } else if (sk == "identifier" || sk == "call_expression" || sk == "macro_invocation") {
          leaf.shape_reason = "shape `" + text(shape) + "` has an unknown rank";
        } else {
          leaf.shape = std::vector<SymValue>{s};
        }
      }
    } else {
      leaf.shape_reason = "`" + method + "` takes no shape";
    }
    leaf.cert = join(frame().cert, b.cert);
    leaf.source = site(n);
    leaf.alts = alt_ctx_;
    leaves.push_back(std::move(leaf));
  }
};

ir::Confidence confidence_of(const Cert& c) {
  return c.level;
}

bool mentions_self_or(const std::string& ret, const std::string& type_name) {
  return contains_word(ret, "Self") || contains_word(ret, type_name);
}

void build_inventory_here(const rust::Crate& crate, const InventoryOptions& opts, ir::ModelIr& ir) {
  const LayerCatalog& catalog = LayerCatalog::for_version("0.11.0");
  const bool audited = LayerCatalog::for_version(opts.candle_nn_version).audited();
  ConfigBinding binding(crate, opts.config);

  // Candidate types: structs with an associated constructor taking a VarBuilder and returning
  // Self (`new`, else `load`, else the alphabetically first).
  struct Candidate {
    std::size_t type_item, ctor;
  };
  std::vector<Candidate> cands;
  // Associated functions taking a VarBuilder, by the qualified type of their impl.
  std::map<std::string, std::vector<std::size_t>> vb_methods;
  for (std::size_t m = 0; m < crate.items().size(); ++m) {
    const rust::Item& f = crate.items()[m];
    if (f.kind != rust::ItemKind::Method || f.impl < 0 || f.self_kind != rust::SelfKind::None)
      continue;
    bool vb = false;
    for (const auto& p : f.params)
      vb = vb || is_builder_type(crate, f.module, p.type_text);
    if (!vb) continue;
    const rust::Impl& impl = crate.impls()[static_cast<std::size_t>(f.impl)];
    vb_methods[impl.module.empty() ? impl.self_base : impl.module + "::" + impl.self_base]
        .push_back(m);
  }
  for (std::size_t i = 0; i < crate.items().size(); ++i) {
    const rust::Item& t = crate.items()[i];
    if (t.kind != rust::ItemKind::Struct || t.cfg.state == rust::Tri::False) continue;
    std::vector<std::size_t> methods;
    for (const auto& name : std::vector<std::string>{"new", "load"})
      for (std::size_t m : crate.methods(i, name))
        methods.push_back(m);
    std::size_t chosen = SIZE_MAX;
    auto takes_vb = [&](std::size_t m) {
      const rust::Item& f = crate.items()[m];
      if (f.self_kind != rust::SelfKind::None || f.cfg.state == rust::Tri::False) return false;
      if (f.impl >= 0 && !crate.impls()[static_cast<std::size_t>(f.impl)].trait.empty())
        return false;
      bool vb = false;
      for (const auto& p : f.params)
        if (is_builder_type(crate, f.module, p.type_text)) vb = true;
      return vb && mentions_self_or(f.return_type, t.name);
    };
    for (std::size_t m : methods)
      if (takes_vb(m)) {
        chosen = m;
        break;
      }
    if (chosen == SIZE_MAX) {
      // Any other associated function with a VarBuilder returning Self, alphabetically first.
      std::string best;
      auto it = vb_methods.find(t.qualified);
      if (it != vb_methods.end())
        for (std::size_t m : it->second) {
          if (!takes_vb(m)) continue;
          if (chosen == SIZE_MAX || crate.items()[m].name < best) {
            chosen = m;
            best = crate.items()[m].name;
          }
        }
    }
    if (chosen == SIZE_MAX) continue;
    cands.push_back({i, chosen});
  }

  // Walk every candidate; roots are the public ones no other candidate builds (or --root).
  struct Result {
    Candidate cand;
    std::unique_ptr<Walker> walker;
  };
  std::vector<Result> results;
  std::set<std::string> built_elsewhere;
  for (const auto& c : cands) {
    const rust::Item& t = crate.items()[c.type_item];
    if (!opts.root.empty()) {
      if (t.name == opts.root || t.qualified == opts.root) results.push_back({c, nullptr});
      continue;
    }
    // Roots are the public candidates no other candidate builds; finding them needs every
    // walk, unbound (the config belongs to the root only).
    Walker w(crate, catalog, audited, binding, false);
    w.set_shallow();
    w.run_root(c.type_item, c.ctor);
    for (const auto& q : w.constructed_types)
      if (q != t.qualified) built_elsewhere.insert(q);
    if (t.visibility == rust::Visibility::Public) results.push_back({c, nullptr});
  }
  if (!opts.root.empty() && results.size() > 1) {
    std::string names;
    for (const auto& r : results)
      names += (names.empty() ? "" : ", ") + crate.items()[r.cand.type_item].qualified;
    throw InputError("component root `" + opts.root + "`",
                     "ambiguous: " + names + " all match; pass a module-qualified name");
  }
  if (!opts.root.empty() && results.empty())
    throw InputError("component root `" + opts.root + "`",
                     "no struct named `" + opts.root +
                         "` with a constructor taking a VarBuilder was found in the crate");
  std::erase_if(results, [&](const Result& r) {
    return built_elsewhere.count(crate.items()[r.cand.type_item].qualified) > 0;
  });
  for (auto& r : results) {
    r.walker = std::make_unique<Walker>(crate, catalog, audited, binding, opts.config != nullptr);
    r.walker->set_args(&opts.args);
    r.walker->run_root(r.cand.type_item, r.cand.ctor);
  }
  for (const auto& [name, value] : opts.args) {
    bool used = false;
    std::string params;
    for (const auto& r : results) {
      used = used || r.walker->used_args.count(name) > 0;
      for (const auto& p : crate.items()[r.cand.ctor].params)
        params += (params.empty() ? "" : ", ") + p.name;
    }
    if (!used)
      throw InputError("--arg " + name,
                       "no analyzed root constructor takes a parameter `" + name + "`" +
                           (params.empty() ? std::string() : " (parameters: " + params + ")"));
  }

  auto add_finding = [&](std::string rule, ir::Severity sev, ir::Confidence conf, std::string msg,
                         std::string source, std::vector<std::string> related) {
    ir.findings.push_back(ir::make_finding(std::move(rule), sev, conf, std::move(msg),
                                           std::move(source), std::move(related)));
  };

  for (auto& r : results) {
    const rust::Item& t = crate.items()[r.cand.type_item];
    Walker& w = *r.walker;
    ir::Component comp;
    comp.id = ir::component_id(t.qualified);
    comp.name = t.name;
    comp.qualified_name = t.qualified;
    comp.source = crate.source(r.cand.type_item);
    const rust::Item& ctor = crate.items()[r.cand.ctor];
    comp.constructor = ir::function_id(ctor.qualified, ctor.cfg.predicates);
    for (const auto& p : ctor.params)
      if (is_builder_type(crate, ctor.module, p.type_text)) {
        ir::Builder b;
        b.name = p.name;
        b.evidence.push_back({ir::EvidenceKind::source, ir::Confidence::proven,
                              crate.source(r.cand.ctor), "constructor parameter `" + p.name + "`"});
        comp.builders.push_back(std::move(b));
      }
    comp.evidence.push_back({ir::EvidenceKind::source, ir::Confidence::proven, comp.source,
                             "public model API type with a VarBuilder constructor"});

    // Modules: ids by occurrence of (root, prefix, type, cfg) in walk order.
    ir::OccurrenceCounter occ;
    std::vector<std::string> module_ids(w.insts.size());
    for (std::size_t i = 0; i < w.insts.size(); ++i) {
      const Inst& in = w.insts[i];
      std::string key = in.root + '\0' + in.prefix + '\0' + in.type_name;
      for (const auto& c : in.cfg)
        key += '\0' + c;
      module_ids[i] =
          ir::module_id(comp.id, in.root, in.prefix, in.type_name, in.cfg, occ.next(key));
    }
    for (std::size_t i = 0; i < w.insts.size(); ++i) {
      const Inst& in = w.insts[i];
      ir::Module m;
      m.id = module_ids[i];
      m.component = comp.id;
      if (in.parent) m.parent = module_ids[*in.parent];
      m.type_name = in.type_name;
      m.qualified_type = in.qualified_type;
      if (!in.field.empty()) m.field = in.field;
      m.builder_root = in.root;
      m.prefix = in.prefix;
      if (!in.repeat.empty()) m.repeat = in.repeat;
      m.source = in.source;
      m.confidence = confidence_of(in.cert);
      comp.modules.push_back(m.id);
      ir.modules.push_back(std::move(m));
    }
    // Parameters: (root, key) duplicates collapse, least certain wins.
    std::map<std::pair<std::string, std::string>, std::size_t> seen;
    std::vector<std::size_t> order;
    for (std::size_t i = 0; i < w.leaves.size(); ++i) {
      auto k = std::make_pair(w.leaves[i].root, w.leaves[i].key);
      auto it = seen.find(k);
      if (it == seen.end()) {
        seen.emplace(k, i);
        order.push_back(i);
      } else {
        if (w.leaves[i].cert.level > w.leaves[it->second].cert.level)
          w.leaves[it->second].cert = w.leaves[i].cert;
        // Registered outside any undecided branch too: present whichever alternative runs.
        if (w.leaves[i].alts.empty()) w.leaves[it->second].alts.clear();
      }
    }
    for (std::size_t i : order) {
      const Leaf& l = w.leaves[i];
      ir::Parameter p;
      p.id = ir::parameter_id(comp.id, l.root, l.key);
      p.component = comp.id;
      p.module = module_ids[l.inst];
      p.key = l.key;
      p.builder_root = l.root;
      p.role = l.running_state ? ir::ParameterRole::running_state : ir::ParameterRole::unknown;
      p.kind = l.kind;
      if (l.shape) {
        std::vector<std::string> sym;
        std::vector<std::uint64_t> conc;
        bool all = true;
        for (const auto& d : *l.shape) {
          sym.push_back(d.concrete() ? d.display() : d.text);
          if (d.kind == SymValue::Kind::integer && d.integer >= 0)
            conc.push_back(static_cast<std::uint64_t>(d.integer));
          else
            all = false;
        }
        // A dimension the bound config makes negative, or a shape whose element count does not
        // fit 64 bits, is no shape a checkpoint can have: the shape stays symbolic and the config
        // is named, instead of a wrapped count.
        bool negative = false;
        for (const auto& d : *l.shape)
          negative = negative || (d.kind == SymValue::Kind::integer && d.integer < 0);
        std::uint64_t elems = 1;
        bool overflow = false;
        for (auto d : conc)
          overflow = overflow || __builtin_mul_overflow(elems, d, &elems);
        std::string shape_text;
        for (const auto& d : p.symbolic_shape.emplace(std::move(sym)))
          shape_text += (shape_text.empty() ? "" : ", ") + d;
        if (negative || (all && overflow))
          add_finding("config-binding", ir::Severity::error, ir::Confidence::proven,
                      "parameter `" + l.key + "` gets shape [" + shape_text + "] from the bound " +
                          "config: " +
                          (negative ? "a dimension is negative"
                                    : "its element count does not fit in 64 bits") +
                          "; check the config values its dimensions are read from",
                      l.source, {comp.id});
        else if (all)
          p.shape = std::move(conc);
      }
      p.confidence = confidence_of(l.cert);
      std::string reason = l.cert.reason;
      if (!l.shape_reason.empty()) reason += (reason.empty() ? "" : "; ") + l.shape_reason;
      if (!reason.empty()) p.reason = reason;
      p.source = l.source;
      p.evidence.push_back({ir::EvidenceKind::source, p.confidence, l.source,
                            "parameter registered through " + l.kind});
      for (const auto& m : l.alts)
        p.evidence.push_back(
            {ir::EvidenceKind::source, ir::Confidence::conditional, m.site, alternative_detail(m)});
      comp.parameters.push_back(p.id);
      ir.parameters.push_back(std::move(p));
    }
    for (const auto& f : ir.functions)
      if (f.is_entrypoint && f.owner_type && *f.owner_type == t.qualified)
        comp.entrypoints.push_back(f.id);
    if (!w.unbound_config.empty() && opts.config != nullptr)
      add_finding("config-binding", ir::Severity::warning, ir::Confidence::proven,
                  opts.config->origin + " is not bound to `" + w.unbound_config +
                      "`: it does not derive Deserialize and no crate-local conversion from a " +
                      "Deserialize struct builds it, so every field it gives stays symbolic",
                  comp.source, {comp.id});
    for (const auto& d : w.diags)
      add_finding("structure-unresolved", ir::Severity::warning, ir::Confidence::proven, d.message,
                  d.source, {comp.id});
    ir.components.push_back(std::move(comp));
  }
  if (opts.config != nullptr && results.size() > 1)
    add_finding("config-binding", ir::Severity::information, ir::Confidence::proven,
                opts.config->origin + " is bound to each of the " + std::to_string(results.size()) +
                    " component roots; choose one root to bind it to one model",
                "", {});
  for (const auto& d : binding.diagnostics())
    add_finding("config-binding", ir::Severity::warning, ir::Confidence::proven, d.message,
                d.source, {});
}

}  // namespace

std::string alternative_detail(const AlternativeMark& m) {
  return "alternative " + std::to_string(m.index + 1) + " of " + std::to_string(m.count) + " (" +
         m.label + ") [group " + m.group + "]";
}

std::optional<AlternativeMark> parse_alternative(const ir::Evidence& e) {
  const std::string& d = e.detail;
  if (d.rfind("alternative ", 0) != 0 || d.empty() || d.back() != ']') return std::nullopt;
  auto g = d.rfind(" [group ");
  auto of = d.find(" of ");
  auto open = d.find(" (", of == std::string::npos ? 0 : of);
  if (g == std::string::npos || of == std::string::npos || open == std::string::npos || open > g ||
      g < 1 || d[g - 1] != ')')
    return std::nullopt;
  AlternativeMark m;
  try {
    m.index = std::stoi(d.substr(12, of - 12)) - 1;
    m.count = std::stoi(d.substr(of + 4, open - of - 4));
  } catch (const std::exception&) {
    return std::nullopt;
  }
  if (m.index < 0 || m.count < 1 || m.index >= m.count) return std::nullopt;
  m.label = d.substr(open + 2, g - 1 - open - 2);
  m.group = d.substr(g + 8, d.size() - g - 9);
  m.site = e.source.value_or("");
  return m;
}

void build_inventory(const rust::Crate& crate, const InventoryOptions& opts, ir::ModelIr& ir) {
  util::run_on_deep_stack([&] { build_inventory_here(crate, opts, ir); });
}

}  // namespace cg::analysis
