#pragma once
// Tree-sitter node accessors shared by the analysis walkers.
#include <tree_sitter/api.h>

#include <cstdint>
#include <cstring>
#include <string_view>

namespace cg::analysis {

inline std::string_view kind_of(TSNode n) {
  return ts_node_type(n);
}
inline TSNode field_of(TSNode n, const char* f) {
  return ts_node_child_by_field_name(n, f, static_cast<std::uint32_t>(std::strlen(f)));
}

}  // namespace cg::analysis
