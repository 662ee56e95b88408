#pragma once
// candle-graph runtime profiler: times operations and edges keyed by the model IR's static ids and
// writes `candle-graph/runtime/4` (default) or the seed's `candle-graph/runtime/3` JSONL.
//
// Two ways to time an operation:
//   * the seed's string API (`begin_operation` / `end_operation`, `TimedOperation`), which returns
//     event ids and durations like the Rust original;
//   * interned handles (`session.op(static_id, op)` once, then `handle.begin()` / `handle.end()`),
//     whose hot path is a clock read and a store into a per-thread ring; a background thread
//     formats JSONL. No allocation, I/O or formatting on the calling thread.
// Module instances are timed by VarBuilder path with `session.module_scope(path)` /
// `time_module(path, f)` (same cost as a handle: the path is interned once per session).
// Errors are values (`Status`, `Result<T>`), never exceptions. Errors that cannot be returned at
// the call site (the writer's I/O, a handle ended where it is not open) are sticky: they are
// counted in the trace's `end` record and returned by `finish()`. The format is documented in
// docs/runtime-4.md.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace candle_graph {

enum class Phase : std::uint8_t { train, infer };
// "train" / "infer", the spelling used in event ids and in `meta.phase`.
std::string_view phase_name(Phase phase) noexcept;

// runtime_v4_compact writes the same records as runtime_v4 in a smaller encoding (schema
// `candle-graph/runtime/4-compact/1`, docs/runtime-4.md): each static id, op name and inputs once
// in a `def` record, then operations by number, leaving out fields that repeat per thread. Readers
// of this project take all three.
enum class TraceFormat : std::uint8_t { runtime_v4, runtime_v3, runtime_v4_compact };

// What a producer does when its per-thread buffer is full because the writer fell behind.
enum class Backpressure : std::uint8_t {
  block,  // wait for space: no event is ever lost (default)
  drop,   // discard the event and count it in the `end` record's `dropped`
};

// How timestamps are taken. `automatic` uses the invariant TSC when the CPU declares it
// (x86-64 `constant_tsc` + `nonstop_tsc`), calibrated against steady_clock, else steady_clock.
enum class TimerKind : std::uint8_t { automatic, steady_clock, tsc };

enum class Errc : std::uint8_t {
  ok = 0,
  io_error,           // creating, writing or closing the trace failed
  unknown_operation,  // end_operation with an id that is not open
  invalid_argument,   // empty static id, too many handles, ...
  finished,           // the session was already finished
  unbalanced,         // a handle was ended on a thread where it is not open
};

// The message lives behind a pointer that is null when ok: a successful call (every timed one)
// builds and destroys no std::string, only a code and a null pointer.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Errc code, std::string message)
      : code_(code), message_(std::make_unique<std::string>(std::move(message))) {}
  Status(const Status& other)
      : code_(other.code_),
        message_(other.message_ ? std::make_unique<std::string>(*other.message_) : nullptr) {}
  Status(Status&& other) noexcept = default;
  Status& operator=(const Status& other) {
    if (this != &other) *this = Status(other);
    return *this;
  }
  Status& operator=(Status&& other) noexcept = default;
  ~Status() = default;
  bool ok() const noexcept { return code_ == Errc::ok; }
  explicit operator bool() const noexcept { return ok(); }
  Errc code() const noexcept { return code_; }
  const std::string& message() const noexcept { return message_ ? *message_ : empty_message(); }

 private:
  static const std::string& empty_message() noexcept {
    static const std::string empty;
    return empty;
  }
  Errc code_ = Errc::ok;
  std::unique_ptr<std::string> message_;
};

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}        // NOLINT(google-explicit-constructor)
  Result(Status error) : status_(std::move(error)) {}  // NOLINT(google-explicit-constructor)
  // A default-constructed value, built in place (no temporary copied in).
  explicit Result(std::in_place_t) : value_(std::in_place) {}
  bool ok() const noexcept { return status_.ok(); }
  explicit operator bool() const noexcept { return ok(); }
  const Status& status() const noexcept { return status_; }
  // Precondition: ok().
  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }

 private:
  std::optional<T> value_;
  Status status_;
};

