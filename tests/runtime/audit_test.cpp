#include "runtime/audit.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "trace_test_util.hpp"

namespace cg::runtime {
namespace {

using ::testing::ElementsAre;
using testing::fixture;
using testing::load;

const GradientConflict* conflict_for(const RuntimeAudit& a, const std::string& key) {
  for (const auto& c : a.gradient_conflicts) {
    if (c.key == key) return &c;
  }
  return nullptr;
}

TEST(Audit, LatestStepWinsInAStepSeries) {
  auto a = audit(load(fixture("gradients_series.jsonl")).aggregate);
  // a: present at 1, non_finite at 2 → non_finite now; b: non_finite at 1, present at 2 → healthy.
  ASSERT_EQ(a.non_finite_gradients.size(), 1u);
  EXPECT_EQ(a.non_finite_gradients[0].key, "a.weight");
  EXPECT_EQ(a.non_finite_gradients[0].step, 2u);
  // The first non-finite step counts every non-finite fact, healed ones included.
  EXPECT_EQ(a.first_non_finite_step, 1u);
}

TEST(Audit, DifferentStatesAtTheSameStepAreAConflict) {
  auto a = audit(load(fixture("gradients_series.jsonl")).aggregate);
  const auto* c = conflict_for(a, "c.weight");
  ASSERT_NE(c, nullptr);  // the reference never reported this when every fact had a step
  EXPECT_EQ(c->step, 3u);
  EXPECT_THAT(c->states, ElementsAre("present", "zero"));
  EXPECT_THAT(c->event_ids, ElementsAre("g-c-1", "g-c-2"));
}

TEST(Audit, UnsteppedDisagreementIsAConflictAndAgreementClassifies) {
  auto a = audit(load(fixture("gradients_series.jsonl")).aggregate);
  const auto* d = conflict_for(a, "d.weight");
  ASSERT_NE(d, nullptr);
  EXPECT_FALSE(d->step.has_value());
  EXPECT_THAT(d->states, ElementsAre("missing", "present"));
  // e: zero without norm and zero with −0.0 agree on the state.
  ASSERT_EQ(a.zero_gradients.size(), 1u);
  EXPECT_EQ(a.zero_gradients[0].key, "e.weight");
  EXPECT_TRUE(a.missing_gradients.empty());
  EXPECT_FALSE(a.is_clean());
}

TEST(Audit, TensorConflictsPerAttributeAndAgreementOtherwise) {
  auto l = load(fixture("tensors_conflict.jsonl"));
  auto a = audit(l.aggregate);
  ASSERT_EQ(a.tensor_conflicts.size(), 1u);
  EXPECT_EQ(a.tensor_conflicts[0].static_id, "tensor:infer:f:0");
  EXPECT_EQ(a.tensor_conflicts[0].kind, "shape");
  EXPECT_THAT(a.tensor_conflicts[0].values, ElementsAre("[2, 3]", "[2, 4]"));
  // Observations differing only in step agree; one without a static id is only counted.
  EXPECT_EQ(l.aggregate.tensors.at("tensor:infer:f:1").observations, 2u);
  EXPECT_EQ(l.aggregate.tensors_without_static_id, 1u);
}

TEST(Audit, IdentityOmittedOnEitherSideIsCompatible) {
  RunMeta trace;
  trace.analysis_id = "analysis:x";
  EXPECT_TRUE(identity_mismatches(trace, Identity{}).empty());
  EXPECT_TRUE(identity_mismatches(RunMeta{}, Identity{"analysis:y", "b"}).empty());
  auto m = identity_mismatches(trace, Identity{"analysis:y", std::nullopt});
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].field, "analysis_id");
  EXPECT_EQ(m[0].expected, "analysis:y");
  EXPECT_EQ(m[0].observed, "analysis:x");
}

}  // namespace
}  // namespace cg::runtime
