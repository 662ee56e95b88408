#include "runtime/chrome_export.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "runtime/output_file.hpp"
#include "util/error.hpp"
#include "util/json_writer.hpp"

namespace cg::runtime {
namespace {

// ns → µs as an exact decimal ("1234.567"); a double would round long sessions' timestamps.
std::string micros(std::uint64_t ns) {
  std::string frac = std::to_string(ns % 1000);
  return std::to_string(ns / 1000) + "." + std::string(3 - frac.size(), '0') + frac;
}

class ChromeSink : public RecordSink {
 public:
  ChromeSink(const std::filesystem::path& trace, OutputFile& out, std::size_t max_threads)
      : trace_(trace), out_(out), max_threads_(max_threads) {}

  void meta(const RunMeta& m) override {
    if (m.schema != Schema::v4) {
      throw InputError(trace_.string(),
                       "Chrome trace export needs a runtime/4 trace (start_ns and thread); this "
                       "one is " +
                           std::string(schema_name(m.schema)));
    }
    is_v4_ = true;
    name_ = m.entrypoint;
    phase_ = m.phase.value_or("");
    out_.write("{\"traceEvents\":[\n");
  }

  void operation(const OperationRecord& r) override {
    need_v4();
    JsonWriter w(0);
    w.begin_object();
    // What ran and where: `matmul @ src/model.rs:446` when the profiler recorded a source.
    std::string name(r.op);
    if (r.source) name += " @ " + std::string(*r.source);
    w.field("name", name).field("cat", "operation").field("ph", "X");
    w.key("ts").raw(micros(*r.start_ns)).key("dur").raw(micros(*r.duration_ns));
    w.field("pid", 1).field("tid", *r.thread);
    w.key("args").begin_object();
    w.field("phase", phase_).field("step", *r.step);
    if (r.static_id) w.field("static_id", *r.static_id);
    w.field("event_id", r.event_id);
    if (r.parent) w.field("parent", *r.parent);
    w.end_object().end_object();
    hold(w.take(), *r.start_ns, *r.duration_ns, *r.thread);
  }

  // A closed module scope: a complete event named by its VarBuilder path on its thread's track.
  // Scopes nest among themselves and around the operations they enclose (same clock, same
  // thread), so the track shows model → layer → operation.
  void module_scope(const ModuleScopeRecord& r) override {
    need_v4();
    JsonWriter w(0);
    w.begin_object();
    w.field("name", r.path.empty() ? std::string_view("<root>") : r.path)
        .field("cat", "module")
        .field("ph", "X");
    w.key("ts").raw(micros(r.start_ns)).key("dur").raw(micros(r.duration_ns));
    w.field("pid", 1).field("tid", r.thread);
    w.key("args").begin_object();
    w.field("phase", phase_);
    if (r.step) w.field("step", *r.step);
    w.field("path", r.path).field("event_id", r.event_id);
    if (r.parent) w.field("parent", *r.parent);
    w.end_object().end_object();
    hold(w.take(), r.start_ns, r.duration_ns, r.thread);
  }

  void edge_timing(const EdgeTimingRecord& r) override {
    need_v4();
    JsonWriter w(0);
    w.begin_object();
    w.field("name", "edge").field("cat", "edge_timing").field("ph", "i").field("s", "t");
    w.key("ts").raw(micros(*r.at_ns));
    w.field("pid", 1).field("tid", *r.thread);
    w.key("args").begin_object();
    w.field("from_static_id", r.from_static_id).field("to_static_id", r.to_static_id);
    w.field("duration_ns", r.duration_ns).field("step", *r.step).field("event_id", r.event_id);
    w.end_object().end_object();
    emit(w.str(), *r.thread);
  }

  std::uint64_t finish() {
    place_complete_events();
    JsonWriter p(0);
    p.begin_object().field("name", "process_name").field("ph", "M").field("pid", 1);
    p.key("args").begin_object().field("name", "candle-graph " + name_).end_object().end_object();
    emit(p.str(), std::nullopt);
    for (std::uint64_t t : threads_) {
      JsonWriter w(0);
      w.begin_object().field("name", "thread_name").field("ph", "M").field("pid", 1);
      w.field("tid", t).key("args").begin_object();
      w.field("name", "thread " + std::to_string(t)).end_object().end_object();
      emit(w.str(), std::nullopt);
    }
    for (const auto& [t, lanes] : extra_lanes_) {
      for (std::uint64_t lane = 1; lane <= lanes; ++lane) {
        JsonWriter w(0);
        w.begin_object().field("name", "thread_name").field("ph", "M").field("pid", 1);
        w.field("tid", lane_tid(t, lane)).key("args").begin_object();
        w.field("name", "thread " + std::to_string(t) + " (overlapping, lane " +
                            std::to_string(lane) + ")");
        w.end_object().end_object();
        emit(w.str(), std::nullopt);
      }
    }
    out_.write("\n]}\n");
    return events_;
  }
  std::size_t threads() const { return threads_.size(); }

