#include "rust/parse.hpp"

#include <tree_sitter/api.h>

#include <stdexcept>
#include <utility>

#include "rust/grammar.hpp"

namespace cg::rust {

namespace {

// Walks the tree with a cursor (no recursion: generated files nest deeply) and records error and
// missing nodes. Subtrees without errors are skipped, so clean files cost one root check.
void collect_problems(TSNode root, std::vector<SyntaxProblem>& out, std::size_t& count) {
  if (!ts_node_has_error(root)) return;
  TSTreeCursor cursor = ts_tree_cursor_new(root);
  for (;;) {
    TSNode node = ts_tree_cursor_current_node(&cursor);
    bool descend = ts_node_has_error(node);
    // Runtime 0.20.7 has no ts_node_is_error; error nodes carry the builtin error symbol.
    if (ts_node_symbol(node) == static_cast<TSSymbol>(-1) || ts_node_is_missing(node)) {
      ++count;
      if (out.size() < ParsedFile::kMaxProblems) {
        TSPoint p = ts_node_start_point(node);
        std::string what = ts_node_is_missing(node)
                               ? std::string("missing `") + ts_node_type(node) + "`"
                               : std::string("syntax error");
        out.push_back({p.row + 1, p.column + 1, std::move(what)});
      }
      descend = false;
    }
    if (descend && ts_tree_cursor_goto_first_child(&cursor)) continue;
    while (!ts_tree_cursor_goto_next_sibling(&cursor)) {
      if (!ts_tree_cursor_goto_parent(&cursor)) {
        ts_tree_cursor_delete(&cursor);
        return;
      }
    }
  }
}

}  // namespace

ParsedFile ParsedFile::parse(std::string rel_path, std::string text) {
  ParsedFile f;
  f.path_ = std::move(rel_path);
  f.text_ = std::move(text);
  TSParser* parser = ts_parser_new();
  if (!ts_parser_set_language(parser, rust_language())) {
    ts_parser_delete(parser);
    throw std::runtime_error(
        grammar_abi_problem(linked_grammar_abi()).value_or("grammar load failed"));
  }
  f.tree_ = ts_parser_parse_string(parser, nullptr, f.text_.data(),
                                   static_cast<std::uint32_t>(f.text_.size()));
  ts_parser_delete(parser);
  if (f.tree_ != nullptr)
    collect_problems(ts_tree_root_node(f.tree_), f.problems_, f.problem_count_);
  return f;
}

ParsedFile::ParsedFile(ParsedFile&& o) noexcept
    : path_(std::move(o.path_)),
      text_(std::move(o.text_)),
      tree_(std::exchange(o.tree_, nullptr)),
      problems_(std::move(o.problems_)),
      problem_count_(o.problem_count_) {}

ParsedFile& ParsedFile::operator=(ParsedFile&& o) noexcept {
  if (this != &o) {
    if (tree_ != nullptr) ts_tree_delete(tree_);
    path_ = std::move(o.path_);
    text_ = std::move(o.text_);
    tree_ = std::exchange(o.tree_, nullptr);
    problems_ = std::move(o.problems_);
    problem_count_ = o.problem_count_;
  }
  return *this;
}

ParsedFile::~ParsedFile() {
  if (tree_ != nullptr) ts_tree_delete(tree_);
}

}  // namespace cg::rust
