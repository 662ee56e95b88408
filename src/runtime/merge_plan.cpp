#include "runtime/merge_plan.hpp"

#include <algorithm>
#include <cstdio>

#include "util/parallel.hpp"

namespace cg::runtime {
namespace {

std::string format_norm(std::optional<double> norm) {
  if (!norm) return "none";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", *norm);
  return buf;
}

void add(std::vector<RuntimeFinding>& out, std::string rule, Severity s, Confidence c,
         std::string message, std::vector<std::string> related = {}) {
  out.push_back({std::move(rule), s, c, std::move(message), std::move(related)});
}

void conflict_findings(const RuntimeAudit& a, const std::string& suffix,
                       std::vector<RuntimeFinding>& out) {
  for (const auto& c : a.tensor_conflicts) {
    std::string values;
    for (const auto& v : c.values)
      values += (values.empty() ? "" : ", ") + v;
    add(out, "runtime-tensor-conflict", Severity::error, Confidence::unknown,
        c.static_id + " has conflicting runtime " + c.kind + ": " + values + suffix, {c.static_id});
  }
  for (const auto& c : a.gradient_conflicts) {
    std::string states;
    for (const auto& s : c.states)
      states += (states.empty() ? "" : ", ") + s;
    std::string at = c.step ? " at step " + std::to_string(*c.step) : " (facts without a step)";
    add(out, "runtime-gradient-conflict", Severity::error, Confidence::unknown,
        c.root + ":" + c.key + " has contradictory gradient observations" + at + ": " + states +
            suffix);
  }
}

}  // namespace

namespace {

LoadedTrace read_one(const std::filesystem::path& path, const ReadOptions& options) {
  LoadedTrace out;
  out.info = read_trace(path, out.aggregate, options);
  if (!out.info.duplicate_lines.empty() || !out.info.later_children_ns.empty()) {
    // Read again with what the first read learned at the end: lenient mode skips the repeated
    // ids rather than aggregating them, and parents subtract the children listed after them.
    ReadOptions again = options;
    again.skip_lines.insert(out.info.duplicate_lines.begin(), out.info.duplicate_lines.end());
    out.aggregate = TraceAggregate();
    out.aggregate.subtract_later_children(std::move(out.info.later_children_ns));
    out.info = read_trace(path, out.aggregate, again);
  }
  out.info.span_ns = out.aggregate.span_ns();
  return out;
}

}  // namespace

// Traces (one per rank) are read in parallel, one per core at a time, each streaming; the
// first failing trace in the order given is the error reported.
std::vector<LoadedTrace> read_traces(const std::vector<std::filesystem::path>& paths,
                                     const ReadOptions& options) {
  std::vector<LoadedTrace> out(paths.size());
  for_each_index_in_parallel(paths.size(),
                             [&](std::size_t i) { out[i] = read_one(paths[i], options); });
  return out;
}

TimingRecord timing_record(const TimingStats& s) {
  return {s.samples(), s.total_ns(), s.mean_ns(), s.min_ns(), s.max_ns(), s.p50_ns(), s.p95_ns()};
}

MergePlan plan_merge(const std::vector<LoadedTrace>& traces, const Identity& expected,
                     const StaticModel& model) {
  MergePlan plan;
  TraceAggregate merged;
  for (const auto& t : traces) {
    TraceVerdict v;
    v.path = t.info.path;
    v.schema = std::string(schema_name(t.info.meta.schema));
    v.entrypoint = t.info.meta.entrypoint;
    v.phase = t.info.meta.phase;
    v.analysis_id = t.info.meta.analysis_id;
    v.build_id = t.info.meta.build_id;
    v.mismatches = identity_mismatches(t.info.meta, expected);
    v.merged = v.mismatches.empty();
    v.operations = t.info.operations;
    v.skipped_lines = t.info.skipped_lines;
    v.truncated = t.info.truncated;
    for (const auto& m : v.mismatches) {
      add(plan.findings, "runtime-identity", Severity::error, Confidence::unknown,
          "runtime " + m.field + " mismatch in " + v.path + ": expected " + m.expected +
              ", observed " + m.observed + "; trace was not merged");
    }
    if (v.merged) {
      merged.merge(t.aggregate);
    } else {
      // Conflicts are reported even for a trace that is not merged (§2.6).
      conflict_findings(audit(t.aggregate), " (in " + v.path + ", not merged)", plan.findings);
    }
    if (t.info.skipped_lines > 0) {
      add(plan.findings, "runtime-skipped-lines", Severity::warning, Confidence::proven,
          v.path + ": " + std::to_string(t.info.skipped_lines) +
              " bad lines were skipped (--lenient)");
    }
    if (t.info.unknown_kind_lines > 0) {
      add(plan.findings, "runtime-unknown-kind", Severity::warning, Confidence::proven,
          v.path + ": " + std::to_string(t.info.unknown_kind_lines) +
              " lines of an unknown record kind were skipped (--lenient)");
    }
    if (t.info.end && t.info.end->open_modules > 0) {
      add(plan.findings, "runtime-module-scopes", Severity::warning, Confidence::proven,
          v.path + ": " + std::to_string(t.info.end->open_modules) +
              " module scopes were begun and never closed; they have no timing");
    }
    if (t.info.module_parents_unresolved > 0) {
      add(plan.findings, "runtime-module-scopes", Severity::warning, Confidence::proven,
          v.path + ": " + std::to_string(t.info.module_parents_unresolved) +
              " module scopes name a parent scope that is not in the trace (never closed or not "
              "a module scope); their time counts as their own parents'");
    }
    if (t.info.module_scopes_out_of_order > 0) {
      add(plan.findings, "runtime-module-scopes", Severity::warning, Confidence::proven,
          v.path + ": " + std::to_string(t.info.module_scopes_out_of_order) +
              " module scopes have a child scope lying partly outside their interval; their "
              "self times (duration minus their children's) are understated by the part "
              "outside");
    }
    if (t.info.truncated) {
      add(plan.findings, "runtime-truncated", Severity::warning, Confidence::proven,
          v.path + ": trace is truncated (no end record); timings cover what was written");
    }
    if (t.info.end_counts_disagree) {
      add(plan.findings, "runtime-truncated", Severity::warning, Confidence::proven,
          v.path + ": the end record counts " +
              std::to_string(t.info.end ? t.info.end->operations : 0) +
              " operations but the trace has " + std::to_string(t.info.operations) +
              (t.info.end && t.info.end->stats != t.info.stats
                   ? "; it counts " + std::to_string(t.info.end->stats) +
                         " stats records, the trace has " + std::to_string(t.info.stats)
                   : std::string()) +
              " (the file was damaged; --lenient); timings cover what was read");
    }
    plan.traces.push_back(std::move(v));
  }

  plan.audit = audit(merged);
  conflict_findings(plan.audit, "", plan.findings);

  std::map<std::string, std::uint64_t> unmapped;  // "kind id" → observations
  std::vector<std::string> op_ids;
  op_ids.reserve(merged.operations.size());
  for (const auto& [id, s] : merged.operations)
    op_ids.push_back(id);
  std::sort(op_ids.begin(), op_ids.end());
  for (const auto& id : op_ids) {
    const OperationStats& s = merged.operations.at(id);
    if (!model.has_operation(id)) {
      unmapped["operation " + id] += s.observations;
      continue;
    }
    OperationTiming o{id, s.op, timing_record(s.timing), {}, std::nullopt};
    if (merged.nested_records > 0) o.self_ns = s.self.total_ns();
    for (const auto& [phase, t] : s.by_phase)
      o.by_phase[phase] = timing_record(t);
    plan.operations.push_back(std::move(o));
  }
  for (const auto& [key, t] : merged.edges) {
    for (const auto* end : {&key.first, &key.second}) {
      if (!model.has_operation(*end) && !model.has_tensor(*end)) {
        unmapped["edge end " + *end] += t.samples();
      }
    }
    plan.edges.push_back({key.first, key.second, timing_record(t)});
  }
  for (const auto& [id, t] : merged.tensors) {
    bool agreed = t.dtypes.size() == 1 && t.devices.size() == 1 && t.shapes.size() == 1 &&
                  t.layouts.size() == 1 && t.requires_grads.size() == 1;
    if (!model.has_tensor(id)) {
      unmapped["tensor " + id] += t.observations;
      continue;
    }
    if (!agreed) continue;  // reported as a conflict
    plan.tensors.push_back({id, t.shape, *t.dtypes.begin(), *t.devices.begin(), t.contiguous,
                            t.requires_grad, t.first_source,
                            "agreed runtime observation " + t.first_event_id + " (" +
                                std::to_string(t.observations) + " observations)"});
  }
  for (const auto& [identity, series] : merged.gradients) {
    if (model.parameters_for(identity.first, identity.second).empty()) {
      unmapped["gradient " + identity.first + ":" + identity.second] += series.observations;
    }
  }
  for (const auto& v : plan.audit.verdicts) {
    auto params = model.parameters_for(v.root, v.key);
    if (params.empty()) continue;  // reported as unmapped above
    std::string detail = "gradient " + std::string(gradient_state_name(v.state)) + ", norm " +
                         format_norm(v.norm) +
                         (v.step ? " at step " + std::to_string(*v.step) + " (latest)" : "");
    plan.gradients.push_back({params, detail});
    if (v.state != GradientState::present) {
      bool nonfinite = v.state == GradientState::non_finite;
      add(plan.findings, "runtime-gradient", nonfinite ? Severity::error : Severity::warning,
          Confidence::proven,
          v.root + ":" + v.key + " runtime gradient is " +
              std::string(gradient_state_name(v.state)) +
              (v.step ? " at step " + std::to_string(*v.step) : ""),
          params);
    }
  }
  for (const auto& [what, n] : unmapped) {
    add(plan.findings, "runtime-unmapped", Severity::information, Confidence::unknown,
        "runtime " + what + " (" + std::to_string(n) +
            " observations) does not exist in this analysis");
  }
  if (merged.operations_without_static_id > 0) {
    add(plan.findings, "runtime-unmapped", Severity::information, Confidence::unknown,
        std::to_string(merged.operations_without_static_id) +
            " runtime operations carry no static_id and cannot be attributed");
  }
  if (merged.tensors_without_static_id > 0) {
    add(plan.findings, "runtime-unmapped", Severity::information, Confidence::unknown,
        std::to_string(merged.tensors_without_static_id) +
            " runtime tensor observations carry no static_id and cannot be attributed");
  }

  plan.tensor_observations = merged.tensor_observations;
  for (const auto& [id, s] : merged.operations)
    plan.operation_observations += s.observations;
  plan.operation_observations += merged.operations_without_static_id;
  plan.gradient_observations = merged.gradient_observations;
  plan.value_observations = merged.value_observations;
  for (const auto& [k, t] : merged.edges)
    plan.edge_observations += t.samples();
  if (merged.all_operations.samples() > 0) plan.mean_operation_ns = merged.all_operations.mean_ns();
  plan.top_level_ns = merged.top_level_ns;
  plan.steps = merged.steps.size();
  plan.modules = merged.modules;
  plan.device_sync = merged.traces > 0 && merged.device_sync;
  plan.thread_busy_ns = merged.thread_wall_ns();
  plan.wall_ns = merged.span_ns();
  plan.stats_records = merged.stats_records;
  plan.output_stats = merged.output_stats;
  plan.grad_stats = merged.grad_stats;
  plan.first_output_in_step = merged.first_output_in_step;
  return plan;
}

ProfileReport profile_report(const std::vector<OperationTiming>& operations,
                             std::uint64_t step_time_ns, std::uint64_t steps,
                             const StaticModel& model, bool by_self) {
  ProfileReport r;
  r.step_time_ns = step_time_ns;
  r.steps = steps;
  auto share = [&](std::uint64_t ns) {
    return step_time_ns ? static_cast<double>(ns) / static_cast<double>(step_time_ns) : 0.0;
  };
  auto add = [](std::uint64_t a, std::uint64_t b) {
    return a > ~std::uint64_t{0} - b ? ~std::uint64_t{0} : a + b;
  };
  std::map<std::string, ProfileRow> modules;
  for (const auto& o : operations) {
    const std::uint64_t self = o.self_ns.value_or(o.timing.total_ns);
    ProfileRow row{o.static_id, o.op, o.timing, share(self)};
    row.self_ns = self;
    row.total_share = share(o.timing.total_ns);
    r.operations.push_back(std::move(row));
    std::string owner = model.module_of_operation(o.static_id).value_or("<unknown>");
    ProfileRow& m = modules[owner];
    m.id = owner;
    m.sums_only = true;
    m.timing.samples = add(m.timing.samples, o.timing.samples);
    m.timing.total_ns = add(m.timing.total_ns, o.timing.total_ns);
    m.self_ns = add(m.self_ns, self);
  }
  for (auto& [owner, m] : modules) {
    m.share_of_step = share(m.self_ns);
    m.total_share = share(m.timing.total_ns);
    r.modules.push_back(std::move(m));
  }
  auto order = [by_self](const ProfileRow& a, const ProfileRow& b) {
    const std::uint64_t x = by_self ? a.self_ns : a.timing.total_ns;
    const std::uint64_t y = by_self ? b.self_ns : b.timing.total_ns;
    return x != y ? x > y : a.id < b.id;
  };
  std::sort(r.operations.begin(), r.operations.end(), order);
  std::sort(r.modules.begin(), r.modules.end(), order);
  return r;
}

}  // namespace cg::runtime
