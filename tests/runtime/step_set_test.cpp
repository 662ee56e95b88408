// Distinct steps are counted in runs: a trace of 10^7 steps (one operation each) held them in a
// std::set, 0.9 GB; as runs it is one entry. Hostile gaps end in an error, not memory.
#include <gtest/gtest.h>

#include <cstdint>
#include <stdexcept>

#include "runtime/aggregate.hpp"

namespace cg::runtime {
namespace {

TEST(StepSet, ConsecutiveStepsAreOneRun) {
  StepSet s;
  for (std::uint64_t i = 0; i < 100000; ++i) {
    s.insert(i);
    s.insert(i);  // every operation of a step repeats it
  }
  EXPECT_EQ(s.size(), 100000u);
  EXPECT_EQ(s.runs(), 1u);
}

TEST(StepSet, OutOfOrderRepeatedAndJoiningSteps) {
  StepSet s;
  for (std::uint64_t step : {5u, 3u, 4u, 4u, 10u, 8u, 9u, 7u})
    s.insert(step);
  EXPECT_EQ(s.size(), 7u);  // 3 4 5 7 8 9 10
  EXPECT_EQ(s.runs(), 2u);
  s.insert(6);
  EXPECT_EQ(s.size(), 8u);
  EXPECT_EQ(s.runs(), 1u);
  StepSet top;
  top.insert(~std::uint64_t{0});
  top.insert(~std::uint64_t{0} - 1);
  EXPECT_EQ(top.size(), 2u);
  EXPECT_EQ(top.runs(), 1u);
}

TEST(StepSet, MergeCountsEachStepOnce) {
  StepSet a, b;
  for (std::uint64_t step : {1u, 2u, 3u, 20u})
    a.insert(step);
  for (std::uint64_t step : {3u, 4u, 7u, 21u})
    b.insert(step);
  a.insert(b);
  EXPECT_EQ(a.size(), 7u);  // 1 2 3 4 7 20 21
  EXPECT_EQ(a.runs(), 3u);
}

TEST(StepSet, TooManySeparateRunsIsAnError) {
  StepSet s;
  for (std::uint64_t i = 0; i < StepSet::kMaxStepRuns; ++i)
    s.insert(2 * i);
  EXPECT_EQ(s.runs(), StepSet::kMaxStepRuns);
  s.insert(1);  // joins two runs: fewer, not more
  EXPECT_EQ(s.runs(), StepSet::kMaxStepRuns - 1);
  s.insert(2 * StepSet::kMaxStepRuns + 10);
  EXPECT_THROW(s.insert(2 * StepSet::kMaxStepRuns + 20), std::length_error);
}

}  // namespace
}  // namespace cg::runtime
