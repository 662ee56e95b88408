#pragma once
// The engine behind ProfileSession. Callers own one ThreadState each (found through a
// thread_local cache) and only ever touch their own ring and scope stack; the writer thread owns
// the file and every ring's tail. The two meet only through each ring's head/tail atomics.
#include <atomic>
#include <charconv>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "candle_graph/profile.hpp"
#include "candle_graph_profile.h"
#include "profile/timer.hpp"

namespace candle_graph::detail {

enum class RecordKind : std::uint8_t {
  operation,     // `end` is a raw timer reading
  operation_ns,  // `end` is the duration in ns, already returned to a string-API caller
  edge,          // `end` is the caller's duration in ns, `start` the time it was recorded
  operation_ns_with_output,  // as operation_ns; the output id waits in SessionState::outputs_
  module,  // a module scope: `handle` names its path, `end` is a raw timer reading and the
           // parent fields name the enclosing module scope
  stats,   // tensor statistics: `handle` names the path, `start` is a raw timer reading, the
           // numbers wait in SessionState::stats_ (rare, so kept out of the 64-byte record)
};

// One finished event exactly as the caller stores it: raw numbers, no text. One cache line, so
// the writer pulls exactly one line per record from the producer's core.
struct alignas(64) Record {
  std::uint64_t counter;
  std::uint64_t id_step;  // step at begin: part of the event id
  std::uint64_t step;     // step at end: the `step` field, as the seed stamps it
  std::uint64_t start;
  std::uint64_t end;
  std::uint64_t parent_counter;  // 0: no enclosing operation
  std::uint64_t parent_step;
  std::uint32_t handle;
  std::uint16_t thread;  // timeline track; threads past 65,535 in one session share the last
  RecordKind kind;
  std::uint8_t reserved;
};
static_assert(sizeof(Record) == 64);

// An open operation on one thread's scope stack. The parent is fixed at begin, when the
// enclosing operation is known for certain.
struct Frame {
  std::uint64_t counter;
  std::uint64_t id_step;
  std::uint64_t start;
  std::uint64_t parent_counter;
  std::uint64_t parent_step;
  std::uint32_t handle;
  bool by_id;  // begun through begin_operation: ended by event id, possibly on another thread
};

// The decimal text of the last number written through it. Steps change every many records, so
// the writer formats each step once instead of three times per record.
struct CachedNumber {
  std::uint64_t value = ~std::uint64_t{0};
  std::size_t length = 0;
  char text[24] = {};
  char* put(char* out, std::uint64_t v) noexcept {
    if (v != value || length == 0) {
      value = v;
      length = static_cast<std::size_t>(std::to_chars(text, text + sizeof text, v).ptr - text);
    }
    std::memcpy(out, text, length);
    return out + length;
  }
};

// A string-API operation open on its beginning thread, findable by its counter from any thread.
// `state` is 0 when free and the counter while open; only the owner thread stores a counter, and
// the owner's usual end frees it with a plain store (no read-modify-write on the caller's path).
// Another thread ending the operation (rare) races with that end through `claim`, Dekker-style:
// the owner stores `state`, then reads `claim`; the other thread, holding the owner's
// `foreign_mu`, stores `claim`, runs a process-wide barrier (membarrier, which forces a full
// fence on the owner's core; a plain fence on both sides where the kernel lacks it), then reads
// `state`. At least one sees the other's store: the other thread wins only if it still saw the
// operation open, and then records it in `won`; an owner that saw a claim on its operation asks
// `won` under the same mutex (see SessionState::close_by_id and take_open).
struct IdSlot {
  std::atomic<std::uint64_t> state{0};
  std::atomic<std::uint64_t> claim{0};  // counter another thread is taking (foreign_mu held)
  std::uint64_t won = 0;                // last counter another thread took from here (foreign_mu)
  Frame frame{};
  std::uint16_t thread = 0;  // index of the beginning thread, for the record's `thread`
};

// The heavy side of the slots' asymmetric barrier: true when the process is registered for
// expedited private membarrier (Linux 4.14+), so an owner needs only a compiler barrier.
bool asymmetric_fence_available() noexcept;
// Full fence on every running thread of the process (asymmetric) or on this one (fallback).
void heavy_fence(bool asymmetric) noexcept;

// Caller-side cache of the string API's interned operations, keyed by the static id's address
// and length; a hit is confirmed by comparing the text with the interned handle's, so a buffer
// reused for another id can never be taken for the old one.
struct HandleInfo;
struct InternCacheEntry {
  const char* static_id = nullptr;
  std::size_t length = 0;
  std::uint32_t handle = 0;
  // Operations: handles_[handle].packed.data() (table entries never move), so that a hit is
  // confirmed from this entry and one short blob, not from the HandleInfo and its strings.
  const char* packed = nullptr;
};
// Second level, for callers that pass a fresh copy of the id each time (the seed's
// `ids[i].clone()`): keyed by a cheap hash of the text, again confirmed by comparing it.
struct ChildCacheEntry {
  const char* parent = nullptr;
  std::size_t parent_length = 0;
  const char* child = nullptr;
  std::size_t child_length = 0;
  std::uint32_t handle = 0;
  // handles_[handle].static_id.data() (table entries never move): `parent` [+ "."] + `child`, so
  // a hit is confirmed from this entry alone.
  const char* text = nullptr;
};

struct ContentCacheEntry {
  std::uint64_t hash = 0;
  std::uint32_t handle = 0;
  bool used = false;
  const char* packed = nullptr;  // operations: handles_[handle].packed.data()
};

// A cheap hash of an id's text for the content caches: its length and a few 8-byte windows
// (static ids of one model differ mostly at their end), loaded whole, never byte by byte.
// Collisions only cost a cache miss: every hit is confirmed by comparing the full text.
inline std::uint64_t text_mix(std::string_view s, std::uint64_t h) noexcept {
  const std::size_t n = s.size();
  h = (h ^ n) * 0x9E3779B97F4A7C15ull;
  auto mix = [&h](std::uint64_t w) { h = (h ^ w) * 0xFF51AFD7ED558CCDull; };
  if (n >= 8) {
    std::uint64_t w0, w1, w2;
    std::memcpy(&w0, s.data(), 8);
    std::memcpy(&w1, s.data() + n / 2 - 4, 8);
    std::memcpy(&w2, s.data() + n - 8, 8);
    mix(w0);
    mix(w1);
    mix(w2);
  } else if (n >= 4) {
    std::uint32_t lo, hi;
    std::memcpy(&lo, s.data(), 4);
    std::memcpy(&hi, s.data() + n - 4, 4);
    mix(lo | (std::uint64_t{hi} << 32));
  } else if (n > 0) {
    const auto byte = [&](std::size_t i) {
      return std::uint64_t{static_cast<unsigned char>(s[i])};
    };
    mix(byte(0) | (byte(n / 2) << 8) | (byte(n - 1) << 16));
  }
  return h;
}
// Murmur3's finalizer: every input bit reaches the low bits the cache index is taken from.
inline std::uint64_t hash_finish(std::uint64_t h) noexcept {
  h ^= h >> 33;
  h *= 0xFF51AFD7ED558CCDull;
  h ^= h >> 33;
  h *= 0xC4CEB9FE1A85EC53ull;
  return h ^ (h >> 33);
}
inline std::uint64_t text_hash(std::string_view s) noexcept {
  return hash_finish(text_mix(s, 0));
}
// The string API's content-cache key for (static id, op).
inline std::uint64_t op_text_hash(std::string_view static_id, std::string_view op) noexcept {
  return hash_finish(text_mix(op, text_mix(static_id, 0)));
}

struct ThreadState {
  ThreadState(std::uint16_t thread_index, std::unique_ptr<Record[]> ring_records,
              std::size_t capacity_records);

