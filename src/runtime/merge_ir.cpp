#include "runtime/merge_ir.hpp"

#include <algorithm>
#include <cctype>

#include "ir/stable_id.hpp"

namespace cg::runtime {
namespace {

ir::TimingStats to_ir(const TimingRecord& t) {
  return {t.samples, t.total_ns, t.mean_ns, t.min_ns, t.max_ns, t.p50_ns, t.p95_ns};
}

TimingRecord from_ir(const ir::TimingStats& t) {
  return {t.samples, t.total_ns, t.mean_ns, t.min_ns, t.max_ns, t.p50_ns, t.p95_ns};
}

// §2.2: cpu; cuda with the first integer after splitting on ':', '(' and ')'; metal; else unknown.
ir::DeviceFact parse_device(const std::string& d) {
  ir::DeviceFact f;
  if (d == "cpu") {
    f.kind = ir::DeviceKind::cpu;
  } else if (d.rfind("cuda", 0) == 0) {
    f.kind = ir::DeviceKind::cuda;
    std::string part;
    for (char c : d + ":") {
      if (c == ':' || c == '(' || c == ')') {
        if (!part.empty() &&
            std::all_of(part.begin(), part.end(), [](char x) { return std::isdigit(x) != 0; })) {
          f.ordinal = std::stoull(part);
          break;
        }
        part.clear();
      } else {
        part += c;
      }
    }
  } else if (d.rfind("metal", 0) == 0) {
    f.kind = ir::DeviceKind::metal;
  }
  return f;
}

ir::Severity to_ir(Severity s) {
  switch (s) {
    case Severity::error:
      return ir::Severity::error;
    case Severity::warning:
      return ir::Severity::warning;
    case Severity::information:
      break;
  }
  return ir::Severity::information;
}

std::optional<ir::ExecutionPhase> phase_of(const std::optional<std::string>& p) {
  if (!p) return std::nullopt;
  std::string s;
  for (char c : *p)
    s += c == '-' ? '_' : static_cast<char>(std::tolower(c));
  if (s == "train" || s == "training") return ir::ExecutionPhase::train;
  if (s == "infer" || s == "inference" || s == "eval" || s == "evaluate") {
    return ir::ExecutionPhase::infer;
  }
  return std::nullopt;
}

}  // namespace

IrStaticModel::IrStaticModel(const ir::ModelIr& ir) {
  StringMap<std::optional<std::string>> owners;
  for (const auto& f : ir.functions)
    owners[f.id] = f.owner_type;
  for (const auto& o : ir.operations) {
    auto it = owners.find(o.function);
    operations_[o.id] = it == owners.end() ? std::nullopt : it->second;
  }
  for (const auto& t : ir.tensors)
    tensors_[t.id] = true;
  for (const auto& p : ir.parameters)
    parameters_[{p.builder_root, p.key}].push_back(p.id);
}

bool IrStaticModel::has_operation(std::string_view id) const {
  return operations_.find(id) != operations_.end();
}
bool IrStaticModel::has_tensor(std::string_view id) const {
  return tensors_.find(id) != tensors_.end();
}
std::vector<std::string> IrStaticModel::parameters_for(std::string_view root,
                                                       std::string_view key) const {
  auto it = parameters_.find({std::string(root), std::string(key)});
  return it == parameters_.end() ? std::vector<std::string>{} : it->second;
}
std::optional<std::string> IrStaticModel::module_of_operation(std::string_view id) const {
  auto it = operations_.find(id);
  return it == operations_.end() ? std::nullopt : it->second;
}

Identity expected_identity(const ir::ModelIr& ir) {
  Identity id;
  if (!ir.analysis_id.empty()) id.analysis_id = ir.analysis_id;
  if (ir.cargo && !ir.cargo->build_id.empty()) id.build_id = ir.cargo->build_id;
  return id;
}

namespace {

// Module scope paths → IR module instances and families (module_paths.hpp); unmatched paths are
// counted and listed (the first 100) in the summary and a finding.
void resolve_module_timings(const ir::ModelIr& ir, const MergePlan& plan,
                            const ModulePathOptions& options, ir::RuntimeSummary& s,
                            std::vector<ir::Finding>& findings) {
  constexpr std::size_t kExamples = 100;
  std::vector<std::string> paths;
  for (const auto& [path, stats] : plan.modules)
    paths.push_back(path);
  ModulePathResolver resolver(ir, options);
  auto matches = resolver.resolve(paths);
  struct Family {
    std::string module;
    TimingStats total, self;
  };
  std::map<std::string, Family> families;
  std::vector<std::string> unmatched;
  for (const auto& [path, stats] : plan.modules) {
    const auto& m = matches.at(path);
    if (!m) {
      // Still a timed scope (a layer a local helper builds, which the analysis lists no module
      // for): its own row, with no module, so its time is not lost from the table.
      unmatched.push_back(path);
      ir::ModuleTiming t;
      t.path = path;
      t.calls = stats.total.samples();
      t.total = to_ir(timing_record(stats.total));
      t.self = to_ir(timing_record(stats.self));
      s.module_timings.push_back(std::move(t));
      continue;
    }
    ir::ModuleTiming t;
    t.path = path;
    t.module = m->module;
    t.instance = m->instance;
    t.calls = stats.total.samples();
    t.total = to_ir(timing_record(stats.total));
    t.self = to_ir(timing_record(stats.self));
    s.module_timings.push_back(std::move(t));
    if (m->family) {
      Family& f = families[m->family_path];
      f.module = m->module;
      f.total.merge(stats.total);
      f.self.merge(stats.self);
    }
  }
  for (const auto& [path, f] : families) {
    s.module_timings.push_back({path, f.module, std::nullopt, f.total.samples(),
                                to_ir(timing_record(f.total)), to_ir(timing_record(f.self))});
  }
  s.unmatched_module_paths = unmatched.size();
  for (std::size_t i = 0; i < unmatched.size() && i < kExamples; ++i)
    s.unmatched_module_path_examples.push_back(unmatched[i]);
  if (!unmatched.empty()) {
    std::string first;
    for (std::size_t i = 0; i < unmatched.size() && i < 3; ++i)
      first += (i ? ", " : "") + unmatched[i];
    std::string where = "no component";
    for (const auto& c : ir.components) {
      if (c.id == resolver.component()) where = c.qualified_name.empty() ? c.id : c.qualified_name;
    }
    std::string message =
        std::to_string(unmatched.size()) + " traced module scope paths name no module of " + where +
        (options.prefix.empty() ? "" : " under prefix `" + options.prefix + "`") +
        " (first: " + first +
        "); each is listed with its time and no module (runtime.unmatched_module_path_examples)" +
        (options.prefix.empty() ? "; pass --prefix if the program pushes one before the root "
                                  "constructor"
                                : "");
    findings.push_back(ir::make_finding("runtime-unmapped", ir::Severity::information,
                                        ir::Confidence::unknown, message, ""));
  }
}

}  // namespace

MergePlan merge_runtime(ir::ModelIr& ir, const std::vector<LoadedTrace>& traces,
                        const ModulePathOptions& modules) {
  IrStaticModel model(ir);
  MergePlan plan = plan_merge(traces, expected_identity(ir), model);

  std::map<std::string, const OperationTiming*> timings;
  for (const auto& o : plan.operations)
    timings[o.static_id] = &o;
  for (auto& op : ir.operations) {
    auto it = timings.find(op.id);
    if (it == timings.end()) continue;
    ir::OperationTiming t;
    t.stats = to_ir(it->second->timing);
    for (const auto& [phase, r] : it->second->by_phase)
      t.by_phase[phase] = to_ir(r);
    t.self_ns = it->second->self_ns;
    op.timing = std::move(t);
    op.evidence.push_back({ir::EvidenceKind::runtime, ir::Confidence::proven, std::nullopt,
                           "runtime operation observed as " + it->second->op + " (" +
                               std::to_string(it->second->timing.samples) + " timed samples)"});
  }
  std::map<std::string, const TensorRefinement*> refinements;
  for (const auto& t : plan.tensors)
    refinements[t.static_id] = &t;
  for (auto& tensor : ir.tensors) {
    auto it = refinements.find(tensor.id);
    if (it == refinements.end()) continue;
    const TensorRefinement& r = *it->second;
    tensor.shape.rank = r.shape.size();
    tensor.shape.dimensions.clear();
    for (auto d : r.shape)
      tensor.shape.dimensions.push_back({std::nullopt, std::to_string(d)});
    tensor.dtype = r.dtype;
    tensor.device = parse_device(r.device);
    tensor.layout.kind = r.contiguous ? ir::LayoutKind::contiguous : ir::LayoutKind::non_contiguous;
    tensor.requires_grad = r.requires_grad;
    tensor.evidence.push_back({ir::EvidenceKind::runtime, ir::Confidence::proven,
                               r.source.empty() ? std::nullopt : std::optional(r.source),
                               r.detail});
  }
  std::map<std::string, std::vector<std::string>> gradient_details;
  for (const auto& g : plan.gradients) {
    for (const auto& p : g.parameter_ids)
      gradient_details[p].push_back(g.detail);
  }
  for (auto& p : ir.parameters) {
    auto it = gradient_details.find(p.id);
    if (it == gradient_details.end()) continue;
    for (const auto& d : it->second) {
      p.evidence.push_back({ir::EvidenceKind::runtime, ir::Confidence::proven, std::nullopt, d});
    }
  }
  for (const auto& f : plan.findings) {
    ir::Finding out;
    out.id = ir::finding_id(f.rule, "", f.message);
    out.rule = f.rule;
    out.severity = to_ir(f.severity);
    out.confidence =
        f.confidence == Confidence::proven ? ir::Confidence::proven : ir::Confidence::unknown;
    out.message = f.message;
    out.related = f.related;
    ir.findings.push_back(std::move(out));
  }

  ir::RuntimeSummary s;
  // Several traces: the first merged one names the run; all counts are over merged traces.
  const TraceVerdict* first = nullptr;
  for (const auto& t : plan.traces) {
    if (t.merged) {
      first = &t;
      break;
    }
  }
  if (!first && !plan.traces.empty()) first = &plan.traces.front();
  if (first) {
    s.trace_schema = first->schema;
    s.entrypoint = first->entrypoint;
    s.execution_phase = phase_of(first->phase);
  }
  for (const auto& t : traces) {
    if (first && t.info.path == first->path) s.profile = t.info.meta.profile;
  }
  s.tensor_observations = plan.tensor_observations;
  s.operation_observations = plan.operation_observations;
  s.gradient_observations = plan.gradient_observations;
  s.value_observations = plan.value_observations;
  s.missing_gradients = plan.audit.missing_gradients.size();
  s.zero_gradients = plan.audit.zero_gradients.size();
  s.non_finite_gradients = plan.audit.non_finite_gradients.size();
  s.tensor_conflicts = plan.audit.tensor_conflicts.size();
  s.gradient_conflicts = plan.audit.gradient_conflicts.size();
  for (const auto& t : plan.traces)
    s.identity_mismatches += t.mismatches.size();
  s.first_non_finite_step = plan.audit.first_non_finite_step;
  s.saturating_activations = plan.audit.saturating_activations.size();
  s.avg_operation_duration_ns = plan.mean_operation_ns;
  for (const auto& e : plan.edges) {
    s.edge_timings.push_back({e.from_static_id, e.to_static_id, to_ir(e.timing)});
  }
  s.host_side_timings = !plan.device_sync;
  s.thread_busy_ns = plan.thread_busy_ns;
  s.wall_ns = plan.wall_ns;
  s.steps = plan.steps;
  resolve_module_timings(ir, plan, modules, s, ir.findings);
  ir.runtime = std::move(s);
  ir::normalize(ir);
  return plan;
}

ProfileReport profile_report(const ir::ModelIr& ir, bool by_self, std::uint64_t span_ns) {
  std::vector<OperationTiming> ops;
  std::uint64_t self_sum = 0;
  for (const auto& op : ir.operations) {
    if (!op.timing) continue;
    OperationTiming o{op.id, op.name, from_ir(op.timing->stats), {}, op.timing->self_ns};
    for (const auto& [phase, t] : op.timing->by_phase)
      o.by_phase[phase] = from_ir(t);
    const std::uint64_t self = o.self_ns.value_or(o.timing.total_ns);
    self_sum = self_sum > ~std::uint64_t{0} - self ? ~std::uint64_t{0} : self_sum + self;
    ops.push_back(std::move(o));
  }
  // Wall time from the traces' timestamps (runtime/4); without them, the operations' own time,
  // which does not overlap when every operation is top-level (/1–/3).
  std::uint64_t wall = 0;
  std::vector<std::uint64_t> threads;
  std::uint64_t steps = 0;
  if (ir.runtime) {
    threads = ir.runtime->thread_busy_ns;
    steps = ir.runtime->steps;
  }
  for (auto t : threads)
    wall = wall > ~std::uint64_t{0} - t ? ~std::uint64_t{0} : wall + t;
  if (threads.empty()) wall = self_sum;
  // The run's real span (the threads' union): the caller's, else the one merged into the IR.
  if (span_ns == 0 && ir.runtime) span_ns = ir.runtime->wall_ns;
  if (span_ns != 0 && !threads.empty()) wall = span_ns;
  ProfileReport r = profile_report(ops, wall, steps, IrStaticModel(ir), by_self);
  r.thread_busy_ns = threads;
  if (!ir.runtime) return r;
  r.host_side = ir.runtime->host_side_timings;
  r.has_module_scopes = !ir.runtime->module_timings.empty();
  auto share = [&](std::uint64_t ns) {
    return wall ? static_cast<double>(ns) / static_cast<double>(wall) : 0.0;
  };
  for (const auto& m : ir.runtime->module_timings) {
    ProfileRow row{m.path, "", from_ir(m.total), share(m.self.total_ns)};
    row.self_ns = m.self.total_ns;
    row.total_share = share(m.total.total_ns);
    row.module = m.module;
    row.instance = m.instance;
    if (auto it = std::find_if(ir.modules.begin(), ir.modules.end(),
                               [&](const ir::Module& x) { return x.id == m.module; });
        it != ir.modules.end())
      row.type_name = it->type_name;
    const bool family = m.path.find('{') != std::string::npos;
    (family ? r.module_families : r.module_scopes).push_back(std::move(row));
  }
  auto order = [by_self](const ProfileRow& a, const ProfileRow& b) {
    const std::uint64_t x = by_self ? a.self_ns : a.timing.total_ns;
    const std::uint64_t y = by_self ? b.self_ns : b.timing.total_ns;
    return x != y ? x > y : a.id < b.id;
  };
  std::sort(r.module_scopes.begin(), r.module_scopes.end(), order);
  std::sort(r.module_families.begin(), r.module_families.end(), order);
  return r;
}

}  // namespace cg::runtime
