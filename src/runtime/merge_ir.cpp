#include "runtime/merge_ir.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <set>

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
using PathMatches = std::map<std::string, std::optional<ModulePathMatch>>;
constexpr std::size_t kExamples = 100;

void resolve_module_timings(const ir::ModelIr& ir, const MergePlan& plan,
                            const ModulePathOptions& options, const ModulePathResolver& resolver,
                            const PathMatches& matches, ir::RuntimeSummary& s,
                            std::vector<ir::Finding>& findings) {
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

std::string format_number(double d) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.4g", d);
  return buf;
}

std::string reason_name(StatsReason r) {
  return r == StatsReason::sampled ? "sampled" : "non_finite";
}

std::string non_finite_counts(std::uint64_t nan, std::uint64_t pos_inf, std::uint64_t neg_inf) {
  return std::to_string(nan) + " NaN, " + std::to_string(pos_inf) + " +Inf, " +
         std::to_string(neg_inf) + " -Inf";
}

ir::TensorStatsValues to_ir(const StatsSample& x) {
  ir::TensorStatsValues v;
  v.step = x.at.step;
  v.at_ns = x.at.at_ns;
  v.elements = x.elements;
  v.nan = x.nan;
  v.pos_inf = x.pos_inf;
  v.neg_inf = x.neg_inf;
  v.zeros = x.zeros;
  if (x.finite) {
    v.min = x.finite->min;
    v.max = x.finite->max;
    v.mean = x.finite->mean;
    v.rms = x.finite->rms;
    v.abs_max = x.finite->abs_max;
  }
  return v;
}

std::optional<ir::FirstNonFinite> first_non_finite(const StatsSeries& s) {
  if (!s.first_non_finite) return std::nullopt;
  const StatsSample& f = *s.first_non_finite;
  return ir::FirstNonFinite{f.at.step, f.at.at_ns, f.at.thread, reason_name(f.reason),
                            f.nan,     f.pos_inf,  f.neg_inf};
}

ir::ModuleStats module_stats_row(const std::string& path, std::uint64_t index,
                                 const StatsSeries& s) {
  ir::ModuleStats m;
  m.path = path;
  m.index = index;
  m.samples = s.samples;
  m.steps = s.steps.size();
  m.last = to_ir(s.last);
  m.max_abs_max = s.max_abs_max;
  m.max_rms = s.max_rms;
  m.nan = s.nan;
  m.pos_inf = s.pos_inf;
  m.neg_inf = s.neg_inf;
  m.max_zeros_fraction = s.max_zeros_fraction;
  m.first_non_finite = first_non_finite(s);
  return m;
}

std::string output_name(const std::string& path, std::uint64_t index) {
  return "`" + path + "`" + (index ? " (output " + std::to_string(index) + ")" : "");
}

std::string list_examples(const std::vector<std::string>& v) {
  std::string first;
  for (std::size_t i = 0; i < v.size() && i < 3; ++i)
    first += (i ? ", " : "") + v[i];
  return first;
}

// `path` with its last segment that is exactly `index` written as `{i}` ("model.layers.3" →
// "model.layers.{i}").
std::string template_of(const std::string& path, std::uint64_t index) {
  const std::string digits = std::to_string(index);
  std::size_t end = path.size();
  while (end > 0) {
    std::size_t dot = path.rfind('.', end - 1);
    std::size_t begin = dot == std::string::npos ? 0 : dot + 1;
    if (path.compare(begin, end - begin, digits) == 0) {
      return path.substr(0, begin) + "{i}" + path.substr(end);
    }
    if (dot == std::string::npos) break;
    end = dot;
  }
  return path;
}

