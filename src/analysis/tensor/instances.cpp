// Module instances in the tensor domain (issue #18): a struct value carries the inventory modules
// it denotes (`self` of an entrypoint its type's modules, `self.model` the child built for field
// `model`, `self.layers` every member of that family); inlining a method on such a receiver, or
// applying a candle-nn layer held by one, records an ir::InstanceCall. Open calls nest, so each
// operation is listed in the innermost instance call that ran it.
#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <map>

#include "analysis/inventory_keys.hpp"
#include "analysis/tensor/domain.hpp"

namespace cg::analysis::tensor {
namespace {

std::vector<std::string> split_dots(const std::string& s) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  while (true) {
    auto dot = s.find('.', pos);
    out.push_back(s.substr(pos, dot == std::string::npos ? std::string::npos : dot - pos));
    if (dot == std::string::npos) break;
    pos = dot + 1;
  }
  return out;
}

bool digits(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return std::isdigit(static_cast<unsigned char>(c));
  });
}

// The prefixes of a family's members as one path: the segments where they differ by index become
// `{i}` ("model.layers.0", "model.layers.1" -> "model.layers.{i}"); prefixes that do not line up
// are listed ("a | b").
std::string common_path(const std::vector<std::string>& prefixes) {
  std::vector<std::vector<std::string>> parts;
  for (const auto& p : prefixes)
    parts.push_back(split_dots(p));
  std::vector<std::string> out = parts.front();
  bool ok = true;
  for (const auto& ps : parts) {
    if (ps.size() != out.size()) {
      ok = false;
      break;
    }
    for (std::size_t i = 0; i < ps.size(); ++i) {
      if (ps[i] == out[i]) continue;
      bool index = (digits(ps[i]) || ps[i] == "{i}") && (digits(out[i]) || out[i] == "{i}");
      if (!index) ok = false;
      out[i] = "{i}";
    }
  }
  if (!ok) {
    std::string joined;
    for (const auto& p : prefixes)
      joined += (joined.empty() ? "" : " | ") + p;
    return joined;
  }
  std::string path;
  for (const auto& s : out)
    path += (path.empty() ? "" : ".") + s;
  return path;
}

// "i in 0..4" (or "i in 0..4 (not expanded: why)") -> 4; nullopt when symbolic.
std::optional<std::uint64_t> repeat_count(const std::string& repeat) {
  auto in = repeat.find(" in ");
  if (in == std::string::npos) return std::nullopt;
  std::string range = repeat.substr(in + 4);
  auto sp = range.find(' ');
  if (sp != std::string::npos) range = range.substr(0, sp);
  auto dots = range.find("..");
  if (dots == std::string::npos) return std::nullopt;
  bool incl = range.compare(dots, 3, "..=") == 0;
  std::string lo = range.substr(0, dots), hi = range.substr(dots + (incl ? 3 : 2));
  if (!digits(lo) || !digits(hi) || lo.size() > 12 || hi.size() > 12) return std::nullopt;
  std::uint64_t l = std::stoull(lo), h = std::stoull(hi) + (incl ? 1 : 0);
  return h > l ? h - l : 0;
}

std::string loop_text(const std::optional<std::string>& repeat) {
  if (!repeat) return "";
  auto open = repeat->find(" (not expanded: ");
  return open == std::string::npos ? *repeat : repeat->substr(0, open);
}

}  // namespace

