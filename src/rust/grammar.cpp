#include "rust/grammar.hpp"

#include <tree_sitter/api.h>

extern "C" const TSLanguage* tree_sitter_rust(void);

namespace cg::rust {

const TSLanguage* rust_language() {
  return tree_sitter_rust();
}

GrammarAbi linked_grammar_abi() {
  return {ts_language_version(tree_sitter_rust()), TREE_SITTER_MIN_COMPATIBLE_LANGUAGE_VERSION,
          TREE_SITTER_LANGUAGE_VERSION};
}

std::optional<std::string> grammar_abi_problem(const GrammarAbi& abi) {
  if (abi.grammar >= abi.runtime_min && abi.grammar <= abi.runtime_max) return std::nullopt;
  return "the tree-sitter Rust grammar has ABI version " + std::to_string(abi.grammar) +
         " but the tree-sitter runtime library loads ABI versions " +
         std::to_string(abi.runtime_min) + " to " + std::to_string(abi.runtime_max) +
         "; install tree-sitter-rust@0.23.3 (ABI 14) with scripts/setup.sh and rebuild";
}

}  // namespace cg::rust
