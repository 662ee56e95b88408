#pragma once
// JSONL importer (spec §1.3, docs/runtime-4.md): one line → one typed record, parsed with simdjson
// On-Demand straight out of the reader's padded chunk buffer (no copy).
//
// Two ways in, one set of rules. A block of whole lines is parsed as one document stream (one
// structural pass for the block instead of one per line); `parse_line` parses a line alone. The
// stream is used only while its documents line up one to a line; at the first line it cannot
// take (bad JSON, two objects on a line, an object running on, a line too long), the caller parses
// that line and the rest of the block alone, so errors and their wording are the per-line ones and
// a bad line costs at most the rest of its block at the per-line rate.
#include <simdjson.h>

#include <cstdint>
#include <string>
#include <string_view>
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
  // The block's next non-empty line, trimmed, in order. False when the stream cannot take it
  // (nothing was handed on: parse it with parse_line); after that the block is left. Throws
  // the validator's RecordError for a record that parsed whole.
  bool parse_in_block(std::string_view line, TraceValidator& validator, bool first_record);
  // Passes over a line the caller skips; false (and the block is left) when it is not one record.
  bool skip_in_block(std::string_view line);

  // The line's event_id, or empty when it has none (meta, end) or does not parse.
  std::string_view event_id_of(std::string_view line, std::size_t capacity);

 private:
  template <typename Doc>
  void record(Doc& doc, const char* line_end, const char* limit, TraceValidator& validator,
              bool first_record);
  template <typename Done>
  void meta(simdjson::ondemand::object& obj, TraceValidator& validator, bool first_record,
            Done&& done);
  template <typename Done>
  void operation(simdjson::ondemand::object& obj, TraceValidator& validator, Done&& done);
  template <typename Done>
  void edge_timing(simdjson::ondemand::object& obj, TraceValidator& validator, Done&& done);
  template <typename Done>
  void tensor(simdjson::ondemand::object& obj, TraceValidator& validator, Done&& done);
  template <typename Done>
  void gradient(simdjson::ondemand::object& obj, TraceValidator& validator, Done&& done);
  template <typename Done>
  void value(simdjson::ondemand::object& obj, TraceValidator& validator, Done&& done);
  template <typename Done>
  void end(simdjson::ondemand::object& obj, TraceValidator& validator, Done&& done);

  bool at_line(std::string_view line);
  void advance();
  bool leave_block();

  simdjson::ondemand::parser parser_;
  std::vector<std::uint64_t> shape_;
  bool committing_ = false;  // the record parsed whole and is being handed to the validator

  simdjson::ondemand::parser stream_parser_;
  std::size_t stream_batch_ = 0;
  simdjson::ondemand::document_stream stream_;
  simdjson::ondemand::document_stream::iterator it_;
  std::string_view block_;
  const char* block_limit_ = nullptr;  // where the stream's last whole document ends at the latest
  bool in_block_ = false;
};

}  // namespace cg::runtime
