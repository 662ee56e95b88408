// The streaming output (Chrome export and other large writes): a FIFO or device given as the
// output is written in place and stays what it was, never renamed over.
#include "runtime/output_file.hpp"

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

TEST(OutputFile, StreamingOutputToAFifoStaysAFifo) {
  const fs::path dir = fs::temp_directory_path() / ("cg-outfile-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path fifo = dir / "pipe";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto got = std::async(std::launch::async, [fifo] {
    std::ifstream in(fifo, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  });
  {
    cg::runtime::OutputFile out(fifo);
    out.write("{\"traceEvents\":[");
    out.write("]}");
    out.commit();
  }
  EXPECT_EQ(got.get(), "{\"traceEvents\":[]}");
  EXPECT_TRUE(fs::is_fifo(fs::status(fifo)));
  fs::remove_all(dir);
}

// The streamed writer shares the atomic writer's temporary: never a planted symlink, and an
// existing output keeps its permissions.
TEST(OutputFile, PlantedSymlinkIsNotFollowedAndModeIsKept) {
  const fs::path dir = fs::temp_directory_path() / ("cg-outfile2-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path out = dir / "trace.json";
  const fs::path victim = dir / "victim";
  { std::ofstream(victim) << "precious"; }
  { std::ofstream(out) << "old"; }
  ASSERT_EQ(::chmod(out.c_str(), 0600), 0);
  fs::create_symlink(victim, dir / ("trace.json.tmp." + std::to_string(::getpid())));
  {
    cg::runtime::OutputFile o(out);
    o.write("new");
    o.commit();
  }
  std::ifstream v(victim), n(out);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(v), {}), "precious");
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(n), {}), "new");
  struct stat st {};
  ASSERT_EQ(::stat(out.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  fs::remove_all(dir);
}

}  // namespace
