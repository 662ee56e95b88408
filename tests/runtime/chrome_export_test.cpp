#include "runtime/chrome_export.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <simdjson.h>

#include <fstream>
#include <map>

#include "trace_test_util.hpp"
#include "util/error.hpp"

namespace cg::runtime {
namespace {

using testing::fixture;
using testing::temp_dir;

struct Event {
  std::string name, ph, event_id, parent;
  double ts = 0, dur = 0;
  std::uint64_t pid = 0, tid = 0;
  std::string process;  // process_name's name
};

std::vector<Event> parse_events(const std::filesystem::path& path) {
  simdjson::dom::parser parser;
  simdjson::dom::element root = parser.load(path.string());
  std::vector<Event> out;
  for (simdjson::dom::element e : root["traceEvents"].get_array()) {
    Event ev;
    ev.name = std::string(e["name"].get_string().value());
    ev.ph = std::string(e["ph"].get_string().value());
    ev.pid = e["pid"].get_uint64().value();
    if (ev.ph == "M" && ev.name == "process_name")
      ev.process = std::string(e["args"]["name"].get_string().value());
    if (ev.ph == "X") {
      ev.ts = e["ts"].get_double().value();
      ev.dur = e["dur"].get_double().value();
      ev.tid = e["tid"].get_uint64().value();
      ev.event_id = std::string(e["args"]["event_id"].get_string().value());
      std::string_view parent;
      if (!e["args"]["parent"].get_string().get(parent)) ev.parent = std::string(parent);
    } else if (ev.ph == "M" && ev.name == "thread_name") {
      ev.tid = e["tid"].get_uint64().value();
    }
    out.push_back(ev);
  }
  return out;
}

TEST(ChromeExport, OperationsBecomeNestedCompleteEventsPerThread) {
  auto out = temp_dir() / "chrome" / "trace.json";
  auto result = export_chrome_trace(fixture("v4_two_threads.jsonl"), out);
  EXPECT_EQ(result.events, 5u);  // 4 operations + 1 edge
  EXPECT_EQ(result.threads, 2u);
  auto events = parse_events(out);
  std::map<std::string, Event> by_id;
  std::set<std::uint64_t> named_threads;
  for (const auto& e : events) {
    if (e.ph == "X") by_id[e.event_id] = e;
    if (e.ph == "M" && e.name == "thread_name") named_threads.insert(e.tid);
  }
  EXPECT_EQ(named_threads, (std::set<std::uint64_t>{0, 1}));
  ASSERT_EQ(by_id.size(), 4u);
  // µs with ns precision: start_ns 1200 → 1.2, duration 1500 ns → 1.5.
  EXPECT_DOUBLE_EQ(by_id["infer-op-0-2"].ts, 1.2);
  EXPECT_DOUBLE_EQ(by_id["infer-op-0-2"].dur, 1.5);
  for (const auto& [id, e] : by_id) {
    if (e.parent.empty()) continue;
    const Event& p = by_id.at(e.parent);
    EXPECT_EQ(p.tid, e.tid) << id;
    EXPECT_LE(p.ts, e.ts) << id;
    EXPECT_LE(e.ts + e.dur, p.ts + p.dur) << id;
  }
  // Children on one thread do not overlap each other.
  EXPECT_LE(by_id["infer-op-0-2"].ts + by_id["infer-op-0-2"].dur, by_id["infer-op-0-3"].ts);
}

// Every X event on a track lies inside, or wholly apart from, every other one there.
void expect_nesting_per_track(const std::vector<Event>& events) {
  std::vector<Event> xs;
  for (const auto& e : events)
    if (e.ph == "X") xs.push_back(e);
  for (const auto& x : xs) {
    for (const auto& y : xs) {
      if (&x == &y || x.pid != y.pid || x.tid != y.tid) continue;
      bool apart = x.ts + x.dur <= y.ts || y.ts + y.dur <= x.ts;
      bool x_in_y = y.ts <= x.ts && x.ts + x.dur <= y.ts + y.dur;
      bool y_in_x = x.ts <= y.ts && y.ts + y.dur <= x.ts + x.dur;
      EXPECT_TRUE(apart || x_in_y || y_in_x) << x.event_id << " and " << y.event_id;
    }
  }
}

TEST(ChromeExport, ModuleScopesAreNamedByPathAndNestAroundTheirOperations) {
  auto out = temp_dir() / "chrome" / "modules.json";
  auto result = export_chrome_trace(fixture("v4_modules.jsonl"), out);
  EXPECT_EQ(result.events, 7u);  // 6 module scopes + 1 operation
  std::map<std::string, Event> by_id;
  for (const auto& e : parse_events(out))
    if (e.ph == "X") by_id[e.event_id] = e;
  ASSERT_EQ(by_id.size(), 7u);
  EXPECT_EQ(by_id["infer-mod-0-3"].name, "model.layers.0.mlp");
  EXPECT_EQ(by_id["infer-mod-0-1"].name, "model");
  expect_nesting_per_track(parse_events(out));
  // The matmul at 3.5 µs runs inside layer 0's MLP (3–5 µs).
  EXPECT_LE(by_id["infer-mod-0-3"].ts, by_id["infer-op-0-4"].ts);
  EXPECT_TRUE(end_record_findings(result.trace).empty());
  TraceInfo damaged = result.trace;
  damaged.end->dropped = 3;
  damaged.end->open_operations = 2;
  auto said = end_record_findings(damaged);
  ASSERT_EQ(said.size(), 2u);
  EXPECT_THAT(said[0], ::testing::HasSubstr("3 events were dropped"));
  EXPECT_THAT(said[1], ::testing::HasSubstr("2 operations were begun and never ended"));
}

TEST(ChromeExport, OverlappingOperationsMoveToALaneWhereTheyNest) {
  // Operation b begins inside a and ends after it (legal in runtime/4: scopes need not nest).
  std::ifstream in(fixture("v4_modules.jsonl"));
  std::string meta;
  std::getline(in, meta);
  auto op = [](const std::string& id, int start, int dur) {
    return R"({"kind":"operation","event_id":")" + id +
           R"(","op":"matmul","static_id":"s","source":"src/model.rs:42","inputs":[],"step":0,"duration_ns":)" +
           std::to_string(dur) + R"(,"start_ns":)" + std::to_string(start) + R"(,"thread":3})" +
           "\n";
  };
  auto trace = testing::write_temp(
      "overlap.jsonl",
      meta + "\n" + op("infer-op-0-1", 1000, 2000) + op("infer-op-0-2", 2000, 2000) +
          op("infer-op-0-3", 2500, 100) +
          R"({"kind":"end","operations":3,"edge_timings":0,"dropped":0,"errors":0,"open_operations":0,"threads":1,"duration_ns":5000})" +
          "\n");
  auto out = temp_dir() / "chrome" / "overlap.json";
  auto result = export_chrome_trace(trace, out);
  EXPECT_EQ(result.events, 3u);
  auto events = parse_events(out);
  expect_nesting_per_track(events);
  std::map<std::string, Event> by_id;
  std::set<std::uint64_t> named;
  for (const auto& e : events) {
    if (e.ph == "X") by_id[e.event_id] = e;
    if (e.ph == "M" && e.name == "thread_name") named.insert(e.tid);
  }
  EXPECT_EQ(by_id["infer-op-0-1"].tid, 3u);
  EXPECT_NE(by_id["infer-op-0-2"].tid, 3u);  // moved off the thread's own track
  EXPECT_EQ(by_id["infer-op-0-3"].tid, 3u);  // nests in op 1 (2.5–2.6 µs inside 1–3 µs)
  EXPECT_TRUE(named.count(by_id["infer-op-0-2"].tid)) << "the lane track has a name";
  EXPECT_EQ(by_id["infer-op-0-1"].name, "matmul @ src/model.rs:42");
}

