// Regression from fuzzing the loader (fuzz/rust_crate): a mutated model.rs whose `use` chains and
// globs fan out made name resolution run for minutes. Resolution now has a work budget: the crate
// loads and every query answers promptly (ctest's timeout would catch a relapse).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "rust/crate.hpp"

namespace {

namespace fs = std::filesystem;

TEST(ResolutionBudget, FuzzedUseChainsLoadAndResolvePromptly) {
  fs::path src = fs::path(CG_SOURCE_DIR) / "examples/tiny-llama";
  fs::path input =
      fs::path(CG_SOURCE_DIR) / "fuzz/regressions/rust_crate/timeout-use-resolution-recursion.rs";
  ASSERT_TRUE(fs::exists(input));
  fs::path dir = fs::temp_directory_path() / ("cg-resolve-budget-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::copy(src, dir, fs::copy_options::recursive);
  fs::copy_file(input, dir / "src/model.rs", fs::copy_options::overwrite_existing);
  auto loaded = cg::rust::load_crate(dir, {});
  std::size_t answered = 0;
  for (std::size_t i = 0; i < loaded.crate.uses().size(); ++i) {
    const auto& u = loaded.crate.uses()[i];
    if (!u.name.empty()) {
      loaded.crate.resolve(u.module, u.name);
      ++answered;
    }
  }
  loaded.crate.unresolved_imports();
  EXPECT_GT(answered, 0u);
  EXPECT_GT(loaded.crate.items().size(), 0u);
  fs::remove_all(dir);
}

}  // namespace