// runtime-activation-growth over one family's members (instance → last recorded output RMS).
void activation_growth(const std::string& family, std::uint64_t index,
                       const std::map<std::uint64_t, double>& rms,
                       const StatsFindingOptions& options, const std::string& module,
                       std::vector<ir::Finding>& findings) {
  if (options.growth_layers == 0) return;
  std::vector<std::pair<std::uint64_t, double>> run;  // consecutive members, each > factor x
  auto flush = [&] {
    if (run.size() < options.growth_layers + 1) return;
    std::string ratios;
    for (std::size_t i = 1; i < run.size(); ++i)
      ratios += (i > 1 ? ", " : "") + format_number(run[i].second / run[i - 1].second) + "x";
    findings.push_back(ir::make_finding(
        "runtime-activation-growth", ir::Severity::warning, ir::Confidence::heuristic,
        "output RMS of " + output_name(family, index) + " grows more than " +
            format_number(options.growth_factor) + "x per layer over " +
            std::to_string(run.size() - 1) + " consecutive layers, " +
            std::to_string(run.front().first) + " to " + std::to_string(run.back().first) +
            " (RMS " + format_number(run.front().second) + " -> " +
            format_number(run.back().second) + "; " + ratios +
            "; each member's last recorded sample; the rule fires at " +
            format_number(options.growth_factor) + "x sustained over " +
            std::to_string(options.growth_layers) + " layers)",
        "", module.empty() ? std::vector<std::string>{} : std::vector<std::string>{module}));
  };
  for (const auto& [instance, value] : rms) {
    const bool continues = !run.empty() && run.back().first + 1 == instance &&
                           run.back().second > 0 &&
                           value > options.growth_factor * run.back().second;
    if (!continues) {
      flush();
      run.clear();
    }
    run.emplace_back(instance, value);
  }
  flush();
}

