#include "query/summary_table.hpp"

#include <gtest/gtest.h>

#include <algorithm>

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

namespace {

std::size_t widest_line(const std::string& text) {
  std::size_t widest = 0, cur = 0;
  for (char c : text) {
    if (c == '\n') {
      widest = std::max(widest, cur);
      cur = 0;
    } else if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) {
      ++cur;
    }
  }
  return std::max(widest, cur);
}

std::vector<cg::query::SummaryRow> llama_like_rows() {
  std::vector<cg::query::SummaryRow> rows = {
      {0, "Llama", "Llama", "", std::nullopt, "?", "", "?"},
      {1, "model.layers.{i} × cfg.num_hidden_layers", "Block", "", std::nullopt, "?", "", "?"},
      {2, "q_proj", "Linear", "", std::nullopt, "?", "", ""},
      {3, "weight", "",
       "[(cfg.hidden_size / cfg.num_attention_heads) * cfg.num_attention_heads, cfg.hidden_size, "
       "cfg.extra_dim]",
       std::nullopt, "?", "", ""},
  };
  rows[0].module_id = "m0";
  rows[1].module_id = "m1";
  rows[2].module_id = "m2";
  rows[2].output_shape =
      "[b, seq_len, (cfg.hidden_size / cfg.num_attention_heads) * "
      "cfg.num_attention_heads]";
  return rows;
}

// What `summary` shows by default (issue 37): module rows only, no column that is "?" on every
// row, within 120 columns; and it says what it left out and how to get it.
TEST(SummaryTable, DefaultFitsAndHidesWeightsAndUnknownColumns) {
  cg::query::SummaryTotals t;
  cg::query::TableLayout compact{false, false, 120, "--weights", "--all-columns"};
  std::string out = cg::query::render_summary_table("llama", llama_like_rows(), t, compact);
  EXPECT_LE(widest_line(out), 120u) << out;
  EXPECT_EQ(out.find("└─weight"), std::string::npos) << out;
  const std::string header = out.substr(out.find("Module (type)"));
  EXPECT_EQ(header.substr(0, header.find('\n')).find("Trainable"), std::string::npos) << out;
  EXPECT_EQ(out.find("Mult-Adds  "), std::string::npos) << out;
  EXPECT_NE(out.find("Output Shape"), std::string::npos) << out;
  EXPECT_NE(out.find("Not shown: 1 weight row (--weights shows it); Mult-Adds and Trainable, each "
                     "unknown on every row (--all-columns"),
            std::string::npos)
      << out;

  // On request: the weight row with its whole shape (wrapped, nothing cut) and every column.
  cg::query::TableLayout full{true, true, 120, "--weights", "--all-columns"};
  out = cg::query::render_summary_table("llama", llama_like_rows(), t, full);
  EXPECT_LE(widest_line(out), 120u) << out;
  EXPECT_NE(out.find("└─weight"), std::string::npos) << out;
  EXPECT_NE(out.find("Trainable\n"), std::string::npos) << out;
  EXPECT_NE(out.find("Mult-Adds"), std::string::npos) << out;
  EXPECT_EQ(out.find("Not shown"), std::string::npos) << out;
  for (const char* piece : {"cfg.extra_dim]", "[(cfg.hidden_size", "/ cfg.num_attention_heads)"})
    EXPECT_NE(out.find(piece), std::string::npos) << piece << "\n" << out;

  // No limit: one line per row, as wide as it needs.
  cg::query::TableLayout wide{true, true, 0, "--weights", "--all-columns"};
  out = cg::query::render_summary_table("llama", llama_like_rows(), t, wide);
  EXPECT_GT(widest_line(out), 120u) << out;
}

TEST(SummaryTable, WrapTextIndentsContinuations) {
  std::string line = "  ≥ marks a lower bound: " + std::string(30, 'a') + " " +
                     std::string(30, 'b') + " " + std::string(30, 'c');
  std::string out = cg::query::wrap_text(line + "\nshort\n", 60);
  EXPECT_LE(widest_line(out), 60u) << out;
  EXPECT_NE(out.find("\n    " + std::string(30, 'b')), std::string::npos) << out;
  EXPECT_NE(out.find("\nshort\n"), std::string::npos) << out;
  EXPECT_EQ(cg::query::wrap_text(line, 0), line);
}

}  // namespace
