#include "runtime/reader.hpp"

#include <simdjson.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>

#include "runtime/document_importer.hpp"
#include "runtime/jsonl_importer.hpp"
#include "runtime/line_reader.hpp"
#include "runtime/trace_validator.hpp"
#include "util/error.hpp"

namespace cg::runtime {
namespace {

constexpr std::size_t kSkippedExamples = 10;

std::string where(const std::filesystem::path& path, std::uint64_t line) {
  return path.string() + ":" + std::to_string(line);
}

// §1.4, with the one-line-meta quirk fixed: a first line that is a whole object with `kind` is
// JSONL even when it is the only line.
TraceForm detect_form(const std::filesystem::path& path, const ReadOptions& options) {
  LineReader lines(path, options.max_line_bytes, options.chunk_bytes);
  Line first;
  while (lines.next(first) && !first.oversized && first.text.empty()) {
  }
  if (first.number == 0 || (!first.oversized && first.text.empty())) {
    throw InputError(path.string(), "empty runtime evidence input");
  }
  if (first.oversized || first.text.front() != '{') return TraceForm::jsonl;
  simdjson::dom::parser parser;
  simdjson::dom::object obj;
  if (!parser.parse(first.text.data(), first.text.size(), false).get_object().get(obj)) {
    simdjson::dom::element e;
    if (!obj["kind"].get(e)) return TraceForm::jsonl;
    bool doc_keys = !obj["schema"].get(e) && !obj["run"].get(e);
    Line rest;
    while (lines.next(rest)) {
      if (rest.oversized || !rest.text.empty()) return TraceForm::jsonl;
    }
    return doc_keys ? TraceForm::document : TraceForm::jsonl;
  }
  // The first line is not a whole object: a pretty-printed document, or a bad JSONL line.
  std::error_code ec;
  auto size = std::filesystem::file_size(path, ec);
  if (ec || size > options.max_document_bytes) return TraceForm::jsonl;
  simdjson::padded_string text;
  if (simdjson::padded_string::load(path.string()).get(text)) return TraceForm::jsonl;
  simdjson::dom::element e;
  if (parser.parse(text).get_object().get(obj)) return TraceForm::jsonl;
  return (!obj["schema"].get(e) && !obj["run"].get(e)) ? TraceForm::document : TraceForm::jsonl;
}

void skip(TraceInfo& info, std::uint64_t line, std::string reason) {
  ++info.skipped_lines;
  if (info.skipped_examples.size() < kSkippedExamples) {
    info.skipped_examples.push_back({line, std::move(reason)});
  }
}

// Second pass, only when the first left something to settle with the whole trace: ids that may
// repeat an earlier one are compared in full, and `parent` links the file does not list child
// first are resolved (trace_validator.hpp). Every line is parsed alone again, so compact lines are
// expanded as before; lines the first pass skipped stay skipped. Nothing reaches the sink.
void second_pass(const std::filesystem::path& path, const ReadOptions& options,
                 TraceValidator& validator, const std::unordered_set<std::uint64_t>& skipped,
                 TraceInfo& info) {
  try {
    validator.begin_second_pass();
  } catch (const std::length_error& e) {
    throw InputError(path.string(), e.what());
  }
  LineReader lines(path, options.max_line_bytes, options.chunk_bytes);
  JsonlImporter importer;
  bool first = true;
  Line line;
  while (lines.next(line)) {
    if (line.oversized || line.text.empty() || skipped.count(line.number)) {
      first = first && line.text.empty() && !line.oversized;
      continue;
    }
    validator.at_line(line.number);
    try {
      importer.parse_line(line.text, line.capacity, validator, first);
    } catch (const DuplicateIdError& e) {
      if (!options.lenient) throw InputError(where(path, line.number), e.what());
      if (++info.duplicate_event_ids > options.max_duplicate_event_ids) {
        throw InputError(where(path, line.number),
                         "trace has more than " + std::to_string(options.max_duplicate_event_ids) +
                             " repeated event ids; lenient mode skips at most " +
                             std::to_string(options.max_duplicate_event_ids));
      }
      info.duplicate_lines.emplace(line.number, e.what());
    } catch (const RecordError& e) {
      // A parent cycle: the records were handed on already, so no mode can skip it.
      throw InputError(where(path, line.number), e.what());
    } catch (const std::length_error& e) {
      throw InputError(where(path, line.number), e.what());
    }
    first = false;
  }
  try {
    validator.finish();
  } catch (const RecordError& e) {
    throw InputError(path.string(), e.what());
  }
}

// Reads the trace a block of whole lines at a time (one structural pass per block, see
// JsonlImporter); a line the block's stream cannot take, and the rest of its block, are parsed
// one by one with the same rules, as are lines `next_block` leaves to `next` (over-long, or the
// last one without a newline).
void read_jsonl(const std::filesystem::path& path, RecordSink& sink, const ReadOptions& options,
                TraceInfo& info) {
  TraceValidator validator(sink, info, options, TraceForm::jsonl);
  JsonlImporter importer;
  LineReader lines(path, options.max_line_bytes, options.chunk_bytes);
  std::unordered_set<std::uint64_t> skipped;
  bool first = true;
  bool streaming = false;  // this line belongs to the current block's stream
  std::uint64_t last_number = 0;

  auto oversized = [&](std::uint64_t number) {
    std::string reason = "line is longer than " + std::to_string(options.max_line_bytes) +
                         " bytes (the reader's limit)";
    if (!options.lenient) throw InputError(where(path, number), reason);
    skip(info, number, std::move(reason));
    skipped.insert(number);
    first = false;
  };
  auto one = [&](std::string_view text, std::size_t capacity, std::uint64_t number) {
    if (text.empty()) return;
    if (auto bad = options.skip_lines.find(number); bad != options.skip_lines.end()) {
      if (streaming && !importer.skip_in_block(text)) streaming = false;
      skip(info, number, bad->second);
      skipped.insert(number);
      first = false;
      return;
    }
    validator.at_line(number);
    try {
      if (!streaming || !importer.parse_in_block(text, validator, first)) {
        streaming = false;
        importer.parse_line(text, capacity, validator, first);
      }
    } catch (const RecordError& e) {
      if (!options.lenient) throw InputError(where(path, number), e.what());
      if (dynamic_cast<const UnknownKindError*>(&e)) ++info.unknown_kind_lines;
      skip(info, number, e.what());
      skipped.insert(number);
    } catch (const std::length_error& e) {
      throw InputError(where(path, number), e.what());
    }
    first = false;
  };

  for (;;) {
    Block block;
    if (!options.line_at_a_time && lines.next_block(block)) {
      importer.begin_block(block.text, lines.block_capacity());
      streaming = true;
      const char* p = block.text.data();
      const char* end = p + block.text.size();
      std::uint64_t number = block.first_number;
      for (; p < end; ++number) {
        const char* nl =
            static_cast<const char*>(std::memchr(p, '\n', static_cast<std::size_t>(end - p)));
        std::string_view raw(p, static_cast<std::size_t>(nl - p));
        std::size_t capacity = block.capacity - static_cast<std::size_t>(p - block.text.data());
        p = nl + 1;
        if (raw.size() > options.max_line_bytes) {
          streaming = false;
          oversized(number);
          continue;
        }
        std::string_view text = trim_line(raw);
        one(text, capacity - static_cast<std::size_t>(text.data() - raw.data()), number);
      }
      lines.count_lines(number - block.first_number);
      last_number = number - 1;
      continue;
    }
    streaming = false;
    Line line;
    if (!lines.next(line)) break;
    last_number = line.number;
    if (line.oversized) {
      oversized(line.number);
      continue;
    }
    one(line.text, line.capacity, line.number);
  }
  info.lines = last_number;
  info.bytes = lines.bytes_read();
  try {
    validator.finish();
  } catch (const RecordError& e) {
    throw InputError(path.string(), e.what());
  }
  if (validator.needs_second_pass()) second_pass(path, options, validator, skipped, info);
}

void read_document(const std::filesystem::path& path, RecordSink& sink, const ReadOptions& options,
                   TraceInfo& info) {
  simdjson::padded_string text;
  if (auto e = simdjson::padded_string::load(path.string()).get(text)) {
    throw InputError(path.string(),
                     std::string("cannot read trace: ") + simdjson::error_message(e));
  }
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (auto e = parser.parse(text).get(root)) {
    throw InputError(path.string(),
                     std::string("invalid JSON (") + simdjson::error_message(e) + ")");
  }
  info.bytes = text.size();
  info.lines = static_cast<std::uint64_t>(std::count(text.data(), text.data() + text.size(), '\n'));
  TraceValidator validator(sink, info, options, TraceForm::document);
  try {
    import_document(root, validator);
    validator.finish();
  } catch (const RecordError& e) {
    // A document is one value: lenient mode cannot skip part of it.
    throw InputError(path.string(), e.what());
  } catch (const std::length_error& e) {
    throw InputError(path.string(), e.what());
  }
  if (!validator.ids().has_suspects()) return;
  std::unordered_set<std::string> seen;
  for (const char* array : {"tensors", "operations", "gradients", "values", "edge_timings"}) {
    simdjson::dom::array a;
    if (root[array].get_array().get(a)) continue;
    for (simdjson::dom::element x : a) {
      std::string_view id;
      if (x["event_id"].get_string().get(id) || !validator.ids().is_suspect(id)) continue;
      if (!seen.emplace(id).second) {
        if (!options.lenient) {
          throw InputError(path.string(), "duplicate event_id `" + std::string(id) + "`");
        }
        ++info.duplicate_event_ids;
      }
    }
  }
}

}  // namespace

TraceInfo read_trace(const std::filesystem::path& path, RecordSink& sink,
                     const ReadOptions& options) {
  TraceInfo info;
  info.path = path.string();
  info.form = detect_form(path, options);
  if (info.form == TraceForm::document) {
    read_document(path, sink, options, info);
  } else {
    read_jsonl(path, sink, options, info);
  }
  return info;
}

}  // namespace cg::runtime
