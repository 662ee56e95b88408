#pragma once
// JSON renderings the CLI and queries print: `query profile` rows, and what each trace was
// (identity, counts, what lenient mode skipped), so a user sees every skipped line counted.
#include <string>
#include <vector>

#include "runtime/merge_plan.hpp"
#include "runtime/reader.hpp"
#include "util/json_writer.hpp"

namespace cg::runtime {

void write_timing(JsonWriter& w, const TimingRecord& t);
// {"step_time_ns","steps","operations":[…],"modules":[…]}; `limit` caps operations (0 = all).
void write_profile_report(JsonWriter& w, const ProfileReport& report, std::size_t limit = 0);
void write_trace_info(JsonWriter& w, const TraceInfo& info);

}  // namespace cg::runtime