std::size_t TensorDomain::open_instance(const std::set<std::string>& mods,
                                        const std::string& method,
                                        std::optional<std::string> function) {
  std::vector<const ir::Module*> ms;
  for (const auto& id : mods) {
    auto it = module_by_id_.find(id);
    if (it != module_by_id_.end()) ms.push_back(it->second);
  }
  if (ms.empty()) return kNoInstance;
  std::vector<std::string> ids;
  for (const auto* m : ms)
    ids.push_back(m->id);
  // A method of the open call's own instance (`self.repeat_kv(..)`) runs inside that call.
  if (!open_instances_.empty() && ir_.instance_calls[open_instances_.back()].modules == ids)
    return kNoInstance;
  ir::InstanceCall c;
  c.entrypoint = run_.entry_fid;
  const ir::InstanceCall* parent =
      open_instances_.empty() ? nullptr : &ir_.instance_calls[open_instances_.back()];
  if (parent) c.parent = parent->id;
  std::vector<std::string> prefixes;
  for (const auto* m : ms) {
    c.modules.push_back(m->id);
    if (std::find(prefixes.begin(), prefixes.end(), m->prefix) == prefixes.end())
      prefixes.push_back(m->prefix);
  }
  std::sort(prefixes.begin(), prefixes.end());
  c.path = common_path(prefixes);
  c.method = method;
  c.function = std::move(function);
  // A family starts where the members' loop is not their parent call's: a template stands for its
  // iteration count, expanded members for how many there are per parent call.
  const ir::Module* first = ms.front();
  std::string loop = loop_text(first->repeat);
  bool parent_loop = false;
  if (parent && !loop.empty())
    for (const auto& pid : parent->modules) {
      auto it = module_by_id_.find(pid);
      if (it != module_by_id_.end() && loop_text(it->second->repeat) == loop) parent_loop = true;
    }
  // Modules one field of one parent holds, built at different sites and not all certain, are
  // alternatives (`match (A::load(..), ..) { (Ok(a), ..) => a, (Err(_), ..) => A::load(other) }`):
  // one of them runs. Members of a family share their site (a loop) or are all certain (pushes).
  std::map<std::pair<std::string, std::string>, std::map<std::string, std::uint64_t>> by_field;
  std::map<std::pair<std::string, std::string>, bool> uncertain;
  for (const auto* m : ms) {
    auto key = std::make_pair(m->parent.value_or(""), m->field.value_or(""));
    ++by_field[key][m->source];
    uncertain[key] = uncertain[key] || m->confidence != ir::Confidence::proven;
  }
  std::uint64_t running = 0;
  for (const auto& [key, sites] : by_field) {
    std::uint64_t all = 0, most = 0;
    for (const auto& [site, n] : sites) {
      all += n;
      most = std::max(most, n);
    }
    running += sites.size() > 1 && uncertain[key] && !key.second.empty() ? most : all;
  }
  std::uint64_t per_parent = running;
  if (parent && !parent->modules.empty() && running % parent->modules.size() == 0 &&
      running >= parent->modules.size())
    per_parent = running / parent->modules.size();
  c.count = per_parent;
  // One member of a loop the inventory expanded (`layer1.0.conv1` of `index in 0..2`, applied by
  // a closure its constructor built for that index) is that one instance.
  const bool one_expanded = ms.size() == 1 && first->repeat &&
                            first->repeat->find(" (not expanded: ") == std::string::npos &&
                            repeat_count(*first->repeat).has_value();
  if (one_expanded) {
    c.count = 1;
  } else if (!loop.empty() && !parent_loop) {
    c.repeat = loop;
    if (ms.size() == 1) c.count = repeat_count(*first->repeat);
  } else if (per_parent > 1) {
    c.repeat = "i in 0.." + std::to_string(per_parent);
  }
  c.branch = branch_;
  c.sequence = call_seq_++;
  c.id = ir::instance_call_id(run_.entry_fid, c.path, method,
                              inst_occ_.next(c.path + std::string(1, '\0') + method));
  ir_.instance_calls.push_back(std::move(c));
  open_instances_.push_back(ir_.instance_calls.size() - 1);
  return ir_.instance_calls.size() - 1;
}

void TensorDomain::close_instance(std::size_t ic, const Val& out, const ir::TensorShape* shape,
                                  const std::string& call_site) {
  if (ic == kNoInstance) return;
  if (!open_instances_.empty() && open_instances_.back() == ic) open_instances_.pop_back();
  ir::InstanceCall& c = ir_.instance_calls[ic];
  if (!call_site.empty()) c.call_site = call_site;
  if (out.tensor) {
    c.output_dtype = out.dtype;
    if (shape && shape->rank) c.output_shape = *shape;
  }
}

void TensorDomain::note_op(const std::string& op_id) {
  if (open_instances_.empty()) return;
  ir::InstanceCall& ic = ir_.instance_calls[open_instances_.back()];
  auto& ops = ic.operations;
  if (std::find(ops.begin(), ops.end(), op_id) != ops.end()) return;
  ops.push_back(op_id);
  // Every call's own figure for now; finish() keeps those that differ from the operation's.
  ic.operation_mult_adds[op_id] = context_mult_adds_.value_or("");
  ic.operation_shapes[op_id] = context_shape_;
  if (branch_.size() > ic.branch.size()) ic.operation_branches[op_id] = branch_;
}

void TensorDomain::branch_begin(Eng& eng, NodeId n, std::size_t i, std::size_t count) {
  if (i == 0) {
    BranchPoint p;
    p.depth = branch_.size();
    p.count = count;
    p.node = n;
    p.body = &eng.body();
    p.diverged = diverged_;
    p.returned = returned_;
    points_.push_back(std::move(p));
  }
  if (points_.empty() || points_.back().node != n || points_.back().body != &eng.body()) return;
  BranchPoint& p = points_.back();
  branch_.resize(p.depth);
  diverged_ = returned_ = false;
  ir::BranchArm arm;
  arm.site = src(eng, n);
  arm.offset = eng.node(n).start;
  arm.arms = {i};
  arm.count = count;
  branch_.push_back(std::move(arm));
}