TEST(ChromeExport, NonV4AndTruncatedTracesLeaveNoOutput) {
  auto out = temp_dir() / "chrome_none.json";
  std::filesystem::remove(out);
  EXPECT_THROW(export_chrome_trace(fixture("v3_seed.jsonl"), out), InputError);
  EXPECT_FALSE(std::filesystem::exists(out));
  EXPECT_THROW(export_chrome_trace(fixture("v4_truncated.jsonl"), out), InputError);
  EXPECT_FALSE(std::filesystem::exists(out));
  // No temporary file is left behind either.
  for (const auto& entry : std::filesystem::directory_iterator(temp_dir())) {
    EXPECT_EQ(entry.path().filename().string().find("chrome_none.json.tmp"), std::string::npos);
  }
}

// Every distinct thread is remembered for its track name: past the limit the export fails with
// the line and the count, and leaves no output.
TEST(ChromeExport, DistinctThreadsPastTheLimitAreAnError) {
  std::ifstream in(fixture("v4_two_threads.jsonl"));
  std::string meta;
  std::getline(in, meta);
  std::string text = meta + "\n";
  for (int t = 0; t < 5; ++t) {
    text += R"({"kind":"operation","event_id":"infer-op-0-)" + std::to_string(t + 1) +
            R"(","op":"matmul","inputs":[],"step":0,"duration_ns":1,"start_ns":1,"thread":)" +
            std::to_string(t) + "}\n";
  }
  text += R"({"kind":"end","operations":5,"edge_timings":0,"dropped":0,"errors":0,)"
          R"("open_operations":0,"threads":5,"duration_ns":5})"
          "\n";
  auto trace = testing::write_temp("threads.jsonl", text);
  auto out = temp_dir() / "chrome_threads.json";
  std::filesystem::remove(out);
  EXPECT_EQ(export_chrome_trace(trace, out, {}, 5).threads, 5u);
  std::filesystem::remove(out);
  try {
    export_chrome_trace(trace, out, {}, 4);
    ADD_FAILURE() << "expected the limit";
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr(
                              "threads.jsonl:6: trace has more than 4 distinct `thread` values"));
  }
  EXPECT_FALSE(std::filesystem::exists(out));
}

