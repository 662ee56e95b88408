#pragma once
// Helpers for the runtime tests: fixture paths and small traces written to a temp folder.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "runtime/aggregate.hpp"
#include "runtime/merge_plan.hpp"
#include "runtime/reader.hpp"

namespace cg::runtime::testing {

inline std::filesystem::path fixture(const std::string& name) {
  return std::filesystem::path(CG_SOURCE_DIR) / "tests/runtime/fixtures" / name;
}

inline std::filesystem::path temp_dir() {
  auto dir =
      std::filesystem::temp_directory_path() / ("cg-runtime-test-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return dir;
}

inline std::filesystem::path write_temp(const std::string& name, const std::string& text) {
  auto path = temp_dir() / name;
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

inline const char* kMetaV3 =
    R"({"kind":"meta","schema":"candle-graph/runtime/3","entrypoint":"forward","profile":"test","phase":"infer"})"
    "\n";

inline std::string op_line(const std::string& id, const std::string& sid, std::uint64_t ns) {
  return R"({"kind":"operation","event_id":")" + id + R"(","op":"matmul","static_id":")" + sid +
         R"(","inputs":[],"step":0,"duration_ns":)" + std::to_string(ns) + "}\n";
}

using Loaded = LoadedTrace;

// As the commands read a trace (read_traces: a second read when the first one asks for it).
inline Loaded load(const std::filesystem::path& path, const ReadOptions& options = {}) {
  return std::move(read_traces({path}, options).front());
}

}  // namespace cg::runtime::testing