  static constexpr std::size_t kIdSlots = 256;
  static constexpr std::size_t kInternCache = 256;  // indexed by the top 8 bits of a hash
  // The string API's caches: a model times hundreds of distinct static ids (a layer's dozen ops
  // times its layers), and three ids sharing a two-way set would miss on every lap.
  static constexpr unsigned kOpCacheBits = 11;
  static constexpr std::size_t kOpCache = std::size_t{1} << kOpCacheBits;
  static constexpr std::size_t kContentCache = 2048;
  static std::size_t op_cache_slot(const char* address, std::size_t length) noexcept {
    return ((reinterpret_cast<std::uintptr_t>(address) ^ length) * 0x9E3779B97F4A7C15ull) >>
           (64 - kOpCacheBits);
  }

  // Owner thread only (an exited thread's state is adopted whole by a later thread).
  std::uint16_t index;  // `thread` of records begun here; new for each OS thread
  const std::uint64_t capacity;
  const std::uint64_t mask;
  std::unique_ptr<Record[]> ring;
  std::uint64_t head_local = 0;
  std::uint64_t tail_cache = 0;
  std::uint64_t next_counter = 0;
  std::uint64_t counter_limit = 0;
  std::vector<Frame> stack;
  std::vector<Frame> module_stack;  // open module scopes (counter = the scope's token)
  InternCacheEntry intern_cache[kOpCache];
  InternCacheEntry module_cache[kInternCache];           // module paths by address and length
  ContentCacheEntry module_content_cache[kInternCache];  // and by a hash of their text
  // Child scopes (`parent` + "." + `child`) by the addresses and lengths of both parts.
  static constexpr unsigned kChildCacheBits = 10;
  ChildCacheEntry child_cache[std::size_t{1} << kChildCacheBits];
  static std::size_t child_slot(std::uintptr_t parent, std::size_t parent_length,
                                std::uintptr_t child, std::size_t child_length) noexcept {
    return ((parent ^ parent_length ^ (child << 7) ^ child_length) * 0x9E3779B97F4A7C15ull) >>
           (64 - kChildCacheBits);
  }
  // The event id this thread's string API returned last: an end_operation with exactly that text
  // (the usual begin-then-end) needs no parsing. Its `{phase}-op-{step}-` prefix is kept across
  // operations of one step (id_prefix_length bytes; 0: not built yet).
  char last_id[64] = {};
  std::size_t last_id_length = 0;
  std::size_t id_prefix_length = 0;
  std::uint64_t last_id_step = 0;
  std::uint64_t last_id_counter = 0;
  ContentCacheEntry content_cache[kContentCache];