// Stats records → module_stats (by path, as module timings resolve), grad_stats (by parameter key)
// and the findings of docs/diagnostics.md; unmatched paths and keys keep their rows.
void resolve_tensor_stats(const MergePlan& plan, const ModulePathResolver& resolver,
                          const PathMatches& matches, const StatsFindingOptions& options,
                          ir::RuntimeSummary& s, std::vector<ir::Finding>& findings) {
  s.stats_records = plan.stats_records;
  struct Family {
    std::string module;
    StatsSeries series;
    std::map<std::uint64_t, double> rms;  // member instance → last recorded RMS
  };
  std::map<std::pair<std::string, std::uint64_t>, Family> families;
  std::map<std::pair<std::string, std::uint64_t>,
           std::pair<std::string, std::map<std::uint64_t, double>>>
      expanded;
  std::set<std::string> unmatched;
  const std::pair<std::string, std::uint64_t>* first_key = nullptr;
  const StatsSeries* first = nullptr;
  for (const auto& [key, series] : plan.output_stats) {
    ir::ModuleStats row = module_stats_row(key.first, key.second, series);
    auto it = matches.find(key.first);
    if (it != matches.end() && it->second) {
      const ModulePathMatch& m = *it->second;
      row.module = m.module;
      row.instance = m.instance;
      if (m.family) {
        Family& f = families[{m.family_path, key.second}];
        f.module = m.module;
        f.series.merge(series);
        if (m.instance && series.last.finite) f.rms[*m.instance] = series.last.finite->rms;
      } else if (m.instance && series.last.finite) {
        // A member of a family the config expanded (its own module, no `{i}` row): grouped by
        // its path with the index made `{i}` again, for the growth rule only.
        auto& g = expanded[{template_of(key.first, *m.instance), key.second}];
        if (g.first.empty()) g.first = m.module;
        g.second[*m.instance] = series.last.finite->rms;
      }
    } else {
      unmatched.insert(key.first);
    }
    s.module_stats.push_back(std::move(row));
    if (series.first_non_finite &&
        (!first || series.first_non_finite->at < first->first_non_finite->at)) {
      first = &series;
      first_key = &key;
    }
  }
  for (const auto& [key, f] : families) {
    ir::ModuleStats row = module_stats_row(key.first, key.second, f.series);
    row.module = f.module;
    s.module_stats.push_back(std::move(row));
    activation_growth(key.first, key.second, f.rms, options, f.module, findings);
  }
  for (const auto& [key, g] : expanded) {
    if (families.count(key)) continue;
    activation_growth(key.first, key.second, g.second, options, g.first, findings);
  }
  s.unmatched_stats_paths = unmatched.size();
  for (const auto& p : unmatched) {
    if (s.unmatched_stats_path_examples.size() == kExamples) break;
    s.unmatched_stats_path_examples.push_back(p);
  }
  if (!unmatched.empty()) {
    findings.push_back(ir::make_finding(
        "runtime-unmapped", ir::Severity::information, ir::Confidence::unknown,
        std::to_string(unmatched.size()) +
            " stats paths (module outputs) name no module instance (first: " +
            list_examples(s.unmatched_stats_path_examples) +
            "); each keeps its row with no module (runtime.unmatched_stats_path_examples)",
        ""));
  }

  if (first) {
    const StatsSample& f = *first->first_non_finite;
    auto in_step = plan.first_output_in_step.find(f.at.step);
    const bool first_of_step =
        in_step != plan.first_output_in_step.end() && in_step->second == f.at;
    std::vector<std::string> related;
    auto it = matches.find(first_key->first);
    if (it != matches.end() && it->second) related.push_back(it->second->module);
    findings.push_back(ir::make_finding(
        "runtime-first-non-finite", ir::Severity::error, ir::Confidence::conditional,
        "first non-finite module output in execution order: " +
            output_name(first_key->first, first_key->second) + " at step " +
            std::to_string(f.at.step) + " (at_ns " + std::to_string(f.at.at_ns) + ", thread " +
            std::to_string(f.at.thread) + "): " + non_finite_counts(f.nan, f.pos_inf, f.neg_inf) +
            " of " + std::to_string(f.elements) + " elements (recorded as " +
            reason_name(f.reason) + ")" +
            (first_of_step
                 ? "; it is the first module output recorded in step " + std::to_string(f.at.step) +
                       ", so its inputs were not observed: the non-finite values may "
                       "come from the step's input data"
                 : "; every module output recorded before it was finite"),
        "", related));
  }

  std::set<std::string> unmatched_keys;
  for (const auto& [key, series] : plan.grad_stats) {
    ir::GradStats g;
    g.key = key;
    g.parameters = resolver.parameters_for_key(key);
    if (g.parameters.empty()) unmatched_keys.insert(key);
    g.samples = series.samples;
    g.steps = series.steps.size();
    g.norm_last = gradient_norm(series.last);
    g.norm_min = series.norm_min;
    g.norm_max = series.norm_max;
    g.max_abs_max = series.max_abs_max;
    g.nan = series.nan;
    g.pos_inf = series.pos_inf;
    g.neg_inf = series.neg_inf;
    g.all_zero = series.samples > 0 && series.all_zero;
    g.first_non_finite = first_non_finite(series);
    if (g.all_zero) {
      findings.push_back(ir::make_finding(
          "runtime-dead-gradient", ir::Severity::warning, ir::Confidence::conditional,
          "gradient of `" + key + "` was all zero in every one of its " +
              std::to_string(series.samples) + " recorded samples (" + std::to_string(g.steps) +
              " steps, last at step " + std::to_string(series.last.at.step) + ")",
          "", g.parameters));
    }
    if (g.first_non_finite) {
      const auto& f = *g.first_non_finite;
      findings.push_back(ir::make_finding(
          "runtime-non-finite-gradient", ir::Severity::error, ir::Confidence::conditional,
          "gradient of `" + key + "` held non-finite values, first at step " +
              std::to_string(f.step) + ": " + non_finite_counts(f.nan, f.pos_inf, f.neg_inf) +
              " (over all " + std::to_string(series.samples) +
              " samples: " + non_finite_counts(series.nan, series.pos_inf, series.neg_inf) + ")",
          "", g.parameters));
    }
    s.grad_stats.push_back(std::move(g));
  }
  s.unmatched_grad_keys = unmatched_keys.size();
  for (const auto& k : unmatched_keys) {
    if (s.unmatched_grad_key_examples.size() == kExamples) break;
    s.unmatched_grad_key_examples.push_back(k);
  }
  if (!unmatched_keys.empty()) {
    findings.push_back(ir::make_finding(
        "runtime-unmapped", ir::Severity::information, ir::Confidence::unknown,
        std::to_string(unmatched_keys.size()) +
            " gradient stats keys name no parameter of this analysis (first: " +
            list_examples(s.unmatched_grad_key_examples) +
            "); each keeps its row with no parameter (runtime.unmatched_grad_key_examples)",
        ""));
  }
}

}  // namespace

MergePlan merge_runtime(ir::ModelIr& ir, const std::vector<LoadedTrace>& traces,
                        const ModulePathOptions& modules,
                        const StatsFindingOptions& stats_options) {
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
  // Scope paths and stats paths resolve together, so both pick the same component.
  std::vector<std::string> paths;
  for (const auto& [path, stats] : plan.modules)
    paths.push_back(path);
  for (const auto& [key, series] : plan.output_stats)
    paths.push_back(key.first);
  ModulePathResolver resolver(ir, modules);
  const PathMatches matches = resolver.resolve(paths);
  resolve_module_timings(ir, plan, modules, resolver, matches, s, ir.findings);
  resolve_tensor_stats(plan, resolver, matches, stats_options, s, ir.findings);
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
