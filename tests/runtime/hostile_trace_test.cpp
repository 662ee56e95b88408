// Hostile traces (issue 36): records no profiler can write are input errors naming the file and
// the line — an interval past the clock's end, a parent cycle, a thread number past the writer's
// last, a repeated id behind the compact encoding, a Chrome trace nested past the reader's depth
// or with two event arrays — and the order a file lists parents and children in changes no
// figure.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "runtime/merge_plan.hpp"
#include "runtime/reader.hpp"
#include "runtime/record_log.hpp"
#include "runtime/tracing_chrome.hpp"
#include "trace_test_util.hpp"
#include "util/error.hpp"

namespace cg::runtime {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using testing::load;
using testing::write_temp;

const std::string kMeta =
    R"({"kind":"meta","schema":"candle-graph/runtime/4","entrypoint":"f","profile":"release","cargo_features":[],"cfg":[],"phase":"infer"})"
    "\n";

std::string op(const std::string& id, std::uint64_t start, std::uint64_t duration,
               const std::string& parent = "", std::uint64_t thread = 0,
               const std::string& sid = "s") {
  return R"({"kind":"operation","event_id":")" + id + R"(","op":"matmul","static_id":")" + sid +
         R"(","inputs":[],"step":0,"duration_ns":)" + std::to_string(duration) + R"(,"start_ns":)" +
         std::to_string(start) + R"(,"thread":)" + std::to_string(thread) +
         (parent.empty() ? "" : R"(,"parent":")" + parent + "\"") + "}\n";
}

std::string module(const std::string& id, const std::string& path, std::uint64_t start,
                   std::uint64_t duration, const std::string& parent = "") {
  return R"({"kind":"module","event_id":")" + id + R"(","path":")" + path +
         R"(","step":0,"duration_ns":)" + std::to_string(duration) + R"(,"start_ns":)" +
         std::to_string(start) + R"(,"thread":0)" +
         (parent.empty() ? "" : R"(,"parent":")" + parent + "\"") + "}\n";
}

std::string end(std::uint64_t operations, std::uint64_t modules = 0) {
  return R"({"kind":"end","operations":)" + std::to_string(operations) +
         R"(,"edge_timings":0,"dropped":0,"errors":0,"open_operations":0,"threads":1,"duration_ns":1)" +
         (modules ? R"(,"modules":)" + std::to_string(modules) + R"(,"open_modules":0)" : "") +
         "}\n";
}

