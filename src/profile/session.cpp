// ProfileSession: opening, the seed's string API, interning, flush and finish.
#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <exception>
#include <iterator>
#include <new>
#include <system_error>

#include "profile/json_text.hpp"
#include "profile/session_state.hpp"

namespace candle_graph {

namespace detail {

extern std::atomic<std::uint64_t> next_session_id;

namespace {

std::size_t round_up_pow2(std::size_t n) {
  std::size_t p = 16;
  while (p < n && p < (std::size_t{1} << 30))
    p <<= 1;
  return p;
}

// Interning key: length-prefixed parts, so ids containing any byte never collide.
void append_key_part(std::string& key, std::string_view part) {
  append_u64(key, part.size());
  key.push_back(':');
  key.append(part);
}

bool same_op(const HandleInfo& h, std::string_view static_id, std::string_view op,
             std::span<const std::string_view> inputs) noexcept {
  if (h.is_edge || h.static_id != static_id || h.op != op || h.inputs.size() != inputs.size())
    return false;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (h.inputs[i] != inputs[i]) return false;
  }
  return true;
}

}  // namespace

// Parses `{phase}-op-{step}-{counter}` exactly as begin_by_id writes it (no leading zeros).
bool parse_event_id(std::string_view id, std::string_view phase, std::uint64_t& step,
                    std::uint64_t& counter) noexcept {
  if (id.size() < phase.size() + 4 || id.substr(0, phase.size()) != phase ||
      id.substr(phase.size(), 4) != "-op-")
    return false;
  id.remove_prefix(phase.size() + 4);
  auto number = [&](std::uint64_t& out) {
    if (id.empty() || (id[0] == '0' && id.size() > 1 && id[1] >= '0' && id[1] <= '9')) return false;
    auto [ptr, ec] = std::from_chars(id.data(), id.data() + id.size(), out);
    if (ec != std::errc() || ptr == id.data()) return false;
    id.remove_prefix(static_cast<std::size_t>(ptr - id.data()));
    return true;
  };
  if (!number(step) || id.empty() || id[0] != '-') return false;
  id.remove_prefix(1);
  return number(counter) && id.empty();
}

Result<std::uint32_t> HandleTable::add(const std::string& key, HandleInfo info) {
  if (key.size() > kMaxIdBytes)
    return Status(Errc::invalid_argument,
                  "an id or module path of " + std::to_string(key.size()) +
                      " bytes (with its operation and inputs): the limit is " +
                      std::to_string(kMaxIdBytes) +
                      " bytes (kMaxIdBytes), so that no record exceeds a trace line");
  if (count_ >= limit_)
    return Status(Errc::invalid_argument,
                  "too many distinct profiled operations, edges and module paths (the bound is " +
                      std::to_string(limit_) + " per session: ProfileConfig::max_distinct_ids)");
  std::uint32_t i = count_++;
  auto& chunk = chunks_[i >> kChunkBits];
  if (!chunk) chunk = std::make_unique<HandleInfo[]>(kChunkSize);
  chunk[i & (kChunkSize - 1)] = std::move(info);
  index_.emplace(key, i);
  published_.store(count_, std::memory_order_release);
  return i;
}

SessionState::SessionState(std::filesystem::path trace_path, ProfileConfig cfg, int fd)
    : path(std::move(trace_path)),
      config(std::move(cfg)),
      timer(config.timer),
      handles_(config.max_distinct_ids),
      id_(next_session_id.fetch_add(1, std::memory_order_relaxed)),
      op_prefix_("{\"kind\":\"operation\",\"event_id\":\"" + std::string(phase_name(config.phase)) +
                 "-op-"),
      edge_prefix_("{\"kind\":\"edge_timing\",\"event_id\":\"" +
                   std::string(phase_name(config.phase)) + "-edge-"),
      v4_(config.format != TraceFormat::runtime_v3),
      compact_(config.format == TraceFormat::runtime_v4_compact),
      device_sync_(static_cast<bool>(config.device_synchronize)),
      asymmetric_fence_(asymmetric_fence_available()),
      ring_capacity_(round_up_pow2(config.buffer_records_per_thread)),
      fd_(fd),
      mod_prefix_("{\"kind\":\"module\",\"event_id\":\"" + std::string(phase_name(config.phase)) +
                  "-mod-") {
  register_session(id_, this);
}

SessionState::~SessionState() {
  unregister_session(id_);
  if (writer_.joinable()) {
    {
      std::lock_guard<std::mutex> lock(writer_mu_);
      stop_ = true;
    }
    writer_cv_.notify_one();
    writer_.join();
  }
  if (fd_ >= 0) ::close(fd_);
}

void SessionState::fail(Errc code, std::string message) {
  count_error();
  std::lock_guard<std::mutex> lock(error_mu_);
  if (first_sticky_.ok()) first_sticky_ = Status(code, std::move(message));
}

Status SessionState::write_meta() {
  std::string line = "{\"kind\":\"meta\",\"schema\":";
  append_json_string(line, compact_ ? "candle-graph/runtime/4-compact/1"
                           : v4_    ? "candle-graph/runtime/4"
                                    : "candle-graph/runtime/3");
  line += ",\"entrypoint\":";
  append_json_string(line, config.entrypoint);
  line += ",\"profile\":";
  append_json_string(line, config.profile);
  line += ",\"cargo_features\":[";
  for (std::size_t i = 0; i < config.cargo_features.size(); ++i) {
    if (i) line.push_back(',');
    append_json_string(line, config.cargo_features[i]);
  }
  // The seed never records cfg flags (§1.7); the field is kept for line-for-line /3 output.
  line += "],\"cfg\":[]";
  if (config.analysis_id) {
    line += ",\"analysis_id\":";
    append_json_string(line, *config.analysis_id);
  }
  if (config.build_id) {
    line += ",\"build_id\":";
    append_json_string(line, *config.build_id);
  }
  line += ",\"phase\":";
  append_json_string(line, phase_name(config.phase));
  if (v4_) {
    line += ",\"clock\":\"steady_clock\",\"timer\":";
    line += timer.uses_tsc() ? "\"tsc\"" : "\"steady_clock\"";
    line += ",\"start_unix_ns\":";
    append_u64(line,
               static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                              std::chrono::system_clock::now().time_since_epoch())
                                              .count()));
    line += ",\"pid\":";
    append_u64(line, static_cast<std::uint64_t>(::getpid()));
    line += ",\"backpressure\":";
    line += config.backpressure == Backpressure::block ? "\"block\"" : "\"drop\"";
    line += ",\"buffer_records_per_thread\":";
    append_u64(line, ring_capacity_);
    line += ",\"counter_block\":";
    append_u64(line, kCounterBlock);
    line += ",\"writer\":\"candle-graph-profile/0.3.0\"";
    // Module durations include the device's work only with a synchronisation callback.
    if (device_sync_) line += ",\"device_sync\":true";
    if (config.stats_every != 0) {
      line += ",\"stats_every\":";
      append_u64(line, config.stats_every);
    }
    if (config.stats_on_non_finite) line += ",\"stats_on_non_finite\":true";
  }
  line += "}\n";
  out_append(line);
  write_out();
  if (io_failed_) {
    std::lock_guard<std::mutex> lock(error_mu_);
    return first_sticky_;
  }
  return {};
}

