#include "query/query.hpp"

#include <simdjson.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <tuple>

#include "ir/enums.hpp"
#include "ir/record_json.hpp"
#include "query/memory.hpp"
#include "query/memory_quant.hpp"
#include "query/selector.hpp"
#include "query/summary_rows.hpp"
#include "runtime/merge_ir.hpp"
#include "runtime/report_json.hpp"
#include "util/error.hpp"
#include "util/json_writer.hpp"
#include "util/text.hpp"

namespace cg::query {

namespace {

struct Item {
  Selectable sel;
  std::string name;
  std::string detail;
  std::size_t index = 0;    // into the IR section
  std::string component{};  // the model (component) a module or parameter belongs to
};

std::string dims_text(const std::optional<std::vector<std::uint64_t>>& shape,
                      const std::optional<std::vector<std::string>>& sym) {
  std::string out = "[";
  if (shape) {
    for (std::size_t i = 0; i < shape->size(); ++i)
      out += (i ? ", " : "") + std::to_string((*shape)[i]);
  } else if (sym) {
    for (std::size_t i = 0; i < sym->size(); ++i)
      out += (i ? ", " : "") + (*sym)[i];
  } else {
    return "?";
  }
  return out + "]";
}

// The IR section a kind reads ("" for single-object kinds).
std::string section_of(const std::string& kind) {
  static const std::map<std::string, std::string> m = {{"components", "components"},
                                                       {"component", "components"},
                                                       {"modules", "modules"},
                                                       {"module", "modules"},
                                                       {"composition", "architecture_edges"},
                                                       {"parameters", "parameters"},
                                                       {"parameter", "parameters"},
                                                       {"functions", "functions"},
                                                       {"function", "functions"},
                                                       {"entrypoints", "functions"},
                                                       {"tensors", "tensors"},
                                                       {"tensor", "tensors"},
                                                       {"operations", "operations"},
                                                       {"operation", "operations"},
                                                       {"graph-train", "operations"},
                                                       {"graph-infer", "operations"},
                                                       {"profile", "operations"},
                                                       {"findings", "findings"},
                                                       {"finding", "findings"}};
  auto it = m.find(kind);
  return it == m.end() ? "" : it->second;
}

// The singular kind an item of `section` drills down to.
std::string singular_of(const std::string& section) {
  if (section == "architecture_edges") return "";
  std::string s = section;
  s.pop_back();  // components -> component, …
  return s;
}

std::vector<Item> collect(const ir::ModelIr& ir, const std::string& section) {
  std::vector<Item> out;
  auto add = [&](Item it) {
    it.index = out.size();
    out.push_back(std::move(it));
  };
  if (section == "components")
    for (const auto& c : ir.components)
      add({{c.id, {c.qualified_name, c.name}, {c.source}},
           c.qualified_name,
           std::to_string(c.parameters.size()) + " parameters, " +
               std::to_string(c.modules.size()) + " modules"});
  // Modules and parameters say whose they are: two models' `self_attn.q_proj` are not mixed.
  std::map<std::string, std::string> component_name;
  for (const auto& c : ir.components)
    component_name[c.id] = c.qualified_name;
  auto owner = [&](const std::string& id) {
    auto it = component_name.find(id);
    return it == component_name.end() ? std::string() : it->second;
  };
  if (section == "modules")
    for (const auto& m : ir.modules)
      add({{m.id, {m.prefix}, {m.type_name, m.field.value_or(""), m.source}},
           m.prefix.empty() ? m.type_name : m.prefix,
           m.type_name + (m.repeat ? " (" + *m.repeat + ")" : ""),
           0,
           owner(m.component)});
  if (section == "parameters")
    for (const auto& p : ir.parameters)
      add({{p.id, {p.key, p.builder_root + ":" + p.key}, {p.kind, p.source}},
           p.key,
           dims_text(p.shape, p.symbolic_shape) + " " + std::string(ir::to_string(p.confidence)) +
               (p.reason ? " (" + *p.reason + ")" : ""),
           0,
           owner(p.component)});
  if (section == "functions")
    for (const auto& f : ir.functions)
      add({{f.id, {f.qualified_name, f.name}, {f.source}}, f.qualified_name, f.source});
  if (section == "tensors")
    for (const auto& t : ir.tensors)
      add({{t.id, {t.name}, {t.owner_function, t.dtype}},
           t.name,
           std::string(ir::to_string(t.role)) + " " + t.dtype});
  if (section == "operations")
    for (const auto& o : ir.operations) {
      std::string q = o.qualified_name.value_or(o.name);
      std::string d = o.source;
      if (o.execution_phase) d += " " + std::string(ir::to_string(*o.execution_phase));
      if (o.timing) d += " mean " + std::to_string(o.timing->stats.mean_ns) + " ns";
      add({{o.id, {q}, {o.name, o.function, o.source}}, q, d});
    }
  if (section == "findings")
    for (const auto& f : ir.findings)
      add({{f.id, {f.rule}, {f.message, f.source.value_or("")}},
           f.rule,
           std::string(ir::to_string(f.severity)) + ": " + f.message});
  if (section == "architecture_edges")
    for (const auto& e : ir.architecture_edges)
      add({{e.id, {}, {e.from, e.to}}, e.from + " -> " + e.to, e.via_function});
  return out;
}

bool keep(const ir::ModelIr& ir, const std::string& kind, std::size_t i) {
  if (kind == "entrypoints") return ir.functions[i].is_entrypoint;
  if (kind == "graph-train" || kind == "graph-infer") {
    const auto& o = ir.operations[i];
    auto want = kind == "graph-train" ? ir::ExecutionPhase::train : ir::ExecutionPhase::infer;
    return !o.execution_phase || *o.execution_phase == want;  // no phase: both graphs reach it
  }
  if (kind == "profile") return ir.operations[i].timing.has_value();
  return true;
}

const ToolSpec& spec_of(const std::string& kind) {
  for (const auto& s : query_kinds())
    if (s.kind == kind) return s;
  throw InputError("query", "unknown kind '" + kind + "'");
}

void head(JsonWriter& w, const Analysis& a, const std::string& kind, const std::string& selector) {
  w.begin_object()
      .field("schema", "candle-graph/query/1")
      .field("analysis_id", a.ir.analysis_id)
      .field("kind", kind)
      .field("selector", selector);
}

void one_item_page(JsonWriter& w) {
  w.field("total", std::uint64_t{1})
      .field("offset", std::uint64_t{0})
      .field("returned", std::uint64_t{1})
      .field("truncated", false);
}

// Where to look next at one record: a command line for people, an MCP tool call (the tool's name
// and its arguments, on the same root) for an agent.
void drill_down(JsonWriter& w, const QueryContext& ctx, const QueryRequest& req,
                const std::string& kind, const std::string& id) {
  if (!ctx.mcp) {
    w.field("drill_down", "candle-graph query " + kind + " '" + id + "'");
    return;
  }
  w.key("drill_down").begin_object().field("tool", "query_" + kind);
  w.key("arguments").begin_object().field("select", id);
  if (!req.root.empty()) w.field("root", req.root);
  if (!req.config.empty()) w.field("config", req.config);
  w.end_object().end_object();
}

// One operation or tensor named by `sel` (exact id, exact name, or a unique substring).
struct Endpoint {
  bool is_op = false;
  std::size_t index = 0;
};

Endpoint endpoint(const ir::ModelIr& ir, const std::string& sel, const char* what) {
  std::vector<Selectable> items;
  for (const auto& o : ir.operations)
    items.push_back({o.id, {}, {o.name, o.source}});
  for (const auto& t : ir.tensors)
    items.push_back({t.id, {t.name}, {}});
  auto s = select(items, sel);
  if (s.indices.empty())
    throw InputError("query path",
                     std::string(what) + " '" + sel + "' matches no operation or tensor");
  if (s.indices.size() > 1) {
    std::string c;
    for (std::size_t k = 0; k < s.indices.size() && k < 20; ++k)
      c += "\n  " + items[s.indices[k]].id;
    throw InputError("query path", std::string(what) + " '" + sel +
                                       "' is ambiguous: " + std::to_string(s.indices.size()) +
                                       " candidates; pass one stable id:" + c);
  }
  std::size_t i = s.indices[0];
  if (i < ir.operations.size()) return {true, i};
  return {false, i - ir.operations.size()};
}

// Breadth-first over producer -> consumer edges (an operation's output feeding another's input).
std::string answer_path(const Analysis& a, const QueryRequest& req, const QueryContext& ctx) {
  const ir::ModelIr& ir = a.ir;
  const char* to_name = ctx.mcp ? "to" : "--to";
  if (req.to.empty())
    throw InputError("query path",
                     std::string("needs ") + to_name + ": the operation or tensor to reach");
  Endpoint from = endpoint(ir, req.selector, "from");
  Endpoint to = endpoint(ir, req.to, to_name);
  std::map<std::string, std::vector<std::size_t>> consumers;
  for (std::size_t i = 0; i < ir.operations.size(); ++i)
    for (const auto& t : ir.operations[i].inputs)
      consumers[t].push_back(i);
  std::vector<std::size_t> start;
  if (from.is_op)
    start.push_back(from.index);
  else if (auto it = consumers.find(ir.tensors[from.index].id); it != consumers.end())
    start = it->second;
  auto reached = [&](std::size_t op) {
    return to.is_op ? op == to.index : ir.operations[op].output == ir.tensors[to.index].id;
  };
  std::vector<std::ptrdiff_t> prev(ir.operations.size(), -2);  // -2 unseen, -1 a start
  std::vector<std::size_t> queue;
  for (std::size_t st : start)
    if (prev[st] == -2) {
      prev[st] = -1;
      queue.push_back(st);
    }
  std::ptrdiff_t found = -1;
  for (std::size_t qi = 0; qi < queue.size() && found < 0; ++qi) {
    std::size_t op = queue[qi];
    if (reached(op)) {
      found = static_cast<std::ptrdiff_t>(op);
      break;
    }
    auto it = consumers.find(ir.operations[op].output);
    if (it == consumers.end()) continue;
    for (std::size_t next : it->second)
      if (prev[next] == -2) {
        prev[next] = static_cast<std::ptrdiff_t>(op);
        queue.push_back(next);
      }
  }
  std::vector<std::size_t> chain;
  for (std::ptrdiff_t at = found; at >= 0; at = prev[static_cast<std::size_t>(at)])
    chain.push_back(static_cast<std::size_t>(at));
  std::reverse(chain.begin(), chain.end());
  JsonWriter w(2);
  head(w, a, "path", req.selector);
  w.field("to", req.to).field("found", found >= 0);
  auto page = paginate(chain.size(), req.offset, req.limit);
  w.field("total", static_cast<std::uint64_t>(chain.size()))
      .field("offset", static_cast<std::uint64_t>(page.offset))
      .field("returned", static_cast<std::uint64_t>(page.returned))
      .field("truncated", page.truncated);
  w.key("items").begin_array();
  for (std::size_t k = page.offset; k < page.offset + page.returned; ++k) {
    const auto& o = ir.operations[chain[k]];
    w.begin_object()
        .field("id", o.id)
        .field("name", o.qualified_name.value_or(o.name))
        .field("detail", o.source);
    drill_down(w, ctx, req, "operation", o.id);
    w.end_object();
  }
  w.end_array().end_object();
  return w.take() + "\n";
}

// What limits the analysis and what to do about it.
void write_doctor(JsonWriter& w, const ir::ModelIr& ir,
                  const std::map<std::string, std::uint64_t>& by_rule, bool config_bound,
                  bool mcp) {
  std::uint64_t cond = 0, unknown = 0, symbolic = 0;
  for (const auto& p : ir.parameters) {
    if (p.confidence == ir::Confidence::conditional) ++cond;
    if (p.confidence == ir::Confidence::unknown) ++unknown;
    if (!p.shape) ++symbolic;
  }
  w.key("findings_by_rule").begin_object();
  for (const auto& [k, v] : by_rule)
    w.field(k, v);
  w.end_object();
  w.field("conditional_parameters", cond)
      .field("unknown_parameters", unknown)
      .field("symbolic_parameter_shapes", symbolic);
  w.key("advice").begin_array();
  // An agent over MCP is told which tool call to make, a person which command line.
  if (ir.components.empty())
    w.value(mcp ? "no component found: call again with \"root\": a type whose constructor takes "
                  "a VarBuilder"
                : "no component found: pass --root T for a type whose constructor takes a "
                  "VarBuilder");
  if (symbolic > 0 && !config_bound)
    w.value(mcp ? "shapes are symbolic: call again with \"config\": \"path/to/config.json\" to "
                  "bind them"
                : "shapes are symbolic: pass --config config.json to bind them");
  // With a config bound, saying "pass --config" again would send the user in a circle (#21).
  if (symbolic > 0 && config_bound)
    w.value(std::to_string(symbolic) +
            (mcp ? " parameter shapes stay symbolic with the config bound: they read a "
                   "constructor argument or a value the binding does not evaluate "
                   "(query_parameters names each shape)"
                 : " parameter shapes stay symbolic with the config bound: they read a "
                   "constructor argument (--arg name=value) or a value the binding does not "
                   "evaluate (candle-graph query parameters names each shape)"));
  if (by_rule.count("structure-unresolved"))
    w.value(mcp ? "constructor code was not understood: query_findings {\"select\": "
                  "\"structure-unresolved\"}"
                : "constructor code was not understood: candle-graph query findings "
                  "structure-unresolved");
  if (by_rule.count("candle-semantics-version"))
    w.value("candle is not an audited release (0.8.0-0.11.0): catalog rules are unknown");
  if (by_rule.count("dependency-source"))
    w.value(mcp ? "dependency sources are missing or unusable: query_findings {\"select\": "
                  "\"dependency-source\"}"
                : "dependency sources are missing or unusable: candle-graph query findings "
                  "dependency-source");
  if (!ir.runtime)
    w.value(mcp ? "no runtime trace merged: the server merges the traces it was started with"
                : "no runtime trace merged: profile a run, pass --runtime-trace");
  w.end_array();
}

// Each dependency and where its source is on this machine, those that reach candle first.
void write_dependencies(JsonWriter& w, const std::vector<cargo::DependencySource>& deps) {
  std::vector<const cargo::DependencySource*> order;
  for (const auto& d : deps)
    order.push_back(&d);
  std::stable_sort(order.begin(), order.end(), [](const auto* x, const auto* y) {
    return x->reaches_candle > y->reaches_candle;
  });
  w.key("dependencies").begin_array();
  for (const auto* d : order) {
    w.begin_object()
        .field("package", d->package)
        .field("version", d->version)
        .field("reaches_candle", d->reaches_candle)
        .field("origin", std::string(cargo::to_string(d->origin)));
    if (!d->dir.empty()) w.field("source_dir", d->dir.string());
    if (!d->problem.empty()) w.field("problem", d->problem);
    if (!d->analysis.empty()) w.field("analysis", d->analysis);
    if (d->origin == cargo::SourceOrigin::missing) {
      w.key("searched").begin_array();
      for (const auto& s : d->searched)
        w.value(s);
      w.end_array();
    }
    w.end_object();
  }
  w.end_array();
}

// The records of a section that a kind reads, with a match for the selector (all of them for an
// empty selector); throws when a selector matches nothing.
struct Selected {
  std::vector<Item> items;
  std::vector<std::size_t> chosen;  // indices into `items`
};

Selected select_items(const ir::ModelIr& ir, const std::string& kind, const std::string& section,
                      const std::string& selector) {
  Selected out;
  for (auto& it : collect(ir, section))
    if (keep(ir, kind, it.index)) out.items.push_back(std::move(it));
  std::vector<Selectable> sels;
  sels.reserve(out.items.size());
  for (const auto& it : out.items)
    sels.push_back(it.sel);
  out.chosen = select(sels, selector).indices;
  if (!selector.empty() && out.chosen.empty()) {
    // A Rust path that is no component of this analysis is often a model another one builds
    // (llava builds models::llama::Llama): analysing it as the root finds it.
    const bool rust_path = selector.find("::") != std::string::npos;
    throw InputError(
        "query " + kind,
        "no " + kind + " match '" + shown_text(selector, 200) + "' (" +
            std::to_string(out.items.size()) + " records; try an empty selector" +
            (rust_path ? std::string("; a type another model builds is analysed as "
                                     "its own with --root ") +
                             shown_text(selector, 200) + " (MCP: the tool's \"root\" argument)"
                       : std::string()) +
            ")");
  }
  return out;
}

// One record in full, compact, exactly as the IR writer writes it.
std::string record_json(const ir::ModelIr& ir, const std::string& section, std::size_t i) {
  JsonWriter w(0);
  if (section == "components") ir::write_record(w, ir.components[i]);
  if (section == "modules") ir::write_record(w, ir.modules[i]);
  if (section == "parameters") ir::write_record(w, ir.parameters[i]);
  if (section == "functions") ir::write_record(w, ir.functions[i]);
  if (section == "tensors") ir::write_record(w, ir.tensors[i]);
  if (section == "operations") ir::write_record(w, ir.operations[i]);
  if (section == "findings") ir::write_record(w, ir.findings[i]);
  if (section == "architecture_edges") ir::write_record(w, ir.architecture_edges[i]);
  return w.take();
}

// A singular kind: exactly one record, in full; an ambiguous selector lists the candidates.
// What the summary's row says of a module (issue #18), as fields after its IR record: one call's
// output shape in the forward pass, its Mult-Adds rolled up (a lower bound when an operation
// under it has no rule), its parameters (a family row: every instance) and their size at `dtype`.
std::string module_figures(const ir::ModelIr& ir, const ir::Module& m, const std::string& dtype) {
  SummaryModel sm = build_summary(ir, dtype);
  const SummaryRow* r = row_of(sm, m.id);
  JsonWriter w(0);
  w.begin_object();
  if (r) {
    w.key("output_shape");
    if (r->output_shape.empty())
      w.null();
    else
      w.value(r->output_shape);
    std::string ma = r->mult_adds;
    if (ma.rfind("≥ ", 0) == 0) ma = ma.substr(std::string("≥ ").size());
    w.key("mult_adds");
    if (ma.empty())
      w.null();
    else
      w.value(ma);
    w.field("mult_adds_lower_bound", r->mult_adds_lower_bound);
    w.key("parameter_count");
    if (r->params)
      w.value(*r->params);
    else
      w.null();
    w.key("weights_bytes");
    if (r->params && dtype_bytes(dtype) > 0 && *r->params <= UINT64_MAX / dtype_bytes(dtype))
      w.value(*r->params * dtype_bytes(dtype));
    else
      w.null();
    w.field("weights_dtype", dtype);
    w.field("shared_weights", r->marker.find("shared with") != std::string::npos);
  } else {
    w.key("summary_row").null();
  }
  w.end_object();
  std::string fields = w.take();
  // `{…}` → `,…` appended inside the record's braces.
  return fields.size() > 2 ? "," + fields.substr(1, fields.size() - 2) : "";
}

void singular(JsonWriter& w, const ir::ModelIr& ir, const std::string& kind,
              const std::string& section, const std::string& selector,
              const std::string& dtype = "F32") {
  Selected s = select_items(ir, kind, section, selector);
  std::vector<std::size_t>& chosen = s.chosen;
  if (chosen.size() > 1) {
    std::sort(chosen.begin(), chosen.end(), [&](std::size_t x, std::size_t y) {
      return natural_less(s.items[x].sel.id, s.items[y].sel.id);
    });
    std::string c;
    for (std::size_t k = 0; k < chosen.size() && k < 20; ++k)
      c += "\n  " + s.items[chosen[k]].sel.id + "  (" + s.items[chosen[k]].name + ")";
    if (chosen.size() > 20) c += "\n  … " + std::to_string(chosen.size() - 20) + " more";
    throw InputError("query " + kind, "'" + selector +
                                          "' is ambiguous: " + std::to_string(chosen.size()) +
                                          " candidates; pass one stable id:" + c);
  }
  one_item_page(w);
  std::string record = record_json(ir, section, s.items[chosen[0]].index);
  if (kind == "module" && !record.empty() && record.back() == '}')
    record = record.substr(0, record.size() - 1) +
             module_figures(ir, ir.modules[s.items[chosen[0]].index], dtype) + "}";
  w.key("items").begin_array().raw(record);
  w.end_array().end_object();
}

// Model types another component builds (llava builds models::llama::Llama) are no components of
// a whole-crate analysis; those whose Rust path matches the selector are listed after the page,
// each with how to analyse it as its own root (at most 50).
void nested_models(JsonWriter& w, const ir::ModelIr& ir, const QueryRequest& req,
                   const QueryContext& ctx) {
  if (req.selector.empty()) return;
  std::set<std::string> roots;
  std::map<std::string, std::string> component_name;
  for (const auto& c : ir.components) {
    roots.insert(c.qualified_name);
    component_name[c.id] = c.qualified_name;
  }
  std::string needle = req.selector;
  std::transform(needle.begin(), needle.end(), needle.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  std::map<std::string, std::set<std::string>> built_by;  // type -> components building it
  for (const auto& m : ir.modules) {
    if (!m.qualified_type || m.qualified_type->empty() || roots.count(*m.qualified_type)) continue;
    const std::string& q = *m.qualified_type;
    // Crate types only: candle-nn's layers and a dependency's types are not this crate's models.
    if (q.rfind("::", 0) == 0 || q.rfind("candle_nn", 0) == 0 || q.rfind("candle_core", 0) == 0)
      continue;
    std::string lower = q;
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return std::tolower(c); });
    if (lower.find(needle) == std::string::npos) continue;
    built_by[q].insert(component_name.count(m.component) ? component_name[m.component]
                                                         : m.component);
  }
  if (built_by.empty()) return;
  w.key("built_inside_other_components").begin_array();
  std::size_t n = 0;
  for (const auto& [type, by] : built_by) {
    if (n++ == 50) break;
    std::string names;
    for (const auto& b : by)
      names += (names.empty() ? "" : ", ") + b;
    w.begin_object().field("name", type).field("built_by", names);
    if (ctx.mcp) {
      w.key("drill_down").begin_object().field("tool", "query_summary-table");
      w.key("arguments").begin_object().field("root", type).end_object().end_object();
    } else {
      w.field("drill_down", "candle-graph summary PATH --root " + type);
    }
    w.end_object();
  }
  w.end_array();
  if (built_by.size() > 50)
    w.field("built_inside_other_components_left", static_cast<std::uint64_t>(built_by.size() - 50));
}

// A plural kind: compact items in the kind's order, paginated, each with its drill-down.
void listing(JsonWriter& w, const ir::ModelIr& ir, const std::string& kind,
             const std::string& section, const QueryRequest& req, const QueryContext& ctx) {
  Selected s = select_items(ir, kind, section, req.selector);
  const std::vector<Item>& items = s.items;
  std::vector<std::size_t>& chosen = s.chosen;
  if (kind == "profile") {
    std::stable_sort(chosen.begin(), chosen.end(), [&](std::size_t x, std::size_t y) {
      return ir.operations[items[x].index].timing->stats.total_ns >
             ir.operations[items[y].index].timing->stats.total_ns;
    });
    w.key("report");
    runtime::write_profile_report(w, runtime::profile_report(ir), req.limit);
  } else if (kind == "findings") {
    std::stable_sort(chosen.begin(), chosen.end(), [&](std::size_t x, std::size_t y) {
      int sx = static_cast<int>(ir.findings[items[x].index].severity);
      int sy = static_cast<int>(ir.findings[items[y].index].severity);
      if (sx != sy) return sx < sy;
      return natural_less(items[x].sel.id, items[y].sel.id);
    });
  } else {
    std::stable_sort(chosen.begin(), chosen.end(), [&](std::size_t x, std::size_t y) {
      return natural_less(items[x].sel.id, items[y].sel.id);
    });
  }
  auto page = paginate(chosen.size(), req.offset, req.limit);
  w.field("total", static_cast<std::uint64_t>(chosen.size()))
      .field("offset", static_cast<std::uint64_t>(page.offset))
      .field("returned", static_cast<std::uint64_t>(page.returned))
      .field("truncated", page.truncated);
  const std::string one = singular_of(section);
  w.key("items").begin_array();
  for (std::size_t i = 0; i < page.returned; ++i) {
    const auto& it = items[chosen[page.offset + i]];
    w.begin_object().field("id", it.sel.id).field("name", it.name).field("detail", it.detail);
    if (!it.component.empty()) w.field("component", it.component);
    if (!one.empty()) drill_down(w, ctx, req, one, it.sel.id);
    w.end_object();
  }
  w.end_array();
  if (kind == "components") nested_models(w, ir, req, ctx);
  w.end_object();
}

// `summary` and `doctor`: counts, findings by severity (and by rule), advice.
void write_overview(JsonWriter& w, const Analysis& a, bool doctor, bool config_bound, bool mcp) {
  const ir::ModelIr& ir = a.ir;
  std::map<std::string, std::uint64_t> by_severity, by_rule;
  for (const auto& f : ir.findings) {
    ++by_severity[std::string(ir::to_string(f.severity))];
    ++by_rule[f.rule];
  }
  w.begin_object();
  w.key("counts").begin_object();
  w.field("components", static_cast<std::uint64_t>(ir.components.size()));
  w.field("modules", static_cast<std::uint64_t>(ir.modules.size()));
  w.field("parameters", static_cast<std::uint64_t>(ir.parameters.size()));
  w.field("functions", static_cast<std::uint64_t>(ir.functions.size()));
  w.field("entrypoints", ir.coverage.entrypoints);
  w.field("tensors", static_cast<std::uint64_t>(ir.tensors.size()));
  w.field("operations", static_cast<std::uint64_t>(ir.operations.size()));
  w.field("linked_parameter_uses", ir.coverage.linked_parameter_uses);
  w.field("findings", static_cast<std::uint64_t>(ir.findings.size()));
  w.end_object();
  w.key("findings_by_severity").begin_object();
  for (const auto& [k, v] : by_severity)
    w.field(k, v);
  w.end_object();
  w.key("components").begin_array();
  for (const auto& c : ir.components)
    w.value(c.qualified_name);
  w.end_array();
  if (doctor) {
    write_doctor(w, ir, by_rule, config_bound, mcp);
    write_dependencies(w, a.dependencies);
  }
  w.end_object();
}

// The single-object kinds: one item that is not an IR record list.
// The torchinfo-style table: within 120 columns, weight rows and unknown columns when asked
// for; what is hidden is said in the terms of whoever asks (an MCP argument or a flag).
std::string summary_table_text(const Analysis& a, const QueryRequest& req,
                               const QueryContext& ctx) {
  SummaryOptions o;
  o.weights = req.weights;
  o.all_columns = req.all_columns;
  if (ctx.mcp) {
    o.weights_flag = "\"weights\": true";
    o.columns_flag = "\"all_columns\": true";
    o.config_hint = "call again with \"config\": \"path/to/config.json\"";
  } else {
    o.weights_flag = "summary --weights";
    o.columns_flag = "summary --all-columns";
  }
  return render_model_summary(a, ctx.config_path, o);
}

void single_object(JsonWriter& w, const Analysis& a, const std::string& kind,
                   const QueryRequest& req, const QueryContext& ctx) {
  const ir::ModelIr& ir = a.ir;
  one_item_page(w);
  w.key("items").begin_array();
  if (kind == "summary" || kind == "doctor") {
    write_overview(w, a, kind == "doctor", !ctx.config_path.empty(), ctx.mcp);
  } else if (kind == "cargo") {
    JsonWriter c(0);
    ir::write_record(c, ir.cargo);
    w.raw(c.str());
  } else if (kind == "runtime") {
    if (!ir.runtime)
      throw InputError("query runtime", "no runtime trace merged: pass --runtime-trace FILE");
    JsonWriter r(0);
    ir::write_record(r, ir.runtime);
    w.raw(r.str());
  } else if (kind == "checkpoint") {
    if (ctx.checkpoint_report.empty())
      throw InputError("query checkpoint", "pass --checkpoint FILE to verify a checkpoint");
    w.raw(ctx.checkpoint_report);
  } else if (kind == "summary-table") {
    w.begin_object().field("text", summary_table_text(a, req, ctx)).end_object();
  } else if (kind == "memory") {
    MemoryOptions m;
    m.dtype = req.dtype;
    if (req.context > 0) m.context = req.context;
    if (req.batch == 0) throw InputError("query memory", "batch must be at least 1");
    m.batch = req.batch;
    if (!req.device_memory.empty()) m.device_bytes = parse_memory_size(req.device_memory);
    if (!ctx.crate_path.empty()) {
      m.quantized_builder = quantized_root(a, ctx.crate_path);
      if (m.quantized_builder) m.dequantized = dequantized_parameters(a, ctx.crate_path);
    }
    w.raw(render_memory_json(build_memory(a, ctx.config_path, m)));
  }
  w.end_array().end_object();
}

}  // namespace

