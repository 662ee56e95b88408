#pragma once
// Chrome Trace Event JSON (the format chrome://tracing and Perfetto open) from a runtime/4 trace:
// one complete event ("ph":"X") per operation on its thread's track (pid = the trace's meta.pid,
// else 1; tid = thread), ts/dur in microseconds with ns precision, phase/step/static id/event
// id/parent in args; one complete event per closed module scope, named by its VarBuilder path
// (`model.layers.3.self_attn`); one instant event per edge timing; process and thread names as
// metadata events. Operations that overlap without nesting go to a lane track of their thread, so
// every X event nests in its track (complete events are placed once the trace is read). Committed
// atomically only when the whole trace was read and validated.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "runtime/reader.hpp"

namespace cg::runtime {

// One trace's process track in the export.
struct ChromeTrack {
  TraceInfo trace;
  std::uint64_t pid = 1;        // the track's pid in the export
  std::uint64_t offset_ns = 0;  // how far its times were shifted to align it with the others
  std::uint64_t events = 0;
  std::uint64_t threads = 0;
};

struct ChromeExport {
  TraceInfo trace;  // the first trace's
  std::vector<ChromeTrack> tracks;
  std::uint64_t events = 0;   // all traces together
  std::uint64_t threads = 0;  // all traces together
  // Several traces are put on one timeline only when every one has meta.start_unix_ns.
  bool aligned = true;
};

// Distinct `thread` values one export names (a track and a name each, remembered to the end):
// more is an error naming the line, not memory growing with every event.
inline constexpr std::size_t kMaxChromeThreads = std::size_t{1} << 16;

// What the trace's `end` record says went wrong while it was written (dropped events, operations
// and module scopes never ended, errors), one sentence each; empty when nothing did or the trace
// has no `end`. The export prints them as warnings, with --lenient too.
std::vector<std::string> end_record_findings(const TraceInfo& trace);

// Several traces (processes, ranks) into one file: one process track per trace, its pid the
// trace's meta.pid when every trace has one and no two share it, else the trace's position 1, 2,
// 3…; named by entrypoint, file name and pid; times aligned by meta.start_unix_ns when every trace
// has it (the earliest session starts at 0), else each trace starts at 0. The first bad trace
// throws and nothing is written.
ChromeExport export_chrome_traces(const std::vector<std::filesystem::path>& traces,
                                  const std::filesystem::path& output,
                                  const ReadOptions& options = {},
                                  std::size_t max_threads = kMaxChromeThreads);

// Throws cg::InputError when the trace is not runtime/4 (it has no timeline) or is invalid.
ChromeExport export_chrome_trace(const std::filesystem::path& trace,
                                 const std::filesystem::path& output,
                                 const ReadOptions& options = {},
                                 std::size_t max_threads = kMaxChromeThreads);

}  // namespace cg::runtime