// An event id as the string API returns it (`{phase}-op-{step}-{counter}`), held inline: returning
// one allocates nothing, whatever its length (a std::string would allocate past 15 characters,
// i.e. for most ids of a long run). Converts to std::string_view (end_operation takes one) and to
// std::string. It also carries the two numbers its text was made from, so that
// end_operation(EventId) neither compares nor parses text; the result is the same as ending it
// by its text.
class EventId {
 public:
  static constexpr std::size_t kMax = 63;
  // Only the terminator is written: zeroing the whole text costs a `rep stos` on every begin.
  EventId() noexcept { text_[0] = '\0'; }
  EventId(const EventId& other) noexcept = default;
  EventId& operator=(const EventId& other) noexcept = default;
  std::string_view view() const noexcept { return {text_, size_}; }
  operator std::string_view() const noexcept {
    return view();
  }  // NOLINT(google-explicit-constructor)
  operator std::string() const {
    return std::string(view());
  }  // NOLINT(google-explicit-constructor)
  std::string str() const { return std::string(view()); }
  const char* data() const noexcept { return text_; }
  const char* c_str() const noexcept { return text_; }
  std::size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }
  friend bool operator==(const EventId& a, std::string_view b) noexcept { return a.view() == b; }
  friend std::ostream& operator<<(std::ostream& os, const EventId& id) { return os << id.view(); }

 private:
  friend class ProfileSession;
  char text_[kMax + 1];  // NUL-terminated; bytes past it are unspecified
  std::uint8_t size_ = 0;
  Phase phase_ = Phase::train;
  bool numbered_ = false;  // step_ and counter_ are the text's numbers
  std::uint64_t step_ = 0;
  std::uint64_t counter_ = 0;
};

// Tensor statistics (docs/runtime-4.md, "Additions: tensor statistics"): a few scalars about a
// module's output or a parameter's gradient, computed by the program on the tensor's device.
enum class StatsOf : std::uint8_t { output, grad };
enum class StatsReason : std::uint8_t { sampled, non_finite };
// What the program should compute now (ProfileSession::stats_due): nothing; only the count of
// non-finite elements (and the full statistics when there are some); everything.
enum class StatsDue : std::uint8_t { none, non_finite_only, full };
// Over the finite elements only.
struct FiniteStats {
  double min = 0;
  double max = 0;
  double mean = 0;
  double rms = 0;  // root of the mean square
  double abs_max = 0;
};
struct TensorStats {
  StatsOf of = StatsOf::output;
  std::uint64_t index = 0;  // which of a module's outputs
  StatsReason reason = StatsReason::sampled;
  std::string dtype;  // as Candle names it, lower case: "f32", "bf16", "u32", ...
  std::vector<std::uint64_t> shape;
  std::uint64_t nan = 0;
  std::uint64_t pos_inf = 0;
  std::uint64_t neg_inf = 0;
  std::uint64_t zeros = 0;
  std::optional<FiniteStats> finite;  // present iff some element is finite
};

