// Reading runtime/4 `stats` lines and their compact `st` form (docs/runtime-4.md, "Additions:
// tensor statistics"): every inconsistency the contract lists is an error naming the file and
// line, `end.stats` is checked against the lines, and both encodings give the same records.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <limits>

#include "runtime/merge_plan.hpp"
#include "runtime/reader.hpp"
#include "runtime/record_log.hpp"
#include "scratch.hpp"
#include "stats_test_util.hpp"
#include "util/error.hpp"

namespace cg::runtime {
namespace {

using testing::end_line;
using ::testing::HasSubstr;
using testing::kMetaCompactStats;
using testing::kMetaV4Stats;
using testing::st_line;
using testing::stats_line;

constexpr double kNan = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

std::filesystem::path write(const std::string& name, const std::string& text) {
  auto path = cg_test::scratch_path(name);
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

std::string error_of(const std::filesystem::path& p, const ReadOptions& options = {}) {
  try {
    RecordSink sink;
    read_trace(p, sink, options);
  } catch (const InputError& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected an InputError for " << p;
  return "";
}

std::string log_of(const std::filesystem::path& p, ReadOptions options = {}) {
  RecordLog log;
  read_trace(p, log, options);
  return log.text();
}

const std::vector<double> kOutput = {0.5, -2.0, 0.0, 1.5};

// A static model that knows nothing (the findings about the trace itself do not need one).
struct NoModel : StaticModel {
  bool has_operation(std::string_view) const override { return false; }
  bool has_tensor(std::string_view) const override { return false; }
  std::vector<std::string> parameters_for(std::string_view, std::string_view) const override {
    return {};
  }
  std::optional<std::string> module_of_operation(std::string_view) const override {
    return std::nullopt;
  }
};

TEST(StatsTrace, ReadsStatsLinesAndCountsThemAgainstEnd) {
  const auto p =
      write("stats-read.jsonl",
            std::string(kMetaV4Stats) + stats_line(1, "model.layers.0", "output", 0, 100, kOutput) +
                stats_line(2, "model.layers.0.mlp.up_proj.weight", "grad", 0, 200,
                           {kNan, 1.0, kInf, -kInf, 0.0}, 0, "non_finite") +
                end_line(2));
  RecordLog log;
  const TraceInfo info = read_trace(p, log);
  EXPECT_EQ(info.stats, 2u);
  ASSERT_TRUE(info.end);
  EXPECT_EQ(info.end->stats, 2u);
  const std::string text = log.text();
  // The numbers the test computed from its elements reach the sink: min -2, max 1.5, abs_max 2.
  EXPECT_THAT(text, HasSubstr("stats event_id=15:infer-stats-0-1 path=14:model.layers.0 "
                              "of=6:output index=0 reason=7:sampled step=0 at_ns=100"));
  EXPECT_THAT(text, HasSubstr("elements=4 nan=0 pos_inf=0 neg_inf=0 zeros=1 min=-0x1p+1 "
                              "max=0x1.8p+0"));
  EXPECT_THAT(text, HasSubstr("of=4:grad index=0 reason=10:non_finite"));
  EXPECT_THAT(text, HasSubstr("elements=5 nan=1 pos_inf=1 neg_inf=1 zeros=1"));
}

TEST(StatsTrace, CompactStLinesReadAsTheirRuntime4Equivalent) {
  // Two threads; `st` sets everything explicitly and moves no thread's implied counter or step,
  // so the `o` after it continues its thread's counter (2 → 3).
  const std::string def = R"({"kind":"def","h":0,"op":"matmul","static_id":"op:1","inputs":[]})"
                          "\n"
                          R"({"kind":"def","h":1,"path":"model.layers.0"})"
                          "\n";
  const auto compact =
      write("stats-compact.jsonl",
            std::string(kMetaCompactStats) + def +
                R"({"kind":"o","h":0,"c":2,"d":10,"t":90})"
                "\n" +
                st_line(1, 7, "output", 3, 100, kOutput, 1) +
                R"({"kind":"o","h":0,"d":10,"t":120})"
                "\n" +
                st_line(1, 9, "output", 4, 130, {1.0, kNan}, 0, "non_finite", 2) + end_line(2, 2));
  const auto full = write(
      "stats-full.jsonl",
      std::string(kMetaV4Stats) +
          R"({"kind":"operation","event_id":"infer-op-0-2","op":"matmul","static_id":"op:1","inputs":[],"step":0,"duration_ns":10,"start_ns":90,"thread":0})"
          "\n" +
          stats_line(7, "model.layers.0", "output", 3, 100, kOutput, 1) +
          R"({"kind":"operation","event_id":"infer-op-0-3","op":"matmul","static_id":"op:1","inputs":[],"step":0,"duration_ns":10,"start_ns":120,"thread":0})"
          "\n" +
          stats_line(9, "model.layers.0", "output", 4, 130, {1.0, kNan}, 0, "non_finite", 2) +
          end_line(2, 2));
  // The metas differ only in the schema string and compact meta's schema reads as /4.
  const std::string a = log_of(compact), b = log_of(full);
  EXPECT_EQ(a, b);
  EXPECT_THAT(a, HasSubstr("event_id=15:infer-stats-3-7"));
  EXPECT_THAT(a, HasSubstr("event_id=12:infer-op-0-3"));
  EXPECT_THAT(a, HasSubstr("index=2 reason=10:non_finite step=4 at_ns=130 thread=0"));
}

TEST(StatsTrace, EveryReadingPathGivesTheSameRecords) {
  std::string text = kMetaV4Stats;
  for (std::uint64_t i = 0; i < 40; ++i) {
    std::string l =
        stats_line(i + 1, "model.layers." + std::to_string(i % 4), i % 2 ? "grad" : "output", i,
                   100 * i, {static_cast<double>(i), -1.0, i % 5 ? 0.25 : kNan});
    // Every seventh line is not one the plain reader takes (a field of a later version holding an
    // object, an escaped path): the rest of its block goes to the simdjson stream.
    if (i % 7 == 3) l.insert(l.find(R"(,"of")"), R"(,"later":{"a":[1,2]})");
    if (i % 7 == 5) l.replace(l.find("model.layers."), 5, R"(\u006dodel)");
    text += l;
  }
  text += end_line(40);
  const auto p = write("stats-paths.jsonl", text);
  ReadOptions line;
  line.line_at_a_time = true;
  ReadOptions small;
  small.chunk_bytes = 700;  // block edges everywhere
  const std::string reference = log_of(p, line);
  EXPECT_NE(reference.find("path=14:model.layers.1"), std::string::npos);  // unescaped
  EXPECT_EQ(reference.find("\\u"), std::string::npos);
  EXPECT_EQ(log_of(p), reference);
  EXPECT_EQ(log_of(p, small), reference);
}

struct Bad {
  const char* name;
  std::string tail;  // the fields from `of` on, with the inconsistency
  const char* expected;
};

TEST(StatsTrace, EveryInconsistencyIsAnErrorNamingTheLine) {
  const std::string head =
      R"({"kind":"stats","event_id":"infer-stats-0-1","path":"model","step":0,"at_ns":1,"thread":0,"of":"output","reason":"sampled","dtype":"f32")";
  const std::string ok5 = R"(,"min":-1,"max":2,"mean":0.5,"rms":1.2,"abs_max":2)";
  const std::vector<Bad> cases = {
      {"elements", R"(,"shape":[2,3],"elements":5,"nan":0,"pos_inf":0,"neg_inf":0,"zeros":0)" + ok5,
       "stats `elements` 5 is not the product of `shape` [2,3]"},
      {"counts", R"(,"shape":[4],"elements":4,"nan":2,"pos_inf":2,"neg_inf":1,"zeros":0)" + ok5,
       "`nan` + `pos_inf` + `neg_inf` (2 + 2 + 1) exceeds `elements` 4"},
      {"zeros", R"(,"shape":[4],"elements":4,"nan":1,"pos_inf":0,"neg_inf":0,"zeros":4)" + ok5,
       "stats `zeros` 4 exceeds the 3 finite elements"},
      {"numbers-without-finite",
       R"(,"shape":[2],"elements":2,"nan":2,"pos_inf":0,"neg_inf":0,"zeros":0)" + ok5,
       "but no finite element"},
      {"finite-without-numbers",
       R"(,"shape":[2],"elements":2,"nan":1,"pos_inf":0,"neg_inf":0,"zeros":0)",
       "stats record has 1 finite elements but no `min`"},
      {"some-numbers",
       R"(,"shape":[2],"elements":2,"nan":0,"pos_inf":0,"neg_inf":0,"zeros":0,"min":1,"max":2)",
       "stats record is missing field `mean` (number)"},
      {"min-max",
       R"(,"shape":[2],"elements":2,"nan":0,"pos_inf":0,"neg_inf":0,"zeros":0,"min":3,"max":2,"mean":2.5,"rms":2.5,"abs_max":3})",
       "stats `min` 3 is greater than `max` 2"},
      {"mean",
       R"(,"shape":[2],"elements":2,"nan":0,"pos_inf":0,"neg_inf":0,"zeros":0,"min":1,"max":2,"mean":2.5,"rms":2.5,"abs_max":2})",
       "stats `mean` 2.5 lies outside [`min`, `max`] = [1, 2]"},
      {"abs-max",
       R"(,"shape":[2],"elements":2,"nan":0,"pos_inf":0,"neg_inf":0,"zeros":0,"min":-3,"max":2,"mean":0,"rms":2,"abs_max":2})",
       "stats `abs_max` 2 differs from max(|min|, |max|) = 3"},
      {"rms-low",
       R"(,"shape":[2],"elements":2,"nan":0,"pos_inf":0,"neg_inf":0,"zeros":0,"min":1,"max":2,"mean":1.5,"rms":1,"abs_max":2})",
       "stats `rms` 1 lies outside [|mean|, abs_max] = [1.5, 2]"},
      {"rms-high",
       R"(,"shape":[2],"elements":2,"nan":0,"pos_inf":0,"neg_inf":0,"zeros":0,"min":1,"max":2,"mean":1.5,"rms":2.5,"abs_max":2})",
       "stats `rms` 2.5 lies outside [|mean|, abs_max] = [1.5, 2]"},
  };
  for (const Bad& c : cases) {
    std::string tail = c.tail;
    if (tail.back() != '}') tail += "}";
    const auto p = write(std::string("stats-bad-") + c.name + ".jsonl",
                         std::string(kMetaV4Stats) + head + tail + "\n" + end_line(1));
    const std::string error = error_of(p);
    EXPECT_THAT(error, HasSubstr(p.filename().string() + ":2: ")) << c.name;
    EXPECT_THAT(error, HasSubstr(c.expected)) << c.name;
  }
}

TEST(StatsTrace, AgreementWithinTheTolerancePasses) {
  // f32 arithmetic: abs_max 2.0001 against max 2 is within a relative 1e-3, rms 1.4999 against
  // |mean| 1.5 too.
  const auto p = write(
      "stats-tolerance.jsonl",
      std::string(kMetaV4Stats) +
          R"({"kind":"stats","event_id":"infer-stats-0-1","path":"model","step":0,"at_ns":1,"thread":0,"of":"output","reason":"sampled","dtype":"bf16","shape":[2],"elements":2,"nan":0,"pos_inf":0,"neg_inf":0,"zeros":0,"min":1,"max":2,"mean":1.5,"rms":1.4999,"abs_max":2.0001})"
          "\n" +
          end_line(1));
  RecordSink sink;
  EXPECT_EQ(read_trace(p, sink).stats, 1u);
}

TEST(StatsTrace, MissingAndWrongFieldsAreErrorsNamingTheLine) {
  const auto no_of = write(
      "stats-no-of.jsonl",
      std::string(kMetaV4Stats) +
          R"({"kind":"stats","event_id":"infer-stats-0-1","path":"model","step":0,"at_ns":1,"thread":0,"reason":"sampled","dtype":"f32","shape":[1],"elements":1,"nan":1,"pos_inf":0,"neg_inf":0,"zeros":0})"
          "\n" +
          end_line(1));
  EXPECT_THAT(error_of(no_of), HasSubstr("stats-no-of"));
  EXPECT_THAT(error_of(no_of), HasSubstr(":2: stats record is missing field `of`"));
  const auto bad_of = write(
      "stats-bad-of.jsonl",
      std::string(kMetaV4Stats) +
          R"({"kind":"stats","event_id":"infer-stats-0-1","path":"model","step":0,"at_ns":1,"thread":0,"of":"input","reason":"sampled","dtype":"f32","shape":[1],"elements":1,"nan":1,"pos_inf":0,"neg_inf":0,"zeros":0})"
          "\n" +
          end_line(1));
  EXPECT_THAT(error_of(bad_of),
              HasSubstr(":2: stats `of` is `input` (expected \"output\" or \"grad\")"));
  const auto bad_reason = write(
      "stats-bad-reason.jsonl",
      std::string(kMetaV4Stats) +
          R"({"kind":"stats","event_id":"infer-stats-0-1","path":"model","step":0,"at_ns":1,"thread":0,"of":"grad","reason":"always","dtype":"f32","shape":[1],"elements":1,"nan":1,"pos_inf":0,"neg_inf":0,"zeros":0})"
          "\n" +
          end_line(1));
  EXPECT_THAT(error_of(bad_reason), HasSubstr(":2: stats `reason` is `always`"));
  const auto thread =
      write("stats-thread.jsonl", std::string(kMetaV4Stats) +
                                      stats_line(1, "model", "output", 0, 1, kOutput, 70000) +
                                      end_line(1));
  EXPECT_THAT(error_of(thread), HasSubstr(":2: runtime/4 stats `thread` 70000 is past 65535"));
}

TEST(StatsTrace, EndStatsCountIsCheckedLikeModules) {
  const auto p = write("stats-end.jsonl",
                       std::string(kMetaV4Stats) + stats_line(1, "model", "output", 0, 1, kOutput) +
                           stats_line(2, "model", "output", 1, 2, kOutput) + end_line(3));
  EXPECT_THAT(error_of(p), HasSubstr("stats-end-"));
  EXPECT_THAT(error_of(p), HasSubstr(":4: end record counts 0 operations and 0 edge_timings and 3 "
                                     "stats but the trace has 0 and 0 and 2"));
  // A trace whose end leaves `stats` out while it has stats lines is damaged the same way.
  const auto absent = write(
      "stats-end-absent.jsonl",
      std::string(kMetaV4Stats) + stats_line(1, "model", "output", 0, 1, kOutput) +
          R"({"kind":"end","operations":0,"edge_timings":0,"dropped":0,"errors":0,"open_operations":0,"threads":1,"duration_ns":10})"
          "\n");
  EXPECT_THAT(error_of(absent), HasSubstr("and 0 stats but the trace has 0 and 0 and 1"));
  ReadOptions lenient;
  lenient.lenient = true;
  RecordSink sink;
  const TraceInfo info = read_trace(p, sink, lenient);
  EXPECT_TRUE(info.end_counts_disagree);
  EXPECT_EQ(info.stats, 2u);
}

TEST(StatsTrace, LenientSkipsABadStatsLineAndKeepsTheRest) {
  const auto p = write(
      "stats-lenient.jsonl",
      std::string(kMetaV4Stats) + stats_line(1, "model", "output", 0, 1, kOutput) +
          R"({"kind":"stats","event_id":"infer-stats-0-2","path":"model","step":0,"at_ns":2,"thread":0,"of":"output","reason":"sampled","dtype":"f32","shape":[3],"elements":2,"nan":2,"pos_inf":0,"neg_inf":0,"zeros":0})"
          "\n" +
          stats_line(3, "model", "output", 0, 3, kOutput) + end_line(3));
  ReadOptions lenient;
  lenient.lenient = true;
  auto loaded = read_traces({p}, lenient);
  const TraceInfo& info = loaded.front().info;
  EXPECT_EQ(info.skipped_lines, 1u);
  ASSERT_FALSE(info.skipped_examples.empty());
  EXPECT_EQ(info.skipped_examples.front().line, 3u);
  EXPECT_THAT(info.skipped_examples.front().reason, HasSubstr("not the product of `shape` [3]"));
  EXPECT_EQ(info.stats, 2u);
  EXPECT_TRUE(info.end_counts_disagree);  // end says 3: one line was lost
  EXPECT_EQ(loaded.front().aggregate.stats_records, 2u);
  // The merge's finding says which count disagrees.
  const MergePlan plan = plan_merge(loaded, Identity{}, NoModel{});
  bool said = false;
  for (const auto& f : plan.findings)
    said =
        said || (f.rule == "runtime-truncated" &&
                 f.message.find("it counts 3 stats records, the trace has 2") != std::string::npos);
  EXPECT_TRUE(said);
}

TEST(StatsTrace, StatsOutsideRuntime4AndBadCompactRefsAreErrors) {
  const auto v3 =
      write("stats-v3.jsonl",
            R"({"kind":"meta","schema":"candle-graph/runtime/3","entrypoint":"f","profile":"p"})"
            "\n" +
                stats_line(1, "model", "output", 0, 1, kOutput));
  EXPECT_THAT(error_of(v3), HasSubstr(":2: unknown record kind `stats` (it exists only in "
                                      "runtime/4"));
  const auto undefined =
      write("stats-undefined-h.jsonl",
            std::string(kMetaCompactStats) + st_line(4, 1, "output", 0, 1, kOutput) + end_line(1));
  EXPECT_THAT(error_of(undefined),
              HasSubstr(":2: `st` record refers to `h` 4, which no earlier def record defines"));
  const auto op_def =
      write("stats-op-def.jsonl",
            std::string(kMetaCompactStats) +
                R"({"kind":"def","h":0,"op":"matmul","static_id":"op:1","inputs":[]})"
                "\n" +
                st_line(0, 1, "output", 0, 1, kOutput) + end_line(1));
  EXPECT_THAT(error_of(op_def), HasSubstr(":3: `st` record refers to `h` 0, which is defined as "
                                          "an operation (expected a path)"));
  const auto no_th = write(
      "stats-no-th.jsonl",
      std::string(kMetaCompactStats) +
          R"({"kind":"def","h":1,"path":"model"})"
          "\n" +
          R"({"kind":"st","h":1,"c":1,"s":0,"t":5,"of":"output","reason":"sampled","dtype":"f32","shape":[1],"elements":1,"nan":1,"pos_inf":0,"neg_inf":0,"zeros":0})"
          "\n" +
          end_line(1));
  EXPECT_THAT(error_of(no_th), HasSubstr(":3: st record is missing field `th`"));
  // A repeated stats id is a duplicate like any other.
  const auto dup =
      write("stats-dup.jsonl", std::string(kMetaV4Stats) +
                                   stats_line(1, "model", "output", 0, 1, kOutput) +
                                   stats_line(1, "model", "output", 0, 2, kOutput) + end_line(2));
  EXPECT_THAT(error_of(dup), HasSubstr(":3: duplicate event_id `infer-stats-0-1`"));
}

}  // namespace
}  // namespace cg::runtime
