// Cargo context read offline: features, renames, workspace inheritance, targets, ids, errors.
#include "cargo/context.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

#include "util/error.hpp"

namespace {

namespace fs = std::filesystem;
using cg::cargo::load_cargo_context;
using cg::cargo::Selection;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

fs::path fixture(const char* name) {
  return fs::path(CG_SOURCE_DIR) / "tests/fixtures/crates" / name;
}

std::string error_of(const fs::path& p, const Selection& s) {
  try {
    load_cargo_context(p, s);
  } catch (const cg::InputError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(CargoFeatures, DefaultEnablesImpliedFeatures) {
  auto ctx = load_cargo_context(fixture("features_implied_dep"), {});
  EXPECT_THAT(ctx.features, ElementsAre("default", "fast", "simd"));
  EXPECT_EQ(ctx.package, "features-implied-dep");
  EXPECT_EQ(ctx.version, "0.3.1");
}

TEST(CargoFeatures, NoDefaultFeaturesAndDepColon) {
  Selection s;
  s.no_default_features = true;
  s.features = {"cuda"};
  auto ctx = load_cargo_context(fixture("features_implied_dep"), s);
  EXPECT_THAT(ctx.features, ElementsAre("cuda", "simd"));
  for (const auto& d : ctx.dependencies)
    EXPECT_EQ(d.active, d.alias == "half") << d.alias << ": only `dep:half` enables a dependency";
  // `dep:half` hides the implicit `half` feature; rayon and serde keep theirs.
  EXPECT_THAT(ctx.all_feature_names,
              ElementsAre("cuda", "default", "extra", "fast", "rayon", "serde", "simd"));
}

TEST(CargoFeatures, AllFeaturesIncludesOptionalDependencyFeatures) {
  Selection s;
  s.all_features = true;
  auto ctx = load_cargo_context(fixture("features_implied_dep"), s);
  EXPECT_THAT(ctx.features,
              ElementsAre("cuda", "default", "extra", "fast", "rayon", "serde", "simd"));
  EXPECT_THAT(ctx.cfgs, ::testing::Contains("feature=\"rayon\""));
}

TEST(CargoFeatures, UnknownFeatureListsValidOnes) {
  Selection s;
  s.features = {"fast,nope"};
  EXPECT_THAT(error_of(fixture("features_implied_dep"), s),
              AllOf(HasSubstr("unknown feature `nope`"), HasSubstr("cuda, default, extra")));
}

TEST(CargoFeatures, FeatureSetChangesBuildAndAnalysisId) {
  auto a = load_cargo_context(fixture("features_implied_dep"), {});
  Selection s;
  s.features = {"extra"};
  auto b = load_cargo_context(fixture("features_implied_dep"), s);
  EXPECT_NE(a.build_id, b.build_id);
  EXPECT_NE(a.analysis_id, b.analysis_id);
  EXPECT_EQ(a.analysis_id, "analysis:" + a.build_id);
}

TEST(CargoDependencies, RenamedPackageKeepsItsAlias) {
  auto ctx = load_cargo_context(fixture("renamed_deps"), {});
  EXPECT_EQ(ctx.package_for_alias("candle"), "candle-core");
  EXPECT_EQ(ctx.package_for_alias("candle_nn"), "candle-nn");
  EXPECT_EQ(ctx.package_for_alias("serde"), "");
  ASSERT_EQ(ctx.candle_versions.size(), 2u);
  EXPECT_EQ(ctx.candle_versions[0].package, "candle-core");
  EXPECT_EQ(ctx.candle_versions[0].version, "0.8.0");
  EXPECT_FALSE(ctx.candle_versions[0].exact) << "no Cargo.lock: the requirement is not exact";
}

TEST(CargoWorkspace, InheritsVersionAndDependenciesAndReadsLock) {
  auto ctx = load_cargo_context(fixture("ws_inherit/crates/alpha"), {});
  EXPECT_EQ(ctx.version, "2.4.0");
  EXPECT_EQ(ctx.package_for_alias("candle"), "candle-core");
  EXPECT_EQ(ctx.workspace_root, fs::canonical(fixture("ws_inherit")));
  ASSERT_EQ(ctx.candle_versions.size(), 2u);
  EXPECT_EQ(ctx.candle_versions[0].version, "0.9.1");
  EXPECT_TRUE(ctx.candle_versions[0].exact);
  EXPECT_EQ(ctx.candle_versions[1].package, "candle-nn");
  EXPECT_FALSE(ctx.candle_versions[1].exact) << "candle-nn is not in the lock file";
}

TEST(CargoWorkspace, MemberGlobsAndVirtualWorkspaceError) {
  EXPECT_THAT(cg::cargo::workspace_members(fixture("ws_inherit")),
              ElementsAre("crates/alpha", "tools/gamma"));
  EXPECT_THAT(error_of(fixture("ws_inherit"), {}),
              AllOf(HasSubstr("virtual workspace"), HasSubstr("crates/alpha, tools/gamma")));
}

TEST(CargoTargets, AutoDiscoveryAndSelection) {
  auto ctx = load_cargo_context(fixture("targets_listed"), {});
  ASSERT_EQ(ctx.targets.size(), 4u);
  EXPECT_EQ(ctx.selected.kind, "lib");
  EXPECT_EQ(ctx.selected.name, "targets_listed");
  Selection s;
  s.cargo_target = "tool";
  auto t = load_cargo_context(fixture("targets_listed"), s);
  EXPECT_EQ(t.selected.src_path, "src/bin/tool/main.rs");
  s.cargo_target = "nope";
  EXPECT_THAT(error_of(fixture("targets_listed"), s),
              AllOf(HasSubstr("unknown cargo target `nope`"), HasSubstr("demo (example)"),
                    HasSubstr("targets-listed (bin)"), HasSubstr("tool (bin)")));
}

TEST(CargoErrors, MalformedManifestNamesTheLine) {
  try {
    load_cargo_context(fixture("malformed_manifest"), {});
    FAIL() << "expected an InputError";
  } catch (const cg::InputError& e) {
    EXPECT_THAT(e.where(), ::testing::StartsWith("Cargo.toml:6"));
  }
  EXPECT_THAT(error_of(fixture("does_not_exist"), {}), HasSubstr("no Cargo.toml"));
}

TEST(CargoIds, BuildIdMatchesTheHandComputedVector) {
  // FNV-1a-64 of "candle-graph/build/1\0pkg\01.0.0\0pkg\0feature=default\0cfg=feature=\"default\"\0
  // cfg=unix\0candle=candle-core@0.9.1\0", worked out independently of the implementation.
  cg::cargo::CargoContext ctx;
  ctx.package = "pkg";
  ctx.version = "1.0.0";
  ctx.selected.name = "pkg";
  ctx.features = {"default"};
  ctx.cfgs = {"unix", "feature=\"default\""};
  ctx.candle_versions = {{"candle-core", "0.9.1", true}};
  EXPECT_EQ(cg::cargo::compute_build_id(ctx), "candle-graph/build/1:78b9ff4027f2fe5a");
}

TEST(CargoCfg, HostDefaultOrRustcPlusFeatures) {
  auto ctx = load_cargo_context(fixture("features_implied_dep"), {});
  EXPECT_THAT(ctx.cfgs, ::testing::Contains("feature=\"fast\""));
  EXPECT_THAT(ctx.cfgs, ::testing::Contains(::testing::StartsWith("target_os=")));
  EXPECT_TRUE(std::is_sorted(ctx.cfgs.begin(), ctx.cfgs.end()));
}

}  // namespace

namespace {

TEST(CargoBounds, AHugeManifestIsRefusedNamingTheFile) {
  fs::path dir = fs::temp_directory_path() / ("cg-huge-manifest-" + std::to_string(::getpid()));
  fs::create_directories(dir / "src");
  {
    std::ofstream m(dir / "Cargo.toml");
    m << "[package]\nname = \"huge\"\nversion = \"0.1.0\"\n";
    std::string comment = "# " + std::string(1000, 'x') + "\n";
    for (int i = 0; i < 5000; ++i)
      m << comment;  // ~5 MB of comments: valid TOML, absurd size
  }
  std::ofstream(dir / "src/lib.rs") << "";
  std::string err = error_of(dir, {});
  EXPECT_THAT(err, HasSubstr("Cargo.toml"));
  EXPECT_THAT(err, HasSubstr("over 4 MiB are refused"));
  fs::remove_all(dir);
}

}  // namespace
