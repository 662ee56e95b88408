// The calling thread's side: find this thread's state, read the clock, push a POD record.
// Nothing here allocates (the scope stack is reserved; it grows only past 64 open operations),
// formats text or touches the file.
#if defined(__linux__)
#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <algorithm>
#include <cstring>
#include <new>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

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

// Live sessions by id, so that a thread's exit hook can hand its states back to sessions that
// still exist. Leaked on purpose: thread exit hooks may run during static destruction.
std::mutex& registry_mu() {
  static auto* mu = new std::mutex;
  return *mu;
}
std::unordered_map<std::uint64_t, SessionState*>& registry() {
  static auto* map = new std::unordered_map<std::uint64_t, SessionState*>;
  return *map;
}

// Every (session, state) this OS thread registered in; on thread exit each live session gets its
// state back (`retire`), so a program that starts many short-lived threads reuses a few rings
// instead of keeping one per thread it ever ran.
struct ThreadSessions {
  std::vector<std::pair<std::uint64_t, ThreadState*>> list;
  ThreadSessions() = default;
  ThreadSessions(const ThreadSessions&) = delete;
  ThreadSessions& operator=(const ThreadSessions&) = delete;
  ~ThreadSessions() {
    if (list.empty()) return;
    std::lock_guard<std::mutex> lock(registry_mu());
    for (auto& [id, state] : list) {
      if (auto it = registry().find(id); it != registry().end()) it->second->retire(*state);
    }
  }
  // Forgets sessions that no longer exist (keeps the list short on threads that outlive many).
  void prune() {
    std::lock_guard<std::mutex> lock(registry_mu());
    std::erase_if(list, [](const auto& entry) { return !registry().contains(entry.first); });
  }
};
thread_local ThreadSessions tls_sessions;

}  // namespace

std::atomic<std::uint64_t> next_session_id{1};

bool asymmetric_fence_available() noexcept {
#if defined(__linux__) && defined(SYS_membarrier)
  // Registered once per process; the registration lasts as long as the process.
  static const bool available = [] {
    const long supported = ::syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
    return supported > 0 && (supported & MEMBARRIER_CMD_PRIVATE_EXPEDITED) != 0 &&
           ::syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
  }();
  return available;
#else
  return false;
#endif
}

void heavy_fence(bool asymmetric) noexcept {
#if defined(__linux__) && defined(SYS_membarrier)
  if (asymmetric) {
    // Cannot fail once registered; should it ever, a plain fence here would not be enough (the
    // owners only have a compiler barrier), so it is retried.
    while (::syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) != 0) {
    }
    return;
  }
#else
  (void)asymmetric;
#endif
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

void register_session(std::uint64_t id, SessionState* state) {
  std::lock_guard<std::mutex> lock(registry_mu());
  registry()[id] = state;
}

void unregister_session(std::uint64_t id) noexcept {
  std::lock_guard<std::mutex> lock(registry_mu());
  registry().erase(id);
}

ThreadState::ThreadState(std::uint16_t thread_index, std::unique_ptr<Record[]> ring_records,
                         std::size_t capacity_records)
    : index(thread_index),
      capacity(capacity_records),
      mask(capacity_records - 1),
      ring(std::move(ring_records)),
      id_slots(new IdSlot[kIdSlots]) {
  // Touch every page now: a fresh 4 MiB ring costs ~1,000 page faults, which would otherwise land
  // on the first lap of timed operations.
  std::memset(static_cast<void*>(ring.get()), 0, capacity * sizeof(Record));
  stack.reserve(64);
}

[[gnu::always_inline]] inline ThreadState* SessionState::thread_state_inline() noexcept {
  ThreadCache& cache = tls_cache;
  if (cache.session_id == id_) [[likely]]
    return cache.state;
  return register_thread();
}

ThreadState* SessionState::thread_state() noexcept {
  return thread_state_inline();
}

[[gnu::always_inline]] inline Record* SessionState::claim_slot(ThreadState& ts) noexcept {
  if (ts.head_local - ts.tail_cache == ts.capacity) [[unlikely]] {
    if (!make_space(ts)) return nullptr;
  }
  return &ts.ring[ts.head_local & ts.mask];
}

[[gnu::always_inline]] inline void SessionState::publish(ThreadState& ts) noexcept {
  const std::uint64_t before = ts.head_local++;
  ts.head.store(ts.head_local, std::memory_order_release);
  // The writer had emptied this ring: it may be asleep with nothing to do. Once per drain.
  if (ts.tail.load(std::memory_order_relaxed) == before) [[unlikely]]
    note_first_record();
}

void SessionState::note_first_record() noexcept {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (writer_sleeping_.load(std::memory_order_relaxed)) wake_writer();
}

void SessionState::wake_writer() noexcept {
  {
    std::lock_guard<std::mutex> lock(writer_mu_);
    wake_ = true;
  }
  writer_cv_.notify_one();
}

bool SessionState::make_space(ThreadState& ts) noexcept {
  ts.tail_cache = ts.tail.load(std::memory_order_acquire);
  return ts.head_local - ts.tail_cache < ts.capacity || wait_for_space(ts);
}

