// Tensor statistics through the command line on the tiny-llama example: `summary --runtime-trace
// T --stats` adds the columns (and nothing changes without `--stats`), `query first-non-finite`
// names the module, `check` carries the findings.
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "cli/app.hpp"
#include "scratch.hpp"

namespace {

using testing::internal::CaptureStderr;
using testing::internal::CaptureStdout;
using testing::internal::GetCapturedStderr;
using testing::internal::GetCapturedStdout;

const std::string kCrate = std::string(CG_SOURCE_DIR) + "/examples/tiny-llama";

struct Outcome {
  int code = 0;
  std::string out, err;
};

Outcome run(const std::vector<std::string>& args) {
  CaptureStderr();
  CaptureStdout();
  Outcome r;
  r.code = cg::cli::run(args);
  r.out = GetCapturedStdout();
  r.err = GetCapturedStderr();
  return r;
}

// An output line for `path` at `step`, holding {a, -a} and, when `nan`, one NaN more.
std::string line(int counter, const std::string& path, int step, int at, double a, bool nan) {
  const int elements = nan ? 3 : 2;
  char numbers[200];
  std::snprintf(numbers, sizeof numbers,
                R"("min":%.17g,"max":%.17g,"mean":0,"rms":%.17g,"abs_max":%.17g)", -a, a, a, a);
  return R"({"kind":"stats","event_id":"infer-stats-)" + std::to_string(step) + "-" +
         std::to_string(counter) + R"(","path":")" + path + R"(","step":)" + std::to_string(step) +
         R"(,"at_ns":)" + std::to_string(at) + R"(,"thread":0,"of":"output","reason":")" +
         (nan ? "non_finite" : "sampled") + R"(","dtype":"f32","shape":[)" +
         std::to_string(elements) + R"(],"elements":)" + std::to_string(elements) + R"(,"nan":)" +
         (nan ? "1" : "0") + R"(,"pos_inf":0,"neg_inf":0,"zeros":0,)" + numbers + "}\n";
}

std::string trace_file() {
  std::string t =
      R"({"kind":"meta","schema":"candle-graph/runtime/4","entrypoint":"forward","profile":"release","cargo_features":[],"cfg":[],"phase":"infer","stats_every":1})"
      "\n";
  t += line(1, "model.layers.0.mlp", 0, 10, 0.5, false);
  t += line(2, "model.layers.0", 0, 20, 0.75, false);
  t += line(3, "model.layers.1.mlp", 0, 30, 6.0, true);
  t += line(4, "model.layers.1", 0, 40, 7.0, true);
  t +=
      R"({"kind":"end","operations":0,"edge_timings":0,"dropped":0,"errors":0,"open_operations":0,"threads":1,"duration_ns":100,"stats":4})"
      "\n";
  const auto path = cg_test::scratch_path("cli-stats.jsonl");
  std::ofstream(path, std::ios::binary) << t;
  return path.string();
}

std::string line_of(const std::string& text, const std::string& part) {
  for (std::size_t at = 0; at < text.size();) {
    std::size_t nl = text.find('\n', at);
    std::string l = text.substr(at, nl - at);
    if (l.find(part) != std::string::npos) return l;
    at = nl == std::string::npos ? text.size() : nl + 1;
  }
  return "";
}

TEST(StatsCli, SummaryStatsAddsColumnsAndWithoutTheFlagNothingChanges) {
  const std::string trace = trace_file();
  const Outcome plain = run({"summary", kCrate});
  const Outcome traced = run({"summary", kCrate, "--runtime-trace", trace});
  ASSERT_EQ(traced.code, 0) << traced.err;
  // A trace with only stats records and no --stats: the table is the one without a trace.
  EXPECT_EQ(traced.out, plain.out);
  const Outcome stats = run({"summary", kCrate, "--runtime-trace", trace, "--stats"});
  ASSERT_EQ(stats.code, 0) << stats.err;
  EXPECT_NE(stats.out.find("Abs max"), std::string::npos) << stats.out;
  EXPECT_NE(stats.out.find("(4 stats records)"), std::string::npos) << stats.out;
  // The layers family: abs max 7 (layer 1), one NaN per non-finite record, two records.
  const std::string block = line_of(stats.out, "(Block)");
  EXPECT_NE(block.find(" 7 "), std::string::npos) << block;
  EXPECT_EQ(block.back(), '1') << block;
  const std::string mlp = line_of(stats.out, "(Mlp)");
  EXPECT_NE(mlp.find(" 6 "), std::string::npos) << mlp;
}

