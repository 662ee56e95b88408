// A temporary path of this test process's own. ctest runs every test case as its own process, in
// parallel: two cases writing one fixed name race (one truncates the file the other is reading),
// so every scratch file or folder a test writes is named with the process id (before the first
// dot, so "trace.tracing.json" keeps its extensions).
#pragma once

#include <unistd.h>

#include <filesystem>
#include <string>

namespace cg_test {

inline std::filesystem::path scratch_path(const std::string& name) {
  auto dot = name.find('.');
  if (dot == std::string::npos) dot = name.size();
  std::string own = name;
  own.insert(dot, "-" + std::to_string(::getpid()));
  return std::filesystem::temp_directory_path() / own;
}

}  // namespace cg_test
