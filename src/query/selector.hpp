#pragma once
// Selecting records for queries. The reference matched by substring only, so an exact id such as
// `…:1` also matched `…:10`; here an exact stable id always wins, then an exact name (qualified
// name, key, …), and only then a case-insensitive substring.
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace cg::query {

struct Selectable {
  std::string id;
  std::vector<std::string> names;   // exact-match names: qualified name, key, "root:key", …
  std::vector<std::string> fields;  // substring-searchable text (ids and names are included)
};

enum class MatchKind { all, exact_id, exact_name, substring, none };

struct Selection {
  MatchKind kind = MatchKind::none;
  std::vector<std::size_t> indices;  // into the input, in input order
};

// An empty selector selects everything.
Selection select(const std::vector<Selectable>& items, std::string_view selector);

// Ordering with numeric runs compared by value (`layers.2` < `layers.10`, `op:9` < `op:10`),
// ties broken bytewise so the order is total and deterministic.
bool natural_less(std::string_view a, std::string_view b);

struct Page {
  std::size_t offset = 0;  // clamped to total
  std::size_t returned = 0;
  bool truncated = false;
};
// limit 0 is a usage error reported by the caller; here it is treated as "none".
Page paginate(std::size_t total, std::size_t offset, std::size_t limit);

}  // namespace cg::query