 private:
  void need_v4() const {
    if (!is_v4_) {
      throw InputError(trace_.string(),
                       "Chrome trace export needs a runtime/4 trace whose meta is the first line");
    }
  }
  void emit(const std::string& event, std::optional<std::uint64_t> thread) {
    if (!first_) out_.write(",\n");
    first_ = false;
    out_.write(event);
    if (thread) {
      if (threads_.insert(*thread).second && threads_.size() > max_threads_) {
        // A limit, not a bad line: lenient mode stops here too (the reader adds file:line).
        throw std::length_error("trace has more than " + std::to_string(max_threads_) +
                                " distinct `thread` values (the Chrome export's limit)");
      }
      ++events_;
    }
  }

  struct Held {
    std::uint64_t start = 0, end = 0, thread = 0, order = 0;
    std::string json;
  };

  // Complete events wait until the trace is read: operations that overlap without nesting (legal
  // in runtime/4) would break the X-event nesting a viewer needs, so each goes to the first lane
  // of its thread where it nests; lane 0 is the thread's own track.
  void hold(std::string json, std::uint64_t start, std::uint64_t duration, std::uint64_t thread) {
    count_thread(thread);
    held_.push_back({start, start + duration, thread, held_.size(), std::move(json)});
  }

  static std::uint64_t lane_tid(std::uint64_t thread, std::uint64_t lane) {
    return thread + (lane << 16);  // runtime/4 threads are < 65536
  }

  void place_complete_events() {
    std::sort(held_.begin(), held_.end(), [](const Held& a, const Held& b) {
      if (a.thread != b.thread) return a.thread < b.thread;
      if (a.start != b.start) return a.start < b.start;
      if (a.end != b.end) return a.end > b.end;
      return a.order < b.order;
    });
    std::vector<std::vector<std::uint64_t>> lanes;  // per lane: ends of the open events
    std::uint64_t thread = 0;
    for (std::size_t i = 0; i < held_.size(); ++i) {
      Held& h = held_[i];
      if (i == 0 || h.thread != thread) {
        lanes.clear();
        thread = h.thread;
      }
      std::size_t lane = 0;
      for (;; ++lane) {
        if (lane == lanes.size()) lanes.emplace_back();
        auto& open = lanes[lane];
        while (!open.empty() && open.back() <= h.start)
          open.pop_back();
        if (open.empty() || open.back() >= h.end) break;
      }
      lanes[lane].push_back(h.end);
      if (lane > 0) {
        std::string from = "\"tid\":" + std::to_string(h.thread) + ",";
        auto at = h.json.find(from);
        if (at != std::string::npos)
          h.json.replace(at, from.size(),
                         "\"tid\":" + std::to_string(lane_tid(h.thread, lane)) + ",");
        auto& most = extra_lanes_[h.thread];
        most = std::max<std::uint64_t>(most, lane);
      }
      write_event(h.json);
      std::string().swap(h.json);
    }
    held_.clear();
  }

  void count_thread(std::uint64_t thread) {
    if (threads_.insert(thread).second && threads_.size() > max_threads_) {
      throw std::length_error("trace has more than " + std::to_string(max_threads_) +
                              " distinct `thread` values (the Chrome export's limit)");
    }
    ++events_;
  }

  void write_event(const std::string& event) {
    if (!first_) out_.write(",\n");
    first_ = false;
    out_.write(event);
  }

  std::vector<Held> held_;
  std::map<std::uint64_t, std::uint64_t> extra_lanes_;  // thread → lanes past its own
  const std::filesystem::path& trace_;
  OutputFile& out_;
  bool is_v4_ = false;
  bool first_ = true;
  std::string name_, phase_;
  std::size_t max_threads_;
  std::set<std::uint64_t> threads_;
  std::uint64_t events_ = 0;
};

}  // namespace

std::vector<std::string> end_record_findings(const TraceInfo& trace) {
  std::vector<std::string> out;
  if (!trace.end) return out;
  const EndRecord& e = *trace.end;
  if (e.dropped > 0)
    out.push_back(std::to_string(e.dropped) +
                  " events were dropped by the profiler (backpressure `drop`); the timeline has "
                  "gaps");
  if (e.open_operations > 0)
    out.push_back(std::to_string(e.open_operations) +
                  " operations were begun and never ended; they are not in the timeline");
  if (e.open_modules > 0)
    out.push_back(std::to_string(e.open_modules) +
                  " module scopes were begun and never closed; they are not in the timeline");
  if (e.errors > 0)
    out.push_back(std::to_string(e.errors) +
                  " profiler errors during the session (unknown event ids, I/O); see the program's "
                  "log");
  return out;
}

ChromeExport export_chrome_trace(const std::filesystem::path& trace,
                                 const std::filesystem::path& output, const ReadOptions& options,
                                 std::size_t max_threads) {
  OutputFile out(output);
  ChromeSink sink(trace, out, max_threads);
  ChromeExport result;
  result.trace = read_trace(trace, sink, options);
  result.events = sink.finish();
  result.threads = sink.threads();
  out.commit();
  return result;
}

}  // namespace cg::runtime
