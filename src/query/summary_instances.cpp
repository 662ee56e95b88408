#include "query/summary_instances.hpp"

#include <algorithm>
#include <cctype>
#include <memory>

#include "analysis/op_catalog.hpp"
#include "query/summary_table.hpp"
#include "util/text.hpp"

namespace cg::query {
namespace {

bool all_digits(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

bool plain_name(const std::string& s) {
  return !s.empty() && !std::isdigit(static_cast<unsigned char>(s[0])) &&
         std::all_of(s.begin(), s.end(), [](char c) {
           return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
         });
}

std::optional<std::uint64_t> mul(std::uint64_t a, std::uint64_t b) {
  std::uint64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

// An operation that may multiply-accumulate but has no count: a matrix product or convolution
// whose shapes were not derived, or a call the catalog has no rule for (`repeat_kv`, a tied
// `lm_head.forward` on a tensor, not a module).
// An inlined crate-local call computes nothing itself: its body's operations are listed and
// counted where they run.
bool may_multiply(const ir::Operation& o) {
  if (o.shape_rule == "inlined_call") return false;
  // A candle-nn Linear or Conv layer's forward multiplies whatever its input's shape: with no
  // shape it is a figure missing, not a zero (a MoE expert fed rows the router picked).
  if (o.qualified_name) {
    const auto& t = analysis::op_traits(*o.qualified_name);
    if (t.linear_weight || t.conv_spatial > 0) return true;
  }
  return o.shape_rule == "matrix_product" || o.shape_rule == "unknown" ||
         o.name.find("conv") != std::string::npos;
}

void names_of(const std::string& key, std::set<std::string>& out) {
  std::size_t pos = 0;
  while (!key.empty() && pos <= key.size()) {
    auto star = key.find('*', pos);
    out.insert(key.substr(pos, star == std::string::npos ? star : star - pos));
    pos = star == std::string::npos ? key.size() + 1 : star + 1;
  }
}

// A call's figures by the undecided branches they were counted in (ir::BranchArm): per branch
// point, one sum per arm; folding adds, per point, the least that every arm reaches (termwise,
// so a symbolic sum stays a lower bound of each arm), marked when the arms differ. The rest of a
// body after arms that returned stands in several arms and adds to each.
class BranchTree {
 public:
  // The sum the items of branch path `path` (from index `from` on) add to.
  SymSum& at(const std::vector<ir::BranchArm>& path, std::size_t from) {
    BranchTree* t = this;
    for (std::size_t i = from; i < path.size(); ++i) {
      const ir::BranchArm& b = path[i];
      Point& p = t->points_[{b.site, b.offset}];
      p.count = std::max<std::uint64_t>(p.count, b.count);
      p.dead.insert(b.dead.begin(), b.dead.end());
      auto& kid = p.arms[b.arms];
      if (!kid) kid = std::make_unique<BranchTree>();
      t = kid.get();
    }
    return t->base_;
  }

  SymSum fold() const {
    SymSum out = base_;
    for (const auto& [site, p] : points_) {
      // An arm that never completes (a panic, `return Err(..)`) is no alternative.
      std::map<std::uint64_t, SymSum> arms;
      for (std::uint64_t a = 0; a < p.count; ++a)
        if (!p.dead.count(a)) arms[a];
      for (const auto& [which, tree] : p.arms) {
        SymSum sum = tree->fold();
        for (auto a : which)
          if (auto it = arms.find(a); it != arms.end()) it->second.add(sum, 1);
      }
      std::vector<SymSum> live;
      for (auto& [a, sum] : arms)
        live.push_back(std::move(sum));
      out.add(least(live, site.first), 1);
    }
    return out;
  }

 private:
  struct Point {
    std::uint64_t count = 0;
    std::set<std::uint64_t> dead;
    std::map<std::vector<std::uint64_t>, std::unique_ptr<BranchTree>> arms;
  };
  SymSum base_;
  std::map<std::pair<std::string, std::uint64_t>, Point> points_;

  static SymSum least(const std::vector<SymSum>& arms, const std::string& site) {
    SymSum out;
    if (arms.empty()) return out;
    out.terms = arms.front().terms;
    bool differ = false;
    for (const SymSum& a : arms) {
      out.overflow = out.overflow || a.overflow;
      out.missing.insert(a.missing.begin(), a.missing.end());
      out.branches.insert(a.branches.begin(), a.branches.end());
      out.missing_ops = std::max(out.missing_ops, a.missing_ops);
      if (a.terms != arms.front().terms) differ = true;
      for (auto it = out.terms.begin(); it != out.terms.end();) {
        auto o = a.terms.find(it->first);
        if (o == a.terms.end()) {
          it = out.terms.erase(it);
          continue;
        }
        it->second = std::min(it->second, o->second);
        ++it;
      }
    }
    if (differ) out.branches.insert(site);
    return out;
  }
};

}  // namespace

bool SymSum::add(const std::string& expr, std::uint64_t times, const InputDims& dims) {
  std::vector<std::string> syms;
  std::optional<std::uint64_t> n = times;
  std::size_t pos = 0;
  while (pos <= expr.size()) {
    auto star = expr.find('*', pos);
    std::string f = expr.substr(pos, star == std::string::npos ? std::string::npos : star - pos);
    pos = star == std::string::npos ? expr.size() + 1 : star + 1;
    while (!f.empty() && f.front() == ' ')
      f.erase(f.begin());
    while (!f.empty() && f.back() == ' ')
      f.pop_back();
    if (all_digits(f) && f.size() <= 19) {
      if (n) n = mul(*n, std::stoull(f));
    } else if (plain_name(f)) {
      auto it = dims.find(f);
      if (it == dims.end())
        syms.push_back(f);
      else if (n)
        n = mul(*n, it->second);
    } else if (auto q = dimension_quotient(f)) {  // `(h/4)`: ⌊h / 4⌋
      auto it = dims.find(std::string(q->first));
      if (it == dims.end())
        syms.push_back("(" + std::string(q->first) + "/" + std::to_string(q->second) + ")");
      else if (n)
        n = mul(*n, it->second / q->second);
    } else {
      return false;
    }
  }
  if (!n) {
    overflow = true;
    return true;
  }
  // By name: `b*(h/2)*(w/2)`, a pooled dimension beside its name.
  auto bare = [](const std::string& x) { return x.starts_with('(') ? x.substr(1) : x; };
  std::sort(syms.begin(), syms.end(),
            [&](const std::string& x, const std::string& y) { return bare(x) < bare(y); });
  std::string key;
  for (const auto& s : syms)
    key += (key.empty() ? "" : "*") + s;
  std::uint64_t& t = terms[key];
  if (__builtin_add_overflow(t, *n, &t)) overflow = true;
  return true;
}

void SymSum::add(const SymSum& o, std::optional<std::uint64_t> times) {
  overflow = overflow || o.overflow;
  missing.insert(o.missing.begin(), o.missing.end());
  branches.insert(o.branches.begin(), o.branches.end());
  if (!times) {  // a family of unknown count: none of it is summed
    if (!o.terms.empty() || o.missing_ops > 0) {
      missing.insert("(a family of unknown count)");
      ++missing_ops;
    }
    return;
  }
  if (o.missing_ops > 0) {
    auto m = mul(o.missing_ops, *times);
    missing_ops =
        m && !__builtin_add_overflow(missing_ops, *m, &missing_ops) ? missing_ops : UINT64_MAX;
  }
  for (const auto& [k, v] : o.terms) {
    auto n = mul(v, *times);
    std::uint64_t& t = terms[k];
    if (!n || __builtin_add_overflow(t, *n, &t)) overflow = true;
  }
}

void SymSum::scale(std::uint64_t times) {
  SymSum copy = *this;
  terms.clear();
  missing_ops = 0;
  add(copy, times);
}

std::string SymSum::text() const {
  if (overflow) return "over 2^64";
  std::string out;
  for (const auto& [k, v] : terms)
    out += (out.empty() ? "" : " + ") +
           (k.empty() ? group_thousands(v) : k + "*" + group_thousands(v));
  return out;
}

std::optional<std::uint64_t> SymSum::number() const {
  if (overflow) return std::nullopt;
  if (terms.empty()) return 0;
  if (terms.size() == 1 && terms.begin()->first.empty()) return terms.begin()->second;
  return std::nullopt;
}

InstanceIndex::InstanceIndex(const ir::ModelIr& ir, const InputDims& dims) : dims_(dims) {
  for (const auto& o : ir.operations)
    ops_[o.id] = &o;
  for (const auto& t : ir.tensors)
    tensors_[t.id] = &t;
  std::set<std::string> roots;  // the components' root modules
  for (const auto& m : ir.modules) {
    modules_[m.id] = &m;
    if (!m.parent) roots.insert(m.id);
  }
  std::map<std::string, std::string> path_of_op;
  for (const auto& c : ir.instance_calls)
    for (const auto& id : c.operations)
      if (auto [it, fresh] = path_of_op.emplace(id, c.path); !fresh && it->second != c.path)
        shared_ops_.insert(id);
  std::set<std::string> rooted;  // root modules whose main run is chosen
  for (const auto& c : ir.instance_calls)
    if (c.parent) kids_[*c.parent].push_back(&c);
  // The main run is the root's `forward`, else its `forward_t` (a `ModuleT` model).
  for (const char* method : {"forward", "forward_t"})
    for (const auto& c : ir.instance_calls) {
      if (c.parent || c.method != method || c.modules.size() != 1 || !roots.count(c.modules[0]))
        continue;
      if (rooted.insert(c.modules[0]).second) main_roots_.push_back(&c);
    }
  // A root with no forward of its own (whisper's `Whisper`, holding an encoder and a decoder
  // that each have one): its forward pass is its children's, each run once, in module order.
  for (const auto& root : roots) {
    if (rooted.count(root)) continue;
    for (const auto& m : ir.modules) {
      if (m.parent != root) continue;
      for (const char* method : {"forward", "forward_t"}) {
        const auto it = std::find_if(ir.instance_calls.begin(), ir.instance_calls.end(),
                                     [&](const ir::InstanceCall& c) {
                                       return !c.parent && c.method == method &&
                                              c.modules.size() == 1 && c.modules[0] == m.id;
                                     });
        if (it == ir.instance_calls.end()) continue;
        main_roots_.push_back(&*it);
        children_run_ = true;
        break;
      }
    }
  }
  // Only the main runs name a row's call: another entrypoint (`decode`) is not one forward pass.
  std::vector<const ir::InstanceCall*> todo(main_roots_.begin(), main_roots_.end());
  std::vector<const ir::InstanceCall*> runs;
  while (!todo.empty()) {
    const ir::InstanceCall* c = todo.back();
    todo.pop_back();
    runs.push_back(c);
    for (const auto& m : c->modules)
      by_module_.emplace(m, c);
    auto k = kids_.find(c->id);
    if (k != kids_.end()) todo.insert(todo.end(), k->second.rbegin(), k->second.rend());
    auto note = [&](const std::optional<std::string>& e) {
      if (!e) return;
      SymSum probe;
      const InputDims none;
      if (probe.add(*e, 1, none))
        for (const auto& [key, n] : probe.terms)
          names_of(key, input_names_);
    };
    note(c->mult_adds);
    for (const auto& id : c->operations) {
      if (auto f = c->operation_mult_adds.find(id); f != c->operation_mult_adds.end()) {
        if (!f->second.empty()) note(f->second);
      } else if (auto o = ops_.find(id); o != ops_.end()) {
        note(o->second->mult_adds);
      }
    }
  }
  // The names the roots' inputs are written in (`input_ids: [b, seq_len]`): what a frame's own
  // names are tied to.
  for (const auto* c : main_roots_)
    for (const auto& f : ir.functions)
      if (f.id == c->entrypoint)
        for (const auto& in : f.tensor_inputs)
          if (const ir::Tensor* t = tensor(in))
            for (const auto& d : t->shape.dimensions)
              if (plain_name(d.expr) && d.expr != "_") root_names_.insert(d.expr);
  for (const auto* c : runs)
    bind_frame_names(*c);
}

const ir::Operation* InstanceIndex::op(const std::string& id) const {
  auto it = ops_.find(id);
  return it == ops_.end() ? nullptr : it->second;
}

const ir::Tensor* InstanceIndex::tensor(const std::string& id) const {
  auto it = tensors_.find(id);
  return it == tensors_.end() ? nullptr : it->second;
}

const std::vector<const ir::InstanceCall*>& InstanceIndex::kids(const ir::InstanceCall& c) const {
  static const std::vector<const ir::InstanceCall*> none;
  auto it = kids_.find(c.id);
  return it == kids_.end() ? none : it->second;
}

bool InstanceIndex::root_dimension(const std::string& expr) const {
  if (all_digits(expr)) return true;
  auto q = dimension_quotient(expr);
  std::string name = q ? std::string(q->first) : expr;
  return plain_name(name) && (input_names_.count(name) || dims_.count(name));
}

ir::TensorShape InstanceIndex::raw_shape(const ir::InstanceCall& c,
                                         const std::string& op_id) const {
  const ir::Operation* o = op(op_id);
  if (!c.function && c.output_shape.rank && c.call_site && *c.call_site == op_id)
    return c.output_shape;  // a layer call's own output shape is this instance's
  if (auto f = c.operation_shapes.find(op_id); f != c.operation_shapes.end() && f->second.rank)
    return f->second;
  if (const ir::Tensor* t = o ? tensor(o->output) : nullptr) return t->shape;
  return {};
}

void InstanceIndex::bind_frame_names(const ir::InstanceCall& c) {
  auto& names = frame_names_[c.id];
  // The shape of a tensor as this frame made it (its operation's shape in this call), else its
  // own.
  std::map<std::string, std::string> made_by;  // tensor -> operation of this call
  for (const auto& id : c.operations)
    if (const ir::Operation* o = op(id)) made_by[o->output] = id;
  auto shape_of = [&](const std::string& tid) -> ir::TensorShape {
    if (auto m = made_by.find(tid); m != made_by.end()) return raw_shape(c, m->second);
    const ir::Tensor* t = tensor(tid);
    return t ? t->shape : ir::TensorShape{};
  };
  // A name of the root's input (or `--input-shape`'s), a number, or such a name divided.
  auto rooted = [&](const std::string& e) {
    if (all_digits(e)) return true;
    auto q = dimension_quotient(e);
    std::string name = q ? std::string(q->first) : e;
    return plain_name(name) && (root_names_.count(name) || dims_.count(name));
  };
  auto local = [&](const std::string& e) { return plain_name(e) && e != "_" && !rooted(e); };
  auto tie = [&](const std::vector<ir::Dimension>& a, const std::vector<ir::Dimension>& b) {
    for (std::size_t i = 0; i < a.size(); ++i) {
      const std::string& x = a[i].expr;
      const std::string& y = b[i].expr;
      if (local(x) && rooted(y)) names.emplace(x, y);
      if (local(y) && rooted(x)) names.emplace(y, x);
    }
  };
  // Twice: a name tied by one operation may make another's input known.
  for (int pass = 0; pass < 2; ++pass)
    for (const auto& id : c.operations) {
      const ir::Operation* o = op(id);
      if (!o || o->inputs.empty()) continue;
      const bool keeps = o->shape_rule == "preserve";
      const bool adds_one = o->shape_rule == "insert_dimension" ||
                            (o->shape_rule == "remove_dimension" && o->name == "squeeze");
      if (!keeps && !adds_one) continue;
      ir::TensorShape in = shape_of(o->inputs.front());
      ir::TensorShape out = raw_shape(c, id);
      if (!in.rank || !out.rank) continue;
      auto dims = [&](const ir::TensorShape& s) {
        std::vector<ir::Dimension> d;
        for (auto x : s.dimensions) {
          if (auto n = names.find(x.expr); n != names.end()) x.expr = n->second;
          if (!adds_one || x.expr != "1") d.push_back(x);
        }
        return d;
      };
      auto a = dims(in), b = dims(out);
      if (a.size() == b.size()) tie(a, b);
    }
}

ir::TensorShape InstanceIndex::op_shape(const ir::InstanceCall& c, const std::string& op_id) const {
  ir::TensorShape s = raw_shape(c, op_id);
  auto f = frame_names_.find(c.id);
  if (f == frame_names_.end()) return s;
  for (auto& d : s.dimensions)
    if (auto n = f->second.find(d.expr); n != f->second.end()) d.expr = n->second;
  return s;
}

const ir::InstanceCall* InstanceIndex::call_of(const std::string& module_id) const {
  auto it = by_module_.find(module_id);
  return it == by_module_.end() ? nullptr : it->second;
}

std::string InstanceIndex::output_shape(const ir::InstanceCall& c) const {
  if (!c.output_shape.rank) return "";
  std::string out = "[";
  for (std::size_t i = 0; i < c.output_shape.dimensions.size(); ++i) {
    std::string e = c.output_shape.dimensions[i].expr;
    if (auto d = dims_.find(e); d != dims_.end()) e = std::to_string(d->second);
    if (auto q = dimension_quotient(e))  // `h/2` with h bound: ⌊h / 2⌋
      if (auto d = dims_.find(std::string(q->first)); d != dims_.end())
        e = std::to_string(d->second / q->second);
    if (e == "_" || e.empty()) e = "?";  // `let (_, t, _) = xs.dims3()?`: a size not named
    out += (i ? ", " : "") + e;
  }
  return out + "]";
}

namespace {

// Where an operation of call `c` adds in the call's branch tree.
SymSum& op_sum(BranchTree& tree, const ir::InstanceCall& c, const std::string& op_id) {
  static const std::vector<ir::BranchArm> none;
  auto b = c.operation_branches.find(op_id);
  return tree.at(b == c.operation_branches.end() ? none : b->second, c.branch.size());
}

}  // namespace

SymSum InstanceIndex::mult_adds(const ir::InstanceCall& c) const {
  BranchTree tree;
  // A candle-nn layer's call, or a wrapper layer's applying the layer it holds, carries this
  // instance's own count (the operation keeps the first instance's).
  bool layer_counted = c.mult_adds && tree.at({}, 0).add(*c.mult_adds, 1, dims_);
  if (!layer_counted)
    for (const auto& id : c.operations) {
      auto it = ops_.find(id);
      if (it == ops_.end()) continue;
      SymSum& s = op_sum(tree, c, id);
      const ir::Operation& o = *it->second;
      // This call's own figure (in the root forward's dimension names) where the dataflow
      // recorded one; else the operation's, unless that is another module's (an operation run
      // by several module paths in an IR without per-call figures): unknown here, a lower bound.
      std::optional<std::string> figure = o.mult_adds;
      bool own = false;
      if (auto f = c.operation_mult_adds.find(id); f != c.operation_mult_adds.end()) {
        figure = f->second.empty() ? std::nullopt : std::optional<std::string>(f->second);
        own = true;
      }
      if (figure && (own || !shared_ops_.count(id)) && s.add(*figure, 1, dims_)) continue;
      if (figure || o.mult_adds || may_multiply(o)) {
        s.missing.insert(o.qualified_name.value_or(o.name));
        ++s.missing_ops;
      }
    }
  if (auto k = kids_.find(c.id); k != kids_.end())
    for (const auto* child : k->second)
      tree.at(child->branch, c.branch.size()).add(mult_adds(*child), child->count);
  return tree.fold();
}

SymSum InstanceIndex::activations(const ir::InstanceCall& c) const {
  BranchTree tree;
  for (const auto& id : c.operations) {
    auto it = ops_.find(id);
    if (it == ops_.end()) continue;
    SymSum& s = op_sum(tree, c, id);
    const ir::Operation& o = *it->second;
    // This call's shape of it, in the root's names where the call ties them.
    const ir::TensorShape own = op_shape(c, id);
    const ir::TensorShape* shape = &own;
    bool counted = false;
    if (shape->rank) {
      std::string product;
      for (const auto& d : shape->dimensions) {
        // A name that is not one of the input's dimensions is a size not known here.
        auto q = dimension_quotient(d.expr);
        std::string name = q ? std::string(q->first) : d.expr;
        if (plain_name(name) && !input_names_.count(name) && !dims_.count(name)) {
          product = "?";
          break;
        }
        product += (product.empty() ? "" : "*") + d.expr;
      }
      counted = s.add(product.empty() ? "1" : product, 1, dims_);
    }
    if (!counted) {
      s.missing.insert(o.qualified_name.value_or(o.name));
      ++s.missing_ops;
    }
  }
  if (auto k = kids_.find(c.id); k != kids_.end())
    for (const auto* child : k->second)
      tree.at(child->branch, c.branch.size()).add(activations(*child), child->count);
  return tree.fold();
}

std::set<std::string> InstanceIndex::symbols() const {
  if (!input_names_.empty()) {  // and the root input's own names (`d` of `[b, t, d]`)
    std::set<std::string> out = input_names_;
    out.insert(root_names_.begin(), root_names_.end());
    return out;
  }
  std::set<std::string> out;  // no Mult-Adds: the names the output shapes are written in
  for (const auto& [m, c] : by_module_)
    for (const auto& d : c->output_shape.dimensions)
      if (plain_name(d.expr) && d.expr != "_") out.insert(d.expr);
  return out;
}

}  // namespace cg::query
