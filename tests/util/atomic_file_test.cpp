// Output files: a regular file is replaced atomically; a device or FIFO given as the output
// (`-o /dev/null`, a named pipe) is written in place and stays what it was. Renaming a temporary
// over /dev/null turned it into a regular file for every later program on the machine.
#include "util/atomic_file.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <future>
#include <iterator>
#include <string>
#include <vector>

#include "util/error.hpp"

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

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

mode_t mode_of(const fs::path& p) {
  struct stat st {};
  EXPECT_EQ(::stat(p.c_str(), &st), 0) << p;
  return st.st_mode & 07777;
}

std::size_t entries(const fs::path& dir) {
  return static_cast<std::size_t>(
      std::distance(fs::directory_iterator(dir), fs::directory_iterator{}));
}

// A symlink planted under the temporary name the writer used to pick (`<out>.tmp.<pid>`) made it
// write through the link into another file. The temporary is now a fresh O_EXCL|O_NOFOLLOW name.
TEST(AtomicFile, PlantedSymlinkAtTheTemporaryNameIsNotFollowed) {
  TempDir t;
  const fs::path out = t.dir / "report.json";
  const fs::path victim = t.dir / "victim.txt";
  cg::write_file_atomic(victim, "precious");
  fs::create_symlink(victim, t.dir / ("report.json.tmp." + std::to_string(::getpid())));
  cg::write_file_atomic(out, "report");
  EXPECT_EQ(slurp(victim), "precious");
  EXPECT_EQ(slurp(out), "report");
  EXPECT_TRUE(fs::is_symlink(
      fs::symlink_status(t.dir / ("report.json.tmp." + std::to_string(::getpid())))));
  EXPECT_EQ(entries(t.dir), 3u);  // victim, the planted link, the report: no temporary left
}

TEST(AtomicFile, ReplacingKeepsAnExistingFilesPermissions) {
  TempDir t;
  const fs::path out = t.dir / "secret.json";
  cg::write_file_atomic(out, "old");
  ASSERT_EQ(::chmod(out.c_str(), 0600), 0);
  cg::write_file_atomic(out, "new");
  EXPECT_EQ(mode_of(out), 0600u);
  EXPECT_EQ(slurp(out), "new");
}

TEST(AtomicFile, NewFileGetsTheUmasksPermissions) {
  TempDir t;
  const mode_t old = ::umask(027);
  cg::write_file_atomic(t.dir / "a.json", "x");
  ::umask(old);
  EXPECT_EQ(mode_of(t.dir / "a.json"), 0640u);
}

// The audit bundle is all or nothing: a write that fails part-way (here a file-size limit, as a
// full disk would) leaves the old bundle exactly as it was. Written file by file it was mixed.
TEST(AtomicDirectory, FailedFileLeavesTheOldBundleWhole) {
  TempDir t;
  const fs::path dir = t.dir / "out";
  {
    cg::AtomicDirectory b(dir);
    b.add("summary.txt", "old summary");
    b.add("model.json", "old model");
    b.commit();
  }
  EXPECT_EQ(entries(dir), 2u);
  ::signal(SIGXFSZ, SIG_IGN);
  struct rlimit saved {};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &saved), 0);
  struct rlimit small = saved;
  small.rlim_cur = 1 << 16;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  std::string error;
  try {
    cg::AtomicDirectory b(dir);
    b.add("summary.txt", "new summary");
    b.add("model.json", std::string(1 << 20, 'x'));  // fails: File too large
    b.commit();
  } catch (const cg::InputError& e) {
    error = e.what();
  }
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &saved), 0);
  EXPECT_NE(error.find("model.json"), std::string::npos) << error;
  EXPECT_EQ(slurp(dir / "summary.txt"), "old summary");
  EXPECT_EQ(slurp(dir / "model.json"), "old model");
  EXPECT_EQ(entries(dir), 2u) << "no staging directory left behind";
  EXPECT_EQ(entries(t.dir), 1u);
}

TEST(AtomicDirectory, CommitReplacesEveryFileAndKeepsOthers) {
  TempDir t;
  const fs::path dir = t.dir / "out";
  fs::create_directories(dir);
  cg::write_file_atomic(dir / "notes.md", "mine");
  cg::write_file_atomic(dir / "summary.txt", "old");
  ASSERT_EQ(::chmod((dir / "summary.txt").c_str(), 0600), 0);
  cg::AtomicDirectory b(dir);
  b.add("summary.txt", "new");
  b.add("model.html", "<html>");
  EXPECT_EQ(slurp(dir / "summary.txt"), "old") << "nothing is visible before commit";
  EXPECT_FALSE(fs::exists(dir / "model.html"));
  b.commit();
  EXPECT_EQ(slurp(dir / "summary.txt"), "new");
  EXPECT_EQ(mode_of(dir / "summary.txt"), 0600u);
  EXPECT_EQ(slurp(dir / "model.html"), "<html>");
  EXPECT_EQ(slurp(dir / "notes.md"), "mine");
  EXPECT_EQ(entries(dir), 3u);
}

TEST(AtomicDirectory, RefusesToReplaceADirectoryAndNamesIt) {
  TempDir t;
  const fs::path dir = t.dir / "out";
  fs::create_directories(dir / "model.json");
  cg::AtomicDirectory b(dir);
  b.add("summary.txt", "s");
  EXPECT_THROW(
      {
        try {
          b.add("model.json", "m");
        } catch (const cg::InputError& e) {
          EXPECT_NE(std::string(e.what()).find("model.json"), std::string::npos);
          throw;
        }
      },
      cg::InputError);
  EXPECT_TRUE(fs::is_directory(dir / "model.json"));
  cg::write_file_atomic(t.dir / "plain", "x");
  EXPECT_THROW(cg::AtomicDirectory{t.dir / "plain"}, cg::InputError);
}

}  // namespace
