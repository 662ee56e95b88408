#include "rust/cfg.hpp"

#include <cctype>

namespace cg::rust {

std::string normalize_cfg(std::string_view text) {
  std::string out;
  bool quoted = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '"' && (i == 0 || text[i - 1] != '\\')) quoted = !quoted;
    if (!quoted && (c == ' ' || c == '\t' || c == '\n' || c == '\r')) continue;
    out += c;
  }
  return out;
}

CfgSet::CfgSet(const std::vector<std::string>& lines) {
  for (const auto& l : lines)
    active_.insert(normalize_cfg(l));
}

namespace {

// Splits "a,b(c,d),e" at top-level commas; false when parentheses or quotes do not balance.
bool split_args(std::string_view s, std::vector<std::string_view>& out) {
  int depth = 0;
  bool quoted = false;
  std::size_t start = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c == '"') quoted = !quoted;
    if (quoted) continue;
    if (c == '(') ++depth;
    if (c == ')' && --depth < 0) return false;
    if (c == ',' && depth == 0) {
      out.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  }
  if (depth != 0 || quoted) return false;
  if (start < s.size()) out.push_back(s.substr(start));
  return true;
}

bool is_ident(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  return !std::isdigit(static_cast<unsigned char>(s[0]));
}

Tri eval_norm(std::string_view p, const std::unordered_set<std::string>& active, int depth) {
  if (depth > 64) return Tri::Unknown;
  auto open = p.find('(');
  if (open != std::string_view::npos) {
    if (p.back() != ')') return Tri::Unknown;
    std::string_view head = p.substr(0, open);
    std::vector<std::string_view> args;
    if (!split_args(p.substr(open + 1, p.size() - open - 2), args)) return Tri::Unknown;
    if (head == "not") {
      if (args.size() != 1) return Tri::Unknown;
      Tri t = eval_norm(args[0], active, depth + 1);
      return t == Tri::Unknown ? t : (t == Tri::True ? Tri::False : Tri::True);
    }
    if (head == "all" || head == "any") {
      bool all = head == "all";
      bool unknown = false;
      for (auto a : args) {
        Tri t = eval_norm(a, active, depth + 1);
        if (all && t == Tri::False) return Tri::False;
        if (!all && t == Tri::True) return Tri::True;
        if (t == Tri::Unknown) unknown = true;
      }
      if (unknown) return Tri::Unknown;
      return all ? Tri::True : Tri::False;
    }
    return Tri::Unknown;
  }
  auto eq = p.find('=');
  if (eq != std::string_view::npos) {
    std::string_view key = p.substr(0, eq), value = p.substr(eq + 1);
    if (!is_ident(key) || value.size() < 2 || value.front() != '"' || value.back() != '"')
      return Tri::Unknown;
    return active.count(std::string(p)) ? Tri::True : Tri::False;
  }
  if (!is_ident(p)) return Tri::Unknown;
  return active.count(std::string(p)) ? Tri::True : Tri::False;
}

}  // namespace

Tri CfgSet::eval(std::string_view predicate) const {
  return eval_norm(normalize_cfg(predicate), active_, 0);
}

Tri CfgSet::eval_all(const std::vector<std::string>& predicates) const {
  bool unknown = false;
  for (const auto& p : predicates) {
    Tri t = eval(p);
    if (t == Tri::False) return Tri::False;
    if (t == Tri::Unknown) unknown = true;
  }
  return unknown ? Tri::Unknown : Tri::True;
}

}  // namespace cg::rust
