#include "query/selector.hpp"

#include <gtest/gtest.h>

#include <algorithm>

namespace {

using cg::query::MatchKind;
using cg::query::Selectable;

std::vector<Selectable> ops() {
  std::vector<Selectable> v;
  for (int i : {1, 10, 11, 2}) {
    Selectable s;
    s.id = "operation:f:matmul:" + std::to_string(i);
    s.names = {"matmul#" + std::to_string(i)};
    s.fields = {"model::Attention::forward"};
    v.push_back(s);
  }
  return v;
}

TEST(Selector, ExactIdWinsOverSubstring) {
  // The reference's substring match made `…:1` ambiguous with `…:10` and `…:11`.
  auto s = cg::query::select(ops(), "operation:f:matmul:1");
  EXPECT_EQ(s.kind, MatchKind::exact_id);
  ASSERT_EQ(s.indices.size(), 1u);
  EXPECT_EQ(s.indices[0], 0u);
}

TEST(Selector, ExactNameThenCaseInsensitiveSubstring) {
  auto s = cg::query::select(ops(), "matmul#2");
  EXPECT_EQ(s.kind, MatchKind::exact_name);
  EXPECT_EQ(s.indices.size(), 1u);
  s = cg::query::select(ops(), "ATTENTION::forward");
  EXPECT_EQ(s.kind, MatchKind::substring);
  EXPECT_EQ(s.indices.size(), 4u);
  s = cg::query::select(ops(), "nothing-like-this");
  EXPECT_EQ(s.kind, MatchKind::none);
  EXPECT_TRUE(s.indices.empty());
  EXPECT_EQ(cg::query::select(ops(), "").kind, MatchKind::all);
}

TEST(Selector, NumericSuffixesSortByValue) {
  std::vector<std::string> ids = {"layers.10.w", "layers.2.w", "layers.1.w",
                                  "op:9",        "op:10",      "op:09"};
  std::sort(ids.begin(), ids.end(), cg::query::natural_less);
  EXPECT_EQ(ids, (std::vector<std::string>{"layers.1.w", "layers.2.w", "layers.10.w", "op:09",
                                           "op:9", "op:10"}));
  EXPECT_FALSE(cg::query::natural_less("a", "a"));
}

TEST(Selector, PaginationClampsAndReportsTruncation) {
  auto p = cg::query::paginate(10, 4, 3);
  EXPECT_EQ(p.offset, 4u);
  EXPECT_EQ(p.returned, 3u);
  EXPECT_TRUE(p.truncated);
  p = cg::query::paginate(10, 8, 5);
  EXPECT_EQ(p.returned, 2u);
  EXPECT_FALSE(p.truncated);
  p = cg::query::paginate(3, 99, 5);
  EXPECT_EQ(p.offset, 3u);
  EXPECT_EQ(p.returned, 0u);
  EXPECT_FALSE(p.truncated);
}

}  // namespace
