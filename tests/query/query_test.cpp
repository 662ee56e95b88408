#include "query/query.hpp"

#include <gtest/gtest.h>

#include "util/error.hpp"

namespace {

cg::pipeline::Analysis sample() {
  cg::pipeline::Analysis a;
  a.ir.analysis_id = "analysis:test";
  for (int i : {10, 2, 1}) {
    cg::ir::Parameter p;
    p.id = "parameter:layers." + std::to_string(i) + ".weight";
    p.key = "model.layers." + std::to_string(i) + ".weight";
    p.kind = "nn::linear";
    a.ir.parameters.push_back(p);
  }
  return a;
}

TEST(QueryCommand, KindSpellingsAndUnknownKindListsChoices) {
  EXPECT_EQ(cg::query::canonical_kind("Parameters"), "parameters");
  EXPECT_EQ(cg::query::canonical_kind("FINDINGS"), "findings");
  try {
    cg::query::canonical_kind("params");
    FAIL() << "unknown kind accepted";
  } catch (const cg::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("valid kinds: summary, doctor, cargo, components"),
              std::string::npos)
        << e.what();
  }
}

TEST(QueryCommand, NaturalOrderPaginationAndDrillDown) {
  auto a = sample();
  cg::query::QueryRequest r;
  r.kind = "parameters";
  r.limit = 2;
  std::string out = cg::query::answer_query(a, r);
  EXPECT_NE(out.find("\"schema\": \"candle-graph/query/1\""), std::string::npos);
  EXPECT_NE(out.find("\"total\": 3"), std::string::npos) << out;
  EXPECT_NE(out.find("\"returned\": 2"), std::string::npos) << out;
  EXPECT_NE(out.find("\"truncated\": true"), std::string::npos) << out;
  // layers.1 < layers.2 < layers.10, so the first page has 1 and 2 but not 10.
  auto p1 = out.find("layers.1.weight"), p2 = out.find("layers.2.weight");
  EXPECT_NE(p1, std::string::npos);
  EXPECT_LT(p1, p2);
  EXPECT_EQ(out.find("layers.10."), std::string::npos) << out;
  EXPECT_NE(
      out.find("\"drill_down\": \"candle-graph query parameter 'parameter:layers.1.weight'\""),
      std::string::npos)
      << out;

  r.offset = 2;
  out = cg::query::answer_query(a, r);
  EXPECT_NE(out.find("layers.10.weight"), std::string::npos) << out;
  EXPECT_NE(out.find("\"truncated\": false"), std::string::npos) << out;
}

TEST(QueryCommand, SelectByIdAndNoMatchIsAnInputError) {
  auto a = sample();
  cg::query::QueryRequest r;
  r.kind = "parameters";
  r.selector = "parameter:layers.1.weight";
  std::string out = cg::query::answer_query(a, r);
  EXPECT_NE(out.find("\"total\": 1"), std::string::npos) << out;
  r.selector = "nothing-like-this";
  EXPECT_THROW(cg::query::answer_query(a, r), cg::InputError);
}

TEST(QueryCommand, SingularKindsReturnTheFullRecordOrListCandidates) {
  auto a = sample();
  cg::query::QueryRequest r;
  r.kind = "parameter";
  r.selector = "parameter:layers.10.weight";
  std::string out = cg::query::answer_query(a, r);
  EXPECT_NE(out.find("\"key\":\"model.layers.10.weight\""), std::string::npos) << out;
  EXPECT_NE(out.find("\"total\": 1"), std::string::npos) << out;
  r.selector = "layers.1";  // a substring of layers.1 and layers.10
  try {
    cg::query::answer_query(a, r);
    FAIL() << "an ambiguous singular query must not pick one";
  } catch (const cg::InputError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("ambiguous: 2 candidates"), std::string::npos) << m;
    EXPECT_NE(m.find("parameter:layers.10.weight"), std::string::npos) << m;
  }
  r.selector.clear();
  EXPECT_THROW(cg::query::answer_query(a, r), cg::InputError) << "a singular kind needs a selector";
  r.kind = "summary";
  r.selector = "x";
  EXPECT_THROW(cg::query::answer_query(a, r), cg::InputError) << "summary takes no selector";
}

TEST(QueryCommand, TreeFormatIsOneLinePerItem) {
  auto a = sample();
  cg::query::QueryRequest r;
  r.kind = "parameters";
  r.limit = 2;
  std::string out = cg::query::answer_query_tree(a, r);
  EXPECT_EQ(out.rfind("parameters: 2 of 3 (next page: --offset 2)\n", 0), 0u) << out;
  EXPECT_NE(out.find("  model.layers.1.weight"), std::string::npos) << out;
}

TEST(QueryCommand, PathFollowsProducerToConsumer) {
  cg::pipeline::Analysis a;
  a.ir.analysis_id = "analysis:test";
  auto op = [&](const std::string& id, std::vector<std::string> in, const std::string& out) {
    cg::ir::Operation o;
    o.id = id;
    o.name = id;
    o.inputs = std::move(in);
    o.output = out;
    a.ir.operations.push_back(o);
  };
  op("op:a", {"t0"}, "t1");
  op("op:b", {"t1"}, "t2");
  op("op:side", {"t1"}, "t9");
  op("op:c", {"t2", "t9"}, "t3");
  cg::query::QueryRequest r;
  r.kind = "path";
  r.selector = "op:a";
  r.to = "op:c";
  std::string out = cg::query::answer_query(a, r);
  EXPECT_NE(out.find("\"found\": true"), std::string::npos) << out;
  EXPECT_NE(out.find("\"total\": 3"), std::string::npos) << out;
  EXPECT_LT(out.find("\"op:a\""), out.find("\"op:c\""));
  r.selector = "op:c";
  r.to = "op:a";  // against the flow
  out = cg::query::answer_query(a, r);
  EXPECT_NE(out.find("\"found\": false"), std::string::npos) << out;
  r.to.clear();
  EXPECT_THROW(cg::query::answer_query(a, r), cg::InputError) << "path needs --to";
}

}  // namespace
