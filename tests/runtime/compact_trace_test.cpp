// runtime/4-compact/1 (docs/runtime-4.md, "Compact encoding"): the reader expands it into exactly
// the records the equivalent runtime/4 trace gives, so validation, merge and the Chrome export
// take it unchanged; malformed compact lines are errors naming the line.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "runtime/chrome_export.hpp"
#include "runtime/reader.hpp"
#include "trace_test_util.hpp"
#include "util/error.hpp"

namespace cg::runtime {
namespace {

using testing::fixture;
using testing::temp_dir;
using testing::write_temp;

// Every field of every record, as text, in file order.
struct Collect : RecordSink {
  std::vector<std::string> lines;
  static std::string opt(const std::optional<std::uint64_t>& v) {
    return v ? std::to_string(*v) : "-";
  }
  static std::string opt(const std::optional<std::string_view>& v) {
    return v ? std::string(*v) : "-";
  }
  void meta(const RunMeta& m) override {
    lines.push_back("meta " + std::string(schema_name(m.schema)) + " " + m.entrypoint + " " +
                    m.phase.value_or("-"));
  }
  void operation(const OperationRecord& o) override {
    lines.push_back("op " + std::string(o.event_id) + " " + std::string(o.op) + " " +
                    opt(o.static_id) + " out=" + opt(o.output) + " step=" + opt(o.step) +
                    " d=" + opt(o.duration_ns) + " t=" + opt(o.start_ns) + " th=" + opt(o.thread) +
                    " parent=" + opt(o.parent));
  }
  void edge_timing(const EdgeTimingRecord& e) override {
    lines.push_back("edge " + std::string(e.event_id) + " " + std::string(e.from_static_id) + " " +
                    std::string(e.to_static_id) + " d=" + std::to_string(e.duration_ns) +
                    " step=" + opt(e.step) + " at=" + opt(e.at_ns) + " th=" + opt(e.thread));
  }
  void end(const EndRecord& e) override {
    lines.push_back("end " + std::to_string(e.operations) + " " + std::to_string(e.edge_timings));
  }
};

std::vector<std::string> records(const std::filesystem::path& path) {
  Collect sink;
  (void)read_trace(path, sink);
  return sink.lines;
}

const char* kMeta =
    R"({"kind":"meta","schema":"candle-graph/runtime/4-compact/1","entrypoint":"main","profile":"release","cargo_features":[],"cfg":[],"phase":"train"})"
    "\n";
const char* kDef =
    R"({"kind":"def","h":0,"op":"matmul","static_id":"operation:train:f:0","inputs":["tensor:a"]})"
    "\n";

TEST(CompactTrace, ReadsAsTheSameRecordsAsItsRuntime4Equivalent) {
  const auto full = records(fixture("v4_two_threads.jsonl"));
  const auto compact = records(fixture("v4c_two_threads.jsonl"));
  ASSERT_EQ(full.size(), 7u);
  EXPECT_EQ(compact, full);
  EXPECT_EQ(compact[1],
            "op infer-op-0-2 matmul operation:infer:f:1 out=- step=0 d=1500 t=1200 th=0 "
            "parent=infer-op-0-1");
}

TEST(CompactTrace, ChromeExportTakesIt) {
  auto a = export_chrome_trace(fixture("v4_two_threads.jsonl"), temp_dir() / "full.json");
  auto b = export_chrome_trace(fixture("v4c_two_threads.jsonl"), temp_dir() / "compact.json");
  EXPECT_EQ(b.events, a.events);
  EXPECT_EQ(b.threads, a.threads);
  std::ifstream fa(temp_dir() / "full.json"), fb(temp_dir() / "compact.json");
  std::string ta((std::istreambuf_iterator<char>(fa)), {}),
      tb((std::istreambuf_iterator<char>(fb)), {});
  EXPECT_EQ(tb, ta);
}

// Left-out fields: the thread repeats the previous line's, the counter continues the thread's,
// the id step repeats the thread's, the end step is the id step, the parent step the id step.
TEST(CompactTrace, LeftOutFieldsFollowTheirThread) {
  const auto path =
      write_temp("compact-rules.jsonl",
                 std::string(kMeta) + kDef +
                     R"({"kind":"o","h":0,"s":5,"d":10,"t":100})"
                     "\n"
                     R"({"kind":"o","h":0,"th":3,"c":4097,"d":11,"t":101})"
                     "\n"
                     R"({"kind":"o","h":0,"e":7,"d":12,"t":102,"p":1,"o":"tensor:out"})"
                     "\n"
                     R"({"kind":"o","h":0,"th":0,"d":13,"t":103,"p":1,"ps":4})"
                     "\n"
                     R"({"kind":"end","operations":4,"edge_timings":0,"dropped":0,"errors":0,)"
                     R"("open_operations":0,"threads":2,"duration_ns":200})"
                     "\n");
  const auto got = records(path);
  ASSERT_EQ(got.size(), 6u);
  EXPECT_EQ(got[1],
            "op train-op-5-1 matmul operation:train:f:0 out=- step=5 d=10 t=100 th=0 parent=-");
  EXPECT_EQ(got[2],
            "op train-op-0-4097 matmul operation:train:f:0 out=- step=0 d=11 t=101 th=3 "
            "parent=-");
  EXPECT_EQ(got[3],
            "op train-op-0-4098 matmul operation:train:f:0 out=tensor:out step=7 d=12 t=102 th=3 "
            "parent=train-op-0-4097");
  EXPECT_EQ(got[4],
            "op train-op-5-2 matmul operation:train:f:0 out=- step=5 d=13 t=103 th=0 "
            "parent=train-op-4-1");
}

TEST(CompactTrace, MalformedCompactLinesAreErrorsNamingTheLine) {
  struct Case {
    std::string body;
    std::string message;
  };
  const std::vector<Case> cases = {
      {R"({"kind":"o","h":1,"d":1,"t":1})",
       "`o` record refers to `h` 1, which no earlier def record defines"},
      {R"({"kind":"e","h":0,"d":1,"t":1})",
       "`e` record refers to `h` 0, which is defined as an operation"},
      {R"({"kind":"o","h":0,"t":1})", "`d`"},
      {R"({"kind":"def","h":0,"op":"x","static_id":"y"})", "def `h` 0 is defined twice"},
      {R"({"kind":"o","h":0,"d":1,"t":1,"p":1})", "`o` record's parent offset"},
      {R"({"kind":"o","h":0,"th":70000,"d":1,"t":1})", "`o` record's `th` 70000"},
      {R"({"kind":"def","h":99999999,"op":"x","static_id":"y"})", "def `h` 99999999"},
  };
  for (const auto& c : cases) {
    const auto path = write_temp("compact-bad.jsonl", std::string(kMeta) + kDef + c.body + "\n");
    try {
      Collect sink;
      (void)read_trace(path, sink);
      ADD_FAILURE() << "accepted: " << c.body;
    } catch (const InputError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("compact-bad.jsonl:3: "), std::string::npos) << what;
      EXPECT_NE(what.find(c.message), std::string::npos) << what;
    }
  }
  // Compact kinds are unknown in a trace that did not declare the encoding.
  const auto plain =
      write_temp("compact-in-v4.jsonl",
                 std::string(R"({"kind":"meta","schema":"candle-graph/runtime/4",)"
                             R"("entrypoint":"main","profile":"release","phase":"train"})"
                             "\n") +
                     kDef);
  try {
    Collect sink;
    (void)read_trace(plain, sink);
    ADD_FAILURE() << "a def record was accepted in a runtime/4 trace";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("unknown record kind `def`"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace cg::runtime