  // Shared with the writer (head, tail, dropped, retired) or with other callers (foreign_*,
  // id_slots).
  alignas(64) std::atomic<std::uint64_t> head{0};
  alignas(64) std::atomic<std::uint64_t> tail{0};
  std::atomic<std::uint64_t> dropped{0};
  // Its thread exited: once the writer has drained the ring, a new thread may adopt the state.
  std::atomic<bool> retired{false};
  std::atomic<bool> foreign_pending{false};
  std::mutex foreign_mu;
  std::vector<std::uint64_t> foreign_ended;  // string-API ops begun here, ended elsewhere
  std::unique_ptr<IdSlot[]> id_slots;
};

// Pre-rendered JSON for one interned operation or edge, so the writer copies instead of escaping.
struct HandleInfo {
  bool is_edge = false;
  bool is_module = false;  // a module path (`static_id` holds it; body `,"path":…`)
  std::string static_id;
  // Ops: the interned op name and inputs, to confirm a string-API cache hit by content.
  std::string op;
  std::vector<std::string> inputs;
  // Ops: `,"op":…,"static_id":…,"inputs":[…]`; edges: `,"from_static_id":…,"to_static_id":…`.
  std::string body;
  // Ops: the text a string-API cache hit is confirmed against, in one allocation (a couple of
  // cache lines instead of the HandleInfo's and three strings'): u32 static id length, u32 op
  // length, u32 input count,
  // u32 per input length, then the static id, op and inputs back to back (pack_op_text).
  std::string packed;
};
std::string pack_op_text(std::string_view static_id, std::string_view op,
                         std::span<const std::string_view> inputs);

// Interned handles. Grows in fixed chunks that never move, so the writer reads entries without a
// lock while callers intern new ones (a record naming handle i is published after entry i).
class HandleTable {
 public:
  static constexpr std::uint32_t kChunkBits = 10;
  static constexpr std::uint32_t kChunkSize = 1u << kChunkBits;
  static constexpr std::uint32_t kMaxChunks = 4096;
  // Distinct operations, edges and module paths one session can intern (4,194,304); the
  // session's own bound (ProfileConfig::max_distinct_ids) is at most this.
  static constexpr std::uint32_t kMaxHandles = kChunkSize * kMaxChunks;
  static_assert(kMaxHandles == kMaxDistinctIds);
  explicit HandleTable(std::uint32_t limit) : limit_(limit) {}

