// Tensor statistics (docs/runtime-4.md, "Additions: tensor statistics"): what a program that
// records a module's output statistics gets in its trace, through the C++ API and the C ABI, in
// both runtime/4 encodings; the schedule it asks before computing; and the records it is refused.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <regex>
#include <stdexcept>
#include <string>
#include <vector>

#include "candle_graph/profile.hpp"
#include "candle_graph_profile.h"
#include "profile/trace_files.hpp"

namespace cg = candle_graph;
namespace fs = std::filesystem;

namespace {

using profile_test::field;
using profile_test::is_kind;
using profile_test::number;
using profile_test::read_lines;

fs::path scratch(const std::string& name) {
  return profile_test::scratch_file("cg-profile-stats", name);
}

cg::ProfileSession open_or_die(const fs::path& path, cg::ProfileConfig config) {
  auto session = cg::ProfileSession::open(path, std::move(config));
  if (!session) throw std::runtime_error("open failed: " + session.status().message());
  return std::move(session).value();
}

std::vector<std::string> of_kind(const std::vector<std::string>& lines, const std::string& kind) {
  std::vector<std::string> out;
  for (const auto& line : lines)
    if (is_kind(line, kind)) out.push_back(line);
  return out;
}

// The statistics of `values` as the docs define them, computed here in double precision.
cg::TensorStats stats_of(const std::vector<float>& values, std::vector<std::uint64_t> shape) {
  cg::TensorStats s;
  s.dtype = "f32";
  s.shape = std::move(shape);
  double sum = 0, squares = 0, lo = 0, hi = 0;
  std::uint64_t finite = 0;
  for (float v : values) {
    if (std::isnan(v)) {
      ++s.nan;
    } else if (std::isinf(v)) {
      ++(v > 0 ? s.pos_inf : s.neg_inf);
    } else {
      if (v == 0) ++s.zeros;
      lo = finite == 0 ? v : std::min(lo, double{v});
      hi = finite == 0 ? v : std::max(hi, double{v});
      sum += v;
      squares += double{v} * v;
      ++finite;
    }
  }
  if (finite != 0) {
    const double n = static_cast<double>(finite);
    s.finite = cg::FiniteStats{lo, hi, sum / n, std::sqrt(squares / n),
                               std::max(std::abs(lo), std::abs(hi))};
  }
  return s;
}

const float kNan = std::numeric_limits<float>::quiet_NaN();
const float kInf = std::numeric_limits<float>::infinity();

TEST(ProfileStats, OutputStatisticsAreOneLineInTheDocumentedOrder) {
  auto path = scratch("v4.jsonl");
  auto session = open_or_die(path, cg::ProfileConfig::infer("forward"));
  session.set_step(7);
  // A layer's output [2, 3] holding a NaN and a +Inf: the numbers cover the four finite elements.
  auto st = stats_of({1.5f, -3.0f, 0.0f, kNan, kInf, 2.0f}, {2, 3});
  ASSERT_TRUE(session.record_stats("model.layers.0.mlp", st).ok());
  auto grad = stats_of({0.25f, -0.5f}, {2});
  grad.of = cg::StatsOf::grad;
  ASSERT_TRUE(session.record_stats("model.layers.0.mlp.up_proj.weight", grad).ok());
  ASSERT_TRUE(session.finish());

  auto lines = read_lines(path);
  auto stats = of_kind(lines, "stats");
  ASSERT_EQ(stats.size(), 2u);
  const std::regex at(R"re("at_ns":\d+)re");
  const std::regex rms(R"re("rms":[0-9.]+)re");
  EXPECT_EQ(std::regex_replace(std::regex_replace(stats[0], at, "\"at_ns\":X"), rms, "\"rms\":R"),
            R"({"kind":"stats","event_id":"infer-stats-7-1","path":"model.layers.0.mlp",)"
            R"("of":"output","reason":"sampled","step":7,"at_ns":X,"thread":0,"dtype":"f32",)"
            R"("shape":[2,3],"elements":6,"nan":1,"pos_inf":1,"neg_inf":0,"zeros":1,)"
            R"("min":-3,"max":2,"mean":0.125,"rms":R,"abs_max":3})");
  // The shortest text that reads back as the very double given.
  EXPECT_EQ(std::stod(*field(stats[0], "rms")), st.finite->rms);
  EXPECT_EQ(field(stats[1], "of"), "grad");
  EXPECT_EQ(field(stats[1], "path"), "model.layers.0.mlp.up_proj.weight");
  EXPECT_EQ(field(stats[1], "mean"), "-0.125");
  // The end record counts them; meta says nothing about a schedule that was not set.
  EXPECT_EQ(number(lines.back(), "stats"), 2u);
  EXPECT_FALSE(field(lines.front(), "stats_every").has_value());
  EXPECT_EQ(field(lines.front(), "writer"), "candle-graph-profile/0.3.0");
}

TEST(ProfileStats, AllNonFiniteTensorHasNoNumbersAndAnIndexAndReasonWhenGiven) {
  auto path = scratch("nonfinite.jsonl");
  auto session = open_or_die(path, cg::ProfileConfig::train("train_step"));
  auto st = stats_of({kNan, -kInf, kNan}, {3});
  st.index = 1;  // the second tensor of a (keys, values) output
  st.reason = cg::StatsReason::non_finite;
  ASSERT_TRUE(session.record_child_stats("model.layers.1", "self_attn", st).ok());
  ASSERT_TRUE(session.finish());
  auto stats = of_kind(read_lines(path), "stats");
  ASSERT_EQ(stats.size(), 1u);
  EXPECT_EQ(field(stats[0], "path"), "model.layers.1.self_attn");
  EXPECT_EQ(number(stats[0], "index"), 1u);
  EXPECT_EQ(field(stats[0], "reason"), "non_finite");
  EXPECT_EQ(number(stats[0], "nan"), 2u);
  EXPECT_EQ(number(stats[0], "neg_inf"), 1u);
  for (const char* absent : {"min", "max", "mean", "rms", "abs_max"})
    EXPECT_FALSE(field(stats[0], absent).has_value()) << absent;
}

TEST(ProfileStats, TheScheduleAnswersByStepAndIsStatedInMeta) {
  auto path = scratch("schedule.jsonl");
  auto config = cg::ProfileConfig::train("train_step");
  config.stats_every = 10;
  config.stats_on_non_finite = true;
  auto session = open_or_die(path, config);
  session.set_step(20);
  EXPECT_EQ(session.stats_due(), cg::StatsDue::full);
  session.set_step(21);
  EXPECT_EQ(session.stats_due(), cg::StatsDue::non_finite_only);
  ASSERT_TRUE(session.finish());
  EXPECT_EQ(session.stats_due(), cg::StatsDue::none);  // nothing is recorded after finish
  auto lines = read_lines(path);
  EXPECT_EQ(number(lines.front(), "stats_every"), 10u);
  EXPECT_EQ(field(lines.front(), "stats_on_non_finite"), "true");
  // No stats line was written: `end` has no `stats` field, as before this addition.
  EXPECT_FALSE(field(lines.back(), "stats").has_value());

  auto plain = open_or_die(scratch("off.jsonl"), cg::ProfileConfig::train("train_step"));
  EXPECT_EQ(plain.stats_due(), cg::StatsDue::none);
  ASSERT_TRUE(plain.finish());
}

TEST(ProfileStats, InconsistentRecordsAreRefusedNamingTheFieldAndCounted) {
  auto path = scratch("refused.jsonl");
  auto session = open_or_die(path, cg::ProfileConfig::infer("forward"));
  auto good = stats_of({1.0f, 2.0f}, {2});
  struct Case {
    const char* expect;
    cg::TensorStats stats;
  };
  std::vector<Case> cases;
  auto with = [&](const char* expect, auto&& edit) {
    cg::TensorStats s = good;
    edit(s);
    cases.push_back({expect, s});
  };
  with("nan + pos_inf + neg_inf", [](cg::TensorStats& s) { s.nan = 3; });
  with("zeros exceeds", [](cg::TensorStats& s) { s.zeros = 3; });
  with("missing though some element is finite", [](cg::TensorStats& s) { s.finite.reset(); });
  with("no element is finite", [](cg::TensorStats& s) { s.nan = 2; });
  with("min exceeds max", [](cg::TensorStats& s) { std::swap(s.finite->min, s.finite->max); });
  with("mean lies outside", [](cg::TensorStats& s) { s.finite->mean = 5; });
  with("abs_max", [](cg::TensorStats& s) { s.finite->abs_max = 7; });
  with("rms lies outside", [](cg::TensorStats& s) { s.finite->rms = 0.5; });
  with("finite numbers", [](cg::TensorStats& s) { s.finite->rms = kInf; });
  with("dtype", [](cg::TensorStats& s) { s.dtype = "F32"; });
  for (const auto& c : cases) {
    auto status = session.record_stats("model.norm", c.stats);
    EXPECT_EQ(status.code(), cg::Errc::invalid_argument) << c.expect;
    EXPECT_NE(status.message().find(c.expect), std::string::npos) << status.message();
    EXPECT_NE(status.message().find("model.norm"), std::string::npos) << status.message();
  }
  ASSERT_TRUE(session.record_stats("model.norm", good).ok());
  ASSERT_TRUE(session.finish());
  auto lines = read_lines(path);
  EXPECT_EQ(of_kind(lines, "stats").size(), 1u);  // only the good one
  EXPECT_EQ(number(lines.back(), "errors"), cases.size());
  EXPECT_EQ(number(lines.back(), "stats"), 1u);
}

TEST(ProfileStats, CompactEncodingCarriesTheSameFieldsAndImpliesNothing) {
  auto path = scratch("compact.jsonl");
  auto config = cg::ProfileConfig::infer("forward");
  config.format = cg::TraceFormat::runtime_v4_compact;
  auto session = open_or_die(path, config);
  auto op = session.op("forward/op/matmul@1", "matmul");
  ASSERT_TRUE(op);
  op.value().begin();
  op.value().end();  // counter 1
  session.set_step(3);
  ASSERT_TRUE(session.record_stats("model.norm", stats_of({4.0f, -4.0f}, {1, 2})).ok());  // 2
  op.value().begin();
  op.value().end();  // counter 3: the `o` line must say so, as `st` implies nothing
  ASSERT_TRUE(session.finish());
  auto lines = read_lines(path);
  auto st = of_kind(lines, "st");
  ASSERT_EQ(st.size(), 1u);
  const std::regex t(R"re("t":\d+)re");
  EXPECT_EQ(std::regex_replace(st[0], t, "\"t\":X"),
            R"({"kind":"st","h":1,"th":0,"c":2,"s":3,"t":X,"of":"output","reason":"sampled",)"
            R"("dtype":"f32","shape":[1,2],"elements":2,"nan":0,"pos_inf":0,"neg_inf":0,)"
            R"("zeros":0,"min":-4,"max":4,"mean":0,"rms":4,"abs_max":4})");
  // Its path is defined before it, like a module scope's.
  bool defined = false;
  for (const auto& line : lines) {
    if (line == st[0]) break;
    if (line == R"({"kind":"def","h":1,"path":"model.norm"})") defined = true;
  }
  EXPECT_TRUE(defined);
  auto ops = of_kind(lines, "o");
  ASSERT_EQ(ops.size(), 2u);
  EXPECT_EQ(number(ops[1], "c"), 3u);
  EXPECT_EQ(number(lines.back(), "stats"), 1u);
}

TEST(ProfileStats, Runtime3SessionsRecordNothingAndStayTheSeeds) {
  auto with_stats = scratch("v3a.jsonl");
  auto without = scratch("v3b.jsonl");
  for (const auto& p : {with_stats, without}) {
    auto config = cg::ProfileConfig::infer("forward");
    config.format = cg::TraceFormat::runtime_v3;
    config.stats_every = 1;
    auto session = open_or_die(p, config);
    EXPECT_EQ(session.stats_due(), cg::StatsDue::none);
    if (p == with_stats) {
      EXPECT_TRUE(session.record_stats("model", stats_of({1.0f}, {1})).ok());
    }
    auto id = session.begin_operation("forward/op/relu@2", "relu");
    ASSERT_TRUE(id);
    ASSERT_TRUE(session.end_operation(id.value()));
    ASSERT_TRUE(session.finish());
  }
  auto a = read_lines(with_stats);
  auto b = read_lines(without);
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    const std::regex varying(R"re("duration_ns":\d+)re");
    EXPECT_EQ(std::regex_replace(a[i], varying, ""), std::regex_replace(b[i], varying, ""));
  }
}

