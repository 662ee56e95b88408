#include "cli/query_command.hpp"

#include <algorithm>
#include <cctype>

#include "ir/enums.hpp"
#include "query/selector.hpp"
#include "util/error.hpp"
#include "util/json_writer.hpp"

namespace cg::cli {

namespace {

struct Item {
  query::Selectable sel;
  std::string name;
  std::string detail;
};

template <class T, class F>
std::vector<Item> items_of(const std::vector<T>& records, F describe) {
  std::vector<Item> out;
  out.reserve(records.size());
  for (const auto& r : records)
    out.push_back(describe(r));
  return out;
}

std::vector<Item> collect(const ir::ModelIr& ir, const std::string& kind) {
  if (kind == "components")
    return items_of(ir.components, [](const ir::Component& c) {
      return Item{{c.id, {c.name, c.qualified_name}, {c.id, c.name, c.qualified_name}},
                  c.qualified_name.empty() ? c.name : c.qualified_name,
                  std::to_string(c.parameters.size()) + " parameters"};
    });
  if (kind == "modules")
    return items_of(ir.modules, [](const ir::Module& m) {
      return Item{{m.id, {m.prefix}, {m.id, m.prefix, m.type_name}}, m.prefix, m.type_name};
    });
  if (kind == "parameters")
    return items_of(ir.parameters, [](const ir::Parameter& p) {
      return Item{{p.id, {p.key}, {p.id, p.key, p.kind}}, p.key, p.kind};
    });
  if (kind == "functions")
    return items_of(ir.functions, [](const ir::Function& f) {
      return Item{{f.id, {f.qualified_name, f.name}, {f.id, f.qualified_name}},
                  f.qualified_name.empty() ? f.name : f.qualified_name,
                  f.source};
    });
  if (kind == "operations")
    return items_of(ir.operations, [](const ir::Operation& o) {
      std::string q = o.qualified_name.value_or(o.name);
      return Item{{o.id, {q}, {o.id, o.name, q, o.function}}, q, o.source};
    });
  if (kind == "findings")
    return items_of(ir.findings, [](const ir::Finding& f) {
      return Item{{f.id, {f.rule}, {f.id, f.rule, f.message}},
                  f.rule,
                  std::string(ir::to_string(f.severity)) + ": " + f.message};
    });
  return {};
}

}  // namespace

const std::vector<query::ToolSpec>& query_kinds() {
  static const std::vector<query::ToolSpec> kinds = {
      {"summary", "Counts of every record kind in the analysis", false, false, false, false},
      {"components", "Model components (root constructors) with their parameter counts", true},
      {"modules", "Module tree records (prefix, type)", true},
      {"parameters", "Parameters (checkpoint key, acquisition kind)", true},
      {"functions", "Functions of the crate", true},
      {"operations", "Tensor operations found by dataflow", true},
      {"findings", "Diagnostics (rule, severity, message)", true},
  };
  return kinds;
}

std::string canonical_kind(std::string_view kind) {
  std::string k(kind);
  std::replace(k.begin(), k.end(), '_', '-');
  std::transform(k.begin(), k.end(), k.begin(), [](unsigned char c) { return std::tolower(c); });
  for (const auto& spec : query_kinds())
    if (spec.kind == k) return k;
  std::string valid;
  for (const auto& spec : query_kinds())
    valid += (valid.empty() ? "" : ", ") + spec.kind;
  throw InputError("query", "unknown kind '" + std::string(kind) + "'; valid kinds: " + valid);
}

std::string answer_query(const Analysis& a, const query::QueryRequest& req) {
  std::string kind = canonical_kind(req.kind);
  JsonWriter w(2);
  w.begin_object()
      .field("schema", "candle-graph/query/1")
      .field("analysis_id", a.ir.analysis_id)
      .field("kind", kind);
  if (kind == "summary") {
    w.key("counts").begin_object();
    w.field("components", static_cast<std::uint64_t>(a.ir.components.size()));
    w.field("modules", static_cast<std::uint64_t>(a.ir.modules.size()));
    w.field("parameters", static_cast<std::uint64_t>(a.ir.parameters.size()));
    w.field("functions", static_cast<std::uint64_t>(a.ir.functions.size()));
    w.field("operations", static_cast<std::uint64_t>(a.ir.operations.size()));
    w.field("findings", static_cast<std::uint64_t>(a.ir.findings.size()));
    w.end_object().end_object();
    return w.take() + "\n";
  }
  auto items = collect(a.ir, kind);
  std::vector<query::Selectable> sels;
  sels.reserve(items.size());
  for (const auto& it : items)
    sels.push_back(it.sel);
  auto selection = query::select(sels, req.selector);
  if (!req.selector.empty() && selection.indices.empty())
    throw InputError("query " + kind, "no " + kind + " match '" + req.selector + "' (" +
                                          std::to_string(items.size()) +
                                          " records; try an empty selector)");
  std::stable_sort(selection.indices.begin(), selection.indices.end(),
                   [&](std::size_t x, std::size_t y) {
                     return query::natural_less(items[x].sel.id, items[y].sel.id);
                   });
  auto page = query::paginate(selection.indices.size(), req.offset, req.limit);
  w.field("selector", req.selector)
      .field("total", static_cast<std::uint64_t>(selection.indices.size()))
      .field("offset", static_cast<std::uint64_t>(page.offset))
      .field("returned", static_cast<std::uint64_t>(page.returned))
      .field("truncated", page.truncated);
  w.key("items").begin_array();
  for (std::size_t i = 0; i < page.returned; ++i) {
    const auto& it = items[selection.indices[page.offset + i]];
    w.begin_object()
        .field("id", it.sel.id)
        .field("name", it.name)
        .field("detail", it.detail)
        .field("drill_down", "candle-graph query " + kind + " '" + it.sel.id + "'")
        .end_object();
  }
  w.end_array().end_object();
  return w.take() + "\n";
}

}  // namespace cg::cli