std::string error_of(const std::filesystem::path& path, ReadOptions options = {}) {
  try {
    (void)load(path, options);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

ReadOptions lenient() {
  ReadOptions o;
  o.lenient = true;
  return o;
}

TEST(HostileTrace, AnIntervalPastTheClocksEndIsAnErrorNamingTheLine) {
  // 2^64 - 10 + 100: the operation would end past the clock's last value (it printed "200.0%").
  const auto path =
      write_temp("past_end.jsonl", kMeta + op("infer-op-0-1", 0, 50) +
                                       op("infer-op-0-2", 18446744073709551606u, 100) + end(2));
  EXPECT_THAT(error_of(path), AllOf(HasSubstr("past_end.jsonl:3"),
                                    HasSubstr("`start_ns` 18446744073709551606 + `duration_ns` "
                                              "100 is past 2^64-1 ns")));
  const auto scope =
      write_temp("past_end_module.jsonl",
                 kMeta + module("infer-mod-0-1", "model", ~std::uint64_t{0}, 1) + end(0, 1));
  EXPECT_THAT(error_of(scope), AllOf(HasSubstr("past_end_module.jsonl:2"), HasSubstr("module")));
  // --lenient skips the impossible record and says so; the rest is timed.
  const auto l = load(path, lenient());
  EXPECT_EQ(l.info.skipped_lines, 1u);
  EXPECT_EQ(l.info.span_ns, 50u);
}

TEST(HostileTrace, AParentCycleIsAnErrorNamingItsLinesInEveryMode) {
  const auto two =
      write_temp("cycle2.jsonl", kMeta + op("a", 10, 5, "b") + op("b", 10, 5, "a") + end(2));
  for (const ReadOptions& o : {ReadOptions{}, lenient()}) {
    EXPECT_THAT(error_of(two, o), AllOf(HasSubstr("cycle2.jsonl:3"), HasSubstr("parent cycle"),
                                        HasSubstr("operation `b` names parent `a` (line 2)")));
  }
  // Longer, listed in any order, and among well-nested records.
  const auto three =
      write_temp("cycle3.jsonl", kMeta + op("x", 0, 100) + op("c", 10, 5, "a") +
                                     op("a", 10, 5, "b") + op("b", 10, 5, "c") + end(4));
  EXPECT_THAT(error_of(three), AllOf(HasSubstr("cycle3.jsonl:5"), HasSubstr("parent cycle"),
                                     HasSubstr("`b` names parent `c` (line 3)")));
  const auto scopes =
      write_temp("cycle_modules.jsonl", kMeta + module("m1", "model", 0, 9, "m2") +
                                            module("m2", "model.layers.0", 0, 9, "m1") + end(0, 2));
  EXPECT_THAT(error_of(scopes), AllOf(HasSubstr("cycle_modules.jsonl:3"),
                                      HasSubstr("module scope `m2` names parent `m1` (line 2)")));
  // A record naming itself.
  const auto self = write_temp("cycle1.jsonl", kMeta + op("a", 10, 5, "a") + end(1));
  EXPECT_THAT(error_of(self),
              AllOf(HasSubstr("cycle1.jsonl:2"), HasSubstr("names itself as its parent")));
}

TEST(HostileTrace, SelfTimesAreTheSameWhateverOrderParentsAndChildrenAreListedIn) {
  // outer 0..100 holds inner 10..40 (which holds leaf 20..30) and inner2 50..70; a module scope
  // `model` 0..100 holds `model.layers.0` 10..40.
  const std::string outer = op("infer-op-0-1", 0, 100, "", 0, "outer");
  const std::string inner = op("infer-op-0-2", 10, 30, "infer-op-0-1", 0, "inner");
  const std::string leaf = op("infer-op-0-3", 20, 10, "infer-op-0-2", 0, "leaf");
  const std::string inner2 = op("infer-op-0-4", 50, 20, "infer-op-0-1", 0, "inner2");
  const std::string model = module("infer-mod-0-5", "model", 0, 100);
  const std::string layer = module("infer-mod-0-6", "model.layers.0", 10, 30, "infer-mod-0-5");
  const auto writers_order = write_temp(
      "children_first.jsonl", kMeta + leaf + inner + inner2 + outer + layer + model + end(4, 2));
  const auto parents_first = write_temp(
      "parents_first.jsonl", kMeta + model + outer + inner2 + layer + inner + leaf + end(4, 2));
  for (const auto& path : {writers_order, parents_first}) {
    SCOPED_TRACE(path.filename().string());
    const auto l = load(path);
    const auto& ops = l.aggregate.operations;
    EXPECT_EQ(ops.at("outer").self.total_ns(), 50u);
    EXPECT_EQ(ops.at("inner").self.total_ns(), 20u);
    EXPECT_EQ(ops.at("leaf").self.total_ns(), 10u);
    EXPECT_EQ(ops.at("inner2").self.total_ns(), 20u);
    EXPECT_EQ(l.aggregate.modules.at("model").self.total_ns(), 70u);
    EXPECT_EQ(l.aggregate.modules.at("model.layers.0").self.total_ns(), 30u);
    EXPECT_EQ(l.info.span_ns, 100u);
    // Every child lies inside its parent: nothing is out of order, whatever the listing.
    EXPECT_EQ(l.info.module_scopes_out_of_order, 0u);
  }
}

TEST(HostileTrace, ParentsListedFirstPastTheLimitAreAnInputError) {
  std::string text = kMeta;
  for (std::uint64_t p = 0; p < 3; ++p) {
    const std::string parent = "infer-op-0-" + std::to_string(10 * p + 1);
    text += op(parent, 100 * p, 50) +
            op("infer-op-0-" + std::to_string(10 * p + 2), 100 * p + 10, 5, parent);
  }
  const auto path = write_temp("parents_first_limit.jsonl", text + end(6));
  ReadOptions o;
  o.max_compared_event_ids = 2;
  EXPECT_THAT(error_of(path, o),
              AllOf(HasSubstr("parents_first_limit.jsonl"),
                    HasSubstr("more than 2 operation parents listed before their children")));
  EXPECT_EQ(load(path).aggregate.operations.at("s").self.total_ns(), 3u * 45u + 3u * 5u);
}

TEST(HostileTrace, AChildOutsideItsParentIsReportedAsUnderstatingTheParentsSelfTime) {
  // `model.layers.0` runs 5..25, its parent `model` only 10..30: the part outside (5 ns) is
  // subtracted from `model` all the same, so its self time is understated — what the warning says.
  const auto path =
      write_temp("outside.jsonl",
                 kMeta + module("infer-mod-0-1", "model", 10, 20) +
                     module("infer-mod-0-2", "model.layers.0", 5, 20, "infer-mod-0-1") + end(0, 2));
  std::vector<LoadedTrace> traces = read_traces({path});
  ASSERT_EQ(traces.size(), 1u);
  EXPECT_EQ(traces[0].info.module_scopes_out_of_order, 1u);
  // Counted per parent, whichever side of it its children are listed on.
  const auto two = write_temp(
      "outside_two.jsonl", kMeta + module("infer-mod-0-1", "model", 10, 20) +
                               module("infer-mod-0-2", "model.layers.0", 5, 10, "infer-mod-0-1") +
                               module("infer-mod-0-3", "model.layers.1", 25, 10, "infer-mod-0-1") +
                               end(0, 3));
  EXPECT_EQ(load(two).info.module_scopes_out_of_order, 1u);
  struct NoModel : StaticModel {
    bool has_operation(std::string_view) const override { return false; }
    bool has_tensor(std::string_view) const override { return false; }
    std::vector<std::string> parameters_for(std::string_view, std::string_view) const override {
      return {};
    }
    std::optional<std::string> module_of_operation(std::string_view) const override {
      return std::nullopt;
    }
  } model;
  const MergePlan plan = plan_merge(traces, Identity{}, model);
  std::string said;
  for (const auto& f : plan.findings)
    if (f.rule == "runtime-module-scopes") said += f.message;
  EXPECT_THAT(said, AllOf(HasSubstr("1 module scopes have a child scope lying partly outside"),
                          HasSubstr("understated")));
}

TEST(HostileTrace, AThreadPastTheWritersLastIsAnErrorNamingTheLine) {
  const auto path = write_temp(
      "thread_max.jsonl", kMeta + op("infer-op-0-1", 0, 5, "", 18446744073709551615u) + end(1));
  EXPECT_THAT(error_of(path), AllOf(HasSubstr("thread_max.jsonl:2"),
                                    HasSubstr("`thread` 18446744073709551615 is past 65535")));
  // The last thread number the profiler writes is read.
  const auto last =
      write_temp("thread_last.jsonl", kMeta + op("infer-op-0-1", 0, 5, "", 65535) + end(1));
  EXPECT_EQ(load(last).aggregate.thread_wall_ns(), (std::vector<std::uint64_t>{5}));
}

TEST(HostileTrace, ARepeatedIdBehindTheCompactEncodingNamesTheSecondLine) {
  // Both `o` lines expand to `infer-op-0-1` (thread 0, counter 1, step 0).
  const std::string meta =
      R"({"kind":"meta","schema":"candle-graph/runtime/4-compact/1","entrypoint":"main","profile":"release","cargo_features":[],"cfg":[],"phase":"infer"})"
      "\n";
  const std::string def = R"({"kind":"def","h":0,"op":"matmul","static_id":"s","inputs":[]})"
                          "\n";
  const auto path = write_temp("compact_dup.jsonl", meta + def +
                                                        R"({"kind":"o","h":0,"d":5,"t":10})"
                                                        "\n"
                                                        R"({"kind":"o","h":0,"c":1,"d":5,"t":20})"
                                                        "\n" +
                                                        end(2));
  EXPECT_THAT(error_of(path),
              AllOf(HasSubstr("compact_dup.jsonl:4"),
                    HasSubstr("duplicate event_id `infer-op-0-1` (first on line 3)")));
  // --lenient skips the second one and says so.
  const auto l = load(path, lenient());
  EXPECT_EQ(l.info.skipped_lines, 1u);
  ASSERT_EQ(l.info.skipped_examples.size(), 1u);
  EXPECT_EQ(l.info.skipped_examples[0].line, 4u);
  EXPECT_EQ(l.aggregate.operations.at("s").timing.samples(), 1u);
}

// ---- Chrome traces ----------------------------------------------------------------------------

std::string chrome_error(const std::filesystem::path& path, ReadOptions options = {}) {
  SpanCatalog catalog;
  TraceAggregate sink;
  try {
    (void)import_tracing_chrome(path, catalog, sink, options);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(HostileTrace, ChromeArgsNestedPastTheLimitSayTheNestingIsTooDeep) {
  std::string args;
  for (int i = 0; i < 2000; ++i)
    args += R"({"a":)";
  args += "1";
  for (int i = 0; i < 2000; ++i)
    args += "}";
  const std::string event =
      R"({"ph":"X","name":"m","ts":1,"dur":2,"pid":1,"tid":1,"args":)" + args + "}";
  const auto array = write_temp("deep.json", "[\n" + event + "\n]\n");
  for (const ReadOptions& o : {ReadOptions{}, lenient()}) {
    const std::string e = chrome_error(array, o);
    EXPECT_THAT(e, AllOf(HasSubstr("deep.json:2"), HasSubstr("nest deeper than 1024 levels"),
                         HasSubstr("byte offset")));
    EXPECT_THAT(e, ::testing::Not(HasSubstr("cut")));
  }
  const auto object = write_temp("deep_object.json", "{\"traceEvents\":[\n" + event + "\n]}\n");
  EXPECT_THAT(chrome_error(object),
              AllOf(HasSubstr("deep_object.json:2"), HasSubstr("nest deeper than 1024 levels")));
}

TEST(HostileTrace, ChromeTraceEventsTwiceIsAnErrorNamingTheKey) {
  const auto path = write_temp(
      "two_arrays.json",
      "{\"traceEvents\":[{\"ph\":\"X\",\"name\":\"m\",\"ts\":1,\"dur\":2,\"pid\":1,\"tid\":1}],\n"
      "\"displayTimeUnit\":\"ns\",\n\"traceEvents\":[]}\n");
  EXPECT_THAT(chrome_error(path),
              AllOf(HasSubstr("two_arrays.json:3"), HasSubstr("the key `traceEvents` 2 times")));
}

}  // namespace
}  // namespace cg::runtime
