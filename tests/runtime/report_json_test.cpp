#include "runtime/report_json.hpp"

#include <gtest/gtest.h>
#include <simdjson.h>

#include "trace_test_util.hpp"

namespace cg::runtime {
namespace {

TEST(ReportJson, LenientSkipsAreVisibleInTheTraceInfo) {
  ReadOptions lenient;
  lenient.lenient = true;
  auto l = testing::load(testing::fixture("garbage_lines.jsonl"), lenient);
  JsonWriter w(0);
  write_trace_info(w, l.info);
  simdjson::dom::parser parser;
  simdjson::dom::element doc = parser.parse(w.str());
  EXPECT_EQ(doc["skipped_lines"].get_uint64().value(), 2u);
  EXPECT_EQ(doc["skipped_examples"].at(0)["line"].get_uint64().value(), 3u);
  EXPECT_EQ(doc["operations"].get_uint64().value(), 2u);
  EXPECT_TRUE(doc["end"].is_null());
}

TEST(ReportJson, ProfileRowsCarryTimingAndShare) {
  ProfileReport r;
  r.step_time_ns = 1000;
  r.steps = 2;
  r.operations.push_back({"op:a", "matmul", TimingRecord{2, 800, 400, 300, 500, 300, 500}, 0.8});
  r.operations.push_back({"op:b", "add", TimingRecord{1, 200, 200, 200, 200, 200, 200}, 0.2});
  JsonWriter w(0);
  write_profile_report(w, r, 1);
  simdjson::dom::parser parser;
  simdjson::dom::element doc = parser.parse(w.str());
  EXPECT_EQ(doc["total_operations"].get_uint64().value(), 2u);
  simdjson::dom::array ops = doc["operations"].get_array();
  EXPECT_EQ(ops.size(), 1u);  // limited
  EXPECT_EQ(ops.at(0)["timing"]["p95_ns"].get_uint64().value(), 500u);
  EXPECT_DOUBLE_EQ(ops.at(0)["share_of_step"].get_double().value(), 0.8);
}

}  // namespace
}  // namespace cg::runtime
