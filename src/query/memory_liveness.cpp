// Liveness over one forward's dataflow: the peak of live tensors, where it happens, and what
// autograd keeps for backward (issue #38). See memory_liveness.hpp and docs/memory.md.
#include "query/memory_liveness.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <queue>
#include <tuple>
#include <vector>

#include "query/summary_rows.hpp"
#include "util/text.hpp"

namespace cg::query {
namespace {

constexpr long kEnd = std::numeric_limits<long>::max();

std::optional<std::uint64_t> mul(std::optional<std::uint64_t> a, std::optional<std::uint64_t> b) {
  if (!a || !b) return std::nullopt;
  std::uint64_t r = 0;
  if (__builtin_mul_overflow(*a, *b, &r)) return std::nullopt;
  return r;
}

std::uint64_t sat_add(std::uint64_t a, std::uint64_t b) {
  std::uint64_t r = 0;
  return __builtin_add_overflow(a, b, &r) ? std::numeric_limits<std::uint64_t>::max() : r;
}

bool digits(const std::string& s) {
  return !s.empty() && s.size() <= 19 && s.find_first_not_of("0123456789") == std::string::npos;
}

// `src/model.rs:93` -> 93; the occurrence of `operation:...:matmul:1` -> 1.
std::uint64_t line_of(const std::string& source) {
  auto colon = source.rfind(':');
  std::string l = colon == std::string::npos ? "" : source.substr(colon + 1);
  return digits(l) ? std::stoull(l) : 0;
}

// Operations that make a view of their first input: no storage of their own.
bool permutes(const std::string& n) {
  return n == "transpose" || n == "t" || n == "permute";
}
bool strided_view(const std::string& n) {
  return n == "narrow" || n == "expand" || n == "broadcast_as" || n == "broadcast_left";
}
bool same_layout_view(const std::string& n) {
  return n == "unsqueeze" || n == "squeeze" || n == "clone" || n == "i" || n == "get";
}
bool reshapes(const std::string& n) {
  return n == "reshape" || n == "flatten" || n == "flatten_all" || n == "flatten_from" ||
         n == "flatten_to";
}

struct Tens {
  std::vector<std::size_t> storages;  // a helper's tuple result stands for several
  bool contiguous = true;
  bool tracked = false;  // downstream of a parameter (autograd keeps its inputs)
};

struct Storage {
  std::optional<std::uint64_t> bytes;
  long made = -1, last = -1;  // step positions
};

struct FrameResult {
  std::uint64_t peak = 0;
  std::string at;
  std::uint64_t sum = 0, kept = 0;
  std::optional<std::uint64_t> ret_bytes;
  bool ret_tracked = false;
};

class Walker {
 public:
  Walker(const ir::ModelIr& ir, const InstanceIndex& idx, const InputDims& dims,
         const LivenessOptions& opts, LivenessPeak& out)
      : ir_(ir), idx_(idx), dims_(dims), opts_(opts), out_(out) {
    for (const auto& f : ir.functions)
      fns_[f.id] = &f;
    for (const auto& prm : ir.parameters)
      if (prm.module) weighted_.insert(*prm.module);
  }

  void stored(const std::string& entrypoint) {
    for (const auto& s : ir_.state_stores)
      if (s.entrypoint == entrypoint)
        for (const auto& t : s.tensors)
          if (t.appends_along) appended_[t.tensor] = *t.appends_along;
  }

