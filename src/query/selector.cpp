#include "query/selector.hpp"

#include <algorithm>
#include <cctype>

namespace cg::query {

namespace {

char lower(char c) {
  return static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
}

bool icontains(std::string_view hay, std::string_view needle) {
  if (needle.empty()) return true;
  auto it = std::search(hay.begin(), hay.end(), needle.begin(), needle.end(),
                        [](char a, char b) { return lower(a) == lower(b); });
  return it != hay.end();
}

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

}  // namespace

Selection select(const std::vector<Selectable>& items, std::string_view selector) {
  Selection s;
  if (selector.empty()) {
    s.kind = MatchKind::all;
    for (std::size_t i = 0; i < items.size(); ++i)
      s.indices.push_back(i);
    return s;
  }
  for (std::size_t i = 0; i < items.size(); ++i)
    if (items[i].id == selector) s.indices.push_back(i);
  if (!s.indices.empty()) {
    s.kind = MatchKind::exact_id;
    return s;
  }
  for (std::size_t i = 0; i < items.size(); ++i) {
    const auto& names = items[i].names;
    if (std::find(names.begin(), names.end(), selector) != names.end()) s.indices.push_back(i);
  }
  if (!s.indices.empty()) {
    s.kind = MatchKind::exact_name;
    return s;
  }
  for (std::size_t i = 0; i < items.size(); ++i) {
    const auto& it = items[i];
    bool hit = icontains(it.id, selector);
    for (const auto& n : it.names)
      hit = hit || icontains(n, selector);
    for (const auto& f : it.fields)
      hit = hit || icontains(f, selector);
    if (hit) s.indices.push_back(i);
  }
  s.kind = s.indices.empty() ? MatchKind::none : MatchKind::substring;
  return s;
}

bool natural_less(std::string_view a, std::string_view b) {
  std::size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (is_digit(a[i]) && is_digit(b[j])) {
      std::size_t i0 = i, j0 = j;
      while (i0 < a.size() && a[i0] == '0')
        ++i0;
      while (j0 < b.size() && b[j0] == '0')
        ++j0;
      std::size_t i1 = i0, j1 = j0;
      while (i1 < a.size() && is_digit(a[i1]))
        ++i1;
      while (j1 < b.size() && is_digit(b[j1]))
        ++j1;
      std::size_t la = i1 - i0, lb = j1 - j0;
      if (la != lb) return la < lb;
      int c = a.substr(i0, la).compare(b.substr(j0, lb));
      if (c != 0) return c < 0;
      i = i1;
      j = j1;
      continue;
    }
    if (a[i] != b[j]) return static_cast<unsigned char>(a[i]) < static_cast<unsigned char>(b[j]);
    ++i;
    ++j;
  }
  if ((a.size() - i) != (b.size() - j)) return (a.size() - i) < (b.size() - j);
  return a < b;  // equal under numeric comparison ("01" vs "1"): bytewise keeps it total
}

Page paginate(std::size_t total, std::size_t offset, std::size_t limit) {
  Page p;
  p.offset = std::min(offset, total);
  p.returned = std::min(limit, total - p.offset);
  p.truncated = p.offset + p.returned < total;
  return p;
}

}  // namespace cg::query
