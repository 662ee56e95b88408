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

void TraceValidator::end(const EndRecord& r) {
  if (!is_v4()) {
    throw RecordError(
        "unknown record kind `end` (it exists only in runtime/4; this trace's meta is not /4)");
  }
  before_record();
  saw_end_ = true;
  info_.end = r;
  if (r.operations != info_.operations || r.edge_timings != info_.edge_timings) {
    std::string what = "end record counts " + std::to_string(r.operations) + " operations and " +
                       std::to_string(r.edge_timings) + " edge_timings but the trace has " +
                       std::to_string(info_.operations) + " and " +
                       std::to_string(info_.edge_timings) + " (the file was damaged)";
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
}

}  // namespace cg::runtime
