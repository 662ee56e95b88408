// Truth tests of `compare`: traces generated with a known shift (or none) must give the verdicts
// and intervals the confidence level promises, read through the real trace reader.
#include "compare/compare.hpp"

#include <gtest/gtest.h>
#include <simdjson.h>

#include <cmath>
#include <filesystem>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "compare/synthetic_trace.hpp"
#include "scratch.hpp"
#include "util/error.hpp"

namespace {

namespace fs = std::filesystem;
using cg::compare::Options;
using cg::compare::Report;
using cg::compare::Row;
using cg::compare::Verdict;
using cg_test::SyntheticSpec;

fs::path written(const std::string& name, const SyntheticSpec& spec) {
  const fs::path p = cg_test::scratch_path(name);
  cg_test::write_text(p.string(), cg_test::synthetic_trace(spec));
  return p;
}

const Row* find_row(const Report& r, const std::string& id) {
  for (const auto& row : r.rows)
    if (row.id == id) return &row;
  return nullptr;
}

double binomial_pmf(int n, int k, double p) {
  return std::exp(std::lgamma(n + 1.0) - std::lgamma(k + 1.0) - std::lgamma(n - k + 1.0) +
                  k * std::log(p) + (n - k) * std::log1p(-p));
}

// The smallest c with P(Binomial(n, p) > c) <= tail: more than c events of probability p in n
// independent trials happen with probability at most `tail`.
int upper_count_bound(int n, double p, double tail) {
  double cdf = 0;
  for (int c = 0; c <= n; ++c) {
    cdf += binomial_pmf(n, c, p);
    if (1.0 - cdf <= tail) return c;
  }
  return n;
}

SyntheticSpec one_module(std::uint64_t seed, double median_ns) {
  SyntheticSpec s;
  s.seed = seed;
  s.modules = {{"model.layers.0.mlp", median_ns}};
  return s;
}

TEST(CompareTruth, ATwentyPercentSlowerModuleIsFoundAndItsIntervalHoldsTheTrueRatio) {
  SyntheticSpec base;
  base.seed = 11;
  base.modules = {{"model.layers.0.mlp", 1e6}, {"model.layers.0.self_attn", 2e6}};
  base.operations = {{"operation:infer:forward:1", 5e5}};
  SyntheticSpec candidate = base;
  candidate.seed = 12;
  candidate.modules["model.layers.0.mlp"] = 1.2e6;
  const Report r =
      cg::compare::compare_traces({written("cmp_shift_base.jsonl", base)},
                                  {written("cmp_shift_candidate.jsonl", candidate)}, Options{});
  ASSERT_EQ(r.rows.size(), 3u);
  const Row& mlp = r.rows.front();  // the largest change comes first
  EXPECT_EQ(mlp.id, "model.layers.0.mlp");
  EXPECT_EQ(mlp.verdict, Verdict::slower);
  EXPECT_LE(*mlp.ci_low, 1.2);
  EXPECT_GE(*mlp.ci_high, 1.2);
  EXPECT_NEAR(*mlp.ratio, 1.2, 0.03);
  EXPECT_EQ(mlp.base->units, 200u);  // one run a side: the steps are resampled
  EXPECT_EQ(find_row(r, "model.layers.0.self_attn")->verdict, Verdict::no_change);
  const Row* op = find_row(r, "operation:infer:forward:1");
  ASSERT_NE(op, nullptr);
  EXPECT_EQ(op->kind, cg::compare::RowKind::operation);
  EXPECT_EQ(op->op, "matmul");
  EXPECT_EQ(op->verdict, Verdict::no_change);
  EXPECT_EQ(cg::compare::regressions(r, 10).size(), 1u);
  EXPECT_TRUE(cg::compare::regressions(r, 25).empty());
}

// Without a shift, a row is called slower or faster only when the interval misses the true ratio
// 1.0, which a 95% interval does in 5% of trials: over 100 seeds, more than the bound below (11:
// P(Binomial(100, 0.05) > 11) = 0.43%, > 10 would still be 1.15%) happens with probability under
// 1% if the interval keeps its promise.
TEST(CompareTruth, WithoutAShiftFalseVerdictsStayWithinWhatTheConfidenceAllows) {
  const int trials = 100;
  const Options options;
  const int bound = upper_count_bound(trials, 1.0 - options.confidence, 0.01);
  EXPECT_EQ(bound, 11);  // the computed bound, stated for the reader
  int false_verdicts = 0, missed_truth = 0;
  for (int t = 0; t < trials; ++t) {
    const auto seed = static_cast<std::uint64_t>(1000 + 2 * t);
    const Report r = cg::compare::compare_traces(
        {written("cmp_null_base.jsonl", one_module(seed, 1e6))},
        {written("cmp_null_candidate.jsonl", one_module(seed + 1, 1e6))}, options);
    ASSERT_EQ(r.rows.size(), 1u);
    const Row& row = r.rows.front();
    if (row.verdict != Verdict::no_change) ++false_verdicts;
    if (*row.ci_low > 1.0 || *row.ci_high < 1.0) ++missed_truth;
  }
  std::cout << "no shift: " << false_verdicts << " false verdicts, interval missed 1.0 "
            << missed_truth << " times in " << trials << " (bound " << bound << ")\n";
  EXPECT_LE(false_verdicts, bound) << false_verdicts << " false verdicts in " << trials;
  EXPECT_LE(missed_truth, bound) << "the interval missed 1.0 in " << missed_truth << " trials";
}

TEST(CompareTruth, ATwentyPercentShiftIsFoundIn95Of100SeedsAndTheIntervalCoversIt) {
  const int trials = 100;
  const Options options;
  const int bound = upper_count_bound(trials, 1.0 - options.confidence, 0.01);
  int found = 0, missed_truth = 0;
  for (int t = 0; t < trials; ++t) {
    const auto seed = static_cast<std::uint64_t>(5000 + 2 * t);
    const Report r = cg::compare::compare_traces(
        {written("cmp_power_base.jsonl", one_module(seed, 1e6))},
        {written("cmp_power_candidate.jsonl", one_module(seed + 1, 1.2e6))}, options);
    const Row& row = r.rows.front();
    if (row.verdict == Verdict::slower) ++found;
    if (*row.ci_low > 1.2 || *row.ci_high < 1.2) ++missed_truth;
  }
  std::cout << "20% shift: found " << found << ", interval missed 1.2 " << missed_truth
            << " times in " << trials << " (bound " << bound << ")\n";
  EXPECT_GE(found, 95);
  EXPECT_LE(missed_truth, bound) << "the interval missed 1.2 in " << missed_truth << " trials";
}

// Several runs a side: the runs are resampled (each contributes its median), and fewer than
// kMinUnits of them give no verdict rather than a falsely narrow interval.
TEST(CompareTruth, SeveralRunsASideResampleRunsAndTooFewRunsGiveNoVerdict) {
  std::vector<fs::path> base, candidate;
  for (int i = 0; i < 6; ++i) {
    SyntheticSpec b = one_module(static_cast<std::uint64_t>(300 + i), 1e6);
    b.steps = 40;
    SyntheticSpec c = one_module(static_cast<std::uint64_t>(400 + i), 1.2e6);
    c.steps = 40;
    base.push_back(written("cmp_runs_base_" + std::to_string(i) + ".jsonl", b));
    candidate.push_back(written("cmp_runs_candidate_" + std::to_string(i) + ".jsonl", c));
  }
  const Report r = cg::compare::compare_traces(base, candidate, Options{});
  const Row& row = r.rows.front();
  EXPECT_EQ(row.verdict, Verdict::slower);
  EXPECT_EQ(row.base->units, 6u);
  EXPECT_EQ(row.base->runs, 6u);
  EXPECT_EQ(row.base->observations, 240u);
  EXPECT_NE(cg::compare::render_text(r, 0).find("base resamples runs"), std::string::npos);

  const Report few =
      cg::compare::compare_traces({base[0], base[1]}, {candidate[0], candidate[1]}, Options{});
  EXPECT_EQ(few.rows.front().verdict, Verdict::too_few_samples);
  EXPECT_FALSE(few.rows.front().ci_low.has_value());
}

// The bootstrap draws each resample's median from its exact distribution (compare.cpp); it must
// give the interval that resampling the values themselves gives.
TEST(CompareBootstrap, TheIntervalIsThatOfResamplingTheValues) {
  for (std::size_t n : {21u, 40u}) {
    std::mt19937_64 gen(n);
    std::vector<double> base, candidate;
    for (std::size_t i = 0; i < n; ++i) {
      base.push_back(static_cast<double>(1000 + gen() % 400));
      candidate.push_back(static_cast<double>(1100 + gen() % 400));
    }
    Options o;
    o.resamples = 40000;
    Row row;
    cg::compare::compare_values(base, candidate, o, 7, row);
    // Brute force: n draws with replacement per side, the median of each.
    auto median = [](std::vector<double> v) {
      std::sort(v.begin(), v.end());
      const std::size_t m = v.size();
      return m % 2 ? v[m / 2] : (v[m / 2 - 1] + v[m / 2]) / 2;
    };
    std::vector<double> ratios;
    for (int i = 0; i < 40000; ++i) {
      std::vector<double> b(n), c(n);
      for (std::size_t j = 0; j < n; ++j) {
        b[j] = base[gen() % n];
        c[j] = candidate[gen() % n];
      }
      ratios.push_back(median(c) / median(b));
    }
    std::sort(ratios.begin(), ratios.end());
    EXPECT_NEAR(*row.ci_low, ratios[1000], 0.01) << n;
    EXPECT_NEAR(*row.ci_high, ratios[39000], 0.01) << n;
  }
}

TEST(CompareBootstrap, IdenticalValuesGiveRatioOneAndNoChange) {
  Row row;
  cg::compare::compare_values(std::vector<double>(50, 100.0), std::vector<double>(50, 100.0),
                              Options{}, 1, row);
  EXPECT_EQ(*row.ratio, 1.0);
  EXPECT_EQ(*row.ci_low, 1.0);
  EXPECT_EQ(*row.ci_high, 1.0);
  EXPECT_EQ(row.verdict, Verdict::no_change);
}

// A significant change smaller than --min-change is no change.
TEST(CompareBootstrap, ASignificantChangeBelowTheMinimumIsNoChange) {
  std::vector<double> base, candidate;
  for (int i = 0; i < 400; ++i) {
    base.push_back(1000.0 + i % 7);
    candidate.push_back(1005.0 + i % 7);  // +0.5%, with hardly any noise
  }
  Options o;
  Row row;
  cg::compare::compare_values(base, candidate, o, 1, row);
  EXPECT_GT(*row.ci_low, 1.0);
  EXPECT_EQ(row.verdict, Verdict::no_change);
  o.min_change_pct = 0.1;
  cg::compare::compare_values(base, candidate, o, 1, row);
  EXPECT_EQ(row.verdict, Verdict::slower);
}

TEST(CompareInput, TracesOfDifferentAnalysesAreRefusedNamingTheFieldAndBothValues) {
  SyntheticSpec b = one_module(1, 1e6), c = one_module(2, 1e6);
  c.analysis_id = "analysis-2";
  const fs::path bp = written("cmp_mismatch_base.jsonl", b);
  const fs::path cp = written("cmp_mismatch_candidate.jsonl", c);
  try {
    (void)cg::compare::compare_traces({bp}, {cp}, Options{});
    FAIL() << "a mismatch was not refused";
  } catch (const cg::InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("meta.analysis_id"), std::string::npos) << what;
    EXPECT_NE(what.find("\"analysis-1\""), std::string::npos) << what;
    EXPECT_NE(what.find("\"analysis-2\""), std::string::npos) << what;
    EXPECT_NE(what.find("--allow-mismatch"), std::string::npos) << what;
  }
  c.analysis_id = "analysis-1";
  c.phase = "train";
  cg_test::write_text(cp.string(), cg_test::synthetic_trace(c));
  Options allow;
  allow.allow_mismatch = true;
  const Report r = cg::compare::compare_traces({bp}, {cp}, allow);
  ASSERT_EQ(r.mismatches.size(), 1u);
  EXPECT_EQ(r.mismatches[0].field, "phase");
  const std::string text = cg::compare::render_text(r, 0);
  EXPECT_NE(text.find("mismatch allowed: meta.phase is \"infer\""), std::string::npos) << text;
  EXPECT_NE(text.find("\"train\""), std::string::npos) << text;
}