TEST(StatsCli, QueryAndCheckNameTheFirstNonFiniteModule) {
  const std::string trace = trace_file();
  const Outcome q = run({"query", "first-non-finite", "--path", kCrate, "--runtime-trace", trace});
  ASSERT_EQ(q.code, 0) << q.err;
  EXPECT_NE(q.out.find("\"found\": true"), std::string::npos) << q.out;
  // layers.1.mlp (at 30) before layers.1 (at 40), which holds the same NaN later.
  EXPECT_NE(q.out.find("\"path\": \"model.layers.1.mlp\""), std::string::npos) << q.out;
  EXPECT_NE(q.out.find("\"nan\": 1"), std::string::npos) << q.out;
  // With the merge's finding: layers.0's outputs came before it in step 0, all finite.
  EXPECT_NE(q.out.find("every module output recorded before it was finite"), std::string::npos)
      << q.out;
  const Outcome check = run({"check", kCrate, "--runtime-trace", trace, "--message-format", "json",
                             "-o", cg_test::scratch_path("cli-stats-model.json").string()});
  EXPECT_NE(check.err.find("runtime-first-non-finite"), std::string::npos) << check.err;
  EXPECT_NE(check.err.find("`model.layers.1.mlp` at step 0"), std::string::npos) << check.err;
  // The report's summary says what the trace held.
  const Outcome tree = run({"report", kCrate, "--runtime-trace", trace, "--format", "tree"});
  EXPECT_NE(tree.out.find(": 0 operations, 0 edge timings, 4 stats records"), std::string::npos)
      << tree.out;
}

// Layer outputs tripling from layer to layer: check raises runtime-activation-growth at the
// default factor (2) and not with --activation-growth 4.
TEST(StatsCli, ActivationGrowthFactorIsAFlag) {
  std::string t =
      R"({"kind":"meta","schema":"candle-graph/runtime/4","entrypoint":"forward","profile":"release","cargo_features":[],"cfg":[],"phase":"infer","stats_every":1})"
      "\n";
  double a = 1;
  for (int i = 0; i < 4; ++i, a *= 3)
    t += line(i + 1, "model.layers." + std::to_string(i), 0, 10 * (i + 1), a, false);
  t +=
      R"({"kind":"end","operations":0,"edge_timings":0,"dropped":0,"errors":0,"open_operations":0,"threads":1,"duration_ns":100,"stats":4})"
      "\n";
  const auto path = cg_test::scratch_path("cli-growth.jsonl");
  std::ofstream(path, std::ios::binary) << t;
  const std::string out = cg_test::scratch_path("cli-growth-model.json").string();
  const Outcome fired = run({"check", kCrate, "--runtime-trace", path.string(), "-o", out});
  EXPECT_NE(fired.err.find("runtime-activation-growth"), std::string::npos) << fired.err;
  EXPECT_NE(fired.err.find("grows more than 2x per layer over 3 consecutive layers, 0 to 3"),
            std::string::npos)
      << fired.err;
  const Outcome quiet = run(
      {"check", kCrate, "--runtime-trace", path.string(), "--activation-growth", "4", "-o", out});
  EXPECT_EQ(quiet.err.find("runtime-activation-growth"), std::string::npos) << quiet.err;
  const Outcome refused = run({"check", kCrate, "--activation-growth", "0.5"});
  EXPECT_EQ(refused.code, 2) << refused.err;
}

}  // namespace
