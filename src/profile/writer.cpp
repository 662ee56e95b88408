// The writer thread: drains every thread's ring, formats JSONL from pre-rendered handle text and
// writes it in large blocks. It is the only code that touches the file after `meta`.
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>

#include "profile/json_text.hpp"
#include "profile/session_state.hpp"

namespace candle_graph::detail {

namespace {
constexpr std::size_t kWriteThreshold = std::size_t{1} << 20;
// Records formatted before a ring's tail is published, so a blocked producer resumes early.
constexpr std::uint64_t kTailBatch = 4096;
}  // namespace

void SessionState::refresh_threads(std::vector<ThreadState*>& threads) {
  if (thread_count_.load(std::memory_order_acquire) == threads.size()) return;
  std::lock_guard<std::mutex> lock(threads_mu_);
  threads.clear();
  for (auto& ts : threads_)
    threads.push_back(ts.get());
}

namespace {

char* put(char* p, std::string_view text) {
  std::memcpy(p, text.data(), text.size());
  return p + text.size();
}

char* put_u64(char* p, std::uint64_t v) {
  return std::to_chars(p, p + 20, v).ptr;
}

// Bound on everything a record adds around its pre-rendered parts: field names and six numbers.
constexpr std::size_t kRecordOverhead = 256;

}  // namespace

char* SessionState::out_reserve(std::size_t bytes) {
  if (out_size_ + bytes > out_capacity_) {
    write_out();
    if (bytes > out_capacity_) {
      out_capacity_ = std::max(bytes, kWriteThreshold * 2);
      out_ = std::make_unique<char[]>(out_capacity_);
    }
  }
  return out_.get() + out_size_;
}

void SessionState::out_append(std::string_view text) {
  char* p = out_reserve(text.size());
  std::memcpy(p, text.data(), text.size());
  out_size_ += text.size();
}

void SessionState::write_out() {
  if (io_failed_) {
    out_size_ = 0;
    return;
  }
  const char* p = out_.get();
  std::size_t left = out_size_;
  while (left > 0) {
    ssize_t n = ::write(fd_, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      io_failed_ = true;
      fail(Errc::io_error, "write profile trace " + path.string() + ": " +
                               (n < 0 ? std::strerror(errno) : "no progress"));
      break;
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  out_size_ = 0;
}

std::optional<std::string> SessionState::take_output(const Record& r) {
  if (r.kind != RecordKind::operation_ns_with_output) return std::nullopt;
  std::lock_guard<std::mutex> lock(outputs_mu_);
  auto it = outputs_.find(r.counter);
  if (it == outputs_.end()) return std::nullopt;
  std::string output = std::move(it->second);
  outputs_.erase(it);
  return output;
}

// One record of `candle-graph/runtime/4-compact/1` (docs/runtime-4.md, "Compact encoding"). Every
// record kind goes through here, so a new kind (module scopes) adds one case and, if it names
// strings, one `def` variant.
void SessionState::format_compact(const Record& r, const std::optional<std::string>& output_text) {
  const HandleInfo& h = handles_[r.handle];
  if (r.handle >= defined_.size()) defined_.resize(std::max<std::size_t>(r.handle + 1, 1024));
  if (!defined_[r.handle]) {
    defined_[r.handle] = true;
    char* const begin = out_reserve(h.body.size() + 64);
    char* p = put(begin, "{\"kind\":\"def\",\"h\":");
    p = put_u64(p, r.handle);
    p = put(p, h.body);
    p = put(p, "}\n");
    out_size_ += static_cast<std::size_t>(p - begin);
  }
  if (r.thread >= compact_threads_.size()) compact_threads_.resize(r.thread + std::size_t{1});
  CompactThread& t = compact_threads_[r.thread];
  std::string output;
  if (output_text) {
    output = ",\"o\":";
    append_json_string(output, *output_text);
  }
  char* const begin = out_reserve(output.size() + kRecordOverhead);
  const bool edge = r.kind == RecordKind::edge;
  const bool module = r.kind == RecordKind::module;
  char* p = put(begin, edge     ? "{\"kind\":\"e\",\"h\":"
                       : module ? "{\"kind\":\"m\",\"h\":"
                                : "{\"kind\":\"o\",\"h\":");
  p = put_u64(p, r.handle);
  if (r.thread != compact_last_thread_) {
    p = put(p, ",\"th\":");
    p = put_u64(p, r.thread);
    compact_last_thread_ = r.thread;
  }
  if (r.counter != t.counter + 1) {
    p = put(p, ",\"c\":");
    p = put_u64(p, r.counter);
  }
  t.counter = r.counter;
  if (r.id_step != t.id_step) {
    p = put(p, ",\"s\":");
    p = step_text_.put(p, r.id_step);
    t.id_step = r.id_step;
  }
  if (r.step != r.id_step) {
    p = put(p, ",\"e\":");
    p = put_u64(p, r.step);
  }
  p = put(p, ",\"d\":");
  p = put_u64(
      p, r.kind == RecordKind::operation || module ? timer.duration_ns(r.start, r.end) : r.end);
  p = put(p, ",\"t\":");
  p = put_u64(p, timer.since_origin_ns(r.start));
  if (!edge && r.parent_counter != 0) {
    p = put(p, ",\"p\":");
    p = put_u64(p, r.counter - r.parent_counter);
    if (r.parent_step != r.id_step) {
      p = put(p, ",\"ps\":");
      p = put_u64(p, r.parent_step);
    }
  }
  p = put(p, output);
  p = put(p, "}\n");
  out_size_ += static_cast<std::size_t>(p - begin);
  ++(edge ? edges_written_ : module ? modules_written_ : operations_written_);
}

// runtime/4 `module` line (docs/runtime-4.md, "Additions: module scopes").
void SessionState::format_module(const Record& r) {
  const HandleInfo& h = handles_[r.handle];
  char* const begin = out_reserve(mod_prefix_.size() * 2 + h.body.size() + kRecordOverhead);
  char* p = put(begin, mod_prefix_);
  p = step_text_.put(p, r.id_step);
  *p++ = '-';
  p = put_u64(p, r.counter);
  *p++ = '"';
  p = put(p, h.body);
  p = put(p, ",\"step\":");
  p = step_text_.put(p, r.step);
  p = put(p, ",\"duration_ns\":");
  p = put_u64(p, timer.duration_ns(r.start, r.end));
  p = put(p, ",\"start_ns\":");
  p = put_u64(p, timer.since_origin_ns(r.start));
  p = put(p, ",\"thread\":");
  p = put_u64(p, r.thread);
  if (r.parent_counter != 0) {
    p = put(p, ",\"parent\":\"");
    p = put(p, phase_name(config.phase));
    p = put(p, "-mod-");
    p = step_text_.put(p, r.parent_step);
    *p++ = '-';
    p = put_u64(p, r.parent_counter);
    *p++ = '"';
  }
  p = put(p, "}\n");
  out_size_ += static_cast<std::size_t>(p - begin);
  ++modules_written_;
}

// The fields of a `stats` line from `of` on (runtime/4 and compact alike; `position`: with `step`,
// `at_ns` and `thread`); takes the numbers the recording thread left in stats_.
std::string SessionState::stats_fields(const Record& r, bool position) {
  TensorStats st;
  {
    std::lock_guard<std::mutex> lock(stats_mu_);
    auto it = stats_.find(r.counter);
    if (it != stats_.end()) {
      st = std::move(it->second);
      stats_.erase(it);
    }
  }
  auto number = [](std::string& out, double v) {
    char buf[32];
    auto res = std::to_chars(buf, buf + sizeof buf, v);  // shortest text that reads back exactly
    out.append(buf, res.ptr);
  };
  std::string out = st.of == StatsOf::grad ? ",\"of\":\"grad\"" : ",\"of\":\"output\"";
  if (st.index != 0) {
    out += ",\"index\":";
    append_u64(out, st.index);
  }
  out += st.reason == StatsReason::non_finite ? ",\"reason\":\"non_finite\""
                                              : ",\"reason\":\"sampled\"";
  if (position) {
    out += ",\"step\":";
    append_u64(out, r.step);
    out += ",\"at_ns\":";
    append_u64(out, timer.since_origin_ns(r.start));
    out += ",\"thread\":";
    append_u64(out, r.thread);
  }
  out += ",\"dtype\":";
  append_json_string(out, st.dtype);
  out += ",\"shape\":[";
  std::uint64_t elements = 1;
  for (std::size_t i = 0; i < st.shape.size(); ++i) {
    if (i != 0) out += ',';
    append_u64(out, st.shape[i]);
    elements *= st.shape[i];
  }
  out += "],\"elements\":";
  append_u64(out, elements);
  out += ",\"nan\":";
  append_u64(out, st.nan);
  out += ",\"pos_inf\":";
  append_u64(out, st.pos_inf);
  out += ",\"neg_inf\":";
  append_u64(out, st.neg_inf);
  out += ",\"zeros\":";
  append_u64(out, st.zeros);
  if (st.finite) {
    out += ",\"min\":";
    number(out, st.finite->min);
    out += ",\"max\":";
    number(out, st.finite->max);
    out += ",\"mean\":";
    number(out, st.finite->mean);
    out += ",\"rms\":";
    number(out, st.finite->rms);
    out += ",\"abs_max\":";
    number(out, st.finite->abs_max);
  }
  return out;
}

// runtime/4 `stats`; compact `st` (every field explicit: a stats line implies nothing about its
// thread's neighbours and changes nothing they imply).
void SessionState::format_stats(const Record& r) {
  const HandleInfo& h = handles_[r.handle];
  std::string line;
  if (compact_) {
    line = "{\"kind\":\"st\",\"h\":";
    append_u64(line, r.handle);
    line += ",\"th\":";
    append_u64(line, r.thread);
    line += ",\"c\":";
    append_u64(line, r.counter);
    line += ",\"s\":";
    append_u64(line, r.id_step);
    line += ",\"t\":";
    append_u64(line, timer.since_origin_ns(r.start));
    line += stats_fields(r, false);  // `step`, `at_ns`, `thread` are `s`, `t`, `th` here
  } else {
    line = "{\"kind\":\"stats\",\"event_id\":\"";
    line += phase_name(config.phase);
    line += "-stats-";
    append_u64(line, r.id_step);
    line += '-';
    append_u64(line, r.counter);
    line += '"';
    line += h.body;
    line += stats_fields(r, true);
  }
  line += "}\n";
  out_append(line);
  ++stats_written_;
}

void SessionState::format(const Record& r) {
  if (r.kind == RecordKind::stats) {
    if (compact_ && (r.handle >= defined_.size() || !defined_[r.handle])) {
      if (r.handle >= defined_.size()) defined_.resize(std::max<std::size_t>(r.handle + 1, 1024));
      defined_[r.handle] = true;
      std::string def = "{\"kind\":\"def\",\"h\":";
      append_u64(def, r.handle);
      def += handles_[r.handle].body;
      def += "}\n";
      out_append(def);
    }
    format_stats(r);
    return;
  }
  if (compact_) {
    format_compact(r, take_output(r));
    return;
  }
  if (r.kind == RecordKind::module) {
    format_module(r);
    return;
  }
  const HandleInfo& h = handles_[r.handle];
  if (r.kind == RecordKind::edge) {
    char* const begin = out_reserve(edge_prefix_.size() + h.body.size() + kRecordOverhead);
    char* p = put(begin, edge_prefix_);
    p = put_u64(p, r.id_step);
    *p++ = '-';
    p = put_u64(p, r.counter);
    *p++ = '"';
    p = put(p, h.body);
    p = put(p, ",\"duration_ns\":");
    p = put_u64(p, r.end);
    p = put(p, ",\"step\":");
    p = put_u64(p, r.step);
    if (v4_) {
      p = put(p, ",\"at_ns\":");
      p = put_u64(p, timer.since_origin_ns(r.start));
      p = put(p, ",\"thread\":");
      p = put_u64(p, r.thread);
    }
    p = put(p, "}\n");
    out_size_ += static_cast<std::size_t>(p - begin);
    ++edges_written_;
    return;
  }
  std::string output;
  if (r.kind == RecordKind::operation_ns_with_output) {
    if (std::optional<std::string> text = take_output(r)) {
      output = ",\"output\":";
      append_json_string(output, *text);
    }
  }
  char* const begin =
      out_reserve(op_prefix_.size() * 2 + h.body.size() + output.size() + kRecordOverhead);
  char* p = put(begin, op_prefix_);
  p = step_text_.put(p, r.id_step);
  *p++ = '-';
  p = put_u64(p, r.counter);
  *p++ = '"';
  p = put(p, h.body);
  p = put(p, output);
  p = put(p, ",\"step\":");
  p = step_text_.put(p, r.step);
  p = put(p, ",\"duration_ns\":");
  p = put_u64(p, r.kind == RecordKind::operation ? timer.duration_ns(r.start, r.end) : r.end);
  if (v4_) {
    p = put(p, ",\"start_ns\":");
    p = put_u64(p, timer.since_origin_ns(r.start));
    p = put(p, ",\"thread\":");
    p = r.thread < 10 ? (*p = static_cast<char>('0' + r.thread), p + 1) : put_u64(p, r.thread);
    if (r.parent_counter != 0) {
      p = put(p, ",\"parent\":\"");
      p = put(p, phase_name(config.phase));
      p = put(p, "-op-");
      p = step_text_.put(p, r.parent_step);
      *p++ = '-';
      p = put_u64(p, r.parent_counter);
      *p++ = '"';
    }
  }
  p = put(p, "}\n");
  out_size_ += static_cast<std::size_t>(p - begin);
  ++operations_written_;
}

std::uint64_t SessionState::drain(std::vector<ThreadState*>& threads) {
  std::uint64_t drained = 0;
  for (ThreadState* ts : threads) {
    std::uint64_t tail = ts->tail.load(std::memory_order_relaxed);
    const std::uint64_t head = ts->head.load(std::memory_order_acquire);
    if (tail == head) continue;
    drained += head - tail;
    while (tail != head) {
      const std::uint64_t batch_end = head - tail > kTailBatch ? tail + kTailBatch : head;
      for (; tail != batch_end; ++tail)
        format(ts->ring[tail & ts->mask]);
      ts->tail.store(tail, std::memory_order_release);
      if (out_size_ >= kWriteThreshold) write_out();
    }
  }
  return drained;
}

void SessionState::recycle_retired(const std::vector<ThreadState*>& threads) {
  if (retired_waiting_.load(std::memory_order_acquire) == 0) return;
  std::lock_guard<std::mutex> lock(threads_mu_);
  for (ThreadState* ts : threads) {
    // Retired and fully written: a thread that starts later adopts it instead of a new ring.
    if (!ts->retired.load(std::memory_order_acquire) ||
        ts->tail.load(std::memory_order_relaxed) != ts->head.load(std::memory_order_acquire) ||
        std::find(pool_.begin(), pool_.end(), ts) != pool_.end())
      continue;
    pool_.push_back(ts);
    retired_waiting_.fetch_sub(1, std::memory_order_relaxed);
  }
}

void SessionState::writer_main() {
  std::vector<ThreadState*> threads;
  for (;;) {
    std::uint64_t generation;
    bool stop;
    {
      std::lock_guard<std::mutex> lock(writer_mu_);
      generation = flush_requested_;
      stop = stop_;
      wake_ = false;
    }
    // The TSC rate is not refined while records stream: records are converted as threads hand
    // them over, so a rate changed between an inner and its enclosing operation's conversion
    // would break their nesting. One linear map per session (the opening calibration) keeps every
    // converted instant monotone.
    refresh_threads(threads);
    const std::uint64_t drained = drain(threads);
    recycle_retired(threads);
    if (stop) {
      write_out();
      break;
    }
    if (generation > flush_completed_) {
      write_out();
      {
        std::lock_guard<std::mutex> lock(writer_mu_);
        flush_completed_ = generation;
      }
      flushed_cv_.notify_all();
      continue;
    }
    if (drained >= kTailBatch) continue;
    if (out_size_ != 0) write_out();
    auto wake = [&] { return stop_ || wake_ || flush_requested_ > flush_completed_; };
    if (drained != 0) {
      // Producers are active: come back in a moment for the next batch without asking them to
      // wake us (draining in batches keeps the writer off the cache lines they write; a ring
      // holds far more than 1 ms of records at any realistic rate, and a full one wakes us).
      std::unique_lock<std::mutex> lock(writer_mu_);
      writer_cv_.wait_for(lock, std::chrono::milliseconds(1), wake);
      continue;
    }
    // Idle: sleep until there is work. The first record published into an emptied ring, a
    // flush, finish, a full ring or an exited thread wakes us. Announce the sleep, then look
    // once more (a producer publishes, fences, then reads the flag; we store, fence, then read
    // its head: one of the two sees the other).
    writer_sleeping_.store(true, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    bool pending = false;
    for (ThreadState* ts : threads)
      pending = pending || ts->head.load(std::memory_order_relaxed) !=
                               ts->tail.load(std::memory_order_relaxed);
    if (!pending && thread_count_.load(std::memory_order_acquire) == threads.size()) {
      std::unique_lock<std::mutex> lock(writer_mu_);
      writer_cv_.wait(lock, wake);
    }
    writer_sleeping_.store(false, std::memory_order_relaxed);
  }
  {
    std::lock_guard<std::mutex> lock(writer_mu_);
    writer_exited_ = true;
  }
  writer_gone_.store(true, std::memory_order_release);
  flushed_cv_.notify_all();
}

void SessionState::write_end_record(std::uint64_t open_operations, std::uint64_t open_modules) {
  if (!v4_) return;
  std::uint64_t dropped = 0;
  std::size_t thread_count = 0;
  {
    std::lock_guard<std::mutex> lock(threads_mu_);
    for (auto& ts : threads_)
      dropped += ts->dropped.load(std::memory_order_relaxed);
    thread_count = next_thread_index_;  // OS threads, not rings (exited threads' are reused)
  }
  std::string line = "{\"kind\":\"end\",\"operations\":";
  append_u64(line, operations_written_);
  line += ",\"edge_timings\":";
  append_u64(line, edges_written_);
  line += ",\"dropped\":";
  append_u64(line, dropped);
  line += ",\"errors\":";
  append_u64(line, errors_.load(std::memory_order_relaxed));
  line += ",\"open_operations\":";
  append_u64(line, open_operations);
  line += ",\"threads\":";
  append_u64(line, thread_count);
  line += ",\"duration_ns\":";
  append_u64(line, timer.since_origin_ns(timer.now()));
  if (modules_used_.load(std::memory_order_relaxed)) {
    line += ",\"modules\":";
    append_u64(line, modules_written_);
    line += ",\"open_modules\":";
    append_u64(line, open_modules);
  }
  // TSC sessions: the second calibration (docs/runtime-4.md, Clock).
  if (timer.uses_tsc()) {
    line += ",\"clock_error_ns\":";
    append_u64(line, timer.error_at_finish_ns());
  }
  if (stats_written_ != 0) {
    line += ",\"stats\":";
    append_u64(line, stats_written_);
  }
  line += "}\n";
  out_append(line);
  write_out();
}

}  // namespace candle_graph::detail
