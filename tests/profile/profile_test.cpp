// The profiler as a training program sees it: what it writes for a scripted call sequence, under
// many threads, when the writer falls behind, and when the user gets something wrong.
#include "candle_graph/profile.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <optional>
#include <regex>
#include <stdexcept>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

#include "profile/trace_files.hpp"

namespace cg = candle_graph;
namespace fs = std::filesystem;

namespace {

using profile_test::field;
using profile_test::is_kind;
using profile_test::number;
using profile_test::read_lines;

fs::path scratch(const std::string& name) {
  return profile_test::scratch_file("cg-profile-test", name);
}

std::string mask_durations(const std::string& line) {
  static const std::regex duration(R"("duration_ns":\d+)");
  return std::regex_replace(line, duration, R"("duration_ns":D)");
}

cg::ProfileSession open_or_die(const fs::path& path, cg::ProfileConfig config) {
  auto session = cg::ProfileSession::open(path, std::move(config));
  if (!session) throw std::runtime_error("open failed: " + session.status().message());
  return std::move(session).value();
}

}  // namespace

// runtime/3 is line for line what the seed writes (serde field order, omitted optionals, compact
// output, one shared counter, step stamped at end); only durations differ.
TEST(ProfileV3, WritesTheSeedsLinesForAScriptedSession) {
  const fs::path path = scratch("v3/nested/dir/trace.jsonl");
  fs::remove_all(path.parent_path());
  auto config = cg::ProfileConfig::train("model::train_step");
  config.format = cg::TraceFormat::runtime_v3;
  config.cargo_features = {"cuda", "flash-attn"};
  config.analysis_id = "analysis:candle-graph%2Fbuild%2F1%3A0123456789abcdef";
  auto session = open_or_die(path, config);
  EXPECT_EQ(session.phase(), cg::Phase::train);

  const std::vector<std::string> inputs = {"tensor:a", "tensor:b"};
  auto id1 = session.begin_operation("operation:train:f:1", "matmul", inputs);
  ASSERT_TRUE(id1) << id1.status().message();
  EXPECT_EQ(id1.value(), "train-op-0-1");
  auto id2 = session.begin_operation("operation:train:f:2", "softmax");
  ASSERT_TRUE(id2);
  EXPECT_EQ(id2.value(), "train-op-0-2");
  session.set_step(3);
  EXPECT_EQ(session.step(), 3u);
  auto returned = session.end_operation(id2.value(), "out \"q\"\n\x01");
  ASSERT_TRUE(returned);
  ASSERT_TRUE(session.end_operation(id1.value()));
  ASSERT_TRUE(session.record_edge_timing("tensor:a", "operation:train:f:1", 42));
  auto unknown = session.end_operation("train-op-0-99");
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.status().code(), cg::Errc::unknown_operation);
  EXPECT_EQ(unknown.status().message(), "unknown profile operation `train-op-0-99`");
  auto id4 = session.begin_operation("operation:train:caf\xC3\xA9\xFF", "add");
  ASSERT_TRUE(id4);
  EXPECT_EQ(id4.value(), "train-op-3-4");
  ASSERT_TRUE(session.end_operation(id4.value()));
  auto done = session.finish();
  ASSERT_TRUE(done) << done.status().message();
  EXPECT_EQ(done.value(), path);

  const std::vector<std::string> expected = {
      R"({"kind":"meta","schema":"candle-graph/runtime/3","entrypoint":"model::train_step","profile":"release","cargo_features":["cuda","flash-attn"],"cfg":[],"analysis_id":"analysis:candle-graph%2Fbuild%2F1%3A0123456789abcdef","phase":"train"})",
      R"({"kind":"operation","event_id":"train-op-0-2","op":"softmax","static_id":"operation:train:f:2","inputs":[],"output":"out \"q\"\n\u0001","step":3,"duration_ns":D})",
      R"({"kind":"operation","event_id":"train-op-0-1","op":"matmul","static_id":"operation:train:f:1","inputs":["tensor:a","tensor:b"],"step":3,"duration_ns":D})",
      R"({"kind":"edge_timing","event_id":"train-edge-3-3","from_static_id":"tensor:a","to_static_id":"operation:train:f:1","duration_ns":D,"step":3})",
      "{\"kind\":\"operation\",\"event_id\":\"train-op-3-4\",\"op\":\"add\",\"static_id\":"
      "\"operation:train:caf\xC3\xA9\xEF\xBF\xBD\",\"inputs\":[],\"step\":3,\"duration_ns\":D}",
  };
  std::vector<std::string> lines = read_lines(path);
  for (auto& line : lines)
    line = mask_durations(line);
  EXPECT_EQ(lines, expected);
  EXPECT_EQ(field(read_lines(path)[3], "duration_ns"), "42");
  // The duration end_operation returned is the one written.
  EXPECT_EQ(field(read_lines(path)[1], "duration_ns"), std::to_string(returned.value()));
}

