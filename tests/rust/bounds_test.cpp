// Reader bounds of the crate loader: a source file over 10 MB and inline modules nested deeper
// than 64 each end in a diagnostic naming the file (and line), while the rest of the crate loads;
// neither is read or walked without limit.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "rust/crate.hpp"

using ::testing::HasSubstr;

namespace {

namespace fs = std::filesystem;

// A private copy of the example crate, removed at the end of the test.
struct CrateCopy {
  fs::path dir;
  explicit CrateCopy(const std::string& tag)
      : dir(fs::temp_directory_path() /
            ("cg-rust-bounds-" + tag + "-" + std::to_string(::getpid()))) {
    fs::remove_all(dir);
    fs::copy(fs::path(CG_SOURCE_DIR) / "examples/tiny-llama", dir, fs::copy_options::recursive);
  }
  ~CrateCopy() { fs::remove_all(dir); }
  CrateCopy(const CrateCopy&) = delete;
  CrateCopy& operator=(const CrateCopy&) = delete;
};

const cg::rust::Diagnostic* find_rule(const cg::rust::Crate& c, const std::string& rule) {
  for (const auto& d : c.diagnostics())
    if (d.rule == rule || d.message.find(rule) != std::string::npos) return &d;
  return nullptr;
}

TEST(RustBounds, SourceFileOver10MBIsSkippedWithADiagnosticNamingIt) {
  CrateCopy copy("big");
  // A sparse file: its size is over the limit, and the loader must refuse it before reading it.
  fs::resize_file(copy.dir / "src/model.rs", (std::uintmax_t{10} << 20) + 1);
  const auto loaded = cg::rust::load_crate(copy.dir, {});
  const auto* d = find_rule(loaded.crate, "10 MB");
  ASSERT_NE(d, nullptr) << "no diagnostic for the oversized file";
  EXPECT_THAT(d->file + " " + d->message, HasSubstr("model.rs"));
  // The other files still load: lib.rs's items are there.
  EXPECT_GT(loaded.crate.items().size(), 0u);
}

TEST(RustBounds, InlineModulesDeeperThan64StopWithADiagnosticAtTheLine) {
  CrateCopy copy("deep");
  std::string text;
  for (int i = 0; i < 80; ++i)
    text += "pub mod m" + std::to_string(i) + " {\n";
  text += "pub struct Deep;\n";
  for (int i = 0; i < 80; ++i)
    text += "}\n";
  std::ofstream(copy.dir / "src/lib.rs", std::ios::app) << "\npub mod deep_nest;\n";
  std::ofstream(copy.dir / "src/deep_nest.rs", std::ios::binary) << text;
  const auto loaded = cg::rust::load_crate(copy.dir, {});
  const auto* d = find_rule(loaded.crate, "parse-depth");
  ASSERT_NE(d, nullptr) << "no diagnostic for 80 nested inline modules";
  EXPECT_THAT(d->file, HasSubstr("deep_nest.rs"));
  EXPECT_GT(d->line, 60u);
  EXPECT_THAT(d->message, HasSubstr("64"));
}

}  // namespace
