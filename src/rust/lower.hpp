#pragma once
// For code that still holds tree-sitter nodes while the analysis moves to lowered bodies
// (issue #19): the TSNode symbolic evaluator's adapter, removed together with it. Everything
// else asks Crate::lowered.
#include <tree_sitter/api.h>

#include <string_view>

#include "rust/body.hpp"

namespace cg::rust {

// `expr` (a node of a tree over `file_text`) lowered on its own, as the body of a function would
// lower it (no crate: `#[cfg]`s read under an empty cfg set). Body::file is 0.
Body lower_expression(TSNode expr, std::string_view file_text);

// The syntax node under `root` that lowered node `id` came from (same span and kind); the
// smallest node covering its span when none matches, null for kNone.
TSNode syntax_node(TSNode root, const Body& body, NodeId id);

}  // namespace cg::rust
