#include "rust/literal.hpp"

#include <cstdint>

namespace cg::rust {
namespace {

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

void append_utf8(std::string& out, std::uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

// The body of a non-raw literal with its escapes decoded; `bytes` allows `\x80`-`\xFF`.
std::optional<std::string> unescape(std::string_view s, bool bytes) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c == '"') return std::nullopt;  // an unescaped quote ends the literal early
    if (c != '\\') {
      out.push_back(c);
      continue;
    }
    if (++i >= s.size()) return std::nullopt;
    switch (s[i]) {
      case 'n':
        out.push_back('\n');
        break;
      case 'r':
        out.push_back('\r');
        break;
      case 't':
        out.push_back('\t');
        break;
      case '\\':
        out.push_back('\\');
        break;
      case '0':
        out.push_back('\0');
        break;
      case '\'':
        out.push_back('\'');
        break;
      case '"':
        out.push_back('"');
        break;
      case 'x': {
        if (i + 2 >= s.size()) return std::nullopt;
        int hi = hex_digit(s[i + 1]), lo = hex_digit(s[i + 2]);
        if (hi < 0 || lo < 0) return std::nullopt;
        int v = hi * 16 + lo;
        if (v > 0x7F && !bytes) return std::nullopt;
        out.push_back(static_cast<char>(v));
        i += 2;
        break;
      }
      case 'u': {
        if (bytes || i + 1 >= s.size() || s[i + 1] != '{') return std::nullopt;
        std::uint32_t cp = 0;
        std::size_t j = i + 2, digits = 0;
        for (; j < s.size() && s[j] != '}'; ++j) {
          if (s[j] == '_') continue;
          int d = hex_digit(s[j]);
          if (d < 0 || ++digits > 6) return std::nullopt;
          cp = cp * 16 + static_cast<std::uint32_t>(d);
        }
        if (j >= s.size() || digits == 0 || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
          return std::nullopt;
        append_utf8(out, cp);
        i = j;
        break;
      }
      case '\n':
      case '\r': {
        // Line continuation: the newline and the whitespace that follows are skipped.
        std::size_t j = i;
        while (j + 1 < s.size() &&
               (s[j + 1] == ' ' || s[j + 1] == '\t' || s[j + 1] == '\n' || s[j + 1] == '\r'))
          ++j;
        i = j;
        break;
      }
      default:
        return std::nullopt;
    }
  }
  return out;
}

}  // namespace

std::optional<std::string> decode_string_literal(std::string_view t) {
  bool bytes = false;
  if (!t.empty() && (t[0] == 'b' || t[0] == 'c')) {
    bytes = t[0] == 'b';
    t.remove_prefix(1);
  }
  if (!t.empty() && t[0] == 'r') {
    t.remove_prefix(1);
    std::size_t hashes = 0;
    while (hashes < t.size() && t[hashes] == '#')
      ++hashes;
    if (t.size() < 2 * hashes + 2 || t[hashes] != '"' || t[t.size() - 1 - hashes] != '"')
      return std::nullopt;
    for (std::size_t k = 0; k < hashes; ++k)
      if (t[t.size() - 1 - k] != '#') return std::nullopt;
    return std::string(t.substr(hashes + 1, t.size() - 2 * hashes - 2));
  }
  if (t.size() < 2 || t.front() != '"' || t.back() != '"') return std::nullopt;
  std::string_view body = t.substr(1, t.size() - 2);
  // A trailing backslash escapes the closing quote: `"a\"` is unterminated.
  std::size_t slashes = 0;
  while (slashes < body.size() && body[body.size() - 1 - slashes] == '\\')
    ++slashes;
  if (slashes % 2 == 1) return std::nullopt;
  return unescape(body, bytes);
}

std::size_t string_literal_length(std::string_view t) {
  std::size_t i = 0;
  if (i < t.size() && (t[i] == 'b' || t[i] == 'c')) ++i;
  if (i < t.size() && t[i] == 'r') {
    ++i;
    std::size_t hashes = 0;
    while (i < t.size() && t[i] == '#') {
      ++hashes;
      ++i;
    }
    if (i >= t.size() || t[i] != '"') return 0;
    for (std::size_t j = i + 1; j < t.size(); ++j) {
      if (t[j] != '"') continue;
      std::size_t k = 0;
      while (k < hashes && j + 1 + k < t.size() && t[j + 1 + k] == '#')
        ++k;
      if (k == hashes) return j + 1 + hashes;
    }
    return 0;
  }
  if (i >= t.size() || t[i] != '"') return 0;
  for (std::size_t j = i + 1; j < t.size(); ++j) {
    if (t[j] == '\\') {
      ++j;
      continue;
    }
    if (t[j] == '"') return j + 1;
  }
  return 0;
}

}  // namespace cg::rust
