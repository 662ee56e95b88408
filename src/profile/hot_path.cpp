// The calling thread's side: find this thread's state, read the clock, push a POD record.
// Nothing here allocates (the scope stack is reserved; it grows only past 64 open operations),
// formats text or touches the file.
#include <algorithm>
#include <cstring>
#include <thread>

#include "profile/session_state.hpp"

namespace candle_graph::detail {

namespace {

// One-entry cache of "this thread's state in session N". Session ids are never reused, so an
// entry left by a destroyed session can never match a live one. initial-exec keeps the access a
// single %fs-relative load even though the library is built position-independent.
struct ThreadCache {
  std::uint64_t session_id;
  ThreadState* state;
};
thread_local ThreadCache tls_cache __attribute__((tls_model("initial-exec"))) = {0, nullptr};

// Identifies an OS thread for the life of the process (std::thread::id values are reused after a
// thread exits; a new thread must not inherit a dead thread's open scopes).
thread_local std::uint64_t tls_thread_token __attribute__((tls_model("initial-exec"))) = 0;
std::atomic<std::uint64_t> next_thread_token{1};

}  // namespace

std::atomic<std::uint64_t> next_session_id{1};

ThreadState::ThreadState(std::uint16_t thread_index, std::size_t capacity_records)
    : index(thread_index),
      capacity(capacity_records),
      mask(capacity_records - 1),
      ring(new Record[capacity_records]) {
  // Touch every page now: a fresh 5 MiB ring costs ~1,000 page faults, which would otherwise land
  // on the first lap of timed operations.
  std::memset(static_cast<void*>(ring.get()), 0, capacity * sizeof(Record));
  stack.reserve(64);
}

[[gnu::always_inline]] inline ThreadState& SessionState::thread_state_inline() noexcept {
  ThreadCache& cache = tls_cache;
  if (cache.session_id == id_) [[likely]]
    return *cache.state;
  return register_thread();
}

ThreadState& SessionState::thread_state() noexcept {
  return thread_state_inline();
}

[[gnu::always_inline]] inline Record* SessionState::claim_slot(ThreadState& ts) noexcept {
  if (ts.head_local - ts.tail_cache == ts.capacity) [[unlikely]] {
    if (!make_space(ts)) return nullptr;
  }
  return &ts.ring[ts.head_local & ts.mask];
}

namespace {
[[gnu::always_inline]] inline void publish(ThreadState& ts) noexcept {
  ts.head.store(++ts.head_local, std::memory_order_release);
}
}  // namespace

bool SessionState::make_space(ThreadState& ts) noexcept {
  ts.tail_cache = ts.tail.load(std::memory_order_acquire);
  return ts.head_local - ts.tail_cache < ts.capacity || wait_for_space(ts);
}

[[gnu::noinline]] ThreadState& SessionState::register_thread() {
  if (tls_thread_token == 0)
    tls_thread_token = next_thread_token.fetch_add(1, std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock(threads_mu_);
  ThreadState* state;
  if (auto it = by_token_.find(tls_thread_token); it != by_token_.end()) {
    state = it->second;
  } else {
    const auto index = static_cast<std::uint16_t>(std::min<std::size_t>(threads_.size(), 0xFFFF));
    threads_.push_back(std::make_unique<ThreadState>(index, ring_capacity_));
    state = threads_.back().get();
    by_token_.emplace(tls_thread_token, state);
    thread_count_.store(threads_.size(), std::memory_order_release);
  }
  tls_cache = {id_, state};
  return *state;
}

void SessionState::prune_foreign(ThreadState& ts) {
  std::lock_guard<std::mutex> lock(ts.foreign_mu);
  for (std::uint64_t counter : ts.foreign_ended) {
    for (auto it = ts.stack.rbegin(); it != ts.stack.rend(); ++it) {
      if (it->counter == counter) {
        ts.stack.erase(std::next(it).base());
        break;
      }
    }
  }
  ts.foreign_ended.clear();
  ts.foreign_pending.store(false, std::memory_order_relaxed);
}

void SessionState::begin(std::uint32_t handle) noexcept {
  ThreadState& ts = thread_state_inline();
  if (ts.foreign_pending.load(std::memory_order_relaxed)) [[unlikely]]
    prune_foreign(ts);
  Frame frame{take_counter(ts), step.load(std::memory_order_relaxed), 0, 0, 0, handle, false};
  if (!ts.stack.empty()) {
    frame.parent_counter = ts.stack.back().counter;
    frame.parent_step = ts.stack.back().id_step;
  }
  ts.stack.push_back(frame);
  // Last, so that the bookkeeping above is not charged to the operation.
  ts.stack.back().start = timer.now();
}

void SessionState::end(std::uint32_t handle) noexcept {
  const std::uint64_t now = timer.now();
  ThreadState& ts = thread_state_inline();
  if (ts.stack.empty() || ts.stack.back().handle != handle || ts.stack.back().by_id) [[unlikely]] {
    end_slow(ts, handle, now);
    return;
  }
  const Frame& f = ts.stack.back();
  if (Record* r = claim_slot(ts)) [[likely]] {
    *r = Record{f.counter,
                f.id_step,
                step.load(std::memory_order_relaxed),
                f.start,
                now,
                f.parent_counter,
                f.parent_step,
                handle,
                ts.index,
                RecordKind::operation,
                0};
    publish(ts);
  }
  ts.stack.pop_back();
}

void SessionState::end_slow(ThreadState& ts, std::uint32_t handle, std::uint64_t now) noexcept {
  if (ts.foreign_pending.load(std::memory_order_relaxed)) prune_foreign(ts);
  // Overlapping (non-nested) scopes are legal: close the innermost open one of this handle.
  for (auto it = ts.stack.rbegin(); it != ts.stack.rend(); ++it) {
    if (it->handle == handle && !it->by_id) {
      const Frame f = *it;
      ts.stack.erase(std::next(it).base());
      push(ts, Record{f.counter, f.id_step, step.load(std::memory_order_relaxed), f.start, now,
                      f.parent_counter, f.parent_step, handle, ts.index, RecordKind::operation, 0});
      return;
    }
  }
  fail(Errc::unbalanced,
       "end of operation `" + handles_[handle].static_id + "` on a thread where it is not open");
}

void SessionState::push(ThreadState& ts, const Record& record) noexcept {
  Record* slot = claim_slot(ts);
  if (slot == nullptr) {
    if (record.kind == RecordKind::operation_ns_with_output) {
      std::lock_guard<std::mutex> lock(outputs_mu_);
      outputs_.erase(record.counter);
    }
    return;
  }
  *slot = record;
  publish(ts);
}

bool SessionState::wait_for_space(ThreadState& ts) noexcept {
  if (config.backpressure == Backpressure::drop || writer_gone_.load(std::memory_order_acquire)) {
    // Only the owner writes `dropped`; the atomic is for the writer's final read.
    ts.dropped.store(ts.dropped.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    return false;
  }
  for (unsigned spins = 0;; ++spins) {
    writer_cv_.notify_one();
    if (spins < 64)
      std::this_thread::yield();
    else
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    ts.tail_cache = ts.tail.load(std::memory_order_acquire);
    if (ts.head_local - ts.tail_cache < ts.capacity) return true;
    if (writer_gone_.load(std::memory_order_acquire)) {
      ts.dropped.store(ts.dropped.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
      return false;
    }
  }
}

}  // namespace candle_graph::detail

namespace candle_graph {

// Defined here so that SessionState::begin/end inline into them: one call per begin or end.
void OpHandle::begin() const noexcept {
  if (state_) state_->begin(index_);
}

void OpHandle::end() const noexcept {
  if (state_) state_->end(index_);
}

}  // namespace candle_graph