TEST(CompareInput, ATraceWithoutEndIsRefusedUnlessLenientAndThenSaidTruncated) {
  SyntheticSpec c = one_module(2, 1e6);
  c.end = false;
  const fs::path bp = written("cmp_trunc_base.jsonl", one_module(1, 1e6));
  const fs::path cp = written("cmp_trunc_candidate.jsonl", c);
  try {
    (void)cg::compare::compare_traces({bp}, {cp}, Options{});
    FAIL() << "a truncated trace was compared";
  } catch (const cg::InputError& e) {
    EXPECT_NE(std::string(e.what()).find(cp.string()), std::string::npos) << e.what();
  }
  Options lenient;
  lenient.lenient = true;
  const Report r = cg::compare::compare_traces({bp}, {cp}, lenient);
  EXPECT_TRUE(r.candidate_runs[0].truncated);
  EXPECT_NE(cg::compare::render_text(r, 0).find("truncated (no end record)"), std::string::npos);
}

TEST(CompareInput, ABadLineIsAnErrorNamingFileAndLine) {
  const fs::path bp = written("cmp_bad_base.jsonl", one_module(1, 1e6));
  const fs::path cp = cg_test::scratch_path("cmp_bad_candidate.jsonl");
  std::string text = cg_test::synthetic_trace(one_module(2, 1e6));
  text.insert(text.find('\n') + 1, "{\"kind\":\"module\",\"path\":3}\n");
  cg_test::write_text(cp.string(), text);
  try {
    (void)cg::compare::compare_traces({bp}, {cp}, Options{});
    FAIL() << "a bad line was accepted";
  } catch (const cg::InputError& e) {
    EXPECT_NE(std::string(e.what()).find(cp.string() + ":2"), std::string::npos) << e.what();
  }
  // --lenient compares the rest and says what it skipped.
  Options lenient;
  lenient.lenient = true;
  const Report r = cg::compare::compare_traces({bp}, {cp}, lenient);
  EXPECT_EQ(r.candidate_runs[0].skipped_lines, 1u);
  EXPECT_EQ(r.rows.front().candidate->observations, 200u);
  EXPECT_NE(cg::compare::render_text(r, 0).find(cp.string() + ": 1 bad line skipped"),
            std::string::npos);
}

