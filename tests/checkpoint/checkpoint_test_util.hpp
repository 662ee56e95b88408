#pragma once
// Shared helpers for checkpoint tests: raw header bytes from JSON text, and scratch directories.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <string>

namespace cg::checkpoint::testing {

// 8-byte little-endian length + `json` + `data_bytes` zero bytes, exactly as a file would hold.
inline std::string raw_file(const std::string& json, std::uint64_t data_bytes = 0) {
  std::string out(8, '\0');
  const std::uint64_t n = json.size();
  for (std::size_t i = 0; i < 8; ++i)
    out[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  return out + json + std::string(static_cast<std::size_t>(data_bytes), '\0');
}

// A fresh directory per test, named after it and the process (two checkouts testing at once on one
// machine each get their own).
inline std::filesystem::path scratch_dir() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  auto dir = std::filesystem::path(::testing::TempDir()) /
             ("cg_checkpoint." + std::to_string(::getpid())) /
             (std::string(info->test_suite_name()) + "." + info->name());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

}  // namespace cg::checkpoint::testing
