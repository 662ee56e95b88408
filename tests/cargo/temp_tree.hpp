#pragma once
// A temporary directory of crate files for one test, removed at the end.
#include <unistd.h>

#include <cstdlib>
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

// Sets CARGO_HOME for one test (dependency sources are looked up there), restoring it after.
struct CargoHome {
  std::string old;
  bool had = false;
  explicit CargoHome(const std::filesystem::path& dir) {
    if (const char* h = std::getenv("CARGO_HOME")) {
      old = h;
      had = true;
    }
    ::setenv("CARGO_HOME", dir.c_str(), 1);
  }
  CargoHome(const CargoHome&) = delete;
  CargoHome& operator=(const CargoHome&) = delete;
  ~CargoHome() {
    if (had)
      ::setenv("CARGO_HOME", old.c_str(), 1);
    else
      ::unsetenv("CARGO_HOME");
  }
};

}  // namespace cg::test