namespace {

// `module-timings`: the runtime module scope rows (instances and `{i}` families), by self time,
// paginated; a selector keeps the paths equal to it or containing it.
std::string answer_module_timings(const Analysis& a, const QueryRequest& req,
                                  const QueryContext& ctx) {
  const ir::ModelIr& ir = a.ir;
  if (!ir.runtime) {
    throw InputError("query module-timings",
                     "no runtime trace merged: pass --runtime-trace FILE (runtime/4 with module "
                     "scopes)");
  }
  const auto& rt = *ir.runtime;
  std::vector<const ir::ModuleTiming*> rows;
  for (const auto& t : rt.module_timings) {
    if (req.selector.empty() || t.path == req.selector ||
        t.path.find(req.selector) != std::string::npos)
      rows.push_back(&t);
  }
  std::stable_sort(rows.begin(), rows.end(), [](const auto* x, const auto* y) {
    if (x->self.total_ns != y->self.total_ns) return x->self.total_ns > y->self.total_ns;
    return natural_less(x->path, y->path);
  });
  // The run's real wall time (threads' union); IRs merged before it existed: the busy times' sum.
  std::uint64_t wall = rt.wall_ns;
  if (wall == 0)
    for (auto ns : rt.thread_busy_ns)
      wall += ns;
  auto page = paginate(rows.size(), req.offset, req.limit);
  JsonWriter w(2);
  head(w, a, "module-timings", req.selector);
  w.field("total", static_cast<std::uint64_t>(rows.size()))
      .field("offset", static_cast<std::uint64_t>(page.offset))
      .field("returned", static_cast<std::uint64_t>(page.returned))
      .field("truncated", page.truncated);
  w.field("wall_ns", wall).field("steps", rt.steps).field("host_side", rt.host_side_timings);
  w.field("unmatched_module_paths", rt.unmatched_module_paths);
  w.key("unmatched_examples").begin_array();
  for (std::size_t i = 0; i < rt.unmatched_module_path_examples.size() && i < 10; ++i)
    w.value(rt.unmatched_module_path_examples[i]);
  w.end_array();
  w.key("items").begin_array();
  for (std::size_t i = 0; i < page.returned; ++i) {
    const ir::ModuleTiming& t = *rows[page.offset + i];
    w.begin_object().field("path", t.path).field("module", t.module);
    w.key("instance");
    if (t.instance) {
      w.value(*t.instance);
    } else {
      w.null();
    }
    w.field("family", t.path.find('{') != std::string::npos);
    w.field("calls", t.calls).field("total_ns", t.total.total_ns).field("self_ns", t.self.total_ns);
    w.key("self_share");
    if (wall) {
      w.value(static_cast<double>(t.self.total_ns) / static_cast<double>(wall));
    } else {
      w.null();
    }
    w.field("p50_ns", t.total.p50_ns).field("p95_ns", t.total.p95_ns);
    w.field("max_ns", t.total.max_ns);
    drill_down(w, ctx, req, "module", t.module);
    w.end_object();
  }
  w.end_array().end_object();
  return w.take() + "\n";
}

// `first-non-finite`: which module output went non-finite first (step, then at_ns, then thread),
// from runtime.module_stats; `found` is false when stats were recorded and all were finite, null
// when no stats were recorded at all (nothing is known).
std::string answer_first_non_finite(const Analysis& a, const QueryRequest& req,
                                    const QueryContext& ctx) {
  const ir::ModelIr& ir = a.ir;
  if (!ir.runtime) {
    throw InputError("query first-non-finite",
                     "no runtime trace merged: pass --runtime-trace FILE (runtime/4 with stats "
                     "records)");
  }
  const auto& rt = *ir.runtime;
  const ir::ModuleStats* first = nullptr;
  auto order = [](const ir::FirstNonFinite& f) { return std::tie(f.step, f.at_ns, f.thread); };
  for (const auto& s : rt.module_stats) {
    if (s.path.find('{') != std::string::npos || !s.first_non_finite) continue;
    if (!first || order(*s.first_non_finite) < order(*first->first_non_finite)) first = &s;
  }
  const ir::GradStats* grad = nullptr;
  for (const auto& g : rt.grad_stats) {
    if (!g.first_non_finite) continue;
    if (!grad || order(*g.first_non_finite) < order(*grad->first_non_finite)) grad = &g;
  }
  JsonWriter w(2);
  head(w, a, "first-non-finite", req.selector);
  w.field("total", static_cast<std::uint64_t>(first ? 1 : 0))
      .field("offset", std::uint64_t{0})
      .field("returned", static_cast<std::uint64_t>(first ? 1 : 0))
      .field("truncated", false);
  w.field("stats_records", rt.stats_records);
  std::uint64_t outputs = 0;
  for (const auto& s : rt.module_stats)
    if (s.path.find('{') == std::string::npos) outputs += s.samples;
  w.field("output_samples", outputs);
  w.key("found");
  std::string answer;
  if (rt.stats_records == 0) {
    w.null();
    answer =
        "? no stats records in the merged traces: numeric health was not recorded (set "
        "stats_every or stats_on_non_finite in the program's profiler)";
  } else if (!first) {
    w.value(false);
    answer = "no non-finite value recorded in " + std::to_string(outputs) +
             " module output stats records (" + std::to_string(rt.stats_records) +
             " stats records in all)";
  } else {
    w.value(true);
    const auto& f = *first->first_non_finite;
    answer = "`" + first->path + "`" +
             (first->index ? " (output " + std::to_string(first->index) + ")" : "") + " at step " +
             std::to_string(f.step) + ": " + std::to_string(f.nan) + " NaN, " +
             std::to_string(f.pos_inf) + " +Inf, " + std::to_string(f.neg_inf) + " -Inf";
  }
  w.field("answer", answer);
  w.key("items").begin_array();
  if (first) {
    const auto& f = *first->first_non_finite;
    w.begin_object().field("path", first->path).field("module", first->module);
    w.key("instance");
    if (first->instance) {
      w.value(*first->instance);
    } else {
      w.null();
    }
    w.field("index", first->index)
        .field("step", f.step)
        .field("at_ns", f.at_ns)
        .field("thread", f.thread)
        .field("reason", f.reason)
        .field("nan", f.nan)
        .field("pos_inf", f.pos_inf)
        .field("neg_inf", f.neg_inf);
    if (!first->module.empty()) drill_down(w, ctx, req, "module", first->module);
    w.end_object();
  }
  w.end_array();
  // The merge's finding about it says more (whether its inputs were observed).
  const ir::Finding* finding = nullptr;
  for (const auto& f : ir.findings)
    if (f.rule == "runtime-first-non-finite") finding = &f;
  w.key("finding");
  if (finding) {
    w.begin_object().field("id", finding->id).field("message", finding->message).end_object();
  } else {
    w.null();
  }
  w.key("first_non_finite_gradient");
  if (grad) {
    const auto& f = *grad->first_non_finite;
    w.begin_object().field("key", grad->key);
    w.key("parameters").begin_array();
    for (const auto& p : grad->parameters)
      w.value(p);
    w.end_array();
    w.field("step", f.step)
        .field("nan", f.nan)
        .field("pos_inf", f.pos_inf)
        .field("neg_inf", f.neg_inf)
        .end_object();
  } else {
    w.null();
  }
  w.end_object();
  return w.take() + "\n";
}
}  // namespace