  FrameResult run(const ir::InstanceCall& c, bool root, bool inputs_tracked) {
    FrameResult fr;
    const std::string frame_fn = c.function.value_or("");
    // A call on a module holding weights (a candle-nn layer, or a wrapper such as with_tracing's
    // `Linear`): its operations use them, so autograd tracks what they make.
    const bool weighted = std::any_of(c.modules.begin(), c.modules.end(),
                                      [&](const std::string& m) { return weighted_.count(m) > 0; });
    const std::string where = c.path.empty() ? "(root)" : c.path;
    // The steps: this frame's operations, and the nested calls (a candle-nn layer's operation is
    // listed in its own call; an inlined method's call site in this one).
    struct Step {
      std::string op;
      const ir::InstanceCall* kid = nullptr;
    };
    std::vector<Step> steps;
    std::set<std::string> mine(c.operations.begin(), c.operations.end());
    std::map<std::string, const ir::InstanceCall*> kid_at;
    for (const auto* k : idx_.kids(c))
      if (k->call_site) kid_at[*k->call_site] = k;
    for (const auto& id : c.operations) {
      auto k = kid_at.find(id);
      steps.push_back({id, k == kid_at.end() ? nullptr : k->second});
    }
    for (const auto* k : idx_.kids(c))
      if (!k->call_site || !mine.count(*k->call_site))
        steps.push_back({k->call_site.value_or(""), k});
    const std::size_t n = steps.size();

    // Crate-local helpers inlined into this frame (`rotary.apply`, `repeat_kv`): their call
    // sites' results stand for what the helper returned.
    std::map<std::string, std::vector<std::size_t>> helper_ops;    // helper fn -> steps
    std::map<std::string, std::vector<std::size_t>> helper_sites;  // helper fn -> call sites
    for (std::size_t i = 0; i < n; ++i) {
      const ir::Operation* o = idx_.op(steps[i].op);
      if (o && !steps[i].kid && !frame_fn.empty() && o->function != frame_fn)
        helper_ops[o->function].push_back(i);
    }
    for (std::size_t i = 0; i < n; ++i) {
      const ir::Operation* o = idx_.op(steps[i].op);
      if (!o || steps[i].kid || o->shape_rule != "unknown") continue;
      for (const auto& [fn, list] : helper_ops) {
        auto f = fns_.find(fn);
        if (f != fns_.end() && f->second->name == o->name && fn != o->function)
          helper_sites[fn].push_back(i);
      }
    }
    std::map<std::size_t, std::vector<std::string>> site_of;  // call-site step -> helper fns
    for (const auto& [fn, sites] : helper_sites) {
      if (sites.size() > 1) {
        auto f = fns_.find(fn);
        out_.merged_helpers.insert(f->second->name + " (" + where + ")");
      }
      for (auto s : sites)
        site_of[s].push_back(fn);
    }

    // Order: the dataflow (a reader after its maker; a helper's call site after the helper's
    // operations), ties by source line (a helper's operations at their call site's), then the
    // operation's occurrence.
    std::map<std::string, std::size_t> maker;
    for (std::size_t i = 0; i < n; ++i)
      if (const ir::Operation* o = idx_.op(steps[i].op)) maker[o->output] = i;
    std::vector<std::set<std::size_t>> deps(n);
    for (std::size_t i = 0; i < n; ++i) {
      if (const ir::Operation* o = idx_.op(steps[i].op))
        for (const auto& in : o->inputs)
          if (auto m = maker.find(in); m != maker.end() && m->second != i)
            deps[i].insert(m->second);
      if (auto s = site_of.find(i); s != site_of.end())
        for (const auto& fn : s->second)
          for (auto h : helper_ops[fn])
            if (h != i) deps[i].insert(h);
    }
    using Key = std::tuple<std::uint64_t, std::uint64_t, std::uint64_t, std::size_t>;
    std::vector<Key> key(n);
    for (std::size_t i = 0; i < n; ++i) {
      const ir::Operation* o = idx_.op(steps[i].op);
      std::uint64_t own = o ? line_of(o->source) : 0, at = own;
      if (o && o->function != frame_fn)
        if (auto h = helper_sites.find(o->function);
            h != helper_sites.end() && !h->second.empty()) {
          at = std::numeric_limits<std::uint64_t>::max();
          for (auto site : h->second)
            at = std::min(at, line_of(idx_.op(steps[site].op)->source));
        }
      std::uint64_t occ = line_of(steps[i].op);
      key[i] = {at, own, occ, i};
    }
    std::vector<std::size_t> order;
    {
      std::vector<std::size_t> waiting(n, 0);
      std::vector<std::vector<std::size_t>> readers(n);
      for (std::size_t i = 0; i < n; ++i)
        for (auto d : deps[i]) {
          ++waiting[i];
          readers[d].push_back(i);
        }
      std::priority_queue<Key, std::vector<Key>, std::greater<Key>> ready;
      for (std::size_t i = 0; i < n; ++i)
        if (!waiting[i]) ready.push(key[i]);
      std::vector<bool> done(n, false);
      while (order.size() < n) {
        if (ready.empty()) {  // a cycle (a loop's carried value): the earliest line left goes
          std::size_t best = n;
          for (std::size_t i = 0; i < n; ++i)
            if (!done[i] && (best == n || key[i] < key[best])) best = i;
          waiting[best] = 0;
          ready.push(key[best]);
        }
        std::size_t i = std::get<3>(ready.top());
        ready.pop();
        if (done[i]) continue;
        done[i] = true;
        order.push_back(i);
        for (auto r : readers[i])
          if (waiting[r] > 0 && --waiting[r] == 0) ready.push(key[r]);
      }
    }

    // Storages and their live ranges.
    std::vector<Storage> st;
    std::map<std::string, Tens> tens;
    auto new_storage = [&](std::optional<std::uint64_t> bytes, long at) {
      st.push_back({bytes, at, at});
      return st.size() - 1;
    };
    const ir::Function* fn = frame_fn.empty()       ? nullptr
                             : fns_.count(frame_fn) ? fns_[frame_fn]
                                                    : nullptr;
    if (fn)
      for (const auto& in : fn->tensor_inputs) {
        Tens t;
        t.tracked = inputs_tracked;
        if (root)  // the root's input counts, from before the first step
          if (const ir::Tensor* x = idx_.tensor(in)) {
            auto bytes = size(x->shape, nullptr);
            t.storages.push_back(new_storage(bytes, -1));
            fr.sum = sat_add(fr.sum, bytes.value_or(0));
            if (!bytes) {
              ++out_.unknown_allocations;
              out_.unknown_names.insert("the input `" + x->name + "`");
            }
          }
        tens[in] = t;
      }
    std::vector<std::optional<FrameResult>> kid_result(n);
    std::vector<std::size_t> made_at(n, 0);
    std::vector<bool> allocates(n, false);
    for (std::size_t p = 0; p < order.size(); ++p) {
      const std::size_t i = order[p];
      const long pos = static_cast<long>(p);
      const Step& s = steps[i];
      const ir::Operation* o = idx_.op(s.op);
      auto read = [&](const std::string& tid) -> const Tens* {
        auto t = tens.find(tid);
        if (t == tens.end()) return nullptr;
        for (std::size_t k : t->second.storages)
          st[k].last = std::max(st[k].last, pos);
        return &t->second;
      };
      bool tracked = false;
      const Tens* first = nullptr;
      if (o)
        for (std::size_t a = 0; a < o->inputs.size(); ++a) {
          const ir::Tensor* x = idx_.tensor(o->inputs[a]);
          const Tens* t = read(o->inputs[a]);
          if (a == 0) first = t;
          if ((t && t->tracked) || (x && x->role == ir::TensorRole::parameter)) tracked = true;
        }
      Tens out;
      if (s.kid) {
        kid_result[i] = run(*s.kid, false, tracked);
        const FrameResult& k = *kid_result[i];
        tracked = tracked || k.ret_tracked;
        std::optional<std::uint64_t> bytes = k.ret_bytes;
        if (!bytes && o) bytes = size(idx_.op_shape(c, s.op), o);
        out.storages.push_back(new_storage(bytes, pos));
        fr.sum = sat_add(fr.sum, times(k.sum, s.kid->count));
        fr.kept = sat_add(fr.kept, times(k.kept, s.kid->count));
      } else if (!o) {
        continue;
      } else if (auto h = site_of.find(i); h != site_of.end()) {
        // A helper's result: what it returned (inputs made by the helper, and its operations
        // no one in the frame reads).
        for (const auto& in : o->inputs)
          if (auto m = maker.find(in); m != maker.end() && idx_.op(steps[m->second].op) &&
                                       idx_.op(steps[m->second].op)->function != o->function)
            if (auto t = tens.find(in); t != tens.end())
              out.storages.insert(out.storages.end(), t->second.storages.begin(),
                                  t->second.storages.end());
        std::vector<std::size_t> inside;
        for (const auto& hf : h->second)
          inside.insert(inside.end(), helper_ops[hf].begin(), helper_ops[hf].end());
        for (auto hs : inside) {
          const ir::Operation* ho = idx_.op(steps[hs].op);
          bool read_here = false;
          for (std::size_t j = 0; j < n && ho && !read_here; ++j)
            if (const ir::Operation* r = idx_.op(steps[j].op))
              read_here =
                  std::find(r->inputs.begin(), r->inputs.end(), ho->output) != r->inputs.end();
          if (ho && !read_here)
            if (auto t = tens.find(ho->output); t != tens.end())
              out.storages.insert(out.storages.end(), t->second.storages.begin(),
                                  t->second.storages.end());
        }
        for (std::size_t k : out.storages)
          st[k].last = std::max(st[k].last, pos);
        out.tracked = tracked;
      } else {
        const std::string& name = o->name;
        const bool in_contig = !first || first->contiguous;
        // `to_dtype` to the dtype the tensor has already returns it (a clone of the handle).
        const ir::Tensor* ot = idx_.tensor(o->output);
        const bool same_dtype = name == "to_dtype" && ot && ot->dtype == opts_.dtype;
        const bool view = permutes(name) || strided_view(name) || same_layout_view(name) ||
                          same_dtype || ((reshapes(name) || name == "contiguous") && in_contig);
        if (view) {
          if (first) out.storages = first->storages;
          out.contiguous = !(permutes(name) || strided_view(name)) && in_contig;
        } else {
          auto bytes = size(idx_.op_shape(c, s.op), o);
          out.storages.push_back(new_storage(bytes, pos));
          allocates[i] = true;
          made_at[i] = out.storages.back();
          if (!bytes) {
            ++out_.unknown_allocations;
            out_.unknown_names.insert(name + " (" + o->source + ")");
          }
          fr.sum = sat_add(fr.sum, bytes.value_or(0));
          // A layer's operation holds its weights: autograd tracks it.
          if (tracked || weighted) fr.kept = sat_add(fr.kept, bytes.value_or(0));
        }
      }
      out.tracked = out.tracked || tracked || weighted;
      if (o) tens[o->output] = out;
    }
    // What the frame returns stays live to its end.
    std::vector<std::string> rets;
    if (fn) rets = fn->tensor_outputs;
    if (rets.empty() && !order.empty())
      if (const ir::Operation* o = idx_.op(steps[order.back()].op)) rets.push_back(o->output);
    std::optional<std::uint64_t> ret_bytes = 0;
    for (const auto& r : rets)
      if (auto t = tens.find(r); t != tens.end()) {
        fr.ret_tracked = fr.ret_tracked || t->second.tracked;
        for (std::size_t k : t->second.storages) {
          st[k].last = kEnd;
          ret_bytes = st[k].bytes && ret_bytes
                          ? std::optional<std::uint64_t>(*ret_bytes + *st[k].bytes)
                          : std::nullopt;
        }
      }
    fr.ret_bytes = ret_bytes;
    // The peak: before each step, the storages made earlier and read at it or later; at it, the
    // step's own allocation or the nested call's peak.
    for (std::size_t p = 0; p < order.size(); ++p) {
      const std::size_t i = order[p];
      const long pos = static_cast<long>(p);
      std::uint64_t live = 0;
      for (const auto& s : st)
        if (s.made < pos && s.last >= pos) live = sat_add(live, s.bytes.value_or(0));
      std::uint64_t here = 0;
      std::string at;
      if (kid_result[i]) {
        here = kid_result[i]->peak;
        at = kid_result[i]->at;
      } else if (allocates[i]) {
        here = st[made_at[i]].bytes.value_or(0);
        const ir::Operation* o = idx_.op(steps[i].op);
        at = where + " " + o->name + " (" + o->source + ")";
      }
      if (at.empty()) continue;
      if (sat_add(live, here) > fr.peak || fr.at.empty()) {
        fr.peak = sat_add(live, here);
        fr.at = at;
      }
    }
    return fr;
  }

