#include "query/summary_rows.hpp"

#include <algorithm>
#include <cctype>
#include <functional>
#include <map>
#include <optional>
#include <set>

#include "analysis/config_values.hpp"
#include "analysis/inventory.hpp"
#include "pipeline/config_check.hpp"
#include "query/memory.hpp"
#include "query/selector.hpp"
#include "query/summary_instances.hpp"
#include "util/error.hpp"

namespace cg::query {

std::uint64_t dtype_bytes(const std::string& dtype) {
  if (dtype == "F64" || dtype == "I64" || dtype == "U64") return 8;
  if (dtype == "F32" || dtype == "I32" || dtype == "U32") return 4;
  if (dtype == "BF16" || dtype == "F16" || dtype == "I16" || dtype == "U16") return 2;
  if (dtype == "U8" || dtype == "I8" || dtype == "F8_E4M3" || dtype == "F8_E5M2") return 1;
  return 0;
}

std::string dtype_from_torch(const std::string& torch_dtype) {
  if (torch_dtype == "bfloat16") return "BF16";
  if (torch_dtype == "float16" || torch_dtype == "half") return "F16";
  if (torch_dtype == "float32" || torch_dtype == "float") return "F32";
  if (torch_dtype == "float64" || torch_dtype == "double") return "F64";
  return "";
}

namespace {

// A count that may be unknown (symbolic) or past 64 bits; arithmetic is overflow-checked and an
// overflow sticks (shown as such, never wrapped).
struct Count {
  std::optional<std::uint64_t> n;  // nullopt = unknown
  bool overflow = false;
  static Count of(std::uint64_t v) { return {v, false}; }
  bool known() const { return n.has_value() || overflow; }
};

Count mul(Count a, Count b) {
  if (a.n && *a.n == 0 && !a.overflow) return a;
  if (b.n && *b.n == 0 && !b.overflow) return b;
  if (!a.known() || !b.known()) return {};
  if (a.overflow || b.overflow) return {std::nullopt, true};
  std::uint64_t r = 0;
  if (__builtin_mul_overflow(*a.n, *b.n, &r)) return {std::nullopt, true};
  return Count::of(r);
}

Count add(Count a, Count b) {
  if (!a.known() || !b.known()) return {};
  if (a.overflow || b.overflow) return {std::nullopt, true};
  std::uint64_t r = 0;
  if (__builtin_add_overflow(*a.n, *b.n, &r)) return {std::nullopt, true};
  return Count::of(r);
}

Count count_of(const ir::Parameter& p) {
  if (!p.shape) return {};
  Count n = Count::of(1);
  for (auto d : *p.shape)
    n = mul(n, Count::of(d));
  return n;
}

// How many instances a module record stands for. An expanded instance, or one outside any loop,
// stands for itself (1); a family kept as a template ("i in 0..n" with a symbolic bound, or a
// concrete one marked "(not expanded: why)") stands for its iteration count, unknown when symbolic.
struct Family {
  bool is_template = false;
  Count count = Count::of(1);
  std::string why;         // "over the expansion bound", ...; "" when the count is symbolic
  std::string count_text;  // the symbolic count ("cfg.num_hidden_layers") when not a number
};

std::optional<std::uint64_t> integer(const std::string& t) {
  if (t.empty() || t.size() > 19 ||
      !std::all_of(t.begin(), t.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return std::nullopt;
  return std::stoull(t);
}

std::string loop_of(const std::optional<std::string>& repeat) {
  if (!repeat) return "";
  auto open = repeat->find(" (not expanded: ");
  return open == std::string::npos ? *repeat : repeat->substr(0, open);
}

// `parent` is the module's parent record, if any: instances built inside a template's constructor
// carry its loop too, and only the one built by the loop itself stands for the repetitions.
Family family_of(const ir::Module& m, const ir::Module* parent) {
  Family f;
  if (!m.repeat) return f;
  if (parent && loop_of(parent->repeat) == loop_of(m.repeat)) return f;
  std::string r = *m.repeat;
  auto open = r.find(" (not expanded: ");
  if (open != std::string::npos && r.back() == ')') {
    f.is_template = true;
    f.why = r.substr(open + 16, r.size() - open - 17);
    r = r.substr(0, open);
  }
  auto in = r.find(" in ");
  if (in == std::string::npos) return f;
  std::string range = r.substr(in + 4);
  auto dots = range.find("..");
  std::optional<std::uint64_t> lo, hi;
  std::string lo_text, hi_text;
  bool inclusive = false;
  if (dots != std::string::npos) {
    inclusive = range.compare(dots, 3, "..=") == 0;
    lo_text = range.substr(0, dots);
    hi_text = range.substr(dots + (inclusive ? 3 : 2));
    lo = integer(lo_text);
    hi = integer(hi_text);
    if (hi && inclusive) ++*hi;
  }
  if (lo && hi) {
    if (f.is_template) f.count = Count::of(*hi > *lo ? *hi - *lo : 0);
    return f;  // concrete and unmarked: an expanded instance
  }
  // A symbolic bound: the row names the count as the source states it (`cfg.num_hidden_layers`).
  f.is_template = true;
  f.count = {};
  f.count_text = "?";
  if (dots != std::string::npos && !hi_text.empty())
    f.count_text = lo_text == "0" && !inclusive
                       ? hi_text
                       : "(" + hi_text + (inclusive ? " + 1" : "") +
                             (lo_text.empty() || lo_text == "0" ? "" : " - " + lo_text) + ")";
  return f;
}

std::string shape_text(const ir::Parameter& p) {
  std::string out = "[";
  if (p.shape) {
    for (std::size_t i = 0; i < p.shape->size(); ++i)
      out += (i ? ", " : "") + std::to_string((*p.shape)[i]);
  } else if (p.symbolic_shape) {
    for (std::size_t i = 0; i < p.symbolic_shape->size(); ++i)
      out += (i ? ", " : "") + (*p.symbolic_shape)[i];
  } else {
    return "?";
  }
  return out + "]";
}

std::string marker_of(ir::Confidence c) {
  if (c == ir::Confidence::conditional) return "conditional";
  if (c == ir::Confidence::unknown || c == ir::Confidence::heuristic) return "unknown";
  return "";
}

// `child` relative to `parent`: "model.layers.0" under "model" -> "layers.0".
std::string relative(const std::string& child, const std::string& parent) {
  if (!parent.empty() && child.size() > parent.size() && child.rfind(parent, 0) == 0 &&
      child[parent.size()] == '.')
    return child.substr(parent.size() + 1);
  return child;
}

// "b*t*65536" -> {"b*t", 65536}; nullopt for anything but a product of names and numbers.
std::optional<std::pair<std::string, std::uint64_t>> product_term(const std::string& e) {
  std::vector<std::string> syms;
  std::uint64_t n = 1;
  std::size_t pos = 0;
  while (pos <= e.size()) {
    auto star = e.find('*', pos);
    std::string f = e.substr(pos, star == std::string::npos ? std::string::npos : star - pos);
    pos = star == std::string::npos ? e.size() + 1 : star + 1;
    if (f.empty()) return std::nullopt;
    if (std::all_of(f.begin(), f.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      if (f.size() > 12) return std::nullopt;
      n *= std::stoull(f);
    } else if (std::all_of(f.begin(), f.end(), [](char c) {
                 return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
               })) {
      syms.push_back(f);
    } else {
      return std::nullopt;
    }
  }
  std::sort(syms.begin(), syms.end());
  std::string key;
  for (const auto& x : syms)
    key += (key.empty() ? "" : "*") + x;
  return std::make_pair(key, n);
}

// Mutually exclusive alternatives (issue #21): a leaf inside undecided branches carries one mark
// per branch. A sum never adds two alternatives of one group: each group contributes the range
// from its smallest to its largest alternative (an alternative registering nothing counts 0).
struct Item {
  Count n;
  const std::vector<analysis::AlternativeMark>* alts = nullptr;
};
struct Range {
  Count lo = Count::of(0), hi = Count::of(0);
};
Count min_count(Count a, Count b) {
  if (!a.known() || !b.known()) return {};
  if (a.overflow) return b;
  if (b.overflow) return a;
  return Count::of(std::min(*a.n, *b.n));
}
Count max_count(Count a, Count b) {
  if (!a.known() || !b.known()) return {};
  if (a.overflow || b.overflow) return {std::nullopt, true};
  return Count::of(std::max(*a.n, *b.n));
}
// One outermost group of alternatives, for the listing under the total.
struct GroupSeen {
  std::string site;
  std::vector<std::string> labels;  // by alternative index
  std::vector<Range> ranges;        // by alternative index
};

Range range_of(const std::vector<const Item*>& items, std::size_t depth,
               std::vector<GroupSeen>* groups) {
  Range r;
  std::map<std::string, std::map<int, std::vector<const Item*>>> by_group;
  std::map<std::string, const analysis::AlternativeMark*> mark_of;
  std::vector<std::string> order;
  for (const Item* it : items) {
    if (!it->alts || it->alts->size() <= depth) {
      r.lo = add(r.lo, it->n);
      r.hi = add(r.hi, it->n);
      continue;
    }
    const auto& m = (*it->alts)[depth];
    if (!by_group.count(m.group)) order.push_back(m.group);
    by_group[m.group][m.index].push_back(it);
    mark_of[m.group] = &m;
  }
  for (const auto& g : order) {
    const auto& alts = by_group[g];
    const analysis::AlternativeMark& m = *mark_of[g];
    GroupSeen seen;
    seen.site = m.site;
    seen.labels.assign(static_cast<std::size_t>(std::max(m.count, 1)), "");
    seen.ranges.assign(seen.labels.size(), Range{});
    Range gr;
    bool first = true;
    for (const auto& [idx, its] : alts) {
      Range a = range_of(its, depth + 1, nullptr);
      if (idx >= 0 && static_cast<std::size_t>(idx) < seen.ranges.size()) {
        seen.ranges[static_cast<std::size_t>(idx)] = a;
        seen.labels[static_cast<std::size_t>(idx)] = (*its.front()->alts)[depth].label;
      }
      gr.lo = first ? a.lo : min_count(gr.lo, a.lo);
      gr.hi = first ? a.hi : max_count(gr.hi, a.hi);
      first = false;
    }
    if (static_cast<int>(alts.size()) < m.count) gr.lo = min_count(gr.lo, Count::of(0));
    r.lo = add(r.lo, gr.lo);
    r.hi = add(r.hi, gr.hi);
    if (groups) groups->push_back(std::move(seen));
  }
  return r;
}

std::string count_text(Count c) {
  if (c.overflow) return "over 2^64";
  return c.n ? group_thousands(*c.n) : std::string("?");
}

// "src/m.rs:14 (×36): `if c` 1,024 | `unless c` 0", one line per site and set of labels; the
// groups that change nothing (every alternative the same count) are named too.
std::vector<std::string> describe_groups(const std::vector<GroupSeen>& groups) {
  struct Agg {
    std::string site;
    std::vector<std::string> labels;
    std::vector<Count> sums;
    std::size_t times = 0;
  };
  std::vector<Agg> aggs;
  std::map<std::string, std::size_t> index;
  for (const auto& g : groups) {
    std::string key = g.site;
    for (const auto& l : g.labels)
      key += "\n" + l;
    auto [it, fresh] = index.try_emplace(key, aggs.size());
    if (fresh)
      aggs.push_back({g.site, g.labels, std::vector<Count>(g.ranges.size(), Count::of(0)), 0});
    Agg& a = aggs[it->second];
    ++a.times;
    for (std::size_t i = 0; i < g.ranges.size() && i < a.sums.size(); ++i)
      a.sums[i] = add(a.sums[i], g.ranges[i].hi);
  }
  std::vector<std::string> out;
  constexpr std::size_t kShown = 8;
  for (std::size_t k = 0; k < aggs.size() && k < kShown; ++k) {
    const Agg& a = aggs[k];
    std::string line = (a.site.empty() ? std::string("(unknown site)") : a.site);
    if (a.times > 1) line += " (×" + std::to_string(a.times) + ")";
    line += ":";
    for (std::size_t i = 0; i < a.labels.size(); ++i) {
      std::string label = a.labels[i].empty() ? "otherwise (registers nothing)" : a.labels[i];
      if (label.size() > 72) label = label.substr(0, 69) + "...";
      line += (i ? " | " : " ") + label + " → " + count_text(a.sums[i]);
    }
    out.push_back(line);
  }
  if (aggs.size() > kShown)
    out.push_back("and " + std::to_string(aggs.size() - kShown) + " more sites (query parameters)");
  return out;
}

// A product term with the bound input dimensions folded into its number: `b*t*65536` with b=1,
// t=2048 is {"", 134217728}; with only t bound, {"b", 134217728}. nullopt when the number does
// not fit 64 bits.
std::optional<std::pair<std::string, std::uint64_t>> bind_term(
    const std::pair<std::string, std::uint64_t>& term, const InputDims& dims) {
  std::string key;
  Count n = Count::of(term.second);
  std::size_t pos = 0;
  while (!term.first.empty() && pos <= term.first.size()) {
    auto star = term.first.find('*', pos);
    std::string sym =
        term.first.substr(pos, star == std::string::npos ? std::string::npos : star - pos);
    pos = star == std::string::npos ? term.first.size() + 1 : star + 1;
    auto it = dims.find(sym);
    if (it != dims.end())
      n = mul(n, Count::of(it->second));
    else
      key += (key.empty() ? "" : "*") + sym;
  }
  if (!n.n) return std::nullopt;
  return std::make_pair(key, *n.n);
}

std::string term_text(const std::pair<std::string, std::uint64_t>& t) {
  return t.first.empty() ? group_thousands(t.second) : t.first + "*" + std::to_string(t.second);
}

struct Tree {
  const ir::ModelIr& ir;
  const InputDims& dims;
  const InstanceIndex& calls;
  std::map<std::string, const ir::Operation*> ops;  // id -> operation
  std::map<std::string, Count> mult_total;          // symbol product -> count
  bool mult_partial = false;
  std::set<std::string> symbols;  // the input dimensions the Mult-Adds are written in

  // The mult-adds of the operations that read this module's own parameters ("" if none known);
  // the per-forward total counts them once per instance the module stands for (`times`).
  std::string module_mult_adds(const std::vector<const ir::Parameter*>& ps, Count times) {
    std::vector<std::string> seen;
    for (const auto* p : ps)
      for (const auto& u : p->uses) {
        auto it = ops.find(u);
        if (it == ops.end() || !it->second->mult_adds) continue;
        if (std::find(seen.begin(), seen.end(), u) == seen.end()) seen.push_back(u);
      }
    std::string out;
    for (const auto& u : seen) {
      // Another module's figure (an operation several module paths run) is not this one's.
      if (calls.shared_op(u)) {
        mult_partial = true;
        out += (out.empty() ? "" : " + ") + std::string("?");
        continue;
      }
      const std::string& m = *ops[u]->mult_adds;
      auto t = product_term(m);
      if (t) {
        std::size_t at = 0;
        while (!t->first.empty() && at <= t->first.size()) {
          auto star = t->first.find('*', at);
          symbols.insert(t->first.substr(at, star == std::string::npos ? star : star - at));
          at = star == std::string::npos ? t->first.size() + 1 : star + 1;
        }
      }
      if (t && !dims.empty()) t = bind_term(*t, dims);
      out += (out.empty() ? "" : " + ") + (t && !dims.empty() ? term_text(*t) : m);
      Count n = t ? mul(Count::of(t->second), times) : Count{};
      if (t && n.n) {
        auto [it, fresh] = mult_total.try_emplace(t->first, Count::of(0));
        it->second = add(it->second, n);
      } else {
        mult_partial = true;
      }
    }
    return out;
  }
  std::map<std::string, std::vector<const ir::Module*>> children;   // parent id -> modules
  std::map<std::string, std::vector<const ir::Parameter*>> params;  // module id -> leaves
  std::map<std::string, const ir::Module*> by_id;
  // A module built under a key another (not its ancestor or descendant) registered its weights
  // under: the same weights, counted once, the row says so.
  std::map<std::string, const ir::Module*> shared_with;
  std::map<std::string, Count> memo;
  // Leaves in any undecided branch: their marks, one path per arm of a group that registers the
  // same key (vgg's `features.2` in the Vgg16 and the Vgg19 arm).
  std::map<const ir::Parameter*, std::vector<std::vector<analysis::AlternativeMark>>> alts;
  std::set<std::string> has_alts;  // modules with an alternative leaf in their subtree

  // Per path, the element count of the key in that arm when it differs from the parameter's.
  std::map<const ir::Parameter*, std::map<std::size_t, Count>> path_counts;
  std::map<const ir::Parameter*, std::map<std::size_t, std::string>> path_shapes;  // likewise
  // `p`'s items, `mult` instances each: one per path of marks (none: one item outside any
  // branch).
  void items_of(const ir::Parameter* p, Count mult, std::vector<Item>& out) {
    auto it = alts.find(p);
    if (it == alts.end()) {
      out.push_back({mul(count_of(*p), mult), nullptr});
      return;
    }
    const auto own = path_counts.find(p);
    for (std::size_t i = 0; i < it->second.size(); ++i) {
      Count n = count_of(*p);
      if (own != path_counts.end())
        if (auto c = own->second.find(i); c != own->second.end()) n = c->second;
      out.push_back({mul(n, mult), &it->second[i]});
    }
  }
  // The leaves of one instance of `m`'s subtree, each counted once per instance it stands for.
  void collect(const ir::Module& m, Count mult, std::vector<Item>& out) {
    for (const auto* p : params[m.id])
      items_of(p, mult, out);
    for (const auto* c : children[m.id])
      collect(*c, mul(mult, fam(*c).count), out);
  }

  Family fam(const ir::Module& m) {
    const ir::Module* parent = nullptr;
    if (m.parent)
      if (auto it = by_id.find(*m.parent); it != by_id.end()) parent = it->second;
    return family_of(m, parent);
  }

  // A child built under the same key prefix with the same type as its parent (a crate's
  // `RmsNorm` wrapping candle_nn's) is the same module to a reader: its rows fold into the parent.
  bool folds_into(const ir::Module& child, const ir::Module& parent) {
    return child.prefix == parent.prefix && child.builder_root == parent.builder_root &&
           child.type_name == parent.type_name && !fam(child).is_template;
  }

  // The leaves and non-folded children of `m` with everything folded into it.
  void gather(const ir::Module& m, std::vector<const ir::Parameter*>& leaves,
              std::vector<const ir::Module*>& kids) {
    for (const auto* p : params[m.id])
      leaves.push_back(p);
    for (const auto* c : children[m.id]) {
      if (folds_into(*c, m))
        gather(*c, leaves, kids);
      else if (!shell(*c, children[m.id]))
        kids.push_back(c);
    }
  }

  // A layer several arms build at one key (`features.0` in each size of a network) registers its
  // weights once, on one of the arms' modules: the others hold nothing and are no rows of their
  // own (the row with the weights stands for all of them). Also when every arm builds it into
  // the same field, so the module is certain (`let p = if bias { linear(.., vb.pp("p"))? } else {
  // linear_no_bias(.., vb.pp("p"))? }`); two fields given one key are a shared weight, each a row.
  bool shell(const ir::Module& c, const std::vector<const ir::Module*>& siblings) {
    if (!params[c.id].empty() || !children[c.id].empty()) return false;
    return std::any_of(siblings.begin(), siblings.end(), [&](const ir::Module* s) {
      return s != &c && s->prefix == c.prefix && s->type_name == c.type_name &&
             s->builder_root == c.builder_root &&
             (c.confidence == ir::Confidence::conditional || s->field == c.field) &&
             (!params[s->id].empty() || !children[s->id].empty());
    });
  }

  // Subtree count of one instance of `m` (unknown when any leaf or family count is symbolic).
  Count total(const ir::Module& m) {
    auto it = memo.find(m.id);
    if (it != memo.end()) return it->second;
    Count sum = Count::of(0);
    for (const auto* p : params[m.id])
      sum = add(sum, count_of(*p));
    for (const auto* c : children[m.id])
      sum = add(sum, mul(total(*c), fam(*c).count));
    return memo[m.id] = sum;
  }

  // How many instances `m`'s record stands for, across its template ancestors.
  Count times(const ir::Module& m) {
    Count n = Count::of(1);
    for (const ir::Module* x = &m; x;) {
      n = mul(n, fam(*x).count);
      if (!x->parent) break;
      auto it = by_id.find(*x->parent);
      x = it == by_id.end() ? nullptr : it->second;
    }
    return n;
  }

  // A row whose items are alternatives: the smallest choice as its count, the largest named.
  static void show_range(const std::vector<Item>& items, SummaryRow& r) {
    std::vector<const Item*> ptrs;
    for (const auto& i : items)
      ptrs.push_back(&i);
    Range rg = range_of(ptrs, 0, nullptr);
    r.params = rg.lo.n;
    r.params_overflow = rg.lo.overflow;
    if (rg.lo.n != rg.hi.n || rg.lo.overflow != rg.hi.overflow)
      r.marker =
          (r.marker.empty() ? "" : r.marker + "; ") + "alternatives: up to " + count_text(rg.hi);
  }

  void emit(const ir::Module& m, const std::string& parent_prefix, int depth, int max_depth,
            std::vector<SummaryRow>& rows) {
    Family fam = this->fam(m);
    SummaryRow r;
    r.depth = depth;
    r.name = depth == 0 ? m.type_name : relative(m.prefix, parent_prefix);
    // Built under its parent's own prefix: named by its field, never by the full path again.
    if (depth > 0 && !m.prefix.empty() && m.prefix == parent_prefix)
      r.name = m.field.value_or("same prefix");
    if (r.name.empty()) r.name = m.field.value_or(m.type_name);
    if (fam.is_template)
      r.name += " × " + (fam.count.n ? group_thousands(*fam.count.n) : fam.count_text);
    r.type = m.type_name;
    Count c = mul(total(m), fam.count);
    r.params = c.n;
    r.params_overflow = c.overflow;
    r.trainable = "?";
    r.marker = marker_of(m.confidence);
    if (has_alts.count(m.id)) {
      // Alternatives below never add up: the row shows the smallest choice and names the largest.
      std::vector<Item> items;
      collect(m, fam.count, items);
      show_range(items, r);
    }
    if (!fam.why.empty())
      r.marker = (r.marker.empty() ? "" : r.marker + "; ") + "not expanded: " + fam.why;
    std::vector<const ir::Parameter*> leaves;
    std::vector<const ir::Module*> kids;
    gather(m, leaves, kids);
    std::stable_sort(leaves.begin(), leaves.end(),
                     [](const ir::Parameter* a, const ir::Parameter* b) {
                       return query::natural_less(a->key, b->key);
                     });
    if (calls.main_roots().empty()) {
      r.mult_adds = module_mult_adds(leaves, times(m));
    } else if (const ir::InstanceCall* call = calls.call_of(m.id)) {
      // One call of this instance in the forward pass: its operations and every module it runs.
      r.output_shape = calls.output_shape(*call);
      SymSum ma = calls.mult_adds(*call);
      bool each = false;
      if (fam.is_template) {
        if (fam.count.n)
          ma.scale(*fam.count.n);
        else
          each = true;  // a family of unknown count: the figure is one instance's
      }
      r.mult_adds_lower_bound = ma.lower_bound();
      std::string text = ma.text();
      // Nothing counted and something left out: unknown ("?"), not "at least nothing".
      if (text.empty() && ma.lower_bound())
        r.mult_adds = "?";
      else if (!text.empty())
        r.mult_adds = (ma.lower_bound() ? "≥ " : "") + text + (each ? " each" : "");
    }
    if (auto sh = shared_with.find(m.id); sh != shared_with.end()) {
      // A tied layer sits at its owner's key; its own field (`lm_head`) says which one it is.
      std::string as;
      if (m.field && !m.field->empty() && *m.field != m.prefix.substr(m.prefix.rfind('.') + 1))
        as = "`" + *m.field + "`, ";
      r.marker =
          (r.marker.empty() ? "" : r.marker + "; ") + as + "shared with " + sh->second->source;
    }
    r.module_id = m.id;
    rows.push_back(r);
    if (max_depth >= 0 && depth >= max_depth) return;
    for (const auto* p : leaves) {
      SummaryRow leaf;
      leaf.depth = depth + 1;
      leaf.name = relative(p->key, m.prefix);
      leaf.shape = shape_text(*p);
      Count n = count_of(*p);
      leaf.params = n.n;
      leaf.params_overflow = n.overflow;
      leaf.trainable = p->role == ir::ParameterRole::running_state ? "no" : "?";
      leaf.marker = marker_of(p->confidence);
      if (auto sh = path_shapes.find(p); sh != path_shapes.end()) {
        // A key whose shape differs by arm: each arm's shape, the smallest count, the largest
        // named.
        std::vector<std::string> shapes;
        for (const auto& [path, text] : sh->second)
          if (std::find(shapes.begin(), shapes.end(), text) == shapes.end()) shapes.push_back(text);
        leaf.shape.clear();
        for (const auto& text : shapes)
          leaf.shape += (leaf.shape.empty() ? "" : " | ") + text;
        std::vector<Item> items;
        items_of(p, Count::of(1), items);
        show_range(items, leaf);
      }
      rows.push_back(leaf);
    }
    for (const auto* k : kids)
      emit(*k, m.prefix, depth + 1, max_depth, rows);
  }
};

// Module scope timings (runtime.module_timings) onto the module rows: an instance shows its own
// scope; a family (a `{i}` row, or several instances of one module) the sum over its instances
// and its slowest instance.
void attach_timings(const ir::ModelIr& ir, SummaryModel& out) {
  if (!ir.runtime || ir.runtime->module_timings.empty()) return;
  const auto& rt = *ir.runtime;
  std::map<std::string, std::vector<const ir::ModuleTiming*>> instances;
  std::map<std::string, const ir::ModuleTiming*> families;
  for (const auto& t : rt.module_timings) {
    if (t.path.find('{') != std::string::npos)
      families[t.module] = &t;
    else
      instances[t.module].push_back(&t);
  }
  // The run's real wall time (threads' union); IRs merged before it existed: the busy times' sum.
  std::uint64_t wall = rt.wall_ns;
  if (wall == 0)
    for (auto ns : rt.thread_busy_ns)
      wall += ns;
  if (wall > 0) out.totals.wall_ns = wall;
  out.totals.host_side = rt.host_side_timings;
  out.totals.unmatched_module_paths = rt.unmatched_module_paths;
  for (auto& r : out.rows) {
    if (r.module_id.empty()) continue;
    auto in = instances.find(r.module_id);
    auto fam = families.find(r.module_id);
    if (in == instances.end() && fam == families.end()) continue;
    std::uint64_t total = 0, self = 0, calls = 0;
    if (fam != families.end()) {
      total = fam->second->total.total_ns;
      self = fam->second->self.total_ns;
      calls = fam->second->calls;
    } else {
      for (const auto* t : in->second) {
        total += t->total.total_ns;
        self += t->self.total_ns;
        calls += t->calls;
      }
    }
    r.time_total_ns = total;
    r.time_self_ns = self;
    r.calls = calls;
    if (wall > 0) r.self_share = static_cast<double>(self) / static_cast<double>(wall);
    if (in != instances.end() && (fam != families.end() || in->second.size() > 1)) {
      const ir::ModuleTiming* slowest = in->second.front();
      for (const auto* t : in->second)
        if (t->total.total_ns > slowest->total.total_ns) slowest = t;
      r.slowest = (slowest->instance ? "#" + std::to_string(*slowest->instance) + " "
                                     : slowest->path + " ") +
                  short_duration(slowest->total.total_ns);
    }
  }
}

// Output statistics (runtime.module_stats) onto the module rows (`summary --stats`): a family
// row's figures where the runtime has one, else the instances' folded (largest abs_max and RMS,
// non-finite elements summed).
void attach_stats(const ir::ModelIr& ir, SummaryModel& out) {
  out.totals.stats_records = ir.runtime ? ir.runtime->stats_records : 0;
  if (!ir.runtime || ir.runtime->module_stats.empty()) return;
  std::map<std::string, std::vector<const ir::ModuleStats*>> instances, families;
  for (const auto& s : ir.runtime->module_stats) {
    if (s.module.empty()) continue;
    (s.path.find('{') != std::string::npos ? families : instances)[s.module].push_back(&s);
  }
  for (auto& r : out.rows) {
    if (r.module_id.empty()) continue;
    auto fam = families.find(r.module_id);
    auto in = instances.find(r.module_id);
    const std::vector<const ir::ModuleStats*>* from = nullptr;
    if (fam != families.end())
      from = &fam->second;
    else if (in != instances.end())
      from = &in->second;
    if (!from) continue;
    std::uint64_t non_finite = 0;
    for (const auto* s : *from) {
      non_finite += s->nan + s->pos_inf + s->neg_inf;
      if (s->max_abs_max)
        r.stats_abs_max = std::max(r.stats_abs_max.value_or(*s->max_abs_max), *s->max_abs_max);
      if (s->max_rms) r.stats_rms = std::max(r.stats_rms.value_or(*s->max_rms), *s->max_rms);
    }
    r.stats_non_finite = non_finite;
  }
}

}  // namespace

SummaryModel build_summary(const ir::ModelIr& ir, const std::string& dtype, int max_depth,
                           const InputDims& dims) {
  const InstanceIndex calls(ir, dims);
  // Every name given must be one the forward pass is written in: a typo is refused, not ignored.
  if (!dims.empty() && !calls.main_roots().empty()) {
    const std::set<std::string> known = calls.symbols();
    for (const auto& [name, size] : dims)
      if (!known.count(name)) {
        std::string names;
        for (const auto& k : known)
          names += (names.empty() ? "" : ", ") + k;
        throw InputError("--input-shape " + name + "=" + std::to_string(size),
                         "`" + name + "` is not a dimension of the forward pass's input; its " +
                             "shapes and Mult-Adds are written in " +
                             (names.empty() ? std::string("no symbolic dimension") : names));
      }
  }
  std::vector<std::string> out_shared;
  Tree t{ir, dims, calls, {}, {}, false, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}};
  for (const auto& o : ir.operations)
    t.ops[o.id] = &o;
  std::vector<const ir::Module*> roots;
  for (const auto& m : ir.modules) {
    t.by_id[m.id] = &m;
    if (m.parent)
      t.children[*m.parent].push_back(&m);
    else
      roots.push_back(&m);
  }
  // Rows read like the model runs (torchinfo's order): children the forward pass calls in the
  // order their calls start, then the others in construction order — by the source line that
  // built each, then by key, numeric segments numerically (layers.2 < layers.10). Execution order
  // matters where every module is built on one line (a function root's helper).
  auto sequence = [&](const ir::Module* m) -> std::optional<std::uint64_t> {
    const ir::InstanceCall* c = calls.call_of(m->id);
    return c ? c->sequence : std::nullopt;
  };
  for (auto& [id, kids] : t.children)
    std::stable_sort(kids.begin(), kids.end(), [&](const ir::Module* a, const ir::Module* b) {
      auto sa = sequence(a), sb = sequence(b);
      if (sa.has_value() != sb.has_value()) return sa.has_value();
      if (sa && *sa != *sb) return *sa < *sb;
      if (a->source != b->source) return query::natural_less(a->source, b->source);
      return query::natural_less(a->prefix, b->prefix);
    });
  for (const auto& p : ir.parameters)
    if (p.module) t.params[*p.module].push_back(&p);
  for (const auto& p : ir.parameters) {
    // A mark of a group the path already has starts the next path: the marks before that
    // group's, then this one (add_parameters writes a key's further arms so).
    std::vector<std::vector<analysis::AlternativeMark>> paths(1);
    for (const auto& e : p.evidence) {
      if (e.detail.rfind("shape in this alternative: [", 0) == 0 && e.detail.back() == ']') {
        // The element count of the key in the path just read: a product of numbers, or unknown.
        Count n = Count::of(1);
        std::string list = e.detail.substr(28, e.detail.size() - 29);
        for (std::size_t at = 0; at <= list.size();) {
          std::size_t comma = list.find(", ", at);
          std::string d =
              list.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
          auto v = integer(d);
          n = v ? mul(n, Count::of(*v)) : Count{};
          if (comma == std::string::npos) break;
          at = comma + 2;
        }
        t.path_counts[&p][paths.size() - 1] = n;
        t.path_shapes[&p][paths.size() - 1] = "[" + list + "]";
        continue;
      }
      auto m = analysis::parse_alternative(e);
      if (!m) continue;
      auto& cur = paths.back();
      auto same =
          std::find_if(cur.begin(), cur.end(), [&](const auto& x) { return x.group == m->group; });
      if (same == cur.end()) {
        cur.push_back(std::move(*m));
        continue;
      }
      std::vector<analysis::AlternativeMark> next(cur.begin(), same);
      next.push_back(std::move(*m));
      paths.push_back(std::move(next));
    }
    if (paths.front().empty()) continue;
    t.alts[&p] = std::move(paths);
    for (const ir::Module* x = p.module && t.by_id.count(*p.module) ? t.by_id[*p.module] : nullptr;
         x && t.has_alts.insert(x->id).second;)
      x = x->parent && t.by_id.count(*x->parent) ? t.by_id[*x->parent] : nullptr;
  }
  {
    auto related = [&](const ir::Module* a, const ir::Module* b) {
      for (const ir::Module* x = a; x;)
        if (x == b)
          return true;
        else
          x = x->parent && t.by_id.count(*x->parent) ? t.by_id[*x->parent] : nullptr;
      return false;
    };
    std::map<std::pair<std::string, std::string>, std::vector<const ir::Module*>> by_key;
    for (const auto& m : ir.modules)
      if (!m.prefix.empty()) by_key[{m.component + "\n" + m.builder_root, m.prefix}].push_back(&m);
    for (const auto& [key, ms] : by_key) {
      const ir::Module* owner = nullptr;
      for (const auto* m : ms)
        if (!t.params[m->id].empty()) owner = owner ? owner : m;
      if (!owner) continue;
      // Weights registered under an undecided branch may be two alternatives building under the
      // same key (`cross_attn` or `ff` at `layer.1`), not one weight used twice: not marked.
      bool alternative = false;
      for (const auto* p : t.params[owner->id])
        alternative = alternative || t.alts.count(p) > 0;
      if (alternative) continue;
      // Two conditional builds of one layer type at one key (vgg's `features.2` in each of the
      // `match model` arms, whose common keys no longer carry the arms' marks) are alternatives
      // too.
      auto alternatives = [&](const ir::Module* m) {
        return m->confidence != ir::Confidence::proven &&
               owner->confidence != ir::Confidence::proven && m->type_name == owner->type_name;
      };
      for (const auto* m : ms)
        if (m != owner && t.params[m->id].empty() && !related(m, owner) && !related(owner, m) &&
            !alternatives(m)) {
          t.shared_with[m->id] = owner;
          // A wrapper's inner layer (with_tracing's `Linear::from_weights` holding a candle-nn
          // Linear at the same key) shares through the wrapper: one note, the outermost's.
          if (std::any_of(ms.begin(), ms.end(),
                          [&](const ir::Module* w) { return w != m && related(m, w); }))
            continue;
          out_shared.push_back(m->prefix + " built at " + m->source + " reuses the weights of " +
                               owner->prefix + " built at " + owner->source);
        }
    }
  }
  SummaryModel out;
  out.totals.shared = std::move(out_shared);
  for (const auto* r : roots)
    t.emit(*r, "", 0, max_depth, out.rows);
  // Each leaf counts once per instance its module stands for: a family kept as a template of
  // known count multiplies; one of unknown count is left out and the total says so.
  Count total = Count::of(0);
  bool any = false;
  std::vector<Item> items;
  std::vector<std::string> uncounted;  // family prefixes of unknown count
  for (const auto& p : ir.parameters) {
    Count n = count_of(p);
    // A key whose shape differs by alternative counts each arm's own (first path's here).
    if (auto pc = t.path_counts.find(&p);
        !n.known() && pc != t.path_counts.end() && pc->second.count(0) &&
        pc->second.size() == t.alts[&p].size() &&
        std::all_of(pc->second.begin(), pc->second.end(),
                    [](const auto& c) { return c.second.known(); }))
      n = pc->second.at(0);
    if (!n.known()) {
      ++out.totals.unknown_leaves;
      continue;
    }
    Count times = Count::of(1);
    if (p.module)
      if (auto it = t.by_id.find(*p.module); it != t.by_id.end()) times = t.times(*it->second);
    if (!times.known()) {
      for (const ir::Module* x = t.by_id[*p.module]; x;) {
        if (t.fam(*x).is_template && !t.fam(*x).count.known() &&
            std::find(uncounted.begin(), uncounted.end(), x->prefix) == uncounted.end())
          uncounted.push_back(x->prefix);
        x = x->parent && t.by_id.count(*x->parent) ? t.by_id[*x->parent] : nullptr;
      }
      continue;
    }
    total = add(total, mul(n, times));
    t.items_of(&p, times, items);
    any = true;
  }
  if (any || ir.parameters.empty()) {
    out.totals.total = total.n;
    out.totals.overflow = total.overflow;
  }
  std::optional<Count> range_hi;
  if (!t.alts.empty() && any) {
    std::vector<const Item*> ptrs;
    for (const auto& i : items)
      ptrs.push_back(&i);
    std::vector<GroupSeen> groups;
    Range rg = range_of(ptrs, 0, &groups);
    out.totals.total = rg.lo.n;
    out.totals.overflow = rg.lo.overflow;
    if (rg.hi.n != rg.lo.n || rg.hi.overflow != rg.lo.overflow) {
      out.totals.total_max = rg.hi.n;
      range_hi = rg.hi;
    }
    out.totals.alternatives = describe_groups(groups);
  }
  if (!uncounted.empty()) {
    std::string names;
    constexpr std::size_t kNamed = 8;  // the line stays readable on a crate of many models
    for (std::size_t i = 0; i < uncounted.size() && i < kNamed; ++i)
      names += (names.empty() ? "" : ", ") + (uncounted[i].empty() ? "(root)" : uncounted[i]);
    if (uncounted.size() > kNamed)
      names += " and " + std::to_string(uncounted.size() - kNamed) + " more";
    out.totals.lower_bound =
        "families repeated a number of times not known statically are not "
        "counted: " +
        names;
  }
  for (const auto& f : ir.findings)
    if (f.message.find("analysis truncated") != std::string::npos) {
      out.totals.lower_bound =
          (out.totals.lower_bound.empty() ? "" : out.totals.lower_bound + "; ") +
          "the analysis was truncated (" + f.message + ")";
      break;
    }
  // An unknown total says no more than that.
  if (!out.totals.total && !out.totals.overflow) out.totals.lower_bound.clear();
  // Trainable stays unknown: trainability is decided where the VarBuilder is made.
  out.totals.dtype = dtype;
  if (!calls.main_roots().empty()) {
    SymSum ma, act;
    for (const auto* r : calls.main_roots()) {
      ma.add(calls.mult_adds(*r), 1);
      act.add(calls.activations(*r), 1);
    }
    out.totals.mult_adds_from_instances = true;
    if (calls.children_run())
      for (const auto* r : calls.main_roots())
        out.totals.forward_runs +=
            (out.totals.forward_runs.empty() ? "" : " + ") + r->path + "." + r->method;
    // Nothing counted and something left out says no more than that: unknown, not "at least 0".
    out.totals.mult_adds = !ma.text().empty() ? ma.text() : ma.lower_bound() ? "unknown" : "0";
    if (ma.lower_bound()) out.totals.mult_adds_missing.assign(ma.missing.begin(), ma.missing.end());
    out.totals.activations = !act.text().empty() ? act.text() : act.lower_bound() ? "unknown" : "0";
    out.totals.activation_unknown_ops = act.missing_ops;
    out.totals.mult_adds_branches.assign(ma.branches.begin(), ma.branches.end());
    out.totals.activation_branches.assign(act.branches.begin(), act.branches.end());
    if (auto n = act.number(); n && !act.text().empty() && dtype_bytes(dtype) > 0)
      out.totals.activation_bytes = mul(Count::of(*n), Count::of(dtype_bytes(dtype))).n;
  } else if (!t.mult_total.empty() && max_depth < 0) {
    std::string total_text;
    for (const auto& [key, n] : t.mult_total)
      total_text += (total_text.empty() ? "" : " + ") + (key.empty() ? "" : key + "*") +
                    (n.n ? group_thousands(*n.n) : std::string("(over 64 bits)"));
    if (t.mult_partial) total_text += " + terms not summed";
    out.totals.mult_adds = total_text;
  }
  if (std::uint64_t b = dtype_bytes(dtype); b > 0 && (out.totals.total || out.totals.overflow)) {
    Count bytes = mul(Count{out.totals.total, out.totals.overflow}, Count::of(b));
    out.totals.bytes = bytes.n;
    out.totals.bytes_overflow = bytes.overflow;
    if (range_hi) out.totals.bytes_max = mul(*range_hi, Count::of(b)).n;
  }
  if (calls.main_roots().empty())
    for (const auto& [name, size] : dims)
      if (!t.symbols.count(name)) out.totals.unused_dims.push_back(name);
  for (const auto& sym : t.symbols)
    out.totals.dims_in_use += (out.totals.dims_in_use.empty() ? "" : ", ") + sym;
  attach_timings(ir, out);
  return out;
}

namespace {

bool identifier(const std::string& name) {
  return !name.empty() && !std::isdigit(static_cast<unsigned char>(name[0])) &&
         std::all_of(name.begin(), name.end(), [](char c) {
           return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
         });
}

bool positive(const std::string& value) {
  return !value.empty() && value.size() <= 12 &&
         std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; }) &&
         std::stoull(value) > 0;
}

// `--input-shape` is comma-separated `name=size` (a symbolic dimension) and `name=AxBxC` (a
// tensor input's whole shape, each dimension a size or a name) entries; calls `dim` or `tensor`
// for each, and refuses anything else.
void each_input_entry(
    const std::string& text, const std::function<void(const std::string&, std::uint64_t)>& dim,
    const std::function<void(const std::string&, std::vector<std::string>)>& tensor) {
  if (text.empty()) return;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    auto comma = text.find(',', pos);
    std::string part =
        text.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    pos = comma == std::string::npos ? text.size() + 1 : comma + 1;
    auto eq = part.find('=');
    std::string name = eq == std::string::npos ? "" : part.substr(0, eq);
    std::string value = eq == std::string::npos ? "" : part.substr(eq + 1);
    std::vector<std::string> dims;
    if (value.find('x') != std::string::npos) {
      for (std::size_t at = 0; at <= value.size();) {
        auto x = value.find('x', at);
        dims.push_back(value.substr(at, x == std::string::npos ? std::string::npos : x - at));
        at = x == std::string::npos ? value.size() + 1 : x + 1;
      }
    }
    bool shape_ok = dims.size() >= 2 && dims.size() <= 8 &&
                    std::all_of(dims.begin(), dims.end(),
                                [](const std::string& d) { return positive(d) || identifier(d); });
    // A child's forward input, for a root without a forward of its own, is named by the child's
    // key path (`model.encoder.x=1x80x3000`): whole shapes only.
    bool dotted = shape_ok && name.find('.') != std::string::npos && name.front() != '.' &&
                  name.back() != '.' && name.find("..") == std::string::npos &&
                  std::all_of(name.begin(), name.end(), [](char c) {
                    return c == '.' || c == '_' || std::isalnum(static_cast<unsigned char>(c));
                  });
    if ((!identifier(name) && !dotted) || (!positive(value) && !shape_ok))
      throw InputError("--input-shape " + text,
                       "expected name=size pairs of the input's symbolic dimensions (sizes "
                       "positive integers, e.g. b=1,t=2048), or a tensor input's whole shape "
                       "(xs=1x3x224x224; a child's forward input by its key path, "
                       "model.encoder.x=1x80x3000) (got `" +
                           part + "`)");
    if (shape_ok)
      tensor(name, std::move(dims));
    else
      dim(name, std::stoull(value));
  }
}

}  // namespace

