// Dependency sources found offline as Cargo lays them out: a workspace with a layer crate, a
// registry cache with two candle-nn releases, a vendored fork with a broken manifest, a git
// checkout (present and missing), a cycle of path dependencies, and a crate without Cargo.lock.
#include "cargo/sources.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <fstream>

#include "cargo/temp_tree.hpp"

namespace {

namespace fs = std::filesystem;
using cg::cargo::DependencySource;
using cg::cargo::SourceOrigin;
using ::testing::HasSubstr;
using ::testing::Not;

struct Tree : cg::test::TempTree {
  explicit Tree(const std::string& name) : TempTree("cg-sources", name) {}
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
  // Two candle-nn releases in one lock: each carries a note naming both and where they are, with
  // machine-independent paths.
  for (const auto* nn : {old_nn, new_nn}) {
    EXPECT_THAT(nn->note, HasSubstr("Cargo.lock holds 2 versions of candle-nn"));
    EXPECT_THAT(nn->note, HasSubstr("0.9.1 at $CARGO_HOME/registry/src/"));
    EXPECT_THAT(nn->note, HasSubstr("0.11.0 at $CARGO_HOME/registry/src/"));
    EXPECT_THAT(nn->note, Not(HasSubstr(t.root.string())));
  }
  EXPECT_EQ(layers->note, "");
  const auto* serde = find(all, "serde");
  ASSERT_NE(serde, nullptr);
  EXPECT_EQ(serde->origin, SourceOrigin::missing);
  EXPECT_FALSE(serde->reaches_candle);
  ASSERT_FALSE(serde->searched.empty());
  EXPECT_THAT(serde->searched.back(), HasSubstr("serde-1.0.0"));
  EXPECT_EQ(serde->note,
            "serde 1.0.0 is not on disk; looked in $CARGO_HOME/registry/src/*/serde-1.0.0");
  EXPECT_EQ(find(all, "app"), nullptr) << "the analysed package is not its own dependency";

  // The layer crate depends on candle-nn 0.9.1 by its own lock entry: that is its exact version,
  // although the lock also holds 0.11.0.
  auto layers_ctx = cg::cargo::load_cargo_context(t.root / "ws/layers", {});
  ASSERT_EQ(layers_ctx.candle_versions.size(), 1u);
  EXPECT_EQ(layers_ctx.candle_versions[0].version, "0.9.1");
  EXPECT_TRUE(layers_ctx.candle_versions[0].exact);
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
  EXPECT_THAT(nn->note, HasSubstr("candle-nn 0.8.4 (vendor) at third_party/candle-nn: malformed "
                                  "Cargo.toml (line 1)"));
  EXPECT_EQ(core->note, "");
  // The rest of the analysis goes on: the vendored candle-core is found and usable.
  EXPECT_EQ(core->problem, "");
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
                         "\"candle-nn\"") +
              lock_entry("norev", "0.1.0", "git+https://example.invalid/norev"));
  t.package("home/git/checkouts/layers-9f8e7d6c5b4a3f2e/1111111", "my-layers", "0.1.0");
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
  EXPECT_EQ(layers->note,
            "my-layers 0.2.0 is not on disk; looked in $CARGO_HOME/git/checkouts/*/fedcba9 "
            "(checkouts of layers exist only at revision 1111111)");
  const auto* norev = find(all, "norev");
  ASSERT_NE(norev, nullptr);
  EXPECT_EQ(norev->origin, SourceOrigin::missing);
  EXPECT_THAT(norev->note, HasSubstr("names no revision"));
  EXPECT_THAT(norev->note, HasSubstr("git+https://example.invalid/norev"));
}