void SessionState::start_writer() {
  writer_ = std::thread([this] { writer_main(); });
  // Named before open() returns, so a user sees it in top/gdb/perf (and a test can tell it from a
  // sanitizer's own threads).
#ifdef __linux__
  pthread_setname_np(writer_.native_handle(), "cg-profile-wr");
#endif
}

std::string pack_op_text(std::string_view static_id, std::string_view op,
                         std::span<const std::string_view> inputs) {
  std::string packed;
  const auto put = [&packed](std::size_t n) {
    const auto v = static_cast<std::uint32_t>(n);
    packed.append(reinterpret_cast<const char*>(&v), sizeof v);
  };
  put(static_id.size());
  put(op.size());
  put(inputs.size());
  for (const auto& input : inputs)
    put(input.size());
  packed += static_id;
  packed += op;
  for (const auto& input : inputs)
    packed += input;
  return packed;
}

Result<std::uint32_t> SessionState::intern_op(std::string_view static_id, std::string_view op,
                                              std::span<const std::string_view> inputs) {
  std::string key = "o";
  append_key_part(key, static_id);
  append_key_part(key, op);
  for (const auto& input : inputs)
    append_key_part(key, input);
  (void)thread_state();
  return handles_.intern(key, [&] {
    HandleInfo info;
    info.static_id = std::string(static_id);
    info.op = std::string(op);
    info.inputs.assign(inputs.begin(), inputs.end());
    info.packed = pack_op_text(static_id, op, inputs);
    info.body = ",\"op\":";
    append_json_string(info.body, op);
    info.body += ",\"static_id\":";
    append_json_string(info.body, static_id);
    info.body += ",\"inputs\":[";
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      if (i) info.body.push_back(',');
      append_json_string(info.body, inputs[i]);
    }
    info.body.push_back(']');
    return info;
  });
}

