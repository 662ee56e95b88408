// runtime/4 `module` records and the compact encoding's `def`-path / `m` lines
// (docs/runtime-4.md, "Additions: module scopes"): read alike in both encodings and by every
// parsing path, validated, and folded into per-path inclusive/self times and per-thread busy time.
#include <gtest/gtest.h>

#include <string>

#include "runtime/aggregate.hpp"
#include "runtime/reader.hpp"
#include "runtime/record_log.hpp"
#include "trace_test_util.hpp"
#include "util/error.hpp"

namespace cg::runtime {
namespace {

using testing::fixture;
using testing::load;
using testing::write_temp;

std::string logged(const std::filesystem::path& path, ReadOptions options = {}) {
  RecordLog log;
  (void)read_trace(path, log, options);
  return log.text();
}

const std::string kMeta =
    R"({"kind":"meta","schema":"candle-graph/runtime/4","entrypoint":"f","profile":"release","cargo_features":[],"cfg":[],"phase":"infer"})"
    "\n";

std::string module_line(const std::string& id, const std::string& path, std::uint64_t start,
                        std::uint64_t duration, const std::string& parent = "") {
  return R"({"kind":"module","event_id":")" + id + R"(","path":")" + path +
         R"(","step":0,"duration_ns":)" + std::to_string(duration) + R"(,"start_ns":)" +
         std::to_string(start) + R"(,"thread":0)" +
         (parent.empty() ? "" : R"(,"parent":")" + parent + "\"") + "}\n";
}

std::string end_line(std::uint64_t modules, std::uint64_t open_modules) {
  return R"({"kind":"end","operations":0,"edge_timings":0,"dropped":0,"errors":0,"open_operations":0,"threads":1,"duration_ns":1,"modules":)" +
         std::to_string(modules) + R"(,"open_modules":)" + std::to_string(open_modules) + "}\n";
}

