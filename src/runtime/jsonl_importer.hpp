#pragma once
// JSONL importer (spec §1.3, docs/runtime-4.md): one line → one typed record, read straight out of
// the reader's padded chunk buffer (no copy).
//
// Three ways in, one set of rules (the kind readers are shared). `parse_line` parses a line alone
// with simdjson On-Demand: that is the reference. In a block of whole lines, each line is first
// read by the plain reader, a single pass for the lines a profiler writes (ASCII, no escapes, no
// nesting beyond an array of scalars, `kind` first), strings in place. At the first line it
// cannot take — anything else, and any error before the record is handed on — the rest of the
// block is parsed as one simdjson document stream (one structural pass), used while its documents
// line up one to a line; at the first line that cannot take (bad JSON, two objects on a line, an
// object running on, a line too long), the caller parses that line and the rest of the block
// alone. So errors and their wording are always the per-line ones, and a bad line costs at most
// the rest of its block at the per-line rate. `ReadOptions::line_at_a_time` reads with
// `parse_line` only; the runtime_trace fuzz target requires both to agree on every input.
#include <simdjson.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "runtime/trace_validator.hpp"

namespace cg::runtime {

class JsonlImporter {
 public:
  // `line` is trimmed and non-empty; `capacity` bytes from line.data() are readable
  // (≥ line.size() + SIMDJSON_PADDING). Throws RecordError.
  void parse_line(std::string_view line, std::size_t capacity, TraceValidator& validator,
                  bool first_record);

  // Starts a block: `text` is whole lines, padded as for parse_line; `capacity` is the largest
  // block the caller will pass (the stream parser is sized once by it).
  void begin_block(std::string_view text, std::size_t capacity);
  // The block's next non-empty line, trimmed, in order. False when neither the plain reader nor
  // the stream can take it (nothing was handed on: parse it with parse_line); after that the
  // block is left. Throws
  // the validator's RecordError for a record that parsed whole.
  bool parse_in_block(std::string_view line, TraceValidator& validator, bool first_record);
  // Passes over a line the caller skips; false (and the block is left) when it is not one record.
  bool skip_in_block(std::string_view line);

 private:
  template <typename Doc>
  void record(Doc& doc, const char* line_end, const char* limit, TraceValidator& validator,
              bool first_record);
  bool parse_plain(std::string_view line, TraceValidator& validator, bool first_record);
  // The record's fields after `kind`, from simdjson (`simdjson::ondemand::object`) or from the
  // plain reader (`PlainObject`): one set of rules for both.
  template <typename Obj, typename Done>
  void dispatch(Obj& obj, std::string_view kind, TraceValidator& validator, bool first_record,
                Done&& done);
  template <typename Obj, typename Done>
  void meta(Obj& obj, TraceValidator& validator, bool first_record, Done&& done);
  template <typename Obj, typename Done>
  void operation(Obj& obj, TraceValidator& validator, Done&& done);
  template <typename Obj, typename Done>
  void edge_timing(Obj& obj, TraceValidator& validator, Done&& done);
  template <typename Obj, typename Done>
  void tensor(Obj& obj, TraceValidator& validator, Done&& done);
  template <typename Obj, typename Done>
  void gradient(Obj& obj, TraceValidator& validator, Done&& done);
  template <typename Obj, typename Done>
  void value(Obj& obj, TraceValidator& validator, Done&& done);
  template <typename Obj, typename Done>
  void module_scope(Obj& obj, TraceValidator& validator, Done&& done);
  // runtime/4 `stats`, and its compact form `st` (`compact` true), expanded into the same record.
  template <typename Obj, typename Done>
  void stats(Obj& obj, TraceValidator& validator, bool compact, Done&& done);
  template <typename Obj, typename Done>
  void end(Obj& obj, TraceValidator& validator, Done&& done);
  // runtime/4-compact/1 (docs/runtime-4.md): `def`, then `o` / `e` / `m` / `st` records that
  // refer to it, expanded here into the same operation, edge_timing, module and stats records a
  // runtime/4 line gives.
  enum class CompactKind : std::uint8_t { operation, edge, module };
  template <typename Obj, typename Done>
  void compact_def(Obj& obj, Done&& done);
  template <typename Obj, typename Done>
  void compact_event(Obj& obj, TraceValidator& validator, CompactKind what, Done&& done);

  void start_stream(const char* from);
  bool at_line(std::string_view line);
  void advance();
  bool leave_block();

  simdjson::ondemand::parser parser_;
  std::vector<std::uint64_t> shape_;

  // Compact encoding: set by a `meta` naming candle-graph/runtime/4-compact/1.
  struct CompactDef {
    CompactKind kind = CompactKind::operation;
    std::string op, static_id;  // operation
    std::string from, to;       // edge
    std::string path;           // module scope
  };
  struct CompactThread {
    std::uint64_t counter = 0;
    std::uint64_t id_step = 0;
  };
  bool compact_ = false;
  std::string phase_;
  std::unordered_map<std::uint64_t, CompactDef> defs_;
  std::unordered_map<std::uint64_t, CompactThread> compact_threads_;
  std::uint64_t compact_last_thread_ = 0;
  std::string compact_id_, compact_parent_;  // the current record's synthesized ids
  bool committing_ = false;  // the record parsed whole and is being handed to the validator

  simdjson::ondemand::parser stream_parser_;
  std::size_t stream_batch_ = 0;
  simdjson::ondemand::document_stream stream_;
  simdjson::ondemand::document_stream::iterator it_;
  std::string_view block_;
  const char* block_limit_ = nullptr;  // where the stream's last whole document ends at the latest
  const char* block_end_ = nullptr;
  std::size_t block_capacity_ = 0;
  enum class Mode { none, plain, stream } mode_ = Mode::none;
};

}  // namespace cg::runtime