Result<std::uint32_t> SessionState::lookup_op(ThreadState& ts, std::string_view static_id,
                                              std::string_view op,
                                              std::span<const std::string_view> inputs) {
  // Two-way: an address is looked for in its slot and the slot's neighbour, so the few ids of a
  // model whose addresses share a slot do not evict each other on every lap.
  const std::size_t slot = ThreadState::op_cache_slot(static_id.data(), static_id.size());
  InternCacheEntry& by_address = ts.intern_cache[slot];
  if (by_address.static_id == static_id.data() && by_address.length == static_id.size() &&
      same_op(handles_[by_address.handle], static_id, op, inputs)) [[likely]]
    return by_address.handle;
  InternCacheEntry& neighbour = ts.intern_cache[slot ^ 1];
  if (neighbour.static_id == static_id.data() && neighbour.length == static_id.size() &&
      same_op(handles_[neighbour.handle], static_id, op, inputs))
    return neighbour.handle;
  const std::uint64_t hash = op_text_hash(static_id, op);
  // Two-way as well: ids whose hashes share a set would otherwise evict each other every lap.
  ContentCacheEntry& by_content = ts.content_cache[hash & (ThreadState::kContentCache - 1)];
  ContentCacheEntry& content_neighbour =
      ts.content_cache[(hash & (ThreadState::kContentCache - 1)) ^ 1];
  std::uint32_t handle;
  if (by_content.used && by_content.hash == hash &&
      same_op(handles_[by_content.handle], static_id, op, inputs)) {
    handle = by_content.handle;
  } else if (content_neighbour.used && content_neighbour.hash == hash &&
             same_op(handles_[content_neighbour.handle], static_id, op, inputs)) {
    handle = content_neighbour.handle;
  } else {
    auto interned = intern_op(static_id, op, inputs);
    if (!interned) return interned;
    handle = interned.value();
    if (by_content.used) content_neighbour = by_content;
    by_content = {hash, handle, true, handles_[handle].packed.data()};
  }
  if (by_address.static_id != nullptr) neighbour = by_address;  // keep the older one nearby
  by_address = {static_id.data(), static_id.size(), handle, handles_[handle].packed.data()};
  return handle;
}

Result<std::uint32_t> SessionState::intern_module(std::string_view module_path) {
  std::string key = "m";
  append_key_part(key, module_path);
  return handles_.intern(key, [&] {
    HandleInfo info;
    info.is_module = true;
    info.static_id = std::string(module_path);
    info.body = ",\"path\":";
    append_json_string(info.body, module_path);
    return info;
  });
}

std::uint32_t SessionState::lookup_module_slow(ThreadState& ts,
                                               std::string_view module_path) noexcept {
  try {
    const std::uint64_t hash = text_hash(module_path);
    ContentCacheEntry& by_content = ts.module_content_cache[hash & (ThreadState::kInternCache - 1)];
    std::uint32_t handle;
    if (by_content.used && by_content.hash == hash && handles_[by_content.handle].is_module &&
        handles_[by_content.handle].static_id == module_path) {
      handle = by_content.handle;
    } else {
      auto interned = intern_module(module_path);
      if (!interned) {
        // Past the bound of distinct ids: counted in `end.errors`, the scope records nothing.
        count_error();
        return kNoHandle;
      }
      handle = interned.value();
      by_content = {hash, handle, true};
    }
    // An empty path has no address worth caching (every empty view may share one).
    if (!module_path.empty()) {
      const auto address = reinterpret_cast<std::uintptr_t>(module_path.data());
      ts.module_cache[((address ^ module_path.size()) * 0x9E3779B97F4A7C15ull) >> 56] = {
          module_path.data(), module_path.size(), handle, nullptr};
    }
    return handle;
  } catch (...) {
    count_error();
    return kNoHandle;
  }
}