namespace {
// A thread whose ring could not be allocated: every event it records is dropped and counted.
ThreadState* no_memory_state() {
  return nullptr;
}
}  // namespace

[[gnu::noinline]] ThreadState* SessionState::register_thread() noexcept {
  try {
    for (auto& [id, state] : tls_sessions.list) {
      if (id == id_) {
        tls_cache = {id_, state};
        return state;
      }
    }
    if (tls_sessions.list.size() >= 16) tls_sessions.prune();
    ThreadState* state = nullptr;
    {
      std::lock_guard<std::mutex> lock(threads_mu_);
      if (!pool_.empty()) {
        state = pool_.back();
        pool_.pop_back();
        state->index =
            static_cast<std::uint16_t>(std::min<std::size_t>(next_thread_index_, 0xFFFF));
        ++next_thread_index_;
        state->retired.store(false, std::memory_order_relaxed);
      }
    }
    if (state == nullptr) {
      // Allocated and touched outside the lock: the writer takes it to find new threads.
      std::unique_ptr<Record[]> ring(new (std::nothrow) Record[ring_capacity_]);
      if (!ring) {
        fail(Errc::io_error, "out of memory for a profiling buffer of " +
                                 std::to_string(ring_capacity_) + " records");
        return no_memory_state();
      }
      auto owned = std::make_unique<ThreadState>(0, std::move(ring), ring_capacity_);
      std::lock_guard<std::mutex> lock(threads_mu_);
      threads_.reserve(threads_.size() + 1);
      owned->index = static_cast<std::uint16_t>(std::min<std::size_t>(next_thread_index_, 0xFFFF));
      ++next_thread_index_;
      state = owned.get();
      threads_.push_back(std::move(owned));
      thread_count_.store(threads_.size(), std::memory_order_release);
    }
    tls_sessions.list.emplace_back(id_, state);
    tls_cache = {id_, state};
    return state;
  } catch (...) {
    // bad_alloc (or a failed lock): never thrown into the host program.
    count_error();
    return no_memory_state();
  }
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

namespace {
// The scope stack grows past its reserved 64 frames only for deep nesting; an allocation failure
// there drops the operation instead of escaping into the host program.
[[gnu::noinline]] bool grow_stack(std::vector<Frame>& stack) noexcept {
  try {
    stack.reserve(stack.size() * 2);
    return true;
  } catch (...) {
    return false;
  }
}
[[gnu::always_inline]] inline bool push_frame(std::vector<Frame>& stack,
                                              const Frame& frame) noexcept {
  if (stack.size() == stack.capacity()) [[unlikely]] {
    if (!grow_stack(stack)) return false;
  }
  stack.push_back(frame);
  return true;
}
}  // namespace

void SessionState::begin(std::uint32_t handle) noexcept {
  ThreadState* tsp = thread_state_inline();
  if (tsp == nullptr) [[unlikely]]
    return;
  ThreadState& ts = *tsp;
  if (ts.foreign_pending.load(std::memory_order_relaxed)) [[unlikely]]
    prune_foreign(ts);
  Frame frame{take_counter(ts), step.load(std::memory_order_relaxed), 0, 0, 0, handle, false};
  if (!ts.stack.empty()) {
    frame.parent_counter = ts.stack.back().counter;
    frame.parent_step = ts.stack.back().id_step;
  }
  if (!push_frame(ts.stack, frame)) [[unlikely]] {
    count_error();
    return;
  }
  // Last, so that the bookkeeping above is not charged to the operation.
  ts.stack.back().start = timer.now();
}

void SessionState::end(std::uint32_t handle) noexcept {
  const std::uint64_t now = timer.now();
  ThreadState* tsp = thread_state_inline();
  if (tsp == nullptr) [[unlikely]]
    return;
  ThreadState& ts = *tsp;
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
  try {
    fail(Errc::unbalanced,
         "end of operation `" + handles_[handle].static_id + "` on a thread where it is not open");
  } catch (...) {
    count_error();
  }
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

// The seed's string API. A begin finds its handle in the thread's cache by the static id's
// address and length, confirms it by comparing the text (a reused buffer is never taken for
// another id), takes a counter, copies the thread's last id text with its counter's digits bumped
// in place, and leaves the open operation in a slot of its thread that any thread can claim by
// counter. The usual end is on the same thread with the id the begin returned: one comparison of
// the text, one compare-and-swap to take the slot, one record.
namespace {
// Equal texts, compared inline in 8-byte words (short ids: two overlapping words or a few bytes);
// a call to memcmp per id part cost more than the comparison itself.
[[gnu::always_inline]] inline bool same_text(std::string_view interned,
                                             std::string_view text) noexcept {
  const std::size_t n = text.size();
  if (interned.size() != n) return false;
  const char* a = interned.data();
  const char* b = text.data();
  if (n > 128) return std::memcmp(a, b, n) == 0;
#if defined(__SSE2__)
  if (n >= 16) {
    // 16-byte words (SSE2 is part of x86-64), the last one overlapping: a ~100-byte static id is
    // seven compares instead of thirteen 8-byte ones. The last word first, as below.
    const auto load = [](const char* p) {
      return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    };
    __m128i same = _mm_cmpeq_epi8(load(a + n - 16), load(b + n - 16));
    if (_mm_movemask_epi8(same) != 0xFFFF) return false;
    for (std::size_t i = 0; i + 16 < n; i += 16)
      same = _mm_and_si128(same, _mm_cmpeq_epi8(load(a + i), load(b + i)));
    return _mm_movemask_epi8(same) == 0xFFFF;
  }
#endif
  if (n >= 8) {
    // Static ids run to ~100 bytes: 8-byte words, the last one overlapping the one before. Ids
    // of one model differ mostly at their end (`…:41` vs `…:42`, the same length), and a
    // recycled buffer holds another id at the same address: the last word is compared first.
    std::uint64_t last_a, last_b;
    std::memcpy(&last_a, a + n - 8, 8);
    std::memcpy(&last_b, b + n - 8, 8);
    if (last_a != last_b) return false;
    std::uint64_t diff = 0;
    for (std::size_t i = 0; i + 8 < n; i += 8) {
      std::uint64_t x, y;
      std::memcpy(&x, a + i, 8);
      std::memcpy(&y, b + i, 8);
      diff |= x ^ y;
    }
    return diff == 0;
  }
  if (n >= 4) {
    std::uint32_t a0, a1, b0, b1;
    std::memcpy(&a0, a, 4);
    std::memcpy(&b0, b, 4);
    std::memcpy(&a1, a + n - 4, 4);
    std::memcpy(&b1, b + n - 4, 4);
    return ((a0 ^ b0) | (a1 ^ b1)) == 0;
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (a[i] != b[i]) return false;
  }
  return true;
}
// A string-API frame, one field at a time.
[[gnu::always_inline]] inline void store_frame(Frame& f, std::uint64_t counter,
                                               std::uint64_t id_step, std::uint64_t start,
                                               std::uint64_t parent_counter,
                                               std::uint64_t parent_step,
                                               std::uint32_t handle) noexcept {
  f.counter = counter;
  f.id_step = id_step;
  f.start = start;
  f.parent_counter = parent_counter;
  f.parent_step = parent_step;
  f.handle = handle;
  f.by_id = true;
}
}  // namespace

namespace {
// An input's text, whichever form the caller holds it in.
[[gnu::always_inline]] inline std::string_view text_of(const std::string& s) noexcept {
  return s;
}
[[gnu::always_inline]] inline std::string_view text_of(std::string_view s) noexcept {
  return s;
}
[[gnu::always_inline]] inline std::string_view text_of(const cgp_str& s) noexcept {
  return s.ptr == nullptr ? std::string_view() : std::string_view(s.ptr, s.len);
}

// The same against HandleInfo::packed (pack_op_text).
template <typename Input>
[[gnu::always_inline]] inline bool same_packed(const char* packed, std::string_view static_id,
                                               std::string_view op, const Input* inputs,
                                               std::size_t input_count) noexcept {
  std::uint32_t static_length, op_length, packed_inputs;
  std::memcpy(&static_length, packed, 4);
  std::memcpy(&op_length, packed + 4, 4);
  std::memcpy(&packed_inputs, packed + 8, 4);
  if (static_length != static_id.size() || op_length != op.size() || packed_inputs != input_count)
    return false;
  const char* lengths = packed + 12;
  const char* text = lengths + 4 * std::size_t{packed_inputs};
  if (!same_text({text, static_id.size()}, static_id)) return false;
  text += static_id.size();
  if (!same_text({text, op_length}, op)) return false;
  text += op_length;
  for (std::size_t i = 0; i < input_count; ++i) {
    std::uint32_t n;
    std::memcpy(&n, lengths + 4 * i, 4);
    if (!same_text({text, n}, text_of(inputs[i]))) return false;
    text += n;
  }
  return true;
}
}  // namespace

template <typename Input>
[[gnu::always_inline]] inline std::uint32_t SessionState::cached_op(
    ThreadState& ts, std::string_view static_id, std::string_view op, const Input* inputs,
    std::size_t input_count) noexcept {
  const std::size_t slot = ThreadState::op_cache_slot(static_id.data(), static_id.size());
  for (std::size_t way = 0; way < 2; ++way) {
    const InternCacheEntry& e = ts.intern_cache[slot ^ way];
    if (e.static_id == static_id.data() && e.length == static_id.size() &&
        same_packed(e.packed, static_id, op, inputs, input_count))
      return e.handle;
  }
  return kNoHandle;
}

template <typename Input>
[[gnu::always_inline]] inline std::uint32_t SessionState::cached_op_by_content(
    ThreadState& ts, std::string_view static_id, std::string_view op, const Input* inputs,
    std::size_t input_count) noexcept {
  const std::uint64_t hash = op_text_hash(static_id, op);
  const std::size_t set = hash & (ThreadState::kContentCache - 1);
  const ContentCacheEntry* found = nullptr;
  for (std::size_t way = 0; way < 2 && found == nullptr; ++way) {
    const ContentCacheEntry& c = ts.content_cache[set ^ way];
    if (c.used && c.hash == hash && same_packed(c.packed, static_id, op, inputs, input_count))
      found = &c;
  }
  if (found == nullptr) return kNoHandle;
  const ContentCacheEntry& c = *found;
  // Remembered by address in the slot's first way (the older entry moves to the second), so a
  // caller that reuses one buffer per id finds it there next time.
  const std::size_t slot = ThreadState::op_cache_slot(static_id.data(), static_id.size());
  InternCacheEntry& first = ts.intern_cache[slot];
  if (first.static_id != nullptr) ts.intern_cache[slot ^ 1] = first;
  first = {static_id.data(), static_id.size(), c.handle, c.packed};
  return c.handle;
}

Result<std::size_t> SessionState::begin_by_id(std::string_view static_id, std::string_view op,
                                              std::span<const std::string_view> inputs, char* id,
                                              std::uint64_t* numbers) {
  ThreadState* tsp = thread_state_inline();
  if (tsp == nullptr || finished.load(std::memory_order_acquire)) [[unlikely]]
    return refused(tsp);
  ThreadState& ts = *tsp;
  std::uint32_t handle = cached_op(ts, static_id, op, inputs.data(), inputs.size());
  if (handle == kNoHandle)
    handle = cached_op_by_content(ts, static_id, op, inputs.data(), inputs.size());
  if (handle == kNoHandle) [[unlikely]] {
    auto looked_up = lookup_op(ts, static_id, op, inputs);
    if (!looked_up) {
      // Refused (past the bound of distinct ids): counted in `end.errors`, like every error.
      count_error();
      return looked_up.status();
    }
    handle = looked_up.value();
  }
  return open_by_id(ts, handle, id, numbers);
}

namespace {
// The event id, as the seed formats it (`{phase}-op-{step}-{counter}`); the writer rebuilds it
// from the numbers. The thread keeps its last id as text: `{phase}-op-{step}-` is rebuilt only
// when the step changes and the counter's digits are incremented in place. The caller's copy is
// taken before the bump and bumped itself, so no load reads a byte stored a moment ago (a
// stalled store forward). Returns the id's length.
[[gnu::always_inline]] inline std::size_t write_event_id(ThreadState& ts, Phase phase,
                                                         std::uint64_t id_step,
                                                         std::uint64_t counter, char* id) noexcept {
  constexpr std::size_t kMax = SessionState::kEventIdMax;
  static_assert(sizeof ts.last_id == kMax + 1);
  if (id_step != ts.last_id_step || ts.id_prefix_length == 0) [[unlikely]] {
    const std::string_view name = phase_name(phase);
    char* q = ts.last_id;
    std::memcpy(q, name.data(), name.size());
    q += name.size();
    std::memcpy(q, "-op-", 4);
    q = std::to_chars(q + 4, ts.last_id + sizeof ts.last_id, id_step).ptr;
    *q++ = '-';
    ts.id_prefix_length = static_cast<std::size_t>(q - ts.last_id);
    ts.last_id_length = 0;  // no counter text yet
  }
  std::memcpy(id, ts.last_id, sizeof ts.last_id);  // constant size: a few vector moves
  if (ts.last_id_length != 0 && counter == ts.last_id_counter + 1 &&
      ts.last_id[ts.last_id_length - 1] != '9') [[likely]] {
    ++id[ts.last_id_length - 1];
    ++ts.last_id[ts.last_id_length - 1];
  } else {
    char* const digits = id + ts.id_prefix_length;
    const std::size_t length =
        static_cast<std::size_t>(std::to_chars(digits, id + kMax, counter).ptr - id);
    std::memcpy(ts.last_id + ts.id_prefix_length, digits, length - ts.id_prefix_length);
    ts.last_id_length = length;
  }
  ts.last_id_step = id_step;
  ts.last_id_counter = counter;
  return ts.last_id_length;
}
}  // namespace

[[gnu::always_inline]] inline std::size_t SessionState::open_by_id(ThreadState& ts,
                                                                   std::uint32_t handle, char* id,
                                                                   std::uint64_t* numbers) {
  if (ts.foreign_pending.load(std::memory_order_relaxed)) [[unlikely]]
    prune_foreign(ts);
  // The frame's fields are kept in registers and stored field by field into the slot: a Frame
  // assembled on the stack and then copied is read back with wide loads right after its narrow
  // stores, which stalls.
  const std::uint64_t counter = take_counter(ts);
  const std::uint64_t id_step = step.load(std::memory_order_relaxed);
  std::uint64_t parent_counter = 0, parent_step = 0;
  if (!ts.stack.empty()) {
    parent_counter = ts.stack.back().counter;
    parent_step = ts.stack.back().id_step;
  }
  const std::size_t length = write_event_id(ts, config.phase, id_step, counter, id);
  if (numbers != nullptr) {
    numbers[0] = id_step;
    numbers[1] = counter;
  }
  // Found from any thread by counter: this thread's slot for it, or the shared table when the
  // slot is held by an older operation still open.
  IdSlot& slot = ts.id_slots[counter & (ThreadState::kIdSlots - 1)];
  const bool in_slot = slot.state.load(std::memory_order_acquire) == 0;
  if (!in_slot) [[unlikely]] {
    std::lock_guard<std::mutex> lock(active_mu_);
    active_.emplace(counter,
                    ActiveOp{Frame{counter, id_step, 0, parent_counter, parent_step, handle, true},
                             &ts, ts.index});
  }
  // false: no room (out of memory); the operation then parents nothing begun inside it. The
  // stack keeps only what later begins read (the parent's numbers) and what its end looks for;
  // the whole frame is in the slot (or the table), where any thread finds it.
  if (ts.stack.size() < ts.stack.capacity() || grow_stack(ts.stack)) [[likely]]
    ts.stack.push_back(Frame{counter, id_step, 0, 0, 0, handle, true});
  // Nobody can end the operation before its id is returned, so the start is read last.
  const std::uint64_t start = timer.now();
  if (in_slot) [[likely]] {
    store_frame(slot.frame, counter, id_step, start, parent_counter, parent_step, handle);
    slot.thread = ts.index;
    slot.state.store(counter, std::memory_order_release);
  } else {
    std::lock_guard<std::mutex> lock(active_mu_);
    active_[counter].frame.start = start;
  }
  return length;
}

// The string API's hit path: the same steps as begin_by_id + open_by_id when every condition of
// their usual case holds, checked before anything is changed, so that a miss leaves the full path
// exactly the state it would have found.
template <typename Input>
[[gnu::always_inline]] inline std::size_t SessionState::begin_hit_inline(
    std::string_view static_id, std::string_view op, const Input* inputs, std::size_t input_count,
    char* id, std::uint64_t* numbers) noexcept {
  const ThreadCache& cache = tls_cache;
  if (cache.session_id != id_) [[unlikely]]
    return 0;  // this thread's first call: the full path registers it
  ThreadState& ts = *cache.state;
  if (finished.load(std::memory_order_acquire) ||
      ts.foreign_pending.load(std::memory_order_relaxed) || ts.stack.size() == ts.stack.capacity())
      [[unlikely]]
    return 0;
  std::uint32_t handle = cached_op(ts, static_id, op, inputs, input_count);
  if (handle == kNoHandle) [[unlikely]] {
    handle = cached_op_by_content(ts, static_id, op, inputs, input_count);
    if (handle == kNoHandle) return 0;
  }
  if (ts.next_counter == ts.counter_limit) [[unlikely]] {
    ts.next_counter = next_counter_block_.fetch_add(kCounterBlock, std::memory_order_relaxed);
    ts.counter_limit = ts.next_counter + kCounterBlock;
  }
  const std::uint64_t counter = ts.next_counter;
  IdSlot& slot = ts.id_slots[counter & (ThreadState::kIdSlots - 1)];
  if (slot.state.load(std::memory_order_acquire) != 0) [[unlikely]]
    return 0;  // held by an older operation still open: the full path uses the shared table
  ++ts.next_counter;
  const std::uint64_t id_step = step.load(std::memory_order_relaxed);
  std::uint64_t parent_counter = 0, parent_step = 0;
  if (!ts.stack.empty()) {
    parent_counter = ts.stack.back().counter;
    parent_step = ts.stack.back().id_step;
  }
  const std::size_t length = write_event_id(ts, config.phase, id_step, counter, id);
  if (numbers != nullptr) {
    numbers[0] = id_step;
    numbers[1] = counter;
  }
  ts.stack.push_back(Frame{counter, id_step, 0, 0, 0, handle, true});  // capacity checked above
  const std::uint64_t start = timer.now();
  store_frame(slot.frame, counter, id_step, start, parent_counter, parent_step, handle);
  slot.thread = ts.index;
  slot.state.store(counter, std::memory_order_release);
  return length;
}

std::size_t SessionState::begin_hit(std::string_view static_id, std::string_view op,
                                    std::span<const std::string> inputs, char* id,
                                    std::uint64_t* numbers) noexcept {
  return begin_hit_inline(static_id, op, inputs.data(), inputs.size(), id, numbers);
}

std::size_t SessionState::begin_hit(std::string_view static_id, std::string_view op,
                                    const cgp_str* inputs, std::size_t input_count, char* id,
                                    std::uint64_t* numbers) noexcept {
  return begin_hit_inline(static_id, op, inputs, input_count, id, numbers);
}

// close_by_id's usual case (begun on this thread, ended innermost first, no output), every
// condition checked before the slot is freed.
[[gnu::always_inline]] inline bool SessionState::end_hit_inline(std::uint64_t now,
                                                                std::uint64_t id_step,
                                                                std::uint64_t counter,
                                                                std::uint64_t& duration) noexcept {
  const ThreadCache& cache = tls_cache;
  if (cache.session_id != id_) [[unlikely]]
    return false;
  ThreadState& ts = *cache.state;
  IdSlot& own = ts.id_slots[counter & (ThreadState::kIdSlots - 1)];
  if (finished.load(std::memory_order_acquire) ||
      own.state.load(std::memory_order_relaxed) != counter || own.frame.id_step != id_step ||
      own.frame.counter != counter || ts.stack.empty() || ts.stack.back().counter != counter ||
      !ts.stack.back().by_id) [[unlikely]]
    return false;
  const std::uint64_t start = own.frame.start;
  const std::uint64_t parent_counter = own.frame.parent_counter;
  const std::uint64_t parent_step = own.frame.parent_step;
  const std::uint32_t handle = own.frame.handle;
  const std::uint16_t owner_index = own.thread;
  // Freed with a plain store, then `claim` read (IdSlot); another thread that claimed it first
  // keeps it, and the full path then reports the id unknown, as it would have.
  own.state.store(0, std::memory_order_relaxed);
  if (asymmetric_fence_)
    std::atomic_signal_fence(std::memory_order_seq_cst);  // the other side's membarrier
  else
    std::atomic_thread_fence(std::memory_order_seq_cst);
  if (own.claim.load(std::memory_order_relaxed) == counter && !keeps_claimed(ts, own, counter))
      [[unlikely]]
    return false;
  ts.stack.pop_back();
  duration = timer.duration_ns(start, now);
  if (Record* r = claim_slot(ts)) [[likely]] {
    *r = Record{counter,
                id_step,
                step.load(std::memory_order_relaxed),
                start,
                duration,
                parent_counter,
                parent_step,
                handle,
                owner_index,
                RecordKind::operation_ns,
                0};
    publish(ts);
  }
  return true;
}

bool SessionState::end_hit(std::uint64_t id_step, std::uint64_t counter,
                           std::uint64_t& duration) noexcept {
  return end_hit_inline(timer.now(), id_step, counter, duration);
}

bool SessionState::end_hit(std::string_view event_id, std::uint64_t& duration) noexcept {
  const std::uint64_t now = timer.now();
  const ThreadCache& cache = tls_cache;
  if (cache.session_id != id_) [[unlikely]]
    return false;
  const ThreadState& ts = *cache.state;
  if (!same_text(std::string_view(ts.last_id, ts.last_id_length), event_id)) [[unlikely]]
    return false;
  return end_hit_inline(now, ts.last_id_step, ts.last_id_counter, duration);
}

Result<std::uint64_t> SessionState::end_by_id(std::string_view event_id,
                                              const std::string_view* output) {
  const std::uint64_t now = timer.now();
  ThreadState* tsp = thread_state_inline();
  if (tsp == nullptr || finished.load(std::memory_order_acquire)) [[unlikely]]
    return refused(tsp);
  ThreadState& ts = *tsp;
  std::uint64_t id_step = 0, counter = 0;
  if (same_text(std::string_view(ts.last_id, ts.last_id_length), event_id)) [[likely]] {
    id_step = ts.last_id_step;
    counter = ts.last_id_counter;
  } else if (!parse_event_id(event_id, phase_name(config.phase), id_step, counter)) {
    return unknown_id(event_id);
  }
  return close_by_id(ts, id_step, counter, now, output, event_id);
}

// The owner freed its slot and then saw another thread's claim on the same operation: whoever
// the claimant found decides (it still saw the operation open: it won and set `won`).
bool SessionState::keeps_claimed(ThreadState& ts, IdSlot& slot, std::uint64_t counter) {
  std::lock_guard<std::mutex> lock(ts.foreign_mu);
  return slot.won != counter;
}

Result<std::uint64_t> SessionState::end_by_numbers(std::uint64_t id_step, std::uint64_t counter,
                                                   const std::string_view* output,
                                                   const std::string_view& text_for_errors) {
  const std::uint64_t now = timer.now();
  ThreadState* tsp = thread_state_inline();
  if (tsp == nullptr || finished.load(std::memory_order_acquire)) [[unlikely]]
    return refused(tsp);
  return close_by_id(*tsp, id_step, counter, now, output, text_for_errors);
}

[[gnu::always_inline]] inline Result<std::uint64_t> SessionState::close_by_id(
    ThreadState& ts, std::uint64_t id_step, std::uint64_t counter, std::uint64_t now,
    const std::string_view* output, const std::string_view& text_for_errors) {
  Frame frame{};
  ThreadState* owner = &ts;
  std::uint16_t owner_index = ts.index;
  // Begun on this thread, in its slot: only this thread writes the slot's frame, so it is read
  // before the slot is freed; the slot is freed with a plain store and then `claim` is read
  // (IdSlot: an ender on another thread stores `claim` first and runs the heavy barrier, so at
  // least one of the two sees the other). No read-modify-write on this path.
  IdSlot& own = ts.id_slots[counter & (ThreadState::kIdSlots - 1)];
  bool taken = false;
  if (own.state.load(std::memory_order_relaxed) == counter) [[likely]] {
    // Field by field, like open_by_id stored them (see store_frame).
    frame.counter = own.frame.counter;
    frame.id_step = own.frame.id_step;
    frame.start = own.frame.start;
    frame.parent_counter = own.frame.parent_counter;
    frame.parent_step = own.frame.parent_step;
    frame.handle = own.frame.handle;
    owner_index = own.thread;
    if (frame.id_step == id_step && frame.counter == counter) [[likely]] {
      own.state.store(0, std::memory_order_relaxed);
      if (asymmetric_fence_)
        std::atomic_signal_fence(std::memory_order_seq_cst);  // the other side's membarrier
      else
        std::atomic_thread_fence(std::memory_order_seq_cst);
      taken =
          own.claim.load(std::memory_order_relaxed) != counter || keeps_claimed(ts, own, counter);
      if (!taken) [[unlikely]]
        return unknown_id(text_for_errors);  // another thread ended it first
    }
  }
  if (!taken && !take_open(ts, counter, id_step, frame, owner, owner_index)) [[unlikely]]
    return unknown_id(text_for_errors);
  if (owner == &ts) [[likely]] {
    if (!ts.stack.empty() && ts.stack.back().counter == counter && ts.stack.back().by_id)
        [[likely]] {
      ts.stack.pop_back();
    } else {
      for (auto it = ts.stack.rbegin(); it != ts.stack.rend(); ++it) {
        if (it->counter == counter && it->by_id) {
          ts.stack.erase(std::next(it).base());
          break;
        }
      }
    }
  } else {
    std::lock_guard<std::mutex> lock(owner->foreign_mu);
    owner->foreign_ended.push_back(counter);
    owner->foreign_pending.store(true, std::memory_order_relaxed);
  }
  const std::uint64_t duration = timer.duration_ns(frame.start, now);
  if (output != nullptr) [[unlikely]] {
    {
      std::lock_guard<std::mutex> lock(outputs_mu_);
      outputs_.insert_or_assign(counter, std::string(*output));
    }
    push(ts, Record{counter, id_step, step.load(std::memory_order_relaxed), frame.start, duration,
                    frame.parent_counter, frame.parent_step, frame.handle, owner_index,
                    RecordKind::operation_ns_with_output, 0});
    return duration;
  }
  if (Record* r = claim_slot(ts)) [[likely]] {
    *r = Record{counter,
                id_step,
                step.load(std::memory_order_relaxed),
                frame.start,
                duration,
                frame.parent_counter,
                frame.parent_step,
                frame.handle,
                owner_index,
                RecordKind::operation_ns,
                0};
    publish(ts);
  }
  return duration;
}

// Module scopes. The path is found in the thread's cache by address and length (confirmed by
// comparing the text: a reused buffer is never taken for another path); the rest is what a
// handle's begin and end cost, plus the optional device synchronisation.
[[gnu::always_inline]] inline std::uint32_t SessionState::lookup_module(
    ThreadState& ts, std::string_view module_path) noexcept {
  const auto address = reinterpret_cast<std::uintptr_t>(module_path.data());
  const InternCacheEntry& e =
      ts.module_cache[((address ^ module_path.size()) * 0x9E3779B97F4A7C15ull) >> 56];
  if (e.static_id == module_path.data() && e.length == module_path.size() && e.length != 0)
      [[likely]] {
    const std::string& interned = handles_[e.handle].static_id;
    if (std::memcmp(interned.data(), module_path.data(), module_path.size()) == 0) [[likely]]
      return e.handle;
  }
  return lookup_module_slow(ts, module_path);
}

std::uint64_t SessionState::module_begin(std::string_view module_path) noexcept {
  // runtime/3 is the seed's format byte for byte: module scopes are neither written nor drawn
  // from the event counter there.
  if (!v4_ || finished.load(std::memory_order_relaxed)) [[unlikely]]
    return 0;
  ThreadState* tsp = thread_state_inline();
  if (tsp == nullptr) [[unlikely]]
    return 0;
  return open_module(*tsp, lookup_module(*tsp, module_path));
}

std::uint64_t SessionState::module_begin_child(std::string_view parent,
                                               std::string_view child) noexcept {
  if (!v4_ || finished.load(std::memory_order_relaxed)) [[unlikely]]
    return 0;
  ThreadState* tsp = thread_state_inline();
  if (tsp == nullptr) [[unlikely]]
    return 0;
  ThreadState& ts = *tsp;
  // Both parts are found by address and length (the parent's `cg_path` buffer and the child's
  // string literal), confirmed by comparing the interned text piece by piece.
  const auto a = reinterpret_cast<std::uintptr_t>(parent.data());
  const auto b = reinterpret_cast<std::uintptr_t>(child.data());
  const ChildCacheEntry& e =
      ts.child_cache[ThreadState::child_slot(a, parent.size(), b, child.size())];
  std::uint32_t handle = kNoHandle;
  if (e.parent == parent.data() && e.parent_length == parent.size() && e.child == child.data() &&
      e.child_length == child.size() && e.child_length != 0) [[likely]] {
    // The entry's lengths are those of the interned text's two parts (set together).
    const std::size_t dot = parent.empty() ? 0 : 1;
    // (An empty parent may come as a null pointer through the C ABI: memcmp must not see it.)
    if ((parent.empty() || std::memcmp(e.text, parent.data(), parent.size()) == 0) &&
        std::memcmp(e.text + parent.size() + dot, child.data(), child.size()) == 0) [[likely]]
      handle = e.handle;
  }
  if (handle == kNoHandle) handle = lookup_child_slow(ts, parent, child);
  return open_module(ts, handle);
}

[[gnu::always_inline]] inline std::uint64_t SessionState::open_module(
    ThreadState& ts, std::uint32_t handle) noexcept {
  if (handle == kNoHandle) [[unlikely]]
    return 0;
  Frame frame{take_counter(ts), step.load(std::memory_order_relaxed), 0, 0, 0, handle, false};
  if (!ts.module_stack.empty()) {
    frame.parent_counter = ts.module_stack.back().counter;
    frame.parent_step = ts.module_stack.back().id_step;
  }
  if (!push_frame(ts.module_stack, frame)) [[unlikely]] {
    count_error();
    return 0;
  }
  if (!modules_used_.load(std::memory_order_relaxed)) [[unlikely]]
    modules_used_.store(true, std::memory_order_relaxed);
  if (device_sync_) config.device_synchronize();
  ts.module_stack.back().start = timer.now();
  return frame.counter;
}

void SessionState::module_end(std::uint64_t token) noexcept {
  if (token == 0) return;
  if (device_sync_) config.device_synchronize();
  const std::uint64_t now = timer.now();
  ThreadState* tsp = thread_state_inline();
  if (tsp == nullptr) [[unlikely]]
    return;
  ThreadState& ts = *tsp;
  if (ts.module_stack.empty() || ts.module_stack.back().counter != token) [[unlikely]] {
    module_end_slow(ts, token, now);
    return;
  }
  const Frame& f = ts.module_stack.back();
  if (Record* r = claim_slot(ts)) [[likely]] {
    *r = Record{f.counter,
                f.id_step,
                step.load(std::memory_order_relaxed),
                f.start,
                now,
                f.parent_counter,
                f.parent_step,
                f.handle,
                ts.index,
                RecordKind::module,
                0};
    publish(ts);
  }
  ts.module_stack.pop_back();
}

void SessionState::module_end_slow(ThreadState& ts, std::uint64_t token,
                                   std::uint64_t now) noexcept {
  // Closed while a scope it encloses is still open: written (its interval is right), counted as
  // an error. Not open on this thread at all: a sticky error, as for a handle.
  for (auto it = ts.module_stack.rbegin(); it != ts.module_stack.rend(); ++it) {
    if (it->counter == token) {
      const Frame f = *it;
      ts.module_stack.erase(std::next(it).base());
      count_error();
      push(ts, Record{f.counter, f.id_step, step.load(std::memory_order_relaxed), f.start, now,
                      f.parent_counter, f.parent_step, f.handle, ts.index, RecordKind::module, 0});
      return;
    }
  }
  if (finished.load(std::memory_order_acquire)) return;  // begun before finish: nothing to do
  try {
    fail(Errc::unbalanced, "end of module scope " + std::to_string(token) +
                               " on a thread where it is not open (close a scope on the thread "
                               "that opened it)");
  } catch (...) {
    count_error();
  }
}

bool SessionState::wait_for_space(ThreadState& ts) noexcept {
  if (config.backpressure == Backpressure::drop || writer_gone_.load(std::memory_order_acquire)) {
    // Only the owner writes `dropped`; the atomic is for the writer's final read.
    ts.dropped.store(ts.dropped.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    return false;
  }
  for (unsigned spins = 0;; ++spins) {
    wake_writer();
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

// The seed's string API, defined here so that the hit path inlines into it: on a hit, no Result
// or Status is built beyond the one returned, nothing is allocated, locked or hashed (for an id
// cached by address), and the event id is written once, in place.
Result<EventId> ProfileSession::begin_operation(std::string_view static_id, std::string_view op,
                                                std::span<const std::string> inputs) {
  Result<EventId> result{std::in_place};
  EventId& id = result.value();
  std::uint64_t numbers[2];
  const std::size_t length =
      state_->begin_hit_inline(static_id, op, inputs.data(), inputs.size(), id.text_, numbers);
  if (length == 0) [[unlikely]] {
    result = begin_operation_full(static_id, op, inputs);
    return result;
  }
  id.text_[length] = '\0';
  id.size_ = static_cast<std::uint8_t>(length);
  id.phase_ = state_->config.phase;
  id.numbered_ = true;
  id.step_ = numbers[0];
  id.counter_ = numbers[1];
  return result;
}

Result<std::uint64_t> ProfileSession::end_operation(const EventId& event_id) {
  const std::uint64_t now = state_->timer.now();
  std::uint64_t duration = 0;
  if (event_id.numbered_ && event_id.phase_ == state_->config.phase &&
      state_->end_hit_inline(now, event_id.step_, event_id.counter_, duration)) [[likely]]
    return duration;
  return end_operation_full(event_id, nullptr);
}

Result<std::uint64_t> ProfileSession::end_operation(std::string_view event_id) {
  std::uint64_t duration = 0;
  if (state_->end_hit(event_id, duration)) [[likely]]
    return duration;
  return end_operation_full(event_id, nullptr);
}

ModuleScope ProfileSession::module_scope(std::string_view path) noexcept {
  detail::SessionState* state = state_.get();
  if (state == nullptr) return ModuleScope();
  return ModuleScope(state, state->module_begin(path));
}

ModuleScope ProfileSession::child_scope(std::string_view parent, std::string_view child) noexcept {
  detail::SessionState* state = state_.get();
  if (state == nullptr) return ModuleScope();
  return ModuleScope(state, state->module_begin_child(parent, child));
}

void ModuleScope::end() noexcept {
  if (token_ != 0) state_->module_end(std::exchange(token_, 0));
}

}  // namespace candle_graph