InputDims parse_input_shape(const std::string& text) {
  InputDims dims;
  each_input_entry(
      text, [&](const std::string& n, std::uint64_t v) { dims[n] = v; },
      [](const std::string&, std::vector<std::string>) {});
  return dims;
}

std::map<std::string, std::vector<std::string>> parse_input_tensors(const std::string& text) {
  std::map<std::string, std::vector<std::string>> out;
  each_input_entry(
      text, [](const std::string&, std::uint64_t) {},
      [&](const std::string& n, std::vector<std::string> d) { out[n] = std::move(d); });
  return out;
}

std::string summary_dtype(const std::string& requested, const std::string& config_path) {
  // `--dtype bf16`, `BF16` and torch's `bfloat16` name the same dtype.
  std::string dtype = dtype_from_torch(requested);
  if (dtype.empty())
    for (char c : requested)
      dtype += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (dtype.empty() && !config_path.empty()) {
    auto values = analysis::read_config_values(config_path);
    if (const auto* t = values.find("torch_dtype");
        t && t->kind == analysis::SymValue::Kind::string)
      dtype = dtype_from_torch(t->text);
  }
  return dtype.empty() ? "F32" : dtype;
}

const SummaryRow* row_of(const SummaryModel& m, const std::string& module_id) {
  for (const auto& r : m.rows)
    if (r.module_id == module_id) return &r;
  return nullptr;
}