std::uint32_t SessionState::lookup_child_slow(ThreadState& ts, std::string_view parent,
                                              std::string_view child) noexcept {
  try {
    std::string joined;
    joined.reserve(parent.size() + 1 + child.size());
    joined.append(parent);
    if (!parent.empty()) joined += '.';
    joined.append(child);
    const std::uint32_t handle = lookup_module_slow(ts, joined);
    if (handle == kNoHandle || child.empty()) return handle;
    const auto a = reinterpret_cast<std::uintptr_t>(parent.data());
    const auto b = reinterpret_cast<std::uintptr_t>(child.data());
    ts.child_cache[ThreadState::child_slot(a, parent.size(), b, child.size())] = {
        parent.data(), parent.size(), child.data(),
        child.size(),  handle,        handles_[handle].static_id.data()};
    return handle;
  } catch (...) {
    count_error();
    return kNoHandle;
  }
}

Status SessionState::refused(ThreadState* ts) {
  if (finished.load(std::memory_order_acquire))
    return Status(Errc::finished, "profile session is already finished");
  (void)ts;  // nullptr: this thread's buffer could not be allocated
  count_error();
  return Status(Errc::io_error, "out of memory for this thread's profiling buffer");
}

Status SessionState::unknown_id(std::string_view text) {
  count_error();
  return Status(Errc::unknown_operation, "unknown profile operation `" + std::string(text) + "`");
}

bool SessionState::take_open(ThreadState& self, std::uint64_t counter, std::uint64_t id_step,
                             Frame& frame, ThreadState*& owner, std::uint16_t& owner_index) {
  // The owner's own slot was tried by close_by_id; here other threads' slots, each under its
  // owner's foreign_mu, through the claim protocol described at IdSlot.
  auto from_slot = [&](ThreadState& t) {
    IdSlot& slot = t.id_slots[counter & (ThreadState::kIdSlots - 1)];
    if (slot.state.load(std::memory_order_relaxed) != counter) return false;
    std::lock_guard<std::mutex> lock(t.foreign_mu);
    slot.claim.store(counter, std::memory_order_relaxed);
    heavy_fence(asymmetric_fence_);
    if (slot.state.load(std::memory_order_acquire) != counter || slot.frame.id_step != id_step) {
      slot.claim.store(0, std::memory_order_relaxed);
      return false;
    }
    frame = slot.frame;
    owner = &t;
    owner_index = slot.thread;
    slot.won = counter;
    slot.state.store(0, std::memory_order_release);
    return true;
  };
  {
    std::lock_guard<std::mutex> lock(threads_mu_);
    for (auto& t : threads_) {
      if (t.get() != &self && from_slot(*t)) return true;
    }
  }
  std::lock_guard<std::mutex> lock(active_mu_);
  auto it = active_.find(counter);
  if (it == active_.end() || it->second.frame.id_step != id_step) return false;
  frame = it->second.frame;
  owner = it->second.thread;
  owner_index = it->second.thread_index;
  active_.erase(it);
  return true;
}

void SessionState::retire(ThreadState& ts) {
  if (finished.load(std::memory_order_acquire)) return;
  prune_foreign(ts);
  std::lock_guard<std::mutex> lock(threads_mu_);
  for (const Frame& f : ts.stack) {
    if (!f.by_id) ++retired_open_;  // string-API ones stay findable in their slot or table
  }
  ts.stack.clear();
  retired_open_modules_ += ts.module_stack.size();
  ts.module_stack.clear();
  ts.retired.store(true, std::memory_order_release);
  if (ts.tail.load(std::memory_order_acquire) == ts.head_local) {
    pool_.push_back(&ts);  // already drained: reusable at once
  } else {
    retired_waiting_.fetch_add(1, std::memory_order_release);
    wake_writer();
  }
}