struct ProfileConfig {
  std::string entrypoint;
  Phase phase = Phase::train;
  std::string profile = "release";
  std::vector<std::string> cargo_features;
  std::optional<std::string> analysis_id;
  std::optional<std::string> build_id;
  TraceFormat format = TraceFormat::runtime_v4;
  Backpressure backpressure = Backpressure::block;
  // Records each thread may buffer before backpressure applies (rounded up to a power of two;
  // 64 bytes each). The default, 2^16, bounds memory to 4 MiB per concurrently producing thread
  // (a thread's buffer is reused by later threads once it exits). open() refuses more than
  // kMaxBufferRecordsPerThread.
  std::size_t buffer_records_per_thread = std::size_t{1} << 16;
  // Distinct operations, edges and module paths one session interns (each keeps its text until
  // finish). Past it, a new id is refused: begin_operation, record_edge_timing and op() return
  // invalid_argument, a module scope records nothing, and every refusal is counted in
  // `end.errors`. open() refuses more than kMaxDistinctIds.
  std::uint32_t max_distinct_ids = std::uint32_t{1} << 22;
  TimerKind timer = TimerKind::automatic;
  // Optional device synchronisation (CUDA/Metal: a host timestamp around a kernel measures only
  // its launch). When set, it is called before the clock read at every module scope's begin and
  // end, and `meta` ends with `"device_sync":true`; when empty, module durations are host-side
  // and `meta` has no such field. Called on the thread that opens or closes the scope; it must
  // not throw. Operations (handles, string API) never call it.
  std::function<void()> device_synchronize;
  // Tensor statistics schedule (stats_due): every `stats_every` steps (0: never on schedule),
  // and whenever a tensor holds a non-finite value when `stats_on_non_finite`. Written to `meta`
  // when set.
  std::uint64_t stats_every = 0;
  bool stats_on_non_finite = false;

  static ProfileConfig train(std::string entrypoint);
  static ProfileConfig infer(std::string entrypoint);
};

class ProfileSession;
namespace detail {
class SessionState;
// For the C ABI in this library only.
SessionState* session_state(ProfileSession& session) noexcept;
}  // namespace detail

// An interned operation (static id, op name, inputs). Cheap to copy; valid while its session is
// alive and not finished. begin()/end() nest per thread like scopes: end() closes the innermost
// open operation of this handle on the calling thread.
class OpHandle {
 public:
  OpHandle() = default;
  void begin() const noexcept;
  void end() const noexcept;
  std::uint32_t index() const noexcept { return index_; }

 private:
  friend class ProfileSession;
  OpHandle(detail::SessionState* state, std::uint32_t index) : state_(state), index_(index) {}
  detail::SessionState* state_ = nullptr;
  std::uint32_t index_ = 0;
};

// RAII scope on an interned handle: begins on construction, ends on destruction.
class ScopedOperation {
 public:
  explicit ScopedOperation(const OpHandle& handle) noexcept : handle_(handle) { handle_.begin(); }
  ~ScopedOperation() { handle_.end(); }
  ScopedOperation(const ScopedOperation&) = delete;
  ScopedOperation& operator=(const ScopedOperation&) = delete;

 private:
  OpHandle handle_;
};

// A module scope: times one module instance under its VarBuilder path (`vb.prefix()`, e.g.
// `model.layers.3.self_attn`) and writes a `module` record when it closes (docs/runtime-4.md,
// "Additions: module scopes"). Begins on construction, ends on destruction or end(). Scopes nest
// per thread (a scope's `parent` is the innermost module scope open on its thread at begin); they
// do not change any operation's parent. Close it on the thread that opened it: a scope closed on
// another thread, or one closed while a scope it encloses is still open, is a counted error (the
// former also sticky, returned by finish()), never a crash. In runtime/3 (seed parity) sessions,
// after finish(), and on a default-constructed scope, it does nothing.
class ModuleScope {
 public:
  ModuleScope() = default;
  ModuleScope(ModuleScope&& other) noexcept
      : state_(std::exchange(other.state_, nullptr)), token_(std::exchange(other.token_, 0)) {}
  ModuleScope& operator=(ModuleScope&& other) noexcept {
    if (this != &other) {
      end();
      state_ = std::exchange(other.state_, nullptr);
      token_ = std::exchange(other.token_, 0);
    }
    return *this;
  }
  ModuleScope(const ModuleScope&) = delete;
  ModuleScope& operator=(const ModuleScope&) = delete;
  ~ModuleScope() { end(); }
  // Closes the scope now (idempotent).
  void end() noexcept;
  // False when the scope records nothing (runtime/3, finished session, no buffer memory).
  bool active() const noexcept { return token_ != 0; }
  // The scope's event counter (its `event_id` is `{phase}-mod-{step}-{token}`); 0 when inactive.
  std::uint64_t token() const noexcept { return token_; }