std::string render_model_summary(const Analysis& a, const std::string& config_path,
                                 const SummaryOptions& opts) {
  // A quantized model computes in F32 (its QMatMul outputs and dequantized tensors): its state
  // and activations are at F32, not at config.json's torch_dtype.
  const bool quantized = opts.quantized && opts.dtype.empty();
  const std::string dtype = quantized ? "F32" : summary_dtype(opts.dtype, config_path);
  SummaryModel m = build_summary(a.ir, dtype, opts.max_depth, opts.input_dims);
  if (opts.stats) attach_stats(a.ir, m);
  if (quantized) {  // no size at a float dtype it will never have
    m.totals.bytes.reset();
    m.totals.bytes_max.reset();
    m.totals.bytes_overflow = false;
  }
  std::string title = a.package_id;
  for (const auto& c : a.ir.components)
    title += "  ·  " + c.qualified_name;
  TableLayout layout{opts.weights, opts.all_columns, opts.width, opts.weights_flag,
                     opts.columns_flag};
  const std::string table = render_summary_table(title, m.rows, m.totals, layout);
  std::string out;
  if (a.ir.components.empty())
    out += "No component: no public type has a constructor taking a VarBuilder (try --root T).\n";
  for (const auto& c : a.ir.components)
    if (c.parameters.empty())
      out += "`" + c.name +
             "` registers no parameter the inventory can follow: its total is a lower bound "
             "(see `candle-graph check`).\n";
  if (quantized)
    out +=
        "Params size: not at a float dtype: the root loads through candle-transformers' quantized "
        "VarBuilder, each tensor in its GGUF file's type (`candle-graph memory --gguf FILE` or "
        "`--quant TYPE` counts the bytes).\n";
  if (m.totals.unknown_leaves > 0 && config_path.empty())
    out += "Shapes stay symbolic where no config binds them: " + opts.config_hint + ".\n";
  // With a config bound, what it left unbound is said here, not only in `check`'s findings.
  if (!config_path.empty()) {
    out += pipeline::config_warning_lines(a.ir);
    if (m.totals.unknown_leaves > 0)
      out += std::to_string(m.totals.unknown_leaves) +
             " parameters keep a symbolic shape with the config bound: a constructor argument "
             "(--arg name=value) or a value the binding does not evaluate.\n";
  }
  // The state a forward keeps across calls, per position: what `memory` multiplies by a context.
  if (a.ir.components.size() == 1 && !a.ir.state_stores.empty()) {
    try {
      MemoryOptions mo;
      mo.dtype = dtype;
      mo.context = 1;
      const MemoryReport r = build_memory(a, config_path, mo);
      if (r.kv_cache.bound == Bound::exact && r.kv_cache.bytes && *r.kv_cache.bytes > 0)
        out += "KV cache: " + group_thousands(*r.kv_cache.bytes) +
               " bytes per position at batch 1, " + dtype +
               ", all layers (`candle-graph memory` sizes a context).\n";
    } catch (const InputError&) {
      // No single forward to size it from: `memory` says why.
    }
  }
  out +=
      "Trainable: unknown (\"?\") — trainability is decided where the VarBuilder is made (VarMap "
      "or mmaped weights), which the inventory does not see.\n";
  // The notes after the table wrap to the width (the table fits it already).
  return table + wrap_text(out, opts.width);
}

}  // namespace cg::query
