// Reader bound of the model IR: a file over 1 GiB is refused up front with an error naming it,
// without reading it (a sparse file of that size costs nothing to make and must cost nothing to
// refuse); a pipe-like over-long input is still caught while reading.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "ir/model.hpp"
#include "util/atomic_file.hpp"
#include "util/error.hpp"

using ::testing::HasSubstr;

namespace {

namespace fs = std::filesystem;

TEST(IrBounds, ModelIrOver1GiBIsRefusedBeforeReading) {
  const fs::path path =
      fs::temp_directory_path() / ("cg-ir-bounds-" + std::to_string(::getpid()) + ".json");
  { std::ofstream(path, std::ios::binary) << "{"; }
  fs::resize_file(path, (std::uintmax_t{1} << 30) + 1);
  try {
    (void)cg::ir::read_model_ir_file(path.string());
    FAIL() << "a 1 GiB + 1 byte IR was accepted";
  } catch (const cg::InputError& e) {
    EXPECT_THAT(e.what(), HasSubstr(path.filename().string()));
    EXPECT_THAT(e.what(), HasSubstr("limit"));
  }
  fs::remove(path);
}

TEST(IrBounds, ReadFileLimitAppliesToExactlyOneByteOver) {
  const fs::path path =
      fs::temp_directory_path() / ("cg-read-bounds-" + std::to_string(::getpid()) + ".txt");
  { std::ofstream(path, std::ios::binary) << std::string(100, 'x'); }
  EXPECT_EQ(cg::read_file(path, 100).size(), 100u);
  EXPECT_THROW((void)cg::read_file(path, 99), cg::InputError);
  fs::remove(path);
}

}  // namespace