TEST(ProfileV3, InferSessionsUseTheInferPhaseAndBuildId) {
  const fs::path path = scratch("v3-infer.jsonl");
  auto config = cg::ProfileConfig::infer("model::generate");
  config.format = cg::TraceFormat::runtime_v3;
  config.profile = "debug";
  config.build_id = "candle-graph/build/1:0123456789abcdef";
  auto session = open_or_die(path, config);
  auto op = session.op("operation:infer:g:0", "embedding");
  ASSERT_TRUE(op);
  session.set_step(7);
  op.value().begin();
  op.value().end();
  ASSERT_TRUE(session.finish());
  std::vector<std::string> lines = read_lines(path);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(
      lines[0],
      R"({"kind":"meta","schema":"candle-graph/runtime/3","entrypoint":"model::generate","profile":"debug","cargo_features":[],"cfg":[],"build_id":"candle-graph/build/1:0123456789abcdef","phase":"infer"})");
  EXPECT_EQ(
      mask_durations(lines[1]),
      R"({"kind":"operation","event_id":"infer-op-7-1","op":"embedding","static_id":"operation:infer:g:0","inputs":[],"step":7,"duration_ns":D})");
}

TEST(ProfileV4, AddsTimelineFieldsParentsAndAnEndRecord) {
  const fs::path path = scratch("v4.jsonl");
  auto session = open_or_die(path, cg::ProfileConfig::train("model::train_step"));
  auto outer = session.op("operation:train:f:0", "linear").value();
  auto inner = session.op("operation:train:f:1", "matmul").value();
  outer.begin();
  inner.begin();
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  inner.end();
  auto by_id = session.begin_operation("operation:train:f:2", "add");
  ASSERT_TRUE(by_id);
  ASSERT_TRUE(session.end_operation(by_id.value()));
  outer.end();
  ASSERT_TRUE(session.record_edge_timing("operation:train:f:0", "operation:train:f:1", 5));
  ASSERT_TRUE(session.finish());

  std::vector<std::string> lines = read_lines(path);
  ASSERT_EQ(lines.size(), 6u);
  EXPECT_TRUE(is_kind(lines[0], "meta"));
  EXPECT_EQ(field(lines[0], "schema"), "candle-graph/runtime/4");
  EXPECT_EQ(field(lines[0], "clock"), "steady_clock");
  EXPECT_EQ(field(lines[0], "backpressure"), "block");
  // Records appear in the order operations ended on a thread.
  EXPECT_EQ(field(lines[1], "event_id"), "train-op-0-2");
  EXPECT_EQ(field(lines[1], "parent"), "train-op-0-1");
  EXPECT_GE(number(lines[1], "duration_ns"), 2'000'000u);
  EXPECT_EQ(field(lines[2], "event_id"), "train-op-0-3");
  EXPECT_EQ(field(lines[2], "parent"), "train-op-0-1");
  EXPECT_EQ(field(lines[3], "event_id"), "train-op-0-1");
  EXPECT_FALSE(field(lines[3], "parent").has_value());
  // The enclosing operation starts no later and ends no earlier than what it encloses.
  EXPECT_LE(number(lines[3], "start_ns"), number(lines[1], "start_ns"));
  EXPECT_GE(number(lines[3], "start_ns") + number(lines[3], "duration_ns"),
            number(lines[1], "start_ns") + number(lines[1], "duration_ns"));
  for (int i = 1; i <= 3; ++i)
    EXPECT_EQ(field(lines[static_cast<std::size_t>(i)], "thread"), "0");
  EXPECT_TRUE(is_kind(lines[4], "edge_timing"));
  EXPECT_EQ(field(lines[4], "event_id"), "train-edge-0-4");
  EXPECT_TRUE(field(lines[4], "at_ns").has_value());
  EXPECT_TRUE(is_kind(lines[5], "end"));
  EXPECT_EQ(number(lines[5], "operations"), 3u);
  EXPECT_EQ(number(lines[5], "edge_timings"), 1u);
  EXPECT_EQ(number(lines[5], "dropped"), 0u);
  EXPECT_EQ(number(lines[5], "errors"), 0u);
  EXPECT_EQ(number(lines[5], "open_operations"), 0u);
}