Status SessionState::edge(std::string_view from, std::string_view to, std::uint64_t duration_ns) {
  if (finished.load(std::memory_order_acquire))
    return Status(Errc::finished, "profile session is already finished");
  std::string key = "e";
  append_key_part(key, from);
  append_key_part(key, to);
  auto handle = handles_.intern(key, [&] {
    HandleInfo info;
    info.is_edge = true;
    info.static_id = std::string(from);
    info.body = ",\"from_static_id\":";
    append_json_string(info.body, from);
    info.body += ",\"to_static_id\":";
    append_json_string(info.body, to);
    return info;
  });
  if (!handle) {
    count_error();  // past max_distinct_ids: counted in `end.errors`
    return handle.status();
  }
  ThreadState* tsp = thread_state();
  if (tsp == nullptr) {
    count_error();
    return Status(Errc::io_error, "out of memory for this thread's profiling buffer");
  }
  ThreadState& ts = *tsp;
  const std::uint64_t s = step.load(std::memory_order_relaxed);
  push(ts, Record{take_counter(ts), s, s, timer.now(), duration_ns, 0, 0, handle.value(), ts.index,
                  RecordKind::edge, 0});
  return {};
}

namespace {

// The consistency rules of docs/runtime-4.md ("Additions: tensor statistics"), checked before a
// record is written: what a reader would refuse is refused here, naming the field.
std::optional<std::string> stats_problem(const TensorStats& s) {
  if (s.dtype.empty() || s.dtype.size() > 16) return "dtype must be 1 to 16 characters";
  for (char c : s.dtype)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'))
      return "dtype must be lower-case letters, digits or '_' (Candle's names: f32, bf16, u32)";
  if (s.shape.size() > 64) return "shape has more than 64 dimensions";
  std::uint64_t elements = 1;
  for (std::uint64_t d : s.shape) {
    if (d != 0 && elements > UINT64_MAX / d) return "the product of shape exceeds 2^64";
    elements *= d;
  }
  if (s.nan > elements || s.pos_inf > elements - s.nan || s.neg_inf > elements - s.nan - s.pos_inf)
    return "nan + pos_inf + neg_inf exceeds the elements of shape";
  const std::uint64_t finite = elements - s.nan - s.pos_inf - s.neg_inf;
  if (s.zeros > finite) return "zeros exceeds the finite elements";
  if (finite == 0) {
    if (s.finite) return "min/max/mean/rms/abs_max given but no element is finite";
    return std::nullopt;
  }
  if (!s.finite) return "min/max/mean/rms/abs_max missing though some element is finite";
  const FiniteStats& f = *s.finite;
  for (double v : {f.min, f.max, f.mean, f.rms, f.abs_max})
    if (!std::isfinite(v)) return "min/max/mean/rms/abs_max must be finite numbers";
  const double scale = std::max(std::abs(f.min), std::abs(f.max));
  const double tol = 1e-3 * scale;
  if (f.min > f.max) return "min exceeds max";
  if (f.mean < f.min - tol || f.mean > f.max + tol) return "mean lies outside [min, max]";
  if (std::abs(f.abs_max - scale) > tol) return "abs_max is not max(|min|, |max|)";
  if (f.rms < std::abs(f.mean) - tol || f.rms > f.abs_max + tol)
    return "rms lies outside [|mean|, abs_max]";
  return std::nullopt;
}

}  // namespace

StatsDue SessionState::stats_due() const noexcept {
  if (!v4_ || finished.load(std::memory_order_relaxed)) return StatsDue::none;
  const std::uint64_t every = config.stats_every;
  if (every != 0 && step.load(std::memory_order_relaxed) % every == 0) return StatsDue::full;
  return config.stats_on_non_finite ? StatsDue::non_finite_only : StatsDue::none;
}