  // Returns the handle for `key`, calling make_info() only the first time the key is seen.
  template <typename MakeInfo>
  Result<std::uint32_t> intern(const std::string& key, MakeInfo&& make_info) {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = index_.find(key); it != index_.end()) return it->second;
    return add(key, make_info());
  }
  // True for an index intern() returned for an operation (not an edge).
  bool is_op(std::uint32_t i) const noexcept {
    return i < published_.load(std::memory_order_acquire) && !(*this)[i].is_edge &&
           !(*this)[i].is_module;
  }
  const HandleInfo& operator[](std::uint32_t i) const {
    return chunks_[i >> kChunkBits][i & (kChunkSize - 1)];
  }

 private:
  Result<std::uint32_t> add(const std::string& key, HandleInfo info);  // mu_ held
  std::mutex mu_;
  std::unordered_map<std::string, std::uint32_t> index_;
  std::unique_ptr<HandleInfo[]> chunks_[kMaxChunks];
  const std::uint32_t limit_;
  std::uint32_t count_ = 0;
  std::atomic<std::uint32_t> published_{0};
};

struct ActiveOp {
  Frame frame;
  ThreadState* thread;
  std::uint16_t thread_index;
};

class SessionState {
 public:
  static constexpr std::uint64_t kCounterBlock = 4096;
  static constexpr std::uint32_t kNoHandle = ~std::uint32_t{0};

  SessionState(std::filesystem::path trace_path, ProfileConfig cfg, int fd);
  ~SessionState();
  SessionState(const SessionState&) = delete;
  SessionState& operator=(const SessionState&) = delete;

  Status write_meta();
  void start_writer();

  // Hot path (hot_path.cpp).
  void begin(std::uint32_t handle) noexcept;
  void end(std::uint32_t handle) noexcept;

  // String API and interning (session.cpp).
  Result<std::uint32_t> intern_op(std::string_view static_id, std::string_view op,
                                  std::span<const std::string_view> inputs);
  // Begins an operation by id and writes its event id (at most kEventIdMax bytes, no NUL) to
  // `id`; returns the id's length.
  static constexpr std::size_t kEventIdMax = 63;
  // `numbers` (optional) receives the id's step and counter.
  Result<std::size_t> begin_by_id(std::string_view static_id, std::string_view op,
                                  std::span<const std::string_view> inputs, char* id,
                                  std::uint64_t* numbers = nullptr);
  Result<std::uint64_t> end_by_id(std::string_view event_id, const std::string_view* output);
  // The same for an id whose numbers the caller already holds (C++ EventId, which carries the
  // numbers its text was made from): no text to compare or parse.
  Result<std::uint64_t> end_by_numbers(std::uint64_t id_step, std::uint64_t counter,
                                       const std::string_view* output,
                                       const std::string_view& text_for_errors);
  Status edge(std::string_view from, std::string_view to, std::uint64_t duration_ns);
  // Tensor statistics (session.cpp): the schedule, and one `stats` record for `path`.
  StatsDue stats_due() const noexcept;
  Status stats(std::string_view module_path, const TensorStats& stats);

