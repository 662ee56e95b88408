#include "runtime/aggregate.hpp"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <stdexcept>

namespace cg::runtime {
namespace {

constexpr std::size_t kConflictIds = 4;

std::string render_shape(std::span<const std::uint64_t> shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

void add_fact(GradientStepFacts& f, const GradientRecord& r) {
  bool first = f.states == 0;
  f.states = static_cast<std::uint8_t>(f.states | (1u << static_cast<unsigned>(r.state)));
  if (first) {
    f.norm = r.norm;
  } else if (f.norm.has_value() != r.norm.has_value() || (f.norm && *f.norm != *r.norm)) {
    f.norms_agree = false;
  }
  if (f.event_ids.size() < kConflictIds) f.event_ids.emplace_back(r.event_id);
}

void merge_facts(GradientStepFacts& into, const GradientStepFacts& from) {
  if (into.states == 0) {
    into = from;
    return;
  }
  into.states = static_cast<std::uint8_t>(into.states | from.states);
  into.norms_agree = into.norms_agree && from.norms_agree && into.norm == from.norm;
  for (const auto& id : from.event_ids) {
    if (into.event_ids.size() < kConflictIds) into.event_ids.push_back(id);
  }
}

}  // namespace

void StepSet::check() const {
  if (runs_.size() > kMaxStepRuns) {
    throw std::length_error("trace has steps in more than " + std::to_string(kMaxStepRuns) +
                            " separate runs (the reader's limit for counting distinct steps)");
  }
}

void StepSet::insert(std::uint64_t step) {
  auto next = runs_.upper_bound(step);  // first run starting after `step`
  auto prev = next == runs_.begin() ? runs_.end() : std::prev(next);
  if (prev != runs_.end() && prev->second >= step) return;  // already counted
  const bool joins_prev = prev != runs_.end() && prev->second + 1 == step;
  const bool joins_next =
      next != runs_.end() && step != ~std::uint64_t{0} && next->first == step + 1;
  if (joins_prev && joins_next) {
    prev->second = next->second;
    runs_.erase(next);
  } else if (joins_prev) {
    prev->second = step;
  } else if (joins_next) {
    const std::uint64_t last = next->second;
    runs_.erase(next);
    runs_.emplace(step, last);
  } else {
    runs_.emplace(step, step);
  }
  ++count_;
  check();
}

void StepSet::insert(const StepSet& other) {
  std::vector<std::pair<std::uint64_t, std::uint64_t>> all(runs_.begin(), runs_.end());
  all.insert(all.end(), other.runs_.begin(), other.runs_.end());
  std::sort(all.begin(), all.end());
  runs_.clear();
  count_ = 0;
  auto add = [this](std::uint64_t first, std::uint64_t last) {
    runs_.emplace_hint(runs_.end(), first, last);
    const std::uint64_t n = last - first;  // the run holds n + 1 steps; saturate at 2^64 - 1
    constexpr std::uint64_t kMax = ~std::uint64_t{0};
    count_ = (n == kMax || count_ > kMax - n - 1) ? kMax : count_ + n + 1;
  };
  std::size_t i = 0;
  while (i < all.size()) {
    std::uint64_t first = all[i].first, last = all[i].second;
    for (++i; i < all.size() && (last == ~std::uint64_t{0} || all[i].first <= last + 1); ++i)
      last = std::max(last, all[i].second);
    add(first, last);
  }
  check();
}

void ThreadWall::add(std::uint64_t start, std::uint64_t end) {
  start = std::max(start, settled_end_);
  if (end <= start) return;
  while (open_.size() > first_open_ && open_.back().second >= start) {
    start = std::min(start, open_.back().first);
    end = std::max(end, open_.back().second);
    open_ns_ -= open_.back().second - open_.back().first;
    open_.pop_back();
  }
  open_.emplace_back(start, end);
  open_ns_ += end - start;
  if (open_.size() - first_open_ > kMaxOpen) {
    const auto& oldest = open_[first_open_++];
    settled_ns_ += oldest.second - oldest.first;
    open_ns_ -= oldest.second - oldest.first;
    settled_end_ = oldest.second;
    if (first_open_ >= kMaxOpen) {  // drop the settled ones, amortized over kMaxOpen adds
      open_.erase(open_.begin(), open_.begin() + static_cast<std::ptrdiff_t>(first_open_));
      first_open_ = 0;
    }
  }
}

void SpanUnion::add(std::uint64_t start, std::uint64_t end) {
  start = std::max(start, settled_end_);
  if (end <= start) return;
  // Merge with every interval that overlaps or touches [start, end].
  auto it = open_.upper_bound(start);
  if (it != open_.begin()) {
    auto prev = std::prev(it);
    if (prev->second >= start) it = prev;
  }
  while (it != open_.end() && it->first <= end) {
    start = std::min(start, it->first);
    end = std::max(end, it->second);
    open_ns_ -= it->second - it->first;
    it = open_.erase(it);
  }
  open_.emplace(start, end);
  open_ns_ += end - start;
  if (open_.size() > kMaxOpen) {
    auto first = open_.begin();
    settled_ns_ += first->second - first->first;
    open_ns_ -= first->second - first->first;
    settled_end_ = first->second;
    open_.erase(first);
  }
}

std::uint64_t TraceAggregate::span_ns() const {
  const std::uint64_t own = span_.covered_ns();
  return merged_span_ns_ > ~std::uint64_t{0} - own ? ~std::uint64_t{0} : merged_span_ns_ + own;
}

std::uint64_t ThreadWall::busy_ns() const {
  return settled_ns_ + open_ns_;
}

void TraceAggregate::meta(const RunMeta& m) {
  phase_ = m.phase;
  device_sync = m.device_sync;
  traces = 1;
}

std::uint64_t TraceAggregate::child_ns(StringMap<std::uint64_t>& pending, std::string_view id) {
  std::uint64_t n = 0;
  if (!later_children_ns_.empty()) {
    if (auto it = later_children_ns_.find(std::string(id)); it != later_children_ns_.end()) {
      n = it->second;
    }
  }
  if (pending.empty()) return n;
  auto it = pending.find(id);
  if (it == pending.end()) return n;
  n = n > ~std::uint64_t{0} - it->second ? ~std::uint64_t{0} : n + it->second;
  pending.erase(it);
  return n;
}

void TraceAggregate::wall(std::optional<std::uint64_t> thread, std::uint64_t start,
                          std::uint64_t duration) {
  const std::uint64_t end =
      start > ~std::uint64_t{0} - duration ? ~std::uint64_t{0} : start + duration;
  walls_[thread.value_or(0)].add(start, end);
  span_.add(start, end);
}

std::vector<std::uint64_t> TraceAggregate::thread_wall_ns() const {
  std::vector<std::uint64_t> out = merged_walls_;
  for (const auto& [thread, w] : walls_)
    out.push_back(w.busy_ns());
  return out;
}

void TraceAggregate::module_scope(const ModuleScopeRecord& r) {
  ++nested_records;
  ModuleScopeStats& s = modules[std::string(r.path)];
  s.total.add(r.duration_ns);
  const std::uint64_t children = child_ns(pending_module_children_, r.event_id);
  s.self.add(children >= r.duration_ns ? 0 : r.duration_ns - children);
  if (r.parent) {
    std::uint64_t& p = pending_module_children_[std::string(*r.parent)];
    p = p > ~std::uint64_t{0} - r.duration_ns ? ~std::uint64_t{0} : p + r.duration_ns;
  } else {
    wall(r.thread, r.start_ns, r.duration_ns);
  }
  if (r.step && *r.step != last_step_) {
    steps.insert(*r.step);
    last_step_ = *r.step;
  }
}

std::optional<double> gradient_norm(const StatsSample& s) {
  if (!s.finite) return std::nullopt;
  return s.finite->rms * std::sqrt(static_cast<double>(s.elements - s.non_finite()));
}

void StatsSeries::add(const StatsSample& s) {
  ++samples;
  steps.insert(s.at.step);
  if (samples == 1 || last.at <= s.at) last = s;
  if (s.finite) {
    max_abs_max = std::max(max_abs_max.value_or(s.finite->abs_max), s.finite->abs_max);
    max_rms = std::max(max_rms.value_or(s.finite->rms), s.finite->rms);
    const double norm = *gradient_norm(s);
    norm_min = std::min(norm_min.value_or(norm), norm);
    norm_max = std::max(norm_max.value_or(norm), norm);
    if (s.finite->abs_max != 0) all_zero = false;
  } else {
    all_zero = false;
  }
  nan += s.nan;
  pos_inf += s.pos_inf;
  neg_inf += s.neg_inf;
  if (s.elements > 0) {
    max_zeros_fraction = std::max(max_zeros_fraction,
                                  static_cast<double>(s.zeros) / static_cast<double>(s.elements));
  }
  if (s.non_finite() > 0 && (!first_non_finite || s.at < first_non_finite->at)) {
    first_non_finite = s;
  }
}

void StatsSeries::merge(const StatsSeries& o) {
  if (o.samples == 0) return;
  if (samples == 0 || last.at <= o.last.at) last = o.last;
  samples += o.samples;
  steps.insert(o.steps);
  auto hi = [](std::optional<double>& a, const std::optional<double>& b) {
    if (b) a = std::max(a.value_or(*b), *b);
  };
  hi(max_abs_max, o.max_abs_max);
  hi(max_rms, o.max_rms);
  hi(norm_max, o.norm_max);
  if (o.norm_min) norm_min = std::min(norm_min.value_or(*o.norm_min), *o.norm_min);
  nan += o.nan;
  pos_inf += o.pos_inf;
  neg_inf += o.neg_inf;
  max_zeros_fraction = std::max(max_zeros_fraction, o.max_zeros_fraction);
  if (o.first_non_finite && (!first_non_finite || o.first_non_finite->at < first_non_finite->at)) {
    first_non_finite = o.first_non_finite;
  }
  all_zero = all_zero && o.all_zero;
}

void TraceAggregate::stats(const StatsRecord& r) {
  ++stats_records;
  StatsSample s;
  s.at = {r.step, r.at_ns, r.thread};
  s.reason = r.reason;
  s.elements = r.elements;
  s.nan = r.nan;
  s.pos_inf = r.pos_inf;
  s.neg_inf = r.neg_inf;
  s.zeros = r.zeros;
  s.finite = r.finite;
  if (r.of == StatsOf::grad) {
    auto it = grad_stats.find(r.path);
    if (it == grad_stats.end()) it = grad_stats.emplace(std::string(r.path), StatsSeries{}).first;
    it->second.add(s);
    return;
  }
  auto key = std::make_pair(std::string(r.path), r.index);
  output_stats[std::move(key)].add(s);
  if (s.non_finite() > 0 && (!first_non_finite_output || s.at < *first_non_finite_output)) {
    first_non_finite_output = s.at;
    first_output_in_step.erase(first_output_in_step.upper_bound(s.at.step),
                               first_output_in_step.end());
  }
  if (first_non_finite_output && s.at.step > first_non_finite_output->step) return;
  auto [it, fresh] = first_output_in_step.emplace(s.at.step, s.at);
  if (!fresh && s.at < it->second) it->second = s.at;
  if (first_output_in_step.size() > kMaxStepFirsts) {
    first_output_in_step.erase(first_output_in_step.begin());
  }
}

void TraceAggregate::operation(const OperationRecord& r) {
  std::optional<std::uint64_t> self;
  if (r.duration_ns) {
    all_operations.add(*r.duration_ns);
    if (!r.parent) {
      top_level_ns = (top_level_ns > ~std::uint64_t{0} - *r.duration_ns)
                         ? ~std::uint64_t{0}
                         : top_level_ns + *r.duration_ns;
    }
    const std::uint64_t children = child_ns(pending_op_children_, r.event_id);
    self = children >= *r.duration_ns ? 0 : *r.duration_ns - children;
    if (r.parent) {
      std::uint64_t& p = pending_op_children_[std::string(*r.parent)];
      p = p > ~std::uint64_t{0} - *r.duration_ns ? ~std::uint64_t{0} : p + *r.duration_ns;
    } else if (r.start_ns && r.thread) {
      wall(r.thread, *r.start_ns, *r.duration_ns);
    }
    if (r.start_ns && r.thread) ++nested_records;
  }
  if (r.step && *r.step != last_step_) {  // steps arrive in runs: skip the tree most times
    steps.insert(*r.step);
    last_step_ = *r.step;
  }
  if (!r.static_id) {
    ++operations_without_static_id;
    if (r.duration_ns) unattributed_operations.add(*r.duration_ns);
    return;
  }
  auto* last = last_operation_.to;
  auto* entry = last ? last->second.next.to : nullptr;
  if (!entry || entry->first != *r.static_id) {
    auto it = operations.find(*r.static_id);
    if (it == operations.end()) {
      it = operations.emplace(std::string(*r.static_id), OperationStats{}).first;
      it->second.op = std::string(r.op);
    }
    entry = &*it;
    if (last) last->second.next.to = entry;
  }
  last_operation_.to = entry;
  OperationStats& s = entry->second;
  ++s.observations;
  if (!r.duration_ns) return;
  s.timing.add(*r.duration_ns);
  s.self.add(*self);
  // A trace has one phase (meta); when meta comes late (/1–/3 allow it), the id says it.
  std::string_view phase = phase_ ? std::string_view(*phase_) : std::string_view{};
  if (phase.empty()) phase = r.event_id.substr(0, r.event_id.find('-'));
  auto p = s.by_phase.find(phase);
  if (p == s.by_phase.end()) p = s.by_phase.emplace(std::string(phase), TimingStats{}).first;
  p->second.add(*r.duration_ns);
}

void TraceAggregate::edge_timing(const EdgeTimingRecord& r) {
  edges[{std::string(r.from_static_id), std::string(r.to_static_id)}].add(r.duration_ns);
}

void TraceAggregate::tensor(const TensorRecord& r) {
  ++tensor_observations;
  if (!r.static_id) {
    ++tensors_without_static_id;
    return;
  }
  auto [it, fresh] = tensors.try_emplace(std::string(*r.static_id));
  TensorStats& t = it->second;
  if (fresh) {
    t.first_event_id = std::string(r.event_id);
    t.first_source = r.source ? std::string(*r.source) : std::string();
    t.shape.assign(r.shape.begin(), r.shape.end());
    t.contiguous = r.contiguous;
    t.requires_grad = r.requires_grad;
  }
  ++t.observations;
  t.dtypes.emplace(r.dtype);
  t.devices.emplace(r.device);
  t.shapes.insert(render_shape(r.shape));
  t.layouts.insert(r.contiguous ? "true" : "false");
  t.requires_grads.insert(r.requires_grad ? "true" : "false");
}

void TraceAggregate::gradient(const GradientRecord& r) {
  ++gradient_observations;
  GradientSeries& s = gradients[{std::string(r.root), std::string(r.key)}];
  ++s.observations;
  if (r.step) {
    add_fact(s.steps[*r.step], r);
  } else {
    if (!s.unstepped) s.unstepped.emplace();
    add_fact(*s.unstepped, r);
  }
}

void TraceAggregate::value(const ValueRecord& r) {
  ++value_observations;
  if (r.saturated_count > 0 && r.source) saturating_sources.emplace(*r.source);
  if (r.nonfinite_count > 0 && r.step) {
    first_non_finite_value_step = std::min(first_non_finite_value_step.value_or(*r.step), *r.step);
  }
}

void TraceAggregate::merge(const TraceAggregate& other) {
  for (const auto& [id, s] : other.operations) {
    auto [it, fresh] = operations.try_emplace(id);
    if (fresh) it->second.op = s.op;
    it->second.observations += s.observations;
    it->second.timing.merge(s.timing);
    it->second.self.merge(s.self);
    for (const auto& [phase, t] : s.by_phase)
      it->second.by_phase[phase].merge(t);
  }
  unattributed_operations.merge(other.unattributed_operations);
  all_operations.merge(other.all_operations);
  operations_without_static_id += other.operations_without_static_id;
  for (const auto& [k, t] : other.edges)
    edges[k].merge(t);
  for (const auto& [id, t] : other.tensors) {
    auto [it, fresh] = tensors.try_emplace(id, t);
    if (fresh) continue;
    TensorStats& m = it->second;
    m.observations += t.observations;
    m.dtypes.insert(t.dtypes.begin(), t.dtypes.end());
    m.devices.insert(t.devices.begin(), t.devices.end());
    m.shapes.insert(t.shapes.begin(), t.shapes.end());
    m.layouts.insert(t.layouts.begin(), t.layouts.end());
    m.requires_grads.insert(t.requires_grads.begin(), t.requires_grads.end());
  }
  tensors_without_static_id += other.tensors_without_static_id;
  tensor_observations += other.tensor_observations;
  for (const auto& [k, s] : other.gradients) {
    GradientSeries& m = gradients[k];
    m.observations += s.observations;
    for (const auto& [step, f] : s.steps)
      merge_facts(m.steps[step], f);
    if (s.unstepped) {
      if (!m.unstepped) m.unstepped.emplace();
      merge_facts(*m.unstepped, *s.unstepped);
    }
  }
  gradient_observations += other.gradient_observations;
  value_observations += other.value_observations;
  saturating_sources.insert(other.saturating_sources.begin(), other.saturating_sources.end());
  top_level_ns = (top_level_ns > ~std::uint64_t{0} - other.top_level_ns)
                     ? ~std::uint64_t{0}
                     : top_level_ns + other.top_level_ns;
  steps.insert(other.steps);
  for (const auto& [path, m] : other.modules) {
    ModuleScopeStats& into = modules[path];
    into.total.merge(m.total);
    into.self.merge(m.self);
  }
  device_sync = (traces == 0 ? true : device_sync) && other.device_sync;
  traces += other.traces;
  nested_records += other.nested_records;
  for (auto w : other.thread_wall_ns())
    merged_walls_.push_back(w);
  const std::uint64_t span = other.span_ns();
  merged_span_ns_ =
      merged_span_ns_ > ~std::uint64_t{0} - span ? ~std::uint64_t{0} : merged_span_ns_ + span;
  for (const auto& [k, series] : other.output_stats)
    output_stats[k].merge(series);
  for (const auto& [k, series] : other.grad_stats)
    grad_stats[k].merge(series);
  stats_records += other.stats_records;
  if (other.first_non_finite_output &&
      (!first_non_finite_output || *other.first_non_finite_output < *first_non_finite_output)) {
    first_non_finite_output = other.first_non_finite_output;
  }
  for (const auto& [step, at] : other.first_output_in_step) {
    auto [it, fresh] = first_output_in_step.emplace(step, at);
    if (!fresh && at < it->second) it->second = at;
  }
  if (other.first_non_finite_value_step) {
    first_non_finite_value_step =
        std::min(first_non_finite_value_step.value_or(*other.first_non_finite_value_step),
                 *other.first_non_finite_value_step);
  }
}

}  // namespace cg::runtime
