// What the profiler costs its host beyond the hot path: the clock it trusts, memory per thread,
// a writer that sleeps when idle, refused configurations, and the string API's interning cache.
#include <cpuid.h>
#include <dirent.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "candle_graph/profile.hpp"
#include "candle_graph_profile.h"
#include "profile/trace_files.hpp"

namespace cg = candle_graph;
namespace fs = std::filesystem;

namespace {

using profile_test::field;
using profile_test::number;
using profile_test::read_lines;

fs::path scratch(const std::string& name) {
  return profile_test::scratch_file("cg-profile-res", name);
}

cg::ProfileSession open_or_die(const fs::path& path, cg::ProfileConfig config) {
  auto session = cg::ProfileSession::open(path, std::move(config));
  if (!session) throw std::runtime_error("open failed: " + session.status().message());
  return std::move(session).value();
}

bool cpu_has_invariant_tsc() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (static_cast<unsigned>(__get_cpuid_max(0x80000000u, nullptr)) < 0x80000007u) return false;
  return __get_cpuid(0x80000007u, &a, &b, &c, &d) && (d & (1u << 8)) != 0;
}

std::set<std::string> task_ids() {
  std::set<std::string> ids;
  for (const auto& entry : fs::directory_iterator("/proc/self/task"))
    ids.insert(entry.path().filename().string());
  return ids;
}

std::uint64_t voluntary_switches(const std::string& task) {
  std::ifstream status("/proc/self/task/" + task + "/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("voluntary_ctxt_switches:", 0) == 0) return std::stoull(line.substr(24));
  }
  return 0;
}

}  // namespace