// Without a Cargo.lock (candle-vllm commits none), a git dependency of the manifest is found in
// the checkout of the revision the manifest pins; one pinning no revision takes the repository's
// only checkout, and with several the note lists them.
TEST(DependencySources, NoLockGitDependencyFoundByTheManifestsRev) {
  Tree t("git-nolock");
  t.package("app", "app", "0.1.0",
            "candle-nn = { git = \"https://example.invalid/candle.git\", version = \"0.8.3\", "
            "rev = \"cafd231\" }\n"
            "layers = { git = \"https://example.invalid/layers\", branch = \"main\" }\n"
            "many = { git = \"https://example.invalid/many\" }\n"
            "gone = { git = \"https://example.invalid/gone\", rev = \"fedcba9\" }\n");
  t.write("home/git/checkouts/candle-1a2b3c4d5e6f7a8b/cafd231/Cargo.toml",
          "[workspace]\nmembers = [\"candle-nn\"]\n");
  t.package("home/git/checkouts/candle-1a2b3c4d5e6f7a8b/cafd231/candle-nn", "candle-nn", "0.8.3");
  // Another revision of the same repository: not the one the manifest pins.
  t.package("home/git/checkouts/candle-1a2b3c4d5e6f7a8b/0000000/candle-nn", "candle-nn", "0.8.0");
  t.package("home/git/checkouts/layers-9f8e7d6c5b4a3f2e/1111111", "layers", "0.2.0");
  t.package("home/git/checkouts/many-0f0f0f0f0f0f0f0f/2222222", "many", "0.1.0");
  t.package("home/git/checkouts/many-0f0f0f0f0f0f0f0f/3333333", "many", "0.1.1");
  // A registry release of the same name is not a git dependency's source.
  t.package("home/registry/src/idx/gone-9.9.9", "gone", "9.9.9");
  auto ctx = cg::cargo::load_cargo_context(t.root / "app", {});
  cg::cargo::SourceOptions opts;
  opts.cargo_home = t.root / "home";
  auto all = cg::cargo::locate_dependency_sources(ctx, opts);
  const auto* nn = find(all, "candle-nn");
  ASSERT_NE(nn, nullptr);
  EXPECT_EQ(nn->origin, SourceOrigin::git);
  EXPECT_EQ(nn->dir, t.root / "home/git/checkouts/candle-1a2b3c4d5e6f7a8b/cafd231/candle-nn");
  const auto* layers = find(all, "layers");
  ASSERT_NE(layers, nullptr);
  EXPECT_EQ(layers->origin, SourceOrigin::git);
  const auto* many = find(all, "many");
  ASSERT_NE(many, nullptr);
  EXPECT_EQ(many->origin, SourceOrigin::missing);
  EXPECT_THAT(many->note, HasSubstr("the manifest pins no revision of "
                                    "`https://example.invalid/many`; checkouts of it: 2222222, "
                                    "3333333"));
  const auto* gone = find(all, "gone");
  ASSERT_NE(gone, nullptr);
  EXPECT_EQ(gone->origin, SourceOrigin::missing);
  EXPECT_THAT(gone->note, HasSubstr("looked in $CARGO_HOME/git/checkouts/*/fedcba9"));
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
  EXPECT_THAT(b->note, HasSubstr("b at "));
  EXPECT_THAT(b->note, HasSubstr("cycle of path dependencies (a → b → a)"));
  EXPECT_THAT(b->note, Not(HasSubstr(t.root.string())));
  const auto* nn = find(all, "candle-nn");
  ASSERT_NE(nn, nullptr);
  EXPECT_EQ(nn->version, "0.10.2");
  EXPECT_EQ(nn->origin, SourceOrigin::registry);
  EXPECT_EQ(nn->note, "");
}

TEST(DependencySources, PathDependencyWithoutAManifestIsMissingNotAPackage) {
  Tree t("nopath");
  t.package("app", "app", "0.1.0", "gone = { path = \"../gone\" }\n");
  auto ctx = cg::cargo::load_cargo_context(t.root / "app", {});
  cg::cargo::SourceOptions opts;
  opts.cargo_home = t.root / "home";
  auto all = cg::cargo::locate_dependency_sources(ctx, opts);
  const auto* gone = find(all, "gone");
  ASSERT_NE(gone, nullptr);
  EXPECT_EQ(gone->origin, SourceOrigin::missing);
  EXPECT_EQ(gone->note,
            "gone is not on disk; looked in ../gone (path dependency: no Cargo.toml there)");
}

