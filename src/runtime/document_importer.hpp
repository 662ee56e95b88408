#pragma once
// Document importer (spec §1.2): one JSON object with `schema`, `run` and record arrays. Legacy
// and small, so it is parsed whole (simdjson DOM); records go through the same validator as JSONL.
#include <simdjson.h>

#include "runtime/trace_validator.hpp"

namespace cg::runtime {

// Errors name the array and index ("operations[3]"); the reader prefixes the file.
void import_document(simdjson::dom::element root, TraceValidator& validator);

}  // namespace cg::runtime
