// Trace files are written by users' programs and may be truncated, garbled or hostile. The reader
// is driven through a real file (it streams), in strict and lenient mode, and each time twice:
// with its default block-at-a-time parsing (the plain reader, then simdjson's document stream), in
// blocks as large as the input and in blocks of a few lines, and line at a time with simdjson
// alone, which must agree exactly (the same records with every field, the same counts, or the same
// error at the same line).
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "runtime/merge_plan.hpp"
#include "runtime/reader.hpp"
#include "runtime/record_log.hpp"
#include "runtime/report_json.hpp"
#include "util/error.hpp"
#include "util/json_writer.hpp"

namespace {

enum class Mode { blocks, small_blocks, line_at_a_time };

// Everything a reading produced, as text: the trace's info and its operations' timings, or the
// error. Lines over 1 KiB are over-long, so that with small chunks a block is at most about 1 KiB
// and block edges fall all over an input of a few lines.
std::string outcome(const std::string& path, bool lenient, Mode mode) {
  try {
    cg::runtime::ReadOptions opts;
    opts.lenient = lenient;
    opts.max_line_bytes = 1024;
    opts.line_at_a_time = mode == Mode::line_at_a_time;
    if (mode == Mode::small_blocks) opts.chunk_bytes = 32;
    auto traces = cg::runtime::read_traces({path}, opts);
    cg::JsonWriter w;
    w.begin_array();
    for (const auto& t : traces) {
      cg::runtime::write_trace_info(w, t.info);
      w.begin_object();
      for (const auto& [id, stats] : t.aggregate.operations) {
        w.field(id, stats.timing.total_ns() * 1000003 + stats.observations);
      }
      w.end_object();
    }
    w.end_array();
    // Every record handed on, every field: the paths must agree on more than the timings.
    cg::runtime::RecordLog log;
    (void)cg::runtime::read_trace(path, log, opts);
    return w.take() + "\n" + log.text();
  } catch (const cg::InputError& e) {
    return std::string("error: ") + e.what();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::string path = "/tmp/cg-fuzz-trace-" + std::to_string(::getpid()) + ".jsonl";
  FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return 0;
  std::fwrite(data, 1, size, f);
  std::fclose(f);
  for (bool lenient : {false, true}) {
    std::string lines = outcome(path, lenient, Mode::line_at_a_time);
    for (Mode mode : {Mode::blocks, Mode::small_blocks}) {
      std::string blocks = outcome(path, lenient, mode);
      if (blocks != lines) {
        std::fprintf(stderr, "%s and line-at-a-time reading disagree (lenient=%d):\n%s\n---\n%s\n",
                     mode == Mode::blocks ? "block" : "small-block", lenient, blocks.c_str(),
                     lines.c_str());
        std::abort();
      }
    }
  }
  return 0;
}
