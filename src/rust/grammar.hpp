#pragma once
// The tree-sitter Rust grammar linked into this program, and the start-up check that Debian's
// tree-sitter runtime can load it (runtime 0.20.7 loads ABI 13-14; tree-sitter-rust 0.24+ is ABI
// 15).
#include <cstdint>
#include <optional>
#include <string>

struct TSLanguage;

namespace cg::rust {

const TSLanguage* rust_language();

struct GrammarAbi {
  std::uint32_t grammar;      // ABI the grammar was generated for
  std::uint32_t runtime_min;  // oldest ABI the linked runtime loads
  std::uint32_t runtime_max;  // newest ABI the linked runtime loads
};

GrammarAbi linked_grammar_abi();

// A message naming both versions when the grammar cannot be loaded, nothing when it can.
std::optional<std::string> grammar_abi_problem(const GrammarAbi& abi);

}  // namespace cg::rust
