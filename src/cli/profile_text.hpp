#pragma once
// `profile --format table`: the per-module and per-operation tables for people.
#include <string>

#include "runtime/merge_plan.hpp"

namespace cg::cli {

// ns as a short duration: "850 ns", "12.3 µs", "4.56 ms", "1.23 s".
std::string format_duration(std::uint64_t ns);

// `limit` rows per table (0 = all).
std::string profile_table(const runtime::ProfileReport& report, std::size_t traces,
                          std::size_t limit);

}  // namespace cg::cli
