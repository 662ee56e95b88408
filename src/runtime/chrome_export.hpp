#pragma once
// Chrome Trace Event JSON (the format chrome://tracing and Perfetto open) from a runtime/4 trace:
// one complete event ("ph":"X") per operation on its thread's track (pid 1, tid = thread), ts/dur
// in microseconds with ns precision, phase/step/static id/event id/parent in args; one complete
// event per closed module scope, named by its VarBuilder path (`model.layers.3.self_attn`); one
// instant event per edge timing; process and thread names as metadata events. Operations that
// overlap without nesting go to a lane track of their thread, so every X event nests in its track
// (complete events are placed once the trace is read). Committed atomically only when the whole
// trace was read and validated.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "runtime/reader.hpp"

namespace cg::runtime {

struct ChromeExport {
  TraceInfo trace;
  std::uint64_t events = 0;
  std::uint64_t threads = 0;
};

// Distinct `thread` values one export names (a track and a name each, remembered to the end):
// more is an error naming the line, not memory growing with every event.
inline constexpr std::size_t kMaxChromeThreads = std::size_t{1} << 16;

// What the trace's `end` record says went wrong while it was written (dropped events, operations
// and module scopes never ended, errors), one sentence each; empty when nothing did or the trace
// has no `end`. The export prints them as warnings, with --lenient too.
std::vector<std::string> end_record_findings(const TraceInfo& trace);

// Throws cg::InputError when the trace is not runtime/4 (it has no timeline) or is invalid.
ChromeExport export_chrome_trace(const std::filesystem::path& trace,
                                 const std::filesystem::path& output,
                                 const ReadOptions& options = {},
                                 std::size_t max_threads = kMaxChromeThreads);

}  // namespace cg::runtime