// The compact encoding reads as the runtime/4 records it stands for: a trace compared with its
// compact twin differs in nothing.
TEST(CompareInput, ACompactTraceComparesEqualToItsRuntime4Twin) {
  const fs::path dir = fs::path(CG_SOURCE_DIR) / "tests/runtime/fixtures";
  const Report r = cg::compare::compare_traces({dir / "v4_modules.jsonl"},
                                               {dir / "v4c_modules.jsonl"}, Options{});
  ASSERT_FALSE(r.rows.empty());
  for (const auto& row : r.rows) {
    ASSERT_TRUE(row.ratio.has_value()) << row.id;
    EXPECT_EQ(*row.ratio, 1.0) << row.id;
    EXPECT_EQ(row.base->observations, row.candidate->observations) << row.id;
  }
}

TEST(CompareReport, RowsOnOneSideOnlyAreListedNeverDropped) {
  SyntheticSpec b = one_module(1, 1e6), c = one_module(2, 1e6);
  b.modules["model.old_block"] = 5e5;
  c.operations["operation:infer:new:1"] = 3e5;
  const Report r = cg::compare::compare_traces({written("cmp_only_base.jsonl", b)},
                                               {written("cmp_only_candidate.jsonl", c)}, Options{});
  ASSERT_EQ(r.rows.size(), 3u);
  EXPECT_EQ(find_row(r, "model.old_block")->verdict, Verdict::only_in_base);
  EXPECT_EQ(find_row(r, "operation:infer:new:1")->verdict, Verdict::only_in_candidate);
  const std::string text = cg::compare::render_text(r, 0);
  EXPECT_NE(text.find("only in base"), std::string::npos) << text;
  EXPECT_NE(text.find("only in candidate"), std::string::npos) << text;
  EXPECT_NE(text.find("1 only in base, 1 only in candidate"), std::string::npos) << text;
  // --limit 1 lists the compared row and says the two others were left out.
  EXPECT_NE(cg::compare::render_text(r, 1).find("2 more left out"), std::string::npos);
}