const std::vector<ToolSpec>& query_kinds() {
  // {kind, description, takes_selector, requires_selector, takes_to, paginated}
  static const std::vector<ToolSpec> kinds = {
      {"summary", "Counts of every record kind in the analysis, findings by severity", false, false,
       false, false},
      {"doctor", "What limits this analysis (gaps, symbolic shapes, unknowns) and what to do",
       false, false, false, false},
      {"cargo", "The Cargo context: package, target, features, cfg, exact Candle versions", false,
       false, false, false},
      {"components", "Model components (root constructors) with their parameter counts", true},
      {"component", "One component in full", true, true, false, false},
      {"modules", "Module tree records (prefix, type; candle-nn layers included)", true},
      {"module", "One module instance in full", true, true, false, false},
      {"composition", "Composition edges between components", true},
      {"parameters", "Parameters (checkpoint key, shape, certainty)", true},
      {"parameter", "One parameter in full (shape, reason, source, uses)", true, true, false,
       false},
      {"functions", "Functions of the crate", true},
      {"function", "One function in full (signature, calls, tensors, phases)", true, true, false,
       false},
      {"entrypoints", "Entrypoints: forward-like trait methods, public tensor functions, losses",
       true},
      {"tensors", "Tensors of the dataflow (role, dtype)", true},
      {"tensor", "One tensor in full (shape, dtype, device, layout)", true, true, false, false},
      {"operations", "Tensor operations with their static ids (the profiler's keys)", true},
      {"operation", "One operation in full (rules, inputs, output, timing)", true, true, false,
       false},
      {"graph-train", "Operations reached by training entrypoints", true},
      {"graph-infer", "Operations reached by inference entrypoints", true},
      {"path", "The shortest chain of operations from SELECTOR to --to (operation or tensor ids)",
       true, true, true, true},
      {"findings", "Diagnostics (rule, severity, message), errors first", true},
      {"finding", "One finding in full", true, true, false, false},
      {"runtime", "The merged runtime summary (needs --runtime-trace)", false, false, false, false},
      {"profile", "Timed operations by total time with share of step, and per-module totals", true},
      {"module-timings",
       "Module scope timings (runtime/4 module records): per instance and {i} family, total and "
       "self time, calls, p50/p95, by self time (selector: a path or part of one)",
       true},
      {"first-non-finite",
       "Which module output went non-finite first (runtime/4 stats records): path, step, NaN/Inf "
       "counts; found false when every recorded value was finite, null when none was recorded",
       false, false, false, false},
      {"checkpoint", "The checkpoint verification report (needs --checkpoint)", false, false, false,
       false},
      {"summary-table", "The torchinfo-style table as text", false, false, false, false},
      {"memory",
       "Memory the model needs: weights, KV cache and state, activations, training, and whether "
       "it fits a device",
       false, false, false, false},
  };
  return kinds;
}