 private:
  friend class ProfileSession;
  ModuleScope(detail::SessionState* state, std::uint64_t token) : state_(state), token_(token) {}
  detail::SessionState* state_ = nullptr;
  std::uint64_t token_ = 0;
};

// The largest buffer_records_per_thread open() accepts: 2^22 records, 256 MiB per thread.
inline constexpr std::size_t kMaxBufferRecordsPerThread = std::size_t{1} << 22;
// The largest max_distinct_ids open() accepts (and its default): 4,194,304.
inline constexpr std::uint32_t kMaxDistinctIds = std::uint32_t{1} << 22;
// The most bytes of one distinct id: a static id with its operation name and inputs, an edge, or a
// module path (a child scope's joined path). A longer one is refused where it is interned (an
// error Status; a module scope records nothing and counts in `end.errors`), so every record the
// session writes stays within the trace readers' line bound (1 MiB, even with every byte escaped
// as \u00XX): one set of limits, enforced where the record is made.
inline constexpr std::size_t kMaxIdBytes = std::size_t{64} << 10;

class ProfileSession {
 public:
  // Creates parent directories, truncates `path` and writes the `meta` record. The trace is
  // streamed to `path` (not written atomically on purpose: a crashed run keeps what it measured,
  // and the missing `end` record tells readers it is incomplete).
  static Result<ProfileSession> open(const std::filesystem::path& path, ProfileConfig config);

  ProfileSession(ProfileSession&& other) noexcept;
  ProfileSession& operator=(ProfileSession&& other) noexcept;
  ProfileSession(const ProfileSession&) = delete;
  ProfileSession& operator=(const ProfileSession&) = delete;
  // Finishes the session if finish() was not called; errors are then lost (call finish()).
  ~ProfileSession();

  Phase phase() const noexcept;
  std::uint64_t step() const noexcept;
  // The step stamped on every later record (shared by all threads).
  void set_step(std::uint64_t step) noexcept;

  // Seed API. Returns the event id `{phase}-op-{step}-{counter}`.
  Result<EventId> begin_operation(std::string_view static_id, std::string_view op,
                                  std::span<const std::string> inputs = {});
  // Ends an operation begun with begin_operation (on any thread) and returns its duration.
  Result<std::uint64_t> end_operation(std::string_view event_id,
                                      std::optional<std::string_view> output);
  Result<std::uint64_t> end_operation(std::string_view event_id);
  // The same for the EventId begin_operation returned, without comparing or parsing its text.
  // (Separate overloads without `output`: an optional passed by value goes through memory and
  // is read back wider than it was written, which stalls every call.)
  Result<std::uint64_t> end_operation(const EventId& event_id,
                                      std::optional<std::string_view> output);
  Result<std::uint64_t> end_operation(const EventId& event_id);
  Status record_edge_timing(std::string_view from_static_id, std::string_view to_static_id,
                            std::uint64_t duration_ns);

  // Fast path: intern once, then begin()/end() on the handle from any thread.
  Result<OpHandle> op(std::string_view static_id, std::string_view op,
                      std::span<const std::string> inputs = {});
  // The handle whose index() is `index` (for bindings that pass handles as integers); an index
  // this session never returned gives a handle whose begin()/end() do nothing.
  OpHandle handle(std::uint32_t index) const noexcept;

