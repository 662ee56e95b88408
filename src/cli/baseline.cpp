#include "cli/baseline.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "util/error.hpp"

namespace cg::cli {

namespace {

constexpr std::string_view kHeader = "# candle-graph/model-baseline/1";
const char* const kSections[] = {"component", "parameter", "entrypoint", "finding"};

std::string esc(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '\t')
      out += "\\t";
    else if (c == '\n')
      out += "\\n";
    else
      out.push_back(c);
  }
  return out;
}

std::string line(std::initializer_list<std::string_view> fields) {
  std::string out;
  for (auto f : fields) {
    if (!out.empty()) out.push_back('\t');
    out += esc(f);
  }
  return out;
}

}  // namespace

Baseline baseline_of(const ir::ModelIr& ir) {
  std::map<std::string, std::set<std::string>> by;
  for (const auto& c : ir.components)
    by["component"].insert(line({"component", c.qualified_name, c.id}));
  for (const auto& p : ir.parameters) {
    std::string shape;
    if (p.shape) {
      shape = "[";
      for (std::size_t i = 0; i < p.shape->size(); ++i)
        shape += (i ? "," : "") + std::to_string((*p.shape)[i]);
      shape += "]";
    }
    if (shape.empty())
      by["parameter"].insert(line({"parameter", p.builder_root, p.key, p.kind}));
    else
      by["parameter"].insert(line({"parameter", p.builder_root, p.key, p.kind, shape}));
  }
  for (const auto& f : ir.functions)
    if (f.is_entrypoint) by["entrypoint"].insert(line({"entrypoint", f.qualified_name}));
  for (const auto& f : ir.findings)
    by["finding"].insert(line({"finding", f.rule, ir::to_string(f.severity)}));
  Baseline b;
  for (const char* s : kSections)
    b.sections.emplace_back(s, std::vector<std::string>(by[s].begin(), by[s].end()));
  return b;
}

std::string write_baseline(const Baseline& b) {
  std::string out(kHeader);
  out += "\n";
  for (const auto& [name, lines] : b.sections)
    for (const auto& l : lines)
      out += l + "\n";
  return out;
}

Baseline parse_baseline(std::string_view text, const std::string& origin) {
  std::map<std::string, std::set<std::string>> by;
  bool header = false;
  std::size_t number = 0, pos = 0;
  while (pos <= text.size()) {
    auto nl = text.find('\n', pos);
    std::string_view l = text.substr(pos, nl == std::string_view::npos ? text.npos : nl - pos);
    pos = nl == std::string_view::npos ? text.size() + 1 : nl + 1;
    ++number;
    if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
    if (l.empty()) continue;
    std::string where = origin + ":" + std::to_string(number);
    if (l.front() == '#') {
      if (l != kHeader)
        throw InputError(where, "expected the header `" + std::string(kHeader) + "`, found `" +
                                    std::string(l) + "`");
      header = true;
      continue;
    }
    if (!header) throw InputError(where, "the file must start with `" + std::string(kHeader) + "`");
    std::string kind(l.substr(0, l.find('\t')));
    if (std::find(std::begin(kSections), std::end(kSections), kind) == std::end(kSections))
      throw InputError(where, "unknown record kind `" + kind +
                                  "`; expected component, parameter, entrypoint or finding");
    by[kind].insert(std::string(l));
  }
  if (!header) throw InputError(origin, "empty baseline: expected `" + std::string(kHeader) + "`");
  Baseline b;
  for (const char* s : kSections)
    b.sections.emplace_back(s, std::vector<std::string>(by[s].begin(), by[s].end()));
  return b;
}

std::string diff_baselines(const Baseline& expected, const Baseline& actual) {
  std::string out;
  for (std::size_t i = 0; i < expected.sections.size() && i < actual.sections.size(); ++i) {
    const auto& e = expected.sections[i].second;
    const auto& a = actual.sections[i].second;
    std::vector<std::string> removed, added;
    std::set_difference(e.begin(), e.end(), a.begin(), a.end(), std::back_inserter(removed));
    std::set_difference(a.begin(), a.end(), e.begin(), e.end(), std::back_inserter(added));
    if (removed.empty() && added.empty()) continue;
    out += expected.sections[i].first + "s: " + std::to_string(removed.size()) + " removed, " +
           std::to_string(added.size()) + " added\n";
    for (const auto& r : removed)
      out += "- " + r + "\n";
    for (const auto& r : added)
      out += "+ " + r + "\n";
  }
  return out;
}

}  // namespace cg::cli
