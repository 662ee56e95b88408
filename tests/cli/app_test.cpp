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

// Every file the analysis read is an input, not only those named by a flag: the crate's sources
// (also one reached through a symlink out of the crate), its manifests and lock file.
TEST(CliOutput, AnOutputOntoAFileTheAnalysisReadIsRefusedAndTheFileKept) {
  const fs::path d = temp_dir("read");
  const fs::path t = d / "t";
  fs::copy(kCrate, t, fs::copy_options::recursive);
  // A module file that lives outside the crate, reached through a symlink.
  fs::create_directories(d / "outside");
  std::ofstream(d / "outside" / "ext.rs") << "pub fn ext() -> usize { 1 }\n";
  fs::create_symlink(d / "outside" / "ext.rs", t / "src" / "ext.rs");
  std::ofstream(t / "src" / "lib.rs", std::ios::app) << "pub mod ext;\n";
  const std::vector<fs::path> read = {t / "src" / "model.rs", t / "src" / "lib.rs",
                                      t / "Cargo.lock", d / "outside" / "ext.rs"};
  std::vector<std::string> before;
  for (const auto& f : read)
    before.push_back(slurp(f));
  const std::string crate = t.string();
  const std::vector<std::vector<std::string>> cases = {
      {"check", crate, "-o", (t / "src" / "model.rs").string()},
      {"view", crate, "-o", (t / "src" / "model.rs").string()},
      {"instrument", crate, "-o", (t / "src" / "model.rs").string()},
      {"summary", crate, "-o", (t / "src" / "model.rs").string()},
      {"check", crate, "--update-baseline", (t / "src" / "lib.rs").string()},
      {"check", crate, "-o", (t / "Cargo.lock").string()},
      {"check", crate, "-o", (d / "outside" / "ext.rs").string()},
      {"check", crate, "-o", (t / "src" / "ext.rs").string()},
  };
  for (const auto& args : cases) {
    CaptureStderr();
    CaptureStdout();
    const int code = cg::cli::run(args);
    GetCapturedStdout();
    const std::string err = GetCapturedStderr();
    EXPECT_EQ(code, 2) << args[0] << " " << args[2] << " " << args[3] << ": " << err;
    EXPECT_NE(err.find("refusing to overwrite an input"), std::string::npos) << err;
  }
  for (std::size_t i = 0; i < read.size(); ++i)
    EXPECT_EQ(slurp(read[i]), before[i]) << read[i] << " was overwritten";
  EXPECT_TRUE(fs::is_symlink(t / "src" / "ext.rs")) << "the symlink was replaced";
  // A file the run did not read is still an ordinary output.
  CaptureStderr();
  CaptureStdout();
  EXPECT_EQ(cg::cli::run({"check", crate, "-o", (d / "model.json").string()}), 0);
  GetCapturedStdout();
  GetCapturedStderr();
  EXPECT_NE(slurp(d / "model.json").find("candle-graph/model/1"), std::string::npos);
  fs::remove_all(d);
}

// What makes a command's output incomplete is said by every command, not only by `check`: a
// module file skipped for one invalid UTF-8 byte loses its parameters from `summary` too.
TEST(CliOutput, SummaryAndQuerySayWhichSourceFileWasSkipped) {
  const fs::path d = temp_dir("skip");
  fs::copy(kCrate, d / "t", fs::copy_options::recursive);
  std::ofstream(d / "t" / "src" / "rotary.rs", std::ios::app) << "// \xff\n";
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"summary", (d / "t").string()},
        std::vector<std::string>{"query", "parameters", "--path", (d / "t").string()},
        std::vector<std::string>{"view", (d / "t").string(), "-o", (d / "m.html").string()}}) {
    CaptureStderr();
    CaptureStdout();
    EXPECT_EQ(cg::cli::run(args), 0) << args[0];
    GetCapturedStdout();
    const std::string err = GetCapturedStderr();
    EXPECT_NE(err.find("rotary.rs is not valid UTF-8"), std::string::npos)
        << args[0] << ": " << err;
    EXPECT_NE(err.find("warning: "), std::string::npos) << err;
  }
  fs::remove_all(d);
}

