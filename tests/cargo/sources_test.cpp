// Dependency sources found offline as Cargo lays them out: a workspace with a layer crate, a
// registry cache with two candle-nn releases, a vendored fork with a broken manifest, a git
// checkout (present and missing), a cycle of path dependencies, and a crate without Cargo.lock.
#include "cargo/sources.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

namespace {

namespace fs = std::filesystem;
using cg::cargo::DependencySource;
using cg::cargo::SourceOrigin;
using ::testing::HasSubstr;

struct Tree {
  fs::path root;
  explicit Tree(const std::string& name) {
    root = fs::temp_directory_path() / ("cg-sources-" + name + "-" + std::to_string(::getpid()));
    fs::remove_all(root);
    fs::create_directories(root);
  }
  ~Tree() { fs::remove_all(root); }
  void write(const fs::path& rel, const std::string& text) const {
    fs::create_directories((root / rel).parent_path());
    std::ofstream(root / rel) << text;
  }
  void package(const fs::path& rel, const std::string& name, const std::string& version,
               const std::string& deps = "") const {
    write(rel / "Cargo.toml", "[package]\nname = \"" + name + "\"\nversion = \"" + version +
                                  "\"\nedition = \"2021\"\n\n[dependencies]\n" + deps);
    write(rel / "src/lib.rs", "");
  }
};

std::string lock_entry(const std::string& name, const std::string& version,
                       const std::string& source, const std::string& deps = "") {
  std::string s = "[[package]]\nname = \"" + name + "\"\nversion = \"" + version + "\"\n";
  if (!source.empty()) s += "source = \"" + source + "\"\n";
  if (!deps.empty()) s += "dependencies = [" + deps + "]\n";
  return s + "\n";
}

const std::string kRegistry = "registry+https://github.com/rust-lang/crates.io-index";

const DependencySource* find(const std::vector<DependencySource>& all, const std::string& name,
                             const std::string& version = "") {
  for (const auto& s : all)
    if (s.package == name && (version.empty() || s.version == version)) return &s;
  return nullptr;
}

TEST(DependencySources, WorkspaceLayerCrateAndTwoRegistryReleases) {
  Tree t("ws");
  t.write("ws/Cargo.toml", "[workspace]\nmembers = [\"app\", \"layers\"]\n");
  t.package("ws/app", "app", "0.1.0", "layers = { path = \"../layers\" }\n");
  t.package("ws/layers", "layers", "0.1.0", "candle-nn = \"0.9\"\n");
  t.write("ws/Cargo.lock",
          "version = 3\n\n" + lock_entry("app", "0.1.0", "", "\"layers\"") +
              lock_entry("layers", "0.1.0", "", "\"candle-nn 0.9.1\"") +
              lock_entry("candle-nn", "0.9.1", kRegistry, "\"candle-core 0.9.1\"") +
              lock_entry("candle-nn", "0.11.0", kRegistry) +
              lock_entry("candle-core", "0.9.1", kRegistry) +
              lock_entry("serde", "1.0.0", kRegistry));
  t.package("home/registry/src/index.crates.io-6f17d22bba15001f/candle-nn-0.9.1", "candle-nn",
            "0.9.1");
  t.package("home/registry/src/index.crates.io-6f17d22bba15001f/candle-nn-0.11.0", "candle-nn",
            "0.11.0");
  t.package("home/registry/src/index.crates.io-6f17d22bba15001f/candle-core-0.9.1", "candle-core",
            "0.9.1");
  auto ctx = cg::cargo::load_cargo_context(t.root / "ws/app", {});
  cg::cargo::SourceOptions opts;
  opts.cargo_home = t.root / "home";
  auto all = cg::cargo::locate_dependency_sources(ctx, opts);

  const auto* layers = find(all, "layers");
  ASSERT_NE(layers, nullptr);
  EXPECT_EQ(layers->origin, SourceOrigin::workspace);
  EXPECT_TRUE(layers->reaches_candle);
  EXPECT_EQ(layers->dir.filename(), "layers");
  const auto* old_nn = find(all, "candle-nn", "0.9.1");
  const auto* new_nn = find(all, "candle-nn", "0.11.0");
  ASSERT_NE(old_nn, nullptr);
  ASSERT_NE(new_nn, nullptr);
  EXPECT_EQ(old_nn->origin, SourceOrigin::registry);
  EXPECT_EQ(old_nn->dir.filename(), "candle-nn-0.9.1");
  EXPECT_EQ(new_nn->dir.filename(), "candle-nn-0.11.0");
  const auto* serde = find(all, "serde");
  ASSERT_NE(serde, nullptr);
  EXPECT_EQ(serde->origin, SourceOrigin::missing);
  EXPECT_FALSE(serde->reaches_candle);
  ASSERT_FALSE(serde->searched.empty());
  EXPECT_THAT(serde->searched.back(), HasSubstr("serde-1.0.0"));
  EXPECT_EQ(find(all, "app"), nullptr) << "the analysed package is not its own dependency";
}

TEST(DependencySources, VendoredForkWithABrokenManifestIsNamed) {
  Tree t("vendor");
  t.package("app", "app", "0.1.0", "candle-nn = \"0.8\"\n");
  t.write("app/.cargo/config.toml",
          "[source.crates-io]\nreplace-with = \"vendored-sources\"\n\n"
          "[source.vendored-sources]\ndirectory = \"third_party\"\n");
  t.write("app/Cargo.lock", "version = 3\n\n" + lock_entry("app", "0.1.0", "", "\"candle-nn\"") +
                                lock_entry("candle-nn", "0.8.4", kRegistry, "\"candle-core\"") +
                                lock_entry("candle-core", "0.8.4", kRegistry));
  t.package("app/third_party/candle-core", "candle-core", "0.8.4");
  t.write("app/third_party/candle-nn/Cargo.toml", "[package\nname = ");
  auto ctx = cg::cargo::load_cargo_context(t.root / "app", {});
  cg::cargo::SourceOptions opts;
  opts.cargo_home = t.root / "no-home";
  auto all = cg::cargo::locate_dependency_sources(ctx, opts);
  const auto* core = find(all, "candle-core");
  ASSERT_NE(core, nullptr);
  EXPECT_EQ(core->origin, SourceOrigin::vendor);
  const auto* nn = find(all, "candle-nn");
  ASSERT_NE(nn, nullptr);
  EXPECT_EQ(nn->origin, SourceOrigin::vendor);
  EXPECT_THAT(nn->problem, HasSubstr("malformed Cargo.toml"));
  EXPECT_THAT(nn->problem, HasSubstr("third_party/candle-nn"));
  EXPECT_TRUE(nn->reaches_candle);
}

TEST(DependencySources, GitCheckoutFoundByRevAndMissingRevNamed) {
  Tree t("git");
  const std::string rev = "0123456789abcdef0123456789abcdef01234567";
  const std::string gone = "fedcba9876543210fedcba9876543210fedcba98";
  t.package("app", "app", "0.1.0", "candle-nn = { git = \"https://example.invalid/candle\" }\n");
  t.write("app/Cargo.lock",
          "version = 3\n\n" + lock_entry("app", "0.1.0", "", "\"candle-nn\", \"my-layers\"") +
              lock_entry("candle-nn", "0.9.0-alpha.1",
                         "git+https://example.invalid/candle?branch=main#" + rev) +
              lock_entry("my-layers", "0.2.0", "git+https://example.invalid/layers#" + gone,
                         "\"candle-nn\""));
  t.write("home/git/checkouts/candle-1a2b3c4d5e6f7a8b/0123456/Cargo.toml",
          "[workspace]\nmembers = [\"candle-nn\"]\n");
  t.package("home/git/checkouts/candle-1a2b3c4d5e6f7a8b/0123456/candle-nn", "candle-nn",
            "0.9.0-alpha.1");
  auto ctx = cg::cargo::load_cargo_context(t.root / "app", {});
  cg::cargo::SourceOptions opts;
  opts.cargo_home = t.root / "home";
  auto all = cg::cargo::locate_dependency_sources(ctx, opts);
  const auto* nn = find(all, "candle-nn");
  ASSERT_NE(nn, nullptr);
  EXPECT_EQ(nn->origin, SourceOrigin::git);
  EXPECT_EQ(nn->dir.filename(), "candle-nn");
  const auto* layers = find(all, "my-layers");
  ASSERT_NE(layers, nullptr);
  EXPECT_EQ(layers->origin, SourceOrigin::missing);
  EXPECT_TRUE(layers->reaches_candle);
  ASSERT_FALSE(layers->searched.empty());
  EXPECT_THAT(layers->searched.back(), HasSubstr("git/checkouts/*/fedcba9"));
}

TEST(DependencySources, PathCycleEndsAndNoLockTakesTheHighestRelease) {
  Tree t("cycle");
  t.package("a", "a", "0.1.0", "b = { path = \"../b\" }\ncandle-nn = \"0.9\"\n");
  t.package("b", "b", "0.1.0", "a = { path = \"../a\" }\n");
  t.package("home/registry/src/idx/candle-nn-0.9.1", "candle-nn", "0.9.1");
  t.package("home/registry/src/idx/candle-nn-0.10.2", "candle-nn", "0.10.2");
  t.package("home/registry/src/idx/candle-nn-0.9.10", "candle-nn", "0.9.10");
  auto ctx = cg::cargo::load_cargo_context(t.root / "a", {});
  cg::cargo::SourceOptions opts;
  opts.cargo_home = t.root / "home";
  auto all = cg::cargo::locate_dependency_sources(ctx, opts);
  const auto* b = find(all, "b");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->origin, SourceOrigin::path);
  const auto* nn = find(all, "candle-nn");
  ASSERT_NE(nn, nullptr);
  EXPECT_EQ(nn->version, "0.10.2");
  EXPECT_EQ(nn->origin, SourceOrigin::registry);
}

}  // namespace