TEST(ProfileStats, CAbiRecordsScheduleAndRefusesAnOldStruct) {
  auto path = scratch("c.jsonl");
  const std::string p = path.string();
  cgp_config config;
  cgp_config_init(&config, cgp_str{"forward", 7}, CGP_PHASE_INFER);
  cgp_open_options options;
  cgp_open_options_init(&options);
  options.stats_every = 2;
  cgp_session* session = nullptr;
  ASSERT_EQ(cgp_session_open_with(cgp_str{p.data(), p.size()}, &config, &options, &session),
            CGP_OK);
  cgp_session_set_step(session, 4);
  EXPECT_EQ(cgp_session_stats_due(session), CGP_STATS_DUE_FULL);
  cgp_session_set_step(session, 5);
  EXPECT_EQ(cgp_session_stats_due(session), CGP_STATS_DUE_NONE);

  const std::uint64_t shape[] = {2};
  cgp_tensor_stats st;
  cgp_tensor_stats_init(&st);
  st.dtype = cgp_str{"bf16", 4};
  st.shape = shape;
  st.rank = 1;
  st.has_finite = 1;
  st.min = -1;
  st.max = 1;
  st.mean = 0;
  st.rms = 1;
  st.abs_max = 1;
  const char parent[] = "model.layers.0";
  const char child[] = "q_proj";
  EXPECT_EQ(cgp_record_child_stats(session, cgp_str{parent, sizeof parent - 1},
                                   cgp_str{child, sizeof child - 1}, &st),
            CGP_OK);
  cgp_tensor_stats old = st;
  old.struct_size = sizeof(std::size_t);
  EXPECT_EQ(cgp_record_stats(session, cgp_str{parent, sizeof parent - 1}, &old),
            CGP_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(cgp_last_error()).find("cgp_tensor_stats_init"), std::string::npos);
  st.zeros = 5;
  EXPECT_EQ(cgp_record_stats(session, cgp_str{parent, sizeof parent - 1}, &st),
            CGP_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(cgp_last_error()).find("zeros"), std::string::npos);
  ASSERT_EQ(cgp_session_finish(session), CGP_OK);

  auto lines = read_lines(path);
  auto stats = of_kind(lines, "stats");
  ASSERT_EQ(stats.size(), 1u);
  EXPECT_EQ(field(stats[0], "path"), "model.layers.0.q_proj");
  EXPECT_EQ(field(stats[0], "dtype"), "bf16");
  EXPECT_EQ(number(stats[0], "step"), 5u);
  EXPECT_EQ(number(lines.front(), "stats_every"), 2u);
}

}  // namespace