 private:
  static std::uint64_t times(std::uint64_t v, std::optional<std::uint64_t> count) {
    auto r = mul(v, count.value_or(1));
    return r.value_or(std::numeric_limits<std::uint64_t>::max());
  }

  // Bytes of a shape at the dtype: every dimension a number, a bound name (or such a name divided
  // by a number), or, for a `cat` with a tensor the state keeps, the positions held along the
  // dimension it appends on.
  std::optional<std::uint64_t> size(const ir::TensorShape& s, const ir::Operation* o) const {
    if (!s.rank) return std::nullopt;
    std::optional<std::uint64_t> along;
    if (o && o->name == "cat")
      for (const auto& in : o->inputs)
        if (auto a = appended_.find(in); a != appended_.end()) along = a->second;
    std::optional<std::uint64_t> n = opts_.elem_bytes;
    if (o && o->name == "to_dtype")
      if (const ir::Tensor* t = idx_.tensor(o->output); t && dtype_bytes(t->dtype) > 0)
        n = dtype_bytes(t->dtype);
    for (std::size_t k = 0; k < s.dimensions.size(); ++k) {
      const std::string& e = s.dimensions[k].expr;
      std::optional<std::uint64_t> d;
      if (digits(e)) {
        d = std::stoull(e);
      } else if (auto b = dims_.find(e); b != dims_.end()) {
        d = b->second;
      } else if (auto q = dimension_quotient(e)) {
        if (auto b2 = dims_.find(std::string(q->first)); b2 != dims_.end())
          d = b2->second / q->second;
      }
      if (!d && along && *along == k) d = opts_.positions_held;
      n = mul(n, d);
    }
    return n;
  }

  const ir::ModelIr& ir_;
  const InstanceIndex& idx_;
  const InputDims& dims_;
  const LivenessOptions& opts_;
  LivenessPeak& out_;
  std::map<std::string, const ir::Function*> fns_;
  std::map<std::string, std::uint64_t> appended_;  // tensor a cache appends -> its dimension
  std::set<std::string> weighted_;                 // modules holding parameters of their own
};

}  // namespace

LivenessPeak activation_peak(const ir::ModelIr& ir, const InstanceIndex& idx,
                             const ir::InstanceCall& root, const InputDims& dims,
                             const LivenessOptions& opts) {
  LivenessPeak out;
  Walker w(ir, idx, dims, opts, out);
  w.stored(root.entrypoint);
  FrameResult r = w.run(root, true, false);
  out.peak_bytes = r.peak;
  out.peak_at = r.at;
  out.sum_bytes = r.sum;
  out.kept_bytes = r.kept;
  return out;
}

}  // namespace cg::query
