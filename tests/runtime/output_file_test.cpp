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

}  // namespace
