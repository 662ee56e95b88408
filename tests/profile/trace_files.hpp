#pragma once
// Helpers the profiler tests share: a per-process scratch file, a trace read back as lines, and
// the fields of one record line.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <optional>
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

// The raw JSON text of a top-level scalar field (strings without their quotes); enough for the
// flat records the profiler writes, whose values never contain `,"`.
inline std::optional<std::string> field(const std::string& line, const std::string& name) {
  const std::string key = "\"" + name + "\":";
  auto pos = line.find(key);
  if (pos == std::string::npos) return std::nullopt;
  pos += key.size();
  if (line[pos] == '"') {
    auto close = line.find('"', pos + 1);
    return line.substr(pos + 1, close - pos - 1);
  }
  auto stop = line.find_first_of(",}", pos);
  return line.substr(pos, stop - pos);
}

inline std::uint64_t number(const std::string& line, const std::string& name) {
  auto value = field(line, name);
  EXPECT_TRUE(value.has_value()) << name << " missing in " << line;
  return value ? std::stoull(*value) : 0;
}

inline bool is_kind(const std::string& line, const std::string& kind) {
  return line.rfind("{\"kind\":\"" + kind + "\"", 0) == 0;
}

// The line without `end.clock_error_ns`, which TSC sessions append (the second calibration, its
// value machine-dependent; ProfileClock checks it), so expectations hold on either timer.
inline std::string without_clock_check(std::string line) {
  const std::string key = ",\"clock_error_ns\":";
  const std::size_t at = line.find(key);
  if (at == std::string::npos) return line;
  std::size_t stop = at + key.size();
  while (stop < line.size() && line[stop] >= '0' && line[stop] <= '9')
    ++stop;
  return line.erase(at, stop - at);
}

}  // namespace profile_test