void TensorDomain::branch_end(Eng& eng, NodeId n, std::size_t i) {
  if (points_.empty() || points_.back().node != n || points_.back().body != &eng.body()) return;
  BranchPoint& p = points_.back();
  if (diverged_)
    p.dead.insert(i);
  else if (returned_)
    p.returned_arms.insert(i);
  auto& fate = arm_fates_[{src(eng, n), eng.node(n).start}];
  (diverged_ ? fate.first : fate.second).insert(i);
  diverged_ = p.diverged;
  returned_ = p.returned;
  branch_.resize(std::min(branch_.size(), p.depth));  // the arm and what it pushed
}

// After an undecided `if c { return a; }`, the rest of the body runs only where `c` was false:
// it stands in the arms that did not return. (Arms that may return on some path only are taken as
// returning: the total then adds less, never more, than a path does.) An arm that never completes
// is no alternative: when every arm is dead, so is the path.
void TensorDomain::branches_joined(Eng& eng, NodeId n) {
  if (points_.empty() || points_.back().node != n || points_.back().body != &eng.body()) return;
  BranchPoint p = std::move(points_.back());
  points_.pop_back();
  if (p.dead.size() >= p.count) {
    diverged_ = true;
    return;
  }
  const std::size_t live = p.count - p.dead.size();
  if (p.returned_arms.empty()) return;
  if (p.returned_arms.size() >= live) {
    returned_ = true;
    return;
  }
  ir::BranchArm rest;
  rest.site = src(eng, n);
  rest.offset = eng.node(n).start;
  rest.count = p.count;
  for (std::size_t i = 0; i < p.count; ++i)
    if (!p.returned_arms.count(i) && !p.dead.count(i)) rest.arms.push_back(i);
  branch_.push_back(std::move(rest));
}

void TensorDomain::body_begin(Eng&) {
  body_marks_.push_back({branch_.size(), diverged_, returned_});
  diverged_ = returned_ = false;
}

// A body that never completes makes its call never complete; a `return` ends the body only.
void TensorDomain::body_end(Eng&, bool called) {
  if (body_marks_.empty()) return;
  const BodyMark m = body_marks_.back();
  body_marks_.pop_back();
  if (branch_.size() > m.branch) branch_.resize(m.branch);
  const bool dies = called && diverged_ && !returned_;
  diverged_ = m.diverged || dies;
  returned_ = m.returned;
}

void TensorDomain::returning(Eng& eng, NodeId ret) {
  const rust::Body& b = eng.body();
  const NodeId e = b[ret].a;
  const bool err = e != rust::kNone && b[e].kind == rust::Kind::Call && b[e].a != rust::kNone &&
                   b[b[e].a].kind == rust::Kind::Path && b[b[e].a].str == "Err";
  if (diverged_) return;
  (err ? diverged_ : returned_) = true;
}

Val TensorDomain::macro(Eng& eng, NodeId n) {
  std::string_view name = eng.node(n).str;
  if (auto colons = name.rfind("::"); colons != std::string_view::npos)
    name = name.substr(colons + 2);
  if (!returned_ && (name == "panic" || name == "unimplemented" || name == "todo" ||
                     name == "unreachable" || name == "bail"))
    diverged_ = true;
  // `format!("blocks.{block_idx}")` with every argument a known number or string: that text
  // (`vb.pp(format!(..))` in an expanded constructor loop names each instance's prefix).
  if (name == "format") {
    rust::FormatArgs f = rust::parse_format_args(eng.node(n).text);
    if (!f.ok) return {};
    bool known = true;
    std::string text = inventory::format_key(f, [&](const std::string& expr) -> std::string {
      const Val* v = eng.lookup(expr);
      if (v && !v->tensor && v->num && !v->real && *v->num >= 0 && *v->num < 1e15)
        return std::to_string(static_cast<long long>(*v->num));
      if (v && !v->tensor && !v->word.empty()) return v->word;
      known = false;
      return "";
    });
    Val out;
    if (known && f.templ.find(':') == std::string::npos) out.word = std::move(text);
    return out;
  }
  return {};
}

