#pragma once
// A temporary directory of crate files for one test, removed at the end.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace cg::test {

struct TempTree {
  std::filesystem::path root;
  // `prefix` names the test program's area, `name` the case: no two tests share a directory.
  TempTree(const std::string& prefix, const std::string& name) {
    root = std::filesystem::temp_directory_path() /
           (prefix + "-" + name + "-" + std::to_string(::getpid()));
    std::filesystem::remove_all(root);
    std::filesystem::create_directories(root);
  }
  TempTree(const TempTree&) = delete;
  TempTree& operator=(const TempTree&) = delete;
  ~TempTree() { std::filesystem::remove_all(root); }
  void write(const std::filesystem::path& rel, const std::string& text) const {
    std::filesystem::create_directories((root / rel).parent_path());
    std::ofstream(root / rel) << text;
  }
};

}  // namespace cg::test
