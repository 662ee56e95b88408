#pragma once
// One IR record (or the `cargo`/`runtime` value) written exactly as write_model_ir writes it, so a
// query for one record writes that record without serialising and re-parsing the whole IR.
#include <optional>

#include "ir/model.hpp"
#include "util/json_writer.hpp"

namespace cg::ir {

void write_record(JsonWriter& w, const Component& c);
void write_record(JsonWriter& w, const ArchitectureEdge& e);
void write_record(JsonWriter& w, const Module& m);
void write_record(JsonWriter& w, const Parameter& p);
void write_record(JsonWriter& w, const Function& f);
void write_record(JsonWriter& w, const Tensor& t);
void write_record(JsonWriter& w, const Operation& o);
void write_record(JsonWriter& w, const Finding& f);
void write_record(JsonWriter& w, const std::optional<CargoSummary>& c);
void write_record(JsonWriter& w, const std::optional<RuntimeSummary>& r);

}  // namespace cg::ir