void TensorDomain::settle_branches() {
  auto dead_arms = [&](const ir::BranchArm& b) {
    std::vector<std::uint64_t> dead;
    auto f = arm_fates_.find({b.site, b.offset});
    if (f == arm_fates_.end()) return dead;
    for (auto a : f->second.first)
      if (!f->second.second.count(a)) dead.push_back(a);
    return dead;
  };
  // A path through a dead arm: every arm it names is dead.
  auto settle = [&](std::vector<ir::BranchArm>& path) {
    bool dies = false;
    for (auto& b : path) {
      b.dead = dead_arms(b);
      if (std::all_of(b.arms.begin(), b.arms.end(), [&](std::uint64_t a) {
            return std::find(b.dead.begin(), b.dead.end(), a) != b.dead.end();
          }))
        dies = true;
    }
    return dies;
  };
  std::set<std::string> dropped;
  for (std::size_t i = run_calls_begin_; i < ir_.instance_calls.size(); ++i) {
    ir::InstanceCall& c = ir_.instance_calls[i];
    if (settle(c.branch) || (c.parent && dropped.count(*c.parent))) {
      dropped.insert(c.id);
      continue;
    }
    for (auto it = c.operation_branches.begin(); it != c.operation_branches.end();) {
      if (!settle(it->second)) {
        ++it;
        continue;
      }
      std::erase(c.operations, it->first);
      c.operation_mult_adds.erase(it->first);
      c.operation_shapes.erase(it->first);
      it = c.operation_branches.erase(it);
    }
  }
  if (dropped.empty()) return;
  const auto first = ir_.instance_calls.begin() + static_cast<std::ptrdiff_t>(run_calls_begin_);
  ir_.instance_calls.erase(
      std::remove_if(first, ir_.instance_calls.end(),
                     [&](const ir::InstanceCall& c) { return dropped.count(c.id) > 0; }),
      ir_.instance_calls.end());
}

// A candle-nn layer held by a module instance (`self.q_proj.forward(xs)`): one operation, in an
// instance call of its own with this instance's shape and multiply-adds (the operation keeps the
// first context's).
Val TensorDomain::layer_call(Eng& eng, NodeId node, const std::string& name, const OpRule& rule,
                             const std::vector<Val>& operands, const Val* recv) {
  std::size_t ic = recv ? open_instance(recv->modules, name, std::nullopt) : kNoInstance;
  Val out = apply_catalog(eng, node, name, rule, operands, recv);
  if (ic == kNoInstance) return out;
  std::vector<const Val*> ins;
  for (const auto& v : operands)
    if (v.tensor) ins.push_back(&v);
  ir::TensorShape s = shape_of(eng, node, rule, ins);
  auto ma = mult_adds(rule, ins, recv, s);
  if (!s.rank)
    if (const ir::TensorShape* t = shape_of_tensor(&out)) s = *t;
  close_instance(ic, out, &s, ir_.operations[last_op_].id);
  ir_.instance_calls[ic].mult_adds = ma;
  return out;
}

}  // namespace cg::analysis::tensor