TEST(ProfileV4, FlushMakesRecordsVisibleBeforeFinish) {
  const fs::path path = scratch("flush.jsonl");
  auto session = open_or_die(path, cg::ProfileConfig::train("main"));
  auto op = session.op("operation:train:f:0", "relu").value();
  op.begin();
  op.end();
  ASSERT_TRUE(session.flush());
  std::vector<std::string> lines = read_lines(path);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_TRUE(is_kind(lines[1], "operation"));
  ASSERT_TRUE(session.finish());
  EXPECT_TRUE(is_kind(read_lines(path).back(), "end"));
}

TEST(ProfileV4, ManyThreadsLoseNoEventAndIdsAreUnique) {
  const fs::path path = scratch("threads.jsonl");
  auto config = cg::ProfileConfig::train("main");
  config.buffer_records_per_thread = 1024;  // small, so producers really wait for the writer
  auto session = open_or_die(path, config);
  constexpr int kThreads = 8;
  constexpr int kOps = 100'000;
  std::vector<cg::OpHandle> outer, inner;
  for (int t = 0; t < kThreads; ++t) {
    outer.push_back(session.op("operation:train:outer:" + std::to_string(t), "linear").value());
    inner.push_back(session.op("operation:train:inner:" + std::to_string(t), "matmul").value());
  }
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kOps; i += 2) {
        cg::ScopedOperation scope(outer[static_cast<std::size_t>(t)]);
        inner[static_cast<std::size_t>(t)].begin();
        inner[static_cast<std::size_t>(t)].end();
      }
    });
  }
  for (auto& th : threads)
    th.join();
  ASSERT_TRUE(session.finish());

  std::vector<std::string> lines = read_lines(path);
  ASSERT_EQ(lines.size(), 2u + kThreads * kOps);
  std::unordered_set<std::string> ids;
  std::unordered_set<std::string> thread_ids;
  std::size_t with_parent = 0;
  for (std::size_t i = 1; i + 1 < lines.size(); ++i) {
    ASSERT_TRUE(is_kind(lines[i], "operation")) << lines[i];
    ids.insert(*field(lines[i], "event_id"));
    thread_ids.insert(*field(lines[i], "thread"));
    if (field(lines[i], "parent")) ++with_parent;
  }
  EXPECT_EQ(ids.size(), static_cast<std::size_t>(kThreads * kOps));
  EXPECT_EQ(thread_ids.size(), static_cast<std::size_t>(kThreads));
  EXPECT_EQ(with_parent, static_cast<std::size_t>(kThreads * kOps / 2));
  const std::string& end = lines.back();
  ASSERT_TRUE(is_kind(end, "end"));
  EXPECT_EQ(number(end, "operations"), static_cast<std::uint64_t>(kThreads * kOps));
  EXPECT_EQ(number(end, "dropped"), 0u);
  // The main thread registered too, when it interned the handles.
  EXPECT_EQ(number(end, "threads"), static_cast<std::uint64_t>(kThreads + 1));
}

TEST(ProfileV4, DropPolicyCountsWhatItDiscards) {
  const fs::path path = scratch("drop.jsonl");
  auto config = cg::ProfileConfig::train("main");
  config.backpressure = cg::Backpressure::drop;
  config.buffer_records_per_thread = 16;
  auto session = open_or_die(path, config);
  auto op = session.op("operation:train:f:0", "matmul").value();
  constexpr std::uint64_t kOps = 200'000;
  for (std::uint64_t i = 0; i < kOps; ++i) {
    op.begin();
    op.end();
  }
  ASSERT_TRUE(session.finish());
  std::vector<std::string> lines = read_lines(path);
  EXPECT_EQ(field(lines.front(), "backpressure"), "drop");
  const std::string& end = lines.back();
  ASSERT_TRUE(is_kind(end, "end"));
  const std::uint64_t written = lines.size() - 2;
  EXPECT_EQ(number(end, "operations"), written);
  EXPECT_EQ(number(end, "dropped") + written, kOps);
  EXPECT_GT(number(end, "dropped"), 0u);
}

