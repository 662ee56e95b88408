// Output files: a regular file is replaced atomically; a device or FIFO given as the output
// (`-o /dev/null`, a named pipe) is written in place and stays what it was. Renaming a temporary
// over /dev/null turned it into a regular file for every later program on the machine.
#include "util/atomic_file.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <future>
#include <iterator>
#include <string>

namespace {

namespace fs = std::filesystem;

struct TempDir {
  fs::path dir = fs::temp_directory_path() / ("cg-atomic-" + std::to_string(::getpid()));
  TempDir() { fs::create_directories(dir); }
  ~TempDir() { fs::remove_all(dir); }
};

std::future<std::string> drain(const fs::path& fifo) {
  return std::async(std::launch::async, [fifo] {
    std::ifstream in(fifo, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  });
}

TEST(AtomicFile, RegularFileIsReplacedWithNoTemporaryLeft) {
  TempDir t;
  const fs::path out = t.dir / "report.json";
  cg::write_file_atomic(out, "old");
  cg::write_file_atomic(out, "new");
  std::ifstream in(out);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), "new");
  EXPECT_EQ(std::distance(fs::directory_iterator(t.dir), fs::directory_iterator{}), 1);
}

TEST(AtomicFile, FifoIsWrittenInPlaceAndStaysAFifo) {
  TempDir t;
  const fs::path fifo = t.dir / "pipe";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_TRUE(cg::writes_in_place(fifo));
  auto got = drain(fifo);
  cg::write_file_atomic(fifo, "through the pipe");
  EXPECT_EQ(got.get(), "through the pipe");
  EXPECT_TRUE(fs::is_fifo(fs::status(fifo)));
  EXPECT_EQ(std::distance(fs::directory_iterator(t.dir), fs::directory_iterator{}), 1);
}

TEST(AtomicFile, DevNullStaysACharacterDevice) {
  if (!fs::is_character_file(fs::status("/dev/null"))) GTEST_SKIP() << "/dev/null is not a device";
  cg::write_file_atomic("/dev/null", "discarded");
  EXPECT_TRUE(fs::is_character_file(fs::status("/dev/null")));
}

}  // namespace