  // The string API's hit path (hot_path.cpp): the id is in the thread's cache (by address and
  // length, confirmed by its text; or by a hash of its text, confirmed the same way), its id slot
  // is free and the scope stack has room. Then the operation is opened with no Result, no
  // Status, no allocation and no lock, and the id's length is returned (its step and counter in
  // numbers[0..1]). 0: nothing was done; the caller takes the full path (begin_by_id), which
  // gives the same result. `inputs` are std::string (C++), std::string_view or cgp_str (C ABI).
  std::size_t begin_hit(std::string_view static_id, std::string_view op,
                        std::span<const std::string> inputs, char* id,
                        std::uint64_t* numbers) noexcept;
  std::size_t begin_hit(std::string_view static_id, std::string_view op, const cgp_str* inputs,
                        std::size_t input_count, char* id, std::uint64_t* numbers) noexcept;
  // The same for an end without output on the thread that began it, innermost first: true with
  // the duration; false when it was not ended here (the caller takes end_by_numbers/end_by_id,
  // same result; also when another thread ended it first: the full path then finds it nowhere
  // and reports it unknown, as it would have).
  bool end_hit(std::uint64_t id_step, std::uint64_t counter, std::uint64_t& duration) noexcept;
  // By text: the id this thread's string API returned last (else a miss).
  bool end_hit(std::string_view event_id, std::uint64_t& duration) noexcept;
  // The two above, inlined into ProfileSession's string API (hot_path.cpp only).
  template <typename Input>
  inline std::size_t begin_hit_inline(std::string_view static_id, std::string_view op,
                                      const Input* inputs, std::size_t input_count, char* id,
                                      std::uint64_t* numbers) noexcept;
  inline bool end_hit_inline(std::uint64_t now, std::uint64_t id_step, std::uint64_t counter,
                             std::uint64_t& duration) noexcept;
  // Module scopes (hot_path.cpp): begin returns the scope's token (its counter; 0 when nothing
  // is recorded), end closes it on the calling thread.
  std::uint64_t module_begin(std::string_view module_path) noexcept;
  // A scope for the child `child` of the module at `parent`: path `parent.child` (`child` alone
  // when `parent` is empty), joined only the first time a thread sees the pair.
  std::uint64_t module_begin_child(std::string_view parent, std::string_view child) noexcept;
  void module_end(std::uint64_t token) noexcept;
  Result<std::uint32_t> intern_module(std::string_view module_path);
  Status flush();
  Result<std::filesystem::path> finish();
  // The calling thread exited (called from its thread-exit hook): its open handle scopes are
  // counted, and its state goes back to the pool once the writer has drained it.
  void retire(ThreadState& ts);
  // Rings allocated so far (each `buffer_records_per_thread` records); for tests.
  std::size_t rings_allocated() const noexcept {
    return thread_count_.load(std::memory_order_acquire);
  }

  // Errors: every one is counted for the `end` record; sticky ones are also returned by finish().
  void count_error() noexcept { errors_.fetch_add(1, std::memory_order_relaxed); }
  void fail(Errc code, std::string message);

  const std::filesystem::path path;
  const ProfileConfig config;
  Timer timer;
  std::atomic<std::uint64_t> step{0};
  std::atomic<bool> finished{false};
  HandleTable handles_;

