// The bundled example crate is the demo's input and the backbone of the end-to-end tests: it must
// stay valid Rust that the grammar parses without a single error node.
#include <gtest/gtest.h>

#include <filesystem>

#include "rust/parse.hpp"
#include "util/atomic_file.hpp"

namespace {

namespace fs = std::filesystem;

TEST(ExampleCrate, EveryTinyLlamaSourceParsesCleanly) {
  fs::path root = fs::path(CG_SOURCE_DIR) / "examples" / "tiny-llama";
  std::size_t files = 0;
  for (const auto& entry : fs::recursive_directory_iterator(root / "src")) {
    if (entry.path().extension() != ".rs") continue;
    ++files;
    auto rel = fs::relative(entry.path(), root).string();
    auto parsed = cg::rust::ParsedFile::parse(rel, cg::read_file(entry.path()));
    for (const auto& p : parsed.problems())
      ADD_FAILURE() << rel << ":" << p.line << ":" << p.column << ": " << p.what;
  }
  EXPECT_GE(files, 5u) << "lib, config, rotary, model, train and the bin target";
}

}  // namespace