Status SessionState::stats(std::string_view module_path, const TensorStats& s) {
  if (!v4_) return {};  // runtime/3 is the seed's format: no statistics
  if (finished.load(std::memory_order_acquire))
    return Status(Errc::finished, "profile session is already finished");
  if (auto problem = stats_problem(s)) {
    count_error();
    return Status(Errc::invalid_argument,
                  "stats record for \"" + std::string(module_path) + "\" refused: " + *problem);
  }
  auto handle = intern_module(module_path);
  if (!handle) {
    count_error();  // past max_distinct_ids or kMaxIdBytes: counted in `end.errors`
    return handle.status();
  }
  ThreadState* tsp = thread_state();
  if (tsp == nullptr) {
    count_error();
    return Status(Errc::io_error, "out of memory for this thread's profiling buffer");
  }
  ThreadState& ts = *tsp;
  const std::uint64_t counter = take_counter(ts);
  {
    std::lock_guard<std::mutex> lock(stats_mu_);
    stats_.emplace(counter, s);
  }
  const std::uint64_t at_step = step.load(std::memory_order_relaxed);
  push(ts, Record{counter, at_step, at_step, timer.now(), 0, 0, 0, handle.value(), ts.index,
                  RecordKind::stats, 0});
  return {};
}

Status SessionState::flush() {
  if (finished.load(std::memory_order_acquire))
    return Status(Errc::finished, "profile session is already finished");
  {
    std::unique_lock<std::mutex> lock(writer_mu_);
    const std::uint64_t generation = ++flush_requested_;
    writer_cv_.notify_one();
    flushed_cv_.wait(lock, [&] { return flush_completed_ >= generation || writer_exited_; });
  }
  std::lock_guard<std::mutex> lock(error_mu_);
  if (first_sticky_.code() == Errc::io_error) return first_sticky_;
  return {};
}

Result<std::filesystem::path> SessionState::finish() {
  if (finished.exchange(true, std::memory_order_acq_rel))
    return Status(Errc::finished, "profile session is already finished");
  // No thread exit hands a state back from here on.
  unregister_session(id_);
  {
    std::lock_guard<std::mutex> lock(writer_mu_);
    stop_ = true;
  }
  writer_cv_.notify_one();
  if (writer_.joinable()) writer_.join();
  // The seed silently loses operations begun but never ended (§1.7); we count them.
  // Handle scopes on live threads' stacks and those exited threads left open, plus string-API
  // operations still findable by id (wherever they began).
  std::uint64_t open_operations = 0;
  std::uint64_t open_modules = 0;
  {
    std::lock_guard<std::mutex> lock(threads_mu_);
    open_operations += retired_open_;
    open_modules += retired_open_modules_;
    for (auto& ts : threads_) {
      open_modules += ts->module_stack.size();
      for (const Frame& f : ts->stack)
        open_operations += f.by_id ? 0 : 1;
      for (std::size_t i = 0; i < ThreadState::kIdSlots; ++i) {
        const std::uint64_t state = ts->id_slots[i].state.load(std::memory_order_acquire);
        if (state != 0) ++open_operations;
      }
    }
  }
  {
    std::lock_guard<std::mutex> lock(active_mu_);
    open_operations += active_.size();
  }
  write_end_record(open_operations, open_modules);
  if (fd_ >= 0 && ::close(fd_) != 0 && !io_failed_)
    fail(Errc::io_error, "close profile trace " + path.string() + ": " + std::strerror(errno));
  fd_ = -1;
  std::lock_guard<std::mutex> lock(error_mu_);
  if (!first_sticky_.ok()) return first_sticky_;
  return path;
}

}  // namespace detail

namespace {

// Runs `body` with `inputs` as string_views (on the stack for the usual few inputs).
template <typename F>
auto with_views(std::span<const std::string> inputs, F&& body) {
  // Raw storage on purpose: zeroing eight views cost more than the usual one input.
  alignas(std::string_view) unsigned char small[8 * sizeof(std::string_view)];
  std::vector<std::string_view> large;
  std::string_view* views = reinterpret_cast<std::string_view*>(small);
  if (inputs.size() > 8) {
    large.resize(inputs.size());
    views = large.data();
  }
  for (std::size_t i = 0; i < inputs.size(); ++i)
    new (&views[i]) std::string_view(inputs[i]);
  return body(std::span<const std::string_view>(views, inputs.size()));
}

// No exception leaves the library: an allocation failure becomes an error value.
template <typename R, typename F>
R guarded(F&& body) noexcept {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return Status(Errc::io_error, "out of memory in the profiler");
  } catch (const std::exception& e) {
    return Status(Errc::io_error, std::string("profiler: ") + e.what());
  }
}

}  // namespace