 private:
  ThreadState* thread_state() noexcept;
  // The same, inlined: defined and used in hot_path.cpp only.
  inline ThreadState* thread_state_inline() noexcept;
  // Free slot in the caller's ring (nullptr: dropped under the policy); publish() makes it
  // visible to the writer. Defined and used in hot_path.cpp only.
  inline Record* claim_slot(ThreadState& ts) noexcept;
  inline void publish(ThreadState& ts) noexcept;
  bool make_space(ThreadState& ts) noexcept;
  // Also called when a thread interns a handle, so the ring's first-touch page faults are paid
  // there and not inside the first timed operations. nullptr when no ring could be allocated:
  // the thread's events are then counted as dropped.
  ThreadState* register_thread() noexcept;
  std::uint64_t take_counter(ThreadState& ts) noexcept;
  void prune_foreign(ThreadState& ts);
  void push(ThreadState& ts, const Record& record) noexcept;
  bool wait_for_space(ThreadState& ts) noexcept;
  void end_slow(ThreadState& ts, std::uint32_t handle, std::uint64_t now) noexcept;
  void module_end_slow(ThreadState& ts, std::uint64_t token, std::uint64_t now) noexcept;
  // The module handle for `module_path`: the thread's caches, then the table (0xFFFFFFFF: refused).
  std::uint32_t lookup_module(ThreadState& ts, std::string_view module_path) noexcept;
  std::uint32_t lookup_module_slow(ThreadState& ts, std::string_view module_path) noexcept;
  std::uint32_t lookup_child_slow(ThreadState& ts, std::string_view parent,
                                  std::string_view child) noexcept;
  std::uint64_t open_module(ThreadState& ts, std::uint32_t handle) noexcept;
  // The string API's handle for (static_id, op, inputs): the thread's cache, then the table.
  Result<std::uint32_t> lookup_op(ThreadState& ts, std::string_view static_id, std::string_view op,
                                  std::span<const std::string_view> inputs);
  // String API after the thread state and the handle are known (hot_path.cpp): opens the
  // operation and writes its id; closes one and records it.
  std::size_t open_by_id(ThreadState& ts, std::uint32_t handle, char* id, std::uint64_t* numbers);
  // `output` is nullptr for none (a pointer: an optional passed in memory is written field by
  // field and read back whole, a stalled store forward on every call).
  Result<std::uint64_t> close_by_id(ThreadState& ts, std::uint64_t id_step, std::uint64_t counter,
                                    std::uint64_t now, const std::string_view* output,
                                    const std::string_view& text_for_errors);
  // The cached handle for (static_id, op, inputs), confirmed by content; kNoHandle on a miss.
  template <typename Input>
  inline std::uint32_t cached_op(ThreadState& ts, std::string_view static_id, std::string_view op,
                                 const Input* inputs, std::size_t input_count) noexcept;
  // The same by a hash of the text (a caller passing a fresh copy of the id each time, as the
  // seed's `ids[i].clone()` does); a hit is remembered by address too.
  template <typename Input>
  inline std::uint32_t cached_op_by_content(ThreadState& ts, std::string_view static_id,
                                            std::string_view op, const Input* inputs,
                                            std::size_t input_count) noexcept;
  Status refused(ThreadState* ts);
  Status unknown_id(std::string_view text);
  // Takes the open string-API operation `counter` begun at `id_step`, wherever it began.
  bool keeps_claimed(ThreadState& ts, IdSlot& slot, std::uint64_t counter);
  bool take_open(ThreadState& self, std::uint64_t counter, std::uint64_t id_step, Frame& frame,
                 ThreadState*& owner, std::uint16_t& owner_index);
  void wake_writer() noexcept;
  // After publishing a record into a ring the writer had emptied: wakes it if it sleeps.
  void note_first_record() noexcept;

  // Writer thread (writer.cpp).
  void writer_main();
  std::uint64_t drain(std::vector<ThreadState*>& threads);
  void format(const Record& r);
  // runtime/4-compact/1: a `def` line the first time a handle is used, then the short record.
  void format_compact(const Record& r, const std::optional<std::string>& output);
  std::optional<std::string> take_output(const Record& r);
  // The writer's output block: records are formatted straight into it through a raw pointer.
  char* out_reserve(std::size_t bytes);
  void out_append(std::string_view text);
  void write_out();
  void write_end_record(std::uint64_t open_operations, std::uint64_t open_modules);
  void format_module(const Record& r);
  // runtime/4 `stats` and compact `st` lines (docs/runtime-4.md, "Additions: tensor statistics").
  void format_stats(const Record& r);
  std::string stats_fields(const Record& r, bool position);
  void refresh_threads(std::vector<ThreadState*>& threads);
  void recycle_retired(const std::vector<ThreadState*>& threads);

  const std::uint64_t id_;
  const std::string op_prefix_;    // {"kind":"operation","event_id":"train-op-
  const std::string edge_prefix_;  // {"kind":"edge_timing","event_id":"train-edge-
  const bool v4_;
  const bool compact_;      // runtime/4-compact/1
  const bool device_sync_;  // config.device_synchronize is set
  // IdSlot's barrier: membarrier on the foreign ender's side, a compiler barrier on the owner's.
  const bool asymmetric_fence_;
  std::size_t ring_capacity_;