Report shifted_report(const std::string& tag) {
  SyntheticSpec b;
  b.seed = 21;
  b.modules = {{"model.a|b", 1e6}, {"model.layers.1", 1e6}, {"model.layers.2", 1e6}};
  SyntheticSpec c = b;
  c.seed = 22;
  c.modules["model.layers.2"] = 0.7e6;
  c.modules["model.layers.1"] = 1.1e6;
  return cg::compare::compare_traces({written("cmp_fmt_base_" + tag + ".jsonl", b)},
                                     {written("cmp_fmt_candidate_" + tag + ".jsonl", c)},
                                     Options{});
}

TEST(CompareReport, JsonCarriesTheDocumentedFieldsAndIsDeterministic) {
  const Report r = shifted_report("json");
  const std::string json = cg::compare::render_json(r, 2);
  EXPECT_EQ(json, cg::compare::render_json(shifted_report("json"), 2));
  simdjson::dom::parser parser;
  simdjson::dom::element doc = parser.parse(json);
  EXPECT_EQ(std::string_view(doc["schema"]), "candle-graph/compare/1");
  EXPECT_EQ(double(doc["settings"]["confidence"]), 0.95);
  EXPECT_EQ(std::uint64_t(doc["settings"]["resamples"]), 2000u);
  EXPECT_EQ(std::uint64_t(doc["settings"]["seed"]), cg::compare::kDefaultSeed);
  EXPECT_EQ(std::string_view(doc["base"]["unit"]), "steps");
  EXPECT_EQ(std::string_view(doc["base"]["runs"].at(0)["analysis_id"]), "analysis-1");
  EXPECT_EQ(std::uint64_t(doc["counts"]["rows"]), 3u);
  EXPECT_EQ(std::uint64_t(doc["counts"]["slower"]), 1u);
  EXPECT_EQ(std::uint64_t(doc["counts"]["faster"]), 1u);
  EXPECT_EQ(std::uint64_t(doc["counts"]["left_out"]), 1u);
  simdjson::dom::array rows = doc["rows"];
  EXPECT_EQ(rows.size(), 2u);
  simdjson::dom::element first = rows.at(0);  // -30% is the largest change
  EXPECT_EQ(std::string_view(first["id"]), "model.layers.2");
  EXPECT_EQ(std::string_view(first["kind"]), "module");
  EXPECT_TRUE(first["op"].is_null());
  EXPECT_EQ(std::string_view(first["verdict"]), "faster");
  EXPECT_NEAR(double(first["ratio"]), 0.7, 0.03);
  EXPECT_LT(double(first["ci_low"]), double(first["ratio"]));
  EXPECT_GT(double(first["ci_high"]), double(first["ratio"]));
  EXPECT_NEAR(double(first["change_pct"]), -30, 3);
  EXPECT_EQ(std::uint64_t(first["base"]["units"]), 200u);
  EXPECT_NEAR(double(first["base"]["median_ns"]), 1e6, 3e4);
}

