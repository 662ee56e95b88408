#include "util/text.hpp"

#include <algorithm>
#include <cctype>
#include <vector>

namespace cg {

namespace {
bool ident_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}
}  // namespace

bool contains_word(std::string_view text, std::string_view word) {
  if (word.empty()) return false;
  std::size_t p = 0;
  while ((p = text.find(word, p)) != std::string_view::npos) {
    std::size_t e = p + word.size();
    if ((p == 0 || !ident_char(text[p - 1])) && (e >= text.size() || !ident_char(text[e])))
      return true;
    p = e;
  }
  return false;
}

}  // namespace cg

namespace cg {

std::string_view last_path_segment(std::string_view path) {
  const auto sep = path.rfind("::");
  return sep == std::string_view::npos ? path : path.substr(sep + 2);
}

std::string_view last_key_segment(std::string_view key) {
  const auto dot = key.rfind('.');
  return dot == std::string_view::npos ? key : key.substr(dot + 1);
}

std::optional<std::pair<std::string_view, std::uint64_t>> dimension_quotient(std::string_view f) {
  if (f.size() >= 2 && f.front() == '(' && f.back() == ')') f = f.substr(1, f.size() - 2);
  const auto slash = f.find('/');
  if (slash == std::string_view::npos || slash == 0) return std::nullopt;
  std::string_view name = f.substr(0, slash), d = f.substr(slash + 1);
  auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  if (std::isdigit(static_cast<unsigned char>(name[0])) ||
      !std::all_of(name.begin(), name.end(), word))
    return std::nullopt;
  if (d.empty() || d.size() > 9 ||
      !std::all_of(d.begin(), d.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return std::nullopt;
  std::uint64_t n = 0;
  for (char c : d)
    n = n * 10 + static_cast<std::uint64_t>(c - '0');
  if (n == 0) return std::nullopt;
  return std::pair{name, n};
}

namespace {

void append_escaped(std::string& out, std::string_view text, bool keep_lines) {
  static constexpr char kHex[] = "0123456789abcdef";
  for (char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if ((c < 0x20 || c == 0x7f) && !(keep_lines && (c == '\n' || c == '\t'))) {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    } else {
      out += ch;
    }
  }
}

}  // namespace

std::string shown_text(std::string_view text, std::size_t max_bytes) {
  std::string out;
  append_escaped(out, text.substr(0, max_bytes), false);
  if (max_bytes < text.size()) out += "... (" + std::to_string(text.size()) + " bytes)";
  return out;
}

std::string terminal_safe(std::string_view text) {
  std::string out;
  append_escaped(out, text, true);
  return out;
}

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j)
    row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

}  // namespace cg
