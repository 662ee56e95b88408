#include "runtime/module_paths.hpp"

#include <algorithm>
#include <set>
#include <string_view>

namespace cg::runtime {
namespace {

std::vector<std::string_view> split(std::string_view s) {
  std::vector<std::string_view> out;
  if (s.empty()) return out;
  std::size_t start = 0;
  for (;;) {
    std::size_t dot = s.find('.', start);
    out.push_back(s.substr(start, dot == std::string_view::npos ? dot : dot - start));
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  return out;
}

bool is_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

std::uint64_t number(std::string_view s) {
  std::uint64_t n = 0;
  for (char c : s) {
    if (n > (~std::uint64_t{0} - 9) / 10) return ~std::uint64_t{0};
    n = n * 10 + static_cast<std::uint64_t>(c - '0');
  }
  return n;
}

bool names_component(const ir::Component& c, const std::string& root) {
  if (c.name == root || c.qualified_name == root) return true;
  return c.qualified_name.size() > root.size() + 2 &&
         c.qualified_name.compare(c.qualified_name.size() - root.size(), root.size(), root) == 0 &&
         c.qualified_name.compare(c.qualified_name.size() - root.size() - 2, 2, "::") == 0;
}

}  // namespace

bool match_segment(std::string_view pattern, std::string_view text,
                   std::optional<std::uint64_t>& index) {
  std::size_t p = 0, t = 0;
  while (p < pattern.size()) {
    if (pattern[p] == '{') {
      std::size_t close = pattern.find('}', p);
      if (close == std::string_view::npos) return false;
      std::size_t digits = t;
      while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9')
        ++digits;
      if (digits == t) return false;
      index = number(text.substr(t, digits - t));
      t = digits;
      p = close + 1;
      continue;
    }
    if (t >= text.size() || text[t] != pattern[p]) return false;
    ++p;
    ++t;
  }
  return t == text.size();
}

ModulePathResolver::ModulePathResolver(const ir::ModelIr& ir, ModulePathOptions options)
    : ir_(ir), options_(std::move(options)) {}

std::optional<std::string_view> ModulePathResolver::relative(const std::string& path) const {
  std::string_view rel = path;
  if (!options_.prefix.empty()) {
    if (rel == options_.prefix) {
      rel = {};
    } else if (rel.size() > options_.prefix.size() &&
               rel.compare(0, options_.prefix.size(), options_.prefix) == 0 &&
               rel[options_.prefix.size()] == '.') {
      rel.remove_prefix(options_.prefix.size() + 1);
    } else {
      return std::nullopt;
    }
  }
  return rel;
}

std::vector<std::string> ModulePathResolver::parameters_for_key(const std::string& key) const {
  std::vector<std::string> out;
  const auto rel = relative(key);
  if (!rel) return out;
  const auto segments = split(*rel);
  for (const ir::Parameter& p : ir_.parameters) {
    if (!component_.empty() && p.component != component_) continue;
    if (p.key == *rel) {
      out.push_back(p.id);
      continue;
    }
    if (p.key.find('{') == std::string::npos) continue;
    const auto pattern = split(p.key);
    if (pattern.size() != segments.size()) continue;
    std::optional<std::uint64_t> index;
    bool ok = true;
    for (std::size_t i = 0; ok && i < pattern.size(); ++i)
      ok = match_segment(pattern[i], segments[i], index);
    if (ok) out.push_back(p.id);
  }
  return out;
}

std::optional<ModulePathMatch> ModulePathResolver::match(const std::string& component,
                                                         const std::string& path) const {
  const auto relative_path = relative(path);
  if (!relative_path) return std::nullopt;
  const std::string_view rel = *relative_path;
  const auto segments = split(rel);
  std::optional<ModulePathMatch> family;
  for (const ir::Module& m : ir_.modules) {  // sorted by id: the first match is deterministic
    if (m.component != component) continue;
    if (m.prefix == rel) {
      ModulePathMatch out{m.id, std::nullopt, false, {}};
      if (m.repeat) {
        for (auto it = segments.rbegin(); it != segments.rend(); ++it) {
          if (is_digits(*it)) {
            out.instance = number(*it);
            break;
          }
        }
      }
      return out;
    }
    if (family || m.prefix.find('{') == std::string::npos) continue;
    const auto pattern = split(m.prefix);
    if (pattern.size() != segments.size()) continue;
    std::optional<std::uint64_t> index;
    bool ok = true;
    for (std::size_t i = 0; ok && i < pattern.size(); ++i)
      ok = match_segment(pattern[i], segments[i], index);
    if (!ok) continue;
    std::string fp = options_.prefix.empty() ? m.prefix : options_.prefix + "." + m.prefix;
    if (m.prefix.empty()) fp = options_.prefix;
    family = ModulePathMatch{m.id, index, true, fp};
  }
  if (family) return family;
  // A module at another module's key (a head tied to the embedding: no weights of its own at
  // `model.embed_tokens`) is timed under its field's path (`lm_head`, docs/instrument.md): the
  // parent's prefix and the field name.
  std::map<std::string_view, const ir::Module*> by_id;
  for (const ir::Module& m : ir_.modules)
    if (m.component == component) by_id.emplace(m.id, &m);
  for (const ir::Module& m : ir_.modules) {
    if (m.component != component || !m.parent || !m.field || m.repeat) continue;
    auto p = by_id.find(*m.parent);
    if (p == by_id.end()) continue;
    const std::string& base = p->second->prefix;
    if ((base.empty() ? *m.field : base + "." + *m.field) == rel && m.prefix != rel)
      return ModulePathMatch{m.id, std::nullopt, false, {}};
  }
  return std::nullopt;
}

std::map<std::string, std::optional<ModulePathMatch>> ModulePathResolver::resolve(
    const std::vector<std::string>& paths) const {
  std::vector<std::string> candidates;
  for (const ir::Component& c : ir_.components) {
    if (options_.root.empty() || names_component(c, options_.root)) candidates.push_back(c.id);
  }
  std::sort(candidates.begin(), candidates.end());
  std::size_t best_count = 0;
  component_.clear();
  for (const auto& c : candidates) {
    std::size_t n = 0;
    for (const auto& p : paths)
      n += match(c, p).has_value();
    const bool take = component_.empty() ? (n > 0 || !options_.root.empty()) : n > best_count;
    if (take) {
      component_ = c;
      best_count = n;
    }
  }
  std::map<std::string, std::optional<ModulePathMatch>> out;
  for (const auto& p : paths)
    out[p] = component_.empty() ? std::nullopt : match(component_, p);
  return out;
}

}  // namespace cg::runtime
