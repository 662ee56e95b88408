#include "runtime/timing_stats.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

namespace cg::runtime {
namespace {

std::uint64_t nearest_rank(std::vector<std::uint64_t> v, double q) {
  std::sort(v.begin(), v.end());
  auto rank = static_cast<std::size_t>(std::ceil(q * static_cast<double>(v.size())));
  return v[std::max<std::size_t>(rank, 1) - 1];
}

TEST(TimingStats, SmallSeriesAreExact) {
  TimingStats s;
  for (std::uint64_t v : {500u, 100u, 300u, 200u, 400u})
    s.add(v);
  EXPECT_EQ(s.samples(), 5u);
  EXPECT_EQ(s.total_ns(), 1500u);
  EXPECT_EQ(s.mean_ns(), 300u);
  EXPECT_EQ(s.min_ns(), 100u);
  EXPECT_EQ(s.max_ns(), 500u);
  EXPECT_EQ(s.p50_ns(), 300u);
  EXPECT_EQ(s.p95_ns(), 500u);
}

TEST(TimingStats, LargeSeriesQuantilesWithinOnePercent) {
  std::mt19937_64 rng(42);
  std::lognormal_distribution<double> dist(9.0, 1.2);  // ~8 µs median, long tail
  std::vector<std::uint64_t> values;
  TimingStats s;
  for (int i = 0; i < 200000; ++i) {
    auto v = static_cast<std::uint64_t>(dist(rng)) + 1;
    values.push_back(v);
    s.add(v);
  }
  for (double q : {0.5, 0.95, 0.99}) {
    double exact = static_cast<double>(nearest_rank(values, q));
    double got = static_cast<double>(s.quantile_ns(q));
    EXPECT_LE(std::abs(got - exact) / exact, 0.01) << "q=" << q;
  }
  EXPECT_EQ(s.min_ns(), *std::min_element(values.begin(), values.end()));
  EXPECT_EQ(s.max_ns(), *std::max_element(values.begin(), values.end()));
}

TEST(TimingStats, MergeEqualsAddingEverything) {
  TimingStats a, b, all;
  for (std::uint64_t v = 1; v <= 5000; ++v) {
    (v % 3 ? a : b).add(v * 37);
    all.add(v * 37);
  }
  a.merge(b);
  EXPECT_EQ(a.samples(), all.samples());
  EXPECT_EQ(a.total_ns(), all.total_ns());
  EXPECT_EQ(a.min_ns(), all.min_ns());
  EXPECT_EQ(a.p50_ns(), all.p50_ns());
  EXPECT_EQ(a.p95_ns(), all.p95_ns());
}

TEST(TimingStats, TotalSaturatesInsteadOfWrapping) {
  TimingStats s;
  s.add(~std::uint64_t{0} - 5);
  s.add(100);
  EXPECT_EQ(s.total_ns(), ~std::uint64_t{0});
  EXPECT_EQ(s.max_ns(), ~std::uint64_t{0} - 5);
}

}  // namespace
}  // namespace cg::runtime