TEST(CompareReport, MarkdownIsATableWithEscapedIdsAndBoldChanges) {
  const std::string md = cg::compare::render_markdown(shifted_report("md"), 0);
  EXPECT_NE(md.find("| verdict | kind | module path / static id | base | candidate | change | "
                    "interval |\n| --- | --- | --- | ---: | ---: | ---: | --- |\n"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| **faster** | module | model.layers.2 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| **slower** | module | model.layers.1 |"), std::string::npos) << md;
  EXPECT_NE(md.find("model.a\\|b"), std::string::npos) << md;  // a `|` must not split the cell
  EXPECT_NE(md.find("1 slower, 1 faster, 1 no change"), std::string::npos) << md;
}

TEST(CompareReport, TextIsSortedBySizeOfChange) {
  const std::string text = cg::compare::render_text(shifted_report("text"), 0);
  const auto l2 = text.find("model.layers.2"), l1 = text.find("model.layers.1"),
             a = text.find("model.a|b");
  ASSERT_NE(l2, std::string::npos);
  EXPECT_LT(l2, l1) << text;
  EXPECT_LT(l1, a) << text;
  // The row says its change, interval and verdict.
  const std::string row = text.substr(l2, text.find('\n', l2) - l2);
  EXPECT_NE(row.find("-29.9%   [-31.4%, -28.0%]    faster"), std::string::npos) << row;
}

}  // namespace

namespace {

// Statistics drift: a module whose output RMS is 50% higher in the candidate is "higher" with the
// interval holding 1.5; one unchanged is "no change"; a tensor that holds a NaN on a few candidate
// steps and never in the base "became non-finite", comes first and fails --fail-on-regression
// whatever the threshold. Traces without statistics on one side give no statistics rows.
TEST(CompareStats, DriftOfOutputRmsAndANewNaNAreFound) {
  SyntheticSpec base;
  base.seed = 11;
  base.modules = {{"model.layers.0.mlp", 1000}};
  base.rms = {{"model.layers.0.mlp", 1.0}, {"model.norm", 2.0}, {"lm_head", 4.0}};
  SyntheticSpec cand = base;
  cand.seed = 12;
  cand.rms["model.layers.0.mlp"] = 1.5;
  cand.nan_steps["lm_head"] = {40, 41, 90};
  const auto b = written("cmp-stats-base.jsonl", base);
  const auto c = written("cmp-stats-cand.jsonl", cand);
  const Report r = cg::compare::compare_traces({b}, {c}, Options{});
  const Row* mlp = nullptr;
  for (const auto& row : r.rows)
    if (row.kind == cg::compare::RowKind::rms && row.id == "model.layers.0.mlp") mlp = &row;
  ASSERT_NE(mlp, nullptr);
  EXPECT_EQ(mlp->verdict, Verdict::higher);
  ASSERT_TRUE(mlp->ci_low && mlp->ci_high);
  EXPECT_LT(*mlp->ci_low, 1.5);
  EXPECT_GT(*mlp->ci_high, 1.5);
  const Row* norm = find_row(r, "model.norm");
  ASSERT_NE(norm, nullptr);
  EXPECT_EQ(norm->verdict, Verdict::no_change);
  const Row* head = find_row(r, "lm_head");
  ASSERT_NE(head, nullptr);
  EXPECT_EQ(head->verdict, Verdict::became_non_finite);
  EXPECT_EQ(head->candidate->non_finite_samples, 3u);
  EXPECT_EQ(head->base->non_finite_samples, 0u);
  EXPECT_EQ(&r.rows.front(), head);  // listed first
  // --fail-on-regression: the NaN row whatever the threshold; the time row is unchanged.
  const auto reg = cg::compare::regressions(r, 1000.0);
  ASSERT_EQ(reg.size(), 1u);
  EXPECT_EQ(reg.front(), head);
  // Rendered: the text names the verdict and the NaN count, JSON the statistic's median.
  const std::string text = cg::compare::render_text(r, 0);
  EXPECT_NE(text.find("became non-finite"), std::string::npos) << text;
  EXPECT_NE(text.find("(3 NaN/Inf)"), std::string::npos) << text;
  EXPECT_NE(text.find("1 higher, 0 lower, 1 became non-finite"), std::string::npos) << text;
  const std::string json = cg::compare::render_json(r, 0);
  simdjson::dom::parser parser;
  simdjson::dom::element doc = parser.parse(json);
  bool seen = false;
  for (simdjson::dom::element row : doc["rows"].get_array()) {
    if (std::string_view(row["id"].get_string().value()) != "model.layers.0.mlp" ||
        std::string_view(row["kind"].get_string().value()) != "rms")
      continue;
    seen = true;
    EXPECT_EQ(std::string_view(row["verdict"].get_string().value()), "higher");
    EXPECT_NEAR(row["candidate"]["median"].get_double().value() /
                    row["base"]["median"].get_double().value(),
                1.5, 0.1);
  }
  EXPECT_TRUE(seen);

  // A base run without statistics (the program ran without --stats): no statistics rows at all.
  SyntheticSpec plain = base;
  plain.rms.clear();
  const auto p = written("cmp-stats-plain.jsonl", plain);
  const Report none = cg::compare::compare_traces({p}, {c}, Options{});
  for (const auto& row : none.rows)
    EXPECT_FALSE(cg::compare::is_stats(row.kind)) << row.id;
}

}  // namespace
