// The writer thread: drains every thread's ring, formats JSONL from pre-rendered handle text and
// writes it in large blocks. It is the only code that touches the file after `meta`.
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "profile/json_text.hpp"
#include "profile/session_state.hpp"

namespace candle_graph::detail {

namespace {
constexpr std::size_t kWriteThreshold = 1 << 20;
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

void SessionState::write_out() {
  if (io_failed_) {
    out_.clear();
    return;
  }
  const char* p = out_.data();
  std::size_t left = out_.size();
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
  out_.clear();
}

void SessionState::format(const Record& r) {
  const HandleInfo& h = handles_[r.handle];
  std::string& out = out_;
  if (r.kind == RecordKind::edge) {
    out += edge_prefix_;
    append_u64(out, r.id_step);
    out.push_back('-');
    append_u64(out, r.counter);
    out.push_back('"');
    out += h.body;
    out += ",\"duration_ns\":";
    append_u64(out, r.end);
    out += ",\"step\":";
    append_u64(out, r.step);
    if (v4_) {
      out += ",\"at_ns\":";
      append_u64(out, timer.since_origin_ns(r.start));
      out += ",\"thread\":";
      append_u64(out, r.thread);
    }
    out += "}\n";
    ++edges_written_;
    return;
  }
  out += op_prefix_;
  append_u64(out, r.id_step);
  out.push_back('-');
  append_u64(out, r.counter);
  out.push_back('"');
  out += h.body;
  if (r.output) {
    out += ",\"output\":";
    append_json_string(out, *r.output);
    delete r.output;
  }
  out += ",\"step\":";
  append_u64(out, r.step);
  out += ",\"duration_ns\":";
  append_u64(out, r.kind == RecordKind::operation_ns ? r.end : timer.duration_ns(r.start, r.end));
  if (v4_) {
    out += ",\"start_ns\":";
    append_u64(out, timer.since_origin_ns(r.start));
    out += ",\"thread\":";
    append_u64(out, r.thread);
    if (r.parent_counter != 0) {
      out += ",\"parent\":\"";
      out += phase_name(config.phase);
      out += "-op-";
      append_u64(out, r.parent_step);
      out.push_back('-');
      append_u64(out, r.parent_counter);
      out.push_back('"');
    }
  }
  out += "}\n";
  ++operations_written_;
}

bool SessionState::drain(std::vector<ThreadState*>& threads) {
  bool any = false;
  for (ThreadState* ts : threads) {
    std::uint64_t tail = ts->tail.load(std::memory_order_relaxed);
    const std::uint64_t head = ts->head.load(std::memory_order_acquire);
    if (tail == head) continue;
    any = true;
    while (tail != head) {
      const std::uint64_t batch_end = head - tail > kTailBatch ? tail + kTailBatch : head;
      for (; tail != batch_end; ++tail)
        format(ts->ring[tail & ts->mask]);
      ts->tail.store(tail, std::memory_order_release);
      if (out_.size() >= kWriteThreshold) write_out();
    }
  }
  return any;
}

void SessionState::writer_main() {
  std::vector<ThreadState*> threads;
  auto last_calibration = std::chrono::steady_clock::now();
  for (;;) {
    std::uint64_t generation;
    bool stop;
    {
      std::lock_guard<std::mutex> lock(writer_mu_);
      generation = flush_requested_;
      stop = stop_;
    }
    auto now = std::chrono::steady_clock::now();
    if (now - last_calibration > std::chrono::milliseconds(100)) {
      timer.recalibrate();
      last_calibration = now;
    }
    refresh_threads(threads);
    const bool any = drain(threads);
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
    if (any) continue;
    // Idle: hand what we have to the OS, then sleep until woken (flush, finish, a full ring) or
    // 1 ms passes; rings hold far more than 1 ms of records at any realistic rate.
    if (!out_.empty()) write_out();
    std::unique_lock<std::mutex> lock(writer_mu_);
    writer_cv_.wait_for(lock, std::chrono::milliseconds(1),
                        [&] { return stop_ || flush_requested_ > flush_completed_; });
  }
  timer.recalibrate();
  {
    std::lock_guard<std::mutex> lock(writer_mu_);
    writer_exited_ = true;
  }
  writer_gone_.store(true, std::memory_order_release);
  flushed_cv_.notify_all();
}

void SessionState::write_end_record(std::uint64_t open_operations) {
  if (!v4_) return;
  std::uint64_t dropped = 0;
  std::size_t thread_count = 0;
  {
    std::lock_guard<std::mutex> lock(threads_mu_);
    for (auto& ts : threads_)
      dropped += ts->dropped.load(std::memory_order_relaxed);
    thread_count = threads_.size();
  }
  out_ += "{\"kind\":\"end\",\"operations\":";
  append_u64(out_, operations_written_);
  out_ += ",\"edge_timings\":";
  append_u64(out_, edges_written_);
  out_ += ",\"dropped\":";
  append_u64(out_, dropped);
  out_ += ",\"errors\":";
  append_u64(out_, errors_.load(std::memory_order_relaxed));
  out_ += ",\"open_operations\":";
  append_u64(out_, open_operations);
  out_ += ",\"threads\":";
  append_u64(out_, thread_count);
  out_ += ",\"duration_ns\":";
  append_u64(out_, timer.since_origin_ns(timer.now()));
  out_ += "}\n";
  write_out();
}

}  // namespace candle_graph::detail
