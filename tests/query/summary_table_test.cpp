#include "query/summary_table.hpp"

#include <gtest/gtest.h>

namespace {

TEST(SummaryTable, GroupsThousands) {
  EXPECT_EQ(cg::query::group_thousands(0), "0");
  EXPECT_EQ(cg::query::group_thousands(999), "999");
  EXPECT_EQ(cg::query::group_thousands(1000), "1,000");
  EXPECT_EQ(cg::query::group_thousands(1234567), "1,234,567");
}

TEST(SummaryTable, TreeColumnsAndHonestTotals) {
  std::vector<cg::query::SummaryRow> rows = {
      {0, "TinyLlama", "TinyLlama", "", std::nullopt, "", "", ""},
      {1, "embed_tokens.weight", "Embedding", "[4096, 256]", 1048576, "?", "", ""},
      {1, "lm_head.weight", "Linear", "[vocab_size, hidden]", std::nullopt, "?", "conditional", ""},
  };
  cg::query::SummaryTotals t;
  t.total = 1048576;
  t.unknown_leaves = 1;
  t.bytes = 1048576ull * 4;
  t.dtype = "F32";
  std::string out = cg::query::render_summary_table("tiny-llama", rows, t);
  EXPECT_NE(out.find("  └─embed_tokens.weight (Embedding)"), std::string::npos) << out;
  EXPECT_NE(out.find("1,048,576"), std::string::npos);
  EXPECT_NE(out.find("lm_head.weight (Linear) [conditional]"), std::string::npos);
  // A parameter of symbolic shape makes every figure a lower bound: the count, the bytes (MB as
  // torchinfo's, 10^6 bytes: 4,194,304 B) and the training memory.
  EXPECT_NE(out.find("Total params: at least 1,048,576 (+ 1 parameter of symbolic shape)"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("Trainable params: unknown"), std::string::npos);
  EXPECT_NE(out.find("Params size (MB): at least 4.19 at F32"), std::string::npos) << out;
  EXPECT_NE(out.find("Training with AdamW (MB): at least 16.78"), std::string::npos) << out;
}

}  // namespace

namespace {

// A total past 64 bits says so (never a wrapped number); a lower bound says why on the same screen.
TEST(SummaryTable, OverflowAndLowerBoundAreShownNotWrapped) {
  std::vector<cg::query::SummaryRow> rows = {{0, "M", "M", "", std::nullopt, "?", "", ""}};
  rows[0].params_overflow = true;
  cg::query::SummaryTotals t;
  t.overflow = true;
  t.bytes_overflow = true;
  t.dtype = "F32";
  std::string out = cg::query::render_summary_table("m", rows, t);
  EXPECT_NE(out.find("Total params: over 2^64 (overflow)"), std::string::npos) << out;
  EXPECT_NE(out.find("Params size (MB): over 2^64 (overflow)"), std::string::npos) << out;
  auto row = out.find("\nM (M)");
  ASSERT_NE(row, std::string::npos) << out;
  EXPECT_NE(out.substr(row, out.find('\n', row + 1) - row).find("over 2^64 (overflow)"),
            std::string::npos)
      << out;

  cg::query::SummaryTotals lb;
  lb.total = 1000;
  lb.bytes = 4000;
  lb.lower_bound = "the analysis was truncated";
  out = cg::query::render_summary_table("m", {}, lb);
  EXPECT_NE(out.find("Total params: at least 1,000\n  lower bound: the analysis was truncated"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("Params size (MB): at least 0.00"), std::string::npos) << out;
}

}  // namespace
