#include "runtime/trace_validator.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace cg::runtime {
namespace {

// Relative tolerance of the stats consistency rules (docs/runtime-4.md): the program computes the
// numbers in f32, so two that should agree may differ in their last bits.
constexpr double kStatsTolerance = 1e-3;

bool beyond(double a, double b) {  // a > b by more than the tolerance
  return a - b > kStatsTolerance * std::max({std::fabs(a), std::fabs(b), 1e-30});
}

std::string number(double d) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.9g", d);
  return buf;
}

// The inconsistencies docs/runtime-4.md lists, each an error naming what disagrees.
void check_stats(const StatsRecord& r) {
  std::uint64_t product = 1;
  bool overflow = false;
  for (auto d : r.shape)
    overflow = overflow || __builtin_mul_overflow(product, d, &product);
  if (overflow || product != r.elements) {
    std::string dims;
    for (auto d : r.shape)
      dims += (dims.empty() ? "" : ",") + std::to_string(d);
    throw RecordError("stats `elements` " + std::to_string(r.elements) +
                      " is not the product of `shape` [" + dims + "]");
  }
  std::uint64_t non_finite = 0;
  if (__builtin_add_overflow(r.nan, r.pos_inf, &non_finite) ||
      __builtin_add_overflow(non_finite, r.neg_inf, &non_finite) || non_finite > r.elements) {
    throw RecordError("stats `nan` + `pos_inf` + `neg_inf` (" + std::to_string(r.nan) + " + " +
                      std::to_string(r.pos_inf) + " + " + std::to_string(r.neg_inf) +
                      ") exceeds `elements` " + std::to_string(r.elements));
  }
  const std::uint64_t finite = r.elements - non_finite;
  if (r.zeros > finite) {
    throw RecordError("stats `zeros` " + std::to_string(r.zeros) + " exceeds the " +
                      std::to_string(finite) + " finite elements");
  }
  if (!r.finite) {
    if (finite > 0) {
      throw RecordError("stats record has " + std::to_string(finite) +
                        " finite elements but no `min`, `max`, `mean`, `rms`, `abs_max` (expected "
                        "them whenever some element is finite)");
    }
    return;
  }
  if (finite == 0) {
    throw RecordError(
        "stats record has `min`, `max`, `mean`, `rms`, `abs_max` but no finite element (expected "
        "none of them then)");
  }
  const FiniteStats& f = *r.finite;
  for (double v : {f.min, f.max, f.mean, f.rms, f.abs_max}) {
    if (!std::isfinite(v)) throw RecordError("stats numbers must be finite");
  }
  if (beyond(f.min, f.max)) {
    throw RecordError("stats `min` " + number(f.min) + " is greater than `max` " + number(f.max));
  }
  if (beyond(f.min, f.mean) || beyond(f.mean, f.max)) {
    throw RecordError("stats `mean` " + number(f.mean) + " lies outside [`min`, `max`] = [" +
                      number(f.min) + ", " + number(f.max) + "]");
  }
  const double abs_max = std::max(std::fabs(f.min), std::fabs(f.max));
  if (beyond(f.abs_max, abs_max) || beyond(abs_max, f.abs_max)) {
    throw RecordError("stats `abs_max` " + number(f.abs_max) +
                      " differs from max(|min|, |max|) = " + number(abs_max));
  }
  if (beyond(std::fabs(f.mean), f.rms) || beyond(f.rms, f.abs_max)) {
    throw RecordError("stats `rms` " + number(f.rms) + " lies outside [|mean|, abs_max] = [" +
                      number(std::fabs(f.mean)) + ", " + number(f.abs_max) + "]");
  }
}

void sort_unique(std::vector<std::string>& v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
}

}  // namespace

void TraceValidator::before_record() {
  if (saw_end_) throw RecordError("record after the `end` record (end must be the last line)");
  if (++records_ > options_.max_records) {
    // A limit, not a bad line: even lenient mode stops here.
    throw std::length_error("trace has more than " + std::to_string(options_.max_records) +
                            " records (the reader's limit)");
  }
}

void TraceValidator::check_id(std::string_view id) {
  if (id.empty()) throw RecordError("empty event_id is not allowed");
  if (!second_) {
    ids_.insert(id);
    return;
  }
  // Second pass: a suspect id (it may repeat an earlier one) is compared in full.
  if (!ids_.is_suspect(id)) return;
  auto [it, fresh] = compared_.emplace(std::string(id), line_);
  if (!fresh) {
    throw DuplicateIdError("duplicate event_id `" + it->first + "` (first on line " +
                           std::to_string(it->second) + ")");
  }
  if (compared_.size() > options_.max_compared_event_ids) {
    throw std::length_error("trace has more than " +
                            std::to_string(options_.max_compared_event_ids) +
                            " event ids to compare in full for uniqueness (`<prefix>-<step>-"
                            "<counter>` ids whose counter restarts, or repeated ids); the "
                            "reader's limit is " +
                            std::to_string(options_.max_compared_event_ids));
  }
}

