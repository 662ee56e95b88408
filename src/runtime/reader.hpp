#pragma once
// The trace reader: one call reads a runtime/1–4 trace (document or JSONL, auto-detected as spec
// §1.4), validates it (§1.5 and docs/runtime-4.md) and hands typed records to a sink while
// streaming. Memory stays flat in the number of events (see event_id_set.hpp); only the legacy
// document form is read whole.
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "runtime/records.hpp"

namespace cg::runtime {

struct ReadOptions {
  // Skip lines that fail to parse or validate (and a /4 trace's missing `end`), counting them in
  // TraceInfo instead of failing. Structural errors (no meta, limits) still fail.
  bool lenient = false;
  std::size_t max_line_bytes = std::size_t{1} << 20;
  std::uint64_t max_records = std::uint64_t{1} << 32;
  // The document form is parsed whole; larger documents are refused rather than exhausting memory.
  std::size_t max_document_bytes = std::size_t{256} << 20;
  // JSONL lines to skip as bad (line → reason), counted like any skipped line. Lenient mode finds
  // repeated event ids only after their records were delivered; a caller that can start its sink
  // afresh re-reads with TraceInfo::duplicate_lines here (read_traces does).
  std::map<std::uint64_t, std::string> skip_lines;
  // Parse each JSONL line alone. The default parses a block of lines as one stream, with the same
  // result (same records, errors, wording and line numbers); this is the reference it is held to
  // by tests and the fuzzer.
  bool line_at_a_time = false;
  // Memory bounds of the uniqueness check (docs/runtime-4.md, "Limits"); past each the read fails
  // with an error naming the limit and the count, in lenient mode too — never by dropping ids.
  // Event ids not shaped `<prefix>-<step>-<counter>` (fingerprinted, 8-16 bytes each).
  std::size_t max_unshaped_event_ids = std::size_t{1} << 22;
  // Ids that may repeat an earlier one and are compared in full by a second pass (about 100
  // bytes each): true repeats, and shaped ids whose counter restarts (per step, per thread).
  std::size_t max_compared_event_ids = std::size_t{1} << 20;
  // Lenient mode: repeated event ids it skips (each is listed by line for the re-read).
  std::size_t max_duplicate_event_ids = std::size_t{1} << 16;
  // How much of a JSONL trace is read at a time; a block is the whole lines of one read. Tests and
  // the fuzzer make it small so that block edges fall everywhere.
  std::size_t chunk_bytes = std::size_t{4} << 20;
};

enum class TraceForm : std::uint8_t { document, jsonl };

struct SkippedLine {
  std::uint64_t line = 0;
  std::string reason;
};

// What was read, per trace: identity, counts and what lenient mode skipped.
struct TraceInfo {
  std::string path;
  TraceForm form = TraceForm::jsonl;
  RunMeta meta;
  std::uint64_t bytes = 0;
  std::uint64_t lines = 0;
  std::uint64_t tensors = 0;
  std::uint64_t operations = 0;
  std::uint64_t gradients = 0;
  std::uint64_t values = 0;
  std::uint64_t edge_timings = 0;
  std::uint64_t modules = 0;  // runtime/4 `module` lines (closed module scopes)
  std::uint64_t stats = 0;    // runtime/4 `stats` lines (tensor statistics)
  // runtime/4: the run's wall time, the union over its threads of their outermost timed
  // intervals (idle gaps excluded, overlapping threads once); 0 without timestamps.
  std::uint64_t span_ns = 0;
  std::optional<EndRecord> end;  // runtime/4
  // Module scopes (docs/runtime-4.md, "Additions"). Out of order: a scope with a child scope whose
  // interval does not lie inside its own (its self time is understated). Unresolved: a
  // `parent` that names no module scope of the trace (a scope never closed, counted in
  // end.open_modules, or a wrong id; the latter is an error unless --lenient or the trace is
  // truncated).
  std::uint64_t module_scopes_out_of_order = 0;
  std::uint64_t module_parents_unresolved = 0;
  // Lenient mode: lines of a record kind the reader does not know (also in skipped_lines).
  std::uint64_t unknown_kind_lines = 0;
  // Lenient mode only: a /4 trace without `end`, or whose `end` counts disagree with the file.
  bool truncated = false;
  bool end_counts_disagree = false;
  std::uint64_t skipped_lines = 0;
  std::vector<SkippedLine> skipped_examples;  // the first few, for the report
  // Lenient mode only: repeated ids are found after their records were delivered, so they are
  // counted here and listed by line (the later occurrences) for a re-read that skips them.
  std::uint64_t duplicate_event_ids = 0;
  std::map<std::uint64_t, std::string> duplicate_lines;
  // runtime/4 parents the file lists before some of their children (overlapping scopes, a
  // reordered file): the time of those children, by the parent's event id. They reach the sink
  // after their parent, so a sink that subtracts children from parents needs them from the start:
  // read_traces reads again with TraceAggregate::subtract_later_children.
  std::unordered_map<std::string, std::uint64_t> later_children_ns;
  std::size_t id_set_bytes = 0;  // memory the uniqueness check used
};

// Reads `path` into `sink`. Throws cg::InputError("file:line", what was expected) on bad input.
TraceInfo read_trace(const std::filesystem::path& path, RecordSink& sink,
                     const ReadOptions& options = {});

}  // namespace cg::runtime
