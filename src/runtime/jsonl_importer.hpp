#pragma once
// JSONL importer (spec §1.3, docs/runtime-4.md): one line → one typed record, parsed with a reused
// simdjson On-Demand parser straight out of the reader's padded chunk buffer (no copy).
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
  // The line's event_id, or empty when it has none (meta, end) or does not parse.
  std::string_view event_id_of(std::string_view line, std::size_t capacity);

 private:
  simdjson::ondemand::parser parser_;
  std::vector<std::uint64_t> shape_;
};

}  // namespace cg::runtime