void TraceValidator::check_thread(const char* what, std::optional<std::uint64_t> thread) const {
  if (thread && *thread > kMaxTraceThread) {
    throw RecordError(std::string("runtime/4 ") + what + " `thread` " + std::to_string(*thread) +
                      " is past " + std::to_string(kMaxTraceThread) +
                      ", the last thread number the profiler writes (later threads share it)");
  }
}

void TraceValidator::check_parent(const char* what, std::string_view id,
                                  std::optional<std::string_view> parent) {
  if (parent && *parent == id) {
    throw RecordError(std::string(what) + " `" + std::string(id) + "` names itself as its parent");
  }
}

std::uint64_t TraceValidator::end_of(const char* what, std::uint64_t start,
                                     std::uint64_t duration) {
  if (start > ~std::uint64_t{0} - duration) {
    throw RecordError(std::string(what) + " `start_ns` " + std::to_string(start) +
                      " + `duration_ns` " + std::to_string(duration) +
                      " is past 2^64-1 ns, the clock's last value: no record can end there");
  }
  return start + duration;
}

void TraceValidator::meta(RunMeta&& meta, bool first_record) {
  if (saw_end_) throw RecordError("record after the `end` record (end must be the last line)");
  if (have_meta_) {
    throw RecordError("duplicate meta record; only one meta record is allowed");
  }
  if (meta.schema == Schema::v4 && form_ == TraceForm::jsonl && !first_record) {
    throw RecordError("a runtime/4 meta record must be the first line");
  }
  before_record();
  sort_unique(meta.cargo_features);
  sort_unique(meta.cfg);
  have_meta_ = true;
  if (second_) return;
  info_.meta = std::move(meta);
  sink_.meta(info_.meta);
}

void TraceValidator::tensor(const TensorRecord& r) {
  before_record();
  check_id(r.event_id);
  if (second_) return;
  ++info_.tensors;
  sink_.tensor(r);
}

void TraceValidator::operation(const OperationRecord& r) {
  if (is_v4()) {
    const char* missing = !r.step          ? "step"
                          : !r.duration_ns ? "duration_ns"
                          : !r.start_ns    ? "start_ns"
                          : !r.thread      ? "thread"
                                           : nullptr;
    if (missing) {
      throw RecordError(std::string("runtime/4 operation is missing field `") + missing +
                        "` (unsigned integer)");
    }
    check_thread("operation", r.thread);
  }
  check_parent("operation", r.event_id, r.parent);
  // Nesting needs both instants; /1–/3 operations have neither.
  std::optional<std::uint64_t> end;
  if (r.start_ns && r.duration_ns) end = end_of("operation", *r.start_ns, *r.duration_ns);
  before_record();
  check_id(r.event_id);
  if (end) operation_links_.add(r.event_id, r.parent, *r.start_ns, *end, line_);
  if (second_) return;
  ++info_.operations;
  sink_.operation(r);
}

void TraceValidator::gradient(const GradientRecord& r) {
  // §1.5 state/norm rules (−0.0 == 0.0 passes as zero).
  if (r.norm) {
    double n = *r.norm;
    switch (r.state) {
      case GradientState::missing:
        throw RecordError("gradient state `missing` must not carry a norm");
      case GradientState::zero:
        if (n != 0.0) throw RecordError("gradient state `zero` requires norm 0 when present");
        break;
      case GradientState::present:
        if (!std::isfinite(n) || n == 0.0) {
          throw RecordError(
              "gradient state `present` requires a finite non-zero norm (use state `zero`)");
        }
        break;
      case GradientState::non_finite:
        if (std::isfinite(n)) {
          throw RecordError("gradient state `non_finite` requires a non-finite norm or none");
        }
        break;
    }
  }
  before_record();
  check_id(r.event_id);
  if (second_) return;
  ++info_.gradients;
  sink_.gradient(r);
}

void TraceValidator::value(const ValueRecord& r) {
  before_record();
  check_id(r.event_id);
  if (second_) return;
  ++info_.values;
  sink_.value(r);
}