std::string_view phase_name(Phase phase) noexcept {
  return phase == Phase::train ? "train" : "infer";
}

ProfileConfig ProfileConfig::train(std::string entrypoint) {
  ProfileConfig config;
  config.entrypoint = std::move(entrypoint);
  config.phase = Phase::train;
  return config;
}

ProfileConfig ProfileConfig::infer(std::string entrypoint) {
  ProfileConfig config;
  config.entrypoint = std::move(entrypoint);
  config.phase = Phase::infer;
  return config;
}

Result<ProfileSession> ProfileSession::open(const std::filesystem::path& path,
                                            ProfileConfig config) {
  return guarded<Result<ProfileSession>>([&] { return open_checked(path, std::move(config)); });
}

Result<ProfileSession> ProfileSession::open_checked(const std::filesystem::path& path,
                                                    ProfileConfig config) {
  if (config.buffer_records_per_thread > kMaxBufferRecordsPerThread)
    return Status(Errc::invalid_argument,
                  "buffer_records_per_thread " + std::to_string(config.buffer_records_per_thread) +
                      " is above the limit of " + std::to_string(kMaxBufferRecordsPerThread) +
                      " records (" + std::to_string(kMaxBufferRecordsPerThread * 64 >> 20) +
                      " MiB per thread)");
  if (config.max_distinct_ids > kMaxDistinctIds)
    return Status(Errc::invalid_argument,
                  "max_distinct_ids " + std::to_string(config.max_distinct_ids) +
                      " is above the limit of " + std::to_string(kMaxDistinctIds));
  if (path.has_parent_path()) {
    std::error_code ec;
    std::filesystem::create_directories(path.parent_path(), ec);
    if (ec)
      return Status(Errc::io_error,
                    "create profile dir " + path.parent_path().string() + ": " + ec.message());
  }
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    return Status(Errc::io_error,
                  "open profile trace " + path.string() + ": " + std::strerror(errno));
  auto state = std::make_unique<detail::SessionState>(path, std::move(config), fd);
  if (Status st = state->write_meta(); !st.ok()) return st;
  state->start_writer();
  return ProfileSession(std::move(state));
}

ProfileSession::ProfileSession(std::unique_ptr<detail::SessionState> state)
    : state_(std::move(state)) {}
ProfileSession::ProfileSession(ProfileSession&& other) noexcept = default;
ProfileSession& ProfileSession::operator=(ProfileSession&& other) noexcept {
  if (this != &other) {
    if (state_ && !state_->finished.load()) (void)state_->finish();
    state_ = std::move(other.state_);
  }
  return *this;
}
ProfileSession::~ProfileSession() {
  if (state_ && !state_->finished.load()) (void)state_->finish();
}

Phase ProfileSession::phase() const noexcept {
  return state_->config.phase;
}
std::uint64_t ProfileSession::step() const noexcept {
  return state_->step.load(std::memory_order_relaxed);
}
void ProfileSession::set_step(std::uint64_t step) noexcept {
  state_->step.store(step, std::memory_order_relaxed);
}

namespace detail {
SessionState* session_state(ProfileSession& session) noexcept {
  return session.state_.get();
}
}  // namespace detail

Result<EventId> ProfileSession::begin_operation_full(std::string_view static_id,
                                                     std::string_view op,
                                                     std::span<const std::string> inputs) {
  static_assert(EventId::kMax == detail::SessionState::kEventIdMax);
  return guarded<Result<EventId>>([&]() -> Result<EventId> {
    Result<EventId> result{EventId()};
    EventId& id = result.value();
    std::uint64_t numbers[2];
    auto length = with_views(inputs, [&](std::span<const std::string_view> views) {
      return state_->begin_by_id(static_id, op, views, id.text_, numbers);
    });
    if (!length) [[unlikely]] {
      result = length.status();
      return result;
    }
    id.text_[length.value()] = '\0';
    id.size_ = static_cast<std::uint8_t>(length.value());
    id.phase_ = state_->config.phase;
    id.numbered_ = true;
    id.step_ = numbers[0];
    id.counter_ = numbers[1];
    return result;
  });
}

