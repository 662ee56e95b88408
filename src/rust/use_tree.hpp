#pragma once
// `use` trees flattened to leaves: `a::{b, c::{self as d, *}}` → a::b (b), a::c (d), a::c::*
// (glob).
#include <string>
#include <string_view>
#include <vector>

namespace cg::rust {

struct UseLeaf {
  std::vector<std::string> path;  // target segments; "" first for a leading `::`
  std::string name;               // bound name (alias or last segment); empty for globs
  bool glob = false;
};

// `text` is the use argument as written (comments allowed). Malformed input yields what parsed.
std::vector<UseLeaf> parse_use_tree(std::string_view text);

}  // namespace cg::rust
