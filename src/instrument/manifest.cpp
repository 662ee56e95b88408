#include "instrument/manifest.hpp"

#include <toml++/toml.h>

#include <optional>
#include <string_view>

#include "util/error.hpp"

namespace cg::instrument {

namespace {

struct Line {
  std::size_t start = 0, end = 0;  // end: after the `\n` (or the end of the text)
  std::string_view trimmed;
};

std::vector<Line> lines_of(const std::string& text) {
  std::vector<Line> out;
  std::size_t a = 0;
  while (a < text.size()) {
    std::size_t nl = text.find('\n', a);
    std::size_t b = nl == std::string::npos ? text.size() : nl + 1;
    std::string_view s(text.data() + a, b - a);
    std::size_t x = s.find_first_not_of(" \t\r\n");
    std::size_t y = s.find_last_not_of(" \t\r\n");
    out.push_back(
        {a, b, x == std::string_view::npos ? std::string_view() : s.substr(x, y - x + 1)});
    a = b;
  }
  return out;
}

// `[features]`, `[ features ]  # comment` -> "features"; "" for anything else (`[[bin]]` too).
std::string header_name(std::string_view t) {
  if (t.size() < 2 || t[0] != '[' || t[1] == '[') return {};
  std::size_t close = t.find(']');
  if (close == std::string_view::npos) return {};
  std::string_view rest = t.substr(close + 1);
  std::size_t x = rest.find_first_not_of(" \t");
  if (x != std::string_view::npos && rest[x] != '#') return {};
  std::string name;
  for (char c : t.substr(1, close - 1))
    if (c != ' ' && c != '\t') name += c;
  return name;
}

// Where a line appended to table `name` goes: after its last key or value line (blank lines and
// comments after it stay where they are). nullopt when there is no `[name]` header.
std::optional<std::size_t> end_of_table(const std::vector<Line>& lines, const std::string& name) {
  std::optional<std::size_t> at;
  bool inside = false;
  for (const auto& l : lines) {
    bool is_header =
        !l.trimmed.empty() && l.trimmed[0] == '[' &&
        (l.trimmed.size() < 2 || l.trimmed[1] == '[' || !header_name(l.trimmed).empty());
    if (is_header) {
      if (inside) return at;
      inside = header_name(l.trimmed) == name;
      if (inside) at = l.end;
      continue;
    }
    if (inside && !l.trimmed.empty() && l.trimmed[0] != '#') at = l.end;
  }
  return at;
}

// A top-level key written so that a `[name]` table cannot follow: `name = { … }` or a non-table.
// (A table only implied by `[name.sub]` headers may still get its own `[name]` header.)
bool inline_table(const toml::table& doc, const char* name) {
  const toml::node* n = doc.get(name);
  if (n == nullptr) return false;
  const toml::table* t = n->as_table();
  return t == nullptr || t->is_inline();
}

std::string toml_string(const std::string& v) {
  std::string out = "\"";
  for (char c : v) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

}  // namespace

std::string dependency_source(const std::string& spec) {
  const std::size_t eq = spec.find('=');
  const std::string key = eq == std::string::npos ? "" : spec.substr(0, eq);
  const std::string value = eq == std::string::npos ? "" : spec.substr(eq + 1);
  if ((key != "path" && key != "git" && key != "version") || value.empty())
    throw InputError("--profile-dep " + spec,
                     "expected path=DIR, git=URL or version=REQ (the candle-graph-profile "
                     "dependency's source)");
  if (value.find_first_of("\r\n") != std::string::npos)
    throw InputError("--profile-dep " + spec, "a line break in the value");
  return key + " = " + toml_string(value);
}

ManifestEdit manifest_insertions(const std::string& text, const std::string& origin,
                                 const std::string& source, bool stats) {
  toml::table doc;
  try {
    doc = toml::parse(text, origin);
  } catch (const toml::parse_error& e) {
    const auto& b = e.source().begin;
    throw InputError(origin + ":" + std::to_string(b.line) + ":" + std::to_string(b.column),
                     "malformed Cargo.toml: " + std::string(e.description()));
  }
  ManifestEdit out;
  const std::string eol = text.find("\r\n") != std::string::npos ? "\r\n" : "\n";
  const auto lines = lines_of(text);
  const bool ends_with_newline = text.empty() || text.back() == '\n';
  std::string appended;  // tables added at the end of the file

  const toml::node* dep = doc["dependencies"][kFeature].node();
  bool dep_optional = false;
  if (dep != nullptr)
    if (const toml::table* t = dep->as_table()) dep_optional = (*t)["optional"].value_or(false);
  const bool has_feature = doc["features"][kFeature].node() != nullptr;
  const bool has_stats_feature = doc["features"][kStatsFeature].node() != nullptr;

  // The feature: `dep:` needs an optional dependency; next to a required one it is just a name.
  std::string features;
  if (has_feature) {
    out.notes.push_back(origin + ": feature `" + std::string(kFeature) +
                        "` is already declared; left as it is");
  } else {
    features =
        std::string(kFeature) + " = " +
        (dep != nullptr && !dep_optional ? "[]" : "[\"dep:" + std::string(kFeature) + "\"]") + eol;
  }
  if (stats && has_stats_feature) {
    out.notes.push_back(origin + ": feature `" + std::string(kStatsFeature) +
                        "` is already declared; left as it is");
  } else if (stats) {
    features += std::string(kStatsFeature) + " = [\"" + kFeature + "\"]" + eol;
  }
  if (!features.empty()) {
    if (auto at = end_of_table(lines, "features")) {
      std::string prefix = (*at == text.size() && !ends_with_newline) ? eol : "";
      out.insertions.push_back({static_cast<std::uint32_t>(*at), prefix + features});
    } else if (inline_table(doc, "features")) {
      throw InputError(origin, "[features] is not written as a `[features]` table; add `" +
                                   std::string(kFeature) + " = [\"dep:" + kFeature +
                                   "\"]` to it by hand");
    } else {
      appended += eol + "[features]" + eol + features;
    }
  }

  if (dep != nullptr) {
    out.notes.push_back(origin + ": dependency `" + std::string(kFeature) +
                        "` is already declared; left as it is");
  } else {
    std::string line =
        "# Added by `candle-graph instrument`; point it at a path or git source as you "
        "prefer." +
        eol + std::string(kFeature) + " = { " + source + ", optional = true }" + eol;
    if (auto at = end_of_table(lines, "dependencies")) {
      std::string prefix = (*at == text.size() && !ends_with_newline) ? eol : "";
      out.insertions.push_back({static_cast<std::uint32_t>(*at), prefix + line});
    } else if (inline_table(doc, "dependencies")) {
      throw InputError(origin, "[dependencies] is not written as a `[dependencies]` table; add `" +
                                   std::string(kFeature) + " = { " + source +
                                   ", optional = true }` to it by hand");
    } else {
      appended += eol + "[dependencies]" + eol + line;
    }
  }
  if (!appended.empty())
    out.insertions.push_back(
        {static_cast<std::uint32_t>(text.size()), (ends_with_newline ? "" : eol) + appended});
  return out;
}

}  // namespace cg::instrument