// Durations read from the TSC and converted by the calibrated rate agree with steady_clock over
// sleeps of known length: never shorter than the sleep, never longer than steady_clock measured
// around the whole begin/end (plus 0.2% and 20 us for the calibration's documented bound).
TEST(ProfileClock, TscDurationsAgreeWithSteadyClockOverKnownSleeps) {
  for (cg::TimerKind kind : {cg::TimerKind::automatic, cg::TimerKind::steady_clock}) {
    const fs::path path = scratch("clock.jsonl");
    auto config = cg::ProfileConfig::train("main");
    config.timer = kind;
    auto session = open_or_die(path, config);
    auto handle = session.op("operation:train:f:sleep", "sleep").value();
    std::vector<std::pair<std::uint64_t, std::uint64_t>> bounds;  // (sleep, steady around)
    std::vector<std::uint64_t> returned;
    for (int ms : {5, 20, 60, 120}) {
      const auto sleep = std::chrono::milliseconds(ms);
      auto t0 = std::chrono::steady_clock::now();
      auto id = session.begin_operation("operation:train:f:sleep", "sleep").value();
      std::this_thread::sleep_for(sleep);
      returned.push_back(session.end_operation(id).value());
      auto t1 = std::chrono::steady_clock::now();
      handle.begin();
      std::this_thread::sleep_for(sleep);
      handle.end();
      auto t2 = std::chrono::steady_clock::now();
      const auto ns = [](auto d) {
        return static_cast<std::uint64_t>(
            std::chrono::duration_cast<std::chrono::nanoseconds>(d).count());
      };
      bounds.emplace_back(ns(sleep), ns(t1 - t0));
      bounds.emplace_back(ns(sleep), ns(t2 - t1));
    }
    ASSERT_TRUE(session.finish());
    const std::vector<std::string> lines = read_lines(path);
    const std::string expected_timer =
        kind == cg::TimerKind::automatic && cpu_has_invariant_tsc() ? "tsc" : "steady_clock";
    EXPECT_EQ(field(lines.front(), "timer"), expected_timer);
    ASSERT_EQ(lines.size(), 2 + bounds.size());
    // The second calibration, at finish: the TSC's conversion still agrees with steady_clock
    // (generously: within 1% of the session and 100 us).
    const std::string& end = lines.back();
    if (expected_timer == "tsc") {
      ASSERT_TRUE(field(end, "clock_error_ns")) << end;
      EXPECT_LE(number(end, "clock_error_ns"), number(end, "duration_ns") / 100 + 100'000) << end;
    } else {
      EXPECT_FALSE(field(end, "clock_error_ns")) << end;
    }
    for (std::size_t i = 0; i < bounds.size(); ++i) {
      const std::uint64_t d = number(lines[1 + i], "duration_ns");
      const auto [sleep_ns, around_ns] = bounds[i];
      EXPECT_GE(d + 20'000, sleep_ns) << expected_timer << " record " << i;
      EXPECT_LE(d, around_ns + around_ns / 500 + 20'000) << expected_timer << " record " << i;
      // The string API returns the same duration it writes.
      if (i % 2 == 0) {
        EXPECT_EQ(d, returned[i / 2]);
      }
    }
  }
}

// 1,000 short-lived threads, each timing one operation, leave a handful of buffers allocated (an
// exited thread's ring is reused once the writer has written it out), not one per thread: with
// the default 4 MiB rings that would be 4 GB. Counted, not timed: flush() between batches makes
// the writer drain and hand back the rings of the batch that just exited.
TEST(ProfileResources, ExitedThreadsHandTheirRingBack) {
  const fs::path path = scratch("short-threads.jsonl");
  auto config = cg::ProfileConfig::train("main");
  config.buffer_records_per_thread = 1u << 14;  // 1 MiB per ring
  auto session = open_or_die(path, config);
  auto op = session.op("operation:train:f:0", "relu").value();
  EXPECT_EQ(session.buffers_allocated(), 1u);  // this thread's, allocated when it interned
  constexpr int kThreads = 1000;
  constexpr int kAtOnce = 4;
  std::size_t most = 0;
  for (int batch = 0; batch < kThreads / kAtOnce; ++batch) {
    std::vector<std::thread> threads;
    for (int t = 0; t < kAtOnce; ++t)
      threads.emplace_back([&] {
        op.begin();
        op.end();
      });
    for (auto& th : threads)
      th.join();
    ASSERT_TRUE(session.flush());
    most = std::max(most, session.buffers_allocated());
  }
  // This thread's ring and one per thread alive at once.
  EXPECT_LE(most, static_cast<std::size_t>(1 + kAtOnce))
      << "1,000 short-lived threads left " << most << " rings allocated";
  ASSERT_TRUE(session.finish());
  const std::vector<std::string> lines = read_lines(path);
  const std::string& end = lines.back();
  EXPECT_EQ(number(end, "operations"), static_cast<std::uint64_t>(kThreads));
  EXPECT_EQ(number(end, "open_operations"), 0u);
  // Each OS thread still gets its own timeline track.
  EXPECT_EQ(number(end, "threads"), static_cast<std::uint64_t>(kThreads + 1));
  std::set<std::string> tracks;
  for (std::size_t i = 1; i + 1 < lines.size(); ++i)
    tracks.insert(*field(lines[i], "thread"));
  EXPECT_EQ(tracks.size(), static_cast<std::size_t>(kThreads));
}

// The bound on distinct ids: past it every API refuses a new id with an error naming the bound,
// ids already interned keep working, and each refusal is counted in `end.errors`.
TEST(ProfileResources, DistinctIdsPastTheBoundAreRefusedAndCounted) {
  const fs::path path = scratch("bound.jsonl");
  auto config = cg::ProfileConfig::train("main");
  config.max_distinct_ids = 3;
  auto session = open_or_die(path, config);
  ASSERT_TRUE(session.end_operation(session.begin_operation("s:0", "relu").value()));
  ASSERT_TRUE(session.record_edge_timing("s:0", "s:1", 5));
  ASSERT_TRUE(session.op("s:2", "gelu"));
  // The fourth distinct id, through each API.
  auto refused = session.begin_operation("s:3", "relu");
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.status().code(), cg::Errc::invalid_argument);
  EXPECT_NE(refused.status().message().find("max_distinct_ids"), std::string::npos)
      << refused.status().message();
  EXPECT_FALSE(session.record_edge_timing("s:0", "s:9", 5));
  EXPECT_FALSE(session.op("s:4", "gelu"));
  { cg::ModuleScope scope = session.module_scope("model.layers.0"); }
  // What was interned before still records.
  ASSERT_TRUE(session.end_operation(session.begin_operation("s:0", "relu").value()));
  ASSERT_TRUE(session.finish());
  const std::string end = read_lines(path).back();
  EXPECT_EQ(number(end, "errors"), 4u) << end;
  EXPECT_EQ(number(end, "operations"), 2u) << end;
  EXPECT_EQ(number(end, "edge_timings"), 1u) << end;

  config.max_distinct_ids = cg::kMaxDistinctIds + 1;
  auto too_many = cg::ProfileSession::open(scratch("bound-refused.jsonl"), config);
  ASSERT_FALSE(too_many);
  EXPECT_EQ(too_many.status().code(), cg::Errc::invalid_argument);
  EXPECT_NE(too_many.status().message().find("max_distinct_ids 4194305 is above"),
            std::string::npos)
      << too_many.status().message();
}

// The same bound from the C ABI, through the size-prefixed options of cgp_session_open_with
// (cgp_config's layout is unchanged): refusals are CGP_ERR_INVALID_ARGUMENT naming the bound and
// counted in `end.errors`; an older caller's smaller options leave the default in place; a bound
// above the limit is refused at open.
TEST(ProfileResources, DistinctIdsBoundFromTheCAbi) {
  const auto str = [](std::string_view s) { return cgp_str{s.data(), s.size()}; };
  cgp_config config;
  cgp_config_init(&config, str("main"), CGP_PHASE_TRAIN);
  cgp_open_options options;
  cgp_open_options_init(&options);
  EXPECT_EQ(options.max_distinct_ids, CGP_MAX_DISTINCT_IDS);
  options.max_distinct_ids = 2;
  const std::string path = scratch("bound-c.jsonl").string();
  cgp_session* s = nullptr;
  ASSERT_EQ(cgp_session_open_with(str(path), &config, &options, &s), CGP_OK) << cgp_last_error();
  const cgp_str inputs[] = {str("tensor:a")};
  char id[CGP_EVENT_ID_MAX];
  std::size_t id_len = 0;
  ASSERT_EQ(cgp_begin_operation(s, str("s:0"), str("relu"), inputs, 1, id, sizeof id, &id_len),
            CGP_OK);
  ASSERT_EQ(cgp_end_operation(s, cgp_str{id, id_len}, nullptr, nullptr), CGP_OK);
  cgp_op op = 0;
  ASSERT_EQ(cgp_session_op(s, str("s:1"), str("gelu"), nullptr, 0, &op), CGP_OK);
  EXPECT_EQ(cgp_begin_operation(s, str("s:2"), str("relu"), inputs, 1, id, sizeof id, &id_len),
            CGP_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(cgp_last_error()).find("max_distinct_ids"), std::string::npos)
      << cgp_last_error();
  EXPECT_EQ(cgp_record_edge_timing(s, str("s:0"), str("s:1"), 5), CGP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(cgp_session_op(s, str("s:3"), str("gelu"), nullptr, 0, &op), CGP_ERR_INVALID_ARGUMENT);
  ASSERT_EQ(cgp_session_finish(s), CGP_OK);
  const std::string end = read_lines(path).back();
  EXPECT_EQ(number(end, "errors"), 3u) << end;
  EXPECT_EQ(number(end, "operations"), 1u) << end;

  // A caller built when the options held only struct_size: the default bound applies.
  cgp_open_options old_caller{};
  old_caller.struct_size = sizeof old_caller.struct_size;
  old_caller.max_distinct_ids = 1;  // past its struct_size: not read
  ASSERT_EQ(cgp_session_open_with(str(path), &config, &old_caller, &s), CGP_OK);
  for (const char* sid : {"s:0", "s:1", "s:2"})
    ASSERT_EQ(cgp_session_op(s, str(sid), str("relu"), nullptr, 0, &op), CGP_OK) << sid;
  ASSERT_EQ(cgp_session_finish(s), CGP_OK);
  EXPECT_EQ(number(read_lines(path).back(), "errors"), 0u);

  options.max_distinct_ids = CGP_MAX_DISTINCT_IDS + 1;
  EXPECT_EQ(cgp_session_open_with(str(path), &config, &options, &s), CGP_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(cgp_last_error()).find("max_distinct_ids 4194305 is above"),
            std::string::npos)
      << cgp_last_error();
  options.struct_size = 0;  // never initialised
  EXPECT_EQ(cgp_session_open_with(str(path), &config, &options, &s), CGP_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(cgp_last_error()).find("struct_size"), std::string::npos);
}

// A thread that exits with an operation open: counted at finish, not lost, not double counted.
TEST(ProfileResources, ScopesLeftOpenByExitedThreadsAreCounted) {
  const fs::path path = scratch("exit-open.jsonl");
  auto session = open_or_die(path, cg::ProfileConfig::train("main"));
  auto op = session.op("operation:train:f:0", "relu").value();
  std::string by_id;
  std::thread([&] {
    op.begin();
    by_id = session.begin_operation("operation:train:f:1", "gelu").value();
  }).join();
  std::thread([&] { ASSERT_TRUE(session.end_operation(by_id)); }).join();
  std::thread([&] { (void)session.begin_operation("operation:train:f:2", "gelu").value(); }).join();
  ASSERT_TRUE(session.finish());
  const std::string end = read_lines(path).back();
  EXPECT_EQ(number(end, "operations"), 1u);
  EXPECT_EQ(number(end, "open_operations"), 2u);
}

// An idle session's writer sleeps until there is work instead of waking ~1,000 times a second.
TEST(ProfileResources, IdleWriterSleeps) {
  const fs::path path = scratch("idle.jsonl");
  const std::set<std::string> before = task_ids();
  auto session = open_or_die(path, cg::ProfileConfig::train("main"));
  // The writer is the new thread the library names (a sanitizer may start threads of its own).
  std::set<std::string> added;
  for (const auto& id : task_ids()) {
    std::ifstream comm("/proc/self/task/" + id + "/comm");
    std::string name;
    std::getline(comm, name);
    if (!before.contains(id) && name == "cg-profile-wr") added.insert(id);
  }
  ASSERT_EQ(added.size(), 1u) << "expected exactly one writer thread to start";
  const std::string writer = *added.begin();
  auto op = session.op("operation:train:f:0", "relu").value();
  op.begin();
  op.end();
  ASSERT_TRUE(session.flush());
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const std::uint64_t s0 = voluntary_switches(writer);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const std::uint64_t idle_wakeups = voluntary_switches(writer) - s0;
  EXPECT_LE(idle_wakeups, 5u) << "the idle writer woke " << idle_wakeups << " times in 0.5 s";
  // And it still wakes for work: a record published now is written without flush().
  op.begin();
  op.end();
  bool written = false;
  for (int i = 0; i < 200 && !written; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    written = read_lines(path).size() == 3;
  }
  EXPECT_TRUE(written) << "a record published to an idle writer was not written within 1 s";
  ASSERT_TRUE(session.finish());
}

// A huge per-thread buffer is refused at open with a clear error (it used to abort the host with
// an uncaught bad_alloc when the first thread registered); through the C ABI as well.
TEST(ProfileResources, HugeBufferIsRefusedAtOpen) {
  const fs::path path = scratch("huge.jsonl");
  auto config = cg::ProfileConfig::train("main");
  config.buffer_records_per_thread = std::size_t{1} << 40;
  auto session = cg::ProfileSession::open(path, config);
  ASSERT_FALSE(session);
  EXPECT_EQ(session.status().code(), cg::Errc::invalid_argument);
  EXPECT_NE(session.status().message().find("buffer_records_per_thread 1099511627776 is above"),
            std::string::npos)
      << session.status().message();
  EXPECT_FALSE(fs::exists(path));

  cgp_config c{};
  const std::string entry = "main", where = path.string();
  cgp_config_init(&c, cgp_str{entry.data(), entry.size()}, CGP_PHASE_TRAIN);
  c.buffer_records_per_thread = std::uint64_t{1} << 40;
  cgp_session* raw = nullptr;
  EXPECT_EQ(cgp_session_open(cgp_str{where.data(), where.size()}, &c, &raw),
            CGP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(raw, nullptr);
  EXPECT_NE(std::strstr(cgp_last_error(), "above the limit"), nullptr) << cgp_last_error();

  // The limit itself is accepted.
  config.buffer_records_per_thread = cg::kMaxBufferRecordsPerThread;
  auto at_limit = cg::ProfileSession::open(path, config);
  ASSERT_TRUE(at_limit) << at_limit.status().message();
  ASSERT_TRUE(at_limit.value().finish());
}

// The string API caches interned ids by address: a buffer reused for another id of the same
// length must not be taken for the old one, and fresh copies of an id hit by content.
TEST(ProfileStringApi, ReusedBuffersAndFreshCopiesKeepExactIds) {
  const fs::path path = scratch("string-cache.jsonl");
  auto config = cg::ProfileConfig::train("main");
  config.format = cg::TraceFormat::runtime_v3;
  auto session = open_or_die(path, config);
  char buffer[32];
  const std::vector<std::string> inputs = {"tensor:a"};
  for (const char* text : {"operation:train:f:1", "operation:train:f:2", "operation:train:f:1"}) {
    std::memcpy(buffer, text, std::strlen(text));
    const std::string_view id(buffer, std::strlen(text));
    auto event = session.begin_operation(id, "matmul", inputs).value();
    ASSERT_TRUE(session.end_operation(event));
  }
  // Same address and text, another op name or inputs: another operation.
  (void)session.end_operation(session.begin_operation("operation:train:f:1", "softmax").value());
  for (int i = 0; i < 3; ++i) {
    const std::string copy = std::string("operation:train:f:") + std::to_string(3 + i % 2);
    (void)session.end_operation(session.begin_operation(copy, "relu", inputs).value());
  }
  ASSERT_TRUE(session.finish());
  const std::vector<std::string> lines = read_lines(path);
  ASSERT_EQ(lines.size(), 8u);
  const std::vector<std::pair<std::string, std::string>> expected = {
      {"operation:train:f:1", "matmul"}, {"operation:train:f:2", "matmul"},
      {"operation:train:f:1", "matmul"}, {"operation:train:f:1", "softmax"},
      {"operation:train:f:3", "relu"},   {"operation:train:f:4", "relu"},
      {"operation:train:f:3", "relu"}};
  for (std::size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(field(lines[1 + i], "static_id"), expected[i].first) << lines[1 + i];
    EXPECT_EQ(field(lines[1 + i], "op"), expected[i].second) << lines[1 + i];
    EXPECT_EQ(field(lines[1 + i], "event_id"), "train-op-0-" + std::to_string(i + 1));
  }
  EXPECT_NE(lines[4].find("\"inputs\":[]"), std::string::npos) << lines[4];
}

// The string API's hit path (id cached on the thread, its slot free, ended innermost first
// without output) and its full path write the same trace: the C ABI takes the full path to begin
// when id_buf is shorter than CGP_EVENT_ID_MAX, and ends the outer operation (not the thread's
// last id) by parsing its text; the C++ API ends through the full path with an explicit
// `std::nullopt` output. Counters run past 9 and 99 (the id's digits carried) and the step changes.
TEST(ProfileStringApi, HitPathAndFullPathWriteTheSameTrace) {
  const auto operations = [](const fs::path& path) {
    static const std::regex timing(R"re("(start_ns|duration_ns)":\d+)re");
    std::vector<std::string> out;
    for (const std::string& line : read_lines(path)) {
      if (line.rfind("{\"kind\":\"operation\"", 0) == 0)
        out.push_back(std::regex_replace(line, timing, "\"$1\":T"));
    }
    return out;
  };
  const cgp_str input{"tensor:a", 8};
  const auto run_c = [&](const fs::path& path, std::size_t id_buf_len) {
    cgp_config config;
    cgp_config_init(&config, {"main", 4}, CGP_PHASE_TRAIN);
    cgp_session* s = nullptr;
    const std::string p = path.string();
    ASSERT_EQ(cgp_session_open({p.data(), p.size()}, &config, &s), CGP_OK);
    for (int i = 0; i < 120; ++i) {
      if (i % 50 == 0) cgp_session_set_step(s, static_cast<std::uint64_t>(i / 50));
      const std::string outer_id = "operation:train:f:outer" + std::to_string(i % 3);
      char outer[CGP_EVENT_ID_MAX], inner[CGP_EVENT_ID_MAX];
      std::size_t outer_len = 0, inner_len = 0;
      std::uint64_t ns = 0;
      ASSERT_EQ(cgp_begin_operation(s, {outer_id.data(), outer_id.size()}, {"block", 5}, &input, 1,
                                    outer, id_buf_len, &outer_len),
                CGP_OK);
      ASSERT_EQ(cgp_begin_operation(s, {"operation:train:f:inner", 23}, {"matmul", 6}, nullptr, 0,
                                    inner, id_buf_len, &inner_len),
                CGP_OK);
      ASSERT_EQ(cgp_end_operation(s, {inner, inner_len}, nullptr, &ns), CGP_OK);
      ASSERT_EQ(cgp_end_operation(s, {outer, outer_len}, nullptr, &ns), CGP_OK);
    }
    ASSERT_EQ(cgp_session_finish(s), CGP_OK);
  };
  run_c(scratch("hit-c.jsonl"), CGP_EVENT_ID_MAX);
  run_c(scratch("full-c.jsonl"), 24);
  {
    auto session = open_or_die(scratch("full-cpp.jsonl"), cg::ProfileConfig::train("main"));
    const std::vector<std::string> inputs = {"tensor:a"};
    for (int i = 0; i < 120; ++i) {
      if (i % 50 == 0) session.set_step(static_cast<std::uint64_t>(i / 50));
      const std::string outer_id = "operation:train:f:outer" + std::to_string(i % 3);
      auto outer = session.begin_operation(outer_id, "block", inputs).value();
      auto inner = session.begin_operation("operation:train:f:inner", "matmul").value();
      ASSERT_TRUE(session.end_operation(inner.view(), std::nullopt));
      ASSERT_TRUE(session.end_operation(outer, std::nullopt));
    }
    ASSERT_TRUE(session.finish());
  }
  const std::vector<std::string> hit = operations(scratch("hit-c.jsonl"));
  ASSERT_EQ(hit.size(), 240u);
  EXPECT_EQ(field(hit[0], "event_id"), "train-op-0-2");
  EXPECT_EQ(field(hit[0], "parent"), "train-op-0-1");
  EXPECT_EQ(field(hit.back(), "event_id"), "train-op-2-239");
  EXPECT_EQ(operations(scratch("full-c.jsonl")), hit);
  EXPECT_EQ(operations(scratch("full-cpp.jsonl")), hit);
}

// A cgp_op the session never returned for an operation (past the table, or an edge's or module
// path's index) does nothing through the C ABI: no record, no error, no crash.
TEST(ProfileStringApi, COpIndexThatIsNoOperationDoesNothing) {
  const fs::path path = scratch("c-op-index.jsonl");
  cgp_config config;
  cgp_config_init(&config, {"main", 4}, CGP_PHASE_TRAIN);
  cgp_session* s = nullptr;
  const std::string p = path.string();
  ASSERT_EQ(cgp_session_open({p.data(), p.size()}, &config, &s), CGP_OK);
  cgp_op matmul = 0;
  ASSERT_EQ(cgp_session_op(s, {"operation:train:f:1", 19}, {"matmul", 6}, nullptr, 0, &matmul),
            CGP_OK);
  ASSERT_EQ(cgp_record_edge_timing(s, {"tensor:a", 8}, {"operation:train:f:1", 19}, 5), CGP_OK);
  for (cgp_op bogus : {matmul + 1, matmul + 1000, cgp_op{4194303}, ~cgp_op{0}}) {
    cgp_op_begin(s, bogus);
    cgp_op_end(s, bogus);
  }
  cgp_op_begin(s, matmul);
  cgp_op_end(s, matmul);
  ASSERT_EQ(cgp_session_finish(s), CGP_OK);
  const std::vector<std::string> lines = read_lines(path);
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(number(lines.back(), "operations"), 1u) << lines.back();
  EXPECT_EQ(number(lines.back(), "errors"), 0u) << lines.back();
}

// Ending by the EventId begin_operation returned (its numbers, no text) and by the id's text give
// the same records; an id of another phase is unknown either way. A buffer reused for an id that
// differs only in its first or middle bytes (same length, same last word) is another operation.
TEST(ProfileStringApi, EndingByEventIdOrByItsTextIsTheSame) {
  const fs::path path = scratch("string-end.jsonl");
  auto session = open_or_die(path, cg::ProfileConfig::train("main"));
  auto outer = session.begin_operation("operation:train:f:outer", "block").value();
  auto inner = session.begin_operation("operation:train:f:inner", "matmul").value();
  const std::string inner_text = inner;
  // The outer one is not the thread's last id: by numbers here, by parsing for a std::string.
  ASSERT_TRUE(session.end_operation(outer));
  ASSERT_TRUE(session.end_operation(std::string_view(inner_text)));
  EXPECT_FALSE(session.end_operation(inner));  // already ended, whichever way it is named
  auto other = open_or_die(scratch("string-end-infer.jsonl"), cg::ProfileConfig::infer("main"));
  auto foreign = other.begin_operation("operation:infer:f:0", "relu").value();
  auto refused = session.end_operation(foreign);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.status().code(), cg::Errc::unknown_operation);
  ASSERT_TRUE(other.end_operation(foreign));
  ASSERT_TRUE(other.finish());
  char buffer[40];
  for (const char* text :
       {"operation:train:model.layers.0.attn:q", "xperation:train:model.layers.0.attn:q",
        "operation:train:model.layers.1.attn:q"}) {
    std::memcpy(buffer, text, std::strlen(text));
    auto id =
        session.begin_operation(std::string_view(buffer, std::strlen(text)), "matmul").value();
    ASSERT_TRUE(session.end_operation(id));
  }
  ASSERT_TRUE(session.finish());
  const std::vector<std::string> lines = read_lines(path);
  ASSERT_EQ(lines.size(), 7u);
  EXPECT_EQ(field(lines[1], "event_id"), "train-op-0-1");
  EXPECT_EQ(field(lines[1], "static_id"), "operation:train:f:outer");
  EXPECT_EQ(field(lines[2], "event_id"), "train-op-0-2");
  EXPECT_EQ(field(lines[2], "parent"), "train-op-0-1");
  EXPECT_EQ(field(lines[3], "static_id"), "operation:train:model.layers.0.attn:q");
  EXPECT_EQ(field(lines[4], "static_id"), "xperation:train:model.layers.0.attn:q");
  EXPECT_EQ(field(lines[5], "static_id"), "operation:train:model.layers.1.attn:q");
  EXPECT_EQ(number(lines.back(), "errors"), 2u) << lines.back();
}

// Long static ids (the 16-byte compare path, and past 128 bytes) reused in one buffer: an id that
// differs from the cached one only inside a middle word is another operation.
TEST(ProfileStringApi, LongIdsInAReusedBufferDifferingInTheMiddleAreDistinct) {
  const fs::path path = scratch("string-long.jsonl");
  auto session = open_or_die(path, cg::ProfileConfig::train("main"));
  std::vector<std::string> texts;
  for (std::size_t length : {100u, 150u}) {
    std::string a = "operation:train:" + std::string(length - 18, 'm') + ":0";
    std::string b = a;
    b[40] = 'x';  // only in a middle word, never in the first or the last one
    texts.push_back(a);
    texts.push_back(b);
    texts.push_back(a);
  }
  char buffer[160];
  for (const std::string& text : texts) {
    std::memcpy(buffer, text.data(), text.size());
    auto id = session.begin_operation(std::string_view(buffer, text.size()), "matmul").value();
    ASSERT_TRUE(session.end_operation(id));
  }
  ASSERT_TRUE(session.finish());
  const std::vector<std::string> lines = read_lines(path);
  ASSERT_EQ(lines.size(), texts.size() + 2);
  for (std::size_t i = 0; i < texts.size(); ++i)
    EXPECT_EQ(field(lines[1 + i], "static_id"), texts[i]) << i;
}

// An error's message survives copies and moves of its Status (the message is held by pointer, so
// that a successful call builds no string).
TEST(ProfileStringApi, ErrorMessagesSurviveCopiesAndMoves) {
  auto session = open_or_die(scratch("status-copy.jsonl"), cg::ProfileConfig::train("main"));
  auto refused = session.end_operation(std::string_view("train-op-0-99"));
  ASSERT_FALSE(refused);
  cg::Status copy = refused.status();
  cg::Status assigned;
  assigned = copy;
  cg::Status moved = std::move(copy);
  const cg::Status* all[] = {&refused.status(), &assigned, &moved};
  for (const cg::Status* s : all) {
    EXPECT_EQ(s->code(), cg::Errc::unknown_operation);
    EXPECT_EQ(s->message(), "unknown profile operation `train-op-0-99`");
  }
  EXPECT_TRUE(cg::Status().message().empty());
  ASSERT_TRUE(session.finish());
}

// Ids that merely look like ours are refused exactly as the seed refuses unknown ids.
TEST(ProfileStringApi, MalformedAndMismatchedIdsAreUnknown) {
  const fs::path path = scratch("string-ids.jsonl");
  auto session = open_or_die(path, cg::ProfileConfig::train("main"));
  session.set_step(3);
  auto id = session.begin_operation("operation:train:f:1", "matmul").value();
  ASSERT_EQ(id, "train-op-3-1");
  for (const char* bad : {"train-op-03-1", "train-op-2-1", "infer-op-3-1", "train-op-3-1x",
                          "train-op-3-01", "train-op-3-", "train-op--1", ""}) {
    auto r = session.end_operation(bad);
    ASSERT_FALSE(r) << bad;
    EXPECT_EQ(r.status().code(), cg::Errc::unknown_operation) << bad;
  }
  ASSERT_TRUE(session.end_operation(id));
  ASSERT_TRUE(session.finish());
  EXPECT_EQ(number(read_lines(path).back(), "errors"), 8u);
}

// More operations open at once than a thread has id slots (256): the rest are found through the
// shared table, from this thread and from another.
TEST(ProfileStringApi, ManyOpenIdsAreAllFound) {
  const fs::path path = scratch("string-many.jsonl");
  auto session = open_or_die(path, cg::ProfileConfig::train("main"));
  std::vector<std::string> ids;
  for (int i = 0; i < 2000; ++i)
    ids.push_back(
        session.begin_operation("operation:train:f:" + std::to_string(i % 7), "add").value());
  std::thread([&] {
    for (std::size_t i = 0; i < ids.size(); i += 2)
      ASSERT_TRUE(session.end_operation(ids[i])) << ids[i];
  }).join();
  for (std::size_t i = ids.size(); i-- > 1;)
    if (i % 2 == 1) {
      ASSERT_TRUE(session.end_operation(ids[i])) << ids[i];
    }
  ASSERT_TRUE(session.finish());
  const std::string end = read_lines(path).back();
  EXPECT_EQ(number(end, "operations"), 2000u);
  EXPECT_EQ(number(end, "open_operations"), 0u);
  EXPECT_EQ(number(end, "errors"), 0u);
}