std::vector<ToolSpec> mcp_tools() {
  // For an agent: what the tool is for, an example call (its JSON arguments) and what the answer
  // holds. Every tool also takes "root" (the model, by its Rust path) and "config" (a config.json
  // path); listings take "limit" and "offset".
  struct Text {
    const char* kind;
    const char* what;
    const char* example;
    const char* holds;
  };
  static const Text texts[] = {
      {"summary", "Start here: what the analysis found, in numbers.",
       R"({"root": "models::llama::Llama"})",
       "counts of components, modules, parameters, functions, operations and findings, and the "
       "findings by severity"},
      {"doctor", "What limits this analysis and which call to make about it.", R"({})",
       "findings by rule, counts of symbolic, conditional and unknown parameters, and advice "
       "(each a tool call to make)"},
      {"cargo", "The Cargo context the crate was analysed under.", R"({})",
       "package, version, target, active features and cfg, and the exact Candle versions"},
      {"components",
       "Find a model: the components (model roots whose constructor takes a VarBuilder) whose "
       "Rust path or name contains the selector.",
       R"({"select": "llama"})",
       "one item per component (id, Rust path, parameter and module counts, drill_down: the "
       "query_component call), then built_inside_other_components: matching model types another "
       "component builds, each with the call that analyses it as its own root"},
      {"component", "One model component in full.",
       R"({"select": "models::llama::Llama", "root": "models::llama::Llama"})",
       "the component record: Rust path, constructor, entrypoints, modules and parameters (ids)"},
      {"modules", "Browse the module tree (candle-nn layers included) by prefix or type.",
       R"({"select": "self_attn", "root": "models::llama::Llama"})",
       "one item per module instance: id, prefix, type, the component it belongs to, drill_down"},
      {"module", "One module instance in full, with the summary's figures for it.",
       R"({"select": "model.layers.{i}.self_attn", "root": "models::llama::Llama"})",
       "the module record (prefix, type, parent, children, source) and its parameter count, "
       "Mult-Adds and weight bytes"},
      {"composition", "Which component builds which (llava builds a llama).",
       R"({"select": "llama"})", "one item per edge: from -> to and the function that builds it"},
      {"parameters",
       "Find checkpoint keys: the parameters whose key contains the selector, with their shapes.",
       R"({"select": "self_attn.q_proj", "root": "models::llama::Llama"})",
       "one item per parameter: id, checkpoint key, shape (numbers with a config bound, else "
       "symbolic) and certainty, the component (model) it belongs to, drill_down"},
      {"parameter", "One parameter in full: why it has its shape, where it is loaded and used.",
       R"({"select": "lm_head.weight", "root": "models::llama::Llama"})",
       "the parameter record: key, shape, dtype, reason, source location, uses"},
      {"functions", "Browse the crate's functions and methods (of the root's code with a root).",
       R"({"select": "forward", "root": "models::llama::Llama"})",
       "one item per function: id, Rust path, source location, drill_down"},
      {"function", "One function in full.",
       R"({"select": "models::llama::Llama::forward", "root": "models::llama::Llama"})",
       "signature, the functions it calls, its tensors and execution phases"},
      {"entrypoints", "The forward-like functions the dataflow starts from.",
       R"({"root": "models::llama::Llama"})",
       "one item per entrypoint: Module::forward methods, public tensor functions, losses"},
      {"tensors", "Browse the dataflow's tensors by name.",
       R"({"select": "xs", "root": "models::llama::Llama"})",
       "one item per tensor: id, name, role (input, parameter, intermediate, output) and dtype"},
      {"tensor", "One tensor in full.", R"({"select": "<a tensor id from query_tensors>"})",
       "shape, dtype, device, layout and the operation producing it"},
      {"operations",
       "Browse the tensor operations (the profiler's keys) by name or source location.",
       R"({"select": "matmul", "root": "models::llama::Llama"})",
       "one item per operation: static id, qualified name, source location and phase"},
      {"operation", "One operation in full.",
       R"({"select": "<an operation id from query_operations>"})",
       "its rules (dtype, shape, gradient), inputs, output and any merged timing"},
      {"graph-train", "The operations a training step reaches.",
       R"({"root": "models::llama::Llama"})",
       "one item per operation reached by a training entrypoint"},
      {"graph-infer", "The operations inference reaches.", R"({"root": "models::llama::Llama"})",
       "one item per operation reached by an inference entrypoint"},
      {"path",
       "How one tensor or operation reaches another: the shortest chain of operations between "
       "them.",
       R"({"select": "<an operation or tensor id>", "to": "<another id>"})",
       "the chain of operations from select to to, in order, each with its drill_down"},
      {"findings",
       "Diagnostics: errors first; select a rule (\"dtype-mismatch\") or part of a message.",
       R"({"select": "config-binding"})", "one item per finding: id, rule, severity and message"},
      {"finding", "One finding in full.", R"({"select": "<a finding id from query_findings>"})",
       "rule, severity, confidence, message, source location and the records it is about"},
      {"runtime", "The runtime measurements merged into the analysis (when the server has traces).",
       R"({})", "the merged runtime summary: runs, steps, devices, timed operations"},
      {"profile", "Where the time goes: timed operations by total time.", R"({"limit": 20})",
       "operations by total time with their share of the step, and per-module totals"},
      {"module-timings", "Per-module timings (module scopes of a runtime/4 trace).",
       R"({"select": "self_attn"})",
       "per module instance and {i} family: total and self time, calls, p50/p95, by self time"},
      {"first-non-finite",
       "Which module's output held a NaN or Inf first in the run (runtime/4 stats records).",
       R"({})",
       "found (true, false: all recorded values finite, null: nothing recorded), answer, the "
       "module's path, step, thread and NaN/+Inf/-Inf counts, and the first non-finite gradient"},
      {"checkpoint",
       "Whether a safetensors checkpoint loads into this model (when the server has one).", R"({})",
       "the verification report: missing, unexpected and mis-shaped keys, the verdict"},
      {"summary-table",
       "The torchinfo-style model summary as text (module tree, Param #, sizes), within 120 "
       "columns.",
       R"({"root": "models::llama::Llama", "config": "/path/to/config.json"})",
       "the table and its totals as text; \"weights\": true adds a row per weight with its shape, "
       "\"all_columns\": true adds columns unknown on every row; long answers continue at "
       "\"text_offset\""},
      {"memory",
       "Will it fit? The memory the model's code allocates: weights at its dtype, the KV cache "
       "and other state its forward keeps at a context and batch, the peak of live activations, "
       "AdamW training, and with device_memory whether it fits and the largest context and "
       "batch that can.",
       R"({"root": "models::llama::Llama", "config": "/path/to/config.json", "context": 4096, "device_memory": "24GiB"})",
       "bytes per figure (weights_bytes, kv_cache_bytes, state_bytes, activations_peak_bytes, "
       "inference_total_bytes, training_total_bytes), each with its bound (exact, lower_bound, "
       "upper_bound, unknown); the per-layer state; fit"},
  };
  std::vector<ToolSpec> out = query_kinds();
  for (auto& t : out)
    for (const auto& x : texts)
      if (t.kind == x.kind)
        t.description =
            std::string(x.what) + " Example: " + x.example + ". Answer: " + x.holds + ".";
  return out;
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

std::string answer_query(const Analysis& a, const QueryRequest& req, const QueryContext& ctx) {
  const std::string kind = canonical_kind(req.kind);
  const ToolSpec& spec = spec_of(kind);
  if (spec.requires_selector && req.selector.empty())
    throw InputError("query " + kind,
                     "needs a selector: a stable id, an exact name or a substring");
  if (!spec.takes_selector && !req.selector.empty())
    throw InputError("query " + kind, "takes no selector");
  if (kind == "path") return answer_path(a, req, ctx);
  if (kind == "module-timings") return answer_module_timings(a, req, ctx);
  if (kind == "first-non-finite") return answer_first_non_finite(a, req, ctx);
  JsonWriter w(2);
  head(w, a, kind, req.selector);
  const std::string section = section_of(kind);
  if (section.empty())
    single_object(w, a, kind, req, ctx);
  else if (spec.paginated)
    listing(w, a.ir, kind, section, req, ctx);
  else
    singular(w, a.ir, kind, section, req.selector, summary_dtype("", ctx.config_path));
  return w.take() + "\n";
}

std::string answer_query_tree(const Analysis& a, const QueryRequest& req, const QueryContext& ctx) {
  const std::string kind = canonical_kind(req.kind);
  if (kind == "summary-table") return summary_table_text(a, req, ctx);
  std::string json = answer_query(a, req, ctx);
  simdjson::dom::parser p;
  simdjson::dom::element e = p.parse(json);
  std::uint64_t total = e["total"].get_uint64().value();
  std::uint64_t returned = e["returned"].get_uint64().value();
  std::uint64_t offset = e["offset"].get_uint64().value();
  std::string out = kind + ": " + std::to_string(returned) + " of " + std::to_string(total);
  if (e["truncated"].get_bool().value())
    out += " (next page: --offset " + std::to_string(offset + returned) + ")";
  out += "\n";
  for (auto item : e["items"].get_array()) {
    if (!item.is_object()) continue;
    simdjson::dom::object obj = item.get_object();
    if (obj["name"].error() == simdjson::SUCCESS && obj["detail"].error() == simdjson::SUCCESS) {
      out += "  " + std::string(obj["name"].get_string().value()) + "  " +
             std::string(obj["detail"].get_string().value()) + "\n";
      continue;
    }
    // A full record or a single object: its top-level fields, one per line.
    for (auto field : obj) {
      std::string v = field.value.is_string() ? std::string(field.value.get_string().value())
                                              : simdjson::to_string(field.value);
      if (v.size() > 200) v = v.substr(0, 197) + "...";
      out += "  " + std::string(field.key) + ": " + v + "\n";
    }
  }
  return out;
}

}  // namespace cg::query