std::string error_of(const std::filesystem::path& path, ReadOptions options = {}) {
  try {
    (void)logged(path, options);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(ModuleScopes, CompactAndRuntime4GiveTheSameRecordsOnEveryPath) {
  const std::string full = logged(fixture("v4_modules.jsonl"));
  EXPECT_NE(full.find("module event_id=13:infer-mod-0-3 path=18:model.layers.0.mlp"),
            std::string::npos)
      << full;
  EXPECT_NE(full.find("parent=13:infer-mod-0-2"), std::string::npos) << full;
  // The implied counter of the compact `m` line continues thread 1's previous record.
  EXPECT_NE(full.find("event_id=16:infer-mod-0-4098"), std::string::npos) << full;
  ReadOptions line_at_a_time;
  line_at_a_time.line_at_a_time = true;
  ReadOptions small_blocks;
  small_blocks.chunk_bytes = 64;
  for (const char* name : {"v4_modules.jsonl", "v4c_modules.jsonl"}) {
    EXPECT_EQ(logged(fixture(name), line_at_a_time), full) << name;
    EXPECT_EQ(logged(fixture(name), small_blocks), full) << name;
  }
  EXPECT_EQ(logged(fixture("v4c_modules.jsonl")), full);
}

TEST(ModuleScopes, AggregateSelfTotalAndThreadBusyTime) {
  auto l = load(fixture("v4c_modules.jsonl"));
  EXPECT_EQ(l.info.modules, 6u);
  EXPECT_EQ(l.info.module_scopes_out_of_order, 0u);
  const auto& m = l.aggregate.modules;
  ASSERT_EQ(m.size(), 4u);
  // model: 10000 inclusive, minus its children layers.0 (4000) and layers.1 (3000).
  EXPECT_EQ(m.at("model").total.total_ns(), 10000u);
  EXPECT_EQ(m.at("model").self.total_ns(), 3000u);
  EXPECT_EQ(m.at("model.layers.0").self.total_ns(), 2000u);
  EXPECT_EQ(m.at("model.layers.0.mlp").self.total_ns(), 2000u);
  EXPECT_EQ(m.at("model.layers.1").total.samples(), 3u);
  EXPECT_EQ(m.at("model.layers.1").total.total_ns(), 4200u);
  EXPECT_EQ(m.at("model.layers.1").total.max_ns(), 3000u);
  // Thread 0 is busy 1000..11000 (the matmul lies inside `model`), thread 1 500 + 700 ns.
  auto walls = l.aggregate.thread_wall_ns();
  ASSERT_EQ(walls.size(), 2u);
  EXPECT_EQ(walls[0], 10000u);
  EXPECT_EQ(walls[1], 1200u);
  EXPECT_FALSE(l.aggregate.device_sync);
}

TEST(ModuleScopes, DeviceSyncIsRead) {
  std::string meta = kMeta;
  meta.insert(meta.size() - 2, R"(,"device_sync":true)");
  auto path = write_temp("mod_sync.jsonl",
                         meta + module_line("infer-mod-0-1", "model", 0, 5) + end_line(1, 0));
  EXPECT_TRUE(load(path).aggregate.device_sync);
}

TEST(ModuleScopes, UnknownKindIsAnErrorNamingTheLineAndLenientCountsIt) {
  auto path = write_temp("mod_unknown.jsonl", kMeta +
                                                  R"({"kind":"modul","event_id":"x"})"
                                                  "\n" +
                                                  end_line(0, 0));
  std::string e = error_of(path);
  EXPECT_NE(e.find("mod_unknown.jsonl:2"), std::string::npos) << e;
  EXPECT_NE(e.find("unknown record kind `modul`"), std::string::npos) << e;
  ReadOptions lenient;
  lenient.lenient = true;
  auto l = load(path, lenient);
  EXPECT_EQ(l.info.unknown_kind_lines, 1u);
  EXPECT_EQ(l.info.skipped_lines, 1u);
}

TEST(ModuleScopes, ScopeNeverClosedIsCountedNotAnError) {
  // The child names a parent that was still open at the end (end.open_modules = 1).
  auto path =
      write_temp("mod_open.jsonl",
                 kMeta + module_line("infer-mod-0-2", "model.layers.0", 10, 5, "infer-mod-0-1") +
                     end_line(1, 1));
  auto l = load(path);
  EXPECT_EQ(l.info.module_parents_unresolved, 1u);
  EXPECT_EQ(l.info.end->open_modules, 1u);
  EXPECT_EQ(l.aggregate.modules.at("model.layers.0").self.total_ns(), 5u);
}

TEST(ModuleScopes, ParentMustNameAModuleScope) {
  auto path = write_temp(
      "mod_parent.jsonl",
      kMeta + module_line("infer-mod-0-2", "model.layers.0", 10, 5, "infer-op-0-1") +
          R"({"kind":"operation","event_id":"infer-op-0-1","op":"matmul","static_id":"s","inputs":[],"step":0,"duration_ns":9,"start_ns":9,"thread":0})"
          "\n" +
          R"({"kind":"end","operations":1,"edge_timings":0,"dropped":0,"errors":0,"open_operations":0,"threads":1,"duration_ns":1,"modules":1,"open_modules":0})"
          "\n");
  std::string e = error_of(path);
  EXPECT_NE(e.find("names parent `infer-op-0-1`, which is no module scope"), std::string::npos)
      << e;
  ReadOptions lenient;
  lenient.lenient = true;
  EXPECT_EQ(load(path, lenient).info.module_parents_unresolved, 1u);
}

TEST(ModuleScopes, ChildOutsideItsParentIsCountedOutOfOrder) {
  // The child runs 5..25 but its parent only 10..30.
  auto path =
      write_temp("mod_order.jsonl",
                 kMeta + module_line("infer-mod-0-2", "model.layers.0", 5, 20, "infer-mod-0-1") +
                     module_line("infer-mod-0-1", "model", 10, 20) + end_line(2, 0));
  auto l = load(path);
  EXPECT_EQ(l.info.module_scopes_out_of_order, 1u);
  // A parent listed before a child that lies inside it is not: its self time subtracts the child
  // all the same (the reader resolves parents over the whole file).
  auto late = write_temp(
      "mod_late.jsonl", kMeta + module_line("infer-mod-0-1", "model", 10, 20) +
                            module_line("infer-mod-0-2", "model.layers.0", 12, 2, "infer-mod-0-1") +
                            end_line(2, 0));
  auto listed_late = load(late);
  EXPECT_EQ(listed_late.info.module_scopes_out_of_order, 0u);
  EXPECT_EQ(listed_late.aggregate.modules.at("model").self.total_ns(), 18u);
}

TEST(ModuleScopes, EndCountOfModulesIsChecked) {
  auto path = write_temp("mod_count.jsonl",
                         kMeta + module_line("infer-mod-0-1", "model", 10, 20) + end_line(2, 0));
  std::string e = error_of(path);
  EXPECT_NE(e.find(":3"), std::string::npos) << e;
  EXPECT_NE(e.find("2 modules but the trace has 0 and 0 and 1"), std::string::npos) << e;
}

TEST(ModuleScopes, MalformedModuleLinesNameTheLine) {
  auto no_path = write_temp(
      "mod_nopath.jsonl",
      kMeta +
          R"({"kind":"module","event_id":"infer-mod-0-1","step":0,"duration_ns":1,"start_ns":1,"thread":0})"
          "\n" +
          end_line(1, 0));
  std::string e = error_of(no_path);
  EXPECT_NE(e.find("mod_nopath.jsonl:2"), std::string::npos) << e;
  EXPECT_NE(e.find("module record is missing field `path`"), std::string::npos) << e;
  // A duplicate event id across kinds.
  auto dup =
      write_temp("mod_dup.jsonl", kMeta + module_line("infer-mod-0-1", "a", 1, 1) +
                                      module_line("infer-mod-0-1", "b", 3, 1) + end_line(2, 0));
  EXPECT_NE(error_of(dup).find("duplicate event_id `infer-mod-0-1`"), std::string::npos);
  // In runtime/3 a module line is an unknown kind.
  auto v3 = write_temp("mod_v3.jsonl", testing::kMetaV3 + module_line("infer-mod-0-1", "a", 1, 1));
  EXPECT_NE(error_of(v3).find("unknown record kind `module`"), std::string::npos);
}

TEST(ModuleScopes, CompactMLineMustReferToAModulePathDef) {
  std::string meta = kMeta;
  meta.replace(meta.find("runtime/4"), 9, "runtime/4-compact/1");
  auto path = write_temp("modc_bad.jsonl",
                         meta +
                             R"({"kind":"def","h":0,"op":"matmul","static_id":"s","inputs":[]})"
                             "\n"
                             R"({"kind":"m","h":0,"d":1,"t":1})"
                             "\n" +
                             end_line(1, 0));
  std::string e = error_of(path);
  EXPECT_NE(e.find("modc_bad.jsonl:3"), std::string::npos) << e;
  EXPECT_NE(e.find("which is defined as an operation"), std::string::npos) << e;
  auto both = write_temp("modc_both.jsonl", meta +
                                                R"({"kind":"def","h":0,"path":"a","op":"matmul"})"
                                                "\n" +
                                                end_line(0, 0));
  EXPECT_NE(error_of(both).find("def has both a module path"), std::string::npos);
}

TEST(ModuleScopes, ThreadBusyTimeIsTheUnionOfOutermostIntervals) {
  ThreadWall w;
  for (std::uint64_t i = 0; i < 5000; ++i)
    w.add(10 * i, 10 * i + 5);  // disjoint: more than kMaxOpen of them
  EXPECT_EQ(w.busy_ns(), 25000u);
  // An enclosing interval over the last ten collapses them: 25000 - 10 * 5 + 100.
  w.add(49900, 50000);
  EXPECT_EQ(w.busy_ns(), 25050u);
  w.add(49950, 49960);  // inside: nothing new
  EXPECT_EQ(w.busy_ns(), 25050u);
}

}  // namespace
}  // namespace cg::runtime
