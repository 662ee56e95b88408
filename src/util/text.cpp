#include "util/text.hpp"

#include <cctype>

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

}  // namespace cg
