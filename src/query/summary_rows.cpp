#include "query/summary_rows.hpp"

#include <algorithm>
#include <map>
#include <optional>

#include "analysis/config_values.hpp"
#include "query/selector.hpp"

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

std::optional<std::uint64_t> count_of(const ir::Parameter& p) {
  if (!p.shape) return std::nullopt;
  std::uint64_t n = 1;
  for (auto d : *p.shape)
    n *= d;
  return n;
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

struct Tree {
  const ir::ModelIr& ir;
  std::map<std::string, const ir::Operation*> ops;  // id -> operation
  std::map<std::string, std::uint64_t> mult_total;  // symbol product -> count
  bool mult_partial = false;

  // The mult-adds of the operations that read this module's own parameters ("" if none known).
  std::string module_mult_adds(const std::vector<const ir::Parameter*>& ps) {
    std::vector<std::string> seen;
    for (const auto* p : ps)
      for (const auto& u : p->uses) {
        auto it = ops.find(u);
        if (it == ops.end() || !it->second->mult_adds) continue;
        if (std::find(seen.begin(), seen.end(), u) == seen.end()) seen.push_back(u);
      }
    std::string out;
    for (const auto& u : seen) {
      const std::string& m = *ops[u]->mult_adds;
      out += (out.empty() ? "" : " + ") + m;
      if (auto t = product_term(m))
        mult_total[t->first] += t->second;
      else
        mult_partial = true;
    }
    return out;
  }
  std::map<std::string, std::vector<const ir::Module*>> children;   // parent id -> modules
  std::map<std::string, std::vector<const ir::Parameter*>> params;  // module id -> leaves
  std::map<std::string, std::pair<std::optional<std::uint64_t>, std::size_t>> memo;

  // Subtree count (nullopt when any leaf is symbolic) and the number of symbolic leaves.
  std::pair<std::optional<std::uint64_t>, std::size_t> total(const ir::Module& m) {
    auto it = memo.find(m.id);
    if (it != memo.end()) return it->second;
    std::optional<std::uint64_t> sum = 0;
    std::size_t unknown = 0;
    for (const auto* p : params[m.id]) {
      auto n = count_of(*p);
      if (n && sum)
        *sum += *n;
      else {
        sum = std::nullopt;
        if (!n) ++unknown;
      }
    }
    for (const auto* c : children[m.id]) {
      auto [n, u] = total(*c);
      unknown += u;
      if (n && sum)
        *sum += *n;
      else
        sum = std::nullopt;
    }
    return memo[m.id] = {sum, unknown};
  }

  void emit(const ir::Module& m, const std::string& parent_prefix, int depth, int max_depth,
            std::vector<SummaryRow>& rows) {
    SummaryRow r;
    r.depth = depth;
    r.name = depth == 0 ? m.type_name : relative(m.prefix, parent_prefix);
    if (r.name.empty()) r.name = m.field.value_or(m.type_name);
    r.type = m.type_name;
    r.params = total(m).first;
    r.trainable = "?";
    r.marker = marker_of(m.confidence);
    r.mult_adds = module_mult_adds(params[m.id]);
    rows.push_back(r);
    if (max_depth >= 0 && depth >= max_depth) return;
    for (const auto* p : params[m.id]) {
      SummaryRow leaf;
      leaf.depth = depth + 1;
      leaf.name = relative(p->key, m.prefix);
      leaf.shape = shape_text(*p);
      leaf.params = count_of(*p);
      leaf.trainable = p->role == ir::ParameterRole::running_state ? "no" : "?";
      leaf.marker = marker_of(p->confidence);
      rows.push_back(leaf);
    }
    for (const auto* c : children[m.id])
      emit(*c, m.prefix, depth + 1, max_depth, rows);
  }
};

}  // namespace

SummaryModel build_summary(const ir::ModelIr& ir, const std::string& dtype, int max_depth) {
  Tree t{ir, {}, {}, false, {}, {}, {}};
  for (const auto& o : ir.operations)
    t.ops[o.id] = &o;
  std::vector<const ir::Module*> roots;
  for (const auto& m : ir.modules) {
    if (m.parent)
      t.children[*m.parent].push_back(&m);
    else
      roots.push_back(&m);
  }
  // Construction order reads like the model (torchinfo's registration order): by the source
  // line that built each child, then by key, numeric segments numerically (layers.2 < layers.10).
  for (auto& [id, kids] : t.children)
    std::stable_sort(kids.begin(), kids.end(), [](const ir::Module* a, const ir::Module* b) {
      if (a->source != b->source) return query::natural_less(a->source, b->source);
      return query::natural_less(a->prefix, b->prefix);
    });
  for (const auto& p : ir.parameters)
    if (p.module) t.params[*p.module].push_back(&p);
  for (auto& [id, ps] : t.params)
    std::stable_sort(ps.begin(), ps.end(), [](const ir::Parameter* a, const ir::Parameter* b) {
      return query::natural_less(a->key, b->key);
    });
  SummaryModel out;
  for (const auto* r : roots)
    t.emit(*r, "", 0, max_depth, out.rows);
  std::uint64_t total = 0;
  bool any = false;
  for (const auto& p : ir.parameters) {
    if (auto n = count_of(p)) {
      total += *n;
      any = true;
    } else {
      ++out.totals.unknown_leaves;
    }
  }
  if (any || ir.parameters.empty()) out.totals.total = total;
  // Trainable stays unknown: trainability is decided where the VarBuilder is made.
  out.totals.dtype = dtype;
  if (!t.mult_total.empty() && max_depth < 0) {
    std::string total_text;
    for (const auto& [key, n] : t.mult_total)
      total_text +=
          (total_text.empty() ? "" : " + ") + (key.empty() ? "" : key + "*") + group_thousands(n);
    if (t.mult_partial) total_text += " + terms not summed";
    out.totals.mult_adds = total_text;
  }
  if (std::uint64_t b = dtype_bytes(dtype); b > 0 && out.totals.total)
    out.totals.bytes = *out.totals.total * b;
  return out;
}

std::string render_model_summary(const Analysis& a, const std::string& config_path,
                                 std::string dtype, int max_depth) {
  if (dtype.empty() && !config_path.empty()) {
    auto values = analysis::read_config_values(config_path);
    if (const auto* t = values.find("torch_dtype");
        t && t->kind == analysis::SymValue::Kind::string)
      dtype = dtype_from_torch(t->text);
  }
  if (dtype.empty()) dtype = "F32";
  SummaryModel m = build_summary(a.ir, dtype, max_depth);
  std::string title = a.package_id;
  for (const auto& c : a.ir.components)
    title += "  ·  " + c.qualified_name;
  std::string out = render_summary_table(title, m.rows, m.totals);
  if (a.ir.components.empty())
    out += "No component: no public type has a constructor taking a VarBuilder (try --root T).\n";
  if (m.totals.unknown_leaves > 0)
    out += "Shapes stay symbolic where no config binds them: pass --config config.json.\n";
  out +=
      "Trainable: \"?\" — trainability is decided where the VarBuilder is made (VarMap or "
      "mmaped weights), which the inventory does not see.\n";
  return out;
}

}  // namespace cg::query
