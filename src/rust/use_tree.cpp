#include "rust/use_tree.hpp"

#include <cctype>

namespace cg::rust {

namespace {

std::vector<std::string> tokenize(std::string_view s) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i < s.size()) {
    char c = s[i];
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
    } else if (c == '/' && i + 1 < s.size() && s[i + 1] == '/') {
      while (i < s.size() && s[i] != '\n')
        ++i;
    } else if (c == '/' && i + 1 < s.size() && s[i + 1] == '*') {
      auto end = s.find("*/", i + 2);
      i = end == std::string_view::npos ? s.size() : end + 2;
    } else if (c == ':' && i + 1 < s.size() && s[i + 1] == ':') {
      out.emplace_back("::");
      i += 2;
    } else if (c == '{' || c == '}' || c == ',' || c == '*') {
      out.emplace_back(1, c);
      ++i;
    } else if (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '#') {
      std::size_t j = i;
      while (j < s.size() &&
             (std::isalnum(static_cast<unsigned char>(s[j])) || s[j] == '_' || s[j] == '#'))
        ++j;
      std::string word(s.substr(i, j - i));
      if (word.rfind("r#", 0) == 0) word = word.substr(2);
      out.push_back(std::move(word));
      i = j;
    } else {
      ++i;  // `$crate` and other macro noise: skip the byte
    }
  }
  return out;
}

bool is_word(const std::string& t) {
  return !t.empty() && (std::isalnum(static_cast<unsigned char>(t[0])) || t[0] == '_');
}

void parse_tree(const std::vector<std::string>& tok, std::size_t& pos,
                std::vector<std::string> segs, std::vector<UseLeaf>& out, int depth) {
  if (depth > 64) {
    pos = tok.size();
    return;
  }
  if (pos < tok.size() && tok[pos] == "::") {
    if (segs.empty()) segs.emplace_back();
    ++pos;
  }
  while (pos < tok.size()) {
    const std::string& t = tok[pos];
    if (t == "{") {
      ++pos;
      while (pos < tok.size() && tok[pos] != "}") {
        std::size_t before = pos;
        parse_tree(tok, pos, segs, out, depth + 1);
        if (pos < tok.size() && tok[pos] == ",") ++pos;
        if (pos == before) ++pos;  // never loop on junk
      }
      if (pos < tok.size()) ++pos;
      return;
    }
    if (t == "*") {
      ++pos;
      out.push_back({segs, "", true});
      return;
    }
    if (is_word(t) && t != "as") {
      segs.push_back(t);
      ++pos;
      if (pos < tok.size() && tok[pos] == "::") {
        ++pos;
        continue;
      }
      break;
    }
    return;
  }
  if (segs.empty()) return;
  std::string alias;
  if (pos + 1 < tok.size() && tok[pos] == "as") {
    alias = tok[pos + 1];
    pos += 2;
  }
  if (segs.back() == "self" && segs.size() > 1) segs.pop_back();
  std::string name = alias.empty() ? segs.back() : alias;
  out.push_back({std::move(segs), std::move(name), false});
}

}  // namespace

std::vector<UseLeaf> parse_use_tree(std::string_view text) {
  std::vector<UseLeaf> out;
  auto tok = tokenize(text);
  std::size_t pos = 0;
  parse_tree(tok, pos, {}, out, 0);
  return out;
}

}  // namespace cg::rust
