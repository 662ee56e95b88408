#pragma once
// One parsed Rust source file. Owns the tree-sitter tree and the text it points into.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

struct TSTree;

namespace cg::rust {

struct SyntaxProblem {
  std::uint32_t line;    // 1-based
  std::uint32_t column;  // 1-based, in bytes
  std::string what;      // "syntax error" or "missing `;`"
};

class ParsedFile {
 public:
  // `rel_path` is the crate-relative path used in every diagnostic.
  static ParsedFile parse(std::string rel_path, std::string text);

  ParsedFile(ParsedFile&&) noexcept;
  ParsedFile& operator=(ParsedFile&&) noexcept;
  ~ParsedFile();

  const std::string& path() const { return path_; }
  const std::string& text() const { return text_; }
  const TSTree* tree() const { return tree_; }
  // Error and missing nodes, in source order (at most `kMaxProblems`; the count is exact).
  const std::vector<SyntaxProblem>& problems() const { return problems_; }
  std::size_t problem_count() const { return problem_count_; }
  bool ok() const { return problem_count_ == 0; }

  static constexpr std::size_t kMaxProblems = 64;

 private:
  ParsedFile() = default;
  std::string path_;
  std::string text_;
  TSTree* tree_ = nullptr;
  std::vector<SyntaxProblem> problems_;
  std::size_t problem_count_ = 0;
};

}  // namespace cg::rust
