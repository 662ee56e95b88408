#include "runtime/trace_validator.hpp"

#include <algorithm>
#include <cmath>

namespace cg::runtime {
namespace {

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
  ids_.insert(id);
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
  info_.meta = std::move(meta);
  sink_.meta(info_.meta);
}

void TraceValidator::tensor(const TensorRecord& r) {
  before_record();
  check_id(r.event_id);
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
  }
  before_record();
  check_id(r.event_id);
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
  ++info_.gradients;
  sink_.gradient(r);
}

void TraceValidator::value(const ValueRecord& r) {
  before_record();
  check_id(r.event_id);
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
  }
  before_record();
  check_id(r.event_id);
  ++info_.edge_timings;
  sink_.edge_timing(r);
}

void TraceValidator::module_scope(const ModuleScopeRecord& r) {
  if (!is_v4()) {
    throw RecordError(
        "unknown record kind `module` (it exists only in runtime/4; this trace's meta is not /4)");
  }
  if (r.parent && *r.parent == r.event_id) {
    throw RecordError("module scope `" + std::string(r.event_id) + "` names itself as its parent");
  }
  before_record();
  check_id(r.event_id);
  ++info_.modules;
  const std::uint64_t end_ns =
      r.start_ns + r.duration_ns < r.start_ns ? ~std::uint64_t{0} : r.start_ns + r.duration_ns;
  if (r.parent) {
    std::string parent(*r.parent);
    if (auto closed = recent_closed_.find(parent); closed != recent_closed_.end()) {
      ++info_.module_scopes_out_of_order;  // the parent closed before this child
    } else {
      auto& p = pending_parents_[parent];
      if (p.children++ == 0) p.first_child = std::string(r.event_id);
      p.first_start = std::min(p.first_start, r.start_ns);
      p.last_end = std::max(p.last_end, end_ns);
    }
  }
  std::string id(r.event_id);
  if (auto it = pending_parents_.find(id); it != pending_parents_.end()) {
    // Kept per parent, not per child, so memory stays flat under a scope open all session long.
    if (it->second.first_start < r.start_ns || it->second.last_end > end_ns) {
      ++info_.module_scopes_out_of_order;
    }
    pending_parents_.erase(it);
  }
  constexpr std::size_t kRecent = 4096;
  if (recent_closed_.emplace(id, std::make_pair(r.start_ns, end_ns)).second) {
    recent_order_.push_back(std::move(id));
    if (recent_order_.size() > kRecent) {
      recent_closed_.erase(recent_order_.front());
      recent_order_.pop_front();
    }
  }
  sink_.module_scope(r);
}

void TraceValidator::end(const EndRecord& r) {
  if (!is_v4()) {
    throw RecordError(
        "unknown record kind `end` (it exists only in runtime/4; this trace's meta is not /4)");
  }
  before_record();
  saw_end_ = true;
  info_.end = r;
  if (r.operations != info_.operations || r.edge_timings != info_.edge_timings ||
      r.modules != info_.modules) {
    std::string what = "end record counts " + std::to_string(r.operations) + " operations and " +
                       std::to_string(r.edge_timings) + " edge_timings";
    if (r.modules || info_.modules) what += " and " + std::to_string(r.modules) + " modules";
    what += " but the trace has " + std::to_string(info_.operations) + " and " +
            std::to_string(info_.edge_timings);
    if (r.modules || info_.modules) what += " and " + std::to_string(info_.modules);
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
  if (!pending_parents_.empty()) {
    // Parents never seen: scopes still open at the end (end.open_modules), a truncated trace, or
    // ids that name no module scope (an error unless --lenient).
    const bool explained = info_.truncated || (info_.end && info_.end->open_modules > 0);
    if (!explained && !options_.lenient) {
      const auto& [parent, p] =
          *std::min_element(pending_parents_.begin(), pending_parents_.end(),
                            [](const auto& a, const auto& b) { return a.first < b.first; });
      throw RecordError("module scope `" + p.first_child + "` names parent `" + parent +
                        "`, which is no module scope in the trace (and end.open_modules is 0)");
    }
    for (const auto& [parent, p] : pending_parents_)
      info_.module_parents_unresolved += p.children;
  }
  info_.id_set_bytes = ids_.memory_bytes();
}

}  // namespace cg::runtime