// A runtime/4 trace of one rank: the v4_modules meta with its own pid and session start, and
// operations (start, duration) on thread 0, the second overlapping the first without nesting.
std::filesystem::path rank_trace(const std::string& name, const std::string& pid_and_start) {
  std::ifstream in(fixture("v4_modules.jsonl"));
  std::string meta;
  std::getline(in, meta);
  const std::string from = R"("start_unix_ns":1,"pid":7)";
  meta.replace(meta.find(from), from.size(), pid_and_start);
  auto op = [](const std::string& id, int start, int dur) {
    return R"({"kind":"operation","event_id":")" + id +
           R"(","op":"matmul","static_id":"s","inputs":[],"step":0,"duration_ns":)" +
           std::to_string(dur) + R"(,"start_ns":)" + std::to_string(start) + R"(,"thread":0})" +
           "\n";
  };
  return testing::write_temp(
      name,
      meta + "\n" + op("infer-op-0-1", 1000, 2000) + op("infer-op-0-2", 2000, 2000) +
          op("infer-op-0-3", 2500, 100) +
          R"({"kind":"end","operations":3,"edge_timings":0,"dropped":0,"errors":0,"open_operations":0,"threads":1,"duration_ns":5000})" +
          "\n");
}

std::map<std::uint64_t, std::string> process_names(const std::vector<Event>& events) {
  std::map<std::uint64_t, std::string> out;
  for (const auto& e : events)
    if (e.ph == "M" && e.name == "process_name") out[e.pid] = e.process;
  return out;
}

