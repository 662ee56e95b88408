// The command line as a user drives it (cg::cli::run in-process): outputs that must not be lost
// silently, inputs that must not be overwritten, and bad values that must be refused.
#include "cli/app.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;
using testing::internal::CaptureStderr;
using testing::internal::CaptureStdout;
using testing::internal::GetCapturedStderr;
using testing::internal::GetCapturedStdout;

const std::string kCrate = std::string(CG_SOURCE_DIR) + "/examples/tiny-llama";

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// A fresh directory per test.
fs::path temp_dir(const std::string& name) {
  fs::path d =
      fs::temp_directory_path() / ("cg_app_test_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

// Runs with stdout on /dev/full (every write to it fails), then puts stdout back.
int run_with_full_stdout(const std::vector<std::string>& args) {
  std::fflush(stdout);
  std::cout.flush();
  const int saved = ::dup(1);
  const int full = ::open("/dev/full", O_WRONLY);
  EXPECT_GE(full, 0);
  ::dup2(full, 1);
  ::close(full);
  CaptureStderr();
  const int code = cg::cli::run(args);
  std::string err = GetCapturedStderr();
  std::fflush(stdout);
  std::clearerr(stdout);
  std::cout.clear();
  ::dup2(saved, 1);
  ::close(saved);
  EXPECT_NE(err.find("standard output"), std::string::npos) << err;
  return code;
}

TEST(CliOutput, AFailedWriteToStdoutIsAnErrorNotASilentLoss) {
  EXPECT_EQ(run_with_full_stdout({"check", kCrate}), 2) << "check > /dev/full";
  EXPECT_EQ(run_with_full_stdout({"summary", kCrate}), 2) << "summary > /dev/full";
  EXPECT_EQ(run_with_full_stdout({"query", "summary", "--path", kCrate}), 2) << "query > /dev/full";
}

TEST(CliOutput, AnOutputThatIsAnInputIsRefusedAndTheInputKept) {
  const fs::path d = temp_dir("same");
  fs::copy_file(kCrate + "/config.json", d / "config.json");
  const std::string config = slurp(d / "config.json");
  // A safetensors file with no tensors: 8-byte little-endian header length, then the header.
  const std::string header = R"({"__metadata__":{}})";
  std::string st(8, '\0');
  st[0] = static_cast<char>(header.size());
  st += header;
  std::ofstream(d / "m.safetensors", std::ios::binary) << st;
  fs::create_symlink(d / "m.safetensors", d / "link.safetensors");
  const std::string trace =
      R"({"kind":"meta","schema":"candle-graph/runtime/3","entrypoint":"e","profile":"p","phase":"train","analysis_id":"analysis:x"})"
      "\n";
  std::ofstream(d / "run.jsonl") << trace;

  struct Case {
    std::vector<std::string> args;
    fs::path input;
    std::string content;
  };
  const std::string ck = (d / "m.safetensors").string();
  const std::vector<Case> cases = {
      {{"verify", kCrate, "--checkpoint", ck, "-o", ck}, d / "m.safetensors", st},
      // Another spelling and a symlink name the same file.
      {{"verify", kCrate, "--checkpoint", ck, "-o", (d / "." / "m.safetensors").string()},
       d / "m.safetensors",
       st},
      {{"verify", kCrate, "--checkpoint", ck, "-o", (d / "link.safetensors").string()},
       d / "m.safetensors",
       st},
      // A checkpoint directory: its shards are inputs too.
      {{"verify", kCrate, "--checkpoint", d.string(), "-o", ck}, d / "m.safetensors", st},
      {{"check", kCrate, "--config", (d / "config.json").string(), "-o",
        (d / "config.json").string()},
       d / "config.json",
       config},
      {{"summary", kCrate, "--config", (d / "config.json").string(), "-o",
        (d / "config.json").string()},
       d / "config.json",
       config},
      {{"profile", kCrate, "--runtime-trace", (d / "run.jsonl").string(), "-o",
        (d / "run.jsonl").string()},
       d / "run.jsonl",
       trace},
      {{"export", "--chrome", (d / "run.jsonl").string(), "--runtime-trace",
        (d / "run.jsonl").string()},
       d / "run.jsonl",
       trace},
      {{"audit", d.string(), kCrate, "--config", (d / "summary.txt").string()},
       d / "summary.txt",
       config},
  };
  fs::copy_file(d / "config.json", d / "summary.txt");
  for (const auto& c : cases) {
    CaptureStderr();
    CaptureStdout();
    const int code = cg::cli::run(c.args);
    GetCapturedStdout();
    const std::string err = GetCapturedStderr();
    EXPECT_EQ(code, 2) << c.args[0] << " " << c.args.back() << ": " << err;
    EXPECT_NE(err.find("refusing to overwrite an input"), std::string::npos) << err;
    EXPECT_EQ(slurp(c.input), c.content) << c.args[0] << " replaced its input " << c.input;
  }
  fs::remove_all(d);
}

TEST(CliOutput, ANegativeOffsetIsAUsageError) {
  CaptureStderr();
  CaptureStdout();
  const int code = cg::cli::run({"query", "parameters", "--path", kCrate, "--offset", "-1"});
  GetCapturedStdout();
  const std::string err = GetCapturedStderr();
  EXPECT_EQ(code, 2) << err;
  EXPECT_NE(err.find("--offset"), std::string::npos) << err;
}

TEST(CliOutput, ProfileWithNoTraceMergedFailsAndSaysWhy) {
  const fs::path d = temp_dir("profile");
  std::ofstream(d / "other.jsonl")
      << R"({"kind":"meta","schema":"candle-graph/runtime/3","entrypoint":"e","profile":"p","phase":"train","analysis_id":"analysis:another-build"})"
      << "\n";
  CaptureStderr();
  CaptureStdout();
  const int code =
      cg::cli::run({"profile", kCrate, "--runtime-trace", (d / "other.jsonl").string()});
  GetCapturedStdout();
  std::string err = GetCapturedStderr();
  EXPECT_EQ(code, 2) << err;
  EXPECT_NE(err.find("no runtime trace was merged"), std::string::npos) << err;

  // view says it too (and still writes the page).
  CaptureStderr();
  const int view = cg::cli::run({"view", kCrate, "--runtime-trace", (d / "other.jsonl").string(),
                                 "-o", (d / "model.html").string()});
  err = GetCapturedStderr();
  EXPECT_EQ(view, 0) << err;
  EXPECT_NE(err.find("other.jsonl was not merged"), std::string::npos) << err;
  fs::remove_all(d);
}

}  // namespace