// A registry cache of 10,000 crates (generated here, never committed): without a lock each
// dependency needs the highest release on disk, and the registry is listed once for all of them;
// with a lock each lookup is a single stat.
TEST(DependencySources, HugeRegistryIsListedOnceNotPerLookup) {
  Tree t("huge");
  const fs::path reg = t.root / "home/registry/src/index.crates.io-6f17d22bba15001f";
  fs::create_directories(reg);
  constexpr int kCrates = 10000;
  constexpr int kDeps = 60;
  std::string deps, lock = "version = 3\n\n";
  for (int i = 0; i < kCrates; ++i) {
    std::string name = "crate" + std::to_string(i);
    if (i < kDeps) {
      t.package(reg.lexically_relative(t.root) / (name + "-1.0." + std::to_string(i % 3)), name,
                "1.0." + std::to_string(i % 3));
      deps += name + " = \"1\"\n";
      lock += lock_entry(name, "1.0." + std::to_string(i % 3), kRegistry);
    } else {
      // Fillers are entries the locator only lists by name and never opens; empty files stand
      // in for directories because removing 10,000 directories takes half a minute on some
      // filesystems.
      std::ofstream(reg / (name + "-1.0.0"));
    }
  }
  t.package("nolock", "nolock", "0.1.0", deps);
  t.package("locked", "locked", "0.1.0", deps);
  t.write("locked/Cargo.lock", lock);
  cg::cargo::SourceOptions opts;
  opts.cargo_home = t.root / "home";
  std::size_t entries = 0;
  opts.entries_read = &entries;

  auto start = std::chrono::steady_clock::now();
  auto nolock = cg::cargo::locate_dependency_sources(
      cg::cargo::load_cargo_context(t.root / "nolock", {}), opts);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_EQ(nolock.size(), static_cast<std::size_t>(kDeps));
  for (const auto& d : nolock) {
    EXPECT_EQ(d.origin, SourceOrigin::registry) << d.package;
    EXPECT_EQ(d.note, "") << d.package;
  }
  EXPECT_EQ(find(nolock, "crate7")->version, "1.0.1");
  // One listing of the registry (plus `registry/src` itself), not one per dependency (60 × 10,000).
  EXPECT_LE(entries, static_cast<std::size_t>(kCrates) + 10) << entries;
  EXPECT_LT(seconds, 10.0);

  auto locked = cg::cargo::locate_dependency_sources(
      cg::cargo::load_cargo_context(t.root / "locked", {}), opts);
  ASSERT_EQ(locked.size(), static_cast<std::size_t>(kDeps));
  EXPECT_EQ(find(locked, "crate59")->origin, SourceOrigin::registry);
  EXPECT_LE(entries, 5u) << "with a lock the registry is never listed";
}

TEST(DependencySources, RegistryDependenciesOffTheCandlePathShareOneNote) {
  Tree t("quiet");
  t.package("app", "app", "0.1.0", "candle-nn = \"0.9\"\nserde = \"1\"\nanyhow = \"1\"\n");
  t.write(
      "app/Cargo.lock",
      "version = 3\n\n" + lock_entry("app", "0.1.0", "", "\"candle-nn\", \"serde\", \"anyhow\"") +
          lock_entry("anyhow", "1.0.86", kRegistry) + lock_entry("candle-nn", "0.9.1", kRegistry) +
          lock_entry("serde", "1.0.200", kRegistry));
  auto ctx = cg::cargo::load_cargo_context(t.root / "app", {});
  cg::cargo::SourceOptions opts;
  opts.cargo_home = t.root / "home";
  auto notes = cg::cargo::dependency_notes(cg::cargo::locate_dependency_sources(ctx, opts));
  ASSERT_EQ(notes.size(), 2u);
  EXPECT_EQ(notes[0],
            "candle-nn 0.9.1 is not on disk; looked in $CARGO_HOME/registry/src/*/candle-nn-0.9.1");
  EXPECT_EQ(notes[1],
            "2 registry dependencies that do not reach candle are not on disk (anyhow 1.0.86, "
            "serde 1.0.200); looked in $CARGO_HOME/registry/src/*/NAME-VERSION");
}

TEST(DependencySources, BrokenLockIsNamedAndVersionsFallBack) {
  Tree t("badlock");
  t.package("app", "app", "0.1.0", "candle-nn = \"0.9\"\n");
  t.write("app/Cargo.lock", "version = 3\n[[package]\nname = \"candle-nn\"\n");
  auto ctx = cg::cargo::load_cargo_context(t.root / "app", {});
  EXPECT_THAT(ctx.lock_problem, HasSubstr("Cargo.lock: line 2"));
  ASSERT_EQ(ctx.candle_versions.size(), 1u);
  EXPECT_FALSE(ctx.candle_versions[0].exact);
  EXPECT_EQ(ctx.candle_versions[0].version, "0.9");
}

}  // namespace