// Two ranks → two process tracks with their real pids, named by file, on one timeline: rank b's
// session started 5 µs after rank a's, so its operation at 1 µs lies at 6 µs.
TEST(ChromeExport, SeveralTracesBecomeProcessTracksAlignedBySessionStart) {
  auto a = rank_trace("rank_a.jsonl", R"("start_unix_ns":1764800000000000000,"pid":100)");
  auto b = rank_trace("rank_b.jsonl", R"("start_unix_ns":1764800000000005000,"pid":200)");
  auto out = temp_dir() / "chrome" / "ranks.json";
  auto result = export_chrome_traces({a, b}, out);
  EXPECT_EQ(result.events, 6u);
  EXPECT_TRUE(result.aligned);
  ASSERT_EQ(result.tracks.size(), 2u);
  EXPECT_EQ(result.tracks[0].pid, 100u);
  EXPECT_EQ(result.tracks[1].pid, 200u);
  EXPECT_EQ(result.tracks[1].offset_ns, 5000u);
  auto events = parse_events(out);
  expect_nesting_per_track(events);
  std::map<std::pair<std::uint64_t, std::string>, Event> by_id;
  for (const auto& e : events)
    if (e.ph == "X") by_id[{e.pid, e.event_id}] = e;
  ASSERT_EQ(by_id.size(), 6u);  // the same event ids in two processes stay apart
  EXPECT_DOUBLE_EQ((by_id[{100, "infer-op-0-1"}].ts), 1.0);
  EXPECT_DOUBLE_EQ((by_id[{200, "infer-op-0-1"}].ts), 6.0);
  EXPECT_DOUBLE_EQ((by_id[{200, "infer-op-0-3"}].ts), 7.5);
  auto names = process_names(events);
  ASSERT_EQ(names.size(), 2u);
  EXPECT_THAT(names[100], ::testing::HasSubstr("rank_a.jsonl"));
  EXPECT_THAT(names[100], ::testing::HasSubstr("pid 100"));
  EXPECT_THAT(names[200], ::testing::HasSubstr("rank_b.jsonl"));
  // Thread names belong to each process.
  std::set<std::uint64_t> named_in;
  for (const auto& e : events)
    if (e.ph == "M" && e.name == "thread_name" && e.tid == 0) named_in.insert(e.pid);
  EXPECT_EQ(named_in, (std::set<std::uint64_t>{100, 200}));
}

// Two traces with one pid (or none) would merge into one track: both get their position instead.
// Without start_unix_ns in every trace there is no common clock: each starts at 0.
TEST(ChromeExport, SharedOrMissingPidsFallBackToPositionsAndNoStartMeansNoAlignment) {
  auto a = rank_trace("same_a.jsonl", R"("start_unix_ns":1000,"pid":7)");
  auto b = rank_trace("same_b.jsonl", R"("pid":7)");
  auto out = temp_dir() / "chrome" / "same.json";
  auto result = export_chrome_traces({a, b}, out);
  EXPECT_FALSE(result.aligned);
  ASSERT_EQ(result.tracks.size(), 2u);
  EXPECT_EQ(result.tracks[0].pid, 1u);
  EXPECT_EQ(result.tracks[1].pid, 2u);
  auto events = parse_events(out);
  expect_nesting_per_track(events);
  for (const auto& e : events) {
    if (e.ph == "X" && e.event_id == "infer-op-0-1") {
      EXPECT_DOUBLE_EQ(e.ts, 1.0) << e.pid;
    }
  }
  auto names = process_names(events);
  EXPECT_THAT(names[1], ::testing::HasSubstr("same_a.jsonl (trace 1, pid 7)"));
  EXPECT_THAT(names[2], ::testing::HasSubstr("same_b.jsonl (trace 2, pid 7)"));
  // One bad trace among several: an error naming it, and no output.
  auto bad = temp_dir() / "chrome_bad_rank.json";
  std::filesystem::remove(bad);
  try {
    export_chrome_traces({a, fixture("v3_seed.jsonl")}, bad);
    ADD_FAILURE() << "expected an error";
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("v3_seed.jsonl"));
  }
  EXPECT_FALSE(std::filesystem::exists(bad));
}

// One trace keeps its own pid (meta.pid) and clock, and its process name is unchanged.
TEST(ChromeExport, OneTraceUsesItsOwnPid) {
  auto out = temp_dir() / "chrome" / "one.json";
  auto result = export_chrome_trace(fixture("v4_two_threads.jsonl"), out);
  ASSERT_EQ(result.tracks.size(), 1u);
  EXPECT_EQ(result.tracks[0].pid, 7u);
  EXPECT_EQ(process_names(parse_events(out)),
            (std::map<std::uint64_t, std::string>{{7, "candle-graph tiny::forward"}}));
}

}  // namespace
}  // namespace cg::runtime