void TraceValidator::edge_timing(const EdgeTimingRecord& r) {
  if (is_v4()) {
    const char* missing = !r.step ? "step" : !r.at_ns ? "at_ns" : !r.thread ? "thread" : nullptr;
    if (missing) {
      throw RecordError(std::string("runtime/4 edge_timing is missing field `") + missing +
                        "` (unsigned integer)");
    }
    check_thread("edge_timing", r.thread);
  }
  before_record();
  check_id(r.event_id);
  if (second_) return;
  ++info_.edge_timings;
  sink_.edge_timing(r);
}

void TraceValidator::module_scope(const ModuleScopeRecord& r) {
  if (!is_v4()) {
    throw RecordError(
        "unknown record kind `module` (it exists only in runtime/4; this trace's meta is not /4)");
  }
  check_thread("module", r.thread);
  check_parent("module scope", r.event_id, r.parent);
  const std::uint64_t end = end_of("module", r.start_ns, r.duration_ns);
  before_record();
  check_id(r.event_id);
  module_links_.add(r.event_id, r.parent, r.start_ns, end, line_);
  if (second_) return;
  ++info_.modules;
  sink_.module_scope(r);
}

void TraceValidator::stats(const StatsRecord& r) {
  if (!is_v4()) {
    throw RecordError(
        "unknown record kind `stats` (it exists only in runtime/4; this trace's meta is not /4)");
  }
  check_thread("stats", r.thread);
  check_stats(r);
  before_record();
  check_id(r.event_id);
  if (second_) return;
  ++info_.stats;
  sink_.stats(r);
}

void TraceValidator::end(const EndRecord& r) {
  if (!is_v4()) {
    throw RecordError(
        "unknown record kind `end` (it exists only in runtime/4; this trace's meta is not /4)");
  }
  before_record();
  saw_end_ = true;
  if (second_) return;
  info_.end = r;
  if (r.operations != info_.operations || r.edge_timings != info_.edge_timings ||
      r.modules != info_.modules || r.stats != info_.stats) {
    std::string what = "end record counts " + std::to_string(r.operations) + " operations and " +
                       std::to_string(r.edge_timings) + " edge_timings";
    if (r.modules || info_.modules) what += " and " + std::to_string(r.modules) + " modules";
    if (r.stats || info_.stats) what += " and " + std::to_string(r.stats) + " stats";
    what += " but the trace has " + std::to_string(info_.operations) + " and " +
            std::to_string(info_.edge_timings);
    if (r.modules || info_.modules) what += " and " + std::to_string(info_.modules);
    if (r.stats || info_.stats) what += " and " + std::to_string(info_.stats);
    what += " (the file was damaged)";
    if (!options_.lenient) throw RecordError(what);
    info_.end_counts_disagree = true;
  }
  sink_.end(r);
}

void TraceValidator::finish() {
  if (!have_meta_) {
    throw RecordError(form_ == TraceForm::jsonl
                          ? "JSONL stream is missing a meta record with run metadata"
                          : "document is missing `run`");
  }
  if (is_v4() && !saw_end_) {
    if (!options_.lenient) {
      throw RecordError(
          "trace is truncated: no end record (the profiler crashed, was killed or the disk "
          "filled; --lenient reads what is there)");
    }
    info_.truncated = true;
  }
  info_.id_set_bytes = ids_.memory_bytes();
  if (!second_ && (operation_links_.needs_second_pass() || module_links_.needs_second_pass())) {
    return;  // the second pass resolves them
  }
  info_.module_scopes_out_of_order = module_links_.not_nested();
  for (auto* links : {&operation_links_, &module_links_})
    for (auto& [parent, ns] : links->later_children_ns())
      info_.later_children_ns.emplace(parent, ns);
  // Module parents never listed: scopes still open at the end (end.open_modules), a truncated
  // trace, or ids that name no module scope (an error unless --lenient). An operation's parent
  // never listed is an operation still open at the end (end.open_operations).
  const auto missing = module_links_.never_listed();
  if (missing.empty()) return;
  const bool explained = info_.truncated || (info_.end && info_.end->open_modules > 0);
  if (!explained && !options_.lenient) {
    const auto& m = missing.front();
    throw RecordError("module scope `" + m.first_child + "` (line " +
                      std::to_string(m.first_child_line) + ") names parent `" + m.parent +
                      "`, which is no module scope in the trace (and end.open_modules is 0)");
  }
  for (const auto& m : missing)
    info_.module_parents_unresolved += m.children;
}

void TraceValidator::begin_second_pass() {
  const std::size_t max_tracked = options_.max_compared_event_ids;
  operation_links_.begin_second_pass(max_tracked);
  module_links_.begin_second_pass(max_tracked);
  second_ = true;
  have_meta_ = false;
  saw_end_ = false;
  records_ = 0;
}

}  // namespace cg::runtime
