#include "runtime/chrome_export.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "runtime/output_file.hpp"
#include "runtime/trace_validator.hpp"
#include "util/error.hpp"
#include "util/json_writer.hpp"

namespace cg::runtime {
namespace {

// ns → µs as an exact decimal ("1234.567"); a double would round long sessions' timestamps.
std::string micros(std::uint64_t ns) {
  std::string frac = std::to_string(ns % 1000);
  return std::to_string(ns / 1000) + "." + std::string(3 - frac.size(), '0') + frac;
}

// The output all traces' events go to, in order, comma-separated.
struct EventWriter {
  OutputFile& out;
  bool first = true;
  void write(const std::string& event) {
    if (!first) out.write(",\n");
    first = false;
    out.write(event);
  }
};

// Where one trace goes: its process track (pid), the shift that puts its clock on the export's
// timeline, and the name of its track. `pid` empty: the trace's own `meta.pid`, else 1.
struct TrackPlan {
  std::optional<std::uint64_t> pid;
  std::uint64_t offset_ns = 0;
  std::string label;  // after "candle-graph <entrypoint>"; empty for a single trace
  std::optional<std::uint64_t> sort_index;
};

class ChromeSink : public RecordSink {
 public:
  ChromeSink(const std::filesystem::path& trace, EventWriter& out, std::size_t max_threads,
             TrackPlan plan)
      : trace_(trace), out_(out), max_threads_(max_threads), plan_(std::move(plan)) {}

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
    pid_ = plan_.pid.value_or(m.pid.value_or(1));
  }
  std::uint64_t pid() const { return pid_; }

  void operation(const OperationRecord& r) override {
    need_v4();
    JsonWriter w(0);
    w.begin_object();
    // What ran and where: `matmul @ src/model.rs:446` when the profiler recorded a source.
    std::string name(r.op);
    if (r.source) name += " @ " + std::string(*r.source);
    w.field("name", name).field("cat", "operation").field("ph", "X");
    w.key("ts").raw(micros(shift(*r.start_ns))).key("dur").raw(micros(*r.duration_ns));
    w.field("pid", pid_).field("tid", *r.thread);
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
    w.key("ts").raw(micros(shift(r.start_ns))).key("dur").raw(micros(r.duration_ns));
    w.field("pid", pid_).field("tid", r.thread);
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
    w.key("ts").raw(micros(shift(*r.at_ns)));
    w.field("pid", pid_).field("tid", *r.thread);
    w.key("args").begin_object();
    w.field("from_static_id", r.from_static_id).field("to_static_id", r.to_static_id);
    w.field("duration_ns", r.duration_ns).field("step", *r.step).field("event_id", r.event_id);
    w.end_object().end_object();
    emit(w.str(), *r.thread);
  }

