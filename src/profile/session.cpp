// ProfileSession: opening, the seed's string API, interning, flush and finish.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
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

std::string event_id(Phase phase, const char* kind, std::uint64_t step, std::uint64_t counter) {
  std::string id(phase_name(phase));
  id += kind;
  append_u64(id, step);
  id.push_back('-');
  append_u64(id, counter);
  return id;
}

}  // namespace

Result<std::uint32_t> HandleTable::add(const std::string& key, HandleInfo info) {
  if (count_ == kChunkSize * kMaxChunks)
    return Status(Errc::invalid_argument, "too many distinct profiled operations and edges");
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
      id_(next_session_id.fetch_add(1, std::memory_order_relaxed)),
      op_prefix_("{\"kind\":\"operation\",\"event_id\":\"" + std::string(phase_name(config.phase)) +
                 "-op-"),
      edge_prefix_("{\"kind\":\"edge_timing\",\"event_id\":\"" +
                   std::string(phase_name(config.phase)) + "-edge-"),
      v4_(config.format == TraceFormat::runtime_v4),
      ring_capacity_(round_up_pow2(config.buffer_records_per_thread)),
      fd_(fd) {}

SessionState::~SessionState() {
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
  append_json_string(line, v4_ ? "candle-graph/runtime/4" : "candle-graph/runtime/3");
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
    line += ",\"writer\":\"candle-graph-profile/0.1.0\"";
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
}

Result<std::uint32_t> SessionState::intern_op(std::string_view static_id, std::string_view op,
                                              std::span<const std::string> inputs) {
  std::string key = "o";
  append_key_part(key, static_id);
  append_key_part(key, op);
  for (const auto& input : inputs)
    append_key_part(key, input);
  (void)thread_state();
  return handles_.intern(key, [&] {
    HandleInfo info;
    info.static_id = std::string(static_id);
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

Result<std::string> SessionState::begin_by_id(std::string_view static_id, std::string_view op,
                                              std::span<const std::string> inputs) {
  if (finished.load(std::memory_order_acquire))
    return Status(Errc::finished, "profile session is already finished");
  auto handle = intern_op(static_id, op, inputs);
  if (!handle) return handle.status();
  ThreadState& ts = thread_state();
  if (ts.foreign_pending.load(std::memory_order_relaxed)) prune_foreign(ts);
  Frame frame{
      take_counter(ts), step.load(std::memory_order_relaxed), 0, 0, 0, handle.value(), true};
  if (!ts.stack.empty()) {
    frame.parent_counter = ts.stack.back().counter;
    frame.parent_step = ts.stack.back().id_step;
  }
  std::string id = event_id(config.phase, "-op-", frame.id_step, frame.counter);
  frame.start = timer.now();
  {
    std::lock_guard<std::mutex> lock(active_mu_);
    active_.emplace(id, ActiveOp{frame.handle, frame.counter, frame.id_step, frame.start,
                                 frame.parent_counter, frame.parent_step, &ts});
  }
  ts.stack.push_back(frame);
  return id;
}

Result<std::uint64_t> SessionState::end_by_id(std::string_view event_id_text,
                                              std::optional<std::string_view> output) {
  const std::uint64_t now = timer.now();
  if (finished.load(std::memory_order_acquire))
    return Status(Errc::finished, "profile session is already finished");
  ActiveOp op;
  {
    std::lock_guard<std::mutex> lock(active_mu_);
    auto it = active_.find(std::string(event_id_text));
    if (it == active_.end()) {
      count_error();
      return Status(Errc::unknown_operation,
                    "unknown profile operation `" + std::string(event_id_text) + "`");
    }
    op = it->second;
    active_.erase(it);
  }
  ThreadState& ts = thread_state();
  if (op.thread == &ts) {
    for (auto it = ts.stack.rbegin(); it != ts.stack.rend(); ++it) {
      if (it->counter == op.counter) {
        ts.stack.erase(std::next(it).base());
        break;
      }
    }
  } else {
    std::lock_guard<std::mutex> lock(op.thread->foreign_mu);
    op.thread->foreign_ended.push_back(op.counter);
    op.thread->foreign_pending.store(true, std::memory_order_relaxed);
  }
  const std::uint64_t duration = timer.duration_ns(op.start, now);
  if (output) {
    std::lock_guard<std::mutex> lock(outputs_mu_);
    outputs_.insert_or_assign(op.counter, std::string(*output));
  }
  push(ts, Record{op.counter, op.id_step, step.load(std::memory_order_relaxed), op.start, duration,
                  op.parent_counter, op.parent_step, op.handle, op.thread->index,
                  output ? RecordKind::operation_ns_with_output : RecordKind::operation_ns, 0});
  return duration;
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
  if (!handle) return handle.status();
  ThreadState& ts = thread_state();
  const std::uint64_t s = step.load(std::memory_order_relaxed);
  push(ts, Record{take_counter(ts), s, s, timer.now(), duration_ns, 0, 0, handle.value(), ts.index,
                  RecordKind::edge, 0});
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
  {
    std::lock_guard<std::mutex> lock(writer_mu_);
    stop_ = true;
  }
  writer_cv_.notify_one();
  if (writer_.joinable()) writer_.join();
  // The seed silently loses operations begun but never ended (§1.7); we count them.
  std::uint64_t open_operations = 0;
  {
    std::lock_guard<std::mutex> lock(threads_mu_);
    for (auto& ts : threads_) {
      prune_foreign(*ts);
      open_operations += ts->stack.size();
    }
  }
  write_end_record(open_operations);
  if (fd_ >= 0 && ::close(fd_) != 0 && !io_failed_)
    fail(Errc::io_error, "close profile trace " + path.string() + ": " + std::strerror(errno));
  fd_ = -1;
  std::lock_guard<std::mutex> lock(error_mu_);
  if (!first_sticky_.ok()) return first_sticky_;
  return path;
}

}  // namespace detail

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

Result<std::string> ProfileSession::begin_operation(std::string_view static_id, std::string_view op,
                                                    std::span<const std::string> inputs) {
  return state_->begin_by_id(static_id, op, inputs);
}

Result<std::uint64_t> ProfileSession::end_operation(std::string_view event_id,
                                                    std::optional<std::string_view> output) {
  return state_->end_by_id(event_id, output);
}

Status ProfileSession::record_edge_timing(std::string_view from_static_id,
                                          std::string_view to_static_id,
                                          std::uint64_t duration_ns) {
  return state_->edge(from_static_id, to_static_id, duration_ns);
}

Result<OpHandle> ProfileSession::op(std::string_view static_id, std::string_view op,
                                    std::span<const std::string> inputs) {
  if (state_->finished.load(std::memory_order_acquire))
    return Status(Errc::finished, "profile session is already finished");
  auto handle = state_->intern_op(static_id, op, inputs);
  if (!handle) return handle.status();
  return OpHandle(state_.get(), handle.value());
}

OpHandle ProfileSession::handle(std::uint32_t index) const noexcept {
  if (!state_->handles_.is_op(index)) return OpHandle();
  return OpHandle(state_.get(), index);
}

Status ProfileSession::flush() {
  return state_->flush();
}
Result<std::filesystem::path> ProfileSession::finish() {
  return state_->finish();
}
const std::filesystem::path& ProfileSession::path() const noexcept {
  return state_->path;
}

Result<TimedOperation> TimedOperation::begin(ProfileSession& session, std::string_view static_id,
                                             std::string_view op,
                                             std::span<const std::string> inputs) {
  auto id = session.begin_operation(static_id, op, inputs);
  if (!id) return id.status();
  return TimedOperation(&session, std::move(id).value());
}

TimedOperation::~TimedOperation() {
  if (session_) (void)session_->end_operation(event_id_, std::nullopt);
}

}  // namespace candle_graph
