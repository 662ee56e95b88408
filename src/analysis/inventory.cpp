// The crate-level driver of the parameter inventory: finds the component candidates (structs
// with a VarBuilder constructor returning Self), runs each one's constructor on the interpreter
// with the builder/prefix domain (builder/domain.hpp), picks the roots no other candidate builds,
// and turns every walk's instances, leaves and messages into the IR's components, modules,
// parameters and findings.
#include "analysis/inventory.hpp"

#include <algorithm>
#include <atomic>
#include <exception>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <thread>

#include "analysis/builder/domain.hpp"
#include "analysis/config_binding.hpp"
#include "ir/stable_id.hpp"
#include "util/deep_stack.hpp"
#include "util/error.hpp"
#include "util/text.hpp"

namespace cg::analysis {

bool inventory::is_builder_type(const BuilderTypes& types, const rust::Crate& crate,
                                const std::string& module, const std::string& t) {
  return types.names(crate, module, t, /*wrappers=*/false);
}

namespace {

using inventory::Cert;
using inventory::Inst;
using inventory::is_builder_type;
using inventory::Leaf;

ir::Confidence confidence_of(const Cert& c) {
  return c.level;
}

bool mentions_self_or(const std::string& ret, const std::string& type_name) {
  return contains_word(ret, "Self") || contains_word(ret, type_name);
}

// Candidate types: structs with an associated constructor taking a VarBuilder and returning
// Self (`new`, else `load`, else the alphabetically first).
struct Candidate {
  std::size_t type_item, ctor;
};

bool takes_builder(const rust::Crate& crate, const BuilderTypes& types, const rust::Item& f) {
  for (const auto& p : f.params)
    if (is_builder_type(types, crate, f.module, p.type_text)) return true;
  return false;
}

std::vector<Candidate> find_candidates(const rust::Crate& crate, const BuilderTypes& types) {
  // Associated functions taking a VarBuilder, by the qualified type of their impl.
  std::map<std::string, std::vector<std::size_t>> vb_methods;
  for (std::size_t m = 0; m < crate.items().size(); ++m) {
    const rust::Item& f = crate.items()[m];
    if (f.kind != rust::ItemKind::Method || f.impl < 0 || f.self_kind != rust::SelfKind::None)
      continue;
    if (!takes_builder(crate, types, f)) continue;
    const rust::Impl& impl = crate.impls()[static_cast<std::size_t>(f.impl)];
    vb_methods[impl.module.empty() ? impl.self_base : impl.module + "::" + impl.self_base]
        .push_back(m);
  }
  std::vector<Candidate> cands;
  for (std::size_t i = 0; i < crate.items().size(); ++i) {
    const rust::Item& t = crate.items()[i];
    if (t.kind != rust::ItemKind::Struct || t.cfg.state == rust::Tri::False) continue;
    // A loaded dependency's layer types are walked when the crate builds them, never as roots.
    if (!crate.is_local(i)) continue;
    auto takes_vb = [&](std::size_t m) {
      const rust::Item& f = crate.items()[m];
      if (f.self_kind != rust::SelfKind::None || f.cfg.state == rust::Tri::False) return false;
      if (f.impl >= 0 && !crate.impls()[static_cast<std::size_t>(f.impl)].trait.empty())
        return false;
      return takes_builder(crate, types, f) && mentions_self_or(f.return_type, t.name);
    };
    std::size_t chosen = SIZE_MAX;
    for (const auto& name : std::vector<std::string>{"new", "load"})
      for (std::size_t m : crate.methods(i, name))
        if (chosen == SIZE_MAX && takes_vb(m)) chosen = m;
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
    if (chosen != SIZE_MAX) cands.push_back({i, chosen});
  }
  return cands;
}

struct Result {
  Candidate cand;
  inventory::Walked out;
  // Child constructor calls its shallow walk met (Walked::children_met): what orders the full
  // walks, never what they find.
  std::size_t children_met = 0;
};

struct Setup {
  const LayerCatalog& catalog;
  bool audited;
  const ConfigBinding& binding;
  const BuilderTypes& types;
  builder::StaticMemo& memo;
};

// Runs `walk(i, binding, memo)` for each i of `order` (a permutation of 0..n, the order to start
// them in), on one worker per core when `parallel`.
// Walks are independent: without a bound config what they share is read-only (the crate, its
// lowered bodies, the catalogs) or a cache, so the calling thread (already on a deep stack) walks
// with the shared caches of `s` and every other worker on a deep stack of its own with its own
// memo and config-binding cache (a binding of no config records no diagnostics). Callers store
// results by index, so the output is the serial one; the error of the lowest index is rethrown,
// whichever thread met it first. With a bound config the walks run one after another: each
// records what it read of the file.
template <class Walk>
void run_walks(const rust::Crate& crate, const Setup& s, const std::vector<std::size_t>& order,
               bool parallel, Walk&& walk) {
  const std::size_t n = order.size();
  const std::size_t workers =
      parallel ? std::min<std::size_t>(n, std::max(1u, std::thread::hardware_concurrency())) : 1;
  if (workers <= 1) {  // in index order, as every walk's reads of a bound config are recorded
    for (std::size_t i = 0; i < n; ++i)
      walk(i, s.binding, s.memo);
    return;
  }
  std::vector<std::exception_ptr> errors(n);
  std::atomic<std::size_t> next{0};
  auto work = [&](const ConfigBinding& binding, builder::StaticMemo& memo) {
    for (std::size_t k = next++; k < n; k = next++) {
      try {
        walk(order[k], binding, memo);
      } catch (...) {
        errors[order[k]] = std::current_exception();
      }
    }
  };
  std::vector<std::thread> pool;
  for (std::size_t t = 1; t < workers; ++t)
    pool.emplace_back([&] {
      util::run_on_deep_stack([&] {
        ConfigBinding binding(crate, nullptr);
        builder::StaticMemo memo;
        work(binding, memo);
      });
    });
  work(s.binding, s.memo);
  for (auto& t : pool)
    t.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

std::vector<std::size_t> each_index(std::size_t n) {
  std::vector<std::size_t> order(n);
  for (std::size_t i = 0; i < n; ++i)
    order[i] = i;
  return order;
}

// A function-style model (`pub fn resnet18(num_classes: usize, vb: VarBuilder) -> Result<Func>`)
// named by `--root`: the function is both the component and its constructor. Never chosen
// without `--root`: every layer helper (`fn linear(.., vb)`) has that shape too.
std::vector<Result> function_roots(const rust::Crate& crate, const std::string& root,
                                   const BuilderTypes& types) {
  std::vector<Result> out;
  for (std::size_t i = 0; i < crate.items().size(); ++i) {
    const rust::Item& f = crate.items()[i];
    if (f.kind != rust::ItemKind::Function || f.cfg.state == rust::Tri::False || !crate.is_local(i))
      continue;
    if ((f.name == root || f.qualified == root) && takes_builder(crate, types, f))
      out.push_back({Candidate{i, i}, {}});
  }
  return out;
}

// The components to analyze: `--root`, or the public candidates no other candidate builds.
std::vector<Result> choose_roots(const rust::Crate& crate, const std::vector<Candidate>& cands,
                                 const InventoryOptions& opts, const Setup& s) {
  std::vector<Result> results;
  std::set<std::string> built_elsewhere;
  // Roots are the public candidates no other candidate builds; finding them needs every walk,
  // unbound (the config belongs to the root only), shallow (children are not expanded).
  std::vector<inventory::Walked> shallow(opts.root.empty() ? cands.size() : 0);
  run_walks(crate, s, each_index(shallow.size()), opts.config == nullptr,
            [&](std::size_t i, const ConfigBinding& binding, builder::StaticMemo& memo) {
              builder::BuilderDomain d(crate, s.catalog, s.audited, binding, s.types, false);
              d.set_shallow();
              d.set_memo(&memo);
              d.run_root(cands[i].type_item, cands[i].ctor);
              shallow[i] = std::move(d.out);
            });
  for (std::size_t i = 0; i < cands.size(); ++i) {
    const Candidate& c = cands[i];
    const rust::Item& t = crate.items()[c.type_item];
    if (!opts.root.empty()) {
      if (t.name == opts.root || t.qualified == opts.root) results.push_back({c, {}});
      continue;
    }
    for (const auto& q : shallow[i].constructed_types)
      if (q != t.qualified) built_elsewhere.insert(q);
    if (t.visibility == rust::Visibility::Public)
      results.push_back({c, {}, shallow[i].children_met});
  }
  if (!opts.root.empty() && results.empty()) results = function_roots(crate, opts.root, s.types);
  // A name that is some match's full path (`tiny_net` at the crate's top) picks that one.
  if (!opts.root.empty() && std::any_of(results.begin(), results.end(), [&](const Result& r) {
        return crate.items()[r.cand.type_item].qualified == opts.root;
      }))
    std::erase_if(results, [&](const Result& r) {
      return crate.items()[r.cand.type_item].qualified != opts.root;
    });
  if (!opts.root.empty() && results.size() > 1) {
    std::string names;
    for (const auto& r : results)
      names += (names.empty() ? "" : ", ") + crate.items()[r.cand.type_item].qualified;
    throw InputError("component root `" + opts.root + "`",
                     "ambiguous: " + names + " all match; pass a module-qualified name");
  }
  if (!opts.root.empty() && results.empty()) {
    // The closest model type by its path (or its name, for a bare name): `LLama` -> `Llama`.
    const bool path = opts.root.find("::") != std::string::npos;
    std::string best;
    std::size_t best_d = std::max<std::size_t>(3, opts.root.size() / 8);
    for (const auto& c : cands) {
      const rust::Item& t = crate.items()[c.type_item];
      const std::size_t d = edit_distance(opts.root, path ? t.qualified : t.name);
      if (d < best_d) best_d = d, best = t.qualified;
    }
    throw InputError("component root `" + opts.root + "`",
                     "no struct named `" + opts.root +
                         "` with a constructor taking a VarBuilder, nor a function of that name "
                         "taking one, was found in the crate" +
                         (best.empty() ? std::string() : "; did you mean `" + best + "`?"));
  }
  std::erase_if(results, [&](const Result& r) {
    return built_elsewhere.count(crate.items()[r.cand.type_item].qualified) > 0;
  });
  return results;
}

// Every `--arg` must be a parameter some analyzed root constructor took, with a value of its type.
void check_args(const rust::Crate& crate, const std::vector<Result>& results,
                const InventoryOptions& opts) {
  for (const auto& [name, value] : opts.args) {
    bool used = false;
    std::string params;
    std::string problem;
    for (const auto& r : results) {
      const bool uses = r.out.used_args.count(name) > 0;
      used = used || uses;
      if (auto it = r.out.arg_problems.find(name); it != r.out.arg_problems.end())
        throw InputError("--arg " + shown_text(name),
                         "`" + shown_text(value.display()) + "` is " + it->second);
      for (const auto& p : crate.items()[r.cand.ctor].params) {
        params += (params.empty() ? "" : ", ") + p.name;
        if (uses && p.name == name && problem.empty()) {
          problem = rust_value_refusal(p.type_text, value);
          if (!problem.empty())
            problem += ", which the parameter `" + p.name + ": " + p.type_text + "` cannot hold";
        }
      }
    }
    if (!used)
      throw InputError("--arg " + shown_text(name),
                       "no analyzed root constructor takes a parameter `" + name + "`" +
                           (params.empty() ? std::string() : " (parameters: " + params + ")"));
    if (!problem.empty()) {
      throw InputError("--arg " + shown_text(name),
                       "`" + shown_text(value.display()) + "` is " + problem);
    }
  }
}

void add_finding(ir::ModelIr& ir, std::string rule, ir::Severity sev, std::string msg,
                 std::string source, std::vector<std::string> related) {
  ir.findings.push_back(ir::make_finding(std::move(rule), sev, ir::Confidence::proven,
                                         std::move(msg), std::move(source), std::move(related)));
}

ir::Component component_of(const rust::Crate& crate, const BuilderTypes& types,
                           const Candidate& cand) {
  const rust::Item& t = crate.items()[cand.type_item];
  ir::Component comp;
  comp.id = ir::component_id(t.qualified);
  comp.name = t.name;
  comp.qualified_name = t.qualified;
  comp.source = crate.source(cand.type_item);
  const rust::Item& ctor = crate.items()[cand.ctor];
  comp.constructor = ir::function_id(ctor.qualified, ctor.cfg.predicates);
  for (const auto& p : ctor.params)
    if (is_builder_type(types, crate, ctor.module, p.type_text)) {
      ir::Builder b;
      b.name = p.name;
      b.evidence.push_back({ir::EvidenceKind::source, ir::Confidence::proven,
                            crate.source(cand.ctor), "constructor parameter `" + p.name + "`"});
      comp.builders.push_back(std::move(b));
    }
  comp.evidence.push_back({ir::EvidenceKind::source, ir::Confidence::proven, comp.source,
                           cand.type_item == cand.ctor
                               ? "function taking a VarBuilder, chosen as the root (--root)"
                               : "public model API type with a VarBuilder constructor"});
  return comp;
}

// Modules: ids by occurrence of (root, prefix, type, cfg) in walk order.
std::vector<std::string> add_modules(const inventory::Walked& w, ir::Component& comp,
                                     ir::ModelIr& ir) {
  ir::OccurrenceCounter occ;
  std::vector<std::string> module_ids(w.insts.size());
  for (std::size_t i = 0; i < w.insts.size(); ++i) {
    const Inst& in = w.insts[i];
    std::string key = in.root + '\0' + in.prefix + '\0' + in.type_name;
    for (const auto& c : in.cfg)
      key += '\0' + c;
    module_ids[i] = ir::module_id(comp.id, in.root, in.prefix, in.type_name, in.cfg, occ.next(key));
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
    m.attributes = in.attributes;
    m.arguments = in.arguments;
    comp.modules.push_back(m.id);
    ir.modules.push_back(std::move(m));
  }
  return module_ids;
}

// A leaf's shape in the IR: symbolic dimensions always, concrete ones when every dimension is a
// non-negative integer whose product fits 64 bits. A dimension the bound config makes negative,
// or an element count that does not fit, is no shape a checkpoint can have: the shape stays
// symbolic and the config is named, instead of a wrapped count.
void set_shape(const Leaf& l, const ir::Component& comp, ir::Parameter& p, ir::ModelIr& ir) {
  std::vector<std::string> sym;
  std::vector<std::uint64_t> conc;
  bool all = true, negative = false;
  for (const auto& d : *l.shape) {
    // Rust panics on an integer division by zero: a constructor that computes a dimension that
    // way never returns (the config check makes it an input error naming the values).
    if (!d.concrete() && d.reason.find("division by zero") != std::string::npos)
      p.reason = "division by zero in `" + inventory::one_line(d.text) + "`";
    sym.push_back(d.concrete() ? d.display() : d.text);
    if (d.kind == SymValue::Kind::integer && d.integer >= 0)
      conc.push_back(static_cast<std::uint64_t>(d.integer));
    else
      all = false;
    negative = negative || (d.kind == SymValue::Kind::integer && d.integer < 0);
  }
  std::uint64_t elems = 1;
  bool overflow = false;
  for (auto d : conc)
    overflow = overflow || __builtin_mul_overflow(elems, d, &elems);
  std::string shape_text;
  for (const auto& d : p.symbolic_shape.emplace(std::move(sym)))
    shape_text += (shape_text.empty() ? "" : ", ") + d;
  if (negative || (all && overflow))
    add_finding(
        ir, "config-binding", ir::Severity::error,
        "parameter `" + l.key + "` gets shape [" + shape_text + "] from the bound " + "config: " +
            (negative ? "a dimension is negative" : "its element count does not fit in 64 bits") +
            "; check the config values its dimensions are read from",
        l.source, {comp.id});
  else if (all)
    p.shape = std::move(conc);
}

// A leaf's shape as `[d0, d1]` (a dimension's value or expression), `?` when unknown.
std::string shape_list(const Leaf& l) {
  if (!l.shape) return "?";
  std::string out;
  for (const auto& d : *l.shape)
    out += (out.empty() ? "" : ", ") + (d.concrete() ? d.display() : inventory::one_line(d.text));
  return "[" + out + "]";
}

// Parameters: (root, key) duplicates collapse, least certain wins.
void add_parameters(inventory::Walked& w, const std::vector<std::string>& module_ids,
                    ir::Component& comp, ir::ModelIr& ir) {
  std::map<std::pair<std::string, std::string>, std::size_t> seen;
  std::vector<std::size_t> order;
  // A key registered in another arm of a group its first leaf is in: that arm's marks from the
  // group on (the summary reads them as a further path; no arm is counted twice).
  struct Further {
    std::vector<AlternativeMark> marks;
    std::size_t leaf = 0;  // the leaf registering the key in that arm (its shape)
  };
  std::map<std::size_t, std::vector<Further>> further;
  for (std::size_t i = 0; i < w.leaves.size(); ++i) {
    auto k = std::make_pair(w.leaves[i].root, w.leaves[i].key);
    auto it = seen.find(k);
    if (it == seen.end()) {
      seen.emplace(k, i);
      order.push_back(i);
      continue;
    }
    Leaf& first = w.leaves[it->second];
    const Leaf& l = w.leaves[i];
    if (l.cert.level > first.cert.level) first.cert = l.cert;
    // Registered outside any undecided branch too: present whichever alternative runs.
    if (l.alts.empty() || first.alts.empty()) {
      first.alts.clear();
      further.erase(it->second);
      continue;
    }
    std::size_t d = 0;
    while (d < l.alts.size() && d < first.alts.size() && l.alts[d].group == first.alts[d].group &&
           l.alts[d].index == first.alts[d].index)
      ++d;
    if (d >= l.alts.size() || d >= first.alts.size() || l.alts[d].group != first.alts[d].group)
      continue;
    std::vector<AlternativeMark> tail(l.alts.begin() + static_cast<std::ptrdiff_t>(d),
                                      l.alts.end());
    auto& paths = further[it->second];
    auto same_path = [&](const Further& p) {
      return p.marks.size() == tail.size() &&
             std::equal(p.marks.begin(), p.marks.end(), tail.begin(),
                        [](const auto& x, const auto& y) {
                          return x.group == y.group && x.index == y.index;
                        });
    };
    if (std::none_of(paths.begin(), paths.end(), same_path)) paths.push_back({std::move(tail), i});
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
    if (l.shape) set_shape(l, comp, p, ir);
    p.confidence = confidence_of(l.cert);
    std::string reason = l.cert.reason;
    if (!l.shape_reason.empty()) reason += (reason.empty() ? "" : "; ") + l.shape_reason;
    if (!reason.empty()) p.reason = p.reason ? *p.reason + "; " + reason : reason;
    p.source = l.source;
    p.evidence.push_back({ir::EvidenceKind::source, p.confidence, l.source,
                          "parameter registered through " + l.kind});
    for (const auto& m : l.alts)
      p.evidence.push_back(
          {ir::EvidenceKind::source, ir::Confidence::conditional, m.site, alternative_detail(m)});
    bool per_arm = false;  // the key's shape differs by arm
    if (auto f = further.find(i); f != further.end()) {
      // One shape per arm: the parameter has none of its own (a checkpoint of any arm verifies).
      const std::string mine = shape_list(l);
      per_arm = std::any_of(f->second.begin(), f->second.end(),
                            [&](const Further& x) { return shape_list(w.leaves[x.leaf]) != mine; });
      if (per_arm && std::any_of(f->second.begin(), f->second.end(), [&](const Further& x) {
            return shape_list(w.leaves[x.leaf]) != mine;
          })) {
        p.evidence.push_back({ir::EvidenceKind::source, ir::Confidence::conditional, l.source,
                              "shape in this alternative: " + mine});
        p.shape.reset();
        p.reason = (p.reason ? *p.reason + "; " : std::string()) +
                   "its shape differs by alternative (evidence)";
      }
    }
    if (auto f = further.find(i); f != further.end())
      for (const auto& path : f->second) {
        for (const auto& m : path.marks)
          p.evidence.push_back({ir::EvidenceKind::source, ir::Confidence::conditional, m.site,
                                alternative_detail(m)});
        // vgg's `features.17` is [512, 512, 3, 3] in one arm and [256, 256, 3, 3] in another.
        const Leaf& other = w.leaves[path.leaf];
        std::string mine = shape_list(l), theirs = shape_list(other);
        if (per_arm)
          p.evidence.push_back({ir::EvidenceKind::source, ir::Confidence::conditional, other.source,
                                "shape in this alternative: " + theirs});
      }
    comp.parameters.push_back(p.id);
    ir.parameters.push_back(std::move(p));
  }
}

// Each root's full walk (run_walks). A root whose constructor forks on several prefixes walks its
// subtree once per alternative: one such root can cost as much as all the others (candle-vllm's
// Qwen3-VL), so the roots whose shallow walks met the most child constructor calls go first.
void walk_roots(const rust::Crate& crate, const InventoryOptions& opts, const Setup& s,
                std::vector<Result>& results) {
  std::vector<std::size_t> order = each_index(results.size());
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return results[a].children_met > results[b].children_met;
  });
  run_walks(crate, s, order, opts.config == nullptr,
            [&](std::size_t i, const ConfigBinding& binding, builder::StaticMemo& memo) {
              builder::BuilderDomain d(crate, s.catalog, s.audited, binding, s.types,
                                       opts.config != nullptr);
              d.set_args(&opts.args);
              d.set_memo(&memo);
              d.run_root(results[i].cand.type_item, results[i].cand.ctor);
              results[i].out = std::move(d.out);
            });
}

void build_inventory_here(const rust::Crate& crate, const InventoryOptions& opts, ir::ModelIr& ir) {
  const LayerCatalog& catalog = opts.layer_catalog
                                    ? *opts.layer_catalog
                                    : LayerCatalog::for_inventory(opts.candle_nn_version);
  const bool audited = opts.layer_catalog
                           ? opts.layer_catalog->audited()
                           : LayerCatalog::for_version(opts.candle_nn_version).audited();
  ConfigBinding binding(crate, opts.config);
  const BuilderTypes types = find_builder_types(crate);
  builder::StaticMemo memo;
  std::vector<Result> results = choose_roots(crate, find_candidates(crate, types), opts,
                                             Setup{catalog, audited, binding, types, memo});
  walk_roots(crate, opts, Setup{catalog, audited, binding, types, memo}, results);
  if (opts.built_configs != nullptr)
    for (const auto& r : results)
      for (const auto& [item, c] : r.out.arg_configs)
        opts.built_configs->emplace(item, c);
  check_args(crate, results, opts);
  for (auto& r : results) {
    const rust::Item& t = crate.items()[r.cand.type_item];
    inventory::Walked& w = r.out;
    ir::Component comp = component_of(crate, types, r.cand);
    add_parameters(w, add_modules(w, comp, ir), comp, ir);
    for (const auto& f : ir.functions)
      if (f.is_entrypoint && f.owner_type && *f.owner_type == t.qualified)
        comp.entrypoints.push_back(f.id);
    if (!w.unbound_config.empty() && !w.config_bound && opts.config != nullptr)
      add_finding(ir, "config-binding", ir::Severity::warning,
                  opts.config->origin + " is not bound to `" + w.unbound_config +
                      "`: it does not derive Deserialize and no crate-local conversion from a " +
                      "Deserialize struct builds it, so every field it gives stays symbolic",
                  comp.source, {comp.id});
    for (const auto& d : w.diags)
      add_finding(ir, "structure-unresolved", ir::Severity::warning, d.message, d.source,
                  {comp.id});
    ir.components.push_back(std::move(comp));
  }
  if (opts.config != nullptr && results.size() > 1)
    add_finding(ir, "config-binding", ir::Severity::information,
                opts.config->origin + " is bound to each of the " + std::to_string(results.size()) +
                    " component roots; choose one root to bind it to one model",
                "", {});
  for (const auto& d : binding.diagnostics())
    add_finding(ir, "config-binding", ir::Severity::warning, d.message, d.source, {});
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