  std::uint64_t finish() {
    place_complete_events();
    JsonWriter p(0);
    p.begin_object().field("name", "process_name").field("ph", "M").field("pid", pid_);
    p.key("args").begin_object();
    p.field("name", "candle-graph " + name_ + plan_.label).end_object().end_object();
    emit(p.str(), std::nullopt);
    if (plan_.sort_index) {
      JsonWriter o(0);
      o.begin_object().field("name", "process_sort_index").field("ph", "M").field("pid", pid_);
      o.key("args").begin_object().field("sort_index", *plan_.sort_index).end_object();
      o.end_object();
      emit(o.str(), std::nullopt);
    }
    for (std::uint64_t t : threads_) {
      JsonWriter w(0);
      w.begin_object().field("name", "thread_name").field("ph", "M").field("pid", pid_);
      w.field("tid", t).key("args").begin_object();
      w.field("name", "thread " + std::to_string(t)).end_object().end_object();
      emit(w.str(), std::nullopt);
    }
    for (const auto& [t, lanes] : extra_lanes_) {
      for (std::uint64_t lane = 1; lane <= lanes; ++lane) {
        JsonWriter w(0);
        w.begin_object().field("name", "thread_name").field("ph", "M").field("pid", pid_);
        w.field("tid", lane_tid(t, lane)).key("args").begin_object();
        w.field("name", "thread " + std::to_string(t) + " (overlapping, lane " +
                            std::to_string(lane) + ")");
        w.end_object().end_object();
        emit(w.str(), std::nullopt);
      }
    }
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
  // A time of this trace on the export's timeline (shifted by its session start).
  std::uint64_t shift(std::uint64_t ns) const {
    if (ns > std::numeric_limits<std::uint64_t>::max() - plan_.offset_ns) {
      throw RecordError("a time of " + std::to_string(ns) +
                        " ns overflows once aligned by meta.start_unix_ns");
    }
    return ns + plan_.offset_ns;
  }

  void emit(const std::string& event, std::optional<std::uint64_t> thread) {
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

  void write_event(const std::string& event) { out_.write(event); }

  std::vector<Held> held_;
  std::map<std::uint64_t, std::uint64_t> extra_lanes_;  // thread → lanes past its own
  const std::filesystem::path& trace_;
  EventWriter& out_;
  bool is_v4_ = false;
  std::string name_, phase_;
  std::size_t max_threads_;
  TrackPlan plan_;
  std::uint64_t pid_ = 1;
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

namespace {

// The pre-pass that learns a trace's meta (its first record) and stops reading there.
struct MetaRead {};
class MetaOnly : public RecordSink {
 public:
  void meta(const RunMeta& m) override {
    meta_ = m;
    throw MetaRead{};
  }
  RunMeta meta_;
};

RunMeta read_meta(const std::filesystem::path& trace, const ReadOptions& options) {
  MetaOnly sink;
  try {
    (void)read_trace(trace, sink, options);
  } catch (const MetaRead&) {
    return sink.meta_;
  }
  throw InputError(trace.string(), "no meta record");  // read_trace throws first
}

std::vector<TrackPlan> plan_tracks(const std::vector<std::filesystem::path>& traces,
                                   const ReadOptions& options) {
  std::vector<TrackPlan> plans(traces.size());
  if (traces.size() == 1) return plans;  // one trace: its own pid, its own clock, unchanged name
  std::vector<RunMeta> metas;
  for (const auto& t : traces)
    metas.push_back(read_meta(t, options));
  // Real pids when every trace has one and no two share it; else positions 1, 2, 3… for all, so
  // that no two tracks merge.
  std::set<std::uint64_t> pids;
  bool real = true;
  for (const auto& m : metas)
    real = real && m.pid && pids.insert(*m.pid).second;
  // One timeline: each trace shifted by how much later than the earliest its session started,
  // when every trace says when (meta.start_unix_ns); else each starts at 0.
  bool aligned = true;
  std::uint64_t earliest = std::numeric_limits<std::uint64_t>::max();
  for (const auto& m : metas) {
    aligned = aligned && m.start_unix_ns;
    if (m.start_unix_ns) earliest = std::min(earliest, *m.start_unix_ns);
  }
  for (std::size_t i = 0; i < traces.size(); ++i) {
    TrackPlan& p = plans[i];
    p.pid = real ? *metas[i].pid : std::uint64_t{i + 1};
    p.offset_ns = aligned ? *metas[i].start_unix_ns - earliest : 0;
    p.label = ": " + traces[i].filename().string() + " (trace " + std::to_string(i + 1) +
              (metas[i].pid ? ", pid " + std::to_string(*metas[i].pid) : std::string()) + ")";
    p.sort_index = i;
  }
  return plans;
}

}  // namespace

ChromeExport export_chrome_traces(const std::vector<std::filesystem::path>& traces,
                                  const std::filesystem::path& output, const ReadOptions& options,
                                  std::size_t max_threads) {
  if (traces.empty()) throw std::invalid_argument("export_chrome_traces: no trace");
  const std::vector<TrackPlan> plans = plan_tracks(traces, options);
  OutputFile out(output);
  out.write("{\"traceEvents\":[\n");
  EventWriter events{out};
  ChromeExport result;
  for (std::size_t i = 0; i < traces.size(); ++i) {
    ChromeSink sink(traces[i], events, max_threads, plans[i]);
    ChromeTrack track;
    track.trace = read_trace(traces[i], sink, options);
    track.events = sink.finish();
    track.threads = sink.threads();
    track.pid = sink.pid();
    track.offset_ns = plans[i].offset_ns;
    result.events += track.events;
    result.threads += track.threads;
    result.tracks.push_back(std::move(track));
  }
  out.write("\n]}\n");
  out.commit();
  result.trace = result.tracks.front().trace;
  result.aligned =
      traces.size() == 1 ||
      std::all_of(result.tracks.begin(), result.tracks.end(),
                  [](const ChromeTrack& t) { return t.trace.meta.start_unix_ns.has_value(); });
  return result;
}

ChromeExport export_chrome_trace(const std::filesystem::path& trace,
                                 const std::filesystem::path& output, const ReadOptions& options,
                                 std::size_t max_threads) {
  return export_chrome_traces({trace}, output, options, max_threads);
}

}  // namespace cg::runtime