TEST(ProfileErrors, UnknownEventIdIsAnErrorCountedInTheEndRecord) {
  const fs::path path = scratch("unknown.jsonl");
  auto session = open_or_die(path, cg::ProfileConfig::infer("main"));
  auto id = session.begin_operation("operation:infer:f:0", "matmul");
  ASSERT_TRUE(id);
  ASSERT_TRUE(session.end_operation(id.value()));
  auto twice = session.end_operation(id.value());
  ASSERT_FALSE(twice);
  EXPECT_EQ(twice.status().message(), "unknown profile operation `infer-op-0-1`");
  // Returned errors do not poison finish(), as in the seed, but the trace records them.
  ASSERT_TRUE(session.finish());
  EXPECT_EQ(number(read_lines(path).back(), "errors"), 1u);
}

TEST(ProfileErrors, OpenFailsClearlyOnAnUnwritablePath) {
  const fs::path blocker = scratch("blocker");
  std::ofstream(blocker) << "a file, not a directory";
  auto under_file =
      cg::ProfileSession::open(blocker / "trace.jsonl", cg::ProfileConfig::train("m"));
  ASSERT_FALSE(under_file);
  EXPECT_EQ(under_file.status().code(), cg::Errc::io_error);
  EXPECT_NE(under_file.status().message().find("create profile dir " + blocker.string()),
            std::string::npos)
      << under_file.status().message();

  auto directory = cg::ProfileSession::open(blocker.parent_path(), cg::ProfileConfig::train("m"));
  ASSERT_FALSE(directory);
  EXPECT_EQ(directory.status().message().rfind("open profile trace ", 0), 0u)
      << directory.status().message();

  if (fs::exists("/dev/full")) {
    auto full = cg::ProfileSession::open("/dev/full", cg::ProfileConfig::train("m"));
    ASSERT_FALSE(full);
    EXPECT_EQ(full.status().message().rfind("write profile trace /dev/full: ", 0), 0u)
        << full.status().message();
  }
}

TEST(ProfileErrors, HandleEndedWhereItIsNotOpenIsStickyAndReportedByFinish) {
  const fs::path path = scratch("sticky.jsonl");
  auto session = open_or_die(path, cg::ProfileConfig::train("main"));
  auto op = session.op("operation:train:f:9", "matmul").value();
  op.end();
  op.begin();
  op.end();
  auto done = session.finish();
  ASSERT_FALSE(done);
  EXPECT_EQ(done.status().code(), cg::Errc::unbalanced);
  EXPECT_EQ(done.status().message(),
            "end of operation `operation:train:f:9` on a thread where it is not open");
  std::vector<std::string> lines = read_lines(path);
  EXPECT_EQ(number(lines.back(), "operations"), 1u);
  EXPECT_EQ(number(lines.back(), "errors"), 1u);
  auto again = session.finish();
  ASSERT_FALSE(again);
  EXPECT_EQ(again.status().code(), cg::Errc::finished);
}

TEST(ProfileApi, TimedOperationEndsItsOperation) {
  const fs::path path = scratch("timed.jsonl");
  auto session = open_or_die(path, cg::ProfileConfig::train("main"));
  {
    auto timed = cg::TimedOperation::begin(session, "operation:train:f:0", "softmax");
    ASSERT_TRUE(timed);
    EXPECT_EQ(timed.value().event_id(), "train-op-0-1");
  }
  ASSERT_TRUE(session.finish());
  std::vector<std::string> lines = read_lines(path);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(field(lines[1], "event_id"), "train-op-0-1");
  EXPECT_EQ(number(lines[2], "open_operations"), 0u);
}

TEST(ProfileApi, OperationsLeftOpenAreCountedNotLost) {
  const fs::path path = scratch("open.jsonl");
  auto session = open_or_die(path, cg::ProfileConfig::train("main"));
  ASSERT_TRUE(session.begin_operation("operation:train:f:0", "matmul"));
  session.op("operation:train:f:1", "add").value().begin();
  ASSERT_TRUE(session.finish());
  EXPECT_EQ(number(read_lines(path).back(), "open_operations"), 2u);
}

