#include "cli/diagnostics.hpp"

#include <gtest/gtest.h>
#include <simdjson.h>

namespace {

using cg::cli::Diagnostic;
using cg::cli::Severity;

std::vector<Diagnostic> sample() {
  Diagnostic a;
  a.id = "finding:dtype-conflict:src/model.rs%3A42:x";
  a.rule = "dtype-conflict";
  a.severity = Severity::error;
  a.confidence = cg::ir::Confidence::proven;
  a.message = "broadcast_add requires same dtype, got BF16 vs F32";
  cg::cli::parse_source_location("src/model.rs:42:9", a);
  Diagnostic b;
  b.id = "finding:source-load::y";
  b.rule = "source-load";
  b.severity = Severity::warning;
  b.confidence = cg::ir::Confidence::unknown;
  b.message = "module file for `mod missing;` not found";
  cg::cli::parse_source_location("src/lib.rs:3", b);
  Diagnostic c;
  c.id = "finding:note::z";
  c.rule = "runtime-unmapped";
  c.severity = Severity::information;
  c.message = "2 runtime ids did not exist";
  return {a, b, c};
}

TEST(Diagnostics, SourceLocationsParse) {
  Diagnostic d;
  cg::cli::parse_source_location("src/a/b.rs:12:3", d);
  EXPECT_EQ(d.file, "src/a/b.rs");
  EXPECT_EQ(d.line, 12u);
  EXPECT_EQ(d.column, 3u);
  cg::cli::parse_source_location("Cargo.toml", d);
  EXPECT_EQ(d.file, "Cargo.toml");
  EXPECT_EQ(d.line, 0u);
}

TEST(Diagnostics, HumanLooksLikeRustc) {
  std::string text = cg::cli::render_human(sample(), false);
  EXPECT_NE(text.find("error: broadcast_add requires same dtype, got BF16 vs F32\n"
                      "  --> src/model.rs:42:9\n  = code: dtype-conflict (proven)\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("warning: module file"), std::string::npos);
  EXPECT_NE(text.find("candle-graph: 1 error, 1 warning, 1 note\n"), std::string::npos) << text;
}

TEST(Diagnostics, JsonLinesAreCargoShapedAndParse) {
  std::string out = cg::cli::render_json_lines(sample(), "tiny-llama 0.1.0", "Cargo.toml");
  simdjson::dom::parser parser;
  simdjson::padded_string padded(out);
  std::size_t lines = 0;
  std::string last_reason;
  for (auto doc : parser.parse_many(padded)) {
    ++lines;
    last_reason = std::string(doc["reason"].get_string().value());
    if (last_reason == "compiler-message" && lines == 1) {
      EXPECT_EQ(doc["message"]["level"].get_string().value(), "error");
      EXPECT_EQ(doc["message"]["code"]["code"].get_string().value(), "dtype-conflict");
      EXPECT_EQ(doc["message"]["spans"].at(0)["line_start"].get_uint64().value(), 42u);
    }
  }
  EXPECT_EQ(lines, 4u);
  EXPECT_EQ(last_reason, "analysis-finished");
}

TEST(Diagnostics, SarifHasRulesResultsAndRegions) {
  std::string out = cg::cli::render_sarif(sample(), "0.1.0");
  simdjson::dom::parser parser;
  auto doc = parser.parse(out).value();
  EXPECT_EQ(doc["version"].get_string().value(), "2.1.0");
  auto run = doc["runs"].at(0).value();
  EXPECT_EQ(run["tool"]["driver"]["rules"].get_array().size(), 3u);
  auto results = run["results"].get_array().value();
  ASSERT_EQ(results.size(), 3u);
  auto first = results.at(0).value();
  EXPECT_EQ(first["level"].get_string().value(), "error");
  auto region = first["locations"].at(0)["physicalLocation"]["region"].value();
  EXPECT_EQ(region["startLine"].get_uint64().value(), 42u);
  EXPECT_EQ(region["startColumn"].get_uint64().value(), 9u);
  // A finding without a file has no location rather than a bogus one.
  EXPECT_EQ(results.at(2)["locations"].get_array().size(), 0u);
}

}  // namespace