// A module file reached through a symlink out of the crate cannot be patched by a diff applied in
// the crate: instrument says so and writes no diff, rather than one `git apply` refuses whole.
TEST(CliOutput, InstrumentRefusesAModuleFileOutsideTheCrate) {
  const fs::path d = temp_dir("outside");
  fs::copy(kCrate, d / "t", fs::copy_options::recursive);
  fs::create_directories(d / "outside");
  fs::rename(d / "t" / "src" / "model.rs", d / "outside" / "model.rs");
  fs::create_symlink(d / "outside" / "model.rs", d / "t" / "src" / "model.rs");
  CaptureStderr();
  CaptureStdout();
  const int code =
      cg::cli::run({"instrument", (d / "t").string(), "-o", (d / "profile.diff").string()});
  GetCapturedStdout();
  const std::string err = GetCapturedStderr();
  EXPECT_EQ(code, 2) << err;
  EXPECT_NE(err.find("outside/model.rs: a module file of the crate that lies outside it"),
            std::string::npos)
      << err;
  EXPECT_FALSE(fs::exists(d / "profile.diff"));
  fs::remove_all(d);
}

TEST(CliOutput, AMistypedCommandGetsTheClosestOne) {
  for (const auto& [typed, meant] : std::vector<std::pair<std::string, std::string>>{
           {"sumary", "summary"}, {"veiw", "view"}, {"chek", "check"}}) {
    CaptureStderr();
    CaptureStdout();
    EXPECT_EQ(cg::cli::run({typed, kCrate}), 2) << typed;
    GetCapturedStdout();
    const std::string err = GetCapturedStderr();
    EXPECT_NE(err.find("did you mean `" + meant + "`?"), std::string::npos) << err;
  }
  CaptureStderr();
  EXPECT_EQ(cg::cli::run({"frobnicate"}), 2);
  const std::string err = GetCapturedStderr();
  EXPECT_EQ(err.find("did you mean"), std::string::npos) << "nothing is close: " << err;
  EXPECT_NE(err.find("commands: "), std::string::npos) << err;
}

TEST(CliOutput, AMistypedRootGetsTheClosestModel) {
  CaptureStderr();
  CaptureStdout();
  EXPECT_EQ(cg::cli::run({"summary", kCrate, "--root", "model::TinyLLama"}), 2);
  GetCapturedStdout();
  std::string err = GetCapturedStderr();
  EXPECT_NE(err.find("did you mean `model::TinyLlama`?"), std::string::npos) << err;
  CaptureStderr();
  CaptureStdout();
  EXPECT_EQ(cg::cli::run({"summary", kCrate, "--root", "Tinyllama"}), 2);
  GetCapturedStdout();
  err = GetCapturedStderr();
  EXPECT_NE(err.find("did you mean `model::TinyLlama`?"), std::string::npos) << err;
}

TEST(CliOutput, ACrateGivenToQueryAsAWordIsToldAboutPath) {
  CaptureStderr();
  CaptureStdout();
  EXPECT_EQ(cg::cli::run({"query", "parameters", "self_attn", kCrate}), 2);
  GetCapturedStdout();
  const std::string err = GetCapturedStderr();
  EXPECT_NE(err.find("looks like a crate: query takes it as --path " + kCrate), std::string::npos)
      << err;
}

TEST(CliOutput, HelpThatCannotBeWrittenIsAnError) {
  EXPECT_EQ(run_with_full_stdout({"--help"}), 2);
  EXPECT_EQ(run_with_full_stdout({"summary", "--help"}), 2);
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

  // Every command that takes a trace says it and fails the same way: view still writes the page,
  // check its IR, summary its table (without the time columns the user asked for).
  const std::string trace = (d / "other.jsonl").string();
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"view", kCrate, "--runtime-trace", trace, "-o",
                                 (d / "model.html").string()},
        std::vector<std::string>{"check", kCrate, "--runtime-trace", trace, "-o",
                                 (d / "model.json").string()},
        std::vector<std::string>{"summary", kCrate, "--runtime-trace", trace}}) {
    CaptureStderr();
    CaptureStdout();
    const int rc = cg::cli::run(args);
    GetCapturedStdout();
    err = GetCapturedStderr();
    EXPECT_EQ(rc, 2) << args[0] << ": " << err;
    EXPECT_NE(err.find("other.jsonl was not merged"), std::string::npos) << err;
    EXPECT_NE(err.find("no runtime trace was merged"), std::string::npos) << err;
  }
  EXPECT_TRUE(fs::exists(d / "model.html"));
  EXPECT_TRUE(fs::exists(d / "model.json"));
  fs::remove_all(d);
}

}  // namespace
