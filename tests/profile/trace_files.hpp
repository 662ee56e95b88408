#pragma once
// Helpers the profiler tests share: a per-process scratch file and a trace read back as lines.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace profile_test {

// `name` in a per-process scratch directory `<tmp>/<dir>-<pid>` (created).
inline std::filesystem::path scratch_file(const std::string& dir, const std::string& name) {
  std::filesystem::path d =
      std::filesystem::temp_directory_path() / (dir + "-" + std::to_string(::getpid()));
  std::filesystem::create_directories(d);
  return d / name;
}

inline std::vector<std::string> read_lines(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);)
    lines.push_back(line);
  return lines;
}

}  // namespace profile_test
