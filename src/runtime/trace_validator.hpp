#pragma once
// Validation shared by every importer (spec §1.5, docs/runtime-4.md): one meta, schema /1–/4,
// non-empty event ids unique across all kinds, gradient state/norm pairs, /4 field presence and
// `end` bookkeeping. A record reaches the sink only after it passed, so lenient mode can skip a
// bad line without a trace of it in the results.
#include <deque>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "runtime/event_id_set.hpp"
#include "runtime/reader.hpp"
#include "runtime/records.hpp"

namespace cg::runtime {

// A record that breaks a rule; the reader adds "file:line".
class RecordError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A record kind the reader does not know: an error naming the line; --lenient skips and counts it.
class UnknownKindError : public RecordError {
 public:
  using RecordError::RecordError;
};

class TraceValidator {
 public:
  TraceValidator(RecordSink& sink, TraceInfo& info, const ReadOptions& options, TraceForm form)
      : sink_(sink),
        info_(info),
        options_(options),
        form_(form),
        ids_(EventIdSet::Limits{options.max_unshaped_event_ids, options.max_compared_event_ids}) {}

  // `first_record` is true for the first non-empty line of a JSONL trace.
  void meta(RunMeta&& meta, bool first_record);
  void tensor(const TensorRecord& r);
  void operation(const OperationRecord& r);
  void gradient(const GradientRecord& r);
  void value(const ValueRecord& r);
  void edge_timing(const EdgeTimingRecord& r);
  void module_scope(const ModuleScopeRecord& r);
  void end(const EndRecord& r);
  // Whole-trace rules: meta present, /4 complete. Throws RecordError (no line applies).
  void finish();

  bool is_v4() const { return have_meta_ && info_.meta.schema == Schema::v4; }
  const EventIdSet& ids() const { return ids_; }

 private:
  void before_record();
  void check_id(std::string_view id);

  RecordSink& sink_;
  TraceInfo& info_;
  const ReadOptions& options_;
  TraceForm form_;
  EventIdSet ids_;
  // Module scopes: a child is recorded before its parent (it closes first), so a `parent` is
  // resolved when the parent's line comes. Pending parents are bounded by the scopes open at once
  // (times their children); closed scopes are remembered only recently, to tell a parent that
  // closed before its child (out of order) from one never seen.
  struct PendingParent {
    std::uint64_t children = 0;
    std::uint64_t first_start = ~std::uint64_t{0}, last_end = 0;  // over its children
    std::string first_child;
  };
  std::unordered_map<std::string, PendingParent> pending_parents_;
  std::unordered_map<std::string, std::pair<std::uint64_t, std::uint64_t>> recent_closed_;
  std::deque<std::string> recent_order_;

  bool have_meta_ = false;
  bool saw_end_ = false;
  std::uint64_t records_ = 0;
};

}  // namespace cg::runtime
