#include "runtime/audit.hpp"

#include <algorithm>

namespace cg::runtime {
namespace {

std::vector<std::string> state_names(std::uint8_t states) {
  std::vector<std::string> out;
  for (unsigned i = 0; i < 4; ++i) {
    if (states & (1u << i)) out.emplace_back(gradient_state_name(static_cast<GradientState>(i)));
  }
  std::sort(out.begin(), out.end());
  return out;
}

bool single_state(std::uint8_t states) {
  return states && !(states & (states - 1));
}

GradientState the_state(std::uint8_t states) {
  unsigned i = 0;
  while (!(states & (1u << i)))
    ++i;
  return static_cast<GradientState>(i);
}

}  // namespace

RuntimeAudit audit(const TraceAggregate& aggregate) {
  RuntimeAudit a;
  for (const auto& [identity, series] : aggregate.gradients) {
    // Named copies, not structured bindings: clang 14 cannot capture bindings in lambdas.
    const std::string& root = identity.first;
    const std::string& key = identity.second;
    auto conflict = [&](std::optional<std::uint64_t> step, const GradientStepFacts& f) {
      a.gradient_conflicts.push_back({root, key, step, state_names(f.states), f.event_ids});
    };
    for (const auto& [step, facts] : series.steps) {
      if (!single_state(facts.states)) conflict(step, facts);
      if (facts.states & (1u << static_cast<unsigned>(GradientState::non_finite))) {
        a.first_non_finite_step = std::min(a.first_non_finite_step.value_or(step), step);
      }
    }
    if (series.unstepped && !single_state(series.unstepped->states)) {
      conflict(std::nullopt, *series.unstepped);
    }
    const GradientStepFacts* decisive = nullptr;
    std::optional<std::uint64_t> step;
    if (!series.steps.empty()) {
      decisive = &series.steps.rbegin()->second;
      step = series.steps.rbegin()->first;
    } else if (series.unstepped) {
      decisive = &*series.unstepped;
    }
    if (!decisive || !single_state(decisive->states)) continue;  // conflicted: reported above
    GradientVerdict v{root, key, the_state(decisive->states), step,
                      decisive->norms_agree ? decisive->norm : std::nullopt};
    switch (v.state) {
      case GradientState::missing:
        a.missing_gradients.push_back(v);
        break;
      case GradientState::zero:
        a.zero_gradients.push_back(v);
        break;
      case GradientState::non_finite:
        a.non_finite_gradients.push_back(v);
        break;
      case GradientState::present:
        break;
    }
    a.verdicts.push_back(std::move(v));
  }
  for (const auto& [sid, t] : aggregate.tensors) {
    const std::pair<const char*, const std::set<std::string>*> kinds[] = {
        {"dtype", &t.dtypes},
        {"device", &t.devices},
        {"shape", &t.shapes},
        {"layout", &t.layouts},
        {"requires_grad", &t.requires_grads}};
    for (const auto& [kind, values] : kinds) {
      if (values->size() > 1) {
        a.tensor_conflicts.push_back({sid, kind, {values->begin(), values->end()}});
      }
    }
  }
  a.saturating_activations.assign(aggregate.saturating_sources.begin(),
                                  aggregate.saturating_sources.end());
  return a;
}

std::vector<IdentityMismatch> identity_mismatches(const RunMeta& trace, const Identity& expected) {
  std::vector<IdentityMismatch> out;
  if (trace.analysis_id && expected.analysis_id && *trace.analysis_id != *expected.analysis_id) {
    out.push_back({"analysis_id", *expected.analysis_id, *trace.analysis_id});
  }
  if (trace.build_id && expected.build_id && *trace.build_id != *expected.build_id) {
    out.push_back({"build_id", *expected.build_id, *trace.build_id});
  }
  return out;
}

}  // namespace cg::runtime
