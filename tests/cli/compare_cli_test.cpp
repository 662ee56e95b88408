// `candle-graph compare` as a user runs it (cg::cli::run in-process): exit codes, regressions
// named on stderr, refusals, formats and -o.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "cli/app.hpp"
#include "compare/synthetic_trace.hpp"
#include "scratch.hpp"

namespace {

namespace fs = std::filesystem;
using testing::internal::CaptureStderr;
using testing::internal::CaptureStdout;
using testing::internal::GetCapturedStderr;
using testing::internal::GetCapturedStdout;

struct Result {
  int code = 0;
  std::string out, err;
};

Result run(const std::vector<std::string>& args) {
  CaptureStdout();
  CaptureStderr();
  Result r;
  r.code = cg::cli::run(args);
  r.out = GetCapturedStdout();
  r.err = GetCapturedStderr();
  return r;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// A base and a candidate whose mlp is 20% slower.
struct Pair {
  std::string base, candidate;
};

Pair write_pair(const std::string& tag, double candidate_mlp_ns = 1.2e6,
                const std::string& candidate_entrypoint = "model::forward",
                std::uint64_t seed = 3) {
  cg_test::SyntheticSpec b;
  b.seed = seed;
  b.modules = {{"model.layers.0.mlp", 1e6}, {"model.norm", 2e5}};
  cg_test::SyntheticSpec c = b;
  c.seed = seed + 1;
  c.modules["model.layers.0.mlp"] = candidate_mlp_ns;
  c.entrypoint = candidate_entrypoint;
  Pair p{cg_test::scratch_path("cmpcli_" + tag + "_base.jsonl").string(),
         cg_test::scratch_path("cmpcli_" + tag + "_candidate.jsonl").string()};
  cg_test::write_text(p.base, cg_test::synthetic_trace(b));
  cg_test::write_text(p.candidate, cg_test::synthetic_trace(c));
  return p;
}

TEST(CompareCli, FailOnRegressionExitsOneAndNamesTheSlowerRow) {
  const Pair p = write_pair("regress");
  Result r =
      run({"compare", "--base", p.base, "--candidate", p.candidate, "--fail-on-regression", "5"});
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.err.find("regression: module model.layers.0.mlp is +"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("model.norm"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("slower"), std::string::npos) << r.out;
  // Above the change: no regression; without the flag: exit 0 whatever the verdicts.
  r = run({"compare", "--base", p.base, "--candidate", p.candidate, "--fail-on-regression", "30"});
  EXPECT_EQ(r.code, 0) << r.err;
  r = run({"compare", "--base", p.base, "--candidate", p.candidate});
  EXPECT_EQ(r.code, 0) << r.err;
}

TEST(CompareCli, DifferentEntrypointsAreRefusedWithExitTwoUnlessAllowed) {
  const Pair p = write_pair("mismatch", 1e6, "model::train_step");
  Result r = run({"compare", "--base", p.base, "--candidate", p.candidate});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("meta.entrypoint is \"model::train_step\" but " + p.base +
                       " has \"model::forward\""),
            std::string::npos)
      << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
  r = run({"compare", "--base", p.base, "--candidate", p.candidate, "--allow-mismatch", "--format",
           "markdown"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("mismatch allowed: meta.entrypoint"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("| --- | --- | --- | ---: | ---: | ---: | --- |"), std::string::npos)
      << r.out;
}

TEST(CompareCli, MissingFilesAndBadFlagsExitTwo) {
  const Pair p = write_pair("bad");
  Result r = run({"compare", "--base", p.base, "--candidate", p.base + ".missing"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find(p.base + ".missing"), std::string::npos) << r.err;
  r = run({"compare", "--base", p.base});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--candidate"), std::string::npos) << r.err;
  r = run({"compare", "--base", p.base, "--candidate", p.candidate, "--confidence", "95"});
  EXPECT_EQ(r.code, 2) << r.err;
  r = run({"compare", "--base", p.base, "--candidate", p.candidate, "--format", "html"});
  EXPECT_EQ(r.code, 2) << r.err;
}

TEST(CompareCli, OutputFileIsWrittenWholeAndNeverOverAnInput) {
  const Pair p = write_pair("out");
  const fs::path out = cg_test::scratch_path("cmpcli_report.json");
  fs::remove(out);
  Result r = run({"compare", "--base", p.base, "--candidate", p.candidate, "--format", "json", "-o",
                  out.string()});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
  const std::string json = slurp(out);
  EXPECT_NE(json.find("\"schema\": \"candle-graph/compare/1\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"verdict\": \"slower\""), std::string::npos) << json;
  const std::string before = slurp(p.candidate);
  r = run({"compare", "--base", p.base, "--candidate", p.candidate, "-o", p.candidate});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(slurp(p.candidate), before);
}

TEST(CompareCli, SeveralFilesASideAreSeveralRuns) {
  std::vector<std::string> args = {"compare", "--base"};
  std::vector<std::string> candidates;
  for (int i = 0; i < 5; ++i) {
    const Pair p = write_pair("runs" + std::to_string(i), 1.2e6, "model::forward",
                              static_cast<std::uint64_t>(10 + 2 * i));
    args.push_back(p.base);
    candidates.push_back(p.candidate);
  }
  args.push_back("--candidate");
  args.insert(args.end(), candidates.begin(), candidates.end());
  args.insert(args.end(), {"--format", "json", "--seed", "7", "--resamples", "500"});
  const Result r = run(args);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("\"unit\": \"runs\""), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"seed\": 7"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"units\": 5"), std::string::npos) << r.out;
}

}  // namespace