Result<std::uint64_t> ProfileSession::end_operation(std::string_view event_id,
                                                    std::optional<std::string_view> output) {
  return end_operation_full(event_id, output ? &*output : nullptr);
}

Result<std::uint64_t> ProfileSession::end_operation_full(std::string_view event_id,
                                                         const std::string_view* output) {
  return guarded<Result<std::uint64_t>>([&] { return state_->end_by_id(event_id, output); });
}

Result<std::uint64_t> ProfileSession::end_operation_full(const EventId& event_id,
                                                         const std::string_view* output) {
  return guarded<Result<std::uint64_t>>([&] {
    // An id of the other phase never parses here: the text path gives the same error.
    if (!event_id.numbered_ || event_id.phase_ != state_->config.phase)
      return state_->end_by_id(event_id.view(), output);
    return state_->end_by_numbers(event_id.step_, event_id.counter_, output, event_id.view());
  });
}

Result<std::uint64_t> ProfileSession::end_operation(const EventId& event_id,
                                                    std::optional<std::string_view> output) {
  return end_operation_full(event_id, output ? &*output : nullptr);
}

Status ProfileSession::record_edge_timing(std::string_view from_static_id,
                                          std::string_view to_static_id,
                                          std::uint64_t duration_ns) {
  return guarded<Status>([&] { return state_->edge(from_static_id, to_static_id, duration_ns); });
}

Result<OpHandle> ProfileSession::op(std::string_view static_id, std::string_view op,
                                    std::span<const std::string> inputs) {
  return guarded<Result<OpHandle>>([&]() -> Result<OpHandle> {
    if (state_->finished.load(std::memory_order_acquire))
      return Status(Errc::finished, "profile session is already finished");
    auto handle = with_views(inputs, [&](std::span<const std::string_view> views) {
      return state_->intern_op(static_id, op, views);
    });
    if (!handle) {
      state_->count_error();  // past max_distinct_ids: counted in `end.errors`
      return handle.status();
    }
    return OpHandle(state_.get(), handle.value());
  });
}

OpHandle ProfileSession::handle(std::uint32_t index) const noexcept {
  if (!state_->handles_.is_op(index)) return OpHandle();
  return OpHandle(state_.get(), index);
}

StatsDue ProfileSession::stats_due() const noexcept {
  return state_->stats_due();
}
Status ProfileSession::record_stats(std::string_view path, const TensorStats& stats) {
  return guarded<Status>([&] { return state_->stats(path, stats); });
}
Status ProfileSession::record_child_stats(std::string_view parent, std::string_view child,
                                          const TensorStats& stats) {
  return guarded<Status>([&] {
    if (parent.empty()) return state_->stats(child, stats);
    std::string path;
    path.reserve(parent.size() + 1 + child.size());
    path.append(parent).append(".").append(child);
    return state_->stats(path, stats);
  });
}

Status ProfileSession::flush() {
  return guarded<Status>([&] { return state_->flush(); });
}
Result<std::filesystem::path> ProfileSession::finish() {
  return guarded<Result<std::filesystem::path>>([&] { return state_->finish(); });
}
const std::filesystem::path& ProfileSession::path() const noexcept {
  return state_->path;
}
std::size_t ProfileSession::buffers_allocated() const noexcept {
  return state_->rings_allocated();
}

Result<TimedOperation> TimedOperation::begin(ProfileSession& session, std::string_view static_id,
                                             std::string_view op,
                                             std::span<const std::string> inputs) {
  auto id = session.begin_operation(static_id, op, inputs);
  if (!id) return id.status();
  return TimedOperation(&session, std::move(id).value());
}

TimedOperation::~TimedOperation() {
  if (session_) (void)session_->end_operation(event_id_);
}

}  // namespace candle_graph
