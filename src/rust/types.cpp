#include "rust/types.hpp"

#include <algorithm>
#include <cctype>

namespace cg::rust {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front())))
    s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back())))
    s.remove_suffix(1);
  return s;
}

Container wrapper(std::string_view last_segment) {
  if (last_segment == "Option") return Container::Option;
  if (last_segment == "Vec") return Container::Vec;
  if (last_segment == "Box") return Container::Box;
  if (last_segment == "Arc") return Container::Arc;
  if (last_segment == "Rc") return Container::Rc;
  return Container::None;
}

}  // namespace

PeeledType peel_type(std::string_view text) {
  PeeledType out;
  std::string_view s = trim(text);
  for (int guard = 0; guard < 32; ++guard) {
    if (!s.empty() && s.front() == '&') {
      s = trim(s.substr(1));
      Container c = Container::Ref;
      if (!s.empty() && s.front() == '\'') {  // lifetime
        std::size_t k = 1;
        while (k < s.size() && (std::isalnum(static_cast<unsigned char>(s[k])) || s[k] == '_'))
          ++k;
        s = trim(s.substr(k));
      }
      if (s.substr(0, 4) == "mut ") {
        s = trim(s.substr(4));
        c = Container::RefMut;
      }
      if (out.container == Container::None) out.container = c;
      continue;
    }
    if (s.substr(0, 4) == "dyn ") s = trim(s.substr(4));
    if (s.substr(0, 5) == "impl ") s = trim(s.substr(5));
    // `dyn Trait + Send + '_`: the first bound names the type.
    if (auto plus = s.find('+'); plus != std::string_view::npos && s.find('<') > plus)
      s = trim(s.substr(0, plus));
    auto lt = s.find('<');
    std::string_view path = trim(lt == std::string_view::npos ? s : s.substr(0, lt));
    auto colon = path.rfind("::");
    std::string_view last = colon == std::string_view::npos ? path : path.substr(colon + 2);
    Container c = wrapper(last);
    if (c != Container::None && lt != std::string_view::npos && s.back() == '>') {
      // The first generic argument, up to a top-level comma.
      std::string_view inner = s.substr(lt + 1, s.size() - lt - 2);
      int depth = 0;
      std::size_t end = inner.size();
      for (std::size_t i = 0; i < inner.size(); ++i) {
        if (inner[i] == '<' || inner[i] == '(' || inner[i] == '[') ++depth;
        if (inner[i] == '>' || inner[i] == ')' || inner[i] == ']') --depth;
        if (inner[i] == ',' && depth == 0) {
          end = i;
          break;
        }
      }
      if (out.container == Container::None) out.container = c;
      s = trim(inner.substr(0, end));
      continue;
    }
    out.base = std::string(path);
    out.base.erase(
        std::remove_if(out.base.begin(), out.base.end(),
                       [](char ch) { return std::isspace(static_cast<unsigned char>(ch)); }),
        out.base.end());
    break;
  }
  return out;
}

}  // namespace cg::rust