namespace cg::analysis::tensor {

// The slots a store into indexed places fills over calls: each index into a fixed-size array
// `[T; N]` (N a number or a crate const) by anything but a literal multiplies by N, since the
// index moves from call to call (`state.prev_xs[li][state.pos % D_CONV]`); a `Vec` level is taken
// as the module instance's own slot (`cache.kvs[block_idx]`, `state.hs[li]`), which the instance
// count covers. nullopt when that is 1 or the field's type is not read.
std::optional<std::uint64_t> TensorDomain::array_slots(Eng& eng, NodeId place) {
  const rust::Body& b = eng.body();
  std::vector<NodeId> index;
  while (place != rust::kNone && b[place].kind == rust::Kind::Index) {
    index.insert(index.begin(), b[place].b);
    place = b[place].a;
  }
  if (index.empty() || place == rust::kNone || b[place].kind != rust::Kind::Field) return {};
  const NodeId base = b[place].a;
  if (base == rust::kNone || b[base].kind != rust::Kind::Path) return {};
  const std::string owner_name(b[base].str);
  std::ptrdiff_t owner = -1;
  if (const Val* v = eng.lookup(owner_name)) owner = v->type_item;
  if (owner < 0)
    for (const auto& p : crate_.items()[eng.item()].params)
      if (p.name == owner_name)
        owner = typed_val(crate_.items()[eng.item()].module, p.type_text, "").type_item;
  if (owner < 0) return {};
  std::string type;
  for (const auto& f : crate_.items()[static_cast<std::size_t>(owner)].fields)
    if (f.name == b[place].str) type = f.type_text;
  std::uint64_t slots = 1;
  auto trim = [](std::string t) {
    while (!t.empty() && t.front() == ' ')
      t.erase(t.begin());
    while (!t.empty() && t.back() == ' ')
      t.pop_back();
    return t;
  };
  for (NodeId i : index) {
    type = trim(type);
    if (type.starts_with("Vec<") && type.ends_with(">")) {
      type = type.substr(4, type.size() - 5);
      continue;
    }
    if (!type.starts_with("[") || !type.ends_with("]")) return {};
    // `[Tensor; D_CONV]`: the length after the last `;` at depth 0.
    std::size_t semi = std::string::npos;
    int depth = 0;
    for (std::size_t k = 1; k + 1 < type.size(); ++k) {
      if (type[k] == '<' || type[k] == '[' || type[k] == '(') ++depth;
      if (type[k] == '>' || type[k] == ']' || type[k] == ')') --depth;
      if (type[k] == ';' && depth == 0) semi = k;
    }
    if (semi == std::string::npos) return {};
    const std::string len = trim(type.substr(semi + 1, type.size() - semi - 2));
    type = type.substr(1, semi - 1);
    if (i != rust::kNone && b[i].is_int_literal()) continue;  // one slot
    std::optional<double> n;
    if (!len.empty() && std::all_of(len.begin(), len.end(), [](char c) {
          return std::isdigit(static_cast<unsigned char>(c));
        }))
      n = std::strtod(len.c_str(), nullptr);
    else
      n = const_number(static_cast<std::size_t>(owner), len);
    if (!n || *n < 1 || *n > 1e9) return {};
    slots *= static_cast<std::uint64_t>(*n);
  }
  if (slots == 1) return {};
  return slots;
}

void TensorDomain::record_store(Eng& eng, NodeId at, const std::vector<const Val*>& stored,
                                const std::string& library) {
  const rust::Body& b = eng.body();
  ir::StateStore s;
  s.entrypoint = run_.entry_fid;
  s.function = fid_of(eng.item());
  // The assigned place, or the cache an `append` is called on.
  s.place = inventory::one_line(std::string(b.source(b[at].a)));
  s.source = src(eng, at);
  s.library = library;
  s.id = "state:" + s.entrypoint + ":" + s.source + ":" + s.place;
  if (!open_instances_.empty()) {
    const ir::InstanceCall* c = &ir_.instance_calls[open_instances_.back()];
    s.instance = c->path;
    std::optional<std::uint64_t> n = 1;
    // The product of the counts up the chain of calls (a family of 32 layers, each one call).
    for (std::size_t depth = 0; c && depth < 64; ++depth) {
      if (!c->count || (*n != 0 && *c->count > UINT64_MAX / *n)) {
        n.reset();
        break;
      }
      *n *= *c->count;
      const ir::InstanceCall* up = nullptr;
      if (c->parent)
        for (std::size_t i : open_instances_)
          if (ir_.instance_calls[i].id == *c->parent) up = &ir_.instance_calls[i];
      c = up;
    }
    s.instances = n;
  }
  if (b[at].kind == rust::Kind::Assign) s.slots = array_slots(eng, b[at].a);
  for (const Val* v : stored) {
    ir::StateStore::Stored t;
    t.tensor = v->tid;
    if (v->shape && v->shape->rank)
      t.shape = *v->shape;
    else if (const ir::Tensor* it = out_.tensor(v->tid))
      t.shape = it->shape;
    t.dtype = v->dtype;
    t.dtype_param = v->dtype_param;
    // Back through the operations that keep the positions, to a `cat`: a cache appending. A
    // value joined from branches (no cache yet: the new tensor; else the concatenation) may be
    // any of them.
    std::vector<std::string> starts{v->tid};
    if (v->alt_tids) starts.insert(starts.end(), v->alt_tids->begin(), v->alt_tids->end());
    for (const auto& start : starts) {
      std::string tid = start;
      std::optional<std::string> narrowed;
      for (int hops = 0; hops < 16; ++hops) {
        if (auto c = cat_of_.find(tid); c != cat_of_.end() && c->second.appends) {
          t.appends_along = c->second.dim;
          t.shape = c->second.known;
          t.narrowed_at = narrowed;
          break;
        }
        auto o = op_of_output_.find(tid);
        if (o == op_of_output_.end()) break;
        const ir::Operation& op = ir_.operations[o->second];
        static const std::set<std::string> keep = {"contiguous", "clone",  "to_dtype", "copy",
                                                   "detach",     "narrow", "to_device"};
        if (!keep.count(op.name) || op.inputs.empty()) break;
        if (op.name == "narrow" && !narrowed) narrowed = op.source;
        tid = op.inputs.front();
      }
      if (t.appends_along) break;
    }
    s.tensors.push_back(std::move(t));
  }
  ir_.state_stores.push_back(std::move(s));
}

}  // namespace cg::analysis::tensor