  std::mutex threads_mu_;
  std::vector<std::unique_ptr<ThreadState>> threads_;
  std::vector<ThreadState*> pool_;          // drained states of exited threads, for adoption
  std::size_t next_thread_index_ = 0;       // OS threads that used the session so far
  std::uint64_t retired_open_ = 0;          // handle scopes left open by exited threads
  std::uint64_t retired_open_modules_ = 0;  // module scopes left open by exited threads
  // A module scope was begun: `end` then carries `modules` and `open_modules` (traces of programs
  // without module scopes stay byte for byte what they were).
  std::atomic<bool> modules_used_{false};
  std::atomic<std::size_t> thread_count_{0};
  std::atomic<std::uint64_t> next_counter_block_{1};
  std::atomic<std::uint64_t> retired_waiting_{0};  // retired states not yet back in the pool

  std::mutex active_mu_;
  std::unordered_map<std::uint64_t, ActiveOp> active_;  // by counter
  // Output ids of string-API operations, by counter: rare, so kept out of the 64-byte record.
  std::mutex outputs_mu_;
  std::unordered_map<std::uint64_t, std::string> outputs_;
  // Tensor statistics waiting for the writer, by counter.
  std::mutex stats_mu_;
  std::unordered_map<std::uint64_t, TensorStats> stats_;

  std::mutex error_mu_;
  Status first_sticky_;
  std::atomic<std::uint64_t> errors_{0};

  // Writer.
  int fd_;
  std::thread writer_;
  std::mutex writer_mu_;
  std::condition_variable writer_cv_;
  std::condition_variable flushed_cv_;
  std::uint64_t flush_requested_ = 0;
  std::uint64_t flush_completed_ = 0;
  bool stop_ = false;
  bool wake_ = false;
  bool writer_exited_ = false;
  // Set by the writer before it sleeps with every ring empty; a producer that publishes into an
  // empty ring then wakes it (Dekker-style: both sides fence between their store and load).
  std::atomic<bool> writer_sleeping_{false};
  std::atomic<bool> writer_gone_{false};
  std::unique_ptr<char[]> out_;
  std::size_t out_capacity_ = 0;
  std::size_t out_size_ = 0;
  bool io_failed_ = false;
  CachedNumber step_text_;
  // Compact encoding state: handles already defined in the file, and per timeline thread the
  // last counter and id step written (fields equal to what they predict are left out).
  struct CompactThread {
    std::uint64_t counter = 0;
    std::uint64_t id_step = 0;
  };
  std::vector<bool> defined_;
  std::vector<CompactThread> compact_threads_;
  std::uint32_t compact_last_thread_ = 0;
  std::uint64_t operations_written_ = 0;
  std::uint64_t edges_written_ = 0;
  std::uint64_t modules_written_ = 0;
  std::uint64_t stats_written_ = 0;
  std::string mod_prefix_;  // {"kind":"module","event_id":"train-mod-
};

// Parses `{phase}-op-{step}-{counter}` exactly as the string API writes it (no leading zeros).
bool parse_event_id(std::string_view id, std::string_view phase, std::uint64_t& step,
                    std::uint64_t& counter) noexcept;

void register_session(std::uint64_t id, SessionState* state);
void unregister_session(std::uint64_t id) noexcept;

inline std::uint64_t SessionState::take_counter(ThreadState& ts) noexcept {
  // Counters come in per-thread blocks: one thread sees 1, 2, 3, … exactly like the seed's single
  // counter, and many threads never contend on one cache line.
  if (ts.next_counter == ts.counter_limit) [[unlikely]] {
    ts.next_counter = next_counter_block_.fetch_add(kCounterBlock, std::memory_order_relaxed);
    ts.counter_limit = ts.next_counter + kCounterBlock;
  }
  return ts.next_counter++;
}

}  // namespace candle_graph::detail