TEST(ProfileApi, StringOperationEndedOnAnotherThreadLeavesNoStaleParent) {
  const fs::path path = scratch("cross-thread.jsonl");
  auto session = open_or_die(path, cg::ProfileConfig::train("main"));
  auto id = session.begin_operation("operation:train:f:0", "matmul").value();
  std::thread([&] { ASSERT_TRUE(session.end_operation(id)); }).join();
  auto op = session.op("operation:train:f:1", "add").value();
  op.begin();
  op.end();
  ASSERT_TRUE(session.finish());
  // Records from different threads' buffers interleave in no fixed order (docs/runtime-4.md).
  std::vector<std::string> lines = read_lines(path);
  ASSERT_EQ(lines.size(), 4u);
  std::string by_id, handle;
  for (const auto& line : lines) {
    if (field(line, "event_id") == "train-op-0-1") by_id = line;
    if (field(line, "event_id") == "train-op-0-2") handle = line;
  }
  EXPECT_EQ(field(by_id, "thread"), "0");  // the thread it began on: its timeline track
  EXPECT_FALSE(field(handle, "parent").has_value()) << handle;
}

// The beginning thread and another one end the same string-API operation at the same moment:
// exactly one of them gets its duration and the trace holds it once; the other gets
// unknown_operation, counted in `end.errors`. (The beginning thread's end takes no lock and no
// read-modify-write; this is the race that protocol must settle.)
TEST(ProfileApi, RacingEndsOfOneStringOperationRecordItOnce) {
  const fs::path path = scratch("racing-ends.jsonl");
  auto session = open_or_die(path, cg::ProfileConfig::train("main"));
  constexpr int kRounds = 2000;
  std::atomic<int> round{-1};
  std::atomic<int> other_done{-1};
  std::string shared_id;
  std::atomic<int> other_wins{0};
  std::thread other([&] {
    for (int r = 0; r < kRounds; ++r) {
      while (round.load(std::memory_order_acquire) < r) {
      }
      if (session.end_operation(shared_id)) other_wins.fetch_add(1);
      other_done.store(r, std::memory_order_release);
    }
  });
  int own_wins = 0;
  for (int r = 0; r < kRounds; ++r) {
    auto id = session.begin_operation("operation:train:f:" + std::to_string(r % 7), "matmul");
    ASSERT_TRUE(id);
    shared_id = id.value().str();
    round.store(r, std::memory_order_release);
    if (session.end_operation(id.value())) ++own_wins;
    while (other_done.load(std::memory_order_acquire) < r) {
    }
  }
  other.join();
  EXPECT_EQ(own_wins + other_wins.load(), kRounds);
  ASSERT_TRUE(session.finish());
  const std::vector<std::string> lines = read_lines(path);
  std::unordered_set<std::string> ids;
  std::size_t operations = 0;
  for (const auto& line : lines) {
    if (!is_kind(line, "operation")) continue;
    ++operations;
    EXPECT_TRUE(ids.insert(*field(line, "event_id")).second) << "written twice: " << line;
  }
  EXPECT_EQ(operations, static_cast<std::size_t>(kRounds));
  EXPECT_EQ(number(lines.back(), "errors"), static_cast<std::uint64_t>(kRounds));
  EXPECT_EQ(number(lines.back(), "open_operations"), 0u);
}

TEST(ProfileApi, OverlappingHandleScopesCloseTheMatchingOne) {
  const fs::path path = scratch("overlap.jsonl");
  auto session = open_or_die(path, cg::ProfileConfig::train("main"));
  auto a = session.op("operation:train:f:a", "copy").value();
  auto b = session.op("operation:train:f:b", "copy").value();
  a.begin();
  b.begin();
  a.end();
  b.end();
  auto done = session.finish();
  ASSERT_TRUE(done) << done.status().message();
  std::vector<std::string> lines = read_lines(path);
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(field(lines[1], "static_id"), "operation:train:f:a");
  EXPECT_EQ(field(lines[2], "static_id"), "operation:train:f:b");
  EXPECT_EQ(field(lines[2], "parent"), "train-op-0-1");
}