  // Module scopes keyed by VarBuilder path. The path is interned once per session (each thread
  // caches it by address and length, then by content, every hit confirmed by comparing the
  // text); the scope's begin and end are then a clock read and a store into the thread's buffer.
  [[nodiscard]] ModuleScope module_scope(std::string_view path) noexcept;
  // The scope of the child `child` of the module at `parent`: path `parent.child` (`child` when
  // `parent` is empty), joined once per thread and then found by both strings' addresses (pass
  // the same buffers each time). Times a library layer by its place in the caller.
  [[nodiscard]] ModuleScope child_scope(std::string_view parent, std::string_view child) noexcept;
  // Runs f() inside module_scope(path) and returns its value (`time_module("model.layers.0",
  // [&] { return layer.forward(x); })`).
  template <typename F>
  decltype(auto) time_module(std::string_view path, F&& f) {
    ModuleScope scope = module_scope(path);
    return std::forward<F>(f)();
  }

  // What the program should compute for tensor statistics at the current step: `full` when
  // stats_every > 0 divides the step, else `non_finite_only` with stats_on_non_finite, else
  // `none` (also in runtime/3 sessions and after finish). One load and a division.
  StatsDue stats_due() const noexcept;
  // Writes one `stats` line for the tensor at `path` (a module path for outputs, a parameter's
  // VarBuilder key for gradients) whatever stats_due says. An inconsistent record (counts above
  // the elements, finite numbers present with no finite element or absent with one, min > max,
  // ...) is refused with invalid_argument and counted in `end.errors`. In runtime/3 sessions it
  // does nothing and returns OK.
  Status record_stats(std::string_view path, const TensorStats& stats);
  // The same for the child `child` of the module at `parent` (path `parent.child`).
  Status record_child_stats(std::string_view parent, std::string_view child,
                            const TensorStats& stats);

  // Waits until every record pushed before this call is written to the file.
  Status flush();
  // Drains all buffers, writes the `end` record (runtime/4), closes the file. Returns the path, or
  // the first sticky error. Call it after other threads have stopped using the session.
  Result<std::filesystem::path> finish();

  const std::filesystem::path& path() const noexcept;
  // Per-thread buffers allocated so far, each buffer_records_per_thread records of 64 bytes: the
  // profiler's memory is about this many times that. A thread's buffer goes back to the session
  // when the thread exits and is reused by the next thread that starts, so this counts the
  // threads recording at once, not every thread that ever did.
  std::size_t buffers_allocated() const noexcept;

 private:
  friend detail::SessionState* detail::session_state(ProfileSession& session) noexcept;
  static Result<ProfileSession> open_checked(const std::filesystem::path& path,
                                             ProfileConfig config);
  // The string API's full paths (session.cpp), taken when the hit path (hot_path.cpp: id cached
  // on this thread, its slot free, ended innermost first without output) does not apply.
  Result<EventId> begin_operation_full(std::string_view static_id, std::string_view op,
                                       std::span<const std::string> inputs);
  Result<std::uint64_t> end_operation_full(const EventId& event_id, const std::string_view* output);
  Result<std::uint64_t> end_operation_full(std::string_view event_id,
                                           const std::string_view* output);
  explicit ProfileSession(std::unique_ptr<detail::SessionState> state);
  std::unique_ptr<detail::SessionState> state_;
};

// The seed's RAII guard over the string API: begins on construction, ends (no output, errors
// ignored) when destroyed.
class TimedOperation {
 public:
  static Result<TimedOperation> begin(ProfileSession& session, std::string_view static_id,
                                      std::string_view op,
                                      std::span<const std::string> inputs = {});
  TimedOperation(TimedOperation&& other) noexcept
      : session_(std::exchange(other.session_, nullptr)), event_id_(other.event_id_) {}
  TimedOperation& operator=(TimedOperation&&) = delete;
  TimedOperation(const TimedOperation&) = delete;
  TimedOperation& operator=(const TimedOperation&) = delete;
  ~TimedOperation();
  const EventId& event_id() const noexcept { return event_id_; }

 private:
  TimedOperation(ProfileSession* session, const EventId& event_id)
      : session_(session), event_id_(event_id) {}
  ProfileSession* session_;
  EventId event_id_;
};

}  // namespace candle_graph
