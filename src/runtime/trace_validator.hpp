#pragma once
// Validation shared by every importer (spec §1.5, docs/runtime-4.md): one meta, schema /1–/4,
// non-empty event ids unique across all kinds, gradient state/norm pairs, /4 field presence and
// `end` bookkeeping. A record reaches the sink only after it passed, so lenient mode can skip a
// bad line without a trace of it in the results.
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "runtime/event_id_set.hpp"
#include "runtime/parent_links.hpp"
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

// A repeated event id, found by the second pass (`--lenient` lists its line for a re-read).
class DuplicateIdError : public RecordError {
 public:
  using RecordError::RecordError;
};

// Validates records in file order and hands each one on. Some rules need the whole trace: when the
// first pass leaves a suspect id (event_id_set.hpp) or an unresolved `parent` (parent_links.hpp),
// the reader reads the file again into `begin_second_pass()`, which checks those and hands nothing
// on.
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
  void stats(const StatsRecord& r);
  void end(const EndRecord& r);
  // Whole-trace rules: meta present, /4 complete. Throws RecordError (no line applies).
  void finish();

  // The line the next record comes from (named by the second pass's findings).
  void at_line(std::uint64_t line) { line_ = line; }
  bool needs_second_pass() const {
    return ids_.has_suspects() || operation_links_.needs_second_pass() ||
           module_links_.needs_second_pass();
  }
  // Reads the same records again: nothing reaches the sink or the counts.
  void begin_second_pass();

  bool is_v4() const { return have_meta_ && info_.meta.schema == Schema::v4; }
  const EventIdSet& ids() const { return ids_; }

 private:
  void before_record();
  void check_id(std::string_view id);
  void check_thread(const char* what, std::optional<std::uint64_t> thread) const;
  static void check_parent(const char* what, std::string_view id,
                           std::optional<std::string_view> parent);
  static std::uint64_t end_of(const char* what, std::uint64_t start, std::uint64_t duration);

  RecordSink& sink_;
  TraceInfo& info_;
  const ReadOptions& options_;
  TraceForm form_;
  EventIdSet ids_;
  // `parent` links, resolved in any order (parent_links.hpp).
  ParentLinks operation_links_{"operation"};
  ParentLinks module_links_{"module scope"};
  // The second pass compares suspect ids in full: each one's first line.
  std::unordered_map<std::string, std::uint64_t> compared_;
  bool second_ = false;
  std::uint64_t line_ = 0;

  bool have_meta_ = false;
  bool saw_end_ = false;
  std::uint64_t records_ = 0;
};

}  // namespace cg::runtime
